//! [`Tokenizer`]: the client-side tokenizer used to size prompts and to count output tokens when
//! a server sends no `usage` (DESIGN.md §5).
//!
//! Specs: `o200k_base` (default) and `cl100k_base` are embedded in the binary by `tiktoken-rs`
//! (no download); anything else is a path to a Hugging Face `tokenizer.json` loaded with the
//! `tokenizers` crate (pure-Rust regex backend, no C/C++ build). Token ids are `u32`; encoding never
//! adds special tokens (BOS/EOS), as vLLM's `input_lens` and InferenceX's random prompts count them
//! (peers.md bugs 24–25 came from adding BOS).

use crate::error::WorkloadError;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use tiktoken_rs::CoreBPE;

/// Default tokenizer spec.
pub const DEFAULT_TOKENIZER: &str = "o200k_base";

/// A loaded tokenizer. Cheap to clone (shared state); `Send + Sync`.
#[derive(Clone)]
pub struct Tokenizer {
    id: String,
    kind: Kind,
}

#[derive(Clone)]
pub(crate) enum Kind {
    Tiktoken(Arc<TiktokenState>),
    /// A HF tokenizer with its vocabulary sizes computed once at load (the `tokenizers` call
    /// rebuilds the vocabulary map every time: 128k entries per call made a block corpus of 9k
    /// decodes take 8 minutes).
    Hf(Arc<tokenizers::Tokenizer>, HfSizes),
}

/// Vocabulary sizes of a HF tokenizer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HfSizes {
    /// Without added tokens.
    base: u32,
    /// With added tokens (valid ids for decoding are below this).
    full: u32,
}

/// An embedded tiktoken encoding plus a flat id → bytes table of its ordinary tokens.
pub(crate) struct TiktokenState {
    pub(crate) bpe: &'static CoreBPE,
    /// Ordinary (non-special) ids are `0..vocab`, contiguous.
    pub(crate) vocab: u32,
    /// Concatenated bytes of ids `0..vocab`; id `i` is `bytes[offs[i]..offs[i + 1]]`.
    pub(crate) bytes: Vec<u8>,
    pub(crate) offs: Vec<u32>,
    /// The pre-tokenization regex of this encoding (same pattern `tiktoken-rs` uses).
    pub(crate) pattern: &'static str,
    /// The pre-tokenized periodic vocabulary text for fast exact random prompts, built on first
    /// use (`None` if it could not be built: the slow path is used then).
    cyclic: OnceLock<Option<Arc<crate::fast::Cyclic>>>,
}

impl TiktokenState {
    fn new(bpe: &'static CoreBPE, vocab: u32, pattern: &'static str) -> Self {
        let mut bytes = Vec::with_capacity(vocab as usize * 8);
        let mut offs = Vec::with_capacity(vocab as usize + 1);
        offs.push(0);
        for b in bpe._decode_native_and_split((0..vocab).collect()) {
            bytes.extend_from_slice(&b);
            offs.push(bytes.len() as u32);
        }
        TiktokenState {
            bpe,
            vocab,
            bytes,
            offs,
            pattern,
            cyclic: OnceLock::new(),
        }
    }

    /// The fast-path state (built once, ~0.5 s for o200k_base).
    pub(crate) fn cyclic(&self) -> Option<Arc<crate::fast::Cyclic>> {
        self.cyclic
            .get_or_init(|| crate::fast::Cyclic::new(self).map(Arc::new))
            .clone()
    }

    /// Bytes of ordinary token `id` (`id < vocab`).
    #[inline]
    pub(crate) fn token_bytes(&self, id: u32) -> &[u8] {
        let i = id as usize;
        &self.bytes[self.offs[i] as usize..self.offs[i + 1] as usize]
    }
}

/// cl100k_base pre-tokenization pattern (OpenAI tiktoken, as in `tiktoken-rs`).
const CL100K_PAT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

fn o200k() -> Arc<TiktokenState> {
    static S: OnceLock<Arc<TiktokenState>> = OnceLock::new();
    S.get_or_init(|| {
        // o200k_base: ordinary ranks 0..=199997; specials at 199999 and 200018.
        Arc::new(TiktokenState::new(
            tiktoken_rs::o200k_base_singleton(),
            199_998,
            tiktoken_rs::O200K_BASE_PAT_STR,
        ))
    })
    .clone()
}

