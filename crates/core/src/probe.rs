//! Whether a file can be created in a directory, asked of the filesystem itself (permissions,
//! read-only mounts, ACLs, quotas and privilege all answer at once): one probe used by every
//! output check (`--result-dir`, `--save-requests`' folder, a database's folder, a sweep's
//! `--out`, eval's `--result-dir`) before any request is sent (issue 39 §8).

use std::path::Path;

/// Creates and removes `.inferbench-write-probe-<pid>` in `dir`. A probe left behind by a run
/// of this pid that was killed means the folder is writable. `dir` must exist.
///
/// # Errors
/// The OS error of creating the probe (`EACCES`, `EROFS`, `ENOENT`, `ENOTDIR`, …).
pub fn can_create_in(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(format!(".inferbench-write-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(f) => {
            drop(f);
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_writable_folder_passes_and_keeps_no_probe_a_missing_one_names_the_os_error() {
        let dir = tempfile::tempdir().unwrap();
        can_create_in(dir.path()).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // A probe left by a killed run of this pid: still writable, and it is left alone.
        let left = dir
            .path()
            .join(format!(".inferbench-write-probe-{}", std::process::id()));
        std::fs::write(&left, b"").unwrap();
        can_create_in(dir.path()).unwrap();
        assert!(left.exists());
        let e = can_create_in(&dir.path().join("missing")).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }
}
