//! `nsqr-bench sse`: a topic pre-filled over TCP, then one `/channel/stream` with
//! `max_in_flight` = `--rdy`, every message counted exactly and acknowledged by receipt through
//! `/message/fin`, in batches of up to 1,000 by four tasks on their own connections.
//!
//! The client shares the machine with the server and spends about as much CPU per message, so
//! its own cost is part of the figure: the reader takes the events apart where they lie in
//! the frames it reads (no JSON value, no string per message, the body decoded into one
//! reused buffer) and hands the receipts over a frame's worth at a time (one wake-up of an
//! acknowledging task per frame, not per message). An event that is not in the server's
//! usual field order is read with `serde_json` instead, so no message is ever skipped.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::{Buf, Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::sync::{mpsc, Mutex};

use super::consume::{prefill, ConsumeStats, CpuMeter, Delivered, Totals};
use super::http::HttpConn;
use super::QueueSpec;
use crate::fail::{err, Result};
use crate::modes::Workload;
use crate::report::PubStats;
use crate::tracker::Tracker;

/// The most receipts one `/message/fin` carries.
const MAX_BATCH: usize = 1000;
/// Tasks acknowledging, each on its own connection.
const ACKERS: usize = 4;

/// Receipts for one `/message/fin` body, one a line.
#[derive(Default)]
struct Receipts {
    text: String,
    n: usize,
}

impl Receipts {
    fn push(&mut self, receipt: &str) {
        if self.n > 0 {
            self.text.push('\n');
        }
        self.text.push_str(receipt);
        self.n += 1;
    }

    fn append(&mut self, other: Receipts) {
        if self.n == 0 {
            *self = other;
        } else if other.n > 0 {
            self.text.push('\n');
            self.text.push_str(&other.text);
            self.n += other.n;
        }
    }
}

/// The reader's side: what it saw, and the batch it is filling.
struct Reader {
    tracker: Tracker,
    totals: Arc<Totals>,
    tx: mpsc::UnboundedSender<Receipts>,
    batch: Receipts,
    /// A decoded body (reused).
    body: Vec<u8>,
    /// Messages received (`totals.received` is brought up to it at each flush).
    received: u64,
}

impl Reader {
    /// Take every whole event at the front of `buf`; returns the bytes used.
    fn events(&mut self, buf: &[u8]) -> Result<usize> {
        let mut used = 0;
        loop {
            let rest = &buf[used..];
            // The usual event in one pass: its JSON read in place, its end right after.
            if let Some((f, len)) = usual_event(rest) {
                self.message(f.receipt, f.attempts, f.body)?;
                used += len;
                continue;
            }
            let Some(end) = event_end(rest) else {
                return Ok(used);
            };
            for line in rest[..end].split(|b| *b == b'\n') {
                if let Some(json) = line.strip_prefix(b"data: ") {
                    self.any_message(json)?;
                }
            }
            used += end + 2;
        }
    }

    /// A message's JSON in whatever form.
    fn any_message(&mut self, json: &[u8]) -> Result<()> {
        if let Some(f) = Fields::parse(json).filter(|f| f.end == json.len()) {
            return self.message(f.receipt, f.attempts, f.body);
        }
        let d: Delivered = serde_json::from_slice(json)?;
        self.message(d.receipt.as_bytes(), d.attempts, d.body.as_bytes())
    }

    /// One message: count it and queue its receipt.
    fn message(&mut self, receipt: &[u8], attempts: u16, body: &[u8]) -> Result<()> {
        self.body.clear();
        STANDARD
            .decode_vec(body, &mut self.body)
            .map_err(|e| err(format!("a body that is not base64: {e}")))?;
        self.tracker.record(&self.body);
        if attempts > 1 {
            self.totals.redelivered.fetch_add(1, Relaxed);
        }
        let receipt =
            std::str::from_utf8(receipt).map_err(|_| err("a receipt that is not UTF-8"))?;
        self.batch.push(receipt);
        self.received += 1;
        if self.batch.n >= MAX_BATCH {
            self.flush();
        }
        Ok(())
    }

