//! Issue 41 in sweeps: the client features InferenceX's recipes pass from their benchmark
//! scripts (`--header-template`, `--dp-rank-roundrobin`, `--allow-empty-content`, `--backend`)
//! reach every point's requests, and `job.json` and `summary.json` record them. The server is
//! the in-process sim behind a forwarder that keeps every byte the client sent, so the request
//! heads that arrived are counted exactly.

use std::collections::BTreeMap;
use std::path::Path;

use inferbench_core::artifacts::ClientFeatures;
use inferbench_runner::bench::LoadgenPoint;
use inferbench_runner::sweep::{Outcome, SweepOptions};
use inferbench_runner::{run_jobs, BenchDefaults, JobSpec};
use inferbench_testutil::tap::{spawn_tap, Sent};
use tokio_util::sync::CancellationToken;

/// The request heads of the POSTs sent (lower-cased), in no particular order.
fn post_heads(sent: &Sent) -> Vec<String> {
    let mut heads = Vec::new();
    for conn in sent.lock().unwrap().iter() {
        let text = String::from_utf8_lossy(conn).to_ascii_lowercase();
        for (i, _) in text.match_indices("post ") {
            let rest = &text[i..];
            if let Some(end) = rest.find("\r\n\r\n") {
                heads.push(rest[..end].to_string());
            }
        }
    }
    heads
}

/// How often each value of header `name` arrived.
fn counted(heads: &[String], name: &str) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for h in heads {
        for l in h.lines() {
            if let Some(v) = l.strip_prefix(&format!("{name}:")) {
                *m.entry(v.trim().to_string()).or_default() += 1;
            }
        }
    }
    m
}

fn row(conc: u32) -> JobSpec {
    let v = serde_json::json!({
        "image": "none", "model": "m", "model-prefix": "fake", "precision": "fp8",
        "framework": "vllm", "runner": "h100", "isl": 32, "osl": 4, "tp": 1, "pp": 1,
        "dcp-size": 1, "pcp-size": 1, "conc": conc, "max-model-len": 328, "ep": 1,
        "dp-attn": false, "spec-decoding": "none", "exp-name": "fake_32_4", "disagg": false,
        "run-eval": false
    });
    JobSpec {
        index: 0,
        row: serde_json::from_value(v).unwrap(),
    }
}

fn read(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p:?}: {e}")))
        .unwrap()
}

/// Two points (conc 1: 2 warmups + 3 prompts; conc 2: 4 + 6) with `X-Req: {i}` and a
/// dp-rank round-robin over 2 ranks over the chat backend: each point's send index starts at 0,
/// so the heads that arrived are exactly these counts, all on `/v1/chat/completions`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sweeps_points_send_the_headers_backend_and_record_them() {
    let sim = inferbench_sim::spawn(inferbench_sim::SimConfig {
        served_model_name: Some("m".into()),
        ..Default::default()
    })
    .expect("sim starts");
    let (url, sent) = spawn_tap(&sim.base_url()).await;
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let client = ClientFeatures {
        header_templates: vec!["X-Req: {i}".into()],
        dp_rank_roundrobin: Some(2),
        allow_empty_content: true,
        backend: Some("openai-chat".into()),
        ..ClientFeatures::default()
    };
    let opts = SweepOptions {
        out_dir: out.clone(),
        runner_name: Some("h100-box_0".into()),
        base_url: Some(url),
        bench: BenchDefaults {
            prompts_per_conc: 3,
            warmups_per_conc: 2,
            client: client.clone(),
            ..BenchDefaults::default()
        },
        ..SweepOptions::default()
    };
    let jobs = vec![row(1), row(2)];
    let runner = LoadgenPoint::default();
    let report = run_jobs(&jobs, &opts, &runner, &CancellationToken::new()).await;
    let outcomes: Vec<(u32, Outcome)> = report.points.iter().map(|p| (p.conc, p.outcome)).collect();
    assert_eq!(
        outcomes,
        [(1, Outcome::Ok), (2, Outcome::Ok)],
        "{}",
        report.render()
    );

    let heads = post_heads(&sent);
    assert_eq!(heads.len(), 15, "{heads:#?}");
    assert!(
        heads
            .iter()
            .all(|h| h.starts_with("post /v1/chat/completions ")),
        "{heads:#?}"
    );
    let want = |pairs: &[(&str, usize)]| -> BTreeMap<String, usize> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    };
    assert_eq!(
        counted(&heads, "x-data-parallel-rank"),
        want(&[("0", 3 + 5), ("1", 2 + 5)])
    );
    assert_eq!(
        counted(&heads, "x-req"),
        want(&[
            ("0", 2),
            ("1", 2),
            ("2", 2),
            ("3", 2),
            ("4", 2),
            ("5", 1),
            ("6", 1),
            ("7", 1),
            ("8", 1),
            ("9", 1)
        ])
    );

    for p in &report.points {
        let dir = out.join(&p.result_filename);
        let job = read(&dir.join("job.json"));
        assert_eq!(
            job["client"],
            serde_json::json!({"header_templates": ["X-Req: {i}"], "dp_rank_roundrobin": 2,
                "allow_empty_content": true, "backend": "openai-chat"}),
            "{job}"
        );
        let summary = read(&dir.join("summary.json"));
        assert_eq!(summary["backend"], "openai-chat");
        assert_eq!(
            summary["inferbench"]["header_templates"],
            serde_json::json!(["X-Req: {i}", "X-data-parallel-rank: {i%2}"])
        );
        assert_eq!(summary["inferbench"]["allow_empty_content"], true);
    }
}

