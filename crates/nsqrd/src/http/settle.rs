//! `POST /message/fin|req|touch|term` (nsqr only): answer HTTP deliveries by receipt.
//!
//! Receipts come as `receipt=` query arguments (repeat it for several) and/or one per line in
//! the body (for batches too long for a URL). `/message/req` takes `delay` (milliseconds or a
//! Go duration, at most `--max-req-timeout`) and `count_attempt=false` (the requeue does not
//! count towards `max_attempts`); `/message/term` sends the message to the dead letters
//! (reason `rejected`). Each receipt is applied on its own: the answer is 200
//! `{"settled": n}` when all were, else 404 (or 400 if any receipt was not one of this
//! server's) with `{"message", "settled", "failed": [{"receipt", "error"}]}`, the first
//! failure's error as the message. A receipt of an earlier delivery of a message that was
//! delivered again since is `STALE_RECEIPT`.

use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::CONTENT_TYPE;
use hyper::{Request, StatusCode};
use nsq_common::http::query::Query;
use nsq_common::http::response::{self, ApiError, Body, Reply, Resp};
use nsqr_broker::{BrokerError, Settle};
use serde::Serialize;

use super::body::{content_length, read_body};
use super::consume::duration_arg;
use super::query::{duration_rule, invalid_arg, nsq_bool};
use super::receipt::{RawReceipt, ReceiptError};
use super::HttpState;
use super::RequestCtx;

/// The most receipts one request may carry.
pub const MAX_RECEIPTS: usize = 10_000;
/// The largest body of receipts (10,000 receipts of up to ~230 characters).
const MAX_BODY: usize = 4 * 1024 * 1024;

/// Which answer a route gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Fin,
    Req,
    Touch,
    Term,
}

/// `POST /message/<answer>`.
pub async fn settle(
    state: &HttpState,
    req: Request<Incoming>,
    cx: RequestCtx,
    answer: Answer,
) -> Resp {
    match run(state, req, cx, answer).await {
        Ok(r) => r,
        Err(e) => response::v1(Err(e)),
    }
}

async fn run(
    state: &HttpState,
    req: Request<Incoming>,
    cx: RequestCtx,
    answer: Answer,
) -> Result<Resp, ApiError> {
    let q =
        Query::parse(req.uri().query()).map_err(|_| ApiError::bad_request("INVALID_REQUEST"))?;
    let action = action(state, &q, answer)?;
    let mut receipts: Vec<&str> = q.get_all("receipt").collect();
    if content_length(req.body()).is_some_and(|n| n > MAX_BODY as u64) {
        return Err(ApiError::too_large("BODY_TOO_BIG"));
    }
    let body = read_body(req.into_body(), cx.deadline, MAX_BODY + 1).await?;
    if body.len() > MAX_BODY {
        return Err(ApiError::too_large("BODY_TOO_BIG"));
    }
    // Receipts are ASCII: only a body that is not UTF-8 is read lossily (Go's reading).
    let text = match std::str::from_utf8(&body) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(_) => String::from_utf8_lossy(&body),
    };
    receipts.extend(lines(&text).map(str::trim).filter(|l| !l.is_empty()));
    if receipts.is_empty() {
        return Err(ApiError::bad_request("MISSING_ARG_RECEIPT"));
    }
    if receipts.len() > MAX_RECEIPTS {
        return Err(ApiError::too_large("TOO_MANY_RECEIPTS"));
    }
    Ok(apply(state, &receipts, action))
}

/// The lines of `text` (`\n`-separated; a `\r` before it is trimmed with the rest), found by
/// a plain byte scan: a receipt line is short, so a searcher's setup per line costs more than
/// the line.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest.bytes().position(|b| b == b'\n').unwrap_or(rest.len());
        // `\n` is ASCII, so both cuts fall on character boundaries.
        let line = rest.get(..end).unwrap_or_default();
        rest = rest.get(end + 1..).unwrap_or_default();
        Some(line)
    })
}

/// The engine's action for a route and its arguments.
fn action(state: &HttpState, q: &Query, answer: Answer) -> Result<Settle, ApiError> {
    Ok(match answer {
        Answer::Fin => Settle::Fin,
        Answer::Touch => Settle::Touch,
        Answer::Term => Settle::Term,
        Answer::Req => {
            let delay = match q.get("delay") {
                None => Duration::ZERO,
                Some(v) => duration_arg(v)
                    .filter(|d| *d <= state.settings.max_req_timeout)
                    .ok_or_else(|| {
                        let max = state.settings.max_req_timeout;
                        invalid_arg(
                            "INVALID_DELAY",
                            duration_rule("delay", "0", max) + " (--max-req-timeout)",
                        )
                    })?,
            };
            let count_attempt = match q.get("count_attempt") {
                None => true,
                Some(v) => nsq_bool(Some(v)).ok_or_else(|| {
                    invalid_arg(
                        "INVALID_COUNT_ATTEMPT",
                        "count_attempt must be true, false, 1 or 0",
                    )
                })?,
            };
            Settle::Req {
                delay,
                count_attempt,
            }
        }
    })
}

