//! A lookupd that starts after the node (containers start in any order): topics created while it
//! was down must reach it soon after it comes up, not at the next 15 s PING. Against a real
//! lookupd: this workspace's `nsqrlookupd`, or the binary named by `NSQLOOKUPD_BIN` (e.g.
//! upstream nsqlookupd). The registration is awaited with a generous timeout and its delay
//! printed (nsqrd: about a second; upstream nsqd under `NSQD_BIN`, which only reconnects on a
//! command or PING: up to 15 s). That nsqrd retries sooner than the PING is checked by the unit
//! tests of `tasks/lookupd.rs`, not by timing here.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;
use nsqr_testkit::Daemon;

pub(crate) fn lookupd_bin() -> PathBuf {
    match std::env::var_os("NSQLOOKUPD_BIN") {
        Some(p) => PathBuf::from(p),
        None => nsqr_testkit::daemon_bin("nsqrlookupd"),
    }
}

/// A lookupd on a fixed TCP address; killed on drop.
pub(crate) struct Lookupd {
    _proc: Daemon,
    pub(crate) http: SocketAddr,
}

impl Lookupd {
    pub(crate) fn start(bin: &Path, tcp: SocketAddr) -> Lookupd {
        let mut proc = Daemon::spawn(
            Command::new(bin)
                .arg(format!("--tcp-address={tcp}"))
                .arg("--http-address=127.0.0.1:0")
                .arg("--broadcast-address=127.0.0.1"),
        );
        let addrs = proc.listeners(
            Duration::from_secs(15),
            &["TCP: listening on ", "HTTP: listening on "],
        );
        Lookupd {
            _proc: proc,
            http: addrs[1],
        }
    }

    /// Whether lookupd lists a producer for `topic`.
    fn knows(&self, topic: &str) -> bool {
        let r = http_request(
            self.http,
            "GET",
            &format!("/lookup?topic={topic}"),
            &[],
            b"",
        );
        r.status == 200
            && r.json()["producers"]
                .as_array()
                .is_some_and(|p| !p.is_empty())
    }

    /// How long until lookupd knows `topic` (polled; None after 30 s).
    fn time_to_know(&self, topic: &str) -> Option<Duration> {
        let t0 = Instant::now();
        wait_until(Duration::from_secs(30), || self.knows(topic)).then(|| t0.elapsed())
    }
}

/// A loopback address nothing listens on (yet).
pub(crate) fn free_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], nsqr_testkit::free_port()))
}

/// Wait (bounded) until the node has tried its lookupd and failed. nsqd does not log its first
/// attempt (made at startup); it gets a second instead.
fn wait_for_connect_failure(s: &Server) {
    if is_reference() {
        std::thread::sleep(Duration::from_secs(1));
        return;
    }
    let mut log = Vec::new();
    let failed = wait_until(Duration::from_secs(15), || {
        log.extend(s.log_lines());
        log.iter().any(|l| l.contains("connect failed"))
    });
    assert!(
        failed,
        "no failed lookupd connection logged:\n{}",
        log.join("\n")
    );
}

#[test]
fn a_topic_created_while_lookupd_was_down_is_registered_when_it_comes_up() {
    let bin = lookupd_bin(); // built first: a build must not count as the node's delay
    let addr = free_addr();
    let s = Server::start(&[&format!("--lookupd-tcp-address={addr}")]);
    // The node's first PING (which reconnects in any implementation) is due 15 s after this.
    let node_up = Instant::now();
    wait_for_connect_failure(&s);
    // Past the node's retry delay after that failure (nsqd: no retry until a command or PING).
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(s.post("/topic/create?topic=while_down", b"").status, 200);

    let l = Lookupd::start(&bin, addr);
    let lookupd_up = Instant::now();
    let took = l.time_to_know("while_down");
    println!(
        "topic created while lookupd was down: registered {took:?} after lookupd came up \
         ({:?} after the node started)",
        lookupd_up.duration_since(node_up)
    );
    took.expect("never registered");
}

#[test]
fn a_lookupd_starting_just_after_the_node_learns_topics_created_right_after() {
    // The reported case: lookupd up shortly after the node, a topic created at once.
    let bin = lookupd_bin(); // built first: a build must not count as the node's delay
    let addr = free_addr();
    let s = Server::start(&[&format!("--lookupd-tcp-address={addr}")]);
    wait_for_connect_failure(&s);
    let l = Lookupd::start(&bin, addr);
    assert_eq!(s.post("/topic/create?topic=right_after", b"").status, 200);
    let took = l.time_to_know("right_after");
    println!("topic created right after lookupd came up: registered {took:?} later");
    took.expect("never registered");
}
