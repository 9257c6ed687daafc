//! One row of the job matrix, typed: what InferenceX's generator (and `inferbench matrix`) prints
//! (reference/inferencex-producer.md §2.3), what the runner records in `job.json` (`job.row`) and
//! what the store reads back from it. One definition for the writer and the reader.
//!
//! Rows come in four shapes (single-node/multinode × fixed-seq/agentic); one struct with optional
//! fields reads all of them. Fields this version does not know are kept verbatim in
//! [`MatrixRow::extra`] so nothing in a row is lost on the way to `job.json` and back.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `conc` of a row: an integer for single-node rows, the whole list for multinode rows (§2.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Conc {
    /// One concurrency (single-node rows: one row per concurrency).
    One(u32),
    /// Every concurrency of a multinode row (run sequentially on one engine).
    List(Vec<u32>),
}

impl Conc {
    /// The concurrencies as a list, in row order.
    pub fn values(&self) -> Vec<u32> {
        match self {
            Conc::One(c) => vec![*c],
            Conc::List(v) => v.clone(),
        }
    }

    /// The `conc` part of `RESULT_FILENAME`: `64` or `1x8x16` (§3.1).
    pub fn identity(&self) -> String {
        self.values()
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join("x")
    }
}

/// `{name, version?}` component metadata (`router`, `kv-offload-backend`; §1.4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Component {
    /// Component name, e.g. `sglang-router`, `hicache`.
    pub name: String,
    /// Release, package version or commit; optional for engine-native offload backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// One worker pool of a multinode row (`prefill` / `decode`, §1.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct WorkerSpec {
    /// Number of workers; decode `0` = aggregated multinode.
    pub num_worker: u32,
    /// Tensor parallelism per worker.
    pub tp: u32,
    /// Expert parallelism per worker.
    pub ep: u32,
    /// Data-parallel attention.
    pub dp_attn: bool,
    /// Pipeline parallelism (generator fills 1).
    #[serde(default = "one")]
    pub pp: u32,
    /// Decode-context parallel size (generator fills 1).
    #[serde(default = "one")]
    pub dcp_size: u32,
    /// Prefill-context parallel size (generator fills 1).
    #[serde(default = "one")]
    pub pcp_size: u32,
    /// `KEY=VALUE` strings exported into the launcher environment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_settings: Vec<String>,
    /// Heterogeneous-disagg hardware label (informational).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<String>,
}

fn one() -> u32 {
    1
}

/// One row of the job matrix, as InferenceX's generator (and `inferbench matrix`) prints it.
///
/// Field names are the row's kebab-case keys. Single-node rows carry `tp`…`dp-attn` at top level;
/// multinode rows carry `prefill`/`decode`. Agentic rows carry `scenario-type: agentic-coding`,
/// `duration` (s) and the KV-offload fields, and no `isl`/`osl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct MatrixRow {
    /// Container image (informational for local runs; recorded in `job.json`).
    pub image: String,
    /// HF model id, served alias or local path.
    pub model: String,
    /// Model family code (`dsr1`, `smollm2`, …).
    pub model_prefix: String,
    /// `fp4`, `fp8`, `bf16`, `int4`, `q4_1`, …
    pub precision: String,
    /// Serving framework (`vllm`, `sglang`, `trt`, `llamacpp`, `sim`, `dynamo-*`, …).
    pub framework: String,
    /// Runner label from `runners.yaml` (`b200`, `cluster:b300-nv`, `cpu`).
    pub runner: String,
    /// Input sequence length in tokens (fixed-seq rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isl: Option<u32>,
    /// Output sequence length in tokens (fixed-seq rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub osl: Option<u32>,
    /// Tensor parallelism (single-node rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tp: Option<u32>,
    /// Pipeline parallelism (single-node rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pp: Option<u32>,
    /// Decode-context parallel size (single-node rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dcp_size: Option<u32>,
    /// Prefill-context parallel size (single-node rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcp_size: Option<u32>,
    /// Concurrency: integer (single node) or list (multinode).
    pub conc: Conc,
    /// Server context length in tokens (`isl + osl + 256` for fixed-seq rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<u32>,
    /// Expert parallelism (single-node rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ep: Option<u32>,
    /// Data-parallel attention (single-node rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dp_attn: Option<bool>,
    /// `none`, `mtp` or `draft_model`.
    #[serde(default = "spec_none")]
    pub spec_decoding: String,
    /// Experiment name (`dsr1_8k1k`, `dsv4_tp8_conc32_kvnone`, …).
    pub exp_name: String,
    /// Disaggregated prefill/decode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disagg: Option<bool>,
    /// Whether an eval runs with this row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_eval: Option<bool>,
    /// Eval-only row (no throughput benchmark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_only: Option<bool>,
    /// Multinode prefill pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill: Option<WorkerSpec>,
    /// Multinode decode pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode: Option<WorkerSpec>,
    /// Router metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<Component>,
    /// KV transfer library for disaggregation (`nixl`, `mooncake`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_p2p_transfer: Option<String>,
    /// `agentic-coding` for agentic rows; absent for fixed-seq rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario_type: Option<String>,
    /// `none` or `dram` (agentic rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_offloading: Option<String>,
    /// KV-offload backend metadata (agentic rows with `kv-offloading: dram`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_offload_backend: Option<Component>,
    /// CPU DRAM budget for KV offload in GB (decimal; §2.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cpu_dram_gb: Option<u64>,
    /// Agentic run duration in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<u64>,
    /// Concurrency the eval runs at (multinode rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_conc: Option<u32>,
    /// Eval runs at every concurrency of the row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_all_concs: Option<bool>,
    /// 64-hex sha256 of the row's canonical JSON (changelog rows only, §3.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe_fingerprint: Option<String>,
    /// Fields this version does not model, kept verbatim (e.g. `priority`, `queue-token`).
    #[serde(flatten)]
    pub extra: BTreeMap<String, serde_json::Value>,
}

fn spec_none() -> String {
    "none".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_round_trips_with_its_unknown_fields() {
        let text = r#"{"image": "i", "model": "org/M", "model-prefix": "m", "precision": "fp8", "framework": "dynamo-sglang", "runner": "b300", "isl": 1024, "osl": 1024, "spec-decoding": "none", "prefill": {"num-worker": 1, "tp": 4, "ep": 1, "dp-attn": false, "pp": 1, "dcp-size": 1, "pcp-size": 1}, "decode": {"num-worker": 2, "tp": 8, "ep": 8, "dp-attn": true, "pp": 1, "dcp-size": 1, "pcp-size": 1}, "conc": [1, 8], "exp-name": "m_1k1k", "disagg": true, "priority": 3}"#;
        let row: MatrixRow = serde_json::from_str(text).unwrap();
        assert_eq!(row.conc.identity(), "1x8");
        assert_eq!(row.extra["priority"], 3);
        assert_eq!(row.decode.as_ref().map(|d| d.num_worker), Some(2));
        let back = serde_json::to_value(&row).unwrap();
        assert_eq!(
            back,
            serde_json::from_str::<serde_json::Value>(text).unwrap()
        );
        assert_eq!(Conc::One(64).values(), vec![64]);
    }
}
