//! Faults and bounds of the disk: a full disk (ENOSPC) gives publishers an error, loses
//! nothing already acknowledged, keeps consumers served, and recovers by itself once space
//! returns; `--max-disk-bytes` refuses publishes beyond the bound with a clear error.
//!
//! The full disk runs twice when the test may mount (root): on a real 4 MiB tmpfs, and through
//! nsqrd's `NSQRD_FAULT_ENOSPC_FILE` seam (every disk write fails with ENOSPC while that file
//! exists); otherwise only through the seam, and the output says the tmpfs variant did not
//! run. `NSQR_TEST_NO_MOUNT=1` forces the seam only; `NSQR_TEST_REQUIRE_MOUNT=1` fails the
//! test when the tmpfs cannot be mounted. Each mode prints its exact counts.

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// How the disk is made full.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    /// A 4 MiB tmpfs, filled with a file.
    Tmpfs,
    /// `NSQRD_FAULT_ENOSPC_FILE`.
    Injected,
}

struct Disk {
    dir: PathBuf,
    fault: Fault,
    flag: PathBuf,
    filler: PathBuf,
}

impl Disk {
    /// A data directory for `fault`; None if a tmpfs cannot be mounted here.
    fn new(fault: Fault) -> Option<Disk> {
        let dir = temp_dir();
        if fault == Fault::Tmpfs {
            let mounted = std::env::var_os("NSQR_TEST_NO_MOUNT").is_none()
                && Command::new("mount")
                    .args(["-t", "tmpfs", "-o", "size=4m", "tmpfs"])
                    .arg(&dir)
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
            if !mounted {
                let _ = std::fs::remove_dir_all(&dir);
                return None;
            }
        }
        Some(Disk {
            flag: dir.with_extension("full"),
            filler: dir.join("filler"),
            dir,
            fault,
        })
    }

    fn env(&self) -> Vec<(&'static str, String)> {
        match self.fault {
            Fault::Tmpfs => Vec::new(),
            Fault::Injected => {
                vec![("NSQRD_FAULT_ENOSPC_FILE", self.flag.display().to_string())]
            }
        }
    }

    fn start(&self, flags: &[&str]) -> Server {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Server::start_env(server_bin(), self.dir.clone(), flags, &env)
    }

