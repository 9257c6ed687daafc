//! Fast exact fitting of random-id prompts for the embedded tiktoken encodings.
//!
//! InferenceX's ids for prompt `i` are *consecutive* (`o_i + i + j mod vocab`), so every prompt's
//! decoded text is a window of one periodic text `C` = decode(0, 1, …, vocab−1, 0, 1, …). We
//! decode and pre-tokenize `C` once per process (regex pieces, tokens per piece, prefix sums) and
//! count a window `C[a..b]` without re-encoding its middle:
//!
//! * tiktoken splits text into regex pieces ([`crate::splitter`]) and byte-pair-encodes each piece alone; the match at a
//!   position depends only on the text from that position on (the patterns have no look-behind or
//!   anchors). So once the window's own piece sequence reaches a piece boundary of `C` ("sync"),
//!   it follows `C`'s pieces, until pieces whose matching could look past the window end.
//! * How far a match looks past its end is bounded for these patterns: runs of one character
//!   class plus at most a contraction suffix (`'ll`) and one following whitespace run, i.e. never
//!   past the end of the piece three boundaries later plus 16 bytes (`LOOKAHEAD`). We keep
//!   `MARGIN` ≥ that and `SLACK` pieces of slack.
//! * count(window) = tokens of the head pieces (before sync, re-encoded) + prefix-sum difference of
//!   `C`'s pieces in the middle + tokens of the tail (re-encoded with tiktoken itself).
//!
//! The end `b` is then moved by whole pieces, and finally by characters, until the count equals
//! the target exactly. Anything unusual (no sync, no exact end found, a window longer than the
//! precomputed text) returns `None`, and the caller uses the slow full re-encoding path. Tests
//! check every fast-path prompt against a full `encode`.

use crate::splitter::Splitter;
use crate::tokenizer::TiktokenState;
use rayon::prelude::*;
use rustc_hash::FxHashMap;

/// How many copies of the vocabulary `C` holds (windows of up to ~one vocabulary fit).
const REPS: u32 = 2;
/// Bytes kept between the last trusted piece and the end of a haystack (≥ `LOOKAHEAD` = 16).
const MARGIN: usize = 32;
/// Pieces of slack before the tail that is re-encoded.
const SLACK: usize = 3;
/// Windows up to this many bytes are re-encoded whole when the synced count cannot serve them
/// (the window ends before its head pieces are trusted); longer ones then take the slow path.
const DIRECT: usize = 2048;
/// Head haystack sizes tried for finding the sync point.
const HEADS: [usize; 4] = [96, 256, 2048, 16384];
/// Moves of `b` by whole pieces before searching character by character.
const PIECE_STEPS: usize = 16;
/// Character steps (each direction) of the final search.
const CHAR_STEPS: usize = 256;

/// The periodic decoded text of one tiktoken encoding, pre-tokenized.
pub(crate) struct Cyclic {
    /// `C`: ids `0..vocab` decoded `REPS` times as one byte sequence, invalid UTF-8 replaced.
    text: String,
    /// Byte position in `text` (a char boundary) where token index `t` starts, `t ≤ REPS·vocab`.
    tok_pos: Vec<u32>,
    /// Piece boundaries of `text` (0 first, `text.len()` last).
    bounds: Vec<u32>,
    /// Tokens of `text[..bounds[k]]`.
    cum: Vec<u32>,
    /// One clone per rayon worker (plus one for other threads): a shared regex contends on its
    /// internal cache pool.
    regexes: Vec<Splitter>,
    enc: FxHashMap<Vec<u8>, u32>,
    vocab: u32,
}

