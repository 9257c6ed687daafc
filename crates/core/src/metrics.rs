//! Metric math over [`crate::RequestRecord`]s: percentiles, TTFT/TPOT/ITL/E2EL statistics,
//! throughput, goodput, interactivity (DESIGN.md §4). Owned by the metrics work of issue #2.
//!
//! Every definition lives in exactly one function here, with its formula, unit and exclusions in
//! the doc comment and a unit test with hand-computed numbers below it. Latencies are in
//! **milliseconds** (`_ms`), rates in **per second** (`_rps`, `_tok_s`), durations in **seconds**
//! (`_s`) unless a name says otherwise. Per-request values come from [`crate::RequestRecord`]'s own
//! accessors (`ttft_ms`, `tpot_ms`, …), so the per-request formulas are defined once, there.
//!
//! Statistics follow NumPy, as vLLM's `benchmark_serving.py` does (reference/inferencex-producer.md
//! §6.4): `mean`, `median`, population `std` (ddof = 0) and `percentile` with NumPy's default
//! `method="linear"` over the raw values. Like vLLM (`np.mean(x or 0)`), the statistics of an empty
//! sample are reported as `0.0` by [`Distribution::of`]; the `Option`-returning functions let callers
//! tell "no data" apart.

use crate::record::{RequestRecord, TokenSource};
use serde::{Deserialize, Serialize};

/// Milliseconds per second.
pub const MS_PER_S: f64 = 1000.0;
/// Nanoseconds per millisecond.
pub const NS_PER_MS: f64 = 1_000_000.0;
/// Nanoseconds per second.
pub const NS_PER_S: f64 = 1_000_000_000.0;

/// Default `--metric-percentiles` (vLLM / InferenceX fixed-seq): p90, p99, p99.9.
pub const DEFAULT_PERCENTILES: [f64; 3] = [90.0, 99.0, 99.9];

/// Default quantiles of the E2E-normalized interactivity extras (p75 and p90; DESIGN.md §4 uses
/// q = 90 as the headline).
pub const E2E_INTERACTIVITY_QUANTILES: [f64; 2] = [75.0, 90.0];

// ---------------------------------------------------------------------------------------------
// Plain statistics
// ---------------------------------------------------------------------------------------------

/// Arithmetic mean; `None` for an empty slice.
pub fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    Some(values.iter().sum::<f64>() / values.len() as f64)
}

/// Population standard deviation `sqrt(mean((x − mean)²))` (NumPy `np.std`, ddof = 0, as vLLM
/// reports `std_*_ms`); `None` for an empty slice.
pub fn std_pop(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    let var = values.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / values.len() as f64;
    Some(var.sqrt())
}

/// The `q`-th percentile (`q` in `[0, 100]`) of **ascending-sorted** `sorted`, NumPy's default
/// `method="linear"`: virtual index `h = (n − 1)·q/100`, result `x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] −
/// x[⌊h⌋])`, using NumPy's two-sided lerp (computed from the upper neighbour when the fraction is
/// ≥ 0.5) so results match `np.percentile` bit for bit on small samples.
///
/// Returns `None` for an empty slice or a `q` outside `[0, 100]` / not finite. The caller must
/// pass sorted data ([`percentile`] sorts a copy).
pub fn percentile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    let (i, j, t) = percentile_index(sorted.len(), q)?;
    Some(lerp(sorted[i], sorted[j], t))
}

/// NumPy's linear-method positions for percentile `q` of `n` sorted values: the 0-based indices
/// `(⌊h⌋, ⌊h⌋ + 1)` (clamped to `n − 1`) around the virtual index `h = (n − 1)·q/100` and its
/// fraction `h − ⌊h⌋`. `None` for `n = 0` or `q` outside `[0, 100]` / not finite. Shared by
/// [`percentile_sorted`] and the exact large-sample path ([`crate::exact`]).
pub fn percentile_index(n: usize, q: f64) -> Option<(usize, usize, f64)> {
    if n == 0 || !q.is_finite() || !(0.0..=100.0).contains(&q) {
        return None;
    }
    let h = (n - 1) as f64 * (q / 100.0);
    let lo = h.floor();
    let i = (lo as usize).min(n - 1);
    Some((i, (i + 1).min(n - 1), h - lo))
}

/// NumPy's two-sided lerp from `a` to `b` at fraction `t`: from the upper neighbour when
/// `t ≥ 0.5`, so results match `np.percentile` bit for bit.
pub fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

/// The `q`-th percentile of unsorted `values` (sorts a copy); see [`percentile_sorted`].
/// NaN values sort last (`f64::total_cmp`).
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    percentile_sorted(&v, q)
}

/// Median = 50th percentile (NumPy `np.median`: mean of the two middle values for even `n`).
pub fn median(values: &[f64]) -> Option<f64> {
    percentile(values, 50.0)
}

/// Formats a percentile for a result key the way vLLM does (`str(int(p)) if int(p) == p else
/// str(p)`): `90.0 → "90"`, `99.9 → "99.9"`.
pub fn percentile_label(q: f64) -> String {
    if q.fract() == 0.0 && q.abs() < 1e15 {
        format!("{}", q as i64)
    } else {
        format!("{q}")
    }
}

/// Summary statistics of one sample, in the sample's unit.
///
/// Serialized as `{"count", "mean", "median", "std", "min", "max", "p90", "p99", "p99.9", …}` (the
/// percentile keys from the requested list, labelled by [`percentile_label`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Distribution {
    /// Number of values.
    pub count: usize,
    /// Mean; 0 when empty.
    pub mean: f64,
    /// Median; 0 when empty.
    pub median: f64,
    /// Population standard deviation; 0 when empty.
    pub std: f64,
    /// Minimum; 0 when empty.
    pub min: f64,
    /// Maximum; 0 when empty.
    pub max: f64,
    /// `(q, value)` for each requested percentile `q` (0 when empty), in request order.
    pub percentiles: Vec<(f64, f64)>,
}

impl Distribution {
    /// Statistics of `values` at percentiles `qs` (each in `[0, 100]`; others give 0). An empty
    /// sample gives zeros, like vLLM's `np.mean(x or 0)`.
    pub fn of(values: &[f64], qs: &[f64]) -> Self {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let pct = |q| percentile_sorted(&sorted, q).unwrap_or(0.0);
        Distribution {
            count: sorted.len(),
            mean: mean(&sorted).unwrap_or(0.0),
            median: pct(50.0),
            std: std_pop(&sorted).unwrap_or(0.0),
            min: sorted.first().copied().unwrap_or(0.0),
            max: sorted.last().copied().unwrap_or(0.0),
            percentiles: qs.iter().map(|&q| (q, pct(q))).collect(),
        }
    }

