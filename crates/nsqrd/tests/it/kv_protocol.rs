//! The keyspace's wire protocol against raw bytes: pipelining, inline commands, Redis's error
//! strings, and hostile input (huge lengths, negative counts, a 100 MB line, garbage), each of
//! which must get an error or a closed connection while the server keeps its memory bounded
//! and serves everyone else.

use std::io::Write;
use std::time::Duration;

use crate::kv_common::*;

#[test]
fn off_by_default() {
    let (code, out) = nsqr_testkit::run_to_exit(
        std::path::Path::new(env!("CARGO_BIN_EXE_nsqrd")),
        &["--help"],
    );
    assert_eq!(code, Some(0));
    assert!(out.contains("-kv-address string"));
    // With no --kv-* flag nothing listens for RESP and no keyspace files appear.
    let dir = nsqr_testkit::temp_dir("kv-test");
    let mut nsqrd = nsqr_testkit::Daemon::spawn(
        std::process::Command::new(env!("CARGO_BIN_EXE_nsqrd")).args([
            "--tcp-address=127.0.0.1:0",
            "--http-address=127.0.0.1:0",
            "--https-address=",
            &format!("--data-path={}", dir.display()),
        ]),
    );
    let mut seen = Vec::new();
    nsqrd.wait_for_log(Duration::from_secs(30), |line| {
        seen.push(line.to_string());
        line.contains("HTTP: listening on")
    });
    drop(nsqrd);
    assert!(seen.iter().all(|l| !l.contains("KV:")), "{seen:?}");
    assert!(!dir.join("kv").exists());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn pipelined_and_inline_requests_in_one_write() {
    let srv = KvServer::start(&[]);
    let mut c = srv.client();
    let mut batch = Vec::new();
    for i in 0..100 {
        resp_wire::encode_request(&[&b"SET"[..], format!("k{i}").as_bytes(), b"v"], &mut batch);
    }
    batch.extend_from_slice(b"GET k7\r\nPING\nECHO \"a b\"\r\n");
    c.send_raw(&batch);
    for _ in 0..100 {
        assert_eq!(c.read(), simple("OK"));
    }
    assert_eq!(c.read(), bulk("v"));
    assert_eq!(c.read(), simple("PONG"));
    assert_eq!(c.read(), bulk("a b"));
}

/// A pipeline is looked ahead of in batches to warm the cache for its keys: mixed with
/// keyless commands, missing and expired keys, a request split across writes, and AUTH in the
/// middle (nothing is looked up before it), every reply is still the command's own, in order.
#[test]
fn long_mixed_pipelines_answer_in_order() {
    let srv = KvServer::start(&["--kv-password=pw"]);
    let mut c = srv.client();
    let mut batch = Vec::new();
    for i in 0..5 {
        resp_wire::encode_request(&[&b"GET"[..], format!("k{i}").as_bytes()], &mut batch);
    }
    resp_wire::encode_request(&[&b"AUTH"[..], b"pw"], &mut batch);
    for i in 0..300 {
        let key = format!("k{i}");
        resp_wire::encode_request(&[&b"SET"[..], key.as_bytes(), key.as_bytes()], &mut batch);
        if i % 7 == 0 {
            resp_wire::encode_request(&[&b"PING"[..]], &mut batch);
        }
    }
    resp_wire::encode_request(&[&b"SET"[..], b"gone", b"x", b"PX", b"1"], &mut batch);
    c.send_raw(&batch);
    for _ in 0..5 {
        assert_eq!(c.read(), err("NOAUTH Authentication required."));
    }
    assert_eq!(c.read(), simple("OK"));
    for i in 0..300 {
        assert_eq!(c.read(), simple("OK"), "SET k{i}");
        if i % 7 == 0 {
            assert_eq!(c.read(), simple("PONG"));
        }
    }
    assert_eq!(c.read(), simple("OK"));
    std::thread::sleep(Duration::from_millis(20));
    let mut gets = Vec::new();
    for i in (0..600).rev() {
        resp_wire::encode_request(&[&b"GET"[..], format!("k{i}").as_bytes()], &mut gets);
    }
    resp_wire::encode_request(&[&b"GET"[..], b"gone"], &mut gets);
    let (first, second) = gets.split_at(gets.len() / 2 + 3);
    c.send_raw(first);
    std::thread::sleep(Duration::from_millis(20));
    c.send_raw(second);
    for i in (0..600).rev() {
        let want = if i < 300 {
            bulk(&format!("k{i}"))
        } else {
            Frame::Null
        };
        assert_eq!(c.read(), want, "GET k{i}");
    }
    assert_eq!(c.read(), Frame::Null, "an expired key stays expired");
}

#[test]
fn unknown_commands_and_wrong_arity_keep_the_connection() {
    let srv = KvServer::start(&[]);
    let mut c = srv.client();
    assert_eq!(
        c.cmd(&["FOO", "bar"]),
        err("ERR unknown command 'FOO', with args beginning with: 'bar' ")
    );
    assert_eq!(
        c.cmd(&["GET"]),
        err("ERR wrong number of arguments for 'get' command")
    );
    assert_eq!(
        c.cmd(&["SET", "k", "v", "EX", "abc"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        c.cmd(&["EXPIRE", "k", "ten"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        c.cmd(&["SET", "k", "v", "PX", "-5"]),
        err("ERR invalid expire time in 'set' command")
    );
    assert_eq!(c.cmd(&["PING"]), simple("PONG"));
}

/// Sends `input`, expects Redis's protocol error reply (or a close), then a closed connection.
fn refused(srv: &KvServer, input: &[u8], want: &str) {
    let mut c = srv.client();
    c.send_raw(input);
    let frames = c.read_to_close();
    assert_eq!(
        frames,
        vec![err(want)],
        "{:?}",
        String::from_utf8_lossy(input)
    );
}

#[test]
fn protocol_errors_are_redis_errors_then_close() {
    let srv = KvServer::start(&[]);
    refused(
        &srv,
        b"*abc\r\n",
        "ERR Protocol error: invalid multibulk length",
    );
    refused(
        &srv,
        b"*1\r\n$-1\r\n",
        "ERR Protocol error: invalid bulk length",
    );
    refused(
        &srv,
        b"*1\r\nGET\r\n",
        "ERR Protocol error: expected '$', got 'G'",
    );
    refused(
        &srv,
        b"SET \"a b\r\n",
        "ERR Protocol error: unbalanced quotes in request",
    );
    refused(
        &srv,
        b"*3000000000\r\n",
        "ERR Protocol error: invalid multibulk length",
    );
    // Requests before the bad one are answered first.
    let mut c = srv.client();
    c.send_raw(b"PING\r\n*1\r\n$x\r\n");
    assert_eq!(
        c.read_to_close(),
        vec![
            simple("PONG"),
            err("ERR Protocol error: invalid bulk length")
        ]
    );
}

#[test]
fn a_bulk_length_of_two_to_the_forty_allocates_nothing() {
    let srv = KvServer::start(&[]);
    let before = srv.rss_kib();
    for _ in 0..20 {
        refused(
            &srv,
            b"*2\r\n$3\r\nGET\r\n$1099511627776\r\n",
            "ERR Protocol error: invalid bulk length",
        );
    }
    let grown = srv.rss_kib().saturating_sub(before);
    assert!(grown < 16 * 1024, "RSS grew {grown} KiB");
    assert_eq!(srv.client().cmd(&["PING"]), simple("PONG"));
}

#[test]
fn announced_lengths_are_not_allocated_before_the_bytes_come() {
    let srv = KvServer::start(&[]);
    let (before, vm_before) = (srv.rss_kib(), srv.vm_kib());
    // Twenty clients each announce a value just under 512 MiB and send 100 KiB of it.
    let clients: Vec<Client> = (0..20)
        .map(|_| {
            let mut c = srv.client();
            c.send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$536870000\r\n");
            c.send_raw(&vec![b'x'; 100 * 1024]);
            c
        })
        .collect();
    let mut other = srv.client();
    assert_eq!(other.cmd(&["PING"]), simple("PONG"));
    let grown = srv.rss_kib().saturating_sub(before);
    assert!(grown < 64 * 1024, "RSS grew {grown} KiB");
    // Not even reserved: 20 x 512 MiB would be 10 GiB of address space.
    let reserved = srv.vm_kib().saturating_sub(vm_before);
    assert!(reserved < 1024 * 1024, "virtual memory grew {reserved} KiB");
    drop(clients);
    assert_eq!(other.cmd(&["EXISTS", "k"]), int(0));
}

#[test]
fn negative_counts_are_empty_requests() {
    let srv = KvServer::start(&[]);
    let mut c = srv.client();
    c.send_raw(b"*-1\r\n*-100\r\n*0\r\nPING\r\n");
    assert_eq!(c.read(), simple("PONG"));
    assert_eq!(
        c.cmd(&["SCAN", "0", "COUNT", "-1"]),
        err("ERR syntax error")
    );
    assert_eq!(
        c.cmd(&["SETEX", "k", "-3", "v"]),
        err("ERR invalid expire time in 'setex' command")
    );
}

#[test]
fn a_100_mb_inline_line_is_refused_at_64_kib_and_others_are_served() {
    let srv = KvServer::start(&[]);
    let before = srv.rss_kib();
    let mut other = srv.client();
    let mut flood = srv.client();
    let writer = flood.s.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        let mut w = writer;
        let chunk = vec![b'A'; 1 << 20];
        let mut sent = 0usize;
        for _ in 0..100 {
            if w.write_all(&chunk).is_err() {
                break;
            }
            sent += chunk.len();
        }
        sent
    });
    // An error reply or a closed connection; nothing else.
    let frames = flood.read_to_close();
    assert!(
        frames.is_empty() || frames == vec![err("ERR Protocol error: too big inline request")],
        "{frames:?}"
    );
    let sent = sender.join().unwrap();
    assert!(sent < 100 << 20, "the server read all {sent} bytes");
    assert_eq!(other.cmd(&["SET", "still", "here"]), simple("OK"));
    assert_eq!(other.cmd(&["GET", "still"]), bulk("here"));
    let grown = srv.rss_kib().saturating_sub(before);
    assert!(grown < 32 * 1024, "RSS grew {grown} KiB");
}

#[test]
fn binary_garbage_gets_an_error_or_a_close_and_the_server_survives() {
    let mut srv = KvServer::start(&[]);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for round in 0..20 {
        let mut junk = Vec::with_capacity(256 * 1024);
        for _ in 0..256 * 1024 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            junk.push(seed as u8);
        }
        if round % 2 == 0 {
            junk[0] = b'*';
        }
        let mut c = srv.client();
        let _ = c.s.write_all(&junk);
        let _ = c.s.shutdown(std::net::Shutdown::Write);
        let _ = c.s.set_read_timeout(Some(Duration::from_secs(20)));
        // Whatever comes back must be well-formed RESP (decoded by the client).
        let _ = c.read_to_close();
    }
    assert!(srv.alive());
    assert_eq!(srv.client().cmd(&["PING"]), simple("PONG"));
}

#[test]
fn many_clients_at_once() {
    let srv = KvServer::start(&[]);
    let addr = srv.kv;
    let threads: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for i in 0..200 {
                    let k = format!("t{t}:{i}");
                    assert_eq!(c.cmd(&["SET", &k, &i.to_string()]), simple("OK"));
                    assert_eq!(c.cmd(&["INCR", &k]), int(i + 1));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(srv.client().cmd(&["DBSIZE"]), int(1600));
}
