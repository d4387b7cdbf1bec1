//! TCP protocol framing and connection model: the `  V2` magic handshake, command-line parsing
//! (case, empty line, CR LF, single-space splitting, line length limit), the exact byte layout of
//! response and error frames, NOP, which errors are fatal (connection closed after the error frame)
//! and which are not (FIN/REQ/TOUCH failures), and in-order responses for pipelined commands.
use crate::common::*;

use std::io::Read;
use std::time::Duration;

/// Read exactly `n` raw bytes from the connection.
fn read_raw(c: &mut Conn, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    c.s.read_exact(&mut b).expect("read raw bytes");
    b
}

#[test]
fn bad_magic_gets_framed_bad_protocol_then_close() {
    let s = Server::start(&[]);
    for magic in [&b"  V1"[..], b"V2  ", b"XXXX", b"  v2"] {
        let mut c = s.connect_raw();
        c.write(magic);
        // [size=4+14][type=1]["E_BAD_PROTOCOL"]
        let raw = read_raw(&mut c, 8 + 14);
        assert_eq!(&raw[0..4], &18i32.to_be_bytes(), "magic {magic:?}");
        assert_eq!(&raw[4..8], &FRAME_ERROR.to_be_bytes(), "magic {magic:?}");
        assert_eq!(&raw[8..], b"E_BAD_PROTOCOL", "magic {magic:?}");
        assert!(c.expect_closed(), "not closed after bad magic {magic:?}");
    }
}

#[test]
fn good_magic_then_commands_work() {
    let s = Server::start(&[]);
    let mut c = s.connect_raw();
    // magic and the first command in one write
    c.write(b"  V2PUB t\n\x00\x00\x00\x01x");
    c.expect_ok();
    // the magic split over several writes is also fine
    let mut c = s.connect_raw();
    c.write(b" ");
    std::thread::sleep(Duration::from_millis(50));
    c.write(b" V");
    std::thread::sleep(Duration::from_millis(50));
    c.write(b"2");
    c.publish("t", b"y");
}

#[test]
fn response_frame_byte_layout() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.cmd_body("PUB t", b"hello");
    let raw = read_raw(&mut c, 10);
    assert_eq!(raw, [0, 0, 0, 6, 0, 0, 0, 0, b'O', b'K']);
}

#[test]
fn error_frame_byte_layout() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.cmd("BOGUS");
    let text = b"E_INVALID invalid command BOGUS";
    let raw = read_raw(&mut c, 8 + text.len());
    assert_eq!(&raw[0..4], &(4 + text.len() as i32).to_be_bytes());
    assert_eq!(&raw[4..8], &[0, 0, 0, 1]);
    assert_eq!(&raw[8..], text);
    assert!(c.expect_closed());
}

#[test]
fn unknown_command_is_fatal() {
    let s = Server::start(&[]);
    for (line, err) in [
        ("FOO", "E_INVALID invalid command FOO"),
        ("FOO bar baz", "E_INVALID invalid command FOO"),
        ("pub t", "E_INVALID invalid command pub"),
        ("Pub t", "E_INVALID invalid command Pub"),
        ("nop", "E_INVALID invalid command nop"),
        (" NOP", "E_INVALID invalid command "),
    ] {
        let mut c = s.connect();
        c.cmd(line);
        c.expect_fatal(err);
    }
}

#[test]
fn empty_line_is_fatal() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.write(b"\n");
    c.expect_fatal("E_INVALID invalid command ");
    // a bare CR LF is an empty line too (the CR is stripped)
    let mut c = s.connect();
    c.write(b"\r\n");
    c.expect_fatal("E_INVALID invalid command ");
}

#[test]
fn cr_lf_line_endings_accepted() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.write(b"NOP\r\n");
    c.write(b"PUB crlf\r\n\x00\x00\x00\x02hi");
    c.expect_ok();
    let mut sub = s.connect();
    sub.write(b"SUB crlf ch\r\n");
    sub.expect_ok();
    sub.write(b"RDY 1\r\n");
    let m = sub.expect_message();
    assert_eq!(m.body, b"hi");
    sub.write(format!("FIN {}\r\n", m.id_str()).as_bytes());
    sub.write(b"NOP\r\n");
    // the names carry no trailing CR
    let t = s.topic_stats("crlf").expect("topic crlf exists");
    assert_eq!(t["channels"][0]["channel_name"], "ch");
    assert!(wait_until(Duration::from_secs(5), || s.channel_stat(
        "crlf",
        "ch",
        "in_flight_count"
    ) == Some(0)));
}

#[test]
fn params_split_on_single_spaces() {
    let s = Server::start(&[]);
    // two spaces: the topic is the empty string between them
    let mut c = s.connect();
    c.cmd("PUB  t");
    c.expect_fatal("E_BAD_TOPIC PUB topic name \"\" is not valid");
    // a trailing space: empty topic
    let mut c = s.connect();
    c.cmd("PUB ");
    c.expect_fatal("E_BAD_TOPIC PUB topic name \"\" is not valid");
    // extra params beyond those used are ignored
    let mut c = s.connect();
    c.cmd_body("PUB extra a b c", b"x");
    c.expect_ok();
    assert!(s.topic_stats("extra").is_some());
}