fn cl100k() -> Arc<TiktokenState> {
    static S: OnceLock<Arc<TiktokenState>> = OnceLock::new();
    S.get_or_init(|| {
        // cl100k_base: ordinary ranks 0..=100255; specials from 100257.
        Arc::new(TiktokenState::new(
            tiktoken_rs::cl100k_base_singleton(),
            100_256,
            CL100K_PAT,
        ))
    })
    .clone()
}

impl Tokenizer {
    /// Loads a tokenizer: `"o200k_base"` (default; also `""`), `"cl100k_base"`, or a path to a
    /// Hugging Face `tokenizer.json`. The embedded encodings are built once per process (~0.2 s
    /// each) and shared.
    ///
    /// # Errors
    /// [`WorkloadError::Tokenizer`] naming the spec: unknown name, unreadable or invalid file.
    pub fn load(spec: &str) -> Result<Self, WorkloadError> {
        let s = spec.trim();
        match s {
            "" | "o200k_base" | "o200k" => Ok(Tokenizer {
                id: "o200k_base".into(),
                kind: Kind::Tiktoken(o200k()),
            }),
            "cl100k_base" | "cl100k" => Ok(Tokenizer {
                id: "cl100k_base".into(),
                kind: Kind::Tiktoken(cl100k()),
            }),
            path => Self::from_file(Path::new(path)),
        }
    }

    /// Loads a Hugging Face `tokenizer.json`.
    ///
    /// # Errors
    /// [`WorkloadError::Tokenizer`] naming the file when it is missing, unreadable or not a valid
    /// tokenizer (a directory containing `tokenizer.json` is accepted too).
    pub fn from_file(path: &Path) -> Result<Self, WorkloadError> {
        let file = if path.is_dir() {
            path.join("tokenizer.json")
        } else {
            path.to_path_buf()
        };
        let err = |reason: String| WorkloadError::Tokenizer {
            spec: file.display().to_string(),
            reason,
        };
        if !file.exists() {
            // vLLM users pass a Hugging Face id (`meta-llama/Llama-3.1-8B`): nothing is
            // downloaded here, so name what is taken instead (trial 32 F11).
            let spec = path.to_string_lossy();
            let hub_id = !path.is_absolute()
                && !spec.starts_with('.')
                && spec.matches('/').count() == 1
                && !spec.ends_with(".json");
            let why = if hub_id {
                "no such file; a Hugging Face model id is not downloaded (nothing here uses \
                 the network): pass the path to the model's tokenizer.json, o200k_base or \
                 cl100k_base"
            } else {
                "no such file (expected o200k_base, cl100k_base or a path to a tokenizer.json)"
            };
            return Err(err(why.into()));
        }
        let tk = tokenizers::Tokenizer::from_file(&file).map_err(|e| err(e.to_string()))?;
        if tk.get_vocab_size(false) == 0 {
            return Err(err("empty vocabulary".into()));
        }
        Ok(Tokenizer {
            id: file.display().to_string(),
            kind: {
                let sizes = HfSizes {
                    base: tk.get_vocab_size(false) as u32,
                    full: tk.get_vocab_size(true) as u32,
                };
                Kind::Hf(Arc::new(tk), sizes)
            },
        })
    }

    /// The identity written to results (`tokenizer_id`): the encoding name or the file path.
    pub fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn kind(&self) -> &Kind {
        &self.kind
    }

