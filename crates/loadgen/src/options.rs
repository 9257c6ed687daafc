//! [`BenchOptions`]: every `inferbench bench` flag as a typed field. `Default` gives the
//! InferenceX / vLLM `bench serve` defaults (reference/inferencex-producer.md §6, issue #2).

use std::path::PathBuf;
use std::time::Duration;

pub use inferbench_telemetry::sampler::PowerMode;

use inferbench_client::{Backend, ClockSource, MaxTokensField};
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
    /// Parses `random`, `jsonl` (or vLLM's name for it, `custom`) or `sharegpt`.
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

impl RangeSemantics {
    /// Parses `inferencex` (or its twin `sglang`) or `vllm`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "inferencex" | "sglang" => Some(Self::InferenceX),
            "vllm" => Some(Self::Vllm),
            _ => None,
        }
    }

    /// The workload crate's twin of this choice.
    pub fn to_workload(self) -> inferbench_workload::RangeSemantics {
        match self {
            Self::InferenceX => inferbench_workload::RangeSemantics::InferenceX,
            Self::Vllm => inferbench_workload::RangeSemantics::Vllm,
        }
    }
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
    /// `--header-template 'NAME: VALUE'` and `--dp-rank-roundrobin N`: headers rendered per
    /// request from its send index ([`inferbench_client::headers`]).
    pub header_templates: Vec<inferbench_client::HeaderTemplate>,
    /// `--allow-empty-content`: the first content field ends TTFT even when empty.
    pub allow_empty_content: bool,
    /// HTTP proxy URL for the requests (`http_proxy` / `HTTP_PROXY`; `None` with
    /// `--no-proxy`); loopback targets and `no_proxy_hosts` are never proxied.
    pub proxy: Option<String>,
    /// `no_proxy` / `NO_PROXY`: hosts never proxied.
    pub no_proxy_hosts: Option<String>,
    /// How an `https://` target is verified (`--tls-ca FILE`, `--insecure`).
    pub tls: inferbench_client::tls::TlsOptions,
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
    /// `--tokenizer`: `o200k_base` (default, embedded), `cl100k_base`, a `tokenizer.json` path,
    /// or [`SERVER_TOKENIZER`] (`server`): fit prompts to the served model's own tokenizer
    /// through the server's `/tokenize` endpoint.
    pub tokenizer: String,
    /// `--ignore-eos`: ask the server to generate exactly max_tokens.
    pub ignore_eos: bool,
    /// `--max-tokens-field both|max_tokens|max_completion_tokens`; `None` = both for chat,
    /// `max_tokens` for completions.
    pub max_tokens_field: Option<MaxTokensField>,
    /// `--seed` for prompts and arrivals (default 0). The same seed sends the same prompts, so
    /// a repeated run hits the server's prefix cache unless `cache_bust` is set.
    pub seed: u64,
    /// `--cache-bust`: a run-unique `[rid:…]` marker at the very start of every random prompt
    /// (before `--random-prefix-len`, counted inside the input length), so no KV-cache block of
    /// an earlier run is reused.
    pub cache_bust: bool,
    /// Scrape the server's Prometheus `/metrics` (baseline, every `server_metrics_interval`,
    /// final) into `server_metrics.jsonl` and the summary (default on; `--no-server-metrics`).
    pub server_metrics: bool,
    /// `--server-metrics-interval`: time between scrapes (default 1 s).
    pub server_metrics_interval: Duration,
    /// Most bytes `server_metrics.jsonl` may hold (not a flag: the CLI derives it from the
    /// file-size limit, `ulimit -f`, and what the `--db` file leaves): the scrapes are thinned
    /// evenly to fit (the baseline and final kept), said in the run's notes; `None`: all.
    pub server_metrics_max_bytes: Option<u64>,
    /// `--power auto|off|nvml|nvidia-smi|amd-smi`: GPU power sampling into `power.csv` beside the
    /// result (needs a result directory); `auto` (default) uses what the machine has.
    pub power: PowerMode,
    /// `--power-interval`: time between power samples (default 1 s, as InferenceX).
    pub power_interval: Duration,
    /// `--require-power`: an invalid or missing power measurement fails the run (exit 1);
    /// otherwise it is recorded and the run stands (InferenceX `REQUIRE_POWER`).
    pub require_power: bool,
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
    /// Time bytes by the kernel's receive timestamps (default; `--no-rx-timestamps` times them
    /// when read: `inferbench_client::rxstamp`).
    pub rx_timestamps: bool,
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
    /// `--max-anomaly-rate`: exit code 1 when the fraction of successful profile requests with
    /// an anomaly (`inferbench.anomaly_rate`) exceeds it; `None` (default) = no gate.
    pub max_anomaly_rate: Option<f64>,
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
    /// Settings of the server the caller knows because it launched it (`launch.*` of the
    /// engine's matrix row: `inferbench_core::fingerprint::launch_settings`), hashed into the
    /// point's server fingerprint (`inferbench.server`) beside what the server reports of
    /// itself. Empty for `bench` (a server it did not launch).
    pub server_settings: Vec<(String, String)>,
    /// The caller rewrites this point in modelled time afterwards, at this `inferbench sim`
    /// time scale (quickstart, `sweep --sim`): a sim at that scale does not make the point
    /// invalid. Not a flag; `None` for `bench`.
    pub rescaled_at: Option<f64>,
    /// Where the run reads time (not a flag): [`ClockSource::System`] for every real run;
    /// tests pass [`ClockSource::Tokio`] under a paused runtime to run in virtual time.
    pub clock: ClockSource,
    /// Early stop within the point (`sweep --adaptive`, issue 43): the profile ends once the
    /// rule says its metrics are known, before the planned prompts; the result then says
    /// `inferbench.adaptive: true` and `inferbench.prompts_used`. Not a flag of `bench`;
    /// `None` (the default): every planned prompt is sent (InferenceX's fixed protocol).
    pub early_stop: Option<crate::early_stop::EarlyStop>,
    /// Most memory a dataset's prompts may take, bytes (`--dataset-path`; the CLI's memory
    /// budget less what the streams, records and the process itself need, issue 39 §2): a file
    /// whose prompts would take more is refused at load naming how many prompts fit, instead of
    /// aborting when an allocation fails. Not a flag; `None`: not bounded.
    pub prompt_memory: Option<u64>,
    /// The most records a `--duration` run keeps before it stops sending (issue 39): a
    /// closed loop sends as many requests as the server answers and keeps every record until
    /// its summary, so under an address-space limit the CLI derives from it how many records
    /// fit, and the run stops sending when its records (warmups included) reach that count,
    /// as at the end of its duration (requests in flight finish; the summary says why:
    /// `inferbench.stopped_reason`). Not a flag; `None` (no limit, or a count run): not
    /// bounded.
    pub record_bound: Option<RecordBound>,
}

