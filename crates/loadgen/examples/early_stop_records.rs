//! Issue 43: the early-stop rule replayed over a finished point's records (a
//! `requests.jsonl`, e.g. a full-protocol point of a sim sweep, in modelled time): at each
//! check the rule would make, in order of completion, its noise and bias terms and whether it
//! would stop. Run: `cargo run -p inferbench-loadgen --example early_stop_records --
//! REQUESTS.jsonl CONC [TOLERANCE]`.

use std::io::BufRead;

use inferbench_core::record::RequestRecord;
use inferbench_loadgen::early_stop::{sample, EarlyStop};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: REQUESTS.jsonl CONC [TOL]"))?;
    let conc: u32 = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("CONC"))?
        .parse()?;
    let tol: f64 = args.next().map_or(Ok(0.02), |a| a.parse())?;
    let rule = EarlyStop::for_concurrency(tol, conc).ok_or_else(|| anyhow::anyhow!("TOL"))?;
    let mut samples = Vec::new();
    for line in std::io::BufReader::new(std::fs::File::open(&path)?).lines() {
        let r: RequestRecord = serde_json::from_str(&line?)?;
        samples.extend(sample(&r));
    }
    samples.sort_by_key(|s| s.end_ns);
    println!(
        "samples {} (conc {conc}, planned {}, tolerance {tol})",
        samples.len(),
        rule.planned
    );
    for n in 1..=samples.len() as u64 {
        if !rule.due(n) {
            continue;
        }
        let Some(a) = rule.assess(samples[..n as usize].to_vec()) else {
            println!("n {n}: no assessment");
            continue;
        };
        println!(
            "n {n}: TPOT noise {:.2} % bias {:.2} % | rate noise {:.2} % bias {:.2} % | first round {:+.1} % | {}",
            a.tpot_noise * 100.0,
            a.tpot_bias * 100.0,
            a.rate_noise * 100.0,
            a.rate_bias * 100.0,
            a.first_round_excess * 100.0,
            if a.known(tol) { "STOP" } else { "-" }
        );
    }
    Ok(())
}
