//! YAML loading with positions, resolving plain scalars the way PyYAML's `safe_load` does.
//!
//! InferenceX reads its master configs, `runners.yaml` and `perf-changelog.yaml` with PyYAML, which
//! implements YAML 1.1 implicit typing: `yes`/`no`/`on`/`off` are booleans, `2_063_837` is an
//! integer, `1e3` is a *string* (a float needs a dot), `010` is octal. We parse events with
//! `saphyr-parser` (which gives line/column spans) and apply those YAML 1.1 rules ourselves, so a
//! value means here exactly what it means to the reference generator, and every node keeps the
//! position that error messages cite.
//!
//! Differences from PyYAML, all of them stricter: duplicate mapping keys are an error (PyYAML
//! keeps the last one silently), timestamps stay strings, and tags other than the core `!!str`,
//! `!!int`, `!!float`, `!!bool`, `!!null`, `!!seq`, `!!map` are rejected.

use std::collections::HashMap;
use std::fmt;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};

use crate::error::ConfigError;

/// A source position: 1-based line and 1-based column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    /// Line number, starting at 1.
    pub line: usize,
    /// Column number (in characters), starting at 1.
    pub col: usize,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// A resolved YAML value.
#[derive(Debug, Clone, PartialEq)]
pub enum Yaml {
    /// `~`, `null`, or an empty plain scalar.
    Null,
    /// YAML 1.1 boolean (`true`, `yes`, `on`, … in PyYAML's spellings).
    Bool(bool),
    /// Integer (decimal, `0x`, `0b`, leading-zero octal, `_` separators, base 60).
    Int(i64),
    /// Float (needs a `.` in YAML 1.1, or `.inf`/`.nan`).
    Float(f64),
    /// Any other scalar, and every quoted or block scalar.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in document order. Keys are unique (duplicates are rejected while loading).
    Map(Vec<(Node, Node)>),
}

/// A YAML value with the position where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Yaml,
    /// Where the value starts in the source.
    pub pos: Pos,
}

impl Node {
    /// The entries of a mapping node, or `None` for any other kind.
    pub fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.value {
            Yaml::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The items of a sequence node, or `None` for any other kind.
    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Yaml::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// The string of a string scalar, or `None`.
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Yaml::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Looks a key up in a mapping node whose keys are strings.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v)
    }

    /// A short name of the node's kind, for error messages ("a mapping", "an integer", …).
    pub fn kind(&self) -> &'static str {
        match &self.value {
            Yaml::Null => "null",
            Yaml::Bool(_) => "a boolean",
            Yaml::Int(_) => "an integer",
            Yaml::Float(_) => "a float",
            Yaml::Str(_) => "a string",
            Yaml::Seq(_) => "a list",
            Yaml::Map(_) => "a mapping",
        }
    }

    /// Converts to JSON, keeping mapping order. Non-string keys are written as their YAML text
    /// (the schemas we validate only use string keys). Non-finite floats become `null`.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match &self.value {
            Yaml::Null => Value::Null,
            Yaml::Bool(b) => Value::Bool(*b),
            Yaml::Int(i) => Value::from(*i),
            Yaml::Float(f) => serde_json::Number::from_f64(*f)
                .map(Value::Number)
                .unwrap_or(Value::Null),
            Yaml::Str(s) => Value::String(s.clone()),
            Yaml::Seq(items) => Value::Array(items.iter().map(Node::to_json).collect()),
            Yaml::Map(entries) => {
                let mut map = serde_json::Map::new();
                for (k, v) in entries {
                    map.insert(k.key_text(), v.to_json());
                }
                Value::Object(map)
            }
        }
    }

    /// The text of a key node (strings as-is, other scalars in their canonical spelling).
    pub fn key_text(&self) -> String {
        match &self.value {
            Yaml::Str(s) => s.clone(),
            Yaml::Null => "null".into(),
            Yaml::Bool(b) => if *b { "True" } else { "False" }.into(),
            Yaml::Int(i) => i.to_string(),
            Yaml::Float(f) => crate::pyjson::float_repr(*f),
            Yaml::Seq(_) | Yaml::Map(_) => "<collection>".into(),
        }
    }
}

