//! TLS configuration from nsqd's flags, with rustls: the server side (TCP upgrade through
//! IDENTIFY and the HTTPS listener), the client side (HTTPS auth servers), and the cluster
//! port's mutual TLS (the node's certificate both ways, peers verified against
//! `--tls-root-ca-file`).
//!
//! rustls speaks TLS 1.2 and 1.3 only, so `--tls-min-version=tls1.0/tls1.1` still means "1.2
//! and up" (docs/compatibility.md). `--tls-client-auth-policy=require` asks for a client
//! certificate and checks only that the client holds its key, as Go's `RequireAnyClientCert`;
//! `require-verify` also verifies it against `--tls-root-ca-file`. The helpers at the end turn
//! a session into the names `/stats` shows and dig the common name out of a client certificate
//! for the auth server.

use std::sync::Arc;

use nsq_common::tls::{provider, AnyCertificate};
use nsqr_replication::ClusterTls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    ClientConfig, ProtocolVersion, RootCertStore, ServerConfig, SupportedProtocolVersion,
};

use crate::options::Options;

/// Go's `tls.VersionTLS13`.
const TLS_1_3: u16 = 0x0304;

/// Why a TLS configuration could not be built; shown after `failed to build TLS config - `.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("open {path}: {source}")]
    Read {
        path: String,
        source: rustls::pki_types::pem::Error,
    },
    #[error("tls: failed to find any PEM data in certificate input")]
    NoCertificate,
    #[error("tls: {0}")]
    Rustls(#[from] rustls::Error),
    #[error("failed to append certificate to pool")]
    BadRootCa,
    #[error("--tls-client-auth-policy=require-verify needs --tls-root-ca-file")]
    VerifyWithoutCa,
    #[error("client certificate verifier: {0}")]
    Verifier(String),
    #[error("a cluster node with --tls-cert needs --tls-root-ca-file: the nodes verify each other's certificates against it")]
    ClusterWithoutCa,
    #[error("{0}")]
    Cluster(#[from] nsqr_replication::TlsError),
}

static TLS13_ONLY: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13];

fn versions(min: u16) -> &'static [&'static SupportedProtocolVersion] {
    if min >= TLS_1_3 {
        TLS13_ONLY
    } else {
        rustls::ALL_VERSIONS
    }
}

fn read_certs(path: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let read_err = |source| TlsError::Read {
        path: path.to_string(),
        source,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(read_err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(read_err)?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate);
    }
    Ok(certs)
}

fn read_key(path: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|source| TlsError::Read {
        path: path.to_string(),
        source,
    })
}

fn read_roots(path: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    read_certs(path).map_err(|e| match e {
        TlsError::NoCertificate => TlsError::BadRootCa,
        e => e,
    })
}

fn root_store(path: &str) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    let (added, _ignored) = roots.add_parsable_certificates(read_roots(path)?);
    if added == 0 {
        return Err(TlsError::BadRootCa);
    }
    Ok(roots)
}

