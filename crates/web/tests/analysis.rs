//! The Compare and History endpoints on the store's fixtures (every run of
//! `crates/store/tests/fixtures`, the corrupt one skipped): exact JSON, equal to what
//! `inferbench compare` and `report --history-at` compute, and 400s naming the bad parameter.

mod common;

use std::path::Path;

use inferbench_views::ingest::IngestText;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use inferbench_store::{IngestOptions, Store};
use inferbench_web::{router, AppState};
use serde_json::{json, Value};
use tower::ServiceExt;

fn seeded() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db").display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures");
    let r = s.ingest_path(&fx, &IngestOptions::default()).unwrap();
    assert_eq!(r.runs_ingested, 7, "{}", r.render());
    (dir, db)
}

async fn get_json(db: &str, uri: &str) -> (StatusCode, Value) {
    let app = router(AppState::new(Store::open_read_only(db).unwrap()));
    let res = app
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = res.status();
    let b = res.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&b).unwrap())
}

#[tokio::test]
async fn compare_answers_the_cli_comparison_with_both_frontiers() {
    let (_d, db) = seeded();
    let (s, v) = get_json(&db, "/api/v1/compare?a=hw%3Db200&b=hw%3Dmi355x&model=dsr1").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // Two repeats a side (the fixture's two batches), targets over the shared x range.
    assert_eq!(
        (&v["count_a"], &v["count_b"], &v["targets"]),
        (&json!(8), &json!(8), &json!([40.0, 80.0, 120.0]))
    );
    assert_eq!(
        v["rows"][1],
        json!({"at": 80.0, "mean_a": 1140.0, "n_a": 2, "mean_b": 945.0, "n_b": 2,
               "ratio_a_over_b": 1.2063492063492063, "ci95_low": 0.48956982060779936,
               "ci95_high": 2.972565600250106})
    );
    assert_eq!(
        v["frontier_a"],
        json!([[40.0, 2000.0], [80.0, 1200.0], [120.0, 400.0]])
    );
    assert_eq!(
        v["frontier_b"],
        json!([
            [40.0, 1650.0000000000002],
            [80.0, 990.0000000000001],
            [120.0, 330.0]
        ])
    );
    // The same rows as the store's comparison (what `inferbench compare --json` prints).
    let mut st = Store::open_read_only(&db).unwrap();
    let side = |hw: &str| {
        let mut f = inferbench_store::Filter::default();
        f.add("model=dsr1").unwrap();
        f.add(&format!("hw={hw}")).unwrap();
        f
    };
    let a = st.points(&side("b200"), &Default::default()).unwrap();
    let b = st.points(&side("mi355x"), &Default::default()).unwrap();
    let t = inferbench_store::compare::default_targets(&a, &b, "median_intvty", "tput_per_gpu");
    let rows = inferbench_store::compare::compare(&a, &b, "median_intvty", "tput_per_gpu", &t);
    assert_eq!(v["rows"], serde_json::to_value(&rows).unwrap());
}

