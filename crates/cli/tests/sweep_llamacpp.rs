//! Real input end to end (issue 4): `examples/llamacpp-cpu.yaml`, a master config in
//! InferenceX's format → job matrix (`inferbench matrix … full-sweep`) →
//! `inferbench sweep` launching llama.cpp's llama-server (PyPI xllamacpp) serving
//! SmolLM2-135M at two parallel-slot settings, conc 1..16 → artifacts per point.
//!
//! Needs `INFERBENCH_TEST_PYTHON` and `INFERBENCH_TEST_GGUF` (scripts/setup/llamacpp.sh); skips
//! without them unless `INFERBENCH_REQUIRE_SERVICES=1`. CI-sized: conc prompts and conc warmups
//! per point instead of InferenceX's 10 × conc and 2 × conc (everything else at its defaults).

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One llama.cpp engine at a time in this file: two on 2 cores (4 busy threads) made the
/// GSM8K sweep take 20 minutes instead of under 5 (session 12's CI).
static ONE_ENGINE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_engine() -> std::sync::MutexGuard<'static, ()> {
    ONE_ENGINE.lock().unwrap_or_else(|p| p.into_inner())
}

fn service_env() -> Option<(String, String)> {
    let how = "run scripts/setup/llamacpp.sh";
    let py = inferbench_testutil::env_or_skip("INFERBENCH_TEST_PYTHON", how)?;
    let gguf = inferbench_testutil::env_or_skip("INFERBENCH_TEST_GGUF", how)?;
    Some((py, gguf))
}

