//! `nsqr pub`, `tail`, `stat` and `to-file` as a shell user runs them, against a real nsqrd
//! (from this workspace, or `NSQD_BIN`): a pub | tail round trip, `-n` leaving the rest on
//! the channel, stat's table, to-file's rolling files, and the exit statuses (0 done, 1 a
//! server problem, 2 a usage error).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nsqr_testkit::{daemon_bin, http_request, listen_addr, wait_until};

fn nsqr() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nsqr"))
}

fn temp_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "nsqr-tools-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// nsqrd (or `NSQD_BIN`) on ephemeral loopback ports; killed on drop.
struct Nsqd {
    child: Child,
    tcp: SocketAddr,
    http: SocketAddr,
    dir: PathBuf,
}

impl Nsqd {
    fn start() -> Nsqd {
        let bin = std::env::var_os("NSQD_BIN").map_or_else(|| daemon_bin("nsqrd"), PathBuf::from);
        let dir = temp_dir("nsqd");
        let mut child = Command::new(bin)
            .arg("--tcp-address=127.0.0.1:0")
            .arg("--http-address=127.0.0.1:0")
            .arg("--https-address=")
            .arg(format!("--data-path={}", dir.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let (mut tcp, mut http) = (None, None);
        let deadline = Instant::now() + Duration::from_secs(20);
        while tcp.is_none() || http.is_none() {
            let line = rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("nsqd reports its listeners");
            tcp = tcp.or_else(|| listen_addr(&line, "TCP: listening on "));
            http = http.or_else(|| listen_addr(&line, "HTTP: listening on "));
        }
        Nsqd {
            child,
            tcp: tcp.unwrap(),
            http: http.unwrap(),
            dir,
        }
    }

    /// The topic and its channel, made before anything is published.
    fn create(&self, topic: &str, channel: &str) {
        self.post(&format!("/topic/create?topic={topic}"), b"");
        self.post(
            &format!("/channel/create?topic={topic}&channel={channel}"),
            b"",
        );
    }

    fn post(&self, path: &str, body: &[u8]) {
        let r = http_request(self.http, "POST", path, &[], body);
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }

    fn channel(&self, topic: &str, channel: &str) -> Option<serde_json::Value> {
        let s = http_request(self.http, "GET", "/stats?format=json", &[], b"").json();
        let t = s["topics"]
            .as_array()?
            .iter()
            .find(|t| t["topic_name"] == topic)?
            .clone();
        t["channels"]
            .as_array()?
            .iter()
            .find(|c| c["channel_name"] == channel)
            .cloned()
    }

    fn depth(&self, topic: &str, channel: &str) -> Option<i64> {
        self.channel(topic, channel)?["depth"].as_i64()
    }
}

impl Drop for Nsqd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Run `cmd` with `input` on stdin to its end (at most 30 s).
fn run(mut cmd: Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A tool that refuses its flags exits without reading: a broken pipe here is fine.
    let _ = child.stdin.take().unwrap().write_all(input);
    wait_output(child, Duration::from_secs(30))
}

fn wait_output(mut child: Child, limit: Duration) -> Output {
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{:?} did not finish", child.wait_with_output().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn publish(n: &Nsqd, topic: &str, input: &[u8]) {
    let mut cmd = nsqr();
    cmd.args(["pub", "--topic", topic, "--nsqd-tcp-address"])
        .arg(n.tcp.to_string());
    let out = run(cmd, input);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn pub_then_tail_round_trip() {
    let n = Nsqd::start();
    // tail first: its #ephemeral channel exists only while it runs.
    let tail = nsqr()
        .args(["tail", "--topic", "rt", "-n", "3", "--nsqd-tcp-address"])
        .arg(n.tcp.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        http_request(n.http, "GET", "/stats?format=json", &[], b"").json()["topics"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["topic_name"] == "rt"))
    }));
    publish(&n, "rt", b"first\nsecond\n\nthird\nfourth\n");
    let out = wait_output(tail, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "first\nsecond\nthird\n");

