//! The bodies of nsqr's fuzz targets, one function each, taking the fuzzer's bytes.
//!
//! `fuzz/` (a cargo-fuzz crate outside the workspace, built on nightly) makes each of these a
//! libFuzzer target in one line; `tests/replay.rs` runs every file under
//! `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` through the same function on
//! stable, in `cargo test --workspace`. So a crash found once stays a test forever, and the
//! targets cannot rot while nobody runs the fuzzer.
//!
//! A target panics (an `assert!`) when an invariant breaks: beyond "no panic, no unbounded
//! memory", each checks what its code promises (the copy and split handovers parse alike, a
//! parsed command re-encodes to itself, a redirect leads to a route, a decoder's output per
//! call stays bounded, ...). Inputs start with a mode byte or two that pick the state and
//! limits, so one target covers every configuration.

mod compress;
mod diskqueue;
mod frames;
mod hll;
mod http;
mod mpub;
mod resp;
mod scratch;
mod v2;

pub use compress::{deflate_stream, snappy_stream};
pub use diskqueue::{diskqueue_chunks, diskqueue_records};
pub use frames::client_frames;
pub use hll::hll_value;
pub use http::http_url;
pub use mpub::mpub_bodies;
pub use resp::resp_request;
pub use v2::v2_parser;

/// A fuzz target: its name (the cargo-fuzz binary and corpus directory) and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by the name of its `fuzz/fuzz_targets/<name>.rs` and corpus directory.
pub const TARGETS: &[Target] = &[
    ("v2_parser", v2_parser),
    ("mpub_bodies", mpub_bodies),
    ("diskqueue_records", diskqueue_records),
    ("diskqueue_chunks", diskqueue_chunks),
    ("http_url", http_url),
    ("snappy_stream", snappy_stream),
    ("deflate_stream", deflate_stream),
    ("client_frames", client_frames),
    ("resp_request", resp_request),
    ("hll_value", hll_value),
];
