//! `inferbench bench` as a user runs it: the real binary against an in-process replay server.
//! Pins: complete `--help`, exit codes (0 ok, 2 bad input naming the file, 3 dead server,
//! 130 on SIGTERM with finished requests saved), result/records files, and that the API key
//! appears in no output.

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use inferbench_testutil::replay::{spawn_replay_thread, ReplayCase, ReplayEnd};

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let p =
            std::env::temp_dir().join(format!("inferbench-bench-cli-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Serves a 4-token stream (`gap` between tokens) on a background runtime; returns its URL.
fn replay_server(gap: Duration) -> String {
    let tok = |t: &str| format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{t}\"}}]}}\n\n");
    let mut chunks: Vec<(Duration, Vec<u8>)> = ["a", "b", "c", "d"]
        .iter()
        .map(|t| (gap, tok(t).into_bytes()))
        .collect();
    chunks.push((
        Duration::ZERO,
        b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n".to_vec(),
    ));
    let case = ReplayCase {
        status: 200,
        headers: vec![("Content-Type".into(), "text/event-stream".into())],
        chunks,
        end: ReplayEnd::Close,
    };
    spawn_replay_thread(case)
}

fn bench(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("bench")
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    common::output_text(o)
}

#[test]
fn help_lists_every_flag() {
    let o = bench(&["--help"]);
    assert!(o.status.success());
    let h = text(&o);
    for flag in [
        "--backend",
        "--base-url",
        "--endpoint",
        "--model",
        "--api-key",
        "--header",
        "--extra-body",
        "--dataset-name",
        "--random-input-len",
        "--random-output-len",
        "--random-range-ratio",
        "--range-semantics",
        "--random-prefix-len",
        "--dataset-path",
        "--tokenizer",
        "--ignore-eos",
        "--seed",
        "--max-concurrency",
        "--request-rate",
        "--burstiness",
        "--num-prompts",
        "--num-warmups",
        "--duration",
        "--idle-timeout",
        "--request-timeout",
        "--save-result",
        "--result-dir",
        "--result-filename",
        "--save-detailed",
        "--save-requests",
        "--percentile-metrics",
        "--metric-percentiles",
        "--goodput",
        "--max-error-rate",
        "--max-anomaly-rate",
        "--max-tokens-field",
        "--inferencex-env",
        "OPENAI_API_KEY",
        "Exit codes",
    ] {
        assert!(h.contains(flag), "--help lacks {flag}");
    }
}

#[test]
fn runs_a_point_and_writes_results_without_the_key() {
    let url = replay_server(Duration::from_millis(2));
    let dir = TempDir::new("run");
    let d = dir.path().to_str().unwrap();
    let req = format!("{d}/req.jsonl");
    let o = bench(&[
        "--base-url",
        &url,
        "--model",
        "org/m",
        "--api-key",
        "sk-SECRET-42",
        "--dataset-name",
        "random",
        "--random-input-len",
        "8",
        "--random-output-len",
        "4",
        "--max-concurrency",
        "2",
        "--num-prompts",
        "6",
        "--ignore-eos",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        d,
        "--result-filename",
        "r.json",
        "--save-requests",
        &req,
        "--progress",
        "off",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("Serving Benchmark Result"), "{out}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{d}/r.json")).unwrap()).unwrap();
    assert_eq!(r["completed"], 6);
    assert_eq!(r["total_output_tokens"], 24);
    assert_eq!(
        r["total_input_tokens"], 48,
        "8-token prompts under o200k_base"
    );
    assert_eq!(r["model_id"], "org/m");
    assert_eq!(
        std::fs::read_to_string(&req).unwrap().lines().count(),
        6 + 4
    );
    for f in [format!("{d}/r.json"), req] {
        assert!(!std::fs::read_to_string(f).unwrap().contains("SECRET"));
    }
    assert!(!out.contains("SECRET"));
}

