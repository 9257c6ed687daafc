//! `run_bench` end to end against the in-process replay server: counts, concurrency held,
//! pacing, warmup exclusion, records streamed to JSONL, result and aggregate files, a dead
//! server, cancellation and the error-rate gate.

mod common;

use common::{prepared, stream_case};
use std::sync::Arc;
use std::time::Duration;

use inferbench_core::summary::JobIdentity;
use inferbench_core::{Phase, RequestRecord};
use inferbench_loadgen::{
    run_bench, BenchOptions, BenchPrompt, CancellationToken, PreparedPrompts, ProgressMode,
};
use inferbench_testutil::replay::{spawn_replay, ReplayCase, ReplayEnd};

fn opts(base_url: String) -> BenchOptions {
    BenchOptions {
        base_url,
        model: "replay-model".into(),
        progress: ProgressMode::Off,
        prepared: Some(prepared(8, 2, 4)),
        // The replay servers answer every request, /metrics included, with their recorded
        // stream: no Prometheus there (bench_sim.rs tests the scraper against the sim).
        server_metrics: false,
        ..Default::default()
    }
}

/// Largest number of requests in flight at once, from [sent, end] intervals.
fn max_in_flight(recs: &[&RequestRecord]) -> usize {
    let mut ev: Vec<(u64, i32)> = recs
        .iter()
        .flat_map(|r| [(r.sent_ns, 1), (r.end_ns, -1)])
        .collect();
    ev.sort_by_key(|&(t, d)| (t, d));
    let (mut cur, mut max) = (0i32, 0i32);
    for (_, d) in ev {
        cur += d;
        max = max.max(cur);
    }
    max as usize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_holds_concurrency_and_writes_everything() {
    let addr = spawn_replay(stream_case(3)).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("req/requests.jsonl");
    let id = JobIdentity::from_lookup(|k| {
        Some(
            match k {
                "RUNNER_TYPE" => "cpu",
                "FRAMEWORK" => "replay",
                "PRECISION" => "fp8",
                "SPEC_DECODING" => "none",
                "RESULT_FILENAME" => "point1",
                "ISL" => "2",
                "OSL" => "4",
                "DISAGG" => "false",
                "MODEL_PREFIX" => "replay",
                "IMAGE" => "none",
                "TP" => "2",
                "EP_SIZE" => "1",
                "DP_ATTENTION" => "false",
                _ => return None,
            }
            .to_string(),
        )
    })
    .unwrap();
    let o = BenchOptions {
        max_concurrency: Some(4),
        num_prompts: Some(24),
        save_result: true,
        save_detailed: true,
        result_dir: Some(dir.path().to_path_buf()),
        result_filename: Some("result.json".into()),
        save_requests: Some(jsonl.clone()),
        job_identity: Some(id),
        ..opts(format!("http://{addr}"))
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    assert!(!out.interrupted);
    let warm: Vec<_> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Warmup)
        .collect();
    let prof: Vec<_> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .collect();
    assert_eq!(warm.len(), 8, "default warmups = 2 × conc");
    assert_eq!(prof.len(), 24);
    assert!(out.records.iter().all(|r| r.success), "{:#?}", out.records);
    assert_eq!(max_in_flight(&prof), 4);
    // Warmups all use the first prompt; profile prompts cycle through the 8.
    let mut ids: Vec<u64> = prof.iter().map(|r| r.request_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..24).collect::<Vec<_>>());
    let s = &out.summary;
    assert_eq!(s.completed, 24);
    assert_eq!(s.total_output_tokens, 24 * 4);
    assert_eq!(s.total_input_tokens, 24 * 2);
    assert_eq!(s.max_concurrency, Some(4));
    assert_eq!(s.inferbench.warmups, 8);
    // TTFT ≈ 10 ms, TPOT ≈ 10 ms by construction of the stream.
    let ttft = s.metric("mean_ttft_ms").unwrap();
    let tpot = s.metric("mean_tpot_ms").unwrap();
    assert!((8.0..40.0).contains(&ttft), "ttft {ttft}");
    assert!((8.0..25.0).contains(&tpot), "tpot {tpot}");
    // Records file: one line per record, in completion order, parseable, no key.
    let text = std::fs::read_to_string(&jsonl).unwrap();
    assert_eq!(text.lines().count(), 32);
    for line in text.lines() {
        let r: RequestRecord = serde_json::from_str(line).unwrap();
        assert!(r.released_ns.is_some());
    }
    // Result JSON has vLLM's keys; aggregate has InferenceX's.
    let res: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("result.json")).unwrap())
            .unwrap();
    for k in [
        "completed",
        "total_input_tokens",
        "total_output_tokens",
        "request_throughput",
        "output_throughput",
        "total_token_throughput",
        "mean_ttft_ms",
        "p99_tpot_ms",
        "p99.9_itl_ms",
        "median_e2el_ms",
        "max_concurrency",
        "duration",
        "ttfts",
        "itls",
        "generated_texts",
        "errors",
        "input_lens",
        "output_lens",
    ] {
        assert!(res.get(k).is_some(), "result lacks {k}");
    }
    assert_eq!(res["request_rate"], "inf");
    assert_eq!(res["generated_texts"][0], "abcd");
    let agg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("agg_point1.json")).unwrap())
            .unwrap();
    assert_eq!(agg["conc"], 4);
    assert_eq!(agg["tp"], 2);
    let tput = agg["tput_per_gpu"].as_f64().unwrap();
    assert!((tput - s.total_token_throughput / 2.0).abs() < 1e-9);
}

