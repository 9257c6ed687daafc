//! The file-size limit (`ulimit -f`, `RLIMIT_FSIZE`) against what a run will write (trial of
//! issue 39's leftovers, finding 4): under `ulimit -f 100` every request ran and then the
//! database failed with "sqlite: disk I/O error", naming no limit. The limit is read at start
//! and each file a run writes is estimated from below and from above: a run one of whose files
//! may not fit (its upper estimate above the limit) is refused before any request (exit 2,
//! naming `ulimit -f` and the largest upper estimate, a value at which the run writes every
//! file whole: issue 39, second round, finding 3); an error at run time that the limit
//! explains names it ([`explain`]).

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

/// Bytes of a `replay`'s `summary.json` at most: 6.5 KiB measured, with
/// room for more distributions and longer names (the advice's upper estimate).
pub const REPLAY_SUMMARY_UPPER_BYTES: u64 = 16 * KIB;

/// Bytes of a new SQLite database at least: the schema after every migration (124 KiB
/// measured).
pub const NEW_DB_BYTES: u64 = 120 * KIB;

/// Bytes an existing database grows by at least when one point is stored: a page of each
/// table and index the point touches (its `-wal` holds at least as much).
pub const DB_GROWTH_BYTES: u64 = 16 * KIB;

/// Bytes of one saved request record at most, before its chunks (the advice's upper
/// estimate, issue 39 second round, finding 3): 340 measured for the fixed fields of a record,
/// with room for an error message and a finish reason.
pub const RECORD_UPPER_BYTES: u64 = 1536;

/// Bytes per chunk entry of a saved record at most: one chunk's
/// `{"t_ns":…,"channel":"reasoning","tokens":…},` with a 16-digit time (115 days in ns: runs
/// are at most 7 days, their timeouts as long), the longest channel name and a 10-digit token
/// count (`continuous_usage_stats`): 68. A record keeps at most
/// `inferbench_client::kept::kept_chunks` entries and `kept_text_bytes` of text as JSON writes
/// it: the one rule of the client and this estimate (issue 39, later tester: 16 × max_tokens
/// one-byte chunks, inside the client's caps, made the advised `ulimit -f` false).
pub const RECORD_UPPER_BYTES_PER_CHUNK: u64 = 68;

/// Bytes per output token of one saved record at most, as a line that grows with its tokens
/// (a replay's records room, whose lines are planned per token): one kept chunk entry
/// ([`RECORD_UPPER_BYTES_PER_CHUNK`]) and its kept text
/// (`inferbench_client::kept::KEPT_TEXT_BYTES_PER_MAX_TOKEN`): with
/// [`record_upper_line_base`], `records_upper_bytes(1, n)` = base + n × this for n ≥ 1.
pub const RECORD_UPPER_BYTES_PER_TOKEN: u64 =
    RECORD_UPPER_BYTES_PER_CHUNK + inferbench_client::kept::KEPT_TEXT_BYTES_PER_MAX_TOKEN;

/// Bytes of one saved record at most before its tokens' part (see
/// [`RECORD_UPPER_BYTES_PER_TOKEN`]): [`RECORD_UPPER_BYTES`] and what the client keeps of any
/// response beyond its tokens (its extra chunk entries and extra text).
pub fn record_upper_line_base() -> u64 {
    records_upper_bytes(1, 1).saturating_sub(RECORD_UPPER_BYTES_PER_TOKEN)
}

/// Bytes of a `bench` result file at most without `--save-detailed` (35 KiB measured for 256
/// requests: its size does not grow with the request count).
pub const RESULT_UPPER_BYTES: u64 = 64 * KIB;

/// Bytes per profile request that `--save-detailed` adds to the result file at most, before
/// its tokens: its lines of `ttfts`, `input_lens`, `output_lens`, `errors` (an error message)
/// and the brackets of its `itls` list.
pub const DETAILED_UPPER_BYTES_PER_REQUEST: u64 = 640;

/// Bytes per kept chunk that `--save-detailed` adds to the result file at most: its `itls`
/// line (indent, a 24-character number, `,` and newline: 32); its text in `generated_texts` is
/// counted by the client's kept text budget (`inferbench_client::kept::kept_text_bytes`, as
/// JSON writes it).
pub const DETAILED_UPPER_BYTES_PER_CHUNK: u64 = 32;

