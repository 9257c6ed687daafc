//! `inferbench eval gsm8k`: accuracy of a served model on GSM8K with InferenceX's prompt and
//! scoring (`inferbench_eval::gsm8k`); flags, results and the pass mark in [`flags`].

pub mod flags;

use flags::EvalFlags;
use inferbench_eval::gsm8k;

use super::ExitStatus;

/// `inferbench eval`: the eval library's flags and the CLI's `--tls-ca` / `--insecure` (the open
/// issue's rule for new flags), given after the task (`eval gsm8k --tls-ca FILE`).
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The task and its flags.
    #[command(flatten)]
    pub flags: EvalFlags,
    /// PEM file of extra trusted root certificates for an https:// --base-url (a private CA),
    /// added to the built-in Mozilla roots: the eval's requests and its /v1/models lookups.
    #[arg(long, value_name = "FILE", global = true, help_heading = "TLS")]
    pub tls_ca: Option<std::path::PathBuf>,
    /// Skip the https:// server's certificate verification (a test server only; a warning
    /// says so).
    #[arg(long, global = true, conflicts_with = "tls_ca", help_heading = "TLS")]
    pub insecure: bool,
}

/// Runs the subcommand: 0 when every score reaches the threshold (or `--no-threshold`), 1
/// below it or when no request was answered, 3 when the server was unreachable, 130
/// interrupted.
pub fn run(args: EvalArgs) -> anyhow::Result<ExitStatus> {
    let EvalArgs {
        flags,
        tls_ca,
        insecure,
    } = args;
    let (mut opts, threshold) = flags.options()?;
    // No file the eval writes names its data, another of its outputs or --tls-ca (issue 39's
    // leftovers, 1: `--result-dir` was outside the same-file check), before any request.
    check_same_files(&opts, flags.result_dir(), tls_ca.as_deref())?;
    // The samples file within `ulimit -f`, before any request (trial of issue 39's leftovers,
    // finding 4: "File too large" after every request of `--limit 50` under `ulimit -f 5`).
    crate::fsize::check(
        &[{
            let data = eval_data(&opts);
            // Judged by its upper estimate, as every planned file (issue 39's leftovers, 2:
            // the lower one was the advice, and a run at it could fail writing the samples).
            crate::fsize::Planned::between(
                format!("--result-dir's {}", gsm8k::SAMPLES_FILE),
                samples_bytes(&data),
                samples_upper_bytes(&data, opts.max_tokens),
            )
        }],
        crate::fsize::limit(),
    )
    .map_err(anyhow::Error::msg)?;
    opts.tls = super::tls_args::TlsArgs { tls_ca, insecure }.options();
    // More requests in flight than this process can hold: refused before the first (exit 2).
    let limits = crate::limits::raise_open_files();
    let streams = crate::limits::Need {
        flag: "--concurrency",
        streams: eval_streams(opts.concurrency, opts.limit),
        requests: 0,
        per_stream: 1,
        request_bytes: 0,
        prompt_bytes: 0,
        output_bytes: 0,
        uncapped: false,
        lower: crate::limits::LOWER_EVAL,
        server_in_process: false,
    };
    crate::limits::check(&streams, &limits)
        .map_err(anyhow::Error::msg)
        // Where the data does not fit either, its refusal, whose need is the number its
        // advice comes from (issue 39, fresh tester's finding 5: "need about 176 MiB", the
        // streams' alone, beside an advised 7028372 KiB, the data's).
        .map_err(|e| check_data_memory(&opts, &limits).err().unwrap_or(e))
        .map_err(|e| {
            // Not one stream: the `ulimit -v` at which both checks pass (issue 39's
            // leftovers, 3).
            crate::limits::advise_no_stream(e, &limits, |at| {
                crate::limits::check(&streams, at).is_ok() && check_data_memory(&opts, at).is_ok()
            })
        })?;
    // The data file counts in the budget (trial of issue 39, finding 3: a 150 MB test.jsonl
    // sent requests, then ran out of memory midway, exit 1): refused before any request.
    check_data_memory(&opts, &limits)?;
    crate::oom::set_what_to_lower(crate::limits::LOWER_EVAL.net);
    let rt = super::runtime()?;
    // Without --model, the server's first (as `bench`; trial 24).
    rt.block_on(flags::served_model(&mut opts))?;
    rt.block_on(async {
        let cancel = super::shutdown_token("inferbench eval: interrupted; scoring what finished");
        let samples = gsm8k::run(&opts, &cancel).await?;
        flags.finish(&opts, &samples, threshold).await
    })
}