    /// The value at percentile `q` if it was requested.
    pub fn at(&self, q: f64) -> Option<f64> {
        self.percentiles
            .iter()
            .find(|(p, _)| *p == q)
            .map(|(_, v)| *v)
    }
}

impl Serialize for Distribution {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(6 + self.percentiles.len()))?;
        m.serialize_entry("count", &self.count)?;
        m.serialize_entry("mean", &self.mean)?;
        m.serialize_entry("median", &self.median)?;
        m.serialize_entry("std", &self.std)?;
        m.serialize_entry("min", &self.min)?;
        m.serialize_entry("max", &self.max)?;
        for (q, v) in &self.percentiles {
            m.serialize_entry(&format!("p{}", percentile_label(*q)), v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Distribution {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let num = |k: &str| map.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
        let percentiles = map
            .iter()
            .filter_map(|(k, v)| {
                let q: f64 = k.strip_prefix('p')?.parse().ok()?;
                Some((q, v.as_f64()?))
            })
            .collect();
        Ok(Distribution {
            count: num("count") as usize,
            mean: num("mean"),
            median: num("median"),
            std: num("std"),
            min: num("min"),
            max: num("max"),
            percentiles,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Per-request samples (profile phase, successful requests)
// ---------------------------------------------------------------------------------------------

/// A latency metric with vLLM's result-key name (`ttft` → `mean_ttft_ms`, …), plus TTFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// Time to first token (any channel), ms.
    Ttft,
    /// Time per output token (request-weighted, first token excluded), ms.
    Tpot,
    /// Inter-token (inter-chunk) latency, pooled over requests, ms.
    Itl,
    /// End-to-end latency (send → last token-bearing chunk), ms.
    E2el,
    /// Time to first visible output token (reasoning excluded), ms. Reported in the `inferbench`
    /// extras, never among vLLM's keys.
    Ttfo,
}

impl Metric {
    /// vLLM's metric name used in result keys (`"ttft"`, `"tpot"`, `"itl"`, `"e2el"`, `"ttfo"`).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Tpot => "tpot",
            Metric::Itl => "itl",
            Metric::E2el => "e2el",
            Metric::Ttfo => "ttfo",
        }
    }

    /// Parses one `--percentile-metrics` item (case-insensitive). `None` for unknown names.
    pub fn parse(s: &str) -> Option<Metric> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ttft" => Some(Metric::Ttft),
            "tpot" => Some(Metric::Tpot),
            "itl" => Some(Metric::Itl),
            "e2el" => Some(Metric::E2el),
            "ttfo" => Some(Metric::Ttfo),
            _ => None,
        }
    }

    /// The per-request (or, for ITL, pooled per-chunk) sample of this metric in ms over `records`,
    /// counting only profile-phase successful requests (see [`sample_ms`]).
    pub fn sample_ms(self, records: &[RequestRecord]) -> Vec<f64> {
        sample_ms(records, self)
    }
}

/// Default `--percentile-metrics`: the four vLLM metrics InferenceX scripts select
/// (`ttft,tpot,itl,e2el`).
pub const DEFAULT_PERCENTILE_METRICS: [Metric; 4] =
    [Metric::Ttft, Metric::Tpot, Metric::Itl, Metric::E2el];

/// True when a record counts in the metrics: profile phase and successful (warmups and failures
/// are excluded from every latency statistic, as in vLLM).
pub fn counts(r: &RequestRecord) -> bool {
    r.success && r.phase == crate::record::Phase::Profile
}

/// The sample of `metric` in ms over the counted records ([`counts`]):
/// - TTFT, TTFO, E2EL: one value per request that has the timestamp;
/// - TPOT: one value per request with `completion_tokens > 1` (DESIGN.md §4), each request
///   weighted equally;
/// - ITL: every gap between consecutive token-bearing chunks of every request, pooled (vLLM).
pub fn sample_ms(records: &[RequestRecord], metric: Metric) -> Vec<f64> {
    let ok = records.iter().filter(|r| counts(r));
    match metric {
        Metric::Ttft => ok.filter_map(RequestRecord::ttft_ms).collect(),
        Metric::Ttfo => ok.filter_map(RequestRecord::ttfo_ms).collect(),
        Metric::E2el => ok.filter_map(RequestRecord::e2el_ms).collect(),
        Metric::Tpot => ok.filter_map(RequestRecord::tpot_ms).collect(),
        Metric::Itl => ok.flat_map(|r| r.itls_ms()).collect(),
    }
}

// ---------------------------------------------------------------------------------------------
// Throughput over the profiling window
// ---------------------------------------------------------------------------------------------

/// The profiling window in ns on the run clock: from the first `sent_ns` to the last `end_ns`
/// over all profile-phase records (failed ones included: they occupied the window). `None` when
/// there is no profile record.
pub fn profile_window_ns(records: &[RequestRecord]) -> Option<(u64, u64)> {
    let prof = records
        .iter()
        .filter(|r| r.phase == crate::record::Phase::Profile);
    let start = prof.clone().map(|r| r.sent_ns).min()?;
    let end = prof.map(|r| r.end_ns.max(r.sent_ns)).max()?;
    Some((start, end))
}

/// Token and request totals of the counted records, vLLM's definitions (§6.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Totals {
    /// Successful profile requests (vLLM `completed`).
    pub completed: u64,
    /// Failed profile requests.
    pub failed: u64,
    /// Σ client-side prompt tokens over successful requests (vLLM `total_input_tokens`).
    pub input_tokens: u64,
    /// Σ completion tokens over successful requests (vLLM `total_output_tokens`).
    pub output_tokens: u64,
    /// Σ token-bearing chunks over successful requests.
    pub chunks: u64,
}

/// Sums [`Totals`] over the profile-phase records.
pub fn totals(records: &[RequestRecord]) -> Totals {
    let mut t = Totals::default();
    for r in records
        .iter()
        .filter(|r| r.phase == crate::record::Phase::Profile)
    {
        if r.success {
            t.completed += 1;
            t.input_tokens += u64::from(r.prompt_tokens_client);
            t.output_tokens += u64::from(r.completion_tokens);
            t.chunks += r.chunk_count() as u64;
        } else {
            t.failed += 1;
        }
    }
    t
}

