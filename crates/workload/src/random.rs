//! Random prompts with exact token counts (DESIGN.md §5, reference/inferencex-producer.md §6.1).
//!
//! Per prompt `i` (InferenceX's `sample_random_requests`): input length `L_i` and output length
//! `O_i` drawn uniformly (inclusive) from the range of [`RangeSemantics`], an offset `o_i` uniform
//! in `[0, vocab)`, token ids `(o_i + i + j) mod vocab` for `j < L_i`, preceded by a shared random
//! prefix of `prefix_len` ids. The ids are decoded to text; the text is then re-encoded and fixed up
//! until it has **exactly** `prefix_len + L_i` tokens under the tokenizer (peers.md bug 26: without
//! the fix-up, BPE merges leave 8k prompts at 8179 tokens).
//!
//! Deterministic: all random draws come from one `StdRng` seeded with `seed`, in a fixed order
//! (prefix ids, then input lengths, output lengths, offsets), before the per-prompt work, which
//! runs in parallel; any randomness a fix-up needs comes from a per-prompt RNG derived from
//! `(seed, i)`. Same seed, tokenizer and spec ⇒ byte-identical prompts on any thread count. (Which
//! fitting path runs depends only on the spec — workloads under 500k prompt tokens skip the fast
//! path's one-time tables — so that choice is deterministic too.)

use crate::error::WorkloadError;
use crate::fit;
use crate::prompt::Prompt;
use crate::tokenizer::Tokenizer;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// How `--random-range-ratio` r maps a nominal length L to the sampled range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RangeSemantics {
    /// InferenceX / SGLang: uniform in `[floor(r·L), L]`, `0 ≤ r ≤ 1` (r = 0.8 averages 0.9·L).
    #[default]
    #[serde(alias = "sglang")]
    InferenceX,
    /// vLLM: uniform in `[floor((1−r)·L), floor((1+r)·L)]`, `0 ≤ r < 1`.
    Vllm,
}

impl RangeSemantics {
    /// Parses `inferencex` / `sglang` / `vllm` (case-insensitive).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "inferencex" | "sglang" => Some(RangeSemantics::InferenceX),
            "vllm" => Some(RangeSemantics::Vllm),
            _ => None,
        }
    }
}

/// What random prompts to make.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandomSpec {
    /// Nominal input length L (tokens, excluding the prefix).
    pub input_len: u32,
    /// Nominal output length (tokens): `max_tokens` is drawn with the same range rule.
    pub output_len: u32,
    /// Range ratio r (see [`RangeSemantics`]). Default 1.0: fixed lengths under InferenceX rules.
    pub range_ratio: f64,
    /// Range rule.
    pub semantics: RangeSemantics,
    /// Shared random prefix length, tokens (default 0), prepended to every prompt.
    pub prefix_len: u32,
    /// Number of prompts.
    pub num_prompts: usize,
    /// RNG seed (default 0, as InferenceX's `--seed`). The same seed gives byte-identical
    /// prompts, so a repeated run hits the server's prefix cache unless [`Self::cache_bust`]
    /// is set.
    pub seed: u64,
    /// A marker text put at the very start of every prompt, before the shared prefix, and
    /// counted inside the prompt's token count (`None`: no marker). [`cache_bust_marker`]
    /// makes the run-unique `[rid:<12 hex>]\n\n` form AgentX uses (reference/agentx.md §2.6),
    /// so a repeated run with the same seed shares no KV-cache block with an earlier one.
    pub cache_bust: Option<String>,
}

/// The cache-bust marker for a run: `[rid:<12 lowercase hex digits of run_id>]` and a blank
/// line (AgentX's first-turn-prefix form, reference/agentx.md §2.6). `run_id` should differ
/// between runs (e.g. random); only its low 48 bits are used.
pub fn cache_bust_marker(run_id: u64) -> String {
    format!("[rid:{:012x}]\n\n", run_id & 0xffff_ffff_ffff)
}

impl Default for RandomSpec {
    fn default() -> Self {
        RandomSpec {
            input_len: 1024,
            output_len: 1024,
            range_ratio: 1.0,
            semantics: RangeSemantics::InferenceX,
            prefix_len: 0,
            num_prompts: 1,
            seed: 0,
            cache_bust: None,
        }
    }
}

