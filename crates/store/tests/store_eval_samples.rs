//! Per-question eval rows (issue 42's evals drawer): an eval set's samples file (ours or
//! lm-eval's) is stored as `eval_samples` rows (schema version 7) at ingest, bounded, once
//! however often it is ingested; a database made before migrates with none.

mod common;

use std::path::{Path, PathBuf};

use inferbench_store::{EvalSample, IngestOptions};

const GPTOSS: &str = "tests/evalsets/eval_gptoss_8k1k_gptoss_8k1k_fp8_vllm_tp2-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc32_h100-box_0";

/// A copy of the gptoss eval set whose `samples_gsm8k.jsonl` holds `lines`.
fn eval_set(root: &Path, lines: &[serde_json::Value]) -> PathBuf {
    let to = root.join("eval_gptoss");
    common::copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join(GPTOSS), &to);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(to.join("samples_gsm8k.jsonl"), text + "not json\n").unwrap();
    to
}

fn lines() -> Vec<serde_json::Value> {
    vec![
        serde_json::json!({"doc_id": 1, "prompt": "Question: 2+3?\nEnd your response with the answer on the last line, formatted as: #### [number]\nAnswer:",
            "response": "2+3=5\n#### 5", "strict": "5", "flexible": "5", "target": "5",
            "pass_strict": true, "pass_flexible": true}),
        serde_json::json!({"doc_id": 0, "prompt": "Question: 7*6?\nAnswer:",
            "response": "", "strict": "", "flexible": "", "target": "42",
            "pass_strict": false, "pass_flexible": false, "error": "http 500"}),
        serde_json::json!({"doc_id": 2, "prompt": "Question: long?", "response": "x".repeat(5000),
            "strict": "9", "flexible": "9", "target": "8", "pass_strict": false, "pass_flexible": false}),
    ]
}

fn sample(
    doc_id: i64,
    q: &str,
    resp: &str,
    ext: &str,
    target: &str,
    ok: bool,
    err: &str,
) -> EvalSample {
    EvalSample {
        doc_id,
        question: q.into(),
        response: resp.into(),
        extracted: ext.into(),
        target: target.into(),
        correct: Some(ok),
        error: err.into(),
    }
}

/// Ingest stores each question (doc_id order, the response cut at 4096 bytes with `…`), warns
/// of the line it could not read, pages and filters; a second ingest changes nothing.
#[test]
fn an_eval_sets_questions_are_stored_bounded_and_once() {
    let dir = tempfile::tempdir().unwrap();
    let set = eval_set(dir.path(), &lines());
    let (mut store, _guard, _) = common::sqlite();
    let r = store.ingest_path(&set, &IngestOptions::default()).unwrap();
    assert_eq!(r.evals, 1, "{r:?}");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("1 line(s) not understood as a scored question")),
        "{r:?}"
    );
    let run = store.evals().unwrap()[0].run_id;
    let long = format!("{}…", "x".repeat(4093));
    let all = vec![
        sample(0, "7*6?", "", "", "42", false, "http 500"),
        sample(1, "2+3?", "2+3=5\n#### 5", "5", "5", true, ""),
        sample(2, "long?", &long, "9", "8", false, ""),
    ];
    assert_eq!(
        store.eval_samples(run, "gsm8k", 32, None, 0, 100).unwrap(),
        (3, all.clone())
    );
    assert_eq!(
        store.eval_samples(run, "gsm8k", 32, None, 1, 1).unwrap(),
        (3, vec![all[1].clone()])
    );
    assert_eq!(
        store
            .eval_samples(run, "gsm8k", 32, Some(false), 0, 100)
            .unwrap(),
        (2, vec![all[0].clone(), all[2].clone()])
    );
    assert_eq!(
        store.eval_samples(run, "gsm8k", 8, None, 0, 100).unwrap(),
        (0, vec![])
    );
    store.ingest_path(&set, &IngestOptions::default()).unwrap();
    assert_eq!(
        store.eval_samples(run, "gsm8k", 32, None, 0, 100).unwrap(),
        (3, all)
    );
    assert_eq!(
        store
            .table_counts()
            .unwrap()
            .iter()
            .find(|t| t.0 == "eval_samples")
            .unwrap()
            .1,
        3
    );
}

/// A database written by the previous build (schema version 6: `inferbench ingest` of the
/// fixture sweep and the gptoss eval set) migrates to 7 only, its eval with no questions;
/// ingesting the eval set again fills them in for the same run.
#[test]
fn a_version_6_database_migrates_with_no_questions_until_reingested() {
    let (mut store, dir, _) = common::migrated_old("v6-sweep-h200-eval.db", 6, &[7, 8]);
    let evals = store.evals().unwrap();
    assert_eq!(evals.len(), 1);
    let run = evals[0].run_id;
    assert_eq!(
        store.eval_samples(run, "gsm8k", 32, None, 0, 10).unwrap(),
        (0, vec![])
    );
    // The stored set's one line, `{"doc_id":0}`, re-ingested from the same bytes: same run.
    let set = dir.path().join("eval_gptoss");
    common::copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join(GPTOSS), &set);
    store.ingest_path(&set, &IngestOptions::default()).unwrap();
    assert_eq!(store.evals().unwrap()[0].run_id, run);
    assert_eq!(
        store.eval_samples(run, "gsm8k", 32, None, 0, 10).unwrap(),
        (
            1,
            vec![EvalSample {
                doc_id: 0,
                question: String::new(),
                response: String::new(),
                extracted: String::new(),
                target: String::new(),
                correct: None,
                error: String::new(),
            }]
        )
    );
}
