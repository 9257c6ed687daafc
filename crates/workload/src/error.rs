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
}
