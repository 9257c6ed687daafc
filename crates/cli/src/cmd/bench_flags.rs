//! The `bench` and `selftest` subcommands' flags, and those `bench` shares with `replay`: each
//! flag and its `--help` text are written once, here, and [`BenchFlags::into_options`] turns
//! them into the loadgen library's [`BenchOptions`] (tested below; `replay`'s into
//! [`ReplayOptions`](inferbench_loadgen::agentic::ReplayOptions) in `cmd::replay_flags`);
//! [`SelftestFlags::run`] is the whole `selftest` command (the library measures, this prints).
//! `cmd::bench` and `main` use these structs as the subcommands' arguments.

use std::path::PathBuf;
use std::time::Duration;

use super::ExitStatus;
use anyhow::Context as _;
use clap::builder::{PossibleValuesParser, TypedValueParser as _};
use inferbench_client::{Backend, MaxTokensField};
use inferbench_core::summary::JobIdentity;

use inferbench_loadgen::selftest::{measure, problems, render, spawn_server, SelftestOptions};
use inferbench_loadgen::{BenchOptions, DatasetName, PowerMode, ProgressMode, RangeSemantics};

/// The server and what every request carries: the target flags `bench` and `replay` share
/// (their API flavour and endpoint are their own).
#[derive(Debug, Clone, clap::Args)]
pub struct TargetFlags {
    /// `--base-url`, `--host`, `--port`.
    #[command(flatten)]
    pub server: inferbench_client::models::ServerFlags,
    /// Model name sent in every request and written as `model_id`. Default: the first model
    /// the server's /v1/models lists, as vLLM's `bench serve` picks it.
    #[arg(long, help_heading = "Target")]
    pub model: Option<String>,
    /// API key, sent as `Authorization: Bearer …`; never written to results or logs.
    #[arg(
        long,
        env = "OPENAI_API_KEY",
        hide_env_values = true,
        help_heading = "Target"
    )]
    pub api_key: Option<String>,
    /// Extra request header `K:V` (repeatable; `K=V` accepted too). The client's own fields are
    /// refused (exit 2): framing and hop-by-hop (`Content-Length`, `Transfer-Encoding`,
    /// `Connection`, `Keep-Alive`, `Proxy-Connection`, `TE`, `Trailer`, `Upgrade`, `Expect`),
    /// `Content-Encoding`, and a `Content-Type` that is not JSON; `Host` and a JSON
    /// `Content-Type` replace the client's.
    #[arg(long = "header", value_name = "K:V", help_heading = "Target")]
    pub headers: Vec<String>,
    /// Per-request header 'NAME: VALUE' (repeatable) whose value may hold {i}, the request's
    /// send index (every request sent, warmups included, from 0; replay's chat-template probes
    /// take none and get only templates without {i}), or {i%N}, that index modulo N. A dataset
    /// line's `extra_headers` object adds headers to its request alone.
    #[arg(
        long = "header-template",
        value_name = "'NAME: VALUE'",
        help_heading = "Target"
    )]
    pub header_templates: Vec<String>,
    /// Send `X-data-parallel-rank: i mod N` on request i (every request sent, warmups
    /// included, from 0): spreads requests over vLLM's N data-parallel ranks round-robin,
    /// bypassing its load balancer (the template 'X-data-parallel-rank: {i%N}').
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Target")]
    pub dp_rank_roundrobin: Option<u64>,
    /// Let the first content chunk end TTFT even when its text is empty (TRT-LLM streams
    /// that open with an empty content chunk; AIPerf's option). Off by default: TTFT ends at
    /// the first chunk with generated text. Recorded in the summary.
    #[arg(long, help_heading = "Target")]
    pub allow_empty_content: bool,
    /// Send the requests directly, ignoring http_proxy/HTTP_PROXY (http:// targets) and
    /// https_proxy/HTTPS_PROXY (https:// targets, through a CONNECT tunnel), which are honoured
    /// by default, as vLLM's client does, except for loopback targets and the hosts
    /// no_proxy/NO_PROXY lists.
    #[arg(long, help_heading = "Target")]
    pub no_proxy: bool,
    /// JSON object merged into every request body (overrides our keys), e.g.
    /// '{"temperature":0.7}' (AIPerf's --extra-inputs). An output length it sets
    /// (max_tokens, max_completion_tokens for chat, max_output_tokens for Responses) is every
    /// request's max_tokens, in the records and the estimates (null: the server decides).
    #[arg(
        long,
        alias = "extra-inputs",
        value_name = "JSON",
        help_heading = "Target"
    )]
    pub extra_body: Option<String>,
    /// Body field(s) carrying the output length: both (max_tokens and max_completion_tokens, as
    /// some servers honour only one), max_tokens or max_completion_tokens. Default: `bench`
    /// sends both to chat endpoints and max_tokens to completions; `replay` sends
    /// max_completion_tokens, as AIPerf does.
    #[arg(
        long,
        value_parser = PossibleValuesParser::new(["both", "max_tokens", "max_completion_tokens"])
            .map(|s| MaxTokensField::parse(&s).unwrap_or(MaxTokensField::Both)),
        help_heading = "Target"
    )]
    pub max_tokens_field: Option<MaxTokensField>,
}

impl TargetFlags {
    /// The server's root URL: `--base-url`, else `http://{--host}:{--port}` (vLLM's rule; an
    /// IPv6 host is bracketed).
    pub fn base_url(&self) -> String {
        self.server.url()
    }

    /// [`TargetFlags::base_url`] when requests to `endpoint` under it can be sent: a usable
    /// http URL ([`inferbench_client::target_uri`]) not doubling the endpoint's `/v1`. Checked
    /// before the server is asked anything (trial 22: `replay` without `--model` asked an
    /// `https://` server for its models). Errors: `--base-url: <why>`.
    pub fn checked_base_url(&self, endpoint: &str) -> anyhow::Result<String> {
        let base = self.base_url();
        inferbench_client::models::check_base_url(&base, endpoint)
            .map_err(|reason| anyhow::anyhow!("--base-url: {reason}"))?;
        Ok(base)
    }

    /// `--model`, or "" when not given (the run asks the server: [`inferbench_loadgen::hints::served_model`]).
    pub fn model(&self) -> String {
        self.model.clone().unwrap_or_default()
    }

    /// `--header` values as (name, value) pairs. Errors: a value without `:` or `=`.
    pub fn parsed_headers(&self) -> anyhow::Result<Vec<(String, String)>> {
        headers(&self.headers)
    }

