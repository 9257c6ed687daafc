//! Modelled time. The simulated server (`inferbench_sim`) can run `k` modelled seconds per wall
//! second (its time scale), so a sweep takes `1/k` of the time the modelled hardware would. A
//! point measured against it is rewritten in modelled time ([`to_modelled_time`]) so that its
//! records, summary and aggregate describe the simulated hardware, not this machine's clock.

use anyhow::Context as _;
use inferbench_core::record::RequestRecord;
use inferbench_core::summary::{RunSummary, SummaryContext};
use inferbench_loadgen::BenchOptions;

/// Multiplies every timestamp of `r` (ns since the run's start: scheduled, released, sent,
/// first byte/token/output token, last token, end, read end and each chunk's arrival) by `k`,
/// rounded to the nearest ns. Counts, texts and errors are left alone.
pub fn scale_record(r: &mut RequestRecord, k: f64) {
    r.map_times(|t| (t as f64 * k).round() as u64);
}

/// Rewrites a finished point in modelled time, `k` modelled seconds per wall second (the sim's
/// time scale): every record of the point's records file (`opts.save_requests`, read and
/// rewritten one record at a time, the file replaced at the end) goes through
/// [`scale_record`]; the summary is recomputed from those records (so latencies and the
/// duration are `k` times the wall ones, throughputs `1/k`), with the wall summary's start
/// time, its end moved to `start + k × (end − start)`, its counters, client verdicts and
/// server-metric summary, and `opts.metadata`; then `summary.json` and the InferenceX
/// aggregate are rewritten (`inferbench_loadgen::output::write_results`, as the load generator
/// wrote them). Returns the modelled summary and the summary's note (an ITL sample that could
/// not be read back), if any.
///
/// Client-side overheads are scaled too, so they weigh `k` times more than in a real run; at
/// k ≤ 5 that is well under a millisecond.
///
/// Errors: `k` not finite and positive; `opts` without a records file; a records file that
/// cannot be read, or a line that is not a record (named `path:line`); a file that cannot be
/// written.
pub fn to_modelled_time(
    opts: &BenchOptions,
    wall: &RunSummary,
    k: f64,
) -> anyhow::Result<(RunSummary, Option<String>)> {
    anyhow::ensure!(
        k.is_finite() && k > 0.0,
        "time scale {k}: modelled seconds per wall second must be a positive number"
    );
    // The run kept compacted records only (issue 14): the full ones, chunks included, are in
    // its records file.
    let path = opts
        .save_requests
        .as_ref()
        .context("rescaling to modelled time needs the point's records file (save_requests)")?;
    if !path.exists() {
        // Interrupted before any record was written (during prompt preparation): nothing to
        // rescale, and the point keeps its (empty) summary (trial 13 follow-up: the point
        // failed with "requests.jsonl: No such file or directory" and exit 1, not 130).
        return Ok((wall.clone(), None));
    }
    let tmp = path.with_extension("jsonl.modelled");
    let mut kept = inferbench_loadgen::kept::KeptRecords::new(false);
    {
        use std::io::BufRead;
        let input = std::io::BufReader::new(
            std::fs::File::open(path).with_context(|| path.display().to_string())?,
        );
        let mut sink = inferbench_loadgen::output::RecordSink::create(&tmp)?;
        for (i, line) in input.lines().enumerate() {
            let line = line.with_context(|| path.display().to_string())?;
            let mut r: RequestRecord = serde_json::from_str(&line)
                .with_context(|| format!("{}:{}", path.display(), i + 1))?;
            scale_record(&mut r, k);
            sink.write(&r)
                .with_context(|| format!("writing {}", tmp.display()))?;
            kept.push(r);
        }
    }
    std::fs::rename(&tmp, path).with_context(|| path.display().to_string())?;
    let start = wall.benchmark_start_time_unix;
    let ctx = SummaryContext {
        backend: wall.backend.clone(),
        model_id: wall.model_id.clone(),
        tokenizer_id: wall.tokenizer_id.clone(),
        num_prompts: wall.num_prompts,
        burstiness: wall.burstiness,
        max_concurrency: opts.max_concurrency.or(wall.max_concurrency),
        date: wall.date.clone(),
        benchmark_start_time_unix: start,
        benchmark_end_time_unix: match (start, wall.benchmark_end_time_unix) {
            (Some(a), Some(b)) => Some(a + (b - a) * k),
            _ => None,
        },
        interrupted: wall.inferbench.interrupted,
        stop_reason: wall.inferbench.stop_reason,
        requests_not_sent: wall.inferbench.requests_not_sent,
        metadata: opts.metadata.iter().cloned().collect(),
        ..SummaryContext::default()
    };
    let (mut modelled, note) = kept.summarize(&ctx);
    // Clock-free verdicts and counters of the wall-time run (trial 9: summary.json lost them).
    modelled.inferbench.client = wall.inferbench.client.clone();
    modelled.inferbench.server_metrics = wall.inferbench.server_metrics.clone();
    modelled.inferbench.invalid_reason = wall.inferbench.invalid_reason.clone();
    // The server's settings are no clock reading (issue 39 §5: the quickstart's group).
    modelled.inferbench.server = wall.inferbench.server.clone();
    // An adaptive point's early stop (issue 43): how many prompts it used is no clock reading.
    modelled.inferbench.adaptive = wall.inferbench.adaptive;
    modelled.inferbench.adaptive_tolerance = wall.inferbench.adaptive_tolerance;
    modelled.inferbench.prompts_used = wall.inferbench.prompts_used;
    inferbench_loadgen::output::write_results(opts, &modelled, &wall.date)?;
    Ok((modelled, note))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A successful profile request of 10 prompt tokens and one output token per chunk.
    fn rec(id: u64, sent: u64, chunks: &[u64]) -> RequestRecord {
        inferbench_testutil::records::streamed(id, sent, chunks)
    }

    fn metric(s: &RunSummary, name: &str) -> f64 {
        s.metric(name).unwrap_or_else(|| panic!("{name} missing"))
    }

    /// A point interrupted before any record was written (no records file) keeps its summary
    /// instead of failing.
    #[test]
    fn no_records_file_keeps_the_summary() {
        let dir = tempfile::tempdir().unwrap();
        let opts = BenchOptions {
            save_requests: Some(dir.path().join("requests.jsonl")),
            ..BenchOptions::default()
        };
        let wall = inferbench_core::summary::summarize(&[], &SummaryContext::default());
        let (kept, note) = to_modelled_time(&opts, &wall, 4.0).unwrap();
        assert_eq!(kept, wall);
        assert_eq!(note, None);
    }

    /// Timestamps × k exactly, the summary recomputed from them (E2E latency × k, throughput
    /// ÷ k, the window's end moved), and summary.json rewritten with the modelled values.
    #[test]
    fn rewrites_records_and_summary_in_modelled_time() {
        let dir = tempfile::tempdir().unwrap();
        let requests = dir.path().join("requests.jsonl");
        // E2E latencies 3 ms and 6 ms of wall time; the window 0 → 6.5 ms.
        let wall_recs = [
            rec(0, 0, &[1_000_000, 3_000_000]),
            rec(1, 500_000, &[2_500_000, 6_500_000]),
        ];
        let mut text = String::new();
        for r in &wall_recs {
            text.push_str(&serde_json::to_string(r).unwrap());
            text.push('\n');
        }
        std::fs::write(&requests, text).unwrap();
        let opts = BenchOptions {
            max_concurrency: Some(2),
            save_result: true,
            result_dir: Some(dir.path().to_path_buf()),
            result_filename: Some("summary.json".into()),
            save_requests: Some(requests.clone()),
            metadata: vec![("clock".into(), "modelled".into())],
            ..BenchOptions::default()
        };
        let mut kept = inferbench_loadgen::kept::KeptRecords::new(true);
        for r in &wall_recs {
            kept.push(r.clone());
        }
        let (mut wall, _) = kept.summarize(&SummaryContext {
            num_prompts: 2,
            max_concurrency: Some(2),
            benchmark_start_time_unix: Some(100.0),
            benchmark_end_time_unix: Some(100.5),
            ..SummaryContext::default()
        });
        assert_eq!(metric(&wall, "mean_e2el_ms"), 4.5);
        // A point of `sweep --adaptive` keeps what its early stop used (issue 43).
        wall.inferbench.adaptive = true;
        wall.inferbench.adaptive_tolerance = Some(0.02);
        wall.inferbench.prompts_used = Some(2);

        let (modelled, note) = to_modelled_time(&opts, &wall, 4.0).unwrap();
        assert_eq!(note, None);

        let back: Vec<RequestRecord> = std::fs::read_to_string(&requests)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(back.len(), 2);
        assert_eq!(
            (back[1].sent_ns, back[1].first_token_ns, back[1].end_ns),
            (2_000_000, Some(10_000_000), 26_000_000)
        );
        let chunks: Vec<u64> = back[0].chunks.iter().map(|c| c.t_ns).collect();
        assert_eq!(chunks, [4_000_000, 12_000_000]);
        assert!(!dir.path().join("requests.jsonl.modelled").exists());

        // E2E 12 ms and 24 ms: mean 18; TTFT 4 ms and 8 ms: mean 6; the window 26 ms, so
        // 24 tokens (2 × 10 in, 2 × 2 out) / 0.026 s.
        assert_eq!(metric(&modelled, "mean_e2el_ms"), 18.0);
        assert_eq!(metric(&modelled, "mean_ttft_ms"), 6.0);
        assert!(
            (modelled.duration - 0.026).abs() < 1e-12,
            "{}",
            modelled.duration
        );
        assert!(
            (modelled.total_token_throughput - 24.0 / 0.026).abs() < 1e-9,
            "{}",
            modelled.total_token_throughput
        );
        assert_eq!(modelled.benchmark_end_time_unix, Some(102.0));
        assert_eq!(modelled.max_concurrency, Some(2));
        let on_disk = std::fs::read_to_string(dir.path().join("summary.json")).unwrap();
        assert!(on_disk.contains("\"mean_e2el_ms\": 18.0"), "{on_disk}");
        assert!(on_disk.contains("\"clock\": \"modelled\""), "{on_disk}");
        assert!(on_disk.contains("\"prompts_used\": 2"), "{on_disk}");
        assert!(modelled.inferbench.adaptive);
        assert_eq!(modelled.inferbench.adaptive_tolerance, Some(0.02));

        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let e = to_modelled_time(&opts, &wall, bad).unwrap_err().to_string();
            assert!(e.contains("must be a positive number"), "{e}");
        }
    }
}
