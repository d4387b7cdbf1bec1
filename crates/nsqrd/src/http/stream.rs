//! `GET /channel/stream` (nsqr only): consume over HTTP as server-sent events.
//!
//! `?topic=T&channel=C[&max_in_flight=N][&timeout=D][&heartbeat=D]` answers 200
//! `text/event-stream` and keeps the response open: first a `: connected` comment, then one
//! `event: message` per delivery (`id:` its delivery number, `data:` the same JSON as a
//! `/channel/receive` message), at most `max_in_flight` (default 1) unanswered at a time, and
//! a `: heartbeat` comment every `heartbeat` (default 10 s) while nothing else is sent.
//! Messages are answered with their receipts through `/message/*`. When the client goes
//! away its unanswered messages stay in flight until their timeout, as a poll's do.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use nsq_common::http::query::Query;
use nsq_common::http::response::{self, ApiError};
use nsqr_broker::{Channel, Consumer};
use tokio::sync::mpsc;

use super::consume::{duration_arg, push_int, write_delivery};
use super::consumers::HttpClient;
use super::query::{duration_rule, invalid_arg};
use super::queue_settings::name_arg;
use super::RequestCtx;
use super::{HttpBody, HttpState};

/// The most messages a stream may hold unanswered (nsqd's default `--max-rdy-count`).
pub const MAX_IN_FLIGHT: i64 = 2500;
/// Heartbeat bounds and default.
const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(10);
const MIN_HEARTBEAT: Duration = Duration::from_millis(100);
const MAX_HEARTBEAT: Duration = Duration::from_secs(60);
/// Events buffered for a slow reader before the stream waits for it.
const BUFFERED_CHUNKS: usize = 8;
/// A write is cut into chunks of about this size.
const CHUNK: usize = 64 * 1024;
/// An event's bytes besides its body's base64, about (a receipt with short names, the id,
/// the other fields).
const EVENT_EXTRA: usize = 256;
/// The most a batch reserves up front (beyond it the buffer grows as it must).
const MAX_RESERVE: usize = 1 << 20;

struct Params {
    topic: String,
    channel: String,
    max_in_flight: i64,
    timeout: Option<Duration>,
    heartbeat: Duration,
}

fn parse(state: &HttpState, q: &Query) -> Result<Params, ApiError> {
    let topic = name_arg(q, "topic", "MISSING_ARG_TOPIC", "INVALID_TOPIC")?.to_string();
    let channel = name_arg(q, "channel", "MISSING_ARG_CHANNEL", "INVALID_CHANNEL")?.to_string();
    let max_in_flight = match q.get("max_in_flight") {
        None => 1,
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=MAX_IN_FLIGHT).contains(n))
            .ok_or_else(|| {
                invalid_arg(
                    "INVALID_MAX_IN_FLIGHT",
                    format!("max_in_flight must be an integer from 1 to {MAX_IN_FLIGHT}"),
                )
            })?,
    };
    let timeout = super::consume::timeout_arg(state, q)?;
    let heartbeat = match q.get("heartbeat") {
        None => DEFAULT_HEARTBEAT,
        Some(v) => duration_arg(v)
            .filter(|d| (MIN_HEARTBEAT..=MAX_HEARTBEAT).contains(d))
            .ok_or_else(|| {
                let min = nsq_common::duration::format(MIN_HEARTBEAT);
                invalid_arg(
                    "INVALID_HEARTBEAT",
                    duration_rule("heartbeat", &min, MAX_HEARTBEAT),
                )
            })?,
    };
    Ok(Params {
        topic,
        channel,
        max_in_flight,
        timeout,
        heartbeat,
    })
}

