//! Issue 39 §4: a faithful AgentX replay raises no `isl_mismatch` (the server's prompt count is
//! compared with the trace's `in` plus the chat-template overhead the run measures), while a
//! real mismatch still does: a server counting with another tokenizer, and a server that drops
//! a message from the conversation.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use inferbench_core::anomaly::{isl_mismatch, Anomaly};
use inferbench_core::{Phase, RequestRecord};
use inferbench_loadgen::agentic::prompt::Prompter;
use inferbench_loadgen::agentic::{run_replay, ReplayOptions, ReplayOutcome, SchedConfig};
use inferbench_loadgen::CancellationToken;
use inferbench_workload::agentx::{load_traces, plan_stream, Trace};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// The example traces and the three comparison scenarios of `scripts/agentx-compare-traces/`,
/// their recorded times 20× faster.
fn traces() -> Vec<Trace> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut all = Vec::new();
    for f in [
        "examples/agentx-traces.jsonl",
        "scripts/agentx-compare-traces/compaction.jsonl",
        "scripts/agentx-compare-traces/multi-subagent.jsonl",
        "scripts/agentx-compare-traces/truncated.jsonl",
    ] {
        let p = Path::new(root).join(f);
        all.extend(load_traces(&p, &Default::default()).expect(f).traces);
    }
    for r in all
        .iter_mut()
        .flat_map(|t| t.streams.iter_mut())
        .flat_map(|s| s.requests.iter_mut())
    {
        r.t_s /= 20.0;
        r.api_time_s /= 20.0;
    }
    all
}

fn sim(tokenizer: inferbench_sim::TokenizerKind) -> inferbench_sim::SimHandle {
    let cfg = inferbench_sim::SimConfig {
        mode: inferbench_sim::Mode::Instant,
        block_size: 64,
        served_model_name: Some("sim".into()),
        tokenizer,
        ..Default::default()
    };
    inferbench_sim::spawn(cfg).expect("sim starts")
}

/// Replays every trace from its start (t* = 0) on 6 lanes for 2 s.
async fn replay(base_url: String) -> ReplayOutcome {
    let tr = Arc::new(traces());
    let tok = inferbench_workload::Tokenizer::load("o200k_base").expect("embedded tokenizer");
    let prompter = Arc::new(Prompter::new(&tr, &tok, 42).expect("corpus"));
    let opts = ReplayOptions {
        base_url,
        model: "sim".into(),
        idle_timeout: Duration::from_secs(30),
        request_timeout: None,
        sched: SchedConfig {
            lanes: 6,
            duration_ns: 2_000_000_000,
            start_ratio: (0.0, 0.0),
            warmup_per_lane: 1,
            ..SchedConfig::default()
        },
        grace: Duration::from_secs(5),
        server_metrics_interval: None,
        ..ReplayOptions::default()
    };
    run_replay(opts, tr, prompter, CancellationToken::new())
        .await
        .expect("replay runs")
}

fn profiled(out: &ReplayOutcome) -> Vec<&RequestRecord> {
    out.records
        .iter()
        .filter(|r| r.success && r.phase == Phase::Profile)
        .collect()
}

fn flagged(recs: &[&RequestRecord]) -> usize {
    recs.iter()
        .filter(|r| r.anomalies.contains(&Anomaly::IslMismatch))
        .count()
}

/// Requests the old check (server count against `in` alone) flags.
fn flagged_against_in(recs: &[&RequestRecord]) -> usize {
    recs.iter()
        .filter(|r| {
            isl_mismatch(
                r.prompt_tokens,
                r.agentic.as_ref().unwrap().expected_input_tokens,
            )
        })
        .count()
}

