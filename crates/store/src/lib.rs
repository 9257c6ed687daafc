//! inferbench's results database: schema and migrations, idempotent ingest of run artifacts and
//! imported result files, queries for report/frontier/plot/compare, and snapshots
//! (DESIGN.md §3, §7; issue #5).
//!
//! ```no_run
//! use inferbench_store::{Store, IngestOptions};
//! let mut store = Store::open("inferbench.db")?;          // or "postgres://user:pw@host/db"
//! store.migrate()?;
//! let report = store.ingest_path("results/".as_ref(), &IngestOptions::default())?;
//! println!("{} runs ingested, {} skipped", report.runs_ingested, report.skipped.len());
//! # Ok::<(), inferbench_store::StoreError>(())
//! ```
//!
//! **Backends.** SQLite (file path; WAL journal, one transaction per run, so `kill -9` leaves the
//! last committed state) and PostgreSQL (`postgres://…`, optional `?schema=NAME` to work inside
//! one schema). Same schema, same SQL, same results: see [`db`].
//!
//! **Per-request records** are stored as one zstd-compressed JSONL blob per point (table
//! `requests`), not as rows: no query filters individual requests, a point's records are always
//! read together (recomputing E2E-normalized interactivity, per-request plots), the blob keeps the
//! artifact byte-exact, and ingest stays far under the 30 s per 1M records target on both backends
//! (rows would cost ~10 columns × 1M inserts and several times the disk).

pub mod compare;
pub mod db;
pub mod detail;
pub mod dump;
pub mod evalset;
pub mod normalize;
pub mod overview;
pub mod parse;
pub mod query;
pub mod schema;
pub mod snapshot;
pub mod synthetic;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use db::{Conn, Kind, Val};
pub use parse::{ConfigKey, EvalData, EvalSample, Overrides, PointData, RunData, SourceKind};
pub use query::{CostOptions, Filter, PointRow};

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database driver failed (connect, SQL, constraint).
    #[error("database error: {0}")]
    Db(String),
    /// `--db` is not a usable path or `postgres://` URL.
    #[error("bad database location `{0}`: {1}")]
    BadUrl(String, String),
    /// The PostgreSQL server of a well-formed URL could not be reached or refused the login.
    #[error("cannot connect to the PostgreSQL server of `{0}`: {1} (is it running, and are the host, port, user, password and database in the URL right?)")]
    Unreachable(String, String),
    /// A read-only command found no SQLite file at `--db` (trial 9: "bad database location …
    /// no such database file" read as a malformed path).
    #[error("no database at `{0}` yet: run `inferbench quickstart --db {0}`, or store results first (`inferbench ingest PATH --db {0}`, `inferbench bench … --db {0}`)")]
    NoDatabase(String),
    /// The database was written by a newer inferbench.
    #[error("database schema version {found} is newer than this binary supports ({supported}); upgrade inferbench")]
    SchemaTooNew {
        /// Version found.
        found: i64,
        /// Newest version known here.
        supported: i64,
    },
    /// A read-only command found an empty database (schema version 0, no tables at all).
    /// (Trial 22: it also advised `db migrate`, after which the same command said "no runs".)
    #[error("`{0}` holds no inferbench tables (an empty database): fill it with `inferbench quickstart --db {0}` or `inferbench ingest PATH --db {0}`")]
    EmptyDatabase(String),
    /// A database of something else: tables, none of them inferbench's (trial 22: it was
    /// called empty, and advised to be filled).
    #[error("`{0}` is not an inferbench database (it holds other tables: {1}): give --db the file inferbench writes (e.g. ./inferbench.db) or a new one")]
    ForeignDatabase(String, String),
    /// The SQLite file is not a database at all (trial 22: "database error: sqlite: file is
    /// not a database", without the file's name).
    #[error("`{0}` is not a database file: --db takes the SQLite file inferbench writes (e.g. ./inferbench.db) or a postgres:// URL")]
    NotADatabase(String),
    /// The database has not been migrated.
    #[error(
        "database `{location}`: schema version {found}, expected {expected}: run `inferbench db migrate --db {location}`"
    )]
    NotMigrated {
        /// The database, any password as `***`.
        location: String,
        /// Version found.
        found: i64,
        /// Version required.
        expected: i64,
    },
    /// File system error with the path.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// A snapshot is malformed or its checksum does not match.
    #[error("snapshot {0}: {1}")]
    Snapshot(PathBuf, String),
    /// Anything else, with context.
    #[error("{0}")]
    Other(String),
    /// The database file could not be written: SQLite's "disk I/O error" (`SQLITE_IOERR`) or
    /// "database or disk is full" (`SQLITE_FULL`), as a full disk or the file-size limit
    /// (`ulimit -f`, EFBIG) cause. The write's transaction was rolled back. Said as the driver
    /// says it (`database error: sqlite: …`); the CLI names the limit where it explains it.
    #[error("database error: {0}")]
    Write(String),
}

/// Options of an ingest.
#[derive(Debug, Clone, Default)]
pub struct IngestOptions {
    /// Identity values for imports that lack them (`hw=h200`, `framework=vllm`, `tp=8`, …);
    /// they take precedence over values in the files.
    pub overrides: Overrides,
    /// The batch (sweep) every run is stored under instead of the one the files give (a
    /// `job.json` `sweep_id`, an artifact directory's parent, else the result file's directory
    /// as [`IngestOptions::result_batch`] resolves it): `ingest --batch`.
    pub batch: Option<String>,
    /// The caller has already said which identity fields will be stored as `unknown`
    /// ([`IngestOptions::missing_identity_note`], `bench --db` before its run): the printed
    /// report leaves that line out (trial 16: said twice, on stderr and stdout).
    pub missing_noted: bool,
}

impl IngestOptions {
    /// Options whose identity overrides are `--set KEY=VALUE` flags (`ingest`, `bench --db`),
    /// both sides trimmed. Errors: an item without `=`, as the message to print.
    pub fn from_set(set: &[String]) -> Result<IngestOptions, String> {
        let mut opts = IngestOptions::default();
        for kv in set {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("--set `{kv}`: expected KEY=VALUE"))?;
            opts.overrides
                .insert(k.trim().to_string(), v.trim().to_string());
        }
        Ok(opts)
    }

    /// The identity fields (`hw`, `framework`, `precision`) no override names: a point stored
    /// with only these options has them as `unknown`.
    pub fn missing_identity(&self) -> Vec<&'static str> {
        let named = |k: &[&str]| self.overrides.keys().any(|o| k.contains(&o.as_str()));
        [
            (&["hw", "hardware"][..], "hw"),
            (&["framework"][..], "framework"),
            (&["precision"][..], "precision"),
        ]
        .iter()
        .filter(|(keys, _)| !named(keys))
        .map(|(_, k)| *k)
        .collect()
    }

    /// `bench --db`'s note when the identity is incomplete (`--db without hw, precision: stored
    /// as `unknown` (name them with --set hw=… --set precision=…)`); `None` when complete.
    pub fn missing_identity_note(&self) -> Option<String> {
        let missing = self.missing_identity();
        (!missing.is_empty()).then(|| {
            format!(
                "--db without {}: stored as `unknown` (name them with {})",
                missing.join(", "),
                missing
                    .iter()
                    .map(|k| format!("--set {k}=…"))
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        })
    }

    /// The batch of a single result file: its directory made canonical (`.` for a bare file
    /// name), as a sweep's points are batched by theirs; `None` when it cannot be resolved.
    pub fn result_batch(result: &Path) -> Option<String> {
        result
            .parent()
            .map(|d| {
                if d.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    d
                }
            })
            .and_then(|d| d.canonicalize().ok())
            .map(|d| d.display().to_string())
    }
}

/// A unit that was not ingested, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// File or directory.
    pub path: String,
    /// Cause (file:line where known).
    pub reason: String,
}

/// What an ingest did. Unknown names and skips are listed; nothing is dropped silently.
#[derive(Debug, Clone, Default)]
pub struct IngestReport {
    /// Runs written (new or updated).
    pub runs_ingested: usize,
    /// Of those, runs already present with the same content key (re-ingest).
    pub runs_reingested: usize,
    /// Batches (sweeps) the written runs belong to: `ingest` says how many, so one sweep's
    /// five point directories read as five sources of one batch, not as five runs.
    pub batches: BTreeSet<String>,
    /// The sources were an InferenceX database dump's workflow runs, not files of ours.
    pub from_dump: bool,
    /// Points written.
    pub points: usize,
    /// Of those, points stored as invalid (cut short, an invalid AgentX submission): listed by
    /// `report`, never on a frontier. Failed points are counted apart.
    pub invalid_points: usize,
    /// Of those, failed points: nothing measured (no request finished); `report
    /// --include-failed` lists them.
    pub failed_points: usize,
    /// Of the failed points, those interrupted (Ctrl-C) before any request finished, which
    /// the sweep called "interrupted" (trial 20: ingest called them only "failed").
    pub interrupted_points: usize,
    /// Of the failed points, those that measured (a completed request) and were failed by
    /// their producer or their records file (an incomplete `--save-requests` file: issue 39,
    /// fresh tester's finding 3); their `error` says why.
    pub measured_failed_points: usize,
    /// Points whose request-records file was incomplete (unreadable whole, or fewer profile
    /// records than the summary counts): failed, each with a warning (issue 39, fresh tester).
    pub incomplete_records_points: usize,
    /// The path given, as canonicalized (named when it held nothing to ingest).
    pub path: String,
    /// Eval results written (one per task and concurrency).
    pub evals: usize,
    /// Per-request records stored.
    pub requests: i64,
    /// Units not ingested (corrupt or unrecognised), with the cause.
    pub skipped: Vec<Skipped>,
    /// The unit whose write into the database failed ([`StoreError::Write`]: a full disk, the
    /// file-size limit), with the cause: its transaction was rolled back (nothing of it is
    /// stored) and the ingest stopped there (every later unit would fail alike); the units
    /// before it are stored. `None` when every write succeeded.
    pub write_failed: Option<Skipped>,
    /// Files under the given paths that are not result files (not JSON, outside artifact dirs).
    pub ignored: Vec<String>,
    /// Point directories of sweeps that did not finish, with their `status.json` state/cause.
    pub unfinished: Vec<String>,
    /// What the sweeps' own bookkeeping says (one line each): a sweep still running, or points
    /// a sweep did not start ([`sweep_states`]).
    pub sweeps: Vec<String>,
    /// Names the normalizers did not recognise: `(kind, name)`; stored as given.
    pub unknown: BTreeSet<(String, String)>,
    /// Identity values the files did not give but the store already held for the same run
    /// (`bench --db --set hw=…`, then `ingest` of its result directory without `--set`):
    /// `(kind, value)`, kept instead of being overwritten with `unknown` (trial 24).
    pub kept: BTreeSet<(String, String)>,
    /// Recognised names stored under another key: `(kind, name as given, key)`
    /// ([`parse::Names::renamed`]), said so that `report -f model=…` finds them.
    pub renamed: BTreeSet<(String, String, String)>,
    /// Non-fatal warnings.
    pub warnings: Vec<String>,
}

