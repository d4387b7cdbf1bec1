//! The rustls pieces nsqrd and nsqr-client both need: the crypto provider, and a certificate
//! verifier that accepts any certificate while still checking the handshake signatures (the
//! client's `tls_insecure_skip_verify`, the daemon's `--tls-client-auth-policy=require`, which
//! only asks a client to prove it holds its certificate's key, as Go's `RequireAnyClientCert`).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

/// The crypto provider of every TLS configuration (ring).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(ring::default_provider())
}

/// Any certificate is accepted; the peer must still prove it holds the certificate's key.
#[derive(Debug)]
pub struct AnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl AnyCertificate {
    /// A verifier checking signatures with `provider`'s algorithms.
    pub fn new(provider: Arc<CryptoProvider>) -> AnyCertificate {
        AnyCertificate { provider }
    }
}

/// The signature checks of both verifier traits: the handshake signatures are verified with
/// the provider's algorithms, whatever the certificate.
macro_rules! signature_checks {
    () => {
        signature_checks!(
            verify_tls12_signature,
            rustls::crypto::verify_tls12_signature
        );
        signature_checks!(
            verify_tls13_signature,
            rustls::crypto::verify_tls13_signature
        );

        fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
            self.provider
                .signature_verification_algorithms
                .supported_schemes()
        }
    };
    ($method:ident, $verify:path) => {
        fn $method(
            &self,
            message: &[u8],
            cert: &CertificateDer<'_>,
            dss: &DigitallySignedStruct,
        ) -> Result<HandshakeSignatureValid, rustls::Error> {
            let algorithms = &self.provider.signature_verification_algorithms;
            $verify(message, cert, dss, algorithms)
        }
    };
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    signature_checks!();
}

impl ClientCertVerifier for AnyCertificate {
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    signature_checks!();
}