/// The server configuration, or None when neither `--tls-cert` nor `--tls-key` is set.
pub fn server_config(o: &Options) -> Result<Option<Arc<ServerConfig>>, TlsError> {
    if o.tls_cert.is_empty() && o.tls_key.is_empty() {
        return Ok(None);
    }
    let certs = read_certs(&o.tls_cert)?;
    let key = read_key(&o.tls_key)?;
    let provider = provider();
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(versions(o.tls_min_version))?;
    let builder = match o.tls_client_auth_policy.as_str() {
        "require" => builder.with_client_cert_verifier(Arc::new(AnyCertificate::new(provider))),
        "require-verify" => {
            if o.tls_root_ca_file.is_empty() {
                return Err(TlsError::VerifyWithoutCa);
            }
            let roots = Arc::new(root_store(&o.tls_root_ca_file)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| TlsError::Verifier(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        _ => {
            if !o.tls_root_ca_file.is_empty() {
                // nsqd reads the CA file even when it does not verify clients.
                root_store(&o.tls_root_ca_file)?;
            }
            builder.with_no_client_auth()
        }
    };
    let config = builder.with_single_cert(certs, key)?;
    Ok(Some(Arc::new(config)))
}

/// The configuration for HTTPS auth servers: trusts `--tls-root-ca-file` (there is no system
/// trust store here, so without it an `https://` auth server cannot be verified).
pub fn client_config(o: &Options) -> Result<Arc<ClientConfig>, TlsError> {
    let roots = if o.tls_root_ca_file.is_empty() {
        RootCertStore::empty()
    } else {
        root_store(&o.tls_root_ca_file)?
    };
    let config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(versions(o.tls_min_version))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The cluster port's mutual TLS, or None when neither `--tls-cert` nor `--tls-key` is set:
/// the node's certificate serves both as listener and as caller, and peers must present one
/// of `--tls-root-ca-file` (which is then required) naming their `--cluster-peers` host.
pub fn cluster_tls(o: &Options) -> Result<Option<ClusterTls>, TlsError> {
    if o.tls_cert.is_empty() && o.tls_key.is_empty() {
        return Ok(None);
    }
    if o.tls_root_ca_file.is_empty() {
        return Err(TlsError::ClusterWithoutCa);
    }
    let certs = read_certs(&o.tls_cert)?;
    let key = read_key(&o.tls_key)?;
    let roots = read_roots(&o.tls_root_ca_file)?;
    Ok(Some(ClusterTls::new(certs, key, roots)?))
}

/// What `/stats` and the auth server learn about a TLS session.
#[derive(Debug, Clone, Default)]
pub struct SessionInfo {
    /// `TLS1.2` / `TLS1.3`.
    pub version: String,
    /// Go's name for the suite, or `Unknown <n>` for suites outside Go's table (as nsqd).
    pub cipher_suite: String,
    /// CN of the client certificate, "" without one.
    pub common_name: String,
}

impl SessionInfo {
    pub fn of(conn: &rustls::ServerConnection) -> SessionInfo {
        let version = match conn.protocol_version() {
            Some(ProtocolVersion::TLSv1_2) => "TLS1.2".to_string(),
            Some(ProtocolVersion::TLSv1_3) => "TLS1.3".to_string(),
            Some(v) => format!("Unknown {}", u16::from(v)),
            None => String::new(),
        };
        let cipher_suite = conn
            .negotiated_cipher_suite()
            .map(|s| cipher_suite_name(u16::from(s.suite())))
            .unwrap_or_default();
        let common_name = conn
            .peer_certificates()
            .and_then(|c| c.first())
            .and_then(|c| common_name(c.as_ref()))
            .unwrap_or_default();
        SessionInfo {
            version,
            cipher_suite,
            common_name,
        }
    }
}

/// nsqd's cipher-suite names (the suites rustls can negotiate that its table knows).
fn cipher_suite_name(id: u16) -> String {
    match id {
        0xc02f => "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".to_string(),
        0xc02b => "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".to_string(),
        n => format!("Unknown {n}"),
    }
}

/// One DER element: (tag, contents, rest).
fn der_next(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, b) = b.split_first()?;
    let (&first, mut b) = b.split_first()?;
    let len = if first < 0x80 {
        first as usize
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || b.len() < n {
            return None;
        }
        let mut len = 0usize;
        for &x in &b[..n] {
            len = (len << 8) | x as usize;
        }
        b = &b[n..];
        len
    };
    if b.len() < len {
        return None;
    }
    Some((tag, &b[..len], &b[len..]))
}

/// The subject common name (OID 2.5.4.3) of a DER certificate.
pub fn common_name(cert: &[u8]) -> Option<String> {
    const SEQ: u8 = 0x30;
    const CN_OID: &[u8] = &[0x55, 0x04, 0x03];
    let (tag, cert, _) = der_next(cert)?;
    if tag != SEQ {
        return None;
    }
    let (tag, tbs, _) = der_next(cert)?;
    if tag != SEQ {
        return None;
    }
    let mut rest = tbs;
    // [0] version (optional), serial, signature algorithm, issuer, validity, subject.
    let (tag, _, r) = der_next(rest)?;
    rest = if tag == 0xa0 { der_next(r)?.2 } else { r };
    for _ in 0..3 {
        rest = der_next(rest)?.2;
    }
    let (tag, mut subject, _) = der_next(rest)?;
    if tag != SEQ {
        return None;
    }
    let mut found = None;
    while !subject.is_empty() {
        let (_, set, r) = der_next(subject)?;
        subject = r;
        let mut attrs = set;
        while !attrs.is_empty() {
            let (_, attr, r) = der_next(attrs)?;
            attrs = r;
            let (_, oid, value) = der_next(attr)?;
            if oid == CN_OID {
                let (_, v, _) = der_next(value)?;
                found = Some(String::from_utf8_lossy(v).into_owned());
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_names_follow_nsqd() {
        assert_eq!(
            cipher_suite_name(0xc02f),
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
        );
        assert_eq!(cipher_suite_name(4865), "Unknown 4865");
    }

    #[test]
    fn der_walk_rejects_garbage() {
        assert_eq!(common_name(b""), None);
        assert_eq!(common_name(&[0x30, 0x82, 0xff]), None);
        assert_eq!(common_name(&[0x30, 0x03, 0x30, 0x01, 0x00]), None);
    }
}
