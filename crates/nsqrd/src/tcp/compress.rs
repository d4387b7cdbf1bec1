//! Connection compression negotiated through IDENTIFY. The codecs themselves (snappy framing,
//! raw DEFLATE, on whole buffers) are `nsq_wire::compress`, shared with clients; `transport`
//! stacks them on the socket.

pub use nsq_wire::compress::{Codec, CodecError};
