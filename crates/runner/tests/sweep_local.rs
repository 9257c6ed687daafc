//! The local sweep against fake engines (tests/fixtures/fake_engine.py, standard-library Python):
//! artifacts, engine reuse, skip-on-rerun, and every run-time bad input (unknown runner label,
//! missing recipe, engine never ready, engine exiting at start, crash mid-point, port in use) —
//! each recorded with its class while the rest of the sweep runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use inferbench_runner::artifacts::{read_status, FailureClass, PointState};
use inferbench_runner::engine::EngineOptions;
use inferbench_runner::ready::http_get;
use inferbench_runner::sweep::{Outcome, SweepOptions};
use inferbench_runner::{run_jobs, JobSpec, PointOutput, PointRequest, PointRunner};
use tokio_util::sync::CancellationToken;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn have_python() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Hits `GET /work` once, then "benchmarks" for `hold`, returning early when cancelled.
struct FakePoint {
    calls: AtomicUsize,
    hold: Duration,
}

impl PointRunner for FakePoint {
    async fn run_point(
        &self,
        req: &PointRequest,
        cancel: &CancellationToken,
    ) -> anyhow::Result<PointOutput> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let (status, body) = http_get(&format!("{}/work", req.base_url), Duration::from_secs(5))
            .await
            .map_err(anyhow::Error::msg)?;
        anyhow::ensure!(status == 200, "GET /work -> {status}");
        let work: serde_json::Value = serde_json::from_slice(&body)?;
        // Only the crash row and the cancel test need a long point.
        let hold = if matches!(req.spec.row.model.as_str(), "ok" | "all_fail" | "none_done")
            && self.hold > Duration::from_secs(1)
            && req.spec.row.framework != "sim"
        {
            Duration::from_millis(10)
        } else {
            self.hold
        };
        tokio::select! {
            _ = tokio::time::sleep(hold) => {}
            _ = cancel.cancelled() => {
                return Ok(PointOutput { interrupted: true, ..Default::default() });
            }
        }
        Ok(PointOutput {
            summary: serde_json::json!({
                "max_concurrency": req.conc,
                "num_prompts": req.num_prompts,
                "num_warmups": req.num_warmups,
                "engine_pid": work["pid"],
                "served": work["served"],
            }),
            aggregate: Some(serde_json::json!({"conc": req.conc, "isl": req.isl})),
            // `all_fail`: every request failed; `none_done`: none finished nor failed.
            completed: match req.spec.row.model.as_str() {
                "all_fail" | "none_done" => 0,
                _ => req.num_prompts as u64,
            },
            failed: if req.spec.row.model == "all_fail" {
                5
            } else {
                0
            },
            interrupted: false,
            gate: (req.spec.row.model == "gate").then(|| "3 of 10 requests failed".to_string()),
            unreachable: false,
        })
    }
}

fn row(index: usize, framework: &str, model: &str, runner: &str, conc: u32) -> JobSpec {
    let v = serde_json::json!({
        "image": "none", "model": model, "model-prefix": "fake", "precision": "fp8",
        "framework": framework, "runner": runner, "isl": 64, "osl": 8, "tp": 1, "pp": 1,
        "dcp-size": 1, "pcp-size": 1, "conc": conc, "max-model-len": 328, "ep": 1,
        "dp-attn": false, "spec-decoding": "none", "exp-name": "fake_64_8", "disagg": false,
        "run-eval": false
    });
    JobSpec {
        index,
        row: serde_json::from_value(v).unwrap(),
    }
}

fn options(out: &Path) -> SweepOptions {
    SweepOptions {
        out_dir: out.to_path_buf(),
        runner_name: Some("testbox_0".into()),
        engine: EngineOptions {
            inferbench_exe: fixtures().join("fake_inferbench.sh"),
            recipe_dir: Some(fixtures().join("recipes")),
            ..EngineOptions::default()
        },
        ready_timeout: Duration::from_secs(15),
        ready_interval: Duration::from_millis(50),
        stop_grace: Duration::from_secs(2),
        ..SweepOptions::default()
    }
}

