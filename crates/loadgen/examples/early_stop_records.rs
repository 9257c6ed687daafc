//! Issue 43: the early-stop rule replayed over finished full-protocol points (a sweep's output
//! directory, e.g. the full list of `scripts/adaptive-savings.sh`, records in modelled time).
//! For each point directory (`job.json`, `summary.json`, `requests.jsonl[.zst]`):
//!
//! - the samples in order of completion, as `Tracker` sees them ([`sample`]), checked when due
//!   by [`EarlyStop::assess`]: the first check at which the rule without the finite-population
//!   factor ([`Assessment::known_without_factor`]) and with it ([`Assessment::known`]) stop,
//!   and the prompts the point would end with (its round in flight completed);
//! - at the new rule's stop, the prefix's chart metrics (requests with ids below that count,
//!   summarized by `inferbench_core::summary::summarize`) against the point's own
//!   `summary.json`: median TPOT and total token throughput, relative difference;
//! - the drain's give-back: mean E2EL of the first round, of the steady rounds (all but the
//!   first and the last) and of the last round; the first round's excess ε, the imbalance
//!   X / P = (first + last − 2 steady) / steady, and the margin it needs, |X / P| / ε, with
//!   its standard error (the two rounds' means, delta method).
//!
//! - the noise pooled over the sweep (issue 43, 2026-12-08): the points taken in the order a
//!   sweep ran them (`--order SWEEP_JSON`: an adaptive sweep's `sweep.json`, its points
//!   matched to DIR's by directory name; the points it did not run after them, by TP and
//!   conc; without it all by TP and conc), each under the rule with the pool of the points
//!   before it ([`EarlyStop::with_pool`], fed as the sweep's runner feeds it: each point's
//!   noise at its last check before the drain, its stop when it stopped early); its stop alone and pooled,
//!   the pooled stop's chart metrics against the full protocol's (spliced as above) and its
//!   claim; the profile GPU-seconds of the points of the order (each point's `status.json`
//!   `gpu_seconds` less the profile time its stop saves × TP) alone and pooled.
//!
//! - the relaxation after the first round (issue 43, 2026-12-08): each round's throughput per
//!   user (tokens over summed E2EL) and median TPOT, rounds by request id, against the later
//!   level (the mean of rounds 4–8), at conc ≥ 8.
//!
//! Run: `cargo run -p inferbench-loadgen --example early_stop_records -- DIR [TOLERANCE]
//! [--order SWEEP_JSON]`.

use inferbench_core::record::{Phase, RequestRecord};
use inferbench_core::summary::{summarize, SummaryContext};
use inferbench_loadgen::early_stop::{
    sample, Assessment, EarlyStop, EarlyStopNoise, Sample, BATCHES,
};

#[path = "support/records.rs"]
mod records;
use records::read_records;

fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let order_file = match args.iter().position(|a| a == "--order") {
        Some(i) if i + 1 < args.len() => {
            let f = args.remove(i + 1);
            args.remove(i);
            Some(f)
        }
        _ => None,
    };
    let mut args = args.into_iter();
    let dir = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: SWEEP_DIR [TOLERANCE] [--order SWEEP_JSON]"))?;
    let tol: f64 = args.next().map_or(Ok(0.02), |a| a.parse())?;
    let mut points = Vec::new();
    for e in std::fs::read_dir(&dir)? {
        let p = e?.path();
        if p.join("job.json").is_file() && p.join("summary.json").is_file() {
            let job: serde_json::Value =
                serde_json::from_slice(&std::fs::read(p.join("job.json"))?)?;
            let tp = job["job"]["row"]["tp"].as_u64().unwrap_or(1);
            let conc = job["conc"].as_u64().unwrap_or(1);
            points.push((tp, conc, p));
        }
    }
    points.sort();
    pooled_replay(&points, tol, order_file.as_deref())?;
    println!("tolerance {tol}");
    println!(
        "| TP | conc | without the factor: stop at, prompts | with it: stop at, prompts | factor | \
         median TPOT prefix / full | throughput prefix / full | claimed (new): TPOT, throughput |"
    );
    println!("|---:|---:|---|---|---:|---|---|---|");
    let mut drains = Vec::new();
    let mut profile_share = Vec::new();
    let mut relax = Vec::new();
    for (tp, conc, p) in &points {
        let records = read_records(p)?;
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.join("summary.json"))?)?;
        let full_tpot = summary["inferbench"]["tpot_ms"]["median"]
            .as_f64()
            .unwrap_or(f64::NAN);
        let full_tput = summary["total_token_throughput"]
            .as_f64()
            .unwrap_or(f64::NAN);
        let full_dur = summary["duration"].as_f64().unwrap_or(f64::NAN);
        let conc32 = u32::try_from(*conc).unwrap_or(u32::MAX);
        let rule = EarlyStop::for_concurrency(tol, conc32)
            .ok_or_else(|| anyhow::anyhow!("tolerance {tol}"))?;
        let profile: Vec<&RequestRecord> = records
            .iter()
            .filter(|r| r.phase == Phase::Profile)
            .collect();
        let mut samples: Vec<Sample> = profile.iter().filter_map(|r| sample(r)).collect();
        samples.sort_by(|a, b| a.end_ns.cmp(&b.end_ns).then(a.id.cmp(&b.id)));
        let c = rule.conc;
        let used = |n: u64| ((n + c).next_multiple_of(c)).min(rule.planned);
        let (mut old, mut new): (Option<u64>, Option<(u64, Assessment)>) = (None, None);
        for n in 1..=samples.len() as u64 {
            if !(rule.due(n) && n >= BATCHES as u64) {
                continue;
            }
            let Some(a) = rule.assess(samples[..n as usize].to_vec()) else {
                continue;
            };
            if old.is_none() && a.known_without_factor(tol) {
                old = Some(n);
            }
            if new.is_none() && a.known(tol) {
                new = Some((n, a));
            }
        }
        let show = |s: Option<u64>| {
            s.map_or("never".to_string(), |n| {
                format!("{n} → {} of {}", used(n), rule.planned)
            })
        };
        let old_dur = old.map_or(full_dur, |n| {
            summarize(
                &stopped_point(&profile, used(n), rule.planned),
                &SummaryContext::default(),
            )
            .duration
        });
        let (cmp, claimed, factor) = match new {
            Some((n, a)) => {
                let prefix = stopped_point(&profile, used(n), rule.planned);
                let s = summarize(&prefix, &SummaryContext::default());
                let (pt, py) = (s.inferbench.tpot_ms.median, s.total_token_throughput);
                profile_share.push((*tp, *conc, old_dur, s.duration, full_dur));
                if prefix.len() as u64 != used(n) {
                    eprintln!(
                        "TP {tp} conc {conc}: the stopped point has {} records, not {}",
                        prefix.len(),
                        used(n)
                    );
                }
                (
                    format!(
                        "{pt:.3} / {full_tpot:.3} ({:+.2} %) | {py:.0} / {full_tput:.0} ({:+.2} %)",
                        (pt / full_tpot - 1.0) * 100.0,
                        (py / full_tput - 1.0) * 100.0
                    ),
                    format!(
                        "{:.2} %, {:.2} %",
                        (a.tpot_noise * a.noise_factor + a.tpot_bias) * 100.0,
                        (a.rate_noise * a.noise_factor + a.rate_bias) * 100.0
                    ),
                    format!("{:.3}", a.noise_factor),
                )
            }
            None => {
                profile_share.push((*tp, *conc, old_dur, full_dur, full_dur));
                ("- | -".to_string(), "-".to_string(), "-".to_string())
            }
        };
        println!(
            "| {tp} | {conc} | {} | {} | {factor} | {cmp} | {claimed} |",
            show(old),
            show(new.map(|x| x.0))
        );
        drains.push((*tp, *conc, drain(&profile, c)));
        if *conc >= 8 {
            relax.push((*tp, *conc, relaxation(&samples, c)));
        }
    }
    println!(
        "\nprofile time (modelled s) if each point ran under the rule without / with the factor, of the full \
         protocol's:"
    );
    let (mut spent_old, mut spent, mut full) = (0.0, 0.0, 0.0);
    for (tp, conc, o, d, f) in &profile_share {
        spent_old += o * *tp as f64;
        spent += d * *tp as f64;
        full += f * *tp as f64;
        println!("  TP {tp} conc {conc}: {o:.2} / {d:.2} of {f:.2} s");
    }
    println!(
        "  total (× TP): without {spent_old:.1}, with {spent:.1} of {full:.1} GPU-s of profile time \
         ({:.1} %, {:.1} %)",
        spent_old / full * 100.0,
        spent / full * 100.0
    );
    println!(
        "\n| TP | conc | first / steady / last round E2EL, ms | ε (first round's excess) | X / P | \
         give-back | margin needed ± s.e. |"
    );
    println!("|---:|---:|---|---:|---:|---:|---|");
    for (tp, conc, d) in drains {
        let Some(d) = d else {
            println!("| {tp} | {conc} | fewer than 3 rounds | | | | |");
            continue;
        };
        println!(
            "| {tp} | {conc} | {:.1} / {:.1} / {:.1} | {:+.2} % | {:+.2} % | {:.0} % | {:.2} ± {:.2} |",
            d.first,
            d.steady,
            d.last,
            d.excess * 100.0,
            d.imbalance * 100.0,
            d.give_back * 100.0,
            d.need,
            d.need_se
        );
    }
    println!(
        "\nrelaxation: each round's throughput per user / median TPOT against rounds 4–8's mean, %"
    );
    println!("| TP | conc | rounds 0–9: throughput per user | rounds 0–9: median TPOT |");
    println!("|---:|---:|---|---|");
    for (tp, conc, r) in relax {
        let show = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:+.1}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        match r {
            Some((rate, tpot)) => println!("| {tp} | {conc} | {} | {} |", show(&rate), show(&tpot)),
            None => println!("| {tp} | {conc} | fewer than 9 rounds | |"),
        }
    }
    Ok(())
}

