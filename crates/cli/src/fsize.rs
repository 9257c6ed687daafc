//! The file-size limit (`ulimit -f`, `RLIMIT_FSIZE`) against what a run will write (trial of
//! issue 39's leftovers, finding 4): under `ulimit -f 100` every request ran and then the
//! database failed with "sqlite: disk I/O error", naming no limit. The limit is read at start
//! and each file a run writes is estimated from below (so a refusal is always right): a run
//! whose largest file cannot fit is refused before any request (exit 2, naming `ulimit -f` and
//! a value that fits); an error at run time that the limit explains names it
//! ([`explain`]).

/// One byte count per `ulimit -f` block in bash and zsh (KiB; POSIX `sh` counts 512-byte
/// blocks, which the message also gives).
const KIB: u64 = 1024;

/// Bytes of one saved request record (`requests.jsonl`) at least, before its chunks: the
/// timestamps, counts and field names of a record of 8 output tokens measured 820 bytes, of
/// which 8 chunks are 320.
pub const RECORD_BYTES: u64 = 400;

/// Bytes per output token of a saved record at least: one chunk's `{"t_ns":…,"channel":…}`
/// (40 bytes measured with a 9-digit time) and the token's text.
pub const RECORD_BYTES_PER_TOKEN: u64 = 30;

/// Bytes of a `bench` result file at least (30 KiB measured for 8 requests: the vLLM keys,
/// the extras' distributions and the per-request arrays).
pub const RESULT_BYTES: u64 = 16 * KIB;

/// Bytes of a `replay`'s (or a sweep point's) `summary.json` at least (6.5 KiB measured for a
/// two-second synthetic replay: its keys and distributions, whatever the request count).
pub const REPLAY_SUMMARY_BYTES: u64 = 2 * KIB;

/// Bytes of a new SQLite database at least: the schema after every migration (124 KiB
/// measured).
pub const NEW_DB_BYTES: u64 = 120 * KIB;

/// Bytes an existing database grows by at least when one point is stored: a page of each
/// table and index the point touches (its `-wal` holds at least as much).
pub const DB_GROWTH_BYTES: u64 = 16 * KIB;

/// The soft file-size limit in bytes; `None` when unlimited (or unknown).
pub fn limit() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: `getrlimit` writes the struct it is given and reads nothing else.
        let ok = unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut r) } == 0;
        (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// One file a run will write: the flag (or flag and file) that names it and the bytes it
/// will hold at least.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// The flag as the user knows it (`--save-requests`, `--db`).
    pub flag: String,
    /// Bytes at least.
    pub bytes: u64,
}

impl Planned {
    /// A file named by `flag` of at least `bytes`.
    pub fn new(flag: impl Into<String>, bytes: u64) -> Self {
        Self {
            flag: flag.into(),
            bytes,
        }
    }
}

/// The bytes of `records` saved request records of `osl` output tokens each, at least.
pub fn records_bytes(records: u64, osl: u64) -> u64 {
    records.saturating_mul(RECORD_BYTES.saturating_add(osl.saturating_mul(RECORD_BYTES_PER_TOKEN)))
}

/// What storing one result into the SQLite file `db` writes at least: a new database's
/// schema, or an existing one's size plus [`DB_GROWTH_BYTES`] (the database file itself is
/// written up to that size). `None` for a PostgreSQL URL.
pub fn db_bytes(db: &str) -> Option<u64> {
    if db.contains("://") {
        return None;
    }
    Some(match std::fs::metadata(db) {
        Ok(m) if m.is_file() => m.len().saturating_add(DB_GROWTH_BYTES),
        _ => NEW_DB_BYTES,
    })
}

/// Refuses a run whose largest planned file cannot fit under `limit` (bytes; `None`:
/// unlimited), before any request.
///
/// # Errors
/// `ulimit -f limits each file to N KiB; FLAG will hold at least M KiB: nothing was sent;
/// raise it to at least K (`ulimit -f K`, in KiB as bash counts; 2K in 512-byte blocks for
/// sh) or `ulimit -f unlimited``.
pub fn check(planned: &[Planned], limit: Option<u64>) -> Result<(), String> {
    let Some(limit) = limit else { return Ok(()) };
    let Some(big) = planned.iter().max_by_key(|p| p.bytes) else {
        return Ok(());
    };
    if big.bytes <= limit {
        return Ok(());
    }
    let fits = big.bytes.div_ceil(KIB);
    Err(format!(
        "`ulimit -f` limits each file to {}; {} will hold at least {fits} KiB: nothing was \
         sent; raise the limit to at least {fits} (`ulimit -f {fits}`, in KiB as bash counts; \
         {} in sh's 512-byte blocks) or `ulimit -f unlimited`",
        size(limit),
        big.flag,
        fits * 2
    ))
}

