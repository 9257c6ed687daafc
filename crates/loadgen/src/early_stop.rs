//! Early stop within a point (issue 43's second lever, `sweep --adaptive`): a profile may end
//! once the chart's metrics are known to within a relative tolerance at 95 % confidence,
//! instead of sending all of InferenceX's fixed 10 × conc prompts. Pure: the rule reads the
//! completed requests' times (client clock, nanoseconds) and never reads a clock itself.
//!
//! The rule ([`EarlyStop::known`]), by batch means: the successful profile requests, in order
//! of completion, are cut into [`BATCHES`] consecutive batches of equal size (the first
//! `n mod BATCHES` requests left out, as the oldest). For each batch:
//! - its median TPOT, ms (the chart's median interactivity is 1000 / median TPOT, so a relative
//!   error on one is the same relative error on the other, to first order);
//! - its throughput per user: tokens (prompt + completion) over the sum of its E2E latencies.
//!   In a closed loop at concurrency conc the point's throughput is conc times that (Little's
//!   law), so its relative error is the point's; unlike a rate over the batch's own span of
//!   time, it does not depend on completions that a closed loop's rounds bunch together.
//!
//! Each metric is known when the 95 % confidence half-width of its batch mean, Student's t with
//! `BATCHES − 1` degrees of freedom ([`T95`]) times the batches' standard deviation over
//! √`BATCHES`, is at most `tolerance` times the mean. The point may stop when both are known,
//! and only after at least [`EarlyStop::min_prompts`] completions; it is checked every
//! [`EarlyStop::check_every`] completions (the caller counts). Failed requests are not samples
//! (they count against the point as always). Without `sweep --adaptive` no rule is set and a
//! point sends every planned prompt.

use inferbench_core::record::{Phase, RequestRecord};

/// Batches of the batch-means estimate.
pub const BATCHES: usize = 10;

/// Student's t quantile 0.975 with `BATCHES − 1` = 9 degrees of freedom (two-sided 95 %).
pub const T95: f64 = 2.262;

/// Rounds of `conc` requests a point always completes before it may stop (3 × conc): the first
/// round starts together and is not steady state.
pub const MIN_ROUNDS: u64 = 3;

/// The fewest completions before a point may stop, whatever its concurrency.
pub const MIN_COMPLETIONS: u64 = 30;

/// When a point may end before its planned prompts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EarlyStop {
    /// Relative half-width of the 95 % confidence interval each metric must reach (0.02 = 2 %).
    pub tolerance: f64,
    /// Successful profile completions before the first check.
    pub min_prompts: u64,
    /// Completions between checks.
    pub check_every: u64,
}

impl EarlyStop {
    /// The rule for a closed loop at concurrency `conc` (0 read as 1): at least
    /// max([`MIN_ROUNDS`] × conc, [`MIN_COMPLETIONS`]) completions, checked every
    /// max(conc / 2, [`BATCHES`]) completions. A `tolerance` that is not a positive number
    /// gives no rule (`None`).
    pub fn for_concurrency(tolerance: f64, conc: u32) -> Option<EarlyStop> {
        if !(tolerance.is_finite() && tolerance > 0.0) {
            return None;
        }
        let c = u64::from(conc.max(1));
        Some(EarlyStop {
            tolerance,
            min_prompts: (MIN_ROUNDS * c).max(MIN_COMPLETIONS),
            check_every: (c / 2).max(BATCHES as u64),
        })
    }

    /// Whether a check is due after `completed` successful profile completions.
    pub fn due(&self, completed: u64) -> bool {
        completed >= self.min_prompts
            && (completed - self.min_prompts).is_multiple_of(self.check_every.max(1))
    }

    /// Whether the metrics are known to within the tolerance from `records` (any order; only
    /// successful profile requests with a TPOT count). False before
    /// [`EarlyStop::min_prompts`] samples, or when a metric cannot be computed (a zero mean).
    pub fn known(&self, records: &[RequestRecord]) -> bool {
        let done: Vec<Sample> = records.iter().filter_map(sample).collect();
        self.known_samples(done)
    }

