//! The metric registry: one place that says, for every metric name the store, `report`, `plot`
//! and the summaries use, what it is called for a reader, its unit and which direction is
//! better. Column names stay InferenceX's (`p99_ttft` in **seconds**, `tput_per_gpu` in
//! tok/s/GPU, …); [`metric`] carries the unit so every display can say it.
//!
//! Definitions of the numbers themselves are in [`crate::metrics`] (DESIGN.md §4) and
//! [`crate::analytics`] (costs, power); this module only describes them.

use crate::analytics::pareto::Better;

/// What a reader needs to know about one metric column.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricInfo {
    /// The column / JSON key (`p99_ttft`).
    pub key: String,
    /// A human label without the unit (`TTFT, P99`).
    pub label: String,
    /// The unit of the stored value (`s`, `tok/s/GPU`, `$/M tokens`, …); empty for counts.
    pub unit: &'static str,
    /// Which direction is better (drives Pareto frontiers); `None` when neither is (achieved
    /// OSL: a frontier over it takes higher, [`better`]'s default).
    pub better: Option<Better>,
}

impl MetricInfo {
    /// `label (unit)`, or the label alone for unitless metrics.
    pub fn label_with_unit(&self) -> String {
        if self.unit.is_empty() {
            self.label.clone()
        } else {
            format!("{} ({})", self.label, self.unit)
        }
    }
}

/// Statistics of per-request latency and interactivity columns: the column's prefix, the
/// statistic's human name, and its label in a summary's distributions (`Stat::label` in
/// `summary::keys`: `mean`, `p99.9`, …), which [`distribution_stat_name`] maps from.
const STATS: &[(&str, &str, &str)] = &[
    ("mean_", "mean", "mean"),
    ("median_", "median", "median"),
    ("p50_", "P50", "p50"),
    ("p75_", "P75", "p75"),
    ("p90_", "P90", "p90"),
    ("p95_", "P95", "p95"),
    ("p99_", "P99", "p99"),
    ("p999_", "P99.9", "p99.9"),
    ("std_", "std. dev.", "std"),
];

/// Larger values are better.
const HIGHER: Option<Better> = Some(Better::Higher);
/// Smaller values are better.
const LOWER: Option<Better> = Some(Better::Lower);
/// Neither side is better (a description of the run, not a goal: achieved OSL).
const NEITHER: Option<Better> = None;

/// Metrics of a fixed name: key, label, unit, better direction.
const FIXED: &[(&str, &str, &str, Option<Better>)] = &[
    ("tput_per_gpu", "Throughput per GPU", "tok/s/GPU", HIGHER),
    (
        "output_tput_per_gpu",
        "Output throughput per GPU",
        "tok/s/GPU",
        HIGHER,
    ),
    (
        "input_tput_per_gpu",
        "Input throughput per GPU",
        "tok/s/GPU",
        HIGHER,
    ),
    ("output_throughput", "Output throughput", "tok/s", HIGHER),
    (
        "total_token_throughput",
        "Total throughput",
        "tok/s",
        HIGHER,
    ),
    ("request_throughput", "Request throughput", "req/s", HIGHER),
    ("duration", "Profile duration", "s", LOWER),
    (
        "tok_s_per_mw",
        "Throughput per provisioned MW",
        "tok/s/MW",
        HIGHER,
    ),
    (
        "tok_s_per_mw_input",
        "Input throughput per provisioned MW",
        "tok/s/MW",
        HIGHER,
    ),
    (
        "tok_s_per_mw_output",
        "Output throughput per provisioned MW",
        "tok/s/MW",
        HIGHER,
    ),
    ("j_per_token", "Provisioned energy", "J/token", LOWER),
    (
        "j_per_token_input",
        "Provisioned energy per input token",
        "J/token",
        LOWER,
    ),
    (
        "j_per_token_output",
        "Provisioned energy per output token",
        "J/token",
        LOWER,
    ),
    (
        "joules_per_total_token",
        "Measured energy",
        "J/token",
        LOWER,
    ),
    (
        "joules_per_input_token",
        "Measured energy per input token",
        "J/token",
        LOWER,
    ),
    (
        "joules_per_output_token",
        "Measured energy per output token",
        "J/token",
        LOWER,
    ),
    ("avg_power_w", "Measured power per GPU", "W", LOWER),
    // Speculative decoding: tokens accepted per decode step (trial 12: no unit line).
    (
        "measured_acceptance_length",
        "Acceptance length, measured (spec decoding)",
        "tokens/step",
        HIGHER,
    ),
    (
        "acceptance_length",
        "Acceptance length, target (spec decoding)",
        "tokens/step",
        HIGHER,
    ),
    (
        "target_acceptance_length",
        "Acceptance length, target (spec decoding)",
        "tokens/step",
        HIGHER,
    ),
];