/// Request, output-token and total-token throughput over a window of `duration_s` seconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Throughput {
    /// Successful requests per second (vLLM `request_throughput`).
    pub request_rps: f64,
    /// Output tokens per second (vLLM `output_throughput`).
    pub output_tok_s: f64,
    /// (input + output) tokens per second (vLLM `total_token_throughput`).
    pub total_tok_s: f64,
}

/// Throughput = totals ÷ `duration_s` (profiling window, first send to last completion; DESIGN.md
/// §4). A non-positive or non-finite duration gives zeros rather than infinities.
pub fn throughput(t: &Totals, duration_s: f64) -> Throughput {
    if !(duration_s.is_finite() && duration_s > 0.0) {
        return Throughput::default();
    }
    Throughput {
        request_rps: t.completed as f64 / duration_s,
        output_tok_s: t.output_tokens as f64 / duration_s,
        total_tok_s: (t.input_tokens + t.output_tokens) as f64 / duration_s,
    }
}

// ---------------------------------------------------------------------------------------------
// Goodput
// ---------------------------------------------------------------------------------------------

/// Service-level objectives for goodput (`--goodput ttft:MS tpot:MS e2el:MS`), each in ms; an
/// unset SLO is not checked.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct GoodputSlo {
    /// Maximum TTFT, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<f64>,
    /// Maximum TPOT, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_ms: Option<f64>,
    /// Maximum E2EL, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2el_ms: Option<f64>,
}

impl GoodputSlo {
    /// True when no SLO is set (vLLM then writes `"request_goodput:": null`).
    pub fn is_empty(&self) -> bool {
        self.ttft_ms.is_none() && self.tpot_ms.is_none() && self.e2el_ms.is_none()
    }

    /// Parses vLLM's `--goodput` items (`"ttft:500"`, `"tpot:50"`, `"e2el:2000"`; ms, each value
    /// ≥ 0). Errors name the offending item.
    pub fn parse<S: AsRef<str>>(items: &[S]) -> Result<Self, String> {
        let mut slo = GoodputSlo::default();
        for item in items {
            let item = item.as_ref();
            let (k, v) = item
                .split_once(':')
                .ok_or_else(|| format!("--goodput item {item:?}: expected NAME:MS"))?;
            let v: f64 = v
                .trim()
                .parse()
                .map_err(|_| format!("--goodput item {item:?}: {v:?} is not a number of ms"))?;
            if !(v.is_finite() && v >= 0.0) {
                return Err(format!(
                    "--goodput item {item:?}: must be a finite value ≥ 0"
                ));
            }
            match k.trim().to_ascii_lowercase().as_str() {
                "ttft" => slo.ttft_ms = Some(v),
                "tpot" => slo.tpot_ms = Some(v),
                "e2el" => slo.e2el_ms = Some(v),
                other => {
                    return Err(format!(
                        "--goodput item {item:?}: unknown metric {other:?} (ttft, tpot, e2el)"
                    ))
                }
            }
        }
        Ok(slo)
    }

    /// True when `r` meets every set SLO (value ≤ SLO, vLLM's `slo >= value`). TPOT of a request
    /// with ≤ 1 completion token counts as 0 (vLLM's `all_tpots` default).
    pub fn is_good(&self, r: &RequestRecord) -> bool {
        let ok = |slo: Option<f64>, v: Option<f64>| match slo {
            None => true,
            Some(s) => v.is_some_and(|v| v <= s),
        };
        ok(self.ttft_ms, r.ttft_ms())
            && ok(self.tpot_ms, Some(r.tpot_ms().unwrap_or(0.0)))
            && ok(self.e2el_ms, r.e2el_ms())
    }
}

/// Goodput in requests/s = (# counted requests meeting every SLO) ÷ `duration_s` (vLLM
/// `request_goodput:`). `None` when no SLO is set; 0 for a non-positive duration.
pub fn goodput_rps(records: &[RequestRecord], slo: &GoodputSlo, duration_s: f64) -> Option<f64> {
    if slo.is_empty() {
        return None;
    }
    if !(duration_s.is_finite() && duration_s > 0.0) {
        return Some(0.0);
    }
    let good = records
        .iter()
        .filter(|r| counts(r) && slo.is_good(r))
        .count();
    Some(good as f64 / duration_s)
}

// ---------------------------------------------------------------------------------------------
// Interactivity
// ---------------------------------------------------------------------------------------------

/// Interactivity in tokens/s/user = 1000 / TPOT statistic in ms (InferenceX `*_intvty`, maintainer
/// answer in InferenceX issue #345). Applied to the statistic, not averaged over reciprocals: the
/// mean interactivity is `1000 / mean TPOT`. `None` when the statistic is 0 or not finite (InferenceX
/// would divide by zero there).
pub fn interactivity_from_tpot_ms(tpot_ms: f64) -> Option<f64> {
    if tpot_ms.is_finite() && tpot_ms > 0.0 {
        Some(MS_PER_S / tpot_ms)
    } else {
        None
    }
}

/// E2E-normalized interactivity at percentile `q`, tokens/s/user = 1000 / percentile_q(E2EL_i /
/// OSL_i) with E2EL in ms and OSL_i = `completion_tokens` (DESIGN.md §4; the percentile is taken
/// first over the per-request ms-per-token values, then inverted, as AIPerf PR #1270). Counted
/// requests with 0 completion tokens or no E2EL are skipped. `None` without data or for a zero
/// percentile.
pub fn e2e_normalized_interactivity(records: &[RequestRecord], q: f64) -> Option<f64> {
    let per_token: Vec<f64> = records
        .iter()
        .filter(|r| counts(r) && r.completion_tokens > 0)
        .filter_map(|r| Some(r.e2el_ms()? / f64::from(r.completion_tokens)))
        .collect();
    interactivity_from_tpot_ms(percentile(&per_token, q)?)
}

// ---------------------------------------------------------------------------------------------
// Scheduling: client queue time, schedule lag, offered vs achieved rate
// ---------------------------------------------------------------------------------------------

/// Client queue time in ms per profile request (all outcomes) = sent − scheduled (time waiting for
/// a concurrency slot or a busy client; vLLM `client_queue_time`, issue vllm#54101). `scheduled`
/// is the arrival time in open loop and the moment the request's slot became free in closed
/// loop (DESIGN.md §4; see [`RequestRecord::scheduled_ns`]).
pub fn client_queue_ms(records: &[RequestRecord]) -> Vec<f64> {
    records
        .iter()
        .filter(|r| r.phase == crate::record::Phase::Profile)
        .map(RequestRecord::queue_ms)
        .collect()
}

