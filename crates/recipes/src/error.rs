//! Errors of this crate. Every configuration problem names `file:line:col` and the field path.

use std::fmt;

use crate::yaml::Pos;

/// A problem in an input file (master config, `runners.yaml`, `perf-changelog.yaml`, matrix JSON).
///
/// Displayed as `file:line:col: field: message` (the field part is left out when empty), e.g.
/// `nvidia-master.yaml:120:9: dsr1-fp4-b200-sglang.scenarios.fixed-seq-len[0].search-space[1].tp:
/// missing required field`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file (as given by the caller).
    pub file: String,
    /// 1-based line; 0 when the problem has no single position (e.g. a missing file).
    pub line: usize,
    /// 1-based column; 0 when unknown.
    pub col: usize,
    /// Dotted path of the offending field (`key.scenarios.fixed-seq-len[0].isl`); may be empty.
    pub field: String,
    /// What is wrong, including the offending value where useful.
    pub message: String,
}

impl ConfigError {
    /// Builds an error at `pos` in `file` about `field`.
    pub fn new(
        file: impl Into<String>,
        pos: Pos,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ConfigError {
            file: file.into(),
            line: pos.line,
            col: pos.col,
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.col)?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Any error of this crate.
///
/// Each variant's `Display` is the whole message and `source()` repeats none of it (a
/// [`ConfigError`] is shown through, an I/O cause is part of [`Error::Io`]'s text and not a
/// `source`), so `anyhow`'s `{:#}` chain prints every problem exactly once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A malformed or invalid input file; see [`ConfigError`].
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Several input problems found at once (all are reported, one per line).
    #[error("{}", .0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))]
    ConfigMany(Vec<ConfigError>),
    /// A file could not be read.
    #[error("cannot read {path}: {cause}")]
    Io {
        /// The path.
        path: String,
        /// The cause (shown in the message; deliberately not a `source`, so it is not printed
        /// twice by error-chain printers).
        cause: std::io::Error,
    },
    /// Invalid command-line arguments (conflicting flags, unknown config key, …).
    #[error("{0}")]
    Usage(String),
    /// The expansion itself failed (e.g. runner hardware facts missing for a DRAM-offload row).
    #[error("{0}")]
    Generate(String),
}

impl Error {
    /// Wraps a list of problems; a single one becomes [`Error::Config`].
    pub fn from_many(mut errors: Vec<ConfigError>) -> Self {
        if errors.len() == 1 {
            Error::Config(errors.remove(0))
        } else {
            Error::ConfigMany(errors)
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Reads a file to a string, mapping the I/O error to [`Error::Io`] with the path.
pub fn read_to_string(path: &std::path::Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|cause| Error::Io {
        path: path.display().to_string(),
        cause,
    })
}
