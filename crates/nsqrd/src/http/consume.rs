//! `POST /channel/receive` (nsqr only): consume over HTTP with a long poll.
//!
//! `?topic=T&channel=C[&max=N][&wait=D][&timeout=D]` takes up to `max` messages (default 1, at
//! most 1000), waiting up to `wait` (default 0, at most 30 s) for the first one, and answers as
//! soon as it has any: `{"messages": [...]}` (empty when the wait ended with nothing), each
//! message `{"id", "receipt", "attempts", "timestamp", "body"}` (body in base64) plus its
//! `ordering_key`, `expires_at` and `dead_letter` record when it has them. Each is in flight
//! for `timeout` (default: the channel's `msg_timeout` setting, else `--msg-timeout`; at most
//! `--max-msg-timeout`) until answered with its receipt (`settle.rs`). With
//! `Accept: application/octet-stream` and `max=1` the answer is the raw body with the message's
//! facts in `X-NSQ-*` headers, and 204 when there is nothing.

use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use hyper::{Request, StatusCode};
use nsq_common::http::query::Query;
use nsq_common::http::response::{self, ApiError, Body, Reply, Resp};
use nsqr_broker::{BrokerError, Channel, Consumer, DeadLetterInfo, Message};
use serde::Serialize;

use super::consumers::HttpClient;
use super::query::{duration_rule, invalid_arg};
use super::queue_settings::name_arg;
use super::receipt::Receipt;
use super::HttpState;
use super::RequestCtx;

/// The most messages one poll may ask for.
pub const MAX_RECEIVE: usize = 1000;
/// The longest a poll may wait.
pub const MAX_WAIT: Duration = Duration::from_secs(30);

/// One delivered message as HTTP consumers see it (`/channel/receive`, `/channel/stream`).
#[derive(Debug, Clone, Serialize)]
pub struct Delivered {
    pub id: String,
    pub receipt: String,
    pub attempts: u16,
    pub timestamp: i64,
    /// Base64 (standard alphabet, padded) in JSON.
    #[serde(serialize_with = "base64_body")]
    pub body: Bytes,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ordering_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dead_letter: Option<DeadLetterInfo>,
}

fn base64_body<S: serde::Serializer>(b: &Bytes, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&STANDARD.encode(b))
}

impl Delivered {
    /// Append `self` as compact JSON, byte for byte what `serde_json` writes for it (a test
    /// holds the two together): the reference [`write_delivery`] is checked against.
    #[cfg(test)]
    pub fn write_json(&self, out: &mut Vec<u8>) {
        Fields {
            id: self.id.as_bytes(),
            attempts: self.attempts,
            timestamp: self.timestamp,
            body: &self.body,
            ordering_key: self.ordering_key.as_deref(),
            expires_at: self.expires_at,
            dead_letter: self.dead_letter.as_ref(),
        }
        .write(out, |out| out.extend_from_slice(self.receipt.as_bytes()));
    }

    /// `msg`, delivery number `delivery` of `ch`, handed to `consumer`.
    pub fn of(
        state: &HttpState,
        ch: &Channel,
        consumer: &Consumer,
        msg: &Message,
        delivery: u64,
    ) -> Delivered {
        let receipt = state.consumers.receipts.issue(&Receipt {
            topic: ch.topic_name().to_string(),
            channel: ch.name().to_string(),
            id: msg.id.0,
            delivery,
            consumer: consumer.id(),
        });
        let attrs = msg.attributes();
        Delivered {
            id: String::from_utf8_lossy(&msg.id.to_hex()).into_owned(),
            receipt,
            attempts: msg.attempts,
            timestamp: msg.timestamp(),
            body: msg.body_bytes(),
            ordering_key: attrs.and_then(|a| a.ordering_key.as_deref().map(str::to_string)),
            expires_at: attrs.map(|a| a.expires_at).filter(|e| *e != 0),
            dead_letter: attrs.and_then(|a| a.dead_letter.clone()),
        }
    }
}

