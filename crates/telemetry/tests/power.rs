//! Power integration and validity on recorded-style CSV fixtures (nvidia-smi and amd-smi
//! column layouts): one fixture per InferenceX validity rule, exact energies from hand-worked
//! numbers, and — where ../shared and python3 are present — the same reasons and metrics as
//! InferenceX's own `utils/aggregate_power.py` on every fixture.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use inferbench_telemetry::power::{
    counter_delta, integrate, metrics, parse_csv, round_metric, validation, BenchmarkWindow,
    DEFAULT_MAX_SAMPLE_GAP_S,
};

/// Offsets below are seconds after this Unix time (realistic epochs, so millisecond
/// timestamps exceed 1e12 as InferenceX's parser expects).
const T0: i64 = 1_764_000_000;
const START: f64 = (T0 + 1000) as f64;
const END: f64 = (T0 + 1010) as f64;

fn bench() -> BenchmarkWindow {
    BenchmarkWindow {
        start_time_unix: START,
        end_time_unix: END,
        reported_duration_s: 10.0,
        completed: 10,
        total_input_tokens: 1000,
        total_output_tokens: 500,
    }
}

/// nvidia-smi layout (`--query-gpu=timestamp,index,power.draw,power.limit --format=csv`, epoch
/// timestamps as our sampler writes them), one row per GPU per second from `t0` to `t1`.
fn nvidia(gpus: &[(&str, f64)], t0: i64, t1: i64) -> String {
    let mut s = String::from("timestamp, index, power.draw [W], power.limit [W]\n");
    for t in t0..=t1 {
        for (g, w) in gpus {
            s.push_str(&format!("{}, {g}, {w:.2} W, 700.00 W\n", T0 + t));
        }
    }
    s
}

/// Every fixture: (name, csv, expected GPUs, expected reasons).
fn fixtures() -> Vec<(&'static str, String, Option<u32>, Vec<&'static str>)> {
    let two = [("0", 100.0), ("1", 200.0)];
    let mut ramp = String::from("timestamp,index,power.draw [W]\n");
    for i in 0..=24 {
        let t = T0 as f64 + 998.75 + 0.5 * f64::from(i);
        ramp.push_str(&format!("{t},0,{:.3} W\n", 100.0 + 7.5 * f64::from(i)));
        ramp.push_str(&format!("{t},1,{:.3} W\n", 300.0 - 3.25 * f64::from(i)));
    }
    // amd-smi layout: gpu first, epoch milliseconds, bare numbers, a power cap column.
    let mut amd = String::from("gpu,timestamp,socket_power,power_cap\n");
    for t in 999..=1011 {
        amd.push_str(&format!("0,{}000,{},750\n", T0 + t, 250 + (t - 999) * 10));
    }
    let mut dup = String::from("timestamp,index,power.draw [W]\n");
    for t in 999..=1011 {
        let t = T0 + t;
        dup.push_str(&format!("{t},0,100 W\n{t},0,300 W\n"));
    }
    let mut na_outside = nvidia(&two, 999, 1011);
    na_outside.push_str(&format!("{}, 0, [N/A], 700.00 W\n", T0 + 1020));
    let mut na_inside = nvidia(&two, 999, 1011);
    na_inside.push_str(&format!("{}.5, 0, [N/A], 700.00 W\n", T0 + 1005));
    let mut bad_ts = nvidia(&two, 999, 1011);
    bad_ts.push_str("not-a-time, 0, 100 W, 700 W\n");
    let mut no_id = nvidia(&two, 999, 1011);
    no_id.push_str(&format!("{}.5, , 100 W, 700 W\n", T0 + 1004));
    let mut gap = String::from("timestamp,index,power.draw [W]\n");
    for t in [999, 1000, 1001, 1005, 1006, 1007, 1008, 1009, 1010, 1011] {
        gap.push_str(&format!("{},0,100\n", T0 + t));
    }
    let mut negative = nvidia(&two, 999, 1011);
    negative.push_str(&format!("{}.5, 1, -5 W, 700 W\n", T0 + 1003));
    vec![
        ("valid_constant", nvidia(&two, 999, 1011), Some(2), vec![]),
        ("valid_ramp_half_second", ramp, Some(2), vec![]),
        ("valid_amd_smi_ms", amd, Some(1), vec![]),
        ("duplicate_timestamps_averaged", dup, Some(1), vec![]),
        (
            "invalid_power_outside_window_ignored",
            na_outside,
            Some(2),
            vec![],
        ),
        (
            "empty_file",
            String::new(),
            Some(2),
            vec!["telemetry_file_empty"],
        ),
        (
            "columns_missing",
            "when,watts,who\n1764001000,1,0\n".into(),
            Some(1),
            vec![
                "timestamp_column_missing",
                "power_column_missing",
                "gpu_identity_column_missing",
            ],
        ),
        (
            "timestamp_column_missing",
            "index,power.draw\n0,100\n".into(),
            Some(1),
            vec!["timestamp_column_missing"],
        ),
        (
            "invalid_timestamp_sample",
            bad_ts,
            Some(2),
            vec!["invalid_timestamp_sample"],
        ),
        (
            "invalid_power_sample",
            na_inside,
            Some(2),
            vec!["invalid_power_sample"],
        ),
        (
            "negative_power_sample",
            negative,
            Some(2),
            vec!["invalid_power_sample"],
        ),
        (
            "gpu_identity_missing",
            no_id,
            Some(2),
            vec!["gpu_identity_missing"],
        ),
        (
            "no_usable_power_samples",
            nvidia(&two, 1100, 1110),
            Some(2),
            vec!["no_usable_power_samples"],
        ),
        (
            "expected_gpu_count_mismatch",
            nvidia(&two, 999, 1011),
            Some(4),
            vec!["expected_gpu_count_mismatch"],
        ),
        (
            "insufficient_power_samples",
            format!("timestamp,index,power.draw\n{},0,100\n", T0 + 1005),
            Some(1),
            vec!["insufficient_power_samples"],
        ),
        (
            "benchmark_window_not_bracketed",
            nvidia(&two, 1001, 1011),
            Some(2),
            vec!["benchmark_window_not_bracketed"],
        ),
        (
            "sampling_gap_exceeded",
            gap,
            Some(1),
            vec!["sampling_gap_exceeded"],
        ),
    ]
}

