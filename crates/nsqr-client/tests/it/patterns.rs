//! The three patterns over TCP (nsqrd, or `NSQD_BIN`) and in process: publish-subscribe
//! (every channel gets every message), work queue (the consumers of one channel share its
//! messages, each exactly once here), request-reply (replies matched to requests, errors and
//! timeouts, two responders sharing the requests).

use std::collections::BTreeSet;
use std::time::Duration;

use crate::common::{config, within, Daemon};
use bytes::Bytes;
use nsqr_broker::{Broker, BrokerConfig};
use nsqr_client::patterns::{Requester, Responder};
use nsqr_client::{Config, Consumer, Error, Producer, Reply};

async fn consumer(addr: &str, cfg: &Config, topic: &str, channel: &str) -> Consumer {
    let mut c = Consumer::new(topic, channel, cfg.clone()).unwrap();
    c.connect(addr).await.unwrap();
    c.change_max_in_flight(100);
    c
}

/// Bodies taken from `c` until `n` were seen (finishing each).
async fn take(c: &mut Consumer, n: usize) -> Vec<String> {
    let mut v = Vec::new();
    while v.len() < n {
        let m = within("messages", c.next()).await.unwrap();
        v.push(String::from_utf8(m.body().to_vec()).unwrap());
        m.finish().unwrap();
    }
    v
}

async fn pubsub_and_work_queue(addr: &str, cfg: Config) {
    let all: BTreeSet<String> = (0..100).map(|i| format!("m{i}")).collect();
    // Publish-subscribe: two channels, each gets everything.
    let mut a = consumer(addr, &cfg, "ps", "a").await;
    let mut b = consumer(addr, &cfg, "ps", "b#ephemeral").await;
    let p = Producer::connect(addr, cfg.clone()).await.unwrap();
    p.multi_publish("ps", all.iter().cloned()).await.unwrap();
    let got_a: BTreeSet<String> = take(&mut a, 100).await.into_iter().collect();
    let got_b: BTreeSet<String> = take(&mut b, 100).await.into_iter().collect();
    assert_eq!((&got_a, &got_b), (&all, &all));
    a.stop().await;
    b.stop().await;

    // Work queue: two workers on one channel; each message goes to one of them.
    let mut w1 = consumer(addr, &cfg, "wq", "workers").await;
    let mut w2 = consumer(addr, &cfg, "wq", "workers").await;
    w1.change_max_in_flight(5);
    w2.change_max_in_flight(5);
    for m in &all {
        p.publish("wq", m.clone()).await.unwrap();
    }
    let mut got = Vec::new();
    let (mut n1, mut n2) = (0, 0);
    while got.len() < 100 {
        tokio::select! {
            Some(m) = w1.next() => { n1 += 1; got.push(m.body().clone()); m.finish().unwrap(); }
            Some(m) = w2.next() => { n2 += 1; got.push(m.body().clone()); m.finish().unwrap(); }
            _ = tokio::time::sleep(Duration::from_secs(20)) => panic!("work queue stalled"),
        }
    }
    let distinct: BTreeSet<String> = got
        .iter()
        .map(|b| String::from_utf8(b.to_vec()).unwrap())
        .collect();
    assert_eq!(distinct, all, "every message once");
    assert!(n1 > 0 && n2 > 0, "both workers got work: {n1} / {n2}");
    w1.stop().await;
    w2.stop().await;
    p.stop().await;
}