#[test]
fn dead_server_exits_3_with_a_clear_message() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // With a result directory and --db: the result file says what happened, but nothing is
    // stored (trial 24: a failed point of nothing was stored, and its database created).
    let dir = TempDir::new("dead");
    let results = dir.path().join("results");
    let db = dir.path().join("d.db");
    let o = bench(&[
        "--base-url",
        &format!("http://127.0.0.1:{port}"),
        "--model",
        "m",
        "--num-prompts",
        "4",
        "--progress",
        "off",
        "--result-dir",
        results.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
        "--set",
        "hw=h100",
        "--set",
        "framework=sim",
        "--set",
        "precision=bf16",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(
        out.contains(&format!(
            "inferbench: nothing stored in {}: the server never answered\n",
            db.display()
        )) && out.contains("wrote ")
            && !out.contains("ingested"),
        "{out}"
    );
    assert!(!db.exists(), "{out}");
    assert_eq!(std::fs::read_dir(&results).unwrap().count(), 1, "{out}");
    let o = bench(&[
        "--base-url",
        &format!("http://127.0.0.1:{port}"),
        "--model",
        "m",
        "--random-input-len",
        "4",
        "--random-output-len",
        "4",
        "--max-concurrency",
        "1",
        "--num-prompts",
        "50",
        "--progress",
        "off",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(
        out.contains("unreachable") && out.contains(&port.to_string()),
        "{out}"
    );
}

#[test]
fn unreadable_dataset_names_the_file() {
    let o = bench(&[
        "--model",
        "m",
        "--dataset-name",
        "jsonl",
        "--dataset-path",
        "/nonexistent/p.jsonl",
        "--progress",
        "off",
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(2), "{out}");
    assert!(out.contains("/nonexistent/p.jsonl"), "{out}");
}

#[cfg(unix)]
#[test]
fn sigterm_saves_finished_requests_and_exits_130() {
    let url = replay_server(Duration::from_millis(100));
    let dir = TempDir::new("sigterm");
    let req = dir.path().join("req.jsonl");
    let res = dir.path().join("r.json");
    let child = Command::new(BIN)
        .args([
            "bench",
            "--base-url",
            &url,
            "--model",
            "m",
            "--random-input-len",
            "4",
        ])
        .args([
            "--random-output-len",
            "4",
            "--max-concurrency",
            "2",
            "--num-prompts",
            "1000",
        ])
        .args(["--num-warmups", "0", "--progress", "off", "--save-result"])
        .args([
            "--result-filename",
            res.to_str().unwrap(),
            "--save-requests",
        ])
        .arg(&req)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until at least two requests finished (≈ 400 ms each), then SIGTERM.
    let lines = |p: &Path| {
        std::fs::read_to_string(p)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    for _ in 0..200 {
        if lines(&req) >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    common::signal(child.id(), "TERM");
    let o = child.wait_with_output().unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(130), "{out}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&res).unwrap()).unwrap();
    assert!(r["completed"].as_u64().unwrap() >= 2, "{r}");
    assert_eq!(r["inferbench"]["interrupted"], true);
    assert!(lines(&req) >= 2);
    // Issue 13: the requests in flight at SIGTERM (the 2 slots, unless one was between
    // requests) are cancellations, not failures: out of the error rate, counted apart, and
    // kept in the records with their class.
    let x = &r["inferbench"];
    assert_eq!(
        (x["failed"].as_u64(), x["error_rate"].as_f64()),
        (Some(0), Some(0.0)),
        "{x}"
    );
    let cancelled = x["cancelled_by_user"].as_u64().unwrap();
    assert!((1..=2).contains(&cancelled), "{x}");
    assert!(x["errors_by_class"].as_object().unwrap().is_empty(), "{x}");
    let in_records = std::fs::read_to_string(&req)
        .unwrap()
        .lines()
        .filter(|l| l.contains("\"error_class\":\"cancelled\""))
        .count() as u64;
    assert_eq!(in_records, cancelled);
    assert!(
        out.contains("Failed requests:                        0"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "Cancelled by user (not failures):       {cancelled}"
        )),
        "{out}"
    );
}

/// Issue 39 (fresh tester, finding 1): SIGHUP (the terminal closed, an ssh session dropped)
/// is the same graceful stop as SIGINT/SIGTERM: exit 130, the summary in `--result-dir` (no
/// `.tmp` left), the point stored in `--db`, the records saved. Before: exit 129 (the default
/// action), no summary, no row, an empty `rd/<name>.json.tmp`.
#[cfg(unix)]
#[test]
fn sighup_is_a_graceful_stop_summary_db_row_and_no_temp_file() {
    let url = replay_server(Duration::from_millis(100));
    let dir = TempDir::new("sighup");
    let req = dir.path().join("r.jsonl");
    let rd = dir.path().join("rd");
    let db = dir.path().join("t.db");
    let child = Command::new(BIN)
        .args(["bench", "--base-url", &url, "--model", "m"])
        .args(["--random-input-len", "4", "--random-output-len", "4"])
        .args(["--max-concurrency", "2", "--num-prompts", "1000"])
        .args(["--num-warmups", "0", "--progress", "off"])
        .args([
            "--set",
            "hw=h100",
            "--set",
            "framework=sim",
            "--set",
            "precision=bf16",
        ])
        .arg("--result-dir")
        .arg(&rd)
        .arg("--db")
        .arg(&db)
        .arg("--save-requests")
        .arg(&req)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = |p: &Path| {
        std::fs::read_to_string(p)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    for _ in 0..200 {
        if lines(&req) >= 2 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    common::signal(child.id(), "HUP");
    let o = child.wait_with_output().unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(130), "{out}");
    assert!(out.contains("(on SIGHUP)"), "{out}");
    let names: Vec<String> = std::fs::read_dir(&rd)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(names[0].ends_with(".json"), "{names:?}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(rd.join(&names[0])).unwrap()).unwrap();
    assert_eq!(r["inferbench"]["interrupted"], true, "{r}");
    let completed = r["completed"].as_u64().unwrap();
    assert!(completed >= 2, "{r}");
    let conn = rusqlite::Connection::open(&db).unwrap();
    let points: i64 = conn
        .query_row("SELECT COUNT(*) FROM points", [], |r| r.get(0))
        .unwrap();
    assert_eq!(points, 1, "{out}");
    assert!(lines(&req) as u64 >= completed, "{out}");
}

/// The direct children of `pid` (Linux `/proc`; empty elsewhere or once it is gone).
#[cfg(target_os = "linux")]
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Whether `pid` is still running (a zombie nobody reaped has ended).
#[cfg(target_os = "linux")]
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().to_string())
        })
        .is_some_and(|rest| !rest.starts_with('Z') && !rest.starts_with('X'))
}

/// Issue 39 (fresh tester, finding 1): a `sweep` sent SIGHUP (its terminal closed) stops its
/// point and its engine as on Ctrl-C, exit 130; before, it died of the signal (129) and its
/// `inferbench sim` engine ran on under PID 1.
#[cfg(target_os = "linux")]
#[test]
fn sighup_stops_a_sweep_and_its_engine() {
    let dir = TempDir::new("sighup-sweep");
    let ex = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let matrix = dir.path().join("m.json");
    let o = Command::new(BIN)
        .args(["matrix", "full-sweep", "--config-files"])
        .arg(ex.join("sim.yaml"))
        .arg("--runner-config")
        .arg(ex.join("sim-runners.yaml"))
        .arg("-o")
        .arg(&matrix)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let child = Command::new(BIN)
        .args(["sweep", "--matrix"])
        .arg(&matrix)
        .arg("--runner-config")
        .arg(ex.join("sim-runners.yaml"))
        .arg("--out")
        .arg(dir.path().join("out"))
        .env_remove("INFERBENCH_DB")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The engine: the sweep's child running `inferbench sim`.
    let is_sim = |p: &u32| {
        std::fs::read(format!("/proc/{p}/cmdline"))
            .is_ok_and(|c| String::from_utf8_lossy(&c).contains("\0sim\0"))
    };
    let mut engine = None;
    for _ in 0..600 {
        engine = children(child.id()).into_iter().find(is_sim);
        if engine.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let engine = engine.expect("the sweep started no `inferbench sim` engine within 30 s");
    // Into the point (the engine up, requests running), as a dropped terminal would be.
    std::thread::sleep(Duration::from_secs(3));
    common::signal(child.id(), "HUP");
    let o = child.wait_with_output().unwrap();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(130), "{out}");
    assert!(
        out.contains("interrupted: stopping the current point and the engine (on SIGHUP)"),
        "{out}"
    );
    let mut alive = running(engine);
    for _ in 0..100 {
        if !alive {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        alive = running(engine);
    }
    if alive {
        // Not ours to leave running: stop the orphan by its PID before failing.
        common::signal(engine, "KILL");
    }
    assert!(!alive, "the engine {engine} outlived the sweep:\n{out}");
}

#[test]
fn out_of_range_numbers_exit_2_at_once_naming_flag_and_limit() {
    for (args, want) in [
        (
            &["--max-concurrency", "4000000000"][..],
            "--max-concurrency: 4000000000 is outside [1, 1000000]",
        ),
        (
            &["--random-input-len", "4000000000"][..],
            "--random-input-len: 4000000000 tokens is outside [1, 10000000]",
        ),
        (
            &["--random-prefix-len", "4000000000"][..],
            "--random-prefix-len: 4000000000 tokens is outside [0, 10000000]",
        ),
        (
            &["--random-output-len", "0"][..],
            "--random-output-len: 0 tokens is outside [1, 10000000]",
        ),
        (
            &["--request-rate", "1e-12"][..],
            "--request-rate: 0.000000000001 is outside [0.001, 10000000] requests/s (or inf)",
        ),
        (
            &["--dataset-path", "/tmp/x.jsonl"][..],
            "--dataset-path: is not used by --dataset-name random",
        ),
    ] {
        let t0 = std::time::Instant::now();
        let mut argv = vec![
            "--model",
            "m",
            "--base-url",
            "http://127.0.0.1:9",
            "--progress",
            "off",
        ];
        argv.extend_from_slice(args);
        let o = bench(&argv);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{argv:?}: {out}");
        assert!(out.contains(want), "{argv:?}: {out}");
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{argv:?} took {:?}",
            t0.elapsed()
        );
    }
}

/// Issue 13: a wrong port with --max-concurrency 16 (32 warmups). The warmup failures are in
/// the summary and the JSON, nothing claims an interruption, the cause is printed once.
#[test]
fn wrong_port_says_what_happened_and_counts_agree() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = TempDir::new("wrong-port");
    let res = dir.path().join("r.json");
    let o = bench(&[
        "--base-url",
        &format!("http://127.0.0.1:{port}"),
        "--model",
        "m",
        "--random-input-len",
        "4",
        "--random-output-len",
        "4",
        "--max-concurrency",
        "16",
        "--progress",
        "off",
        "--save-result",
        "--result-filename",
        res.to_str().unwrap(),
    ]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(3), "{out}");
    assert!(!out.contains("Interrupted:"), "{out}");
    // Nothing was measured, so no power either: no note about a power sampler (trial 15).
    assert!(!out.contains("power sampler"), "{out}");
    assert!(
        out.contains("Stopped early:                          server unreachable before the profile: nothing measured"),
        "{out}"
    );
    assert!(
        out.contains("Warmup requests (failed):               32 (32)"),
        "{out}"
    );
    // No page of zeros: nothing was measured.
    assert!(!out.contains("Successful requests:"), "{out}");
    assert!(!out.contains("Request throughput"), "{out}");
    assert!(
        out.contains("Requests not sent:                      160"),
        "{out}"
    );
    // The connect error is quoted once, in the unreachable note; the table counts them
    // (trial 19: "unreachable" said three ways).
    assert!(
        out.contains("Warmup errors by class:                 connect=32")
            && !out.contains("errors: connect:")
            && out.matches("Connection refused").count() == 1,
        "{out}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&res).unwrap()).unwrap();
    let x = &r["inferbench"];
    assert_eq!(x["interrupted"], false);
    assert_eq!(x["stop_reason"], "server_unreachable");
    assert_eq!(x["warmups"], 32);
    assert_eq!(x["warmup_failed"], 32);
    assert_eq!(x["warmup_errors_by_class"]["connect"], 32);
    assert_eq!(x["requests_not_sent"], 160);
    assert!(
        x["error_samples"]["connect"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{x}"
    );
}

/// SIGINT while prompts are still being prepared ends the run within a second.
#[cfg(unix)]
#[test]
fn sigint_during_prompt_preparation_exits_within_a_second() {
    let child = Command::new(BIN)
        .args([
            "bench",
            "--base-url",
            "http://127.0.0.1:9",
            "--model",
            "m",
            "--random-input-len",
            "60000",
            // Far more than 1.5 s of preparation even on a fast idle machine (~1,000/s).
            "--num-prompts",
            "8000",
            "--progress",
            "off",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let t0 = std::time::Instant::now();
    common::signal(child.id(), "INT");
    let o = child.wait_with_output().unwrap();
    let waited = t0.elapsed();
    let out = text(&o);
    assert_eq!(o.status.code(), Some(130), "{out}");
    assert!(
        waited < Duration::from_secs(1),
        "took {waited:?} after SIGINT: {out}"
    );
    assert!(
        out.contains("interrupted during prompt preparation"),
        "{out}"
    );
}

/// A server that answers its first `n` connections with a 4-token stream (one request each,
/// closed after the response), then stops listening: a server dying mid-run.
fn dying_server(n: usize) -> String {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for _ in 0..n {
            let Ok((mut s, _)) = l.accept() else { return };
            // Read the head, then the body by its Content-Length.
            let mut buf = Vec::new();
            let mut b = [0u8; 4096];
            let head_end = loop {
                let Ok(k) = s.read(&mut b) else { break None };
                if k == 0 {
                    break None;
                }
                buf.extend_from_slice(&b[..k]);
                if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break Some(i + 4);
                }
            };
            let Some(head_end) = head_end else { continue };
            let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < head_end + len {
                match s.read(&mut b) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => buf.extend_from_slice(&b[..k]),
                }
            }
            let mut body = String::new();
            for t in ["a", "b", "c", "d"] {
                body.push_str(&format!(
                    "data: {{\"choices\":[{{\"index\":0,\"text\":\"{t}\"}}]}}\n\n"
                ));
            }
            body.push_str("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n");
            let _ = s.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{body}"
                )
                .as_bytes(),
            );
        }
        // The listener closes here: every later connect is refused.
    });
    format!("http://{addr}")
}

