//! `inferbench bench`: one load point. Flags (vLLM `bench serve` names) and their conversion:
//! `crate::cmd::bench_flags::BenchFlags`; the point: `inferbench_loadgen::run_bench`; `--db`:
//! `inferbench_store` through `ingest`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::cmd::bench_flags::BenchFlags;
use anyhow::Context as _;
use inferbench_core::slo::{self, SearchEnd, SearchSpace, Slo};
use inferbench_loadgen::options::BenchOptions;
use inferbench_loadgen::{output::render_report, run_bench, BenchOutcome, VerdictKind};
use serde_json::{json, Value};

use super::ExitStatus;

/// `inferbench bench`'s flags: the point's ([`BenchFlags`], the loadgen library's) and the
/// SLO capacity search's ([`SearchArgs`], this crate's).
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// One point's flags.
    #[command(flatten)]
    pub flags: BenchFlags,
    /// The capacity search.
    #[command(flatten)]
    pub search: SearchArgs,
    /// How an https:// target is verified.
    #[command(flatten)]
    pub tls: super::tls_args::TlsArgs,
}

/// Flags of the SLO capacity search (issue 43): with `--slo` and a search range, `bench` runs
/// one full point per probe and reports the largest load meeting every SLO.
#[derive(Debug, Clone, clap::Args)]
pub struct SearchArgs {
    /// SLOs every probe must meet, `METRIC OP VALUE[UNIT]`: METRIC a `report` column
    /// (median_intvty, p99_ttft, p90_e2e_norm_intvty, tput_per_gpu, …) or request_goodput /
    /// goodput_fraction (per-request SLOs of --goodput, vLLM's definition) / error_rate; OP
    /// one of <= >= < >; times in s (default) or ms: `--slo 'median_intvty>=35' 'p99_ttft<=2s'`.
    /// Needs --search-concurrency or --search-request-rate.
    #[arg(long, num_args = 1.., value_name = "EXPR", help_heading = "Capacity search")]
    pub slo: Vec<String>,
    /// Find the largest --max-concurrency in LO..HI (`1..512`) whose point meets every --slo,
    /// by bracketing and bisection over full points (each probe's --num-prompts and
    /// --num-warmups default to 10× and 2× its concurrency). HI is checked against `ulimit -n`
    /// and `ulimit -v` first (exit 2 naming the range that fits); a probe whose requests fail
    /// on the client's own limit (client_resource) stops the search with no capacity (exit 1).
    #[arg(
        long,
        value_name = "LO..HI",
        requires = "slo",
        conflicts_with = "search_request_rate",
        help_heading = "Capacity search"
    )]
    pub search_concurrency: Option<String>,
    /// Find the largest --request-rate (requests/s) in LO..HI (`0.5..32`) whose point meets
    /// every --slo (at --max-concurrency, if given). The probe at HI is checked against the
    /// client's limits first, as with --search-concurrency.
    #[arg(
        long,
        value_name = "LO..HI",
        requires = "slo",
        help_heading = "Capacity search"
    )]
    pub search_request_rate: Option<String>,
    /// Stop when the smallest failing load is within this fraction above the largest meeting
    /// one (0.1: within 10 %; whole concurrencies also stop when adjacent).
    #[arg(
        long,
        default_value_t = 0.1,
        value_name = "FRACTION",
        help_heading = "Capacity search"
    )]
    pub search_resolution: f64,
    /// At most this many probes (full points).
    #[arg(
        long,
        default_value_t = 12,
        value_name = "N",
        help_heading = "Capacity search"
    )]
    pub search_max_probes: usize,
}

