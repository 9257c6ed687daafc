//! `inferbench ingest|report|plot|compare|db` end to end on the store's fixtures, against SQLite
//! and (when `INFERBENCH_TEST_PG_URL` is set) PostgreSQL, plus kill -9 during ingest.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use inferbench_store::Store;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_inferbench")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures")
}

/// A fresh directory under the system temp dir, removed on drop.
struct Tmp(PathBuf);
impl Tmp {
    fn new(tag: &str) -> Tmp {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let p =
            std::env::temp_dir().join(format!("ib-store-cli-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).unwrap();
        Tmp(p)
    }
}
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env_remove("INFERBENCH_DB")
        .output()
        .unwrap()
}

/// A fresh directory tagged `tag` and a SQLite database in it holding the `sweep-h200`
/// fixture (points conc4 and conc16; conc64 never finished).
fn sweep_h200_db(tag: &str) -> (Tmp, PathBuf) {
    let t = Tmp::new(tag);
    let db = t.0.join("h200.db");
    stdout_ok(&[
        "ingest",
        fixtures().join("sweep-h200").to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    (t, db)
}

fn stdout_ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn pg_url(tag: &str) -> Option<String> {
    let base = inferbench_testutil::env_or_skip(
        "INFERBENCH_TEST_PG_URL",
        "run scripts/setup/postgres.sh",
    )?;
    let sep = if base.contains('?') { '&' } else { '?' };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    Some(format!(
        "{base}{sep}schema=cli_{tag}_{}_{nanos}",
        std::process::id()
    ))
}

/// The report outputs compared across backends.
fn reports(db: &str) -> Vec<String> {
    let mut v = Vec::new();
    for args in [
        vec!["report", "--db", db],
        vec!["report", "--db", db, "--frontier", "--format", "csv"],
        vec!["report", "--db", db, "--format", "json", "--gpu-hour-cost", "2.5", "--gpu-kw", "1.5",
             "--columns", "hardware,conc,tput_per_gpu,usd_per_m_custom,tok_s_per_mw,j_per_token,p90_e2e_norm_intvty,avg_power_w"],
        vec!["report", "--db", db, "-f", "model=dsr1", "--x", "median_e2el", "--y", "usd_per_m_rental", "--frontier"],
        vec!["compare", "hw=b200", "hw=mi355x", "--db", db, "-f", "model=dsr1"],
        vec!["report", "--db", db, "-f", "hw=h200", "--format", "csv", "--columns",
             "hardware,conc,p99.9_ttft,std_tpot,inferbench.ttfo.median,inferbench.warmups,request_throughput"],
    ] {
        v.push(stdout_ok(&args));
    }
    v
}

#[test]
fn store_cli_sqlite_and_postgres_reports_identical() {
    let t = Tmp::new("ident");
    let db = t.0.join("a.db").display().to_string();
    let fx = fixtures().display().to_string();
    let o = run(&["ingest", &fx, "--db", &db]);
    // The corrupt fixture is skipped → exit 1, everything else stored; the skip is an error
    // line on stderr (trial 16: on stdout, unprefixed).
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!text.contains("skipped"), "{text}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("error: skipped ") && l.contains("corrupt")),
        "{err}"
    );
    assert!(text.contains("from 7 source(s)"), "{text}");
    assert!(text.contains("hardware: tpu-v9"), "{text}");
    let lite = reports(&db);
    // Pinned: the frontier CSV of the H200 sweep (exact values from the fixtures).
    let csv = stdout_ok(&["report", "--db", &db, "-f", "hw=h200", "--format", "csv", "--columns",
        "hardware,parallelism,conc,tput_per_gpu,median_intvty,avg_power_w,joules_per_total_token,usd_per_m_hyperscaler"]);
    assert_eq!(
        csv,
        "hardware,parallelism,conc,tput_per_gpu,median_intvty,avg_power_w,joules_per_total_token,usd_per_m_hyperscaler\n\
         h200,TP8,4,102.4,105.26315789473684,503.5,4.9169921875,3.824869791666666\n\
         h200,TP8,16,407.04,52.63157894736842,,,0.962231394129979\n"
    );
    assert!(
        lite[4].contains("   80.0   1140    2  945.0    2  1.206  [0.490, 2.973]\n"),
        "{}",
        lite[4]
    );
    // Every stored metric is reachable by name (metrics JSON), extras included (ms → s).
    assert_eq!(
        lite[5],
        "hardware,conc,p99.9_ttft,std_tpot,inferbench.ttfo.median,inferbench.warmups,request_throughput\n\
         h200,4,0.19,0.001,0.111,8,0.4\n\
         h200,16,0.19,0.001,,,1.59\n"
    );
    if let Some(url) = pg_url("ident") {
        let o = run(&["ingest", &fx, "--db", &url]);
        assert_eq!(
            o.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let pg = reports(&url);
        for (a, b) in lite.iter().zip(pg.iter()) {
            assert_eq!(a, b);
        }
    }
}

#[test]
fn store_cli_plot_png_and_svg() {
    let t = Tmp::new("plot");
    let db = t.0.join("p.db").display().to_string();
    run(&[
        "ingest",
        &fixtures().join("imports").display().to_string(),
        "--db",
        &db,
    ]);
    let png = t.0.join("c.png");
    let svg = t.0.join("c.svg");
    stdout_ok(&[
        "plot",
        "--db",
        &db,
        "-f",
        "model=dsr1",
        "-o",
        png.to_str().unwrap(),
    ]);
    stdout_ok(&[
        "plot",
        "--db",
        &db,
        "-f",
        "model=dsr1",
        "--y",
        "usd_per_m_rental",
        "-o",
        svg.to_str().unwrap(),
    ]);
    let p = std::fs::read(&png).unwrap();
    assert_eq!(&p[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(u32::from_be_bytes(p[16..20].try_into().unwrap()), 1200);
    assert_eq!(u32::from_be_bytes(p[20..24].try_into().unwrap()), 800);
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg"));
    assert!(s.contains("dsr1 1024/1024 b200_sglang_fp4"), "legend");
    assert!(
        s.contains("Interactivity, median (tok/s/user)"),
        "x axis title"
    );
    assert!(
        s.contains("Cost per million total (input + output) tokens, rental ($/M tokens)"),
        "y axis title"
    );
    let bad = run(&[
        "plot",
        "--db",
        &db,
        "-o",
        t.0.join("c.gif").to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
    // A filter that matches nothing is named with the closest stored value, as `report` names
    // it (trial 22: `plot -f hw=h1000` gave no suggestion).
    let svg = t.0.join("none.svg").display().to_string();
    let o = run(&["plot", "--db", &db, "-f", "hw=b2000", "-o", &svg]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            " matches -f hw=b2000 (`inferbench report` without them lists every point)\n  \
             `-f hw=b2000`: no stored point has hardware=b2000; did you mean b200? (stored: "
        ),
        "{err}"
    );
}

#[test]
fn store_cli_dump_restore_round_trip() {
    let t = Tmp::new("dump");
    let db = t.0.join("d.db").display().to_string();
    run(&["ingest", &fixtures().display().to_string(), "--db", &db]);
    let snaps = t.0.join("snaps");
    let said = stdout_ok(&["db", "dump", "--db", &db, "-o", snaps.to_str().unwrap()]);
    let file = std::fs::read_dir(&snaps)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".ibdump.zst"))
        .unwrap();
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    assert!(
        name.starts_with("inferbench-")
            && name.len() == "inferbench-20260101T000000Z.ibdump.zst".len()
    );
    // sha256sum -c compatible.
    let sums = std::fs::read_to_string(snaps.join("SHA256SUMS")).unwrap();
    assert!(sums.ends_with(&format!("  {name}\n")));
    // What it says labels each number (trial 21: a bare `HASH  PATH` first line).
    let hash = sums
        .lines()
        .last()
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap();
    let rows = said
        .split_once(": ")
        .and_then(|(_, r)| r.split_once(' '))
        .map(|(n, _)| n.parse::<u64>().unwrap())
        .unwrap();
    assert!(rows > 0, "{said}");
    assert_eq!(
        said,
        format!(
            "wrote {}: {rows} rows of 11 tables\nsha256 {hash} (added to {}/SHA256SUMS; `db \
             restore` checks it, as does `sha256sum -c SHA256SUMS` in that directory)\n",
            file.display(),
            snaps.display()
        )
    );
    let db2 = t.0.join("r.db").display().to_string();
    let said = stdout_ok(&["db", "restore", "--db", &db2, file.to_str().unwrap()]);
    // Trial 19: it names the database it restored into.
    assert!(
        said.starts_with("restored ") && said.ends_with(&format!(" into {db2}\n")),
        "{said}"
    );
    assert_eq!(reports(&db), reports(&db2));
    // Into a database that has rows: refused, naming it (trial 20).
    let o = run(&["db", "restore", "--db", &db2, file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    // … and said as the database's fault, not the dump's (trial 24: "not a readable
    // inferbench dump: database … is not empty").
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "error: database {db2} is not empty (table runs has rows); restore needs an empty \
             database (give another --db)\n"
        )
    );
    // Trial 18: failing dumps and restores leave no database file behind, and a missing
    // SHA256SUMS is named with its path and the way past it.
    let missing = t.0.join("missing.db").display().to_string();
    let o = run(&[
        "db",
        "dump",
        "--db",
        &missing,
        "-o",
        snaps.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!Path::new(&missing).exists());
    let o = run(&["db", "restore", "--db", &missing, "nothere.ibdump.zst"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!Path::new(&missing).exists());
    let bare = t.0.join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    std::fs::copy(&file, bare.join(&name)).unwrap();
    let o = run(&[
        "db",
        "restore",
        "--db",
        &missing,
        bare.join(&name).to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!(
            "no {} beside it to verify its checksum against (`db dump` writes one); \
             --no-verify restores it unverified",
            bare.join("SHA256SUMS").display()
        )),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!Path::new(&missing).exists());
    // Re-ingest: the database (dump) is unchanged.
    let before = Store::open(&db).unwrap().dump_bytes().unwrap().0;
    run(&["ingest", &fixtures().display().to_string(), "--db", &db]);
    assert!(before == Store::open(&db).unwrap().dump_bytes().unwrap().0);
}

/// Writes `n` artifact directories of one sweep, each with `records` request records.
fn big_sweep(root: &Path, n: usize, records: usize) {
    let summary =
        std::fs::read_to_string(fixtures().join("sweep-h200/conc4/summary.json")).unwrap();
    let agg_name = "agg_dsr1_1k1k_fp8_sglang_tp8-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc4_h200-nv_0.json";
    let agg = std::fs::read_to_string(fixtures().join("sweep-h200/conc4").join(agg_name)).unwrap();
    let mut jsonl = String::new();
    for i in 0..records {
        jsonl.push_str(&format!(
            "{{\"request_id\":{i},\"phase\":\"profile\",\"success\":true,\"scheduled_ns\":0,\"sent_ns\":{i},\"first_token_ns\":{},\"last_token_ns\":{},\"end_ns\":{},\"chunks\":[{{\"t_ns\":{},\"channel\":\"content\"}}],\"prompt_tokens\":1024,\"prompt_tokens_client\":1024,\"completion_tokens\":1024,\"completion_tokens_source\":\"server\"}}\n",
            i + 1_000_000, i + 9_000_000_000, i + 9_000_000_100, i + 1_000_000
        ));
    }
    for k in 0..n {
        let d = root.join(format!("conc{}", k + 1));
        std::fs::create_dir_all(&d).unwrap();
        let s = summary.replace(
            "\"max_concurrency\": 4",
            &format!("\"max_concurrency\": {}", k + 1),
        );
        std::fs::write(d.join("summary.json"), s).unwrap();
        std::fs::write(
            d.join(agg_name),
            agg.replace("\"conc\": 4", &format!("\"conc\": {}", k + 1)),
        )
        .unwrap();
        std::fs::write(d.join("requests.jsonl"), &jsonl).unwrap();
    }
}

#[test]
fn store_cli_kill9_during_ingest_leaves_consistent_db() {
    let t = Tmp::new("kill");
    let sweep = t.0.join("sweep");
    let (n, records) = (40, 4000);
    big_sweep(&sweep, n, records);
    let db = t.0.join("k.db").display().to_string();
    stdout_ok(&["db", "migrate", "--db", &db]);
    let mut child = Command::new(bin())
        .args(["ingest", sweep.to_str().unwrap(), "--db", &db])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until at least one run is committed, then SIGKILL.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let runs = Store::open(&db).unwrap().table_counts().unwrap()[0].1;
        if runs >= 1 || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    let mut s = Store::open(&db).unwrap();
    assert_eq!(s.integrity_check().unwrap(), "ok");
    let counts: std::collections::BTreeMap<String, i64> =
        s.table_counts().unwrap().into_iter().collect();
    let runs = counts["runs"];
    assert!(runs >= 1, "{counts:?}");
    // Every committed run is whole: one point and one request blob each.
    assert_eq!(counts["points"], runs, "{counts:?}");
    assert_eq!(counts["requests"], runs, "{counts:?}");
    drop(s);
    // Re-ingest completes.
    let o = stdout_ok(&["ingest", sweep.to_str().unwrap(), "--db", &db]);
    assert!(o.contains(&format!("from {n} source(s)")), "{o}");
    let counts: std::collections::BTreeMap<String, i64> = Store::open(&db)
        .unwrap()
        .table_counts()
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(
        (counts["runs"], counts["points"], counts["requests"]),
        (n as i64, n as i64, n as i64)
    );
    let rows = stdout_ok(&[
        "report",
        "--db",
        &db,
        "--format",
        "csv",
        "--columns",
        "conc",
    ]);
    assert_eq!(rows.lines().count(), n + 1);
}

#[test]
fn store_cli_dump_during_ingest_is_consistent() {
    let t = Tmp::new("dumpingest");
    let sweep = t.0.join("sweep");
    let n = 30;
    big_sweep(&sweep, n, 3000);
    let db = t.0.join("c.db").display().to_string();
    stdout_ok(&["db", "migrate", "--db", &db]);
    let mut child = Command::new(bin())
        .args(["ingest", sweep.to_str().unwrap(), "--db", &db])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Dump repeatedly while the ingest commits run after run.
    let mut snaps = Vec::new();
    for i in 0..4 {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let out = t.0.join(format!("snap{i}"));
        let o = run(&["db", "dump", "--db", &db, "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        snaps.push(out);
    }
    assert!(child.wait().unwrap().success());
    for (i, dir) in snaps.iter().enumerate() {
        let file = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().ends_with(".ibdump.zst"))
            .unwrap();
        let restored = t.0.join(format!("r{i}.db")).display().to_string();
        stdout_ok(&["db", "restore", "--db", &restored, file.to_str().unwrap()]);
        let c: std::collections::BTreeMap<String, i64> = Store::open(&restored)
            .unwrap()
            .table_counts()
            .unwrap()
            .into_iter()
            .collect();
        // Whole runs only: each committed run has its point and its request blob.
        assert_eq!(c["points"], c["runs"], "{c:?}");
        assert_eq!(c["requests"], c["runs"], "{c:?}");
        assert!(c["runs"] <= n as i64);
    }
}

#[test]
fn store_cli_read_commands_do_not_create_a_database() {
    let t = Tmp::new("nodb");
    let db = t.0.join("missing.db");
    let o = run(&["report", "--db", db.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    // Trial 15: every suggested command names the database the user asked for.
    let d = db.display();
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(&format!(
            "no database at `{d}` yet: run `inferbench quickstart --db {d}`, or store results \
             first (`inferbench ingest PATH --db {d}`"
        )),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!db.exists());
    // A directory is named as one (trial 6: `serve --db /tmp` said "no such database file").
    let o = run(&["report", "--db", t.0.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("a directory, not a database file"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Trial 7: `ingest` of a directory with no result in it exited 0 beside a warning, so a
/// script went on to an empty report. It is now a failure (exit 1) that says why, and creates
/// no database.
#[test]
fn store_cli_ingest_of_an_empty_directory_fails() {
    let t = Tmp::new("emptyingest");
    let empty = t.0.join("results");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("notes.txt"), "not a result\n").unwrap();
    let db = t.0.join("x.db");
    let o = run(&[
        "ingest",
        empty.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    // Trial 15: an error, so on stderr; nothing on stdout.
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let out = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        // Trial 14: the message names the path.
        out.starts_with(&format!(
            "error: nothing to ingest in {} (",
            empty.canonicalize().unwrap().display()
        )) && !out.contains("ingested 0")
            && out.contains("ignored 1 non-result file(s): "),
        "{out}"
    );
    // Trial 13: and the database it would have created is not left behind.
    assert!(!db.exists(), "{} was created", db.display());
}

/// Trial 17: `ingest` of a sweep whose only point is unfinished (a failed eval) printed
/// "ingested 0 point(s)" on stdout and exited 0. Storing nothing is a failure: exit 1, the
/// report on stderr, naming the unfinished point, and no database left behind.
#[test]
fn store_cli_ingest_of_only_unfinished_points_fails() {
    let t = Tmp::new("unfinishedingest");
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../store/tests/evalsets/eval_gptoss_8k1k_unfinished");
    let db = t.0.join("x.db");
    let o = run(&[
        "ingest",
        src.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let path = src.canonicalize().unwrap();
    assert!(
        out.starts_with(&format!(
            "error: nothing ingested from {} (1 sweep point(s) not finished)\nnot finished, nothing to ingest: ",
            path.display()
        )) && out.contains("eval_failed: GSM8K data not given")
            && !out.contains("ingested 0"),
        "{out}"
    );
    assert!(!db.exists(), "{} was created", db.display());
    // Trial 18: a point still running (its job.json, no status.json yet) is named as such, not
    // listed as "ignored non-result file(s)".
    let running = t.0.join("sweep/pt_conc2");
    std::fs::create_dir_all(&running).unwrap();
    std::fs::write(running.join("job.json"), "{}").unwrap();
    std::fs::write(running.join("requests.jsonl"), "").unwrap();
    let o = run(&[
        "ingest",
        t.0.join("sweep").to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "not finished, nothing to ingest: {} (still running, or stopped before writing its \
             status.json)\n",
            running.canonicalize().unwrap().display()
        )) && !out.contains("ignored"),
        "{out}"
    );
    // Trial 19: nor did it say that the sweep was still running (it holds its sweep.lock) or
    // that an interrupted one left points unstarted (its sweep.json says which).
    let sweep = t.0.join("sweep").canonicalize().unwrap();
    let lock = inferbench_core::artifacts::lock_out_dir(&sweep).unwrap();
    let ingest = || {
        let o = run(&[
            "ingest",
            sweep.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ]);
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };
    let (code, out) = ingest();
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "a sweep is still writing into {} (it holds sweep.lock): the points it has not \
             finished are not ingested; ingest again when it ends\n",
            sweep.display()
        )) && !out.contains("ignored"),
        "{out}"
    );
    drop(lock);
    let points = r#"{"points": [
        {"index": 0, "conc": 2, "result_filename": "pt", "dir": "pt_conc2", "outcome": "interrupted"},
        {"index": 0, "conc": 4, "result_filename": "pt", "dir": "pt_conc4", "outcome": "not_started"},
        {"index": 0, "conc": 8, "result_filename": "pt", "dir": "pt_conc8", "outcome": "not_started"}]}"#;
    std::fs::write(sweep.join("sweep.json"), points).unwrap();
    let (code, out) = ingest();
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(&format!(
            "the sweep in {} did not start 2 of its 3 points (see its sweep.json; rerun the \
             same sweep to run them, then ingest again)\n",
            sweep.display()
        )) && !out.contains("still writing"),
        "{out}"
    );
}

/// Issue 13: `report --columns …` without the frontier column prints the units footer the
/// frontier view prints (label and unit of every metric column, from the metric registry);
/// with the frontier column the `*` line follows it; with cost or power columns, their assumptions.
#[test]
fn store_cli_report_columns_print_the_units_footer() {
    let t = Tmp::new("footer");
    let db = t.0.join("f.db").display().to_string();
    run(&["ingest", &fixtures().display().to_string(), "--db", &db]);
    // Columns that cannot tell the rows apart are said (trial 20); one group's are not.
    let o = run(&["report", "--db", &db, "--columns", "conc,tput_per_gpu"]);
    assert!(
        String::from_utf8_lossy(&o.stderr).starts_with(
            "note: the rows differ in model, hardware, framework, precision, parallelism, batch, \
             which --columns leaves out"
        ),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run(&[
        "report",
        "--db",
        &db,
        "-f",
        "hw=h200",
        "--columns",
        "conc,tput_per_gpu",
    ]);
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = stdout_ok(&[
        "report",
        "--db",
        &db,
        "-f",
        "hw=h200",
        "--columns",
        "hardware,conc,p99_ttft,tput_per_gpu",
    ]);
    // Chosen columns keep the line naming what every row shares, less what they show (trial 11).
    assert_eq!(
        out,
        "every row: model=dsr1  isl=1024  osl=1024  framework=sglang  precision=fp8  spec=none  \
         parallelism=TP8  date=2026-03-01  batch=sweep-2026-03-01-h200\n\n\
         hardware  conc  p99_ttft  tput_per_gpu\n\
         \x20                    (s)   (tok/s/GPU)\n\
         h200         4     0.180         102.4\n\
         h200        16     0.300         407.0\n\
         \n\
         units:\n\
         \x20 p99_ttft      TTFT, P99 (s)\n\
         \x20 tput_per_gpu  Throughput per GPU (tok/s/GPU)\n"
    );
    // A misspelled metric or column is an error naming it (trial 13: an empty column, or a
    // frontier "no point matches the filters"), in report, plot and compare alike.
    for (args, want) in [
        (
            vec!["report", "--x", "nonsense"],
            "error: --x nonsense: unknown metric",
        ),
        (
            vec!["report", "--frontier", "--y", "tput_per_gpux"],
            "error: --y tput_per_gpux: unknown metric",
        ),
        (
            vec!["report", "--columns", "conc,tput_per_gpux"],
            "error: --columns tput_per_gpux: unknown metric",
        ),
        (
            vec!["plot", "--y", "nonsense", "-o", "x.svg"],
            "error: --y nonsense: unknown metric",
        ),
        (
            vec!["compare", "hw=h200", "hw=h100", "--x", "nonsense"],
            "error: --x nonsense: unknown metric",
        ),
        (
            vec!["report", "--since", "2026-13-01"],
            "error: --since 2026-13-01: expected a calendar date YYYY-MM-DD",
        ),
    ] {
        let mut a = args.clone();
        a.extend(["--db", db.as_str()]);
        let o = run(&a);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with(want), "{args:?}: {err}");
    }
    // The default table names what every row shares once above it (with the names `-f`
    // takes), keeping the columns in which rows differ; a model name as given finds the rows.
    let out = stdout_ok(&[
        "report",
        "--db",
        &db,
        "-f",
        "hw=H200",
        "-f",
        "model=DeepSeek-R1",
    ]);
    let first = out.lines().next().unwrap();
    assert!(
        first.starts_with("every row: model=dsr1  isl=1024  osl=1024  hardware=h200  "),
        "{out}"
    );
    assert!(out.lines().nth(2).unwrap().starts_with("conc  "), "{out}");
    let out = stdout_ok(&[
        "report",
        "--db",
        &db,
        "-f",
        "hw=h200",
        "--frontier",
        "--columns",
        "conc,median_e2el,frontier",
    ]);
    assert!(
        out.ends_with(
            "\nunits:\n  median_e2el  End-to-end latency, median (s)\n\
             * = on its group's Pareto frontier of Throughput per GPU (tok/s/GPU) against Interactivity, median\n\
             \x20   (tok/s/user) (a group: model, ISL/OSL, scenario, hardware, framework, precision, spec decoding,\n\
             \x20   disaggregation)\n"
        ),
        "{out}"
    );
    // A filter that matches nothing: exit 0, and the hint is about the filters.
    let o = run(&["report", "--db", &db, "-f", "hw=no-such-gpu"]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with(&format!(
            "no points in {db} match the filters (`inferbench report` without -f lists every \
             point; `--include-failed` adds failed ones)\n  `-f hw=no-such-gpu`: no stored point \
             has hardware=no-such-gpu (stored: "
        )),
        "{err}"
    );
    // Trial 18: a typo in a filter's value gets the closest stored value; a filter that
    // matches alone is not named.
    let o = run(&["report", "--db", &db, "-f", "hw=h20", "-f", "model=dsr1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "\n  `-f hw=h20`: no stored point has hardware=h20; did you mean h200? (stored: "
        ) && !err.contains("-f model=dsr1"),
        "{err}"
    );
    // $/M and tok/s/MW columns name the price and power they assume, per hardware.
    let out = stdout_ok(&[
        "report",
        "--db",
        &db,
        "-f",
        "hw=h200",
        "--columns",
        "conc,usd_per_m_rental,usd_per_m_custom,tok_s_per_mw",
        "--gpu-hour-cost",
        "2",
    ]);
    assert!(
        out.ends_with(
            "assumptions: h200 $2.00/GPU-hour (custom), $1.60/GPU-hour (rental), 1.37 kW/GPU all-in (InferenceX's\n\
             \x20   SemiAnalysis figures; --gpu-hour-cost and --gpu-kw set your own)\n"
        ),
        "{out}"
    );
}

/// Issue 13: `report` and `plot` on a migrated database without runs agree: exit 2 with the
/// same message naming the commands that fill it (as for a missing database file).
#[test]
fn store_cli_empty_database_report_and_plot_agree() {
    let t = Tmp::new("empty");
    let db = t.0.join("e.db").display().to_string();
    let o = run(&["db", "migrate", "--db", &db]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let want = format!(
        "error: no runs in {db} — run `inferbench quickstart --db {db}` or `inferbench ingest \
         PATH --db {db}` (or `inferbench bench … --db {db}`) first\n"
    );
    let png = t.0.join("x.png").display().to_string();
    for args in [
        vec!["report", "--db", &db],
        vec!["report", "--db", &db, "--frontier", "--format", "csv"],
        vec!["plot", "--db", &db, "-o", &png],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&o.stderr), want, "{args:?}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    assert!(!Path::new(&png).exists());
    // Both --help texts document it.
    for cmd in ["report", "plot"] {
        let h = stdout_ok(&[cmd, "--help"]);
        let h = h.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(h.contains("a database with no runs yet"), "{cmd}: {h}");
    }
}

/// Trial 16: a 0-byte database file (an empty SQLite database) gets the commands that fill it,
/// each with its `--db`, from `report`; `db status` says so instead of "no such table"; `db
/// status` on a missing file creates none.
#[test]
fn store_cli_zero_byte_database_names_the_commands_with_its_db() {
    let t = Tmp::new("zero");
    let db = t.0.join("z.db").display().to_string();
    std::fs::write(&db, b"").unwrap();
    let o = run(&["report", "--db", &db]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "error: `{db}` holds no inferbench tables (an empty database): fill it with \
             `inferbench quickstart --db {db}` or `inferbench ingest PATH --db {db}`\n"
        )
    );
    let o = run(&["db", "status", "--db", &db]);
    let (status, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(2), "{status}{err}");
    assert_eq!(status, "");
    assert!(
        err.starts_with(&format!("error: `{db}` holds no inferbench tables")),
        "{err}"
    );
    // Trial 17: the read-only commands left the 0-byte file at 4,096 bytes (the WAL pragma).
    for cmd in [
        &["report", "--db", &db][..],
        &["db", "status", "--db", &db],
        &["compare", "hw=h100", "hw=h200", "--db", &db],
        &[
            "plot",
            "--db",
            &db,
            "--out",
            &t.0.join("p.svg").display().to_string(),
        ],
    ] {
        run(cmd);
        assert_eq!(std::fs::metadata(&db).unwrap().len(), 0, "{cmd:?}");
        assert!(!Path::new(&format!("{db}-wal")).exists(), "{cmd:?}");
    }
    // Trial 22: a database of something else was called empty and to be filled; a file that
    // is not a database was not named; a restore from a file that is not a dump said only
    // "zstd: Unknown frame descriptor". Each says what the file is.
    let other = t.0.join("other.db");
    rusqlite::Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE foo (x); CREATE TABLE bar (y);")
        .unwrap();
    let other = other.display().to_string();
    let text = t.0.join("notes.txt");
    std::fs::write(&text, "not a database, not a dump\n".repeat(200)).unwrap();
    let text = text.display().to_string();
    for (db, said) in [
        (
            &other,
            format!(
                "error: `{other}` is not an inferbench database (it holds other tables: bar, \
                 foo): give --db the file inferbench writes (e.g. ./inferbench.db) or a new one\n"
            ),
        ),
        (
            &text,
            format!(
                "error: `{text}` is not a database file: --db takes the SQLite file inferbench \
                 writes (e.g. ./inferbench.db) or a postgres:// URL\n"
            ),
        ),
    ] {
        // quickstart too, without "opening database X:" before the same name (trial 24).
        for cmd in [
            &["report", "--db", db][..],
            &["db", "status", "--db", db],
            &["quickstart", "--fast", "--db", db],
        ] {
            let o = run(cmd);
            assert_eq!(o.status.code(), Some(2), "{cmd:?}");
            assert_eq!(String::from_utf8_lossy(&o.stderr), said, "{cmd:?}");
        }
    }
    // Writers refuse them too, before writing anything (trial 23: `ingest` and `db migrate`
    // added our tables to the other program's file; `bench --db` of a text file failed after
    // the whole benchmark).
    let fixtures_dir = fixtures().display().to_string();
    for db in [&other, &text] {
        let size = std::fs::metadata(db).unwrap().len();
        for cmd in [
            &["ingest", &fixtures_dir, "--db", db][..],
            &["db", "migrate", "--db", db],
            &["bench", "--port", "9", "--model", "m", "--db", db],
        ] {
            let o = run(cmd);
            assert_eq!(o.status.code(), Some(2), "{cmd:?}");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.starts_with(&format!("error: `{db}` is not ")) && err.lines().count() == 1,
                "{cmd:?}: {err}"
            );
            assert_eq!(std::fs::metadata(db).unwrap().len(), size, "{cmd:?}");
        }
    }
    let fresh = t.0.join("fresh.db").display().to_string();
    let o = run(&["db", "restore", "--db", &fresh, "--no-verify", &text]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).starts_with(&format!(
            "error: snapshot {text}: not an inferbench dump (`db dump` writes zstd-compressed \
             .ibdump.zst files): zstd: "
        )),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!Path::new(&fresh).exists());
    // … nor a zstd file of something else (trial 23: "line 1: expected value").
    let zst = t.0.join("notes.zst");
    std::fs::write(&zst, zstd::encode_all(&b"plain text\n"[..], 3).unwrap()).unwrap();
    let zst = zst.display().to_string();
    let o = run(&["db", "restore", "--db", &fresh, "--no-verify", &zst]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).starts_with(&format!(
            "error: snapshot {zst}: not a readable inferbench dump: line 1: expected value"
        )),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!Path::new(&fresh).exists());
    let missing = t.0.join("missing.db").display().to_string();
    let o = run(&["db", "status", "--db", &missing]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr)
        .starts_with(&format!("error: no database at `{missing}` yet")));
    assert!(!Path::new(&missing).exists());
}

/// Issue 9: `ingest --inferencex-dump DIR` imports InferenceX's JSON dump (the store's test
/// dump) and `report` lists its points by batch; a second import changes nothing; a dump given
/// as a plain path is refused with the flag to use, storing nothing.
#[test]
fn store_cli_ingests_an_inferencex_dump() {
    let t = Tmp::new("dump");
    let db = t.0.join("d.db").display().to_string();
    let dump = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../store/tests/dumps/inferencex-dump-2026-07-06")
        .display()
        .to_string();
    let o = run(&["ingest", &dump, "--db", &db]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("this is InferenceX's database dump; import it with `inferbench ingest --inferencex-dump"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!Path::new(&db).exists());
    // A dump file that cannot be read fails, leaving no database behind (trial 24: an empty
    // schema-only file was left).
    let bad = t.0.join("broken.dump.zst");
    std::fs::write(&bad, zstd::encode_all(&b"not a pg_dump"[..], 3).unwrap()).unwrap();
    let o = run(&[
        "ingest",
        "--inferencex-dump",
        bad.to_str().unwrap(),
        "--db",
        &db,
    ]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!Path::new(&db).exists());
    // Not zstd at all: that is the cause said, not pg_restore's "input file is too short"
    // (trial 25).
    let junk = t.0.join("junk.dump.zst");
    std::fs::write(&junk, b"\x00\x01 not zstd").unwrap();
    let o = run(&[
        "ingest",
        "--inferencex-dump",
        junk.to_str().unwrap(),
        "--db",
        &db,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!(
            "error: {}: not a readable zstd-compressed pg_dump: Unknown frame descriptor\n",
            junk.display()
        )
    );
    assert!(!Path::new(&db).exists());
    let out = stdout_ok(&["ingest", "--inferencex-dump", &dump, "--db", &db]);
    assert!(
        out.starts_with("ingested 4 point(s), 1 eval result(s) from 2 workflow run(s) of an InferenceX dump in 2 batch(es), no request records (a dump has none)\n"),
        "{out}"
    );
    let out = stdout_ok(&["ingest", "--inferencex-dump", &dump, "--db", &db]);
    assert!(
        out.starts_with("ingested 4 point(s), 1 eval result(s) from 2 workflow run(s) of an InferenceX dump (2 already present, updated in place)"),
        "{out}"
    );
    let csv = stdout_ok(&[
        "report",
        "--db",
        &db,
        "--format",
        "csv",
        "--columns",
        "batch,model,hardware,parallelism,conc,tput_per_gpu,source_kind",
    ]);
    assert_eq!(
        csv,
        "batch,model,hardware,parallelism,conc,tput_per_gpu,source_kind\n\
         inferencex-run-555,dsr1,h200,TP8,4,102.4,inferencex-dump\n\
         inferencex-run-555,dsr1,h200,TP8,16,407.04,inferencex-dump\n\
         inferencex-run-777,gptoss120b,b200,DEP4,8,1500,inferencex-dump\n"
    );
}

/// Trial 8: `compare` with a side no point matches said the frontiers "share no range"; it
/// names the empty side now (exit 1 as before).
#[test]
fn store_cli_compare_names_a_side_without_points() {
    let (t, db) = sweep_h200_db("cmpempty");
    let db_s = db.to_str().unwrap();
    let o = run(&["compare", "hw=b200", "hw=mi355x", "--db", db_s]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no stored point matches A (hw=b200) nor B (hw=mi355x)"),
        "{err}"
    );
    // Trial 12: a side whose only match is invalid (here its producer set invalid_reason) was
    // reported as matching nothing; it says what it found now.
    let point = t.0.join("invalid/results/conc16");
    std::fs::create_dir_all(&point).unwrap();
    let src = fixtures().join("sweep-h200/conc16");
    for f in std::fs::read_dir(&src).unwrap() {
        let f = f.unwrap().path();
        let mut text = std::fs::read_to_string(&f).unwrap();
        if f.file_name().unwrap() == "summary.json" {
            let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
            v["inferbench"]["invalid_reason"] = "the prefix cache served it".into();
            text = v.to_string();
        }
        std::fs::write(point.join(f.file_name().unwrap()), text).unwrap();
    }
    let db2 = t.0.join("c2.db");
    let db2 = db2.to_str().unwrap();
    stdout_ok(&[
        "ingest",
        point.parent().unwrap().to_str().unwrap(),
        "--db",
        db2,
    ]);
    let o = run(&["compare", "hw=h200", "hw=mi355x", "--db", db2]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "no valid point to compare for A (hw=h200: its 1 matching point(s) are invalid; \
             --include-invalid counts them) nor B (hw=mi355x)"
        ),
        "{err}"
    );
    // A dump path that is not there says so (not "not an InferenceX dump").
    let o = run(&[
        "ingest",
        "--inferencex-dump",
        "/nonexistent/dump",
        "--db",
        db2,
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("--inferencex-dump /nonexistent/dump: no such file or directory"),
        "{o:?}"
    );
}

/// Trial 9: `compare` pooled a side's points of different models or sequence lengths into one
/// curve, and counted invalid points. A side must be one workload (exit 2 naming them); sides
/// of different workloads need the workload named in the sides.
#[test]
fn store_cli_compare_refuses_pooled_workloads() {
    let t = Tmp::new("cmppool");
    let db = t.0.join("c.db");
    let db_s = db.to_str().unwrap();
    stdout_ok(&[
        "ingest",
        fixtures().join("imports").to_str().unwrap(),
        "--db",
        db_s,
    ]);
    let o = run(&["compare", "hw=b200", "hw=unknown", "--db", db_s]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: side B (hw=unknown) pools points of 2 workloads (gptoss120b 1024/1024, llama70b \
         1024/1024): compare one, e.g. `-f model=… -f isl=… -f osl=…` or `-f scenario=…`\n"
    );
    // Trial 18: a typo on side A is said first, not hidden behind side B's pooling.
    let o = run(&["compare", "hw=b20", "hw=unknown", "--db", db_s]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("no stored point matches A (hw=b20)")
            // … with the closest stored value, as `report -f` gives it (trial 19).
            && err.contains("\n  `hw=b20`: no stored point has hardware=b20; did you mean b200?"),
        "{err}"
    );
    // A shared -f filter that matches nothing is named as the cause (trial 20), and a short
    // value gets no far-fetched suggestion (`b300` is not "h100").
    let o = run(&[
        "compare",
        "hw=b200",
        "hw=mi355x",
        "--db",
        db_s,
        "-f",
        "batch=nomatch",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with(
            "no stored point matches A (hw=b200 with -f batch=nomatch) nor B (hw=mi355x with -f \
             batch=nomatch)"
        ) && err.contains(
            // Batches as tables show them, not absolute paths (trial 21).
            "\n  `-f batch=nomatch`: no stored point has batch=nomatch (stored: fixtures/imports)\n"
        ),
        "{err}"
    );
    // … and a database with tables but no runs is refused as `report` refuses it (exit 2).
    let empty = t.0.join("empty.db").display().to_string();
    stdout_ok(&["db", "migrate", "--db", &empty]);
    let o = run(&["compare", "hw=h100", "hw=b200", "--db", &empty]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).starts_with(&format!("error: no runs in {empty}")),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = stdout_ok(&["compare", "hw=b200", "model=llama70b", "--db", db_s]);
    assert!(
        out.starts_with(
            "A = hw=b200   B = model=llama70b   workload A dsr1 1024/1024, B llama70b 1024/1024   y ="
        ),
        "named in B: compared on purpose\n{out}"
    );
    // Trial 10: `plot` on a filter that matches nothing told the user to store results.
    let svg = t.0.join("x.svg");
    let o = run(&[
        "plot",
        "--db",
        db_s,
        "-f",
        "osl=999",
        "-o",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("matches -f osl=999 (`inferbench report` without them"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run(&["compare", "hw=b200", "hw=tpu-v9", "--db", db_s]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "error: A is dsr1 1024/1024 and B is mystery-1t 1024/1024: compare one workload"
        ),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Trial 8: `report --history-at` rows of one date could not be told apart; each names its
/// batch now, and a group without a value at x says why instead of printing nothing.
#[test]
fn store_cli_history_rows_name_their_batch() {
    let t = Tmp::new("histbatch");
    let db = t.0.join("h.db");
    let db_s = db.to_str().unwrap();
    for d in ["imports", "repeats", "sweep-h200"] {
        run(&["ingest", fixtures().join(d).to_str().unwrap(), "--db", db_s]);
    }
    let o = run(&[
        "report",
        "--history-at",
        "50",
        "-f",
        "model=dsr1",
        "--db",
        db_s,
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "the b200 regression: {out}");
    assert!(
        // Each result file's batch is its directory (trial 15), shown by its last two parts.
        out.contains("  2026-02-20  fixtures/imports  ")
            && out.contains("  2026-02-27  fixtures/repeats  ")
            && out.contains("REGRESSION")
            && out.contains("(no batch of this group reaches median_intvty = 50"),
        "{out}"
    );
    // One earlier batch: the flag says how little it rests on.
    assert!(
        out.contains("  (baseline from 1 earlier batch: the run-to-run spread is unknown"),
        "{out}"
    );
    // Trial 9: headers with units, values rounded as `report` rounds them, the change in %.
    assert!(
        out.contains(
            "dsr1 1024/1024 b200_sglang_fp4: Throughput per GPU (tok/s/GPU) at Interactivity, median (tok/s/user) = 50\n\
             \x20 date        batch             tput_per_gpu  median of previous 3  change\n\
             \x20                                (tok/s/GPU)           (tok/s/GPU)     (%)\n\
             \x20 2026-02-20  fixtures/imports          1800                     -       -\n\
             \x20 2026-02-27  fixtures/repeats          1620                  1800   -10.0  REGRESSION\n"
        ),
        "{out}"
    );
    // Trial 9: --format was ignored. CSV and JSON give one row per value at full precision,
    // the notes on stderr; the exit code is the table's.
    let o = run(&[
        "report",
        "--history-at",
        "50",
        "-f",
        "hw=b200",
        "--db",
        db_s,
        "--format",
        "csv",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let csv = String::from_utf8_lossy(&o.stdout).replace(
        &fixtures().canonicalize().unwrap().display().to_string(),
        "F",
    );
    assert_eq!(
        csv,
        "group,x,at,y,date,batch,value,baseline,change,regression\n\
         dsr1 1024/1024 b200_sglang_fp4,median_intvty,50,tput_per_gpu,2026-02-20,F/imports,1800,,,false\n\
         dsr1 1024/1024 b200_sglang_fp4,median_intvty,50,tput_per_gpu,2026-02-27,F/repeats,1620,1800,-0.09999999999999998,true\n"
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("(baseline from 1 earlier batch"));
    let o = run(&[
        "report",
        "--history-at",
        "50",
        "-f",
        "hw=b200",
        "--db",
        db_s,
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);
    assert_eq!(v[1]["value"], 1620.0);
    assert_eq!(v[1]["baseline"], 1800.0);
    assert_eq!(v[1]["regression"], true);
    assert_eq!(v[0]["change"], serde_json::Value::Null);

    // A later b200 batch without its conc-4 point ends at 80 tok/s/user: at x = 100 it is left
    // out, and says so (it used to vanish without a word).
    let rows: Vec<serde_json::Value> = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("imports/agg_bmk.json")).unwrap(),
    )
    .unwrap();
    let late: Vec<serde_json::Value> = rows
        .into_iter()
        .filter(|r| r["hw"].as_str().unwrap().starts_with("b200") && r["conc"] != 4)
        .map(|mut r| {
            r["date"] = "2026-03-05".into();
            r
        })
        .collect();
    let dir = t.0.join("late");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agg_bmk_late.json"),
        serde_json::to_string(&late).unwrap(),
    )
    .unwrap();
    run(&["ingest", dir.to_str().unwrap(), "--db", db_s]);
    let o = run(&[
        "report",
        "--history-at",
        "100",
        "-f",
        "hw=b200",
        "--db",
        db_s,
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("  (1 more batch of this group left out: its frontier does not reach median_intvty = 100)"),
        "{out}"
    );
    // A batch whose runs give their start time is dated to the minute (trial 20: two batches
    // of one day read alike).
    let out = stdout_ok(&[
        "report",
        "--history-at",
        "100",
        "-f",
        "hw=h200",
        "--db",
        db_s,
    ]);
    assert!(
        out.contains("\n  2026-03-01 10:10 UTC  sweep-2026-03-01-h200         132.9 "),
        "{out}"
    );
    // Outside every batch's frontier: the group says where its frontiers lie (trial 19: "lie
    // elsewhere" without where).
    let o = run(&[
        "report",
        "--history-at",
        "500",
        "-f",
        "hw=b200",
        "--db",
        db_s,
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(
            "  (no batch of this group reaches median_intvty = 500: its frontiers span \
             median_intvty 40.0 to 120.0)"
        ),
        "{out}"
    );
}

/// Trial 24: `report --history-at` with a filter that matches nothing gave no "did you mean"
/// (plain `report`, `plot` and `compare` do), and `compare --at` outside both frontiers printed
/// a row of `-` without saying why; both say it now.
#[test]
fn store_cli_history_hints_and_compare_at_outside_the_frontiers() {
    let t = Tmp::new("histhints");
    let db = t.0.join("h.db");
    let db_s = db.to_str().unwrap();
    for d in ["imports", "repeats", "sweep-h200"] {
        run(&["ingest", fixtures().join(d).to_str().unwrap(), "--db", db_s]);
    }
    let o = run(&[
        "report",
        "--history-at",
        "100",
        "-f",
        "hw=h20",
        "--db",
        db_s,
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "no stored point matches the filters\n  `-f hw=h20`: no stored point has hardware=h20; \
         did you mean h200? (stored: b200, h200, mi355x, tpu-v9, unknown)\n"
    );
    // Two stored values joined by a comma: the hint gives the `|` form (trial 26).
    let o = run(&["report", "-f", "hw=h200,b200", "--db", db_s]);
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "`-f hw=h200,b200`: no stored point has hardware=h200,b200; several values are \
             separated by `|`: hardware=h200|b200 (stored: b200, h200, mi355x, tpu-v9, unknown)\n"
        ),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run(&[
        "compare",
        "hw=b200",
        "hw=h200",
        "-f",
        "model=dsr1",
        "--db",
        db_s,
        "--at",
        "100,500,45",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.ends_with(
            "  (no value at median_intvty = 500: outside A's frontiers (median_intvty 40.0 to \
             120.0) and outside B's frontiers (median_intvty 52.6 to 105.3))\n  \
             (no value at median_intvty = 45: outside B's frontiers (median_intvty 52.6 to \
             105.3))\n"
        ) && out.contains("\n  100.0  760.0    2  132.9    1  5.720              -\n"),
        "{out}"
    );
    // JSON stays JSON; the notes go to stderr.
    let o = run(&[
        "compare",
        "hw=b200",
        "hw=h200",
        "-f",
        "model=dsr1",
        "--db",
        db_s,
        "--at",
        "500",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v[0]["n_a"].as_u64(), v[0]["n_b"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "(no value at median_intvty = 500: outside A's frontiers (median_intvty 40.0 to 120.0) \
         and outside B's frontiers (median_intvty 52.6 to 105.3))\n"
    );
}

/// Trial 15: `db status` printed `points 13` above `requests 12 (one row per point …)` and
/// left the difference unexplained; it says how many points have no saved records.
#[test]
fn store_cli_db_status_explains_points_without_records() {
    let (_t, db) = sweep_h200_db("dbstatus");
    let db_s = db.to_str().unwrap();
    let out = stdout_ok(&["db", "status", "--db", db_s]);
    let line = |table: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(&format!("{table} ")))
            .unwrap_or_else(|| panic!("no {table} line in {out}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    // conc16 saved its records, conc4 did not (conc64 is not finished: no point).
    assert_eq!(line("points"), "points 2", "{out}");
    // What a run is, since evals count as runs too (trial 23).
    assert_eq!(
        line("runs"),
        "runs 2 (a benchmark point's run or an eval's: one per result ingested)",
        "{out}"
    );
    assert_eq!(
        line("requests"),
        "requests 1 (one row per point with saved request records, compressed; 1 point(s) have \
         none: `bench` keeps them with --save-requests FILE)",
        "{out}"
    );
}

/// Issue 39 (fresh tester, finding 3): `db status` on every older-schema database in
/// `crates/store/tests/old-schema/` (v4, v5, v6 lack `eval_samples`) prints its schema version
/// and the row counts of the tables it has, exit 0, where it failed with "no such table:
/// eval_samples" (exit 2) although `report`, `plot` and `serve` read the same files.
#[test]
fn store_cli_db_status_reads_every_older_schema_database() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/old-schema");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "db"))
        .collect();
    files.sort();
    assert!(files.len() >= 4, "{files:?}");
    let t = Tmp::new("old-status");
    for src in &files {
        let db = t.0.join(src.file_name().unwrap());
        std::fs::copy(src, &db).unwrap();
        let (points, tables): (i64, Vec<String>) = {
            let c = rusqlite::Connection::open(&db).unwrap();
            let n = c
                .query_row("SELECT COUNT(*) FROM points", [], |r| r.get(0))
                .unwrap();
            let mut st = c
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
                .unwrap();
            let names = st
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            (n, names)
        };
        let o = run(&["db", "status", "--db", db.to_str().unwrap()]);
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert_eq!(o.status.code(), Some(0), "{}: {out}{err}", src.display());
        assert!(!err.contains("no such table"), "{err}");
        assert!(out.contains("rows per table:"), "{out}");
        let row = out
            .lines()
            .find(|l| l.trim_start().starts_with("points "))
            .unwrap_or_else(|| panic!("{out}"));
        assert_eq!(
            row.split_whitespace().nth(1),
            Some(points.to_string().as_str()),
            "{out}"
        );
        // Exactly the schema's tables the file has are listed (none it lacks).
        let listed = out
            .lines()
            .skip_while(|l| *l != "rows per table:")
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .count();
        let known = inferbench_store::schema::TABLES
            .iter()
            .filter(|t| tables.iter().any(|n| n == *t))
            .count();
        assert_eq!(listed, known, "{}: {out}", src.display());
    }
}
