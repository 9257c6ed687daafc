//! inferbench-loadgen: arrival processes, warmups, duration, live progress and the one-point
//! benchmark [`run_bench`] (DESIGN.md §2, issue #2). It drives `inferbench-client` with prompts
//! from `inferbench-workload` and hands the records to `inferbench_core::summary`.
//!
//! Scheduling rules: deadlines are absolute offsets from one start instant ([`arrivals`]);
//! arrivals are never dropped or silently delayed (a paced arrival that finds the concurrency
//! cap full waits in a FIFO queue and the wait is recorded as client queue time, its timer lag as
//! schedule lag); warmups are recorded with `phase = warmup` and excluded from every metric.
#![deny(missing_docs)]

pub mod agentic;
pub mod arrivals;
pub mod early_stop;
pub mod hints;
pub mod kept;
pub mod options;
pub mod output;
pub mod power;
pub mod progress;
pub mod prompts;
pub mod run;
pub mod samefile;
pub mod selftest;
pub mod server_cache;
pub mod server_tokenizer;

pub use inferbench_client::CancellationToken;
pub use inferbench_core::RunEnd;
pub use options::{
    limits, BenchOptions, DatasetName, OptionError, PowerMode, ProgressMode, RangeSemantics,
    SERVER_TOKENIZER,
};
pub use prompts::{BenchPrompt, PreparedPrompts};
pub use run::{run_bench, BenchOutcome, Verdict, VerdictKind};
