//! IDENTIFY on a connection: apply what was negotiated (`identify::negotiate`), reply, then the
//! upgrade step, in nsqd's order: once the JSON reply is out in the clear, a TLS handshake
//! (then `OK` over TLS), then snappy or deflate (then `OK` through it).
//!
//! It runs between two commands, so the bytes the client sent after IDENTIFY (already in the
//! read buffer) are handed to the new layer instead of being parsed as commands.

use bytes::Bytes;
use nsq_wire::frame::put_response;
use nsq_wire::{Code, ProtocolError};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::{Conn, Flow};
use crate::tcp::compress::Codec;
use crate::tcp::transport::UpgradeError;
use nsq_wire::identify::{self, Negotiated};

/// The layers one IDENTIFY granted.
#[derive(Debug, Clone, Copy)]
pub struct Upgrade {
    tls: bool,
    snappy: bool,
    /// The deflate level, when deflate was granted.
    deflate: Option<u32>,
}

impl Upgrade {
    /// None when nothing is to change.
    pub fn of(n: &Negotiated) -> Option<Upgrade> {
        let up = Upgrade {
            tls: n.tls_v1,
            snappy: n.snappy,
            deflate: n.deflate.then(|| n.deflate_level.clamp(1, 9) as u32),
        };
        (up.tls || up.snappy || up.deflate.is_some()).then_some(up)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    /// IDENTIFY: apply the negotiation, answer, and ask for the upgrade it granted.
    pub(super) fn identify(&mut self, body: &[u8]) -> Flow {
        let n = match identify::negotiate(body, &self.shared.settings.server) {
            Ok(n) => n,
            Err(e) => return self.error(&e),
        };
        {
            let mut m = self.info.meta.lock();
            m.client_id = n.client_id.clone();
            m.hostname = n.hostname.clone();
            m.user_agent = n.user_agent.clone();
            m.sample_rate = n.sample_rate;
            m.topology_region = n.topology_region.clone();
            m.topology_zone = n.topology_zone.clone();
        }
        // As in nsqd, only the first IDENTIFY reconfigures delivery and heartbeats.
        if !self.identified {
            self.identified = true;
            self.heartbeat = n.heartbeat;
            self.limits.heartbeats_disabled = n.heartbeat.is_none();
            self.read_deadline = n.heartbeat.map(|h| Instant::now() + 2 * h);
            self.output_buffer_size = n.output_buffer_size;
            self.sample_rate = n.sample_rate;
            // A timeout other than --msg-timeout is the client's own; otherwise a channel's
            // msg_timeout setting applies (http-queues.md).
            if n.msg_timeout != self.shared.settings.server.msg_timeout {
                self.client.set_msg_timeout(n.msg_timeout);
            }
        }
        if n.feature_negotiation {
            let resp = identify::response(&n, &self.shared.settings.server);
            match serde_json::to_vec(&resp) {
                Ok(json) => put_response(&mut self.wbuf, &json),
                Err(e) => {
                    return self.error(&ProtocolError::new(
                        Code::IdentifyFailed,
                        format!("IDENTIFY failed {e}"),
                    ))
                }
            }
            if let Some(up) = Upgrade::of(&n) {
                self.upgrade = Some(up);
                return Flow::Upgrade;
            }
        } else {
            put_response(&mut self.wbuf, b"OK");
        }
        Flow::Continue
    }

    fn upgrade_failed(&mut self, e: UpgradeError) -> Flow {
        self.error(&ProtocolError::new(
            Code::IdentifyFailed,
            format!("IDENTIFY failed {e}"),
        ))
    }

    /// Apply `self.upgrade`. Errors are fatal `E_IDENTIFY_FAILED`, sent on whatever layer
    /// still works.
    pub(super) async fn apply_upgrade(&mut self) -> std::io::Result<Flow> {
        let Some(up) = self.upgrade.take() else {
            return Ok(Flow::Continue);
        };
        self.flush().await?;
        let mut ahead: Bytes = self.rbuf.split().freeze();
        if up.tls {
            let Some(acceptor) = self.shared.tls.clone() else {
                return Ok(self.upgrade_failed(UpgradeError::AlreadyUpgraded));
            };
            tracing::info!(
                "PROTOCOL(V2): [{}] upgrading connection to TLS",
                self.client.remote_address()
            );
            match self
                .io
                .upgrade_tls(&acceptor, std::mem::take(&mut ahead))
                .await
            {
                Ok(info) => {
                    self.limits.tls_pending = false;
                    self.auth_facts.tls = true;
                    self.auth_facts.common_name = info.common_name;
                    let mut m = self.info.meta.lock();
                    m.tls = true;
                    m.tls_version = info.version;
                    m.tls_cipher_suite = info.cipher_suite;
                }
                Err(e) => {
                    tracing::warn!(
                        "PROTOCOL(V2): [{}] TLS upgrade failed - {e}",
                        self.client.remote_address()
                    );
                    return Ok(self.upgrade_failed(e));
                }
            }
            put_response(&mut self.wbuf, b"OK");
            self.flush().await?;
        }
        let codec = if up.snappy {
            Some(Codec::snappy())
        } else {
            up.deflate.map(Codec::deflate)
        };
        if let Some(codec) = codec {
            let snappy = up.snappy;
            if let Err(e) = self.io.upgrade_codec(codec, &ahead) {
                return Ok(self.upgrade_failed(e));
            }
            {
                let mut m = self.info.meta.lock();
                m.snappy = snappy;
                m.deflate = !snappy;
            }
            tracing::info!(
                "PROTOCOL(V2): [{}] upgrading connection to {}",
                self.client.remote_address(),
                if snappy { "snappy" } else { "deflate" }
            );
            put_response(&mut self.wbuf, b"OK");
            self.flush().await?;
        } else if !ahead.is_empty() {
            // TLS took them all; only reachable if nothing was upgraded.
            self.rbuf.extend_from_slice(&ahead);
        }
        Ok(Flow::Continue)
    }
}