impl Cyclic {
    /// Builds `C` for `state` (≈ 2.6 MB of text for o200k_base).
    pub(crate) fn new(state: &TiktokenState) -> Option<Self> {
        let regex = Splitter::new(state.pattern)?;
        let v = state.vocab;
        let mut enc: FxHashMap<Vec<u8>, u32> = FxHashMap::default();
        enc.reserve(v as usize);
        for id in 0..v {
            enc.insert(state.token_bytes(id).to_vec(), id);
        }
        let mut bytes = Vec::with_capacity(state.bytes.len() * REPS as usize);
        let mut tok_byte = Vec::with_capacity((REPS * v) as usize + 1);
        for _ in 0..REPS {
            for id in 0..v {
                tok_byte.push(bytes.len());
                bytes.extend_from_slice(state.token_bytes(id));
            }
        }
        tok_byte.push(bytes.len());

        // Lossy UTF-8 conversion of the whole sequence, mapping each token start to the first
        // char boundary at or after it in `text`.
        let mut text = String::with_capacity(bytes.len() + bytes.len() / 8);
        let mut tok_pos = Vec::with_capacity(tok_byte.len());
        let mut ti = 0;
        let mut b = 0usize;
        for chunk in bytes.utf8_chunks() {
            let valid = chunk.valid();
            let c0 = text.len();
            text.push_str(valid);
            let vend = b + valid.len();
            while ti < tok_byte.len() && tok_byte[ti] < vend {
                let mut c = c0 + (tok_byte[ti] - b);
                while !text.is_char_boundary(c) {
                    c += 1;
                }
                tok_pos.push(c as u32);
                ti += 1;
            }
            b = vend;
            let inv = chunk.invalid();
            if !inv.is_empty() {
                let iend = b + inv.len();
                let c_inv = text.len();
                text.push('\u{FFFD}');
                while ti < tok_byte.len() && tok_byte[ti] < iend {
                    let c = if tok_byte[ti] == b { c_inv } else { text.len() };
                    tok_pos.push(c as u32);
                    ti += 1;
                }
                b = iend;
            }
        }
        while ti < tok_byte.len() {
            tok_pos.push(text.len() as u32);
            ti += 1;
        }
        if text.len() > u32::MAX as usize {
            return None;
        }

        // Pieces (regex run in two halves joined at a common boundary), then their byte-pair
        // counts in parallel.
        let (spans, _) = split_pieces(&regex, &text)?;
        let counts: Vec<u32> = spans
            .par_iter()
            .map(|&(x, y)| bpe_len(&enc, &text.as_bytes()[x as usize..y as usize]) as u32)
            .collect();
        let mut bounds = Vec::with_capacity(spans.len() + 2);
        let mut cum = Vec::with_capacity(spans.len() + 2);
        bounds.push(0u32);
        cum.push(0u32);
        let mut total = 0u32;
        for (&(_, y), c) in spans.iter().zip(counts) {
            total += c;
            bounds.push(y);
            cum.push(total);
        }
        if *bounds.last()? as usize != text.len() {
            bounds.push(text.len() as u32);
            cum.push(total);
        }
        let regexes = (0..=rayon::current_num_threads())
            .map(|_| regex.clone())
            .collect();
        Some(Cyclic {
            text,
            tok_pos,
            bounds,
            cum,
            regexes,
            enc,
            vocab: v,
        })
    }

    /// This thread's regex.
    fn regex(&self) -> &Splitter {
        let i = rayon::current_thread_index().map_or(0, |i| i + 1);
        &self.regexes[i.min(self.regexes.len() - 1)]
    }

    /// Tokens of `s` exactly as tiktoken's `encode_ordinary` counts them.
    fn count_full(&self, s: &str) -> Option<usize> {
        let mut n = 0;
        for m in self.regex().pieces(s) {
            let (x, y) = m?;
            n += bpe_len(&self.enc, &s.as_bytes()[x..y]);
        }
        Some(n)
    }

    /// Tokens of `C[bounds[k]..b]` (tiktoken's count), reusing the precomputed count of every
    /// piece that is also a piece of `C`.
    fn count_from_bound(&self, k: usize, b: usize) -> Option<usize> {
        let r = self.bounds[k] as usize;
        let mut n = 0;
        let mut i = k;
        for m in self.regex().pieces(&self.text[r..b]) {
            let (x, y) = m?;
            let (x, y) = (r + x, r + y);
            if i + 1 < self.bounds.len()
                && self.bounds[i] as usize == x
                && self.bounds[i + 1] as usize == y
            {
                n += (self.cum[i + 1] - self.cum[i]) as usize;
                i += 1;
            } else {
                n += bpe_len(&self.enc, &self.text.as_bytes()[x..y]);
                i = self.bounds.partition_point(|&p| (p as usize) < y);
            }
        }
        Some(n)
    }

    /// Index of the largest boundary ≤ `pos`.
    fn bound_at_or_before(&self, pos: usize) -> usize {
        self.bounds.partition_point(|&x| x as usize <= pos) - 1
    }

    /// Splits a shared prefix text into a frozen part (its pieces cannot change whatever follows)
    /// and a lead that is re-tokenized together with each window.
    pub(crate) fn prefix(&self, text: String) -> Option<Prefix> {
        let mut ends = Vec::new();
        let mut counts = Vec::new();
        for m in self.regex().pieces(&text) {
            let (x, y) = m?;
            ends.push(y);
            counts.push(bpe_len(&self.enc, &text.as_bytes()[x..y]));
        }
        // piece j is trusted when ends[j + 2] + MARGIN ≤ len
        let mut frozen = 0;
        let mut frozen_tokens = 0;
        for j in 0..ends.len() {
            match ends.get(j + 2) {
                Some(&e) if e + MARGIN <= text.len() => {
                    frozen = ends[j];
                    frozen_tokens += counts[j];
                }
                _ => break,
            }
        }
        Some(Prefix {
            text,
            frozen,
            frozen_tokens,
        })
    }

