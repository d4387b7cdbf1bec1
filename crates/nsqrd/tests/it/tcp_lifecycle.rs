//! Topic and channel lifecycle as seen by TCP clients: `#ephemeral` channels and topics deleted
//! when their last client / channel goes, non-ephemeral ones kept, ephemeral overflow beyond
//! `--mem-queue-size` dropped silently, a topic without channels buffering for its first channel
//! only, channel and topic pause/unpause over HTTP, `/channel/empty` dropping in-flight messages,
//! and topic/channel deletion closing consumers.
use crate::common::*;

use std::time::Duration;

const QUIET: Duration = Duration::from_millis(500);
const GONE: Duration = Duration::from_secs(20);

/// An ephemeral channel with one client on `topic`: close it, and the channel's deletion shows
/// that whatever the server does when a last client leaves has run (the control of the
/// "nothing happened" checks below).
fn control_channel(s: &Server, topic: &str) -> Conn {
    let mut c = s.connect();
    c.sub(topic, "ctl#ephemeral");
    c
}

fn control_deleted(s: &Server, topic: &str) {
    assert!(
        wait_until(GONE, || s.channel_stats(topic, "ctl#ephemeral").is_none()),
        "control channel never deleted"
    );
}

fn post_ok(s: &Server, path: &str) {
    let r = s.post(path, b"");
    assert_eq!(r.status, 200, "POST {path}: {}", r.text());
}

#[test]
fn ephemeral_channel_deleted_with_last_client() {
    let s = Server::start(&[]);
    let mut a = s.connect();
    a.sub("et", "c#ephemeral");
    let mut b = s.connect();
    b.sub("et", "c#ephemeral");
    assert_eq!(s.channel_stat("et", "c#ephemeral", "client_count"), Some(2));
    let ctl = control_channel(&s, "et");
    a.close();
    ctl.close();
    assert!(wait_until(GONE, || s.channel_stat(
        "et",
        "c#ephemeral",
        "client_count"
    ) == Some(1)));
    control_deleted(&s, "et");
    assert!(
        s.channel_stats("et", "c#ephemeral").is_some(),
        "deleted while a client remained"
    );
    b.close();
    assert!(
        wait_until(GONE, || s.channel_stats("et", "c#ephemeral").is_none()),
        "ephemeral channel not deleted"
    );
    // the non-ephemeral topic stays
    assert!(s.topic_stats("et").is_some());
}

#[test]
fn ephemeral_topic_deleted_with_last_channel() {
    let s = Server::start(&[]);
    let mut a = s.connect();
    a.sub("tt#ephemeral", "c#ephemeral");
    s.connect().publish("tt#ephemeral", b"x");
    a.close();
    assert!(
        wait_until(GONE, || s.topic_stats("tt#ephemeral").is_none()),
        "ephemeral topic not deleted"
    );
    // the name can be used again right away
    let mut b = s.connect();
    b.sub("tt#ephemeral", "c#ephemeral");
    b.rdy(1);
    s.connect().publish("tt#ephemeral", b"fresh");
    assert_eq!(b.expect_message().body, b"fresh");
}

#[test]
fn ephemeral_topic_kept_while_a_channel_remains() {
    let s = Server::start(&[]);
    // a non-ephemeral channel on an ephemeral topic
    // an ephemeral topic that never had channels is not deleted either
    s.connect().publish("lonely#ephemeral", b"x");
    let mut a = s.connect();
    a.sub("keep#ephemeral", "durable");
    let ctl = control_channel(&s, "keep#ephemeral");
    a.close();
    ctl.close();
    assert!(wait_until(GONE, || s.channel_stat(
        "keep#ephemeral",
        "durable",
        "client_count"
    ) == Some(0)));
    control_deleted(&s, "keep#ephemeral");
    assert!(s.channel_stats("keep#ephemeral", "durable").is_some());
    assert_eq!(s.topic_stat("lonely#ephemeral", "depth"), Some(1));
}

#[test]
fn non_ephemeral_channel_stays_after_last_client() {
    let s = Server::start(&[]);
    let mut a = s.connect();
    a.sub("stay", "c");
    let ctl = control_channel(&s, "stay");
    a.close();
    ctl.close();
    assert!(wait_until(GONE, || s.channel_stat(
        "stay",
        "c",
        "client_count"
    ) == Some(0)));
    control_deleted(&s, "stay");
    assert!(s.channel_stats("stay", "c").is_some());
    // it keeps collecting messages for its next consumer
    let mut p = s.connect();
    p.publish("stay", b"m1");
    p.publish("stay", b"m2");
    assert!(wait_until(GONE, || s.channel_stat("stay", "c", "depth") == Some(2)));
    let mut b = s.connect();
    b.sub("stay", "c");
    b.rdy(5);
    assert_eq!(b.expect_messages(2).len(), 2);
}

