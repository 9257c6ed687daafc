//! The `eval` subcommand: its flags ([`EvalFlags`], `--help` text written once), their
//! conversion into [`EvalOptions`] ([`EvalFlags::options`]), and the results written and
//! judged ([`EvalFlags::finish`]). [`super::run`] runs the eval between the two under its
//! shutdown token.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use inferbench_eval::EvalBackend;

use crate::cmd::ExitStatus;
use inferbench_eval::gsm8k::{self, EvalOptions};

/// Flags of `inferbench eval`.
#[derive(Debug, clap::Args)]
pub struct EvalFlags {
    #[command(subcommand)]
    task: Task,
}

/// The eval to run.
#[derive(Debug, clap::Subcommand)]
enum Task {
    /// GSM8K (1,319 test problems), 5-shot, greedy, strict and flexible exact match.
    Gsm8k(Gsm8kArgs),
}

// Flags of `inferbench eval gsm8k`.
#[derive(Debug, clap::Args)]
struct Gsm8kArgs {
    /// `--base-url`, `--host`, `--port`.
    #[command(flatten)]
    server: inferbench_client::models::ServerFlags,
    /// Model name sent in requests. Default: the first model the server's /v1/models lists,
    /// as `bench` picks it.
    #[arg(long)]
    model: Option<String>,
    /// openai-chat (default; the 5-shot text as one user message, as InferenceX's lm-eval run
    /// with --apply_chat_template) or openai (completions).
    #[arg(long, value_enum, default_value_t = EvalBackend::OpenaiChat)]
    backend: EvalBackend,
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
    /// Seconds without a byte before a request fails (`bench`'s default, 600).
    #[arg(long, default_value_t = 600.0)]
    idle_timeout: f64,
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

impl EvalFlags {
    /// The eval's options and pass mark, checked (`--backend`, counts ≥ 1, a threshold in
    /// 0–1), with the GSM8K data resolved (the cache, downloaded once, unless `--data-dir`).
    /// Without `--model` the options' model is empty: [`served_model`] names it.
    pub fn options(&self) -> anyhow::Result<(EvalOptions, f64)> {
        options(self)
    }

    /// `--result-dir`: where the samples, results and `meta_env.json` are written.
    pub fn result_dir(&self) -> &std::path::Path {
        let Task::Gsm8k(a) = &self.task;
        &a.result_dir
    }

    /// Writes the samples and results into `--result-dir`, prints the scores (stdout) and what
    /// went wrong (stderr). Returns [`ExitStatus::Ok`] when every score reaches `threshold`
    /// (or `--no-threshold`), [`ExitStatus::Failed`] below it, [`ExitStatus::Interrupted`]
    /// when cut short. When every request failed nothing is written: [`ExitStatus::Unreachable`]
    /// for a server that could not be reached, else [`ExitStatus::Failed`] with the reason (a
    /// wrong `--model` named with the ones the server lists).
    pub async fn finish(
        &self,
        opts: &EvalOptions,
        samples: &[gsm8k::Sample],
        threshold: f64,
    ) -> anyhow::Result<ExitStatus> {
        finish(self, opts, samples, threshold).await
    }
}

/// Fills in the model of `opts` when `--model` was not given (it is empty): the first model
/// the server's /v1/models lists, as `bench` picks it, named on stderr. Errors as
/// [`inferbench_client::models::served_model`]'s: a server that cannot be reached ends the
/// eval with exit status 3 before anything is sent or written.
pub async fn served_model(opts: &mut EvalOptions) -> anyhow::Result<()> {
    if opts.model.trim().is_empty() {
        opts.model = inferbench_client::models::served_model(&opts.base_url, &opts.reach()).await?;
        errln!(
            "gsm8k: {}",
            inferbench_client::models::served_model_note(&opts.model)
        );
    }
    Ok(())
}

/// Checks, before anything is sent, that `--result-dir` could be written at the end (issue 39
/// §8), without creating it (a run that writes nothing leaves no directory behind): its
/// nearest existing ancestor must be a directory that takes a new file, and no dangling link
/// may be on its way ([`inferbench_loadgen::output::dir_uncreatable`]: issue 39, fresh
/// tester's finding 2, a link to a folder not there sent every request, then "File exists").
/// Errors: `--result-dir DIR: why`.
fn check_result_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    // The files it will replace there must be regular files (issue 39 §1).
    for name in super::EVAL_OUTPUT_FILES {
        if let Some(why) = gsm8k::not_regular(&dir.join(name)) {
            anyhow::bail!("--result-dir {}: {name}: {why}", dir.display());
        }
    }
    match inferbench_loadgen::output::dir_uncreatable(dir) {
        None => Ok(()),
        Some(why) => anyhow::bail!("--result-dir {}: {why}", dir.display()),
    }
}

