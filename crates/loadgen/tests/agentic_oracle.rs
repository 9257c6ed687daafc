//! Oracle test of the AgentX outputs (reference/agentx.md §4.1–4.7): a small deterministic replay
//! (three lanes, recycled plays, primers and warmups, sub-agent streams, a failed profile request
//! and a failed warmup, `/metrics` snapshots, a server log) is written as AIPerf artifacts by
//! `loadgen::agentic::aiperf`; InferenceX's own `process_agentic_result.py` and
//! `validate_agentic_result.py` then run on them, and their output must agree with
//! `inferbench_core::summary::agentic::{aggregate, validate}` on every shared key (numbers to the
//! 5th decimal) — for a single-node vLLM case and a multinode SGLang case.
//!
//! The scripts are run as InferenceX runs them: `python3 -m utils.agentic.aggregation.
//! process_agentic_result` from `<shared>/data/inferencex` with `RESULT_DIR`, `RESULT_FILENAME`,
//! `AGENTIC_OUTPUT_DIR` and the job variables in a clean environment, and `python3 -m
//! utils.agentic.validation.validate_agentic_result <artifact dir> --failed-request-threshold T`.
//! (Plain `python3 <path>/process_agentic_result.py` cannot work: the module uses relative
//! imports.) The recorded-OSL lookup reads a fake HF cache (`HF_HUB_CACHE`) holding the traces.
//!
//! `<shared>` is `$INFERBENCH_SHARED`, else the workspace's `../shared` sibling. Without it, or
//! without python3 ≥ 3.10 (the scripts use only the standard library), the test prints why and
//! passes — unless `INFERBENCH_REQUIRE_SERVICES=1`, which makes that a failure.
//! `AGENTIC_ORACLE_KEEP=<dir>` keeps each case's artifacts and the script's output there.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use inferbench_core::metrics::profile_window_ns;
use inferbench_core::prometheus::parse_prometheus;
use inferbench_core::record::{AgenticRef, ChunkRecord};
use inferbench_core::server_metrics::{summarize, Snapshot};
use inferbench_core::summary::agentic::{
    aggregate, kv_pool_tokens_from_server_log, validate, AgenticContext, ComponentMeta,
    DatasetProvenance, RequestCounts,
};
use inferbench_core::summary::{Parallelism, RoleTopology, Topology};
use inferbench_core::{Channel, ErrorClass, Phase, RequestRecord};
use inferbench_loadgen::agentic::aiperf::{
    artifact_dir, server_metrics_export, write_aiperf_summary, write_server_metrics_export,
    AiperfRunInfo, ProfileExportWriter,
};
use serde_json::{json, Value};

const MS: u64 = 1_000_000;
/// 2023-11-14T22:13:20Z, a whole second: the run clock's zero.
const ANCHOR_NS: u64 = 1_700_000_000 * 1_000_000_000;

fn skip(what: &str) {
    inferbench_testutil::available(false, what, "the AgentX oracle test needs it");
}

/// `<shared>/data/inferencex` with both scripts, or `None` (after [`skip`]).
fn inferencex_root() -> Option<PathBuf> {
    let shared = std::env::var_os("INFERBENCH_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    let root = shared.join("data/inferencex");
    for script in [
        "utils/agentic/aggregation/process_agentic_result.py",
        "utils/agentic/validation/validate_agentic_result.py",
    ] {
        if !root.join(script).is_file() {
            skip(&root.join(script).display().to_string());
            return None;
        }
    }
    let ok = Command::new("python3")
        .args([
            "-c",
            "import sys, json, math, os, re, statistics, pathlib; sys.exit(0 if sys.version_info >= (3, 10) else 1)",
        ])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        skip("python3 >= 3.10");
        return None;
    }
    Some(root)
}

// ---------------------------------------------------------------------------------------------
// The deterministic replay
// ---------------------------------------------------------------------------------------------

