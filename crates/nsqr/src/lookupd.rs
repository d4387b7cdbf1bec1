//! Finding a topic's producers the way NSQ consumers do: `GET /lookup?topic=T` on a lookupd's
//! HTTP API, then one connection to each producer's `broadcast_address:tcp_port`. `cluster`'s
//! consumers use it, so a run also exercises the lookupd and the nodes' registrations.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::header::{ACCEPT, HOST};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use tokio::net::TcpStream;

use crate::client::{err, Result, IO_TIMEOUT};

/// The largest `/lookup` answer read.
const MAX_BODY: usize = 4 << 20;

/// One producer of a topic, as lookupd lists it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Producer {
    pub broadcast_address: String,
    pub tcp_port: u16,
}

impl Producer {
    /// `host:port` to connect to (IPv6 hosts in brackets).
    pub fn tcp_address(&self) -> String {
        if self.broadcast_address.contains(':') {
            format!("[{}]:{}", self.broadcast_address, self.tcp_port)
        } else {
            format!("{}:{}", self.broadcast_address, self.tcp_port)
        }
    }
}

/// What `/lookup` answered: the producers, or that the topic is not registered (404).
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    Producers(Vec<Producer>),
    NotFound,
}

/// The producers in a `/lookup` answer, in either shape lookupd has used: v1
/// `{"producers":[...]}` or the pre-1.0 envelope `{"status_code":200,"data":{...}}`.
pub fn parse_lookup(body: &[u8]) -> Result<Vec<Producer>> {
    #[derive(Deserialize)]
    struct Answer {
        producers: Option<Vec<Producer>>,
        data: Option<Box<Answer>>,
    }
    let a: Answer = serde_json::from_slice(body)
        .map_err(|e| err(format!("lookupd: invalid /lookup answer: {e}")))?;
    match (a.producers, a.data) {
        (Some(p), _) => Ok(p),
        (None, Some(d)) => Ok(d.producers.unwrap_or_default()),
        (None, None) => Err(err("lookupd: /lookup answer without producers")),
    }
}

/// `GET /lookup?topic=<topic>` on the lookupd at `http_addr` (`host:port`).
pub async fn lookup(http_addr: &str, topic: &str) -> Result<Lookup> {
    let request = async {
        let stream = TcpStream::connect(http_addr)
            .await
            .map_err(|e| err(format!("lookupd {http_addr}: {e}")))?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| err(format!("lookupd {http_addr}: {e}")))?;
        let driver = tokio::spawn(conn);
        // Topic names are [.a-zA-Z0-9_-]+ (plus `#ephemeral`): only `#` needs encoding.
        let req = Request::get(format!("/lookup?topic={}", topic.replace('#', "%23")))
            .header(HOST, http_addr)
            .header(ACCEPT, "application/vnd.nsq; version=1.0")
            .body(Empty::<Bytes>::new())
            .map_err(|e| err(e.to_string()))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| err(format!("lookupd {http_addr}: {e}")))?;
        let status = resp.status().as_u16();
        let body = Limited::new(resp.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| err(format!("lookupd {http_addr}: {e}")))?
            .to_bytes();
        driver.abort();
        match status {
            200 => Ok(Lookup::Producers(parse_lookup(&body)?)),
            404 => Ok(Lookup::NotFound),
            s => Err(err(format!("lookupd {http_addr}: /lookup answered {s}"))),
        }
    };
    tokio::time::timeout(IO_TIMEOUT, request)
        .await
        .map_err(|_| {
            err(format!(
                "lookupd {http_addr}: no answer within {IO_TIMEOUT:?}"
            ))
        })?
}

/// Ask until lookupd lists at least `want` producers for `topic` (nodes register a topic
/// shortly after creating it), or `within` has passed.
pub async fn wait_for_producers(
    http_addr: &str,
    topic: &str,
    want: usize,
    within: Duration,
) -> Result<Vec<Producer>> {
    let deadline = Instant::now() + within;
    loop {
        let seen = match lookup(http_addr, topic).await? {
            Lookup::Producers(p) if p.len() >= want => return Ok(p),
            Lookup::Producers(p) => p.len(),
            Lookup::NotFound => 0,
        };
        if Instant::now() >= deadline {
            return Err(err(format!(
                "lookupd {http_addr} lists {seen} producers of {topic} after {within:?}, want {want}"
            )));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_shapes_and_garbage() {
        let v1 =
            br#"{"channels":["ch"],"producers":[{"remote_address":"127.0.0.1:5","hostname":"h",
            "broadcast_address":"127.0.0.1","tcp_port":4150,"http_port":4151,"version":"1.3.0"}]}"#;
        let p = parse_lookup(v1).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].tcp_address(), "127.0.0.1:4150");
        let old = br#"{"status_code":200,"status_txt":"OK","data":{"channels":[],
            "producers":[{"broadcast_address":"::1","tcp_port":1}]}}"#;
        assert_eq!(parse_lookup(old).unwrap()[0].tcp_address(), "[::1]:1");
        assert!(parse_lookup(b"<html>").is_err());
        assert!(parse_lookup(b"{}").is_err());
        assert!(
            parse_lookup(br#"{"producers":[{"broadcast_address":"a","tcp_port":"x"}]}"#).is_err()
        );
    }

    #[tokio::test]
    async fn asks_an_http_server() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let server = tokio::spawn(async move {
            let mut heads = Vec::new();
            for (status, body) in [
                ("404 Not Found", r#"{"message":"TOPIC_NOT_FOUND"}"#),
                (
                    "200 OK",
                    r#"{"producers":[{"broadcast_address":"10.0.0.2","tcp_port":7}]}"#,
                ),
            ] {
                let reply = format!(
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
                let (mut s, _) = l.accept().await.unwrap();
                let mut buf = vec![0u8; 4096];
                let n = s.read(&mut buf).await.unwrap();
                heads.push(String::from_utf8_lossy(&buf[..n]).into_owned());
                s.write_all(reply.as_bytes()).await.unwrap();
            }
            heads
        });
        let p = wait_for_producers(&addr, "t#ephemeral", 1, Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(p[0].tcp_address(), "10.0.0.2:7");
        let heads = server.await.unwrap();
        assert!(heads[0].starts_with("GET /lookup?topic=t%23ephemeral HTTP/1.1\r\n"));
    }
}