    /// [`EarlyStop::known`] over samples already taken ([`sample`]), in any order.
    pub fn known_samples(&self, mut done: Vec<Sample>) -> bool {
        if (done.len() as u64) < self.min_prompts.max(BATCHES as u64) {
            return false;
        }
        done.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let size = done.len() / BATCHES;
        let skip = done.len() - size * BATCHES;
        let mut tpots = Vec::with_capacity(BATCHES);
        let mut rates = Vec::with_capacity(BATCHES);
        for b in done[skip..].chunks(size) {
            let t: Vec<f64> = b.iter().map(|p| p.1).collect();
            let Some(m) = inferbench_core::metrics::median(&t) else {
                return false;
            };
            tpots.push(m);
            let e2el_s = b.iter().map(|p| p.3).sum::<f64>() / 1e3;
            if e2el_s <= 0.0 {
                return false;
            }
            rates.push(b.iter().map(|p| p.2).sum::<f64>() / e2el_s);
        }
        relative_half_width(&tpots).is_some_and(|h| h <= self.tolerance)
            && relative_half_width(&rates).is_some_and(|h| h <= self.tolerance)
    }
}

/// What the rule reads of one request: (end, ns on the records' clock; TPOT, ms; prompt +
/// completion tokens; E2E latency, ms).
pub type Sample = (u64, f64, f64, f64);

/// The [`Sample`] of a successful profile request with a TPOT (at least two output tokens);
/// `None` for any other.
pub fn sample(r: &RequestRecord) -> Option<Sample> {
    if r.phase != Phase::Profile || !r.success {
        return None;
    }
    let tpot = r.tpot_ms()?;
    let tokens = f64::from(r.prompt_tokens) + f64::from(r.completion_tokens);
    Some((r.end_ns, tpot, tokens, r.e2el_ms()?))
}

/// The rule applied as records arrive (shared by a point's request tasks): collects the
/// samples, checks when due, and once the metrics are known says so for good.
#[derive(Debug)]
pub struct Tracker {
    rule: EarlyStop,
    samples: std::sync::Mutex<Vec<Sample>>,
    active: std::sync::atomic::AtomicBool,
    stopped: std::sync::atomic::AtomicBool,
}

