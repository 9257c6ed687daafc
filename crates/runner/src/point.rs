//! One concurrency point against a ready server: the seam between the runner and the load
//! generator. [`PointRunner`] is implemented over `inferbench_loadgen::run_bench` for real runs
//! ([`crate::bench::LoadgenPoint`]) and by fakes in tests, so engine, readiness, artifact and
//! executor logic is testable without the load generator.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::jobspec::JobSpec;
use inferbench_core::artifacts::{ClientFeatures, ReplaySettings};

/// InferenceX's client defaults for a fixed-seq point (reference/inferencex-producer.md §5.3):
/// `10 × conc` prompts, `2 × conc` warmups, range ratio 0.8, `ignore_eos`, unlimited rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchDefaults {
    /// Prompts per unit of concurrency (InferenceX: 10).
    pub prompts_per_conc: u32,
    /// Warmup requests per unit of concurrency (InferenceX: 2).
    pub warmups_per_conc: u32,
    /// Fixed prompt count overriding `prompts_per_conc × conc` (None = InferenceX rule).
    pub num_prompts: Option<u32>,
    /// Random range ratio r: lengths uniform in `[r·L, L]` (InferenceX: 0.8).
    pub range_ratio: f64,
    /// Ask the server to ignore EOS so every request yields exactly OSL tokens (InferenceX: on).
    pub ignore_eos: bool,
    /// Tokenizer spec for prompt synthesis (`o200k_base`, `cl100k_base` or a tokenizer.json path;
    /// None = the load generator's default).
    pub tokenizer: Option<String>,
    /// Random seed for prompt synthesis.
    pub seed: u64,
    /// OpenAI endpoint path (default `/v1/completions`).
    pub endpoint: String,
    /// Per-request total timeout in seconds (None = load generator default).
    pub request_timeout_s: Option<f64>,
    /// AgentX traces (a `traces.jsonl` or a directory) for `agentic-coding` rows, which carry
    /// no dataset path (`sweep --traces`).
    #[serde(default)]
    pub traces: Option<PathBuf>,
    /// Replay duration override for agentic rows, seconds (default: the row's `duration`, else
    /// 3,600). Below 900 s the point is marked invalid (AgentX's minimum).
    #[serde(default)]
    pub agentic_duration_s: Option<f64>,
    /// How long in-flight agentic requests may run on after the duration, seconds (default 30,
    /// AIPerf's benchmark grace period); then they are cancelled.
    #[serde(default)]
    pub agentic_grace_s: Option<f64>,
    /// Warmup requests per lane before an agentic replay's measured window (default: AgentX's
    /// 10, `SchedConfig`; the agentic quickstart's short preview uses 2).
    pub agentic_warmup_per_lane: Option<u32>,
    /// What every request carries beyond the body: header templates, dp-rank round-robin,
    /// `allow_empty_content`, the backend (`sweep --header-template` …; issue 41).
    #[serde(default)]
    pub client: ClientFeatures,
    /// `sweep --adaptive`'s early stop within a point (issue 43): a fixed-sequence point's
    /// profile may end once its median interactivity and throughput are known to within this
    /// relative tolerance at 95 % confidence (`inferbench_loadgen::early_stop`); `None` (the
    /// default): every point sends its 10 × conc prompts. An AgentX replay longer than 900 s may end once
    /// its p90 E2E-normalized interactivity is known, never before 900 s of profiling
    /// (`inferbench_loadgen::early_stop::AgenticEarlyStop`).
    #[serde(default)]
    pub early_stop_tolerance: Option<f64>,
}

impl Default for BenchDefaults {
    fn default() -> Self {
        BenchDefaults {
            prompts_per_conc: 10,
            warmups_per_conc: 2,
            num_prompts: None,
            range_ratio: 0.8,
            ignore_eos: true,
            tokenizer: None,
            seed: 0,
            endpoint: "/v1/completions".into(),
            request_timeout_s: None,
            traces: None,
            agentic_duration_s: None,
            agentic_grace_s: None,
            agentic_warmup_per_lane: None,
            client: ClientFeatures::default(),
            early_stop_tolerance: None,
        }
    }
}

impl BenchDefaults {
    /// Prompts for a point at `conc`: `num_prompts` or `prompts_per_conc × conc`.
    pub fn prompts(&self, conc: u32) -> u32 {
        self.num_prompts
            .unwrap_or(self.prompts_per_conc.saturating_mul(conc))
    }
    /// Warmups for a point at `conc`: `warmups_per_conc × conc`.
    pub fn warmups(&self, conc: u32) -> u32 {
        self.warmups_per_conc.saturating_mul(conc)
    }

