//! The dashboard says exactly what `report` says (issue 39 §5): on one database, with an
//! invalid point inside a valid batch, `inferbench serve`'s `/api/v1/history`, `/tco`,
//! `/compare` and `/points` give the numbers `report --history-at`, `compare --json` and
//! `report --frontier` print (one analysis behind both: `inferbench_views::analysis`); every
//! point carries its `invalid_reason`; and `serve`/`report` read a database in a directory
//! they cannot write (a read-only volume, another user's file).

mod common;

use common::{get_json as api, http_get_as};
use std::collections::BTreeMap;
use std::process::Command;

use inferbench_store::Store;
use serde_json::{json, Value};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_inferbench")
}

/// The reason the invalid point carries (as loadgen writes it).
const REASON: &str = "the server fell behind its schedule on 24 % of its token chunks";

/// Two batches of h100 (the first's conc-64 point invalid, the sim fallen behind: the only
/// point of its batch reaching x = 30) and one of h200, each point `(conc, median
/// interactivity in tok/s/user, tok/s/GPU, valid)`, in a new SQLite file at `db`. Runs and
/// points are the store's synthetic ones (llama3.1-8b 1024/1024, vllm fp8 TP1) with these
/// values. GPU-seconds (issue 43): h100's points recorded 10 × conc, but for the second
/// batch's conc 64 (none recorded, as an older point); h200's none.
fn seed(db: &str) {
    drop(seed_held(db));
}

/// [`seed`], its store still open (its rows not yet checkpointed out of the `-wal`).
fn seed_held(db: &str) -> Store {
    let mut s = Store::open(db).unwrap();
    s.migrate().unwrap();
    type Points = [(i64, f64, f64, bool); 3];
    let batches: [(&str, &str, &str, Points); 3] = [
        (
            "h100-a",
            "2026-12-01",
            "h100",
            [
                (4, 100.0, 1000.0, true),
                (16, 60.0, 3000.0, true),
                (64, 20.0, 12323.0, false),
            ],
        ),
        (
            "h100-b",
            "2026-12-02",
            "h100",
            [
                (4, 110.0, 1100.0, true),
                (16, 70.0, 3200.0, true),
                (64, 25.0, 9000.0, true),
            ],
        ),
        (
            "h200-a",
            "2026-12-01",
            "h200",
            [
                (4, 100.0, 1500.0, true),
                (16, 50.0, 4000.0, true),
                (64, 15.0, 8000.0, true),
            ],
        ),
    ];
    for (batch, date, hw, points) in batches {
        let mut run = inferbench_store::synthetic::run(0, "llama3.1-8b", 1024, 1024);
        let template = run.points[0].clone();
        (run.run_key, run.batch, run.date) = (format!("parity-{batch}"), batch.into(), date.into());
        run.points = (points.iter())
            .map(|&(conc, x, y, valid)| {
                let mut p = template.clone();
                p.config.hardware = hw.into();
                p.config.image = String::new();
                (p.conc, p.date, p.valid) = (conc, date.into(), valid);
                p.invalid_reason = (!valid).then(|| REASON.to_string());
                p.gpu_seconds = (hw == "h100" && (batch == "h100-a" || conc < 64))
                    .then_some(10.0 * conc as f64);
                p.metrics = BTreeMap::from([
                    ("median_intvty".to_string(), x),
                    ("tput_per_gpu".to_string(), y),
                ]);
                p
            })
            .collect();
        s.ingest_run(&run).unwrap();
    }
    s
}

