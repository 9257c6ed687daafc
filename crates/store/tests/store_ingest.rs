//! Ingest, idempotency, corrupt input, unknown names, snapshots — on SQLite and PostgreSQL.

mod common;

use std::path::Path;

use inferbench_store::{CostOptions, Filter, IngestOptions, Store};

/// The model names of `tests/fixtures` that ingest stores under InferenceX's keys.
const RENAMED_IN_FIXTURES: [(&str, &str, &str); 4] = [
    ("model", "dsr1-fp4", "dsr1"),
    ("model", "gptoss", "gptoss120b"),
    ("model", "meta-llama/Llama-3.3-70B-Instruct", "llama70b"),
    ("model", "openai/gpt-oss-120b", "gptoss120b"),
];

fn ingest_all(store: &mut Store, root: &std::path::Path) -> inferbench_store::IngestReport {
    store.ingest_path(root, &IngestOptions::default()).unwrap()
}

fn check_fixture_ingest(store: &mut Store) {
    let dir = common::fixture_copy();
    let r = ingest_all(store, dir.path());
    // corrupt/bad-summary is skipped with file:line; everything else ingests.
    assert_eq!(r.skipped.len(), 1, "{r:?}");
    assert!(r.skipped[0].path.ends_with("corrupt/bad-summary"));
    assert!(
        r.skipped[0].reason.contains("summary.json:3:"),
        "{}",
        r.skipped[0].reason
    );
    // 2 artifact dirs + agg_bmk.json + its rerun + evals + AIPerf + vLLM file.
    assert_eq!(r.runs_ingested, 7, "{r:?}");
    assert_eq!(r.points, 2 + 9 + 8 + 1 + 1);
    // conc4's 40 records (`common::fixture_copy`, as many as its summary's completed), conc16's
    // 6 (its warmup, 4 completed and 1 failed: its summary counts them).
    assert_eq!(r.requests, 40 + 6);
    // The crashed point is reported with its status; the sweep's own sweep.json is neither a
    // result nor worth a line.
    assert_eq!(r.unfinished.len(), 1);
    assert!(
        r.unfinished[0].contains("state failed, engine_crashed: engine exited"),
        "{:?}",
        r.unfinished
    );
    assert!(r.ignored.is_empty(), "{:?}", r.ignored);
    let unknown: Vec<(String, String)> = r.unknown.iter().cloned().collect();
    assert_eq!(
        unknown,
        vec![
            ("framework".into(), "jaxserve".into()),
            ("framework".into(), "unknown".into()),
            ("hardware".into(), "tpu-v9".into()),
            ("hardware".into(), "unknown".into()),
            ("model".into(), "mystery-1t".into()),
            ("precision".into(), "fp6".into()),
            ("precision".into(), "unknown".into()),
        ]
    );
    assert_eq!(store.unknown_names().unwrap().len(), 7);
    // The dashboard opens on the sequence with the most points (trial 7: it opened on the first).
    assert_eq!(store.sequences().unwrap(), vec!["1024/1024".to_string()]);
    assert_eq!(
        store.busiest_sequence().unwrap().as_deref(),
        Some("1024/1024")
    );
    // One more point at a smaller sequence sorts first but has fewer points.
    let mut small = IngestOptions::default();
    for (k, v) in [("isl", "512"), ("osl", "64"), ("conc", "3")] {
        small.overrides.insert(k.into(), v.into());
    }
    let one = dir.path().join("imports/vllm_gptoss_conc64.json");
    assert_eq!(store.ingest_path(&one, &small).unwrap().points, 1);
    assert_eq!(store.sequences().unwrap(), ["512/64", "1024/1024"]);
    assert_eq!(
        store.busiest_sequence().unwrap().as_deref(),
        Some("1024/1024")
    );
    // Known names stored under another key are said (hardware runner labels are not listed).
    let renamed: Vec<(String, String, String)> = r.renamed.iter().cloned().collect();
    assert_eq!(
        renamed,
        RENAMED_IN_FIXTURES.map(|(a, b, c)| (a.into(), b.into(), c.into()))
    );
    // How the report says them: views' `ingest` tests.
    let counts: std::collections::BTreeMap<String, i64> =
        store.table_counts().unwrap().into_iter().collect();
    assert_eq!(counts["evals"], 2);

    let mut f = Filter::default();
    f.add("hardware=h200").unwrap();
    let rows = store.points(&f, &CostOptions::default()).unwrap();
    assert_eq!(rows.len(), 2);
    let (c4, c16) = (&rows[0], &rows[1]);
    assert_eq!((c4.conc, c16.conc), (4, 16));
    assert_eq!(c4.model, "dsr1");
    assert_eq!(
        (c4.framework.as_str(), c4.precision.as_str(), c4.tp, c4.gpus),
        ("sglang", "fp8", 8, 8)
    );
    assert_eq!(c4.image, "lmsysorg/sglang:v0.5.5");
    assert_eq!(c4.date, "2026-03-01");
    assert_eq!(c4.batch, "sweep-2026-03-01-h200");
    assert_eq!(c4.get("tput_per_gpu"), Some(102.4));
    assert_eq!(c4.get("median_intvty"), Some(105.26315789473684));
    assert_eq!(c4.get("p99_ttft"), Some(0.18));
    assert_eq!(c4.get("p90_e2e_norm_intvty"), Some(95.0)); // from the summary's extras
    assert_eq!(c4.get("median_ttfo"), Some(0.111));
    // Measured power from power.csv: GPU g draws 500+g W over the 100 s window.
    assert_eq!(c4.get("avg_power_w"), Some(503.5));
    assert_eq!(c4.get("joules_per_total_token"), Some(402_800.0 / 81_920.0));
    assert_eq!(
        c4.get("joules_per_output_token"),
        Some(402_800.0 / 40_960.0)
    );
    // $/M total tokens, rental H200 1.60 $/h at 102.4 tok/s/GPU.
    assert_eq!(
        c4.get("usd_per_m_rental"),
        Some(1.60 / (102.4 * 3600.0 / 1e6))
    );
    // E2E-normalized interactivity computed from the records (ratios 0.01..0.04 s/token).
    let p90 = 0.03 + 0.7 * (0.04 - 0.03);
    let got = c16.get("p90_e2e_norm_intvty").unwrap();
    assert!((got - 1.0 / p90).abs() < 1e-12, "{got}"); // 27.027…
    assert_eq!(c16.get("failed"), Some(1.0));
}

/// Ingest options naming the identity the test files lack: `--set hw=… framework=… precision=…`.
fn identity(hw: &str, framework: &str, precision: &str) -> IngestOptions {
    let mut o = IngestOptions::default();
    for (k, v) in [
        ("hw", hw),
        ("framework", framework),
        ("precision", precision),
    ] {
        o.overrides.insert(k.into(), v.into());
    }
    o
}

#[test]
fn fixture_ingest_sqlite() {
    let (mut s, _d, _) = common::sqlite();
    check_fixture_ingest(&mut s);
}

#[test]
fn fixture_ingest_postgres() {
    if let Some((mut s, _)) = common::postgres("fixture_ingest") {
        check_fixture_ingest(&mut s);
    }
}

