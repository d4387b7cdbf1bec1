//! The client's encoders against the server's parser, and the frame decoder against the
//! server's frame encoders, whatever way the bytes are split.

use bytes::{Bytes, BytesMut};
use proptest::prelude::*;

use super::*;
use crate::command::{parse_with, ClientState, Command, Handover, IdToken, Limits};
use crate::frame::{put_error, put_message_frame, put_response};
use crate::message::MessageId;
use crate::Bodies;

/// Limits that accept every command the strategies produce.
fn wide_limits() -> Limits {
    Limits {
        max_msg_size: i64::MAX,
        max_body_size: i64::MAX,
        max_rdy_count: i64::MAX,
        max_req_timeout_ms: i64::MAX,
        ..Limits::default()
    }
}

/// The state in which the server accepts `cmd`.
fn state_for(cmd: &Command) -> ClientState {
    match cmd {
        Command::Identify(_) | Command::Auth(_) | Command::Sub { .. } => ClientState::Init,
        Command::Rdy(_)
        | Command::Fin(_)
        | Command::Req { .. }
        | Command::Touch(_)
        | Command::Cls => ClientState::Subscribed,
        Command::Nop | Command::Pub { .. } | Command::Mpub { .. } | Command::Dpub { .. } => {
            ClientState::Init
        }
    }
}

fn name() -> impl Strategy<Value = Bytes> {
    ("[a-zA-Z0-9._-]{1,54}", any::<bool>())
        .prop_map(|(n, eph)| Bytes::from(if eph { format!("{n}#ephemeral") } else { n }))
}

fn id() -> impl Strategy<Value = IdToken> {
    proptest::array::uniform16(
        any::<u8>().prop_filter("no separator", |c| !matches!(c, b' ' | b'\r' | b'\n')),
    )
}

fn body() -> impl Strategy<Value = Bytes> {
    proptest::collection::vec(any::<u8>(), 1..200).prop_map(Bytes::from)
}

