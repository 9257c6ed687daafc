//! Issue 41 (client features of InferenceX's newest recipes), end to end through `run_bench` and
//! the real client over HTTP: the Responses backend against `sim` (the same answer as over chat
//! completions), per-request headers counted by a server that reads every request head,
//! empty-content TTFT and the multi-token-chunk verdict against scripted streams.

mod common;

use common::{profile, prompts_of, root_stream, trace};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use inferbench_client::Backend;
use inferbench_core::{Channel, RequestRecord};
use inferbench_loadgen::{run_bench, BenchOptions, CancellationToken, ProgressMode};
use inferbench_testutil::tap::{post_lines, spawn_tap};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn opts(base_url: String, n: usize, warmups: u64, max_tokens: u32) -> BenchOptions {
    BenchOptions {
        base_url,
        model: "m".into(),
        progress: ProgressMode::Off,
        num_prompts: Some(n as u64),
        num_warmups: Some(warmups),
        max_concurrency: Some(1),
        // Full records (chunks and text kept), no side requests to the test servers.
        save_detailed: true,
        server_metrics: false,
        prepared: Some(Arc::new(prompts_of(
            (0..n).map(|i| format!("prompt number {i}")),
            3,
            max_tokens,
        ))),
        ..Default::default()
    }
}

/// The Responses backend against `sim`'s `/v1/responses`: every request succeeds, and its
/// text, token counts (server usage), chunks and channels equal the same answer over chat
/// completions (TTFT on explicit times: `responses::tests` in the client).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_backend_gets_the_same_answer_as_chat_from_sim() {
    let sim = inferbench_sim::spawn(inferbench_sim::SimConfig {
        served_model_name: Some("m".into()),
        reasoning_tokens: 2,
        ..Default::default()
    })
    .expect("sim starts");
    let mut by_backend = Vec::new();
    for backend in [Backend::OpenAiChat, Backend::OpenAiResponses] {
        let o = BenchOptions {
            backend,
            ..opts(sim.base_url(), 3, 0, 6)
        };
        let out = run_bench(o, CancellationToken::new()).await.unwrap();
        assert_eq!(
            out.end,
            inferbench_loadgen::RunEnd::Passed,
            "{backend:?}: {:?}",
            out.notes
        );
        let recs: Vec<RequestRecord> = profile(&out.records).into_iter().cloned().collect();
        assert_eq!(recs.len(), 3);
        for r in &recs {
            assert!(r.success, "{backend:?}: {:?}", r.error);
            assert!(r.anomalies.is_empty(), "{backend:?}: {:?}", r.anomalies);
        }
        by_backend.push((recs, out.summary.backend.clone()));
    }
    let (chat, resp) = (&by_backend[0].0, &by_backend[1].0);
    assert_eq!(by_backend[1].1, "openai-responses");
    for (c, r) in chat.iter().zip(resp) {
        assert_eq!(r.output_text, c.output_text);
        assert!(!r.output_text.is_empty());
        assert_eq!(
            (r.prompt_tokens, r.completion_tokens),
            (c.prompt_tokens, c.completion_tokens)
        );
        assert_eq!(r.completion_tokens, 6);
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        let channels = |x: &RequestRecord| x.chunks.iter().map(|k| k.channel).collect::<Vec<_>>();
        assert_eq!(channels(r), channels(c));
        assert_eq!(
            channels(r)[..3],
            [Channel::Reasoning, Channel::Reasoning, Channel::Content]
        );
        assert_eq!(r.chunks.len(), 6);
        assert_eq!(r.cached_tokens, c.cached_tokens);
    }
}

/// What a [`spawn_capture`] server saw: every request head, lower-cased, in arrival order.
type Heads = Arc<Mutex<Vec<String>>>;

/// A server that records each request head and answers it with `body` (an SSE stream written
/// as `(pause before, bytes)` pieces, chunked); keep-alive.
async fn spawn_capture(body: Vec<(Duration, String)>) -> (String, Heads) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let heads: Heads = Arc::default();
    let seen = heads.clone();
    let body = Arc::new(body);
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let (seen, body) = (seen.clone(), body.clone());
            tokio::spawn(async move {
                let _ = serve(sock, &seen, &body).await;
            });
        }
    });
    (format!("http://{addr}"), heads)
}