/// E2EL measured from the scheduled time, ms = last_token − scheduled, per counted request
/// (vLLM's `e2el_including_client_queue`, MLPerf's Server rule): keeps coordinated omission
/// visible when a concurrency cap delays sends.
pub fn e2el_from_schedule_ms(records: &[RequestRecord]) -> Vec<f64> {
    records
        .iter()
        .filter(|r| counts(r))
        .filter_map(|r| {
            let t = r.last_token_ns?;
            Some(t.saturating_sub(r.scheduled_ns) as f64 / NS_PER_MS)
        })
        .collect()
}

/// Schedule lag in ms per profile request = released − scheduled: how late the arrival process
/// released the request relative to its absolute deadline (timer quantization, an overloaded
/// client). Uses [`RequestRecord::released_ns`]; records without it are skipped.
pub fn schedule_lag_ms(records: &[RequestRecord]) -> Vec<f64> {
    records
        .iter()
        .filter(|r| r.phase == crate::record::Phase::Profile)
        .filter_map(|r| {
            let t = r.released_ns?;
            Some(t.saturating_sub(r.scheduled_ns) as f64 / NS_PER_MS)
        })
        .collect()
}

/// Rate in events/s of `n` events spread over `[first, last]` ns = (n − 1) / (last − first) s.
/// `None` for fewer than two events or a zero span.
pub fn rate_over_span(mut times_ns: impl Iterator<Item = u64>) -> Option<f64> {
    let first = times_ns.next()?;
    let (mut lo, mut hi, mut n) = (first, first, 1u64);
    for t in times_ns {
        lo = lo.min(t);
        hi = hi.max(t);
        n += 1;
    }
    if n < 2 || hi == lo {
        return None;
    }
    Some((n - 1) as f64 / ((hi - lo) as f64 / NS_PER_S))
}

/// Offered vs achieved rates of the profile phase, requests/s.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Rates {
    /// The configured `--request-rate`; `None` = infinite (all at once / closed loop).
    pub configured_rps: Option<f64>,
    /// Offered rate realized by the schedule: (n − 1) / span of `scheduled_ns`.
    pub scheduled_rps: Option<f64>,
    /// Rate at which requests actually left the client: (n − 1) / span of `sent_ns`.
    pub sent_rps: Option<f64>,
    /// Achieved: completed requests ÷ profiling window (= `request_throughput`).
    pub achieved_rps: f64,
}

/// Computes [`Rates`] over the profile records; `duration_s` is the profiling window.
pub fn rates(records: &[RequestRecord], configured_rps: Option<f64>, duration_s: f64) -> Rates {
    let prof = || {
        records
            .iter()
            .filter(|r| r.phase == crate::record::Phase::Profile)
    };
    Rates {
        configured_rps,
        scheduled_rps: rate_over_span(prof().map(|r| r.scheduled_ns)),
        sent_rps: rate_over_span(prof().map(|r| r.sent_ns)),
        achieved_rps: throughput(&totals(records), duration_s).request_rps,
    }
}

// ---------------------------------------------------------------------------------------------
// Counts
// ---------------------------------------------------------------------------------------------

/// Profile-phase failures by error class name (`"timeout_idle"`, …), sorted by name. A failed
/// record without a class counts as `"unclassified"`.
pub fn errors_by_class(records: &[RequestRecord]) -> std::collections::BTreeMap<String, u64> {
    let mut m = std::collections::BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.phase == crate::record::Phase::Profile && !r.success)
    {
        let k = r.error_class.map_or("unclassified", |c| c.as_str());
        *m.entry(k.to_string()).or_insert(0) += 1;
    }
    m
}

/// Counted requests by `completion_tokens_source`: `(server, tokenizer)`.
pub fn token_source_counts(records: &[RequestRecord]) -> (u64, u64) {
    let mut c = (0, 0);
    for r in records.iter().filter(|r| counts(r)) {
        match r.completion_tokens_source {
            TokenSource::Server => c.0 += 1,
            TokenSource::Tokenizer => c.1 += 1,
        }
    }
    c
}

/// Completion tokens per token-bearing chunk, per counted request with ≥ 1 chunk (1.0 when the
/// server streams one token per event; > 1 with MTP/spec decoding or stream intervals).
pub fn tokens_per_chunk(records: &[RequestRecord]) -> Vec<f64> {
    records
        .iter()
        .filter(|r| counts(r) && r.chunk_count() > 0)
        .map(|r| f64::from(r.completion_tokens) / r.chunk_count() as f64)
        .collect()
}

/// Achieved OSL in tokens: `completion_tokens` of each counted request ([`counts`]: profile
/// phase, successful), one value per request (AIPerf's "output sequence length"). Failures and
/// warmups are left out, so a server that stops early (EOS without `ignore_eos`, a lower
/// `max_tokens` cap) shows as a mean or P90 below the requested OSL; a request that succeeded
/// with 0 tokens counts as 0.
pub fn achieved_osl(records: &[RequestRecord]) -> Vec<f64> {
    records
        .iter()
        .filter(|r| counts(r))
        .map(|r| f64::from(r.completion_tokens))
        .collect()
}

/// Achieved ISL in tokens: `prompt_tokens` of each counted request ([`counts`]: profile phase,
/// successful), one value per request (AIPerf's "input sequence length"): the server's
/// `usage.prompt_tokens` where it gave one, else the client's count
/// ([`RequestRecord::prompt_tokens`]). Failures and warmups are left out, as for
/// [`achieved_osl`]; a chat template or a tokenizer other than the server's shows as a mean
/// above or below the requested ISL.
pub fn achieved_isl(records: &[RequestRecord]) -> Vec<f64> {
    records
        .iter()
        .filter(|r| counts(r))
        .map(|r| f64::from(r.prompt_tokens))
        .collect()
}

/// At or above this median of completion tokens per token-bearing chunk, a run's chunks carry
/// several tokens each ([`multi_token_chunks`]): 1.5.
pub const MULTI_TOKEN_MEDIAN: f64 = 1.5;

