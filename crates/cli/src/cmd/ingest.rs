//! `inferbench ingest PATH…`: store run artifacts and imported result files
//! (inferbench artifact directories, vLLM `--save-result` JSON, InferenceX `agg_*.json` /
//! `agg_bmk.json`, AIPerf `profile_export_aiperf.json`); `--inferencex-dump DIR`: InferenceX's
//! public database dump.

use std::path::PathBuf;

use inferbench_store::{IngestOptions, Store};

use super::ExitStatus;

/// Flags of `inferbench ingest`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Artifact directories, directory trees or result files to ingest.
    #[arg(required_unless_present = "inferencex_dump")]
    pub paths: Vec<PathBuf>,
    /// InferenceX's public database dump to import: a weekly `db-dump/…` release, either the
    /// unzipped directory of its JSON form (`inferencex-dump-YYYY-MM-DD/`, one `<table>.json`
    /// per table) or its pg_dump file (`inferencex-YYYY-MM-DD.dump.zst`, the parts joined with
    /// `cat *.part* >`; read with `pg_restore`, no database needed). One run per GitHub
    /// workflow run (its latest attempt); importing it again changes nothing. Repeatable.
    #[arg(long, value_name = "DIR")]
    pub inferencex_dump: Vec<PathBuf>,
    /// Database: a SQLite file path or a `postgres://user:pw@host/db` URL.
    #[arg(long, env = "INFERBENCH_DB", default_value = inferbench_store::DEFAULT_DB)]
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

/// Ingests `paths` into `db` (migrating it first), printing each report. Returns whether any
/// unit was skipped or any path held nothing to ingest, and whether any name was unknown.
pub fn ingest_into(
    db: &str,
    paths: &[PathBuf],
    opts: &IngestOptions,
) -> anyhow::Result<(bool, bool)> {
    let mut store = Store::open(db)?;
    store.migrate()?;
    let mut failed = false;
    let mut unknown = false;
    for p in paths {
        let report = store.ingest_path(p, opts)?;
        print!("{}", report.render());
        failed |= !report.skipped.is_empty() || report.found_nothing();
        unknown |= !report.unknown.is_empty();
    }
    Ok((failed, unknown))
}

/// Runs the subcommand; returns 0, or 1 when something was skipped or a path held nothing to
/// ingest (always) or a name was unknown (with `--strict`).
pub fn run(args: Args) -> anyhow::Result<ExitStatus> {
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
    let is_dump = |p: &PathBuf| {
        inferbench_store::dump::is_json_dump(p) || inferbench_store::dump::is_pg_dump(p)
    };
    for d in &args.inferencex_dump {
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
    let (mut failed, mut unknown) = ingest_into(&args.db, &args.paths, &opts)?;
    if !args.inferencex_dump.is_empty() {
        let mut store = Store::open(&args.db)?;
        store.migrate()?;
        for d in &args.inferencex_dump {
            let report = store.ingest_inferencex_dump(d, &opts)?;
            print!("{}", report.render());
            failed |= !report.skipped.is_empty();
            // Rows the dump could not place (`dump::runs_from_tables`' orphans).
            let left_out = report.warnings.iter().any(|w| w.contains("; left out ("));
            unknown |= !report.unknown.is_empty() || left_out;
        }
    }
    Ok(ExitStatus::failed_if(failed || (args.strict && unknown)))
}
