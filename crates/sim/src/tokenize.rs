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

    /// Appends the token ids of `text` to `out`. Never panics, and costs O(`text.len()`):
    /// BPE text is encoded in segments of at most [`MAX_BPE_SEGMENT_BYTES`] (see
    /// [`bpe_segments`]), exact for text with a space at least every ~1 KiB, so a pathological
    /// prompt (a megabyte without spaces) cannot overflow the pre-tokenizer regex's stack or
    /// make byte-pair merging quadratic in the prompt length. Should the encoder still panic on
    /// a segment, that segment is counted with the `approx` rule instead.
    pub fn encode_into(self, text: &str, out: &mut Vec<u32>) {
        let bpe = match self {
            TokenizerKind::Approx => return tokenize_into(text, out),
            TokenizerKind::O200kBase => tiktoken_rs::o200k_base_singleton(),
            TokenizerKind::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
        };
        for seg in bpe_segments(text) {
            let r =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| bpe.encode_ordinary(seg)));
            match r {
                Ok(ids) => out.extend(ids),
                Err(_) => tokenize_into(seg, out),
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

/// Longest segment handed to the BPE encoder at once, bytes. Byte-pair merging of one
/// pre-tokenized piece is quadratic in its length (measured with tiktoken-rs 0.9: 100,000 bytes
/// without a space took 6.7 s, 1,000,000 overflowed the regex stack); 1 KiB keeps a segment
/// under a millisecond.
pub const MAX_BPE_SEGMENT_BYTES: usize = 1024;

/// Splits `text` into consecutive segments of at most [`MAX_BPE_SEGMENT_BYTES`] bytes whose
/// concatenation is `text`. A segment preferably ends just before a single ASCII space that
/// has ASCII non-whitespace on both sides: no o200k/cl100k pre-tokenizer piece spans such a
/// space (it can only start the next piece, as in `" word"`), so encoding the segments one by
/// one gives exactly the ids of encoding the whole text. Only where a segment-long stretch has
/// no such space is it cut at the last character boundary instead (the count may then differ
/// by a token per cut).
pub fn bpe_segments(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.len() <= MAX_BPE_SEGMENT_BYTES {
            return Some(std::mem::take(&mut rest));
        }
        let b = rest.as_bytes();
        let solid = |c: u8| c < 0x80 && !c.is_ascii_whitespace();
        let cut = (1..=MAX_BPE_SEGMENT_BYTES)
            .rev()
            .find(|&p| b[p] == b' ' && solid(b[p - 1]) && p + 1 < b.len() && solid(b[p + 1]))
            .unwrap_or_else(|| {
                (1..=MAX_BPE_SEGMENT_BYTES)
                    .rev()
                    .find(|&p| rest.is_char_boundary(p))
                    .unwrap_or(rest.len())
            });
        let (seg, tail) = rest.split_at(cut);
        rest = tail;
        Some(seg)
    })
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
    fn segmented_bpe_is_exact_for_text_with_spaces() {
        // ~25 KiB of mixed words, numbers, punctuation, newlines and double spaces.
        let mut text = String::new();
        for i in 0..4000u32 {
            text.push_str(OUTPUT_WORDS[(i * 7 % 64) as usize]);
            match i % 9 {
                0 => text.push_str(", 12345"),
                3 => text.push_str(".\n\n"),
                5 => text.push_str("  x"),
                7 => text.push_str(" don't"),
                _ => {}
            }
        }
        assert!(bpe_segments(&text).count() > 15);
        assert_eq!(bpe_segments(&text).collect::<String>(), text);
        for k in [TokenizerKind::O200kBase, TokenizerKind::Cl100kBase] {
            let whole = match k {
                TokenizerKind::O200kBase => tiktoken_rs::o200k_base_singleton(),
                _ => tiktoken_rs::cl100k_base_singleton(),
            }
            .encode_ordinary(&text);
            let mut seg = Vec::new();
            k.encode_into(&text, &mut seg);
            assert_eq!(seg, whole, "{}", k.as_str());
        }
    }

    #[test]
    fn a_megabyte_without_spaces_tokenizes_without_panic() {
        // Issue: tiktoken-rs overflowed its regex stack on ~1M 'a' (a panic in the server).
        let text = "a".repeat(1 << 20);
        let segs: Vec<&str> = bpe_segments(&text).collect();
        assert_eq!(segs.len(), 1024);
        assert!(segs.iter().all(|s| s.len() == MAX_BPE_SEGMENT_BYTES));
        let mut ids = Vec::new();
        TokenizerKind::O200kBase.encode_into(&text, &mut ids);
        assert!(ids.len() > 1000 && ids.len() < text.len(), "{}", ids.len());
        // Multi-byte characters are never split.
        let text = "é".repeat(3000);
        assert!(bpe_segments(&text).all(|s| s.len() <= MAX_BPE_SEGMENT_BYTES));
        assert_eq!(bpe_segments(&text).collect::<String>(), text);
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
