//! `inferbench eval gsm8k` end to end: against a replay server whose every answer ends
//! `#### 72` (exact scores from known answers, failed samples, files, exit codes), and
//! against real llama.cpp serving SmolLM2 on a 50-question subset of the shared GSM8K data
//! (score recorded, `--no-threshold`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use inferbench_client::replay::{spawn_replay_thread, ReplayCase, ReplayEnd};

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

fn replay(text: &str) -> String {
    let chunk = |t: &str| {
        format!(
            "data: {}\n\n",
            serde_json::json!({"choices": [{"index": 0, "text": t}]})
        )
    };
    let case = ReplayCase {
        status: 200,
        headers: vec![("Content-Type".into(), "text/event-stream".into())],
        chunks: vec![
            (Duration::ZERO, chunk(text).into_bytes()),
            (
                Duration::ZERO,
                b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n".to_vec(),
            ),
        ],
        end: ReplayEnd::Close,
    };
    spawn_replay_thread(case)
}

fn data_dir(dir: &Path, answers: &[&str]) -> PathBuf {
    let d = dir.join("gsm8k");
    std::fs::create_dir_all(&d).unwrap();
    let line = |q: &str, a: &str| serde_json::json!({"question": q, "answer": a}).to_string();
    let test: Vec<String> = answers
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

fn eval(url: &str, data: &Path, out: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let o = Command::new(BIN)
        .args([
            "eval",
            "gsm8k",
            "--base-url",
            url,
            "--model",
            "m",
            "--backend",
            "openai",
        ])
        .arg("--data-dir")
        .arg(data)
        .arg("--result-dir")
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    (
        o.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
    )
}

#[test]
fn scores_files_thresholds_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let url = replay("Adding up, the total is 72 apples.\n#### 72");
    let data = data_dir(tmp.path(), &["72", "1,234", "72", "72"]);
    let out = tmp.path().join("out");
    // 3 of 4 right: below 0.90, exit 1; with --no-threshold, 0.
    let (code, text) = eval(&url, &data, &out, &[]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("gsm8k: 4 problems (0 failed requests): strict-match 0.7500 ± 0.2500, flexible-extract 0.7500 ± 0.2500"),
        "{text}"
    );
    assert!(text.contains("below the threshold 0.90"), "{text}");
    let (code, _) = eval(&url, &data, &out, &["--no-threshold"]);
    assert_eq!(code, Some(0));
    let (code, _) = eval(&url, &data, &out, &["--threshold", "0.75"]);
    assert_eq!(code, Some(0));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results_gsm8k.json")).unwrap())
            .unwrap();
    assert_eq!(r["results"]["gsm8k"]["exact_match,strict-match"], 0.75);
    assert_eq!(
        r["results"]["gsm8k"]["exact_match_stderr,flexible-extract"],
        0.25
    );
    assert_eq!(r["n-samples"]["gsm8k"]["effective"], 4);
    let samples: Vec<serde_json::Value> = std::fs::read_to_string(out.join("samples_gsm8k.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(samples.len(), 4);
    assert_eq!(samples[1]["target"], "1234");
    assert_eq!(samples[1]["strict"], "72");
    assert_eq!(samples[1]["pass_strict"], false);
    assert!(samples[0]["prompt"]
        .as_str()
        .unwrap()
        .starts_with("Question: Shot 0?\n"));
    // --limit, and a server that is not there: every sample failed with its cause, scored 0.
    let (code, text) = eval(
        "http://127.0.0.1:9",
        &data,
        &out,
        &["--limit", "2", "--no-threshold"],
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("gsm8k: 2 problems (2 failed requests): strict-match 0.0000"),
        "{text}"
    );
    let s: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(out.join("samples_gsm8k.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert!(!s["error"].as_str().unwrap().is_empty(), "{s}");
    // Missing data: exit 2 with what to pass.
    let (code, text) = eval(&url, &tmp.path().join("nowhere"), &out, &[]);
    assert_eq!(code, Some(2));
    assert!(
        text.contains("GSM8K data not found") && text.contains("--data-dir"),
        "{text}"
    );
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Real input: SmolLM2-135M on llama.cpp, 50 shared GSM8K problems, 256 output tokens.
#[test]
fn llamacpp_smollm2_on_50_problems() {
    let require = std::env::var("INFERBENCH_REQUIRE_SERVICES").as_deref() == Ok("1");
    let env = |k: &str| std::env::var(k).ok().filter(|s| !s.is_empty());
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/gsm8k");
    let (Some(py), Some(gguf)) = (env("INFERBENCH_TEST_PYTHON"), env("INFERBENCH_TEST_GGUF"))
    else {
        assert!(
            !require,
            "llama.cpp required (run scripts/setup/llamacpp.sh)"
        );
        eprintln!("SKIP: INFERBENCH_TEST_PYTHON / INFERBENCH_TEST_GGUF not set");
        return;
    };
    if !data.join("test.jsonl").is_file() {
        assert!(
            !require,
            "../shared/data/gsm8k is required (INFERBENCH_REQUIRE_SERVICES=1)"
        );
        eprintln!("SKIP: ../shared/data/gsm8k not found");
        return;
    }
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../runner/assets/llamacpp_serve.py");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let mut child = Command::new(&py)
        .arg(script)
        .args([
            "--model",
            &gguf,
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
        ])
        .args([
            "--n-parallel",
            "4",
            "--threads",
            "2",
            "--ctx-per-slot",
            "2048",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _server = Server(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    assert!(
        line.starts_with("llamacpp_serve: listening on "),
        "{line:?}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let o = Command::new(BIN)
        .args([
            "eval",
            "gsm8k",
            "--base-url",
            &format!("http://127.0.0.1:{port}"),
        ])
        .args([
            "--model",
            "smollm2",
            "--limit",
            "50",
            "--max-tokens",
            "256",
            "--concurrency",
            "4",
        ])
        .args(["--no-threshold", "--request-timeout", "600"])
        .arg("--data-dir")
        .arg(&data)
        .arg("--result-dir")
        .arg(&out)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    eprintln!("{text}");
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("gsm8k: 50 problems (0 failed requests)"),
        "{text}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results_gsm8k.json")).unwrap())
            .unwrap();
    let strict = r["results"]["gsm8k"]["exact_match,strict-match"]
        .as_f64()
        .unwrap();
    assert!((0.0..=1.0).contains(&strict), "{r}");
}