#[derive(Serialize)]
struct Failed {
    receipt: String,
    error: &'static str,
}

#[derive(Serialize)]
struct Outcome {
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    settled: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    failed: Vec<Failed>,
}

/// Why one receipt was not applied, as the answer names it.
fn error_name(e: &BrokerError) -> &'static str {
    match e {
        BrokerError::Redelivered => "STALE_RECEIPT",
        _ => "NOT_IN_FLIGHT",
    }
}

fn detail(error: &str) -> &'static str {
    match error {
        "STALE_RECEIPT" => "STALE_RECEIPT: the message was delivered again since this receipt was issued (its timeout passed or it was requeued)",
        "NOT_IN_FLIGHT" => "NOT_IN_FLIGHT: the delivery is no longer in flight (answered already, timed out, or its channel is gone)",
        _ => "INVALID_RECEIPT: not a receipt issued by this server (mistyped, or from before a restart)",
    }
}

/// Apply `action` to every receipt, a channel at a time (channels in the order of their
/// (topic, channel) names, each channel's receipts in the order given).
fn apply(state: &HttpState, receipts: &[&str], action: Settle) -> Resp {
    let mut failed: Vec<Failed> = Vec::new();
    // Every receipt decoded into one buffer; grouped by sorting, not by a map of names.
    let mut buf = Vec::with_capacity(receipts.len() * 64);
    let mut read: Vec<(usize, RawReceipt)> = Vec::with_capacity(receipts.len());
    for (i, text) in receipts.iter().enumerate() {
        match state.consumers.receipts.read_into(text, &mut buf) {
            Ok(r) => read.push((i, r)),
            Err(ReceiptError::Malformed | ReceiptError::Forged) => failed.push(Failed {
                receipt: text.to_string(),
                error: "INVALID_RECEIPT",
            }),
        }
    }
    let names = |r: &RawReceipt| (r.topic(&buf), r.channel(&buf));
    // Stable: a channel's receipts stay in their order.
    read.sort_by(|a, b| names(&a.1).cmp(&names(&b.1)));
    let mut settled = 0;
    let mut consumers = Vec::new();
    for rs in read.chunk_by(|a, b| names(&a.1) == names(&b.1)) {
        let (topic, channel) = names(&rs[0].1);
        let ch = std::str::from_utf8(topic)
            .ok()
            .zip(std::str::from_utf8(channel).ok())
            .and_then(|(t, c)| state.broker.topic(t).and_then(|t| t.channel(c)));
        let Some(ch) = ch else {
            failed.extend(rs.iter().map(|(i, _)| Failed {
                receipt: receipts[*i].to_string(),
                error: "NOT_IN_FLIGHT",
            }));
            continue;
        };
        let deliveries: Vec<(u64, u64)> = rs.iter().map(|(_, r)| (r.id, r.delivery)).collect();
        ch.settle(&deliveries, action, |k, r| match r {
            Ok(()) => settled += 1,
            Err(e) => failed.push(Failed {
                receipt: receipts[rs[k].0].to_string(),
                error: error_name(&e),
            }),
        });
        consumers.extend(rs.iter().map(|(_, r)| r.consumer));
    }
    consumers.sort_unstable();
    consumers.dedup();
    for c in consumers {
        state.consumers.answered(&state.broker, c);
    }
    if failed.is_empty() {
        return response::v1(Reply::json(&Outcome {
            message: None,
            settled,
            failed,
        }));
    }
    let invalid = failed.iter().any(|f| f.error == "INVALID_RECEIPT");
    let status = if invalid {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::NOT_FOUND
    };
    let outcome = Outcome {
        message: Some(detail(failed[0].error).to_string()),
        settled,
        failed,
    };
    let body = serde_json::to_vec(&outcome).unwrap_or_default();
    let mut r = hyper::Response::new(Body::new(Bytes::from(body)));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(response::JSON_CT),
    );
    h.insert(
        response::NSQ_CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(response::NSQ_V1),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::lines;

    #[test]
    fn lines_are_what_str_lines_gives_once_trimmed() {
        for text in [
            "",
            "a",
            "a\n",
            "a\nb",
            "a\r\nb\r\n",
            "\n\nx\n\n",
            "é\nü\r\n",
        ] {
            let ours: Vec<&str> = lines(text)
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            let std: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect();
            assert_eq!(ours, std, "{text:?}");
        }
    }
}
