//! Evals inside sweeps (issue 10): a `run-eval` row gets GSM8K after its throughput point, an
//! `eval-only` row gets only the eval, against a replay server whose every answer ends
//! `#### 72` (so scores are exact: 3 of 4 problems right). InferenceX's eval artifact
//! (`eval_<EXP_NAME>_<RESULT_FILENAME>/meta_env.json`, `results_gsm8k.json`,
//! `samples_gsm8k.jsonl`), the threshold rule (eval-only rows only), resume, `--no-evals`,
//! missing data, and the Slurm gather's view of the same points.

use std::path::{Path, PathBuf};
use std::time::Duration;

use inferbench_client::Backend;
use inferbench_runner::artifacts::{read_status, FailureClass, PointState};
use inferbench_runner::evals::EvalSettings;
use inferbench_runner::sweep::{gather, Outcome, PointKind, SweepOptions};
use inferbench_runner::{run_jobs, JobSpec, PointOutput, PointRequest, PointRunner};
use inferbench_testutil::replay::{spawn_replay_thread, ReplayCase, ReplayEnd};
use tokio_util::sync::CancellationToken;

/// Throughput points that succeed at once (the eval is what is under test).
struct QuickPoint;

impl PointRunner for QuickPoint {
    async fn run_point(
        &self,
        req: &PointRequest,
        _cancel: &CancellationToken,
    ) -> anyhow::Result<PointOutput> {
        Ok(PointOutput {
            summary: serde_json::json!({"max_concurrency": req.conc}),
            aggregate: None,
            completed: 1,
            ..PointOutput::default()
        })
    }
}

fn replay_72() -> String {
    spawn_replay_thread(ReplayCase::completion_text("Adding up: 72.\n#### 72"))
}

/// Four test problems (answers 72, 1,234, 72, 72) and five train shots.
fn data_dir(dir: &Path) -> PathBuf {
    let d = dir.join("gsm8k");
    std::fs::create_dir_all(&d).unwrap();
    let line = |q: &str, a: &str| serde_json::json!({"question": q, "answer": a}).to_string();
    let test: Vec<String> = ["72", "1,234", "72", "72"]
        .iter()
        .enumerate()
        .map(|(i, a)| line(&format!("Problem {i}?"), &format!("work\n#### {a}")))
        .collect();
    std::fs::write(d.join("test.jsonl"), test.join("\n") + "\n").unwrap();
    let train: Vec<String> = (0..5)
        .map(|i| line(&format!("Shot {i}?"), &format!("{i}+0={i}\n#### {i}")))
        .collect();
    std::fs::write(d.join("train.jsonl"), train.join("\n") + "\n").unwrap();
    d
}

fn row(index: usize, exp: &str, conc: u32, run_eval: bool, eval_only: bool) -> JobSpec {
    let mut v = serde_json::json!({
        "image": "none", "model": "org/Model", "model-prefix": "gptoss", "precision": "fp8",
        "framework": "vllm", "runner": "h100", "isl": 8192, "osl": 1024, "tp": 2, "pp": 1,
        "dcp-size": 1, "pcp-size": 1, "conc": conc, "max-model-len": 9472, "ep": 1,
        "dp-attn": false, "spec-decoding": "none", "exp-name": exp, "disagg": false,
        "run-eval": run_eval
    });
    if eval_only {
        v["eval-only"] = true.into();
    }
    JobSpec {
        index,
        row: serde_json::from_value(v).unwrap(),
    }
}

fn options(out: &Path, url: &str, data: Option<PathBuf>) -> SweepOptions {
    SweepOptions {
        out_dir: out.to_path_buf(),
        runner_name: Some("h100-box_0".into()),
        base_url: Some(url.to_string()),
        evals: EvalSettings {
            data_dir: data,
            max_tokens: Some(32),
            backend: Backend::OpenAiCompletions,
            ..EvalSettings::default()
        },
        ..SweepOptions::default()
    }
}

fn read(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p:?}: {e}")))
        .unwrap()
}

