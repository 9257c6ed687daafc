//! Eval sets: a directory holding `meta_env.json` and lm-eval result files — InferenceX's
//! `eval_<EXP_NAME>_<RESULT_FILENAME>` artifact, and what `inferbench sweep` writes for a row's
//! eval. Read the way InferenceX's `utils/collect_eval_results.py` reads them (producer
//! reference §10.3), so both tools store the same rows:
//!
//! - result files: `*.json` other than `meta_env.json` that carry `lm_eval_version`; the newest
//!   (modification time, then name) of the set, or, when `meta_env.json` lists `eval_concs`
//!   (batched evals), the newest per `_conc<N>.json` suffix among `completed_eval_concs`;
//! - per task in `results`: the strict value is the `<metric>,<filter>` of the filter whose
//!   name holds `strict` or `resolved`, the flexible one of the filter holding `flex` or
//!   `extract` (metric and filters from `configs.<task>.metric_list` / `filter_list`); without
//!   filters `acc`, else the bare metric;
//! - the row: `meta_env.json`'s identity (`infmax_model_prefix`, `hw`, `framework`, …, `conc`)
//!   plus `task`, `score` (strict, else accuracy), `score_se`, `em_strict(_se)`,
//!   `em_flexible(_se)` and `n_eff`, then the store's usual eval row.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::parse::{self, base_run, read_json, Overrides, ParseError, RunData, SourceKind};

/// The metadata file that makes a directory an eval set.
pub const META_ENV: &str = "meta_env.json";

/// Whether `dir` is an eval set (it holds `meta_env.json`).
pub fn is_eval_set(dir: &Path) -> bool {
    dir.join(META_ENV).is_file()
}

/// Whether `dir` holds at least one lm-eval result file (a finished eval).
pub fn has_results(dir: &Path) -> bool {
    !lm_eval_files(dir).is_empty()
}

/// `(path, value)` of every lm-eval result file of `dir`, sorted by name.
fn lm_eval_files(dir: &Path) -> Vec<(PathBuf, Value)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<(PathBuf, Value)> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension().is_some_and(|x| x == "json")
                && p.file_name().is_some_and(|n| n != META_ENV)
        })
        .filter_map(|p| {
            let v: Value = serde_json::from_slice(&std::fs::read(&p).ok()?).ok()?;
            // An interrupted eval of ours is no score (`interrupted: true`).
            (v.get("lm_eval_version").is_some() && v.get("interrupted") != Some(&Value::Bool(true)))
                .then_some((p, v))
        })
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// `N` of a batched result file named `…_conc<N>.json` or `…_conc<N>_<k>.json`.
fn conc_suffix(path: &Path) -> Option<i64> {
    let stem = path.file_stem()?.to_str()?;
    let at = stem.rfind("_conc")?;
    let rest = &stem[at + 5..];
    let digits = rest.split('_').next()?;
    let tail_ok = rest[digits.len()..]
        .strip_prefix('_')
        .is_none_or(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()));
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && tail_ok)
        .then(|| digits.parse().ok())
        .flatten()
}

fn mtime(p: &Path) -> std::time::SystemTime {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .unwrap_or(std::time::UNIX_EPOCH)
}

/// One task's scores extracted from an lm-eval result (collect_eval_results.py's
/// `extract_lm_metrics`).
#[derive(Debug, Default)]
struct TaskScores {
    task: String,
    strict: Option<Value>,
    strict_se: Option<Value>,
    flex: Option<Value>,
    flex_se: Option<Value>,
    accuracy: Option<Value>,
    accuracy_se: Option<Value>,
    n_eff: Option<Value>,
    model: Option<Value>,
}