/// DESIGN.md §4: in closed loop a request is scheduled when its slot became free, so its
/// client queue time is the client's own delay, not the time since the run started. One
/// slot, requests of 4 tokens 10 ms apart: request i is scheduled after request i−1 ended and
/// no later than it was released and sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_schedules_each_request_when_its_slot_became_free() {
    let addr = spawn_replay(stream_case(3)).await.unwrap();
    let o = BenchOptions {
        max_concurrency: Some(1),
        num_prompts: Some(5),
        num_warmups: Some(2),
        ..opts(format!("http://{addr}"))
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    for phase in [Phase::Warmup, Phase::Profile] {
        let mut recs: Vec<&RequestRecord> =
            out.records.iter().filter(|r| r.phase == phase).collect();
        recs.sort_by_key(|r| r.request_id);
        for (i, r) in recs.iter().enumerate() {
            let released = r.released_ns.unwrap();
            assert!(r.scheduled_ns <= released && released <= r.sent_ns, "{r:?}");
            if i > 0 {
                // The slot was freed when the previous request's task ended.
                assert!(
                    r.scheduled_ns >= recs[i - 1].end_ns,
                    "{:?}\n{r:?}",
                    recs[i - 1]
                );
            }
        }
        // The first request of each phase is scheduled at the phase start, before any
        // request of the phase was sent.
        assert!(recs[0].scheduled_ns <= recs.iter().map(|r| r.sent_ns).min().unwrap());
    }
    // The summary's queue time is sent − that moment, per request.
    let prof: Vec<&RequestRecord> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .collect();
    assert_eq!(
        out.summary.inferbench.client_queue_ms.max,
        prof.iter().map(|r| r.queue_ms()).fold(0.0, f64::max)
    );
}

