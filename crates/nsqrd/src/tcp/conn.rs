//! One task per client connection: read, parse every complete command, act, deliver, write.
//!
//! The loop batches at every step: all commands already in the read buffer are handled before
//! anything is written; consecutive PUBs to one topic become one `Topic::put`, consecutive FINs
//! one channel lock; deliverable messages are encoded straight into the output buffer; and the
//! buffer goes out in one write as soon as nothing more is deliverable. Under load that gives
//! large writes; when idle a message leaves within microseconds instead of nsqd's 250 ms
//! output-buffer tick.
//!
//! A publish that goes to disk returns a ticket that completes once the messages are written
//! (default mode) or fsynced (strict). Its `OK`s are written into the output buffer at once
//! (keeping response order), but the buffer is only written up to the first `OK` whose ticket
//! is still pending. The connection keeps reading and publishing meanwhile (up to
//! `MAX_UNSETTLED` pending tickets), so a pipelining client's publishes share the disk writer's
//! passes. If one fails, the buffer is cut at its `OK`s and the (fatal) error goes out instead.
//!
//! The socket sits behind `transport::Io` (TLS and compression layers, added by IDENTIFY in
//! `conn/upgrade.rs`, with IDENTIFY itself); AUTH and the per-command authorization checks live in `conn/authz.rs`.
//! Both may need to wait (a handshake, an auth server), which `process` signals with
//! `Flow::Upgrade` / `Flow::Await` so that `process_all` can await it between two commands.

mod authz;
mod durable;
mod upgrade;

use std::collections::VecDeque;

use durable::{first_ready, Unsettled, MAX_UNSETTLED, MAX_UNSETTLED_BYTES};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use nsq_wire::command::IdToken;
use nsq_wire::frame::{put_error, put_message_frame, put_message_frame_header, put_response};
use nsq_wire::spliced::{Spliced, SPLICE_MIN};
use nsq_wire::{
    Bodies, ClientState as WireState, Code, Command, MessageId, ParseError, ProtocolError,
};
use nsqr_broker::{BrokerError, Channel, Consumer, Topic};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Instant, Interval};

use super::read_buffer::{SlabTopic, INITIAL_READ_BUFFER};
use super::transport::Io;
use super::Shared;
use crate::auth::AuthState;

/// Write buffer of a new connection; it grows as needed.
const INITIAL_BUFFER: usize = 16 * 1024;
/// Deliver until this much output is buffered, then write.
const MIN_WRITE_BATCH: usize = 64 * 1024;
/// Why the loop stopped reading commands.
enum Flow {
    Continue,
    Close,
    /// IDENTIFY granted TLS or compression: switch layers before reading on.
    Upgrade,
    /// A command waits for the auth server or a channel's creation (`Conn::suspended`).
    Await,
}

/// Commands of one kind waiting to be applied together.
enum Pending {
    None,
    Pub {
        topic: Arc<Topic>,
        /// One entry per PUB: each keeps its own buffer.
        bodies: Vec<Bodies>,
    },
    Fin(Vec<IdToken>),
}

pub struct Conn<S> {
    shared: Arc<Shared>,
    io: Io<S>,
    /// The engine's side of this client; its ready count (RDY) is the only one.
    client: Arc<Consumer>,
    /// The protocol's side (`/stats`); its state is the only one.
    info: Arc<super::client::ClientInfo>,
    rbuf: BytesMut,
    /// Which topic's publishes may be split off `rbuf` without a copy.
    slab: SlabTopic,
    wbuf: BytesMut,
    /// Large bodies that go out with `wbuf` without being copied into it (`nsq_wire::spliced`:
    /// only on a plain socket, where the copy is the user-space pass over every byte).
    spliced: Spliced,
    limits: nsq_wire::Limits,
    heartbeat: Option<Duration>,
    read_deadline: Option<Instant>,
    output_buffer_size: usize,
    sample_rate: i32,
    rng: u64,
    channel: Option<Arc<Channel>>,
    last_topic: Option<Arc<Topic>>,
    pending: Pending,
    identified: bool,
    /// Layers IDENTIFY granted, applied once its reply is out.
    upgrade: Option<upgrade::Upgrade>,
    /// What the auth server is told about this client.
    auth_facts: crate::auth::ClientFacts,
    auth: Option<AuthState>,
    auth_secret: String,
    suspended: Option<authz::Suspended>,
    unsettled: VecDeque<Unsettled>,
    unsettled_bytes: usize,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    /// `remote_ip` is "" for a unix-socket client.
    pub fn new(
        shared: Arc<Shared>,
        io: S,
        client: Arc<Consumer>,
        info: Arc<super::client::ClientInfo>,
        remote_ip: String,
    ) -> Self {
        let s = &shared.settings;
        let heartbeat = Some(s.server.default_heartbeat);
        let mut limits = s.server.limits;
        limits.tls_pending = s.tls_required;
        let output_buffer_size = s.server.default_output_buffer_size;
        Conn {
            rng: client.id().wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            shared,
            io: Io::new(io),
            client,
            info,
            rbuf: BytesMut::with_capacity(INITIAL_READ_BUFFER),
            slab: SlabTopic::default(),
            wbuf: BytesMut::with_capacity(INITIAL_BUFFER),
            spliced: Spliced::default(),
            limits,
            heartbeat,
            read_deadline: heartbeat.map(|h| Instant::now() + 2 * h),
            output_buffer_size,
            sample_rate: 0,
            channel: None,
            last_topic: None,
            pending: Pending::None,
            identified: false,
            upgrade: None,
            auth_facts: crate::auth::ClientFacts {
                remote_ip,
                ..Default::default()
            },
            auth: None,
            auth_secret: String::new(),
            suspended: None,
            unsettled: VecDeque::new(),
            unsettled_bytes: 0,
        }
    }

