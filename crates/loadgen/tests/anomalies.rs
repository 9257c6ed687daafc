//! Issue 11 end to end through `run_bench` and the real client over HTTP: anomaly codes in
//! records, summaries and warnings (the `usage-exceeds-max-tokens` case and
//! `misbehaving_server.py honor-max-tokens-only`), `--max-anomaly-rate`, the rescaled arrival
//! schedule, a dead server with few requests, a run that measured nothing, and
//! `--tokenizer server` against the simulator.

mod common;

use common::{completions_case, prepared, profile};
use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use inferbench_client::{Backend, MaxTokensField};
use inferbench_core::summary::StopReason;
use inferbench_core::{Anomaly, RequestRecord};
use inferbench_loadgen::{run_bench, BenchOptions, CancellationToken, ProgressMode};
use inferbench_testutil::replay::{spawn_replay, ReplayCase, ReplayEnd};

fn shared() -> Option<PathBuf> {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    if d.is_dir() {
        Some(d)
    } else {
        eprintln!("SKIP: {} not found", d.display());
        None
    }
}

fn opts(base_url: String, n: usize, prompt_tokens: u32, max_tokens: u32) -> BenchOptions {
    BenchOptions {
        base_url,
        model: "replay-model".into(),
        progress: ProgressMode::Off,
        num_prompts: Some(n as u64),
        num_warmups: Some(0),
        prepared: Some(prepared(n, prompt_tokens, max_tokens)),
        ..Default::default()
    }
}

