//! The Prometheus text exposition format (what vLLM, SGLang, llama.cpp and `inferbench sim`
//! serve on `/metrics`), parsed into flat samples. Pure: the GET is the caller's. Names keep
//! their colons (`vllm:num_requests_running`), which some parser crates drop.

/// One sample of the Prometheus text format: `name{labels} value`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sample {
    /// Metric name, e.g. `llamacpp:tokens_predicted_total`.
    pub name: String,
    /// The label set as written, without braces (`model_name="x"`), empty when none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub labels: String,
    /// Value (`NaN`/`+Inf` are kept as IEEE values and serialized as null).
    pub value: f64,
}

/// Parses Prometheus text exposition: comment and blank lines skipped, lines that do not parse
/// ignored (never an error: telemetry must not fail a point).
pub fn parse_prometheus(text: &str) -> Vec<Sample> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        // The label set ends at the last `}` (a quoted label value may contain one).
        let (name_labels, rest) = match line.rfind('}') {
            Some(close) if line[..close].contains('{') => {
                (&line[..=close], line[close + 1..].trim())
            }
            _ => match line.split_once(char::is_whitespace) {
                Some((a, b)) => (a, b.trim()),
                None => continue,
            },
        };
        let value_text = rest.split_whitespace().next().unwrap_or("");
        let value = match value_text {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            "NaN" => f64::NAN,
            v => match v.parse::<f64>() {
                Ok(x) => x,
                Err(_) => continue,
            },
        };
        let (name, labels) = match name_labels.split_once('{') {
            Some((n, l)) => (n, l.strip_suffix('}').unwrap_or(l)),
            None => (name_labels, ""),
        };
        out.push(Sample {
            name: name.to_string(),
            labels: labels.to_string(),
            value,
        });
    }
    out
}

/// Parses a label set as [`Sample::labels`] holds it (`a="x",b="y"`, no braces) into name →
/// value, undoing the exposition escapes `\\`, `\"` and `\n`. Malformed tails are dropped (never an
/// error).
pub fn parse_labels(labels: &str) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    let mut rest = labels.trim();
    while !rest.is_empty() {
        let Some((name, after)) = rest.split_once('=') else {
            break;
        };
        let name = name.trim().trim_start_matches(',').trim();
        let after = after.trim_start();
        let Some(body) = after.strip_prefix('"') else {
            break;
        };
        let mut value = String::new();
        let mut chars = body.char_indices();
        let mut end = None;
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, o)) => value.push(o),
                    None => break,
                },
                '"' => {
                    end = Some(i);
                    break;
                }
                o => value.push(o),
            }
        }
        let Some(end) = end else {
            break;
        };
        if !name.is_empty() {
            out.insert(name.to_string(), value);
        }
        rest = body[end + 1..]
            .trim_start()
            .trim_start_matches(',')
            .trim_start();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_labels_and_values() {
        let text = "# HELP x y\n# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total 512\nvllm:num_requests_running{model_name=\"m\",engine=\"0\"} 3.0\nh_bucket{le=\"+Inf\"} 7 1700000000\nbad line here\nnan_metric NaN\n\n";
        let s = parse_prometheus(text);
        assert_eq!(s.len(), 4, "{s:?}");
        assert_eq!(s[0].name, "llamacpp:tokens_predicted_total");
        assert_eq!(s[0].value, 512.0);
        assert_eq!(s[1].labels, "model_name=\"m\",engine=\"0\"");
        assert_eq!(s[1].value, 3.0);
        assert_eq!(
            (s[2].name.as_str(), s[2].labels.as_str(), s[2].value),
            ("h_bucket", "le=\"+Inf\"", 7.0)
        );
        assert!(s[3].value.is_nan());
        let s = parse_prometheus("m{a=\"x}y\",b=\"2\"} 5\n");
        assert_eq!(
            (s[0].labels.as_str(), s[0].value),
            ("a=\"x}y\",b=\"2\"", 5.0)
        );
    }

    #[test]
    fn label_sets_parse_with_escapes() {
        let m = parse_labels("a=\"x}y\",b=\"q\\\"z\\\\\", le=\"+Inf\"");
        assert_eq!(m.len(), 3);
        assert_eq!(m["a"], "x}y");
        assert_eq!(m["b"], "q\"z\\");
        assert_eq!(m["le"], "+Inf");
        assert!(parse_labels("").is_empty());
        assert_eq!(parse_labels("a=\"1\",broken").len(), 1);
    }
}
