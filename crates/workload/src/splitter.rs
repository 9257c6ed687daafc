//! tiktoken's pre-tokenizer (the regex that cuts a text into pieces before byte-pair encoding),
//! fast: every embedded encoding's pattern ends in `…|\s+(?!\S)|\s+`, whose one look-ahead forces
//! `fancy-regex`'s backtracking VM over the whole pattern (half of prompt preparation's time on
//! random-token text, issue 14). Without that alternative the pattern is a plain regular
//! expression that the `regex` crate runs as a DFA with the same leftmost-first semantics; the
//! look-ahead's effect is then put back by hand:
//!
//! * a piece that only the final `\s+` can have produced (all whitespace, and, in patterns with a
//!   `\s*[\r\n]+` alternative, not ending in a line break: that alternative wins wherever the run
//!   holds one) is a maximal whitespace run;
//! * `\s+(?!\S)` would have matched that run less its last character when it is at least two
//!   characters long and text follows (a run at the haystack's end matches whole, a single
//!   character falls through to `\s+` itself). So such a piece gives back its last character, and
//!   the next search starts there.
//!
//! Any other pattern runs on `fancy-regex` unchanged. Tests compare both engines piece for piece
//! over every embedded encoding's whole vocabulary text and over whitespace-heavy strings.

/// The pre-tokenizer of one pattern.
#[derive(Debug, Clone)]
pub(crate) enum Splitter {
    /// The pattern less `\s+(?!\S)|`, on the `regex` crate; `newline_alt`: it has a
    /// `\s*[\r\n]+` alternative.
    Dfa {
        re: regex_automata::meta::Regex,
        newline_alt: bool,
    },
    /// Any other pattern, as written.
    Fancy(fancy_regex::Regex),
}

/// The look-ahead alternative that the DFA form drops, and what must follow it.
const LOOKAHEAD_ALT: &str = r"\s+(?!\S)|";
const TAIL: &str = r"\s+(?!\S)|\s+";

impl Splitter {
    /// The fast form for a pattern ending in `\s+(?!\S)|\s+` with no other look-around, else
    /// `fancy-regex`; `None` when the pattern does not compile.
    pub(crate) fn new(pattern: &str) -> Option<Self> {
        if let Some(head) = pattern.strip_suffix(TAIL) {
            if !head.contains("(?=") && !head.contains("(?!") && !head.contains("(?<") {
                let plain = format!("{head}{}", &TAIL[LOOKAHEAD_ALT.len()..]);
                // A lazy DFA over these Unicode classes outgrows the default 2 MiB cache and
                // then falls back to a slow engine: give it room.
                if let Ok(re) = regex_automata::meta::Regex::builder()
                    .configure(regex_automata::meta::Config::new().hybrid_cache_capacity(64 << 20))
                    .build(&plain)
                {
                    return Some(Splitter::Dfa {
                        re,
                        newline_alt: head.contains(r"\s*[\r\n]+"),
                    });
                }
            }
        }
        fancy_regex::Regex::new(pattern).ok().map(Splitter::Fancy)
    }

    /// The same pattern on `fancy-regex` alone (tests: the reference).
    #[cfg(test)]
    pub(crate) fn fancy(pattern: &str) -> Option<Self> {
        fancy_regex::Regex::new(pattern).ok().map(Splitter::Fancy)
    }

    /// Pieces of `hay` as byte spans `(start, end)`, in order; an item is `None` where
    /// `fancy-regex` gave up (its backtrack limit).
    pub(crate) fn pieces<'r, 'h>(&'r self, hay: &'h str) -> Pieces<'r, 'h> {
        match self {
            Splitter::Dfa { re, newline_alt } => Pieces::Dfa {
                re,
                newline_alt: *newline_alt,
                hay,
                pos: 0,
            },
            Splitter::Fancy(re) => Pieces::Fancy(re.find_iter(hay)),
        }
    }
}

/// Iterator of [`Splitter::pieces`].
pub(crate) enum Pieces<'r, 'h> {
    Dfa {
        re: &'r regex_automata::meta::Regex,
        newline_alt: bool,
        hay: &'h str,
        pos: usize,
    },
    Fancy(fancy_regex::Matches<'r, 'h>),
}