fn check_idempotent_and_snapshot(store: &mut Store, other: &mut Store) {
    let dir = common::fixture_copy();
    ingest_all(store, dir.path());
    let (d1, rows, _) = store.dump_bytes().unwrap();
    let r = ingest_all(store, dir.path());
    assert_eq!(r.runs_reingested, 7);
    let (d2, _, _) = store.dump_bytes().unwrap();
    assert!(d1 == d2, "re-ingest changed the dump");
    assert!(rows > 20);

    // Dump to a dir, restore into the other database, dump again: identical.
    let out = tempfile::tempdir().unwrap();
    let info = store.dump_to_dir(out.path()).unwrap();
    let sums = std::fs::read_to_string(out.path().join("SHA256SUMS")).unwrap();
    assert!(sums.contains(&info.sha256));
    assert_eq!(other.restore_file(&info.path, true).unwrap(), rows);
    let (d3, _, _) = other.dump_bytes().unwrap();
    assert!(d1 == d3, "restore did not round-trip");
    // Restoring into a non-empty database is refused.
    assert!(other.restore_file(&info.path, true).is_err());
    // A corrupted snapshot fails the checksum.
    let mut bytes = std::fs::read(&info.path).unwrap();
    let n = bytes.len();
    bytes[n / 2] ^= 0x55;
    std::fs::write(&info.path, bytes).unwrap();
    let (mut empty, _d, _) = common::sqlite();
    let e = empty
        .restore_file(&info.path, true)
        .unwrap_err()
        .to_string();
    assert!(e.contains("checksum mismatch"), "{e}");
}

#[test]
fn idempotent_and_snapshot_sqlite() {
    let (mut a, _d1, _) = common::sqlite();
    let (mut b, _d2, _) = common::sqlite();
    check_idempotent_and_snapshot(&mut a, &mut b);
}

#[test]
fn idempotent_and_snapshot_postgres_both_ways() {
    let Some((mut pg, _)) = common::postgres("snap_pg") else {
        return;
    };
    let (mut lite, _d, _) = common::sqlite();
    check_idempotent_and_snapshot(&mut pg, &mut lite);
    let Some((mut pg2, _)) = common::postgres("snap_pg2") else {
        return;
    };
    let (mut lite2, _d2, _) = common::sqlite();
    check_idempotent_and_snapshot(&mut lite2, &mut pg2);
}

#[test]
fn sqlite_and_postgres_give_identical_rows() {
    let Some((mut pg, _)) = common::postgres("identical") else {
        return;
    };
    let (mut lite, _d, _) = common::sqlite();
    let dir = common::fixture_copy();
    ingest_all(&mut pg, dir.path());
    ingest_all(&mut lite, dir.path());
    let f = Filter::default();
    let c = CostOptions {
        usd_per_gpu_hour: Some(2.0),
        kw_per_gpu: None,
    };
    let a = serde_json::to_string(&pg.points(&f, &c).unwrap()).unwrap();
    let b = serde_json::to_string(&lite.points(&f, &c).unwrap()).unwrap();
    assert_eq!(a, b);
    assert_eq!(pg.dump_bytes().unwrap().0, lite.dump_bytes().unwrap().0);
}

#[test]
fn unmigrated_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("x.db").display().to_string()).unwrap();
    let e = s
        .ingest_path(&common::fixtures(), &IngestOptions::default())
        .unwrap_err();
    assert!(e.to_string().contains("holds no inferbench tables"), "{e}");
    assert!(Store::open("/nonexistent-dir/x.db").is_err());
}

fn check_frontier_fast_path(store: &mut Store) {
    let dir = common::fixture_copy();
    ingest_all(store, dir.path());
    let c = CostOptions::default();
    for (x, y) in [
        ("median_intvty", "tput_per_gpu"),
        ("median_e2el", "tput_per_gpu"),
        ("p99_ttft", "input_tput_per_gpu"),
        ("median_intvty", "usd_per_m_rental"),
    ] {
        let mut all = store.points(&Filter::default(), &c).unwrap();
        inferbench_store::query::mark_frontier(&mut all, x, y);
        all.retain(|r| r.frontier);
        let fast = store.frontier(&Filter::default(), &c, x, y).unwrap();
        assert_eq!(fast, all, "{x} vs {y}");
    }
    // Worked example: b200 points (intvty, tok/s/GPU) = (120,400) (80,1200) (40,2000) (25,1800):
    // (25,1800) is dominated by (40,2000).
    let mut f = Filter::default();
    f.add("hw=b200").unwrap();
    let fr = store
        .frontier(&f, &c, "median_intvty", "tput_per_gpu")
        .unwrap();
    assert_eq!(
        fr.iter().map(|r| r.conc).collect::<Vec<_>>(),
        vec![4, 16, 64]
    );
    // An invalid point (here: one whose producer set `invalid_reason`, as bench does when the
    // prefix cache served its prompts) that would dominate its group stays off the fast path's
    // frontier, as off the general path's (trial 12), and competes with `include_invalid`.
    let mut h200 = Filter::default();
    h200.add("hw=h200").unwrap();
    let before = store
        .frontier(&h200, &c, "median_intvty", "tput_per_gpu")
        .unwrap();
    let extra = tempfile::tempdir().unwrap();
    let point = extra.path().join("cached/conc16");
    std::fs::create_dir_all(&point).unwrap();
    let src = dir.path().join("sweep-h200/conc16");
    for f in std::fs::read_dir(&src).unwrap() {
        let f = f.unwrap().path();
        let name = f.file_name().unwrap().to_owned();
        let text = std::fs::read_to_string(&f).unwrap();
        let text = if name == "summary.json" {
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            v["date"] = "20261203-150000".into();
            v["output_throughput"] = (v["output_throughput"].as_f64().unwrap() * 10.0).into();
            v["total_token_throughput"] =
                (v["total_token_throughput"].as_f64().unwrap() * 10.0).into();
            v["inferbench"]["invalid_reason"] = "the server's prefix cache served it".into();
            v.to_string()
        } else if name.to_string_lossy().starts_with("agg_") {
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            for k in ["tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu"] {
                if let Some(x) = v[k].as_f64() {
                    v[k] = (x * 10.0).into();
                }
            }
            v.to_string()
        } else {
            text
        };
        std::fs::write(point.join(name), text).unwrap();
    }
    ingest_all(store, extra.path());
    let after = store
        .frontier(&h200, &c, "median_intvty", "tput_per_gpu")
        .unwrap();
    assert_eq!(
        after.iter().map(|r| (r.conc, r.valid)).collect::<Vec<_>>(),
        before.iter().map(|r| (r.conc, r.valid)).collect::<Vec<_>>()
    );
    let mut all = store.points(&h200, &c).unwrap();
    inferbench_store::query::mark_frontier(&mut all, "median_intvty", "tput_per_gpu");
    all.retain(|r| r.frontier);
    assert_eq!(after, all);
    let mut with = h200.clone();
    with.include_invalid = true;
    let fr = store
        .frontier(&with, &c, "median_intvty", "tput_per_gpu")
        .unwrap();
    assert!(fr.iter().any(|r| !r.valid), "{fr:#?}");
}

#[test]
fn frontier_fast_path_matches_sqlite() {
    let (mut s, _d, _) = common::sqlite();
    check_frontier_fast_path(&mut s);
}

#[test]
fn frontier_fast_path_matches_postgres() {
    if let Some((mut s, _)) = common::postgres("frontier") {
        check_frontier_fast_path(&mut s);
    }
}

