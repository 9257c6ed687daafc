//! GPU-seconds per point in the store (issue 43): the runner's `status.gpu_seconds` in
//! `job.json` is ingested into `points.gpu_seconds` (schema version 6); a database made
//! before it migrates with its points' figures unknown (NULL), and imports have none.

mod common;

use std::path::Path;

use inferbench_store::{Filter, IngestOptions, Store};
use serde_json::json;

/// `(conc, gpu_seconds)` of every stored point, in store order.
fn gpu_seconds(store: &mut Store) -> Vec<(i64, Option<f64>)> {
    store
        .points(&Filter::default(), &Default::default())
        .unwrap()
        .iter()
        .map(|r| (r.conc, r.gpu_seconds))
        .collect()
}

/// Gives the fixture sweep's conc-4 point a `status` with `gpu_seconds` in its `job.json`, as
/// the runner writes it once the point's engine stopped.
fn stamp(root: &Path, gpu_seconds: f64) {
    let path = root.join("sweep-h200/conc4/job.json");
    let mut job: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    job["status"] = json!({
        "schema_version": 1,
        "index": 0,
        "conc": 4,
        "result_filename": "rf",
        "state": "ok",
        "started_at": "2026-03-01T09:56:30.000Z",
        "finished_at": "2026-03-01T09:58:25.000Z",
        "gpu_seconds": gpu_seconds,
    });
    std::fs::write(&path, serde_json::to_vec(&job).unwrap()).unwrap();
}

/// A database written by the previous build (schema version 5: `inferbench ingest
/// tests/fixtures/sweep-h200`) migrates to 6 (and 7, eval samples); its points' GPU-seconds are unknown, not 0;
/// a re-ingest of the same sweep whose conc-4 point now says its GPU-seconds updates that
/// point in place and leaves the other unknown. The conc-16 point is stored again beside its
/// old row: its summary's counts were made to match its 5 sample records after the v5 file
/// was written (issue 39, files, ingest and hints, 3: `completed` 159 → 4), so it is another
/// result file.
#[test]
fn a_version_5_database_migrates_and_its_points_have_no_gpu_seconds() {
    let (mut store, _dir, _) = common::migrated_old("v5-sweep-h200.db", 5, &[6, 7, 8]);
    assert_eq!(gpu_seconds(&mut store), [(4, None), (16, None)]);

    let copy = common::fixture_copy();
    stamp(copy.path(), 1843.25);
    let rep = store
        .ingest_path(&copy.path().join("sweep-h200"), &IngestOptions::default())
        .unwrap();
    assert_eq!(rep.points, 2);
    assert_eq!(
        gpu_seconds(&mut store),
        [(4, Some(1843.25)), (16, None), (16, None)]
    );
}

/// A fresh database: our point's figure is stored as written; an imported vLLM result and an
/// InferenceX aggregate (no runner of ours) have none; a negative figure is no measurement.
#[test]
fn ingest_keeps_the_runners_gpu_seconds_and_imports_have_none() {
    let (mut store, _dir, _) = common::sqlite();
    let copy = common::fixture_copy();
    stamp(copy.path(), 96.5);
    store
        .ingest_path(&copy.path().join("sweep-h200"), &IngestOptions::default())
        .unwrap();
    assert_eq!(gpu_seconds(&mut store), [(4, Some(96.5)), (16, None)]);
    for f in ["vllm_gptoss_conc64.json", "agg_bmk.json"] {
        store
            .ingest_path(
                &copy.path().join("imports").join(f),
                &IngestOptions::default(),
            )
            .unwrap();
    }
    let rows = store
        .points(&Filter::default(), &Default::default())
        .unwrap();
    assert_eq!(rows.len(), 12);
    let known: Vec<(&str, i64, f64)> = (rows.iter())
        .filter_map(|r| Some((r.source_kind.as_str(), r.conc, r.gpu_seconds?)))
        .collect();
    assert_eq!(known, [("inferbench", 4, 96.5)]);
    stamp(copy.path(), -3.0);
    store
        .ingest_path(&copy.path().join("sweep-h200"), &IngestOptions::default())
        .unwrap();
    let rows = store
        .points(&Filter::default(), &Default::default())
        .unwrap();
    assert!(rows.iter().all(|r| r.gpu_seconds.is_none()), "{rows:?}");
}
