//! Times the hot paths on the InferenceX snapshot: loading+validating both master configs,
//! `full-sweep` expansion with eval marking, JSON output, and one changelog change.
//!
//! `cargo run --release -p inferbench-recipes --example matrix_bench -- ../shared/data/inferencex [iterations]`

use std::path::PathBuf;
use std::time::Instant;

use inferbench_recipes::changelog::{self, ProcessOptions};
use inferbench_recipes::matrix::{self, CommonOptions, FullSweepOptions, Selection};
use inferbench_recipes::schema::{MasterConfigs, RunnerConfig};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let root = PathBuf::from(
        args.get(1)
            .map(String::as_str)
            .unwrap_or("../shared/data/inferencex"),
    );
    let iters: u32 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20);
    let cfg = root.join("configs");
    let files = [cfg.join("amd-master.yaml"), cfg.join("nvidia-master.yaml")];
    let runners = RunnerConfig::load(&cfg.join("runners.yaml")).expect("runners");

    let t = Instant::now();
    let mut configs = MasterConfigs::default();
    for _ in 0..iters {
        configs = MasterConfigs::load(&files).expect("configs");
    }
    let load = t.elapsed() / iters;

    let sel = Selection::FullSweep(FullSweepOptions::default());
    let t = Instant::now();
    let mut rows = Vec::new();
    for _ in 0..iters {
        rows = matrix::generate(&configs, &runners, &sel, &CommonOptions::default())
            .expect("generate");
    }
    let gen = t.elapsed() / iters;

    let t = Instant::now();
    let mut bytes = 0;
    for _ in 0..iters {
        bytes = matrix::to_json_text(&rows).len();
    }
    let out = t.elapsed() / iters;

    let case = root.join("expected/changelog/1b332e4c3");
    let base = std::fs::read_to_string(case.join("base-perf-changelog.yaml")).expect("base");
    let head = std::fs::read_to_string(case.join("head-perf-changelog.yaml")).expect("head");
    let t = Instant::now();
    for _ in 0..iters {
        let added = changelog::added_lines(&base, &head, "base").expect("diff");
        let entries = changelog::parse_entries(&added, "head").expect("entries");
        changelog::process(
            &entries,
            &configs,
            &runners,
            &ProcessOptions::default(),
            None,
        )
        .expect("process");
    }
    let cl = t.elapsed() / iters;

    println!(
        "configs: {} keys, full-sweep: {} rows, {} bytes of JSON",
        configs.entries.len(),
        rows.len(),
        bytes
    );
    println!(
        "load+validate both masters: {:.2} ms",
        load.as_secs_f64() * 1e3
    );
    println!(
        "full-sweep expansion + eval marking: {:.2} ms",
        gen.as_secs_f64() * 1e3
    );
    println!("JSON output: {:.2} ms", out.as_secs_f64() * 1e3);
    println!(
        "changelog (6.4k-line diff + process): {:.2} ms",
        cl.as_secs_f64() * 1e3
    );
}
