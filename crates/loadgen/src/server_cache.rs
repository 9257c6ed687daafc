//! The server's prefix-cache counters, read from its Prometheus `/metrics` once before and once
//! after the profiling phase, so `bench` can say when a random dataset was served from the
//! prefix cache (a repeated run with the same seed: TTFT far too low). The full per-second
//! scraper of issue 10 will replace this reading; the check stays.
//!
//! Counters read (vLLM names, also exported by `inferbench sim`): `vllm:prefix_cache_queries`
//! and `vllm:prefix_cache_hits` (tokens queried / tokens found), with or without the `_total`
//! suffix and the older `gpu_` infix, summed over label sets. A server without them (llama.cpp,
//! SGLang) or without `/metrics` gives `None`: nothing is said.

use std::time::Duration;

use inferbench_client::http_get;
use inferbench_core::prometheus::parse_prometheus;

/// Cumulative prefix-cache counters of a server, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PrefixCache {
    /// Prompt tokens looked up in the prefix cache.
    pub queries: f64,
    /// Prompt tokens found there.
    pub hits: f64,
}

impl PrefixCache {
    /// `self − before`, counter by counter (a server restart in between gives negatives:
    /// `None`).
    pub fn since(&self, before: &PrefixCache) -> Option<PrefixCache> {
        let d = PrefixCache {
            queries: self.queries - before.queries,
            hits: self.hits - before.hits,
        };
        (d.queries >= 0.0 && d.hits >= 0.0).then_some(d)
    }
}

/// Sums the prefix-cache counters of a Prometheus text exposition over their label sets;
/// `None` when neither counter is present with a finite value.
pub fn parse_prefix_cache(text: &str) -> Option<PrefixCache> {
    let mut pc = PrefixCache::default();
    let mut seen = false;
    for s in parse_prometheus(text) {
        let base = s.name.strip_suffix("_total").unwrap_or(&s.name);
        let slot = match base {
            "vllm:prefix_cache_queries" | "vllm:gpu_prefix_cache_queries" => &mut pc.queries,
            "vllm:prefix_cache_hits" | "vllm:gpu_prefix_cache_hits" => &mut pc.hits,
            _ => continue,
        };
        if s.value.is_finite() {
            *slot += s.value;
            seen = true;
        }
    }
    seen.then_some(pc)
}

/// GETs `<base_url>/metrics` (2 s timeout) and parses the prefix-cache counters; `None` on any
/// failure (no such endpoint, not reachable, no counters).
pub async fn read_prefix_cache(base_url: &str) -> Option<PrefixCache> {
    let url = format!("{}/metrics", base_url.trim_end_matches('/'));
    match http_get(&url, Duration::from_secs(2)).await {
        Ok((200, body)) => parse_prefix_cache(&String::from_utf8_lossy(&body)),
        _ => None,
    }
}

/// The warning for a random-dataset run whose profile phase found `delta.hits` prompt tokens
/// in the server's prefix cache, or `None` when that is no more than the run itself explains:
/// the shared `--random-prefix-len` of every request, plus one whole prompt (the warmup sends
/// the first prompt, which the profile phase sends again), plus 5 % of the tokens queried.
pub fn cache_warning(
    delta: &PrefixCache,
    requests: u64,
    prefix_len: u32,
    max_prompt_tokens: u64,
) -> Option<String> {
    if delta.queries <= 0.0 {
        return None;
    }
    let explained =
        requests as f64 * f64::from(prefix_len) + max_prompt_tokens as f64 + 0.05 * delta.queries;
    (delta.hits > explained).then(|| {
        format!(
            "the server's prefix cache served {:.0} of {:.0} prompt tokens ({:.1} %) of this \
             random-dataset run: its prompts were sent before (same --seed?), so TTFT is too \
             low. Use --cache-bust, another --seed, or restart the server.",
            delta.hits,
            delta.queries,
            100.0 * delta.hits / delta.queries
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_vllm_counters_over_label_sets() {
        let text = "# HELP vllm:prefix_cache_queries_total x\n\
                    # TYPE vllm:prefix_cache_queries_total counter\n\
                    vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"a b\"} 8192\n\
                    vllm:prefix_cache_queries_total{engine=\"1\",model_name=\"a b\"} 8\n\
                    vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"a b\"} 5760\n\
                    vllm:prefix_cache_hits_created 17\n\
                    vllm:num_requests_running 3\n";
        assert_eq!(
            parse_prefix_cache(text),
            Some(PrefixCache {
                queries: 8200.0,
                hits: 5760.0
            })
        );
        assert_eq!(
            parse_prefix_cache("vllm:gpu_prefix_cache_hits 4\n"),
            Some(PrefixCache {
                queries: 0.0,
                hits: 4.0
            })
        );
        assert_eq!(
            parse_prefix_cache("llamacpp:prompt_tokens_total 10\n"),
            None
        );
        assert_eq!(
            parse_prefix_cache("vllm:prefix_cache_hits_total{a=\"1\"} NaN\n"),
            None
        );
    }

    #[test]
    fn warns_only_beyond_what_the_run_explains() {
        let d = |hits: f64, queries: f64| PrefixCache { queries, hits };
        // 32 requests of 1024 tokens, no shared prefix: one prompt (warmup) + 5 % explained.
        assert_eq!(
            cache_warning(&d(1024.0 + 1638.0, 32768.0), 32, 0, 1024),
            None
        );
        let w = cache_warning(&d(32256.0, 32768.0), 32, 0, 1024).unwrap();
        assert!(w.contains("32256 of 32768 prompt tokens (98.4 %)"), "{w}");
        assert!(w.contains("--cache-bust"), "{w}");
        // A 512-token shared prefix explains 512 hits per request.
        assert_eq!(
            cache_warning(&d(32.0 * 512.0 + 1024.0, 49152.0), 32, 512, 1536),
            None
        );
        assert_eq!(cache_warning(&d(0.0, 0.0), 32, 0, 1024), None);
    }
}
