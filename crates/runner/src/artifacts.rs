//! Run artifacts (DESIGN.md §3): one directory per job point, named by InferenceX's
//! `RESULT_FILENAME`, holding `summary.json`, `agg_<RESULT_FILENAME>.json`, `requests.jsonl.zst`,
//! `server.log`, `job.json` (the JobSpec + provenance) and `status.json`, the completion marker
//! that makes re-runs skip finished points.

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use inferbench_core::artifacts::{
    EngineInfo, FailureClass, JobFile, PointState, PointStatus, Provenance, SchemaVersion,
    JOB_FILE, STATUS_FILE,
};

/// Directory of one point: `<out>/<RESULT_FILENAME>` for single-concurrency rows, and
/// `<out>/<RESULT_FILENAME>_conc<N>` per concurrency of a multinode list row.
pub fn point_dir(out: &Path, result_filename: &str, conc: u32, list_row: bool) -> PathBuf {
    if list_row {
        out.join(format!("{result_filename}_conc{conc}"))
    } else {
        out.join(result_filename)
    }
}

/// Reads a point's `status.json`, `None` when absent or unreadable.
pub fn read_status(dir: &Path) -> Option<PointStatus> {
    let text = std::fs::read_to_string(dir.join(STATUS_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// True when the point finished successfully before (its marker says `ok`).
pub fn is_done(dir: &Path) -> bool {
    read_status(dir).is_some_and(|s| s.state == PointState::Ok)
}

/// Writes `value` as pretty JSON to `path` atomically (temp file + rename), so a crash never
/// leaves a half-written marker or summary. A `path` that exists and is not a regular file (a
/// directory, FIFO, device, socket) is never replaced (issue 39 §1): `InvalidInput` naming it,
/// checked just before the rename.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    text.push('\n');
    // A symbolic link is written through, as every output is (issue 39, fresh tester's
    // finding 4: the rename replaced the link).
    let target = inferbench_core::probe::link_chain_end(path).unwrap_or_else(|| path.to_path_buf());
    let path = target.as_path();
    let tmp = path.with_extension("json.tmp");
    // Listed while on disk (an end without destructors removes it), removed on every error.
    let _pending = inferbench_core::tempfiles::register(&tmp);
    if let Err(e) = std::fs::write(&tmp, text) {
        std::fs::remove_file(&tmp).ok();
        return Err(e);
    }
    if let Some(why) = inferbench_loadgen::output::non_regular(path) {
        std::fs::remove_file(&tmp).ok();
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{}: {why}", path.display()),
        ));
    }
    std::fs::rename(&tmp, path).inspect_err(|_| {
        std::fs::remove_file(&tmp).ok();
    })
}

/// Provenance of this process for `image` on `runner_name`: this build's version and commit,
/// the host, the Slurm job / array task when under Slurm; engine version unknown yet.
pub fn provenance_now(image: &str, runner_name: &str) -> Provenance {
    let slurm_job = std::env::var("SLURM_ARRAY_JOB_ID")
        .ok()
        .map(|j| match std::env::var("SLURM_ARRAY_TASK_ID") {
            Ok(t) => format!("{j}_{t}"),
            Err(_) => j,
        })
        .or_else(|| std::env::var("SLURM_JOB_ID").ok());
    Provenance {
        inferbench_version: env!("CARGO_PKG_VERSION").to_string(),
        git_sha: git_sha(),
        engine_version: None,
        image: image.to_string(),
        host: hostname(),
        runner_name: runner_name.to_string(),
        slurm_job,
    }
}

/// The commit inferbench was built from: `INFERBENCH_GIT_SHA` at build time (set by build.rs
/// from the checkout), else at run time, else `None`.
pub fn git_sha() -> Option<String> {
    option_env!("INFERBENCH_GIT_SHA")
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .or_else(|| {
            std::env::var("INFERBENCH_GIT_SHA")
                .ok()
                .filter(|s| !s.is_empty())
        })
}

/// This machine's host name (`gethostname`), `unknown` on failure.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname NUL-terminates on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Current UTC time as RFC 3339 with millisecond precision.
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Creates a fresh run directory `<out>/<UTC time>` (`20261130-094512-123`, millisecond
/// resolution; `-2`, `-3`, … appended when it exists, so two runs never share one), creating
/// `out` too, and returns it. Errors: `out` or the directory cannot be created (named).
pub fn fresh_run_dir(out: &Path) -> std::io::Result<PathBuf> {
    let named = |e: std::io::Error, p: &Path| {
        std::io::Error::new(e.kind(), format!("creating {}: {e}", p.display()))
    };
    std::fs::create_dir_all(out).map_err(|e| named(e, out))?;
    let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S-%3f").to_string();
    let mut n = 1u32;
    loop {
        let dir = match n {
            1 => out.join(&stamp),
            _ => out.join(format!("{stamp}-{n}")),
        };
        match std::fs::create_dir(&dir) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < u32::MAX => n += 1,
            Err(e) => return Err(named(e, &dir)),
            Ok(()) => return Ok(dir),
        }
    }
}