#[tokio::test]
async fn history_answers_report_history_at() {
    let (_d, db) = seeded();
    let (s, mut v) = get_json(&db, "/api/v1/history?at=50&model=dsr1").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // The replay's frames: history_frames_are_the_frontiers_as_of_each_date.
    v.as_object_mut().unwrap().remove("frames").unwrap();
    // Each value names its batch (the ingested file's directory here, so it depends on the
    // checkout's place: compared by its end, then left out of the whole-body comparison).
    for g in v["groups"].as_array_mut().unwrap() {
        for (p, want) in g["points"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .zip(["fixtures/imports", "fixtures/repeats"])
        {
            let batch = p.as_object_mut().unwrap().remove("batch").unwrap();
            assert!(batch.as_str().unwrap().ends_with(want), "{batch}");
            // Beside it, the batch as tables show it, whatever the checkout's place (trial
            // 21: the page and the API gave absolute paths).
            let label = p.as_object_mut().unwrap().remove("batch_label").unwrap();
            assert_eq!(label, want);
        }
    }
    // b200 dropped 10 % from one batch to the next (a regression at the 5 % threshold);
    // mi355x rose 10 %; h200's frontier does not reach x = 50.
    assert_eq!(
        v,
        json!({"x": "median_intvty", "y": "tput_per_gpu", "at": 50.0, "window": 3,
               "threshold": 0.05, "x_range": [40.0, 120.0], "note": null,
               // 35 tok/s/user lies outside the range: the page opens in its middle.
               "include_invalid": false, "default_at": 80.0, "groups": [
            {"name": "dsr1 1024/1024 b200_sglang_fp4", "latest_regression": true,
             "total": 8, "invalid": 0, "invalid_reason": null, "x_range": [40.0, 120.0],
             "gpu_seconds": null, "gpu_seconds_unknown": 8, "points": [
                {"date": "2026-02-20", "value": 1800.0, "baseline": null, "change": null,
                 "regression": false, "time_unix": null},
                {"date": "2026-02-27", "value": 1620.0, "baseline": 1800.0,
                 "change": -0.09999999999999998, "regression": true, "time_unix": null}]},
            {"name": "dsr1 1024/1024 h200_sglang_fp8", "latest_regression": false,
             "total": 2, "invalid": 0, "invalid_reason": null, "x_range": [52.63157894736842, 105.26315789473684],
             "gpu_seconds": null, "gpu_seconds_unknown": 2, "points": []},
            {"name": "dsr1 1024/1024 mi355x_mori-sglang_fp4", "latest_regression": false,
             "total": 8, "invalid": 0, "invalid_reason": null, "x_range": [40.0, 120.0],
             "gpu_seconds": null, "gpu_seconds_unknown": 8, "points": [
                {"date": "2026-02-20", "value": 1350.0, "baseline": null, "change": null,
                 "regression": false, "time_unix": null},
                {"date": "2026-02-27", "value": 1485.0000000000002, "baseline": 1350.0,
                 "change": 0.10000000000000009, "regression": false, "time_unix": null}]}]})
    );
    // A threshold above the change: no regression.
    let (_, v) = get_json(
        &db,
        "/api/v1/history?at=50&model=dsr1&hw=b200&threshold=0.2",
    )
    .await;
    assert_eq!(v["groups"][0]["latest_regression"], json!(false), "{v}");
    // Outside every frontier: no values, and the x range where they lie (trial 19).
    let (_, v) = get_json(&db, "/api/v1/history?at=500&model=dsr1").await;
    assert_eq!(v["x_range"], json!([40.0, 120.0]), "{v}");
    assert!(
        (v["groups"].as_array().unwrap().iter()).all(|g| g["points"] == json!([])),
        "{v}"
    );
}

/// Trial 17: a side matching nothing answered 200 with `count_a: 0` and no word; the answer
/// now says why there is nothing to compare, as `inferbench compare` does.
#[tokio::test]
async fn compare_says_which_side_matches_nothing() {
    let (_d, db) = seeded();
    let (s, v) = get_json(&db, "/api/v1/compare?a=hw%3Dgb300&b=hw%3Dmi355x&model=dsr1").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!((&v["count_a"], &v["rows"]), (&json!(0), &json!([])));
    // … and which filter matches nothing, with the stored values (trial 22).
    assert_eq!(
        v["note"],
        json!(
            "no stored point matches A (hw=gb300); `hw=gb300`: no stored point has \
             hardware=gb300; did you mean b200? (stored: b200, h200, mi355x, tpu-v9, unknown)"
        )
    );
    let (_, v) = get_json(&db, "/api/v1/compare?a=hw%3Db200&b=hw%3Dmi355x&model=dsr1").await;
    assert_eq!(v["note"], Value::Null);
    // A shared filter that matches nothing is named once, for both sides.
    let (_, v) = get_json(&db, "/api/v1/compare?a=hw%3Db200&b=hw%3Dmi355x&model=dsr").await;
    let note = v["note"].as_str().unwrap();
    assert!(
        note.starts_with(
            "no stored point matches A (hw=b200) nor B (hw=mi355x); `model=dsr`: no stored \
             point has model=dsr; did you mean dsr1? (stored: "
        ) && note.matches("`model=dsr`").count() == 1,
        "{note}"
    );
    // History and TCO say it too (they said nothing).
    for api in ["history", "tco"] {
        let (s, v) = get_json(&db, &format!("/api/v1/{api}?at=50&model=dsr")).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert!(
            (v["note"].as_str().unwrap())
                .starts_with("`model=dsr`: no stored point has model=dsr; did you mean dsr1?"),
            "{v}"
        );
    }
    let (_, v) = get_json(&db, "/api/v1/tco?at=50&model=dsr1").await;
    assert_eq!(v["note"], Value::Null);
    // The other side pooling workloads is not drawn as one frontier (trial 20: 200 with a
    // mixed frontier here, while both sides matching gave the 400 below).
    let (s, v) = get_json(&db, "/api/v1/compare?a=hw%3Dgb300&b=hw%3Dunknown").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["frontier_b"], json!([]), "{v}");
    let note = v["note"].as_str().unwrap();
    assert!(
        note.starts_with("no stored point matches A (hw=gb300); `hw=gb300`: ")
            && note.contains("; side B (hw=unknown) pools points of "),
        "{note}"
    );
}

