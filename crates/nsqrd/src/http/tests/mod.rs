//! In-process tests of the whole HTTP stack: `serve` on 127.0.0.1:0 with a broker built here,
//! driven by raw HTTP/1.1 over a TCP stream so status lines, headers and bodies are checked
//! exactly as a client sees them.

mod admin;
mod conventions;
mod publishing;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use std::sync::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use nsqr_broker::{Broker, BrokerConfig};

use super::{serve, ConfigPutError, ConfigStore, ConfigValue, HttpSettings, HttpState};

pub const V1: &str = "nsq; version=1.0";
pub const JSON_CT: &str = "application/json; charset=utf-8";
pub const TEXT_CT: &str = "text/plain; charset=utf-8";

/// A config store over a map, with nsqd's two runtime-settable options.
pub struct MemConfig(Mutex<BTreeMap<String, ConfigValue>>);

impl MemConfig {
    pub fn new() -> MemConfig {
        let mut m = BTreeMap::new();
        m.insert(
            "broadcast_address".into(),
            ConfigValue::Text("127.0.0.1".into()),
        );
        m.insert("statsd_address".into(), ConfigValue::Text(String::new()));
        m.insert(
            "msg_timeout".into(),
            ConfigValue::Json(60_000_000_000i64.into()),
        );
        m.insert("log_level".into(), ConfigValue::Json(2.into()));
        m.insert(
            "nsqlookupd_tcp_addresses".into(),
            ConfigValue::Json(serde_json::json!([])),
        );
        m.insert(
            "e2e_processing_latency_percentiles".into(),
            ConfigValue::Json(serde_json::json!([1.0, 0.99])),
        );
        MemConfig(Mutex::new(m))
    }
}

impl ConfigStore for MemConfig {
    fn get(&self, key: &str) -> Option<ConfigValue> {
        self.0.lock().unwrap().get(key).cloned()
    }

    fn put(&self, key: &str, body: &[u8]) -> Result<(), ConfigPutError> {
        let v = match key {
            "log_level" => {
                let levels = ["debug", "info", "warn", "error", "fatal"];
                let s = std::str::from_utf8(body).map_err(|_| ConfigPutError::InvalidValue)?;
                let i = levels
                    .iter()
                    .position(|l| l.eq_ignore_ascii_case(s))
                    .ok_or(ConfigPutError::InvalidValue)?;
                ConfigValue::Json((i + 1).into())
            }
            "nsqlookupd_tcp_addresses" => {
                let v: Vec<String> =
                    serde_json::from_slice(body).map_err(|_| ConfigPutError::InvalidValue)?;
                ConfigValue::Json(v.into())
            }
            _ => return Err(ConfigPutError::InvalidOption),
        };
        self.0.lock().unwrap().insert(key.to_string(), v);
        Ok(())
    }
}

pub fn test_settings() -> HttpSettings {
    HttpSettings {
        broadcast_address: "127.0.0.1".into(),
        hostname: "testhost".into(),
        tcp_port: 14150,
        http_port: 14151,
        ..crate::http_wiring::http_settings(&crate::options::Options::default(), 4150, 4151)
    }
}

/// A running `serve` task.
pub struct TestServer {
    pub addr: SocketAddr,
    pub broker: Arc<Broker>,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl TestServer {
    pub async fn start() -> TestServer {
        TestServer::with(test_settings(), BrokerConfig::default()).await
    }

    pub async fn with(settings: HttpSettings, cfg: BrokerConfig) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let broker = Arc::new(Broker::start(cfg).await.unwrap());
        let state = Arc::new(HttpState {
            broker: Arc::clone(&broker),
            clients: Arc::default(),
            settings,
            config: Arc::new(MemConfig::new()),
            consumers: Arc::default(),
            cluster: None,
        });
        let (tx, rx) = oneshot::channel::<()>();
        let listener = crate::listener::Listener::Tcp(listener);
        // Two serving threads: connections of one test are served by both.
        let workers = Arc::new(crate::http::workers::Workers::start(2).unwrap());
        let task = tokio::spawn(serve(listener, state, None, workers, async {
            let _ = rx.await;
        }));
        TestServer {
            addr,
            broker,
            stop: Some(tx),
            task,
        }
    }

