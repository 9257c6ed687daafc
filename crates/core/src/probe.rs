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

/// The kernel's pseudo filesystems, mounted at these folders: their files take no data (a
/// write to `/proc/version` opens, then fails with EIO; `/dev/stdout` is `/proc/self/fd/1`).
pub const KERNEL_FOLDERS: [&str; 2] = ["/proc", "/sys"];

/// When `path`, or a symbolic link on its way (`/dev/stdout` → `/proc/self/fd/1`, at most 40
/// followed), is a file of [`KERNEL_FOLDERS`], that folder: such a file is no place to save
/// data, and is refused before any request (issue 39, second round, finding 5:
/// `--save-requests /proc/version` and `--db /dev/stdout` passed the up-front checks and
/// failed after the run). `None` otherwise (a missing path included).
pub fn kernel_file(path: &Path) -> Option<&'static str> {
    let mut p = match path.is_absolute() {
        true => path.to_path_buf(),
        false => std::env::current_dir().ok()?.join(path),
    };
    for _ in 0..=40 {
        // The folder holding this hop, its own links resolved (the hop itself is not followed:
        // `/proc/self/fd/1` leads anywhere).
        let dir = p.parent().and_then(|d| d.canonicalize().ok());
        if let Some(dir) = dir {
            if let Some(k) = KERNEL_FOLDERS.iter().find(|k| dir.starts_with(k)) {
                return Some(k);
            }
        }
        let to = std::fs::read_link(&p).ok()?;
        p = match p.parent() {
            Some(d) if to.is_relative() => d.join(to),
            _ => to,
        };
    }
    None
}

/// The most symbolic links followed in one chain: the kernel's own bound (Linux `ELOOP` at 40).
pub const MAX_LINKS: usize = 40;

/// Where a chain of symbolic links starting at `path` ends: `path` itself when it is no link,
/// else each link's target in turn (a relative target taken from the link's folder), so a
/// dangling link names the file a write through it would create. `None` for a loop (more than
/// [`MAX_LINKS`] links).
pub fn link_chain_end(path: &Path) -> Option<std::path::PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..=MAX_LINKS {
        let Ok(to) = std::fs::read_link(&p) else {
            return Some(p);
        };
        p = match p.parent() {
            Some(dir) if to.is_relative() => dir.join(to),
            _ => to,
        };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/version`, `/dev/stdout` (a link into `/proc/self/fd`) and a link of ours to
    /// `/proc/version` are kernel files; an ordinary file, a missing one and `/dev/null` are not.
    #[cfg(target_os = "linux")]
    #[test]
    fn files_of_proc_and_sys_are_kernel_files() {
        assert_eq!(kernel_file(Path::new("/proc/version")), Some("/proc"));
        assert_eq!(kernel_file(Path::new("/dev/stdout")), Some("/proc"));
        assert_eq!(kernel_file(Path::new("/sys/kernel/mm")), Some("/sys"));
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/proc/version", dir.path().join("v")).unwrap();
        assert_eq!(kernel_file(&dir.path().join("v")), Some("/proc"));
        std::fs::write(dir.path().join("f"), "x").unwrap();
        assert_eq!(kernel_file(&dir.path().join("f")), None);
        assert_eq!(kernel_file(&dir.path().join("missing")), None);
        assert_eq!(kernel_file(Path::new("/dev/null")), None);
    }

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
