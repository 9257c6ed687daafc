//! `inferbench`: a thin clap front end over the library crates (DESIGN.md §1–2).
//! Each subcommand lives in `cmd/<name>.rs`: a `run` over its flags (a library's flags struct,
//! or a small `Args` of its own) returning one [`cmd::ExitStatus`].

use clap::{Parser, Subcommand};

/// Prints to stdout like `print!`, through [`stdout::write`]: an error is kept for the exit
/// status instead of a panic (the one way the CLI prints on stdout).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::stdout::write($crate::stdout::Stream::Out, format_args!($($arg)*))
    };
}

/// Prints a line to stdout like `println!`, through [`stdout::write`] (see `out!`).
macro_rules! outln {
    () => {
        out!("\n")
    };
    ($($arg:tt)*) => {
        out!("{}\n", format_args!($($arg)*))
    };
}

/// Prints to stderr like `eprint!`, through [`stdout::write`]: an error is kept for the exit
/// status instead of a panic (the one way the CLI prints on stderr).
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::stdout::write($crate::stdout::Stream::Err, format_args!($($arg)*))
    };
}

/// Prints a line to stderr like `eprintln!`, through [`stdout::write`] (see `err!`).
macro_rules! errln {
    () => {
        err!("\n")
    };
    ($($arg:tt)*) => {
        err!("{}\n", format_args!($($arg)*))
    };
}

mod cmd;
mod fsize;
mod limits;
mod oom;
mod stdout;

/// The system allocator, noting refused allocations for the out-of-memory net ([`oom`]).
#[global_allocator]
static ALLOCATOR: oom::Counting = oom::Counting;

