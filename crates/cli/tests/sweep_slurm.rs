//! The Slurm executor against a real single-host Slurm (scripts/setup/slurm.sh, which exports
//! `INFERBENCH_TEST_SLURM=1`): `inferbench sweep --executor slurm` submits one sbatch array task
//! per row, each running `inferbench job --matrix m.json --index $SLURM_ARRAY_TASK_ID` with the
//! simulated server as the engine, then gathers every point's status into `sweep.json`.
//! A row without a recipe fails in its own task while the others succeed; a second submission
//! finds nothing left to do.

use std::path::{Path, PathBuf};
use std::process::Command;

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

fn row(framework: &str, conc: u32) -> serde_json::Value {
    serde_json::json!({
        "image": "none", "model": "sim-model", "model-prefix": "simllama", "precision": "bf16",
        "framework": framework, "runner": "cpu", "isl": 64, "osl": 16, "tp": 1, "pp": 1,
        "dcp-size": 1, "pcp-size": 1, "conc": conc, "max-model-len": 336, "ep": 1,
        "dp-attn": false, "spec-decoding": "none", "exp-name": "simllama_64_16", "disagg": false,
        "run-eval": false
    })
}

#[test]
fn slurm_array_runs_rows_and_gathers_results() {
    if !inferbench_testutil::available(
        std::env::var("INFERBENCH_TEST_SLURM").as_deref() == Ok("1"),
        "INFERBENCH_TEST_SLURM=1",
        "run scripts/setup/slurm.sh",
    ) {
        return;
    }
    let tmp = scratch("sweep_slurm");
    let matrix = tmp.join("m.json");
    let rows = serde_json::json!([row("sim", 1), row("sim", 2), row("atom", 2), row("sim", 4)]);
    std::fs::write(&matrix, serde_json::to_string_pretty(&rows).unwrap()).unwrap();
    let out = tmp.join("results");
    let sweep = |extra: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_inferbench"))
            .args(["sweep", "--executor", "slurm", "--matrix"])
            .arg(&matrix)
            .arg("--out")
            .arg(&out)
            .args([
                "--runner-name",
                "slurmbox",
                "--prompts-per-conc",
                "2",
                "--ready-timeout",
                "60",
                "--stop-grace",
                "5",
                "--time",
                "10:00",
            ])
            .args(extra)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, _stdout, stderr) = sweep(&[]);
    eprintln!("{stderr}");
    // Row 2 has no recipe: exit 1, but the three other tasks ran.
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(": array 0-3 (4 rows)"), "{stderr}");
    let report = read_json(&out.join("sweep.json"));
    let outcomes: Vec<&str> = report["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["ok", "ok", "failed", "ok"], "{report}");
    assert_eq!(report["points"][2]["class"], "missing_recipe");

    let script = std::fs::read_to_string(out.join("_slurm/job.sbatch")).unwrap();
    assert!(script.contains("#SBATCH --array=0-3\n"), "{script}");
    assert!(script.contains(" job --matrix "), "{script}");
    assert!(
        script.contains("--index \"$SLURM_ARRAY_TASK_ID\""),
        "{script}"
    );
    // The tasks' flags are one file beside the script, with absolute paths.
    assert!(script.contains(" --options-file "), "{script}");
    let opts = read_json(&out.join("_slurm/run-options.json"));
    assert_eq!(opts["schema_version"], 1, "{opts}");
    assert_eq!(opts["run"]["runner_name"], "slurmbox", "{opts}");
    assert_eq!(opts["run"]["prompts_per_conc"], 2, "{opts}");
    assert_eq!(opts["run"]["stop_grace"], 5.0, "{opts}");
    assert_eq!(opts["run"]["out"], out.display().to_string(), "{opts}");
    let task_logs = std::fs::read_dir(out.join("_slurm"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("task-")
        })
        .count();
    assert_eq!(task_logs, 4);

    for (i, conc) in [(0usize, 1u32), (1, 2), (3, 4)] {
        let rf = format!(
            "simllama_64_16_bf16_sim_tp1-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc{conc}_slurmbox"
        );
        let dir = out.join(&rf);
        let s = read_json(&dir.join("summary.json"));
        assert_eq!(s["completed"], 2 * conc, "{rf}: {s}");
        let job = read_json(&dir.join("job.json"));
        let slurm_job = job["provenance"]["slurm_job"].as_str().unwrap_or_default();
        assert!(slurm_job.ends_with(&format!("_{i}")), "{rf}: {job}");
        assert!(dir.join(format!("agg_{rf}.json")).exists());
        assert!(dir.join("server.log").exists());
    }

    // Resubmission: only the failed row is pending; it fails again the same way.
    let (code, _stdout, stderr) = sweep(&[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(": array 2 (1 rows)"), "{stderr}");
    // --gather only reads the markers (what follows a --no-wait submission).
    let (code, _stdout, stderr) = sweep(&["--gather"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(!stderr.contains("submitted"), "{stderr}");
    assert!(
        stderr.contains("4 points: 3 ok, 0 skipped (already done), 1 failed"),
        "{stderr}"
    );
}