    /// The proxy settings: `http_proxy` / `HTTP_PROXY`, `https_proxy` / `HTTPS_PROXY` and
    /// `no_proxy` / `NO_PROXY` of the environment, or none with `--no-proxy`.
    pub fn proxy_env(&self) -> inferbench_client::proxy::ProxyEnv {
        if self.no_proxy {
            inferbench_client::proxy::ProxyEnv::default()
        } else {
            inferbench_client::proxy::ProxyEnv::from_env()
        }
    }

    /// `--header-template`s, then `--dp-rank-roundrobin`'s template. Errors name the flag:
    /// no `:`, an empty name, a bad `{i%N}`, or a template naming the same header as another
    /// or as a `--header`.
    pub fn parsed_header_templates(
        &self,
    ) -> anyhow::Result<Vec<inferbench_client::HeaderTemplate>> {
        let mut out = Vec::new();
        for t in &self.header_templates {
            out.push(
                inferbench_client::HeaderTemplate::parse(t)
                    .map_err(|e| anyhow::anyhow!("--header-template: {e}"))?,
            );
        }
        if let Some(n) = self.dp_rank_roundrobin {
            out.push(inferbench_client::HeaderTemplate::dp_rank(n));
        }
        let fixed = self.parsed_headers()?;
        for (i, t) in out.iter().enumerate() {
            let same = |name: &str| name.trim().eq_ignore_ascii_case(&t.name);
            if fixed.iter().any(|(k, _)| same(k)) || out[..i].iter().any(|o| same(&o.name)) {
                anyhow::bail!(
                    "--header-template/--dp-rank-roundrobin: header {:?} is given twice",
                    t.name
                );
            }
        }
        Ok(out)
    }

    /// `--extra-body` as a JSON object. Errors: not JSON, or not an object.
    pub fn parsed_extra_body(
        &self,
    ) -> anyhow::Result<Option<serde_json::Map<String, serde_json::Value>>> {
        extra_body(self.extra_body.as_deref())
    }
}

/// GPU power flags of `bench` and `replay` (one definition).
#[derive(Debug, Clone, clap::Args)]
pub struct PowerFlags {
    /// GPU power sampling into `power.csv` beside the result (`<result stem>.power.csv` with
    /// bench --save-result; needs --result-dir): auto (NVML, else nvidia-smi, else amd-smi,
    /// else none), off, nvml, nvidia-smi, amd-smi. The profiling window is integrated per GPU
    /// with InferenceX's validity rules (`power_validation.json`) into `inferbench.power` (W,
    /// J, J/token).
    #[arg(long, value_enum, default_value_t = PowerMode::Auto, help_heading = "Output")]
    pub power: PowerMode,
    /// Seconds between power samples.
    #[arg(
        long,
        default_value_t = 1.0,
        value_name = "SECONDS",
        help_heading = "Output"
    )]
    pub power_interval: f64,
    /// Fail (exit 1) when power could not be measured or is not valid; by default that is
    /// recorded and the run stands.
    #[arg(long, help_heading = "Output")]
    pub require_power: bool,
}

impl PowerFlags {
    /// The sampler mode (`--power`).
    pub fn mode(&self) -> PowerMode {
        self.power
    }

    /// Refuses combinations that would silently measure nothing: `--require-power` with
    /// `--power off`; a named sampler or `--require-power` without a result directory
    /// (`has_result_dir` false).
    pub fn check(&self, has_result_dir: bool) -> anyhow::Result<()> {
        anyhow::ensure!(
            !(self.require_power && self.power == PowerMode::Off),
            "--require-power with --power off: nothing would be measured"
        );
        anyhow::ensure!(
            has_result_dir
                || (self.power == PowerMode::Auto && !self.require_power)
                || self.power == PowerMode::Off,
            "--power {}/--require-power need --result-dir (power.csv goes there)",
            self.power.name()
        );
        Ok(())
    }
}

/// Flags of `inferbench bench` (vLLM `bench serve` names).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit codes: 0 ok; 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr, the files and database still written), or error rate above --max-error-rate, anomaly rate above \
                  --max-anomaly-rate, or no request succeeded (a client out of files or \
                  ports: error class client_resource; with --slo, any probe failing so stops \
                  the search with no capacity), or a result or records write failed at \
                  the end (what could be written is), or out of memory midway (ulimit -v named; \
                  what was written stays); 2 bad flags, files or setup, an output \
                  path that cannot be written (checked before any request), a \
                  concurrency this process cannot hold (ulimit -n, ulimit -v; with --slo, the \
                  search range's upper end), or out of \
                  memory before any request (ulimit -v named, never SIGABRT); 3 server \
                  unreachable (partial results written); 130 interrupted by \
                  Ctrl-C, SIGTERM or SIGHUP (finished requests saved).\n\nExample (InferenceX fixed-seq-len \
                  point):\n  inferbench bench --base-url http://127.0.0.1:8000 --model M \
                  --dataset-name random --random-input-len 1024 --random-output-len 1024 \
                  --random-range-ratio 0.8 --max-concurrency 64 --ignore-eos --save-result \
                  --result-dir results --result-filename point.json"
)]
pub struct BenchFlags {
    // ----- target
    /// API flavour: `openai` (POST /v1/completions), `openai-chat` (POST
    /// /v1/chat/completions) or `openai-responses` (POST /v1/responses, OpenAI's Responses API:
    /// complete only on `response.completed`). `vllm` and `sglang` are aliases of `openai`.
    #[arg(long, default_value = "openai", value_parser = parse_backend, help_heading = "Target")]
    pub backend: Backend,
    /// The server and what every request carries.
    #[command(flatten)]
    pub target: TargetFlags,
    /// Request path; default /v1/completions, /v1/chat/completions or /v1/responses by
    /// --backend.
    #[arg(long, help_heading = "Target")]
    pub endpoint: Option<String>,

