//! The client's half of protocol V2, sans-IO: encoders for every command a client sends
//! ([`encode`]) and a decoder for the frames the server sends back ([`decode`]).
//!
//! A client appends commands to its write buffer and flushes it, and feeds whatever it reads
//! into a [`FrameDecoder`], which yields whole frames without copying their bodies. Commands
//! encoded here parse back to the same [`Command`](crate::Command) with the server's parser,
//! and frames encoded by [`crate::frame`] decode back to the same [`Frame`]: both are
//! property-tested, so client and server cannot drift apart.

pub mod decode;
pub mod encode;

pub use decode::{Frame, FrameDecoder, FrameError, FrameRef, DEFAULT_MAX_FRAME_SIZE};
pub use encode::{
    put_auth, put_cls, put_command, put_dpub, put_fin, put_identify, put_magic, put_mpub,
    put_mpub_spliced, put_nop, put_pub, put_pub_spliced, put_rdy, put_req, put_sub, put_touch,
    EncodeError,
};

#[cfg(test)]
mod tests;
