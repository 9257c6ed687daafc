//! The `ingest` and `db` subcommands: their flags ([`IngestFlags`], [`DbFlags`], `--help` text
//! written once) and the `db` command behind them, over `inferbench_store`; the `ingest`
//! command, which prints the store's reports (views' `ingest` renders them), is
//! [`super::ingest`].

use std::path::PathBuf;

use inferbench_store::{IngestOptions, Store};

use super::ExitStatus;

// ----- ingest

/// Flags of `inferbench ingest`.
#[derive(Debug, clap::Args)]
pub struct IngestFlags {
    /// Artifact directories, directory trees or result files to ingest.
    #[arg(required_unless_present = "inferencex_dump")]
    pub paths: Vec<PathBuf>,
    /// InferenceX's public database dump to import: a weekly `db-dump/…` release, either the
    /// unzipped directory of its JSON form (`inferencex-dump-YYYY-MM-DD/`, one `<table>.json`
    /// per table) or its pg_dump file (`inferencex-YYYY-MM-DD.dump.zst`, the parts joined with
    /// `cat *.part* >`; read with `pg_restore`, no database needed). One run per GitHub
    /// workflow run (its latest attempt); importing it again updates those runs in place
    /// (nothing is duplicated). Repeatable.
    #[arg(long, value_name = "DIR")]
    pub inferencex_dump: Vec<PathBuf>,
    /// Database: a SQLite file path or a `postgres://user:pw@host/db` URL.
    #[arg(long, env = "INFERBENCH_DB", hide_env_values = true, default_value = inferbench_store::DEFAULT_DB)]
    pub db: String,
    /// Identity for imports that lack it, InferenceX aggregate field names
    /// (`hw=h200`, `framework=vllm`, `precision=fp8`, `tp=8`, `isl=1024`, …); repeatable.
    /// Overrides the files' own values.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Store every run under this batch (sweep) name instead of the files' own (a job.json
    /// `sweep_id`, an artifact directory's parent, else the result file's path); `report -f
    /// batch=NAME` and `--history-at` group by it.
    #[arg(long, value_name = "NAME")]
    pub batch: Option<String>,
    /// Exit with status 1 when any unit was skipped, any name was unknown, or an InferenceX
    /// dump had rows it could not place (a warning without --strict).
    #[arg(long)]
    pub strict: bool,
}

/// Ingest options from `--set KEY=VALUE` flags (shared with `bench --db`).
pub fn options(set: &[String]) -> anyhow::Result<IngestOptions> {
    IngestOptions::from_set(set).map_err(anyhow::Error::msg)
}

// ----- db

/// Flags of `inferbench db`.
#[derive(Debug, clap::Args)]
pub struct DbFlags {
    /// Database: a SQLite file path or a `postgres://user:pw@host/db` URL.
    #[arg(long, env = "INFERBENCH_DB", hide_env_values = true, default_value = inferbench_store::DEFAULT_DB, global = true)]
    pub db: String,
    #[command(subcommand)]
    action: Action,
}

/// `db` actions.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Create or upgrade the schema (idempotent).
    Migrate,
    /// Schema version, rows per table, and the names the normalizers did not recognise (with
    /// the run where each was first seen).
    Status,
    /// Write a consistent snapshot `inferbench-<UTC date>T<time>Z.ibdump.zst` into the `--out`
    /// directory and add its SHA-256 to its SHA256SUMS. Safe while an ingest runs (one read
    /// transaction); copy a database this way, not with `cp` (SQLite keeps recent writes in
    /// its `-wal` file beside it).
    Dump {
        /// Output directory (created if missing).
        #[arg(long, short, default_value = ".")]
        out: PathBuf,
    },
    /// Load a snapshot into an empty database after verifying its checksum against the
    /// SHA256SUMS file beside it.
    Restore {
        /// The `.ibdump.zst` file.
        file: PathBuf,
        /// Restore even when SHA256SUMS is missing (the checksum is then not verified).
        #[arg(long)]
        no_verify: bool,
    },
}

impl DbFlags {
    /// Runs `inferbench db`: the action's result on stdout.
    pub fn run(self) -> anyhow::Result<ExitStatus> {
        run_db(self)
    }
}

