//! Live progress: an indicatif bar (req/s, tok/s, errors, ETA) on a terminal, plain lines on
//! stderr otherwise. Counters are atomics updated by the record collector; the display task
//! reads them a few times per second, never per token.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use inferbench_client::ClockSource;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

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

/// A running display; [`Progress::finish`] stops it.
pub struct Progress {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Progress {
    /// Starts the display of one phase: `total` requests or `duration`, whichever is known.
    pub fn start(
        mode: ProgressMode,
        label: &'static str,
        total: Option<u64>,
        duration: Option<Duration>,
        counters: Arc<Counters>,
        clock: ClockSource,
    ) -> Self {
        let bar = match mode {
            ProgressMode::Off => {
                return Self {
                    stop: None,
                    task: None,
                }
            }
            ProgressMode::Bar => true,
            ProgressMode::Plain => false,
            ProgressMode::Auto => std::io::stderr().is_terminal(),
        };
        let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let t0 = clock.now();
            let pb = bar.then(|| {
                let pb = match (total, duration) {
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
                pb.set_prefix(label);
                pb
            });
            let tick = if bar {
                Duration::from_millis(200)
            } else {
                Duration::from_secs(5)
            };
            let mut interval = tokio::time::interval(tick);
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
                            let hint = stall_hint(label, hint_after);
                            match &pb {
                                Some(pb) => pb.println(hint),
                                None => eprintln!("{hint}"),
                            }
                        }
                        continue;
                    }
                };
                let el = clock.now().saturating_duration_since(t0).as_secs_f64();
                let done = counters.done.load(Ordering::Relaxed);
                let failed = counters.failed.load(Ordering::Relaxed);
                let cancelled = counters.cancelled.load(Ordering::Relaxed);
                let tokens = counters.tokens.load(Ordering::Relaxed);
                let msg = rate_message(done, tokens, failed, cancelled, el);
                match &pb {
                    // The bar's last state would be overwritten by the next phase's bar or the
                    // report: the final counts become one permanent plain line instead.
                    Some(pb) if stopping => {
                        pb.finish_and_clear();
                        eprintln!("{}", plain_line(label, el, done, total, &msg));
                    }
                    Some(pb) => {
                        pb.set_position(match duration {
                            Some(_) => clock.now().saturating_duration_since(t0).as_secs(),
                            None => done,
                        });
                        pb.set_message(msg);
                    }
                    None => eprintln!("{}", plain_line(label, el, done, total, &msg)),
                }
                if stopping {
                    break;
                }
            }
        });
        Self {
            stop: Some(tx),
            task: Some(task),
        }
    }

    /// Stops the display after one last update: the final counts as one plain line
    /// ([`plain_line`]) in both modes, so they stay above whatever is printed next.
    pub async fn finish(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}