/// Runs the subcommand: the point, its report (stdout), the files written and the notes
/// (stderr), then with `--db` the result stored under its result directory's batch.
pub fn run(args: BenchArgs) -> anyhow::Result<ExitStatus> {
    let BenchArgs {
        mut flags,
        search,
        tls,
    } = args;
    let tls = tls.options();
    if !search.slo.is_empty() {
        return run_search(flags, search, tls);
    }
    let db = flags.db.take();
    // Where the result will be stored, checked before the benchmark runs.
    if let Some(db) = &db {
        check_db_target(db, &planned_folders(&flags))?;
    }
    let mut ingest_opts = super::db::options(&flags.set)?;
    let identity_file = flags.job_identity.clone();
    let mut opts = flags.into_options()?;
    // The out-of-memory net names the flags of this run's workload (issue 39's leftovers, 1).
    crate::oom::set_what_to_lower(crate::limits::bench_lower(&opts).net);
    opts.tls = tls;
    opts.save_result |= db.is_some();
    check_same_files(&opts, db.as_deref(), identity_file)?;
    // Every file the point writes within `ulimit -f`, before any request (trial of issue 39's
    // leftovers, finding 4: the database failed after the run).
    let files = planned_files(&opts, db.as_deref());
    crate::fsize::check(&files, crate::fsize::limit()).map_err(anyhow::Error::msg)?;
    // The /metrics scrapes within what the limit leaves the file and the database's rows of
    // it (issue 39's leftovers, 2): their number is not known up front.
    opts.server_metrics_max_bytes = scrapes_room(&files, crate::fsize::limit());
    // More streams than this process can hold open or in memory: refused before anything is
    // sent (issue 39 §2: EMFILE on 3 of 4 warmups, or SIGSEGV at 1,000,000 streams).
    // The flags' own ranges first (a number out of range is named as such); the prompts'
    // memory against what is available is checked when the run starts.
    opts.validate_with_memory(None)?;
    let limits = crate::limits::raise_open_files();
    // Not one stream fits: the `ulimit -v` at which these checks pass, a dataset's prompts
    // (as estimated) included (issue 39's leftovers, 3).
    // The dataset's prompts and their replies' records as its loader counts them, read once.
    let estimate = crate::limits::dataset_bytes(&opts);
    let prompt_memory = memory_plan(&opts, estimate, &limits).map_err(|e| {
        let e = crate::limits::advise_no_stream(e, &limits, |at| {
            memory_plan(&opts, estimate, at).is_ok_and(|room| room.is_none_or(|r| r >= estimate))
        });
        // What the advice cannot know: a --duration closed loop's further requests.
        match duration_unknown(&opts) {
            Some(d) => {
                let e = format!("{e:#}");
                match e.strip_suffix(" (nothing was sent)") {
                    Some(head) => anyhow::anyhow!("{head}; {d} (nothing was sent)"),
                    None => anyhow::anyhow!("{e}; {d}"),
                }
            }
            None => e,
        }
    })?;
    if opts.dataset_name != inferbench_loadgen::options::DatasetName::Random {
        opts.prompt_memory = prompt_memory;
    }
    // A closed loop for a --duration makes as many requests as the server answers: said, with
    // how many more the limit holds, since the check could count only the planned ones (issue
    // 39, fresh tester's finding 3).
    // Under `ulimit -v` such a run stops sending when its records reach what the limit holds
    // (issue 39): a summary at that count, never an out-of-memory end without one.
    let extra = extra_bytes(&opts, estimate);
    opts.record_bound = record_bound(&opts, &limits, extra);
    if let Some(note) = duration_records_note(&opts, &limits, extra) {
        errln!("inferbench: warning: {note}");
    }
    opts.save_result |= db.is_some();
    // The requested lengths of random prompts, for a point that measured nothing (the store
    // takes ISL/OSL from the mean lengths of finished requests: trial 14 found an interrupted
    // bench stored as ISL/OSL 0/0, apart from its workload).
    let nominal = (opts.dataset_name == inferbench_loadgen::options::DatasetName::Random)
        .then_some((opts.random_input_len, opts.random_output_len));
    if db.is_some() && opts.job_identity.is_none() {
        if let Some(note) = ingest_opts.missing_identity_note() {
            errln!("inferbench: {note}");
            ingest_opts.missing_noted = true;
        }
    }
    let rt = super::runtime()?;
    // The served model is named before the run, as vLLM prints it (trial 20: the line came
    // after the progress lines).
    if opts.model.trim().is_empty() {
        // A bad --base-url is said as such before the server is asked anything (trial 22).
        opts.validate()?;
        opts.model = rt.block_on(inferbench_loadgen::hints::served_model(
            &opts.base_url,
            &opts.reach(),
        ))?;
        errln!(
            "inferbench: {}",
            inferbench_loadgen::hints::served_model_note(&opts.model)
        );
    }
    // Printed whatever --progress says (trial 33 F11: --disable-tqdm hid it from the vLLM
    // users it is for).
    if let Some(n) = opts.range_notice() {
        errln!("inferbench: {n}");
    }
    // The options as planned, for the `ulimit -v` a dataset refusal advises.
    let planned = opts.clone();
    let out = rt.block_on(async move {
        let cancel = super::shutdown_token(
            "inferbench: interrupted; finishing up and saving finished requests",
        );
        let out = run_bench(opts, cancel).await?;
        out!("{}", render_report(&out.summary));
        for p in [&out.result_path, &out.aggregate_path, &out.records_path]
            .into_iter()
            .flatten()
        {
            errln!("wrote {}", p.display());
        }
        for n in &out.notes {
            errln!("inferbench: {}", crate::fsize::explain(n));
        }
        anyhow::Ok(out)
    });
    // Do not wait for abandoned blocking work (prompt preparation cut short by a signal).
    rt.shutdown_background();
    // Not one dataset prompt fitted: the `ulimit -v` at which this run's checks leave the
    // loader what it counted (issue 39's leftovers, 3).
    let out = out.map_err(|e| {
        crate::limits::advise_none_fits(e, &limits, |at| {
            memory_plan(&planned, estimate, at).ok().flatten()
        })
    })?;
    // Outside the runtime: the PostgreSQL client runs one of its own, which cannot start
    // inside another (trial 7: `bench --db postgres://…` panicked after the benchmark).
    // The server never answered: the result file says what happened (issue 13), but there is
    // no point to store (trial 24: a failed point of nothing was stored, its database created).
    let never_answered = inferbench_loadgen::output::never_answered(&out.summary);
    if let (Some(db), true) = (&db, never_answered) {
        errln!(
            "inferbench: nothing stored in {}: the server never answered",
            inferbench_store::redact(db)
        );
    }
    if let (Some(db), Some(result), false) = (&db, &out.result_path, never_answered) {
        // The point's batch is its result directory, as `ingest` gives any result file (trial
        // 9: `-f batch=<--result-dir>` matched nothing when the batch was the file's own path).
        if let (0, Some((isl, osl))) = (out.summary.completed, nominal) {
            for (k, v) in [("isl", isl), ("osl", osl)] {
                ingest_opts
                    .overrides
                    .entry(k.into())
                    .or_insert(v.to_string());
            }
        }
        let stored = super::ingest::ingest_into(db, std::slice::from_ref(result), &ingest_opts);
        return Ok(stored_status(ExitStatus::from(out.end), db, result, stored));
    }
    Ok(ExitStatus::from(out.end))
}

/// Memory one more request of a `--duration` closed loop keeps until the summary, bytes: its
/// record ([`crate::limits::REQUEST_BYTES`]) and, with `--save-detailed`, its output tokens
/// whole (what the client keeps of one response, `kept_response_bytes`; without it only their
/// ITL gaps, at most 8 MiB in all, which the check already counts).
pub fn duration_record_bytes(opts: &inferbench_loadgen::options::BenchOptions) -> u64 {
    let tokens = if opts.save_detailed {
        inferbench_loadgen::options::limits::kept_response_bytes(opts.estimated_output_tokens())
    } else {
        0
    };
    crate::limits::REQUEST_BYTES.saturating_add(tokens)
}

/// What the memory check of a `--duration` run with no `--request-rate` (a closed loop: as
/// many requests as the server answers) cannot know, for a refusal's end; `None` for any other
/// run. Names `--duration`, the requests counted and what each further one keeps (issue 39,
/// fresh tester's finding 3: the advice counted 640 requests, the run made 9,018 and ran out
/// of memory).
pub fn duration_unknown(opts: &inferbench_loadgen::options::BenchOptions) -> Option<String> {
    let d = opts.duration.filter(|_| opts.request_rate.is_none())?;
    Some(format!(
        "--duration {} s with no --request-rate sends as many requests as the server answers, \
         not known up front: this counts {} (--num-prompts and --num-warmups) and each further \
         one keeps about {} KiB until the summary, so the run may need more; pass \
         --request-rate to bound it, or lower --duration",
        d.as_secs_f64(),
        opts.estimated_record_count(),
        duration_record_bytes(opts).div_ceil(1024),
    ))
}

