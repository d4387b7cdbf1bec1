//! nsqr-client: an NSQ client for Rust, with go-nsq's feature set, over three transports.
//!
//! A [`Producer`] publishes to one nsqd; a [`Consumer`] reads one channel of a topic from any
//! number of nsqd, found through nsqlookupd or given. Both speak NSQ's TCP protocol V2 to any
//! nsqd (nsqrd or upstream nsqd) over `tcp://host:port` (or a bare `host:port`) and
//! `unix:///path`, and run on the broker of this very process over `inproc://`
//! ([`Config::inproc`]): no socket and no copy, a published body arrives as the same
//! `Bytes`.
//!
//! What go-nsq does, this does: IDENTIFY with feature negotiation, TLS (rustls), snappy and
//! deflate, AUTH, heartbeats; PUB / MPUB / DPUB answered in order over one pipelined
//! connection (publishes that queue up go out as one MPUB); max-in-flight spread across
//! connections and redistributed, backoff after failures, client-side max attempts, lookupd
//! polling and reconnects. Errors are [`Error`]s; a server's error frame keeps nsqd's text and
//! its code ([`Error::code`], e.g. [`ErrorCode::BadTopic`]).
//!
//! # Publish and consume in process
//!
//! ```
//! use nsqr_broker::{Broker, BrokerConfig};
//! use nsqr_client::{Config, Consumer, Producer};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let broker = Broker::start(BrokerConfig::default()).await?;
//! let config = Config::inproc(broker.clone());
//!
//! let mut consumer = Consumer::new("orders", "billing", config.clone())?;
//! consumer.connect("inproc://").await?;
//!
//! let producer = Producer::connect("inproc://", config).await?;
//! let body = bytes::Bytes::from_static(b"order 1");
//! producer.publish("orders", body.clone()).await?;
//!
//! let m = consumer.next().await.expect("a message");
//! assert_eq!(m.body(), &body);
//! assert_eq!(m.body().as_ptr(), body.as_ptr()); // the very buffer published
//! m.finish()?;
//! consumer.stop().await;
//! broker.shutdown().await?;
//! # Ok(())
//! # }
//! ```
//!
//! # Over TCP, with a handler
//!
//! The same code talks to an nsqd when the address is `tcp://` (here an nsqrd started in the
//! test process on an ephemeral port). A [`Handler`] returns whether it handled a message; the
//! consumer finishes it, or requeues it and backs off.
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use nsqr_client::{handler_fn, Config, Consumer, Message, Producer};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let opts = nsqrd::Options::parse(
//! #     ["--tcp-address=127.0.0.1:0", "--http-address=127.0.0.1:0", "--https-address=", "--log-level=error"]
//! #         .iter().map(|s| s.to_string()),
//! # )?;
//! # let dir = std::env::temp_dir().join(format!("nsqr-client-doc-{}", std::process::id()));
//! # std::fs::create_dir_all(&dir)?;
//! # let mut opts = opts; opts.data_path = dir.to_string_lossy().into_owned();
//! # let nsqd = nsqrd::Server::start(opts).await?;
//! let addr = format!("tcp://{}", nsqd.tcp_addr().expect("a TCP listener"));
//!
//! let producer = Producer::connect(&addr, Config::default()).await?;
//! producer.multi_publish("events", ["a", "b", "c"]).await?;
//!
//! let mut config = Config::default();
//! config.max_in_flight = 10;
//! let mut consumer = Consumer::new("events", "log", config)?;
//! consumer.connect(&addr).await?;
//! let stop = consumer.stopper();
//! let seen = AtomicUsize::new(0);
//! consumer
//!     .run(handler_fn(move |m: &Message| {
//!         println!("{}", String::from_utf8_lossy(m.body()));
//!         if seen.fetch_add(1, Ordering::SeqCst) == 2 {
//!             stop.stop(); // run() returns once the handlers are done
//!         }
//!         Ok(())
//!     }))
//!     .await?;
//! assert_eq!(consumer.stats().finished, 3);
//! # producer.stop().await;
//! # nsqd.shutdown().await?;
//! # let _ = std::fs::remove_dir_all(dir);
//! # Ok(())
//! # }
//! ```
//!
//! # Which call to use
//!
//! | to | call |
//! |---|---|
//! | publish and wait for the answer | [`Producer::publish`], [`Producer::multi_publish`], [`Producer::deferred_publish`] |
//! | keep many publishes in flight | [`Producer::publish_async`] (a [`Publish`] future per message) |
//! | take messages one by one | [`Consumer::next`] → [`Message::finish`] / [`Message::requeue`] / [`Message::touch`] |
//! | handle messages with a function, concurrently | [`Consumer::run`] with a [`Handler`] (`handler_concurrency`) |
//! | consume as fast as possible | [`Consumer::next_batch`]: each read's messages lent in place, answered by a [`Reply`] |
//! | find nsqd through nsqlookupd | [`Consumer::connect_to_lookupd`] |
//! | request-reply, work queue, pub-sub | [`patterns`] |
//!
//! A message dropped unanswered is requeued at once. `docs/client.md` in the repository has
//! the tour, the settings and the differences from go-nsq.

#![warn(missing_docs)]

mod address;
mod config;
mod consumer;
mod error;
pub mod http;
pub mod lookupd;
mod message;
pub mod patterns;
mod producer;
pub mod tls;
mod wire;

pub use address::Address;
pub use config::{BackoffStrategy, Compression, Config, TlsConfig};
pub use consumer::{handler_fn, Consumer, FnHandler, Handler, HandlerError, Stats, Stopper};
pub use error::{Error, ErrorCode, Result};
pub use message::{Message, MessageRef, Reply};
pub use producer::{Producer, Publish};

/// The programs of `docs/client.md`, compiled (and, unless marked `no_run`, run) as this
/// crate's doctests, so that the page cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/client.md")]
pub struct ClientGuide;