/// `message` (an error's text), with the file-size limit named when it explains it: a write
/// that failed with EFBIG ("File too large") or SQLite's I/O and "disk is full" errors while
/// `ulimit -f` is set.
pub fn explain(message: &str) -> String {
    explain_under(message, limit())
}

/// [`explain`] under the limit `limit` (bytes; `None`: unlimited).
pub fn explain_under(message: &str, limit: Option<u64>) -> String {
    let Some(limit) = limit else {
        return message.to_string();
    };
    let lower = message.to_lowercase();
    let by_limit = [
        "file too large",
        "disk i/o error",
        "disk is full",
        "os error 27",
    ]
    .iter()
    .any(|m| lower.contains(m));
    if !by_limit || message.contains("ulimit -f") {
        return message.to_string();
    }
    format!(
        "{message} (the file-size limit `ulimit -f` is {}: raise it, `ulimit -f unlimited`)",
        size(limit)
    )
}

/// A limit in bytes as said: `N KiB` when whole KiB, else `N bytes` (sh's `ulimit -f 1` is
/// 512 bytes, not "0 KiB").
fn size(bytes: u64) -> String {
    if bytes.is_multiple_of(KIB) {
        format!("{} KiB", bytes / KIB)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The largest planned file decides; the message names `ulimit -f`, the file and a value
    /// that fits in both units; unlimited passes.
    #[test]
    fn the_largest_planned_file_against_the_limit() {
        let planned = [
            Planned::new("--save-requests", 6_000),
            Planned::new("--db", NEW_DB_BYTES),
        ];
        assert_eq!(check(&planned, None), Ok(()));
        assert_eq!(check(&planned, Some(NEW_DB_BYTES)), Ok(()));
        assert_eq!(
            check(&planned, Some(100 * 1024)),
            Err(
                "`ulimit -f` limits each file to 100 KiB; --db will hold at least 120 KiB: \
                 nothing was sent; raise the limit to at least 120 (`ulimit -f 120`, in KiB as \
                 bash counts; 240 in sh's 512-byte blocks) or `ulimit -f unlimited`"
                    .into()
            )
        );
        assert_eq!(check(&[], Some(0)), Ok(()));
        assert_eq!(records_bytes(8, 8), 8 * (400 + 240));
        assert_eq!(records_bytes(u64::MAX, 8), u64::MAX);
        assert_eq!(db_bytes("postgres://u@h/d"), None);
        assert_eq!(db_bytes("/nonexistent/x.db"), Some(NEW_DB_BYTES));
    }

    /// A run-time write error the limit explains names it; others and unlimited pass as
    /// they are.
    #[test]
    fn a_write_error_under_the_limit_names_it() {
        assert_eq!(
            explain_under("sqlite: disk I/O error", Some(102_400)),
            "sqlite: disk I/O error (the file-size limit `ulimit -f` is 100 KiB: raise it, \
             `ulimit -f unlimited`)"
        );
        assert_eq!(
            explain_under("r.jsonl: File too large (os error 27)", Some(5 * 1024)),
            "r.jsonl: File too large (os error 27) (the file-size limit `ulimit -f` is 5 KiB: \
             raise it, `ulimit -f unlimited`)"
        );
        assert_eq!(
            explain_under("stdout: File too large (os error 27)", Some(512)),
            "stdout: File too large (os error 27) (the file-size limit `ulimit -f` is 512 \
             bytes: raise it, `ulimit -f unlimited`)"
        );
        assert_eq!(
            explain_under("sqlite: disk I/O error", None),
            "sqlite: disk I/O error"
        );
        assert_eq!(
            explain_under("no such table: points", Some(1024)),
            "no such table: points"
        );
    }
}