/// The CLI's stdout as JSON (the command must succeed, or exit 1 for a regression).
fn cli_json(args: &[&str]) -> Value {
    let o = Command::new(bin()).args(args).output().unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        common::output_text(&o)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// What `/api/v1/history` answers, flattened as `report --history-at --format json` prints it:
/// `(group, batch, value, baseline, change, regression)` per value.
fn api_history_rows(v: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for g in v["groups"].as_array().unwrap() {
        for p in g["points"].as_array().unwrap() {
            out.push(json!([
                g["name"],
                p["batch"],
                p["value"],
                p["baseline"],
                p["change"],
                p["regression"]
            ]));
        }
    }
    out.sort_by_key(|r| r.to_string());
    out
}

fn cli_history_rows(v: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = (v.as_array().unwrap().iter())
        .map(|p| {
            json!([
                p["group"],
                p["batch"],
                p["value"],
                p["baseline"],
                p["change"],
                p["regression"]
            ])
        })
        .collect();
    out.sort_by_key(|r| r.to_string());
    out
}

#[test]
fn every_view_of_the_api_equals_the_cli_with_an_invalid_point_in_a_valid_batch() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db").display().to_string();
    seed(&db);
    let common::Serving {
        mut child,
        addr,
        rest,
        ..
    } = common::start_serve(Command::new(bin()).args(["serve", "--db", &db, "--port", "0"]));

    // History at x = 30: h100's first batch reaches 30 only through its invalid point, so it
    // has no value there; its second batch (9000 at 25 … 3200 at 70) does.
    for (q, flag) in [
        ("", None),
        ("&include_invalid=true", Some("--include-invalid")),
    ] {
        let v = api(&addr, &format!("/api/v1/history?at=30{q}"));
        let mut args = vec![
            "report",
            "--db",
            &db,
            "--history-at",
            "30",
            "--format",
            "json",
        ];
        args.extend(flag);
        let cli = cli_json(&args);
        assert_eq!(api_history_rows(&v), cli_history_rows(&cli), "{q}");
    }
    let v = api(&addr, "/api/v1/history?at=30");
    let h100 = &v["groups"][0];
    assert_eq!(h100["name"], "llama3.1-8b 1024/1024 h100_vllm_fp8");
    assert_eq!(
        (h100["points"].as_array().unwrap().len(), &h100["invalid"]),
        (1, &json!(1))
    );
    // The x range spans valid points only (15 … 110, not the invalid point's 20 alone).
    assert_eq!(v["x_range"], json!([15.0, 110.0]));
    assert_eq!(v["default_at"], json!(35.0));
    // Counted, the invalid point is the first batch's value at x = 30 (the frontier through
    // 12,323 at 20 and 3,000 at 60).
    let all = api(&addr, "/api/v1/history?at=30&include_invalid=true");
    assert_eq!(all["groups"][0]["points"].as_array().unwrap().len(), 2);

    // TCO at x = 30: each group's bar is the mean of its batches' history values, exactly.
    for q in ["", "&include_invalid=true"] {
        let t = api(&addr, &format!("/api/v1/tco?at=30{q}"));
        let h = api(&addr, &format!("/api/v1/history?at=30{q}"));
        for bar in t["bars"].as_array().unwrap() {
            let g = (h["groups"].as_array().unwrap().iter())
                .find(|g| g["name"] == bar["group"])
                .unwrap();
            let vals: Vec<f64> = (g["points"].as_array().unwrap().iter())
                .map(|p| p["value"].as_f64().unwrap())
                .collect();
            assert_eq!(bar["batches"], json!(vals.len()), "{q}");
            assert_eq!(
                bar["value"].as_f64().unwrap(),
                vals.iter().sum::<f64>() / vals.len() as f64,
                "{q}"
            );
        }
    }
    let t = api(&addr, "/api/v1/tco?at=22");
    // At 22 only h100's invalid point (20) and h200 (15) reach: h100 is unreached.
    assert_eq!(
        t["unreached"],
        json!(["llama3.1-8b 1024/1024 h100_vllm_fp8"])
    );
    assert_eq!(t["bars"].as_array().unwrap().len(), 1);

    // Compare at x = 30 and the default targets: the CLI's rows, and the same counts.
    for (at, cli_at) in [("&at=30", vec!["--at", "30"]), ("", vec![])] {
        for (q, flag) in [
            ("", None),
            ("&include_invalid=true", Some("--include-invalid")),
        ] {
            let v = api(
                &addr,
                &format!("/api/v1/compare?a=hw%3Dh100&b=hw%3Dh200{at}{q}"),
            );
            let mut args = vec!["compare", "hw=h100", "hw=h200", "--db", &db, "--json"];
            args.extend(cli_at.iter().copied());
            args.extend(flag);
            assert_eq!(v["rows"], cli_json(&args), "{at}{q}");
        }
    }
    let v = api(&addr, "/api/v1/compare?a=hw%3Dh100&b=hw%3Dh200&at=30");
    assert_eq!(
        (&v["rows"][0]["n_a"], &v["count_a"], &v["invalid_a"]),
        (&json!(1), &json!(5), &json!(1))
    );

    // Frontiers: the points the API marks are those `report --frontier` lists.
    let key = |p: &Value| format!("{} {} {}", p["hardware"], p["conc"], p["batch"]);
    for (q, flag) in [
        ("", None),
        ("&include_invalid=true", Some("--include-invalid")),
    ] {
        let v = api(&addr, &format!("/api/v1/points?frontier_only=true{q}"));
        let mut api_keys: Vec<String> = v["points"].as_array().unwrap().iter().map(key).collect();
        let mut args = vec![
            "report",
            "--db",
            &db,
            "--frontier",
            "--format",
            "json",
            "--columns",
            "hardware,conc,batch",
        ];
        args.extend(flag);
        let mut cli_keys: Vec<String> = cli_json(&args)
            .as_array()
            .unwrap()
            .iter()
            .map(key)
            .collect();
        api_keys.sort();
        cli_keys.sort();
        assert_eq!(api_keys, cli_keys, "{q}");
    }

    // Why a point is invalid, in the API as in `report --columns conc,error,invalid_reason`.
    let v = api(&addr, "/api/v1/points?hw=h100");
    let reasons: Vec<(i64, Value)> = (v["points"].as_array().unwrap().iter())
        .map(|p| (p["conc"].as_i64().unwrap(), p["invalid_reason"].clone()))
        .filter(|(_, r)| !r.is_null())
        .collect();
    assert_eq!(reasons, [(64, json!(REASON))]);
    let cli = cli_json(&[
        "report",
        "--db",
        &db,
        "-f",
        "hw=h100",
        "--format",
        "json",
        "--columns",
        "conc,error,invalid_reason",
    ]);
    let cli_reasons: Vec<(i64, Value)> = (cli.as_array().unwrap().iter())
        .map(|p| (p["conc"].as_i64().unwrap(), p["invalid_reason"].clone()))
        .filter(|(_, r)| !r.is_null())
        .collect();
    assert_eq!(cli_reasons, reasons);
    // One status (issue 39's leftovers, 4): the same key and values in the API's points and
    // every `report --format json` row, whatever the columns, and as a column.
    let status = |rows: &[Value]| -> Vec<(i64, Value, Value)> {
        let mut v: Vec<(i64, Value, Value)> = rows
            .iter()
            .map(|p| {
                (
                    p["conc"].as_i64().unwrap(),
                    p["status"].clone(),
                    p["valid"].clone(),
                )
            })
            .collect();
        v.sort_by_key(|t| (t.0, t.1.to_string()));
        v
    };
    let api_status = status(v["points"].as_array().unwrap());
    assert!(
        api_status.contains(&(64, json!("invalid"), json!(false)))
            && api_status.iter().any(|t| t.1 == json!("ok")),
        "{api_status:?}"
    );
    assert_eq!(status(cli.as_array().unwrap()), api_status);
    let cli = cli_json(&[
        "report",
        "--db",
        &db,
        "-f",
        "hw=h100",
        "--format",
        "json",
        "--columns",
        "conc,status",
    ]);
    assert_eq!(status(cli.as_array().unwrap()), api_status);

    common::signal(child.id(), "TERM");
    child.wait().unwrap();
    rest.join().unwrap();
}