/// Bytes of a new SQLite database at most before its requests: the schema and one point's
/// rows with its server-metric samples (160 KiB measured with 256 requests against the
/// instant sim, 240 KiB for a one-second point with its `/metrics` scrapes; the samples of a
/// long point are not counted: they grow with its duration).
pub const NEW_DB_UPPER_BYTES: u64 = 512 * KIB;

/// Bytes an existing database grows by at most when one point is stored, before its
/// requests (120 KiB measured for a one-second point with its `/metrics` scrapes).
pub const DB_GROWTH_UPPER_BYTES: u64 = 256 * KIB;

/// Bytes a stored request adds to the database at most (280 measured with its indexes).
pub const DB_UPPER_BYTES_PER_RECORD: u64 = 512;

/// Bytes storing a point adds to the database per byte of its `server_metrics.jsonl` at most:
/// 3 (a row per sample with its primary-key index, and the file kept compressed among the
/// artifacts; 1.8 measured against the sim: a 1.16 MB file grew the database by 2.06 MB).
pub const DB_BYTES_PER_SERVER_METRICS_BYTE: u64 = 3;

/// The most bytes a point's `server_metrics.jsonl` may hold under the file-size limit `limit`
/// (`None`: unlimited, no bound): the limit itself, and with a `--db` file whose upper estimate
/// without server metrics is `db_upper` (`Some`), what that leaves the database for the
/// file's rows ([`DB_BYTES_PER_SERVER_METRICS_BYTE`] a byte). The number of scrapes is not
/// known up front (it grows with the point's duration), so the file is bounded instead of
/// estimated: its scrapes are thinned evenly to fit (`telemetry::scrape::write_jsonl_within`;
/// issue 39's leftovers, 2: a long point's scrapes and their rows hit `ulimit -f` midway).
pub fn server_metrics_room(limit: Option<u64>, db_upper: Option<u64>) -> Option<u64> {
    let limit = limit?;
    Some(match db_upper {
        Some(db) => limit.min(limit.saturating_sub(db) / DB_BYTES_PER_SERVER_METRICS_BYTE),
        None => limit,
    })
}

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

/// One file a run will write: the flag (or flag and file) that names it, the bytes it will
/// hold at least and at most (as estimated: the advised limit is the largest `upper`, so a run
/// at that limit writes every file whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// The flag as the user knows it (`--save-requests`, `--db`).
    pub flag: String,
    /// Bytes at least.
    pub bytes: u64,
    /// Bytes at most (as estimated), never below `bytes`.
    pub upper: u64,
}

impl Planned {
    /// A file named by `flag` of at least (and, as far as known, at most) `bytes`.
    pub fn new(flag: impl Into<String>, bytes: u64) -> Self {
        Self::between(flag, bytes, bytes)
    }

    /// A file named by `flag` of at least `bytes` and at most `upper` bytes (raised to
    /// `bytes` when below it).
    pub fn between(flag: impl Into<String>, bytes: u64, upper: u64) -> Self {
        Self {
            flag: flag.into(),
            bytes,
            upper: upper.max(bytes),
        }
    }
}

/// What a record of a request for `osl` tokens keeps at most: (chunk entries, text bytes as
/// JSON writes them), the client's kept budget (`inferbench_client::kept`); (0, 0) for 0
/// tokens (no `max_tokens` known).
fn kept(osl: u64) -> (u64, u64) {
    use inferbench_client::kept::{kept_chunks, kept_text_bytes};
    match osl {
        0 => (0, 0),
        n => (kept_chunks(n), kept_text_bytes(n)),
    }
}

/// The bytes of `records` saved request records of `osl` output tokens each, at most (as
/// estimated: [`RECORD_UPPER_BYTES`], and what the client keeps of a response: its chunk
/// entries × [`RECORD_UPPER_BYTES_PER_CHUNK`] and its text).
pub fn records_upper_bytes(records: u64, osl: u64) -> u64 {
    let (chunks, text) = kept(osl);
    records.saturating_mul(
        RECORD_UPPER_BYTES
            .saturating_add(chunks.saturating_mul(RECORD_UPPER_BYTES_PER_CHUNK))
            .saturating_add(text),
    )
}

/// The bytes of a `bench` result file at most: [`RESULT_UPPER_BYTES`], and with
/// `--save-detailed` (`detailed`) each of `requests` profile requests' arrays: what the client
/// keeps of a response for `osl` tokens (its chunk entries × [`DETAILED_UPPER_BYTES_PER_CHUNK`]
/// and its text).
pub fn result_upper_bytes(detailed: bool, requests: u64, osl: u64) -> u64 {
    if !detailed {
        return RESULT_UPPER_BYTES;
    }
    let (chunks, text) = kept(osl);
    RESULT_UPPER_BYTES.saturating_add(
        requests.saturating_mul(
            DETAILED_UPPER_BYTES_PER_REQUEST
                .saturating_add(chunks.saturating_mul(DETAILED_UPPER_BYTES_PER_CHUNK))
                .saturating_add(text),
        ),
    )
}