/// The warning of a `--duration` closed loop that passed the memory check under a memory
/// budget: [`duration_unknown`] and how many requests in all the budget holds (the planned
/// ones and the further ones at [`duration_record_bytes`] each), and, under `ulimit -v`, that
/// the run stops sending there ([`record_bound`]); `None` for any other run or with no budget
/// known. `extra`: bytes the check counted besides [`crate::limits::bench_need`] (a dataset's
/// prompts and read room, a tokenizer file).
pub fn duration_records_note(
    opts: &inferbench_loadgen::options::BenchOptions,
    limits: &crate::limits::Limits,
    extra: u64,
) -> Option<String> {
    let unknown = duration_unknown(opts)?;
    let budget = limits.memory?;
    let need = crate::limits::bench_need(opts)?;
    let spare = budget
        .bytes
        .saturating_sub(need.memory(limits.base))
        .saturating_sub(extra);
    let more = spare / duration_record_bytes(opts).max(1);
    let stops = match record_bound(opts, limits, extra) {
        Some(b) => format!(
            ": the run stops sending after {} requests, as at the end of its duration, and \
             writes its summary",
            b.records
        ),
        None => String::new(),
    };
    Some(format!(
        "{unknown}; {} holds about {} requests in all{stops}",
        budget.what(),
        opts.estimated_record_count().saturating_add(more),
    ))
}

/// The record bound of a `--duration` run under an address-space limit (`ulimit -v`,
/// `RLIMIT_AS`; issue 39): the records it may keep before it stops sending
/// ([`inferbench_loadgen::options::BenchOptions::record_bound`]): those the up-front check
/// counted ([`BenchOptions::estimated_record_count`]) and as many more as the room the check
/// leaves under the limit holds at [`duration_record_bytes`] each (the same per-record memory
/// as the estimate, `BenchOptions::estimated_memory_bytes`). `None` for a count run or without
/// such a limit (the machine's available memory is no limit the process aborts at).
/// `extra`: bytes the check counted besides [`crate::limits::bench_need`].
pub fn record_bound(
    opts: &BenchOptions,
    limits: &crate::limits::Limits,
    extra: u64,
) -> Option<inferbench_loadgen::options::RecordBound> {
    opts.duration?;
    let limit = match limits.memory {
        Some(b) if b.bound == inferbench_loadgen::options::MemoryBound::AddressSpace => b.bytes,
        _ => inferbench_loadgen::options::address_space_limit()?,
    };
    let need = crate::limits::bench_need(opts)?;
    let spare = limit
        .saturating_sub(need.memory(limits.base))
        .saturating_sub(extra);
    let more = spare / duration_record_bytes(opts).max(1);
    Some(inferbench_loadgen::options::RecordBound {
        records: opts.estimated_record_count().saturating_add(more),
        limit_bytes: limit,
    })
}

/// Bytes the up-front memory check ([`memory_plan`]) counts besides
/// [`crate::limits::bench_need`]: a dataset's read room and its prompts as its loader counts
/// them (`dataset`, [`crate::limits::dataset_bytes`]) and a tokenizer file's load.
fn extra_bytes(opts: &BenchOptions, dataset: u64) -> u64 {
    let input = if opts.dataset_name != inferbench_loadgen::options::DatasetName::Random {
        crate::limits::input_room(opts.dataset_path.as_ref().map(std::slice::from_ref))
            .saturating_add(dataset)
    } else {
        0
    };
    input.saturating_add(crate::limits::tokenizer_bytes(&opts.tokenizer))
}

/// The up-front memory checks of a `bench` point under `limits` and the room they leave a
/// dataset's prompts (the loader's budget, `BenchOptions::prompt_memory`; `None` for random
/// prompts or with no budget known). A dataset file's read room and its prompts are counted
/// up front, so the "N fits" advice holds with the file (trial of issue 39, finding 2); when
/// not one stream fits beside the whole file's prompts, they are left to the loader, which
/// says how many fit. A tokenizer file's load is counted too (issue 39 §2), and what it keeps
/// is left out of the prompts' room. A pure function of the options and `limits` (the
/// advised `ulimit -v` of a refusal is found by running it at other limits:
/// [`crate::limits::advise_none_fits`]). `dataset`: the dataset's prompts as its loader counts
/// them ([`crate::limits::dataset_bytes`], read once by the caller).
///
/// # Errors
/// The run does not fit (open files, memory, the tokenizer): the refusal (exit 2).
fn memory_plan(
    opts: &BenchOptions,
    dataset_bytes: u64,
    limits: &crate::limits::Limits,
) -> anyhow::Result<Option<u64>> {
    let mut need = crate::limits::bench_need(opts);
    let dataset = opts.dataset_name != inferbench_loadgen::options::DatasetName::Random;
    let mut content = 0;
    if dataset {
        let room = crate::limits::input_room(opts.dataset_path.as_ref().map(std::slice::from_ref));
        content = dataset_bytes;
        if let Some(n) = need.as_mut() {
            n.prompt_bytes = n.prompt_bytes.saturating_add(room).saturating_add(content);
            if crate::limits::most_streams(n, limits) == 0 {
                n.prompt_bytes -= content;
                content = 0;
            }
        }
    }
    if let Some(n) = &need {
        crate::limits::check(n, limits).map_err(anyhow::Error::msg)?;
    }
    if let Some(n) = need.as_mut() {
        let tok = crate::limits::refuse_tokenizer(&opts.tokenizer, n, limits)?;
        n.prompt_bytes = n.prompt_bytes.saturating_add(tok);
    }
    Ok(match (dataset, need) {
        (true, Some(need)) => {
            crate::limits::prompt_room(&need, limits).map(|r| r.saturating_add(content))
        }
        _ => None,
    })
}

/// The exit status of a point that ran as `ran` and whose result was then stored into `db`
/// with outcome `stored` ([`super::ingest::ingest_into`]'s): a store that failed, skipped the
/// result or stored nothing is never exit 0 (trial of issue 39's leftovers, finding 1:
/// "nothing ingested … skipped", yet exit 0). Such a store is said on stderr with the result
/// file to ingest later, and ends with [`ExitStatus::Failed`] (the point ran: not 2, which
/// means nothing was run); a worse status of the run itself (3, 130) is kept. An error that
/// is the file-size limit names `ulimit -f` ([`crate::fsize::explain`]).
pub fn stored_status(
    ran: ExitStatus,
    db: &str,
    result: &std::path::Path,
    stored: anyhow::Result<(bool, bool)>,
) -> ExitStatus {
    let why = match stored {
        Ok((false, _)) => return ran,
        Ok((true, _)) => "the result was skipped or nothing was stored (said above)".to_string(),
        Err(e) => crate::fsize::explain(&inferbench_core::error_chain(e.as_ref())),
    };
    errln!(
        "error: storing the point in {} failed: {why}; the result is kept in {} (store it \
         later with `inferbench ingest {} --db {}`)",
        inferbench_store::redact(db),
        result.display(),
        result.display(),
        inferbench_store::redact(db)
    );
    if ran == ExitStatus::Ok {
        ExitStatus::Failed
    } else {
        ran
    }
}

