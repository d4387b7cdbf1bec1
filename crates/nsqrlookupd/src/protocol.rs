//! nsqlookupd's TCP protocol V1 as pure functions over byte buffers (no sockets, no clock), so
//! every error string is unit-tested byte for byte and the parser can be property-tested.
//!
//! The stream is the 4-byte magic `"  V1"`, then text lines ending in `\n`; IDENTIFY is followed
//! by `[int32 size][JSON]`. A line is trimmed of Unicode white space (Go's `strings.TrimSpace`,
//! so `\r\n` works) and split on single spaces (so `REGISTER t  c` has an empty third word).
//! Every reply is `[int32 size][payload]`, with no frame type (unlike nsqd), and every error is
//! fatal: the connection closes after it.
//!
//! Where nsqlookupd has no limit we have one, documented in docs/compatibility.md: a line may
//! be at most [`MAX_LINE_LEN`] bytes, an IDENTIFY body at most [`MAX_BODY_SIZE`] bytes, and a
//! negative body size is an error (nsqlookupd crashes on it).

use nsq_wire::names::is_valid_name;

use crate::identify::{self, IdentifyBody};

/// The magic a V1 client sends first.
pub const MAGIC_V1: &[u8; 4] = b"  V1";
/// The reply to any other magic, before closing.
pub const BAD_PROTOCOL: &[u8] = b"E_BAD_PROTOCOL";
/// Longest command line accepted, `\n` included (real lines are under 150 bytes).
pub const MAX_LINE_LEN: usize = 16 * 1024;
/// Largest IDENTIFY body accepted (nsqd's default `--max-body-size`; real bodies are ~250 bytes).
pub const MAX_BODY_SIZE: i32 = 5 * 1024 * 1024;

/// A fatal protocol error: `<code> <text>` is sent, then the connection closes. The text is
/// bytes because it may quote what the client sent, unchanged, as nsqlookupd does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} {}", String::from_utf8_lossy(.text))]
pub struct ProtocolError {
    pub code: &'static str,
    pub text: Vec<u8>,
}

impl ProtocolError {
    fn new(code: &'static str, text: impl Into<Vec<u8>>) -> ProtocolError {
        ProtocolError {
            code,
            text: text.into(),
        }
    }

    /// The reply payload: `<code> <text>`.
    pub fn payload(&self) -> Vec<u8> {
        let mut p = Vec::with_capacity(self.code.len() + 1 + self.text.len());
        p.extend_from_slice(self.code.as_bytes());
        p.push(b' ');
        p.extend_from_slice(&self.text);
        p
    }
}

/// `REGISTER` / `UNREGISTER` arguments (names already validated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub topic: String,
    pub channel: Option<String>,
}

/// One complete request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Ping,
    Identify(IdentifyBody),
    Register(Target),
    Unregister(Target),
}

/// True for the V1 magic.
pub fn is_v1_magic(magic: &[u8]) -> bool {
    magic == MAGIC_V1
}

/// Appends a reply, `[int32 size][payload]`.
pub fn encode_reply(out: &mut Vec<u8>, payload: &[u8]) {
    let size = i32::try_from(payload.len()).unwrap_or(i32::MAX);
    out.extend_from_slice(&size.to_be_bytes());
    out.extend_from_slice(payload);
}

/// Parses the first request in `buf` (which starts after the magic). `identified` is whether
/// this connection has IDENTIFIED already. `Ok(None)`: more bytes are needed; `Ok(Some((req,
/// n)))`: `req` used the first `n` bytes.
pub fn parse(buf: &[u8], identified: bool) -> Result<Option<(Request, usize)>, ProtocolError> {
    let window = &buf[..buf.len().min(MAX_LINE_LEN)];
    let Some(nl) = window.iter().position(|&c| c == b'\n') else {
        if buf.len() >= MAX_LINE_LEN {
            return Err(ProtocolError::new(
                "E_INVALID",
                format!("command line longer than {MAX_LINE_LEN} bytes"),
            ));
        }
        return Ok(None);
    };
    let mut params = trim_go_space(&buf[..nl]).split(|&c| c == b' ');
    let name = params.next().unwrap_or_default();
    let args: Vec<&[u8]> = params.collect();
    let req = match name {
        b"PING" => Request::Ping,
        b"IDENTIFY" => {
            if identified {
                return Err(ProtocolError::new("E_INVALID", "cannot IDENTIFY again"));
            }
            return Ok(parse_identify_body(&buf[nl + 1..])?
                .map(|(body, n)| (Request::Identify(body), nl + 1 + n)));
        }
        b"REGISTER" | b"UNREGISTER" => {
            if !identified {
                return Err(ProtocolError::new("E_INVALID", "client must IDENTIFY"));
            }
            let target = target(name, &args)?;
            if name == b"REGISTER" {
                Request::Register(target)
            } else {
                Request::Unregister(target)
            }
        }
        _ => {
            let mut text = b"invalid command ".to_vec();
            text.extend_from_slice(name);
            return Err(ProtocolError::new("E_INVALID", text));
        }
    };
    Ok(Some((req, nl + 1)))
}