/// A fresh directory under Cargo's per-target test scratch space.
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn read_json(p: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn llamacpp_master_config_sweeps_end_to_end() {
    let Some((python, gguf)) = service_env() else {
        return;
    };
    let _one = one_engine();
    let tmp = scratch("sweep_llamacpp");
    let config = repo().join("examples/llamacpp-cpu.yaml");
    let runners = repo().join("examples/llamacpp-cpu-runners.yaml");

    // 1. Master config → matrix with `inferbench matrix … full-sweep` (InferenceX generator rules).
    let gen = Command::new(env!("CARGO_BIN_EXE_inferbench"))
        .arg("matrix")
        .arg("--config-files")
        .arg(&config)
        .arg("--runner-config")
        .arg(&runners)
        .arg("full-sweep")
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "inferbench matrix: {}",
        String::from_utf8_lossy(&gen.stderr)
    );
    let matrix = tmp.join("m.json");
    std::fs::write(&matrix, &gen.stdout).unwrap();
    let m = read_json(&matrix);
    let m = m.as_array().unwrap();
    let shape: Vec<(u64, u64)> = m
        .iter()
        .map(|r| (r["ep"].as_u64().unwrap(), r["conc"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        shape,
        [
            (1, 1),
            (1, 2),
            (1, 4),
            (1, 8),
            (1, 16),
            (4, 1),
            (4, 2),
            (4, 4),
            (4, 8),
            (4, 16)
        ]
    );
    assert_eq!(m[0]["exp-name"], "smollm2_128_32");
    assert_eq!(m[0]["max-model-len"], 416);
    assert_eq!(m[0]["framework"], "llamacpp");

    // 2. Sweep it.
    let out = tmp.join("results");
    let sweep = |extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_inferbench"));
        c.args(["sweep", "--matrix"])
            .arg(&matrix)
            .arg("--runner-config")
            .arg(&runners)
            .args(["--runner-name", "cpu_0", "--out"])
            .arg(&out)
            .args(["--python", &python])
            .arg(format!(
                "--model-path=HuggingFaceTB/SmolLM2-135M-Instruct={gguf}"
            ))
            .args([
                "--prompts-per-conc",
                "1",
                "--warmups-per-conc",
                "1",
                "--ready-timeout",
                "120",
                "--stop-grace",
                "10",
            ])
            .args(extra);
        let o = c.output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let started = std::time::Instant::now();
    let (code, stderr) = sweep(&[]);
    eprintln!(
        "sweep took {:.1} s\n{stderr}",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("10 points: 10 ok, 0 skipped"), "{stderr}");

    // 3. Artifacts of every point.
    let mut ttft = std::collections::BTreeMap::new();
    for (ep, conc) in &shape {
        let rf = format!(
            "smollm2_128_32_q4_1_llamacpp_tp1-pp1-dcp1-pcp1-ep{ep}-dpafalse_disagg-false_spec-none_conc{conc}_cpu_0"
        );
        let dir = out.join(&rf);
        let s = read_json(&dir.join("summary.json"));
        assert_eq!(s["completed"], *conc, "{rf}: {s}");
        assert_eq!(s["max_concurrency"], *conc, "{rf}");
        // ignore_eos: every request produced exactly OSL tokens (range ratio applies to ISL/OSL
        // draws: outputs in [0.8·32, 32]).
        let out_tokens = s["total_output_tokens"].as_u64().unwrap();
        assert!(
            out_tokens >= conc * 25 && out_tokens <= conc * 32,
            "{rf}: {out_tokens}"
        );
        let agg = read_json(&dir.join(format!("agg_{rf}.json")));
        assert_eq!(agg["conc"], *conc, "{rf}: {agg}");
        assert_eq!(agg["framework"], "llamacpp");
        let job = read_json(&dir.join("job.json"));
        assert_eq!(job["status"]["state"], "ok");
        assert!(
            job["provenance"]["engine_version"]
                .as_str()
                .is_some_and(|v| v.starts_with("xllamacpp ")),
            "{job}"
        );
        assert!(job["engine"]["command"]
            .as_str()
            .unwrap()
            .contains(&format!("--n-parallel {ep} --ctx-per-slot 416")));
        let zst = std::fs::read(dir.join("requests.jsonl.zst")).unwrap();
        assert_eq!(&zst[..4], &[0x28, 0xb5, 0x2f, 0xfd], "zstd magic");
        assert!(!dir.join("requests.jsonl").exists());
        let log = std::fs::read_to_string(dir.join("server.log")).unwrap();
        assert!(log.contains("llamacpp_serve: listening on "), "{log}");
        ttft.insert((*ep, *conc), s["mean_ttft_ms"].as_f64().unwrap());
    }
    // One engine per slot setting (same command line across its five points).
    let engines = std::fs::read_dir(out.join("_engines")).unwrap().count();
    assert_eq!(engines, 2);
    // Physics: with one slot, 16 concurrent requests queue behind each other.
    assert!(
        ttft[&(1, 16)] > 3.0 * ttft[&(1, 1)],
        "TTFT did not grow with queueing: {ttft:?}"
    );

    // 4. Re-running skips every finished point.
    let started = std::time::Instant::now();
    let (code, stderr) = sweep(&[]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("10 skipped (already done)"), "{stderr}");
    assert!(started.elapsed().as_secs_f64() < 10.0);

    // 5. The results flow into the store (issue 5): ingest, then `report --frontier` lists the
    //    ten points (csv) and `plot` draws them.
    let db = tmp.join("sweep.db");
    let ib = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_inferbench"))
            .args(args)
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(0), "{args:?}\n{stdout}\n{stderr}");
        stdout
    };
    ib(&["ingest", out.to_str().unwrap()]);
    let csv = ib(&["report", "--format", "csv"]);
    let rows: Vec<&str> = csv.lines().skip(1).filter(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 10, "{csv}");
    assert!(rows.iter().all(|r| r.contains("llamacpp")), "{csv}");
    let frontier = ib(&["report", "--frontier", "--format", "csv"]);
    let n_frontier = frontier.lines().skip(1).filter(|l| !l.is_empty()).count();
    assert!((1..=10).contains(&n_frontier), "{frontier}");
    let png = tmp.join("frontier.png");
    ib(&["plot", "-o", png.to_str().unwrap()]);
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..4], b"\x89PNG");
}

