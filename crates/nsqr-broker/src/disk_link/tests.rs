//! The link's state machines, driven as the disk writer and the owner drive them, with the
//! writer's reports written by hand (no writer runs: the writer has no owner, so `spawn` only
//! counts).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use nsq_wire::MessageId;

use super::*;
use crate::broker_config::BrokerConfig;
use crate::disk_writer::{AckPolicy, DiskState};

/// A temporary directory, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "nsqr-link-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn link_with(strict: bool, topic: bool, max_disk_bytes: u64, unread: u64) -> (Dir, DiskLink) {
    let dir = Dir::new();
    let policy = match (strict, topic) {
        (_, true) => AckPolicy::AfterTicket,
        (true, false) => AckPolicy::OnFinish,
        (false, false) => AckPolicy::OnAccept,
    };
    let (writer, mut opened) =
        DiskWriter::open(&dir.0, "q", &BrokerConfig::default(), strict, policy);
    opened.unread = unread;
    let link = DiskLink::new(writer, strict, topic, max_disk_bytes, opened);
    (dir, link)
}

fn link(strict: bool, topic: bool) -> (Dir, DiskLink) {
    link_with(strict, topic, 0, 0)
}

fn msgs(ids: std::ops::Range<u64>) -> Vec<Message> {
    ids.map(|i| Message::new(MessageId(i), 0, 0, Bytes::from_static(b"x")).unwrap())
        .collect()
}

fn spawned(l: &DiskLink) -> usize {
    l.writer.spawned.load(Ordering::Relaxed)
}

/// The writer's report of pass `w` written successfully, with `unread` records left on disk.
fn wrote(w: &Work, unread: u64) -> Done {
    Done {
        epoch: w.epoch,
        wrote: !w.writes.is_empty(),
        state: DiskState {
            unread,
            ..DiskState::default()
        },
        ..Done::default()
    }
}

/// The writer's report of pass `w` whose write failed: `retry` are the messages not written.
fn failed(w: &mut Work, unread: u64) -> Done {
    Done {
        epoch: w.epoch,
        write_error: Some(DiskError::io("q", std::io::Error::from_raw_os_error(28))),
        retry: std::mem::take(&mut w.writes),
        state: DiskState {
            unread,
            ..DiskState::default()
        },
        ..Done::default()
    }
}

fn settle(w: &mut Work, r: Result<(), DiskError>) {
    for p in w.promises.drain(..) {
        let _ = p.send(r.clone());
    }
}

#[test]
fn one_writer_at_a_time_and_idle_once_nothing_is_left() {
    let (_d, mut l) = link(false, false);
    assert_eq!((l.run, spawned(&l)), (Run::Idle, 0));
    let t1 = l.enqueue(msgs(0..2), None).unwrap();
    let t2 = l.enqueue(msgs(2..3), None).unwrap();
    assert_eq!((l.run, spawned(&l)), (Run::Running, 1), "one writer");
    assert!(l.behind());
    let mut w = l.take_work(0, 0).expect("the outbox");
    assert_eq!((w.writes.len(), w.promises.len(), w.consume), (3, 2, 0));
    assert!(l.behind(), "in transit");
    assert_eq!(l.backend_depth(), 3);
    assert!(!t1.is_done(), "a put that went to disk waits for the write");
    settle(&mut w, Ok(()));
    assert_eq!(t1.wait_blocking(), Ok(()));
    assert_eq!(t2.wait_blocking(), Ok(()));
    let placed = l.apply(wrote(&w, 3), true).unwrap();
    assert!(placed.is_empty());
    assert_eq!((l.in_transit, l.backend_depth()), (0, 3));
    // --mem-queue-size=0 and nobody starved: nothing to read, the writer stops.
    assert!(l.take_work(0, 0).is_none());
    assert_eq!(l.run, Run::Idle);
    l.kick();
    assert_eq!((l.run, spawned(&l)), (Run::Running, 2));
}

