//! Issue 11: anomaly codes reach the store. The per-request `anomalies` list round-trips
//! through the stored `requests.jsonl.zst` blob, and the summary's per-code counts
//! (`inferbench.anomalies.<code>`, with `anomalous_requests` / `anomaly_rate` and the warmup
//! failure counts) land in the point's metrics where summary extras go.

mod common;

use inferbench_core::anomaly::detect;
use inferbench_core::summary::{summarize, SummaryContext};
use inferbench_core::{Anomaly, Channel, ChunkRecord, ErrorClass, Phase, RequestRecord};
use inferbench_store::{CostOptions, Filter, IngestOptions, Overrides};

fn rec(id: u64, completion: u32, prompt: u32) -> RequestRecord {
    let mut r = RequestRecord {
        request_id: id,
        success: true,
        sent_ns: 0,
        first_token_ns: Some(10_000_000),
        first_output_token_ns: Some(10_000_000),
        last_token_ns: Some(30_000_000),
        end_ns: 31_000_000,
        prompt_tokens: prompt,
        prompt_tokens_client: 120,
        max_tokens: Some(4),
        completion_tokens: completion,
        chunks: [10, 20, 30]
            .iter()
            .map(|ms| ChunkRecord {
                t_ns: ms * 1_000_000,
                channel: Channel::Content,
                tokens: None,
            })
            .collect(),
        ..Default::default()
    };
    r.anomalies = detect(&r, false);
    r
}

fn records() -> Vec<RequestRecord> {
    let mut warm = RequestRecord {
        phase: Phase::Warmup,
        success: false,
        error_class: Some(ErrorClass::Connect),
        error: Some("refused".into()),
        ..Default::default()
    };
    warm.anomalies = detect(&warm, false);
    vec![
        rec(0, 19_503, 120), // usage_exceeds_max_tokens
        rec(1, 0, 365),      // usage_below_stream + isl_mismatch
        rec(2, 3, 120),      // none
        warm,
    ]
}

#[test]
fn anomalies_round_trip_through_the_store() {
    let recs = records();
    assert_eq!(recs[0].anomalies, vec![Anomaly::UsageExceedsMaxTokens]);
    assert_eq!(
        recs[1].anomalies,
        vec![Anomaly::UsageBelowStream, Anomaly::IslMismatch]
    );
    let ctx = SummaryContext {
        model_id: "m".into(),
        num_prompts: 3,
        max_concurrency: Some(4),
        date: "20260301-120000".into(),
        benchmark_start_time_unix: Some(1_772_366_400.0),
        benchmark_end_time_unix: Some(1_772_366_401.0),
        ..Default::default()
    };
    let summary = summarize(&recs, &ctx);

    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("batch/conc4");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("summary.json"),
        serde_json::to_vec_pretty(&summary).unwrap(),
    )
    .unwrap();
    let mut jsonl = Vec::new();
    for r in &recs {
        serde_json::to_writer(&mut jsonl, r).unwrap();
        jsonl.push(b'\n');
    }
    std::fs::write(
        dir.join("requests.jsonl.zst"),
        zstd::encode_all(&jsonl[..], 3).unwrap(),
    )
    .unwrap();

    // parse: the per-code counts are point metrics
    let run = inferbench_store::parse::parse_dir(&dir, &Overrides::default()).unwrap();
    let m = &run.points[0].metrics;
    assert_eq!(m["inferbench.anomalies.usage_exceeds_max_tokens"], 1.0);
    assert_eq!(m["inferbench.anomalies.usage_below_stream"], 1.0);
    assert_eq!(m["inferbench.anomalies.isl_mismatch"], 1.0);
    assert_eq!(m["inferbench.anomalies.osl_mismatch"], 0.0);
    assert_eq!(m["inferbench.anomalous_requests"], 2.0);
    assert_eq!(m["inferbench.anomaly_rate"], 2.0 / 3.0);
    assert_eq!(m["inferbench.warmup_failed"], 1.0);
    assert_eq!(m["inferbench.warmup_errors_by_class.connect"], 1.0);

    // ingest into SQLite, read the stored metrics and the stored blob back
    let (mut store, db_dir, url) = common::sqlite();
    let report = store
        .ingest_path(root.path(), &IngestOptions::default())
        .unwrap();
    assert_eq!(report.points, 1, "{report:?}");
    assert_eq!(report.requests, 4);
    let f = Filter {
        all_metrics: true,
        ..Filter::default()
    };
    let rows = store.points(&f, &CostOptions::default()).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0].get("inferbench.anomalies.usage_exceeds_max_tokens"),
        Some(1.0)
    );
    assert_eq!(rows[0].get("inferbench.anomalous_requests"), Some(2.0));
    // Issue 40's achieved ISL (server prompt tokens 120, 365, 120; the warmup left out) under
    // its registry names: median 120, P90 = 120 + 0.8 · 245 = 316, mean 605 / 3.
    assert_eq!(rows[0].get("median_achieved_isl"), Some(120.0));
    assert_eq!(rows[0].get("p90_achieved_isl"), Some(316.0));
    assert_eq!(rows[0].get("mean_achieved_isl"), Some(605.0 / 3.0));
    drop(store);
    let conn = rusqlite::Connection::open(&url).unwrap();
    let blob: Vec<u8> = conn
        .query_row("SELECT jsonl_zst FROM requests", [], |r| r.get(0))
        .unwrap();
    let back: Vec<RequestRecord> = zstd::decode_all(&blob[..])
        .unwrap()
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(back, recs);
    assert_eq!(back[1].anomalies, recs[1].anomalies);
    drop(db_dir);
}