/// Issue 13: when the server dies mid-run, the final progress counts are printed once, in
/// the progress line's format, before the report, and they agree with the report.
#[test]
fn server_dying_mid_run_prints_the_final_counts_before_the_report() {
    let url = dying_server(5);
    let o = bench(&[
        "--base-url",
        &url,
        "--model",
        "m",
        "--random-input-len",
        "8",
        "--random-output-len",
        "4",
        "--max-concurrency",
        "2",
        "--num-prompts",
        "100",
        "--num-warmups",
        "0",
        "--no-server-metrics",
        "--progress",
        "plain",
    ]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(3), "{stdout}{stderr}");
    let count = |label: &str| -> u64 {
        let l = stdout
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("no {label} in {stdout}"));
        l[label.len()..].trim().parse().unwrap()
    };
    let (ok, failed) = (count("Successful requests:"), count("Failed requests:"));
    assert_eq!(ok, 5, "{stdout}");
    let last = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("[bench] "))
        .unwrap_or_else(|| panic!("no progress line: {stderr}"));
    assert!(
        last.contains(&format!(
            " elapsed: {}/100 requests ended: {ok} ok, {failed} failed; ",
            ok + failed
        )) && last.ends_with(" output tok/s"),
        "{last}\n{stdout}"
    );
}