impl IngestReport {
    /// Whether the paths held nothing this store reads: no run, eval, skipped unit, unfinished
    /// sweep point or sweep bookkeeping worth a line (an empty or wrong directory; `inferbench
    /// ingest` exits 1 on it).
    pub fn found_nothing(&self) -> bool {
        self.runs_ingested == 0
            && self.evals == 0
            && self.skipped.is_empty()
            && self.write_failed.is_none()
            && self.unfinished.is_empty()
            && self.sweeps.is_empty()
    }

    /// Whether nothing was stored from the paths: no run and no eval result (also when they
    /// held only unfinished sweep points or skipped units; `inferbench ingest` exits 1 and
    /// prints the report on stderr: trial 17 found "ingested 0 point(s)" on stdout and exit 0
    /// for a sweep whose only point was a failed eval).
    pub fn stored_nothing(&self) -> bool {
        self.runs_ingested == 0 && self.evals == 0
    }
}

/// Whether `p` is bookkeeping that `inferbench sweep` writes beside its points: the sweep's
/// `sweep.json` report, its `sweep.lock` and the engine logs under `_engines/`.
fn sweep_bookkeeping(p: &Path) -> bool {
    sweep_file(p) || p.components().any(|c| c.as_os_str() == "_engines")
}

/// Whether `p` is a sweep's `sweep.json` or `sweep.lock`.
fn sweep_file(p: &Path) -> bool {
    use inferbench_core::artifacts::{SWEEP_LOCK, SWEEP_REPORT};
    p.file_name()
        .is_some_and(|n| n == SWEEP_REPORT || n == SWEEP_LOCK)
}

/// What the sweep bookkeeping among `files` says of the sweeps whose output directories they
/// are in: lines for [`IngestReport::sweeps`]. A sweep still running (it holds its
/// `sweep.lock`: its unfinished points are not ingested yet), or one whose `sweep.json` lists
/// points that never started (it was interrupted, or stopped at an unreachable server). Trial
/// 19: `ingest` of a running or Ctrl-C'd sweep said nothing of the points it lacked.
fn sweep_states(files: &[PathBuf]) -> Vec<String> {
    use inferbench_core::artifacts::{sweep_running, SWEEP_LOCK, SWEEP_REPORT};
    let dirs: BTreeSet<&Path> = (files.iter())
        .filter(|p| sweep_file(p))
        .filter_map(|p| p.parent())
        .collect();
    let mut lines = Vec::new();
    for dir in dirs {
        if sweep_running(dir) {
            lines.push(format!(
                "a sweep is still writing into {} (it holds {SWEEP_LOCK}): the points it has \
                 not finished are not ingested; ingest again when it ends",
                dir.display()
            ));
            continue;
        }
        let Some(report) = std::fs::read(dir.join(SWEEP_REPORT))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        else {
            continue;
        };
        let points = report["points"].as_array().map_or(&[][..], Vec::as_slice);
        let not_started = (points.iter())
            .filter(|p| p["outcome"] == "not_started")
            .count();
        if not_started > 0 {
            lines.push(format!(
                "the sweep in {} did not start {} of its {} (see its {SWEEP_REPORT}; rerun \
                 the same sweep to run them, then ingest again)",
                dir.display(),
                not_started,
                inferbench_core::count(points.len(), "point")
            ));
        }
    }
    lines
}

/// The results database.
pub struct Store {
    pub(crate) conn: Conn,
    location: String,
    /// How batches are shown to whoever filters by `batch=` ([`Store::match_batches_as_shown`]);
    /// `None`: matched against the stored name.
    pub(crate) batch_view: Option<fn(&str) -> String>,
    /// `Some(version)` when this is an in-memory migrated copy of a SQLite file at that older
    /// schema version ([`Store::open_existing`]); the file itself is untouched.
    migrated_copy_of: Option<i64>,
    /// The private copy this store reads in place of a file it could not read where it is
    /// ([`ReaderCopy`]); removed when the store is dropped (after `conn`, declared before it).
    _reader_copy: Option<ReaderCopy>,
}

/// A private copy of a SQLite database and its `-wal` in a folder of its own under the
/// temporary directory (`TMPDIR`, else `/tmp`; mode 0700), read in place of a WAL database
/// whose log holds changes that cannot be indexed where it lies (issue 39, a fresh tester's
/// finding 5: a read-only database with a pending `-wal` and no `-shm` in a read-only folder
/// was refused, exit 2). Its files are listed in `inferbench_core::tempfiles` while they exist
/// (an end without destructors removes them too); the folder is removed when this is dropped.
struct ReaderCopy {
    _dir: tempfile::TempDir,
    _listed: Vec<inferbench_core::tempfiles::Pending>,
}

/// Room a [`ReaderCopy`] needs besides the two files' bytes, bytes: the log's index (`-shm`,
/// 32 KiB a block, two blocks) and the pages a checkpoint at close may add to the copy (at most
/// the log's size again, counted by the caller).
const COPY_MARGIN_BYTES: u64 = 64 << 10;

/// Free bytes for an unprivileged user in the file system holding `dir` (`statvfs`'s
/// `f_bavail` × `f_frsize`); `None` where it cannot be read.
fn free_bytes(dir: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        // SAFETY: `c` is a NUL-terminated path and `st` a zeroed statvfs the call fills.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0;
        #[allow(clippy::unnecessary_cast)]
        ok.then(|| (st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

/// Copies the database at `path` and its `-wal` (`wal`, `wal_len` bytes) into a fresh
/// [`ReaderCopy`] and opens the copy for reading (read-write on the private copy, so that
/// SQLite can index its log, then `PRAGMA query_only`), with one notice line naming the copy.
/// The space is checked first: both files, the log again and [`COPY_MARGIN_BYTES`].
///
/// # Errors
/// [`StoreError::Db`] naming the location: not enough free space in the temporary directory
/// (the bytes needed and free, and `TMPDIR`), or a copy or open that failed.
fn open_private_copy(
    path: &Path,
    location: &str,
    wal: &Path,
    wal_len: u64,
) -> Result<(rusqlite::Connection, ReaderCopy), StoreError> {
    let fail = |what: String| {
        StoreError::Db(format!(
            "{location}: its write-ahead log ({wal_len} bytes) holds changes not yet in the main \
             file, and this process cannot index it in a folder it cannot write, so it reads a \
             private copy: {what}"
        ))
    };
    let db_len = std::fs::metadata(path)
        .map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?
        .len();
    let need = (db_len.saturating_add(wal_len.saturating_mul(2))).saturating_add(COPY_MARGIN_BYTES);
    let root = std::env::temp_dir();
    if let Some(free) = free_bytes(&root) {
        if free < need {
            return Err(fail(format!(
                "the copy needs {need} bytes in {} and {free} are free (free some, or set \
                 TMPDIR to a folder with room)",
                root.display()
            )));
        }
    }
    let dir = tempfile::Builder::new()
        .prefix("inferbench-db-")
        .tempdir_in(&root)
        .map_err(|e| fail(format!("cannot make a folder in {}: {e}", root.display())))?;
    let copy = dir.path().join("copy.db");
    let side = |s: &str| {
        let mut p = copy.clone().into_os_string();
        p.push(s);
        std::path::PathBuf::from(p)
    };
    let listed = std::iter::once(copy.clone())
        .chain(["-wal", "-shm", "-journal"].map(side))
        .map(|p| inferbench_core::tempfiles::register(&p))
        .collect();
    let held = ReaderCopy {
        _dir: dir,
        _listed: listed,
    };
    std::fs::copy(path, &copy).map_err(|e| fail(format!("copying {}: {e}", path.display())))?;
    std::fs::copy(wal, side("-wal"))
        .map_err(|e| fail(format!("copying {}: {e}", wal.display())))?;
    let flags =
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = rusqlite::Connection::open_with_flags(&copy, flags)
        .and_then(|c| c.execute_batch("PRAGMA query_only = ON").map(|()| c))
        .and_then(|c| {
            c.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|_| c)
        })
        .map_err(|e| fail(format!("reading the copy: {e}")))?;
    inferbench_core::notice::line(&format!(
        "inferbench: {location}'s write-ahead log holds {wal_len} bytes not yet in its main file \
         and its folder cannot be written here: reading a private copy ({} bytes, removed at \
         exit) as of now",
        db_len.saturating_add(wal_len)
    ));
    Ok((c, held))
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.location)
            .finish()
    }
}

/// Default database location of the CLI (`--db`).
pub const DEFAULT_DB: &str = "inferbench.db";

