//! Memory a run keeps per finished request (issue 14: ≤ 1 KiB at 1M requests of 256 tokens),
//! and the time of the exact summary over them (docs/performance.md).
//!
//! `cargo run --release -p inferbench-loadgen --example kept_memory -- [RECORDS] [TOKENS] [full]`
//! Defaults: 1000000 records of 256 one-token chunks, each with ~4 bytes of text per token as
//! the client keeps them, pushed one at a time into `KeptRecords` as bench's collector does
//! (compacted; `full` keeps them whole, as `--save-detailed` does). Prints the resident set
//! growth per record, the ITL sample's size and whether it spilled, and the summary's time.

use inferbench_core::record::{Channel, ChunkRecord, RequestRecord};
use inferbench_core::summary::SummaryContext;
use inferbench_loadgen::kept::KeptRecords;
use inferbench_loadgen::selftest::process_rss_kib;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u64 = args
        .first()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let tokens: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(256);
    let full = args.get(2).is_some_and(|a| a == "full");
    const US: u64 = 1_000;
    let rss0 = process_rss_kib().unwrap_or(0);
    let mut kept = KeptRecords::new(full);
    let t0 = Instant::now();
    let mut peak_record = 0usize;
    for i in 0..n {
        let sent = i * 100 * US;
        let first = sent + 500 * US + (i % 97) * US;
        let chunks: Vec<ChunkRecord> = (0..tokens)
            .map(|j| ChunkRecord {
                t_ns: first + j * (3 * US + (i + j) % 7 * 100),
                channel: Channel::Content,
                tokens: None,
            })
            .collect();
        let rec = RequestRecord {
            request_id: i,
            scheduled_ns: sent,
            sent_ns: sent,
            first_byte_ns: Some(first),
            first_token_ns: Some(first),
            first_output_token_ns: Some(first),
            last_token_ns: chunks.last().map(|c| c.t_ns),
            end_ns: chunks.last().map_or(first, |c| c.t_ns) + US,
            read_end_ns: chunks.last().map(|c| c.t_ns + 2 * US),
            completion_tokens: tokens as u32,
            prompt_tokens: 32,
            prompt_tokens_client: 32,
            max_tokens: Some(tokens as u32),
            finish_reason: Some("length".into()),
            output_text: " tok".repeat(tokens as usize),
            success: true,
            chunks,
            ..RequestRecord::default()
        };
        peak_record = peak_record.max(rec.chunks.capacity() * 24 + rec.output_text.capacity());
        kept.push(rec);
    }
    let push_s = t0.elapsed().as_secs_f64();
    let rss1 = process_rss_kib().unwrap_or(0);
    let t1 = Instant::now();
    let (s, note) = kept.summarize(&SummaryContext::default());
    let summary_s = t1.elapsed().as_secs_f64();
    let per = (rss1.saturating_sub(rss0) as f64 * 1024.0) / n as f64;
    println!(
        "records {n} × {tokens} tokens ({}): RSS {rss0} → {rss1} KiB = {per:.0} B per finished \
         request (a full record's chunks and text: {peak_record} B); push {push_s:.2} s; ITL \
         sample {} values, spilled {}; summary {summary_s:.2} s; p99 ITL {:.4} ms, mean {:.4} \
         ms{}",
        if full { "full" } else { "compacted" },
        kept.itl().len(),
        kept.itl().spilled(),
        s.inferbench.itl_ms.at(99.0).unwrap_or(f64::NAN),
        s.inferbench.itl_ms.mean,
        note.map_or(String::new(), |n| format!("; {n}"))
    );
}
