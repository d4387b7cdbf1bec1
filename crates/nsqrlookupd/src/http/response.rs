//! nsqlookupd's response conventions (its `http_api.V1` and `PlainText` decorators) in one
//! place: V1 answers always carry `X-NSQ-Content-Type: nsq; version=1.0` (go-nsq reads
//! `/lookup` in the 1.0 shape only when it is there), structures are JSON with Go's content
//! type, errors are `{"message":"<TEXT>"}`, and an empty success has no `Content-Type`.

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ALLOW, CONNECTION, CONTENT_TYPE, LOCATION};
use hyper::{Response, StatusCode};
use serde::Serialize;

use crate::json::to_go_json;

pub type Body = Full<Bytes>;
pub type Resp = Response<Body>;

pub const NSQ_CONTENT_TYPE: &str = "x-nsq-content-type";
pub const NSQ_V1: &str = "nsq; version=1.0";
pub const JSON_CT: &str = "application/json; charset=utf-8";
pub const TEXT_CT: &str = "text/plain; charset=utf-8";

/// An API error: the status and the `message` text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status} {message}")]
pub struct ApiError {
    pub status: StatusCode,
    pub message: &'static str,
}

impl ApiError {
    pub fn bad_request(message: &'static str) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message,
        }
    }

    pub fn not_found(message: &'static str) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message,
        }
    }
}

/// A V1 success.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// 200, empty body, no content type.
    Empty,
    /// A serialized structure.
    Json(Vec<u8>),
}

impl Reply {
    pub fn json<T: Serialize>(v: &T) -> Reply {
        Reply::Json(to_go_json(v))
    }
}

fn response(
    status: StatusCode,
    body: impl Into<Bytes>,
    content_type: Option<&'static str>,
) -> Resp {
    let mut r = Response::new(Body::new(body.into()));
    *r.status_mut() = status;
    if let Some(ct) = content_type {
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    r
}

/// Renders a V1 handler's outcome.
pub fn v1(result: Result<Reply, ApiError>) -> Resp {
    let mut r = match result {
        Ok(Reply::Empty) => response(StatusCode::OK, Bytes::new(), None),
        Ok(Reply::Json(b)) => response(StatusCode::OK, b, Some(JSON_CT)),
        Err(e) => {
            #[derive(Serialize)]
            struct Msg<'a> {
                message: &'a str,
            }
            let body = to_go_json(&Msg { message: e.message });
            response(e.status, body, Some(JSON_CT))
        }
    };
    r.headers_mut()
        .insert(NSQ_CONTENT_TYPE, HeaderValue::from_static(NSQ_V1));
    r
}

/// `/ping`'s plain `OK`, without the V1 header.
pub fn plain_ok() -> Resp {
    response(StatusCode::OK, Bytes::from_static(b"OK"), Some(TEXT_CT))
}

/// Go's bare 400 for a request it cannot route (a bad path escape); Go closes the connection.
pub fn bad_request() -> Resp {
    let mut r = response(
        StatusCode::BAD_REQUEST,
        Bytes::from_static(b"400 Bad Request"),
        Some(TEXT_CT),
    );
    r.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    r
}

/// Go's answer to an HTTP/1.1 request without `Host`.
pub fn missing_host() -> Resp {
    const TEXT: &str = "400 Bad Request: missing required Host header";
    let mut r = response(
        StatusCode::BAD_REQUEST,
        Bytes::from_static(TEXT.as_bytes()),
        Some(TEXT_CT),
    );
    r.extensions_mut()
        .insert(hyper::ext::ReasonPhrase::from_static(
            b"Bad Request: missing required Host header",
        ));
    r.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    r
}

/// A response with no body and no headers.
pub fn empty(status: StatusCode) -> Resp {
    response(status, Bytes::new(), None)
}

/// Adds `Allow`.
pub fn with_allow(mut r: Resp, allow: &str) -> Resp {
    if let Ok(v) = HeaderValue::from_str(allow) {
        r.headers_mut().insert(ALLOW, v);
    }
    r
}

/// Go's `http.Redirect`: `Location`, and for GET a short HTML body.
pub fn redirect(is_get: bool, status: u16, location: &str) -> Resp {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::MOVED_PERMANENTLY);
    let mut r = if is_get {
        let text = status.canonical_reason().unwrap_or("");
        let body = format!("<a href=\"{}\">{text}</a>.\n\n", html_escape(location));
        response(status, body, Some("text/html; charset=utf-8"))
    } else {
        empty(status)
    };
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(LOCATION, v);
    }
    r
}

/// Go's `htmlEscape`.
fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn body(r: Resp) -> Vec<u8> {
        r.into_body().collect().await.unwrap().to_bytes().to_vec()
    }

    #[tokio::test]
    async fn shapes() {
        let r = v1(Ok(Reply::Empty));
        assert_eq!(r.status(), 200);
        assert!(r.headers().get(CONTENT_TYPE).is_none());
        assert_eq!(r.headers()[NSQ_CONTENT_TYPE], NSQ_V1);
        assert!(body(r).await.is_empty());

        let r = v1(Err(ApiError::bad_request("MISSING_ARG_TOPIC")));
        assert_eq!(r.status(), 400);
        assert_eq!(r.headers()[CONTENT_TYPE], JSON_CT);
        assert_eq!(body(r).await, br#"{"message":"MISSING_ARG_TOPIC"}"#);

        let r = plain_ok();
        assert!(r.headers().get(NSQ_CONTENT_TYPE).is_none());
        assert_eq!(r.headers()[CONTENT_TYPE], TEXT_CT);

        let r = redirect(true, 301, "/a?b=<c>");
        assert_eq!(r.headers()[LOCATION], "/a?b=<c>");
        assert_eq!(
            body(r).await,
            b"<a href=\"/a?b=&lt;c&gt;\">Moved Permanently</a>.\n\n"
        );
        let r = redirect(false, 307, "/x");
        assert!(r.headers().get(CONTENT_TYPE).is_none());
    }
}
