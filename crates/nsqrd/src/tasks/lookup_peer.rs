//! One connection to an nsqlookupd, speaking its TCP protocol as nsqd's lookup_peer.go does:
//! the `  V1` magic, then one command at a time, each answered by `[int32 size][data]`.
//!
//! Every step has nsqd's deadline (dial 1 s, each write and read 1 s) and a reply is bounded by
//! `--max-body-size`, so a lookupd that is down, slow or answers garbage costs this peer's task
//! at most a few seconds and can never block anything else. Any error means the connection is
//! dropped; the caller reconnects later.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// nsqd's deadline for dialing and for every read and write.
pub const IO_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("dial failed - {0}")]
    Dial(std::io::Error),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("i/o timeout")]
    Timeout,
    #[error("response body size ({size}) is greater than limit ({limit})")]
    TooLarge { size: i64, limit: i64 },
    #[error("invalid response body size ({0})")]
    BadSize(i32),
    #[error("lookupd returned {0}")]
    Refused(String),
    #[error("parsing response - {0}")]
    BadIdentify(String),
}

/// What nsqd tells lookupd about itself in IDENTIFY (keys in Go's sorted-map order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Identity {
    pub broadcast_address: String,
    pub hostname: String,
    pub http_port: u16,
    pub tcp_port: u16,
    pub topology_region: String,
    pub topology_zone: String,
    pub version: String,
}

/// What lookupd says about itself in its IDENTIFY reply; its HTTP address is where channels
/// are looked up for pre-creation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct PeerInfo {
    #[serde(default)]
    pub tcp_port: u16,
    #[serde(default)]
    pub http_port: u16,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub broadcast_address: String,
}

/// An open, magic-sent connection to one lookupd.
#[derive(Debug)]
pub struct PeerConn {
    stream: TcpStream,
    max_body_size: i64,
}

async fn deadline<T>(
    f: impl std::future::Future<Output = std::io::Result<T>>,
) -> Result<T, PeerError> {
    match timeout(IO_TIMEOUT, f).await {
        Ok(r) => Ok(r?),
        Err(_) => Err(PeerError::Timeout),
    }
}

impl PeerConn {
    /// Dial `addr` (`host:port`) and send the `  V1` magic.
    pub async fn connect(addr: &str, max_body_size: i64) -> Result<PeerConn, PeerError> {
        let stream = match timeout(IO_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(PeerError::Dial(e)),
            Err(_) => return Err(PeerError::Timeout),
        };
        let _ = stream.set_nodelay(true);
        let mut conn = PeerConn {
            stream,
            max_body_size,
        };
        deadline(conn.stream.write_all(b"  V1")).await?;
        Ok(conn)
    }

    /// Send one command (`line` without its newline, and an optional size-prefixed body) and
    /// read the reply.
    pub async fn command(&mut self, line: &str, body: Option<&[u8]>) -> Result<Vec<u8>, PeerError> {
        let mut out = Vec::with_capacity(line.len() + 1 + body.map_or(0, |b| b.len() + 4));
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
        if let Some(b) = body {
            let len = i32::try_from(b.len()).map_err(|_| PeerError::BadSize(i32::MAX))?;
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(b);
        }
        deadline(self.stream.write_all(&out)).await?;
        let mut size = [0u8; 4];
        deadline(self.stream.read_exact(&mut size)).await?;
        let size = i32::from_be_bytes(size);
        if size < 0 {
            return Err(PeerError::BadSize(size));
        }
        if i64::from(size) > self.max_body_size {
            return Err(PeerError::TooLarge {
                size: i64::from(size),
                limit: self.max_body_size,
            });
        }
        let mut data = vec![0u8; size as usize];
        deadline(self.stream.read_exact(&mut data)).await?;
        Ok(data)
    }

