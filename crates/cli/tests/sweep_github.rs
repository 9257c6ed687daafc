//! `inferbench sweep --executor github` writes the matrix and a reusable workflow that passes
//! actionlint (`INFERBENCH_TEST_ACTIONLINT`, scripts/setup/actionlint.sh); bad matrix input to
//! `sweep` / `job` fails with a message naming the file.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A scratch directory that stands for the user's repository (its own `.git`, since the
/// workflow names files relative to the repository root).
fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join(".git")).unwrap();
    d
}

const MATRIX: &str = r#"[
 {"image": "vllm/vllm-openai:v0.25.0", "model": "org/M", "model-prefix": "m", "precision": "fp8", "framework": "vllm", "runner": "b200", "isl": 8192, "osl": 1024, "tp": 8, "pp": 1, "dcp-size": 1, "pcp-size": 1, "conc": 4, "max-model-len": 9472, "ep": 1, "dp-attn": false, "spec-decoding": "none", "exp-name": "m_8k1k", "disagg": false, "run-eval": false},
 {"image": "vllm/vllm-openai:v0.25.0", "model": "org/M", "model-prefix": "m", "precision": "fp8", "framework": "vllm", "runner": "cluster:h200-dgxc", "isl": 8192, "osl": 1024, "tp": 8, "pp": 1, "dcp-size": 1, "pcp-size": 1, "conc": 8, "max-model-len": 9472, "ep": 1, "dp-attn": false, "spec-decoding": "none", "exp-name": "m_8k1k", "disagg": false, "run-eval": false}
]"#;

fn inferbench(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_inferbench"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn github_executor_writes_matrix_and_a_linted_workflow() {
    let dir = scratch("sweep_github");
    std::fs::write(dir.join("m.json"), MATRIX).unwrap();
    let (code, stdout, stderr) = inferbench(
        &[
            "sweep",
            "--executor",
            "github",
            "--matrix",
            "m.json",
            "--github-dir",
            "ci",
        ],
        &dir,
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("(2 rows)"), "{stdout}");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("ci/matrix.json")).unwrap())
            .unwrap();
    let original: serde_json::Value = serde_json::from_str(MATRIX).unwrap();
    assert_eq!(written, original);
    let wf = std::fs::read_to_string(dir.join("ci/inferbench-sweep.yml")).unwrap();
    assert!(wf.contains("default: \"ci/matrix.json\""), "{wf}");

    // An absolute --github-dir is named from the repository root in the workflow (trial 12).
    let abs = dir.join("abs");
    let (code, _, stderr) = inferbench(
        &[
            "sweep",
            "--executor",
            "github",
            "--matrix",
            "m.json",
            "--github-dir",
            abs.to_str().unwrap(),
        ],
        &dir,
    );
    assert_eq!(code, Some(0), "{stderr}");
    let wf = std::fs::read_to_string(abs.join("inferbench-sweep.yml")).unwrap();
    assert!(wf.contains("default: \"abs/matrix.json\""), "{wf}");
    assert!(wf.contains("\"abs/run-options.json\""), "{wf}");

    let Some(lint) = inferbench_testutil::env_or_skip(
        "INFERBENCH_TEST_ACTIONLINT",
        "run scripts/setup/actionlint.sh",
    ) else {
        return;
    };
    std::fs::create_dir_all(dir.join(".github/workflows")).unwrap();
    std::fs::copy(
        dir.join("ci/inferbench-sweep.yml"),
        dir.join(".github/workflows/inferbench-sweep.yml"),
    )
    .unwrap();
    let o = Command::new(lint)
        .args(["-no-color", ".github/workflows/inferbench-sweep.yml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn bad_matrix_input_names_the_file() {
    let dir = scratch("sweep_bad_matrix");
    let (code, _, stderr) = inferbench(&["sweep", "--matrix", "nope.json"], &dir);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("nope.json: cannot read matrix"), "{stderr}");

    std::fs::write(dir.join("bad.json"), "[{\"image\": 1}]").unwrap();
    let (code, _, stderr) = inferbench(&["sweep", "--matrix", "bad.json"], &dir);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("bad.json: row 0: invalid type: integer `1`"),
        "{stderr}"
    );

    std::fs::write(dir.join("m.json"), MATRIX).unwrap();
    let (code, _, stderr) = inferbench(&["job", "--matrix", "m.json", "--index", "9"], &dir);
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("m.json: row index 9 out of range (matrix has 2 rows)"),
        "{stderr}"
    );
    let (code, _, stderr) = inferbench(&["sweep", "--matrix", "m.json", "--rows", "5"], &dir);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--rows: index 5 out of range"), "{stderr}");
}

