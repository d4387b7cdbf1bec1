//! nsqrlookupd's integration tests, in one binary: each module is one area of behaviour, and
//! `common` is the harness they share. Each test runs this build's nsqrlookupd (or the binary
//! named by `NSQLOOKUPD_BIN`) as its own process on ephemeral loopback ports.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod hostile;
mod http_api;
mod nsqd_interop;
mod startup;
mod tcp_protocol;
mod timing;