#[test]
fn ephemeral_channel_overflow_dropped_silently() {
    let s = Server::start(&["--mem-queue-size=2"]);
    let mut c = s.connect();
    c.sub("over", "c#ephemeral");
    let mut p = s.connect();
    for i in 0..6 {
        p.publish("over", format!("m{i}").as_bytes());
    }
    assert!(
        wait_until(GONE, || s.topic_stat("over", "depth") == Some(0)),
        "topic did not hand its messages to the channel"
    );
    let ch = s.channel_stats("over", "c#ephemeral").expect("channel");
    assert_eq!(ch["depth"], 2, "{ch}");
    assert_eq!(ch["backend_depth"], 0);
    c.rdy(10);
    assert_eq!(c.expect_messages(2).len(), 2);
    assert!(c.expect_silence(QUIET), "more than mem-queue-size kept");
}

#[test]
fn ephemeral_topic_overflow_dropped_silently() {
    let s = Server::start(&["--mem-queue-size=2"]);
    let mut p = s.connect();
    for i in 0..5 {
        p.publish("eover#ephemeral", format!("m{i}").as_bytes());
    }
    let t = s.topic_stats("eover#ephemeral").expect("topic");
    assert_eq!(t["depth"], 2, "{t}");
    assert_eq!(t["backend_depth"], 0);
    assert_eq!(t["message_count"], 5);
    let mut c = s.connect();
    c.sub("eover#ephemeral", "c");
    c.rdy(10);
    assert_eq!(c.expect_messages(2).len(), 2);
    assert!(c.expect_silence(QUIET));
}

#[test]
fn non_ephemeral_overflow_is_kept() {
    let s = Server::start(&["--mem-queue-size=2"]);
    let mut c = s.connect();
    c.sub("disk", "c");
    let mut p = s.connect();
    for i in 0..6 {
        p.publish("disk", format!("m{i}").as_bytes());
    }
    assert!(wait_until(GONE, || s.channel_stat("disk", "c", "depth") == Some(6)));
    c.rdy(10);
    let mut bodies: Vec<Vec<u8>> = c.expect_messages(6).into_iter().map(|m| m.body).collect();
    bodies.sort();
    let want: Vec<Vec<u8>> = (0..6).map(|i| format!("m{i}").into_bytes()).collect();
    assert_eq!(bodies, want);
}

#[test]
fn topic_without_channels_buffers_for_first_channel() {
    let s = Server::start(&[]);
    let mut p = s.connect();
    for i in 0..3 {
        p.publish("buf", format!("old{i}").as_bytes());
    }
    assert_eq!(s.topic_stat("buf", "depth"), Some(3));
    let mut first = s.connect();
    first.sub("buf", "first");
    first.rdy(10);
    let got = first.expect_messages(3);
    let mut bodies: Vec<Vec<u8>> = got.iter().map(|m| m.body.clone()).collect();
    bodies.sort();
    assert_eq!(
        bodies,
        vec![b"old0".to_vec(), b"old1".to_vec(), b"old2".to_vec()]
    );
    assert_eq!(s.topic_stat("buf", "depth"), Some(0));
    // a channel created later only sees later messages
    let mut second = s.connect();
    second.sub("buf", "second");
    second.rdy(10);
    p.publish("buf", b"new");
    assert_eq!(first.expect_message().body, b"new");
    assert_eq!(second.expect_message().body, b"new");
    assert!(second.expect_silence(QUIET));
    assert_eq!(s.channel_stat("buf", "second", "message_count"), Some(1));
    assert_eq!(s.channel_stat("buf", "first", "message_count"), Some(4));
}