async fn serve(mut s: TcpStream, seen: &Heads, body: &[(Duration, String)]) -> std::io::Result<()> {
    s.set_nodelay(true)?;
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    loop {
        let end = loop {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p + 4;
            }
            let n = s.read(&mut tmp).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&tmp[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < end + len {
            let n = s.read(&mut tmp).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&tmp[..n]);
        }
        buf.drain(..end + len);
        if head.starts_with("post ") {
            seen.lock().unwrap().push(head);
        }
        s.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
        )
        .await?;
        for (pause, piece) in body {
            if !pause.is_zero() {
                tokio::time::sleep(*pause).await;
            }
            s.write_all(format!("{:x}\r\n{piece}\r\n", piece.len()).as_bytes())
                .await?;
        }
        s.write_all(b"0\r\n\r\n").await?;
    }
}

fn chat_stream(pieces: &[&str], usage: u32) -> Vec<(Duration, String)> {
    let mut v: Vec<(Duration, String)> = pieces
        .iter()
        .map(|p| {
            let ev = serde_json::json!({"choices": [{"index": 0, "text": p}]});
            (Duration::ZERO, format!("data: {ev}\n\n"))
        })
        .collect();
    v.push((
        Duration::ZERO,
        format!(
            "data: {{\"choices\":[{{\"index\":0,\"text\":\"\",\"finish_reason\":\"length\"}}],\"usage\":{{\"prompt_tokens\":3,\"completion_tokens\":{usage}}}}}\n\ndata: [DONE]\n\n"
        ),
    ));
    v
}

/// The values of header `name` over the captured heads, counted.
fn counted(heads: &Heads, name: &str) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for h in heads.lock().unwrap().iter() {
        for l in h.lines() {
            if let Some(v) = l.strip_prefix(&format!("{name}:")) {
                *m.entry(v.trim().to_string()).or_default() += 1;
            }
        }
    }
    m
}

/// `--dp-rank-roundrobin 3` and `--header-template 'X-Req: r{i}'` over 2 warmups and 7
/// profile requests: the server saw `X-data-parallel-rank` 0, 1, 2 three times each and
/// `X-Req` r0..r8 in send order (warmups counted from 0); each prompt's own header went with
/// it; the summary records the templates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn header_templates_and_dp_rank_arrive_per_request() {
    let (url, heads) = spawn_capture(chat_stream(&["a", "b"], 2)).await;
    let mut o = opts(url, 7, 2, 2);
    o.header_templates = vec![
        inferbench_client::HeaderTemplate::parse("X-Req: r{i}").unwrap(),
        inferbench_client::HeaderTemplate::dp_rank(3),
    ];
    let mut p = (**o.prepared.as_ref().unwrap()).clone();
    for (k, prompt) in p.prompts.iter_mut().enumerate() {
        prompt.headers = vec![("X-Prompt".into(), k.to_string())];
    }
    o.prepared = Some(Arc::new(p));
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    assert_eq!(profile(&out.records).len(), 7);
    let ranks = counted(&heads, "x-data-parallel-rank");
    assert_eq!(
        ranks,
        BTreeMap::from([("0".into(), 3), ("1".into(), 3), ("2".into(), 3)])
    );
    let reqs: Vec<String> = heads
        .lock()
        .unwrap()
        .iter()
        .map(|h| {
            h.lines()
                .find_map(|l| l.strip_prefix("x-req:"))
                .unwrap()
                .trim()
                .to_string()
        })
        .collect();
    assert_eq!(reqs, (0..9).map(|i| format!("r{i}")).collect::<Vec<_>>());
    let prompts = counted(&heads, "x-prompt");
    assert_eq!(prompts.values().sum::<usize>(), 9);
    for k in 0..7 {
        assert!(prompts.contains_key(&k.to_string()), "{prompts:?}");
    }
    assert_eq!(
        out.summary.inferbench.header_templates,
        ["X-Req: r{i}", "X-data-parallel-rank: {i%3}"]
    );
}

