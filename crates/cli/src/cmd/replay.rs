//! `inferbench replay`: AgentX trace replay (flags, loading and the replay itself:
//! `crate::cmd::replay_flags`), and `inferbench agentx-traces`: a synthetic corpus
//! (`inferbench_workload::agentx::synthetic`).

use std::path::PathBuf;

use crate::cmd::replay_flags::ReplayFlags;
use anyhow::Context as _;
use inferbench_workload::agentx::synthetic::{self, SHAPES};

use super::ExitStatus;

/// Flags of `inferbench agentx-traces`.
#[derive(Debug, clap::Args)]
pub struct TracesArgs {
    /// Corpus shape: quickstart, 062126 (≈ 393 sessions, 99k requests) or 062126-256k.
    #[arg(long, default_value = "062126-256k", value_parser = SHAPES)]
    pub shape: String,
    /// Sessions (default: the shape's).
    #[arg(long)]
    pub traces: Option<usize>,
    /// Seed.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Output JSONL file (one trace per line, the corpus's traces.jsonl layout).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
}

/// What a replay of `lanes` lanes asks of the process, each lane costing `lane` (its sessions'
/// peak of requests in flight, each with the largest request's bytes), beside `kept` bytes
/// (what the run reads and keeps: the traces, the tokenizer, the read room). The one
/// computation of the check before the traces are read ([`traces_plan`], with every lane the
/// run starts and the per-lane cost of every trace it may replay) and of the check after they
/// are ([`run`], with the lanes' cost of the traces kept, at most that): issue 39's
/// leftovers, item 1 (the first check planned only the lanes that fitted, so the
/// `--num-dataset-entries` it advised was refused for the lanes the run starts).
pub fn replay_need(
    lanes: u64,
    lane: inferbench_loadgen::agentic::LaneLoad,
    kept: u64,
) -> crate::limits::Need {
    crate::limits::Need {
        flag: "--concurrency",
        streams: lanes,
        requests: 0,
        per_stream: lane.per_lane,
        request_bytes: lane.request_bytes,
        prompt_bytes: kept,
        output_bytes: 0,
        uncapped: false,
        lower: crate::limits::LOWER_REPLAY,
        server_in_process: false,
    }
}

/// The plan of a replay before its traces are read: `need` ([`replay_need`]: every lane the
/// run starts, `--concurrency`, at the largest per-lane cost of the traces it may replay, and
/// the traces' read room) beside the `tokenizer` file's load, with the room it leaves the
/// traces (the loader's budget: a load that needs more is refused naming how many traces fit
/// beside all those lanes, a number the check after the load then accepts). Returns the need
/// with the tokenizer, the tokenizer's bytes and the room for the traces (`None` without a
/// memory budget). `traces_bytes`: what the traces the run may replay take once loaded.
///
/// # Errors
/// The lanes do not fit beside the read room and the tokenizer (the refusal names the most
/// lanes that fit beside the whole corpus, or that no concurrency does; exit 2), or the
/// tokenizer does not fit beside the lanes.
fn traces_plan(
    need: crate::limits::Need,
    traces_bytes: u64,
    tokenizer: &str,
    limits: &crate::limits::Limits,
) -> anyhow::Result<(crate::limits::Need, u64, Option<u64>)> {
    if crate::limits::check(&need, limits).is_err() {
        // Not every lane fits even beside no trace: no trace count helps, so the refusal is
        // the lanes', naming how many fit beside the whole corpus (and the tokenizer), which
        // then replays it (trial of issue 39, finding 2), or that none does.
        let whole = crate::limits::Need {
            prompt_bytes: need
                .prompt_bytes
                .saturating_add(traces_bytes)
                .saturating_add(crate::limits::tokenizer_bytes(tokenizer)),
            ..need
        };
        crate::limits::check(&whole, limits).map_err(anyhow::Error::msg)?;
    }
    // A tokenizer file is an input too: counted before it is loaded, and left out of the
    // traces' room (issue 39 §2 finding 6).
    let tokenizer = crate::limits::refuse_tokenizer(tokenizer, &need, limits)?;
    let need = crate::limits::Need {
        prompt_bytes: need.prompt_bytes.saturating_add(tokenizer),
        ..need
    };
    let room = crate::limits::prompt_room(&need, limits);
    Ok((need, tokenizer, room))
}

