//! Server metrics of the aggregate: the AIPerf `server_metrics_export.json` model
//! ([`ServerExport`]), the script's vLLM / SGLang adapters, and the KV-pool size from a server
//! log.

use super::*;

/// One series of an AIPerf `server_metrics_export.json` metric (§4.4): its labels and
/// statistics over the profiling window (counter `total` delta and `rate` per s; gauge `avg`,
/// `min`, `max` (+ `std`, `p1`…`p99` when samples are given); histogram `count`, `sum`, `avg`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ExportSeries {
    /// Label name → value (histogram `le` removed).
    pub labels: BTreeMap<String, String>,
    /// Statistic name → value.
    pub stats: BTreeMap<String, f64>,
    /// Histogram bucket deltas, `le` → observations (histograms only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<BTreeMap<String, f64>>,
    /// 1-s slices (filled by the writer when snapshots are at hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeslices: Option<Vec<Value>>,
}

/// One metric family of the export (§4.4).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ExportMetric {
    /// `counter`, `gauge` or `histogram`.
    #[serde(rename = "type")]
    pub kind: String,
    /// HELP text (not kept by our scraper: empty).
    pub description: String,
    /// Unit (not kept: empty).
    pub unit: String,
    /// One entry per label set.
    pub series: Vec<ExportSeries>,
}

/// The AIPerf `server_metrics_export.json` model (§4.4): family name → metric. Family names
/// follow the Prometheus client: a counter `x_total` is family `x`; `x_bucket`/`x_sum`/`x_count`
/// with buckets are histogram `x`; gauges keep their name.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ServerExport {
    /// Family name → metric.
    pub metrics: BTreeMap<String, ExportMetric>,
}

fn split_key(key: &str) -> (&str, &str) {
    match key.split_once('{') {
        Some((n, l)) => (n, l.strip_suffix('}').unwrap_or(l)),
        None => (key, ""),
    }
}

/// Builds the export model from a window summary ([`crate::server_metrics::summarize`]): every
/// counter and gauge of the summary, grouped into families. `gauge_samples` (the values behind
/// each gauge, [`crate::server_metrics::window_gauge_samples`]) adds `std` and `p1`…`p99`.
pub fn server_export(
    summary: &ServerMetricsSummary,
    gauge_samples: Option<&BTreeMap<String, Vec<f64>>>,
) -> ServerExport {
    let names: std::collections::BTreeSet<&str> = summary
        .counters
        .keys()
        .chain(summary.gauges.keys())
        .map(|k| split_key(k).0)
        .collect();
    let mut out = ServerExport::default();
    // Histograms: (family, labels without le) → series.
    let mut hist: BTreeMap<(String, BTreeMap<String, String>), ExportSeries> = BTreeMap::new();
    for (key, c) in &summary.counters {
        let (name, labels) = split_key(key);
        let mut labels = parse_labels(labels);
        let hist_family = name.strip_suffix("_bucket").or_else(|| {
            ["_sum", "_count"].iter().find_map(|s| {
                name.strip_suffix(s)
                    .filter(|base| names.contains(format!("{base}_bucket").as_str()))
            })
        });
        if let Some(base) = hist_family {
            let le = labels.remove("le");
            let s = hist.entry((base.to_string(), labels.clone())).or_default();
            s.labels = labels;
            if let Some(le) = le {
                s.buckets
                    .get_or_insert_with(BTreeMap::new)
                    .insert(le, c.delta);
            } else if name.ends_with("_sum") {
                s.stats.insert("sum".into(), c.delta);
            } else if name.ends_with("_count") {
                s.stats.insert("count".into(), c.delta);
            }
            continue;
        }
        let family = name.strip_suffix("_total").unwrap_or(name);
        let m = out.metrics.entry(family.to_string()).or_default();
        m.kind = "counter".into();
        m.series.push(ExportSeries {
            labels,
            stats: BTreeMap::from([("total".into(), c.delta), ("rate".into(), c.rate)]),
            ..Default::default()
        });
    }
    for ((family, _), mut s) in hist {
        if let (Some(sum), Some(count)) = (s.stats.get("sum"), s.stats.get("count")) {
            if *count > 0.0 {
                let avg = sum / count;
                s.stats.insert("avg".into(), avg);
            }
        }
        let m = out.metrics.entry(family).or_default();
        m.kind = "histogram".into();
        m.series.push(s);
    }
    for (key, g) in &summary.gauges {
        let (name, labels) = split_key(key);
        let mut stats = BTreeMap::from([
            ("avg".to_string(), g.mean),
            ("min".to_string(), g.min),
            ("max".to_string(), g.max),
        ]);
        if let Some(v) = gauge_samples.and_then(|m| m.get(key)) {
            if let Some(sd) = metrics::std_pop(v) {
                stats.insert("std".into(), sd);
            }
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            for q in [1, 5, 10, 25, 50, 75, 90, 95, 99] {
                if let Some(p) = metrics::percentile_sorted(&sorted, f64::from(q)) {
                    stats.insert(format!("p{q}"), p);
                }
            }
        }
        let m = out.metrics.entry(name.to_string()).or_default();
        if m.kind.is_empty() {
            m.kind = "gauge".into();
        }
        m.series.push(ExportSeries {
            labels: parse_labels(labels),
            stats,
            ..Default::default()
        });
    }
    out
}