/// Issue 13: `--base-url …/v1` with an endpoint that starts with /v1/ is refused before any
/// request, naming the URL it would have used and the fix.
#[test]
fn base_url_ending_in_v1_is_refused_up_front() {
    for (backend, endpoint) in [
        ("openai", "/v1/completions"),
        ("openai-chat", "/v1/chat/completions"),
    ] {
        let t0 = std::time::Instant::now();
        let o = bench(&[
            "--base-url",
            "http://127.0.0.1:9/v1/",
            "--backend",
            backend,
            "--model",
            "m",
            "--progress",
            "off",
        ]);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{out}");
        assert!(
            out.contains(&format!(
                "--base-url: should not end in /v1: the endpoint {endpoint} is appended (requests \
                 would go to http://127.0.0.1:9/v1{endpoint}); use --base-url http://127.0.0.1:9"
            )),
            "{out}"
        );
        assert!(t0.elapsed() < Duration::from_secs(10));
    }
}

/// Trial 22: without `--model`, a bad `--base-url` was found out only by asking the server for
/// its models (exit 3 "cannot say which model it serves"); it is refused up front as with
/// `--model`, for `bench` and `replay` alike.
#[test]
fn a_bad_base_url_is_refused_before_asking_for_the_served_model() {
    let traces = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/agentx-traces.jsonl"
    );
    for (url, said) in [
        (
            "ftp://127.0.0.1:9",
            "only http:// and https:// are supported",
        ),
        ("127.0.0.1:9", "missing the http:// scheme"),
        ("http://127.0.0.1:9/v1", "should not end in /v1"),
    ] {
        let o = bench(&["--base-url", url, "--progress", "off"]);
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{out}");
        assert!(
            out.contains("error: --base-url: ") && out.contains(said),
            "{out}"
        );
        assert!(!out.contains("which model it serves"), "{out}");
        let o = Command::new(BIN)
            .args(["replay", "--traces", traces, "--base-url", url])
            .args([
                "--concurrency",
                "1",
                "--benchmark-duration",
                "5",
                "--unsafe-override",
            ])
            .output()
            .unwrap();
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{out}");
        assert!(
            out.contains("error: --base-url: ") && out.contains(said),
            "{out}"
        );
    }
}