    /// Sync point of the window starting at `a`: `(bound index k, tokens of lead +
    /// C[a..bounds[k]], smallest window end b for which those head pieces are trusted)`.
    fn head(&self, lead: &str, a: usize) -> Option<Head> {
        for &h in &HEADS {
            let mut end = (a + h).min(self.text.len());
            while !self.text.is_char_boundary(end) {
                end -= 1;
            }
            let mut hay = String::with_capacity(lead.len() + end - a);
            hay.push_str(lead);
            hay.push_str(&self.text[a..end]);
            // Walk the pieces lazily; piece j is trusted once piece j + 2 ends MARGIN before the
            // haystack end. Only pieces before the sync point are byte-pair encoded.
            let mut spans: Vec<(usize, usize)> = Vec::new();
            let mut tokens = 0;
            let mut j = 0;
            for m in self.regex().pieces(&hay) {
                let (x, y) = m?;
                spans.push((x, y));
                if y + MARGIN > hay.len() {
                    break;
                }
                while j + 2 < spans.len() {
                    let (x, e) = spans[j];
                    tokens += bpe_len(&self.enc, &hay.as_bytes()[x..e]);
                    if e > lead.len() {
                        let ce = a + e - lead.len();
                        if let Ok(k) = self.bounds.binary_search(&(ce as u32)) {
                            return Some(Head {
                                k,
                                tokens,
                                min_b: a + spans[j + 2].1 - lead.len() + MARGIN,
                            });
                        }
                    }
                    j += 1;
                }
            }
            if end == self.text.len() {
                break;
            }
        }
        None
    }

    /// Exact token count of `lead + C[a..b]` given the head sync `(k, head_tokens)`.
    fn count_window(&self, lead: &str, a: usize, b: usize, head: &mut HeadCache) -> Option<usize> {
        // A window too short for the synced count (its head pieces are not yet trusted at `b`)
        // is re-encoded whole; a long one then has no fast count.
        let whole = || {
            if b > a + DIRECT {
                return None;
            }
            let mut s = String::with_capacity(lead.len() + b - a);
            s.push_str(lead);
            s.push_str(&self.text[a..b]);
            self.count_full(&s)
        };
        if let HeadCache::Unknown = head {
            *head = match self.head(lead, a) {
                Some(x) => HeadCache::Sync(x),
                None => HeadCache::NoSync,
            };
        }
        let HeadCache::Sync(Head {
            k,
            tokens: head_tokens,
            min_b,
        }) = *head
        else {
            return whole();
        };
        let ce = self.bounds[k] as usize;
        if b < min_b || b <= ce + MARGIN {
            return whole();
        }
        let kb = self.bound_at_or_before(b - MARGIN);
        let kr = kb.saturating_sub(SLACK);
        if kr <= k {
            return Some(head_tokens + self.count_from_bound(k, b)?);
        }
        let middle = (self.cum[kr] - self.cum[k]) as usize;
        Some(head_tokens + middle + self.count_from_bound(kr, b)?)
    }

    /// Text of `prefix` + the window of `len` consecutive ids from `start`, with its end moved so
    /// the whole has exactly `target` tokens. `None` when the fast path cannot decide.
    pub(crate) fn fit(
        &self,
        prefix: &Prefix,
        start: u32,
        len: u32,
        target: usize,
    ) -> Option<String> {
        if target < prefix.frozen_tokens {
            return None;
        }
        let want = target - prefix.frozen_tokens;
        let lead = &prefix.text[prefix.frozen..];
        let s = start as usize;
        let end_tok = s + len as usize;
        // leave room to grow the window by 25 % + 64 tokens
        if start >= self.vocab || end_tok + end_tok / 4 + 64 >= self.tok_pos.len() {
            return None;
        }
        let a = self.tok_pos[s] as usize;
        let mut b = (self.tok_pos[end_tok] as usize).max(a);
        let mut head = HeadCache::Unknown;
        let mut f = self.count_window(lead, a, b, &mut head)?;
        // Move b by whole pieces of C.
        for _ in 0..PIECE_STEPS {
            if f == want {
                break;
            }
            // The boundary whose prefix-sum distance from b's boundary is the missing tokens.
            let kb = self.bound_at_or_before(b);
            let goal = i64::from(self.cum[kb]) + want as i64 - f as i64;
            let nk = if goal <= 0 {
                0
            } else {
                self.cum
                    .partition_point(|&c| i64::from(c) < goal)
                    .min(self.bounds.len() - 1)
            };
            let nb = (self.bounds[nk] as usize).max(a);
            if nb == b {
                break;
            }
            b = nb;
            f = self.count_window(lead, a, b, &mut head)?;
        }
        // Then by characters: the nearest end, forwards or backwards, where the count is exact
        // (removing one character can change the count by 2, so a one-directional walk can
        // jump over the target).
        if f != want {
            let mut fwd = b;
            let mut back = b;
            let mut found = None;
            for _ in 0..CHAR_STEPS {
                if let Some(c) = self.text[fwd..].chars().next() {
                    fwd += c.len_utf8();
                    if self.count_window(lead, a, fwd, &mut head)? == want {
                        found = Some(fwd);
                        break;
                    }
                }
                if let Some(c) = self.text[a..back].chars().next_back() {
                    back -= c.len_utf8();
                    if back > a && self.count_window(lead, a, back, &mut head)? == want {
                        found = Some(back);
                        break;
                    }
                }
            }
            b = found?;
        }
        let mut out = String::with_capacity(prefix.text.len() + b - a);
        out.push_str(&prefix.text);
        out.push_str(&self.text[a..b]);
        Some(out)
    }
}

