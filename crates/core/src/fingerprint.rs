//! The server-settings fingerprint: which server a point was measured on, as far as its
//! performance goes, so that the store draws one curve per (configuration, server settings)
//! and never mixes points of differently configured servers into one frontier (issue 39 §5).
//!
//! **Canonical settings.** A point's server settings are `key = value` text pairs: for the
//! simulator the settings it reports in its `/metrics` (`inferbench_sim:config_info`: mode,
//! max-num-seqs, time scale, KV-cache size, hardware, model, precision, TP, …); for any
//! OpenAI-compatible server what `/v1/models` says of the served model (`served_model`,
//! `root`, `max_model_len`) and vLLM's `cache_config_info` labels; for an engine the runner
//! launched, its matrix row's launch settings ([`launch_settings`]); at ingest, the `--set`
//! keys that name no identity field. Keys are trimmed, lower-cased, `-` written `_`, and
//! prefixed by their source (`sim.`, `models.`, `vllm.`, `launch.`, `set.`); values are
//! trimmed. The fingerprint is the 64-bit FNV-1a hash of the sorted `key=value\n` lines, as 16
//! lower-case hex digits.
//!
//! **Excluded** ([`is_excluded`], by whole `_`-separated words): the load and anything derived
//! from it — concurrency, lanes, request rate, burstiness, prompt and warmup counts,
//! durations, seeds — ports, URLs, times, counters, and the parallelism the configuration key
//! already holds (`tp`, `ep`, `pp`, `dp_attention`, …: a curve spans parallelisms). Otherwise
//! every point would be its own group. An empty settings list has no fingerprint (old rows
//! and foreign imports group as before).

use crate::point::DP_ATTENTION;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A point's server settings and their fingerprint (`inferbench.server` in our result JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerFingerprint {
    /// 16 lower-case hex digits: FNV-1a 64 of the canonical settings (module doc).
    pub id: String,
    /// The canonical settings the id hashes, by key (what a legend shows of them).
    pub settings: BTreeMap<String, String>,
}

/// Words (`_`-separated parts of a canonical key) that make it a load (or derived-from-load)
/// setting, or one that changes between identical servers (ports, times).
const EXCLUDED_WORDS: &[&str] = &[
    "conc",
    "concurrency",
    "lanes",
    "qps",
    "burst",
    "burstiness",
    "prompts",
    "warmup",
    "warmups",
    "duration",
    "seed",
    "port",
    "url",
    "host",
    "created",
    "unix",
    "started",
    "uptime",
];

/// Canonical keys (after the source prefix) that the configuration key already holds: the
/// parallelism a curve spans.
const PARALLELISM_KEYS: &[&str] = &[
    "tp",
    "pp",
    "ep",
    "dcp",
    "pcp",
    DP_ATTENTION,
    "dp_attn",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "expert_parallel_size",
    "engine",
];

/// `key` as the fingerprint writes it: trimmed, lower-case, `-` and spaces as `_`.
pub fn canonical_key(key: &str) -> String {
    key.trim().to_lowercase().replace(['-', ' '], "_")
}

/// Whether the canonical `key` (with or without its source prefix) is left out of a
/// fingerprint: one of its `_`-separated words names the load (concurrency, lanes, QPS,
/// burstiness, prompts, warmups, duration, seed; the request rate) or what differs between identical
/// servers (port, URL, host, created, unix, started, uptime), it is a counter (`…_total`), or
/// it is a parallelism field the configuration key holds.
pub fn is_excluded(key: &str) -> bool {
    let k = canonical_key(key);
    let bare = k.rsplit('.').next().unwrap_or(&k);
    bare.split('_').any(|w| EXCLUDED_WORDS.contains(&w))
        || bare == "rate"
        || bare.contains("request_rate")
        || bare.ends_with("_total")
        || PARALLELISM_KEYS.contains(&bare)
}

