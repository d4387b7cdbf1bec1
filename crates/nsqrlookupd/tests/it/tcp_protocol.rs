//! TCP protocol V1, black box: magic, IDENTIFY (reply, every error), REGISTER / UNREGISTER
//! (every error), PING, unknown commands, line rules, pipelining, EOF handling, and the
//! negative-size quirk where upstream nsqlookupd crashes.
//!
//! Run against upstream with `NSQLOOKUPD_BIN=/path/to/nsqlookupd`; the few places where
//! nsqrlookupd deliberately differs assert each side's behaviour (docs/compatibility.md).

use std::time::Duration;

use crate::common::*;

const BODY: &str =
    r#"{"broadcast_address":"127.0.0.1","tcp_port":4150,"http_port":4151,"version":"1.3.0"}"#;

#[test]
fn bad_magic_gets_unframed_error_and_close() {
    let l = Lookupd::start(&[]);
    for magic in [&b"  V2"[..], b"V1  ", b"\0\0\0\0", b"GET "] {
        let mut c = l.connect_raw();
        c.write(magic);
        // [int32 14]E_BAD_PROTOCOL: a size prefix and no frame type.
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut c.s, &mut raw).expect("read");
        assert_eq!(raw, b"\0\0\0\x0eE_BAD_PROTOCOL", "{magic:?}");
    }
    // Fewer than 4 bytes, then EOF: closed without a reply.
    let mut c = l.connect_raw();
    c.write(b"  V");
    c.shutdown_write();
    assert_eq!(c.read_reply(), None);
    assert!(c.expect_closed());
    // The server is fine.
    l.connect().ok("PING");
}

#[test]
fn identify_reply_and_registration_as_client() {
    let l = Lookupd::start(&[]);
    let mut c = l.connect();
    let reply = c.identify(BODY.as_bytes());
    assert_eq!(
        String::from_utf8(reply).unwrap(),
        format!(
            r#"{{"broadcast_address":"127.0.0.1","hostname":"{}","http_port":{},"tcp_port":{},"version":"1.3.0"}}"#,
            os_hostname(),
            l.http.port(),
            l.tcp.port()
        )
    );
    // The peer is a node, keyed by its remote address; REGISTER is now allowed.
    let nodes = l.get_json("/nodes");
    assert_eq!(
        nodes["producers"][0]["remote_address"],
        c.local_addr().as_str()
    );
    c.ok("REGISTER t");
    c.expect_silence(Duration::from_millis(50));
}

#[test]
fn identify_with_broadcast_address_flag() {
    let l = Lookupd::start(&["--broadcast-address=lookupd.example:1"]);
    let mut c = l.connect();
    let reply: serde_json::Value = serde_json::from_slice(&c.identify(BODY.as_bytes())).unwrap();
    assert_eq!(reply["broadcast_address"], "lookupd.example:1");
}

#[test]
fn identify_errors() {
    let l = Lookupd::start(&[]);
    let fatal = |bytes: &[u8], text: &str| {
        let mut c = l.connect();
        c.write(bytes);
        c.expect_fatal(text);
    };
    let mut twice = identify_bytes(BODY.as_bytes());
    twice.extend_from_slice(b"IDENTIFY\n");
    let mut c = l.connect();
    c.write(&twice);
    assert!(c.reply_text().starts_with('{'));
    c.expect_fatal("E_INVALID cannot IDENTIFY again");

    for bad in [&b"{"[..], b"", b"[]", b"\"x\"", b"{\"tcp_port\":\"1\"}"] {
        fatal(
            &identify_bytes(bad),
            "E_BAD_BODY IDENTIFY failed to decode JSON body",
        );
    }
    for body in [
        &b"{}"[..],
        b"null",
        br#"{"broadcast_address":"a","tcp_port":1,"http_port":2}"#,
        br#"{"broadcast_address":"a","tcp_port":0,"http_port":2,"version":"v"}"#,
        br#"{"broadcast_address":"","tcp_port":1,"http_port":2,"version":"v"}"#,
    ] {
        fatal(&identify_bytes(body), "E_BAD_BODY IDENTIFY missing fields");
    }
    // Go decoding rules: case-insensitive keys, null keeps a value, negative ports pass.
    let mut c = l.connect();
    let ok = br#"{"BROADCAST_ADDRESS":"a","Tcp_Port":-1,"tcp_port":null,"http_port":2,"version":"v","x":[{}]}"#;
    assert!(c.identify(ok).starts_with(b"{"));
    let debug = l.get_json("/debug");
    assert_eq!(debug["client::"][0]["tcp_port"], -1);
    assert_eq!(debug["client::"][0]["broadcast_address"], "a");
}

