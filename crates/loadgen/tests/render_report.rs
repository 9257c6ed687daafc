//! `bench`'s console report (`output::render_report`) pinned byte for byte over its branches:
//! a measured run, one with every extra (cancellations, goodput, errors, anomalies, the client
//! self-check, an interruption), one where no request succeeded, one whose every warmup failed (the profile never ran), and an
//! unreachable server.
//! The summaries are the golden conc-4 point's (`crates/cli/tests/golden`) with fields set.

use inferbench_core::summary::{ClientCheck, RunSummary, StopReason};
use inferbench_loadgen::output::render_report;

fn golden() -> RunSummary {
    serde_json::from_str(include_str!("../../cli/tests/golden/conc4.summary.json")).unwrap()
}

/// The five reports, each under a `## <case>` line.
fn reports() -> String {
    let plain = golden();
    let mut extras = golden();
    extras.request_goodput = Some(1.25);
    let x = &mut extras.inferbench;
    x.cancelled_by_user = 2;
    x.warmup_cancelled_by_user = 1;
    x.requests_not_sent = 3;
    x.stop_reason = StopReason::Interrupted;
    x.errors_by_class.insert("http_5xx".into(), 4);
    x.warmup_errors_by_class.insert("timeout".into(), 1);
    x.anomalies.insert("ttft_after_e2el".into(), 1);
    x.anomalies.insert("zero".into(), 0);
    x.client = Some(ClientCheck {
        requested: 4,
        held_ratio: 0.5,
        cpu_s: 1.0,
        cpu_cores: 0.97,
        cores_available: 2,
        slots_busy_ratio: Some(0.75),
        runqueue_wait_s: None,
        client_bound: true,
    });
    let mut none = golden();
    none.completed = 0;
    none.inferbench.stop_reason = StopReason::Aborted;
    let mut warmups_failed = golden();
    warmups_failed.completed = 0;
    warmups_failed.inferbench.failed = 0;
    warmups_failed.inferbench.warmups = 4;
    warmups_failed.inferbench.warmup_failed = 4;
    warmups_failed.inferbench.requests_not_sent = 10;
    warmups_failed.inferbench.stop_reason = StopReason::Aborted;
    (warmups_failed.inferbench.warmup_errors_by_class).insert("http_status".into(), 4);
    let mut unreachable = golden();
    unreachable.completed = 0;
    unreachable.inferbench.failed = 0;
    unreachable.inferbench.warmup_failed = 1;
    unreachable.inferbench.requests_not_sent = 16;
    unreachable.inferbench.stop_reason = StopReason::ServerUnreachable;
    (unreachable.inferbench.warmup_errors_by_class).insert("connect".into(), 1);
    let mut out = String::new();
    for (name, s) in [
        ("plain", plain),
        ("extras", extras),
        ("none succeeded", none),
        ("every warmup failed", warmups_failed),
        ("unreachable", unreachable),
    ] {
        out.push_str(&format!("## {name}\n{}", render_report(&s)));
    }
    out
}

#[test]
fn console_report_is_pinned() {
    let got = reports();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/render_report.txt");
    if std::env::var_os("INFERBENCH_BLESS").is_some() {
        std::fs::write(path, &got).unwrap();
    }
    let want = std::fs::read_to_string(path).unwrap();
    assert_eq!(
        got, want,
        "set INFERBENCH_BLESS=1 to rewrite {path} after a deliberate change"
    );
}