/// Issue 13: log lines written to a pipe or a file carry no ANSI colour codes.
#[test]
fn log_lines_off_a_terminal_have_no_colour_codes() {
    let o = Command::new(BIN)
        .args(["bench", "--base-url", "http://127.0.0.1:9", "--model", "m"])
        .args([
            "--random-input-len",
            "4",
            "--random-output-len",
            "4",
            "--num-prompts",
            "1",
        ])
        .args(["--progress", "off"])
        .env("INFERBENCH_LOG", "debug")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(" DEBUG "), "{err}");
    assert!(!err.contains('\x1b'), "{err:?}");
}

/// Trial 16: a server that accepts connections and never answers gets a hint while the warmup
/// waits (here after 1 s instead of 30 s), once; `--request-timeout` then fails the warmup.
#[test]
fn a_silent_server_gets_a_hint_during_the_warmup() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Accepts and holds every connection, reading nothing and answering nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in listener.incoming().flatten() {
            held.push(c);
        }
    });
    let o = Command::new(BIN)
        .args([
            "bench",
            "--base-url",
            &format!("http://{addr}"),
            "--model",
            "m",
        ])
        .args(["--random-input-len", "8", "--random-output-len", "4"])
        .args(["--num-prompts", "2", "--num-warmups", "1"])
        .args(["--request-timeout", "6", "--progress", "plain"])
        .env("INFERBENCH_STALL_HINT_S", "1")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let hint = "warmup: no request has finished after 1 s: is the server still loading its model, \
                or stuck (it accepted the connections but has answered nothing)?";
    assert_eq!(err.matches(hint).count(), 1, "{err}");
    assert_ne!(o.status.code(), Some(0), "{err}");
}