    /// Stop the server and wait for `serve` to return.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        tokio::time::timeout(Duration::from_secs(10), &mut self.task)
            .await
            .expect("serve returned")
            .unwrap();
    }

    pub async fn req(&self, method: &str, target: &str, body: &[u8]) -> Resp {
        self.raw_req(method, target, &[], body).await
    }

    pub async fn get(&self, target: &str) -> Resp {
        self.req("GET", target, b"").await
    }

    pub async fn post(&self, target: &str, body: &[u8]) -> Resp {
        self.req("POST", target, body).await
    }

    /// One request with a Content-Length body on a fresh `Connection: close` connection.
    pub async fn raw_req(
        &self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Resp {
        let mut head = format!("{method} {target} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if !headers
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("transfer-encoding"))
        {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        self.send_raw(&bytes).await
    }

    /// Write `bytes` and read the response until the server closes.
    pub async fn send_raw(&self, bytes: &[u8]) -> Resp {
        let mut s = TcpStream::connect(self.addr).await.unwrap();
        s.write_all(bytes).await.unwrap();
        let mut out = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
            .await
            .expect("response in time")
            .unwrap();
        parse_responses(&out).remove(0)
    }

    /// The JSON stats document.
    pub async fn stats(&self, query: &str) -> serde_json::Value {
        let r = self.get(&format!("/stats?format=json{query}")).await;
        assert_eq!(r.status, 200, "{}", r.text());
        r.json()
    }

    pub async fn topic_stats(&self, topic: &str) -> Option<serde_json::Value> {
        let v = self.stats("").await;
        v["topics"]
            .as_array()?
            .iter()
            .find(|t| t["topic_name"] == topic)
            .cloned()
    }
}

/// A parsed HTTP response (the same type the black-box tests use).
pub use nsqr_testkit::HttpResponse as Resp;

/// Parse every Content-Length-framed response in `raw`.
pub fn parse_responses(mut raw: &[u8]) -> Vec<Resp> {
    let mut out = Vec::new();
    while !raw.is_empty() {
        let end = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
        let head = std::str::from_utf8(&raw[..end]).unwrap();
        let mut lines = head.split("\r\n");
        let status: u16 = lines
            .next()
            .unwrap()
            .split(' ')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        let headers: Vec<(String, String)> = lines
            .map(|l| {
                let (k, v) = l.split_once(':').unwrap();
                (k.to_string(), v.trim().to_string())
            })
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .map(|(_, v)| v.parse().unwrap())
            .unwrap_or(raw.len() - end - 4)
            // A HEAD response announces a length but has no body.
            .min(raw.len() - end - 4);
        let body = raw[end + 4..end + 4 + len].to_vec();
        raw = &raw[end + 4 + len..];
        out.push(Resp {
            status,
            headers,
            body,
        });
    }
    out
}

/// A V1 error: status, exact body, JSON content type, X-NSQ header.
#[track_caller]
pub fn assert_err(r: &Resp, status: u16, msg: &str) {
    assert_eq!(
        (r.status, r.text()),
        (status, format!("{{\"message\":\"{msg}\"}}"))
    );
    assert_eq!(r.header("Content-Type"), Some(JSON_CT));
    assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1));
}

/// A V1 success with an empty body and no content type.
#[track_caller]
pub fn assert_empty_ok(r: &Resp) {
    assert_eq!((r.status, r.text()), (200, String::new()));
    assert_eq!(r.header("Content-Type"), None);
    assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1));
}

/// A V1 success with a text body.
#[track_caller]
pub fn assert_text_ok(r: &Resp, text: &str) {
    assert_eq!((r.status, r.text()), (200, text.to_string()));
    assert_eq!(r.header("Content-Type"), Some(TEXT_CT));
    assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1));
}

/// The binary `/mpub` body for `msgs`.
pub fn mpub_body(msgs: &[&[u8]]) -> Vec<u8> {
    let mut v = (msgs.len() as i32).to_be_bytes().to_vec();
    for m in msgs {
        v.extend_from_slice(&(m.len() as i32).to_be_bytes());
        v.extend_from_slice(m);
    }
    v
}
