//! `inferbench serve` end to end: the binary on a free port over an ingested database; its CSV
//! export equals `inferbench report --format csv` with the same filter; it refuses a missing
//! database as `report` does; SIGTERM stops it with exit 130, as every long-running subcommand.

mod common;

use common::http_get;
use std::path::Path;
use std::process::Command;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_inferbench")
}

#[test]
fn serve_exports_reports_csv_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db").display().to_string();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures/sweep-h200");
    let o = Command::new(bin())
        .args(["ingest", &fixtures.display().to_string(), "--db", &db])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let common::Serving {
        mut child,
        first,
        addr,
        rest,
    } = common::start_serve(Command::new(bin()).args(["serve", "--db", &db, "--port", "0"]));
    // The landing page's URL, which links into every view (issue 42: it printed /inference).
    assert_eq!(
        first,
        format!("inferbench serve: {db} read-only at http://{addr}/ (Ctrl-C stops)\n")
    );
    assert!(addr.starts_with("127.0.0.1:"), "{first}");

    // The export is `report --format csv` byte for byte (fresh tester of issue 39 §5, item 4:
    // ~240 more columns): by default, with `columns=all` / `--columns all` (issue 42's every
    // stored and derived metric), and with columns named.
    for (q, cols) in [
        ("", None),
        ("&columns=all", Some("all")),
        ("&columns=conc,p90_ttft,batch", Some("conc,p90_ttft,batch")),
    ] {
        let (status, csv) = http_get(&addr, &format!("/api/v1/points.csv?hw=h200{q}"));
        assert_eq!(status, "HTTP/1.1 200 OK");
        let report = Command::new(bin())
            .args(["report", "--db", &db, "-f", "hw=h200", "--format", "csv"])
            .args(cols.map(|c| ["--columns", c]).into_iter().flatten())
            .output()
            .unwrap();
        assert!(
            report.status.success(),
            "{}",
            String::from_utf8_lossy(&report.stderr)
        );
        assert_eq!(csv, String::from_utf8(report.stdout).unwrap(), "{q}");
        let header = csv.lines().next().unwrap().to_string();
        assert!(header.starts_with(match cols {
            Some("conc,p90_ttft,batch") => "conc,p90_ttft,batch",
            _ => "model,isl,osl,hardware,framework,precision,spec,parallelism,conc,date,batch,",
        }));
        let n = header.split(',').count();
        assert!(
            if cols == Some("all") {
                n > 100
            } else {
                n <= 19
            },
            "{q}: {header}"
        );
    }
    let (status, _) = http_get(&addr, "/api/v1/points?hw=");
    assert_eq!(status, "HTTP/1.1 400 Bad Request");

    // SIGTERM: a clean stop, 130 as `sim`, `bench` and `sweep` (trial 13: serve alone said 0).
    common::signal(child.id(), "TERM");
    let code = child.wait().unwrap();
    assert_eq!(code.code(), Some(130));
    assert_eq!(
        rest.join().unwrap(),
        "inferbench serve: stopping (on SIGTERM)\n"
    );

    // No database: exit 2 with report's message, nothing served.
    let missing = dir.path().join("none.db").display().to_string();
    let o = Command::new(bin())
        .args(["serve", "--db", &missing, "--port", "0"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no database at"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Issue 9's "done when", on what runs here: `serve` over one database holding a quickstart,
/// an agentic quickstart and InferenceX's test dump shows all of them: every sequence and the
/// agentic scenario as options, each in the support matrix (the quickstart's local, the dump's
/// InferenceX), the agentic chart on its North-Star x, a quickstart point's server-metric
/// gauges, and every page.
#[test]
fn serve_shows_quickstarts_beside_an_imported_dump() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("all.db").display().to_string();
    let dump = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../store/tests/dumps/inferencex-dump-2026-07-06")
        .display()
        .to_string();
    for args in [
        vec!["quickstart", "--fast", "--db", &db],
        vec!["quickstart", "--agentic", "--fast", "--db", &db],
        vec!["ingest", "--inferencex-dump", &dump, "--db", &db],
    ] {
        let o = Command::new(bin())
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let common::Serving {
        mut child,
        addr,
        rest: drain,
        ..
    } = common::start_serve(Command::new(bin()).args(["serve", "--db", &db, "--port", "0"]));
    let json = |path: &str| -> serde_json::Value {
        let (status, body) = http_get(&addr, path);
        assert_eq!(status, "HTTP/1.1 200 OK", "{path}: {body}");
        serde_json::from_str(&body).unwrap()
    };
    let opts = json("/api/v1/options");
    assert_eq!(
        opts["sequences"],
        serde_json::json!(["512/64", "1024/1024", "8192/1024", "agentic-coding"]),
        "{opts}"
    );
    let models = json("/api/v1/models");
    let rows: Vec<(String, String, i64, i64)> = models["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                format!(
                    "{} {} {}",
                    r["model"].as_str().unwrap(),
                    r["hardware"].as_str().unwrap(),
                    r["framework"].as_str().unwrap()
                ),
                r["precision"].as_str().unwrap().to_string(),
                r["sequences"].as_i64().unwrap(),
                r["public_points"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("dsr1 h200 sglang".to_string(), "fp8".to_string(), 1, 2),
            ("gptoss120b b200 trt".to_string(), "fp4".to_string(), 1, 1),
            ("llama3.1-8b h100 sim".to_string(), "bf16".to_string(), 2, 0),
        ]
    );
    let agentic = json("/api/v1/points?scenario=agentic-coding");
    assert_eq!(agentic["x"]["key"], "p90_e2e_norm_intvty", "{agentic}");
    assert_eq!(agentic["count"], 4, "{agentic}");
    let fixed = json("/api/v1/points?model=llama3.1-8b&isl=512&osl=64");
    assert_eq!(fixed["count"], 4, "{fixed}");
    let pid = fixed["points"][0]["point_id"].as_i64().unwrap();
    let sm = json(&format!("/api/v1/points/{pid}/server_metrics"));
    let names: Vec<&str> = sm["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"vllm:num_requests_running"), "{names:?}");
    let run = fixed["points"][0]["run_id"].as_i64().unwrap();
    for page in [
        "/inference".to_string(),
        format!("/run?id={run}"),
        "/compare".into(),
        "/history".into(),
        "/evals".into(),
        "/models".into(),
        "/tco".into(),
    ] {
        let (status, body) = http_get(&addr, &page);
        assert_eq!(status, "HTTP/1.1 200 OK", "{page}");
        assert!(body.starts_with("<!doctype html>"), "{page}");
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    drain.join().unwrap();
}

/// Issue 39: `serve` had no memory check at start: under `ulimit -v 60000` a thread could not
/// start (a panic, then a hang; at 58000 queries went unanswered). It now checks its own need (the binary, the
/// database's cache and its threads: 65 MiB under `ulimit -v`, 2 workers and 4 blocking
/// threads) before opening the database: below it, exit 2 naming the limit and the value that
/// fits, nothing served; at that value it serves every page and route and stops with 130.
#[test]
fn serve_under_a_too_small_ulimit_v_exits_2_naming_the_value_that_fits() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.db").display().to_string();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures/sweep-h200");
    let o = Command::new(bin())
        .args(["ingest", &fixtures.display().to_string(), "--db", &db])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let under = |kib: &str| {
        let mut c = Command::new("bash");
        c.arg("-c")
            .arg(format!("ulimit -v {kib} || exit 99; exec \"$0\" \"$@\""))
            .arg(bin())
            .args(["serve", "--db", &db, "--port", "0"]);
        c
    };
    let o = under("58000").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", common::output_text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "error: inferbench serve needs about 65 MiB to open the database and serve (50 MiB for \
         the binary and the database's cache and 15 MiB for its threads, as measured) and the \
         address-space limit `ulimit -v` is 56 MiB: raise it (`ulimit -v 66560` fits) (nothing \
         was served)\n"
    );
    let common::Serving {
        mut child,
        addr,
        rest,
        ..
    } = common::start_serve(&mut under("66560"));
    for path in [
        "/",
        "/api/v1/points",
        "/api/v1/runs",
        "/api/v1/points.csv?hw=h200",
        "/api/v1/history",
        "/inference",
    ] {
        let (status, _) = http_get(&addr, path);
        assert!(status.starts_with("HTTP/1.1 "), "{path}: {status}");
        assert!(!status.starts_with("HTTP/1.1 5"), "{path}: {status}");
    }
    common::signal(child.id(), "TERM");
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert_eq!(
        rest.join().unwrap(),
        "inferbench serve: stopping (on SIGTERM)\n"
    );
}