/// Issue 39's leftovers, 4: a side request (`/v1/models`, asked without `--model`) through a
/// dead `HTTP_PROXY` names the proxy as what could not be reached, with the advice the
/// benchmark requests' end note gives (`http::unreachable_advice`, the one rule; was: "is an
/// HTTP server running there? check the address"). Exit 3, nothing sent to the server.
#[test]
fn a_side_request_through_a_dead_proxy_names_the_proxy() {
    let o = Command::new(BIN)
        .args([
            "bench",
            "--base-url",
            "http://models.example:8000",
            "--num-prompts",
            "1",
        ])
        .env("HTTP_PROXY", "http://127.0.0.1:9")
        .env_remove("http_proxy")
        .env_remove("no_proxy")
        .env_remove("NO_PROXY")
        .output()
        .unwrap();
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(
        text.contains(
            "error: --model not given, and http://models.example:8000/v1/models could not be \
             asked which model the server serves (GET http://models.example:8000/v1/models: \
             cannot connect to the proxy 127.0.0.1:9 (from the environment's http_proxy / \
             HTTP_PROXY): Connection refused (os error 111)): the proxy is not reachable, \
             whatever the server's state: check the proxy variable named above, or NO_PROXY / \
             --no-proxy to go direct"
        ),
        "{text}"
    );
}

