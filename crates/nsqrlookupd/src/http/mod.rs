//! nsqlookupd's HTTP API on hyper: the listener and connections (`server`), one request from
//! routing to response (here), nsqlookupd's route table (`router`), its own answers
//! (`response`) and the endpoints (`handlers`). The Go router, query, path and V1 response
//! conventions it shares with nsqd are in `nsq_common::http`.

mod handlers;
mod response;
mod router;
mod server;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::HOST;
use hyper::{Method, Request, StatusCode, Version};
use nsq_common::http::path;
use nsq_common::http::response::{empty, plain, v1, with_allow, ApiError, Resp};

use crate::registry::{Registry, Windows};
use router::{Endpoint, Routed};

pub use handlers::VERSION;
pub use server::serve;

/// What the handlers share.
pub struct HttpState {
    pub registry: Arc<Registry>,
    pub windows: Windows,
}

/// Answers one request and logs it as nsqlookupd does (`200 GET /lookup?topic=t (ip:port) 1ms`).
pub async fn handle(state: &HttpState, req: Request<Incoming>, remote: SocketAddr) -> Resp {
    let start = Instant::now();
    let method = req.method().clone();
    let uri = req.uri().clone();
    let r = respond(state, req).await;
    tracing::info!(
        "{} {method} {} ({remote}) {:?}",
        r.status().as_u16(),
        uri.path_and_query()
            .map_or_else(|| uri.path(), |pq| pq.as_str()),
        start.elapsed()
    );
    r
}

/// Reads and discards a request body, as nsqlookupd's argument parsing reads it whole; false
/// if it could not be read (a broken chunked encoding, a cut connection).
async fn drain(mut body: Incoming) -> bool {
    while let Some(frame) = body.frame().await {
        if frame.is_err() {
            return false;
        }
    }
    true
}

async fn respond(state: &HttpState, req: Request<Incoming>) -> Resp {
    if req.method() == Method::OPTIONS && req.uri().path() == "*" {
        return empty(StatusCode::OK);
    }
    if req.version() == Version::HTTP_11 && !req.headers().contains_key(HOST) {
        return response::missing_host();
    }
    let Some(path) = path::decode(req.uri().path()) else {
        return response::bad_request();
    };
    let query = req.uri().query().map(str::to_string);
    let query = query.as_deref();
    match router::route_request(req.method().as_str(), &path, query) {
        Routed::Handle {
            endpoint: Endpoint::Ping,
            ..
        } => plain(StatusCode::OK, "OK"),
        Routed::Handle { endpoint, .. } => {
            if endpoint.reads_arguments() && !drain(req.into_body()).await {
                return v1(Err(ApiError::bad_request("INVALID_REQUEST")));
            }
            v1(handlers::run(state, endpoint, query))
        }
        Routed::Redirect { status, location } => {
            response::redirect(req.method() == Method::GET, status, &location)
        }
        Routed::Options { allow } => with_allow(empty(StatusCode::OK), &allow),
        Routed::MethodNotAllowed { allow } => with_allow(
            v1(Err(ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
            ))),
            &allow,
        ),
        Routed::NotFound => v1(Err(ApiError::not_found("NOT_FOUND"))),
    }
}