    // ----- workload
    /// Prompt source: random (exact token lengths), jsonl (one {"prompt": …} per line; `custom`
    /// is vLLM's name for the same) or sharegpt (all turns).
    #[arg(
        long,
        default_value = "random",
        value_parser = PossibleValuesParser::new(["random", "jsonl", "custom", "sharegpt"])
            .map(|s| DatasetName::parse(&s).unwrap_or_default()),
        help_heading = "Workload"
    )]
    pub dataset_name: DatasetName,
    /// Dataset file for jsonl / sharegpt.
    #[arg(long, help_heading = "Workload")]
    pub dataset_path: Option<PathBuf>,
    /// Random prompts: nominal input length, tokens.
    #[arg(long, default_value_t = 1024, help_heading = "Workload")]
    pub random_input_len: u32,
    /// Random prompts: nominal output length (max_tokens), tokens.
    #[arg(long, default_value_t = 128, help_heading = "Workload")]
    pub random_output_len: u32,
    /// Length range ratio r: lengths uniform in [r·L, L] (InferenceX/SGLang), or
    /// [(1−r)L, (1+r)L] with --range-semantics vllm. Default: fixed lengths.
    #[arg(long, help_heading = "Workload")]
    pub random_range_ratio: Option<f64>,
    /// Meaning of --random-range-ratio: inferencex (= sglang) or vllm.
    #[arg(
        long,
        default_value = "inferencex",
        value_parser = PossibleValuesParser::new(["inferencex", "sglang", "vllm"])
            .map(|s| RangeSemantics::parse(&s).unwrap_or_default()),
        help_heading = "Workload"
    )]
    pub range_semantics: RangeSemantics,
    /// Random prompts: shared random prefix, tokens.
    #[arg(long, default_value_t = 0, help_heading = "Workload")]
    pub random_prefix_len: u32,
    /// Override the dataset's output lengths (jsonl/sharegpt), tokens.
    #[arg(
        long,
        alias = "sharegpt-output-len",
        alias = "custom-output-len",
        help_heading = "Workload"
    )]
    pub output_len: Option<u32>,
    /// Tokenizer: o200k_base (embedded), cl100k_base, a path to a HF tokenizer.json, or
    /// `server`: fit prompts to the served model's own tokenizer through its /tokenize
    /// endpoint (vLLM, SGLang, llama.cpp, inferbench sim), so input lengths are exact.
    #[arg(long, default_value = "o200k_base", help_heading = "Workload")]
    pub tokenizer: String,
    /// Ask the server to ignore EOS and generate exactly max_tokens (vLLM/SGLang extension).
    #[arg(long, help_heading = "Workload")]
    pub ignore_eos: bool,
    /// Seed for prompts and arrival times. The same seed sends byte-identical prompts, so a
    /// second run against the same server finds them in its prefix cache (TTFT far too low);
    /// use --cache-bust, another seed, or a restarted server.
    #[arg(long, default_value_t = 0, help_heading = "Workload")]
    pub seed: u64,
    /// Put a run-unique `[rid:<12 hex>]` marker at the very start of every random prompt
    /// (before --random-prefix-len, counted inside the input length), so no prompt shares a
    /// prefix-cache block with an earlier run's.
    #[arg(long, help_heading = "Workload")]
    pub cache_bust: bool,

    // ----- load
    /// Closed-loop cap on in-flight requests (InferenceX `conc`).
    #[arg(long, help_heading = "Load")]
    pub max_concurrency: Option<u32>,
    /// Arrival rate in requests/s, or `inf` (all at once, paced by --max-concurrency).
    #[arg(long, default_value = "inf", value_parser = parse_rate, allow_negative_numbers = true, help_heading = "Load")]
    pub request_rate: RateArg,
    /// Gamma shape of inter-arrival times (1 = Poisson; <1 burstier, >1 smoother).
    #[arg(long, default_value_t = 1.0, help_heading = "Load")]
    pub burstiness: f64,
    /// Profile requests; default 10 × --max-concurrency (InferenceX), or 1000 without a cap.
    #[arg(long, help_heading = "Load")]
    pub num_prompts: Option<u64>,
    /// Warmup requests (excluded from metrics); default 2 × --max-concurrency, or 0.
    #[arg(long, help_heading = "Load")]
    pub num_warmups: Option<u64>,
    /// Send for this many seconds (prompts cycle; in-flight requests finish). With
    /// --num-prompts as well, the run also stops after that many requests, whichever comes
    /// first.
    #[arg(long, value_name = "SECONDS", help_heading = "Load")]
    pub duration: Option<f64>,
    /// Fail a request after this many seconds without a byte.
    #[arg(
        long,
        default_value_t = 600.0,
        value_name = "SECONDS",
        help_heading = "Load"
    )]
    pub idle_timeout: f64,
    /// Fail a request not finished this many seconds after sending (default: no limit).
    #[arg(long, value_name = "SECONDS", help_heading = "Load")]
    pub request_timeout: Option<f64>,
    /// Time tokens when this process reads them instead of when the kernel received them
    /// (SO_TIMESTAMPNS, Linux; the default keeps TTFT/ITL exact when the client is busy).
    #[arg(long, help_heading = "Load")]
    pub no_rx_timestamps: bool,

    // ----- output
    /// Write the result JSON (vLLM `--save-result` shape plus an `inferbench` object).
    #[arg(long, help_heading = "Output")]
    pub save_result: bool,
    /// Directory for the result JSON (default: current); also for agg_<RESULT_FILENAME>.json
    /// with --inferencex-env or --job-identity. With --db it names the point's batch
    /// (`report -f batch=DIR`).
    #[arg(long, help_heading = "Output")]
    pub result_dir: Option<PathBuf>,
    /// Result file name; default {backend}-{rate}qps[-concurrency{c}]-{model}-{date}.json.
    #[arg(long, help_heading = "Output")]
    pub result_filename: Option<String>,
    /// Also write per-request ttfts, itls, generated_texts and errors into the result.
    #[arg(long, help_heading = "Output")]
    pub save_detailed: bool,
    /// Write every RequestRecord as a JSON line to PATH as requests finish.
    #[arg(long, value_name = "PATH", help_heading = "Output")]
    pub save_requests: Option<PathBuf>,
    /// Metrics that get mean/median/std/percentile keys (comma list of ttft,tpot,itl,e2el).
    #[arg(long, default_value = "ttft,tpot,itl,e2el", help_heading = "Output")]
    pub percentile_metrics: String,
    /// Percentiles reported (comma list).
    #[arg(long, default_value = "90,99,99.9", help_heading = "Output")]
    pub metric_percentiles: String,
    /// Goodput SLOs in ms, e.g. `--goodput ttft:500 tpot:50 e2el:10000`.
    #[arg(long, num_args = 1.., value_name = "METRIC:MS", help_heading = "Output")]
    pub goodput: Vec<String>,
    /// Exit with code 1 when the failed fraction of profile requests exceeds this.
    #[arg(long, default_value_t = 0.05, help_heading = "Output")]
    pub max_error_rate: f64,
    /// Exit with code 1 when the fraction of successful requests with an anomaly (usage above
    /// max_tokens, usage below the streamed chunks, OSL/ISL mismatch, client-counted output far
    /// above max_tokens, a response that was not streamed) exceeds this. Default: no gate
    /// (anomalies are still counted and warned about).
    #[arg(long, help_heading = "Output")]
    pub max_anomaly_rate: Option<f64>,
    /// KEY=VALUE pairs copied into the result JSON.
    #[arg(long, num_args = 1.., value_name = "KEY=VALUE", help_heading = "Output")]
    pub metadata: Vec<String>,
    /// Read the job identity from InferenceX's environment contract (RUNNER_TYPE, FRAMEWORK,
    /// PRECISION, SPEC_DECODING, RESULT_FILENAME, ISL, OSL, DISAGG, MODEL_PREFIX, IMAGE, TP,
    /// EP_SIZE, DP_ATTENTION, …) and also write agg_<RESULT_FILENAME>.json.
    #[arg(long, help_heading = "Output")]
    pub inferencex_env: bool,
    /// Read the job identity from a JSON file (inferbench JobIdentity) and also write
    /// agg_<RESULT_FILENAME>.json.
    #[arg(
        long,
        value_name = "PATH",
        conflicts_with = "inferencex_env",
        help_heading = "Output"
    )]
    pub job_identity: Option<PathBuf>,
    /// Store the result in this database when the run ends (a SQLite file or a
    /// `postgres://…` URL, as `ingest --db`); implies --save-result. Give the point's identity
    /// with --set (or --job-identity / --inferencex-env), else it is stored as `unknown`.
    #[arg(long, value_name = "DB", help_heading = "Output")]
    pub db: Option<String>,
    /// With --db: the point's identity in InferenceX aggregate field names, as `ingest --set`
    /// (`hw=h100`, `framework=vllm`, `precision=fp8`, `tp=1`, …); repeatable.
    #[arg(
        long = "set",
        value_name = "KEY=VALUE",
        requires = "db",
        help_heading = "Output"
    )]
    pub set: Vec<String>,
    /// Do not scrape the server's Prometheus /metrics. By default a baseline scrape before the
    /// warmup, one per --server-metrics-interval and a final one go to
    /// `<result stem>.server_metrics.jsonl` beside the result (`server_metrics.jsonl` without
    /// --save-result; needs --result-dir) and the summary's `inferbench.server_metrics`
    /// (KV-cache usage, prefix-cache hit rate, running/waiting, tokens, acceptance length).
    #[arg(long, help_heading = "Output")]
    pub no_server_metrics: bool,
    /// Seconds between /metrics scrapes.
    #[arg(
        long,
        default_value_t = 1.0,
        value_name = "SECONDS",
        help_heading = "Output"
    )]
    pub server_metrics_interval: f64,
    /// GPU power sampling.
    #[command(flatten)]
    pub power: PowerFlags,
    /// Live progress: auto (bar on a terminal, lines otherwise), bar, plain or off.
    #[arg(long, value_enum, default_value = "auto", help_heading = "Output")]
    pub progress: ProgressMode,
    /// Same as --progress off (vLLM flag).
    #[arg(long, help_heading = "Output")]
    pub disable_tqdm: bool,

    // ----- accepted for vLLM/InferenceX command-line compatibility; no effect
    /// vLLM's `--trust-remote-code` (hidden; no effect).
    #[arg(long, hide = true)]
    pub trust_remote_code: bool,
    /// vLLM's `--tokenizer-mode` (hidden; no effect).
    #[arg(long, hide = true)]
    pub tokenizer_mode: Option<String>,
}