#[test]
fn identify_cut_short_by_eof() {
    let l = Lookupd::start(&[]);
    for (bytes, text) in [
        (
            &b"IDENTIFY\n"[..],
            "E_BAD_BODY IDENTIFY failed to read body size",
        ),
        (
            b"IDENTIFY\n\0\0",
            "E_BAD_BODY IDENTIFY failed to read body size",
        ),
        (
            b"IDENTIFY\n\0\0\0\x10{\"a\"",
            "E_BAD_BODY IDENTIFY failed to read body",
        ),
    ] {
        let mut c = l.connect();
        c.write(bytes);
        c.shutdown_write();
        c.expect_fatal(text);
    }
    // A partial line at EOF: closed without a reply.
    let mut c = l.connect();
    c.write(b"REGIST");
    c.shutdown_write();
    assert_eq!(c.read_reply(), None);
}

#[test]
fn register_and_unregister_errors() {
    let l = Lookupd::start(&[]);
    let fatal = |identify: bool, line: &str, text: &str| {
        let mut c = l.connect();
        if identify {
            c.identify(BODY.as_bytes());
        }
        c.cmd(line);
        c.expect_fatal(text);
    };
    let long = "a".repeat(65);
    for cmd in ["REGISTER", "UNREGISTER"] {
        fatal(
            false,
            &format!("{cmd} t c"),
            "E_INVALID client must IDENTIFY",
        );
        fatal(
            true,
            cmd,
            &format!("E_INVALID {cmd} insufficient number of params"),
        );
        fatal(
            true,
            &format!("{cmd} "),
            &format!("E_INVALID {cmd} insufficient number of params"),
        );
        fatal(
            true,
            &format!("{cmd} t! c"),
            &format!("E_BAD_TOPIC {cmd} topic name 't!' is not valid"),
        );
        fatal(
            true,
            &format!("{cmd}  t"),
            &format!("E_BAD_TOPIC {cmd} topic name '' is not valid"),
        );
        fatal(
            true,
            &format!("{cmd} {long}"),
            &format!("E_BAD_TOPIC {cmd} topic name '{long}' is not valid"),
        );
        fatal(
            true,
            &format!("{cmd} #ephemeral"),
            &format!("E_BAD_TOPIC {cmd} topic name '#ephemeral' is not valid"),
        );
        fatal(
            true,
            &format!("{cmd} t c:d"),
            &format!("E_BAD_CHANNEL {cmd} channel name 'c:d' is not valid"),
        );
        fatal(
            true,
            &format!("{cmd} t {long}"),
            &format!("E_BAD_CHANNEL {cmd} channel name '{long}' is not valid"),
        );
    }
    // Valid names, including the longest and #ephemeral ones.
    let mut c = l.connect();
    c.identify(BODY.as_bytes());
    let max = "b".repeat(64);
    for line in [
        format!("REGISTER {max} {max}"),
        "REGISTER a.b_c-D9#ephemeral x#ephemeral".to_string(),
        "UNREGISTER never".to_string(),
        "UNREGISTER never c".to_string(),
    ] {
        c.ok(&line);
    }
}

#[test]
fn ping_and_unknown_commands() {
    let l = Lookupd::start(&[]);
    // PING before IDENTIFY only answers.
    let mut c = l.connect();
    c.ok("PING");
    c.ok("PING extra words");
    assert_eq!(l.get_json("/nodes")["producers"], serde_json::json!([]));
    c.identify(BODY.as_bytes());
    c.ok("PING");

    for (line, text) in [
        ("", "E_INVALID invalid command "),
        ("ping", "E_INVALID invalid command ping"),
        ("PINGX", "E_INVALID invalid command PINGX"),
        ("SUB t c", "E_INVALID invalid command SUB"),
        ("Register t", "E_INVALID invalid command Register"),
    ] {
        let mut c = l.connect();
        c.cmd(line);
        c.expect_fatal(text);
    }
    // Raw bytes are quoted back unchanged.
    let mut c = l.connect();
    c.write(b"\xff\xfe x\n");
    assert_eq!(
        c.read_reply().unwrap(),
        b"E_INVALID invalid command \xff\xfe"
    );
}

#[test]
fn lines_are_trimmed_and_split_on_single_spaces() {
    let l = Lookupd::start(&[]);
    let mut c = l.connect();
    c.identify(BODY.as_bytes());
    c.write(b"REGISTER t1 c1\r\n");
    c.expect_ok();
    c.write(b" \tPING\t \r\n");
    c.expect_ok();
    // Two spaces: the channel word is empty, so only the topic registers.
    c.ok("REGISTER t2  c2!");
    assert_eq!(l.list("/channels?topic=t1", "channels"), ["c1"]);
    assert!(l.list("/channels?topic=t2", "channels").is_empty());
    assert_eq!(l.list("/topics", "topics"), ["t1", "t2"]);
}

