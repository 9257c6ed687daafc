//! `inferbench eval gsm8k`: accuracy of a served model on GSM8K with InferenceX's prompt and
//! scoring (`inferbench_eval::gsm8k`); per-sample JSONL and a results JSON; exits 1 when a score
//! is below the model's threshold (unless `--no-threshold`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use inferbench_client::Backend;
use inferbench_eval::gsm8k::{self, EvalOptions};

/// Flags of `inferbench eval`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    task: Task,
}

#[derive(Debug, clap::Subcommand)]
enum Task {
    /// GSM8K (1,319 test problems), 5-shot, greedy, strict and flexible exact match.
    Gsm8k(Gsm8kArgs),
}

#[derive(Debug, clap::Args)]
struct Gsm8kArgs {
    /// Server root.
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    base_url: String,
    /// Model name sent in requests.
    #[arg(long)]
    model: String,
    /// openai-chat (default; the 5-shot text as one user message, as InferenceX's lm-eval run
    /// with --apply_chat_template) or openai (completions).
    #[arg(long, default_value = "openai-chat")]
    backend: String,
    /// Directory holding test.jsonl and train.jsonl (openai/gsm8k `main`). Default: the
    /// cache (~/.cache/inferbench/gsm8k), downloaded there once from OpenAI's
    /// grade-school-math repository (sha256-checked).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Only the first N test problems.
    #[arg(long)]
    limit: Option<usize>,
    /// Worked examples per prompt.
    #[arg(long, default_value_t = 5)]
    num_fewshot: usize,
    /// Requests in flight.
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Output tokens per answer. Default: InferenceX's budget from --max-model-len
    /// (context − 4096 above 4096, else half; at most 16384), or 16384 without it.
    #[arg(long)]
    max_tokens: Option<u32>,
    /// The served context length, for the default --max-tokens.
    #[arg(long)]
    max_model_len: Option<u32>,
    /// Per-request timeout, seconds (lm-eval's 1800).
    #[arg(long, default_value_t = 1800.0)]
    request_timeout: f64,
    /// Model prefix for the threshold (dsr1, gptoss, qwen3.5, …); unknown or absent: 0.90.
    #[arg(long)]
    model_prefix: Option<String>,
    /// Pass mark instead of the model's threshold (0–1).
    #[arg(long, conflicts_with = "no_threshold")]
    threshold: Option<f64>,
    /// Report the scores but never fail on them.
    #[arg(long)]
    no_threshold: bool,
    /// Where samples_gsm8k.jsonl and results_gsm8k.json go.
    #[arg(long, default_value = "results/eval")]
    result_dir: PathBuf,
}

/// Runs the subcommand: 0 when every score reaches the threshold (or `--no-threshold`), 1
/// below it.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let Task::Gsm8k(a) = args.task;
    let backend = Backend::parse(&a.backend)
        .with_context(|| format!("--backend {}: openai or openai-chat", a.backend))?;
    anyhow::ensure!(a.concurrency >= 1, "--concurrency must be ≥ 1");
    anyhow::ensure!(
        a.limit != Some(0),
        "--limit must be ≥ 1 (omit it for all 1,319 problems)"
    );
    anyhow::ensure!(a.max_tokens != Some(0), "--max-tokens must be ≥ 1");
    let threshold = a
        .threshold
        .unwrap_or_else(|| gsm8k::threshold(a.model_prefix.as_deref()));
    anyhow::ensure!(
        (0.0..=1.0).contains(&threshold),
        "--threshold {threshold}: a fraction 0–1"
    );
    let opts = EvalOptions {
        base_url: a.base_url,
        model: a.model,
        backend,
        data_dir: gsm8k::resolve_data_dir(
            a.data_dir.as_deref(),
            &gsm8k::cache_dir(),
            &gsm8k::source_url(),
        )?,
        limit: a.limit,
        num_fewshot: a.num_fewshot,
        concurrency: a.concurrency,
        max_tokens: a
            .max_tokens
            .unwrap_or_else(|| gsm8k::default_max_tokens(a.max_model_len)),
        request_timeout: Duration::try_from_secs_f64(a.request_timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .context("--request-timeout: a positive number of seconds")?,
    };
    let rt = tokio::runtime::Runtime::new()?;
    let samples = rt.block_on(async {
        let cancel = super::shutdown_token("inferbench eval: interrupted; scoring what finished");
        gsm8k::run(&opts, &cancel).await
    })?;
    let w = gsm8k::write_outputs(&a.result_dir, &opts, &samples, threshold)
        .with_context(|| format!("writing results into {}", a.result_dir.display()))?;
    println!("gsm8k: {}", w.scores.line());
    eprintln!("wrote {} and {}", w.samples.display(), w.results.display());
    if w.scores.cancelled > 0 {
        eprintln!(
            "gsm8k: interrupted: {} of {} problems answered; the results file says `interrupted: true` and `ingest` does not store it",
            w.scores.n,
            w.scores.n + w.scores.cancelled
        );
        return Ok(130);
    }
    if w.scores.all_failed() {
        let first = samples
            .iter()
            .find_map(|s| s.error.clone())
            .unwrap_or_default();
        eprintln!("gsm8k: every request failed, nothing was measured; first: {first}");
        return Ok(1);
    }
    if !w.scores.passes(threshold) && !a.no_threshold {
        eprintln!("gsm8k: below the threshold {threshold:.2} (pass --no-threshold to only report)");
        return Ok(1);
    }
    Ok(0)
}
