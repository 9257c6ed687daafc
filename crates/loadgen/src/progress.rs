//! Live progress: an indicatif bar (req/s, tok/s, errors, ETA) on a terminal, plain lines on
//! stderr otherwise. Counters are atomics updated by the record collector; the display task
//! reads them a few times per second, never per token.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::options::ProgressMode;

/// Counters of the current phase.
#[derive(Debug, Default)]
pub struct Counters {
    /// Requests finished (any outcome).
    pub done: AtomicU64,
    /// Requests failed.
    pub failed: AtomicU64,
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
        self.tokens.store(0, Ordering::Relaxed);
        self.profile.store(true, Ordering::Relaxed);
    }

    /// Counts one finished record if it belongs to the phase being counted.
    pub fn count(&self, rec: &inferbench_core::RequestRecord) {
        let profile = rec.phase == inferbench_core::Phase::Profile;
        if profile != self.profile.load(Ordering::Relaxed) {
            return;
        }
        self.done.fetch_add(1, Ordering::Relaxed);
        if rec.success {
            self.tokens
                .fetch_add(u64::from(rec.completion_tokens), Ordering::Relaxed);
        } else {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
    }
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
            let t0 = Instant::now();
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
            loop {
                let stopping = tokio::select! {
                    _ = &mut rx => true,
                    _ = interval.tick() => false,
                };
                let el = t0.elapsed().as_secs_f64().max(1e-9);
                let done = counters.done.load(Ordering::Relaxed);
                let failed = counters.failed.load(Ordering::Relaxed);
                let tokens = counters.tokens.load(Ordering::Relaxed);
                let msg = format!(
                    "{:.1} req/s, {:.0} output tok/s, {} failed",
                    done as f64 / el,
                    tokens as f64 / el,
                    failed
                );
                match &pb {
                    Some(pb) => {
                        pb.set_position(match duration {
                            Some(_) => t0.elapsed().as_secs(),
                            None => done,
                        });
                        pb.set_message(msg);
                    }
                    None => {
                        let of = total.map_or(String::new(), |t| format!("/{t}"));
                        eprintln!(
                            "[{label}] {:.0} s elapsed: {done}{of} requests done, {msg}",
                            el
                        );
                    }
                }
                if stopping {
                    break;
                }
            }
            if let Some(pb) = pb {
                pb.finish();
            }
        });
        Self {
            stop: Some(tx),
            task: Some(task),
        }
    }

    /// Stops the display after one last update.
    pub async fn finish(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}