/// The verdict on a run whose chunks carry several tokens each (a server's stream interval,
/// e.g. TRT-LLM `stream_interval: 20`, or speculative decoding): its ITL values are gaps
/// between chunks, not per-token latencies, and TPOT spreads each chunk's gap over its tokens.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MultiTokenChunks {
    /// Median completion tokens per token-bearing chunk over the successful profile requests.
    pub tokens_per_chunk_p50: f64,
    /// 99th percentile of the same, tokens.
    pub tokens_per_chunk_p99: f64,
    /// What the run's ITL values measure: always `chunk_gap` (the time between two chunks of
    /// several tokens).
    pub itl_is: String,
}

/// [`MultiTokenChunks`] when the median of [`tokens_per_chunk`] (`per_request`) is at least
/// [`MULTI_TOKEN_MEDIAN`]; `None` for about one token per chunk or no request.
pub fn multi_token_chunks(per_request: &[f64]) -> Option<MultiTokenChunks> {
    let mut sorted = per_request.to_vec();
    sorted.sort_by(f64::total_cmp);
    let p50 = percentile_sorted(&sorted, 50.0)?;
    (p50 >= MULTI_TOKEN_MEDIAN).then(|| MultiTokenChunks {
        tokens_per_chunk_p50: p50,
        tokens_per_chunk_p99: percentile_sorted(&sorted, 99.0).unwrap_or(p50),
        itl_is: "chunk_gap".into(),
    })
}

/// Client-side concurrency actually achieved over the profiling window.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Concurrency {
    /// Time-averaged requests in flight (sent, not yet ended) over the window
    /// = Σ (end − sent) / window (Little's law). Compare with `--max-concurrency` to see whether
    /// the client held the requested concurrency.
    pub mean_in_flight: f64,
    /// Most requests in flight at any instant.
    pub max_in_flight: u64,
    /// Time-averaged requests in flight from the first send to the last send: the stretch in
    /// which a closed-loop client still had requests to send and should hold
    /// `--max-concurrency` (the ramp-down after the last send is left out). `None` when every
    /// request was sent at one instant.
    #[serde(default)]
    pub mean_in_flight_sending: Option<f64>,
    /// As `mean_in_flight_sending`, each request counted until this process finished reading
    /// it ([`RequestRecord::read_end_ns`], else `end_ns`): the client's slots kept busy. Above
    /// `mean_in_flight_sending` by the time responses waited for a busy client. `None` as
    /// there, and when no record has a read end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slots_busy_sending: Option<f64>,
}

/// Achieved concurrency of the profile-phase requests (all outcomes) over the profiling window
/// ([`profile_window_ns`]); zeros without a window. A request ending at the same instant another
/// is sent does not overlap it.
pub fn concurrency(records: &[RequestRecord]) -> Concurrency {
    let mut c = concurrency_until(records, |r| r.end_ns);
    if records.iter().any(|r| r.read_end_ns.is_some()) {
        c.slots_busy_sending = concurrency_until(records, |r| r.read_end_ns.unwrap_or(r.end_ns))
            .mean_in_flight_sending;
    }
    c
}

