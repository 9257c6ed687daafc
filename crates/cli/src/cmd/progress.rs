//! What the CLI shows of a library's work: the libraries' lines
//! ([`inferbench_core::notice`]) on stderr, and the load generator's live progress
//! ([`inferbench_loadgen::progress`]) as an indicatif bar on a terminal (`--progress bar`, or
//! `auto` on one), plain lines on stderr otherwise. [`install`] sets both up at start.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use inferbench_loadgen::progress::{
    plain_line, rate_message, Display, PhaseCounts, PhaseDisplay, PhaseInfo,
};
use inferbench_loadgen::ProgressMode;

/// Installs the CLI's sinks: every library line to stderr, the live progress drawn by
/// [`StderrDisplay`]. Call once, first thing in `main`.
pub fn install() {
    // A write the file-size limit stopped names `ulimit -f` ([`crate::fsize::explain`]).
    inferbench_core::notice::install(|text| errln!("{}", crate::fsize::explain(text)));
    inferbench_loadgen::progress::install_display(Box::new(StderrDisplay));
}

/// The live progress on stderr: a bar ([`Bar`]) or plain lines ([`Plain`]).
pub struct StderrDisplay;

impl Display for StderrDisplay {
    fn start(&self, mode: ProgressMode, phase: PhaseInfo) -> Option<Box<dyn PhaseDisplay>> {
        let bar = match mode {
            ProgressMode::Off => return None,
            ProgressMode::Bar => true,
            ProgressMode::Plain => false,
            ProgressMode::Auto => std::io::stderr().is_terminal(),
        };
        Some(if bar {
            Box::new(Bar::new(phase))
        } else {
            Box::new(Plain(phase))
        })
    }
}

/// A phase's counts as [`rate_message`] words them.
fn message(c: &PhaseCounts) -> String {
    rate_message(c.done, c.tokens, c.failed, c.cancelled, c.elapsed_s)
}

/// A phase's counts as one plain line ([`plain_line`]).
fn line_of(phase: &PhaseInfo, c: &PhaseCounts) -> String {
    plain_line(phase.label, c.elapsed_s, c.done, phase.total, &message(c))
}

/// An indicatif bar (req/s, tok/s, errors, ETA), updated every 200 ms.
pub struct Bar {
    phase: PhaseInfo,
    pb: ProgressBar,
}

impl Bar {
    /// The bar of `phase`: its length the phase's seconds when timed, else its requests.
    fn new(phase: PhaseInfo) -> Bar {
        let pb = match (phase.total, phase.duration) {
            (_, Some(d)) => ProgressBar::new(d.as_secs().max(1)),
            (Some(n), None) => ProgressBar::new(n),
            (None, None) => ProgressBar::no_length(),
        };
        pb.set_draw_target(ProgressDrawTarget::stderr());
        pb.set_style(
            ProgressStyle::with_template(
                "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg} ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        pb.set_prefix(phase.label);
        Bar { phase, pb }
    }
}

impl PhaseDisplay for Bar {
    fn tick(&self) -> Duration {
        Duration::from_millis(200)
    }

    fn line(&mut self, text: &str) {
        self.pb.println(text);
    }

    fn update(&mut self, c: &PhaseCounts) {
        self.pb.set_position(c.position);
        self.pb.set_message(message(c));
    }

    /// The bar's last state would be overwritten by the next phase's bar or the report: the
    /// final counts become one permanent plain line instead.
    fn finish(&mut self, c: &PhaseCounts) {
        self.pb.finish_and_clear();
        errln!("{}", line_of(&self.phase, c));
    }
}

/// Plain lines ([`plain_line`]) every 5 s.
pub struct Plain(PhaseInfo);

impl PhaseDisplay for Plain {
    fn tick(&self) -> Duration {
        Duration::from_secs(5)
    }

    fn line(&mut self, text: &str) {
        errln!("{text}");
    }

    fn update(&mut self, c: &PhaseCounts) {
        errln!("{}", line_of(&self.0, c));
    }

    fn finish(&mut self, c: &PhaseCounts) {
        errln!("{}", line_of(&self.0, c));
    }
}
