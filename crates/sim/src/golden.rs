//! Golden acceptance-length curves (InferenceX `golden_al_distribution/*.yaml`): per model key
//! and thinking mode, the measured mean acceptance length for each draft length 1..=8.
//!
//! The files use a fixed, tiny YAML subset (comments, then `model: / mode: / k: AL` nesting by
//! two-space indent), so they are read with a purpose-built line parser instead of a YAML crate.

use std::collections::BTreeMap;

/// `model key → thinking mode → draft length → AL`.
pub type GoldenAl = BTreeMap<String, BTreeMap<String, BTreeMap<u32, f64>>>;

/// A line the parser does not understand, with its 1-based number.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}: {reason}")]
pub struct GoldenAlError {
    /// File name as given.
    pub path: String,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// Parses one curve file's text; `path` is only used in errors.
pub fn parse(path: &str, text: &str) -> Result<GoldenAl, GoldenAlError> {
    let mut out = GoldenAl::new();
    let mut model: Option<String> = None;
    let mut mode: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let err = |reason: &str| GoldenAlError {
            path: path.to_string(),
            line: i + 1,
            reason: reason.to_string(),
        };
        let line = raw.split('#').next().unwrap_or("").trim_end();
        if line.trim().is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let body = line.trim_start().trim_start_matches("- ");
        let (key, value) = body
            .split_once(':')
            .ok_or_else(|| err("expected `key:` or `key: value`"))?;
        let (key, value) = (key.trim().to_string(), value.trim());
        match (indent, value.is_empty()) {
            (0, true) => {
                model = Some(key.clone());
                mode = None;
                out.entry(key).or_default();
            }
            (2, true) => {
                let m = model.as_ref().ok_or_else(|| err("mode outside a model"))?;
                out.entry(m.clone())
                    .or_default()
                    .entry(key.clone())
                    .or_default();
                mode = Some(key);
            }
            (4, false) => {
                let (m, t) = match (&model, &mode) {
                    (Some(m), Some(t)) => (m, t),
                    _ => return Err(err("value outside a model/mode")),
                };
                let k: u32 = key
                    .parse()
                    .map_err(|_| err("draft length is not an integer"))?;
                let al: f64 = value.parse().map_err(|_| err("AL is not a number"))?;
                out.entry(m.clone())
                    .or_default()
                    .entry(t.clone())
                    .or_default()
                    .insert(k, al);
            }
            _ => return Err(err("unexpected indentation")),
        }
    }
    Ok(out)
}

/// Looks up the AL of `model` (exact key, or the only model in the file when `None`),
/// `mode` (`thinking_on` default) and draft length `k`.
pub fn lookup(g: &GoldenAl, model: Option<&str>, mode: Option<&str>, k: u32) -> Option<f64> {
    let per_model = match model {
        Some(m) => g.get(m)?,
        None if g.len() == 1 => g.values().next()?,
        None => return None,
    };
    per_model
        .get(mode.unwrap_or("thinking_on"))?
        .get(&k)
        .copied()
}

/// The curves this build carries (`data/golden_al.yaml`: InferenceX's published values, one
/// curve per model key).
pub fn embedded() -> &'static GoldenAl {
    static G: std::sync::OnceLock<GoldenAl> = std::sync::OnceLock::new();
    G.get_or_init(|| {
        parse(
            "data/golden_al.yaml",
            include_str!("../data/golden_al.yaml"),
        )
        .expect("the embedded golden AL table parses (checked by a test)")
    })
}

/// The golden-curve model key of a row: InferenceX's `inject_synthetic_acceptance.py` prefix map
/// (`dsv4` → `deepseek-v4-pro`, `dsv4dspark*` → `deepseek-v4-pro-0813`, `dsr1` → `deepseek-r1`)
/// extended to the other published curves by model prefix (`qwen3.5`, `kimik2.5`, `kimik3`,
/// `glm5.2`, `minimaxm3`). `None` for a model InferenceX has no curve name for.
pub fn model_key(model_prefix: &str) -> Option<&'static str> {
    let p = model_prefix.to_ascii_lowercase();
    Some(match p.as_str() {
        p if p.starts_with("dsv4dspark") => "deepseek-v4-pro-0813",
        "dsv4" => "deepseek-v4-pro",
        "dsr1" => "deepseek-r1",
        "qwen3.5" => "qwen3.5-397b-a17b-nvfp4",
        "kimik2.5" => "kimi-k2.5-nvfp4",
        "kimik3" => "kimi-k3",
        "glm5.2" => "glm-5.2-fp8",
        "minimaxm3" => "minimax-m3",
        _ => return None,
    })
}

