//! [`BenchOptions`]: every `inferbench bench` flag as a typed field. `Default` gives the
//! InferenceX / vLLM `bench serve` defaults (reference/inferencex-producer.md §6, issue #2).

use std::path::PathBuf;
use std::time::Duration;

use inferbench_client::Backend;
use inferbench_core::summary::JobIdentity;
use serde_json::{Map, Value};

/// Which prompts to send (`--dataset-name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DatasetName {
    /// Random token prompts of exact lengths (`--random-*`).
    #[default]
    Random,
    /// JSON lines with a `prompt` (or `text`) field per line (`--dataset-path`).
    Jsonl,
    /// ShareGPT conversations (`--dataset-path`); all turns.
    Sharegpt,
}

impl DatasetName {
    /// Parses `random`, `jsonl` or `sharegpt`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "random" => Some(Self::Random),
            "jsonl" | "custom" => Some(Self::Jsonl),
            "sharegpt" => Some(Self::Sharegpt),
            _ => None,
        }
    }
}

/// How `--random-range-ratio` r widens lengths around L.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RangeSemantics {
    /// InferenceX / SGLang: uniform in [r·L, L] (DESIGN.md §5). The default.
    #[default]
    InferenceX,
    /// vLLM: uniform in [(1−r)·L, (1+r)·L].
    Vllm,
}

/// How live progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProgressMode {
    /// A bar on a terminal (stderr), plain lines otherwise.
    #[default]
    Auto,
    /// Always the indicatif bar.
    Bar,
    /// Plain lines on stderr every 5 s.
    Plain,
    /// Nothing.
    Off,
}