/// [`concurrency`] with each request in flight from `sent_ns` until `end_of(record)`.
fn concurrency_until(
    records: &[RequestRecord],
    end_of: impl Fn(&RequestRecord) -> u64,
) -> Concurrency {
    let Some((start, end)) = profile_window_ns(records) else {
        return Concurrency::default();
    };
    let mut events: Vec<(u64, i64)> = Vec::new();
    let mut busy_ns: u128 = 0;
    for r in records
        .iter()
        .filter(|r| r.phase == crate::record::Phase::Profile)
    {
        let e = end_of(r).max(r.sent_ns);
        busy_ns += u128::from(e - r.sent_ns);
        events.push((r.sent_ns, 1));
        events.push((e, -1));
    }
    // ends sort before sends at the same instant
    events.sort_unstable();
    let last_send = events
        .iter()
        .filter(|e| e.1 > 0)
        .map(|e| e.0)
        .max()
        .unwrap_or(start);
    let (mut cur, mut max) = (0i64, 0i64);
    let (mut area, mut prev) = (0u128, start);
    for (t, d) in events {
        if t <= last_send {
            area += cur.max(0) as u128 * u128::from(t - prev);
            prev = t;
        }
        cur += d;
        max = max.max(cur);
    }
    let window = end - start;
    let sending = last_send.saturating_sub(start);
    Concurrency {
        mean_in_flight: if window == 0 {
            0.0
        } else {
            busy_ns as f64 / window as f64
        },
        max_in_flight: max.max(0) as u64,
        mean_in_flight_sending: (sending > 0).then(|| area as f64 / sending as f64),
        slots_busy_sending: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Channel, ChunkRecord, ErrorClass, Phase};

    const MS: u64 = 1_000_000;

    /// A successful request sent at `sent` ms with token chunks at `chunks` ms.
    fn req(sent: u64, chunks: &[u64], tokens: u32) -> RequestRecord {
        RequestRecord {
            scheduled_ns: sent * MS,
            sent_ns: sent * MS,
            first_token_ns: chunks.first().map(|c| c * MS),
            first_output_token_ns: chunks.first().map(|c| c * MS),
            last_token_ns: chunks.last().map(|c| c * MS),
            end_ns: chunks.last().copied().unwrap_or(sent) * MS + MS,
            completion_tokens: tokens,
            prompt_tokens: 100,
            prompt_tokens_client: 100,
            success: true,
            chunks: chunks
                .iter()
                .map(|c| ChunkRecord {
                    t_ns: c * MS,
                    channel: Channel::Content,
                    tokens: None,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn percentile_matches_numpy_linear() {
        // np.percentile([1,2,3,4], [0,25,50,90,99,99.9,100]) =
        // [1.0, 1.75, 2.5, 3.7, 3.9699999999999998, 3.9970000000000003, 4.0] (numpy 2.4.6)
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 25.0), Some(1.75));
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert_eq!(percentile(&v, 90.0), Some(3.7));
        assert_eq!(percentile(&v, 99.0), Some(3.9699999999999998));
        assert_eq!(percentile(&v, 99.9), Some(3.9970000000000003));
        assert_eq!(percentile(&v, 100.0), Some(4.0));
        // 10 values 10..=100: h = 9·0.9 = 8.1 → 90 + 0.1·10 = 91
        let w: Vec<f64> = (1..=10).map(|i| f64::from(i) * 10.0).collect();
        assert_eq!(percentile(&w, 90.0), Some(91.0));
        assert_eq!(percentile(&[7.0], 99.9), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&v, 101.0), None);
        assert_eq!(percentile(&v, f64::NAN), None);
    }

    #[test]
    fn mean_median_std_population() {
        // [2,4,4,4,5,5,7,9]: mean 5, population std 2, median 4.5
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&v), Some(5.0));
        assert_eq!(std_pop(&v), Some(2.0));
        assert_eq!(median(&v), Some(4.5));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(mean(&[]), None);
        let d = Distribution::of(&v, &DEFAULT_PERCENTILES);
        assert_eq!((d.count, d.min, d.max), (8, 2.0, 9.0));
        // p90: h = 7·0.9 = 6.3 → 7 + 0.3·2 = 7.6
        assert!((d.at(90.0).unwrap() - 7.6).abs() < 1e-12);
        let empty = Distribution::of(&[], &[90.0]);
        assert_eq!((empty.mean, empty.at(90.0)), (0.0, Some(0.0)));
    }

    #[test]
    fn percentile_labels_like_vllm() {
        assert_eq!(percentile_label(90.0), "90");
        assert_eq!(percentile_label(99.9), "99.9");
        assert_eq!(percentile_label(50.0), "50");
        assert_eq!(percentile_label(99.99), "99.99");
    }

    #[test]
    fn distribution_json_keys() {
        let d = Distribution::of(&[1.0, 2.0, 3.0, 4.0], &[90.0, 99.9]);
        let s = serde_json::to_string(&d).unwrap();
        assert_eq!(
            s,
            r#"{"count":4,"mean":2.5,"median":2.5,"std":1.118033988749895,"min":1.0,"max":4.0,"p90":3.7,"p99.9":3.9970000000000003}"#
        );
        let back: Distribution = serde_json::from_str(&s).unwrap();
        assert_eq!(back, d);
    }

    /// Two requests: A sent 0, chunks 10, 12, 16 ms, 3 tokens; B sent 5, chunks 25, 45 ms,
    /// 5 tokens (2 chunks carrying several tokens); C failed; W warmup (ignored).
    fn sample_run() -> Vec<RequestRecord> {
        let a = req(0, &[10, 12, 16], 3);
        let b = req(5, &[25, 45], 5);
        let mut c = req(7, &[], 0);
        c.success = false;
        c.error_class = Some(ErrorClass::TimeoutIdle);
        c.end_ns = 60 * MS;
        let mut w = req(0, &[1, 2], 2);
        w.phase = Phase::Warmup;
        w.end_ns = 500 * MS;
        vec![a, b, c, w]
    }

    #[test]
    fn per_metric_samples_hand_computed() {
        let rs = sample_run();
        // TTFT: A 10, B 20. E2EL: A 16, B 40.
        assert_eq!(sample_ms(&rs, Metric::Ttft), vec![10.0, 20.0]);
        assert_eq!(sample_ms(&rs, Metric::E2el), vec![16.0, 40.0]);
        // TPOT: A (16−10)/2 = 3, B (40−20)/4 = 5.
        assert_eq!(sample_ms(&rs, Metric::Tpot), vec![3.0, 5.0]);
        // ITL pooled: A 2, 4; B 20.
        assert_eq!(sample_ms(&rs, Metric::Itl), vec![2.0, 4.0, 20.0]);
        assert_eq!(sample_ms(&rs, Metric::Ttfo), vec![10.0, 20.0]);
        // tokens per chunk: A 3/3 = 1, B 5/2 = 2.5
        assert_eq!(tokens_per_chunk(&rs), vec![1.0, 2.5]);
    }

    #[test]
    fn multi_token_verdict_from_the_median_tokens_per_chunk() {
        assert_eq!(multi_token_chunks(&[]), None);
        assert_eq!(multi_token_chunks(&[1.0, 1.0, 1.4]), None);
        // A 20-token stream interval: every request 20 tokens per chunk.
        assert_eq!(
            multi_token_chunks(&[20.0, 20.0, 20.0]),
            Some(MultiTokenChunks {
                tokens_per_chunk_p50: 20.0,
                tokens_per_chunk_p99: 20.0,
                itl_is: "chunk_gap".into(),
            })
        );
        // Median 1.75 (≥ 1.5), p99 1 + 0.99 × 1.5 (linear interpolation).
        let v = multi_token_chunks(&[2.5, 1.0]).unwrap();
        assert_eq!(v.tokens_per_chunk_p50, 1.75);
        assert!((v.tokens_per_chunk_p99 - 2.485).abs() < 1e-12);
    }

    #[test]
    fn achieved_osl_counts_successful_profile_requests_only() {
        let mut warm = req(0, &[10], 500);
        warm.phase = Phase::Warmup;
        let mut failed = req(0, &[10], 300);
        failed.success = false;
        let empty = req(0, &[], 0);
        let rs = vec![
            req(0, &[10, 20], 128),
            warm,
            failed,
            req(0, &[10], 64),
            empty,
        ];
        // Warmup (500) and failure (300) left out; a successful empty reply counts as 0.
        assert_eq!(achieved_osl(&rs), vec![128.0, 64.0, 0.0]);
        let d = Distribution::of(&achieved_osl(&rs), &[90.0]);
        // mean 64; P90: h = 2·0.9 = 1.8 → 64 + 0.8·64 = 115.2 (NumPy lerp from the upper side).
        assert_eq!((d.mean, d.median), (64.0, 64.0));
        assert_eq!(d.at(90.0), Some(115.2));
        assert!(achieved_osl(&[]).is_empty());
    }

    #[test]
    fn achieved_isl_counts_successful_profile_requests_only() {
        let with_isl = |isl: u32| RequestRecord {
            prompt_tokens: isl,
            prompt_tokens_client: 1,
            ..req(0, &[10], 8)
        };
        let mut warm = with_isl(5000);
        warm.phase = Phase::Warmup;
        let mut failed = with_isl(3000);
        failed.success = false;
        let rs = vec![with_isl(1024), warm, failed, with_isl(1000), with_isl(1030)];
        // Warmup (5000) and failure (3000) left out; the server's count, not the client's (1).
        assert_eq!(achieved_isl(&rs), vec![1024.0, 1000.0, 1030.0]);
        let d = Distribution::of(&achieved_isl(&rs), &[90.0]);
        // Sorted 1000, 1024, 1030: mean 3054/3 = 1018, median 1024;
        // P90: h = 2·0.9 = 1.8 → 1024 + 0.8·6 = 1028.8.
        assert_eq!((d.count, d.mean, d.median), (3, 1018.0, 1024.0));
        assert_eq!((d.min, d.max), (1000.0, 1030.0));
        assert_eq!(d.at(90.0), Some(1028.8));
        assert!(achieved_isl(&[]).is_empty());
    }

    #[test]
    fn tpot_excludes_single_token_requests() {
        let rs = vec![req(0, &[10], 1), req(0, &[10, 20], 2)];
        assert_eq!(sample_ms(&rs, Metric::Tpot), vec![10.0]);
    }

    #[test]
    fn window_totals_throughput() {
        let rs = sample_run();
        // profile: first send 0, last end = C's 60 ms (A ends 17, B 46); warmup's 500 ignored.
        assert_eq!(profile_window_ns(&rs), Some((0, 60 * MS)));
        let t = totals(&rs);
        assert_eq!(
            t,
            Totals {
                completed: 2,
                failed: 1,
                input_tokens: 200,
                output_tokens: 8,
                chunks: 5
            }
        );
        let tp = throughput(&t, 0.06);
        assert!((tp.request_rps - 2.0 / 0.06).abs() < 1e-9);
        assert!((tp.output_tok_s - 8.0 / 0.06).abs() < 1e-9);
        assert!((tp.total_tok_s - 208.0 / 0.06).abs() < 1e-9);
        assert_eq!(throughput(&t, 0.0), Throughput::default());
    }

    #[test]
    fn goodput_counts_requests_meeting_all_slos() {
        let rs = sample_run();
        let slo = GoodputSlo::parse(&["ttft:15", "tpot:4"]).unwrap();
        // A: ttft 10 ≤ 15, tpot 3 ≤ 4 → good. B: ttft 20 > 15 → bad. C failed.
        assert_eq!(goodput_rps(&rs, &slo, 2.0), Some(0.5));
        let slo = GoodputSlo::parse(&["e2el:40"]).unwrap();
        assert_eq!(goodput_rps(&rs, &slo, 2.0), Some(1.0)); // 16 ≤ 40, 40 ≤ 40
        assert_eq!(goodput_rps(&rs, &GoodputSlo::default(), 2.0), None);
        // 1-token request: TPOT counts as 0 → meets any TPOT SLO.
        let one = vec![req(0, &[10], 1)];
        let slo = GoodputSlo::parse(&["tpot:0"]).unwrap();
        assert_eq!(goodput_rps(&one, &slo, 1.0), Some(1.0));
        assert!(GoodputSlo::parse(&["ttft"]).is_err());
        assert!(GoodputSlo::parse(&["foo:1"]).unwrap_err().contains("foo"));
        assert!(GoodputSlo::parse(&["ttft:-1"]).is_err());
    }

    #[test]
    fn interactivity_inverts_the_statistic() {
        // mean TPOT of [3, 5] = 4 ms → 250 tok/s/user (not mean(1000/3, 1000/5) = 266.7)
        let tpot = sample_ms(&sample_run(), Metric::Tpot);
        assert_eq!(
            interactivity_from_tpot_ms(mean(&tpot).unwrap()),
            Some(250.0)
        );
        assert_eq!(interactivity_from_tpot_ms(0.0), None);
    }

    #[test]
    fn e2e_normalized_interactivity_percentile_first() {
        // E2EL/OSL: A 16/3 = 5.333.., B 40/5 = 8 ms/token. p90: h = 0.9 →
        // 5.333 + 0.9·(8 − 5.333) = 7.7333 ms/token → 1000/7.7333 = 129.31 tok/s/user.
        let rs = sample_run();
        let v = e2e_normalized_interactivity(&rs, 90.0).unwrap();
        let per_tok = 16.0 / 3.0 + 0.9 * (8.0 - 16.0 / 3.0);
        assert!((v - 1000.0 / per_tok).abs() < 1e-9, "{v}");
        assert!((v - 129.310_344_827_586_2).abs() < 1e-9);
        // p75: 5.333 + 0.75·2.6667 = 7.3333 → 136.36
        let v75 = e2e_normalized_interactivity(&rs, 75.0).unwrap();
        assert!((v75 - 1000.0 / (22.0 / 3.0)).abs() < 1e-9);
        assert_eq!(e2e_normalized_interactivity(&[], 90.0), None);
    }

    #[test]
    fn queue_time_schedule_lag_and_rates() {
        let mut rs = vec![
            req(0, &[10, 20], 2),
            req(10, &[30, 40], 2),
            req(20, &[50, 60], 2),
        ];
        // scheduled at 0, 5, 10 ms; released at 0, 6, 13; sent at 0, 10, 20.
        for (i, r) in rs.iter_mut().enumerate() {
            r.scheduled_ns = i as u64 * 5 * MS;
            r.released_ns = Some([0, 6, 13][i] * MS);
        }
        assert_eq!(client_queue_ms(&rs), vec![0.0, 5.0, 10.0]);
        assert_eq!(schedule_lag_ms(&rs), vec![0.0, 1.0, 3.0]);
        // E2EL from schedule: 20−0, 40−5, 60−10
        assert_eq!(e2el_from_schedule_ms(&rs), vec![20.0, 35.0, 50.0]);
        let r = rates(&rs, Some(200.0), 0.061);
        assert_eq!(r.configured_rps, Some(200.0));
        assert_eq!(r.scheduled_rps, Some(200.0)); // 2 gaps over 10 ms
        assert_eq!(r.sent_rps, Some(100.0)); // 2 gaps over 20 ms
        assert!((r.achieved_rps - 3.0 / 0.061).abs() < 1e-9);
        assert_eq!(rate_over_span([5u64].into_iter()), None);
    }

    #[test]
    fn error_and_source_counts() {
        let mut rs = sample_run();
        rs[1].completion_tokens_source = TokenSource::Tokenizer;
        let mut d = req(0, &[], 0);
        d.success = false;
        rs.push(d);
        let e = errors_by_class(&rs);
        assert_eq!(e.get("timeout_idle"), Some(&1));
        assert_eq!(e.get("unclassified"), Some(&1));
        assert_eq!(token_source_counts(&rs), (1, 1));
    }

    #[test]
    fn achieved_concurrency() {
        // A: sent 0, ends 17 ms; B: sent 5, ends 46; C: sent 7, ends 60 (sample_run).
        // busy = 17 + 41 + 53 = 111 ms over the 60 ms window → 1.85; at 7 ms all three overlap.
        let c = concurrency(&sample_run());
        assert!((c.mean_in_flight - 111.0 / 60.0).abs() < 1e-12);
        assert_eq!(c.max_in_flight, 3);
        // While sending (0 → 7 ms, the last send): 1 in flight for 5 ms, 2 for 2 ms → 9/7.
        assert_eq!(c.mean_in_flight_sending, Some(9.0 / 7.0));
        // back-to-back requests (end == next send) never overlap
        let mut rs = vec![req(0, &[5], 1), req(10, &[15], 1)];
        rs[0].end_ns = 10 * MS;
        rs[1].end_ns = 20 * MS;
        let c = concurrency(&rs);
        assert_eq!((c.mean_in_flight, c.max_in_flight), (1.0, 1));
        assert_eq!(c.mean_in_flight_sending, Some(1.0));
        // Everything sent at one instant: no sending stretch.
        let one = concurrency(&[req(3, &[5], 1), req(3, &[6], 1)]);
        assert_eq!((one.max_in_flight, one.mean_in_flight_sending), (2, None));
        assert_eq!(concurrency(&[]), Concurrency::default());
        // Kernel-stamped ends with later read ends: A read at 17 → 30 ms, B at 46 → 50, C as
        // stamped. Slots busy while sending (0 → 7 ms): A 0–7, B 5–7 → 9/7 as before, since
        // every read end is after the last send; in flight unchanged.
        let mut rs = sample_run();
        rs[0].read_end_ns = Some(30 * MS);
        rs[1].read_end_ns = Some(50 * MS);
        let k = concurrency(&rs);
        assert_eq!(k.mean_in_flight_sending, Some(9.0 / 7.0));
        assert_eq!(k.slots_busy_sending, Some(9.0 / 7.0));
        // A stamped at 2 ms but read at 6: in flight 0–2 (A) + 5–7 (B) = 4/7; slots 0–6 + 5–7
        // = 8/7.
        rs[0].end_ns = 2 * MS;
        rs[0].read_end_ns = Some(6 * MS);
        let k = concurrency(&rs);
        assert_eq!(k.mean_in_flight_sending, Some(4.0 / 7.0));
        assert_eq!(k.slots_busy_sending, Some(8.0 / 7.0));
        assert_eq!(concurrency(&sample_run()).slots_busy_sending, None);
    }

    #[test]
    fn metric_names_parse() {
        for m in [
            Metric::Ttft,
            Metric::Tpot,
            Metric::Itl,
            Metric::E2el,
            Metric::Ttfo,
        ] {
            assert_eq!(Metric::parse(m.name()), Some(m));
        }
        assert_eq!(Metric::parse(" TTFT "), Some(Metric::Ttft));
        assert_eq!(Metric::parse("foo"), None);
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use crate::record::{Channel, ChunkRecord, ErrorClass, Phase};
    use proptest::prelude::*;

    proptest! {
        /// Percentiles stay within [min, max], are monotone in q, and hit the order statistics
        /// exactly at q = 100·k/(n−1).
        #[test]
        fn percentile_invariants(mut v in prop::collection::vec(-1e6f64..1e6, 1..60),
                                 q1 in 0f64..=100.0, q2 in 0f64..=100.0) {
            v.sort_by(f64::total_cmp);
            let (lo, hi) = (q1.min(q2), q1.max(q2));
            let (a, b) = (percentile_sorted(&v, lo).unwrap(), percentile_sorted(&v, hi).unwrap());
            prop_assert!(a <= b + 1e-9 * b.abs().max(1.0));
            prop_assert!(a >= v[0] && b <= v[v.len() - 1]);
            let n = v.len();
            for (k, x) in v.iter().enumerate() {
                if n > 1 {
                    let q = 100.0 * k as f64 / (n - 1) as f64;
                    let p = percentile_sorted(&v, q).unwrap();
                    prop_assert!((p - x).abs() <= 1e-9 * x.abs().max(1.0), "k={} p={} x={}", k, p, x);
                }
            }
        }

        /// Any records — out-of-order timestamps, missing fields, zero tokens — give finite
        /// metrics and never panic.
        #[test]
        fn metrics_total_on_arbitrary_records(
            recs in prop::collection::vec(
                (any::<bool>(), any::<bool>(), 0u64..1_000_000, 0u64..1_000_000,
                 prop::option::of(0u64..2_000_000), prop::option::of(0u64..2_000_000),
                 0u32..5, prop::collection::vec(0u64..2_000_000, 0..5), any::<bool>()),
                0..30)
        ) {
            let rs: Vec<RequestRecord> = recs.into_iter().enumerate().map(
                |(i, (ok, warm, sched, sent, first, last, toks, chunks, classed))| RequestRecord {
                    request_id: i as u64,
                    phase: if warm { Phase::Warmup } else { Phase::Profile },
                    success: ok,
                    error_class: (!ok && classed).then_some(ErrorClass::Connect),
                    scheduled_ns: sched,
                    sent_ns: sent,
                    released_ns: Some(sched / 2),
                    first_token_ns: first,
                    first_output_token_ns: first,
                    last_token_ns: last,
                    end_ns: sent / 2,
                    completion_tokens: toks,
                    chunks: chunks.into_iter().map(|t| ChunkRecord {
                        t_ns: t, channel: Channel::Reasoning, tokens: None }).collect(),
                    ..Default::default()
                }).collect();
            for m in [Metric::Ttft, Metric::Tpot, Metric::Itl, Metric::E2el, Metric::Ttfo] {
                let d = Distribution::of(&sample_ms(&rs, m), &DEFAULT_PERCENTILES);
                prop_assert!(d.mean.is_finite() && d.std.is_finite());
            }
            let w = profile_window_ns(&rs).map_or(0.0, |(a, b)| (b - a) as f64 / NS_PER_S);
            let t = throughput(&totals(&rs), w);
            prop_assert!(t.request_rps.is_finite() && t.total_tok_s.is_finite());
            let slo = GoodputSlo { ttft_ms: Some(1.0), tpot_ms: None, e2el_ms: Some(2.0) };
            prop_assert!(goodput_rps(&rs, &slo, w).unwrap().is_finite());
            if let Some(x) = e2e_normalized_interactivity(&rs, 90.0) {
                prop_assert!(x.is_finite() && x > 0.0);
            }
            let r = rates(&rs, None, w);
            prop_assert!(r.achieved_rps.is_finite());
        }
    }
}