/// GPU-seconds per group (issue 43) are one figure in `report --format json` (each row's
/// `group_gpu_seconds`), `/api/v1/history` and `/api/v1/tco` (each group's `gpu_seconds`),
/// whatever the points' validity: h100 = 40 + 160 + 640 (the invalid point held its GPUs
/// too) plus 40 + 160, one point unknown; h200 none (null, no key in the CLI's rows). The table says
/// it in its footer.
#[test]
fn gpu_seconds_per_group_are_the_same_in_report_and_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db").display().to_string();
    seed(&db);
    let common::Serving {
        mut child,
        addr,
        rest,
        ..
    } = common::start_serve(Command::new(bin()).args(["serve", "--db", &db, "--port", "0"]));
    let h100 = "llama3.1-8b 1024/1024 h100_vllm_fp8";
    let h200 = "llama3.1-8b 1024/1024 h200_vllm_fp8";
    let cli = cli_json(&["report", "--db", &db, "--format", "json"]);
    let mut from_cli: BTreeMap<String, Value> = BTreeMap::new();
    for r in cli.as_array().unwrap() {
        if let Some(g) = r["group"].as_str() {
            let prev = from_cli.insert(g.to_string(), r["group_gpu_seconds"].clone());
            assert!(prev.is_none_or(|p| p == r["group_gpu_seconds"]), "{r}");
        }
    }
    assert_eq!(
        from_cli,
        BTreeMap::from([(h100.to_string(), json!(1040.0))])
    );
    let expected = json!([[h100, 1040.0, 1], [h200, null, 3]]);
    let h = api(&addr, "/api/v1/history?at=30");
    let of = |groups: &Value| -> Value {
        (groups.as_array().unwrap().iter())
            .map(|g| json!([g["name"], g["gpu_seconds"], g["gpu_seconds_unknown"]]))
            .collect()
    };
    assert_eq!(of(&h["groups"]), expected);
    let t = api(&addr, "/api/v1/tco?at=30");
    assert_eq!(of(&t["groups"]), expected);
    let bars: Vec<(Value, Value)> = (t["bars"].as_array().unwrap().iter())
        .map(|b| (b["group"].clone(), b["gpu_seconds"].clone()))
        .collect();
    assert!(bars.contains(&(json!(h100), json!(1040.0))), "{bars:?}");
    // The frontier view counts every selected point, not the frontier's alone.
    let front = cli_json(&["report", "--db", &db, "--frontier", "--format", "json"]);
    let first_h100 = (front.as_array().unwrap().iter())
        .find(|r| r["group"] == h100)
        .unwrap();
    assert_eq!(first_h100["group_gpu_seconds"], json!(1040.0));
    let o = Command::new(bin())
        .args(["report", "--db", &db])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains(&format!(
            "  {h100}: 1040 GPU-s (0.289 GPU-h) over 5 points; 1 point without a record, not \
             counted\n  {h200}: unknown (3 points without a record)\n"
        )),
        "{table}"
    );
    common::signal(child.id(), "TERM");
    child.wait().unwrap();
    rest.join().unwrap();
}

