//! `run_replay` end to end against the simulated server: phases, sub-agent ordering on the
//! real clock, token counts, and partial results on Ctrl-C.

mod common;

use common::{root_stream, trace};
use std::sync::Arc;
use std::time::Duration;

use inferbench_core::{Phase, RequestRecord};
use inferbench_loadgen::agentic::prompt::Prompter;
use inferbench_loadgen::agentic::{run_replay, ReplayOptions, ReplayStop, SchedConfig};
use inferbench_loadgen::CancellationToken;
use inferbench_workload::agentx::{Stream, StreamKind, Trace, TraceRequest};

const MS: f64 = 0.001;

fn rq(t_ms: f64, api_ms: f64, input: u32, out: u32, ids: std::ops::Range<u32>) -> TraceRequest {
    TraceRequest {
        t_s: t_ms * MS,
        input_tokens: input,
        output_tokens: out,
        hash_ids: ids.collect(),
        api_time_s: api_ms * MS,
        model: "claude".into(),
    }
}

/// Trace `a`: 6 main-agent turns, 50 ms apart. Trace `b`: a main agent that spawns a sub-agent
/// after turn 1 and joins it at turn 2.
fn traces() -> Vec<Trace> {
    let a = trace(
        "a",
        "test:1",
        vec![root_stream(
            "a",
            (0..6)
                .map(|k| rq(50.0 * k as f64, 20.0, 256 + 64 * k, 8, 0..(4 + k)))
                .collect(),
        )],
    );
    let b = trace(
        "b",
        "test:2",
        vec![
            root_stream(
                "b",
                vec![
                    rq(0.0, 20.0, 128, 4, 0..2),
                    rq(40.0, 20.0, 256, 4, 0..4),
                    rq(200.0, 20.0, 384, 4, 0..6),
                    rq(260.0, 20.0, 448, 4, 0..7),
                ],
            ),
            Stream {
                id: "b::sa:explore_001".into(),
                kind: StreamKind::Subagent,
                label: "Explore".into(),
                parent: Some("b".into()),
                requests: vec![
                    rq(70.0, 30.0, 192, 4, 100..103),
                    rq(110.0, 30.0, 256, 4, 100..104),
                ],
            },
        ],
    );
    vec![a, b]
}

fn opts(base_url: String, duration: Duration) -> ReplayOptions {
    ReplayOptions {
        base_url,
        model: "sim".into(),
        idle_timeout: Duration::from_secs(30),
        request_timeout: None,
        sched: SchedConfig {
            lanes: 2,
            duration_ns: duration.as_nanos() as u64,
            warmup_per_lane: 1,
            ..SchedConfig::default()
        },
        grace: Duration::from_secs(5),
        server_metrics_interval: Some(Duration::from_millis(250)),
        ..ReplayOptions::default()
    }
}

fn prompter(tr: &[Trace]) -> Prompter {
    let tok = inferbench_workload::Tokenizer::load("o200k_base").expect("embedded tokenizer");
    Prompter::new(tr, &tok, 42).expect("corpus")
}

fn sim() -> inferbench_sim::SimHandle {
    let cfg = inferbench_sim::SimConfig {
        mode: inferbench_sim::Mode::Instant,
        block_size: 64,
        served_model_name: Some("sim".into()),
        ..Default::default()
    };
    inferbench_sim::spawn(cfg).expect("sim starts")
}

