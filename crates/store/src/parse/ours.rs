//! Our own `summary.json` (and `bench --save-result` file), read typed: deserialized into core's
//! [`RunSummary`], the type the load generator and the runner write it from, and the point built
//! from its fields (core::artifacts: our artifacts are written and read through core's types;
//! each foreign format keeps its own parser).
//!
//! **Which files are ours**: a vLLM-shaped result whose top-level `inferbench` object carries an
//! integer `schema_version` ([`is_ours`]). Core writes that key in every summary
//! ([`Extras::schema_version`], always serialized); no other tool writes an `inferbench` key.
//! A file of ours older than the stamp, and every foreign vLLM-shaped file, is read by name
//! ([`super::vllm::foreign_facts`]). A version newer than [`Extras::SCHEMA_VERSION`] is refused,
//! naming both, as core's other artifacts are.
//!
//! Derived figures come from core's definitions, not re-derived here: the latencies in seconds
//! and the `*_intvty` interactivity from [`inferencex_metrics`] (what InferenceX's aggregate
//! takes from the same summary), the E2E-normalized interactivity and TTFO from the extras core
//! computed ([`Extras::e2e_normalized_interactivity`], [`Extras::ttfo_ms`]). The per-GPU figures
//! are filled from the configuration by `fill_per_gpu` (core's per-GPU rule, `ThroughputGpus`),
//! or taken from the InferenceX aggregate beside the summary.

use std::collections::BTreeMap;

use inferbench_core::metrics::{percentile_label, E2E_INTERACTIVITY_QUANTILES};
use inferbench_core::summary::keys::LatencyStat;
use inferbench_core::summary::{inferencex_metrics, Extras, RunSummary};
use serde_json::{Map, Value};

use super::vllm::{extras_metrics, scenario_flags, SummaryFacts};
use super::{date_from_text, ParseError};

/// Whether the vLLM-shaped summary `s` is one of ours: its `inferbench` object has an integer
/// `schema_version` (module doc).
pub(super) fn is_ours(s: &Map<String, Value>) -> bool {
    s.get("inferbench")
        .and_then(|x| x.get("schema_version"))
        .is_some_and(|v| v.as_u64().is_some() || v.as_i64().is_some())
}

