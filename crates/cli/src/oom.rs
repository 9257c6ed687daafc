//! The net under every memory budget (issue 39 §2): whatever input the up-front checks
//! ([`crate::limits`]) do not count, running out of memory ends with a message naming
//! `ulimit -v` and exit 2 (nothing sent yet) or 1 (midway), never a bare SIGABRT (134).
//!
//! Rust's stable std aborts on a failed infallible allocation (`handle_alloc_error` prints
//! "memory allocation of N bytes failed" and a backtrace or its `RUST_BACKTRACE` note, then
//! calls `abort()`), and no stable hook replaces that (`std::alloc::set_alloc_error_hook` and
//! `#[alloc_error_handler]` are unstable). So the allocator acts before std is told:
//!
//! - [`Counting`], the binary's global allocator: the system allocator unchanged, except that
//!   an allocation the system refuses (a null return) sets [`ALLOCATION_FAILED`] and, unless
//!   the thread is inside [`inferbench_core::fallible::fallible`] (the `try_reserve` calls of
//!   the bounded file readers, dataset and trace loads, which get their error and go on as
//!   before), ends the process at once with the project's message ([`exit_out_of_memory`]):
//!   std never sees the failure, so its message and backtrace note are never printed (f14
//!   item 6: both came before ours).
//! - A `SIGABRT` handler ([`install`], first thing in `main`), the fallback for an allocation
//!   that failed outside this allocator's view: when an allocation has failed,
//!   the abort is the allocation-failure one, so it writes a message formatted at start (only
//!   `write(2)` and `_exit(2)`: async-signal-safe) and exits 2, or 1 when a request has been
//!   sent ([`inferbench_client::any_request_sent`]; for `sim`, served:
//!   [`inferbench_sim::any_request_served`], [`set_server`]). Any other abort (no allocation failed) is
//!   left alone: the default action is restored and the signal raised again, so the process
//!   still ends with SIGABRT (134) as before.
//!
//! A thread that cannot be spawned for want of address space panics in std ("failed to spawn
//! thread"); [`is_memory_panic`] recognises that panic under `ulimit -v` so the panic hook ends
//! the same way ([`exit_out_of_memory`]) instead of with 101.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// Set once an allocation has been refused by the system allocator (never cleared: a refused
/// `try_reserve` followed later by an unrelated `abort()` reads as out of memory, which under a
/// refused allocation it most likely is).
static ALLOCATION_FAILED: AtomicBool = AtomicBool::new(false);

/// The two messages, formatted at [`install`] (the handler allocates nothing): before any
/// request (exit 2) and midway (exit 1).
static MESSAGES: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();

/// The two messages with a subcommand's own flags to lower ([`set_what_to_lower`]), set once
/// its arguments are parsed; [`MESSAGES`] before that.
static SUBCOMMAND_MESSAGES: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();

/// The two messages narrowed once the subcommand's inputs are read ([`narrow_what_to_lower`]:
/// a sweep whose rows are all AgentX rows names their flags, not `--prompts-per-conc`); read
/// before [`SUBCOMMAND_MESSAGES`].
static NARROWED_MESSAGES: OnceLock<(Vec<u8>, Vec<u8>)> = OnceLock::new();

/// What to lower for every subcommand but those of [`set_what_to_lower`] (`bench`, `replay`,
/// `selftest`, `sweep`, `job`, `quickstart`, `eval`: [`crate::limits::Lower::net`]): no flag,
/// since it is said by subcommands that have none of the load flags (`sim`, `serve`, `ingest`;
/// issue 39's leftovers, 1: it named `--max-concurrency` to all of them).
pub const DEFAULT_WHAT_TO_LOWER: &str = "the input's size or the load";

/// Names the flags the running subcommand lowers its memory with in the net's message (e.g.
/// eval's `--concurrency/--limit`: trial of issue 39, finding 3, where it said
/// `--num-prompts`, a flag eval does not have). Call once, after parsing, before the run.
pub fn set_what_to_lower(what: &str) {
    let limit = address_limit_kib();
    let _ = SUBCOMMAND_MESSAGES.set((
        message_lowering(limit, false, what).into_bytes(),
        message_lowering(limit, true, what).into_bytes(),
    ));
}