    /// IDENTIFY this node; returns lookupd's description of itself.
    pub async fn identify(&mut self, me: &Identity) -> Result<PeerInfo, PeerError> {
        let body = serde_json::to_vec(me).map_err(|e| PeerError::BadIdentify(e.to_string()))?;
        let resp = self.command("IDENTIFY", Some(&body)).await?;
        if resp == b"E_INVALID" || resp.starts_with(b"E_") {
            return Err(PeerError::Refused(
                String::from_utf8_lossy(&resp).into_owned(),
            ));
        }
        serde_json::from_slice(&resp)
            .map_err(|_| PeerError::BadIdentify(String::from_utf8_lossy(&resp).into_owned()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    fn me() -> Identity {
        Identity {
            broadcast_address: "127.0.0.1".into(),
            hostname: "h".into(),
            http_port: 4151,
            tcp_port: 4150,
            topology_region: String::new(),
            topology_zone: String::new(),
            version: "1.3.0".into(),
        }
    }

    /// A one-connection server that checks the magic and answers each request with `replies`.
    async fn server(replies: Vec<Vec<u8>>) -> (String, tokio::task::JoinHandle<Vec<u8>>) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let task = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut seen = Vec::new();
            let mut magic = [0u8; 4];
            s.read_exact(&mut magic).await.unwrap();
            assert_eq!(&magic, b"  V1");
            for r in replies {
                let mut buf = [0u8; 4096];
                let n = s.read(&mut buf).await.unwrap();
                seen.extend_from_slice(&buf[..n]);
                s.write_all(&r).await.unwrap();
            }
            seen
        });
        (addr, task)
    }

    fn framed(b: &[u8]) -> Vec<u8> {
        let mut v = (b.len() as i32).to_be_bytes().to_vec();
        v.extend_from_slice(b);
        v
    }

    #[tokio::test]
    async fn identify_and_register() {
        let info = br#"{"tcp_port":4160,"http_port":4161,"version":"1.3.0","broadcast_address":"lk","hostname":"x"}"#;
        let (addr, task) = server(vec![framed(info), framed(b"OK")]).await;
        let mut c = PeerConn::connect(&addr, 1024).await.unwrap();
        let got = c.identify(&me()).await.unwrap();
        assert_eq!(
            (got.broadcast_address.as_str(), got.http_port),
            ("lk", 4161)
        );
        assert_eq!(c.command("REGISTER t c", None).await.unwrap(), b"OK");
        let seen = String::from_utf8_lossy(&task.await.unwrap()).into_owned();
        assert!(seen.starts_with("IDENTIFY\n"), "{seen}");
        assert!(seen.contains(r#"{"broadcast_address":"127.0.0.1","hostname":"h","http_port":4151,"tcp_port":4150,"topology_region":"","topology_zone":"","version":"1.3.0"}"#), "{seen}");
        assert!(seen.ends_with("REGISTER t c\n"), "{seen}");
    }

    #[tokio::test]
    async fn garbage_and_oversized_replies_are_errors() {
        let (addr, _t) = server(vec![framed(b"not json")]).await;
        let mut c = PeerConn::connect(&addr, 1024).await.unwrap();
        assert!(matches!(
            c.identify(&me()).await,
            Err(PeerError::BadIdentify(_))
        ));

        let (addr, _t) = server(vec![framed(b"E_INVALID")]).await;
        let mut c = PeerConn::connect(&addr, 1024).await.unwrap();
        assert!(matches!(
            c.identify(&me()).await,
            Err(PeerError::Refused(_))
        ));

        let (addr, _t) = server(vec![framed(&[b'x'; 100])]).await;
        let mut c = PeerConn::connect(&addr, 10).await.unwrap();
        let e = c.command("PING", None).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            "response body size (100) is greater than limit (10)"
        );

        let (addr, _t) = server(vec![(-5i32).to_be_bytes().to_vec()]).await;
        let mut c = PeerConn::connect(&addr, 10).await.unwrap();
        assert!(matches!(
            c.command("PING", None).await,
            Err(PeerError::BadSize(-5))
        ));
    }

    #[tokio::test]
    async fn silent_lookupd_times_out() {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let _keep = tokio::spawn(async move {
            let (s, _) = l.accept().await.unwrap();
            tokio::time::sleep(Duration::from_secs(10)).await;
            drop(s);
        });
        let mut c = PeerConn::connect(&addr, 10).await.unwrap();
        // The server holds the connection for 10 s without a word: only the 1 s read deadline
        // gives this error.
        assert!(matches!(
            c.command("PING", None).await,
            Err(PeerError::Timeout)
        ));
    }
}
