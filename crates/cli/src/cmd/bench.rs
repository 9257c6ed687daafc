//! `inferbench bench`: one load point. Flags (vLLM `bench serve` names) and their conversion:
//! `inferbench_loadgen::flags::BenchFlags`; the point: `inferbench_loadgen::run_bench`; `--db`:
//! `inferbench_store` through `ingest`.

use inferbench_loadgen::flags::BenchFlags;
use inferbench_loadgen::{output::render_report, run_bench};

use super::ExitStatus;

/// Runs the subcommand: the point, its report (stdout), the files written and the notes
/// (stderr), then with `--db` the result stored under its result directory's batch.
pub fn run(mut flags: BenchFlags) -> anyhow::Result<ExitStatus> {
    let db = flags.db.take();
    // Where the result will be stored, checked before the benchmark runs.
    if let Some(db) = &db {
        inferbench_store::Store::check_target(db)?;
    }
    let mut ingest_opts = inferbench_store::flags::options(&flags.set)?;
    let mut opts = flags.into_options()?;
    // More streams than this process can hold open or in memory: refused before anything is
    // sent (issue 39 §2: EMFILE on 3 of 4 warmups, or SIGSEGV at 1,000,000 streams).
    // The flags' own ranges first (a number out of range is named as such); the prompts'
    // memory against what is available is checked when the run starts.
    opts.validate_with_memory(None)?;
    crate::limits::refuse_beyond(crate::limits::bench_need(&opts))?;
    opts.save_result |= db.is_some();
    // The requested lengths of random prompts, for a point that measured nothing (the store
    // takes ISL/OSL from the mean lengths of finished requests: trial 14 found an interrupted
    // bench stored as ISL/OSL 0/0, apart from its workload).
    let nominal = (opts.dataset_name == inferbench_loadgen::options::DatasetName::Random)
        .then_some((opts.random_input_len, opts.random_output_len));
    if db.is_some() && opts.job_identity.is_none() {
        if let Some(note) = ingest_opts.missing_identity_note() {
            eprintln!("inferbench: {note}");
            ingest_opts.missing_noted = true;
        }
    }
    let rt = super::runtime()?;
    // The served model is named before the run, as vLLM prints it (trial 20: the line came
    // after the progress lines).
    if opts.model.trim().is_empty() {
        // A bad --base-url is said as such before the server is asked anything (trial 22).
        opts.validate()?;
        opts.model = rt.block_on(inferbench_loadgen::hints::served_model(&opts.base_url))?;
        eprintln!(
            "inferbench: {}",
            inferbench_loadgen::hints::served_model_note(&opts.model)
        );
    }
    // Printed whatever --progress says (trial 33 F11: --disable-tqdm hid it from the vLLM
    // users it is for).
    if let Some(n) = opts.range_notice() {
        eprintln!("inferbench: {n}");
    }
    let out = rt.block_on(async move {
        let cancel = super::shutdown_token(
            "inferbench: interrupted; finishing up and saving finished requests",
        );
        let out = run_bench(opts, cancel).await?;
        print!("{}", render_report(&out.summary));
        for p in [&out.result_path, &out.aggregate_path, &out.records_path]
            .into_iter()
            .flatten()
        {
            eprintln!("wrote {}", p.display());
        }
        for n in &out.notes {
            eprintln!("inferbench: {n}");
        }
        anyhow::Ok(out)
    });
    // Do not wait for abandoned blocking work (prompt preparation cut short by a signal).
    rt.shutdown_background();
    let out = out?;
    // Outside the runtime: the PostgreSQL client runs one of its own, which cannot start
    // inside another (trial 7: `bench --db postgres://…` panicked after the benchmark).
    // The server never answered: the result file says what happened (issue 13), but there is
    // no point to store (trial 24: a failed point of nothing was stored, its database created).
    let never_answered = inferbench_loadgen::output::never_answered(&out.summary);
    if let (Some(db), true) = (&db, never_answered) {
        eprintln!(
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
        inferbench_store::flags::ingest_into(db, std::slice::from_ref(result), &ingest_opts)?;
    }
    Ok(ExitStatus::from_code(out.exit_code))
}
