//! Time limits on one HTTP connection, so that a client cannot hold a connection (a task and a
//! file descriptor) forever by saying nothing, sending a request slowly, or not reading the
//! answer. Go's `net/http` server, and so nsqd and nsqlookupd, has none of these by default.
//!
//! - **idle**: between requests (from the connection's start or the end of a response to the
//!   next request's first byte);
//! - **read**: from a request's first byte until its headers are complete and, for a handler
//!   that reads the body, until the body is read ([`RequestDeadline`]);
//! - **write**: how long a write may wait for the client to accept more bytes.
//!
//! A zero limit means none.
//!
//! hyper has one header timer (which counts idle time too) and no body or write timeouts, so the
//! limits are enforced on the socket ([`Guarded`]), from the connection's phase, which the
//! service keeps current ([`Clock`]). A limit that runs out fails the pending read or write with
//! `TimedOut`, and hyper closes the connection.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// The three limits of a connection (zero: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub idle: Duration,
    pub read: Duration,
    pub write: Duration,
}

impl Timeouts {
    /// Longer than any legitimate client needs: idle beyond Go's client pools' 90 s, a 5 MiB
    /// body (nsqd's `--max-body-size`) at under 100 KB/s, a response not read for a minute.
    /// nsqrd's `--http-*-timeout` flags default to these.
    pub const DEFAULT: Timeouts = Timeouts {
        idle: Duration::from_secs(120),
        read: Duration::from_secs(60),
        write: Duration::from_secs(60),
    };
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts::DEFAULT
    }
}

/// When a request must have been read completely, given to the handler with the request: a
/// handler reading the body stops waiting for it then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestDeadline(pub Instant);

#[derive(Debug, Clone, Copy)]
enum Phase {
    /// Waiting for a request since then.
    Idle(Instant),
    /// A request's first bytes arrived; all of it is due by then.
    Request(Option<Instant>),
    /// A handler runs (it bounds its own body reads by the [`RequestDeadline`]).
    Serving,
}

/// The phase of one connection, shared by its socket and its service.
#[derive(Debug)]
pub struct Clock {
    phase: Mutex<Phase>,
    timeouts: Timeouts,
}

impl Clock {
    pub fn new(timeouts: Timeouts) -> Arc<Clock> {
        Arc::new(Clock {
            phase: Mutex::new(Phase::Idle(Instant::now())),
            timeouts,
        })
    }

    fn with<T>(&self, f: impl FnOnce(&mut Phase) -> T) -> T {
        let mut p = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut p)
    }

    /// A handler starts: returns the request's deadline.
    pub fn begin_request(&self) -> Option<Instant> {
        let read = self.timeouts.read;
        self.with(|p| {
            let deadline = match *p {
                Phase::Request(d) => d,
                // Read ahead while the previous request was served (pipelining).
                Phase::Idle(_) | Phase::Serving => after(read),
            };
            *p = Phase::Serving;
            deadline
        })
    }

    /// A handler finished: the connection waits for the next request.
    pub fn end_request(&self) {
        self.with(|p| *p = Phase::Idle(Instant::now()));
    }

    /// Bytes arrived: if between requests, a request has started.
    fn bytes_arrived(&self) {
        let read = self.timeouts.read;
        self.with(|p| {
            if let Phase::Idle(_) = *p {
                *p = Phase::Request(after(read));
            }
        });
    }

    /// When a read that is waiting now must give up.
    fn read_deadline(&self) -> Option<Instant> {
        let idle = self.timeouts.idle;
        self.with(|p| match *p {
            Phase::Idle(since) => (!idle.is_zero()).then(|| since + idle),
            Phase::Request(d) => d,
            Phase::Serving => None,
        })
    }
}

/// `limit` from now; None for no limit.
fn after(limit: Duration) -> Option<Instant> {
    (!limit.is_zero()).then(|| Instant::now() + limit)
}

/// A socket whose waiting reads and writes give up at the connection's limits.
pub struct Guarded<I> {
    io: I,
    clock: Arc<Clock>,
    read_timer: Timer,
    write_timer: Timer,
}

/// One sleep, moved only to an earlier deadline. A later one (the idle limit counts from the
/// end of each response, so it moves with every request) waits for the sleep already set and
/// re-arms then: one timer update per limit's worth of time, not one per request.
struct Timer {
    sleep: Pin<Box<Sleep>>,
    armed: Option<Instant>,
}

impl Timer {
    fn new() -> Timer {
        Timer {
            sleep: Box::pin(tokio::time::sleep_until(Instant::now())),
            armed: None,
        }
    }

    /// Whether `deadline` has passed; registers for a wake-up at or before it otherwise.
    fn expired(&mut self, deadline: Instant, cx: &mut Context<'_>) -> bool {
        if !matches!(self.armed, Some(a) if a <= deadline) {
            self.arm(deadline);
        }
        if self.sleep.as_mut().poll(cx).is_pending() {
            return false;
        }
        if self.armed == Some(deadline) {
            return true;
        }
        // An earlier deadline passed; this one is later.
        self.arm(deadline);
        self.sleep.as_mut().poll(cx).is_ready()
    }

    fn arm(&mut self, deadline: Instant) {
        self.sleep.as_mut().reset(deadline);
        self.armed = Some(deadline);
    }
}

fn timed_out(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, format!("{what} timed out"))
}

impl<I> Guarded<I> {
    pub fn new(io: I, clock: Arc<Clock>) -> Self {
        Guarded {
            io,
            clock,
            read_timer: Timer::new(),
            write_timer: Timer::new(),
        }
    }