#[test]
fn every_validity_rule_has_its_fixture() {
    for (name, text, gpus, want) in fixtures() {
        let p = integrate(
            &parse_csv(&text),
            START,
            END,
            gpus,
            DEFAULT_MAX_SAMPLE_GAP_S,
        );
        assert_eq!(p.reasons, want, "{name}");
    }
}

#[test]
fn energies_and_metrics_by_hand() {
    let two = nvidia(&[("0", 100.0), ("1", 200.0)], 999, 1011);
    let p = integrate(
        &parse_csv(&two),
        START,
        END,
        Some(2),
        DEFAULT_MAX_SAMPLE_GAP_S,
    );
    assert_eq!(
        p.per_gpu_energy_j,
        BTreeMap::from([("0".into(), 1000.0), ("1".into(), 2000.0)])
    );
    let m = metrics(&p, &bench()).unwrap();
    assert_eq!(m["total_gpu_energy_j"], 3000.0);
    assert_eq!(m["avg_total_gpu_power_w"], 300.0);
    assert_eq!(m["avg_power_w"], 150.0);
    assert_eq!(m["joules_per_total_token"], 2.0);
    assert_eq!(m["joules_per_input_token"], 3.0);
    assert_eq!(m["joules_per_output_token"], 6.0);
    assert_eq!(m["joules_per_successful_query"], 300.0);
    // amd-smi ramp 250 + 10·(t − 999) W over [1000, 1010]: mean 310 W × 10 s.
    let (_, amd, _, _) = fixtures().swap_remove(2);
    let p = integrate(
        &parse_csv(&amd),
        START,
        END,
        Some(1),
        DEFAULT_MAX_SAMPLE_GAP_S,
    );
    assert_eq!(p.total_gpu_energy_j, Some(3100.0));
    // Two readings per timestamp average to 200 W.
    let (_, dup, _, _) = fixtures().swap_remove(3);
    let p = integrate(
        &parse_csv(&dup),
        START,
        END,
        Some(1),
        DEFAULT_MAX_SAMPLE_GAP_S,
    );
    assert_eq!(p.total_gpu_energy_j, Some(2000.0));
    assert_eq!(p.per_gpu_sample_counts["0"], 13);
    // Benchmark-side rules and the sidecar.
    let b = BenchmarkWindow {
        reported_duration_s: 10.6,
        completed: 0,
        ..bench()
    };
    assert_eq!(
        b.reasons(),
        vec![
            "benchmark_duration_mismatch",
            "invalid_successful_query_count"
        ]
    );
    let v = serde_json::to_value(validation(&p, &b, "power.csv", "summary.json")).unwrap();
    assert_eq!(v["power_valid"], false);
    assert_eq!(v["metrics"], serde_json::json!({}));
    assert_eq!(v["observed_gpu_ids"], serde_json::json!(["0"]));
    assert_eq!(
        v["integration_method"],
        "per_device_trapezoidal_with_linear_boundary_interpolation"
    );
    assert_eq!(round_metric("avg_power_w", 1.23456), 1.235);
    assert_eq!(round_metric("joules_per_total_token", 0.1234567), 0.123457);
    assert_eq!(
        BenchmarkWindow {
            end_time_unix: START - 10.0,
            ..bench()
        }
        .reasons(),
        vec!["invalid_benchmark_window"]
    );
}

