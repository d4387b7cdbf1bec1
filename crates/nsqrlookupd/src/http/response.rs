//! nsqlookupd's own answers; the V1 conventions it shares with nsqd (`X-NSQ-Content-Type`,
//! `{"message":"<TEXT>"}` errors, JSON structures, no `Content-Type` on an empty success) are
//! in `nsq_common::http::response`. What is here differs from nsqrd's: Go's bare 400s close
//! the connection, and a redirect sets its `Content-Type` before its `Location`.

use bytes::Bytes;
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE, LOCATION};
use hyper::{Response, StatusCode};
use nsq_common::http::path::html_escape;
use nsq_common::http::response::{empty, Body, Resp, TEXT_CT};

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
        let r = bad_request();
        assert_eq!(r.status(), 400);
        assert_eq!(r.headers()[CONNECTION], "close");
        assert_eq!(body(r).await, b"400 Bad Request");

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
