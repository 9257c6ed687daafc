//! Groups compare like with like (issue 39 §5): a point's group includes its server's
//! fingerprint, so a one-point `bench` against a differently configured server never lands in
//! a quickstart's curve; the same settings share one; a database of schema version 4 migrates
//! and its points group as before.

mod common;

use std::path::Path;

use inferbench_store::query::{keep_latest_runs, label_servers};
use inferbench_store::{Filter, IngestOptions, PointRow, Store};
use serde_json::{json, Value};

/// The group of every stored point, by (batch's last component, conc), in store order.
fn groups(rows: &[PointRow]) -> Vec<(String, i64, String)> {
    rows.iter()
        .map(|r| {
            let batch = r.batch.rsplit('/').next().unwrap_or("").to_string();
            (batch, r.conc, r.group())
        })
        .collect()
}

/// Writes `<root>/<batch>/conc<conc>/summary.json`: the sweep fixture's summary (ours) at
/// concurrency `conc`, its throughput scaled by `scale`, with `server` as its
/// `inferbench.server` (absent when `None`).
fn point(root: &Path, batch: &str, conc: i64, scale: f64, server: Option<Value>) {
    let src = common::fixtures().join("sweep-h200/conc4/summary.json");
    let mut s: Value = serde_json::from_slice(&std::fs::read(src).unwrap()).unwrap();
    s["max_concurrency"] = json!(conc);
    for k in [
        "total_token_throughput",
        "output_throughput",
        "request_throughput",
    ] {
        s[k] = json!(s[k].as_f64().unwrap() * scale * conc as f64);
    }
    s["median_tpot_ms"] = json!(s["median_tpot_ms"].as_f64().unwrap() * (1.0 + conc as f64));
    if let Some(v) = server {
        s["inferbench"]["server"] = v;
    }
    let dir = root.join(batch).join(format!("conc{conc}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("summary.json"), serde_json::to_vec(&s).unwrap()).unwrap();
}

/// What the producer writes for a sim with these settings (core's one function).
fn sim(max_num_seqs: &str, time_scale: &str) -> Value {
    let fp = inferbench_core::fingerprint::fingerprint([
        ("models.served_model", "llama-3.1-8b"),
        ("sim.mode", "timed"),
        ("sim.max_num_seqs", max_num_seqs),
        ("sim.time_scale", time_scale),
    ])
    .unwrap();
    serde_json::to_value(fp).unwrap()
}

fn opts(set: &[&str]) -> IngestOptions {
    let mut v: Vec<String> = ["hw=h100", "framework=sim", "precision=bf16"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    v.extend(set.iter().map(|s| s.to_string()));
    IngestOptions::from_set(&v).unwrap()
}

const BASE: &str = "dsr1 1024/1024 h100_sim_bf16";

/// The README scenario: two quickstarts with the same sim settings share one group; a
/// one-point bench against a standalone sim (max-num-seqs 256, real time) is a group of its
/// own, named apart by the settings that differ, and displaces none of the quickstart's
/// points when the latest run per configuration is kept.
#[test]
fn a_bench_against_another_server_is_its_own_group() {
    let (mut store, dir, _) = common::sqlite();
    let root = dir.path().join("results");
    for c in [1, 4, 16] {
        point(&root, "qs1", c, 1.0, Some(sim("32", "4")));
        point(&root, "qs2", c, 1.01, Some(sim("32", "4")));
    }
    let o = opts(&[]);
    for b in ["qs1", "qs2"] {
        store.ingest_path(&root.join(b), &o).unwrap();
    }
    let rows = store
        .points(&Filter::default(), &Default::default())
        .unwrap();
    // One server: the plain name, as before the fingerprint.
    assert!(
        rows.iter().all(|r| r.group() == BASE),
        "{:?}",
        groups(&rows)
    );
    assert_eq!(rows[0].server_fingerprint.len(), 16);
    point(&root, "bench", 16, 3.0, Some(sim("256", "1")));
    store.ingest_path(&root.join("bench"), &o).unwrap();

    let mut rows = store
        .points(&Filter::default(), &Default::default())
        .unwrap();
    let qs = format!("{BASE} · max_num_seqs=32, time_scale=4");
    let bench = format!("{BASE} · max_num_seqs=256, time_scale=1");
    let want: Vec<(String, i64, String)> = [
        ("bench", 16, &bench),
        ("qs1", 1, &qs),
        ("qs2", 1, &qs),
        ("qs1", 4, &qs),
        ("qs2", 4, &qs),
        ("qs1", 16, &qs),
        ("qs2", 16, &qs),
    ]
    .iter()
    .map(|(b, c, g)| (b.to_string(), *c, g.to_string()))
    .collect();
    assert_eq!(groups(&rows), want);
    // The latest run per configuration: the second quickstart's three points and the bench's
    // one (before, the bench displaced the quickstart's whole curve).
    keep_latest_runs(&mut rows);
    let kept: Vec<(String, i64)> = groups(&rows).into_iter().map(|g| (g.0, g.1)).collect();
    assert_eq!(
        kept,
        [
            ("bench".to_string(), 16),
            ("qs2".into(), 1),
            ("qs2".into(), 4),
            ("qs2".into(), 16)
        ]
    );
    // Frontiers per group: the bench's point is on its own, never against the quickstart's.
    let f = store
        .frontier(
            &Filter::default(),
            &Default::default(),
            "median_intvty",
            "tput_per_gpu",
        )
        .unwrap();
    let on: Vec<(String, i64, String)> = groups(&f);
    assert!(on.contains(&("bench".into(), 16, bench.clone())), "{on:?}");
    assert!(on.iter().any(|g| g.2 == qs && g.1 == 16), "{on:?}");
    // Labels are the store's, not the filter's (trial of issue 39 §5: `?batch=x` gave the
    // bare name): a filter that leaves one server still names it apart.
    let mut only = Filter::default();
    only.add("batch=bench").unwrap();
    let rows = store.points(&only, &Default::default()).unwrap();
    assert_eq!(groups(&rows), [("bench".into(), 16, bench.clone())]);
    // Unrelated points (another configuration's, on a third server) change no label here.
    point(&root, "other", 4, 1.0, Some(sim("8", "2")));
    let other = opts(&["hw=h200"]);
    store.ingest_path(&root.join("other"), &other).unwrap();
    let rows = store.points(&only, &Default::default()).unwrap();
    assert_eq!(groups(&rows), [("bench".into(), 16, bench)]);
    let all = store
        .points(&Filter::default(), &Default::default())
        .unwrap();
    assert!(
        groups(&all).contains(&("other".into(), 4, "dsr1 1024/1024 h200_sim_bf16".into())),
        "{:?}",
        groups(&all)
    );
}

/// Two configurations whose group names read alike (hardware `h100` with framework `sim_x`,
/// and `h100_sim` with `x`: both `h100_sim_x_bf16`) on two servers: the frontier's fast path
/// (its own config-key grouping, no server mixed within a key) still labels its rows against
/// every stored server under that name, as `points` does, instead of skipping the labels as
/// it may where each name has one server (docs/performance.md, 2026-12-07 evening).
#[test]
fn the_frontier_labels_servers_of_configs_named_alike() {
    let (mut store, dir, _) = common::sqlite();
    let root = dir.path().join("results");
    for c in [1, 4, 16] {
        point(&root, "a", c, 1.0, Some(sim("32", "4")));
        point(&root, "b", c, 2.0, Some(sim("256", "4")));
    }
    let a = opts(&["framework=sim_x"]);
    store.ingest_path(&root.join("a"), &a).unwrap();
    let b = opts(&["hw=h100_sim", "framework=x"]);
    store.ingest_path(&root.join("b"), &b).unwrap();
    let name = "dsr1 1024/1024 h100_sim_x_bf16";
    let f = store
        .frontier(
            &Filter::default(),
            &Default::default(),
            "median_intvty",
            "tput_per_gpu",
        )
        .unwrap();
    let on: Vec<(String, String, String)> = (f.iter())
        .map(|r| (r.hardware.clone(), r.framework.clone(), r.group()))
        .collect();
    let want =
        |hw: &str, fw: &str, label: &str| (hw.into(), fw.into(), format!("{name} · {label}"));
    assert!(!on.is_empty());
    assert!(
        on.iter()
            .all(|g| *g == want("h100", "sim_x", "max_num_seqs=32")
                || *g == want("h100_sim", "x", "max_num_seqs=256")),
        "{on:?}"
    );
    // The same labels as the full rows give those points.
    let all = store
        .points(&Filter::default(), &Default::default())
        .unwrap();
    for r in &f {
        let full = all.iter().find(|x| x.point_id == r.point_id).unwrap();
        assert_eq!(full.group(), r.group());
    }
}

/// `--set` keys that name no identity field are server settings: the same result file
/// ingested with `--set max_num_seqs=256` is another server than without.
#[test]
fn set_keys_are_server_settings() {
    let (mut store, dir, _) = common::sqlite();
    let root = dir.path().join("results");
    point(&root, "a", 4, 1.0, None);
    point(&root, "b", 4, 1.01, None);
    point(&root, "c", 4, 1.02, None);
    store.ingest_path(&root.join("a"), &opts(&[])).unwrap();
    let (x, y) = (
        opts(&["max_num_seqs=256", "conc=4"]),
        opts(&["max_num_seqs=32"]),
    );
    store.ingest_path(&root.join("b"), &x).unwrap();
    store.ingest_path(&root.join("c"), &y).unwrap();
    let rows = store
        .points(&Filter::default(), &Default::default())
        .unwrap();
    assert_eq!(
        groups(&rows),
        [
            ("b".into(), 4, format!("{BASE} · max_num_seqs=256")),
            ("c".into(), 4, format!("{BASE} · max_num_seqs=32")),
            ("a".into(), 4, format!("{BASE} · server not recorded")),
        ]
    );
    // The load (`conc`) named with --set is no setting: identity only.
    assert_eq!(
        rows[0].server_settings.keys().collect::<Vec<_>>(),
        ["set.max_num_seqs"]
    );
}

/// Every format takes the `--set` settings: InferenceX's aggregate, vLLM's and AIPerf's
/// results alike.
#[test]
fn set_keys_apply_to_every_format() {
    let (mut store, _dir, _) = common::sqlite();
    let imports = common::fixtures().join("imports");
    for f in [
        "agg_bmk.json",
        "vllm_gptoss_conc64.json",
        "profile_export_aiperf.json",
    ] {
        let rep = store
            .ingest_path(&imports.join(f), &opts(&["gpu_memory_utilization=0.8"]))
            .unwrap();
        assert!(rep.points > 0, "{f}");
    }
    let rows = store
        .points(&Filter::default(), &Default::default())
        .unwrap();
    assert!(rows.len() >= 3);
    for r in &rows {
        assert_eq!(
            r.server_settings.iter().collect::<Vec<_>>(),
            [(
                &"set.gpu_memory_utilization".to_string(),
                &"0.8".to_string()
            )],
            "{}",
            r.group()
        );
    }
}

/// Labels name every setting that differs among the servers sharing the name, in key order
/// (trial of issue 39 §5: with 10 servers every label showed the same first three settings
/// then `… [hash]`, hiding max_num_seqs and time_scale); a setting a server lacks reads
/// `none`; the fingerprint's digits only where the settings cannot tell two apart.
#[test]
fn labels_name_what_differs() {
    let row = |fp: &str, kv: &[(&str, &str)]| PointRow {
        model: "m".into(),
        scenario: "fixed_seq_len".into(),
        spec_decoding: "none".into(),
        server_fingerprint: fp.into(),
        server_settings: kv
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..PointRow::default()
    };
    let five = |v: [&'static str; 5]| {
        ["sim.a", "sim.b", "sim.c", "sim.d", "sim.e"]
            .into_iter()
            .zip(v)
            .collect::<Vec<_>>()
    };
    let mut rows = vec![
        row("aaaaaaaaaaaaaaaa", &five(["1", "1", "1", "1", "1"])),
        row("bbbbbbbbbbbbbbbb", &five(["1", "1", "1", "1", "2"])),
        row("cccccccccccccccc", &five(["2", "2", "2", "2", "1"])),
        row("dddddddddddddddd", &[("sim.a", "1"), ("launch.x", "1")]),
    ];
    label_servers(&mut rows);
    let labels: Vec<&str> = rows.iter().map(|r| r.server_label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "a=1, b=1, c=1, d=1, e=1, x=none",
            "a=1, b=1, c=1, d=1, e=2, x=none",
            "a=2, b=2, c=2, d=2, e=1, x=none",
            "a=1, b=none, c=none, d=none, e=none, x=1"
        ]
    );
    // Ten sims that share most settings: each label names max_num_seqs and time_scale, the
    // two that differ, whatever else they share; no hash.
    let mut ten: Vec<PointRow> = (0..10)
        .map(|i| {
            let (seqs, scale) = ((8 << (i % 5)).to_string(), (1 + i / 5).to_string());
            let fp = format!("{i:016x}");
            row(
                &fp,
                &[
                    ("sim.hardware", "h100"),
                    ("sim.max_num_seqs", &seqs),
                    ("sim.mode", "timed"),
                    ("sim.time_scale", &scale),
                ],
            )
        })
        .collect();
    label_servers(&mut ten);
    assert_eq!(ten[0].server_label, "max_num_seqs=8, time_scale=1");
    assert_eq!(ten[9].server_label, "max_num_seqs=128, time_scale=2");
    // Same settings, different fingerprints (a key the store dropped): the digits tell them.
    let mut twins = vec![
        row("aaaaaaaaaaaaaaaa", &[("sim.a", "1")]),
        row("bbbbbbbbbbbbbbbb", &[("sim.a", "1")]),
        row("cccccccccccccccc", &[("sim.a", "2")]),
    ];
    label_servers(&mut twins);
    let labels: Vec<&str> = twins.iter().map(|r| r.server_label.as_str()).collect();
    assert_eq!(labels, ["a=1 [aaaaaaaa]", "a=1 [bbbbbbbb]", "a=2"]);
    // One server left: no label.
    rows.truncate(1);
    label_servers(&mut rows);
    assert_eq!(rows[0].server_label, "");
}

/// A database written before the fingerprint (schema version 4, by the previous build:
/// `inferbench ingest tests/fixtures/sweep-h200`) opens after `migrate`, which adds version
/// 5 (and 6, GPU-seconds) only; its points keep their groups, read with no fingerprint; new points beside them
/// with one are a group of their own.
#[test]
fn a_version_4_database_migrates_and_keeps_its_groups() {
    let (mut store, _dir, _) = common::migrated_old("v4-sweep-h200.db", 4, &[5, 6, 7, 8]);
    let rows = store
        .points(&Filter::default(), &Default::default())
        .unwrap();
    let old = "dsr1 1024/1024 h200_sglang_fp8";
    assert_eq!(
        rows.iter()
            .map(|r| (r.conc, r.group(), r.server_fingerprint.as_str()))
            .collect::<Vec<_>>(),
        [(4, old.to_string(), ""), (16, old.to_string(), "")]
    );
    let f = store
        .frontier(
            &Filter::default(),
            &Default::default(),
            "median_intvty",
            "tput_per_gpu",
        )
        .unwrap();
    assert!(!f.is_empty());
    // A re-ingest of the same sweep by this build: same points, still without a fingerprint
    // (its summaries carry none), so nothing splits.
    let copy = common::fixture_copy();
    let rep = store
        .ingest_path(&copy.path().join("sweep-h200"), &IngestOptions::default())
        .unwrap();
    assert_eq!(rep.points, 2);
    let rows = store
        .points(&Filter::default(), &Default::default())
        .unwrap();
    assert!(rows.iter().all(|r| r.group() == old), "{:?}", groups(&rows));
}

/// A snapshot taken by the previous build (`db dump` of the version 4 database above) restores
/// into a version 5 database: the columns it lacks take their defaults, so its points have no
/// fingerprint and group as before.
#[test]
fn a_version_4_dump_restores() {
    let (mut store, _dir, _) = common::sqlite();
    let n = store
        .restore_file(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/old-schema/v4-sweep-h200.ibdump.zst"),
            false,
        )
        .unwrap();
    assert_eq!(n, 858);
    let rows = store
        .points(&Filter::default(), &Default::default())
        .unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| (r.conc, r.group(), r.server_fingerprint.as_str()))
            .collect::<Vec<_>>(),
        [
            (4, "dsr1 1024/1024 h200_sglang_fp8".to_string(), ""),
            (16, "dsr1 1024/1024 h200_sglang_fp8".to_string(), "")
        ]
    );
}

