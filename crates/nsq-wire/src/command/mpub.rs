//! Walking an MPUB body (`[i32 n]([i32 size][data])*`) in nsqd's check order. The TCP parser
//! and HTTP `/mpub?binary=true` share it, so both refuse the same bodies with the same words.

use super::{read_i32, Limits};
use crate::error::{Code, ProtocolError};

/// Walk an MPUB body (`[i32 n]([i32 size][data])*`) in nsqd's check order, calling `each` with
/// the byte range of every message. The body must be used up exactly (nsqd never checks this and
/// desynchronises the stream instead).
pub fn split_mpub(
    body: &[u8],
    limits: &Limits,
    mut each: impl FnMut(usize, usize),
) -> Result<(), ProtocolError> {
    if body.len() < 4 {
        return Err(ProtocolError::new(
            Code::BadBody,
            "MPUB failed to read message count",
        ));
    }
    let n = read_i32(body);
    let max_messages = (limits.max_body_size - 4) / 5;
    if n <= 0 || n as i64 > max_messages {
        return Err(ProtocolError::new(
            Code::BadBody,
            format!("MPUB invalid message count {n}"),
        ));
    }
    let mut pos = 4;
    for i in 0..n {
        if body.len() < pos + 4 {
            return Err(ProtocolError::new(
                Code::BadMessage,
                format!("MPUB failed to read message({i}) body size"),
            ));
        }
        let size = read_i32(&body[pos..]);
        pos += 4;
        if size <= 0 {
            return Err(ProtocolError::new(
                Code::BadMessage,
                format!("MPUB invalid message({i}) body size {size}"),
            ));
        }
        if size as i64 > limits.max_msg_size {
            return Err(ProtocolError::new(
                Code::BadMessage,
                format!("MPUB message too big {size} > {}", limits.max_msg_size),
            ));
        }
        let end = pos + size as usize;
        if body.len() < end {
            return Err(ProtocolError::new(
                Code::BadMessage,
                "MPUB failed to read message body",
            ));
        }
        each(pos, end);
        pos = end;
    }
    if pos != body.len() {
        return Err(ProtocolError::new(
            Code::BadBody,
            format!(
                "MPUB body size {} does not match its messages ({pos} bytes)",
                body.len()
            ),
        ));
    }
    Ok(())
}