#[tokio::test]
async fn bad_parameters_are_400s_naming_them() {
    let (_d, db) = seeded();
    for (uri, says) in [
        ("/api/v1/compare?b=hw%3Dh200", "`a` is required"),
        ("/api/v1/compare?a=hw%3Dh200", "`b` is required"),
        ("/api/v1/compare?a=&b=hw%3Dh200", "`a=`: expected KEY=VALUE"),
        (
            "/api/v1/compare?a=colour%3Dred&b=hw%3Dh200",
            "`a`: filter `colour=red`: unknown key",
        ),
        (
            "/api/v1/compare?a=hw%3Db200&b=hw%3Dh200&at=fast",
            "`at=fast`: expected a number",
        ),
        (
            "/api/v1/compare?a=hw%3Db200&b=hw%3Dh200&x=nonsense",
            "`x=nonsense`: unknown metric",
        ),
        ("/api/v1/history", "`at` is required"),
        ("/api/v1/history?at=NaN", "`at=NaN`: expected a number"),
        (
            "/api/v1/history?at=50&window=0",
            "`window=0`: expected a positive whole number",
        ),
        (
            "/api/v1/history?at=50&threshold=-1",
            "`threshold=-1`: expected a number ≥ 0",
        ),
        (
            "/api/v1/history?at=50&since=yesterday",
            "`since=yesterday`: expected a calendar date",
        ),
    ] {
        let (s, v) = get_json(&db, uri).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{uri}: {v}");
        let msg = v["error"].as_str().unwrap();
        assert!(msg.starts_with(says), "{uri}: {msg}");
    }
    // A side pooling workloads is told how to name one in the API's own syntax (trial 16:
    // the CLI's `-f`).
    let (s, v) = get_json(&db, "/api/v1/compare?a=hw%3Db200&b=hw%3Dunknown").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let msg = v["error"].as_str().unwrap();
    assert!(
        msg.starts_with("side B (hw=unknown) pools points of "),
        "{msg}"
    );
    assert!(
        msg.ends_with("compare one, e.g. `&model=…&isl=…&osl=…` or `&scenario=…`"),
        "{msg}"
    );
    // A target outside both frontiers: no values there (never extrapolated), not an error.
    let (s, v) = get_json(
        &db,
        "/api/v1/compare?a=hw%3Db200&b=hw%3Dh200&model=dsr1&at=1000",
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v["rows"],
        json!([{"at": 1000.0, "mean_a": null, "n_a": 0, "mean_b": null, "n_b": 0,
                "ratio_a_over_b": null, "ci95_low": null, "ci95_high": null}])
    );
}