const TOTAL_FIRST: [&str; 4] = ["total", "sum", "max", "avg"];
const MAX_FIRST: [&str; 3] = ["max", "avg", "total"];

impl ServerExport {
    fn series<'a>(&'a self, names: &'a [&'a str]) -> impl Iterator<Item = &'a ExportSeries> + 'a {
        names
            .iter()
            .filter_map(|n| self.metrics.get(*n))
            .flat_map(|m| m.series.iter())
    }

    fn stat(s: &ExportSeries, preferred: &[&str]) -> Option<f64> {
        preferred.iter().find_map(|k| s.stats.get(*k).copied())
    }

    /// The script's `sum_stat`: Σ over the series of the first preferred statistic.
    fn sum_stat(
        &self,
        names: &[&str],
        preferred: &[&str],
        filter: impl Fn(&ExportSeries) -> bool,
    ) -> Option<f64> {
        let v: Vec<f64> = self
            .series(names)
            .filter(|s| filter(s))
            .filter_map(|s| Self::stat(s, preferred))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum())
    }

    fn total(&self, name: &str) -> Option<f64> {
        self.sum_stat(&[name], &TOTAL_FIRST, |_| true)
    }

    /// The script's `gauge_stat`: max (or mean with `mean = true`) over the series.
    fn gauge_stat(&self, names: &[&str], preferred: &[&str], mean: bool) -> Option<f64> {
        let v: Vec<f64> = self
            .series(names)
            .filter_map(|s| Self::stat(s, preferred))
            .collect();
        if v.is_empty() {
            return None;
        }
        Some(if mean {
            metrics::mean(&v).unwrap_or(0.0)
        } else {
            v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
        })
    }

    /// The script's `sum_by_label`.
    fn sum_by_label(&self, name: &str, label: &str) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for s in self.series(&[name]) {
            let (Some(l), Some(v)) = (s.labels.get(label), Self::stat(s, &TOTAL_FIRST)) else {
                continue;
            };
            *out.entry(l.clone()).or_insert(0.0) += v;
        }
        out
    }

    fn any_prefix(&self, prefixes: &[&str]) -> bool {
        self.metrics
            .keys()
            .any(|n| prefixes.iter().any(|p| n.starts_with(p)))
    }
}

fn rate(n: Option<f64>, d: Option<f64>) -> Option<f64> {
    match (n, d) {
        (Some(n), Some(d)) if d > 0.0 => Some(n / d),
        _ => None,
    }
}

fn normalize_fraction(v: Option<f64>) -> Option<f64> {
    v.map(|x| if x > 1.5 { x / 100.0 } else { x })
}

