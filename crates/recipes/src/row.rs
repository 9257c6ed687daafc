//! Typed read access to matrix rows (the JSON objects [`crate::matrix::generate`] emits), for the
//! runner: topology, concurrency, scenario and identity without re-parsing field names.

use serde_json::Value;

use crate::matrix::Row;

/// Topology of one worker pool (multi-node) or of the single-node server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topology {
    /// Worker replicas (1 for single node; `num-worker` for multi-node; 0 = aggregated decode).
    pub num_worker: i64,
    /// Tensor parallelism.
    pub tp: i64,
    /// Pipeline parallelism.
    pub pp: i64,
    /// Decode context parallelism (reuses TP GPUs).
    pub dcp: i64,
    /// Prefill context parallelism.
    pub pcp: i64,
    /// Expert parallelism.
    pub ep: i64,
    /// Data-parallel attention.
    pub dp_attn: bool,
}

fn topo_of(v: &serde_json::Map<String, Value>, default_workers: i64) -> Topology {
    let i = |k: &str, d: i64| v.get(k).and_then(Value::as_i64).unwrap_or(d);
    Topology {
        num_worker: i("num-worker", default_workers),
        tp: i("tp", 1),
        pp: i("pp", 1),
        dcp: i("dcp-size", 1),
        pcp: i("pcp-size", 1),
        ep: i("ep", 1),
        dp_attn: v.get("dp-attn").and_then(Value::as_bool).unwrap_or(false),
    }
}

/// Typed accessors over a matrix row.
pub trait RowExt {
    /// A string field, or `""`.
    fn str_of(&self, key: &str) -> &str;
    /// Whether this is a multi-node row (has `prefill`).
    fn is_multinode(&self) -> bool;
    /// Whether this is an agentic (`scenario-type: agentic-coding`) row.
    fn is_agentic(&self) -> bool;
    /// The single-node topology (`None` for multi-node rows).
    fn topology(&self) -> Option<Topology>;
    /// `(prefill, decode)` topologies of a multi-node row.
    fn workers(&self) -> Option<(Topology, Topology)>;
    /// Concurrencies: one for single-node rows, the list for multi-node rows.
    fn concurrencies(&self) -> Vec<i64>;
    /// `(isl, osl)` in tokens for fixed-seq rows.
    fn seq_lens(&self) -> Option<(i64, i64)>;
    /// `max-model-len` in tokens (fixed-seq rows).
    fn max_model_len(&self) -> Option<i64>;
    /// Whether the row asks for an eval run.
    fn run_eval(&self) -> bool;
    /// Whether the row is eval-only (no throughput run).
    fn eval_only(&self) -> bool;
    /// Agentic duration in seconds.
    fn duration_s(&self) -> Option<i64>;
    /// Agentic CPU-DRAM KV-offload budget in GB (decimal).
    fn total_cpu_dram_gb(&self) -> Option<i64>;
}

impl RowExt for Row {
    fn str_of(&self, key: &str) -> &str {
        self.get(key).and_then(Value::as_str).unwrap_or("")
    }
    fn is_multinode(&self) -> bool {
        self.get("prefill").is_some_and(Value::is_object)
    }
    fn is_agentic(&self) -> bool {
        self.str_of("scenario-type") == "agentic-coding"
    }
    fn topology(&self) -> Option<Topology> {
        if self.is_multinode() {
            return None;
        }
        Some(topo_of(self, 1))
    }
    fn workers(&self) -> Option<(Topology, Topology)> {
        let p = self.get("prefill")?.as_object()?;
        let d = self.get("decode")?.as_object()?;
        Some((topo_of(p, 1), topo_of(d, 1)))
    }
    fn concurrencies(&self) -> Vec<i64> {
        match self.get("conc") {
            Some(Value::Array(a)) => a.iter().filter_map(Value::as_i64).collect(),
            Some(v) => v.as_i64().into_iter().collect(),
            None => vec![],
        }
    }
    fn seq_lens(&self) -> Option<(i64, i64)> {
        Some((self.get("isl")?.as_i64()?, self.get("osl")?.as_i64()?))
    }
    fn max_model_len(&self) -> Option<i64> {
        self.get("max-model-len")?.as_i64()
    }
    fn run_eval(&self) -> bool {
        self.get("run-eval")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
    fn eval_only(&self) -> bool {
        self.get("eval-only")
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
    fn duration_s(&self) -> Option<i64> {
        self.get("duration")?.as_i64()
    }
    fn total_cpu_dram_gb(&self) -> Option<i64> {
        self.get("total-cpu-dram-gb")?.as_i64()
    }
}
