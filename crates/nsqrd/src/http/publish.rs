//! `/pub` and `/mpub`: HTTP publishing with nsqd's check order, because clients (and tests)
//! see which error wins when several apply.
//! - `/pub`: Content-Length vs max-msg-size -> read body (max-msg-size + 1) -> empty -> topic
//!   (created here) -> defer.
//! - `/mpub`: Content-Length vs max-body-size -> topic (created here) -> body, either text
//!   (one message per `\n`-terminated line) or binary (the TCP MPUB body layout).
//!
//! nsqr adds, after nsqd's checks: `ttl` (a Go duration or integer milliseconds: the message
//! is never delivered after it) and `ordering_key` (order per key on ordered channels), on
//! both routes (`docs/http-queues.md`).

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::Request;
use nsq_common::http::query::Query;
use nsq_common::http::response::{ApiError, Reply};
use nsq_wire::bodies::TooLarge;
use nsq_wire::{Bodies, Code, Limits};
use nsqr_broker::{BrokerError, DiskError, Durability, PutOptions, Topic};

use super::body::{content_length, read_body};
use super::query::{duration_rule, invalid_arg, nsq_bool};
use super::{HttpState, RequestCtx};

/// `POST /pub?topic=<t>[&defer=<ms>]`.
pub async fn publish(
    state: &HttpState,
    req: Request<Incoming>,
    cx: RequestCtx,
) -> Result<Reply, ApiError> {
    let max = state.settings.max_msg_size_usize();
    if content_length(req.body()).is_some_and(|n| n > max as u64) {
        return Err(ApiError::too_large("MSG_TOO_BIG"));
    }
    let (parts, body) = req.into_parts();
    let read_max = max.saturating_add(1);
    let body = read_body(body, cx.deadline, read_max).await?;
    let raw_query = parts.uri.query();
    if body.len() == read_max {
        return Err(ApiError::too_large("MSG_TOO_BIG"));
    }
    if body.is_empty() {
        return Err(ApiError::bad_request("MSG_EMPTY"));
    }
    let (query, topic) = topic_from_query(state, raw_query)?;
    let defer = match query.get("defer") {
        None => Duration::ZERO,
        Some(v) => parse_defer(v, state.settings.max_req_timeout)
            .ok_or(ApiError::bad_request("INVALID_DEFER"))?,
    };
    let opts = queue_options(&query)?.defer(defer);
    let strict = state.broker.config().durability == Durability::Strict;
    if strict && opts.is_plain() && super::pub_batch::available() {
        if state.broker.is_exiting() {
            return Err(ApiError::exiting());
        }
        let bodies = Bodies::one(body).map_err(|_| ApiError::too_large("BODY_TOO_BIG"))?;
        super::pub_batch::put(topic, bodies).await?;
    } else {
        put(state, &topic, Bodies::one(body), &opts).await?;
    }
    Ok(Reply::ok())
}

/// `POST /mpub?topic=<t>[&binary=<bool>]`.
pub async fn mpub(
    state: &HttpState,
    req: Request<Incoming>,
    cx: RequestCtx,
) -> Result<Reply, ApiError> {
    let max_body = state.settings.max_body_size_usize();
    if content_length(req.body()).is_some_and(|n| n > max_body as u64) {
        return Err(ApiError::too_large("BODY_TOO_BIG"));
    }
    let (query, topic) = topic_from_query(state, req.uri().query())?;
    let opts = queue_options(&query)?;
    // Unknown values mean binary (nsqd logs them as deprecated).
    let binary = query
        .get("binary")
        .is_some_and(|v| nsq_bool(Some(v)).unwrap_or(true));
    let (body, ranges) = if binary {
        // nsqd reads only what the messages need; with a Content-Length that is at most
        // max-body-size, and a chunked body is cut there too.
        let body = read_body(req.into_body(), cx.deadline, max_body).await?;
        let ranges = split_binary(&body, &state.settings.wire_limits())?;
        (body, ranges)
    } else {
        let read_max = max_body.saturating_add(1);
        let body = read_body(req.into_body(), cx.deadline, read_max).await?;
        let ranges = split_text(&body, read_max, state.settings.max_msg_size_usize())?;
        (body, ranges)
    };
    if !ranges.is_empty() {
        put(state, &topic, Bodies::from_ranges(body, ranges), &opts).await?;
    }
    Ok(Reply::ok())
}