/// Parses one YAML document. `file` is only used in error messages. An empty document is
/// `Yaml::Null` at 1:1.
///
/// # Errors
/// A [`ConfigError`] naming `file:line:col` for syntax errors, duplicate keys, unknown aliases
/// or tags, and multi-document streams.
pub fn parse(src: &str, file: &str) -> Result<Node, ConfigError> {
    let mut loader = Loader {
        file,
        parser: Parser::new_from_str(src),
        anchors: HashMap::new(),
        path: Vec::new(),
    };
    loader.document()
}

struct Loader<'a> {
    file: &'a str,
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
    anchors: HashMap<usize, Node>,
    /// Keys and `[index]`es from the root to the node being loaded, for error field paths.
    path: Vec<String>,
}

fn pos_of(span: &Span) -> Pos {
    Pos {
        line: span.start.line(),
        col: span.start.col() + 1,
    }
}

impl<'a> Loader<'a> {
    fn err(&self, pos: Pos, msg: impl Into<String>) -> ConfigError {
        ConfigError::new(self.file, pos, "", msg)
    }

    /// An error about the node being loaded, with its field path (`key.list[2].field`).
    fn err_here(&self, pos: Pos, msg: impl Into<String>) -> ConfigError {
        let mut field = String::new();
        for seg in &self.path {
            if !field.is_empty() && !seg.starts_with('[') {
                field.push('.');
            }
            field.push_str(seg);
        }
        ConfigError::new(self.file, pos, field, msg)
    }

    fn next(&mut self) -> Result<(Event<'a>, Span), ConfigError> {
        match self.parser.next_event() {
            Some(Ok(ev)) => Ok(ev),
            Some(Err(e)) => {
                let m = e.marker();
                Err(self.err(
                    Pos {
                        line: m.line(),
                        col: m.col() + 1,
                    },
                    format!("YAML syntax error: {}", e.info()),
                ))
            }
            None => Err(self.err(Pos::default(), "unexpected end of YAML stream")),
        }
    }

    fn document(&mut self) -> Result<Node, ConfigError> {
        let mut root: Option<Node> = None;
        loop {
            let (ev, span) = self.next()?;
            match ev {
                Event::StreamStart | Event::Nothing | Event::DocumentEnd => {}
                Event::StreamEnd => break,
                Event::DocumentStart(_) => {
                    if root.is_some() {
                        return Err(self.err(
                            pos_of(&span),
                            "expected a single YAML document, found another one",
                        ));
                    }
                    let (ev, span) = self.next()?;
                    let node = self.node(ev, span)?;
                    root = Some(node);
                }
                other => {
                    return Err(self.err(pos_of(&span), format!("unexpected YAML event {other:?}")))
                }
            }
        }
        Ok(root.unwrap_or(Node {
            value: Yaml::Null,
            pos: Pos { line: 1, col: 1 },
        }))
    }

