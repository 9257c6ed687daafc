//! [`PointConfig`]: the configuration of one measured point, typed, built once from a matrix
//! row ([`MatrixRow`], also what `job.json` holds at `job.row`), the runner it ran on and its
//! concurrency. Everything that names a point's configuration derives from it here, once:
//!
//! - its InferenceX identity, `RESULT_FILENAME` ([`PointConfig::result_filename`],
//!   reference/inferencex-producer.md §3.1);
//! - the bench identity the aggregate `agg_<RESULT_FILENAME>.json` is written from
//!   ([`PointConfig::job_identity`], core's [`JobIdentity`]), with no environment map between;
//! - InferenceX's environment contract handed to external benchmark scripts
//!   ([`PointConfig::inferencex_env`], §3.2), the one writer of those variables.
//!
//! No I/O here.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::matrix::{Component, Conc, MatrixRow, WorkerSpec};
use crate::summary::{IdentityError, JobIdentity, Parallelism, Topology};

/// One worker pool of a multinode point (`prefill` or `decode`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Role {
    /// Worker replicas (`num-worker`; decode 0 = aggregated multinode).
    pub num_workers: u32,
    /// Per-worker layout.
    pub parallelism: Parallelism,
    /// Data-parallel attention.
    pub dp_attention: bool,
    /// Heterogeneous-disagg hardware label (`*_HARDWARE`).
    pub hardware: Option<String>,
    /// `KEY=VALUE` strings exported into the launcher environment as they are.
    pub additional_settings: Vec<String>,
}

impl Role {
    fn from_worker(w: &WorkerSpec) -> Self {
        Role {
            num_workers: w.num_worker,
            parallelism: Parallelism {
                tp: w.tp,
                pp: w.pp,
                dcp_size: w.dcp_size,
                pcp_size: w.pcp_size,
                ep: w.ep,
            },
            dp_attention: w.dp_attn,
            hardware: w.hardware.clone(),
            additional_settings: w.additional_settings.clone(),
        }
    }

    /// A role the row does not give: one worker, every size 1, no DP attention (the defaults
    /// `RESULT_FILENAME` names it by).
    fn absent() -> Self {
        Role {
            num_workers: 1,
            parallelism: ONES,
            dp_attention: false,
            hardware: None,
            additional_settings: Vec::new(),
        }
    }

    /// `tp<tp>-pp<pp>-dcp<dcp>-pcp<pcp>-ep<ep>-dp<bool>-nw<workers>` (§3.1).
    fn name(&self) -> String {
        let p = &self.parallelism;
        format!(
            "tp{}-pp{}-dcp{}-pcp{}-ep{}-dp{}-nw{}",
            p.tp, p.pp, p.dcp_size, p.pcp_size, p.ep, self.dp_attention, self.num_workers
        )
    }
}

/// The data-parallel-attention field's key in a matrix row and a master config (`dp-attn`,
/// kebab-case like the row's other keys; [`MatrixRow::dp_attn`], [`WorkerSpec::dp_attn`]).
pub const DP_ATTN_KEY: &str = "dp-attn";

/// The data-parallel-attention field's name in InferenceX's aggregate (`agg_*.json`), its eval
/// `meta_env.json` and the store's `configs` column (`dp_attention`; per pool
/// `prefill_dp_attention`, `decode_dp_attention`).
pub const DP_ATTENTION: &str = "dp_attention";

const ONES: Parallelism = Parallelism {
    tp: 1,
    pp: 1,
    dcp_size: 1,
    pcp_size: 1,
    ep: 1,
};