/// Each round's (ids `k·c..(k+1)·c`) throughput per user and median TPOT of `samples` relative
/// to the mean of rounds 4–8 (%); `None` with fewer than 9 rounds or an empty one.
fn relaxation(samples: &[Sample], c: u64) -> Option<(Vec<f64>, Vec<f64>)> {
    let mut rounds: std::collections::BTreeMap<u64, Vec<&Sample>> = Default::default();
    for s in samples {
        rounds.entry(s.id / c).or_default().push(s);
    }
    let (mut rate, mut tpot) = (Vec::new(), Vec::new());
    for v in rounds.values() {
        let e2el_s: f64 = v.iter().map(|x| x.e2el_ms).sum::<f64>() / 1e3;
        rate.push(v.iter().map(|x| x.tokens).sum::<f64>() / e2el_s);
        let t: Vec<f64> = v.iter().map(|x| x.tpot_ms).collect();
        tpot.push(inferbench_core::metrics::median(&t)?);
    }
    if rate.len() < 9 {
        return None;
    }
    let rel = |v: Vec<f64>| {
        let later = v.iter().skip(4).take(5).sum::<f64>() / 5.0;
        v.iter().map(|x| (x / later - 1.0) * 100.0).collect()
    };
    Some((rel(rate), rel(tpot)))
}

/// What the point would have recorded had it stopped sending at `used` of `planned` prompts,
/// from its full-protocol records: up to the send of request `used − 1` the two runs are the
/// same closed loop; the requests of the prefix that ended by then are kept as recorded; the
/// `conc` requests in flight then would have drained with nothing sent behind them, which the
/// full run did not record for them, so the full run's own drain (the requests in flight at
/// its last send) stands in for them, moved in time so that its last send falls on request
/// `used − 1`'s. At `used = planned` the records themselves.
fn stopped_point(profile: &[&RequestRecord], used: u64, planned: u64) -> Vec<RequestRecord> {
    let sent = |id: u64| {
        profile
            .iter()
            .find(|r| r.request_id == id)
            .map(|r| r.sent_ns)
    };
    let (Some(t_stop), Some(t_last)) = (sent(used - 1), sent(planned - 1)) else {
        return profile.iter().map(|r| (*r).clone()).collect();
    };
    if used >= planned {
        return profile.iter().map(|r| (*r).clone()).collect();
    }
    let mut out: Vec<RequestRecord> = profile
        .iter()
        .filter(|r| r.request_id < used && r.end_ns <= t_stop)
        .map(|r| (*r).clone())
        .collect();
    let shift = t_last - t_stop;
    for r in profile.iter().filter(|r| r.end_ns > t_last) {
        let mut d = (*r).clone();
        shift_record(&mut d, shift);
        out.push(d);
    }
    out
}

/// Moves every timestamp of `r` `by` ns earlier (saturating at 0).
fn shift_record(r: &mut RequestRecord, by: u64) {
    r.map_times(|t| t.saturating_sub(by));
}

/// The drain's give-back of one point (E2EL means by round, ms).
struct Drain {
    first: f64,
    steady: f64,
    last: f64,
    /// first / steady − 1.
    excess: f64,
    /// (first + last − 2 steady) / steady: X / P of the rule's throughput bias.
    imbalance: f64,
    /// (steady − last) / (first − steady).
    give_back: f64,
    /// |X / P| / |ε|: the `DRAIN_MARGIN` this point needs.
    need: f64,
    /// Its standard error from the first and last rounds' means (delta method).
    need_se: f64,
}