/// Recorded `out` of the main-stream turns of each trace (what the fake HF cache holds), and of
/// the sub-agent streams (which the script's lookup cannot see: it indexes top-level requests).
fn recorded_out(trace: &str, sub: bool, turn: u32) -> u32 {
    let base = match trace {
        "trA" => 40,
        "trB" => 25,
        _ => 60,
    };
    if sub {
        7 + 3 * turn
    } else {
        base + 11 * turn
    }
}

const MAIN_TURNS: u32 = 12;

struct Req {
    lane: u32,
    play: u32,
    trace: &'static str,
    sub: Option<&'static str>,
    turn: u32,
    phase: Phase,
    kind: &'static str,
    sent_ms: u64,
}

fn record(id: u64, q: &Req) -> RequestRecord {
    // Deterministic variety from the id.
    let ttft = 40 + (id * 37) % 190;
    let recorded = recorded_out(q.trace, q.sub.is_some(), q.turn);
    let osl = match q.kind {
        "primer" => 1,
        "warmup" => 1 + (id % 2) as u32,
        // Mostly the recorded length; a few stop early.
        _ if id.is_multiple_of(5) => recorded.saturating_sub(3).max(1),
        _ => recorded,
    };
    let per_token = 8 + (id * 13) % 17;
    let e2el = ttft + per_token * u64::from(osl.saturating_sub(1));
    let sent = q.sent_ms * MS + (id % 7) * 1_000; // sub-ms offsets
    let first = sent + ttft * MS;
    let last = sent + e2el * MS;
    let isl = 1_000 + ((id * 517) % 4_000) as u32;
    let total_blocks = isl.div_ceil(64);
    let hit_blocks = if q.turn == 0 {
        0
    } else {
        total_blocks * (3 + (id % 5) as u32) / 8
    };
    let stream = match q.sub {
        Some(a) => format!("{}::sa:{a}", q.trace),
        None => q.trace.to_string(),
    };
    RequestRecord {
        request_id: id,
        conversation_id: Some(stream),
        turn: Some(q.turn),
        phase: q.phase,
        success: true,
        scheduled_ns: sent,
        sent_ns: sent,
        first_byte_ns: Some(sent + 2 * MS),
        first_token_ns: Some(first),
        first_output_token_ns: Some(first),
        last_token_ns: Some(last),
        end_ns: last + (1 + id % 3) * MS,
        chunks: [first, last]
            .iter()
            .map(|t| ChunkRecord {
                t_ns: *t,
                channel: Channel::Content,
                tokens: None,
            })
            .collect(),
        prompt_tokens: isl + 17,
        prompt_tokens_client: isl,
        max_tokens: Some(recorded),
        completion_tokens: osl,
        agentic: Some(AgenticRef {
            lane: q.lane,
            play: q.play,
            trace_id: q.trace.into(),
            pass: u32::from(q.play >= 3),
            kind: q.kind.into(),
            hit_blocks,
            total_blocks,
            expected_output_tokens: recorded,
            expected_input_tokens: isl,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn replay() -> Vec<RequestRecord> {
    let lanes = [(0u32, "trA"), (1, "trB"), (2, "trC")];
    let mut reqs = Vec::new();
    // Warmup: one primer per lane at t*, then two zero-delay warmup requests.
    for (lane, trace) in lanes {
        let t0 = u64::from(lane) * 30;
        for (k, kind) in ["primer", "warmup", "warmup"].into_iter().enumerate() {
            reqs.push(Req {
                lane,
                play: lane,
                trace,
                sub: None,
                turn: 4 + k as u32,
                phase: Phase::Warmup,
                kind,
                sent_ms: t0 + 300 * k as u64,
            });
        }
    }
    // Profile from 2 s: main turns with sub-agent streams spawned in between; lane 0 recycles
    // its trace as play 3.
    for (lane, trace) in lanes {
        let mut t = 2_000 + u64::from(lane) * 113;
        for turn in 6..MAIN_TURNS {
            reqs.push(Req {
                lane,
                play: lane,
                trace,
                sub: None,
                turn,
                phase: Phase::Profile,
                kind: "profile",
                sent_ms: t,
            });
            if turn % 2 == 0 {
                for sturn in 0..2 {
                    reqs.push(Req {
                        lane,
                        play: lane,
                        trace,
                        sub: Some("explore_001"),
                        turn: sturn,
                        phase: Phase::Profile,
                        kind: "profile",
                        sent_ms: t + 150 + 210 * sturn as u64,
                    });
                }
            }
            t += 470 + u64::from(turn) * 23;
        }
    }
    for turn in 0..4 {
        reqs.push(Req {
            lane: 0,
            play: 3,
            trace: "trA",
            sub: None,
            turn,
            phase: Phase::Profile,
            kind: "profile",
            sent_ms: 6_100 + 430 * turn as u64,
        });
    }
    let mut recs: Vec<RequestRecord> = reqs
        .iter()
        .enumerate()
        .map(|(i, q)| record(i as u64, q))
        .collect();
    // A failed profile request (HTTP 500) and a failed warmup request (idle timeout).
    let fail = |r: &mut RequestRecord, class: ErrorClass, msg: &str, status: Option<u16>| {
        r.success = false;
        r.error_class = Some(class);
        r.error = Some(msg.into());
        r.http_status = status;
        r.first_token_ns = None;
        r.first_output_token_ns = None;
        r.last_token_ns = None;
        r.chunks.clear();
        r.completion_tokens = 0;
    };
    let n = recs.len();
    fail(
        &mut recs[n - 5],
        ErrorClass::HttpStatus,
        "HTTP 500: Internal Server Error\n{\"error\": \"boom\"}",
        Some(500),
    );
    fail(
        &mut recs[4],
        ErrorClass::TimeoutIdle,
        "no byte for 30 s",
        None,
    );
    // Completion order, as the driver hands records over.
    recs.sort_by_key(|r| (r.end_ns, r.request_id));
    recs
}

/// `/metrics` every 0.5 s from 1 s before the first send to 1 s after the last end.
fn snapshots(records: &[RequestRecord], sglang: bool) -> Vec<Snapshot> {
    let start = records.iter().map(|r| r.sent_ns).min().unwrap_or(0);
    let end = records.iter().map(|r| r.end_ns).max().unwrap_or(0);
    let anchor_s = (ANCHOR_NS / 1_000_000_000) as f64;
    let mut out = Vec::new();
    let mut t = start as f64 / 1e9 - 1.0;
    let mut k = 0u32;
    while t <= end as f64 / 1e9 + 1.0 {
        // Cumulative counters over the requests that ended by t.
        let done = records
            .iter()
            .filter(|r| (r.end_ns as f64 / 1e9) <= t && r.success);
        let (mut prompt, mut gen, mut hits) = (0.0, 0.0, 0.0);
        for r in done {
            prompt += f64::from(r.prompt_tokens);
            gen += f64::from(r.completion_tokens);
            let a = r.agentic.as_ref().unwrap();
            hits += f64::from(r.prompt_tokens) * f64::from(a.hit_blocks)
                / f64::from(a.total_blocks.max(1));
        }
        let usage = 0.05 * f64::from(k % 13) + 0.01;
        let text = if sglang {
            format!(
                "sglang:prompt_tokens_total{{tp_rank=\"0\"}} {prompt}\n\
                 sglang:generation_tokens_total{{tp_rank=\"0\"}} {gen}\n\
                 sglang:cached_tokens_total{{cache_source=\"device\"}} {}\n\
                 sglang:cached_tokens_total{{cache_source=\"host\"}} {}\n\
                 sglang:token_usage{{tp_rank=\"0\"}} {}\n\
                 sglang:cache_hit_rate{{tp_rank=\"0\"}} {usage}\n\
                 sglang:max_total_num_tokens{{dp_rank=\"0\"}} 500000\n\
                 sglang:max_total_num_tokens{{dp_rank=\"1\"}} 500000\n\
                 sglang:hicache_host_used_tokens 1000\n\
                 sglang:hicache_host_total_tokens {}\n\
                 sglang:realtime_tokens_total{{mode=\"prefill_compute\"}} {}\n\
                 sglang:realtime_tokens_total{{mode=\"decode\"}} {gen}\n",
                (hits * 0.75).floor(),
                (hits * 0.25).floor(),
                usage * 100.0,
                4000 + k,
                prompt - hits.floor(),
            )
        } else {
            format!(
                "vllm:prompt_tokens_total{{engine=\"0\",model_name=\"m\"}} {prompt}\n\
                 vllm:generation_tokens_total{{engine=\"0\",model_name=\"m\"}} {gen}\n\
                 vllm:prefix_cache_hits_total{{engine=\"0\",model_name=\"m\"}} {}\n\
                 vllm:prefix_cache_queries_total{{engine=\"0\",model_name=\"m\"}} {prompt}\n\
                 vllm:prompt_tokens_by_source_total{{engine=\"0\",source=\"local_cache_hit\"}} {}\n\
                 vllm:prompt_tokens_by_source_total{{engine=\"0\",source=\"local_compute\"}} {}\n\
                 vllm:kv_cache_usage_perc{{engine=\"0\",model_name=\"m\"}} {usage}\n\
                 vllm:num_requests_running{{engine=\"0\",model_name=\"m\"}} {}\n\
                 vllm:kv_offload_bytes_gpu_to_cpu_total{{engine=\"0\"}} {}\n\
                 vllm:kv_offload_time_gpu_to_cpu_total{{engine=\"0\"}} {}\n\
                 vllm:e2e_request_latency_seconds_bucket{{engine=\"0\",le=\"1.0\"}} {}\n\
                 vllm:e2e_request_latency_seconds_bucket{{engine=\"0\",le=\"+Inf\"}} {}\n\
                 vllm:e2e_request_latency_seconds_sum{{engine=\"0\"}} {}\n\
                 vllm:e2e_request_latency_seconds_count{{engine=\"0\"}} {}\n",
                hits.floor(),
                hits.floor(),
                prompt - hits.floor(),
                k % 4,
                1024.0 * f64::from(k),
                0.003 * f64::from(k),
                gen / 50.0,
                gen / 40.0,
                gen / 10.0,
                gen / 40.0,
            )
        };
        out.push(Snapshot {
            phase: "profile".into(),
            unix_s: anchor_s + t,
            samples: parse_prometheus(&text),
        });
        t += 0.5;
        k += 1;
    }
    out
}

/// The fake HF hub cache: one snapshot of a `cc-traces-weka` dataset with the three traces
/// (main turns `n`/`s`, a sub-agent entry the lookup skips).
fn fake_hf_cache(dir: &Path) -> PathBuf {
    let hub = dir.join("hub");
    let snap = hub.join("datasets--semianalysisai--cc-traces-weka-062126/snapshots/0123abcd");
    std::fs::create_dir_all(&snap).unwrap();
    let mut text = String::new();
    for trace in ["trA", "trB", "trC"] {
        let mut requests = Vec::new();
        for turn in 0..MAIN_TURNS {
            requests.push(json!({
                "t": f64::from(turn) * 3.0,
                "type": if turn % 2 == 0 { "s" } else { "n" },
                "in": 1000, "out": recorded_out(trace, false, turn), "hash_ids": [1, 2],
            }));
            if turn == 2 {
                requests.push(json!({
                    "t": 7.0, "type": "subagent", "agent_id": "explore_001",
                    "requests": (0..2).map(|s| json!({"t": 7.0, "type": "n", "in": 10,
                        "out": recorded_out(trace, true, s), "hash_ids": [9]})).collect::<Vec<_>>(),
                }));
            }
        }
        text.push_str(&json!({"id": trace, "block_size": 64, "requests": requests}).to_string());
        text.push('\n');
    }
    std::fs::write(snap.join("traces.jsonl"), text).unwrap();
    hub
}

// ---------------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------------

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-5 + 1e-9 * a.abs().max(b.abs())
}

/// Every difference between `ours` and `theirs` at the keys both have; keys only one side has
/// go to `only`. Returns the number of leaves compared.
fn diff(
    path: &str,
    ours: &Value,
    theirs: &Value,
    out: &mut Vec<String>,
    only: &mut Vec<String>,
) -> usize {
    let mut n = 1;
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                let p = format!("{path}.{k}");
                match b.get(k) {
                    Some(vb) => n += diff(&p, va, vb, out, only),
                    None => only.push(format!("ours only: {p}")),
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                only.push(format!("script only: {path}.{k}"));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                n += diff(&format!("{path}[{i}]"), x, y, out, only);
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            if !close(x, y) {
                out.push(format!("{path}: ours {x} != script {y}"));
            }
        }
        (a, b) if a == b => {}
        (a, b) => out.push(format!("{path}: ours {a} != script {b}")),
    }
    n
}

fn get<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(v, |v, k| &v[*k])
}

fn set(v: &mut Value, path: &[&str], x: Value) {
    let mut cur = v;
    for k in &path[..path.len() - 1] {
        cur = &mut cur[*k];
    }
    cur[path[path.len() - 1]] = x;
}

// ---------------------------------------------------------------------------------------------
// The cases
// ---------------------------------------------------------------------------------------------

struct Case {
    name: &'static str,
    ctx: AgenticContext,
    env: Vec<(&'static str, String)>,
    sglang: bool,
    server_log: String,
}

fn single_node_vllm() -> Case {
    let log = "(EngineCore_DP0 pid=101) INFO kv_cache_utils.py: GPU KV cache size: 1,234,560 tokens\n\
               (EngineCore_DP1 pid=102) INFO kv_cache_utils.py: GPU KV cache size: 1,000,000 tokens\n"
        .to_string();
    let ctx = AgenticContext {
        hw: "h200-nv".into(),
        conc: 3,
        image: "vllm/vllm-openai:v0.11.0".into(),
        recipe_fingerprint: "f".repeat(64),
        model: "org/model".into(),
        model_prefix: "model".into(),
        framework: "vllm".into(),
        precision: "fp8".into(),
        spec_decoding: "none".into(),
        disagg: false,
        topology: Topology::SingleNode {
            parallelism: Parallelism {
                tp: 4,
                pp: 2,
                dcp_size: 2,
                pcp_size: 1,
                ep: 4,
            },
            dp_attention: "false".into(),
        },
        kv_offloading: "none".into(),
        kv_offload_backend: None,
        allocated_cpu_dram_gb: 512,
        router: Some(ComponentMeta {
            name: "vllm-router".into(),
            version: Some("0.1.14".into()),
        }),
        kv_p2p_transfer: None,
        dataset: Some(DatasetProvenance {
            source_type: "public_dataset".into(),
            loader: "semianalysis_cc_traces_weka_with_subagents".into(),
            hf_dataset_name: Some("semianalysisai/cc-traces-weka-062126".into()),
            hf_split: Some("train".into()),
            num_dataset_entries: 3,
        }),
        kv_cache_pool_tokens: kv_pool_tokens_from_server_log("vllm", &log),
    };
    let env = vec![
        ("RUNNER_TYPE", "h200-nv".to_string()),
        ("CONC", "3".into()),
        ("IMAGE", "vllm/vllm-openai:v0.11.0".into()),
        ("RECIPE_FINGERPRINT", "f".repeat(64)),
        ("MODEL", "org/model".into()),
        ("MODEL_PREFIX", "model".into()),
        ("FRAMEWORK", "vllm".into()),
        ("PRECISION", "fp8".into()),
        ("SPEC_DECODING", "none".into()),
        ("DISAGG", "false".into()),
        ("IS_MULTINODE", "false".into()),
        ("TP", "4".into()),
        ("PP_SIZE", "2".into()),
        ("DCP_SIZE", "2".into()),
        ("PCP_SIZE", "1".into()),
        ("EP_SIZE", "4".into()),
        ("DP_ATTENTION", "false".into()),
        ("KV_OFFLOADING", "none".into()),
        ("TOTAL_CPU_DRAM_GB", "512".into()),
        (
            "ROUTER_METADATA",
            r#"{"name": "vllm-router", "version": "0.1.14"}"#.into(),
        ),
    ];
    Case {
        name: "single_node_vllm",
        ctx,
        env,
        sglang: false,
        server_log: log,
    }
}

fn multinode_sglang() -> Case {
    let role = |workers, tp, ep, dp: &str| RoleTopology {
        num_workers: workers,
        parallelism: Parallelism {
            tp,
            pp: 1,
            dcp_size: 1,
            pcp_size: 1,
            ep,
        },
        dp_attention: dp.into(),
    };
    let log = "server_args dp_size=2\n[2026 DP0 TP0 EP0] max_total_num_tokens=700000, chunked_prefill_size=8192\n".to_string();
    let ctx = AgenticContext {
        hw: "gb200".into(),
        conc: 3,
        image: "lmsysorg/sglang:v0.5".into(),
        model: "org/model".into(),
        model_prefix: "model".into(),
        framework: "sglang".into(),
        precision: "fp4".into(),
        spec_decoding: "mtp".into(),
        disagg: true,
        topology: Topology::MultiNode {
            prefill_gpus: 8,
            decode_gpus: 16,
            prefill: role(2, 4, 4, "true"),
            decode: role(1, 16, 16, "false"),
            prefill_hw: Some("gb200".into()),
            decode_hw: Some("gb300".into()),
        },
        kv_offloading: "dram".into(),
        kv_offload_backend: Some(ComponentMeta {
            name: "hicache".into(),
            version: None,
        }),
        allocated_cpu_dram_gb: 1024,
        kv_p2p_transfer: Some("nixl".into()),
        kv_cache_pool_tokens: kv_pool_tokens_from_server_log("sglang", &log),
        ..Default::default()
    };
    let env = vec![
        ("RUNNER_TYPE", "gb200".to_string()),
        ("CONC", "3".into()),
        ("IMAGE", "lmsysorg/sglang:v0.5".into()),
        ("MODEL", "org/model".into()),
        ("MODEL_PREFIX", "model".into()),
        ("FRAMEWORK", "sglang".into()),
        ("PRECISION", "fp4".into()),
        ("SPEC_DECODING", "mtp".into()),
        ("DISAGG", "true".into()),
        ("IS_MULTINODE", "true".into()),
        ("PREFILL_NUM_WORKERS", "2".into()),
        ("PREFILL_TP", "4".into()),
        ("PREFILL_EP", "4".into()),
        ("PREFILL_DP_ATTN", "true".into()),
        ("DECODE_NUM_WORKERS", "1".into()),
        ("DECODE_TP", "16".into()),
        ("DECODE_EP", "16".into()),
        ("DECODE_DP_ATTN", "false".into()),
        ("PREFILL_HARDWARE", "gb200".into()),
        ("DECODE_HARDWARE", "gb300".into()),
        ("KV_OFFLOADING", "dram".into()),
        ("KV_OFFLOAD_BACKEND", "hicache".into()),
        (
            "KV_OFFLOAD_BACKEND_METADATA",
            r#"{"name": "hicache"}"#.into(),
        ),
        ("TOTAL_CPU_DRAM_GB", "1024".into()),
        ("KV_P2P_TRANSFER", "nixl".into()),
    ];
    Case {
        name: "multinode_sglang",
        ctx,
        env,
        sglang: true,
        server_log: log,
    }
}

fn python(root: &Path, env: &[(&str, String)], args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new("python3");
    cmd.current_dir(root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg("-m")
        .args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("python3 runs")
}

fn run_case(root: &Path, case: &Case) {
    let tmp = tempfile::tempdir().unwrap();
    let result_dir = tmp.path().join("results");
    let out_dir = tmp.path().join("out");
    let records = replay();

    // Our artifacts.
    let mut w = ProfileExportWriter::create(&result_dir, ANCHOR_NS).unwrap();
    for r in &records {
        w.write(r).unwrap();
    }
    assert_eq!(w.lines(), records.len() as u64);
    w.finish().unwrap();
    let info = AiperfRunInfo {
        anchor_unix_ns: ANCHOR_NS,
        dataset: case.ctx.dataset.clone(),
        ..Default::default()
    };
    write_aiperf_summary(&result_dir, &records, &info).unwrap();
    let (ws, we) = profile_window_ns(&records).unwrap();
    let anchor_s = (ANCHOR_NS / 1_000_000_000) as f64;
    let window = (anchor_s + ws as f64 / 1e9, anchor_s + we as f64 / 1e9);
    let snaps = snapshots(&records, case.sglang);
    let export = server_metrics_export(&snaps, window.0, window.1, Some(1.0));
    write_server_metrics_export(&result_dir, &export, window, snaps.len()).unwrap();
    std::fs::write(result_dir.join("server.log"), &case.server_log).unwrap();
    let hub = fake_hf_cache(tmp.path());

    // The script.
    let mut env = case.env.clone();
    env.extend([
        ("RESULT_DIR", result_dir.display().to_string()),
        ("AGENTIC_OUTPUT_DIR", out_dir.display().to_string()),
        ("RESULT_FILENAME", format!("agg_{}", case.name)),
        ("HF_HUB_CACHE", hub.display().to_string()),
        ("HOME", tmp.path().display().to_string()),
    ]);
    let o = python(
        root,
        &env,
        &["utils.agentic.aggregation.process_agentic_result"],
    );
    assert!(
        o.status.success(),
        "{}: process_agentic_result.py failed:\nstdout:\n{}\nstderr:\n{}",
        case.name,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    if let Some(d) = std::env::var_os("AGENTIC_ORACLE_KEEP") {
        let d = PathBuf::from(d).join(case.name);
        std::fs::create_dir_all(&d).unwrap();
        for f in [
            "profile_export.jsonl",
            "profile_export_aiperf.json",
            "server_metrics_export.json",
        ] {
            std::fs::copy(artifact_dir(&result_dir).join(f), d.join(f)).unwrap();
        }
        std::fs::copy(
            out_dir.join(format!("agg_{}.json", case.name)),
            d.join("script.json"),
        )
        .unwrap();
    }
    let theirs: Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join(format!("agg_{}.json", case.name))).unwrap(),
    )
    .unwrap();

    // Ours.
    let summary = summarize(&snaps, window.0, window.1);
    let agg = aggregate(&records, &case.ctx, Some(&summary));
    let mut ours = agg.to_json();

    // The one known divergence: the script looks the recorded OSL up by (trace, turn) among the
    // trace's top-level requests, so a sub-agent turn gets the main turn of the same index.
    // Compare that key against our aggregate of records relabelled that way, and check that
    // ours (the true recorded lengths) differs.
    let oe = ["request_metrics", "tokens", "output_expected"];
    let script_view: Vec<RequestRecord> = records
        .iter()
        .cloned()
        .map(|mut r| {
            let sub = r
                .conversation_id
                .as_deref()
                .is_some_and(|c| c.contains("::"));
            if let (true, Some(a)) = (sub, r.agentic.as_mut()) {
                a.expected_output_tokens = recorded_out(&a.trace_id, false, r.turn.unwrap());
            }
            r
        })
        .collect();
    let relabelled = aggregate(&script_view, &case.ctx, Some(&summary)).to_json();
    assert_ne!(
        get(&ours, &oe),
        get(&theirs, &oe),
        "sub-agent lookup divergence expected"
    );
    set(&mut ours, &oe, get(&relabelled, &oe).clone());

    let (mut mismatches, mut only) = (Vec::new(), Vec::new());
    let compared = diff("", &ours, &theirs, &mut mismatches, &mut only);
    eprintln!(
        "{}: {compared} values compared with process_agentic_result.py",
        case.name
    );
    assert!(
        compared > 150,
        "{}: only {compared} values compared",
        case.name
    );
    assert!(
        mismatches.is_empty() && only.is_empty(),
        "{}: ours vs process_agentic_result.py:\n{}\n{}\nours:\n{}\nscript:\n{}",
        case.name,
        mismatches.join("\n"),
        only.join("\n"),
        serde_json::to_string_pretty(&ours).unwrap(),
        serde_json::to_string_pretty(&theirs).unwrap()
    );
    // The comparison covered the parts that matter.
    for p in [
        &["request_metrics", "latency", "ttft", "p90"][..],
        &["request_metrics", "latency", "e2e_norm_intvty", "p90"],
        &["request_metrics", "qps", "p95"],
        &["request_metrics", "throughput", "per_gpu", "total_tput_tps"],
        &["request_metrics", "cache", "theoretical_cache_hit_rate"],
        &["request_metrics", "tokens", "output_expected", "mean"],
        &["server_metrics", "cache", "gpu_cache_hit_rate"],
        &["server_metrics", "kv_cache", "gpu_usage_pct"],
        &["kv_cache_pool_tokens"],
        &["request_accounting", "error_categories", "http_status"],
        &["request_accounting", "error_categories", "timeout_idle"],
    ] {
        assert!(
            get(&theirs, p).is_number(),
            "{}: {p:?} is {}",
            case.name,
            get(&theirs, p)
        );
    }
    assert_eq!(
        theirs["server_metrics"]["adapter"],
        if case.sglang { "sglang" } else { "vllm" }
    );

    // The validity gate: passes at 10 % (1 error / N), fails at 1 % with our reason.
    let art = artifact_dir(&result_dir).display().to_string();
    let counts = RequestCounts::from_records(&records);
    for threshold in ["0.10", "0.01"] {
        let o = python(
            root,
            &[("HOME", tmp.path().display().to_string())],
            &[
                "utils.agentic.validation.validate_agentic_result",
                &art,
                "--failed-request-threshold",
                threshold,
            ],
        );
        let ours = validate(Some(&counts), threshold.parse().unwrap());
        assert_eq!(
            o.status.success(),
            ours.valid,
            "{}: threshold {threshold}",
            case.name
        );
        let stderr = String::from_utf8_lossy(&o.stderr);
        let theirs: Vec<&str> = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("ERROR: "))
            .collect();
        assert_eq!(theirs, ours.reasons, "{}: threshold {threshold}", case.name);
    }
}

#[test]
fn inferencex_scripts_agree_with_aggregate_and_validate() {
    let Some(root) = inferencex_root() else {
        return;
    };
    for case in [single_node_vllm(), multinode_sglang()] {
        run_case(&root, &case);
    }
}

#[test]
fn replay_fixture_is_what_the_oracle_needs() {
    // Independent of python: the fixture exercises warmups, primers, sub-agents, recycling and
    // both kinds of failure.
    let r = replay();
    let count = |f: &dyn Fn(&RequestRecord) -> bool| r.iter().filter(|x| f(x)).count();
    assert_eq!(count(&|x| x.agentic.as_ref().unwrap().kind == "primer"), 3);
    assert!(count(&|x| x.phase == Phase::Warmup) >= 9);
    assert!(count(&|x| x.conversation_id.as_deref().unwrap().contains("::sa:")) >= 6);
    assert!(count(&|x| x.agentic.as_ref().unwrap().pass == 1) == 4);
    assert_eq!(count(&|x| !x.success), 2);
    let by_phase: BTreeMap<bool, usize> = r.iter().fold(BTreeMap::new(), |mut m, x| {
        *m.entry(x.phase == Phase::Profile).or_default() += 1;
        m
    });
    assert!(by_phase[&true] > 20);
}
