//! nsqrd as a library: the whole drop-in nsqd (TCP protocol V2, HTTP API, lookupd peers,
//! statsd, the broker) started in process. `main.rs` only parses flags and calls [`run`];
//! tests and programs that want an nsqd inside them call [`Server::start`] and
//! [`Server::shutdown`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), String> {
//! let opts = nsqrd::Options::parse(["--tcp-address=127.0.0.1:0", "--http-address=127.0.0.1:0"]
//!     .iter().map(|s| s.to_string()))
//!     .map_err(|e| e.to_string())?;
//! let server = nsqrd::Server::start(opts).await?;
//! println!("nsqd protocol on {:?}", server.tcp_addr());
//! server.shutdown().await
//! # }
//! ```

mod auth;
mod cluster;
mod http;
mod http_wiring;
mod listener;
mod memtrim;
mod options;
mod queue_settings_file;
mod resp;
mod rlimit;
mod server;
mod tasks;
mod tcp;
mod tls;

pub use nsqr_broker::NSQD_COMPAT_VERSION;
pub use options::{Options, OptionsError, OptionsWarning};
pub use rlimit::raise_open_files_limit;
pub use server::{run, wait_for_signal, Hooks, Server};

/// The programs of `docs/library.md`, run as this crate's doctests, so that the page cannot
/// drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
pub struct LibraryGuide;