fn check_compare_and_history(store: &mut Store) {
    let fx = common::fixtures();
    let o = IngestOptions::default();
    store
        .ingest_path(&fx.join("imports/agg_bmk.json"), &o)
        .unwrap();
    store
        .ingest_path(&fx.join("repeats/agg_bmk_rerun.json"), &o)
        .unwrap();
    let c = CostOptions::default();
    let side = |s: &mut Store, hw: &str| {
        let mut f = Filter::default();
        f.add(&format!("hw={hw}")).unwrap();
        s.points(&f, &c).unwrap()
    };
    let (a, b) = (side(store, "b200"), side(store, "mi355x"));
    // Two batches (files) per side. At 80 tok/s/user: A = [1200, 1080], B = [900, 990].
    let rows =
        inferbench_store::compare::compare(&a, &b, "median_intvty", "tput_per_gpu", &[80.0, 200.0]);
    let r = &rows[0];
    assert_eq!((r.n_a, r.n_b), (2, 2));
    assert_eq!(r.mean_a, Some(1140.0));
    assert!((r.mean_b.unwrap() - 945.0).abs() < 1e-9);
    assert!((r.ratio_a_over_b.unwrap() - 1140.0 / 945.0).abs() < 1e-12);
    // Welch df = 1.98 → t(1) = 12.706; se(log ratio) = 0.070976…
    assert!(
        (r.ci95_low.unwrap() - 0.48956982060779963).abs() < 1e-9,
        "{r:?}"
    );
    assert!(
        (r.ci95_high.unwrap() - 2.9725656002501046).abs() < 1e-9,
        "{r:?}"
    );
    // 200 tok/s/user is beyond every frontier: no extrapolation, no values.
    assert_eq!(
        (rows[1].n_a, rows[1].n_b, rows[1].ratio_a_over_b),
        (0, 0, None)
    );
    // Defaults: the overlap [40, 120] → 40, 80, 120.
    assert_eq!(
        inferbench_store::compare::default_targets(&a, &b, "median_intvty", "tput_per_gpu"),
        vec![40.0, 80.0, 120.0]
    );
    // History at 80: b200 fell 10 % on 2026-02-27 → regression; mi355x rose 10 %.
    let h = inferbench_store::compare::history(
        &[a, b].concat(),
        "median_intvty",
        "tput_per_gpu",
        80.0,
        3,
        0.05,
    );
    let b200 = &h["dsr1 1024/1024 b200_sglang_fp4"];
    assert_eq!(
        b200.iter()
            .map(|p| (p.date.as_str(), p.value))
            .collect::<Vec<_>>(),
        vec![("2026-02-20", 1200.0), ("2026-02-27", 1080.0)]
    );
    assert!(!b200[0].regression && b200[1].regression);
    let mi = &h["dsr1 1024/1024 mi355x_mori-sglang_fp4"];
    assert!(!mi[1].regression);
}

#[test]
fn compare_and_history_sqlite() {
    let (mut s, _d, _) = common::sqlite();
    check_compare_and_history(&mut s);
}

#[test]
fn compare_and_history_postgres() {
    if let Some((mut s, _)) = common::postgres("compare") {
        check_compare_and_history(&mut s);
    }
}

/// Bad input never panics: every fixture file truncated at many lengths and with flipped bytes
/// either ingests or is reported as skipped.
#[test]
fn mangled_inputs_never_panic() {
    let (mut s, _d, _) = common::sqlite();
    let fx = common::fixtures();
    let files = [
        "imports/agg_bmk.json",
        "imports/profile_export_aiperf.json",
        "imports/vllm_gptoss_conc64.json",
        "imports/agg_eval_all.json",
        "sweep-h200/conc16/summary.json",
        "sweep-h200/conc16/requests.jsonl",
    ];
    let tmp = tempfile::tempdir().unwrap();
    let mut n = 0;
    for f in files {
        let bytes = std::fs::read(fx.join(f)).unwrap();
        let step = (bytes.len() / 23).max(1);
        for cut in (0..bytes.len()).step_by(step) {
            for flip in [None, Some(cut / 2)] {
                let mut b = bytes[..cut].to_vec();
                if let Some(i) = flip.filter(|&i| i < b.len()) {
                    b[i] ^= 0x5a;
                }
                // As a file import, and inside an artifact directory.
                let d = tmp.path().join(format!("case{n}"));
                common::copy_tree(&fx.join("sweep-h200/conc16"), &d);
                let name = std::path::Path::new(f).file_name().unwrap();
                std::fs::write(d.join(name), &b).unwrap();
                let single = tmp.path().join(format!("case{n}.json"));
                std::fs::write(&single, &b).unwrap();
                for p in [&d, &single] {
                    let r = s.ingest_path(p, &IngestOptions::default()).unwrap();
                    assert_eq!(
                        r.runs_ingested + r.skipped.len() + r.ignored.len(),
                        1,
                        "{r:?}"
                    );
                }
                n += 1;
            }
        }
    }
    assert!(n > 200);
}