/// The variant curves this build carries (`data/golden_al_variants.yaml`: InferenceX's
/// variant files, keyed by file stem).
pub fn embedded_variants() -> &'static GoldenAl {
    static G: std::sync::OnceLock<GoldenAl> = std::sync::OnceLock::new();
    G.get_or_init(|| {
        parse(
            "data/golden_al_variants.yaml",
            include_str!("../data/golden_al_variants.yaml"),
        )
        .expect("the embedded golden AL variant table parses (checked by a test)")
    })
}

/// One golden curve file: its stem, its model key, the words of its variant (the stem after
/// the model prefix, without the generic `sample` / `method`), and whether it is the model's
/// base curve (in [`embedded`]) or a variant (in [`embedded_variants`], by stem).
struct CurveFile {
    stem: &'static str,
    key: &'static str,
    words: &'static [&'static str],
    base: bool,
}

/// InferenceX's golden_al_distribution files (`<model prefix>_<method>[_<variant>].yaml`).
const CURVE_FILES: &[CurveFile] = &[
    CurveFile {
        stem: "dsv4_mtp",
        key: "deepseek-v4-pro",
        words: &["mtp"],
        base: true,
    },
    CurveFile {
        stem: "dsv4-pro-0813-dspark",
        key: "deepseek-v4-pro-0813",
        words: &["dspark"],
        base: true,
    },
    CurveFile {
        stem: "glm5.2_mtp",
        key: "glm-5.2-fp8",
        words: &["mtp"],
        base: true,
    },
    CurveFile {
        stem: "kimik2.5_eagle3",
        key: "kimi-k2.5-nvfp4",
        words: &["eagle3"],
        base: true,
    },
    CurveFile {
        stem: "kimik3_dspark",
        key: "kimi-k3",
        words: &["dspark"],
        base: true,
    },
    CurveFile {
        stem: "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method",
        key: "kimi-k3",
        words: &["dspark", "probabilistic", "block", "rejection"],
        base: false,
    },
    CurveFile {
        stem: "minimaxm3_eagle3",
        key: "minimax-m3",
        words: &["eagle3"],
        base: true,
    },
    CurveFile {
        stem: "minimaxm3_eagle3_gqa",
        key: "minimax-m3",
        words: &["eagle3", "gqa"],
        base: false,
    },
    CurveFile {
        stem: "qwen3.5_mtp",
        key: "qwen3.5-397b-a17b-nvfp4",
        words: &["mtp"],
        base: true,
    },
];

/// The acceptance for `model_prefix` at draft length `k` in `mode`, on the curve of the
/// spec-decode variant the config names (`variant`: the `spec-decoding` value or the draft
/// model's name, e.g. `Inferact/MiniMax-M3-EAGLE3-GQA`, `DSpark6`): among the model's curve
/// files, the one whose variant words all appear in `variant` (case and punctuation ignored),
/// the most specific first. A variant that names none of the model's curves (or `None`) gets the
/// model's base curve, with a note saying so when a variant was named; a model without a curve
/// gets the fixed-rate fallback ([`acceptance`]).
pub fn acceptance_for(model_prefix: &str, variant: Option<&str>, mode: &str, k: u32) -> Acceptance {
    let k = k.max(1);
    let base = acceptance(model_prefix, mode, k);
    let (Some(variant), Some(key)) = (
        variant.filter(|v| !v.trim().is_empty()),
        model_key(model_prefix),
    ) else {
        return base;
    };
    let norm: String = variant
        .to_ascii_lowercase()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let best = CURVE_FILES
        .iter()
        .filter(|f| f.key == key && f.words.iter().all(|w| norm.contains(w)))
        .max_by_key(|f| f.words.len());
    let table = |f: &CurveFile| {
        if f.base {
            (embedded(), f.key)
        } else {
            (embedded_variants(), f.stem)
        }
    };
    if let Some(f) = best.filter(|f| !f.base) {
        let (g, id) = table(f);
        if let Some(al) = lookup(g, Some(id), Some(mode), k) {
            return Acceptance {
                num_speculative_tokens: k,
                acceptance_length: al,
                golden: true,
                source: format!("{key} {mode} k={k} ({}.yaml, variant {variant:?})", f.stem),
                note: None,
            };
        }
    }
    let why = match best {
        // The model's base curve is the variant's.
        Some(f) if f.base => return base,
        Some(f) => format!("the {}.yaml curve has no {mode} k={k}", f.stem),
        None => format!("no golden curve of {key} names variant {variant:?}"),
    };
    Acceptance {
        note: Some(format!("{why}: using {}", base.source)),
        ..base
    }
}

/// Per-draft acceptance probability used when a model has no golden curve: AL = (1 − α^(k+1)) /
/// (1 − α), the expected tokens per step when each of k drafts is accepted independently with
/// probability α, stopping at the first rejection (the bonus token included). α = 0.7 gives
/// 2.53 at k = 3, near the DeepSeek-V4 MTP curve's 2.49.
pub const FALLBACK_ACCEPTANCE_RATE: f64 = 0.7;

