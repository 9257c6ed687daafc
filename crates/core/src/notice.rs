//! Lines the libraries have for the person running inferbench while they work (a sweep's
//! progress, a warmup's count, a warning about a point): the libraries never print them; they
//! hand each to [`line`], which passes it to the one sink the binary installs at start
//! ([`install`]; the `inferbench` CLI writes each to stderr). Without a sink (a library used on
//! its own, its tests) the lines are dropped.

use std::sync::OnceLock;

/// Where [`line`] sends a line: a function of the line's text (no trailing newline).
pub type Sink = fn(&str);

static SINK: OnceLock<Sink> = OnceLock::new();

/// Installs `sink` as where every [`line`] goes, once per process. Returns `false` (and keeps
/// the first) when a sink was installed already.
pub fn install(sink: Sink) -> bool {
    SINK.set(sink).is_ok()
}

/// Hands `text` (one or more lines, no trailing newline) to the installed sink; dropped when
/// none is installed.
pub fn line(text: &str) {
    if let Some(sink) = SINK.get() {
        sink(text);
    }
}