    fn node(&mut self, ev: Event<'a>, span: Span) -> Result<Node, ConfigError> {
        let pos = pos_of(&span);
        match ev {
            Event::Alias(id) => self
                .anchors
                .get(&id)
                .cloned()
                .map(|mut n| {
                    n.pos = pos;
                    n
                })
                .ok_or_else(|| self.err_here(pos, "alias to an unknown anchor")),
            Event::Scalar(text, style, anchor, tag) => {
                let tag = tag.map(|t| format!("{}{}", t.handle, t.suffix));
                let value = resolve_scalar(&text, style, tag.as_deref())
                    .map_err(|m| self.err_here(pos, m))?;
                let node = Node { value, pos };
                if anchor > 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                Ok(node)
            }
            Event::SequenceStart(anchor, tag) => {
                check_collection_tag(tag.as_deref().map(|t| (&t.handle, &t.suffix)), "seq")
                    .map_err(|m| self.err_here(pos, m))?;
                let mut items = Vec::new();
                loop {
                    let (ev, span) = self.next()?;
                    if matches!(ev, Event::SequenceEnd) {
                        break;
                    }
                    self.path.push(format!("[{}]", items.len()));
                    items.push(self.node(ev, span)?);
                    self.path.pop();
                }
                let node = Node {
                    value: Yaml::Seq(items),
                    pos,
                };
                if anchor > 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                Ok(node)
            }
            Event::MappingStart(anchor, tag) => {
                check_collection_tag(tag.as_deref().map(|t| (&t.handle, &t.suffix)), "map")
                    .map_err(|m| self.err_here(pos, m))?;
                let mut entries: Vec<(Node, Node)> = Vec::new();
                let mut merged: Vec<(Node, Node)> = Vec::new();
                loop {
                    let (ev, span) = self.next()?;
                    if matches!(ev, Event::MappingEnd) {
                        break;
                    }
                    let is_merge =
                        matches!(&ev, Event::Scalar(t, ScalarStyle::Plain, _, None) if t == "<<");
                    let key = self.node(ev, span)?;
                    let (ev, span) = self.next()?;
                    self.path.push(key.key_text());
                    let value = self.node(ev, span)?;
                    self.path.pop();
                    if is_merge {
                        self.merge_into(&mut merged, &value)?;
                        continue;
                    }
                    if matches!(key.value, Yaml::Seq(_) | Yaml::Map(_)) {
                        return Err(self.err_here(key.pos, "mapping keys must be scalars"));
                    }
                    if let Some((first, _)) = entries.iter().find(|(k, _)| k.value == key.value) {
                        return Err(self.err_here(
                            key.pos,
                            format!(
                                "duplicate key '{}' (first defined at line {})",
                                key.key_text(),
                                first.pos.line
                            ),
                        ));
                    }
                    entries.push((key, value));
                }
                // PyYAML merge keys: explicit entries win over merged ones.
                for (k, v) in merged {
                    if !entries.iter().any(|(e, _)| e.value == k.value) {
                        entries.push((k, v));
                    }
                }
                let node = Node {
                    value: Yaml::Map(entries),
                    pos,
                };
                if anchor > 0 {
                    self.anchors.insert(anchor, node.clone());
                }
                Ok(node)
            }
            other => Err(self.err(pos, format!("unexpected YAML event {other:?}"))),
        }
    }

    fn merge_into(&self, merged: &mut Vec<(Node, Node)>, value: &Node) -> Result<(), ConfigError> {
        let sources: Vec<&Node> = match &value.value {
            Yaml::Map(_) => vec![value],
            Yaml::Seq(items) => items.iter().collect(),
            _ => {
                return Err(self.err(
                    value.pos,
                    "merge key '<<' needs a mapping or a list of mappings",
                ))
            }
        };
        for src in sources {
            let Some(entries) = src.as_map() else {
                return Err(self.err(
                    src.pos,
                    "merge key '<<' needs a mapping or a list of mappings",
                ));
            };
            for (k, v) in entries {
                if !merged.iter().any(|(e, _)| e.value == k.value) {
                    merged.push((k.clone(), v.clone()));
                }
            }
        }
        Ok(())
    }
}

fn check_collection_tag(tag: Option<(&String, &String)>, want: &str) -> Result<(), String> {
    match tag {
        None => Ok(()),
        Some((h, s)) if (h == "!!" || h == "tag:yaml.org,2002:") && s == want => Ok(()),
        Some((h, s)) => Err(format!("unsupported YAML tag '{h}{s}'")),
    }
}

fn resolve_scalar(text: &str, style: ScalarStyle, tag: Option<&str>) -> Result<Yaml, String> {
    if let Some(tag) = tag {
        let name = tag
            .strip_prefix("!!")
            .or_else(|| tag.strip_prefix("tag:yaml.org,2002:"))
            .ok_or_else(|| format!("unsupported YAML tag '{tag}'"))?;
        return match name {
            "str" => Ok(Yaml::Str(text.to_string())),
            "int" => parse_int(text)
                .map(Yaml::Int)
                .ok_or_else(|| format!("'{text}' is not an integer")),
            "float" => parse_float(text)
                .or_else(|| parse_int(text).map(|i| i as f64))
                .map(Yaml::Float)
                .ok_or_else(|| format!("'{text}' is not a float")),
            "bool" => parse_bool(text)
                .map(Yaml::Bool)
                .ok_or_else(|| format!("'{text}' is not a boolean")),
            "null" => Ok(Yaml::Null),
            _ => Err(format!("unsupported YAML tag '{tag}'")),
        };
    }
    if style != ScalarStyle::Plain {
        return Ok(Yaml::Str(text.to_string()));
    }
    if matches!(text, "" | "~" | "null" | "Null" | "NULL") {
        return Ok(Yaml::Null);
    }
    if let Some(b) = parse_bool(text) {
        return Ok(Yaml::Bool(b));
    }
    if is_int_syntax(text) {
        return match parse_int(text) {
            Some(i) => Ok(Yaml::Int(i)),
            None => Err(format!("integer '{text}' is out of range")),
        };
    }
    if is_float_syntax(text) {
        if let Some(f) = parse_float(text) {
            return Ok(Yaml::Float(f));
        }
    }
    Ok(Yaml::Str(text.to_string()))
}

