//! One client connection: read, parse every complete request in the buffer (pipelining),
//! run each, write all the replies with one write.
//!
//! - **Bounded memory.** The read buffer grows only as bytes arrive; the parser refuses
//!   lengths beyond Redis's limits before anything is allocated for them, and a client whose
//!   unparsed input passes 1 GiB (Redis's `client-query-buffer-limit`) is closed. Replies are
//!   written out every 64 KiB, so a long pipeline of GETs never holds more than that.
//! - **Protocol errors** are answered with Redis's `-ERR Protocol error: ...` and the
//!   connection is closed, as Redis does; the input still arriving is read and dropped (for
//!   at most 500 ms and 4 MiB) so the client sees the error rather than a reset.
//! - **Strict mode.** Replies to writes go out only once the writes are durable
//!   (`Keyspace::durable`); if that fails, the connection is closed without them, so the
//!   client never takes an unsaved write for an acknowledged one.
//! - **Pub/sub.** Once subscribed, the client's replies go through its outbox
//!   (`nsqr_kv::Subscriber`), where publishers add messages; the task wakes on either input
//!   or new messages, and closes the connection if the outbox was cut off.
//! - **Pipelines warm the cache first.** Before running a pipelined batch, the keys of its
//!   next requests (up to [`WARM_BATCH`]), and the fields or members they name in a hash, set
//!   or sorted set, are looked up together (`Keyspace::warm`), so their cache misses overlap
//!   instead of coming one command at a time.
//! - **One turn per batch.** A batch runs under one shared turn of the keyspace, so a
//!   transaction (`EXEC`, which trades it for the exclusive turn) never interleaves with it.
//! - **Kills and pauses.** `CLIENT KILL` wakes the task, which closes the connection; a
//!   request a `CLIENT PAUSE` holds stops the batch before it, and the task waits for the
//!   pause to end before parsing it again.
//! - **Blocking commands** (`blocking.rs`) that found nothing stop the batch the same way:
//!   the task waits for a push to one of their keys or their timeout (reading on, so a client
//!   that leaves is noticed), then runs the request again.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use resp_wire::{Limits, Parsed, Protocol, Reply, RequestParser};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::script;
use super::session::{take_turn, Ctx, Replies, Session, Turn};
use super::table::{dispatch, lookup};
use super::Shared;

/// Read buffer size, and how much free room a read gets at least.
const READ_CHUNK: usize = 16 * 1024;
/// Replies are written once this much is buffered.
const WRITE_AT: usize = 64 * 1024;
/// Most room reserved ahead for a large value.
const READ_AHEAD: usize = 4 << 20;
/// Redis's `client-query-buffer-limit`.
const QUERY_BUFFER_LIMIT: usize = 1 << 30;
/// Buffers larger than this are given back once empty.
const KEEP: usize = 1 << 20;
/// Requests looked ahead of when warming the cache for a pipeline.
const WARM_BATCH: usize = 16;
/// How long, and how much of, the input after a protocol error is drained before closing.
const DRAIN: Duration = Duration::from_millis(500);
const DRAIN_BYTES: usize = 4 << 20;

/// What the connection does after parsing.
enum Next {
    /// Everything buffered was handled: write the replies, read more.
    Read,
    /// The reply buffer is full: write it, then parse on.
    Write,
    /// QUIT: write the replies and close.
    Close,
    /// A protocol error (its reply is buffered): write, drain, close.
    ProtocolError,
    /// The next request is held by a CLIENT PAUSE: write the replies, wait, parse on.
    Paused,
    /// The next request is a blocking command that found nothing: write the replies, wait
    /// for a push or its timeout, run it again.
    Blocked,
}

struct Conn {
    shared: Arc<Shared>,
    stream: TcpStream,
    rbuf: Vec<u8>,
    /// Where the unparsed input starts in `rbuf`.
    start: usize,
    /// Where the requests whose keys were warmed end in `rbuf`.
    warmed_to: usize,
    parser: RequestParser,
    session: Session,
    out: Reply,
}