/// The round means of the successful profile requests by id (round = id / conc); `None` with
/// fewer than 3 rounds.
fn drain(profile: &[&RequestRecord], c: u64) -> Option<Drain> {
    let mut rounds: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for r in profile.iter().filter(|r| r.success) {
        if let Some(e) = r.e2el_ms() {
            rounds.entry(r.request_id / c).or_default().push(e);
        }
    }
    let k = *rounds.keys().max()?;
    if rounds.len() < 3 {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let var = |v: &[f64]| {
        let m = mean(v);
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len().max(2) - 1) as f64
    };
    let (f, l) = (rounds.get(&0)?, rounds.get(&k)?);
    let mid: Vec<f64> = rounds
        .range(1..k)
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    let (first, last, steady) = (mean(f), mean(l), mean(&mid));
    let excess = first / steady - 1.0;
    let imbalance = (first + last - 2.0 * steady) / steady;
    let give_back = (steady - last) / (first - steady);
    let need = (imbalance / excess).abs();
    // need = (f + l − 2s) / (f − s): ∂/∂f = (s − l) / (f − s)², ∂/∂l = 1 / (f − s).
    let d = first - steady;
    let (se_f, se_l) = (
        (var(f) / f.len() as f64).sqrt(),
        (var(l) / l.len() as f64).sqrt(),
    );
    // A round of one request has no spread to read: no standard error.
    let need_se = if f.len() < 2 || l.len() < 2 {
        f64::NAN
    } else {
        (((steady - last) / (d * d) * se_f).powi(2) + (se_l / d).powi(2)).sqrt()
    };
    Some(Drain {
        first,
        steady,
        last,
        excess,
        imbalance,
        give_back,
        need,
        need_se,
    })
}

/// The first check (completions) at which `rule` is met over `samples` (in completion order),
/// with its assessment, and the last assessment read before the drain (completions up to
/// planned − conc), as the runner's `Tracker` keeps them.
fn first_stop(
    rule: &EarlyStop,
    samples: &[Sample],
) -> (Option<(u64, Assessment)>, Option<Assessment>) {
    let mut latest = None;
    for n in 1..=samples.len() as u64 {
        if !(rule.due(n) && n >= BATCHES as u64) {
            continue;
        }
        let Some(a) = rule.assess(samples[..n as usize].to_vec()) else {
            continue;
        };
        if n + rule.conc <= rule.planned {
            latest = Some(a);
        }
        if std::env::var_os("EARLY_STOP_TRACE").is_some() {
            eprintln!(
                "  conc {} pool {} at {n}: {} batches; TPOT {:.2} % × {:.2} + {:.2} % ({}, round sd \
                 {:.2} %); tput {:.2} % × {:.2} + {:.2} % ({}, round sd {:.2} %)",
                rule.conc,
                rule.pool.dof,
                a.batches,
                a.tpot_noise * 100.0,
                a.noise_factor,
                a.tpot_bias * 100.0,
                a.tpot_pooled,
                a.tpot_round_sd * 100.0,
                a.rate_noise * 100.0,
                a.noise_factor,
                a.rate_bias * 100.0,
                a.rate_pooled,
                a.rate_round_sd * 100.0,
            );
        }
        if a.known(rule.tolerance) {
            return (Some((n, a)), latest);
        }
    }
    (None, latest)
}

