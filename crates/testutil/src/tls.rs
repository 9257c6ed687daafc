//! A TLS front for tests of `https://` targets: a CA and a server certificate made in the test
//! (rcgen), and a local port that terminates TLS with it and forwards the plain bytes to an
//! upstream HTTP server (the in-process sim).

use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};

/// A test CA's certificate (PEM, what `--tls-ca` is given) and a TLS acceptor serving a
/// certificate it signed for each of `names` (host names or IP addresses, e.g. `localhost`,
/// `127.0.0.1`).
///
/// # Panics
/// When rcgen or rustls refuse the parameters (a test set-up error).
pub fn certificates(names: &[&str]) -> (String, tokio_rustls::TlsAcceptor) {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "inferbench test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(owned(names))
        .unwrap()
        .signed_by(&key, &ca_cert, &ca_key)
        .unwrap();
    (ca_cert.pem(), acceptor(&leaf, &key))
}

/// A self-signed certificate for `names` that is its own CA (as `openssl req -x509` makes):
/// its PEM and a TLS acceptor serving it.
///
/// # Panics
/// As [`certificates`].
pub fn self_signed(names: &[&str]) -> (String, tokio_rustls::TlsAcceptor) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(owned(names)).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), acceptor(&cert, &key))
}

fn owned(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| n.to_string()).collect()
}

/// A TLS acceptor serving `cert` with `key` (rustls with ring, safe default versions).
fn acceptor(cert: &rcgen::Certificate, key: &rcgen::KeyPair) -> tokio_rustls::TlsAcceptor {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()).into(),
        )
        .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

/// TLS on a free local port in front of `upstream` (`host:port` of a plain HTTP server);
/// returns the port. Each accepted connection is handshaken with `acceptor` and joined to a
/// fresh connection to `upstream`; a client that refuses the certificate ends the handshake
/// and nothing is forwarded. Runs until the runtime ends.
pub async fn spawn_tls_front(acceptor: tokio_rustls::TlsAcceptor, upstream: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let (acceptor, upstream) = (acceptor.clone(), upstream.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(sock).await else {
                    return;
                };
                let Ok(mut plain) = TcpStream::connect(&upstream).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    port
}
