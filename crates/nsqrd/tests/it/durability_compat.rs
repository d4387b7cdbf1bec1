//! The data directory is nsqd's, both ways: a directory written by this test in nsqd's
//! documented format (`nsqd.dat` JSON, `<queue>.diskqueue.<n>.dat` records, the three-line
//! `<queue>.diskqueue.meta.dat`) is adopted by nsqrd; and what nsqrd leaves behind at shutdown
//! is read back by this test's own reader of that format. Neither side uses nsqr's code.
//! With `NSQD_REF_BIN=/path/to/nsqd` the nsqrd-written directory is also opened by that nsqd.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;

/// One nsqd record payload: `[i64 ts][u16 attempts][16-byte hex id][body]`.
fn payload(id: u64, ts: i64, attempts: u16, body: &[u8]) -> Vec<u8> {
    let mut p = ts.to_be_bytes().to_vec();
    p.extend_from_slice(&attempts.to_be_bytes());
    p.extend_from_slice(format!("{id:016x}").as_bytes());
    p.extend_from_slice(body);
    p
}

/// Writes data files (one `Vec` of payloads per file) and the metadata of queue `name`.
fn write_queue(dir: &Path, name: &str, files: &[Vec<Vec<u8>>]) {
    let mut depth = 0;
    let mut last_len = 0;
    for (n, records) in files.iter().enumerate() {
        let mut bytes = Vec::new();
        for p in records {
            bytes.extend_from_slice(&(p.len() as i32).to_be_bytes());
            bytes.extend_from_slice(p);
            depth += 1;
        }
        last_len = bytes.len();
        std::fs::write(dir.join(format!("{name}.diskqueue.{n:06}.dat")), bytes).unwrap();
    }
    let last = files.len().saturating_sub(1);
    std::fs::write(
        dir.join(format!("{name}.diskqueue.meta.dat")),
        format!("{depth}\n0,0\n{last},{last_len}\n"),
    )
    .unwrap();
}

#[derive(Debug)]
struct Record {
    ts: i64,
    attempts: u16,
    id: String,
    body: Vec<u8>,
}

/// Reads queue `name` the way nsqd does: metadata, then records from the read position to the
/// write position across the data files. Returns (metadata depth, records).
fn read_queue(dir: &Path, name: &str) -> (i64, Vec<Record>) {
    let meta = std::fs::read_to_string(dir.join(format!("{name}.diskqueue.meta.dat"))).unwrap();
    let lines: Vec<&str> = meta.split('\n').collect();
    assert_eq!((lines.len(), lines[3]), (4, ""), "metadata {meta:?}");
    let pos = |l: &str| -> (usize, usize) {
        let (a, b) = l.split_once(',').unwrap();
        (a.parse().unwrap(), b.parse().unwrap())
    };
    let depth: i64 = lines[0].parse().unwrap();
    let ((rf, rp), (wf, wp)) = (pos(lines[1]), pos(lines[2]));
    let mut out = Vec::new();
    for n in rf..=wf {
        let path = dir.join(format!("{name}.diskqueue.{n:06}.dat"));
        let bytes = std::fs::read(&path).unwrap_or_default();
        let mut at = if n == rf { rp } else { 0 };
        let end = if n == wf { wp } else { bytes.len() };
        while at < end {
            let len = i32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
            let p = &bytes[at + 4..at + 4 + len];
            out.push(Record {
                ts: i64::from_be_bytes(p[0..8].try_into().unwrap()),
                attempts: u16::from_be_bytes([p[8], p[9]]),
                id: String::from_utf8(p[10..26].to_vec()).unwrap(),
                body: p[26..].to_vec(),
            });
            at += 4 + len;
        }
    }
    (depth, out)
}

fn fresh_dir() -> PathBuf {
    temp_dir()
}

