//! Measures random-prompt preparation speed (docs/perf/workload.md).
//!
//! `cargo run --release -p inferbench-workload --example prep_bench -- [NUM] [ISL] [RATIO] [TOKENIZER] [VERIFY]`
//! Defaults: 100000 prompts, ISL 8192, range ratio 1.0, o200k_base, verify 200 prompts by full
//! re-encoding.

use inferbench_workload::{random_prompts, RandomSpec, Tokenizer};
use std::time::Instant;

/// Process CPU time (user + system), seconds, from /proc/self/stat (Linux; 0 elsewhere).
fn cpu_s() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let Some(rest) = stat.rsplit(')').next() else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    // fields after the command: state is [0], utime [11], stime [12], in clock ticks (100 Hz)
    let tick = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, d: &str| args.get(i).cloned().unwrap_or_else(|| d.to_string());
    let num: usize = arg(0, "100000").parse()?;
    let isl: u32 = arg(1, "8192").parse()?;
    let ratio: f64 = arg(2, "1.0").parse()?;
    let tok_spec = arg(3, "o200k_base");
    let verify: usize = arg(4, "200").parse()?;

    let t0 = Instant::now();
    let tok = Tokenizer::load(&tok_spec)?;
    let load_s = t0.elapsed().as_secs_f64();
    let spec = RandomSpec {
        input_len: isl,
        output_len: 1024,
        range_ratio: ratio,
        num_prompts: num,
        seed: 0,
        ..Default::default()
    };
    // First use builds the tokenizer's fast-path tables (once per process); timed apart.
    let tw = Instant::now();
    let wcpu = cpu_s();
    tok.warm_up();
    let warm_s = tw.elapsed().as_secs_f64();
    let warm_cpu_s = cpu_s() - wcpu;
    let cpu0 = cpu_s();
    let t1 = Instant::now();
    let prompts = random_prompts(&spec, &tok)?;
    let prep_s = t1.elapsed().as_secs_f64();
    let prep_cpu_s = cpu_s() - cpu0;
    let tokens: u64 = prompts.iter().map(|p| u64::from(p.prompt_tokens)).sum();
    let bytes: usize = prompts.iter().map(|p| p.text.len()).sum();
    println!(
        "tokenizer={} load_s={load_s:.3} tables_s={warm_s:.3} tables_cpu_s={warm_cpu_s:.3} prompts={num} isl={isl} ratio={ratio} threads={} prep_s={prep_s:.3} prep_cpu_s={prep_cpu_s:.3} prompts_per_s={:.0} tokens={tokens} tokens_per_s={:.3e} text_bytes={bytes}",
        tok.id(),
        rayon::current_num_threads(),
        num as f64 / prep_s,
        tokens as f64 / prep_s,
    );
    let step = (num / verify.max(1)).max(1);
    let mut checked = 0;
    for p in prompts.iter().step_by(step).take(verify) {
        let n = tok.count(&p.text);
        if n != p.prompt_tokens as usize {
            return Err(format!("mismatch: counted {n}, claimed {}", p.prompt_tokens).into());
        }
        checked += 1;
    }
    println!("verified {checked} prompts by full re-encoding: all exact");
    Ok(())
}
