//! `serve --redact`: what the dashboard serves without the stored absolute paths and host names
//! (a run's source path and batch directory, `job.json`'s output directories and server URL,
//! the host it ran on). Applied to every answer by [`layer`]: JSON strings and CSV fields are
//! rewritten ([`text`]), keys naming a host have their value replaced, and a run's kept files
//! (logs, `job.json`), which hold both in free text, are not served.
//!
//! Rules: a path becomes `(path H)`, `H` 8 hex digits of a hash of the whole path (the same path
//! always the same `H`, so batches stay apart and a `batch=` filter can name one), nothing of its
//! names kept (issue 39, fresh tester's finding 6: `…/rd/secretdir` and the batch label
//! `rd/secretdir` were served): an absolute path (`/home/ann/sweeps/h200/x`) or one from `~/`,
//! `./`, `../` anywhere in a string, and the whole value, when it holds a `/`, of a key naming a
//! path (a key containing `path`, `dir`, `file` or `batch`: `source_path`, `result_dir`,
//! `batch_label`, which shows its sibling `batch`'s redaction); a URL's host
//! (`http://gpu-07:8000/v1`) becomes `(host)`; the value of a key containing `host` or `node`
//! becomes `(redacted)`. The API's own links (`/api/…`, `/run?…`) are kept.

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// What replaces a host name.
pub const HOST: &str = "(host)";
/// What replaces the value of a host-naming key.
pub const REDACTED: &str = "(redacted)";

/// The largest answer rewritten (bytes); a larger one is refused rather than served unredacted.
const MAX_BODY: usize = 256 * 1024 * 1024;

/// `p` (a path) as `(path H)`, `H` the first 8 hex digits of its 64-bit FNV-1a hash (stable
/// across runs and builds); the API's own links unchanged.
fn path(p: &str) -> String {
    if p.starts_with("/api/") || p.starts_with("/run?") || p.starts_with("/assets/") {
        return p.to_string();
    }
    if p.split('/').all(str::is_empty) {
        return p.to_string();
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in p.trim_end_matches('/').bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("(path {:08x})", h >> 32)
}

/// One whitespace-free token: an absolute path (after any `KEY=` or opening punctuation) or
/// a URL's host, rewritten.
fn token(t: &str) -> String {
    if let Some(i) = t.find("://") {
        let (scheme, rest) = t.split_at(i + 3);
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (auth, tail) = rest.split_at(end);
        if auth.is_empty() {
            return t.to_string();
        }
        // Keep a port; drop any user:password@ with the host.
        let hostport = auth.rsplit('@').next().unwrap_or(auth);
        let port = match hostport.rfind(':') {
            Some(i)
                if i + 1 < hostport.len()
                    && hostport[i + 1..].bytes().all(|b| b.is_ascii_digit()) =>
            {
                &hostport[i..]
            }
            _ => "",
        };
        return format!("{scheme}{HOST}{port}{tail}");
    }
    // Where a path starts: at the token's start, or after `=` or opening punctuation; `~/`,
    // `./` and `../` start one too.
    let opens = |i: usize| {
        i == 0
            || t[..i]
                .chars()
                .last()
                .is_some_and(|p| "=([{<\"'`:,".contains(p))
    };
    let start = t
        .char_indices()
        .find(|&(i, c)| {
            opens(i)
                && (c == '/'
                    || ["~/", "./", "../"]
                        .iter()
                        .any(|pre| t[i..].starts_with(pre)))
        })
        .map(|(i, _)| i);
    let Some(i) = start else {
        return t.to_string();
    };
    let body = &t[i..];
    // Closing punctuation stays outside.
    let end = body
        .trim_end_matches([')', ']', '}', '>', '"', '\'', '`', ',', ';', ':', '.'])
        .len();
    if end <= 1 {
        return t.to_string();
    }
    format!("{}{}{}", &t[..i], path(&body[..end]), &body[end..])
}

/// The stored batches as free text may name them (fresh tester of issue 39 §5, item 2: notes
/// and errors said "stored: …, results/b1" and "(batch results/b1)", relative labels that
/// [`text`]'s path rule does not see), each with its shown form ([`batch`]): every stored
/// batch holding a `/`, and its label as tables show it
/// ([`inferbench_core::text::batch_label`]). [`layer`] reads them from the store for every
/// answer it rewrites, so every string the API returns, notes and errors included, is
/// redacted at the one place answers are serialized.
#[derive(Debug, Clone, Default)]
pub struct Batches {
    /// (as written, shown), longest first.
    names: Vec<(String, String)>,
}

impl Batches {
    /// The names of `stored` (the stored batches, as the store holds them) to hide.
    pub fn new(stored: impl IntoIterator<Item = String>) -> Batches {
        let mut names: Vec<(String, String)> = Vec::new();
        for b in stored.into_iter().filter(|b| batch(b) != *b) {
            let shown = batch(&b);
            let label = inferbench_core::text::batch_label(&b);
            for n in [b.clone(), label] {
                if n.contains('/') && !names.iter().any(|(k, _)| *k == n) {
                    names.push((n, shown.clone()));
                }
            }
        }
        names.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        Batches { names }
    }

    /// Every stored batch of `store` ([`inferbench_store::Store::dimension_values`]'s `batch`).
    ///
    /// # Errors
    /// The store's, when it cannot be read.
    pub fn of(
        store: &mut inferbench_store::Store,
    ) -> Result<Batches, inferbench_store::StoreError> {
        let mut dims = store.dimension_values()?;
        Ok(Batches::new(dims.remove("batch").unwrap_or_default()))
    }

    /// `s` with each stored batch name (whole, not part of a longer name: not followed by a
    /// letter, digit, `_` or `-`, nor preceded by one) as its shown form, then [`text`].
    pub fn text(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (name, shown) in &self.names {
            if !out.contains(name.as_str()) {
                continue;
            }
            let word = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
            let mut done = String::with_capacity(out.len());
            let mut rest = out.as_str();
            while let Some(i) = rest.find(name.as_str()) {
                let before = (rest[..i].chars().last()).or_else(|| done.chars().last());
                let after = rest[i + name.len()..].chars().next();
                if before.is_some_and(word) || after.is_some_and(word) {
                    let step = i + name.len();
                    done.push_str(&rest[..step]);
                    rest = &rest[step..];
                    continue;
                }
                done.push_str(&rest[..i]);
                done.push_str(shown);
                rest = &rest[i + name.len()..];
            }
            done.push_str(rest);
            out = done;
        }
        text(&out)
    }
}

/// `s` with each absolute path and URL host rewritten (whitespace kept as it is).
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut word = String::new();
    for c in s.chars() {
        if c.is_whitespace() {
            out.push_str(&token(&word));
            word.clear();
            out.push(c);
        } else {
            word.push(c);
        }
    }
    out.push_str(&token(&word));
    out
}