/// Issue 8's done-criterion on a real engine: `examples/llamacpp-cpu-agentic.yaml` (an
/// agentic-coding master config) → matrix → `sweep --traces` replaying small sessions sized for
/// SmolLM2's 2,048-token slots at 1 and 2 lanes → ingest → `report --frontier` with the North-Star
/// x (the short replays are invalid, so `--include-invalid`).
#[test]
fn llamacpp_agentic_config_sweeps_into_the_north_star_frontier() {
    use inferbench_workload::agentx::synthetic::{generate, write_jsonl, SyntheticSpec};
    let Some((python, gguf)) = service_env() else {
        return;
    };
    let _one = one_engine();
    let tmp = scratch("sweep_llamacpp_agentic");
    let runners = repo().join("examples/llamacpp-cpu-runners.yaml");
    let bin = env!("CARGO_BIN_EXE_inferbench");
    let matrix = tmp.join("ma.json");
    let gen = Command::new(bin)
        .arg("matrix")
        .arg("--config-files")
        .arg(repo().join("examples/llamacpp-cpu-agentic.yaml"))
        .arg("--runner-config")
        .arg(&runners)
        .arg("full-sweep")
        .output()
        .unwrap();
    assert!(
        gen.status.success(),
        "{}",
        String::from_utf8_lossy(&gen.stderr)
    );
    std::fs::write(&matrix, &gen.stdout).unwrap();
    let rows = read_json(&matrix);
    let shape: Vec<(String, u64)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["scenario-type"].as_str().unwrap().to_string(),
                r["conc"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("agentic-coding".to_string(), 1),
            ("agentic-coding".to_string(), 2)
        ]
    );
    // The sessions of loadgen's llama.cpp replay test: 3 trees, sub-agents, a compaction.
    let traces = generate(&SyntheticSpec::small_context());
    let traces_path = tmp.join("traces.jsonl");
    write_jsonl(
        &traces,
        std::io::BufWriter::new(std::fs::File::create(&traces_path).unwrap()),
    )
    .unwrap();
    let out = tmp.join("agentic");
    let o = Command::new(bin)
        .args(["sweep", "--matrix"])
        .arg(&matrix)
        .arg("--runner-config")
        .arg(&runners)
        .arg("--traces")
        .arg(&traces_path)
        // A long grace: on busy cores one SmolLM2 request can take half a minute, and a point
        // whose only profiled request is cancelled at the end completes nothing.
        .args([
            "--agentic-duration",
            "8",
            "--agentic-grace-period",
            "300",
            "--out",
        ])
        .arg(&out)
        .args(["--python", &python])
        .arg(format!(
            "--model-path=HuggingFaceTB/SmolLM2-135M-Instruct={gguf}"
        ))
        .args(["--ready-timeout", "120", "--stop-grace", "10"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    // Agentic points under 900 s are invalid, and the summary says so (trial 14).
    assert!(
        stderr.contains("2 points: 2 ok (2 of them invalid: kept off frontiers), 0 skipped"),
        "{stderr}"
    );
    for conc in [1, 2] {
        let dir = out.join(format!(
            "smollm2_tp1_conc{conc}_kvnone_q4_1_llamacpp_tp1-pp1-dcp1-pcp1-ep2-dpafalse_disagg-false_spec-none_conc{conc}_cpu_0"
        ));
        let s = read_json(&dir.join("summary.json"));
        assert_eq!(s["scenario_type"], "agentic-coding", "{}", dir.display());
        assert!(s["completed"].as_u64().unwrap() > 0, "{s}");
        assert!(dir.join("agentic_aggregate.json").exists());
        assert!(dir.join("aiperf_artifacts/profile_export.jsonl").exists());
        assert!(dir.join("requests.jsonl.zst").exists());
    }

    let db = tmp.join("a.db");
    let ing = Command::new(bin)
        .arg("ingest")
        .arg(&out)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(
        ing.status.success(),
        "{}",
        String::from_utf8_lossy(&ing.stderr)
    );
    let rep = Command::new(bin)
        .args([
            "report",
            "--frontier",
            "--include-invalid",
            "--format",
            "csv",
            "--db",
        ])
        .arg(&db)
        .args([
            "--columns",
            "hardware,framework,scenario,conc,p90_e2e_norm_intvty,tput_per_gpu",
        ])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&rep.stdout).into_owned();
    assert!(
        rep.status.success(),
        "{csv}{}",
        String::from_utf8_lossy(&rep.stderr)
    );
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "hardware,framework,scenario,conc,p90_e2e_norm_intvty,tput_per_gpu"
    );
    assert!(lines.len() >= 2, "{csv}");
    for l in &lines[1..] {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(&f[..3], ["cpu", "llamacpp", "agentic-coding"], "{csv}");
        assert!(f[4].parse::<f64>().unwrap() > 0.0, "{csv}");
        assert!(f[5].parse::<f64>().unwrap() > 0.0, "{csv}");
    }
}