#[test]
fn nop_has_no_response() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.cmd("NOP");
    assert!(c.expect_silence(Duration::from_millis(300)));
    // NOP in the middle of a pipeline produces nothing; the next response is the PUB's
    c.write(b"NOP\nNOP\nPUB t\n\x00\x00\x00\x01a");
    c.expect_ok();
    assert!(c.expect_silence(Duration::from_millis(200)));
    // NOP after SUB is fine too, and extra params are ignored
    let mut c = s.connect();
    c.sub("t", "c");
    c.cmd("NOP x y");
    assert!(c.expect_silence(Duration::from_millis(200)));
    c.publish("t", b"b");
}

#[test]
fn fatal_errors_close_the_connection() {
    let s = Server::start(&[]);
    // state errors
    for (cmd, err) in [
        ("RDY 1", "E_INVALID cannot RDY in current state"),
        (
            "FIN 0000000000000000",
            "E_INVALID cannot FIN in current state",
        ),
        (
            "REQ 0000000000000000 0",
            "E_INVALID cannot REQ in current state",
        ),
        (
            "TOUCH 0000000000000000",
            "E_INVALID cannot TOUCH in current state",
        ),
        ("CLS", "E_INVALID cannot CLS in current state"),
        ("SUB t", "E_INVALID SUB insufficient number of parameters"),
        ("PUB", "E_INVALID PUB insufficient number of parameters"),
    ] {
        let mut c = s.connect();
        c.cmd(cmd);
        c.expect_fatal(err);
    }
    // after SUB: malformed FIN is fatal, even though FIN failures are not
    let mut c = s.connect();
    c.sub("t", "c");
    c.cmd("FIN short");
    c.expect_fatal("E_INVALID invalid message ID");
}

#[test]
fn fin_req_touch_failures_are_not_fatal() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.sub("t", "c");
    let id = "0123456789abcdef";
    c.fin(id);
    c.expect_error(&format!("E_FIN_FAILED FIN {id} failed ID not in flight"));
    c.req(id, 0);
    c.expect_error(&format!("E_REQ_FAILED REQ {id} failed ID not in flight"));
    c.touch(id);
    c.expect_error(&format!(
        "E_TOUCH_FAILED TOUCH {id} failed ID not in flight"
    ));
    // still open and usable for publishing and consuming
    c.publish("t", b"still here");
    c.rdy(1);
    let m = c.expect_message();
    assert_eq!(m.body, b"still here");
    c.fin(&m.id_str());
    c.publish("other", b"and again");
}

#[test]
fn pipelined_pubs_answered_in_order() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let mut buf = Vec::new();
    for i in 0..100 {
        let body = format!("m{i}");
        buf.extend_from_slice(b"PUB pipe\n");
        buf.extend_from_slice(&(body.len() as i32).to_be_bytes());
        buf.extend_from_slice(body.as_bytes());
    }
    c.write(&buf);
    for _ in 0..100 {
        c.expect_ok();
    }
    assert_eq!(s.topic_stat("pipe", "message_count"), Some(100));

    // mixed commands in one write: each response in command order
    let mut buf = Vec::new();
    buf.extend_from_slice(b"PUB mix\n\x00\x00\x00\x01a");
    buf.extend_from_slice(b"NOP\n");
    let mp = mpub_body(&[b"b", b"c"]);
    buf.extend_from_slice(b"MPUB mix\n");
    buf.extend_from_slice(&(mp.len() as i32).to_be_bytes());
    buf.extend_from_slice(&mp);
    buf.extend_from_slice(b"DPUB mix 0\n\x00\x00\x00\x01d");
    buf.extend_from_slice(b"PUB bad$\n");
    c.write(&buf);
    c.expect_ok();
    c.expect_ok();
    c.expect_ok();
    c.expect_fatal("E_BAD_TOPIC PUB topic name \"bad$\" is not valid");
    assert_eq!(s.topic_stat("mix", "message_count"), Some(4));
}

#[test]
fn commands_after_a_fatal_error_are_not_executed() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    c.write(b"PUB after\n\x00\x00\x00\x01aBOGUS\nPUB after\n\x00\x00\x00\x01b");
    c.expect_ok();
    c.expect_fatal("E_INVALID invalid command BOGUS");
    assert_eq!(s.topic_stat("after", "message_count"), Some(1));
}

#[test]
fn command_split_across_writes() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    for chunk in [&b"PU"[..], b"B sp", b"lit\n\x00\x00", b"\x00\x05he", b"llo"] {
        c.write(chunk);
        std::thread::sleep(Duration::from_millis(30));
    }
    c.expect_ok();
    let m = {
        let mut sub = s.connect();
        sub.sub("split", "c");
        sub.rdy(1);
        sub.expect_message()
    };
    assert_eq!(m.body, b"hello");
}

#[test]
fn overlong_command_line_drops_connection_without_frame() {
    let s = Server::start(&[]);
    let mut c = s.connect();
    let mut line = b"PUB ".to_vec();
    line.extend(std::iter::repeat_n(b'a', 20_000));
    line.push(b'\n');
    let _ = std::io::Write::write_all(&mut c.s, &line);
    // no frame at all: EOF (or reset) straight away
    let mut b = [0u8; 64];
    let n = loop {
        match c.s.read(&mut b) {
            Ok(n) => break n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break 0,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => panic!("connection not closed: {e}"),
        }
    };
    assert_eq!(n, 0, "unexpected bytes {:?}", &b[..n]);
    // the server is fine
    s.connect().publish("ok", b"x");
}
