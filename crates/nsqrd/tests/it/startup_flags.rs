//! Command line and config file: `--version`, flag errors (exit 2), startup validation failures
//! (exit 1), Go `flag` syntaxes, and the TOML config file with its precedence rules and millisecond
//! integer durations — observed through `/config/<opt>`.
use crate::common::*;
use std::path::Path;

/// `run_to_exit` with safe listener and data-path flags first, then `extra`.
fn run_with(data: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let dp = format!("--data-path={}", data.display());
    let mut args = vec![
        "--tcp-address=127.0.0.1:0",
        "--http-address=127.0.0.1:0",
        "--https-address=",
        dp.as_str(),
    ];
    args.extend_from_slice(extra);
    run_to_exit(&args)
}

/// Assert startup fails with exit status 1 and a fatal message containing `msg`.
#[track_caller]
fn assert_fatal(extra: &[&str], msg: &str) {
    let dir = nsqr_testkit::temp_dir("fatal");
    let (code, out) = run_with(&dir, extra);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(1), "{extra:?} exit code; output:\n{out}");
    assert!(out.contains(msg), "{extra:?}: expected {msg:?} in:\n{out}");
    assert_eq!(
        out.matches("FATAL").count(),
        1,
        "{extra:?}: not one FATAL line in:\n{out}"
    );
}

/// Assert a flag error: exit status 2 and `msg` in the output.
#[track_caller]
fn assert_flag_error(extra: &[&str], msg: &str) {
    let dir = nsqr_testkit::temp_dir("flagerr");
    let (code, out) = run_with(&dir, extra);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(2), "{extra:?} exit code; output:\n{out}");
    assert!(out.contains(msg), "{extra:?}: expected {msg:?} in:\n{out}");
}

/// GET /config/<opt> as text.
fn opt(s: &Server, name: &str) -> String {
    let r = s.get(&format!("/config/{name}"));
    assert_eq!(r.status, 200, "/config/{name}: {}", r.text());
    r.text()
}

/// Write a config file into a fresh directory; returns its path.
fn config_file(body: &str) -> std::path::PathBuf {
    let p = nsqr_testkit::temp_dir("cfg").join("nsqd.toml");
    std::fs::write(&p, body).expect("write config");
    p
}

#[test]
fn version_flag_prints_version_and_exits_0() {
    let (code, out) = run_to_exit(&["--version"]);
    assert_eq!(code, Some(0), "{out}");
    let out = out.trim();
    assert!(!out.is_empty());
    // Some `<digits>.<digits>.<digits>` in the output.
    let has_version = out
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .any(|w| {
            let parts: Vec<&str> = w.split('.').collect();
            parts.len() >= 3 && parts.iter().take(3).all(|p| !p.is_empty())
        });
    assert!(has_version, "no version number in {out:?}");
    if is_reference() {
        assert!(out.starts_with("nsqd v"), "{out}");
    }
    let (code, _) = run_to_exit(&["-version"]);
    assert_eq!(code, Some(0));
}

#[test]
fn unknown_flag_exits_2() {
    assert_flag_error(&["--nosuch"], "flag provided but not defined: -nosuch");
    assert_flag_error(&["-nosuch=1"], "flag provided but not defined: -nosuch");
}