/// All options of one benchmark point. Field docs name the flag; units are in the names.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    // --- target
    /// `--backend` (default `openai`, the completions API).
    pub backend: Backend,
    /// `--base-url` (default `http://127.0.0.1:8000`).
    pub base_url: String,
    /// `--endpoint`; `None` = `/v1/completions` or `/v1/chat/completions` by backend.
    pub endpoint: Option<String>,
    /// `--model`: the `model` field sent and `model_id` in results.
    pub model: String,
    /// `--api-key` / `OPENAI_API_KEY`. Never written anywhere.
    pub api_key: Option<String>,
    /// `--header K:V` (repeatable).
    pub headers: Vec<(String, String)>,
    /// `--extra-body JSON`: merged into every request body.
    pub extra_body: Option<Map<String, Value>>,
    // --- workload
    /// `--dataset-name` (default random).
    pub dataset_name: DatasetName,
    /// `--dataset-path` for jsonl/sharegpt.
    pub dataset_path: Option<PathBuf>,
    /// `--random-input-len`, tokens (default 1024, vLLM).
    pub random_input_len: u32,
    /// `--random-output-len`, tokens (default 128, vLLM).
    pub random_output_len: u32,
    /// `--random-range-ratio`; `None` = fixed lengths (1.0 under InferenceX semantics, 0.0
    /// under vLLM's), so the SGLang pitfall of r = 0 meaning [0, L] cannot happen by default
    /// (peers.md bug 28). InferenceX passes 0.8 or 1.0 explicitly.
    pub random_range_ratio: Option<f64>,
    /// `--range-semantics inferencex|vllm`.
    pub range_semantics: RangeSemantics,
    /// `--random-prefix-len`, tokens shared by every prompt (default 0).
    pub random_prefix_len: u32,
    /// `--output-len`: overrides the dataset's output lengths (jsonl/sharegpt), tokens.
    pub output_len: Option<u32>,
    /// `--tokenizer`: `o200k_base` (default, embedded), `cl100k_base` or a `tokenizer.json` path.
    pub tokenizer: String,
    /// `--ignore-eos`: ask the server to generate exactly max_tokens.
    pub ignore_eos: bool,
    /// `--seed` for prompts and arrivals (default 0). The same seed sends the same prompts, so
    /// a repeated run hits the server's prefix cache unless `cache_bust` is set.
    pub seed: u64,
    /// `--cache-bust`: a run-unique `[rid:…]` marker at the very start of every random prompt
    /// (before `--random-prefix-len`, counted inside the input length), so no KV-cache block of
    /// an earlier run is reused.
    pub cache_bust: bool,
    // --- load
    /// `--max-concurrency`: closed-loop cap on in-flight requests; `None` = unlimited.
    pub max_concurrency: Option<u32>,
    /// `--request-rate`, requests/s; `None` = inf (all arrivals at once, capped by concurrency).
    pub request_rate: Option<f64>,
    /// `--burstiness`: gamma shape of inter-arrival gaps (1 = Poisson; default 1).
    pub burstiness: f64,
    /// `--num-prompts`; `None` = 10 × max_concurrency (InferenceX), or 1000 without a cap (vLLM).
    pub num_prompts: Option<u64>,
    /// `--num-warmups`; `None` = 2 × max_concurrency (InferenceX), or 0 without a cap.
    pub num_warmups: Option<u64>,
    /// `--duration`: issue requests for this long instead of a fixed count (prompts cycle);
    /// in-flight requests then finish (they are not cut off).
    pub duration: Option<Duration>,
    /// `--idle-timeout`: fail a request after this long without a byte (default 600 s).
    pub idle_timeout: Duration,
    /// `--request-timeout`: fail a request not finished this long after sending; `None` = none.
    pub request_timeout: Option<Duration>,
    // --- output
    /// `--save-result`: write the vLLM-shaped result JSON.
    pub save_result: bool,
    /// `--result-dir` (default current directory).
    pub result_dir: Option<PathBuf>,
    /// `--result-filename`; default vLLM's `{backend}-{rate}qps[-concurrency{c}]-{model}-{date}.json`.
    pub result_filename: Option<String>,
    /// `--save-detailed`: add per-request `ttfts`, `itls`, `generated_texts`, `errors`.
    pub save_detailed: bool,
    /// `--save-requests PATH`: RequestRecord JSON lines, written as requests finish.
    pub save_requests: Option<PathBuf>,
    /// `--percentile-metrics` (default `ttft,tpot,itl,e2el`).
    pub percentile_metrics: Vec<String>,
    /// `--metric-percentiles` (default 90, 99, 99.9).
    pub metric_percentiles: Vec<f64>,
    /// `--goodput ttft:MS tpot:MS e2el:MS`.
    pub goodput: Vec<String>,
    /// `--max-error-rate`: exit code 1 when the failed fraction of profile requests exceeds it
    /// (default 0.05, InferenceX's gate).
    pub max_error_rate: f64,
    /// `--metadata KEY=VALUE` pairs copied into the result.
    pub metadata: Vec<(String, String)>,
    /// InferenceX job identity (flags or its environment contract): also write
    /// `agg_<RESULT_FILENAME>.json` into the result dir.
    pub job_identity: Option<JobIdentity>,
    /// Live progress display.
    pub progress: ProgressMode,
    /// Prompts prepared by the caller (sweeps reuse one prompt set across points); `None` =
    /// build them from the workload flags.
    pub prepared: Option<std::sync::Arc<crate::prompts::PreparedPrompts>>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            backend: Backend::OpenAiCompletions,
            base_url: "http://127.0.0.1:8000".into(),
            endpoint: None,
            model: String::new(),
            api_key: None,
            headers: Vec::new(),
            extra_body: None,
            dataset_name: DatasetName::Random,
            dataset_path: None,
            random_input_len: 1024,
            random_output_len: 128,
            random_range_ratio: None,
            range_semantics: RangeSemantics::InferenceX,
            random_prefix_len: 0,
            output_len: None,
            tokenizer: "o200k_base".into(),
            ignore_eos: false,
            seed: 0,
            cache_bust: false,
            max_concurrency: None,
            request_rate: None,
            burstiness: 1.0,
            num_prompts: None,
            num_warmups: None,
            duration: None,
            idle_timeout: inferbench_client::DEFAULT_IDLE_TIMEOUT,
            request_timeout: None,
            save_result: false,
            result_dir: None,
            result_filename: None,
            save_detailed: false,
            save_requests: None,
            percentile_metrics: vec!["ttft".into(), "tpot".into(), "itl".into(), "e2el".into()],
            metric_percentiles: vec![90.0, 99.0, 99.9],
            goodput: Vec::new(),
            max_error_rate: 0.05,
            metadata: Vec::new(),
            job_identity: None,
            progress: ProgressMode::Auto,
            prepared: None,
        }
    }
}

/// An invalid combination of options; the message names the flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {reason}")]
pub struct OptionError {
    /// The flag to fix (`--request-rate`, …).
    pub flag: &'static str,
    /// What is wrong.
    pub reason: String,
}

impl BenchOptions {
    /// Profile prompts to send: `--num-prompts`, else 10 × concurrency, else 1000.
    pub fn resolved_num_prompts(&self) -> u64 {
        self.num_prompts.unwrap_or(match self.max_concurrency {
            Some(c) => 10 * u64::from(c),
            None => 1000,
        })
    }