    /// Hand the batch to the acknowledging tasks, and publish the count.
    fn flush(&mut self) {
        if self.batch.n > 0 {
            let _ = self.tx.send(std::mem::take(&mut self.batch));
        }
        self.totals.received.store(self.received, Relaxed);
    }
}

/// Where the first event in `buf` ends (its blank line's first newline), if it is whole.
fn event_end(buf: &[u8]) -> Option<usize> {
    let mut from = 0;
    loop {
        let nl = from + memchr::memchr(b'\n', buf.get(from..)?)?;
        match buf.get(nl + 1) {
            Some(b'\n') => return Some(nl),
            Some(_) => from = nl + 1,
            None => return None,
        }
    }
}

/// The event the server writes for a message (`id: N`, `event: message`, `data: {JSON}`),
/// if `buf` starts with a whole one in its usual form: its fields and its length, blank line
/// included.
fn usual_event(buf: &[u8]) -> Option<(Fields<'_>, usize)> {
    let rest = buf.strip_prefix(b"id: ")?;
    let (_, rest) = number(rest)?;
    let json = rest.strip_prefix(b"\nevent: message\ndata: ")?;
    let f = Fields::parse(json)?;
    json[f.end..].strip_prefix(b"\n\n")?;
    let len = buf.len() - json.len() + f.end + 2;
    Some((f, len))
}

/// The fields the benchmark needs, read in place from a message's JSON as the server writes
/// it: `{"id":"…","receipt":"…","attempts":N,"timestamp":N,"body":"…"…}`. None for anything
/// else (then `serde_json` reads it).
#[derive(Debug, PartialEq)]
struct Fields<'a> {
    receipt: &'a [u8],
    attempts: u16,
    body: &'a [u8],
    /// Where the object ends (just past its closing brace).
    end: usize,
}

