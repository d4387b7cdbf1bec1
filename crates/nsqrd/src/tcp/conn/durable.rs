//! Publishes acknowledged only once the disk has them: the `OK`s of publishes whose ticket is
//! pending (strict mode: until the fsync; default mode: until the disk writer's `write`, for
//! messages that went to disk) sit in the output buffer behind a ticket each; the buffer is
//! written only up to the first pending one, the connection keeps reading meanwhile (bounded),
//! and a failed ticket replaces its `OK`s with the fatal error. A publish that went to memory
//! has a ticket done at once and none of this runs.

use std::collections::VecDeque;

use nsq_wire::{Code, ProtocolError};
use nsqr_broker::Ticket;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{Conn, Flow};

/// Publishes (and their body bytes) waiting for the disk before the connection stops reading.
pub(super) const MAX_UNSETTLED: usize = 4096;
pub(super) const MAX_UNSETTLED_BYTES: usize = 16 << 20;

/// `OK`s already in the output buffer (from `at` on) whose publish the disk does not have yet.
pub(super) struct Unsettled {
    pub(super) at: usize,
    ticket: Ticket,
    code: Code,
    cmd: &'static str,
    bytes: usize,
}

/// Resolves when the disk has the oldest pending publish (never, if there is none).
pub(super) async fn first_ready(unsettled: &mut VecDeque<Unsettled>) {
    match unsettled.front_mut() {
        Some(u) => u.ticket.ready().await,
        None => std::future::pending().await,
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    /// Drop the tickets that completed, oldest first. On a failure the buffer is cut where
    /// that publish's `OK`s begin, the later ones are forgotten and its error (fatal) goes out.
    pub(super) fn settle_ready(&mut self) -> Flow {
        while let Some(u) = self.unsettled.front_mut() {
            match u.ticket.try_result() {
                None => break,
                Some(Ok(())) => {
                    self.unsettled_bytes -= u.bytes;
                    self.unsettled.pop_front();
                }
                Some(Err(e)) => {
                    let (at, code, cmd) = (u.at, u.code, u.cmd);
                    self.unsettled.clear();
                    self.unsettled_bytes = 0;
                    self.wbuf.truncate(at);
                    self.spliced.truncate(at);
                    return self.error(&ProtocolError::new(code, format!("{cmd} failed {e}")));
                }
            }
        }
        Flow::Continue
    }

    /// Wait until every publish answered in the output buffer is durable (before closing or
    /// switching transport layers).
    pub(super) async fn settle(&mut self) -> Flow {
        while let Some(u) = self.unsettled.front_mut() {
            u.ticket.ready().await;
            if let Flow::Close = self.settle_ready() {
                return Flow::Close;
            }
        }
        Flow::Continue
    }

    /// Remember `ticket` if it is still pending: the `OK`s written from `at` on wait for it.
    pub(super) fn hold(
        &mut self,
        at: usize,
        ticket: Ticket,
        code: Code,
        cmd: &'static str,
        bytes: usize,
    ) {
        if ticket.is_done() {
            return;
        }
        self.unsettled_bytes += bytes;
        self.unsettled.push_back(Unsettled {
            at,
            ticket,
            code,
            cmd,
            bytes,
        });
    }
}
