//! Issue 43: the AgentX early stop (`AgenticEarlyStop`) replayed over finished full-duration
//! AgentX points (a sweep's point directories: `job.json`, `summary.json`,
//! `requests.jsonl[.zst]`). For each point:
//!
//! - the records in the records file's order (the order the replay's loop handed them on,
//!   which is the order its tracker saw them), taken as `LoopState::early_stop_check` takes
//!   them: profile records not cut by the run; the first profile send among those seen; each
//!   sample ([`agentic_sample`]) checked when [`AgenticEarlyStop::due`] at its end; the first
//!   check at which the rule without the finite-population factor (duration unknown) and with
//!   it (the replay's duration) would stop: profiled seconds and samples;
//! - at each stop, the point the replay would have recorded: the warmup records, the profile
//!   records that ended by the stop, and those in flight then that end within the grace (30 s,
//!   kept as recorded: the one approximation, since without new sends they would have run on a
//!   slightly lighter engine); those sent after it and those past the grace are left out, as
//!   the replay leaves out requests cut at its duration. It is summarized by the replay's own
//!   `replay_summary`: its p90 E2E-normalized interactivity and total token throughput against
//!   the point's `summary.json` (the full records summarized the same way are printed beside,
//!   to show the summary is reproduced);
//! - the half-width at every due check (`--trace`), and for a point that never stops the
//!   smallest half-width × factor reached and where;
//! - the estimator's bias at the stop: the rule's centre (the mean of the batches' p90s) and
//!   the pooled p90 of the same samples against the full point's; the requests in flight at
//!   the stop (their p90, how many the grace would cut); the sessions in flight (a request
//!   ended by then and one sent after) and the stopped point's p90 without them; the full
//!   point's p90 and tokens by halves (a trend);
//! - a what-if that is not the rule: a throughput term (the total throughput's half-width over
//!   10 equal time slices of the profiled window, times the same factor) beside the p90's.
//!
//! Run: `cargo run -p inferbench-loadgen --example agentic_early_stop_records --
//! [--trace] [--duration S] [--tolerance T] POINT_OR_SWEEP_DIR...` (duration 1800 s, tolerance
//! 0.02).

use std::path::{Path, PathBuf};

use inferbench_core::record::{ErrorClass, Phase, RequestRecord};
use inferbench_loadgen::agentic::{replay_summary, ReplayOutcome, ReplayStop, SchedStats};
use inferbench_loadgen::early_stop::{
    agentic_sample, relative_half_width, AgenticEarlyStop, AgenticSample, BATCHES,
};

/// The replay's grace for requests in flight at the end (`ReplayOptions::grace`'s default).
const GRACE_NS: u64 = 30_000_000_000;

#[path = "support/records.rs"]
mod records;
use records::read_records;

fn main() -> anyhow::Result<()> {
    let (mut trace, mut duration_s, mut tol, mut dirs) = (false, 1800.0f64, 0.02f64, Vec::new());
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--trace" => trace = true,
            "--duration" => duration_s = args.next().unwrap_or_default().parse()?,
            "--tolerance" => tol = args.next().unwrap_or_default().parse()?,
            _ => dirs.push(PathBuf::from(a)),
        }
    }
    anyhow::ensure!(
        !dirs.is_empty(),
        "usage: [--trace] [--duration S] [--tolerance T] DIR..."
    );
    let mut points = Vec::new();
    for d in &dirs {
        if d.join("job.json").is_file() {
            points.push(d.clone());
            continue;
        }
        for e in std::fs::read_dir(d)? {
            let p = e?.path();
            if p.join("job.json").is_file() && p.join("summary.json").is_file() {
                points.push(p);
            }
        }
    }
    points.sort();
    let duration_ns = (duration_s * 1e9) as u64;
    println!(
        "tolerance {tol}, duration {duration_s} s, grace {} s",
        GRACE_NS / 1_000_000_000
    );
    for p in &points {
        point(p, tol, duration_ns, trace)?;
    }
    Ok(())
}

/// What a rule compares with the tolerance at a check.
type Metric = dyn Fn(&Check) -> f64;

/// A check of the rule: samples so far, profiled s, half-width, factor, batch p90s' mean.
struct Check {
    n: u64,
    profiled_ns: u64,
    /// The stopping record's end (the moment the profile would end), ns on the run clock.
    at_ns: u64,
    half_width: f64,
    factor: f64,
    centre: f64,
    /// What-if (not in the rule): the total throughput's relative half-width over [`BATCHES`]
    /// equal time slices of the profiled window ([`throughput_half_width`]).
    tput_half_width: f64,
}