#[tokio::test]
async fn sweep_writes_artifacts_reuses_engine_and_skips_on_rerun() {
    if !have_python() {
        eprintln!("skipping: python3 not found");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let opts = options(dir.path());
    let jobs: Vec<JobSpec> = [1, 2, 4]
        .iter()
        .enumerate()
        .map(|(i, c)| row(i, "sim", "fake", "cpu", *c))
        .collect();
    let fake = FakePoint {
        calls: AtomicUsize::new(0),
        hold: Duration::from_millis(10),
    };
    let report = run_jobs(&jobs, &opts, &fake, &CancellationToken::new()).await;
    assert_eq!(report.count(Outcome::Ok), 3, "{}", report.render());
    assert_eq!(report.end(), inferbench_core::RunEnd::Passed);

    // One engine served all three points (identical command line): same pid, counter 1, 2, 3.
    let mut pids = Vec::new();
    for (i, c) in [1u32, 2, 4].iter().enumerate() {
        let rf = format!(
            "fake_64_8_fp8_sim_tp1-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc{c}_testbox_0"
        );
        let p = dir.path().join(&rf);
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(summary["max_concurrency"], *c);
        // InferenceX defaults: 10 x conc prompts, 2 x conc warmups.
        assert_eq!(summary["num_prompts"], 10 * c);
        assert_eq!(summary["num_warmups"], 2 * c);
        assert_eq!(summary["served"], i as u64 + 1);
        pids.push(summary["engine_pid"].clone());
        let agg: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(p.join(format!("agg_{rf}.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(agg["isl"], 64);
        let job: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p.join("job.json")).unwrap()).unwrap();
        assert_eq!(job["result_filename"], rf.as_str());
        assert_eq!(job["job"]["row"]["framework"], "sim");
        assert_eq!(job["bench"]["num_prompts"], 10 * c);
        assert_eq!(job["bench"]["num_warmups"], 2 * c);
        assert_eq!(job["provenance"]["runner_name"], "testbox_0");
        assert_eq!(
            job["provenance"]["inferbench_version"],
            env!("CARGO_PKG_VERSION")
        );
        assert!(job["provenance"]["host"]
            .as_str()
            .is_some_and(|h| !h.is_empty()));
        let cmd = job["engine"]["command"].as_str().unwrap();
        assert!(
            cmd.contains("fake_inferbench.sh sim --host 127.0.0.1 --port "),
            "{cmd}"
        );
        assert!(job["started_at"].as_str().unwrap().ends_with('Z'));
        assert!(job["finished_at"].as_str().unwrap().ends_with('Z'));
        let log = std::fs::read_to_string(p.join("server.log")).unwrap();
        assert!(log.starts_with("fake engine: start pid="), "{log}");
        let st = read_status(&p).unwrap();
        assert_eq!((st.state, st.index, st.conc), (PointState::Ok, i, *c));
        // /metrics is scraped by the load generator (telemetry::scrape), which this fake point
        // does not run: the sweep itself writes no server_metrics.jsonl.
        assert!(!p.join("server_metrics.jsonl").exists());
    }
    assert!(pids.iter().all(|p| *p == pids[0]), "{pids:?}");
    let sweep: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("sweep.json")).unwrap())
            .unwrap();
    assert_eq!(sweep["points"].as_array().unwrap().len(), 3);
    // GPU time (issue 43): every point that ran has its GPU-seconds (one launch, shared by the
    // three points), the top level their sum.
    let per: Vec<f64> = (sweep["points"].as_array().unwrap().iter())
        .map(|p| p["gpu_seconds"].as_f64().unwrap())
        .collect();
    assert!(per.iter().all(|g| *g > 0.0), "{per:?}");
    let total = sweep["gpu_seconds"].as_f64().unwrap();
    assert!(
        (per.iter().sum::<f64>() - total).abs() < 1e-9,
        "{total} {per:?}"
    );
    // …and each point's status.json and job.json say the same figure, which `ingest` reads
    // into the store (issue 43, part 2); a re-run that skips the points leaves them as they are.
    let on_disk = |sweep: &serde_json::Value| -> Vec<(f64, f64)> {
        (sweep["points"].as_array().unwrap().iter())
            .map(|p| {
                let d = std::path::PathBuf::from(p["dir"].as_str().unwrap());
                let job: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(d.join("job.json")).unwrap())
                        .unwrap();
                (
                    read_status(&d).unwrap().gpu_seconds.unwrap(),
                    job["status"]["gpu_seconds"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let stamped = on_disk(&sweep);
    assert_eq!(
        stamped,
        per.iter().map(|g| (*g, *g)).collect::<Vec<_>>(),
        "{stamped:?} {per:?}"
    );

    // Re-running skips every finished point without starting an engine or a benchmark.
    let again = run_jobs(&jobs, &opts, &fake, &CancellationToken::new()).await;
    assert_eq!(again.count(Outcome::Skipped), 3);
    assert_eq!(again.gpu_seconds, 0.0);
    assert!(again.points.iter().all(|p| p.gpu_seconds.is_none()));
    assert_eq!(on_disk(&sweep), stamped);
    assert_eq!(fake.calls.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn bad_rows_are_recorded_and_the_sweep_goes_on() {
    if !have_python() {
        eprintln!("skipping: python3 not found");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut opts = options(dir.path());
    // Long enough for a loaded CI machine to start Python, short enough for the never-ready row.
    opts.ready_timeout = Duration::from_secs(6);
    let mut labels = BTreeMap::new();
    labels.insert("cpu".to_string(), vec!["testbox_0".to_string()]);
    opts.runner_labels = Some(labels);
    let jobs = vec![
        row(0, "fake", "ok", "cpu", 1),
        row(1, "fake", "ok", "gpu-nope", 3),
        row(2, "atom", "ok", "cpu", 2),
        row(3, "fake", "never_ready", "cpu", 4),
        row(4, "fake", "exit_at_start", "cpu", 8),
        row(5, "fake", "crash_mid_point", "cpu", 16),
        row(6, "fake", "ok", "cpu", 32),
        row(7, "fake", "gate", "cpu", 64),
        row(8, "fake", "all_fail", "cpu", 128),
        row(9, "fake", "none_done", "cpu", 256),
    ];
    let fake = FakePoint {
        calls: AtomicUsize::new(0),
        hold: Duration::from_secs(10),
    };
    let report = run_jobs(&jobs, &opts, &fake, &CancellationToken::new()).await;
    let outcomes: Vec<_> = report.points.iter().map(|p| (p.outcome, p.class)).collect();
    assert_eq!(
        outcomes,
        [
            (Outcome::Ok, None),
            (Outcome::Failed, Some(FailureClass::UnknownRunner)),
            (Outcome::Failed, Some(FailureClass::MissingRecipe)),
            (Outcome::Failed, Some(FailureClass::EngineNotReady)),
            (Outcome::Failed, Some(FailureClass::EngineNotReady)),
            (Outcome::Failed, Some(FailureClass::EngineCrashed)),
            (Outcome::Ok, None),
            (Outcome::Failed, Some(FailureClass::BenchFailed)),
            (Outcome::Failed, Some(FailureClass::BenchFailed)),
            (Outcome::Failed, Some(FailureClass::BenchFailed)),
        ],
        "{}",
        report.render()
    );
    let cause = |i: usize| report.points[i].cause.clone().unwrap();
    // A point failing the error-rate gate keeps its summary.
    assert!(report.points[7].dir.join("summary.json").exists());
    assert_eq!(cause(7), "3 of 10 requests failed");
    // Nothing completed: the cause says whether requests failed or none finished at all.
    assert_eq!(cause(8), "no request completed: all 5 failed");
    assert_eq!(
        cause(9),
        "no request completed in the measured window (none failed: those in flight at its end \
         were cancelled after the grace period, or none was sent)"
    );
    assert_eq!(report.end(), inferbench_core::RunEnd::GateFailed);
    // The crash cut the 10 s point short (detected within a poll, not at the end).
    let st = read_status(&report.points[5].dir).unwrap();
    let t = |x: &str| chrono::DateTime::parse_from_rfc3339(x).unwrap();
    let took = t(&st.finished_at) - t(&st.started_at);
    assert!(took < chrono::TimeDelta::seconds(8), "{took:?}");
    assert!(
        cause(1).starts_with("unknown runner label 'gpu-nope' in row 1"),
        "{}",
        cause(1)
    );
    assert!(cause(1).contains("known labels: cpu"), "{}", cause(1));
    assert!(
        cause(2).starts_with("missing recipe for framework 'atom'"),
        "{}",
        cause(2)
    );
    assert!(
        cause(2).contains("fixed_seq_len/fake_fp8_cpu_atom.sh"),
        "{}",
        cause(2)
    );
    assert!(cause(3).contains("engine not ready after"), "{}", cause(3));
    assert!(cause(3).contains("/health -> 503"), "{}", cause(3));
    assert!(cause(3).contains("fake engine: start"), "{}", cause(3));
    assert!(
        cause(4).contains("engine exited (exit status: 3) before it was ready"),
        "{}",
        cause(4)
    );
    assert!(
        cause(4).contains("fake engine: fatal: cannot load model weights"),
        "{}",
        cause(4)
    );
    assert!(
        cause(5).starts_with("engine crashed mid-point (exit status: 1) at conc 16"),
        "{}",
        cause(5)
    );
    assert!(cause(5).contains("segfault in decode step"), "{}", cause(5));

    // Everything is on disk: each failed point has status.json, job.json, and the server log
    // when an engine ran.
    for p in &report.points {
        let st = read_status(&p.dir).unwrap_or_else(|| panic!("no status in {}", p.dir.display()));
        assert_eq!(st.class, p.class);
        assert!(p.dir.join("job.json").exists(), "{}", p.dir.display());
    }
    for i in [3, 4, 5] {
        assert!(report.points[i].dir.join("server.log").exists(), "row {i}");
    }
    // The script engine got the InferenceX environment.
    let log0 = std::fs::read_to_string(report.points[0].dir.join("server.log")).unwrap();
    assert!(
        log0.starts_with("script env: CONC=1 RESULT_FILENAME=fake_64_8_fp8_fake_tp1-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc1_testbox_0\n"),
        "{log0}"
    );

    // Re-run: finished rows are skipped, failed ones are tried again (and fail the same way).
    let fake2 = FakePoint {
        calls: AtomicUsize::new(0),
        hold: Duration::from_millis(10),
    };
    let again = run_jobs(&jobs[..3], &opts, &fake2, &CancellationToken::new()).await;
    let outcomes: Vec<_> = again.points.iter().map(|p| (p.outcome, p.class)).collect();
    assert_eq!(
        outcomes,
        [
            (Outcome::Skipped, None),
            (Outcome::Failed, Some(FailureClass::UnknownRunner)),
            (Outcome::Failed, Some(FailureClass::MissingRecipe)),
        ]
    );
    assert_eq!(fake2.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn port_in_use_fails_the_row_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let mut opts = options(dir.path());
    opts.port = port;
    let fake = FakePoint {
        calls: AtomicUsize::new(0),
        hold: Duration::from_millis(10),
    };
    let jobs = vec![row(0, "sim", "ok", "cpu", 1), row(1, "sim", "ok", "cpu", 2)];
    let report = run_jobs(&jobs, &opts, &fake, &CancellationToken::new()).await;
    for p in &report.points {
        assert_eq!(p.class, Some(FailureClass::PortInUse));
        assert!(
            p.cause
                .as_deref()
                .unwrap()
                .starts_with(&format!("port {port} on 127.0.0.1 is already in use")),
            "{:?}",
            p.cause
        );
    }
    assert_eq!(fake.calls.load(Ordering::SeqCst), 0);
    drop(taken);
}

#[tokio::test]
async fn cancel_marks_points_interrupted_and_stops_the_engine() {
    if !have_python() {
        eprintln!("skipping: python3 not found");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let opts = options(dir.path());
    let fake = FakePoint {
        calls: AtomicUsize::new(0),
        hold: Duration::from_secs(30),
    };
    let jobs = vec![row(0, "sim", "ok", "cpu", 1), row(1, "sim", "ok", "cpu", 2)];
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        c2.cancel();
    });
    let report = run_jobs(&jobs, &opts, &fake, &cancel).await;
    assert_eq!(report.end(), inferbench_core::RunEnd::Interrupted);
    // The running point is interrupted; the next never started (trial 13: both counted as
    // interrupted) and wrote nothing.
    assert_eq!(report.count(Outcome::Interrupted), 1, "{}", report.render());
    assert_eq!(report.count(Outcome::NotStarted), 1, "{}", report.render());
    assert!(
        report.render().contains(
            "2 points: 0 ok, 0 skipped (already done), 0 failed, 1 interrupted, 1 not started\n"
        ),
        "{}",
        report.render()
    );
    // Below the progress lines, which said why, only the totals (trial 17: three lines for the
    // one interrupted point).
    assert!(
        report
            .render_after_progress()
            .starts_with("2 points: 0 ok,"),
        "{}",
        report.render_after_progress()
    );
    let st = read_status(&report.points[0].dir).unwrap();
    assert_eq!(st.state, PointState::Interrupted);
    assert!(read_status(&report.points[1].dir).is_none());
}

#[tokio::test]
async fn rows_with_one_identity_are_not_silently_merged() {
    let dir = tempfile::tempdir().unwrap();
    let opts = options(dir.path());
    let fake = FakePoint {
        calls: AtomicUsize::new(0),
        hold: Duration::from_millis(10),
    };
    // Same identity: only the model differs, which RESULT_FILENAME does not encode.
    let jobs = vec![row(0, "atom", "a", "cpu", 1), row(1, "atom", "b", "cpu", 1)];
    let report = run_jobs(&jobs, &opts, &fake, &CancellationToken::new()).await;
    assert_eq!(report.points[0].class, Some(FailureClass::MissingRecipe));
    assert_eq!(
        report.points[1].class,
        Some(FailureClass::DuplicateIdentity)
    );
    assert!(report.points[1]
        .cause
        .as_deref()
        .unwrap()
        .starts_with("row 1 has the same RESULT_FILENAME (fake_64_8_fp8_atom_"));
    // The first row's marker is its own, not overwritten by the duplicate.
    assert_eq!(read_status(&report.points[0].dir).unwrap().index, 0);
}