/// A shared random prefix, split for windowed counting.
pub(crate) struct Prefix {
    /// The decoded prefix text.
    pub(crate) text: String,
    /// `text[..frozen]` tokenizes the same whatever follows.
    frozen: usize,
    /// Tokens of `text[..frozen]`.
    frozen_tokens: usize,
}

/// Where a window's own piece sequence joins `C`'s.
#[derive(Clone, Copy)]
struct Head {
    /// Index into `bounds` of the sync position.
    k: usize,
    /// Tokens of the lead and the window before the sync position.
    tokens: usize,
    /// The head pieces are trusted only for window ends ≥ this byte position.
    min_b: usize,
}

enum HeadCache {
    Unknown,
    Sync(Head),
    NoSync,
}

/// Regex pieces `(start, end)` of `text`, computed as two halves in parallel: the first half
/// runs over `text[..mid + OVERLAP]`, the second over `text[mid..]`; from the first piece end of the
/// second run that is also a trusted piece end of the first, both runs are identical (a match
/// depends only on the text after its start), so the result equals one sequential run. The flag
/// says whether the halves joined (else one sequential run was made).
fn split_pieces(regex: &Splitter, text: &str) -> Option<(Vec<(u32, u32)>, bool)> {
    const OVERLAP: usize = 1 << 16;
    let run = |from: usize, to: usize| -> Option<Vec<(u32, u32)>> {
        let mut v = Vec::new();
        for m in regex.pieces(&text[from..to]) {
            let (x, y) = m?;
            v.push(((from + x) as u32, (from + y) as u32));
        }
        Some(v)
    };
    let mut mid = text.len() / 2;
    while !text.is_char_boundary(mid) {
        mid += 1;
    }
    let mut a_end = (mid + OVERLAP).min(text.len());
    while !text.is_char_boundary(a_end) {
        a_end += 1;
    }
    if a_end >= text.len() {
        return Some((run(0, text.len())?, false));
    }
    let (a, b) = rayon::join(|| run(0, a_end), || run(mid, text.len()));
    let (a, b) = (a?, b?);
    // piece j of the first run is trusted while piece j + 2 ends MARGIN before its haystack end
    let trusted = a
        .iter()
        .enumerate()
        .take_while(|(j, _)| a.get(j + 2).is_some_and(|p| p.1 as usize + MARGIN <= a_end))
        .count();
    for (i, &(_, e)) in b.iter().enumerate() {
        if let Ok(j) = a[..trusted].binary_search_by_key(&e, |p| p.1) {
            let mut out = a[..=j].to_vec();
            out.extend_from_slice(&b[i + 1..]);
            return Some((out, true));
        }
    }
    Some((run(0, text.len())?, false))
}

/// Tokens of one regex piece under tiktoken's byte-pair encoding.
fn bpe_len(enc: &FxHashMap<Vec<u8>, u32>, piece: &[u8]) -> usize {
    if piece.len() <= 1 || enc.contains_key(piece) {
        piece.len().min(1)
    } else {
        tiktoken_rs::byte_pair_split(piece, enc).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The two-halves pre-tokenization equals one sequential regex run.
    #[test]
    fn split_pieces_equals_sequential_run() {
        let tok = crate::Tokenizer::load("cl100k_base").unwrap();
        let crate::tokenizer::Kind::Tiktoken(t) = tok.kind() else {
            unreachable!()
        };
        let regex = Splitter::new(t.pattern).unwrap();
        let ids: Vec<u32> = (0..40_000).collect();
        let text = tok.decode(&ids);
        let seq: Vec<(u32, u32)> = regex
            .pieces(&text)
            .map(|m| {
                let (x, y) = m.unwrap();
                (x as u32, y as u32)
            })
            .collect();
        assert_eq!(split_pieces(&regex, &text).unwrap(), (seq, true));
    }
}