impl<'a> Fields<'a> {
    fn parse(json: &'a [u8]) -> Option<Fields<'a>> {
        let rest = json.strip_prefix(b"{\"id\":\"")?;
        let (_, rest) = string(rest)?;
        let rest = rest.strip_prefix(b",\"receipt\":\"")?;
        let (receipt, rest) = string(rest)?;
        let rest = rest.strip_prefix(b",\"attempts\":")?;
        let (attempts, rest) = number(rest)?;
        let rest = rest.strip_prefix(b",\"timestamp\":")?;
        let rest = rest.strip_prefix(b"-").unwrap_or(rest);
        let (_, rest) = number(rest)?;
        let rest = rest.strip_prefix(b",\"body\":\"")?;
        let (body, rest) = string(rest)?;
        // Anything after the body (an ordering key...) is left to `serde_json`.
        rest.strip_prefix(b"}")?;
        Some(Fields {
            receipt,
            attempts: u16::try_from(attempts).ok()?,
            body,
            end: json.len() - rest.len() + 1,
        })
    }
}

/// A string's contents up to its closing quote, and what follows the quote; None if it has
/// an escape (the fields read here never need one).
fn string(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = memchr::memchr2(b'"', b'\\', s)?;
    if s[end] != b'"' {
        return None;
    }
    Some((&s[..end], &s[end + 1..]))
}

/// A decimal number's value and what follows it.
fn number(s: &[u8]) -> Option<(u64, &[u8])> {
    let end = s
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(s.len());
    if end == 0 || end > 19 {
        return None;
    }
    let mut v = 0u64;
    for d in &s[..end] {
        v = v * 10 + u64::from(d - b'0');
    }
    Some((v, &s[end..]))
}

/// Read the stream until `expected` messages came or none came for `idle`.
async fn read(mut body: Incoming, mut r: Reader, expected: u64, idle: Duration) -> Result<Reader> {
    let mut buf = BytesMut::new();
    let mut last = Instant::now();
    while r.received < expected && last.elapsed() < idle {
        let frame = match tokio::time::timeout(idle, body.frame()).await {
            Ok(Some(f)) => f.map_err(|e| err(e.to_string()))?,
            Ok(None) => return Err(err("the stream ended")),
            Err(_) => break,
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let before = r.received;
        // Whole events are read where they lie; only a frame's unfinished tail is copied.
        if buf.is_empty() {
            let used = r.events(&data)?;
            buf.extend_from_slice(&data[used..]);
        } else {
            buf.extend_from_slice(&data);
            let used = r.events(&buf)?;
            buf.advance(used);
        }
        r.flush();
        if r.received > before {
            last = Instant::now();
        }
    }
    Ok(r)
}

/// An acknowledging task: post batches of receipts until the reader is done.
async fn acker(
    mut conn: HttpConn,
    rx: Arc<Mutex<mpsc::UnboundedReceiver<Receipts>>>,
    totals: Arc<Totals>,
) -> Result<Instant> {
    let mut carry: Option<Receipts> = None;
    loop {
        let mut batch = Receipts::default();
        {
            let mut rx = rx.lock().await;
            let first = match carry.take() {
                Some(c) => c,
                None => match rx.recv().await {
                    Some(r) => r,
                    None => break,
                },
            };
            batch.append(first);
            while batch.n < MAX_BATCH {
                match rx.try_recv() {
                    Ok(r) if batch.n + r.n <= MAX_BATCH => batch.append(r),
                    Ok(r) => {
                        carry = Some(r);
                        break;
                    }
                    Err(_) => break,
                }
            }
        }
        let n = batch.n as u64;
        conn.call("POST", "/message/fin", Bytes::from(batch.text))
            .await?;
        totals.requests.fetch_add(1, Relaxed);
        totals.acked.fetch_add(n, Relaxed);
    }
    Ok(Instant::now())
}

/// `nsqr-bench sse`.
pub async fn sse(w: &Workload, q: &QueueSpec, topic: &str) -> Result<(PubStats, ConsumeStats)> {
    let (p, published) = prefill(w, q, topic, q.count(200_000)).await?;
    let totals = Arc::new(Totals::default());
    let expected = published.acked;
    let (tx, rx) = mpsc::unbounded_channel::<Receipts>();
    let rx = Arc::new(Mutex::new(rx));
    let mut ackers = Vec::new();
    for _ in 0..ACKERS {
        let conn = HttpConn::connect(&q.http_address).await?;
        ackers.push(tokio::spawn(acker(
            conn,
            Arc::clone(&rx),
            Arc::clone(&totals),
        )));
    }
    let mut stream = HttpConn::connect(&q.http_address).await?;
    let path = format!(
        "/channel/stream?topic={topic}&channel={}&max_in_flight={}&heartbeat=1s",
        w.channel, w.rdy
    );
    let cpu = CpuMeter::start(q.server_pid)?;
    let start = Instant::now();
    let resp = stream.send("GET", &path, Bytes::new()).await?;
    if !resp.status().is_success() {
        return Err(err(format!("{path}: {}", resp.status())));
    }
    let r = Reader {
        tracker: Tracker::new(w.tag),
        totals: Arc::clone(&totals),
        tx,
        batch: Receipts::default(),
        body: Vec::new(),
        received: 0,
    };
    // A task of its own, so it runs where the connection's task wakes it, not on a thread
    // that has to be woken.
    let reading = tokio::spawn(read(resp.into_body(), r, expected, w.drain_timeout));
    let r = reading.await.map_err(|e| err(e.to_string()))??;
    let Reader { tracker, tx, .. } = r;
    drop(tx);
    let mut end = start;
    for a in ackers {
        end = end.max(a.await.map_err(|e| err(e.to_string()))??);
    }
    let mut s = ConsumeStats::new(&tracker, &published, &totals, end - start);
    s.cpu = cpu.map(|c| c.per_msg(s.acknowledged)).transpose()?;
    s.consumers = 1;
    s.batch = w.rdy as usize;
    Ok((p, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_in_place_or_not_at_all() {
        let json = br#"{"id":"0a1b2c3d4e5f6789","receipt":"AQ-_x","attempts":3,"timestamp":1700000000123456789,"body":"aGk="}"#;
        assert_eq!(
            Fields::parse(json),
            Some(Fields {
                receipt: b"AQ-_x",
                attempts: 3,
                body: b"aGk=",
                end: json.len(),
            })
        );
        let keyed = br#"{"id":"0a","receipt":"r","attempts":1,"timestamp":-5,"body":"","ordering_key":"k"}"#;
        assert_eq!(Fields::parse(json).map(|f| f.end), Some(json.len()));
        let plain = br#"{"id":"0a","receipt":"r","attempts":1,"timestamp":-5,"body":""}"#;
        assert_eq!(
            Fields::parse(plain).map(|f| (f.receipt, f.attempts, f.body)),
            Some((&b"r"[..], 1, &b""[..]))
        );
        for other in [
            &keyed[..],
            br#"{"receipt":"r","id":"0a","attempts":1,"timestamp":1,"body":""}"#,
            br#"{"id":"0a","receipt":"r\"","attempts":1,"timestamp":1,"body":""}"#,
            br#"{"id":"0a","receipt":"r","attempts":70000,"timestamp":1,"body":""}"#,
            br#"{"id":"0a","receipt":"r","attempts":,"timestamp":1,"body":""}"#,
            br#"{"id":"0a","receipt":"r","attempts":1,"timestamp":1,"body":"x"]"#,
            br#"{"id":"0a","receipt":"r","attempts":1,"timestamp":1,"body":"x"#,
            b"",
        ] {
            assert_eq!(
                Fields::parse(other),
                None,
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }

    #[test]
    fn events_end_at_a_blank_line() {
        assert_eq!(event_end(b"id: 1\ndata: x\n\nid: 2"), Some(13));
        assert_eq!(event_end(b"id: 1\ndata: x\n"), None);
        assert_eq!(event_end(b"\n\n"), Some(0));
        assert_eq!(event_end(b""), None);
    }

    /// Events split anywhere across frames are each counted once, and their receipts reach
    /// the acknowledging side in order, a batch per frame.
    #[test]
    fn frames_split_anywhere() {
        let body = |seq: u64| {
            let mut b = crate::body::seq_word(7, 0, seq).to_be_bytes().to_vec();
            b.resize(32, b'x');
            STANDARD.encode(b)
        };
        let mut stream = b": connected to t/c\n\n".to_vec();
        for seq in 0..5u64 {
            stream.extend_from_slice(
                format!(
                    "id: {seq}\nevent: message\ndata: {{\"id\":\"00\",\"receipt\":\"r{seq}\",\"attempts\":1,\"timestamp\":1,\"body\":\"{}\"}}\n\n",
                    body(seq)
                )
                .as_bytes(),
            );
            stream.extend_from_slice(b": heartbeat\n\n");
        }
        for cut in [1, 7, 50, stream.len()] {
            let (tx, mut rx) = mpsc::unbounded_channel();
            let mut r = Reader {
                tracker: Tracker::new(7),
                totals: Arc::default(),
                tx,
                batch: Receipts::default(),
                body: Vec::new(),
                received: 0,
            };
            let mut buf = BytesMut::new();
            for frame in stream.chunks(cut) {
                buf.extend_from_slice(frame);
                let used = r.events(&buf).unwrap();
                buf.advance(used);
                r.flush();
            }
            assert!(buf.is_empty());
            assert_eq!((r.tracker.unique, r.tracker.duplicates), (5, 0), "{cut}");
            let mut got = Receipts::default();
            while let Ok(b) = rx.try_recv() {
                got.append(b);
            }
            assert_eq!(got.text, "r0\nr1\nr2\nr3\nr4", "{cut}");
            assert_eq!(got.n, 5);
        }
    }
}