/// Resolves at `deadline`, or never.
async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Serves one client until it leaves, errs, or the server stops.
pub async fn run(
    shared: Arc<Shared>,
    stream: TcpStream,
    peer: std::net::SocketAddr,
    stop: watch::Receiver<bool>,
) {
    if shared.exposed
        && shared.protected_mode.load(Ordering::Relaxed)
        && !is_local(peer.ip())
        && shared.users.default_is_open()
    {
        return deny(stream).await;
    }
    let id = shared.next_client_id.fetch_add(1, Ordering::Relaxed);
    let local = stream
        .local_addr()
        .map_or_else(|_| String::new(), |a| a.to_string());
    shared.connected.fetch_add(1, Ordering::Relaxed);
    shared.total_connections.fetch_add(1, Ordering::Relaxed);
    let user = shared.users.default_user();
    let authenticated = user.open();
    let limits = Limits {
        max_bulk: shared.max_bulk,
        unauthenticated: !authenticated,
    };
    let mut conn = Conn {
        shared: Arc::clone(&shared),
        stream,
        rbuf: Vec::with_capacity(READ_CHUNK),
        start: 0,
        warmed_to: 0,
        parser: RequestParser::new(limits),
        session: Session::new(
            shared.clients.add(id, peer.to_string(), local.clone()),
            authenticated,
            user,
        ),
        out: Reply::with_capacity(Protocol::Resp2, READ_CHUNK),
    };
    if let Err(e) = conn.serve(stop).await {
        tracing::debug!("KV: client {id} ({peer}) closed - {e}");
    }
    if conn.session.sub.is_some() {
        shared.ks.hub().remove_client(id);
    }
    shared.ks.unwatch(&mut conn.session.watch);
    if let Some(t) = conn.session.tracker.take() {
        shared.ks.track_stop(&t);
    }
    shared.clients.remove(id);
    shared.connected.fetch_sub(1, Ordering::Relaxed);
}

/// Redis's reply to a client refused by protected mode.
const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n";

/// Whether a client connects from this host (protected mode lets it in).
fn is_local(ip: std::net::IpAddr) -> bool {
    match ip {
        std::net::IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        v4 => v4.is_loopback(),
    }
}

/// When a client waiting for its next request has been idle for `CONFIG SET timeout` (none
/// if 0). Subscribed and blocked clients are not timed out, as in Redis.
fn idle_deadline(shared: &Shared) -> Option<tokio::time::Instant> {
    match shared
        .idle_timeout_secs
        .load(std::sync::atomic::Ordering::Relaxed)
    {
        0 => None,
        secs => Some(tokio::time::Instant::now() + Duration::from_secs(secs)),
    }
}

/// Protected mode: tells the client why, and closes.
async fn deny(mut stream: TcpStream) {
    let _ = stream.write_all(DENIED.as_bytes()).await;
    let _ = stream.shutdown().await;
}

impl Conn {
    async fn serve(&mut self, mut stop: watch::Receiver<bool>) -> std::io::Result<()> {
        // Made once: polling it costs nothing until the server stops.
        let stopped = stop.wait_for(|s| *s);
        tokio::pin!(stopped);
        loop {
            self.reserve();
            let client = Arc::clone(&self.session.client);
            let read = match self.session.sub.clone() {
                None => tokio::select! {
                    r = self.stream.read_buf(&mut self.rbuf) => Some(r?),
                    () = until(idle_deadline(&self.shared)) => return Ok(()),
                    () = client.killed() => return Ok(()),
                    _ = &mut stopped => return Ok(()),
                },
                Some(sub) => tokio::select! {
                    r = self.stream.read_buf(&mut self.rbuf) => Some(r?),
                    () = sub.wait() => None,
                    () = client.killed() => return Ok(()),
                    _ = &mut stopped => return Ok(()),
                },
            };
            if read == Some(0) {
                return Ok(());
            }
            if self.rbuf.len() - self.start > QUERY_BUFFER_LIMIT {
                tracing::warn!(
                    "KV: client {} closed: query buffer over 1 GiB",
                    self.session.id()
                );
                return Ok(());
            }
            loop {
                match self.parse_all() {
                    Next::Read => break,
                    Next::Write => self.write().await?,
                    Next::Close => {
                        self.write().await?;
                        return self.stream.shutdown().await;
                    }
                    Next::ProtocolError => {
                        self.write().await?;
                        return self.drain_and_close().await;
                    }
                    Next::Paused => {
                        self.write().await?;
                        tokio::select! {
                            () = self.shared.clients.wait_unpaused() => {}
                            () = client.killed() => return Ok(()),
                            _ = &mut stopped => return Ok(()),
                        }
                    }
                    Next::Blocked => {
                        self.write().await?;
                        self.reserve();
                        let Some(b) = &mut self.session.blocked else {
                            continue;
                        };
                        tokio::select! {
                            () = b.on.woken() => {}
                            () = until(b.deadline) => b.timed_out = true,
                            r = self.stream.read_buf(&mut self.rbuf) => {
                                // More requests wait behind the blocked one; none left: gone.
                                if r? == 0 || self.rbuf.len() - self.start > QUERY_BUFFER_LIMIT {
                                    return Ok(());
                                }
                            }
                            () = client.killed() => return Ok(()),
                            _ = &mut stopped => return Ok(()),
                        }
                    }
                }
                if client.is_killed() {
                    self.write().await?;
                    return Ok(());
                }
            }
            self.write().await?;
            self.compact();
        }
    }

