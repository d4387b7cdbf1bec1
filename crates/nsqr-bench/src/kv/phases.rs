//! The keyspace workloads, each against one server (`Target`), each adding its figures to a
//! map of metrics:
//!
//! - `setget`: `redis-benchmark -t set` then `-t get` (`-n`, `-r`, `-c`, and `-P` for the
//!   pipelined variant), the server's CPU time read from /proc around each run;
//! - `nubmq`: nubmq's own benchmark (`sync_test.go`): N connections, each 20k SETs then 20k
//!   GETs of 8-byte values over 100k keys, one request at a time;
//! - `expiry`: keys holding a 1-hour TTL, then keys sharing one deadline; how late their
//!   `expired` events arrive on `__keyevent@0__:expired` (needs `notify-keyspace-events Ex`,
//!   set through CONFIG SET);
//! - `rss`: resident memory per key after writing N keys with 32-byte values;
//! - `multi`: transactions of five commands (`MULTI`, `INCR a`, `INCR b`, `SET c`,
//!   `GET c`, `GET a`, `EXEC`), pipelined, from our own client (redis-benchmark sends one
//!   command per request).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use resp_wire::Frame;

use super::conn::RespConn;
use crate::fail::{err, Result};
use crate::procstat;
use crate::stats::nearest_rank;

pub type Metrics = BTreeMap<String, f64>;

/// The server measured.
#[derive(Debug, Clone)]
pub struct Target {
    pub addr: String,
    /// For CPU and RSS (from /proc); `None` skips them.
    pub pid: Option<u32>,
}

/// The workloads' sizes (from the flags).
#[derive(Debug, Clone)]
pub struct Spec {
    pub requests: u64,
    pub clients: usize,
    pub pipeline: usize,
    pub keyspace: u64,
    pub nubmq_connections: usize,
    pub nubmq_ops: usize,
    pub expiry_volatile: usize,
    pub expiry_shared: usize,
    pub expiry_timeout: Duration,
    pub rss_keys: usize,
    pub mem_elements: usize,
    pub redis_benchmark: PathBuf,
}

/// Keys per pipelined batch when filling the keyspace.
const FILL_BATCH: usize = 1000;
/// How far ahead the shared deadline is set (the keys must all be written before it).
const EXPIRY_LEAD: Duration = Duration::from_secs(2);
/// nubmq's benchmark spreads its keys over this many.
const NUBMQ_KEYS: usize = 100_000;

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

fn cpu(t: &Target) -> Option<Duration> {
    t.pid.and_then(|p| procstat::cpu_time(p).ok())
}

/// Server CPU per operation in µs between two readings.
fn cpu_per_op(before: Option<Duration>, after: Option<Duration>, ops: u64) -> Option<f64> {
    Some((after? - before?).as_secs_f64() * 1e6 / ops.max(1) as f64)
}

