//! Opening a connection to nsqd as go-nsq does (`Conn.Connect`): the magic and IDENTIFY with
//! feature negotiation, then the upgrades the server granted in nsqd's order (TLS, then
//! snappy or deflate, each confirmed by an `OK` through the new layer), then AUTH if the
//! server requires it, then (for a consumer) SUB. Heartbeats that arrive meanwhile are
//! answered.

use std::time::Duration;

use bytes::BytesMut;
use nsq_wire::client::{put_auth, put_identify, put_magic, put_nop, put_sub, Frame};
use nsq_wire::compress::Codec;
use nsq_wire::identify::{IdentifyRequest, IdentifyResponse};
use rustls_pki_types::ServerName;
use serde::Deserialize;

use super::framed::{Framed, Reader, Writer};
use super::stream::Stream;
use crate::address::Address;
use crate::config::{Compression, Config};
use crate::error::Error;

/// What AUTH answered (logged, as go-nsq does).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
struct AuthReply {
    identity: String,
    identity_url: String,
    permission_count: i64,
}

/// An established connection, ready for its tasks.
pub(crate) struct Connected {
    pub(crate) reader: Reader,
    pub(crate) writer: Writer,
    /// The IDENTIFY reply (the defaults when the server did not negotiate).
    pub(crate) identify: IdentifyResponse<'static>,
}

const HEARTBEAT: &[u8] = b"_heartbeat_";

/// The IDENTIFY body this config asks for.
pub(crate) fn identify_request(cfg: &Config) -> IdentifyRequest {
    let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
    IdentifyRequest {
        client_id: Some(cfg.client_id.clone()),
        hostname: Some(cfg.hostname.clone()),
        user_agent: Some(cfg.user_agent.clone()),
        feature_negotiation: Some(true),
        heartbeat_interval: Some(cfg.heartbeat_interval.map_or(-1, ms)),
        output_buffer_size: Some(cfg.output_buffer_size.map_or(-1, i64::from)),
        output_buffer_timeout: Some(cfg.output_buffer_timeout.map_or(-1, ms)),
        tls_v1: Some(cfg.tls.is_some()),
        deflate: Some(matches!(cfg.compression, Compression::Deflate(_))),
        deflate_level: match cfg.compression {
            Compression::Deflate(l) => Some(i64::from(l)),
            _ => None,
        },
        snappy: Some(cfg.compression == Compression::Snappy),
        sample_rate: Some(i64::from(cfg.sample_rate)),
        msg_timeout: cfg.msg_timeout.map(ms),
        topology_region: None,
        topology_zone: None,
    }
}

/// Connect, negotiate and (with `sub`) subscribe, within the dial timeout for the connect
/// and the read timeout for each answer.
pub(crate) async fn open(
    addr: &Address,
    cfg: &Config,
    sub: Option<(&str, &str)>,
) -> Result<Connected, Error> {
    let name = addr.to_string();
    let stream = Stream::connect(addr, cfg.dial_timeout).await?;
    let hs = Handshake {
        f: Framed::new(stream, cfg.max_frame_size),
        addr: name.clone(),
        cfg,
    };
    let (hs, identify) = hs
        .run(addr, sub)
        .await
        .map_err(|e| super::framed::at(&name, e))?;
    let (reader, writer) = hs.f.split(&name);
    Ok(Connected {
        reader,
        writer,
        identify,
    })
}

struct Handshake<'a> {
    f: Framed,
    addr: String,
    cfg: &'a Config,
}

type Negotiated<'a> = (Handshake<'a>, IdentifyResponse<'static>);

