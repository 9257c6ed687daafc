//! The simulator at the HTTP/bytes level: a raw TCP client (no shared code with the client
//! crate) checks routes, SSE framing, usage, faults exactly as a client would see them, and
//! `/metrics` through an independent Prometheus parser.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use inferbench_sim::{spawn, FaultSpec, Mode, SimConfig, TokenizerKind};
use openmetrics_parser::PrometheusValue;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A response as read off the socket.
#[derive(Debug)]
struct Raw {
    status: u16,
    head: String,
    /// De-chunked body (or the plain body).
    body: Vec<u8>,
    /// The chunked terminator (or Content-Length worth of bytes) arrived.
    complete: bool,
    /// Reading stopped because nothing arrived for the read timeout.
    timed_out: bool,
    /// Time from sending the request to the first response byte.
    first_byte: Duration,
}

impl Raw {
    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }
    /// `data:` payloads in order (events split on blank lines, LF or CRLF).
    fn data(&self) -> Vec<String> {
        let t = self.text().replace("\r\n", "\n");
        t.split("\n\n")
            .filter_map(|e| e.strip_prefix("data: ").map(str::to_string))
            .collect()
    }
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
    idle: Duration,
) -> Raw {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    let t0 = Instant::now();
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let mut buf = vec![0u8; 65536];
    let mut first_byte = None;
    let mut timed_out = false;
    loop {
        match tokio::time::timeout(idle, s.read(&mut buf)).await {
            Err(_) => {
                timed_out = true;
                break;
            }
            Ok(Ok(0)) | Ok(Err(_)) => break,
            Ok(Ok(n)) => {
                first_byte.get_or_insert_with(|| t0.elapsed());
                raw.extend_from_slice(&buf[..n]);
            }
        }
    }
    let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        // The connection closed (or stalled) before a whole response head.
        return Raw {
            status: 0,
            head: String::from_utf8_lossy(&raw).into_owned(),
            body: Vec::new(),
            complete: false,
            timed_out,
            first_byte: first_byte.unwrap_or_default(),
        };
    };
    let head = String::from_utf8(raw[..split].to_vec()).unwrap();
    let rest = &raw[split + 4..];
    let status: u16 = head[9..12].parse().unwrap();
    let lower = head.to_ascii_lowercase();
    let (body, complete) = if lower.contains("transfer-encoding: chunked") {
        dechunk(rest)
    } else {
        let len: usize = lower
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .map(|v| v.trim().parse().unwrap())
            .unwrap_or(rest.len());
        (rest.to_vec(), rest.len() >= len)
    };
    Raw {
        status,
        head,
        body,
        complete,
        timed_out,
        first_byte: first_byte.unwrap_or_default(),
    }
}

fn dechunk(mut b: &[u8]) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    loop {
        let Some(eol) = b.windows(2).position(|w| w == b"\r\n") else {
            return (out, false);
        };
        let size =
            usize::from_str_radix(std::str::from_utf8(&b[..eol]).unwrap().trim(), 16).unwrap();
        b = &b[eol + 2..];
        if size == 0 {
            return (out, true);
        }
        if b.len() < size + 2 {
            out.extend_from_slice(&b[..b.len().min(size)]);
            return (out, false);
        }
        out.extend_from_slice(&b[..size]);
        b = &b[size + 2..];
    }
}

const SEC: Duration = Duration::from_secs(10);

fn small_timed() -> SimConfig {
    SimConfig {
        model: "SmolLM2-135M".into(),
        time_scale: 100.0,
        tokenizer: TokenizerKind::Approx,
        ..SimConfig::default()
    }
}

fn instant() -> SimConfig {
    SimConfig {
        mode: Mode::Instant,
        ..small_timed()
    }
}

async fn post(addr: SocketAddr, path: &str, body: &str, headers: &[(&str, &str)]) -> Raw {
    request(addr, "POST", path, body, headers, SEC).await
}