    /// Run until the client goes, a fatal error, or a kick; then leave the channel.
    pub async fn run(mut self) {
        let result = self.io_loop().await;
        if let Err(e) = result {
            tracing::debug!("client({}) - {e}", self.client.remote_address());
        }
        if let Some(ch) = self.channel.take() {
            self.shared.broker.consumer_left(&ch, &self.client);
        }
        self.shared.clients.remove(self.client.id());
        let _ = self.io.shutdown().await;
    }

    fn new_heartbeat_ticker(&self) -> Option<Interval> {
        self.heartbeat.map(|h| {
            let mut t = tokio::time::interval_at(Instant::now() + h, h);
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            t
        })
    }

    async fn io_loop(&mut self) -> std::io::Result<()> {
        let mut ticker = self.new_heartbeat_ticker();
        loop {
            let more = self.deliver();
            if let Flow::Close = self.settle_ready() {
                self.flush().await?;
                return Ok(());
            }
            self.flush().await?;
            if self.client.is_kicked() {
                return Ok(());
            }
            if more {
                continue;
            }
            // After the replies are out: a new slab is faulted in while the client reads them.
            self.slab.make_room(&mut self.rbuf);
            let hb = async {
                match ticker.as_mut() {
                    Some(t) => {
                        t.tick().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            let deadline = async {
                match self.read_deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending::<()>().await,
                }
            };
            let can_read =
                self.unsettled.len() < MAX_UNSETTLED && self.unsettled_bytes < MAX_UNSETTLED_BYTES;
            let durable = first_ready(&mut self.unsettled);
            tokio::select! {
                r = self.io.read(&mut self.rbuf), if can_read => {
                    if r? == 0 {
                        self.at_eof().await?;
                        self.settle().await;
                        self.flush().await?;
                        return Ok(());
                    }
                    let hb_before = self.heartbeat;
                    let flow = self.process_all().await?;
                    if self.heartbeat != hb_before {
                        ticker = self.new_heartbeat_ticker();
                    }
                    if let Flow::Close = flow {
                        self.settle().await;
                        self.flush().await?;
                        return Ok(());
                    }
                }
                _ = self.client.notified() => {}
                _ = hb => {
                    put_response(&mut self.wbuf, b"_heartbeat_");
                }
                _ = deadline => {
                    return Ok(());
                }
                _ = durable => {}
            }
        }
    }

    /// Write everything buffered, bounded by the write deadline (the heartbeat interval); only
    /// up to the first `OK` whose ticket is pending.
    async fn flush(&mut self) -> std::io::Result<()> {
        let n = self.unsettled.front().map_or(self.wbuf.len(), |u| u.at);
        if n == 0 {
            return Ok(());
        }
        let limit = self.heartbeat.unwrap_or(Duration::from_secs(60));
        let written = if self.spliced.is_empty() {
            tokio::time::timeout(limit, self.io.write_all(&self.wbuf[..n])).await
        } else {
            let parts = self.spliced.slices(&self.wbuf, n);
            tokio::time::timeout(limit, self.io.write_all_vectored(&parts)).await
        };
        match written {
            Ok(r) => r?,
            Err(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "write deadline exceeded",
                ))
            }
        }
        self.spliced.written(n);
        if n == self.wbuf.len() {
            self.wbuf.clear();
        } else {
            let _ = self.wbuf.split_to(n);
            for u in self.unsettled.iter_mut() {
                u.at -= n;
            }
        }
        Ok(())
    }