/// `--allow-empty-content` against a stream whose first chunk has empty text and whose first
/// text comes 300 ms later: TTFT ends at the empty chunk's arrival (with the response head, so
/// within 300 ms of the first byte) and no chunk is added; without the flag TTFT ends at the
/// first text. The summary records the setting only when on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_empty_content_ends_ttft_at_the_empty_chunk() {
    let mut body = vec![(
        Duration::ZERO,
        "data: {\"choices\":[{\"index\":0,\"text\":\"\"}]}\n\n".to_string(),
    )];
    let mut rest = chat_stream(&["a", "b"], 2);
    rest[0].0 = Duration::from_millis(300);
    body.extend(rest);
    let (url, _) = spawn_capture(body).await;
    for allow in [true, false] {
        let mut o = opts(url.clone(), 1, 0, 2);
        o.allow_empty_content = allow;
        let out = run_bench(o, CancellationToken::new()).await.unwrap();
        assert_eq!(
            out.end,
            inferbench_loadgen::RunEnd::Passed,
            "{:?}",
            out.notes
        );
        let r = profile(&out.records)[0].clone();
        assert!(r.success, "{:?}", r.error);
        assert_eq!(r.chunks.len(), 2);
        assert_eq!(r.completion_tokens, 2);
        let first_text = r.chunks[0].t_ns;
        let ttft_end = r.first_token_ns.unwrap();
        if allow {
            assert!(ttft_end - r.first_byte_ns.unwrap() < 250_000_000, "{r:?}");
            assert!(first_text - ttft_end >= 250_000_000, "{r:?}");
            assert_eq!(r.first_output_token_ns, Some(ttft_end));
        } else {
            assert_eq!(ttft_end, first_text);
        }
        assert_eq!(out.summary.inferbench.allow_empty_content, allow);
        let json = serde_json::to_value(&out.summary).unwrap();
        assert_eq!(
            json["inferbench"].get("allow_empty_content").is_some(),
            allow
        );
    }
}