/// Per-request distributions, named `<stat prefix><base>` ([`STATS`]): base, label, unit,
/// better direction. Ingest stores a summary's extras distribution whose name (in the stored
/// unit: `ttft` for `ttft_ms`, in s) is a base here under these names
/// ([`distribution_stat_name`]), with no code of the store's per metric.
const BASES: &[(&str, &str, &str, Option<Better>)] = &[
    ("ttft", "TTFT", "s", LOWER),
    ("ttfo", "Time to first output token", "s", LOWER),
    ("tpot", "TPOT", "s", LOWER),
    ("itl", "ITL", "s", LOWER),
    ("e2el", "End-to-end latency", "s", LOWER),
    ("intvty", "Interactivity", "tok/s/user", HIGHER),
    (
        "e2e_norm_intvty",
        "E2E-normalized interactivity",
        "tok/s/user",
        HIGHER,
    ),
    // Output tokens per successful request (`metrics::achieved_osl`): a property of the
    // workload and the server, neither side better.
    ("achieved_osl", "Achieved OSL", "tokens", NEITHER),
    // Prompt tokens per successful request (`metrics::achieved_isl`): likewise neither.
    ("achieved_isl", "Achieved ISL", "tokens", NEITHER),
];

/// Every metric name [`metric`] knows without a pattern's free part: the fixed names, each
/// statistic of each distribution, and the cost and frontier names of [`X_METRICS`] and
/// [`Y_METRICS`] (the `usd_per_m_<regime>[_<kind>]` family is open, so only those). Sorted,
/// no duplicates; what "did you mean" suggestions are drawn from.
pub fn names() -> Vec<String> {
    let mut v: Vec<String> = FIXED.iter().map(|m| m.0.to_string()).collect();
    for (prefix, _, _) in STATS {
        v.extend(BASES.iter().map(|b| format!("{prefix}{}", b.0)));
    }
    v.extend(X_METRICS.iter().chain(Y_METRICS).map(|m| m.to_string()));
    v.sort();
    v.dedup();
    v
}

/// Describes a metric name, or `None` for a name the registry does not know (identity columns
/// such as `model` or `conc` included). Latencies are stored in seconds (InferenceX's columns),
/// throughputs in tokens per second, costs in US dollars per million tokens, power in watts,
/// energy in joules per token.
pub fn metric(key: &str) -> Option<MetricInfo> {
    let info = |label: String, unit: &'static str, better: Option<Better>| MetricInfo {
        key: key.to_string(),
        label,
        unit,
        better,
    };
    // The spec-decoding figures live in the summary's extras (`report --columns
    // inferbench.spec_decoding.measured_acceptance_length`).
    let name = key.strip_prefix("inferbench.spec_decoding.").unwrap_or(key);
    if let Some((_, l, u, b)) = FIXED.iter().find(|m| m.0 == name) {
        return Some(info(l.to_string(), u, *b));
    }
    if let Some(rest) = key.strip_prefix("usd_per_m_") {
        // Without a token kind the cost is per million total (input + output) tokens.
        let (regime, kind) = match rest.split_once('_') {
            Some((r, k)) => (r, format!("{k} ")),
            None => (rest, "total (input + output) ".to_string()),
        };
        return Some(info(
            format!("Cost per million {kind}tokens, {regime}"),
            "$/M tokens",
            LOWER,
        ));
    }
    if let Some(rest) = key.strip_prefix("tokens_per_usd_") {
        // 10⁶ ÷ the `usd_per_m_<rest>` cost ([`crate::analytics::cost::tokens_per_usd`]).
        let (regime, kind) = match rest.split_once('_') {
            Some((r, k)) => (r, format!("{k} ")),
            None => (rest, "total (input + output) ".to_string()),
        };
        return Some(info(
            format!("Tokens per $1, {kind}tokens, {regime}"),
            "tokens/$",
            HIGHER,
        ));
    }
    let (stat, base) = STATS
        .iter()
        .find_map(|(p, name, _)| key.strip_prefix(p).map(|b| (*name, b)))?;
    let (_, label, unit, better) = BASES.iter().find(|b| b.0 == base)?;
    Some(info(format!("{label}, {stat}"), unit, *better))
}