/// The configuration of one point: a matrix row on a concrete runner at one concurrency.
///
/// Built by [`PointConfig::from_row`]; sizes the row leaves out take their defaults (1, no DP
/// attention, not disaggregated), as InferenceX's scripts see them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointConfig {
    /// Runner label from `runners.yaml` (`RUNNER_TYPE`, aggregate `hw`, e.g. `b200`).
    pub runner_type: String,
    /// Concrete runner the point ran on (`RUNNER_NAME`, e.g. `b200-dgxc_03`).
    pub runner_name: String,
    /// Container image.
    pub image: String,
    /// HF model id, served alias or local path.
    pub model: String,
    /// Model family code (`dsr1`, …).
    pub model_prefix: String,
    /// Serving framework (`vllm`, `sglang`, `dynamo-sglang`, …).
    pub framework: String,
    /// Precision (`fp4`, `fp8`, …).
    pub precision: String,
    /// Speculative decoding (`none`, `mtp`, `draft_model`).
    pub spec_decoding: String,
    /// Experiment name (`dsr1_8k1k`, …).
    pub exp_name: String,
    /// Nominal input sequence length, tokens (fixed-seq rows).
    pub isl: Option<u32>,
    /// Nominal output sequence length, tokens (fixed-seq rows).
    pub osl: Option<u32>,
    /// Server context length, tokens.
    pub max_model_len: Option<u32>,
    /// This point's concurrency (max in-flight requests).
    pub conc: u32,
    /// The row's concurrencies (a multinode row's whole list names each of its points).
    pub row_conc: Conc,
    /// Single-node layout (1s where the row gives none, as for multinode rows).
    pub parallelism: Parallelism,
    /// Data-parallel attention of the single-node server.
    pub dp_attention: bool,
    /// Disaggregated prefill/decode.
    pub disagg: bool,
    /// Multinode prefill pool.
    pub prefill: Option<Role>,
    /// Multinode decode pool.
    pub decode: Option<Role>,
    /// `agentic-coding` for agentic rows; `None` for fixed-seq rows.
    pub scenario_type: Option<String>,
    /// Whether an eval runs with the row.
    pub run_eval: bool,
    /// Eval-only row.
    pub eval_only: bool,
    /// 64-hex recipe fingerprint (changelog rows).
    pub recipe_fingerprint: Option<String>,
    /// Router metadata.
    pub router: Option<Component>,
    /// KV transfer library for disaggregation.
    pub kv_p2p_transfer: Option<String>,
    /// KV offloading mode (`none`, `dram`; agentic rows).
    pub kv_offloading: Option<String>,
    /// KV-offload backend metadata.
    pub kv_offload_backend: Option<Component>,
    /// CPU DRAM budget for KV offload, GB (decimal).
    pub total_cpu_dram_gb: Option<u64>,
    /// Agentic run duration, seconds.
    pub duration: Option<u64>,
}

impl PointConfig {
    /// The configuration of `row`'s point at concurrency `conc` on the concrete runner
    /// `runner_name`. Never fails: absent sizes take their defaults.
    pub fn from_row(row: &MatrixRow, runner_name: &str, conc: u32) -> Self {
        PointConfig {
            runner_type: row.runner.clone(),
            runner_name: runner_name.to_string(),
            image: row.image.clone(),
            model: row.model.clone(),
            model_prefix: row.model_prefix.clone(),
            framework: row.framework.clone(),
            precision: row.precision.clone(),
            spec_decoding: row.spec_decoding.clone(),
            exp_name: row.exp_name.clone(),
            isl: row.isl,
            osl: row.osl,
            max_model_len: row.max_model_len,
            conc,
            row_conc: row.conc.clone(),
            parallelism: Parallelism {
                tp: row.tp.unwrap_or(1),
                pp: row.pp.unwrap_or(1),
                dcp_size: row.dcp_size.unwrap_or(1),
                pcp_size: row.pcp_size.unwrap_or(1),
                ep: row.ep.unwrap_or(1),
            },
            dp_attention: row.dp_attn.unwrap_or(false),
            disagg: row.disagg.unwrap_or(false),
            prefill: row.prefill.as_ref().map(Role::from_worker),
            decode: row.decode.as_ref().map(Role::from_worker),
            scenario_type: row.scenario_type.clone(),
            run_eval: row.run_eval.unwrap_or(false),
            eval_only: row.eval_only.unwrap_or(false),
            recipe_fingerprint: row.recipe_fingerprint.clone(),
            router: row.router.clone(),
            kv_p2p_transfer: row.kv_p2p_transfer.clone(),
            kv_offloading: row.kv_offloading.clone(),
            kv_offload_backend: row.kv_offload_backend.clone(),
            total_cpu_dram_gb: row.total_cpu_dram_gb,
            duration: row.duration,
        }
    }

    /// True for multinode points (the row has a `prefill` or `decode` pool).
    pub fn is_multinode(&self) -> bool {
        self.prefill.is_some() || self.decode.is_some()
    }

    /// True for AgentX points (`scenario-type: agentic-coding`).
    pub fn is_agentic(&self) -> bool {
        self.scenario_type.as_deref() == Some("agentic-coding")
    }