/// Bytes of `samples_gsm8k.jsonl` at least for `data` ([`crate::fsize`]): each problem's
/// line holds its prompt, the worked examples (at least half of their lines' bytes, their
/// JSON keys aside) and its question (at least a quarter of its line), and 100 bytes of keys
/// and scores.
pub fn samples_bytes(data: &EvalData) -> u64 {
    let per_problem = (data.shot_bytes / 2).saturating_add(100);
    (data.problems.saturating_mul(per_problem)).saturating_add(data.problem_bytes / 4)
}

/// Bytes of one `samples_gsm8k.jsonl` line at most besides its prompt and its response: the
/// keys, the target, the scores and an error message (cut at 512 characters), 2 KiB.
pub const SAMPLE_UPPER_BYTES: u64 = 2 << 10;

/// Bytes a prompt's template adds at most per worked example and for the question (`Question:
/// `, `\nAnswer:`, the separator, JSON-escaped), 64.
pub const SAMPLE_UPPER_TEMPLATE_BYTES: u64 = 64;

/// Bytes per `--max-tokens` token of the response in a samples line at most: 16 bytes of a
/// token's text (4–5 measured for English), each escaped to at most 2 in JSON (a newline, a
/// quote), 32; the response is written three times at most (`response` and its two
/// extractions, each at most the response).
pub const SAMPLE_UPPER_BYTES_PER_TOKEN: u64 = 32;

/// Bytes of `samples_gsm8k.jsonl` at most for `data` and answers of up to `max_tokens` tokens
/// ([`crate::fsize`]'s upper estimate, the value a refusal advises): each problem's line holds
/// [`SAMPLE_UPPER_BYTES`], its prompt (the worked examples' and its own line, whose text
/// re-encodes to no more than the JSON it was read from, and [`SAMPLE_UPPER_TEMPLATE_BYTES`]
/// for each of them) and three times its response (`max_tokens` ×
/// [`SAMPLE_UPPER_BYTES_PER_TOKEN`]).
pub fn samples_upper_bytes(data: &EvalData, max_tokens: u32) -> u64 {
    let template = data
        .shots
        .saturating_add(1)
        .saturating_mul(SAMPLE_UPPER_TEMPLATE_BYTES);
    let response = u64::from(max_tokens)
        .saturating_mul(SAMPLE_UPPER_BYTES_PER_TOKEN)
        .saturating_mul(3);
    let per_problem = SAMPLE_UPPER_BYTES
        .saturating_add(data.shot_bytes)
        .saturating_add(template)
        .saturating_add(response);
    data.problems
        .saturating_mul(per_problem)
        .saturating_add(data.problem_bytes)
}

/// The files `eval` writes into `--result-dir`: the samples, the results and `meta_env.json`.
pub const EVAL_OUTPUT_FILES: [&str; 3] =
    [gsm8k::SAMPLES_FILE, gsm8k::RESULTS_FILE, "meta_env.json"];

/// The data files `eval` reads from `--data-dir`.
pub const EVAL_DATA_FILES: [&str; 2] = ["test.jsonl", "train.jsonl"];

/// Refuses two of the eval's paths naming one file when either is written
/// ([`inferbench_loadgen::samefile::check_distinct`], as `bench` and `replay` check theirs):
/// each file of [`EVAL_OUTPUT_FILES`] in `result_dir` against the others, the data files of
/// `opts.data_dir` ([`EVAL_DATA_FILES`]) and `--tls-ca`; `result_dir` neither is nor lies
/// inside the data folder, nor it inside `result_dir`.
///
/// # Errors
/// The first two flags naming one file and the two paths (the caller exits 2, nothing sent).
pub fn check_same_files(
    opts: &gsm8k::EvalOptions,
    result_dir: &std::path::Path,
    tls_ca: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    use inferbench_loadgen::samefile::{check_distinct, NamedPath};
    let mut paths: Vec<NamedPath> = EVAL_DATA_FILES
        .iter()
        .map(|f| NamedPath::input(format!("--data-dir's {f}"), opts.data_dir.join(f)))
        .collect();
    paths.extend(tls_ca.map(|p| NamedPath::input("--tls-ca", p)));
    // The data folder is read by its two file names only (not listed as a corpus is), so a
    // result folder in it is harmless: the same-file check keeps the outputs off those files.
    paths.extend(
        EVAL_OUTPUT_FILES
            .iter()
            .map(|f| NamedPath::output(format!("--result-dir's {f}"), result_dir.join(f))),
    );
    check_distinct(&paths)
}

