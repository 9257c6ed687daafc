//! `cargo run -p inferbench-runner --example plan_replay -- MATRIX FULL_OUT... [--tolerance T]`:
//! the adaptive planner replayed on a finished full list (issue 43): which points would
//! `sweep --adaptive` have measured, in which order, had each measured what the full list's
//! point did? Rounds of one point per curve through `adaptive::next_round_matrix` (the
//! Slurm/GitHub planner, the local one's order for a single curve), each proposal answered by
//! linking the full list's point directory for that row and concurrency into a scratch `--out`.
//! FULL_OUT: one or more sweep `--out` directories holding the full list's point directories
//! (e.g. one sweep per concurrency). Prints the proposals and the points the plan skipped.

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
    // The full list's point directories, with the row and concurrency their job.json names.
    let mut points: Vec<(serde_json::Value, u64, PathBuf)> = Vec::new();
    for out in fulls {
        for e in std::fs::read_dir(out)? {
            let p = e?.path();
            let Ok(text) = std::fs::read(p.join("job.json")) else {
                continue;
            };
            let job: serde_json::Value = serde_json::from_slice(&text)?;
            let conc = job["conc"].as_u64().unwrap_or(0);
            points.push((job["job"]["row"].clone(), conc, p));
        }
    }
    let scratch = tempfile::tempdir()?;
    let mut round = 0;
    while let Some((_, specs)) =
        inferbench_runner::adaptive::next_round_matrix(&jobs, scratch.path(), tolerance, 1)?
    {
        round += 1;
        for s in specs {
            let inferbench_core::matrix::Conc::One(c) = s.row.conc else {
                continue;
            };
            let row = serde_json::to_value(&s.row)?;
            let (_, _, dir) = points
                .iter()
                .find(|(r, k, _)| *k == u64::from(c) && *r == row)
                .ok_or_else(|| anyhow::anyhow!("the full list has no point for {row}"))?;
            println!("round {round}: {}", name(dir));
            link(dir, &scratch.path().join(name(dir)))?;
        }
        if round > 1000 {
            anyhow::bail!("the plan did not end");
        }
    }
    let measured = points
        .iter()
        .filter(|(_, _, d)| scratch.path().join(name(d)).exists())
        .count();
    println!("measured {measured} of {} points", points.len());
    for (_, _, d) in &points {
        if !scratch.path().join(name(d)).exists() {
            println!("skipped: {}", name(d));
        }
    }
    Ok(())
}

/// A point directory's name (its result file name).
fn name(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(unix)]
fn link(from: &Path, to: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(from, to)
}

#[cfg(not(unix))]
fn link(_from: &Path, _to: &Path) -> std::io::Result<()> {
    Err(std::io::Error::other("symbolic links: unix only"))
}
