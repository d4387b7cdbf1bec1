//! nsqlookupd's HTTP API on hyper: the listener and connections (`server`), one request from
//! routing to response (here), nsqlookupd's router rules (`router`), query parsing (`query`),
//! response conventions (`response`) and the endpoints (`handlers`).
//!
//! nsqrd has its own copies of the Go router / query / response conventions for nsqd's API;
//! they are kept separate until a shared crate is agreed, and are small here because
//! nsqlookupd's API has no bodies, no path parameters and no TLS.

mod handlers;
mod query;
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

use crate::registry::{Registry, Windows};
use response::Resp;
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
        return response::empty(StatusCode::OK);
    }
    if req.version() == Version::HTTP_11 && !req.headers().contains_key(HOST) {
        return response::missing_host();
    }
    let Some(path) = router::decode_path(req.uri().path()) else {
        return response::bad_request();
    };
    let query = req.uri().query().map(str::to_string);
    let query = query.as_deref();
    match router::route(req.method().as_str(), &path, query) {
        Routed::Handle(Endpoint::Ping) => response::plain_ok(),
        Routed::Handle(endpoint) => {
            if endpoint.reads_arguments() && !drain(req.into_body()).await {
                return response::v1(Err(response::ApiError::bad_request("INVALID_REQUEST")));
            }
            response::v1(handlers::run(state, endpoint, query))
        }
        Routed::Redirect { status, location } => {
            response::redirect(req.method() == Method::GET, status, &location)
        }
        Routed::Options { allow } => response::with_allow(response::empty(StatusCode::OK), &allow),
        Routed::MethodNotAllowed { allow } => response::with_allow(
            response::v1(Err(response::ApiError {
                status: StatusCode::METHOD_NOT_ALLOWED,
                message: "METHOD_NOT_ALLOWED",
            })),
            &allow,
        ),
        Routed::NotFound => response::v1(Err(response::ApiError::not_found("NOT_FOUND"))),
    }
}