#[tokio::test]
async fn evals_and_the_support_matrix() {
    let (_d, db) = seeded();
    let (s, v) = get_json(&db, "/api/v1/evals?task=gsm8k&hw=h200").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // Names as `-f` takes them (trial 23: `H200` or a model alias found nothing here).
    let (_, upper) = get_json(&db, "/api/v1/evals?task=gsm8k&hw=H200").await;
    assert_eq!(upper["rows"], v["rows"]);
    assert_eq!(v["rows"][0]["model"], "gptoss120b");
    let (_, alias) = get_json(&db, "/api/v1/evals?model=openai/gpt-oss-120b&hw=h200").await;
    assert_eq!(alias["rows"], v["rows"], "{alias}");
    assert_eq!(v["tasks"], json!(["gsm8k"]));
    let rows: Vec<(String, String, i64, f64, f64)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["framework"].as_str().unwrap().to_string(),
                r["precision"].as_str().unwrap().to_string(),
                r["conc"].as_i64().unwrap(),
                r["score"].as_f64().unwrap(),
                r["score_se"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [("vllm".to_string(), "fp4".to_string(), 32, 0.91, 0.0079)]
    );
    // Issue 42: the pass mark the Evals page marks, InferenceX's for the model's prefix
    // (gptoss: 0.91), not the 0.90 default.
    assert_eq!(v["rows"][0]["threshold"], json!(0.91));
    assert_eq!(
        inferbench_web::analysis::eval_threshold("gsm8k", "dsr1"),
        Some(0.91)
    );
    assert_eq!(
        inferbench_web::analysis::eval_threshold("gsm8k", "glm5.1-fp8"),
        Some(0.93)
    );
    assert_eq!(
        inferbench_web::analysis::eval_threshold("gsm8k", "smollm2"),
        Some(0.90)
    );
    assert_eq!(
        inferbench_web::analysis::eval_threshold("mmlu", "dsr1"),
        None
    );
    // Its batch as tables show it beside the full name.
    let (batch, label) = (&v["rows"][0]["batch"], &v["rows"][0]["batch_label"]);
    assert_eq!(
        label.as_str(),
        Some(inferbench_core::text::batch_label(batch.as_str().unwrap()).as_str()),
        "{batch}"
    );
    assert!(!label.as_str().unwrap().starts_with('/'), "{label}");
    // The run page's API carries the run's evals.
    let run_id = v["rows"][0]["run_id"].as_i64().unwrap();
    let (s, r) = get_json(&db, &format!("/api/v1/runs/{run_id}")).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    let got: Vec<(&str, f64)> = r["evals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["model"].as_str().unwrap(), e["score"].as_f64().unwrap()))
        .collect();
    // Both rows of the imported agg_eval_all.json, in the Evals page's order.
    assert_eq!(got, [("dsr1", 0.9522), ("gptoss120b", 0.91)]);
    let (s, e) = get_json(&db, "/api/v1/evals?colour=red").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(e["error"]
        .as_str()
        .unwrap()
        .starts_with("`colour`: unknown parameter"));

    let (s, m) = get_json(&db, "/api/v1/models").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        m["rows"][0],
        json!({"model": "dsr1", "hardware": "b200", "framework": "sglang", "precision": "fp4",
               "points": 8, "runs": 2, "batches": 2, "sequences": 1, "latest": "2026-02-27",
               "public_points": 0})
    );
    assert_eq!(m["rows"].as_array().unwrap().len(), 6, "{m}");
}

#[tokio::test]
async fn tco_reads_every_group_at_one_x_best_first() {
    let (_d, db) = seeded();
    let (s, v) = get_json(&db, "/api/v1/tco?model=dsr1&isl=1024&osl=1024&at=60").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v,
        json!({"x": "median_intvty", "y": "tput_per_gpu", "at": 60.0, "better": "higher",
               "bars": [
                 {"group": "dsr1 1024/1024 b200_sglang_fp4", "public": false, "value": 1520.0, "batches": 2,
                  "gpu_seconds": null},
                 {"group": "dsr1 1024/1024 mi355x_mori-sglang_fp4", "public": false, "value": 1260.0, "batches": 2,
                  "gpu_seconds": null},
                 {"group": "dsr1 1024/1024 h200_sglang_fp8", "public": false, "value": 364.3904, "batches": 1,
                  "gpu_seconds": null}],
               "unreached": [], "invalid_only": [], "invalid": 0, "invalid_reason": null,
               "groups": [
                 {"name": "dsr1 1024/1024 b200_sglang_fp4", "gpu_seconds": null, "gpu_seconds_unknown": 8},
                 {"name": "dsr1 1024/1024 h200_sglang_fp8", "gpu_seconds": null, "gpu_seconds_unknown": 2},
                 {"name": "dsr1 1024/1024 mi355x_mori-sglang_fp4", "gpu_seconds": null, "gpu_seconds_unknown": 8}],
               "note": null, "include_invalid": false,
               "x_range": [40.0, 120.0], "default_at": 80.0})
    );
    // Lower-is-better y (cost at your own price) sorts cheapest first; x out of reach: listed.
    let (_, c) = get_json(
        &db,
        "/api/v1/tco?model=dsr1&isl=1024&osl=1024&at=200&y=usd_per_m_custom&gpu_hour_cost=2",
    )
    .await;
    assert_eq!(
        (c["better"].as_str(), c["bars"].as_array().map(Vec::len)),
        (Some("lower"), Some(0))
    );
    assert_eq!(c["unreached"].as_array().unwrap().len(), 3, "{c}");
    let (_, c) = get_json(
        &db,
        "/api/v1/tco?model=dsr1&isl=1024&osl=1024&at=60&y=usd_per_m_custom&gpu_hour_cost=2",
    )
    .await;
    let first = c["bars"][0]["value"].as_f64().unwrap();
    let last = c["bars"][2]["value"].as_f64().unwrap();
    assert!(first < last, "{c}");
    let (s, e) = get_json(&db, "/api/v1/tco?model=dsr1").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(e["error"].as_str().unwrap().starts_with("`at` is required"));
}

