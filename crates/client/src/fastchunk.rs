//! A fast reader for the usual shape of a streamed chunk, in front of `serde_json` (issue 14:
//! the derived, lenient deserializer was ~40 % of a saturated client core).
//!
//! [`parse`] reads one `data:` payload in one pass over its bytes and extracts only what the
//! interpreter uses (`choices[].text`, `choices[].delta|message.{content, refusal,
//! reasoning_content, reasoning, tool_calls}`, `choices[].finish_reason`, `usage`'s counts, `object`); every
//! other value is skipped, with JSON's grammar checked as it goes. It returns `None` — and the
//! caller takes the `serde_json` path, which decides — for anything outside that usual shape:
//! invalid UTF-8 anywhere, an escape inside a string it extracts, `\u` escapes, an `error`,
//! `message` or `timings` key, a field of an unexpected type, a repeated field, a non-integer
//! count, nesting deeper than 64, trailing bytes. So it never accepts what the strict parser
//! would refuse, and what it accepts reads exactly as the strict parse does (pinned by the
//! property tests below against `serde_json` on generated and mutated chunks).

use std::borrow::Cow;

use crate::lenient::{LCount, LStr, Obj, ObjList, TextWire, ToolCalls};
use crate::openai::{
    ChoiceWire, ChunkWire, CompletionDetailsWire, DeltaWire, DetailsWire, UsageWire,
};

/// Deepest nesting a skipped value may have (serde_json's own limit is 128).
const MAX_DEPTH: u32 = 64;

/// The chunk in `data`, or `None` when it is not of the usual shape (see the module doc).
pub(crate) fn parse(data: &[u8]) -> Option<ChunkWire<'_>> {
    // One UTF-8 check for the whole payload: every string cut out of it between two ASCII
    // quotes is then valid UTF-8 too.
    let text = std::str::from_utf8(data).ok()?;
    let mut p = Reader {
        s: text,
        b: data,
        i: 0,
    };
    let chunk = p.chunk()?;
    p.ws();
    (p.i == p.b.len()).then_some(chunk)
}