#[test]
fn a_lingering_writer_stays_running_so_publishes_start_no_other() {
    let (_d, mut l) = link(false, false);
    let _t = l.enqueue(msgs(0..1), None).unwrap();
    let w = l.next_work(0, 0, true);
    let Next::Work(mut w) = w else {
        panic!("the outbox: {w:?}")
    };
    settle(&mut w, Ok(()));
    l.apply(wrote(&w, 1), true).unwrap();
    // Nothing queued: a lingering writer stays, and a publish meanwhile starts no writer.
    assert!(matches!(l.next_work(0, 0, true), Next::Linger));
    assert_eq!(l.run, Run::Running);
    let _t = l.enqueue(msgs(1..3), None).unwrap();
    assert_eq!(spawned(&l), 1, "the lingering writer takes it");
    let Next::Work(w) = l.next_work(0, 0, true) else {
        panic!("the publish made while lingering")
    };
    assert_eq!(w.writes.len(), 2);
    l.apply(wrote(&w, 3), true).unwrap();
    // Its time up, it stops; a closed link stops a lingering writer at once.
    assert!(matches!(l.next_work(0, 0, false), Next::Stop));
    assert_eq!(l.run, Run::Idle);
    l.kick();
    let _ = l.close();
    assert!(matches!(l.next_work(0, 0, true), Next::Stop));
}

#[test]
fn memory_with_room_keeps_what_the_pass_writes() {
    let (_d, mut l) = link(false, false);
    let _t = l.enqueue(msgs(0..10), None).unwrap();
    let w = l.take_work(4, 10).unwrap();
    assert_eq!((w.writes.len(), w.consume, w.load), (10, 6, 0));
}

#[test]
fn a_consumer_that_finds_memory_empty_gets_what_lands_on_disk_next() {
    let (_d, mut l) = link(false, false);
    l.after_pop(true, 0, 0);
    assert!(l.starved);
    assert_eq!(l.run, Run::Idle, "nothing on disk: no writer");
    let _t = l.enqueue(msgs(0..300), None).unwrap();
    let w = l.take_work(0, 0).unwrap();
    assert_eq!((w.writes.len(), w.consume, w.load), (300, 0, READ_AHEAD));
    let mut done = wrote(&w, 300 - READ_AHEAD as u64);
    done.loaded = READ_AHEAD;
    done.records = msgs(0..READ_AHEAD as u64)
        .into_iter()
        .map(|msg| Some(Outgoing { msg, due: None }))
        .collect();
    let placed = l.apply(done, true).unwrap();
    assert_eq!(placed.len(), READ_AHEAD);
    assert!(!l.starved, "a pass that loaded records feeds the consumer");
}

#[test]
fn below_three_quarters_of_memory_reads_ahead() {
    let (_d, mut l) = link_with(false, false, 0, 100);
    l.after_pop(false, 9, 10);
    assert_eq!((l.run, spawned(&l)), (Run::Idle, 0), "9 of 10 is enough");
    l.after_pop(false, 7, 10);
    assert_eq!((l.run, spawned(&l)), (Run::Running, 1));
    let w = l.take_work(7, 10).unwrap();
    assert_eq!(w.load, 3);
}

#[test]
fn a_channel_keeps_a_failed_write_in_memory_and_refuses_overflow_until_the_tick() {
    let (_d, mut l) = link(false, false);
    let t = l.enqueue(msgs(0..3), None).unwrap();
    let mut w = l.take_work(0, 0).unwrap();
    settle(&mut w, Err(DiskError::Exiting));
    assert!(
        t.wait_blocking().is_err(),
        "the publisher hears of the failure"
    );
    let keep = l.apply(failed(&mut w, 0), true).unwrap();
    assert_eq!(keep.len(), 3, "kept in memory, delivered");
    assert!(matches!(l.writes, Writes::Failed(_)));
    assert!(matches!(
        l.check_writable(),
        Err(BrokerError::Disk(DiskError::Unavailable { .. }))
    ));
    assert!(l.stats().unwrap().last_write_error.is_some());
    assert!(l.take_work(0, 0).is_none());
    l.tick();
    assert_eq!(
        l.writes,
        Writes::Ok,
        "nothing to retry: the next overflow tries"
    );
    assert!(l.check_writable().is_ok());
}