/// `GET /channel/stream`.
pub async fn open(
    state: Arc<HttpState>,
    req: Request<Incoming>,
    cx: RequestCtx,
) -> Response<HttpBody> {
    let plain = |e: ApiError| response::v1(Err(e)).map(HttpBody::Left);
    let p = match Query::parse(req.uri().query())
        .map_err(|_| ApiError::bad_request("INVALID_REQUEST"))
        .and_then(|q| parse(&state, &q))
    {
        Ok(p) => p,
        Err(e) => return plain(e),
    };
    if state.broker.is_exiting() || state.consumers.is_closed() {
        return plain(ApiError::exiting());
    }
    let who = HttpClient::of(&req, cx);
    let joined = state
        .consumers
        .join(
            &state.broker,
            &p.topic,
            &p.channel,
            who,
            p.max_in_flight,
            p.timeout,
        )
        .await;
    let (ch, consumer) = match joined {
        Ok(j) => j,
        Err(e) => {
            return plain(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("EXITING: {e}"),
            ))
        }
    };
    let (tx, rx) = mpsc::channel(BUFFERED_CHUNKS);
    tokio::spawn(drive(Arc::clone(&state), ch, consumer, tx, p.heartbeat));
    let mut r = Response::new(HttpBody::Right(EventBody { rx }));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// Feed the stream until the client goes away, the channel is deleted or the server stops.
async fn drive(
    state: Arc<HttpState>,
    ch: Arc<Channel>,
    consumer: Arc<Consumer>,
    tx: mpsc::Sender<Bytes>,
    heartbeat: Duration,
) {
    let _done = Finish {
        state: Arc::clone(&state),
        consumer: Arc::clone(&consumer),
    };
    let hello = format!(": connected to {}/{}\n\n", ch.topic_name(), ch.name());
    if tx.send(Bytes::from(hello)).await.is_err() {
        return;
    }
    let mut rng = consumer.id() | 1;
    loop {
        if consumer.is_kicked() || ch.is_deleted() {
            return;
        }
        let mut buf = Vec::new();
        let free = usize::try_from(consumer.capacity()).unwrap_or(0);
        if free > 0 {
            ch.deliver_numbered(&consumer, free, 0, &mut rng, |m, n| {
                if buf.is_empty() {
                    // Most of a batch's events are alike: room for all of them at once.
                    let each = EVENT_EXTRA + m.body().len() * 4 / 3;
                    buf.reserve(free.saturating_mul(each).min(MAX_RESERVE));
                }
                event(&mut buf, n, |out| {
                    write_delivery(&state, &ch, &consumer, m, n, out)
                })
            });
        }
        if !buf.is_empty() {
            let mut all = Bytes::from(buf);
            while !all.is_empty() {
                let part = all.split_to(all.len().min(CHUNK));
                if tx.send(part).await.is_err() {
                    return;
                }
            }
            continue;
        }
        tokio::select! {
            _ = consumer.notified() => {}
            _ = tokio::time::sleep(heartbeat) => {
                if tx.send(Bytes::from_static(b": heartbeat\n\n")).await.is_err() {
                    return;
                }
            }
            _ = tx.closed() => return,
        }
    }
}

/// One SSE event, its JSON written in place by `json`.
fn event(buf: &mut Vec<u8>, delivery: u64, json: impl FnOnce(&mut Vec<u8>)) {
    buf.extend_from_slice(b"id: ");
    push_int(buf, delivery);
    buf.extend_from_slice(b"\nevent: message\ndata: ");
    // Compact JSON has no newline.
    json(buf);
    buf.extend_from_slice(b"\n\n");
}

/// Ends the stream's consumer when the driver stops (see `consumers.rs`).
struct Finish {
    state: Arc<HttpState>,
    consumer: Arc<Consumer>,
}

impl Drop for Finish {
    fn drop(&mut self) {
        self.state
            .consumers
            .finished(&self.state.broker, &self.consumer);
    }
}

/// The body of a stream: chunks from its driver, until the driver stops.
pub struct EventBody {
    rx: mpsc::Receiver<Bytes>,
}

impl hyper::body::Body for EventBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx
            .poll_recv(cx)
            .map(|chunk| chunk.map(|b| Ok(Frame::data(b))))
    }
}