/// Set by [`set_server`]: this process serves (`sim`), so "midway" is "a request has been
/// served" ([`inferbench_sim::any_request_served`]), not "a request has been sent".
static SERVER: AtomicBool = AtomicBool::new(false);

/// What a server's net tells the user to lower (`sim`'s own flag and its clients' load).
pub const SERVER_WHAT_TO_LOWER: &str = "--max-num-seqs or the clients' load";

/// Makes the net a server's (`sim`; issue 39, fresh tester's finding 2: a sim that ran out of
/// memory while serving said "(nothing was sent)", a client's words, and exited 2): exit 1 once
/// it has served a request ([`inferbench_sim::any_request_served`]), saying it stopped mid-run,
/// else 2 ([`server_message`]). Call once, after parsing, before the server starts.
pub fn set_server() {
    let limit = address_limit_kib();
    let _ = SUBCOMMAND_MESSAGES.set((
        server_message(limit, false).into_bytes(),
        server_message(limit, true).into_bytes(),
    ));
    SERVER.store(true, Ordering::Relaxed);
}

/// Narrows what the net tells the user to lower once the subcommand's inputs are read, after
/// [`set_what_to_lower`] (which `main` calls from the subcommand alone, and which is set once):
/// e.g. `sweep`/`job` of AgentX rows only. The first call wins; the message is built here, so
/// the net itself allocates nothing.
pub fn narrow_what_to_lower(what: &str) {
    let limit = address_limit_kib();
    let _ = NARROWED_MESSAGES.set((
        message_lowering(limit, false, what).into_bytes(),
        message_lowering(limit, true, what).into_bytes(),
    ));
}

/// A server's out-of-memory message under `limit_kib` (`ulimit -v`, KiB; `None`: no limit set),
/// `served`: whether it had served a request. One line, ending in a newline.
pub fn server_message(limit_kib: Option<u64>, served: bool) -> String {
    let under = match limit_kib {
        Some(k) => format!("under `ulimit -v` {k} KiB"),
        None => "with no `ulimit -v` set (the machine's memory ran out)".to_string(),
    };
    let what = if served {
        "the server stopped mid-run: it had served requests, and those in flight were cut off"
    } else {
        "no request had been served"
    };
    format!(
        "inferbench sim: error: out of memory {under}: its start check counts only what an idle \
         server needs, not what its load holds; lower {SERVER_WHAT_TO_LOWER} or raise \
         `ulimit -v` ({what})\n"
    )
}

/// Whether the run is midway for the net: a request served (a server, [`set_server`]) or
/// sent (a client). Async-signal-safe (atomic loads).
fn midway() -> bool {
    if SERVER.load(Ordering::Relaxed) {
        inferbench_sim::any_request_served()
    } else {
        inferbench_client::any_request_sent()
    }
}

/// The system allocator, noting each refused allocation in [`ALLOCATION_FAILED`].
pub struct Counting;

// SAFETY: every call forwards to `System` with the same arguments and returns its result
// unchanged; the only addition is an atomic store on a null return.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        noted(System.alloc(layout))
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        noted(System.alloc_zeroed(layout))
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        noted(System.realloc(ptr, layout, new_size))
    }
}

/// `p`, noting a null (a refused allocation) in [`ALLOCATION_FAILED`]; a null outside
/// [`inferbench_core::fallible::fallible`] ends the process ([`exit_out_of_memory`]: the
/// project's message only, before std's handler prints its own).
#[inline]
fn noted(p: *mut u8) -> *mut u8 {
    if p.is_null() {
        ALLOCATION_FAILED.store(true, Ordering::Relaxed);
        if ARMED.load(Ordering::Relaxed) && !inferbench_core::fallible::in_fallible() {
            exit_out_of_memory();
        }
    }
    p
}

