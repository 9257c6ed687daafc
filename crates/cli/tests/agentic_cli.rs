//! The AgentX path from the command line, as a new user runs it from the README: `quickstart
//! --agentic` and an agentic `sweep` of `examples/sim-agentic.yaml` into one database, then the
//! plain `report`; `agentx-traces` names what it wrote once.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn text(o: &Output) -> String {
    common::output_text(o)
}

/// Issue 13's third first-hour trial: agentic rows showed ISL/OSL 0, the plain report had no
/// North-Star column, a quickstart and a sweep of the same point printed identical rows, sweep
/// directories ended in the host name, and per-point lines had neither the agentic metric nor
/// the invalid mark (while `--agentic-duration` below 900 s passed silently).
#[test]
fn quickstart_and_sweep_agentic_points_read_apart_in_one_report() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("a.db");
    let db_s = db.to_str().unwrap();
    let o = run(&[
        "quickstart",
        "--agentic",
        "--fast",
        "--concurrency",
        "1,2",
        "--out",
        tmp.path().join("qs").to_str().unwrap(),
        "--db",
        db_s,
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // Its notes name the point by lanes, as its progress lines do (trial 25: "note (conc 1)").
    let qs = text(&o);
    assert!(
        qs.contains("\n  note (lanes 1): replay duration ") && !qs.contains("note (conc"),
        "{qs}"
    );

    let ex = repo().join("examples");
    let matrix = tmp.path().join("m.json");
    let o = run(&[
        "matrix",
        "full-sweep",
        "--config-files",
        ex.join("sim-agentic.yaml").to_str().unwrap(),
        "--runner-config",
        ex.join("sim-runners.yaml").to_str().unwrap(),
        "-o",
        matrix.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = tmp.path().join("agentic");
    let o = run(&[
        "sweep",
        "--matrix",
        matrix.to_str().unwrap(),
        "--runner-config",
        ex.join("sim-runners.yaml").to_str().unwrap(),
        "--traces",
        ex.join("agentx-traces.jsonl").to_str().unwrap(),
        "--agentic-duration",
        "4",
        "--out",
        out.to_str().unwrap(),
    ]);
    let sweep = text(&o);
    assert!(o.status.success(), "{sweep}");
    // The simulator has no GPU: no "no GPU power sampler found" note (trial 14).
    assert!(!sweep.contains("power sampler"), "{sweep}");
    // The summary counts the invalid points among the ok ones (trial 14: "3 ok" under three
    // INVALID lines).
    assert!(
        sweep.contains("3 points: 3 ok (3 of them invalid: kept off frontiers), 0 skipped"),
        "{sweep}"
    );
    // One line per point with the North-Star x and the invalid mark.
    let lines: Vec<&str> = sweep.lines().filter(|l| l.contains("] row ")).collect();
    assert_eq!(lines.len(), 3, "{sweep}");
    for l in &lines {
        assert!(
            l.contains("p90 E2E-norm interactivity ")
                && l.contains(" tok/s/user")
                && l.contains("s measured after the warmup (first send to last completion)")
                && l.ends_with(", INVALID (submission_valid=false)"),
            "{l}"
        );
    }
    // The short duration is said once for the sweep, not once per point.
    assert_eq!(
        sweep
            .matches("replay duration 4 s is shorter than AgentX's 900 s")
            .count(),
        1,
        "{sweep}"
    );
    // Point directories carry the runner config's runner name, never the host's.
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("summary.json").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    for n in &names {
        assert!(n.ends_with("_h100-sim_0"), "{n}");
    }
    // job.json says what was replayed and how (issue 12's live comparison found the sweep's
    // job.json without the traces, window, grace, warmups and seed).
    let job: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join(&names[0]).join("job.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        job["replay"],
        serde_json::json!({
            "traces": ex.join("agentx-traces.jsonl").to_str().unwrap(),
            "duration_s": 4.0, "grace_s": 30.0, "warmup_per_lane": 10, "seed": 42
        }),
        "{job}"
    );
    assert!(job.get("bench").is_none(), "{job}");

    let o = run(&["ingest", out.to_str().unwrap(), "--db", db_s]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&["report", "--db", db_s]);
    let report = text(&o);
    assert!(o.status.success(), "{report}");
    // What every row shares is named once above the table (`every row: model=… hardware=…`),
    // the agentic scenario among it: agentic replays have no ISL/OSL columns (trial 6).
    let first = report.lines().next().unwrap();
    assert!(first.starts_with("every row: model="), "{report}");
    assert!(first.contains("scenario=agentic-coding"), "{report}");
    let table = report.split_once("\n\n").unwrap().1;
    let head: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert!(head.contains(&"p90_e2e_norm_intvty"), "{report}");
    assert!(head.contains(&"batch"), "{report}");
    let batch = head.iter().position(|c| *c == "batch").unwrap();
    assert!(!head.contains(&"isl") && !head.contains(&"osl"), "{report}");
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(2)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 5, "{report}");
    // The two runs' conc-1 points differ by their batch.
    let mut batches: Vec<&str> = rows.iter().map(|r| r[batch]).collect();
    batches.sort();
    batches.dedup();
    assert_eq!(batches.len(), 2, "{report}");
    // A sweep's batch shows as its directory's last two components (`<tmp>/agentic`).
    assert!(batches.iter().any(|b| b.ends_with("/agentic")), "{report}");
    assert!(
        batches.iter().any(|b| b.starts_with("quickstart-")),
        "{report}"
    );
    assert!(
        report.contains("\nbatch = the run a point came from"),
        "{report}"
    );
    // Invalid points (below 900 s) are listed but never on a frontier, unless asked.
    for r in &rows {
        assert_eq!(r.last(), Some(&"invalid"), "{report}");
    }
    let csv = |extra: &[&str]| {
        let mut a = vec!["report", "--db", db_s, "--frontier", "--format", "csv"];
        a.extend_from_slice(extra);
        let o = run(&a);
        assert!(o.status.success(), "{}", text(&o));
        (
            String::from_utf8_lossy(&o.stdout).lines().count(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (lines, why) = csv(&[]);
    assert_eq!(lines, 1, "only the header: {why}");
    assert_eq!(
        why.trim_end(),
        "no frontier point: the 5 matching point(s) are invalid (the run was cut short, its \
         server fell behind its schedule (starved of CPU), the client could not keep up, the \
         server's prefix cache served a random prompt set, or an AgentX replay ran for less than \
         900 s); --include-invalid lets them compete"
    );
    // With them: the header and at least one frontier point.
    assert!(csv(&["--include-invalid"]).0 >= 2);
    // Why each is invalid, in words that fit a quickstart and a sweep alike (trial 17: the
    // quickstart's points named `--unsafe-override`, a flag its user never passed).
    let o = run(&["report", "--db", db_s, "--format", "json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows.len(), 5, "{}", text(&o));
    for r in &rows {
        let why = r["invalid_reason"].as_str().unwrap_or_default();
        assert!(
            why.contains("replay shorter than AgentX's 900 s minimum") && !why.contains("--"),
            "{r}"
        );
    }
}

/// A small corpus is named once, after it is written, with its size (trial 16: announced
/// before and after); the full-size ones are announced before (the unit test of `size_notice`).
#[test]
fn agentx_traces_names_a_small_corpus_once() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("t.jsonl");
    let o = run(&[
        "agentx-traces",
        "--shape",
        "quickstart",
        "-o",
        out.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert_eq!(String::from_utf8_lossy(&o.stderr), "", "{t}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let real = std::fs::metadata(&out).unwrap().len() as f64 / 1e3;
    assert_eq!(stdout.matches(&out.display().to_string()).count(), 1, "{t}");
    assert!(
        stdout.starts_with(&format!("wrote {}: 6 sessions", out.display())),
        "{t}"
    );
    assert!(stdout.trim_end().ends_with(&format!("{real:.0} kB")), "{t}");
}

/// Trial 17: a missing corpus is named by its flag, not as a bare "No such file or directory".
#[test]
fn replay_names_a_missing_traces_file_by_its_flag() {
    let o = run(&[
        "replay",
        "--traces",
        "/nonexistent/traces.jsonl",
        "--base-url",
        "http://127.0.0.1:9",
        "--model",
        "m",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: --traces /nonexistent/traces.jsonl: no such file or directory\n"
    );
}

/// Trial 23 #12: a replay against a dead port printed "Requests not sent: 0", "4 plays
/// (0 finished)" and "Validity: invalid (duration below 900 s)" under "nothing measured". The
/// report now says only what happened: stdout is exactly these lines; exit 3.
#[test]
fn replay_against_a_dead_port_says_only_that_nothing_was_measured() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let traces = repo().join("examples/agentx-traces.jsonl");
    let o = run(&[
        "replay",
        "--traces",
        traces.to_str().unwrap(),
        "--base-url",
        &format!("http://127.0.0.1:{port}"),
        "--model",
        "m",
        "--concurrency",
        "4",
        "--benchmark-duration",
        "10",
        "--unsafe-override",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "============ Serving Benchmark Result ============\n\
         Stopped early:                          server unreachable before the profile: nothing measured\n\
         Warmup requests (failed):               1 (1)     \n\
         Warmup errors by class:                 connect=1 \n\
         ==================================================\n"
    );
}

/// `inferbench … | head`: the reader going away ends the command quietly (exit 141, the shell's
/// SIGPIPE convention), not with a panic and a backtrace.
#[cfg(unix)]
#[test]
fn a_closed_stdout_pipe_ends_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let err = tmp.path().join("err.txt");
    let db = tmp.path().join("q.db");
    let o = run(&[
        "quickstart",
        "--fast",
        "--concurrency",
        "1",
        "--out",
        tmp.path().join("qs").to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    // The reader (`true`) has exited before `report` writes its table.
    let script = format!(
        "(sleep 0.3; '{BIN}' report --db '{}'; echo \"rc=$?\" >&2) 2>'{}' | true",
        db.display(),
        err.display()
    );
    let o = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    assert!(o.status.success());
    let e = std::fs::read_to_string(&err).unwrap();
    assert_eq!(e, "rc=141\n");
    // The same when the reader of stderr goes (trial 19: `sweep 2>&1 | head -1` panicked with
    // exit 101): `report` on a missing database writes its error there.
    let rc = tmp.path().join("rc.txt");
    let script = format!(
        "{{ sleep 0.3; '{BIN}' report --db '{}' 2>&1; echo \"rc=$?\" >'{}'; }} | true",
        tmp.path().join("missing.db").display(),
        rc.display()
    );
    let o = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    assert!(o.status.success());
    assert_eq!(std::fs::read_to_string(&rc).unwrap(), "rc=141\n");
}

/// Trial 7: an agentic quickstart interrupted during its second point drew that cut-short
/// point on its preview frontier. It is now listed `invalid` (a footer line says why), never
/// starred, and the run exits 130.
#[cfg(unix)]
#[test]
fn interrupted_agentic_quickstart_keeps_the_cut_point_off_the_preview() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args([
        "quickstart",
        "--agentic",
        "--concurrency",
        "1,2",
        "--no-db",
        "--out",
        tmp.path().join("qs").to_str().unwrap(),
    ]);
    // Into the measured part of the second point's 6 s replay, past its warmup: about 3 s
    // before the first point's whole time ("took N s with the warmup") has passed again. A
    // fixed 4 s fell inside the warmup on a loaded machine (the first point took 10.9 s there),
    // so the cut point had nothing measured and was stored as failed instead.
    let (code, out, err) = common::interrupt_after_line_by(cmd, "lanes  1:", |l| {
        let took = l
            .split("took ")
            .nth(1)
            .and_then(|t| t.split(' ').next())
            .and_then(|t| t.parse::<f64>().ok())
            .unwrap_or(7.0);
        std::time::Duration::from_secs_f64((took - 3.0).max(4.0))
    });
    assert_eq!(code, Some(130), "{out}{err}");
    // The cut point's progress line says so (trial 26), the finished one's does not.
    let line = |lanes: &str| {
        (err.lines())
            .find(|l| l.starts_with(&format!("  lanes  {lanes}: ")))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line("2").ends_with(" (cut short by the interruption)") && !line("1").contains("cut short"),
        "{err}"
    );
    // Trial 17: it said "stopping after this point", and then cut the point at once.
    assert!(
        err.contains(
            "interrupted; cutting the current point short and storing what finished (on SIGINT)"
        ),
        "{err}"
    );
    let row = |conc: &str| -> String {
        out.lines()
            .find(|l| l.split_whitespace().next() == Some(conc))
            .unwrap_or_else(|| panic!("no conc {conc} row:\n{out}{err}"))
            .to_string()
    };
    assert!(row("1").trim_end().ends_with('*'), "{out}");
    assert!(row("2").trim_end().ends_with("invalid"), "{out}");
    // One legend for both marks (trial 16: the report's `invalid = …`, a second `invalid =
    // cut short` and a third line calling every point invalid).
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(!flat.contains("invalid = "), "{out}");
    assert_eq!(flat.matches("900 s").count(), 1, "{out}");
    assert!(
        flat.contains(
            "`*` marks this run's preview frontier (tok/s/GPU against p90 E2E-normalized \
             interactivity) among the points that replayed their whole time; `invalid` = cut short besides (interrupted before its replay time ran out): \
             never on the preview frontier"
        ),
        "{out}"
    );
    // The last line's count says that the store keeps them all as invalid, and why.
    assert!(
        err.contains(
            "2 points (all invalid: replays under 900 s or cut short), not stored (--no-db)"
        ),
        "{err}"
    );
}

/// Issue 39 §4 (fresh tester): a replay that ran its course and measured nothing (a trace whose
/// `t` goes 10 then 0: replayed in `t` order, the warmup takes the first request and the next
/// is due 9 s later, after the 3 s window, so no profile request is sent) has the one status,
/// failed: the console says `Status: failed (…)`, not `Validity: invalid`; `summary.json` and
/// the AgentX aggregate carry `failed_reason`; exit 1; ingested, the point is failed with that
/// cause as its `error` and no `invalid_reason` (it also had "replay shorter than AgentX's 900
/// s minimum").
#[test]
fn a_replay_that_measured_nothing_is_failed_not_invalid() {
    let sim = common::start_sim(&[]);
    let tmp = tempfile::tempdir().unwrap();
    let traces = tmp.path().join("t.jsonl");
    std::fs::write(
        &traces,
        r#"{"id":"a","models":["m"],"block_size":64,"hash_id_scope":"local","requests":[{"t":10,"model":"m","in":64,"out":4,"hash_ids":[0],"api_time":1,"type":"s"},{"t":0,"model":"m","in":128,"out":4,"hash_ids":[0,1],"api_time":1,"type":"s"}]}
"#,
    )
    .unwrap();
    let out = tmp.path().join("OUT");
    let o = run(&[
        "replay",
        "--traces",
        traces.to_str().unwrap(),
        "--base-url",
        &format!("http://127.0.0.1:{}", sim.1),
        "--model",
        "Llama-3.1-8B",
        "--concurrency",
        "1",
        "--benchmark-duration",
        "3",
        "--unsafe-override",
        "--result-dir",
        out.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    const WHY: &str = "nothing was measured: no profile request was sent within the replay window";
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains(&format!("Status: failed ({WHY})\n")), "{t}");
    assert!(!stdout.contains("Validity:"), "{t}");
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(out.join(name)).unwrap()).unwrap()
    };
    let s = read("summary.json");
    assert_eq!(s["inferbench"]["failed_reason"], WHY, "{s}");
    assert!(s["inferbench"].get("invalid_reason").is_none(), "{s}");
    assert_eq!(read("agentic_aggregate.json")["failed_reason"], WHY);
    let db = tmp.path().join("r.db");
    let db = db.to_str().unwrap();
    let o = run(&[
        "ingest",
        out.to_str().unwrap(),
        "--db",
        db,
        "--set",
        "hw=h100",
        "--set",
        "framework=sim",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&["report", "--db", db, "--include-failed", "--format", "json"]);
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rows[0]["error"], WHY, "{rows}");
    assert_eq!(rows[0]["invalid_reason"], serde_json::Value::Null, "{rows}");
}