/// A stream interval of 20 tokens (TRT-LLM `stream_interval: 20`): 3 chunks of 20 tokens each
/// (usage 60). The summary's verdict says the chunks carry 20 tokens (p50 and p99) and that ITL
/// is a chunk gap; the console titles ITL/TPOT as chunk gaps and says why. One token per chunk
/// gives no verdict and the usual titles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_token_chunks_get_a_verdict_and_chunk_gap_labels() {
    let twenty = "w ".repeat(20);
    let (url, _) = spawn_capture(chat_stream(&[&twenty, &twenty, &twenty], 60)).await;
    let out = run_bench(opts(url, 4, 0, 60), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    let v = out.summary.inferbench.multi_token_chunks.clone().unwrap();
    assert_eq!(
        (
            v.tokens_per_chunk_p50,
            v.tokens_per_chunk_p99,
            v.itl_is.as_str()
        ),
        (20.0, 20.0, "chunk_gap")
    );
    let json = serde_json::to_value(&out.summary).unwrap();
    assert_eq!(
        json["inferbench"]["multi_token_chunks"]["itl_is"],
        "chunk_gap"
    );
    let report = inferbench_loadgen::output::render_report(&out.summary);
    assert!(
        report.contains("Inter-chunk Latency (multi-token chunks)"),
        "{report}"
    );
    assert!(
        report.contains("TPOT (chunk gaps / tokens per chunk)"),
        "{report}"
    );
    assert!(
        report.contains(
            "Tokens per chunk (p50 / p99):           20.0 / 20.0: ITL and TPOT are gaps between multi-token chunks, not per-token"
        ),
        "{report}"
    );

    let (url, _) = spawn_capture(chat_stream(&["a", "b", "c"], 3)).await;
    let out = run_bench(opts(url, 4, 0, 3), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(out.summary.inferbench.multi_token_chunks, None);
    let json = serde_json::to_value(&out.summary).unwrap();
    assert!(json["inferbench"].get("multi_token_chunks").is_none());
    let report = inferbench_loadgen::output::render_report(&out.summary);
    assert!(report.contains("Inter-token Latency"), "{report}");
    assert!(!report.contains("Tokens per chunk"), "{report}");
}

/// `http_proxy` for the benchmark traffic: a target the client cannot resolve is reached
/// through the proxy (absolute-form request lines to it, every request counted), the summary
/// names the proxy; a loopback target is never proxied (the proxy sees nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_proxy_carries_the_requests_but_never_loopback() {
    let sim = inferbench_sim::spawn(inferbench_sim::SimConfig {
        served_model_name: Some("m".into()),
        ..Default::default()
    })
    .expect("sim starts");
    // A forward proxy: the tap pipes every connection to the sim, whatever host it names.
    let (proxy, sent) = spawn_tap(&sim.base_url()).await;
    let o = BenchOptions {
        proxy: Some(proxy.clone()),
        ..opts("http://bench-target.invalid:8000".into(), 3, 1, 4)
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    assert!(profile(&out.records).iter().all(|r| r.success));
    assert_eq!(
        post_lines(&sent),
        vec!["POST http://bench-target.invalid:8000/v1/completions HTTP/1.1"; 4]
    );
    assert_eq!(
        out.summary.inferbench.proxy.as_deref(),
        Some(proxy.as_str())
    );
    // A loopback target: direct, whatever the proxy setting.
    sent.lock().unwrap().clear();
    let o = BenchOptions {
        proxy: Some(proxy.clone()),
        ..opts(sim.base_url(), 2, 0, 4)
    };
    let out = run_bench(o, CancellationToken::new()).await.unwrap();
    assert_eq!(
        out.end,
        inferbench_loadgen::RunEnd::Passed,
        "{:?}",
        out.notes
    );
    assert!(post_lines(&sent).is_empty());
    assert_eq!(out.summary.inferbench.proxy, None);
}

/// Item 2 of issue 41's rest: the replay's two chat-template probes (sent before its warmup)
/// are not part of the load, so they take no send index: they carry the index-free template
/// (`X-Tenant: t1`) but no `X-data-parallel-rank` or `X-Req`, and the first warmup is request
/// 0 (rank 0); every request of the run has its own index, 0, 1, 2, … in send order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_probes_take_no_send_index() {
    use inferbench_loadgen::agentic::prompt::Prompter;
    use inferbench_loadgen::agentic::{run_replay, ReplayOptions, SchedConfig};
    use inferbench_workload::agentx::TraceRequest;

    let mut body: Vec<(Duration, String)> = ["a", "b"]
        .iter()
        .map(|p| {
            let ev = serde_json::json!({"choices": [{"index": 0, "delta": {"content": p}}]});
            (Duration::ZERO, format!("data: {ev}\n\n"))
        })
        .collect();
    body.push((
        Duration::ZERO,
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":70,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n".into(),
    ));
    let (url, heads) = spawn_capture(body).await;
    let rq = |t_s: f64| TraceRequest {
        t_s,
        input_tokens: 64,
        output_tokens: 2,
        hash_ids: vec![0],
        api_time_s: 0.01,
        model: "claude".into(),
    };
    let traces = Arc::new(vec![trace(
        "a",
        "test:1",
        vec![root_stream("a", vec![rq(0.0), rq(0.02), rq(0.04)])],
    )]);
    let tok = inferbench_workload::Tokenizer::load("o200k_base").expect("embedded tokenizer");
    let prompter = Arc::new(Prompter::new(&traces, &tok, 42).expect("corpus"));
    let opts = ReplayOptions {
        base_url: url,
        model: "m".into(),
        header_templates: vec![
            inferbench_client::HeaderTemplate::parse("X-Req: {i}").unwrap(),
            inferbench_client::HeaderTemplate::parse("X-Tenant: t1").unwrap(),
            inferbench_client::HeaderTemplate::dp_rank(2),
        ],
        idle_timeout: Duration::from_secs(10),
        request_timeout: None,
        sched: SchedConfig {
            lanes: 1,
            duration_ns: 300_000_000,
            warmup_per_lane: 2,
            ..SchedConfig::default()
        },
        grace: Duration::from_secs(2),
        server_metrics_interval: None,
        ..ReplayOptions::default()
    };
    let out = run_replay(opts, traces, prompter, CancellationToken::new())
        .await
        .expect("replay runs");
    assert!(out.records.len() >= 3, "{:?}", out.records.len());
    let heads = heads.lock().unwrap().clone();
    // The two probes, then one head per record.
    assert_eq!(heads.len(), out.records.len() + 2, "{heads:#?}");
    let header = |h: &str, name: &str| -> Option<String> {
        h.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .map(|v| v.trim().to_string())
    };
    for probe in &heads[..2] {
        assert_eq!(header(probe, "x-tenant").as_deref(), Some("t1"), "{probe}");
        assert_eq!(header(probe, "x-data-parallel-rank"), None, "{probe}");
        assert_eq!(header(probe, "x-req"), None, "{probe}");
    }
    let run = &heads[2..];
    let reqs: Vec<Option<String>> = run.iter().map(|h| header(h, "x-req")).collect();
    let want: Vec<Option<String>> = (0..run.len()).map(|i| Some(i.to_string())).collect();
    assert_eq!(reqs, want);
    let ranks: Vec<Option<String>> = run
        .iter()
        .map(|h| header(h, "x-data-parallel-rank"))
        .collect();
    let want: Vec<Option<String>> = (0..run.len()).map(|i| Some((i % 2).to_string())).collect();
    assert_eq!(ranks, want);
    assert!(run
        .iter()
        .all(|h| header(h, "x-tenant").as_deref() == Some("t1")));
}