/// Makes a runner name safe for a file name: characters other than `[A-Za-z0-9._-]` become `-`.
pub fn sanitize_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

pub use inferbench_core::artifacts::{lock_out_dir, OutLock, SWEEP_LOCK};

#[cfg(test)]
mod tests {
    use super::*;

    /// Trial 18: two sweeps into one `--out` ran side by side; the second is refused while the
    /// first holds the directory, and takes it once the first let go.
    #[cfg(unix)]
    #[test]
    fn one_sweep_holds_an_output_directory_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("results");
        let first = lock_out_dir(&out).unwrap();
        let err = lock_out_dir(&out).unwrap_err();
        assert_eq!(
            err,
            format!(
                "another sweep is writing into {} (it holds {}): wait for it to finish, or \
                 give this one another --out",
                out.display(),
                out.join(SWEEP_LOCK).display()
            )
        );
        drop(first);
        // The lock file goes with the sweep that held it (trials 26, 27: a 0-byte sweep.lock
        // stayed in every finished --out).
        assert!(!out.join(SWEEP_LOCK).exists());
        let second = lock_out_dir(&out).unwrap();
        assert!(out.join(SWEEP_LOCK).exists());
        // A sweep that opened the file just before the holder removed it and locks it after:
        // the file it locked is no longer the directory's, so it must not count as held.
        let stale = std::fs::File::open(out.join(SWEEP_LOCK)).unwrap();
        drop(second);
        stale.try_lock().unwrap();
        let third = lock_out_dir(&out).unwrap();
        assert!(matches!(
            std::fs::File::open(out.join(SWEEP_LOCK))
                .unwrap()
                .try_lock(),
            Err(std::fs::TryLockError::WouldBlock)
        ));
        drop((stale, third));
    }

    #[test]
    fn status_round_trip_and_done_marker() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!is_done(dir.path()));
        let mut st = PointStatus {
            schema_version: SchemaVersion,
            index: 3,
            conc: 8,
            result_filename: "rf".into(),
            state: PointState::Failed,
            class: Some(FailureClass::EngineCrashed),
            cause: Some("boom".into()),
            started_at: "2026-11-30T00:00:00.000Z".into(),
            finished_at: "2026-11-30T00:00:01.000Z".into(),
            gpu_seconds: None,
            prompts_used: None,
        };
        write_json_atomic(&dir.path().join(STATUS_FILE), &st).unwrap();
        assert!(!is_done(dir.path()));
        let text = std::fs::read_to_string(dir.path().join(STATUS_FILE)).unwrap();
        assert!(text.contains("\"class\": \"engine_crashed\""), "{text}");
        st.state = PointState::Ok;
        st.class = None;
        write_json_atomic(&dir.path().join(STATUS_FILE), &st).unwrap();
        assert!(is_done(dir.path()));
        assert_eq!(read_status(dir.path()).unwrap(), st);
        assert!(!dir.path().join("status.json.tmp").exists());
    }

    #[test]
    fn point_dirs_and_names() {
        let o = Path::new("/o");
        assert_eq!(point_dir(o, "rf", 4, false), Path::new("/o/rf"));
        assert_eq!(point_dir(o, "rf", 4, true), Path::new("/o/rf_conc4"));
        assert_eq!(sanitize_name("gpu node/1:a"), "gpu-node-1-a");
        assert!(!hostname().is_empty());
    }

    /// Run directories are named by the UTC time and never shared: a second one created in
    /// the same millisecond gets `-2`.
    #[test]
    fn fresh_run_dirs_are_distinct() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("runs");
        let dirs: Vec<PathBuf> = (0..3).map(|_| fresh_run_dir(&out).unwrap()).collect();
        for d in &dirs {
            assert!(d.is_dir(), "{d:?}");
            let name = d.file_name().unwrap().to_str().unwrap();
            let stamp: String = name.chars().take(19).collect();
            assert_eq!(stamp.len(), 19, "{name}");
            assert!(
                stamp
                    .chars()
                    .enumerate()
                    .all(|(i, c)| if i == 8 || i == 15 {
                        c == '-'
                    } else {
                        c.is_ascii_digit()
                    }),
                "{name}"
            );
        }
        assert!(dirs[0] != dirs[1] && dirs[1] != dirs[2] && dirs[0] != dirs[2]);
        let file = tmp.path().join("f");
        std::fs::write(&file, "").unwrap();
        let e = fresh_run_dir(&file.join("x")).unwrap_err().to_string();
        assert!(e.contains("creating "), "{e}");
    }
}
