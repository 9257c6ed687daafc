//! Golden acceptance-length curves (InferenceX `golden_al_distribution/*.yaml`): per model key
//! and thinking mode, the measured mean acceptance length for each draft length 1..=8.
//!
//! The files use a fixed, tiny YAML subset (comments, then `model: / mode: / k: AL` nesting by
//! two-space indent), so they are read with a purpose-built line parser instead of a YAML crate.

use std::collections::BTreeMap;

/// `model key → thinking mode → draft length → AL`.
pub type GoldenAl = BTreeMap<String, BTreeMap<String, BTreeMap<u32, f64>>>;

/// A line the parser does not understand, with its 1-based number.
#[derive(Debug, thiserror::Error)]
#[error("{path}:{line}: {reason}")]
pub struct GoldenAlError {
    /// File name as given.
    pub path: String,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// Parses one curve file's text; `path` is only used in errors.
pub fn parse(path: &str, text: &str) -> Result<GoldenAl, GoldenAlError> {
    let mut out = GoldenAl::new();
    let mut model: Option<String> = None;
    let mut mode: Option<String> = None;
    for (i, raw) in text.lines().enumerate() {
        let err = |reason: &str| GoldenAlError {
            path: path.to_string(),
            line: i + 1,
            reason: reason.to_string(),
        };
        let line = raw.split('#').next().unwrap_or("").trim_end();
        if line.trim().is_empty() {
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let body = line.trim_start().trim_start_matches("- ");
        let (key, value) = body
            .split_once(':')
            .ok_or_else(|| err("expected `key:` or `key: value`"))?;
        let (key, value) = (key.trim().to_string(), value.trim());
        match (indent, value.is_empty()) {
            (0, true) => {
                model = Some(key.clone());
                mode = None;
                out.entry(key).or_default();
            }
            (2, true) => {
                let m = model.as_ref().ok_or_else(|| err("mode outside a model"))?;
                out.entry(m.clone())
                    .or_default()
                    .entry(key.clone())
                    .or_default();
                mode = Some(key);
            }
            (4, false) => {
                let (m, t) = match (&model, &mode) {
                    (Some(m), Some(t)) => (m, t),
                    _ => return Err(err("value outside a model/mode")),
                };
                let k: u32 = key
                    .parse()
                    .map_err(|_| err("draft length is not an integer"))?;
                let al: f64 = value.parse().map_err(|_| err("AL is not a number"))?;
                out.entry(m.clone())
                    .or_default()
                    .entry(t.clone())
                    .or_default()
                    .insert(k, al);
            }
            _ => return Err(err("unexpected indentation")),
        }
    }
    Ok(out)
}

/// Looks up the AL of `model` (exact key, or the only model in the file when `None`),
/// `mode` (`thinking_on` default) and draft length `k`.
pub fn lookup(g: &GoldenAl, model: Option<&str>, mode: Option<&str>, k: u32) -> Option<f64> {
    let per_model = match model {
        Some(m) => g.get(m)?,
        None if g.len() == 1 => g.values().next()?,
        None => return None,
    };
    per_model
        .get(mode.unwrap_or("thinking_on"))?
        .get(&k)
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# Source: a run\n# key = k\nqwen-x:\n  thinking_on:\n    1: 1.93\n    2: 2.73\n  thinking_off:\n    1: 1.92\n";

    #[test]
    fn parses_the_curve_format() {
        let g = parse("s.yaml", SAMPLE).unwrap();
        assert_eq!(lookup(&g, None, None, 2), Some(2.73));
        assert_eq!(
            lookup(&g, Some("qwen-x"), Some("thinking_off"), 1),
            Some(1.92)
        );
        assert_eq!(lookup(&g, Some("other"), None, 1), None);
        let e = parse("s.yaml", "m:\n  t:\n    x: 1\n").unwrap_err();
        assert_eq!(e.to_string(), "s.yaml:3: draft length is not an integer");
    }

    #[test]
    fn reads_the_shared_golden_files_when_present() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/inferencex/golden_al_distribution");
        let Ok(rd) = std::fs::read_dir(&dir) else {
            eprintln!("skipping: {} not found", dir.display());
            return;
        };
        let mut n = 0;
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().and_then(|x| x.to_str()) != Some("yaml") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            parse(&p.display().to_string(), &text).unwrap();
            n += 1;
        }
        assert!(n > 0);
        let q = std::fs::read_to_string(dir.join("qwen3.5_mtp.yaml")).unwrap();
        let g = parse("qwen3.5_mtp.yaml", &q).unwrap();
        assert_eq!(
            lookup(&g, Some("qwen3.5-397b-a17b-nvfp4"), Some("thinking_on"), 3),
            Some(3.39)
        );
    }
}
