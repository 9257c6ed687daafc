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

/// AgentX's shortest valid profiling phase, s (InferenceX's rule: a replay under 900 s is no
/// valid submission; `inferbench_core::summary::agentic::COVERAGE_MIN_DURATION_S`). An AgentX
/// replay never stops early before it.
pub const AGENTIC_MIN_PROFILE_S: f64 = inferbench_core::summary::agentic::COVERAGE_MIN_DURATION_S;

/// The fewest profile completions before an AgentX replay may stop early, whatever its lanes:
/// 10 per batch, so each batch's p90 rests on at least 10 requests.
pub const AGENTIC_MIN_COMPLETIONS: u64 = 10 * BATCHES as u64;

/// When an AgentX replay (`agentic-coding` rows of `sweep --adaptive`) may end before its
/// duration: once its chart metric, the p90 E2E-normalized interactivity (tokens/s/user,
/// `inferbench_core::metrics::e2e_normalized_interactivity` at 90), is known to within
/// `tolerance` at 95 % confidence, and never before [`AGENTIC_MIN_PROFILE_S`] of profiling (from
/// its first profile send), so that an early-stopped replay is valid exactly when a replay of
/// that length would be by InferenceX's rules. The replay then ends as at its duration (no new
/// request; the requests in flight get the grace; those cut are left out): the stop is not a
/// cancellation. The rule, by batch means as [`EarlyStop`]'s: the successful profile requests
/// in order of completion are cut into [`BATCHES`] batches (the oldest `n mod BATCHES` left
/// out); each batch's p90 E2E-normalized interactivity; known when the batch means' 95 %
/// half-width (Student's t, [`T95`]) is at most `tolerance` times their mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgenticEarlyStop {
    /// Relative half-width of the 95 % confidence interval the metric must reach.
    pub tolerance: f64,
    /// Profiling time before the first check, ns on the run clock (900 s).
    pub min_profile_ns: u64,
    /// Successful profile completions before the first check.
    pub min_requests: u64,
    /// Completions between checks.
    pub check_every: u64,
}

/// What the AgentX rule reads of one request: (end, ns on the run clock; E2E latency per
/// output token, ms).
pub type AgenticSample = (u64, f64);

impl AgenticEarlyStop {
    /// The rule for a replay of `lanes` lanes (0 read as 1): at least [`AGENTIC_MIN_PROFILE_S`]
    /// of profiling and max(3 × lanes, [`AGENTIC_MIN_COMPLETIONS`]) completions, checked every
    /// max(lanes / 2, [`BATCHES`]) completions. `None` for a tolerance that is not a positive
    /// number.
    pub fn for_lanes(tolerance: f64, lanes: u32) -> Option<AgenticEarlyStop> {
        if !(tolerance.is_finite() && tolerance > 0.0) {
            return None;
        }
        let l = u64::from(lanes.max(1));
        Some(AgenticEarlyStop {
            tolerance,
            min_profile_ns: (AGENTIC_MIN_PROFILE_S * 1e9) as u64,
            min_requests: (MIN_ROUNDS * l).max(AGENTIC_MIN_COMPLETIONS),
            check_every: (l / 2).max(BATCHES as u64),
        })
    }

    /// Whether a check is due with `completed` samples after `profiled_ns` of profiling (from
    /// the first profile send to now).
    pub fn due(&self, profiled_ns: u64, completed: u64) -> bool {
        profiled_ns >= self.min_profile_ns
            && completed >= self.min_requests
            && (completed - self.min_requests).is_multiple_of(self.check_every.max(1))
    }

    /// Whether the p90 E2E-normalized interactivity of `samples` (any order) is known to within
    /// the tolerance. False with fewer than [`AgenticEarlyStop::min_requests`] samples or a
    /// batch without a finite positive p90.
    pub fn known(&self, samples: &[AgenticSample]) -> bool {
        if (samples.len() as u64) < self.min_requests.max(AGENTIC_MIN_COMPLETIONS) {
            return false;
        }
        let mut done = samples.to_vec();
        done.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let size = done.len() / BATCHES;
        let skip = done.len() - size * BATCHES;
        let mut p90s = Vec::with_capacity(BATCHES);
        for b in done[skip..].chunks(size) {
            let per_token: Vec<f64> = b.iter().map(|s| s.1).collect();
            let Some(x) = inferbench_core::metrics::percentile(&per_token, 90.0)
                .and_then(inferbench_core::metrics::interactivity_from_tpot_ms)
            else {
                return false;
            };
            p90s.push(x);
        }
        relative_half_width(&p90s).is_some_and(|h| h <= self.tolerance)
    }
}

/// The [`AgenticSample`] of a successful profile request with output tokens and an E2E
/// latency; `None` for any other (failed, warmup, cut at the end, no output).
pub fn agentic_sample(r: &RequestRecord) -> Option<AgenticSample> {
    if r.phase != Phase::Profile || !r.success || r.completion_tokens == 0 {
        return None;
    }
    Some((r.end_ns, r.e2el_ms()? / f64::from(r.completion_tokens)))
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

    /// AgentX (issue 43): steady per-token latencies (30 ms/token: 33.3 tok/s/user) are known
    /// once the checks may run, but never before 900 s of profiling nor before 100 samples;
    /// a replay whose latencies double halfway is not known at 2 %; cut, failed and warmup
    /// requests are no samples.
    #[test]
    fn agentic_replays_stop_only_after_900_s_and_when_the_p90_is_known() {
        let rule = AgenticEarlyStop::for_lanes(0.02, 8).unwrap();
        assert_eq!(
            (rule.min_profile_ns, rule.min_requests, rule.check_every),
            (900_000_000_000, 100, 10)
        );
        assert_eq!(
            AgenticEarlyStop::for_lanes(0.02, 64).unwrap().min_requests,
            192
        );
        assert_eq!(AgenticEarlyStop::for_lanes(-1.0, 8), None);
        let s = 1_000_000_000u64;
        assert!(!rule.due(899 * s, 100));
        assert!(rule.due(900 * s, 100) && !rule.due(900 * s, 105) && rule.due(900 * s, 110));
        assert!(!rule.due(1800 * s, 99));
        let steady: Vec<AgenticSample> = (0..120).map(|i| (i * 10 * s, 30.0)).collect();
        assert!(rule.known(&steady));
        assert!(!rule.known(&steady[..99]));
        let drift: Vec<AgenticSample> = (0..120)
            .map(|i| (i * 10 * s, if i < 60 { 30.0 } else { 60.0 }))
            .collect();
        assert!(!rule.known(&drift));
        let mut r = rec(1, 0, 300.0, 20.0);
        assert_eq!(agentic_sample(&r), Some((300_000_000, 300.0 / 11.0)));
        r.success = false;
        assert_eq!(agentic_sample(&r), None);
        let mut w = rec(2, 0, 300.0, 20.0);
        w.phase = Phase::Warmup;
        assert_eq!(agentic_sample(&w), None);
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
