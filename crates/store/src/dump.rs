//! InferenceX's public database dumps, JSON form ([A], reference/inferencex-app.md §2.2 and
//! §5.7): a directory `inferencex-dump-YYYY-MM-DD/` with one `<table>.json` per table, each a
//! JSON array of rows (bigserial ids as JSON strings). Read into runs, the way InferenceX's own
//! reads see the data: one run per GitHub workflow run, only its latest attempt (the
//! `latest_workflow_runs` view), one point per `benchmark_results` row (failed rows kept as
//! failed points, with their `error`), evals from `eval_results`. Identity names go through the
//! same normalizers as every other import.
//!
//! Idempotent: a run's key is the hash of its workflow-run row and its result rows, so
//! importing the same dump again (or a later dump in which that run did not change) updates
//! nothing; a changed run replaces its earlier version.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::parse::{
    base_run, config_from, empty_point, eval_from, metrics_from, sha256_hex, Overrides, ParseError,
    RunData, SourceKind,
};

/// One table row.
type Row = Map<String, Value>;

/// The tables read (others, such as `server_logs` or `availability`, are ignored).
pub const TABLES: &[&str] = &[
    "configs",
    "workflow_runs",
    "benchmark_results",
    "eval_results",
];

/// Whether `dir` looks like a JSON dump (it holds `benchmark_results.json` and `configs.json`).
pub fn is_json_dump(dir: &Path) -> bool {
    dir.join("benchmark_results.json").is_file() && dir.join("configs.json").is_file()
}

/// A table's rows; a missing optional table (`eval_results`) is empty.
fn table(dir: &Path, name: &str, required: bool) -> Result<Vec<Map<String, Value>>, ParseError> {
    let path = dir.join(format!("{name}.json"));
    if !path.is_file() {
        return if required {
            Err(format!(
                "{}: missing (an InferenceX JSON dump has one <table>.json per table: {})",
                path.display(),
                TABLES.join(", ")
            ))
        } else {
            Ok(Vec::new())
        };
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| {
        format!(
            "{}:{}:{}: invalid JSON: {e}",
            path.display(),
            e.line(),
            e.column()
        )
    })?;
    let Value::Array(rows) = v else {
        return Err(format!("{}: expected a JSON array of rows", path.display()));
    };
    rows.into_iter()
        .enumerate()
        .map(|(i, r)| match r {
            Value::Object(o) => Ok(o),
            _ => Err(format!("{}: row {i} is not an object", path.display())),
        })
        .collect()
}

