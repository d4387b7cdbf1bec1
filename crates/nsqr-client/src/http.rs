//! One HTTP GET on nsqd's or nsqlookupd's API, as their clients send it (`Accept:
//! application/vnd.nsq; version=1.0`, a fresh connection, a time limit): lookupd discovery
//! uses it, and so can tools that read nsqd's `/stats`.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Empty;
use hyper::header::AUTHORIZATION;
use hyper::Method;
use nsq_common::http::client;
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
        let mut req = client::request(Method::GET, hostport, path_and_query);
        if let Some(secret) = bearer {
            req = req.header(AUTHORIZATION, format!("Bearer {secret}"));
        }
        let req = req
            .body(Empty::<Bytes>::new())
            .map_err(|e| bad(e.to_string()))?;
        client::exchange(stream, req, MAX_BODY)
            .await
            .map_err(|e| bad(e.to_string()))
    };
    tokio::time::timeout(timeout, request)
        .await
        .map_err(|_| Error::Timeout(format!("GET {path_and_query} on {hostport}")))?
}