#[test]
fn a_flag_error_is_repeated_after_the_usage_text() {
    let dir = nsqr_testkit::temp_dir("flagerr");
    let (code, out) = run_with(&dir, &["--no-such-flag"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("\nUsage of nsqd:\n"), "{out}");
    if is_reference() {
        return; // nsqd ends with the usage text
    }
    let bin = server_bin().display().to_string();
    let last = out.trim_end().lines().last().unwrap_or_default();
    assert_eq!(
        last,
        format!("{bin}: flag provided but not defined: -no-such-flag (see '{bin} --help')")
    );
}

#[test]
fn unparseable_flag_values_exit_2() {
    assert_flag_error(
        &["--msg-timeout=abc"],
        "invalid value \"abc\" for flag -msg-timeout",
    );
    assert_flag_error(
        &["--max-rdy-count=x"],
        "invalid value \"x\" for flag -max-rdy-count",
    );
    assert_flag_error(
        &["--log-level=bogus"],
        "invalid value \"bogus\" for flag -log-level",
    );
    assert_flag_error(
        &["--deflate=maybe"],
        "invalid boolean value \"maybe\" for -deflate",
    );
    // A value-taking flag at the end without a value.
    assert_flag_error(&["--msg-timeout"], "flag needs an argument: -msg-timeout");
}

#[test]
fn max_deflate_level_range() {
    assert_fatal(
        &["--max-deflate-level=10"],
        "--max-deflate-level must be [1,9]",
    );
    assert_fatal(
        &["--max-deflate-level=0"],
        "--max-deflate-level must be [1,9]",
    );
}

#[test]
fn node_id_range() {
    assert_fatal(&["--node-id=1024"], "--node-id must be [0,1024)");
    assert_fatal(&["--node-id=-1"], "--node-id must be [0,1024)");
}

#[test]
fn e2e_percentile_range() {
    assert_fatal(
        &["--e2e-processing-latency-percentile=1.5"],
        "invalid E2E processing latency percentile: 1.5",
    );
    assert_fatal(
        &["--e2e-processing-latency-percentile=0"],
        "invalid E2E processing latency percentile: 0",
    );
}

#[test]
fn missing_data_path_fails() {
    let dir = nsqr_testkit::temp_dir("nodata");
    let missing = dir.join("does-not-exist");
    let dp = format!("--data-path={}", missing.display());
    let (code, out) = run_to_exit(&[
        "--tcp-address=127.0.0.1:0",
        "--http-address=127.0.0.1:0",
        "--https-address=",
        &dp,
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("failed to lock data-path"), "{out}");
    assert!(out.contains("FATAL"), "{out}");
}

#[test]
fn data_path_in_use_fails() {
    let s = Server::start(&[]);
    let (code, out) = run_with(&s.data_path, &[]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("failed to lock data-path"), "{out}");
    assert!(
        out.contains("possibly in use by another instance of nsqd"),
        "{out}"
    );
    // The first instance is unaffected.
    assert_eq!(s.get("/ping").text(), "OK");
}

#[test]
fn listen_failure_fails() {
    let s = Server::start(&[]);
    let dir = nsqr_testkit::temp_dir("listen");
    let tcp = format!("--tcp-address={}", s.tcp);
    let (code, out) = run_with(&dir, &[&tcp]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains(&format!("listen ({}) failed", s.tcp)), "{out}");
}

#[test]
fn go_flag_syntaxes() {
    for args in [
        &["-msg-timeout", "2s"][..],
        &["-msg-timeout=2s"],
        &["--msg-timeout=2s"],
        &["--msg-timeout", "2s"],
    ] {
        let s = Server::start(args);
        assert_eq!(opt(&s, "msg_timeout"), "2000000000", "{args:?}");
    }
}

#[test]
fn bool_flag_syntaxes() {
    let s = Server::start(&[
        "-deflate=false",
        "--snappy=false",
        "--statsd-exclude-ephemeral",
    ]);
    assert_eq!(opt(&s, "deflate"), "false");
    assert_eq!(opt(&s, "snappy"), "false");
    assert_eq!(opt(&s, "statsd_exclude_ephemeral"), "true");
    // A boolean never takes the next argument: `--deflate false` sets true, and the bare
    // `false` ends flag parsing (Go `flag`), so later flags are not applied.
    let s = Server::start(&["--deflate", "false", "--max-rdy-count=7"]);
    assert_eq!(opt(&s, "deflate"), "true");
    assert_eq!(opt(&s, "max_rdy_count"), "2500");
}

#[test]
fn last_occurrence_of_a_flag_wins() {
    let s = Server::start(&["--max-rdy-count=10", "--max-rdy-count=20"]);
    assert_eq!(opt(&s, "max_rdy_count"), "20");
}

#[test]
fn config_file_values() {
    // nsqrd refuses e2e percentiles until end-to-end latency lands (docs/compatibility.md).
    let e2e = if is_reference() {
        "e2e_processing_latency_percentiles = [0.9, 0.5]\n"
    } else {
        ""
    };
    let cfg = config_file(&format!(
        "msg_timeout = \"5s\"\nmax_rdy_count = 100\nmax_msg_timeout = \"20m\"\n\
         deflate = false\nlog_level = \"debug\"\nunknown_key = 5\n{e2e}"
    ));
    let c = format!("--config={}", cfg.display());
    let s = Server::start(&[&c]);
    assert_eq!(opt(&s, "msg_timeout"), "5000000000");
    assert_eq!(opt(&s, "max_rdy_count"), "100");
    assert_eq!(opt(&s, "max_msg_timeout"), "1200000000000");
    assert_eq!(opt(&s, "deflate"), "false");
    assert_eq!(opt(&s, "log_level"), "1");
    if is_reference() {
        assert_eq!(opt(&s, "e2e_processing_latency_percentiles"), "[0.9,0.5]");
    }
    // Untouched options keep their defaults.
    assert_eq!(opt(&s, "mem_queue_size"), "10000");
    let _ = std::fs::remove_dir_all(cfg.parent().expect("dir"));
}

#[test]
fn explicit_flag_overrides_config_file() {
    let cfg = config_file("msg_timeout = \"5s\"\nmax_rdy_count = 100\n");
    let c = format!("--config={}", cfg.display());
    // Flag given before or after --config: either way the flag wins.
    for args in [
        [c.as_str(), "--msg-timeout=7s"],
        ["--msg-timeout=7s", c.as_str()],
    ] {
        let s = Server::start(&args);
        assert_eq!(opt(&s, "msg_timeout"), "7000000000", "{args:?}");
        assert_eq!(opt(&s, "max_rdy_count"), "100", "{args:?}");
    }
    // A flag explicitly set to its default value still overrides the file.
    let s = Server::start(&[&c, "--max-rdy-count=2500"]);
    assert_eq!(opt(&s, "max_rdy_count"), "2500");
    let _ = std::fs::remove_dir_all(cfg.parent().expect("dir"));
}

#[test]
fn config_file_bare_integer_duration_is_milliseconds() {
    let cfg = config_file("msg_timeout = 5000\nsync_timeout = 1500\n");
    let c = format!("--config={}", cfg.display());
    let s = Server::start(&[&c]);
    assert_eq!(opt(&s, "msg_timeout"), "5000000000");
    assert_eq!(opt(&s, "sync_timeout"), "1500000000");
    let _ = std::fs::remove_dir_all(cfg.parent().expect("dir"));
}

#[test]
fn config_file_list_as_comma_separated_string() {
    let cfg = config_file("e2e_processing_latency_percentiles = \"0.9,0.5\"\n");
    let c = format!("--config={}", cfg.display());
    let s = Server::start(&[&c]);
    let r = s.get("/config/e2e_processing_latency_percentiles");
    let mut v: Vec<f64> = r
        .json()
        .as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("f64"))
        .collect();
    v.sort_by(|a, b| b.total_cmp(a));
    assert_eq!(v, [0.9, 0.5]);
    let _ = std::fs::remove_dir_all(cfg.parent().expect("dir"));
}

#[test]
fn config_file_values_are_validated() {
    let cfg = config_file("max_deflate_level = 10\n");
    let c = format!("--config={}", cfg.display());
    assert_fatal(&[&c], "--max-deflate-level must be [1,9]");
    for body in [
        "log_level = \"bogus\"\n",
        "msg_timeout = \"abc\"\n",
        "max_rdy_count = \"x\"\n",
    ] {
        std::fs::write(&cfg, body).expect("write");
        let dir = nsqr_testkit::temp_dir("badcfg");
        let (code, out) = run_with(&dir, &[&c]);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(code, Some(1), "{body}: {out}");
    }
    let _ = std::fs::remove_dir_all(cfg.parent().expect("dir"));
}

#[test]
fn unreadable_config_file_fails() {
    let cfg = config_file("this is not toml\n");
    let c = format!("--config={}", cfg.display());
    assert_fatal(&[&c], "failed to load config file");
    let missing = format!("--config={}", cfg.with_file_name("missing.toml").display());
    assert_fatal(&[&missing], "failed to load config file");
    let _ = std::fs::remove_dir_all(cfg.parent().expect("dir"));
}
