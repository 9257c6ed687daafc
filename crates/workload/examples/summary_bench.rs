//! Measures `inferbench_core::summary::summarize` on synthetic records (docs/perf/workload.md).
//!
//! `cargo run --release -p inferbench-workload --example summary_bench -- [RECORDS] [CHUNKS]`
//! Defaults: 100000 records of 256 chunks each. With a third argument DIR, also writes
//! `DIR/<RESULT_FILENAME>.json` (the summary) and, from the InferenceX environment contract
//! (`JobIdentity::from_env`), `DIR/agg_<RESULT_FILENAME>.json` — for cross-checking against
//! InferenceX's own `utils/process_result.py`.

use inferbench_core::record::{Channel, ChunkRecord, RequestRecord};
use inferbench_core::summary::{inferencex_aggregate, summarize, JobIdentity, SummaryContext};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let chunks: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(256);
    const MS: u64 = 1_000_000;
    let recs: Vec<RequestRecord> = (0..n)
        .map(|i| {
            let sent = i * MS;
            let first = sent + 50 * MS + (i % 97) * MS;
            let gaps: Vec<u64> = (0..chunks)
                .map(|j| first + j * (10 * MS + (i + j) % 7 * MS))
                .collect();
            RequestRecord {
                request_id: i,
                scheduled_ns: sent,
                sent_ns: sent,
                first_token_ns: Some(first),
                first_output_token_ns: Some(first),
                last_token_ns: gaps.last().copied(),
                end_ns: gaps.last().copied().unwrap_or(first) + MS,
                completion_tokens: chunks as u32,
                prompt_tokens: 8192,
                prompt_tokens_client: 8192,
                success: i % 50 != 0,
                chunks: gaps
                    .into_iter()
                    .map(|t| ChunkRecord {
                        t_ns: t,
                        channel: Channel::Content,
                        tokens: None,
                    })
                    .collect(),
                ..Default::default()
            }
        })
        .collect();
    let ctx = SummaryContext {
        max_concurrency: Some(64),
        num_prompts: n,
        ..Default::default()
    };
    let t = Instant::now();
    let s = summarize(&recs, &ctx);
    let dt = t.elapsed().as_secs_f64();
    let t2 = Instant::now();
    let json = serde_json::to_string(&s).unwrap();
    let dt2 = t2.elapsed().as_secs_f64();
    println!(
        "records={n} chunks_per_record={chunks} itl_values={} summarize_s={dt:.3} to_json_s={dt2:.3} json_bytes={}",
        s.inferbench.itl_ms.count,
        json.len()
    );
    if let Some(dir) = args.get(2) {
        let id = JobIdentity::from_env().expect("InferenceX environment");
        let dir = std::path::Path::new(dir);
        std::fs::write(dir.join(format!("{}.json", id.result_filename)), &json).unwrap();
        let agg = inferencex_aggregate(&s, &id).expect("aggregate");
        std::fs::write(
            dir.join(id.aggregate_file_name()),
            serde_json::to_string_pretty(&agg).unwrap(),
        )
        .unwrap();
    }
}