/// Opens the SQLite file at `path` for reading only (`SQLITE_OPEN_READ_ONLY`), on any file the
/// process can read (issue 39: `serve` and `report` failed with "attempt to write a readonly
/// database" where the database's directory was not writable: a read-only volume, another
/// user's file). A WAL database needs its `-shm` index; where that cannot be created (the
/// directory is not writable and no `-shm` is there), the file is opened `immutable=1`, which is
/// exact when no `-wal` file holds changes: the main file then is the whole database. A
/// non-empty `-wal` that cannot be indexed there is read from a private copy of the file and
/// its log ([`open_private_copy`], returned with the connection: the copy lives as long as it).
/// Errors: [`StoreError::BadUrl`] when the file cannot be opened, [`StoreError::Db`] when the
/// copy cannot be made (no room in the temporary directory, a log that cannot be read).
fn open_sqlite_reader(
    path: &Path,
    location: &str,
) -> Result<(rusqlite::Connection, Option<ReaderCopy>), StoreError> {
    use rusqlite::{ErrorCode, OpenFlags};
    if let Some(c) = open_sqlite_tidy_reader(path) {
        return Ok((c, None));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let bad = |e: rusqlite::Error| StoreError::BadUrl(location.to_string(), e.to_string());
    let c = rusqlite::Connection::open_with_flags(path, flags).map_err(bad)?;
    // The first read builds the WAL index: it fails here, not on a later query.
    let probe = c.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    });
    match probe {
        Err(e)
            if matches!(
                e.sqlite_error_code(),
                Some(ErrorCode::ReadOnly | ErrorCode::CannotOpen)
            ) =>
        {
            let mut wal = path.as_os_str().to_owned();
            wal.push("-wal");
            let wal = std::path::PathBuf::from(wal);
            let pending = std::fs::metadata(&wal).map_or(0, |m| m.len());
            drop(c);
            if pending > 0 {
                let (c, copy) = open_private_copy(path, location, &wal, pending)?;
                return Ok((c, Some(copy)));
            }
            let abs = std::path::absolute(path)
                .map_err(|e| StoreError::BadUrl(location.to_string(), e.to_string()))?;
            let uri = format!("file:{}?immutable=1", uri_path(&abs));
            rusqlite::Connection::open_with_flags(uri, flags)
                .map(|c| (c, None))
                .map_err(bad)
        }
        _ => Ok((c, None)),
    }
}

/// A reader of the SQLite file at `path` that leaves no files behind, where the process may
/// write the file and its folder (issue 39, fresh tester's finding 4: `report` left `-wal` and
/// `-shm` beside a WAL database: a read-only connection cannot remove them when it closes,
/// while SQLite removes them when the last read-write connection closes). Opened read-write
/// without `CREATE` and at once `PRAGMA query_only = ON`, so it writes nothing (the journal
/// mode is not touched). `None` where the file or its folder is not writable, or anything
/// fails: the caller opens it read-only.
fn open_sqlite_tidy_reader(path: &Path) -> Option<rusqlite::Connection> {
    use rusqlite::OpenFlags;
    std::fs::OpenOptions::new().write(true).open(path).ok()?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    inferbench_core::probe::can_create_in(dir).ok()?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let c = rusqlite::Connection::open_with_flags(path, flags).ok()?;
    c.execute_batch("PRAGMA query_only = ON").ok()?;
    // The first read builds the WAL index; a failure here is the read-only path's to name.
    c.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
        r.get::<_, i64>(0)
    })
    .ok()?;
    Some(c)
}