    /// GPUs of one single-node replica (`GPU_COUNT`): `tp × pp × pcp`, saturating at `u32::MAX`.
    pub fn gpu_count(&self) -> u32 {
        u32::try_from(self.parallelism.gpus()).unwrap_or(u32::MAX)
    }

    /// InferenceX's `RESULT_FILENAME` (reference/inferencex-producer.md §3.1).
    ///
    /// Single node: `<exp-name>_<precision>_<framework>_tp<tp>-pp<pp>-dcp<dcp>-pcp<pcp>-ep<ep>
    /// -dpa<bool>_disagg-<bool>_spec-<spec>_conc<conc>_<runner_name>`; multinode (a `prefill`
    /// pool): `…_prefill-tp…-nw<n>_decode-…_disagg-<bool>_spec-<spec>_conc<c1xc2…>_<runner_name>`
    /// (an absent decode pool named by its defaults). An empty spec is `none`; with a recipe
    /// fingerprint, `_recipe-<its first 16 characters>` follows. Example:
    /// `dsr1_8k1k_fp4_sglang_tp4-pp1-dcp1-pcp1-ep4-dpatrue_disagg-false_spec-none_conc64_b200-dgxc_03`.
    pub fn result_filename(&self) -> String {
        let head = format!("{}_{}_{}", self.exp_name, self.precision, self.framework);
        let spec = match self.spec_decoding.as_str() {
            "" => "none",
            s => s,
        };
        let tail = format!(
            "_disagg-{}_spec-{spec}_conc{}_{}",
            self.disagg,
            self.row_conc.identity(),
            self.runner_name
        );
        let mut name = match &self.prefill {
            Some(p) => {
                let d = self.decode.clone().unwrap_or_else(Role::absent);
                format!("{head}_prefill-{}_decode-{}{tail}", p.name(), d.name())
            }
            None => {
                let p = &self.parallelism;
                format!(
                    "{head}_tp{}-pp{}-dcp{}-pcp{}-ep{}-dpa{}{tail}",
                    p.tp, p.pp, p.dcp_size, p.pcp_size, p.ep, self.dp_attention
                )
            }
        };
        if let Some(fp) = &self.recipe_fingerprint {
            name.push_str("_recipe-");
            name.extend(fp.chars().take(16));
        }
        name
    }

    /// The bench identity of this point: what `agg_<RESULT_FILENAME>.json` is written from,
    /// with the values InferenceX's `process_result.py` would read from this point's
    /// environment ([`PointConfig::inferencex_env`]) and the same checks
    /// ([`JobIdentity::from_lookup`]'s).
    ///
    /// Errors: [`IdentityError::Missing`] (`PREFILL_GPUS`, `DECODE_GPUS`) for a multinode
    /// point, whose GPU counts only its engine knows; [`IdentityError::DisaggRequiresMultinode`]
    /// for a disaggregated single-node row; [`IdentityError::Invalid`] for a size below 1 or
    /// router metadata without a non-empty `name` and `version`.
    pub fn job_identity(&self) -> Result<JobIdentity, IdentityError> {
        if self.is_multinode() {
            return Err(IdentityError::Missing(vec![
                "PREFILL_GPUS".into(),
                "DECODE_GPUS".into(),
            ]));
        }
        if self.disagg {
            return Err(IdentityError::DisaggRequiresMultinode);
        }
        let p = &self.parallelism;
        for (var, v) in [
            ("TP", p.tp),
            ("PP_SIZE", p.pp),
            ("DCP_SIZE", p.dcp_size),
            ("PCP_SIZE", p.pcp_size),
            ("EP_SIZE", p.ep),
        ] {
            if v < 1 {
                return Err(IdentityError::Invalid {
                    var: var.into(),
                    value: v.to_string(),
                    reason: "must be ≥ 1".into(),
                });
            }
        }
        let router = match &self.router {
            Some(r) => Some(router_value(r)?),
            None => None,
        };
        let agentic = self.is_agentic();
        let len = |v: Option<u32>| if agentic { 0 } else { v.unwrap_or(0) };
        Ok(JobIdentity {
            runner_type: self.runner_type.clone(),
            framework: self.framework.clone(),
            precision: self.precision.clone(),
            spec_decoding: self.spec_decoding.clone(),
            result_filename: self.result_filename(),
            isl: len(self.isl),
            osl: len(self.osl),
            disagg: false,
            model_prefix: self.model_prefix.clone(),
            image: self.image.clone(),
            recipe_fingerprint: self.recipe_fingerprint.clone().unwrap_or_default(),
            router,
            kv_p2p_transfer: self.kv_p2p_transfer.clone().filter(|v| !v.is_empty()),
            topology: Topology::SingleNode {
                parallelism: *p,
                dp_attention: self.dp_attention.to_string(),
            },
        })
    }