#[test]
fn a_topic_retries_its_failed_writes_on_the_tick() {
    let (_d, mut l) = link(false, true);
    let _t = l.enqueue(msgs(0..3), None).unwrap();
    let mut w = l.take_work(0, 0).unwrap();
    let keep = l.apply(failed(&mut w, 0), true).unwrap();
    assert!(keep.is_empty(), "a topic keeps them in its outbox");
    assert_eq!(l.backend_depth(), 3);
    assert!(l.take_work(0, 0).is_none(), "Failed: the outbox waits");
    assert_eq!((l.run, spawned(&l)), (Run::Idle, 1));
    l.tick();
    assert!(matches!(l.writes, Writes::Retry(_)));
    assert_eq!((l.run, spawned(&l)), (Run::Running, 2));
    let w = l.take_work(0, 0).unwrap();
    assert_eq!(w.writes.len(), 3);
    assert!(
        matches!(l.writes, Writes::Failed(_)),
        "retrying: the report decides"
    );
    assert!(l.apply(wrote(&w, 3), false).is_some());
    assert_eq!(l.writes, Writes::Ok);
}

#[test]
fn strict_mode_writes_through_a_failure() {
    let (_d, mut l) = link(true, false);
    let _t = l.enqueue(msgs(0..1), None).unwrap();
    let mut w = l.take_work(0, 10).unwrap();
    let _ = l.apply(failed(&mut w, 0), true).unwrap();
    assert!(matches!(l.writes, Writes::Failed(_)));
    assert!(
        l.check_writable().is_ok(),
        "strict tries the disk every time"
    );
    assert!(l.take_work(0, 10).is_none());
    let _t = l.enqueue(msgs(1..2), None).unwrap();
    assert_eq!((l.run, spawned(&l)), (Run::Running, 2));
    assert_eq!(l.take_work(0, 10).unwrap().writes.len(), 1);
}

#[test]
fn a_failed_read_backs_off_until_the_tick() {
    let (_d, mut l) = link_with(false, false, 0, 10);
    l.kick();
    let w = l.take_work(0, 100).unwrap();
    assert_eq!(w.load, 100);
    let mut done = wrote(&w, 10);
    done.read_error = Some("bad".into());
    let _ = l.apply(done, true).unwrap();
    assert_eq!(l.reads, Reads::BackedOff);
    assert!(l.take_work(0, 100).is_none());
    l.after_pop(true, 0, 100);
    assert_eq!(
        (l.run, spawned(&l)),
        (Run::Idle, 1),
        "no reads while backed off"
    );
    l.tick();
    assert_eq!(l.reads, Reads::Open);
    assert_eq!(
        (l.run, spawned(&l)),
        (Run::Running, 2),
        "a starved consumer waits"
    );
    assert_eq!(
        l.take_work(0, 100).unwrap().load,
        READ_AHEAD,
        "at least READ_AHEAD"
    );
}

#[test]
fn emptying_drops_the_outbox_and_the_running_pass_report() {
    let (_d, mut l) = link(false, false);
    let _t1 = l.enqueue(msgs(0..2), None).unwrap();
    let w = l.take_work(0, 0).unwrap();
    let t2 = l.enqueue(msgs(2..4), None).unwrap();
    l.request_empty();
    assert_eq!(t2.wait_blocking(), Ok(()), "dropped: its publisher is done");
    assert_eq!(
        (l.backend_depth(), l.behind()),
        (0, false),
        "what the running pass writes is dropped too: the next pass empties it"
    );
    let mut done = wrote(&w, 2);
    done.loaded = 1;
    done.records = vec![Some(Outgoing {
        msg: msgs(9..10).remove(0),
        due: None,
    })];
    assert_eq!(l.apply(done, true).map(|v| v.len()), Some(0));
    assert_eq!(l.backend_depth(), 0, "a stale report changes no count");
    let w = l.take_work(0, 0).unwrap();
    assert!(w.empty && w.writes.is_empty());
}

#[test]
fn closed_is_final() {
    let (_d, mut l) = link(false, false);
    let _t = l.enqueue(msgs(0..2), None).unwrap();
    let (outbox, promises) = l.close();
    assert_eq!((outbox.len(), promises.len()), (2, 1));
    assert!(l.is_closed());
    assert!(l.take_work(0, 0).is_none());
    l.kick();
    l.tick();
    assert_eq!((l.run, spawned(&l)), (Run::Closed, 1));

    let (_d, mut l) = link(false, false);
    let t = l.enqueue(msgs(0..2), None).unwrap();
    l.request_delete();
    assert_eq!(t.wait_blocking(), Ok(()));
    assert!(l.is_closed());
    assert!(l.take_work(0, 0).is_none());
}

