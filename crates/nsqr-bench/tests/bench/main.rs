//! nsqr-bench as a user runs it, against real servers: one test binary (one link) with a
//! module per group of modes. Each module finds its servers beside `CARGO_BIN_EXE_nsqr-bench`
//! (or in the environment variables it names) and checks exact counts, not figures.

mod cluster;
mod http_pub;
mod kv;
mod modes;
mod replicated;
mod transports;
