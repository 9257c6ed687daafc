//! Live progress: the counts of the current phase (req/s, tok/s, errors), read a few times per
//! second by a display task, never per token. The library does not draw: it hands the counts
//! to the [`Display`] the binary installs ([`install_display`]; the `inferbench` CLI's is an
//! indicatif bar on a terminal, plain lines on stderr otherwise). Without one nothing is shown.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use inferbench_client::ClockSource;

use crate::options::ProgressMode;

/// How long a phase may go without any finished request before [`stall_hint`] is printed:
/// 30 s, or `INFERBENCH_STALL_HINT_S` seconds (for tests).
fn stall_hint_after() -> Duration {
    std::env::var("INFERBENCH_STALL_HINT_S")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map_or(Duration::from_secs(30), Duration::from_secs_f64)
}

/// The line printed once when phase `label` has finished no request `after` its start (trial
/// 16: a server that accepts connections and never answers left the warmup waiting without a
/// word). Worded as a question: long outputs on a slow server take a while too.
pub fn stall_hint(label: &str, after: Duration) -> String {
    format!(
        "{label}: no request has finished after {} s: is the server still loading its model, \
         or stuck (it accepted the connections but has answered nothing)? Ctrl-C stops and \
         keeps what finished; --request-timeout fails a request that takes longer",
        after.as_secs_f64()
    )
}

/// Counters of the current phase.
#[derive(Debug, Default)]
pub struct Counters {
    /// Requests finished (any outcome).
    pub done: AtomicU64,
    /// Requests failed (requests cancelled by the run not included).
    pub failed: AtomicU64,
    /// Requests cancelled by the run (Ctrl-C/SIGTERM) before they finished.
    pub cancelled: AtomicU64,
    /// Records received by the collector, every phase: with the number sent, tells when the
    /// counts are final (see [`Counters::settle`]).
    pub received: AtomicU64,
    /// Completion tokens of finished requests.
    pub tokens: AtomicU64,
    /// Whether the profile phase is being counted (else the warmup): a record counts only
    /// toward its own phase, so a warmup record that reaches the collector late is never
    /// counted as a profile request.
    pub profile: std::sync::atomic::AtomicBool,
}

impl Counters {
    /// Zeroes the counters and counts profile records from now on.
    pub fn start_profile(&self) {
        self.done.store(0, Ordering::Relaxed);
        self.failed.store(0, Ordering::Relaxed);
        self.cancelled.store(0, Ordering::Relaxed);
        self.tokens.store(0, Ordering::Relaxed);
        self.profile.store(true, Ordering::Relaxed);
    }

