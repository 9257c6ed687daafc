//! Dashboard API benchmark, run by hand (docs/performance.md, "Dashboard API"):
//! `cargo test -p inferbench-web --release --test api_bench -- --ignored --nocapture`
//! (with `INFERBENCH_TEST_PG_URL` set, PostgreSQL too). It prints timings and asserts only
//! correctness, never speed.
//!
//! Database: 100,000 points in 100 runs × 1,000 points; 20 models × 3 sequences; per chart
//! (a model and a sequence) 1,000–2,000 points in 40 groups (8 hardware × 5 frameworks), each
//! with 5 TP × 5 concurrencies per run. One chart = `GET /api/v1/points?model=M&isl=I&osl=O` through the
//! router (query, frontier marking, JSON), timed end to end over 30 requests.

use std::time::Instant;

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use inferbench_store::Store;
use tower::ServiceExt;

const SEQ: [(i64, i64); 3] = [(1024, 1024), (8192, 1024), (1024, 8192)];

/// 100 synthetic runs ([`inferbench_store::synthetic::run`]): run r is model `model{r % 20}` on
/// sequence `SEQ[(r / 20) % 3]`.
fn fill(store: &mut Store) {
    for run in 0..100usize {
        let (isl, osl) = SEQ[(run / 20) % 3];
        store
            .ingest_run(&inferbench_store::synthetic::run(
                run,
                &format!("model{:02}", run % 20),
                isl,
                osl,
            ))
            .unwrap();
    }
}

fn bench(location: &str, name: &str) {
    let mut s = Store::open(location).unwrap();
    s.migrate().unwrap();
    let t = Instant::now();
    fill(&mut s);
    println!(
        "[{name}] load 100,000 points: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    // Where the time goes: the store query, then the JSON.
    let mut f = inferbench_store::Filter::default();
    f.add("model=model00").unwrap();
    f.add("isl=1024").unwrap();
    f.add("osl=1024").unwrap();
    let t = Instant::now();
    let mut rows = s.points(&f, &Default::default()).unwrap();
    let q_ms = t.elapsed().as_secs_f64() * 1e3;
    // What the chart endpoint reads: only x, y and the North-Star x.
    let mut lean = f.clone();
    lean.only_metrics = Some(
        ["median_intvty", "tput_per_gpu", "p90_e2e_norm_intvty"]
            .map(String::from)
            .to_vec(),
    );
    let t = Instant::now();
    let chart_rows = s.points(&lean, &Default::default()).unwrap();
    let lean_ms = t.elapsed().as_secs_f64() * 1e3;
    assert_eq!(chart_rows.len(), rows.len());
    println!("[{name}] store query, every metric {q_ms:.1} ms; chart metrics only {lean_ms:.1} ms");
    let t = Instant::now();
    inferbench_store::query::mark_frontier_with(&mut rows, "median_intvty", "tput_per_gpu", false);
    let m_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let j = inferbench_web::api::PointsAnswer::new(&rows, "median_intvty", "tput_per_gpu", false);
    let body = serde_json::to_vec(&j).unwrap();
    let j_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "[{name}] one chart by parts: store query {q_ms:.1} ms ({} rows), frontier {m_ms:.1} ms, JSON {j_ms:.1} ms ({:.2} MB)",
        rows.len(),
        body.len() as f64 / 1e6
    );
    drop(s);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let app = inferbench_web::router(inferbench_web::AppState::new(
        Store::open_read_only(location).unwrap(),
    ));
    let mut ms = Vec::new();
    let mut bytes = 0;
    let mut points = 0;
    for k in 0..30usize {
        // Charts of 2,000 points: every model on 1024/1024 and 8192/1024 (two runs each).
        let (isl, osl) = SEQ[k % 2];
        let uri = format!(
            "/api/v1/points?model=model{:02}&isl={isl}&osl={osl}",
            k % 20
        );
        let t = Instant::now();
        let body = rt.block_on(async {
            let res = app
                .clone()
                .oneshot(Request::get(&uri).body(Body::empty()).unwrap())
                .await
                .unwrap();
            let ok = res.status().is_success();
            let body = res.into_body().collect().await.unwrap().to_bytes();
            assert!(ok, "{uri}: {}", String::from_utf8_lossy(&body));
            body
        });
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["groups"].as_array().unwrap().len(), 40, "{uri}");
        points = v["count"].as_u64().unwrap();
        bytes = body.len();
    }
    ms.sort_by(f64::total_cmp);
    let pct = |p: f64| ms[((ms.len() as f64 * p).ceil() as usize).saturating_sub(1)];
    println!(
        "[{name}] one chart ({points} points, 40 groups, {:.2} MB JSON): p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms over {} requests",
        bytes as f64 / 1e6,
        pct(0.5),
        pct(0.95),
        ms[ms.len() - 1],
        ms.len()
    );
}

#[test]
#[ignore = "benchmark: run by hand with --release --ignored --nocapture"]
fn bench_one_chart_100k_sqlite() {
    let d = tempfile::tempdir().unwrap();
    bench(&d.path().join("bench.db").display().to_string(), "sqlite");
}

#[test]
#[ignore = "benchmark: run by hand with --release --ignored --nocapture"]
fn bench_one_chart_100k_postgres() {
    let Ok(url) = std::env::var("INFERBENCH_TEST_PG_URL") else {
        eprintln!("skipping: INFERBENCH_TEST_PG_URL not set");
        return;
    };
    let sep = if url.contains('?') { '&' } else { '?' };
    let schema = format!("web_bench_{}", std::process::id());
    bench(&format!("{url}{sep}schema={schema}"), "postgres");
}