/// The pooled rule replayed in a sweep's order (the module doc's last item).
fn pooled_replay(
    points: &[(u64, u64, std::path::PathBuf)],
    tol: f64,
    order_file: Option<&str>,
) -> anyhow::Result<()> {
    let name = |p: &std::path::Path| p.file_name().map(|n| n.to_string_lossy().to_string());
    let mut order: Vec<String> = Vec::new();
    if let Some(f) = order_file {
        let sweep: serde_json::Value = serde_json::from_slice(&std::fs::read(f)?)?;
        for p in sweep["points"].as_array().into_iter().flatten() {
            let n = p["dir"]
                .as_str()
                .and_then(|d| name(std::path::Path::new(d)));
            if let Some(n) = n.filter(|n| !order.contains(n)) {
                order.push(n);
            }
        }
    }
    let mut ranked: Vec<(usize, u64, u64, std::path::PathBuf)> = points
        .iter()
        .map(|(tp, c, p)| {
            let at = name(p)
                .and_then(|n| order.iter().position(|o| *o == n))
                .unwrap_or(usize::MAX);
            (at, *tp, *c, p.clone())
        })
        .collect();
    ranked.sort();
    println!("pooled noise, tolerance {tol} (points in the sweep's order; `-` = not in it)");
    println!(
        "| # | TP | conc | pool d.f. | alone: stop at, prompts | pooled: stop at, prompts | pooled (TPOT, tput) | factor | \
         median TPOT stopped / full | throughput stopped / full | claimed: TPOT, throughput |"
    );
    println!("|---:|---:|---:|---:|---|---|---|---:|---|---|---|");
    let mut pool: Vec<EarlyStopNoise> = Vec::new();
    let (mut g_full, mut g_alone, mut g_pooled) = (0.0, 0.0, 0.0);
    for (at, tp, conc, p) in &ranked {
        let records = read_records(p)?;
        let summary: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.join("summary.json"))?)?;
        let status: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p.join("status.json"))?)?;
        let gpu_s = status["gpu_seconds"].as_f64().unwrap_or(f64::NAN);
        let full_tpot = summary["inferbench"]["tpot_ms"]["median"]
            .as_f64()
            .unwrap_or(f64::NAN);
        let full_tput = summary["total_token_throughput"]
            .as_f64()
            .unwrap_or(f64::NAN);
        let full_dur = summary["duration"].as_f64().unwrap_or(f64::NAN);
        let conc32 = u32::try_from(*conc).unwrap_or(u32::MAX);
        let alone = EarlyStop::for_concurrency(tol, conc32)
            .ok_or_else(|| anyhow::anyhow!("tolerance {tol}"))?;
        let pooled = alone.with_pool(&pool);
        let profile: Vec<&RequestRecord> = records
            .iter()
            .filter(|r| r.phase == Phase::Profile)
            .collect();
        let mut samples: Vec<Sample> = profile.iter().filter_map(|r| sample(r)).collect();
        samples.sort_by(|a, b| a.end_ns.cmp(&b.end_ns).then(a.id.cmp(&b.id)));
        let c = alone.conc;
        let used = |n: u64| ((n + c).next_multiple_of(c)).min(alone.planned);
        let (a_stop, _) = first_stop(&alone, &samples);
        let (p_stop, p_latest) = first_stop(&pooled, &samples);
        let dur_at = |stop: Option<(u64, Assessment)>| {
            stop.map_or(full_dur, |(n, _)| {
                summarize(
                    &stopped_point(&profile, used(n), alone.planned),
                    &SummaryContext::default(),
                )
                .duration
            })
        };
        let show = |s: Option<(u64, Assessment)>| {
            s.map_or("never".to_string(), |(n, _)| {
                format!("{n} → {} of {}", used(n), alone.planned)
            })
        };
        let (cmp, claimed, factor, which) = match p_stop {
            Some((n, a)) => {
                let s = summarize(
                    &stopped_point(&profile, used(n), alone.planned),
                    &SummaryContext::default(),
                );
                let (pt, py) = (s.inferbench.tpot_ms.median, s.total_token_throughput);
                (
                    format!(
                        "{:+.2} % | {:+.2} %",
                        (pt / full_tpot - 1.0) * 100.0,
                        (py / full_tput - 1.0) * 100.0
                    ),
                    format!(
                        "{:.2} %, {:.2} %",
                        (a.tpot_noise * a.noise_factor + a.tpot_bias) * 100.0,
                        (a.rate_noise * a.noise_factor + a.rate_bias) * 100.0
                    ),
                    format!("{:.3}", a.noise_factor),
                    format!("{}, {}", a.tpot_pooled, a.rate_pooled),
                )
            }
            None => ("- | -".into(), "-".into(), "-".into(), "-".into()),
        };
        let idx = if *at == usize::MAX {
            "-".to_string()
        } else {
            (at + 1).to_string()
        };
        println!(
            "| {idx} | {tp} | {conc} | {} | {} | {} | {which} | {factor} | {cmp} | {claimed} |",
            pooled.pool.dof,
            show(a_stop),
            show(p_stop),
        );
        if *at != usize::MAX || order.is_empty() {
            let tpf = *tp as f64;
            g_full += gpu_s;
            g_alone += gpu_s - (full_dur - dur_at(a_stop)) * tpf;
            g_pooled += gpu_s - (full_dur - dur_at(p_stop)) * tpf;
        }
        // What the runner's pool gets of this point: its noise at its last check before the
        // drain (its stop, when it stopped early).
        let lent = p_latest.and_then(|a| a.noise(c));
        pool.extend(lent);
    }
    println!(
        "GPU-s of the order's points (status.json, less the profile time each stop saves × TP): \
         full protocol {g_full:.1}, alone {g_alone:.1}, pooled {g_pooled:.1}\n"
    );
    Ok(())
}