impl<'a> Handshake<'a> {
    /// Every step, in nsqd's order.
    async fn run(
        mut self,
        addr: &Address,
        sub: Option<(&str, &str)>,
    ) -> Result<Negotiated<'a>, Error> {
        let identify = self.identify().await?;
        if identify.tls_v1 {
            self = self.upgrade_tls(addr).await?;
        } else if self.cfg.tls.is_some() {
            return Err(Error::Tls(format!("{} did not grant TLS", self.addr)));
        }
        if identify.snappy {
            self.upgrade(Codec::snappy(), Codec::snappy(), "snappy")
                .await?;
        } else if identify.deflate {
            let level = u32::try_from(identify.deflate_level).unwrap_or(6);
            self.upgrade(Codec::deflate(level), Codec::deflate(level), "deflate")
                .await?;
        }
        if identify.auth_required {
            let a = self.auth().await?;
            tracing::info!(
                "nsqr-client: {} AUTH accepted, identity {:?} {} permissions {}",
                self.addr,
                a.identity,
                a.identity_url,
                a.permission_count
            );
        }
        if let Some((topic, channel)) = sub {
            let mut b = BytesMut::new();
            put_sub(&mut b, topic, channel)?;
            self.f.send(&b).await?;
            self.expect_ok("SUB").await?;
        }
        Ok((self, identify))
    }

    /// The next frame that is not a heartbeat (answering those), within the read timeout.
    async fn answer(&mut self, what: &str) -> Result<Frame, Error> {
        loop {
            let frame = tokio::time::timeout(self.cfg.read_timeout, self.f.recv(&self.addr))
                .await
                .map_err(|_| Error::Timeout(format!("{what} answer from {}", self.addr)))??;
            match frame {
                Frame::Response(r) if r == HEARTBEAT => {
                    let mut b = BytesMut::new();
                    put_nop(&mut b);
                    self.f.send(&b).await?;
                }
                Frame::Error(e) => return Err(Error::from_frame(&e)),
                f => return Ok(f),
            }
        }
    }

    /// Wait for `OK`.
    async fn expect_ok(&mut self, what: &str) -> Result<(), Error> {
        match self.answer(what).await? {
            Frame::Response(r) if r == "OK" => Ok(()),
            other => Err(Error::Handshake(format!(
                "{what}: expected OK from {}, got {}",
                self.addr,
                describe(&other)
            ))),
        }
    }

    async fn identify(&mut self) -> Result<IdentifyResponse<'static>, Error> {
        let json = serde_json::to_vec(&identify_request(self.cfg))
            .map_err(|e| Error::Handshake(e.to_string()))?;
        let mut b = BytesMut::with_capacity(json.len() + 16);
        put_magic(&mut b);
        put_identify(&mut b, &json)?;
        self.f.send(&b).await?;
        match self.answer("IDENTIFY").await {
            Ok(Frame::Response(r)) if r.first() == Some(&b'{') => serde_json::from_slice(&r)
                .map_err(|e| Error::Handshake(format!("bad reply from {}: {e}", self.addr))),
            // A server that does not negotiate answers OK: no upgrades, nsqd's defaults.
            Ok(Frame::Response(r)) if r == "OK" => Ok(IdentifyResponse {
                max_rdy_count: 2500,
                ..IdentifyResponse::default()
            }),
            Ok(other) => Err(Error::Handshake(format!(
                "unexpected {} from {}",
                describe(&other),
                self.addr
            ))),
            Err(e) => Err(e),
        }
    }

    async fn upgrade_tls(mut self, addr: &Address) -> Result<Self, Error> {
        let Some(tls) = self.cfg.tls.as_ref() else {
            return Err(Error::Tls(format!("{} offered TLS unasked", self.addr)));
        };
        if self.f.buffered() != 0 {
            return Err(Error::Tls(format!(
                "{} sent data before the TLS handshake",
                self.addr
            )));
        }
        let host = tls
            .server_name
            .clone()
            .or_else(|| addr.host().map(str::to_string))
            .unwrap_or_else(|| "localhost".to_string());
        let name = ServerName::try_from(host.clone())
            .map_err(|e| Error::Tls(format!("server name {host:?}: {e}")))?;
        let connector = tokio_rustls::TlsConnector::from(tls.client.clone());
        let Framed { stream, rd, wr } = self.f;
        let handshake = connector.connect(name, stream);
        let secured = tokio::time::timeout(self.cfg.read_timeout, handshake)
            .await
            .map_err(|_| Error::Timeout(format!("TLS handshake with {}", self.addr)))?
            .map_err(|e| Error::Tls(format!("handshake with {}: {e}", self.addr)))?;
        self.f = Framed {
            stream: Stream::Tls(Box::new(secured)),
            rd,
            wr,
        };
        self.expect_ok("TLS upgrade").await?;
        Ok(self)
    }

    async fn upgrade(&mut self, rd: Codec, wr: Codec, what: &str) -> Result<(), Error> {
        self.f.set_codec(rd, wr);
        self.expect_ok(what).await
    }

    async fn auth(&mut self) -> Result<AuthReply, Error> {
        let Some(secret) = self.cfg.auth_secret.as_ref() else {
            return Err(Error::AuthRequired);
        };
        let mut b = BytesMut::new();
        put_auth(&mut b, secret.as_bytes())?;
        self.f.send(&b).await?;
        match self.answer("AUTH").await? {
            Frame::Response(r) => serde_json::from_slice(&r)
                .map_err(|e| Error::Handshake(format!("bad AUTH reply from {}: {e}", self.addr))),
            other => Err(Error::Handshake(format!(
                "unexpected {} after AUTH from {}",
                describe(&other),
                self.addr
            ))),
        }
    }
}

fn describe(f: &Frame) -> String {
    match f {
        Frame::Response(r) => format!("response {:?}", String::from_utf8_lossy(r)),
        Frame::Error(e) => format!("error {:?}", String::from_utf8_lossy(e)),
        Frame::Message { .. } => "a message".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identify_body_follows_the_config() {
        let cfg = Config {
            compression: Compression::Deflate(3),
            heartbeat_interval: None,
            output_buffer_timeout: Some(Duration::from_millis(25)),
            msg_timeout: Some(Duration::from_secs(5)),
            ..Config::default()
        };
        let r = identify_request(&cfg);
        assert_eq!(r.feature_negotiation, Some(true));
        assert_eq!(r.deflate, Some(true));
        assert_eq!(r.deflate_level, Some(3));
        assert_eq!(r.snappy, Some(false));
        assert_eq!(r.tls_v1, Some(false));
        assert_eq!(r.heartbeat_interval, Some(-1));
        assert_eq!(r.output_buffer_timeout, Some(25));
        assert_eq!(r.msg_timeout, Some(5000));
        // It passes nsqd's own validation.
        let json = serde_json::to_vec(&r).unwrap();
        let server = nsq_wire::identify::ServerConfig::default();
        let n = nsq_wire::identify::negotiate(&json, &server).unwrap();
        assert!(n.deflate && n.heartbeat.is_none());
        assert_eq!(n.msg_timeout, Duration::from_secs(5));
    }
}