/// Issue 39 (a fresh tester's findings, 1): an `--extra-body` output length is the one sent,
/// so it is the records' `max_tokens`, the client's response cap and the estimates' length.
/// Before the fix, `{"max_tokens":400}` over prompts of 4 cut every response at the client's
/// cap ("the server ignored max_tokens") and recorded 4. Each backend's field, and chat's
/// precedence (`max_completion_tokens` over `max_tokens`, as vLLM reads it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extra_body_output_length_is_the_records_and_the_estimates() {
    let sim = inferbench_sim::spawn(inferbench_sim::SimConfig {
        served_model_name: Some("m".into()),
        mode: inferbench_sim::Mode::Instant,
        ..Default::default()
    })
    .expect("sim starts");
    let cases = [
        (Backend::OpenAiCompletions, r#"{"max_tokens":400}"#, 400u32),
        (Backend::OpenAiChat, r#"{"max_tokens":400}"#, 400),
        (
            Backend::OpenAiChat,
            r#"{"max_tokens":400,"max_completion_tokens":300}"#,
            300,
        ),
        (
            Backend::OpenAiResponses,
            r#"{"max_output_tokens":400}"#,
            400,
        ),
    ];
    for (backend, body, want) in cases {
        let extra: serde_json::Value = serde_json::from_str(body).unwrap();
        let o = BenchOptions {
            backend,
            extra_body: extra.as_object().cloned(),
            ..opts(sim.base_url(), 3, 1, 4)
        };
        assert_eq!(
            o.estimated_output_tokens(),
            u64::from(want),
            "{backend:?} {body}"
        );
        let out = run_bench(o, CancellationToken::new()).await.unwrap();
        assert_eq!(
            out.end,
            inferbench_loadgen::RunEnd::Passed,
            "{backend:?} {body}: {:?}",
            out.notes
        );
        assert_eq!(out.records.len(), 4);
        for r in &out.records {
            assert!(r.success, "{backend:?} {body}: {:?}", r.error);
            assert_eq!(r.max_tokens, Some(want), "{backend:?} {body}");
            assert_eq!(r.completion_tokens, want, "{backend:?} {body}");
        }
    }
}