/// Continuous LLM-inference benchmark: master configs → job matrix → engine runs → per-request
/// records → metrics → database → Pareto frontiers.
#[derive(Debug, Parser)]
// A flag given twice takes its last value, as `vllm bench serve` (argparse) does, so a wrapper
// script's default can be overridden by appending the flag again; repeatable flags still append.
#[command(name = "inferbench", version, about, long_about = None, args_override_self = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Benchmark one OpenAI-compatible endpoint at one load point (flags follow `vllm bench serve`).
    Bench(Box<cmd::bench::BenchArgs>),
    /// Measure the client's own ceiling against a zero-latency server.
    #[command(
        after_help = "Exit codes: 0 every request succeeded and the token counts agree; 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr, the files and database still written), or an output file could not be written (a full disk or `ulimit -f`; the previous file is kept) (--json), or a request failed, the counts (usage, chunks, server) disagree, or out of memory midway (ulimit -v named); 2 bad flags, a server that cannot start, or out of memory before any request (ulimit -v named, never SIGABRT); 130 interrupted by Ctrl-C, SIGTERM or SIGHUP (the level in flight cut, the levels before it printed, a --spawn-server server stopped). Under ulimit -v a level whose records reach what the limit holds stops sending early (said on stderr and in --json as stopped_reason; its rates cover the time it sent)."
    )]
    Selftest(crate::cmd::bench_flags::SelftestFlags),
    /// Run the simulated OpenAI-compatible inference server.
    #[command(
        after_help = "Exit codes: 0 `--bound` table printed; 130 stopped by Ctrl-C, SIGTERM or SIGHUP (how a serving sim ends); 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr), or out of memory after it had served a request (ulimit -v named: stopped mid-run); 2 bad flags, a port that cannot be bound, a `ulimit -v` below what an idle sim needs (checked at start, naming the value that fits; never a panic or SIGABRT), or out of memory before it served any request. The start check covers the idle server only (its binary, tables and threads), not what its load holds (requests in flight up to --max-num-seqs, their KV and token state): leave room above the value it names for the load. Below about 50000 KiB the dynamic loader fails before inferbench runs (exit 127 or 139), which no check can reach."
    )]
    Sim(cmd::sim::flags::SimFlags),
    /// Embedded default: simulated server, small sweep, stored results, frontier table and chart.
    Quickstart(cmd::quickstart::Args),
    /// Expand InferenceX master configs into a job matrix (full-sweep | test-config).
    #[command(
        after_help = "Exit codes: 0 matrix written; 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr), or an output file could not be written (a full disk or `ulimit -f`; the previous file is kept) (--output); 2 bad flags, or a config that does not load (its file:line and field named)."
    )]
    Matrix(cmd::recipes::MatrixFlags),
    /// Jobs added to perf-changelog.yaml between two refs or files.
    #[command(
        after_help = "Exit codes: 0 jobs listed (also when none were added); 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr), or an output file could not be written (a full disk or `ulimit -f`; the previous file is kept) (--output); 2 bad flags, refs git cannot read, or a changelog or config that does not load."
    )]
    Changelog(cmd::recipes::ChangelogFlags),
    /// Support matrix, KV-offload policy check, CI priority and MODELS.md's policy checks from
    /// the master configs.
    #[command(
        after_help = "Exit codes: 0 done; 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr, the files and database still written), or the KV-offload policy check found an error, or `policy` found an engine-submission violation; 2 bad flags, or configs or a policy that do not load."
    )]
    Models(cmd::models_policy::Args),
    /// Run a job matrix (local, Slurm or GitHub Actions executor).
    #[command(
        after_help = "Exit codes: 0 every point ok or already done; 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr, the files and database still written), or a point failed; 130 interrupted by Ctrl-C, SIGTERM or SIGHUP (the current point cut and saved, its engine stopped; rerun the same command to resume); 2 bad flags, matrix or runner config, an --out that cannot be written (checked before any point), or another sweep is writing into --out."
    )]
    Sweep(cmd::sweep::SweepArgs),
    /// Run one matrix row (what executors call).
    #[command(
        after_help = "Exit codes: 0 the row's points ok or already done; 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr, the files and database still written), or a point failed; 130 interrupted by Ctrl-C, SIGTERM or SIGHUP (its engine stopped); 2 bad flags, matrix or row index, or an --out that cannot be written (checked before any point)."
    )]
    Job(cmd::job::JobArgs),
    /// Ingest run artifacts and imported result files into the database.
    #[command(
        after_help = "Exit codes: 0 ingested; 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr, the files and database still written), or something was skipped, a path held nothing to ingest, or (--strict) a name was unknown; 2 bad flags, a missing path or a database error (nothing stored)."
    )]
    Ingest(cmd::db::IngestFlags),
    /// Database maintenance: migrate, dump, restore.
    #[command(
        after_help = "Exit codes: 0 done; 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr); 2 bad flags, a checksum that does not match, a non-empty database to restore into, or a database error."
    )]
    Db(cmd::db::DbFlags),
    /// Query stored results (filters, Pareto frontier; table, csv or json).
    Report(cmd::views::ReportFlags),
    /// Draw Pareto charts (SVG or PNG).
    Plot(cmd::views::PlotFlags),
    /// Compare two configs at matched interactivity.
    Compare(cmd::views::CompareFlags),
    /// Dashboard: the Inference explorer and a JSON API over the database (read-only).
    Serve(cmd::serve::Args),
    /// Accuracy evals against a served model (GSM8K with InferenceX's prompt and scoring).
    #[command(
        after_help = "Exit codes: 0 every score reached its threshold (or --no-threshold); 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr, the files and database still written), or below it, every request failed, or out of memory midway (ulimit -v named); 2 bad flags, data that cannot be read, a --result-dir that cannot be written (checked before any request), or out of memory before any request (ulimit -v named, never SIGABRT); 3 the server could not be reached (every request a connect error, or no --model and /v1/models unreachable: nothing written); 130 interrupted by Ctrl-C, SIGTERM or SIGHUP (what finished scored)."
    )]
    Eval(cmd::eval::EvalArgs),
    /// AgentX: replay agentic-coding traces (sessions with sub-agents) against a chat server.
    Replay(cmd::replay::ReplayArgs),
    /// Write a synthetic AgentX trace corpus (JSONL) shaped like SemiAnalysis' (062126[-256k]).
    #[command(
        after_help = "Exit codes: 0 corpus written; 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr), or an output file could not be written (a full disk or `ulimit -f`; the previous file is kept) (--out); 2 bad flags, an --out that cannot be written (a folder, a device; checked before the corpus is made), or a corpus that does not fit in memory."
    )]
    AgentxTraces(cmd::replay::TracesArgs),
}