#[tokio::test]
async fn evals_run_after_throughput_and_for_eval_only_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let url = replay_72();
    let data = data_dir(tmp.path());
    let out = tmp.path().join("out");
    let jobs = vec![
        row(0, "gptoss_8k1k", 32, true, false),
        row(1, "gptoss_8k1k_e", 16, true, true),
    ];
    let opts = options(&out, &url, Some(data.clone()));
    let report = run_jobs(&jobs, &opts, &QuickPoint, &CancellationToken::new()).await;
    let got: Vec<(usize, PointKind, u32, Outcome, Option<FailureClass>)> = report
        .points
        .iter()
        .map(|p| (p.index, p.kind, p.conc, p.outcome, p.class))
        .collect();
    assert_eq!(
        got,
        [
            (0, PointKind::Throughput, 32, Outcome::Ok, None),
            // 0.75 < gptoss's 0.91, but a throughput row's eval only reports its score.
            (0, PointKind::Eval, 32, Outcome::Ok, None),
            // The eval-only row: no throughput point, and below the threshold it fails.
            (
                1,
                PointKind::Eval,
                16,
                Outcome::Failed,
                Some(FailureClass::EvalBelowThreshold)
            ),
        ],
        "{}",
        report.render()
    );
    assert_eq!(report.end(), inferbench_core::RunEnd::GateFailed);
    let rendered = report.render();
    assert!(
        rendered.contains("FAILED row 1 eval (conc 16) [eval_below_threshold]: gsm8k strict-match 0.7500, flexible-extract 0.7500: below the threshold 0.91 for model prefix gptoss"),
        "{rendered}"
    );

    // InferenceX's artifact for row 0.
    let rf0 = "gptoss_8k1k_fp8_vllm_tp2-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc32_h100-box_0";
    let e0 = out.join(format!("eval_gptoss_8k1k_{rf0}"));
    assert_eq!(
        read(&e0.join("meta_env.json")),
        serde_json::json!({
            "is_multinode": false, "framework": "vllm", "precision": "fp8",
            "spec_decoding": "none", "recipe_fingerprint": "", "tp": 2, "pp": 1,
            "dcp_size": 1, "pcp_size": 1, "conc": 32, "ep": 1, "dp_attention": false,
            "model": "org/Model", "infmax_model_prefix": "gptoss", "hw": "h100",
            "isl": "8192", "osl": "1024", "result_filename": rf0
        })
    );
    let r = read(&e0.join("results_gsm8k.json"));
    assert_eq!(r["results"]["gsm8k"]["exact_match,strict-match"], 0.75);
    assert_eq!(
        r["results"]["gsm8k"]["exact_match_stderr,strict-match"],
        0.25
    );
    assert_eq!(r["n-samples"]["gsm8k"]["effective"], 4);
    assert_eq!(r["threshold"], 0.91);
    assert_eq!(r["config"]["max_tokens"], 32);
    assert_eq!(
        std::fs::read_to_string(e0.join("samples_gsm8k.jsonl"))
            .unwrap()
            .lines()
            .count(),
        4
    );
    assert_eq!(read_status(&e0).unwrap().state, PointState::Ok);
    assert_eq!(read(&e0.join("job.json"))["status"]["state"], "ok");
    // The throughput point of row 0 is where it always was.
    assert_eq!(read_status(&out.join(rf0)).unwrap().state, PointState::Ok);
    // sweep.json names eval points; throughput points carry no kind.
    let sweep = read(&out.join("sweep.json"));
    assert_eq!(sweep["points"][0].get("kind"), None);
    assert_eq!(sweep["points"][1]["kind"], "eval");

    // InferenceX's own collector reads the sweep's eval artifacts as its own.
    if let Some(script) = inferbench_testutil::shared_dir(
        env!("CARGO_MANIFEST_DIR"),
        "data/inferencex/utils/collect_eval_results.py",
    ) {
        let code = "import sys, types, json; sys.modules['tabulate'] = types.SimpleNamespace(tabulate=None); \
                    sys.path.insert(0, sys.argv[1]); import collect_eval_results as c; from pathlib import Path; \
                    rows = c.collect_eval_rows(Path(sys.argv[2])); \
                    print(json.dumps(sorted([[r['model_prefix'], r['hw'], r['framework'], r['tp'], r['conc'], r['task'], r['score'], r['em_flexible'], r['n_eff']] for r in rows])))";
        let o = std::process::Command::new("python3")
            .args(["-c", code])
            .arg(script.parent().unwrap())
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(
            rows,
            serde_json::json!([
                ["gptoss", "H100", "vllm", 2, 16, "gsm8k", 0.75, 0.75, 4],
                ["gptoss", "H100", "vllm", 2, 32, "gsm8k", 0.75, 0.75, 4]
            ])
        );
    }

    // The Slurm gather reads the same three points from their markers.
    let g = gather(&jobs, &opts);
    assert_eq!(
        g.points
            .iter()
            .map(|p| (p.index, p.kind, p.outcome))
            .collect::<Vec<_>>(),
        [
            (0, PointKind::Throughput, Outcome::Ok),
            (0, PointKind::Eval, Outcome::Ok),
            (1, PointKind::Eval, Outcome::Failed)
        ]
    );

    // Re-run: finished points are skipped, the failed eval runs again; without the threshold
    // check it passes.
    let mut opts2 = opts.clone();
    opts2.evals.check_threshold = false;
    let report = run_jobs(&jobs, &opts2, &QuickPoint, &CancellationToken::new()).await;
    let got: Vec<Outcome> = report.points.iter().map(|p| p.outcome).collect();
    assert_eq!(
        got,
        [Outcome::Skipped, Outcome::Skipped, Outcome::Ok],
        "{}",
        report.render()
    );

    // --no-evals: throughput only; the eval-only row has no point at all.
    let mut off = options(&tmp.path().join("off"), &url, Some(data.clone()));
    off.evals.enabled = false;
    let report = run_jobs(&jobs, &off, &QuickPoint, &CancellationToken::new()).await;
    let got: Vec<(usize, PointKind)> = report.points.iter().map(|p| (p.index, p.kind)).collect();
    assert_eq!(got, [(0, PointKind::Throughput)]);

    // --eval-concurrency: each eval point names the concurrency it ran at, not the row's.
    let mut three = options(&tmp.path().join("three"), &url, Some(data));
    three.evals.concurrency = Some(3);
    let report = run_jobs(&jobs, &three, &QuickPoint, &CancellationToken::new()).await;
    let concs: Vec<u32> = report
        .points
        .iter()
        .filter(|p| p.kind == PointKind::Eval)
        .map(|p| p.conc)
        .collect();
    assert_eq!(concs, [3, 3], "{}", report.render());
}

