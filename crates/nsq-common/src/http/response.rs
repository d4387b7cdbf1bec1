//! The response conventions nsqd and nsqlookupd share (their `http_api.V1` and `PlainText`
//! decorators), in one place so every route of both daemons answers the same way: V1 routes
//! always carry `X-NSQ-Content-Type: nsq; version=1.0` (go-nsq reads `/lookup` in the 1.0
//! shape only when it is there), errors are `{"message":"<TEXT>"}` as JSON, structures are
//! JSON, strings are `text/plain`, and an empty success has no `Content-Type` at all.

use std::borrow::Cow;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde::Serialize;

use crate::json::go_html_escape;

pub type Body = Full<Bytes>;
pub type Resp = Response<Body>;

pub const NSQ_CONTENT_TYPE: &str = "x-nsq-content-type";
pub const NSQ_V1: &str = "nsq; version=1.0";
pub const JSON_CT: &str = "application/json; charset=utf-8";
pub const TEXT_CT: &str = "text/plain; charset=utf-8";

/// An API error: status code and the text the daemon puts in `{"message": ...}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub message: Cow<'static, str>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<Cow<'static, str>>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    pub fn bad_request(message: &'static str) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: &'static str) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, message)
    }

    pub fn too_large(message: &'static str) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, message)
    }

    pub fn internal() -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL_ERROR")
    }

    pub fn exiting() -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "EXITING")
    }
}

/// A V1 success payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// 200 with an empty body and no content type.
    Empty,
    /// A string or bytes payload (Go sniffs these as `text/plain`).
    Text(Bytes),
    /// A serialized structure.
    Json(Vec<u8>),
}

impl Reply {
    pub fn ok() -> Reply {
        Reply::Text(Bytes::from_static(b"OK"))
    }

    /// Serialize `v` as Go's `encoding/json` would.
    pub fn json<T: Serialize>(v: &T) -> Result<Reply, ApiError> {
        serde_json::to_vec(v)
            .map(|b| Reply::Json(go_html_escape(b)))
            .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
    }
}

/// Render a V1 handler's outcome.
pub fn v1(result: Result<Reply, ApiError>) -> Resp {
    let (status, body, ct) = match result {
        Ok(Reply::Empty) => (StatusCode::OK, Bytes::new(), None),
        // Go sniffs the content type of non-empty bodies; the daemons' text payloads sniff as text.
        Ok(Reply::Text(b)) if b.is_empty() => (StatusCode::OK, b, None),
        Ok(Reply::Text(b)) => (StatusCode::OK, b, Some(TEXT_CT)),
        Ok(Reply::Json(b)) => (StatusCode::OK, Bytes::from(b), Some(JSON_CT)),
        Err(e) => (e.status, error_body(&e.message), Some(JSON_CT)),
    };
    let mut r = Response::new(Body::new(body));
    *r.status_mut() = status;
    if let Some(ct) = ct {
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    r.headers_mut()
        .insert(NSQ_CONTENT_TYPE, HeaderValue::from_static(NSQ_V1));
    r
}

/// `{"message":"<text>"}`.
pub fn error_body(message: &str) -> Bytes {
    #[derive(Serialize)]
    struct Msg<'a> {
        message: &'a str,
    }
    let b = serde_json::to_vec(&Msg { message }).unwrap_or_default();
    Bytes::from(go_html_escape(b))
}

/// A plain-text answer without the V1 header (`/ping`).
pub fn plain(status: StatusCode, text: impl Into<Bytes>) -> Resp {
    let body: Bytes = text.into();
    let mut r = Response::new(Body::new(body.clone()));
    *r.status_mut() = status;
    if !body.is_empty() {
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(TEXT_CT));
    }
    r
}

/// A bare response with no body and no headers.
pub fn empty(status: StatusCode) -> Resp {
    let mut r = Response::new(Body::new(Bytes::new()));
    *r.status_mut() = status;
    r
}

/// `r` with the router's `Allow` header (for `OPTIONS` and 405).
pub fn with_allow(mut r: Resp, allow: &str) -> Resp {
    if let Ok(v) = HeaderValue::from_str(allow) {
        r.headers_mut().insert(ALLOW, v);
    }
    r
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn body_of(r: Resp) -> Vec<u8> {
        r.into_body().collect().await.unwrap().to_bytes().to_vec()
    }

    #[tokio::test]
    async fn v1_shapes() {
        let r = v1(Ok(Reply::Empty));
        assert_eq!(r.status(), 200);
        assert!(r.headers().get(CONTENT_TYPE).is_none());
        assert_eq!(r.headers()[NSQ_CONTENT_TYPE], NSQ_V1);
        assert!(body_of(r).await.is_empty());

        let r = v1(Ok(Reply::ok()));
        assert_eq!(r.headers()[CONTENT_TYPE], TEXT_CT);
        assert_eq!(body_of(r).await, b"OK");

        let r = v1(Ok(Reply::json(&["<a>"]).unwrap()));
        assert_eq!(r.headers()[CONTENT_TYPE], JSON_CT);
        assert_eq!(body_of(r).await, br#"["\u003ca\u003e"]"#);

        let r = v1(Err(ApiError::bad_request("MISSING_ARG_TOPIC")));
        assert_eq!(r.status(), 400);
        assert_eq!(r.headers()[CONTENT_TYPE], JSON_CT);
        assert_eq!(r.headers()[NSQ_CONTENT_TYPE], NSQ_V1);
        assert_eq!(body_of(r).await, br#"{"message":"MISSING_ARG_TOPIC"}"#);

        let r = plain(StatusCode::OK, "OK");
        assert!(r.headers().get(NSQ_CONTENT_TYPE).is_none());
        assert_eq!(r.headers()[CONTENT_TYPE], TEXT_CT);

        let r = with_allow(empty(StatusCode::OK), "GET, OPTIONS");
        assert_eq!(r.headers()[ALLOW], "GET, OPTIONS");
        assert!(r.headers().get(CONTENT_TYPE).is_none());
    }
}
