//! The dashboard's API on a seeded database (the store's sweep-h200 fixture plus its imports),
//! request by request through the router: exact JSON, 400s naming the bad parameter, 404s, the
//! security headers, and a store that refuses writes.

#[allow(dead_code)]
mod common;

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use inferbench_store::{IngestOptions, Store};
use inferbench_views::ingest::IngestText;
use inferbench_web::{router, AppState};
use serde_json::{json, Value};
use tower::ServiceExt;

use common::utf8_percent;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures/sweep-h200")
}

/// A migrated SQLite database holding the sweep-h200 fixture (two points of one config: conc 4
/// and 16; its conc-64 point failed unfinished and is not stored), in a temporary directory.
fn seeded() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("web.db").display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    let r = s
        .ingest_path(&fixtures(), &IngestOptions::default())
        .unwrap();
    assert_eq!(r.points, 2, "{r:?}");
    (dir, db)
}

async fn get(db: &str, uri: &str) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let app = router(AppState::new(Store::open_read_only(db).unwrap()));
    let res = app
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = res.status();
    let headers = res.headers().clone();
    let body = res.into_body().collect().await.unwrap().to_bytes().to_vec();
    (status, headers, body)
}

async fn get_json(db: &str, uri: &str) -> (StatusCode, Value) {
    let (s, _, b) = get(db, uri).await;
    let v: Value = serde_json::from_slice(&b)
        .unwrap_or_else(|e| panic!("{uri}: not JSON ({e}): {}", String::from_utf8_lossy(&b)));
    (s, v)
}

#[tokio::test]
async fn options_list_dimensions_sequences_and_metrics() {
    let (_d, db) = seeded();
    let (s, v) = get_json(&db, "/api/v1/options").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v["dimensions"],
        json!({
            "batch": ["sweep-2026-03-01-h200"],
            "disagg": ["false"],
            "framework": ["sglang"],
            "hardware": ["h200"],
            "isl": ["1024"],
            "model": ["dsr1"],
            "osl": ["1024"],
            "precision": ["fp8"],
            "scenario": ["fixed_seq_len"],
            "spec_decoding": ["none"],
        })
    );
    assert_eq!(v["sequences"], json!(["1024/1024"]));
    assert_eq!(
        v["x_metrics"][0],
        json!({"key": "median_intvty", "label": "Interactivity, median", "unit": "tok/s/user",
               "label_with_unit": "Interactivity, median (tok/s/user)", "better": "higher"})
    );
    assert_eq!(
        v["y_metrics"][5],
        json!({"key": "usd_per_m_rental", "label": "Cost per million total (input + output) tokens, rental",
               "unit": "$/M tokens", "label_with_unit": "Cost per million total (input + output) tokens, rental ($/M tokens)",
               "better": "lower"})
    );
    assert_eq!(
        v["defaults"],
        json!({"x": "median_intvty", "x_agentic": "p90_e2e_norm_intvty", "x_input": "p99_ttft",
               "y": "tput_per_gpu", "sequence": "1024/1024"})
    );
}

#[tokio::test]
async fn points_give_rows_axes_and_frontier_knots() {
    let (_d, db) = seeded();
    let (s, v) = get_json(&db, "/api/v1/points?model=dsr1&isl=1024&osl=1024&hw=h200").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["x"]["key"], "median_intvty");
    assert_eq!(v["y"]["key"], "tput_per_gpu");
    assert_eq!(v["count"], 2);
    let p: Vec<(i64, f64, f64, bool, String)> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["conc"].as_i64().unwrap(),
                p["x"].as_f64().unwrap(),
                p["y"].as_f64().unwrap(),
                p["frontier"].as_bool().unwrap(),
                p["parallelism"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(p.len(), 2);
    assert_eq!((p[0].0, p[1].0), (4, 16));
    assert_eq!(v["points"][0]["group"], "dsr1 1024/1024 h200_sglang_fp8");
    assert_eq!(v["points"][0]["model"], "dsr1");
    assert_eq!(v["points"][0]["valid"], true);
    assert_eq!(p[0].4, "TP8");
    // y = tok/s/GPU as the report table shows it (102.4 and 407.0).
    assert_eq!(
        (
            (p[0].2 * 10.0).round() / 10.0,
            (p[1].2 * 10.0).round() / 10.0
        ),
        (102.4, 407.0)
    );
    // The group's knots are its frontier points sorted by x.
    let mut knots: Vec<(f64, f64)> = p.iter().filter(|r| r.3).map(|r| (r.1, r.2)).collect();
    knots.sort_by(|a, b| a.0.total_cmp(&b.0));
    let want: Vec<Value> = knots.iter().map(|&(a, b)| json!([a, b])).collect();
    assert_eq!(
        v["groups"],
        json!([{"name": "dsr1 1024/1024 h200_sglang_fp8", "public": false, "frontier": want,
                "preview_frontier": []}])
    );
    // Metrics only when asked for.
    assert!(v["points"][0].get("metrics").is_none());
    let (_, m) = get_json(&db, "/api/v1/points?hw=h200&metrics=all").await;
    assert_eq!(
        m["points"][0]["metrics"]["tput_per_gpu"],
        v["points"][0]["y"]
    );
    // Nothing matched: the filter that matches nothing is named, with the closest stored
    // value (trial 20: `count 0` and no word); a match carries no note.
    let (_, none) = get_json(&db, "/api/v1/points?hw=h2000").await;
    assert_eq!(none["count"], 0, "{none}");
    let note = none["note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with("`hw=h2000`: no stored point has hardware=h2000; did you mean h200?"),
        "{none}"
    );
    assert!(v.get("note").is_none(), "{v}");
    let (s, e) = get_json(&db, "/api/v1/points?metrics=some").await;
    assert_eq!(
        (s, e["error"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("`metrics=some`: expected all or none")
        )
    );
    // frontier_only keeps the frontier rows.
    let (_, f) = get_json(&db, "/api/v1/points?hw=h200&frontier_only=true").await;
    assert_eq!(f["count"], p.iter().filter(|r| r.3).count());
    // Repeated keys OR together, as `a|b` does; a filter that matches nothing is an empty
    // answer, not an error.
    let (_, two) = get_json(&db, "/api/v1/points?hardware=h200&hardware=b200").await;
    assert_eq!(two["count"], 2);
    let (s, none) = get_json(&db, "/api/v1/points?hardware=mi355x").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        (none["count"].clone(), none["groups"].clone()),
        (json!(0), json!([]))
    );
}

#[tokio::test]
async fn bad_parameters_are_400_with_a_message() {
    let (_d, db) = seeded();
    for (uri, msg) in [
        (
            "/api/v1/points?colour=red",
            "filter `colour=red`: unknown key `colour`",
        ),
        (
            "/api/v1/points?tp=eight",
            "filter `tp=eight`: `eight` is not an integer",
        ),
        (
            "/api/v1/points?include_invalid=maybe",
            "`include_invalid=maybe`: expected true or false",
        ),
        (
            "/api/v1/points?since=yesterday",
            "`since=yesterday`: expected a calendar date YYYY-MM-DD",
        ),
        // Shaped like dates, but not days of the calendar (trial 6).
        (
            "/api/v1/points?since=2026-02-30",
            "`since=2026-02-30`: expected a calendar date YYYY-MM-DD",
        ),
        (
            "/api/v1/points?until=2026-13-45",
            "`until=2026-13-45`: expected a calendar date YYYY-MM-DD",
        ),
        (
            "/api/v1/points?gpu_kw=-1",
            "`gpu_kw=-1`: expected a positive number",
        ),
        ("/api/v1/points?y=bogus", "`y=bogus`: unknown metric"),
        // A custom cost without its price would be nulls (trial 7).
        (
            "/api/v1/points?y=usd_per_m_custom",
            "`usd_per_m_custom*` needs `gpu_hour_cost`",
        ),
        // One value only: a second `x` is a mistake, not "the last one wins" (trial 6).
        (
            "/api/v1/points?x=median_intvty&x=median_ttft",
            "`x`: given more than once",
        ),
        ("/api/v1/points?model=", "`model=`: empty value"),
        (
            "/api/v1/points.csv?x=%3Cscript%3E",
            "`x=<script>`: unknown metric",
        ),
    ] {
        let (s, v) = get_json(&db, uri).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{uri}: {v}");
        let e = v["error"].as_str().unwrap();
        assert!(e.starts_with(msg), "{uri}: {e}");
    }
    // Anything but GET: 405 with a JSON reason (it had an empty body).
    let app = router(AppState::new(Store::open_read_only(&db).unwrap()));
    let res = app
        .oneshot(Request::post("/api/v1/points").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::METHOD_NOT_ALLOWED);
    let body = res.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        json!({"error": "only GET is served: the dashboard and its API are read-only"})
    );
    let (s, v) = get_json(&db, "/api/v2/points").await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(
        v,
        json!({"error": "no such page or API route (the API is under /api/v1/)"})
    );
    for uri in [
        "/assets/../Cargo.toml",
        "/assets/%2e%2e%2fCargo.toml",
        "/assets/nope.js",
    ] {
        let (s, _, _) = get(&db, uri).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{uri}");
    }
}

#[tokio::test]
async fn pages_are_static_with_a_strict_content_security_policy() {
    let (_d, db) = seeded();
    let (s, h, body) = get(&db, "/inference").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h["content-type"], "text/html; charset=utf-8");
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(
        csp.starts_with("default-src 'none'; script-src 'self';"),
        "{csp}"
    );
    assert_eq!(h["x-content-type-options"], "nosniff");
    let html = String::from_utf8(body).unwrap();
    assert!(html.contains("<script src=\"/assets/app.js\" defer></script>"));
    assert!(!html.contains("<script>"), "no inline script");
    // `/` is the landing page (issue 42), no longer a redirect.
    let (s, _, home) = get(&db, "/").await;
    assert_eq!(s, StatusCode::OK);
    assert!(String::from_utf8(home)
        .unwrap()
        .contains("<script src=\"/assets/home.js\" defer></script>"));
    // The page script sets database strings as text only.
    // The API page (issue 40): static, its one script.
    let (s, _, api) = get(&db, "/openapi").await;
    assert_eq!(s, StatusCode::OK);
    assert!(String::from_utf8(api)
        .unwrap()
        .contains("<script src=\"/assets/openapi.js\" defer></script>"));
    for script in ["app.js", "run.js", "common.js", "home.js", "openapi.js"] {
        let (s, h, js) = get(&db, &format!("/assets/{script}")).await;
        assert_eq!(s, StatusCode::OK, "{script}");
        assert_eq!(h["content-type"], "text/javascript; charset=utf-8");
        let js = String::from_utf8(js).unwrap();
        for sink in [
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
        ] {
            assert!(!js.contains(sink), "{script} uses {sink}");
        }
    }
    let (s, _, lib) = get(&db, "/assets/uPlot.iife.min.js").await;
    assert_eq!(s, StatusCode::OK);
    assert!(lib.starts_with(b"/*! https://github.com/leeoniya/uPlot (v1.6.32) */"));
}

