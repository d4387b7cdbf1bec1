//! One request, start to finish: the TLS-required gate, routing, the router's own answers
//! (redirects, `OPTIONS`, 405, 404) and dispatch to the endpoint handlers. A panicking handler
//! becomes a 500 `INTERNAL_ERROR` instead of taking the connection down, as in nsqd.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE, LOCATION};
use hyper::{Method, Request, Response, StatusCode};
use nsq_common::http::path;
use nsq_common::http::response::{
    self, with_allow, ApiError, Body, Resp, JSON_CT, NSQ_CONTENT_TYPE, NSQ_V1,
};

use super::router::{self, Endpoint, Routed};
use super::settle::Answer;
use super::topics::{self, ChannelAction, TopicAction};
use super::{
    config_opt, consume, info, metrics, publish, queue_settings, settle, stats, stream, HttpBody,
    HttpState, RequestCtx,
};

/// Answer one request.
pub async fn handle(
    state: Arc<HttpState>,
    req: Request<Incoming>,
    cx: RequestCtx,
) -> Response<HttpBody> {
    if let Some(port) = state.settings.tls_required_https_port {
        return whole(tls_required(port));
    }
    if req.method() == Method::OPTIONS && req.uri().path() == "*" {
        return whole(response::empty(StatusCode::OK));
    }
    let Some(path) = path::decode(req.uri().path()) else {
        return whole(response::plain(StatusCode::BAD_REQUEST, "400 Bad Request"));
    };
    let routed = router::route_request(req.method().as_str(), &path, req.uri().query());
    match routed {
        Routed::Handle {
            endpoint: Endpoint::ChannelStream,
            ..
        } => stream::open(state, req, cx).await,
        Routed::Handle { endpoint, param } => {
            let method = req.method().clone();
            let dispatched = std::pin::pin!(dispatch(state, endpoint, param, req, cx));
            match CatchUnwind(dispatched).await {
                Ok(r) => whole(r),
                Err(_) => {
                    tracing::error!("HTTP: panic in handler for {method} {path}");
                    whole(response::v1(Err(ApiError::internal())))
                }
            }
        }
        other => whole(answer_routed(req.method(), other)),
    }
}

/// A whole (not streamed) response.
fn whole(r: Resp) -> Response<HttpBody> {
    r.map(HttpBody::Left)
}

/// The router's own answers.
fn answer_routed(method: &Method, routed: Routed) -> Resp {
    match routed {
        Routed::Handle { .. } => response::v1(Err(ApiError::internal())),
        Routed::Redirect { status, location } => redirect(method, status, &location),
        Routed::Options { allow } => with_allow(response::empty(StatusCode::OK), &allow),
        Routed::MethodNotAllowed { allow } => with_allow(
            response::v1(Err(ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
            ))),
            &allow,
        ),
        Routed::NotFound => response::v1(Err(ApiError::not_found("NOT_FOUND"))),
    }
}

async fn dispatch(
    state: Arc<HttpState>,
    endpoint: Endpoint,
    param: Option<String>,
    req: Request<Incoming>,
    cx: RequestCtx,
) -> Resp {
    let s = &*state;
    let q = req.uri().query();
    let opt = param.as_deref().unwrap_or("");
    let result = match endpoint {
        Endpoint::Ping => return info::ping(s),
        Endpoint::Metrics => return metrics::metrics(s, &stats::groups(s).await),
        Endpoint::Info => info::info(s),
        Endpoint::Pub => publish::publish(s, req, cx).await,
        Endpoint::Mpub => publish::mpub(s, req, cx).await,
        Endpoint::Stats => stats::stats(s, q, stats::groups(s).await),
        Endpoint::TopicCreate => topics::create_topic(s, q),
        Endpoint::TopicDelete => topics::topic_action(s, q, TopicAction::Delete),
        Endpoint::TopicEmpty => topics::topic_action(s, q, TopicAction::Empty),
        Endpoint::TopicPause => topics::topic_action(s, q, TopicAction::Pause),
        Endpoint::TopicUnpause => topics::topic_action(s, q, TopicAction::Unpause),
        Endpoint::ChannelCreate => topics::channel_action(s, q, ChannelAction::Create),
        Endpoint::ChannelDelete => topics::channel_action(s, q, ChannelAction::Delete),
        Endpoint::ChannelEmpty => topics::channel_action(s, q, ChannelAction::Empty),
        Endpoint::ChannelPause => topics::channel_action(s, q, ChannelAction::Pause),
        Endpoint::ChannelUnpause => topics::channel_action(s, q, ChannelAction::Unpause),
        Endpoint::ConfigGet => config_opt::get(s, opt),
        Endpoint::ConfigPut => config_opt::put(s, opt, req, cx).await,
        Endpoint::TopicSettingsGet => queue_settings::get_topic(s, q),
        Endpoint::TopicSettingsSet => queue_settings::set_topic(s, req, cx).await,
        Endpoint::ChannelSettingsGet => queue_settings::get_channel(s, q),
        Endpoint::ChannelSettingsSet => queue_settings::set_channel(s, req, cx).await,
        Endpoint::ChannelReceive => return consume::receive(s, req, cx).await,
        Endpoint::MessageFin => return settle::settle(s, req, cx, Answer::Fin).await,
        Endpoint::MessageReq => return settle::settle(s, req, cx, Answer::Req).await,
        Endpoint::MessageTouch => return settle::settle(s, req, cx, Answer::Touch).await,
        Endpoint::MessageTerm => return settle::settle(s, req, cx, Answer::Term).await,
        // Streams are answered before dispatch (their body is not a whole one).
        Endpoint::ChannelStream => Err(ApiError::internal()),
    };
    response::v1(result)
}

/// Go's `http.Redirect`: `Location`, and for GET a short HTML body.
fn redirect(method: &Method, status: u16, location: &str) -> Resp {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::MOVED_PERMANENTLY);
    let body = if method == Method::GET {
        let text = status.canonical_reason().unwrap_or("");
        format!(
            "<a href=\"{}\">{text}</a>.\n\n",
            path::html_escape(location)
        )
    } else {
        String::new()
    };
    let mut r = hyper::Response::new(Body::new(Bytes::from(body)));
    *r.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(LOCATION, v);
    }
    if method == Method::GET || method == Method::HEAD {
        r.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
    }
    r
}

/// nsqd's answer on the plain listener when `--tls-required` is set (note the spaces).
fn tls_required(https_port: u16) -> Resp {
    let body = format!(r#"{{"message": "TLS_REQUIRED", "https_port": {https_port}}}"#);
    let mut r = hyper::Response::new(Body::new(Bytes::from(body)));
    *r.status_mut() = StatusCode::FORBIDDEN;
    let h = r.headers_mut();
    h.insert(NSQ_CONTENT_TYPE, HeaderValue::from_static(NSQ_V1));
    h.insert(CONTENT_TYPE, HeaderValue::from_static(JSON_CT));
    r
}

/// Poll a future, turning a panic into `Err`. The future is pinned where the caller awaits
/// it (not boxed: no allocation per request).
struct CatchUnwind<'a, F>(Pin<&'a mut F>);

impl<F: Future> Future for CatchUnwind<'_, F> {
    type Output = std::thread::Result<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(p) => Poll::Ready(Err(p)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn panics_are_caught() {
        let r: std::thread::Result<()> =
            CatchUnwind(std::pin::pin!(async { panic!("boom") })).await;
        assert!(r.is_err());
        let r = CatchUnwind(std::pin::pin!(async { 7 })).await;
        assert_eq!(r.ok(), Some(7));
    }
}
