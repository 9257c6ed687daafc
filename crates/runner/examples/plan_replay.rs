//! `cargo run -p inferbench-runner --example plan_replay -- MATRIX FULL_OUT... [--tolerance T]`:
//! the adaptive planner replayed on a finished full list (issue 43): which points would
//! `sweep --adaptive` have measured, in which order, had each measured what the full list's
//! point did? Rounds of one point per curve through `adaptive::next_round_matrix` (the
//! Slurm/GitHub planner, the local one's order for a single curve), each proposal answered by
//! linking the full list's point directory for that row and concurrency into a scratch `--out`.
//! FULL_OUT: one or more sweep `--out` directories holding the full list's point directories
//! (e.g. one sweep per concurrency). Prints the proposals and the points the plan skipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use inferbench_runner::JobSpec;

fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut tolerance = inferbench_runner::adaptive::DEFAULT_TOLERANCE;
    if let Some(i) = args.iter().position(|a| a == "--tolerance") {
        tolerance = args.get(i + 1).map_or(Ok(tolerance), |t| t.parse())?;
        args.drain(i..(i + 2).min(args.len()));
    }
    let (matrix, fulls) = args
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("usage: MATRIX FULL_OUT... [--tolerance T]"))?;
    let rows: Vec<inferbench_core::matrix::MatrixRow> =
        serde_json::from_slice(&std::fs::read(matrix)?)?;
    let jobs: Vec<JobSpec> = (rows.into_iter().enumerate())
        .map(|(index, row)| JobSpec { index, row })
        .collect();
    // The full list's point directories by result file name (row and concurrency name them).
    let mut by_name: BTreeMap<String, PathBuf> = BTreeMap::new();
    for out in fulls {
        for e in std::fs::read_dir(out)? {
            let p = e?.path();
            if p.join("job.json").is_file() {
                by_name.insert(p.file_name().unwrap().to_string_lossy().into_owned(), p);
            }
        }
    }
    let scratch = tempfile::tempdir()?;
    let mut round = 0;
    while let Some((_, specs)) =
        inferbench_runner::adaptive::next_round_matrix(&jobs, scratch.path(), tolerance, 1)?
    {
        round += 1;
        for s in specs {
            let name = by_name
                .keys()
                .find(|n| result_of(n, &s))
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("the full list has no point for {:?}", s.row))?;
            println!(
                "round {round}: row exp-name {} conc {:?}",
                s.row.exp_name, s.row.conc
            );
            link(&by_name[&name], &scratch.path().join(&name))?;
        }
        if round > 1000 {
            anyhow::bail!("the plan did not end");
        }
    }
    let measured: Vec<&String> = by_name
        .keys()
        .filter(|n| scratch.path().join(n).exists())
        .collect();
    println!("measured {} of {} points", measured.len(), by_name.len());
    for n in by_name.keys().filter(|n| !scratch.path().join(n).exists()) {
        println!("skipped: {n}");
    }
    Ok(())
}

/// Whether point directory `name` is `s`'s row at its concurrency: its name starts with the
/// row's exp-name and carries `_conc<N>_` for the row's concurrency.
fn result_of(name: &str, s: &JobSpec) -> bool {
    let inferbench_core::matrix::Conc::One(c) = s.row.conc else {
        return false;
    };
    name.starts_with(&format!("{}_", s.row.exp_name)) && name.contains(&format!("_conc{c}_"))
}

#[cfg(unix)]
fn link(from: &Path, to: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(from, to)
}

#[cfg(not(unix))]
fn link(_from: &Path, _to: &Path) -> std::io::Result<()> {
    Err(std::io::Error::other("symbolic links: unix only"))
}
