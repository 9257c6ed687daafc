//! `inferbench eval gsm8k`: accuracy of a served model on GSM8K with InferenceX's prompt and
//! scoring (`inferbench_eval::gsm8k`); flags, results and the pass mark in [`flags`].

pub mod flags;

use flags::EvalFlags;
use inferbench_eval::gsm8k;

use super::ExitStatus;

/// `inferbench eval`: the eval library's flags and the CLI's `--tls-ca` / `--insecure` (the open
/// issue's rule for new flags), given after the task (`eval gsm8k --tls-ca FILE`).
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The task and its flags.
    #[command(flatten)]
    pub flags: EvalFlags,
    /// PEM file of extra trusted root certificates for an https:// --base-url (a private CA),
    /// added to the built-in Mozilla roots: the eval's requests and its /v1/models lookups.
    #[arg(long, value_name = "FILE", global = true, help_heading = "TLS")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// Skip the https:// server's certificate verification (a test server only; a warning
    /// says so).
    #[arg(long, global = true, conflicts_with = "tls_ca", help_heading = "TLS")]
    pub insecure: bool,
}

/// Runs the subcommand: 0 when every score reaches the threshold (or `--no-threshold`), 1
/// below it or when no request was answered, 3 when the server was unreachable, 130
/// interrupted.
pub fn run(args: EvalArgs) -> anyhow::Result<ExitStatus> {
    let EvalArgs {
        flags,
        tls_ca,
        insecure,
    } = args;
    let (mut opts, threshold) = flags.options()?;
    opts.tls = super::tls_args::TlsArgs { tls_ca, insecure }.options();
    // More requests in flight than this process can hold: refused before the first (exit 2).
    crate::limits::refuse_beyond(Some(crate::limits::Need {
        flag: "--concurrency",
        streams: opts.concurrency as u64,
        requests: 0,
        per_stream: 1,
        request_bytes: 0,
        prompt_bytes: 0,
        uncapped: false,
    }))?;
    let rt = super::runtime()?;
    // Without --model, the server's first (as `bench`; trial 24).
    rt.block_on(flags::served_model(&mut opts))?;
    rt.block_on(async {
        let cancel = super::shutdown_token("inferbench eval: interrupted; scoring what finished");
        let samples = gsm8k::run(&opts, &cancel).await?;
        flags.finish(&opts, &samples, threshold).await
    })
}