#[test]
fn channel_pause_and_unpause() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("cp", "c");
    c.rdy(10);
    let mut other = s.connect();
    other.sub("cp", "other");
    other.rdy(10);
    s.wait_ready("cp", "c", 10);
    s.wait_ready("cp", "other", 10);
    post_ok(&s, "/channel/pause?topic=cp&channel=c");
    let ch = s.channel_stats("cp", "c").expect("channel");
    assert_eq!(ch["paused"], true);
    let mut p = s.connect();
    p.publish("cp", b"m1");
    p.publish("cp", b"m2");
    // the other channel is not paused
    assert_eq!(other.expect_messages(2).len(), 2);
    assert!(c.expect_silence(QUIET), "delivered while paused");
    assert_eq!(s.channel_stat("cp", "c", "depth"), Some(2));
    // RDY is kept while paused
    assert_eq!(s.client_stats("cp", "c")[0]["ready_count"], 10);
    post_ok(&s, "/channel/unpause?topic=cp&channel=c");
    assert_eq!(
        s.channel_stats("cp", "c").expect("channel")["paused"],
        false
    );
    let got = c.expect_messages(2);
    let mut bodies: Vec<Vec<u8>> = got.into_iter().map(|m| m.body).collect();
    bodies.sort();
    assert_eq!(bodies, vec![b"m1".to_vec(), b"m2".to_vec()]);
}

#[test]
fn topic_pause_and_unpause() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("tp", "c");
    c.rdy(10);
    s.wait_ready("tp", "c", 10);
    post_ok(&s, "/topic/pause?topic=tp");
    assert_eq!(s.topic_stats("tp").expect("topic")["paused"], true);
    let mut p = s.connect();
    p.publish("tp", b"m1");
    assert!(c.expect_silence(QUIET), "delivered while topic paused");
    // accumulates in the topic, not in the channel
    assert_eq!(s.topic_stat("tp", "depth"), Some(1));
    assert_eq!(s.channel_stat("tp", "c", "depth"), Some(0));
    assert_eq!(s.channel_stat("tp", "c", "message_count"), Some(0));
    post_ok(&s, "/topic/unpause?topic=tp");
    assert_eq!(c.expect_message().body, b"m1");
    assert_eq!(s.topic_stat("tp", "depth"), Some(0));
    assert_eq!(s.topic_stats("tp").expect("topic")["paused"], false);
}

#[test]
fn channel_empty_drops_in_flight() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("emp", "c");
    c.rdy(1);
    let mut p = s.connect();
    p.publish("emp", b"m1");
    p.publish("emp", b"m2");
    let m1 = c.expect_message();
    assert!(wait_until(GONE, || s.channel_stat("emp", "c", "depth") == Some(1)));
    post_ok(&s, "/channel/empty?topic=emp&channel=c");
    let ch = s.channel_stats("emp", "c").expect("channel");
    assert_eq!(ch["depth"], 0);
    assert_eq!(ch["in_flight_count"], 0);
    assert_eq!(ch["clients"][0]["in_flight_count"], 0);
    let id = m1.id_str();
    c.fin(&id);
    c.expect_error(&format!("E_FIN_FAILED FIN {id} failed ID not in flight"));
    // the client's in-flight count was reset: with RDY 1 the next message flows
    p.publish("emp", b"m3");
    assert_eq!(c.expect_message().body, b"m3");
    assert!(c.expect_silence(QUIET), "emptied message came back");
}

#[test]
fn channel_empty_drops_deferred() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("empd", "c");
    let mut p = s.connect();
    p.cmd_body("DPUB empd 60000", b"later");
    p.expect_ok();
    assert!(wait_until(GONE, || s.channel_stat(
        "empd",
        "c",
        "deferred_count"
    ) == Some(1)));
    post_ok(&s, "/channel/empty?topic=empd&channel=c");
    assert_eq!(s.channel_stat("empd", "c", "deferred_count"), Some(0));
}

#[test]
fn topic_delete_closes_consumers() {
    let s = Server::start(&[]);
    let mut a = s.connect();
    a.sub("del", "c1");
    let mut b = s.connect();
    b.sub("del", "c2");
    post_ok(&s, "/topic/delete?topic=del");
    assert!(a.expect_closed(), "consumer of deleted topic not closed");
    assert!(b.expect_closed(), "consumer of deleted topic not closed");
    assert!(s.topic_stats("del").is_none());
    // a publisher on another connection is unaffected, and the topic can be recreated
    let mut p = s.connect();
    p.publish("del", b"again");
    assert_eq!(s.topic_stat("del", "depth"), Some(1));
    assert!(s.channel_stats("del", "c1").is_none());
}

#[test]
fn channel_delete_closes_its_consumers_only() {
    let s = Server::start(&[]);
    let mut a = s.connect();
    a.sub("cdel", "gone");
    let mut b = s.connect();
    b.sub("cdel", "kept");
    post_ok(&s, "/channel/delete?topic=cdel&channel=gone");
    assert!(a.expect_closed(), "consumer of deleted channel not closed");
    assert!(s.channel_stats("cdel", "gone").is_none());
    b.rdy(1);
    s.connect().publish("cdel", b"x");
    assert_eq!(b.expect_message().body, b"x");
}
