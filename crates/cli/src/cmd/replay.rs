//! `inferbench replay`: AgentX trace replay (flags, loading and the replay itself:
//! `inferbench_loadgen::agentic::flags`), and `inferbench agentx-traces`: a synthetic corpus
//! (`inferbench_workload::agentx::synthetic`).

use std::path::PathBuf;

use anyhow::Context as _;
use inferbench_loadgen::agentic::flags::ReplayFlags;
use inferbench_workload::agentx::synthetic::{self, SHAPES};

use super::ExitStatus;

/// Flags of `inferbench agentx-traces`.
#[derive(Debug, clap::Args)]
pub struct TracesArgs {
    /// Corpus shape: quickstart, 062126 (≈ 393 sessions, 99k requests) or 062126-256k.
    #[arg(long, default_value = "062126-256k", value_parser = SHAPES)]
    pub shape: String,
    /// Sessions (default: the shape's).
    #[arg(long)]
    pub traces: Option<usize>,
    /// Seed.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Output JSONL file (one trace per line, the corpus's traces.jsonl layout).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
}

/// `inferbench agentx-traces`: writes a synthetic AgentX corpus and prints its shape.
pub fn run_traces(args: TracesArgs) -> anyhow::Result<ExitStatus> {
    let traces = synthetic::shaped(&args.shape, args.traces, args.seed);
    let requests: usize = traces.iter().map(|t| t.request_count()).sum();
    // Said before a large write (the full-size shapes are hundreds of MB): the exact size.
    let est = synthetic::jsonl_len(&traces).context("sizing the corpus")?;
    eprintln!(
        "writing {} sessions ({requests} requests, {}) to {}{}",
        traces.len(),
        synthetic::human_size(est),
        args.out.display(),
        if est > 100_000_000 {
            " (`--shape quickstart` or `--traces N` writes a smaller corpus)"
        } else {
            ""
        }
    );
    let f = std::fs::File::create(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    synthetic::write_jsonl(&traces, std::io::BufWriter::new(f))
        .with_context(|| format!("writing {}", args.out.display()))?;
    let bytes = std::fs::metadata(&args.out).map(|m| m.len()).unwrap_or(0);
    println!(
        "wrote {}: {}, {}",
        args.out.display(),
        synthetic::describe(&traces),
        synthetic::human_size(bytes)
    );
    Ok(ExitStatus::Ok)
}

/// Runs `inferbench replay` under the shutdown token.
pub fn run(flags: ReplayFlags) -> anyhow::Result<ExitStatus> {
    let prepared = flags.prepare()?;
    let rt = super::runtime()?;
    let code = rt.block_on(async move {
        let cancel = super::shutdown_token(
            "inferbench: interrupted; finishing up and saving finished requests",
        );
        flags.run(prepared, cancel).await
    })?;
    Ok(ExitStatus::from_code(code))
}
