//! Running wrk (the HTTP load generator MinMQ's load test uses) with a script of our own that
//! POSTs a small form to `/pub`, and reading its report: requests, rate, latency percentiles,
//! errors.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::fail::{err, Result};

/// The request: MinMQ's form body, as its load test posts it.
const SCRIPT: &str = r#"-- nsqr-bench http-pub: POST a small form to the URL's path (/pub?topic=...).
wrk.method = "POST"
wrk.body = "message=13371337"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
"#;

/// One wrk load: threads and connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Load {
    pub threads: usize,
    pub connections: usize,
}

impl std::fmt::Display for Load {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "-t{} -c{}", self.threads, self.connections)
    }
}

/// `2x50` -> 2 threads, 50 connections.
pub fn parse_load(s: &str) -> std::result::Result<Load, String> {
    let bad = || format!("invalid load {s:?} (THREADSxCONNECTIONS, e.g. 12x400)");
    let (t, c) = s.trim().split_once('x').ok_or_else(bad)?;
    let threads: usize = t.parse().map_err(|_| bad())?;
    let connections: usize = c.parse().map_err(|_| bad())?;
    if threads == 0 || connections < threads {
        return Err(format!(
            "{s:?}: wrk needs at least one thread and a connection per thread"
        ));
    }
    Ok(Load {
        threads,
        connections,
    })
}

/// What one wrk run reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub requests: u64,
    pub secs: f64,
    /// Latency percentiles 50, 75, 90, 99, in microseconds.
    pub latency_us: [f64; 4],
    /// Non-2xx/3xx answers and socket errors.
    pub errors: u64,
}

impl Report {
    pub fn rate(&self) -> f64 {
        crate::stats::rate(self.requests, self.secs)
    }
}

/// The script, written once into `dir`.
pub fn write_script(dir: &Path) -> Result<PathBuf> {
    let path = dir.join("http-pub.lua");
    std::fs::write(&path, SCRIPT).map_err(|e| err(format!("write {}: {e}", path.display())))?;
    Ok(path)
}

/// Run `wrk` for `duration` against `url` and read its report.
pub async fn run(
    wrk: &Path,
    script: &Path,
    load: Load,
    duration: Duration,
    url: &str,
) -> Result<Report> {
    let mut cmd = std::process::Command::new(wrk);
    cmd.arg(format!("-t{}", load.threads))
        .arg(format!("-c{}", load.connections))
        .arg(format!("-d{}s", duration.as_secs().max(1)))
        .arg("--latency")
        .arg("-s")
        .arg(script)
        .arg(url)
        .stdin(std::process::Stdio::null());
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .map_err(|e| err(format!("wrk: {e}")))?
        .map_err(|e| err(format!("cannot run {}: {e}", wrk.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(err(format!(
            "wrk failed ({}): {}{}",
            out.status,
            text,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    parse(&text).ok_or_else(|| err(format!("cannot read wrk's report:\n{text}")))
}

/// Read wrk's `--latency` report.
pub fn parse(text: &str) -> Option<Report> {
    let mut r = Report::default();
    let mut found = (false, [false; 4]);
    for line in text.lines().map(str::trim) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            // "123456 requests in 8.00s, 12.34MB read"
            [n, "requests", "in", secs, ..] => {
                r.requests = n.parse().ok()?;
                r.secs = duration_us(secs.trim_end_matches(','))? / 1e6;
                found.0 = true;
            }
            [p, v] if p.ends_with('%') => {
                let i = ["50%", "75%", "90%", "99%"].iter().position(|q| q == p)?;
                r.latency_us[i] = duration_us(v)?;
                found.1[i] = true;
            }
            ["Non-2xx", "or", "3xx", "responses:", n] => r.errors += n.parse::<u64>().ok()?,
            ["Socket", "errors:", rest @ ..] => {
                // "connect 0, read 0, write 0, timeout 0"
                for pair in rest.chunks(2) {
                    if let [_, n] = pair {
                        r.errors += n.trim_end_matches(',').parse::<u64>().ok()?;
                    }
                }
            }
            _ => {}
        }
    }
    (found.0 && found.1.iter().all(|f| *f)).then_some(r)
}

/// wrk's durations: `812.00us`, `1.23ms`, `8.00s`, `1.50m`.
fn duration_us(s: &str) -> Option<f64> {
    let split = s.find(|c: char| c.is_ascii_alphabetic())?;
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().ok()?;
    let scale = match unit {
        "us" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        "m" => 60e6,
        "h" => 3600e6,
        _ => return None,
    };
    Some(n * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "Running 8s test @ http://127.0.0.1:4151/pub?topic=t
  12 threads and 400 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     6.12ms    3.01ms  40.50ms   70.00%
    Req/Sec     5.50k   600.00     7.00k    68.00%
  Latency Distribution
     50%    5.80ms
     75%  812.00us
     90%    9.10ms
     99%    1.02s
  524288 requests in 8.00s, 61.00MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 7
Requests/sec:  65536.00
Transfer/sec:      7.62MB
";

    #[test]
    fn reads_wrks_report() {
        let r = parse(REPORT).unwrap();
        assert_eq!(r.requests, 524_288);
        assert_eq!(r.secs, 8.0);
        assert_eq!(r.latency_us, [5800.0, 812.0, 9100.0, 1_020_000.0]);
        assert_eq!(r.errors, 12);
        assert_eq!(r.rate(), 65_536.0);
    }

    #[test]
    fn a_report_without_its_percentiles_is_refused() {
        let cut: String = REPORT
            .lines()
            .filter(|l| !l.contains("99%"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(parse(&cut), None);
        assert_eq!(parse("wrk: connection refused"), None);
    }

    #[test]
    fn loads_are_threads_by_connections() {
        assert_eq!(
            parse_load("12x400"),
            Ok(Load {
                threads: 12,
                connections: 400
            })
        );
        assert!(parse_load("12").is_err());
        assert!(parse_load("0x4").is_err());
        assert!(parse_load("4x2").is_err());
    }
}