/// What to use instead of a `vllm bench serve` flag that `bench` does not take (trial 32 F11:
/// "unexpected argument '--temperature'" left a vLLM user guessing). `flag` as typed, with or
/// without `=VALUE`; `None` for any other flag.
pub fn vllm_flag_hint(flag: &str) -> Option<&'static str> {
    let name = flag.split('=').next().unwrap_or(flag);
    Some(match name {
        "--temperature"
        | "--top-p"
        | "--top-k"
        | "--min-p"
        | "--repetition-penalty"
        | "--frequency-penalty"
        | "--presence-penalty"
        | "--logprobs" => {
            "sampling parameters go into the request body: --extra-body '{\"temperature\": \
             0.7, \"top_p\": 0.9}' (bench sends temperature 0 unless --extra-body sets it)"
        }
        "--served-model-name" => {
            "--model is the name sent in each request (the server's served name); --tokenizer \
             picks how prompts are counted"
        }
        "--ready-check-timeout-sec" => {
            "bench sends at once and stops with exit 3 when nothing answers: wait for the \
             server first, or let `inferbench sweep` launch it and wait for it to be ready"
        }
        "--label" | "--append-result" => {
            "--metadata KEY=VALUE records a label in the result; each run writes its own \
             --result-filename (or --db stores every run)"
        }
        "--ramp-up-strategy" | "--ramp-up-start-rps" | "--ramp-up-end-rps" => {
            "no ramp-up: --request-rate sets one rate (with --burstiness), and `inferbench \
             sweep` runs one point per rate or concurrency"
        }
        "--request-id-prefix" => {
            "every record in --save-requests carries its request_id; --header adds a header \
             to every request"
        }
        "--profile" => "bench starts no server-side profiler; run the engine's own profiler",
        "--use-beam-search" => {
            "beam search is a request parameter: --extra-body '{\"use_beam_search\": true}' \
             where the server takes it"
        }
        "--lora-modules" => "--model names the served LoRA adapter to request",
        "--skip-chat-template" => {
            "--backend openai (/v1/completions) sends the prompt as it is; openai-chat lets \
             the server apply its template"
        }
        "--endpoint-type" => {
            "--backend picks the API (openai: /v1/completions, openai-chat: \
             /v1/chat/completions, openai-responses: /v1/responses) and --endpoint its path"
        }
        "--hf-split" | "--hf-subset" | "--hf-name" | "--hf-output-len" => {
            "Hugging Face datasets are not downloaded: --dataset-name jsonl or sharegpt with \
             --dataset-path <a local file>"
        }
        "--sonnet-input-len" | "--sonnet-output-len" | "--sonnet-prefix-len" => {
            "the sonnet dataset is not built in: --dataset-name random, or a jsonl file of \
             prompts (--dataset-name jsonl --dataset-path)"
        }
        "--random-batch-size" => "one prompt per request: there is no batched-prompt mode",
        _ => return None,
    })
}

/// `--request-rate` value: `None` = inf.
#[derive(Debug, Clone, Copy)]
pub struct RateArg(
    /// Requests/s; `None` = inf.
    pub Option<f64>,
);

/// `--request-rate`: a positive number of requests/s, or `inf` / `infinity`.
pub fn parse_rate(s: &str) -> Result<RateArg, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("inf") || t.eq_ignore_ascii_case("infinity") {
        return Ok(RateArg(None));
    }
    match t.parse::<f64>() {
        Ok(r) if r.is_infinite() && r > 0.0 => Ok(RateArg(None)),
        Ok(r) if r.is_finite() && r > 0.0 => Ok(RateArg(Some(r))),
        _ => Err(format!("{s:?} is not a positive rate (requests/s) or inf")),
    }
}