fn task_scores(result: &Value) -> Vec<TaskScores> {
    let Some(results) = result.get("results").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (task, r) in results {
        let cfg = result.pointer(&format!("/configs/{}", task.replace('/', "~1")));
        let base = cfg
            .and_then(|c| c.pointer("/metric_list/0/metric"))
            .and_then(Value::as_str)
            .unwrap_or("exact_match");
        let filters: Vec<&str> = cfg
            .and_then(|c| c.get("filter_list"))
            .and_then(Value::as_array)
            .map(|l| {
                l.iter()
                    .filter_map(|f| f.get("name").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        let get = |k: &str| r.get(k).filter(|v| !v.is_null()).cloned();
        let mut t = TaskScores {
            task: task.clone(),
            n_eff: result
                .pointer(&format!("/n-samples/{task}/effective"))
                .cloned(),
            model: result
                .get("model_name")
                .filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
                .or_else(|| cfg.and_then(|c| c.pointer("/metadata/model")))
                .cloned(),
            ..TaskScores::default()
        };
        if filters.is_empty() {
            if r.get("acc").is_some() {
                (t.accuracy, t.accuracy_se) = (get("acc"), get("acc_stderr"));
            } else {
                (t.strict, t.strict_se) = (get(base), get(&format!("{base}_stderr")));
            }
        }
        for f in filters {
            let pair = (
                get(&format!("{base},{f}")),
                get(&format!("{base}_stderr,{f}")),
            );
            if f.contains("strict") || f.contains("resolved") {
                (t.strict, t.strict_se) = pair;
            } else if f.contains("flex") || f.contains("extract") {
                (t.flex, t.flex_se) = pair;
            }
        }
        out.push(t);
    }
    out
}

/// The flat row of one task (collect_eval_results.py's `build_row`, in the store's field names).
fn flat_row(meta: &Map<String, Value>, t: &TaskScores, source: &Path) -> Map<String, Value> {
    let mut row = meta.clone();
    // meta_env.json's `model` is the served path; the result's model name is preferred.
    if let Some(m) = &t.model {
        row.insert("model".into(), m.clone());
    }
    if !row.contains_key("infmax_model_prefix") {
        row.insert("infmax_model_prefix".into(), "unknown".into());
    }
    row.insert("task".into(), t.task.clone().into());
    let mut put = |k: &str, v: &Option<Value>| {
        if let Some(v) = v {
            row.insert(k.into(), v.clone());
        }
    };
    put("em_strict", &t.strict);
    put("em_strict_se", &t.strict_se);
    put("em_flexible", &t.flex);
    put("em_flexible_se", &t.flex_se);
    put("n_eff", &t.n_eff);
    if t.strict.is_some() {
        put("score", &t.strict);
        put("score_se", &t.strict_se);
        row.insert("score_name".into(), "em_strict".into());
    } else if t.accuracy.is_some() {
        put("score", &t.accuracy);
        put("score_se", &t.accuracy_se);
        row.insert("score_name".into(), "accuracy".into());
    }
    row.insert("source".into(), source.display().to_string().into());
    row
}

/// Reads one eval set into a run holding its eval rows (no points). Every regular file of the
/// directory is kept as an artifact. The run's date is the newest result's lm-eval `date`
/// (unix seconds), else its modification time.
///
/// Errors: `meta_env.json` missing, unreadable or not an object; no lm-eval result file.
pub fn parse_eval_dir(dir: &Path, ov: &Overrides) -> Result<RunData, ParseError> {
    let d = dir.display();
    let (meta_bytes, meta_v) = read_json(&dir.join(META_ENV))?;
    let Value::Object(meta) = meta_v else {
        return Err(format!("{d}/{META_ENV}: not a JSON object"));
    };
    let files = lm_eval_files(dir);
    if files.is_empty() {
        return Err(format!(
            "{d}: an eval set ({META_ENV}) without an lm-eval result file (a *.json with \
             `lm_eval_version`; an interrupted eval's results say `interrupted: true` and are \
             not stored)"
        ));
    }
    // Which result files count, each with the meta it is read with.
    let mut chosen: Vec<(PathBuf, Value, Map<String, Value>)> = Vec::new();
    match meta.get("eval_concs").and_then(Value::as_array) {
        Some(concs) => {
            let allowed: Vec<i64> = meta
                .get("completed_eval_concs")
                .and_then(Value::as_array)
                .unwrap_or(concs)
                .iter()
                .filter_map(|c| c.as_i64().or_else(|| c.as_str()?.trim().parse().ok()))
                .collect();
            let mut by_conc: std::collections::BTreeMap<i64, (PathBuf, Value)> =
                std::collections::BTreeMap::new();
            for (p, v) in files {
                let Some(c) = conc_suffix(&p).filter(|c| allowed.contains(c)) else {
                    continue;
                };
                let newer = by_conc.get(&c).is_none_or(|(q, _)| mtime(&p) >= mtime(q));
                if newer {
                    by_conc.insert(c, (p, v));
                }
            }
            for (c, (p, v)) in by_conc {
                let mut m = meta.clone();
                m.insert("conc".into(), c.into());
                chosen.push((p, v, m));
            }
        }
        None => {
            let (p, v) = files
                .into_iter()
                .max_by(|a, b| mtime(&a.0).cmp(&mtime(&b.0)).then(a.0.cmp(&b.0)))
                .expect("not empty");
            chosen.push((p, v, meta.clone()));
        }
    }
    let mut key = meta_bytes;
    for (p, _, _) in &chosen {
        key.extend_from_slice(&std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?);
    }
    let mut run = base_run(SourceKind::Artifacts, dir, &key);
    // InferenceX's `eval_<config>` folders sit in their run's folder: that folder is the batch
    // (as for point directories). Any other eval directory (`inferbench eval`'s --result-dir,
    // e.g. `results/eval`) holds one eval run and is its own batch, as a replay's result
    // directory is (trial 25: it was batched under `results`). A job.json (a sweep's eval)
    // names the sweep instead ([`parse::apply_eval_job`]).
    let per_config = (dir.file_name()).is_some_and(|n| n.to_string_lossy().starts_with("eval_"));
    run.batch = if per_config {
        dir.parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    } else {
        dir.display().to_string()
    };
    let newest = chosen
        .iter()
        .filter_map(|(_, v, _)| v.get("date").and_then(Value::as_f64))
        .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
    let unix = newest.or_else(|| {
        chosen
            .iter()
            .map(|(p, _, _)| mtime(p))
            .max()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64())
    });
    run.date = unix.map(parse::date_from_unix).unwrap_or_default();
    run.start_unix = unix;
    if let Some(rf) = meta.get("result_filename").and_then(Value::as_str) {
        run.result_filename = rf.to_string();
    }
    for (p, v, m) in &chosen {
        for t in task_scores(v) {
            let row = flat_row(m, &t, p);
            run.evals.push(parse::eval_from(&row, ov, &mut run.names));
        }
    }
    if run.evals.is_empty() {
        return Err(format!("{d}: its lm-eval result has no `results` entry"));
    }
    parse::apply_eval_job(dir, &mut run)?;
    run.artifacts.extend(parse::dir_files(dir, &[])?);
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batched_result_names() {
        assert_eq!(conc_suffix(Path::new("results_conc16.json")), Some(16));
        assert_eq!(conc_suffix(Path::new("r_conc64_2.json")), Some(64));
        assert_eq!(conc_suffix(Path::new("results_gsm8k.json")), None);
        assert_eq!(conc_suffix(Path::new("r_conc.json")), None);
        assert_eq!(conc_suffix(Path::new("r_conc8_x.json")), None);
    }
}