/// `path` percent-encoded for a SQLite `file:` URI (RFC 3986 unreserved characters and `/`
/// kept), so that `?`, `#` and `%` in a name stay part of it.
fn uri_path(path: &Path) -> String {
    #[cfg(unix)]
    let bytes = {
        use std::os::unix::ffi::OsStrExt;
        path.as_os_str().as_bytes().to_vec()
    };
    #[cfg(not(unix))]
    let bytes = path.to_string_lossy().as_bytes().to_vec();
    bytes
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// Whether `location` is a PostgreSQL URL (`postgres://…`, `postgresql://…`); every other
/// `--db` value is a SQLite file path.
pub fn is_postgres(location: &str) -> bool {
    location.starts_with("postgres://") || location.starts_with("postgresql://")
}

/// Refuses a SQLite `file:` URI as `--db` (issue 39, fresh tester's finding 1): SQLite opens
/// `file:victim.db`, `file:victim.db?mode=rw`, `file://localhost/abs/victim.db` and
/// percent-encoded names as the file they decode to, while every up-front check (the same-file
/// check, writability, the side files, the `ulimit -f` plan) read the value as a path of its
/// own, so `--save-requests victim.db` overwrote the database. `--db` takes a file path or a
/// `postgres://` URL, nothing else: a file whose name starts with `file:` is given as
/// `./file:…`. Checked by [`Store::open`], [`Store::open_for_reading`] (and so every reader)
/// and [`Store::check_target`], so every subcommand that takes `--db` refuses it before it
/// reads or writes anything.
///
/// # Errors
/// [`StoreError::BadUrl`] naming the location and what to give instead.
pub fn refuse_sqlite_uri(location: &str) -> Result<(), StoreError> {
    // SQLite reads a name as a URI exactly when it starts with `file:` (case-sensitive).
    if location.starts_with("file:") {
        return Err(StoreError::BadUrl(
            location.to_string(),
            "SQLite `file:` URIs are not taken (the file they open could not be checked \
             against this command's other files): give the database file's path (e.g. \
             ./inferbench.db; ./file:NAME for a file whose name starts with `file:`) or a \
             postgres:// URL"
                .to_string(),
        ));
    }
    Ok(())
}

impl Store {
    /// Opens a database: a `postgres://` / `postgresql://` URL (an optional `schema=NAME` query
    /// parameter creates and uses that schema), or a SQLite file path (created if missing; WAL
    /// journal, `synchronous=NORMAL`, foreign keys on, 10 s busy timeout). Does not migrate.
    /// A SQLite `file:` URI is refused ([`refuse_sqlite_uri`]: [`StoreError::BadUrl`]).
    pub fn open(location: &str) -> Result<Store, StoreError> {
        Store::open_mode(location, true)
    }

    /// [`Store::open`]; `writer: false` leaves a SQLite file's journal mode as it is (setting
    /// WAL writes the file: trial 17 found `report` on a 0-byte file left 4,096 bytes, and it
    /// would convert another program's database).
    fn open_mode(location: &str, writer: bool) -> Result<Store, StoreError> {
        refuse_sqlite_uri(location)?;
        let mut reader_copy = None;
        let conn = if is_postgres(location) {
            let (url, schema) = split_schema(location)?;
            // A URL that does not parse is a bad location; one that parses but whose server
            // does not answer or refuses the login is not (trial 16: "bad database location"
            // for a PostgreSQL that was simply not running).
            let config: postgres::Config = url.parse().map_err(|e: postgres::Error| {
                StoreError::BadUrl(redact(location), inferbench_core::error_chain(&e))
            })?;
            let mut c = config.connect(postgres::NoTls).map_err(|e| {
                StoreError::Unreachable(redact(location), inferbench_core::error_chain(&e))
            })?;
            c.batch_execute("SET client_min_messages = warning")
                .map_err(db::pg_err)?;
            if let Some(s) = schema {
                // CREATE SCHEMA IF NOT EXISTS races between sessions: serialise it (separate
                // statements, so the creation commits before the lock is released).
                c.batch_execute("SELECT pg_advisory_lock(7234001)")
                    .map_err(db::pg_err)?;
                let created = c.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{s}\""));
                let _ = c.batch_execute("SELECT pg_advisory_unlock(7234001)");
                created.map_err(db::pg_err)?;
                c.batch_execute(&format!("SET search_path TO \"{s}\""))
                    .map_err(db::pg_err)?;
            }
            Conn::Postgres(Box::new(c), std::collections::HashMap::new())
        } else {
            let path = Path::new(location);
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                if !parent.is_dir() {
                    return Err(StoreError::BadUrl(
                        location.to_string(),
                        format!("directory {} does not exist", parent.display()),
                    ));
                }
            }
            let (c, copy) = if writer {
                let c = rusqlite::Connection::open(path)
                    .map_err(|e| StoreError::BadUrl(location.to_string(), e.to_string()))?;
                (c, None)
            } else {
                open_sqlite_reader(path, location)?
            };
            reader_copy = copy;
            c.busy_timeout(std::time::Duration::from_secs(10))
                .map_err(|e| StoreError::Db(e.to_string()))?;
            let pragmas = if writer {
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;"
            } else {
                "PRAGMA foreign_keys = ON;"
            };
            // Switching a new file to WAL takes an exclusive lock for which SQLite does not
            // call the busy handler: two first writers at once saw "database is locked" (trial
            // 18). Retried for the busy timeout's 10 s.
            let started = std::time::Instant::now();
            loop {
                match c.execute_batch(pragmas) {
                    Ok(()) => break,
                    Err(rusqlite::Error::SqliteFailure(f, _))
                        if f.code == rusqlite::ErrorCode::DatabaseBusy
                            && started.elapsed() < std::time::Duration::from_secs(10) =>
                    {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                    // A file that is not SQLite is named (trial 23: "database error: file is
                    // not a database" from `ingest` and `db migrate`).
                    Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::NotADatabase) => {
                        return Err(StoreError::NotADatabase(location.to_string()))
                    }
                    Err(e) => return Err(StoreError::Db(e.to_string())),
                }
            }
            Conn::Sqlite(c)
        };
        Ok(Store {
            conn,
            location: redact(location),
            batch_view: None,
            migrated_copy_of: None,
            _reader_copy: reader_copy,
        })
    }

    /// Like [`Store::open_existing`] without the schema check (`db status` reports the version
    /// it finds): a SQLite file must already exist, and opening it writes nothing to it.
    pub fn open_for_reading(location: &str) -> Result<Store, StoreError> {
        refuse_sqlite_uri(location)?;
        let is_pg = is_postgres(location);
        if !is_pg && Path::new(location).is_dir() {
            return Err(StoreError::BadUrl(
                location.to_string(),
                "a directory, not a database file (--db takes the SQLite file, e.g. \
                 ./inferbench.db, or a postgres:// URL)"
                    .into(),
            ));
        }
        // Something there that is not a file (a device, a FIFO) is no database to create
        // (trial of issue 39, finding 8: `--db /dev/full` was told to run quickstart there).
        if !is_pg && Path::new(location).exists() && !Path::new(location).is_file() {
            return Err(StoreError::BadUrl(
                location.to_string(),
                "not a regular file (a device, FIFO or socket): --db takes a SQLite file, e.g. \
                 ./inferbench.db, or a postgres:// URL"
                    .into(),
            ));
        }
        if !is_pg && !Path::new(location).is_file() {
            return Err(StoreError::NoDatabase(location.to_string()));
        }
        Store::open_mode(location, false)
    }

    /// Like [`Store::open`], for read-only commands: a SQLite file must already exist (no empty
    /// database is created by a typo), opening it writes nothing to it, and the schema must be
    /// migrated ([`StoreError::EmptyDatabase`] for a file without inferbench's tables).
    ///
    /// A SQLite file at an older schema version is not refused (issue 39 §12: a read-only old
    /// file could not be migrated, so `report` could not read it at all): it is copied into an
    /// in-memory database with SQLite's backup API and the copy is migrated; the file is not
    /// written. [`Store::migrated_copy_note`] says so, for the caller to print. The copy holds
    /// the whole database in memory and is a snapshot (later writes to the file are not seen).
    /// An older PostgreSQL schema is still [`StoreError::NotMigrated`].
    pub fn open_existing(location: &str) -> Result<Store, StoreError> {
        let mut s = Store::open_for_reading(location)?;
        match s.require_migrated() {
            Err(StoreError::NotMigrated { found, .. }) if s.kind() == Kind::Sqlite => {
                s.into_migrated_copy(found)
            }
            r => r.map(|()| s),
        }
    }

    /// This SQLite store copied into memory (backup API) and the copy migrated; `found` is the
    /// file's schema version. Errors: the driver's, or a migration's.
    fn into_migrated_copy(self, found: i64) -> Result<Store, StoreError> {
        let Conn::Sqlite(src) = &self.conn else {
            return Err(StoreError::Db("only a SQLite file can be copied".into()));
        };
        let db = |e: rusqlite::Error| {
            StoreError::Db(format!(
                "{}: copying the schema-version-{found} file into memory to migrate the copy: {e}",
                self.location
            ))
        };
        let mut mem = rusqlite::Connection::open_in_memory().map_err(db)?;
        rusqlite::backup::Backup::new(src, &mut mem)
            .and_then(|b| b.run_to_completion(1024, std::time::Duration::ZERO, None))
            .map_err(db)?;
        mem.execute_batch("PRAGMA foreign_keys = ON;").map_err(db)?;
        let mut copy = Store {
            conn: Conn::Sqlite(mem),
            location: self.location.clone(),
            batch_view: self.batch_view,
            migrated_copy_of: Some(found),
            _reader_copy: None,
        };
        copy.migrate()?;
        Ok(copy)
    }

    /// A line for stderr when this store is an in-memory migrated copy of an older-schema
    /// SQLite file ([`Store::open_existing`]), naming the versions and how to upgrade the file
    /// itself; `None` otherwise.
    pub fn migrated_copy_note(&self) -> Option<String> {
        self.migrated_copy_of.map(|found| {
            format!(
                "inferbench: `{loc}` has schema version {found} (this binary's is {latest}): \
                 reading a migrated copy in memory, the file is not changed; `inferbench db \
                 migrate --db {loc}` upgrades it (where it is writable)",
                loc = self.location,
                latest = schema::latest_version()
            )
        })
    }

    /// Like [`Store::open_existing`], for a server that must never write: the session refuses
    /// every write (SQLite `PRAGMA query_only`, PostgreSQL `default_transaction_read_only`), so
    /// a bug in a query cannot change the database.
    pub fn open_read_only(location: &str) -> Result<Store, StoreError> {
        let mut s = Store::open_existing(location)?;
        match s.conn.kind() {
            Kind::Sqlite => s.conn.batch("PRAGMA query_only = ON")?,
            Kind::Postgres => s.conn.batch("SET default_transaction_read_only = on")?,
        }
        Ok(s)
    }

    /// Which backend this is.
    pub fn kind(&self) -> Kind {
        self.conn.kind()
    }

    /// The location, with any password replaced by `***`.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Applies pending migrations; returns the versions applied (empty when up to date).
    /// Errors: [`StoreError::ForeignDatabase`] for a SQLite file holding another program's
    /// tables and none of ours (trial 23: `ingest` added our tables to it; a PostgreSQL
    /// database may hold other schemas' tables and is migrated), the driver's.
    pub fn migrate(&mut self) -> Result<Vec<i64>, StoreError> {
        self.refuse_foreign()?;
        schema::migrate(&mut self.conn)
    }

    /// [`StoreError::ForeignDatabase`] for a SQLite file without our tables that holds others.
    fn refuse_foreign(&mut self) -> Result<(), StoreError> {
        if self.kind() == Kind::Sqlite && self.schema_version()? == 0 {
            if let Some(e) = self.foreign()? {
                return Err(e);
            }
        }
        Ok(())
    }

    /// For a database at schema version 0: [`StoreError::ForeignDatabase`] naming its tables
    /// when it holds some and not ours, else `None` (empty, or our `schema_migrations` alone:
    /// another writer is migrating this new file right now).
    fn foreign(&mut self) -> Result<Option<StoreError>, StoreError> {
        let tables = schema::table_names(&mut self.conn)?;
        let ours = tables.iter().any(|t| t == "schema_migrations");
        Ok((!tables.is_empty() && !ours)
            .then(|| StoreError::ForeignDatabase(self.location.clone(), tables.join(", "))))
    }

    /// Whether results could be stored at `location` later, checked before a long run writes
    /// them (trial 23: `bench --db` of a text file failed after the whole benchmark): a
    /// missing SQLite file is fine (it will be created), an existing one must be a database
    /// and not another program's, a PostgreSQL URL must connect. Nothing is written. Errors:
    /// as [`Store::open_for_reading`], [`Store::schema_version`] and
    /// [`StoreError::ForeignDatabase`].
    ///
    /// A missing SQLite file's directory must exist and take a new file (probed by creating
    /// and removing `.inferbench-write-probe-<pid>` there), and an existing file must open for
    /// writing (issue 39 §8: such paths failed only after the run), and SQLite must be able to
    /// create its side files there ([`side_files_writable`]: a writable file in a read-only
    /// folder failed with "attempt to write a readonly database" after the run):
    /// [`StoreError::BadUrl`] naming the path and the OS error otherwise.
    pub fn check_target(location: &str) -> Result<(), StoreError> {
        refuse_sqlite_uri(location)?;
        let is_pg = is_postgres(location);
        let bad = |why: String| StoreError::BadUrl(location.to_string(), why);
        // A dangling symbolic link is created at its final target (SQLite follows the link):
        // that target's folder is the one checked (issue 39, second round, finding 2).
        let target = match is_pg {
            true => PathBuf::from(location),
            false => link_chain_end(Path::new(location)).map_err(bad)?,
        };
        let path = target.as_path();
        // An existing target that is no regular file (a FIFO, a device, `/dev/stdout`) or a
        // file of the kernel's /proc or /sys holds no database (issue 39, second round,
        // finding 5: `--db /dev/stdout` passed and failed after the run).
        if !is_pg {
            if let Some(k) = inferbench_core::probe::kernel_file(Path::new(location)) {
                return Err(bad(format!(
                    "it is a file of the kernel's {k} filesystem, which holds no database"
                )));
            }
            if let Ok(m) = std::fs::metadata(path) {
                if !m.is_file() {
                    return Err(bad("it is not a regular file".to_string()));
                }
            }
        }
        if !is_pg && !path.exists() {
            let dir = path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            if dir.exists() && !dir.is_dir() {
                return Err(bad(format!("{} is not a directory", dir.display())));
            }
            if !dir.is_dir() {
                let via = match path == Path::new(location) {
                    true => String::new(),
                    false => " (the folder of the file the symbolic link leads to)".to_string(),
                };
                return Err(bad(format!(
                    "directory {} does not exist{via}",
                    dir.display()
                )));
            }
            return match inferbench_core::probe::can_create_in(dir) {
                Ok(()) => Ok(()),
                Err(e) => Err(bad(format!(
                    "cannot create the database in {}: {e}",
                    dir.display()
                ))),
            };
        }
        if !is_pg && path.is_file() {
            std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| bad(format!("cannot write the database file: {e}")))?;
            // Beside the file a symbolic link leads to, where SQLite keeps them.
            side_files_writable(&path.display().to_string()).map_err(bad)?;
        }
        let mut s = Store::open_for_reading(location)?;
        s.refuse_foreign()
    }

    /// Schema version of the database (0 when empty). Errors: [`StoreError::NotADatabase`]
    /// naming a file that is not SQLite, the driver's.
    pub fn schema_version(&mut self) -> Result<i64, StoreError> {
        schema::current_version(&mut self.conn).map_err(|e| match e {
            StoreError::NotADatabase(_) => StoreError::NotADatabase(self.location.clone()),
            e => e,
        })
    }

    /// Errors unless the schema is at this binary's version.
    pub fn require_migrated(&mut self) -> Result<(), StoreError> {
        let v = self.schema_version()?;
        if v != schema::latest_version() {
            if v > schema::latest_version() {
                return Err(StoreError::SchemaTooNew {
                    found: v,
                    supported: schema::latest_version(),
                });
            }
            if v == 0 {
                return Err(self
                    .foreign()?
                    .unwrap_or_else(|| StoreError::EmptyDatabase(self.location.clone())));
            }
            return Err(StoreError::NotMigrated {
                location: self.location.clone(),
                found: v,
                expected: schema::latest_version(),
            });
        }
        Ok(())
    }

    /// Ingests everything under `path`: an artifact directory (one run), a directory tree of
    /// them and of result files, or one result file. Each run is written in its own
    /// transaction; a unit that cannot be read or written is skipped and reported while the
    /// others ingest. Re-ingesting the same content updates rows in place (same ids), so the
    /// database — and its dump — is unchanged. Errors only when `path` does not exist or the
    /// schema is not migrated.
    pub fn ingest_path(
        &mut self,
        path: &Path,
        opts: &IngestOptions,
    ) -> Result<IngestReport, StoreError> {
        self.require_migrated()?;
        let path = &path
            .canonicalize()
            .map_err(|e| StoreError::Io(path.to_path_buf(), e))?;
        let mut units = Vec::new();
        let mut ignored = Vec::new();
        parse::discover(path, &mut units, &mut ignored)
            .map_err(|e| StoreError::Io(path.to_path_buf(), e))?;
        // Files our own sweeps write beside the points are not results: not worth a line, but
        // they say whether a sweep is running or left points unstarted.
        let mut bookkeeping: Vec<PathBuf> = ignored.clone();
        bookkeeping.extend(units.iter().filter_map(|u| match u {
            parse::Unit::File(f) => Some(f.clone()),
            _ => None,
        }));
        let sweeps = if path.is_dir() {
            sweep_states(&bookkeeping)
        } else {
            Vec::new()
        };
        ignored.retain(|p| !sweep_bookkeeping(p));
        units.retain(
            |u| !matches!(u, parse::Unit::File(f) if sweep_bookkeeping(f) && !path.is_file()),
        );
        let mut report = IngestReport {
            ignored: ignored.iter().map(|p| p.display().to_string()).collect(),
            path: path.display().to_string(),
            sweeps,
            ..Default::default()
        };
        let explicit_file = path.is_file();
        // Records files the results read: not "ignored" (fresh tester of issue 39 §5, item 7:
        // `req.jsonl` was counted as the result's records and listed as ignored).
        let mut used: std::collections::BTreeSet<PathBuf> = std::collections::BTreeSet::new();
        for u in units {
            // A database that could not be written stops the ingest: every later unit would
            // fail alike.
            if report.write_failed.is_some() {
                break;
            }
            let (p, parsed) = match &u {
                parse::Unit::Dir(d) => (d.clone(), parse::parse_dir(d, &opts.overrides)),
                parse::Unit::File(f) => (f.clone(), parse::parse_file(f, &opts.overrides)),
                parse::Unit::Eval(d) => (d.clone(), evalset::parse_eval_dir(d, &opts.overrides)),
                parse::Unit::Unfinished(d) => {
                    report.unfinished.push(unfinished_reason(d));
                    continue;
                }
            };
            match parsed {
                Ok(mut run) => {
                    used.extend(
                        (run.points.iter())
                            .filter_map(|p| p.requests.as_ref()?.file.as_ref())
                            .map(|f| f.canonicalize().unwrap_or_else(|_| f.clone())),
                    );
                    if let Some(b) = &opts.batch {
                        run.batch = b.clone();
                    }
                    add_set_settings(&mut run, opts);
                    self.ingest_run_into(&run, &mut report)
                }
                Err(reason) if !explicit_file && reason.ends_with(parse::NOT_A_RESULT) => {
                    report
                        .ignored
                        .push(format!("{} (not a result file)", p.display()));
                }
                Err(reason) => report.skipped.push(Skipped {
                    path: p.display().to_string(),
                    reason,
                }),
            }
        }
        let used: Vec<String> = used.iter().map(|p| p.display().to_string()).collect();
        report.ignored.retain(|i| {
            let p = i.strip_suffix(" (not a result file)").unwrap_or(i);
            !used.iter().any(|u| u == p)
        });
        if self.kind() == Kind::Sqlite && report.runs_ingested > 0 {
            // Refresh planner statistics where useful (cheap; SQLite's recommended practice).
            let _ = self.conn.batch("PRAGMA optimize");
        }
        Ok(report)
    }

    /// Imports InferenceX's public database dump, `dir` being its JSON form (a directory of
    /// `<table>.json` files, [`dump::read_json_dump`]) or its pg_dump file (`*.dump[.zst]`,
    /// [`dump::read_pg_dump`]): one run per GitHub workflow run (its
    /// latest attempt), each written in its own transaction, so an interrupted import leaves
    /// whole runs and a repeated one changes nothing (`runs_reingested`).
    ///
    /// Errors: the directory is not a readable dump (a table missing or not JSON), or the
    /// database is not migrated; a run that fails to write is reported in `skipped`.
    pub fn ingest_inferencex_dump(
        &mut self,
        dir: &Path,
        opts: &IngestOptions,
    ) -> Result<IngestReport, StoreError> {
        self.require_migrated()?;
        let runs = if dump::is_pg_dump(dir) {
            dump::read_pg_dump(dir, &opts.overrides)
        } else {
            dump::read_json_dump(dir, &opts.overrides)
        }
        .map_err(StoreError::Other)?;
        let mut report = IngestReport {
            from_dump: true,
            ..Default::default()
        };
        for mut run in runs {
            if report.write_failed.is_some() {
                break;
            }
            add_set_settings(&mut run, opts);
            self.ingest_run_into(&run, &mut report);
        }
        Ok(report)
    }

    /// Writes one parsed run in one transaction (used by [`Store::ingest_path`]; public so
    /// callers holding parsed data, e.g. tests and benchmarks, can write it directly).
    pub fn ingest_run(&mut self, run: &RunData) -> Result<IngestReport, StoreError> {
        self.require_migrated()?;
        let mut report = IngestReport::default();
        self.ingest_run_into(run, &mut report);
        if let Some(s) = report.write_failed.take() {
            let cause = s
                .reason
                .strip_prefix("database error: ")
                .unwrap_or(&s.reason);
            return Err(StoreError::Write(cause.to_string()));
        }
        match report.skipped.pop() {
            Some(s) => Err(StoreError::Db(s.reason)),
            None => Ok(report),
        }
    }

    fn ingest_run_into(&mut self, run: &RunData, report: &mut IngestReport) {
        let begin = match self.kind() {
            Kind::Sqlite => "BEGIN IMMEDIATE",
            Kind::Postgres => "BEGIN",
        };
        let res = self.conn.batch(begin).and_then(|()| {
            let r = write_run(&mut self.conn, run);
            match r {
                Ok(v) => self.conn.batch("COMMIT").map(|()| v),
                Err(e) => {
                    let _ = self.conn.batch("ROLLBACK");
                    Err(e)
                }
            }
        });
        match res {
            Ok((existed, n_req, re)) => {
                report.runs_ingested += 1;
                report.runs_reingested += usize::from(existed);
                report.batches.insert(run.batch.clone());
                report.points += run.points.len();
                let failed = |p: &&parse::PointData| p.error.is_some();
                report.failed_points += run.points.iter().filter(failed).count();
                report.measured_failed_points += (run.points.iter())
                    .filter(|p| failed(p) && p.metrics.get("completed").is_some_and(|c| *c > 0.0))
                    .count();
                report.incomplete_records_points +=
                    run.points.iter().filter(|p| p.records_incomplete).count();
                report.interrupted_points += (run.points.iter())
                    .filter(|p| {
                        (p.error.as_deref())
                            .is_some_and(|e| e.starts_with("interrupted before any"))
                    })
                    .count();
                report.invalid_points += (run.points.iter())
                    .filter(|p| !p.valid && !failed(p))
                    .count();
                report.evals += run.evals.len();
                report.requests += n_req;
                // A value kept from the store is not missing.
                report.unknown.extend(
                    (run.names.unknown.iter())
                        .filter(|(k, name)| {
                            !(name == "unknown" && re.kept.iter().any(|(kk, _)| kk == k))
                        })
                        .cloned(),
                );
                report.kept.extend(re.kept);
                if !re.changed.is_empty() {
                    report.warnings.push(format!(
                        "{}: stored before, now relabelled ({}); a run is its result file: \
                         copy the file to keep both",
                        run.source_path,
                        re.changed.iter().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
                report.renamed.extend(run.names.renamed.iter().cloned());
                report.warnings.extend(run.warnings.iter().cloned());
            }
            Err(e @ StoreError::Write(_)) => {
                report.write_failed = Some(Skipped {
                    path: run.source_path.clone(),
                    reason: e.to_string(),
                })
            }
            Err(e) => report.skipped.push(Skipped {
                path: run.source_path.clone(),
                reason: e.to_string(),
            }),
        }
    }

    /// How many runs are stored (0 in a migrated database nothing was ingested into yet).
    pub fn run_count(&mut self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query("SELECT COUNT(*) FROM runs", &[])?
            .first()
            .and_then(|r| r[0].as_i64())
            .unwrap_or(0))
    }

    /// Row counts of every table in [`schema::TABLES`] order (for checks and `db` output).
    /// A table the database's schema version does not have yet (an older database that was
    /// never migrated: v4 has no `eval_samples`) is left out, never an error (issue 39, fresh
    /// tester: `db status` failed with "no such table" where `report` worked).
    ///
    /// # Errors
    /// [`StoreError`] when the database cannot be read.
    pub fn table_counts(&mut self) -> Result<Vec<(String, i64)>, StoreError> {
        let present = schema::table_names(&mut self.conn)?;
        let mut v = Vec::new();
        for t in schema::TABLES
            .iter()
            .filter(|t| present.iter().any(|p| p == *t))
        {
            let n = self
                .conn
                .query(&format!("SELECT COUNT(*) FROM {t}"), &[])?
                .first()
                .and_then(|r| r[0].as_i64())
                .unwrap_or(0);
            v.push((t.to_string(), n));
        }
        Ok(v)
    }

    /// Runs SQLite's `PRAGMA integrity_check` (`ok` when sound); PostgreSQL answers `ok`.
    pub fn integrity_check(&mut self) -> Result<String, StoreError> {
        match self.kind() {
            Kind::Sqlite => Ok(self
                .conn
                .query("PRAGMA integrity_check", &[])?
                .first()
                .and_then(|r| r[0].as_str().map(String::from))
                .unwrap_or_default()),
            Kind::Postgres => Ok("ok".into()),
        }
    }

    /// Unknown names recorded so far: `(kind, name, source path of the run where first seen)`,
    /// sorted.
    pub fn unknown_names(&mut self) -> Result<Vec<(String, String, String)>, StoreError> {
        let rows = self.conn.query(
            "SELECT u.kind, u.name, COALESCE(r.source_path, u.first_run_key)
             FROM unknown_names u LEFT JOIN runs r ON r.run_key = u.first_run_key",
            &[],
        )?;
        let mut v: Vec<(String, String, String)> = rows
            .into_iter()
            .map(|r| {
                let s = |i: usize| r[i].as_str().unwrap_or("").to_string();
                (s(0), s(1), s(2))
            })
            .collect();
        v.sort();
        Ok(v)
    }

    /// Records a changelog entry (idempotent on `(base_ref, head_ref, config_key, description)`).
    pub fn add_changelog_entry(
        &mut self,
        date: &str,
        base_ref: &str,
        head_ref: &str,
        config_key: &str,
        description: &str,
        pr_link: &str,
    ) -> Result<(), StoreError> {
        self.conn.exec(
            "INSERT INTO changelog_entries (date, base_ref, head_ref, config_key, description, pr_link)
             VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            &[date.into(), base_ref.into(), head_ref.into(), config_key.into(), description.into(), pr_link.into()],
        )?;
        Ok(())
    }
}

/// `<dir> (state STATE, CLASS: CAUSE)` from a point's `status.json`; `(still running, or
/// stopped before writing its status.json)` without one; `(state ok, but its summary.json is
/// missing)` for a point marked done whose result is gone (trial 18: `(state ok, ?: ?)`).
fn unfinished_reason(dir: &Path) -> String {
    let Some(st) = std::fs::read(dir.join("status.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
    else {
        return format!(
            "{} (still running, or stopped before writing its status.json)",
            dir.display()
        );
    };
    let f = |k: &str| st.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let state = f("state").unwrap_or_else(|| "unknown".into());
    let why = match (f("class"), f("cause")) {
        (Some(class), Some(cause)) => format!(", {class}: {cause}"),
        (Some(class), None) => format!(", {class}"),
        (None, _) if state == "ok" => ", but its summary.json is missing".into(),
        (None, _) => String::new(),
    };
    format!("{} (state {state}{why})", dir.display())
}

/// Splits `schema=NAME` off a PostgreSQL URL's query string (validated: `[a-z0-9_]+`).
fn split_schema(url: &str) -> Result<(String, Option<String>), StoreError> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), None));
    };
    let mut keep = Vec::new();
    let mut schema = None;
    for kv in query.split('&') {
        match kv.split_once('=') {
            Some(("schema", v)) => {
                if v.is_empty()
                    || !v
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
                {
                    return Err(StoreError::BadUrl(
                        redact(url),
                        format!("schema `{v}` must match [a-z0-9_]+"),
                    ));
                }
                schema = Some(v.to_string());
            }
            _ => keep.push(kv),
        }
    }
    let url = if keep.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", keep.join("&"))
    };
    Ok((url, schema))
}

