//! Encoding the commands a client sends. Each appends one complete command to a buffer; the
//! fallible ones refuse what cannot be put on the wire as meant (an invalid topic or channel
//! name would change the command line, a body over 2 GiB does not fit its 32-bit size) with
//! an [`EncodeError`] and leave the buffer as it was. Server limits (max message size, RDY
//! range, ...) are the server's to enforce.

use bytes::{BufMut, Bytes, BytesMut};

use crate::bodies::Bodies;
use crate::command::{has_separator, Command, IdToken};
use crate::frame::MAGIC_V2;
use crate::names::is_valid_name;
use crate::spliced::Spliced;

/// A command that cannot be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// Not a valid topic or channel name (nsqd's `^[.a-zA-Z0-9_-]+(#ephemeral)?$`, 1..=64
    /// bytes).
    #[error("{what} name {name:?} is not valid")]
    BadName {
        /// `topic` or `channel`.
        what: &'static str,
        /// The name, lossily decoded.
        name: String,
    },
    /// A body (or an MPUB's bodies with their framing) longer than a 32-bit size can say.
    #[error("{0} body of {1} bytes is too large for the wire")]
    TooLarge(&'static str, usize),
    /// A count the wire cannot carry (a negative RDY).
    #[error("{0} {1} is out of range")]
    OutOfRange(&'static str, i64),
    /// A message id holding a space, CR or LF, which would end the command line early (ids
    /// from nsqd are 16 hex digits).
    #[error("message id {0:?} holds a separator")]
    BadId(String),
}

fn check_id(id: &IdToken) -> Result<(), EncodeError> {
    if has_separator(id) {
        return Err(EncodeError::BadId(String::from_utf8_lossy(id).into_owned()));
    }
    Ok(())
}

fn check_name(what: &'static str, name: &[u8]) -> Result<(), EncodeError> {
    if is_valid_name(name) {
        Ok(())
    } else {
        Err(EncodeError::BadName {
            what,
            name: String::from_utf8_lossy(name).into_owned(),
        })
    }
}

/// The 4-byte size of a body of `len` bytes.
fn size(cmd: &'static str, len: usize) -> Result<[u8; 4], EncodeError> {
    i32::try_from(len)
        .map(i32::to_be_bytes)
        .map_err(|_| EncodeError::TooLarge(cmd, len))
}

/// `  V2`, the first bytes of every connection.
pub fn put_magic<B: BufMut>(buf: &mut B) {
    buf.put_slice(MAGIC_V2);
}

/// `IDENTIFY` with its JSON body (`serde_json::to_vec` of an
/// [`IdentifyRequest`](crate::identify::IdentifyRequest)).
pub fn put_identify<B: BufMut>(buf: &mut B, json: &[u8]) -> Result<(), EncodeError> {
    let size = size("IDENTIFY", json.len())?;
    buf.put_slice(b"IDENTIFY\n");
    buf.put_slice(&size);
    buf.put_slice(json);
    Ok(())
}

/// `AUTH` with the secret as its body.
pub fn put_auth<B: BufMut>(buf: &mut B, secret: &[u8]) -> Result<(), EncodeError> {
    let size = size("AUTH", secret.len())?;
    buf.put_slice(b"AUTH\n");
    buf.put_slice(&size);
    buf.put_slice(secret);
    Ok(())
}

/// `SUB <topic> <channel>`.
pub fn put_sub<B: BufMut>(
    buf: &mut B,
    topic: impl AsRef<[u8]>,
    channel: impl AsRef<[u8]>,
) -> Result<(), EncodeError> {
    let (topic, channel) = (topic.as_ref(), channel.as_ref());
    check_name("topic", topic)?;
    check_name("channel", channel)?;
    buf.put_slice(b"SUB ");
    buf.put_slice(topic);
    buf.put_u8(b' ');
    buf.put_slice(channel);
    buf.put_u8(b'\n');
    Ok(())
}

/// `PUB <topic>` with one message.
pub fn put_pub<B: BufMut>(
    buf: &mut B,
    topic: impl AsRef<[u8]>,
    body: &[u8],
) -> Result<(), EncodeError> {
    put_pub_head(buf, topic.as_ref(), body.len())?;
    buf.put_slice(body);
    Ok(())
}

/// [`put_pub`], a large body kept in `spliced` rather than copied ([`crate::spliced`]).
pub fn put_pub_spliced(
    buf: &mut BytesMut,
    spliced: &mut Spliced,
    topic: impl AsRef<[u8]>,
    body: &Bytes,
) -> Result<(), EncodeError> {
    put_pub_head(buf, topic.as_ref(), body.len())?;
    spliced.put_body(buf, body);
    Ok(())
}

/// A PUB up to its body.
fn put_pub_head<B: BufMut>(buf: &mut B, topic: &[u8], len: usize) -> Result<(), EncodeError> {
    check_name("topic", topic)?;
    let size = size("PUB", len)?;
    buf.put_slice(b"PUB ");
    buf.put_slice(topic);
    buf.put_u8(b'\n');
    buf.put_slice(&size);
    Ok(())
}

/// `MPUB <topic>` with several messages: `[count]([size][body])*` as its body.
pub fn put_mpub<B: BufMut, M: AsRef<[u8]>>(
    buf: &mut B,
    topic: impl AsRef<[u8]>,
    bodies: &[M],
) -> Result<(), EncodeError> {
    put_mpub_with(buf, topic.as_ref(), bodies, |b, m| b.put_slice(m.as_ref()))
}

/// [`put_mpub`], large bodies kept in `spliced` rather than copied ([`crate::spliced`]).
pub fn put_mpub_spliced(
    buf: &mut BytesMut,
    spliced: &mut Spliced,
    topic: impl AsRef<[u8]>,
    bodies: &[Bytes],
) -> Result<(), EncodeError> {
    put_mpub_with(buf, topic.as_ref(), bodies, |b, m| spliced.put_body(b, m))
}

/// An MPUB, each body written by `put_body` after its size.
fn put_mpub_with<B: BufMut, M: AsRef<[u8]>>(
    buf: &mut B,
    topic: &[u8],
    bodies: &[M],
    mut put_body: impl FnMut(&mut B, &M),
) -> Result<(), EncodeError> {
    check_name("topic", topic)?;
    let total = bodies
        .iter()
        .fold(4usize, |n, m| n.saturating_add(4 + m.as_ref().len()));
    let total = size("MPUB", total)?;
    let count = size("MPUB", bodies.len())?;
    // Each body is shorter than the total, so its size fits too.
    buf.put_slice(b"MPUB ");
    buf.put_slice(topic);
    buf.put_u8(b'\n');
    buf.put_slice(&total);
    buf.put_slice(&count);
    for m in bodies {
        buf.put_u32(m.as_ref().len() as u32);
        put_body(buf, m);
    }
    Ok(())
}

/// `DPUB <topic> <defer_ms>` with one message, delivered after `defer_ms` milliseconds.
pub fn put_dpub<B: BufMut>(
    buf: &mut B,
    topic: impl AsRef<[u8]>,
    defer_ms: u64,
    body: &[u8],
) -> Result<(), EncodeError> {
    let topic = topic.as_ref();
    check_name("topic", topic)?;
    let size = size("DPUB", body.len())?;
    buf.put_slice(b"DPUB ");
    buf.put_slice(topic);
    buf.put_u8(b' ');
    put_decimal(buf, defer_ms);
    buf.put_u8(b'\n');
    buf.put_slice(&size);
    buf.put_slice(body);
    Ok(())
}

/// `RDY <count>`: how many messages the server may have in flight to this connection.
pub fn put_rdy<B: BufMut>(buf: &mut B, count: u64) {
    buf.put_slice(b"RDY ");
    put_decimal(buf, count);
    buf.put_u8(b'\n');
}

/// `FIN <id>`: the message is done.
pub fn put_fin<B: BufMut>(buf: &mut B, id: &IdToken) -> Result<(), EncodeError> {
    check_id(id)?;
    buf.put_slice(b"FIN ");
    buf.put_slice(id);
    buf.put_u8(b'\n');
    Ok(())
}

/// `REQ <id> <delay_ms>`: deliver the message again after `delay_ms` milliseconds.
pub fn put_req<B: BufMut>(buf: &mut B, id: &IdToken, delay_ms: u64) -> Result<(), EncodeError> {
    check_id(id)?;
    buf.put_slice(b"REQ ");
    buf.put_slice(id);
    buf.put_u8(b' ');
    put_decimal(buf, delay_ms);
    buf.put_u8(b'\n');
    Ok(())
}

/// `TOUCH <id>`: reset the message's in-flight timeout.
pub fn put_touch<B: BufMut>(buf: &mut B, id: &IdToken) -> Result<(), EncodeError> {
    check_id(id)?;
    buf.put_slice(b"TOUCH ");
    buf.put_slice(id);
    buf.put_u8(b'\n');
    Ok(())
}

/// `NOP`, the answer to a heartbeat.
pub fn put_nop<B: BufMut>(buf: &mut B) {
    buf.put_slice(b"NOP\n");
}

/// `CLS`: stop delivering; the server answers `CLOSE_WAIT`.
pub fn put_cls<B: BufMut>(buf: &mut B) {
    buf.put_slice(b"CLS\n");
}

/// Any [`Command`], as its encoder above writes it.
pub fn put_command<B: BufMut>(buf: &mut B, cmd: &Command) -> Result<(), EncodeError> {
    match cmd {
        Command::Nop => put_nop(buf),
        Command::Identify(json) => put_identify(buf, json)?,
        Command::Auth(secret) => put_auth(buf, secret)?,
        Command::Sub { topic, channel } => put_sub(buf, topic, channel)?,
        Command::Rdy(count) => {
            let count =
                u64::try_from(*count).map_err(|_| EncodeError::OutOfRange("RDY", *count))?;
            put_rdy(buf, count)
        }
        Command::Fin(id) => put_fin(buf, id)?,
        Command::Req { id, delay_ms } => put_req(buf, id, *delay_ms)?,
        Command::Touch(id) => put_touch(buf, id)?,
        Command::Cls => put_cls(buf),
        Command::Pub { topic, body } => put_pub(buf, topic, body)?,
        Command::Mpub { topic, bodies } => put_mpub(buf, topic, &collect(bodies))?,
        Command::Dpub {
            topic,
            defer_ms,
            body,
        } => put_dpub(buf, topic, *defer_ms, body)?,
    }
    Ok(())
}

fn collect(bodies: &Bodies) -> Vec<&[u8]> {
    bodies.iter().collect()
}

/// `n` in decimal ASCII, without allocating.
fn put_decimal<B: BufMut>(buf: &mut B, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.put_slice(&digits[at..]);
}
