//! Bringing a decoded random-id text to an exact token count.
//!
//! The reference behaviour (InferenceX / vLLM PR #24937): decode the ids, re-encode, truncate
//! the re-encoded ids to the target (or extend them with random ids), decode again, up to 10
//! rounds. Those rounds usually converge but are not guaranteed to; we then finish
//! deterministically: cut the text at a token boundary until it has at most the target, and append
//! single-token fillers (`" a"`, …) until it has exactly the target, re-counting every step.

use crate::error::WorkloadError;
use crate::tokenizer::Tokenizer;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::cmp::Ordering;

/// Rounds of the reference re-encode/fix-up loop (InferenceX uses up to 10).
const REFERENCE_ROUNDS: usize = 10;
/// Bound on the deterministic finishing steps (each re-counts the text).
const FINISH_STEPS: usize = 64;
/// Texts that add one token at the end of almost any text, tried in order.
const FILLERS: [&str; 6] = [" a", " the", "a", ".", "\n", " x"];

/// Per-run fitting state: the tokenizer and the decoded shared prefix.
pub(crate) struct Fitter<'a> {
    tok: &'a Tokenizer,
    prefix: Vec<u32>,
    vocab: u32,
}

impl<'a> Fitter<'a> {
    pub(crate) fn new(tok: &'a Tokenizer, prefix: &[u32]) -> Self {
        Fitter {
            tok,
            prefix: prefix.to_vec(),
            vocab: tok.vocab_size(),
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
        let v = u64::from(self.vocab);
        let mut ids = self.prefix.clone();
        ids.extend((0..u64::from(len)).map(|j| ((u64::from(start) + j) % v) as u32));
        exact_slow(self.tok, &ids, target as usize, index, seed)
    }
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
