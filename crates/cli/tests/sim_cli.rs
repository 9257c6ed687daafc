//! `inferbench sim` flags that do not serve: the `--bound` what-if table and config errors.

use std::process::Command;

fn sim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_inferbench"))
        .arg("sim")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn bound_prints_one_row_per_concurrency_with_falling_interactivity() {
    let o = sim(&[
        "--model",
        "Llama-3.3-70B",
        "--hardware",
        "H200",
        "--precision",
        "fp8",
        "--tp",
        "4",
        "--bound",
        "1024/1024",
        "--bound-conc",
        "1,8,64",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rows: Vec<Vec<f64>> = out
        .lines()
        .filter_map(|l| {
            let v: Option<Vec<f64>> = l.split_whitespace().map(|f| f.parse().ok()).collect();
            v.filter(|v| v.len() == 7)
        })
        .collect();
    assert_eq!(
        rows.iter().map(|r| r[0]).collect::<Vec<_>>(),
        vec![1.0, 8.0, 64.0],
        "{out}"
    );
    // Interactivity (col 2) falls and throughput per GPU (col 3) rises with concurrency; the
    // speed of light (cols 5, 6) is above the simulator's roofline.
    assert!(rows[0][2] > rows[1][2] && rows[1][2] > rows[2][2], "{out}");
    assert!(rows[0][3] < rows[1][3] && rows[1][3] < rows[2][3], "{out}");
    for r in &rows {
        assert!(r[5] > r[2] && r[6] > r[3], "{out}");
    }
}

#[test]
fn config_errors_name_the_flag() {
    let o = sim(&["--model", "DeepSeek-R1", "--bound", "1024/1024"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("DeepSeek-R1") && err.contains("--tp"), "{err}");
    let o = sim(&["--bound", "1024x1024"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("--bound"));
    let o = sim(&["--fault", "explode", "--port", "0"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("explode"));
}

/// Issues: `--threads 0` was accepted, negative `--time-scale`/`--step-ms` gave clap's
/// "unexpected argument '-1'", a too-small `--num-gpu-blocks-override` still advertised the
/// model's whole context, and `--help` listed fewer precisions than are accepted.
#[test]
fn bad_numbers_are_refused_with_the_flag_name() {
    let err = |args: &[&str]| {
        let o = sim(args);
        assert!(!o.status.success(), "{args:?}");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let e = err(&["--threads", "0", "--port", "0"]);
    assert!(
        e.contains("threads = 0 is invalid: must be at least 1"),
        "{e}"
    );
    let e = err(&["--time-scale", "-1", "--port", "0"]);
    assert!(
        e.contains("'--time-scale <TIME_SCALE>'") && e.contains("must be a positive number"),
        "{e}"
    );
    let e = err(&["--step-ms", "-5", "--port", "0"]);
    assert!(
        e.contains("--step-ms") && e.contains("must be a non-negative number"),
        "{e}"
    );
    let e = err(&[
        "--num-gpu-blocks-override",
        "4",
        "--max-model-len",
        "4096",
        "--port",
        "0",
    ]);
    assert!(
        e.contains("max_model_len = 4096 is larger than the 64 tokens"),
        "{e}"
    );
    // Without --max-model-len the advertised context is capped to the cache.
    let o = sim(&[
        "--num-gpu-blocks-override",
        "4",
        "--bound",
        "16/16",
        "--bound-conc",
        "1",
    ]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).contains("KV cache 64 tokens"));

    // Every precision name the help lists is accepted.
    let o = sim(&["--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    let line = help
        .lines()
        .find(|l| l.contains("Weight precision:"))
        .unwrap_or_else(|| panic!("{help}"));
    let names: Vec<String> = line
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.starts_with(['b', 'f', 'n', 'm']))
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_string)
        .collect();
    for want in ["bf16", "fp16", "fp8", "fp4", "nvfp4", "mxfp4"] {
        assert!(names.iter().any(|n| n == want), "{want} not in {line}");
    }
    for n in &names {
        inferbench_sim::Precision::parse(n).unwrap_or_else(|e| panic!("{n}: {e}"));
    }
}