impl Tracker {
    /// A tracker of `rule`, inactive until [`Tracker::start`].
    pub fn new(rule: EarlyStop) -> Tracker {
        Tracker {
            rule,
            samples: std::sync::Mutex::new(Vec::new()),
            active: std::sync::atomic::AtomicBool::new(false),
            stopped: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The profile started: samples count from now on.
    pub fn start(&self) {
        self.active
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Takes `r` as a sample (a successful profile request, once started) and checks the rule
    /// when due.
    pub fn observe(&self, r: &RequestRecord) {
        use std::sync::atomic::Ordering;
        if !self.active.load(Ordering::Acquire) || self.stopped.load(Ordering::Acquire) {
            return;
        }
        let Some(s) = sample(r) else {
            return;
        };
        let mut v = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        v.push(s);
        let n = v.len() as u64;
        if self.rule.due(n) && self.rule.known_samples(v.clone()) {
            self.stopped.store(true, Ordering::Release);
        }
    }

    /// Whether the metrics are known: send no more profile requests.
    pub fn stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The rule.
    pub fn rule(&self) -> EarlyStop {
        self.rule
    }
}

/// The 95 % confidence half-width of the mean of `batches`, relative to the mean:
/// [`T95`] · s / √n / mean (s the sample standard deviation). `None` for fewer than two
/// batches or a mean that is not positive.
pub fn relative_half_width(batches: &[f64]) -> Option<f64> {
    let n = batches.len();
    if n < 2 {
        return None;
    }
    let mean = batches.iter().sum::<f64>() / n as f64;
    if !(mean.is_finite() && mean > 0.0) {
        return None;
    }
    let var = batches.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some(T95 * var.sqrt() / (n as f64).sqrt() / mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A successful profile request sent at `sent_ms`, with E2EL `e2el_ms` and TTFT `ttft_ms`
    /// (so TPOT (E2EL − TTFT) / 10 over its 11 output tokens) and 100 prompt tokens.
    fn rec(id: u64, sent_ms: u64, e2el_ms: f64, ttft_ms: f64) -> RequestRecord {
        let mut r = inferbench_testutil_free_record(id);
        let sent = sent_ms * 1_000_000;
        r.sent_ns = sent;
        r.first_token_ns = Some(sent + (ttft_ms * 1e6) as u64);
        r.last_token_ns = Some(sent + (e2el_ms * 1e6) as u64);
        r.end_ns = sent + (e2el_ms * 1e6) as u64;
        r.prompt_tokens = 100;
        r.completion_tokens = 11;
        r
    }

    /// A bare successful profile record (no test-only crate in loadgen's unit tests).
    fn inferbench_testutil_free_record(id: u64) -> RequestRecord {
        let mut r: RequestRecord = serde_json::from_value(serde_json::json!({
            "schema_version": 1, "request_id": id, "phase": "profile", "success": true,
            "scheduled_ns": 0, "sent_ns": 0, "end_ns": 0, "chunks": [],
            "prompt_tokens": 0, "prompt_tokens_client": 0, "completion_tokens": 0,
            "completion_tokens_source": "server", "output_text": ""
        }))
        .expect("a record");
        r.success = true;
        r
    }

    #[test]
    fn the_rule_for_a_concurrency() {
        let r = EarlyStop::for_concurrency(0.02, 64).unwrap();
        assert_eq!((r.min_prompts, r.check_every), (192, 32));
        let r = EarlyStop::for_concurrency(0.02, 1).unwrap();
        assert_eq!((r.min_prompts, r.check_every), (30, 10));
        assert_eq!(EarlyStop::for_concurrency(0.0, 8), None);
        assert_eq!(EarlyStop::for_concurrency(f64::NAN, 8), None);
        assert!(!r.due(29) && r.due(30) && !r.due(35) && r.due(40));
    }

    /// Half-widths by hand: batches 9, 11 (mean 10, s = √2): 12.706 would be t(1); with T95
    /// 2.262 · √2 / √2 / 10 = 0.2262.
    #[test]
    fn half_width_by_hand() {
        assert_eq!(relative_half_width(&[9.0, 11.0]), Some(0.2262));
        assert_eq!(relative_half_width(&[5.0; 10]), Some(0.0));
        assert_eq!(relative_half_width(&[1.0]), None);
        assert_eq!(relative_half_width(&[-1.0, 1.0]), None);
    }

    /// Steady requests (E2EL 300 ms, TTFT 20 ms): known once there are enough, never before
    /// the minimum; E2E latencies that double in the second half (throughput per user halves)
    /// are not known at 2 %.
    #[test]
    fn steady_samples_stop_and_drifting_ones_do_not() {
        let rule = EarlyStop {
            tolerance: 0.02,
            min_prompts: 40,
            check_every: 10,
        };
        let steady: Vec<RequestRecord> = (0..40).map(|i| rec(i, 10 * i, 300.0, 20.0)).collect();
        assert!(rule.known(&steady));
        assert!(!rule.known(&steady[..39]));
        let drift: Vec<RequestRecord> = (0..40)
            .map(|i| rec(i, 10 * i, if i < 20 { 300.0 } else { 600.0 }, 20.0))
            .collect();
        assert!(!rule.known(&drift));
        // Failed and warmup requests are not samples.
        let mut short = steady[..39].to_vec();
        let mut warm = rec(99, 400, 300.0, 20.0);
        warm.phase = Phase::Warmup;
        let mut failed = rec(98, 400, 300.0, 20.0);
        failed.success = false;
        short.extend([warm, failed]);
        assert!(!rule.known(&short));
    }

    /// Seeded noise (±10 % E2EL and TTFT, an xorshift of seed 7): at 5 % the rule stops at its
    /// minimum (30), at 2 % at 50 of 400, at 0.1 % never; the same seed stops at the same
    /// count.
    #[test]
    fn seeded_noise_stops_at_an_exact_count() {
        let samples = |seed: u64, n: u64| -> Vec<RequestRecord> {
            let mut s = seed;
            let mut next = || {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % 1000) as f64 / 1000.0
            };
            (0..n)
                .map(|i| {
                    let e2el = 300.0 * (0.9 + 0.2 * next());
                    rec(i, 10 * i, e2el, 20.0 * (0.9 + 0.2 * next()))
                })
                .collect()
        };
        let rule = EarlyStop::for_concurrency(0.05, 8).unwrap();
        let all = samples(7, 400);
        let stop = (1..=400u64)
            .find(|n| rule.due(*n) && rule.known(&all[..*n as usize]))
            .unwrap();
        assert_eq!(stop, 30);
        let again = samples(7, 400);
        assert_eq!(
            (1..=400u64).find(|n| rule.due(*n) && rule.known(&again[..*n as usize])),
            Some(stop)
        );
        let two = EarlyStop::for_concurrency(0.02, 8).unwrap();
        assert_eq!(
            (1..=400u64).find(|n| two.due(*n) && two.known(&all[..*n as usize])),
            Some(50)
        );
        let tight = EarlyStop::for_concurrency(0.001, 8).unwrap();
        assert_eq!(
            (1..=400u64).find(|n| tight.due(*n) && tight.known(&all[..*n as usize])),
            None
        );
    }
}