/// The usual frontier x metrics (InferenceX's interactivity, E2E-normalized interactivity,
/// TTFT and E2EL axes), in the dashboard's menu order; what an unknown `--x` is told.
pub const X_METRICS: &[&str] = &[
    "median_intvty",
    "p90_intvty",
    "p50_e2e_norm_intvty",
    "p75_e2e_norm_intvty",
    "p90_e2e_norm_intvty",
    "median_ttft",
    "p99_ttft",
    "median_e2el",
];

/// The usual frontier y metrics, in the dashboard's menu order (`usd_per_m_custom*` and
/// `tokens_per_usd_custom*` only when a custom $/GPU-hour is given). `tokens_per_usd_<regime>`
/// is 10⁶ ÷ `usd_per_m_<regime>` (InferenceX's "tokens per $1").
pub const Y_METRICS: &[&str] = &[
    "tput_per_gpu",
    "input_tput_per_gpu",
    "output_tput_per_gpu",
    "usd_per_m_hyperscaler",
    "usd_per_m_neocloud",
    "usd_per_m_rental",
    "tokens_per_usd_hyperscaler",
    "tokens_per_usd_neocloud",
    "tokens_per_usd_rental",
    "usd_per_m_hyperscaler_input",
    "usd_per_m_hyperscaler_output",
    "usd_per_m_neocloud_input",
    "usd_per_m_neocloud_output",
    "usd_per_m_rental_input",
    "usd_per_m_rental_output",
    "usd_per_m_custom",
    "tokens_per_usd_custom",
    "tok_s_per_mw",
    "tok_s_per_mw_input",
    "tok_s_per_mw_output",
    "j_per_token",
    "joules_per_total_token",
];

/// Which direction is better for `key`: the registry's answer, else higher (throughput-like
/// names the registry does not know, and a metric with no better side: a frontier needs one).
pub fn better(key: &str) -> Better {
    metric(key).and_then(|m| m.better).unwrap_or(Better::Higher)
}

/// The registry's name of statistic `stat` of the distribution `base`, with `stat` as a
/// summary's distribution labels it (`mean`, `median`, `std`, `p90`, `p99.9`): `<stat
/// prefix><base>` (`p99.9` of `ttft` → `p999_ttft`); `None` when `base` is not one of the
/// registry's distributions or `stat` is none of its statistics (`count`, `min`, `max`,
/// `p99.5`). Ingest stores every such statistic of a summary's extras under this name.
pub fn distribution_stat_name(base: &str, stat: &str) -> Option<String> {
    BASES.iter().find(|b| b.0 == base)?;
    let (prefix, _, _) = STATS.iter().find(|s| s.2 == stat)?;
    Some(format!("{prefix}{base}"))
}