/// nsqd's `getTopicFromQuery`: parse the query, require a valid `topic`, get or create it.
pub fn topic_from_query(
    state: &HttpState,
    raw_query: Option<&str>,
) -> Result<(Query, Arc<Topic>), ApiError> {
    let query = Query::parse(raw_query).map_err(|_| ApiError::bad_request("INVALID_REQUEST"))?;
    let name = query
        .get("topic")
        .ok_or(ApiError::bad_request("MISSING_ARG_TOPIC"))?;
    if !nsq_wire::names::is_valid_name(name.as_bytes()) {
        return Err(ApiError::bad_request("INVALID_TOPIC"));
    }
    let topic = state
        .broker
        .get_or_create_topic(name)
        .map_err(|_| ApiError::exiting())?;
    Ok((query, topic))
}

/// Publish; in strict mode answer only once the messages are fsynced. A disk failure
/// (`--max-disk-bytes`, a failed write) is a 500 naming the queue and the cause; anything else
/// is nsqd's 503 `EXITING`.
async fn put(
    state: &HttpState,
    topic: &Topic,
    bodies: Result<Bodies, TooLarge>,
    opts: &PutOptions,
) -> Result<(), ApiError> {
    if state.broker.is_exiting() {
        return Err(ApiError::exiting());
    }
    // Only a body over 4 GiB (with --max-body-size raised that far) does not fit.
    let bodies = bodies.map_err(|_| ApiError::too_large("BODY_TOO_BIG"))?;
    let ticket = topic
        .put_with(std::slice::from_ref(&bodies), opts)
        .map_err(put_error)?;
    if ticket.is_done() {
        return Ok(());
    }
    // The disk writer completes a pass's publishes together: one wake-up of this thread.
    super::wake_relay::relayed(ticket.wait())
        .await
        .map_err(wait_error)
}

/// A publish the broker refused: a disk failure is a 500 naming the queue and the cause,
/// anything else nsqd's 503 `EXITING`.
pub(super) fn put_error(e: BrokerError) -> ApiError {
    match e {
        BrokerError::Disk(d) => disk_error(&d),
        e @ BrokerError::NotLeader { .. } => ApiError::new(
            hyper::StatusCode::SERVICE_UNAVAILABLE,
            format!("NOT_LEADER: {e}"),
        ),
        e @ BrokerError::NotReplicable { .. } => {
            ApiError::new(hyper::StatusCode::BAD_REQUEST, format!("PUB_FAILED: {e}"))
        }
        _ => ApiError::exiting(),
    }
}

/// A publish whose write (or fsync) failed after it was queued.
pub(super) fn wait_error(e: DiskError) -> ApiError {
    match e {
        DiskError::Exiting => ApiError::exiting(),
        e @ DiskError::NotLeader(_) => ApiError::new(
            hyper::StatusCode::SERVICE_UNAVAILABLE,
            format!("NOT_LEADER: {e}"),
        ),
        d => disk_error(&d),
    }
}

fn disk_error(e: &DiskError) -> ApiError {
    ApiError::new(
        hyper::StatusCode::INTERNAL_SERVER_ERROR,
        format!("PUB_FAILED: {e}"),
    )
}

/// nsqr's publish options: `ttl` and `ordering_key` (absent: a plain nsqd publish).
fn queue_options(q: &Query) -> Result<PutOptions, ApiError> {
    let mut opts = PutOptions::default();
    if let Some(v) = q.get("ttl") {
        opts = opts.ttl(parse_ttl(v).ok_or_else(|| {
            let max = nsqr_broker::queue_settings::MAX_MESSAGE_TTL;
            invalid_arg("INVALID_TTL", duration_rule("ttl", "above 0", max))
        })?);
    }
    if let Some(k) = q.get("ordering_key") {
        if k.is_empty() || k.len() > nsqr_broker::attrs::MAX_ORDERING_KEY_LEN {
            return Err(invalid_arg(
                "INVALID_ORDERING_KEY",
                format!(
                    "ordering_key must be 1 to {} bytes",
                    nsqr_broker::attrs::MAX_ORDERING_KEY_LEN
                ),
            ));
        }
        opts = opts.ordering_key(k);
    }
    Ok(opts)
}

/// A time to live: a Go duration (`90s`, `1h`) or integer milliseconds, more than zero and at
/// most a year.
pub(crate) fn parse_ttl(v: &str) -> Option<Duration> {
    let d = if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        Duration::from_millis(v.parse().ok()?)
    } else {
        nsq_common::duration::parse(v).ok()?
    };
    (!d.is_zero() && d <= nsqr_broker::queue_settings::MAX_MESSAGE_TTL).then_some(d)
}

