//! Three nodes of one group in one process, on 127.0.0.1: commit, failover, catch-up,
//! membership changes, refusal of strangers, mutual TLS, and publishes forwarded to the leader.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed expect is a failed test

mod failover;
mod forward;
mod harness;
mod membership;
mod refusal;
mod replicate;
mod stranded;
mod tls;
