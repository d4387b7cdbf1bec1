//! Flags, the config file, listen failures and signals, black box: Go flag syntax and exit codes,
//! `--version`, `-h`, `--config` precedence, fatal exit on a busy port, and a graceful stop on
//! SIGTERM / SIGINT that closes nsqd connections.

use std::time::Duration;

use crate::common::*;

#[test]
fn version_and_help() {
    let (code, out) = run_to_exit(&["--version"]);
    assert_eq!(code, Some(0));
    assert!(
        out.contains("nsqlookupd v1.3.0") || out.contains("(nsqlookupd v1.3.0 compatible)"),
        "{out}"
    );
    for h in ["-h", "--help"] {
        let (code, out) = run_to_exit(&[h]);
        assert_eq!(code, Some(0), "{h}");
        assert!(out.starts_with("Usage of nsqlookupd:\n"), "{out}");
        for flag in [
            "  -broadcast-address string\n",
            "  -config string\n",
            "  -http-address string\n",
            "  -inactive-producer-timeout duration\n",
            "  -log-level value\n",
            "  -log-prefix string\n",
            "  -tcp-address string\n",
            "  -tombstone-lifetime duration\n",
            "  -verbose\n",
            "  -version\n",
        ] {
            assert!(out.contains(flag), "{flag:?} missing from {out}");
        }
        assert!(
            out.contains("(default 5m0s)") && out.contains("(default 45s)"),
            "{out}"
        );
    }
}

#[test]
fn flag_errors_exit_2_with_usage() {
    for (args, text) in [
        (&["--nope"][..], "flag provided but not defined: -nope"),
        (&["--tcp-address"], "flag needs an argument: -tcp-address"),
        (&["--tombstone-lifetime=10"], "invalid value \"10\" for flag -tombstone-lifetime: parse error"),
        (&["--verbose=maybe"], "invalid boolean value \"maybe\" for -verbose: parse error"),
        (
            &["--log-level=loud"],
            "invalid value \"loud\" for flag -log-level: invalid log level 'loud' (debug, info, warn, error, fatal)",
        ),
    ] {
        let (code, out) = run_to_exit(args);
        assert_eq!(code, Some(2), "{args:?}: {out}");
        assert!(out.starts_with(&format!("{text}\nUsage of nsqlookupd:\n")), "{args:?}: {out}");
        if !is_upstream() {
            let bin = server_bin().display().to_string();
            let reminder = format!("{bin}: {text} (see '{bin} --help')");
            assert!(out.trim_end().ends_with(&reminder), "{args:?}: {out}");
        }
    }
}

#[test]
fn all_flag_syntaxes_and_deprecated_verbose() {
    let l = Lookupd::start_with(&[
        "-tcp-address",
        "127.0.0.1:0",
        "-http-address=127.0.0.1:0",
        "--broadcast-address",
        "b.example",
        "--verbose",
        "-log-level=debug",
        "--inactive-producer-timeout=1h",
    ]);
    let mut c = l.connect();
    let reply: serde_json::Value =
        serde_json::from_slice(&c.identify(identify_json("x", 1, 2).as_bytes())).unwrap();
    assert_eq!(reply["broadcast_address"], "b.example");
}

#[test]
fn log_prefix_and_level() {
    let l = Lookupd::start_with(&[
        "--tcp-address=127.0.0.1:0",
        "--http-address=127.0.0.1:0",
        "--log-prefix=[lk] ",
    ]);
    l.get("/ping");
    let mut c = l.connect();
    c.ok("PING");
    assert!(wait_until(Duration::from_secs(5), || l
        .log_lines()
        .iter()
        .any(
            |line| line.starts_with("[lk] ") && line.contains(" INFO: ")
        )));
}

#[test]
fn config_file_with_flag_precedence() {
    let dir = nsqr_testkit::temp_dir("nsqrlookupd-cfg");
    let path = dir.join("lookupd.toml");
    std::fs::write(
        &path,
        "tcp_address = \"127.0.0.1:0\"\nhttp_address = \"127.0.0.1:0\"\n\
         broadcast_address = \"from-file\"\ninactive_producer_timeout = 300\n\
         log_level = \"info\"\nunknown = 1\n",
    )
    .unwrap();
    let cfg = format!("--config={}", path.display());
    // The file gives addresses and a 300 ms (integer = ms) inactivity timeout.
    let l = Lookupd::start_with(&[&cfg]);
    let mut a = l.nsqd("127.0.0.1", 1, 2);
    a.ok("REGISTER t");
    let reply: serde_json::Value = {
        let mut c = l.connect();
        serde_json::from_slice(&c.identify(identify_json("x", 1, 2).as_bytes())).unwrap()
    };
    assert_eq!(reply["broadcast_address"], "from-file");
    assert!(wait_until(Duration::from_secs(10), || l
        .lookup_producers("t")
        .unwrap()
        .is_empty()));
    drop(l);
    // A flag beats the file.
    let l = Lookupd::start_with(&[&cfg, "--broadcast-address=from-flag"]);
    let mut c = l.connect();
    let reply: serde_json::Value =
        serde_json::from_slice(&c.identify(identify_json("x", 1, 2).as_bytes())).unwrap();
    assert_eq!(reply["broadcast_address"], "from-flag");
    drop(l);

    // Bad files are fatal.
    std::fs::write(&path, "log_level = \"loud\"\n").unwrap();
    let (code, out) = run_to_exit(&[
        &cfg,
        "--tcp-address=127.0.0.1:0",
        "--http-address=127.0.0.1:0",
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("failed parsing log_level loud"), "{out}");
    let (code, out) = run_to_exit(&["--config=/nonexistent/lookupd.toml"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("failed to load config file /nonexistent/lookupd.toml"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn busy_port_is_fatal() {
    let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = busy.local_addr().unwrap().to_string();
    for args in [
        [
            format!("--tcp-address={addr}"),
            "--http-address=127.0.0.1:0".to_string(),
        ],
        [
            "--tcp-address=127.0.0.1:0".to_string(),
            format!("--http-address={addr}"),
        ],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, out) = run_to_exit(&args);
        assert_eq!(code, Some(1), "{out}");
        assert!(out.contains(&format!("listen ({addr}) failed")), "{out}");
    }
}

#[test]
fn sigterm_and_sigint_stop_gracefully() {
    for sig in ["TERM", "INT"] {
        let mut l = Lookupd::start(&[]);
        let mut a = l.nsqd("127.0.0.1", 1, 2);
        a.ok("REGISTER t");
        assert_eq!(l.signal(sig), Some(0), "SIG{sig}");
        // The nsqd connection was closed by the server.
        assert!(a.expect_closed(), "SIG{sig}");
    }
}