/// The memory the `--traces` files take once loaded, bytes, as the load counts them
/// ([`inferbench_workload::agentx::traces_budget_need`]: the traces it keeps, with
/// `--skip-invalid`, `--max-context-length` and `--num-dataset-entries`, every request's length
/// up to [`super::replay_flags::SERVER_CONTEXT_CEILING`] since the server's context is not
/// known yet), read once up front keeping none (issue 39's leftovers, 3: 5× the files' size was
/// estimated, which is not what the load holds), and their lanes' load
/// ([`inferbench_loadgen::agentic::LaneLoad`], counted in the same pass: the one per-lane cost
/// of the checks before and after the load, issue 39, fresh tester's finding 1). Where they
/// cannot be counted (a file the load refuses, which it then names; a `.json` file above
/// [`inferbench_workload::agentx::load::TRACES_COUNTED_JSON_MAX`]), the files' size ×
/// [`crate::limits::TRACE_BYTES_PER_FILE_BYTE`] and [`inferbench_loadgen::agentic::LaneLoad::NONE`].
fn counted_traces_bytes(
    flags: &ReplayFlags,
    files: &[PathBuf],
) -> (u64, inferbench_loadgen::agentic::LaneLoad) {
    let estimate = (
        crate::limits::traces_bytes(files),
        inferbench_loadgen::agentic::LaneLoad::NONE,
    );
    let Some(path) = flags.traces.as_deref() else {
        return estimate;
    };
    let opts = inferbench_workload::agentx::LoadOptions {
        skip_invalid: flags.skip_invalid,
        max_context_length: flags.max_context_length,
        num_dataset_entries: flags.num_dataset_entries,
        token_cap: Some(super::replay_flags::SERVER_CONTEXT_CEILING),
        memory_budget: None,
    };
    inferbench_loadgen::agentic::counted_traces(path, &opts).unwrap_or(estimate)
}

/// The memory the sessions of the `--synthetic` `shape` take once generated with `seed`, up to
/// `entries` of them, bytes, as the replay's load counts them (`Trace::heap_bytes`), and their
/// lanes' load ([`inferbench_loadgen::agentic::LaneLoad::add`]): generated a session at a time,
/// keeping none. Filtered as the load filters them (filter, then cap): a session whose peak
/// input + output is above `max_context` (`--max-context-length`) is dropped, not counted
/// among the `entries`, so the sessions counted are the ones the load keeps (before, the first
/// `entries` sessions were counted whatever their context, while the load kept later ones in
/// place of those it dropped).
fn synthetic_bytes(
    shape: &str,
    seed: u64,
    entries: Option<usize>,
    max_context: Option<u64>,
) -> (u64, inferbench_loadgen::agentic::LaneLoad) {
    let (mut bytes, mut n) = (0u64, 0usize);
    let mut load = inferbench_loadgen::agentic::LaneLoad::NONE;
    synthetic::shaped_each(shape, None, seed, &mut |t| {
        if entries.is_some_and(|e| n >= e) {
            return false;
        }
        if max_context.is_some_and(|m| t.peak_context_tokens() > m) {
            return true;
        }
        load.add(n, &t);
        n += 1;
        bytes = bytes.saturating_add(t.heap_bytes());
        true
    });
    (bytes, load)
}

