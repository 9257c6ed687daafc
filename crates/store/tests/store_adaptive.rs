//! An adaptive point's early stop in the store (issue 43): our summary's `inferbench.adaptive`
//! and `inferbench.prompts_used` are ingested into `points.adaptive` / `points.prompts_used`
//! (schema version 8); a database made before it migrates with every point fixed-protocol
//! (adaptive 0, prompts unknown), and imports are never adaptive.

mod common;

use std::path::Path;

use inferbench_store::{Filter, IngestOptions, Store};

/// `(conc, adaptive, prompts_used)` of every stored point, in store order.
fn early_stop(store: &mut Store) -> Vec<(i64, bool, Option<i64>)> {
    store
        .points(&Filter::default(), &Default::default())
        .unwrap()
        .iter()
        .map(|r| (r.conc, r.adaptive, r.prompts_used))
        .collect()
}

/// Marks the fixture sweep's conc-4 point as `sweep --adaptive` writes it: the rule at
/// `tolerance`, `used` profile prompts sent (`num_prompts` equals it when it stopped early).
fn mark_adaptive(root: &Path, used: u64) {
    let path = root.join("sweep-h200/conc4/summary.json");
    let mut s: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    s["inferbench"]["adaptive"] = true.into();
    s["inferbench"]["adaptive_tolerance"] = 0.02.into();
    s["inferbench"]["prompts_used"] = used.into();
    std::fs::write(&path, serde_json::to_vec(&s).unwrap()).unwrap();
}

/// A database written by the previous build (schema version 7: `inferbench ingest
/// tests/fixtures/sweep-h200` on e5945e9) opens and migrates to 8 with its points
/// fixed-protocol; the same sweep with its conc-4 point run adaptive (another summary, so
/// another run) is stored beside it as adaptive. The conc-16 point is stored again too: its
/// summary's counts were made to match its 5 sample records after the v7 file was written
/// (issue 39, files, ingest and hints, 3: `completed` 159 → 4), so it is another result file.
#[test]
fn a_version_7_database_migrates_and_its_points_are_not_adaptive() {
    let (mut store, _dir, _) = common::migrated_old("v7-sweep-h200.db", 7, &[8]);
    assert_eq!(
        early_stop(&mut store),
        [(4, false, None), (16, false, None)]
    );

    let copy = common::fixture_copy();
    mark_adaptive(copy.path(), 33);
    let rep = store
        .ingest_path(&copy.path().join("sweep-h200"), &IngestOptions::default())
        .unwrap();
    assert_eq!(rep.points, 2);
    assert_eq!(
        early_stop(&mut store),
        [
            (4, false, None),
            (4, true, Some(33)),
            (16, false, None),
            (16, false, None)
        ]
    );
}

/// A fresh database: the adaptive point keeps its flag and count, the fixed-protocol one and
/// the imports (a vLLM result, an InferenceX aggregate) have neither; the API's point JSON
/// (`PointRow`'s serialization) names them only for the adaptive point.
#[test]
fn ingest_keeps_an_adaptive_points_prompts_used() {
    let (mut store, _dir, _) = common::sqlite();
    let copy = common::fixture_copy();
    mark_adaptive(copy.path(), 12);
    store
        .ingest_path(&copy.path().join("sweep-h200"), &IngestOptions::default())
        .unwrap();
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
    let adaptive: Vec<(i64, Option<i64>)> = (rows.iter())
        .filter(|r| r.adaptive)
        .map(|r| (r.conc, r.prompts_used))
        .collect();
    assert_eq!(adaptive, [(4, Some(12))]);
    assert!(rows.iter().all(|r| r.adaptive || r.prompts_used.is_none()));
    let json = |conc: i64| {
        let r = rows
            .iter()
            .find(|r| r.conc == conc && r.source_kind == "inferbench");
        serde_json::to_value(r.unwrap()).unwrap()
    };
    assert_eq!(
        (&json(4)["adaptive"], &json(4)["prompts_used"]),
        (&serde_json::json!(true), &serde_json::json!(12))
    );
    assert!(json(16).get("adaptive").is_none() && json(16).get("prompts_used").is_none());
}
