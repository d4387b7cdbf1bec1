//! Helpers for the keyspace's unit tests: an in-memory keyspace, a change feed that keeps what
//! it is given, a subscriber's decoded messages, and temporary data directories.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use resp_wire::{decode, Frame, Protocol};

use crate::feed::{ChangeFeed, FeedError, FeedWait};
use crate::{Keyspace, KvConfig, OutputLimit, Subscriber};

/// A change feed that keeps every body, parsed.
#[derive(Default)]
pub struct Collect(pub Mutex<Vec<serde_json::Value>>);

impl ChangeFeed for Collect {
    fn publish(&self, body: Vec<u8>) -> Result<Option<FeedWait>, FeedError> {
        self.0.lock().push(serde_json::from_slice(&body).unwrap());
        Ok(None)
    }
}

impl Collect {
    /// The `op` of every change so far, with its key.
    pub fn ops(&self) -> Vec<(String, String)> {
        self.0
            .lock()
            .iter()
            .map(|c| {
                (
                    c["op"].as_str().unwrap().to_string(),
                    c["key"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }
}

pub fn mem() -> Arc<Keyspace> {
    Keyspace::open(KvConfig::default(), None).unwrap()
}

pub fn with_feed(config: KvConfig) -> (Arc<Keyspace>, Arc<Collect>) {
    let feed = Arc::new(Collect::default());
    let ks = Keyspace::open(config, Some(feed.clone() as Arc<dyn ChangeFeed>)).unwrap();
    (ks, feed)
}

pub fn subscriber(id: u64) -> Arc<Subscriber> {
    Arc::new(Subscriber::new(id, Protocol::Resp2, OutputLimit::default()))
}

/// Every frame queued for `s`.
pub fn frames(s: &Subscriber) -> Vec<Frame> {
    let mut buf = Vec::new();
    s.take(&mut buf);
    let mut at = 0;
    let mut out = Vec::new();
    while let Some((f, n)) = decode(&buf[at..]).unwrap() {
        out.push(f);
        at += n;
    }
    out
}

/// The (channel, message) of every `message` / `pmessage` frame.
pub fn messages(frames: &[Frame]) -> Vec<(String, String)> {
    let text = |f: &Frame| String::from_utf8(f.as_bytes().unwrap().to_vec()).unwrap();
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Array(v) | Frame::Push(v) if v[0].as_bytes() == Some(b"message") => {
                Some((text(&v[1]), text(&v[2])))
            }
            Frame::Array(v) | Frame::Push(v) if v[0].as_bytes() == Some(b"pmessage") => {
                Some((text(&v[2]), text(&v[3])))
            }
            _ => None,
        })
        .collect()
}

pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nsqr-kv-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Polls `f` every 2 ms until it holds or `timeout` passes.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    f()
}