/// The acceptance a throughput run of a speculative-decoding row is pinned to.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Acceptance {
    /// Draft tokens per step (`num_speculative_tokens`, k).
    pub num_speculative_tokens: u32,
    /// Mean tokens per verification step (1 ≤ AL ≤ k + 1), rounded to 2 decimals as the curves.
    pub acceptance_length: f64,
    /// From a golden curve (`false`: the fixed-rate fallback, not comparable across submissions).
    pub golden: bool,
    /// Where the value comes from: `deepseek-v4-pro thinking_on k=3`, or the fallback's rule.
    pub source: String,
    /// Why the config's spec-decode variant did not give the value (its curve missing, so the
    /// model's base curve or the fallback was used); absent when it did or none was named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The acceptance for `model_prefix` at draft length `k` in `mode` (`thinking_on` /
/// `thinking_off`): the embedded golden curve where there is one, else
/// [`FALLBACK_ACCEPTANCE_RATE`] (flagged `golden: false`). `k` is clamped to ≥ 1.
pub fn acceptance(model_prefix: &str, mode: &str, k: u32) -> Acceptance {
    let k = k.max(1);
    if let Some(key) = model_key(model_prefix) {
        if let Some(al) = lookup(embedded(), Some(key), Some(mode), k) {
            return Acceptance {
                num_speculative_tokens: k,
                acceptance_length: al,
                golden: true,
                source: format!("{key} {mode} k={k}"),
                note: None,
            };
        }
    }
    let a = FALLBACK_ACCEPTANCE_RATE;
    let al = (1.0 - a.powi(k as i32 + 1)) / (1.0 - a);
    Acceptance {
        num_speculative_tokens: k,
        acceptance_length: (al * 100.0).round() / 100.0,
        golden: false,
        source: format!(
            "no golden curve for model prefix {model_prefix:?} ({mode}, k={k}): fixed per-draft acceptance {a}"
        ),
        note: None,
    }
}

