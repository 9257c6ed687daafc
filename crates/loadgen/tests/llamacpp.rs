//! Real input: llama.cpp's `llama-server` (PyPI `xllamacpp`) serving SmolLM2-135M-Instruct,
//! started through the runner's embedded launcher (`crates/runner/assets/llamacpp_serve.py`,
//! the one llama.cpp launcher of the project) with 2 decode slots. Needs
//! `INFERBENCH_TEST_PYTHON` and `INFERBENCH_TEST_GGUF` (written by `scripts/setup/llamacpp.sh`);
//! skips with a reason when they are absent, fails instead under `INFERBENCH_REQUIRE_SERVICES=1`.
//!
//! Pins: with `ignore_eos`, every request's `completion_tokens` (from the server's usage) equals
//! the requested length; and TTFT grows once concurrency exceeds the server's parallel slots
//! (queued requests wait for a whole generation before their first token).

mod common;

use common::prompts_of;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use inferbench_client::Backend;
use inferbench_core::{Phase, TokenSource};
use inferbench_loadgen::{
    run_bench, BenchOptions, CancellationToken, PreparedPrompts, ProgressMode,
};

const SLOTS: u32 = 2;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn service() -> Option<(String, String)> {
    let py = std::env::var("INFERBENCH_TEST_PYTHON")
        .ok()
        .filter(|s| !s.is_empty());
    let gguf = std::env::var("INFERBENCH_TEST_GGUF")
        .ok()
        .filter(|s| !s.is_empty());
    let ok = py.is_some() && gguf.is_some();
    inferbench_testutil::available(
        ok,
        "INFERBENCH_TEST_PYTHON / INFERBENCH_TEST_GGUF (llama.cpp)",
        "run scripts/setup/llamacpp.sh",
    )
    .then(|| (py.unwrap_or_default(), gguf.unwrap_or_default()))
}