/// Memory one problem of an eval takes for the whole run besides its text and prompt, bytes:
/// its spawned task (the request's future), its sample's strings and the map entry, 16 KiB (an
/// estimate on the high side).
pub const EVAL_PROBLEM_BYTES: u64 = 16 << 10;

/// Bytes a kept answer takes per `--max-tokens` token at most (its text).
pub const EVAL_ANSWER_BYTES_PER_TOKEN: u64 = 8;

/// Bytes a request in flight takes per `--max-tokens` token at most (its record's per-token
/// data, as `bench` counts it).
pub const EVAL_RECORD_BYTES_PER_TOKEN: u64 = 32;

/// What an eval's data takes: the problems it will run and the bytes of their lines, and the
/// bytes of the worked examples' lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvalData {
    /// Problems the eval runs (`--limit`, or every line of `test.jsonl`).
    pub problems: u64,
    /// Bytes of those problems' lines.
    pub problem_bytes: u64,
    /// Bytes of the worked examples' lines (`--num-fewshot` lines of `train.jsonl`).
    pub shot_bytes: u64,
    /// The worked examples (lines of `train.jsonl` up to `--num-fewshot`).
    pub shots: u64,
}

/// Counts the first `limit` non-empty lines of `path` (all without one) and their bytes,
/// reading with a fixed buffer (nothing of the file is kept), up to a line longer than the
/// loader's limit (`MAX_SPLIT_LINE_BYTES`, which the loader refuses naming it); `(0, 0)` when
/// it cannot be read (the loader names it).
fn count_lines(path: &std::path::Path, limit: Option<u64>) -> (u64, u64) {
    use std::io::BufRead as _;
    // Only a regular file, as the loader reads (a FIFO would block the open; the loader then
    // names what it is: issue 39, fresh tester).
    let Ok((f, _)) = inferbench_workload::files::open_regular_file(
        path,
        inferbench_eval::gsm8k::MAX_SPLIT_FILE_BYTES,
    ) else {
        return (0, 0);
    };
    let mut r = std::io::BufReader::with_capacity(1 << 16, f);
    let (mut lines, mut bytes, mut cur, mut blank) = (0u64, 0u64, 0u64, true);
    while limit.is_none_or(|l| lines < l) {
        let Ok(buf) = r.fill_buf() else { break };
        if buf.is_empty() {
            break;
        }
        let n = buf.len();
        let mut used = n;
        for (i, &b) in buf.iter().enumerate() {
            cur += 1;
            // A line over the loader's limit: the loader refuses it naming FILE:LINE.
            if cur > inferbench_eval::gsm8k::MAX_SPLIT_LINE_BYTES as u64 {
                return (lines, bytes);
            }
            if b == b'\n' {
                if !blank {
                    lines += 1;
                    bytes += cur;
                }
                cur = 0;
                blank = true;
                if limit.is_some_and(|l| lines >= l) {
                    used = i + 1;
                    break;
                }
            } else if !b.is_ascii_whitespace() {
                blank = false;
            }
        }
        r.consume(used);
    }
    if !blank && limit.is_none_or(|l| lines < l) {
        lines += 1;
        bytes += cur;
    }
    (lines, bytes)
}

/// The eval's data as [`EvalData`] counts it, from `opts`'s data directory.
pub fn eval_data(opts: &inferbench_eval::gsm8k::EvalOptions) -> EvalData {
    let (problems, problem_bytes) = count_lines(
        &opts.data_dir.join("test.jsonl"),
        opts.limit.map(|l| l as u64),
    );
    let (shots, shot_bytes) = count_lines(
        &opts.data_dir.join("train.jsonl"),
        Some(opts.num_fewshot as u64),
    );
    EvalData {
        problems,
        problem_bytes,
        shot_bytes,
        shots,
    }
}

