//! Accuracy evals inside sweeps (producer reference §2.5, §5.1 step 8, §10): a row with
//! `run-eval: true` gets a GSM8K eval on the engine that served its throughput points, after
//! them; an `eval-only: true` row (the changelog's `evals` / `agentic_evals` buckets, `matrix
//! --evals-only`) gets only the eval. Each eval writes InferenceX's eval artifact,
//! `<out>/eval_<EXP_NAME>_<RESULT_FILENAME>/` with `meta_env.json`, `results_gsm8k.json` and
//! `samples_gsm8k.jsonl` (plus our `job.json` and `status.json`), which `inferbench ingest`
//! stores in the `evals` table and InferenceX's `collect_eval_results.py` reads as its own.
//!
//! Concurrency: the row's `eval-conc` (multinode rows), else its highest concurrency
//! (InferenceX's `EVAL_CONCURRENT_REQUESTS|CONC`). Output budget: InferenceX's context − 4096
//! from the row's `max-model-len` ([`inferbench_eval::gsm8k::default_max_tokens`]). Threshold:
//! checked for eval-only rows only, as InferenceX's workflow runs `validate_scores.py` only for
//! eval-only jobs; for a throughput row's eval the score is reported, never a failure.

use inferbench_core::point::PointConfig;
use std::path::{Path, PathBuf};
use std::time::Duration;

use inferbench_client::Backend;
use inferbench_eval::gsm8k::{self, EvalOptions, Scores};
use tokio_util::sync::CancellationToken;

use crate::artifacts::{write_json_atomic, FailureClass};
use crate::jobspec::JobSpec;

/// How sweeps run evals.
#[derive(Debug, Clone)]
pub struct EvalSettings {
    /// Run the evals rows ask for (`sweep --no-evals` turns them off: eval-only rows are then
    /// not run at all).
    pub enabled: bool,
    /// GSM8K `test.jsonl` / `train.jsonl` (`--eval-data-dir`); without it the download cache
    /// ([`inferbench_eval::gsm8k::resolve_data_dir`]), fetched once from `source_url`; an eval
    /// fails with class `eval_failed` naming the flag when that fails.
    pub data_dir: Option<PathBuf>,
    /// Where GSM8K is downloaded from without `data_dir` (default
    /// [`inferbench_eval::gsm8k::source_url`]).
    pub source_url: String,
    /// Its download cache (default [`inferbench_eval::gsm8k::cache_dir`]).
    pub cache_dir: PathBuf,
    /// Only the first N test problems (`--eval-limit`, InferenceX's `EVAL_LIMIT`).
    pub limit: Option<usize>,
    /// Output tokens per answer (`--eval-max-tokens`; default from the row's context length).
    pub max_tokens: Option<u32>,
    /// Requests in flight (`--eval-concurrency`; default: the row's eval concurrency).
    pub concurrency: Option<usize>,
    /// Chat (InferenceX's lm-eval `local-chat-completions` with the chat template) or
    /// completions.
    pub backend: Backend,
    /// Per-request timeout (lm-eval's 1,800 s).
    pub request_timeout: Duration,
    /// Fail eval-only rows whose score is below the model's threshold.
    pub check_threshold: bool,
}

impl Default for EvalSettings {
    fn default() -> Self {
        EvalSettings {
            enabled: true,
            data_dir: None,
            source_url: gsm8k::source_url(),
            cache_dir: gsm8k::cache_dir(),
            limit: None,
            max_tokens: None,
            concurrency: None,
            backend: Backend::OpenAiChat,
            request_timeout: Duration::from_secs(1800),
            check_threshold: true,
        }
    }
}

/// Whether `spec` asks for an eval (`run-eval` or `eval-only`).
pub fn wants_eval(spec: &JobSpec) -> bool {
    spec.row.run_eval.unwrap_or(false) || eval_only(spec)
}

/// Whether `spec` is an eval-only row (no throughput points).
pub fn eval_only(spec: &JobSpec) -> bool {
    spec.row.eval_only.unwrap_or(false)
}

