//! Helpers shared by the web crate's test binaries.

use std::path::Path;

/// Copies the tree `from` to `to`, with each `(what, with)` replaced in its JSON files.
pub fn copy_tree_replacing(from: &Path, to: &Path, swaps: &[(&str, &str)]) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree_replacing(&e.path(), &dst, swaps);
        } else if dst.extension().is_some_and(|x| x == "json") {
            let text = std::fs::read_to_string(e.path()).unwrap();
            let text = swaps
                .iter()
                .fold(text, |t, (what, with)| t.replace(what, with));
            std::fs::write(dst, text).unwrap();
        } else {
            std::fs::copy(e.path(), dst).unwrap();
        }
    }
}

/// The store's sweep-h200 fixture, and a copy of it in `dir/h100` run on h100 whose points are
/// all invalid (the producer's `inferbench.invalid_reason`): returns (fixture, copy), the two
/// directories to ingest.
pub fn sweep_and_invalid_h100_copy(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures/sweep-h200");
    let bad = dir.join("h100");
    copy_tree_replacing(
        &fx,
        &bad,
        &[
            ("h200-nv_0", "h100-nv_0"),
            ("sweep-2026-03-01-h200", "sweep-2026-03-01-h100"),
            (
                "\"inferbench\": {",
                "\"inferbench\": {\"invalid_reason\": \"the server fell behind\",",
            ),
        ],
    );
    (fx, bad)
}

/// The store's gptoss eval set (GSM8K at concurrency 32) copied into `dir/eval_gptoss` with a
/// samples file of three questions in our layout (doc 1 right, doc 0 a failed request, doc 2
/// wrong) and a line that is not JSON: the evals drawer's fixture.
#[allow(dead_code)] // used by api.rs and browser.rs, not every test binary
pub fn eval_set_with_samples(dir: &Path) -> std::path::PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../store/tests/evalsets/eval_gptoss_8k1k_gptoss_8k1k_fp8_vllm_tp2-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc32_h100-box_0",
    );
    let to = dir.join("eval_gptoss");
    copy_tree_replacing(&from, &to, &[]);
    let lines = [
        serde_json::json!({"doc_id": 1, "prompt": "Question: Tom has 2 apples and buys 3 more. How many?\nEnd your response with the answer on the last line, formatted as: #### [number]\nAnswer:",
            "response": "2+3=5\n#### 5", "strict": "5", "flexible": "5", "target": "5",
            "pass_strict": true, "pass_flexible": true}),
        serde_json::json!({"doc_id": 0, "prompt": "Question: <b>7</b> times 6?\nAnswer:",
            "response": "", "strict": "", "flexible": "", "target": "42",
            "pass_strict": false, "pass_flexible": false, "error": "http 500"}),
        serde_json::json!({"doc_id": 2, "prompt": "Question: 10 minus 2?\nAnswer:",
            "response": "#### 9", "strict": "9", "flexible": "9", "target": "8",
            "pass_strict": false, "pass_flexible": false}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(to.join("samples_gsm8k.jsonl"), text + "not json\n").unwrap();
    to
}

/// `s` percent-encoded for a URL query value: every byte but the unreserved characters
/// `[A-Za-z0-9-._~]` as `%XX`.
#[allow(dead_code)] // used by api.rs and browser.rs, not every test binary
pub fn utf8_percent(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A database of one h100 configuration at three concurrencies: tok/s/GPU 50 (hyperscaler
/// $1.30/GPU-hour → $7.22 per million tokens, above InferenceX's $5 clip), 1,000 and 2,000,
/// at interactivity 100, 50 and 20 tok/s/user and P99 TTFT 0.5, 2 and 75 s.
#[allow(dead_code)]
pub fn clip_db(dir: &Path) -> String {
    let db = dir.join("clip.db").display().to_string();
    let mut s = inferbench_store::Store::open(&db).unwrap();
    s.migrate().unwrap();
    let mut run = inferbench_store::synthetic::run(0, "clipm", 1024, 1024);
    run.run_key = "clip-test".into();
    run.batch = "clip-batch".into();
    let one = run.points[0].clone();
    run.points = [
        (4, 50.0, 100.0, 0.5),
        (16, 1000.0, 50.0, 2.0),
        (64, 2000.0, 20.0, 75.0),
    ]
    .into_iter()
    .map(|(conc, t, x, ttft)| {
        let mut p = one.clone();
        p.conc = conc;
        p.metrics.insert("tput_per_gpu".into(), t);
        p.metrics.insert("median_intvty".into(), x);
        p.metrics.insert("p99_ttft".into(), ttft);
        p
    })
    .collect();
    s.ingest_run(&run).unwrap();
    db
}
