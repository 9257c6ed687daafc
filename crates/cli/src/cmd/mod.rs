//! One module per subcommand; each owns its flags (`Args`) and a `run` returning the exit code.
pub mod bench;
pub mod changelog;
pub mod compare;
pub mod db;
pub mod eval;
pub mod ingest;
pub mod job;
pub mod matrix;
pub mod models;
pub mod plot;
pub mod quickstart;
pub mod quickstart_agentic;
pub mod replay;
pub mod report;
pub mod selftest;
pub mod serve;
pub mod sim;
pub mod sweep;

/// `--power`: which GPU power sampler runs (auto, off, nvml, nvidia-smi, amd-smi).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PowerFlag {
    /// NVML, else nvidia-smi, else amd-smi, else none.
    Auto,
    /// No power sampling.
    Off,
    /// NVML only.
    Nvml,
    /// nvidia-smi only.
    NvidiaSmi,
    /// amd-smi only.
    AmdSmi,
}

impl PowerFlag {
    /// The flag's value as typed (`nvidia-smi`).
    pub fn name(self) -> String {
        use clap::ValueEnum as _;
        self.to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }
}

/// `--thinking-mode`: which golden acceptance-length curve (InferenceX's `thinking_on`
/// default, or `thinking_off`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ThinkingMode {
    /// The curve measured with thinking on (InferenceX's default).
    #[value(name = "thinking_on")]
    ThinkingOn,
    /// The curve measured with thinking off.
    #[value(name = "thinking_off")]
    ThinkingOff,
}

impl ThinkingMode {
    /// The golden file's key for this mode (`thinking_on` / `thinking_off`).
    pub fn key(self) -> &'static str {
        match self {
            ThinkingMode::ThinkingOn => "thinking_on",
            ThinkingMode::ThinkingOff => "thinking_off",
        }
    }
}

/// `--eval-backend`: the API evals ask (`openai-chat`, InferenceX's lm-eval with the chat
/// template, or `openai`, completions).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum EvalBackend {
    /// `/v1/completions`.
    Openai,
    /// `/v1/chat/completions`.
    OpenaiChat,
}

impl EvalBackend {
    /// The client's backend.
    pub fn backend(self) -> inferbench_client::Backend {
        match self {
            EvalBackend::Openai => inferbench_client::Backend::OpenAiCompletions,
            EvalBackend::OpenaiChat => inferbench_client::Backend::OpenAiChat,
        }
    }
}

/// GPU power flags of `bench` and `replay` (one definition).
/// The server and what every request carries: the target flags `bench` and `replay` share
/// (their API flavour and endpoint are their own).
#[derive(Debug, Clone, clap::Args)]
pub struct TargetArgs {
    /// Server root URL (http only).
    #[arg(long, default_value = "http://127.0.0.1:8000", help_heading = "Target")]
    pub base_url: String,
    /// Model name sent in every request and written as `model_id`.
    #[arg(long, help_heading = "Target")]
    pub model: String,
    /// API key, sent as `Authorization: Bearer …`; never written to results or logs.
    #[arg(
        long,
        env = "OPENAI_API_KEY",
        hide_env_values = true,
        help_heading = "Target"
    )]
    pub api_key: Option<String>,
    /// Extra request header `K:V` (repeatable; `K=V` accepted too).
    #[arg(long = "header", value_name = "K:V", help_heading = "Target")]
    pub headers: Vec<String>,
    /// JSON object merged into every request body (overrides our keys), e.g.
    /// '{"temperature":0.7}' (AIPerf's --extra-inputs).
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
    #[arg(long, value_parser = ["both", "max_tokens", "max_completion_tokens"], help_heading = "Target")]
    pub max_tokens_field: Option<String>,
}

impl TargetArgs {
    /// `--header` values as (name, value) pairs. Errors: a value without `:` or `=`.
    pub fn parsed_headers(&self) -> anyhow::Result<Vec<(String, String)>> {
        bench::headers(&self.headers)
    }

    /// `--extra-body` as a JSON object. Errors: not JSON, or not an object.
    pub fn parsed_extra_body(
        &self,
    ) -> anyhow::Result<Option<serde_json::Map<String, serde_json::Value>>> {
        bench::extra_body(self.extra_body.as_deref())
    }

    /// `--max-tokens-field`, `None` for the caller's default.
    pub fn max_tokens(&self) -> Option<inferbench_client::MaxTokensField> {
        self.max_tokens_field
            .as_deref()
            .and_then(inferbench_client::MaxTokensField::parse)
    }
}

#[derive(Debug, Clone, clap::Args)]
pub struct PowerArgs {
    /// GPU power sampling into `power.csv` beside the result (`<result stem>.power.csv` with
    /// bench --save-result; needs --result-dir): auto (NVML, else nvidia-smi, else amd-smi,
    /// else none), off, nvml, nvidia-smi, amd-smi. The profiling window is integrated per GPU
    /// with InferenceX's validity rules (`power_validation.json`) into `inferbench.power` (W,
    /// J, J/token).
    #[arg(long, value_enum, default_value_t = PowerFlag::Auto, help_heading = "Output")]
    pub power: PowerFlag,
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

impl PowerArgs {
    /// The sampler mode (`--power`).
    pub fn mode(&self) -> inferbench_loadgen::PowerMode {
        use inferbench_loadgen::PowerMode as M;
        match self.power {
            PowerFlag::Auto => M::Auto,
            PowerFlag::Off => M::Off,
            PowerFlag::Nvml => M::Nvml,
            PowerFlag::NvidiaSmi => M::NvidiaSmi,
            PowerFlag::AmdSmi => M::AmdSmi,
        }
    }

    /// Refuses combinations that would silently measure nothing: `--require-power` with
    /// `--power off`; a named sampler or `--require-power` without a result directory
    /// (`has_result_dir` false).
    pub fn check(&self, has_result_dir: bool) -> anyhow::Result<()> {
        anyhow::ensure!(
            !(self.require_power && self.power == PowerFlag::Off),
            "--require-power with --power off: nothing would be measured"
        );
        anyhow::ensure!(
            has_result_dir
                || (self.power == PowerFlag::Auto && !self.require_power)
                || self.power == PowerFlag::Off,
            "--power {}/--require-power need --result-dir (power.csv goes there)",
            self.power.name()
        );
        Ok(())
    }
}

/// The one shutdown token of a subcommand: cancelled on the first SIGINT (Ctrl-C) or SIGTERM,
/// after printing `message (on SIGINT)` / `(on SIGTERM)` to stderr, so a stop nobody asked for
/// says what stopped it. Call inside a tokio runtime; every long-running
/// subcommand (bench, job/sweep, quickstart, sim) stops through it.
pub fn shutdown_token(message: &'static str) -> inferbench_client::CancellationToken {
    let token = inferbench_client::CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        // Which signal, so that a stop nobody at the terminal asked for explains itself.
        #[cfg(unix)]
        let which = {
            use tokio::signal::unix::{signal, SignalKind};
            match signal(SignalKind::terminate()) {
                Ok(mut term) => {
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => "SIGINT",
                        _ = term.recv() => "SIGTERM",
                    }
                }
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    "SIGINT"
                }
            }
        };
        #[cfg(not(unix))]
        let which = {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        };
        // Not eprintln!: with stderr closed (a reader gone) it would panic this task and the
        // token would never be cancelled.
        let _ = std::io::Write::write_fmt(
            &mut std::io::stderr(),
            format_args!("{message} (on {which})\n"),
        );
        t.cancel();
    });
    token
}