#[test]
fn a_topic_reads_only_while_it_may_fan_out() {
    let (_d, mut l) = link_with(false, true, 0, 5);
    l.kick();
    assert!(l.take_work(0, 0).is_none(), "no channel: nothing read");
    l.set_drain(true);
    assert_eq!((l.run, spawned(&l)), (Run::Running, 2));
    let w = l.take_work(0, 0).unwrap();
    assert_eq!(w.load, TOPIC_CHUNK);
    let mut done = wrote(&w, 0);
    done.loaded = 5;
    assert!(l.apply(done, false).is_none(), "refused: read again later");
    assert_eq!(l.backend_depth(), 5);
    assert!(l.take_work(0, 0).is_some());
    l.rewound(0);
    assert_eq!(l.reads, Reads::BackedOff);
    l.set_drain(true);
    let w = l.take_work(0, 0);
    assert!(w.is_none(), "backed off");
    l.tick();
    assert_eq!(l.run, Run::Running, "draining with a backlog");
    assert_eq!(l.take_work(0, 0).unwrap().load, TOPIC_CHUNK);
}

#[test]
fn max_disk_bytes_refuses_before_queueing() {
    let one = record_len(1);
    let (_d, mut l) = link_with(false, false, 2 * one, 0);
    let _t = l.enqueue(msgs(0..2), None).unwrap();
    let e = l.enqueue(msgs(2..3), None).unwrap_err();
    assert!(matches!(e, BrokerError::Disk(DiskError::Full { .. })));
    assert_eq!(l.backend_depth(), 2);
}

#[test]
fn finished_records_wake_a_strict_channel_writer_to_acknowledge_them() {
    let (_d, mut l) = link(true, false);
    let n = ACK_KICK as u64;
    let _t = l.enqueue(msgs(0..n), None).unwrap();
    let w = l.take_work(0, 2 * ACK_KICK).unwrap();
    assert_eq!(w.consume, ACK_KICK, "memory has room: kept");
    let mut done = wrote(&w, 0);
    done.records = w.writes.into_iter().map(Some).collect();
    assert_eq!(l.apply(done, true).unwrap().len(), ACK_KICK);
    assert!(l.take_work(ACK_KICK, 2 * ACK_KICK).is_none());
    for id in 0..n - 1 {
        l.finished(id);
    }
    assert_eq!(l.run, Run::Idle, "not enough finished yet");
    l.finished(n - 1);
    assert_eq!(l.run, Run::Running);
    assert_eq!(l.take_work(0, 2 * ACK_KICK).unwrap().acks, ACK_KICK);
}

#[test]
fn the_tick_syncs_what_changed() {
    let (_d, mut l) = link(false, false);
    let _t = l.enqueue(msgs(0..1), None).unwrap();
    let w = l.take_work(0, 0).unwrap();
    let mut done = wrote(&w, 1);
    done.state.needs_sync = true;
    let _ = l.apply(done, true);
    assert!(l.take_work(0, 0).is_none());
    l.tick();
    assert!(l.take_work(0, 0).unwrap().sync);
}

#[test]
fn attributes_beside_the_disk_are_bounded_and_come_back_with_their_records() {
    let (_d, mut l) = link(false, false);
    l.side_attrs_limit = 2;
    let attrs = crate::attrs::Attributes {
        expires_at: 7,
        ..crate::attrs::Attributes::default()
    }
    .into_shared();
    let with: Vec<Message> = msgs(1..4)
        .into_iter()
        .map(|m| m.with_attributes(attrs.clone()))
        .collect();
    l.enqueue(with, None).unwrap();
    assert_eq!(l.attrs.len(), 2);
    assert_eq!(l.stats().map(|s| s.attributes_dropped), Some(1));
    // records 1 and 2 read back from disk get their attributes again; 3 comes back plain
    let mut w = l.take_work(0, 10).unwrap();
    let mut done = wrote(&w, 0);
    done.records = std::mem::take(&mut w.writes)
        .into_iter()
        .map(|o| {
            Some(Outgoing {
                msg: Message::new(o.msg.id, 0, 0, Bytes::from_static(b"x")).unwrap(),
                due: None,
            })
        })
        .collect();
    done.loaded = 3;
    let placed = l.apply(done, true).unwrap();
    let kept: Vec<bool> = placed
        .iter()
        .map(|(m, _)| m.attributes().is_some_and(|a| a.expires_at == 7))
        .collect();
    assert_eq!(kept, [true, true, false]);
    assert!(l.attrs.is_empty());
}
