//! A publisher that follows the leader as NSQ clients do: it publishes unique bodies one at a
//! time on one connection; on `E_PUB_FAILED ... not the leader ... (leader: node N at ...)` it
//! reconnects to node N (or, with no leader named, to the next node); on any other error, a
//! timeout or a closed connection, to the next node. Every attempt is recorded with its
//! outcome; an attempt is never retried with the same body, so the checker can tell an
//! acknowledged message from one that may or may not have been committed.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use nsq_wire::client::{put_pub, Frame};
use tokio::sync::watch;

use crate::client::NsqConn;
use crate::history::{History, NodeNum, Outcome};

/// How long a publish may wait for its answer before the connection is given up (a publish
/// waits for a majority, which a partition or a paused leader can withhold forever). Above a
/// commit's time on a loaded machine, and close to the election timeout, so a publisher stuck
/// on a lost leader moves on about when a new one is elected.
const PUB_TIMEOUT: Duration = Duration::from_secs(2);
/// Pause before trying another node after a failure.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

pub struct Publisher {
    pub id: usize,
    pub topic: String,
    /// Node `n`'s TCP address is `tcp[n - 1]`.
    pub tcp: Vec<SocketAddr>,
    pub history: Arc<History>,
}

impl Publisher {
    /// Publishes until `stop` turns true.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let mut seq = 0u64;
        let mut target: NodeNum = 1 + self.id % self.tcp.len();
        while !*stop.borrow() {
            let next = tokio::select! {
                next = self.session(target, &mut seq) => next,
                _ = stop.changed() => break,
            };
            target = next.unwrap_or(target % self.tcp.len() + 1);
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    }

    /// Publishes on one connection to `node` until it fails; the leader named by a refusal,
    /// if any.
    async fn session(&self, node: NodeNum, seq: &mut u64) -> Option<NodeNum> {
        let mut conn = NsqConn::connect(self.tcp[node - 1]).await.ok()?;
        loop {
            let body = format!("p{}-{}", self.id, seq);
            *seq += 1;
            // Recorded before it is sent: a publish cut short by the end of the run is
            // indeterminate, not unknown.
            self.history.publish(body.clone(), Outcome::Indeterminate);
            let sent_at = self.history.now();
            let sent = conn.put(|b| put_pub(b, &self.topic, body.as_bytes()));
            if sent.is_err() || conn.flush().await.is_err() {
                self.history.publish(body, Outcome::Indeterminate);
                return None;
            }
            match tokio::time::timeout(PUB_TIMEOUT, conn.next_frame()).await {
                Ok(Ok(Frame::Response(r))) if &r[..] == b"OK" => {
                    self.history.acked(body, node, sent_at);
                }
                Ok(Ok(Frame::Error(e))) => {
                    let text = String::from_utf8_lossy(&e);
                    if text.contains("not the leader") {
                        self.history.publish(body, Outcome::Refused);
                        return leader_named(&text).filter(|n| (1..=self.tcp.len()).contains(n));
                    }
                    self.history.publish(body, Outcome::Indeterminate);
                    return None;
                }
                _ => {
                    self.history.publish(body, Outcome::Indeterminate);
                    return None;
                }
            }
        }
    }
}

/// The node a `not the leader` refusal names: `... (leader: node 2 at 127.0.0.1:4250)`.
fn leader_named(text: &str) -> Option<NodeNum> {
    let rest = text.split("(leader: node ").nth(1)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leader_is_read_from_the_refusal() {
        let t = "E_PUB_FAILED PUB failed not the leader of replicated topic t (leader: node 2 at 127.0.0.1:4250)";
        assert_eq!(leader_named(t), Some(2));
        let t = "E_PUB_FAILED PUB failed not the leader of replicated topic t (leader: unknown: an election is under way)";
        assert_eq!(leader_named(t), None);
    }
}
