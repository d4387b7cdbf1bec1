//! Serving one HTTP/1.1 connection the way both daemons do: keep-alive, Go-style header case,
//! half-closed clients still answered, the connection's time limits (idle, read, write: see
//! [`crate::http::deadline`]), and a graceful close when the listener stops. The accept loop
//! around it is [`crate::net`].

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

use super::deadline::{Clock, Guarded};
pub use super::deadline::{RequestDeadline, Timeouts};
use crate::net::StopSignal;

/// Serves requests on `io` with `handler` until the client closes the connection, a time limit
/// runs out, or `stop` fires (then requests in progress finish and the connection closes). The
/// handler gets each request with its [`RequestDeadline`] (none when the read limit is zero): an
/// argument, not a request extension, which would cost allocations per request. The error is the
/// connection's failure, for the caller to log in its own words.
pub async fn serve_connection<I, F, Fut, B>(
    io: I,
    handler: F,
    mut stop: StopSignal,
    timeouts: Timeouts,
) -> Result<(), hyper::Error>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    F: Fn(Request<Incoming>, Option<RequestDeadline>) -> Fut,
    Fut: Future<Output = Response<B>>,
    B: Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let clock = Clock::new(timeouts);
    let io = Guarded::new(io, Arc::clone(&clock));
    let svc = service_fn(move |req: Request<Incoming>| {
        let deadline = clock.begin_request().map(RequestDeadline);
        let response = handler(req, deadline);
        let clock = Arc::clone(&clock);
        async move {
            let response = response.await;
            clock.end_request();
            Ok::<_, Infallible>(response)
        }
    });
    let conn = http1::Builder::new()
        // The header timeout is the socket's (idle, then read); hyper's own is off.
        .header_read_timeout(None)
        .keep_alive(true)
        // A client may shut down its sending side right after the request; still answer it.
        .half_close(true)
        .title_case_headers(true)
        .serve_connection(TokioIo::new(io), svc);
    tokio::pin!(conn);
    tokio::select! {
        res = conn.as_mut() => res,
        _ = stop.stopped() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
            Ok(())
        }
    }
}