/// PyYAML's YAML 1.1 booleans.
fn parse_bool(t: &str) -> Option<bool> {
    match t {
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => Some(true),
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => Some(false),
        _ => None,
    }
}

fn split_sign(t: &str) -> (bool, &str) {
    match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    }
}

/// Whether `t` matches PyYAML's int resolver:
/// `[-+]?0b[01_]+ | [-+]?0[0-7_]+ | [-+]?(0|[1-9][0-9_]*) | [-+]?0x[0-9a-fA-F_]+ |
/// [-+]?[1-9][0-9_]*(:[0-5]?[0-9])+`.
fn is_int_syntax(t: &str) -> bool {
    let (_, b) = split_sign(t);
    if let Some(r) = b.strip_prefix("0b") {
        return !r.is_empty() && r.chars().all(|c| matches!(c, '0' | '1' | '_'));
    }
    if let Some(r) = b.strip_prefix("0x") {
        return !r.is_empty() && r.chars().all(|c| c.is_ascii_hexdigit() || c == '_');
    }
    if b == "0" {
        return true;
    }
    if let Some(r) = b.strip_prefix('0') {
        return !r.is_empty() && r.chars().all(|c| matches!(c, '0'..='7' | '_'));
    }
    let mut parts = b.split(':');
    let head = parts.next().unwrap_or("");
    let head_ok = head.starts_with(|c: char| matches!(c, '1'..='9'))
        && head.chars().all(|c| c.is_ascii_digit() || c == '_');
    if !head_ok {
        return false;
    }
    parts.all(is_sexagesimal_part)
}

fn is_sexagesimal_part(p: &str) -> bool {
    let bytes = p.as_bytes();
    match bytes.len() {
        1 => bytes[0].is_ascii_digit(),
        2 => matches!(bytes[0], b'0'..=b'5') && bytes[1].is_ascii_digit(),
        _ => false,
    }
}

/// Converts text that [`is_int_syntax`] accepted (or a `!!int`-tagged scalar) to `i64`.
fn parse_int(t: &str) -> Option<i64> {
    let cleaned: String = t.chars().filter(|&c| c != '_').collect();
    let (neg, b) = split_sign(&cleaned);
    let magnitude: i128 = if let Some(r) = b.strip_prefix("0b") {
        i128::from_str_radix(r, 2).ok()?
    } else if let Some(r) = b.strip_prefix("0x") {
        i128::from_str_radix(r, 16).ok()?
    } else if b.len() > 1 && b.starts_with('0') && !b.contains(':') {
        i128::from_str_radix(&b[1..], 8).ok()?
    } else if b.contains(':') {
        let mut acc: i128 = 0;
        for part in b.split(':') {
            acc = acc
                .checked_mul(60)?
                .checked_add(part.parse::<i128>().ok()?)?;
        }
        acc
    } else {
        b.parse::<i128>().ok()?
    };
    let v = if neg { -magnitude } else { magnitude };
    i64::try_from(v).ok()
}

/// Whether `t` matches PyYAML's float resolver (a `.` is required; exponent needs a sign).
fn is_float_syntax(t: &str) -> bool {
    let (_, b) = split_sign(t);
    if matches!(b, ".inf" | ".Inf" | ".INF") {
        return true;
    }
    if matches!(t, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    // Split off an exponent `[eE][-+][0-9]+`.
    let (mantissa, exp_ok) = match b.find(['e', 'E']) {
        Some(i) => {
            let e = &b[i + 1..];
            let ok = e.len() >= 2
                && matches!(e.as_bytes()[0], b'-' | b'+')
                && e[1..].chars().all(|c| c.is_ascii_digit());
            (&b[..i], ok)
        }
        None => (b, true),
    };
    if !exp_ok {
        return false;
    }
    let Some(dot) = mantissa.find('.') else {
        return false;
    };
    let (int_part, frac) = (&mantissa[..dot], &mantissa[dot + 1..]);
    if !frac.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return false;
    }
    if int_part.is_empty() {
        // `\.[0-9][0-9_]*` (no sign allowed by PyYAML here, but a sign is harmless to accept
        // only when followed by digits; keep PyYAML's rule).
        return t == b && frac.starts_with(|c: char| c.is_ascii_digit());
    }
    if int_part.contains(':') {
        let mut parts = int_part.split(':');
        let head = parts.next().unwrap_or("");
        let head_ok = head.starts_with(|c: char| c.is_ascii_digit())
            && head.chars().all(|c| c.is_ascii_digit() || c == '_');
        return head_ok && b.find(['e', 'E']).is_none() && parts.all(is_sexagesimal_part);
    }
    int_part.starts_with(|c: char| c.is_ascii_digit())
        && int_part.chars().all(|c| c.is_ascii_digit() || c == '_')
}

