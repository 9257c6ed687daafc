//! [`WorkloadError`]: every way preparing a workload can fail. Messages name the file (and the
//! line for line-oriented formats) or the field to fix.

use std::path::PathBuf;

/// Why a tokenizer, dataset or prompt set could not be prepared.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkloadError {
    /// A tokenizer spec could not be loaded (`o200k_base`, `cl100k_base` or a `tokenizer.json`).
    #[error("tokenizer {spec:?}: {reason}")]
    Tokenizer {
        /// What was asked for (name or path).
        spec: String,
        /// Why it failed.
        reason: String,
    },
    /// A file could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A dataset file has bad content.
    #[error("{}{}: {reason}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line, for line-oriented formats (JSONL).
        line: Option<usize>,
        /// What is wrong.
        reason: String,
    },
    /// A dataset file yielded no usable prompt.
    #[error("{}: no usable prompt in the file ({reason})", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
        /// Why (e.g. all conversations lacked a user turn).
        reason: String,
    },
    /// A workload option is out of range.
    #[error("invalid {field}: {reason}")]
    InvalidSpec {
        /// The option (`--random-range-ratio`, …).
        field: &'static str,
        /// What is wrong and what is allowed.
        reason: String,
    },
    /// A random prompt could not be brought to its exact token count (should not happen; reported
    /// instead of sending a prompt of the wrong length).
    #[error("prompt {index}: could not reach exactly {target} tokens (got {got}) under tokenizer {tokenizer}")]
    CannotFit {
        /// Prompt index.
        index: usize,
        /// Target token count.
        target: u32,
        /// Closest count reached.
        got: usize,
        /// Tokenizer id.
        tokenizer: String,
    },
    /// Not one prompt (or trace) of an input file fits in the memory left for them (issue 39's
    /// leftovers, 3): the loader went on counting, without keeping, what the run reads of the
    /// file, so `need` is what would let the load pass; the caller names the limit that gives
    /// it (`ulimit -v`, in the CLI).
    #[error(
        "{}{}: not one {what} of it fits: the {} the run reads need about {} KiB and {} KiB of \
         memory is left for them (`ulimit -v` or the memory available, less what \
         the streams, records and the process need)",
        path.display(),
        line.map(|l| format!(":{l}")).unwrap_or_default(),
        if *count == 1 { format!("one {what}") } else { format!("{count} {what}s") },
        need.div_ceil(1024),
        room >> 10
    )]
    NoneFits {
        /// The file.
        path: PathBuf,
        /// 1-based line of the first prompt (or trace), which alone passed the room.
        line: Option<usize>,
        /// `prompt` or `trace`.
        what: &'static str,
        /// Prompts (or traces) the run reads of the file (repeats of a shorter file included).
        count: usize,
        /// Bytes they need, as the loader counts them (at most: repeats count as whole
        /// prompts).
        need: u64,
        /// Bytes that were left for them (the loader's budget).
        room: u64,
    },
}