/// Replaces the password of a database URL with `***` (for messages: `postgres://u:***@h/d`);
/// anything else is returned as it is.
pub fn redact(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        if let Some((cred, host)) = rest.split_once('@') {
            if let Some((user, _)) = cred.split_once(':') {
                return format!("{scheme}://{user}:***@{host}");
            }
        }
    }
    url.to_string()
}

fn metrics_json(m: &BTreeMap<String, f64>) -> String {
    let obj: serde_json::Map<String, serde_json::Value> = m
        .iter()
        .filter(|(_, v)| v.is_finite())
        .map(|(k, v)| (k.clone(), serde_json::Value::from(*v)))
        .collect();
    serde_json::Value::Object(obj).to_string()
}

/// Returns the id of the config, inserting it when new.
fn config_id(conn: &mut Conn, c: &ConfigKey) -> Result<i64, StoreError> {
    let vals = c.key_values();
    let cond: Vec<String> = schema::CONFIG_KEY
        .iter()
        .map(|k| format!("{k} = ?"))
        .collect();
    let select = format!("SELECT id FROM configs WHERE {}", cond.join(" AND "));
    if let Some(id) = conn
        .query(&select, &vals)?
        .first()
        .and_then(|r| r[0].as_i64())
    {
        return Ok(id);
    }
    let mut ins = vals.clone();
    ins.push(c.gpus().into());
    let cols = schema::CONFIG_KEY.join(", ");
    let qs = vec!["?"; schema::CONFIG_KEY.len() + 1].join(", ");
    conn.exec(
        &format!("INSERT INTO configs ({cols}, gpus) VALUES ({qs}) ON CONFLICT DO NOTHING"),
        &ins,
    )?;
    conn.query(&select, &vals)?
        .first()
        .and_then(|r| r[0].as_i64())
        .ok_or_else(|| StoreError::Db("config insert returned no id".into()))
}