fn command() -> impl Strategy<Value = Command> {
    prop_oneof![
        Just(Command::Nop),
        Just(Command::Cls),
        body().prop_map(Command::Identify),
        body().prop_map(Command::Auth),
        (name(), name()).prop_map(|(topic, channel)| Command::Sub { topic, channel }),
        (0..=i64::MAX).prop_map(Command::Rdy),
        id().prop_map(Command::Fin),
        (id(), any::<u64>()).prop_map(|(id, delay_ms)| Command::Req { id, delay_ms }),
        id().prop_map(Command::Touch),
        (name(), body()).prop_map(|(topic, body)| Command::Pub { topic, body }),
        (name(), proptest::collection::vec(body(), 1..8)).prop_map(|(topic, bodies)| {
            Command::Mpub {
                topic,
                bodies: Bodies::concat(bodies.iter().map(|b| &b[..])).expect("small"),
            }
        }),
        (name(), 0..=i64::MAX as u64, body()).prop_map(|(topic, defer_ms, body)| {
            Command::Dpub {
                topic,
                defer_ms,
                body,
            }
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// A run of commands encoded here parses back, one by one and in order, to the same
    /// commands with the server's parser, however the bytes arrive and whichever handover.
    #[test]
    fn commands_parse_back_to_themselves(
        cmds in proptest::collection::vec(command(), 1..8),
        piece in 1usize..300,
        split in any::<bool>(),
    ) {
        let mut wire = Vec::new();
        for cmd in &cmds {
            put_command(&mut wire, cmd).expect("valid command");
        }
        let handover = if split { Handover::Split(None) } else { Handover::Copy };
        let limits = wide_limits();
        let mut buf = BytesMut::new();
        let mut parsed = Vec::new();
        for chunk in wire.chunks(piece) {
            buf.extend_from_slice(chunk);
            while let Some(next) = cmds.get(parsed.len()) {
                match parse_with(&mut buf, &limits, state_for(next), handover) {
                    Ok(Some(cmd)) => parsed.push(cmd),
                    Ok(None) => break,
                    Err(e) => return Err(TestCaseError::fail(format!("{e} for {next:?}"))),
                }
            }
        }
        prop_assert_eq!(parsed, cmds);
        prop_assert!(buf.is_empty());
    }
}

#[derive(Debug, Clone)]
enum Sent {
    Response(Vec<u8>),
    Error(String),
    Message(i64, u16, u64, Vec<u8>),
}

fn sent() -> impl Strategy<Value = Sent> {
    let data = || proptest::collection::vec(any::<u8>(), 0..300);
    prop_oneof![
        data().prop_map(Sent::Response),
        "[ -~]{0,80}".prop_map(Sent::Error),
        (any::<i64>(), any::<u16>(), any::<u64>(), data())
            .prop_map(|(t, a, id, b)| Sent::Message(t, a, id, b)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Frames from the server's encoders decode to what was encoded, in order, whatever way
    /// the bytes are split, and nothing is left over; taken or lent in place (alternately),
    /// a frame is the same.
    #[test]
    fn frames_decode_back_whatever_the_split(
        frames in proptest::collection::vec(sent(), 1..10),
        cuts in proptest::collection::vec(1usize..400, 1..20),
    ) {
        let mut wire = Vec::new();
        for f in &frames {
            match f {
                Sent::Response(d) => put_response(&mut wire, d),
                Sent::Error(t) => put_error(&mut wire, t),
                Sent::Message(t, a, id, b) => put_message_frame(&mut wire, *t, *a, MessageId(*id), b),
            }
        }
        let mut dec = FrameDecoder::default();
        let mut got = Vec::new();
        let (mut at, mut i) = (0, 0);
        while at < wire.len() {
            let end = (at + cuts[i % cuts.len()]).min(wire.len());
            dec.feed(&wire[at..end]);
            (at, i) = (end, i + 1);
            loop {
                let frame = if got.len() % 2 == 0 {
                    dec.next_frame().expect("valid frames")
                } else {
                    dec.with_next_frame(owned).expect("valid frames")
                };
                match frame {
                    Some(f) => got.push(f),
                    None => break,
                }
            }
            prop_assert!(dec.pending() == 0 || dec.wanted() > 0);
        }
        prop_assert_eq!(dec.pending(), 0);
        prop_assert_eq!(got.len(), frames.len());
        for (g, f) in got.iter().zip(&frames) {
            let want = match f {
                Sent::Response(d) => Frame::Response(Bytes::copy_from_slice(d)),
                Sent::Error(t) => Frame::Error(Bytes::copy_from_slice(t.as_bytes())),
                Sent::Message(t, a, id, b) => Frame::Message {
                    timestamp: *t,
                    attempts: *a,
                    id: MessageId(*id).to_hex(),
                    body: Bytes::copy_from_slice(b),
                },
            };
            prop_assert_eq!(g, &want);
        }
    }

    /// Arbitrary bytes: frames, Ok(None) or an error, never a panic; an error repeats.
    #[test]
    fn arbitrary_bytes_never_panic_the_decoder(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        let mut dec = FrameDecoder::new(256);
        dec.feed(&data);
        for _ in 0..data.len() + 1 {
            match dec.next_frame() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    prop_assert_eq!(dec.next_frame(), Err(e));
                    break;
                }
            }
        }
    }
}

/// A lent frame, copied.
fn owned(f: FrameRef<'_>) -> Frame {
    match f {
        FrameRef::Response(d) => Frame::Response(Bytes::copy_from_slice(d)),
        FrameRef::Error(d) => Frame::Error(Bytes::copy_from_slice(d)),
        FrameRef::Message {
            timestamp,
            attempts,
            id,
            body,
        } => Frame::Message {
            timestamp,
            attempts,
            id,
            body: Bytes::copy_from_slice(body),
        },
    }
}

fn header(size: i32, frame_type: i32) -> Vec<u8> {
    let mut v = size.to_be_bytes().to_vec();
    v.extend_from_slice(&frame_type.to_be_bytes());
    v
}

#[test]
fn bad_frames_are_refused_with_what_was_wrong() {
    let refuse = |bytes: &[u8], max: usize| {
        let mut dec = FrameDecoder::new(max);
        dec.feed(bytes);
        dec.next_frame()
    };
    assert_eq!(refuse(&header(3, 0), 100), Err(FrameError::TooSmall(3)));
    assert_eq!(refuse(&header(-1, 0), 100), Err(FrameError::TooSmall(-1)));
    // Refused from the size alone, before the data arrives.
    assert_eq!(
        refuse(&101i32.to_be_bytes(), 100),
        Err(FrameError::TooLarge {
            size: 101,
            max: 100
        })
    );
    assert_eq!(refuse(&header(4, 7), 100), Err(FrameError::UnknownType(7)));
    let mut short = header(4 + 25, 2);
    short.extend_from_slice(&[0; 25]);
    assert_eq!(refuse(&short, 100), Err(FrameError::ShortMessage(25)));
    // An empty response is a frame.
    assert_eq!(
        refuse(&header(4, 0), 100),
        Ok(Some(Frame::Response(Bytes::new())))
    );
}

#[test]
fn a_frame_is_handed_over_without_a_copy_and_wanted_counts_down() {
    let mut wire = Vec::new();
    put_response(&mut wire, b"OK");
    let mut dec = FrameDecoder::default();
    assert_eq!(dec.wanted(), 4);
    dec.feed(&wire[..5]);
    assert_eq!(dec.wanted(), wire.len() - 5);
    assert_eq!(dec.next_frame(), Ok(None));
    dec.buffer_mut().extend_from_slice(&wire[5..]);
    let start = dec.buffer_mut().as_ptr() as usize;
    match dec.next_frame() {
        Ok(Some(Frame::Response(data))) => {
            assert_eq!(&data[..], b"OK");
            assert_eq!(data.as_ptr() as usize, start + 8, "not copied");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(dec.wanted(), 4);
}

#[test]
fn encoders_refuse_what_the_wire_cannot_carry() {
    let mut buf = Vec::new();
    assert!(matches!(
        put_pub(&mut buf, "a b", b"x"),
        Err(EncodeError::BadName { what: "topic", .. })
    ));
    assert!(matches!(
        put_sub(&mut buf, "t", "c\n"),
        Err(EncodeError::BadName {
            what: "channel",
            ..
        })
    ));
    assert!(matches!(
        put_fin(&mut buf, b"0123456789abcd\r\n"),
        Err(EncodeError::BadId(_))
    ));
    assert!(matches!(
        put_req(&mut buf, b"01234567 9abcdef", 1),
        Err(EncodeError::BadId(_))
    ));
    assert_eq!(
        put_command(&mut buf, &Command::Rdy(-1)),
        Err(EncodeError::OutOfRange("RDY", -1))
    );
    assert!(buf.is_empty(), "a refused command writes nothing");
}

#[test]
fn encoded_commands_are_byte_exact() {
    let mut buf = Vec::new();
    put_magic(&mut buf);
    put_rdy(&mut buf, 2500);
    put_req(&mut buf, b"0123456789abcdef", 0).expect("ok");
    put_dpub(&mut buf, "t", 1000, b"x").expect("ok");
    put_mpub(&mut buf, "t", &[&b"a"[..], b"bc"]).expect("ok");
    put_cls(&mut buf);
    let mut want = b"  V2RDY 2500\nREQ 0123456789abcdef 0\nDPUB t 1000\n\0\0\0\x01x".to_vec();
    want.extend_from_slice(b"MPUB t\n\0\0\0\x0f\0\0\0\x02\0\0\0\x01a\0\0\0\x02bcCLS\n");
    assert_eq!(buf, want);
}

#[test]
fn spliced_publishes_are_the_same_bytes() {
    use crate::spliced::{Spliced, SPLICE_MIN};
    let bodies = [
        Bytes::from_static(b"small"),
        Bytes::from(vec![9u8; SPLICE_MIN + 3]),
        Bytes::from_static(b"x"),
    ];
    let mut whole = Vec::new();
    put_mpub(&mut whole, "t", &bodies).unwrap();
    put_pub(&mut whole, "t", &bodies[1]).unwrap();
    let mut buf = BytesMut::new();
    let mut spliced = Spliced::default();
    put_mpub_spliced(&mut buf, &mut spliced, "t", &bodies).unwrap();
    put_pub_spliced(&mut buf, &mut spliced, "t", &bodies[1]).unwrap();
    assert_eq!(spliced.bytes(), 2 * (SPLICE_MIN + 3));
    assert_eq!(spliced.slices(&buf, buf.len()).concat(), whole);
    assert!(put_pub_spliced(&mut buf, &mut spliced, "bad topic", &bodies[0]).is_err());
}
