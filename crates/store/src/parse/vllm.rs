//! vLLM `benchmark_serving --save-result` JSON, and the same shape from `inferbench bench
//! --save-result` (DESIGN.md §3 "RunSummary"; the fields InferenceX's client writes and
//! `process_result.py` reads, reference/inferencex-producer.md §6.4, §7.1): recognised by
//! `completed` and `request_throughput`. Latencies `*_ms` become seconds under InferenceX names
//! (TPOT also gives interactivity, 1000 / TPOT ms); identity from `model_id`, the mean ISL/OSL
//! (`total_input_tokens` / `total_output_tokens` ÷ `completed`) and `max_concurrency`, the rest
//! from the user's overrides. Our `inferbench` extras object is flattened as `inferbench.*`;
//! the records file it names (`requests_file`) and the side files beside the result
//! (`X.power.csv`, `X.server_metrics.jsonl`, …) are read as a point directory's are. Our
//! `summary.json` is this shape too: [`summary_point`] also reads artifact directories.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::requests::read_requests;
use super::telemetry::{read_power, read_server_metrics};
use super::{
    base_run, config_key, date_from_text, date_from_unix, empty_point, fill_per_gpu,
    inferencex::agg_metrics, job_identity_maps, num, result_side_files, Importer, Lookup,
    Overrides, ParseError, PointData, RunData, SourceKind, NOT_A_RESULT,
};

/// A vLLM-shaped `--save-result` file (vLLM's or `inferbench bench`'s).
pub(super) struct SaveResult;

impl Importer for SaveResult {
    fn name(&self) -> &'static str {
        SourceKind::VllmResult.as_str()
    }

    fn recognises(&self, v: &Value) -> bool {
        v.as_object()
            .is_some_and(|o| o.contains_key("completed") && o.contains_key("request_throughput"))
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
        let mut run = base_run(SourceKind::VllmResult, path, &bytes);
        let mut pt = summary_point(o, None, None, ov, &mut run)?;
        run.artifacts.push(("summary.json".into(), bytes));
        // `bench --save-requests`: the records file the result names (beside it, or a path).
        let records = o
            .get("inferbench")
            .and_then(|x| x.get("requests_file"))
            .and_then(Value::as_str)
            .map(|f| path.parent().unwrap_or(Path::new(".")).join(f))
            .filter(|f| f.is_file());
        if let Some(f) = records {
            read_requests(&f, &mut pt)?;
        }
        // The side files `bench` wrote beside it, stored as a point directory's are.
        for (kind, side) in result_side_files(path) {
            match kind {
                "power.csv" => read_power(&side, &mut run, &mut pt)?,
                "server_metrics.jsonl" => read_server_metrics(&side, &mut run, &mut pt)?,
                _ => {}
            }
            let b = std::fs::read(&side).map_err(|e| format!("{}: {e}", side.display()))?;
            run.artifacts.push((kind.to_string(), b));
        }
        run.points.push(pt);
        Ok(run)
    }
}