/// Adds the `--set` keys that name no identity field to every point's server settings and
/// recomputes its fingerprint (issue 39 §5; [`parse::set_settings`]), whatever the format:
/// ours, vLLM's, InferenceX's, AIPerf's, a dump.
fn add_set_settings(run: &mut RunData, opts: &IngestOptions) {
    let set = parse::set_settings(&opts.overrides);
    if set.is_empty() {
        return;
    }
    for pt in &mut run.points {
        pt.server =
            inferbench_core::fingerprint::ServerFingerprint::merged(pt.server.as_ref(), &set);
    }
}

/// What ingesting a stored run again kept from the store and what it changed there.
#[derive(Default)]
struct Reingest {
    /// Identity values the files did not give, kept: `(kind, value)` ([`IngestReport::kept`]).
    kept: BTreeSet<(String, String)>,
    /// Stored values replaced by other ones (`hw h100 → h200`, `batch a → b`).
    changed: BTreeSet<String>,
}

/// Writes one run inside an open transaction: its `runs` row, artifacts, points (with their
/// requests, power samples and server metrics), evals and unknown names, replacing what an
/// earlier ingest of the same run key wrote. Returns (run existed before, request records,
/// what a re-ingest kept and changed: [`keep_stored_identity`]).
fn write_run(conn: &mut Conn, run: &RunData) -> Result<(bool, i64, Reingest), StoreError> {
    let (run_id, old_batch) = upsert_run(conn, run)?;
    let existed = old_batch.is_some();
    let mut re = Reingest::default();
    if let Some(old) = old_batch.filter(|b| *b != run.batch) {
        re.changed.insert(format!(
            "batch {} → {}",
            inferbench_core::text::batch_label(&old),
            inferbench_core::text::batch_label(&run.batch)
        ));
    }
    replace_artifacts(conn, run_id, &run.artifacts)?;
    let mut config_ids: BTreeMap<ConfigKey, i64> = BTreeMap::new();
    let mut keep_points = Vec::new();
    let mut n_req = 0;
    for pt in &run.points {
        let config = if existed {
            keep_stored_identity(conn, run_id, pt, &mut re)?
        } else {
            None
        };
        let config = config.as_ref().unwrap_or(&pt.config);
        let cid = match config_ids.get(config) {
            Some(id) => *id,
            None => {
                let id = config_id(conn, config)?;
                config_ids.insert(config.clone(), id);
                id
            }
        };
        let (pid, n) = write_point(conn, run_id, cid, pt, !existed)?;
        keep_points.push(pid);
        n_req += n;
    }
    // Points of this run no longer produced (e.g. after a normalizer change) are removed.
    let old: Vec<i64> = conn
        .query("SELECT id FROM points WHERE run_id = ?", &[run_id.into()])?
        .iter()
        .filter_map(|r| r[0].as_i64())
        .filter(|id| !keep_points.contains(id))
        .collect();
    for id in old {
        conn.exec("DELETE FROM points WHERE id = ?", &[id.into()])?;
    }
    write_evals(conn, run_id, &run.evals)?;
    for (kind, name) in &run.names.unknown {
        conn.exec(
            "INSERT INTO unknown_names (kind, name, first_run_key) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            &[kind.clone().into(), name.clone().into(), run.run_key.clone().into()],
        )?;
    }
    Ok((existed, n_req, re))
}

/// The identity fields a re-ingested run's files do not give (`unknown`: hardware, framework,
/// precision), taken from the point the store holds for the same run and concurrency, so that a
/// `bench --db --set hw=…` result ingested again without `--set` keeps its identity (trial 24:
/// it became `unknown`). Returns the point's config with them filled in (`None` when nothing
/// was filled) and adds `(kind, value)` to `kept` for each.
fn keep_stored_identity(
    conn: &mut Conn,
    run_id: i64,
    pt: &PointData,
    re: &mut Reingest,
) -> Result<Option<ConfigKey>, StoreError> {
    const UNKNOWN: &str = "unknown";
    let c = &pt.config;
    let rows = conn.query(
        "SELECT c.hardware, c.framework, c.precision FROM points p \
         JOIN configs c ON c.id = p.config_id WHERE p.run_id = ? AND p.conc = ?",
        &[run_id.into(), pt.conc.into()],
    )?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let mut out = c.clone();
    let mut changed = false;
    for (i, (kind, field)) in [
        ("hardware", &mut out.hardware),
        ("framework", &mut out.framework),
        ("precision", &mut out.precision),
    ]
    .into_iter()
    .enumerate()
    {
        let stored = row[i].as_str().unwrap_or(UNKNOWN);
        if field == UNKNOWN && stored != UNKNOWN {
            *field = stored.to_string();
            re.kept.insert((kind.to_string(), stored.to_string()));
            changed = true;
        } else if field != stored {
            // A relabelled run (`ingest --set hw=…` again): said, not done silently (trial 26).
            let key = if kind == "hardware" { "hw" } else { kind };
            re.changed.insert(format!("{key} {stored} → {field}"));
        }
    }
    Ok(changed.then_some(out))
}

