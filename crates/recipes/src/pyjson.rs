//! JSON text exactly as the reference tools print it.
//!
//! * [`dumps`] = Python's `json.dumps(obj)`: `", "` and `": "` separators, non-ASCII escaped as
//!   `\uXXXX` (UTF-16 surrogate pairs above U+FFFF), floats in `repr` form (`1.0`, `1e-05`,
//!   `1e+16`). This is what `generate_sweep_configs.py` prints.
//! * [`dumps_canonical`] = `json.dumps(obj, sort_keys=True, separators=(",", ":"),
//!   ensure_ascii=True)`, the input of the recipe fingerprint.
//! * [`dumps_compact_ascii`] = `json.dumps(obj, separators=(",", ":"))`, what
//!   `ci_priority.py` prints.
//! * [`dumps_compact`] = pydantic's `model_dump_json()`: no spaces, non-ASCII written raw. This is
//!   what `process_changelog.py` prints.

use serde_json::Value;

/// Output style knobs shared by the three public functions.
#[derive(Clone, Copy)]
struct Style {
    spaced: bool,
    ascii: bool,
    sort_keys: bool,
}

/// `json.dumps(value)` (Python defaults). No trailing newline.
pub fn dumps(value: &Value) -> String {
    let mut out = String::new();
    write_value(
        &mut out,
        value,
        Style {
            spaced: true,
            ascii: true,
            sort_keys: false,
        },
    );
    out
}

/// `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)`.
pub fn dumps_canonical(value: &Value) -> String {
    let mut out = String::new();
    write_value(
        &mut out,
        value,
        Style {
            spaced: false,
            ascii: true,
            sort_keys: true,
        },
    );
    out
}

/// `json.dumps(value, separators=(",", ":"))`: compact, non-ASCII escaped, keys in given order
/// (what `ci_priority.py` prints).
pub fn dumps_compact_ascii(value: &Value) -> String {
    let mut out = String::new();
    write_value(
        &mut out,
        value,
        Style {
            spaced: false,
            ascii: true,
            sort_keys: false,
        },
    );
    out
}

/// pydantic `model_dump_json()`: compact separators, UTF-8 kept as is, keys in given order.
pub fn dumps_compact(value: &Value) -> String {
    let mut out = String::new();
    write_value(
        &mut out,
        value,
        Style {
            spaced: false,
            ascii: false,
            sort_keys: false,
        },
    );
    out
}

fn write_value(out: &mut String, v: &Value, st: Style) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string());
            } else if let Some(f) = n.as_f64() {
                out.push_str(&float_repr(f));
            }
        }
        Value::String(s) => write_str(out, s, st.ascii),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(if st.spaced { ", " } else { "," });
                }
                write_value(out, item, st);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            if st.sort_keys {
                // Python sorts str keys by code point; Rust's `str` order is the same (UTF-8
                // byte order preserves code-point order).
                entries.sort_by(|a, b| a.0.cmp(b.0));
            }
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(if st.spaced { ", " } else { "," });
                }
                write_str(out, k, st.ascii);
                out.push_str(if st.spaced { ": " } else { ":" });
                write_value(out, item, st);
            }
            out.push('}');
        }
    }
}

fn write_str(out: &mut String, s: &str, ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if ascii && (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: the shortest digits that round-trip, in fixed notation when the decimal
/// exponent is in `[-4, 16)`, else `d.ddde±XX`; integral values keep a trailing `.0`.
/// Non-finite values print as `Infinity`, `-Infinity`, `NaN` (what `json.dumps` writes).
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    // `{:e}` gives the shortest round-trip digits, e.g. "1.5e16", "-2.5e-7".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if neg { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        let body = if exp >= 0 {
            let int_len = exp + 1;
            if n <= int_len {
                format!("{}{}.0", digits, "0".repeat((int_len - n) as usize))
            } else {
                format!(
                    "{}.{}",
                    &digits[..int_len as usize],
                    &digits[int_len as usize..]
                )
            }
        } else {
            format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
        };
        format!("{sign}{body}")
    } else {
        let frac = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits.clone()
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{frac}e{esign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn float_repr_matches_python() {
        let cases = [
            (1.0, "1.0"),
            (0.95, "0.95"),
            (100.0, "100.0"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (123456789012345.6, "123456789012345.6"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (0.1 + 0.2, "0.30000000000000004"),
            (3.36, "3.36"),
            (-0.0, "-0.0"),
        ];
        for (f, want) in cases {
            assert_eq!(float_repr(f), want, "{f}");
        }
    }

    #[test]
    fn three_styles() {
        let v = json!({"b": [1, 2.0, "é—"], "a": {"x": true, "y": null}});
        assert_eq!(
            dumps(&v),
            r#"{"b": [1, 2.0, "\u00e9\u2014"], "a": {"x": true, "y": null}}"#
        );
        assert_eq!(
            dumps_canonical(&v),
            r#"{"a":{"x":true,"y":null},"b":[1,2.0,"\u00e9\u2014"]}"#
        );
        assert_eq!(
            dumps_compact(&v),
            r#"{"b":[1,2.0,"é—"],"a":{"x":true,"y":null}}"#
        );
        assert_eq!(dumps(&json!("😀")), r#""\ud83d\ude00""#);
    }
}