/// `--thinking-mode`: which golden acceptance-length curve (InferenceX's `thinking_on`
/// default, or `thinking_off`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(any(feature = "clap", test), derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum ThinkingMode {
    /// The curve measured with thinking on (InferenceX's default).
    #[cfg_attr(any(feature = "clap", test), value(name = "thinking_on"))]
    ThinkingOn,
    /// The curve measured with thinking off.
    #[cfg_attr(any(feature = "clap", test), value(name = "thinking_off"))]
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

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# Source: a run\n# key = k\nqwen-x:\n  thinking_on:\n    1: 1.93\n    2: 2.73\n  thinking_off:\n    1: 1.92\n";

    #[test]
    fn parses_the_curve_format() {
        let g = parse("s.yaml", SAMPLE).unwrap();
        assert_eq!(lookup(&g, None, None, 2), Some(2.73));
        assert_eq!(
            lookup(&g, Some("qwen-x"), Some("thinking_off"), 1),
            Some(1.92)
        );
        assert_eq!(lookup(&g, Some("other"), None, 1), None);
        let e = parse("s.yaml", "m:\n  t:\n    x: 1\n").unwrap_err();
        assert_eq!(e.to_string(), "s.yaml:3: draft length is not an integer");
    }

    #[test]
    fn acceptance_from_the_curve_or_the_flagged_fallback() {
        // InferenceX's single-node dsv4 MTP scripts hard-code 2.49 (k = 3, thinking on).
        let a = acceptance("dsv4", "thinking_on", 3);
        assert_eq!((a.acceptance_length, a.golden), (2.49, true));
        assert_eq!(a.source, "deepseek-v4-pro thinking_on k=3");
        assert_eq!(
            acceptance("dsv4", "thinking_off", 2).acceptance_length,
            2.61
        );
        assert_eq!(
            acceptance("qwen3.5", "thinking_on", 3).acceptance_length,
            3.39
        );
        assert_eq!(
            acceptance("dsv4dspark", "thinking_on", 7).acceptance_length,
            3.73
        );
        // No curve: (1 − 0.7⁴)/(1 − 0.7) = 2.533 → 2.53, not golden; dsr1 has a key but no
        // published curve.
        for p in ["llama70b", "dsr1"] {
            let f = acceptance(p, "thinking_on", 3);
            assert_eq!((f.acceptance_length, f.golden), (2.53, false), "{p}");
        }
        assert_eq!(acceptance("x", "thinking_on", 1).acceptance_length, 1.7);
        // kimi-k3 has no thinking_off curve: fallback.
        assert!(!acceptance("kimik3", "thinking_off", 3).golden);
    }

    #[test]
    fn variant_named_in_the_config_picks_its_curve_else_the_base_with_a_note() {
        // The GQA draft head's curve: thinking_on k=3 is 2.78 (base eagle3: 2.83).
        let gqa = acceptance_for(
            "minimaxm3",
            Some("Inferact/MiniMax-M3-EAGLE3-GQA"),
            "thinking_on",
            3,
        );
        assert_eq!(
            (gqa.acceptance_length, gqa.golden, gqa.note.clone()),
            (2.78, true, None)
        );
        assert_eq!(
            gqa.source,
            "minimax-m3 thinking_on k=3 (minimaxm3_eagle3_gqa.yaml, variant \"Inferact/MiniMax-M3-EAGLE3-GQA\")"
        );
        let base = acceptance_for("minimaxm3", Some("eagle3"), "thinking_on", 3);
        assert_eq!(
            base.acceptance_length,
            acceptance("minimaxm3", "thinking_on", 3).acceptance_length
        );
        assert_eq!(
            (base.source.as_str(), base.note.clone()),
            ("minimax-m3 thinking_on k=3", None)
        );
        // Kimi-K3: the probabilistic/block-rejection curve (2.51 at k=2) vs DSpark's base (2.45).
        let prob = acceptance_for(
            "kimik3",
            Some("dspark probabilistic sample method, block rejection sample method"),
            "thinking_on",
            2,
        );
        assert_eq!(prob.acceptance_length, 2.51);
        let dspark6 = acceptance_for("kimik3", Some("DSpark6"), "thinking_on", 2);
        assert_eq!(
            (dspark6.acceptance_length, dspark6.note.clone()),
            (2.45, None)
        );
        // A variant with no curve of the model: the base curve, with a note.
        let mtp = acceptance_for("kimik3", Some("mtp"), "thinking_on", 2);
        assert_eq!((mtp.acceptance_length, mtp.golden), (2.45, true));
        assert_eq!(
            mtp.note.as_deref(),
            Some("no golden curve of kimi-k3 names variant \"mtp\": using kimi-k3 thinking_on k=2")
        );
        // No variant, or a model without curves: as `acceptance`.
        assert_eq!(
            acceptance_for("dsv4", None, "thinking_on", 3),
            acceptance("dsv4", "thinking_on", 3)
        );
        assert_eq!(
            acceptance_for("llama70b", Some("eagle3"), "thinking_on", 3),
            acceptance("llama70b", "thinking_on", 3)
        );
    }

    #[test]
    fn reads_the_shared_golden_files_when_present() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/inferencex/golden_al_distribution");
        let Ok(rd) = std::fs::read_dir(&dir) else {
            eprintln!("skipping: {} not found", dir.display());
            return;
        };
        let mut n = 0;
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().and_then(|x| x.to_str()) != Some("yaml") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            parse(&p.display().to_string(), &text).unwrap();
            n += 1;
        }
        assert!(n > 0);
        // The embedded table holds every shared curve's values (base files for keys with
        // variants), and nothing else.
        let mut shared = GoldenAl::new();
        for f in [
            "dsv4_mtp.yaml",
            "dsv4-pro-0813-dspark.yaml",
            "glm5.2_mtp.yaml",
            "kimik2.5_eagle3.yaml",
            "kimik3_dspark.yaml",
            "minimaxm3_eagle3.yaml",
            "qwen3.5_mtp.yaml",
        ] {
            let text = std::fs::read_to_string(dir.join(f)).unwrap();
            shared.extend(parse(f, &text).unwrap());
        }
        assert_eq!(embedded(), &shared);
        for variant in [
            "minimaxm3_eagle3_gqa.yaml",
            "kimik3_dspark_probabilistic_sample_method_block_rejection_sample_method.yaml",
        ] {
            let text = std::fs::read_to_string(dir.join(variant)).unwrap();
            let g = parse(variant, &text).unwrap();
            assert!(g.keys().all(|k| embedded().contains_key(k)), "{variant}");
            // The embedded variant table holds the file's curve under its stem.
            let stem = variant.trim_end_matches(".yaml");
            assert_eq!(
                embedded_variants().get(stem),
                g.values().next(),
                "{variant}"
            );
        }
        // Every shared file is a known curve file, and every known one is shared.
        let mut stems: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .filter_map(|e| {
                e.path()
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
            })
            .filter(|s| s != "README" && s != "README_zh")
            .collect();
        stems.sort();
        let mut known: Vec<&str> = CURVE_FILES.iter().map(|f| f.stem).collect();
        known.sort();
        assert_eq!(stems, known);
        let q = std::fs::read_to_string(dir.join("qwen3.5_mtp.yaml")).unwrap();
        let g = parse("qwen3.5_mtp.yaml", &q).unwrap();
        assert_eq!(
            lookup(&g, Some("qwen3.5-397b-a17b-nvfp4"), Some("thinking_on"), 3),
            Some(3.39)
        );
    }
}
