//! A consumer of one node: subscribed to a channel of the topic there whether or not the node
//! leads it (only the leader's channels deliver), reconnecting whenever the connection ends,
//! recording every delivery and FINishing it at once. One per node on the checked channel,
//! one per node on the ordered channel.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use nsq_wire::client::{put_fin, put_rdy, put_sub, Frame};
use tokio::sync::watch;

use crate::client::{ClientError, NsqConn};
use crate::history::{History, NodeNum};

/// Messages in flight to one consumer.
pub const RDY: u64 = 200;
/// Pause before reconnecting.
const RETRY_PAUSE: Duration = Duration::from_millis(200);

pub struct Consumer {
    pub node: NodeNum,
    pub tcp: SocketAddr,
    pub topic: String,
    pub channel: String,
    /// Deliveries go to the ordered channel's record rather than the checked channel's.
    pub ordered: bool,
    pub history: Arc<History>,
}

impl Consumer {
    /// Consumes until `stop` turns true.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        while !*stop.borrow() {
            tokio::select! {
                _ = self.session() => {}
                _ = stop.changed() => break,
            }
            tokio::time::sleep(RETRY_PAUSE).await;
        }
    }

    async fn session(&self) -> Result<(), ClientError> {
        let mut conn = NsqConn::connect(self.tcp).await?;
        conn.put(|b| put_sub(b, &self.topic, &self.channel))?;
        conn.flush().await?;
        match conn.next_frame().await? {
            Frame::Response(r) if &r[..] == b"OK" => {}
            _ => return Err(ClientError::Closed),
        }
        conn.put(|b| {
            put_rdy(b, RDY);
            Ok(())
        })?;
        conn.flush().await?;
        loop {
            if let Frame::Message { id, body, .. } = conn.next_frame().await? {
                if self.ordered {
                    self.history.delivered_ordered(&body);
                } else {
                    self.history.delivered(&body, self.node);
                }
                conn.put(|b| put_fin(b, &id))?;
                conn.flush().await?;
                if !self.ordered {
                    self.history.finished();
                }
            }
        }
    }
}