    /// Encode deliverable messages into the output buffer. True if it stopped only because
    /// the buffer is full enough to write (so there may be more right away).
    fn deliver(&mut self) -> bool {
        if self.info.state() != WireState::Subscribed || self.client.ready_count() <= 0 {
            return false;
        }
        let Some(ch) = self.channel.clone() else {
            return false;
        };
        let batch_bytes = self.output_buffer_size.max(MIN_WRITE_BATCH);
        // Large bodies stay where they are when the socket is plain (`nsq_wire::spliced`).
        let splice_min = if self.io.is_plain() {
            SPLICE_MIN
        } else {
            usize::MAX
        };
        loop {
            let free = self.client.capacity();
            if free <= 0 {
                return false;
            }
            let want = (free as usize).min(256);
            let (wbuf, spliced) = (&mut self.wbuf, &mut self.spliced);
            let got = ch.deliver(&self.client, want, self.sample_rate, &mut self.rng, |m| {
                let body = m.body();
                if body.len() >= splice_min {
                    put_message_frame_header(wbuf, m.timestamp(), m.attempts, m.id, body.len());
                    spliced.push(wbuf.len(), m.body_bytes());
                } else {
                    put_message_frame(wbuf, m.timestamp(), m.attempts, m.id, body);
                }
            });
            if got < want {
                return false;
            }
            if self.wbuf.len() + self.spliced.bytes() >= batch_bytes {
                return true;
            }
        }
    }

    fn error(&mut self, e: &ProtocolError) -> Flow {
        put_error(&mut self.wbuf, &e.to_string());
        if e.is_fatal() {
            tracing::debug!("client({}) - {e}", self.client.remote_address());
            Flow::Close
        } else {
            Flow::Continue
        }
    }

    /// `process`, plus the waits it asks for (an upgrade, an auth server), until the buffer
    /// holds no complete command.
    async fn process_all(&mut self) -> std::io::Result<Flow> {
        loop {
            let flow = match self.process() {
                Flow::Upgrade => {
                    // The IDENTIFY reply must go out in clear, after every OK before it.
                    if let Flow::Close = self.settle().await {
                        return Ok(Flow::Close);
                    }
                    self.apply_upgrade().await?
                }
                Flow::Await => self.resume().await,
                other => return Ok(other),
            };
            if let Flow::Close = flow {
                return Ok(Flow::Close);
            }
        }
    }

    /// Handle every complete command in the read buffer.
    fn process(&mut self) -> Flow {
        let mut got_command = false;
        let flow = self.process_commands(&mut got_command);
        // nsqd resets the read deadline after each command; all of these arrived in one read.
        if got_command {
            if let Some(h) = self.heartbeat {
                self.read_deadline = Some(Instant::now() + 2 * h);
            }
        }
        flow
    }

    fn process_commands(&mut self, got_command: &mut bool) -> Flow {
        loop {
            let handover = self.slab.handover();
            let parsed =
                nsq_wire::parse_with(&mut self.rbuf, &self.limits, self.info.state(), handover);
            let flow = match parsed {
                Ok(None) => break,
                Ok(Some(cmd)) => {
                    *got_command = true;
                    self.slab.parsed(&cmd);
                    self.command(cmd)
                }
                Err(ParseError::Protocol(e)) => {
                    self.apply_pending();
                    self.error(&e)
                }
                Err(ParseError::ProtocolAfterTopic { error, topic }) => {
                    self.apply_pending();
                    let _ = self.shared.broker.get_or_create_topic(&topic);
                    self.error(&error)
                }
                Err(ParseError::LineTooLong(_)) => {
                    self.apply_pending();
                    return Flow::Close;
                }
            };
            match flow {
                Flow::Continue => {}
                Flow::Close => {
                    self.apply_pending();
                    return Flow::Close;
                }
                // Whatever was pending was applied before the command that asked to wait.
                Flow::Upgrade | Flow::Await => return flow,
            }
        }
        self.apply_pending()
    }

    /// The client half-closed: complete commands still run, then an incomplete one gets the
    /// error nsqd sends when its read hits EOF.
    async fn at_eof(&mut self) -> std::io::Result<()> {
        if let Flow::Close = self.process_all().await? {
            return Ok(());
        }
        if let Some(e) = nsq_wire::error_at_eof(&self.rbuf, &self.limits, self.info.state()) {
            match e {
                ParseError::Protocol(e) => {
                    self.error(&e);
                }
                ParseError::ProtocolAfterTopic { error, topic } => {
                    let _ = self.shared.broker.get_or_create_topic(&topic);
                    self.error(&error);
                }
                ParseError::LineTooLong(_) => {}
            }
        }
        Ok(())
    }

