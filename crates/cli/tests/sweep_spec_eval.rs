//! A speculative-decoding row with an eval, swept on the sim (issue 10): the throughput point's
//! engine is pinned to the golden acceptance length (DeepSeek-V4 MTP, k = 3, thinking on:
//! 2.49), the measured acceptance (from the sim's vLLM spec-decode counters) is reported beside
//! it in summary.json and the store; the eval relaunches the engine without synthetic
//! acceptance (real verification, producer reference §9) and writes InferenceX's eval artifact.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

fn read(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{p:?}: {e}")))
        .unwrap()
}

fn run(args: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(BIN).args(args).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

#[test]
fn mtp_row_is_pinned_to_the_golden_acceptance_and_its_eval_verifies_for_real() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let matrix = t.join("m.json");
    std::fs::write(
        &matrix,
        serde_json::json!([{
            "image": "none", "model": "deepseek-ai/DeepSeek-V4-Pro", "model-prefix": "dsv4",
            "precision": "fp8", "framework": "sim", "runner": "h100", "isl": 256, "osl": 64,
            "tp": 1, "pp": 1, "dcp-size": 1, "pcp-size": 1, "conc": 4, "max-model-len": 576,
            "ep": 1, "dp-attn": false, "spec-decoding": "mtp", "exp-name": "dsv4_256_64",
            "disagg": false, "run-eval": true
        }])
        .to_string(),
    )
    .unwrap();
    let data = t.join("gsm8k");
    std::fs::create_dir_all(&data).unwrap();
    let line =
        |q: String, a: String| serde_json::json!({"question": q, "answer": a}).to_string() + "\n";
    let test: String = (0..3)
        .map(|i| line(format!("P{i}?"), format!("w\n#### {i}")))
        .collect();
    let train: String = (0..5)
        .map(|i| line(format!("S{i}?"), format!("w\n#### {i}")))
        .collect();
    std::fs::write(data.join("test.jsonl"), test).unwrap();
    std::fs::write(data.join("train.jsonl"), train).unwrap();
    let out = t.join("out");
    let (code, text) = run(&[
        "sweep",
        "--matrix",
        matrix.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--runner-name",
        "h100_0",
        "--num-prompts",
        "64",
        "--warmups-per-conc",
        "1",
        "--sim-arg=--time-scale=20",
        "--eval-data-dir",
        data.to_str().unwrap(),
        "--eval-max-tokens",
        "16",
    ]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("[2/2] row 0 eval (conc 4): ok, gsm8k strict-match 0.0000 ± 0.0000, flexible-extract 0.0000 ± 0.0000 (3 problems, threshold 0.91)"),
        "{text}"
    );
    // The eval is counted as an eval, not as a second point (trial 23).
    assert!(
        text.contains("1 point and 1 eval: 2 ok, 0 skipped (already done), 0 failed"),
        "{text}"
    );
    let rf =
        "dsv4_256_64_fp8_sim_tp1-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-mtp_conc4_h100_0";
    let job = read(&out.join(rf).join("job.json"));
    assert_eq!(
        job["engine"]["synthetic_acceptance"],
        serde_json::json!({
            "num_speculative_tokens": 3, "acceptance_length": 2.49, "golden": true,
            "source": "deepseek-v4-pro thinking_on k=3"
        })
    );
    assert!(job["engine"]["command"]
        .as_str()
        .unwrap()
        .contains("--num-speculative-tokens 3 --acceptance-length 2.49"));
    let s = read(&out.join(rf).join("summary.json"));
    // The sim engine ran at --time-scale 20 (its --sim-arg): the point is rewritten in
    // modelled time, as `sweep --sim` does, so it stands (trial 32 F5's rule does not fire).
    assert_eq!(s["clock"], "modelled", "{s}");
    assert_eq!(s["sim_time_scale"], "20", "{s}");
    assert!(s["inferbench"].get("invalid_reason").is_none(), "{s}");
    let sd = &s["inferbench"]["spec_decoding"];
    assert_eq!(sd["target_acceptance_length"], 2.49);
    assert_eq!(sd["golden"], true);
    let measured = sd["measured_acceptance_length"].as_f64().unwrap();
    assert_eq!(
        Some(measured),
        s["inferbench"]["server_metrics"]["spec_acceptance_length"].as_f64()
    );
    // The sim holds the pinned AL within the 5 % flag.
    assert!((measured - 2.49).abs() < 0.05 * 2.49, "{sd}");
    assert_eq!(sd["flagged"], false);
    assert!((sd["acceptance_length_gap"].as_f64().unwrap() - (measured - 2.49)).abs() < 1e-12);

    // The eval ran on a relaunched engine without synthetic acceptance (a real engine then
    // verifies its drafts; the sim, which has none, keeps modelling the curve's AL).
    let e = out.join(format!("eval_dsv4_256_64_{rf}"));
    let ejob = read(&e.join("job.json"));
    assert_eq!(
        ejob["engine"]["synthetic_acceptance"],
        serde_json::Value::Null
    );
    assert!(ejob["engine"]["command"]
        .as_str()
        .unwrap()
        .contains("--num-speculative-tokens 3 --acceptance-length 2.49"));
    assert_eq!(read(&e.join("meta_env.json"))["spec_decoding"], "mtp");

    // Both land in the store: the point with its acceptance columns, the eval in `evals`.
    let db = t.join("s.db");
    let (code, text) = run(&[
        "ingest",
        out.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.starts_with("ingested 1 point(s), 1 eval result(s) from 2 source(s) (result directories or files) in 1 batch(es), "),
        "{text}"
    );
    let (code, csv) = run(&[
        "report",
        "--db",
        db.to_str().unwrap(),
        "--format",
        "csv",
        "--columns",
        "conc,inferbench.spec_decoding.target_acceptance_length,inferbench.spec_decoding.measured_acceptance_length",
    ]);
    assert_eq!(code, Some(0), "{csv}");
    assert_eq!(
        csv,
        format!("conc,inferbench.spec_decoding.target_acceptance_length,inferbench.spec_decoding.measured_acceptance_length\n4,2.49,{measured}\n")
    );
}