/// Whether `key` names a host (`host`, `hostname`, `node_list`, `SLURM_NODELIST`, …).
fn host_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.contains("host") || k.contains("node")
}

/// A batch as every answer shows it under `--redact`, and as `batch=` filters match it: a
/// batch with a `/` (a directory, absolute or relative) is one path (`(path H)`); a plain
/// label stays.
pub fn batch(b: &str) -> String {
    if b.contains('/') && !b.contains("://") {
        path(b)
    } else {
        b.to_string()
    }
}

/// Whether `key` names a path (`source_path`, `result_dir`, `requests_file`, `batch`,
/// `batch_label`, …): its value, when it holds a `/`, is one path, relative or not.
fn path_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    ["path", "dir", "file", "batch"]
        .iter()
        .any(|w| k.contains(w))
}

/// `v` redacted in place: strings through [`text`], host-naming keys' values replaced, a
/// path-naming key's value with a `/` as one path, a `batch_label` as its sibling `batch`.
pub fn json(v: &mut Value) {
    json_with(v, &Batches::default());
}

/// [`json`], free text also through `batches` ([`Batches::text`]).
pub fn json_with(v: &mut Value, batches: &Batches) {
    let json = |v: &mut Value| json_with(v, batches);
    match v {
        Value::String(s) => *s = batches.text(s),
        Value::Array(a) => a.iter_mut().for_each(json),
        Value::Object(o) => {
            // The label a batch is shown by: its batch's redaction, so the two agree.
            let batch_shown = (o.get("batch").and_then(Value::as_str))
                .filter(|b| b.contains('/'))
                .map(batch);
            for (k, x) in o.iter_mut() {
                match x {
                    Value::String(s) if host_key(k) && !s.is_empty() => {
                        *s = REDACTED.to_string();
                    }
                    Value::String(s) if k == "batch_label" && batch_shown.is_some() => {
                        *s = batch_shown.clone().unwrap_or_default();
                    }
                    Value::String(s) if path_key(k) && s.contains('/') && !s.contains("://") => {
                        *s = path(s);
                    }
                    _ => json(x),
                }
            }
        }
        _ => {}
    }
}

/// A CSV document with each field through [`text`] (fields split at commas, which our CSV
/// quotes only in free text).
pub fn csv(s: &str) -> String {
    csv_with(s, &Batches::default())
}