/// Issue 39: `selftest` did not use the shutdown token: SIGTERM or SIGHUP to the selftest
/// process alone killed it by the default action (exit 143 / 129) and left its
/// `--spawn-server` server running. Each now cuts the level in flight, stops the server
/// (killed and reaped) and exits 130; the server also gets the parent-death signal, so even
/// SIGKILL leaves none. The spawned "sse-instant" here is a script that execs `inferbench sim
/// --mode instant` on the port selftest gives it.
#[cfg(target_os = "linux")]
#[test]
fn a_signal_to_selftest_stops_its_spawned_server_and_exits_130() {
    use std::io::{BufRead as _, BufReader};
    let dir = TempDir::new("selftest-signal");
    let srv = dir.0.join("srv.sh");
    std::fs::write(
        &srv,
        format!(
            "#!/bin/sh\n# sse-instant's flags: --coalesce --port N --threads T\nexec {BIN} sim \
             --mode instant --served-model-name selftest --host 127.0.0.1 --port \"$3\" \
             --threads \"$5\"\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&srv, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let alive = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/status")).is_ok_and(|s| {
            !s.lines()
                .any(|l| l.starts_with("State:") && l.contains('Z'))
        })
    };
    for (sig, code) in [("TERM", Some(130)), ("HUP", Some(130)), ("KILL", None)] {
        let mut child = Command::new(BIN)
            .args(["selftest", "--spawn-server"])
            .arg(&srv)
            .args(["--concurrency", "4", "--duration", "60", "--tokens", "16"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        // Mid-run: the level has started against the spawned server.
        while !line.contains("selftest: concurrency 4 for 60.0 s against") {
            line.clear();
            assert!(
                err.read_line(&mut line).unwrap() > 0,
                "selftest ended early"
            );
        }
        let children =
            std::fs::read_to_string(format!("/proc/{}/task/{}/children", child.id(), child.id()))
                .unwrap();
        let server: u32 = children.trim().parse().expect("one spawned server");
        assert!(alive(server));
        common::signal(child.id(), sig);
        let status = child.wait().unwrap();
        assert_eq!(status.code(), code, "SIGTERM/SIGHUP: 130; SIGKILL: no code");
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
        if code.is_some() {
            assert!(
                rest.contains(&format!(
                    "selftest: interrupted; stopping (and its spawned server) (on SIG{sig})\n"
                )),
                "{rest}"
            );
        }
        // The server stops (its own graceful stop may take a moment after the signal).
        let t0 = std::time::Instant::now();
        while alive(server) && t0.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(50));
        }
        if alive(server) {
            let _ = Command::new("kill").arg(server.to_string()).status();
            panic!("SIG{sig}: the spawned server {server} was left running");
        }
    }
}

/// Issue 39 (a fresh tester's findings, 1), the tester's command: `bench --backend openai
/// --random-output-len 4 --extra-body '{"max_tokens":400}'` against the sim cut every answer
/// at 128 chunks ("the server ignored max_tokens"), recorded `max_tokens` 4 and exited 1. The
/// body's length is the records' and the estimates': exit 0, every record 400 tokens of 400.
#[test]
fn bench_extra_body_max_tokens_is_the_records_length() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args([
            "bench",
            "--backend",
            "openai",
            "--base-url",
            &format!("http://127.0.0.1:{}", sim.1),
            "--random-input-len",
            "16",
            "--random-output-len",
            "4",
            "--num-prompts",
            "4",
            "--extra-body",
            r#"{"max_tokens":400}"#,
            "--save-requests",
            "r.jsonl",
            "--power",
            "off",
            "--progress",
            "off",
        ])
        .current_dir(dir.path())
        .env_remove("INFERBENCH_DB")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::output_text(&o));
    let recs: Vec<serde_json::Value> = std::fs::read_to_string(dir.path().join("r.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(recs.len() >= 4);
    for r in &recs {
        assert_eq!(
            (&r["max_tokens"], &r["completion_tokens"], &r["success"]),
            (
                &serde_json::json!(400),
                &serde_json::json!(400),
                &serde_json::json!(true)
            ),
            "{r}"
        );
    }
}
