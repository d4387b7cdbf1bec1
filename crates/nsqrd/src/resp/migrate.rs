//! MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw | AUTH2 user pw] [KEYS k ...]:
//! moves keys to another Redis-protocol server as Redis 7.0 does, by sending it `RESTORE`
//! with each key's DUMP payload (`nsqr_kv::dump`, Redis's format, so the target may be
//! redis-server or another nsqrd), then deleting the keys it accepted (unless COPY).
//!
//! As in Redis the command blocks its client's serving thread while it talks to the target,
//! each step (connect, write, each reply) bounded by `timeout` milliseconds; a dead or slow
//! target gets Redis's `IOERR` errors. Unlike Redis no connection is kept for the next
//! MIGRATE (each opens its own), and a host name is resolved with the system's resolver,
//! whose own time limit applies.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use nsqr_kv::Ttl;
use resp_wire::Args;

use super::args::{int, is, SYNTAX};
use super::session::Ctx;

/// The longest reply line read from the target (its replies here are status lines).
const MAX_LINE: u64 = 64 * 1024;

/// MIGRATE's options.
struct Options<'a> {
    copy: bool,
    replace: bool,
    /// AUTH's password, or AUTH2's user and password.
    auth: Option<(Option<&'a [u8]>, &'a [u8])>,
    /// Where the keys start among the arguments, and how many there are.
    keys: (usize, usize),
}

/// Why the target could not be talked to: the step that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
enum IoError {
    #[error("IOERR error or timeout connecting to the client")]
    Connecting,
    #[error("IOERR error or timeout writing to target instance")]
    Writing,
    #[error("IOERR error or timeout reading to target instance")]
    Reading,
}

pub fn migrate(ctx: &mut Ctx<'_>, a: &Args<'_>) {
    let Some(opts) = options(ctx, a) else {
        return;
    };
    let Some(timeout) = int(ctx, a.get(5)) else {
        return;
    };
    let Some(db) = int(ctx, a.get(4)) else {
        return;
    };
    let timeout = Duration::from_millis(if timeout <= 0 { 1000 } else { timeout as u64 });
    let (first, count) = opts.keys;
    let ks = &ctx.shared.ks;
    // Each key there is: its name here, its TTL in milliseconds (0: none) and its payload.
    let mut found = Vec::new();
    for key in a.iter().skip(first).take(count) {
        if let Some(payload) = ks.dump(key) {
            let ttl = match ks.ttl(key) {
                Ttl::Remaining(ms) => ms,
                _ => 0,
            };
            found.push((key, ttl, payload));
        }
    }
    if found.is_empty() {
        return ctx.out.simple(b"NOKEY");
    }
    let mut request = Vec::new();
    if let Some((user, password)) = opts.auth {
        let mut auth: Vec<&[u8]> = vec![b"AUTH"];
        auth.extend(user);
        auth.push(password);
        encode(&mut request, &auth);
    }
    encode(&mut request, &[b"SELECT", db.to_string().as_bytes()]);
    for (key, ttl, payload) in &found {
        let key = nsqr_kv::db::user_key(key);
        let ttl = ttl.to_string();
        let mut restore: Vec<&[u8]> = vec![b"RESTORE", key, ttl.as_bytes(), payload];
        if opts.replace {
            restore.push(b"REPLACE");
        }
        encode(&mut request, &restore);
    }
    let preamble = 1 + usize::from(opts.auth.is_some());
    let replies = match exchange(
        a.get(1),
        a.get(2),
        timeout,
        &request,
        preamble + found.len(),
    ) {
        Ok(replies) => replies,
        Err(e) => return ctx.out.error(&e.to_string()),
    };
    if let Some(err) = replies.iter().find_map(|r| r.strip_prefix('-')) {
        // A key the target refused stays here; those it took are moved all the same.
        if replies[..preamble].iter().all(|r| !r.starts_with('-')) && !opts.copy {
            let moved: Vec<&[u8]> = found
                .iter()
                .zip(&replies[preamble..])
                .filter(|(_, r)| !r.starts_with('-'))
                .map(|((key, _, _), _)| *key)
                .collect();
            ctx.shared.ks.del(&moved, &mut ctx.s.pending);
        }
        return ctx
            .out
            .error(&format!("ERR Target instance replied with error: {err}"));
    }
    if !opts.copy {
        let moved: Vec<&[u8]> = found.iter().map(|(key, _, _)| *key).collect();
        ctx.shared.ks.del(&moved, &mut ctx.s.pending);
    }
    ctx.out.ok();
}

