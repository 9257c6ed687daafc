//! Issue 39 §8 and §12 from the command line: every output path a command will write is
//! checked before any request is sent (exit 2, naming the path and the OS error); a write that
//! fails at the end fails the point (exit 1, never 0); `report` reads an older-schema database
//! without writing it.

mod common;

use common::{counting_listener, run_in};

use std::process::Command;
use std::sync::atomic::Ordering;

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

/// Paths under a regular file cannot be created (whoever runs the test, root included):
/// each output flag of `bench`, `replay`, `job` and `quickstart` is refused with exit 2 and
/// its path named, and the server is never asked anything.
#[test]
fn unwritable_output_paths_are_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("afile"), b"x").unwrap();
    let (port, connections) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let bench = |extra: &[&str]| {
        let mut a = vec![
            "bench",
            "--base-url",
            &url,
            "--model",
            "m",
            "--num-prompts",
            "1",
        ];
        a.extend_from_slice(extra);
        run_in(dir.path(), &a)
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--save-result", "--result-dir", "afile/sub"],
            "error: --result-dir afile/sub: cannot create the directory afile/sub: Not a \
             directory (os error 20)\n",
        ),
        (
            vec!["--result-dir", "afile/sub"],
            "error: --result-dir afile/sub: cannot create the directory afile/sub: Not a \
             directory (os error 20)\n",
        ),
        (
            vec!["--save-requests", "afile/r.jsonl"],
            "error: --save-requests afile/r.jsonl: afile is not a directory\n",
        ),
        (
            vec!["--save-requests", "."],
            "error: --save-requests .: it is a directory\n",
        ),
        (
            vec!["--save-result", "--result-filename", "afile/r.json"],
            "error: --result-filename ./afile/r.json: ./afile is not a directory\n",
        ),
        (
            vec!["--db", "afile/x.db"],
            "error: bad database location `afile/x.db`: afile is not a directory\n",
        ),
    ];
    for (extra, want) in &cases {
        let (code, err) = bench(extra);
        assert_eq!((code, err.as_str()), (Some(2), *want), "bench {extra:?}");
    }
    let (code, err) = run_in(
        dir.path(),
        &[
            "replay",
            "--base-url",
            &url,
            "--model",
            "m",
            "--synthetic",
            "quickstart",
            "--result-dir",
            "afile/sub",
        ],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.ends_with(
            "error: --result-dir afile/sub: cannot create the directory afile/sub: Not a \
             directory (os error 20)\n"
        ),
        "{err}"
    );
    let (code, err) = run_in(
        dir.path(),
        &[
            "eval",
            "gsm8k",
            "--base-url",
            &url,
            "--model",
            "m",
            "--result-dir",
            "afile/e",
        ],
    );
    assert_eq!(
        (code, err.as_str()),
        (
            Some(2),
            "error: --result-dir afile/e: afile is not a directory\n"
        )
    );
    assert_eq!(connections.load(Ordering::SeqCst), 0, "a request was sent");
    // quickstart: --out and --chart before the database is created or any point runs.
    for (extra, want) in [
        (
            ["--out", "afile/q"],
            "error: --out afile/q: cannot create the directory afile/q: Not a directory (os \
             error 20)\n",
        ),
        (
            ["--chart", "afile/c.svg"],
            "error: --chart afile/c.svg: afile is not a directory\n",
        ),
    ] {
        let mut a = vec!["quickstart", "--db", "q.db"];
        a.extend_from_slice(&extra);
        assert_eq!(
            run_in(dir.path(), &a),
            (Some(2), want.to_string()),
            "{extra:?}"
        );
        assert!(!dir.path().join("q.db").exists());
    }
}

