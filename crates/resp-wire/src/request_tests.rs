use super::*;
use proptest::prelude::*;

fn one(input: &[u8]) -> Result<Option<OwnedRequest>, ProtocolError> {
    parse(input)
}

fn strs(args: &[Vec<u8>]) -> Vec<&str> {
    args.iter()
        .map(|a| std::str::from_utf8(a).unwrap())
        .collect()
}

/// Every request in `input`, parsed the way a server does (drop each request after it).
type Requests = Vec<Vec<Vec<u8>>>;

fn all(input: &[u8], limits: Limits) -> (Requests, Result<usize, ProtocolError>) {
    let mut p = RequestParser::new(limits);
    let mut at = 0;
    let mut out = Vec::new();
    loop {
        match p.parse(&input[at..]) {
            Ok(Parsed::Request(n)) => {
                out.push(p.args(&input[at..]).to_vec());
                at += n;
            }
            Ok(Parsed::Empty(n)) => at += n,
            Ok(Parsed::Incomplete) => return (out, Ok(at)),
            Err(e) => return (out, Err(e)),
        }
    }
}

#[test]
fn multibulk_and_inline() {
    let (args, n) = one(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nrest").unwrap().unwrap();
    assert_eq!((strs(&args), n), (vec!["GET", "k"], 20));
    let (args, n) = one(b"SET a b\r\n").unwrap().unwrap();
    assert_eq!((strs(&args), n), (vec!["SET", "a", "b"], 9));
    let (args, n) = one(b"PING\n").unwrap().unwrap();
    assert_eq!((strs(&args), n), (vec!["PING"], 5));
}

#[test]
fn binary_safe_bulk() {
    let (args, _) = one(b"*2\r\n$4\r\nECHO\r\n$4\r\na\r\n\0\r\n")
        .unwrap()
        .unwrap();
    assert_eq!(args[1], b"a\r\n\0");
}

#[test]
fn pipelined_requests_and_empty_ones() {
    let input = b"*0\r\n*-5\r\n\r\nPING\r\n*1\r\n$4\r\nPING\r\n\r\n*1\r\n$4\r\nPI";
    let (reqs, done) = all(input, Limits::default());
    assert_eq!(reqs, vec![vec![b"PING".to_vec()], vec![b"PING".to_vec()]]);
    // The incomplete third request is left in place.
    assert_eq!(done, Ok(input.len() - b"*1\r\n$4\r\nPI".len()));
}

#[test]
fn resumes_without_rescanning() {
    let full = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n0123456789\r\n";
    let mut p = RequestParser::default();
    for cut in 1..full.len() {
        assert_eq!(p.parse(&full[..cut]), Ok(Parsed::Incomplete), "cut {cut}");
    }
    assert_eq!(p.parse(full), Ok(Parsed::Request(full.len())));
    assert_eq!(p.args(full).to_vec()[2], b"0123456789");
}

#[test]
fn wanted_reports_a_bulk_still_missing() {
    let mut p = RequestParser::default();
    let head = b"*2\r\n$3\r\nSET\r\n$1000\r\nabc";
    assert_eq!(p.parse(head), Ok(Parsed::Incomplete));
    // The value (1000 bytes) and its CRLF, minus the 3 bytes already here.
    assert_eq!(p.wanted(head.len()), Some(999));
}

#[test]
fn redis_protocol_errors() {
    use ProtocolError::*;
    let cases: &[(&[u8], ProtocolError)] = &[
        (b"*abc\r\n", InvalidMultibulkLength),
        (b"*+1\r\n", InvalidMultibulkLength),
        (b"*01\r\n", InvalidMultibulkLength),
        (b"*1 \r\n", InvalidMultibulkLength),
        (b"*2147483648\r\n", InvalidMultibulkLength),
        (b"*1\r\n$abc\r\n", InvalidBulkLength),
        (b"*1\r\n$-1\r\n", InvalidBulkLength),
        (b"*1\r\n$-0\r\n", InvalidBulkLength),
        (b"*1\r\n$+4\r\n", InvalidBulkLength),
        (b"*1\r\n$1099511627776\r\n", InvalidBulkLength),
        (b"*1\r\n$536870913\r\n", InvalidBulkLength),
        (b"*1\r\nx\r\n", ExpectedBulk(b'x')),
        (b"*1\r\n\r\n", ExpectedBulk(b'\r')),
        (b"SET \"a b\r\n", UnbalancedQuotes),
    ];
    for (input, want) in cases {
        assert_eq!(
            one(input),
            Err(*want),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn limits_on_lines_without_an_end() {
    // Exactly 64 KiB without a newline still waits; one byte more is refused.
    assert_eq!(one(&vec![b'A'; INLINE_MAX]), Ok(None));
    assert_eq!(
        one(&vec![b'A'; INLINE_MAX + 1]),
        Err(ProtocolError::TooBigInline)
    );
    let mut count = b"*".to_vec();
    count.extend(std::iter::repeat_n(b'1', INLINE_MAX + 1));
    assert_eq!(one(&count), Err(ProtocolError::TooBigMultibulkCount));
    let mut bulk = b"*1\r\n$".to_vec();
    bulk.extend(std::iter::repeat_n(b'1', INLINE_MAX + 1));
    assert_eq!(one(&bulk), Err(ProtocolError::TooBigBulkCount));
}

#[test]
fn a_huge_count_allocates_only_what_arrives() {
    let mut p = RequestParser::default();
    assert_eq!(p.parse(b"*2147483647\r\n"), Ok(Parsed::Incomplete));
    assert!(p.args.capacity() <= ARGS_RESERVE);
}

#[test]
fn unauthenticated_limits() {
    let limits = Limits {
        unauthenticated: true,
        ..Limits::default()
    };
    let (_, r) = all(b"*11\r\n", limits);
    assert_eq!(r, Err(ProtocolError::UnauthenticatedMultibulkLength));
    let (_, r) = all(b"*2\r\n$4\r\nAUTH\r\n$16385\r\n", limits);
    assert_eq!(r, Err(ProtocolError::UnauthenticatedBulkLength));
    let (reqs, r) = all(b"*2\r\n$4\r\nAUTH\r\n$2\r\npw\r\n", limits);
    assert_eq!((reqs.len(), r), (1, Ok(22)));
}

#[test]
fn error_resets_the_parser() {
    let mut p = RequestParser::default();
    assert!(p.parse(b"*1\r\nx\r\n").is_err());
    assert_eq!(p.parse(b"PING\r\n"), Ok(Parsed::Request(6)));
}

fn arg_strategy() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..40)
}

proptest! {
    #[test]
    fn encoded_requests_parse_back(reqs in proptest::collection::vec(
        proptest::collection::vec(arg_strategy(), 1..6), 1..5)) {
        let mut wire = Vec::new();
        for r in &reqs {
            encode_request(r, &mut wire);
        }
        let (parsed, done) = all(&wire, Limits::default());
        prop_assert_eq!(done, Ok(wire.len()));
        prop_assert_eq!(parsed, reqs);
    }

    #[test]
    fn split_anywhere_gives_the_same_requests(
        r in proptest::collection::vec(arg_strategy(), 1..6), cut in 0usize..200) {
        let mut wire = Vec::new();
        encode_request(&r, &mut wire);
        let cut = cut.min(wire.len());
        let mut p = RequestParser::default();
        let first = p.parse(&wire[..cut]).unwrap();
        if cut < wire.len() {
            prop_assert_eq!(first, Parsed::Incomplete);
        }
        prop_assert_eq!(p.parse(&wire).unwrap(), Parsed::Request(wire.len()));
        prop_assert_eq!(p.args(&wire).to_vec(), r);
    }

    #[test]
    fn inline_words_parse_back(words in proptest::collection::vec("[a-zA-Z0-9_:.-]{1,12}", 1..6)) {
        let line = format!("{}\r\n", words.join(" "));
        let (args, n) = parse(line.as_bytes()).unwrap().unwrap();
        prop_assert_eq!(n, line.len());
        prop_assert_eq!(strs(&args), words.iter().map(String::as_str).collect::<Vec<_>>());
    }

    #[test]
    fn garbage_never_panics_and_consumes_within_bounds(data in proptest::collection::vec(any::<u8>(), 0..300)) {
        let (_, r) = all(&data, Limits::default());
        if let Ok(n) = r {
            prop_assert!(n <= data.len());
        }
    }
}

#[test]
fn owned_args_keep_every_argument() {
    let input = b"*4\r\n$3\r\nSET\r\n$0\r\n\r\n$3\r\na\r\n\r\n$1\r\nz\r\n";
    let mut p = RequestParser::default();
    assert!(matches!(p.parse(input), Ok(Parsed::Request(_))));
    let owned = OwnedArgs::new(&p.args(input));
    drop(p);
    let args = owned.args();
    assert_eq!(
        args.to_vec(),
        vec![b"SET".to_vec(), vec![], b"a\r\n".to_vec(), b"z".to_vec()]
    );
    assert_eq!(args.get(9), b"");
    assert!(owned.size() >= 7);
    assert!(OwnedArgs::default().args().is_empty());
}

#[test]
fn owned_requests_keep_each_request_apart() {
    let mut q = OwnedRequests::default();
    assert!(q.is_empty() && q.iter().next().is_none());
    for input in [
        &b"*2\r\n$4\r\nINCR\r\n$1\r\na\r\n"[..],
        b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$2\r\nv\n\r\n",
        b"*1\r\n$4\r\nPING\r\n",
    ] {
        let mut p = RequestParser::default();
        assert!(matches!(p.parse(input), Ok(Parsed::Request(_))));
        q.push(&p.args(input));
    }
    let got: Vec<_> = q.iter().map(|a| a.to_vec()).collect();
    assert_eq!(
        got,
        vec![
            vec![b"INCR".to_vec(), b"a".to_vec()],
            vec![b"SET".to_vec(), vec![], b"v\n".to_vec()],
            vec![b"PING".to_vec()],
        ]
    );
    assert_eq!(q.len(), 3);
    assert_eq!(q.iter().nth(1).map(|a| a.get(3).len()), Some(0));
    let (size, capacity) = (q.size(), q.capacity());
    assert!(size >= 14 && capacity >= size);
    q.clear();
    assert!(q.is_empty() && q.size() == 0);
    assert_eq!(q.capacity(), capacity);
}