/// The positions of MIGRATE's keys, as COMMAND GETKEYS finds them in Redis (its own rule
/// rather than the key specs: the empty key before KEYS is none); none if KEYS follows a key.
pub fn key_positions(a: &Args<'_>) -> Vec<usize> {
    let mut i = 6;
    while i < a.len() {
        let arg = a.get(i);
        if is(arg, "keys") {
            if !a.get(3).is_empty() {
                return Vec::new();
            }
            return (i + 1..a.len()).collect();
        }
        i += if is(arg, "auth") {
            2
        } else if is(arg, "auth2") {
            3
        } else {
            1
        };
    }
    vec![3]
}

/// The options after the fifth argument, Redis's error (already the reply) if one is wrong.
fn options<'a>(ctx: &mut Ctx<'_>, a: &Args<'a>) -> Option<Options<'a>> {
    let mut opts = Options {
        copy: false,
        replace: false,
        auth: None,
        keys: (3, 1),
    };
    let mut i = 6;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let arg = a.get(i);
        if is(arg, "copy") {
            opts.copy = true;
        } else if is(arg, "replace") {
            opts.replace = true;
        } else if is(arg, "auth") && more >= 1 {
            opts.auth = Some((None, a.get(i + 1)));
            i += 1;
        } else if is(arg, "auth2") && more >= 2 {
            opts.auth = Some((Some(a.get(i + 1)), a.get(i + 2)));
            i += 2;
        } else if is(arg, "keys") {
            if !nsqr_kv::db::user_key(a.get(3)).is_empty() {
                ctx.out.error("ERR When using MIGRATE KEYS option, the key argument must be set to the empty string");
                return None;
            }
            opts.keys = (i + 1, more);
            break;
        } else {
            ctx.out.error(SYNTAX);
            return None;
        }
        i += 1;
    }
    Some(opts)
}

/// Appends one request in RESP.
fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// Sends `request` to host:port and reads `replies` reply lines, each step within `timeout`.
fn exchange(
    host: &[u8],
    port: &[u8],
    timeout: Duration,
    request: &[u8],
    replies: usize,
) -> Result<Vec<String>, IoError> {
    // Redis connects without blocking and learns of a refused connection (or of port 0, what
    // it makes of a port that is no number) only when it writes.
    let refused = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::ConnectionRefused => IoError::Writing,
        _ => IoError::Connecting,
    };
    let host = std::str::from_utf8(host).map_err(|_| IoError::Connecting)?;
    let port: u16 = std::str::from_utf8(port)
        .ok()
        .and_then(|p| p.parse().ok())
        .ok_or(IoError::Writing)?;
    let mut last = IoError::Connecting;
    let mut stream = None;
    for addr in (host, port)
        .to_socket_addrs()
        .map_err(|_| IoError::Connecting)?
    {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = refused(e),
        }
    }
    let stream = stream.ok_or(last)?;
    let _ = stream.set_nodelay(true);
    stream
        .set_write_timeout(Some(timeout))
        .and_then(|()| stream.set_read_timeout(Some(timeout)))
        .map_err(|_| IoError::Connecting)?;
    (&stream).write_all(request).map_err(|_| IoError::Writing)?;
    let mut reader = BufReader::new(&stream);
    let mut lines = Vec::with_capacity(replies);
    for _ in 0..replies {
        let mut line = Vec::new();
        let n = (&mut reader)
            .take(MAX_LINE)
            .read_until(b'\n', &mut line)
            .map_err(|_| IoError::Reading)?;
        if n == 0 || !line.ends_with(b"\r\n") {
            return Err(IoError::Reading);
        }
        line.truncate(line.len() - 2);
        lines.push(String::from_utf8_lossy(&line).into_owned());
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn positions(parts: &[&str]) -> Vec<usize> {
        let parts: Vec<&[u8]> = parts.iter().map(|p| p.as_bytes()).collect();
        let owned = resp_wire::OwnedArgs::from_parts(&parts);
        key_positions(&owned.args())
    }

    #[test]
    fn keys_found_as_redis_finds_them() {
        assert_eq!(positions(&["MIGRATE", "h", "1", "k", "0", "5"]), [3]);
        assert_eq!(
            positions(&["MIGRATE", "h", "1", "", "0", "5", "KEYS", "a", "b"]),
            [7, 8]
        );
        // AUTH and AUTH2 skip their values, even one spelled KEYS.
        assert_eq!(
            positions(&[
                "MIGRATE", "h", "1", "", "0", "5", "AUTH", "KEYS", "AUTH2", "u", "KEYS", "KEYS",
                "a"
            ]),
            [12]
        );
        assert!(positions(&["MIGRATE", "h", "1", "k", "0", "5", "KEYS", "a"]).is_empty());
    }

    #[test]
    fn requests_are_resp() {
        let mut out = Vec::new();
        encode(&mut out, &[b"SELECT", b"3"]);
        assert_eq!(out, b"*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n");
    }
}
