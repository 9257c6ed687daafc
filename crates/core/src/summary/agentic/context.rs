//! The job context of an agentic aggregate ([`AgenticContext`]: identity, topology, component
//! metadata, dataset provenance) and what it says of the aggregate's fields.

use super::*;

/// `{name, version}` of a component (`ROUTER_METADATA`; `KV_OFFLOAD_BACKEND_METADATA`, whose
/// version is optional), §4.5.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentMeta {
    /// Component name (`vllm-router`, `lmcache`, …).
    pub name: String,
    /// Component version; may be absent for a KV-offload backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Dataset provenance (AIPerf `metadata.dataset`, copied into the aggregate's `dataset`, §4.3,
/// §4.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatasetProvenance {
    /// `public_dataset` (HF corpus) or `local` (a `weka_trace` directory).
    pub source_type: String,
    /// AIPerf loader alias (`semianalysis_cc_traces_weka_with_subagents`, …).
    pub loader: String,
    /// HF dataset repo (`semianalysisai/cc-traces-weka-062126`); `None` for local traces.
    pub hf_dataset_name: Option<String>,
    /// HF split (`train`).
    pub hf_split: Option<String>,
    /// Traces in the loaded corpus.
    pub num_dataset_entries: u64,
}

/// What the aggregate copies from the job rather than the records (the script's environment,
/// §4.5): identity, layout, KV-offload settings, dataset and the KV pool capacity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgenticContext {
    /// `RUNNER_TYPE` (aggregate `hw`).
    pub hw: String,
    /// `CONC`: lanes (users).
    pub conc: u32,
    /// `IMAGE`.
    pub image: String,
    /// `RECIPE_FINGERPRINT`.
    pub recipe_fingerprint: String,
    /// `MODEL`.
    pub model: String,
    /// `MODEL_PREFIX` (aggregate `infmax_model_prefix`).
    pub model_prefix: String,
    /// `FRAMEWORK` (`vllm`, `sglang`, …); also picks the server-metrics adapter when there are no
    /// metrics.
    pub framework: String,
    /// `PRECISION`.
    pub precision: String,
    /// `SPEC_DECODING` (default `none`).
    pub spec_decoding: String,
    /// `DISAGG`.
    pub disagg: bool,
    /// Single node (`TP`, `PP_SIZE`, `DCP_SIZE`, `PCP_SIZE`, `EP_SIZE`, `DP_ATTENTION`) or
    /// multinode (`PREFILL_*` / `DECODE_*` workers and layouts; `prefill_gpus`/`decode_gpus` are
    /// not used here: the agentic script counts workers × tp × pp × pcp).
    pub topology: Topology,
    /// `KV_OFFLOADING` (`none`, `dram`, …).
    pub kv_offloading: String,
    /// `KV_OFFLOAD_BACKEND_METADATA` (`null` when offloading is `none`).
    pub kv_offload_backend: Option<ComponentMeta>,
    /// `TOTAL_CPU_DRAM_GB`, GB.
    pub allocated_cpu_dram_gb: i64,
    /// `ROUTER_METADATA`.
    pub router: Option<ComponentMeta>,
    /// `KV_P2P_TRANSFER` when set.
    pub kv_p2p_transfer: Option<String>,
    /// Dataset provenance (the script copies AIPerf's `metadata.dataset`).
    pub dataset: Option<DatasetProvenance>,
    /// GPU KV-cache pool, tokens, from the server log (vLLM `GPU KV cache size: N tokens` summed
    /// per engine, SGLang `max_total_num_tokens`); see [`kv_pool_tokens_from_server_log`].
    pub kv_cache_pool_tokens: Option<u64>,
}

impl Default for AgenticContext {
    fn default() -> Self {
        AgenticContext {
            hw: String::new(),
            conc: 0,
            image: String::new(),
            recipe_fingerprint: String::new(),
            model: String::new(),
            model_prefix: String::new(),
            framework: String::new(),
            precision: String::new(),
            spec_decoding: "none".into(),
            disagg: false,
            topology: Topology::SingleNode {
                parallelism: Parallelism {
                    tp: 1,
                    pp: 1,
                    dcp_size: 1,
                    pcp_size: 1,
                    ep: 1,
                },
                dp_attention: "false".into(),
            },
            kv_offloading: "none".into(),
            kv_offload_backend: None,
            allocated_cpu_dram_gb: 0,
            router: None,
            kv_p2p_transfer: None,
            dataset: None,
            kv_cache_pool_tokens: None,
        }
    }
}

fn truthy(s: &str) -> bool {
    matches!(s.to_lowercase().as_str(), "1" | "true" | "yes" | "on")
}

fn role_gpus(r: &RoleTopology) -> u64 {
    u64::from(r.num_workers) * r.parallelism.gpus()
}

impl AgenticContext {
    /// GPUs of the job as the agentic script counts them (§4.5): tp · pp · pcp single node;
    /// Σ workers · tp · pp · pcp over prefill and decode multinode.
    pub fn num_gpus(&self) -> u64 {
        match &self.topology {
            Topology::SingleNode { parallelism, .. } => parallelism.gpus(),
            Topology::MultiNode {
                prefill, decode, ..
            } => role_gpus(prefill) + role_gpus(decode),
        }
    }

    pub(super) fn layout(&self) -> (u32, u32, String, TopologyFields) {
        match &self.topology {
            Topology::SingleNode {
                parallelism,
                dp_attention,
            } => (
                parallelism.tp,
                parallelism.ep,
                dp_attention.clone(),
                TopologyFields::Single(SingleNodeFields {
                    pp: parallelism.pp,
                    dcp_size: parallelism.dcp_size,
                    pcp_size: parallelism.pcp_size,
                }),
            ),
            Topology::MultiNode {
                prefill,
                decode,
                prefill_hw,
                decode_hw,
                ..
            } => {
                let (p, mut d) = (prefill.parallelism, decode.parallelism);
                let num_prefill_gpu = role_gpus(prefill);
                let num_decode_gpu = role_gpus(decode);
                if num_decode_gpu == 0 {
                    d = Parallelism {
                        tp: 0,
                        ep: 0,
                        pp: 1,
                        dcp_size: 1,
                        pcp_size: 1,
                    };
                }
                let dp = if truthy(&prefill.dp_attention) || truthy(&decode.dp_attention) {
                    "true"
                } else {
                    "false"
                };
                let hw = match (prefill_hw, decode_hw) {
                    (Some(a), Some(b)) if !a.is_empty() => (Some(a.clone()), Some(b.clone())),
                    _ => (None, None),
                };
                (
                    p.tp + d.tp,
                    p.ep.max(d.ep),
                    dp.to_string(),
                    TopologyFields::Multi(MultiNodeFields {
                        prefill_num_workers: prefill.num_workers,
                        prefill_tp: p.tp,
                        prefill_pp: p.pp,
                        prefill_dcp_size: p.dcp_size,
                        prefill_pcp_size: p.pcp_size,
                        prefill_ep: p.ep,
                        prefill_dp_attention: prefill.dp_attention.clone(),
                        num_prefill_gpu,
                        decode_num_workers: decode.num_workers,
                        decode_tp: d.tp,
                        decode_pp: d.pp,
                        decode_dcp_size: d.dcp_size,
                        decode_pcp_size: d.pcp_size,
                        decode_ep: d.ep,
                        decode_dp_attention: decode.dp_attention.clone(),
                        num_decode_gpu,
                        prefill_hw: hw.0,
                        decode_hw: hw.1,
                    }),
                )
            }
        }
    }
}
