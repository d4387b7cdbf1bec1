//! Faults and bounds of the disk: a full disk (ENOSPC) gives publishers an error, loses
//! nothing already acknowledged, keeps consumers served, and recovers by itself once space
//! returns; `--max-disk-bytes` refuses publishes beyond the bound with a clear error.
//!
//! The full disk is real when the test may mount a 4 MiB tmpfs (root); otherwise it is injected
//! through nsqrd's `NSQRD_FAULT_ENOSPC_FILE` seam (every disk write fails with ENOSPC while
//! that file exists). Set `NSQR_TEST_NO_MOUNT=1` to force the seam.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

struct Disk {
    dir: PathBuf,
    mounted: bool,
    flag: PathBuf,
    filler: PathBuf,
}

impl Disk {
    fn new() -> Disk {
        let dir = temp_dir();
        let mounted = std::env::var_os("NSQR_TEST_NO_MOUNT").is_none()
            && Command::new("mount")
                .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
                .arg(&dir)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
        println!(
            "full disk: {}",
            if mounted {
                "a 4 MiB tmpfs"
            } else {
                "injected (NSQRD_FAULT_ENOSPC_FILE)"
            }
        );
        Disk {
            flag: dir.with_extension("full"),
            filler: dir.join("filler"),
            dir,
            mounted,
        }
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        if self.mounted {
            Vec::new()
        } else {
            vec![("NSQRD_FAULT_ENOSPC_FILE", self.flag.display().to_string())]
        }
    }

    fn start(&self, flags: &[&str]) -> Server {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Server::start_env(server_bin(), self.dir.clone(), flags, &env)
    }

    /// Make the disk full (a few KiB left on the tmpfs).
    fn fill(&self) {
        if !self.mounted {
            std::fs::write(&self.flag, b"").unwrap();
            return;
        }
        let mut f = std::fs::File::create(&self.filler).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        while f.write_all(&chunk).is_ok() {}
        let len = f.metadata().unwrap().len();
        f.set_len(len.saturating_sub(16 * 1024)).unwrap();
    }