/// Append the JSON of `msg`, delivery number `delivery` of `ch`, handed to `consumer`: what
/// `Delivered::of(..).write_json(out)` writes (a test holds the two together), without the
/// `Delivered` and its strings. Long polls and SSE write one per message: the fields that
/// cannot need escaping (the hex id, the base64url receipt, the base64 body) are copied as
/// they are and the body is encoded straight into `out`; only the ordering key and the
/// dead-letter record go through `serde_json`.
pub fn write_delivery(
    state: &HttpState,
    ch: &Channel,
    consumer: &Consumer,
    msg: &Message,
    delivery: u64,
    out: &mut Vec<u8>,
) {
    let attrs = msg.attributes();
    Fields {
        id: &msg.id.to_hex(),
        attempts: msg.attempts,
        timestamp: msg.timestamp(),
        body: msg.body(),
        ordering_key: attrs.and_then(|a| a.ordering_key.as_deref()),
        expires_at: attrs.map(|a| a.expires_at).filter(|e| *e != 0),
        dead_letter: attrs.and_then(|a| a.dead_letter.as_ref()),
    }
    .write(out, |out| {
        state.consumers.receipts.issue_into(
            ch.topic_name(),
            ch.name(),
            msg.id.0,
            delivery,
            consumer.id(),
            out,
        )
    });
}

/// A delivery's fields, borrowed from a `Delivered` or from the message itself.
struct Fields<'a> {
    id: &'a [u8],
    attempts: u16,
    timestamp: i64,
    body: &'a [u8],
    ordering_key: Option<&'a str>,
    expires_at: Option<i64>,
    dead_letter: Option<&'a DeadLetterInfo>,
}

impl Fields<'_> {
    /// The compact JSON, the receipt written by `receipt`.
    fn write(&self, out: &mut Vec<u8>, receipt: impl FnOnce(&mut Vec<u8>)) {
        out.extend_from_slice(b"{\"id\":\"");
        out.extend_from_slice(self.id);
        out.extend_from_slice(b"\",\"receipt\":\"");
        receipt(out);
        out.extend_from_slice(b"\",\"attempts\":");
        push_int(out, u64::from(self.attempts));
        out.extend_from_slice(b",\"timestamp\":");
        push_int(out, self.timestamp);
        out.extend_from_slice(b",\"body\":\"");
        let start = out.len();
        out.resize(start + base64_len(self.body.len()), 0);
        let written = STANDARD
            .encode_slice(self.body, &mut out[start..])
            .unwrap_or(0);
        out.truncate(start + written);
        out.push(b'"');
        if let Some(k) = self.ordering_key {
            out.extend_from_slice(b",\"ordering_key\":");
            let _ = serde_json::to_writer(&mut *out, k);
        }
        if let Some(e) = self.expires_at {
            out.extend_from_slice(b",\"expires_at\":");
            push_int(out, e);
        }
        if let Some(d) = self.dead_letter {
            out.extend_from_slice(b",\"dead_letter\":");
            let _ = serde_json::to_writer(&mut *out, d);
        }
        out.push(b'}');
    }
}

/// Append `n` in decimal (what `Display` writes), without going through `fmt`.
pub(crate) fn push_int(out: &mut Vec<u8>, n: impl itoa::Integer) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Padded base64's length for `n` bytes.
fn base64_len(n: usize) -> usize {
    n.div_ceil(3) * 4
}

/// A poll's arguments.
#[derive(Debug, Clone, PartialEq)]
struct Poll {
    topic: String,
    channel: String,
    max: usize,
    wait: Duration,
    timeout: Option<Duration>,
    raw: bool,
}

/// A duration argument: Go text (`250ms`, `2s`) or integer milliseconds.
pub(crate) fn duration_arg(v: &str) -> Option<Duration> {
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        v.parse().ok().map(Duration::from_millis)
    } else {
        nsq_common::duration::parse(v).ok()
    }
}