/// How many records a `--duration` run may keep ([`BenchOptions::record_bound`]) and the
/// limit they come from, for the run's stop reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordBound {
    /// Records (warmups included) the run may keep; the profile sends at most this many less
    /// the warmups' (at least 1).
    pub records: u64,
    /// The address-space limit (`ulimit -v`, `RLIMIT_AS`) they were counted under, bytes.
    pub limit_bytes: u64,
}

impl RecordBound {
    /// The stop reason of a run that reached the bound after `sent` requests (warmups
    /// included): "stopped after N requests: the records kept would outgrow ulimit -v (X KiB)".
    pub fn reason(&self, sent: u64) -> String {
        format!(
            "stopped after {sent} requests: the records kept would outgrow ulimit -v ({} KiB)",
            self.limit_bytes >> 10
        )
    }
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
            header_templates: Vec::new(),
            allow_empty_content: false,
            proxy: None,
            no_proxy_hosts: None,
            tls: Default::default(),
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
            max_tokens_field: None,
            seed: 0,
            cache_bust: false,
            server_metrics: true,
            server_metrics_interval: Duration::from_secs(1),
            server_metrics_max_bytes: None,
            power: PowerMode::Auto,
            power_interval: Duration::from_secs(1),
            require_power: false,
            max_concurrency: None,
            request_rate: None,
            burstiness: 1.0,
            num_prompts: None,
            num_warmups: None,
            duration: None,
            idle_timeout: inferbench_client::DEFAULT_IDLE_TIMEOUT,
            request_timeout: None,
            rx_timestamps: true,
            save_result: false,
            result_dir: None,
            result_filename: None,
            save_detailed: false,
            save_requests: None,
            percentile_metrics: vec!["ttft".into(), "tpot".into(), "itl".into(), "e2el".into()],
            metric_percentiles: vec![90.0, 99.0, 99.9],
            goodput: Vec::new(),
            max_error_rate: 0.05,
            max_anomaly_rate: None,
            metadata: Vec::new(),
            job_identity: None,
            progress: ProgressMode::Auto,
            prepared: None,
            server_settings: Vec::new(),
            rescaled_at: None,
            clock: ClockSource::System,
            early_stop: None,
            prompt_memory: None,
            record_bound: None,
        }
    }
}

