//! Leniency for the JSON that servers stream: what Python's `json` module (the decoder of
//! vLLM's and most peers' benchmark clients) accepts but `serde_json` rejects, and the typed
//! readers of every field the client reads ([`WrongType`]: a value of the wrong type is kept
//! as its JSON, never read as absent, and never fails the parse of the whole chunk: what it
//! means is the reader's).
//!
//! The strict `serde_json` parse stays the fast path. Only a chunk it rejects goes through
//! [`relax`], a small rewrite into strict JSON:
//!
//! - lone UTF-16 surrogate escapes (`"\ud83d"`): Python keeps them in the string. A lone high
//!   surrogate that ends a string, or a lone low one that starts it, becomes a *sentinel*
//!   character ([`high_sentinel`], [`low_sentinel`]) so that the interpreter can join the two
//!   halves of one character that a server split across two chunks; any other lone surrogate
//!   becomes U+FFFD;
//! - `NaN`, `Infinity`, `-Infinity` literals (Python emits and accepts them) become a marked
//!   string ([`NON_FINITE`] and the literal); [`parse_relaxed`] then turns each into `null`
//!   except inside a `usage` (or llama.cpp `timings`) object, where a count that holds one is
//!   `usage_invalid` like `"8"` or `1e400` (issue 39 leftovers: NaN usage read as no usage);
//! - a number beyond `f64`'s range (`1e400`, a 400-digit integer: valid JSON, which
//!   `serde_json` refuses as "number out of range") becomes a string of its text, so a usage
//!   count that holds one is `usage_invalid` and the chunk stands;
//! - raw control characters inside strings (Python's `strict=False`) are escaped.
//!
//! The rewritten text is parsed into a `serde_json::Value` (duplicate keys: the last wins, as in
//! Python, where the derived structs would reject the chunk) and the chunk is read from there.
//!
//! Why our own code rather than a lenient-JSON crate: the crates that exist (json5, serde_hjson,
//! …) accept a different superset (comments, single quotes) and none maps lone surrogates the
//! way the interpreter needs to rejoin them across chunks; the rewrite is ~100 lines and runs
//! only on chunks the strict parser refused.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// First code point of the sentinels for lone surrogates (Supplementary Private Use Area-B,
/// U+10F800..=U+10FFFF: 2048 code points, one per surrogate).
const SENTINEL_BASE: u32 = 0x10_F800;

/// The sentinel standing for lone high surrogate `cu` (`0xD800..=0xDBFF`).
fn high_sentinel(cu: u32) -> char {
    char::from_u32(SENTINEL_BASE + (cu - 0xD800)).unwrap_or('\u{FFFD}')
}

/// The sentinel standing for lone low surrogate `cu` (`0xDC00..=0xDFFF`).
fn low_sentinel(cu: u32) -> char {
    char::from_u32(SENTINEL_BASE + (cu - 0xD800)).unwrap_or('\u{FFFD}')
}

/// The high surrogate that `c` stands for, if `c` is a high sentinel.
pub(crate) fn as_high(c: char) -> Option<u32> {
    let v = c as u32;
    (SENTINEL_BASE..SENTINEL_BASE + 0x400)
        .contains(&v)
        .then(|| v - SENTINEL_BASE + 0xD800)
}

/// The low surrogate that `c` stands for, if `c` is a low sentinel.
pub(crate) fn as_low(c: char) -> Option<u32> {
    let v = c as u32;
    (SENTINEL_BASE + 0x400..SENTINEL_BASE + 0x800)
        .contains(&v)
        .then(|| v - SENTINEL_BASE + 0xD800)
}

/// The character of the surrogate pair (`hi`, `lo`).
pub(crate) fn join_pair(hi: u32, lo: u32) -> char {
    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)).unwrap_or('\u{FFFD}')
}

fn hex4(b: &[u8]) -> Option<u32> {
    if b.len() < 4 {
        return None;
    }
    let mut v = 0u32;
    for &c in &b[..4] {
        v = (v << 4) | (c as char).to_digit(16)?;
    }
    Some(v)
}