/// A point from a vLLM-shaped summary, with optional InferenceX aggregate and job.json objects.
pub(super) fn summary_point(
    s: &Map<String, Value>,
    agg: Option<&Map<String, Value>>,
    job: Option<&Map<String, Value>>,
    ov: &Overrides,
    run: &mut RunData,
) -> Result<PointData, ParseError> {
    let mut maps: Vec<&Map<String, Value>> = Vec::new();
    if let Some(a) = agg {
        maps.push(a);
    }
    // The runner's job.json keeps the matrix row with InferenceX's dashed keys
    // (`model-prefix`, `scenario-type`): read them under the underscore names.
    let job_parts: Vec<Map<String, Value>> = job
        .map(job_identity_maps)
        .unwrap_or_default()
        .into_iter()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.replace('-', "_"), v.clone()))
                .collect()
        })
        .collect();
    maps.extend(job_parts.iter());
    // The summary's own `scenario_type`: at its top level (an AgentX replay's `summary.json`,
    // trial 11: a `replay --result-dir` was stored as a valid fixed-length point) or in its
    // metadata.
    let meta = s.get("metadata").and_then(Value::as_object);
    let agentic = maps
        .iter()
        .copied()
        .chain(meta)
        .chain(std::iter::once(s))
        .any(|m| m.get("scenario_type").and_then(Value::as_str) == Some("agentic-coding"));
    // Derived identity from the summary itself: model id, mean ISL/OSL (not for agentic
    // points, whose lengths vary by design), concurrency.
    let mut derived = Map::new();
    if let Some(v) = s.get("model_id") {
        derived.insert("model".into(), v.clone());
    }
    if agentic {
        derived.insert("scenario_type".into(), Value::from("agentic-coding"));
    }
    let completed = s.get("completed").and_then(num).unwrap_or(0.0);
    if completed > 0.0 && !agentic {
        for (src, dst) in [
            ("total_input_tokens", "isl"),
            ("total_output_tokens", "osl"),
        ] {
            if let Some(t) = s.get(src).and_then(num) {
                derived.insert(dst.into(), Value::from((t / completed).round() as i64));
            }
        }
    }
    if let Some(c) = s.get("max_concurrency").and_then(num) {
        derived.insert("conc".into(), Value::from(c as i64));
    }
    maps.push(&derived);
    let l = Lookup {
        overrides: ov,
        maps,
    };
    let cfg = config_key(&l, &mut run.names);
    let conc = l.int(&["conc", "max_concurrency", "CONC"]).unwrap_or(0);
    let mut m = BTreeMap::new();
    summary_metrics(s, &mut m);
    if let Some(a) = agg {
        agg_metrics(a, &mut m); // the aggregate's per-GPU figures win (InferenceX rules)
    }
    fill_per_gpu(&cfg, &mut m);
    let start = s.get("benchmark_start_time_unix").and_then(num);
    let end = s.get("benchmark_end_time_unix").and_then(num);
    run.start_unix = start;
    run.end_unix = end;
    let date = s
        .get("date")
        .and_then(Value::as_str)
        .and_then(date_from_text)
        .or_else(|| start.map(date_from_unix))
        .unwrap_or_default();
    run.date = date.clone();
    let mut pt = empty_point(cfg, conc, date);
    if completed == 0.0 {
        pt.error = Some("no successful request".into());
    }
    pt.metrics = m;
    // Not a complete result: an AgentX replay's `submission_valid: false` (at the top in our
    // summaries, or in `metadata`), or a run cut short (Ctrl-C, an unreachable server, an
    // abort: our `inferbench.interrupted` / `stop_reason`).
    let not_valid = |v: &Value| matches!(v, Value::Bool(false)) || v.as_str() == Some("false");
    let agentic_invalid = agentic
        && s.get("submission_valid")
            .or_else(|| meta.and_then(|m| m.get("submission_valid")))
            .is_some_and(not_valid);
    let x = s.get("inferbench").and_then(Value::as_object);
    let cut_short = x.is_some_and(|x| {
        x.get("interrupted").and_then(Value::as_bool) == Some(true)
            || x.get("stop_reason")
                .and_then(Value::as_str)
                .is_some_and(|r| r != "completed")
    });
    // Or timings the producer found not valid (a server that fell behind its schedule).
    let timing_invalid = x.is_some_and(|x| x.get("invalid_reason").is_some_and(|r| !r.is_null()));
    pt.valid = !(agentic_invalid || cut_short || timing_invalid);
    Ok(pt)
}

