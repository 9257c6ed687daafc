//! Every line the CLI prints goes through [`write`] (the `out!` / `outln!` macros for stdout,
//! `err!` / `errln!` for stderr), whose errors are kept instead of panicking (trial of issue
//! 39's leftovers, finding 3: `bench … > /dev/full` panicked with exit 101 after the run,
//! before the point was stored). The command goes on (its files and database are written
//! regardless of what it prints), and the exit status says what became of its output
//! ([`end_status`]): a reader gone (`| head`, EPIPE) ends quietly with 141, as CLIs do; any
//! other error (a full disk, `ulimit -f`) is said on stderr when it can be and is never exit 0
//! (1, the listed code of every subcommand's `--help`). A stream closed when the process
//! started (`>&-`, `2>&-`), which Rust's runtime reopens on `/dev/null` before `main`, is seen
//! before that (the binary's `.init_array`) and fails the first write to it the same way.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::cmd::ExitStatus;

/// A stream the CLI prints on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// stdout: tables, reports, JSON.
    Out,
    /// stderr: notes, warnings, errors, progress.
    Err,
}

/// Whether fd 1 / fd 2 was closed when the process started (`inferbench report >&-`), as seen
/// before Rust's runtime reopens a closed fd 0–2 on `/dev/null` (which makes every later
/// write succeed unseen): [`note_closed_std_fds`], run from the ELF `.init_array`, before
/// `main` (issue 39, a fresh tester's finding 4: `report >&-` printed nothing and exited 0).
static OUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// See [`OUT_CLOSED`]: fd 2.
static ERR_CLOSED: AtomicBool = AtomicBool::new(false);

/// Notes which of stdout and stderr were closed at start ([`OUT_CLOSED`]): `fcntl(fd,
/// F_GETFD)` fails with `EBADF` on a closed fd. Runs before `main` (the binary's
/// `.init_array`, ahead of Rust's runtime start); async-signal-safe, allocates nothing.
#[cfg(target_os = "linux")]
extern "C" fn note_closed_std_fds() {
    // SAFETY: fcntl on an fd number only queries its flags; no memory is touched.
    let closed = |fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1;
    OUT_CLOSED.store(closed(1), Ordering::SeqCst);
    ERR_CLOSED.store(closed(2), Ordering::SeqCst);
}

/// The check of [`note_closed_std_fds`], run by the loader before `main` (binary only: the
/// tests' harness has its own streams).
#[cfg(all(target_os = "linux", not(test)))]
#[used]
#[link_section = ".init_array"]
static NOTE_CLOSED_STD_FDS: extern "C" fn() = note_closed_std_fds;

/// The error a write to a stream closed at start gets (`EBADF`, named as such).
fn closed_error(stream: Stream) -> std::io::Error {
    let (name, redirect) = match stream {
        Stream::Out => ("stdout", ">&-"),
        Stream::Err => ("stderr", "2>&-"),
    };
    std::io::Error::other(format!(
        "{name} was closed when inferbench started (`{redirect}`)"
    ))
}

/// The first error writing stdout (later writes are skipped).
static OUT_FAILED: Mutex<Option<std::io::Error>> = Mutex::new(None);

/// The first error writing stderr (later writes are skipped).
static ERR_FAILED: Mutex<Option<std::io::Error>> = Mutex::new(None);

/// Writes `args` to `stream` and flushes it, keeping the first error (never panics): what
/// the print macros call.
pub fn write(stream: Stream, args: std::fmt::Arguments<'_>) {
    let slot = match stream {
        Stream::Out => &OUT_FAILED,
        Stream::Err => &ERR_FAILED,
    };
    let mut failed = slot.lock().unwrap_or_else(|e| e.into_inner());
    if failed.is_some() {
        return;
    }
    let closed = match stream {
        Stream::Out => &OUT_CLOSED,
        Stream::Err => &ERR_CLOSED,
    };
    if closed.load(Ordering::SeqCst) {
        *failed = Some(closed_error(stream));
        return;
    }
    let r = match stream {
        Stream::Out => {
            let mut out = std::io::stdout().lock();
            out.write_fmt(args).and_then(|()| out.flush())
        }
        Stream::Err => std::io::stderr().lock().write_fmt(args),
    };
    if let Err(e) = r {
        *failed = Some(e);
    }
}