    /// Makes room for the next read: at least one chunk, or more of a large value whose
    /// length is known (so it is read in a few large reads).
    fn reserve(&mut self) {
        // A declared length is trusted for at most 4 MiB ahead of the bytes that came: the
        // buffer grows with what arrives, not with what a client announces.
        let want = self
            .parser
            .wanted(self.rbuf.len() - self.start)
            .unwrap_or(0)
            .clamp(READ_CHUNK, READ_AHEAD);
        if self.rbuf.capacity() - self.rbuf.len() < READ_CHUNK {
            self.rbuf.reserve(want);
        }
    }

    /// Runs every complete request buffered (until the reply buffer fills), under one shared
    /// turn of the keyspace (see `nsqr_kv::Keyspace::enter`).
    fn parse_all(&mut self) -> Next {
        let Conn {
            shared,
            rbuf,
            start,
            warmed_to,
            parser,
            session,
            out,
            ..
        } = self;
        let mut turn = take_turn(shared);
        session.started = Instant::now();
        let mut commands = 0u64;
        let next = loop {
            if *start >= *warmed_to {
                *warmed_to = *start + warm(shared, session, &rbuf[*start..]);
                session.started = Instant::now();
            }
            let input = &rbuf[*start..];
            match parser.parse(input) {
                Ok(Parsed::Request(n)) => {
                    let args = parser.args(&input[..n]);
                    if held_by_pause(shared, &args) {
                        // Parsed again once the pause ends.
                        break Next::Paused;
                    }
                    turn.before_request(&args, session.tx.is_some());
                    // A turn given up by EXEC, or BUSY answers whose script has ended since.
                    let busy_over = matches!(turn, Turn::Busy) && !shared.scripts.busy();
                    if matches!(turn, Turn::Released) || busy_over {
                        turn = take_turn(shared);
                        session.started = Instant::now();
                    }
                    let (mark, replies) = (out.len(), session.replies);
                    let mut ctx = Ctx {
                        shared,
                        s: session,
                        out,
                        turn: &mut turn,
                    };
                    if matches!(ctx.turn, Turn::Busy) {
                        script::answer_busy(&mut ctx, &args);
                    } else {
                        dispatch(&mut ctx, &args);
                    }
                    silence(ctx.s, ctx.out, mark, replies);
                    ctx.move_to_outbox();
                    commands += 1;
                    if std::mem::take(&mut session.block_now) {
                        // Run again once woken (see `blocking.rs`).
                        break Next::Blocked;
                    }
                    *start += n;
                    if session.quit {
                        break Next::Close;
                    }
                    let unauthenticated = !session.authenticated;
                    if parser.limits().unauthenticated != unauthenticated {
                        parser.set_limits(Limits {
                            max_bulk: shared.max_bulk,
                            unauthenticated,
                        });
                    }
                    if out.len() >= WRITE_AT {
                        break Next::Write;
                    }
                }
                Ok(Parsed::Empty(n)) => *start += n,
                Ok(Parsed::Incomplete) => break Next::Read,
                Err(e) => {
                    out.error(&format!("ERR {e}"));
                    let mut ctx = Ctx {
                        shared,
                        s: session,
                        out,
                        turn: &mut turn,
                    };
                    ctx.move_to_outbox();
                    tracing::debug!("KV: client {} protocol error - {e}", session.id());
                    break Next::ProtocolError;
                }
            }
        };
        shared.total_commands.fetch_add(commands, Ordering::Relaxed);
        if commands > 0 {
            session.client.ran(session.last_command);
        }
        next
    }

    /// Waits for durability (strict mode), then writes the replies (and, for a subscriber,
    /// what publishers queued).
    async fn write(&mut self) -> std::io::Result<()> {
        if !self.session.pending.is_empty() {
            if let Err(e) = self.shared.ks.durable(&mut self.session.pending).await {
                tracing::error!(
                    "KV: client {} closed without its replies: {e}",
                    self.session.id()
                );
                return Err(std::io::Error::other(e.to_string()));
            }
        }
        loop {
            if let Some(sub) = &self.session.sub {
                if !sub.take(self.out.buf_mut()) {
                    return Err(std::io::Error::other("pub/sub output buffer limit reached"));
                }
            }
            if self.out.is_empty() {
                break;
            }
            self.write_out().await?;
            self.out.clear();
            // Messages queued while writing may have used up the wake-up: take them now.
        }
        self.drop_idle_subscriber();
        if self.out.buf_mut().capacity() > KEEP {
            *self.out.buf_mut() = Vec::with_capacity(READ_CHUNK);
        }
        Ok(())
    }