    // A named channel keeps what -n left: two shown, the rest back on the channel.
    n.create("kept", "c");
    publish(&n, "kept", b"1\n2\n3\n4\n5\n");
    let mut cmd = nsqr();
    cmd.args([
        "tail",
        "--topic",
        "kept",
        "--channel",
        "c",
        "-n",
        "2",
        "--print-topic",
    ])
    .arg("--nsqd-tcp-address")
    .arg(n.tcp.to_string());
    let out = run(cmd, b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).lines().count(), 2);
    assert!(text(&out.stdout).lines().all(|l| l.starts_with("kept | ")));
    assert!(wait_until(Duration::from_secs(20), || n.depth("kept", "c") == Some(3)));

    // Whole files, and a delimiter.
    n.create("files", "c");
    let dir = temp_dir("files");
    let f = dir.join("a.txt");
    std::fs::write(&f, b"line one\nline two\n").unwrap();
    let mut cmd = nsqr();
    cmd.args(["pub", "--topic", "files", "--whole", "--nsqd-tcp-address"])
        .arg(n.tcp.to_string())
        .arg(&f);
    assert_eq!(run(cmd, b"").status.code(), Some(0));
    let mut cmd = nsqr();
    cmd.args([
        "pub",
        "--topic",
        "files",
        "--delimiter",
        ",",
        "--rate",
        "100",
    ])
    .arg("--nsqd-tcp-address")
    .arg(n.tcp.to_string());
    assert_eq!(run(cmd, b"x,y,z").status.code(), Some(0));
    assert!(wait_until(Duration::from_secs(20), || n
        .depth("files", "c")
        == Some(4)));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn exit_statuses_and_messages() {
    let n = Nsqd::start();
    let tcp = n.tcp.to_string();
    let status = |args: &[&str]| {
        let mut cmd = nsqr();
        cmd.args(args);
        run(cmd, b"x\n")
    };
    // Usage errors: 2.
    let o = status(&[
        "tail",
        "--topic",
        "t",
        "--nsqd-tcp-address",
        &tcp,
        "--lookupd-http-address",
        "h:1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("not both or neither"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(status(&["pub", "--topic", "t"]).status.code(), Some(2));
    let o = status(&["pub", "--topic", "bad topic", "--nsqd-tcp-address", &tcp]);
    assert_eq!(o.status.code(), Some(2));
    let o = status(&[
        "stat",
        "--topic",
        "t",
        "--channel",
        "c",
        "--nsqd-http-address",
        "http://h:1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("address should not contain scheme"));
    // Nobody listening: 1, with the reason.
    let o = status(&["pub", "--topic", "t", "--nsqd-tcp-address", "127.0.0.1:1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).starts_with("nsqr pub: connect to 127.0.0.1:1"),
        "{}",
        text(&o.stderr)
    );
    // A message too big for the server: 1, with nsqd's error (never a broken pipe).
    let dir = temp_dir("big");
    let big = dir.join("big.bin");
    std::fs::write(&big, vec![b'x'; 10_000_000]).unwrap();
    for _ in 0..3 {
        let mut cmd = nsqr();
        cmd.args([
            "pub",
            "--topic",
            "big",
            "--whole",
            "--nsqd-tcp-address",
            &tcp,
        ])
        .arg(&big);
        let o = run(cmd, b"");
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("E_BAD_MESSAGE PUB message too big 10000000 > 1048576"),
            "{}",
            text(&o.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(dir);
    // The server refuses: 1, with nsqd's error.
    let o = status(&[
        "stat",
        "--topic",
        "none",
        "--channel",
        "c",
        "--nsqd-http-address",
        &n.http.to_string(),
        "--count",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("failed to find channel(c)"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn stat_prints_rows_of_rates_and_depths() {
    let n = Nsqd::start();
    n.create("st", "c");
    publish(&n, "st", b"a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n");
    let mut cmd = nsqr();
    cmd.args(["stat", "--topic", "st", "--channel", "c", "--count", "2"])
        .args(["--interval", "200ms", "--nsqd-http-address"])
        .arg(n.http.to_string());
    let out = run(cmd, b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    assert!(lines[0].starts_with("------rate------+---"));
    assert!(lines[1].contains("ingress") && lines[1].contains("clients"));
    for row in &lines[2..] {
        let cols: Vec<&str> = row.split_whitespace().filter(|c| *c != "|").collect();
        // ingress egress | total mem disk inflt def | req t-o msgs clients
        assert_eq!(cols.len(), 11, "{row}");
        assert_eq!((cols[2], cols[3], cols[9]), ("10", "10", "10"), "{row}");
    }
}

/// Every line of every file under `dir` (gunzipped if `.gz`), and the file count.
fn lines_under(dir: &Path) -> (Vec<String>, usize) {
    let mut lines = Vec::new();
    let mut files = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if !p.is_file() {
            continue;
        }
        files += 1;
        let raw = std::fs::read(&p).unwrap();
        let data = if p.extension().is_some_and(|x| x == "gz") {
            let mut s = Vec::new();
            flate2::read::MultiGzDecoder::new(&raw[..])
                .read_to_end(&mut s)
                .unwrap();
            s
        } else {
            raw
        };
        lines.extend(text(&data).lines().map(str::to_string));
    }
    lines.sort();
    (lines, files)
}

fn to_file(n: &Nsqd, topic: &str, out: &Path, work: &Path, extra: &[&str]) -> Child {
    nsqr()
        .args(["to-file", "--topic", topic, "--channel", "save"])
        .args(["--nsqd-tcp-address", &n.tcp.to_string()])
        .arg(format!("--output-dir={}", out.display()))
        .arg(format!("--work-dir={}", work.display()))
        .args([
            "--sync-interval",
            "100ms",
            "--filename-format",
            "<TOPIC><REV>.<DATETIME>.log",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn stop(child: Child) -> Output {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    wait_output(child, Duration::from_secs(30))
}

#[test]
fn to_file_rolls_files_and_finishes_what_is_written() {
    let n = Nsqd::start();
    let (out, work) = (temp_dir("out"), temp_dir("work"));
    n.create("tf", "save");
    let want: Vec<String> = (0..40).map(|i| format!("message-{i:02}")).collect();
    publish(&n, "tf", want.join("\n").as_bytes());
    // Rotate past 100 bytes: each 11-byte line, so several files.
    let child = to_file(&n, "tf", &out, &work, &["--rotate-size", "100"]);
    assert!(wait_until(Duration::from_secs(20), || {
        n.channel("tf", "save")
            .is_some_and(|c| c["depth"] == 0 && c["in_flight_count"] == 0)
    }));
    let o = stop(child);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (lines, files) = lines_under(&out);
    let mut sorted = want.clone();
    sorted.sort();
    assert_eq!(lines, sorted, "every message once");
    assert!(files >= 4, "rolled into {files} files");
    assert_eq!(
        lines_under(&work).1,
        0,
        "finished files moved out of the work dir"
    );

    // gzip: each sync ends a member; the files read back whole.
    let (out, work) = (temp_dir("gzout"), temp_dir("gzwork"));
    n.create("gz", "save");
    publish(&n, "gz", want.join("\n").as_bytes());
    let child = to_file(&n, "gz", &out, &work, &["--gzip"]);
    assert!(wait_until(Duration::from_secs(20), || {
        n.channel("gz", "save")
            .is_some_and(|c| c["depth"] == 0 && c["in_flight_count"] == 0)
    }));
    let o = stop(child);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (lines, files) = lines_under(&out);
    assert_eq!(lines, sorted);
    assert_eq!(files, 1);
}