/// `inferbench agentx-traces`: writes a synthetic AgentX corpus and prints its shape.
pub fn run_traces(args: TracesArgs) -> anyhow::Result<ExitStatus> {
    // Generated a session at a time within the memory budget (less the process's own): a
    // corpus that does not fit is refused naming how many sessions fit, never an abort (issue
    // 39 §2: `--shape 062126-256k` under `ulimit -v 600000` aborted, exit 134).
    // An empty corpus is no corpus (trial of issue 39, finding 8: `--traces 0` wrote one and
    // exited 0).
    anyhow::ensure!(
        args.traces != Some(0),
        "--traces 0: a corpus needs at least one session (omit --traces for the shape's)"
    );
    // Writable (a dangling link into a missing folder included) before the corpus is made.
    inferbench_loadgen::output::check_file_writable("--out", &args.out)?;
    let limits = crate::limits::current();
    let room = limits.memory.map(|m| m.bytes.saturating_sub(limits.base));
    let mut traces = Vec::new();
    let mut used = 0u64;
    let mut over = None;
    // Sessions counted, not kept, once the first did not fit.
    let mut counted = 0usize;
    synthetic::shaped_each(&args.shape, args.traces, args.seed, &mut |t| {
        used = used.saturating_add(t.heap_bytes());
        if counted > 0 {
            counted += 1;
            return true;
        }
        if let Some(most) = room.filter(|&m| used > m) {
            if traces.is_empty() {
                // Not one session: counted to the end, so the limit named is what the whole
                // corpus needs (issue 39's leftovers: "raise the limit" gave no value).
                counted = 1;
                return true;
            }
            over = Some((most, traces.len()));
            return false;
        }
        traces.push(t);
        true
    });
    if counted > 0 {
        // Not one session: the way out is the limit, never `--traces 0` (trial of issue 39,
        // finding 8), named with the value that holds the corpus beside the process.
        let none = inferbench_workload::WorkloadError::NoneFits {
            path: PathBuf::from(format!("--shape {}", args.shape)),
            line: None,
            what: "session",
            count: counted,
            need: used,
            room: room.unwrap_or(0),
        };
        let e = crate::limits::advise_none_fits(none.into(), &limits, |at| {
            at.memory.map(|m| m.bytes.saturating_sub(at.base))
        });
        let text = format!("{e:#}");
        anyhow::bail!(
            "{} (nothing was written)",
            text.strip_suffix(" (nothing was sent)").unwrap_or(&text)
        );
    }
    if let Some((most, fit)) = over {
        let fits = format!("--traces {fit} or fewer fit");
        anyhow::bail!(
            "--shape {}: the sessions generated up to here need more than the {} MiB of memory \
             this process has left (`ulimit -v` or the memory available, less its own); {fits}",
            args.shape,
            most >> 20
        );
    }
    let requests: usize = traces.iter().map(|t| t.request_count()).sum();
    // Said before a large write only (the full-size shapes are hundreds of MB: the exact
    // size); a small corpus is named once, by the line after it (trial 16: twice).
    let est = synthetic::jsonl_len(&traces).context("sizing the corpus")?;
    if let Some(line) = size_notice(traces.len(), requests, est, &args.out) {
        errln!("{line}");
    }
    if let Some(why) = inferbench_loadgen::output::non_regular(&args.out) {
        anyhow::bail!("--out {}: {why}", args.out.display());
    }
    // Through a temporary file renamed onto --out (issue 39, a fresh tester's finding 3: a
    // failed write left a cut-short corpus over the previous one).
    inferbench_loadgen::output::write_streamed(&args.out, |w| {
        synthetic::write_jsonl(&traces, w).map_err(anyhow::Error::from)
    })
    .map_err(|e| super::write_failed("--out", e))?;
    let bytes = std::fs::metadata(&args.out).map(|m| m.len()).unwrap_or(0);
    outln!(
        "wrote {}: {}, {}",
        args.out.display(),
        synthetic::describe(&traces),
        synthetic::human_size(bytes)
    );
    Ok(ExitStatus::Ok)
}

/// Corpora from this size on (bytes) are announced before they are written: 10 MB, a second
/// or more of writing.
const ANNOUNCE_FROM: u64 = 10_000_000;