    /// Token ids of `text`, without special tokens.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        match &self.kind {
            Kind::Tiktoken(t) => t.bpe.encode_ordinary(text),
            Kind::Hf(t, _) => t
                .encode_fast(text, false)
                .map(|e| e.get_ids().to_vec())
                .unwrap_or_default(),
        }
    }

    /// Number of tokens of `text` (no special tokens).
    pub fn count(&self, text: &str) -> usize {
        match &self.kind {
            Kind::Tiktoken(t) => t.bpe.encode_ordinary(text).len(),
            Kind::Hf(t, _) => t.encode_fast(text, false).map(|e| e.len()).unwrap_or(0),
        }
    }

    /// Text of `ids`. Invalid UTF-8 (a multi-byte character split across ids) becomes U+FFFD, as
    /// Python's `errors="replace"`; unknown ids are skipped. Never panics.
    pub fn decode(&self, ids: &[u32]) -> String {
        match &self.kind {
            Kind::Tiktoken(t) => {
                let mut bytes = Vec::with_capacity(ids.len() * 6);
                for &id in ids {
                    if id < t.vocab {
                        bytes.extend_from_slice(t.token_bytes(id));
                    } else if let Ok(s) = t.bpe.decode(vec![id]) {
                        bytes.extend_from_slice(s.as_bytes());
                    }
                }
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Kind::Hf(t, sizes) => {
                let n = sizes.full;
                let ok: Vec<u32> = ids.iter().copied().filter(|&i| i < n).collect();
                t.decode(&ok, false).unwrap_or_default()
            }
        }
    }

    /// Builds, ahead of use, the one-time tables that large random workloads use with the
    /// embedded encodings (~1 s; otherwise built on first need). No-op for HF tokenizers.
    pub fn warm_up(&self) {
        if let Kind::Tiktoken(t) = &self.kind {
            let _ = t.cyclic();
        }
    }

    /// Number of ordinary token ids, `0..vocab_size()` all valid (what random prompts draw from;
    /// HF: the base vocabulary without added tokens, like `transformers`' `vocab_size`).
    pub fn vocab_size(&self) -> u32 {
        match &self.kind {
            Kind::Tiktoken(t) => t.vocab,
            Kind::Hf(_, sizes) => sizes.base,
        }
    }
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("id", &self.id)
            .field("vocab_size", &self.vocab_size())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_encodings_count_and_round_trip() {
        let o = Tokenizer::load("o200k_base").unwrap();
        let c = Tokenizer::load("cl100k_base").unwrap();
        let s = "Natalia sold clips to 48 of her friends in April.";
        assert_eq!(o.encode(s).len(), o.count(s));
        assert_eq!(o.decode(&o.encode(s)), s);
        assert_eq!(c.decode(&c.encode(s)), s);
        assert_eq!(o.vocab_size(), 199_998);
        assert_eq!(c.vocab_size(), 100_256);
        assert_eq!(o.id(), "o200k_base");
        assert_eq!(Tokenizer::load("").unwrap().id(), "o200k_base");
        // "hello world" is two tokens in both encodings.
        assert_eq!(o.count("hello world"), 2);
        assert_eq!(c.count("hello world"), 2);
    }

    #[test]
    fn every_ordinary_id_decodes_without_panic() {
        for t in ["o200k_base", "cl100k_base"] {
            let tk = Tokenizer::load(t).unwrap();
            let ids: Vec<u32> = (0..tk.vocab_size()).collect();
            assert!(!tk.decode(&ids).is_empty());
            // Specials and unknown ids are handled, never panic.
            let _ = tk.decode(&[u32::MAX, tk.vocab_size(), tk.vocab_size() + 1]);
        }
    }

    /// A tiny word-level `tokenizer.json` (the HF path; no network, no fixture file).
    pub(crate) fn tiny_hf(dir: &std::path::Path) -> Tokenizer {
        let json = r#"{"version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
            "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null,
            "decoder": null,
            "model": {"type": "WordLevel", "unk_token": "[UNK]",
                      "vocab": {"[UNK]": 0, "hello": 1, "world": 2, "foo": 3, "bar": 4, "baz": 5}}}"#;
        let p = dir.join("tokenizer.json");
        std::fs::write(&p, json).unwrap();
        Tokenizer::load(p.to_str().unwrap()).unwrap()
    }

    #[test]
    fn hf_tokenizer_json() {
        let dir = tempfile::tempdir().unwrap();
        let t = tiny_hf(dir.path());
        assert_eq!(t.vocab_size(), 6);
        assert_eq!(t.encode("hello world foo"), vec![1, 2, 3]);
        assert_eq!(t.count("hello world foo bar"), 4);
        assert_eq!(t.decode(&[1, 2, 99]), "hello world");
        assert!(t.id().ends_with("tokenizer.json"));
        let spec = crate::RandomSpec {
            input_len: 40,
            range_ratio: 0.5,
            num_prompts: 20,
            ..Default::default()
        };
        let (ps, stats) = crate::random_prompts_with_stats(&spec, &t).unwrap();
        assert_eq!(stats.slow, 20);
        for p in &ps {
            assert_eq!(t.count(&p.text), p.prompt_tokens as usize);
        }
    }

    #[test]
    fn missing_file_names_it() {
        let e = Tokenizer::load("/nonexistent/tok.json").unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("/nonexistent/tok.json"), "{msg}");
    }

    #[test]
    fn invalid_file_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tokenizer.json");
        std::fs::write(&p, "{not json").unwrap();
        let msg = Tokenizer::load(p.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("tokenizer.json"), "{msg}");
        // a directory holding tokenizer.json resolves to the file
        let msg = Tokenizer::load(dir.path().to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(msg.contains("tokenizer.json"), "{msg}");
    }
}
