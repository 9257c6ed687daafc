//! InferenceX's public database dump, JSON form (reference/inferencex-app.md §2.2, §5.7), made
//! from the documented schema (tests/dumps/inferencex-dump-2026-07-06: two GitHub runs, one of
//! them with a superseded first attempt; a failed row; an eval; a row whose config is missing).

use std::path::{Path, PathBuf};

use inferbench_store::{CostOptions, Filter, IngestOptions, Store};

fn dump() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dumps/inferencex-dump-2026-07-06")
}

#[test]
fn json_dump_imports_latest_attempts_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db").display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    let r = s
        .ingest_inferencex_dump(&dump(), &IngestOptions::default())
        .unwrap();
    // Runs 555 (attempt 1; attempt 0's two rows are not read) and 777; 555's failed conc-64
    // row is a failed point; row 106 names config 99, which the dump lacks.
    assert_eq!(
        (r.runs_ingested, r.runs_reingested, r.points),
        (2, 0, 4),
        "{}",
        r.render()
    );
    assert!(
        r.skipped.is_empty() && r.unknown.is_empty(),
        "{}",
        r.render()
    );
    assert_eq!(
        r.warnings,
        [
            "benchmark_results.json row 7 (id 106): its config or workflow run is not in the \
             dump; skipped",
            "2 row(s) of earlier attempts of a workflow run not imported (only each run's \
             latest attempt counts, as on InferenceX)",
        ]
    );
    let all = |s: &mut Store| {
        let f = Filter {
            include_failed: true,
            ..Default::default()
        };
        s.points(&f, &CostOptions::default()).unwrap()
    };
    let rows = all(&mut s);
    let seen: Vec<(String, String, String, i64, String, Option<String>)> = rows
        .iter()
        .map(|p| {
            (
                p.batch.clone(),
                p.group(),
                p.parallelism(),
                p.conc,
                p.source_kind.clone(),
                p.error.clone(),
            )
        })
        .collect();
    let kind = "inferencex-dump".to_string();
    assert_eq!(
        seen,
        [
            (
                "inferencex-run-555".into(),
                "dsr1 1024/1024 h200_sglang_fp8".into(),
                "TP8".into(),
                4,
                kind.clone(),
                None
            ),
            (
                "inferencex-run-555".into(),
                "dsr1 1024/1024 h200_sglang_fp8".into(),
                "TP8".into(),
                16,
                kind.clone(),
                None
            ),
            (
                "inferencex-run-555".into(),
                "dsr1 1024/1024 h200_sglang_fp8".into(),
                "TP8".into(),
                64,
                kind.clone(),
                Some("server exited during the benchmark".into())
            ),
            (
                "inferencex-run-777".into(),
                "gptoss120b 8192/1024 b200_trt_fp4_mtp".into(),
                "DEP4".into(),
                8,
                kind.clone(),
                None
            ),
        ]
    );
    // Metrics come from the rows' `metrics` objects as they are; the date from the row.
    let c16 = &rows[1];
    assert_eq!(
        (
            c16.get("tput_per_gpu"),
            c16.get("median_intvty"),
            c16.get("p99_ttft")
        ),
        (Some(407.04), Some(52.63), Some(0.3))
    );
    assert_eq!(
        (c16.date.as_str(), c16.image.as_str()),
        ("2026-06-30", "lmsysorg/sglang:v0.5.5")
    );
    let counts: std::collections::BTreeMap<String, i64> =
        s.table_counts().unwrap().into_iter().collect();
    assert_eq!(
        (counts["runs"], counts["points"], counts["evals"]),
        (2, 4, 1)
    );

    // The same dump again: nothing new, nothing changed.
    let again = s
        .ingest_inferencex_dump(&dump(), &IngestOptions::default())
        .unwrap();
    assert_eq!((again.runs_ingested, again.runs_reingested), (2, 2));
    assert_eq!(all(&mut s), rows);
    let counts: std::collections::BTreeMap<String, i64> =
        s.table_counts().unwrap().into_iter().collect();
    assert_eq!(
        (counts["runs"], counts["points"], counts["evals"]),
        (2, 4, 1)
    );
}

#[test]
fn a_directory_that_is_not_a_dump_is_an_error_naming_the_table() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("configs.json"), "[]").unwrap();
    let db = dir.path().join("d.db").display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    let e = s
        .ingest_inferencex_dump(dir.path(), &IngestOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("workflow_runs.json: missing"), "{e}");
    std::fs::write(dir.path().join("workflow_runs.json"), "[]").unwrap();
    std::fs::write(
        dir.path().join("benchmark_results.json"),
        "[\n{\"id\": 1},\n",
    )
    .unwrap();
    let e = s
        .ingest_inferencex_dump(dir.path(), &IngestOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("benchmark_results.json:3:"), "{e}");
    assert!(e.contains("invalid JSON"), "{e}");
}