/// A `--save-requests` whose record writes fail at run time (the file-size limit: `ulimit -f
/// 100`, SIGXFSZ ignored, so writes past 50 KiB return EFBIG; a closed-loop `--duration` run,
/// whose record count is not known up front, so it is not refused up front (a dataset's output
/// lengths now are: issue 39's leftovers, 2); `/dev/full` is refused up front, issue 39 §1):
/// the run goes on and the point fails with exit 1 (it exited 0 after saying the write
/// failed), the records file never said to be written, the limit named.
#[cfg(unix)]
#[test]
fn a_failed_records_write_fails_the_point() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", sim.1);
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -f 100; trap '' XFSZ; exec {BIN} bench --base-url {url} --model \
             Llama-3.1-8B --random-input-len 16 --random-output-len 64 --ignore-eos \
             --max-concurrency 4 --duration 1 --save-requests r.jsonl"
        ))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "inferbench: writing --save-requests failed: r.jsonl: File too large (os error 27) \
             (records kept in memory for the summary; the point fails, exit 1) (the \
             file-size limit `ulimit -f` is 50 KiB: raise it, `ulimit -f unlimited`)"
        ),
        "{err}"
    );
    assert!(!err.contains("wrote r.jsonl"), "{err}");
}

/// Issue 39 §12: `report` on a version-4 database reads a migrated copy, says so, exits 0, and
/// leaves the file as it was.
#[test]
fn report_reads_an_older_schema_database_without_writing_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../store/tests/old-schema/v4-sweep-h200.db"),
        &db,
    )
    .unwrap();
    let before = std::fs::read(&db).unwrap();
    let (code, err) = run_in(dir.path(), &["report", "--db", "old.db"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        err,
        format!(
            "inferbench: `old.db` has schema version 4 (this binary's is {}): reading a \
             migrated copy in memory, the file is not changed; `inferbench db migrate --db \
             old.db` upgrades it (where it is writable)\n",
            inferbench_store::schema::latest_version()
        )
    );
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

/// Issue 39 §1 (fresh tester): an output path that exists and is not a regular file (a FIFO,
/// a symlink to a device, a directory) is refused with exit 2 before any request, for every
/// subcommand and every file it writes (bench's result and its `.server_metrics.jsonl` side
/// file, `--save-requests`, replay's `requests.jsonl` and `summary.json`, eval's samples,
/// quickstart's `--chart`); a `--result-filename` with a `..` component is refused as leaving
/// `--result-dir`. Nothing is written into or over the node. No real device is written: the
/// symlink to `/dev/null` is only checked to be refused.
#[cfg(unix)]
#[test]
fn non_regular_output_paths_are_refused_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    assert!(Command::new("mkfifo")
        .arg(d.join("c.svg"))
        .status()
        .unwrap()
        .success());
    std::os::unix::fs::symlink("/dev/null", d.join("dev")).unwrap();
    std::fs::create_dir_all(d.join("res")).unwrap();
    std::os::unix::fs::symlink("../fifo", d.join("res/r.server_metrics.jsonl")).unwrap();
    std::fs::create_dir_all(d.join("rep/summary.json")).unwrap();
    std::fs::create_dir_all(d.join("rep2")).unwrap();
    std::os::unix::fs::symlink("/dev/null", d.join("rep2/requests.jsonl")).unwrap();
    std::fs::create_dir_all(d.join("ev")).unwrap();
    std::os::unix::fs::symlink("/dev/null", d.join("ev/samples_gsm8k.jsonl")).unwrap();
    let (port, connections) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let bench = |extra: &[&str]| {
        let mut a = vec!["bench", "--base-url", &url, "--model", "m"];
        a.extend_from_slice(&["--num-prompts", "1"]);
        a.extend_from_slice(extra);
        run_in(d, &a)
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--save-result", "--result-filename", "fifo"],
            "error: --result-filename ./fifo: it is not a regular file (a FIFO)\n",
        ),
        (
            vec!["--save-result", "--result-filename", "dev"],
            "error: --result-filename ./dev: it is not a regular file (a character device)\n",
        ),
        (
            vec!["--save-result", "--result-filename", "res"],
            "error: --result-filename ./res: it is a directory\n",
        ),
        (
            vec![
                "--save-result",
                "--result-dir",
                "res",
                "--result-filename",
                "../../../../dev/full",
            ],
            "error: --result-filename ../../../../dev/full: a `..` component leaves \
             --result-dir; give a name inside it (or an absolute path)\n",
        ),
        (
            vec![
                "--save-result",
                "--result-dir",
                "res",
                "--result-filename",
                "r.json",
            ],
            "error: --result-dir res: res/r.server_metrics.jsonl: it is not a regular file (a \
             FIFO)\n",
        ),
        (
            vec!["--save-requests", "fifo"],
            "error: --save-requests fifo: it is not a regular file (a FIFO)\n",
        ),
        (
            vec!["--save-requests", "dev"],
            "error: --save-requests dev: it is not a regular file (a character device)\n",
        ),
    ];
    for (extra, want) in &cases {
        assert_eq!(bench(extra), (Some(2), want.to_string()), "bench {extra:?}");
    }
    for (rd, want) in [
        (
            "rep",
            "error: --result-dir rep: summary.json: it is a directory\n",
        ),
        (
            "rep2",
            "error: --result-dir rep2: requests.jsonl: it is not a regular file (a character \
             device)\n",
        ),
    ] {
        let (code, err) = run_in(
            d,
            &[
                "replay",
                "--base-url",
                &url,
                "--model",
                "m",
                "--synthetic",
                "quickstart",
                "--result-dir",
                rd,
            ],
        );
        assert_eq!(code, Some(2), "{err}");
        assert!(err.ends_with(want), "{err}");
    }
    let (code, err) = run_in(
        d,
        &[
            "eval",
            "gsm8k",
            "--base-url",
            &url,
            "--model",
            "m",
            "--result-dir",
            "ev",
        ],
    );
    assert_eq!(
        (code, err.as_str()),
        (
            Some(2),
            "error: --result-dir ev: samples_gsm8k.jsonl: it is not a regular file\n"
        )
    );
    let (code, err) = run_in(d, &["quickstart", "--db", "q.db", "--chart", "c.svg"]);
    assert_eq!(
        (code, err.as_str()),
        (
            Some(2),
            "error: --chart c.svg: it is not a regular file (a FIFO)\n"
        )
    );
    assert!(!d.join("q.db").exists());
    assert_eq!(connections.load(Ordering::SeqCst), 0, "a request was sent");
    // The nodes are still what they were.
    let meta = std::fs::symlink_metadata(&fifo).unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()));
    assert!(std::fs::symlink_metadata(d.join("dev"))
        .unwrap()
        .is_symlink());
    assert!(!d.join("fifo.server_metrics.jsonl").exists());
}