impl Iterator for Pieces<'_, '_> {
    type Item = Option<(usize, usize)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Pieces::Fancy(m) => m.next().map(|r| r.ok().map(|m| (m.start(), m.end()))),
            Pieces::Dfa {
                re,
                newline_alt,
                hay,
                pos,
            } => {
                if *pos >= hay.len() {
                    return None;
                }
                // These patterns cover every character, so the next piece starts where the last
                // ended: an anchored search (forward DFA only). Should one not, the unanchored
                // search finds it.
                let input = regex_automata::Input::new(*hay).range(*pos..);
                let m = re
                    .search(&input.clone().anchored(regex_automata::Anchored::Yes))
                    .or_else(|| re.search(&input))?;
                let (start, mut end) = (m.start(), m.end());
                let piece = &hay[start..end];
                if end < hay.len()
                    && !(*newline_alt && piece.ends_with(['\r', '\n']))
                    && piece.chars().all(char::is_whitespace)
                {
                    let mut cs = piece.chars();
                    if let (Some(last), Some(_)) = (cs.next_back(), cs.next()) {
                        end -= last.len_utf8();
                    }
                }
                // Every alternative consumes at least one character; never loop in place.
                *pos = if end > start {
                    end
                } else {
                    end + hay[end..].chars().next().map_or(1, char::len_utf8)
                };
                Some(Some((start, end)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::Kind;

    fn spans(s: &Splitter, hay: &str) -> Vec<(usize, usize)> {
        s.pieces(hay).map(|p| p.unwrap()).collect()
    }

    /// Whitespace runs of every shape, before text, line breaks and the end; contractions,
    /// digits, punctuation, non-ASCII letters and Unicode spaces.
    const TRICKY: &[&str] = &[
        "a  b",
        "a \tb",
        "a   ",
        "   ",
        " ",
        "x \n  y",
        "x\n\n  \n y",
        "a \r\n\tb",
        "  \u{3000}漢字 and 12345 'll I'M",
        "\u{a0}\u{a0}x\u{2003}\u{2003}\u{2003}y",
        "end with newline\n",
        "tab\t\tthen text\t",
        "...   !!!\n\n\n???",
        "don't  you've\tthey'RE",
    ];

    /// GPT-2's pattern (p50k_base, r50k_base: no `\s*[\r\n]+` alternative), not embedded here.
    const P50K_PAT: &str =
        r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+";

    #[test]
    fn the_dfa_form_cuts_as_the_look_ahead_pattern_does() {
        let o200k = crate::Tokenizer::load("o200k_base").unwrap();
        let ids: Vec<u32> = (0..o200k.vocab_size()).collect();
        let o200k_text = o200k.decode(&ids);
        for name in ["o200k_base", "cl100k_base", "p50k"] {
            let (pattern, text) = if name == "p50k" {
                (P50K_PAT, o200k_text.clone())
            } else {
                let tok = crate::Tokenizer::load(name).unwrap();
                let Kind::Tiktoken(t) = tok.kind() else {
                    unreachable!()
                };
                // The whole vocabulary decoded in order: what random-token prompts are cut from.
                let ids: Vec<u32> = (0..tok.vocab_size()).collect();
                (t.pattern, tok.decode(&ids))
            };
            let fast = Splitter::new(pattern).unwrap();
            assert!(matches!(fast, Splitter::Dfa { .. }), "{name}: no DFA form");
            let slow = Splitter::fancy(pattern).unwrap();
            for hay in TRICKY {
                assert_eq!(spans(&fast, hay), spans(&slow, hay), "{name}: {hay:?}");
            }
            assert_eq!(
                spans(&fast, &text),
                spans(&slow, &text),
                "{name}: vocabulary text"
            );
        }
    }

    #[test]
    fn other_patterns_stay_on_fancy_regex() {
        assert!(matches!(
            Splitter::new(r"(?=a)\w+|\s+(?!\S)|\s+"),
            Some(Splitter::Fancy(_))
        ));
        assert!(matches!(
            Splitter::new(r"\w+|\s+"),
            Some(Splitter::Fancy(_))
        ));
        assert!(Splitter::new(r"(").is_none());
    }
}
