//! `inferbench quickstart --fast` end to end: in-process simulated server, a 4-point concurrency
//! sweep through the real load generator, artifacts per point, store ingest, table and chart.

use std::process::Command;

/// One row of the printed frontier table.
#[derive(Debug)]
struct Row {
    conc: u32,
    tput_per_gpu: f64,
    interactivity: f64,
    ttft_p99_ms: f64,
}

fn parse_table(stdout: &str) -> Vec<Row> {
    stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 4 {
                return None;
            }
            Some(Row {
                conc: f[0].parse().ok()?,
                tput_per_gpu: f[1].parse().ok()?,
                interactivity: f[2].parse().ok()?,
                ttft_p99_ms: f[3].parse().ok()?,
            })
        })
        .collect()
}

#[test]
fn quickstart_fast_draws_a_sensible_curve_and_stores_it() {
    let tmp =
        std::env::temp_dir().join(format!("inferbench-quickstart-test-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let out = tmp.join("results");
    let db = tmp.join("qs.db");
    let chart = tmp.join("frontier.svg");
    let o = Command::new(env!("CARGO_BIN_EXE_inferbench"))
        .args(["quickstart", "--fast", "--out"])
        .arg(&out)
        .arg("--db")
        .arg(&db)
        .arg("--chart")
        .arg(&chart)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        o.status
    );
    let rows = parse_table(&stdout);
    assert_eq!(
        rows.iter().map(|r| r.conc).collect::<Vec<_>>(),
        vec![1, 4, 16, 64],
        "{stdout}"
    );
    // Throughput rises with concurrency up to max-num-seqs (16), then holds.
    assert!(rows[0].tput_per_gpu < rows[1].tput_per_gpu, "{stdout}");
    assert!(rows[1].tput_per_gpu < rows[2].tput_per_gpu, "{stdout}");
    assert!(
        rows[3].tput_per_gpu > 0.9 * rows[2].tput_per_gpu,
        "{stdout}"
    );
    // Interactivity falls; TTFT jumps once concurrency passes max-num-seqs.
    assert!(rows[3].interactivity < rows[0].interactivity, "{stdout}");
    assert!(rows[3].ttft_p99_ms > 2.0 * rows[2].ttft_p99_ms, "{stdout}");
    // Single-stream decode on the simulated H100 (Llama-3.1-8B BF16): roofline step
    // 16.06 GB / (3.35 TB/s x 0.8) + 1 ms ≈ 7.0 ms, i.e. ≈ 140 tok/s/user.
    assert!((100.0..170.0).contains(&rows[0].interactivity), "{stdout}");

    // Artifacts per point (DESIGN.md §3).
    let mut dirs: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .collect();
    dirs.sort_by_key(|e| e.file_name());
    assert_eq!(dirs.len(), 4);
    for d in &dirs {
        let p = d.path();
        let name = d.file_name().to_string_lossy().into_owned();
        for f in [
            "summary.json",
            "job.json",
            "requests.jsonl.zst",
            "server.log",
            "server_metrics.jsonl",
        ] {
            assert!(p.join(f).is_file(), "{name}: {f} missing");
        }
        assert!(
            p.join(format!("agg_{name}.json")).is_file(),
            "{name}: aggregate missing"
        );
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(p.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(s["completed"], s["num_prompts"]);
        // Modelled, not wall, time: each request takes ≥ 64 decode steps of ≥ 7 ms.
        assert!(s["mean_e2el_ms"].as_f64().unwrap() > 64.0 * 7.0, "{name}");
    }
    assert!(std::fs::read_to_string(&chart).unwrap().starts_with("<svg"));
    assert!(stderr.contains("ingested 4 points"), "{stderr}");
    std::fs::remove_dir_all(&tmp).ok();
}