/// Rewrites JSON text that Python's `json.loads` accepts into strict JSON (see the module doc).
/// `None` when the text cannot be repaired this way (a broken escape); the caller then reports
/// the strict parser's error. Linear in the input; never panics.
pub(crate) fn relax(src: &str) -> Option<String> {
    let b = src.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len() + 16);
    let mut i = 0;
    let mut in_str = false;
    // Output length right after the opening quote of the current string.
    let mut str_start = 0;
    while i < b.len() {
        let c = b[i];
        if !in_str {
            match c {
                b'"' => {
                    in_str = true;
                    out.push(c);
                    str_start = out.len();
                    i += 1;
                }
                b'N' if b[i..].starts_with(b"NaN") => {
                    push_non_finite(&mut out, "NaN");
                    i += 3;
                }
                b'I' if b[i..].starts_with(b"Infinity") => {
                    push_non_finite(&mut out, "Infinity");
                    i += 8;
                }
                b'-' if b[i..].starts_with(b"-Infinity") => {
                    push_non_finite(&mut out, "-Infinity");
                    i += 9;
                }
                // A number beyond f64's range (`1e400`, a 400-digit integer): valid JSON that
                // `serde_json` refuses ("number out of range"); kept as its text in a string,
                // which a count reads as not a count (`usage_invalid`), so one such field no
                // longer fails the whole chunk as `malformed` (issue 39 §5, fresh tester).
                b'-' | b'0'..=b'9' => {
                    let end = b[i..]
                        .iter()
                        .position(|c| !matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                        .map_or(b.len(), |n| i + n);
                    let tok = &src[i..end];
                    if tok.parse::<f64>().is_ok_and(f64::is_infinite) {
                        out.push(b'"');
                        out.extend_from_slice(tok.as_bytes());
                        out.push(b'"');
                    } else {
                        out.extend_from_slice(tok.as_bytes());
                    }
                    i = end;
                }
                _ => {
                    out.push(c);
                    i += 1;
                }
            }
            continue;
        }
        match c {
            b'"' => {
                in_str = false;
                out.push(c);
                i += 1;
            }
            b'\\' => {
                let e = *b.get(i + 1)?;
                if e != b'u' {
                    out.extend_from_slice(&b[i..i + 2]);
                    i += 2;
                    continue;
                }
                let cu = hex4(&b[i + 2..])?;
                let next = i + 6;
                if (0xD800..0xDC00).contains(&cu) {
                    let lo = (b.get(next) == Some(&b'\\') && b.get(next + 1) == Some(&b'u'))
                        .then(|| hex4(&b[next + 2..]))
                        .flatten()
                        .filter(|lo| (0xDC00..0xE000).contains(lo));
                    if lo.is_some() {
                        out.extend_from_slice(&b[i..next + 6]);
                        i = next + 6;
                    } else {
                        if b.get(next) == Some(&b'"') {
                            push_char(&mut out, high_sentinel(cu));
                        } else {
                            out.extend_from_slice(b"\\uFFFD");
                        }
                        i = next;
                    }
                } else if (0xDC00..0xE000).contains(&cu) {
                    if out.len() == str_start {
                        push_char(&mut out, low_sentinel(cu));
                    } else {
                        out.extend_from_slice(b"\\uFFFD");
                    }
                    i = next;
                } else {
                    out.extend_from_slice(&b[i..next]);
                    i = next;
                }
            }
            0x00..=0x1F => {
                out.extend_from_slice(format!("\\u{c:04x}").as_bytes());
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

/// The mark [`relax`] puts before a `NaN`, `Infinity` or `-Infinity` literal it turns into a
/// string (U+FDD0, a noncharacter: no server text starts with it in practice).
pub(crate) const NON_FINITE: char = '\u{FDD0}';

/// Appends `literal` as a JSON string marked with [`NON_FINITE`].
fn push_non_finite(out: &mut Vec<u8>, literal: &str) {
    out.push(b'"');
    push_char(out, NON_FINITE);
    out.extend_from_slice(literal.as_bytes());
    out.push(b'"');
}

/// Objects whose numbers are token counts read by [`LCount`]: a non-finite literal in them is
/// kept as its marked string, which a count reads as not a count (`usage_invalid`).
const COUNT_OBJECTS: [&str; 2] = ["usage", "timings"];

/// Turns each marked non-finite string ([`push_non_finite`]) into `null`, except under a key
/// of [`COUNT_OBJECTS`] (`in_counts`), where it stays a string. Iterative: a deeply nested
/// chunk cannot overflow the stack.
fn settle_non_finite(v: &mut Value) {
    let mut stack: Vec<(&mut Value, bool)> = vec![(v, false)];
    while let Some((v, in_counts)) = stack.pop() {
        match v {
            Value::String(s) if !in_counts && s.starts_with(NON_FINITE) => *v = Value::Null,
            Value::Array(a) => stack.extend(a.iter_mut().map(|x| (x, in_counts))),
            Value::Object(m) => stack.extend(
                m.iter_mut()
                    .map(|(k, x)| (x, in_counts || COUNT_OBJECTS.contains(&k.as_str()))),
            ),
            _ => {}
        }
    }
}

/// Parses text [`relax`]ed into a `Value` (duplicate keys: the last one wins). A `NaN`,
/// `Infinity` or `-Infinity` is `null` there, except inside a `usage` or `timings` object,
/// where it is a string (not a count: `usage_invalid`), never read as an absent count.
pub(crate) fn parse_relaxed(data: &str) -> Option<Value> {
    let mut v = serde_json::from_str(&relax(data)?).ok()?;
    settle_non_finite(&mut v);
    Some(v)
}

/// Drains whatever value the visitor was handed, for the lenient types below.
fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<usize, A::Error> {
    let mut n = 0;
    while seq.next_element::<IgnoredAny>()?.is_some() {
        n += 1;
    }
    Ok(n)
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

/// A text-bearing field: absent/null, a string (borrowed when it has no escapes), or typed
/// parts (an array, or one part object) as sent by Mistral and gpt-oss relays. A number or a
/// bool is [`TextWire::NotText`]: the chunk parses, and the reader of a text field fails the
/// request with it (issue 39, fresh tester: `"text": 123` was dropped silently).
#[derive(Debug, Default)]
#[cfg_attr(test, derive(PartialEq))]
pub(crate) enum TextWire<'a> {
    /// Absent or null.
    #[default]
    None,
    /// A number or a bool where text belongs, as JSON (`123`, `true`).
    NotText(String),
    /// A plain string.
    Str(Cow<'a, str>),
    /// Typed parts (`[{"type": "text", "text": …}, {"type": "thinking", …}]`).
    Parts(Vec<Value>),
}

impl<'de: 'a, 'a> Deserialize<'de> for TextWire<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = TextWire<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of content parts")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(TextWire::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(TextWire::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(TextWire::Str(Cow::Owned(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(TextWire::None)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(TextWire::None)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                TextWire::deserialize(d)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Ok(TextWire::NotText(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(TextWire::NotText(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(TextWire::NotText(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(TextWire::NotText(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::new();
                while let Some(v) = seq.next_element::<Value>()? {
                    parts.push(v);
                }
                Ok(TextWire::Parts(parts))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                let v = Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(TextWire::Parts(vec![v]))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// Part types whose text is reasoning (thinking) rather than visible content.
const REASONING_PARTS: &[&str] = &[
    "thinking",
    "reasoning",
    "reasoning_text",
    "reasoning_content",
    "summary_text",
];

/// Which channel a piece of generated text belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextKind {
    /// Visible content (the output text).
    Content,
    /// Reasoning (thinking): counts for TTFT, not TTFO or the output text.
    Reasoning,
    /// A refusal (OpenAI's `refusal`): visible, but not the answer.
    Refusal,
}

/// Calls `out(kind, text)` for every piece of text in typed content parts, in order.
/// Text parts (`text`, `output_text`, unknown types with a `text` string) are of the field's
/// `kind`, thinking parts reasoning (their text may itself be nested parts), `refusal` parts a
/// refusal; parts without text (images, redacted thinking, tool references) are skipped. A
/// reasoning field's text is all reasoning, whatever its parts say.
///
/// # Errors
/// The first place where text belongs that holds no text ([`first_not_text`]: a number or a
/// bool, `{"type": "text", "text": 5}`, `{"type": "refusal", "refusal": true}`,
/// `{"value": 1}` of a text object, a bare `5` among the parts, an object that is no part,
/// `{"a": 1}`), as JSON: the server's output cannot be read, and the caller
/// fails the request with it, as for a plain text field that is not a string
/// ([`TextWire::NotText`]; issue 39's leftovers, 4). `null` is no text. Nothing is passed to
/// `out` when an error is returned.
pub(crate) fn part_texts<'v>(
    v: &'v Value,
    kind: TextKind,
    out: &mut impl FnMut(TextKind, &'v str),
) -> Result<(), String> {
    if let Some(bad) = first_not_text(v, 0) {
        return Err(bad.to_string());
    }
    walk_parts(v, kind, out, 0);
    Ok(())
}

/// Nesting depth beyond which parts are ignored (serde_json already limits depth to 128).
const MAX_PART_DEPTH: u32 = 16;

/// The first value [`walk_parts`] would read as text that is not text, walking the parts as
/// it does: a number or a bool; an object that is no content part (neither a string `type`
/// nor a `text`: `{"a": 1}`, `{"type": 5}`); a part's text that is an object other than
/// `{"value": "…"}` (issue 39's typed checks: `"text": {"a": 1}` was ignored). `null` is no
/// text; a part without text (an image) is none.
fn first_not_text(v: &Value, depth: u32) -> Option<&Value> {
    if depth > MAX_PART_DEPTH {
        return None;
    }
    match v {
        Value::Null | Value::String(_) => None,
        Value::Number(_) | Value::Bool(_) => Some(v),
        Value::Array(a) => a.iter().find_map(|p| first_not_text(p, depth + 1)),
        Value::Object(m) => {
            let ty = match m.get("type") {
                None | Some(Value::Null) => None,
                Some(Value::String(t)) => Some(t.as_str()),
                Some(_) => return Some(v),
            };
            if ty.is_none() && !m.contains_key("text") {
                return Some(v);
            }
            let ty = ty.unwrap_or("");
            if REASONING_PARTS.contains(&ty) {
                for key in [ty, "thinking", "reasoning", "text", "content", "summary"] {
                    match m.get(key) {
                        None | Some(Value::Null) => {}
                        Some(x @ (Value::String(_) | Value::Array(_))) => {
                            return first_not_text(x, depth + 1)
                        }
                        Some(x) => return Some(x),
                    }
                }
                None
            } else if ty == "refusal" {
                m.get("refusal")
                    .filter(|x| !matches!(x, Value::Null | Value::String(_)))
            } else {
                match m.get("text") {
                    None | Some(Value::Null) | Some(Value::String(_)) => None,
                    Some(inner @ Value::Array(_)) => first_not_text(inner, depth + 1),
                    Some(t @ Value::Object(o)) => match o.get("value") {
                        Some(Value::String(_)) => None,
                        Some(Value::Null) | None => Some(t),
                        Some(x) => Some(x),
                    },
                    Some(x) => Some(x),
                }
            }
        }
    }
}

fn walk_parts<'v>(
    v: &'v Value,
    kind: TextKind,
    out: &mut impl FnMut(TextKind, &'v str),
    depth: u32,
) {
    if depth > MAX_PART_DEPTH {
        return;
    }
    match v {
        Value::String(s) => out(kind, s),
        Value::Array(a) => {
            for p in a {
                walk_parts(p, kind, out, depth + 1);
            }
        }
        Value::Object(m) => {
            let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
            if REASONING_PARTS.contains(&ty) {
                for key in [ty, "thinking", "reasoning", "text", "content", "summary"] {
                    if let Some(inner) = m.get(key).filter(|x| x.is_string() || x.is_array()) {
                        walk_parts(inner, TextKind::Reasoning, out, depth + 1);
                        return;
                    }
                }
            } else if ty == "refusal" {
                if let Some(Value::String(s)) = m.get("refusal") {
                    let k = match kind {
                        TextKind::Reasoning => TextKind::Reasoning,
                        _ => TextKind::Refusal,
                    };
                    out(k, s);
                }
            } else {
                match m.get("text") {
                    Some(inner @ (Value::String(_) | Value::Array(_))) => {
                        walk_parts(inner, kind, out, depth + 1)
                    }
                    // `{"type": "text", "text": {"value": "…"}}` (Assistants-style text).
                    Some(Value::Object(t)) => {
                        if let Some(Value::String(v)) = t.get("value") {
                            out(kind, v);
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// A value that is there but not of its field's type (issue 39's typed checks): which field
/// (`choices[0].delta`, `tool_calls[0].function.arguments`), the value as JSON, and what the
/// field must hold (`a string`, `an object`, `an array`, `a count`). Every field the client
/// reads is read by one of the typed readers of this module ([`LCount`] a count, [`LStr`] a
/// word, [`TextWire`] text, [`Obj`] an object, [`ObjList`] an array of objects,
/// [`ToolCalls`], and [`obj_at`] / [`arr_at`] / [`str_at`] for a parsed `Value`): null or
/// absence is absent, a value of another type is one of these, never read as absent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WrongType {
    /// The field's path in the chunk or event.
    pub(crate) field: String,
    /// The value as sent (JSON text).
    pub(crate) value: String,
    /// What the field must hold, with its article (`a string`).
    pub(crate) expected: &'static str,
}

impl WrongType {
    /// `value` (JSON text) at `field`, which must hold `expected`.
    pub(crate) fn new(field: impl Into<String>, value: String, expected: &'static str) -> Self {
        WrongType {
            field: field.into(),
            value,
            expected,
        }
    }

    /// The failure's message: "a chunk's FIELD held VALUE, not EXPECTED: the server's output
    /// cannot be read" (the value on one line, cut to 40 characters).
    pub(crate) fn message(&self) -> String {
        format!(
            "a chunk's {} held {}, not {}: the server's output cannot be read",
            self.field,
            inferbench_core::text::one_line(&self.value, 40),
            self.expected
        )
    }

    /// The same fault one level down: `prefix` + `.` + its field (`choices[0]` + `delta`).
    pub(crate) fn under(mut self, prefix: &str) -> Self {
        self.field = if self.field.starts_with('[') {
            format!("{prefix}{}", self.field)
        } else {
            format!("{prefix}.{}", self.field)
        };
        self
    }
}

/// The JSON text of a sequence a visitor was handed (for a [`WrongType`]'s value).
fn seq_json<'de, A: SeqAccess<'de>>(seq: A) -> Result<String, A::Error> {
    Ok(Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?.to_string())
}

/// The JSON text of a map a visitor was handed (for a [`WrongType`]'s value).
fn map_json<'de, A: MapAccess<'de>>(map: A) -> Result<String, A::Error> {
    Ok(Value::deserialize(de::value::MapAccessDeserializer::new(map))?.to_string())
}

/// The JSON text of a string (quoted and escaped).
fn str_json(s: &str) -> String {
    Value::from(s).to_string()
}

/// Visitor methods for the scalars a typed field does not take: each becomes `$bad(json)`.
macro_rules! scalars_are_bad {
    ($out:ty, $bad:expr) => {
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<$out, E> {
            Ok(($bad)(v.to_string()))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<$out, E> {
            Ok(($bad)(v.to_string()))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<$out, E> {
            Ok(($bad)(v.to_string()))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<$out, E> {
            Ok(($bad)(v.to_string()))
        }
    };
}

/// A word field (`finish_reason`, `object`, `message`): a string (`.0`); null or absent is
/// `(None, None)`; a value of any other type is `(None, Some(json))`, which the interpreter
/// fails the request with (issue 39's typed checks: `"finish_reason": 5` read as absent).
#[derive(Debug, Default)]
#[cfg_attr(test, derive(PartialEq))]
pub(crate) struct LStr<'a>(pub Option<Cow<'a, str>>, pub Option<String>);

impl<'a> LStr<'a> {
    pub(crate) fn as_deref(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for LStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = LStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<LStr<'a>, E> {
                Ok(LStr(Some(Cow::Borrowed(v)), None))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LStr<'a>, E> {
                Ok(LStr(Some(Cow::Owned(v.to_owned())), None))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<LStr<'a>, E> {
                Ok(LStr(Some(Cow::Owned(v)), None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<LStr<'a>, E> {
                Ok(LStr(None, None))
            }
            fn visit_none<E: de::Error>(self) -> Result<LStr<'a>, E> {
                Ok(LStr(None, None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<LStr<'a>, D::Error> {
                LStr::deserialize(d)
            }
            scalars_are_bad!(LStr<'a>, |s| LStr(None, Some(s)));
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<LStr<'a>, A::Error> {
                Ok(LStr(None, Some(seq_json(seq)?)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LStr<'a>, A::Error> {
                Ok(LStr(None, Some(map_json(map)?)))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// A token count: a JSON **integer literal**, non-negative (`12`); anything else there is not
/// a count (the second field: `usage_invalid`), where null or a missing field is simply
/// absent. The rule is the literal's, never an `f64`'s: a literal with a fraction or an
/// exponent (`12.0`, `1e3`, `0.99999999999999999`, `4e-400`) is no count, whatever number it
/// rounds to (issue 39's typed checks: `0.99999999999999999` was taken as 1 while `4e-400` was
/// refused). `serde_json` hands an integer literal to `visit_u64` / `visit_i64` and every
/// other number literal to `visit_f64`, so the visitor decides on the text's form. No
/// reference server (vLLM, SGLang, llama.cpp, TRT-LLM, OpenAI) writes a count as a float.
/// An integer literal beyond `u64` (which `serde_json` can only hand over as an `f64`) is no
/// count either (above `u32::MAX` it could not be kept anyway: [`LCount::representable`]).
///
/// A numeric string (`"8"`) is not a count (issue 39, finding 5 of the second trial): no
/// recorded case, reference server or test sends one, and a server that quotes its counts is
/// one whose counts are not to be trusted silently.
#[derive(Debug, Default, Clone, Copy)]
#[cfg_attr(test, derive(PartialEq))]
pub(crate) struct LCount(pub Option<u64>, pub bool);

impl LCount {
    /// A value that is not a token count.
    pub(crate) const INVALID: LCount = LCount(None, true);

    /// The count `v`.
    pub(crate) fn of(v: u64) -> LCount {
        LCount(Some(v), false)
    }

    /// The count as the client keeps it (a `u32`, as the record's counts are): a count above
    /// `u32::MAX` (4,294,967,295) cannot be represented and is no count (`usage_invalid`),
    /// never clamped (f14 item 2: 4294967297, 1e19 and 2^64 were stored as 4294967295 with
    /// source `server`). Returns the count (or [`LCount::INVALID`]) and the value as sent when
    /// it was too large.
    pub(crate) fn representable(self) -> (LCount, Option<u64>) {
        match self.0 {
            Some(v) if v > u64::from(u32::MAX) => (LCount::INVALID, Some(v)),
            _ => (self, None),
        }
    }

    /// Whether it was there but no count the record can hold: not a count, or above
    /// `u32::MAX`.
    pub(crate) fn unusable(self) -> bool {
        self.representable().0 .1
    }

    /// The count, when it is one the record can hold (at most `u32::MAX`).
    pub(crate) fn as_u32(self) -> Option<u32> {
        self.0.and_then(|v| u32::try_from(v).ok())
    }
}

impl<'de> Deserialize<'de> for LCount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CountVisitor::<false>)
    }
}

/// A count in llama.cpp's `timings`: an [`LCount`], except that `-1` is absent. llama-server's
/// `result_timings` starts every count at `-1` ("not measured") and writes the struct as it is,
/// so `-1` there is the server's own word for "none", not a bad count; any other negative value
/// is no count (`usage_invalid`), as in usage.
pub(crate) fn timings_count<'de, D: Deserializer<'de>>(d: D) -> Result<LCount, D::Error> {
    d.deserialize_any(CountVisitor::<true>)
}

/// The one reading of a count ([`LCount`]'s rule); `MINUS_ONE_ABSENT`: `-1` is absent
/// ([`timings_count`]).
struct CountVisitor<const MINUS_ONE_ABSENT: bool>;

impl<'de, const MINUS_ONE_ABSENT: bool> Visitor<'de> for CountVisitor<MINUS_ONE_ABSENT> {
    type Value = LCount;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a token count")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<LCount, E> {
        Ok(LCount::of(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<LCount, E> {
        Ok(match v {
            -1 if MINUS_ONE_ABSENT => LCount(None, false),
            _ => u64::try_from(v).map_or(LCount::INVALID, LCount::of),
        })
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<LCount, E> {
        // A literal with a fraction or an exponent, or an integer beyond u64.
        Ok(LCount::INVALID)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<LCount, E> {
        Ok(LCount::INVALID)
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<LCount, E> {
        Ok(LCount::INVALID)
    }
    fn visit_unit<E: de::Error>(self) -> Result<LCount, E> {
        Ok(LCount(None, false))
    }
    fn visit_none<E: de::Error>(self) -> Result<LCount, E> {
        Ok(LCount(None, false))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<LCount, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<LCount, A::Error> {
        drain_seq(seq)?;
        Ok(LCount::INVALID)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LCount, A::Error> {
        drain_map(map)?;
        Ok(LCount::INVALID)
    }
}

/// `delta.tool_calls` / `message.tool_calls`: an array of tool-call objects. `any`: it holds
/// at least one; `bad`: the first value of a wrong type in it, which fails the request (issue
/// 39's typed checks): `tool_calls` not an array, an element not an object, `function` not an
/// object, `id`, `type`, `function.name` or `function.arguments` not a string (arguments are
/// JSON *text*), `index` not a count. Null or absent is no tool call.
#[derive(Debug, Default)]
#[cfg_attr(test, derive(PartialEq))]
pub(crate) struct ToolCalls {
    /// At least one tool call.
    pub(crate) any: bool,
    /// The first wrong type, its field relative to the delta (`tool_calls[0].function`).
    pub(crate) bad: Option<WrongType>,
}

impl<'de> Deserialize<'de> for ToolCalls {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(tool_calls(&v))
    }
}

/// [`ToolCalls`] of a `tool_calls` field's parsed value `v`.
pub(crate) fn tool_calls(v: &Value) -> ToolCalls {
    let calls = match v {
        Value::Null => return ToolCalls::default(),
        Value::Array(a) => a,
        other => {
            return ToolCalls {
                any: false,
                bad: Some(WrongType::new("tool_calls", other.to_string(), "an array")),
            }
        }
    };
    let check = |i: usize, call: &Value| -> Result<(), WrongType> {
        let here = format!("tool_calls[{i}]");
        if !call.is_object() {
            return Err(WrongType::new(here, call.to_string(), "an object"));
        }
        let under = |e: WrongType| e.under(&here);
        str_at(call, "id").map_err(under)?;
        str_at(call, "type").map_err(under)?;
        if let Some(x) = call.get("index") {
            if LCount::deserialize(x).map_or(true, |c| c.1) {
                return Err(WrongType::new(
                    format!("{here}.index"),
                    x.to_string(),
                    "a count",
                ));
            }
        }
        if let Some(f) = obj_at(call, "function").map_err(under)? {
            let f = Value::Object(f.clone());
            let under = |e: WrongType| e.under(&format!("{here}.function"));
            str_at(&f, "name").map_err(under)?;
            str_at(&f, "arguments").map_err(under)?;
        }
        Ok(())
    };
    let bad = calls
        .iter()
        .enumerate()
        .find_map(|(i, c)| check(i, c).err());
    ToolCalls {
        any: !calls.is_empty(),
        bad,
    }
}

/// `parent[key]` that must be an object: `Ok(None)` when absent or null, `Err` naming `key`
/// when it holds another type. The same rule as [`Obj`], for a parsed `Value`.
pub(crate) fn obj_at<'v>(
    parent: &'v Value,
    key: &str,
) -> Result<Option<&'v serde_json::Map<String, Value>>, WrongType> {
    match parent.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(x) => Err(WrongType::new(key, x.to_string(), "an object")),
    }
}

/// `parent[key]` that must be an array: `Ok(None)` when absent or null, `Err` naming `key`
/// when it holds another type. The same rule as [`ObjList`], for a parsed `Value`.
pub(crate) fn arr_at<'v>(
    parent: &'v Value,
    key: &str,
) -> Result<Option<&'v Vec<Value>>, WrongType> {
    match parent.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => Ok(Some(a)),
        Some(x) => Err(WrongType::new(key, x.to_string(), "an array")),
    }
}

/// `parent[key]` that must be a string: `Ok(None)` when absent or null, `Err` naming `key`
/// when it holds another type. The same rule as [`LStr`], for a parsed `Value`.
pub(crate) fn str_at<'v>(parent: &'v Value, key: &str) -> Result<Option<&'v str>, WrongType> {
    match parent.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(x) => Err(WrongType::new(key, x.to_string(), "a string")),
    }
}

/// `parent[key]` read as a count ([`LCount`]'s rule, for a parsed `Value`).
pub(crate) fn count_at(parent: &Value, key: &str) -> LCount {
    parent.get(key).map_or(LCount::default(), |x| {
        LCount::deserialize(x).unwrap_or(LCount::INVALID)
    })
}

/// An object field (`usage`, `timings`, `delta`, `message`, a usage's `*_details`): an
/// object is read as `T` (`.0`); null or absent is `(None, None)`; a value of any other type
/// (`"usage": "lots"`, `"delta": [1]`, `"prompt_tokens_details": 7`) is `(None, Some(json))`:
/// there, but not what it must be (f14 item 2, issue 39's typed checks: such values read as
/// absent). What the wrong type means is the reader's: `usage_invalid` in a usage report, a
/// failed request where the output is.
#[derive(Debug)]
#[cfg_attr(test, derive(PartialEq))]
pub(crate) struct Obj<T>(pub Option<T>, pub Option<String>);

impl<T> Default for Obj<T> {
    fn default() -> Self {
        Obj(None, None)
    }
}

impl<T> Obj<T> {
    /// Whether a value of another type was there.
    pub(crate) fn is_bad(&self) -> bool {
        self.1.is_some()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
                Ok(Obj(
                    Some(T::deserialize(de::value::MapAccessDeserializer::new(map))?),
                    None,
                ))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Obj<T>, A::Error> {
                Ok(Obj(None, Some(seq_json(seq)?)))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Obj<T>, D::Error> {
                Obj::deserialize(d)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Obj<T>, E> {
                Ok(Obj(None, None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Obj<T>, E> {
                Ok(Obj(None, None))
            }
            scalars_are_bad!(Obj<T>, |s| Obj(None, Some(s)));
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Obj<T>, E> {
                Ok(Obj(None, Some(str_json(v))))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

/// An array of objects (`choices`): `.0` its objects; null or absent is empty; a value that is
/// not an array, or an element that is not an object, is `.1` (its field relative to the array
/// and its JSON: `""` and `"x"`, or `"[1]"` and `2`), which fails the request (issue 39's
/// typed checks: `"choices": "x"` read as no choice).
#[derive(Debug)]
#[cfg_attr(test, derive(PartialEq))]
pub(crate) struct ObjList<T>(pub Vec<T>, pub Option<(String, String)>);

impl<T> Default for ObjList<T> {
    fn default() -> Self {
        ObjList(Vec::new(), None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjList<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = ObjList<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of objects")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ObjList<T>, A::Error> {
                let mut v = Vec::new();
                let mut bad = None;
                let mut i = 0usize;
                while let Some(Obj(x, wrong)) = seq.next_element::<Obj<T>>()? {
                    if let Some(x) = x {
                        // Streams carry one choice: room for exactly one keeps the allocation
                        // small (a push on an empty Vec would reserve four ~270-byte choices,
                        // past the allocator's per-thread cache).
                        if v.capacity() == 0 {
                            v.reserve_exact(1);
                        }
                        v.push(x);
                    } else if bad.is_none() {
                        // A null element is not an object either.
                        bad = Some((format!("[{i}]"), wrong.unwrap_or_else(|| "null".into())));
                    }
                    i += 1;
                }
                Ok(ObjList(v, bad))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ObjList<T>, A::Error> {
                Ok(ObjList(Vec::new(), Some((String::new(), map_json(map)?))))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<ObjList<T>, D::Error> {
                ObjList::deserialize(d)
            }
            fn visit_unit<E: de::Error>(self) -> Result<ObjList<T>, E> {
                Ok(ObjList(Vec::new(), None))
            }
            fn visit_none<E: de::Error>(self) -> Result<ObjList<T>, E> {
                Ok(ObjList(Vec::new(), None))
            }
            scalars_are_bad!(ObjList<T>, |s| ObjList(
                Vec::new(),
                Some((String::new(), s))
            ));
            fn visit_str<E: de::Error>(self, v: &str) -> Result<ObjList<T>, E> {
                Ok(ObjList(Vec::new(), Some((String::new(), str_json(v)))))
            }
        }
        d.deserialize_any(V(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// JSON-like text built from escapes, quotes, structure, Python literals and text.
    fn arb_jsonish() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just(r"\\".to_string()),
            Just(r"\u".to_string()),
            Just(r"\ud83d".to_string()),
            Just(r"\ude00".to_string()),
            Just(r"\u00e9".to_string()),
            Just(r"\u12".to_string()),
            Just(r#"\""#.to_string()),
            Just(r"\n".to_string()),
            Just("\"".to_string()),
            Just("{".to_string()),
            Just("}".to_string()),
            Just("[".to_string()),
            Just("]".to_string()),
            Just(":".to_string()),
            Just(",".to_string()),
            Just("NaN".to_string()),
            Just("-Infinity".to_string()),
            Just("Infinity".to_string()),
            Just("\u{1}".to_string()),
            Just("\u{e9}".to_string()),
            "[a-z0-9]{1,3}",
        ];
        prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
    }

    proptest! {
        /// `relax` never panics on JSON-like text.
        #[test]
        fn relax_never_panics(s in arb_jsonish()) {
            let _ = relax(&s);
            let _ = parse_relaxed(&s);
        }

        /// Strings of lone and paired surrogate escapes and text: relaxed, they always parse.
        #[test]
        fn any_surrogate_soup_parses(
            cus in prop::collection::vec(
                prop_oneof![0xD800u32..0xDC00, 0xDC00u32..0xE000, 0x20u32..0x7F],
                0..12,
            ),
        ) {
            let body: String = cus.iter().map(|c| format!("\\u{c:04x}")).collect();
            let src = format!("{{\"t\":\"{body}\"}}");
            prop_assert!(parse_relaxed(&src).is_some(), "{}", src);
        }
    }

    #[test]
    fn relax_maps_surrogates_nan_and_control_chars() {
        // A valid pair is kept verbatim.
        assert_eq!(
            relax(r#"{"t":"\ud83d\ude00"}"#).unwrap(),
            r#"{"t":"\ud83d\ude00"}"#
        );
        // Lone high at the end, lone low at the start: sentinels; elsewhere U+FFFD.
        let r = relax(r#"["a\ud83d","\ude00b","x\ud83dy","x\ude00","\ud83d"]"#).unwrap();
        let v: Value = serde_json::from_str(&r).unwrap();
        let s: Vec<&str> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        assert_eq!(as_high(s[0].chars().last().unwrap()), Some(0xD83D));
        assert_eq!(as_low(s[1].chars().next().unwrap()), Some(0xDE00));
        assert_eq!(s[2], "x\u{FFFD}y");
        assert_eq!(s[3], "x\u{FFFD}");
        assert_eq!(as_high(s[4].chars().next().unwrap()), Some(0xD83D));
        assert_eq!(join_pair(0xD83D, 0xDE00), '\u{1F600}');
        // Python literals and raw control characters.
        let r = relax("{\"a\":NaN,\"b\":[Infinity,-Infinity],\"c\":\"x\ty\"}").unwrap();
        assert_eq!(
            r,
            "{\"a\":\"\u{FDD0}NaN\",\"b\":[\"\u{FDD0}Infinity\",\"\u{FDD0}-Infinity\"],\
             \"c\":\"x\\u0009y\"}"
        );
        // Parsed: null outside usage, a string (not a count) inside it.
        let v = parse_relaxed(
            "{\"a\":NaN,\"b\":[Infinity],\"usage\":{\"completion_tokens\":-Infinity,\
             \"completion_tokens_details\":{\"reasoning_tokens\":NaN}}}",
        )
        .unwrap();
        assert_eq!(v["a"], Value::Null);
        assert_eq!(v["b"][0], Value::Null);
        assert_eq!(v["usage"]["completion_tokens"], "\u{FDD0}-Infinity");
        assert_eq!(
            v["usage"]["completion_tokens_details"]["reasoning_tokens"],
            "\u{FDD0}NaN"
        );
        let u: LCount = serde_json::from_value(v["usage"]["completion_tokens"].clone()).unwrap();
        assert_eq!(u, LCount::INVALID);
        // Inside strings the words are text.
        assert_eq!(
            relax(r#"{"a":"NaN Infinity"}"#).unwrap(),
            r#"{"a":"NaN Infinity"}"#
        );
        // Escaped quotes and backslashes do not end the string.
        assert_eq!(
            relax(r#"{"a":"\"\\","b":NaN}"#).unwrap(),
            "{\"a\":\"\\\"\\\\\",\"b\":\"\u{FDD0}NaN\"}"
        );
        // Broken escapes cannot be repaired.
        assert_eq!(relax(r#"{"a":"\u12"}"#), None);
        assert_eq!(relax(r#"{"a":"\"#), None);
    }

    #[test]
    fn relaxed_parse_keeps_the_last_duplicate_key() {
        let v = parse_relaxed(r#"{"a":1,"a":2}"#).unwrap();
        assert_eq!(v["a"], 2);
    }

    #[test]
    fn parts_are_split_into_content_reasoning_and_refusal() {
        let v: Value = serde_json::from_str(
            r#"[{"type":"thinking","thinking":[{"type":"text","text":"hm"}]},
                {"type":"text","text":"A"},{"type":"output_text","text":"B"},
                {"type":"reasoning","text":"r"},{"type":"image_url","image_url":{"url":"x"}},
                {"type":"refusal","refusal":"no"},"C",{"type":"weird","text":"D"},
                {"type":"thinking","thinking":"t2"},{"type":"redacted_thinking","data":"zz"},
                {"type":"text","text":{"value":"V","annotations":[]}},
                {"type":"reasoning","summary":[{"type":"summary_text","text":"S"}]}]"#,
        )
        .unwrap();
        let mut got = Vec::new();
        part_texts(&v, TextKind::Content, &mut |k, t| {
            got.push((k, t.to_string()))
        })
        .unwrap();
        let (c, r, x) = (TextKind::Content, TextKind::Reasoning, TextKind::Refusal);
        let want: Vec<(TextKind, String)> = [
            (r, "hm"),
            (c, "A"),
            (c, "B"),
            (r, "r"),
            (x, "no"),
            (c, "C"),
            (c, "D"),
            (r, "t2"),
            (c, "V"),
            (r, "S"),
        ]
        .iter()
        .map(|(r, t)| (*r, t.to_string()))
        .collect();
        assert_eq!(got, want);
    }

    /// Issue 39's leftovers, 4: a number or a bool where a typed part's text belongs is named
    /// (the first one, as JSON) and nothing is passed on; `null` and parts without text are
    /// no text.
    #[test]
    fn parts_whose_text_is_not_a_string_are_refused() {
        for (parts, bad) in [
            (r#"[{"type":"text","text":5}]"#, "5"),
            (
                r#"[{"type":"text","text":"a"},{"type":"output_text","text":true}]"#,
                "true",
            ),
            (r#"{"type":"text","text":1.5}"#, "1.5"),
            (r#"[{"type":"refusal","refusal":7}]"#, "7"),
            (r#"[{"type":"thinking","thinking":3}]"#, "3"),
            (
                r#"[{"type":"reasoning","summary":[{"type":"summary_text","text":4}]}]"#,
                "4",
            ),
            (r#"[{"type":"text","text":{"value":9}}]"#, "9"),
            (r#"["a",6]"#, "6"),
            (r#"[{"type":"weird","text":false}]"#, "false"),
        ] {
            let v: Value = serde_json::from_str(parts).unwrap();
            let mut got = Vec::new();
            let r = part_texts(&v, TextKind::Content, &mut |_, t| got.push(t.to_string()));
            assert_eq!(r, Err(bad.to_string()), "{parts}");
            assert!(got.is_empty(), "{parts}");
        }
        for parts in [
            r#"[{"type":"text","text":null}]"#,
            r#"[{"type":"image_url","image_url":{"url":"x","detail":1}}]"#,
            r#"[{"type":"redacted_thinking","data":5}]"#,
            r#"[null]"#,
        ] {
            let v: Value = serde_json::from_str(parts).unwrap();
            assert_eq!(
                part_texts(&v, TextKind::Content, &mut |_, _| {}),
                Ok(()),
                "{parts}"
            );
        }
    }

    /// Issue 39, finding 5 and the typed checks: a count is a JSON non-negative integer
    /// literal; a literal with a fraction or an exponent (whatever it rounds to), a numeric
    /// string, a negative number, a bool, an array or an object is there but not a count (the
    /// second field); null and absence are only absent; so is an integer literal beyond u64.
    #[test]
    fn a_count_is_a_json_non_negative_integer() {
        #[derive(serde::Deserialize)]
        struct T {
            #[serde(default)]
            n: LCount,
        }
        for (src, want) in [
            (r#"{"n":8}"#, LCount::of(8)),
            (r#"{"n":8.0}"#, LCount::INVALID),
            (r#"{"n":1e3}"#, LCount::INVALID),
            (r#"{"n":0.99999999999999999}"#, LCount::INVALID),
            (r#"{"n":1.0000000000000000001}"#, LCount::INVALID),
            (r#"{"n":4e-400}"#, LCount::INVALID),
            (r#"{"n":0e5}"#, LCount::INVALID),
            (r#"{"n":-0}"#, LCount::INVALID),
            (r#"{"n":18446744073709551615}"#, LCount::of(u64::MAX)),
            (r#"{"n":18446744073709551616}"#, LCount::INVALID),
            (r#"{"n":0}"#, LCount::of(0)),
            (r#"{"n":"8"}"#, LCount::INVALID),
            (r#"{"n":" 8 "}"#, LCount::INVALID),
            (r#"{"n":""}"#, LCount::INVALID),
            (r#"{"n":-4}"#, LCount::INVALID),
            (r#"{"n":4.5}"#, LCount::INVALID),
            (r#"{"n":-0.5}"#, LCount::INVALID),
            (r#"{"n":true}"#, LCount::INVALID),
            (r#"{"n":[8]}"#, LCount::INVALID),
            (r#"{"n":{"v":8}}"#, LCount::INVALID),
            (r#"{"n":null}"#, LCount(None, false)),
            (r#"{}"#, LCount(None, false)),
        ] {
            let v: T = serde_json::from_str(src).unwrap();
            assert_eq!(v.n, want, "{src}");
        }
    }

    /// Issue 39's typed checks: a typed field reads its type; null or absence is absent; any
    /// other type is kept as its JSON (never read as absent), and no wrong type fails the
    /// parse of the chunk.
    #[test]
    fn typed_fields_keep_a_wrong_type_as_its_json() {
        #[derive(serde::Deserialize)]
        struct T<'a> {
            #[serde(default, borrow)]
            s: LStr<'a>,
            #[serde(default)]
            o: Obj<Value>,
            #[serde(default)]
            l: ObjList<Value>,
        }
        type Want = (
            Option<&'static str>,
            Option<&'static str>,
            bool,
            Option<&'static str>,
        );
        let none: Want = (None, None, false, None);
        for (src, (s, s_bad, o, o_bad), (l, l_bad)) in [
            (
                r#"{"s":"x","o":{"a":1},"l":[{}]}"#,
                (Some("x"), None, true, None),
                (1, None),
            ),
            (
                r#"{"s":1,"o":[1],"l":{"a":1}}"#,
                (None, Some("1"), false, Some("[1]")),
                (0, Some(("", r#"{"a":1}"#))),
            ),
            (
                r#"{"s":null,"o":"x","l":null}"#,
                (None, None, false, Some(r#""x""#)),
                (0, None),
            ),
            (
                r#"{"s":[1],"o":null,"l":"x"}"#,
                (None, Some("[1]"), false, None),
                (0, Some(("", r#""x""#))),
            ),
            (
                r#"{"s":{},"o":3,"l":[{},2]}"#,
                (None, Some("{}"), false, Some("3")),
                (1, Some(("[1]", "2"))),
            ),
            (r#"{"l":[null]}"#, none, (0, Some(("[0]", "null")))),
            (r#"{}"#, none, (0, None)),
        ] {
            let v: T<'_> = serde_json::from_str(src).unwrap();
            assert_eq!(v.s.as_deref(), s, "{src}");
            assert_eq!(v.s.1.as_deref(), s_bad, "{src}");
            assert_eq!(v.o.0.is_some(), o, "{src}");
            assert_eq!(v.o.1.as_deref(), o_bad, "{src}");
            assert_eq!(v.l.0.len(), l, "{src}");
            let got = v.l.1.as_ref().map(|(a, b)| (a.as_str(), b.as_str()));
            assert_eq!(got, l_bad, "{src}");
        }
    }

    /// Issue 39's typed checks: `tool_calls` is an array of objects whose `function` is an
    /// object and whose `id`, `type`, `function.name`, `function.arguments` are strings and
    /// `index` a count; the first fault is named by its path.
    #[test]
    fn tool_calls_are_read_typed() {
        let ok = |src: &str| {
            let v: Value = serde_json::from_str(src).unwrap();
            tool_calls(v.get("tool_calls").unwrap_or(&Value::Null))
        };
        assert_eq!(ok(r#"{}"#), ToolCalls::default());
        assert_eq!(ok(r#"{"tool_calls":null}"#), ToolCalls::default());
        assert_eq!(ok(r#"{"tool_calls":[]}"#), ToolCalls::default());
        let good = r#"{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":"{\""}}]}"#;
        assert_eq!(
            ok(good),
            ToolCalls {
                any: true,
                bad: None
            }
        );
        for (src, field, value, expected) in [
            (
                r#"{"tool_calls":{"id":"c"}}"#,
                "tool_calls",
                r#"{"id":"c"}"#,
                "an array",
            ),
            (r#"{"tool_calls":"x"}"#, "tool_calls", r#""x""#, "an array"),
            (r#"{"tool_calls":[1]}"#, "tool_calls[0]", "1", "an object"),
            (
                r#"{"tool_calls":[{"function":{"arguments":7}}]}"#,
                "tool_calls[0].function.arguments",
                "7",
                "a string",
            ),
            (
                r#"{"tool_calls":[{"function":{"arguments":{"a":1}}}]}"#,
                "tool_calls[0].function.arguments",
                r#"{"a":1}"#,
                "a string",
            ),
            (
                r#"{"tool_calls":[{"function":{"name":["f"]}}]}"#,
                "tool_calls[0].function.name",
                r#"["f"]"#,
                "a string",
            ),
            (
                r#"{"tool_calls":[{"function":"f"}]}"#,
                "tool_calls[0].function",
                r#""f""#,
                "an object",
            ),
            (
                r#"{"tool_calls":[{"id":5}]}"#,
                "tool_calls[0].id",
                "5",
                "a string",
            ),
            (
                r#"{"tool_calls":[{"index":"0"}]}"#,
                "tool_calls[0].index",
                r#""0""#,
                "a count",
            ),
            (
                r#"{"tool_calls":[{},{"type":true}]}"#,
                "tool_calls[1].type",
                "true",
                "a string",
            ),
        ] {
            let got = ok(src);
            assert_eq!(
                got.bad,
                Some(WrongType::new(field, value.to_string(), expected)),
                "{src}"
            );
        }
    }

    /// Issue 39's typed checks: an object where text belongs that is no content part
    /// (`{"a": 1}`, a non-string `type`) or a part whose text is an object other than
    /// `{"value": "…"}` is not text, named as its JSON.
    #[test]
    fn an_object_that_is_no_content_part_is_not_text() {
        for (parts, bad) in [
            (r#"{"a":1}"#, r#"{"a":1}"#),
            (r#"[{"a":1}]"#, r#"{"a":1}"#),
            (r#"[{"type":5,"text":"x"}]"#, r#"{"type":5,"text":"x"}"#),
            (r#"[{"type":"text","text":{}}]"#, "{}"),
            (r#"[{"type":"text","text":{"value":[1]}}]"#, "[1]"),
            (r#"[{"type":"refusal","refusal":{"x":1}}]"#, r#"{"x":1}"#),
            (r#"[{"type":"thinking","thinking":{"x":1}}]"#, r#"{"x":1}"#),
        ] {
            let v: Value = serde_json::from_str(parts).unwrap();
            let r = part_texts(&v, TextKind::Content, &mut |_, _| {});
            assert_eq!(r, Err(bad.to_string()), "{parts}");
        }
        for parts in [r#"{"text":"x"}"#, r#"{"type":"image_url","image_url":{}}"#] {
            let v: Value = serde_json::from_str(parts).unwrap();
            assert_eq!(part_texts(&v, TextKind::Content, &mut |_, _| {}), Ok(()));
        }
    }
}