/// TLS on a local port in front of `upstream` (plain HTTP), with a test CA's certificate for
/// `localhost`: the CA (PEM) and the front's `https://` URL.
async fn tls_front(upstream: String) -> (String, String) {
    let (ca_pem, acceptor) = inferbench_testutil::tls::certificates(&["localhost"]);
    let port = inferbench_testutil::tls::spawn_tls_front(acceptor, upstream).await;
    (ca_pem, format!("https://localhost:{port}"))
}

/// `sweep --base-url https://… --tls-ca CA` (issue 41): the point's requests and its `/metrics`
/// scrapes go over TLS verified with the CA; `job.json` records `tls_ca`; the summary holds the
/// sim's exact token counts (no length anomaly) and its server metrics (vLLM's names, at most
/// the profile's generated tokens).
/// Without `tls_ca` the point fails, its requests refused as `connect` errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_sweep_verifies_with_tls_ca_and_records_it() {
    let sim = inferbench_sim::spawn(inferbench_sim::SimConfig {
        served_model_name: Some("m".into()),
        ..Default::default()
    })
    .expect("sim starts");
    let (ca_pem, url) = tls_front(sim.base_url().trim_start_matches("http://").to_string()).await;
    let tmp = tempfile::tempdir().unwrap();
    let ca = tmp.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let sweep = |out: &Path, client: ClientFeatures| SweepOptions {
        out_dir: out.to_path_buf(),
        runner_name: Some("h100-box_0".into()),
        base_url: Some(url.clone()),
        bench: BenchDefaults {
            prompts_per_conc: 3,
            warmups_per_conc: 2,
            client,
            ..BenchDefaults::default()
        },
        ..SweepOptions::default()
    };
    let out = tmp.path().join("out");
    let client = ClientFeatures {
        tls_ca: Some(ca.clone()),
        ..ClientFeatures::default()
    };
    let jobs = vec![row(1)];
    let runner = LoadgenPoint::default();
    let report = run_jobs(
        &jobs,
        &sweep(&out, client),
        &runner,
        &CancellationToken::new(),
    )
    .await;
    let p = &report.points[0];
    assert_eq!(p.outcome, Outcome::Ok, "{}", report.render());
    let dir = out.join(&p.result_filename);
    let job = read(&dir.join("job.json"));
    assert_eq!(
        job["client"],
        serde_json::json!({"tls_ca": ca.display().to_string()}),
        "{job}"
    );
    let summary = read(&dir.join("summary.json"));
    assert_eq!(summary["completed"], 3);
    // Every request got exactly the tokens it asked for (lengths drawn in [0.8 L, L]): no
    // `isl_mismatch` / `osl_mismatch` or other anomaly.
    assert_eq!(summary["inferbench"]["failed"], 0);
    assert_eq!(summary["inferbench"]["anomalous_requests"], 0, "{summary}");
    let sum = |k: &str| -> u64 {
        summary[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .sum()
    };
    assert_eq!(
        summary["total_output_tokens"].as_u64(),
        Some(sum("output_lens"))
    );
    // The server's own view, scraped over TLS (its window starts with the profile's first
    // scrape, which may come after the first request's first tokens: at most the profile's).
    let sm = &summary["inferbench"]["server_metrics"];
    assert_eq!(sm["engine"], "vllm", "{summary}");
    let generated = sm["generation_tokens"].as_f64().unwrap_or(0.0);
    assert!(
        generated > 0.0 && generated <= sum("output_lens") as f64,
        "{summary}"
    );

    // No --tls-ca: the certificate does not verify, nothing is measured.
    let out = tmp.path().join("out-no-ca");
    let report = run_jobs(
        &jobs,
        &sweep(&out, ClientFeatures::default()),
        &runner,
        &CancellationToken::new(),
    )
    .await;
    assert_ne!(report.points[0].outcome, Outcome::Ok, "{}", report.render());
}