    /// Writes the reply buffer. A subscriber's write also watches its outbox: a client that
    /// stopped reading (its socket full) is closed as soon as its outbox is cut off, rather
    /// than holding this task (and what it was writing) forever.
    async fn write_out(&mut self) -> std::io::Result<()> {
        let buf = self.out.as_bytes();
        let mut at = 0;
        while at < buf.len() {
            let n = match &self.session.sub {
                None => match self.stream.write(&buf[at..]).await? {
                    0 => return Err(std::io::ErrorKind::WriteZero.into()),
                    n => n,
                },
                // `write` is cancel-safe: if the outbox wakes us first, nothing was written.
                Some(sub) => tokio::select! {
                    r = self.stream.write(&buf[at..]) => r?,
                    () = sub.wait() => {
                        if sub.is_killed() {
                            return Err(std::io::Error::other("pub/sub output buffer limit reached"));
                        }
                        0
                    }
                },
            };
            at += n;
        }
        Ok(())
    }

    /// A client that unsubscribed from everything goes back to writing replies directly.
    fn drop_idle_subscriber(&mut self) {
        if let Some(sub) = &self.session.sub {
            if !self.session.keeps_outbox()
                && self.shared.ks.hub().total(sub.id()) == 0
                && sub.queued() == 0
            {
                self.shared.ks.hub().remove_client(sub.id());
                self.session.sub = None;
            }
        }
    }

    /// Drops the parsed input from the front of the read buffer.
    fn compact(&mut self) {
        self.warmed_to = self.warmed_to.saturating_sub(self.start);
        if self.start == self.rbuf.len() {
            self.rbuf.clear();
            self.start = 0;
            if self.rbuf.capacity() > KEEP {
                self.rbuf = Vec::with_capacity(READ_CHUNK);
            }
        } else if self.start > 0 {
            self.rbuf.drain(..self.start);
            self.start = 0;
        }
    }

    /// After a protocol error: stop writing, read and drop input for a while, close.
    async fn drain_and_close(&mut self) -> std::io::Result<()> {
        let _ = self.stream.shutdown().await;
        let mut sink = vec![0u8; READ_CHUNK];
        let deadline = tokio::time::Instant::now() + DRAIN;
        let mut drained = 0;
        while let Ok(Ok(n)) = tokio::time::timeout_at(deadline, self.stream.read(&mut sink)).await {
            drained += n;
            if n == 0 || drained > DRAIN_BYTES {
                break;
            }
        }
        Ok(())
    }
}

/// Whether a CLIENT PAUSE in force holds this request (every command under `ALL`, writes
/// under `WRITE`; the commands that end a pause or leave always run).
fn held_by_pause(shared: &Shared, args: &resp_wire::Args<'_>) -> bool {
    if !shared.clients.may_be_paused() {
        return false;
    }
    let Some(cmd) = lookup(args.get(0)) else {
        return false;
    };
    if matches!(cmd.name, "client" | "quit" | "reset" | "ping") {
        return false;
    }
    shared.clients.holds(cmd.flags & super::table::WRITE != 0)
}

/// CLIENT REPLY: drops the reply of a command run with replies off, or of the one command
/// after SKIP (`mark` is where its reply began, `before` the mode it ran under).
fn silence(session: &mut Session, out: &mut Reply, mark: usize, before: Replies) {
    match before {
        Replies::On => {}
        Replies::Off if session.replies == Replies::Off => out.buf_mut().truncate(mark),
        Replies::Off => {}
        Replies::SkipNext => {
            out.buf_mut().truncate(mark);
            if session.replies == Replies::SkipNext {
                session.replies = Replies::On;
            }
        }
    }
}

/// Warms the cache for the keys of the next [`WARM_BATCH`] requests in `input` when there are
/// at least two (a pipeline); returns where the requests looked at end. Only for a client that
/// may run commands: nothing is looked up for one that has not authenticated.
fn warm(shared: &Shared, session: &Session, input: &[u8]) -> usize {
    if !session.authenticated {
        return 0;
    }
    let mut ahead: [(&[u8], [&[u8]; 3]); WARM_BATCH] = [(&[], [&[]; 3]); WARM_BATCH];
    let (mut requests, mut end) = (0, 0);
    for p in resp_wire::peek(input).take(WARM_BATCH) {
        let [a, b] = p.more_args.map(Option::unwrap_or_default);
        ahead[requests] = (p.name, [p.first_arg.unwrap_or_default(), a, b]);
        requests += 1;
        end = p.end;
    }
    if requests >= 2 {
        let mut keys: [[&[u8]; 3]; WARM_BATCH] = [[&[]; 3]; WARM_BATCH];
        let mut n = 0;
        for &(name, request) in &ahead[..requests] {
            if lookup(name).is_some_and(|c| c.keys.0 == 1) {
                keys[n] = request;
                n += 1;
            }
        }
        shared.ks.warm(&keys[..n]);
    }
    end
}