/// `defer` in milliseconds: a Go `ParseInt`, then `0 <= d <= max-req-timeout`. The
/// milliseconds-to-nanoseconds product wraps as Go's `time.Duration` arithmetic does.
fn parse_defer(v: &str, max_req_timeout: Duration) -> Option<Duration> {
    let ms: i64 = v.parse().ok()?;
    let ns = ms.wrapping_mul(1_000_000);
    let max = i64::try_from(max_req_timeout.as_nanos()).unwrap_or(i64::MAX);
    if ns < 0 || ns > max {
        return None;
    }
    Some(Duration::from_nanos(ns as u64))
}

/// Text mode: one message per line; only `\n` is stripped (a `\r` stays), empty lines are
/// skipped, a line over max-msg-size is `MSG_TOO_BIG`, and reaching `read_max` bytes (the body
/// was longer than max-body-size) is `BODY_TOO_BIG`, checked line by line in nsqd's order.
fn split_text(body: &[u8], read_max: usize, max_msg: usize) -> Result<Vec<Range<usize>>, ApiError> {
    let mut out = Vec::new();
    let mut total = 0usize;
    let mut pos = 0usize;
    loop {
        let (block, at_eof) = match body[pos..].iter().position(|&c| c == b'\n') {
            Some(i) => (pos..pos + i + 1, false),
            None => (pos..body.len(), true),
        };
        pos = block.end;
        total += block.len();
        if total == read_max {
            return Err(ApiError::too_large("BODY_TOO_BIG"));
        }
        let line = match body[block.clone()].last() {
            Some(b'\n') => block.start..block.end - 1,
            _ => block,
        };
        if !line.is_empty() {
            if line.len() > max_msg {
                return Err(ApiError::too_large("MSG_TOO_BIG"));
            }
            out.push(line);
        }
        if at_eof {
            return Ok(out);
        }
    }
}

/// Binary mode: `[i32 count]([i32 size][data])*` with TCP MPUB's checks; errors are 413 with the
/// TCP code minus `E_` (`BAD_BODY`, `BAD_MESSAGE`). Bytes after the last declared message are
/// refused too (`BAD_BODY: <n> bytes after the <count> declared message(s)`), as TCP MPUB
/// refuses them: they may be messages a wrong count left out (nsqd ignores them and answers 200).
fn split_binary(body: &[u8], limits: &Limits) -> Result<Vec<Range<usize>>, ApiError> {
    let mut out = Vec::new();
    let mut end = 0;
    let res = nsq_wire::command::split_mpub(body, limits, |a, b| {
        out.push(a..b);
        end = b;
    });
    match res {
        Ok(()) => Ok(out),
        Err(e) if e.code == Code::BadBody && declared_count(body) == Some(out.len()) => {
            Err(ApiError::new(
                hyper::StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "BAD_BODY: {} bytes after the {} declared message(s)",
                    body.len() - end,
                    out.len()
                ),
            ))
        }
        Err(e) => Err(ApiError::too_large(match e.code {
            Code::BadBody => "BAD_BODY",
            _ => "BAD_MESSAGE",
        })),
    }
}

