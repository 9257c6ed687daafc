//! InferenceX's aggregate result files (reference/inferencex-producer.md §7.1–7.2,
//! reference/inferencex-app.md §3.3, §3.5): `agg_<RESULT_FILENAME>.json`, one object with `hw` and
//! `conc` (one point; `result_filename` from the file name); `agg_bmk.json`, an array of such
//! rows (duplicate rows: the later one is kept, as InferenceX's `etl/benchmark-ingest.ts`
//! does); and `agg_eval_all.json`, an array whose every row has a `task` (eval results).
//! Identity fields are the row's own keys ([`IDENTITY_KEYS`]); every other numeric field is a
//! metric under its InferenceX name.

use inferbench_core::point::DP_ATTENTION;
use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{
    base_run, config_key, date_from_text, empty_point, num, ConfigKey, EvalData, Importer, Lookup,
    Names, Overrides, ParseError, PointData, RunData, SourceKind, NOT_A_RESULT,
};

/// InferenceX `agg_*.json` / `agg_bmk.json` / `agg_eval_all.json`: a JSON array, or an object
/// with `hw` and `conc`.
pub(super) struct AggFile;

impl Importer for AggFile {
    fn name(&self) -> &'static str {
        SourceKind::InferenceX.as_str()
    }

    fn recognises(&self, v: &Value) -> bool {
        match v {
            Value::Array(_) => true,
            Value::Object(o) => o.contains_key("hw") && o.contains_key("conc"),
            _ => false,
        }
    }

    fn parse(
        &self,
        path: &Path,
        bytes: Vec<u8>,
        v: &Value,
        ov: &Overrides,
    ) -> Result<RunData, ParseError> {
        let p = path.display();
        match v {
            Value::Array(rows) => {
                if rows.is_empty() {
                    return Err(format!("{p}: empty array, no points"));
                }
                let mut run = base_run(SourceKind::InferenceX, path, &bytes);
                if rows.iter().all(|r| r.get("task").is_some()) {
                    for (i, row) in rows.iter().enumerate() {
                        let Value::Object(o) = row else {
                            return Err(format!("{p}: element {i} is not an object"));
                        };
                        run.evals.push(eval_row(o, ov, &mut run.names));
                    }
                    return Ok(run);
                }
                let mut seen: BTreeMap<(ConfigKey, i64), usize> = BTreeMap::new();
                for (i, row) in rows.iter().enumerate() {
                    let Value::Object(o) = row else {
                        return Err(format!("{p}: element {i} is not an object"));
                    };
                    if !o.contains_key("hw") {
                        return Err(format!(
                            "{p}: element {i} has no `hw`: not an InferenceX aggregate row"
                        ));
                    }
                    let pt = inferencex_point(o, ov, &mut run.names, &format!("{p}[{i}]"))?;
                    // InferenceX keeps the last of duplicate rows (etl/benchmark-ingest.ts).
                    let key = (pt.config.clone(), pt.conc);
                    if let Some(&j) = seen.get(&key) {
                        run.warnings.push(format!(
                            "{p}[{i}]: duplicate of element {j}; the later one is kept"
                        ));
                        let old = run
                            .points
                            .iter()
                            .position(|q| (q.config.clone(), q.conc) == key);
                        if let Some(old) = old {
                            run.points.remove(old);
                        }
                    }
                    seen.insert(key, i);
                    run.points.push(pt);
                }
                run.date = run
                    .points
                    .iter()
                    .map(|p| p.date.clone())
                    .max()
                    .unwrap_or_default();
                Ok(run)
            }
            Value::Object(o) if o.contains_key("hw") && o.contains_key("conc") => {
                let mut run = base_run(SourceKind::InferenceX, path, &bytes);
                let pt = inferencex_point(o, ov, &mut run.names, &p.to_string())?;
                run.date = pt.date.clone();
                run.result_filename = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .and_then(|s| s.strip_prefix("agg_"))
                    .unwrap_or("")
                    .to_string();
                run.points.push(pt);
                Ok(run)
            }
            _ => Err(format!("{p}: {NOT_A_RESULT}")),
        }
    }
}