/// `--backend`: `openai`, `openai-chat`, `openai-responses` (or an alias [`Backend::parse`]
/// knows).
pub fn parse_backend(s: &str) -> Result<Backend, String> {
    Backend::parse(s)
        .ok_or_else(|| format!("unknown backend {s:?} (openai, openai-chat, openai-responses)"))
}

/// `v` seconds of flag `flag` as a [`Duration`]: finite, positive and at most
/// [`limits::MAX_SECONDS`](inferbench_loadgen::limits::MAX_SECONDS); errors name the flag and the range.
pub fn secs(flag: &str, v: f64) -> anyhow::Result<Duration> {
    let max = inferbench_loadgen::limits::MAX_SECONDS;
    if !(v.is_finite() && v > 0.0 && v <= max) {
        anyhow::bail!("{flag}: {v} s is outside (0, {max}] s");
    }
    Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero())
        .with_context(|| format!("{flag}: {v} is not a positive number of seconds"))
}

/// `--extra-body JSON`: a JSON object (merged into every request body), or an error naming
/// the flag.
pub fn extra_body(
    s: Option<&str>,
) -> anyhow::Result<Option<serde_json::Map<String, serde_json::Value>>> {
    match s {
        None => Ok(None),
        Some(s) => match serde_json::from_str::<serde_json::Value>(s)
            .with_context(|| format!("--extra-body: not JSON: {s}"))?
        {
            serde_json::Value::Object(m) => Ok(Some(m)),
            _ => anyhow::bail!("--extra-body: must be a JSON object"),
        },
    }
}

/// `--header K:V` (or `K=V`) pairs.
pub fn headers(raw: &[String]) -> anyhow::Result<Vec<(String, String)>> {
    raw.iter()
        .map(|h| split_pair("--header", h, &[':', '=']))
        .collect()
}

/// `KEY<sep>VALUE` of flag `flag`, split at the first of `seps`, both sides trimmed; errors:
/// no separator, or an empty key.
pub fn split_pair(flag: &str, s: &str, seps: &[char]) -> anyhow::Result<(String, String)> {
    let i = s
        .find(|c| seps.contains(&c))
        .with_context(|| format!("{flag}: {s:?} is not KEY{}VALUE", seps[0]))?;
    let (k, v) = (s[..i].trim(), s[i + 1..].trim());
    if k.is_empty() {
        anyhow::bail!("{flag}: empty key in {s:?}");
    }
    Ok((k.to_string(), v.to_string()))
}

/// A comma list of flag `flag` (`90,99,99.9`), empty items skipped; errors name the item.
pub fn comma_list<T: std::str::FromStr>(flag: &str, s: &str) -> anyhow::Result<Vec<T>> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| {
            x.parse::<T>()
                .map_err(|_| anyhow::anyhow!("{flag}: cannot parse {x:?}"))
        })
        .collect()
}

impl BenchFlags {
    /// Converts the flags into [`BenchOptions`]; nothing past this sees clap types. `db` and
    /// `set` are the caller's (the store is not loadgen's). Errors name the flag.
    pub fn into_options(self) -> anyhow::Result<BenchOptions> {
        let extra_body = self.target.parsed_extra_body()?;
        let headers = self.target.parsed_headers()?;
        let metadata = self
            .metadata
            .iter()
            .map(|h| split_pair("--metadata", h, &['=']))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let job_identity = if self.inferencex_env {
            Some(JobIdentity::from_env().context("--inferencex-env")?)
        } else if let Some(p) = &self.job_identity {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("--job-identity: cannot read {}", p.display()))?;
            Some(serde_json::from_str(&text).with_context(|| {
                format!("--job-identity: {} is not a JobIdentity JSON", p.display())
            })?)
        } else {
            None
        };
        let progress = if self.disable_tqdm {
            ProgressMode::Off
        } else {
            self.progress
        };
        Ok(BenchOptions {
            backend: self.backend,
            endpoint: self.endpoint,
            max_tokens_field: self.target.max_tokens_field,
            base_url: self.target.base_url(),
            model: self.target.model(),
            header_templates: self.target.parsed_header_templates()?,
            allow_empty_content: self.target.allow_empty_content,
            proxy: self.target.proxy_env().for_url(&self.target.base_url()),
            no_proxy_hosts: self.target.proxy_env().no_proxy,
            // `--tls-ca` / `--insecure` are the CLI's flags, set after this.
            tls: Default::default(),
            api_key: self.target.api_key,
            headers,
            extra_body,
            dataset_name: self.dataset_name,
            dataset_path: self.dataset_path,
            random_input_len: self.random_input_len,
            random_output_len: self.random_output_len,
            random_range_ratio: self.random_range_ratio,
            range_semantics: self.range_semantics,
            random_prefix_len: self.random_prefix_len,
            output_len: self.output_len,
            tokenizer: self.tokenizer,
            ignore_eos: self.ignore_eos,
            seed: self.seed,
            cache_bust: self.cache_bust,
            server_metrics: !self.no_server_metrics,
            power: {
                self.power.check(true)?;
                self.power.mode()
            },
            power_interval: secs("--power-interval", self.power.power_interval)?,
            require_power: self.power.require_power,
            server_metrics_interval: secs(
                "--server-metrics-interval",
                self.server_metrics_interval,
            )?,
            // Set from `ulimit -f` by `bench` (`fsize::server_metrics_room`).
            server_metrics_max_bytes: None,
            max_concurrency: self.max_concurrency,
            request_rate: self.request_rate.0,
            burstiness: self.burstiness,
            num_prompts: self.num_prompts,
            num_warmups: self.num_warmups,
            duration: self.duration.map(|d| secs("--duration", d)).transpose()?,
            idle_timeout: secs("--idle-timeout", self.idle_timeout)?,
            request_timeout: self
                .request_timeout
                .map(|d| secs("--request-timeout", d))
                .transpose()?,
            rx_timestamps: !self.no_rx_timestamps,
            save_result: self.save_result,
            result_dir: self.result_dir,
            result_filename: self.result_filename,
            save_detailed: self.save_detailed,
            save_requests: self.save_requests,
            percentile_metrics: comma_list("--percentile-metrics", &self.percentile_metrics)?,
            metric_percentiles: comma_list("--metric-percentiles", &self.metric_percentiles)?,
            goodput: self.goodput,
            max_error_rate: self.max_error_rate,
            max_anomaly_rate: self.max_anomaly_rate,
            metadata,
            job_identity,
            progress,
            prepared: None,
            // A server bench did not launch: only what it reports of itself (issue 39 §5).
            server_settings: Vec::new(),
            rescaled_at: None,
            clock: inferbench_client::ClockSource::System,
            early_stop: None,
            prompt_memory: None,
            record_bound: None,
        })
    }
}