    /// The environment InferenceX hands a benchmark script for this point (reference §3.2), on
    /// server port `port` with result directory `result_dir`, in a fixed order. Agentic points
    /// get `ISL=OSL=MAX_MODEL_LEN=0` as InferenceX dispatches them; multinode points add
    /// `IS_MULTINODE` and the `PREFILL_*`/`DECODE_*` pool variables, then each pool's
    /// `additional-settings` pairs as they are (prefill first).
    pub fn inferencex_env(&self, port: u16, result_dir: &Path) -> Vec<(String, String)> {
        let agentic = self.is_agentic();
        let mut env: Vec<(String, String)> = Vec::new();
        let mut set = |k: &str, v: String| env.push((k.to_string(), v));
        let len = |v: Option<u32>| {
            if agentic {
                "0".into()
            } else {
                v.unwrap_or(0).to_string()
            }
        };
        let json = |c: &Option<Component>| {
            c.as_ref()
                .map(|c| serde_json::to_string(c).unwrap_or_default())
                .unwrap_or_default()
        };
        let p = &self.parallelism;
        set("MODEL", self.model.clone());
        set("MODEL_PREFIX", self.model_prefix.clone());
        set("ISL", len(self.isl));
        set("OSL", len(self.osl));
        set("MAX_MODEL_LEN", len(self.max_model_len));
        set("IMAGE", self.image.clone());
        set("FRAMEWORK", self.framework.clone());
        set("PRECISION", self.precision.clone());
        set("TP", p.tp.to_string());
        set("PP_SIZE", p.pp.to_string());
        set("DCP_SIZE", p.dcp_size.to_string());
        set("PCP_SIZE", p.pcp_size.to_string());
        set("EP_SIZE", p.ep.to_string());
        set("DP_ATTENTION", self.dp_attention.to_string());
        set("CONC", self.conc.to_string());
        set("SPEC_DECODING", self.spec_decoding.clone());
        set("DISAGG", self.disagg.to_string());
        set("RUN_EVAL", self.run_eval.to_string());
        set("EVAL_ONLY", self.eval_only.to_string());
        set("EXP_NAME", self.exp_name.clone());
        set(
            "RECIPE_FINGERPRINT",
            self.recipe_fingerprint.clone().unwrap_or_default(),
        );
        set("RESULT_FILENAME", self.result_filename());
        set("RUNNER_TYPE", self.runner_type.clone());
        set("RUNNER_NAME", self.runner_name.clone());
        set("GPU_COUNT", self.gpu_count().to_string());
        set("RANDOM_RANGE_RATIO", "0.8".into());
        set("PORT", port.to_string());
        set(
            "SCENARIO_TYPE",
            (self.scenario_type.clone()).unwrap_or_else(|| "fixed-seq-len".into()),
        );
        let subdir = if agentic {
            "agentic/"
        } else {
            "fixed_seq_len/"
        };
        set("SCENARIO_SUBDIR", subdir.into());
        set("IS_AGENTIC", agentic.to_string());
        set(
            "KV_OFFLOADING",
            (self.kv_offloading.clone()).unwrap_or_else(|| "none".into()),
        );
        set(
            "KV_OFFLOAD_BACKEND",
            (self.kv_offload_backend.as_ref())
                .map(|c| c.name.clone())
                .unwrap_or_default(),
        );
        set(
            "KV_OFFLOAD_BACKEND_METADATA",
            json(&self.kv_offload_backend),
        );
        set("ROUTER_METADATA", json(&self.router));
        set(
            "KV_P2P_TRANSFER",
            self.kv_p2p_transfer.clone().unwrap_or_default(),
        );
        set(
            "TOTAL_CPU_DRAM_GB",
            self.total_cpu_dram_gb.unwrap_or(0).to_string(),
        );
        set(
            "DURATION",
            self.duration.map(|d| d.to_string()).unwrap_or_default(),
        );
        set("RESULT_DIR", result_dir.display().to_string());
        if self.is_multinode() {
            set("IS_MULTINODE", "true".into());
            for (prefix, role) in [("PREFILL", &self.prefill), ("DECODE", &self.decode)] {
                let Some(r) = role else { continue };
                let q = &r.parallelism;
                set(&format!("{prefix}_NUM_WORKERS"), r.num_workers.to_string());
                set(&format!("{prefix}_TP"), q.tp.to_string());
                set(&format!("{prefix}_PP_SIZE"), q.pp.to_string());
                set(&format!("{prefix}_DCP_SIZE"), q.dcp_size.to_string());
                set(&format!("{prefix}_PCP_SIZE"), q.pcp_size.to_string());
                set(&format!("{prefix}_EP"), q.ep.to_string());
                set(&format!("{prefix}_DP_ATTN"), r.dp_attention.to_string());
                if let Some(h) = &r.hardware {
                    set(&format!("{prefix}_HARDWARE"), h.clone());
                }
            }
            for r in [&self.prefill, &self.decode].into_iter().flatten() {
                for kv in &r.additional_settings {
                    if let Some((k, v)) = kv.split_once('=') {
                        set(k, v.to_string());
                    }
                }
            }
        }
        env
    }
}