/// Several processes migrating and ingesting one PostgreSQL database at once (Slurm array
/// tasks): all succeed and the result equals a serial ingest.
#[test]
fn concurrent_migrate_and_ingest_postgres() {
    let Some((_, url)) = common::postgres("concurrent") else {
        return;
    };
    // A fresh schema that nobody migrated yet.
    let url = url.replace("schema=", "schema=fresh_");
    let fx = common::fixtures().join("imports");
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let (url, fx) = (url.clone(), fx.clone());
            std::thread::spawn(move || {
                let mut s = Store::open(&url).unwrap();
                s.migrate().unwrap();
                let f = [
                    "agg_bmk.json",
                    "profile_export_aiperf.json",
                    "vllm_gptoss_conc64.json",
                    "agg_eval_all.json",
                ][i];
                let r = s
                    .ingest_path(&fx.join(f), &IngestOptions::default())
                    .unwrap();
                assert!(r.skipped.is_empty(), "{r:?}");
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let mut s = Store::open(&url).unwrap();
    let counts: std::collections::BTreeMap<String, i64> =
        s.table_counts().unwrap().into_iter().collect();
    assert_eq!(
        (counts["runs"], counts["points"], counts["evals"]),
        (4, 9 + 1 + 1, 2)
    );
}

/// Imports without identity take it from overrides; per-GPU throughput follows TP.
#[test]
fn overrides_fill_identity_of_imports() {
    let (mut s, _d, _) = common::sqlite();
    let mut o = IngestOptions::default();
    for (k, v) in [
        ("hw", "h200-nv"),
        ("framework", "vllm"),
        ("precision", "fp8"),
        ("tp", "8"),
    ] {
        o.overrides.insert(k.into(), v.into());
    }
    let r = s
        .ingest_path(
            &common::fixtures().join("imports/vllm_gptoss_conc64.json"),
            &o,
        )
        .unwrap();
    assert!(r.unknown.is_empty(), "{r:?}");
    let rows = s
        .points(&Filter::default(), &CostOptions::default())
        .unwrap();
    let p = &rows[0];
    assert_eq!(
        (
            p.model.as_str(),
            p.hardware.as_str(),
            p.framework.as_str(),
            p.tp,
            p.conc
        ),
        ("gptoss120b", "h200", "vllm", 8, 64)
    );
    assert_eq!((p.isl, p.osl, p.date.as_str()), (1024, 1024, "2026-02-15"));
    // total 13107.2 tok/s over 8 GPUs; output 6553.6 / 8; interactivity 1000 / 8 ms TPOT.
    assert_eq!(p.get("tput_per_gpu"), Some(1638.4));
    assert_eq!(p.get("output_tput_per_gpu"), Some(819.2));
    assert_eq!(p.get("median_intvty"), Some(125.0));
    assert_eq!(p.get("p99_ttft"), Some(0.3));
}

/// Issue 13: several `bench --save-result` runs in one `--result-dir` each keep their side
/// files, named after the result (`<stem>.server_metrics.jsonl`, `<stem>.power.csv`,
/// `<stem>.power_validation.json`); ingest reads them with their result, as in a point
/// directory, and lists none as ignored. A result beside the old fixed names, alone in its
/// directory, gets those.
#[test]
fn bench_result_side_files_ingest_with_their_result() {
    let (mut s, _d, _) = common::sqlite();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (t0, t1) = (1_772_359_000.0, 1_772_359_100.0);
    let result = |date: &str, conc: u32| {
        serde_json::json!({
            "date": date, "backend": "openai", "model_id": "openai/gpt-oss-120b",
            "num_prompts": 10 * conc, "max_concurrency": conc, "duration": 100.0,
            "benchmark_start_time_unix": t0, "benchmark_end_time_unix": t1,
            "completed": 10 * conc, "total_input_tokens": 10240 * conc,
            "total_output_tokens": 10240 * conc, "request_throughput": 0.1 * f64::from(conc),
            "output_throughput": 102.4 * f64::from(conc),
            "total_token_throughput": 204.8 * f64::from(conc), "median_tpot_ms": 10.0,
        })
        .to_string()
    };
    let sm = |n: usize| -> String {
        (0..n)
            .map(|i| {
                format!(
                    "{{\"t\": {}, \"name\": \"vllm:num_requests_running\", \"value\": {i}}}\n",
                    t0 + i as f64
                )
            })
            .collect()
    };
    std::fs::write(d.join("a.json"), result("20260301-100000", 4)).unwrap();
    std::fs::write(d.join("b.json"), result("20260301-110000", 8)).unwrap();
    std::fs::write(d.join("a.server_metrics.jsonl"), sm(2)).unwrap();
    std::fs::write(d.join("b.server_metrics.jsonl"), sm(3)).unwrap();
    // One GPU drawing 400 W, one sample a second from 2 s before to 2 s after the window.
    let mut csv = String::from("timestamp,index,power.draw [W]\n");
    for t in 1_772_358_998u64..=1_772_359_102 {
        csv.push_str(&format!("{t},0,400 W\n"));
    }
    std::fs::write(d.join("a.power.csv"), &csv).unwrap();
    std::fs::write(d.join("a.power_validation.json"), "{\"power_valid\": true}").unwrap();
    let o = identity("h200", "vllm", "fp8");
    let r = s.ingest_path(d, &o).unwrap();
    assert_eq!(r.runs_ingested, 2, "{r:?}");
    assert!(r.skipped.is_empty(), "{r:?}");
    assert!(r.ignored.is_empty(), "{r:?}");
    let counts = |s: &mut Store| -> std::collections::BTreeMap<String, i64> {
        s.table_counts().unwrap().into_iter().collect()
    };
    let c = counts(&mut s);
    assert_eq!(c["server_metrics"], 2 + 3);
    assert_eq!(c["power_samples"], 105);
    // a: summary.json, server_metrics.jsonl, power.csv, power_validation.json; b: two.
    assert_eq!(c["artifacts"], 4 + 2);
    let rows = s
        .points(&Filter::default(), &CostOptions::default())
        .unwrap();
    let by_conc = |conc: i64| rows.iter().find(|p| p.conc == conc).unwrap();
    assert_eq!(by_conc(4).get("avg_power_w"), Some(400.0));
    assert_eq!(by_conc(8).get("avg_power_w"), None);

    // Written before side files were named after the result: fixed names beside one result.
    let old = tempfile::tempdir().unwrap();
    std::fs::write(old.path().join("c.json"), result("20260302-100000", 16)).unwrap();
    std::fs::write(old.path().join("server_metrics.jsonl"), sm(1)).unwrap();
    let r = s.ingest_path(old.path(), &o).unwrap();
    assert_eq!(r.runs_ingested, 1, "{r:?}");
    assert!(r.ignored.is_empty(), "{r:?}");
    assert_eq!(counts(&mut s)["server_metrics"], 2 + 3 + 1);
}

/// `Store::open_read_only` (the dashboard's store): queries work, every write is refused by the
/// database itself, on both backends.
fn check_read_only(url: &str) {
    let root = common::fixtures().join("sweep-h200");
    let mut w = Store::open(url).unwrap();
    ingest_all(&mut w, &root);
    drop(w);
    let mut r = Store::open_read_only(url).unwrap();
    let rows = r
        .points(&inferbench_store::Filter::default(), &Default::default())
        .unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(
        r.schema_version().unwrap(),
        inferbench_store::schema::latest_version()
    );
    let rep = r
        .ingest_path(
            &common::fixtures().join("imports"),
            &IngestOptions::default(),
        )
        .unwrap();
    assert_eq!(rep.points, 0);
    assert!(!rep.skipped.is_empty());
    for k in &rep.skipped {
        assert!(k.reason.contains("read"), "{k:?}");
    }
}

#[test]
fn read_only_store_sqlite() {
    let (_s, _d, url) = common::sqlite();
    check_read_only(&url);
}

#[test]
fn read_only_store_postgres() {
    if let Some((_s, url)) = common::postgres("read_only_store") {
        check_read_only(&url);
    }
}

/// An eval directory's `job.json` (what a sweep's eval writes) gives its run the provenance,
/// the job and the sweep id as the batch, as a point directory's does (trial 21: an eval-only
/// run's page showed `job: {}` and no version or host).
#[test]
fn an_eval_run_keeps_its_job_json() {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "tests/evalsets/eval_gptoss_8k1k_gptoss_8k1k_fp8_vllm_tp2-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc32_h100-box_0",
    );
    let dir = tempfile::tempdir().unwrap();
    let to = dir.path().join("eval_x");
    common::copy_tree(&from, &to);
    std::fs::write(
        to.join("job.json"),
        r#"{"schema_version": 1, "job": {"model": "m"}, "result_filename": "rf", "conc": 32,
            "provenance": {"inferbench_version": "0.1.0", "host": "box-7", "image": "",
                           "runner_name": "r"},
            "started_at": "2026-12-04T18:00:00.000Z", "sweep_id": "sweep-42"}"#,
    )
    .unwrap();
    let (mut store, _guard, _) = common::sqlite();
    let r = store.ingest_path(&to, &IngestOptions::default()).unwrap();
    assert_eq!(r.evals, 1, "{r:?}");
    let id = store.evals().unwrap()[0].run_id;
    let run = store.run_info(id).unwrap().unwrap();
    assert_eq!(
        (
            run.inferbench_version.as_str(),
            run.host.as_str(),
            run.batch.as_str()
        ),
        ("0.1.0", "box-7", "sweep-42")
    );
    assert_eq!(run.job["job"]["model"], "m", "{:?}", run.job);
}