/// What storing one result of `records` requests into the SQLite file `db` writes at most:
/// a new database's [`NEW_DB_UPPER_BYTES`], or an existing one's size plus
/// [`DB_GROWTH_UPPER_BYTES`], and [`DB_UPPER_BYTES_PER_RECORD`] per request. `None` for a
/// PostgreSQL URL.
pub fn db_upper_bytes(db: &str, records: u64) -> Option<u64> {
    if db.contains("://") {
        return None;
    }
    let base = match std::fs::metadata(db) {
        Ok(m) if m.is_file() => m.len().saturating_add(DB_GROWTH_UPPER_BYTES),
        _ => NEW_DB_UPPER_BYTES,
    };
    Some(base.saturating_add(records.saturating_mul(DB_UPPER_BYTES_PER_RECORD)))
}

/// What `ingest` of `paths` into the SQLite file `db` writes, at least and at most (as
/// estimated): at least what [`db_bytes`] says of one stored result; at most the database as
/// [`db_upper_bytes`] has it without requests, [`DB_GROWTH_UPPER_BYTES`] for each folder
/// holding files (each at most one stored unit, a point or a result file, of its own) and
/// [`DB_BYTES_PER_SERVER_METRICS_BYTE`] per byte of the files under `paths` (every file is kept
/// among a run's artifacts or stored as rows, the records compressed: at most 3 bytes a byte, as
/// `server_metrics.jsonl`'s rows). Files are counted without following symbolic links inside a
/// folder, at most 64 folders deep. `None` for a PostgreSQL URL.
pub fn ingest_planned(db: &str, paths: &[std::path::PathBuf]) -> Option<Planned> {
    let least = db_bytes(db)?;
    let base = db_upper_bytes(db, 0)?;
    let (mut bytes, mut units) = (0u64, 0u64);
    for p in paths {
        let (b, u) = tree_bytes(p, 0);
        bytes = bytes.saturating_add(b);
        units = units.saturating_add(u);
    }
    let upper = base
        .saturating_add(units.max(1).saturating_mul(DB_GROWTH_UPPER_BYTES))
        .saturating_add(bytes.saturating_mul(DB_BYTES_PER_SERVER_METRICS_BYTE));
    Some(Planned::between("--db", least, upper))
}