#[tokio::test]
async fn completions_stream_has_one_event_per_token_usage_and_done() {
    for cfg in [small_timed(), instant()] {
        let sim = spawn(cfg).unwrap();
        let r = post(
            sim.addr,
            "/v1/completions",
            r#"{"model":"SmolLM2-135M","prompt":"hello there world","max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}"#,
            &[],
        )
        .await;
        assert_eq!(r.status, 200);
        assert!(r
            .head
            .to_ascii_lowercase()
            .contains("content-type: text/event-stream"));
        assert!(r.complete);
        let d = r.data();
        assert_eq!(d.len(), 7, "{d:?}"); // 5 tokens (timed: 1 per step) + usage + [DONE]
        assert_eq!(d[6], "[DONE]");
        let texts: Vec<String> = d[..5]
            .iter()
            .map(|e| {
                let v: Value = serde_json::from_str(e).unwrap();
                v["choices"][0]["text"].as_str().unwrap().to_string()
            })
            .collect();
        assert_eq!(texts.concat(), " the of and to in");
        let last: Value = serde_json::from_str(&d[4]).unwrap();
        assert_eq!(last["choices"][0]["finish_reason"], "length");
        let usage: Value = serde_json::from_str(&d[5]).unwrap();
        assert_eq!(usage["choices"], Value::Array(vec![]));
        // " hell" "o" " ther" "e" " worl" "d" = 6 prompt tokens.
        assert_eq!(usage["usage"]["prompt_tokens"], 6);
        assert_eq!(usage["usage"]["completion_tokens"], 5);
        assert_eq!(usage["usage"]["total_tokens"], 11);
    }
}