/// The files a `bench` point writes, each with the bytes it holds at least and at most
/// ([`crate::fsize`]): `--save-requests` (at least a record per profile request with
/// `--random-output-len` chunks each for random prompts; at most a record per request,
/// warmups included, with the longest drawn output length, or a dataset's `--output-len` or its
/// own longest output length, [`crate::limits::output_tokens_most`];
/// none counted under a closed-loop `--duration`, whose request count is not known), the
/// result file (its per-request arrays with `--save-detailed`), and the `--db` file (its rows
/// per request).
pub fn planned_files(opts: &BenchOptions, db: Option<&str>) -> Vec<crate::fsize::Planned> {
    use crate::fsize::{
        db_bytes, db_upper_bytes, records_bytes, records_upper_bytes, result_upper_bytes, Planned,
        RESULT_BYTES,
    };
    let mut v = Vec::new();
    let known = opts.duration.is_none() || opts.request_rate.is_some_and(f64::is_finite);
    // Every record the run keeps (warmups included) and the most output tokens of one.
    let records = if known {
        opts.estimated_record_count()
    } else {
        0
    };
    // A dataset's own lengths when no --output-len caps them (issue 39's leftovers, 2: a
    // dataset run was estimated without output tokens and hit `ulimit -f` midway).
    let osl_most = if opts.save_requests.is_some() || opts.save_detailed {
        crate::limits::output_tokens_most(opts)
    } else {
        opts.estimated_output_tokens()
    };
    let profile = match opts.duration {
        None => opts.resolved_num_prompts(),
        Some(_) => records.saturating_sub(opts.resolved_num_warmups()),
    };
    if opts.save_requests.is_some() && known {
        let (least, osl) = match (opts.duration, &opts.dataset_name) {
            (Some(_), _) => (0, 0),
            (None, inferbench_loadgen::options::DatasetName::Random) => (
                opts.resolved_num_prompts(),
                u64::from(opts.random_output_len),
            ),
            (None, _) => (opts.resolved_num_prompts(), 0),
        };
        v.push(Planned::between(
            "--save-requests",
            records_bytes(least, osl),
            records_upper_bytes(records, osl_most),
        ));
    }
    if opts.save_result {
        v.push(Planned::between(
            "the result file (--save-result)",
            RESULT_BYTES,
            result_upper_bytes(opts.save_detailed, profile, osl_most),
        ));
    }
    // The /metrics scrapes: their number grows with the point's duration, so they are bounded
    // (`fsize::server_metrics_room`, thinned to fit) rather than estimated; the plan keeps room
    // for SERVER_METRICS_PLANNED_BYTES of them, so the advised limit leaves them that much.
    let scrapes = opts.server_metrics && opts.result_dir.is_some();
    if scrapes {
        v.push(Planned::between(
            "the result's server_metrics.jsonl",
            0,
            SERVER_METRICS_PLANNED_BYTES,
        ));
    }
    if let Some(db) = db {
        if let (Some(least), Some(most)) = (db_bytes(db), db_upper_bytes(db, records)) {
            let rows = if scrapes {
                SERVER_METRICS_PLANNED_BYTES * crate::fsize::DB_BYTES_PER_SERVER_METRICS_BYTE
            } else {
                0
            };
            v.push(Planned::between("--db", least, most.saturating_add(rows)));
        }
    }
    v
}

/// The room the plan of a point keeps for its `server_metrics.jsonl` (and, with `--db`, for
/// its rows), bytes: 256 KiB, a dozen scrapes of a vLLM server's `/metrics` (the sim's are
/// 18 KiB each), so a run at the `ulimit -f` a refusal advises keeps at least that much of
/// them (more when the limit leaves more: [`crate::fsize::server_metrics_room`]).
pub const SERVER_METRICS_PLANNED_BYTES: u64 = 256 << 10;

/// The most bytes the `server_metrics.jsonl` of a point with `files` planned may hold under
/// the file-size limit `limit` ([`crate::fsize::server_metrics_room`], what the `--db` file's
/// upper estimate without the scrapes' rows leaves them).
fn scrapes_room(files: &[crate::fsize::Planned], limit: Option<u64>) -> Option<u64> {
    let rows = SERVER_METRICS_PLANNED_BYTES * crate::fsize::DB_BYTES_PER_SERVER_METRICS_BYTE;
    let db = files
        .iter()
        .find(|p| p.flag == "--db")
        .map(|p| p.upper.saturating_sub(rows));
    crate::fsize::server_metrics_room(limit, db)
}

/// No output of the point (records, result and side files, the `--db` file) names the same
/// file as another or as an input (the dataset, the tokenizer, `--job-identity`, `--tls-ca`),
/// before any request (trial of issue 39, finding 1: `--save-requests` over the `--db` file
/// turned the database into NDJSON).
///
/// # Errors
/// The folders a `bench` run creates (with their parents) before its first request:
/// `--result-dir`, and the folder of `--save-requests`.
fn planned_folders(flags: &BenchFlags) -> Vec<&std::path::Path> {
    let records = (flags.save_requests.as_deref()).and_then(std::path::Path::parent);
    (flags.result_dir.as_deref().into_iter())
        .chain(records.filter(|p| !p.as_os_str().is_empty()))
        .collect()
}