impl Command {
    /// Subcommands that run a server or a load (many connections and files for a long time):
    /// they start with the soft open-file limit raised to the hard one
    /// ([`limits::raise_open_files`]; issue 39 §2).
    fn long_running(&self) -> bool {
        matches!(
            self,
            Command::Bench(_)
                | Command::Selftest(_)
                | Command::Sim(_)
                | Command::Quickstart(_)
                | Command::Sweep(_)
                | Command::Job(_)
                | Command::Serve(_)
                | Command::Eval(_)
                | Command::Replay(_)
        )
    }
}

/// The command line as parsed and as `--help` shows it: every (sub)command takes a negative
/// number as a flag's value ([`parse_cli`]), and a nested subcommand (`db dump`, `matrix
/// full-sweep`) whose help lists no exit codes lists its parent's, which are the codes it
/// exits with (issue 39, second round, finding 5: only the parents listed them).
fn cli_command() -> clap::Command {
    use clap::CommandFactory as _;
    fn codes_of(c: &clap::Command) -> Option<String> {
        let help = c.get_after_help()?.to_string();
        let at = help.find("Exit codes:")?;
        Some(help[at..].to_string())
    }
    fn shape(c: clap::Command, inherited: Option<String>) -> clap::Command {
        let own = codes_of(&c);
        let c = match (&own, inherited) {
            (None, Some(codes)) => c.after_help(codes),
            _ => c,
        };
        let codes = codes_of(&c);
        c.allow_negative_numbers(true)
            .mut_subcommands(|sub| shape(sub, codes.clone()))
    }
    shape(Cli::command(), None)
}

/// The command line with every (sub)command taking a negative number as a flag's value, so
/// `--max-concurrency -1` is refused by that flag's own check, naming it, instead of clap's
/// "unexpected argument '-1' found" (trial 32 F9).
fn parse_cli<T: Into<std::ffi::OsString> + Clone>(
    args: impl IntoIterator<Item = T>,
) -> Result<Cli, clap::Error> {
    use clap::FromArgMatches as _;
    let matches = cli_command()
        .try_get_matches_from(args)
        .map_err(with_vllm_hint)?;
    Cli::from_arg_matches(&matches)
}

/// An unknown-flag error for a `vllm bench serve` flag gets a tip naming what to use instead
/// ([`crate::cmd::bench_flags::vllm_flag_hint`]; trial 32 F11); other errors pass unchanged.
fn with_vllm_hint(e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let Some(ContextValue::String(flag)) = e.get(ContextKind::InvalidArg) else {
        return e;
    };
    let Some(h) = crate::cmd::bench_flags::vllm_flag_hint(flag) else {
        return e;
    };
    // Our tip alone: clap's "a similar argument exists" guess (`--temperature` →
    // `--request-rate`) and the usage line it rewrites with that guess mislead here (trial
    // 33 F10).
    clap::Error::raw(
        ErrorKind::UnknownArgument,
        format!(
            "unexpected argument '{flag}' found\n\n  tip: vllm bench serve's flag: {h}\n\n\
             For more information, try '--help'.\n"
        ),
    )
}

/// `inferbench report | head` on stderr: stdout's errors never panic (every print goes
/// through [`stdout::write`]), but `eprintln!` panics once stderr's reader is gone. That is the
/// normal end of such a pipeline, so end quietly with 141 instead of printing a panic (`inferbench sweep 2>&1 | head`: its progress lines are on
/// stderr; trial 19 found exit 101 and a panic). Sockets are unaffected: SIGPIPE stays
/// ignored, as Rust sets it.
fn quiet_on_broken_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        let printing =
            msg.contains("failed printing to stdout") || msg.contains("failed printing to stderr");
        if printing && msg.contains("Broken pipe") {
            oom::remove_pending_temp_files();
            std::process::exit(cmd::ExitStatus::BrokenPipe.code());
        }
        // Stdout or stderr redirected to a file that reached `ulimit -f` (SIGXFSZ ignored):
        // said once, without a panic's backtrace note, exit 1.
        if printing && msg.contains("File too large") {
            let _ = std::io::Write::write_fmt(
                &mut std::io::stderr(),
                format_args!("error: {msg} (the file-size limit, `ulimit -f`)\n"),
            );
            oom::remove_pending_temp_files();
            std::process::exit(cmd::ExitStatus::Failed.code());
        }
        // A thread that could not start for want of memory (issue 39 §2): the net's message
        // and exit 2 (1 midway), as an allocation failure's abort ends.
        if oom::is_memory_panic(msg) {
            oom::exit_out_of_memory();
        }
        default(info);
    }));
}