/// Issue 40's metric: a summary's achieved OSL (`inferbench.achieved_osl`, tokens) is served
/// with a point's metrics (`/api/v1/runs/{id}`) under the registry's names, for our typed
/// summary (conc 4) and one read by name (conc 16) alike, as a chart's y, and in the CSV
/// export.
#[tokio::test]
async fn achieved_osl_is_served_with_a_points_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("osl");
    common::copy_tree_replacing(
        &fixtures(),
        &copy,
        &[(
            "\"inferbench\": {",
            "\"inferbench\": {\"achieved_osl\": {\"count\": 2, \"mean\": 900.0, \
             \"median\": 900.0, \"std\": 100.0, \"min\": 800.0, \"max\": 1000.0, \
             \"p90\": 980.0},",
        )],
    );
    let db = dir.path().join("osl.db").display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    let r = s.ingest_path(&copy, &IngestOptions::default()).unwrap();
    assert_eq!(r.points, 2, "{r:?}");
    drop(s);
    // A point's every stored metric: the run's answer, and `/api/v1/points?metrics=all`'s
    // (every stored and derived metric, not the hot columns only).
    let (_, all) = get_json(&db, "/api/v1/points?metrics=all").await;
    for conc in [4, 16] {
        let (_, run) = ids_of(&db, conc).await;
        let (st, v) = get_json(&db, &format!("/api/v1/runs/{run}")).await;
        assert_eq!(st, StatusCode::OK, "{v}");
        let p = (all["points"].as_array().unwrap().iter())
            .find(|p| p["conc"] == conc)
            .unwrap();
        for m in [&v["points"][0]["metrics"], &p["metrics"]] {
            assert_eq!(m["mean_achieved_osl"], 900.0, "conc {conc}: {m}");
            assert_eq!(m["p90_achieved_osl"], 980.0, "conc {conc}: {m}");
            assert_eq!(m["std_achieved_osl"], 100.0, "conc {conc}: {m}");
            assert_eq!(m["inferbench.achieved_osl.max"], 1000.0, "conc {conc}: {m}");
            assert!(m.get("max_achieved_osl").is_none(), "conc {conc}: {m}");
        }
    }
    // No better side: the options' metric says so (`null`), a chart's frontier takes higher.
    let (_, v) = get_json(&db, "/api/v1/points?y=p90_achieved_osl").await;
    assert_eq!(v["y"]["better"], Value::Null, "{v}");
    assert_eq!(v["y"]["unit"], "tokens", "{v}");
    // As a chart's y, with its label and unit in the options' terms.
    let (st, v) = get_json(&db, "/api/v1/points?y=p90_achieved_osl").await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let ys: Vec<&Value> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["y"])
        .collect();
    assert_eq!(ys, [&json!(980.0), &json!(980.0)], "{v}");
    let (_, _, csv) = get(&db, "/api/v1/points.csv?columns=all").await;
    let csv = String::from_utf8(csv).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    for c in ["mean_achieved_osl", "p90_achieved_osl"] {
        assert!(header.contains(&c), "{c}: {header:?}");
    }
}

/// The CSV export is `report --format csv`'s: its default columns by default (fresh tester of
/// issue 39 §5, item 4: ~240 more metric columns than `report` printed); `columns=all` adds
/// every other stored and derived metric by name (issue 42's whole export); `columns=` names
/// columns as `--columns` does, an unknown one a 400 naming it.
#[tokio::test]
async fn csv_export_is_reports_csv() {
    let (_d, db) = seeded();
    let (s, h, body) = get(&db, "/api/v1/points.csv?hw=h200").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h["content-type"], "text/csv; charset=utf-8");
    let csv = String::from_utf8(body).unwrap();
    assert_eq!(
        csv.lines().next().unwrap(),
        "model,isl,osl,hardware,framework,precision,spec,parallelism,conc,date,batch,\
         tput_per_gpu,output_tput_per_gpu,median_intvty,p99_ttft,median_e2el,\
         usd_per_m_rental,tok_s_per_mw,frontier"
    );
    assert_eq!(csv.lines().count(), 3);
    let (s, _, body) = get(&db, "/api/v1/points.csv?hw=h200&columns=conc,p90_ttft").await;
    assert_eq!(s, StatusCode::OK);
    let csv = String::from_utf8(body).unwrap();
    assert_eq!(csv.lines().next().unwrap(), "conc,p90_ttft");
    let (s, _, body) = get(&db, "/api/v1/points.csv?columns=p90_ttfx").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        (v["error"].as_str().unwrap())
            .starts_with("`columns`: p90_ttfx: unknown metric (did you mean"),
        "{v}"
    );
    let (s, _, body) = get(&db, "/api/v1/points.csv?hw=h200&columns=all").await;
    assert_eq!(s, StatusCode::OK);
    let csv = String::from_utf8(body).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    // `report`'s default columns first, then every other stored and derived metric by name
    // (issue 42: the headline columns only).
    assert!(
        header.starts_with(
            "model,isl,osl,hardware,framework,precision,spec,parallelism,conc,date,batch,\
             tput_per_gpu,output_tput_per_gpu,median_intvty,p99_ttft,median_e2el,\
             usd_per_m_rental,tok_s_per_mw,frontier,"
        ),
        "{header}"
    );
    let cols: Vec<&str> = header.split(',').collect();
    for c in [
        "p90_ttft",
        "std_itl",
        "input_tput_per_gpu",
        "total_gpu_energy_j",
        "inferbench.warmups",
        "usd_per_m_hyperscaler_input",
        "tokens_per_usd_neocloud",
        "tok_s_per_mw_output",
        // The extras' TTFO under its registry names (issue 40's one rule at ingest).
        "mean_ttfo",
        "std_ttfo",
        "p90_ttfo",
        "p999_ttfo",
    ] {
        assert_eq!(cols.iter().filter(|k| **k == c).count(), 1, "{c}: {header}");
    }
    assert_eq!(cols.len(), 127, "{header}");
    assert_eq!(lines.count(), 2);
}

#[test]
fn the_server_store_refuses_writes() {
    let (_d, db) = seeded();
    let mut s = Store::open_read_only(&db).unwrap();
    let imports = fixtures().join("../imports");
    let r = s.ingest_path(&imports, &IngestOptions::default()).unwrap();
    assert_eq!((r.runs_ingested, r.points), (0, 0));
    assert_eq!(r.skipped.len(), 4);
    for k in &r.skipped {
        assert_eq!(
            k.reason, "database error: sqlite: attempt to write a readonly database",
            "{k:?}"
        );
    }
}

/// The conc-N point of the fixture: (point_id, run_id).
async fn ids_of(db: &str, conc: i64) -> (i64, i64) {
    let (_, v) = get_json(db, &format!("/api/v1/points?conc={conc}")).await;
    let p = &v["points"][0];
    (
        p["point_id"].as_i64().unwrap(),
        p["run_id"].as_i64().unwrap(),
    )
}