/// InferenceX's "one run per line": `latest_only` keeps each configuration's newest batch.
#[tokio::test]
async fn latest_only_keeps_each_configurations_newest_run() {
    let (_d, db) = seeded();
    let get = |q: &'static str| {
        let db = db.clone();
        async move { get_json(&db, q).await.1 }
    };
    let all = get("/api/v1/points?model=dsr1&hw=b200").await;
    let latest = get("/api/v1/points?model=dsr1&hw=b200&latest_only=true").await;
    assert_eq!(
        (all["count"].as_i64(), latest["count"].as_i64()),
        (Some(8), Some(4))
    );
    let dates: Vec<&str> = latest["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["date"].as_str().unwrap())
        .collect();
    assert_eq!(dates, ["2026-02-27"; 4]);
}

/// The sweep-h200 fixture as it is, and a copy run on h100 whose points are all invalid (the
/// producer's `inferbench.invalid_reason`); returns the database's location.
fn with_invalid_h100(dir: &Path) -> String {
    let (fx, bad) = common::sweep_and_invalid_h100_copy(dir);
    let db = dir.join("inv.db").display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    for d in [&fx, &bad] {
        let r = s.ingest_path(d, &IngestOptions::default()).unwrap();
        assert_eq!(r.points, 2, "{}", r.render());
    }
    db
}

/// Trial 24: `inferbench compare hw=h100 hw=h100` found no valid point (its points invalid)
/// while `/api/v1/compare` compared them. The API leaves invalid points out as the CLI does,
/// says so when that leaves a side empty, and counts them with `include_invalid=true`.
#[tokio::test]
async fn compare_leaves_invalid_points_out_as_the_cli_does() {
    let dir = tempfile::tempdir().unwrap();
    let db = with_invalid_h100(dir.path());
    let (s, v) = get_json(&db, "/api/v1/compare?a=hw%3Dh100&b=hw%3Dh100").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (&v["count_a"], &v["invalid_a"], &v["rows"], &v["batches_a"]),
        (&json!(0), &json!(2), &json!([]), &json!([])),
        "{v}"
    );
    assert_eq!(
        v["note"],
        json!(
            "no valid point to compare for A (hw=h100: its 2 matching point(s) are invalid; \
             include_invalid=true, the page's \"include invalid\", counts them) nor B (hw=h100: its 2 matching point(s) are \
             invalid; include_invalid=true, the page's \"include invalid\", counts them)"
        )
    );
    // One side invalid, the other valid: only the invalid one is named.
    let (_, v) = get_json(&db, "/api/v1/compare?a=hw%3Dh100&b=hw%3Dh200").await;
    assert_eq!((&v["count_a"], &v["count_b"]), (&json!(0), &json!(2)));
    assert_eq!(
        v["note"],
        json!(
            "no valid point to compare for A (hw=h100: its 2 matching point(s) are invalid; \
             include_invalid=true, the page's \"include invalid\", counts them)"
        )
    );
    // Asked for, they count: the same targets as two valid copies would give.
    let (_, v) = get_json(
        &db,
        "/api/v1/compare?a=hw%3Dh100&b=hw%3Dh200&include_invalid=true",
    )
    .await;
    assert_eq!(
        (&v["count_a"], &v["invalid_a"], &v["note"]),
        (&json!(2), &json!(0), &Value::Null),
        "{v}"
    );
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(3), "{v}");
    assert_eq!(v["rows"][0]["ratio_a_over_b"], json!(1.0), "{v}");
}