/// The output length an `--extra-body` object sets for `backend`, as the server reads the
/// merged body (issue 39: `--extra-body '{"max_tokens":400}'` was sent while the records, the
/// client's response caps and the estimates kept the flags' 4): `None` when it sets none of
/// the backend's fields; `Some(None)` when the fields it sets are all `null` (the server
/// decides); `Some(Some(n))`, `n` tokens, otherwise. The fields, in the server's order of
/// precedence: `max_output_tokens` for the Responses API; `max_completion_tokens`, then
/// `max_tokens`, for chat (vLLM and OpenAI read `max_completion_tokens` first); `max_tokens`
/// for completions. The run then sends `n` (or nothing) in its own output-length field(s)
/// too, so that every field of the body says the same.
///
/// # Errors
/// A value that is neither `null` nor an integer in [1, [`limits::MAX_TOKENS`]], naming the
/// flag and the field.
pub fn extra_body_max_tokens(
    backend: Backend,
    extra: Option<&Map<String, Value>>,
) -> Result<Option<Option<u32>>, OptionError> {
    let Some(extra) = extra else {
        return Ok(None);
    };
    let keys: &[&str] = match backend {
        Backend::OpenAiResponses => &["max_output_tokens"],
        Backend::OpenAiChat => &["max_completion_tokens", "max_tokens"],
        // Completions, and any backend added later that reads OpenAI's own field.
        _ => &["max_tokens"],
    };
    let mut set = None;
    for k in keys {
        let Some(v) = extra.get(*k) else { continue };
        let n = match v {
            Value::Null => None,
            // A whole float (`400.0`, `4e2`) is the count a server's lax integer reads.
            v => match v.as_u64().or_else(|| {
                v.as_f64()
                    .filter(|f| {
                        f.fract() == 0.0 && (1.0..=f64::from(limits::MAX_TOKENS)).contains(f)
                    })
                    .map(|f| f as u64)
            }) {
                Some(n) if (1..=u64::from(limits::MAX_TOKENS)).contains(&n) => Some(n as u32),
                _ => {
                    return Err(OptionError {
                        flag: "--extra-body",
                        reason: format!(
                            "{k}: {v} is not null or a whole number of tokens in [1, {}]",
                            limits::MAX_TOKENS
                        ),
                    })
                }
            },
        };
        // The first non-null field wins (the server's precedence); null only when all are.
        set = match (set, n) {
            (Some(Some(m)), _) => Some(Some(m)),
            (_, n) => Some(n),
        };
    }
    Ok(set)
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
    /// How the side requests (`/v1/models`, `/metrics`) reach the server: the measured
    /// requests' TLS verification and proxy.
    pub fn reach(&self) -> inferbench_client::Reach {
        inferbench_client::Reach {
            tls: self.tls.clone(),
            proxy: self.proxy.clone(),
            no_proxy: self.no_proxy_hosts.clone(),
        }
    }

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

    /// Checks flag values and combinations against [`available_memory_bytes`]; see
    /// [`BenchOptions::validate_with_memory`].
    pub fn validate(&self) -> Result<(), OptionError> {
        self.validate_with_memory(available_memory_bytes())
    }

    /// Checks every numeric flag against its range (limits in [`limits`], named in the
    /// message) and the flag combinations, before anything is allocated; then refuses a run
    /// whose prompts and records ([`BenchOptions::estimated_memory_bytes`]) would not fit in
    /// `memory_bytes` (`None` = unknown, not checked).
    ///
    /// # Errors
    /// The first bad flag, with the limit it broke.
    pub fn validate_with_memory(&self, memory_bytes: Option<u64>) -> Result<(), OptionError> {
        self.check_target()?;
        self.check_load()?;
        self.check_lengths()?;
        self.check_times()?;
        self.check_dataset_and_statistics()?;
        self.check_memory(memory_bytes)
    }

    /// `--base-url` a usable http URL ([`inferbench_client::target_uri`]) not doubling the
    /// endpoint's `/v1` (an empty `--model` is asked of the server when the run starts:
    /// [`crate::hints::served_model`]).
    fn check_target(&self) -> Result<(), OptionError> {
        let endpoint = self
            .endpoint
            .as_deref()
            .unwrap_or(self.backend.default_endpoint());
        // Before anything is asked of the server (the served model when --model is not given).
        inferbench_client::models::check_base_url(&self.base_url, endpoint).map_err(|reason| {
            OptionError {
                flag: "--base-url",
                reason,
            }
        })
    }

    /// The load: request rate, burstiness, concurrency, prompt and warmup counts within [`limits`];
    /// error and anomaly rates within [0, 1].
    fn check_load(&self) -> Result<(), OptionError> {
        let err = |flag, reason: String| Err(OptionError { flag, reason });
        if let Some(r) = self.request_rate {
            if !(r.is_finite()
                && (limits::MIN_REQUEST_RATE..=limits::MAX_REQUEST_RATE).contains(&r))
            {
                return err(
                    "--request-rate",
                    format!(
                        "{r} is outside [{}, {}] requests/s (or inf)",
                        limits::MIN_REQUEST_RATE,
                        limits::MAX_REQUEST_RATE
                    ),
                );
            }
        }
        if !(self.burstiness.is_finite()
            && (limits::MIN_BURSTINESS..=limits::MAX_BURSTINESS).contains(&self.burstiness))
        {
            return err(
                "--burstiness",
                format!(
                    "{} is outside [{}, {}] (gamma shape; 1 = Poisson)",
                    self.burstiness,
                    limits::MIN_BURSTINESS,
                    limits::MAX_BURSTINESS
                ),
            );
        }
        if let Some(c) = self.max_concurrency {
            if !(1..=limits::MAX_CONCURRENCY).contains(&c) {
                return err(
                    "--max-concurrency",
                    format!("{c} is outside [1, {}]", limits::MAX_CONCURRENCY),
                );
            }
        }
        if let Some(n) = self.num_prompts {
            if n > limits::MAX_NUM_PROMPTS {
                return err(
                    "--num-prompts",
                    format!(
                        "{n} is above {} (use --duration for longer runs)",
                        limits::MAX_NUM_PROMPTS
                    ),
                );
            }
        }
        let n_prompts = self.resolved_num_prompts();
        if n_prompts > limits::MAX_NUM_PROMPTS {
            return err(
                "--num-prompts",
                format!(
                    "the default 10 × --max-concurrency = {n_prompts} is above {}; give --num-prompts",
                    limits::MAX_NUM_PROMPTS
                ),
            );
        }
        let n_warm = self.resolved_num_warmups();
        if n_warm > limits::MAX_NUM_PROMPTS {
            return err(
                "--num-warmups",
                format!("{n_warm} is above {}", limits::MAX_NUM_PROMPTS),
            );
        }
        if !(0.0..=1.0).contains(&self.max_error_rate) {
            return err(
                "--max-error-rate",
                format!("{} is outside [0, 1]", self.max_error_rate),
            );
        }
        if let Some(a) = self.max_anomaly_rate {
            if !(0.0..=1.0).contains(&a) {
                return err("--max-anomaly-rate", format!("{a} is outside [0, 1]"));
            }
        }
        Ok(())
    }

    /// Sequence lengths (tokens) and `--random-range-ratio` within [`limits`] and the range
    /// semantics; no `--dataset-path` with random prompts.
    fn check_lengths(&self) -> Result<(), OptionError> {
        let err = |flag, reason: String| Err(OptionError { flag, reason });
        let r = self.resolved_range_ratio();
        if !(r.is_finite() && r >= 0.0) {
            return err("--random-range-ratio", format!("{r} must be ≥ 0"));
        }
        match self.range_semantics {
            RangeSemantics::InferenceX if r > 1.0 => {
                return err(
                    "--random-range-ratio",
                    format!("{r} must be within [0, 1] (InferenceX semantics)"),
                );
            }
            RangeSemantics::Vllm if r >= 1.0 => {
                return err(
                    "--random-range-ratio",
                    format!("{r} must be within [0, 1) (vLLM semantics)"),
                );
            }
            _ => {}
        }
        let len_check = |flag: &'static str, v: u32, min: u32| -> Result<(), OptionError> {
            if v < min || v > limits::MAX_TOKENS {
                return Err(OptionError {
                    flag,
                    reason: format!("{v} tokens is outside [{min}, {}]", limits::MAX_TOKENS),
                });
            }
            Ok(())
        };
        if self.dataset_name == DatasetName::Random {
            len_check("--random-input-len", self.random_input_len, 1)?;
            len_check("--random-output-len", self.random_output_len, 1)?;
            len_check("--random-prefix-len", self.random_prefix_len, 0)?;
            let total = u64::from(self.random_prefix_len) + u64::from(self.max_input_len());
            if total > u64::from(limits::MAX_TOKENS) {
                return err(
                    "--random-input-len",
                    format!(
                        "--random-prefix-len + the longest drawn input = {total} tokens is above {}",
                        limits::MAX_TOKENS
                    ),
                );
            }
            if self.dataset_path.is_some() && self.prepared.is_none() {
                return err(
                    "--dataset-path",
                    "is not used by --dataset-name random (random prompts); pass --dataset-name jsonl|sharegpt, or drop --dataset-path".into(),
                );
            }
        }
        if let Some(o) = self.output_len {
            len_check("--output-len", o, 1)?;
        }
        self.body_max_tokens()?;
        Ok(())
    }

    /// The output length `--extra-body` sets ([`extra_body_max_tokens`] for this backend):
    /// what every request's `max_tokens` is, in place of `--random-output-len` / `--output-len`
    /// / a dataset line's length.
    ///
    /// # Errors
    /// A value that is not `null` or a token count in range.
    pub fn body_max_tokens(&self) -> Result<Option<Option<u32>>, OptionError> {
        extra_body_max_tokens(self.backend, self.extra_body.as_ref())
    }

    /// Timeouts and `--duration` (s) within [`limits`]; a `--duration` bounded by concurrency or
    /// rate; a rate's schedule ending within [`limits::MAX_SECONDS`].
    fn check_times(&self) -> Result<(), OptionError> {
        let err = |flag, reason: String| Err(OptionError { flag, reason });
        let n_prompts = self.resolved_num_prompts();
        let secs_check = |flag: &'static str, d: Duration| -> Result<(), OptionError> {
            if d.is_zero() || d.as_secs_f64() > limits::MAX_SECONDS {
                return Err(OptionError {
                    flag,
                    reason: format!(
                        "{} s is outside (0, {}] s",
                        d.as_secs_f64(),
                        limits::MAX_SECONDS
                    ),
                });
            }
            Ok(())
        };
        secs_check("--idle-timeout", self.idle_timeout)?;
        if let Some(t) = self.request_timeout {
            secs_check("--request-timeout", t)?;
        }
        if let Some(d) = self.duration {
            secs_check("--duration", d)?;
            if self.request_rate.is_none() && self.max_concurrency.is_none() {
                return err(
                    "--duration",
                    "needs --max-concurrency or a finite --request-rate (otherwise it would send unboundedly)".into(),
                );
            }
        } else if let Some(rate) = self.request_rate {
            // The schedule must end within MAX_SECONDS (and within u64 nanoseconds).
            let span = n_prompts.saturating_sub(1) as f64 / rate;
            if span > limits::MAX_SECONDS {
                return err(
                    "--request-rate",
                    format!(
                        "{rate} requests/s would take {span:.0} s to send {n_prompts} prompts; the limit is {} s",
                        limits::MAX_SECONDS
                    ),
                );
            }
        }
        Ok(())
    }

    /// A file dataset's path given; percentiles, `--goodput` and `--percentile-metrics` parse;
    /// something to send.
    fn check_dataset_and_statistics(&self) -> Result<(), OptionError> {
        let err = |flag, reason: String| Err(OptionError { flag, reason });
        let n_prompts = self.resolved_num_prompts();
        if matches!(
            self.dataset_name,
            DatasetName::Jsonl | DatasetName::Sharegpt
        ) && self.dataset_path.is_none()
            && self.prepared.is_none()
        {
            return err(
                "--dataset-path",
                "required for --dataset-name jsonl|sharegpt".into(),
            );
        }
        if self.metric_percentiles.len() > limits::MAX_PERCENTILES {
            return err(
                "--metric-percentiles",
                format!("at most {} percentiles", limits::MAX_PERCENTILES),
            );
        }
        for q in &self.metric_percentiles {
            if !(0.0..=100.0).contains(q) {
                return err("--metric-percentiles", format!("{q} is outside [0, 100]"));
            }
        }
        if let Err(e) = inferbench_core::metrics::GoodputSlo::parse(&self.goodput) {
            return err("--goodput", e.trim_start_matches("--goodput ").to_string());
        }
        for m in &self.percentile_metrics {
            if inferbench_core::metrics::Metric::parse(m.trim()).is_none() {
                return err(
                    "--percentile-metrics",
                    format!("unknown metric {m:?} (ttft, tpot, itl, e2el)"),
                );
            }
        }
        if n_prompts == 0 && self.duration.is_none() {
            return err("--num-prompts", "must be at least 1".into());
        }
        Ok(())
    }

    /// The prompts and records ([`BenchOptions::estimated_memory_bytes`]) fit in `memory_bytes`
    /// (`None`: not checked).
    fn check_memory(&self, memory_bytes: Option<u64>) -> Result<(), OptionError> {
        let err = |flag, reason: String| Err(OptionError { flag, reason });
        let n_prompts = self.resolved_num_prompts();
        if let Some(avail) = memory_bytes {
            let need = self.estimated_memory_bytes();
            if self.prepared.is_none() && need > avail {
                return err(
                    if self.dataset_name == DatasetName::Random {
                        "--random-input-len"
                    } else {
                        "--num-prompts"
                    },
                    format!(
                        "{n_prompts} prompts of up to {} tokens and their records need about {} MiB, more than the {} MiB of memory available",
                        u64::from(self.random_prefix_len) + u64::from(self.max_input_len()),
                        need >> 20,
                        avail >> 20
                    ),
                );
            }
        }
        Ok(())
    }

    /// The lengths a random-dataset run draws, when `--random-range-ratio` was given (trial 32
    /// F6: a `vllm bench serve` user reads 0.1 as ±10 %, InferenceX's rule draws from
    /// [0.1·L, L]), the `--random-prefix-len` included in the input (trial 33 F4). `None` for
    /// other datasets, without the flag, for fixed lengths, or when the ratio is invalid
    /// (validation names it). `bench` prints it before the run whatever `--progress` says.
    pub fn range_notice(&self) -> Option<String> {
        let r = self.random_range_ratio?;
        if self.dataset_name != DatasetName::Random || self.prepared.is_some() {
            return None;
        }
        let sem = self.range_semantics.to_workload();
        let (il, ih) = inferbench_workload::length_range(self.random_input_len, r, sem).ok()?;
        let (ol, oh) =
            inferbench_workload::length_range(self.random_output_len.max(1), r, sem).ok()?;
        if (il, ol) == (ih, oh) {
            return None;
        }
        let rule = match self.range_semantics {
            RangeSemantics::InferenceX => {
                "uniform in [r·L, L] as InferenceX and SGLang draw; --range-semantics vllm for \
                 vLLM's [(1−r)·L, (1+r)·L]"
            }
            RangeSemantics::Vllm => "uniform in [(1−r)·L, (1+r)·L], --range-semantics vllm",
        };
        let p = self.random_prefix_len;
        let input = if p == 0 {
            format!("{il}–{ih} tokens")
        } else {
            format!(
                "{}–{} tokens ({p}-token prefix + {il}–{ih} drawn)",
                p.saturating_add(il),
                p.saturating_add(ih)
            )
        };
        // An `--extra-body` output length is every request's (issue 39, fresh tester 1).
        let output = match self.body_max_tokens() {
            Ok(Some(Some(n))) => format!("{n} tokens (--extra-body's, not drawn)"),
            Ok(Some(None)) => "the server's (--extra-body sends none)".to_string(),
            _ => format!("{ol}–{oh} tokens"),
        };
        Some(format!(
            "random lengths: input {input}, output {output} \
             (--random-range-ratio {r}: {rule})"
        ))
    }

    /// The longest input length the random range can draw, tokens (the prefix excluded).
    fn max_input_len(&self) -> u32 {
        self.max_drawn(self.random_input_len)
    }

    /// The longest output length the random range can draw, tokens.
    fn max_output_len(&self) -> u32 {
        self.max_drawn(self.random_output_len)
    }

    /// The longest length the random range can draw for a nominal `len`, tokens.
    fn max_drawn(&self, len: u32) -> u32 {
        let l = f64::from(len);
        let hi = match self.range_semantics {
            RangeSemantics::InferenceX => l,
            RangeSemantics::Vllm => {
                (l * (1.0 + self.resolved_range_ratio().clamp(0.0, 1.0))).floor()
            }
        };
        hi.min(f64::from(u32::MAX)) as u32
    }

    /// A generous estimate of the memory a run needs, bytes: every prompt's text and token ids
    /// while it is fitted ([`limits::BYTES_PER_PROMPT_TOKEN`] per token), every request record
    /// kept (warmups included: [`limits::BYTES_PER_RECORD`]; `--duration` at a rate: rate ×
    /// duration records), the records' output tokens kept
    /// ([`BenchOptions::estimated_output_bytes`]) and those of the requests in flight
    /// ([`BenchOptions::estimated_streams`] × [`BenchOptions::estimated_in_flight_bytes`]).
    /// Dataset prompts are not counted (their size is bounded by the file); a closed-loop
    /// `--duration` run's record count cannot be known in advance. The `inferbench` CLI's
    /// up-front check counts the same terms (`limits::bench_need`) besides the process's own.
    pub fn estimated_memory_bytes(&self) -> u64 {
        self.estimated_prompt_bytes()
            .saturating_add(
                self.estimated_record_count()
                    .saturating_mul(limits::BYTES_PER_RECORD),
            )
            .saturating_add(self.estimated_output_bytes())
            .saturating_add(
                self.estimated_streams()
                    .saturating_mul(self.estimated_in_flight_bytes()),
            )
    }

    /// Requests in flight at once, at most: `--max-concurrency`, or with no cap every request
    /// of the larger phase (an open loop may have them all in flight); at most the requests of
    /// the larger phase (a `--duration` run cycles its prompts: its cap alone), at least 1.
    pub fn estimated_streams(&self) -> u64 {
        let most = self.resolved_num_prompts().max(self.resolved_num_warmups());
        match (self.max_concurrency, self.duration) {
            (Some(c), Some(_)) => u64::from(c),
            (Some(c), None) => u64::from(c).min(most).max(1),
            (None, _) => most.max(1),
        }
    }

    /// The prompts' share of [`BenchOptions::estimated_memory_bytes`], bytes: random prompts'
    /// tokens × [`limits::BYTES_PER_PROMPT_TOKEN`] (0 for dataset prompts).
    pub fn estimated_prompt_bytes(&self) -> u64 {
        let n = self.resolved_num_prompts().max(1);
        let in_tokens = match self.dataset_name {
            DatasetName::Random => {
                u64::from(self.random_prefix_len) + u64::from(self.max_input_len())
            }
            _ => 0,
        };
        n.saturating_mul(in_tokens)
            .saturating_mul(limits::BYTES_PER_PROMPT_TOKEN)
    }

    /// Records the run keeps (warmups and profile; `--duration` at a rate: rate × duration):
    /// the request count of the one memory estimate (`inferbench` CLI's `limits::bench_need`
    /// counts the same).
    pub fn estimated_record_count(&self) -> u64 {
        let n = self.resolved_num_prompts().max(1);
        let mut records = n.saturating_add(self.resolved_num_warmups());
        if let (Some(d), Some(r)) = (self.duration, self.request_rate) {
            let paced = (d.as_secs_f64() * r).ceil().min(u64::MAX as f64) as u64;
            records = records.max(paced.saturating_add(self.resolved_num_warmups()));
        }
        records
    }

    /// The most output tokens a record keeps as the options know them, tokens: the length an
    /// `--extra-body` sets ([`BenchOptions::body_max_tokens`]) when it sets one; random prompts'
    /// longest drawn `--random-output-len` (the range included); a dataset's `--output-len`
    /// when given, else 0: its lines' own lengths (`output_len`, `max_tokens`, a recorded
    /// reply) are counted by the dataset loader's memory budget, prompt by prompt
    /// (`inferbench_workload::load_dataset`), so that each record is counted once (issue 39:
    /// two estimators that disagreed made the advised `ulimit -v` false).
    pub fn estimated_output_tokens(&self) -> u64 {
        if let Ok(Some(Some(n))) = self.body_max_tokens() {
            return u64::from(n);
        }
        match self.dataset_name {
            DatasetName::Random => u64::from(self.max_output_len()),
            _ => self.output_len.map_or(0, u64::from),
        }
    }

    /// The output of the records kept until the summary, bytes: with `--save-detailed` every
    /// record whole ([`BenchOptions::estimated_record_count`] × [`limits::kept_response_bytes`]
    /// of [`BenchOptions::estimated_output_tokens`]: what the client keeps of one response at
    /// most); otherwise records are compacted once written (issue 14) and only their ITL gaps
    /// are kept, 8 bytes a kept chunk ([`inferbench_client::kept::kept_chunks`]) up to
    /// [`crate::kept::SPILL_VALUES`] of them (the rest spill to a file).
    pub fn estimated_output_bytes(&self) -> u64 {
        let osl = self.estimated_output_tokens();
        let records = self.estimated_record_count();
        if self.save_detailed {
            records.saturating_mul(limits::kept_response_bytes(osl))
        } else {
            records
                .saturating_mul(limits::kept_gaps(osl))
                .min(crate::kept::SPILL_VALUES as u64)
                .saturating_mul(8)
        }
    }

    /// The output of one request in flight, bytes: what its stream holds while it reads
    /// ([`limits::held_stream_bytes`]) and what its record keeps until it is compacted
    /// ([`limits::kept_response_bytes`] of [`BenchOptions::estimated_output_tokens`]; not with
    /// `--save-detailed`, whose records are counted whole by
    /// [`BenchOptions::estimated_output_bytes`]).
    pub fn estimated_in_flight_bytes(&self) -> u64 {
        let osl = self.estimated_output_tokens();
        let held = limits::held_stream_bytes(osl);
        if self.save_detailed {
            held
        } else {
            held.saturating_add(limits::kept_response_bytes(osl))
        }
    }
}