#[tokio::test]
async fn run_page_api_gives_provenance_points_files_and_latencies() {
    let (_d, db) = seeded();
    let (p4, r4) = ids_of(&db, 4).await;
    let (p16, _) = ids_of(&db, 16).await;
    let (s, v) = get_json(&db, &format!("/api/v1/runs/{r4}")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["run"]["id"], r4);
    assert_eq!(v["run"]["batch"], "sweep-2026-03-01-h200");
    // With its label, as every other answer gives it (trial 26: the Run page's title was the
    // full path).
    assert_eq!(v["run"]["batch_label"], "sweep-2026-03-01-h200");
    assert_eq!(v["run"]["engine_version"], "sglang 0.5.5");
    assert_eq!(v["run"]["host"], "node-07");
    assert_eq!(v["run"]["job"]["job"]["framework"], "sglang");
    assert_eq!(v["points"].as_array().unwrap().len(), 1);
    assert_eq!(v["points"][0]["point_id"], p4);
    // The batch: the sweep's two stored concurrencies.
    let batch: Vec<i64> = v["batch_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["conc"].as_i64().unwrap())
        .collect();
    assert_eq!(batch, vec![4, 16]);
    let names: Vec<&str> = v["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"server.log") && names.contains(&"job.json"),
        "{names:?}"
    );
    let log = v["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "server.log")
        .unwrap();
    assert_eq!(
        log["url"],
        format!("/api/v1/runs/{r4}/artifacts/server.log")
    );

    // A kept file, byte for byte, as text with a sandboxing CSP.
    let (s, h, body) = get(&db, log["url"].as_str().unwrap()).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h["content-type"], "text/plain; charset=utf-8");
    assert_eq!(h["content-security-policy"], "default-src 'none'; sandbox");
    assert_eq!(
        body,
        std::fs::read(fixtures().join("conc4/server.log")).unwrap()
    );
    // Names are looked up in the database: traversal and unknown names are 404.
    for name in ["..%2F..%2FCargo.toml", "%2Fetc%2Fpasswd", "nope.log"] {
        let (s, _, _) = get(&db, &format!("/api/v1/runs/{r4}/artifacts/{name}")).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{name}");
    }
    let (s, v) = get_json(&db, "/api/v1/runs/0").await;
    assert_eq!(
        (s, v["error"].clone()),
        (
            StatusCode::BAD_REQUEST,
            json!("run id `0`: expected a positive integer")
        )
    );
    let (s, v) = get_json(&db, "/api/v1/runs/999").await;
    assert_eq!(
        (s, v["error"].clone()),
        (StatusCode::NOT_FOUND, json!("no run 999"))
    );

    // Latency distributions from the stored records of conc 16: 6 records, 4 counted (one
    // warmup, one failure left out); TTFT 100 ms each; E2EL 1, 2, 3, 4 s.
    let (s, v) = get_json(&db, &format!("/api/v1/points/{p16}/latencies")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        (v["records"].clone(), v["unreadable"].clone()),
        (json!(6), json!(0))
    );
    assert_eq!(
        v["ttft"],
        json!({"count": 4, "unit": "ms", "min": 100.0, "max": 100.0, "p50": 100.0, "p90": 100.0,
               "p99": 100.0, "histogram": [[100.0, 100.0, 4]], "overflow": null})
    );
    let e = &v["e2el"];
    assert_eq!(
        (
            e["count"].clone(),
            e["min"].clone(),
            e["max"].clone(),
            e["p50"].clone()
        ),
        (json!(4), json!(1000.0), json!(4000.0), json!(2500.0))
    );
    let hist: Vec<u64> = e["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b[2].as_u64().unwrap())
        .collect();
    // Bins over p0–p99 (1,000 … 3,970 ms, NumPy's linear p99 in floating point); the 4 s
    // request above p99 is the overflow bin.
    let mut want = vec![0u64; 20];
    for b in [0, 6, 13] {
        want[b] = 1;
    }
    assert_eq!(hist, want);
    assert_eq!(
        e["overflow"],
        json!({"from": 3969.9999999999995, "to": 4000.0, "count": 1})
    );
    assert_eq!(v["tpot"]["count"], 4);
    // conc 4 kept no records; it has power samples.
    let (s, _) = get_json(&db, &format!("/api/v1/points/{p4}/latencies")).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, v) = get_json(&db, &format!("/api/v1/points/{p4}/power")).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v["samples"][0],
        json!({"gpu": "0", "t_unix": 1772358998.0, "power_w": 500.0})
    );
    // Its server-metric gauges, labels as the file gave them (the fixture's unreadable line is
    // not among them).
    let (s, v) = get_json(&db, &format!("/api/v1/points/{p4}/server_metrics")).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(
        v["series"],
        json!([
            {"name": "vllm:kv_cache_usage_perc", "labels": "", "unit": "fraction (1 = 100 %)",
             "samples": [[1772359001.0, 0.25]]},
            {"name": "vllm:num_requests_running", "labels": "{\"engine\":\"0\"}",
             "unit": "requests", "samples": [[1772359000.0, 4.0]]},
            {"name": "vllm:num_requests_waiting", "labels": "", "unit": "requests",
             "samples": [[1772359001.0, 0.0]]},
        ])
    );
    assert_eq!(v["settings"], json!([]));
    let (s, _, _) = get(&db, &format!("/run?id={r4}")).await;
    assert_eq!(s, StatusCode::OK);
}

/// Issue 9: InferenceX's published points (the store's test dump, whose dsr1 h200 sglang fp8
/// 1024/1024 configuration is the local sweep's) are a group of their own beside the local run,
/// marked `public`, each with its own frontier.
#[tokio::test]
async fn public_points_overlay_a_local_run_of_the_same_config() {
    let (_d, db) = seeded();
    let dump = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../store/tests/dumps/inferencex-dump-2026-07-06");
    let mut s = Store::open(&db).unwrap();
    s.ingest_inferencex_dump(&dump, &IngestOptions::default())
        .unwrap();
    drop(s);
    let (st, v) = get_json(&db, "/api/v1/points?model=dsr1&hw=h200&isl=1024&osl=1024").await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        v["groups"],
        json!([
            {"name": "dsr1 1024/1024 h200_sglang_fp8", "public": false,
             "frontier": [[52.63157894736842, 407.04], [105.26315789473684, 102.4]],
             "preview_frontier": []},
            {"name": "dsr1 1024/1024 h200_sglang_fp8 · InferenceX", "public": true,
             "frontier": [[52.63, 407.04], [105.26, 102.4]], "preview_frontier": []},
        ])
    );
    let public: Vec<(i64, bool, bool)> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["conc"].as_i64().unwrap(),
                p["public"].as_bool().unwrap(),
                p["frontier"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        public,
        [
            (4, false, true),
            (16, false, true),
            (4, true, true),
            (16, true, true)
        ]
    );
}

/// Issue 9: every curated view of assets/presets.json is one the Inference page can show: a
/// unique id, a title and description, state keys the page reads, metrics it offers, and a
/// sequence in its `ISL/OSL` or scenario form.
#[test]
fn presets_name_known_state_and_metrics() {
    let list: Vec<Value> = serde_json::from_str(inferbench_web::PRESETS_JSON).unwrap();
    assert!(list.len() >= 5, "{list:?}");
    let mut ids = std::collections::BTreeSet::new();
    for p in &list {
        let id = p["id"].as_str().unwrap();
        assert!(ids.insert(id), "duplicate preset id {id}");
        assert!(!p["title"].as_str().unwrap().is_empty(), "{id}");
        assert!(!p["description"].as_str().unwrap().is_empty(), "{id}");
        for (k, v) in p["view"].as_object().unwrap() {
            match k.as_str() {
                "hardware" => assert!(v.as_array().unwrap().iter().all(Value::is_string), "{id}"),
                "x" => assert!(
                    inferbench_web::api::X_METRICS.contains(&v.as_str().unwrap()),
                    "{id}"
                ),
                "y" => assert!(
                    inferbench_web::api::Y_METRICS.contains(&v.as_str().unwrap()),
                    "{id}"
                ),
                "sequence" => {
                    let s = v.as_str().unwrap();
                    let ok = s == "agentic-coding"
                        || s.split_once('/').is_some_and(|(a, b)| {
                            a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok()
                        });
                    assert!(ok, "{id}: sequence {s}");
                }
                "model" | "framework" | "precision" | "spec_decoding" | "batch" => {
                    assert!(v.is_string(), "{id}: {k}")
                }
                other => panic!("{id}: `{other}` is not a state key of the Inference page"),
            }
        }
    }
}

/// Trial 24: the pages said "not in this database" for `model=Llama-3.1-8B` while
/// `/api/v1/points` matched it. `/api/v1/options` resolves the URL's identity values to the
/// names the store keeps, by the store's own filter, and counts what the database holds.
#[tokio::test]
async fn options_resolve_names_as_report_filters_do() {
    let (_d, db) = seeded();
    let (s, v) = get_json(
        &db,
        "/api/v1/options?model=DeepSeek-R1&hw=H200&framework=SGLang&model=Llama-3.1-8B&precision=nope",
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v["resolved"],
        json!({
            "model": {"DeepSeek-R1": "dsr1", "Llama-3.1-8B": "llama3.1-8b"},
            "hardware": {"H200": "h200"},
            "framework": {"SGLang": "sglang"},
            "precision": {"nope": "nope"},
        })
    );
    // The names resolved are those `/api/v1/points` matches.
    let (_, p) = get_json(&db, "/api/v1/points?model=DeepSeek-R1&hw=H200").await;
    assert_eq!(p["count"], 2, "{p}");
    assert_eq!(p["points"][0]["model"], "dsr1");
    assert_eq!(v["stored"], json!({"points": 2, "evals": 0}));
    // Without parameters nothing is resolved; another parameter is a 400 naming it.
    let (_, v) = get_json(&db, "/api/v1/options").await;
    assert_eq!(v["resolved"], json!({}));
    let (s, e) = get_json(&db, "/api/v1/options?conc=4").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        e["error"]
            .as_str()
            .unwrap()
            .starts_with("`conc`: unknown parameter (options resolves model, hardware, hw, "),
        "{e}"
    );
}

/// Trial 24: `/run` without an id showed headings with nothing under them ("Latency
/// distributions of"). The page as served holds every section hidden: only the title and the
/// status line show until run.js has loaded a run, whatever happens to the script.
#[tokio::test]
async fn the_run_page_starts_with_its_sections_hidden() {
    let (_d, db) = seeded();
    let (s, _, body) = get(&db, "/run").await;
    assert_eq!(s, StatusCode::OK);
    let html = String::from_utf8(body).unwrap();
    let main = &html[html.find("<main>").unwrap()..html.find("</main>").unwrap()];
    // Each element directly under <main> (two spaces in), but the title and the status line.
    let tops: Vec<&str> = main
        .lines()
        .filter(|l| l.starts_with("  <") && !l.starts_with("  <!--") && !l.starts_with("  </"))
        .collect();
    // 22, the AgentX explorer's heading, note and rows, and "Why this point sits where it
    // does": heading, verdict, self-check, chart and note (issue 42).
    assert_eq!(tops.len(), 30, "{main}");
    for l in &tops {
        let open = &l[..l.find('>').unwrap()];
        let shown = l.contains("id=\"title\"") || l.contains("id=\"status\"");
        assert_eq!(!open.contains(" hidden"), shown, "{l}");
    }
    assert!(
        main.contains("<h3 hidden>Latency distributions of <select id=\"point\"></select></h3>"),
        "{main}"
    );
}