fn point(p: &Path, tol: f64, duration_ns: u64, trace: bool) -> anyhow::Result<()> {
    let job: serde_json::Value = serde_json::from_slice(&std::fs::read(p.join("job.json"))?)?;
    let conc = u32::try_from(job["conc"].as_u64().unwrap_or(1)).unwrap_or(u32::MAX);
    let model = job["job"]["row"]["model"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.join("summary.json"))?)?;
    let full_p90 = summary["inferbench"]["e2e_normalized_interactivity"]["p90"]
        .as_f64()
        .unwrap_or(f64::NAN);
    let full_tput = summary["total_token_throughput"]
        .as_f64()
        .unwrap_or(f64::NAN);
    let full_dur = summary["duration"].as_f64().unwrap_or(f64::NAN);
    let records = read_records(p)?;
    let rule = AgenticEarlyStop::for_lanes(tol, conc)
        .ok_or_else(|| anyhow::anyhow!("tolerance {tol}"))?
        .with_duration(duration_ns);
    // The tracker, as `LoopState::early_stop_check`.
    let (mut first_send, mut samples, mut checks) =
        (None::<u64>, Vec::<AgenticSample>::new(), Vec::new());
    for r in &records {
        if r.phase != Phase::Profile || r.error_class == Some(ErrorClass::Cancelled) {
            continue;
        }
        first_send = Some(first_send.map_or(r.sent_ns, |t| t.min(r.sent_ns)));
        let Some(s) = agentic_sample(r) else {
            continue;
        };
        samples.push(s);
        let now = r.end_ns.max(r.sent_ns);
        let profiled = now.saturating_sub(first_send.unwrap_or(now));
        let n = samples.len() as u64;
        if !rule.due(profiled, n) {
            continue;
        }
        if let Some(a) = rule.assess(&samples, profiled) {
            checks.push(Check {
                n,
                profiled_ns: profiled,
                at_ns: now,
                half_width: a.half_width,
                factor: a.factor,
                centre: a.batch_p90s.iter().sum::<f64>() / a.batch_p90s.len() as f64,
                tput_half_width: f64::NAN,
            });
        }
    }
    let t0 = first_send.unwrap_or(0);
    let mut ends: Vec<(u64, f64)> = records
        .iter()
        .filter(|r| r.phase == Phase::Profile && r.success)
        .filter(|r| r.error_class != Some(ErrorClass::Cancelled))
        .map(|r| {
            (
                r.end_ns,
                f64::from(r.prompt_tokens) + f64::from(r.completion_tokens),
            )
        })
        .collect();
    ends.sort_by_key(|e| e.0);
    for c in &mut checks {
        c.tput_half_width = throughput_half_width(&ends, t0, c.at_ns);
    }
    let anchor = summary["benchmark_start_time_unix"].as_f64().unwrap_or(0.0) * 1e9;
    let outcome = |recs: Vec<RequestRecord>| ReplayOutcome {
        records: recs,
        profile_window_ns: None,
        anchor_unix_ns: (anchor - t0 as f64).max(0.0) as u64,
        stats: SchedStats::default(),
        stop: ReplayStop::Completed,
        stopped_reason: None,
        notes: Vec::new(),
        stop_note: None,
        server_snapshots: Vec::new(),
        itl_ms: None,
        template_overhead: None,
        records_write_error: None,
        early_stop: None,
        server_metrics_max_bytes: None,
    };
    let p90_of = |s: &inferbench_core::summary::RunSummary| {
        s.inferbench
            .e2e_normalized_interactivity
            .get("p90")
            .copied()
            .flatten()
            .unwrap_or(f64::NAN)
    };
    let again = replay_summary(&outcome(records.clone()), &model, conc, true);
    let profile_n = records.iter().filter(|r| r.phase == Phase::Profile).count();
    println!(
        "\n## conc {conc}: {} ({profile_n} profile records, {} checks due)",
        p.display(),
        checks.len()
    );
    println!(
        "full: p90 E2E-norm interactivity {full_p90:.2} (re-summarized {:.2}), total throughput \
         {full_tput:.1} tok/s (re-summarized {:.1}), duration {full_dur:.1} s; min_requests {}, \
         check_every {}",
        p90_of(&again),
        again.total_token_throughput,
        rule.min_requests,
        rule.check_every
    );
    // Trend: the full point's p90 over its profile requests by send time, first vs second half.
    let profile: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.phase == Phase::Profile && r.error_class != Some(ErrorClass::Cancelled))
        .collect();
    let mid = t0 + (profile.iter().map(|r| r.end_ns).max().unwrap_or(t0) - t0) / 2;
    let half = |first: bool| {
        let v: Vec<f64> = profile
            .iter()
            .filter(|r| (r.end_ns <= mid) == first)
            .filter_map(|r| agentic_sample(r).map(|s| s.1))
            .collect();
        p90_interactivity(&v)
    };
    let tokens = |first: bool| {
        profile
            .iter()
            .filter(|r| (r.end_ns <= mid) == first && r.success)
            .map(|r| f64::from(r.prompt_tokens) + f64::from(r.completion_tokens))
            .sum::<f64>()
    };
    println!(
        "trend: p90 of the requests ending in the first half {:.2}, in the second {:.2} \
         ({:+.2} %); tokens ending in the second half over the first {:+.2} %",
        half(true),
        half(false),
        (half(false) / half(true) - 1.0) * 100.0,
        (tokens(false) / tokens(true) - 1.0) * 100.0
    );
    if trace {
        for c in &checks {
            println!(
                "  check n {} at {:.1} s: half-width {:.3} %, × factor {:.3} = {:.3} %, centre {:.2}",
                c.n,
                c.profiled_ns as f64 / 1e9,
                c.half_width * 100.0,
                c.factor,
                c.half_width * c.factor * 100.0,
                c.centre
            );
        }
    }
    let raw = |c: &Check| c.half_width;
    let scaled = |c: &Check| c.half_width * c.factor;
    let both = |c: &Check| c.half_width.max(c.tput_half_width) * c.factor;
    let rules: [(&str, &Metric); 3] = [
        ("without the factor", &raw),
        ("with the factor", &scaled),
        ("what-if, with the factor and a throughput term", &both),
    ];
    for (name, metric) in rules {
        let stop = checks.iter().find(|c| metric(c) <= tol);
        let Some(c) = stop else {
            let best = checks.iter().min_by(|a, b| metric(a).total_cmp(&metric(b)));
            match best {
                Some(b) => println!(
                    "{name}: never stops; smallest checked value {:.3} % at n {} ({:.1} s; raw \
                     {:.3} %, factor {:.3}, throughput's {:.3} %); first check n {} at {:.1} s: \
                     {:.3} %; last n {} at {:.1} s: {:.3} %",
                    metric(b) * 100.0,
                    b.n,
                    b.profiled_ns as f64 / 1e9,
                    b.half_width * 100.0,
                    b.factor,
                    b.tput_half_width * 100.0,
                    checks[0].n,
                    checks[0].profiled_ns as f64 / 1e9,
                    metric(&checks[0]) * 100.0,
                    checks[checks.len() - 1].n,
                    checks[checks.len() - 1].profiled_ns as f64 / 1e9,
                    metric(&checks[checks.len() - 1]) * 100.0
                ),
                None => println!("{name}: never stops; no check was due"),
            }
            continue;
        };
        // The point the replay would have recorded had it stopped at `c.at_ns`.
        let kept: Vec<RequestRecord> = records
            .iter()
            .filter(|r| {
                r.phase != Phase::Profile
                    || (r.error_class != Some(ErrorClass::Cancelled)
                        && r.sent_ns <= c.at_ns
                        && r.end_ns <= c.at_ns + GRACE_NS)
            })
            .cloned()
            .collect();
        let in_flight: Vec<&RequestRecord> = profile
            .iter()
            .copied()
            .filter(|r| r.sent_ns <= c.at_ns && r.end_ns > c.at_ns)
            .collect();
        let cut = in_flight
            .iter()
            .filter(|r| r.end_ns > c.at_ns + GRACE_NS)
            .count();
        let in_flight_p90 = p90_interactivity(
            &in_flight
                .iter()
                .filter_map(|r| agentic_sample(r).map(|s| s.1))
                .collect::<Vec<_>>(),
        );
        // The sessions (plays) in flight at the stop: a request ended by then and one sent
        // after. The stopped point holds their early turns only; the same point without them
        // shows what that cut moves.
        let play = |r: &RequestRecord| r.agentic.as_ref().map(|a| a.play);
        let before: std::collections::BTreeSet<u32> = profile
            .iter()
            .filter(|r| r.end_ns <= c.at_ns)
            .filter_map(|r| play(r))
            .collect();
        let cut_plays: std::collections::BTreeSet<u32> = profile
            .iter()
            .filter(|r| r.sent_ns > c.at_ns)
            .filter_map(|r| play(r))
            .filter(|p| before.contains(p))
            .collect();
        let without_cut: Vec<RequestRecord> = kept
            .iter()
            .filter(|r| {
                r.phase != Phase::Profile || play(r).is_none_or(|p| !cut_plays.contains(&p))
            })
            .cloned()
            .collect();
        let wc = replay_summary(&outcome(without_cut), &model, conc, true);
        // What-if: the throughput's noise (not in the rule) from BATCHES equal time slices of
        // the profiled window, tokens (prompt + completion) of the requests ending in each.
        let tput_hw = c.tput_half_width;
        let s = replay_summary(&outcome(kept.clone()), &model, conc, true);
        let (pp, pt) = (p90_of(&s), s.total_token_throughput);
        let cut_line = format!(
            "  at the stop: {} sessions in flight (their {} requests in the point); without \
             them p90 {:.2} ({:+.2} % of full); throughput's \
             half-width over {BATCHES} time slices {:.3} % × factor {:.3} = {:.3} % (not in the rule)",
            cut_plays.len(),
            kept.iter()
                .filter(|r| r.phase == Phase::Profile && play(r).is_some_and(|p| cut_plays.contains(&p)))
                .count(),
            p90_of(&wc),
            (p90_of(&wc) / full_p90 - 1.0) * 100.0,
            tput_hw * 100.0,
            c.factor,
            tput_hw * c.factor * 100.0
        );
        let pooled = p90_interactivity(
            &samples[..c.n as usize]
                .iter()
                .map(|s| s.1)
                .collect::<Vec<_>>(),
        );
        println!(
            "{name}: stops at n {} after {:.1} s profiled (half-width {:.3} % × factor {:.3} = \
             {:.3} %); the stopped point: {} profile requests, {:.1} s, p90 {pp:.2} ({:+.2} % of \
             full), throughput {pt:.1} ({:+.2} %); in flight at the stop {} (p90 {:.2}), {cut} \
             past the grace; rule's centre {:.2} ({:+.2} %), pooled p90 of the checked samples \
             {pooled:.2} ({:+.2} %)",
            c.n,
            c.profiled_ns as f64 / 1e9,
            c.half_width * 100.0,
            c.factor,
            c.half_width * c.factor * 100.0,
            s.completed,
            s.duration,
            (pp / full_p90 - 1.0) * 100.0,
            (pt / full_tput - 1.0) * 100.0,
            in_flight.len(),
            in_flight_p90,
            c.centre,
            (c.centre / full_p90 - 1.0) * 100.0,
            (pooled / full_p90 - 1.0) * 100.0
        );
        println!("{cut_line}");
    }
    Ok(())
}