/// [`EvalFlags::options`].
fn options(args: &EvalFlags) -> anyhow::Result<(EvalOptions, f64)> {
    let Task::Gsm8k(a) = &args.task;
    let backend = a.backend.backend();
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
    check_result_dir(&a.result_dir)?;
    let base_url = a.server.url();
    // A bad URL is said before the data is read or anything sent (as `bench` says it).
    inferbench_client::models::check_base_url(&base_url, backend.default_endpoint())
        .map_err(|reason| anyhow::anyhow!("--base-url: {reason}"))?;
    let opts = EvalOptions {
        base_url,
        // Empty without --model: the binary asks the server ([`served_model`]).
        model: a.model.clone().unwrap_or_default(),
        backend,
        data_dir: gsm8k::resolve_data_dir(
            a.data_dir.as_deref(),
            &gsm8k::cache_dir(),
            &gsm8k::source_url(),
            "--data-dir",
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
        idle_timeout: Duration::try_from_secs_f64(a.idle_timeout)
            .ok()
            .filter(|d| !d.is_zero())
            .context("--idle-timeout: a positive number of seconds")?,
        // `--tls-ca` / `--insecure` are the CLI's flags, set after this.
        tls: Default::default(),
    };
    Ok((opts, threshold))
}

/// When no request of `samples` was answered: the exit status and why, in one line — cut short
/// before any answer ([`ExitStatus::Interrupted`]), the server unreachable (every failure a
/// connect error: [`ExitStatus::Unreachable`]), a 404 explained by the server's /v1/models (a
/// wrong --model), else the first error ([`ExitStatus::Failed`]). `None` when some request was
/// answered.
async fn nothing_answered(
    opts: &EvalOptions,
    samples: &[gsm8k::Sample],
) -> Option<(ExitStatus, String)> {
    let failed: Vec<&gsm8k::Sample> = samples.iter().filter(|s| !s.cancelled).collect();
    if samples.is_empty() || failed.iter().any(|s| s.error.is_none()) {
        return None;
    }
    // Cut short before any answer (trial 23: Ctrl-C then wrote 0 problems over the results).
    if failed.is_empty() {
        return Some((
            ExitStatus::Interrupted,
            "interrupted before any problem was answered".into(),
        ));
    }
    let first = failed
        .iter()
        .find_map(|s| s.error.clone())
        .unwrap_or_default();
    let connect = inferbench_core::ErrorClass::Connect;
    if failed.iter().all(|s| s.error_class == Some(connect)) {
        return Some((
            ExitStatus::Unreachable,
            format!(
                "server unreachable at {}: {first} (is the server running and listening there? \
                 check --base-url, or --host and --port)",
                opts.base_url
            ),
        ));
    }
    let url = inferbench_client::join_url(&opts.base_url, opts.backend.default_endpoint());
    let why = inferbench_client::models::explain_not_found(
        &opts.base_url,
        &opts.model,
        &url,
        &first,
        &opts.reach(),
    )
    .await
    .unwrap_or_else(|| format!("every request failed; first: {first}"));
    Some((ExitStatus::Failed, why))
}

/// [`EvalFlags::finish`].
async fn finish(
    args: &EvalFlags,
    opts: &EvalOptions,
    samples: &[gsm8k::Sample],
    threshold: f64,
) -> anyhow::Result<ExitStatus> {
    let Task::Gsm8k(a) = &args.task;
    // Nothing answered: no scores of 0 over the last results (trial 22: an unreachable server
    // or a wrong --model printed `strict-match 0.0000` and overwrote them).
    if let Some((status, why)) = nothing_answered(opts, samples).await {
        // The directory is named only when there is something in it to keep (trial 26: a
        // directory that did not exist was "kept").
        let kept = if a.result_dir.is_dir() {
            format!(" (what {} holds is kept)", a.result_dir.display())
        } else {
            String::new()
        };
        errln!("gsm8k: {why}; nothing was measured, nothing written{kept}");
        return Ok(status);
    }
    // An earlier eval's files there are replaced: said, as `bench` would have taken another
    // name (trial 28: a second `eval gsm8k` silently replaced the first's).
    let replaced = a.result_dir.join(gsm8k::RESULTS_FILE).is_file();
    // A write that fails after the eval ran fails it with exit 1 (issue 39 §6: exit 2).
    let w = match gsm8k::write_outputs(&a.result_dir, opts, samples, threshold) {
        Ok(w) => w,
        Err(e) => {
            errln!(
                "error: writing results into {}: {e} (the eval fails, exit 1)",
                a.result_dir.display()
            );
            return Ok(ExitStatus::Failed);
        }
    };
    // What `ingest` reads an eval set's identity from (trial 22: `ingest results/eval` found
    // "not a result file"): the model and concurrency known here; the rest (`--set hw=…
    // framework=…`) at ingest, as for any import that lacks them.
    let meta = serde_json::json!({"model": opts.model, "conc": opts.concurrency});
    let meta_path = a.result_dir.join("meta_env.json");
    if let Err(e) =
        gsm8k::write_regular(&meta_path, serde_json::to_string_pretty(&meta)?.as_bytes())
    {
        errln!(
            "error: writing {}: {e} (the eval fails, exit 1)",
            meta_path.display()
        );
        return Ok(ExitStatus::Failed);
    }
    outln!(
        "gsm8k: {} at concurrency {} (--concurrency; the eval's conc where it is stored)",
        w.scores.line(),
        opts.concurrency
    );
    // Every file written, named (trial 23: meta_env.json went unsaid).
    errln!(
        "wrote {}, {} and {}{} (`inferbench ingest {} --set hw=… --set framework=… --set \
         precision=…` stores the score)",
        w.samples.display(),
        w.results.display(),
        meta_path.display(),
        if replaced {
            ", replacing the earlier eval's files there (another --result-dir keeps both)"
        } else {
            ""
        },
        a.result_dir.display()
    );
    if w.scores.cancelled > 0 {
        errln!(
            "gsm8k: interrupted: {} of {} problems answered; the results file says `interrupted: true` and `ingest` does not store it",
            w.scores.n,
            w.scores.n + w.scores.cancelled
        );
        return Ok(ExitStatus::Interrupted);
    }
    if !w.scores.passes(threshold) && !a.no_threshold {
        errln!("gsm8k: below the threshold {threshold:.2} (pass --no-threshold to only report)");
        return Ok(ExitStatus::Failed);
    }
    Ok(ExitStatus::Ok)
}