/// Issue 10's real input: an eval-only row on llama.cpp (SmolLM2-135M, 4 slots of 2,048
/// tokens) runs GSM8K on the first 50 shared problems inside `inferbench sweep`, below the
/// 0.90 default threshold (so the row fails with `eval_below_threshold`, its scores kept), and
/// `ingest` stores the result in the evals table as InferenceX's collector would read it.
#[test]
fn llamacpp_eval_only_row_scores_gsm8k_in_a_sweep_into_the_store() {
    let Some((python, gguf)) = service_env() else {
        return;
    };
    let _one = one_engine();
    let Some(data) = inferbench_testutil::shared_dir(env!("CARGO_MANIFEST_DIR"), "data/gsm8k")
    else {
        return;
    };
    let tmp = scratch("sweep_llamacpp_eval");
    let matrix = tmp.join("m.json");
    std::fs::write(
        &matrix,
        serde_json::json!([{
            "image": "pypi:xllamacpp==2026.10.11549", "model": "HuggingFaceTB/SmolLM2-135M-Instruct",
            "model-prefix": "smollm2", "precision": "q4_1", "framework": "llamacpp", "runner": "cpu",
            "isl": 1024, "osl": 768, "tp": 1, "pp": 1, "dcp-size": 1, "pcp-size": 1, "conc": 4,
            "max-model-len": 2048, "ep": 4, "dp-attn": false, "spec-decoding": "none",
            "exp-name": "smollm2_1k768", "disagg": false, "run-eval": true, "eval-only": true
        }])
        .to_string(),
    )
    .unwrap();
    let out = tmp.join("results");
    let started = std::time::Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_inferbench"))
        .args(["sweep", "--matrix"])
        .arg(&matrix)
        .args(["--runner-name", "cpu_0", "--out"])
        .arg(&out)
        .args(["--python", &python])
        .arg(format!(
            "--model-path=HuggingFaceTB/SmolLM2-135M-Instruct={gguf}"
        ))
        .args(["--ready-timeout", "120", "--stop-grace", "10"])
        .arg("--eval-data-dir")
        .arg(&data)
        .args(["--eval-limit", "50", "--eval-max-tokens", "256"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    eprintln!(
        "eval sweep took {:.1} s\n{stderr}",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("[1/1] row 0 eval (conc 4): eval_below_threshold: gsm8k strict-match ")
            // The cause once, on the progress line (trial 17: twice).
            && stderr.contains(
                "FAILED row 0 eval (conc 4) [eval_below_threshold] (its cause is above and in sweep.json)\n"
            ),
        "{stderr}"
    );
    assert!(
        stderr.contains("1 eval: 0 ok, 0 skipped (already done), 1 failed")
            && stderr.contains("rerun the same command to resume"),
        "{stderr}"
    );
    let rf = "smollm2_1k768_q4_1_llamacpp_tp1-pp1-dcp1-pcp1-ep4-dpafalse_disagg-false_spec-none_conc4_cpu_0";
    let dir = out.join(format!("eval_smollm2_1k768_{rf}"));
    let r = read_json(&dir.join("results_gsm8k.json"));
    assert_eq!(r["n-samples"]["gsm8k"]["effective"], 50, "{r}");
    assert_eq!(r["failed_samples"], 0, "{r}");
    let strict = r["results"]["gsm8k"]["exact_match,strict-match"]
        .as_f64()
        .unwrap();
    assert!((0.0..0.9).contains(&strict), "{r}");
    assert_eq!(read_json(&dir.join("meta_env.json"))["conc"], 4);
    let job = read_json(&dir.join("job.json"));
    assert!(job["engine"]["command"]
        .as_str()
        .unwrap()
        .contains("--n-parallel 4 --ctx-per-slot 2048"));

    let db = tmp.join("eval.db");
    let o = Command::new(env!("CARGO_BIN_EXE_inferbench"))
        .args(["ingest", "--db"])
        .arg(&db)
        .arg(&out)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("ingested 0 point(s), 1 eval result(s) from 1 source(s) (result directories or files) in 1 batch(es)\n"),
        "{text}"
    );
    let mut store = inferbench_store::Store::open(db.to_str().unwrap()).unwrap();
    let evals = store.evals().unwrap();
    assert_eq!(evals.len(), 1);
    let e = &evals[0];
    assert_eq!(
        (
            e.hardware.as_str(),
            e.framework.as_str(),
            e.task.as_str(),
            e.conc,
            e.ep
        ),
        ("cpu", "llamacpp", "gsm8k", 4, 4)
    );
    assert_eq!(e.score, Some(strict));
    assert_eq!(e.metrics.get("n_eff"), Some(&50.0));
}