/// The line said before writing `sessions` sessions of `requests` requests, `bytes` in all, to
/// `out`; `None` below [`ANNOUNCE_FROM`]. Past 100 MB it names the flags for a smaller one.
fn size_notice(
    sessions: usize,
    requests: usize,
    bytes: u64,
    out: &std::path::Path,
) -> Option<String> {
    (bytes >= ANNOUNCE_FROM).then(|| {
        format!(
            "writing {sessions} sessions ({requests} requests, {}) to {}{}",
            synthetic::human_size(bytes),
            out.display(),
            if bytes > 100_000_000 {
                " (`--shape quickstart` or `--traces N` writes a smaller corpus)"
            } else {
                ""
            }
        )
    })
}

/// Bytes of one of a replay's small JSON files at least (`agentic_aggregate.json`, 4.6 KiB
/// measured; `profile_export_aiperf.json`, 4 KiB).
const REPLAY_JSON_BYTES: u64 = 2 << 10;

/// Bytes of one of them at most (as [`crate::fsize::REPLAY_SUMMARY_UPPER_BYTES`]: the same
/// keys whatever the request count).
const REPLAY_JSON_UPPER_BYTES: u64 = 16 << 10;

/// Bytes of `aiperf_artifacts/server_metrics_export.json` at most: a window summary per metric
/// the server exports (29 KiB measured against the sim), as estimated.
const SERVER_METRICS_EXPORT_UPPER_BYTES: u64 = 256 << 10;

/// The files a `replay --result-dir` writes, each with the bytes it holds at least and at most
/// ([`crate::fsize`]; issue 39, files, ingest and hints, 2): `summary.json`,
/// `agentic_aggregate.json` and `aiperf_artifacts/profile_export_aiperf.json` (2–16 KiB each),
/// `server_metrics.jsonl` (thinned at run time to the limit; the plan keeps
/// [`super::bench::SERVER_METRICS_PLANNED_BYTES`] for it, as `bench`'s) and
/// `aiperf_artifacts/server_metrics_export.json` (at most
/// [`SERVER_METRICS_EXPORT_UPPER_BYTES`]) unless `--no-server-metrics`, and the records files
/// `requests.jsonl` and `aiperf_artifacts/profile_export.jsonl` (a line per request each):
/// their request count grows with the duration, so they are bounded at run time
/// ([`inferbench_loadgen::agentic::RecordsRoom`]: the profile ends early rather than pass the
/// limit) and planned at what the run needs to measure at all: every lane's primers and
/// warmups (one output token each) and twice the lines of the most requests in flight at once
/// (`lane`'s sessions' peak, each of the traces' longest output, `lane.out_tokens`, by the
/// kept rule: [`crate::fsize::records_upper_bytes`]). Without a lane load (traces that could not be counted) the records files are
/// not planned.
pub fn planned_files(
    flags: &ReplayFlags,
    lane: inferbench_loadgen::agentic::LaneLoad,
) -> Vec<crate::fsize::Planned> {
    use crate::fsize::{
        records_upper_bytes, Planned, RECORD_BYTES, REPLAY_SUMMARY_BYTES,
        REPLAY_SUMMARY_UPPER_BYTES,
    };
    let mut v = vec![
        Planned::between(
            "--result-dir's summary.json",
            REPLAY_SUMMARY_BYTES,
            REPLAY_SUMMARY_UPPER_BYTES,
        ),
        Planned::between(
            "--result-dir's agentic_aggregate.json",
            REPLAY_JSON_BYTES,
            REPLAY_JSON_UPPER_BYTES,
        ),
        Planned::between(
            "--result-dir's aiperf_artifacts/profile_export_aiperf.json",
            REPLAY_JSON_BYTES,
            REPLAY_JSON_UPPER_BYTES,
        ),
    ];
    if !flags.no_server_metrics {
        v.push(Planned::between(
            "--result-dir's server_metrics.jsonl",
            0,
            super::bench::SERVER_METRICS_PLANNED_BYTES,
        ));
        v.push(Planned::between(
            "--result-dir's aiperf_artifacts/server_metrics_export.json",
            0,
            SERVER_METRICS_EXPORT_UPPER_BYTES,
        ));
    }
    if lane.request_bytes > 0 {
        let lanes = u64::from(flags.concurrency);
        let per_lane = lane.per_lane.max(1);
        let warm = lanes
            .saturating_mul(per_lane.saturating_add(u64::from(flags.warmup_requests_per_lane)));
        let out = lane.out_tokens;
        let line = |tokens: u64| records_upper_bytes(1, tokens);
        let upper = warm.saturating_mul(line(1)).saturating_add(
            lanes
                .saturating_mul(per_lane)
                .saturating_mul(line(out))
                .saturating_mul(2),
        );
        let least = lanes
            .saturating_mul(u64::from(flags.warmup_requests_per_lane))
            .saturating_mul(RECORD_BYTES);
        v.push(Planned::between(
            "--result-dir's requests.jsonl (and aiperf_artifacts/profile_export.jsonl)",
            least,
            upper,
        ));
    }
    v
}