/// Inclusive `[lo, hi]` length range for nominal length `len` (tokens), never below 1.
///
/// # Errors
/// [`WorkloadError::InvalidSpec`] when `r` is out of range for the semantics or not finite.
pub fn length_range(
    len: u32,
    r: f64,
    semantics: RangeSemantics,
) -> Result<(u32, u32), WorkloadError> {
    let bad = |reason: &str| WorkloadError::InvalidSpec {
        field: "--random-range-ratio",
        reason: format!("{r}: {reason}"),
    };
    if !r.is_finite() {
        return Err(bad("must be a finite number"));
    }
    let l = f64::from(len);
    let (lo, hi) = match semantics {
        RangeSemantics::InferenceX => {
            if !(0.0..=1.0).contains(&r) {
                return Err(bad("must be in [0, 1] (lengths uniform in [r·L, L])"));
            }
            ((l * r).floor(), l)
        }
        RangeSemantics::Vllm => {
            if !(0.0..1.0).contains(&r) {
                return Err(bad(
                    "must be in [0, 1) with vLLM semantics (lengths uniform in [(1−r)L, (1+r)L])",
                ));
            }
            ((l * (1.0 - r)).floor(), (l * (1.0 + r)).floor())
        }
    };
    let hi = (hi.min(f64::from(u32::MAX)) as u32).max(1);
    let lo = (lo as u32).clamp(1, hi);
    Ok((lo, hi))
}

/// Makes `spec.num_prompts` random prompts, each with exactly `prefix_len + L_i` tokens under
/// `tok` (`Prompt::prompt_tokens`), `max_tokens = O_i`. Runs on the rayon thread pool.
///
/// With the embedded encodings most prompts take the fast path (the window's end is moved within
/// the same consecutive-id text instead of appending random ids; see `src/fast.rs`); HF tokenizers
/// and the rare undecided prompt use the reference re-encode/fix-up loop.
///
/// # Errors
/// [`WorkloadError::InvalidSpec`] for an out-of-range ratio or zero input length;
/// [`WorkloadError::CannotFit`] if a prompt cannot reach its exact length (not expected).
pub fn random_prompts(spec: &RandomSpec, tok: &Tokenizer) -> Result<Vec<Prompt>, WorkloadError> {
    random_prompts_with_stats(spec, tok).map(|(p, _)| p)
}

/// How random prompts were prepared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PrepStats {
    /// Prompts fitted by the fast windowed path.
    pub fast: usize,
    /// Prompts fitted by full re-encoding (HF tokenizers, or undecided by the fast path).
    pub slow: usize,
}

/// [`random_prompts`] plus how many prompts took the fast and the slow path.
///
/// # Errors
/// As [`random_prompts`].
pub fn random_prompts_with_stats(
    spec: &RandomSpec,
    tok: &Tokenizer,
) -> Result<(Vec<Prompt>, PrepStats), WorkloadError> {
    generate(spec, tok, None)
}

/// Workloads below this many prompt tokens skip the fast path: building its tables once costs
/// about as much as fitting ~60 prompts of 8k tokens by re-encoding.
const FAST_MIN_TOKENS: u64 = 500_000;