/// Issue 39 §2/§6 (fresh tester): under `ulimit -f 40` (SIGXFSZ ignored, writes past 20 KiB
/// return EFBIG) a replay's records passed the limit midway: it exited 0 and said "wrote …"
/// with every record lost, then exit 1 once the write was checked. Since issue 39 (files,
/// ingest and hints, 2) every file of `--result-dir` is planned up front, the records files at
/// what the run needs to measure (a line per primer, warmup and twice the requests in flight),
/// so this limit is refused before any request (exit 2, nothing written, nothing said to be
/// written); at a limit that passes, the records files are bounded at run time
/// (`file_size_limit`'s `replay_at_the_advised_file_size_limit_writes_every_file_whole`).
#[cfg(unix)]
#[test]
fn a_replay_whose_records_cannot_fit_is_refused_before_any_request() {
    let sim = common::start_sim(&[]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", sim.1);
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -f 40; trap '' XFSZ; exec {BIN} replay --synthetic quickstart --base-url \
             {url} --model Llama-3.1-8B --concurrency 1 --benchmark-duration 6 \
             --unsafe-override --no-server-metrics --result-dir out"
        ))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(
            "error: `ulimit -f` limits each file to 20 KiB; --result-dir's requests.jsonl (and \
             aiperf_artifacts/profile_export.jsonl) may hold up to "
        ) && err.contains(": nothing was sent; raise the limit to at least "),
        "{err}"
    );
    assert!(!err.contains("wrote "), "{err}");
    assert!(!dir.path().join("out/requests.jsonl").exists());
}