/// One `redis-benchmark` run of one test; its requests per second.
async fn redis_benchmark(t: &Target, s: &Spec, test: &str, pipeline: usize) -> Result<f64> {
    let (host, port) = t
        .addr
        .rsplit_once(':')
        .ok_or_else(|| err(format!("bad address {}", t.addr)))?;
    let mut cmd = std::process::Command::new(&s.redis_benchmark);
    cmd.args(["-h", host, "-p", port, "-t", test, "--csv"])
        .args(["-n", &s.requests.to_string()])
        .args(["-r", &s.keyspace.to_string()])
        .args(["-c", &s.clients.to_string()])
        .args(["-P", &pipeline.to_string()]);
    let bin = s.redis_benchmark.display().to_string();
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await?
        .map_err(|e| err(format!("cannot run {bin}: {e}")))?;
    let text = String::from_utf8_lossy(&out.stdout);
    csv_rps(&text, test).ok_or_else(|| {
        err(format!(
            "no {test} result from redis-benchmark: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    })
}

/// The requests per second of `test` in redis-benchmark's `--csv` output
/// (`"test","rps","avg_latency_ms",...` then `"SET","123456.79",...`; some tests are named
/// with a note: `"LRANGE_100 (first 100 elements)"`, `"MSET (10 keys)"`). The preparatory run
/// redis-benchmark makes before LRANGE, `"LPUSH (needed to benchmark LRANGE)"`, is not LPUSH's.
fn csv_rps(text: &str, test: &str) -> Option<f64> {
    let want = test.to_ascii_uppercase();
    let line = text.lines().find(|l| {
        let name = l.split(',').next().unwrap_or("").trim_matches('"');
        match name.strip_prefix(want.as_str()) {
            Some("") => true,
            Some(note) => note.starts_with(" (") && !note.contains("needed"),
            None => false,
        }
    })?;
    line.split(',').nth(1)?.trim_matches('"').parse().ok()
}

/// redis-py's `Lock` release script.
const LOCK_RELEASE: &str = "local token = redis.call('get', KEYS[1]) \
    if not token or token ~= ARGV[1] then return 0 end \
    redis.call('del', KEYS[1]) return 1";

/// EVALSHA of [`LOCK_RELEASE`] with `redis-benchmark`; metrics `evalsha_rps` and
/// `evalsha_cpu_us`.
pub async fn script(t: &Target, s: &Spec, m: &mut Metrics) -> Result<()> {
    let mut conn = RespConn::connect(&t.addr).await?;
    let sha = match conn
        .cmd(&[&b"SCRIPT"[..], b"LOAD", LOCK_RELEASE.as_bytes()])
        .await?
    {
        Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        other => return Err(err(format!("SCRIPT LOAD answered {other:?}"))),
    };
    let (host, port) = t
        .addr
        .rsplit_once(':')
        .ok_or_else(|| err(format!("bad address {}", t.addr)))?;
    let mut cmd = std::process::Command::new(&s.redis_benchmark);
    cmd.args(["-h", host, "-p", port, "--csv"])
        .args(["-n", &s.requests.to_string()])
        .args(["-c", &s.clients.to_string()])
        .args(["-P", &s.pipeline.to_string()])
        .args(["evalsha", &sha, "1", "lock:bench", "token"]);
    let before = cpu(t);
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await?
        .map_err(|e| err(format!("cannot run redis-benchmark: {e}")))?;
    let after = cpu(t);
    let text = String::from_utf8_lossy(&out.stdout);
    // The test is named by its whole command line: the one result line after the header.
    let rps = text
        .lines()
        .nth(1)
        .and_then(|l| l.split("\",\"").nth(1))
        .and_then(|v| v.trim_matches('"').parse::<f64>().ok())
        .ok_or_else(|| err(format!("no EVALSHA result from redis-benchmark: {text}")))?;
    m.insert("evalsha_rps".into(), rps);
    if let Some(c) = cpu_per_op(before, after, s.requests) {
        m.insert("evalsha_cpu_us".into(), c);
    }
    Ok(())
}

/// The commands of one transaction of the `multi` phase, between `MULTI` and `EXEC`.
const TX_COMMANDS: usize = 5;

/// Queues one transaction on `keys` (`a`, `b`, `c`) as the `multi` phase sends it.
fn queue_transaction(c: &mut RespConn, keys: &[String; 3]) {
    c.queue(&["MULTI"]);
    c.queue(&["INCR", keys[0].as_str()]);
    c.queue(&["INCR", keys[1].as_str()]);
    c.queue(&["SET", keys[2].as_str(), "v"]);
    c.queue(&["GET", keys[2].as_str()]);
    c.queue(&["GET", keys[0].as_str()]);
    c.queue(&["EXEC"]);
}

/// Reads one transaction's replies: `+OK`, five `+QUEUED`, and `EXEC`'s array of five
/// replies, none an error.
async fn check_transaction(c: &mut RespConn) -> Result<()> {
    let want = |what: &str, f: &Frame| err(format!("{what} answered {f:?} in the multi phase"));
    match c.read().await? {
        Frame::Simple(s) if s == b"OK" => {}
        f => return Err(want("MULTI", &f)),
    }
    for _ in 0..TX_COMMANDS {
        match c.read().await? {
            Frame::Simple(s) if s == b"QUEUED" => {}
            f => return Err(want("a queued command", &f)),
        }
    }
    match c.read().await? {
        Frame::Array(v)
            if v.len() == TX_COMMANDS && !v.iter().any(|f| matches!(f, Frame::Error(_))) =>
        {
            Ok(())
        }
        f => Err(want("EXEC", &f)),
    }
}

/// `--kv-requests` transactions of [`TX_COMMANDS`] commands from `--kv-clients` connections,
/// each with `--kv-pipeline` transactions in flight, on keys drawn from `--kv-keyspace`;
/// metrics `multi_rps` (transactions per second) and `multi_cpu_us` (server CPU per
/// transaction). Every reply is checked.
pub async fn multi(t: &Target, s: &Spec, m: &mut Metrics) -> Result<()> {
    let left = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(s.requests));
    let before = cpu(t);
    let started = Instant::now();
    let tasks: Vec<_> = (0..s.clients)
        .map(|client| {
            let (addr, left) = (t.addr.clone(), std::sync::Arc::clone(&left));
            let (pipeline, keyspace) = (s.pipeline as u64, s.keyspace);
            tokio::spawn(async move {
                let mut conn = RespConn::connect(&addr).await?;
                let mut n = client as u64;
                loop {
                    let taken = take(&left, pipeline);
                    if taken == 0 {
                        return Ok::<(), crate::fail::Error>(());
                    }
                    for _ in 0..taken {
                        n = n
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        let k = (n >> 33) % keyspace;
                        let keys = ["a", "b", "c"].map(|p| format!("tx:{p}:{k:012}"));
                        queue_transaction(&mut conn, &keys);
                    }
                    conn.flush().await?;
                    for _ in 0..taken {
                        check_transaction(&mut conn).await?;
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    m.insert("multi_rps".into(), s.requests as f64 / elapsed);
    if let Some(c) = cpu_per_op(before, cpu(t), s.requests) {
        m.insert("multi_cpu_us".into(), c);
    }
    Ok(())
}

/// Takes up to `want` from `left`; how many it took.
fn take(left: &std::sync::atomic::AtomicU64, want: u64) -> u64 {
    use std::sync::atomic::Ordering::Relaxed;
    match left.fetch_update(Relaxed, Relaxed, |l| Some(l - l.min(want))) {
        Ok(l) | Err(l) => l.min(want),
    }
}

/// redis-benchmark's default tests of every type, one run each with `--kv-pipeline` requests
/// in flight per client; metrics `t_<test>_rps` and `t_<test>_cpu_us`. The LRANGE tests' own
/// run first fills their list with as many LPUSHes as requests, so their CPU per operation
/// counts those pushes too (the same on both servers).
pub async fn types(t: &Target, s: &Spec, m: &mut Metrics) -> Result<()> {
    for test in super::TYPE_TESTS {
        let before = cpu(t);
        let rps = redis_benchmark(t, s, test, s.pipeline).await?;
        let after = cpu(t);
        m.insert(format!("t_{test}_rps"), rps);
        if let Some(c) = cpu_per_op(before, after, s.requests) {
            m.insert(format!("t_{test}_cpu_us"), c);
        }
    }
    Ok(())
}

/// SET then GET with `redis-benchmark`; metrics `<prefix>set_rps`, `<prefix>set_cpu_us`, ...
pub async fn setget(
    t: &Target,
    s: &Spec,
    pipeline: usize,
    prefix: &str,
    m: &mut Metrics,
) -> Result<()> {
    for test in ["set", "get"] {
        let before = cpu(t);
        let rps = redis_benchmark(t, s, test, pipeline).await?;
        let after = cpu(t);
        m.insert(format!("{prefix}{test}_rps"), rps);
        if let Some(c) = cpu_per_op(before, after, s.requests) {
            m.insert(format!("{prefix}{test}_cpu_us"), c);
        }
    }
    Ok(())
}

/// nubmq's workload; metrics `nubmq_ops` (per second) and `nubmq_cpu_us`.
pub async fn nubmq(t: &Target, s: &Spec, m: &mut Metrics) -> Result<()> {
    let before = cpu(t);
    let started = Instant::now();
    let tasks: Vec<_> = (0..s.nubmq_connections)
        .map(|c| {
            let (addr, ops) = (t.addr.clone(), s.nubmq_ops);
            tokio::spawn(async move {
                let mut conn = RespConn::connect(&addr).await?;
                for cmd in ["SET", "GET"] {
                    for i in 0..ops {
                        let key = format!("key:{}", (c * ops + i) % NUBMQ_KEYS);
                        if cmd == "SET" {
                            conn.cmd(&[cmd.as_bytes(), key.as_bytes(), b"12345678"])
                                .await?;
                        } else {
                            conn.cmd(&[cmd.as_bytes(), key.as_bytes()]).await?;
                        }
                    }
                }
                Ok::<(), crate::fail::Error>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let ops = (s.nubmq_connections * s.nubmq_ops * 2) as u64;
    m.insert("nubmq_ops".into(), ops as f64 / elapsed);
    if let Some(c) = cpu_per_op(before, cpu(t), ops) {
        m.insert("nubmq_cpu_us".into(), c);
    }
    Ok(())
}

/// Writes `n` keys `<prefix><i>` (extra arguments after the value), pipelined.
async fn fill(addr: &str, prefix: &str, n: usize, value: &[u8], extra: &[&str]) -> Result<()> {
    let mut c = RespConn::connect(addr).await?;
    for chunk in (0..n).collect::<Vec<_>>().chunks(FILL_BATCH) {
        for i in chunk {
            let key = format!("{prefix}{i:012}");
            let mut args: Vec<&[u8]> = vec![b"SET", key.as_bytes(), value];
            args.extend(extra.iter().map(|e| e.as_bytes()));
            c.queue(&args);
        }
        c.flush().await?;
        c.replies(chunk.len()).await?;
    }
    Ok(())
}

/// The lateness of `expired` events for keys sharing one deadline among many volatile keys;
/// metrics `expiry_received`, `expiry_p50_ms`, `expiry_p99_ms`, `expiry_max_ms` (NaN when the
/// percentile fell among events that never came within `--expiry-timeout`).
pub async fn expiry(t: &Target, s: &Spec, m: &mut Metrics) -> Result<()> {
    let mut admin = RespConn::connect(&t.addr).await?;
    admin.cmd(&["FLUSHALL"]).await?;
    admin
        .cmd(&["CONFIG", "SET", "notify-keyspace-events", "Ex"])
        .await?;
    let mut sub = RespConn::connect(&t.addr).await?;
    sub.queue(&["SUBSCRIBE", "__keyevent@0__:expired"]);
    sub.flush().await?;
    sub.read().await?;
    fill(
        &t.addr,
        "volatile:",
        s.expiry_volatile,
        b"v",
        &["EX", "3600"],
    )
    .await?;
    let deadline_us = (now_us() / 1000 + EXPIRY_LEAD.as_millis() as u64) * 1000;
    let at = (deadline_us / 1000).to_string();
    fill(&t.addr, "shared:", s.expiry_shared, b"v", &["PXAT", &at]).await?;
    let mut late_ms = Vec::with_capacity(s.expiry_shared);
    let until = Instant::now() + EXPIRY_LEAD + s.expiry_timeout;
    while late_ms.len() < s.expiry_shared {
        let left = until.saturating_duration_since(Instant::now());
        let Ok(frame) = tokio::time::timeout(left, sub.read()).await else {
            break;
        };
        if let Frame::Array(v) | Frame::Push(v) = frame? {
            if v.get(2)
                .and_then(Frame::as_bytes)
                .is_some_and(|k| k.starts_with(b"shared:"))
            {
                late_ms.push((now_us() as f64 - deadline_us as f64) / 1000.0);
            }
        }
    }
    late_ms.sort_by(f64::total_cmp);
    // Ranked among every key expected to expire: a rank past the events that came is NaN.
    let pct = |p: f64| nearest_rank(&late_ms, p, s.expiry_shared).unwrap_or(f64::NAN);
    m.insert("expiry_received".into(), late_ms.len() as f64);
    m.insert("expiry_p50_ms".into(), pct(0.5));
    m.insert("expiry_p99_ms".into(), pct(0.99));
    m.insert("expiry_max_ms".into(), pct(1.0));
    admin
        .cmd(&["CONFIG", "SET", "notify-keyspace-events", ""])
        .await?;
    admin.cmd(&["FLUSHALL"]).await?;
    Ok(())
}

/// RSS per key after writing `--rss-keys` keys of 32 bytes; metric `rss_per_key` (bytes).
pub async fn rss(t: &Target, s: &Spec, m: &mut Metrics) -> Result<()> {
    let Some(pid) = t.pid else {
        return Err(err(
            "rss needs the server's pid (--kv-pid, or a local server)",
        ));
    };
    let before = procstat::status_bytes(pid, "VmRSS")?;
    fill(&t.addr, "key:", s.rss_keys, &[b'x'; 32], &[]).await?;
    // Let the server settle (allocator, buffers) before reading.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = procstat::status_bytes(pid, "VmRSS")?;
    let mut c = RespConn::connect(&t.addr).await?;
    match c.cmd(&["DBSIZE"]).await? {
        Frame::Integer(n) if n as usize >= s.rss_keys => {}
        other => return Err(err(format!("DBSIZE after the RSS fill: {other:?}"))),
    }
    m.insert(
        "rss_per_key".into(),
        after.saturating_sub(before) as f64 / s.rss_keys as f64,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_redis_benchmarks_csv() {
        let out = "\"test\",\"rps\",\"avg_latency_ms\"\n\"SET\",\"98911.96\",\"0.608\"\n";
        assert_eq!(csv_rps(out, "set"), Some(98911.96));
        assert_eq!(csv_rps(out, "get"), None);
        assert_eq!(csv_rps("\"GET\",\"x\"", "get"), None);
        let lrange = "\"LPUSH (needed to benchmark LRANGE)\",\"65146.58\"\n\
                      \"LRANGE_100 (first 100 elements)\",\"15661.71\"\n";
        assert_eq!(csv_rps(lrange, "lrange_100"), Some(15661.71));
        assert_eq!(csv_rps(lrange, "lpush"), None);
        assert_eq!(csv_rps("\"MSET (10 keys)\",\"1.5\"\n", "mset"), Some(1.5));
    }

    #[test]
    fn takes_what_is_left_and_no_more() {
        let left = std::sync::atomic::AtomicU64::new(20);
        assert_eq!(take(&left, 16), 16);
        assert_eq!(take(&left, 16), 4);
        assert_eq!(take(&left, 16), 0);
    }

    #[test]
    fn cpu_per_op_needs_both_readings() {
        let (a, b) = (
            Some(Duration::from_millis(10)),
            Some(Duration::from_millis(30)),
        );
        assert_eq!(cpu_per_op(a, b, 1000), Some(20.0));
        assert_eq!(cpu_per_op(None, b, 1000), None);
    }
}