/// Ranges of the numeric flags (issue 11 "Values"): limits from meaning (no server runs a
/// million concurrent streams; no model has a context above 10M tokens) and from memory
/// (the per-token and per-record sizes of the estimate).
pub mod limits {
    /// `--max-concurrency` ≤ 1,000,000 in-flight requests (each needs a socket; far above any
    /// server's batch).
    pub const MAX_CONCURRENCY: u32 = 1_000_000;
    /// `--random-input-len`, `--random-output-len`, `--random-prefix-len`, `--output-len` ≤
    /// 10,000,000 tokens (the longest context windows are 10M tokens).
    pub const MAX_TOKENS: u32 = 10_000_000;
    /// `--num-prompts` / `--num-warmups` ≤ 10,000,000 (longer runs: `--duration`).
    pub const MAX_NUM_PROMPTS: u64 = 10_000_000;
    /// `--request-rate` ≥ 1e-3 requests/s (one request per 1000 s) …
    pub const MIN_REQUEST_RATE: f64 = 1e-3;
    /// … and ≤ 1e7 requests/s (far above what one client can send).
    pub const MAX_REQUEST_RATE: f64 = 1e7;
    /// `--burstiness` (gamma shape) ≥ 1e-3 (coefficient of variation √1000 ≈ 32) …
    pub const MIN_BURSTINESS: f64 = 1e-3;
    /// … and ≤ 1e3 (nearly periodic arrivals).
    pub const MAX_BURSTINESS: f64 = 1e3;
    /// `--duration`, `--idle-timeout`, `--request-timeout` and the length of a paced schedule
    /// ≤ 7 days, in seconds.
    pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;
    /// At most 100 `--metric-percentiles`.
    pub const MAX_PERCENTILES: usize = 100;
    /// Memory per prompt token while prompts are built, bytes: text (≈ 4–8 bytes per token for
    /// random vocabulary ids) plus the u32 ids of the fitting buffers, rounded up.
    pub const BYTES_PER_PROMPT_TOKEN: u64 = 16;
    /// Memory per request record without its chunks, bytes (struct, strings, channel slot).
    pub const BYTES_PER_RECORD: u64 = 1024;
    /// Memory per output token of a record, bytes: a 24-byte chunk record (one per token at
    /// worst) plus the output text.
    pub const BYTES_PER_OUTPUT_TOKEN: u64 = 32;
    /// Memory per output token of a request in flight (and of a record kept whole, with
    /// `--save-detailed`), bytes: 48. Its 24-byte chunk record grows in a vector that doubles
    /// (up to 48 bytes a token), with the text and the stream's buffers besides: measured
    /// (2026-12-07, docs/performance.md, the lowest `ulimit -v` by bisection) ≈ 44 bytes per
    /// token in flight (16 streams, output 100 → 40,000 tokens: +34.8 MiB, 8 of them the ITL
    /// sample); rounded up.
    pub const BYTES_PER_IN_FLIGHT_OUTPUT_TOKEN: u64 = 48;