/// Issue 39's leftovers, 3: a sweep's inner files are checked with `--out` before the first
/// launch or request (exit 2, the path and why named, nothing sent): a FIFO where a point's
/// `summary.json` goes, and one where the sweep's `sweep.json` goes (both were found only
/// after the point's requests: the FIFO's write failed, `sweep.json`'s was dropped, exit 0).
#[test]
fn a_sweeps_inner_files_are_checked_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("m.json"),
        serde_json::json!([{
            "image": "x", "model": "m/small", "model-prefix": "small", "precision": "fp8",
            "framework": "sim", "runner": "h100", "isl": 64, "osl": 8, "tp": 1, "pp": 1,
            "dcp-size": 1, "pcp-size": 1, "conc": [4, 8], "max-model-len": 2048, "ep": 1,
            "dp-attn": false, "spec-decoding": "none", "exp-name": "small_64_8",
            "disagg": false
        }])
        .to_string(),
    )
    .unwrap();
    let point = d.join(
        "res/small_64_8_fp8_sim_tp1-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc4x8_\
         h100_0_conc8",
    );
    std::fs::create_dir_all(&point).unwrap();
    let mkfifo = |p: &std::path::Path| {
        assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
    };
    mkfifo(&point.join("summary.json"));
    let (port, connections) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let sweep = || {
        run_in(
            d,
            &[
                "sweep",
                "--matrix",
                "m.json",
                "--base-url",
                &url,
                "--runner-name",
                "h100_0",
                "--out",
                "res",
            ],
        )
    };
    let (code, text) = sweep();
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains(&format!(
            "error: 1 path where the sweep writes cannot be written (nothing was launched or \
             sent):\n  row 0 conc 8 writes to {}: it is not a regular file (a FIFO)",
            point.join("summary.json").display()
        )),
        "{text}"
    );
    std::fs::remove_file(point.join("summary.json")).unwrap();
    mkfifo(&d.join("res/sweep.json"));
    let (code, text) = sweep();
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains(&format!(
            "error: 1 path where the sweep writes cannot be written (nothing was launched or \
             sent):\n  the sweep's report {}: it is not a regular file (a FIFO)",
            d.join("res/sweep.json").display()
        )),
        "{text}"
    );
    assert_eq!(connections.load(Ordering::SeqCst), 0, "a request was sent");
}

/// `program` with `args` as a user whom directory permissions bind: this user when it is not
/// root, else uid/gid 65534 (`nobody`) through `setpriv` (root ignores them); `None` after a
/// skip line where that is impossible.
#[cfg(unix)]
fn unprivileged(program: &str, args: &[&str]) -> Option<Command> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        let mut c = Command::new(program);
        c.args(args);
        return Some(c);
    }
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