/// Keys of an InferenceX aggregate row that are identity, not metrics.
pub(super) const IDENTITY_KEYS: &[&str] = &[
    "hw",
    "conc",
    "image",
    "model",
    "infmax_model_prefix",
    "model_prefix",
    "framework",
    "precision",
    "spec_decoding",
    "isl",
    "osl",
    "disagg",
    "is_multinode",
    "tp",
    "pp",
    "dcp_size",
    "pcp_size",
    "ep",
    DP_ATTENTION,
    "prefill_tp",
    "prefill_ep",
    "prefill_dp_attention",
    "prefill_num_workers",
    "prefill_pp",
    "prefill_dcp",
    "prefill_pcp",
    "decode_tp",
    "decode_ep",
    "decode_dp_attention",
    "decode_num_workers",
    "decode_pp",
    "decode_dcp",
    "decode_pcp",
    "num_prefill_gpu",
    "num_decode_gpu",
    "recipe_fingerprint",
    "router",
    "kv_p2p_transfer",
    "scenario_type",
    "offload_mode",
    "kv_offloading",
    "users",
    "prefill_hw",
    "decode_hw",
    "power_metric_schema_version",
    "power_valid",
];

/// Numeric non-identity fields of an InferenceX aggregate row, kept under their names.
pub(super) fn agg_metrics(row: &Map<String, Value>, out: &mut BTreeMap<String, f64>) {
    for (k, v) in row {
        if IDENTITY_KEYS.contains(&k.as_str()) || v.is_string() {
            continue;
        }
        if let Some(x) = num(v) {
            out.insert(k.clone(), x);
        }
    }
}

/// One aggregate row as a point; `at` names it in errors (no `conc`, or a fixed-sequence row
/// without `isl`/`osl`).
pub(super) fn inferencex_point(
    o: &Map<String, Value>,
    ov: &Overrides,
    names: &mut Names,
    at: &str,
) -> Result<PointData, ParseError> {
    let l = Lookup::of_maps(ov, vec![o]);
    let cfg = config_key(&l, names);
    let conc = l
        .int(&["conc", "users"])
        .ok_or_else(|| format!("{at}: no `conc`"))?;
    if cfg.isl == 0 && cfg.osl == 0 && cfg.scenario == "fixed_seq_len" {
        return Err(format!("{at}: no `isl`/`osl`"));
    }
    let mut m = BTreeMap::new();
    agg_metrics(o, &mut m);
    let date = l.text(&["date"]);
    let date = date_from_text(&date).unwrap_or_default();
    let mut pt = empty_point(cfg, conc, date);
    pt.metrics = m;
    Ok(pt)
}

/// `_<n>k<m>k_` in an eval source path → (n × 1024, m × 1024).
fn isl_osl_from_source(src: &str) -> Option<(i64, i64)> {
    for part in src.split(['_', '/', '.']) {
        let Some(rest) = part.strip_suffix('k') else {
            continue;
        };
        if let Some((a, b)) = rest.split_once('k') {
            if let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>()) {
                return Some((a * 1024, b * 1024));
            }
        }
    }
    None
}

/// An eval row (`agg_eval_all.json`): the config (ISL/OSL from the source path when the row
/// lacks them), the task, the concurrency and every numeric field as a metric.
pub(super) fn eval_row(o: &Map<String, Value>, ov: &Overrides, names: &mut Names) -> EvalData {
    let mut extra = Map::new();
    if let Some((isl, osl)) = o
        .get("source")
        .and_then(Value::as_str)
        .and_then(isl_osl_from_source)
    {
        extra.insert("isl".into(), Value::from(isl));
        extra.insert("osl".into(), Value::from(osl));
    }
    let l = Lookup::of_maps(ov, vec![o, &extra]);
    let mut config = config_key(&l, names);
    if config.isl == 0 {
        config.scenario = "eval".into();
    }
    let mut metrics = BTreeMap::new();
    for (k, v) in o {
        if IDENTITY_KEYS.contains(&k.as_str()) || v.is_string() || k == "timestamp" {
            continue;
        }
        if let Some(x) = num(v) {
            metrics.insert(k.clone(), x);
        }
    }
    EvalData {
        config,
        task: l.text(&["task"]).to_lowercase(),
        conc: l.int(&["conc"]).unwrap_or(0),
        score: metrics.get("score").or(metrics.get("em_strict")).copied(),
        score_se: metrics
            .get("score_se")
            .or(metrics.get("em_strict_se"))
            .copied(),
        metrics,
        samples: Vec::new(),
    }
}