/// `program` with `args` as a user whom directory permissions bind: this user when it is not
/// root, else `nobody` through `setpriv` (root ignores them); `None` after a skip line where
/// that is impossible.
fn unprivileged(program: &str, args: &[&str]) -> Option<Command> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        let mut c = Command::new(program);
        c.args(args);
        return Some(c);
    }
    // 65534: `nobody`/`nogroup` (or `nobody`) by number, whatever the distribution names them.
    let drop = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"];
    let works = inferbench_testutil::command_works(
        "setpriv",
        &[&drop[..], &["true"]].concat(),
        "setpriv dropping root to uid/gid 65534 (nobody)",
        "util-linux's setpriv: the test runs as root, which ignores directory permissions",
    );
    works.then(|| {
        let mut c = Command::new("setpriv");
        c.args(drop).arg(program).args(args);
        c
    })
}

/// `serve` and `report` read a database in a directory they cannot write (no `-shm` can be
/// created beside it), as another user on a read-only directory: the answers are those of the
/// writable copy, and nothing is created there (issue 39: "attempt to write a readonly
/// database").
#[test]
fn serve_and_report_read_a_database_in_a_directory_they_cannot_write() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let perm = |p: &std::path::Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    perm(dir.path(), 0o755);
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let db = ro.join("p.db").display().to_string();
    seed(&db);
    let want = cli_json(&[
        "report",
        "--db",
        &db,
        "--format",
        "json",
        "--columns",
        "conc,hardware",
    ]);
    assert_eq!(want.as_array().unwrap().len(), 9);
    // A cleanly closed WAL database: the main file alone.
    let files = |d: &std::path::Path| -> Vec<String> {
        let mut v: Vec<String> = (std::fs::read_dir(d).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    // A read-only reader leaves an empty log and its index behind (it may not checkpoint):
    // the directory as the reader above left it, then as the last writer leaves it (the main
    // file alone).
    perm(std::path::Path::new(&db), 0o444);
    let args = [
        "report",
        "--db",
        &db,
        "--format",
        "json",
        "--columns",
        "conc,hardware",
    ];
    for leftovers in [true, false] {
        if !leftovers {
            for f in [format!("{db}-wal"), format!("{db}-shm")] {
                if std::path::Path::new(&f).exists() {
                    assert_eq!(
                        std::fs::metadata(&f).unwrap().len() == 0,
                        f.ends_with("-wal")
                    );
                    std::fs::remove_file(f).unwrap();
                }
            }
        }
        perm(&ro, 0o555);
        let Some(mut report) = unprivileged(bin(), &args) else {
            return;
        };
        let o = report.output().unwrap();
        assert!(
            o.status.success(),
            "{leftovers}: {}",
            common::output_text(&o)
        );
        assert_eq!(serde_json::from_slice::<Value>(&o.stdout).unwrap(), want);
        perm(&ro, 0o755);
    }
    assert_eq!(files(&ro), ["p.db"]);
    perm(&ro, 0o555);

    let serve_args = ["serve", "--db", &db, "--port", "0"];
    let mut cmd = unprivileged(bin(), &serve_args).unwrap();
    let common::Serving {
        mut child,
        addr,
        rest,
        first,
    } = common::start_serve(&mut cmd);
    assert!(first.contains("read-only at http://"), "{first}");
    let v = api(&addr, "/api/v1/history?at=30");
    assert_eq!(v["groups"].as_array().unwrap().len(), 2, "{v}");
    let v = api(&addr, "/api/v1/points");
    assert_eq!(v["count"], json!(9), "{v}");
    common::signal(child.id(), "TERM");
    child.wait().unwrap();
    rest.join().unwrap();
    assert_eq!(files(&ro), ["p.db"]);
    perm(&ro, 0o755);
}

/// Issue 39, a fresh tester's finding 5: a read-only WAL database whose `-wal` holds changes
/// not yet in its main file, with no `-shm`, in a read-only folder, as an unprivileged user
/// (`nobody`): refused with exit 2 before. `report` now reads a private copy of the file and
/// its log (one notice line naming it): the same rows as the database once checkpointed,
/// nothing created in the folder, the copy removed at exit. Here every row is in the log (the
/// main file holds none), so a reader that missed the log would find no runs.
#[test]
fn report_reads_a_pending_wal_in_a_read_only_folder_through_a_private_copy() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let perm = |p: &std::path::Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    perm(dir.path(), 0o755);
    let (w, ro) = (dir.path().join("w"), dir.path().join("ro"));
    std::fs::create_dir(&w).unwrap();
    std::fs::create_dir(&ro).unwrap();
    let wdb = w.join("p.db").display().to_string();
    // The writer still open: its rows are in the log (a checkpoint comes at its close), which
    // is copied with the file.
    let hold = seed_held(&wdb);
    let wal_len = std::fs::metadata(format!("{wdb}-wal")).unwrap().len();
    assert!(wal_len > 0);
    let db = ro.join("p.db").display().to_string();
    std::fs::copy(&wdb, &db).unwrap();
    std::fs::copy(format!("{wdb}-wal"), format!("{db}-wal")).unwrap();
    drop(hold);
    let args = [
        "report",
        "--db",
        &db,
        "--format",
        "json",
        "--columns",
        "conc,hardware",
    ];
    let mut wargs = args;
    wargs[2] = &wdb;
    let want = cli_json(&wargs);
    assert_eq!(want.as_array().unwrap().len(), 9);
    for f in [&db, &format!("{db}-wal")] {
        perm(std::path::Path::new(f), 0o444);
    }
    perm(&ro, 0o555);
    // A private temporary directory, to see the copy go.
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    perm(&tmp, 0o777);
    let Some(mut report) = unprivileged(bin(), &args) else {
        perm(&ro, 0o755);
        return;
    };
    let o = report.env("TMPDIR", &tmp).output().unwrap();
    perm(&ro, 0o755);
    assert_eq!(o.status.code(), Some(0), "{}", common::output_text(&o));
    assert_eq!(serde_json::from_slice::<Value>(&o.stdout).unwrap(), want);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        err,
        format!(
            "inferbench: {db}'s write-ahead log holds {wal_len} bytes not yet in its main file \
             and its folder cannot be written here: reading a private copy ({} bytes, removed \
             at exit) as of now\n",
            std::fs::metadata(&db).unwrap().len() + wal_len
        )
    );
    let mut left: Vec<_> = std::fs::read_dir(&ro)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["p.db", "p.db-wal"]);
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "the copy was left"
    );
}