/// Trial 26: the Run page of an agentic run listed median interactivity, which no agentic
/// frontier uses. The run's `x` is AgentX's p90 E2E-normalized interactivity for an agentic
/// batch (its points' `x` and frontier marks follow it), median interactivity otherwise.
#[tokio::test]
async fn a_runs_x_is_the_north_star_for_an_agentic_batch() {
    let (_d, db) = seeded();
    let (_, r4) = ids_of(&db, 4).await;
    let (_, v) = get_json(&db, &format!("/api/v1/runs/{r4}")).await;
    assert_eq!(v["x"]["key"], "median_intvty", "{v}");
    // One synthetic run of two agentic points.
    let mut run = inferbench_store::synthetic::run(0, "dsr1", 0, 0);
    run.run_key = "agentic-test".into();
    run.batch = "agentic-batch".into();
    run.points.truncate(2);
    for (i, p) in run.points.iter_mut().enumerate() {
        p.config.scenario = "agentic-coding".into();
        p.config.hardware = "h100".into();
        p.conc = [4, 16][i];
        p.metrics
            .insert("p90_e2e_norm_intvty".into(), [30.0, 20.0][i]);
    }
    Store::open(&db).unwrap().ingest_run(&run).unwrap();
    let (_, v) = get_json(&db, "/api/v1/points?scenario=agentic-coding").await;
    let id = v["points"][0]["run_id"].as_i64().unwrap();
    let (s, v) = get_json(&db, &format!("/api/v1/runs/{id}")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(v["x"]["key"], "p90_e2e_norm_intvty", "{v}");
    let xs: Vec<f64> = (v["batch_points"].as_array().unwrap().iter())
        .map(|p| p["x"].as_f64().unwrap())
        .collect();
    assert_eq!(xs, [30.0, 20.0]);
}

/// Issue 39: the sim's `time_scale` is a setting, listed once with its value and unit, not a
/// flat time series; every gauge carries its unit.
#[tokio::test]
async fn server_settings_are_listed_apart_with_units() {
    let dir = tempfile::tempdir().unwrap();
    let fx = dir.path().join("sweep");
    common::copy_tree_replacing(&fixtures(), &fx, &[]);
    let metrics = fx.join("conc4/server_metrics.jsonl");
    let mut text = std::fs::read_to_string(&metrics).unwrap();
    text.push_str(
        "{\"t\": 1772359002.0, \"metrics\": {\"inferbench_sim:time_scale\": 4, \
         \"vllm:num_requests_running\": 3}}\n",
    );
    std::fs::write(&metrics, text).unwrap();
    let db = dir.path().join("s.db").display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    s.ingest_path(&fx, &IngestOptions::default()).unwrap();
    drop(s);
    let (p4, _) = ids_of(&db, 4).await;
    let (st, v) = get_json(&db, &format!("/api/v1/points/{p4}/server_metrics")).await;
    assert_eq!(st, StatusCode::OK, "{v}");
    assert_eq!(
        v["settings"],
        json!([{"name": "inferbench_sim:time_scale", "labels": "",
                "unit": "modelled s per wall-clock s", "value": 4.0}])
    );
    let names: Vec<(&str, &str)> = (v["series"].as_array().unwrap().iter())
        .map(|s| (s["name"].as_str().unwrap(), s["unit"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("vllm:kv_cache_usage_perc", "fraction (1 = 100 %)"),
            ("vllm:num_requests_running", "requests"),
            ("vllm:num_requests_running", "requests"),
            ("vllm:num_requests_waiting", "requests"),
        ]
    );
}

/// Issue 39: `serve --redact` serves no stored absolute path (the run's source directory) nor
/// host name (`node-07` of job.json), and not the run's kept files; without it both are there.
#[tokio::test]
async fn redact_hides_absolute_paths_and_host_names() {
    let (_d, db) = seeded();
    let (_, r4) = ids_of(&db, 4).await;
    let abs = std::fs::canonicalize(fixtures())
        .unwrap()
        .display()
        .to_string();
    let fetch = |redact: bool, uri: String| {
        let db = db.clone();
        async move {
            let state = AppState::new(Store::open_read_only(&db).unwrap()).redacted(redact);
            let res = router(state)
                .oneshot(Request::get(uri).body(Body::empty()).unwrap())
                .await
                .unwrap();
            let status = res.status();
            let b = res.into_body().collect().await.unwrap().to_bytes();
            (status, String::from_utf8(b.to_vec()).unwrap())
        }
    };
    let run = format!("/api/v1/runs/{r4}");
    let (s, plain) = fetch(false, run.clone()).await;
    assert_eq!(s, StatusCode::OK);
    let plain_v: Value = serde_json::from_str(&plain).unwrap();
    assert!(plain.contains(&abs) && plain.contains("node-07"), "{plain}");
    let (s, hidden) = fetch(true, run).await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        !hidden.contains(&abs) && !hidden.contains("node-07"),
        "{hidden}"
    );
    let v: Value = serde_json::from_str(&hidden).unwrap();
    assert_eq!(v["run"]["host"], json!("(redacted)"));
    assert_eq!(v["run"]["job"]["host"], json!("(redacted)"));
    // Nothing of the path's names (fresh tester's finding 6: `…/rd/secretdir` was served):
    // the whole path as one hashed name, and the batch label as its batch.
    let source = plain_v["run"]["source_path"].as_str().unwrap();
    assert!(source.ends_with("/sweep-h200/conc4"), "{source}");
    assert_eq!(
        v["run"]["source_path"],
        json!(inferbench_web::redact::batch(source)),
        "{hidden}"
    );
    assert!(!hidden.contains("sweep-h200/conc4"), "{hidden}");
    assert_eq!(v["run"]["batch_label"], v["run"]["batch"], "{hidden}");
    // Links to the kept files stay, the files are refused.
    let url = v["artifacts"][0]["url"].as_str().unwrap().to_string();
    assert!(
        url.starts_with(&format!("/api/v1/runs/{r4}/artifacts/")),
        "{url}"
    );
    let (s, body) = fetch(true, url.clone()).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("not served with --redact"), "{body}");
    assert_eq!(fetch(false, url).await.0, StatusCode::OK);
    // Every other answer too: points (with metrics), the CSV export, options.
    for uri in [
        "/api/v1/points?metrics=all",
        "/api/v1/points.csv",
        "/api/v1/options",
    ] {
        let (s, body) = fetch(true, uri.to_string()).await;
        assert_eq!(s, StatusCode::OK, "{uri}");
        assert!(
            !body.contains(&abs) && !body.contains("node-07"),
            "{uri}: {body}"
        );
    }
}

/// Trial of issue 39 §5 (C): the run page named a group otherwise than `/api/v1/points` (its
/// label was relative to the run's own points), and marked a run's point on the frontier in
/// `points` but off it in `batch_points`. One label (the store's) and the batch's frontier.
#[tokio::test]
async fn run_page_groups_and_frontier_are_the_charts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("web.db").display().to_string();
    // A second sweep of the configuration on another server, whose conc-16 point dominates its
    // conc-4 one (higher interactivity and throughput).
    let copy = dir.path().join("sweep-b");
    common::copy_tree_replacing(
        &fixtures(),
        &copy,
        &[
            ("sweep-2026-03-01-h200", "sweep-2026-03-02-h200"),
            (
                "\"median_intvty\": 52.63157894736842",
                "\"median_intvty\": 500.0",
            ),
            ("\"median_tpot\": 0.019", "\"median_tpot\": 0.002"),
            ("\"median_tpot_ms\": 19.0", "\"median_tpot_ms\": 2.0"),
        ],
    );
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    for (d, seqs) in [(fixtures(), "256"), (copy, "16")] {
        let o = IngestOptions::from_set(&[format!("max_num_seqs={seqs}")]).unwrap();
        assert_eq!(s.ingest_path(&d, &o).unwrap().points, 2);
    }
    drop(s);
    let (_, all) = get_json(&db, "/api/v1/points").await;
    let chart: std::collections::BTreeMap<i64, (Value, Value)> = (all["points"].as_array())
        .unwrap()
        .iter()
        .map(|p| {
            let id = p["point_id"].as_i64().unwrap();
            (id, (p["group"].clone(), p["run_id"].clone()))
        })
        .collect();
    let groups: std::collections::BTreeSet<&str> =
        chart.values().map(|(g, _)| g.as_str().unwrap()).collect();
    assert_eq!(
        groups.into_iter().collect::<Vec<_>>(),
        [
            "dsr1 1024/1024 h200_sglang_fp8 · max_num_seqs=16",
            "dsr1 1024/1024 h200_sglang_fp8 · max_num_seqs=256"
        ]
    );
    let mut dominated = 0;
    for (id, (group, run)) in &chart {
        let (st, v) = get_json(&db, &format!("/api/v1/runs/{run}")).await;
        assert_eq!(st, StatusCode::OK, "{v}");
        let p = &v["points"][0];
        assert_eq!(p["point_id"].as_i64(), Some(*id));
        assert_eq!(&p["group"], group, "run {run}");
        let same: Vec<&Value> = (v["batch_points"].as_array().unwrap().iter())
            .filter(|b| b["point_id"] == p["point_id"])
            .collect();
        assert_eq!(same.len(), 1, "{v}");
        assert_eq!(&same[0]["group"], group, "run {run}");
        assert_eq!(same[0]["frontier"], p["frontier"], "run {run}");
        dominated += usize::from(p["frontier"] == json!(false));
    }
    // The second sweep's conc-4 point is off its batch's frontier, on both lists.
    assert_eq!(dominated, 1);
}