// ----- selftest

/// Flags of `inferbench selftest`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Method (docs/perf/client.md): start a server that outruns the client, \
    pinned to other cores, e.g.\n  taskset -c 0 sse-instant --coalesce --port 8000 --threads 1\nthen\n  \
    taskset -c 1 inferbench selftest --base-url http://127.0.0.1:8000\n\
    (or let selftest start it: --spawn-server PATH --server-cpus 0). The client runs on one core \
    unless --client-threads says otherwise; tok/CPU-s is tokens per client CPU second."
)]
pub struct SelftestFlags {
    /// Zero-latency OpenAI-compatible server to stream from: `inferbench sim --mode instant
    /// --port 8000` (then `--model Llama-3.1-8B`, the name it serves) or the project's
    /// sse-instant (`--spawn-server`). Default: http://HOST:PORT of --host and --port.
    #[command(flatten)]
    pub server: inferbench_client::models::ServerFlags,
    /// Start this server binary (sse-instant) with `--coalesce --port <free>` first, and stop it
    /// afterwards; --base-url is then ignored.
    #[arg(long, value_name = "PATH")]
    pub spawn_server: Option<PathBuf>,
    /// CPU list for the spawned server (`taskset -c`), e.g. `0`.
    #[arg(long, value_name = "CPUS")]
    pub server_cpus: Option<String>,
    /// Server threads for the spawned server.
    #[arg(long, default_value_t = 1)]
    pub server_threads: u32,
    /// Model name sent.
    #[arg(long, default_value = "selftest")]
    pub model: String,
    /// Output tokens per request.
    #[arg(long, default_value_t = 256)]
    pub tokens: u32,
    /// Concurrency levels (comma list).
    #[arg(long, default_value = "64,512")]
    pub concurrency: String,
    /// Sending window per level, seconds (in-flight streams then finish).
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Client worker threads (1: the per-core figure). The runtime is bench's own kind (tokio's
    /// multi-threaded scheduler, here with this many workers), so the ceiling is bench's.
    #[arg(long, default_value_t = 1)]
    pub client_threads: usize,
    /// Also write the measurements as JSON to PATH.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
}

impl SelftestFlags {
    /// Runs `inferbench selftest`: each level measured on bench's kind of runtime, the table
    /// on stdout (and `--json`), progress and problems on stderr. Returns
    /// [`ExitStatus::Failed`] when token totals disagree or requests failed.
    pub fn run(self) -> anyhow::Result<ExitStatus> {
        run_selftest(self)
    }
}

/// Bytes of one level's entry in `selftest --json` at most (about 600 measured: its
/// concurrency, counts, rates and CPU figures, pretty-printed).
pub const SELFTEST_JSON_BYTES_PER_LEVEL: u64 = 2048;

/// The record bound of each `selftest` level under `ulimit -v` (issue 39): the requests its
/// memory check planned ([`crate::limits::selftest_need`]) and as many more as the room that
/// check leaves under the limit holds, at [`crate::limits::REQUEST_BYTES`] each; `None`
/// without an address-space limit. A level that reaches it stops sending as at the end of its
/// duration (said on stderr and in `--json` as `stopped_reason`).
fn selftest_record_bound(args: &SelftestFlags) -> Option<inferbench_loadgen::options::RecordBound> {
    let limit = inferbench_loadgen::options::address_space_limit()?;
    let need = crate::limits::selftest_need(
        &args.concurrency,
        args.duration,
        args.tokens,
        args.client_threads,
    )?;
    let spare = limit.saturating_sub(need.memory(crate::limits::current().base));
    Some(inferbench_loadgen::options::RecordBound {
        records: need
            .requests
            .saturating_add(spare / crate::limits::REQUEST_BYTES),
        limit_bytes: limit,
    })
}