/// The `timeout` argument of a consumer: its in-flight timeout, up to `--max-msg-timeout`
/// (None: the channel's).
pub(super) fn timeout_arg(state: &HttpState, q: &Query) -> Result<Option<Duration>, ApiError> {
    let max_timeout = state.broker.config().max_msg_timeout;
    q.get("timeout")
        .map(|v| {
            duration_arg(v)
                .filter(|d| !d.is_zero() && *d <= max_timeout)
                .ok_or_else(|| {
                    invalid_arg(
                        "INVALID_TIMEOUT",
                        duration_rule("timeout", "above 0", max_timeout) + " (--max-msg-timeout)",
                    )
                })
        })
        .transpose()
}

fn parse(state: &HttpState, req: &Request<Incoming>) -> Result<Poll, ApiError> {
    let q =
        Query::parse(req.uri().query()).map_err(|_| ApiError::bad_request("INVALID_REQUEST"))?;
    let topic = name_arg(&q, "topic", "MISSING_ARG_TOPIC", "INVALID_TOPIC")?.to_string();
    let channel = name_arg(&q, "channel", "MISSING_ARG_CHANNEL", "INVALID_CHANNEL")?.to_string();
    let max = match q.get("max") {
        None => 1,
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_RECEIVE).contains(n))
            .ok_or_else(|| {
                invalid_arg(
                    "INVALID_MAX",
                    format!("max must be an integer from 1 to {MAX_RECEIVE}"),
                )
            })?,
    };
    let wait = match q.get("wait") {
        None => Duration::ZERO,
        Some(v) => duration_arg(v)
            .filter(|d| *d <= MAX_WAIT)
            .ok_or_else(|| invalid_arg("INVALID_WAIT", duration_rule("wait", "0", MAX_WAIT)))?,
    };
    let timeout = timeout_arg(state, &q)?;
    let raw = req
        .headers()
        .get(ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim().starts_with("application/octet-stream"))
        });
    if raw && max != 1 {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_MAX: a raw body (Accept: application/octet-stream) needs max=1",
        ));
    }
    Ok(Poll {
        topic,
        channel,
        max,
        wait,
        timeout,
        raw,
    })
}

/// `POST /channel/receive`.
pub async fn receive(state: &HttpState, req: Request<Incoming>, cx: RequestCtx) -> Resp {
    let poll = match parse(state, &req) {
        Ok(p) => p,
        Err(e) => return response::v1(Err(e)),
    };
    let who = HttpClient::of(&req, cx);
    drop(req);
    if poll.raw {
        let mut got = None;
        let taken = take(state, &poll, who, |ch, consumer, m, n| {
            got = Some(Delivered::of(state, ch, consumer, m, n))
        });
        return match taken.await {
            Ok(_) => raw_answer(got),
            Err(e) => response::v1(Err(e)),
        };
    }
    // Each delivery is written straight into the answer, as SSE does: no `Delivered` (and
    // its strings) per message.
    let mut out = Vec::with_capacity(64 + poll.max.min(64) * 160);
    out.extend_from_slice(b"{\"messages\":[");
    let taken = take(state, &poll, who, |ch, consumer, m, n| {
        if out.len() > MESSAGES_OPEN.len() {
            out.push(b',');
        }
        write_delivery(state, ch, consumer, m, n, &mut out);
    });
    match taken.await {
        Ok(_) => {
            out.extend_from_slice(b"]}");
            response::v1(Ok(Reply::Json(nsq_common::json::go_html_escape(out))))
        }
        Err(e) => response::v1(Err(e)),
    }
}

/// How a long poll's answer starts.
const MESSAGES_OPEN: &[u8] = b"{\"messages\":[";

/// `{"messages": [...]}` as `Reply::json` would write it (Go's HTML escaping included).
#[cfg(test)]
fn messages_json(got: &[Delivered]) -> Reply {
    let mut out = Vec::with_capacity(64 + got.len() * 160);
    out.extend_from_slice(MESSAGES_OPEN);
    for (i, d) in got.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        d.write_json(&mut out);
    }
    out.extend_from_slice(b"]}");
    Reply::Json(nsq_common::json::go_html_escape(out))
}

