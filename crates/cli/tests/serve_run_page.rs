//! The run page of `inferbench serve` over the quickstarts' databases (issue 42), end to end:
//! the binary's `quickstart --agentic` stores its points, `serve` answers `/api/v1/runs/{id}`,
//! whose `sessions` are checked against the replay's own AIPerf artifacts on disk
//! (`aiperf_artifacts/profile_export.jsonl`), and headless Chromium (Debian `chromium`,
//! scripts/setup/chromium.sh; skipped with a message where it is absent, failing under
//! INFERBENCH_REQUIRE_SERVICES=1) draws the AgentX explorer from it.

mod common;

use common::get_json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use inferbench_testutil::browser::{attr, Browser};
use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_inferbench")
}

/// Runs `inferbench ARGS --out DIR/qs --db DIR/q.db` (a quickstart; it must succeed) and
/// serves that database on a free port.
fn quickstart_served(dir: &Path, args: &[&str]) -> common::Serving {
    let db = dir.join("q.db").display().to_string();
    let o = Command::new(bin())
        .args(args)
        .args(["--out", dir.join("qs").to_str().unwrap(), "--db", &db])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::output_text(&o));
    common::start_serve(Command::new(bin()).args(["serve", "--db", &db, "--port", "0"]))
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
    let common::Serving {
        mut child, addr, ..
    } = quickstart_served(
        tmp.path(),
        &["quickstart", "--agentic", "--fast", "--concurrency", "1,2"],
    );
    let browser = Browser::find(tmp.path().join("profile"));
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
        // The replay's /metrics scrapes are stored (server_metrics.jsonl beside the AIPerf
        // export), so the point's timeline has the server's state beside the lanes in flight.
        let pid = point["point_id"].as_i64().unwrap();
        let t = get_json(&addr, &format!("/api/v1/points/{pid}/timeline"));
        let keys: Vec<&str> = (t["server"].as_array().unwrap().iter())
            .map(|s| s["key"].as_str().unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "running",
                "waiting",
                "kv_usage",
                "preemptions",
                "prefix_hit_rate"
            ],
            "{t}"
        );
        assert!(t["warmup"].is_array(), "{t}");
        assert_eq!(t["self_check"], Value::Null);
        assert_eq!(
            t["verdict"]["invalid_reason"],
            r["points"][0]["invalid_reason"]
        );
        if let Some(b) = &browser {
            let dom = b.dom(&format!("http://{addr}/run?id={id}"));
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

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Issue 42 on an `inferbench quickstart` database: each point's timeline answers its profile
/// window, client self-check and in-flight peak as its `summary.json` on disk says them, its
/// validity as the run's answer, and the server's state from the stored scrapes; the run page
/// shows them (verdict, self-check, the series drawn) and each point's GPU-seconds; the History
/// and TCO pages show the group's GPU-seconds, the sum of its points'.
#[test]
fn run_history_and_tco_pages_say_why_points_sit_where_they_do_and_what_they_cost() {
    let tmp = tempfile::tempdir().unwrap();
    let common::Serving {
        mut child, addr, ..
    } = quickstart_served(tmp.path(), &["quickstart", "--fast"]);
    let browser = Browser::find(tmp.path().join("profile"));
    let mut total_gpu_s = 0.0;
    for id in 1..=4 {
        let r = get_json(&addr, &format!("/api/v1/runs/{id}"));
        let p = &r["points"][0];
        let gpu_s = p["gpu_seconds"].as_f64().unwrap();
        assert!(gpu_s > 0.0, "{p}");
        total_gpu_s += gpu_s;
        let dir = PathBuf::from(r["run"]["source_path"].as_str().unwrap());
        let summary = read_json(&dir.join("summary.json"));
        let ib = &summary["inferbench"];
        let t = get_json(&addr, &format!("/api/v1/points/{}/timeline", p["point_id"]));
        let w = &ib["profile_window_ns"];
        let len = (w[1].as_u64().unwrap() - w[0].as_u64().unwrap()) as f64 / 1e9;
        assert_eq!(t["profile_window"], serde_json::json!([0.0, len]));
        assert_eq!(t["clock"], "modelled");
        assert_eq!(
            t["client"]["max_in_flight"],
            ib["concurrency"]["max_in_flight"]
        );
        assert_eq!(
            t["client"]["mean_in_flight"],
            ib["concurrency"]["mean_in_flight"]
        );
        for k in [
            "requested",
            "held_ratio",
            "client_bound",
            "cpu_cores",
            "cores_available",
        ] {
            assert_eq!(t["self_check"][k], ib["client"][k], "{k}");
        }
        let valid = p["valid"].as_bool().unwrap() && p["error"].is_null();
        assert_eq!(t["verdict"]["valid"], valid);
        assert_eq!(t["verdict"]["invalid_reason"], p["invalid_reason"]);
        let keys: Vec<&str> = (t["server"].as_array().unwrap().iter())
            .map(|s| s["key"].as_str().unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "running",
                "waiting",
                "kv_usage",
                "preemptions",
                "prefix_hit_rate"
            ]
        );
        let Some(b) = &browser else { continue };
        let dom = b.dom(&format!("http://{addr}/run?id={id}"));
        assert_eq!(
            attr(&dom, "why", "data-server").as_deref(),
            Some("running,waiting,kv_usage,preemptions,prefix_hit_rate"),
            "{dom}"
        );
        let steps = t["client"]["in_flight"].as_array().unwrap().len();
        assert_eq!(
            attr(&dom, "why", "data-client-steps"),
            Some(steps.to_string())
        );
        assert_eq!(
            attr(&dom, "why-check", "data-client-bound"),
            Some(ib["client"]["client_bound"].to_string())
        );
        let verdict = if valid {
            "verdict: valid — counted on frontiers".to_string()
        } else {
            format!(
                "verdict: invalid — {} (kept off frontiers unless invalid points are included)",
                p["invalid_reason"].as_str().unwrap()
            )
        };
        assert!(
            dom.contains(&format!(
                "id=\"why-verdict\" data-valid=\"{valid}\">{verdict}</p>"
            )),
            "{dom}"
        );
        // This run's row of the batch table, with its GPU-seconds.
        let row = &dom[dom.find("<tr class=\"this-run\">").unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(row.contains(&format!("<td>{gpu_s:.1}</td>")), "{row}");
    }
    if let Some(b) = &browser {
        for page in ["history", "tco"] {
            let dom = b.dom(&format!("http://{addr}/{page}"));
            assert_eq!(
                attr(&dom, "gpu-seconds", "data-groups").as_deref(),
                Some("1"),
                "{dom}"
            );
            assert_eq!(
                attr(&dom, "gpu-seconds", "data-known").as_deref(),
                Some("1")
            );
            let body = &dom[dom.find("id=\"gpu-seconds\"").unwrap()..];
            assert!(
                body.contains(&format!(
                    "<td>llama3.1-8b 512/64 h100_sim_bf16</td><td>{total_gpu_s:.1}</td><td>{:.3}</td><td>0</td>",
                    total_gpu_s / 3600.0
                )),
                "{page}: {body}"
            );
        }
    }
    common::signal(child.id(), "TERM");
    assert_eq!(child.wait().unwrap().code(), Some(130));
}
