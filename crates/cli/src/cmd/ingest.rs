//! `inferbench ingest` and `bench --db`'s ingest: the store ingests, views' `ingest` renders
//! the report, and this prints it (stdout, or stderr when nothing was stored; skipped units on
//! stderr) and chooses the exit status (moved from the store's `flags`, issue 40 §5).

use std::path::PathBuf;

use super::db::{options, remove_sqlite_files, IngestFlags};
use inferbench_store::{IngestOptions, Store};
use inferbench_views::ingest::IngestText;

use super::ExitStatus;

/// Ingests `paths` into `db` (migrating it first), printing each report. Returns whether any
/// unit was skipped or any path held nothing to ingest, and whether any name was unknown.
///
/// # Errors
/// The database cannot be opened or migrated, a path cannot be read, or a write into the
/// database failed (a full disk, the file-size limit: [`write_failed`], ending with exit 2 when
/// nothing was stored, else 1; the unit's transaction rolled back, the ingest stopped there).
pub fn ingest_into(
    db: &str,
    paths: &[PathBuf],
    opts: &IngestOptions,
) -> anyhow::Result<(bool, bool)> {
    // A SQLite file this call creates is removed again when nothing was stored in it (trial
    // 13: `ingest` of an empty directory left an empty database behind).
    let created = !db.contains("://") && !std::path::Path::new(db).exists();
    let mut stored = false;
    let result = ingest_each(db, paths, opts, &mut stored);
    // A database this call created and stored nothing into (the file-size limit, a full
    // disk) is not left behind: the results stay in their files. One that holds what was
    // stored before a write failed is kept (said in the reports).
    if created && !stored {
        remove_sqlite_files(db);
    }
    result
}

/// [`ingest_into`]'s work; `stored` is set once anything is stored.
fn ingest_each(
    db: &str,
    paths: &[PathBuf],
    opts: &IngestOptions,
    stored: &mut bool,
) -> anyhow::Result<(bool, bool)> {
    let mut store = Store::open(db)?;
    store.migrate()?;
    let mut failed = false;
    let mut unknown = false;
    for p in paths {
        let mut report = store.ingest_path(p, opts)?;
        failed |= !report.skipped.is_empty() || report.stored_nothing();
        unknown |= !report.unknown.is_empty();
        *stored |= report.points > 0 || report.runs_ingested > 0 || report.evals > 0;
        if opts.missing_noted {
            report.unknown.retain(|(_, name)| name != "unknown");
        }
        // An error goes where errors go (trial 15: "error: nothing to ingest" on stdout;
        // trial 16: the skipped units, which make the exit code 1).
        if report.stored_nothing() {
            if report.write_failed.is_none() {
                err!("{}", report.render());
            }
        } else {
            out!("{}", report.render());
        }
        err!("{}", report.render_skipped());
        if let Some(w) = &report.write_failed {
            return Err(write_failed(db, w, *stored));
        }
    }
    Ok((failed, unknown))
}

/// The error of an ingest whose write into `db` failed at the unit `w` (its transaction
/// rolled back): exit 2 when nothing was `stored` by this ingest, else 1 (what was stored
/// before it is kept). Its text ends with the driver's words, which the CLI's one mapping of
/// write errors ([`crate::fsize::explain`]) completes with the file-size limit where it
/// explains them.
fn write_failed(db: &str, w: &inferbench_store::Skipped, stored: bool) -> anyhow::Error {
    let kept = match stored {
        true => "what was stored before it is kept; ",
        false => "nothing was stored; ",
    };
    anyhow::Error::new(super::exit::StatusError {
        status: if stored {
            ExitStatus::Failed
        } else {
            ExitStatus::Usage
        },
        message: format!(
            "storing {} into {} failed, and the ingest stopped there ({kept}the rest is not \
             ingested; ingest again once the database can grow): {}",
            w.path,
            inferbench_store::redact(db),
            w.reason
        ),
    })
}

