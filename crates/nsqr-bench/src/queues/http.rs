//! A keep-alive HTTP/1.1 connection for the queue benchmarks (hyper's client connection:
//! requests go one after the other on one socket, as a real consumer's would).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::fail::{err, Result, IO_TIMEOUT};

/// One HTTP connection to `addr` (`host:port`).
pub struct HttpConn {
    addr: String,
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
}

impl HttpConn {
    pub async fn connect(addr: &str) -> Result<HttpConn> {
        let stream = tokio::time::timeout(IO_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| err(format!("connect to {addr}: timed out")))?
            .map_err(|e| err(format!("connect to {addr}: {e}")))?;
        stream.set_nodelay(true)?;
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| err(format!("{addr}: {e}")))?;
        tokio::spawn(conn);
        Ok(HttpConn {
            addr: addr.to_string(),
            sender,
        })
    }

    /// Send a request; the response's body is left to the caller (a stream).
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        body: Bytes,
    ) -> Result<Response<Incoming>> {
        self.sender
            .ready()
            .await
            .map_err(|e| err(format!("{}: {e}", self.addr)))?;
        let req = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, &self.addr)
            .header(CONTENT_TYPE, "application/octet-stream")
            .body(Full::new(body))
            .map_err(|e| err(e.to_string()))?;
        self.sender
            .send_request(req)
            .await
            .map_err(|e| err(format!("{} {path}: {e}", self.addr)))
    }

    /// A request and its whole answer; anything but 200 is an error.
    pub async fn call(&mut self, method: &str, path: &str, body: Bytes) -> Result<Bytes> {
        let resp = tokio::time::timeout(IO_TIMEOUT, async {
            let resp = self.send(method, path, body).await?;
            let status = resp.status();
            let bytes = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| err(format!("{path}: {e}")))?
                .to_bytes();
            Ok::<_, crate::fail::Error>((status, bytes))
        })
        .await
        .map_err(|_| err(format!("{path}: no answer within {IO_TIMEOUT:?}")))??;
        match resp {
            (s, b) if s.is_success() => Ok(b),
            (s, b) => Err(err(format!("{path}: {s} {}", String::from_utf8_lossy(&b)))),
        }
    }
}
