//! Prompt tokenization and prefix-cache block hashing.
//!
//! [`TokenizerKind`] chooses how prompts become token ids: exactly with an embedded BPE
//! encoding (`o200k_base`, the default, equal to the load generator's default tokenizer, so a
//! random prompt of 1,024 tokens is 1,024 tokens here too; or `cl100k_base`), or with the cheap
//! approximation below (`approx`), which needs no tables and is several times faster.
//!
//! ## The `approx` rule
//!
//! Real engines tokenize with the model's tokenizer; the simulator only needs token *counts* that
//! grow with the text and token *ids* that are equal for equal text prefixes (so shared prefixes
//! hit the prefix cache). The rule, applied left to right over the UTF-8 bytes:
//!
//! - an ASCII letter/digit run, optionally led by one space, is cut into pieces of at most
//!   4 letters/digits (the leading space belongs to the first piece): `" hello"` → `" hell"`, `"o"`;
//! - every other ASCII byte (punctuation, newline, a space not followed by a letter) is one piece;
//! - every non-ASCII character (all its UTF-8 bytes) is one piece.
//!
//! A piece's id is the FNV-1a 32-bit hash of its bytes. English text comes out at roughly one
//! token per 3.5–4 characters, close to BPE tokenizers (o200k_base gives ≈ 4). Counts therefore
//! differ from the client's tokenizer by a few percent; the `usage` the simulator reports uses
//! this count.
//!
//! The simulator's generated words (see [`OUTPUT_WORDS`]) are each exactly one piece, so a
//! conversation history re-sent by a client tokenizes to the ids the simulator generated.

/// FNV-1a, 32-bit (offset basis 0x811c9dc5, prime 0x01000193; public-domain algorithm).
fn fnv1a32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// How the server turns prompt text into token ids (module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TokenizerKind {
    /// The character-class approximation (module doc): fast, table-free.
    Approx,
    /// tiktoken `o200k_base` (embedded via tiktoken-rs). The default.
    #[default]
    O200kBase,
    /// tiktoken `cl100k_base` (embedded via tiktoken-rs).
    Cl100kBase,
}

impl TokenizerKind {
    /// Parses `approx`, `o200k_base` or `cl100k_base`.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "approx" => Ok(TokenizerKind::Approx),
            "o200k_base" | "o200k" => Ok(TokenizerKind::O200kBase),
            "cl100k_base" | "cl100k" => Ok(TokenizerKind::Cl100kBase),
            _ => Err(format!(
                "unknown tokenizer {s:?} (known: o200k_base, cl100k_base, approx)"
            )),
        }
    }

    /// Canonical name.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenizerKind::Approx => "approx",
            TokenizerKind::O200kBase => "o200k_base",
            TokenizerKind::Cl100kBase => "cl100k_base",
        }
    }

    /// Appends the token ids of `text` to `out`.
    pub fn encode_into(self, text: &str, out: &mut Vec<u32>) {
        match self {
            TokenizerKind::Approx => tokenize_into(text, out),
            TokenizerKind::O200kBase => {
                out.extend(tiktoken_rs::o200k_base_singleton().encode_ordinary(text))
            }
            TokenizerKind::Cl100kBase => {
                out.extend(tiktoken_rs::cl100k_base_singleton().encode_ordinary(text))
            }
        }
    }

    /// Token id of each of [`OUTPUT_WORDS`] under this tokenizer (each word is one token in
    /// all three; checked by a test), so generated blocks hash like a re-sent history.
    pub fn output_ids(self) -> &'static [u32; 64] {
        use std::sync::OnceLock;
        static TABLES: [OnceLock<[u32; 64]>; 3] =
            [OnceLock::new(), OnceLock::new(), OnceLock::new()];
        let slot = match self {
            TokenizerKind::Approx => 0,
            TokenizerKind::O200kBase => 1,
            TokenizerKind::Cl100kBase => 2,
        };
        TABLES[slot].get_or_init(|| {
            let mut t = [0u32; 64];
            for (i, w) in OUTPUT_WORDS.iter().enumerate() {
                let mut ids = Vec::new();
                self.encode_into(w, &mut ids);
                t[i] = ids.first().copied().unwrap_or(0);
            }
            t
        })
    }
}

/// Splits `text` into pieces per the `approx` rule and appends each piece's id to `out`.
pub fn tokenize_into(text: &str, out: &mut Vec<u32>) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let c = b[i];
        if c.is_ascii_alphanumeric()
            || (c == b' ' && i + 1 < b.len() && b[i + 1].is_ascii_alphanumeric())
        {
            if c == b' ' {
                i += 1;
            }
            let word_start = i;
            while i < b.len() && i - word_start < 4 && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
        } else if c < 0x80 {
            i += 1;
        } else {
            // Skip the whole UTF-8 character: leading byte then continuation bytes 10xxxxxx.
            i += 1;
            while i < b.len() && (b[i] & 0xC0) == 0x80 {
                i += 1;
            }
        }
        out.push(fnv1a32(&b[start..i]));
    }
}