#[test]
fn energy_counter_delta_handles_one_wrap() {
    assert_eq!(counter_delta(100.0, 350.0, None), Some(250.0));
    // A 32-bit mJ counter wrapping at 2^32 mJ = 4,294,967.296 J.
    let d = counter_delta(4_294_900.0, 100.0, Some(4_294_967.296)).unwrap();
    assert!((d - 167.296).abs() < 1e-6, "{d}");
    assert_eq!(counter_delta(500.0, 100.0, None), None);
}

/// InferenceX's aggregate_power.py on the same fixtures: same reasons, same metrics.
#[test]
fn equals_inferencex_aggregate_power_on_every_fixture() {
    let Some(utils) = inferbench_testutil::shared_dir(
        env!("CARGO_MANIFEST_DIR"),
        "data/inferencex/utils/aggregate_power.py",
    )
    .and_then(|p| p.parent().map(PathBuf::from)) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();
    for (name, text, gpus, _) in fixtures() {
        let p = dir.path().join(format!("{name}.csv"));
        std::fs::write(&p, &text).unwrap();
        cases.push(
            serde_json::json!({"name": name, "csv": p, "gpus": gpus, "start": START, "end": END}),
        );
    }
    let driver = r#"
import json, sys
sys.path.insert(0, sys.argv[1])
import aggregate_power as ap
out = {}
for c in json.load(sys.stdin):
    p = ap.integrate_power(ap.Path(c["csv"]), start_unix=c["start"], end_unix=c["end"], expected_num_gpus=c["gpus"])
    m = {}
    if p.power_valid:
        b = ap.BenchmarkData(c["start"], c["end"], 10.0, 10, 1000, 500)
        m = ap._derived_metrics(p, b)
    out[c["name"]] = {"reasons": list(p.invalid_reasons), "metrics": m, "energy": p.per_gpu_energy_j}
print(json.dumps(out))
"#;
    let mut child = match Command::new("python3")
        .arg("-c")
        .arg(driver)
        .arg(&utils)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            inferbench_testutil::available(false, "python3", &format!("cannot start it: {e}"));
            return;
        }
    };
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&cases).unwrap().as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    let oracle: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for (name, text, gpus, _) in fixtures() {
        let want = &oracle[name];
        let p = integrate(
            &parse_csv(&text),
            START,
            END,
            gpus,
            DEFAULT_MAX_SAMPLE_GAP_S,
        );
        assert_eq!(serde_json::json!(p.reasons), want["reasons"], "{name}");
        for (g, e) in want["energy"].as_object().unwrap() {
            let ours = p.per_gpu_energy_j[g];
            assert!(
                (ours - e.as_f64().unwrap()).abs() <= 1e-9 * ours.abs().max(1.0),
                "{name} gpu {g}: {ours} vs {e}"
            );
        }
        let ours = metrics(&p, &bench()).unwrap_or_default();
        let theirs = want["metrics"].as_object().unwrap();
        assert_eq!(ours.len(), theirs.len(), "{name}");
        for (k, v) in theirs {
            let (a, b) = (ours[k.as_str()], v.as_f64().unwrap());
            assert!(
                (a - b).abs() <= 1e-12 * b.abs().max(1.0),
                "{name} {k}: {a} vs {b}"
            );
            assert_eq!(round_metric(k, a), round_metric(k, b), "{name} {k}");
        }
    }
}