fn start(py: &str, gguf: &str) -> (Server, String) {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../runner/assets/llamacpp_serve.py");
    // A free loopback port: bind :0, read it, release it for the server.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free loopback port")
        .port();
    let mut child = Command::new(py)
        .arg(script)
        .args(["--model", gguf, "--host", "127.0.0.1", "--port"])
        .arg(port.to_string())
        .args([
            "--n-parallel",
            &SLOTS.to_string(),
            "--threads",
            "2",
            "--ctx-per-slot",
            "1024",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting crates/runner/assets/llamacpp_serve.py");
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    assert!(
        line.starts_with("llamacpp_serve: listening on "),
        "unexpected launcher output {line:?}"
    );
    (server, format!("http://127.0.0.1:{port}"))
}

fn prompts(n: usize, out_len: u32) -> Arc<PreparedPrompts> {
    // Distinct prompts so llama.cpp's prompt cache cannot hide prefill.
    let texts = (0..n).map(|i| {
        format!(
            "Request {i}: write a short story about the number {}.",
            i * 7919
        )
    });
    Arc::new(prompts_of(texts, 16, out_len))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn llamacpp_exact_lengths_and_queueing_beyond_slots() {
    let Some((py, gguf)) = service() else { return };
    let (_server, url) = start(&py, &gguf);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let base = BenchOptions {
            base_url: url.clone(),
            model: "smollm2".into(),
            ignore_eos: true,
            progress: ProgressMode::Off,
            num_warmups: Some(1),
            idle_timeout: Duration::from_secs(300),
            ..Default::default()
        };
        // 1. ignore_eos: completion_tokens equals the requested length, on both APIs.
        for backend in [Backend::OpenAiCompletions, Backend::OpenAiChat] {
            let o = BenchOptions {
                backend,
                max_concurrency: Some(SLOTS),
                num_prompts: Some(4),
                prepared: Some(prompts(4, 12)),
                // Whole records (text included) stay in memory only with --save-detailed.
                save_detailed: true,
                ..base.clone()
            };
            let out = run_bench(o, CancellationToken::new()).await.unwrap();
            assert_eq!(
                out.end,
                inferbench_loadgen::RunEnd::Passed,
                "{backend:?}: {:?} {:#?}",
                out.notes,
                out.records
            );
            for r in out.records.iter().filter(|r| r.phase == Phase::Profile) {
                assert!(r.success, "{r:#?}");
                assert_eq!(r.completion_tokens, 12, "{backend:?} {r:#?}");
                assert_eq!(r.completion_tokens_source, TokenSource::Server);
                assert!(!r.output_text.is_empty());
            }
            assert_eq!(out.summary.total_output_tokens, 4 * 12);
        }
        // 2. TTFT at conc = slots vs conc = 3 × slots (the extra requests queue in the server).
        let ttft = |conc: u32| {
            let o = BenchOptions {
                max_concurrency: Some(conc),
                num_prompts: Some(u64::from(conc)),
                prepared: Some(prompts(conc as usize, 16)),
                ..base.clone()
            };
            async move {
                let out = run_bench(o, CancellationToken::new()).await.unwrap();
                let errors: Vec<_> = out
                    .records
                    .iter()
                    .filter_map(|r| r.error.as_deref())
                    .collect();
                assert_eq!(
                    out.end,
                    inferbench_loadgen::RunEnd::Passed,
                    "{:?} {errors:?}",
                    out.notes
                );
                median(
                    out.records
                        .iter()
                        .filter(|r| r.phase == Phase::Profile)
                        .map(|r| r.ttft_ms().unwrap())
                        .collect(),
                )
            }
        };
        // One round first, discarded: the server's first requests after start-up (and after
        // another run's load on shared cores) were seen at 4 s median TTFT, above the queued
        // round's 0.5 s (trial 7), which says nothing about queueing.
        let _ = ttft(SLOTS).await;
        let first = ttft(SLOTS).await;
        let beyond = ttft(3 * SLOTS).await;
        // The slots' round again after the queued one, the faster of the two kept: one round
        // slowed by other work on the shared cores (2,136 ms at the slots, then 344 ms queued
        // in a full test run beside compiles, 2026-12-07) says nothing about queueing.
        let at_slots = first.min(ttft(SLOTS).await);
        eprintln!(
            "median TTFT: {at_slots:.1} ms at conc {SLOTS}, {beyond:.1} ms at conc {}",
            3 * SLOTS
        );
        // Twice, not three times: the queued requests wait for whole generations, but on cores
        // shared with other work the prefill alone (TTFT at the slots) slows too, and a full
        // test run on 2 cores saw 794 → 2,036 ms (2.6×) once (2026-12-04).
        assert!(
            beyond > 2.0 * at_slots,
            "TTFT should grow beyond the slots: {at_slots:.1} ms → {beyond:.1} ms"
        );
    });
}

/// AgentX replay on llama.cpp (prompt cache on): tiny synthetic sessions sized for 1,024-token
/// slots; every request asks for its recorded output with `ignore_eos` and gets exactly that
/// many tokens, prompts carry exactly `in` synthesized tokens plus the chat template, and the
/// prompt cache (`timings.cache_n`) reuses the shared prefixes of consecutive turns.
#[test]
fn llamacpp_agentic_replay() {
    use inferbench_loadgen::agentic::prompt::Prompter;
    use inferbench_loadgen::agentic::{run_replay, ReplayOptions, ReplayStop, SchedConfig};
    use inferbench_workload::agentx::synthetic::{generate, SyntheticSpec};
    let Some((py, gguf)) = service() else { return };
    let (_server, url) = start(&py, &gguf);
    let traces = Arc::new(generate(&SyntheticSpec::small_context()));
    let tok = inferbench_workload::Tokenizer::load("o200k_base").unwrap();
    let prompter = Arc::new(Prompter::new(&traces, &tok, 42).unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let out = rt.block_on(run_replay(
        ReplayOptions {
            base_url: url,
            model: "smollm2".into(),
            idle_timeout: Duration::from_secs(300),
            request_timeout: None,
            sched: SchedConfig {
                lanes: SLOTS,
                duration_ns: 8_000_000_000,
                warmup_per_lane: 1,
                ..SchedConfig::default()
            },
            server_metrics_interval: None,
            ..ReplayOptions::default()
        },
        traces,
        prompter,
        CancellationToken::new(),
    ));
    let out = out.expect("replay runs");
    // Requests still streaming when the duration's grace ended are cancelled by design.
    let first_fail = out
        .records
        .iter()
        .find(|r| !r.success && r.error_class != Some(inferbench_core::ErrorClass::Cancelled));
    assert_eq!(out.stop, ReplayStop::Completed, "{first_fail:?}");
    assert!(first_fail.is_none(), "{first_fail:?}");
    let profile: Vec<_> = out
        .records
        .iter()
        .filter(|r| r.phase == Phase::Profile)
        .collect();
    // How many fit in the duration depends on the machine (a busy 2-core CI host decodes
    // SmolLM2 at a few steps per second); what is pinned below holds for every request.
    assert!(!profile.is_empty(), "no measured request");
    let mut reused = 0;
    for r in out.records.iter().filter(|r| r.success) {
        let a = r.agentic.as_ref().unwrap();
        let want = if a.kind == "profile" {
            a.expected_output_tokens
        } else {
            1
        };
        assert_eq!(r.completion_tokens, want, "{r:?}");
        assert_eq!(r.completion_tokens_source, TokenSource::Server);
        // SmolLM2's tokenizer is not o200k: the synthesized text re-tokenizes to another count,
        // but within a factor that keeps it recognisably the same prompt.
        let ratio = f64::from(r.prompt_tokens) / f64::from(a.expected_input_tokens);
        assert!(
            (0.8..2.5).contains(&ratio),
            "prompt {} vs in {}",
            r.prompt_tokens,
            a.expected_input_tokens
        );
        if r.cached_tokens.unwrap_or(0) > 0 {
            reused += 1;
        }
    }
    assert!(
        reused > 0,
        "llama.cpp's prompt cache reused a shared prefix"
    );
}
