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
//!   `em_flexible(_se)` and `n_eff`, then the store's usual eval row;
//! - per task, its scored questions from the samples file beside the result
//!   ([`samples_file`], [`read_samples`]): ours (`samples_gsm8k.jsonl`) or lm-eval's
//!   (`samples_<task>_<date>.jsonl`), bounded ([`MAX_SAMPLES_BYTES`], [`MAX_SAMPLES`],
//!   [`MAX_TEXT_BYTES`]).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::parse::{
    self, base_run, read_json, EvalSample, Overrides, ParseError, RunData, SourceKind,
};

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
            let mut e = parse::eval_from(&row, ov, &mut run.names);
            if let Some(sp) = samples_file(dir, &t.task, p) {
                e.samples = read_samples(&sp, &mut run.warnings);
            }
            run.evals.push(e);
        }
    }
    if run.evals.is_empty() {
        return Err(format!("{d}: its lm-eval result has no `results` entry"));
    }
    parse::apply_eval_job(dir, &mut run)?;
    run.artifacts.extend(parse::dir_files(dir, &[])?);
    Ok(run)
}

/// Largest samples file read, bytes (64 MiB): a larger one is kept as an artifact only, with a
/// warning.
pub const MAX_SAMPLES_BYTES: u64 = 64 << 20;
/// Most questions stored per eval row (GSM8K's test split has 1,319); the rest are left out
/// with a warning.
pub const MAX_SAMPLES: usize = 20_000;
/// Longest question or response stored, bytes (UTF-8, cut at a character boundary and marked
/// with `…`); extracted answers and targets are cut at [`MAX_ANSWER_BYTES`].
pub const MAX_TEXT_BYTES: usize = 4096;
/// Longest extracted answer or target stored, bytes.
pub const MAX_ANSWER_BYTES: usize = 256;

/// The samples file of `task` for the result file `result`: a regular `samples_<task>*.jsonl`
/// of `dir` with the same `_conc<N>` suffix as the result (or none when the result has none),
/// the newest (modification time, then name) when several match.
pub fn samples_file(dir: &Path, task: &str, result: &Path) -> Option<PathBuf> {
    let want = conc_suffix(result);
    let prefix = format!("samples_{task}");
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension().is_some_and(|x| x == "jsonl")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix))
                && conc_suffix(p) == want
        })
        .max_by(|a, b| mtime(a).cmp(&mtime(b)).then(a.cmp(b)))
}

/// `s` cut to at most `max` bytes at a character boundary, `…` appended when cut.
fn bounded(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// A JSON value as text: a string as is, a number or bool printed, the first element of an
/// array (lm-eval's `filtered_resps` / `resps` nest them), "" otherwise.
fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Array(a)) => text_of(a.first()),
        _ => String::new(),
    }
}

/// The question of our prompt (`…Question: <q>\nEnd your response…\nAnswer:`): the text after
/// its last `Question: ` without the instruction and `Answer:` that follow; the prompt itself
/// when it has no `Question: `.
fn question_of_prompt(prompt: &str) -> &str {
    let Some(at) = prompt.rfind("Question: ") else {
        return prompt;
    };
    let q = &prompt[at + "Question: ".len()..];
    let end = ["\nEnd your response", "\nAnswer:"]
        .iter()
        .filter_map(|m| q.find(m))
        .min()
        .unwrap_or(q.len());
    &q[..end]
}

/// One line of a samples file as a question, or `None` when it is no object with a `doc_id`,
/// or is an lm-eval line of a filter other than the strict one (`filter` naming neither
/// `strict` nor `resolved`).
fn sample_of(v: &Value) -> Option<EvalSample> {
    let o = v.as_object()?;
    let doc_id = o.get("doc_id")?.as_i64()?;
    if let Some(f) = o.get("filter").and_then(Value::as_str) {
        if !(f.contains("strict") || f.contains("resolved")) {
            return None;
        }
    }
    let ours = o.contains_key("pass_strict") || o.contains_key("prompt");
    let (question, response, extracted, correct) = if ours {
        (
            question_of_prompt(&text_of(o.get("prompt"))).to_string(),
            text_of(o.get("response")),
            text_of(o.get("strict")),
            o.get("pass_strict").and_then(Value::as_bool),
        )
    } else {
        let question = [
            "/doc/question",
            "/doc/input",
            "/doc/problem",
            "/arguments/0/0",
        ]
        .iter()
        .map(|k| text_of(v.pointer(k)))
        .find(|t| !t.is_empty())
        .unwrap_or_default();
        let correct = ["exact_match", "acc"]
            .iter()
            .find_map(|k| o.get(*k))
            .and_then(|x| x.as_f64().or_else(|| x.as_bool().map(f64::from)))
            .map(|x| x > 0.5);
        (
            question,
            text_of(v.pointer("/resps/0")),
            text_of(o.get("filtered_resps")),
            correct,
        )
    };
    Some(EvalSample {
        doc_id,
        question: bounded(&question, MAX_TEXT_BYTES),
        response: bounded(&response, MAX_TEXT_BYTES),
        extracted: bounded(&extracted, MAX_ANSWER_BYTES),
        target: bounded(&text_of(o.get("target")), MAX_ANSWER_BYTES),
        correct,
        error: bounded(&text_of(o.get("error")), MAX_TEXT_BYTES),
    })
}

