//! Frames on a cluster connection: `[u32 length, big-endian][postcard payload]`, with a bound
//! on the length checked before anything is allocated.

use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::NetError;

/// Bound on a frame during the handshake: a hello is a few dozen bytes.
pub(crate) const HANDSHAKE_MAX: usize = 4096;
/// Bound on an RPC frame: an append of a batch of entries, or a snapshot chunk.
pub(crate) const RPC_MAX: usize = 128 << 20;

/// Encodes `value` as one frame; refuses a payload over `max`.
pub(crate) fn encode<T: Serialize>(value: &T, max: usize) -> Result<Vec<u8>, NetError> {
    let mut out = vec![0; 4];
    out = postcard::to_extend(value, out).map_err(|e| NetError::Encode(e.to_string()))?;
    let len = out.len() - 4;
    if len > max {
        return Err(NetError::TooLarge { len, max });
    }
    out[..4].copy_from_slice(&(len as u32).to_be_bytes());
    Ok(out)
}

/// Writes one frame.
pub(crate) async fn write<W, T>(w: &mut W, value: &T, max: usize) -> Result<(), NetError>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    let frame = encode(value, max)?;
    w.write_all(&frame).await?;
    w.flush().await?;
    Ok(())
}

/// Reads one frame of at most `max` bytes.
pub(crate) async fn read<R, T>(r: &mut R, max: usize) -> Result<T, NetError>
where
    R: AsyncRead + Unpin,
    T: DeserializeOwned,
{
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await?;
    let len = u32::from_be_bytes(len) as usize;
    if len > max {
        return Err(NetError::TooLarge { len, max });
    }
    let mut payload = vec![0; len];
    r.read_exact(&mut payload).await?;
    postcard::from_bytes(&payload).map_err(|e| NetError::Decode(e.to_string()))
}