/// [`SelftestFlags::run`].
fn run_selftest(args: SelftestFlags) -> anyhow::Result<ExitStatus> {
    // `--json` never over the server binary it starts (issue 39's leftovers, 1).
    if let Some(json) = &args.json {
        use inferbench_loadgen::samefile::{check_distinct, NamedPath};
        let mut paths = vec![NamedPath::output("--json", json)];
        paths.extend((args.spawn_server.iter()).map(|p| NamedPath::input("--spawn-server", p)));
        check_distinct(&paths)?;
        // Writable, and within `ulimit -f`, before the measurement (issue 39, second round,
        // finding 4: a missing folder or `ulimit -f 0` was found after every level ran).
        inferbench_loadgen::output::check_file_writable("--json", json)?;
        let levels = args.concurrency.split(',').count() as u64;
        crate::fsize::check(
            &[crate::fsize::Planned::new(
                "--json",
                levels.saturating_mul(SELFTEST_JSON_BYTES_PER_LEVEL),
            )],
            crate::fsize::limit(),
        )
        .map_err(anyhow::Error::msg)?;
    }
    let concurrency = args
        .concurrency
        .split(',')
        .map(|s| s.trim().parse::<u32>().ok().filter(|c| *c > 0))
        .collect::<Option<Vec<_>>>()
        .context("--concurrency: expected a comma list of positive integers")?;
    let duration = Duration::try_from_secs_f64(args.duration)
        .ok()
        .filter(|d| !d.is_zero())
        .context("--duration: expected a positive number of seconds")?;
    // The scheduler bench runs on, so that nothing but the flags differs from a bench run.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.client_threads.max(1))
        .enable_all()
        .build()?;
    // The one shutdown token (issue 39): Ctrl-C, SIGTERM or SIGHUP cut the level in flight,
    // the spawned server is stopped (dropped: killed and reaped) and the run exits 130. Made
    // before the server starts, so a signal never leaves it behind; the server also ends with
    // this process however it ends (`spawn_server`'s parent-death signal).
    let cancel = rt.block_on(async {
        super::shutdown_token("selftest: interrupted; stopping (and its spawned server)")
    });
    let (_server, base_url) = match &args.spawn_server {
        Some(bin) => {
            let (s, u) = spawn_server(bin, args.server_cpus.as_deref(), args.server_threads)?;
            (Some(s), u)
        }
        None => (None, args.server.url()),
    };
    let opts = SelftestOptions {
        base_url,
        model: args.model.clone(),
        tokens_per_request: args.tokens,
        concurrency: concurrency.clone(),
        duration,
        record_bound: selftest_record_bound(&args),
        ..Default::default()
    };
    let parse_ns = inferbench_loadgen::selftest::parse_ns_per_event(args.tokens, 2_000_000);
    errln!(
        "selftest: SSE framing + chunk interpretation alone: {parse_ns:.0} CPU ns/event ({:.2} M events per CPU second)",
        1e3 / parse_ns
    );
    let mut points = Vec::new();
    for c in concurrency {
        if cancel.is_cancelled() {
            break;
        }
        errln!(
            "selftest: concurrency {c} for {:.1} s against {}",
            args.duration,
            opts.base_url
        );
        let point = rt.block_on(measure(&opts, c, &cancel))?;
        if let Some(why) = &point.stopped_reason {
            errln!("selftest: concurrency {c}: {why}; its rates cover the time it sent");
        }
        if cancel.is_cancelled() {
            break;
        }
        points.push(point);
    }
    if cancel.is_cancelled() {
        // The level cut short is not reported (its figures would be a fragment); the levels
        // measured before it are.
        if !points.is_empty() {
            out!("{}", render(&points));
        }
        rt.shutdown_background();
        return Ok(ExitStatus::Interrupted);
    }
    out!("{}", render(&points));
    if let Some(p) = &args.json {
        inferbench_loadgen::output::write_file(
            p,
            serde_json::to_string_pretty(&points)?.as_bytes(),
        )
        .map_err(|e| super::write_failed("--json", e))?;
    }
    // Trial 24: the timed sim passed for an instant server.
    if let Some(warning) = inferbench_loadgen::selftest::not_instant(&points) {
        err!("{warning}");
    }
    if let Some(problems) = problems(&points) {
        err!("{problems}");
        return Ok(ExitStatus::Failed);
    }
    Ok(ExitStatus::Ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchFlags,
    }

    fn parse(argv: &[&str]) -> anyhow::Result<BenchOptions> {
        let mut full = vec!["bench"];
        full.extend_from_slice(argv);
        Cli::try_parse_from(full)?.args.into_options()
    }

    /// vLLM's `--host`/`--port` make the URL when `--base-url` is not given; both together
    /// are refused (trial 19).
    #[test]
    fn host_and_port_make_the_base_url() {
        assert_eq!(
            parse(&["--model", "m"]).unwrap().base_url,
            "http://127.0.0.1:8000"
        );
        let o = parse(&["--model", "m", "--host", "::1", "--port", "9000"]).unwrap();
        assert_eq!(o.base_url, "http://[::1]:9000");
        let o = parse(&["--base-url", "http://h:1"]).unwrap();
        assert_eq!((o.base_url.as_str(), o.model.as_str()), ("http://h:1", ""));
        assert!(parse(&["--base-url", "http://h:1", "--port", "2"]).is_err());
    }

    #[test]
    fn inferencex_invocation_parses() {
        let o = parse(&[
            "--model",
            "M",
            "--backend",
            "vllm",
            "--base-url",
            "http://0.0.0.0:8888",
            "--dataset-name",
            "random",
            "--random-input-len",
            "1024",
            "--random-output-len",
            "1024",
            "--random-range-ratio",
            "0.8",
            "--num-prompts",
            "640",
            "--max-concurrency",
            "64",
            "--request-rate",
            "inf",
            "--ignore-eos",
            "--save-result",
            "--num-warmups",
            "128",
            "--percentile-metrics",
            "ttft,tpot,itl,e2el",
            "--result-dir",
            "/tmp/x",
            "--result-filename",
            "rf.json",
            "--trust-remote-code",
        ])
        .unwrap();
        assert_eq!(o.backend, Backend::OpenAiCompletions);
        assert_eq!(o.random_range_ratio, Some(0.8));
        assert_eq!(o.max_concurrency, Some(64));
        assert_eq!(o.request_rate, None);
        assert_eq!(o.num_warmups, Some(128));
        assert!(o.ignore_eos && o.save_result);
        assert_eq!(o.percentile_metrics, vec!["ttft", "tpot", "itl", "e2el"]);
        assert_eq!(o.metric_percentiles, vec![90.0, 99.0, 99.9]);
    }

    #[test]
    fn values_and_errors() {
        let o = parse(&[
            "--model",
            "m",
            "--request-rate",
            "12.5",
            "--header",
            "X-A: 1",
            "--header",
            "B=2",
            "--extra-body",
            "{\"top_p\":0.9}",
            "--goodput",
            "ttft:500",
            "tpot:50",
            "--duration",
            "1.5",
            "--metadata",
            "k=v",
        ])
        .unwrap();
        assert_eq!(o.request_rate, Some(12.5));
        assert_eq!(
            o.headers,
            vec![("X-A".into(), "1".into()), ("B".into(), "2".into())]
        );
        assert_eq!(o.extra_body.unwrap()["top_p"], 0.9);
        assert_eq!(o.goodput, vec!["ttft:500", "tpot:50"]);
        assert_eq!(o.duration, Some(Duration::from_millis(1500)));
        assert_eq!(o.metadata, vec![("k".into(), "v".into())]);
        let e = parse(&["--model", "m", "--extra-body", "[1]"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--extra-body"), "{e}");
        let e = parse(&["--model", "m", "--request-rate", "-3"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("positive rate"), "{e}");
        let e = parse(&["--model", "m", "--idle-timeout", "0"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--idle-timeout"), "{e}");
    }

    /// Parses and validates like `inferbench bench` does before anything is allocated, with
    /// 8 GiB of memory.
    fn check(argv: &[&str]) -> Result<BenchOptions, String> {
        let o = parse(argv).map_err(|e| format!("{e:#}"))?;
        o.validate_with_memory(Some(8 << 30))
            .map_err(|e| e.to_string())?;
        Ok(o)
    }

    #[test]
    fn range_errors_name_the_flag_and_the_limit() {
        let m = ["--model", "m"];
        let cases: &[(&[&str], &str)] = &[
            (
                &["--max-concurrency", "4000000000"],
                "--max-concurrency: 4000000000 is outside [1, 1000000]",
            ),
            (
                &["--max-concurrency", "0"],
                "--max-concurrency: 0 is outside [1, 1000000]",
            ),
            (
                &["--random-input-len", "4000000000"],
                "--random-input-len: 4000000000 tokens is outside [1, 10000000]",
            ),
            (
                &["--random-prefix-len", "4000000000"],
                "--random-prefix-len: 4000000000 tokens is outside [0, 10000000]",
            ),
            (
                &["--random-output-len", "0"],
                "--random-output-len: 0 tokens is outside [1, 10000000]",
            ),
            (
                &["--random-input-len", "0"],
                "--random-input-len: 0 tokens is outside [1, 10000000]",
            ),
            (
                &["--request-rate", "1e-12"],
                "--request-rate: 0.000000000001 is outside [0.001, 10000000] requests/s (or inf)",
            ),
            (
                &["--request-rate", "0.01", "--num-prompts", "100000"],
                "--request-rate: 0.01 requests/s would take 9999900 s to send 100000 prompts; the limit is 604800 s",
            ),
            (
                &["--burstiness", "1e-9"],
                "--burstiness: 0.000000001 is outside [0.001, 1000] (gamma shape; 1 = Poisson)",
            ),
            (
                &["--num-prompts", "100000000"],
                "--num-prompts: 100000000 is above 10000000 (use --duration for longer runs)",
            ),
            (
                &["--max-concurrency", "1000000"],
                "--random-input-len: 10000000 prompts of up to 1024 tokens and their records need about 420662 MiB, more than the 8192 MiB of memory available",
            ),
            (
                &["--goodput", "ttft:-5"],
                "--goodput: item \"ttft:-5\": must be a finite value ≥ 0",
            ),
            (
                &["--max-anomaly-rate", "2"],
                "--max-anomaly-rate: 2 is outside [0, 1]",
            ),
            (
                &["--request-timeout", "1e18"],
                "--request-timeout: 1000000000000000000 s is outside (0, 604800] s",
            ),
            (
                &["--dataset-path", "x.jsonl"],
                "--dataset-path: is not used by --dataset-name random (random prompts); pass --dataset-name jsonl|sharegpt, or drop --dataset-path",
            ),
            (
                &["--random-input-len", "10000000", "--num-prompts", "100"],
                "--random-input-len: 100 prompts of up to 10000000 tokens and their records need about 15284 MiB, more than the 8192 MiB of memory available",
            ),
        ];
        for (args, want) in cases {
            let mut argv = m.to_vec();
            argv.extend_from_slice(args);
            assert_eq!(&check(&argv).unwrap_err(), want, "{argv:?}");
        }
        // a million-stream cap is fine with a count that fits (30,000 streams in flight, each
        // what the client keeps and holds of a response for 16 tokens: 245,248 B, 7,016 MiB)
        let o = check(&[
            "--model",
            "m",
            "--max-concurrency",
            "1000000",
            "--num-prompts",
            "30000",
            "--num-warmups",
            "0",
            "--random-input-len",
            "16",
            "--random-output-len",
            "16",
        ])
        .unwrap();
        assert_eq!(o.max_concurrency, Some(1_000_000));
        // vLLM semantics widen the drawn range: (1 + 0.5) × 8M > 10M
        let e = check(&[
            "--model",
            "m",
            "--range-semantics",
            "vllm",
            "--random-range-ratio",
            "0.5",
            "--random-input-len",
            "8000000",
        ])
        .unwrap_err();
        assert_eq!(
            e,
            "--random-input-len: --random-prefix-len + the longest drawn input = 12000000 tokens is above 10000000"
        );
    }

    use proptest::prelude::*;

    /// Numbers of every kind a user (or a script bug) may type.
    fn number() -> impl Strategy<Value = String> {
        prop_oneof![
            (0u64..4).prop_map(|v| v.to_string()),
            (0u64..100_000).prop_map(|v| v.to_string()),
            any::<u32>().prop_map(|v| v.to_string()),
            any::<u64>().prop_map(|v| v.to_string()),
            any::<i64>().prop_map(|v| v.to_string()),
            any::<f64>().prop_map(|v| format!("{v}")),
            (-1e3f64..1e3).prop_map(|v| format!("{v}")),
            prop::sample::select(vec![
                "0",
                "-0",
                "1e-12",
                "1e300",
                "-1e300",
                "nan",
                "inf",
                "-inf",
                "1e-320",
                "4000000000",
                "18446744073709551616",
                "0.5",
                "",
            ])
            .prop_map(str::to_string),
        ]
    }

    const NUMERIC: &[&str] = &[
        "--random-input-len",
        "--random-output-len",
        "--random-range-ratio",
        "--random-prefix-len",
        "--output-len",
        "--seed",
        "--max-concurrency",
        "--request-rate",
        "--burstiness",
        "--num-prompts",
        "--num-warmups",
        "--duration",
        "--idle-timeout",
        "--request-timeout",
        "--max-error-rate",
        "--max-anomaly-rate",
        "--metric-percentiles",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Random numbers in any numeric flags: parsing and validation never panic, every
        /// refusal names a flag, and whatever is accepted fits the limits and the memory.
        #[test]
        fn random_numbers_never_panic_or_overallocate(
            picks in prop::collection::vec((0..NUMERIC.len(), number()), 0..8),
            vllm in any::<bool>(),
            goodput in proptest::option::of(number()),
        ) {
            let mut argv: Vec<String> = vec!["--model".into(), "m".into()];
            if let Some(g) = goodput {
                argv.push(format!("--goodput=ttft:{g}"));
            }
            if vllm {
                argv.extend(["--range-semantics".into(), "vllm".into()]);
            }
            for (i, v) in &picks {
                argv.push(format!("{}={v}", NUMERIC[*i]));
            }
            let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
            let budget: u64 = 8 << 30;
            match parse(&refs) {
                Err(e) => {
                    let msg = format!("{e:#}");
                    prop_assert!(msg.contains("--") || msg.contains("invalid"), "{msg}");
                }
                Ok(o) => match o.validate_with_memory(Some(budget)) {
                    Err(e) => prop_assert!(e.flag.starts_with("--"), "{e}"),
                    Ok(()) => {
                        use inferbench_loadgen::limits;
                        prop_assert!(o.estimated_memory_bytes() <= budget);
                        prop_assert!(o.max_concurrency.is_none_or(|c| (1..=limits::MAX_CONCURRENCY).contains(&c)));
                        prop_assert!((1..=limits::MAX_TOKENS).contains(&o.random_input_len));
                        prop_assert!((1..=limits::MAX_TOKENS).contains(&o.random_output_len));
                        prop_assert!(o.random_prefix_len <= limits::MAX_TOKENS);
                        prop_assert!(o.resolved_num_prompts() <= limits::MAX_NUM_PROMPTS);
                        prop_assert!(o.request_rate.is_none_or(|r| r.is_finite() && r >= limits::MIN_REQUEST_RATE));
                        for d in [o.duration, Some(o.idle_timeout), o.request_timeout].into_iter().flatten() {
                            prop_assert!(d.as_secs_f64() <= limits::MAX_SECONDS && !d.is_zero());
                            // adding it to now cannot overflow
                            prop_assert!(std::time::Instant::now().checked_add(d).is_some());
                        }
                    }
                },
            }
        }
    }
}