/// The bytes of the regular files at or under `path` and the number of places holding them (a
/// file given itself, or a folder with files directly in it); `depth` folders down already.
fn tree_bytes(path: &std::path::Path, depth: u32) -> (u64, u64) {
    let meta = match depth {
        0 => std::fs::metadata(path),
        _ => std::fs::symlink_metadata(path),
    };
    let Ok(meta) = meta else { return (0, 0) };
    if meta.is_file() {
        return (meta.len(), u64::from(depth == 0));
    }
    if !meta.is_dir() || depth >= 64 {
        return (0, 0);
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return (0, 0);
    };
    let (mut bytes, mut units, mut files_here) = (0u64, 0u64, false);
    for e in entries.flatten() {
        let p = e.path();
        match e.file_type() {
            Ok(t) if t.is_file() => {
                files_here = true;
                bytes = bytes.saturating_add(e.metadata().map_or(0, |m| m.len()));
            }
            Ok(t) if t.is_dir() => {
                let (b, u) = tree_bytes(&p, depth + 1);
                bytes = bytes.saturating_add(b);
                units = units.saturating_add(u);
            }
            _ => {}
        }
    }
    (bytes, units.saturating_add(u64::from(files_here)))
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

/// Refuses a run whose planned files may not fit under `limit` (bytes; `None`: unlimited),
/// before any request: any file's upper estimate above the limit (a file that reached the
/// limit midway lost the rest of the run's records). The file named is the one of the largest
/// upper estimate, and the advised limit is that estimate (issue 39, second round, finding 3:
/// the advice named the first file that did not fit and its lower estimate, and a run at the
/// advised value failed midway).
///
/// # Errors
/// `ulimit -f limits each file to N KiB; FLAG may hold up to M KiB (at least L KiB): nothing
/// was sent; raise it to at least M (`ulimit -f M`, in KiB as bash counts; 2M in 512-byte
/// blocks for sh) or `ulimit -f unlimited``.
pub fn check(planned: &[Planned], limit: Option<u64>) -> Result<(), String> {
    check_before(planned, limit, "nothing was sent")
}

/// [`check`] for a subcommand that sends nothing: `nothing` says what was not done (`ingest`:
/// "nothing was stored").
///
/// # Errors
/// As [`check`]'s, with `nothing` in place of "nothing was sent".
pub fn check_before(planned: &[Planned], limit: Option<u64>, nothing: &str) -> Result<(), String> {
    let Some(limit) = limit else { return Ok(()) };
    let Some(big) = planned.iter().max_by_key(|p| p.upper) else {
        return Ok(());
    };
    if big.upper <= limit {
        return Ok(());
    }
    let fits = big.upper.div_ceil(KIB);
    // A file that may hold nothing (the scrapes of a server without /metrics) has no lower
    // bound worth saying.
    let least = match big.bytes == big.upper || big.bytes == 0 {
        true => String::new(),
        false => format!(" (at least {} KiB)", big.bytes.div_ceil(KIB)),
    };
    Err(format!(
        "`ulimit -f` limits each file to {}; {} may hold up to {fits} KiB{least}: {nothing}; \
         raise the limit to at least {fits} (`ulimit -f {fits}`, in KiB as bash counts; {} in \
         sh's 512-byte blocks) or `ulimit -f unlimited`",
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
    // A database write (SQLite's own words, `StoreError::Write`): its transaction was rolled
    // back, so nothing of what it wrote is half-stored (issue 39, files, ingest and hints, 1).
    if lower.contains("sqlite: ") {
        return format!(
            "{message}: the database would grow past `ulimit -f` ({}); the write's transaction \
             was rolled back (nothing of it is stored): raise the limit, `ulimit -f unlimited`",
            size(limit)
        );
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
                "`ulimit -f` limits each file to 100 KiB; --db may hold up to 120 KiB: \
                 nothing was sent; raise the limit to at least 120 (`ulimit -f 120`, in KiB as \
                 bash counts; 240 in sh's 512-byte blocks) or `ulimit -f unlimited`"
                    .into()
            )
        );
        // The largest upper estimate decides and is advised, not the first file that does
        // not fit nor its lower estimate (issue 39, second round, finding 3).
        let planned = [
            Planned::between("--db", NEW_DB_BYTES, 300 * 1024),
            Planned::between("--save-requests", 100 * 1024, 2000 * 1024),
            Planned::new("the result file", 16 * 1024),
        ];
        assert_eq!(
            check(&planned, Some(20 * 1024)),
            Err(
                "`ulimit -f` limits each file to 20 KiB; --save-requests may hold up to 2000 \
                 KiB (at least 100 KiB): nothing was sent; raise the limit to at least 2000 \
                 (`ulimit -f 2000`, in KiB as bash counts; 4000 in sh's 512-byte blocks) or \
                 `ulimit -f unlimited`"
                    .into()
            )
        );
        assert!(check(&planned, Some(1999 * 1024)).is_err());
        assert_eq!(check(&planned, Some(2000 * 1024)), Ok(()));
        // What the client keeps for 128 tokens: 128 + 16 chunk entries, 32 × 128 + 1024 bytes
        // of text.
        assert_eq!(records_upper_bytes(2, 128), 2 * (1536 + 144 * 68 + 5120));
        assert_eq!(records_upper_bytes(2, 0), 2 * 1536);
        assert_eq!(result_upper_bytes(false, 256, 128), 64 * 1024);
        assert_eq!(
            result_upper_bytes(true, 2, 10),
            64 * 1024 + 2 * (640 + 26 * 32 + 1344)
        );
        assert_eq!(
            db_upper_bytes("/nonexistent/x.db", 10),
            Some(512 * 1024 + 5120)
        );
        assert_eq!(db_upper_bytes("postgres://u@h/d", 10), None);
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
        // A database's write: the limit and the rolled-back transaction (issue 39, files,
        // ingest and hints, 1), whichever of SQLite's words it failed with.
        for cause in ["disk I/O error", "database or disk is full"] {
            assert_eq!(
                explain_under(&format!("database error: sqlite: {cause}"), Some(102_400)),
                format!(
                    "database error: sqlite: {cause}: the database would grow past `ulimit -f` \
                     (100 KiB); the write's transaction was rolled back (nothing of it is \
                     stored): raise the limit, `ulimit -f unlimited`"
                )
            );
        }
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
