//! nsqr-client's integration tests, in one binary: each module is one area of the client, and
//! `common` starts the daemons it talks to (this workspace's nsqrd and nsqrlookupd, or the
//! binaries named by `NSQD_BIN` and `NSQLOOKUPD_BIN`) as processes on ephemeral loopback ports.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod connection_features;
mod consuming;
mod inproc;
mod patterns;
mod several_nodes;
mod transports;