    /// An agentic row's replay settings as its point runs them (and `job.json` records them):
    /// `agentic_duration_s`, else the row's `row_duration_s`, else 3,600 s; `agentic_grace_s`,
    /// else the replay's default grace (AIPerf's 30 s); `agentic_warmup_per_lane`, else
    /// AgentX's 10; the scheduler's seed (42, AgentX's).
    pub fn replay_settings(&self, row_duration_s: Option<u64>) -> ReplaySettings {
        use inferbench_loadgen::agentic::{ReplayOptions, SchedConfig};
        ReplaySettings {
            traces: self.traces.as_ref().map(|p| p.display().to_string()),
            duration_s: (self.agentic_duration_s)
                .or(row_duration_s.map(|d| d as f64))
                .unwrap_or(3_600.0),
            grace_s: (self.agentic_grace_s)
                .unwrap_or_else(|| ReplayOptions::default().grace.as_secs_f64()),
            warmup_per_lane: (self.agentic_warmup_per_lane)
                .unwrap_or(SchedConfig::default().warmup_per_lane),
            seed: SchedConfig::default().seed,
        }
    }
}

/// `client`'s header templates as the load generator takes them: each `header_templates`
/// entry, then `dp_rank_roundrobin`'s `X-data-parallel-rank: {i%N}`. Errors name the flag: no
/// `:`, an empty name, a bad `{i%N}`, N = 0, or one header named twice.
pub fn header_templates(
    client: &ClientFeatures,
) -> anyhow::Result<Vec<inferbench_client::HeaderTemplate>> {
    let mut out = Vec::new();
    for t in &client.header_templates {
        out.push(
            inferbench_client::HeaderTemplate::parse(t)
                .map_err(|e| anyhow::anyhow!("--header-template: {e}"))?,
        );
    }
    if let Some(n) = client.dp_rank_roundrobin {
        anyhow::ensure!(n >= 1, "--dp-rank-roundrobin: N must be ≥ 1");
        out.push(inferbench_client::HeaderTemplate::dp_rank(n));
    }
    for (i, t) in out.iter().enumerate() {
        if out[..i]
            .iter()
            .any(|o| o.name.eq_ignore_ascii_case(&t.name))
        {
            anyhow::bail!(
                "--header-template/--dp-rank-roundrobin: header {:?} is given twice",
                t.name
            );
        }
    }
    Ok(out)
}

/// `client`'s `--tls-ca` / `--insecure` as the client takes them: how an `https://` server is
/// verified by every request of a point, its readiness probes, `/metrics` scrapes and eval.
pub fn tls(client: &ClientFeatures) -> inferbench_client::tls::TlsOptions {
    inferbench_client::tls::TlsOptions {
        ca_file: client.tls_ca.clone(),
        insecure: client.insecure,
    }
}

/// How a sweep's side requests (readiness probes, `/v1/models`, `/metrics`) reach the server:
/// TLS as [`tls`] says, direct.
pub fn reach(client: &ClientFeatures) -> inferbench_client::Reach {
    inferbench_client::Reach {
        tls: tls(client),
        ..Default::default()
    }
}

/// `client`'s backend, `None` when not set. Errors: an unknown name (`--backend`).
pub fn backend(client: &ClientFeatures) -> anyhow::Result<Option<inferbench_client::Backend>> {
    client
        .backend
        .as_deref()
        .map(|b| {
            inferbench_client::Backend::parse(b).ok_or_else(|| {
                anyhow::anyhow!(
                    "--backend: unknown backend {b:?} (openai, openai-chat, openai-responses)"
                )
            })
        })
        .transpose()
}