    /// A write that made no progress fails once the write limit has passed since it began
    /// waiting; one that did make progress starts the wait afresh.
    fn guard_write<T>(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let limit = self.clock.timeouts.write;
        if r.is_ready() || limit.is_zero() {
            self.write_timer.armed = None;
            return r;
        }
        let deadline = match self.write_timer.armed {
            Some(d) => d,
            None => Instant::now() + limit,
        };
        if self.write_timer.expired(deadline, cx) {
            return Poll::Ready(Err(timed_out("write")));
        }
        Poll::Pending
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Guarded<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.clock.bytes_arrived();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match this.clock.read_deadline() {
                Some(d) if this.read_timer.expired(d, cx) => Poll::Ready(Err(timed_out("read"))),
                _ => Poll::Pending,
            },
        }
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Guarded<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write(cx, buf);
        this.guard_write(cx, r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.guard_write(cx, r)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_flush(cx);
        this.guard_write(cx, r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.io).poll_shutdown(cx);
        this.guard_write(cx, r)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn limits(ms: u64) -> Timeouts {
        let d = Duration::from_millis(ms);
        Timeouts {
            idle: d,
            read: d * 2,
            write: d,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_times_out_after_the_idle_limit() {
        let (a, _b) = tokio::io::duplex(64);
        let clock = Clock::new(limits(100));
        let mut g = Guarded::new(a, Arc::clone(&clock));
        let t0 = Instant::now();
        let e = g.read(&mut [0u8; 8]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(t0.elapsed(), Duration::from_millis(100));
    }

    #[tokio::test(start_paused = true)]
    async fn a_started_request_has_the_read_limit_from_its_first_byte() {
        let (a, mut b) = tokio::io::duplex(64);
        let clock = Clock::new(limits(100));
        let mut g = Guarded::new(a, Arc::clone(&clock));
        tokio::time::sleep(Duration::from_millis(50)).await;
        b.write_all(b"GET").await.unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(g.read(&mut buf).await.unwrap(), 3);
        let t0 = Instant::now();
        let e = g.read(&mut buf).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(t0.elapsed(), Duration::from_millis(200));
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_being_served_is_not_limited_and_idle_restarts_after_it() {
        let (a, mut b) = tokio::io::duplex(64);
        let clock = Clock::new(limits(100));
        let mut g = Guarded::new(a, Arc::clone(&clock));
        b.write_all(b"x").await.unwrap();
        assert_eq!(g.read(&mut [0u8; 8]).await.unwrap(), 1);
        let deadline = clock.begin_request();
        assert_eq!(deadline, Some(Instant::now() + Duration::from_millis(200)));
        // While serving, a waiting read (hyper's EOF watch) has no limit.
        let waited = tokio::time::timeout(Duration::from_secs(10), g.read(&mut [0u8; 8])).await;
        assert!(waited.is_err(), "read gave up while serving");
        tokio::time::sleep(Duration::from_millis(30)).await;
        clock.end_request();
        let t0 = Instant::now();
        let e = g.read(&mut [0u8; 8]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(t0.elapsed(), Duration::from_millis(100));
    }

    /// The idle limit moves later with each request, while the timer stays where it was set:
    /// a connection idle again must still get its whole limit from the latest response.
    #[tokio::test(start_paused = true)]
    async fn the_idle_limit_counts_from_the_latest_response() {
        let (a, mut b) = tokio::io::duplex(64);
        let clock = Clock::new(limits(100));
        let mut g = Guarded::new(a, Arc::clone(&clock));
        for _ in 0..3 {
            // Idle for 60 ms (the read waits, so the timer is set), then a request comes.
            let mut buf = [0u8; 8];
            let read = g.read(&mut buf);
            let write = async {
                tokio::time::sleep(Duration::from_millis(60)).await;
                b.write_all(b"x").await.unwrap();
            };
            let (n, ()) = tokio::join!(read, write);
            assert_eq!(n.unwrap(), 1);
            clock.begin_request();
            clock.end_request();
        }
        // 180 ms in: every earlier idle deadline has been passed over.
        let t0 = Instant::now();
        let e = g.read(&mut [0u8; 8]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(t0.elapsed(), Duration::from_millis(100));
    }

    #[tokio::test(start_paused = true)]
    async fn zero_means_no_limit() {
        let (a, _b) = tokio::io::duplex(16);
        let clock = Clock::new(limits(0));
        let mut g = Guarded::new(a, Arc::clone(&clock));
        let read = tokio::time::timeout(Duration::from_secs(3600), g.read(&mut [0u8; 8])).await;
        assert!(read.is_err(), "an idle read gave up");
        let write = tokio::time::timeout(Duration::from_secs(3600), g.write_all(&[0u8; 64])).await;
        assert!(write.is_err(), "a blocked write gave up");
        assert_eq!(clock.begin_request(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_the_client_never_accepts_times_out() {
        let (a, _b) = tokio::io::duplex(16);
        let clock = Clock::new(limits(100));
        let mut g = Guarded::new(a, clock);
        let t0 = Instant::now();
        let e = g.write_all(&[0u8; 64]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert_eq!(t0.elapsed(), Duration::from_millis(100));
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_that_keeps_up_is_not_cut() {
        let (a, mut b) = tokio::io::duplex(16);
        let clock = Clock::new(limits(100));
        let mut g = Guarded::new(a, clock);
        let reader = tokio::spawn(async move {
            let mut got = 0;
            let mut buf = [0u8; 16];
            while got < 256 {
                tokio::time::sleep(Duration::from_millis(60)).await;
                got += b.read(&mut buf).await.unwrap();
            }
            got
        });
        g.write_all(&[7u8; 256]).await.unwrap();
        assert_eq!(reader.await.unwrap(), 256);
    }
}
