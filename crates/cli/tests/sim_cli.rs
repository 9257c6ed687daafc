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