/// Issue 14: a closed loop reaches its cap in the time its first sends take. Every worker
/// sends its first request before any worker reads a response (the start gate), and the
/// connections were opened before the phase's clock started: the first `cap` requests are all
/// sent before any request of the phase has been read to its end, also on an instant server
/// whose responses are ready before the later workers have sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn closed_loop_sends_every_first_request_before_reading_any() {
    let mut case = stream_case(3);
    for c in &mut case.chunks {
        c.0 = Duration::ZERO;
    }
    let (addr, accepted) = inferbench_testutil::replay::spawn_replay_counted(case)
        .await
        .unwrap();
    let cap = 64;
    let o = BenchOptions {
        max_concurrency: Some(cap),
        num_prompts: Some(2 * u64::from(cap)),
        num_warmups: Some(0),
        ..opts(format!("http://{addr}"))
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    let mut prof: Vec<&RequestRecord> = out.records.iter().collect();
    assert_eq!(prof.len(), 2 * cap as usize);
    prof.sort_by_key(|r| r.request_id);
    let last_first_send = prof[..cap as usize]
        .iter()
        .map(|r| r.sent_ns)
        .max()
        .unwrap();
    let first_read = prof.iter().filter_map(|r| r.read_end_ns).min().unwrap();
    assert!(
        last_first_send <= first_read,
        "{last_first_send} > {first_read}"
    );
    // The replay server closes nothing: the 64 pre-opened connections carried the first
    // requests, and probation (nothing quiet for 200 ms yet) gave the second ones new ones,
    // opened beside the workers as spares (`keep_spares`: up to `cap` more, replacing each
    // one taken, whether or not a request still needs it).
    let n = accepted.load(std::sync::atomic::Ordering::Relaxed) as usize;
    assert!(
        (cap as usize..=3 * cap as usize).contains(&n),
        "{n} connections"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paced_arrivals_follow_absolute_deadlines() {
    let addr = spawn_replay(stream_case(3)).await.unwrap();
    let o = BenchOptions {
        request_rate: Some(100.0),
        num_prompts: Some(30),
        num_warmups: Some(0),
        seed: 7,
        ..opts(format!("http://{addr}"))
    };
    let out = run_bench(o.clone(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.end, inferbench_loadgen::RunEnd::Passed);
    let mut prof: Vec<_> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .collect();
    prof.sort_by_key(|r| r.request_id);
    assert_eq!(prof.len(), 30);
    // Same seed → same schedule offsets (relative to the first arrival).
    let offsets = |recs: &[&RequestRecord]| -> Vec<u64> {
        recs.iter()
            .map(|r| r.scheduled_ns - recs[0].scheduled_ns)
            .collect()
    };
    let again = run_bench(o, CancellationToken::new()).await.unwrap();
    let mut prof2: Vec<_> = again
        .records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .collect();
    prof2.sort_by_key(|r| r.request_id);
    assert_eq!(offsets(&prof), offsets(&prof2));
    for r in &prof {
        let lag_ms = (r.released_ns.unwrap() - r.scheduled_ns) as f64 / 1e6;
        assert!(lag_ms < 20.0, "schedule lag {lag_ms} ms");
        assert!(r.sent_ns >= r.released_ns.unwrap());
    }
    assert!(out.summary.inferbench.schedule_lag_ms.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_server_gives_partial_results_and_a_clear_message() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let o = BenchOptions {
        max_concurrency: Some(2),
        num_prompts: Some(1000),
        save_result: true,
        result_dir: Some(dir.path().to_path_buf()),
        result_filename: Some("r.json".into()),
        ..opts(format!("http://127.0.0.1:{port}"))
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(out.end, inferbench_loadgen::RunEnd::Unreachable);
    assert!(out.interrupted);
    // The verdict is typed, its note one of the notes (the runner acts on the kind).
    let verdict = out.verdict.clone().unwrap();
    assert_eq!(
        verdict.kind,
        inferbench_loadgen::VerdictKind::ServerUnreachable
    );
    assert!(out.notes.contains(&verdict.note), "{:?}", out.notes);
    let note = out.notes.join("\n");
    assert!(
        note.contains("unreachable") && note.contains(&port.to_string()),
        "{note}"
    );
    // Stopped early (the breaker), not after 1000 failures; the result file still exists.
    assert!(out.records.len() < 100, "{}", out.records.len());
    assert!(dir.path().join("r.json").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_saves_finished_records_and_marks_interrupted() {
    let mut slow = stream_case(3);
    slow.chunks[1].0 = Duration::from_millis(300);
    let addr = spawn_replay(slow).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("r.jsonl");
    let o = BenchOptions {
        max_concurrency: Some(2),
        num_prompts: Some(100),
        num_warmups: Some(0),
        save_requests: Some(jsonl.clone()),
        ..opts(format!("http://{addr}"))
    };
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        c2.cancel();
    });
    let t0 = std::time::Instant::now();
    let out = run_bench(o, cancel).await.unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert_eq!(out.end, inferbench_loadgen::RunEnd::Interrupted);
    assert!(out.interrupted && out.summary.inferbench.interrupted);
    assert!(out.summary.completed >= 2, "{}", out.summary.completed);
    assert!(out
        .records
        .iter()
        .any(|r| r.error_class == Some(inferbench_core::ErrorClass::Cancelled)));
    let lines = std::fs::read_to_string(&jsonl).unwrap().lines().count();
    assert_eq!(lines, out.records.len());
}

/// Ctrl-C after the dispatcher sent the last request (no concurrency cap: every request is
/// in flight at once) still ends the run as interrupted (130), not as "nothing measured" (1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_after_the_last_dispatch_is_still_an_interruption() {
    let mut slow = stream_case(3);
    slow.chunks[1].0 = Duration::from_millis(2000);
    let addr = spawn_replay(slow).await.unwrap();
    // Uncapped, and capped at the number of prompts (all in flight at once as well).
    for cap in [None, Some(8)] {
        let o = BenchOptions {
            max_concurrency: cap,
            num_prompts: Some(8),
            num_warmups: Some(0),
            ..opts(format!("http://{addr}"))
        };
        let cancel = CancellationToken::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            c2.cancel();
        });
        let out = run_bench(o, cancel).await.unwrap();
        assert_eq!(out.end, inferbench_loadgen::RunEnd::Interrupted);
        assert!(out.interrupted && out.summary.inferbench.interrupted);
        assert_eq!(out.summary.completed, 0);
        assert_eq!(out.summary.inferbench.cancelled_by_user, 8);
        // One status (issue 39, fresh tester's finding 1): nothing measured, so failed, its
        // cause the summary's `failed_reason` by the rule the store reads it with, and no
        // invalid reason.
        assert_eq!(
            out.summary.inferbench.failed_reason.as_deref(),
            Some(inferbench_core::summary::INTERRUPTED_BEFORE_ANY),
            "{cap:?}"
        );
        assert_eq!(out.summary.inferbench.invalid_reason, None, "{cap:?}");
        // Nothing finished, nothing for the client self-check to judge (trial 32 F12: the
        // saved held ratio of such a run read 0.33, the ramp of its one burst of sends).
        assert_eq!(out.summary.inferbench.client, None, "{cap:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_rate_gate_sets_exit_code() {
    let bad = ReplayCase {
        status: 503,
        headers: vec![("Content-Type".into(), "application/json".into())],
        chunks: vec![(Duration::ZERO, b"{\"error\":\"busy\"}".to_vec())],
        end: ReplayEnd::Close,
    };
    let addr = spawn_replay(bad.clone()).await.unwrap();
    let o = BenchOptions {
        max_concurrency: Some(2),
        num_prompts: Some(6),
        // No warmup: with every warmup failing the profile would not run (next test).
        num_warmups: Some(0),
        ..opts(format!("http://{addr}"))
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(out.end, inferbench_loadgen::RunEnd::GateFailed);
    assert_eq!(out.summary.completed, 0);
    assert_eq!(
        out.summary.inferbench.errors_by_class.get("http_status"),
        Some(&6)
    );
    // A point that measured nothing is failed, not invalid (issue 39 §9): its cause is
    // `failed_reason`, which the store keeps as the point's error.
    assert_eq!(
        out.summary.inferbench.failed_reason.as_deref(),
        Some("nothing was measured: none of the 6 profile requests succeeded (6 failed)")
    );
    assert_eq!(out.summary.inferbench.invalid_reason, None);

    // Every warmup failed (a wrong model name answers 404 the same way): the profile is not
    // sent at all, as vLLM's and InferenceX's "initial test run failed" (break test: the run
    // went on and sent 32k failing requests in 3 s).
    let addr = spawn_replay(bad).await.unwrap();
    let o = BenchOptions {
        max_concurrency: Some(2),
        num_prompts: Some(1000),
        ..opts(format!("http://{addr}"))
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(out.end, inferbench_loadgen::RunEnd::GateFailed);
    assert_eq!(out.summary.inferbench.stop_reason.as_str(), "aborted");
    assert_eq!(out.records.len(), 4, "the 4 warmups only");
    assert_eq!(out.summary.inferbench.warmup_failed, 4);
    assert_eq!(out.summary.inferbench.requests_not_sent, 1000);
    assert_eq!(
        out.verdict.as_ref().map(|v| v.kind),
        Some(inferbench_loadgen::VerdictKind::WarmupsFailed)
    );
    assert!(
        out.notes.iter().any(|n| n.starts_with(
            "every warmup request failed (4 of 4; first: HTTP 503 Service Unavailable: {\"error\":\"busy\"}): the profile was not run"
        )),
        "{:?}",
        out.notes
    );

    // A proxy's HTML error page (trial 16: printed whole, over many lines) is one line of at
    // most 200 characters in the note, and in the summary's error line.
    let page = format!(
        "<html>\n<head><title>502 Bad Gateway</title></head>\n<body>\n{}\n</body>\n</html>\n",
        "<p>upstream gone</p>\n".repeat(40)
    );
    let html = ReplayCase {
        status: 502,
        headers: vec![("Content-Type".into(), "text/html".into())],
        chunks: vec![(Duration::ZERO, page.into_bytes())],
        end: ReplayEnd::Close,
    };
    let addr = spawn_replay(html).await.unwrap();
    let o = BenchOptions {
        max_concurrency: Some(2),
        num_prompts: Some(10),
        ..opts(format!("http://{addr}"))
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    let note = (out.notes.iter())
        .find(|n| n.starts_with("every warmup request failed"))
        .expect("the warmup note");
    assert!(!note.contains('\n'), "{note}");
    assert!(
        note.contains(
            "first: HTTP 502 Bad Gateway: <html> <head><title>502 Bad Gateway</title></head> \
             <body> <p>upstream gone</p> <p>upstream gone</p>"
        ),
        "{note}"
    );
    assert!(note.contains("…): the profile was not run"), "{note}");
    for line in inferbench_loadgen::output::error_notes(&out.summary, &[]) {
        assert!(!line.contains('\n') && !line.contains("\\n"), "{line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_mode_cycles_prompts_until_the_deadline() {
    let addr = spawn_replay(stream_case(3)).await.unwrap();
    let o = BenchOptions {
        max_concurrency: Some(2),
        num_warmups: Some(0),
        duration: Some(Duration::from_millis(400)),
        ..opts(format!("http://{addr}"))
    };
    let t0 = std::time::Instant::now();
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    let el = t0.elapsed();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    // ~40 ms per request, 2 at a time, 400 ms: about 20 requests, all finished, none cut off.
    let n = out.summary.completed;
    assert!((10..=24).contains(&n), "{n}");
    assert!(el < Duration::from_millis(700), "{el:?}");
    assert!(out.records.iter().all(|r| r.success));
    // num_prompts counts what the time allowed, not the prompts prepared (break test: 30
    // reported where 24 were measured).
    assert_eq!(out.summary.num_prompts, out.records.len() as u64);
    assert_eq!(out.summary.failure_rate_vs_requested(), 0.0);
}

/// A server that dies mid-run: the requests it was streaming end as `stream_error` after the
/// first connect failures, which used to reset the connect streak, so a run of 100 ended as
/// completed with 76 connect failures and exit 1 (break test). The breaker now latches: the
/// run stops within a streak's worth of failures and says the server is unreachable (exit 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_dying_mid_run_stops_it_as_unreachable() {
    let sim = inferbench_sim::spawn(inferbench_sim::SimConfig {
        served_model_name: Some("m".into()),
        ..Default::default()
    })
    .expect("sim starts");
    let o = BenchOptions {
        max_concurrency: Some(8),
        num_prompts: Some(100),
        num_warmups: Some(0),
        model: "m".into(),
        // 100-token streams: the 100 requests take far longer than the 1.5 s before the kill.
        prepared: Some(Arc::new(PreparedPrompts {
            prompts: prepared(8, 2, 4)
                .prompts
                .iter()
                .cloned()
                .map(|p| BenchPrompt {
                    max_tokens: Some(100),
                    ..p
                })
                .collect(),
            tokenizer_id: "test".into(),
            counter: None,
        })),
        ..opts(sim.base_url())
    };
    let run = tokio::spawn(run_bench(o, CancellationToken::new()));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    sim.shutdown();
    let out = run.await.unwrap().unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Unreachable,
        "{:?}",
        out.notes
    );
    let connect = out
        .records
        .iter()
        .filter(|r| r.error_class == Some(inferbench_core::ErrorClass::Connect))
        .count();
    assert!((32..=48).contains(&connect), "{connect} connect failures");
    assert!(out.records.len() < 100, "{}", out.records.len());
}

/// Trial 32 F10: a port that accepts connections and drops them at once stops the run as
/// unreachable (nothing usable answered), but the note says something listens there instead
/// of asking whether the server is listening; a refused port keeps that question.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_that_accepts_and_drops_is_named_so() {
    // The run's notes against `addr`, which must end as unreachable.
    async fn notes_of(addr: std::net::SocketAddr) -> String {
        let o = BenchOptions {
            max_concurrency: Some(4),
            num_prompts: Some(8),
            num_warmups: Some(4),
            ..opts(format!("http://{addr}"))
        };
        let out = run_bench(o, CancellationToken::new()).await.unwrap();
        assert_eq!(out.end, inferbench_loadgen::RunEnd::Unreachable);
        out.notes.join("\n")
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            drop(s);
        }
    });
    let notes = notes_of(addr).await;
    assert!(
        notes.contains("the connection was accepted, then failed before any response byte from")
            && notes
                .contains("something listens there but drops connections without an HTTP answer"),
        "{notes}"
    );
    assert!(!notes.contains("is the server running"), "{notes}");

    // Nothing listening: refused, and the question stays.
    let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = free.local_addr().unwrap();
    drop(free);
    let notes = notes_of(addr).await;
    assert!(
        notes.contains("is the server running and listening there?"),
        "{notes}"
    );
    assert!(!notes.contains("accepted"), "{notes}");
}

/// Trial 33 F7: a non-HTTP answer on a connection opened ahead of the run (never used before)
/// is an invalid head, not "the rest of an earlier response", and does not turn the pool
/// stale (no "wrote bytes after a finished response" warning, the point not invalid for it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_a_pre_opened_connection_is_not_an_earlier_response() {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                if matches!(s.read(&mut buf), Ok(n) if n > 0) {
                    let _ = s.write_all(b"SSH-2.0-OpenSSH_9.6\r\n");
                }
            });
        }
    });
    let o = BenchOptions {
        max_concurrency: Some(1),
        num_prompts: Some(1),
        num_warmups: Some(0),
        ..opts(format!("http://{addr}"))
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    let r = &out.records[0];
    assert_eq!(r.error_class, Some(inferbench_core::ErrorClass::Malformed));
    let msg = r.error.as_deref().unwrap_or_default();
    assert!(msg.contains("invalid response head"), "{msg}");
    assert!(!msg.contains("earlier response"), "{msg}");
    let notes = out.notes.join("\n");
    assert!(!notes.contains("wrote bytes after"), "{notes}");
    // Failed only because nothing was measured (issue 39 §9), never invalid for stray bytes.
    assert_eq!(
        out.summary.inferbench.failed_reason.as_deref(),
        Some("nothing was measured: none of the 1 profile requests succeeded (1 failed)"),
        "{notes}"
    );
    assert_eq!(out.summary.inferbench.invalid_reason, None, "{notes}");
}