/// Join, take what is there (waiting up to `wait` for a first message), handing each
/// delivery to `emit`, and stop taking; returns how many were taken.
async fn take(
    state: &HttpState,
    poll: &Poll,
    who: HttpClient,
    mut emit: impl FnMut(&Channel, &Consumer, &Message, u64),
) -> Result<usize, ApiError> {
    if state.broker.is_exiting() || state.consumers.is_closed() {
        return Err(ApiError::exiting());
    }
    let (ch, consumer) = state
        .consumers
        .join(
            &state.broker,
            &poll.topic,
            &poll.channel,
            who,
            poll.max as i64,
            poll.timeout,
        )
        .await
        .map_err(|e| match e {
            e @ BrokerError::TooManyConsumers { .. } => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("TOO_MANY_CONSUMERS: {e}"),
            ),
            _ => ApiError::exiting(),
        })?;
    // Whatever happens to this request (the client goes away mid-wait), the consumer stops
    // taking and leaves once it holds nothing.
    let _done = Finish {
        state,
        consumer: Arc::clone(&consumer),
    };
    let deadline = tokio::time::Instant::now() + poll.wait;
    let mut got = 0;
    let mut rng = consumer.id() | 1;
    loop {
        got += ch.deliver_numbered(&consumer, poll.max - got, 0, &mut rng, |m, n| {
            emit(&ch, &consumer, m, n)
        });
        if got > 0 || consumer.is_kicked() || ch.is_deleted() {
            break;
        }
        tokio::select! {
            _ = consumer.notified() => {}
            _ = tokio::time::sleep_until(deadline) => break,
        }
    }
    Ok(got)
}

/// Ends a poll when dropped: see [`super::consumers::HttpConsumers::finished`].
struct Finish<'a> {
    state: &'a HttpState,
    consumer: Arc<Consumer>,
}

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        self.state
            .consumers
            .finished(&self.state.broker, &self.consumer);
    }
}

