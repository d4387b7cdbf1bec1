//! Mutual TLS on the cluster port, when the nodes have certificates: the caller verifies the
//! listener's certificate against the cluster's root CA and the name in its `--cluster-peers`
//! address, the listener requires and verifies the caller's certificate against the same CA.
//! The authenticating handshake (node id, shared secret) then runs inside the TLS session, so
//! a peer needs both a certificate of the cluster's CA and the secret.
//!
//! A connection is a [`Stream`]: the TCP socket itself without TLS, its TLS session with.

use std::fmt;
use std::io;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use super::NetError;

/// What a cluster connection is read from and written to.
pub(crate) trait Io: AsyncRead + AsyncWrite + Unpin + Send + Sync {}

impl<T: AsyncRead + AsyncWrite + Unpin + Send + Sync> Io for T {}

/// A cluster connection: plain TCP, or TLS over it.
pub(crate) type Stream = Box<dyn Io>;

/// Why the cluster's TLS settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cluster TLS: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("cluster TLS: the root CA holds no usable certificate")]
    NoRoots,
    #[error("cluster TLS: cannot verify peers' certificates: {0}")]
    Verifier(String),
}

/// This node's side of the cluster's mutual TLS: its certificate and key, and the root CA
/// every peer's certificate must chain to.
#[derive(Clone)]
pub struct ClusterTls {
    acceptor: TlsAcceptor,
    connector: TlsConnector,
}

impl ClusterTls {
    /// TLS with `chain` (this node's certificate first) and `key`, trusting only `roots`.
    /// The same certificate serves both directions, so if it names extended key usages it
    /// needs both server and client authentication.
    pub fn new(
        chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
        roots: Vec<CertificateDer<'static>>,
    ) -> Result<Self, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut store = RootCertStore::empty();
        let (added, _ignored) = store.add_parsable_certificates(roots);
        if added == 0 {
            return Err(TlsError::NoRoots);
        }
        let store = Arc::new(store);
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::clone(&store), Arc::clone(&provider))
                .build()
                .map_err(|e| TlsError::Verifier(e.to_string()))?;
        let server = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()?
            .with_client_cert_verifier(verifier)
            .with_single_cert(chain.clone(), key.clone_key())?;
        let client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(store)
            .with_client_auth_cert(chain, key)?;
        Ok(ClusterTls {
            acceptor: TlsAcceptor::from(Arc::new(server)),
            connector: TlsConnector::from(Arc::new(client)),
        })
    }

    /// The listener's side: the TLS handshake with a caller, which must present a
    /// certificate of the cluster's CA.
    pub(crate) async fn accept(&self, tcp: TcpStream) -> Result<Stream, NetError> {
        let stream = self.acceptor.accept(tcp).await.map_err(NetError::Tls)?;
        Ok(Box::new(stream))
    }

    /// The caller's side: the TLS handshake with the node at `address` (`host:port`), whose
    /// certificate must be of the cluster's CA and name `host`.
    pub(crate) async fn connect(&self, tcp: TcpStream, address: &str) -> Result<Stream, NetError> {
        let stream = self
            .connector
            .connect(server_name(address)?, tcp)
            .await
            .map_err(NetError::Tls)?;
        Ok(Box::new(stream))
    }
}

impl fmt::Debug for ClusterTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClusterTls")
    }
}

/// The name a peer's certificate must carry: the host of its address (a DNS name or an IP
/// address, IPv6 without its brackets).
fn server_name(address: &str) -> Result<ServerName<'static>, NetError> {
    let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned()).map_err(|e| {
        NetError::Tls(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{address}: no name to verify: {e}"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::server_name;

    #[test]
    fn the_name_verified_is_the_host_of_the_address() {
        let name = |a: &str| server_name(a).map(|n| n.to_str().into_owned()).ok();
        assert_eq!(
            name("node-b.example:4250").as_deref(),
            Some("node-b.example")
        );
        assert_eq!(name("10.0.0.2:4250").as_deref(), Some("10.0.0.2"));
        assert_eq!(name("[::1]:4250").as_deref(), Some("::1"));
        assert_eq!(name("bad host!:4250"), None);
    }
}