/// `ulimit -f`: past the file-size limit the kernel sends SIGXFSZ, whose default action kills
/// the process (exit 153: no summary, a 0-byte `.json.tmp`, trial of issue 39 finding 5).
/// Ignored, the write fails with `EFBIG` ("File too large"), which every write path already
/// handles: the write is named as failed, the run goes on, the point fails (exit 1).
fn ignore_file_size_signal() {
    #[cfg(unix)]
    // SAFETY: `signal` with `SIG_IGN` installs no handler code; it runs first in `main`,
    // before any other thread exists.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// Log lines as the rest of the console's notes: `inferbench: warning: <message>` (errors
/// `inferbench: error: <message>`), no timestamp or module path (trial 32 F12: the pool's
/// warning stood out among the notes). `INFERBENCH_LOG` (a tracing filter) turns on the full
/// tracing format instead, for debugging.
struct NoteFormat;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for NoteFormat
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut w: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let level = *event.metadata().level();
        let tag = match level {
            tracing::Level::ERROR => "error: ",
            tracing::Level::WARN => "warning: ",
            _ => "",
        };
        write!(w, "inferbench: {tag}")?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

/// Installs the log subscriber: warnings and errors as notes ([`NoteFormat`]), or, with
/// `INFERBENCH_LOG` set, that filter in tracing's own format.
fn init_logging() {
    let stderr_tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    match tracing_subscriber::EnvFilter::try_from_env("INFERBENCH_LOG") {
        Ok(filter) => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            // Colour only on a terminal: logs redirected to files (sweep engine logs, CI)
            // stay plain text.
            .with_ansi(stderr_tty)
            .init(),
        Err(_) => tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .event_format(NoteFormat)
            .init(),
    }
}

fn main() {
    // The out-of-memory net first (issue 39 §2): an allocation failure anywhere after this
    // ends with a message naming `ulimit -v` and exit 2/1, never a bare SIGABRT.
    oom::install();
    oom::debug_allocate();
    // Counted before this process opens anything of its own (issue 39 §2: inherited
    // descriptors count against `ulimit -n`).
    limits::inherited_files();
    ignore_file_size_signal();
    quiet_on_broken_stdout();
    init_logging();
    // The libraries' lines and live progress, drawn here (they never print).
    cmd::progress::install();
    let cli = parse_cli(std::env::args_os()).unwrap_or_else(|e| e.exit());
    let mut pool = Ok(());
    if cli.command.long_running() {
        limits::raise_open_files();
        limits::cap_arenas_under_address_limit();
        // `serve` prepares no prompts: no pool, so that its own memory check at start is the
        // first to judge `ulimit -v` and names the value that fits (issue 39).
        if !matches!(cli.command, Command::Serve(_)) {
            pool = limits::start_prompt_pool();
        }
    }
    // The out-of-memory net names the subcommand's own flags (issue 39's leftovers, 1); `bench`
    // and `eval` set theirs once their flags are read.
    let lower = match &cli.command {
        Command::Selftest(_) => Some(limits::LOWER_SELFTEST),
        Command::Sweep(_) | Command::Job(_) => Some(limits::LOWER_SWEEP),
        Command::Replay(_) => Some(limits::LOWER_REPLAY),
        Command::Quickstart(_) => Some(limits::LOWER_QUICKSTART),
        _ => None,
    };
    if let Some(l) = lower {
        oom::set_what_to_lower(l.net);
    }
    // A server's net: "midway" is a request served, in its own words (issue 39, fresh
    // tester's finding 2).
    if matches!(cli.command, Command::Sim(_)) {
        oom::set_server();
    }
    let result = pool.and_then(|()| match cli.command {
        Command::Bench(a) => cmd::bench::run(*a),
        Command::Selftest(a) => limits::refuse_selftest(limits::selftest_need(
            &a.concurrency,
            a.duration,
            a.tokens,
            a.client_threads,
        ))
        .and_then(|()| a.run()),
        Command::Sim(a) => cmd::sim::run(a),
        Command::Quickstart(a) => cmd::quickstart::run(a),
        Command::Matrix(a) => a.run(),
        Command::Changelog(a) => a.run(),
        Command::Models(a) => cmd::models_policy::run(a),
        Command::Sweep(a) => cmd::sweep::run(a),
        Command::Job(a) => cmd::job::run(a),
        Command::Ingest(a) => cmd::ingest::run(a),
        Command::Db(a) => a.run(),
        Command::Report(a) => a.run(),
        Command::Plot(a) => a.run(),
        Command::Compare(a) => a.run(),
        Command::Serve(a) => cmd::serve::run(a),
        Command::Eval(a) => cmd::eval::run(a),
        Command::Replay(a) => cmd::replay::run(a),
        Command::AgentxTraces(a) => cmd::replay::run_traces(a),
    });
    // What became of stdout decides too (a full disk: never 0; a reader gone: 141).
    match result {
        Ok(status) => std::process::exit(stdout::finish(status).code()),
        Err(e) => {
            // A write the file-size limit stopped names `ulimit -f`.
            let chain = fsize::explain(&inferbench_core::error_chain(e.as_ref()));
            errln!("error: {chain}");
            std::process::exit(stdout::finish(cmd::error_status(&e)).code());
        }
    }
}

#[cfg(test)]
mod tests {
    /// clap's own consistency checks (conflicting names, bad defaults, missing value enums)
    /// over every subcommand at once.
    #[test]
    fn every_subcommand_passes_clap_debug_assert() {
        use clap::CommandFactory as _;
        super::Cli::command().debug_assert();
    }

    /// The long flags (and their aliases) of the subcommand at `path` (`eval gsm8k`).
    fn long_flags(path: &str) -> Vec<String> {
        let mut cli = super::cli_command();
        let mut parts = path.split(' ');
        let mut c = cli
            .find_subcommand_mut(parts.next().unwrap_or_default())
            .unwrap_or_else(|| panic!("no subcommand {path}"));
        for name in parts {
            c = c
                .find_subcommand_mut(name)
                .unwrap_or_else(|| panic!("no subcommand {path}"));
        }
        c.get_arguments()
            .flat_map(|a| {
                a.get_long()
                    .into_iter()
                    .chain(a.get_all_aliases().unwrap_or_default())
                    .map(|l| format!("--{l}"))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Issue 39's leftovers, 1: every `--flag` a refusal or the out-of-memory net tells the
    /// user to lower is a flag of that subcommand (a `--dataset-path` bench was told to lower
    /// `--random-input-len`; every subcommand but eval was told `--max-concurrency`), and the
    /// net's default (said before the flags are read, and by `sim`, `serve`, `ingest`, …)
    /// names none.
    #[test]
    fn every_hint_names_only_flags_of_its_subcommand() {
        let flags_in = |text: &str| -> Vec<String> {
            text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .filter(|w| w.starts_with("--") && w.len() > 2)
                .map(str::to_string)
                .collect()
        };
        let mut checked = 0;
        for (sub, lower) in super::limits::LOWER_BY_SUBCOMMAND {
            let known = long_flags(sub);
            for text in [lower.prompts, lower.outputs, lower.net] {
                for flag in flags_in(text) {
                    assert!(
                        known.contains(&flag),
                        "{sub}: the hint {text:?} names {flag}, not a flag of {sub}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked >= 20, "{checked}");
        assert_eq!(
            flags_in(super::oom::DEFAULT_WHAT_TO_LOWER),
            Vec::<String>::new()
        );
        // The checker catches a flag a subcommand does not have.
        assert!(!long_flags("bench").contains(&"--tokens".to_string()));
        assert!(!long_flags("sweep").contains(&"--max-concurrency".to_string()));
    }

    /// A subcommand's `--help` text, its lines joined (clap wraps long lines).
    fn help_of(sub: &str) -> String {
        let mut cli = super::cli_command();
        let help = cli
            .find_subcommand_mut(sub)
            .unwrap_or_else(|| panic!("no subcommand {sub}"))
            .render_long_help()
            .to_string();
        help.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// The exit codes a subcommand's `--help` lists: the number starting each `;`-separated
    /// item after "Exit codes:".
    fn listed_exit_codes(sub: &str) -> Vec<i32> {
        let mut cli = super::cli_command();
        let mut path = sub.split(' ');
        let mut c = cli
            .find_subcommand_mut(path.next().unwrap_or_default())
            .unwrap_or_else(|| panic!("no subcommand {sub}"));
        for name in path {
            c = c
                .find_subcommand_mut(name)
                .unwrap_or_else(|| panic!("no subcommand {sub}"));
        }
        let help = c.render_long_help().to_string();
        let (_, codes) = help
            .split_once("Exit codes:")
            .unwrap_or_else(|| panic!("{sub} --help lists no exit codes:\n{help}"));
        let codes = codes.split("\n\n").next().unwrap_or("");
        let mut out: Vec<i32> = codes
            .split(';')
            .filter_map(|item| item.split_whitespace().next()?.parse().ok())
            .collect();
        out.sort_unstable();
        out
    }

    /// Issue 39 §4: `replay --help` listed 0/1/2/130 while it exits 3 for a server unreachable
    /// before profiling. Every subcommand's help lists exactly the `ExitStatus` codes it
    /// returns (141, a closed stdout, is every subcommand's and not listed), 1 for a stdout
    /// that cannot be written included.
    #[test]
    fn every_subcommand_help_lists_the_exit_codes_it_uses() {
        use crate::cmd::ExitStatus::{Failed, Interrupted, Ok, Unreachable, Usage};
        let codes = |s: &[crate::cmd::ExitStatus]| -> Vec<i32> {
            let mut v: Vec<i32> = s.iter().map(|c| c.code()).collect();
            v.sort_unstable();
            v
        };
        let want = [
            // run_bench's RunEnd; the served model unreachable without --model (3).
            (
                "bench",
                codes(&[Ok, Failed, Usage, Unreachable, Interrupted]),
            ),
            // agentic::replay_end; the served model unreachable without --model (3).
            (
                "replay",
                codes(&[Ok, Failed, Usage, Unreachable, Interrupted]),
            ),
            (
                "eval",
                codes(&[Ok, Failed, Usage, Unreachable, Interrupted]),
            ),
            // The shutdown token (issue 39): Ctrl-C, SIGTERM, SIGHUP.
            ("selftest", codes(&[Ok, Failed, Usage, Interrupted])),
            ("sim", codes(&[Ok, Failed, Usage, Interrupted])),
            ("quickstart", codes(&[Ok, Failed, Usage, Interrupted])),
            ("matrix", codes(&[Ok, Failed, Usage])),
            ("changelog", codes(&[Ok, Failed, Usage])),
            ("models", codes(&[Ok, Failed, Usage])),
            ("sweep", codes(&[Ok, Failed, Usage, Interrupted])),
            ("job", codes(&[Ok, Failed, Usage, Interrupted])),
            ("ingest", codes(&[Ok, Failed, Usage])),
            ("db", codes(&[Ok, Failed, Usage])),
            ("report", codes(&[Ok, Failed, Usage])),
            ("plot", codes(&[Ok, Failed, Usage])),
            ("compare", codes(&[Ok, Failed, Usage])),
            ("serve", codes(&[Usage, Interrupted])),
            ("agentx-traces", codes(&[Ok, Failed, Usage])),
        ];
        for (sub, codes) in &want {
            assert_eq!(&listed_exit_codes(sub), codes, "{sub} --help");
            // Trial of issue 39's leftovers, finding 3: a stdout that cannot be written (a
            // full disk, `ulimit -f`) is 1 for every subcommand that prints there (all but
            // `serve`), and its help says so.
            if *sub != "serve" {
                assert!(
                    help_of(sub).contains(
                        "1 stdout or stderr could not be written (a full disk or `ulimit -f`"
                    ),
                    "{sub} --help does not say that a stdout write error is 1"
                );
            }
            // Issue 39, a fresh tester's finding 3: a user-named output file whose write
            // failed (through a temporary file: the previous one kept) is 1, and the help of
            // each subcommand that writes one says so.
            if ["plot", "matrix", "changelog", "agentx-traces", "selftest"].contains(sub) {
                let h = help_of(sub);
                let at = h.find(crate::cmd::WRITE_FAILED_HELP);
                assert!(at.is_some(), "{sub} --help does not list a write failure");
                let before = &h[..at.unwrap_or(0)];
                assert!(
                    before.rfind("; 1 ") > before.rfind("; 2 ").or(Some(0)),
                    "{sub} --help lists a write failure under another code than 1: {h}"
                );
            }
        }
        use clap::CommandFactory as _;
        let all: Vec<String> = super::Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .filter(|n| n != "help")
            .collect();
        assert_eq!(all.len(), want.len(), "{all:?}");
        // Issue 39, second round, finding 5: every nested subcommand's help lists the codes
        // its parent's lists (`db dump --help`, `matrix full-sweep --help` listed none).
        let mut nested = Vec::new();
        for top in super::cli_command().get_subcommands() {
            for sub in top.get_subcommands().filter(|c| c.get_name() != "help") {
                nested.push(format!("{} {}", top.get_name(), sub.get_name()));
            }
        }
        for name in [
            "db dump",
            "db restore",
            "db status",
            "db migrate",
            "matrix full-sweep",
        ] {
            assert!(nested.iter().any(|n| n == name), "{name} not in {nested:?}");
        }
        for name in &nested {
            let top = name.split(' ').next().unwrap_or_default();
            let parent = &want.iter().find(|(s, _)| *s == top).unwrap().1;
            assert_eq!(&listed_exit_codes(name), parent, "{name} --help");
        }
    }

    /// Trial 32 F9: a negative value reaches the flag's own parser, which names the flag (flags
    /// checked after parsing, `--duration -3` or `--max-error-rate -1`, name theirs there).
    #[test]
    fn a_negative_value_is_refused_by_its_flag() {
        for (flag, value) in [
            ("--max-concurrency", "-1"),
            ("--num-prompts", "-5"),
            ("--num-warmups", "-1"),
            ("--port", "-1"),
        ] {
            let e = super::parse_cli(["inferbench", "bench", flag, value])
                .unwrap_err()
                .to_string();
            assert!(e.contains(flag), "{flag} {value}: {e}");
            assert!(e.contains(value), "{flag} {value}: {e}");
            assert!(!e.contains("unexpected argument"), "{flag} {value}: {e}");
        }
    }

    /// Issue 39 §2: exactly the subcommands that run a load or a server raise their soft
    /// open-file limit at start.
    #[test]
    fn long_running_subcommands_are_the_ones_that_raise_the_open_file_limit() {
        let raises = |argv: &[&str]| {
            let mut v = vec!["inferbench"];
            v.extend_from_slice(argv);
            super::parse_cli(v).unwrap().command.long_running()
        };
        for argv in [
            &["bench", "--model", "m"][..],
            &["selftest"],
            &["sim"],
            &["quickstart"],
            &["serve"],
            &["eval", "gsm8k"],
            &["replay", "--synthetic", "quickstart"],
            &["sweep", "--matrix", "m.json"],
        ] {
            assert!(raises(argv), "{argv:?}");
        }
        for argv in [
            &["report"][..],
            &["ingest", "x.json"],
            &["agentx-traces", "-o", "t"],
        ] {
            assert!(!raises(argv), "{argv:?}");
        }
    }

    /// Trial 32 F11: `vllm bench serve` flags bench does not take say what to use instead.
    #[test]
    fn a_vllm_flag_names_its_replacement() {
        let e = super::parse_cli(["inferbench", "bench", "--temperature", "0.7"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unexpected argument '--temperature' found")
                && e.contains(
                    "tip: vllm bench serve's flag: sampling parameters go into the \
                     request body: --extra-body"
                )
                && !e.contains("similar argument"),
            "{e}"
        );
        let e = super::parse_cli(["inferbench", "bench", "--served-model-name=x"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--model is the name sent in each request"),
            "{e}"
        );
        // Any other unknown flag: clap's error as it was.
        let e = super::parse_cli(["inferbench", "bench", "--no-such-flag"])
            .unwrap_err()
            .to_string();
        assert!(!e.contains("vllm bench serve"), "{e}");
    }

    /// A single-valued flag given twice takes the last value (argparse's rule, which `vllm bench
    /// serve` users rely on); a repeatable flag (`--set`) keeps every value.
    #[test]
    fn a_repeated_flag_takes_its_last_value() {
        let cli = super::parse_cli([
            "inferbench",
            "bench",
            "--num-prompts",
            "4",
            "--num-prompts",
            "8",
            "--set",
            "hw=h100",
            "--set",
            "framework=vllm",
            "--db",
            "x.db",
        ])
        .unwrap();
        let super::Command::Bench(args) = cli.command else {
            panic!("not bench")
        };
        let flags = args.flags;
        assert_eq!(flags.num_prompts, Some(8));
        assert_eq!(flags.set, ["hw=h100", "framework=vllm"]);
    }
}
