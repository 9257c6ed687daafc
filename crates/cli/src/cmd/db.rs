//! `inferbench db migrate|dump|restore`: schema migrations and verified snapshots.

use std::path::PathBuf;

use inferbench_store::Store;

use super::ExitStatus;

/// Flags of `inferbench db`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Database: a SQLite file path or a `postgres://user:pw@host/db` URL.
    #[arg(long, env = "INFERBENCH_DB", default_value = inferbench_store::DEFAULT_DB, global = true)]
    pub db: String,
    #[command(subcommand)]
    pub action: Action,
}

/// `db` actions.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    /// Create or upgrade the schema (idempotent).
    Migrate,
    /// Schema version, rows per table, and the names the normalizers did not recognise (with
    /// the run where each was first seen).
    Status,
    /// Write a consistent snapshot `inferbench-<UTC date>T<time>Z.ibdump.zst` into DIR and add its
    /// SHA-256 to DIR/SHA256SUMS. Safe while an ingest runs (one read transaction).
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

/// Runs the subcommand; returns the process exit code.
pub fn run(args: Args) -> anyhow::Result<ExitStatus> {
    let mut store = Store::open(&args.db)?;
    match args.action {
        Action::Migrate => {
            let applied = store.migrate()?;
            if applied.is_empty() {
                let v = store.schema_version()?;
                println!("{}: schema up to date (version {v})", store.location());
            } else {
                println!("{}: applied migration(s) {:?}", store.location(), applied);
            }
        }
        Action::Status => {
            let v = store.schema_version()?;
            println!("{}: schema version {v}", store.location());
            for (t, n) in store.table_counts()? {
                println!("  {t:<18} {n:>10}");
            }
            let unknown = store.unknown_names()?;
            if !unknown.is_empty() {
                println!("unknown names (stored as given):");
                for (kind, name, run) in unknown {
                    println!("  {kind:<10} {name:<30} first seen in {run}");
                }
            }
        }
        Action::Dump { out } => {
            let d = store.dump_to_dir(&out)?;
            println!("{}  {}", d.sha256, d.path.display());
            println!("{} rows in {} tables", d.rows, d.tables);
        }
        Action::Restore { file, no_verify } => {
            store.migrate()?;
            let n = store.restore_file(&file, !no_verify)?;
            println!("restored {n} rows from {}", file.display());
        }
    }
    Ok(ExitStatus::Ok)
}