fn parse_float(t: &str) -> Option<f64> {
    let cleaned: String = t.chars().filter(|&c| c != '_').collect();
    let (neg, b) = split_sign(&cleaned);
    let sign = if neg { -1.0 } else { 1.0 };
    match b.to_ascii_lowercase().as_str() {
        ".inf" => return Some(sign * f64::INFINITY),
        ".nan" => return Some(f64::NAN),
        _ => {}
    }
    if b.contains(':') {
        let mut acc = 0.0f64;
        for part in b.split(':') {
            acc = acc * 60.0 + part.parse::<f64>().ok()?;
        }
        return Some(sign * acc);
    }
    let v: f64 = b.parse().ok()?;
    Some(sign * v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(t: &str) -> Yaml {
        parse(&format!("k: {t}\n"), "t.yaml")
            .unwrap()
            .get("k")
            .unwrap()
            .value
            .clone()
    }

    #[test]
    fn yaml11_scalars_resolve_like_pyyaml() {
        assert_eq!(scalar("2_063_837"), Yaml::Int(2_063_837));
        assert_eq!(scalar("010"), Yaml::Int(8));
        assert_eq!(scalar("0x1F"), Yaml::Int(31));
        assert_eq!(scalar("1:30"), Yaml::Int(90));
        assert_eq!(scalar("yes"), Yaml::Bool(true));
        assert_eq!(scalar("Off"), Yaml::Bool(false));
        assert_eq!(scalar("1e3"), Yaml::Str("1e3".into()));
        assert_eq!(scalar("1.0e+3"), Yaml::Float(1000.0));
        assert_eq!(scalar("0.95"), Yaml::Float(0.95));
        assert_eq!(scalar(".5"), Yaml::Float(0.5));
        assert_eq!(scalar("'8'"), Yaml::Str("8".into()));
        assert_eq!(scalar("~"), Yaml::Null);
        assert_eq!(scalar(""), Yaml::Null);
        assert_eq!(scalar("v0.5.16"), Yaml::Str("v0.5.16".into()));
        assert_eq!(scalar("0.3.12.post1"), Yaml::Str("0.3.12.post1".into()));
        assert_eq!(scalar("1.0"), Yaml::Float(1.0));
    }

    #[test]
    fn duplicate_keys_are_rejected_with_both_lines() {
        let e = parse("a: 1\nb: 2\na: 3\n", "f.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.yaml:3:1: duplicate key 'a' (first defined at line 1)"
        );
    }

    #[test]
    fn positions_are_one_based() {
        let n = parse("top:\n  inner: [1, 2]\n", "f.yaml").unwrap();
        let inner = n.get("top").unwrap().get("inner").unwrap();
        assert_eq!(inner.pos, Pos { line: 2, col: 10 });
    }

    #[test]
    fn anchors_and_merge_keys() {
        let n = parse("a: &x {p: 1, q: 2}\nb:\n  <<: *x\n  q: 3\n", "f.yaml").unwrap();
        let b = n.get("b").unwrap();
        assert_eq!(b.get("p").unwrap().value, Yaml::Int(1));
        assert_eq!(b.get("q").unwrap().value, Yaml::Int(3));
    }

    #[test]
    fn syntax_errors_name_the_position() {
        let e = parse("a: [1, 2\nb: 3\n", "f.yaml").unwrap_err();
        assert!(e.to_string().starts_with("f.yaml:"), "{e}");
    }
}