    /// Memory per chunk entry a record keeps, bytes: its 24-byte chunk record in a vector that
    /// doubles, 48 ([`BYTES_PER_IN_FLIGHT_OUTPUT_TOKEN`]'s measure, one chunk a token).
    pub const BYTES_PER_KEPT_CHUNK: u64 = 48;

    /// Memory per byte of generated text a record keeps (counted as JSON writes it, never less
    /// than in memory), bytes: 2, a string that doubles.
    pub const BYTES_PER_KEPT_TEXT_BYTE: u64 = 2;

    /// Memory one record of a request for `max_tokens` tokens keeps at most of its response,
    /// bytes: what the client keeps ([`inferbench_client::kept`]: its chunk entries ×
    /// [`BYTES_PER_KEPT_CHUNK`] and its text × [`BYTES_PER_KEPT_TEXT_BYTE`]), the one rule of
    /// the client and the estimates (issue 39, later tester: 64 chunks of 60 KB, inside the
    /// client's caps, ran a run at the advised `ulimit -v` out of memory). 0 for 0 tokens (no
    /// `max_tokens` known: nothing to estimate).
    pub fn kept_response_bytes(max_tokens: u64) -> u64 {
        if max_tokens == 0 {
            return 0;
        }
        use inferbench_client::kept::{kept_chunks, kept_text_bytes};
        kept_chunks(max_tokens)
            .saturating_mul(BYTES_PER_KEPT_CHUNK)
            .saturating_add(kept_text_bytes(max_tokens).saturating_mul(BYTES_PER_KEPT_TEXT_BYTE))
    }

