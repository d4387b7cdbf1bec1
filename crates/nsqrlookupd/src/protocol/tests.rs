//! Parser tests: every nsqlookupd error string byte for byte, the line rules (trimming, single-
//! space splitting, case), IDENTIFY body framing, EOF errors, and a property test that no input
//! makes the parser panic or claim more bytes than it was given.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::*;

const BODY: &[u8] =
    br#"{"broadcast_address":"127.0.0.1","tcp_port":4150,"http_port":4151,"version":"1.3.0"}"#;

fn identify_bytes(body: &[u8]) -> Vec<u8> {
    let mut v = b"IDENTIFY\n".to_vec();
    v.extend_from_slice(&(body.len() as i32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

fn err(buf: &[u8], identified: bool) -> String {
    let e = parse(buf, identified).unwrap_err();
    String::from_utf8(e.payload()).unwrap()
}

fn ok(buf: &[u8], identified: bool) -> (Request, usize) {
    parse(buf, identified).unwrap().unwrap()
}

fn target(topic: &str, channel: Option<&str>) -> Target {
    Target {
        topic: topic.into(),
        channel: channel.map(Into::into),
    }
}

#[test]
fn magic_and_replies() {
    assert!(is_v1_magic(b"  V1"));
    assert!(!is_v1_magic(b"  V2"));
    assert!(!is_v1_magic(b" V1"));
    let mut out = Vec::new();
    encode_reply(&mut out, b"OK");
    encode_reply(&mut out, BAD_PROTOCOL);
    assert_eq!(out, b"\0\0\0\x02OK\0\0\0\x0eE_BAD_PROTOCOL");
}

#[test]
fn commands() {
    assert_eq!(ok(b"PING\n", false), (Request::Ping, 5));
    assert_eq!(ok(b"PING a b\nPING\n", true), (Request::Ping, 9));
    assert_eq!(
        ok(b"REGISTER t c\n", true),
        (Request::Register(target("t", Some("c"))), 13)
    );
    assert_eq!(
        ok(b"UNREGISTER t#ephemeral\n", true).0,
        Request::Unregister(target("t#ephemeral", None))
    );
    // Trimmed with Go's TrimSpace: \r\n, tabs, Unicode spaces.
    assert_eq!(
        ok(b"REGISTER t c\r\n", true).0,
        Request::Register(target("t", Some("c")))
    );
    assert_eq!(ok(b" \t PING \x0b\r\n", false).0, Request::Ping);
    assert_eq!(
        ok("\u{a0}PING\u{3000}\n".as_bytes(), false).0,
        Request::Ping
    );
    // Split on single spaces: an empty second word means "no channel".
    assert_eq!(
        ok(b"REGISTER t  c!\n", true).0,
        Request::Register(target("t", None))
    );
    assert_eq!(
        ok(b"REGISTER t c x y\n", true).0,
        Request::Register(target("t", Some("c")))
    );
    // Incomplete.
    for partial in [&b""[..], b"PING", b"REGISTER t c"] {
        assert_eq!(parse(partial, true), Ok(None));
    }
}

#[test]
fn error_strings() {
    assert_eq!(err(b"\n", false), "E_INVALID invalid command ");
    assert_eq!(err(b"ping\n", false), "E_INVALID invalid command ping");
    assert_eq!(err(b"NOP x\n", true), "E_INVALID invalid command NOP");
    assert_eq!(
        err(b"REGISTER t\n", false),
        "E_INVALID client must IDENTIFY"
    );
    assert_eq!(
        err(b"UNREGISTER\n", false),
        "E_INVALID client must IDENTIFY"
    );
    assert_eq!(err(b"IDENTIFY\n", true), "E_INVALID cannot IDENTIFY again");
    assert_eq!(
        err(b"REGISTER\n", true),
        "E_INVALID REGISTER insufficient number of params"
    );
    assert_eq!(
        err(b"UNREGISTER \n", true),
        "E_INVALID UNREGISTER insufficient number of params"
    );
    assert_eq!(
        err(b"REGISTER t! c\n", true),
        "E_BAD_TOPIC REGISTER topic name 't!' is not valid"
    );
    assert_eq!(
        err(b"REGISTER  t\n", true),
        "E_BAD_TOPIC REGISTER topic name '' is not valid"
    );
    assert_eq!(
        err(b"UNREGISTER t c!\n", true),
        "E_BAD_CHANNEL UNREGISTER channel name 'c!' is not valid"
    );
    let long = "a".repeat(65);
    assert_eq!(
        err(format!("REGISTER {long}\n").as_bytes(), true),
        format!("E_BAD_TOPIC REGISTER topic name '{long}' is not valid")
    );
    // Raw bytes are quoted unchanged.
    let e = parse(b"REGISTER t\xff\n", true).unwrap_err();
    assert_eq!(
        e.payload(),
        b"E_BAD_TOPIC REGISTER topic name 't\xff' is not valid"
    );
    assert_eq!(
        parse(b"\xfe\xff\n", true).unwrap_err().payload(),
        b"E_INVALID invalid command \xfe\xff"
    );
}

#[test]
fn identify_framing() {
    let buf = identify_bytes(BODY);
    let (req, n) = ok(&buf, false);
    assert_eq!(n, buf.len());
    let Request::Identify(b) = req else {
        panic!("{req:?}")
    };
    assert_eq!(
        (b.broadcast_address.as_str(), b.tcp_port, b.http_port),
        ("127.0.0.1", 4150, 4151)
    );
    // Every strict prefix needs more bytes; pipelined bytes after the body stay unconsumed.
    for cut in 0..buf.len() {
        assert_eq!(parse(&buf[..cut], false), Ok(None), "cut {cut}");
    }
    let mut two = buf.clone();
    two.extend_from_slice(b"PING\n");
    assert_eq!(ok(&two, false).1, buf.len());

    assert_eq!(
        err(&identify_bytes(b"{"), false),
        "E_BAD_BODY IDENTIFY failed to decode JSON body"
    );
    assert_eq!(
        err(&identify_bytes(b""), false),
        "E_BAD_BODY IDENTIFY failed to decode JSON body"
    );
    assert_eq!(
        err(&identify_bytes(b"{}"), false),
        "E_BAD_BODY IDENTIFY missing fields"
    );
    assert_eq!(
        err(b"IDENTIFY\n\xff\xff\xff\xff", false),
        "E_BAD_BODY IDENTIFY invalid body size -1"
    );
    assert_eq!(
        err(b"IDENTIFY\n\x00\x50\x00\x01", false),
        "E_BAD_BODY IDENTIFY invalid body size 5242881"
    );
    // The size check does not wait for the body.
    assert!(parse(b"IDENTIFY\n\x80\x00\x00\x00", false).is_err());
}

#[test]
fn eof_errors() {
    assert_eq!(error_at_eof(b""), None);
    assert_eq!(error_at_eof(b"PIN"), None);
    assert_eq!(error_at_eof(b"IDENTIFY"), None);
    let text = |b: &[u8]| String::from_utf8(error_at_eof(b).unwrap().payload()).unwrap();
    assert_eq!(
        text(b"IDENTIFY\n"),
        "E_BAD_BODY IDENTIFY failed to read body size"
    );
    assert_eq!(
        text(b"IDENTIFY x\r\n\0\0"),
        "E_BAD_BODY IDENTIFY failed to read body size"
    );
    assert_eq!(
        text(b"IDENTIFY\n\0\0\0\x09{\"a\""),
        "E_BAD_BODY IDENTIFY failed to read body"
    );
}

#[test]
fn line_length_bound() {
    let mut line = vec![b'x'; MAX_LINE_LEN - 1];
    assert_eq!(parse(&line, true), Ok(None));
    line.push(b'\n');
    assert!(err(&line, true).starts_with("E_INVALID invalid command xxx"));
    let line = vec![b'x'; MAX_LINE_LEN];
    assert_eq!(
        err(&line, true),
        format!("E_INVALID command line longer than {MAX_LINE_LEN} bytes")
    );
}

#[test]
fn go_trim_space() {
    assert_eq!(trim_go_space(b" \t\r\n a b \x0c\x0b"), b"a b");
    assert_eq!(trim_go_space("\u{85}x\u{2029}".as_bytes()), b"x");
    assert_eq!(trim_go_space(b"\xff x \xc2"), b"\xff x \xc2");
    assert_eq!(trim_go_space(b"   "), b"");
    assert_eq!(trim_go_space(b""), b"");
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(buf in proptest::collection::vec(any::<u8>(), 0..512), identified: bool) {
        if let Ok(Some((_, n))) = parse(&buf, identified) {
            prop_assert!(n > 0 && n <= buf.len());
        }
        let _ = error_at_eof(&buf);
        let _ = trim_go_space(&buf);
    }

    #[test]
    fn command_like_input_never_panics(
        words in proptest::collection::vec(
            prop_oneof![
                Just(b"IDENTIFY".to_vec()), Just(b"REGISTER".to_vec()), Just(b"UNREGISTER".to_vec()),
                Just(b"PING".to_vec()), Just(b"\n".to_vec()), Just(b" ".to_vec()),
                Just(BODY.to_vec()), proptest::collection::vec(any::<u8>(), 0..8),
            ],
            0..12,
        ),
        identified: bool,
    ) {
        let buf = words.concat();
        let mut rest = &buf[..];
        let mut ident = identified;
        // Parse the whole stream as the connection would.
        while let Ok(Some((req, n))) = parse(rest, ident) {
            prop_assert!(n > 0 && n <= rest.len());
            ident |= matches!(req, Request::Identify(_));
            rest = &rest[n..];
        }
        let _ = error_at_eof(rest);
    }
}