/// Trial of issue 39 §5 (E): the Host check's edges on a loopback bind, IPv4-mapped included:
/// two `Host` headers and a malformed one are 400, an absolute-form target naming another host
/// is 403 whatever `Host` says (its authority wins, RFC 9112 §3.2.2), no `Host` (HTTP/1.0) is
/// answered.
#[tokio::test]
async fn the_host_check_takes_one_host_and_the_targets_authority() {
    let (_d, db) = seeded();
    let send = |local: &str, req: Request<Body>| {
        let local: std::net::SocketAddr = local.parse().unwrap();
        let app = inferbench_web::served_router(
            AppState::new(Store::open_read_only(&db).unwrap()),
            local,
        );
        async move { app.oneshot(req).await.unwrap().status() }
    };
    let with_host = |uri: &str, hosts: &[&str]| {
        let mut b = Request::get(uri);
        for h in hosts {
            b = b.header("host", *h);
        }
        b.body(Body::empty()).unwrap()
    };
    let api = "/api/v1/options";
    for local in ["127.0.0.1:8321", "[::ffff:127.0.0.1]:8321", "[::1]:8321"] {
        for (req, want) in [
            (with_host(api, &["127.0.0.1:8321"]), StatusCode::OK),
            (with_host(api, &[]), StatusCode::OK),
            (
                with_host(api, &["evil.example:8321"]),
                StatusCode::FORBIDDEN,
            ),
            (
                with_host(api, &["127.0.0.1:8321", "evil.example"]),
                StatusCode::BAD_REQUEST,
            ),
            (
                with_host(api, &["localhost", "localhost"]),
                StatusCode::BAD_REQUEST,
            ),
            (
                with_host(
                    "http://evil.example:8321/api/v1/options",
                    &["127.0.0.1:8321"],
                ),
                StatusCode::FORBIDDEN,
            ),
            (
                with_host("http://localhost:8321/api/v1/options", &["127.0.0.1:8321"]),
                StatusCode::OK,
            ),
            (
                with_host(api, &["localhost:99999"]),
                StatusCode::BAD_REQUEST,
            ),
            (
                with_host(api, &["evil.example:99999"]),
                StatusCode::BAD_REQUEST,
            ),
            (with_host(api, &["[::1]:http"]), StatusCode::BAD_REQUEST),
            (with_host(api, &["[::ffff:127.0.0.1]:8321"]), StatusCode::OK),
        ] {
            let what = format!("{local} {} {:?}", req.uri(), req.headers());
            assert_eq!(send(local, req).await, want, "{what}");
        }
    }
    // Bound elsewhere, no check (the --bind warning says so).
    let req = with_host(api, &["evil.example"]);
    assert_eq!(send("10.0.0.1:8321", req).await, StatusCode::OK);
}