fn counter_int(v: Option<f64>) -> Option<u64> {
    v.map(|x| x.round_ties_even().max(0.0) as u64)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Backend {
    Vllm,
    Sglang,
    /// Recognised by the script (Dynamo, ATOM) but not ported.
    Other,
}

fn detect_backend(export: &ServerExport, framework: &str) -> Option<Backend> {
    let fw = framework.to_lowercase();
    let empty = export.metrics.is_empty();
    if fw.starts_with("dynamo") || export.any_prefix(&["dynamo_"]) {
        return Some(Backend::Other);
    }
    if export.any_prefix(&["atom:", "atom_"]) || (empty && fw == "atom") {
        return Some(Backend::Other);
    }
    if export.any_prefix(&["sglang:"]) || (empty && fw == "sglang") {
        return Some(Backend::Sglang);
    }
    if export.any_prefix(&["vllm:"]) || (empty && fw == "vllm") {
        return Some(Backend::Vllm);
    }
    None
}

fn empty_server_block(present: bool, metric_count: u64) -> ServerMetricsBlock {
    ServerMetricsBlock {
        present,
        adapter: "none".into(),
        metric_count,
        cache: ServerCache::default(),
        kv_cache: ServerKvCache::default(),
        kv_offload: ServerKvOffload::default(),
        tokens: ServerTokens::default(),
        sources: Vec::new(),
    }
}

pub(super) fn server_block(
    server: Option<&ServerMetricsSummary>,
    ctx: &AgenticContext,
    kept: &[&RequestRecord],
) -> (ServerMetricsBlock, Vec<String>) {
    let export = server.map(|s| server_export(s, None)).unwrap_or_default();
    let mut warnings = Vec::new();
    let mut b = empty_server_block(!export.metrics.is_empty(), export.metrics.len() as u64);
    let backend = detect_backend(&export, &ctx.framework);
    if export.metrics.is_empty() {
        warnings.push(WARNING_NO_SERVER_METRICS.to_string());
    } else {
        match backend {
            Some(Backend::Vllm) => {
                b.adapter = "vllm".into();
                populate_vllm(&export, &mut b);
            }
            Some(Backend::Sglang) => {
                b.adapter = "sglang".into();
                populate_sglang(&export, &mut b);
            }
            _ => {
                let names: Vec<&str> = export.metrics.keys().take(10).map(String::as_str).collect();
                warnings.push(format!(
                    "unsupported agentic server metrics backend; framework={:?}, metric_names=[{}]",
                    ctx.framework.to_lowercase(),
                    names.join(", ")
                ));
            }
        }
    }
    if backend.is_some() {
        if let Some(cap) = ctx.kv_cache_pool_tokens {
            b.kv_cache.gpu_total_tokens = Some(cap);
        }
    }
    // apply_profile_totals: record sums when the server gave none.
    let (isl, osl) = kept.iter().fold((0u64, 0u64), |(i, o), r| {
        (
            i + u64::from(r.prompt_tokens),
            o + u64::from(r.completion_tokens),
        )
    });
    let any = !kept.is_empty();
    if b.tokens.prompt_total.is_none() && any {
        b.tokens.prompt_total = Some(isl);
    }
    if b.tokens.generation_total.is_none() && any {
        b.tokens.generation_total = Some(osl);
    }
    b.tokens.requests_completed = Some(kept.len() as u64);
    (b, warnings)
}

fn populate_vllm(m: &ServerExport, b: &mut ServerMetricsBlock) {
    b.tokens.prompt_total = counter_int(m.total("vllm:prompt_tokens"));
    b.tokens.generation_total = counter_int(m.total("vllm:generation_tokens"));
    let hits = m.total("vllm:prefix_cache_hits");
    let queries = m.total("vllm:prefix_cache_queries");
    let gpu_rate = rate(hits, queries);
    let ext_hits = m.total("vllm:external_prefix_cache_hits");
    let ext_queries = m.total("vllm:external_prefix_cache_queries");
    let ext_rate = rate(ext_hits, ext_queries);
    let c = &mut b.cache;
    c.gpu_cache_hit_rate = gpu_rate;
    c.external_cache_hit_rate = ext_rate;
    c.cpu_cache_hit_rate = ext_rate;
    let by_source = m.sum_by_label("vllm:prompt_tokens_by_source", "source");
    if !by_source.is_empty() {
        let local = by_source.get("local_cache_hit").copied();
        let external = by_source.get("external_kv_transfer").copied();
        let compute = by_source.get("local_compute").copied();
        let total: f64 = by_source.values().sum();
        if total > 0.0 {
            if let Some(l) = local {
                c.gpu_cache_hit_rate = Some(l / total);
            }
            if let Some(e) = external {
                c.cpu_cache_hit_rate = Some(e / total);
                c.external_cache_hit_rate = Some(e / total);
            }
            c.overall_cache_hit_rate =
                Some((local.unwrap_or(0.0) + external.unwrap_or(0.0)) / total);
        }
        b.tokens.prompt_by_source = PromptBySource {
            gpu_cache_hit: local,
            cpu_or_external_cache_hit: external,
            computed: compute,
            raw: by_source,
        };
    } else if gpu_rate.is_some() {
        c.overall_cache_hit_rate = gpu_rate;
    }
    c.prefix_cache_hits = hits;
    c.prefix_cache_queries = queries;
    c.external_prefix_cache_hits = ext_hits;
    c.external_prefix_cache_queries = ext_queries;
    b.kv_cache.gpu_usage_pct = normalize_fraction(m.gauge_stat(
        &["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"],
        &MAX_FIRST,
        false,
    ));
    b.kv_cache.cpu_usage_pct =
        normalize_fraction(m.gauge_stat(&["vllm:cpu_kv_cache_usage_perc"], &MAX_FIRST, false));
    let o = &mut b.kv_offload;
    o.bytes_gpu_to_cpu = m.total("vllm:kv_offload_bytes_gpu_to_cpu");
    o.bytes_cpu_to_gpu = m.total("vllm:kv_offload_bytes_cpu_to_gpu");
    o.time_gpu_to_cpu = m.total("vllm:kv_offload_time_gpu_to_cpu");
    o.time_cpu_to_gpu = m.total("vllm:kv_offload_time_cpu_to_gpu");
    o.bandwidth_gpu_to_cpu_bytes_per_second = rate(o.bytes_gpu_to_cpu, o.time_gpu_to_cpu);
    o.bandwidth_cpu_to_gpu_bytes_per_second = rate(o.bytes_cpu_to_gpu, o.time_cpu_to_gpu);
    b.sources = vllm_sources(m);
}

fn source_id(s: &ExportSeries) -> String {
    let component = s
        .labels
        .get("dynamo_component")
        .filter(|v| !v.is_empty())
        .or_else(|| s.labels.get("component"))
        .map(String::as_str)
        .unwrap_or("");
    let role = match component {
        "prefill" => "prefill",
        "backend" | "decode" => "decode",
        "frontend" | "router" => "router",
        _ => "combined",
    };
    let mut parts = vec![role.to_string()];
    for k in ["worker_id", "dp_rank", "engine"] {
        if let Some(v) = s.labels.get(k) {
            parts.push(format!("{k}={v}"));
        }
    }
    parts.join("|")
}

fn vllm_sources(m: &ServerExport) -> Vec<ServerSource> {
    let ids: std::collections::BTreeSet<String> = m
        .series(&[
            "vllm:prompt_tokens",
            "vllm:generation_tokens",
            "vllm:prefix_cache_hits",
            "vllm:prefix_cache_queries",
            "vllm:kv_cache_usage_perc",
            "vllm:prompt_tokens_by_source",
        ])
        .map(source_id)
        .collect();
    ids.into_iter()
        .filter(|id| !id.is_empty())
        .map(|id| {
            let of = |s: &ExportSeries| source_id(s) == id;
            let hits = m.sum_stat(&["vllm:prefix_cache_hits"], &TOTAL_FIRST, of);
            let queries = m.sum_stat(&["vllm:prefix_cache_queries"], &TOTAL_FIRST, of);
            let usage: Vec<f64> = m
                .series(&["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"])
                .filter(|s| of(s))
                .filter_map(|s| ServerExport::stat(s, &MAX_FIRST))
                .collect();
            let usage = (!usage.is_empty())
                .then(|| usage.iter().copied().fold(f64::NEG_INFINITY, f64::max));
            ServerSource {
                role: id.split('|').next().unwrap_or("").to_string(),
                prompt_tokens: m.sum_stat(&["vllm:prompt_tokens"], &TOTAL_FIRST, of),
                generation_tokens: m.sum_stat(&["vllm:generation_tokens"], &TOTAL_FIRST, of),
                prefix_cache_hit_rate: rate(hits, queries),
                gpu_kv_cache_usage_pct: normalize_fraction(usage),
                id,
            }
        })
        .collect()
}

fn populate_sglang(m: &ServerExport, b: &mut ServerMetricsBlock) {
    let prompt = m.total("sglang:prompt_tokens");
    let generation = m.total("sglang:generation_tokens");
    b.tokens.prompt_total = counter_int(prompt);
    b.tokens.generation_total = counter_int(generation);
    let cached = m.sum_by_label("sglang:cached_tokens", "cache_source");
    let device = cached.get("device").copied();
    let host = cached.get("host").copied();
    let all_cached = (!cached.is_empty()).then(|| cached.values().sum::<f64>());
    let c = &mut b.cache;
    c.gpu_cache_hit_rate = rate(device, prompt);
    c.cpu_cache_hit_rate = rate(host, prompt);
    c.external_cache_hit_rate = c.cpu_cache_hit_rate;
    c.overall_cache_hit_rate = rate(all_cached, prompt).or_else(|| {
        normalize_fraction(m.gauge_stat(&["sglang:cache_hit_rate"], &["avg", "max", "total"], true))
    });
    c.cached_tokens_by_source = cached.clone();
    b.kv_cache.gpu_usage_pct =
        normalize_fraction(m.gauge_stat(&["sglang:token_usage"], &MAX_FIRST, false));
    let max_tokens = m.sum_stat(
        &["sglang:max_total_num_tokens"],
        &["max", "avg", "total", "sum"],
        |_| true,
    );
    let host_used = m.gauge_stat(&["sglang:hicache_host_used_tokens"], &MAX_FIRST, false);
    let host_total = m.gauge_stat(&["sglang:hicache_host_total_tokens"], &MAX_FIRST, false);
    b.kv_cache.cpu_usage_pct = rate(host_used, host_total);
    b.kv_cache.gpu_total_tokens = counter_int(max_tokens);
    b.kv_cache.cpu_used_tokens = host_used;
    b.kv_cache.cpu_total_tokens = host_total;
    let prefill_compute = m.sum_stat(&["sglang:realtime_tokens"], &TOTAL_FIRST, |s| {
        s.labels.get("mode").map(String::as_str) == Some("prefill_compute")
    });
    b.tokens.prompt_by_source = PromptBySource {
        gpu_cache_hit: device,
        cpu_or_external_cache_hit: host,
        computed: prefill_compute,
        raw: cached,
    };
}

/// GPU KV-cache pool capacity, tokens, from a server log as the script reads it (§4.5): vLLM
/// `GPU KV cache size: N tokens` lines (the last per `EngineCore[_DPk] pid=…` tag, summed over
/// tags; untagged lines summed), SGLang `max_total_num_tokens=N` (per `DPi TPj EPk` rank, summed;
/// a single value × `dp_size` when the log names a larger DP size). `framework` picks the parser
/// (`sglang`, else vLLM). `None` when the log has no such line.
pub fn kv_pool_tokens_from_server_log(framework: &str, log: &str) -> Option<u64> {
    if framework.to_lowercase() == "sglang" {
        sglang_pool(log)
    } else {
        vllm_pool(log)
    }
}

fn digits_after(s: &str, allow_commas: bool) -> Option<(u64, &str)> {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || (allow_commas && c == ',')))
        .unwrap_or(s.len());
    let text: String = s[..end].chars().filter(|c| *c != ',').collect();
    Some((text.parse().ok()?, &s[end..]))
}

