//! The prefix-cache check of a random-dataset run: when the server's prefix-cache counters over
//! the profiling window (from the `/metrics` scraper, `core::server_metrics`) show far more hits
//! than the run itself explains, its prompts were sent before (a repeated run with the same
//! seed: TTFT far too low), and `bench` says so and marks the point invalid
//! (`inferbench.invalid_reason`: kept off every frontier). Servers without the counters (llama.cpp,
//! SGLang) give no check.

/// Prefix-cache counter increases over the profiling window, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PrefixCache {
    /// Prompt tokens looked up in the prefix cache.
    pub queries: f64,
    /// Prompt tokens found there.
    pub hits: f64,
}

/// The tokens the server's template adds to every prompt of this run, as the run measured
/// them: the least, over its successful profile requests whose server count differs from the
/// client's, of the server's `usage.prompt_tokens` minus the client's count (a template's
/// fixed part is the same on every request; a tokenizer that differs from the server's only
/// adds to some). 0 when no request says (no usage, or counts that agree).
pub fn template_overhead(records: &[inferbench_core::RequestRecord]) -> u32 {
    records
        .iter()
        .filter(|r| r.success && r.phase == inferbench_core::Phase::Profile)
        .map(|r| r.prompt_tokens.saturating_sub(r.prompt_tokens_client))
        .min()
        .unwrap_or(0)
}

/// The warning for a random-dataset run whose profile phase found `delta.hits` prompt tokens
/// in the server's prefix cache, or `None` when that is no more than the run itself explains:
/// `shared_len` tokens of every request (what all prompts share by design: the
/// `--random-prefix-len`, the `--cache-bust` marker and the server's template around them,
/// which a per-run marker cannot bust), plus one whole prompt (the warmup sends
/// the first prompt, which the profile phase sends again), plus 5 % of the tokens queried.
/// `sent_tokens`: the prompt tokens this run sent in the window; counters beyond it by more
/// than 5 % count other clients' requests too, which the warning says (trial 19: two `bench`
/// runs side by side were each told of both runs' tokens).
pub fn cache_warning(
    delta: &PrefixCache,
    requests: u64,
    shared_len: u32,
    (max_prompt_tokens, sent_tokens): (u64, u64),
) -> Option<String> {
    if delta.queries <= 0.0 {
        return None;
    }
    let explained =
        requests as f64 * f64::from(shared_len) + max_prompt_tokens as f64 + 0.05 * delta.queries;
    let others = if delta.queries > 1.05 * sent_tokens as f64 {
        format!(
            " (the server's counters include other clients' requests: this run sent {sent_tokens} \
             of those prompt tokens)"
        )
    } else {
        String::new()
    };
    (delta.hits > explained).then(|| {
        format!(
            "the server's prefix cache served {:.0} of {:.0} prompt tokens ({:.1} %){others} \
             during this random-dataset run: its prompts were sent before (same --seed?), so \
             TTFT is too low; the result is marked invalid (kept off frontiers unless \
             --include-invalid). Use \
             --cache-bust, another --seed, or restart the server.",
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
    fn template_overhead_is_the_least_server_excess_of_a_successful_profile_request() {
        let rec = |server: u32, client: u32, success: bool, phase: inferbench_core::Phase| {
            inferbench_core::RequestRecord {
                prompt_tokens: server,
                prompt_tokens_client: client,
                success,
                phase,
                ..Default::default()
            }
        };
        use inferbench_core::Phase::{Profile, Warmup};
        let rs = [
            rec(266, 256, true, Profile),
            rec(270, 256, true, Profile),
            rec(256, 256, false, Profile),
            rec(256, 256, true, Warmup),
        ];
        assert_eq!(template_overhead(&rs), 10);
        assert_eq!(template_overhead(&rs[2..]), 0);
        // A server count below the client's (another tokenizer) is no overhead.
        assert_eq!(template_overhead(&[rec(250, 256, true, Profile)]), 0);
    }

    #[test]
    fn warns_only_beyond_what_the_run_explains() {
        let d = |hits: f64, queries: f64| PrefixCache { queries, hits };
        // 32 requests of 1024 tokens, no shared prefix: one prompt (warmup) + 5 % explained.
        assert_eq!(
            cache_warning(&d(1024.0 + 1638.0, 32768.0), 32, 0, (1024, 32768)),
            None
        );
        let w = cache_warning(&d(32256.0, 32768.0), 32, 0, (1024, 32768)).unwrap();
        assert_eq!(
            w,
            "the server's prefix cache served 32256 of 32768 prompt tokens (98.4 %) during \
             this random-dataset run: its prompts were sent before (same --seed?), so TTFT is \
             too low; the result is marked invalid (kept off frontiers unless --include-invalid). \
             Use --cache-bust, \
             another --seed, or restart the server."
        );
        // Another client's requests in the same window: the counters are the server's.
        let w = cache_warning(&d(60000.0, 65536.0), 32, 0, (1024, 32768)).unwrap();
        assert!(
            w.contains(
                "served 60000 of 65536 prompt tokens (91.6 %) (the server's counters include \
                 other clients' requests: this run sent 32768 of those prompt tokens) during"
            ),
            "{w}"
        );
        // A 512-token shared prefix explains 512 hits per request.
        assert_eq!(
            cache_warning(&d(32.0 * 512.0 + 1024.0, 49152.0), 32, 512, (1536, 49152)),
            None
        );
        assert_eq!(cache_warning(&d(0.0, 0.0), 32, 0, (1024, 0)), None);
    }
}