/// The concurrency an eval of `spec` runs at: `eval-conc`, else the row's highest.
pub fn eval_conc(spec: &JobSpec) -> u32 {
    spec.row
        .eval_conc
        .unwrap_or_else(|| spec.row.conc.values().into_iter().max().unwrap_or(1))
}

/// `<out>/eval_<EXP_NAME>_<RESULT_FILENAME>` (InferenceX's eval artifact name, §3.4).
pub fn eval_dir(out: &Path, spec: &JobSpec, result_filename: &str) -> PathBuf {
    out.join(format!("eval_{}_{}", spec.row.exp_name, result_filename))
}

/// What a finished eval found.
#[derive(Debug, Clone)]
pub struct EvalRun {
    /// The scores.
    pub scores: Scores,
    /// The model's pass mark.
    pub threshold: f64,
    /// Stopped by Ctrl-C / SIGTERM before every problem was answered (what finished is scored).
    pub interrupted: bool,
}

/// Runs GSM8K for `spec` against `base_url` and writes the eval artifact into `dir`
/// (`meta_env.json` from `point`, the eval's point at its concurrency:
/// [`PointConfig::eval_meta_env`]); an `https://` server is verified as `tls` says (the
/// sweep's `--tls-ca` / `--insecure`).
///
/// Errors (class and cause): `eval_failed` when the data is missing or unreadable, the client
/// cannot be built, no request succeeded, or a file cannot be written.
#[allow(clippy::too_many_arguments)]
pub async fn run_eval(
    spec: &JobSpec,
    point: &PointConfig,
    base_url: &str,
    dir: &Path,
    settings: &EvalSettings,
    tls: &inferbench_client::tls::TlsOptions,
    cancel: &CancellationToken,
) -> Result<EvalRun, (FailureClass, String)> {
    let fail = |m: String| (FailureClass::EvalFailed, m);
    std::fs::create_dir_all(dir).map_err(|e| fail(format!("{}: {e}", dir.display())))?;
    write_json_atomic(&dir.join("meta_env.json"), &point.eval_meta_env())
        .map_err(|e| fail(format!("{}: writing meta_env.json: {e}", dir.display())))?;
    let (given, cache, source) = (
        settings.data_dir.clone(),
        settings.cache_dir.clone(),
        settings.source_url.clone(),
    );
    let data_dir = tokio::task::spawn_blocking(move || {
        gsm8k::resolve_data_dir(given.as_deref(), &cache, &source, "--eval-data-dir")
    })
    .await
    .map_err(|e| fail(format!("GSM8K data: {e}")))?
    // `--no-evals` helps a row with throughput points; an eval-only row would then not run at
    // all (trial 17: the hint on an `--evals-only` row).
    .map_err(|e| {
        fail(if eval_only(spec) {
            e.to_string()
        } else {
            format!("{e} (or --no-evals to run throughput points only)")
        })
    })?;
    let opts = EvalOptions {
        base_url: base_url.to_string(),
        model: spec.row.model.clone(),
        backend: settings.backend,
        data_dir,
        limit: settings.limit,
        num_fewshot: 5,
        concurrency: settings.concurrency.unwrap_or(point.conc.max(1) as usize),
        max_tokens: settings
            .max_tokens
            .unwrap_or_else(|| gsm8k::default_max_tokens(spec.row.max_model_len)),
        request_timeout: settings.request_timeout,
        idle_timeout: inferbench_client::http::DEFAULT_IDLE_TIMEOUT,
        tls: tls.clone(),
    };
    let samples = gsm8k::run(&opts, cancel)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let threshold = gsm8k::threshold(Some(&spec.row.model_prefix));
    let written = gsm8k::write_outputs(dir, &opts, &samples, threshold)
        .map_err(|e| fail(format!("{}: writing results: {e}", dir.display())))?;
    let scores = written.scores;
    if scores.n > 0 && scores.failed == scores.n && !cancel.is_cancelled() {
        let first = samples
            .iter()
            .find_map(|s| s.error.clone())
            .unwrap_or_default();
        return Err(fail(format!(
            "all {} eval requests failed; first: {first}",
            scores.n
        )));
    }
    Ok(EvalRun {
        scores,
        threshold,
        interrupted: cancel.is_cancelled(),
    })
}
