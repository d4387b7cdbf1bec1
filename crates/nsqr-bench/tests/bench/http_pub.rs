//! `http-pub`'s process handling (start each server, point the load at its `/pub`, measure,
//! kill, report medians) with a stand-in for wrk: a script that posts one request to the URL
//! it is given, logs the answer's status line, and prints a wrk report. The real wrk is not
//! needed to test what nsqr-bench does around it (its report parser has unit tests).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

const FAKE_WRK: &str = r#"#!/bin/bash
url="${@: -1}"
rest="${url#http://}"
hostport="${rest%%/*}"
path="/${rest#*/}"
exec 3<>"/dev/tcp/${hostport%:*}/${hostport#*:}"
printf 'POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 16\r\nConnection: close\r\n\r\nmessage=13371337' "$path" >&3
read -r status <&3
echo "$* => ${status%$'\r'}" >> "$FAKE_WRK_LOG"
cat <<'REPORT'
Running 1s test @ whatever
  Latency Distribution
     50%  100.00us
     75%  200.00us
     90%  300.00us
     99%    1.00ms
  1000 requests in 1.00s, 0.10MB read
Requests/sec:   1000.00
REPORT
"#;

fn bin(name: &str) -> PathBuf {
    let me = PathBuf::from(env!("CARGO_BIN_EXE_nsqr-bench"));
    match name {
        "nsqrd" => std::env::var_os("NSQRD_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| me.with_file_name("nsqrd")),
        _ => me,
    }
}

#[test]
fn http_pub_loads_every_servers_pub_and_reports_medians() {
    let dir = std::env::temp_dir().join(format!("nsqr-bench-http-pub-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let wrk = dir.join("wrk");
    std::fs::write(&wrk, FAKE_WRK).unwrap();
    std::fs::set_permissions(&wrk, std::fs::Permissions::from_mode(0o755)).unwrap();
    let log = dir.join("wrk.log");
    let nsqrd = bin("nsqrd");
    let mut cmd = Command::new(bin("nsqr-bench"));
    cmd.args(["http-pub", "--rounds", "2", "--duration", "1s"])
        .args(["--loads", "2x4,3x6", "--topic", "hp"])
        .arg("--nsqrd")
        .arg(&nsqrd)
        .arg("--baseline")
        .arg(&nsqrd)
        .arg("--wrk")
        .arg(&wrk)
        .env("FAKE_WRK_LOG", &log);
    let out = nsqr_testkit::output_within(&mut cmd, Duration::from_secs(120), "http-pub");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let runs = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    // 2 rounds x 2 loads x 3 servers, each answering the POST to its /pub.
    let lines: Vec<&str> = runs.lines().collect();
    assert_eq!(lines.len(), 12, "{runs}");
    for l in &lines {
        assert!(l.contains("--latency -s "), "{l}");
        assert!(l.contains("/pub?topic=hp => HTTP/1.1 200 OK"), "{l}");
    }
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("-t3 -c6 ")).count(),
        6
    );
    for server in ["floor", "nsqrd", "baseline"] {
        for load in ["-t2 -c4", "-t3 -c6"] {
            let row = stdout
                .lines()
                .find(|l| l.contains(&format!("| {load} ")) && l.contains(&format!("| {server} ")))
                .unwrap_or_else(|| panic!("no {server} {load} row:\n{stdout}"));
            assert!(row.contains("1.0k"), "{row}");
            assert!(row.contains("1.00 ms"), "{row}");
        }
    }
}