#[tokio::test]
async fn chat_stream_role_reasoning_content_and_continuous_usage() {
    let sim = spawn(SimConfig {
        reasoning_tokens: 2,
        ..small_timed()
    })
    .unwrap();
    let r = post(
        sim.addr,
        "/v1/chat/completions",
        r#"{"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":4,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}"#,
        &[],
    )
    .await;
    let d = r.data();
    assert_eq!(d.len(), 7, "{d:?}"); // role, 4 tokens, usage, [DONE]
    let v: Vec<Value> = d[..6]
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    assert_eq!(v[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(v[1]["choices"][0]["delta"]["reasoning_content"], " the");
    assert_eq!(v[2]["choices"][0]["delta"]["reasoning_content"], " of");
    assert_eq!(v[3]["choices"][0]["delta"]["content"], " and");
    assert_eq!(v[4]["choices"][0]["finish_reason"], "length");
    for (i, e) in v[1..5].iter().enumerate() {
        assert_eq!(e["usage"]["completion_tokens"], i as u64 + 1);
    }
    assert_eq!(v[0]["object"], "chat.completion.chunk");
}

/// `/v1/responses` (issue 41): `response.created`, one `response.reasoning_text.delta` /
/// `response.output_text.delta` per token (each with its `event:` line), `response.completed`
/// with usage (capped at `max_output_tokens`: status `incomplete`, reason
/// `max_output_tokens`), no `[DONE]`; a whole `response` object without `stream`.
#[tokio::test]
async fn responses_stream_typed_events_and_completed_usage() {
    let sim = spawn(SimConfig {
        reasoning_tokens: 1,
        ..small_timed()
    })
    .unwrap();
    let r = post(
        sim.addr,
        "/v1/responses",
        r#"{"input":"hi","max_output_tokens":3,"stream":true}"#,
        &[],
    )
    .await;
    assert_eq!(r.status, 200);
    let t = r.text().replace("\r\n", "\n");
    let events: Vec<(String, Value)> = t
        .split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let name = e.lines().find_map(|l| l.strip_prefix("event: ")).unwrap();
            let data = e.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
            (name.to_string(), serde_json::from_str(data).unwrap())
        })
        .collect();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.reasoning_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.completed"
        ]
    );
    for (n, v) in &events {
        assert_eq!(v["type"], n.as_str());
    }
    assert_eq!(events[1].1["delta"], " the");
    assert_eq!(events[2].1["delta"], " of");
    let done = &events[4].1["response"];
    assert_eq!(done["object"], "response");
    assert_eq!(done["status"], "incomplete");
    assert_eq!(done["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(done["usage"]["output_tokens"], 3);
    assert_eq!(
        done["usage"]["output_tokens_details"]["reasoning_tokens"],
        1
    );
    assert!(done["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert!(!t.contains("[DONE]"));
    // Whole JSON: reasoning and message items, the same usage.
    let r = post(
        sim.addr,
        "/v1/responses",
        r#"{"input":[{"role":"user","content":"hi"}],"max_output_tokens":3}"#,
        &[],
    )
    .await;
    let v = r.json();
    assert_eq!(v["object"], "response");
    assert_eq!(v["output"][0]["type"], "reasoning");
    assert_eq!(v["output"][1]["content"][0]["text"], " of and");
    assert_eq!(v["usage"]["output_tokens"], 3);
    // A request without `input` is a 400.
    let r = post(sim.addr, "/v1/responses", r#"{"max_output_tokens":3}"#, &[]).await;
    assert_eq!(r.status, 400);
}

#[tokio::test]
async fn non_streaming_and_eos_and_min_tokens() {
    let sim = spawn(SimConfig {
        eos_after: Some(3),
        ..small_timed()
    })
    .unwrap();
    let r = post(
        sim.addr,
        "/v1/completions",
        r#"{"prompt":[1,2,3,4],"max_tokens":10}"#,
        &[],
    )
    .await;
    let v = r.json();
    assert_eq!(v["choices"][0]["text"], " the of and");
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["usage"]["prompt_tokens"], 4);
    let r = post(
        sim.addr,
        "/v1/completions",
        r#"{"prompt":[1,2,3,4],"max_tokens":10,"min_tokens":6}"#,
        &[],
    )
    .await;
    assert_eq!(r.json()["usage"]["completion_tokens"], 6);
    let r = post(
        sim.addr,
        "/v1/completions",
        r#"{"prompt":[1,2,3,4],"max_tokens":10,"ignore_eos":true}"#,
        &[],
    )
    .await;
    assert_eq!(r.json()["usage"]["completion_tokens"], 10);
    assert_eq!(r.json()["choices"][0]["finish_reason"], "length");
}

#[tokio::test]
async fn models_health_tokenize_and_request_errors() {
    let sim = spawn(SimConfig {
        max_model_len: Some(100),
        ..small_timed()
    })
    .unwrap();
    let a = sim.addr;
    let r = request(a, "GET", "/health", "", &[], SEC).await;
    assert_eq!(r.status, 200);
    let r = request(a, "GET", "/v1/models", "", &[], SEC).await;
    assert_eq!(r.json()["data"][0]["id"], "SmolLM2-135M");
    assert_eq!(r.json()["data"][0]["max_model_len"], 100);
    let r = post(a, "/tokenize", r#"{"prompt":" hello world!"}"#, &[]).await;
    assert_eq!(r.json()["count"], 5);
    let r = post(
        a,
        "/v1/completions",
        r#"{"prompt":"x","max_tokens":100}"#,
        &[],
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("maximum context length is 100"));
    let r = post(
        a,
        "/v1/completions",
        r#"{"model":"nope","prompt":"x"}"#,
        &[],
    )
    .await;
    assert_eq!(r.status, 404);
    let r = post(
        a,
        "/v1/completions",
        r#"{"prompt":"x"}"#,
        &[("x-sim-fault", "boom")],
    )
    .await;
    assert_eq!(r.status, 400);
    let r = post(a, "/v1/completions", r#"{"prompt":"#, &[]).await;
    assert_eq!(r.status, 400);
    let r = request(a, "GET", "/nowhere", "", &[], SEC).await;
    assert_eq!(r.status, 404);
}

const STREAM5: &str =
    r#"{"prompt":"hi","max_tokens":5,"stream":true,"stream_options":{"include_usage":true}}"#;

#[tokio::test]
async fn fault_status_is_an_http_error_with_json_body() {
    let sim = spawn(small_timed()).unwrap();
    let r = post(
        sim.addr,
        "/v1/completions",
        STREAM5,
        &[("x-sim-fault", "status=503")],
    )
    .await;
    assert_eq!(r.status, 503);
    assert_eq!(r.json()["error"]["code"], 503);
    assert!(r.complete);
}

#[tokio::test]
async fn fault_drop_closes_connection_mid_stream() {
    for cfg in [small_timed(), instant()] {
        let sim = spawn(cfg).unwrap();
        let r = post(
            sim.addr,
            "/v1/completions",
            STREAM5,
            &[("x-sim-fault", "drop-after=2")],
        )
        .await;
        assert_eq!(r.status, 200);
        assert!(!r.complete, "terminating chunk must be missing");
        assert!(!r.timed_out, "connection must close, not stall");
        assert_eq!(r.data().len(), 2);
        // Non-streaming: the connection closes without a response.
        let r = post(
            sim.addr,
            "/v1/completions",
            r#"{"prompt":"hi","max_tokens":5}"#,
            &[("x-sim-fault", "drop-after=0")],
        )
        .await;
        assert_eq!((r.status, r.complete, r.timed_out), (0, false, false));
    }
}

#[tokio::test]
async fn fault_error_event_ends_the_stream_cleanly_but_failed() {
    for cfg in [small_timed(), instant()] {
        let sim = spawn(cfg).unwrap();
        let r = post(
            sim.addr,
            "/v1/completions",
            STREAM5,
            &[("x-sim-fault", "error-after=2")],
        )
        .await;
        assert_eq!(r.status, 200);
        assert!(r.complete, "chunked body ends normally");
        let d = r.data();
        assert_eq!(d.len(), 4, "{d:?}"); // 2 tokens, the error, [DONE]
        let e: Value = serde_json::from_str(&d[2]).unwrap();
        assert_eq!(e["error"]["code"], 500);
        assert_eq!(d[3], "[DONE]");
        let r = post(
            sim.addr,
            "/v1/completions",
            r#"{"prompt":"hi","max_tokens":3}"#,
            &[("x-sim-fault", "error-after=0")],
        )
        .await;
        assert_eq!(r.status, 500);
    }
}

#[tokio::test]
async fn fault_malformed_event_has_invalid_json_then_stream_continues() {
    let sim = spawn(small_timed()).unwrap();
    let r = post(
        sim.addr,
        "/v1/completions",
        STREAM5,
        &[("x-sim-fault", "malformed-after=1")],
    )
    .await;
    let d = r.data();
    assert!(r.complete);
    assert_eq!(d.len(), 8); // 1 good, 1 malformed, 4 good, usage, [DONE]
    assert!(serde_json::from_str::<Value>(&d[0]).is_ok());
    assert!(serde_json::from_str::<Value>(&d[1]).is_err());
    assert!(d[2..7]
        .iter()
        .all(|e| serde_json::from_str::<Value>(e).is_ok()));
}

#[tokio::test]
async fn fault_stall_goes_silent_and_first_byte_is_late() {
    let sim = spawn(instant()).unwrap();
    let r = request(
        sim.addr,
        "POST",
        "/v1/completions",
        STREAM5,
        &[("x-sim-fault", "stall-after=1")],
        Duration::from_millis(400),
    )
    .await;
    assert!(r.timed_out);
    assert_eq!(r.data().len(), 1);
    // A finite stall delays but completes.
    let t = Instant::now();
    let r = post(
        sim.addr,
        "/v1/completions",
        STREAM5,
        &[("x-sim-fault", "stall-after=2,stall-ms=300")],
    )
    .await;
    assert!(r.complete && t.elapsed() >= Duration::from_millis(300));
    assert_eq!(r.data().len(), 7);
    let r = post(
        sim.addr,
        "/v1/completions",
        STREAM5,
        &[("x-sim-fault", "first-byte-ms=300")],
    )
    .await;
    assert!(
        r.first_byte >= Duration::from_millis(300),
        "{:?}",
        r.first_byte
    );
    assert!(r.complete);
}

#[tokio::test]
async fn fault_keepalive_ms_sends_comments_while_stalled() {
    let sim = spawn(instant()).unwrap();
    let r = post(
        sim.addr,
        "/v1/completions",
        STREAM5,
        &[("x-sim-fault", "stall-after=1,stall-ms=500,keepalive-ms=100")],
    )
    .await;
    assert!(r.complete);
    assert_eq!(r.data().len(), 7);
    let t = r.text();
    let first = t.find("data: ").unwrap();
    let second = first + 6 + t[first + 6..].find("data: ").unwrap();
    let pings = t[first..second].matches(": keep-alive\n\n").count();
    assert!(
        (2..=6).contains(&pings),
        "{pings} comments during a 500 ms stall"
    );
}

#[tokio::test]
async fn fault_framing_crlf_keepalive_and_no_usage() {
    let sim = spawn(instant()).unwrap();
    let r = post(
        sim.addr,
        "/v1/completions",
        STREAM5,
        &[("x-sim-fault", "crlf,keepalive")],
    )
    .await;
    let t = r.text();
    assert_eq!(t.matches("\r\n\r\n").count(), 7 * 2); // 7 events, each after a comment
    assert_eq!(t.replace("\r\n", "").matches('\n').count(), 0);
    assert_eq!(t.matches(": keep-alive\r\n\r\n").count(), 7);
    assert!(t.starts_with(": keep-alive\r\n\r\ndata: {"));
    let r = post(
        sim.addr,
        "/v1/completions",
        STREAM5,
        &[("x-sim-fault", "no-usage")],
    )
    .await;
    assert!(!r.text().contains("usage"));
    assert_eq!(r.data().len(), 6);
}

#[tokio::test]
async fn default_tokenizer_counts_o200k_tokens() {
    let sim = spawn(SimConfig {
        tokenizer: TokenizerKind::default(),
        ..instant()
    })
    .unwrap();
    // o200k_base: "hello" " there" " world" = 3 tokens (approx would say 6).
    let r = post(
        sim.addr,
        "/tokenize",
        r#"{"prompt":"hello there world"}"#,
        &[],
    )
    .await;
    assert_eq!(r.json()["count"], 3);
}

#[tokio::test]
async fn configured_fault_rate_is_deterministic_per_seed() {
    let statuses = |seed| async move {
        let sim = spawn(SimConfig {
            fault: Some(FaultSpec::parse("status=500/429").unwrap()),
            fault_rate: 0.5,
            seed,
            ..instant()
        })
        .unwrap();
        let mut v = Vec::new();
        for _ in 0..40 {
            v.push(
                post(
                    sim.addr,
                    "/v1/completions",
                    r#"{"prompt":"x","max_tokens":1}"#,
                    &[],
                )
                .await
                .status,
            );
        }
        v
    };
    let a = statuses(7).await;
    assert_eq!(a, statuses(7).await);
    assert_ne!(a, statuses(8).await);
    let errors = a.iter().filter(|&&s| s != 200).count();
    assert!((10..=30).contains(&errors), "{errors} of 40");
    assert!(a.contains(&500) && a.contains(&429));
}

#[tokio::test]
async fn metrics_parse_and_count_prefix_hits_analytically() {
    // N requests, one after another, sharing a 256-token prefix (16 blocks) plus 40 unique
    // tokens: hits = (N − 1)·256 tokens, queries = N·296.
    let sim = spawn(small_timed()).unwrap();
    let n = 5u64;
    for i in 0..n {
        let mut ids: Vec<u32> = (0..256).collect();
        ids.extend((0..40).map(|j| 10_000 * (i as u32 + 1) + j));
        let body = serde_json::json!({"prompt": ids, "max_tokens": 3}).to_string();
        let r = post(sim.addr, "/v1/completions", &body, &[]).await;
        assert_eq!(r.status, 200);
        let cached = if i == 0 { 0 } else { 256 };
        assert_eq!(
            r.json()["usage"]["prompt_tokens_details"]["cached_tokens"],
            cached
        );
    }
    let r = request(sim.addr, "GET", "/metrics", "", &[], SEC).await;
    let text = r.text();
    let exp = openmetrics_parser::prometheus::parse_prometheus(&text).unwrap();
    let get = |name: &str| -> f64 {
        let fam = exp
            .families
            .get(name)
            .unwrap_or_else(|| panic!("{name} missing"));
        let s = fam.iter_samples().next().expect("one sample");
        match &s.value {
            PrometheusValue::Counter(c) => c.value.as_f64(),
            PrometheusValue::Gauge(v) | PrometheusValue::Unknown(v) => v.as_f64(),
            other => panic!("{name}: {other:?}"),
        }
    };
    assert_eq!(get("vllm:prefix_cache_queries_total"), (n * 296) as f64);
    assert_eq!(get("vllm:prefix_cache_hits_total"), ((n - 1) * 256) as f64);
    assert_eq!(get("vllm:generation_tokens_total"), (n * 3) as f64);
    assert_eq!(get("vllm:prompt_tokens_total"), (n * 296) as f64);
    assert_eq!(get("vllm:num_requests_running"), 0.0);
    assert_eq!(get("vllm:num_requests_waiting"), 0.0);
    assert_eq!(get("vllm:kv_cache_usage_perc"), 0.0);
    // The settings' info gauge parses as Prometheus text too (issue 39 §5).
    assert_eq!(get("inferbench_sim:config_info"), 1.0);
    let ttft = exp.families["vllm:time_to_first_token_seconds"]
        .iter_samples()
        .next()
        .unwrap();
    match &ttft.value {
        PrometheusValue::Histogram(h) => {
            assert_eq!(h.count, Some(n));
            assert_eq!(h.buckets.last().unwrap().count.as_f64(), n as f64);
        }
        other => panic!("{other:?}"),
    }
    assert!(text.contains("vllm:request_success_total{engine=\"0\",model_name=\"SmolLM2-135M\",finished_reason=\"length\"} 5"));
}

#[tokio::test]
async fn instant_mode_serves_many_concurrent_streams() {
    let sim = spawn(instant()).unwrap();
    let addr = sim.addr;
    assert_eq!(
        request(addr, "POST", "/stats/reset", "", &[], SEC)
            .await
            .status,
        200
    );
    let mut tasks = Vec::new();
    for _ in 0..200 {
        tasks.push(tokio::spawn(async move {
            let r = post(
                addr,
                "/v1/completions",
                r#"{"prompt":"x","max_tokens":300,"stream":true}"#,
                &[],
            )
            .await;
            (r.complete, r.data().len())
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), (true, 301));
    }
    // sse-instant-compatible counters for `inferbench selftest`.
    let s = request(addr, "GET", "/stats", "", &[], SEC).await.json();
    assert_eq!(s["tokens"], 200 * 300);
    assert_eq!(s["responses_completed"], 200);
    assert_eq!(s["inflight_now"], 0);
    let avg = s["inflight_avg"].as_f64().unwrap();
    assert!(avg > 0.0 && avg <= 200.0, "{avg}");
    assert!(s["inflight_max"].as_u64().unwrap() <= 200);
}

#[tokio::test]
async fn client_disconnect_frees_queued_and_running_sequences() {
    // One sequence at a time, real time: A runs (2,000 tokens at ~1 ms/step), B waits.
    let sim = spawn(SimConfig {
        max_num_seqs: 1,
        time_scale: 1.0,
        ..small_timed()
    })
    .unwrap();
    let open = |addr| async move {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let body = r#"{"prompt":"x","max_tokens":2000,"stream":true}"#;
        let req = format!(
            "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).await.unwrap();
        s
    };
    let metric = |text: &str, name: &str| -> f64 {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    // Polls /metrics until `want` holds for every (line prefix, value) pair (5 s at most).
    let wait_for = |want: Vec<(&'static str, f64)>| async move {
        let t0 = Instant::now();
        loop {
            let m = request(sim.addr, "GET", "/metrics", "", &[], SEC)
                .await
                .text();
            if want.iter().all(|(n, v)| metric(&m, n) == *v) {
                return;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "timeout waiting for {want:?}\n{m}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    const ABORTS: &str = "vllm:request_success_total{engine=\"0\",model_name=\"SmolLM2-135M\",finished_reason=\"abort\"}";
    let a = open(sim.addr).await;
    wait_for(vec![("vllm:num_requests_running{", 1.0)]).await;
    let b = open(sim.addr).await;
    wait_for(vec![("vllm:num_requests_waiting{", 1.0)]).await;
    drop(b);
    wait_for(vec![
        ("vllm:num_requests_waiting{", 0.0),
        ("vllm:num_requests_running{", 1.0),
        (ABORTS, 1.0),
    ])
    .await;
    drop(a);
    wait_for(vec![
        ("vllm:num_requests_running{", 0.0),
        ("vllm:kv_cache_usage_perc{", 0.0),
        (ABORTS, 2.0),
    ])
    .await;
}

#[tokio::test]
async fn second_turn_hits_prompt_and_generated_blocks_of_the_first() {
    // Turn 2 re-sends turn 1 (prompt + the assistant's answer): every full block of turn 1's
    // KV — its prompt and all generated tokens but the last (never computed) — is a hit.
    for tokenizer in [TokenizerKind::O200kBase, TokenizerKind::Approx] {
        let sim = spawn(SimConfig {
            tokenizer,
            ..small_timed()
        })
        .unwrap();
        let u1 = "Tell me about the history of the city of Rome. ".repeat(30);
        let b1 =
            serde_json::json!({"messages": [{"role": "user", "content": u1}], "max_tokens": 100});
        let r1 = post(sim.addr, "/v1/chat/completions", &b1.to_string(), &[])
            .await
            .json();
        let answer = r1["choices"][0]["message"]["content"].as_str().unwrap();
        let p1 = r1["usage"]["prompt_tokens"].as_u64().unwrap();
        let b2 = serde_json::json!({"messages": [
            {"role": "user", "content": u1},
            {"role": "assistant", "content": answer},
            {"role": "user", "content": "And then?"}], "max_tokens": 10});
        let r2 = post(sim.addr, "/v1/chat/completions", &b2.to_string(), &[])
            .await
            .json();
        let cached = r2["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap();
        assert_eq!(cached, (p1 + 100 - 1) / 16 * 16, "{tokenizer:?}");
    }
}

#[tokio::test]
async fn keep_alive_connection_serves_requests_back_to_back() {
    // Clients pool connections: each chunked SSE body must end cleanly so the next request
    // can follow on the same socket.
    for cfg in [small_timed(), instant()] {
        let sim = spawn(cfg).unwrap();
        let mut s = TcpStream::connect(sim.addr).await.unwrap();
        let req = format!(
            "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{STREAM5}",
            STREAM5.len()
        );
        for _ in 0..3 {
            s.write_all(req.as_bytes()).await.unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.ends_with(b"\r\n0\r\n\r\n") {
                let n = tokio::time::timeout(SEC, s.read(&mut buf))
                    .await
                    .unwrap()
                    .unwrap();
                assert!(n > 0, "connection closed");
                got.extend_from_slice(&buf[..n]);
            }
            let text = String::from_utf8_lossy(&got);
            assert!(text.starts_with("HTTP/1.1 200"));
            assert_eq!(text.matches("data: ").count(), 7);
        }
    }
}

#[tokio::test]
async fn fixed_step_time_gives_known_ttft_and_itl() {
    // 40 ms per step in real time: the 1-step prefill gives TTFT ≈ 40 ms, then one token per
    // 40 ms. Arrival times of the SSE events are read off the socket.
    let sim = spawn(SimConfig {
        time_scale: 1.0,
        fixed_step_s: Some(0.040),
        ..small_timed()
    })
    .unwrap();
    let mut s = TcpStream::connect(sim.addr).await.unwrap();
    let body = r#"{"prompt":"hi","max_tokens":5,"stream":true}"#;
    let req = format!(
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let t0 = Instant::now();
    s.write_all(req.as_bytes()).await.unwrap();
    let mut times = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = tokio::time::timeout(SEC, s.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        if n == 0 {
            break;
        }
        let events = String::from_utf8_lossy(&buf[..n])
            .matches("\"text\"")
            .count();
        for _ in 0..events {
            times.push(t0.elapsed().as_secs_f64() * 1000.0);
        }
    }
    assert_eq!(times.len(), 5, "{times:?}");
    assert!((40.0..120.0).contains(&times[0]), "TTFT {times:?}");
    for w in times.windows(2) {
        let gap = w[1] - w[0];
        assert!((5.0..100.0).contains(&gap), "ITL {times:?}");
    }
    let mean_itl = (times[4] - times[0]) / 4.0;
    assert!((30.0..50.0).contains(&mean_itl), "{times:?}");
}

/// Issue: a 1M-byte prompt without spaces panicked the BPE tokenizer (regex stack overflow), and
/// 100k bytes took seconds on the server's only runtime thread, stalling every stream and
/// `/health`. Now: a clean answer, no panic, and the server stays responsive meanwhile.
#[tokio::test]
async fn megabyte_prompt_without_spaces_neither_panics_nor_stalls_the_server() {
    let big = format!(r#"{{"prompt":"{}","max_tokens":1}}"#, "a".repeat(1_000_000));
    // A context long enough that the prompt is tokenized (and then served or refused).
    let sim = spawn(SimConfig {
        model: "SmolLM2-135M".into(),
        max_model_len: Some(1 << 20),
        fixed_step_s: Some(0.01),
        threads: 1,
        ..SimConfig::default()
    })
    .unwrap();
    let a = sim.addr;
    // The first answer waits for the BPE tables to load (server start-up).
    assert_eq!(request(a, "GET", "/health", "", &[], SEC).await.status, 200);
    let stream = tokio::spawn(async move {
        post(
            a,
            "/v1/completions",
            r#"{"prompt":"hi","max_tokens":200,"stream":true,"stream_options":{"include_usage":true}}"#,
            &[],
        )
        .await
    });
    let big_req = tokio::spawn({
        let big = big.clone();
        async move { request(a, "POST", "/v1/completions", &big, &[], SEC * 6).await }
    });
    let mut worst = Duration::ZERO;
    let mut pings = 0;
    while !big_req.is_finished() {
        let t = Instant::now();
        let r = request(a, "GET", "/health", "", &[], SEC).await;
        assert_eq!(r.status, 200);
        worst = worst.max(t.elapsed());
        pings += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = big_req.await.unwrap();
    assert!(
        r.status == 200 || (400..500).contains(&r.status),
        "{} {}",
        r.status,
        r.head
    );
    assert!(pings >= 1);
    assert!(worst < Duration::from_millis(500), "/health took {worst:?}");
    let s = stream.await.unwrap();
    assert_eq!(s.status, 200);
    let last = s.data().iter().rev().nth(1).cloned().unwrap();
    let v: Value = serde_json::from_str(&last).unwrap();
    assert_eq!(v["usage"]["completion_tokens"], 200, "{last}");

    // The model's own context (8,192 tokens): over 64 bytes per token is refused before any
    // tokenization, with vLLM's wording.
    let sim = spawn(SimConfig {
        model: "SmolLM2-135M".into(),
        ..SimConfig::default()
    })
    .unwrap();
    let t = Instant::now();
    let r = post(sim.addr, "/v1/completions", &big, &[]).await;
    assert_eq!(r.status, 400);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(
        msg.contains("maximum context length is 8192") && msg.contains("1000000 bytes"),
        "{msg}"
    );
    assert!(t.elapsed() < SEC);
    let chat = format!(
        r#"{{"messages":[{{"role":"user","content":"{}"}}]}}"#,
        "a".repeat(1_000_000)
    );
    let r = post(sim.addr, "/v1/chat/completions", &chat, &[]).await;
    assert_eq!(r.status, 400, "{}", r.text());
    let r = post(sim.addr, "/tokenize", &big, &[]).await;
    assert_eq!(r.status, 400, "{}", r.text());
}

/// Issues: vLLM answers 400 where the simulator served or counted wrongly: `min_tokens` over
/// `max_tokens`, empty `messages`, `n` > 1; and an unknown route's 404 counted in
/// `request_errors_total`.
#[tokio::test]
async fn requests_vllm_refuses_are_refused_and_404s_are_not_request_errors() {
    let sim = spawn(small_timed()).unwrap();
    let a = sim.addr;
    let msg = |r: &Raw| r.json()["error"]["message"].as_str().unwrap().to_string();
    let r = post(
        a,
        "/v1/completions",
        r#"{"prompt":"x","max_tokens":3,"min_tokens":5}"#,
        &[],
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        msg(&r),
        "min_tokens must be less than or equal to max_tokens=3, got 5."
    );
    let r = post(a, "/v1/chat/completions", r#"{"messages":[]}"#, &[]).await;
    assert_eq!(r.status, 400);
    assert_eq!(msg(&r), "messages must contain at least one message");
    let r = post(
        a,
        "/v1/completions",
        r#"{"prompt":"x","max_tokens":2,"n":2}"#,
        &[],
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        msg(&r),
        "n = 2 is not supported by the simulator (only n = 1)"
    );
    // min_tokens above the default output length raises it (no max_tokens given).
    let r = post(
        a,
        "/v1/completions",
        r#"{"prompt":"x","min_tokens":300,"n":1}"#,
        &[],
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["usage"]["completion_tokens"], 300);
    for _ in 0..3 {
        let r = request(a, "GET", "/favicon.ico", "", &[], SEC).await;
        assert_eq!(r.status, 404);
    }
    let m = request(a, "GET", "/metrics", "", &[], SEC).await.text();
    let errors: Vec<&str> = m
        .lines()
        .filter(|l| l.starts_with("inferbench_sim:request_errors_total"))
        .collect();
    assert_eq!(errors.len(), 1, "{m}");
    assert!(errors[0].ends_with(" 3"), "{}", errors[0]);
    // The engine's step counters (a starved sim's timings are flagged from them).
    for name in [
        "inferbench_sim:token_chunks_total{",
        "inferbench_sim:late_token_chunks_total{",
    ] {
        assert_eq!(m.lines().filter(|l| l.starts_with(name)).count(), 1, "{m}");
    }
}
