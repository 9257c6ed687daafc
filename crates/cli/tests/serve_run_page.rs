//! The run page of `inferbench serve` over the quickstarts' databases (issue 42), end to end:
//! the binary's `quickstart --agentic` stores its points, `serve` answers `/api/v1/runs/{id}`,
//! whose `sessions` are checked against the replay's own AIPerf artifacts on disk
//! (`aiperf_artifacts/profile_export.jsonl`), and headless Chromium (Debian `chromium`,
//! scripts/setup/chromium.sh; skipped with a message where it is absent, failing under
//! INFERBENCH_REQUIRE_SERVICES=1) draws the AgentX explorer from it.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_inferbench")
}

/// GET `path` from `addr` over HTTP/1.1; returns (status line, body).
fn http_get(addr: &str, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

fn get_json(addr: &str, path: &str) -> Value {
    let (status, body) = http_get(addr, path);
    assert_eq!(status, "HTTP/1.1 200 OK", "{path}: {body}");
    serde_json::from_str(&body).unwrap()
}

fn chromium() -> Option<PathBuf> {
    let require = std::env::var("INFERBENCH_REQUIRE_SERVICES").as_deref() == Ok("1");
    let found = std::env::var_os("INFERBENCH_TEST_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| {
            let p = PathBuf::from("/usr/bin/chromium");
            p.is_file().then_some(p)
        });
    if found.is_none() {
        assert!(
            !require,
            "chromium is required (INFERBENCH_REQUIRE_SERVICES=1; scripts/setup/chromium.sh)"
        );
        eprintln!("skipping the browser part: no chromium (scripts/setup/chromium.sh installs it)");
    }
    found
}

/// The DOM of `url` after its scripts ran, from the private profile `profile` (the browser is
/// started once more when it fails, as the web crate's browser tests do).
fn dump_dom(chromium: &Path, profile: &Path, url: &str) -> String {
    let run = || {
        Command::new(chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
                "--virtual-time-budget=10000",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("--dump-dom")
            .arg(url)
            .output()
            .unwrap()
    };
    let mut out = run();
    if !out.status.success() {
        out = run();
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The value of attribute `attr` of the element with id `id` in `dom`.
fn attr(dom: &str, id: &str, attr: &str) -> Option<String> {
    let at = dom.find(&format!("id=\"{id}\""))?;
    let tag_start = dom[..at].rfind('<')?;
    let tag_end = at + dom[at..].find('>')?;
    let tag = &dom[tag_start..tag_end];
    let key = format!("{attr}=\"");
    let v = tag.find(&key)? + key.len();
    Some(tag[v..v + tag[v..].find('"')?].to_string())
}

/// One request as the explorer places it: (stream, turn, send s, end s), times from the
/// point's first send.
type Placed = (String, u64, f64, f64);

/// What `profile_export.jsonl` says of a point's sessions: root correlation id
/// (`<play, 8 digits>-<trace>`) → its requests, by stream, turn and send.
fn sessions_of_artifacts(path: &Path) -> BTreeMap<String, Vec<Placed>> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ns = |m: &Value, k: &str| m[k].as_u64().unwrap();
    let t0 = (lines.iter())
        .map(|l| ns(&l["metadata"], "request_start_ns"))
        .min()
        .unwrap();
    let mut out: BTreeMap<String, Vec<Placed>> = BTreeMap::new();
    for l in &lines {
        let m = &l["metadata"];
        out.entry(m["root_correlation_id"].as_str().unwrap().to_string())
            .or_default()
            .push((
                m["conversation_id"].as_str().unwrap().to_string(),
                m["turn_index"].as_u64().unwrap(),
                (ns(m, "request_start_ns") - t0) as f64 / 1e9,
                (ns(m, "request_end_ns") - t0) as f64 / 1e9,
            ));
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    }
    out
}

/// The same from the API's `sessions` of one point.
fn sessions_of_api(point: &Value) -> BTreeMap<String, Vec<Placed>> {
    let mut out: BTreeMap<String, Vec<Placed>> = BTreeMap::new();
    for s in point["sessions"].as_array().unwrap() {
        let key = format!(
            "{:08}-{}",
            s["play"].as_u64().unwrap(),
            s["trace_id"].as_str().unwrap()
        );
        let mut placed = Vec::new();
        for st in s["streams"].as_array().unwrap() {
            for r in st["requests"].as_array().unwrap() {
                placed.push((
                    st["id"].as_str().unwrap().to_string(),
                    r["turn"].as_u64().unwrap(),
                    r["send_s"].as_f64().unwrap(),
                    r["end_s"].as_f64().unwrap(),
                ));
            }
        }
        placed.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        assert_eq!(s["requests"].as_u64().unwrap() as usize, placed.len());
        assert!(out.insert(key, placed).is_none());
    }
    out
}

/// Issue 42: on an `inferbench quickstart --agentic` database each run's API answer carries
/// its point's session trees, equal to what the replay's `profile_export.jsonl` says (the same
/// sessions, streams, turns, send and end times), sub-agents under the main agent; the run
/// page's AgentX explorer draws one row per session.
#[test]
fn agentic_run_page_explores_sessions_as_the_artifacts_record_them() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("a.db").display().to_string();
    let out = tmp.path().join("qs");
    let o = Command::new(bin())
        .args(["quickstart", "--agentic", "--fast", "--concurrency", "1,2"])
        .args(["--out", out.to_str().unwrap(), "--db", &db])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::output_text(&o));

    let common::Serving {
        mut child, addr, ..
    } = common::start_serve(Command::new(bin()).args(["serve", "--db", &db, "--port", "0"]));
    let chromium = chromium();
    let mut checked = 0;
    let mut sub_agents = 0;
    for id in [1, 2] {
        let r = get_json(&addr, &format!("/api/v1/runs/{id}"));
        let points = r["sessions"].as_array().unwrap();
        assert_eq!(points.len(), 1, "{r}");
        let point = &points[0];
        assert_eq!(point["point_id"], r["points"][0]["point_id"]);
        assert_eq!(point["unattributed"], 0);
        let dir = PathBuf::from(r["run"]["source_path"].as_str().unwrap());
        let want = sessions_of_artifacts(&dir.join("aiperf_artifacts/profile_export.jsonl"));
        let got = sessions_of_api(point);
        assert!(!want.is_empty());
        assert_eq!(got, want);
        for s in point["sessions"].as_array().unwrap() {
            let streams = s["streams"].as_array().unwrap();
            // The main agent first; every sub-agent's parent is it.
            assert_eq!(streams[0]["id"], s["trace_id"]);
            assert_eq!(streams[0]["parent"], Value::Null);
            for st in &streams[1..] {
                assert_eq!(st["parent"], s["trace_id"]);
                sub_agents += 1;
            }
        }
        if let Some(chromium) = &chromium {
            let dom = dump_dom(
                chromium,
                &tmp.path().join("profile"),
                &format!("http://{addr}/run?id={id}"),
            );
            let n = want.len().to_string();
            assert_eq!(attr(&dom, "explorer", "data-sessions"), Some(n), "{dom}");
            assert_eq!(
                dom.matches("class=\"session-row\"").count(),
                want.len(),
                "{dom}"
            );
        }
        checked += want.len();
    }
    // Lanes 1 and 2: one and two session trees (plays), at least one with a sub-agent.
    assert!(checked >= 3, "{checked}");
    assert!(sub_agents > 0);
    common::signal(child.id(), "TERM");
    assert_eq!(child.wait().unwrap().code(), Some(130));
}