    fn free(&self) {
        let _ = std::fs::remove_file(&self.flag);
        let _ = std::fs::remove_file(&self.filler);
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        self.free();
        if self.mounted {
            let _ = Command::new("umount").arg(&self.dir).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn body(i: usize) -> Vec<u8> {
    let mut b = format!("m{i:06}-").into_bytes();
    assert!(i < 1_000_000);
    b.resize(1024, b'.');
    b
}

/// PUB one by one until refused: (acknowledged indexes, the error).
fn publish_until_refused(s: &Server, from: usize, max: usize) -> (Vec<usize>, Option<String>) {
    let mut p = s.connect();
    let mut acked = Vec::new();
    for i in from..from + max {
        p.cmd_body("PUB full", &body(i));
        match p.read_non_heartbeat() {
            Frame::Response(r) if r == b"OK" => acked.push(i),
            Frame::Error(e) => return (acked, Some(e)),
            other => panic!("unexpected {other:?}"),
        }
    }
    (acked, None)
}

/// Receive (and FIN) until every index in `want` has arrived, or `t` passes.
fn receive_all(c: &mut Conn, want: &HashSet<usize>, t: Duration) -> HashSet<usize> {
    let mut seen = HashSet::new();
    let deadline = Instant::now() + t;
    while !want.is_subset(&seen) && Instant::now() < deadline {
        if let Some(m) = c.message_within(Duration::from_millis(500)) {
            c.fin(&m.id_str());
            let i: usize = std::str::from_utf8(&m.body[1..7]).unwrap().parse().unwrap();
            seen.insert(i);
        }
    }
    seen
}

#[test]
fn full_disk_refuses_publishes_keeps_everything_acknowledged_and_recovers() {
    if is_reference() {
        return; // nsqd drops what it cannot write (and has no strict mode)
    }
    for mode in ["--durability=strict", "--durability=default"] {
        let disk = Disk::new();
        let s = disk.start(&[
            mode,
            "--mem-queue-size=10",
            "--max-bytes-per-file=32768",
            "--sync-timeout=200ms",
        ]);
        assert_eq!(s.post("/topic/create?topic=full", b"").status, 200);
        assert_eq!(
            s.post("/channel/create?topic=full&channel=c", b"").status,
            200
        );
        let (mut acked, err) = publish_until_refused(&s, 0, 40);
        assert_eq!((acked.len(), err), (40, None), "{mode}");

        disk.fill();
        let (more, err) = publish_until_refused(&s, 40, 5000);
        acked.extend(more);
        let err = err.unwrap_or_else(|| panic!("{mode}: never refused"));
        assert!(
            err.starts_with("E_PUB_FAILED PUB failed disk "),
            "{mode}: {err}"
        );
        assert!(
            err.contains("No space left on device") || err.contains("unavailable"),
            "{mode}: {err}"
        );
        let ping = s.get("/ping");
        assert_eq!(ping.status, 500, "{mode}");
        assert!(ping.text().starts_with("NOK - "), "{mode}: {}", ping.text());
        if mode.ends_with("strict") {
            // Over HTTP too (a write that fails frees its partial bytes, so on a real full
            // disk the odd small publish may still fit).
            let mut refused = None;
            for i in 0..50 {
                let r = s.post("/pub?topic=full", &body(90_000 + i));
                if r.status == 200 {
                    acked.push(90_000 + i);
                } else {
                    refused = Some(r);
                    break;
                }
            }
            let r = refused.expect("HTTP publish never refused");
            assert_eq!(r.status, 500, "{mode}");
            assert!(
                r.text()
                    .contains("PUB_FAILED: disk write to queue full:c failed"),
                "{}",
                r.text()
            );
        }

        // Consumers are still served: everything acknowledged arrives while the disk is full.
        let want: HashSet<usize> = acked.iter().copied().collect();
        let mut c = s.connect();
        c.sub("full", "c");
        c.rdy(100);
        let seen = receive_all(&mut c, &want, Duration::from_secs(10));
        let lost: Vec<_> = want.difference(&seen).collect();
        assert!(
            lost.is_empty(),
            "{mode}: lost {} of {}",
            lost.len(),
            want.len()
        );
        c.close();

        // Space returns: publishing works again by itself, and health is back.
        disk.free();
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut recovered = Vec::new();
        while recovered.len() < 30 && Instant::now() < deadline {
            let (ok, _) =
                publish_until_refused(&s, 100_000 + recovered.len(), 30 - recovered.len());
            if ok.is_empty() {
                std::thread::sleep(Duration::from_millis(100));
            }
            recovered.extend(ok);
        }
        assert_eq!(recovered.len(), 30, "{mode}: publishing did not recover");
        assert!(
            wait_until(Duration::from_secs(5), || s.get("/ping").status == 200),
            "{mode}: health did not recover"
        );
        let mut c = s.connect();
        c.sub("full", "c");
        c.rdy(100);
        let want: HashSet<usize> = recovered.into_iter().collect();
        let seen = receive_all(&mut c, &want, Duration::from_secs(10));
        let mut missing: Vec<_> = want.difference(&seen).collect();
        missing.sort();
        assert!(
            missing.is_empty(),
            "{mode}: lost after recovery: {missing:?}; extra {:?}; stats {}; log {:?}",
            seen.difference(&want).collect::<Vec<_>>(),
            s.channel_stats("full", "c").unwrap_or_default(),
            s.log_lines()
        );
        drop(c);
        drop(s);
    }
}

#[test]
fn max_disk_bytes_refuses_publishes_beyond_the_bound() {
    if is_reference() {
        return; // not an nsqd flag
    }
    for mode in ["--durability=strict", "--durability=default"] {
        let s = Server::start(&[
            mode,
            "--max-disk-bytes=20000",
            "--max-bytes-per-file=4096",
            "--mem-queue-size=10",
            "--sync-timeout=100ms",
        ]);
        assert_eq!(s.post("/topic/create?topic=full", b"").status, 200);
        assert_eq!(
            s.post("/channel/create?topic=full&channel=c", b"").status,
            200
        );
        let (acked, err) = publish_until_refused(&s, 0, 1000);
        let err = err.unwrap_or_else(|| panic!("{mode}: never refused"));
        assert_eq!(
            err.split(" (").next(),
            Some("E_PUB_FAILED PUB failed disk queue full:c is full"),
            "{mode}: {err}"
        );
        assert!(err.contains("max-disk-bytes 20000"), "{mode}: {err}");
        // 1 KiB messages: the bound lets 19 of them on disk (plus 10 in memory by default).
        let on_disk = if mode.ends_with("strict") { 0 } else { 10 };
        assert!(
            (18 + on_disk..=19 + on_disk).contains(&acked.len()),
            "{mode}: {}",
            acked.len()
        );
        let r = s.post("/pub?topic=full", &body(5000));
        assert_eq!(r.status, 500, "{mode}");
        assert!(
            r.text().contains("PUB_FAILED: disk queue full:c is full"),
            "{}",
            r.text()
        );

        // Consuming frees the disk; publishing works again.
        let mut c = s.connect();
        c.sub("full", "c");
        c.rdy(100);
        let want: HashSet<usize> = acked.iter().copied().collect();
        assert!(want.is_subset(&receive_all(&mut c, &want, Duration::from_secs(10))));
        let mut ok = false;
        let deadline = Instant::now() + Duration::from_secs(5);
        while !ok && Instant::now() < deadline {
            ok = s
                .post("/mpub?topic=full", &[body(7000), body(7001)].join(&b'\n'))
                .status
                == 200;
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(ok, "{mode}: still refused after the queue was consumed");
    }
}
