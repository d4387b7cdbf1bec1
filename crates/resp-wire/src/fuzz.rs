//! The entry point for a fuzz target (`fuzz/`): feeds arbitrary bytes to the request parser,
//! whole and in pieces, and to the reply decoder, and checks what must hold whatever the
//! input: no panic, every request consumes bytes that exist, and splitting the input gives the
//! same requests and the same error (except for a line over 64 KiB, refused before its end
//! arrives, as Redis refuses it); and the look-ahead ([`crate::peek()`]) sees a prefix of what the
//! parser parses.
//!
//! ```text
//! fuzz_target!(|data: &[u8]| resp_wire::fuzz::check(data));
//! ```

use crate::request::{Parsed, RequestParser};

/// Every request parsed from `input` fed at once, then the outcome (`Ok(bytes consumed)` or
/// the error).
type Outcome = (Vec<Vec<Vec<u8>>>, Result<usize, crate::ProtocolError>);

/// Parses `input` as a server does, feeding it `step` bytes at a time (0 = all at once).
fn run(input: &[u8], step: usize) -> Outcome {
    let mut p = RequestParser::default();
    let mut requests = Vec::new();
    let mut at = 0;
    let mut avail = if step == 0 {
        input.len()
    } else {
        step.min(input.len())
    };
    loop {
        match p.parse(&input[at..avail]) {
            Ok(Parsed::Request(n)) => {
                assert!(n > 0 && at + n <= avail, "request past the bytes given");
                requests.push(p.args(&input[at..at + n]).to_vec());
                at += n;
            }
            Ok(Parsed::Empty(n)) => {
                assert!(
                    n > 0 && at + n <= avail,
                    "empty request past the bytes given"
                );
                at += n;
            }
            Ok(Parsed::Incomplete) if avail < input.len() => {
                avail = (avail + step.max(1)).min(input.len());
            }
            Ok(Parsed::Incomplete) => return (requests, Ok(at)),
            Err(e) => return (requests, Err(e)),
        }
    }
}

/// Checks the parser and the decoder on `data`; panics only if an invariant is broken.
pub fn check(data: &[u8]) {
    let whole = run(data, 0);
    // The first byte picks a split size: the same input arriving in pieces.
    let step = usize::from(data.first().copied().unwrap_or(1)).max(1);
    let pieces = run(data, step);
    if whole != pieces {
        // Only a line longer than 64 KiB may differ: refused while its end has not arrived
        // (as Redis refuses it), accepted when it comes whole. Requests before it agree.
        use crate::ProtocolError::{TooBigBulkCount, TooBigInline, TooBigMultibulkCount};
        assert!(
            matches!(
                pieces.1,
                Err(TooBigInline | TooBigMultibulkCount | TooBigBulkCount)
            ),
            "splitting the input changed the result: {whole:?} / {pieces:?}"
        );
        assert!(
            whole.0.starts_with(&pieces.0),
            "requests before the long line differ"
        );
    }
    // The look-ahead (`peek`) sees a prefix of what the parser parses.
    for (i, p) in crate::peek::peek(data).enumerate() {
        let Some(args) = whole.0.get(i) else {
            panic!("peek saw request {i}, which the parser did not parse");
        };
        assert_eq!(Some(p.name), args.first().map(Vec::as_slice));
        assert_eq!(p.first_arg, args.get(1).map(Vec::as_slice));
        assert_eq!(p.more_args[0], args.get(2).map(Vec::as_slice));
        assert_eq!(p.more_args[1], args.get(3).map(Vec::as_slice));
    }
    let _ = crate::frame::decode(data);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_inputs() {
        check(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*1\r\n$4\r\nPI");
        check(b"SET \"a b\r\n");
        check(b"*1\r\n$1099511627776\r\n");
        check(b"");
        // A 70,000-byte line: whole it is a request, in pieces it is refused at 64 KiB.
        let mut long = vec![b'A'; 70_000];
        long.push(b'\n');
        check(&long);
    }

    proptest! {
        #[test]
        fn never_breaks(data in proptest::collection::vec(any::<u8>(), 0..400)) {
            check(&data);
        }

        #[test]
        fn never_breaks_on_near_valid_input(
            parts in proptest::collection::vec(prop_oneof![
                Just(b"*".to_vec()), Just(b"$".to_vec()), Just(b"\r\n".to_vec()),
                Just(b"3".to_vec()), Just(b"-1".to_vec()), Just(b"GET".to_vec()),
                Just(b"\"".to_vec()), Just(b" ".to_vec()), Just(b"\n".to_vec()),
            ], 0..60),
        ) {
            check(&parts.concat());
        }
    }
}
