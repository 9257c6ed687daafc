//! TLS for `https://` targets: rustls with the `ring` provider, Mozilla's roots
//! (`webpki-roots`) plus any `--tls-ca` file (a certificate of that file served as the server's
//! own, self-signed, is trusted as given, as curl does), or no verification at all with
//! `--insecure`.
//! ALPN offers `http/1.1` only: the client speaks HTTP/1.1 (it has no h2 path).
//!
//! The connection is [`crate::pool::Stream`]: plain TCP stays the same type it always was (one
//! `match` per read, no boxing), a TLS connection wraps it.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// Largest `--tls-ca` file read, bytes (1 MiB: a bundle of a few hundred certificates).
pub const CA_FILE_MAX: u64 = 1 << 20;

/// How `https://` targets are verified (`--tls-ca`, `--insecure`). Unused for `http://`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// PEM file of extra trusted root certificates (`--tls-ca FILE`), added to Mozilla's.
    pub ca_file: Option<PathBuf>,
    /// Skip certificate verification (`--insecure`): any certificate and host name is
    /// accepted. The handshake's signatures are still checked.
    pub insecure: bool,
}

/// A connector for one target: the rustls configuration and the name the certificate must
/// carry.
#[derive(Clone)]
pub struct TlsConnector {
    config: Arc<rustls::ClientConfig>,
    connector: tokio_rustls::TlsConnector,
    server_name: ServerName<'static>,
}

impl std::fmt::Debug for TlsConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConnector")
            .field("server_name", &self.server_name)
            .finish()
    }
}

impl TlsConnector {
    /// A connector for `host` (a DNS name or an IP address) under `opts`. Errors (in words for
    /// the user): a `--tls-ca` file that cannot be read, is larger than [`CA_FILE_MAX`], holds
    /// no PEM certificate or one rustls refuses; a host that is no valid server name.
    pub fn new(host: &str, opts: &TlsOptions) -> Result<Self, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS set-up: {e}"))?;
        let mut config = if opts.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoVerification(provider)))
                .with_no_client_auth()
        } else {
            let mut roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
            };
            let mut given = Vec::new();
            if let Some(path) = &opts.ca_file {
                for cert in read_ca_file(path)? {
                    roots.add(cert.clone()).map_err(|e| {
                        format!(
                            "--tls-ca {}: a certificate rustls refuses: {e}",
                            path.display()
                        )
                    })?;
                    given.push(cert);
                }
            }
            let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots),
                provider.clone(),
            )
            .build()
            .map_err(|e| format!("TLS set-up: {e}"))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(GivenOrWebpki { webpki, given }))
                .with_no_client_auth()
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let server_name = ServerName::try_from(bare.to_string())
            .map_err(|e| format!("{host:?} is not a valid TLS server name: {e}"))?;
        let config = Arc::new(config);
        Ok(TlsConnector {
            connector: tokio_rustls::TlsConnector::from(config.clone()),
            config,
            server_name,
        })
    }

    /// The TLS handshake over `io`. Errors: the handshake's (a certificate that does not
    /// verify says why, e.g. `invalid peer certificate: UnknownIssuer`).
    pub(crate) async fn connect<IO>(
        &self,
        io: IO,
    ) -> std::io::Result<tokio_rustls::client::TlsStream<IO>>
    where
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        self.connector.connect(self.server_name.clone(), io).await
    }
}

/// A blocking TLS session over a `std` socket ([`TlsConnector::connect_blocking`]): `Read` and
/// `Write`, the handshake done on the first of them.
pub type BlockingTlsStream = rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>;

impl TlsConnector {
    /// A blocking TLS session over `sock` (for the blocking side clients, `--tokenizer
    /// server`'s `/tokenize`), verified as [`TlsConnector::new`]'s options say. The handshake
    /// runs on the first read or write, whose error then says why (e.g. `invalid peer
    /// certificate: UnknownIssuer`). Errors: a session rustls cannot start.
    pub fn connect_blocking(
        &self,
        sock: std::net::TcpStream,
    ) -> std::io::Result<BlockingTlsStream> {
        let conn = rustls::ClientConnection::new(self.config.clone(), self.server_name.clone())
            .map_err(std::io::Error::other)?;
        Ok(rustls::StreamOwned::new(conn, sock))
    }
}

/// The certificates of a PEM file, read bounded. Errors name the file and `--tls-ca`.
fn read_ca_file(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, String> {
    use std::io::Read as _;
    let what = || format!("--tls-ca {}", path.display());
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", what()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file", what()));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(CA_FILE_MAX + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("{}: {e}", what()))?;
    if bytes.len() as u64 > CA_FILE_MAX {
        return Err(format!("{}: larger than {CA_FILE_MAX} bytes", what()));
    }
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: not PEM certificates: {e}", what()))?;
    if certs.is_empty() {
        return Err(format!(
            "{}: no certificate in it (expected PEM: -----BEGIN CERTIFICATE-----)",
            what()
        ));
    }
    Ok(certs)
}

/// Verification with `--tls-ca`: webpki's (Mozilla's roots and the file's), and, as curl
/// does, a server certificate that is byte for byte one of the file's certificates is trusted
/// as given even where webpki refuses it as its own trust anchor (a self-signed certificate:
/// `CaUsedAsEndEntity`, or `UnknownIssuer` for one without CA constraints). Its validity
/// dates and host names are then not checked: the user named that exact certificate.
#[derive(Debug)]
struct GivenOrWebpki {
    webpki: Arc<rustls::client::WebPkiServerVerifier>,
    given: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for GivenOrWebpki {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match (self.webpki).verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(e) if own_anchor(&e) && self.given.iter().any(|c| c == end_entity) => {
                Ok(ServerCertVerified::assertion())
            }
            r => r,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// Whether webpki refused a certificate for being its own trust anchor: `CaUsedAsEndEntity`
/// (a CA certificate served as the server's) or `UnknownIssuer` (a self-signed one).
fn own_anchor(e: &rustls::Error) -> bool {
    match e {
        rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer) => true,
        rustls::Error::InvalidCertificate(c) => format!("{c:?}").contains("CaUsedAsEndEntity"),
        _ => false,
    }
}

/// `--insecure`: accepts any certificate for any name; the handshake signatures are still
/// verified with the provider's algorithms.
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerification {
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

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_files_are_read_or_refused_by_name() {
        let dir = std::env::temp_dir().join(format!("ib-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let e = TlsConnector::new(
            "h",
            &TlsOptions {
                ca_file: Some(empty.clone()),
                insecure: false,
            },
        )
        .unwrap_err();
        assert_eq!(
            e,
            format!(
                "--tls-ca {}: no certificate in it (expected PEM: -----BEGIN CERTIFICATE-----)",
                empty.display()
            )
        );
        let missing = dir.join("missing.pem");
        let e = TlsConnector::new(
            "h",
            &TlsOptions {
                ca_file: Some(missing.clone()),
                insecure: false,
            },
        )
        .unwrap_err();
        assert!(
            e.starts_with(&format!("--tls-ca {}: ", missing.display())),
            "{e}"
        );
        let e = TlsConnector::new(
            "h",
            &TlsOptions {
                ca_file: Some(dir.clone()),
                insecure: false,
            },
        )
        .unwrap_err();
        assert!(e.ends_with("not a regular file"), "{e}");
        assert!(TlsConnector::new("[::1]", &TlsOptions::default()).is_ok());
        assert!(TlsConnector::new("bad name!", &TlsOptions::default()).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