/// The raw answer: 200 with the body and `X-NSQ-*` headers, or 204.
fn raw_answer(m: Option<Delivered>) -> Resp {
    let Some(m) = m else {
        return response::empty(StatusCode::NO_CONTENT);
    };
    let mut r = hyper::Response::new(Body::new(m.body.clone()));
    let h = r.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    let mut put = |name: &'static str, v: String| {
        if let Ok(v) = HeaderValue::from_str(&v) {
            h.insert(HeaderName::from_static(name), v);
        }
    };
    put("x-nsq-message-id", m.id);
    put("x-nsq-attempts", m.attempts.to_string());
    put("x-nsq-receipt", m.receipt);
    put("x-nsq-timestamp", m.timestamp.to_string());
    if let Some(k) = m.ordering_key {
        put("x-nsq-ordering-key", k);
    }
    if let Some(e) = m.expires_at {
        put("x-nsq-expires-at", e.to_string());
    }
    if let Some(d) = m.dead_letter {
        if let Ok(json) = serde_json::to_string(&d) {
            put("x-nsq-dead-letter", json);
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(body: &[u8]) -> Delivered {
        Delivered {
            id: "0a1b2c3d4e5f6789".into(),
            receipt: "AQAAAAAAAAADAAAAAAAAEjQ-_x".into(),
            attempts: 3,
            timestamp: 1_700_000_000_123_456_789,
            body: Bytes::copy_from_slice(body),
            ordering_key: None,
            expires_at: None,
            dead_letter: None,
        }
    }

    /// The hand-written JSON is serde's, byte for byte, with and without the optional fields,
    /// for bodies of every length modulo 3 and keys that need escaping.
    #[test]
    fn write_json_is_what_serde_writes() {
        let mut cases = Vec::new();
        for n in [0usize, 1, 2, 3, 4, 5, 200, 1000] {
            let body: Vec<u8> = (0..n).map(|i| (i * 37 % 256) as u8).collect();
            cases.push(sample(&body));
        }
        let mut full = sample(b"<hello & \"world\">");
        full.ordering_key = Some("k\"ey</script>&\u{e9}\n".into());
        full.expires_at = Some(-5);
        full.dead_letter = Some(DeadLetterInfo {
            reason: nsqr_broker::DeadLetterReason::DeliveryLimit,
            topic: "t<1>".into(),
            channel: "c&".into(),
            id: nsqr_broker::MessageId(0xabc),
            attempts: 7,
            timestamp: 1,
            at: 2,
        });
        cases.push(full);
        for d in &cases {
            let mut ours = Vec::new();
            d.write_json(&mut ours);
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&serde_json::to_vec(d).unwrap())
            );
        }
        #[derive(Serialize)]
        struct Messages<'a> {
            messages: &'a [Delivered],
        }
        for got in [&cases[..0], &cases[..1], &cases[..]] {
            assert_eq!(
                messages_json(got),
                Reply::json(&Messages { messages: got }).unwrap()
            );
        }
    }

    /// What SSE writes per message is what a long poll's `Delivered` writes, receipt
    /// included, for plain messages and ones with an expiry and an ordering key.
    #[tokio::test]
    async fn write_delivery_is_delivered_json() {
        use nsqr_broker::{Broker, BrokerConfig, PutOptions};
        let broker = Arc::new(Broker::start(BrokerConfig::default()).await.unwrap());
        let state = HttpState {
            broker: Arc::clone(&broker),
            clients: Arc::default(),
            settings: super::super::tests::test_settings(),
            config: Arc::new(super::super::tests::MemConfig::new()),
            consumers: Arc::default(),
            cluster: None,
        };
        let who = HttpClient {
            remote_address: "127.0.0.1:1".into(),
            user_agent: "test".into(),
        };
        let (ch, consumer) = state
            .consumers
            .join(&broker, "sse#ephemeral", "c", who, 100, None)
            .await
            .unwrap();
        let p = broker.publisher("sse#ephemeral").unwrap();
        for n in [1usize, 2, 3, 200] {
            p.publish(vec![b'x'; n]).unwrap();
        }
        let keyed = PutOptions::default()
            .ttl(Duration::from_secs(60))
            .ordering_key("k\"<&>\u{e9}");
        p.publish_with(&b"keyed"[..], &keyed).unwrap();
        let mut rng = 1;
        let mut seen = 0;
        ch.deliver_numbered(&consumer, 100, 0, &mut rng, |m, n| {
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            write_delivery(&state, &ch, &consumer, m, n, &mut ours);
            Delivered::of(&state, &ch, &consumer, m, n).write_json(&mut theirs);
            assert_eq!(
                String::from_utf8_lossy(&ours),
                String::from_utf8_lossy(&theirs)
            );
            seen += 1;
        });
        assert_eq!(seen, 5);
    }

    #[test]
    fn integers_as_display_writes_them() {
        for n in [0i64, 1, 9, 10, 99, 12345, i64::MAX, i64::MIN, -1, -10] {
            let mut out = Vec::new();
            push_int(&mut out, n);
            assert_eq!(String::from_utf8_lossy(&out), n.to_string());
        }
        let mut out = Vec::new();
        push_int(&mut out, u64::MAX);
        assert_eq!(String::from_utf8_lossy(&out), u64::MAX.to_string());
    }

    #[test]
    fn durations() {
        assert_eq!(duration_arg("1500"), Some(Duration::from_millis(1500)));
        assert_eq!(duration_arg("2s"), Some(Duration::from_secs(2)));
        assert_eq!(duration_arg("0"), Some(Duration::ZERO));
        for v in ["", "-1s", "1.5", "soon", "99999999999999999999999"] {
            assert_eq!(duration_arg(v), None, "{v:?}");
        }
    }
}