/// The energy-counter cross-check on amd-smi-shaped snapshots (`gpu,total_energy_consumption`,
/// joules) beside a two-GPU stream at constant 100 W and 300 W over 12 s: exact deltas and
/// relative error, a counter that went backwards, a missing or unreadable snapshot — and the
/// same dictionaries as InferenceX's `cross_check_accumulator` where ../shared is present.
#[test]
fn accumulator_check_as_inferencex_cross_checks_it() {
    use inferbench_telemetry::energy::{accumulator_check, snapshot_paths, write_snapshot};
    let dir = tempfile::tempdir().unwrap();
    let mut stream = String::from("gpu,timestamp,socket_power,power_cap\n");
    for t in 999..=1011 {
        stream.push_str(&format!(
            "0,{}000,100,750\n1,{}000,300,750\n",
            T0 + t,
            T0 + t
        ));
    }
    let case = |name: &str, start: Option<&[(&str, f64)]>, end: Option<&[(&str, f64)]>| {
        let p = dir.path().join(format!("{name}.csv"));
        std::fs::write(&p, &stream).unwrap();
        let (sp, ep) = snapshot_paths(&p);
        let own = |v: &[(&str, f64)]| {
            v.iter()
                .map(|(g, j)| (g.to_string(), *j))
                .collect::<Vec<_>>()
        };
        if let Some(s) = start {
            write_snapshot(&sp, &own(s)).unwrap();
        }
        if let Some(e) = end {
            write_snapshot(&ep, &own(e)).unwrap();
        }
        p
    };
    // 12 s at 100 W = 1,200 J and at 300 W = 3,600 J; counters say 1,250 and 3,650.
    let ok = case(
        "ok",
        Some(&[("0", 1000.0), ("1", 5000.0)]),
        Some(&[("0", 2250.0), ("1", 8650.0)]),
    );
    let c = accumulator_check(&ok).unwrap();
    assert!(c.available);
    assert_eq!(c.accumulator_delta_j, Some(4900.0));
    assert_eq!(c.integrated_stream_j, Some(4800.0));
    assert!((c.relative_error.unwrap().unwrap() - 100.0 / 4900.0).abs() < 1e-15);
    assert_eq!(
        (c.within_tolerance, c.stream_span_s),
        (Some(true), Some(12.0))
    );
    let reset = case(
        "reset",
        Some(&[("0", 1000.0), ("1", 5000.0), ("2", 1.0)]),
        Some(&[("0", 2200.0), ("1", 100.0)]),
    );
    let c = accumulator_check(&reset).unwrap();
    assert_eq!(c.negative_delta_gpus, Some(vec!["1".to_string()]));
    assert_eq!(c.unmatched_gpus, Some(vec!["2".to_string()]));
    assert_eq!(c.within_tolerance, Some(false));
    let no_end = case("no_end", Some(&[("0", 1.0)]), None);
    assert_eq!(
        accumulator_check(&no_end).unwrap().reason.as_deref(),
        Some("missing_end_snapshot")
    );
    let none = case("none", None, None);
    assert_eq!(accumulator_check(&none), None);
    let bad = case("bad", Some(&[("0", 1.0)]), Some(&[("0", 2.0)]));
    std::fs::write(snapshot_paths(&bad).0, "gpu,energy\n0,1\n").unwrap();
    assert_eq!(
        accumulator_check(&bad).unwrap().reason.as_deref(),
        Some("unparseable_start_snapshot")
    );

    let Some(utils) = inferbench_testutil::shared_dir(
        env!("CARGO_MANIFEST_DIR"),
        "data/inferencex/utils/aggregate_power.py",
    )
    .and_then(|p| p.parent().map(PathBuf::from)) else {
        return;
    };
    for p in [&ok, &reset, &no_end, &bad] {
        let o = Command::new("python3")
            .args([
                "-c",
                "import json, sys; sys.path.insert(0, sys.argv[1]); import aggregate_power as ap; \
                 print(json.dumps(ap.cross_check_accumulator(ap.Path(sys.argv[2]))))",
            ])
            .arg(&utils)
            .arg(p)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let theirs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let ours = serde_json::to_value(accumulator_check(p).unwrap()).unwrap();
        assert_eq!(ours, theirs, "{}", p.display());
    }
}

/// `--power nvml` on a machine without NVIDIA's library is a clear error, before any file is
/// written.
#[test]
fn nvml_missing_is_an_error_only_when_asked_for() {
    use inferbench_telemetry::sampler::{PowerMode, PowerSampler};
    if inferbench_telemetry::nvml::open().is_ok() {
        eprintln!("skipping: this machine has NVML");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("power.csv");
    let e = PowerSampler::start(PowerMode::Nvml, std::time::Duration::from_millis(100), &p)
        .err()
        .unwrap();
    assert!(e.starts_with("--power nvml: NVML: "), "{e}");
    assert!(!p.exists());
}