/// Whether `db` could be stored into after the run ([`inferbench_store::Store::check_target`]),
/// seeing the folders the run will create (issue 39, fresh tester's finding 4: `--db r/x.db
/// --result-dir r`, `r` not there yet, was refused although `bench` creates `--result-dir`
/// with its parents before the first request): a SQLite file whose missing folder is one of
/// the `planned` folders ([`planned_folders`]) or a parent of one is checked as that folder
/// will be, its nearest existing ancestor probed ([`inferbench_loadgen::output::dir_uncreatable`]).
///
/// # Errors
/// `check_target`'s, or `--db DB: why` for a planned folder that could not be created.
fn check_db_target(db: &str, planned: &[&std::path::Path]) -> anyhow::Result<()> {
    use inferbench_loadgen::samefile::resolve_future;
    use std::path::Path;
    inferbench_store::refuse_sqlite_uri(db)?;
    let folder = match Path::new(db).parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let missing = std::fs::symlink_metadata(folder).is_err();
    if missing && !inferbench_store::is_postgres(db) {
        let created = resolve_future(folder).ok().flatten().is_some_and(|f| {
            (planned.iter())
                .filter_map(|d| resolve_future(d).ok().flatten())
                .any(|d| d.starts_with(&f))
        });
        if created {
            return match inferbench_loadgen::output::dir_uncreatable(folder) {
                Some(why) => anyhow::bail!("--db {db}: {why}"),
                None => Ok(()),
            };
        }
    }
    Ok(inferbench_store::Store::check_target(db)?)
}

/// The first two flags naming one file ([`samefile::check_distinct`]).
fn check_same_files(
    opts: &BenchOptions,
    db: Option<&str>,
    identity_file: Option<PathBuf>,
) -> anyhow::Result<()> {
    use inferbench_loadgen::samefile::{self, NamedPath};
    let mut paths = samefile::bench_paths(opts);
    paths.extend(identity_file.map(|p| NamedPath::input("--job-identity", p)));
    paths.extend(
        opts.tls
            .ca_file
            .clone()
            .map(|p| NamedPath::input("--tls-ca", p)),
    );
    paths.extend(db.into_iter().flat_map(samefile::db_path));
    samefile::check_distinct(&paths)
}

/// Stores one point's result in `db` as the plain `bench --db` does: nothing when the server
/// never answered (said on stderr), ISL/OSL from `nominal` when no request finished.
fn store_point(
    db: &str,
    out: &BenchOutcome,
    nominal: Option<(u32, u32)>,
    ingest_opts: &inferbench_store::IngestOptions,
) -> anyhow::Result<()> {
    if inferbench_loadgen::output::never_answered(&out.summary) {
        errln!(
            "inferbench: nothing stored in {}: the server never answered",
            inferbench_store::redact(db)
        );
        return Ok(());
    }
    let Some(result) = &out.result_path else {
        return Ok(());
    };
    let mut ingest_opts = ingest_opts.clone();
    if let (0, Some((isl, osl))) = (out.summary.completed, nominal) {
        for (k, v) in [("isl", isl), ("osl", osl)] {
            ingest_opts
                .overrides
                .entry(k.into())
                .or_insert(v.to_string());
        }
    }
    let stored = super::ingest::ingest_into(db, std::slice::from_ref(result), &ingest_opts);
    match stored_status(ExitStatus::Ok, db, result, stored) {
        ExitStatus::Ok => Ok(()),
        status => Err(super::StatusError {
            status,
            message: format!("stopping the search: probe {} not stored", result.display()),
        }
        .into()),
    }
}

/// What the search keeps of one probe.
struct ProbeData {
    /// The point's `report` columns ([`slo::point_values`], per-GPU by the job identity).
    values: BTreeMap<String, f64>,
    /// Why the point is invalid (its verdict), `None` for a valid point.
    invalid: Option<String>,
    /// Its result file.
    result: Option<PathBuf>,
}

/// The GPUs of the job identity (`--job-identity`, `--inferencex-env`): tp·pp·pcp of one
/// server, prefill + decode GPUs of a disaggregated one; 1 without an identity.
fn identity_gpus(opts: &BenchOptions) -> u64 {
    use inferbench_core::summary::Topology;
    match opts.job_identity.as_ref().map(|id| &id.topology) {
        Some(Topology::SingleNode { parallelism, .. }) => parallelism.gpus().max(1),
        Some(Topology::MultiNode {
            prefill_gpus,
            decode_gpus,
            ..
        }) => (prefill_gpus + decode_gpus).max(1),
        None => 1,
    }
}

/// Refuses (exit 2, before the first probe) a search whose largest probe (`space.hi`: its
/// `--max-concurrency`, or its `--request-rate` at `--max-concurrency`) this process cannot
/// hold, by the plain point's checks ([`memory_plan`]: `ulimit -n`, `ulimit -v`, the dataset's
/// prompts); a concurrency search names the largest upper end that fits
/// (`--search-concurrency LO..N`), found by bisection over the probes' own checks.
///
/// # Errors
/// The largest probe's refusal, led by the range and ended by what fits.
fn refuse_search_beyond(
    opts: &BenchOptions,
    space: SearchSpace,
    by_rate: bool,
    flag: &str,
    range: &str,
) -> anyhow::Result<()> {
    let limits = crate::limits::raise_open_files();
    let probe = |load: f64| {
        let mut o = opts.clone();
        if by_rate {
            o.request_rate = Some(load);
        } else {
            o.max_concurrency = Some(load as u32);
        }
        o
    };
    let fits = |o: &BenchOptions| memory_plan(o, crate::limits::dataset_bytes(o), &limits);
    let top = probe(space.hi);
    let Err(e) = fits(&top) else {
        return Ok(());
    };
    let e = crate::limits::advise_no_stream(e, &limits, |at| {
        memory_plan(&top, crate::limits::dataset_bytes(&top), at).is_ok()
    });
    let text = format!("{e:#}");
    let head = text.strip_suffix(" (nothing was sent)").unwrap_or(&text);
    let unit = if by_rate {
        "request rate"
    } else {
        "concurrency"
    };
    let mut way = String::new();
    if !by_rate {
        // The largest whole concurrency in LO..HI whose probe passes (monotone in it).
        let (lo, hi) = (space.lo.ceil() as u64, space.hi.floor() as u64);
        if fits(&probe(lo as f64)).is_ok() {
            let (mut ok, mut bad) = (lo, hi);
            while bad - ok > 1 {
                let mid = ok + (bad - ok) / 2;
                if fits(&probe(mid as f64)).is_ok() {
                    ok = mid;
                } else {
                    bad = mid;
                }
            }
            way = format!("; `{flag} {lo}..{ok}` fits");
        } else {
            way = format!("; not even its lower end ({unit} {lo}) fits");
        }
    }
    anyhow::bail!(
        "{flag} {range}: its largest probe ({unit} {}) cannot run in this process: {head}{way} \
         (nothing was sent)",
        num(space.hi)
    )
}

