//! The engine with a data path, in process: messages past `--mem-queue-size` go to disk and
//! come back in order; strict mode acknowledges a publish only once it is on disk and keeps
//! unfinished messages there until FIN; what a closed broker leaves is read back with the
//! `diskqueue` crate.
use std::sync::Arc;
use std::time::Duration;

use nsq_wire::Bodies;
use nsqr_broker::{Broker, BrokerConfig, Consumer, ConsumerInfo, ConsumerKind, Durability};

async fn broker(dir: &std::path::Path, durability: Durability, mem: usize) -> Broker {
    Broker::start(BrokerConfig {
        data_path: Some(dir.to_path_buf()),
        durability,
        mem_queue_size: mem,
        ..BrokerConfig::default()
    })
    .await
    .unwrap()
}

fn consumer(b: &Broker) -> Arc<Consumer> {
    let c = b.new_consumer(
        ConsumerInfo::new(ConsumerKind::Tcp, "x:1").msg_timeout(Duration::from_secs(60)),
    );
    c.set_ready_count(1000);
    c
}

fn bodies(range: std::ops::Range<u32>) -> [Bodies; 1] {
    let bodies: Vec<String> = range.map(|i| format!("m{i:04}")).collect();
    [Bodies::concat(bodies.iter().map(String::as_bytes)).expect("small")]
}

/// Deliver (and FIN if `fin`) until `n` messages arrived; their bodies and ids.
async fn take(
    ch: &nsqr_broker::Channel,
    client: &Consumer,
    n: usize,
    fin: bool,
) -> Vec<(String, u64)> {
    take_messages(ch, client, n, fin)
        .await
        .iter()
        .map(|m| (String::from_utf8(m.body().to_vec()).unwrap(), m.id.0))
        .collect()
}