async fn request_reply(addr: &str, cfg: Config) {
    let requester = Requester::connect(addr, cfg.clone()).await.unwrap();
    assert!(requester.reply_topic().ends_with("#ephemeral"));
    // Nobody serves yet: a timeout, not a hang.
    let e = requester
        .request("echo", b"anyone?", Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Timeout(_)), "{e}");

    let mut servers = Vec::new();
    for name in ["one", "two"] {
        let mut r = Responder::connect(addr, "echo", "servers", cfg.clone())
            .await
            .unwrap();
        let stop = r.stopper();
        let task = tokio::spawn(async move {
            r.serve(|p: Bytes| async move {
                if p.as_ref() == b"fail" {
                    Err(format!("{name} refuses"))
                } else {
                    let mut v = name.as_bytes().to_vec();
                    v.push(b':');
                    v.extend_from_slice(&p);
                    Ok(Bytes::from(v))
                }
            })
            .await
            .unwrap();
            r.close().await;
        });
        servers.push((stop, task));
    }
    // The stale request above may be served now; it is dropped, not delivered to another.
    let pending: Vec<_> = (0..50)
        .map(|i| {
            let body = format!("q{i}");
            requester.send_with("echo", body.len(), |b| b.copy_from_slice(body.as_bytes()))
        })
        .collect();
    let mut by = BTreeSet::new();
    for (i, p) in pending.into_iter().enumerate() {
        let reply = p.wait(Duration::from_secs(20)).await.unwrap();
        let text = String::from_utf8(reply.to_vec()).unwrap();
        let (server, echoed) = text.split_once(':').unwrap();
        assert_eq!(echoed, format!("q{i}"), "the reply to this request");
        by.insert(server.to_string());
    }
    assert!(!by.is_empty());
    let e = requester
        .request("echo", b"fail", Duration::from_secs(20))
        .await
        .unwrap_err();
    assert!(
        matches!(e, Error::Remote(ref t) if t.ends_with("refuses")),
        "{e}"
    );
    for (stop, task) in servers {
        stop.stop();
        within("responder stops", task).await.unwrap();
    }
    one_way(addr, &cfg, &requester).await;
    requester.close().await;
}