/// Eval sets (InferenceX's `eval_<EXP_NAME>_<RF>` artifacts and what a sweep's eval writes):
/// our results_gsm8k.json and lm-eval's batched `_conc<N>` files, read as InferenceX's
/// collect_eval_results.py reads them; a failed sweep eval is reported as unfinished.
#[test]
fn eval_sets_ingest_as_inferencex_collects_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/evalsets");
    let (mut store, _guard, _) = common::sqlite();
    let r = store.ingest_path(&root, &IngestOptions::default()).unwrap();
    assert_eq!((r.runs_ingested, r.points, r.evals), (2, 0, 3), "{r:?}");
    // How the report says it: views' `ingest` tests (eval results without points).
    assert_eq!(r.batches.len(), 1, "{r:?}");
    assert_eq!(r.unfinished.len(), 1, "{:?}", r.unfinished);
    assert!(r.unfinished[0]
        .contains("eval_gptoss_8k1k_unfinished (state failed, eval_failed: GSM8K data not given"));
    let got: Vec<_> = store
        .evals()
        .unwrap()
        .into_iter()
        .map(|e| {
            let m = |k: &str| e.metrics.get(k).copied();
            (
                (e.model.clone(), e.hardware.clone(), e.framework.clone()),
                (
                    e.precision.clone(),
                    e.spec_decoding.clone(),
                    e.tp,
                    e.ep,
                    e.dp_attention,
                ),
                (e.task.clone(), e.conc, e.score, e.score_se, e.date.clone()),
                (
                    m("em_strict"),
                    m("em_flexible"),
                    m("em_flexible_se"),
                    m("n_eff"),
                ),
            )
        })
        .collect();
    let s = |x: &str| x.to_string();
    assert_eq!(
        got,
        [
            (
                (s("dsv4"), s("b300"), s("dynamo-sglang")),
                (s("fp4"), s("mtp"), 4, 4, true),
                (s("gsm8k"), 16, Some(0.953), Some(0.0058), s("2025-11-20")),
                (Some(0.953), Some(0.961), Some(0.0053), Some(1319.0)),
            ),
            (
                (s("dsv4"), s("b300"), s("dynamo-sglang")),
                (s("fp4"), s("mtp"), 4, 4, true),
                (s("gsm8k"), 32, Some(0.948), Some(0.0061), s("2025-11-20")),
                (Some(0.948), Some(0.957), Some(0.0056), Some(1319.0)),
            ),
            (
                (s("gptoss120b"), s("h100"), s("vllm")),
                (s("fp8"), s("none"), 2, 1, false),
                (s("gsm8k"), 32, Some(0.75), Some(0.25), s("2025-12-01")),
                (Some(0.75), Some(1.0), Some(0.0), Some(4.0)),
            ),
        ]
    );
    // Idempotent.
    let again = store.ingest_path(&root, &IngestOptions::default()).unwrap();
    assert_eq!((again.runs_reingested, again.evals), (2, 3));
    // An interrupted eval (our results say `interrupted: true`) is not a score: not stored.
    let tmp = tempfile::tempdir().unwrap();
    let src = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .contains("gptoss_8k1k_gptoss")
        })
        .unwrap();
    let cut = tmp.path().join("eval_cut");
    common::copy_tree(&src, &cut);
    let r = cut.join("results_gsm8k.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&r).unwrap()).unwrap();
    v["interrupted"] = true.into();
    std::fs::write(&r, v.to_string()).unwrap();
    let (mut fresh, _g, _) = common::sqlite();
    let rep = fresh.ingest_path(&cut, &IngestOptions::default()).unwrap();
    assert_eq!(
        (rep.runs_ingested, rep.evals, rep.skipped.len()),
        (0, 0, 1),
        "{rep:?}"
    );
    assert!(rep.skipped[0]
        .reason
        .contains("an interrupted eval's results say `interrupted: true`"));
    assert_eq!(store.evals().unwrap().len(), 3);

    // InferenceX's own collector on the same directories gives the same numbers.
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/inferencex/utils/collect_eval_results.py");
    if !script.is_file() {
        assert!(
            std::env::var("INFERBENCH_REQUIRE_SERVICES").as_deref() != Ok("1"),
            "{} missing",
            script.display()
        );
        eprintln!(
            "skipping the collect_eval_results.py comparison: {} missing",
            script.display()
        );
        return;
    }
    // The script imports tabulate only to print; a stub keeps the comparison free of PyPI.
    let code = "import sys, types, json; sys.modules['tabulate'] = types.SimpleNamespace(tabulate=None); \
                sys.path.insert(0, sys.argv[1]); import collect_eval_results as c; from pathlib import Path; \
                rows = c.collect_eval_rows(Path(sys.argv[2])); \
                print(json.dumps(sorted([[r['model_prefix'], r['conc'], r['task'], r['tp'], r['ep'], r['score'], r['score_se'], r['em_strict'], r['em_flexible'], r['em_flexible_se'], r['n_eff']] for r in rows])))";
    let o = std::process::Command::new("python3")
        .args(["-c", code])
        .arg(script.parent().unwrap())
        .arg(&root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let oracle: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ours: Vec<serde_json::Value> = store
        .evals()
        .unwrap()
        .iter()
        .map(|e| {
            let m = |k: &str| e.metrics.get(k).copied();
            serde_json::json!([
                if e.model.starts_with("gptoss") {
                    "gptoss"
                } else {
                    "dsv4"
                },
                e.conc,
                e.task,
                e.tp,
                e.ep,
                e.score,
                e.score_se,
                m("em_strict"),
                m("em_flexible"),
                m("em_flexible_se"),
                m("n_eff").map(|x| x as i64)
            ])
        })
        .collect();
    assert_eq!(oracle, serde_json::Value::Array(ours));
}

/// A completed run whose producer found its timings not valid (`inferbench.invalid_reason`:
/// the sim starved of CPU sent its tokens in bursts) is stored as an invalid point, kept off
/// every frontier like a run cut short; without the field the same result is valid.
#[test]
fn a_result_with_an_invalid_reason_is_an_invalid_point() {
    let (mut s, _d, _) = common::sqlite();
    let dir = tempfile::tempdir().unwrap();
    let result = |conc: u32, reason: Option<&str>| {
        let mut v = serde_json::json!({
            "date": "20260301-100000", "backend": "openai", "model_id": "openai/gpt-oss-120b",
            "num_prompts": 10 * conc, "max_concurrency": conc, "duration": 100.0,
            "completed": 10 * conc, "total_input_tokens": 10240 * conc,
            "total_output_tokens": 10240 * conc, "request_throughput": 0.1 * f64::from(conc),
            "output_throughput": 102.4 * f64::from(conc),
            "total_token_throughput": 204.8 * f64::from(conc), "median_tpot_ms": 10.0,
            "inferbench": {"stop_reason": "completed", "interrupted": false},
        });
        if let Some(r) = reason {
            v["inferbench"]["invalid_reason"] = r.into();
        }
        v.to_string()
    };
    std::fs::write(dir.path().join("a.json"), result(4, None)).unwrap();
    std::fs::write(
        dir.path().join("b.json"),
        result(8, Some("the server fell behind its schedule")),
    )
    .unwrap();
    let o = identity("h200", "vllm", "fp8");
    let r = s.ingest_path(dir.path(), &o).unwrap();
    assert_eq!((r.points, r.invalid_points), (2, 1), "{r:?}");
    let rows = s
        .points(&Filter::default(), &CostOptions::default())
        .unwrap();
    let valid: Vec<(i64, bool)> = rows.iter().map(|p| (p.conc, p.valid)).collect();
    assert_eq!(valid, [(4, true), (8, false)]);
}

/// Trial 11: a `replay --result-dir` directory (its `summary.json` says `scenario_type:
/// "agentic-coding"` and `submission_valid: "false"` at the top level, no job.json) was stored
/// as a valid fixed-length point with mean lengths as ISL/OSL. It is an invalid agentic point.
#[test]
fn a_replay_result_directory_is_an_invalid_agentic_point() {
    let (mut s, _d, _) = common::sqlite();
    let dir = tempfile::tempdir().unwrap();
    let point = dir.path().join("replay");
    std::fs::create_dir_all(&point).unwrap();
    let summary = serde_json::json!({
        "date": "20261203-113000", "backend": "openai-chat", "model_id": "Llama-3.1-8B",
        "num_prompts": 135, "max_concurrency": 4, "duration": 59.7, "completed": 135,
        "total_input_tokens": 200475, "total_output_tokens": 44010,
        "request_throughput": 2.26, "output_throughput": 737.0,
        "total_token_throughput": 4094.0, "median_tpot_ms": 7.1,
        "scenario_type": "agentic-coding", "submission_valid": "false",
        "inferbench": {"stop_reason": "completed", "interrupted": false},
    });
    std::fs::write(point.join("summary.json"), summary.to_string()).unwrap();
    let o = identity("h100", "sim", "bf16");
    let r = s.ingest_path(&point, &o).unwrap();
    assert_eq!((r.points, r.invalid_points), (1, 1), "{r:?}");
    let rows = s
        .points(&Filter::default(), &CostOptions::default())
        .unwrap();
    let p = &rows[0];
    assert_eq!(
        (p.scenario.as_str(), p.isl, p.osl, p.valid),
        ("agentic-coding", 0, 0, false)
    );
}

/// Issue 39 §9: a point that measured nothing has one status, failed, with the cause its
/// summary's `inferbench.failed_reason` gives; a file written before that field (its
/// `invalid_reason` saying "failed its gate: nothing was measured …") is failed too and not
/// also invalid: a failed point has no invalid reason at all (issue 39, fresh tester's
/// finding 1), its cause is its `error`.
#[test]
fn a_point_that_measured_nothing_is_failed_not_invalid() {
    let (mut s, _d, _) = common::sqlite();
    let dir = tempfile::tempdir().unwrap();
    let nothing = "nothing was measured: none of the 8 profile requests succeeded (8 failed)";
    let old = format!(
        "failed its gate: {nothing}; the result is marked invalid (kept off frontiers unless \
         --include-invalid)"
    );
    let cases = [
        (1, serde_json::json!({"failed_reason": nothing})),
        (2, serde_json::json!({"invalid_reason": old})),
        (
            4,
            serde_json::json!({"invalid_reason": format!("client-bound: x; {old}")}),
        ),
    ];
    for (conc, extra) in &cases {
        let mut x = serde_json::json!({"stop_reason": "completed", "interrupted": false,
                                       "failed": 8});
        x.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let v = serde_json::json!({
            "date": "20260301-100000", "backend": "openai", "model_id": "m",
            "num_prompts": 8, "max_concurrency": conc, "duration": 1.0,
            "completed": 0, "total_input_tokens": 0, "total_output_tokens": 0,
            "request_throughput": 0.0, "output_throughput": 0.0, "total_token_throughput": 0.0,
            "inferbench": x,
        });
        std::fs::write(dir.path().join(format!("c{conc}.json")), v.to_string()).unwrap();
    }
    let r = s
        .ingest_path(dir.path(), &identity("h200", "vllm", "fp8"))
        .unwrap();
    assert_eq!((r.points, r.failed_points, r.invalid_points), (3, 3, 0));
    let f = Filter {
        include_failed: true,
        ..Filter::default()
    };
    let rows = s.points(&f, &CostOptions::default()).unwrap();
    let got: Vec<_> = rows
        .iter()
        .map(|p| {
            (
                p.conc,
                p.status(),
                p.error.as_deref(),
                p.invalid_reason.as_deref(),
                p.counts(true),
            )
        })
        .collect();
    let generic = Some("no successful request: every one failed");
    assert_eq!(
        got,
        [
            (1, "failed", Some(nothing), None, false),
            (2, "failed", generic, None, false),
            // One status (fresh tester's finding 1): a failed point has no invalid reason.
            (4, "failed", generic, None, false),
        ]
    );
    // Without --include-failed none is listed.
    let rows = s
        .points(&Filter::default(), &CostOptions::default())
        .unwrap();
    assert!(rows.is_empty());
}

/// A point where no request succeeded is stored as failed with the cause its summary gives
/// (trial 15: a server that never answered was stored as "cut short"): the `stop_reason`, or
/// the failed requests' count.
#[test]
fn a_failed_point_is_stored_with_its_cause() {
    let (mut s, _d, _) = common::sqlite();
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            1,
            "server_unreachable",
            0,
            "server unreachable: nothing measured",
        ),
        (
            2,
            "interrupted",
            0,
            "interrupted before any request finished",
        ),
        (
            4,
            "aborted",
            0,
            "stopped on a failure gate before any request finished",
        ),
        (
            8,
            "completed",
            16,
            "no successful request: every one failed",
        ),
        // Interrupted after some failures: said as interrupted (core's
        // `nothing_measured_cause`, the summary writer's rule too).
        (
            16,
            "interrupted",
            3,
            "interrupted before any request succeeded (3 failed): nothing measured",
        ),
    ];
    for (conc, reason, failed, _) in cases {
        let v = serde_json::json!({
            "date": "20260301-100000", "backend": "openai", "model_id": "m",
            "num_prompts": 2 * conc, "max_concurrency": conc, "duration": 1.0,
            "completed": 0, "total_input_tokens": 0, "total_output_tokens": 0,
            "request_throughput": 0.0, "output_throughput": 0.0, "total_token_throughput": 0.0,
            "inferbench": {"stop_reason": reason, "interrupted": reason == "interrupted",
                           "failed": failed},
        });
        std::fs::write(dir.path().join(format!("c{conc}.json")), v.to_string()).unwrap();
    }
    let o = identity("h200", "vllm", "fp8");
    let r = s.ingest_path(dir.path(), &o).unwrap();
    assert_eq!(r.points, cases.len(), "{r:?}");
    let f = Filter {
        include_failed: true,
        ..Filter::default()
    };
    let rows = s.points(&f, &CostOptions::default()).unwrap();
    let got: Vec<(i64, Option<&str>)> = rows.iter().map(|p| (p.conc, p.error.as_deref())).collect();
    let want: Vec<(i64, Option<&str>)> =
        cases.iter().map(|c| (i64::from(c.0), Some(c.3))).collect();
    assert_eq!(got, want);
    // One status (fresh tester's finding 1): each is failed and has no invalid reason, cut
    // short or not; the two interrupted ones are counted as interrupted.
    for p in &rows {
        let shown = (
            p.status(),
            p.invalid_reason.as_deref(),
            p.shown_invalid_reason(),
        );
        assert_eq!(shown, ("failed", None, None), "{}", p.conc);
    }
    assert_eq!(
        (r.failed_points, r.invalid_points, r.interrupted_points),
        (5, 0, 2)
    );
    // Nothing measured, so no figure derived from its zero throughput either (trial 15: `-`
    // $/M tokens beside `0` tok/s/MW).
    for p in &rows {
        assert_eq!(p.get("tput_per_gpu"), Some(0.0), "{}", p.conc);
        assert_eq!(p.get("tok_s_per_mw"), None, "{}", p.conc);
        assert_eq!(p.get("usd_per_m_rental"), None, "{}", p.conc);
    }
}