/// Set by [`install`] once the messages are formatted: before that (and in the unit tests,
/// which do not install the net) a refused allocation is left to std.
static ARMED: AtomicBool = AtomicBool::new(false);

/// The soft address-space limit (`ulimit -v`), KiB; `None` when unlimited or unknown.
pub fn address_limit_kib() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut r = libc::rlimit {
            rlim_cur: libc::RLIM_INFINITY,
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: getrlimit writes only the struct passed.
        let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } == 0;
        (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur / 1024)
    }
    #[cfg(not(unix))]
    None
}

/// The message for running out of memory under `limit_kib` (`ulimit -v`, KiB; `None`: no
/// limit set), `sent`: whether a request had been sent. One line, ending in a newline.
pub fn message(limit_kib: Option<u64>, sent: bool) -> String {
    message_lowering(limit_kib, sent, DEFAULT_WHAT_TO_LOWER)
}

/// [`message`] naming `what` to lower.
pub fn message_lowering(limit_kib: Option<u64>, sent: bool, what_to_lower: &str) -> String {
    let under = match limit_kib {
        Some(k) => format!("under `ulimit -v` {k} KiB"),
        None => "with no `ulimit -v` set (the machine's memory ran out)".to_string(),
    };
    let what = if sent {
        "the run stopped midway: what was already written to disk stays, no summary was written"
    } else {
        "nothing was sent"
    };
    format!(
        "inferbench: error: out of memory {under}: an input or load larger than the memory \
         check counted; lower {what_to_lower} or raise `ulimit -v` ({what})\n"
    )
}

/// Installs the net: formats its messages and sets the `SIGABRT` handler. Call first thing in
/// `main`, before any thread exists. Does nothing off Unix.
pub fn install() {
    let limit = address_limit_kib();
    let _ = MESSAGES.set((
        message(limit, false).into_bytes(),
        message(limit, true).into_bytes(),
    ));
    ARMED.store(true, Ordering::Relaxed);
    #[cfg(unix)]
    // SAFETY: a zeroed sigaction is a valid value; the handler only does async-signal-safe
    // work (atomic loads, write(2), _exit(2), signal(2), raise(3)).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_abort as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // Reset to the default on entry and let a re-raise inside the handler land at once.
        sa.sa_flags = libc::SA_RESETHAND | libc::SA_NODEFER;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGABRT, &sa, std::ptr::null_mut());
    }
}

/// Debug builds only: with `INFERBENCH_DEBUG_ALLOCATE_BYTES=N` set, allocates N bytes
/// infallibly (as any uncounted input would) right after [`install`], so the net's tests do
/// not depend on which inputs the budget does not count yet. Release builds ignore it.
pub fn debug_allocate() {
    #[cfg(debug_assertions)]
    if let Some(n) = std::env::var("INFERBENCH_DEBUG_ALLOCATE_BYTES")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        let v: Vec<u8> = vec![1u8; n];
        std::hint::black_box(&v);
    }
}

/// The exit status for running out of memory now: 1 when midway ([`midway`]: a request has
/// been sent, or a server has served one), else 2.
fn status() -> i32 {
    if midway() {
        1
    } else {
        2
    }
}

/// Removes every temporary file still listed (`inferbench_core::tempfiles`): called on each
/// end that runs no destructors (this net's `_exit`, the panic hook's `process::exit`).
/// Async-signal-safe (atomic loads and `unlink(2)`); does nothing off Unix.
pub fn remove_pending_temp_files() {
    #[cfg(unix)]
    inferbench_core::tempfiles::for_each_pending(|p| {
        // SAFETY: `p` is a NUL-terminated path that is never freed; unlink is
        // async-signal-safe.
        unsafe {
            libc::unlink(p.cast());
        }
    });
}