#[test]
fn pipelined_commands_answer_in_order_until_the_first_error() {
    let l = Lookupd::start(&[]);
    let mut c = l.connect_raw();
    let mut all = b"  V1PING\n".to_vec();
    all.extend_from_slice(&identify_bytes(BODY.as_bytes()));
    all.extend_from_slice(b"REGISTER a x\nREGISTER b\nPING\nBOGUS\nREGISTER never\n");
    c.write(&all);
    assert_eq!(c.reply_text(), "OK");
    assert!(c.reply_text().starts_with('{'));
    for _ in 0..3 {
        c.expect_ok();
    }
    c.expect_fatal("E_INVALID invalid command BOGUS");
    assert!(l.lookup_producers("never").is_none());
    assert_eq!(l.list("/topics", "topics"), ["a", "b"]);
}

#[test]
fn disconnect_removes_the_peer_but_keeps_keys() {
    let l = Lookupd::start(&[]);
    let mut c = l.nsqd("127.0.0.1", 4150, 4151);
    c.ok("REGISTER t c");
    c.ok("REGISTER u");
    let me = c.local_addr();
    assert_eq!(l.lookup_producers("t").unwrap(), [me]);
    c.close();
    assert!(wait_until(Duration::from_secs(5), || l
        .lookup_producers("t")
        == Some(vec![])));
    assert_eq!(l.list("/topics", "topics"), ["t", "u"]);
    assert_eq!(l.list("/channels?topic=t", "channels"), ["c"]);
    assert_eq!(l.get_json("/debug"), serde_json::json!({}));
    assert_eq!(l.get_json("/nodes"), serde_json::json!({"producers": []}));
}

#[test]
fn fatal_error_drops_the_registrations_of_that_connection() {
    let l = Lookupd::start(&[]);
    let mut c = l.nsqd("127.0.0.1", 4150, 4151);
    c.ok("REGISTER t");
    c.cmd("REGISTER bad!");
    c.expect_fatal("E_BAD_TOPIC REGISTER topic name 'bad!' is not valid");
    assert!(wait_until(Duration::from_secs(5), || l
        .lookup_producers("t")
        == Some(vec![])));
}

#[test]
fn negative_identify_body_size() {
    let mut l = Lookupd::start(&[]);
    let mut c = l.connect();
    c.write(b"IDENTIFY\n\xff\xff\xff\xff");
    if is_upstream() {
        // Upstream nsqlookupd panics (makeslice: len out of range): the whole process dies.
        assert_eq!(c.read_reply(), None);
        assert!(l
            .wait_exit(Duration::from_secs(5))
            .is_some_and(|code| code != 0));
        return;
    }
    // nsqrlookupd refuses the size and keeps serving.
    c.expect_fatal("E_BAD_BODY IDENTIFY invalid body size -1");
    let mut c = l.connect();
    c.write(b"IDENTIFY\n\x80\x00\x00\x00");
    c.expect_fatal("E_BAD_BODY IDENTIFY invalid body size -2147483648");
    assert!(l.is_running());
    l.connect().ok("PING");
}

#[test]
fn oversized_identify_body() {
    let l = Lookupd::start(&[]);
    let mut c = l.connect();
    c.write(b"IDENTIFY\n\x00\x50\x00\x01"); // 5 MiB + 1
    if is_upstream() {
        // No bound upstream: it waits for the 5 MiB body.
        assert!(c.expect_silence(Duration::from_millis(200)));
        c.shutdown_write();
        c.expect_fatal("E_BAD_BODY IDENTIFY failed to read body");
        return;
    }
    c.expect_fatal("E_BAD_BODY IDENTIFY invalid body size 5242881");
    // Exactly the bound is read (and then judged as JSON).
    let mut c = l.connect();
    let mut body =
        br#"{"broadcast_address":"a","tcp_port":1,"http_port":2,"version":"v","pad":""#.to_vec();
    body.resize(5 * 1024 * 1024 - 2, b'x');
    body.extend_from_slice(b"\"}");
    assert!(c.identify(&body).starts_with(b"{"));
}

#[test]
fn overlong_line() {
    let l = Lookupd::start(&[]);
    let mut c = l.connect();
    let line = vec![b'x'; 20_000];
    c.write(&line);
    if is_upstream() {
        // No bound upstream: the line is buffered until its newline.
        assert!(c.expect_silence(Duration::from_millis(200)));
        c.write(b"\n");
        let reply = c.read_reply().unwrap();
        assert_eq!(reply.len(), "E_INVALID invalid command ".len() + line.len());
        return;
    }
    c.expect_fatal("E_INVALID command line longer than 16384 bytes");
    // A long but bounded line is still judged as a command, as upstream.
    let mut c = l.connect();
    c.write(&[b'y'; 16_000]);
    c.write(b"\n");
    assert_eq!(
        c.read_reply().unwrap().len(),
        "E_INVALID invalid command ".len() + 16_000
    );
}