    fn command(&mut self, cmd: Command) -> Flow {
        if self.shared.auth.is_some() {
            if let Some(flow) = self.authorize(&cmd) {
                if let Flow::Await = flow {
                    self.suspended = Some(authz::Suspended::Recheck(cmd));
                }
                return flow;
            }
        }
        self.authorized_command(cmd)
    }

    /// A command that passed the authorization check (if any).
    fn authorized_command(&mut self, cmd: Command) -> Flow {
        match cmd {
            Command::Pub { topic, body } => {
                return match Bodies::one(body) {
                    Ok(b) => self.queue_pub(&topic, b),
                    Err(e) => self.error(&ProtocolError::new(Code::BadMessage, format!("PUB {e}"))),
                };
            }
            Command::Fin(id) => {
                if let Pending::Fin(ids) = &mut self.pending {
                    ids.push(id);
                    return Flow::Continue;
                }
                if let Flow::Close = self.apply_pending() {
                    return Flow::Close;
                }
                self.pending = Pending::Fin(vec![id]);
                return Flow::Continue;
            }
            _ => {}
        }
        if let Flow::Close = self.apply_pending() {
            return Flow::Close;
        }
        match cmd {
            Command::Nop => Flow::Continue,
            Command::Identify(body) => self.identify(&body),
            Command::Auth(secret) => self.auth_command(secret),
            Command::Sub { topic, channel } => self.sub(&topic, &channel),
            Command::Rdy(n) => {
                self.client.set_ready_count(n);
                if n <= self.client.in_flight() {
                    if let Some(ch) = &self.channel {
                        ch.set_not_ready(self.client.id());
                    }
                }
                Flow::Continue
            }
            Command::Req { id, delay_ms } => self.req(id, delay_ms),
            Command::Touch(id) => self.touch(id),
            Command::Cls => {
                self.info.set_state(WireState::Closing);
                self.client.set_ready_count(0);
                if let Some(ch) = &self.channel {
                    ch.set_not_ready(self.client.id());
                }
                put_response(&mut self.wbuf, b"CLOSE_WAIT");
                Flow::Continue
            }
            Command::Mpub { topic, bodies } => self.publish(&topic, bodies, 0, "MPUB"),
            Command::Dpub {
                topic,
                defer_ms,
                body,
            } => match Bodies::one(body) {
                Ok(b) => self.publish(&topic, b, defer_ms, "DPUB"),
                Err(e) => self.error(&ProtocolError::new(Code::BadMessage, format!("DPUB {e}"))),
            },
            Command::Pub { .. } | Command::Fin(_) => Flow::Continue,
        }
    }

    fn topic(&mut self, name: &[u8]) -> Result<Arc<Topic>, BrokerError> {
        if let Some(t) = &self.last_topic {
            if t.name().as_bytes() == name && !t.is_deleted() {
                return Ok(Arc::clone(t));
            }
        }
        let name = std::str::from_utf8(name).map_err(|_| BrokerError::TopicNotFound)?;
        let t = self.shared.broker.get_or_create_topic(name)?;
        self.last_topic = Some(Arc::clone(&t));
        Ok(t)
    }

    /// PUB: joins the pending batch when it is for the same topic.
    fn queue_pub(&mut self, topic: &[u8], body: Bodies) -> Flow {
        if let Pending::Pub {
            topic: t,
            bodies: b,
        } = &mut self.pending
        {
            if t.name().as_bytes() == topic {
                b.push(body);
                return Flow::Continue;
            }
        }
        if let Flow::Close = self.apply_pending() {
            return Flow::Close;
        }
        match self.topic(topic) {
            Ok(t) => {
                self.pending = Pending::Pub {
                    topic: t,
                    bodies: vec![body],
                };
                Flow::Continue
            }
            Err(e) => self.error(&ProtocolError::new(
                Code::PubFailed,
                format!("PUB failed {e}"),
            )),
        }
    }