/// The exit status of a subcommand that ended with `status`, given the first write error of
/// stdout (`out`) and of stderr (`err`), and the line to print on stderr about them: none and
/// `status` without an error; a closed pipe (EPIPE) on either, quietly, 141 (the shell's
/// convention for a pipeline whose reader left, as before the writer); any other error
/// `error: stdout could not be written: …` (naming `ulimit -f` when that limit explains it;
/// said only while stderr works), 1 in place of 0 (another status says more and is kept).
pub fn end_status(
    status: ExitStatus,
    out: Option<&std::io::Error>,
    err: Option<&std::io::Error>,
) -> (ExitStatus, Option<String>) {
    let pipe =
        |e: Option<&std::io::Error>| e.is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe);
    if pipe(out) || pipe(err) {
        return (ExitStatus::BrokenPipe, None);
    }
    let status = if (out.is_some() || err.is_some()) && status == ExitStatus::Ok {
        ExitStatus::Failed
    } else {
        status
    };
    let line = match (out, err) {
        (Some(e), None) => Some(format!(
            "error: stdout could not be written: {}; what it shows is incomplete (files and \
             the database were written regardless)",
            crate::fsize::explain(&e.to_string())
        )),
        _ => None,
    };
    (status, line)
}

/// [`end_status`] of this process's stdout and stderr, its line printed on stderr.
pub fn finish(status: ExitStatus) -> ExitStatus {
    let out = OUT_FAILED.lock().unwrap_or_else(|e| e.into_inner());
    let err = ERR_FAILED.lock().unwrap_or_else(|e| e.into_inner());
    let (status, line) = end_status(status, out.as_ref(), err.as_ref());
    if let Some(line) = line {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Open streams are noted as open (the harness's stdout and stderr), and a stream closed
    /// at start fails its write with the error that names it.
    #[cfg(target_os = "linux")]
    #[test]
    fn open_streams_are_not_noted_as_closed() {
        note_closed_std_fds();
        assert!(!OUT_CLOSED.load(Ordering::SeqCst));
        assert!(!ERR_CLOSED.load(Ordering::SeqCst));
        assert_eq!(
            closed_error(Stream::Out).to_string(),
            "stdout was closed when inferbench started (`>&-`)"
        );
    }

    /// A closed pipe is 141 and silent; a full disk is 1 with a line on stdout's failure (none
    /// when stderr failed too); a failed run's status is kept.
    #[test]
    fn output_errors_end_with_a_listed_status() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let full = std::io::Error::from_raw_os_error(28);
        assert_eq!(
            end_status(ExitStatus::Ok, None, None),
            (ExitStatus::Ok, None)
        );
        for (out, err) in [
            (Some(&pipe), None),
            (None, Some(&pipe)),
            (Some(&full), Some(&pipe)),
        ] {
            assert_eq!(
                end_status(ExitStatus::Usage, out, err),
                (ExitStatus::BrokenPipe, None)
            );
        }
        let (status, line) = end_status(ExitStatus::Ok, Some(&full), None);
        assert_eq!(status, ExitStatus::Failed);
        assert_eq!(
            line.unwrap(),
            "error: stdout could not be written: No space left on device (os error 28); what \
             it shows is incomplete (files and the database were written regardless)"
        );
        assert_eq!(
            end_status(ExitStatus::Ok, None, Some(&full)),
            (ExitStatus::Failed, None)
        );
        assert_eq!(
            end_status(ExitStatus::Usage, Some(&full), None).0,
            ExitStatus::Usage
        );
    }

    /// The kind, not the case: no `print!`, `println!`, `eprint!` or `eprintln!` in the CLI's
    /// source (comment lines aside), so no print can panic on a full or closed stream.
    #[test]
    fn every_cli_print_goes_through_the_writer() {
        fn files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    files(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    out.push(p);
                }
            }
        }
        let mut all = Vec::new();
        files(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut all,
        );
        let mut found = Vec::new();
        for p in &all {
            let text = std::fs::read_to_string(p).unwrap();
            for (i, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if code.starts_with("//") {
                    continue;
                }
                // `print!(` also matches `eprint!(`; spelled in two parts not to match here.
                let print = ["print", "println"].map(|m| format!("{m}!("));
                if print.iter().any(|m| code.contains(m.as_str())) {
                    found.push(format!("{}:{}: {code}", p.display(), i + 1));
                }
            }
        }
        assert!(
            found.is_empty(),
            "prints outside the writer:\n{}",
            found.join("\n")
        );
    }
}