/// Our summary `s` (from the file `what`, named in errors) as core's [`RunSummary`]; a
/// `schema_version` newer than this build's [`Extras::SCHEMA_VERSION`] is refused.
pub(super) fn read(s: &Map<String, Value>, what: &str) -> Result<RunSummary, ParseError> {
    let version = s
        .get("inferbench")
        .and_then(|x| x.get("schema_version"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if version > i64::from(Extras::SCHEMA_VERSION) {
        return Err(format!(
            "{what}: schema_version {version} is newer than this inferbench reads ({})",
            Extras::SCHEMA_VERSION
        ));
    }
    serde_json::from_value(Value::Object(s.clone())).map_err(|e| format!("{what}: {e}"))
}

/// The facts a point takes from our typed summary `s`, read from the JSON object `raw`.
pub(super) fn facts(s: &RunSummary, raw: &Map<String, Value>) -> SummaryFacts {
    // Unknown top-level keys (an AgentX replay's `scenario_type`, `submission_valid`, vLLM's
    // `metadata`) are in the summary's flattened `metrics` map.
    let (agentic, submission_invalid) = scenario_flags(&s.metrics);
    let x = &s.inferbench;
    SummaryFacts {
        model_id: Some(Value::from(s.model_id.clone())),
        completed: s.completed as f64,
        total_input_tokens: Some(s.total_input_tokens as f64),
        total_output_tokens: Some(s.total_output_tokens as f64),
        max_concurrency: s.max_concurrency.map(f64::from),
        agentic,
        submission_invalid,
        cut_short: super::vllm::cut_short(Some(x.stop_reason), x.interrupted),
        timing_invalid: x.invalid_reason.clone(),
        failed_reason: x.failed_reason.clone(),
        date: date_from_text(&s.date),
        start_unix: s.benchmark_start_time_unix,
        end_unix: s.benchmark_end_time_unix,
        metrics: metrics(s, raw.get("inferbench").and_then(Value::as_object)),
        server: x.server.clone(),
        adaptive: x.adaptive,
        prompts_used: x.prompts_used.and_then(|n| i64::try_from(n).ok()),
    }
}

/// The metric map of our summary `s`, in InferenceX names and units: vLLM's scalar fields
/// under their names (counts, s, requests/s, tokens/s; `request_goodput:` with vLLM's colon);
/// the latency statistics in seconds and `*_intvty` in tokens/s/user from core's
/// [`inferencex_metrics`]; the extras flattened as `inferbench.<key>` (`*_ms` distributions in
/// seconds) from the file's own `inferbench` object `extras`, which the typed read has
/// validated (re-serializing core's [`Extras`] would add zero-valued defaults for every field
/// a sparse file lacks), each registry distribution among them also under its `<stat>_<base>`
/// names (`p999_ttft`, `mean_ttfo`, `p90_achieved_osl`), both by [`extras_metrics`], the
/// reading by name's rule; and the hot names `p75_e2e_norm_intvty` / `p90_e2e_norm_intvty`
/// (tokens/s/user) and `median_ttfo` / `p99_ttfo` (s) from the extras. `--metadata` pairs are strings, never
/// metrics (the untyped reading took a `KEY_ms` pair for a latency).
fn metrics(s: &RunSummary, extras: Option<&Map<String, Value>>) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let scalars = [
        ("best_of", Some(f64::from(s.best_of))),
        ("num_prompts", Some(s.num_prompts as f64)),
        ("request_rate", s.request_rate),
        ("burstiness", Some(s.burstiness)),
        ("max_concurrency", s.max_concurrency.map(f64::from)),
        ("duration", Some(s.duration)),
        ("benchmark_start_time_unix", s.benchmark_start_time_unix),
        ("benchmark_end_time_unix", s.benchmark_end_time_unix),
        ("completed", Some(s.completed as f64)),
        ("total_input_tokens", Some(s.total_input_tokens as f64)),
        ("total_output_tokens", Some(s.total_output_tokens as f64)),
        ("request_throughput", Some(s.request_throughput)),
        ("request_goodput:", s.request_goodput),
        ("output_throughput", Some(s.output_throughput)),
        ("total_token_throughput", Some(s.total_token_throughput)),
    ];
    for (k, v) in scalars {
        if let Some(v) = v {
            out.insert(k.to_string(), v);
        }
    }
    // Other numeric top-level keys, under their names and values unchanged (core writes none
    // but the statistics; a key outside vLLM's table is no latency, whatever its name ends in).
    for (k, v) in &s.metrics {
        if let (None, Value::Number(n)) = (LatencyStat::from_vllm_key(k), v) {
            if let Some(x) = n.as_f64() {
                out.insert(k.clone(), x);
            }
        }
    }
    for (k, v) in inferencex_metrics(s) {
        if let Some(x) = v.as_f64() {
            out.insert(k, x);
        }
    }
    if let Some(ext) = extras {
        extras_metrics(ext, &mut out);
    }
    let x = &s.inferbench;
    for q in E2E_INTERACTIVITY_QUANTILES {
        let p = format!("p{}", percentile_label(q));
        if let Some(Some(v)) = x.e2e_normalized_interactivity.get(&p) {
            out.entry(format!("{p}_e2e_norm_intvty")).or_insert(*v);
        }
    }
    // ms → s as the flattened extras convert them (`inferbench.ttfo.median`).
    out.entry("median_ttfo".into())
        .or_insert(x.ttfo_ms.median * 1e-3);
    if let Some(v) = x.ttfo_ms.at(99.0) {
        out.entry("p99_ttfo".into()).or_insert(v * 1e-3);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::vllm::foreign_facts;
    use super::super::{parse_dir, parse_file, Overrides, SourceKind};
    use super::*;

    /// The golden summaries `bench` wrote (crates/cli/tests/golden): real files of ours.
    fn golden(name: &str) -> Map<String, Value> {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../cli/tests/golden")
            .join(name);
        let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        serde_json::from_str(&text).unwrap()
    }

    /// A summary of ours with the `--metadata` pair `KEY=VALUE`, written as core writes it (a
    /// string among the top-level keys, RunSummary::metrics).
    fn with_metadata(raw: &Map<String, Value>, key: &str, value: &str) -> Map<String, Value> {
        let mut s = read(raw, "golden").unwrap();
        s.metrics.insert(key.into(), Value::from(value));
        match serde_json::to_value(&s).unwrap() {
            Value::Object(o) => o,
            _ => unreachable!(),
        }
    }

    #[test]
    fn ours_is_marked_by_the_extras_schema_version() {
        let raw = golden("conc4.summary.json");
        assert!(is_ours(&raw));
        let vllm = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/imports/vllm_gptoss_conc64.json");
        let v: Map<String, Value> =
            serde_json::from_str(&std::fs::read_to_string(vllm).unwrap()).unwrap();
        assert!(!is_ours(&v));
        let mut old = raw.clone();
        old["inferbench"]
            .as_object_mut()
            .unwrap()
            .remove("schema_version");
        assert!(!is_ours(&old), "ours from before the stamp: read by name");
    }

    #[test]
    fn typed_reading_gives_what_the_untyped_one_did_on_real_summaries() {
        for name in [
            "conc1.summary.json",
            "conc4.summary.json",
            "conc16.summary.json",
        ] {
            let raw = golden(name);
            let typed = facts(&read(&raw, name).unwrap(), &raw);
            assert_eq!(typed, foreign_facts(&raw), "{name}");
            // Core's figures, not the store's: interactivity and the E2E-normalized one.
            let s = read(&raw, name).unwrap();
            assert_eq!(
                Some(typed.metrics["median_intvty"]),
                s.inferbench.interactivity["median"]
            );
            assert_eq!(
                Some(typed.metrics["p90_e2e_norm_intvty"]),
                s.inferbench.e2e_normalized_interactivity["p90"]
            );
        }
    }

    #[test]
    fn a_metadata_pair_named_like_a_latency_is_not_a_metric() {
        // `bench --metadata tpot_slo_ms=50`: a string among the top-level keys. Read by the
        // suffix of its name, it became a 0.05 s latency `tpot_slo` and a 20 tok/s/user
        // interactivity `intvty_slo`; the reading by name now takes latencies from vLLM's table
        // of keys only, so neither reading makes a metric of it.
        let raw = with_metadata(&golden("conc4.summary.json"), "tpot_slo_ms", "50");
        let untyped = foreign_facts(&raw).metrics;
        for k in ["tpot_slo", "intvty_slo", "tpot_slo_ms"] {
            assert!(!untyped.contains_key(k), "{k}");
        }

        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("summary.json"),
            serde_json::to_vec_pretty(&raw).unwrap(),
        )
        .unwrap();
        let run = parse_dir(d.path(), &Overrides::new()).unwrap();
        let m = &run.points[0].metrics;
        assert!(!m.contains_key("tpot_slo") && !m.contains_key("intvty_slo"));
        // Everything else as the reading by name.
        for (k, v) in &untyped {
            assert_eq!(m.get(k), Some(v), "{k}");
        }
    }

    #[test]
    fn achieved_osl_is_stored_under_the_registry_names_by_both_readings() {
        let mut raw = golden("conc4.summary.json");
        raw["inferbench"]["achieved_osl"] = serde_json::json!({"count": 3, "mean": 64.0,
            "median": 64.0, "std": 52.25, "min": 0.0, "max": 128.0, "p90": 115.2,
            "p99.9": 127.87});
        let typed = facts(&read(&raw, "osl").unwrap(), &raw).metrics;
        for (k, v) in [
            ("mean_achieved_osl", 64.0),
            ("median_achieved_osl", 64.0),
            ("std_achieved_osl", 52.25),
            ("p90_achieved_osl", 115.2),
            ("p999_achieved_osl", 127.87),
            ("inferbench.achieved_osl.max", 128.0),
            ("inferbench.achieved_osl.count", 3.0),
        ] {
            assert_eq!(typed.get(k), Some(&v), "{k}");
        }
        assert!(
            !typed.contains_key("max_achieved_osl") && !typed.contains_key("count_achieved_osl")
        );
        assert_eq!(typed, foreign_facts(&raw).metrics);
        // A summary from before the field, or without a success: no achieved-OSL names.
        for osl in [
            None,
            Some(serde_json::json!({"count": 0, "mean": 0.0, "median": 0.0})),
        ] {
            let mut old = raw.clone();
            let x = old["inferbench"].as_object_mut().unwrap();
            x.remove("achieved_osl");
            if let Some(o) = osl {
                x.insert("achieved_osl".into(), o);
            }
            let m = facts(&read(&old, "old").unwrap(), &old).metrics;
            assert!(!m.keys().any(|k| k.ends_with("_achieved_osl")), "{m:?}");
        }
    }

    /// Issue 40's rule: every distribution of core's registry found in a summary's extras is
    /// stored under its registry names by both readings, with nothing of the store's per
    /// metric. `intvty` and `e2e_norm_intvty` stand for a metric defined only in core's three
    /// files (an extras field named as its registry base, no code here); the summary's own
    /// distributions (TTFT … E2EL in ms, TTFO, achieved OSL) take the same path. vLLM's block
    /// is left out so that every name comes from the rule.
    #[test]
    fn every_registry_distribution_is_stored_under_its_registry_names_by_both_readings() {
        use inferbench_core::registry::{distribution_bases, distribution_stat_name};
        use inferbench_core::summary::keys::EXTRAS_MS_FIELDS;
        let mut raw = golden("conc4.summary.json");
        raw.retain(|k, _| LatencyStat::from_vllm_key(k).is_none());
        let mut injected = Vec::new();
        for (i, base) in distribution_bases().enumerate() {
            let x = raw["inferbench"].as_object_mut().unwrap();
            if x.contains_key(base) || EXTRAS_MS_FIELDS.iter().any(|f| f.1 == base) {
                continue;
            }
            let v = i as f64;
            x.insert(
                base.into(),
                serde_json::json!({"count": 4, "mean": v + 0.5, "median": v + 0.25,
                    "std": 0.125, "min": v, "max": v + 2.0, "p90": v + 1.5, "p99": v + 1.75,
                    "p99.9": v + 1.875}),
            );
            injected.push(base);
        }
        assert_eq!(injected, ["intvty", "e2e_norm_intvty"]);
        let typed = facts(&read(&raw, "all").unwrap(), &raw).metrics;
        assert_eq!(typed, foreign_facts(&raw).metrics);
        // A new metric's names, by value (e2e_norm_intvty is the registry's 7th base: i = 6).
        for (k, v) in [
            ("mean_e2e_norm_intvty", 6.5),
            ("median_e2e_norm_intvty", 6.25),
            ("std_e2e_norm_intvty", 0.125),
            ("p90_e2e_norm_intvty", 7.5),
            ("p99_e2e_norm_intvty", 7.75),
            ("p999_e2e_norm_intvty", 7.875),
            ("p999_intvty", 6.875),
        ] {
            assert_eq!(typed.get(k), Some(&v), "{k}");
        }
        // Every base: each statistic the summary holds, under its registry name, the value of
        // its flattened one (s for the ms distributions); count, min and max flattened only.
        // The list of bases is pinned once, in core's registry tests: a new base needs no edit
        // here (issue 40: a metric in core's three files).
        for base in distribution_bases() {
            for stat in ["mean", "median", "std", "p90", "p99", "p99.9"] {
                let name = distribution_stat_name(base, stat).unwrap();
                let flat = format!("inferbench.{base}.{stat}");
                assert_eq!(typed.get(&name), typed.get(&flat), "{name}");
                assert!(typed.contains_key(&name), "{name}");
            }
            for stat in ["count", "min", "max"] {
                assert!(
                    !typed.contains_key(&format!("{stat}_{base}")),
                    "{stat}_{base}"
                );
            }
        }
        // In s, as the flattened extras convert ms (× 1e-3).
        let ms = raw["inferbench"]["ttft_ms"]["p99.9"].as_f64().unwrap();
        assert_eq!(typed["p999_ttft"], ms * 1e-3);
        // The registry names and nothing else: no name the registry does not list.
        let registry = inferbench_core::registry::names();
        for k in typed.keys() {
            let stat_base = distribution_bases().any(|b| k.ends_with(&format!("_{b}")));
            assert!(
                !stat_base || registry.contains(k) || k.starts_with("inferbench."),
                "{k}"
            );
        }
    }

    #[test]
    fn a_newer_summary_is_refused_naming_both_versions() {
        let mut raw = golden("conc1.summary.json");
        raw["inferbench"]["schema_version"] = Value::from(Extras::SCHEMA_VERSION + 1);
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("summary.json"),
            serde_json::to_vec(&raw).unwrap(),
        )
        .unwrap();
        let e = parse_dir(d.path(), &Overrides::new()).unwrap_err();
        assert!(
            e.ends_with("summary.json: schema_version 2 is newer than this inferbench reads (1)"),
            "{e}"
        );
    }

    #[test]
    fn a_vllm_written_result_still_imports_by_name() {
        let p: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/imports/vllm_gptoss_conc64.json");
        let run = parse_file(&p, &Overrides::new()).unwrap();
        assert_eq!(run.kind, SourceKind::VllmResult);
        let raw: Map<String, Value> =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let pt = &run.points[0];
        assert!(pt.metrics["median_intvty"] > 0.0);
        assert_eq!(
            pt.metrics["median_intvty"],
            1000.0 / raw["median_tpot_ms"].as_f64().unwrap()
        );
        assert_eq!(pt.conc, raw["max_concurrency"].as_i64().unwrap());
    }
}
