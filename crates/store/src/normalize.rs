//! Normalizers from the names found in artifacts to canonical keys (lowercase), after
//! InferenceX-app's `etl/normalizers.ts` rules (reference/inferencex-app.md §3.6), extended with
//! the CPU/simulator targets this project runs on.
//!
//! Unlike InferenceX, an unknown name never drops a row: the lowercased name is stored as is and
//! returned as unknown, so the ingest report (and the `unknown_names` table) lists it.

/// Canonical hardware keys: InferenceX's GPU keys, plus `cpu` (llama.cpp on the host CPU).
pub const HARDWARE_KEYS: &[&str] = &[
    "h100", "h200", "b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x", "cpu",
];

/// Canonical precision keys.
pub const PRECISION_KEYS: &[&str] = &["fp4", "fp8", "bf16", "fp16", "int4", "int8", "q4_1", "q8_0"];

/// Canonical framework keys (InferenceX's, plus `llamacpp` and our simulator `sim`).
pub const FRAMEWORK_KEYS: &[&str] = &[
    "atom",
    "dynamo-sglang",
    "dynamo-trt",
    "mori-sglang",
    "sglang",
    "trt",
    "vllm",
    "llamacpp",
    "sim",
];

/// Canonical model keys (InferenceX DB keys, plus the small models of reference/targets.md).
pub const MODEL_KEYS: &[&str] = &[
    "dsr1",
    "gptoss120b",
    "llama70b",
    "qwen3.5",
    "kimik2.5",
    "kimik2.6",
    "minimaxm2.5",
    "minimaxm2.7",
    "glm5",
    "glm5.1",
    "dsv4",
    "smollm2-135m",
    "qwen3-0.6b",
    "llama3.1-8b",
];

/// Historical raw model names (HF paths, mount paths, shorthands) → model key.
const MODEL_ALIASES: &[(&str, &str)] = &[
    ("gptoss", "gptoss120b"),
    ("deepseek-ai/deepseek-r1-0528", "dsr1"),
    ("deepseek-ai/deepseek-r1", "dsr1"),
    ("nvidia/deepseek-r1-0528-fp4", "dsr1"),
    ("nvidia/deepseek-r1-0528-fp4-v2", "dsr1"),
    ("amd/deepseek-r1-0528-mxfp4-preview", "dsr1"),
    ("openai/gpt-oss-120b", "gptoss120b"),
    ("meta-llama/llama-3.3-70b-instruct", "llama70b"),
    ("nvidia/llama-3.3-70b-instruct-fp8", "llama70b"),
    ("huggingfacetb/smollm2-135m-instruct", "smollm2-135m"),
    ("smollm2-135m-instruct", "smollm2-135m"),
    // Simulator catalogue names (crates/sim/data/catalogue.json).
    ("llama-3.1-8b", "llama3.1-8b"),
    // examples/sim.yaml's `model-prefix` (file names keep it).
    ("llama8b", "llama3.1-8b"),
    ("meta-llama/llama-3.1-8b-instruct", "llama3.1-8b"),
    ("llama-3.3-70b", "llama70b"),
    ("deepseek-r1", "dsr1"),
    ("gpt-oss-120b", "gptoss120b"),
    ("qwen3.5-397b-a17b", "qwen3.5"),
    ("qwen/qwen3-0.6b", "qwen3-0.6b"),
    ("smollm2-135m-instruct.q4_1.gguf", "smollm2-135m"),
];

/// Hardware suffixes stripped in this order, each at most once (InferenceX's `hwToGpuKey`).
const HW_SUFFIXES: &[&str] = &[
    "-trt",
    "-multinode-slurm",
    "-multinode",
    "-nvs",
    "-disagg",
    "-amds",
    "-amd",
    "-nvd",
    "-dgxc-slurm",
    "-dgxc",
    "-nb",
    "-nv",
    // inferbench's simulated fleets (examples/sim-runners.yaml): `cluster:h100-sim` models h100.
    "-sim",
];

/// A normalized name: the canonical key when recognised, else the lowercased input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Norm {
    /// What to store.
    pub key: String,
    /// False when no rule recognised the name (it is then reported).
    pub known: bool,
}

fn known(key: &str) -> Norm {
    Norm {
        key: key.to_string(),
        known: true,
    }
}
fn unknown(raw: &str) -> Norm {
    Norm {
        key: raw.to_string(),
        known: false,
    }
}

/// Hardware: lowercase; drop a `cluster:` prefix and a trailing runner index `_<digits>`; strip
/// the suffixes of [`HW_SUFFIXES`] in order; accept a [`HARDWARE_KEYS`] member.
/// `h200-nv_3` → `h200`, `mi355x-amds_0` → `mi355x`, `cluster:b200-dgxc` → `b200`.
pub fn hardware(raw: &str) -> Norm {
    let lower = raw.trim().to_lowercase();
    let mut s = lower.strip_prefix("cluster:").unwrap_or(&lower).to_string();
    if let Some(pos) = s.rfind('_') {
        if pos + 1 < s.len() && s[pos + 1..].bytes().all(|b| b.is_ascii_digit()) {
            s.truncate(pos);
        }
    }
    for suf in HW_SUFFIXES {
        if let Some(rest) = s.strip_suffix(suf) {
            s = rest.to_string();
        }
    }
    if HARDWARE_KEYS.contains(&s.as_str()) {
        known(&s)
    } else {
        unknown(&lower)
    }
}

/// Precision: lowercase; aliases `nvfp4`/`mxfp4` → `fp4`, `fp8block` → `fp8`.
pub fn precision(raw: &str) -> Norm {
    let s = raw.trim().to_lowercase();
    let s = match s.as_str() {
        "nvfp4" | "mxfp4" => "fp4".to_string(),
        "fp8block" => "fp8".to_string(),
        _ => s,
    };
    if PRECISION_KEYS.contains(&s.as_str()) {
        known(&s)
    } else {
        unknown(&s)
    }
}

