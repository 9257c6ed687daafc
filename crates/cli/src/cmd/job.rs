//! `inferbench job`: run one matrix row (what the Slurm and GitHub executors call on each node):
//! engine up, one point per concurrency, artifacts, engine down. Flags and the run:
//! `crate::cmd::run_flags`.

use crate::cmd::run_flags::{run_here, JobFlags};
use inferbench_runner::{JobSpec, SweepOptions};

use super::client_args::ClientArgs;
use super::ExitStatus;

/// `job`'s flags: the runner's, and the client features of the row's requests (given here
/// they override an `--options-file`'s).
#[derive(Debug, clap::Args)]
pub struct JobArgs {
    /// The runner's flags.
    #[command(flatten)]
    pub flags: JobFlags,
    /// What every request carries.
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Runs the subcommand: 0 ok, 1 failed, 130 interrupted.
pub fn run(args: JobArgs) -> anyhow::Result<ExitStatus> {
    use inferbench_loadgen::samefile::NamedPath;
    let mut inputs: Vec<NamedPath> = Vec::new();
    inputs.extend((args.flags.matrix.iter()).map(|p| NamedPath::input("--matrix", p)));
    inputs.extend((args.flags.options_file.iter()).map(|p| NamedPath::input("--options-file", p)));
    let (job, mut run) = args.flags.resolve()?;
    args.client.apply(&mut run);
    inputs.extend((run.runner_config.iter()).map(|p| NamedPath::input("--runner-config", p)));
    let mut opts = run.sweep_options()?;
    opts.write_report = false;
    run_local(&[job], &opts, run.progress, None, &inputs)
}

/// Runs `jobs` in this process ([`run_here`]; `adaptive`: `sweep --adaptive`'s tolerance); Ctrl-C / SIGTERM stop the current point and
/// the engine. `inputs`: the files the command itself read (`--matrix`, `--runner-config`,
/// `--options-file`), which no point may write.
pub fn run_local(
    jobs: &[JobSpec],
    opts: &SweepOptions,
    progress: bool,
    adaptive: Option<f64>,
    inputs: &[inferbench_loadgen::samefile::NamedPath],
) -> anyhow::Result<ExitStatus> {
    // Where every point writes, before any engine starts or request is sent (issue 39 §8).
    inferbench_loadgen::output::check_dir_writable("--out", &opts.out_dir)?;
    // Each point's summary within `ulimit -f`, before the first launch (trial of issue 39's
    // leftovers, finding 4's kind).
    crate::fsize::check(
        &[crate::fsize::Planned::between(
            "a point's summary.json",
            crate::fsize::REPLAY_SUMMARY_BYTES,
            crate::fsize::RESULT_UPPER_BYTES,
        )],
        crate::fsize::limit(),
    )
    .map_err(anyhow::Error::msg)?;
    // Every row's largest point against `ulimit -n` / the memory budget, before the first
    // launch: a row beyond them failed its requests `client_resource` mid-sweep.
    // An AgentX row reads `--traces`: the room for reading them, as `replay` counts it; they
    // are counted, never loaded, before the check (issue 39, fresh tester's finding 2: loaded
    // unbounded, they ran out of memory before any check).
    let limits = crate::limits::raise_open_files();
    let files = (opts.bench.traces.as_deref()).map(crate::limits::trace_files);
    let read_room = files
        .as_deref()
        .map_or(0, |f| crate::limits::input_room(Some(f)));
    // Counted as their load keeps them, read a batch at a time keeping none (within one
    // line's read room, counted with the rows); where they cannot be counted (a file the load
    // refuses, which each point then names) their files' size × TRACE_BYTES_PER_FILE_BYTE.
    // Their lanes' load in the same pass, the one per-lane cost `replay` counts too (issue 39,
    // fresh tester's finding 1: counted only where the traces fit, the advised `ulimit -v`
    // left row 2 refused at 151 KiB per lane; counted only where reading them fitted beside
    // the process, which under the limits that need the advice it never did).
    let estimate = |files: &[std::path::PathBuf]| {
        (
            crate::limits::traces_bytes(files),
            inferbench_loadgen::agentic::LaneLoad::NONE,
        )
    };
    let (traces_bytes, lanes) = match (opts.bench.traces.as_deref(), files.as_deref()) {
        (Some(path), Some(files)) => inferbench_loadgen::agentic::counted_traces(
            path,
            &inferbench_workload::agentx::LoadOptions::default(),
        )
        .unwrap_or_else(|_| estimate(files)),
        _ => (0, inferbench_loadgen::agentic::LaneLoad::NONE),
    };
    let loads = inferbench_runner::sweep::row_loads(jobs, opts, traces_bytes, lanes);
    // A matrix of AgentX rows only: the out-of-memory net names what they have (their conc,
    // their traces), not the fixed-length rows' --prompts-per-conc.
    if !loads.is_empty() && loads.iter().all(|l| l.agentic) {
        crate::oom::narrow_what_to_lower(crate::limits::LOWER_SWEEP_AGENTIC.net);
    }
    rows_beyond(&loads, &limits, read_room).map_err(anyhow::Error::msg)?;
    // An AgentX point keeps every record until its summary, as many as the server answers in
    // its duration: under `ulimit -v` its profile ends when they reach what the limit holds
    // beside its row's lanes and traces, as `replay`'s does (issue 39's leftovers, item 2).
    let mut opts = opts.clone();
    opts.record_bounds = record_bounds(&loads, &limits, read_room);
    let opts = &opts;
    // Every point directory, the files already in them and the sweep's report (issue 39's
    // leftovers, 3: a FIFO where a point's file goes failed after the launch).
    inferbench_runner::sweep::check_outputs(jobs, opts).map_err(anyhow::Error::msg)?;
    // No two of the whole sweep's paths one file (every point's outputs, sweep.json, every
    // input), before the first launch (issue 39's leftovers, 2: found per point, mid-sweep).
    let mut paths = inputs.to_vec();
    paths.extend(inferbench_runner::sweep::sweep_paths(jobs, opts));
    inferbench_loadgen::samefile::check_distinct(&paths)?;
    let rt = super::runtime()?;
    Ok(rt.block_on(async {
        let cancel =
            super::shutdown_token("interrupted: stopping the current point and the engine");
        run_here(jobs, opts, progress, adaptive, &cancel).await
    }))
}

/// What row `l`'s largest point asks of the process ([`crate::limits::Need`]: its conc, its
/// requests and prompts, and for a row reading the sweep's `--traces` their room
/// `traces_room`): the one need of the row's up-front check ([`rows_beyond`]) and of an
/// AgentX row's record bound ([`record_bounds`]).
pub fn row_need(l: &inferbench_runner::sweep::RowLoad, traces_room: u64) -> crate::limits::Need {
    crate::limits::Need {
        flag: "conc",
        streams: u64::from(l.conc),
        requests: l.requests,
        per_stream: l.per_stream,
        request_bytes: l.request_bytes,
        prompt_bytes: if l.reads_traces {
            l.prompt_bytes.saturating_add(traces_room)
        } else {
            l.prompt_bytes
        },
        output_bytes: l.output_bytes,
        uncapped: false,
        lower: if l.agentic {
            crate::limits::LOWER_SWEEP_AGENTIC
        } else {
            crate::limits::LOWER_SWEEP
        },
        server_in_process: false,
    }
}

/// The record bound of each AgentX row of `loads` under an address-space limit (`ulimit -v`),
/// by row index ([`inferbench_runner::SweepOptions::record_bounds`]): what `replay` computes
/// for its own lanes ([`super::replay::replay_record_bound`]: the records that fit at
/// [`super::replay::REPLAY_RECORD_BYTES`] each in the room the row's largest point,
/// [`row_need`], leaves under the limit), so a long AgentX point ends with its summary and
/// the stop cause instead of running out of memory (issue 39's leftovers, item 2). Empty
/// without such a limit or AgentX row.
pub fn record_bounds(
    loads: &[inferbench_runner::sweep::RowLoad],
    limits: &crate::limits::Limits,
    traces_room: u64,
) -> std::collections::BTreeMap<usize, inferbench_loadgen::options::RecordBound> {
    (loads.iter().filter(|l| l.agentic))
        .filter_map(|l| {
            super::replay::replay_record_bound(&row_need(l, traces_room), limits)
                .map(|b| (l.index, b))
        })
        .collect()
}

/// Whether every row of `loads` fits `limits` ([`crate::limits::check`] at the row's largest
/// concurrency, its requests and prompts). Errors: one line per row that does not, naming the
/// row as every message does ([`inferbench_runner::sweep::row_name`]: an AgentX row by its
/// traces, duration and conc, and told to lower its conc or traces, never an isl), the limit (`ulimit -n`, `ulimit -v` or the machine's memory) and the largest `conc`
/// that fits; the caller exits 2 before any engine starts. `traces_room`: the room for
/// reading the sweep's `--traces` ([`crate::limits::input_room`]), counted for the rows that
/// read them.
pub fn rows_beyond(
    loads: &[inferbench_runner::sweep::RowLoad],
    limits: &crate::limits::Limits,
    traces_room: u64,
) -> Result<(), String> {
    let refused: Vec<String> = loads
        .iter()
        .filter_map(|l| {
            let need = row_need(l, traces_room);
            // Where not one stream fits under `ulimit -v`, the value at which the row starts
            // (issue 39, second round, finding 5: a row's refusal named none).
            crate::limits::check(&need, limits).err().map(|e| {
                let e = crate::limits::advise_no_stream(anyhow::Error::msg(e), limits, |at| {
                    crate::limits::check(&need, at).is_ok()
                });
                format!("{}: {e:#}", l.name)
            })
        })
        .collect();
    if refused.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of the matrix cannot run in this process (no engine was started):\n  {}",
            inferbench_core::count(refused.len(), "row"),
            refused.join("\n  ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::{record_bounds, rows_beyond};
    use crate::limits::{base_bytes, Limits};
    use inferbench_runner::sweep::RowLoad;

    fn limits(open_files: u64) -> Limits {
        Limits {
            open_files,
            open_files_hard: open_files,
            memory: None,
            threads: 34,
            base: base_bytes(2, 32),
            inherited_files: 0,
        }
    }

    fn row(index: usize, conc: u32) -> RowLoad {
        RowLoad {
            index,
            conc,
            requests: 12 * u64::from(conc),
            prompt_bytes: 0,
            output_bytes: 0,
            per_stream: 1,
            request_bytes: 0,
            reads_traces: false,
            agentic: false,
            name: format!("row {index} (isl 1024, osl 1024, conc {conc})"),
        }
    }

    /// `ulimit -n 100` with a conc-256 row beside a conc-4 row: the conc-256 row is refused by
    /// name with what fits (100 − 16 − 64 = 20), the conc-4 row passes.
    #[test]
    fn a_row_beyond_ulimit_n_is_named_with_what_fits() {
        let e = rows_beyond(&[row(0, 4), row(1, 256)], &limits(100), 0).unwrap_err();
        assert_eq!(
            e,
            "1 row of the matrix cannot run in this process (no engine was started):\n  \
             row 1 (isl 1024, osl 1024, conc 256): conc 256 is more than this client can \
             hold: 256 streams need 336 open files (256 connections, 16 spare, 64 for files) \
             and this process may open 100 (`ulimit -n`, hard limit 100): raise it with \
             `ulimit -n 336`; conc 20 or less fits (nothing was sent)"
        );
        assert_eq!(
            rows_beyond(&[row(0, 4), row(1, 20)], &limits(100), 0),
            Ok(())
        );
        assert!(rows_beyond(&[row(0, 21)], &limits(100), 0).is_err());
    }

    /// Trial of issue 39, finding 8: a row whose prompts alone pass the memory budget is told
    /// to lower what a matrix row has (its isl, its prompts), never `--random-input-len`.
    #[test]
    fn a_row_beyond_memory_names_the_rows_own_settings() {
        let mut l = limits(1 << 20);
        l.memory = inferbench_loadgen::options::MemoryBudget::of(Some(300 << 20), None);
        let mut r = row(0, 4);
        r.prompt_bytes = 1 << 30;
        let e = rows_beyond(&[r], &l, 0).unwrap_err();
        assert!(
            e.contains(" MiB of prompts (lower the row's isl or its number of prompts), "),
            "{e}"
        );
        assert!(!e.contains("--random-input-len"), "{e}");
    }

    /// Issue 39 (files, ingest and hints), 4: an AgentX row whose traces alone pass the memory
    /// budget is named by what identifies it (its name from `runner::sweep::row_name`) and told
    /// to lower its conc or replay smaller traces, never "the row's isl" it does not have.
    #[test]
    fn an_agentic_row_beyond_memory_is_told_its_own_settings() {
        let mut l = limits(1 << 20);
        l.memory = inferbench_loadgen::options::MemoryBudget::of(Some(300 << 20), None);
        let mut r = row(0, 4);
        r.prompt_bytes = 1 << 30;
        r.agentic = true;
        r.reads_traces = true;
        r.name = "row 0 (agentic-coding: traces t.jsonl, 1800 s, conc 4)".into();
        let e = rows_beyond(&[r], &l, 0).unwrap_err();
        assert!(
            e.contains(
                "\n  row 0 (agentic-coding: traces t.jsonl, 1800 s, conc 4): conc 4 is more \
                 than this client can hold"
            ),
            "{e}"
        );
        assert!(
            e.contains(" MiB of prompts (lower the row's conc or replay smaller --traces), "),
            "{e}"
        );
        assert!(!e.contains("isl"), "{e}");
    }

    /// Issue 39, second round, finding 5: a row of which not one stream fits under `ulimit -v`
    /// is refused naming the `ulimit -v` at which it starts, and at that value it passes.
    #[test]
    fn a_row_beyond_ulimit_v_names_the_value_that_fits() {
        let mut l = limits(1 << 20);
        l.memory = inferbench_loadgen::options::MemoryBudget::of(Some(300 << 20), None);
        let mut r = row(0, 4);
        r.prompt_bytes = 200 << 20;
        let e = rows_beyond(std::slice::from_ref(&r), &l, 0).unwrap_err();
        let kib: u64 = e
            .split("raise the address-space limit: `ulimit -v ")
            .nth(1)
            .and_then(|x| x.split('`').next())
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("no ulimit -v value: {e}"));
        assert!(e.contains("(it is 307200 now) (nothing was sent)"), "{e}");
        l.memory = inferbench_loadgen::options::MemoryBudget::of(Some(kib << 10), None);
        assert_eq!(rows_beyond(std::slice::from_ref(&r), &l, 0), Ok(()));
        l.memory = inferbench_loadgen::options::MemoryBudget::of(Some((kib - 1) << 10), None);
        assert!(rows_beyond(&[r], &l, 0).is_err());
    }

    /// Issue 39, finding 4: a row's records' output tokens count in its check, as its run's
    /// own check counts them when it starts: 1 GiB of them under 300 MiB is refused, named
    /// with the row's own settings.
    #[test]
    fn a_rows_output_tokens_count_against_memory() {
        let mut l = limits(1 << 20);
        l.memory = inferbench_loadgen::options::MemoryBudget::of(Some(300 << 20), None);
        let mut r = row(0, 4);
        assert_eq!(rows_beyond(std::slice::from_ref(&r), &l, 0), Ok(()));
        r.output_bytes = 1 << 30;
        let e = rows_beyond(&[r], &l, 0).unwrap_err();
        assert!(
            e.contains(
                " and 1024 MiB of the records' output tokens (lower the row's osl or its number \
                 of prompts), "
            ),
            "{e}"
        );
    }

    /// Issue 39's leftovers, item 2: under `ulimit -v` an AgentX row's points get the record
    /// bound `replay` computes for its lanes (the records that fit at 4 KiB each in what the
    /// row's largest point leaves of the limit: 400 MiB less the process's 245 MiB, 4 lanes of
    /// 64 KiB, 1 MiB of traces and their 2 MiB read room); a fixed-length row gets none.
    #[test]
    fn an_agentic_row_under_ulimit_v_gets_the_record_bound_replay_computes() {
        use inferbench_loadgen::options::{MemoryBound, MemoryBudget, RecordBound};
        let mut l = limits(1 << 20);
        l.memory = Some(MemoryBudget {
            bytes: 400 << 20,
            bound: MemoryBound::AddressSpace,
        });
        let mut agentic = row(1, 4);
        agentic.requests = 0;
        agentic.prompt_bytes = 1 << 20;
        agentic.reads_traces = true;
        agentic.agentic = true;
        let bounds = record_bounds(&[row(0, 4), agentic.clone()], &l, 2 << 20);
        let spare = (400u64 << 20) - base_bytes(2, 32) - 4 * (64 << 10) - (3 << 20);
        assert_eq!(spare / 4096, 38_848);
        assert_eq!(
            bounds.into_iter().collect::<Vec<_>>(),
            vec![(
                1,
                RecordBound {
                    records: 38_848,
                    limit_bytes: 400 << 20
                }
            )]
        );
    }
}