/// Issue 39 §12: readers of an older-schema SQLite file (`report`, `plot`, `compare`, `serve`)
/// said "run `inferbench db migrate`", which a read-only file cannot take. `open_existing`
/// reads a migrated in-memory copy instead, says so, and leaves the file byte for byte as it
/// was (here in a read-only directory, the file read-only too; as root those modes do not
/// bind, and the bytes are what is checked).
#[test]
fn older_schema_files_are_read_through_a_migrated_copy_without_writing_them() {
    use std::os::unix::fs::PermissionsExt as _;
    for (name, version) in [("v4-sweep-h200.db", 4), ("v5-sweep-h200.db", 5)] {
        let dir = tempfile::tempdir().unwrap();
        let ro = dir.path().join("ro");
        std::fs::create_dir(&ro).unwrap();
        let db = ro.join("old.db");
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/old-schema")
            .join(name);
        std::fs::copy(&src, &db).unwrap();
        let before = std::fs::read(&db).unwrap();
        std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        let url = db.display().to_string();
        for open in [Store::open_existing, Store::open_read_only] {
            let mut store = open(&url).unwrap();
            assert_eq!(
                store.migrated_copy_note().unwrap(),
                format!(
                    "inferbench: `{url}` has schema version {version} (this binary's is {}): \
                     reading a migrated copy in memory, the file is not changed; `inferbench db \
                     migrate --db {url}` upgrades it (where it is writable)",
                    inferbench_store::schema::latest_version()
                )
            );
            assert_eq!(
                store.schema_version().unwrap(),
                inferbench_store::schema::latest_version()
            );
            let rows = store
                .points(&Filter::default(), &Default::default())
                .unwrap();
            assert_eq!(
                rows.iter().map(|r| r.conc).collect::<Vec<_>>(),
                [4, 16],
                "{name}"
            );
        }
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(std::fs::read(&db).unwrap(), before, "{name} was written");
        // A current file is read as it is: no note.
        let mut cur = Store::open(&dir.path().join("new.db").display().to_string()).unwrap();
        cur.migrate().unwrap();
        drop(cur);
        let s = Store::open_existing(&dir.path().join("new.db").display().to_string()).unwrap();
        assert_eq!(s.migrated_copy_note(), None);
    }
}