/// [`csv`], each field also through `batches` ([`Batches::text`]).
pub fn csv_with(s: &str, batches: &Batches) -> String {
    s.split('\n')
        .map(|line| {
            (line.split(','))
                .map(|f| batches.text(f))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The middleware of `serve --redact`: JSON and CSV answers rewritten (every string, with the
/// store's batch names, [`Batches`]), a run's kept files refused (403, saying why); other
/// answers (pages, scripts) as they are.
pub async fn layer(
    axum::extract::State(state): axum::extract::State<crate::AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let artifact = req.uri().path().contains("/artifacts/");
    if artifact {
        return crate::api::ApiError {
            status: StatusCode::FORBIDDEN,
            message: "not served with --redact: a run's kept files (logs, job.json) hold \
                      absolute paths and host names in free text"
                .into(),
        }
        .into_response();
    }
    let res = next.run(req).await;
    let ctype = (res.headers().get(header::CONTENT_TYPE))
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let is_json = ctype.starts_with("application/json");
    let is_csv = ctype.starts_with("text/csv");
    if !is_json && !is_csv {
        return res;
    }
    let batches = match state
        .with_store(|s| Batches::of(s).map_err(|e| crate::api::ApiError::internal(e.to_string())))
        .await
    {
        Ok(b) => b,
        // Never an answer unredacted: the store's names unknown, no answer.
        Err(e) => return e.into_response(),
    };
    let (mut parts, body) = res.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        return crate::api::ApiError::internal("answer too large to redact").into_response();
    };
    let out = if is_json {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(mut v) => {
                json_with(&mut v, &batches);
                serde_json::to_vec(&v).unwrap_or_default()
            }
            Err(_) => return crate::api::ApiError::internal("answer not JSON").into_response(),
        }
    } else {
        csv_with(&String::from_utf8_lossy(&bytes), &batches).into_bytes()
    };
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json as j;

    /// Issue 39, fresh tester's finding 6: nothing of a path's names is served — an absolute
    /// or `~/`/`./` path anywhere, a path-naming key's value with a `/` (relative too), the
    /// batch label as its batch — hosts are hidden, the API's links kept.
    #[test]
    fn paths_hosts_and_urls_are_hidden_links_kept() {
        assert_eq!(text("/home/ann/sweeps/h200/run-3"), "(path 0663ec2d)");
        assert_eq!(
            text("ingested from /data/ann/x.json, see (/srv/r/a/b)."),
            "ingested from (path a7693391), see ((path 598847e8))."
        );
        assert_eq!(
            text("--out=/scratch/ann/out --url http://gpu-07.lab:8000/v1"),
            "--out=(path 4c865234) --url http://(host):8000/v1"
        );
        assert_eq!(
            text("in ~/rd/secretdir and ./rd/x"),
            "in (path 46d79cbf) and (path a3e225f2)"
        );
        assert_eq!(text("postgres://u:pw@db.lab/x"), "postgres://(host)/x");
        assert_eq!(
            text("/api/v1/runs/3/artifacts/job.json"),
            "/api/v1/runs/3/artifacts/job.json"
        );
        for kept in ["tok/s/GPU", "1024/1024", "h200/run-3", "a / b", "/"] {
            assert_eq!(text(kept), kept);
        }
        // The same path is always the same name; another path another.
        assert_eq!(text("/home/ann/s/h200"), text("/home/ann/s/h200/"));
        assert_ne!(text("/home/ann/s/h200"), text("/home/bob/s/h200"));
        let mut v = j!({"host": "gpu-07", "batch": "/tmp/t4/rd/secretdir", "n": 3,
                        "batch_label": "rd/secretdir", "source_path": "rd/secretdir/c4.json",
                        "group": "Llama 1024/1024 h100", "requests_file": "r.jsonl",
                        "job": {"slurm_nodelist": "gpu[01-04]", "out": "/home/ann/o/p"},
                        "list": ["/a/b/c"], "empty_host": ""});
        json(&mut v);
        assert_eq!(
            v,
            j!({"host": "(redacted)", "batch": "(path 20455a54)", "n": 3,
                "batch_label": "(path 20455a54)", "source_path": "(path 29d26424)",
                "group": "Llama 1024/1024 h100", "requests_file": "r.jsonl",
                "job": {"slurm_nodelist": "(redacted)", "out": "(path 68ee34e8)"},
                "list": ["(path af746e6e)"], "empty_host": ""})
        );
        assert!(!v.to_string().contains("secretdir"));
        assert_eq!(batch("rd/secretdir"), "(path 84dda96c)");
        assert_eq!(batch("my-label"), "my-label");
        assert_eq!(
            csv("batch,conc\n/home/ann/s/h200,4\n"),
            "batch,conc\n(path 77d32339),4\n"
        );
    }

    /// Fresh tester of issue 39 §5, item 2: a stored batch named in free text (a relative
    /// path, or its label as tables show it) is its shown form, whole names only; plain
    /// labels stay.
    #[test]
    fn stored_batch_names_in_free_text_are_hidden() {
        let b = Batches::new([
            "/tmp/x/results/b1".to_string(),
            "results/b2".into(),
            "plain".into(),
        ]);
        let (b1, b2) = (batch("/tmp/x/results/b1"), batch("results/b2"));
        assert_eq!(
            b.text("no stored point has batch=b1 (stored: plain, results/b1, results/b2)"),
            format!("no stored point has batch=b1 (stored: plain, {b1}, {b2})")
        );
        assert_eq!(b.text("(batch results/b1)"), format!("(batch {b1})"));
        assert_eq!(b.text("at /tmp/x/results/b1."), format!("at {b1}."));
        // Not part of a longer name.
        assert_eq!(
            b.text("myresults/b10 results/b1x"),
            "myresults/b10 results/b1x"
        );
        let mut v = j!({"note": "batch results/b2 only", "error": ["in results/b1"]});
        json_with(&mut v, &b);
        assert_eq!(
            v,
            j!({"note": format!("batch {b2} only"), "error": [format!("in {b1}")]})
        );
        assert_eq!(csv_with("note\nresults/b2", &b), format!("note\n{b2}"));
    }
}
