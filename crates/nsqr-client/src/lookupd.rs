//! Asking nsqlookupd which nsqd nodes have a topic: `GET /lookup?topic=T` on its HTTP API
//! (go-nsq's `queryLookupd`), answered in either shape lookupd has used (v1
//! `{"producers":[...]}` or the older `{"status_code":200,"data":{...}}`). A consumer polls it
//! and connects to every producer's `broadcast_address:tcp_port`.

use std::time::Duration;

use serde::Deserialize;

use crate::error::Error;

/// One nsqd that has the topic, as lookupd lists it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Producer {
    /// The address it asks clients to connect to.
    pub broadcast_address: String,
    /// Its TCP port.
    pub tcp_port: u16,
    /// Its HTTP port.
    #[serde(default)]
    pub http_port: u16,
}

impl Producer {
    /// `host:port` of its TCP listener (IPv6 hosts in brackets).
    pub fn tcp_address(&self) -> String {
        join(&self.broadcast_address, self.tcp_port)
    }

    /// `host:port` of its HTTP listener.
    pub fn http_address(&self) -> String {
        join(&self.broadcast_address, self.http_port)
    }
}

fn join(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// A lookupd HTTP address: `host:port` or `http://host:port[/path]` (the path defaults to
/// `/lookup`), as go-nsq accepts them. Returns (host:port, path).
pub fn parse_lookupd_address(addr: &str) -> Result<(String, String), Error> {
    let bad = |why| Error::Address {
        addr: addr.to_string(),
        why,
    };
    let rest = match addr.split_once("://") {
        Some(("http", rest)) => rest,
        Some(_) => return Err(bad("lookupd is asked over http://")),
        None => addr,
    };
    let (hostport, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    match hostport.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() && p.parse::<u16>().is_ok() => {}
        _ => return Err(bad("missing port")),
    }
    let path = if path.is_empty() || path == "/" {
        "/lookup"
    } else {
        path
    };
    Ok((hostport.to_string(), path.to_string()))
}

/// The producers in a `/lookup` answer.
pub fn parse_lookup(addr: &str, body: &[u8]) -> Result<Vec<Producer>, Error> {
    use nsq_common::http::client::{lookupd_list, LookupdAnswerError};
    lookupd_list(body, "producers").map_err(|e| Error::Lookupd {
        addr: addr.to_string(),
        why: match e {
            LookupdAnswerError::Json(e) => format!("invalid /lookup answer: {e}"),
            LookupdAnswerError::Missing(_) => "/lookup answer without producers".into(),
        },
    })
}

/// The nsqd nodes lookupd at `addr` lists for `topic` (none if it does not know the topic),
/// within `timeout`. `bearer` is sent as `Authorization: Bearer <secret>`.
pub async fn lookup(
    addr: &str,
    topic: &str,
    timeout: Duration,
    bearer: Option<&str>,
) -> Result<Vec<Producer>, Error> {
    let (hostport, path) = parse_lookupd_address(addr)?;
    // Topic names are [.a-zA-Z0-9_-]+ (plus `#ephemeral`): only `#` needs encoding.
    let sep = if path.contains('?') { '&' } else { '?' };
    let uri = format!("{path}{sep}topic={}", topic.replace('#', "%23"));
    let (status, body) = crate::http::get(&hostport, &uri, timeout, bearer)
        .await
        .map_err(|e| match e {
            Error::Http { why, .. } => Error::Lookupd {
                addr: addr.to_string(),
                why,
            },
            e => e,
        })?;
    match status {
        200 => parse_lookup(addr, &body),
        404 => Ok(Vec::new()),
        s => Err(Error::Lookupd {
            addr: addr.to_string(),
            why: format!("/lookup answered {s}"),
        }),
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
        let p = parse_lookup("l", v1).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].tcp_address(), "127.0.0.1:4150");
        assert_eq!(p[0].http_address(), "127.0.0.1:4151");
        let old = br#"{"status_code":200,"status_txt":"OK","data":{"channels":[],
            "producers":[{"broadcast_address":"::1","tcp_port":1}]}}"#;
        assert_eq!(parse_lookup("l", old).unwrap()[0].tcp_address(), "[::1]:1");
        assert!(parse_lookup("l", b"<html>").is_err());
        assert!(parse_lookup("l", b"{}").is_err());
    }

    #[test]
    fn lookupd_addresses() {
        let p = |s| parse_lookupd_address(s).unwrap();
        assert_eq!(
            p("127.0.0.1:4161"),
            ("127.0.0.1:4161".into(), "/lookup".into())
        );
        assert_eq!(p("http://h:1/"), ("h:1".into(), "/lookup".into()));
        assert_eq!(p("http://h:1/x/lookup"), ("h:1".into(), "/x/lookup".into()));
        assert!(parse_lookupd_address("h").is_err());
        assert!(parse_lookupd_address("https://h:1").is_err());
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
        let t = Duration::from_secs(10);
        assert!(lookup(&addr, "t#ephemeral", t, Some("s3cret"))
            .await
            .unwrap()
            .is_empty());
        let p = lookup(&addr, "t", t, None).await.unwrap();
        assert_eq!(p[0].tcp_address(), "10.0.0.2:7");
        let heads = server.await.unwrap();
        assert!(heads[0].starts_with("GET /lookup?topic=t%23ephemeral HTTP/1.1\r\n"));
        assert!(heads[0].contains("authorization: Bearer s3cret\r\n"));
    }
}