fn vllm_pool(log: &str) -> Option<u64> {
    let mut per_engine: BTreeMap<String, u64> = BTreeMap::new();
    let (mut bare, mut bare_found) = (0u64, false);
    for line in log.lines() {
        let Some(i) = line.find("GPU KV cache size:") else {
            continue;
        };
        let rest = line[i + "GPU KV cache size:".len()..].trim_start();
        let Some((tokens, tail)) = digits_after(rest, true) else {
            continue;
        };
        if !tail.trim_start().starts_with("tokens") || tokens == 0 {
            continue;
        }
        match engine_tag(line) {
            Some(tag) => {
                per_engine.insert(tag, tokens);
            }
            None => {
                bare += tokens;
                bare_found = true;
            }
        }
    }
    if !per_engine.is_empty() {
        return Some(per_engine.values().sum());
    }
    bare_found.then_some(bare)
}

/// `(EngineCore[_DPn] pid=N)` → `EngineCore[_DPn]`.
fn engine_tag(line: &str) -> Option<String> {
    let mut from = 0;
    while let Some(i) = line[from..].find("(EngineCore") {
        let start = from + i + 1;
        let rest = &line[start..];
        let tag_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let tag = &rest[..tag_end];
        let ok_tag = tag == "EngineCore"
            || tag
                .strip_prefix("EngineCore_DP")
                .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()));
        let after = rest[tag_end..].trim_start();
        if ok_tag {
            if let Some(p) = after.strip_prefix("pid=") {
                if let Some((_, t)) = digits_after(p, false) {
                    if t.starts_with(')') {
                        return Some(tag.to_string());
                    }
                }
            }
        }
        from = start;
    }
    None
}

