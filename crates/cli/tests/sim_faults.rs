//! Every simulator fault through the real client: `inferbench bench` against an in-process
//! `inferbench_sim` server, one fault per run via the `x-sim-fault` header, checking the error
//! class (DESIGN.md §3) and token accounting the client records.

use std::process::Command;

use inferbench_sim::{spawn, SimConfig, TokenizerKind};
use serde_json::Value;

/// Runs a 2-request bench with `fault`; returns the request records.
fn bench(base_url: &str, fault: &str, idle_timeout_s: &str, dir: &std::path::Path) -> Vec<Value> {
    let records = dir.join(format!("{}.jsonl", fault.replace([',', '=', '/'], "_")));
    let o = Command::new(env!("CARGO_BIN_EXE_inferbench"))
        .args(["bench", "--base-url", base_url, "--model", "SmolLM2-135M"])
        .args(["--random-input-len", "32", "--random-output-len", "8"])
        .args([
            "--num-prompts",
            "2",
            "--num-warmups",
            "0",
            "--max-concurrency",
            "1",
        ])
        .args(["--idle-timeout", idle_timeout_s, "--progress", "off"])
        .args(["--header", &format!("x-sim-fault:{fault}")])
        .arg("--save-requests")
        .arg(&records)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&records).unwrap_or_else(|e| {
        panic!(
            "{fault}: no records ({e}); stderr:\n{}",
            String::from_utf8_lossy(&o.stderr)
        )
    });
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn each_fault_yields_the_expected_client_outcome() {
    let sim = spawn(SimConfig {
        model: "SmolLM2-135M".into(),
        time_scale: 20.0,
        tokenizer: TokenizerKind::O200kBase,
        ..SimConfig::default()
    })
    .unwrap();
    let url = sim.base_url();
    let dir = std::env::temp_dir().join(format!("inferbench-sim-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // (fault, idle timeout s, expected error class or None for success, completion tokens,
    //  completion-token source)
    let cases: &[(&str, &str, Option<&str>, u64, &str)] = &[
        ("status=503", "5", Some("http_status"), 0, "*"),
        ("drop-after=2", "5", Some("stream_error"), 2, "*"),
        ("error-after=2", "5", Some("stream_error"), 2, "*"),
        ("malformed-after=1", "5", Some("malformed"), 1, "*"),
        ("stall-after=2", "0.5", Some("timeout_idle"), 2, "*"),
        ("first-byte-ms=200", "5", None, 8, "server"),
        ("crlf", "5", None, 8, "server"),
        ("keepalive", "5", None, 8, "server"),
        (
            "keepalive-ms=50,stall-after=1,stall-ms=600",
            "0.3",
            None,
            8,
            "server",
        ),
        ("no-usage", "5", None, 8, "tokenizer"),
    ];
    for &(fault, idle, class, tokens, source) in cases {
        let recs = bench(&url, fault, idle, &dir);
        assert_eq!(recs.len(), 2, "{fault}");
        for r in &recs {
            let got_class = r["error_class"].as_str();
            assert_eq!(got_class, class, "{fault}: {r}");
            assert_eq!(r["success"], class.is_none(), "{fault}: {r}");
            assert_eq!(r["completion_tokens"], tokens, "{fault}: {r}");
            if source != "*" {
                assert_eq!(r["completion_tokens_source"], source, "{fault}: {r}");
            }
            if fault.starts_with("first-byte-ms") {
                let ttft_ms = (r["first_token_ns"].as_u64().unwrap()
                    - r["sent_ns"].as_u64().unwrap()) as f64
                    / 1e6;
                assert!(ttft_ms >= 200.0, "{fault}: TTFT {ttft_ms} ms");
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
