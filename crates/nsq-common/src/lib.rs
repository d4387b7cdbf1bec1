//! What nsqrd (nsqd), nsqrlookupd (nsqlookupd) and the CLIs (`nsqr`, `nsqr-bench`) share,
//! written once: Go duration text, Go's JSON escaping and integral floats, UTC calendar dates,
//! the process's memory from procfs, and (behind features) nsqd-style log lines, the accept
//! loop of every listener, the Go/httprouter HTTP conventions both daemons reproduce, the TOML
//! config-file reading, the rustls pieces of both TLS sides (`tls`), and faulting fresh memory
//! in with one call (`prefault`).
//!
//! Only code that is the same in the callers lives here; anything where nsqd and nsqlookupd
//! answer differently (error texts, log wording, header sets) stays in the daemon, so both keep
//! behaving byte for byte like their upstream counterpart.

pub mod duration;
pub mod float;
pub mod goflag;
pub mod json;
pub mod procfs;
pub mod utc_date;

#[cfg(feature = "config")]
pub mod config_file;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "logging")]
pub mod logging;
#[cfg(feature = "net")]
pub mod net;
#[cfg(feature = "prefault")]
pub mod prefault;
#[cfg(feature = "tls")]
pub mod tls;