/// Why a probe's result cannot be read as the server's (its summary's extras `x`): some of its requests (profile or
/// warmup) failed `client_resource`, the client's own limit (open files, memory, local ports),
/// named with the count and the first such error; `None` when none did. `unit` and `load` name
/// the probe.
fn client_limit_failures(
    x: &inferbench_core::summary::Extras,
    unit: &str,
    load: f64,
) -> Option<String> {
    let class = inferbench_core::record::ErrorClass::ClientResource.as_str();
    let profile = x.errors_by_class.get(class).copied().unwrap_or(0);
    let warmup = x.warmup_errors_by_class.get(class).copied().unwrap_or(0);
    if profile + warmup == 0 {
        return None;
    }
    let sample = x
        .error_samples
        .get(class)
        .map(|m| format!(" (first: {m})"))
        .unwrap_or_default();
    Some(format!(
        "the probe at {unit} {} failed {} on the client's own limit (`{class}`{sample}): that \
         says nothing of the server, so the search stops with no capacity; raise the client's \
         limit (`ulimit -n`, `ulimit -v`) or search a lower range (its result file is kept)",
        num(load),
        match (profile, warmup) {
            (p, 0) => inferbench_core::count(p as usize, "request"),
            (0, w) => inferbench_core::count(w as usize, "warmup"),
            (p, w) => format!(
                "{} and {}",
                inferbench_core::count(p as usize, "request"),
                inferbench_core::count(w as usize, "warmup")
            ),
        }
    ))
}