/// Issue 12: the workflow ran `inferbench job` with its defaults, so every sweep flag but the
/// output directory was lost. `sweep --executor github` writes the run flags beside the matrix
/// (paths as given, `out` = results, no runner name), and the workflow's row step passes them
/// with the runner's own name. The step's own shell text is run here, as a runner would.
#[test]
fn github_rows_run_with_the_sweep_flags() {
    let dir = scratch("sweep_github_flags");
    let row = serde_json::json!([{
        "image": "none", "model": "sim-model", "model-prefix": "simllama", "precision": "bf16",
        "framework": "sim", "runner": "cpu", "isl": 64, "osl": 16, "tp": 1, "pp": 1,
        "dcp-size": 1, "pcp-size": 1, "conc": 2, "max-model-len": 336, "ep": 1,
        "dp-attn": false, "spec-decoding": "none", "exp-name": "simllama_64_16", "disagg": false,
        "run-eval": false
    }]);
    std::fs::write(dir.join("m.json"), row.to_string()).unwrap();
    let (code, stdout, stderr) = inferbench(
        &[
            "sweep",
            "--executor",
            "github",
            "--matrix",
            "m.json",
            "--github-dir",
            "ci",
            "--prompts-per-conc",
            "3",
            "--stop-grace",
            "5",
            "--runner-name",
            "mine",
            "--header-template",
            "X-Req: {i}",
            "--dp-rank-roundrobin",
            "2",
        ],
        &dir,
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains("ci/run-options.json (the run flags)"),
        "{stdout}"
    );
    assert!(
        stderr.contains("--runner-name is not passed to the workflow"),
        "{stderr}"
    );
    let opts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("ci/run-options.json")).unwrap())
            .unwrap();
    assert_eq!(opts["run"]["out"], "results", "{opts}");
    assert_eq!(opts["run"]["prompts_per_conc"], 3, "{opts}");
    // Issue 41: the CLI's client flags travel in the options file too.
    assert_eq!(
        opts["run"]["client"],
        serde_json::json!({"header_templates": ["X-Req: {i}"], "dp_rank_roundrobin": 2}),
        "{opts}"
    );
    assert_eq!(
        opts["run"]["runner_name"],
        serde_json::Value::Null,
        "{opts}"
    );
    let wf = std::fs::read_to_string(dir.join("ci/inferbench-sweep.yml")).unwrap();
    assert!(wf.contains("default: \"ci/run-options.json\""), "{wf}");
    // The row step's script, as GitHub runs it (bash -e) with the step's environment.
    let start = wf.find("      - name: Run matrix row").unwrap();
    let body = &wf[start..wf.find("      - name: Upload row artifacts").unwrap()];
    let script: String = body
        .split("        run: |\n")
        .nth(1)
        .unwrap()
        .lines()
        .map(|l| format!("{}\n", l.trim_start()))
        .collect();
    let o = Command::new("bash")
        .args(["-e", "-c", &script])
        .current_dir(&dir)
        .env("MATRIX_FILE", "ci/matrix.json")
        .env("OPTIONS_FILE", "ci/run-options.json")
        .env("ROW_INDEX", "0")
        .env("INFERBENCH", env!("CARGO_BIN_EXE_inferbench"))
        .env("RUNNER_NAME", "gh-box-7")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{script}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let point = dir.join(
        "results/simllama_64_16_bf16_sim_tp1-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc2_gh-box-7",
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(point.join("summary.json")).unwrap())
            .unwrap();
    // 3 prompts per unit of concurrency (the sweep's flag), not the default 10.
    assert_eq!(s["num_prompts"], 6, "{s}");
    assert_eq!(s["completed"], 6, "{s}");
    // The row's requests carried the sweep's header templates.
    assert_eq!(
        s["inferbench"]["header_templates"],
        serde_json::json!(["X-Req: {i}", "X-data-parallel-rank: {i%2}"]),
        "{s}"
    );
}

