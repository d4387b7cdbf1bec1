//! One HTTP GET on nsqd's or nsqlookupd's API, as their clients send it (`Accept:
//! application/vnd.nsq; version=1.0`, a fresh connection, a time limit): lookupd discovery
//! uses it, and so can tools that read nsqd's `/stats`.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::header::{ACCEPT, AUTHORIZATION, HOST};
use hyper::Request;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::error::Error;

/// The largest answer read.
const MAX_BODY: usize = 16 << 20;

/// `GET path_and_query` on `hostport` within `timeout`: the status and the body. `bearer` is
/// sent as `Authorization: Bearer <secret>`. Errors are [`Error::Http`] (connecting,
/// protocol) or [`Error::Timeout`].
pub async fn get(
    hostport: &str,
    path_and_query: &str,
    timeout: Duration,
    bearer: Option<&str>,
) -> Result<(u16, Bytes), Error> {
    let bad = |why: String| Error::Http {
        addr: hostport.to_string(),
        why,
    };
    let request = async {
        let stream = TcpStream::connect(hostport)
            .await
            .map_err(|e| bad(e.to_string()))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| bad(e.to_string()))?;
        let driver = tokio::spawn(conn);
        let mut req = Request::get(path_and_query)
            .header(HOST, hostport)
            .header(ACCEPT, "application/vnd.nsq; version=1.0");
        if let Some(secret) = bearer {
            req = req.header(AUTHORIZATION, format!("Bearer {secret}"));
        }
        let req = req
            .body(Empty::<Bytes>::new())
            .map_err(|e| bad(e.to_string()))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| bad(e.to_string()))?;
        let status = resp.status().as_u16();
        let body = Limited::new(resp.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| bad(e.to_string()))?
            .to_bytes();
        driver.abort();
        Ok((status, body))
    };
    tokio::time::timeout(timeout, request)
        .await
        .map_err(|_| Error::Timeout(format!("GET {path_and_query} on {hostport}")))?
}