    /// Warmup requests: `--num-warmups`, else 2 × concurrency, else 0.
    pub fn resolved_num_warmups(&self) -> u64 {
        self.num_warmups
            .unwrap_or(self.max_concurrency.map_or(0, |c| 2 * u64::from(c)))
    }

    /// The range ratio in effect: `--random-range-ratio`, else the fixed-length value of the
    /// chosen semantics (1.0 InferenceX, 0.0 vLLM).
    pub fn resolved_range_ratio(&self) -> f64 {
        self.random_range_ratio
            .unwrap_or(match self.range_semantics {
                RangeSemantics::InferenceX => 1.0,
                RangeSemantics::Vllm => 0.0,
            })
    }

    /// Checks flag values and combinations.
    pub fn validate(&self) -> Result<(), OptionError> {
        let err = |flag, reason: &str| {
            Err(OptionError {
                flag,
                reason: reason.to_string(),
            })
        };
        if self.model.trim().is_empty() {
            return err("--model", "required (the model name the server serves)");
        }
        if let Some(r) = self.request_rate {
            if !(r.is_finite() && r > 0.0) {
                return err(
                    "--request-rate",
                    "must be a positive number of requests/s, or inf",
                );
            }
        }
        if !(self.burstiness.is_finite() && self.burstiness > 0.0) {
            return err(
                "--burstiness",
                "must be a positive gamma shape (1 = Poisson)",
            );
        }
        if self.max_concurrency == Some(0) {
            return err("--max-concurrency", "must be at least 1");
        }
        if !(0.0..=1.0).contains(&self.max_error_rate) {
            return err("--max-error-rate", "must be within [0, 1]");
        }
        let r = self.resolved_range_ratio();
        if !(r.is_finite() && r >= 0.0) {
            return err("--random-range-ratio", "must be ≥ 0");
        }
        match self.range_semantics {
            RangeSemantics::InferenceX if r > 1.0 => {
                return err(
                    "--random-range-ratio",
                    "must be within [0, 1] (InferenceX semantics)",
                );
            }
            RangeSemantics::Vllm if r >= 1.0 => {
                return err(
                    "--random-range-ratio",
                    "must be within [0, 1) (vLLM semantics)",
                );
            }
            _ => {}
        }
        if self.idle_timeout.is_zero() {
            return err("--idle-timeout", "must be positive");
        }
        if let Some(d) = self.duration {
            if d.is_zero() {
                return err("--duration", "must be positive");
            }
            if self.request_rate.is_none() && self.max_concurrency.is_none() {
                return err(
                    "--duration",
                    "needs --max-concurrency or a finite --request-rate (otherwise it would send unboundedly)",
                );
            }
        }
        if matches!(
            self.dataset_name,
            DatasetName::Jsonl | DatasetName::Sharegpt
        ) && self.dataset_path.is_none()
            && self.prepared.is_none()
        {
            return err(
                "--dataset-path",
                "required for --dataset-name jsonl|sharegpt",
            );
        }
        for q in &self.metric_percentiles {
            if !(0.0..=100.0).contains(q) {
                return err(
                    "--metric-percentiles",
                    "each percentile must be within [0, 100]",
                );
            }
        }
        if self.resolved_num_prompts() == 0 && self.duration.is_none() {
            return err("--num-prompts", "must be at least 1");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inferencex_defaults_follow_concurrency() {
        let o = BenchOptions {
            max_concurrency: Some(64),
            ..Default::default()
        };
        assert_eq!(o.resolved_num_prompts(), 640);
        assert_eq!(o.resolved_num_warmups(), 128);
        let o = BenchOptions::default();
        assert_eq!(o.resolved_num_prompts(), 1000);
        assert_eq!(o.resolved_num_warmups(), 0);
    }

    #[test]
    fn validation_names_the_flag() {
        let base = BenchOptions {
            model: "m".into(),
            ..Default::default()
        };
        assert_eq!(base.validate(), Ok(()));
        let e = BenchOptions {
            request_rate: Some(-1.0),
            ..base.clone()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.flag, "--request-rate");
        let e = BenchOptions {
            duration: Some(Duration::from_secs(1)),
            ..base.clone()
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.flag, "--duration");
        let e = BenchOptions {
            model: String::new(),
            ..base
        }
        .validate()
        .unwrap_err();
        assert_eq!(e.flag, "--model");
    }
}