    /// Make the disk full (a few KiB left on the tmpfs).
    fn fill(&self) {
        if self.fault == Fault::Injected {
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
        if self.fault == Fault::Tmpfs {
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

/// The full-disk scenario for one server mode; prints and checks its counts.
fn full_disk_run(fault: Fault, mode: &[&str]) {
    let label = format!("{fault:?} {}", mode.join(" "));
    let disk = Disk::new(fault).expect("mountable");
    let mut flags = vec!["--max-bytes-per-file=32768", "--sync-timeout=200ms"];
    flags.extend_from_slice(mode);
    let s = disk.start(&flags);
    assert_eq!(s.post("/topic/create?topic=full", b"").status, 200);
    assert_eq!(
        s.post("/channel/create?topic=full&channel=c", b"").status,
        200
    );
    let (mut acked, err) = publish_until_refused(&s, 0, 40);
    assert_eq!((acked.len(), err), (40, None), "{label}");

    disk.fill();
    let (more, err) = publish_until_refused(&s, 40, 5000);
    let while_full = more.len();
    acked.extend(more);
    let err = err.unwrap_or_else(|| panic!("{label}: never refused"));
    assert!(
        err.starts_with("E_PUB_FAILED PUB failed disk "),
        "{label}: {err}"
    );
    assert!(
        err.contains("No space left on device") || err.contains("unavailable"),
        "{label}: {err}"
    );
    let ping = s.get("/ping");
    assert_eq!(ping.status, 500, "{label}");
    assert!(
        ping.text().starts_with("NOK - "),
        "{label}: {}",
        ping.text()
    );
    let mut http = "not tried";
    if mode.contains(&"--durability=strict") || mode.contains(&"--mem-queue-size=0") {
        // Over HTTP too (a write that fails frees its partial bytes, so on a real full disk the
        // odd small publish may still fit).
        let mut refused = None;
        for i in 0..50 {
            let r = s.post("/pub?topic=full", &body(90_000 + i));
            if r.status == 200 {
                acked.push(90_000 + i);
            } else {
                http = "refused (500)";
                refused = Some(r);
                break;
            }
        }
        let r = refused.expect("HTTP publish never refused");
        assert_eq!(r.status, 500, "{label}");
        assert!(
            r.text()
                .contains("PUB_FAILED: disk write to queue full:c failed")
                || r.text()
                    .contains("PUB_FAILED: disk queue full:c unavailable"),
            "{label}: {}",
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
    // A refused publish may still be delivered (the writer keeps what it could not write).
    let extra = seen.difference(&want).count();
    println!(
        "{label}: acknowledged {} before the disk filled, {while_full} while full, then refused \
         ({err}); HTTP {http}; acknowledged {} in all, received {} while full: lost {}, refused \
         but delivered {extra}",
        40,
        want.len(),
        seen.len(),
        lost.len()
    );
    assert!(
        lost.is_empty(),
        "{label}: lost {} of {}",
        lost.len(),
        want.len()
    );
    c.close();

    // Space returns: publishing works again by itself, and health is back.
    disk.free();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut recovered = Vec::new();
    while recovered.len() < 30 && Instant::now() < deadline {
        let (ok, _) = publish_until_refused(&s, 100_000 + recovered.len(), 30 - recovered.len());
        if ok.is_empty() {
            std::thread::sleep(Duration::from_millis(100));
        }
        recovered.extend(ok);
    }
    assert_eq!(recovered.len(), 30, "{label}: publishing did not recover");
    assert!(
        wait_until(Duration::from_secs(5), || s.get("/ping").status == 200),
        "{label}: health did not recover"
    );
    let mut c = s.connect();
    c.sub("full", "c");
    c.rdy(100);
    let want: HashSet<usize> = recovered.into_iter().collect();
    let seen = receive_all(&mut c, &want, Duration::from_secs(10));
    let mut missing: Vec<_> = want.difference(&seen).collect();
    missing.sort();
    println!(
        "{label}: after space returned: acknowledged {}, received {}, lost {}",
        want.len(),
        want.intersection(&seen).count(),
        missing.len()
    );
    assert!(
        missing.is_empty(),
        "{label}: lost after recovery: {missing:?}; extra {:?}; stats {}; log {:?}",
        seen.difference(&want).collect::<Vec<_>>(),
        s.channel_stats("full", "c").unwrap_or_default(),
        s.log_lines()
    );
}

#[test]
fn full_disk_refuses_publishes_keeps_everything_acknowledged_and_recovers() {
    if is_reference() {
        return; // nsqd drops what it cannot write (and has no strict mode)
    }
    let mut faults = vec![Fault::Injected];
    if Disk::new(Fault::Tmpfs).is_some() {
        faults.insert(0, Fault::Tmpfs);
        println!("full disk: a 4 MiB tmpfs, then the injected ENOSPC seam");
    } else {
        assert!(
            std::env::var_os("NSQR_TEST_REQUIRE_MOUNT").is_none(),
            "NSQR_TEST_REQUIRE_MOUNT is set but a tmpfs cannot be mounted"
        );
        println!(
            "full disk: the injected ENOSPC seam only; the tmpfs variant did NOT run (no mount \
             here, or NSQR_TEST_NO_MOUNT)"
        );
    }
    for fault in faults {
        for mode in [
            &["--durability=strict", "--mem-queue-size=10"][..],
            &["--durability=default", "--mem-queue-size=10"],
            &["--durability=default", "--mem-queue-size=0"],
        ] {
            full_disk_run(fault, mode);
        }
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