/// Everything a load generator needs for one point.
#[derive(Debug, Clone)]
pub struct PointRequest {
    /// The job.
    pub spec: JobSpec,
    /// Concurrency (`--max-concurrency`).
    pub conc: u32,
    /// Server base URL, e.g. `http://127.0.0.1:8888`.
    pub base_url: String,
    /// Model name to send in requests (the row's `model`).
    pub model: String,
    /// Input length in tokens (row `isl`; agentic rows: 0).
    pub isl: u32,
    /// Output length in tokens (row `osl`; agentic rows: 0).
    pub osl: u32,
    /// Prompts to send.
    pub num_prompts: u32,
    /// Warmup requests.
    pub num_warmups: u32,
    /// Client settings.
    pub bench: BenchDefaults,
    /// Point directory: the load generator writes `summary.json`, `requests.jsonl.zst` here.
    pub dir: PathBuf,
    /// `RESULT_FILENAME` of the point (for `agg_<RESULT_FILENAME>.json`).
    pub result_filename: String,
    /// Concrete runner name.
    pub runner_name: String,
    /// The server is `inferbench sim` launched by this sweep (a `framework: sim` row) at this
    /// time scale (`--sim-arg --time-scale K`, K ≠ 1): the point is rewritten in modelled time
    /// as [`crate::bench::LoadgenPoint::sim_time_scale`] does for `sweep --sim`. `None`: a real
    /// engine, or the sim in real time.
    pub sim_time_scale: Option<f64>,
    /// An AgentX point's record bound ([`crate::SweepOptions::record_bounds`] of its row):
    /// its replay's profile ends when the records kept reach it. `None`: not bounded (a
    /// fixed-length point, or no `ulimit -v`).
    pub record_bound: Option<inferbench_loadgen::options::RecordBound>,
}

/// What a point produced. Files are written by the runner from these values.
#[derive(Debug, Clone, Default)]
pub struct PointOutput {
    /// The vLLM-shaped run summary (`summary.json`).
    pub summary: serde_json::Value,
    /// InferenceX aggregate (`agg_<RESULT_FILENAME>.json`), when the load generator builds it.
    pub aggregate: Option<serde_json::Value>,
    /// Successful requests in the profile phase.
    pub completed: u64,
    /// Failed requests in the profile phase.
    pub failed: u64,
    /// The run was interrupted (Ctrl-C) before it finished.
    pub interrupted: bool,
    /// Why the point fails a quality gate although it ran (e.g. InferenceX's 5 % error-rate
    /// limit); the summary is still written.
    pub gate: Option<String>,
    /// The server could not be reached (the load generator's exit status 3): the point fails
    /// with class `server_unreachable`, in the words of `gate`.
    pub unreachable: bool,
}

/// Runs one point against a ready server.
#[allow(async_fn_in_trait)]
pub trait PointRunner {
    /// Benchmarks `req`; an `Err` fails the point with class `bench_failed` (the engine is kept).
    async fn run_point(
        &self,
        req: &PointRequest,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> anyhow::Result<PointOutput>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sweep's client features parse as `bench`'s flags do, and bad ones are refused with
    /// the flag's name.
    #[test]
    fn client_features_parse_or_name_the_flag() {
        let c = ClientFeatures {
            header_templates: vec!["X-Req: r{i%3}".into()],
            dp_rank_roundrobin: Some(2),
            backend: Some("chat".into()),
            ..Default::default()
        };
        let t: Vec<(String, String)> = (header_templates(&c).unwrap().into_iter())
            .map(|t| (t.name, t.value))
            .collect();
        assert_eq!(
            t,
            [
                ("X-Req".to_string(), "r{i%3}".to_string()),
                ("X-data-parallel-rank".to_string(), "{i%2}".to_string())
            ]
        );
        assert_eq!(
            backend(&c).unwrap(),
            Some(inferbench_client::Backend::OpenAiChat)
        );
        assert_eq!(backend(&ClientFeatures::default()).unwrap(), None);
        let twice = ClientFeatures {
            header_templates: vec!["x-data-parallel-rank: {i}".into()],
            dp_rank_roundrobin: Some(2),
            ..Default::default()
        };
        assert_eq!(
            header_templates(&twice).unwrap_err().to_string(),
            "--header-template/--dp-rank-roundrobin: header \"X-data-parallel-rank\" is given twice"
        );
        let bad = ClientFeatures {
            header_templates: vec!["no colon".into()],
            ..Default::default()
        };
        assert!(header_templates(&bad)
            .unwrap_err()
            .to_string()
            .starts_with("--header-template: "));
        let zero = ClientFeatures {
            dp_rank_roundrobin: Some(0),
            ..Default::default()
        };
        assert!(header_templates(&zero).is_err());
        let unknown = ClientFeatures {
            backend: Some("grpc".into()),
            ..Default::default()
        };
        assert_eq!(
            backend(&unknown).unwrap_err().to_string(),
            "--backend: unknown backend \"grpc\" (openai, openai-chat, openai-responses)"
        );
    }
}