/// Trial 34 F2: a server that ends its body 20 ms after `[DONE]` (a trailing comment, then the
/// chunked terminator) kept the client's slots "busy until read" for those 20 ms, and an idle
/// client was judged client-bound. The slot is free once `[DONE]` was read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_end_after_done_is_not_the_clients_wait() {
    let mut late_end = stream_case(3);
    late_end
        .chunks
        .push((Duration::from_millis(20), b": end\n\n".to_vec()));
    let addr = spawn_replay(late_end).await.unwrap();
    let o = BenchOptions {
        max_concurrency: Some(4),
        num_prompts: Some(120),
        num_warmups: Some(4),
        ..opts(format!("http://{addr}"))
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    let c = out
        .summary
        .inferbench
        .client
        .clone()
        .expect("a client check");
    assert!(out.summary.duration >= 1.0, "{}", out.summary.duration);
    assert!(!c.client_bound, "{c:?} {:?}", out.notes);
    if let Some(busy) = c.slots_busy_ratio {
        assert!(busy - c.held_ratio < 0.01, "{c:?}");
    }
    assert_eq!(
        out.summary.inferbench.invalid_reason, None,
        "{:?}",
        out.notes
    );
}

/// Issue 39 §5: the point's server fingerprint holds what the caller knows of a server it
/// launched (`server_settings`) and the served model, never the load: the same server at
/// another concurrency and prompt count has the same one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_fingerprint_holds_the_launch_settings_not_the_load() {
    let addr = spawn_replay(stream_case(3)).await.unwrap();
    let run = |conc: u32, n: u64| {
        let o = BenchOptions {
            max_concurrency: Some(conc),
            num_prompts: Some(n),
            num_warmups: Some(0),
            server_settings: vec![("launch.max_model_len".into(), "2048".into())],
            ..opts(format!("http://{addr}"))
        };
        run_bench(o, CancellationToken::new())
    };
    let a = run(2, 4).await.unwrap().summary.inferbench.server.unwrap();
    let b = run(4, 8).await.unwrap().summary.inferbench.server.unwrap();
    assert_eq!(a, b);
    assert_eq!(
        a.settings_line(),
        "launch.max_model_len=2048, models.served_model=replay-model"
    );
}