/// The message count a binary body declares, if positive.
fn declared_count(body: &[u8]) -> Option<usize> {
    let head: [u8; 4] = body.get(..4)?.try_into().ok()?;
    usize::try_from(i32::from_be_bytes(head))
        .ok()
        .filter(|n| *n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn texts<'a>(body: &'a [u8], v: &[Range<usize>]) -> Vec<&'a [u8]> {
        v.iter().map(|r| &body[r.clone()]).collect()
    }

    fn err(r: Result<Vec<Range<usize>>, ApiError>) -> (u16, String) {
        let e = r.unwrap_err();
        (e.status.as_u16(), e.message.into_owned())
    }

    #[test]
    fn ttl_values() {
        assert_eq!(parse_ttl("1500"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_ttl("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_ttl("8760h"), Some(Duration::from_secs(8760 * 3600)));
        for v in [
            "",
            "0",
            "0s",
            "-1s",
            "8761h",
            "soon",
            "1.5",
            "99999999999999999999",
        ] {
            assert_eq!(parse_ttl(v), None, "{v:?}");
        }
    }

    #[test]
    fn defer_values() {
        let max = Duration::from_secs(3600);
        assert_eq!(parse_defer("0", max), Some(Duration::ZERO));
        assert_eq!(parse_defer("+5", max), Some(Duration::from_millis(5)));
        assert_eq!(parse_defer("3600000", max), Some(max));
        for v in [
            "-1",
            "abc",
            "3600001",
            "",
            "1.5",
            " 5",
            "1e3",
            "99999999999999999999",
            "-",
        ] {
            assert_eq!(parse_defer(v, max), None, "{v:?}");
        }
        // Wraps like Go: 2^64 / 1e6 rounds to a product that overflows back to a small value.
        assert_eq!(parse_defer("18446744073709", max), None);
    }

    #[test]
    fn text_lines() {
        let b = Bytes::from_static(b"one\ntwo\n\n\nthree\r\nfour\n");
        let v = split_text(&b, 1001, 100).unwrap();
        assert_eq!(texts(&b, &v), [&b"one"[..], b"two", b"three\r", b"four"]);
        let v = split_text(b"last", 1001, 100).unwrap();
        assert_eq!(texts(b"last", &v), [&b"last"[..]]);
        assert!(split_text(&Bytes::new(), 1001, 100).unwrap().is_empty());
        assert!(split_text(&Bytes::from_static(b"\n\n"), 1001, 100)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn text_limits_in_order() {
        // max-msg-size 10, max-body-size 30 (read_max 31).
        let too_big = Bytes::from_static(b"ok\n12345678901\n");
        assert_eq!(
            err(split_text(&too_big, 31, 10)),
            (413, "MSG_TOO_BIG".into())
        );
        let cr = Bytes::from_static(b"1234567890\r\n");
        assert_eq!(err(split_text(&cr, 31, 10)), (413, "MSG_TOO_BIG".into()));
        let exact = Bytes::from_static(b"1234567890\n1234567890\n12345678");
        assert_eq!(split_text(&exact, 31, 10).unwrap().len(), 3);
        // A truncated (over-long) body: BODY_TOO_BIG when the final block completes it...
        let over = Bytes::from_static(b"123\n123\n123\n123\n123\n123\n123\n1");
        assert_eq!(over.len(), 29);
        assert_eq!(err(split_text(&over, 29, 10)), (413, "BODY_TOO_BIG".into()));
        // ...unless an earlier line was already too big.
        let over = Bytes::from_static(b"12345678901\n1234567890");
        assert_eq!(err(split_text(&over, 22, 10)), (413, "MSG_TOO_BIG".into()));
    }

    fn mpub_body(msgs: &[&[u8]]) -> Bytes {
        let mut v = (msgs.len() as i32).to_be_bytes().to_vec();
        for m in msgs {
            v.extend_from_slice(&(m.len() as i32).to_be_bytes());
            v.extend_from_slice(m);
        }
        Bytes::from(v)
    }

    #[test]
    fn binary_bodies() {
        let limits = Limits {
            max_msg_size: 10,
            max_body_size: 30,
            ..Limits::default()
        };
        let b = mpub_body(&[b"first", b"a\nb"]);
        assert_eq!(
            texts(&b, &split_binary(&b, &limits).unwrap()),
            [&b"first"[..], b"a\nb"]
        );
        let mut trailing = b.to_vec();
        trailing.extend_from_slice(b"junk\0\0\0\x09");
        assert_eq!(
            err(split_binary(&Bytes::from(trailing), &limits)),
            (
                413,
                "BAD_BODY: 8 bytes after the 2 declared message(s)".into()
            )
        );
        // A count lower than the messages sent.
        let mut under = b.to_vec();
        under[3] = 1;
        assert_eq!(
            err(split_binary(&Bytes::from(under), &limits)),
            (
                413,
                "BAD_BODY: 7 bytes after the 1 declared message(s)".into()
            )
        );
        for bad in [
            &b""[..],
            b"\0\0",
            &0i32.to_be_bytes(),
            &(-1i32).to_be_bytes(),
            &6i32.to_be_bytes(),
        ] {
            let e = err(split_binary(&Bytes::copy_from_slice(bad), &limits));
            assert_eq!(e, (413, "BAD_BODY".into()), "{bad:?}");
        }
        for bad in [
            Bytes::copy_from_slice(&1i32.to_be_bytes()),
            mpub_body(&[b""]),
            mpub_body(&[b"12345678901"]),
            Bytes::from_static(b"\0\0\0\x01\0\0\0\x05xxx"),
            Bytes::from_static(b"\0\0\0\x02\0\0\0\x02xx"),
        ] {
            assert_eq!(
                err(split_binary(&bad, &limits)),
                (413, "BAD_MESSAGE".into()),
                "{bad:?}"
            );
        }
    }
}
