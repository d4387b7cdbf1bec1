//! The link-cutting proxy: partitions on loopback, where every node shares one network.
//!
//! Each node's cluster address in `--cluster-peers` is a proxy port that forwards to the
//! node's real listener. The proxy learns which node is calling from the client's hello, the
//! first frame a cluster client sends (`[u32 length][postcard: 8-byte magic, the caller's id
//! as a varint, ...]`, `crates/nsqr-replication/src/network/handshake.rs`), so it can cut the
//! link between two nodes in both directions: established connections are dropped and new
//! ones closed at once, as a firewall rule dropping the link would make them fail.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::history::NodeNum;

/// Bytes before the caller's id in a client hello: the frame length and the magic.
const HELLO_ID_OFFSET: usize = 4 + 8;

/// Which links are cut; shared by every forwarding task.
pub struct Links {
    cut: Mutex<HashSet<(NodeNum, NodeNum)>>,
    /// Bumped on every change, so connections look again at their link.
    changed: watch::Sender<u64>,
}

impl Links {
    pub fn new() -> Arc<Links> {
        Arc::new(Links {
            cut: Mutex::new(HashSet::new()),
            changed: watch::Sender::new(0),
        })
    }

    fn key(a: NodeNum, b: NodeNum) -> (NodeNum, NodeNum) {
        (a.min(b), a.max(b))
    }

    pub fn is_cut(&self, a: NodeNum, b: NodeNum) -> bool {
        self.cut.lock().contains(&Links::key(a, b))
    }

    /// Cuts the links between each pair of nodes, both ways.
    pub fn cut(&self, pairs: &[(NodeNum, NodeNum)]) {
        {
            let mut cut = self.cut.lock();
            for (a, b) in pairs {
                cut.insert(Links::key(*a, *b));
            }
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// Every link restored.
    pub fn heal(&self) {
        self.cut.lock().clear();
        self.changed.send_modify(|n| *n += 1);
    }
}

/// Binds the proxy of node `to`, forwarding to `upstream`; serves until the runtime stops.
pub async fn start(
    links: Arc<Links>,
    to: NodeNum,
    upstream: SocketAddr,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(forward(Arc::clone(&links), to, client, upstream));
        }
    });
    Ok(addr)
}

/// One proxied connection, until either side closes it or its link is cut.
async fn forward(links: Arc<Links>, to: NodeNum, mut client: TcpStream, upstream: SocketAddr) {
    let mut changed = links.changed.subscribe();
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (mut client_r, mut client_w) = client.split();
    let (mut server_r, mut server_w) = server.split();
    // The server speaks first (its hello); the client's hello names the caller.
    let to_client = tokio::io::copy(&mut server_r, &mut client_w);
    let from_client = async {
        let (from, head) = read_caller(&mut client_r).await?;
        if links.is_cut(from, to) {
            return Ok(());
        }
        server_w.write_all(&head).await?;
        let watch_cut = async {
            loop {
                if changed.changed().await.is_err() || links.is_cut(from, to) {
                    return;
                }
            }
        };
        tokio::select! {
            r = tokio::io::copy(&mut client_r, &mut server_w) => r.map(|_| ()),
            () = watch_cut => Ok(()),
        }
    };
    // Whichever ends first ends the connection: both sockets drop here.
    tokio::select! {
        _ = to_client => {}
        _ = from_client => {}
    }
}

/// Reads the start of the client's hello up to and including the caller's id; returns the
/// id and the bytes read, to be forwarded as they were.
async fn read_caller<R: AsyncReadExt + Unpin>(r: &mut R) -> std::io::Result<(NodeNum, Vec<u8>)> {
    let mut head = vec![0u8; HELLO_ID_OFFSET];
    r.read_exact(&mut head).await?;
    let mut id: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = r.read_u8().await?;
        head.push(b);
        id |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok((id as NodeNum, head));
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "client hello: caller id too long",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cut_link_drops_its_connections_and_refuses_new_ones() {
        let echo = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let upstream = echo.local_addr().expect("addr");
        tokio::spawn(async move {
            while let Ok((mut s, _)) = echo.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        let links = Links::new();
        let proxy = start(Arc::clone(&links), 2, upstream).await.expect("proxy");
        // A hello from node 1: length, magic, id 1, then payload.
        let hello = |from: u8| {
            let mut h = vec![0, 0, 0, 10];
            h.extend_from_slice(b"NSQRRAFT");
            h.push(from);
            h.push(b'x');
            h
        };
        let mut c = TcpStream::connect(proxy).await.expect("connect");
        c.write_all(&hello(1)).await.expect("write");
        let mut back = vec![0u8; 14];
        c.read_exact(&mut back).await.expect("echo");
        assert_eq!(back, hello(1));

        links.cut(&[(2, 1)]);
        let mut rest = Vec::new();
        let n = tokio::time::timeout(std::time::Duration::from_secs(30), c.read_to_end(&mut rest))
            .await
            .expect("dropped within 30 s");
        assert!(n.is_ok());
        let mut c = TcpStream::connect(proxy).await.expect("connect");
        c.write_all(&hello(1)).await.expect("write");
        let mut rest = Vec::new();
        let _ = c.read_to_end(&mut rest).await;
        assert!(rest.is_empty(), "a cut link forwards nothing");
        // Node 3's link to node 2 is still up.
        let mut c = TcpStream::connect(proxy).await.expect("connect");
        c.write_all(&hello(3)).await.expect("write");
        let mut back = vec![0u8; 14];
        c.read_exact(&mut back).await.expect("echo");
        assert_eq!(back, hello(3));

        links.heal();
        let mut c = TcpStream::connect(proxy).await.expect("connect");
        c.write_all(&hello(1)).await.expect("write");
        let mut back = vec![0u8; 14];
        c.read_exact(&mut back).await.expect("echo after heal");
    }
}
