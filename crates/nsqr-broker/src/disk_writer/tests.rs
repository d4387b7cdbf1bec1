//! The disk writer on a real disk queue: single passes (write, keep, read back, fail), the run
//! loop with an owner (a default-mode put waits for the write and comes back in order), and the
//! shutdown flush.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use nsq_wire::MessageId;

use super::*;
use crate::disk_link::DiskLink;
use crate::durability::promise;
use crate::spill_queue::SpillQueue;

/// A temporary directory, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Dir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!(
            "nsqr-disk-writer-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    /// Bytes in the queue's data files.
    fn data_bytes(&self) -> u64 {
        std::fs::read_dir(&self.0)
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".dat"))
            .filter(|e| e.file_name().to_string_lossy().contains(".diskqueue."))
            .map(|e| e.metadata().unwrap().len())
            .sum()
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn out(ids: std::ops::Range<u64>) -> Vec<Outgoing> {
    ids.map(|i| Outgoing {
        msg: Message::new(MessageId(i), 7, 1, Bytes::from(format!("body {i}"))).unwrap(),
        due: None,
    })
    .collect()
}

fn writer(dir: &Dir, strict: bool) -> Arc<DiskWriter> {
    let policy = if strict {
        AckPolicy::OnFinish
    } else {
        AckPolicy::OnAccept
    };
    DiskWriter::open(&dir.0, "q", &BrokerConfig::default(), strict, policy).0
}

fn ids(records: &[Option<Outgoing>]) -> Vec<u64> {
    records
        .iter()
        .map(|r| r.as_ref().map_or(u64::MAX, |o| o.msg.id.0))
        .collect()
}

#[test]
fn a_default_pass_settles_its_promise_once_the_records_are_written() {
    let dir = Dir::new();
    let w = writer(&dir, false);
    let (p, mut c) = promise();
    let work = Work {
        writes: out(0..3),
        promises: vec![p],
        ..Work::default()
    };
    let len: u64 = (0..3).map(|i| record_len(format!("body {i}").len())).sum();
    let done = w.pass(w.io.lock().as_mut(), work);
    assert_eq!(c.try_recv().unwrap(), Ok(()));
    assert!(done.wrote && done.write_error.is_none());
    assert_eq!((done.state.unread, done.records.len()), (3, 0));
    assert_eq!(
        dir.data_bytes(),
        len,
        "in the file (not necessarily fsynced)"
    );
}

#[test]
fn kept_writes_come_back_as_records_and_the_rest_is_read_back_in_order() {
    let dir = Dir::new();
    let w = writer(&dir, true);
    let (p, mut c) = promise();
    let work = Work {
        writes: out(0..5),
        promises: vec![p],
        consume: 2,
        load: 10,
        ..Work::default()
    };
    let done = w.pass(w.io.lock().as_mut(), work);
    assert_eq!(c.try_recv().unwrap(), Ok(()), "strict: after the fsync");
    assert_eq!(ids(&done.records), [0, 1, 2, 3, 4]);
    assert_eq!((done.first_seq, done.loaded, done.state.unread), (0, 3, 0));
    let m = done.records[3].as_ref().unwrap();
    assert_eq!((m.msg.body(), m.msg.timestamp()), (&b"body 3"[..], 7));
}

#[test]
fn a_queue_that_did_not_open_fails_the_promises() {
    let dir = Dir::new();
    for strict in [false, true] {
        let w = writer(&dir, strict);
        let (p, mut c) = promise();
        let work = Work {
            writes: out(0..3),
            promises: vec![p],
            ..Work::default()
        };
        let done = w.pass(None, work);
        assert!(matches!(c.try_recv().unwrap(), Err(DiskError::Io { .. })));
        assert!(done.write_error.is_some());
        // Default mode hands the accepted messages back (kept in memory or retried).
        assert_eq!(done.retry.len(), if strict { 0 } else { 3 });
    }
}

/// A channel-like owner: the queue under a lock, records placed at the back of memory.
struct Owner {
    q: Mutex<SpillQueue>,
}

impl QueueOwner for Owner {
    fn with_queue(&self, f: &mut dyn FnMut(&mut SpillQueue)) {
        f(&mut self.q.lock());
    }

    fn report(&self, done: Done) -> Accepted {
        let mut q = self.q.lock();
        match q.apply(done, true) {
            None => Accepted::Refused,
            Some(placed) => {
                for (m, _) in placed {
                    q.push_back(m);
                }
                Accepted::Taken(Ticket::done())
            }
        }
    }
}

fn owner(dir: &Dir, cap: usize) -> Arc<Owner> {
    let (w, opened) = DiskWriter::open(
        &dir.0,
        "q",
        &BrokerConfig::default(),
        false,
        AckPolicy::OnAccept,
    );
    let link = DiskLink::new(Arc::clone(&w), false, false, 0, opened);
    let o = Arc::new(Owner {
        q: Mutex::new(SpillQueue::with_disk(cap, link)),
    });
    w.set_owner(Arc::downgrade(&o) as Weak<dyn QueueOwner>);
    o
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_put_past_memory_waits_for_the_write_and_comes_back_in_order() {
    let dir = Dir::new();
    let o = owner(&dir, 0);
    let msgs: Vec<Message> = out(0..3).into_iter().map(|o| o.msg).collect();
    let put = o.q.lock().put(msgs, None).unwrap();
    assert!(!put.ticket.is_done());
    assert_eq!(put.ticket.wait_blocking(), Ok(()));
    assert!(dir.data_bytes() > 0, "written before the ticket completed");
    wait_for("the pass report", || o.q.lock().backend_depth() == 3);
    // A consumer finds memory empty: the writer reads the records back for it.
    assert!(o.q.lock().pop_front().is_none());
    wait_for("the read-back", || o.q.lock().len() == 3);
    let got: Vec<u64> = std::iter::from_fn(|| o.q.lock().pop_front())
        .map(|m| m.id.0)
        .collect();
    assert_eq!(got, [0, 1, 2]);
}

#[test]
fn shutdown_writes_what_is_left_and_a_reopened_queue_has_it() {
    let dir = Dir::new();
    let o = owner(&dir, 10);
    let msgs: Vec<Message> = out(0..4).into_iter().map(|o| o.msg).collect();
    assert!(
        o.q.lock().put(msgs, None).unwrap().ticket.is_done(),
        "memory"
    );
    let (w, outbox, promises) = o.q.lock().begin_close().unwrap();
    let mut first = Some((outbox, promises));
    w.close(&mut || {
        let (mut writes, promises) = first.take().unwrap_or_default();
        writes.extend(
            o.q.lock()
                .drain_mem()
                .into_iter()
                .map(|msg| Outgoing { msg, due: None }),
        );
        Final {
            writes,
            promises,
            ..Final::default()
        }
    });
    assert!(
        o.q.lock()
            .put(out(9..10).into_iter().map(|o| o.msg).collect(), None)
            .is_err(),
        "closed"
    );
    let (_, opened) = DiskWriter::open(
        &dir.0,
        "q",
        &BrokerConfig::default(),
        false,
        AckPolicy::OnAccept,
    );
    assert_eq!(opened.unread, 4);
}
