//! Connections to nsqd over TCP or a unix socket: the socket ([`stream`]), frames and
//! compression over it ([`framed`]), the opening handshake ([`handshake`]), and the writing
//! task every connection runs ([`write_loop`]) with the queue other tasks put commands in
//! ([`commands`]).
//!
//! A connection is split in two after its handshake. Its reader decodes frames (a producer's
//! in a task of the connection, matching answers to publishes; a consumer's in the consumer's
//! own task). Its writer is a task that sleeps until something is queued and then writes
//! everything queued in one go, so many FINs or publishes cost one syscall.

pub(crate) mod commands;
pub(crate) mod framed;
pub(crate) mod handshake;
pub(crate) mod stream;

use std::time::Duration;

use bytes::BytesMut;
use nsq_wire::spliced::Spliced;
use tokio::sync::Notify;

use crate::error::Error;
use framed::Writer;

/// What the writer finds when it looks at its queue.
pub(crate) enum Flow {
    /// Commands were moved into the output buffer: write them.
    Write,
    /// Nothing queued: sleep until woken.
    Idle,
    /// Nothing queued and nothing more will be: close the writing direction.
    Close,
}

/// The queue a writer task drains.
pub(crate) trait Outgoing: Send + Sync + 'static {
    /// Move queued commands into `out` (empty when called), encoded; large bodies may be
    /// left where they lie, in `spliced` (`nsq_wire::spliced`), to go out with `out`.
    fn take(&self, out: &mut BytesMut, spliced: &mut Spliced) -> Flow;
    /// Woken when something is queued or the queue closes.
    fn wakeup(&self) -> &Notify;

    /// While the queue is corked (more commands are about to come: a consumer working
    /// through a read's messages), what tells the writer it is uncorked.
    fn corked(&self) -> Option<&Notify> {
        None
    }
}

/// How long a woken writer waits for a corked queue to be uncorked.
const CORK_MAX: Duration = Duration::from_millis(1);

/// Output buffers larger than this are dropped after use rather than kept.
const KEEP_OUT: usize = 4 << 20;

/// Write whatever `src` queues until it closes or a write fails; with `keepalive`, a NOP
/// after that long without a write.
pub(crate) async fn write_loop<S: Outgoing>(
    mut w: Writer,
    src: &S,
    timeout: Duration,
    keepalive: Option<Duration>,
) -> Result<(), Error> {
    let mut out = BytesMut::with_capacity(64 << 10);
    let mut spliced = Spliced::default();
    loop {
        match src.take(&mut out, &mut spliced) {
            Flow::Write => {
                if spliced.is_empty() {
                    w.write(&out, timeout).await?;
                } else {
                    w.write_parts(&spliced.slices(&out, out.len()), timeout)
                        .await?;
                    spliced.written(out.len());
                }
                out.clear();
                if out.capacity() > KEEP_OUT {
                    out = BytesMut::with_capacity(64 << 10);
                }
            }
            Flow::Idle => {
                match keepalive {
                    None => src.wakeup().notified().await,
                    Some(every) => {
                        let woken = tokio::time::timeout(every, src.wakeup().notified()).await;
                        if woken.is_err() {
                            w.write(b"NOP\n", timeout).await?;
                            continue;
                        }
                    }
                }
                if let Some(uncorked) = src.corked() {
                    let _ = tokio::time::timeout(CORK_MAX, uncorked.notified()).await;
                }
            }
            Flow::Close => {
                w.shutdown().await;
                return Ok(());
            }
        }
    }
}