fn sglang_pool(log: &str) -> Option<u64> {
    let dp_size = log.match_indices("dp_size=").find_map(|(i, _)| {
        let word = |c: char| c.is_alphanumeric() || c == '_';
        if log[..i].ends_with(word) {
            return None;
        }
        let (v, tail) = digits_after(&log[i + "dp_size=".len()..], false)?;
        (!tail.starts_with(word)).then_some(v)
    });
    let dp_size = dp_size.filter(|v| *v > 0);
    let mut per_rank: BTreeMap<String, u64> = BTreeMap::new();
    let (mut bare, mut bare_n) = (0u64, 0u32);
    for line in log.lines() {
        let Some(i) = line.find("max_total_num_tokens=") else {
            continue;
        };
        let Some((tokens, _)) = digits_after(&line[i + "max_total_num_tokens=".len()..], false)
        else {
            continue;
        };
        if tokens == 0 {
            continue;
        }
        match rank_tag(line) {
            Some(tag) => {
                per_rank.insert(tag, tokens);
            }
            None => {
                bare += tokens;
                bare_n += 1;
            }
        }
    }
    let dp = dp_size.unwrap_or(1);
    if !per_rank.is_empty() {
        if per_rank.len() == 1 && dp > 1 {
            return per_rank.values().next().map(|v| v * dp);
        }
        return Some(per_rank.values().sum());
    }
    match bare_n {
        0 => None,
        1 if dp > 1 => Some(bare * dp),
        _ => Some(bare),
    }
}

/// `DP<i> TP<j> EP<k>` (whitespace-separated words) → that tag.
fn rank_tag(line: &str) -> Option<String> {
    let words: Vec<&str> = line
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    let is = |w: &str, p: &str| {
        w.strip_prefix(p)
            .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
    };
    words.windows(3).find_map(|w| {
        (is(w[0], "DP") && is(w[1], "TP") && is(w[2], "EP"))
            .then(|| format!("{} {} {}", w[0], w[1], w[2]))
    })
}