/// Removes the temporary files still listed (`inferbench_core::tempfiles`), writes the
/// preformatted message for now and ends the process ([`status`]) without unwinding or
/// running destructors (async-signal-safe).
pub fn exit_out_of_memory() -> ! {
    // The temporary files on disk (a claimed `….json.tmp`): no destructor runs after this
    // (issue 39, fresh tester's finding 3: a 0-byte one was left behind).
    remove_pending_temp_files();
    let sent = midway();
    if let Some((before, after)) = (NARROWED_MESSAGES.get())
        .or_else(|| SUBCOMMAND_MESSAGES.get())
        .or_else(|| MESSAGES.get())
    {
        let m = if sent { after } else { before };
        #[cfg(unix)]
        // SAFETY: writes an initialised buffer to stderr.
        unsafe {
            libc::write(2, m.as_ptr().cast(), m.len());
        }
    }
    #[cfg(unix)]
    // SAFETY: _exit ends the process at once.
    unsafe {
        libc::_exit(status())
    }
    #[cfg(not(unix))]
    std::process::exit(status())
}

/// The `SIGABRT` handler: an abort after a refused allocation ends as [`exit_out_of_memory`];
/// any other abort is raised again with the default action (134).
#[cfg(unix)]
extern "C" fn on_abort(_sig: libc::c_int) {
    if ALLOCATION_FAILED.load(Ordering::Relaxed) {
        exit_out_of_memory();
    }
    // SAFETY: signal and raise are async-signal-safe; SA_RESETHAND already restored the default.
    unsafe {
        libc::signal(libc::SIGABRT, libc::SIG_DFL);
        libc::raise(libc::SIGABRT);
    }
}

/// Whether a panic's message says memory ran out: "out of memory"/"Cannot allocate memory"
/// (`ENOMEM`), or std's "failed to spawn thread" under an address-space limit (a thread's stack
/// did not fit, `EAGAIN`).
pub fn is_memory_panic(msg: &str) -> bool {
    msg.contains("Cannot allocate memory")
        || msg.contains("os error 12")
        || (msg.contains("failed to spawn thread") && address_limit_kib().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_limit_and_what_to_lower() {
        assert_eq!(
            message(Some(400_000), false),
            "inferbench: error: out of memory under `ulimit -v` 400000 KiB: an input or load \
             larger than the memory check counted; lower the input's size or the load or raise \
             `ulimit -v` (nothing was sent)\n"
        );
        assert!(message(Some(1), true).ends_with(
            "(the run stopped midway: what was already written to disk stays, no summary was \
             written)\n"
        ));
        assert!(message(None, false).contains("with no `ulimit -v` set"));
        // A server's own words (issue 39, fresh tester's finding 2: "(nothing was sent)").
        assert_eq!(
            server_message(Some(150_000), true),
            "inferbench sim: error: out of memory under `ulimit -v` 150000 KiB: its start check \
             counts only what an idle server needs, not what its load holds; lower \
             --max-num-seqs or the clients' load or raise `ulimit -v` (the server stopped \
             mid-run: it had served requests, and those in flight were cut off)\n"
        );
        assert!(server_message(Some(1), false).ends_with("(no request had been served)\n"));
        // eval's own flags (trial of issue 39, finding 3: it said --num-prompts).
        assert!(message_lowering(Some(1), false, "--concurrency/--limit")
            .contains("; lower --concurrency/--limit or raise `ulimit -v`"));
    }

    #[test]
    fn memory_panics_are_recognised() {
        assert!(is_memory_panic(
            "failed to create thread: Cannot allocate memory (os error 12)"
        ));
        assert!(!is_memory_panic("index out of bounds"));
    }

    /// A refused `try_reserve` is an error, not an abort, under the counting allocator (the
    /// test binary uses the system allocator; the wrapper is the same call).
    #[test]
    fn a_refused_allocation_returns_null_and_is_noted() {
        let layout = Layout::from_size_align(1 << 62, 8).unwrap();
        // SAFETY: a non-zero-size layout; the null result is not dereferenced.
        let p = unsafe { Counting.alloc(layout) };
        assert!(p.is_null());
        assert!(ALLOCATION_FAILED.load(Ordering::Relaxed));
    }
}