/// Requests that expect no reply: each arrives once and is finished without an answer.
async fn one_way(addr: &str, cfg: &Config, requester: &Requester) {
    let mut r = Responder::connect(addr, "oneway", "servers", cfg.clone())
        .await
        .unwrap();
    for i in 0..10u8 {
        requester
            .send_one_way_with("oneway", 1, |b| b[0] = i)
            .await
            .unwrap();
    }
    let mut got = Vec::new();
    while got.len() < 10 {
        let req = within("one-way requests", r.next()).await.unwrap();
        got.push(req.payload()[0]);
        req.finish().unwrap();
    }
    assert_eq!(got, (0..10).collect::<Vec<u8>>());
    // The same in batches: lent in place, finished together.
    for i in 10..40u8 {
        requester
            .send_one_way_with("oneway", 1, |b| b[0] = i)
            .await
            .unwrap();
    }
    let mut got = Vec::new();
    while got.len() < 30 {
        let batch = r.next_batch(|req| {
            assert_eq!(req.reply_to(), Some(requester.reply_topic()));
            got.push(req.payload()[0]);
            Reply::Finish
        });
        within("one-way requests in batches", batch).await.unwrap();
    }
    assert_eq!(got, (10..40).collect::<Vec<u8>>());
    r.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patterns_over_tcp() {
    let nsqd = Daemon::nsqd(&[]);
    pubsub_and_work_queue(&nsqd.url(), config()).await;
    request_reply(&nsqd.url(), config()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patterns_in_process() {
    let broker = Broker::start(BrokerConfig::default()).await.unwrap();
    pubsub_and_work_queue("inproc://", Config::inproc(broker.clone())).await;
    request_reply("inproc://", Config::inproc(broker.clone())).await;
    broker.shutdown().await.unwrap();
}

/// Many one-way requests of every size in flight at once, as the transport matrix sends them:
/// each arrives once, intact.
async fn one_way_in_flight(addr: &str, cfg: Config) {
    let requester = Requester::connect(addr, cfg.clone()).await.unwrap();
    let mut r = Responder::connect(addr, "burst", "servers", cfg.clone())
        .await
        .unwrap();
    for (round, size) in [64usize, 8 << 10, 64 << 10, 200 << 10].iter().enumerate() {
        let n = 40u32;
        let pending: Vec<_> = (0..n)
            .map(|i| {
                requester.send_one_way_with("burst", *size, |b| {
                    b.fill(round as u8);
                    b[..4].copy_from_slice(&i.to_be_bytes());
                })
            })
            .collect();
        for p in pending {
            within("one-way publishes answered", p).await.unwrap();
        }
        let mut seen = BTreeSet::new();
        while seen.len() < n as usize {
            let req = within("one-way requests", r.next()).await.unwrap();
            let p = req.payload();
            assert_eq!(p.len(), *size);
            assert!(p[4..].iter().all(|&x| x == round as u8));
            assert!(seen.insert(u32::from_be_bytes([p[0], p[1], p[2], p[3]])));
            req.finish().unwrap();
        }
    }
    r.close().await;
    requester.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_way_requests_in_flight_over_tcp_and_in_process() {
    let nsqd = Daemon::nsqd(&[]);
    for _ in 0..5 {
        one_way_in_flight(&nsqd.url(), config()).await;
    }
    let broker = Broker::start(BrokerConfig::default()).await.unwrap();
    one_way_in_flight("inproc://", Config::inproc(broker.clone())).await;
    broker.shutdown().await.unwrap();
}

/// One request at a time to a responder that answers at once: every reply reaches its
/// request, however soon it comes back (a request is waited for before it is sent).
async fn quick_replies(addr: &str, cfg: Config) {
    let requester = Requester::connect(addr, cfg.clone()).await.unwrap();
    let mut r = Responder::connect(addr, "quick", "servers", cfg.clone())
        .await
        .unwrap();
    let stop = r.stopper();
    let task = tokio::spawn(async move {
        r.serve(|p: Bytes| async move { Ok::<Bytes, String>(p) })
            .await
            .unwrap();
        r.close().await;
    });
    for i in 0..300u32 {
        let reply = requester
            .request("quick", &i.to_be_bytes(), Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("request {i}: {e}"));
        assert_eq!(&reply[..], &i.to_be_bytes());
    }
    stop.stop();
    within("responder stops", task).await.unwrap();
    requester.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_that_come_back_at_once_are_not_lost() {
    let nsqd = Daemon::nsqd(&[]);
    quick_replies(&nsqd.url(), config()).await;
    let broker = Broker::start(BrokerConfig::default()).await.unwrap();
    quick_replies("inproc://", Config::inproc(broker.clone())).await;
    broker.shutdown().await.unwrap();
}

/// A caller's buffer that says when it is dropped (the last request laid out in it is done).
struct Watched {
    buf: Vec<u8>,
    dropped: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl AsRef<[u8]> for Watched {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl AsMut<[u8]> for Watched {
    fn as_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.dropped
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// `payloads` laid out in one buffer, each after room for its envelope (and a gap of `gap`
/// bytes after it); the buffer, its address, the flag its drop sets, and the requests' ranges.
fn lay_out(
    head: usize,
    payloads: &[&[u8]],
    gap: usize,
) -> (
    Watched,
    usize,
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    Vec<std::ops::Range<usize>>,
) {
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    for p in payloads {
        let start = buf.len();
        buf.resize(start + head, 0xee);
        buf.extend_from_slice(p);
        ranges.push(start..buf.len());
        buf.resize(buf.len() + gap, 0xdd);
    }
    let at = buf.as_ptr() as usize;
    let dropped = std::sync::Arc::default();
    let w = Watched {
        buf,
        dropped: std::sync::Arc::clone(&dropped),
    };
    (w, at, dropped, ranges)
}

async fn until_dropped(flag: &std::sync::atomic::AtomicBool) {
    within("the laid-out buffer dropped", async {
        while !flag.load(std::sync::atomic::Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

/// Requests laid out by the caller (`send_batch`, `send_batch_one_way`): replies in order,
/// payloads intact (in process: the very bytes laid out), the buffer dropped once all are
/// done, bad layouts refused whole, a failed publish reported by every request.
async fn laid_out_requests(addr: &str, cfg: Config, in_process: bool) {
    let requester = Requester::connect(addr, cfg.clone()).await.unwrap();
    let head = requester.header_len();
    assert_eq!(head, 10 + requester.reply_topic().len());
    let mut r = Responder::connect(addr, "laid", "servers", cfg.clone())
        .await
        .unwrap();
    let stop = r.stopper();
    let task = tokio::spawn(async move {
        r.serve(|p: Bytes| async move { Ok::<Bytes, String>([&b"got "[..], &p].concat().into()) })
            .await
            .unwrap();
        r.close().await;
    });
    let (buf, _, dropped, ranges) = lay_out(head, &[b"a", b"", b"xyz"], 3);
    let pending = requester.send_batch("laid", buf, ranges).unwrap();
    let mut replies = Vec::new();
    for p in pending {
        replies.push(p.wait(Duration::from_secs(10)).await.unwrap());
    }
    assert_eq!(replies, [&b"got a"[..], b"got ", b"got xyz"]);
    until_dropped(&dropped).await;
    stop.stop();
    within("responder stops", task).await.unwrap();

    // One-way: 50 requests of 1 KB in one buffer, lent to the responder where they lie.
    let mut r = Responder::connect(addr, "laid1", "servers", cfg.clone())
        .await
        .unwrap();
    let payloads: Vec<Vec<u8>> = (0..50u8).map(|i| vec![i; 1024]).collect();
    let refs: Vec<&[u8]> = payloads.iter().map(Vec::as_slice).collect();
    let (buf, at, dropped, ranges) = lay_out(head, &refs, 0);
    let len = buf.buf.len();
    requester
        .send_batch_one_way("laid1", buf, ranges)
        .await
        .unwrap();
    let mut got = Vec::new();
    while got.len() < 50 {
        let req = within("laid-out one-way requests", r.next()).await.unwrap();
        let p = req.payload();
        assert_eq!(p.len(), 1024);
        assert!(p.iter().all(|&x| x == p[0]));
        let inside = (at..at + len).contains(&(p.as_ptr() as usize));
        assert_eq!(
            inside, in_process,
            "shared in process, copied over a socket"
        );
        got.push(p[0]);
        req.finish().unwrap();
    }
    assert_eq!(got, (0..50).collect::<Vec<u8>>());
    until_dropped(&dropped).await;

    // A bad layout is refused whole, before anything is sent.
    let (buf, _, _, mut ranges) = lay_out(head, &[b"p", b"q"], 0);
    ranges[1].start -= 1;
    let e = requester.send_batch("laid", buf, ranges).err().unwrap();
    assert!(matches!(e, Error::RequestLayout { .. }), "{e}");
    assert!(e.to_string().contains("overlaps"), "{e}");
    let (buf, _, _, _) = lay_out(head, &[b"p"], 0);
    let e = requester
        .send_batch_one_way("laid1", buf, std::iter::once(0..head - 1))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("no room for its envelope"), "{e}");
    // A publish the server refuses fails every request of the batch with its error.
    let (buf, _, _, ranges) = lay_out(head, &[b"p", b"q"], 0);
    let pending = requester.send_batch("bad topic", buf, ranges).unwrap();
    for p in pending {
        let e = p.wait(Duration::from_secs(10)).await.unwrap_err();
        assert!(e.to_string().contains("bad topic"), "{e}");
    }
    r.close().await;
    requester.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_laid_out_by_the_caller() {
    let nsqd = Daemon::nsqd(&[]);
    laid_out_requests(&nsqd.url(), config(), false).await;
    let broker = Broker::start(BrokerConfig::default()).await.unwrap();
    laid_out_requests("inproc://", Config::inproc(broker.clone()), true).await;
    broker.shutdown().await.unwrap();
}