/// Trial of issue 39's leftovers, finding 5: a database file of mode 666 in a folder of mode
/// 555, as a user the folder binds: SQLite cannot create its `-wal`/`-shm`/`-journal` there,
/// so the output check refuses it before any request (exit 2, the folder named); it passed
/// and the run ended with "attempt to write a readonly database", exit 2 after the requests.
/// The same for a `-wal` left in a writable folder that this user cannot write.
#[cfg(unix)]
#[test]
fn a_database_in_a_folder_sqlite_cannot_write_is_refused_before_any_request() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let perm = |p: &std::path::Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    perm(dir.path(), 0o755);
    let ro = dir.path().join("ro");
    let res = dir.path().join("res");
    std::fs::create_dir(&ro).unwrap();
    std::fs::create_dir(&res).unwrap();
    perm(&res, 0o777);
    let db = ro.join("x.db");
    let db_s = db.display().to_string();
    let (code, err) = run_in(dir.path(), &["db", "--db", &db_s, "migrate"]);
    assert_eq!(code, Some(0), "{err}");
    perm(&db, 0o666);
    perm(&ro, 0o555);
    let (port, hits) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let res_s = res.display().to_string();
    let Some(mut cmd) = unprivileged(
        BIN,
        &[
            "bench",
            "--base-url",
            &url,
            "--model",
            "m",
            "--num-prompts",
            "4",
            "--power",
            "off",
            "--db",
            &db_s,
            "--result-dir",
            &res_s,
        ],
    ) else {
        return;
    };
    let o = cmd.env_remove("INFERBENCH_DB").output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        (o.status.code(), err.as_ref()),
        (
            Some(2),
            format!(
                "error: bad database location `{db_s}`: cannot write in {}, where SQLite keeps \
                 the database's -wal/-shm/-journal files: Permission denied (os error 13) (make \
                 the folder writable, or store into a database elsewhere)\n",
                ro.display()
            )
            .as_str()
        )
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a request was sent");
    // quickstart: before the sweep (it ran every point, then failed to store them).
    let qs = res.join("qs").display().to_string();
    let mut cmd =
        unprivileged(BIN, &["quickstart", "--fast", "--out", &qs, "--db", &db_s]).unwrap();
    let o = cmd.env_remove("INFERBENCH_DB").output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.ends_with(&format!(
            "error: bad database location `{db_s}`: cannot write in {}, where SQLite keeps the \
             database's -wal/-shm/-journal files: Permission denied (os error 13) (make the \
             folder writable, or store into a database elsewhere)\n",
            ro.display()
        )),
        "{err}"
    );
    assert!(!res.join("qs").exists() || std::fs::read_dir(res.join("qs")).unwrap().count() == 0);
    // A writable folder, but a `-wal` left there that this user cannot write.
    perm(&ro, 0o777);
    std::fs::write(ro.join("x.db-wal"), b"").unwrap();
    perm(&ro.join("x.db-wal"), 0o644);
    let mut cmd = unprivileged(
        BIN,
        &[
            "bench",
            "--base-url",
            &url,
            "--model",
            "m",
            "--num-prompts",
            "4",
            "--power",
            "off",
            "--db",
            &db_s,
            "--result-dir",
            &res_s,
        ],
    )
    .unwrap();
    let o = cmd.env_remove("INFERBENCH_DB").output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        (o.status.code(), err.as_ref()),
        (
            Some(2),
            format!(
                "error: bad database location `{db_s}`: cannot write {db_s}-wal, which SQLite \
                 writes beside the database: Permission denied (os error 13) (give it to this \
                 user, or store into a database elsewhere)\n"
            )
            .as_str()
        )
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0, "a request was sent");
    perm(&ro, 0o755);
}