/// Issue 39, exposure: on loopback the dashboard answers only requests for a loopback name
/// (DNS rebinding: a page of `evil.example` re-pointed at 127.0.0.1 gets 403); on another
/// address it answers any, and its warning says that stored paths and host names are served,
/// which `--redact` hides.
#[test]
fn serve_checks_host_on_loopback_and_says_what_it_exposes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.db").display().to_string();
    seed(&db);
    let common::Serving {
        mut child,
        addr,
        rest,
        ..
    } = common::start_serve(Command::new(bin()).args(["serve", "--db", &db, "--port", "0"]));
    let port = addr.rsplit(':').next().unwrap().to_string();
    let (status, body) = http_get_as(&addr, "evil.example:80", "/api/v1/options");
    assert_eq!(status, "HTTP/1.1 403 Forbidden", "{body}");
    assert!(body.contains("DNS rebinding"), "{body}");
    for host in [format!("localhost:{port}"), addr.clone()] {
        assert_eq!(http_get_as(&addr, &host, "/inference").0, "HTTP/1.1 200 OK");
    }
    common::signal(child.id(), "TERM");
    child.wait().unwrap();
    assert!(!rest.join().unwrap().contains("warning"));

    for redact in [false, true] {
        let mut args = vec!["serve", "--db", &db, "--port", "0", "--bind", "0.0.0.0"];
        if redact {
            args.push("--redact");
        }
        let common::Serving {
            mut child,
            addr,
            rest,
            ..
        } = common::start_serve(Command::new(bin()).args(&args));
        let local = format!("127.0.0.1:{}", addr.rsplit(':').next().unwrap());
        let (status, _) = http_get_as(&local, "evil.example:80", "/api/v1/options");
        assert_eq!(status, "HTTP/1.1 200 OK");
        common::signal(child.id(), "TERM");
        child.wait().unwrap();
        let said = rest.join().unwrap();
        let want = if redact {
            "can read every stored result (absolute paths and host names hidden: --redact)"
        } else {
            "including the absolute paths (result directories, job.json's output and model \
             paths) and the host names stored with the runs; --redact hides them"
        };
        assert!(said.starts_with("warning: listening on 0.0.0.0"), "{said}");
        assert!(said.contains(want), "{said}");
    }
}