/// Flattens a vLLM-shaped summary (ms latencies) into InferenceX names and units: `*_ms` keys →
/// seconds without the suffix; TPOT statistics also give `*_intvty` = 1000 / TPOT_ms; other
/// numeric top-level keys kept; the `inferbench` extras object flattened as `inferbench.<key>`
/// (its `*_ms` values also converted) and its E2E-normalized interactivity / TTFO statistics
/// promoted to the hot names.
fn summary_metrics(s: &Map<String, Value>, out: &mut BTreeMap<String, f64>) {
    for (k, v) in s {
        if k == "inferbench" {
            continue;
        }
        let Some(x) = num(v).filter(|_| !v.is_string() || k.ends_with("_ms")) else {
            continue;
        };
        if let Some(base) = k.strip_suffix("_ms") {
            out.insert(base.to_string(), x / 1000.0);
            if base.contains("tpot") && x > 0.0 {
                out.insert(base.replace("tpot", "intvty"), 1000.0 / x);
            }
        } else {
            out.insert(k.clone(), x);
        }
    }
    if let Some(Value::Object(ext)) = s.get("inferbench") {
        flatten_extras("inferbench", ext, 1.0, out);
        for (k, v) in out.clone() {
            let Some(rest) = k.strip_prefix("inferbench.") else {
                continue;
            };
            let leaf = rest.rsplit('.').next().unwrap_or(rest);
            for q in ["p75", "p90"] {
                let hot = format!("{q}_e2e_norm_intvty");
                if leaf == hot
                    || rest == format!("e2e_norm_intvty.{q}")
                    || rest == format!("e2e_normalized_interactivity.{q}")
                {
                    out.entry(hot).or_insert(v);
                }
            }
            for (a, b, hot) in [
                ("median_ttfo", "ttfo.median", "median_ttfo"),
                ("p99_ttfo", "ttfo.p99", "p99_ttfo"),
            ] {
                if leaf == a || rest == b {
                    out.entry(hot.to_string()).or_insert(v);
                }
            }
        }
    }
}

/// Flattens numeric leaves as `prefix.key[.sub…]`; a key ending `_ms` loses the suffix and its
/// values (or its whole sub-object's, e.g. a latency distribution) are converted to seconds —
/// except counts.
fn flatten_extras(
    prefix: &str,
    m: &Map<String, Value>,
    scale: f64,
    out: &mut BTreeMap<String, f64>,
) {
    for (k, v) in m {
        let (name, sc) = match k.strip_suffix("_ms") {
            Some(base) => (base, 1e-3),
            None => (k.as_str(), scale),
        };
        match v {
            // The server's every counter and gauge stay in server_metrics.jsonl (stored as
            // series); the point keeps the headline figures.
            Value::Object(_)
                if prefix == "inferbench.server_metrics"
                    && (name == "counters" || name == "gauges") => {}
            Value::Object(o) => flatten_extras(&format!("{prefix}.{name}"), o, sc, out),
            Value::Number(_) => {
                let x = num(v).unwrap_or(f64::NAN);
                let x = if k == "count" { x } else { x * sc };
                out.insert(format!("{prefix}.{name}"), x);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_summary_flattening() {
        let s: Value = serde_json::json!({
            "completed": 10, "request_throughput": 2.0, "mean_tpot_ms": 20.0,
            "p99_ttft_ms": 1500.0, "date": "20260101-000000",
            "inferbench": {"e2e_norm_intvty": {"p90": 12.5}, "median_ttfo_ms": 40.0,
                "server_metrics": {"engine": "vllm", "kv_cache_usage_max": 0.75,
                    "counters": {"vllm:prompt_tokens_total": {"delta": 5.0, "rate": 1.0}},
                    "gauges": {"vllm:num_requests_running": {"mean": 2.0, "min": 1.0, "max": 3.0, "n": 2}}}}
        });
        let mut m = BTreeMap::new();
        summary_metrics(s.as_object().unwrap(), &mut m);
        assert_eq!(m["mean_tpot"], 0.02);
        assert_eq!(m["mean_intvty"], 50.0);
        assert_eq!(m["p99_ttft"], 1.5);
        assert_eq!(m["p90_e2e_norm_intvty"], 12.5);
        assert_eq!(m["median_ttfo"], 0.04);
        assert_eq!(m["completed"], 10.0);
        assert_eq!(m["inferbench.server_metrics.kv_cache_usage_max"], 0.75);
        assert!(
            !m.keys()
                .any(|k| k.contains("counters") || k.contains("gauges")),
            "{m:?}"
        );
    }
}