fn by<'a>(
    recs: &'a [RequestRecord],
    conv: &str,
    turn: u32,
    play: u32,
) -> Option<&'a RequestRecord> {
    recs.iter().find(|r| {
        r.conversation_id.as_deref() == Some(conv)
            && r.turn == Some(turn)
            && r.agentic.as_ref().map(|a| a.play) == Some(play)
            && r.agentic.as_ref().map(|a| a.kind.as_str()) == Some("profile")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replays_traces_with_subagents_against_the_sim() {
    let sim = sim();
    let tr = Arc::new(traces());
    let prompter = Arc::new(prompter(&tr));
    let out = run_replay(
        opts(sim.base_url(), Duration::from_millis(1500)),
        tr.clone(),
        prompter,
        CancellationToken::new(),
    )
    .await
    .expect("replay runs");
    let first_fail = out.records.iter().find(|r| !r.success);
    assert_eq!(out.stop, ReplayStop::Completed, "{first_fail:?}");
    // Every request names the stream that spawned its own: the sub-agent's is the main agent,
    // the main agents' none (the explorer nests by it).
    for r in &out.records {
        let parent = r.agentic.as_ref().and_then(|a| a.parent_stream.as_deref());
        match r.conversation_id.as_deref() {
            Some("b::sa:explore_001") => assert_eq!(parent, Some("b"), "{r:?}"),
            _ => assert_eq!(parent, None, "{r:?}"),
        }
    }
    assert!(out
        .records
        .iter()
        .any(|r| r.conversation_id.as_deref() == Some("b::sa:explore_001")));
    let recs = &out.records;
    let failed: Vec<_> = recs.iter().filter(|r| !r.success).collect();
    assert!(failed.is_empty(), "no failures: {failed:?}");
    let profile: Vec<_> = recs.iter().filter(|r| r.phase == Phase::Profile).collect();
    assert!(
        profile.len() > 10,
        "several recycled plays in 1.5 s: {}",
        profile.len()
    );
    for r in recs {
        let a = r.agentic.as_ref().expect("agentic identity");
        // Warmup and primers ask for 1 token; profile requests for the recorded `out`.
        let want = if a.kind == "profile" {
            a.expected_output_tokens
        } else {
            1
        };
        assert_eq!(r.max_tokens, Some(want), "{r:?}");
        assert_eq!(
            r.completion_tokens, want,
            "ignore_eos: exactly the requested tokens"
        );
        assert_eq!(r.phase == Phase::Profile, a.kind == "profile");
    }
    // Recycled plays of trace b (from turn 0): the sub-agent starts after root turn 1 ended
    // (+30 ms recorded gap), root turn 2 only after the sub-agent's last request ended.
    let mut checked = 0;
    for play in 0..out.stats.plays as u32 {
        let (Some(t1), Some(s0), Some(s1), Some(t2)) = (
            by(recs, "b", 1, play),
            by(recs, "b::sa:explore_001", 0, play),
            by(recs, "b::sa:explore_001", 1, play),
            by(recs, "b", 2, play),
        ) else {
            continue;
        };
        assert!(
            s0.sent_ns >= t1.end_ns + 10_000_000 - 2_000_000,
            "spawn gap"
        );
        assert!(
            t2.sent_ns >= s1.end_ns + 60_000_000 - 2_000_000,
            "join waits"
        );
        checked += 1;
    }
    assert!(checked >= 1, "at least one full play of trace b");
}

/// Issue 14: a replay keeps compacted records in memory (no chunks, no text: an hour-long
/// replay kept gigabytes), the records file keeps them whole, and the summary's ITL statistics
/// equal those of the whole records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_keeps_compact_records_and_exact_itl() {
    let sim = sim();
    let tr = Arc::new(traces());
    let prompter = Arc::new(prompter(&tr));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("requests.jsonl");
    let o = ReplayOptions {
        save_requests: Some(file.clone()),
        ..opts(sim.base_url(), Duration::from_millis(800))
    };
    let out = run_replay(o, tr, prompter, CancellationToken::new())
        .await
        .expect("replay runs");
    assert!(out
        .records
        .iter()
        .all(|r| r.chunks.is_empty() && r.output_text.is_empty()));
    let whole: Vec<RequestRecord> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(whole.len(), out.records.len());
    let ok_profile = |r: &&RequestRecord| r.success && r.phase == Phase::Profile;
    assert!(whole.iter().filter(ok_profile).all(|r| r.chunks.len() > 1));
    for (w, k) in whole.iter().zip(&out.records) {
        assert_eq!(w.chunks.len(), k.chunk_count(), "{}", w.request_id);
    }
    let s = inferbench_loadgen::agentic::replay_summary(&out, "sim", 2, false);
    // Issue 39 §5: the sim's settings, from its first /metrics scrape, name its server.
    let server = s.inferbench.server.as_ref().expect("server settings");
    assert_eq!(server.settings["sim.mode"], "instant");
    assert_eq!(server.settings["sim.block_size"], "64");
    assert_eq!(server.settings["models.served_model"], "sim");
    assert!(!server.settings.contains_key("sim.tp"));
    let itls: Vec<f64> = whole
        .iter()
        .filter(ok_profile)
        .flat_map(|r| r.itls_ms())
        .collect();
    let want = inferbench_core::metrics::Distribution::of(&itls, &[99.0]);
    assert!(!itls.is_empty());
    assert_eq!(s.metric("mean_itl_ms"), Some(want.mean));
    assert_eq!(s.metric("median_itl_ms"), Some(want.median));
    assert_eq!(s.metric("std_itl_ms"), Some(want.std));
    assert_eq!(s.metric("p99_itl_ms"), Some(want.percentiles[0].1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_keeps_finished_records() {
    let sim = sim();
    let tr = Arc::new(traces());
    let prompter = Arc::new(prompter(&tr));
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        c2.cancel();
    });
    let out = run_replay(
        opts(sim.base_url(), Duration::from_secs(60)),
        tr,
        prompter,
        cancel,
    )
    .await
    .expect("replay runs");
    assert_eq!(out.stop, ReplayStop::Interrupted);
    assert!(out.records.iter().filter(|r| r.success).count() > 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observed_prefix_cache_hit_matches_the_theoretical_rate() {
    // The timed sim (64-token KV blocks, prefix caching) reports each request's cached tokens;
    // over the measured requests they match the trace's hash-block reuse within 2 points.
    let cfg = inferbench_sim::SimConfig {
        block_size: 64,
        served_model_name: Some("sim".into()),
        time_scale: 20.0,
        ..Default::default()
    };
    let sim = inferbench_sim::spawn(cfg).expect("sim starts");
    let mut traces = inferbench_workload::agentx::load_traces(
        std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/agentx-traces.jsonl"
        )),
        &Default::default(),
    )
    .expect("example traces")
    .traces;
    // Recorded gaps of seconds, replayed 20× faster so a few plays fit in 3 s.
    for r in traces
        .iter_mut()
        .flat_map(|t| t.streams.iter_mut())
        .flat_map(|s| s.requests.iter_mut())
    {
        r.t_s /= 20.0;
        r.api_time_s /= 20.0;
    }
    let tr = Arc::new(traces);
    let out = run_replay(
        opts(sim.base_url(), Duration::from_secs(3)),
        tr.clone(),
        Arc::new(prompter(&tr)),
        CancellationToken::new(),
    )
    .await
    .expect("replay runs");
    let kept: Vec<&RequestRecord> = out
        .records
        .iter()
        .filter(|r| r.success && r.phase == Phase::Profile)
        .collect();
    assert!(kept.len() >= 8, "{} measured requests", kept.len());
    let (mut hit, mut total, mut cached) = (0u64, 0u64, 0u64);
    for r in &kept {
        let a = r.agentic.as_ref().unwrap();
        hit += u64::from(a.hit_blocks);
        total += u64::from(a.total_blocks);
        cached += u64::from(r.cached_tokens.unwrap_or(0));
        // Prompt tokens: exactly `in` synthesized, plus the chat template and the marker.
        let extra = r.prompt_tokens as i64 - i64::from(a.expected_input_tokens);
        assert!(
            (0..=64).contains(&extra),
            "template + marker overhead {extra}: {r:?}"
        );
    }
    let theoretical = hit as f64 / total as f64;
    let observed = cached as f64 / (64 * total) as f64;
    eprintln!(
        "prefix-cache hit over {} measured requests: observed {observed:.4}, theoretical \
         {theoretical:.4}",
        kept.len()
    );
    assert!(
        (observed - theoretical).abs() <= 0.02,
        "observed {observed:.4} vs theoretical {theoretical:.4}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_run_leaves_partial_results_and_a_failure() {
    let sim = sim();
    let url = sim.base_url();
    let tr = Arc::new(traces());
    // The block corpus first (it takes a while in debug builds), then the clock starts.
    let p = Arc::new(prompter(&tr));
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(600));
        sim.shutdown();
    });
    let out = run_replay(
        opts(url, Duration::from_secs(30)),
        tr.clone(),
        p,
        CancellationToken::new(),
    )
    .await
    .expect("replay runs");
    killer.join().unwrap();
    let fails: Vec<_> = out
        .records
        .iter()
        .filter(|r| !r.success)
        .map(|r| {
            (
                r.phase,
                r.agentic.as_ref().map(|a| a.kind.clone()),
                r.conversation_id.clone(),
                r.turn,
                r.sent_ns / 1_000_000,
            )
        })
        .collect();
    assert_eq!(
        out.stop,
        ReplayStop::FailedThreshold,
        "{:?} {fails:?}",
        out.notes
    );
    let ok = out.records.iter().filter(|r| r.success).count();
    let failed = out.records.iter().filter(|r| !r.success).count();
    assert!(ok > 3 && failed > 0, "{ok} ok, {failed} failed");
    // Everything finished is kept; the exit code says it failed.
    let s = inferbench_loadgen::agentic::replay_summary(&out, "sim", 2, false);
    assert_eq!(
        inferbench_loadgen::agentic::replay_end(&out, &s),
        inferbench_loadgen::RunEnd::GateFailed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_server_exits_3_and_names_the_url() {
    let tr = Arc::new(traces());
    let p = Arc::new(prompter(&tr));
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let out = run_replay(
        opts(url.clone(), Duration::from_secs(5)),
        tr,
        p,
        CancellationToken::new(),
    )
    .await
    .expect("replay runs");
    assert_eq!(out.stop, ReplayStop::WarmupFailed);
    assert!(
        out.notes
            .iter()
            .any(|n| n.starts_with(&format!("server unreachable at {url}"))),
        "{:?}",
        out.notes
    );
    let s = inferbench_loadgen::agentic::replay_summary(&out, "sim", 2, false);
    assert_eq!(
        inferbench_loadgen::agentic::replay_end(&out, &s),
        inferbench_loadgen::RunEnd::Unreachable
    );
    // The replay stopped itself: its own cancellations are not the user's; it says why.
    assert_eq!(
        s.inferbench.stop_reason,
        inferbench_core::summary::StopReason::ServerUnreachable
    );
    let report = inferbench_loadgen::output::render_report(&s);
    assert!(!report.contains("Cancelled by user"), "{report}");
    assert!(
        report.contains(
            "Stopped early:                          server unreachable before the profile: nothing measured"
        ),
        "{report}"
    );
}

/// Issue 39 (a fresh tester's findings, 1), replay's side: an `--extra-body` output length is
/// every request's `max_tokens` (warmups' 1 and the traces' `out` replaced, as the body sent
/// says), and the sim's answers are that long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_records_the_extra_body_output_length() {
    let sim = sim();
    let tr = Arc::new(traces());
    let prompter = Arc::new(prompter(&tr));
    let o = ReplayOptions {
        extra_body: serde_json::json!({"max_tokens": 12}).as_object().cloned(),
        ..opts(sim.base_url(), Duration::from_millis(600))
    };
    let out = run_replay(o, tr, prompter, CancellationToken::new())
        .await
        .expect("replay runs");
    assert!(out.records.iter().any(|r| r.phase == Phase::Warmup));
    assert!(out
        .records
        .iter()
        .any(|r| r.success && r.phase == Phase::Profile));
    for r in &out.records {
        assert_eq!(r.max_tokens, Some(12), "request {}", r.request_id);
        if r.success {
            assert_eq!(r.completion_tokens, 12, "request {}", r.request_id);
        }
    }
}