/// The registry's distributions (the `<base>` of its `<stat>_<base>` names: `ttft`, `tpot`,
/// `achieved_osl`, …), in its order.
pub fn distribution_bases() -> impl Iterator<Item = &'static str> {
    BASES.iter().map(|b| b.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every listed name is one [`metric`] describes (the suggestions never name an unknown).
    #[test]
    fn every_listed_name_is_known() {
        let names = names();
        assert!(names.len() > 70, "{}", names.len());
        for n in &names {
            assert!(metric(n).is_some(), "{n}");
        }
        assert!(names.iter().any(|n| n == "p99_ttft") && names.iter().any(|n| n == "j_per_token"));
    }

    #[test]
    fn units_and_directions() {
        let m = metric("p99_ttft").unwrap();
        assert_eq!(m.label_with_unit(), "TTFT, P99 (s)");
        assert_eq!(m.better, Some(Better::Lower));
        let m = metric("median_intvty").unwrap();
        assert_eq!(m.label_with_unit(), "Interactivity, median (tok/s/user)");
        assert_eq!(m.better, Some(Better::Higher));
        assert_eq!(
            metric("usd_per_m_rental_output").unwrap().label_with_unit(),
            "Cost per million output tokens, rental ($/M tokens)"
        );
        assert_eq!(metric("tput_per_gpu").unwrap().unit, "tok/s/GPU");
        assert_eq!(
            metric("p90_e2e_norm_intvty").unwrap().better,
            Some(Better::Higher)
        );
        assert_eq!(
            metric("joules_per_total_token").unwrap().better,
            Some(Better::Lower)
        );
        assert_eq!(
            metric("measured_acceptance_length")
                .unwrap()
                .label_with_unit(),
            "Acceptance length, measured (spec decoding) (tokens/step)"
        );
        assert_eq!(
            metric("inferbench.spec_decoding.target_acceptance_length")
                .unwrap()
                .unit,
            "tokens/step"
        );
        assert_eq!(
            metric("tokens_per_usd_neocloud").unwrap().label_with_unit(),
            "Tokens per $1, total (input + output) tokens, neocloud (tokens/$)"
        );
        assert_eq!(
            metric("tokens_per_usd_rental_output")
                .unwrap()
                .label_with_unit(),
            "Tokens per $1, output tokens, rental (tokens/$)"
        );
        assert_eq!(better("tokens_per_usd_hyperscaler"), Better::Higher);
        assert_eq!(
            metric("p90_achieved_osl").unwrap().label_with_unit(),
            "Achieved OSL, P90 (tokens)"
        );
        assert!(names().iter().any(|n| n == "mean_achieved_osl"));
        // Achieved OSL describes the run: no better side; a frontier over it takes higher.
        assert_eq!(metric("p90_achieved_osl").unwrap().better, None);
        assert_eq!(better("p90_achieved_osl"), Better::Higher);
        assert_eq!(metric("conc"), None);
        assert_eq!(metric("model"), None);
        assert_eq!(better("tok_s_per_mw"), Better::Higher);
        assert_eq!(better("median_e2el"), Better::Lower);
    }

    /// A summary's distribution statistic → the registry's name, for every base and statistic
    /// the registry lists and nothing else (what ingest stores by this rule).
    #[test]
    fn distribution_statistics_take_the_registry_names() {
        assert_eq!(
            distribution_stat_name("ttft", "p99.9").as_deref(),
            Some("p999_ttft")
        );
        assert_eq!(
            distribution_stat_name("achieved_osl", "std").as_deref(),
            Some("std_achieved_osl")
        );
        for (base, stat) in [
            ("ttft", "count"),
            ("ttft", "min"),
            ("ttft", "max"),
            ("ttft", "p99.5"),
            ("ttft", "p999"),
            ("ttft", "p9.99"),
            ("tokens_per_chunk", "mean"),
            ("client_queue", "p90"),
            ("", "mean"),
        ] {
            assert_eq!(distribution_stat_name(base, stat), None, "{base} {stat}");
        }
        let bases: Vec<&str> = distribution_bases().collect();
        assert_eq!(
            bases,
            [
                "ttft",
                "ttfo",
                "tpot",
                "itl",
                "e2el",
                "intvty",
                "e2e_norm_intvty",
                "achieved_osl",
                "achieved_isl"
            ]
        );
        let mut n = 0;
        for base in &bases {
            for stat in [
                "mean", "median", "std", "p50", "p75", "p90", "p95", "p99", "p99.9",
            ] {
                let name = distribution_stat_name(base, stat).unwrap();
                assert!(names().contains(&name), "{name}");
                n += 1;
            }
        }
        assert_eq!(n, 81);
    }
}
