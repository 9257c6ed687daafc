//! Every line the CLI prints on stdout goes through [`write`] (the `out!` / `outln!` macros),
//! whose errors are kept instead of panicking (trial of issue 39's leftovers, finding 3:
//! `bench … > /dev/full` panicked with exit 101 after the run, before the point was stored).
//! The command goes on (its files and database are written regardless of stdout), and the
//! exit status says what became of stdout ([`end_status`]): a reader gone (`| head`, EPIPE)
//! ends quietly with 141, as CLIs do; any other error (a full disk, `ulimit -f`) is said on
//! stderr and is never exit 0 (1, the listed code of every subcommand's `--help`).

use std::io::Write as _;
use std::sync::Mutex;

use crate::cmd::ExitStatus;

/// The first error writing stdout (later writes are skipped).
static FAILED: Mutex<Option<std::io::Error>> = Mutex::new(None);

/// Writes `args` to stdout and flushes it, keeping the first error (never panics): what
/// `out!` and `outln!` call.
pub fn write(args: std::fmt::Arguments<'_>) {
    let mut failed = FAILED.lock().unwrap_or_else(|e| e.into_inner());
    if failed.is_some() {
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args).and_then(|()| out.flush()) {
        *failed = Some(e);
    }
}

/// The exit status of a subcommand that ended with `status`, given stdout's first write
/// error `failed`, and the line to print on stderr about it: none and `status` without an
/// error; a closed pipe (EPIPE) quietly, 141 in place of 0; any other error
/// `error: stdout could not be written: …` (naming `ulimit -f` when that limit explains it),
/// 1 in place of 0. A status other than 0 is kept (it says more).
pub fn end_status(
    status: ExitStatus,
    failed: Option<&std::io::Error>,
) -> (ExitStatus, Option<String>) {
    let Some(e) = failed else {
        return (status, None);
    };
    let instead = |s: ExitStatus| if status == ExitStatus::Ok { s } else { status };
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        return (instead(ExitStatus::BrokenPipe), None);
    }
    (
        instead(ExitStatus::Failed),
        Some(format!(
            "error: stdout could not be written: {}; what it shows is incomplete (files and \
             the database were written regardless)",
            crate::fsize::explain(&e.to_string())
        )),
    )
}

/// [`end_status`] of this process's stdout, its line printed on stderr.
pub fn finish(status: ExitStatus) -> ExitStatus {
    let failed = FAILED.lock().unwrap_or_else(|e| e.into_inner());
    let (status, line) = end_status(status, failed.as_ref());
    if let Some(line) = line {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A closed pipe is 141 and silent; a full disk is 1 with a line; a failed run's status is
    /// kept.
    #[test]
    fn stdout_errors_end_with_a_listed_status() {
        let pipe = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let full = std::io::Error::from_raw_os_error(28);
        assert_eq!(end_status(ExitStatus::Ok, None), (ExitStatus::Ok, None));
        assert_eq!(
            end_status(ExitStatus::Ok, Some(&pipe)),
            (ExitStatus::BrokenPipe, None)
        );
        assert_eq!(
            end_status(ExitStatus::Unreachable, Some(&pipe)),
            (ExitStatus::Unreachable, None)
        );
        let (status, line) = end_status(ExitStatus::Ok, Some(&full));
        assert_eq!(status, ExitStatus::Failed);
        assert_eq!(
            line.unwrap(),
            "error: stdout could not be written: No space left on device (os error 28); what \
             it shows is incomplete (files and the database were written regardless)"
        );
        assert_eq!(
            end_status(ExitStatus::Usage, Some(&full)).0,
            ExitStatus::Usage
        );
    }
}