/// Reads a samples file's questions in file order (bounded: module docs). Lines that are not
/// JSON or have no `doc_id` are skipped and counted in one warning; a file over
/// [`MAX_SAMPLES_BYTES`] or unreadable gives no questions and a warning (the file itself is
/// kept as an artifact either way).
pub fn read_samples(path: &Path, warnings: &mut Vec<String>) -> Vec<EvalSample> {
    let d = path.display();
    match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_SAMPLES_BYTES => {
            warnings.push(format!(
                "{d}: {} bytes, over the {MAX_SAMPLES_BYTES}-byte limit for eval samples: its \
                 questions are not stored (file kept)",
                m.len()
            ));
            return Vec::new();
        }
        Ok(_) => {}
        Err(e) => {
            warnings.push(format!("{d}: {e}: its questions are not stored"));
            return Vec::new();
        }
    }
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            warnings.push(format!("{d}: {e}: its questions are not stored"));
            return Vec::new();
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let (mut out, mut bad, mut over) = (Vec::new(), 0usize, 0usize);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            bad += 1;
            continue;
        };
        if v.get("filter").is_some() && sample_of(&v).is_none() && v.get("doc_id").is_some() {
            continue; // another filter's line of lm-eval's layout
        }
        match sample_of(&v) {
            Some(_) if out.len() >= MAX_SAMPLES => over += 1,
            Some(x) => out.push(x),
            None => bad += 1,
        }
    }
    if bad > 0 {
        warnings.push(format!(
            "{d}: {bad} line(s) not understood as a scored question (no JSON object with a \
             `doc_id`; file kept)"
        ));
    }
    if over > 0 {
        warnings.push(format!(
            "{d}: {over} question(s) past the first {MAX_SAMPLES} not stored (file kept)"
        ));
    }
    out
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

    #[test]
    fn samples_lines_of_ours_and_lm_evals() {
        let ours = serde_json::json!({"doc_id": 3, "prompt": "Question: 1+1?\nEnd your response with the answer on the last line, formatted as: #### [number]\nAnswer: 2\n\nQuestion: 2+3?\nEnd your response with the answer on the last line, formatted as: #### [number]\nAnswer:",
            "response": "#### 5", "strict": "5", "flexible": "5", "target": "5",
            "pass_strict": true, "pass_flexible": true});
        assert_eq!(
            sample_of(&ours),
            Some(EvalSample {
                doc_id: 3,
                question: "2+3?".into(),
                response: "#### 5".into(),
                extracted: "5".into(),
                target: "5".into(),
                correct: Some(true),
                error: String::new(),
            })
        );
        let lm = serde_json::json!({"doc_id": 7, "doc": {"question": "Q?", "answer": "x #### 4"},
            "target": "4", "arguments": [["few-shot Q?"]], "resps": [["so #### 5"]],
            "filtered_resps": ["5"], "filter": "strict-match", "exact_match": 0.0});
        let s = sample_of(&lm).unwrap();
        assert_eq!(
            (
                s.question.as_str(),
                s.response.as_str(),
                s.extracted.as_str(),
                s.target.as_str(),
                s.correct
            ),
            ("Q?", "so #### 5", "5", "4", Some(false))
        );
        let flex = serde_json::json!({"doc_id": 7, "filter": "flexible-extract", "exact_match": 1});
        assert_eq!(sample_of(&flex), None);
        assert_eq!(sample_of(&serde_json::json!({"question": "no id"})), None);
        assert_eq!(bounded("ééé", 5), "é…");
        assert_eq!(bounded("abc", 3), "abc");
    }
}
