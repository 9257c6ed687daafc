//! Measures what the runner itself adds to a sweep (docs/perf/runner.md):
//! engine launch → ready (`/health` + `/v1/models`) → stop for the simulator and, when
//! `INFERBENCH_TEST_PYTHON`/`INFERBENCH_TEST_GGUF` are set, llama.cpp; and the per-point cost of
//! the sweep machinery (artifacts, markers, engine reuse check) with a no-op load generator.
//!
//! `cargo run --release -p inferbench-runner --example sweep_overhead -- <inferbench exe> [points]`

use std::time::{Duration, Instant};

use inferbench_runner::engine::{
    build_command, free_port, EngineKind, EngineOptions, EngineProcess,
};
use inferbench_runner::ready::wait_ready;
use inferbench_runner::sweep::{run_jobs, SweepOptions};
use inferbench_runner::{CancellationToken, JobSpec, PointOutput, PointRequest, PointRunner};

struct Noop;

impl PointRunner for Noop {
    async fn run_point(
        &self,
        req: &PointRequest,
        _cancel: &CancellationToken,
    ) -> anyhow::Result<PointOutput> {
        Ok(PointOutput {
            summary: serde_json::json!({"max_concurrency": req.conc, "completed": 1}),
            aggregate: Some(serde_json::json!({"conc": req.conc})),
            completed: 1,
            ..Default::default()
        })
    }
}

fn row(framework: &str, model: &str, ep: u32, conc: u32, index: usize) -> JobSpec {
    let v = serde_json::json!({
        "image": "none", "model": model, "model-prefix": "m", "precision": "bf16",
        "framework": framework, "runner": "cpu", "isl": 128, "osl": 32, "tp": 1, "pp": 1,
        "dcp-size": 1, "pcp-size": 1, "conc": conc, "max-model-len": 416, "ep": ep,
        "dp-attn": false, "spec-decoding": "none", "exp-name": "m_128_32", "disagg": false,
        "run-eval": false
    });
    JobSpec {
        index,
        row: serde_json::from_value(v).unwrap(),
    }
}

async fn launch_ready_stop(kind: EngineKind, spec: &JobSpec, opts: &EngineOptions) -> [f64; 2] {
    let dir = tempfile_dir();
    let port = free_port("127.0.0.1").unwrap();
    let cmd = build_command(&kind, spec, "cpu_0", 1, port, opts, &dir);
    let log = dir.join("server.log");
    let t0 = Instant::now();
    let mut p = EngineProcess::spawn(&cmd, &dir, &log).unwrap();
    wait_ready(
        &format!("http://127.0.0.1:{port}"),
        Duration::from_secs(120),
        Duration::from_millis(20),
        Some(&mut p),
        &log,
        &Default::default(),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    let ready = t0.elapsed().as_secs_f64() * 1000.0;
    let t1 = Instant::now();
    p.stop(Duration::from_secs(30)).await;
    let stop = t1.elapsed().as_secs_f64() * 1000.0;
    let _ = std::fs::remove_dir_all(&dir);
    [ready, stop]
}

fn tempfile_dir() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "ib-overhead-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos() + rand_suffix()
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let exe = args
        .get(1)
        .expect("usage: sweep_overhead <inferbench exe> [points]");
    let points: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200);
    let mut opts = EngineOptions {
        inferbench_exe: exe.into(),
        ..EngineOptions::default()
    };

    let sim = row("sim", "sim-model", 1, 1, 0);
    let runs: Vec<[f64; 2]> = {
        let mut v = Vec::new();
        for _ in 0..5 {
            v.push(launch_ready_stop(EngineKind::Sim, &sim, &opts).await);
        }
        v
    };
    println!(
        "sim engine: launch->ready median {:.0} ms, stop median {:.0} ms (5 runs)",
        median(runs.iter().map(|r| r[0]).collect()),
        median(runs.iter().map(|r| r[1]).collect())
    );

    if let (Ok(py), Ok(gguf)) = (
        std::env::var("INFERBENCH_TEST_PYTHON"),
        std::env::var("INFERBENCH_TEST_GGUF"),
    ) {
        opts.python = py.into();
        opts.model_paths = vec![("smol".into(), gguf.into())];
        for slots in [1, 4] {
            let spec = row("llamacpp", "smol", slots, 1, 0);
            let mut v = Vec::new();
            for _ in 0..3 {
                v.push(launch_ready_stop(EngineKind::LlamaCpp, &spec, &opts).await);
            }
            println!(
                "llama.cpp SmolLM2-135M, {slots} slot(s): launch->ready median {:.0} ms, stop median {:.0} ms (3 runs)",
                median(v.iter().map(|r| r[0]).collect()),
                median(v.iter().map(|r| r[1]).collect())
            );
        }
    }

    // Per-point machinery with one reused sim engine and a no-op load generator.
    let out = tempfile_dir();
    let jobs: Vec<JobSpec> = (0..points)
        .map(|i| row("sim", "sim-model", 1, (i + 1) as u32, i))
        .collect();
    let sweep = SweepOptions {
        out_dir: out.clone(),
        runner_name: Some("cpu_0".into()),
        engine: opts.clone(),
        stop_grace: Duration::from_secs(5),
        ..SweepOptions::default()
    };
    let t0 = Instant::now();
    let report = run_jobs(&jobs, &sweep, &Noop, &CancellationToken::new()).await;
    let total = t0.elapsed().as_secs_f64();
    assert_eq!(
        report.end(),
        inferbench_core::RunEnd::Passed,
        "{}",
        report.render()
    );
    let t1 = Instant::now();
    let again = run_jobs(&jobs, &sweep, &Noop, &CancellationToken::new()).await;
    let skip = t1.elapsed().as_secs_f64();
    assert_eq!(again.count(inferbench_runner::Outcome::Skipped), points);
    println!(
        "{points} points on one sim engine, no-op load: {:.2} s total, {:.2} ms/point incl. one launch; re-run skipping all: {:.1} ms ({:.3} ms/point)",
        total,
        total * 1000.0 / points as f64,
        skip * 1000.0,
        skip * 1000.0 / points as f64
    );
    let _ = std::fs::remove_dir_all(&out);
}
