//! Serving one HTTP/1.1 connection the way both daemons do: keep-alive, Go-style header case,
//! half-closed clients still answered, a bound on how long a client may take to send its
//! headers (slowloris), and a graceful close when the listener stops. The accept loop around
//! it is [`crate::net`].

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::net::StopSignal;

/// A client must send a request's headers within this time (slowloris bound). hyper also
/// counts idle keep-alive time against it, so it is longer than Go's default client idle
/// timeout (90 s): pooled clients drop idle connections before we close them under a request.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(120);

/// Serves requests on `io` with `handler` until the client closes the connection or `stop`
/// fires (then requests in progress finish and the connection closes). The error is the
/// connection's failure, for the caller to log in its own words.
pub async fn serve_connection<I, F, Fut, B>(
    io: I,
    handler: F,
    mut stop: StopSignal,
) -> Result<(), hyper::Error>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    F: Fn(Request<Incoming>) -> Fut,
    Fut: Future<Output = Response<B>>,
    B: Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let svc = service_fn(move |req| {
        let response = handler(req);
        async move { Ok::<_, Infallible>(response.await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
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