/// Issue 39, fresh tester's finding 2: `selftest --json dl` and `eval --result-dir dl2`, `dl`
/// and `dl2` dangling symbolic links into a folder that does not exist, ran everything and
/// failed at the end. Every output of every writing subcommand goes through the one up-front
/// check (`output::check_file_writable`, `check_dir_writable`, `dir_uncreatable`): exit 2,
/// the link and where it leads named, nothing sent, no folder created at the link's far end.
#[cfg(unix)]
#[test]
fn a_dangling_link_into_a_missing_folder_is_refused_up_front_by_every_writing_subcommand() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let miss = d.join("miss");
    symlink(miss.join("newdir/f"), d.join("dl")).unwrap();
    symlink(miss.join("newdirY"), d.join("dl2")).unwrap();
    symlink(miss.join("newdir/c.svg"), d.join("dl.svg")).unwrap();
    std::fs::create_dir(d.join("r")).unwrap();
    symlink("../miss/x.json", d.join("r/dl3")).unwrap();
    let (code, err) = run_in(d, &["db", "--db", "ib.db", "migrate"]);
    assert_eq!(code, Some(0), "{err}");
    std::fs::write(d.join("c.yaml"), "{}\n").unwrap();
    std::fs::write(d.join("rc.yaml"), "labels: {}\n").unwrap();
    std::fs::write(d.join("base.yaml"), "[]\n").unwrap();
    let gsm = d.join("gsm8k");
    std::fs::create_dir(&gsm).unwrap();
    let line = serde_json::json!({"question": "q?", "answer": "w\n#### 1"}).to_string() + "\n";
    std::fs::write(gsm.join("test.jsonl"), &line).unwrap();
    std::fs::write(gsm.join("train.jsonl"), line.repeat(5)).unwrap();
    std::fs::write(
        d.join("m.json"),
        serde_json::json!([{
            "image": "x", "model": "m/small", "model-prefix": "small", "precision": "fp8",
            "framework": "sim", "runner": "h100", "isl": 64, "osl": 8, "tp": 1, "pp": 1,
            "dcp-size": 1, "pcp-size": 1, "conc": [4], "max-model-len": 2048, "ep": 1,
            "dp-attn": false, "spec-decoding": "none", "exp-name": "small_64_8",
            "disagg": false
        }])
        .to_string(),
    )
    .unwrap();
    let (port, connections) = counting_listener();
    let url = format!("http://127.0.0.1:{port}");
    let bench = [
        "bench",
        "--base-url",
        &url,
        "--model",
        "m",
        "--num-prompts",
        "2",
    ];
    let with = |base: &[&str], extra: &[&'static str]| {
        let mut a: Vec<String> = base.iter().map(|s| s.to_string()).collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let cases: Vec<Vec<String>> = vec![
        with(&bench, &["--save-requests", "dl"]),
        with(&bench, &["--save-result", "--result-dir", "dl2"]),
        with(
            &bench,
            &[
                "--save-result",
                "--result-dir",
                "r",
                "--result-filename",
                "dl3",
            ],
        ),
        with(&bench, &["--db", "dl"]),
        with(
            &["replay", "--base-url", &url, "--model", "m"],
            &["--synthetic", "quickstart", "--result-dir", "dl2"],
        ),
        with(
            &["selftest", "--base-url", &url, "--model", "m"],
            &["--concurrency", "2", "--duration", "1", "--json", "dl"],
        ),
        with(
            &["eval", "gsm8k", "--base-url", &url, "--model", "m"],
            &[
                "--backend",
                "openai",
                "--data-dir",
                "gsm8k",
                "--result-dir",
                "dl2",
            ],
        ),
        with(
            &["sweep", "--matrix", "m.json", "--base-url", &url],
            &["--runner-name", "h100_0", "--out", "dl2"],
        ),
        with(&["quickstart", "--fast"], &["--out", "dl2"]),
        with(
            &["quickstart", "--fast"],
            &["--out", "qs", "--chart", "dl.svg"],
        ),
        with(&["plot", "--db", "ib.db"], &["--out", "dl.svg"]),
        with(
            &["matrix", "--config-files", "c.yaml"],
            &["--runner-config", "rc.yaml", "--output", "dl", "full-sweep"],
        ),
        with(
            &["changelog", "--base", "base.yaml", "--head", "base.yaml"],
            &[
                "--config-files",
                "c.yaml",
                "--runner-config",
                "rc.yaml",
                "--output",
                "dl",
            ],
        ),
        with(&["db", "--db", "ib.db"], &["dump", "--out", "dl2"]),
        with(&["agentx-traces"], &["--traces", "1", "--out", "dl"]),
        with(
            &["sweep", "--executor", "github", "--matrix", "m.json"],
            &["--github-dir", "dl2"],
        ),
    ];
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, err) = run_in(d, &args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains("symbolic link"), "{args:?}: {err}");
        assert!(err.contains("does not exist"), "{args:?}: {err}");
        assert_eq!(connections.load(Ordering::SeqCst), 0, "{args:?}: sent");
        assert!(!miss.exists(), "{args:?} created {}", miss.display());
    }
    // The exact words of the two handed cases.
    let (_, err) = run_in(d, &cases[5].iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        err.contains(&format!(
            "error: --json dl: it is a symbolic link to {}, whose folder {} does not exist",
            miss.join("newdir/f").display(),
            miss.join("newdir").display()
        )),
        "{err}"
    );
    let (_, err) = run_in(d, &cases[6].iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        err.contains(&format!(
            "error: --result-dir dl2: dl2 is a symbolic link to {}, which does not exist",
            miss.join("newdirY").display()
        )),
        "{err}"
    );
}