/// The fingerprint of `settings` (`key → value` in any spelling): keys canonical
/// ([`canonical_key`]), excluded keys ([`is_excluded`]) and empty values dropped, then
/// hashed (module doc). `None` when nothing is left.
pub fn fingerprint<K: AsRef<str>, V: AsRef<str>>(
    settings: impl IntoIterator<Item = (K, V)>,
) -> Option<ServerFingerprint> {
    let canon: BTreeMap<String, String> = settings
        .into_iter()
        .map(|(k, v)| (canonical_key(k.as_ref()), v.as_ref().trim().to_string()))
        .filter(|(k, v)| !k.is_empty() && !v.is_empty() && !is_excluded(k))
        .collect();
    if canon.is_empty() {
        return None;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (k, v) in &canon {
        for b in k.bytes().chain([b'=']).chain(v.bytes()).chain([b'\n']) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    Some(ServerFingerprint {
        id: format!("{h:016x}"),
        settings: canon,
    })
}

impl ServerFingerprint {
    /// This fingerprint with `extra` settings added (e.g. `set.*` keys at ingest), recomputed;
    /// `base` may be `None` (then only `extra` counts). `None` when nothing is left.
    pub fn merged(
        base: Option<&ServerFingerprint>,
        extra: &BTreeMap<String, String>,
    ) -> Option<ServerFingerprint> {
        let mut all: BTreeMap<String, String> =
            base.map(|b| b.settings.clone()).unwrap_or_default();
        all.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
        fingerprint(all)
    }

    /// The settings as one line, `key=value` joined with `, ` (the stored label source).
    pub fn settings_line(&self) -> String {
        self.settings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The metric whose labels are `inferbench sim`'s settings.
pub const SIM_CONFIG_INFO: &str = "inferbench_sim:config_info";

/// vLLM's info metric of its KV-cache settings (block size, GPU blocks, memory fraction, …).
pub const VLLM_CACHE_CONFIG_INFO: &str = "vllm:cache_config_info";

/// Labels of [`VLLM_CACHE_CONFIG_INFO`] that vLLM measures at start-up rather than being
/// told: left out of a fingerprint.
const VLLM_MEASURED: &[&str] = &["num_gpu_blocks", "num_cpu_blocks"];

/// The settings a server reports of itself, `(canonical key, value)`: the labels of
/// [`SIM_CONFIG_INFO`] as `sim.*` when the scrape `samples` hold it (the simulator says all of
/// its settings there); otherwise the labels of [`VLLM_CACHE_CONFIG_INFO`] as `vllm.*` (but
/// the block counts it measured at start-up) and
/// what `/v1/models` (`models`, its JSON body, `None` when not asked or not answered) says of
/// the served model `served`, as `models.root` and `models.max_model_len`. Always
/// `models.served_model` = `served` (when not empty). Excluded keys are dropped later, by
/// [`fingerprint`].
pub fn reported_settings(
    served: &str,
    models: Option<&serde_json::Value>,
    samples: &[crate::prometheus::Sample],
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    if !served.trim().is_empty() {
        out.push(("models.served_model".into(), served.trim().to_string()));
    }
    let labels_of = |name: &str| {
        samples
            .iter()
            .find(|s| s.name == name)
            .map(|s| crate::prometheus::parse_labels(&s.labels))
    };
    if let Some(l) = labels_of(SIM_CONFIG_INFO) {
        out.extend(l.into_iter().map(|(k, v)| (format!("sim.{k}"), v)));
        return out;
    }
    if let Some(l) = labels_of(VLLM_CACHE_CONFIG_INFO) {
        // The block counts are measured at start-up (memory profiling) and differ by a few
        // between two launches of one configuration: the settings that size them stay.
        out.extend(
            l.into_iter()
                .filter(|(k, _)| !VLLM_MEASURED.contains(&k.as_str()))
                .map(|(k, v)| (format!("vllm.{k}"), v)),
        );
    }
    let model = models
        .and_then(|m| m.get("data"))
        .and_then(serde_json::Value::as_array)
        .and_then(|d| {
            d.iter()
                .find(|e| e.get("id").and_then(serde_json::Value::as_str) == Some(served.trim()))
        });
    if let Some(m) = model {
        for k in ["root", "max_model_len"] {
            match m.get(k) {
                Some(serde_json::Value::String(s)) => out.push((format!("models.{k}"), s.clone())),
                Some(serde_json::Value::Number(n)) => {
                    out.push((format!("models.{k}"), n.to_string()))
                }
                _ => {}
            }
        }
    }
    out
}

/// A point's server fingerprint, the one rule every producer uses: what the server reports
/// of itself ([`reported_settings`] of the served model `served`, the `/v1/models` body
/// `models` and the first `/metrics` scrape `samples`) and, from a server that does not report
/// its settings, the `launch` settings the caller knows ([`launch_settings`] of the engine it
/// launched; empty for a server it did not). `inferbench sim` reports every setting it runs
/// with (`inferbench_sim:config_info`), so a launched sim is fingerprinted as a standalone one
/// with the same settings is. `None` when nothing is known.
pub fn server_fingerprint(
    served: &str,
    models: Option<&serde_json::Value>,
    samples: &[crate::prometheus::Sample],
    launch: &[(String, String)],
) -> Option<ServerFingerprint> {
    let reported = reported_settings(served, models, samples);
    let self_described = reported.iter().any(|(k, _)| k.starts_with("sim."));
    let launch = launch.iter().filter(|_| !self_described).cloned();
    fingerprint(reported.into_iter().chain(launch))
}

/// The launch settings of an engine the runner starts for matrix `row` that its configuration
/// key does not hold, as `launch.*`: `max_model_len`, the router and KV-offload backend
/// (`name[@version]`), the CPU DRAM for offload (GB), and each worker pool's
/// `additional_settings` (the `KEY=VALUE`s exported to its launcher, sorted and joined with a
/// space). Identity (model, image, precision, parallelism, ISL/OSL), the load (`conc`) and the
/// CI bookkeeping a row may carry (`priority`, …) are not among them.
pub fn launch_settings(row: &crate::matrix::MatrixRow) -> Vec<(String, String)> {
    let component = |c: &crate::matrix::Component| match &c.version {
        Some(v) => format!("{}@{v}", c.name),
        None => c.name.clone(),
    };
    let mut out: Vec<(String, String)> = Vec::new();
    if let Some(n) = row.max_model_len {
        out.push(("launch.max_model_len".into(), n.to_string()));
    }
    if let Some(c) = &row.router {
        out.push(("launch.router".into(), component(c)));
    }
    if let Some(c) = &row.kv_offload_backend {
        out.push(("launch.kv_offload_backend".into(), component(c)));
    }
    if let Some(gb) = row.total_cpu_dram_gb {
        out.push(("launch.total_cpu_dram_gb".into(), gb.to_string()));
    }
    for (side, w) in [("prefill", &row.prefill), ("decode", &row.decode)] {
        if let Some(w) = w.as_ref().filter(|w| !w.additional_settings.is_empty()) {
            let mut s = w.additional_settings.clone();
            s.sort();
            out.push((format!("launch.{side}.additional_settings"), s.join(" ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sim(max_num_seqs: &str, time_scale: &str) -> Vec<(String, String)> {
        [
            ("sim.mode", "timed"),
            ("sim.max_num_seqs", max_num_seqs),
            ("sim.time_scale", time_scale),
            ("sim.hardware", "h100"),
            ("models.served_model", "llama-3.1-8b"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    /// The hash is pinned: FNV-1a 64 over the sorted canonical lines, whatever the order
    /// or spelling of the keys.
    #[test]
    fn stable_and_order_free() {
        let a = fingerprint(sim("32", "4")).unwrap();
        let mut rev = sim("32", "4");
        rev.reverse();
        rev[0].0 = "Models.Served-Model ".into();
        let b = fingerprint(rev).unwrap();
        assert_eq!(a, b);
        // Checked independently (Python, FNV-1a 64 over the lines below joined by "\n").
        assert_eq!(a.id, "0c6076c0c34cf3ac");
        assert_eq!(
            a.settings_line(),
            "models.served_model=llama-3.1-8b, sim.hardware=h100, sim.max_num_seqs=32, \
             sim.mode=timed, sim.time_scale=4"
        );
        assert_ne!(a.id, fingerprint(sim("256", "1")).unwrap().id);
        // Empty values are dropped; nothing left is no fingerprint.
        assert_eq!(fingerprint([("a", " ")]), None);
    }

    /// Load never enters a fingerprint: concurrency, request rate, prompt counts (and
    /// parallelism, which the config key holds) leave it unchanged.
    #[test]
    fn load_and_parallelism_are_excluded() {
        let base = fingerprint(sim("32", "4")).unwrap();
        let mut loaded = sim("32", "4");
        for (k, v) in [
            ("set.conc", "16"),
            ("max_concurrency", "64"),
            ("set.request-rate", "2.5"),
            ("num_prompts", "160"),
            ("sim.num_warmups", "4"),
            ("sim.seed", "7"),
            ("sim.port", "8000"),
            ("set.tp", "8"),
            ("vllm.dp_attention", "true"),
            ("bench.duration_s", "60"),
            ("sim.prompts_per_conc", "10"),
            ("sim.requests_total", "99"),
            ("set.max_qps", "3"),
            ("replay.lanes", "8"),
        ] {
            loaded.push((k.into(), v.into()));
        }
        assert_eq!(fingerprint(loaded).unwrap(), base);
        assert_eq!(fingerprint([("conc", "4"), ("request_rate", "1")]), None);
        // Whole words only: settings whose names merely contain a load word stay.
        let kept = fingerprint([
            ("launch.total_cpu_dram_gb", "512"),
            ("set.generate_mode", "x"),
            ("vllm.accuracy_check", "y"),
            ("sim.fault_rate", "0.1"),
            ("set.reports", "z"),
        ])
        .unwrap();
        assert_eq!(kept.settings.len(), 5);
    }

    /// Extra settings (`--set` keys at ingest) change the id; none keep it.
    #[test]
    fn merged_adds_settings() {
        let base = fingerprint(sim("32", "4")).unwrap();
        assert_eq!(
            ServerFingerprint::merged(Some(&base), &BTreeMap::new()),
            Some(base.clone())
        );
        let extra: BTreeMap<String, String> =
            [("set.gpu_memory_utilization".to_string(), "0.8".to_string())].into();
        let m = ServerFingerprint::merged(Some(&base), &extra).unwrap();
        assert_ne!(m.id, base.id);
        assert_eq!(m.settings["set.gpu_memory_utilization"], "0.8");
        assert_eq!(
            ServerFingerprint::merged(None, &extra)
                .unwrap()
                .settings
                .len(),
            1
        );
    }

    /// A launched engine's settings: what its row holds beyond the configuration key; the
    /// load and the CI's bookkeeping never.
    #[test]
    fn launch_settings_of_a_row() {
        let mut row: crate::matrix::MatrixRow = serde_json::from_value(serde_json::json!({
            "image": "vllm/vllm-openai:v0.11", "model": "m", "model-prefix": "dsr1",
            "precision": "fp8", "framework": "vllm", "runner": "h200", "isl": 1024,
            "osl": 1024, "tp": 8, "conc": 64, "spec-decoding": "none", "exp-name": "x",
            "max-model-len": 2048, "priority": 3,
            "router": {"name": "sglang-router", "version": "0.2"}
        }))
        .unwrap();
        let kv = |v: Vec<(String, String)>| {
            v.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            kv(launch_settings(&row)),
            "launch.max_model_len=2048 launch.router=sglang-router@0.2"
        );
        let a = fingerprint(launch_settings(&row)).unwrap();
        row.conc = crate::matrix::Conc::One(4);
        assert_eq!(fingerprint(launch_settings(&row)).unwrap(), a);
        row.max_model_len = Some(4096);
        assert_ne!(fingerprint(launch_settings(&row)).unwrap().id, a.id);
    }

    /// The one rule: launch settings join what a server reports, unless it is the sim, which
    /// reports all of its own (a launched sim and a standalone one with the same settings
    /// have one fingerprint).
    #[test]
    fn launch_settings_count_where_the_server_does_not_describe_itself() {
        let parse = crate::prometheus::parse_prometheus;
        let launch = [("launch.max_model_len".to_string(), "2048".to_string())];
        let sim = parse("inferbench_sim:config_info{max_num_seqs=\"16\"} 1\n");
        assert_eq!(
            server_fingerprint("m", None, &sim, &launch),
            server_fingerprint("m", None, &sim, &[])
        );
        let other = server_fingerprint("m", None, &[], &launch).unwrap();
        assert_eq!(
            other.settings_line(),
            "launch.max_model_len=2048, models.served_model=m"
        );
    }

    /// What a server reports: the sim's info labels alone (with the served model); a vLLM's
    /// cache info and its /v1/models entry otherwise; nothing but the served model from a
    /// server that says nothing.
    #[test]
    fn reported_settings_by_server() {
        let parse = crate::prometheus::parse_prometheus;
        let sim = parse(
            "vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"9\"} 1\n\
             inferbench_sim:config_info{mode=\"timed\",max_num_seqs=\"256\",time_scale=\"1\"} 1\n",
        );
        let models = serde_json::json!({"data": [
            {"id": "other", "root": "x", "max_model_len": 1},
            {"id": "m", "root": "org/M", "max_model_len": 4096, "created": 17}]});
        let kv = |v: Vec<(String, String)>| {
            v.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            kv(reported_settings("m", Some(&models), &sim)),
            "models.served_model=m sim.max_num_seqs=256 sim.mode=timed sim.time_scale=1"
        );
        let vllm = parse(
            "vllm:cache_config_info{block_size=\"16\",engine=\"0\",gpu_memory_utilization=\"0.9\",\
             num_gpu_blocks=\"27000\",num_cpu_blocks=\"2048\"} 1\n",
        );
        let got = reported_settings("m", Some(&models), &vllm);
        assert_eq!(
            kv(got.clone()),
            "models.served_model=m vllm.block_size=16 vllm.engine=0 \
             vllm.gpu_memory_utilization=0.9 models.root=org/M models.max_model_len=4096"
        );
        // The engine index is not a setting.
        assert!(!fingerprint(got)
            .unwrap()
            .settings
            .contains_key("vllm.engine"));
        assert_eq!(
            kv(reported_settings("m", None, &[])),
            "models.served_model=m"
        );
        assert!(reported_settings(" ", None, &[]).is_empty());
    }
}