/// `force_fast`: `Some(b)` overrides the [`FAST_MIN_TOKENS`] rule (tests).
pub(crate) fn generate(
    spec: &RandomSpec,
    tok: &Tokenizer,
    force_fast: Option<bool>,
) -> Result<(Vec<Prompt>, PrepStats), WorkloadError> {
    if spec.input_len == 0 {
        return Err(WorkloadError::InvalidSpec {
            field: "--random-input-len",
            reason: "must be ≥ 1".into(),
        });
    }
    let (in_lo, in_hi) = length_range(spec.input_len, spec.range_ratio, spec.semantics)?;
    let (out_lo, out_hi) = length_range(spec.output_len.max(1), spec.range_ratio, spec.semantics)?;
    let vocab = tok.vocab_size();
    let n = spec.num_prompts;
    let mut rng = StdRng::seed_from_u64(spec.seed);
    // The marker's ids lead the shared prefix; its tokens count inside each input length, so
    // the random body of a prompt is that much shorter (the draws stay those of the seed).
    let mut prefix: Vec<u32> = match &spec.cache_bust {
        Some(m) => tok.encode(m),
        None => Vec::new(),
    };
    let marker_len = prefix.len() as u32;
    if marker_len > 0 && in_lo <= marker_len {
        return Err(WorkloadError::InvalidSpec {
            field: "--cache-bust",
            reason: format!(
                "the marker takes {marker_len} tokens, counted inside the input length; \
                 input lengths down to {in_lo} leave no room for the prompt"
            ),
        });
    }
    prefix.extend((0..spec.prefix_len).map(|_| rng.random_range(0..vocab)));
    let in_lens: Vec<u32> = (0..n).map(|_| rng.random_range(in_lo..=in_hi)).collect();
    let out_lens: Vec<u32> = (0..n).map(|_| rng.random_range(out_lo..=out_hi)).collect();
    let offsets: Vec<u32> = (0..n).map(|_| rng.random_range(0..vocab)).collect();

    let total: u64 = in_lens
        .iter()
        .map(|&l| u64::from(l) + u64::from(spec.prefix_len))
        .sum();
    let fitter = fit::Fitter::new(tok, &prefix, force_fast.unwrap_or(total >= FAST_MIN_TOKENS));
    let prompts = (0..n)
        .into_par_iter()
        .map(|i| {
            let start = ((u64::from(offsets[i]) + i as u64) % u64::from(vocab)) as u32;
            let target = spec.prefix_len + in_lens[i];
            let text = fitter.fit(i, start, in_lens[i] - marker_len, target, spec.seed)?;
            Ok(Prompt::new(text, target, out_lens[i]))
        })
        .collect::<Result<Vec<_>, WorkloadError>>()?;
    let slow = fitter.slow.load(std::sync::atomic::Ordering::Relaxed);
    Ok((
        prompts,
        PrepStats {
            fast: n - slow,
            slow,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_each_semantics() {
        use RangeSemantics::*;
        assert_eq!(length_range(8192, 0.8, InferenceX).unwrap(), (6553, 8192));
        assert_eq!(length_range(1024, 1.0, InferenceX).unwrap(), (1024, 1024));
        assert_eq!(length_range(1024, 0.0, InferenceX).unwrap(), (1, 1024));
        assert_eq!(length_range(1000, 0.1, Vllm).unwrap(), (900, 1100));
        assert_eq!(length_range(1000, 0.0, Vllm).unwrap(), (1000, 1000));
        assert!(length_range(1000, 1.0, Vllm).is_err());
        assert!(length_range(1000, 1.5, InferenceX).is_err());
        assert!(length_range(1000, f64::NAN, InferenceX).is_err());
        let e = length_range(10, -0.1, InferenceX).unwrap_err().to_string();
        assert!(e.contains("--random-range-ratio"), "{e}");
        assert_eq!(RangeSemantics::parse("SGLang"), Some(InferenceX));
        assert_eq!(RangeSemantics::parse("vllm"), Some(Vllm));
    }

    fn check_exact(tok: &Tokenizer, spec: &RandomSpec) -> Vec<Prompt> {
        let (ps, stats) = generate(spec, tok, Some(true)).unwrap();
        eprintln!("{:?} {stats:?}", spec);
        assert_eq!(ps.len(), spec.num_prompts);
        let (lo, hi) = length_range(spec.input_len, spec.range_ratio, spec.semantics).unwrap();
        for (i, p) in ps.iter().enumerate() {
            let n = tok.count(&p.text);
            assert_eq!(
                n, p.prompt_tokens as usize,
                "prompt {i}: counted {n}, claimed {}",
                p.prompt_tokens
            );
            let body = p.prompt_tokens - spec.prefix_len;
            assert!(
                (lo..=hi).contains(&body),
                "prompt {i}: {body} not in [{lo}, {hi}]"
            );
        }
        ps
    }

    #[test]
    fn cache_bust_marker_leads_every_prompt_inside_its_token_count() {
        let tok = Tokenizer::load("o200k_base").unwrap();
        assert_eq!(
            cache_bust_marker(0xabc_0123_4567_89ff),
            "[rid:0123456789ff]\n\n"
        );
        let plain = RandomSpec {
            input_len: 200,
            output_len: 10,
            range_ratio: 0.5,
            prefix_len: 30,
            num_prompts: 20,
            seed: 3,
            ..Default::default()
        };
        let marked = RandomSpec {
            cache_bust: Some(cache_bust_marker(0x1234)),
            ..plain.clone()
        };
        let a = check_exact(&tok, &plain);
        let b = check_exact(&tok, &marked);
        for (x, y) in a.iter().zip(&b) {
            // Same drawn lengths (ISL counts the marker), different leading bytes.
            assert_eq!(x.prompt_tokens, y.prompt_tokens);
            assert_eq!(x.max_tokens, y.max_tokens);
            assert!(
                y.text.starts_with("[rid:000000001234]\n\n"),
                "{:?}",
                &y.text[..30]
            );
            assert!(!x.text.starts_with("[rid:"));
        }
        // Runs with different markers share no leading text; prompts of one run share the
        // marker and the prefix.
        let c = check_exact(
            &tok,
            &RandomSpec {
                cache_bust: Some(cache_bust_marker(0x5678)),
                ..plain.clone()
            },
        );
        assert_ne!(b[0].text[..20], c[0].text[..20]);
        let e = generate(
            &RandomSpec {
                input_len: 4,
                ..marked.clone()
            },
            &tok,
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--cache-bust") && e.contains("tokens"), "{e}");
    }

    #[test]
    fn every_prompt_has_exactly_its_token_count_o200k() {
        let tok = Tokenizer::load("o200k_base").unwrap();
        let spec = RandomSpec {
            input_len: 1500,
            output_len: 100,
            range_ratio: 0.05,
            num_prompts: 120,
            seed: 7,
            ..Default::default()
        };
        let ps = check_exact(&tok, &spec);
        assert!(ps.iter().all(|p| (5..=100).contains(&p.max_tokens)));
        // the embedded encodings take the fast windowed path (forced: this workload is small)
        let (fast, stats) = generate(&spec, &tok, Some(true)).unwrap();
        assert_eq!(stats, PrepStats { fast: 120, slow: 0 });
        // small workloads skip the tables; the slow path gives exact prompts too
        let (slow, stats) = random_prompts_with_stats(&spec, &tok).unwrap();
        assert_eq!(stats, PrepStats { fast: 0, slow: 120 });
        assert_eq!(fast.len(), slow.len());
        for p in &slow {
            assert_eq!(tok.count(&p.text), p.prompt_tokens as usize);
        }
    }

    #[test]
    fn every_prompt_has_exactly_its_token_count_cl100k_with_prefix() {
        let tok = Tokenizer::load("cl100k_base").unwrap();
        let spec = RandomSpec {
            input_len: 300,
            output_len: 10,
            range_ratio: 0.5,
            semantics: RangeSemantics::Vllm,
            prefix_len: 50,
            num_prompts: 150,
            seed: 3,
            cache_bust: None,
        };
        let ps = check_exact(&tok, &spec);
        // the shared prefix really is shared
        let first: String = ps[0].text.chars().take(20).collect();
        assert!(ps.iter().all(|p| p.text.starts_with(&first)));
    }

    #[test]
    fn short_prompts_are_exact_too() {
        let tok = Tokenizer::load("o200k_base").unwrap();
        for len in [1, 2, 3, 5, 17] {
            let spec = RandomSpec {
                input_len: len,
                num_prompts: 60,
                seed: u64::from(len),
                ..Default::default()
            };
            check_exact(&tok, &spec);
        }
    }

    #[test]
    fn deterministic_per_seed() {
        let tok = Tokenizer::load("o200k_base").unwrap();
        let spec = RandomSpec {
            input_len: 200,
            output_len: 50,
            range_ratio: 0.8,
            num_prompts: 30,
            seed: 42,
            ..Default::default()
        };
        let a = random_prompts(&spec, &tok).unwrap();
        let b = random_prompts(&spec, &tok).unwrap();
        assert_eq!(a, b);
        let c = random_prompts(&RandomSpec { seed: 43, ..spec }, &tok).unwrap();
        assert_ne!(a[0].text, c[0].text);
    }

    #[test]
    fn bad_spec_is_an_error() {
        let tok = Tokenizer::load("o200k_base").unwrap();
        let spec = RandomSpec {
            input_len: 0,
            ..Default::default()
        };
        assert!(random_prompts(&spec, &tok).is_err());
    }
}
