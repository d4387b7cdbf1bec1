//! The keyspace's HyperLogLog values (`nsqr_kv::hll`): any bytes a client stores under a key
//! and then counts, merges or adds to. The checks live beside the format
//! (`nsqr_kv::hll_fuzz::check`) so its own property tests share them.

/// Fuzz target `hll_value`.
pub fn hll_value(data: &[u8]) {
    nsqr_kv::hll_fuzz::check(data);
}
