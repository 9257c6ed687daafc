//! Which result keys carry which unit, as explicit tables: nothing here (or in a reader of
//! summaries) infers a unit from a key's name.
//!
//! - vLLM's latency statistics ([`LatencyStat`]): `<stat>_<metric>_ms`, in **ms**, written by
//!   [`LatencyStat::vllm_key`] (the one writer of those keys) and recognised by
//!   [`LatencyStat::from_vllm_key`] (its exact inverse: a key it did not write is not one);
//!   InferenceX's names for the same values, in **seconds**, come from
//!   [`LatencyStat::inferencex_key`] and [`LatencyStat::seconds`].
//! - our extras' latency distributions ([`EXTRAS_MS_FIELDS`]): the `inferbench` fields whose
//!   values are in **ms**, with the name a reader in seconds gives them.
//!
//! A numeric key in neither table (`"foo_ms"` included) is not a latency: readers keep it under
//! its own name with its value unchanged.

use crate::metrics::{percentile_label, Distribution, Metric, MS_PER_S};

/// The four metrics vLLM writes statistics of (TTFO is ours, in the extras only).
pub const VLLM_LATENCY_METRICS: [Metric; 4] =
    [Metric::Ttft, Metric::Tpot, Metric::Itl, Metric::E2el];

/// One statistic of a latency sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    /// Arithmetic mean.
    Mean,
    /// Median (50th percentile).
    Median,
    /// Population standard deviation.
    Std,
    /// The `q`-th percentile, `q` in `[0, 100]`.
    Percentile(f64),
}

impl Stat {
    /// The statistic's name in result keys: `mean`, `median`, `std`, `p<q>` (`p99.9`, labelled
    /// as vLLM labels percentiles, [`percentile_label`]).
    pub fn label(self) -> String {
        match self {
            Stat::Mean => "mean".into(),
            Stat::Median => "median".into(),
            Stat::Std => "std".into(),
            Stat::Percentile(q) => format!("p{}", percentile_label(q)),
        }
    }

    /// This statistic of distribution `d` (in `d`'s unit); `None` for a percentile `d` does not
    /// hold.
    pub fn of(self, d: &Distribution) -> Option<f64> {
        match self {
            Stat::Mean => Some(d.mean),
            Stat::Median => Some(d.median),
            Stat::Std => Some(d.std),
            Stat::Percentile(q) => d.at(q),
        }
    }

    /// The inverse of [`Stat::label`]; `None` for any other text (a percentile outside
    /// `[0, 100]`, or one not labelled as [`percentile_label`] labels it, e.g. `p99.0`).
    pub fn from_label(s: &str) -> Option<Stat> {
        match s {
            "mean" => Some(Stat::Mean),
            "median" => Some(Stat::Median),
            "std" => Some(Stat::Std),
            _ => {
                let q: f64 = s.strip_prefix('p')?.parse().ok()?;
                let stat = Stat::Percentile(q);
                ((0.0..=100.0).contains(&q) && stat.label() == s).then_some(stat)
            }
        }
    }
}

/// One latency statistic of one of vLLM's four metrics: a value in **ms** that vLLM's result
/// writes as `<stat>_<metric>_ms` and InferenceX's aggregate as `<stat>_<metric>` in seconds
/// (TPOT's also as `<stat>_intvty`, tokens/s/user).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyStat {
    /// Which statistic.
    pub stat: Stat,
    /// Of which metric (one of [`VLLM_LATENCY_METRICS`]).
    pub metric: Metric,
}

impl LatencyStat {
    /// vLLM's key of this statistic (`p99_ttft_ms`): its value is in ms. The one place these
    /// keys are written.
    pub fn vllm_key(self) -> String {
        format!("{}_{}_ms", self.stat.label(), self.metric.name())
    }

    /// The statistic whose [`LatencyStat::vllm_key`] is `key`, from the table of vLLM's keys
    /// (the three-part grammar `<stat>_<metric>_ms` over [`VLLM_LATENCY_METRICS`], checked by
    /// writing the key back); `None` for every other key, whatever its name ends in.
    pub fn from_vllm_key(key: &str) -> Option<LatencyStat> {
        let mut parts = key.split('_');
        let (stat, metric, unit) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || unit != "ms" {
            return None;
        }
        let metric = VLLM_LATENCY_METRICS
            .into_iter()
            .find(|m| m.name() == metric)?;
        let s = LatencyStat {
            stat: Stat::from_label(stat)?,
            metric,
        };
        (s.vllm_key() == key).then_some(s)
    }

    /// InferenceX's key of this statistic (`p99_ttft`): its value is in seconds.
    pub fn inferencex_key(self) -> String {
        format!("{}_{}", self.stat.label(), self.metric.name())
    }