    /// ITL gaps one record of a request for `max_tokens` tokens gives at most: its kept chunk
    /// entries less one ([`inferbench_client::kept::kept_chunks`]); 0 for 0 tokens.
    pub fn kept_gaps(max_tokens: u64) -> u64 {
        match max_tokens {
            0 => 0,
            n => inferbench_client::kept::kept_chunks(n).saturating_sub(1),
        }
    }

    /// What the record of a dataset prompt's reply of N tokens costs the prompts' memory
    /// budget (`inferbench_workload::DatasetOptions::reply_bytes`): with `--save-detailed`
    /// (`whole`: records kept whole until the summary) what the client keeps of a response,
    /// [`kept_response_bytes`]; otherwise the loader's default (its ITL gaps and a share of a
    /// request in flight, `inferbench_workload::dataset::reply_record_bytes`).
    pub fn dataset_reply_bytes(whole: bool) -> fn(u64) -> u64 {
        if whole {
            kept_response_bytes
        } else {
            inferbench_workload::dataset::reply_record_bytes
        }
    }

    /// Memory one stream holds while it reads a response of a request for `max_tokens` tokens
    /// besides what its record keeps, bytes: [`inferbench_client::kept::held_stream_bytes`]
    /// (the largest event it may hold, twice, and the parser's buffers).
    pub fn held_stream_bytes(max_tokens: u64) -> u64 {
        inferbench_client::kept::held_stream_bytes(max_tokens)
    }
}

