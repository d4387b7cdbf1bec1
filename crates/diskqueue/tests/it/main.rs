//! diskqueue's integration tests, in one binary: the queue through its public API on real
//! files, each module one area (basics, acks, rolling files, recovery, nsqd compatibility, a
//! model-based property test), and `common` their temporary directories and helpers.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

mod acks;
mod basic;
mod compat;
mod model;
mod recovery;
mod rolling;