/// The `runs` row of `run`, updated in place when its run key is stored already (or, for a
/// point directory, a run read from the same directory of the same batch), else inserted.
/// Returns (its id, the batch it was stored under when it existed).
fn upsert_run(conn: &mut Conn, run: &RunData) -> Result<(i64, Option<String>), StoreError> {
    let id_and_batch = |rows: Vec<Vec<Val>>| {
        let r = rows.first()?;
        Some((r[0].as_i64()?, r[1].as_str().unwrap_or("").to_string()))
    };
    let mut existing = id_and_batch(conn.query(
        "SELECT id, batch FROM runs WHERE run_key = ?",
        &[run.run_key.clone().into()],
    )?);
    // A point directory holds one point: what it holds now replaces what an earlier ingest read
    // from it (trial 24: a sweep resumed after Ctrl-C redid an interrupted point in its
    // directory, and ingesting again kept the interrupted one beside the new one).
    if existing.is_none() && run.kind == SourceKind::Artifacts {
        existing = id_and_batch(conn.query(
            "SELECT id, batch FROM runs WHERE source_kind = ? AND source_path = ? AND batch = ?",
            &[
                run.kind.as_str().into(),
                run.source_path.clone().into(),
                run.batch.clone().into(),
            ],
        )?);
    }
    let fields: Vec<Val> = vec![
        run.kind.as_str().into(),
        run.source_path.clone().into(),
        run.batch.clone().into(),
        run.date.clone().into(),
        Val::from(run.start_unix),
        Val::from(run.end_unix),
        run.inferbench_version.clone().into(),
        run.git_sha.clone().into(),
        run.engine_version.clone().into(),
        run.host.clone().into(),
        run.result_filename.clone().into(),
        run.job.clone().into(),
    ];
    let run_id = match &existing {
        Some((id, _)) => {
            let id = *id;
            let mut p = fields.clone();
            p.push(id.into());
            p.insert(0, run.run_key.clone().into());
            conn.exec(
                "UPDATE runs SET run_key = ?, source_kind = ?, source_path = ?, batch = ?, date = ?, start_unix = ?,
                 end_unix = ?, inferbench_version = ?, git_sha = ?, engine_version = ?, host = ?,
                 result_filename = ?, job = ?
                 WHERE id = ?",
                &p,
            )?;
            id
        }
        None => {
            let mut p = vec![run.run_key.clone().into()];
            p.extend(fields);
            conn.exec(
                "INSERT INTO runs (run_key, source_kind, source_path, batch, date, start_unix, end_unix,
                 inferbench_version, git_sha, engine_version, host, result_filename, job)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                &p,
            )?;
            conn.query(
                "SELECT id FROM runs WHERE run_key = ?",
                &[run.run_key.clone().into()],
            )?
            .first()
            .and_then(|r| r[0].as_i64())
            .ok_or_else(|| StoreError::Db("run insert returned no id".into()))?
        }
    };
    Ok((run_id, existing.map(|(_, batch)| batch)))
}

/// Replaces run `run_id`'s artifacts by `artifacts` (name → bytes), each stored zstd-compressed
/// (level 3) with its size (bytes) and SHA-256.
fn replace_artifacts(
    conn: &mut Conn,
    run_id: i64,
    artifacts: &[(String, Vec<u8>)],
) -> Result<(), StoreError> {
    conn.exec("DELETE FROM artifacts WHERE run_id = ?", &[run_id.into()])?;
    for (name, bytes) in artifacts {
        let z = zstd::encode_all(&bytes[..], 3)
            .map_err(|e| StoreError::Other(format!("{name}: zstd: {e}")))?;
        conn.exec(
            "INSERT INTO artifacts (run_id, name, size, sha256, content_zst) VALUES (?, ?, ?, ?, ?)",
            &[run_id.into(), name.clone().into(), (bytes.len() as i64).into(), parse::sha256_hex(bytes).into(), z.into()],
        )?;
    }
    Ok(())
}

/// The `points` columns a point writes (besides run, config and conc) and its values for
/// them: date, request and token counts (`failed` from the file, else prompts − completed),
/// the hot metrics of [`schema::POINT_METRICS`], error, every metric as JSON, validity.
fn point_values(pt: &PointData) -> (Vec<&'static str>, Vec<Val>) {
    let m = &pt.metrics;
    let g = |k: &str| Val::from(m.get(k).copied());
    let gi = |k: &str| Val::from(m.get(k).map(|v| v.round() as i64));
    let mut vals: Vec<Val> = vec![
        pt.date.clone().into(),
        gi("num_prompts"),
        gi("completed"),
        match (m.get("num_prompts"), m.get("completed"), m.get("failed")) {
            (_, _, Some(f)) => Val::Int(f.round() as i64),
            (Some(n), Some(c), None) => Val::Int((n - c).round() as i64),
            _ => Val::Null,
        },
        gi("total_input_tokens"),
        gi("total_output_tokens"),
    ];
    vals.extend(schema::POINT_METRICS.iter().map(|k| g(k)));
    vals.push(pt.error.clone().into());
    vals.push(metrics_json(m).into());
    vals.push(Val::Int(i64::from(pt.valid)));
    vals.push(pt.invalid_reason.clone().into());
    let server = pt.server.as_ref();
    vals.push(server.map_or(String::new(), |s| s.id.clone()).into());
    vals.push(
        server
            .map_or(String::new(), |s| {
                serde_json::to_string(&s.settings).unwrap_or_default()
            })
            .into(),
    );
    vals.push(Val::from(pt.gpu_seconds));
    vals.push(Val::Int(i64::from(pt.adaptive)));
    vals.push(Val::from(pt.prompts_used));
    let cols_upd = [
        "date",
        "num_prompts",
        "completed",
        "failed",
        "total_input_tokens",
        "total_output_tokens",
    ]
    .iter()
    .chain(schema::POINT_METRICS.iter())
    .chain(
        [
            "error",
            "metrics",
            "valid",
            "invalid_reason",
            "server_fingerprint",
            "server_settings",
            "gpu_seconds",
            "adaptive",
            "prompts_used",
        ]
        .iter(),
    )
    .copied()
    .collect::<Vec<_>>();
    (cols_upd, vals)
}

/// Writes point `pt` of run `run_id` under config `cid`: its `points` row (updated in place
/// when the run had it; `fresh`: a new run, which has none), then its requests, power samples
/// and server metrics, replacing the earlier ones. Returns (its id, request records).
fn write_point(
    conn: &mut Conn,
    run_id: i64,
    cid: i64,
    pt: &PointData,
    fresh: bool,
) -> Result<(i64, i64), StoreError> {
    let (cols_upd, vals) = point_values(pt);
    // A new run has no points yet: skip the lookups (one statement per point).
    let existing_pt = if fresh {
        None
    } else {
        conn.query(
            "SELECT id FROM points WHERE run_id = ? AND config_id = ? AND conc = ?",
            &[run_id.into(), cid.into(), pt.conc.into()],
        )?
        .first()
        .and_then(|r| r[0].as_i64())
    };
    let pid = match existing_pt {
        Some(pid) => {
            let set: Vec<String> = cols_upd.iter().map(|c| format!("{c} = ?")).collect();
            let mut p = vals.clone();
            p.push(pid.into());
            conn.exec(
                &format!("UPDATE points SET {} WHERE id = ?", set.join(", ")),
                &p,
            )?;
            pid
        }
        None => {
            let mut p: Vec<Val> = vec![run_id.into(), cid.into(), pt.conc.into()];
            p.extend(vals);
            let qs = vec!["?"; cols_upd.len() + 3].join(", ");
            conn.query(
                &format!(
                    "INSERT INTO points (run_id, config_id, conc, {}) VALUES ({qs}) RETURNING id",
                    cols_upd.join(", ")
                ),
                &p,
            )?
            .first()
            .and_then(|r| r[0].as_i64())
            .ok_or_else(|| StoreError::Db("point insert returned no id".into()))?
        }
    };
    if !fresh {
        for t in ["requests", "power_samples", "server_metrics"] {
            conn.exec(
                &format!("DELETE FROM {t} WHERE point_id = ?"),
                &[pid.into()],
            )?;
        }
    }
    let mut n_req = 0;
    if let Some(r) = &pt.requests {
        conn.insert_requests(pid, r)?;
        n_req = r.n_records;
    }
    for (gpu, t, w) in &pt.power {
        conn.exec(
            "INSERT INTO power_samples (point_id, gpu, t_unix, power_w) VALUES (?, ?, ?, ?)",
            &[pid.into(), gpu.clone().into(), Val::Real(*t), Val::Real(*w)],
        )?;
    }
    for (name, labels, t, v) in &pt.server_metrics {
        conn.exec(
                "INSERT INTO server_metrics (point_id, name, labels, t_unix, value) VALUES (?, ?, ?, ?, ?)",
                &[pid.into(), name.clone().into(), labels.clone().into(), Val::Real(*t), Val::Real(*v)],
            )?;
    }
    Ok((pid, n_req))
}

/// Replaces run `run_id`'s evals by `evals`; a second row for the same (config, task, conc)
/// in one file is dropped (the first is kept).
fn write_evals(conn: &mut Conn, run_id: i64, evals: &[EvalData]) -> Result<(), StoreError> {
    conn.exec(
        "DELETE FROM eval_samples WHERE run_id = ?",
        &[run_id.into()],
    )?;
    conn.exec("DELETE FROM evals WHERE run_id = ?", &[run_id.into()])?;
    let mut seen_evals = BTreeSet::new();
    for e in evals {
        let cid = config_id(conn, &e.config)?;
        if !seen_evals.insert((cid, e.task.clone(), e.conc)) {
            continue; // duplicate row in one file: the first is kept
        }
        conn.exec(
            "INSERT INTO evals (run_id, config_id, task, conc, score, score_se, metrics) VALUES (?, ?, ?, ?, ?, ?, ?)",
            &[run_id.into(), cid.into(), e.task.clone().into(), e.conc.into(), Val::from(e.score), Val::from(e.score_se), metrics_json(&e.metrics).into()],
        )?;
        let mut seen_docs = BTreeSet::new();
        for x in &e.samples {
            if !seen_docs.insert(x.doc_id) {
                continue; // a question twice in one file: the first is kept
            }
            conn.exec(
                "INSERT INTO eval_samples (run_id, config_id, task, conc, doc_id, question, response, extracted, target, correct, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                &[run_id.into(), cid.into(), e.task.clone().into(), e.conc.into(), x.doc_id.into(), x.question.clone().into(), x.response.clone().into(), x.extracted.clone().into(), x.target.clone().into(), Val::from(x.correct.map(i64::from)), x.error.clone().into()],
            )?;
        }
    }
    Ok(())
}

/// Where a chain of symbolic links starting at `path` ends ([`inferbench_core::probe::link_chain_end`]).
///
/// # Errors
/// A loop (or more links than the kernel follows): `a loop of symbolic links …`.
fn link_chain_end(path: &Path) -> Result<PathBuf, String> {
    inferbench_core::probe::link_chain_end(path).ok_or_else(|| {
        format!(
            "a loop of symbolic links (or more than {} in a chain): no database can be \
             created through it",
            inferbench_core::probe::MAX_LINKS
        )
    })
}