/// Requests an eval has in flight at once: `--concurrency`, but never more than the problems
/// `--limit` asks for (issue 39, fresh tester's finding 6: `--concurrency 500 --limit 200` was
/// refused for 500 streams under `ulimit -n`).
pub fn eval_streams(concurrency: usize, limit: Option<usize>) -> u64 {
    concurrency.min(limit.unwrap_or(usize::MAX)) as u64
}

/// Refuses (exit 2, before any request) an eval whose problems do not fit the memory budget
/// beside the process and its requests in flight: each problem its line, its prompt (the
/// worked examples and its question), [`EVAL_PROBLEM_BYTES`] and its answer (up to
/// `--max-tokens` × [`EVAL_ANSWER_BYTES_PER_TOKEN`]); each request in flight
/// [`crate::limits::STREAM_BYTES`] and `--max-tokens` × [`EVAL_RECORD_BYTES_PER_TOKEN`].
///
/// # Errors
/// The problems, the MiB they need and the limit, with the `--limit` that fits and the
/// `ulimit -v` that would hold them all.
pub fn check_data_memory(
    opts: &inferbench_eval::gsm8k::EvalOptions,
    limits: &crate::limits::Limits,
) -> anyhow::Result<()> {
    let Some(budget) = limits.memory else {
        return Ok(());
    };
    let data = eval_data(opts);
    let tokens = u64::from(opts.max_tokens);
    let per_problem = data
        .problem_bytes
        .div_ceil(data.problems.max(1))
        .saturating_mul(2)
        .saturating_add(data.shot_bytes)
        .saturating_add(EVAL_PROBLEM_BYTES)
        .saturating_add(tokens.saturating_mul(EVAL_ANSWER_BYTES_PER_TOKEN));
    let in_flight = (opts.concurrency as u64).min(data.problems.max(1));
    let fixed = limits.base.saturating_add(
        in_flight.saturating_mul(
            crate::limits::STREAM_BYTES
                .saturating_add(tokens.saturating_mul(EVAL_RECORD_BYTES_PER_TOKEN))
                .saturating_add(per_problem),
        ),
    );
    let total = fixed.saturating_add(data.problems.saturating_mul(per_problem));
    if total <= budget.bytes {
        return Ok(());
    }
    // The limit at which this check and the streams' one before it both pass (with fewer
    // problems than --concurrency, the streams' may need more; issue 39's leftovers, 3): the
    // need the message states and the `ulimit -v` it advises, one number.
    let need = total.max(
        limits
            .base
            .saturating_add((opts.concurrency as u64).saturating_mul(crate::limits::STREAM_BYTES)),
    );
    let fit = budget.bytes.saturating_sub(fixed) / per_problem.max(1);
    let fits = if fit == 0 {
        "not one problem fits".to_string()
    } else {
        format!("--limit {fit} or fewer fit")
    };
    anyhow::bail!(
        "--data-dir {}: test.jsonl's {} problems need about {} MiB ({} KiB a problem: its \
         prompt with {} worked examples, its answer up to --max-tokens {} and its task; and {} \
         MiB besides for the process and {} requests in flight, as estimated), more than the {} \
         MiB {} allows; {fits}, or raise it (`ulimit -v {}` fits) (nothing was sent)",
        opts.data_dir.display(),
        data.problems,
        need.div_ceil(1 << 20),
        per_problem.div_ceil(1 << 10),
        opts.num_fewshot,
        opts.max_tokens,
        fixed.div_ceil(1 << 20),
        in_flight,
        budget.bytes >> 20,
        budget.what(),
        need.div_ceil(1 << 10),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fresh tester's finding 6: the open-file check counts the requests an eval can have in
    /// flight, `--concurrency` capped by `--limit`.
    #[test]
    fn eval_streams_are_the_concurrency_capped_by_the_limit() {
        assert_eq!(eval_streams(500, Some(200)), 200);
        assert_eq!(eval_streams(500, None), 500);
        assert_eq!(eval_streams(8, Some(200)), 8);
    }

    /// Lines are counted up to the limit, blank ones skipped, a last line without a newline
    /// counted.
    #[test]
    fn lines_are_counted_without_keeping_the_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("t.jsonl");
        std::fs::write(&p, "ab\n\n  \ncde\nf").unwrap();
        assert_eq!(count_lines(&p, None), (3, 8));
        assert_eq!(count_lines(&p, Some(2)), (2, 7));
        assert_eq!(count_lines(&d.path().join("none"), None), (0, 0));
    }
}
