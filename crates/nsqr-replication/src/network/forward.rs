//! The forwarding side of [`crate::forward`]: a group's connections to the node it forwards
//! publishes to. A connection carries one forwarded batch at a time (the leader answers once
//! the batch is committed), so several batches in flight use several connections, up to a
//! bound; a connection that answered goes back to a small idle pool, and one the peer has
//! closed meanwhile (the node restarted) is dropped rather than reused.

use std::sync::Mutex;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio::sync::Semaphore;

use super::tls::Stream;
use super::{client, frame, NetError, Reply, Request, SharedConfig};
use crate::forward::{ForwardError, Unstamped};
use crate::types::NodeId;

/// Batches one group forwards at once; more wait for a connection.
const MAX_IN_FLIGHT: usize = 64;
/// Answered connections kept for the next batches.
const MAX_IDLE: usize = 8;
/// How long the leader may take to commit a forwarded batch before the forwarding node gives
/// up on the answer (and the publisher gets an error, as after any failed publish).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// One group's forwarding connections.
pub(crate) struct Forwarder {
    config: SharedConfig,
    group: String,
    idle: Mutex<Vec<(NodeId, Stream)>>,
    in_flight: Semaphore,
}

impl Forwarder {
    pub(crate) fn new(config: SharedConfig, group: String) -> Self {
        Forwarder {
            config,
            group,
            idle: Mutex::new(Vec::new()),
            in_flight: Semaphore::new(MAX_IN_FLIGHT),
        }
    }

    /// Sends `batch` to node `target` and waits for its answer.
    pub(crate) async fn forward(
        &self,
        target: NodeId,
        batch: Unstamped,
    ) -> Result<(), ForwardError> {
        let unsent = |source| ForwardError::Unsent {
            node: target,
            source,
        };
        let address = match self.config.peers.address(target) {
            Some(address) => address.to_owned(),
            None => {
                let reason = format!("node {target} is not a configured peer");
                return Err(unsent(NetError::BadPeer(reason)));
            }
        };
        let request = frame::encode(&Request::Forward(batch), frame::RPC_MAX)
            .map_err(ForwardError::Unsendable)?;
        let _slot = self
            .in_flight
            .acquire()
            .await
            .map_err(|_| unsent(NetError::Refused("the group is closing".into())))?;
        let mut stream = match self.take_idle(target) {
            Some(stream) => stream,
            None => client::connect(&self.config, target, &address, &self.group)
                .await
                .map_err(unsent)?,
        };
        let exchange = async {
            stream.write_all(&request).await?;
            frame::read::<_, Reply>(&mut stream, frame::RPC_MAX).await
        };
        let no_answer = |source| ForwardError::NoAnswer {
            node: target,
            source,
        };
        let reply = tokio::time::timeout(ANSWER_TIMEOUT, exchange)
            .await
            .map_err(|_| no_answer(NetError::Timeout))?
            .map_err(no_answer)?;
        match reply {
            Reply::Forwarded(answer) => {
                self.keep_idle(target, stream);
                answer.map_err(ForwardError::Refused)
            }
            other => Err(no_answer(other.unexpected())),
        }
    }

    /// An idle connection to `target` that the peer has not closed.
    fn take_idle(&self, target: NodeId) -> Option<Stream> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(at) = idle.iter().position(|(node, _)| *node == target) {
            let (_, mut stream) = idle.swap_remove(at);
            if nothing_to_read(&mut stream) {
                return Some(stream);
            }
        }
        None
    }

    fn keep_idle(&self, target: NodeId, stream: Stream) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() >= MAX_IDLE {
            idle.remove(0);
        }
        idle.push((target, stream));
    }
}

/// Nothing is ever sent unasked on a forwarding connection: one that can be read from is
/// closed, broken or out of step, and a live one has nothing to read. Polled once without
/// waiting (TLS records that carry no data, such as session tickets, are consumed).
fn nothing_to_read(stream: &mut Stream) -> bool {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut probe = [0u8; 1];
    let mut buf = tokio::io::ReadBuf::new(&mut probe);
    std::pin::Pin::new(stream)
        .poll_read(&mut cx, &mut buf)
        .is_pending()
}
