//! Building the rustls side of `tls_v1` from files, as go-nsq's `tls_root_ca_file`,
//! `tls_cert` / `tls_key` and `tls_insecure_skip_verify` options do. A program with its own
//! rustls configuration passes it in [`TlsConfig::client`] directly.

use std::path::Path;
use std::sync::Arc;

use nsq_common::tls::{provider, AnyCertificate};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore};

use crate::config::TlsConfig;
use crate::error::Error;

fn tls_err(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Tls(format!("{what} {}: {e}", path.display()))
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| tls_err("open", path, e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls_err("read", path, e))?;
    if certs.is_empty() {
        return Err(tls_err("read", path, "no PEM certificate"));
    }
    Ok(certs)
}

/// How to build a [`TlsConfig`] from files.
#[derive(Debug, Clone, Default)]
pub struct TlsFiles<'a> {
    /// CA certificates the server's certificate must chain to.
    pub root_ca_file: Option<&'a Path>,
    /// A client certificate (PEM) and its key, for servers that ask for one.
    pub cert_file: Option<&'a Path>,
    /// The client certificate's key (PEM).
    pub key_file: Option<&'a Path>,
    /// Accept any server certificate (testing only).
    pub insecure_skip_verify: bool,
}

impl TlsFiles<'_> {
    /// The rustls configuration these files describe.
    pub fn build(&self) -> Result<TlsConfig, Error> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_protocol_versions(rustls::ALL_VERSIONS)
            .map_err(|e| Error::Tls(e.to_string()))?;
        let builder = if self.insecure_skip_verify {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate::new(provider())))
        } else {
            let mut roots = RootCertStore::empty();
            if let Some(path) = self.root_ca_file {
                let (added, _) = roots.add_parsable_certificates(read_certs(path)?);
                if added == 0 {
                    return Err(tls_err("read", path, "no usable CA certificate"));
                }
            }
            builder.with_root_certificates(roots)
        };
        let client = match (self.cert_file, self.key_file) {
            (Some(cert), Some(key)) => {
                let certs = read_certs(cert)?;
                let key = PrivateKeyDer::from_pem_file(key).map_err(|e| tls_err("read", key, e))?;
                builder
                    .with_client_auth_cert(certs, key)
                    .map_err(|e| Error::Tls(e.to_string()))?
            }
            (None, None) => builder.with_no_client_auth(),
            _ => {
                return Err(Error::Tls(
                    "a client certificate needs both cert and key".into(),
                ))
            }
        };
        Ok(TlsConfig {
            client: Arc::new(client),
            server_name: None,
        })
    }
}
