//! Issue 43, step 1: what stopping a closed-loop point early changes, measured on the sim's
//! engine in modelled time (`inferbench_sim::closed_loop`: deterministic, no server, no
//! clock). For Llama-3.1-8B on H100 bf16, ISL 1024 / OSL 256, TP 1 and 2, conc 16..256: the
//! full protocol (10 × conc prompts), then points that stop sending after k × conc prompts and
//! drain (k = 2, 3, 4, 6), then the early-stop rule (`inferbench_loadgen::early_stop`) at the
//! tolerance given (default 0.02): median interactivity, throughput per GPU and GPU-seconds
//! against the full protocol's; then the relaxation after the first round (issue 43,
//! 2026-12-08): each round's throughput per user (tokens over summed E2EL) and median TPOT,
//! rounds by request id, against the later level (the mean of rounds 4–8). Run: `cargo run --release -p inferbench-loadgen --example
//! early_stop_sim [TOLERANCE]`.

use inferbench_loadgen::early_stop::{EarlyStop, Sample};
use inferbench_sim::closed_loop::{closed_loop, LoopRequest};
use inferbench_sim::SimConfig;

const ISL: u32 = 1024;
const OSL: u32 = 256;

fn sample(r: &LoopRequest) -> Sample {
    Sample {
        id: r.index,
        end_ns: (r.end_s * 1e9).round() as u64,
        tpot_ms: (r.end_s - r.first_token_s) / f64::from(r.output_tokens - 1) * 1e3,
        tokens: f64::from(r.prompt_tokens + r.output_tokens),
        e2el_ms: (r.end_s - r.sent_s) * 1e3,
    }
}

/// (median interactivity, tok/s/user; total tok/s per GPU) of a run, as `summary.json` has them.
fn chart(rs: &[LoopRequest], tp: u32) -> (f64, f64) {
    let mut t: Vec<f64> = rs.iter().map(|r| sample(r).tpot_ms).collect();
    t.sort_by(f64::total_cmp);
    let n = t.len();
    let med = if n % 2 == 1 {
        t[n / 2]
    } else {
        (t[n / 2 - 1] + t[n / 2]) / 2.0
    };
    let d = rs.iter().map(|r| r.end_s).fold(0.0, f64::max);
    let tok: f64 = rs
        .iter()
        .map(|r| f64::from(r.prompt_tokens + r.output_tokens))
        .sum();
    (1000.0 / med, tok / d / f64::from(tp))
}

fn main() {
    let tol: f64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(0.02);
    println!("| TP | conc | full: x, y, GPU-s | first / steady / last round E2EL, ms | k = 2 | k = 3 | k = 4 | k = 6 | rule at {} %: prompts, x, y, GPU-s |", tol * 100.0);
    println!("|---:|---:|---|---|---|---|---|---|---|");
    let mut relax = Vec::new();
    for tp in [1u32, 2] {
        let cfg = SimConfig {
            tp,
            max_model_len: Some(2048),
            ..SimConfig::default()
        };
        for conc in [16u32, 32, 64, 128, 256] {
            let c = u64::from(conc);
            let full = closed_loop(&cfg, conc, 10 * c, (ISL, OSL), |_| false).expect("sim config");
            let (fx, fy) = chart(&full.requests, tp);
            let gpu_s = |b: f64| b * f64::from(tp);
            let mut by_id = full.requests.clone();
            by_id.sort_by_key(|r| r.index);
            let e2el = |v: &[LoopRequest]| {
                v.iter().map(|r| (r.end_s - r.sent_s) * 1e3).sum::<f64>() / v.len() as f64
            };
            let rounds = (
                e2el(&by_id[..conc as usize]),
                e2el(&by_id[conc as usize..(9 * c) as usize]),
                e2el(&by_id[(9 * c) as usize..]),
            );
            let pct = |a: f64, b: f64| (a / b - 1.0) * 100.0;
            let mut row = format!(
                "| {tp} | {conc} | {fx:.2}, {fy:.0}, {:.1} | {:.0} / {:.0} / {:.0} |",
                gpu_s(full.busy_s),
                rounds.0,
                rounds.1,
                rounds.2
            );
            for k in [2u64, 3, 4, 6] {
                let p = closed_loop(&cfg, conc, k * c, (ISL, OSL), |_| false).expect("sim config");
                let (px, py) = chart(&p.requests, tp);
                row += &format!(
                    " x {:+.2} %, y {:+.2} %, {:.0} % |",
                    pct(px, fx),
                    pct(py, fy),
                    p.busy_s / full.busy_s * 100.0
                );
            }
            let rule = EarlyStop::for_concurrency(tol, conc).expect("a tolerance");
            let p = closed_loop(&cfg, conc, 10 * c, (ISL, OSL), |done| {
                let n = done.len() as u64;
                rule.due(n) && rule.known_samples(done.iter().map(sample).collect())
            })
            .expect("sim config");
            let (px, py) = chart(&p.requests, tp);
            row += &format!(
                " {} of {}, x {:+.2} %, y {:+.2} %, {:.1} ({:.0} %) |",
                p.sent,
                10 * c,
                pct(px, fx),
                pct(py, fy),
                gpu_s(p.busy_s),
                p.busy_s / full.busy_s * 100.0
            );
            println!("{row}");
            relax.push((tp, conc, relaxation(&by_id, c)));
        }
    }
    println!(
        "\nrelaxation: each round's throughput per user / median TPOT against rounds 4–8's mean, %"
    );
    println!("| TP | conc | rounds 0–9: throughput per user | rounds 0–9: median TPOT |");
    println!("|---:|---:|---|---|");
    for (tp, conc, (rate, tpot)) in relax {
        let show = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:+.2}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        println!("| {tp} | {conc} | {} | {} |", show(&rate), show(&tpot));
    }
}

/// Each round's (ids `k·c..(k+1)·c`) throughput per user and median TPOT relative to the mean
/// of rounds 4–8 (%), of a full protocol's requests ordered by id.
fn relaxation(by_id: &[LoopRequest], c: u64) -> (Vec<f64>, Vec<f64>) {
    let (mut rate, mut tpot) = (Vec::new(), Vec::new());
    for round in by_id.chunks(c as usize) {
        let s: Vec<Sample> = round.iter().map(sample).collect();
        let e2el_s: f64 = s.iter().map(|x| x.e2el_ms).sum::<f64>() / 1e3;
        rate.push(s.iter().map(|x| x.tokens).sum::<f64>() / e2el_s);
        let mut t: Vec<f64> = s.iter().map(|x| x.tpot_ms).collect();
        t.sort_by(f64::total_cmp);
        tpot.push(t[t.len() / 2]);
    }
    let rel = |v: Vec<f64>| {
        let later = v.iter().skip(4).take(5).sum::<f64>() / 5.0;
        v.iter().map(|x| (x / later - 1.0) * 100.0).collect()
    };
    (rel(rate), rel(tpot))
}