/// Fresh tester of issue 39 §5, items 1, 5 and 6, on a database of agentic points only (two
/// batches, each point's median interactivity 10 × its North-Star x, so the two scales never
/// agree): `/api/v1/history` and `/api/v1/tco` read the North-Star x as `report --history-at`
/// does (they read `median_intvty` and said "doesn't reach 110"); `--history-at auto` is
/// accepted and reads where the API's `at=auto` reads; and a compare pooling workloads and
/// servers is refused with one message by both.
#[test]
fn an_agentic_database_reads_the_north_star_x_in_report_and_the_api() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.db").display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    // (conc, North-Star x in tok/s/user, tok/s/GPU) per batch.
    type Points = [(i64, f64, f64); 3];
    let batches: [(&str, Points); 2] = [
        (
            "ag-1",
            [(4, 200.0, 1000.0), (16, 120.0, 4000.0), (64, 40.0, 9000.0)],
        ),
        (
            "ag-2",
            [(4, 210.0, 1100.0), (16, 100.0, 5000.0), (64, 30.0, 9500.0)],
        ),
    ];
    for (i, (batch, points)) in batches.iter().enumerate() {
        let mut run = inferbench_store::synthetic::run(0, "dsr1", 0, 0);
        let template = run.points[0].clone();
        let date = format!("2026-12-0{}", i + 1);
        (run.run_key, run.batch, run.date) =
            (format!("ag-{batch}"), batch.to_string(), date.clone());
        run.points = (points.iter())
            .map(|&(conc, ns, y)| {
                let mut p = template.clone();
                p.config.scenario = "agentic-coding".into();
                p.config.hardware = "h100".into();
                (p.conc, p.date) = (conc, date.clone());
                p.metrics = BTreeMap::from([
                    ("p90_e2e_norm_intvty".to_string(), ns),
                    ("median_intvty".to_string(), ns * 10.0),
                    ("tput_per_gpu".to_string(), y),
                ]);
                p
            })
            .collect();
        s.ingest_run(&run).unwrap();
    }
    drop(s);
    let common::Serving {
        mut child,
        addr,
        rest,
        ..
    } = common::start_serve(Command::new(bin()).args(["serve", "--db", &db, "--port", "0"]));
    let history = |at: &str| {
        cli_json(&[
            "report",
            "--db",
            &db,
            "--history-at",
            at,
            "--format",
            "json",
        ])
    };
    let v = api(&addr, "/api/v1/history?at=110");
    assert_eq!(v["x"], json!("p90_e2e_norm_intvty"));
    assert_eq!(v["x_range"], json!([30.0, 210.0]));
    let cli = history("110");
    assert_eq!(api_history_rows(&v), cli_history_rows(&cli));
    // ag-1 between (120, 4000) and (40, 9000), ag-2 between (210, 1100) and (100, 5000).
    let values: Vec<f64> = (cli.as_array().unwrap().iter())
        .map(|p| p["value"].as_f64().unwrap())
        .collect();
    assert_eq!(values.len(), 2, "{cli}");
    // TCO's bar is the mean of the same two values, along the same x.
    let t = api(&addr, "/api/v1/tco?at=110");
    assert_eq!(t["x"], json!("p90_e2e_norm_intvty"));
    assert_eq!(t["unreached"], json!([]));
    assert_eq!(
        t["bars"][0]["value"].as_f64().unwrap(),
        (values[0] + values[1]) / 2.0
    );
    // `auto`: 35 lies inside 30 … 210; the CLI reads there too.
    let auto = api(&addr, "/api/v1/history?at=auto");
    assert_eq!(
        (&auto["at"], &auto["default_at"]),
        (&json!(35.0), &json!(35.0))
    );
    assert_eq!(api_history_rows(&auto), cli_history_rows(&history("auto")));
    assert_eq!(
        cli_history_rows(&history("auto")),
        cli_history_rows(&history("35"))
    );
    assert_eq!(api(&addr, "/api/v1/tco?at=auto")["at"], json!(35.0));
    // A bad `at` says the same in both.
    let o = Command::new(bin())
        .args(["report", "--db", &db, "--history-at", "abc"])
        .output()
        .unwrap();
    let said = common::output_text(&o);
    let want = inferbench_views::analysis::AUTO_AT_HELP;
    assert!(said.contains(want), "{said}");
    let (status, body) = common::http_get(&addr, "/api/v1/history?at=abc");
    assert_eq!(status, "HTTP/1.1 400 Bad Request", "{body}");
    assert!(
        body.contains(&format!(
            "`at=abc`: expected a number (the x, in its unit) or {want}"
        )),
        "{body}"
    );
    // Compare: the North-Star x by default in both.
    let v = api(
        &addr,
        "/api/v1/compare?a=batch%3Dag-1&b=batch%3Dag-2&at=110",
    );
    let cli = cli_json(&[
        "compare",
        "batch=ag-1",
        "batch=ag-2",
        "--db",
        &db,
        "--json",
        "--at",
        "110",
    ]);
    assert_eq!(v["x"], json!("p90_e2e_norm_intvty"));
    assert_eq!(v["rows"], cli);
    assert_eq!(v["rows"][0]["n_a"], json!(1));

    common::signal(child.id(), "TERM");
    child.wait().unwrap();
    rest.join().unwrap();
}
