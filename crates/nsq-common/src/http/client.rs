//! The client side: one request on a fresh connection, as nsqd and its clients send them
//! (nsqd asks lookupd for a topic's channels and auth servers for permissions; consumers ask
//! lookupd for a topic's producers). Each caller connects (plain TCP or TLS), bounds the whole
//! by its own time limits and keeps its own error texts; the request head, the exchange and
//! the reading of lookupd's two answer shapes are here.

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::Body;
use hyper::header::{ACCEPT, HOST};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

/// The `Accept` header of nsqd's clients: the V1 API's plain answers.
pub const ACCEPT_NSQ_V1: &str = "application/vnd.nsq; version=1.0";

/// Why an exchange failed.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// The HTTP/1 handshake or the request failed.
    #[error("{0}")]
    Http(#[from] hyper::Error),
    /// The body was larger than allowed or could not be read.
    #[error("{0}")]
    Body(String),
}

/// A request for `path_and_query` on `host` (the `Host` header) with nsqd's clients' `Accept`.
pub fn request(method: Method, host: &str, path_and_query: &str) -> hyper::http::request::Builder {
    Request::builder()
        .method(method)
        .uri(path_and_query)
        .header(HOST, host)
        .header(ACCEPT, ACCEPT_NSQ_V1)
}

/// Send `req` over `io`, a fresh connection, and read the answer: its status and its body,
/// of at most `max_body` bytes.
pub async fn exchange<I, B>(
    io: I,
    req: Request<B>,
    max_body: usize,
) -> Result<(u16, Bytes), ExchangeError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    let result = async {
        let resp = sender.send_request(req).await?;
        let status = resp.status().as_u16();
        let body = Limited::new(resp.into_body(), max_body)
            .collect()
            .await
            .map_err(|e| ExchangeError::Body(e.to_string()))?
            .to_bytes();
        Ok((status, body))
    }
    .await;
    driver.abort();
    result
}

/// Why a lookupd answer could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LookupdAnswerError {
    /// Not JSON, or the list is not of the expected items.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// Neither shape: no list under the key and no `data` object.
    #[error("no {0}")]
    Missing(String),
}

/// The list under `key` in a lookupd answer of either shape it has used: v1
/// `{"<key>":[...]}` or the pre-1.0 envelope `{"status_code":200,"data":{"<key>":[...]}}`
/// (an envelope without the key is an empty list).
pub fn lookupd_list<T: DeserializeOwned>(
    body: &[u8],
    key: &str,
) -> Result<Vec<T>, LookupdAnswerError> {
    let v: Value = serde_json::from_slice(body)?;
    let present = |v: &Value| v.get(key).filter(|l| !l.is_null()).cloned();
    let list = match (present(&v), v.get("data").filter(|d| !d.is_null())) {
        (Some(l), _) => l,
        (None, Some(data)) => match present(data) {
            Some(l) => l,
            None if data.is_object() => return Ok(Vec::new()),
            None => return Err(LookupdAnswerError::Missing(key.to_string())),
        },
        (None, None) => return Err(LookupdAnswerError::Missing(key.to_string())),
    };
    Ok(serde_json::from_value(list)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_lookupd_shapes() {
        let v1: Vec<String> = lookupd_list(br#"{"channels":["a","b"]}"#, "channels").unwrap();
        assert_eq!(v1, ["a", "b"]);
        let old: Vec<String> = lookupd_list(
            br#"{"status_code":200,"status_txt":"OK","data":{"channels":["c"]}}"#,
            "channels",
        )
        .unwrap();
        assert_eq!(old, ["c"]);
        let empty: Vec<String> = lookupd_list(br#"{"data":{}}"#, "channels").unwrap();
        assert!(empty.is_empty());
        assert!(lookupd_list::<String>(b"<html>", "channels").is_err());
        assert!(lookupd_list::<String>(br#"{"channels":[1]}"#, "channels").is_err());
        let e = lookupd_list::<String>(b"{}", "channels").unwrap_err();
        assert_eq!(e.to_string(), "no channels");
    }
}