/// Whether SQLite can write beside the existing database file `db`: each of its `-wal`,
/// `-shm` and `-journal` that is there must open for writing, and, unless `-wal` and `-shm`
/// are both there (WAL mode needs no new file), the database's folder must take a new file
/// (probed by creating and removing `.inferbench-write-probe-<pid>` there), since SQLite
/// creates them on the first write (trial of issue 39's leftovers, finding 5: a database of
/// mode 666 in a folder of mode 555 passed the check, and the run ended with "attempt to write
/// a readonly database"). Checked before a run; nothing is left behind.
///
/// # Errors
/// `cannot write DB-wal: OS error` for a side file there, or `cannot write in FOLDER, where
/// SQLite keeps the database's -wal/-shm/-journal files: OS error`, with what to do.
pub fn side_files_writable(db: &str) -> Result<(), String> {
    let mut there = 0;
    for suffix in ["-wal", "-shm", "-journal"] {
        let side = format!("{db}{suffix}");
        if std::fs::symlink_metadata(&side).is_err() {
            continue;
        }
        std::fs::OpenOptions::new()
            .write(true)
            .open(&side)
            .map_err(|e| {
                format!(
                    "cannot write {side}, which SQLite writes beside the database: {e} (give \
                     it to this user, or store into a database elsewhere)"
                )
            })?;
        if suffix != "-journal" {
            there += 1;
        }
    }
    if there == 2 {
        return Ok(());
    }
    let dir = Path::new(db)
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    match inferbench_core::probe::can_create_in(dir) {
        Ok(()) => Ok(()),
        Err(e) => Err(format!(
            "cannot write in {}, where SQLite keeps the database's -wal/-shm/-journal files: \
             {e} (make the folder writable, or store into a database elsewhere)",
            dir.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39 (files, ingest and hints), 1: a write the database file cannot take (SQLite's
    /// `SQLITE_FULL` here, as `max_page_count` gives it; `SQLITE_IOERR` under `ulimit -f`) is
    /// [`StoreError::Write`]: the unit's transaction is rolled back (no run, point or request
    /// row of it), the ingest stops there (the sweep's other point is not tried, not listed as
    /// skipped with the same cause), and the report says which unit and why.
    #[test]
    fn a_database_that_cannot_grow_stops_the_ingest_with_nothing_half_stored() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("f.db").display().to_string()).unwrap();
        s.migrate().unwrap();
        // No free page left for a write to reuse.
        s.conn.batch("VACUUM").unwrap();
        let pages = s.conn.query("PRAGMA page_count", &[]).unwrap()[0][0]
            .as_i64()
            .unwrap();
        s.conn
            .batch(&format!("PRAGMA max_page_count = {pages}"))
            .unwrap();
        let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sweep-h200");
        let r = s.ingest_path(&fx, &IngestOptions::default()).unwrap();
        let w = r.write_failed.as_ref().expect("the write failed");
        assert_eq!(w.reason, "database error: sqlite: database or disk is full");
        // Units are tried in order (conc16, conc4): the small conc16 fits in the pages there
        // are, conc4 (its power samples) does not, and the ingest stops there.
        assert!(w.path.ends_with("sweep-h200/conc4"), "{}", w.path);
        assert_eq!((r.runs_ingested, r.points, r.skipped.len()), (1, 1, 0));
        assert!(!r.stored_nothing() && !r.found_nothing());
        s.conn.batch("PRAGMA max_page_count = 1073741823").unwrap();
        let counts = s.table_counts().unwrap();
        let count = |t: &str| counts.iter().find(|(n, _)| n == t).map(|(_, n)| *n);
        assert_eq!((count("runs"), count("points")), (Some(1), Some(1)));
        let run = parse::parse_dir(&fx.join("conc4"), &Overrides::default()).unwrap();
        s.conn
            .batch(&format!("PRAGMA max_page_count = {pages}"))
            .unwrap();
        let e = s.ingest_run(&run).unwrap_err();
        assert!(
            matches!(&e, StoreError::Write(m) if m == "sqlite: database or disk is full"),
            "{e:?}"
        );
    }

    /// Issue 39 (second round), finding 2: a dangling `--db` link is checked at its final
    /// target: into a missing folder it is refused before the run (it failed only when storing);
    /// into an existing folder it passes, as does a link to a link; a loop is refused.
    #[cfg(unix)]
    #[test]
    fn a_dangling_db_link_is_checked_at_its_final_target() {
        use std::os::unix::fs::symlink;
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir(p.join("r")).unwrap();
        symlink("nowhere/x.db", p.join("r/dangdb")).unwrap();
        let loc = p.join("r/dangdb").display().to_string();
        let e = Store::check_target(&loc).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "directory {} does not exist (the folder of the file the symbolic link leads \
                 to)",
                p.join("r/nowhere").display()
            )),
            "{e}"
        );
        symlink("x.db", p.join("r/ok.db")).unwrap();
        symlink("ok.db", p.join("r/hop.db")).unwrap();
        Store::check_target(&p.join("r/hop.db").display().to_string()).unwrap();
        symlink("b", p.join("a")).unwrap();
        symlink("a", p.join("b")).unwrap();
        let e = Store::check_target(&p.join("a").display().to_string())
            .unwrap_err()
            .to_string();
        assert!(e.contains("a loop of symbolic links"), "{e}");
    }

    /// The `immutable=1` fallback's URI keeps a file name's `?`, `#`, `%` and spaces as part
    /// of the path (unescaped, `?` would start the URI's parameters).
    #[test]
    fn uri_paths_escape_what_a_uri_would_read() {
        assert_eq!(
            uri_path(Path::new("/data/run 1/a?b#c%d.db")),
            "/data/run%201/a%3Fb%23c%25d.db"
        );
        assert_eq!(uri_path(Path::new("/a/b-c_d.~e")), "/a/b-c_d.~e");
    }

    /// A database opened through the fallback's URI reads as the file itself, whatever its
    /// name (root can write any directory, so the fallback is reached directly here).
    #[test]
    fn an_immutable_uri_reads_the_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("odd ?#% name.db");
        let loc = db.display().to_string();
        let mut s = Store::open(&loc).unwrap();
        s.migrate().unwrap();
        let v = s.schema_version().unwrap();
        drop(s);
        let uri = format!("file:{}?immutable=1", uri_path(&db));
        let c = rusqlite::Connection::open_with_flags(
            uri,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
        )
        .unwrap();
        let got: i64 = c
            .query_row("SELECT max(version) FROM schema_migrations", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(got, v);
    }

    /// Trial 18: two first writers to a new SQLite file raced to create the tables and the
    /// second failed with "table runs already exists". Every one of them now succeeds, and the
    /// migrations are applied once.
    #[test]
    fn concurrent_first_migrations_of_a_new_file_all_succeed() {
        let dir = tempfile::tempdir().unwrap();
        for round in 0..5 {
            let db = dir
                .path()
                .join(format!("race{round}.db"))
                .display()
                .to_string();
            let applied: Vec<Vec<i64>> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..4)
                    .map(|_| s.spawn(|| Store::open(&db).and_then(|mut st| st.migrate())))
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap().unwrap())
                    .collect()
            });
            // Each migration once, whichever store applied it (one per transaction, so two
            // stores may share them: [4] and [1, 2, 3] is as right as [1, 2, 3, 4]).
            let mut all: Vec<i64> = applied.into_iter().flatten().collect();
            all.sort_unstable();
            let every: Vec<i64> = (1..=schema::latest_version()).collect();
            assert_eq!(all, every, "round {round}");
        }
    }

    /// Trial 16: a PostgreSQL that does not answer is not a "bad database location"; a URL
    /// that does not parse is. Both hide the password.
    #[test]
    fn an_unreachable_postgres_reads_apart_from_a_bad_url() {
        let err = |url: &str| {
            Store::open(url)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        let e = err("postgres://u:secret@127.0.0.1:1/db");
        assert!(
            e.starts_with(
                "cannot connect to the PostgreSQL server of `postgres://u:***@127.0.0.1:1/db`: "
            ),
            "{e}"
        );
        assert!(e.ends_with("(is it running, and are the host, port, user, password and database in the URL right?)"), "{e}");
        let e = err("postgres://u:secret@127.0.0.1:notaport/db");
        assert!(
            e.starts_with("bad database location `postgres://u:***@127.0.0.1:notaport/db`: "),
            "{e}"
        );
        assert!(!e.contains("secret"), "{e}");
    }

    /// `--set` items become overrides; the identity note names what is still missing.
    #[test]
    fn set_flags_and_missing_identity() {
        let o = IngestOptions::from_set(&["hardware = h100".into(), "tp=8".into()]).unwrap();
        assert_eq!(o.overrides["hardware"], "h100");
        assert_eq!(o.missing_identity(), ["framework", "precision"]);
        assert_eq!(
            o.missing_identity_note().unwrap(),
            "--db without framework, precision: stored as `unknown` (name them with \
             --set framework=… --set precision=…)"
        );
        let full =
            IngestOptions::from_set(&["hw=a".into(), "framework=b".into(), "precision=c".into()])
                .unwrap();
        assert_eq!(full.missing_identity_note(), None);
        let e = IngestOptions::from_set(&["hw".into()]).unwrap_err();
        assert_eq!(e, "--set `hw`: expected KEY=VALUE");
        let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
        assert_eq!(
            IngestOptions::result_batch(Path::new("point.json")),
            Some(cwd.display().to_string())
        );
    }

    #[test]
    fn url_helpers() {
        assert_eq!(
            redact("postgres://u:secret@h:5432/d"),
            "postgres://u:***@h:5432/d"
        );
        assert_eq!(redact("inferbench.db"), "inferbench.db");
        let (u, s) = split_schema("postgres://u@h/d?schema=t_1&sslmode=disable").unwrap();
        assert_eq!(
            (u.as_str(), s.as_deref()),
            ("postgres://u@h/d?sslmode=disable", Some("t_1"))
        );
        assert!(split_schema("postgres://u@h/d?schema=x;drop").is_err());
    }
}