/// Memory available to this process, bytes: the one budget every up-front memory check uses
/// ([`memory_budget`]); `None` where unknown (the memory check is then skipped).
pub fn available_memory_bytes() -> Option<u64> {
    memory_budget().map(|b| b.bytes)
}

/// What bounds a process's memory (issue 39 §2: a prompt check against `MemAvailable` alone let
/// `ulimit -v 700000` abort in prompt preparation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryBound {
    /// The soft address-space limit (`ulimit -v`, `RLIMIT_AS`).
    AddressSpace,
    /// The machine's available memory (`MemAvailable` of `/proc/meminfo`).
    Available,
}

/// The memory a whole run may use, bytes, and what bounds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    /// Bytes the process may hold in all (its own mappings included).
    pub bytes: u64,
    /// Which limit gave `bytes`.
    pub bound: MemoryBound,
}

impl MemoryBudget {
    /// The smaller of the soft address-space limit `address_space` (bytes, `None` =
    /// unlimited) and the machine's available memory `available` (bytes, `None` = unknown);
    /// `None` when neither is known. The address-space limit wins a tie (it is what aborts).
    pub fn of(address_space: Option<u64>, available: Option<u64>) -> Option<Self> {
        match (address_space, available) {
            (Some(a), Some(m)) if m < a => Some(Self {
                bytes: m,
                bound: MemoryBound::Available,
            }),
            (Some(a), _) => Some(Self {
                bytes: a,
                bound: MemoryBound::AddressSpace,
            }),
            (None, Some(m)) => Some(Self {
                bytes: m,
                bound: MemoryBound::Available,
            }),
            (None, None) => None,
        }
    }

    /// How a message names the bound: "the address-space limit `ulimit -v`" or "the memory
    /// available".
    pub fn what(&self) -> &'static str {
        match self.bound {
            MemoryBound::AddressSpace => "the address-space limit `ulimit -v`",
            MemoryBound::Available => "the memory available",
        }
    }
}

/// This process's memory budget ([`MemoryBudget::of`]): its soft `RLIMIT_AS` (read from
/// `/proc/self/limits`) and `MemAvailable` (`/proc/meminfo`); `None` where neither is known
/// (not Linux).
pub fn memory_budget() -> Option<MemoryBudget> {
    MemoryBudget::of(address_space_limit(), mem_available())
}

/// `MemAvailable` of `/proc/meminfo`, bytes; `None` where unknown (not Linux). The budget under
/// another address-space limit is `MemoryBudget::of(Some(limit), mem_available())`.
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// The soft address-space limit of this process (`Max address space` of `/proc/self/limits`),
/// bytes; `None` when unlimited or unknown.
pub fn address_space_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max address space"))?;
    line.trim_start_matches("Max address space")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `--tokenizer server`: prompts are fitted to the served model's tokenizer through the
/// server's `/tokenize` endpoint.
pub const SERVER_TOKENIZER: &str = "server";