/// Fresh tester of issue 39 §5, item 3: a failed point (a `bench --db` against a server whose
/// settings differ, e.g. one without the sim's `/metrics`, in the same batch and workload)
/// renamed the valid group by the settings its server differs on. A failed point measured
/// nothing: it takes no part in naming groups; listed with `include_failed`, it is named
/// apart, and the valid points keep their plain name.
#[test]
fn a_failed_point_renames_no_valid_group() {
    let (mut store, dir, _) = common::sqlite();
    let root = dir.path().join("results");
    for c in [1, 4] {
        point(&root, "b1", c, 1.0, Some(sim("32", "4")));
    }
    point(&root, "b1", 16, 1.0, Some(sim("256", "1")));
    // Its producer failed it (as `bench` fails a point whose server's `/metrics` it could
    // not read): the point is stored failed, in the same workload.
    let failed = root.join("b1/conc16/summary.json");
    let mut s: Value = serde_json::from_slice(&std::fs::read(&failed).unwrap()).unwrap();
    s["inferbench"]["failed_reason"] = json!("the server's /metrics could not be read");
    std::fs::write(&failed, serde_json::to_vec(&s).unwrap()).unwrap();
    store.ingest_path(&root.join("b1"), &opts(&[])).unwrap();
    let rows = store
        .points(&Filter::default(), &Default::default())
        .unwrap();
    let want: Vec<(String, i64, String)> = [1, 4]
        .iter()
        .map(|&c| ("b1".to_string(), c, BASE.to_string()))
        .collect();
    assert_eq!(groups(&rows), want);
    let all = Filter {
        include_failed: true,
        ..Filter::default()
    };
    let mut rows = store.points(&all, &Default::default()).unwrap();
    assert!(rows[2].error.is_some(), "{:?}", groups(&rows));
    let mut listed = want.clone();
    listed.push((
        "b1".into(),
        16,
        format!("{BASE} · max_num_seqs=256, time_scale=1"),
    ));
    assert_eq!(groups(&rows), listed);
    // The same among the rows themselves.
    label_servers(&mut rows);
    assert_eq!(groups(&rows[..2]), want);
}