/// Trial of issue 39 §5 (G): under `--redact`, `batch=` was a suffix match on the stored path,
/// so a reader could confirm guessed parent directories (`batch=sweeps/h200/run-3` matched
/// where only `…/h200/run-3` is shown). It matches what the answers show, and the run page
/// still lists its batch.
#[tokio::test]
async fn redacted_batch_filters_match_only_what_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("web.db").display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    let o = IngestOptions {
        batch: Some("/home/ann/sweeps/h200/run-3".into()),
        ..IngestOptions::default()
    };
    assert_eq!(s.ingest_path(&fixtures(), &o).unwrap().points, 2);
    drop(s);
    let count = |redact: bool, batch: &str| {
        let uri = format!("/api/v1/points?batch={}", utf8_percent(batch));
        let app = router(AppState::new(Store::open_read_only(&db).unwrap()).redacted(redact));
        async move {
            let res = app
                .oneshot(Request::get(uri.as_str()).body(Body::empty()).unwrap())
                .await
                .unwrap();
            let b = res.into_body().collect().await.unwrap().to_bytes();
            let v: Value = serde_json::from_slice(&b).unwrap();
            v["count"].as_i64().unwrap_or(-1)
        }
    };
    // Shown as one hashed name (fresh tester's finding 6): only that name matches.
    let shown = inferbench_web::redact::batch("/home/ann/sweeps/h200/run-3");
    assert!(shown.starts_with("(path "), "{shown}");
    for (batch, redacted, plain) in [
        (shown.as_str(), 2, 0),
        ("run-3", 0, 2),
        ("h200/run-3", 0, 2),
        ("…/h200/run-3", 0, 0),
        ("sweeps/h200/run-3", 0, 2),
        ("ann/sweeps/h200/run-3", 0, 2),
        ("/home/ann/sweeps/h200/run-3", 0, 2),
    ] {
        assert_eq!(
            count(true, batch).await,
            redacted,
            "--redact, batch={batch}"
        );
        assert_eq!(count(false, batch).await, plain, "batch={batch}");
    }
    // No pattern either: `%` is a character of the shown name, not SQL's wildcard.
    assert_eq!(count(true, "%/run-3").await, 0);
    assert_eq!(count(true, "a%/run-3").await, 0);
    // The run page lists its batch under --redact too.
    let app = router(AppState::new(Store::open_read_only(&db).unwrap()).redacted(true));
    let (_, v) = get_json(&db, "/api/v1/points").await;
    let run = v["points"][0]["run_id"].as_i64().unwrap();
    let res = app
        .oneshot(
            Request::get(format!("/api/v1/runs/{run}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let b = res.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(v["batch_points"].as_array().map(Vec::len), Some(2), "{v}");
    assert_eq!(v["run"]["batch"], json!(shown));
    assert_eq!(v["run"]["batch_label"], json!(shown));
}

/// Issue 42: the chart export is the chart itself, drawn by `plot`'s renderer with its
/// context: an opaque PNG (colour type 2, RGB, no alpha) at least 1000 px wide, and its SVG
/// twin carrying the title (model · scenario), the axis labels with units, the concurrency
/// labels and the source line (database, date range, filters, inferbench version).
#[tokio::test]
async fn chart_export_is_an_opaque_png_with_title_units_and_source() {
    let (_d, db) = seeded();
    let (s, h, png) = get(&db, "/api/v1/chart.png?model=dsr1&y=tput_per_gpu").await;
    assert_eq!(s, StatusCode::OK, "{}", String::from_utf8_lossy(&png));
    assert_eq!(h["content-type"], "image/png");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(&png[12..16], b"IHDR");
    let width = u32::from_be_bytes(png[16..20].try_into().unwrap());
    let height = u32::from_be_bytes(png[20..24].try_into().unwrap());
    assert_eq!((width, height), (1600, 1000));
    // Bit depth 8, colour type 2 (truecolour without alpha: 6 would be RGBA).
    assert_eq!((png[24], png[25]), (8, 2));

    let (s, h, svg) = get(&db, "/api/v1/chart.svg?model=dsr1&y=tput_per_gpu").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h["content-type"], "image/svg+xml");
    let svg = String::from_utf8(svg).unwrap();
    // plotters writes each text on its own line.
    let texts: Vec<&str> = svg.lines().collect();
    assert!(texts.contains(&"dsr1 · ISL/OSL 1024/1024"), "{svg}");
    assert!(svg.contains("Throughput per GPU (tok/s/GPU)"), "{svg}");
    assert!(svg.contains("Interactivity, median (tok/s/user)"), "{svg}");
    // Concurrency labels of the two points, and the legend's group.
    assert!(texts.contains(&"4") && texts.contains(&"16"), "{svg}");
    let source = format!(
        "source: {db} · 2026-03-01 – 2026-03-01 · filters: model=dsr1 · inferbench {}",
        env!("CARGO_PKG_VERSION")
    );
    assert!(texts.contains(&source.as_str()), "{source} not in {svg}");

    // A bad parameter is the points API's 400; nothing to draw is a 400 saying so.
    let (s, _, b) = get(&db, "/api/v1/chart.png?y=nope").await;
    assert_eq!(
        s,
        StatusCode::BAD_REQUEST,
        "{}",
        String::from_utf8_lossy(&b)
    );
    let (s, _, b) = get(&db, "/api/v1/chart.svg?model=nothing-stored").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(String::from_utf8_lossy(&b).contains("nothing to plot"));
}

/// Issue 42: tokens per $1 for the three cost regimes (10⁶ ÷ $/M tokens), $/M input and output
/// for each regime and tok/s/MW input/output are y metrics of `/api/v1/options`; a chart's
/// points carry input and output throughput for the tooltip.
#[tokio::test]
async fn tokens_per_dollar_and_input_output_metrics_are_offered() {
    let (_d, db) = seeded();
    let (_, v) = get_json(&db, "/api/v1/options").await;
    let ys: Vec<&str> = (v["y_metrics"].as_array().unwrap().iter())
        .map(|m| m["key"].as_str().unwrap())
        .collect();
    for k in [
        "tokens_per_usd_hyperscaler",
        "tokens_per_usd_neocloud",
        "tokens_per_usd_rental",
        "usd_per_m_hyperscaler_input",
        "usd_per_m_hyperscaler_output",
        "usd_per_m_neocloud_input",
        "usd_per_m_neocloud_output",
        "usd_per_m_rental_input",
        "usd_per_m_rental_output",
        "tok_s_per_mw_input",
        "tok_s_per_mw_output",
    ] {
        assert!(ys.contains(&k), "{k}: {ys:?}");
    }
    let m = v["y_metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["key"] == "tokens_per_usd_rental")
        .unwrap();
    assert_eq!(
        *m,
        json!({"key": "tokens_per_usd_rental",
               "label": "Tokens per $1, total (input + output) tokens, rental",
               "unit": "tokens/$",
               "label_with_unit": "Tokens per $1, total (input + output) tokens, rental (tokens/$)",
               "better": "higher"})
    );
    for regime in ["hyperscaler", "neocloud", "rental"] {
        let (s, v) = get_json(
            &db,
            &format!("/api/v1/points?y=tokens_per_usd_{regime}&metrics=all"),
        )
        .await;
        assert_eq!(s, StatusCode::OK);
        let pts = v["points"].as_array().unwrap();
        assert_eq!(pts.len(), 2);
        for p in pts {
            let usd = p["metrics"][format!("usd_per_m_{regime}")]
                .as_f64()
                .unwrap();
            assert_eq!(p["y"].as_f64().unwrap(), 1e6 / usd, "{regime}: {p}");
        }
    }
    // The chart's points (no `metrics=all`) carry input and output throughput.
    let (_, v) = get_json(&db, "/api/v1/points?y=tokens_per_usd_rental").await;
    for p in v["points"].as_array().unwrap() {
        assert!(p["input_tput_per_gpu"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["output_tput_per_gpu"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p.get("metrics").is_none());
    }
    // A custom regime's tokens per $1 needs its price, as its $/M does.
    let (s, v) = get_json(&db, "/api/v1/points?y=tokens_per_usd_custom").await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert!(
        v["error"].as_str().unwrap().contains("gpu_hour_cost"),
        "{v}"
    );
    let (s, v) = get_json(
        &db,
        "/api/v1/points?y=tokens_per_usd_custom&gpu_hour_cost=2&metrics=all",
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    for p in v["points"].as_array().unwrap() {
        // $2/GPU-hour over X tok/s/GPU: 2 ÷ (X × 3600 ÷ 10⁶) $/M, and 10⁶ ÷ that tokens per $1.
        let x = p["metrics"]["tput_per_gpu"].as_f64().unwrap();
        assert_eq!(p["y"].as_f64().unwrap(), 1e6 / (2.0 / (x * 3600.0 / 1e6)));
    }
}

/// Issue 42: `/api/v1/openapi.json` describes every API route the router serves, paths written
/// in full, and is a valid OpenAPI 3 document (Python's `openapi-spec-validator`:
/// `scripts/setup/openapi.sh`). The router serves the API only from the table the document is
/// built from, so a route added without an entry is either not served or fails here.
#[tokio::test]
async fn openapi_lists_every_route_and_validates() {
    let (_d, db) = seeded();
    let (s, doc) = get_json(&db, "/api/v1/openapi.json").await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(doc["openapi"], "3.0.3");
    let paths: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let table: Vec<&str> = inferbench_web::openapi::API_ROUTES
        .iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(paths, table);
    for p in [
        "/api/v1/options",
        "/api/v1/points",
        "/api/v1/points.csv",
        "/api/v1/chart.png",
        "/api/v1/chart.svg",
        "/api/v1/runs/{id}",
        "/api/v1/runs/{id}/artifacts/{name}",
        "/api/v1/points/{id}/latencies",
        "/api/v1/points/{id}/power",
        "/api/v1/points/{id}/server_metrics",
        "/api/v1/compare",
        "/api/v1/history",
        "/api/v1/evals",
        "/api/v1/evals/samples",
        "/api/v1/models",
        "/api/v1/tco",
        "/api/v1/openapi.json",
    ] {
        assert!(paths.contains(&p), "{p} not described");
    }
    // Every described route is served: none answers the router's "no such route".
    for p in &paths {
        let uri = p.replace("{id}", "1").replace("{name}", "x");
        let (_, _, body) = get(&db, &uri).await;
        let body = String::from_utf8_lossy(&body);
        assert!(!body.contains("no such page or API route"), "{uri}: {body}");
    }
    // The points route's parameters name the filters, the axes and `metrics`.
    let names: Vec<&str> = doc["paths"]["/api/v1/points"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for n in [
        "model",
        "hardware",
        "x",
        "y",
        "include_invalid",
        "since",
        "metrics",
    ] {
        assert!(names.contains(&n), "{n}: {names:?}");
    }
    assert_eq!(
        doc["paths"]["/api/v1/runs/{id}"]["get"]["parameters"][0],
        json!({"name": "id", "in": "path", "required": true,
               "description": "run id (positive integer)", "schema": {"type": "string"}})
    );
    // No API route is registered outside the table.
    let lib = include_str!("../src/lib.rs");
    assert!(
        !lib.contains(".route(\"/api"),
        "an API route outside openapi::API_ROUTES"
    );

    let python = std::env::var("INFERBENCH_TEST_OPENAPI_PYTHON").unwrap_or("python3".into());
    if !inferbench_testutil::command_works(
        &python,
        &["-c", "import openapi_spec_validator"],
        "Python's openapi-spec-validator",
        "scripts/setup/openapi.sh installs it and exports INFERBENCH_TEST_OPENAPI_PYTHON",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = std::process::Command::new(&python)
        .args([
            "-c",
            "import json, sys\n\
             from openapi_spec_validator import validate\n\
             validate(json.load(open(sys.argv[1])))\n\
             print('valid')",
        ])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "valid\n");
}

/// Issue 42: the landing page's numbers, computed from a database of two models (the fixture
/// and a copy of it measuring another model in a later batch).
#[tokio::test]
async fn overview_lists_models_hardware_dates_and_the_latest_batch() {
    let (dir, db) = seeded();
    let copy = dir.path().join("qwen");
    common::copy_tree_replacing(
        &fixtures(),
        &copy,
        &[
            (
                "\"infmax_model_prefix\": \"dsr1\"",
                "\"infmax_model_prefix\": \"qwen3-8b\"",
            ),
            ("deepseek-ai/DeepSeek-R1-0528", "Qwen/Qwen3-8B"),
            ("sweep-2026-03-01-h200", "sweep-2026-03-02-h200"),
            // A day later: the date stamp, and the run start times 100,000 s on.
            ("\"date\": \"20260301-", "\"date\": \"20260302-"),
            ("17723", "17724"),
        ],
    );
    let mut s = Store::open(&db).unwrap();
    let r = s.ingest_path(&copy, &IngestOptions::default()).unwrap();
    assert_eq!(r.points, 2, "{r:?}");
    drop(s);
    let (st, v) = get_json(&db, "/api/v1/overview").await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let run_id = v["latest_batch"]["run_id"].clone();
    assert!(run_id.as_i64().unwrap() > 0);
    assert_eq!(
        v,
        json!({
            "models": [{"name": "dsr1", "points": 2}, {"name": "qwen3-8b", "points": 2}],
            "hardware": [{"name": "h200", "points": 4}],
            "points": 4, "failed": 0, "runs": 4, "batches": 2, "evals": 0,
            "first_date": "2026-03-01", "last_date": "2026-03-02",
            "latest_batch": {"batch": "sweep-2026-03-02-h200", "batch_label": "sweep-2026-03-02-h200",
                             "date": "2026-03-02", "points": 2, "models": ["qwen3-8b"],
                             "run_id": run_id},
        })
    );
    let (st, v) = get_json(&db, "/api/v1/overview?x=1").await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{v}");
    // An empty database: nothing, and no latest batch.
    let empty = dir.path().join("empty.db").display().to_string();
    Store::open(&empty).unwrap().migrate().unwrap();
    let (_, v) = get_json(&empty, "/api/v1/overview").await;
    assert_eq!(v["latest_batch"], Value::Null);
    assert_eq!(v["first_date"], Value::Null);
    assert_eq!(v["models"], json!([]));
}

/// Issue 42: points invalid only by AgentX's duration rule (a replay under 900 s, as every
/// `quickstart --agentic` point is) are previews with a frontier of their own; a point invalid
/// for another reason is neither, and the valid frontier never takes them.
#[tokio::test]
async fn short_replays_are_previews_with_their_own_frontier() {
    let (dir, db) = seeded();
    for (hw, reason) in [
        (
            "h100",
            inferbench_core::summary::agentic::SHORT_REPLAY_REASON,
        ),
        ("b200", "the server fell behind"),
    ] {
        let copy = dir.path().join(hw);
        let field = format!("\"inferbench\": {{\"invalid_reason\": \"{reason}\",");
        common::copy_tree_replacing(
            &fixtures(),
            &copy,
            &[
                ("h200-nv_0", &format!("{hw}-nv_0")),
                ("sweep-2026-03-01-h200", &format!("sweep-2026-03-01-{hw}")),
                ("\"inferbench\": {", &field),
            ],
        );
        let mut s = Store::open(&db).unwrap();
        assert_eq!(
            s.ingest_path(&copy, &IngestOptions::default())
                .unwrap()
                .points,
            2
        );
    }
    let (_, v) = get_json(&db, "/api/v1/points?model=dsr1").await;
    let by_hw = |hw: &str| -> Vec<&Value> {
        (v["points"].as_array().unwrap().iter())
            .filter(|p| p["hardware"] == hw)
            .collect()
    };
    let group = |hw: &str| -> &Value {
        (v["groups"].as_array().unwrap().iter())
            .find(|g| g["name"].as_str().unwrap().contains(hw))
            .unwrap()
    };
    // The h100 copy: both points previews, off the frontier, on a preview frontier of both.
    let h100 = by_hw("h100");
    assert_eq!(h100.len(), 2);
    for p in &h100 {
        assert_eq!(
            (&p["valid"], &p["preview"], &p["frontier"]),
            (&json!(false), &json!(true), &json!(false)),
            "{p}"
        );
    }
    assert_eq!(group("h100")["frontier"], json!([]));
    let knots: Vec<[f64; 2]> = h100
        .iter()
        .map(|p| [p["x"].as_f64().unwrap(), p["y"].as_f64().unwrap()])
        .collect();
    let mut want = knots.clone();
    want.sort_by(|a, b| a[0].total_cmp(&b[0]));
    assert_eq!(group("h100")["preview_frontier"], json!(want));
    // Invalid for another reason: no preview.
    for p in by_hw("b200") {
        assert_eq!(
            (&p["valid"], &p["preview"]),
            (&json!(false), &json!(false)),
            "{p}"
        );
    }
    assert_eq!(group("b200")["preview_frontier"], json!([]));
    // The valid h200 group: its frontier as before, no preview.
    for p in by_hw("h200") {
        assert_eq!(p["preview"], json!(false));
    }
    assert_eq!(group("h200")["preview_frontier"], json!([]));
    assert_eq!(group("h200")["frontier"].as_array().unwrap().len(), 2);
}

/// Issue 39 §9: a point that measured nothing is `status: "failed"` in the API as in the
/// store and `report` (listed only with `include_failed=true`, its cause as `error`); the
/// measured ones are `"ok"`.
#[tokio::test]
async fn a_point_that_measured_nothing_is_failed_in_the_api() {
    let (dir, db) = seeded();
    let failed = dir.path().join("failed");
    std::fs::create_dir_all(&failed).unwrap();
    let v = json!({
        "date": "20260301-100000", "backend": "openai", "model_id": "m",
        "num_prompts": 8, "max_concurrency": 2, "duration": 1.0,
        "completed": 0, "total_input_tokens": 0, "total_output_tokens": 0,
        "request_throughput": 0.0, "output_throughput": 0.0, "total_token_throughput": 0.0,
        "inferbench": {"stop_reason": "completed", "interrupted": false, "failed": 8,
                       "failed_reason": "nothing was measured: none of the 8 profile requests succeeded (8 failed)"},
    });
    std::fs::write(failed.join("c2.json"), v.to_string()).unwrap();
    // Fresh tester's finding 1: interrupted before any request finished (a summary that names
    // no `failed_reason`, as bench wrote before): failed, its cause the one rule's text, and
    // no `invalid_reason` ("cut short: interrupted" was both).
    let v = json!({
        "date": "20260301-100000", "backend": "openai", "model_id": "m",
        "num_prompts": 8, "max_concurrency": 4, "duration": 1.0,
        "completed": 0, "total_input_tokens": 0, "total_output_tokens": 0,
        "request_throughput": 0.0, "output_throughput": 0.0, "total_token_throughput": 0.0,
        "inferbench": {"stop_reason": "interrupted", "interrupted": true, "failed": 0},
    });
    std::fs::write(failed.join("c4.json"), v.to_string()).unwrap();
    let mut s = Store::open(&db).unwrap();
    let o = IngestOptions::from_set(&[
        "hw=h200".into(),
        "framework=vllm".into(),
        "precision=fp8".into(),
    ])
    .unwrap();
    let r = s.ingest_path(&failed, &o).unwrap();
    assert_eq!(r.failed_points, 2, "{}", r.render());
    assert_eq!(r.invalid_points, 0, "{}", r.render());
    drop(s);
    let (st, v) = get_json(&db, "/api/v1/points?include_failed=true").await;
    assert_eq!(st, StatusCode::OK, "{v}");
    let got: Vec<(Value, Value, Value, Value, Value)> = v["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["conc"].clone(),
                p["status"].clone(),
                p["error"].clone(),
                p["invalid_reason"].clone(),
                p["valid"].clone(),
            )
        })
        .collect();
    // One status everywhere: a failed point is not `valid` (trial of issue 39, finding 7).
    assert!(
        got.contains(&(
            json!(2),
            json!("failed"),
            json!("nothing was measured: none of the 8 profile requests succeeded (8 failed)"),
            Value::Null,
            json!(false)
        )),
        "{got:?}"
    );
    assert!(
        got.contains(&(
            json!(4),
            json!("failed"),
            json!("interrupted before any request finished"),
            Value::Null,
            json!(false)
        )),
        "{got:?}"
    );
    assert_eq!(
        got.iter().filter(|g| g.1 == json!("ok")).count(),
        2,
        "{got:?}"
    );
    let (_, v) = get_json(&db, "/api/v1/points").await;
    assert!(
        v["points"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["status"] == "ok"),
        "{v}"
    );
}

/// Issue 42's evals drawer: `/api/v1/evals/samples` pages an eval's stored questions in
/// doc_id order (exact rows), filters right/wrong answers, and answers 400 naming a missing
/// or bad parameter; an eval without stored questions has none.
#[tokio::test]
async fn eval_samples_are_paged_exact_rows() {
    let (dir, db) = seeded();
    let set = common::eval_set_with_samples(dir.path());
    {
        let mut s = Store::open(&db).unwrap();
        let r = s.ingest_path(&set, &IngestOptions::default()).unwrap();
        assert_eq!(r.evals, 1, "{}", r.render());
    }
    let (s, evals) = get_json(&db, "/api/v1/evals").await;
    assert_eq!(s, StatusCode::OK);
    let run = evals["rows"][0]["run_id"].as_i64().unwrap();
    assert_eq!(evals["rows"][0]["conc"], 32);
    let row = |doc: i64, q: &str, resp: &str, ext: &str, t: &str, ok: bool, err: &str| {
        json!({"doc_id": doc, "question": q, "response": resp, "extracted": ext, "target": t,
               "correct": ok, "error": err})
    };
    let (s, v) = get_json(
        &db,
        &format!("/api/v1/evals/samples?run={run}&task=gsm8k&conc=32&limit=2"),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        v,
        json!({"run": run, "task": "gsm8k", "conc": 32, "total": 3, "offset": 0, "limit": 2,
               "rows": [row(0, "<b>7</b> times 6?", "", "", "42", false, "http 500"),
                        row(1, "Tom has 2 apples and buys 3 more. How many?", "2+3=5\n#### 5", "5", "5", true, "")]})
    );
    let (_, v) = get_json(
        &db,
        &format!("/api/v1/evals/samples?run={run}&task=GSM8K&conc=32&offset=2"),
    )
    .await;
    assert_eq!(
        v["rows"],
        json!([row(2, "10 minus 2?", "#### 9", "9", "8", false, "")])
    );
    assert_eq!(v["total"], 3);
    let (_, v) = get_json(
        &db,
        &format!("/api/v1/evals/samples?run={run}&task=gsm8k&conc=32&correct=true"),
    )
    .await;
    assert_eq!(
        (v["total"].clone(), v["rows"][0]["doc_id"].clone()),
        (json!(1), json!(1))
    );
    let (_, v) = get_json(&db, &format!("/api/v1/evals/samples?run={run}&task=gsm8k")).await;
    assert_eq!(
        (v["total"].clone(), v["rows"].clone()),
        (json!(0), json!([]))
    );
    for (q, said) in [
        ("task=gsm8k", "`run`: required"),
        (&format!("run={run}") as &str, "`task`: required"),
        ("run=x&task=gsm8k", "`run=x`: expected a positive integer"),
        ("run=1&task=gsm8k&limit=0", "`limit=0`: expected 1 to 500"),
        (
            "run=1&task=gsm8k&offset=-1",
            "`offset=-1`: expected a non-negative integer",
        ),
        (
            "run=1&task=gsm8k&correct=maybe",
            "`correct=maybe`: expected true or false",
        ),
        ("run=1&task=gsm8k&page=2", "`page`: unknown parameter"),
    ] {
        let (s, v) = get_json(&db, &format!("/api/v1/evals/samples?{q}")).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{q}: {v}");
        assert!(v["error"].as_str().unwrap().starts_with(said), "{q}: {v}");
    }
}

/// One agentic request record of play `play` on stream `stream` (`<trace>` or
/// `<trace>::sa:<agent>`), sent at `sent_s` and ended at `end_s` (s on the run clock).
fn agentic_record(
    play: u32,
    stream: &str,
    sent_s: u64,
    end_s: u64,
) -> inferbench_core::RequestRecord {
    inferbench_core::RequestRecord {
        conversation_id: Some(stream.to_string()),
        turn: Some(0),
        success: true,
        sent_ns: sent_s * 1_000_000_000,
        first_token_ns: Some(sent_s * 1_000_000_000 + 500_000_000),
        end_ns: end_s * 1_000_000_000,
        agentic: Some(inferbench_core::record::AgenticRef {
            play,
            trace_id: stream.split("::sa:").next().unwrap().to_string(),
            kind: "profile".into(),
            total_blocks: 2,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `records` as ingest stores a point's records: zstd JSONL with the JSONL's SHA-256.
fn records_blob(
    records: &[inferbench_core::RequestRecord],
) -> inferbench_store::parse::RequestsBlob {
    let jsonl: String = (records.iter())
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    inferbench_store::parse::RequestsBlob {
        jsonl_zst: zstd::encode_all(jsonl.as_bytes(), 3).unwrap(),
        source: None,
        sha256: inferbench_store::parse::sha256_hex(jsonl.as_bytes()),
        n_records: records.len() as i64,
        n_profile: records.len() as i64,
        n_failed: 0,
        file: None,
    }
}

/// Issue 42: `/api/v1/runs/{id}` decompressed and parsed every agentic point's records on each
/// call. The session trees are built once per point and records digest: a second call builds
/// none and answers the same JSON; a re-ingest that rewrites the point's records (same point
/// id, new digest) while the database is served is rebuilt, never answered stale.
#[tokio::test]
async fn run_sessions_are_built_once_and_again_after_a_reingest() {
    let (_d, db) = seeded();
    let mut run = inferbench_store::synthetic::run(0, "dsr1", 0, 0);
    run.run_key = "agentic-cache".into();
    run.batch = "agentic-cache".into();
    run.points.truncate(1);
    let p = &mut run.points[0];
    p.config.scenario = "agentic-coding".into();
    p.conc = 2;
    p.requests = Some(records_blob(&[
        agentic_record(0, "t1", 10, 11),
        agentic_record(0, "t1::sa:helper", 12, 14),
        agentic_record(1, "t2", 11, 13),
    ]));
    Store::open(&db).unwrap().ingest_run(&run).unwrap();

    let state = AppState::new(Store::open_read_only(&db).unwrap());
    let call = |uri: String| {
        let app = router(state.clone());
        async move {
            let res = app
                .oneshot(Request::get(uri).body(Body::empty()).unwrap())
                .await
                .unwrap();
            assert_eq!(res.status(), StatusCode::OK);
            let b = res.into_body().collect().await.unwrap().to_bytes();
            serde_json::from_slice::<Value>(&b).unwrap()
        }
    };
    let pts = call("/api/v1/points?scenario=agentic-coding".into()).await;
    let (run_id, point_id) = (
        pts["points"][0]["run_id"].as_i64().unwrap(),
        pts["points"][0]["point_id"].as_i64().unwrap(),
    );
    let uri = format!("/api/v1/runs/{run_id}");
    assert_eq!(state.session_builds(), 0);
    let first = call(uri.clone()).await;
    assert_eq!(state.session_builds(), 1);
    let s = &first["sessions"][0];
    assert_eq!(s["point_id"], json!(point_id));
    assert_eq!(s["conc"], json!(2));
    assert_eq!(s["t0_ns"], json!(10_000_000_000u64));
    let traces: Vec<&str> = (s["sessions"].as_array().unwrap().iter())
        .map(|t| t["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(traces, ["t1", "t2"]);
    assert_eq!(s["sessions"][0]["requests"], json!(2));
    // Again: from the cache, the same answer.
    let second = call(uri.clone()).await;
    assert_eq!(state.session_builds(), 1);
    assert_eq!(second, first);

    // The same run ingested again with a third play: the point keeps its id, its records'
    // digest changes, so the trees are built again from the new records.
    run.points[0].requests = Some(records_blob(&[
        agentic_record(0, "t1", 10, 11),
        agentic_record(0, "t1::sa:helper", 12, 14),
        agentic_record(1, "t2", 11, 13),
        agentic_record(2, "t3", 15, 16),
    ]));
    Store::open(&db).unwrap().ingest_run(&run).unwrap();
    let third = call(uri).await;
    assert_eq!(state.session_builds(), 2);
    let s = &third["sessions"][0];
    assert_eq!(s["point_id"], json!(point_id));
    let traces: Vec<&str> = (s["sessions"].as_array().unwrap().iter())
        .map(|t| t["trace_id"].as_str().unwrap())
        .collect();
    assert_eq!(traces, ["t1", "t2", "t3"]);
    assert_eq!(s["sessions"][2]["start_s"], json!(5.0));
}

/// InferenceX draws a y of input tokens (input throughput, cost per input token, input
/// tok/s/MW) against P99 TTFT (its `i_xmetric`), with the frontier's direction mirrored (TTFT:
/// lower is better). Without an `x`, the chart routes do too; an `x` asked for is kept; a y of
/// total or output tokens keeps median interactivity.
#[tokio::test]
async fn a_y_of_input_tokens_is_drawn_against_p99_ttft_by_default() {
    let (_d, db) = seeded();
    for y in [
        "input_tput_per_gpu",
        "usd_per_m_rental_input",
        "tok_s_per_mw_input",
    ] {
        let (s, v) = get_json(&db, &format!("/api/v1/points?y={y}&metrics=all")).await;
        assert_eq!(s, StatusCode::OK, "{v}");
        assert_eq!(v["x"]["key"], "p99_ttft", "{y}: {v}");
        assert_eq!(v["x"]["label_with_unit"], "TTFT, P99 (s)", "{y}");
        for p in v["points"].as_array().unwrap() {
            assert_eq!(p["x"], p["metrics"]["p99_ttft"], "{y}: {p}");
        }
    }
    // The chart's lean read (no `metrics=all`) has the TTFT too.
    let (_, v) = get_json(&db, "/api/v1/points?y=input_tput_per_gpu").await;
    let xs: Vec<f64> = (v["points"].as_array().unwrap().iter())
        .map(|p| p["x"].as_f64().unwrap())
        .collect();
    let (_, all) = get_json(&db, "/api/v1/points?y=input_tput_per_gpu&metrics=all").await;
    let want: Vec<f64> = (all["points"].as_array().unwrap().iter())
        .map(|p| p["metrics"]["p99_ttft"].as_f64().unwrap())
        .collect();
    assert_eq!(xs, want);
    // Lower TTFT and higher input throughput both better: the point with the lower TTFT and
    // the higher y is on the frontier, and the frontier knots run over TTFT.
    let knots = v["groups"][0]["frontier"].as_array().unwrap();
    assert!(!knots.is_empty(), "{v}");
    for k in knots {
        assert!(xs.contains(&k[0].as_f64().unwrap()), "{k}");
    }
    // An x asked for is kept; a total or output y keeps median interactivity.
    let (_, v) = get_json(&db, "/api/v1/points?y=input_tput_per_gpu&x=median_intvty").await;
    assert_eq!(v["x"]["key"], "median_intvty");
    for y in [
        "tput_per_gpu",
        "output_tput_per_gpu",
        "usd_per_m_rental_output",
    ] {
        let (_, v) = get_json(&db, &format!("/api/v1/points?y={y}")).await;
        assert_eq!(v["x"]["key"], "median_intvty", "{y}");
    }
    // The exported chart says so on its x axis.
    let (s, _, svg) = get(&db, "/api/v1/chart.svg?y=input_tput_per_gpu").await;
    assert_eq!(s, StatusCode::OK);
    let svg = String::from_utf8(svg).unwrap();
    assert!(svg.contains("TTFT, P99 (s)"), "{svg}");
}

/// Issue 42's comparison: InferenceX shows the price and power a cost or per-MW chart assumes
/// (its badges); `/api/v1/points` carries them per hardware for such a y, as `report`
/// footnotes them, yours when given; absent for other metrics.
#[tokio::test]
async fn a_cost_or_power_y_names_the_prices_and_power_it_assumes() {
    let (_d, db) = seeded();
    for (q, want) in [
        (
            "y=usd_per_m_hyperscaler",
            json!(["h200 $1.41/GPU-hour (hyperscaler)"]),
        ),
        (
            "y=tokens_per_usd_rental",
            json!(["h200 $1.60/GPU-hour (rental)"]),
        ),
        (
            "y=usd_per_m_neocloud_input",
            json!(["h200 $1.74/GPU-hour (neocloud)"]),
        ),
        ("y=tok_s_per_mw", json!(["h200 1.37 kW/GPU all-in"])),
        (
            "y=tok_s_per_mw&gpu_kw=1.5",
            json!(["h200 1.50 kW/GPU (yours)"]),
        ),
        (
            "y=usd_per_m_custom&gpu_hour_cost=2",
            json!(["h200 $2.00/GPU-hour (custom)"]),
        ),
    ] {
        let (s, v) = get_json(&db, &format!("/api/v1/points?{q}")).await;
        assert_eq!(s, StatusCode::OK, "{q}: {v}");
        assert_eq!(v["assumptions"], want, "{q}");
    }
    for q in ["y=tput_per_gpu", "y=input_tput_per_gpu"] {
        let (_, v) = get_json(&db, &format!("/api/v1/points?{q}")).await;
        assert!(v.get("assumptions").is_none(), "{q}: {v}");
    }
}

/// Issue 42's comparison: the exported chart clipped as InferenceX does (above $5/M tokens on
/// a built-in cost y, TTFT above 60 s) while the page drew every point. `clip=true` drops them
/// before the frontier and counts them (`clipped`); the chart exports clip unless
/// `clip=false`; without `clip` the data routes keep every point.
#[tokio::test]
async fn clip_drops_what_inferencex_clips_before_the_frontier() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::clip_db(dir.path());
    let concs = |v: &Value| -> Vec<i64> {
        (v["points"].as_array().unwrap().iter())
            .map(|p| p["conc"].as_i64().unwrap())
            .collect()
    };
    let base = "/api/v1/points?model=clipm&y=usd_per_m_hyperscaler";
    let (_, v) = get_json(&db, base).await;
    assert_eq!(concs(&v), [4, 16, 64]);
    assert!(v.get("clipped").is_none(), "{v}");
    // The $7.22 point was the frontier's best interactivity; clipped, it is on no line.
    assert_eq!(v["points"][0]["frontier"], json!(true), "{v}");
    let (s, v) = get_json(&db, &format!("{base}&clip=true")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(concs(&v), [16, 64]);
    assert_eq!(v["clipped"], json!(1));
    assert_eq!(v["count"], json!(2));
    let knots: Vec<f64> = (v["groups"][0]["frontier"].as_array().unwrap().iter())
        .map(|k| k[0].as_f64().unwrap())
        .collect();
    assert_eq!(knots, [20.0, 50.0]);
    // A TTFT x above 60 s (the input y's default x): the 75 s point.
    let (_, v) = get_json(
        &db,
        "/api/v1/points?model=clipm&y=input_tput_per_gpu&clip=true",
    )
    .await;
    assert_eq!(v["x"]["key"], "p99_ttft");
    assert_eq!(concs(&v), [4, 16]);
    assert_eq!(v["clipped"], json!(1));
    // The CSV takes it too.
    let (_, _, csv) = get(&db, &format!("{base}&clip=true")).await;
    assert!(!csv.is_empty());
    let (_, _, csv) = get(
        &db,
        "/api/v1/points.csv?model=clipm&y=usd_per_m_hyperscaler&clip=true",
    )
    .await;
    assert_eq!(String::from_utf8(csv).unwrap().lines().count(), 3);
    // A bad value is a 400 naming it.
    let (s, v) = get_json(&db, &format!("{base}&clip=maybe")).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"], json!("`clip=maybe`: expected true or false"));
}

/// Fresh tester of issue 39 §5, item 2: under `serve --redact`, notes and errors named stored
/// batches by their relative labels (`no stored point has batch=b1 (stored: …, results/b1,
/// results/b2)`, `… (batch results/b1)`) where every other field showed `(path H)`. Every
/// string of every answer is redacted at the one place answers are serialized: each route's
/// note or error below names no batch but by its shown form.
#[tokio::test]
async fn redacted_notes_and_errors_name_no_stored_batch() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("web.db").display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    // Two batches of one configuration on two servers (their `--set` settings differ).
    let again = dir.path().join("again");
    common::copy_tree_replacing(
        &fixtures(),
        &again,
        &[("\"burstiness\": 1.0", "\"burstiness\": 1.00")],
    );
    for (batch, seqs, from) in [("results/b1", "8", fixtures()), ("results/b2", "16", again)] {
        let mut o = IngestOptions::from_set(&[format!("max_num_seqs={seqs}")]).unwrap();
        o.batch = Some(batch.into());
        assert_eq!(s.ingest_path(&from, &o).unwrap().points, 2);
    }
    drop(s);
    let fetch = |uri: &'static str| {
        let app = router(AppState::new(Store::open_read_only(&db).unwrap()).redacted(true));
        async move {
            let res = app
                .oneshot(Request::get(uri).body(Body::empty()).unwrap())
                .await
                .unwrap();
            let status = res.status();
            let b = res.into_body().collect().await.unwrap().to_bytes();
            (status, String::from_utf8(b.to_vec()).unwrap())
        }
    };
    let (b1, b2) = (
        inferbench_web::redact::batch("results/b1"),
        inferbench_web::redact::batch("results/b2"),
    );
    // A note (200) or an error (400) per route, each naming the stored batches.
    for (uri, status, said) in [
        ("/api/v1/points?batch=b1", StatusCode::OK, "stored:"),
        ("/api/v1/history?at=30&batch=b1", StatusCode::OK, "stored:"),
        ("/api/v1/tco?at=30&batch=b1", StatusCode::OK, "stored:"),
        (
            "/api/v1/compare?a=batch%3Db1&b=batch%3Db2",
            StatusCode::OK,
            "stored:",
        ),
        (
            "/api/v1/compare?a=hw%3Dh200&b=hw%3Dh200",
            StatusCode::BAD_REQUEST,
            "pools batches from 2 servers",
        ),
        ("/api/v1/points.csv?batch=b1", StatusCode::OK, ""),
    ] {
        let (s, body) = fetch(uri).await;
        assert_eq!(s, status, "{uri}: {body}");
        assert!(body.contains(said), "{uri}: {body}");
        assert!(!body.contains("results/b"), "{uri}: {body}");
        if !said.is_empty() {
            assert!(body.contains(&b1) && body.contains(&b2), "{uri}: {body}");
        }
    }
}
