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
//! - its throughput, tokens (prompt + completion) per second over the batch's span: from the
//!   previous batch's last completion (the first batch: the first left-out request's end, or
//!   the profile's start `start_ns`) to its own last.
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
    /// successful profile requests with a TPOT count), the profile having started at
    /// `start_ns` (the records' clock). False before [`EarlyStop::min_prompts`] samples, or
    /// when a metric cannot be computed (a zero span or mean).
    pub fn known(&self, records: &[RequestRecord], start_ns: u64) -> bool {
        let mut done: Vec<(u64, f64, f64)> = records
            .iter()
            .filter(|r| r.phase == Phase::Profile && r.success)
            .filter_map(|r| {
                let tpot = r.tpot_ms()?;
                let tokens = f64::from(r.prompt_tokens) + f64::from(r.completion_tokens);
                Some((r.end_ns, tpot, tokens))
            })
            .collect();
        if (done.len() as u64) < self.min_prompts.max(BATCHES as u64) {
            return false;
        }
        done.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let size = done.len() / BATCHES;
        let skip = done.len() - size * BATCHES;
        let mut prev_end = if skip > 0 { done[skip - 1].0 } else { start_ns };
        let mut tpots = Vec::with_capacity(BATCHES);
        let mut rates = Vec::with_capacity(BATCHES);
        for b in done[skip..].chunks(size) {
            let t: Vec<f64> = b.iter().map(|p| p.1).collect();
            let Some(m) = inferbench_core::metrics::median(&t) else {
                return false;
            };
            tpots.push(m);
            let last = b[b.len() - 1].0;
            let span_s = last.saturating_sub(prev_end) as f64 / 1e9;
            if span_s <= 0.0 {
                return false;
            }
            rates.push(b.iter().map(|p| p.2).sum::<f64>() / span_s);
            prev_end = last;
        }
        relative_half_width(&tpots).is_some_and(|h| h <= self.tolerance)
            && relative_half_width(&rates).is_some_and(|h| h <= self.tolerance)
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

    /// A successful profile request ending at `end_ms` with TPOT `tpot_ms` over 11 output
    /// tokens (first token at 0 + 10 ms, last 10 · tpot later) and 100 prompt tokens.
    fn rec(id: u64, end_ms: u64, tpot_ms: f64) -> RequestRecord {
        let mut r = inferbench_testutil_free_record(id);
        r.first_token_ns = Some(10_000_000);
        r.last_token_ns = Some(10_000_000 + (tpot_ms * 10.0 * 1e6) as u64);
        r.end_ns = end_ms * 1_000_000;
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

    /// Steady completions (one every 10 ms, TPOT 20 ms): known once there are enough, never
    /// before the minimum; a throughput that halves in the second half is not known at 2 %.
    #[test]
    fn steady_samples_stop_and_drifting_ones_do_not() {
        let rule = EarlyStop {
            tolerance: 0.02,
            min_prompts: 40,
            check_every: 10,
        };
        let steady: Vec<RequestRecord> = (0..40).map(|i| rec(i, 10 * (i + 1), 20.0)).collect();
        assert!(rule.known(&steady, 0));
        assert!(!rule.known(&steady[..39], 0));
        // Gaps of 10 ms then 20 ms: batch rates 11,100 tok/s then 5,550.
        let drift: Vec<RequestRecord> = (0..40)
            .map(|i| {
                rec(
                    i,
                    if i < 20 {
                        10 * (i + 1)
                    } else {
                        200 + 20 * (i - 19)
                    },
                    20.0,
                )
            })
            .collect();
        assert!(!rule.known(&drift, 0));
        // Failed and warmup requests are not samples.
        let mut short = steady[..39].to_vec();
        let mut warm = rec(99, 400, 20.0);
        warm.phase = Phase::Warmup;
        let mut failed = rec(98, 400, 20.0);
        failed.success = false;
        short.extend([warm, failed]);
        assert!(!rule.known(&short, 0));
    }

    /// Seeded noise (±10 % TPOT, jittered completion gaps, an xorshift of seed 7): at 5 % the
    /// rule stops at its minimum (30), at 2 % at 150 of 400, at 0.1 % never; the same seed stops
    /// at the same count.
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
            let mut t = 0u64;
            (0..n)
                .map(|i| {
                    t += 8 + (next() * 4.0) as u64;
                    rec(i, t, 20.0 * (0.9 + 0.2 * next()))
                })
                .collect()
        };
        let rule = EarlyStop::for_concurrency(0.05, 8).unwrap();
        let all = samples(7, 400);
        let stop = (1..=400u64)
            .find(|n| rule.due(*n) && rule.known(&all[..*n as usize], 0))
            .unwrap();
        assert_eq!(stop, 30);
        let again = samples(7, 400);
        assert_eq!(
            (1..=400u64).find(|n| rule.due(*n) && rule.known(&again[..*n as usize], 0)),
            Some(stop)
        );
        let two = EarlyStop::for_concurrency(0.02, 8).unwrap();
        assert_eq!(
            (1..=400u64).find(|n| two.due(*n) && two.known(&all[..*n as usize], 0)),
            Some(150)
        );
        let tight = EarlyStop::for_concurrency(0.001, 8).unwrap();
        assert_eq!(
            (1..=400u64).find(|n| tight.due(*n) && tight.known(&all[..*n as usize], 0)),
            None
        );
    }
}