/// [`DbFlags::run`].
fn run_db(args: DbFlags) -> anyhow::Result<ExitStatus> {
    // `status` reads: it creates no file where there is none and writes nothing to the one
    // there is (as `report`).
    // A SQLite file `restore` creates is removed again when the restore fails (trial 18: a
    // missing or mismatched dump left an empty database behind).
    let created = !args.db.contains("://") && !PathBuf::from(&args.db).exists();
    // A snapshot never over the database, nor the database over the snapshot it restores
    // (issue 39's leftovers, 1).
    {
        use inferbench_loadgen::samefile::{check_distinct, NamedPath};
        let mut paths: Vec<NamedPath> = Vec::new();
        match &args.action {
            Action::Dump { out } => {
                // The snapshot's folder (a dangling link on its way included), up front.
                if let Some(why) = inferbench_loadgen::output::dir_uncreatable(out) {
                    anyhow::bail!("--out {}: {why}", out.display());
                }
                paths.extend(super::db_read(&args.db));
                paths.push(NamedPath::output(
                    "--out's SHA256SUMS",
                    out.join("SHA256SUMS"),
                ));
            }
            Action::Restore { file, .. } => {
                paths.push(NamedPath::input("restore's FILE", file));
                paths.push(NamedPath::input(
                    "restore's SHA256SUMS",
                    file.with_file_name("SHA256SUMS"),
                ));
                paths.extend(inferbench_loadgen::samefile::db_path(&args.db));
            }
            Action::Migrate | Action::Status => {}
        }
        check_distinct(&paths)?;
    }
    // `dump` reads too: a missing file is "no database", not a new empty one (trial 18).
    let mut store = if matches!(args.action, Action::Status | Action::Dump { .. }) {
        Store::open_for_reading(&args.db)?
    } else {
        Store::open(&args.db)?
    };

    match args.action {
        Action::Migrate => {
            let applied = store.migrate()?;
            if applied.is_empty() {
                let v = store.schema_version()?;
                outln!("{}: schema up to date (version {v})", store.location());
            } else {
                outln!("{}: applied migration(s) {:?}", store.location(), applied);
            }
        }
        Action::Status => {
            let v = store.schema_version()?;
            // Trial 16: a 0-byte file answered "no such table"; an old schema may lack some.
            // A file without our tables is bad setup, as for `report` (exit 2; trial 20: exit 0
            // here, 2 for a missing file), said by the error alone (trial 21).
            let migrated = store.require_migrated();
            if let (Err(e), 0) = (&migrated, v) {
                errln!("error: {e}");
                return Ok(ExitStatus::Usage);
            }
            outln!("{}: schema version {v}", store.location());
            if let Err(e) = migrated {
                outln!("{e}");
            }
            outln!("rows per table:");
            let counts = store.table_counts()?;
            let points = (counts.iter().find(|(t, _)| t == "points")).map_or(0, |(_, n)| *n);
            for (t, n) in &counts {
                // Trial 13: `requests 19` read as 19 requests; it holds one row per point.
                // Trial 15: and fewer rows than points was unexplained.
                let note = match t.as_str() {
                    "requests" if *n < points => format!(
                        "  (one row per point with saved request records, compressed; {} \
                         point(s) have none: `bench` keeps them with --save-requests FILE)",
                        points - n
                    ),
                    "requests" => "  (one row per point: its request records, compressed)".into(),
                    // Trial 23: runs outnumbered points with nothing saying why.
                    "runs" => {
                        "  (a benchmark point's run or an eval's: one per result ingested)".into()
                    }
                    _ => String::new(),
                };
                outln!("  {t:<18} {n:>10}{note}");
            }
            let unknown = store.unknown_names()?;
            if !unknown.is_empty() {
                outln!("unknown names (stored as given):");
                for (kind, name, run) in unknown {
                    outln!("  {kind:<10} {name:<30} first seen in {run}");
                }
            }
        }
        Action::Dump { out } => {
            let d = store.dump_to_dir(&out)?;
            // Each number labelled (trial 21: a bare `HASH  PATH` line, sha256sum's format).
            let sums = d.path.with_file_name("SHA256SUMS");
            outln!(
                "wrote {}: {} rows of {} tables\nsha256 {} (added to {}; `db restore` checks \
                 it, as does `sha256sum -c SHA256SUMS` in that directory)",
                d.path.display(),
                d.rows,
                d.tables,
                d.sha256,
                sums.display()
            );
        }
        Action::Restore { file, no_verify } => {
            let restored = store
                .migrate()
                .and_then(|_| store.restore_file(&file, !no_verify));
            match restored {
                // Trial 19: the database it went into was not named.
                Ok(n) => outln!(
                    "restored {n} rows from {} into {}",
                    file.display(),
                    store.location()
                ),
                Err(e) => {
                    if created {
                        drop(store);
                        remove_sqlite_files(&args.db);
                    }
                    return Err(e.into());
                }
            }
        }
    }
    Ok(ExitStatus::Ok)
}

/// Removes a SQLite database file `db` that a command created, with its `-wal`, `-shm` and
/// `-journal` (each that exists; errors ignored: nothing else is there to remove).
pub fn remove_sqlite_files(db: &str) {
    for suffix in ["", "-wal", "-shm", "-journal"] {
        std::fs::remove_file(format!("{db}{suffix}")).ok();
    }
}