/// Framework: lowercase; aliases `trtllm` → `trt`, `dynamo-trtllm` → `dynamo-trt`,
/// `sglang-disagg` → `mori-sglang` (and disaggregated: the bool returned), `llama.cpp` /
/// `llama-server` → `llamacpp`.
pub fn framework(raw: &str) -> (Norm, bool) {
    let s = raw.trim().to_lowercase();
    let (s, disagg) = match s.as_str() {
        "trtllm" | "tensorrt-llm" => ("trt".to_string(), false),
        "dynamo-trtllm" => ("dynamo-trt".to_string(), false),
        "sglang-disagg" => ("mori-sglang".to_string(), true),
        "llama.cpp" | "llama-server" | "llama_cpp" => ("llamacpp".to_string(), false),
        _ => (s, false),
    };
    let n = if FRAMEWORK_KEYS.contains(&s.as_str()) {
        known(&s)
    } else {
        unknown(&s)
    };
    (n, disagg)
}

/// Spec decoding method: falsy (`""`, `none`, `false`, `0`) → `none`, else lowercased (`mtp`, …).
pub fn spec_method(raw: &str) -> String {
    let s = raw.trim().to_lowercase();
    match s.as_str() {
        "" | "none" | "false" | "0" | "null" => "none".to_string(),
        _ => s,
    }
}

/// Model key from the model prefix (`infmax_model_prefix` / `model_prefix`) and the raw model
/// name: prefix if it is a key; explicit alias; prefix with a trailing precision suffix
/// (`-fp4|-fp8|-mxfp4|-nvfp4…`) stripped; the raw name (or its last path component) in the alias
/// table; else unknown (the prefix, or the raw name when there is no prefix, lowercased).
pub fn model(prefix: &str, raw: &str) -> Norm {
    let p = prefix.trim().to_lowercase();
    let r = raw.trim().to_lowercase();
    let alias = |s: &str| MODEL_ALIASES.iter().find(|(a, _)| *a == s).map(|(_, k)| *k);
    if !p.is_empty() {
        if MODEL_KEYS.contains(&p.as_str()) {
            return known(&p);
        }
        if let Some(k) = alias(&p) {
            return known(k);
        }
        for suf in ["-fp4", "-fp8", "-mxfp4", "-nvfp4", "-bf16"] {
            if let Some(pos) = p.find(suf) {
                let base = &p[..pos];
                if MODEL_KEYS.contains(&base) {
                    return known(base);
                }
                if let Some(k) = alias(base) {
                    return known(k);
                }
            }
        }
    }
    if !r.is_empty() {
        if MODEL_KEYS.contains(&r.as_str()) {
            return known(&r);
        }
        if let Some(k) = alias(&r) {
            return known(k);
        }
        let last = r.rsplit('/').next().unwrap_or(&r);
        if let Some(k) = alias(last) {
            return known(k);
        }
        if let Some(k) = MODEL_ALIASES
            .iter()
            .find(|(a, _)| a.rsplit('/').next() == Some(last))
            .map(|(_, k)| *k)
        {
            return known(k);
        }
    }
    unknown(if p.is_empty() { &r } else { &p })
}

/// Booleans as artifacts write them: `true`, `"true"`, `"True"`, `1`, `"1"`.
pub fn truthy(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Bool(b) => *b,
        serde_json::Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0),
        serde_json::Value::String(s) => {
            matches!(s.trim().to_lowercase().as_str(), "true" | "1" | "yes")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hardware_rules() {
        assert_eq!(hardware("h200-nv_3"), known("h200"));
        assert_eq!(hardware("mi355x-amds_0"), known("mi355x"));
        assert_eq!(hardware("cluster:b200-dgxc"), known("b200"));
        assert_eq!(hardware("cluster:h100-sim"), known("h100"));
        assert_eq!(hardware("GB200-multinode-slurm"), known("gb200"));
        assert_eq!(hardware("b200-dgxc-slurm_12"), known("b200"));
        assert_eq!(hardware("tpu-v5"), unknown("tpu-v5"));
    }

    #[test]
    fn model_rules() {
        assert_eq!(model("dsr1-fp8", ""), known("dsr1"));
        assert_eq!(model("gptoss", ""), known("gptoss120b"));
        assert_eq!(model("", "deepseek-ai/DeepSeek-R1-0528"), known("dsr1"));
        assert_eq!(
            model("", "/mnt/lustre01/models/gpt-oss-120b"),
            known("gptoss120b")
        );
        assert_eq!(
            model("", "HuggingFaceTB/SmolLM2-135M-Instruct"),
            known("smollm2-135m")
        );
        assert_eq!(model("mystery-7b", "x/y"), unknown("mystery-7b"));
        assert_eq!(model("llama3.1-8b", "Llama-3.1-8B"), known("llama3.1-8b"));
        assert_eq!(model("", "Llama-3.3-70B"), known("llama70b"));
        assert_eq!(model("", "x/Y"), unknown("x/y"));
    }

    #[test]
    fn precision_framework_spec() {
        assert_eq!(precision("NVFP4"), known("fp4"));
        assert_eq!(precision("fp6"), unknown("fp6"));
        assert_eq!(framework("sglang-disagg"), (known("mori-sglang"), true));
        assert_eq!(framework("TRTLLM"), (known("trt"), false));
        assert_eq!(spec_method(""), "none");
        assert_eq!(spec_method("MTP"), "mtp");
        assert!(truthy(&serde_json::json!("True")));
        assert!(!truthy(&serde_json::json!("false")));
    }
}