/// Issue 39, fresh tester's finding 3: a `--save-requests` write that failed mid-run (`ulimit
/// -f`) left a result naming the truncated records file with no reason, and `ingest` of it
/// failed on every try ("r.jsonl:5: EOF while parsing"). Now the result says why the point
/// failed (`inferbench.failed_reason`: the records file is incomplete) and names no records
/// file, and ingest stores it as a failed point with that cause; a result of an older build
/// that still names the truncated file is stored too, without its records, the point failed
/// and the file named (exit 0).
#[cfg(unix)]
#[test]
fn a_failed_records_write_leaves_a_result_that_ingest_stores_as_failed() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let url = format!("http://127.0.0.1:{}", sim.1);
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -f 1024; trap '' XFSZ; exec {BIN} bench --base-url {url} --model \
             Llama-3.1-8B --random-input-len 16 --random-output-len 64 --ignore-eos \
             --max-concurrency 4 --duration 1 --save-requests r.jsonl --save-result \
             --result-dir res --result-filename p.json"
        ))
        .current_dir(d)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("res/p.json")).unwrap()).unwrap();
    let reason = v["inferbench"]["failed_reason"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(
        reason,
        "the records file r.jsonl is incomplete: writing --save-requests failed (r.jsonl: File \
         too large (os error 27)); the result does not name it, and the summary was computed \
         from every record kept in memory",
        "{v}"
    );
    assert!(
        v["inferbench"]
            .get("requests_file")
            .is_none_or(|f| f.is_null()),
        "{v}"
    );
    // Exit code and stdout with stderr.
    let run = |args: &[&str]| {
        let o = Command::new(BIN)
            .args(args)
            .current_dir(d)
            .env_remove("INFERBENCH_DB")
            .output()
            .unwrap();
        (o.status.code(), common::output_text(&o))
    };
    let report = |db: &str| {
        run(&[
            "report",
            "--db",
            db,
            "--include-failed",
            "--columns",
            "conc,error",
            "--format",
            "csv",
        ])
    };
    let (code, text) = run(&["ingest", "res/p.json", "--db", "a.db"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains(
            "of these points: 1 failed (measured, but failed: `report --columns conc,error` \
             says why; `report --include-failed` lists it)"
        ),
        "{text}"
    );
    let (code, text) = report("a.db");
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("the records file r.jsonl is incomplete"),
        "{text}"
    );
    // A result of an older build, naming the truncated file: stored, the point failed.
    let mut old = v.clone();
    old["inferbench"]["failed_reason"] = serde_json::Value::Null;
    old["inferbench"]["requests_file"] = "../r.jsonl".into();
    std::fs::write(d.join("res/old.json"), old.to_string()).unwrap();
    let (code, text) = run(&["ingest", "res/old.json", "--db", "b.db"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("incomplete or unreadable") && text.contains("ingest the result again"),
        "{text}"
    );
    let (code, text) = report("b.db");
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("its records file is incomplete or unreadable"),
        "{text}"
    );
}