/// An invalid point keeps why (trial 16: `report`'s `error` was empty for it): a run cut
/// short, an AgentX replay's `submission_invalid_reasons`, the producer's `invalid_reason`,
/// several at once joined with `; `; a valid point has none.
#[test]
fn an_invalid_point_is_stored_with_its_reason() {
    let (mut s, _d, _) = common::sqlite();
    let dir = tempfile::tempdir().unwrap();
    let cases: [(i64, serde_json::Value, serde_json::Value, Option<&str>); 5] = [
        (
            1,
            serde_json::json!({"stop_reason": "completed"}),
            serde_json::json!({}),
            None,
        ),
        (
            2,
            serde_json::json!({"stop_reason": "interrupted", "interrupted": true}),
            serde_json::json!({}),
            Some("cut short: interrupted"),
        ),
        (
            4,
            serde_json::json!({"stop_reason": "completed",
                               "invalid_reason": "the server fell behind its schedule"}),
            serde_json::json!({}),
            Some("the server fell behind its schedule"),
        ),
        (
            8,
            serde_json::json!({"stop_reason": "completed"}),
            serde_json::json!({"scenario_type": "agentic-coding", "submission_valid": false,
                               "submission_invalid_reasons": ["run_cancelled", "unsafe_override"]}),
            Some("run_cancelled; unsafe_override"),
        ),
        (
            16,
            serde_json::json!({"stop_reason": "server_unreachable"}),
            serde_json::json!({"scenario_type": "agentic-coding", "submission_valid": "false"}),
            Some("cut short: the server became unreachable; submission_valid: false"),
        ),
    ];
    for (conc, x, meta, _) in &cases {
        let v = serde_json::json!({
            "date": "20260301-100000", "backend": "openai", "model_id": "m",
            "num_prompts": 10, "max_concurrency": conc, "duration": 1.0, "completed": 10,
            "total_input_tokens": 100, "total_output_tokens": 100, "request_throughput": 10.0,
            "output_throughput": 100.0, "total_token_throughput": 200.0,
            "median_tpot_ms": 10.0, "median_ttft_ms": 50.0, "median_e2el_ms": 100.0,
            "inferbench": x, "metadata": meta,
        });
        std::fs::write(dir.path().join(format!("c{conc}.json")), v.to_string()).unwrap();
    }
    let o = identity("h200", "vllm", "fp8");
    let r = s.ingest_path(dir.path(), &o).unwrap();
    assert_eq!(r.points, cases.len(), "{r:?}");
    let rows = s
        .points(&Filter::default(), &CostOptions::default())
        .unwrap();
    // In conc order (the rows' own order puts their workloads, ISL/OSL, first).
    let mut got: Vec<(i64, bool, Option<&str>)> = (rows.iter())
        .map(|p| (p.conc, p.valid, p.invalid_reason.as_deref()))
        .collect();
    got.sort_by_key(|g| g.0);
    let want: Vec<(i64, bool, Option<&str>)> =
        cases.iter().map(|c| (c.0, c.3.is_none(), c.3)).collect();
    assert_eq!(got, want);
}