#[tokio::test]
async fn an_eval_without_data_fails_alone_and_says_what_to_pass() {
    let tmp = tempfile::tempdir().unwrap();
    let url = replay_72();
    let out = tmp.path().join("out");
    let jobs = vec![row(0, "gptoss_8k1k", 8, true, false)];
    // No data dir, an empty cache, and a download source that refuses (offline).
    let mut offline = options(&out, &url, None);
    offline.evals.cache_dir = tmp.path().join("cache");
    offline.evals.source_url = "http://127.0.0.1:9/gsm8k".into();
    let report = run_jobs(&jobs, &offline, &QuickPoint, &CancellationToken::new()).await;
    let p = &report.points;
    assert_eq!(
        (p[0].kind, p[0].outcome),
        (PointKind::Throughput, Outcome::Ok)
    );
    assert_eq!(
        (p[1].kind, p[1].outcome, p[1].class),
        (
            PointKind::Eval,
            Outcome::Failed,
            Some(FailureClass::EvalFailed)
        )
    );
    let cause = p[1].cause.as_deref().unwrap();
    assert!(
        cause.starts_with("GSM8K data: no --eval-data-dir given and the download of http://127.0.0.1:9/gsm8k/test.jsonl failed (")
            && cause.contains("Offline? Pass --eval-data-dir DIR")
            && !cause.contains("--data-dir DIR")
            && cause.ends_with("(or --no-evals to run throughput points only)"),
        "{cause}"
    );
    // An eval-only row: `--no-evals` would run nothing at all, so it is not offered (trial 17).
    let mut eval_only = options(&tmp.path().join("eval-only"), &url, None);
    eval_only.evals.cache_dir = tmp.path().join("cache");
    eval_only.evals.source_url = "http://127.0.0.1:9/gsm8k".into();
    let jobs = [row(0, "gptoss_8k1k", 8, false, true)];
    let report = run_jobs(&jobs, &eval_only, &QuickPoint, &CancellationToken::new()).await;
    let cause = report.points[0].cause.as_deref().unwrap();
    assert!(
        cause.contains("Offline? Pass --eval-data-dir DIR") && !cause.contains("--no-evals"),
        "{cause}"
    );
    // Below the progress line that gave the cause, the summary names the point without it
    // (trial 17: the long cause printed twice).
    let brief = report.render_after_progress();
    assert!(
        brief.starts_with("FAILED row 0 eval (conc ")
            && brief.contains("[eval_failed] (its cause is above and in sweep.json)\n")
            && !brief.contains("GSM8K"),
        "{brief}"
    );
    // A server that refuses every request: the eval fails with the first cause.
    let bad = spawn_replay_thread(ReplayCase {
        status: 500,
        headers: vec![],
        chunks: vec![(Duration::ZERO, b"boom".to_vec())],
        end: ReplayEnd::Close,
    });
    let data = data_dir(tmp.path());
    let report = run_jobs(
        &[row(0, "gptoss_8k1k", 8, false, true)],
        &options(&tmp.path().join("bad"), &bad, Some(data)),
        &QuickPoint,
        &CancellationToken::new(),
    )
    .await;
    let p = &report.points[0];
    assert_eq!(
        p.class,
        Some(FailureClass::EvalFailed),
        "{}",
        report.render()
    );
    assert!(
        p.cause
            .as_deref()
            .unwrap()
            .starts_with("all 4 eval requests failed; first: "),
        "{:?}",
        p.cause
    );
}
