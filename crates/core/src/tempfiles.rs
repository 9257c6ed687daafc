//! Temporary files a run has on disk right now (`<result>.json.tmp` claimed for a result,
//! `<file>.tmp` written and renamed onto its file), so that an end that runs no destructors
//! removes them too (issue 39, fresh tester's finding 3: a 0-byte `….json.tmp` was left behind
//! after an out-of-memory end, which leaves by `_exit`). The owner registers a file with
//! [`register`] while it exists and drops the returned [`Pending`] once it renamed or removed
//! it; the out-of-memory net (the CLI's `oom`) unlinks every file still listed
//! ([`for_each_pending`], async-signal-safe) before it exits.

use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};

/// How many temporary files can be listed at once (a run has at most a few; one more is not
/// listed, and is then removed only by its owner, as before).
pub const SLOTS: usize = 64;

/// Each slot: a NUL-terminated absolute path, or null. The bytes are never freed (a signal
/// handler may read them at any time; about 100 bytes per temporary file).
static PENDING: [AtomicPtr<u8>; SLOTS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS];

/// A listed temporary file; dropping it unlists the file (it does not remove it: its owner
/// renames or removes it first).
#[derive(Debug)]
pub struct Pending {
    slot: Option<usize>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            PENDING[i].store(std::ptr::null_mut(), Ordering::SeqCst);
        }
    }
}

/// Lists `path` (made absolute against the current directory) as a temporary file on disk
/// until the returned [`Pending`] is dropped. A path with a NUL byte, or one beyond
/// [`SLOTS`], is not listed.
///
/// Debug builds only: with `INFERBENCH_DEBUG_ALLOCATE_ON_TEMP=N` set, N bytes are allocated
/// right after the first file is listed (the out-of-memory net's tests end a run there).
pub fn register(path: &Path) -> Pending {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut bytes = abs.as_os_str().as_encoded_bytes().to_vec();
    if bytes.contains(&0) {
        return Pending { slot: None };
    }
    bytes.push(0);
    let ptr = Box::leak(bytes.into_boxed_slice()).as_mut_ptr();
    let slot = (PENDING.iter()).position(|s| {
        s.compare_exchange(
            std::ptr::null_mut(),
            ptr,
            Ordering::SeqCst,
            Ordering::SeqCst,
        )
        .is_ok()
    });
    #[cfg(debug_assertions)]
    if let Some(n) = std::env::var("INFERBENCH_DEBUG_ALLOCATE_ON_TEMP")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        let v: Vec<u8> = vec![1u8; n];
        std::hint::black_box(&v);
    }
    Pending { slot }
}

/// Calls `f` with each listed temporary file's path, a NUL-terminated byte string (for
/// `unlink(2)`). Async-signal-safe: atomic loads only, nothing allocated.
pub fn for_each_pending(mut f: impl FnMut(*const u8)) {
    for s in &PENDING {
        let p = s.load(Ordering::SeqCst);
        if !p.is_null() {
            f(p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed() -> Vec<String> {
        let mut v = Vec::new();
        for_each_pending(|p| {
            // SAFETY: a listed pointer is a leaked NUL-terminated buffer.
            let c = unsafe { std::ffi::CStr::from_ptr(p.cast()) };
            v.push(c.to_string_lossy().into_owned());
        });
        v
    }

    /// A listed file is seen, absolute, until its `Pending` is dropped; a NUL byte is not listed.
    #[test]
    fn a_file_is_listed_while_pending() {
        let d = tempfile::tempdir().unwrap();
        let a = d.path().join("a.json.tmp");
        let p = register(&a);
        assert!(listed().contains(&a.display().to_string()));
        drop(p);
        assert!(!listed().contains(&a.display().to_string()));
        let n = register(Path::new("x\0y"));
        assert!(n.slot.is_none());
    }
}