    /// InferenceX's interactivity key derived from a TPOT statistic (`p99_intvty`,
    /// tokens/s/user = 1000 / TPOT_ms); `None` for the other metrics.
    pub fn inferencex_intvty_key(self) -> Option<String> {
        (self.metric == Metric::Tpot).then(|| format!("{}_intvty", self.stat.label()))
    }

    /// A value of this statistic in vLLM's unit (ms) as InferenceX writes it (seconds).
    pub fn seconds(ms: f64) -> f64 {
        ms / MS_PER_S
    }
}

/// The latency distributions of our `inferbench` extras (values in **ms**, counts excepted),
/// each with the name a reader in seconds stores it under (`inferbench.<name>.<stat>`): the
/// fields of [`super::Extras`] in ms, then the names older summaries of ours wrote
/// (`median_ttfo_ms`, `p99_ttfo_ms`: one value each). A test checks the table against what
/// [`super::Extras`] serializes.
pub const EXTRAS_MS_FIELDS: [(&str, &str); 10] = [
    ("ttft_ms", "ttft"),
    ("ttfo_ms", "ttfo"),
    ("tpot_ms", "tpot"),
    ("itl_ms", "itl"),
    ("e2el_ms", "e2el"),
    ("client_queue_ms", "client_queue"),
    ("e2el_from_schedule_ms", "e2el_from_schedule"),
    ("schedule_lag_ms", "schedule_lag"),
    ("median_ttfo_ms", "median_ttfo"),
    ("p99_ttfo_ms", "p99_ttfo"),
];

/// The name in seconds of the extras field `key` when [`EXTRAS_MS_FIELDS`] lists it in ms.
pub fn extras_ms_field(key: &str) -> Option<&'static str> {
    EXTRAS_MS_FIELDS
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, name)| *name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_keys_round_trip_through_the_table() {
        let s = LatencyStat {
            stat: Stat::Percentile(99.9),
            metric: Metric::Tpot,
        };
        assert_eq!(s.vllm_key(), "p99.9_tpot_ms");
        assert_eq!(LatencyStat::from_vllm_key("p99.9_tpot_ms"), Some(s));
        assert_eq!(s.inferencex_key(), "p99.9_tpot");
        assert_eq!(s.inferencex_intvty_key().as_deref(), Some("p99.9_intvty"));
        for m in VLLM_LATENCY_METRICS {
            for st in [Stat::Mean, Stat::Median, Stat::Std, Stat::Percentile(90.0)] {
                let s = LatencyStat {
                    stat: st,
                    metric: m,
                };
                assert_eq!(LatencyStat::from_vllm_key(&s.vllm_key()), Some(s));
            }
        }
        assert_eq!(LatencyStat::seconds(1500.0), 1.5);
    }

    #[test]
    fn keys_outside_the_table_are_not_latencies_whatever_they_end_in() {
        for k in [
            "foo_ms",
            "mean_foo_ms",
            "mean_ttfo_ms",
            "p99.0_ttft_ms",
            "p101_ttft_ms",
            "mean_ttft_ms_x",
            "mean_ttft",
            "mean_ttft_s",
            "window_ms",
            "duration",
            "",
        ] {
            assert_eq!(LatencyStat::from_vllm_key(k), None, "{k}");
        }
        assert_eq!(extras_ms_field("ttft_ms"), Some("ttft"));
        assert_eq!(extras_ms_field("window_ms"), None);
    }

    /// Whether the extras field `k` is a registry distribution (`mean_<k>` a registry name)
    /// whose unit is not a time.
    fn not_a_time(k: &str) -> bool {
        crate::registry::metric(&format!("mean_{k}"))
            .is_some_and(|m| !["s", "ms"].contains(&m.unit))
    }

    #[test]
    fn the_extras_table_lists_every_distribution_of_the_extras() {
        let x = super::super::Extras {
            schedule_lag_ms: Some(Default::default()),
            ..Default::default()
        };
        let v = serde_json::to_value(&x).unwrap();
        let dists: Vec<&str> = v
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, v)| v.get("median").is_some() && v.get("count").is_some())
            .map(|(k, _)| k.as_str())
            // Not in ms: tokens per chunk, and a registry distribution whose unit is not a
            // time (achieved OSL, tokens): a new one needs no line here.
            .filter(|k| *k != "tokens_per_chunk" && !not_a_time(k))
            .collect();
        let table: Vec<&str> = EXTRAS_MS_FIELDS[..8].iter().map(|(k, _)| *k).collect();
        assert_eq!(dists, table);
        assert!(not_a_time("achieved_osl") && !not_a_time("ttft") && !not_a_time("ttft_ms"));
    }
}