/// Trial 18: a sweep against a `--base-url` where nothing listens said "none failed: those in
/// flight at its end were cancelled …" under its connect errors. The point fails with the load
/// generator's own reason, once, and (trial 19) the points after it are not started: the same
/// server serves them all.
#[test]
fn a_sweep_against_a_dead_base_url_says_the_server_is_unreachable() {
    let dir = scratch("sweep_dead_base_url");
    std::fs::write(dir.join("m.json"), MATRIX).unwrap();
    let (code, _, stderr) = inferbench(
        &[
            "sweep",
            "--matrix",
            "m.json",
            "--rows",
            "0,1",
            "--base-url",
            "http://127.0.0.1:9",
            "--out",
            "results",
        ],
        &dir,
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "[1/2] row 0 conc 4: server_unreachable: server unreachable at http://127.0.0.1:9: "
        ) && !stderr.contains("none failed")
            && stderr
                .matches("stopped early, nothing was measured")
                .count()
                == 1
            // The connect error is quoted once, not again as an `errors: connect:` warning.
            && stderr.matches("Connection refused").count() == 1,
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "1 more point not started: the server at http://127.0.0.1:9 was unreachable at row 0 conc 4\n"
        ) && stderr.contains("2 points: 0 ok, 0 skipped (already done), 1 failed, 0 interrupted, 1 not started"),
        "{stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results/sweep.json")).unwrap())
            .unwrap();
    assert_eq!(report["points"][1]["outcome"], "not_started", "{report}");
    assert_eq!(
        report["points"][0]["class"], "server_unreachable",
        "{report}"
    );
    assert_eq!(
        report["points"][1]["class"], "server_unreachable",
        "{report}"
    );
}

/// Trial 19: `sweep --matrix` of an empty matrix ran "0 points" and exited 0 as if all were
/// done. An empty array and a bucketed object without rows (what `changelog` writes when it
/// selects nothing) are bad input (exit 2), named, on every executor.
#[test]
fn a_matrix_without_rows_is_an_error() {
    let dir = scratch("sweep_empty_matrix");
    std::fs::write(dir.join("empty.json"), "[]").unwrap();
    std::fs::write(
        dir.join("buckets.json"),
        r#"{"single_node": {}, "evals": []}"#,
    )
    .unwrap();
    for (file, executor) in [("empty.json", "local"), ("buckets.json", "github")] {
        let (code, _, stderr) = inferbench(
            &[
                "sweep",
                "--matrix",
                file,
                "--executor",
                executor,
                "--out",
                "results",
            ],
            &dir,
        );
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "{file}: the matrix has no rows: nothing to run (`matrix` or `changelog` selected none)"
            )),
            "{stderr}"
        );
    }
    assert!(!dir.join("results").exists());
}

/// Issue 41: `sweep --tls-ca FILE` (and `--insecure`) are client settings like the others: the
/// GitHub rows get them in `run-options.json` (`run.client`, the path relative to the repository
/// as given), so every row's points, readiness probes and evals verify the same way.
#[test]
fn tls_flags_travel_in_the_options_file() {
    let dir = scratch("sweep_github_tls");
    std::fs::write(dir.join("m.json"), MATRIX).unwrap();
    let (code, _, stderr) = inferbench(
        &[
            "sweep",
            "--executor",
            "github",
            "--matrix",
            "m.json",
            "--github-dir",
            "ci",
            "--tls-ca",
            "certs/ca.pem",
        ],
        &dir,
    );
    assert_eq!(code, Some(0), "{stderr}");
    let opts: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("ci/run-options.json")).unwrap())
            .unwrap();
    assert_eq!(
        opts["run"]["client"],
        serde_json::json!({"tls_ca": "certs/ca.pem"}),
        "{opts}"
    );
    // The two are exclusive, as bench's.
    let (code, _, stderr) = inferbench(
        &[
            "sweep",
            "--matrix",
            "m.json",
            "--tls-ca",
            "ca.pem",
            "--insecure",
        ],
        &dir,
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--insecure"), "{stderr}");
}