impl PointConfig {
    /// The eval artifact's `meta_env.json` for this point (`eval_<EXP_NAME>_<RESULT_FILENAME>/`,
    /// reference §10.2's field list): the identity InferenceX's eval collector reads, the one
    /// writer of it. `conc` is this point's (the eval's) concurrency; `isl`/`osl` strings as
    /// InferenceX writes them (`""` when the row has none); `scenario_type` only for agentic
    /// points; each pool's `<role>_tp`, `_pp`, `_dcp_size`, `_pcp_size`, `_ep`,
    /// `_dp_attention`, `_num_workers` for a multinode point; `result_filename` last before
    /// them ([`PointConfig::result_filename`]).
    pub fn eval_meta_env(&self) -> Value {
        let p = &self.parallelism;
        let text = |v: Option<u32>| v.map(|x| x.to_string()).unwrap_or_default();
        let mut m = serde_json::json!({
            "is_multinode": self.is_multinode(),
            "framework": self.framework,
            "precision": self.precision,
            "spec_decoding": self.spec_decoding,
            "recipe_fingerprint": self.recipe_fingerprint.clone().unwrap_or_default(),
            "tp": p.tp,
            "pp": p.pp,
            "dcp_size": p.dcp_size,
            "pcp_size": p.pcp_size,
            "conc": self.conc,
            "ep": p.ep,
            DP_ATTENTION: self.dp_attention,
            "model": self.model,
            "infmax_model_prefix": self.model_prefix,
            "hw": self.runner_type,
            "isl": text(self.isl),
            "osl": text(self.osl),
            "result_filename": self.result_filename(),
        });
        if self.is_agentic() {
            m["scenario_type"] = Value::from("agentic-coding");
        }
        for (role, r) in [("prefill", &self.prefill), ("decode", &self.decode)] {
            let Some(r) = r else { continue };
            let q = &r.parallelism;
            m[format!("{role}_tp")] = Value::from(q.tp);
            m[format!("{role}_pp")] = Value::from(q.pp);
            m[format!("{role}_dcp_size")] = Value::from(q.dcp_size);
            m[format!("{role}_pcp_size")] = Value::from(q.pcp_size);
            m[format!("{role}_ep")] = Value::from(q.ep);
            m[format!("{role}_{DP_ATTENTION}")] = Value::from(r.dp_attention);
            m[format!("{role}_num_workers")] = Value::from(r.num_workers);
        }
        m
    }
}

/// Router metadata as the aggregate's `router`: exactly `{"name", "version"}`, both non-empty
/// (InferenceX's rule for `ROUTER_METADATA`).
fn router_value(r: &Component) -> Result<Value, IdentityError> {
    let written = serde_json::to_string(r).unwrap_or_default();
    let bad = |reason: &str| IdentityError::Invalid {
        var: "ROUTER_METADATA".into(),
        value: written.clone(),
        reason: reason.into(),
    };
    let version = r.version.as_deref().unwrap_or("");
    if r.version.is_none() {
        return Err(bad("expected exactly the keys \"name\" and \"version\""));
    }
    for (k, v) in [("name", r.name.as_str()), ("version", version)] {
        if v.trim().is_empty() {
            return Err(bad(&format!("\"{k}\" must be a non-empty string")));
        }
    }
    Ok(serde_json::json!({"name": r.name, "version": version}))
}

#[cfg(test)]
mod tests;
