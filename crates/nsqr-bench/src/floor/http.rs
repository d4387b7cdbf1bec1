//! The floor's HTTP side: what one HTTP request costs this machine before any server work.
//!
//! MinMQ's load test (`wrk -t12 -c400` posting a small form to `/pub`) spends most of a
//! server's CPU in the kernel's TCP work and in switching between wrk's threads and the
//! server's. This listener reads HTTP/1.1 requests on keep-alive connections, finds where each
//! ends (its head, then `Content-Length` bytes of body) and answers every one `200 OK` with
//! nsqd's `/pub` body, in the order they came and in one write per read. It parses no path or
//! query, keeps no body and does nothing else, so no HTTP server on this machine can spend less
//! per request under the same load: the bound `docs/benchmarks.md` holds nsqrd's and nsqd's
//! `/pub` figures against.

use std::io;

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The answer to every request: what nsqd's `/pub` answers, less its `Date` header.
const RESPONSE: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n\r\nOK";
/// A request whose head this long has not ended is refused (as a server's header limit).
const MAX_HEAD: usize = 64 * 1024;
/// The largest body accepted (nsqd's default --max-body-size).
const MAX_BODY: usize = super::MAX_BODY;
/// The answer to a request this server cannot frame; the connection is then closed.
const BAD_REQUEST: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

/// Where the request at the front of a buffer ends.
#[derive(Debug, PartialEq)]
enum Framing {
    /// Not all of it has arrived.
    Incomplete,
    /// It is this many bytes long, head and body.
    Complete(usize),
    /// It cannot be framed (no or a bad `Content-Length` with a body, a chunked body, a head or
    /// body over the limits).
    Bad,
}

/// Accept connections until the listener fails.
pub async fn serve(listener: TcpListener) -> io::Result<()> {
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let _ = connection(stream).await;
        });
    }
}

/// Answer every complete request a read brought, in one write, until the peer closes.
async fn connection(mut stream: TcpStream) -> io::Result<()> {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    let mut out = Vec::with_capacity(16 * 1024);
    loop {
        loop {
            match frame(&buf) {
                Framing::Complete(len) => {
                    buf.advance(len);
                    out.extend_from_slice(RESPONSE);
                }
                Framing::Incomplete => break,
                Framing::Bad => {
                    out.extend_from_slice(BAD_REQUEST);
                    stream.write_all(&out).await?;
                    return Ok(());
                }
            }
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            out.clear();
        }
        if stream.read_buf(&mut buf).await? == 0 {
            return Ok(());
        }
    }
}

/// Find the end of the request at the front of `b`.
fn frame(b: &[u8]) -> Framing {
    let Some(head_end) = b.windows(4).position(|w| w == b"\r\n\r\n") else {
        return if b.len() > MAX_HEAD {
            Framing::Bad
        } else {
            Framing::Incomplete
        };
    };
    let head = &b[..head_end];
    if head_end > MAX_HEAD {
        return Framing::Bad;
    }
    let body = match body_length(head) {
        Some(n) if n <= MAX_BODY => n,
        _ => return Framing::Bad,
    };
    let len = head_end + 4 + body;
    if b.len() < len {
        Framing::Incomplete
    } else {
        Framing::Complete(len)
    }
}

/// The body's length from the head's `Content-Length` (0 without one); `None` for a chunked
/// body or a length that is not a number.
fn body_length(head: &[u8]) -> Option<usize> {
    let mut length = 0;
    for line in head.split(|&c| c == b'\n').skip(1) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if name.eq_ignore_ascii_case(b"content-length") {
            length = std::str::from_utf8(value).ok()?.parse().ok()?;
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            return None;
        }
    }
    Some(length)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::AsyncReadExt;

    const PUB: &[u8] = b"POST /pub?topic=t HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\ncontent-length: 16\r\n\r\nmessage=13371337";

    #[test]
    fn frames_requests_by_their_length() {
        assert_eq!(frame(PUB), Framing::Complete(PUB.len()));
        assert_eq!(frame(&PUB[..PUB.len() - 1]), Framing::Incomplete);
        assert_eq!(frame(&PUB[..20]), Framing::Incomplete);
        let get = b"GET /ping HTTP/1.1\r\nHost: x\r\n\r\n";
        let two = [&get[..], PUB].concat();
        assert_eq!(frame(&two), Framing::Complete(get.len()));
        assert_eq!(
            frame(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Framing::Bad
        );
        assert_eq!(
            frame(b"POST / HTTP/1.1\r\nContent-Length: x1\r\n\r\n"),
            Framing::Bad
        );
        let huge = format!(
            "POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
            MAX_BODY + 1
        );
        assert_eq!(frame(huge.as_bytes()), Framing::Bad);
        assert_eq!(frame(&vec![b'a'; MAX_HEAD + 1]), Framing::Bad);
    }

    /// Pipelined requests sent in pieces that cut through heads and bodies each get their
    /// answer, in order; a request that cannot be framed gets 400 and the connection closes.
    #[tokio::test]
    async fn answers_every_request_in_order() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(serve(listener));
        let mut s = TcpStream::connect(addr).await.unwrap();
        let mut wire = Vec::new();
        for _ in 0..50 {
            wire.extend_from_slice(PUB);
        }
        wire.extend_from_slice(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
        for piece in wire.chunks(37) {
            s.write_all(piece).await.unwrap();
        }
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut got))
            .await
            .unwrap()
            .unwrap();
        let mut want = RESPONSE.repeat(50);
        want.extend_from_slice(BAD_REQUEST);
        assert_eq!(got, want);
        server.abort();
    }
}
