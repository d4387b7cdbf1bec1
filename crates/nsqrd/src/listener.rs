//! Listening sockets for the TCP and HTTP servers: `host:port`, or a unix-socket path for any
//! address Go's `net.SplitHostPort` rejects (nsqd's rule for `--tcp-address` and
//! `--http-address`). A unix socket file is removed when its listener goes, as Go does.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

use crate::options::addr::is_unix_socket_addr;

pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

/// An accepted connection.
pub enum Accepted {
    Tcp(TcpStream, SocketAddr),
    Unix(UnixStream),
}

impl Listener {
    /// Bind `addr`; the error text is nsqd's `listen (<addr>) failed - <reason>`.
    pub async fn bind(addr: &str) -> Result<Listener, String> {
        let failed = |e: io::Error| format!("listen ({addr}) failed - {e}");
        if is_unix_socket_addr(addr) {
            let l = UnixListener::bind(addr).map_err(failed)?;
            Ok(Listener::Unix(l, PathBuf::from(addr)))
        } else {
            Ok(Listener::Tcp(
                TcpListener::bind(addr).await.map_err(failed)?,
            ))
        }
    }

    /// Bind `addr` as TCP whatever it looks like (the HTTPS listener is TCP only).
    pub async fn bind_tcp(addr: &str) -> Result<Listener, String> {
        TcpListener::bind(addr)
            .await
            .map(Listener::Tcp)
            .map_err(|e| format!("listen ({addr}) failed - {e}"))
    }

    /// The bound TCP address; None for a unix socket.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        match self {
            Listener::Tcp(l) => l.local_addr().ok(),
            Listener::Unix(..) => None,
        }
    }

    /// The port nsqd reports (`/info`, lookupd): -1 for a unix socket.
    pub fn port(&self) -> i32 {
        self.tcp_addr().map_or(-1, |a| a.port() as i32)
    }

    /// What the startup log line shows: the bound address, or the socket's path followed by
    /// `(unix socket)` (a relative path shown as `./path`), so that an address nsqd's rules
    /// read as a path (`--tcp-address=4150`) is seen to be one. The path stays the first word.
    pub fn describe(&self) -> String {
        match self {
            Listener::Tcp(l) => l
                .local_addr()
                .map_or_else(|e| e.to_string(), |a| a.to_string()),
            Listener::Unix(_, p) if p.is_relative() && !p.to_string_lossy().starts_with('.') => {
                format!("./{} (unix socket)", p.display())
            }
            Listener::Unix(_, p) => format!("{} (unix socket)", p.display()),
        }
    }

    pub async fn accept(&self) -> io::Result<Accepted> {
        match self {
            Listener::Tcp(l) => {
                let (s, peer) = l.accept().await?;
                let _ = s.set_nodelay(true);
                Ok(Accepted::Tcp(s, peer))
            }
            Listener::Unix(l, _) => Ok(Accepted::Unix(l.accept().await?.0)),
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        if let Listener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Accepted {
    /// The client's address as nsqd shows it: `ip:port`, or `@` for a unix-socket peer.
    pub fn remote_address(&self) -> String {
        match self {
            Accepted::Tcp(_, peer) => peer.to_string(),
            Accepted::Unix(_) => "@".to_string(),
        }
    }

    /// The IP an auth server is told: "" for a unix-socket peer.
    pub fn remote_ip(&self) -> String {
        match self {
            Accepted::Tcp(_, peer) => peer.ip().to_string(),
            Accepted::Unix(_) => String::new(),
        }
    }
}
