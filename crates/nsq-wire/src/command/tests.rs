//! Parser tests: every error string of nsqd's reference section 3, plus a property test that
//! arbitrary bytes never panic the parser and never make it consume more than it was given.

use super::*;
use proptest::prelude::*;

fn p(input: &[u8], state: ClientState) -> Result<Option<Command>, ParseError> {
    let mut b = BytesMut::from(input);
    parse(&mut b, &Limits::default(), state)
}

fn p_err(input: &[u8], state: ClientState) -> String {
    match p(input, state) {
        Err(ParseError::Protocol(e)) => e.to_string(),
        Err(ParseError::ProtocolAfterTopic { error, .. }) => error.to_string(),
        other => panic!("expected error, got {other:?}"),
    }
}

fn with_body(line: &str, body: &[u8]) -> Vec<u8> {
    let mut v = line.as_bytes().to_vec();
    v.push(b'\n');
    v.extend_from_slice(&(body.len() as i32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

fn with_size(line: &str, size: i32) -> Vec<u8> {
    let mut v = line.as_bytes().to_vec();
    v.push(b'\n');
    v.extend_from_slice(&size.to_be_bytes());
    v
}

use ClientState::*;

#[test]
fn simple_commands() {
    assert_eq!(p(b"NOP\n", Init), Ok(Some(Command::Nop)));
    assert_eq!(p(b"NOP\r\n", Init), Ok(Some(Command::Nop)));
    assert_eq!(p(b"NOP", Init), Ok(None));
    assert_eq!(p(b"RDY 10\n", Subscribed), Ok(Some(Command::Rdy(10))));
    assert_eq!(p(b"RDY\n", Subscribed), Ok(Some(Command::Rdy(1))));
    assert_eq!(p(b"RDY \n", Subscribed), Ok(Some(Command::Rdy(0))));
    assert_eq!(p(b"RDY 5\n", Closing), Ok(Some(Command::Nop)));
    assert_eq!(p(b"CLS\n", Subscribed), Ok(Some(Command::Cls)));
    assert_eq!(
        p(b"FIN 0123456789abcdef\n", Subscribed),
        Ok(Some(Command::Fin(*b"0123456789abcdef")))
    );
    assert_eq!(
        p(b"REQ 0123456789abcdef 10\n", Closing),
        Ok(Some(Command::Req {
            id: *b"0123456789abcdef",
            delay_ms: 10
        }))
    );
    assert_eq!(
        p(b"REQ 0123456789abcdef \n", Subscribed),
        Ok(Some(Command::Req {
            id: *b"0123456789abcdef",
            delay_ms: 0
        }))
    );
}

#[test]
fn command_errors() {
    assert_eq!(p_err(b"pub t\n", Init), "E_INVALID invalid command pub");
    assert_eq!(p_err(b"\n", Init), "E_INVALID invalid command ");
    assert_eq!(
        p_err(b"RDY 1\n", Init),
        "E_INVALID cannot RDY in current state"
    );
    assert_eq!(
        p_err(b"RDY x\n", Subscribed),
        "E_INVALID RDY could not parse count x"
    );
    assert_eq!(
        p_err(b"RDY -1\n", Subscribed),
        "E_INVALID RDY could not parse count -1"
    );
    assert_eq!(
        p_err(b"RDY 2501\n", Subscribed),
        "E_INVALID RDY count 2501 out of range 0-2500"
    );
    assert_eq!(
        p_err(b"FIN x\n", Init),
        "E_INVALID cannot FIN in current state"
    );
    assert_eq!(
        p_err(b"FIN\n", Subscribed),
        "E_INVALID FIN insufficient number of params"
    );
    assert_eq!(
        p_err(b"FIN abc\n", Subscribed),
        "E_INVALID invalid message ID"
    );
    assert_eq!(
        p_err(b"REQ x 1\n", Init),
        "E_INVALID cannot REQ in current state"
    );
    assert_eq!(
        p_err(b"REQ 0123456789abcdef\n", Subscribed),
        "E_INVALID REQ insufficient number of params"
    );
    assert_eq!(
        p_err(b"REQ abc 1\n", Subscribed),
        "E_INVALID invalid message ID"
    );
    assert_eq!(
        p_err(b"REQ 0123456789abcdef -1\n", Subscribed),
        "E_INVALID REQ could not parse timeout -1"
    );
    assert_eq!(
        p_err(b"TOUCH x\n", Init),
        "E_INVALID cannot TOUCH in current state"
    );
    assert_eq!(
        p_err(b"TOUCH\n", Subscribed),
        "E_INVALID TOUCH insufficient number of params"
    );
    assert_eq!(
        p_err(b"CLS\n", Init),
        "E_INVALID cannot CLS in current state"
    );
    assert_eq!(
        p_err(b"CLS\n", Closing),
        "E_INVALID cannot CLS in current state"
    );
    assert_eq!(
        p_err(b"SUB t c\n", Subscribed),
        "E_INVALID cannot SUB in current state"
    );
    assert_eq!(
        p_err(b"SUB t\n", Init),
        "E_INVALID SUB insufficient number of parameters"
    );
    assert_eq!(
        p_err(b"SUB b$d c\n", Init),
        "E_BAD_TOPIC SUB topic name \"b$d\" is not valid"
    );
    assert_eq!(
        p_err(b"SUB t b$d\n", Init),
        "E_BAD_CHANNEL SUB channel name \"b$d\" is not valid"
    );
    let l = Limits {
        heartbeats_disabled: true,
        ..Limits::default()
    };
    let mut b = BytesMut::from(&b"SUB t c\n"[..]);
    assert_eq!(
        parse(&mut b, &l, Init).map_err(|e| e.to_string()),
        Err("E_INVALID cannot SUB with heartbeats disabled".to_string())
    );
}

#[test]
fn pub_errors_in_order() {
    assert_eq!(
        p_err(b"PUB\n", Init),
        "E_INVALID PUB insufficient number of parameters"
    );
    assert_eq!(
        p_err(b"PUB  t\n", Init),
        "E_BAD_TOPIC PUB topic name \"\" is not valid"
    );
    assert_eq!(
        p_err(&with_size("PUB t", 0), Init),
        "E_BAD_MESSAGE PUB invalid message body size 0"
    );
    assert_eq!(
        p_err(&with_size("PUB t", 1_048_577), Init),
        "E_BAD_MESSAGE PUB message too big 1048577 > 1048576"
    );
    assert_eq!(
        p(&with_body("PUB t", b"hi"), Init),
        Ok(Some(Command::Pub {
            topic: Bytes::from_static(b"t"),
            body: Bytes::from_static(b"hi")
        }))
    );
    // incomplete body: wait
    let full = with_body("PUB t", b"hello");
    assert_eq!(p(&full[..full.len() - 1], Init), Ok(None));
}

#[test]
fn dpub_errors() {
    assert_eq!(
        p_err(b"DPUB t\n", Init),
        "E_INVALID DPUB insufficient number of parameters"
    );
    assert_eq!(
        p_err(b"DPUB b$d 1\n", Init),
        "E_BAD_TOPIC DPUB topic name \"b$d\" is not valid"
    );
    assert_eq!(
        p_err(b"DPUB t x\n", Init),
        "E_INVALID DPUB could not parse timeout x"
    );
    assert_eq!(
        p_err(b"DPUB t 3600001\n", Init),
        "E_INVALID DPUB timeout 3600001 out of range 0-3600000"
    );
    assert_eq!(
        p_err(&with_size("DPUB t 1", -1), Init),
        "E_BAD_MESSAGE DPUB invalid message body size -1"
    );
    assert_eq!(
        p(&with_body("DPUB t ", b"x"), Init),
        Ok(Some(Command::Dpub {
            topic: Bytes::from_static(b"t"),
            defer_ms: 0,
            body: Bytes::from_static(b"x")
        }))
    );
}

fn mpub(msgs: &[&[u8]]) -> Vec<u8> {
    let mut v = (msgs.len() as i32).to_be_bytes().to_vec();
    for m in msgs {
        v.extend_from_slice(&(m.len() as i32).to_be_bytes());
        v.extend_from_slice(m);
    }
    v
}

#[test]
fn mpub_parse_and_errors() {
    assert_eq!(
        p(&with_body("MPUB t", &mpub(&[b"a", b"bc"])), Init),
        Ok(Some(Command::Mpub {
            topic: Bytes::from_static(b"t"),
            bodies: Bodies::concat([&b"a"[..], b"bc"]).expect("small")
        }))
    );
    assert_eq!(
        p_err(b"MPUB\n", Init),
        "E_INVALID MPUB insufficient number of parameters"
    );
    assert_eq!(
        p_err(b"MPUB b$d\n", Init),
        "E_BAD_TOPIC E_BAD_TOPIC MPUB topic name \"b$d\" is not valid"
    );
    let after = |input: &[u8]| match p(input, Init) {
        Err(ParseError::ProtocolAfterTopic { error, topic }) => (error.to_string(), topic),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        after(&with_size("MPUB t", 0)),
        ("E_BAD_BODY MPUB invalid body size 0".into(), "t".into())
    );
    assert_eq!(
        after(&with_size("MPUB t", 5_242_881)).0,
        "E_BAD_BODY MPUB body too big 5242881 > 5242880"
    );
    assert_eq!(
        after(&with_body("MPUB t", &0i32.to_be_bytes())).0,
        "E_BAD_BODY MPUB invalid message count 0"
    );
    let mut b = 1i32.to_be_bytes().to_vec();
    b.extend_from_slice(&0i32.to_be_bytes());
    assert_eq!(
        after(&with_body("MPUB t", &b)).0,
        "E_BAD_MESSAGE MPUB invalid message(0) body size 0"
    );
    let mut b = 2i32.to_be_bytes().to_vec();
    b.extend_from_slice(&1i32.to_be_bytes());
    b.push(b'x');
    assert_eq!(
        after(&with_body("MPUB t", &b)).0,
        "E_BAD_MESSAGE MPUB failed to read message(1) body size"
    );
    let mut b = 1i32.to_be_bytes().to_vec();
    b.extend_from_slice(&5i32.to_be_bytes());
    b.push(b'x');
    assert_eq!(
        after(&with_body("MPUB t", &b)).0,
        "E_BAD_MESSAGE MPUB failed to read message body"
    );
    let mut b = 1i32.to_be_bytes().to_vec();
    b.extend_from_slice(&1_048_577i32.to_be_bytes());
    assert_eq!(
        after(&with_body("MPUB t", &b)).0,
        "E_BAD_MESSAGE MPUB message too big 1048577 > 1048576"
    );
}

#[test]
fn identify_and_auth() {
    assert_eq!(
        p(&with_body("IDENTIFY", b"{}"), Init),
        Ok(Some(Command::Identify(Bytes::from_static(b"{}"))))
    );
    assert_eq!(
        p_err(&with_body("IDENTIFY", b"{}"), Subscribed),
        "E_INVALID cannot IDENTIFY in current state"
    );
    assert_eq!(
        p_err(&with_size("IDENTIFY", 5_242_881), Init),
        "E_BAD_BODY IDENTIFY body too big 5242881 > 5242880"
    );
    assert_eq!(
        p_err(&with_size("IDENTIFY", -3), Init),
        "E_BAD_BODY IDENTIFY invalid body size -3"
    );
    assert_eq!(
        p_err(&with_body("AUTH x", b"s"), Init),
        "E_INVALID AUTH invalid number of parameters"
    );
    assert_eq!(
        p_err(&with_body("AUTH", b"s"), Subscribed),
        "E_INVALID cannot AUTH in current state"
    );
    assert_eq!(
        p(&with_body("AUTH", b"s"), Init),
        Ok(Some(Command::Auth(Bytes::from_static(b"s"))))
    );
}

#[test]
fn tls_pending_rejects_everything_but_identify() {
    let l = Limits {
        tls_pending: true,
        ..Limits::default()
    };
    let mut b = BytesMut::from(&b"NOP\n"[..]);
    assert_eq!(
        parse(&mut b, &l, Init).map_err(|e| e.to_string()),
        Err("E_INVALID cannot NOP in current state (TLS required)".to_string())
    );
}

#[test]
fn long_line_drops_connection() {
    let big = vec![b'A'; MAX_LINE_LEN + 1];
    assert!(matches!(p(&big, Init), Err(ParseError::LineTooLong(_))));
}

#[test]
fn pipelined_commands_parse_one_at_a_time() {
    let mut input = b"NOP\n".to_vec();
    input.extend(with_body("PUB t", b"x"));
    input.extend_from_slice(b"NOP\n");
    let mut b = BytesMut::from(&input[..]);
    let l = Limits::default();
    assert_eq!(parse(&mut b, &l, Init), Ok(Some(Command::Nop)));
    assert!(matches!(
        parse(&mut b, &l, Init),
        Ok(Some(Command::Pub { .. }))
    ));
    assert_eq!(parse(&mut b, &l, Init), Ok(Some(Command::Nop)));
    assert_eq!(parse(&mut b, &l, Init), Ok(None));
    assert!(b.is_empty());
}

fn any_state() -> impl Strategy<Value = ClientState> {
    prop_oneof![Just(Init), Just(Subscribed), Just(Closing)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Arbitrary bytes: no panic, and the parser never consumes bytes without a result.
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(any::<u8>(), 0..512), state in any_state()) {
        let mut b = BytesMut::from(&data[..]);
        let l = Limits { max_msg_size: 64, max_body_size: 256, ..Limits::default() };
        for _ in 0..64 {
            let before = b.len();
            match parse(&mut b, &l, state) {
                Ok(Some(_)) => prop_assert!(b.len() < before),
                Ok(None) | Err(_) => { prop_assert_eq!(b.len(), before); break; }
            }
        }
    }

    /// Commands built from plausible pieces (the fuzzer's smarter sibling).
    #[test]
    fn structured_commands_never_panic(
        name in prop_oneof![Just("PUB"), Just("MPUB"), Just("DPUB"), Just("IDENTIFY"), Just("AUTH"),
                             Just("SUB"), Just("RDY"), Just("FIN"), Just("REQ"), Just("TOUCH"), Just("CLS"), Just("NOP")],
        params in proptest::collection::vec("[ -~]{0,20}", 0..4),
        size in any::<i32>(),
        tail in proptest::collection::vec(any::<u8>(), 0..64),
        state in any_state(),
    ) {
        let mut line = name.to_string();
        for prm in &params { line.push(' '); line.push_str(prm); }
        let mut v = with_size(&line, size);
        v.extend(tail);
        let mut b = BytesMut::from(&v[..]);
        let _ = parse(&mut b, &Limits::default(), state);
    }

    #[test]
    fn mpub_round_trip(msgs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 1..50), 1..20)) {
        let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
        let input = with_body("MPUB t", &mpub(&refs));
        match p(&input, Init) {
            Ok(Some(Command::Mpub { bodies, .. })) => {
                let got: Vec<Vec<u8>> = bodies.iter().map(|b| b.to_vec()).collect();
                prop_assert_eq!(got, msgs);
            }
            other => prop_assert!(false, "{:?}", other),
        }
    }
}

#[test]
fn errors_at_eof_name_what_was_missing() {
    let eof = |input: &[u8]| error_at_eof(input, &Limits::default(), Init).map(|e| e.to_string());
    assert_eq!(eof(b"PUB t"), None);
    assert_eq!(eof(b""), None);
    assert_eq!(
        eof(b"PUB t\n\0\0").as_deref(),
        Some("E_BAD_MESSAGE PUB failed to read message body size")
    );
    assert_eq!(
        eof(&with_size("PUB t", 5)).as_deref(),
        Some("E_BAD_MESSAGE PUB failed to read message body")
    );
    assert_eq!(
        eof(b"DPUB t 10\n").as_deref(),
        Some("E_BAD_MESSAGE DPUB failed to read message body size")
    );
    assert_eq!(
        eof(b"IDENTIFY\n").as_deref(),
        Some("E_BAD_BODY IDENTIFY failed to read body size")
    );
    assert_eq!(
        eof(&with_size("AUTH", 4)).as_deref(),
        Some("E_BAD_BODY AUTH failed to read body")
    );
    assert_eq!(
        eof(b"MPUB t\n").as_deref(),
        Some("E_BAD_BODY MPUB failed to read body size")
    );
    let mut partial = with_size("MPUB t", 100);
    partial.extend_from_slice(&2i32.to_be_bytes());
    partial.extend_from_slice(&1i32.to_be_bytes());
    partial.push(b'x');
    assert_eq!(
        eof(&partial).as_deref(),
        Some("E_BAD_MESSAGE MPUB failed to read message(1) body size")
    );
}

#[test]
fn fin_fast_path_only_for_well_formed_ids() {
    assert_eq!(
        p(b"FIN 0123456789abcdef\nNOP\n", Subscribed),
        Ok(Some(Command::Fin(*b"0123456789abcdef")))
    );
    // 15-byte id + CR LF is exactly 21 bytes: still nsqd's invalid message ID.
    assert_eq!(
        p_err(b"FIN 0123456789abcde\r\n", Subscribed),
        "E_INVALID invalid message ID"
    );
    // A short id followed by more lines.
    assert_eq!(
        p_err(b"FIN abc\nNOP\nNOP\nNOP\n", Subscribed),
        "E_INVALID invalid message ID"
    );
    // Non-hex 16-byte ids parse (nsqd checks only the length) via the full path.
    assert_eq!(
        p(b"FIN zzzzzzzzzzzzzzzz\n", Subscribed),
        Ok(Some(Command::Fin(*b"zzzzzzzzzzzzzzzz")))
    );
    assert_eq!(
        p_err(b"FIN 0123456789abcdef\n", Init),
        "E_INVALID cannot FIN in current state"
    );
}

proptest! {
    /// The FIN shortcut's separator test matches a byte-by-byte check, and a 16-byte token
    /// without separators is exactly the one-param FIN the full parse would produce.
    #[test]
    fn fin_fast_path_matches_the_line_grammar(
        id in proptest::collection::vec(prop_oneof![Just(b' '), Just(b'\r'), Just(b'\n'), Just(b'a'), any::<u8>()], 16)
    ) {
        let token: [u8; 16] = id.clone().try_into().expect("16");
        let naive = id.iter().any(|&c| c == b' ' || c == b'\r' || c == b'\n');
        prop_assert_eq!(has_separator(&token), naive);
        let mut line = b"FIN ".to_vec();
        line.extend_from_slice(&id);
        line.push(b'\n');
        if !naive {
            prop_assert_eq!(p(&line, Subscribed), Ok(Some(Command::Fin(token))));
        }
    }
}

/// Feed `input` the way a connection does: what arrived so far, parse, read more into the
/// buffer the parser left (never growing it while it has room).
fn parse_in_pieces(input: &[u8], piece: usize) -> (Command, BytesMut) {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let limits = Limits::default();
    for chunk in input.chunks(piece) {
        if buf.capacity() - buf.len() < chunk.len() {
            buf.reserve(chunk.len());
        }
        buf.extend_from_slice(chunk);
        if let Some(cmd) = parse(&mut buf, &limits, Init).expect("valid") {
            return (cmd, buf);
        }
    }
    panic!("command never completed");
}

#[test]
fn a_large_pub_is_read_into_its_own_buffer_and_not_copied() {
    let body: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
    let input = with_body("PUB big", &body);
    // The first piece makes the parser allocate the command's own buffer.
    let mut buf = BytesMut::from(&input[..1000]);
    assert_eq!(parse(&mut buf, &Limits::default(), Init), Ok(None));
    assert!(buf.capacity() >= input.len(), "room for the whole command");
    let start = buf.as_ptr() as usize;
    buf.extend_from_slice(&input[1000..]);
    assert_eq!(buf.as_ptr() as usize, start, "no regrowth while it fits");
    match parse(&mut buf, &Limits::default(), Init) {
        Ok(Some(Command::Pub { topic, body: got })) => {
            assert_eq!(&topic[..], b"big");
            assert_eq!(got, body);
            assert_eq!(
                got.as_ptr() as usize,
                start + 8 + 4,
                "the body was not copied"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(buf.is_empty());
}

#[test]
fn large_and_small_mpubs_parse_the_same() {
    // Large messages are handed over in place, small ones copied: both keep the wire layout.
    for (size, count) in [(4096usize, 40usize), (100, 2000)] {
        let msgs: Vec<Vec<u8>> = (0..count).map(|i| vec![(i % 251) as u8; size]).collect();
        let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
        let mut input = with_body("MPUB t", &mpub(&refs));
        input.extend_from_slice(b"NOP\n");
        let (cmd, rest) = parse_in_pieces(&input, 7000);
        match cmd {
            Command::Mpub { bodies, .. } => {
                assert_eq!(bodies.iter().collect::<Vec<_>>(), refs, "{size}");
                assert_eq!(bodies.prefixed_count(), Some(count as u32));
                assert_eq!(
                    bodies.data().len(),
                    (size + 4) * count,
                    "{size}: prefixes kept"
                );
            }
            other => panic!("{other:?}"),
        }
        let mut rest = rest;
        assert_eq!(
            parse(&mut rest, &Limits::default(), Init),
            Ok(Some(Command::Nop))
        );
    }
}

/// Where `b` points into `buf`'s allocation, if it does.
fn offset_in(buf_start: usize, buf_cap: usize, b: &[u8]) -> Option<usize> {
    let p = b.as_ptr() as usize;
    (p >= buf_start && p + b.len() <= buf_start + buf_cap).then(|| p - buf_start)
}

#[test]
fn split_hands_pub_and_mpub_over_without_a_copy() {
    let mut input = with_body("PUB t", b"hello");
    input.extend(with_body("MPUB t", &mpub(&[b"a", b"bc"])));
    input.extend(with_body("DPUB t 10", b"later"));
    input.extend(b"NOP\n");
    let mut buf = BytesMut::with_capacity(4096);
    buf.extend_from_slice(&input);
    let (start, cap) = (buf.as_ptr() as usize, buf.capacity());
    let l = Limits::default();
    let split = Handover::Split(None);
    match parse_with(&mut buf, &l, Init, split) {
        Ok(Some(Command::Pub { topic, body })) => {
            assert_eq!((&topic[..], &body[..]), (&b"t"[..], &b"hello"[..]));
            assert_eq!(offset_in(start, cap, &body), Some(10), "PUB t\\n + size");
        }
        other => panic!("{other:?}"),
    }
    match parse_with(&mut buf, &l, Init, split) {
        Ok(Some(Command::Mpub { topic, bodies })) => {
            assert_eq!(&topic[..], b"t");
            assert_eq!(bodies.iter().collect::<Vec<_>>(), [&b"a"[..], b"bc"]);
            assert!(offset_in(start, cap, bodies.data()).is_some(), "not copied");
        }
        other => panic!("{other:?}"),
    }
    match parse_with(&mut buf, &l, Init, split) {
        Ok(Some(Command::Dpub { body, defer_ms, .. })) => {
            assert_eq!((&body[..], defer_ms), (&b"later"[..], 10));
            assert_eq!(offset_in(start, cap, &body), None, "DPUB is copied");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        parse_with(&mut buf, &l, Init, split),
        Ok(Some(Command::Nop))
    );
}

#[test]
fn split_for_one_topic_copies_the_others() {
    let mut buf = BytesMut::from(&with_body("PUB other", b"x")[..]);
    let (start, cap) = (buf.as_ptr() as usize, buf.capacity());
    match parse_with(
        &mut buf,
        &Limits::default(),
        Init,
        Handover::Split(Some(b"t")),
    ) {
        Ok(Some(Command::Pub { body, .. })) => {
            assert_eq!(&body[..], b"x");
            assert_eq!(offset_in(start, cap, &body), None);
        }
        other => panic!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Splitting changes where bodies live, never what is parsed or which error is sent.
    #[test]
    fn split_and_copy_parse_the_same(
        msgs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..12),
        pubs in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..4),
        cut in 0usize..64,
        topic_only in any::<bool>(),
    ) {
        let refs: Vec<&[u8]> = msgs.iter().map(Vec::as_slice).collect();
        let mut input = with_body("MPUB t", &mpub(&refs));
        for body in &pubs {
            input.extend(with_body("PUB t", body));
            input.extend(with_body("PUB u", body));
        }
        input.truncate(input.len().saturating_sub(cut));
        let l = Limits { max_msg_size: 30, ..Limits::default() };
        let split = Handover::Split(topic_only.then_some(&b"t"[..]));
        let (mut a, mut b) = (BytesMut::from(&input[..]), BytesMut::from(&input[..]));
        loop {
            let (x, y) = (parse(&mut a, &l, Init), parse_with(&mut b, &l, Init, split));
            prop_assert_eq!(&x, &y);
            prop_assert_eq!(&a[..], &b[..]);
            if !matches!(x, Ok(Some(_))) {
                break;
            }
        }
    }
}
