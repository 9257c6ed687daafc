//! The client features `sweep` and `job` pass to every point's requests (issue 41: InferenceX's
//! recipes set them in their benchmark scripts), as `bench` and `replay` take them. Flags of the
//! CLI (the open issue's rule for new flags); the values travel in the runner's
//! [`RunFlags::client`] (a [`ClientFeatures`]), so Slurm tasks and GitHub rows get them through
//! `run-options.json` and `job.json` records them.

use crate::cmd::run_flags::RunFlags;
use inferbench_core::artifacts::ClientFeatures;

/// `--header-template`, `--dp-rank-roundrobin`, `--allow-empty-content`, `--backend`,
/// `--tls-ca` and `--insecure` of `sweep` and `job`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ClientArgs {
    /// Per-request header 'NAME: VALUE' (repeatable) on every point's requests, whose value may
    /// hold {i}, the request's send index within the point (every request sent, warmups
    /// included, from 0), or {i%N}, that index modulo N.
    #[arg(
        long = "header-template",
        value_name = "'NAME: VALUE'",
        help_heading = "Requests"
    )]
    pub header_templates: Vec<String>,
    /// Send `X-data-parallel-rank: i mod N` on each point's request i (warmups included, from
    /// 0): vLLM's N data-parallel ranks round-robin, bypassing its load balancer.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Requests")]
    pub dp_rank_roundrobin: Option<u64>,
    /// Let the first content chunk end TTFT even when its text is empty (TRT-LLM streams that
    /// open with an empty content chunk). Recorded in each point's summary and job.json.
    #[arg(long, help_heading = "Requests")]
    pub allow_empty_content: bool,
    /// API of fixed-sequence points: openai (/v1/completions), openai-chat
    /// (/v1/chat/completions) or openai-responses (/v1/responses); with --endpoint left at its
    /// default the backend's own endpoint is used. Agentic rows always replay chat.
    #[arg(long, value_name = "BACKEND", value_parser = crate::cmd::bench_flags::parse_backend, help_heading = "Requests")]
    pub backend: Option<inferbench_client::Backend>,
    /// How an https:// server is verified (`bench`'s flags): every point's requests, the
    /// readiness probes, `/metrics` scrapes and evals alike.
    #[command(flatten)]
    pub tls: super::tls_args::TlsArgs,
}

impl ClientArgs {
    /// The flags as the runner carries them.
    pub fn features(&self) -> ClientFeatures {
        ClientFeatures {
            header_templates: self.header_templates.clone(),
            dp_rank_roundrobin: self.dp_rank_roundrobin,
            allow_empty_content: self.allow_empty_content,
            backend: self.backend.map(|b| b.name().to_string()),
            tls_ca: self.tls.tls_ca.clone(),
            insecure: self.tls.insecure,
        }
    }

    /// Sets `run.client` from these flags when any is given (a `job --options-file`'s own
    /// settings stay otherwise).
    pub fn apply(&self, run: &mut RunFlags) {
        // The warning `--insecure` earns, once.
        let _ = self.tls.options();
        let f = self.features();
        if !f.is_default() {
            run.client = f;
        }
    }
}
