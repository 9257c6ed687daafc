//! Which allocations may fail without ending the process: the one mark between the code that
//! asks for memory it can do without (`try_reserve` in the bounded readers and loads) and the
//! binary's allocator, which ends the process with the project's own out-of-memory message on
//! any other refused allocation, before Rust's std prints its own ("memory allocation of N
//! bytes failed" and a backtrace note; f14 item 6). Stable Rust has no hook that replaces
//! std's allocation-failure handler (`set_alloc_error_hook` and `#[alloc_error_handler]` are
//! unstable), so the allocator acts before std is told.

use std::cell::Cell;

thread_local! {
    static FALLIBLE: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f` with this thread's allocations marked fallible: an allocation the system refuses
/// inside it is returned to its caller as an error (a `try_reserve`'s `Err`) instead of ending
/// the process. Use it around `try_reserve` calls only (any other allocation inside would
/// reach std's abort after all). Nests.
pub fn fallible<T>(f: impl FnOnce() -> T) -> T {
    struct Exit;
    impl Drop for Exit {
        fn drop(&mut self) {
            let _ = FALLIBLE.try_with(|c| c.set(c.get().saturating_sub(1)));
        }
    }
    let _ = FALLIBLE.try_with(|c| c.set(c.get().saturating_add(1)));
    let _exit = Exit;
    f()
}

/// Whether this thread is inside [`fallible`] now. Allocates nothing (callable from a global
/// allocator); `false` while the thread's locals are being torn down.
pub fn in_fallible() -> bool {
    FALLIBLE.try_with(|c| c.get() > 0).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::{fallible, in_fallible};

    #[test]
    fn the_mark_holds_inside_and_nests() {
        assert!(!in_fallible());
        fallible(|| {
            assert!(in_fallible());
            fallible(|| assert!(in_fallible()));
            assert!(in_fallible());
        });
        assert!(!in_fallible());
        let caught = std::panic::catch_unwind(|| fallible(|| panic!("x")));
        assert!(caught.is_err());
        assert!(!in_fallible());
    }
}
