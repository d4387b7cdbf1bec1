//! The keyspace's RESP request parser and reply decoder (`resp_wire`): whole and split input
//! parse alike, requests stay within the input, replies decode without panics. The checks
//! live beside the codec (`resp_wire::fuzz::check`) so its own property tests share them.

/// Fuzz target `resp_request`.
pub fn resp_request(data: &[u8]) {
    resp_wire::fuzz::check(data);
}