/// The run's `invalid_reason`, "" when the point stands.
fn invalid_reason(out: &inferbench_loadgen::BenchOutcome) -> String {
    (out.summary.inferbench.invalid_reason.clone()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_exceeds_max_tokens_case_is_flagged_counted_and_warned() {
    let Some(dir) = shared() else { return };
    let text =
        std::fs::read_to_string(dir.join("cases/sse/usage-exceeds-max-tokens.json")).unwrap();
    let case: serde_json::Value = serde_json::from_str(&text).unwrap();
    let addr = spawn_replay(ReplayCase::from_json(&case).unwrap())
        .await
        .unwrap();
    // client_flags: --random-output-len 4 → max_tokens 4; prompt of 8 tokens as the usage says
    let o = BenchOptions {
        backend: Backend::OpenAiChat,
        max_concurrency: Some(3),
        ..opts(format!("http://{addr}"), 3, 8, 4)
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    let prof = profile(&out.records);
    assert_eq!(prof.len(), 3);
    for r in &prof {
        assert!(r.success);
        assert_eq!(r.completion_tokens, 19_503);
        assert_eq!(r.chunk_count(), 3);
        assert_eq!(r.anomalies, vec![Anomaly::UsageExceedsMaxTokens]);
    }
    let x = &out.summary.inferbench;
    assert_eq!(x.anomalies["usage_exceeds_max_tokens"], 3);
    assert_eq!(x.anomalies["usage_below_stream"], 0);
    assert_eq!(x.anomalies["osl_mismatch"], 0);
    assert_eq!(x.anomalies["isl_mismatch"], 0);
    assert_eq!(x.anomalous_requests, 3);
    assert_eq!(x.anomaly_rate, 1.0);
    let warn: Vec<&String> = out
        .notes
        .iter()
        .filter(|n| n.starts_with("warning: usage_exceeds_max_tokens"))
        .collect();
    assert_eq!(warn.len(), 1, "{:?}", out.notes);
    // 19,499 tokens beyond max_tokens 4 in each: the output throughput is not the server's
    // (trial 33 F9).
    let why = invalid_reason(&out);
    assert!(
        why.contains("(58497 of 58509) are beyond the requests' max_tokens"),
        "{why}"
    );
    assert_eq!(
        warn[0],
        "warning: usage_exceeds_max_tokens in 3 of 3 successful requests; e.g. request 0: usage \
         says 19503 completion tokens for max_tokens 4 (3 token chunks); output throughput built \
         on it is not real"
    );
    // the warmup-free run still warns once, and the records keep the code in JSON
    let line = serde_json::to_string(prof[0]).unwrap();
    assert!(
        line.contains(r#""anomalies":["usage_exceeds_max_tokens"]"#),
        "{line}"
    );
}

/// Starts `misbehaving_server.py MODE --port 0 --log LOG`; returns the child and its URL.
fn misbehaving(mode: &str, log: &std::path::Path) -> Option<(Child, String)> {
    misbehaving_with(mode, log, &[])
}

/// As [`misbehaving`], with the mode's `--arg K=V` pairs.
fn misbehaving_with(mode: &str, log: &std::path::Path, args: &[&str]) -> Option<(Child, String)> {
    let dir = shared()?;
    let mut child = Command::new("python3")
        .arg(dir.join("tools/misbehaving_server.py"))
        .args([mode, "--port", "0", "--log"])
        .arg(log)
        .args(args.iter().flat_map(|a| ["--arg", a]))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take()?)
        .read_line(&mut line)
        .ok()?;
    let url = line.trim().strip_prefix("listening on ")?.to_string();
    Some((child, url))
}

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honor_max_tokens_only_server_gets_both_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("srv.jsonl");
    let Some((child, url)) = misbehaving("honor-max-tokens-only", &log) else {
        eprintln!("SKIP: python3 or the shared folder is missing");
        return;
    };
    let _guard = Kill(child);
    let base = BenchOptions {
        backend: Backend::OpenAiChat,
        ignore_eos: true,
        max_concurrency: Some(2),
        ..opts(url.clone(), 4, 8, 8)
    };
    // Default for chat: both fields → the server honours max_tokens: exactly 8 tokens.
    let out = run_bench(base.clone(), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    for r in profile(&out.records) {
        assert!(r.success, "{r:?}");
        assert_eq!(r.completion_tokens, 8);
        assert_eq!(r.anomalies, vec![]);
    }
    assert_eq!(out.summary.total_output_tokens, 32);
    assert_eq!(out.summary.inferbench.anomalous_requests, 0);
    let bodies: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v.get("body").is_some())
        .collect();
    assert_eq!(bodies.len(), 4);
    for b in &bodies {
        assert_eq!(b["body"]["max_tokens"], 8);
        assert_eq!(b["body"]["max_completion_tokens"], 8);
    }
    // Only max_completion_tokens (what we sent before): the server streams its 64-token
    // default; every request carries both codes and the anomaly gate fails the run. Its 64
    // chunks pass what the client keeps for 8 tokens (8 + 16 chunk entries): the rest are
    // counted, not kept (output_not_kept, issue 39).
    let out = run_bench(
        BenchOptions {
            max_tokens_field: Some(MaxTokensField::MaxCompletionTokens),
            max_anomaly_rate: Some(0.5),
            ..base
        },
        CancellationToken::new(),
    )
    .await
    .unwrap();
    for r in profile(&out.records) {
        assert!(r.success);
        assert_eq!(r.completion_tokens, 64);
        assert_eq!(
            r.anomalies,
            vec![
                Anomaly::UsageExceedsMaxTokens,
                Anomaly::OslMismatch,
                Anomaly::OutputNotKept
            ]
        );
        assert_eq!(r.chunk_count(), 64);
    }
    let x = &out.summary.inferbench;
    assert_eq!(x.anomalies["output_not_kept"], 4);
    assert_eq!(x.anomalies["usage_exceeds_max_tokens"], 4);
    assert_eq!(x.anomalies["osl_mismatch"], 4);
    assert_eq!(x.anomaly_rate, 1.0);
    assert_eq!(out.end, inferbench_loadgen::RunEnd::GateFailed);
    let notes = out.notes.join("\n");
    assert!(
        notes.contains(
            "anomaly rate 100.00 % (4 of 4 successful requests) exceeds --max-anomaly-rate 50.00 %"
        ),
        "{notes}"
    );
    assert!(notes.contains("warning: osl_mismatch in 4 of 4"), "{notes}");
    // The 56 tokens beyond max_tokens in each of the 4 are 87.5 % of the output: the point's
    // output throughput is not the server's, so it is invalid (trial 33 F9).
    let why = invalid_reason(&out);
    assert!(
        why.contains(
            "87.5 % of the run's output tokens (224 of 256) are beyond the requests' max_tokens"
        ),
        "{why}"
    );

    // Without --ignore-eos, 100 asked and 64 given with finish_reason "length": the server caps
    // the output, said in a note (trial 33 F8); the point stands.
    let out = run_bench(
        BenchOptions {
            backend: Backend::OpenAiChat,
            max_concurrency: Some(2),
            ..opts(url.clone(), 4, 8, 100)
        },
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    let notes = out.notes.join("\n");
    assert!(
        notes.contains(
            "the server ended 4 request(s) with finish_reason \"length\" below their max_tokens \
             (e.g. request 0: 64 of 100 tokens): it caps the output length"
        ),
        "{notes}"
    );
    assert_eq!(out.summary.inferbench.invalid_reason, None, "{notes}");
}

/// Trial 33 F1: a server (or a proxy in front of it) that sends each whole event stream in one
/// write gives TTFT = E2EL and TPOT/ITL 0: the point is invalid, with a note. The same events
/// written 5 ms apart stand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_buffered_whole_make_the_point_invalid() {
    let tok = |t: &str| format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{t}\"}}]}}\n\n");
    let events: Vec<String> = ["a", "b", "c", "d"].iter().map(|t| tok(t)).collect();
    let tail = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":4}}\n\n\
                data: [DONE]\n\n";
    let case = |chunks: Vec<(Duration, Vec<u8>)>| ReplayCase {
        status: 200,
        headers: vec![("Content-Type".into(), "text/event-stream".into())],
        chunks,
        end: ReplayEnd::Close,
    };
    // bench at conc 2 against `c`, 4 requests of max_tokens 4.
    let run = |c: ReplayCase| async move {
        let addr = spawn_replay(c).await.unwrap();
        let o = BenchOptions {
            max_concurrency: Some(2),
            ..opts(format!("http://{addr}"), 4, 8, 4)
        };
        run_bench(o, CancellationToken::new()).await.unwrap()
    };
    let out = run(case(vec![(
        Duration::from_millis(30),
        (events.concat() + tail).into_bytes(),
    )]))
    .await;
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    assert_eq!(out.summary.inferbench.tpot_ms.mean, 0.0);
    let why = invalid_reason(&out);
    assert!(
        why.starts_with(
            "4 of 4 successful requests received all their tokens at one instant: the server, \
             or a proxy in front of it, buffered those responses instead of streaming them"
        ),
        "{why}"
    );
    assert!(out.notes.contains(&why), "{:?}", out.notes);

    let mut chunks: Vec<(Duration, Vec<u8>)> = events
        .iter()
        .map(|e| (Duration::from_millis(5), e.clone().into_bytes()))
        .collect();
    chunks.push((Duration::ZERO, tail.as_bytes().to_vec()));
    let out = run(case(chunks)).await;
    assert_eq!(
        out.summary.inferbench.invalid_reason, None,
        "{:?}",
        out.notes
    );
}

/// 3 tokens 1 ms apart, then usage saying `prompt` and `completion` tokens.
fn usage_case(completion: u32, prompt: u32) -> ReplayCase {
    completions_case(&["a", "b", "c"], 1, prompt, completion)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_below_stream_and_isl_mismatch_over_http() {
    // usage 0 after 3 chunks; 365 prompt tokens for 120 drawn (llama.cpp + SmolLM2)
    let addr = spawn_replay(usage_case(0, 365)).await.unwrap();
    let out = run_bench(
        opts(format!("http://{addr}"), 2, 120, 16),
        CancellationToken::new(),
    )
    .await
    .unwrap();
    for r in profile(&out.records) {
        assert_eq!(
            r.anomalies,
            vec![Anomaly::UsageBelowStream, Anomaly::IslMismatch]
        );
        assert_eq!(r.prompt_tokens, 365);
        assert_eq!(r.prompt_tokens_client, 120);
    }
    let x = &out.summary.inferbench;
    assert_eq!(x.anomalies["usage_below_stream"], 2);
    assert_eq!(x.anomalies["isl_mismatch"], 2);
    // Usage 0 for 3 streamed tokens, twice: the numbers built on usage are not the server's
    // (issue 39), the point is invalid as for inflated usage.
    assert_eq!(
        invalid_reason(&out),
        "100.0 % of the output tokens the streams carried (6 of 6) are missing from the \
         server's usage (usage_below_stream above): output throughput built on it undercounts \
         the server's; the result is marked invalid (kept off frontiers unless \
         --include-invalid)"
    );
    let notes = out.notes.join("\n");
    assert!(
        notes.contains(
            "warning: isl_mismatch in 2 of 2 successful requests; e.g. request 0: the server \
             counted 365 prompt tokens for 120 drawn (ratio 3.04)"
        ) && notes.contains("--tokenizer server"),
        "{notes}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_rate_offers_exactly_the_requested_rate() {
    let addr = spawn_replay(usage_case(3, 2)).await.unwrap();
    let o = BenchOptions {
        request_rate: Some(1000.0),
        seed: 0,
        ..opts(format!("http://{addr}"), 500, 2, 16)
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    let prof = profile(&out.records);
    assert_eq!(prof.len(), 500);
    // the last arrival is at (500 − 1) / 1000 s after the first, to the nanosecond
    let span = prof[499].scheduled_ns - prof[0].scheduled_ns;
    assert!(span.abs_diff(499_000_000) <= 1, "{span}");
    let rates = &out.summary.inferbench.rates;
    assert_eq!(rates.configured_rps, Some(1000.0));
    let offered = rates.scheduled_rps.unwrap();
    assert!((offered - 1000.0).abs() < 1e-5, "{offered}");
    assert!(rates.achieved_rps > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_server_with_few_requests_exits_3_and_keeps_warmup_errors() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = BenchOptions {
        num_warmups: Some(4),
        ..opts(format!("http://127.0.0.1:{port}"), 5, 2, 4)
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Unreachable,
        "{:?}",
        out.notes
    );
    let x = &out.summary.inferbench;
    assert_eq!(x.stop_reason, StopReason::ServerUnreachable);
    assert!(!x.interrupted);
    assert_eq!(x.warmups, 4);
    assert_eq!(x.warmup_failed, 4);
    assert_eq!(x.warmup_errors_by_class["connect"], 4);
    // Every warmup was refused: the profile is not sent to a dead server (trial 13: 8
    // profile requests followed 8 refused warmups); its 5 requests are counted as not sent.
    assert_eq!(x.failed, 0);
    assert_eq!(x.requests_not_sent, 5);
    assert!(!x.error_samples["connect"].is_empty());
    let notes = out.notes.join("\n");
    // The connect error is quoted in the unreachable note, not again as an `errors:` line
    // (trial 19); the summary keeps the counts and the sample.
    assert!(!notes.contains("errors: connect:"), "{notes}");
    assert!(
        notes.contains("server unreachable")
            && notes.contains("check the address: --base-url, or --host and --port"),
        "{notes}"
    );
    let report = inferbench_loadgen::output::render_report(&out.summary);
    assert!(
        report.contains("Requests not sent:                      5"),
        "{report}"
    );
    assert!(
        report.contains("Warmup requests (failed):               4 (4)"),
        "{report}"
    );
    assert!(report.contains("Stopped early:"), "{report}");
    assert!(!report.contains("Interrupted:"), "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warmups_that_trip_the_breaker_are_reported_not_lost() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // --max-concurrency 16 → 32 warmups, all refused: the breaker stops the run before the
    // profile phase; the summary says so and counts the 160 requests never sent.
    let o = BenchOptions {
        max_concurrency: Some(16),
        num_prompts: None,
        num_warmups: None,
        ..opts(format!("http://127.0.0.1:{port}"), 8, 2, 4)
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(out.end, inferbench_loadgen::RunEnd::Unreachable);
    let x = &out.summary.inferbench;
    assert_eq!(x.warmup_failed, 32);
    assert_eq!(x.warmups, 32);
    assert_eq!(x.failed, 0);
    assert_eq!(x.requests_not_sent, 160);
    assert_eq!(x.stop_reason, StopReason::ServerUnreachable);
    assert!(!x.interrupted);
    let report = inferbench_loadgen::output::render_report(&out.summary);
    assert!(
        report.contains("Requests not sent:                      160"),
        "{report}"
    );
    assert!(
        report.contains("Warmup requests (failed):               32 (32)"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_measured_nothing_fails() {
    let case = ReplayCase {
        status: 500,
        headers: vec![("Content-Type".into(), "application/json".into())],
        chunks: vec![(Duration::ZERO, b"{\"error\":\"boom\"}".to_vec())],
        end: ReplayEnd::Close,
    };
    let addr = spawn_replay(case).await.unwrap();
    let o = BenchOptions {
        max_error_rate: 1.0,
        ..opts(format!("http://{addr}"), 3, 2, 4)
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(out.end, inferbench_loadgen::RunEnd::GateFailed);
    assert_eq!(out.summary.completed, 0);
    let notes = out.notes.join("\n");
    assert!(
        notes.contains("nothing was measured: none of the 3 profile requests succeeded (3 failed)"),
        "{notes}"
    );
    assert!(
        notes.contains("errors: http_status: 3 requests (3 profile, 0 warmup), e.g. \"HTTP 500"),
        "{notes}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_tokenizer_makes_isl_exact_on_the_sim() {
    use inferbench_sim::{spawn, Mode, SimConfig, TokenizerKind};
    // The sim counts with its `approx` rule; prompts built for o200k_base arrive with other
    // counts. --tokenizer server fits them through the sim's /tokenize.
    let sim = spawn(SimConfig {
        model: "SmolLM2-135M".into(),
        mode: Mode::Instant,
        tokenizer: TokenizerKind::Approx,
        ..SimConfig::default()
    })
    .unwrap();
    let base = BenchOptions {
        base_url: sim.base_url(),
        model: "SmolLM2-135M".into(),
        progress: ProgressMode::Off,
        num_prompts: Some(12),
        num_warmups: Some(0),
        random_input_len: 700,
        random_output_len: 4,
        random_range_ratio: Some(0.5),
        seed: 3,
        ..Default::default()
    };
    let served = run_bench(
        BenchOptions {
            tokenizer: "server".into(),
            ..base.clone()
        },
        CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(
        served.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        served.notes
    );
    assert_eq!(served.summary.tokenizer_id, "server");
    let prof = profile(&served.records);
    assert_eq!(prof.len(), 12);
    for r in &prof {
        assert!(r.success, "{r:?}");
        // the server's usage equals what we drew and fitted, exactly
        assert_eq!(r.prompt_tokens, r.prompt_tokens_client, "{r:?}");
        assert!((350..=700).contains(&r.prompt_tokens_client), "{r:?}");
        assert!(!r.anomalies.contains(&Anomaly::IslMismatch));
    }
    // Same run with the local default tokenizer: the sim disagrees.
    let local = run_bench(base, CancellationToken::new()).await.unwrap();
    assert_eq!(local.summary.inferbench.anomalies["isl_mismatch"], 12);
    assert_eq!(local.summary.inferbench.anomalous_requests, 12);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_tokenizer_without_tokenize_endpoint_is_a_clear_error() {
    let case = ReplayCase {
        status: 404,
        headers: vec![("Content-Type".into(), "text/plain".into())],
        chunks: vec![(Duration::ZERO, b"Not Found".to_vec())],
        end: ReplayEnd::Close,
    };
    let addr = spawn_replay(case).await.unwrap();
    let o = BenchOptions {
        base_url: format!("http://{addr}"),
        model: "m".into(),
        progress: ProgressMode::Off,
        tokenizer: "server".into(),
        num_prompts: Some(2),
        random_input_len: 32,
        ..Default::default()
    };
    let e = run_bench(o, CancellationToken::new()).await.unwrap_err();
    let msg = format!("{e:#}");
    assert!(
        msg.contains(&format!("POST http://{addr}/tokenize: HTTP 404: Not Found")),
        "{msg}"
    );
}

/// Trial 32 F1: a server that writes a second copy of each response 1.5 s later (a buggy
/// proxy), later than bench's 1 s trust wait after the warmup. Requests on its kept-alive
/// connections then read the previous request's copy, so the point must not stand as valid:
/// the pool's check of its idle connections after the profile, a check-in, or a response head
/// that arrived before its request was sent sees the bytes nobody asked for, and the summary
/// says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_second_response_makes_the_point_invalid() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("srv.jsonl");
    let Some((child, url)) = misbehaving_with("two-responses", &log, &["second_after_s=1.5"])
    else {
        eprintln!("SKIP: python3 or the shared folder is missing");
        return;
    };
    let _guard = Kill(child);
    let o = BenchOptions {
        max_concurrency: Some(4),
        num_warmups: Some(8),
        ..opts(url, 12, 8, 3)
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    // Which check sees the copies first is a race: a request whose response head arrived
    // before it was sent fails (then the error gate may fail the run); every other one stays a
    // success, and either way the point is invalid.
    let failed: Vec<&RequestRecord> = profile(&out.records)
        .into_iter()
        .filter(|r| !r.success)
        .collect();
    for r in &failed {
        let msg = r.error.as_deref().unwrap_or_default();
        assert_eq!(
            r.error_class,
            Some(inferbench_core::ErrorClass::Malformed),
            "{r:?}"
        );
        assert!(
            msg.contains("ms before the request was sent: the rest of an earlier response"),
            "{msg}"
        );
    }
    let want_exit = if failed.is_empty() {
        inferbench_loadgen::RunEnd::Passed
    } else {
        inferbench_loadgen::RunEnd::GateFailed
    };
    assert_eq!(out.end, want_exit, "{:?}", out.notes);
    let why = invalid_reason(&out);
    assert!(
        why.starts_with(
            "the server wrote bytes after finished responses on kept-alive connections during \
             the profile (it answered a request twice, or wrote past a response's end)"
        ),
        "{why:?}; {:?}",
        out.notes
    );
    // Its first reason is also a note (this server writes each response in one piece, so
    // the "at one instant" reason may follow it).
    let first = why
        .split("; --header 'Connection: close'")
        .next()
        .unwrap_or_default();
    assert!(
        out.notes.iter().any(|n| n.starts_with(first)),
        "{:?}",
        out.notes
    );
}