/// What-if (not in the rule): the relative 95 % half-width ([`relative_half_width`]) of the
/// total throughput over [`BATCHES`] equal time slices of `[t0, at]` (ns on the run clock),
/// each slice's tokens (prompt + completion) those of the requests in `ends` (end, tokens;
/// sorted by end) ending in it; their mean is the window's throughput. NaN for an empty window.
fn throughput_half_width(ends: &[(u64, f64)], t0: u64, at: u64) -> f64 {
    if at <= t0 {
        return f64::NAN;
    }
    let slice = (at - t0) as f64 / BATCHES as f64;
    let mut tok = [0.0f64; BATCHES];
    for (end, t) in ends.iter().take_while(|e| e.0 <= at) {
        let i = ((end.saturating_sub(t0)) as f64 / slice) as usize;
        tok[i.min(BATCHES - 1)] += t;
    }
    relative_half_width(&tok).unwrap_or(f64::NAN)
}

/// 1000 / the 90th percentile of ms-per-token values (the summary's p90 E2E-normalized
/// interactivity); NaN without data.
fn p90_interactivity(per_token_ms: &[f64]) -> f64 {
    inferbench_core::metrics::percentile(per_token_ms, 90.0)
        .and_then(inferbench_core::metrics::interactivity_from_tpot_ms)
        .unwrap_or(f64::NAN)
}