    /// Counts one finished record if it belongs to the phase being counted.
    pub fn count(&self, rec: &inferbench_core::RequestRecord) {
        let profile = rec.phase == inferbench_core::Phase::Profile;
        if profile == self.profile.load(Ordering::Relaxed) {
            self.done.fetch_add(1, Ordering::Relaxed);
            if rec.success {
                self.tokens
                    .fetch_add(u64::from(rec.completion_tokens), Ordering::Relaxed);
            } else if inferbench_core::summary::cancelled_by_run(rec) {
                self.cancelled.fetch_add(1, Ordering::Relaxed);
            } else {
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.received.fetch_add(1, Ordering::Release);
    }

    /// Waits (up to `limit`) until the collector has received all `sent` records, so the last
    /// progress line shows the phase's final counts, not those of a moment before. `clock`:
    /// where the limit is timed (the run's clock source).
    pub async fn settle(&self, sent: u64, limit: Duration, clock: ClockSource) {
        let stop = clock.now() + limit;
        while self.received.load(Ordering::Acquire) < sent && clock.now() < stop {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// One progress line's counts: `{n} ok, {n} failed[, {n} cancelled]; {req/s} ok req/s, {tok/s}
/// output tok/s` over `elapsed_s` seconds (the bar's message and the plain line's tail): the
/// ended requests split as the summary counts them (trial 11: "32/200 done … 16 cancelled"
/// beside a summary of 16 successful). The rate counts successful requests only: failures on a
/// dead port come back thousands a second and would read as throughput.
pub fn rate_message(done: u64, tokens: u64, failed: u64, cancelled: u64, elapsed_s: f64) -> String {
    let el = elapsed_s.max(1e-9);
    let ok = done.saturating_sub(failed + cancelled);
    let cancelled = if cancelled > 0 {
        format!(", {cancelled} cancelled")
    } else {
        String::new()
    };
    format!(
        "{ok} ok, {failed} failed{cancelled}; {:.1} ok req/s, {:.0} output tok/s",
        ok as f64 / el,
        tokens as f64 / el,
    )
}

/// A plain progress line: `[{label}] {s} s elapsed: {ended}[/{total}] requests ended: ` then
/// [`rate_message`].
pub fn plain_line(label: &str, elapsed_s: f64, done: u64, total: Option<u64>, msg: &str) -> String {
    let of = total.map_or(String::new(), |t| format!("/{t}"));
    format!("[{label}] {elapsed_s:.0} s elapsed: {done}{of} requests ended: {msg}")
}

/// One phase whose live display starts ([`Display::start`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseInfo {
    /// The phase's label (`warmup`, `profile`, …).
    pub label: &'static str,
    /// Requests the phase sends, when known.
    pub total: Option<u64>,
    /// How long the phase runs, when it is timed (`--duration`).
    pub duration: Option<Duration>,
}

/// The counts of a phase at one moment, as a display shows them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseCounts {
    /// Seconds since the phase's display started (the run's clock).
    pub elapsed_s: f64,
    /// Requests ended (any outcome).
    pub done: u64,
    /// Requests failed (cancelled ones not included).
    pub failed: u64,
    /// Requests cancelled by the run.
    pub cancelled: u64,
    /// Completion tokens of finished requests.
    pub tokens: u64,
    /// A bar's position: whole seconds elapsed for a timed phase, else requests ended.
    pub position: u64,
}

/// A live display of one phase, drawn by the binary.
pub trait PhaseDisplay: Send {
    /// How often the counts are shown ([`PhaseDisplay::update`]).
    fn tick(&self) -> Duration;
    /// A line to show above the display (the [`stall_hint`]).
    fn line(&mut self, text: &str);
    /// The counts now.
    fn update(&mut self, counts: &PhaseCounts);
    /// The final counts, shown so they stay above whatever comes next; the display ends.
    fn finish(&mut self, counts: &PhaseCounts);
}

/// What draws the live progress: installed once by the binary ([`install_display`]).
pub trait Display: Send + Sync {
    /// The display of `phase` under `mode` (never [`ProgressMode::Off`]), or `None` to show
    /// nothing.
    fn start(&self, mode: ProgressMode, phase: PhaseInfo) -> Option<Box<dyn PhaseDisplay>>;
}

static DISPLAY: OnceLock<Box<dyn Display>> = OnceLock::new();

/// Installs `display` as what draws every phase's progress, once per process. Returns `false`
/// (and keeps the first) when one was installed already.
pub fn install_display(display: Box<dyn Display>) -> bool {
    DISPLAY.set(display).is_ok()
}

/// A running display; [`Progress::finish`] stops it.
pub struct Progress {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Progress {
    /// Starts the display of one phase: `total` requests or `duration`, whichever is known;
    /// nothing with [`ProgressMode::Off`] or without an installed [`Display`].
    pub fn start(
        mode: ProgressMode,
        label: &'static str,
        total: Option<u64>,
        duration: Option<Duration>,
        counters: Arc<Counters>,
        clock: ClockSource,
    ) -> Self {
        let phase = PhaseInfo {
            label,
            total,
            duration,
        };
        let view = match mode {
            ProgressMode::Off => None,
            _ => DISPLAY.get().and_then(|d| d.start(mode, phase)),
        };
        let Some(mut view) = view else {
            return Self {
                stop: None,
                task: None,
            };
        };
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let t0 = clock.now();
            let mut interval = tokio::time::interval(view.tick());
            interval.tick().await;
            let hint_after = stall_hint_after();
            let hint_at = clock.now() + hint_after;
            let mut hinted = false;
            loop {
                // The hint has its own wake-up: a plain display ticks only every 5 s.
                let stopping = tokio::select! {
                    _ = &mut rx => true,
                    _ = interval.tick() => false,
                    _ = tokio::time::sleep_until(hint_at.into()), if !hinted => {
                        hinted = true;
                        if counters.done.load(Ordering::Relaxed) == 0 {
                            view.line(&stall_hint(label, hint_after));
                        }
                        continue;
                    }
                };
                let now = clock.now().saturating_duration_since(t0);
                let done = counters.done.load(Ordering::Relaxed);
                let counts = PhaseCounts {
                    elapsed_s: now.as_secs_f64(),
                    done,
                    failed: counters.failed.load(Ordering::Relaxed),
                    cancelled: counters.cancelled.load(Ordering::Relaxed),
                    tokens: counters.tokens.load(Ordering::Relaxed),
                    position: match duration {
                        Some(_) => now.as_secs(),
                        None => done,
                    },
                };
                if stopping {
                    view.finish(&counts);
                    break;
                }
                view.update(&counts);
            }
        });
        Self {
            stop: Some(tx),
            task: Some(task),
        }
    }

    /// Stops the display after one last update: the final counts ([`PhaseDisplay::finish`]),
    /// so they stay above whatever is printed next.
    pub async fn finish(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}