    /// Apply batched PUBs / FINs, writing their responses in order.
    fn apply_pending(&mut self) -> Flow {
        match std::mem::replace(&mut self.pending, Pending::None) {
            Pending::None => Flow::Continue,
            Pending::Pub { topic, bodies } => {
                let n: usize = bodies.iter().map(Bodies::len).sum();
                let bytes: usize = bodies.iter().map(Bodies::total_bytes).sum();
                match topic.put(&bodies, Duration::ZERO) {
                    Ok(ticket) => {
                        self.info.count_publish(topic.name(), n as u64);
                        let at = self.wbuf.len();
                        for _ in 0..n {
                            put_response(&mut self.wbuf, b"OK");
                        }
                        self.hold(at, ticket, Code::PubFailed, "PUB", bytes);
                        Flow::Continue
                    }
                    Err(e) => self.error(&ProtocolError::new(
                        Code::PubFailed,
                        format!("PUB failed {e}"),
                    )),
                }
            }
            Pending::Fin(tokens) => {
                let Some(ch) = self.channel.clone() else {
                    return Flow::Continue;
                };
                let ids: Vec<u64> = tokens
                    .iter()
                    .map(|t| MessageId::from_hex(t).map_or(u64::MAX, |id| id.0))
                    .collect();
                let mut failures = Vec::new();
                ch.finish(&self.client, &ids, |i, e| failures.push((i, e)));
                for (i, e) in failures {
                    let e = ProtocolError::new(
                        Code::FinFailed,
                        format!("FIN {} failed {e}", String::from_utf8_lossy(&tokens[i])),
                    );
                    self.error(&e);
                }
                Flow::Continue
            }
        }
    }

    fn publish(&mut self, topic: &[u8], bodies: Bodies, defer_ms: u64, cmd: &'static str) -> Flow {
        let code = if cmd == "MPUB" {
            Code::MpubFailed
        } else {
            Code::DpubFailed
        };
        let n = bodies.len() as u64;
        let bytes = bodies.total_bytes();
        let result = self.topic(topic).and_then(|t| {
            t.put(
                std::slice::from_ref(&bodies),
                Duration::from_millis(defer_ms),
            )
            .map(|ticket| (t, ticket))
        });
        match result {
            Ok((t, ticket)) => {
                self.info.count_publish(t.name(), n);
                let at = self.wbuf.len();
                put_response(&mut self.wbuf, b"OK");
                self.hold(at, ticket, code, cmd, bytes);
                Flow::Continue
            }
            Err(e) => self.error(&ProtocolError::new(code, format!("{cmd} failed {e}"))),
        }
    }

    /// SUB: joining may create the channel, which opens its disk queue: that waits off this
    /// thread (`Flow::Await`), then `join` answers.
    fn sub(&mut self, topic: &[u8], channel: &[u8]) -> Flow {
        let (Ok(topic), Ok(channel)) = (std::str::from_utf8(topic), std::str::from_utf8(channel))
        else {
            return self.error(&ProtocolError::invalid("SUB invalid names"));
        };
        self.suspended = Some(authz::Suspended::Sub {
            topic: topic.to_string(),
            channel: channel.to_string(),
        });
        Flow::Await
    }

    /// Join the channel the SUB named and answer it.
    async fn join(&mut self, topic: &str, channel: &str) -> Flow {
        match self.shared.broker.join(topic, channel, &self.client).await {
            Ok(ch) => {
                self.channel = Some(ch);
                self.info.set_state(WireState::Subscribed);
                put_response(&mut self.wbuf, b"OK");
                Flow::Continue
            }
            Err(e @ BrokerError::TooManyConsumers { .. }) => self.error(&ProtocolError::new(
                Code::SubFailed,
                format!("SUB failed {e}"),
            )),
            Err(_) if self.shared.broker.is_exiting() => self.error(&ProtocolError::new(
                Code::SubFailed,
                "SUB failed exiting".to_string(),
            )),
            Err(_) => self.error(&ProtocolError::new(
                Code::SubFailed,
                "SUB failed to deleted topic/channel".to_string(),
            )),
        }
    }

    fn in_flight_op(
        &mut self,
        id: IdToken,
        code: Code,
        cmd: &str,
        op: impl FnOnce(&Channel, &Consumer, u64) -> Result<(), BrokerError>,
    ) -> Flow {
        let result = match (&self.channel, MessageId::from_hex(&id)) {
            (Some(ch), Some(mid)) => op(ch, &self.client, mid.0),
            _ => Err(BrokerError::NotInFlight),
        };
        match result {
            Ok(()) => Flow::Continue,
            Err(e) => self.error(&ProtocolError::new(
                code,
                format!("{cmd} {} failed {e}", String::from_utf8_lossy(&id)),
            )),
        }
    }

    fn req(&mut self, id: IdToken, delay_ms: u64) -> Flow {
        let delay = Duration::from_millis(delay_ms).min(self.shared.settings.max_req_timeout());
        self.in_flight_op(id, Code::ReqFailed, "REQ", |ch, c, mid| {
            ch.requeue(c, mid, delay)
        })
    }

    fn touch(&mut self, id: IdToken) -> Flow {
        self.in_flight_op(id, Code::TouchFailed, "TOUCH", |ch, c, mid| {
            ch.touch(c, mid)
        })
    }
}
