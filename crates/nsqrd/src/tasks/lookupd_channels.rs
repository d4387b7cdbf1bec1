//! `GET /channels?topic=<t>` on nsqlookupd's HTTP API: the channels other nodes have for a
//! topic this node just created, so it can create them before any message flows (nsqd's channel
//! pre-creation for a new topic; nsqrd's `lookupd_registration` tests check it).
//!
//! Bounded like every outbound call (`--http-client-connect-timeout`, then
//! `--http-client-request-timeout` for the whole exchange, and a body limit); both lookupd
//! response shapes are read: the v1 `{"channels":[...]}` and the pre-1.0 envelope
//! `{"status_code":200,"data":{"channels":[...]}}`.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use hyper::Method;
use nsq_common::http::client::{self, ExchangeError, LookupdAnswerError};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// The largest `/channels` answer read.
const MAX_BODY: usize = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ChannelsError {
    #[error("connect timed out")]
    ConnectTimeout,
    #[error("request timed out")]
    RequestTimeout,
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Http(String),
    #[error("got response {0}")]
    Status(u16),
    #[error("invalid response - {0}")]
    Body(String),
}

/// The channel names in a `/channels` answer of either shape.
pub fn parse_channels(body: &[u8]) -> Result<Vec<String>, ChannelsError> {
    client::lookupd_list(body, "channels")
        .map_err(|e: LookupdAnswerError| ChannelsError::Body(e.to_string()))
}

/// Ask the lookupd at `http_addr` (`host:port`) for the channels of `topic`.
pub async fn lookup_channels(
    http_addr: &str,
    topic: &str,
    connect_timeout: Duration,
    request_timeout: Duration,
) -> Result<Vec<String>, ChannelsError> {
    let stream = timeout(connect_timeout, TcpStream::connect(http_addr))
        .await
        .map_err(|_| ChannelsError::ConnectTimeout)??;
    let request = async {
        let path = format!(
            "/channels?topic={}",
            nsq_common::http::query::escape_percent(topic)
        );
        let req = client::request(Method::GET, http_addr, &path)
            .body(Empty::<Bytes>::new())
            .map_err(|e| ChannelsError::Http(e.to_string()))?;
        let (status, body) =
            client::exchange(stream, req, MAX_BODY)
                .await
                .map_err(|e| match e {
                    ExchangeError::Http(e) => ChannelsError::Http(e.to_string()),
                    ExchangeError::Body(e) => ChannelsError::Body(e),
                })?;
        if status != 200 {
            return Err(ChannelsError::Status(status));
        }
        parse_channels(&body)
    };
    timeout(request_timeout, request)
        .await
        .map_err(|_| ChannelsError::RequestTimeout)?
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    #[test]
    fn both_shapes_and_garbage() {
        assert_eq!(
            parse_channels(br#"{"channels":["a","b"]}"#).unwrap(),
            ["a", "b"]
        );
        assert_eq!(
            parse_channels(br#"{"status_code":200,"status_txt":"OK","data":{"channels":["c"]}}"#)
                .unwrap(),
            ["c"]
        );
        assert!(parse_channels(b"<html>").is_err());
        assert!(parse_channels(br#"{"channels":[1]}"#).is_err());
        assert!(parse_channels(b"{}").is_err());
    }

    /// Serve one HTTP request with `reply` (after `delay`); returns the request head.
    async fn serve_once(
        reply: &'static str,
        delay: Duration,
    ) -> (String, tokio::task::JoinHandle<String>) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let t = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let n = s.read(&mut buf).await.unwrap();
            tokio::time::sleep(delay).await;
            let _ = s.write_all(reply.as_bytes()).await;
            String::from_utf8_lossy(&buf[..n]).into_owned()
        });
        (addr, t)
    }

    #[tokio::test]
    async fn asks_lookupd() {
        let (addr, t) = serve_once(
            "HTTP/1.1 200 OK\r\nContent-Length: 22\r\n\r\n{\"channels\":[\"x\",\"y\"]}",
            Duration::ZERO,
        )
        .await;
        let got = lookup_channels(
            &addr,
            "t#ephemeral",
            Duration::from_secs(1),
            Duration::from_secs(2),
        )
        .await
        .unwrap();
        assert_eq!(got, ["x", "y"]);
        let head = t.await.unwrap();
        assert!(
            head.starts_with("GET /channels?topic=t%23ephemeral HTTP/1.1\r\n"),
            "{head}"
        );
        assert!(
            head.contains("accept: application/vnd.nsq; version=1.0\r\n"),
            "{head}"
        );
    }

    #[tokio::test]
    async fn slow_or_failing_lookupd_is_bounded() {
        let (addr, _t) = serve_once("HTTP/1.1 200 OK\r\n\r\n", Duration::from_secs(5)).await;
        // The server answers after 5 s: only the 300 ms request timeout gives this error.
        let e = lookup_channels(
            &addr,
            "t",
            Duration::from_secs(1),
            Duration::from_millis(300),
        )
        .await
        .unwrap_err();
        assert!(matches!(e, ChannelsError::RequestTimeout), "{e}");
        let (addr, _t) = serve_once(
            "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n",
            Duration::ZERO,
        )
        .await;
        let e = lookup_channels(&addr, "t", Duration::from_secs(1), Duration::from_secs(2))
            .await
            .unwrap_err();
        assert!(matches!(e, ChannelsError::Status(500)), "{e}");
    }
}