/// Deliver (and FIN if `fin`) until `n` messages arrived, 64 at a time.
async fn take_messages(
    ch: &nsqr_broker::Channel,
    client: &Consumer,
    n: usize,
    fin: bool,
) -> Vec<nsqr_broker::Message> {
    let mut got = Vec::new();
    let mut rng = 1;
    for _ in 0..500 {
        let mut batch = Vec::new();
        ch.deliver(client, 64, 0, &mut rng, |m| batch.push(m.clone()));
        if fin {
            let ids: Vec<u64> = batch.iter().map(|m| m.id.0).collect();
            ch.finish(client, &ids, |_, e| panic!("fin: {e}"));
        }
        got.extend(batch);
        if got.len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spill_to_disk_and_back_in_order() {
    let dir = nsqr_testkit::temp_dir("spill");
    let b = broker(&dir, Durability::Default, 3).await;
    let t = b.get_or_create_topic("t").unwrap();
    let ch = t.get_or_create_channel("c").unwrap();
    // Only a publish that goes to disk waits, for the writer's write (default mode).
    for (chunk, in_memory) in [(0..2, true), (2..5, false), (5..12, false), (12..20, false)] {
        let ticket = t.put(&bodies(chunk), Duration::ZERO).unwrap();
        assert_eq!(ticket.is_done(), in_memory);
        ticket.wait().await.unwrap();
    }
    let s = ch.stats(false);
    assert_eq!((s.counts.depth, s.counts.backend_depth), (20, 17));
    let client = consumer(&b);
    ch.add_consumer(Arc::clone(&client)).unwrap();
    let got: Vec<String> = take(&ch, &client, 20, true)
        .await
        .into_iter()
        .map(|(b, _)| b)
        .collect();
    let want: Vec<String> = (0..20).map(|i| format!("m{i:04}")).collect();
    assert_eq!(got, want, "first in, first out across the spill");
    b.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strict_keeps_unfinished_messages_on_disk() {
    let dir = nsqr_testkit::temp_dir("strict");
    let b = broker(&dir, Durability::Strict, 100).await;
    let t = b.get_or_create_topic("t").unwrap();
    let ch = t.get_or_create_channel("c").unwrap();
    let ticket = t.put(&bodies(0..10), Duration::ZERO).unwrap();
    assert!(!ticket.is_done(), "strict publishes wait for the disk");
    ticket.wait().await.unwrap();
    let client = consumer(&b);
    ch.add_consumer(Arc::clone(&client)).unwrap();
    let got = take(&ch, &client, 10, false).await;
    assert_eq!(got.len(), 10);
    // FIN every other message, out of order.
    let fins: Vec<u64> = got.iter().rev().step_by(2).map(|(_, id)| *id).collect();
    ch.finish(&client, &fins, |_, e| panic!("fin: {e}"));
    b.sync_queues();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // A crash now (no close) leaves every unfinished message on disk: open the files the way
    // a restarted node would.
    let mut q = diskqueue::DiskQueue::open(&dir, "t:c", diskqueue::DiskQueueOptions::default())
        .expect("open");
    let mut on_disk = Vec::new();
    while let Some(p) = q.read_next().unwrap() {
        on_disk.push(String::from_utf8(p[26..].to_vec()).unwrap());
    }
    for (body, id) in &got {
        if !fins.contains(id) {
            assert!(
                on_disk.contains(body),
                "{body} unfinished but not on disk: {on_disk:?}"
            );
        }
    }
    drop(q);
    b.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// nsqd's record payload: `[i64 timestamp][u16 attempts][16-byte hex id][body]`.
fn record(ts: i64, attempts: u16, id: &[u8; 16], body: &[u8]) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&ts.to_be_bytes());
    p.extend_from_slice(&attempts.to_be_bytes());
    p.extend_from_slice(id);
    p.extend_from_slice(body);
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_left_on_disk_is_read_back_by_the_chunk_with_every_header_kept() {
    let dir = nsqr_testkit::temp_dir("chunks");
    // 1,500 records of ~230 B: several 64 KiB chunks. Record 700 has an id that is not hex.
    let n = 1500u64;
    {
        let mut q = diskqueue::DiskQueue::open(&dir, "t:c", diskqueue::DiskQueueOptions::default())
            .expect("open");
        let payloads: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let id = if i == 700 {
                    *b"not-a-hex-id-!!!"
                } else {
                    let mut id = [0u8; 16];
                    id.copy_from_slice(format!("{:016x}", 0x5000 + i).as_bytes());
                    id
                };
                let body = format!("body-{i:05}-{}", "x".repeat(200));
                record(
                    1_700_000_000_000_000_000 + i as i64,
                    (i % 3) as u16,
                    &id,
                    body.as_bytes(),
                )
            })
            .collect();
        q.put_batch(&payloads).unwrap();
        q.close().unwrap();
    }
    let b = broker(&dir, Durability::Default, 10_000).await;
    let t = b.get_or_create_topic("t").unwrap();
    let ch = t.get_or_create_channel("c").unwrap();
    let client = consumer(&b);
    ch.add_consumer(Arc::clone(&client)).unwrap();
    let got: Vec<(u64, i64, u16, Vec<u8>)> = take_messages(&ch, &client, n as usize - 1, true)
        .await
        .iter()
        .map(|m| (m.id.0, m.timestamp(), m.attempts, m.body().to_vec()))
        .collect();
    let want: Vec<(u64, i64, u16, Vec<u8>)> = (0..n)
        .filter(|&i| i != 700)
        .map(|i| {
            let body = format!("body-{i:05}-{}", "x".repeat(200));
            // delivery counts one more attempt
            let attempts = (i % 3) as u16 + 1;
            (
                0x5000 + i,
                1_700_000_000_000_000_000 + i as i64,
                attempts,
                body.into_bytes(),
            )
        })
        .collect();
    assert_eq!(got.len(), want.len());
    assert!(
        got == want,
        "first difference at {:?}",
        got.iter().zip(&want).position(|(a, b)| a != b)
    );
    let disk = ch.stats(false).disk_queue.expect("disk stats");
    assert_eq!(disk.undecodable_records, 1);
    b.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_backlog_reaches_a_new_channel_in_order_across_memory_and_disk() {
    let dir = nsqr_testkit::temp_dir("backlog");
    // 50 in memory per queue: the topic keeps 50 of its 120 in memory and 70 on disk; the
    // channel takes runs into its memory up to 50 and writes the rest to its own disk queue.
    let b = broker(&dir, Durability::Default, 50).await;
    let t = b.get_or_create_topic("t").unwrap();
    for chunk in [0..30, 30..70, 70..120] {
        t.put(&bodies(chunk), Duration::ZERO)
            .unwrap()
            .wait()
            .await
            .unwrap();
    }
    let ch = t.get_or_create_channel("c").unwrap();
    // A paused topic keeps a backlog although it has a channel; unpausing hands it on to a
    // channel that has room for only part of a run.
    t.set_paused(true);
    for chunk in [120..160, 160..200] {
        t.put(&bodies(chunk), Duration::ZERO)
            .unwrap()
            .wait()
            .await
            .unwrap();
    }
    t.set_paused(false);
    let client = consumer(&b);
    ch.add_consumer(Arc::clone(&client)).unwrap();
    let got: Vec<String> = take(&ch, &client, 200, true)
        .await
        .into_iter()
        .map(|(b, _)| b)
        .collect();
    let want: Vec<String> = (0..200).map(|i| format!("m{i:04}")).collect();
    assert_eq!(got, want);
    b.shutdown().await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

/// A queue created from a thread of another runtime (nsqrd serves HTTP and the keyspace on
/// runtimes of their own) writes on the broker's runtime: it still reaches the disk after the
/// creating runtime has gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_created_on_another_runtime_outlives_it() {
    let dir = nsqr_testkit::temp_dir("other-runtime");
    let b = Arc::new(broker(&dir, Durability::Strict, 100).await);
    let b2 = Arc::clone(&b);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async { b2.get_or_create_topic("t").unwrap() });
    })
    .join()
    .unwrap();
    let t = b.get_or_create_topic("t").unwrap();
    let ticket = t.put(&bodies(0..3), Duration::ZERO).unwrap();
    tokio::time::timeout(Duration::from_secs(30), ticket.wait())
        .await
        .expect("the strict publish reached the disk")
        .unwrap();
}
