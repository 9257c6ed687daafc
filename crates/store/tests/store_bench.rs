//! Store benchmarks, run by hand (see docs/perf/store.md):
//! `cargo test -p inferbench-store --release --test store_bench -- --ignored --nocapture`.
//! They print timings; they assert only correctness, never speed.

mod common;

use std::time::Instant;

use inferbench_store::{CostOptions, Filter, IngestOptions, Store};

/// 100 artifact directories × 10 000 records (four chunks each) = 1 000 000 records.
fn write_sweep(root: &std::path::Path, points: usize, per_point: usize) -> u64 {
    let fx = common::fixtures().join("sweep-h200/conc4");
    let summary = std::fs::read_to_string(fx.join("summary.json")).unwrap();
    let mut bytes = 0u64;
    let mut jsonl = String::with_capacity(per_point * 600);
    for i in 0..per_point as u64 {
        let s = i * 1_000;
        jsonl.push_str(&format!(
            "{{\"request_id\":{i},\"phase\":\"profile\",\"success\":true,\"scheduled_ns\":{s},\"sent_ns\":{s},\"first_byte_ns\":{},\"first_token_ns\":{},\"first_output_token_ns\":{},\"last_token_ns\":{},\"end_ns\":{},\"chunks\":[{{\"t_ns\":{},\"channel\":\"content\"}},{{\"t_ns\":{},\"channel\":\"content\"}},{{\"t_ns\":{},\"channel\":\"content\"}},{{\"t_ns\":{},\"channel\":\"content\"}}],\"prompt_tokens\":1024,\"prompt_tokens_client\":1024,\"max_tokens\":1024,\"completion_tokens\":1024,\"completion_tokens_source\":\"server\",\"finish_reason\":\"length\"}}\n",
            s + 90_000_000, s + 100_000_000, s + 100_000_000, s + 10_000_000_000, s + 10_000_001_000,
            s + 100_000_000, s + 3_000_000_000, s + 6_000_000_000, s + 10_000_000_000
        ));
    }
    let z = zstd::encode_all(jsonl.as_bytes(), 3).unwrap();
    for k in 0..points {
        let d = root.join(format!("conc{}", k + 1));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("summary.json"),
            summary.replace(
                "\"max_concurrency\": 4",
                &format!("\"max_concurrency\": {}", k + 1),
            ),
        )
        .unwrap();
        std::fs::write(d.join("requests.jsonl.zst"), &z).unwrap();
        bytes += jsonl.len() as u64;
    }
    bytes
}

fn bench_ingest(store: &mut Store, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let raw = write_sweep(dir.path(), 100, 10_000);
    let t = Instant::now();
    let r = store
        .ingest_path(dir.path(), &IngestOptions::default())
        .unwrap();
    let el = t.elapsed();
    assert_eq!(r.requests, 1_000_000);
    assert!(r.skipped.is_empty());
    println!(
        "[{name}] ingest 1,000,000 request records (100 points, {:.0} MB JSONL): {:.2} s ({:.0} records/s)",
        raw as f64 / 1e6,
        el.as_secs_f64(),
        1e6 / el.as_secs_f64()
    );
}

#[test]
#[ignore]
fn bench_ingest_1m_records_sqlite() {
    let (mut s, _d, _) = common::sqlite();
    bench_ingest(&mut s, "sqlite");
}

#[test]
#[ignore]
fn bench_ingest_1m_records_postgres() {
    if let Some((mut s, _)) = common::postgres("bench_ingest") {
        bench_ingest(&mut s, "postgres");
    }
}

/// 100 runs × 1000 points = 100 000 points over 40 groups (8 hardware × 5 frameworks) × 5 TP
/// values × 5 concurrencies × 8 image tags ([`inferbench_store::synthetic::run`]).
fn fill_points(store: &mut Store) {
    for run in 0..100 {
        store
            .ingest_run(&inferbench_store::synthetic::run(run, "dsr1", 1024, 1024))
            .unwrap();
    }
}

fn bench_frontier(store: &mut Store, name: &str) {
    let t = Instant::now();
    fill_points(store);
    println!(
        "[{name}] load 100,000 points: {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let c = CostOptions::default();
    let f = Filter::default();
    let mut best = f64::MAX;
    let mut n = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let fr = store
            .frontier(&f, &c, "median_intvty", "tput_per_gpu")
            .unwrap();
        best = best.min(t.elapsed().as_secs_f64());
        n = fr.len();
    }
    println!("[{name}] frontier over 100,000 points (all groups): {:.1} ms best of 5, {n} frontier points", best * 1e3);
    let mut hw = Filter::default();
    hw.add("hw=h200").unwrap();
    let t = Instant::now();
    let fr = store
        .frontier(&hw, &c, "median_intvty", "tput_per_gpu")
        .unwrap();
    println!(
        "[{name}] frontier, filter hw=h200 (12,500 points): {:.1} ms, {} frontier points",
        t.elapsed().as_secs_f64() * 1e3,
        fr.len()
    );
    let t = Instant::now();
    let all = store.points(&f, &c).unwrap();
    println!(
        "[{name}] full rows of 100,000 points (report without --frontier): {:.0} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(all.len(), 100_000);
}

#[test]
#[ignore]
fn bench_frontier_100k_sqlite() {
    let (mut s, _d, _) = common::sqlite();
    bench_frontier(&mut s, "sqlite");
}

#[test]
#[ignore]
fn bench_frontier_100k_postgres() {
    if let Some((mut s, _)) = common::postgres("bench_frontier") {
        bench_frontier(&mut s, "postgres");
    }
}
