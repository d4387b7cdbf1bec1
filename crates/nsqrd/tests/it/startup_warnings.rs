//! Start-up warnings: what nsqd accepts in silence although it is likely a mistake (a negative
//! `--mem-queue-size`, a misspelt config-file key, an address that nsqd's rules make a unix
//! socket) still starts as in nsqd, with one warning line each; a unix-socket listener says
//! so in its `listening on` line.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use nsqr_testkit::Daemon;

use crate::common::*;

/// Starts the server in `dir` (its working directory and data path) with `args`, and returns
/// what it logged up to its HTTP `listening on` line; then stops it.
fn log_until_listening(dir: &Path, args: &[&str]) -> Vec<String> {
    let mut cmd = Command::new(server_bin());
    cmd.current_dir(dir)
        .arg("--http-address=127.0.0.1:0")
        .arg("--https-address=")
        .arg(format!("--data-path={}", dir.display()))
        .args(args);
    let mut proc = Daemon::spawn(&mut cmd);
    let mut lines = Vec::new();
    proc.wait_for_log(Duration::from_secs(15), |line| {
        lines.push(line.to_string());
        line.contains("HTTP: listening on ")
    });
    proc.kill();
    lines
}

fn warnings(lines: &[String]) -> Vec<&String> {
    lines.iter().filter(|l| l.contains(" WARNING: ")).collect()
}

#[test]
fn a_negative_mem_queue_size_starts_with_a_warning() {
    if is_reference() {
        return; // nsqd starts without a word
    }
    let dir = temp_dir();
    let lines = log_until_listening(&dir, &["--tcp-address=127.0.0.1:0", "--mem-queue-size=-5"]);
    let _ = std::fs::remove_dir_all(&dir);
    let w = warnings(&lines);
    assert_eq!(w.len(), 1, "{lines:#?}");
    assert!(
        w[0].ends_with(
            "WARNING: --mem-queue-size=-5 is negative: it counts as 0, every message goes to disk"
        ),
        "{lines:#?}"
    );
}

#[test]
fn unknown_config_file_keys_are_named_in_a_warning() {
    if is_reference() {
        return; // nsqd ignores them without a word
    }
    let dir = temp_dir();
    let cfg = dir.join("nsqd.toml");
    std::fs::write(
        &cfg,
        "mem_queue_sizee = 5\nmsg_timeout = \"90s\"\nfoo = 1\n",
    )
    .unwrap();
    let c = format!("--config={}", cfg.display());
    let lines = log_until_listening(&dir, &["--tcp-address=127.0.0.1:0", &c]);
    let _ = std::fs::remove_dir_all(&dir);
    let w = warnings(&lines);
    assert_eq!(w.len(), 1, "{lines:#?}");
    let expected = format!(
        "WARNING: config file {}: ignoring unknown keys: foo, mem_queue_sizee",
        cfg.display()
    );
    assert!(w[0].ends_with(&expected), "{lines:#?}");
}

#[test]
fn a_port_as_tcp_address_is_a_unix_socket_with_a_warning() {
    if is_reference() {
        return; // nsqd logs `TCP: listening on 4150`
    }
    let dir = temp_dir();
    let lines = log_until_listening(&dir, &["--tcp-address=4150"]);
    let socket = dir.join("4150");
    let is_socket = std::fs::symlink_metadata(&socket).is_ok();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(is_socket, "no socket at {}", socket.display());
    let w = warnings(&lines);
    assert_eq!(w.len(), 1, "{lines:#?}");
    assert!(
        w[0].ends_with(
            "WARNING: --tcp-address=4150 is not <host>:<port>, so it is a unix socket path; \
             for TCP write 127.0.0.1:4150 or 0.0.0.0:4150"
        ),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with("INFO: TCP: listening on ./4150 (unix socket)")),
        "{lines:#?}"
    );
}