/// `[int32 size][JSON]` after an IDENTIFY line.
fn parse_identify_body(rest: &[u8]) -> Result<Option<(IdentifyBody, usize)>, ProtocolError> {
    let Some(size) = rest.get(..4) else {
        return Ok(None);
    };
    let size = i32::from_be_bytes([size[0], size[1], size[2], size[3]]);
    if !(0..=MAX_BODY_SIZE).contains(&size) {
        return Err(ProtocolError::new(
            "E_BAD_BODY",
            format!("IDENTIFY invalid body size {size}"),
        ));
    }
    let end = 4 + size as usize;
    let Some(body) = rest.get(4..end) else {
        return Ok(None);
    };
    match identify::decode(body) {
        Ok(b) => Ok(Some((b, end))),
        Err(e) => Err(ProtocolError::new("E_BAD_BODY", format!("IDENTIFY {e}"))),
    }
}

/// The error nsqlookupd answers when the client closes its side while `buf` (what [`parse`]
/// left unconsumed) holds an IDENTIFY line without its complete body. An incomplete line gets
/// no answer (`None`): the connection just closes.
pub fn error_at_eof(buf: &[u8]) -> Option<ProtocolError> {
    let nl = buf.iter().position(|&c| c == b'\n')?;
    let name = trim_go_space(&buf[..nl]).split(|&c| c == b' ').next()?;
    if name != b"IDENTIFY" {
        return None;
    }
    Some(if buf.len() - (nl + 1) < 4 {
        ProtocolError::new("E_BAD_BODY", "IDENTIFY failed to read body size")
    } else {
        ProtocolError::new("E_BAD_BODY", "IDENTIFY failed to read body")
    })
}

/// nsqlookupd's `getTopicChan`: a topic, an optional channel (an empty second word counts as no
/// channel), both validated with nsqd's name rules; error texts quote the names in `'`.
fn target(command: &[u8], args: &[&[u8]]) -> Result<Target, ProtocolError> {
    let cmd = String::from_utf8_lossy(command);
    let Some(&topic) = args.first() else {
        return Err(ProtocolError::new(
            "E_INVALID",
            format!("{cmd} insufficient number of params"),
        ));
    };
    let channel = args.get(1).copied().unwrap_or_default();
    let bad = |code, what: &str, name: &[u8]| {
        let mut text = format!("{cmd} {what} name '").into_bytes();
        text.extend_from_slice(name);
        text.extend_from_slice(b"' is not valid");
        ProtocolError::new(code, text)
    };
    if !is_valid_name(topic) {
        return Err(bad("E_BAD_TOPIC", "topic", topic));
    }
    if !channel.is_empty() && !is_valid_name(channel) {
        return Err(bad("E_BAD_CHANNEL", "channel", channel));
    }
    // Valid names are ASCII.
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    Ok(Target {
        topic: text(topic),
        channel: (!channel.is_empty()).then(|| text(channel)),
    })
}

/// The first character of `b` and its length, if `b` starts with valid UTF-8.
fn first_char(b: &[u8]) -> Option<(char, usize)> {
    let head = &b[..b.len().min(4)];
    let valid = match std::str::from_utf8(head) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
    };
    valid.chars().next().map(|c| (c, c.len_utf8()))
}

/// The last character of `b` and its length, if `b` ends with valid UTF-8.
fn last_char(b: &[u8]) -> Option<(char, usize)> {
    (1..=b.len().min(4)).find_map(|n| {
        let s = std::str::from_utf8(&b[b.len() - n..]).ok()?;
        s.chars().last().map(|c| (c, c.len_utf8()))
    })
}

/// Go's `strings.TrimSpace` on raw bytes: Unicode white space off both ends; invalid UTF-8 is
/// never space.
pub fn trim_go_space(mut b: &[u8]) -> &[u8] {
    while let Some((_, n)) = first_char(b).filter(|(c, _)| c.is_whitespace()) {
        b = &b[n..];
    }
    while let Some((_, n)) = last_char(b).filter(|(c, _)| c.is_whitespace()) {
        b = &b[..b.len() - n];
    }
    b
}

#[cfg(test)]
mod tests;
