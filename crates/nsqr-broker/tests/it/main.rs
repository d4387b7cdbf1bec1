//! nsqr-broker's integration tests, in one binary: the engine through its public API, in
//! process, each module one area (embedding, queue features, the disk queue).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod disk_queue;
mod embedding;
mod queues;
mod replicated;