#[cfg(feature = "clap")]
/// `--progress auto|bar|plain|off` (the values without their descriptions, as `--help` lists
/// them).
impl clap::ValueEnum for ProgressMode {
    fn value_variants<'a>() -> &'a [Self] {
        &[Self::Auto, Self::Bar, Self::Plain, Self::Off]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(match self {
            Self::Auto => "auto",
            Self::Bar => "bar",
            Self::Plain => "plain",
            Self::Off => "off",
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trial of issue 39 §1–§3, finding 1: the budget is the smaller of `ulimit -v` and the
    /// memory available (the prompt check ignored `ulimit -v`).
    #[test]
    fn the_memory_budget_is_the_smaller_limit() {
        let b = MemoryBudget::of(Some(700_000 * 1024), Some(16 << 30)).unwrap();
        assert_eq!((b.bytes, b.bound), (716_800_000, MemoryBound::AddressSpace));
        let b = MemoryBudget::of(Some(64 << 30), Some(1 << 30)).unwrap();
        assert_eq!((b.bytes, b.bound), (1 << 30, MemoryBound::Available));
        let b = MemoryBudget::of(None, Some(1 << 30)).unwrap();
        assert_eq!(b.bound, MemoryBound::Available);
        assert_eq!(MemoryBudget::of(None, None), None);
    }

    /// Trial 32 F6 / trial 33 F4: the drawn range is printed under either rule, the prefix
    /// in the input.
    #[test]
    fn range_notice_prints_the_drawn_lengths() {
        let mut o = BenchOptions {
            random_input_len: 1000,
            random_output_len: 16,
            ..Default::default()
        };
        assert_eq!(o.range_notice(), None);
        o.random_range_ratio = Some(0.1);
        assert_eq!(
            o.range_notice().unwrap(),
            "random lengths: input 100–1000 tokens, output 1–16 tokens (--random-range-ratio 0.1: \
             uniform in [r·L, L] as InferenceX and SGLang draw; --range-semantics vllm for \
             vLLM's [(1−r)·L, (1+r)·L])"
        );
        o.range_semantics = RangeSemantics::Vllm;
        assert_eq!(
            o.range_notice().unwrap(),
            "random lengths: input 900–1100 tokens, output 14–17 tokens (--random-range-ratio \
             0.1: uniform in [(1−r)·L, (1+r)·L], --range-semantics vllm)"
        );
        o.random_prefix_len = 100;
        assert!(
            o.range_notice()
                .unwrap()
                .starts_with("random lengths: input 1000–1200 tokens (100-token prefix + 900–1100 drawn), output 14–17"),
            "{:?}",
            o.range_notice()
        );
        // Issue 39 (fresh tester, 1): an `--extra-body` length is every request's.
        o.extra_body = serde_json::json!({"max_tokens": 400}).as_object().cloned();
        assert!(
            (o.range_notice().unwrap()).contains(
                "drawn), output 400 tokens (--extra-body's, not drawn) (--random-range-ratio"
            ),
            "{:?}",
            o.range_notice()
        );
        o.extra_body = None;
        o.random_range_ratio = Some(0.0);
        o.range_semantics = RangeSemantics::Vllm;
        assert_eq!(o.range_notice(), None);
    }

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

    /// Issue 39 (fresh tester, 1): the output length an `--extra-body` sets, by backend and in
    /// the server's precedence; `null` sends none; other values are refused naming the field.
    #[test]
    fn extra_body_output_length_by_backend() {
        let get = |b, j: &str| {
            let v: Value = serde_json::from_str(j).unwrap();
            extra_body_max_tokens(b, v.as_object())
        };
        let (cmp, chat, resp) = (
            Backend::OpenAiCompletions,
            Backend::OpenAiChat,
            Backend::OpenAiResponses,
        );
        assert_eq!(extra_body_max_tokens(chat, None), Ok(None));
        assert_eq!(get(cmp, r#"{"top_p":0.9}"#), Ok(None));
        assert_eq!(get(cmp, r#"{"max_tokens":400}"#), Ok(Some(Some(400))));
        // Completions read no max_completion_tokens; the Responses API only max_output_tokens.
        assert_eq!(get(cmp, r#"{"max_completion_tokens":400}"#), Ok(None));
        assert_eq!(get(resp, r#"{"max_tokens":400}"#), Ok(None));
        assert_eq!(get(resp, r#"{"max_output_tokens":7}"#), Ok(Some(Some(7))));
        assert_eq!(
            get(chat, r#"{"max_tokens":400,"max_completion_tokens":300}"#),
            Ok(Some(Some(300)))
        );
        assert_eq!(
            get(chat, r#"{"max_tokens":400,"max_completion_tokens":null}"#),
            Ok(Some(Some(400)))
        );
        assert_eq!(get(chat, r#"{"max_tokens":null}"#), Ok(Some(None)));
        assert_eq!(
            get(cmp, r#"{"max_tokens":10000000}"#),
            Ok(Some(Some(10_000_000)))
        );
        assert_eq!(get(cmp, r#"{"max_tokens":4e2}"#), Ok(Some(Some(400))));
        for bad in ["0", "-1", "4.5", "\"400\"", "10000001", "[1]", "1e+30"] {
            let e = get(cmp, &format!(r#"{{"max_tokens":{bad}}}"#)).unwrap_err();
            assert_eq!(e.flag, "--extra-body");
            assert_eq!(
                e.reason,
                format!(
                    "max_tokens: {bad} is not null or a whole number of tokens in [1, 10000000]"
                )
            );
        }
        let o = BenchOptions {
            extra_body: serde_json::json!({"max_tokens": 0}).as_object().cloned(),
            ..Default::default()
        };
        assert_eq!(
            o.validate_with_memory(None).unwrap_err().flag,
            "--extra-body"
        );
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
        // No --model is valid: the run asks the server's /v1/models (hints::served_model).
        let no_model = BenchOptions {
            model: String::new(),
            ..base
        };
        assert_eq!(no_model.validate(), Ok(()));
    }

    #[test]
    fn memory_estimate_is_exact_arithmetic() {
        let o = BenchOptions {
            model: "m".into(),
            ..Default::default()
        };
        // 1000 prompts × 1024 tokens × 16 B + 1000 records × 1024 B + their ITL gaps (what
        // the client keeps for 128 tokens: 144 chunk entries, 143 gaps) × 8 B + 1000 requests
        // in flight (no cap), each what the client keeps of a response (144 chunks × 48 B +
        // (32 × 128 + 1024) bytes of text × 2 = 17,152 B) and holds while reading it (2 ×
        // (100 KiB + 5,120 B) + 32 KiB = 247,808 B): issue 39, the estimate counts the client's
        // own budgets.
        assert_eq!(limits::kept_response_bytes(128), 144 * 48 + 5120 * 2);
        assert_eq!(limits::kept_response_bytes(0), 0);
        assert_eq!(limits::held_stream_bytes(128), 247_808);
        // A dataset prompt's reply: a whole record's kept bytes with --save-detailed, else the
        // loader's 32 bytes a token.
        assert_eq!(
            limits::dataset_reply_bytes(true)(128),
            limits::kept_response_bytes(128)
        );
        assert_eq!(limits::dataset_reply_bytes(false)(128), 128 * 32);
        assert_eq!(
            o.estimated_memory_bytes(),
            16_384_000 + 1_024_000 + 1_144_000 + 264_960_000
        );
        assert_eq!(o.validate_with_memory(Some(283_512_000)), Ok(()));
        let e = o.validate_with_memory(Some(283_511_999)).unwrap_err();
        assert_eq!(e.flag, "--random-input-len");
        assert_eq!(
            e.reason,
            "1000 prompts of up to 1024 tokens and their records need about 270 MiB, more than the 270 MiB of memory available"
        );
        // --duration 10 s at 1000 req/s: 10 000 records, their ITL gaps at most 1 Mi values
        // (the rest spill to a file).
        let d = BenchOptions {
            duration: Some(Duration::from_secs(10)),
            request_rate: Some(1000.0),
            ..o.clone()
        };
        assert_eq!(
            d.estimated_memory_bytes(),
            16_384_000 + 10_240_000 + 8_388_608 + 264_960_000
        );
        // --save-detailed keeps every record whole: 1000 × 17,152 B; in flight only what the
        // streams hold while reading.
        let full = BenchOptions {
            save_detailed: true,
            ..o.clone()
        };
        assert_eq!(
            full.estimated_memory_bytes(),
            16_384_000 + 1_024_000 + 17_152_000 + 247_808_000
        );
        // extreme values saturate instead of overflowing
        let x = BenchOptions {
            random_input_len: u32::MAX,
            random_prefix_len: u32::MAX,
            num_prompts: Some(u64::MAX),
            num_warmups: Some(u64::MAX),
            random_output_len: u32::MAX,
            ..o
        };
        assert_eq!(x.estimated_memory_bytes(), u64::MAX);
    }
}