/// Result files in one directory are one batch, whether ingested together or one at a time:
/// the directory, canonical, as `bench --db` stores its point (trial 15: two `bench --db` runs
/// into one `--result-dir` made one batch, `ingest` of the same files one batch per file).
#[test]
fn result_files_in_one_directory_are_one_batch() {
    let (mut s, _d, _) = common::sqlite();
    let dir = tempfile::tempdir().unwrap();
    for conc in [4, 8] {
        let v = serde_json::json!({
            "date": "20260301-100000", "backend": "openai", "model_id": "m",
            "num_prompts": 10, "max_concurrency": conc, "duration": 1.0, "completed": 10,
            "total_input_tokens": 100, "total_output_tokens": 100, "request_throughput": 10.0,
            "output_throughput": 100.0, "total_token_throughput": 200.0, "median_tpot_ms": 1.0,
        });
        std::fs::write(dir.path().join(format!("c{conc}.json")), v.to_string()).unwrap();
    }
    let o = identity("h200", "vllm", "fp8");
    let want = dir.path().canonicalize().unwrap().display().to_string();
    let one = s.ingest_path(&dir.path().join("c4.json"), &o).unwrap();
    assert_eq!(one.batches.iter().collect::<Vec<_>>(), [&want]);
    let all = s.ingest_path(dir.path(), &o).unwrap();
    assert_eq!(all.batches.iter().collect::<Vec<_>>(), [&want]);
    let rows = s
        .points(&Filter::default(), &CostOptions::default())
        .unwrap();
    let batches: Vec<(i64, &str)> = rows.iter().map(|p| (p.conc, p.batch.as_str())).collect();
    assert_eq!(batches, [(4, want.as_str()), (8, want.as_str())]);
}

/// Trial 24: a sweep resumed after Ctrl-C redoes the interrupted point in its directory;
/// ingesting the sweep again kept the old point beside the new one. A point directory holds one
/// point: what it holds now replaces what an earlier ingest read from it (same run, its row
/// updated), while an unchanged directory is the same run as before.
#[test]
fn a_point_directory_redone_replaces_its_point() {
    let (mut store, _d, _) = common::sqlite();
    let dir = tempfile::tempdir().unwrap();
    common::copy_tree(&common::fixtures().join("sweep-h200"), dir.path());
    let first = ingest_all(&mut store, dir.path());
    let runs = store.run_count().unwrap();
    let ttft = |store: &mut Store| -> Vec<f64> {
        let mut f = Filter::default();
        f.add("conc=4").unwrap();
        (store.points(&f, &CostOptions::default()).unwrap().iter())
            .map(|p| p.metrics["mean_ttft"])
            .collect()
    };
    assert_eq!(ttft(&mut store), [0.12]);
    // The point redone: other figures in its result files.
    for e in std::fs::read_dir(dir.path().join("conc4")).unwrap() {
        let p = e.unwrap().path();
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        let redone = text
            .replace("\"mean_ttft_ms\": 120.0", "\"mean_ttft_ms\": 130.0")
            .replace("\"mean_ttft\": 0.12", "\"mean_ttft\": 0.13");
        if redone != text {
            std::fs::write(&p, redone).unwrap();
        }
    }
    let again = ingest_all(&mut store, dir.path());
    assert_eq!(again.runs_ingested, first.runs_ingested);
    assert_eq!(again.runs_reingested, first.runs_ingested);
    assert_eq!(store.run_count().unwrap(), runs);
    assert_eq!(ttft(&mut store), [0.13]);
}