/// `x` with up to 4 significant decimals, as the summary lines print numbers.
fn num(x: f64) -> String {
    let s = format!("{x:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// `bench --slo … --search-concurrency LO..HI` (or `--search-request-rate`): one full point per
/// probe ([`slo::search_max`]), each saved (and stored with `--db`) like any point; then the
/// capacity printed (stdout) and written as `inferbench.capacity` to `--result-filename` (default
/// `capacity-<date>.json`) in `--result-dir`. Exit 0 when a capacity was found (or the whole
/// range meets the SLOs), 1 when no load in the range meets them, the probe budget ran out or a
/// probe failed on the client's own limit (`client_resource`: no capacity file), 130 / 3 when
/// a probe was interrupted or found the server unreachable; 2 for bad flags or a range whose
/// largest probe this process cannot hold.
fn run_search(
    flags: BenchFlags,
    search: SearchArgs,
    tls: inferbench_client::tls::TlsOptions,
) -> anyhow::Result<ExitStatus> {
    let slos = search
        .slo
        .iter()
        .map(|e| Slo::parse(e))
        .collect::<Result<Vec<_>, _>>()?;
    let (by_rate, range) = match (&search.search_concurrency, &search.search_request_rate) {
        (Some(r), None) => (false, r),
        (None, Some(r)) => (true, r),
        _ => {
            anyhow::bail!("--slo needs --search-concurrency LO..HI or --search-request-rate LO..HI")
        }
    };
    let flag = if by_rate {
        "--search-request-rate"
    } else {
        "--search-concurrency"
    };
    let (lo, hi) = slo::parse_range(range).with_context(|| format!("{flag} {range}"))?;
    let space = SearchSpace {
        lo,
        hi,
        integer: !by_rate,
        resolution: search.search_resolution,
        max_probes: search.search_max_probes,
    };
    if !by_rate && flags.max_concurrency.is_some() {
        anyhow::bail!(
            "--search-concurrency sets each probe's --max-concurrency; drop --max-concurrency"
        );
    }
    let mut flags = flags;
    let db = flags.db.take();
    if let Some(db) = &db {
        check_db_target(db, &planned_folders(&flags))?;
    }
    let ingest_opts = super::db::options(&flags.set)?;
    let capacity_name = flags.result_filename.take();
    let identity_file = flags.job_identity.clone();
    let mut opts = flags.into_options()?;
    opts.tls = tls;
    // A search is many full points: every probe keeps its result.
    opts.save_result = true;
    check_same_files(&opts, db.as_deref(), identity_file)?;
    // Every probe's files within `ulimit -f`, before the first probe (as the plain point's).
    let files = planned_files(&opts, db.as_deref());
    crate::fsize::check(&files, crate::fsize::limit()).map_err(anyhow::Error::msg)?;
    // The /metrics scrapes within what the limit leaves the file and the database's rows of
    // it (issue 39's leftovers, 2): their number is not known up front.
    opts.server_metrics_max_bytes = scrapes_room(&files, crate::fsize::limit());
    // Each probe is a fresh run: the same random prompts again would be served from the
    // server's prefix cache (and the probe marked invalid), so every probe's prompts carry
    // their own run marker.
    opts.cache_bust |= opts.dataset_name == inferbench_loadgen::options::DatasetName::Random;
    let nominal = (opts.dataset_name == inferbench_loadgen::options::DatasetName::Random)
        .then_some((opts.random_input_len, opts.random_output_len));
    let gpus = identity_gpus(&opts);
    // The range's largest probe against `ulimit -n` / `ulimit -v` before the first probe, as a
    // plain point is checked (issue 39, fresh tester's finding 2: unchecked, probes above the
    // client's open-file limit failed `client_resource` and the search called that capacity).
    refuse_search_beyond(&opts, space, by_rate, flag, range)?;
    let rt = super::runtime()?;
    if opts.model.trim().is_empty() {
        opts.validate()?;
        opts.model = rt.block_on(inferbench_loadgen::hints::served_model(
            &opts.base_url,
            &opts.reach(),
        ))?;
        errln!(
            "inferbench: {}",
            inferbench_loadgen::hints::served_model_note(&opts.model)
        );
    }
    if let Some(n) = opts.range_notice() {
        errln!("inferbench: {n}");
    }
    let cancel = rt.block_on(async {
        super::shutdown_token("inferbench: interrupted; finishing the probe and saving it")
    });
    let unit = if by_rate {
        "request rate"
    } else {
        "concurrency"
    };
    let mut stop_status = ExitStatus::Ok;
    let mut first_date: Option<String> = None;
    let mut failure: Option<anyhow::Error> = None;
    let mut client_limit: Option<String> = None;
    let result = slo::search_max(space, |load| {
        let mut o = opts.clone();
        let tag = if by_rate {
            o.request_rate = Some(load);
            format!("rate{}", num(load))
        } else {
            o.max_concurrency = Some(load as u32);
            format!("conc{}", load as u32)
        };
        if let Some(name) = &capacity_name {
            let stem = name.strip_suffix(".json").unwrap_or(name);
            o.result_filename = Some(format!("{stem}-{tag}.json"));
        }
        errln!("inferbench: probe at {unit} {}", num(load));
        let out = match rt.block_on(run_bench(o, cancel.clone())) {
            Ok(out) => out,
            Err(e) => {
                failure = Some(e);
                return None;
            }
        };
        first_date.get_or_insert_with(|| out.summary.date.clone());
        for n in &out.notes {
            errln!("inferbench: {}", crate::fsize::explain(n));
        }
        if let Some(db) = &db {
            if let Err(e) = store_point(db, &out, nominal, &ingest_opts) {
                failure = Some(e);
                return None;
            }
        }
        // Requests that failed on the client's own limit say nothing of the server: such a
        // probe is never read as meeting or failing the SLOs (issue 39, fresh tester's
        // finding 2); the search stops with no capacity.
        if let Some(why) = client_limit_failures(&out.summary.inferbench, unit, load) {
            client_limit = Some(why);
            return None;
        }
        let mut values = slo::point_values(&out.summary, gpus);
        if let Some(id) = &opts.job_identity {
            // InferenceX's per-GPU rule (disaggregated layouts divide differently).
            if let Ok(agg) = inferbench_core::summary::inferencex_aggregate(&out.summary, id) {
                for k in ["tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu"] {
                    if let Some(x) = agg.get(k).and_then(Value::as_f64) {
                        values.insert(k.to_string(), x);
                    }
                }
            }
        }
        // Invalid: a failed verdict (error rate, nothing measured, …) or timings the summary
        // marks as no valid measurement (prefix-cache hits, a client- or server-bound run).
        let invalid = out
            .verdict
            .as_ref()
            .map(|v| v.note.clone())
            .or_else(|| out.summary.inferbench.invalid_reason.clone());
        let meets = invalid.is_none() && slo::meets_all(&slos, &values);
        let said: Vec<String> = slos
            .iter()
            .map(|s| match values.get(&s.metric) {
                Some(v) => format!("{} {}", s.metric, num(*v)),
                None => format!("{} n/a", s.metric),
            })
            .collect();
        errln!(
            "inferbench: {unit} {}: {} ({}){}",
            num(load),
            if meets {
                "meets the SLOs"
            } else {
                "fails the SLOs"
            },
            said.join(", "),
            invalid
                .as_ref()
                .map(|n| format!("; invalid point: {n}"))
                .unwrap_or_default()
        );
        if let Some(kind @ (VerdictKind::Interrupted | VerdictKind::ServerUnreachable)) =
            out.verdict.as_ref().map(|v| v.kind)
        {
            stop_status = if kind == VerdictKind::Interrupted {
                ExitStatus::Interrupted
            } else {
                ExitStatus::Unreachable
            };
            return None;
        }
        Some((
            meets,
            ProbeData {
                values,
                invalid,
                result: out.result_path.clone(),
            },
        ))
    })?;
    rt.shutdown_background();
    if let Some(e) = failure {
        return Err(e);
    }
    if let Some(why) = client_limit {
        return Err(super::exit::StatusError {
            status: ExitStatus::Failed,
            message: why,
        }
        .into());
    }
    let load_key = if by_rate {
        "request_rate"
    } else {
        "concurrency"
    };
    let users = |load: f64| -> Value {
        if by_rate {
            opts.max_concurrency
                .map_or(Value::Null, |c| json!(f64::from(c) / gpus as f64))
        } else {
            json!(load / gpus as f64)
        }
    };
    let load_json = |load: f64| -> Value {
        if by_rate {
            json!(load)
        } else {
            json!(load as u64)
        }
    };
    let point = |p: &slo::Probe<ProbeData>| -> Value {
        json!({
            load_key: load_json(p.load),
            "meets_slo": p.meets,
            "invalid": p.data.invalid,
            "tput_per_gpu": p.data.values.get("tput_per_gpu"),
            "users_per_gpu": users(p.load),
            "values": slos.iter().map(|s| (s.metric.clone(), json!(p.data.values.get(&s.metric)))).collect::<serde_json::Map<_, _>>(),
            "result_file": p.data.result.as_ref().map(|r| r.display().to_string()),
        })
    };
    let best = result.best.map(|i| &result.probes[i]);
    let next = result.next.map(|i| &result.probes[i]);
    let end = match result.end {
        SearchEnd::Found => "found",
        SearchEnd::AllMeet => "whole_range_meets",
        SearchEnd::NoneMeet => "none_meets",
        SearchEnd::Budget => "probe_budget_spent",
        SearchEnd::Stopped => "stopped",
    };
    let max_key = if by_rate {
        "max_request_rate"
    } else {
        "max_concurrency"
    };
    let mut next_json = next.map(point);
    if let Some(Value::Object(m)) = &mut next_json {
        m.insert("next_fails_slo".into(), true.into());
    }
    let capacity = json!({
        "slos": slos.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        "search": load_key,
        "range": [load_json(space.lo), load_json(space.hi)],
        "resolution": space.resolution,
        "end": end,
        "gpus": gpus,
        max_key: best.map(|p| load_json(p.load)),
        "tput_per_gpu": best.and_then(|p| p.data.values.get("tput_per_gpu")),
        "users_per_gpu": best.map_or(Value::Null, |p| users(p.load)),
        "meets_slo": best.is_some(),
        "values": best.map(|p| point(p)["values"].clone()),
        "result_file": best.map(|p| point(p)["result_file"].clone()),
        "next": next_json,
        "probes": result.probes.len(),
        "points": result.probes.iter().map(point).collect::<Vec<_>>(),
    });
    let doc = json!({ "inferbench": { "schema_version": 1, "capacity": capacity } });
    // Printed.
    outln!("{:=^60}", " SLO capacity ");
    outln!("{:<36}{}", "SLOs:", search.slo.join(", "));
    outln!(
        "{:<36}{} {}..{}, {}",
        "Searched:",
        unit,
        num(space.lo),
        num(space.hi),
        inferbench_core::count(result.probes.len(), "probe")
    );
    let per_gpu = |p: &slo::Probe<ProbeData>| {
        p.data
            .values
            .get("tput_per_gpu")
            .map_or("n/a".to_string(), |x| num(*x))
    };
    match best {
        Some(p) => {
            outln!(
                "{:<36}{} (meets every SLO)",
                format!("Max {unit}:"),
                num(p.load)
            );
            outln!("{:<36}{}", "Throughput per GPU (tok/s/GPU):", per_gpu(p));
            if let Some(u) = users(p.load).as_f64() {
                outln!("{:<36}{}", "Users per GPU:", num(u));
            }
        }
        None => outln!(
            "{:<36}none in the range meets every SLO",
            format!("Max {unit}:")
        ),
    }
    if let Some(p) = next {
        outln!("{:<36}{} fails the SLOs", "Next probe:", num(p.load));
    }
    let note = match result.end {
        SearchEnd::Found => None,
        SearchEnd::AllMeet => Some(format!(
            "the whole range meets the SLOs: the capacity is at least {} (not extrapolated; widen the range)",
            num(space.hi)
        )),
        SearchEnd::NoneMeet => Some(format!("{unit} {} already fails the SLOs", num(space.lo))),
        SearchEnd::Budget => Some(format!(
            "stopped after {} before the bracket closed (--search-max-probes)",
            inferbench_core::count(result.probes.len(), "probe")
        )),
        SearchEnd::Stopped => Some("the search stopped early".to_string()),
    };
    if let Some(n) = &note {
        outln!("Note: {n}");
    }
    outln!("{:=<60}", "");
    // Stored.
    let name = capacity_name.unwrap_or_else(|| {
        format!(
            "capacity-{}.json",
            first_date.as_deref().unwrap_or("unknown")
        )
    });
    let dir = opts
        .result_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("."));
    let path = dir.join(name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let text = serde_json::to_string_pretty(&doc)? + "\n";
    inferbench_loadgen::output::write_file(&path, text.as_bytes())?;
    errln!("wrote {}", path.display());
    Ok(match result.end {
        SearchEnd::Found | SearchEnd::AllMeet => ExitStatus::Ok,
        SearchEnd::NoneMeet | SearchEnd::Budget => ExitStatus::Failed,
        SearchEnd::Stopped if stop_status != ExitStatus::Ok => stop_status,
        SearchEnd::Stopped => ExitStatus::Failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferbench_loadgen::options::{MemoryBound, MemoryBudget, RecordBound};

    fn limits(bytes: u64, bound: MemoryBound) -> crate::limits::Limits {
        crate::limits::Limits {
            open_files: 1 << 20,
            open_files_hard: 1 << 20,
            memory: Some(MemoryBudget { bytes, bound }),
            threads: 6,
            base: crate::limits::base_bytes(2, 4),
            inherited_files: 0,
        }
    }

    /// Issue 39: a closed-loop `--duration` run under `ulimit -v` may keep the records its
    /// check counted (160: --num-prompts 10 × 16) and as many more as the room left holds at
    /// 13 KiB each (1 KiB + 256 tokens × 48 bytes with --save-detailed); a count run, or the
    /// machine's memory as the budget with no `ulimit -v`, has no bound.
    #[test]
    fn a_duration_run_keeps_what_the_address_space_limit_holds() {
        let opts = BenchOptions {
            max_concurrency: Some(16),
            num_warmups: Some(0),
            random_input_len: 64,
            random_output_len: 256,
            duration: Some(std::time::Duration::from_secs(60)),
            save_detailed: true,
            ..Default::default()
        };
        // A record and what the client keeps of a 256-token response (the kept rule:
        // inferbench_client::kept, f18).
        assert_eq!(
            duration_record_bytes(&opts),
            1024 + inferbench_loadgen::options::limits::kept_response_bytes(256)
        );
        assert_eq!(duration_record_bytes(&opts), 32_512);
        let need = crate::limits::bench_need(&opts)
            .unwrap()
            .memory(crate::limits::base_bytes(2, 4));
        let limit = need + 100 * 32_512 + 32_511;
        assert_eq!(
            record_bound(&opts, &limits(limit, MemoryBound::AddressSpace), 0),
            Some(RecordBound {
                records: 160 + 100,
                limit_bytes: limit
            })
        );
        // What the check counted besides (a tokenizer, a dataset) is left out of the room.
        assert_eq!(
            record_bound(&opts, &limits(limit, MemoryBound::AddressSpace), 32_512)
                .map(|b| b.records),
            Some(160 + 99)
        );
        let count = BenchOptions {
            duration: None,
            ..opts.clone()
        };
        assert_eq!(
            record_bound(&count, &limits(limit, MemoryBound::AddressSpace), 0),
            None
        );
        let e = RecordBound {
            records: 260,
            limit_bytes: 200_000 << 10,
        }
        .reason(260);
        assert_eq!(
            e,
            "stopped after 260 requests: the records kept would outgrow ulimit -v (200000 KiB)"
        );
    }

    /// Issue 39, fresh tester's finding 2: a probe whose requests failed `client_resource`
    /// (conc 109 under `ulimit -n 100`: 90 % "Too many open files") stops the search, naming
    /// the client's limit; the server's own failures (`http_status`) do not.
    #[test]
    fn a_probe_failing_on_the_clients_limit_is_not_the_servers() {
        let mut x = inferbench_core::summary::Extras::default();
        assert_eq!(client_limit_failures(&x, "concurrency", 109.0), None);
        x.errors_by_class.insert("http_status".into(), 5);
        assert_eq!(client_limit_failures(&x, "concurrency", 109.0), None);
        x.errors_by_class.insert("client_resource".into(), 980);
        x.warmup_errors_by_class
            .insert("client_resource".into(), 196);
        x.error_samples.insert(
            "client_resource".into(),
            "connect: Too many open files (os error 24)".into(),
        );
        assert_eq!(
            client_limit_failures(&x, "concurrency", 109.0).as_deref(),
            Some(
                "the probe at concurrency 109 failed 980 requests and 196 warmups on the \
                 client's own limit (`client_resource` (first: connect: Too many open files (os \
                 error 24))): that says nothing of the server, so the search stops with no \
                 capacity; raise the client's limit (`ulimit -n`, `ulimit -v`) or search a \
                 lower range (its result file is kept)"
            )
        );
        x.errors_by_class.remove("client_resource");
        x.error_samples.clear();
        assert_eq!(
            client_limit_failures(&x, "request rate", 2.5).as_deref(),
            Some(
                "the probe at request rate 2.5 failed 196 warmups on the client's own limit \
                 (`client_resource`): that says nothing of the server, so the search stops \
                 with no capacity; raise the client's limit (`ulimit -n`, `ulimit -v`) or \
                 search a lower range (its result file is kept)"
            )
        );
    }
}
