//! Slurm executor: writes an sbatch script for a job array over the pending matrix rows,
//! submits it with `sbatch --parsable` (optionally `--wait`), and gathers results from the
//! shared output directory (DESIGN.md §7).

use std::path::{Path, PathBuf};

use super::shell_quote;

/// Settings of a Slurm submission.
#[derive(Debug, Clone, Default)]
pub struct SlurmOptions {
    /// `inferbench` executable as seen from the compute nodes.
    pub inferbench_exe: PathBuf,
    /// Partition (`--partition`); None = the cluster default.
    pub partition: Option<String>,
    /// Wall-clock limit per task (`--time`, Slurm syntax such as `8:00:00`).
    pub time_limit: Option<String>,
    /// At most this many array tasks at once (`--array=…%N`).
    pub max_parallel: Option<u32>,
    /// Job name (`--job-name`, default `inferbench`).
    pub job_name: Option<String>,
    /// Extra `#SBATCH` options, each a full flag such as `--gres=gpu:8`.
    pub extra_sbatch: Vec<String>,
    /// Flags appended to `inferbench job --matrix M --index $SLURM_ARRAY_TASK_ID`
    /// (e.g. `--out`, `--runner-name`).
    pub job_args: Vec<String>,
    /// Block until every array task has finished (`sbatch --wait`).
    pub wait: bool,
}

/// Errors of the Slurm executor.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    /// Writing the script failed.
    #[error("{path}: {source}")]
    Io {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// `sbatch` could not be run (not installed?).
    #[error("cannot run sbatch: {0} (is Slurm installed and on PATH?)")]
    Spawn(std::io::Error),
    /// `sbatch` refused the job or (with `--wait`) printed no job id.
    #[error("sbatch failed ({status}): {stderr} (is this a Slurm login node with its configuration: SLURM_CONF or /etc/slurm/slurm.conf?)")]
    Sbatch {
        /// Exit status.
        status: String,
        /// Its stderr.
        stderr: String,
    },
}

/// `0-2,5,7-8`: Slurm's `--array` index list for sorted unique `indices`.
pub fn array_spec(indices: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < indices.len() {
        let start = indices[i];
        let mut end = start;
        while i + 1 < indices.len() && indices[i + 1] == end + 1 {
            i += 1;
            end = indices[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// The sbatch script for `indices` of `matrix` (absolute paths), logs under `log_dir`.
pub fn sbatch_script(
    matrix: &Path,
    indices: &[usize],
    log_dir: &Path,
    opts: &SlurmOptions,
) -> String {
    let mut s = String::from("#!/bin/bash\n");
    s.push_str(&format!(
        "#SBATCH --job-name={}\n",
        opts.job_name.as_deref().unwrap_or("inferbench")
    ));
    let mut array = array_spec(indices);
    if let Some(n) = opts.max_parallel {
        array.push_str(&format!("%{n}"));
    }
    s.push_str(&format!("#SBATCH --array={array}\n"));
    s.push_str(&format!(
        "#SBATCH --output={}\n",
        log_dir.join("task-%A_%a.out").display()
    ));
    s.push_str("#SBATCH --ntasks=1\n");
    if let Some(p) = &opts.partition {
        s.push_str(&format!("#SBATCH --partition={p}\n"));
    }
    if let Some(t) = &opts.time_limit {
        s.push_str(&format!("#SBATCH --time={t}\n"));
    }
    for x in &opts.extra_sbatch {
        s.push_str(&format!("#SBATCH {x}\n"));
    }
    s.push_str("# Written by `inferbench sweep --executor slurm`: task i runs matrix row i.\n");
    s.push_str("set -euo pipefail\n");
    let mut cmd = vec![
        shell_quote(&opts.inferbench_exe.display().to_string()),
        "job".into(),
        "--matrix".into(),
        shell_quote(&matrix.display().to_string()),
        "--index".into(),
        "\"$SLURM_ARRAY_TASK_ID\"".into(),
    ];
    cmd.extend(opts.job_args.iter().map(|a| shell_quote(a)));
    s.push_str(&format!("exec {}\n", cmd.join(" ")));
    s
}

/// Writes the script to `<dir>/job.sbatch` and submits it; returns the job id. With
/// `opts.wait`, returns after every task finished (a failed task is not an error here: the
/// gather step reports it from its `status.json`).
pub async fn submit(
    matrix: &Path,
    indices: &[usize],
    dir: &Path,
    opts: &SlurmOptions,
) -> Result<String, SlurmError> {
    std::fs::create_dir_all(dir).map_err(|source| SlurmError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let script = sbatch_script(matrix, indices, dir, opts);
    let path = dir.join("job.sbatch");
    std::fs::write(&path, &script).map_err(|source| SlurmError::Io {
        path: path.clone(),
        source,
    })?;
    let mut c = tokio::process::Command::new("sbatch");
    c.arg("--parsable");
    if opts.wait {
        c.arg("--wait");
    }
    c.arg(&path).current_dir(dir).kill_on_drop(true);
    let out = c.output().await.map_err(SlurmError::Spawn)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let job_id = stdout
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.split(';').next().unwrap_or(l).to_string());
    match job_id {
        // With --wait a failed task makes sbatch exit non-zero; the job id is still printed.
        Some(id) if out.status.success() || opts.wait => Ok(id),
        _ => Err(SlurmError::Sbatch {
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_specs() {
        assert_eq!(array_spec(&[0, 1, 2]), "0-2");
        assert_eq!(array_spec(&[0, 2, 3, 4, 7]), "0,2-4,7");
        assert_eq!(array_spec(&[5]), "5");
        assert_eq!(array_spec(&[]), "");
    }

    #[test]
    fn script_is_exact() {
        let o = SlurmOptions {
            inferbench_exe: "/opt/ib/inferbench".into(),
            partition: Some("debug".into()),
            max_parallel: Some(2),
            job_args: vec!["--out".into(), "/r s".into()],
            ..Default::default()
        };
        assert_eq!(
            sbatch_script(Path::new("/m/m.json"), &[0, 1, 2, 4], Path::new("/r/_slurm"), &o),
            "#!/bin/bash\n#SBATCH --job-name=inferbench\n#SBATCH --array=0-2,4%2\n#SBATCH --output=/r/_slurm/task-%A_%a.out\n#SBATCH --ntasks=1\n#SBATCH --partition=debug\n# Written by `inferbench sweep --executor slurm`: task i runs matrix row i.\nset -euo pipefail\nexec /opt/ib/inferbench job --matrix /m/m.json --index \"$SLURM_ARRAY_TASK_ID\" --out '/r s'\n"
        );
    }
}