/// Marks the bytes of `w` (eight string bytes, little-endian) that end a plain run inside a
/// JSON string: `"`, `\\` and control characters (< 0x20). Each such byte gets its high bit
/// set; bytes above the lowest marked one may be marked falsely (a borrow carries upward), so
/// only the lowest mark (`trailing_zeros() / 8`) is exact — and only it is used. Bytes
/// ≥ 0x80 (UTF-8 continuation and lead bytes) are never marked.
fn string_stops(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let quote = zero_byte(w ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(w ^ (ONES * u64::from(b'\\')));
    let control = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
    quote | backslash | control
}

struct Reader<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

/// Marks a field as read once in an object; a second time means `None` (serde's derived
/// structs refuse repeated fields; Python's last-wins is the lenient path's business).
fn once(seen: &mut u8, bit: u8) -> Option<()> {
    if *seen & bit != 0 {
        return None;
    }
    *seen |= bit;
    Some(())
}

impl<'a> Reader<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The next significant byte (not consumed).
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.ws();
        self.b[self.i..]
            .starts_with(word)
            .then(|| self.i += word.len())
    }

    /// A string at the cursor; returns its raw contents and whether it had an escape. Refuses
    /// raw control characters and `\u` escapes (the strict path checks those).
    fn string(&mut self) -> Option<(&'a str, bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let b = self.b;
        let mut i = start;
        let mut escaped = false;
        loop {
            // Eight bytes at a time to the next quote, backslash or control character.
            while let Some(word) = b.get(i..i + 8) {
                let w = u64::from_le_bytes(word.try_into().ok()?);
                let hit = string_stops(w);
                if hit != 0 {
                    i += (hit.trailing_zeros() / 8) as usize;
                    break;
                }
                i += 8;
            }
            match *b.get(i)? {
                b'"' => {
                    self.i = i + 1;
                    return Some((&self.s[start..i], escaped));
                }
                b'\\' => {
                    match b.get(i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        _ => return None,
                    }
                    escaped = true;
                    i += 2;
                }
                c if c < 0x20 => return None,
                _ => i += 1,
            }
        }
    }

    /// A string without escapes (an extracted value or a key).
    fn plain(&mut self) -> Option<&'a str> {
        match self.string()? {
            (s, false) => Some(s),
            _ => None,
        }
    }

    /// A JSON number, its grammar checked; returns its text.
    fn number(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.i;
        let digits = |r: &mut Self| {
            let s = r.i;
            while r.b.get(r.i).is_some_and(u8::is_ascii_digit) {
                r.i += 1;
            }
            r.i > s
        };
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.b.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                digits(self);
            }
            _ => return None,
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if !digits(self) {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            if !digits(self) {
                return None;
            }
        }
        Some(&self.s[start..self.i])
    }

    /// Skips any value, checking its grammar.
    fn skip(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|r, _| r.skip(depth + 1)),
            b'[' => self.array(|r| r.skip(depth + 1)),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number().map(drop),
            _ => None,
        }
    }

    /// An object; `field(reader, key)` reads each value. Keys with escapes are refused.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let key = self.plain()?;
            self.eat(b':')?;
            field(self, key)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, mut elem: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            elem(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn null(&mut self) -> Option<()> {
        self.literal(b"null")
    }

    /// A text field: a string without escapes, or null.
    fn text(&mut self) -> Option<TextWire<'a>> {
        match self.peek()? {
            b'"' => Some(TextWire::Str(Cow::Borrowed(self.plain()?))),
            b'n' => self.null().map(|()| TextWire::None),
            _ => None,
        }
    }

    fn lstr(&mut self) -> Option<LStr<'a>> {
        Some(LStr(
            match self.text()? {
                TextWire::Str(s) => Some(s),
                _ => None,
            },
            None,
        ))
    }

    /// A token count: a plain non-negative integer, or null.
    fn count(&mut self) -> Option<LCount> {
        if self.peek()? == b'n' {
            return self.null().map(|()| LCount(None, false));
        }
        let n = self.number()?;
        n.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| n.parse().ok().map(LCount::of))?
    }

    /// `tool_calls`: null or an empty array (anything else takes the strict path).
    fn no_tool_calls(&mut self) -> Option<ToolCalls> {
        match self.peek()? {
            b'n' => self.null().map(|()| ToolCalls::default()),
            b'[' => {
                self.i += 1;
                self.eat(b']').map(|()| ToolCalls::default())
            }
            _ => None,
        }
    }

    /// An object field read as `T` by `read`, or null (absent).
    fn obj<T>(&mut self, read: impl FnOnce(&mut Self) -> Option<T>) -> Option<Obj<T>> {
        match self.peek()? {
            b'{' => Some(Obj(Some(read(self)?), None)),
            b'n' => self.null().map(|()| Obj(None, None)),
            _ => None,
        }
    }

    fn chunk(&mut self) -> Option<ChunkWire<'a>> {
        let mut c = ChunkWire::default();
        let mut seen = 0u8;
        self.object(|r, key| match key {
            "choices" => {
                once(&mut seen, 1)?;
                let mut v: Vec<ChoiceWire<'a>> = Vec::with_capacity(1);
                r.array(|r| {
                    // Filled in place: a choice is ~260 bytes, and moving it was a visible
                    // share of a saturated client's parse time.
                    v.push(ChoiceWire::default());
                    r.choice(v.last_mut()?)
                })?;
                c.choices = ObjList(v, None);
                Some(())
            }
            "usage" => {
                once(&mut seen, 2)?;
                c.usage = r.obj(Self::usage)?;
                Some(())
            }
            "object" => {
                once(&mut seen, 4)?;
                c.object = r.lstr()?;
                Some(())
            }
            "error" | "message" | "timings" => None,
            _ => r.skip(1),
        })?;
        Some(c)
    }

    fn choice(&mut self, c: &mut ChoiceWire<'a>) -> Option<()> {
        let mut seen = 0u8;
        self.object(|r, key| match key {
            "text" => {
                once(&mut seen, 1)?;
                c.text = r.text()?;
                Some(())
            }
            "delta" => {
                once(&mut seen, 2)?;
                c.delta = r.obj(Self::delta)?;
                Some(())
            }
            "message" => {
                once(&mut seen, 4)?;
                c.message = r.obj(Self::delta)?;
                Some(())
            }
            "finish_reason" => {
                once(&mut seen, 8)?;
                c.finish_reason = r.lstr()?;
                Some(())
            }
            "index" => {
                once(&mut seen, 16)?;
                c.index = r.count()?;
                Some(())
            }
            _ => r.skip(2),
        })
    }

    fn delta(&mut self) -> Option<DeltaWire<'a>> {
        let mut d = DeltaWire::default();
        let mut seen = 0u8;
        self.object(|r, key| match key {
            "content" => {
                once(&mut seen, 1)?;
                d.content = r.text()?;
                Some(())
            }
            "reasoning_content" => {
                once(&mut seen, 2)?;
                d.reasoning_content = r.text()?;
                Some(())
            }
            "reasoning" => {
                once(&mut seen, 4)?;
                d.reasoning = r.text()?;
                Some(())
            }
            "tool_calls" => {
                once(&mut seen, 8)?;
                d.tool_calls = r.no_tool_calls()?;
                Some(())
            }
            "refusal" => {
                once(&mut seen, 16)?;
                d.refusal = r.text()?;
                Some(())
            }
            _ => r.skip(3),
        })?;
        Some(d)
    }

    fn usage(&mut self) -> Option<UsageWire> {
        let mut u = UsageWire::default();
        let mut seen = 0u8;
        self.object(|r, key| match key {
            "prompt_tokens" => {
                once(&mut seen, 1)?;
                u.prompt_tokens = r.count()?;
                Some(())
            }
            "completion_tokens" => {
                once(&mut seen, 2)?;
                u.completion_tokens = r.count()?;
                Some(())
            }
            "prompt_tokens_details" => {
                once(&mut seen, 4)?;
                u.prompt_tokens_details = r.obj(|r| {
                    let mut d = DetailsWire::default();
                    let mut seen = 0u8;
                    r.object(|r, key| match key {
                        "cached_tokens" => {
                            once(&mut seen, 1)?;
                            d.cached_tokens = r.count()?;
                            Some(())
                        }
                        _ => r.skip(3),
                    })?;
                    Some(d)
                })?;
                Some(())
            }
            "total_tokens" => {
                once(&mut seen, 8)?;
                u.total_tokens = r.count()?;
                Some(())
            }
            "completion_tokens_details" => {
                once(&mut seen, 16)?;
                u.completion_tokens_details = r.obj(|r| {
                    let mut d = CompletionDetailsWire::default();
                    let mut seen = 0u8;
                    r.object(|r, key| match key {
                        "reasoning_tokens" => {
                            once(&mut seen, 1)?;
                            d.reasoning_tokens = r.count()?;
                            Some(())
                        }
                        _ => r.skip(3),
                    })?;
                    Some(d)
                })?;
                Some(())
            }
            _ => r.skip(2),
        })?;
        Some(u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn strict(data: &[u8]) -> Option<ChunkWire<'_>> {
        serde_json::from_slice::<ChunkWire<'_>>(data).ok()
    }

    /// What real servers stream takes the fast path, and reads as the strict parse does.
    #[test]
    fn usual_chunks_take_the_fast_path() {
        let chunks: &[&str] = &[
            // vLLM completions, chat (role chunk, content, finish), continuous usage.
            r#"{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}]}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"é 中"},"logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":32,"total_tokens":40,"completion_tokens":8}}"#,
            r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":32,"total_tokens":288,"completion_tokens":256,"prompt_tokens_details":{"cached_tokens":16}}}"#,
            // SGLang (matched_stop), reasoning parsers, tool_calls: [].
            r#"{"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":null,"content":null,"reasoning_content":"think","tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning":"r","tool_calls":[]}}]}"#,
            // llama.cpp's key order, escapes in skipped strings, whitespace everywhere.
            " {\"choices\" : [ {\"finish_reason\":null , \"index\":0,\"delta\":{\"content\":\"x\"}} ] ,\n\"created\":1.5e3,\"id\":\"a\\\"b\\n\",\"model\":\"m\",\"system_fingerprint\":\"b1-2\",\"object\":\"chat.completion.chunk\",\"extra\":[true,false,-0.25,{\"k\":[]}]}\r\n",
        ];
        for c in chunks {
            let fast = parse(c.as_bytes()).unwrap_or_else(|| panic!("fast path refused {c}"));
            assert_eq!(Some(fast), strict(c.as_bytes()), "{c}");
        }
    }

    /// What it leaves to the strict path: escapes in extracted text, `\u`, errors, timings,
    /// odd types, repeated fields, bad grammar, trailing bytes, invalid UTF-8.
    #[test]
    fn unusual_chunks_take_the_strict_path() {
        let chunks: &[&[u8]] = &[
            br#"{"choices":[{"text":"a\nb"}]}"#,
            br#"{"id":"\u00e9","choices":[]}"#,
            br#"{"error":{"message":"x"}}"#,
            br#"{"error":null,"choices":[]}"#,
            br#"{"object":"error","message":"boom"}"#,
            br#"{"choices":[],"timings":{"cache_n":3}}"#,
            br#"{"choices":[{"text":5}]}"#,
            br#"{"choices":[null]}"#,
            br#"{"choices":null}"#,
            br#"{"choices":[{"delta":{"tool_calls":[{"id":"t"}]}}]}"#,
            br#"{"choices":[{"delta":{"content":[{"type":"text","text":"x"}]}}]}"#,
            br#"{"choices":[],"choices":[]}"#,
            br#"{"usage":{"completion_tokens":1.0}}"#,
            br#"{"usage":{"completion_tokens":"3"}}"#,
            br#"{"usage":{"completion_tokens":-1}}"#,
            br#"{"usage":{"completion_tokens":99999999999999999999999}}"#,
            br#"{"id":01}"#,
            br#"{"id":1.}"#,
            br#"{"id":tru}"#,
            br#"{"id":"a",}"#,
            br#"{"id":"a"} x"#,
            b"{\"id\":\"a\x01\"}",
            b"{\"id\":\"\xff\"}",
            br#"["choices"]"#,
            br#"{"id":"a"#,
        ];
        for c in chunks {
            assert!(parse(c).is_none(), "{}", String::from_utf8_lossy(c));
        }
    }

    /// Generated chunk-like JSON: field names the reader knows and others, values of every
    /// type, escapes, non-ASCII text, random whitespace.
    fn arb_value(depth: u32) -> BoxedStrategy<String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("false".to_string()),
            Just("[]".to_string()),
            Just("{}".to_string()),
            (-5i64..300).prop_map(|n| n.to_string()),
            Just("1.5e3".to_string()),
            Just("2.0".to_string()),
            "[a-z é中\\\\\"\\n]{0,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            Just(r#""\u00e9""#.to_string()),
            Just(r#""a\/b""#.to_string()),
        ];
        if depth == 0 {
            return leaf.boxed();
        }
        let key = prop_oneof![
            Just("choices"),
            Just("text"),
            Just("delta"),
            Just("message"),
            Just("content"),
            Just("reasoning_content"),
            Just("reasoning"),
            Just("tool_calls"),
            Just("refusal"),
            Just("finish_reason"),
            Just("usage"),
            Just("prompt_tokens"),
            Just("completion_tokens"),
            Just("prompt_tokens_details"),
            Just("cached_tokens"),
            Just("object"),
            Just("id"),
            Just("index"),
            Just("role"),
            Just("error"),
        ];
        let inner = arb_value(depth - 1);
        prop_oneof![
            2 => leaf,
            1 => prop::collection::vec(inner.clone(), 0..3).prop_map(|v| format!("[{}]", v.join(","))),
            2 => prop::collection::vec((key, inner, " ?"), 0..5).prop_map(|kv| {
                let f: Vec<String> =
                    kv.into_iter().map(|(k, v, w)| format!("\"{k}\"{w}:{w}{v}")).collect();
                format!("{{{}}}", f.join(","))
            }),
        ]
        .boxed()
    }

    /// The generator below reaches the fast path often enough for the comparison to mean
    /// something (955 of 4,000 with the deterministic runner), and the strict path accepts more.
    #[test]
    fn generated_chunks_exercise_both_paths() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let st = arb_value(4);
        let (mut acc, mut agree_ok) = (0, 0);
        for _ in 0..4000 {
            let v = st.new_tree(&mut runner).unwrap().current();
            if parse(v.as_bytes()).is_some() {
                acc += 1;
            }
            if strict(v.as_bytes()).is_some() {
                agree_ok += 1;
            }
        }
        assert_eq!((acc, agree_ok), (955, 2624));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        /// Whatever the fast path accepts, the strict parse accepts and reads the same.
        #[test]
        fn fast_path_agrees_with_serde(v in arb_value(4)) {
            if let Some(fast) = parse(v.as_bytes()) {
                prop_assert_eq!(Some(fast), strict(v.as_bytes()), "{}", v);
            }
        }

        /// The same on real chunks with one byte changed, deleted or inserted.
        #[test]
        fn mutated_chunks_agree_with_serde(
            which in 0usize..3,
            pos in any::<prop::sample::Index>(),
            byte in prop::sample::select(b"\"\\{}[]:,0123456789.eE-+ntfu \x01\xc3\xa9a".to_vec()),
            op in 0u8..3,
        ) {
            let base: [&[u8]; 3] = [
                br#"{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}]}"#,
                br#"{"id":"c","choices":[{"index":0,"delta":{"content":"x","reasoning_content":null,"tool_calls":[]},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}}"#,
                br#"{"choices":[],"usage":{"prompt_tokens":32,"total_tokens":288,"completion_tokens":256}}"#,
            ];
            let mut b = base[which].to_vec();
            let i = pos.index(b.len());
            match op {
                0 => b[i] = byte,
                1 => { b.remove(i); }
                _ => b.insert(i, byte),
            }
            if let Some(fast) = parse(&b) {
                prop_assert_eq!(Some(fast), strict(&b), "{}", String::from_utf8_lossy(&b));
            }
        }
    }
}