/// A default system prompt, as chat templates add one when the request has none (Llama 3.1's
/// knowledge-cutoff and date lines): with the sim's own template and the cache-bust marker,
/// about 45 tokens that the trace's `in` does not count.
fn default_system_prompt(m: &mut Vec<serde_json::Value>) {
    if m.first()
        .and_then(|x| x.get("role"))
        .and_then(|r| r.as_str())
        != Some("system")
    {
        m.insert(
            0,
            serde_json::json!({"role": "system", "content": "Cutting Knowledge Date: December \
                2023\nToday Date: 07 Dec 2026\n\nYou are a helpful coding assistant."}),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_faithful_replay_raises_no_isl_mismatch() {
    let sim = sim(inferbench_sim::TokenizerKind::O200kBase);
    let url = proxy(sim.base_url(), default_system_prompt).await;
    let out = replay(url).await;
    let o = out.template_overhead.expect("overhead measured");
    assert!(o.first_message > 32 && o.per_message > 0, "{o:?}");
    let recs = profiled(&out);
    assert!(recs.len() >= 40, "{} profiled requests", recs.len());
    assert_eq!(flagged(&recs), 0, "{:?}", out.notes);
    // The short sub-agent prompts are what the old comparison (with `in` alone) flagged.
    let old = flagged_against_in(&recs);
    eprintln!(
        "overhead {o}; {} profiled, {old} flagged against `in` alone",
        recs.len()
    );
    assert!(old > 0);
    // Each request's client-side count is `in` plus the overhead of its messages: within a
    // few tokens (BPE merges where blocks meet) of what the server counted.
    let worst = recs
        .iter()
        .map(|r| (i64::from(r.prompt_tokens) - i64::from(r.prompt_tokens_client)).abs())
        .max()
        .unwrap();
    eprintln!("largest |server − (in + overhead)|: {worst} tokens");
    assert!(worst <= 20, "{worst}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_another_tokenizer_still_raises_isl_mismatch() {
    // The prompts are sized in o200k_base; the server counts with a coarser rule.
    let sim = sim(inferbench_sim::TokenizerKind::Approx);
    let out = replay(sim.base_url()).await;
    let recs = profiled(&out);
    assert!(recs.len() >= 40, "{} profiled requests", recs.len());
    assert_eq!(flagged(&recs), recs.len());
}

/// A proxy in front of `upstream` that rewrites the `messages` of every chat request with
/// `edit` (what a server's chat template does to them); one request per connection.
async fn proxy(upstream: String, edit: fn(&mut Vec<serde_json::Value>)) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let up = upstream.trim_start_matches("http://").to_string();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let up = up.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 65536];
                let head_end = loop {
                    let n = client.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        break p + 4;
                    }
                };
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                while buf.len() < head_end + len {
                    let n = client.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let mut body: serde_json::Value =
                    serde_json::from_slice(&buf[head_end..head_end + len]).unwrap_or_default();
                if let Some(m) = body.get_mut("messages").and_then(|m| m.as_array_mut()) {
                    edit(m);
                }
                let body = serde_json::to_vec(&body).unwrap();
                let mut out = String::new();
                for l in head.lines().filter(|l| !l.is_empty()) {
                    let k = l.split(':').next().unwrap_or("").to_ascii_lowercase();
                    if k != "content-length" && k != "connection" {
                        out.push_str(l);
                        out.push_str("\r\n");
                    }
                }
                out.push_str(&format!(
                    "content-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                ));
                let Ok(mut server) = tokio::net::TcpStream::connect(&up).await else {
                    return;
                };
                let _ = server.write_all(out.as_bytes()).await;
                let _ = server.write_all(&body).await;
                let _ = tokio::io::copy(&mut server, &mut client).await;
                let _ = client.shutdown().await;
            });
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_drops_a_message_still_raises_isl_mismatch() {
    // The opening user message (the task and the files read) of every request of three or
    // more messages is dropped.
    fn drop_first(m: &mut Vec<serde_json::Value>) {
        if m.len() >= 3 {
            m.remove(0);
        }
    }
    let sim = sim(inferbench_sim::TokenizerKind::O200kBase);
    let url = proxy(sim.base_url(), drop_first).await;
    let out = replay(url).await;
    // The probes have three messages too: the dropped one is the marker's, so the overhead is
    // still measured (from the one-message probe).
    assert!(out.template_overhead.is_some());
    let recs = profiled(&out);
    assert!(recs.len() >= 20, "{} profiled requests", recs.len());
    // Each request's messages, from its stream's plan (every play starts at turn 0, t* = 0).
    let tr = traces();
    let plan_of = |r: &RequestRecord| {
        let conv = r.conversation_id.as_deref().unwrap();
        let t = tr
            .iter()
            .find(|t| t.streams.iter().any(|s| s.id == conv))
            .unwrap();
        let si = t.streams.iter().position(|s| s.id == conv).unwrap();
        plan_stream(t, si).swap_remove(r.turn.unwrap() as usize)
    };
    let (mut lost, mut kept) = (0, 0);
    for r in &recs {
        let plan = plan_of(r);
        let first = plan.segments[0].tokens();
        let isl = f64::from(plan.prompt_tokens);
        if plan.segments.len() >= 3 && f64::from(first) > 32.0_f64.max(0.05 * isl) + 16.0 {
            // The dropped opening message is more than the tolerance (with room for the few
            // tokens of drift where blocks meet): flagged.
            assert!(
                r.anomalies.contains(&Anomaly::IslMismatch),
                "{first}: {r:?}"
            );
            lost += 1;
        } else if plan.segments.len() < 3 {
            // Nothing was dropped: not flagged.
            assert!(!r.anomalies.contains(&Anomaly::IslMismatch), "{r:?}");
            kept += 1;
        }
    }
    assert!(lost > 0 && kept > 0, "{lost} {kept}");
}
