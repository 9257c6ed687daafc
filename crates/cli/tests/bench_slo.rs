//! `inferbench bench --slo … --search-concurrency LO..HI` against the real `inferbench sim`
//! (real time): the largest concurrency meeting the SLO, the next probe failing it, every probe
//! saved, `inferbench.capacity` written (issue 43). Kept short: 64 prompts per probe, OSL 64,
//! a 8..64 range around the sim's crossing of 60 tok/s/user (≈ 35 at ISL 1024).

mod common;

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

use common::start_sim;

/// `bench` with the search flags `extra`, against `port`.
fn search(port: u16, extra: &[&str]) -> (Output, String) {
    let url = format!("http://127.0.0.1:{port}");
    let o = Command::new(BIN)
        .args([
            "bench",
            "--base-url",
            &url,
            "--model",
            "Llama-3.1-8B",
            "--random-input-len",
            "1024",
            "--random-output-len",
            "64",
            "--num-prompts",
            "64",
            "--num-warmups",
            "0",
            "--progress",
            "off",
        ])
        .args(extra)
        .output()
        .unwrap();
    let text = common::output_text(&o);
    (o, text)
}

fn read_json(p: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn search_concurrency_finds_the_largest_meeting_point_and_a_failing_next_probe() {
    let sim = start_sim(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (o, text) = search(
        sim.1,
        &[
            "--slo",
            "median_intvty>=60",
            "--search-concurrency",
            "8..64",
            "--result-dir",
            dir.path().to_str().unwrap(),
            "--result-filename",
            "cap.json",
        ],
    );
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("SLO capacity") && text.contains("Max concurrency:"),
        "{text}"
    );
    let doc = read_json(&dir.path().join("cap.json"));
    let c = &doc["inferbench"]["capacity"];
    assert_eq!(c["end"], "found", "{c:#}");
    assert_eq!(c["meets_slo"], true);
    assert_eq!(c["slos"], serde_json::json!(["median_intvty>=60"]));
    let best = c["max_concurrency"].as_u64().unwrap();
    let next = c["next"]["concurrency"].as_u64().unwrap();
    assert_eq!(c["next"]["next_fails_slo"], true);
    assert!(
        c["values"]["median_intvty"].as_f64().unwrap() >= 60.0,
        "{c:#}"
    );
    assert!(
        c["next"]["values"]["median_intvty"].as_f64().unwrap() < 60.0,
        "{c:#}"
    );
    assert!((8..next).contains(&best) && next <= 64, "{best} {next}");
    assert!(
        next as f64 / best as f64 <= 1.1 || next == best + 1,
        "{best} {next}"
    );
    assert_eq!(c["users_per_gpu"].as_f64(), Some(best as f64));
    assert!(c["tput_per_gpu"].as_f64().unwrap() > 0.0);
    let probes = c["probes"].as_u64().unwrap();
    assert!(probes <= 8, "{probes}");
    let points = c["points"].as_array().unwrap();
    assert_eq!(points.len() as u64, probes);
    // Each probe is a point saved like any other, named after the capacity file, and valid
    // (every probe's prompts are cache-busted: no prefix-cache hits between probes).
    for p in points {
        let conc = p["concurrency"].as_u64().unwrap();
        assert!((8..=64).contains(&conc));
        let f = dir.path().join(format!("cap-conc{conc}.json"));
        assert!(f.exists(), "{}", f.display());
        assert_eq!(read_json(&f)["max_concurrency"].as_u64(), Some(conc));
        assert_eq!(p["invalid"], serde_json::Value::Null, "{p:#}");
    }
}

#[test]
fn search_says_when_no_load_meets_and_refuses_bad_expressions() {
    let sim = start_sim(&[]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    // No concurrency meets: the lower end is probed, exit 1, nothing extrapolated.
    let (o, text) = search(
        sim.1,
        &[
            "--slo",
            "p99_ttft<=1ms",
            "--search-concurrency",
            "1..4",
            "--result-dir",
            d,
            "--result-filename",
            "none.json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(
        text.contains("concurrency 1 already fails the SLOs"),
        "{text}"
    );
    let c = &read_json(&dir.path().join("none.json"))["inferbench"]["capacity"];
    assert_eq!(c["end"], "none_meets");
    assert_eq!(c["max_concurrency"], serde_json::Value::Null);
    assert_eq!(c["meets_slo"], false);
    // Bad expressions and missing ranges are usage errors (2), before any probe.
    for (args, says) in [
        (
            vec![
                "--slo",
                "median_intvity>=35",
                "--search-concurrency",
                "1..8",
            ],
            "did you mean median_intvty?",
        ),
        (
            vec![
                "--slo",
                "median_intvty>=35ms",
                "--search-concurrency",
                "1..8",
            ],
            "unit `ms` does not fit",
        ),
        (vec!["--slo", "median_intvty>=35"], "--slo needs"),
        (
            vec!["--slo", "median_intvty>=35", "--search-concurrency", "8..1"],
            "needs 0 < LO <= HI",
        ),
    ] {
        let (o, text) = search(sim.1, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains(says), "{args:?}: {text}");
        assert!(!text.contains("probe at"), "{text}");
    }
}
