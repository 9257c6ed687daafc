//! `inferbench bench` against the real `inferbench sim` server, as a user repeats a run:
//! the second run with the same seed is served from the sim's prefix cache and says so;
//! `--cache-bust` avoids it; `--db` with `--set` puts the point in the database so `report`
//! shows it (issue 13).

mod common;

use std::process::{Command, Output};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

use common::{start_sim, Sim};

/// Writes an executable stand-in `name` (a bash script) into `bin`.
fn fake_tool(bin: &std::path::Path, name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let p = bin.join(name);
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A JSON file's value (panics naming the file).
fn read_json(p: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn bench(sim: &Sim, extra: &[&str]) -> (Output, String) {
    let (o, text) = bench_model(sim, "Llama-3.1-8B", extra);
    assert!(o.status.success(), "{text}");
    (o, text)
}

/// `--save-result --result-dir DIR --result-filename NAME`.
fn saved_as<'a>(dir: &'a std::path::Path, name: &'a str) -> Vec<&'a str> {
    vec![
        "--save-result",
        "--result-dir",
        dir.to_str().unwrap(),
        "--result-filename",
        name,
    ]
}

/// `bench` against the sim with `--model model`, whatever the exit code.
fn bench_model(sim: &Sim, model: &str, extra: &[&str]) -> (Output, String) {
    let url = format!("http://127.0.0.1:{}", sim.1);
    let o = Command::new(BIN)
        .args([
            "bench",
            "--base-url",
            &url,
            "--model",
            model,
            "--random-input-len",
            "256",
            "--random-output-len",
            "8",
            "--max-concurrency",
            "4",
            "--num-prompts",
            "8",
            "--progress",
            "off",
        ])
        .args(extra)
        .output()
        .unwrap();
    let text = common::output_text(&o);
    (o, text)
}

#[test]
fn repeated_seed_warns_of_prefix_cache_hits_and_cache_bust_avoids_them() {
    let sim = start_sim(&[]);
    let (_, first) = bench(&sim, &[]);
    assert!(!first.contains("prefix cache served"), "{first}");
    let dir = std::env::temp_dir().join(format!("inferbench-bench-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (_, second) = bench(&sim, &saved_as(&dir, "r.json"));
    // All 8 prompts were sent before: the sim (as vLLM) finds every cached 16-token block but
    // the last (one token must be computed), 240 of each 256-token prompt: 8 × 240 = 1920.
    assert!(
        second.contains("the server's prefix cache served 1920 of 2048 prompt tokens (93.8 %)"),
        "{second}"
    );
    assert!(second.contains("--cache-bust"), "{second}");
    // Its TTFT is the cache's: the point is invalid, so ingest keeps it off every frontier.
    let r = read_json(&dir.join("r.json"));
    let why = r["inferbench"]["invalid_reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.starts_with("the server's prefix cache served 1920 of 2048")
            && why.contains(
                "the result is marked invalid (kept off frontiers unless --include-invalid)"
            ),
        "{r}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let (_, busted) = bench(&sim, &["--cache-bust"]);
    assert!(!busted.contains("prefix cache served"), "{busted}");
}

/// Issue 39, fresh tester: chat and Responses runs with `--cache-bust` on a fresh sim were
/// marked invalid ("served 752 of 8543 prompt tokens"): every prompt shares the template's
/// opening and the run's marker, a whole 16-token block the sim rightly serves from its cache.
/// What every prompt shares by design is explained; a repeated chat run is still flagged.
#[test]
fn cache_bust_chat_and_responses_runs_are_not_flagged_but_a_repeat_is() {
    let sim = start_sim(&[]);
    let load = [
        "--num-prompts",
        "32",
        "--max-concurrency",
        "8",
        "--random-output-len",
        "8",
    ];
    for backend in ["openai-chat", "openai-responses"] {
        let mut args = vec!["--backend", backend, "--cache-bust"];
        args.extend(load);
        let (_, text) = bench(&sim, &args);
        assert!(!text.contains("prefix cache served"), "{backend}: {text}");
        assert!(!text.contains("invalid"), "{backend}: {text}");
    }
    // Without --cache-bust, the same seed twice: the second run is the cache's.
    let mut args = vec!["--backend", "openai-chat", "--seed", "7"];
    args.extend(load);
    let (_, first) = bench(&sim, &args);
    assert!(!first.contains("prefix cache served"), "{first}");
    let (_, second) = bench(&sim, &args);
    assert!(
        second.contains("the server's prefix cache served"),
        "{second}"
    );
}

/// Trial 32 F5: against `sim --time-scale 10` bench measured 10× the modelled hardware's speed
/// and said nothing. The sim's `/metrics` names its time scale; bench notes it and marks the
/// point invalid (quickstart and `sweep --sim` rescale to modelled time instead).
#[test]
fn a_sim_faster_than_real_time_makes_the_point_invalid() {
    let sim = start_sim(&["--time-scale", "10"]);
    let dir = std::env::temp_dir().join(format!("inferbench-bench-scaled-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (_, text) = bench(&sim, &saved_as(&dir, "r.json"));
    assert!(
        text.contains(
            "inferbench: the server is inferbench's sim at --time-scale 10: it ran 10× \
             the speed of the hardware it models"
        ),
        "{text}"
    );
    let r = read_json(&dir.join("r.json"));
    assert_eq!(r["inferbench"]["server_metrics"]["sim_time_scale"], 10.0);
    let why = r["inferbench"]["invalid_reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        why.contains("the server is inferbench's sim at --time-scale 10")
            && why.contains("quickstart / sweep --sim, which rescale to modelled time"),
        "{r}"
    );
    // Without scraping, the sim's response header says it (trial 33 F2); a user's metadata
    // key does not turn the check off (F3).
    let (_, text) = bench(
        &sim,
        &[
            &saved_as(&dir, "r2.json")[..],
            &["--no-server-metrics", "--metadata", "sim_time_scale=1"],
        ]
        .concat(),
    );
    assert!(text.contains("sim at --time-scale 10"), "{text}");
    let r = read_json(&dir.join("r2.json"));
    assert!(
        (r["inferbench"]["invalid_reason"]
            .as_str()
            .unwrap_or_default())
        .contains("the server is inferbench's sim at --time-scale 10"),
        "{r}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    // At time scale 1 the gauge reads 1 and the point stands.
    let sim = start_sim(&[]);
    let (_, text) = bench(&sim, &["--cache-bust"]);
    assert!(!text.contains("--time-scale"), "{text}");
}

#[test]
fn server_metrics_are_scraped_into_the_result_and_summary() {
    let sim = start_sim(&[]);
    let dir = std::env::temp_dir().join(format!("inferbench-bench-sm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut args = saved_as(&dir, "r.json");
    args.push("--ignore-eos");
    let (_, text) = bench(&sim, &args);
    // The sim has no GPU: no "no GPU power sampler found" note against it (trial 13).
    assert!(!text.contains("power sampler"), "{text}");
    // Named after the result file, so runs into one --result-dir keep their own (issue 13).
    assert!(!dir.join("server_metrics.jsonl").exists());
    let lines = std::fs::read_to_string(dir.join("r.server_metrics.jsonl")).unwrap();
    let phases: Vec<String> = lines
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["phase"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        phases.first().map(String::as_str),
        Some("baseline"),
        "{phases:?}"
    );
    assert!(phases.iter().any(|p| p == "profile"), "{phases:?}");
    assert_eq!(
        phases.last().map(String::as_str),
        Some("final"),
        "{phases:?}"
    );
    let r: serde_json::Value = read_json(&dir.join("r.json"));
    let sm = &r["inferbench"]["server_metrics"];
    assert_eq!(sm["engine"], "vllm", "{text}");
    // The profile window only (the warmup's prompt is counted before the profile mark):
    // 8 prompts x 256 prompt tokens, 8 x 8 generated (ignore_eos).
    assert_eq!(sm["prompt_tokens"], 2048.0, "{sm}");
    assert_eq!(sm["generation_tokens"], 64.0, "{sm}");
    assert_eq!(sm["prefix_cache_queries"], 2048.0, "{sm}");
    assert!(sm["kv_cache_usage_max"].as_f64().unwrap() >= 0.0, "{sm}");

    // A second run into the same directory keeps the first one's scrape; `ingest` of the
    // directory stores both runs with their server metrics and ignores nothing.
    bench(
        &sim,
        &[
            "--save-result",
            "--result-dir",
            dir.to_str().unwrap(),
            "--result-filename",
            "r2.json",
            "--ignore-eos",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("r.server_metrics.jsonl")).unwrap(),
        lines
    );
    assert!(dir.join("r2.server_metrics.jsonl").is_file());
    let db = dir.with_extension("db");
    let _ = std::fs::remove_file(&db);
    let o = Command::new(BIN)
        .arg("ingest")
        .arg(&dir)
        .arg("--db")
        .arg(&db)
        .args([
            "--set",
            "hw=h100",
            "--set",
            "framework=sim",
            "--set",
            "precision=bf16",
        ])
        .output()
        .unwrap();
    let out = common::output_text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("from 2 source(s)"), "{out}");
    assert!(!out.contains("ignored"), "{out}");
    let mut store = inferbench_store::Store::open_existing(db.to_str().unwrap()).unwrap();
    let counts: std::collections::BTreeMap<String, i64> =
        store.table_counts().unwrap().into_iter().collect();
    let rows = |f: &str| {
        std::fs::read_to_string(dir.join(f))
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["samples"]
                    .as_array()
                    .unwrap()
                    .len() as i64
            })
            .sum::<i64>()
    };
    assert_eq!(
        counts["server_metrics"],
        rows("r.server_metrics.jsonl") + rows("r2.server_metrics.jsonl"),
        "{counts:?}"
    );
    drop(store);
    // `ingest DIR --db DB` with `set`: its output, after checking that it succeeded.
    let ingest = |set: &[&str]| -> String {
        let o = Command::new(BIN)
            .arg("ingest")
            .arg(&dir)
            .arg("--db")
            .arg(&db)
            .args(set)
            .output()
            .unwrap();
        let out = common::output_text(&o);
        assert!(o.status.success(), "{out}");
        out
    };
    // Ingested again without --set (trial 24: hw, framework and precision became `unknown`):
    // the identity stored before is kept, and said so.
    let out = ingest(&[]);
    assert!(
        out.contains("2 already present, updated in place")
            && out.contains(
                "not given by the files, kept as stored before: framework=sim, hw=h100, \
                 precision=bf16\n"
            )
            && !out.contains("stored as `unknown`"),
        "{out}"
    );
    let mut store = inferbench_store::Store::open_existing(db.to_str().unwrap()).unwrap();
    let pts = store
        .points(&Default::default(), &Default::default())
        .unwrap();
    assert_eq!(pts.len(), 2);
    for p in pts {
        assert_eq!(
            (
                p.hardware.as_str(),
                p.framework.as_str(),
                p.precision.as_str()
            ),
            ("h100", "sim", "bf16")
        );
    }
    drop(store);
    // Relabelled with other --set values: done (a run is its result file), but said (trial 26:
    // the h100 rows vanished without a word).
    let out = ingest(&[
        "--set",
        "hw=h200",
        "--set",
        "framework=sim",
        "--set",
        "precision=bf16",
    ]);
    assert_eq!(
        out.matches("stored before, now relabelled (hw h100 → h200); a run is its result file: copy the file to keep both")
            .count(),
        2,
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    for ext in ["db", "db-shm", "db-wal"] {
        let _ = std::fs::remove_file(dir.with_extension(ext));
    }
}

/// Issue 13: a wrong `--model` is answered 404; the notes say which models the server does
/// serve (its /v1/models).
#[test]
fn wrong_model_names_the_models_the_server_serves() {
    let sim = start_sim(&[]);
    let (o, text) = bench_model(&sim, "Llama-3.1-8B-typo", &[]);
    assert_eq!(o.status.code(), Some(1), "{text}");
    let hint = "the server does not serve model \"Llama-3.1-8B-typo\"; its /v1/models lists: \
                Llama-3.1-8B (pass one with --model)";
    // Said once, as the run's verdict, without the 404 it explains (trial 22: the warmups'
    // answer quoted, the hint on a line of its own).
    assert!(
        text.contains(&format!(
            "inferbench: every warmup request failed (8 of 8): {hint}; the profile was not run\n"
        )) && text.matches("does not serve model").count() == 1
            && !text.contains("HTTP 404")
            && !text.contains("errors: http_status:"),
        "{text}"
    );
    // `replay` says it the same way (trial 23: the raw 404 quoted).
    let traces = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/agentx-traces.jsonl"
    );
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(BIN)
        .args(["replay", "--traces", traces, "--port", &sim.1.to_string()])
        .args(["--model", "Llama-3.1-8B-typo", "--concurrency", "1"])
        .args([
            "--benchmark-duration",
            "5",
            "--unsafe-override",
            "--result-dir",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "inferbench: a main-agent warmup request failed: {hint}; the replay was aborted \
             (AgentX rule)\n"
        )) && !text.contains("HTTP 404"),
        "{text}"
    );
    // A replay that measured nothing is failed, not invalid (issue 39, fresh tester: one
    // status rule with `bench`; it said `Validity: invalid (a warmup request failed; no
    // request succeeded; duration below 900 s with --unsafe-override)`); no plays line for a
    // replay in which nothing succeeded (trial 24).
    assert!(
        text.contains(
            "Status: failed (a main-agent warmup request failed: the replay was aborted (AgentX \
             rule), nothing measured)\n"
        ) && !text.contains("Validity:")
            && !text.contains("Agentic: "),
        "{text}"
    );
    let summary = read_json(&dir.path().join("summary.json"));
    assert_eq!(
        (
            &summary["inferbench"]["stop_reason"],
            &summary["inferbench"]["failed_reason"]
        ),
        (
            &serde_json::json!("aborted"),
            &serde_json::json!(
                "a main-agent warmup request failed: the replay was aborted (AgentX rule), \
                 nothing measured"
            )
        ),
        "{summary}"
    );
    // Without warmups the profile's verdict says it.
    let (o, text) = bench_model(&sim, "Llama-3.1-8B-typo", &["--num-warmups", "0"]);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains(&format!(
            "inferbench: nothing was measured: none of the 8 profile requests succeeded (8 \
             failed): {hint}\n"
        )) && text.matches("does not serve model").count() == 1,
        "{text}"
    );
}

/// Trial 19: vLLM's `--host`/`--port` were refused and `--model` was required. As in `vllm
/// bench serve`, the URL is `http://HOST:PORT` and the model is the first one /v1/models
/// lists; with nothing listening there, the run ends as unreachable (3), naming `--model`.
#[test]
fn host_port_and_the_served_model_stand_in_for_base_url_and_model() {
    let sim = start_sim(&[]);
    let port = sim.1.to_string();
    let run = |port: &str| {
        let o = Command::new(BIN)
            .args(["bench", "--host", "127.0.0.1", "--port", port])
            .args(["--random-input-len", "16", "--random-output-len", "4"])
            .args(["--num-prompts", "2", "--progress", "off"])
            .output()
            .unwrap();
        let text = common::output_text(&o);
        (o, text)
    };
    let (o, text) = run(&port);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains(
            "inferbench: model \"Llama-3.1-8B\": the first model the server's /v1/models lists \
             (--model not given)"
        ) && text.contains("Successful requests:                    2"),
        "{text}"
    );
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = dead.local_addr().unwrap().port().to_string();
    drop(dead);
    let (o, text) = run(&dead_port);
    assert_eq!(o.status.code(), Some(3), "{text}");
    common::assert_no_server_to_ask_for_the_model(&text, &dead_port);
}

#[test]
fn bench_db_stores_the_point_with_its_identity() {
    let sim = start_sim(&[]);
    let dir = std::env::temp_dir().join(format!("inferbench-bench-sim-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("t.db");
    let db = db.to_str().unwrap();
    let result_dir = dir.join("results");
    let (_, text) = bench(
        &sim,
        &[
            "--db",
            db,
            "--set",
            "hw=h100",
            "--set",
            "framework=sim",
            "--set",
            "precision=bf16",
            "--result-dir",
            result_dir.to_str().unwrap(),
        ],
    );
    assert!(text.contains("from 1 source(s)"), "{text}");
    let o = Command::new(BIN)
        .args(["report", "--db", db, "--format", "csv", "--columns"])
        .arg("model,isl,osl,hardware,framework,precision,conc")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "model,isl,osl,hardware,framework,precision,conc\nllama3.1-8b,256,8,h100,sim,bf16,4\n"
    );
    // Trial 9: the batch was the result file's own path, so `-f batch=<--result-dir>` matched
    // nothing; it is the result directory now, as for a sweep's points.
    let o = Command::new(BIN)
        .args([
            "report",
            "--db",
            db,
            "--format",
            "csv",
            "--columns",
            "conc,batch",
        ])
        .args(["-f", &format!("batch={}", result_dir.display())])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!(
            "conc,batch\n4,{}\n",
            result_dir.canonicalize().unwrap().display()
        )
    );
    // Trial 16: an incomplete identity is said once, before the run, not again by the
    // ingest after it; and a second run into the same directory keeps the first's file.
    let files = |d: &std::path::Path| {
        (std::fs::read_dir(d).unwrap().flatten())
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .count()
    };
    let before = files(&result_dir);
    let (_, text) = bench(
        &sim,
        &["--db", db, "--result-dir", result_dir.to_str().unwrap()],
    );
    assert_eq!(text.matches("stored as `unknown`").count(), 1, "{text}");
    assert!(
        text.contains("--db without hw, framework, precision: stored as `unknown`"),
        "{text}"
    );
    assert_eq!(files(&result_dir), before + 1, "{text}");
    // --set without --db is refused (it would do nothing).
    let o = Command::new(BIN)
        .args(["bench", "--model", "m", "--set", "hw=h100"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    // The same into PostgreSQL (trial 7: `bench --db postgres://…` panicked after the run,
    // the client's runtime inside ours), a schema of the private test server.
    if let Some(pg) =
        inferbench_testutil::env_or_skip("INFERBENCH_TEST_PG_URL", "run scripts/setup/postgres.sh")
    {
        let url = format!("{pg}?schema=t_bench_db_cli");
        let (_, text) = bench(
            &sim,
            &[
                "--db",
                &url,
                "--set",
                "hw=h100",
                "--result-dir",
                result_dir.to_str().unwrap(),
            ],
        );
        assert!(text.contains("from 1 source(s)"), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `sim` stops on SIGTERM as on Ctrl-C (one shutdown token for every subcommand).
#[test]
fn sim_stops_on_sigterm() {
    let mut sim = start_sim(&[]);
    common::signal(sim.0.id(), "TERM");
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = sim.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "sim ignored SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
}

/// A stand-in `nvidia-smi` (its `-L`, `--query-gpu … --format=csv[,noheader]` and
/// `--loop-ms=N` behaviour): GPU 0 draws 100 W, GPU 1 300 W, local-time timestamps.
const FAKE_NVIDIA_SMI: &str = r#"#!/bin/bash
if [ "$1" = -L ]; then echo "GPU 0: Fake (UUID: GPU-0)"; echo "GPU 1: Fake (UUID: GPU-1)"; exit 0; fi
noheader=0; loop=0
for a in "$@"; do
  case "$a" in --format=csv,noheader) noheader=1 ;; --loop-ms=*) loop=${a#--loop-ms=} ;; esac
done
[ "$noheader" = 1 ] || echo "timestamp, index, power.draw [W], temperature.gpu, clocks.current.sm [MHz], clocks.current.memory [MHz], utilization.gpu [%], utilization.memory [%], memory.used [MiB]"
emit() {
  ts=$(date +'%Y/%m/%d %H:%M:%S.%3N')
  echo "$ts, 0, 100.00 W, 40, 1980 MHz, 2619 MHz, 50 %, 20 %, 1000 MiB"
  echo "$ts, 1, 300.00 W, 41, 1980 MHz, 2619 MHz, 60 %, 25 %, 1200 MiB"
}
if [ "$loop" = 0 ]; then emit; exit 0; fi
while true; do emit; sleep "$(awk "BEGIN { print $loop / 1000 }")"; done
"#;

#[test]
fn power_from_nvidia_smi_is_sampled_validated_and_summarized() {
    let sim = start_sim(&[]);
    let dir = std::env::temp_dir().join(format!("inferbench-bench-power-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    fake_tool(&bin, "nvidia-smi", FAKE_NVIDIA_SMI);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = dir.join("out");
    let o = Command::new(BIN)
        .env("PATH", &path)
        .args([
            "bench",
            "--base-url",
            &format!("http://127.0.0.1:{}", sim.1),
        ])
        .args([
            "--model",
            "Llama-3.1-8B",
            "--random-input-len",
            "256",
            "--random-output-len",
            "64",
        ])
        .args([
            "--max-concurrency",
            "2",
            "--num-prompts",
            "8",
            "--progress",
            "off",
            "--save-result",
        ])
        .args([
            "--result-filename",
            "r.json",
            "--power-interval",
            "0.2",
            "--require-power",
        ])
        .arg("--result-dir")
        .arg(&out)
        .output()
        .unwrap();
    let text = common::output_text(&o);
    assert!(o.status.success(), "{text}");
    // Named after the result file (issue 13).
    assert!(!out.join("power.csv").exists());
    let csv = std::fs::read_to_string(out.join("r.power.csv")).unwrap();
    assert!(csv.starts_with("timestamp, index, power.draw [W]"), "{csv}");
    let v: serde_json::Value = read_json(&out.join("r.power_validation.json"));
    assert_eq!(v["power_valid"], true, "{v}");
    assert_eq!(v["observed_gpu_ids"], serde_json::json!(["0", "1"]));
    let r: serde_json::Value = read_json(&out.join("r.json"));
    let p = &r["inferbench"]["power"];
    assert_eq!(
        (
            p["source"].as_str(),
            p["valid"].as_bool(),
            p["gpus"].as_u64()
        ),
        (Some("nvidia-smi"), Some(true), Some(2))
    );
    // Constant draws: 100 W and 300 W, so 200 W per GPU and 400 W in all over the window.
    let m = &p["metrics"];
    assert!(
        (m["avg_power_w"].as_f64().unwrap() - 200.0).abs() < 1e-6,
        "{m}"
    );
    let e = m["total_gpu_energy_j"].as_f64().unwrap();
    let tokens = (r["total_input_tokens"].as_f64().unwrap()
        + r["total_output_tokens"].as_f64().unwrap()) as f64;
    assert!(
        (m["joules_per_total_token"].as_f64().unwrap() - e / tokens).abs() < 1e-12,
        "{m}"
    );
    // --require-power without any sampler: refused before the run.
    let o = Command::new(BIN)
        .env("PATH", dir.join("empty"))
        .args([
            "bench",
            "--base-url",
            &format!("http://127.0.0.1:{}", sim.1),
            "--model",
            "m",
        ])
        .args(["--num-prompts", "1", "--require-power", "--result-dir"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--require-power: no power sampler found"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 13's fresh-user trial: a result's `--save-requests` file (anywhere) is stored by
/// `ingest` of the result, and a run cut short by Ctrl-C is stored as invalid (listed, never
/// starred on a frontier).
#[cfg(unix)]
#[test]
fn ingest_stores_the_named_records_and_marks_an_interrupted_run_invalid() {
    let sim = start_sim(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let (res, recs) = (tmp.path().join("res"), tmp.path().join("elsewhere"));
    std::fs::create_dir_all(&recs).unwrap();
    let dir = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let req_file = recs.join("req.jsonl");
    bench(
        &sim,
        &[
            "--save-result",
            "--result-dir",
            &dir(&res),
            "--result-filename",
            "whole.json",
            "--save-requests",
            req_file.to_str().unwrap(),
        ],
    );
    let db = tmp.path().join("b.db");
    let ingest = |path: &std::path::Path| {
        let o = Command::new(BIN)
            .args([
                "ingest",
                path.to_str().unwrap(),
                "--db",
                db.to_str().unwrap(),
            ])
            .args(["--set", "hw=h100", "--set", "framework=sim"])
            .output()
            .unwrap();
        let t =
            String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{t}");
        t
    };
    let t = ingest(&res.join("whole.json"));
    assert!(
        t.contains("ingested 1 point(s) from 1 source(s) (result directories or files) in 1 batch(es), 16 request record(s) (warmups included)"),
        "{t}"
    );

    // A long run at conc 1, interrupted after a second.
    let url = format!("http://127.0.0.1:{}", sim.1);
    let cut = tmp.path().join("cut");
    let mut cmd = Command::new(BIN);
    cmd.args(["bench", "--base-url", &url, "--model", "Llama-3.1-8B"])
        .args(["--random-input-len", "256", "--random-output-len", "64"])
        .args([
            "--max-concurrency",
            "1",
            "--num-prompts",
            "500",
            "--num-warmups",
            "1",
            "--seed",
            "9",
        ])
        .args([
            "--progress",
            "plain",
            "--save-result",
            "--result-dir",
            &dir(&cut),
        ]);
    // Interrupted 2 s after the warmup's last progress line (prompts are ready by then, however
    // slow the debug build on a loaded machine was to prepare them; a fixed wait from the start
    // could land before any request): bench then waits up to 1 s for the warmup connection's
    // quiet (`TRUST_QUIET`) before the profile, whose requests of 64 tokens take well under a
    // second on the sim.
    let (code, _, err) =
        common::interrupt_after_line(cmd, "[warmup] ", Duration::from_millis(2000));
    assert_eq!(code, Some(130), "{err}");
    let t = ingest(&cut);
    assert!(t.starts_with("ingested 1 point(s) from 1 source(s)"), "{t}");
    let o = Command::new(BIN)
        .args(["report", "--db", db.to_str().unwrap(), "--format", "csv"])
        .args(["--columns", "isl,osl,conc,valid,frontier,error"])
        .output()
        .unwrap();
    let csv = String::from_utf8_lossy(&o.stdout).into_owned();
    // The whole run (ISL 256 / OSL 8, conc 4) is valid and on its frontier; the cut one is not,
    // and says why (trial 16: its `error` was empty).
    assert_eq!(
        csv,
        // OSL in numeric order (trial 21: 64 came before 8 as text).
        "isl,osl,conc,valid,frontier,error\n256,8,4,true,*,\n256,64,1,false,invalid,invalid: cut short: interrupted\n",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Trial 14: a `bench --db` interrupted before any request finished was stored as a failed
/// point of ISL/OSL 0/0 (the store takes them from finished requests), apart from its
/// workload. It keeps the requested random lengths.
#[cfg(unix)]
#[test]
fn an_interrupted_bench_db_point_keeps_its_workload() {
    let sim = start_sim(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("i.db");
    let url = format!("http://127.0.0.1:{}", sim.1);
    let mut cmd = Command::new(BIN);
    cmd.args(["bench", "--base-url", &url, "--model", "Llama-3.1-8B"])
        .args(["--random-input-len", "256", "--random-output-len", "2048"])
        .args(["--max-concurrency", "1", "--num-prompts", "2"])
        .args(["--num-warmups", "1", "--progress", "plain"])
        .args(["--result-dir", tmp.path().join("r").to_str().unwrap()])
        .args(["--db", db.to_str().unwrap()])
        .args(["--set", "hw=h100", "--set", "framework=sim"]);
    // The warmup's 2,048 tokens take seconds on the sim: interrupted inside it.
    let (code, _, err) = common::interrupt_after_line(cmd, "warmup:", Duration::from_millis(500));
    assert_eq!(code, Some(130), "{err}");
    let o = Command::new(BIN)
        .args(["report", "--db", db.to_str().unwrap(), "--format", "csv"])
        .args(["--include-failed", "--columns", "isl,osl,conc,frontier"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "isl,osl,conc,frontier\n256,2048,1,failed\n",
        "{err}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // One status from the summary to the views (issue 39, fresh tester's finding 1): the
    // summary names why it failed and no invalid reason; report's JSON says failed with that
    // error and `invalid_reason: null` (the store said `cut short: interrupted` beside it).
    let result = std::fs::read_dir(tmp.path().join("r"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.extension().is_some_and(|x| x == "json") && !p.to_string_lossy().contains("agg")
        })
        .unwrap();
    let v: serde_json::Value = read_json(&result);
    assert_eq!(
        (
            &v["inferbench"]["stop_reason"],
            &v["inferbench"]["failed_reason"],
            v["inferbench"].get("invalid_reason")
        ),
        (
            &serde_json::json!("interrupted"),
            &serde_json::json!("interrupted before any request finished"),
            None
        ),
        "{v}"
    );
    let o = Command::new(BIN)
        .args(["report", "--db", db.to_str().unwrap(), "--format", "json"])
        .args(["--include-failed", "--columns", "conc,error,invalid_reason"])
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        rows,
        serde_json::json!([{"conc": 1, "error": "interrupted before any request finished",
                            "invalid_reason": null, "valid": false, "status": "failed"}]),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A stand-in `amd-smi`: `list`, the `metric -p -c -t -u --csv -w N` loop (GPU 0 at 100 W,
/// epoch-millisecond timestamps, a preamble line) and `metric -E --csv` energy accumulators
/// that grow 100 J per second of wall time.
const FAKE_AMD_SMI: &str = r#"#!/bin/bash
if [ "$1" = list ]; then echo "GPU: 0"; echo "    BDF: 0000:01:00.0"; exit 0; fi
if [ "$1" = metric ] && [ "$2" = -E ]; then
  echo "gpu,total_energy_consumption"
  awk -v now="$(date +%s.%N)" 'BEGIN { printf "0,%.3f\n", (now - 1700000000) * 100 }'
  exit 0
fi
w="${@: -1}"
echo "WARNING: a preamble line amd-smi prints"
echo "gpu,timestamp,socket_power,power_cap"
while true; do echo "0,$(date +%s%3N),100,750"; sleep "$w"; done
"#;

/// issue 10: amd-smi's energy accumulators are snapshotted at the sampler's start and stop,
/// cross-checked against the stream (`accumulator_check` in the validation sidecar) and their
/// delta reported beside the trapezoid (`inferbench.power.energy_counter_j`).
#[test]
fn amd_smi_energy_counters_are_snapshotted_and_cross_checked() {
    let sim = start_sim(&[]);
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    fake_tool(&bin, "amd-smi", FAKE_AMD_SMI);
    let out = dir.path().join("out");
    let o = Command::new(BIN)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .args([
            "bench",
            "--base-url",
            &format!("http://127.0.0.1:{}", sim.1),
        ])
        .args(["--model", "Llama-3.1-8B", "--random-input-len", "256"])
        .args(["--random-output-len", "64", "--max-concurrency", "2"])
        .args(["--num-prompts", "8", "--progress", "off", "--save-result"])
        .args(["--result-filename", "r.json", "--power", "amd-smi"])
        .arg("--result-dir")
        .arg(&out)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{text}");
    let start = std::fs::read_to_string(out.join("r.power_energy_start.csv")).unwrap();
    assert!(
        start.starts_with("gpu,total_energy_consumption\n0,"),
        "{start}"
    );
    assert!(out.join("r.power_energy_end.csv").is_file());
    let v: serde_json::Value = read_json(&out.join("r.power_validation.json"));
    let c = &v["accumulator_check"];
    assert_eq!(c["available"], true, "{v}");
    assert_eq!(c["integrated_gpu_ids"], serde_json::json!(["0"]));
    let delta = c["accumulator_delta_j"].as_f64().unwrap();
    // 100 W over the snapshots' span (at least the stream's, plus the tool's start and stop).
    let span = c["stream_span_s"].as_f64().unwrap();
    assert!(
        delta >= 100.0 * span - 1.0 && delta < 100.0 * (span + 10.0),
        "{c}"
    );
    let r: serde_json::Value = read_json(&out.join("r.json"));
    let p = &r["inferbench"]["power"];
    assert_eq!(p["source"], "amd-smi");
    assert_eq!(p["energy_counter_j"].as_f64(), Some(delta));
    assert!(p["energy_counter_within_tolerance"].is_boolean(), "{p}");
    // ingest reads the snapshots as the result's side files (kept, not "ignored").
    let db = dir.path().join("p.db");
    let o = Command::new(BIN)
        .args([
            "ingest",
            out.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{text}");
    assert!(!text.contains("ignored"), "{text}");
    let mut store = inferbench_store::Store::open(db.to_str().unwrap()).unwrap();
    let arts = store.run_artifacts(1).unwrap();
    let names: Vec<&str> = arts.iter().map(|a| a.name.as_str()).collect();
    assert!(
        names.contains(&"power_energy_start.csv") && names.contains(&"power_energy_end.csv"),
        "{names:?}"
    );
}

/// issue 10: the AgentX replay samples GPU power as `bench` does (reference/agentx.md §4.6):
/// `power.csv` and `power_validation.json` in --result-dir, `inferbench.power` in summary.json
/// and InferenceX's power keys in agentic_aggregate.json (the stand-in nvidia-smi: 100 W and
/// 300 W, so 200 W per GPU).
#[test]
fn replay_samples_power_into_its_summary_and_aggregate() {
    // 50× faster than the roofline: the sessions' turns finish inside a 3 s replay.
    let sim = start_sim(&["--time-scale", "50"]);
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    fake_tool(&bin, "nvidia-smi", FAKE_NVIDIA_SMI);
    let out = dir.path().join("out");
    let o = Command::new(BIN)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .args(["replay", "--synthetic", "quickstart"])
        .args(["--base-url", &format!("http://127.0.0.1:{}", sim.1)])
        .args(["--model", "Llama-3.1-8B", "--concurrency", "2"])
        .args(["--benchmark-duration", "3", "--unsafe-override"])
        .args(["--power-interval", "0.2", "--require-power", "--result-dir"])
        .arg(&out)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{text}");
    assert!(std::fs::read_to_string(out.join("power.csv"))
        .unwrap()
        .starts_with("timestamp, index, power.draw [W]"));
    let v: serde_json::Value = read_json(&out.join("power_validation.json"));
    assert_eq!(v["power_valid"], true, "{v}");
    let s: serde_json::Value = read_json(&out.join("summary.json"));
    let p = &s["inferbench"]["power"];
    assert_eq!(
        (
            p["source"].as_str(),
            p["valid"].as_bool(),
            p["gpus"].as_u64()
        ),
        (Some("nvidia-smi"), Some(true), Some(2))
    );
    assert!(
        (p["metrics"]["avg_power_w"].as_f64().unwrap() - 200.0).abs() < 1e-6,
        "{p}"
    );
    let a: serde_json::Value = read_json(&out.join("agentic_aggregate.json"));
    assert_eq!(a["power_valid"], 1, "{a}");
    assert_eq!(a["power_metric_schema_version"], 2);
    assert_eq!(a["avg_power_w"], 200.0);
    // Its --result-dir is a batch of its own when ingested (trial 23: the batch was the
    // parent directory, and `-f batch=<--result-dir>` matched nothing).
    let db = dir.path().join("r.db").display().to_string();
    let o = Command::new(BIN)
        .arg("ingest")
        .arg(&out)
        .args(["--db", &db, "--set", "hw=h100", "--set", "framework=sim"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::output_text(&o));
    let mut store = inferbench_store::Store::open_existing(&db).unwrap();
    let mut f = inferbench_store::Filter {
        include_failed: true,
        include_invalid: true,
        ..Default::default()
    };
    f.add(&format!("batch={}", out.display())).unwrap();
    let rows = store.points(&f, &Default::default()).unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].batch, out.display().to_string());
}

/// A stand-in `nvidia-smi` whose one-shot query hangs (a wedged driver): `-L` and the loop
/// answer, `--format=csv,noheader` never returns.
const HANGING_NVIDIA_SMI: &str = r#"#!/bin/bash
if [ "$1" = -L ]; then echo "GPU 0: Fake (UUID: GPU-0)"; exit 0; fi
for a in "$@"; do [ "$a" = --format=csv,noheader ] && exec sleep 1000; done
echo "timestamp, index, power.draw [W]"
while true; do echo "$(date +'%Y/%m/%d %H:%M:%S.%3N'), 0, 100.00 W"; sleep 0.2; done
"#;

/// issue 10 trial: a hung vendor tool never hangs the benchmark (its one-shot call is killed
/// after 10 s), and power flags that would measure nothing are refused up front.
#[test]
fn a_hung_nvidia_smi_does_not_hang_bench_and_empty_power_flags_are_refused() {
    let sim = start_sim(&[]);
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    fake_tool(&bin, "nvidia-smi", HANGING_NVIDIA_SMI);
    let out = dir.path().join("out");
    let base = format!("http://127.0.0.1:{}", sim.1);
    let t0 = Instant::now();
    let o = Command::new(BIN)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .args(["bench", "--base-url", &base, "--model", "Llama-3.1-8B"])
        .args(["--num-prompts", "4", "--progress", "off", "--save-result"])
        .args(["--power-interval", "0.2", "--result-dir"])
        .arg(&out)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{text}");
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    let o = Command::new(BIN)
        .args([
            "bench",
            "--base-url",
            &base,
            "--model",
            "m",
            "--num-prompts",
            "1",
        ])
        .args(["--power", "off", "--require-power", "--result-dir", "x"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--require-power with --power off: nothing would be measured"),
        "{text}"
    );
    let o = Command::new(BIN)
        .args(["replay", "--synthetic", "quickstart", "--base-url", &base])
        .args([
            "--model",
            "m",
            "--benchmark-duration",
            "1",
            "--unsafe-override",
        ])
        .args(["--power", "nvidia-smi"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--power nvidia-smi/--require-power need --result-dir"),
        "{text}"
    );
}

/// Issue 39 §5, the README's scenario: a one-point `bench --db` against a standalone `sim`
/// (max-num-seqs 256, real time) lands beside two quickstarts (max-num-seqs 16, time scale 8)
/// of the same configuration: the quickstarts share one group, the bench point is a group of
/// its own, the two named apart by the settings that differ, and the latest run per
/// configuration keeps the quickstart's whole curve.
#[test]
fn a_bench_against_a_standalone_sim_is_not_in_the_quickstarts_group() {
    let dir = std::env::temp_dir().join(format!("inferbench-groups-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("t.db");
    let db = db.to_str().unwrap();
    for _ in 0..2 {
        let o = Command::new(BIN)
            .args([
                "quickstart",
                "--fast",
                "--concurrency",
                "4,16",
                "--isl",
                "256",
            ])
            .args(["--osl", "8", "--db", db, "--chart"])
            .arg(dir.join("frontier.svg"))
            .arg("--out")
            .arg(dir.join("qs"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", common::output_text(&o));
    }
    let sim = start_sim(&[]);
    let result_dir = dir.join("bench");
    let (_, text) = bench(
        &sim,
        &[
            "--db",
            db,
            "--set",
            "hw=h100",
            "--set",
            "framework=sim",
            "--set",
            "precision=bf16",
            "--max-concurrency",
            "16",
            "--num-prompts",
            "16",
            "--cache-bust",
            "--result-dir",
            result_dir.to_str().unwrap(),
        ],
    );
    assert!(text.contains("from 1 source(s)"), "{text}");
    let mut store = inferbench_store::Store::open_existing(db).unwrap();
    let mut rows = store
        .points(&Default::default(), &Default::default())
        .unwrap();
    let base = "llama3.1-8b 256/8 h100_sim_bf16";
    let qs = format!("{base} · max_num_seqs=16, time_scale=8");
    let bench_group = format!("{base} · max_num_seqs=256, time_scale=1");
    let got: Vec<(bool, i64, String)> = rows
        .iter()
        .map(|r| (r.batch.starts_with("quickstart-"), r.conc, r.group()))
        .collect();
    assert_eq!(
        got,
        [
            (true, 4, qs.clone()),
            (true, 4, qs.clone()),
            (true, 16, qs.clone()),
            (true, 16, qs.clone()),
            (false, 16, bench_group.clone()),
        ],
        "{text}"
    );
    // Load is no setting: every quickstart point, at 4 and 16, has one fingerprint.
    let fps: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r.server_fingerprint.as_str()).collect();
    assert_eq!(fps.len(), 2, "{fps:?}");
    inferbench_store::query::keep_latest_runs(&mut rows);
    let kept: Vec<(String, i64)> = rows.iter().map(|r| (r.group(), r.conc)).collect();
    assert_eq!(
        kept,
        [(qs.clone(), 4), (qs, 16), (bench_group, 16)],
        "the bench point displaced a quickstart point"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 39, fresh tester (1): a point whose warmups all failed (streams that end without a
/// terminal) had no status in its result (`failed_reason: null`) and the views said `failed`
/// beside `invalid_reason: "cut short: stopped on a failure gate"`. Every way a `bench` ends
/// having measured nothing goes through the one rule, summary → `--db` → `report` JSON: the
/// warmup gate, every profile request failing, and a server never reached.
#[test]
fn every_end_that_measured_nothing_is_failed_from_summary_to_report() {
    let sim = start_sim(&["--fault", "drop-after=3"]);
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_port = dead.local_addr().unwrap().port();
    drop(dead);
    let tmp = tempfile::tempdir().unwrap();
    let ends = [
        (
            sim.1,
            "2",
            "aborted",
            "every warmup request failed (2 of 2; first: ",
        ),
        (
            sim.1,
            "0",
            "completed",
            "nothing was measured: none of the 4 profile requests succeeded (4 failed)",
        ),
        (
            dead_port,
            "0",
            "server_unreachable",
            "server unreachable: nothing measured",
        ),
    ];
    for (i, (port, warmups, stop, cause)) in ends.into_iter().enumerate() {
        let db = tmp.path().join(format!("{i}.db"));
        let dir = tmp.path().join(format!("r{i}"));
        let o = Command::new(BIN)
            .args(["bench", "--base-url", &format!("http://127.0.0.1:{port}")])
            .args(["--model", "Llama-3.1-8B", "--random-input-len", "16"])
            .args(["--random-output-len", "8", "--max-concurrency", "2"])
            .args(["--num-prompts", "4", "--num-warmups", warmups])
            .args([
                "--progress",
                "off",
                "--save-result",
                "--result-filename",
                "r.json",
            ])
            .args(["--result-dir", dir.to_str().unwrap()])
            .args(["--db", db.to_str().unwrap()])
            .args(["--set", "hw=h100", "--set", "framework=sim"])
            .output()
            .unwrap();
        let text = common::output_text(&o);
        assert_ne!(o.status.code(), Some(0), "{stop}: {text}");
        let v = read_json(&dir.join("r.json"));
        let why = v["inferbench"]["failed_reason"]
            .as_str()
            .unwrap_or_default();
        assert!(why.starts_with(cause), "{stop}: {v}");
        assert_eq!(v["inferbench"]["stop_reason"], *stop, "{v}");
        assert_eq!(v["inferbench"].get("invalid_reason"), None, "{stop}: {v}");
        // A server never reached stores nothing by `--db`; its result is ingested.
        if !db.exists() {
            let o = Command::new(BIN)
                .args(["ingest", "--db", db.to_str().unwrap()])
                .args(["--set", "hw=h100", "--set", "framework=sim"])
                .arg(dir.join("r.json"))
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", common::output_text(&o));
        }
        let o = Command::new(BIN)
            .args(["report", "--db", db.to_str().unwrap(), "--format", "json"])
            .args(["--include-failed", "--columns", "conc,error,invalid_reason"])
            .output()
            .unwrap();
        let rows: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{stop}: {e}: {}", common::output_text(&o)));
        assert_eq!(
            rows,
            serde_json::json!([{"conc": 2, "error": why, "invalid_reason": null,
                                "valid": false, "status": "failed"}]),
            "{stop}: {text}"
        );
    }
}