#[test]
fn adopts_a_data_directory_written_in_nsqds_format() {
    let dir = fresh_dir();
    std::fs::write(
        dir.join("nsqd.dat"),
        r#"{"topics":[{"name":"legacy","paused":false,"channels":[{"name":"c","paused":false},{"name":"p","paused":true}]},{"name":"solo","paused":false,"channels":null}],"version":"1.3.0"}"#,
    )
    .unwrap();
    let ts = 1_700_000_000_000_000_000i64;
    let rec = |i: u64, attempts: u16| {
        payload(
            0xa000 + i,
            ts + i as i64,
            attempts,
            format!("legacy-{i}").as_bytes(),
        )
    };
    // Two data files, as after a roll; the first message was tried twice before.
    write_queue(
        &dir,
        "legacy:c",
        &[
            vec![rec(0, 2), rec(1, 0), rec(2, 0)],
            vec![rec(3, 0), rec(4, 0)],
        ],
    );
    write_queue(&dir, "legacy:p", &[vec![rec(9, 0)]]);
    write_queue(&dir, "legacy", &[]);
    let solo: Vec<Vec<u8>> = (0..4)
        .map(|i| payload(0xb000 + i, ts, 0, format!("solo-{i}").as_bytes()))
        .collect();
    write_queue(&dir, "solo", &[solo]);

    let s = Server::start_in(dir, &[]);
    let c = s.channel_stats("legacy", "c").expect("legacy/c");
    assert_eq!(
        (c["depth"].as_i64(), c["backend_depth"].as_i64()),
        (Some(5), Some(5))
    );
    let p = s.channel_stats("legacy", "p").expect("legacy/p");
    assert_eq!(
        (p["depth"].as_i64(), p["paused"].as_bool()),
        (Some(1), Some(true))
    );
    assert_eq!(s.topic_stat("solo", "depth"), Some(4));

    let mut conn = s.connect();
    conn.sub("legacy", "c");
    conn.rdy(10);
    for i in 0..5u64 {
        let m = conn.expect_message();
        assert_eq!(m.id_str(), format!("{:016x}", 0xa000 + i));
        assert_eq!(m.timestamp, ts + i as i64);
        assert_eq!(m.attempts, if i == 0 { 3 } else { 1 });
        assert_eq!(m.body, format!("legacy-{i}").as_bytes());
        conn.fin(&m.id_str());
    }
    let mut conn2 = s.connect();
    conn2.sub("solo", "x");
    conn2.rdy(10);
    let got: BTreeSet<Vec<u8>> = conn2
        .expect_messages(4)
        .into_iter()
        .map(|m| m.body)
        .collect();
    assert_eq!(
        got,
        (0..4).map(|i| format!("solo-{i}").into_bytes()).collect()
    );
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stat("legacy", "c", "in_flight_count") == Some(0)
    }));
    let (code, dir) = s.terminate_keep();
    assert_eq!(code, Some(0));
    assert_eq!(
        read_queue(&dir, "legacy:c").1.len(),
        0,
        "finished messages are gone"
    );
    assert_eq!(read_queue(&dir, "legacy:p").1.len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

/// nsqrd with a tiny memory queue, a backlog on disk, one message in flight, one deferred, a
/// topic without channels and a paused channel; then SIGTERM. Returns the data directory.
fn nsqrd_directory() -> PathBuf {
    let s = Server::start(&["--mem-queue-size=2"]);
    assert_eq!(s.post("/topic/create?topic=w", b"").status, 200);
    assert_eq!(
        s.post("/channel/create?topic=w&channel=c2", b"").status,
        200
    );
    assert_eq!(s.post("/channel/pause?topic=w&channel=c2", b"").status, 200);
    let mut conn = s.connect();
    conn.sub("w", "c");
    conn.rdy(1);
    assert_eq!(
        s.post("/mpub?topic=w", b"w0\nw1\nw2\nw3\nw4\nw5").status,
        200
    );
    let first = conn.expect_message();
    assert_eq!(s.post("/pub?topic=w&defer=60000", b"wd").status, 200);
    assert_eq!(s.post("/mpub?topic=w2", b"x0\nx1\nx2").status, 200);
    assert!(wait_until(Duration::from_secs(5), || {
        s.channel_stat("w", "c", "deferred_count") == Some(1)
    }));
    assert_eq!(first.body, b"w0");
    let (code, dir) = s.terminate_keep();
    assert_eq!(code, Some(0));
    dir
}

#[test]
fn nsqrd_data_directory_reads_back_in_nsqds_format() {
    let dir = nsqrd_directory();
    let md: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("nsqd.dat")).unwrap()).unwrap();
    assert_eq!(md["version"], "1.3.0");
    let topics = md["topics"].as_array().unwrap();
    let w = topics.iter().find(|t| t["name"] == "w").expect("w");
    let w2 = topics.iter().find(|t| t["name"] == "w2").expect("w2");
    assert!(w2["channels"].is_null());
    let chans = w["channels"].as_array().unwrap();
    assert!(chans
        .iter()
        .any(|c| c["name"] == "c" && c["paused"] == false));
    assert!(chans
        .iter()
        .any(|c| c["name"] == "c2" && c["paused"] == true));

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    for (queue, want) in [
        ("w:c", vec!["w0", "w1", "w2", "w3", "w4", "w5", "wd"]),
        ("w:c2", vec!["w0", "w1", "w2", "w3", "w4", "w5", "wd"]),
        ("w2", vec!["x0", "x1", "x2"]),
    ] {
        let (depth, recs) = read_queue(&dir, queue);
        assert_eq!(depth as usize, recs.len(), "{queue}: metadata depth");
        let bodies: BTreeSet<&[u8]> = recs.iter().map(|r| r.body.as_slice()).collect();
        let want: BTreeSet<&[u8]> = want.iter().map(|b| b.as_bytes()).collect();
        assert_eq!(bodies, want, "{queue}");
        for r in &recs {
            assert!(
                r.id.bytes().all(|b| b.is_ascii_hexdigit()),
                "{queue}: id {:?}",
                r.id
            );
            assert!(
                (now - r.ts).abs() < 120_000_000_000,
                "{queue}: timestamp {}",
                r.ts
            );
            // Only the message that was in flight on w/c was delivered (once).
            let delivered = queue == "w:c" && r.body == b"w0";
            assert_eq!(r.attempts, u16::from(delivered), "{queue}: {:?}", r.body);
        }
    }
    if !is_reference() {
        // The deferred message's due time is kept beside the queue (nsqd ignores the file).
        let side = std::fs::read_to_string(dir.join("w:c.nsqr.deferred.dat")).unwrap();
        assert_eq!(side.lines().count(), 2, "{side}");
    }

    if let Some(nsqd) = std::env::var_os("NSQD_REF_BIN") {
        // The reference nsqd takes the directory over and delivers everything.
        let s = Server::start_bin_in(PathBuf::from(nsqd), dir.clone(), &[]);
        let mut conn = s.connect();
        conn.sub("w", "c");
        conn.rdy(10);
        let got: BTreeSet<Vec<u8>> = conn
            .expect_messages(7)
            .into_iter()
            .map(|m| m.body)
            .collect();
        assert_eq!(got.len(), 7);
        drop(s);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn corruption_is_reported_and_a_torn_tail_is_truncated() {
    if is_reference() {
        return; // nsqd reports neither in /stats
    }
    let dir = fresh_dir();
    std::fs::write(
        dir.join("nsqd.dat"),
        r#"{"topics":[{"name":"bad","paused":false,"channels":[{"name":"c","paused":false}]},{"name":"torn","paused":false,"channels":[{"name":"c","paused":false}]}],"version":"1.3.0"}"#,
    )
    .unwrap();
    let ts = 1_700_000_000_000_000_000i64;
    let rec = |i: u64| payload(0xc000 + i, ts, 0, format!("r-{i}").as_bytes());
    // bad:c: record 1 of file 0 gets an impossible length; file 1 is intact.
    write_queue(
        &dir,
        "bad:c",
        &[vec![rec(0), rec(1), rec(2)], vec![rec(3), rec(4)]],
    );
    let f0 = dir.join("bad:c.diskqueue.000000.dat");
    let mut bytes = std::fs::read(&f0).unwrap();
    let second = 4 + rec(0).len();
    bytes[second..second + 4].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
    std::fs::write(&f0, bytes).unwrap();
    // torn:c: four records, then half of a fifth (a write cut by a crash).
    write_queue(&dir, "torn:c", &[vec![rec(0), rec(1), rec(2), rec(3)]]);
    let mut torn = (rec(4).len() as i32).to_be_bytes().to_vec();
    torn.extend_from_slice(&rec(4)[..10]);
    let t0 = dir.join("torn:c.diskqueue.000000.dat");
    let mut bytes = std::fs::read(&t0).unwrap();
    let whole = bytes.len() as u64;
    bytes.extend_from_slice(&torn);
    std::fs::write(&t0, bytes).unwrap();

    let s = Server::start_in(dir, &[]);
    let torn_stats = s.channel_stats("torn", "c").expect("torn/c");
    assert_eq!(torn_stats["depth"], 4);
    assert_eq!(
        torn_stats["disk_queue"]["torn_tails_truncated"], 1,
        "{torn_stats}"
    );
    assert_eq!(torn_stats["disk_queue"]["corrupt_files"], 0);
    assert_eq!(std::fs::metadata(&t0).unwrap().len(), whole);

    let mut conn = s.connect();
    conn.sub("bad", "c");
    conn.rdy(10);
    let got: Vec<Vec<u8>> = conn
        .expect_messages(3)
        .into_iter()
        .map(|m| m.body)
        .collect();
    assert_eq!(got, [b"r-0".to_vec(), b"r-3".to_vec(), b"r-4".to_vec()]);
    let bad = s.channel_stats("bad", "c").expect("bad/c");
    assert_eq!(bad["disk_queue"]["corrupt_files"], 1, "{bad}");
    let why = bad["disk_queue"]["last_corruption"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        why.contains("invalid message read size (2147483647)"),
        "{why}"
    );
    assert!(
        s.log_lines()
            .iter()
            .any(|l| l.contains("jump to next file")),
        "corruption not logged"
    );
    let mut conn2 = s.connect();
    conn2.sub("torn", "c");
    conn2.rdy(10);
    assert_eq!(conn2.expect_messages(4).len(), 4);
    assert!(conn2.expect_silence(Duration::from_millis(200)));
}