/// Token ids of `text` (see the module rule).
pub fn tokenize(text: &str) -> Vec<u32> {
    let mut v = Vec::with_capacity(text.len() / 3 + 1);
    tokenize_into(text, &mut v);
    v
}

/// Number of tokens of `text` (see the module rule); equals `tokenize(text).len()`.
pub fn count(text: &str) -> usize {
    let mut v = Vec::new();
    tokenize_into(text, &mut v);
    v.len()
}

/// The words the simulator generates, cycled in order from the first: output token `i` of every
/// response is `OUTPUT_WORDS[i % OUTPUT_WORDS.len()]`. Each is one token under the module rule
/// (a space and at most 4 lowercase letters) and needs no JSON escaping.
pub const OUTPUT_WORDS: [&str; 64] = [
    " the", " of", " and", " to", " in", " is", " it", " that", " for", " on", " was", " with",
    " as", " at", " by", " be", " this", " from", " or", " but", " not", " are", " his", " they",
    " we", " an", " you", " all", " can", " had", " her", " one", " our", " out", " day", " get",
    " has", " him", " how", " man", " new", " now", " old", " see", " two", " way", " who", " boy",
    " did", " its", " let", " put", " say", " she", " too", " use", " time", " will", " more",
    " when", " what", " some", " like", " into",
];

/// Appends the text of output tokens `start .. start + n` to `out`.
pub fn push_output_text(out: &mut Vec<u8>, start: u32, n: u32) {
    for i in start..start + n {
        out.extend_from_slice(OUTPUT_WORDS[i as usize % OUTPUT_WORDS.len()].as_bytes());
    }
}

/// Token id of output token `i` under the `approx` rule (the id [`tokenize`] gives its word).
pub fn output_token_id(i: u32) -> u32 {
    fnv1a32(OUTPUT_WORDS[i as usize % OUTPUT_WORDS.len()].as_bytes())
}

/// SplitMix64 finaliser: a fast bijective 64-bit mixer (Steele, Lea, Flood 2014).
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Chained hash of one full KV block: depends on the previous block's hash (0 for the first) and
/// on every token id in the block, so equal hashes mean equal prefixes (as vLLM's block hashes).
/// Never returns 0.
pub fn block_hash(prev: u64, tokens: &[u32]) -> u64 {
    let mut h = mix64(prev ^ 0x5157_4b56_424c_4b31);
    for &t in tokens {
        h = mix64(h ^ u64::from(t));
    }
    h.max(1)
}

/// Hashes of every *full* block of `tokens` (`tokens.len() / block_size` hashes), chained.
pub fn block_hashes(tokens: &[u32], block_size: usize) -> Vec<u64> {
    let mut out = Vec::with_capacity(tokens.len() / block_size.max(1));
    let mut prev = 0u64;
    for chunk in tokens.chunks_exact(block_size.max(1)) {
        prev = block_hash(prev, chunk);
        out.push(prev);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_follow_the_rule() {
        // " hello world!" → " hell" "o" " worl" "d" "!"
        assert_eq!(count(" hello world!"), 5);
        assert_eq!(count("a, b"), 3); // "a" "," " b"
        assert_eq!(count("héllo"), 3); // "h" "é" "llo"
        assert_eq!(count(""), 0);
        assert_eq!(count("\n\n  x"), 4); // "\n" "\n" " " " x"
    }

    #[test]
    fn output_words_are_single_tokens_and_round_trip() {
        let mut text = Vec::new();
        push_output_text(&mut text, 0, 200);
        let ids = tokenize(std::str::from_utf8(&text).unwrap());
        assert_eq!(ids.len(), 200);
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(*id, output_token_id(i as u32));
        }
    }

    #[test]
    fn output_words_are_single_tokens_in_every_tokenizer() {
        for k in [
            TokenizerKind::Approx,
            TokenizerKind::O200kBase,
            TokenizerKind::Cl100kBase,
        ] {
            let mut text = Vec::new();
            push_output_text(&mut text, 0, 64);
            let mut ids = Vec::new();
            k.encode_into(std::str::from_utf8(&text).unwrap(), &mut ids);
            assert_eq!(&ids[..], &k.output_ids()[..], "{}", k.as_str());
        }
        assert_eq!(TokenizerKind::Approx.output_ids()[3], output_token_id(3));
    }

    #[test]
    fn shared_prefix_gives_shared_block_hashes() {
        let a = tokenize(&"common prefix text ".repeat(20));
        let mut b = a.clone();
        b.extend(tokenize(" and then something else entirely"));
        let ha = block_hashes(&a, 16);
        let hb = block_hashes(&b, 16);
        assert_eq!(ha.len(), a.len() / 16);
        assert_eq!(&hb[..ha.len()], &ha[..]);
        let mut c = a.clone();
        c[0] ^= 1;
        assert_ne!(block_hashes(&c, 16)[0], ha[0]);
    }
}
