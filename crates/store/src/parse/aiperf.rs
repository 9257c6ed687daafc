//! AIPerf's summary export `profile_export_aiperf.json` (its shape: reference/agentx.md §4.3,
//! as `loadgen::agentic::aiperf` also writes it; AIPerf itself: reference/peers.md §2.6):
//! recognised by `request_throughput`, `time_to_first_token` or `request_latency` being an
//! object with an `avg`. Statistics (`avg`, `p50`, `p90`, `p99`, `std`, scaled by each
//! metric's `unit`) become InferenceX names in seconds (AIPerf's `inter_token_latency` is
//! TPOT); ISL/OSL from the mean sequence lengths, concurrency from
//! `input_config.loadgen.concurrency` (else the effective concurrency), the model from
//! `input_config.endpoint.model_names`. The export names no hardware, framework or
//! parallelism: those come from the user's overrides.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{
    base_run, config_key, date_from_text, empty_point, fill_per_gpu, num, Importer, Lookup,
    Overrides, ParseError, RunData, SourceKind, NOT_A_RESULT,
};

/// AIPerf `profile_export_aiperf.json`.
pub(super) struct ProfileExport;

impl Importer for ProfileExport {
    fn name(&self) -> &'static str {
        SourceKind::Aiperf.as_str()
    }

    fn recognises(&self, v: &Value) -> bool {
        matches!(v, Value::Object(o) if is_aiperf(o))
    }

    fn parse(
        &self,
        path: &Path,
        bytes: Vec<u8>,
        v: &Value,
        ov: &Overrides,
    ) -> Result<RunData, ParseError> {
        let Value::Object(o) = v else {
            return Err(format!("{}: {NOT_A_RESULT}", path.display()));
        };
        aiperf_run(path, &bytes, o, ov)
    }
}

/// Whether `o` is AIPerf's summary export: one of its headline metrics is an object with `avg`.
fn is_aiperf(o: &Map<String, Value>) -> bool {
    [
        "request_throughput",
        "time_to_first_token",
        "request_latency",
    ]
    .iter()
    .any(|k| matches!(o.get(*k), Some(Value::Object(m)) if m.contains_key("avg")))
}

/// Seconds per unit for AIPerf metric units.
fn unit_scale(unit: &str) -> f64 {
    match unit.trim() {
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        _ => 1.0,
    }
}

fn aiperf_run(
    path: &Path,
    bytes: &[u8],
    o: &Map<String, Value>,
    ov: &Overrides,
) -> Result<RunData, ParseError> {
    let mut run = base_run(SourceKind::Aiperf, path, bytes);
    let stat = |k: &str, s: &str| -> Option<f64> {
        let m = o.get(k)?.as_object()?;
        let scale = m
            .get("unit")
            .and_then(Value::as_str)
            .map_or(1.0, unit_scale);
        num(m.get(s)?).map(|x| x * scale)
    };
    let mut m = BTreeMap::new();
    // Latencies → seconds with InferenceX names. AIPerf's "inter_token_latency" is
    // (latency − TTFT)/(OSL − 1), i.e. TPOT (reference/peers.md §4).
    for (src, dst) in [
        ("time_to_first_token", "ttft"),
        ("inter_token_latency", "tpot"),
        ("request_latency", "e2el"),
        ("inter_chunk_latency", "itl"),
        ("time_to_first_output_token", "ttfo"),
    ] {
        for (s, pre) in [
            ("avg", "mean_"),
            ("p50", "median_"),
            ("p90", "p90_"),
            ("p99", "p99_"),
            ("std", "std_"),
        ] {
            if let Some(x) = stat(src, s) {
                m.insert(format!("{pre}{dst}"), x);
                if dst == "tpot" && x > 0.0 {
                    m.insert(format!("{pre}intvty"), 1.0 / x);
                }
            }
        }
    }
    for (src, dst) in [
        ("request_throughput", "request_throughput"),
        ("output_token_throughput", "output_throughput"),
        ("total_token_throughput", "total_token_throughput"),
        ("benchmark_duration", "duration"),
        ("completed_request_count", "completed"),
        ("request_count", "num_prompts"),
        ("error_request_count", "failed"),
        ("effective_concurrency", "inferbench.effective_concurrency"),
    ] {
        if let Some(x) = stat(src, "avg") {
            m.insert(dst.to_string(), x);
        }
    }
    if !m.contains_key("total_token_throughput") {
        if let (Some(i), Some(out)) = (
            stat("input_token_throughput", "avg"),
            m.get("output_throughput"),
        ) {
            m.insert("total_token_throughput".into(), i + out);
        }
    }
    let mut ident = Map::new();
    if let Some(x) = stat("input_sequence_length", "avg") {
        ident.insert("isl".into(), Value::from(x.round() as i64));
    }
    if let Some(x) = stat("output_sequence_length", "avg") {
        ident.insert("osl".into(), Value::from(x.round() as i64));
    }
    let conc = o
        .get("input_config")
        .and_then(|c| c.pointer("/loadgen/concurrency"))
        .and_then(num)
        .or_else(|| stat("effective_concurrency", "avg").map(f64::round));
    if let Some(c) = conc {
        ident.insert("conc".into(), Value::from(c as i64));
    }
    if let Some(Value::Object(md)) = o.get("input_config").and_then(|c| c.get("endpoint")) {
        if let Some(models) = md.get("model_names").and_then(Value::as_array) {
            if let Some(first) = models.first() {
                ident.insert("model".into(), first.clone());
            }
        }
    }
    let l = Lookup::of_maps(ov, vec![&ident, o]);
    let cfg = config_key(&l, &mut run.names);
    let conc = l.int(&["conc"]).unwrap_or_else(|| {
        run.warnings.push(format!(
            "{}: no concurrency found; stored as conc 0",
            path.display()
        ));
        0
    });
    let mut m2 = m;
    fill_per_gpu(&cfg, &mut m2);
    let date = o
        .get("start_time")
        .and_then(Value::as_str)
        .and_then(date_from_text)
        .unwrap_or_default();
    run.date = date.clone();
    let mut pt = empty_point(cfg, conc, date);
    pt.metrics = m2;
    run.points.push(pt);
    run.artifacts
        .push(("profile_export_aiperf.json".into(), bytes.to_vec()));
    Ok(run)
}