/// Issue 39, fresh tester's finding 3: an out-of-memory end (the net's `_exit`: no destructor
/// runs) left the claimed 0-byte `….json.tmp` in `--result-dir`. Every temporary file on disk
/// is listed and removed on that end too: here memory runs out (the debug builds'
/// `INFERBENCH_DEBUG_ALLOCATE_ON_TEMP`, 4 GiB under `ulimit -v 1500000`) right after the result
/// name is claimed; the run ends with the net's exit 2 and nothing is left in `--result-dir`.
#[cfg(unix)]
#[test]
fn an_out_of_memory_end_leaves_no_temporary_file() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let dir = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{}", sim.1);
    let o = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "ulimit -v 1500000 || exit 99; exec {BIN} bench --base-url {url} --model \
             Llama-3.1-8B --random-input-len 16 --random-output-len 8 --num-prompts 4 \
             --max-concurrency 2 --save-result --result-dir res"
        ))
        .current_dir(dir.path())
        .env("TOKIO_WORKER_THREADS", "2")
        .env(
            "INFERBENCH_DEBUG_ALLOCATE_ON_TEMP",
            (4u64 << 30).to_string(),
        )
        .output()
        .unwrap();
    let text = common::output_text(&o);
    // The claim is made as the run starts: nothing was sent yet (exit 2).
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("out of memory under `ulimit -v`"), "{text}");
    let left: Vec<String> = std::fs::read_dir(dir.path().join("res"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, Vec::<String>::new());
}

/// Issue 39, fresh tester's finding 4: (1) `--result-filename` naming a dangling symbolic link
/// replaced the link with the result; it is written through, as every output is, and the link
/// stays; (2) `report` left `-wal` and `-shm` beside the database it read (an older-schema one
/// and a current one): a reader leaves no file; (3) `--db` inside a `--result-dir` not there
/// yet was refused although `bench` creates that folder: the check sees it as planned.
#[cfg(unix)]
#[test]
fn result_links_are_followed_readers_leave_no_files_and_planned_folders_take_the_db() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let url = format!("http://127.0.0.1:{}", sim.1);
    std::fs::create_dir_all(d.join("r")).unwrap();
    std::fs::create_dir_all(d.join("elsewhere")).unwrap();
    std::os::unix::fs::symlink("../elsewhere/p.json", d.join("r/res.json")).unwrap();
    let bench = |extra: &[&str]| {
        let mut a = vec![
            "bench",
            "--base-url",
            &url,
            "--model",
            "Llama-3.1-8B",
            "--random-input-len",
            "16",
            "--random-output-len",
            "8",
            "--num-prompts",
            "4",
            "--max-concurrency",
            "2",
        ];
        a.extend_from_slice(extra);
        run_in(d, &a)
    };
    let (code, err) = bench(&[
        "--save-result",
        "--result-dir",
        "r",
        "--result-filename",
        "res.json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let m = std::fs::symlink_metadata(d.join("r/res.json")).unwrap();
    assert!(m.file_type().is_symlink(), "the link was replaced");
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("elsewhere/p.json")).unwrap()).unwrap();
    assert_eq!(v["completed"], 4);
    // (3) The database in the result folder the run creates.
    let (code, err) = bench(&["--result-dir", "r2/sub", "--db", "r2/x.db"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(d.join("r2/x.db").is_file());
    // And in the records file's folder, which the run creates too.
    let (code, err) = bench(&["--save-requests", "r3/req.jsonl", "--db", "r3/x.db"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(d.join("r3/x.db").is_file());
    // Still refused where the planned folder could not be created.
    std::fs::write(d.join("afile"), "x").unwrap();
    let (code, err) = bench(&["--result-dir", "afile/r", "--db", "afile/r/x.db"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--db afile/r/x.db: afile is not a directory"),
        "{err}"
    );
    // (2) Readers leave no side files: the database just written, and an older-schema one.
    std::fs::copy(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../store/tests/old-schema/v4-sweep-h200.db"),
        d.join("old.db"),
    )
    .unwrap();
    for db in ["r2/x.db", "old.db"] {
        let before = std::fs::read(d.join(db)).unwrap();
        let (code, err) = run_in(d, &["report", "--db", db]);
        assert_eq!(code, Some(0), "{err}");
        for side in ["-wal", "-shm", "-journal"] {
            assert!(!d.join(format!("{db}{side}")).exists(), "{db}{side} left");
        }
        assert_eq!(std::fs::read(d.join(db)).unwrap(), before, "{db} changed");
    }
}
