//! `--tls-ca` and `--insecure` of `bench` and `replay`: how an `https://` target's certificate
//! is verified (issue 41). Flags of the CLI (the open issue's rule for new flags); the client
//! takes them as [`TlsOptions`].

use std::path::PathBuf;

use inferbench_client::tls::TlsOptions;

/// How an `https://` target is verified.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TlsArgs {
    /// PEM file of extra trusted root certificates for an https:// --base-url (a private CA),
    /// added to the built-in Mozilla roots (webpki-roots). Without it a certificate those roots
    /// do not vouch for fails every request with a `connect` error naming the certificate. A
    /// server's own self-signed certificate given here is trusted as given (as curl does).
    #[arg(long, value_name = "FILE", help_heading = "TLS")]
    pub tls_ca: Option<PathBuf>,
    /// Skip the https:// target's certificate verification (any certificate, any name: for a
    /// test server only; a warning says so).
    #[arg(long, conflicts_with = "tls_ca", help_heading = "TLS")]
    pub insecure: bool,
}

impl TlsArgs {
    /// The client's TLS options; warns on stderr for `--insecure`.
    pub fn options(&self) -> TlsOptions {
        if self.insecure {
            errln!(
                "inferbench: warning: --insecure: the server's TLS certificate is not verified \
                 (anyone on the path could answer in its place)"
            );
        }
        TlsOptions {
            ca_file: self.tls_ca.clone(),
            insecure: self.insecure,
        }
    }
}