/// `inferbench replay`'s flags: the replay's ([`ReplayFlags`], the loadgen library's) and how
/// an https:// target is verified.
#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The replay's flags.
    #[command(flatten)]
    pub flags: ReplayFlags,
    /// How an https:// target is verified.
    #[command(flatten)]
    pub tls: super::tls_args::TlsArgs,
}

/// Runs `inferbench replay` under the shutdown token.
pub fn run(args: ReplayArgs) -> anyhow::Result<ExitStatus> {
    let ReplayArgs { mut flags, tls } = args;
    // No file of --result-dir over a trace file (trial of issue 39, finding 1: the replayed
    // `requests.jsonl` overwritten by the replay's own), before anything is read or asked.
    {
        use inferbench_loadgen::samefile::{check_distinct, replay_paths, NamedPath};
        let mut paths = replay_paths(
            flags.traces.as_deref(),
            &flags.tokenizer,
            flags.result_dir.as_deref(),
        );
        paths.extend(tls.tls_ca.clone().map(|p| NamedPath::input("--tls-ca", p)));
        check_distinct(&paths)?;
    }
    // More lanes than this process can hold: refused before the traces load (issue 39 §2:
    // SIGABRT at 1,000,000). Requests are not known up front (the run has a duration).
    // The trace files' read room counted with the lanes, so "N fits" holds with them (trial
    // of issue 39, finding 2: 220 lanes "fit", then a 34 kB trace found a 0-byte room).
    let files = flags.traces.as_deref().map(crate::limits::trace_files);
    let room = crate::limits::input_room(files.as_deref());
    // A generated corpus is counted as its load counts it (issue 39's leftovers: counted 0 up
    // front, the `ulimit -v` advised for its lanes left it no room, a second refusal), and the
    // traces' per-lane load with it: the check after the load counts the same (issue 39, fresh
    // tester's finding 1: 64 KiB per lane here, 151 KiB there, so this check's advice was
    // refused by that one).
    let (traces_bytes, lane) = match (files.as_deref(), &flags.synthetic) {
        (Some(files), _) => counted_traces_bytes(&flags, files),
        (None, Some(shape)) => synthetic_bytes(
            shape,
            flags.random_seed,
            flags.num_dataset_entries,
            flags.max_context_length,
        ),
        (None, None) => (0, inferbench_loadgen::agentic::LaneLoad::NONE),
    };
    // Every file of --result-dir within `ulimit -f`, before anything is asked (trial of issue
    // 39's leftovers, finding 4; issue 39, files, ingest and hints, 2: only the summary was
    // counted). The records files and the scrapes grow with the run's duration, not known up
    // front: they are bounded at run time (`ReplayOptions::records_room`, the scrapes thinned)
    // and planned at what the run needs to measure at all.
    if flags.result_dir.is_some() {
        crate::fsize::check(&planned_files(&flags, lane), crate::fsize::limit())
            .map_err(anyhow::Error::msg)?;
    }
    let need = replay_need(u64::from(flags.concurrency), lane, room);
    // What a lane takes is known from the count above (its largest request, its session's
    // peak in flight, over every trace the run may replay); the check after the load counts
    // the lanes' cost of the traces the load kept, at most these. Every lane the run starts is
    // planned here: a concurrency above what fits is refused before the traces are read,
    // naming how many fit beside them, and the traces' room is what all the lanes leave, so
    // the trace count a load's refusal names passes the check after it (issue 39's leftovers,
    // item 1: the room of the 23 lanes that fitted gave "5 or fewer fit", then 5 entries were
    // refused for their 64 lanes).
    let limits = crate::limits::raise_open_files();
    // The lanes asked for and the read room, as planned below (again at other limits for the
    // advice of a refusal).
    let lanes_need = need;
    // Where not one lane or trace fits: the `ulimit -v` at which these checks leave the traces
    // what they take (their estimate, or what the loader counted), the lanes' check after the
    // load passing with them at one connection per lane (issue 39's leftovers, 3).
    let tokenizer_spec = flags.tokenizer.clone();
    let room_at = move |at: &crate::limits::Limits| {
        let (_, tok, room) = traces_plan(lanes_need, traces_bytes, &tokenizer_spec, at).ok()?;
        let room = room?;
        let after = replay_need(
            lanes_need.streams,
            lane,
            tok.saturating_add(traces_bytes.min(room)),
        );
        crate::limits::check(&after, at).ok()?;
        Some(room)
    };
    let (_, tokenizer, budget) = traces_plan(need, traces_bytes, &flags.tokenizer, &limits)
        .map_err(|e| {
            crate::limits::advise_no_stream(e, &limits, |at| {
                room_at(at).is_some_and(|r| r >= traces_bytes)
            })
        })?;
    // The traces (read or generated) within what the budget leaves besides the lanes: a load
    // that needs more is refused naming how many traces fit, before any request (issue 39 §2:
    // a 488 MB trace file under `ulimit -v 1000000`, or the 062126-256k corpus at 400000,
    // aborted with exit 134).
    flags.memory_budget = budget;
    let traces_room = flags.memory_budget.unwrap_or(u64::MAX);
    let rt = super::runtime()?;
    // Sub-agents take no lane: a lane may hold its session's peak of requests in flight, each
    // a connection (trial finding 3: 19,000 lanes passed the check, then held 19,847 files and
    // failed warmups with EMFILE). Checked once the traces are read, before any request (the
    // server's /v1/models included), with each request's memory in flight (its prompt, body and
    // record: the largest's, per connection; issue 39 §2 findings 1–2).
    let lanes = u64::from(flags.concurrency);
    let checked = std::cell::Cell::new(None);
    let mut prepared = rt
        .block_on(
            flags.prepare_checked(tls.options(), |per_lane, request_bytes| {
                let need = replay_need(
                    lanes,
                    inferbench_loadgen::agentic::LaneLoad {
                        per_lane,
                        request_bytes,
                        out_tokens: 0, // the files' plan only: not a memory term
                    },
                    // The traces kept: at most what the count or their room allows.
                    tokenizer.saturating_add(traces_bytes.min(traces_room)),
                );
                checked.set(Some(need));
                crate::limits::refuse_beyond(Some(need))
            }),
        )
        .map_err(|e| crate::limits::advise_none_fits(e, &limits, &room_at))?;
    // A replay keeps every record until its summary, as many as the server answers in its
    // duration, which no up-front check knows: under `ulimit -v` its profile ends when they
    // reach what the limit holds beside the lanes and traces (issue 39).
    prepared.set_record_bound(
        checked
            .get()
            .and_then(|need| replay_record_bound(&need, &crate::limits::current())),
    );
    rt.block_on(async move {
        let cancel = super::shutdown_token(
            "inferbench: interrupted; finishing up and saving finished requests",
        );
        flags.run(prepared, cancel).await
    })
}