/// Issue 39: `at=auto` reads History and TCO at their default x: 35 tok/s/user where the valid
/// points' frontiers reach it, else the middle of their range (40 … 120 here: 80); `null`
/// without any frontier.
#[tokio::test]
async fn at_auto_reads_at_the_default_x() {
    let (_d, db) = seeded();
    for route in ["history", "tco"] {
        let (s, v) = get_json(&db, &format!("/api/v1/{route}?at=auto&model=dsr1")).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(
            (&v["at"], &v["default_at"], &v["x_range"]),
            (&json!(80.0), &json!(80.0), &json!([40.0, 120.0])),
            "{route}"
        );
        let (s, v) = get_json(&db, &format!("/api/v1/{route}?at=auto&model=nope")).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!((&v["at"], &v["x_range"]), (&json!(null), &json!(null)));
    }
    let (_, v) = get_json(&db, "/api/v1/tco?at=auto&model=dsr1").await;
    assert_eq!(v["bars"][0]["value"], json!(1140.0), "{v}");
}

/// `/api/v1/tco?slo=…` carries `report --capacity`'s numbers as a field (issue 43): per group
/// the most y and users per GPU at the SLO, read off the frontier, or why not.
#[tokio::test]
async fn tco_with_an_slo_answers_capacity_per_group() {
    let (_d, db) = seeded();
    let (s, v) = get_json(
        &db,
        "/api/v1/tco?model=dsr1&isl=1024&osl=1024&at=60&slo=median_intvty%3E%3D60",
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let caps = v["capacity"].as_array().unwrap();
    assert_eq!(caps.len(), 3, "{v}");
    // At the SLO's bound the capacity is the TCO bar at the same x, group by group.
    for bar in v["bars"].as_array().unwrap() {
        let c = caps.iter().find(|c| c["group"] == bar["group"]).unwrap();
        assert_eq!(c["status"], "interpolated", "{c}");
        assert_eq!(c["value"], bar["value"], "{c}");
        assert_eq!(c["slo"], "median_intvty>=60");
    }
    // Beyond every measured point: said, not extrapolated.
    let (_, v) = get_json(
        &db,
        "/api/v1/tco?model=dsr1&isl=1024&osl=1024&at=60&slo=median_intvty%3E%3D1000",
    )
    .await;
    assert!(
        v["capacity"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["status"] == "none_meet" && c["value"].is_null()),
        "{v}"
    );
    // Without `slo` the answer has no capacity field; a bad one is a 400.
    let (_, v) = get_json(&db, "/api/v1/tco?model=dsr1&at=60").await;
    assert!(v.get("capacity").is_none());
    let (s, e) = get_json(
        &db,
        "/api/v1/tco?model=dsr1&at=60&slo=median_intvity%3E%3D1",
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        e["error"].as_str().unwrap().contains("unknown metric"),
        "{e}"
    );
    let (s, _) = get_json(
        &db,
        "/api/v1/tco?model=dsr1&at=60&x=p99_ttft&slo=median_intvty%3E%3D1",
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}

/// Trial of issue 39 §5 (B): side A's two batches came from servers with different settings
/// (`--set max_num_seqs=…` at ingest) and were averaged as repeats. The API refuses it with
/// the note `inferbench compare` gives (one analysis), naming the differing setting.
#[tokio::test]
async fn compare_refuses_a_side_whose_batches_come_from_different_servers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db").display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures");
    for (d, seqs) in [("imports", "8"), ("repeats", "256")] {
        let opts = IngestOptions::from_set(&[format!("max_num_seqs={seqs}")]).unwrap();
        s.ingest_path(&fx.join(d), &opts).unwrap();
    }
    drop(s);
    let (s, v) = get_json(&db, "/api/v1/compare?a=hw%3Db200&b=hw%3Dmi355x&model=dsr1").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{v}");
    let msg = v["error"].as_str().unwrap();
    assert!(
        msg.starts_with(
            "side A (hw=b200) pools batches from 2 servers with different settings, which are \
             not repeats of one configuration: max_num_seqs="
        ),
        "{msg}"
    );
    assert!(
        msg.contains("max_num_seqs=8 (batch fixtures/imports)"),
        "{msg}"
    );
    assert!(
        msg.contains("max_num_seqs=256 (batch fixtures/repeats)"),
        "{msg}"
    );
    // One server's batch a side: compared.
    let (s, v) = get_json(
        &db,
        "/api/v1/compare?a=hw%3Db200%2Cbatch%3Drepeats&b=hw%3Dmi355x%2Cbatch%3Drepeats&model=dsr1",
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
}

/// Trial of issue 39 §5 (D): History and TCO left invalid points out without saying why. The
/// answers carry the stored reason beside the counts the pages name.
#[tokio::test]
async fn history_and_tco_say_why_they_left_points_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = with_invalid_h100(dir.path());
    let (_, h) = get_json(&db, "/api/v1/history?at=100&model=dsr1").await;
    let of = |g: &str| {
        h["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == g)
            .cloned()
    };
    let bad = of("dsr1 1024/1024 h100_sglang_fp8").unwrap();
    assert_eq!(
        (&bad["invalid"], &bad["invalid_reason"]),
        (&json!(2), &json!("the server fell behind"))
    );
    let good = of("dsr1 1024/1024 h200_sglang_fp8").unwrap();
    assert_eq!(
        (&good["invalid"], &good["invalid_reason"]),
        (&json!(0), &json!(null))
    );
    let (_, t) = get_json(&db, "/api/v1/tco?at=100&model=dsr1").await;
    assert_eq!(
        (&t["invalid"], &t["invalid_reason"], &t["invalid_only"]),
        (
            &json!(2),
            &json!("the server fell behind"),
            &json!(["dsr1 1024/1024 h100_sglang_fp8"])
        )
    );
    let (_, t) = get_json(&db, "/api/v1/tco?at=100&model=dsr1&include_invalid=true").await;
    assert_eq!(
        (&t["invalid"], &t["invalid_reason"]),
        (&json!(0), &json!(null))
    );
}

/// Issue 42's replay over time: `/api/v1/history`'s `frames` are one per date of the counted
/// points, each group's frontier from its points dated up to then, exactly what
/// `views::analysis::replay_frames` gives for the same selection.
#[tokio::test]
async fn history_frames_are_the_frontiers_as_of_each_date() {
    let (_d, db) = seeded();
    let (s, v) = get_json(&db, "/api/v1/history?at=50&model=dsr1").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let mut st = Store::open_read_only(&db).unwrap();
    let mut f = inferbench_store::Filter::default();
    f.add("model=dsr1").unwrap();
    let rows = st.points(&f, &Default::default()).unwrap();
    let want =
        inferbench_views::analysis::replay_frames(&rows, "median_intvty", "tput_per_gpu", false);
    let frames = v["frames"].as_array().unwrap();
    assert_eq!(frames.len(), want.len());
    let dates: Vec<&str> = frames.iter().map(|f| f["date"].as_str().unwrap()).collect();
    let want_dates: Vec<&str> = want.iter().map(|f| f.date.as_str()).collect();
    assert_eq!(dates, want_dates);
    for (got, w) in frames.iter().zip(&want) {
        let groups: Vec<Value> = (w.groups.iter())
            .map(|(n, k)| json!({"name": n, "frontier": k.iter().map(|&(a, b)| [a, b]).collect::<Vec<_>>()}))
            .collect();
        assert_eq!(got, &json!({"date": w.date, "groups": groups}));
    }
    // Exact: three dates; mi355x's first frontier, raised by its 2026-02-27 batch; h200
    // appears with its 2026-03-01 sweep.
    assert_eq!(dates, ["2026-02-20", "2026-02-27", "2026-03-01"]);
    assert_eq!(
        frames[0]["groups"][1],
        json!({"name": "dsr1 1024/1024 mi355x_mori-sglang_fp4",
               "frontier": [[40.0, 1500.0], [80.0, 900.0], [120.0, 300.0]]})
    );
    assert_eq!(
        frames[1]["groups"][1]["frontier"],
        json!([
            [40.0, 1650.0000000000002],
            [80.0, 990.0000000000001],
            [120.0, 330.0]
        ])
    );
    let names: Vec<&str> = (frames[2]["groups"].as_array().unwrap().iter())
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "dsr1 1024/1024 b200_sglang_fp4",
            "dsr1 1024/1024 h200_sglang_fp8",
            "dsr1 1024/1024 mi355x_mori-sglang_fp4"
        ]
    );
}