/// An id column as text: ids are numbers (serial) or strings (bigserial) in the dumps.
fn id(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A benchmark or eval row as one flat object of the field names the store's readers know:
/// the config's columns (prefill/decode parallelism; `tp`/`ep`/`dp_attention` from the decode
/// side, as InferenceX's mapper stores non-disaggregated runs with prefill = decode), the row's
/// own columns, and its `metrics` object flattened in.
fn flat(config: &Map<String, Value>, row: &Map<String, Value>) -> Map<String, Value> {
    let mut o = Map::new();
    for (k, v) in config {
        if k != "id" {
            o.insert(k.clone(), v.clone());
        }
    }
    for (from, to) in [
        ("decode_tp", "tp"),
        ("decode_ep", "ep"),
        ("decode_dp_attention", "dp_attention"),
        ("spec_method", "spec_decoding"),
    ] {
        if let Some(v) = config.get(from) {
            o.insert(to.into(), v.clone());
        }
    }
    for (k, v) in row {
        match k.as_str() {
            "id" | "workflow_run_id" | "config_id" | "server_log_id" | "trace_replay_id"
            | "workers" | "metrics" => {}
            "benchmark_type" => {
                let s = match v.as_str() {
                    Some("single_turn") | None => "fixed_seq_len",
                    Some(t) if t.starts_with("agentic") => crate::query::AGENTIC_SCENARIO,
                    Some(t) => t,
                };
                o.insert("scenario".into(), Value::from(s));
            }
            _ => {
                o.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(Value::Object(m)) = row.get("metrics") {
        for (k, v) in m {
            o.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    o
}

/// Reads a JSON dump directory into runs (module docs); `ov` as for every import (a value
/// given there wins over the dump's). Errors: a required table missing or not a JSON array of
/// objects (file:line:column for bad JSON). A result row whose config or workflow run is not in
/// the dump is skipped with a warning on its run, or on the first run when it has none.
pub fn read_json_dump(dir: &Path, ov: &Overrides) -> Result<Vec<RunData>, ParseError> {
    let configs: BTreeMap<String, Map<String, Value>> = table(dir, "configs", true)?
        .into_iter()
        .filter_map(|c| Some((id(c.get("id"))?, c)))
        .collect();
    // The latest attempt of each GitHub run (InferenceX's `latest_workflow_runs`).
    let mut latest: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for w in table(dir, "workflow_runs", true)? {
        let gh = id(w.get("github_run_id")).or_else(|| id(w.get("id")));
        let Some(gh) = gh else { continue };
        let attempt = int(w.get("run_attempt")).unwrap_or(0);
        let newer = latest
            .get(&gh)
            .is_none_or(|old| int(old.get("run_attempt")).unwrap_or(0) < attempt);
        if newer {
            latest.insert(gh, w);
        }
    }
    let by_id: BTreeMap<String, &Map<String, Value>> = latest
        .values()
        .filter_map(|w| Some((id(w.get("id"))?, w)))
        .collect();
    let results = table(dir, "benchmark_results", true)?;
    let evals = table(dir, "eval_results", false)?;
    let mut rows_of: BTreeMap<String, (Vec<&Row>, Vec<&Row>)> = BTreeMap::new();
    let mut orphans = Vec::new();
    let mut superseded = 0usize;
    for (is_eval, rows) in [(false, &results), (true, &evals)] {
        for (i, r) in rows.iter().enumerate() {
            let table = if is_eval {
                "eval_results"
            } else {
                "benchmark_results"
            };
            let run = id(r.get("workflow_run_id"));
            let cfg = id(r.get("config_id"));
            match (run, cfg) {
                (Some(run), Some(cfg))
                    if by_id.contains_key(&run) && configs.contains_key(&cfg) =>
                {
                    let e = rows_of.entry(run).or_default();
                    if is_eval {
                        e.1.push(r);
                    } else {
                        e.0.push(r);
                    }
                }
                (Some(_), Some(cfg)) if configs.contains_key(&cfg) => superseded += 1,
                _ => orphans.push(format!(
                    "{table}.json row {} (id {}): its config or workflow run is not in the dump; \
                     skipped",
                    i + 1,
                    id(r.get("id")).unwrap_or_else(|| "-".into())
                )),
            }
        }
    }
    let mut out = Vec::new();
    for (run_id, (points, run_evals)) in &rows_of {
        let w = by_id[run_id];
        let gh = id(w.get("github_run_id")).unwrap_or_else(|| run_id.clone());
        let mut key = serde_json::to_vec(w).unwrap_or_default();
        for r in points.iter().chain(run_evals) {
            key.extend(serde_json::to_vec(r).unwrap_or_default());
        }
        let path = dir.join("benchmark_results.json");
        let mut run = base_run(SourceKind::InferenceXDump, &path, &key);
        run.run_key = format!("inferencex-dump:{gh}:sha256:{}", sha256_hex(&key));
        run.source_path = format!("{}#workflow_run={gh}", dir.display());
        run.batch = format!("inferencex-run-{gh}");
        run.date = w
            .get("date")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        run.git_sha = w
            .get("head_sha")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        run.job = serde_json::to_string(w).unwrap_or_else(|_| "{}".into());
        for r in points {
            let cfg = &configs[&id(r.get("config_id")).unwrap_or_default()];
            let o = flat(cfg, r);
            let config = config_from(&o, ov, &mut run.names);
            let conc = int(o.get("conc")).unwrap_or(0);
            let date = o
                .get("date")
                .and_then(Value::as_str)
                .unwrap_or(&run.date)
                .to_string();
            let mut pt = empty_point(config, conc, date);
            pt.metrics = metrics_from(&o);
            pt.error = r.get("error").and_then(Value::as_str).map(String::from);
            run.points.push(pt);
        }
        for r in run_evals {
            let cfg = &configs[&id(r.get("config_id")).unwrap_or_default()];
            run.evals.push(eval_from(&flat(cfg, r), ov, &mut run.names));
        }
        out.push(run);
    }
    if let Some(first) = out.first_mut() {
        first.warnings.extend(orphans);
        if superseded > 0 {
            first.warnings.push(format!(
                "{superseded} row(s) of earlier attempts of a workflow run not imported (only \
                 each run's latest attempt counts, as on InferenceX)"
            ));
        }
    } else if !orphans.is_empty() {
        return Err(orphans.join("; "));
    }
    Ok(out)
}