/// Memory one record of a replay keeps until its summary, bytes: 4 KiB. Measured (2026-12-08,
/// debug build, 1-request traces of 4 output tokens against the instant sim, 64 lanes): peak
/// RSS grew 1.38 KiB per record from 19,391 to 59,298 records (the compacted record, its
/// copy for the summary and the AIPerf view); about 3× that, for longer prompts' and answers'
/// fields and the allocator's slack.
pub const REPLAY_RECORD_BYTES: u64 = 4 << 10;

/// The record bound of a replay under an address-space limit (`ulimit -v`, `RLIMIT_AS`;
/// issue 39): the records that fit at [`REPLAY_RECORD_BYTES`] each in the room `need` (the
/// lanes, their requests in flight and the traces, as the check after the load counted them)
/// leaves under the limit, at least 1. `None` without such a limit.
pub fn replay_record_bound(
    need: &crate::limits::Need,
    limits: &crate::limits::Limits,
) -> Option<inferbench_loadgen::options::RecordBound> {
    let limit = match limits.memory {
        Some(b) if b.bound == inferbench_loadgen::options::MemoryBound::AddressSpace => b.bytes,
        _ => inferbench_loadgen::options::address_space_limit()?,
    };
    let spare = limit.saturating_sub(need.memory(limits.base));
    Some(inferbench_loadgen::options::RecordBound {
        records: (spare / REPLAY_RECORD_BYTES).max(1),
        limit_bytes: limit,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Limits of an address-space limit of `kib` KiB (2 workers, 4 blocking threads).
    fn at_kib(kib: u64) -> crate::limits::Limits {
        crate::limits::Limits {
            open_files: 1 << 20,
            open_files_hard: 1 << 20,
            memory: Some(inferbench_loadgen::options::MemoryBudget {
                bytes: kib << 10,
                bound: inferbench_loadgen::options::MemoryBound::AddressSpace,
            }),
            threads: 6,
            base: crate::limits::base_bytes(2, 4),
            inherited_files: 0,
        }
    }

    /// `replay --synthetic` counts, before the load, the sessions the load keeps: with
    /// `--max-context-length` dropping some of the quickstart corpus's and
    /// `--num-dataset-entries 3`, the bytes and the lanes' load counted up front are those of
    /// the 3 sessions the load keeps (before: the first 3 generated, dropped ones among them).
    #[test]
    fn the_synthetic_count_keeps_what_the_load_keeps() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Args {
            #[command(flatten)]
            flags: ReplayFlags,
        }
        let mut peaks = Vec::new();
        synthetic::shaped_each("quickstart", None, 42, &mut |t| {
            peaks.push(t.peak_context_tokens());
            true
        });
        // Drops the 2nd and 4th sessions (peaks 5,469 and 5,080 tokens), so the load keeps the
        // 1st, 3rd and 5th.
        let m = 5000;
        assert_eq!(peaks, [4612, 5469, 3334, 5080, 4979, 2753]);
        let m_arg = m.to_string();
        let a = Args::parse_from([
            "t",
            "--synthetic",
            "quickstart",
            "--num-dataset-entries",
            "3",
            "--max-context-length",
            &m_arg,
        ]);
        let report = a
            .flags
            .load_traces(super::super::replay_flags::SERVER_CONTEXT_CEILING, None)
            .unwrap();
        assert_eq!(report.traces.len(), 3);
        let kept: u64 = report.traces.iter().map(|t| t.heap_bytes()).sum();
        assert_eq!(
            synthetic_bytes("quickstart", 42, Some(3), Some(m)),
            (kept, inferbench_loadgen::agentic::lane_load(&report.traces))
        );
    }

    /// Issue 39's leftovers, item 1: the plan before the load counts every lane the run
    /// starts. 64 lanes of the 062126-256k corpus's cost (6,736 KiB each) under `ulimit -v
    /// 328320` do not fit even beside no trace: refused as the lanes' (before: the room of the
    /// 23 lanes that fitted, "--num-dataset-entries 5 or fewer fit", then 5 refused for their
    /// 64 lanes). Where the lanes fit but not the corpus beside them, the traces' room is
    /// what the check after the load accepts beside all 64 lanes, less the read room that
    /// check no longer counts: traces of that many bytes pass it, one byte more is refused.
    /// Where the lanes do not fit beside a 50 MiB corpus, the number the refusal names plans
    /// the whole corpus beside them, one lane more does not.
    #[test]
    fn the_traces_room_is_what_the_check_after_the_load_accepts_for_every_lane() {
        let lane = inferbench_loadgen::agentic::LaneLoad {
            per_lane: 1,
            request_bytes: (6736 << 10) - crate::limits::STREAM_BYTES,
            out_tokens: 0,
        };
        let (traces, read_room) = (528u64 << 20, crate::limits::LINE_ROOM_BYTES);
        let need = replay_need(64, lane, read_room);
        let e = traces_plan(need, traces, "o200k_base", &at_kib(328_320)).unwrap_err();
        let text = format!("{e:#}");
        assert!(
            text.starts_with("--concurrency 64 is more than this client can hold: ")
                && text.ends_with("; no concurrency fits (nothing was sent)"),
            "{text}"
        );
        // The lanes fit with 10 MiB to spare, the corpus not beside them.
        let limits = at_kib((need.memory(crate::limits::base_bytes(2, 4)) >> 10) + (10 << 10));
        let (planned, tok, room) = traces_plan(need, traces, "o200k_base", &limits).unwrap();
        assert_eq!((planned.streams, tok, room), (64, 0, Some(10 << 20)));
        let after = |kept: u64| crate::limits::check(&replay_need(64, lane, tok + kept), &limits);
        // The traces the loader keeps within the room pass; the check after the load no
        // longer counts the read room (the file is read by then), so it accepts exactly that
        // much more and not one byte beyond.
        assert_eq!(after(10 << 20), Ok(()));
        assert_eq!(after((10 << 20) + read_room), Ok(()));
        assert!(after((10 << 20) + read_room + 1).is_err());
        // The lanes do not fit: the refusal names the lanes that fit beside the whole corpus,
        // and at that concurrency the corpus has its room.
        let (traces, limits) = (50u64 << 20, at_kib(600 << 10));
        let e = traces_plan(need, traces, "o200k_base", &limits).unwrap_err();
        let text = format!("{e:#}");
        let fit: u64 = text
            .split("--concurrency ")
            .find_map(|t| t.strip_suffix(" or less fits (nothing was sent)"))
            .unwrap_or_else(|| panic!("{text}"))
            .parse()
            .unwrap();
        assert_eq!(fit, 37);
        let (_, _, room) = traces_plan(
            replay_need(fit, lane, read_room),
            traces,
            "o200k_base",
            &limits,
        )
        .unwrap();
        assert!(room.unwrap() >= traces, "{room:?}");
        let (_, _, room) = traces_plan(
            replay_need(fit + 1, lane, read_room),
            traces,
            "o200k_base",
            &limits,
        )
        .unwrap();
        assert!(room.unwrap() < traces, "{room:?}");
    }

    /// Only a large corpus is announced before it is written (trial 16: a small one was named
    /// twice); past 100 MB with the way to a smaller one.
    #[test]
    fn only_a_large_corpus_is_announced() {
        let out = std::path::Path::new("t.jsonl");
        assert_eq!(size_notice(6, 135, 9_999_999, out), None);
        let line = size_notice(40, 9_000, 12_000_000, out).unwrap();
        assert!(
            line.starts_with("writing 40 sessions (9000 requests, "),
            "{line}"
        );
        assert!(line.ends_with(") to t.jsonl"), "{line}");
        let big = size_notice(393, 99_000, 400_000_000, out).unwrap();
        assert!(big.ends_with(
            "to t.jsonl (`--shape quickstart` or `--traces N` writes a smaller corpus)"
        ));
    }
}