/// Issue 40 §2: no unit is read from a key's name. A numeric key ending in `_ms` that is not
/// one of vLLM's latency statistics (here a count of blocks, `kv_blocks_ms`), at the top level
/// and in the extras, is stored under its own name with its value unchanged — from a summary of
/// ours and from a vLLM-shaped one alike — while the latency statistics beside it are still
/// converted to seconds by the table.
#[test]
fn a_key_ending_in_ms_that_is_no_latency_round_trips_unchanged() {
    let golden =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/golden/conc4.summary.json");
    let mut ours: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(golden).unwrap()).unwrap();
    ours["kv_blocks_ms"] = 7.5.into();
    ours["inferbench"]["kv_blocks_ms"] = 3.0.into();
    let vllm = serde_json::json!({
        "date": "20260301-100000", "backend": "openai", "model_id": "m",
        "num_prompts": 10, "max_concurrency": 8, "duration": 1.0, "completed": 10,
        "total_input_tokens": 100, "total_output_tokens": 100, "request_throughput": 10.0,
        "output_throughput": 100.0, "total_token_throughput": 200.0, "median_tpot_ms": 4.0,
        "kv_blocks_ms": 7.5, "inferbench": {"kv_blocks_ms": 3.0, "ttft_ms": {"count": 2, "median": 250.0}},
    });
    let (mut s, _d, _) = common::sqlite();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ours.json"), ours.to_string()).unwrap();
    std::fs::write(dir.path().join("vllm.json"), vllm.to_string()).unwrap();
    s.ingest_path(dir.path(), &identity("h200", "vllm", "fp8"))
        .unwrap();
    let all = Filter {
        all_metrics: true,
        ..Filter::default()
    };
    let rows = s.points(&all, &CostOptions::default()).unwrap();
    assert_eq!(rows.len(), 2);
    for p in &rows {
        let m = &p.metrics;
        assert_eq!(m.get("kv_blocks_ms"), Some(&7.5), "conc {}", p.conc);
        assert_eq!(
            m.get("inferbench.kv_blocks_ms"),
            Some(&3.0),
            "conc {}",
            p.conc
        );
        assert!(!m.contains_key("kv_blocks") && !m.contains_key("inferbench.kv_blocks"));
    }
    let by_conc = |c: i64| &rows.iter().find(|p| p.conc == c).unwrap().metrics;
    assert_eq!(by_conc(8)["median_tpot"], 0.004);
    assert_eq!(by_conc(8)["median_intvty"], 250.0);
    assert_eq!(by_conc(8)["inferbench.ttft.median"], 0.25);
    assert_eq!(by_conc(8)["inferbench.ttft.count"], 2.0);
    assert_eq!(
        by_conc(4)["mean_ttft"],
        ours["mean_ttft_ms"].as_f64().unwrap() / 1000.0
    );
}

/// Issue 39 (files, ingest and hints), 3: the records-count check of a result's
/// `--save-requests` file holds for a sweep's point directory too (ingesting a sweep's result
/// dir): its `requests.jsonl` holding 5 profile records against the summary's 159 completed
/// (its `inferbench` block counts no failed) fails the point, naming both counts, with a
/// warning; its 5 records are stored. The fixture's own summary now counts 4 completed (its
/// records were trimmed to 5 samples to keep the repo small), and a `requests.jsonl.zst` is
/// checked alike. Before: stored as complete, no warning.
#[test]
fn a_sweep_points_records_file_shorter_than_its_summary_fails_the_point() {
    let (mut s, _db, _) = common::sqlite();
    let copy = common::fixture_copy();
    let sweep = copy.path().join("sweep-h200");
    let summary = sweep.join("conc16/summary.json");
    let text = std::fs::read_to_string(&summary).unwrap();
    std::fs::write(
        &summary,
        text.replace("\"completed\": 4,", "\"completed\": 159,"),
    )
    .unwrap();
    // conc4's 40 records (`fixture_copy`'s `.zst`) less 1.
    let zst = sweep.join("conc4/requests.jsonl.zst");
    let plain =
        String::from_utf8(zstd::decode_all(&std::fs::read(&zst).unwrap()[..]).unwrap()).unwrap();
    let short: String = plain.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(&zst, zstd::encode_all(short.as_bytes(), 3).unwrap()).unwrap();
    let r = s.ingest_path(&sweep, &IngestOptions::default()).unwrap();
    assert_eq!(
        (
            r.points,
            r.failed_points,
            r.incomplete_records_points,
            r.requests
        ),
        (2, 2, 2, 39 + 6)
    );
    let f = Filter {
        include_failed: true,
        ..Filter::default()
    };
    let rows = s.points(&f, &CostOptions::default()).unwrap();
    let got: Vec<(i64, Option<&str>)> = rows.iter().map(|p| (p.conc, p.error.as_deref())).collect();
    assert_eq!(
        got,
        [
            (
                4,
                Some(
                    "its records file is incomplete: 39 profile record(s) of the 40 the summary \
                     counts (completed + failed); the 39 are stored"
                )
            ),
            (
                16,
                Some(
                    "its records file is incomplete: 5 profile record(s) of the 159 the summary \
                     counts (completed + failed); the 5 are stored"
                )
            )
        ]
    );
    let warned: Vec<&String> = (r.warnings.iter())
        .filter(|w| w.contains(": incomplete: "))
        .collect();
    assert_eq!(warned.len(), 2, "{:?}", r.warnings);
    assert!(
        warned.iter().any(|w| w.contains(
            "sweep-h200/conc16/requests.jsonl: incomplete: 5 profile record(s) of the 159 the \
             summary counts"
        )),
        "{warned:?}"
    );
}

/// Fresh tester of issue 39 §5, item 7: a bench result whose records file holds each request
/// twice (20 lines, the summary's 20 + 0 failed) was stored complete and the ingest said "20
/// request record(s)" beside "ignored 1 non-result file(s): req.jsonl". The point is failed
/// (the file repeats requests), and the records file the result read is not listed as ignored.
#[test]
fn a_records_file_repeating_requests_fails_its_point_and_is_not_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep-h200/conc4/summary.json");
    let mut s: serde_json::Value = serde_json::from_slice(&std::fs::read(src).unwrap()).unwrap();
    s["completed"] = serde_json::json!(20);
    s["inferbench"]["failed"] = serde_json::json!(0);
    s["inferbench"]["requests_file"] = serde_json::json!("req.jsonl");
    std::fs::write(dir.path().join("result.json"), s.to_string()).unwrap();
    let line = |id: u64| {
        format!("{{\"request_id\":{id},\"phase\":\"profile\",\"success\":true,\"sent_ns\":0}}\n")
    };
    let twice: String = (0..10).map(|i| line(i).repeat(2)).collect();
    std::fs::write(dir.path().join("req.jsonl"), twice).unwrap();
    let (mut store, _db, _) = common::sqlite();
    let r = store
        .ingest_path(dir.path(), &IngestOptions::default())
        .unwrap();
    assert_eq!((r.points, r.failed_points), (1, 1), "{r:?}");
    assert_eq!(r.incomplete_records_points, 1);
    assert!(r.ignored.is_empty(), "{:?}", r.ignored);
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(
        r.warnings[0].contains("repeat 10 request(s) already in it"),
        "{:?}",
        r.warnings
    );
    let all = Filter {
        include_failed: true,
        ..Filter::default()
    };
    let rows = store.points(&all, &CostOptions::default()).unwrap();
    assert!(
        (rows[0].error.as_deref()).is_some_and(|e| e.contains("its records file is broken")),
        "{:?}",
        rows[0].error
    );
}