/// Runs `inferbench ingest`: every path checked first (a typo stores nothing), then
/// ingested with a report each (stdout). Returns [`ExitStatus::Ok`], or
/// [`ExitStatus::Failed`] when something was skipped or a path held nothing to ingest
/// (always) or a name was unknown (with `--strict`).
pub fn run(args: IngestFlags) -> anyhow::Result<ExitStatus> {
    let mut opts = options(&args.set)?;
    opts.batch = args.batch.clone();
    // Every path first: a typo stores nothing (and creates no database).
    for p in &args.paths {
        anyhow::ensure!(
            p.exists(),
            "{}: no such file or directory{}",
            p.display(),
            if p.to_string_lossy().contains('=') {
                " (each identity needs its own --set: --set hw=… --set framework=…)"
            } else {
                ""
            }
        );
    }
    // The database is written: no path ingested may be its file (trial of issue 39, finding
    // 1: same-file paths compared by what they name).
    {
        use inferbench_loadgen::samefile::{check_distinct, db_path, NamedPath};
        let mut named: Vec<NamedPath> = args
            .paths
            .iter()
            .chain(&args.inferencex_dump)
            .map(|p| NamedPath::input("ingest", p))
            .collect();
        named.extend(db_path(&args.db));
        check_distinct(&named)?;
    }
    let is_dump = |p: &PathBuf| {
        inferbench_store::dump::is_json_dump(p) || inferbench_store::dump::is_pg_dump(p)
    };
    for d in &args.inferencex_dump {
        anyhow::ensure!(
            d.exists(),
            "--inferencex-dump {}: no such file or directory",
            d.display()
        );
        anyhow::ensure!(
            is_dump(d),
            "{}: not an InferenceX dump (expected a directory holding configs.json and \
             benchmark_results.json, as in an unzipped db-dump release, or a *.dump[.zst] file)",
            d.display()
        );
    }
    if let Some(d) = args.paths.iter().find(|p| is_dump(p)) {
        anyhow::bail!(
            "{}: this is InferenceX's database dump; import it with `inferbench ingest \
             --inferencex-dump {}`",
            d.display(),
            d.display()
        );
    }
    // The database's growth up front, against `ulimit -f` (issue 39, files, ingest and hints,
    // 1): an upper estimate from the files ingested, as the other writers check theirs.
    let all: Vec<PathBuf> = args
        .paths
        .iter()
        .chain(&args.inferencex_dump)
        .cloned()
        .collect();
    if let Some(planned) = crate::fsize::ingest_planned(&args.db, &all) {
        crate::fsize::check_before(&[planned], crate::fsize::limit(), "nothing was stored")
            .map_err(anyhow::Error::msg)?;
    }
    let (mut failed, mut unknown) = ingest_into(&args.db, &args.paths, &opts)?;
    if !args.inferencex_dump.is_empty() {
        let db = &args.db;
        let created = !db.contains("://") && !std::path::Path::new(db).exists();
        let mut store = Store::open(db)?;
        store.migrate()?;
        let mut stored = false;
        for d in &args.inferencex_dump {
            let report = match store.ingest_inferencex_dump(d, &opts) {
                Ok(r) if r.write_failed.is_some() => {
                    stored |= r.runs_ingested > 0;
                    if stored {
                        out!("{}", r.render());
                    } else if created {
                        drop(store);
                        remove_sqlite_files(db);
                    }
                    let w = r.write_failed.as_ref().expect("checked above");
                    return Err(write_failed(db, w, stored));
                }
                Ok(r) => r,
                Err(e) => {
                    // A failed import leaves no database it created (trial 24: an empty,
                    // schema-only file was left behind).
                    if created && !stored {
                        drop(store);
                        remove_sqlite_files(db);
                    }
                    return Err(e.into());
                }
            };
            stored |= report.runs_ingested > 0;
            out!("{}", report.render());
            err!("{}", report.render_skipped());
            failed |= !report.skipped.is_empty();
            // Rows the dump could not place (`dump::runs_from_tables`' orphans).
            let left_out = report.warnings.iter().any(|w| w.contains("; left out ("));
            unknown |= !report.unknown.is_empty() || left_out;
        }
    }
    Ok(ExitStatus::failed_if(failed || (args.strict && unknown)))
}

#[cfg(test)]
mod tests {
    use super::{write_failed, ExitStatus};

    /// Issue 39 (files, ingest and hints), 1: an ingest whose write into the database failed
    /// (its unit's transaction rolled back) ends with exit 2 when nothing was stored and 1 when
    /// something was, names the unit, the database and what was kept, and under `ulimit -f` the
    /// CLI's one mapping says the database would grow past it.
    #[test]
    fn a_failed_database_write_ends_2_when_nothing_was_stored_else_1() {
        let w = inferbench_store::Skipped {
            path: "/r/conc4".into(),
            reason: "database error: sqlite: disk I/O error".into(),
        };
        let e = write_failed("x.db", &w, false);
        assert_eq!(crate::cmd::error_status(&e), ExitStatus::Usage);
        assert_eq!(
            crate::fsize::explain_under(&inferbench_core::error_chain(e.as_ref()), Some(150 << 10)),
            "storing /r/conc4 into x.db failed, and the ingest stopped there (nothing was stored; \
             the rest is not ingested; ingest again once the database can grow): database error: \
             sqlite: disk I/O error: the database would grow past `ulimit -f` (150 KiB); the \
             write's transaction was rolled back (nothing of it is stored): raise the limit, \
             `ulimit -f unlimited`"
        );
        let e = write_failed("x.db", &w, true);
        assert_eq!(crate::cmd::error_status(&e), ExitStatus::Failed);
        assert!(
            e.to_string()
                .contains("(what was stored before it is kept; the rest is not ingested;"),
            "{e}"
        );
    }
}
