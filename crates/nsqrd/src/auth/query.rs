//! The HTTP side of authorization: one request to an auth server, as nsqd's `QueryAuthd` sends
//! it (GET with a sorted query escaped as Go's `url.QueryEscape` or POST with a JSON body of one-element arrays; `Accept:
//! application/vnd.nsq; version=1.0`; a 403 from a plain-HTTP endpoint retried once on the
//! `https_port` its body names), and the round over every configured server starting at a
//! random one.
//!
//! Each request gets a fresh connection (hyper's client connection over tokio, plus rustls for
//! `https://`), bounded by `--http-client-connect-timeout` for connecting and
//! `--http-client-request-timeout` for the whole exchange, so a hanging or slow auth server
//! costs a client at most those two.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Uri};
use nsq_common::http::client::{self, ExchangeError};
use nsq_common::http::query::escape;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

use super::{AuthError, AuthState};
use crate::options::addr::{join_host_port, split_host_port};

/// Larger replies are refused rather than buffered.
const MAX_REPLY: usize = 1 << 20;

/// What nsqd tells the auth server about a client.
#[derive(Debug, Clone, Default)]
pub struct ClientFacts {
    /// "" for a unix-socket client.
    pub remote_ip: String,
    pub tls: bool,
    /// CN of the client certificate, "" without one.
    pub common_name: String,
}

/// The configured auth servers and how to reach them.
pub struct Authenticator {
    addresses: Vec<String>,
    post: bool,
    connect_timeout: Duration,
    request_timeout: Duration,
    tls: TlsConnector,
}

impl Authenticator {
    pub fn new(
        addresses: Vec<String>,
        method: &str,
        connect_timeout: Duration,
        request_timeout: Duration,
        tls: Arc<rustls::ClientConfig>,
    ) -> Self {
        Authenticator {
            addresses,
            post: method == "post",
            connect_timeout,
            request_timeout,
            tls: TlsConnector::from(tls),
        }
    }

    /// Ask the servers in turn, from a random one, until one gives a valid reply.
    pub async fn query_any(
        &self,
        facts: &ClientFacts,
        secret: &str,
    ) -> Result<AuthState, AuthError> {
        let n = self.addresses.len();
        if n == 0 {
            return Err(AuthError::NoServer);
        }
        let start = (random() as usize) % n;
        let mut errors = Vec::new();
        for i in 0..n {
            let addr = &self.addresses[(start + i) % n];
            match self.query(addr, facts, secret).await {
                Ok(s) => return Ok(s),
                Err(e) => errors.push(format!("failed to auth against {addr} - {e}")),
            }
        }
        Err(AuthError::All(errors.join("; ")))
    }

    async fn query(
        &self,
        addr: &str,
        facts: &ClientFacts,
        secret: &str,
    ) -> Result<AuthState, AuthError> {
        let params: BTreeMap<&str, &str> = [
            ("common_name", facts.common_name.as_str()),
            ("remote_ip", facts.remote_ip.as_str()),
            ("secret", secret),
            ("tls", if facts.tls { "true" } else { "false" }),
        ]
        .into_iter()
        .collect();
        let mut endpoint = if addr.contains("://") {
            addr.to_string()
        } else {
            format!("http://{addr}/auth")
        };
        let body = if self.post {
            let arrays: BTreeMap<&str, [&str; 1]> =
                params.iter().map(|(k, v)| (*k, [*v])).collect();
            Some(Bytes::from(serde_json::to_vec(&arrays)?))
        } else {
            let q: Vec<String> = params
                .iter()
                .map(|(k, v)| format!("{}={}", escape(k), escape(v)))
                .collect();
            endpoint = format!("{endpoint}?{}", q.join("&"));
            None
        };
        let mut retried = false;
        loop {
            let (status, reply) = tokio::time::timeout(
                self.connect_timeout + self.request_timeout,
                self.exchange(&endpoint, body.clone()),
            )
            .await
            .map_err(|_| AuthError::Timeout)??;
            if status == 200 {
                return AuthState::from_reply(&reply, Instant::now());
            }
            if status == 403 && !retried && !endpoint.starts_with("https") {
                endpoint = https_endpoint(&endpoint, &reply)?;
                retried = true;
                continue;
            }
            return Err(AuthError::Status {
                status,
                body: String::from_utf8_lossy(&reply).into_owned(),
            });
        }
    }

    /// One request on a fresh connection: (status, body).
    async fn exchange(
        &self,
        endpoint: &str,
        body: Option<Bytes>,
    ) -> Result<(u16, Bytes), AuthError> {
        let uri: Uri = endpoint
            .parse()
            .map_err(|e| AuthError::Url(format!("parse {endpoint:?}: {e}")))?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            other => {
                return Err(AuthError::Url(format!(
                    "unsupported protocol scheme {:?}",
                    other.unwrap_or("")
                )))
            }
        };
        let authority = uri
            .authority()
            .ok_or_else(|| AuthError::Url(format!("no host in {endpoint:?}")))?
            .clone();
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let tcp = tokio::time::timeout(self.connect_timeout, TcpStream::connect((host, port)))
            .await
            .map_err(|_| AuthError::ConnectTimeout)?
            .map_err(AuthError::Connect)?;
        let _ = tcp.set_nodelay(true);
        let method = if body.is_some() {
            Method::POST
        } else {
            Method::GET
        };
        let mut req = client::request(
            method,
            authority.as_str(),
            uri.path_and_query().map_or("/", |p| p.as_str()),
        );
        if body.is_some() {
            req = req.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let req = req.body(Full::new(body.unwrap_or_default()))?;
        if https {
            let name = ServerName::try_from(host.to_string())
                .map_err(|e| AuthError::Url(format!("invalid host {host:?}: {e}")))?;
            let tls = self.tls.connect(name, tcp).await.map_err(AuthError::Tls)?;
            send(tls, req).await
        } else {
            send(tcp, req).await
        }
    }
}

async fn send<I>(io: I, req: Request<Full<Bytes>>) -> Result<(u16, Bytes), AuthError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    client::exchange(io, req, MAX_REPLY)
        .await
        .map_err(|e| match e {
            ExchangeError::Http(e) => AuthError::Http(e),
            ExchangeError::Body(_) => AuthError::Body,
        })
}

/// Go's `httpsEndpoint`: same URL, scheme https, port from the 403 body's `https_port`.
fn https_endpoint(endpoint: &str, body: &[u8]) -> Result<String, AuthError> {
    #[derive(serde::Deserialize)]
    struct Forbidden {
        #[serde(default)]
        https_port: i64,
    }
    let f: Forbidden = serde_json::from_slice(body)?;
    let rest = endpoint
        .split_once("://")
        .map(|(_, r)| r)
        .ok_or_else(|| AuthError::Url(format!("no scheme in {endpoint:?}")))?;
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let (host, _) = split_host_port(authority)
        .ok_or_else(|| AuthError::Url(format!("address {authority}: missing port in address")))?;
    Ok(format!(
        "https://{}{path}",
        join_host_port(host, &f.https_port.to_string())
    ))
}

/// A random start index without a dependency: hash of the time and a counter.
fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_retry_endpoint() {
        assert_eq!(
            https_endpoint("http://127.0.0.1:4181/auth?x=1", br#"{"https_port": 4443}"#).ok(),
            Some("https://127.0.0.1:4443/auth?x=1".to_string())
        );
        assert!(https_endpoint("http://host/auth", br#"{"https_port": 1}"#).is_err());
        assert!(https_endpoint("http://h:1/auth", b"nope").is_err());
    }
}
