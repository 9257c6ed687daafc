//! GSM8K as InferenceX runs it (reference/inferencex-producer.md §10; its `gsm8k.yaml`, a
//! variant of lm-eval's task): `num_fewshot` worked examples from the train split, then the
//! question; greedy generation; the answer extracted by the `strict-match` filter (the last
//! `#### <number>`) and by `flexible-extract` (the last number-like token); exact match after
//! removing `,`, `$`, everything up to `#### ` and a trailing `.`, case-insensitive. A request
//! that fails (HTTP error, empty text) is a failed sample with its cause, scored as wrong.
//!
//! Few-shot examples: the first `num_fewshot` train questions (deterministic). lm-eval draws
//! them with Python's `random.Random(1234)`; we deliberately do not reproduce that generator,
//! so prompts differ from lm-eval's in which examples they show, not in their form.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use inferbench_client::{
    Backend, CancellationToken, Client, ClientConfig, RequestInput, RequestMeta,
};
use regex::Regex;
use serde::{Deserialize, Serialize};

/// Errors before any request is sent.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The data directory lacks a split file.
    #[error(
        "GSM8K data not found: {0} is missing. The data directory must hold test.jsonl and \
         train.jsonl (openai/grade-school-math, or the openai/gsm8k `main` config); without \
         one the files are downloaded once into the cache"
    )]
    Missing(PathBuf),
    /// The data directory given with `flag` lacks a split file (`path`).
    #[error(
        "{flag}: GSM8K data not found: {path} is missing; the directory must hold test.jsonl \
         and train.jsonl (openai/grade-school-math, or the openai/gsm8k `main` config); without \
         {flag} the files are downloaded once into the cache"
    )]
    NotInGiven {
        /// The caller's flag (`--data-dir`, a sweep's `--eval-data-dir`).
        flag: &'static str,
        /// The missing file.
        path: PathBuf,
    },
    /// A line of a split file is not `{"question": …, "answer": …}`.
    #[error("{file}:{line}: {msg}")]
    BadLine {
        /// The file.
        file: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        msg: String,
    },
    /// Reading a file failed.
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
    /// An input file that cannot be read as a split: not a regular file (a device, a FIFO),
    /// or larger than [`MAX_SPLIT_FILE_BYTES`]; the text names the file and the problem.
    #[error("{0}")]
    Input(String),
    /// The client could not be built (bad URL, …).
    #[error("{0}")]
    Client(String),
    /// No data directory given (`flag`), nothing cached, and the download failed.
    #[error(
        "GSM8K data: no {flag} given and the download of {url} failed ({why}). Offline? \
         Pass {flag} DIR holding test.jsonl and train.jsonl (openai/grade-school-math, or \
         the openai/gsm8k `main` config; it also fills the cache), or set \
         INFERBENCH_GSM8K_URL to a mirror"
    )]
    Download {
        /// The caller's flag for a data directory (`--data-dir`, a sweep's `--eval-data-dir`).
        flag: &'static str,
        /// What was fetched.
        url: String,
        /// Why it failed.
        why: String,
    },
}

/// Where GSM8K is published: OpenAI's `grade-school-math` repository (MIT), its `test.jsonl`
/// (1,319 problems) and `train.jsonl` (the few-shot pool), reference/targets.md §6. Override
/// the base with `INFERBENCH_GSM8K_URL` (a mirror; tests point it at a closed port).
pub const SOURCE_URL: &str =
    "https://raw.githubusercontent.com/openai/grade-school-math/master/grade_school_math/data";

/// sha256 of the published files (targets.md §6 for test.jsonl; train.jsonl as published).
pub const SHA256: [(&str, &str); 2] = [
    (
        "test.jsonl",
        "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14",
    ),
    (
        "train.jsonl",
        "17f347dc51477c50d4efb83959dbb7c56297aba886e5544ee2aaed3024813465",
    ),
];

/// The download cache: `$INFERBENCH_CACHE_DIR/gsm8k`, else `$XDG_CACHE_HOME/inferbench/gsm8k`,
/// else `~/.cache/inferbench/gsm8k`.
pub fn cache_dir() -> PathBuf {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    env("INFERBENCH_CACHE_DIR")
        .or_else(|| env("XDG_CACHE_HOME").map(|d| d.join("inferbench")))
        .or_else(|| env("HOME").map(|h| h.join(".cache/inferbench")))
        .unwrap_or_else(|| PathBuf::from(".cache/inferbench"))
        .join("gsm8k")
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// [`SOURCE_URL`], or `INFERBENCH_GSM8K_URL` when set.
pub fn source_url() -> String {
    std::env::var("INFERBENCH_GSM8K_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| SOURCE_URL.to_string())
}

/// The proxy a download of `url` goes through by the client's rule
/// ([`inferbench_client::proxy::ProxyEnv`] and [`inferbench_client::proxy::used_for`]: the
/// environment's `https_proxy`/`http_proxy` unless the host is loopback or `NO_PROXY` exempts
/// it), as the environment gives it (credentials kept); `None` when direct.
fn download_proxy(url: &str) -> Option<String> {
    let env = inferbench_client::proxy::ProxyEnv::from_env();
    let raw = env.for_url(url)?;
    inferbench_client::proxy::used_for(url, Some(&raw), env.no_proxy.as_deref())?;
    Some(raw)
}

/// Why the download of `url` failed (`e`): through a `proxy` that could not be connected to
/// (refused, unreachable, its name unknown), the client's own words for a proxy it cannot reach
/// ([`inferbench_client::pool::ConnectError::Proxy`]) and the one advice for it
/// ([`inferbench_client::http::unreachable_advice`]), not "Offline?" alone; else ureq's.
fn download_failure(e: ureq::Error, proxy: Option<&str>, url: &str) -> String {
    use std::io::ErrorKind as K;
    let connect = match &e {
        ureq::Error::Io(io) => matches!(
            io.kind(),
            K::ConnectionRefused
                | K::HostUnreachable
                | K::NetworkUnreachable
                | K::AddrNotAvailable
                | K::TimedOut
        ),
        ureq::Error::HostNotFound | ureq::Error::ConnectionFailed => true,
        _ => false,
    };
    match proxy.and_then(|p| inferbench_client::proxy::Proxy::parse(p).ok()) {
        Some(p) if connect => {
            let source = match e {
                ureq::Error::Io(io) => io,
                other => std::io::Error::other(other.to_string()),
            };
            let https = url
                .get(..8)
                .is_some_and(|s| s.eq_ignore_ascii_case("https://"));
            let msg = inferbench_client::pool::ConnectError::Proxy {
                addr: format!("{}:{}", p.host, p.port),
                var: inferbench_client::proxy::variable_for(https),
                source,
            }
            .to_string();
            let advice = inferbench_client::http::unreachable_advice(&msg);
            format!("{msg}; {advice}")
        }
        _ => e.to_string(),
    }
}

/// The directory to read GSM8K from: `given` as it is (checked by [`load_split`]; when it
/// holds both files with the published checksums and the cache does not, they are also copied
/// into the cache, so that a later run without it works offline: trial 16); else `cache`
/// (normally [`cache_dir`]) when both files are there with the published checksums; else both
/// files downloaded from `source` (normally [`source_url`]) into the cache (checksums
/// verified, written atomically). `flag` is the caller's flag for `given` (`--data-dir`, a
/// sweep's `--eval-data-dir`), named in errors. Blocking: call it off the async runtime's
/// threads.
///
/// Errors: [`EvalError::Download`] when the download fails (offline, a proxy, a bad mirror)
/// or a checksum differs, naming the URL and `flag` as the way around.
pub fn resolve_data_dir(
    given: Option<&Path>,
    cache: &Path,
    source: &str,
    flag: &'static str,
) -> Result<PathBuf, EvalError> {
    let published = |dir: &Path| {
        (SHA256.iter())
            .map(|(f, sum)| {
                // Only a regular file of a split's size is read whole (never a device).
                let p = dir.join(f);
                std::fs::metadata(&p)
                    .ok()
                    .filter(|m| m.is_file() && m.len() <= MAX_SPLIT_FILE_BYTES)
                    .and_then(|_| std::fs::read(&p).ok())
                    .filter(|b| sha256_hex(b) == *sum)
            })
            .collect::<Option<Vec<Vec<u8>>>>()
    };
    if let Some(d) = given {
        // Missing means nothing there; a file that is there but not a regular file (a
        // symlink to /dev/zero) is named by `load_split` as what it is (issue 39, fresh tester).
        if let Some(f) = (SHA256.iter()).find(|(f, _)| std::fs::metadata(d.join(f)).is_err()) {
            return Err(EvalError::NotInGiven {
                flag,
                path: d.join(f.0),
            });
        }
        if published(cache).is_none() {
            if let Some(bodies) = published(d) {
                // Best effort: a cache that cannot be written only means no offline reuse.
                let _ = write_cache(cache, SHA256.iter().map(|(f, _)| *f).zip(bodies));
            }
        }
        return Ok(d.to_path_buf());
    }
    let dir = cache.to_path_buf();
    if published(&dir).is_some() {
        return Ok(dir);
    }
    let base = source;
    // Through the proxy the client's one rule picks (the benchmark's requests take the same),
    // so that a dead one is named as what could not be reached (issue 39's leftovers, 4).
    let proxy = download_proxy(base).filter(|p| ureq::Proxy::new(p).is_ok());
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(120)))
        .proxy(proxy.as_deref().and_then(|p| ureq::Proxy::new(p).ok()))
        .build()
        .into();
    // Both files are fetched and checked before the cache directory is touched: a failed
    // download (offline) leaves nothing behind (trial 8 found an empty cache directory).
    let mut bodies = Vec::with_capacity(SHA256.len());
    for (f, sum) in SHA256 {
        let url = format!("{}/{f}", base.trim_end_matches('/'));
        let fail = |why: String| EvalError::Download {
            flag,
            url: url.clone(),
            why,
        };
        let body = agent
            .get(&url)
            .call()
            .map_err(|e| fail(download_failure(e, proxy.as_deref(), &url)))?
            .body_mut()
            .with_config()
            .limit(64 * 1024 * 1024)
            .read_to_vec()
            .map_err(|e| fail(e.to_string()))?;
        let got = sha256_hex(&body);
        if got != sum {
            return Err(fail(format!("sha256 {got}, expected {sum}")));
        }
        bodies.push((f, body));
    }
    write_cache(&dir, bodies)?;
    Ok(dir)
}

/// Writes the split files `(name, body)` into the cache directory `dir` (created), each
/// atomically (`<name>.part`, then renamed).
fn write_cache<'a>(
    dir: &Path,
    files: impl IntoIterator<Item = (&'a str, Vec<u8>)>,
) -> Result<(), EvalError> {
    std::fs::create_dir_all(dir).map_err(|e| EvalError::Io(dir.to_path_buf(), e))?;
    for (f, body) in files {
        let tmp = dir.join(format!("{f}.part"));
        std::fs::write(&tmp, &body)
            .and_then(|()| std::fs::rename(&tmp, dir.join(f)))
            .map_err(|e| EvalError::Io(dir.join(f), e))?;
    }
    Ok(())
}

/// One GSM8K problem.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Problem {
    /// The word problem.
    pub question: String,
    /// The worked solution, ending `#### <number>`.
    pub answer: String,
}

/// Longest line of a split, bytes: 1 MiB (GSM8K's lines are under 2 KiB). A longer line is
/// refused naming it, before it is read further (issue 39 §2: a sparse 3 GB `test.jsonl` was
/// read whole and failed "out of memory").
pub const MAX_SPLIT_LINE_BYTES: usize = 1 << 20;

/// Largest split file read, bytes: 256 MiB (GSM8K's `train.jsonl` is about 4 MB); a larger
/// one is refused naming its size before it is read.
pub const MAX_SPLIT_FILE_BYTES: u64 = 256 << 20;

/// Reads a split (`test.jsonl` / `train.jsonl`): one JSON object per line; errors name file
/// and line. The whole split: [`load_split_first`] without a limit.
pub fn load_split(path: &Path) -> Result<Vec<Problem>, EvalError> {
    load_split_first(path, None)
}

/// The first `limit` problems of a split (all without one), read a line at a time and no
/// further than they go (issue 39 §2: `--limit 5` on a 375 MB `test.jsonl` peaked at 785 MB
/// and aborted under `ulimit -v`), through the dataset loader's JSONL reader
/// ([`inferbench_workload::files::open_jsonl`]) and its hints (issue 39, fresh tester): a
/// leading UTF-8 byte-order mark skipped, CR-only line ends, UTF-16/32 text and a file that is
/// not regular (a device, a FIFO, a symlink to `/dev/zero`) named as such with their fixes.
/// Errors: [`EvalError::Missing`] when nothing is at `path`; [`EvalError::Io`] when it cannot
/// be read; [`EvalError::Input`] for a file that is not regular or too large;
/// [`EvalError::BadLine`] (file and line named) for a line longer than
/// [`MAX_SPLIT_LINE_BYTES`], not UTF-8, or not a `{"question", "answer"}` object.
pub fn load_split_first(path: &Path, limit: Option<usize>) -> Result<Vec<Problem>, EvalError> {
    use inferbench_workload::files::{jsonl_line_problem, open_jsonl};
    use inferbench_workload::WorkloadError;
    // Missing means nothing there (a dangling symlink too); anything else is read and named.
    if std::fs::metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Err(EvalError::Missing(path.to_path_buf()));
    }
    let from = |e: WorkloadError| match e {
        WorkloadError::Io { path, source } => EvalError::Io(path, source),
        WorkloadError::Parse {
            path,
            line: Some(line),
            reason,
        } => EvalError::BadLine {
            file: path,
            line,
            msg: reason,
        },
        other => EvalError::Input(other.to_string()),
    };
    let mut lines = open_jsonl(path, MAX_SPLIT_FILE_BYTES, MAX_SPLIT_LINE_BYTES).map_err(from)?;
    let mut out = Vec::new();
    while limit.is_none_or(|l| out.len() < l) {
        let Some((line, text)) = lines.next_line().map_err(from)? else {
            break;
        };
        let bad = |msg: String| EvalError::BadLine {
            file: path.into(),
            line,
            msg,
        };
        if let Some(r) = jsonl_line_problem(text) {
            return Err(bad(r));
        }
        if text.trim().is_empty() {
            continue;
        }
        let p = serde_json::from_str::<Problem>(text).map_err(|e| {
            let why = inferbench_workload::dataset::invalid_json(&e, text);
            // A JSON object of another shape (serde's "missing field", "invalid type") says
            // what a split line must be.
            if why.starts_with("invalid JSON: ") && e.is_data() {
                bad(format!("not a {{\"question\", \"answer\"}} object: {e}"))
            } else {
                bad(why)
            }
        })?;
        out.push(p);
    }
    Ok(out)
}

/// `doc_to_text` of InferenceX's gsm8k.yaml.
pub fn doc_to_text(question: &str) -> String {
    format!(
        "Question: {question}\nEnd your response with the answer on the last line, formatted as: #### [number]\nAnswer:"
    )
}

/// The prompt of one test question: each shot as `doc_to_text + " " + answer`, separated by a
/// blank line, then the question's `doc_to_text` (lm-eval's delimiters).
pub fn prompt(shots: &[Problem], question: &str) -> String {
    let mut s = String::new();
    for p in shots {
        s.push_str(&doc_to_text(&p.question));
        s.push(' ');
        s.push_str(&p.answer);
        s.push_str("\n\n");
    }
    s.push_str(&doc_to_text(question));
    s
}

/// lm-eval's "no match" value.
pub const INVALID: &str = "[invalid]";

fn strict_re() -> &'static Regex {
    static R: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    R.get_or_init(|| Regex::new(r"#### (\-?[0-9\.\,]+)").expect("valid regex"))
}

fn flexible_re() -> &'static Regex {
    static R: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    R.get_or_init(|| Regex::new(r"(-?[$0-9.,]{2,})|(-?[0-9]+)").expect("valid regex"))
}

/// The last match of `re` in `text` (its first non-empty group), or [`INVALID`].
fn last_match(re: &Regex, text: &str) -> String {
    re.captures_iter(text)
        .last()
        .and_then(|c| {
            (1..c.len())
                .filter_map(|i| c.get(i))
                .map(|m| m.as_str())
                .find(|s| !s.is_empty())
                .map(str::to_string)
        })
        .unwrap_or_else(|| INVALID.to_string())
}

/// `strict-match`: the number of the last `#### <number>`.
pub fn strict(response: &str) -> String {
    last_match(strict_re(), response)
}

/// `flexible-extract`: the last number-like token.
pub fn flexible(response: &str) -> String {
    last_match(flexible_re(), response)
}

/// exact_match's normalization: remove `,`, `$`, everything up to the last `#### `, one
/// trailing `.`; lowercase.
pub fn normalize(s: &str) -> String {
    let s = s.replace([',', '$'], "");
    let s = match s.rfind("#### ") {
        Some(i) => s[i + 5..].to_string(),
        None => s,
    };
    let s = s.strip_suffix('.').unwrap_or(&s);
    s.to_lowercase()
}

/// Whether an extracted answer matches the target solution.
pub fn is_match(extracted: &str, target_answer: &str) -> bool {
    normalize(extracted) == normalize(target_answer)
}

/// Options of one eval run.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// Server root (`http://127.0.0.1:8000`).
    pub base_url: String,
    /// Model name sent in requests.
    pub model: String,
    /// Completions or chat (the 5-shot text is one user message, as lm-eval with
    /// `--apply_chat_template` and without multi-turn few-shot).
    pub backend: Backend,
    /// Directory with `test.jsonl` and `train.jsonl`.
    pub data_dir: PathBuf,
    /// First N test questions (`None`: all 1,319).
    pub limit: Option<usize>,
    /// Worked examples per prompt (InferenceX: 5).
    pub num_fewshot: usize,
    /// Requests in flight.
    pub concurrency: usize,
    /// Output tokens per answer.
    pub max_tokens: u32,
    /// Per-request timeout (lm-eval's 1,800 s).
    pub request_timeout: Duration,
    /// A request fails after this long without a byte (`bench`'s default,
    /// [`inferbench_client::http::DEFAULT_IDLE_TIMEOUT`]: 600 s): a hung server ends the eval
    /// before the 1,800 s total.
    pub idle_timeout: Duration,
    /// How an `https://` server is verified (`--tls-ca`, `--insecure`): its requests and the
    /// `/v1/models` lookups alike.
    pub tls: inferbench_client::tls::TlsOptions,
}

impl EvalOptions {
    /// How the side requests (`/v1/models`) reach the server: TLS as [`EvalOptions::tls`],
    /// direct (the eval's requests take no proxy).
    pub fn reach(&self) -> inferbench_client::Reach {
        inferbench_client::Reach {
            tls: self.tls.clone(),
            ..Default::default()
        }
    }
}

/// One scored question (a line of `samples_gsm8k.jsonl`).
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Index in the test split.
    pub doc_id: usize,
    /// The prompt sent.
    pub prompt: String,
    /// The generated text (empty on failure).
    pub response: String,
    /// `strict-match` extraction.
    pub strict: String,
    /// `flexible-extract` extraction.
    pub flexible: String,
    /// The target solution's number.
    pub target: String,
    /// Strict extraction matched.
    pub pass_strict: bool,
    /// Flexible extraction matched.
    pub pass_flexible: bool,
    /// Why the request failed, when it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Cancelled by Ctrl-C / SIGTERM before it was answered: not scored (neither right nor
    /// wrong), as cancelled requests are no failures anywhere in inferbench.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
    /// The failed request's class (`connect` for a server that could not be reached); not
    /// written to `samples_gsm8k.jsonl`, whose lines keep lm-eval's shape.
    #[serde(skip)]
    pub error_class: Option<inferbench_core::ErrorClass>,
}

/// Scores of a run: mean exact match and its standard error (sample standard deviation ÷ √n,
/// lm-eval's `mean_stderr`) per filter, over the samples not cancelled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scores {
    /// Questions scored (cancelled ones left out).
    pub n: usize,
    /// Questions cancelled by an interruption before their answer (not scored).
    pub cancelled: usize,
    /// Requests that failed (scored as wrong).
    pub failed: usize,
    /// strict-match exact match, 0–1.
    pub strict: f64,
    /// Its standard error.
    pub strict_stderr: f64,
    /// flexible-extract exact match, 0–1.
    pub flexible: f64,
    /// Its standard error.
    pub flexible_stderr: f64,
}

fn mean_stderr(xs: &[bool]) -> (f64, f64) {
    let n = xs.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mean = xs.iter().filter(|x| **x).count() as f64 / n as f64;
    if n < 2 {
        return (mean, 0.0);
    }
    let var = xs
        .iter()
        .map(|&x| (f64::from(u8::from(x)) - mean).powi(2))
        .sum::<f64>()
        / (n - 1) as f64;
    (mean, (var / n as f64).sqrt())
}

/// Scores samples; cancelled ones are counted apart and not scored.
pub fn score(samples: &[Sample]) -> Scores {
    let scored: Vec<&Sample> = samples.iter().filter(|x| !x.cancelled).collect();
    let s: Vec<bool> = scored.iter().map(|x| x.pass_strict).collect();
    let f: Vec<bool> = scored.iter().map(|x| x.pass_flexible).collect();
    let (strict, strict_stderr) = mean_stderr(&s);
    let (flexible, flexible_stderr) = mean_stderr(&f);
    Scores {
        n: scored.len(),
        cancelled: samples.len() - scored.len(),
        failed: scored.iter().filter(|x| x.error.is_some()).count(),
        strict,
        strict_stderr,
        flexible,
        flexible_stderr,
    }
}

/// The pass mark for `model_prefix` (InferenceX's `thresholds.yaml`, PR #1721): per model,
/// else the task default 0.90.
pub fn threshold(model_prefix: Option<&str>) -> f64 {
    const MODELS: &[(&str, f64)] = &[
        ("dsr1", 0.91),
        ("dsv4", 0.91),
        ("glm5", 0.94),
        ("glm5.1", 0.93),
        ("gptoss", 0.91),
        ("kimik2.5", 0.90),
        ("minimaxm2.5", 0.92),
        ("qwen3.5", 0.94),
    ];
    model_prefix
        .and_then(|p| MODELS.iter().find(|(m, _)| *m == p).map(|(_, t)| *t))
        .unwrap_or(0.90)
}

/// Runs the eval: loads the splits, sends every prompt (`concurrency` at a time) and scores
/// the answers. Samples come back in test-split order.
pub async fn run(opts: &EvalOptions, cancel: &CancellationToken) -> Result<Vec<Sample>, EvalError> {
    // Only the problems the run uses are read (issue 39 §2).
    let test = load_split_first(&opts.data_dir.join("test.jsonl"), opts.limit)?;
    let train = load_split_first(&opts.data_dir.join("train.jsonl"), Some(opts.num_fewshot))?;
    let shots: Vec<Problem> = train.into_iter().take(opts.num_fewshot).collect();
    let n = opts.limit.map_or(test.len(), |l| l.min(test.len()));
    let mut extra = serde_json::Map::new();
    extra.insert("stop".into(), serde_json::json!(["</s>", "<|im_end|>"]));
    extra.insert("top_p".into(), 1.into());
    let client = Arc::new(
        Client::new(ClientConfig {
            base_url: opts.base_url.clone(),
            backend: opts.backend,
            model: opts.model.clone(),
            extra_body: Some(extra),
            request_timeout: Some(opts.request_timeout),
            idle_timeout: opts.idle_timeout,
            tls: opts.tls.clone(),
            ..ClientConfig::default()
        })
        .map_err(|e| EvalError::Client(e.to_string()))?,
    );
    let sem = Arc::new(tokio::sync::Semaphore::new(opts.concurrency.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for (i, p) in test.into_iter().take(n).enumerate() {
        let (client, sem, cancel) = (client.clone(), sem.clone(), cancel.clone());
        let text = prompt(&shots, &p.question);
        let max_tokens = opts.max_tokens;
        tasks.spawn(async move {
            let _permit = sem.acquire_owned().await;
            let rec = client
                .send(
                    &RequestInput {
                        text: &text,
                        messages: None,
                        prompt_tokens: 0,
                        max_tokens: Some(max_tokens),
                    },
                    RequestMeta {
                        request_id: i as u64,
                        ..RequestMeta::default()
                    },
                    &cancel,
                )
                .await;
            let error = if !rec.success {
                Some(rec.error.clone().unwrap_or_else(|| "request failed".into()))
            } else if rec.output_text.trim().is_empty() {
                Some("empty response".into())
            } else {
                None
            };
            let cancelled =
                !rec.success && rec.error_class == Some(inferbench_core::ErrorClass::Cancelled);
            let error_class = rec.error_class;
            let response = rec.output_text;
            let (s, f) = (strict(&response), flexible(&response));
            Sample {
                cancelled,
                doc_id: i,
                pass_strict: error.is_none() && is_match(&s, &p.answer),
                pass_flexible: error.is_none() && is_match(&f, &p.answer),
                strict: s,
                flexible: f,
                target: normalize(&p.answer),
                prompt: text,
                response,
                error,
                error_class,
            }
        });
    }
    let mut out: BTreeMap<usize, Sample> = BTreeMap::new();
    while let Some(r) = tasks.join_next().await {
        if let Ok(s) = r {
            out.insert(s.doc_id, s);
        }
    }
    Ok(out.into_values().collect())
}

/// The results JSON (`results_gsm8k.json`): lm-eval's key names (`exact_match,strict-match`,
/// `exact_match_stderr,strict-match`, …) so InferenceX's collectors read it, plus the config.
pub fn results_json(opts: &EvalOptions, scores: &Scores, threshold: f64) -> serde_json::Value {
    serde_json::json!({
        "results": {"gsm8k": {
            "alias": "gsm8k",
            "exact_match,strict-match": scores.strict,
            "exact_match_stderr,strict-match": scores.strict_stderr,
            "exact_match,flexible-extract": scores.flexible,
            "exact_match_stderr,flexible-extract": scores.flexible_stderr,
        }},
        "n-samples": {"gsm8k": {"effective": scores.n}},
        "failed_samples": scores.failed,
        // An interrupted eval is no score: its file says so and the store does not take it.
        "interrupted": scores.cancelled > 0,
        "cancelled_samples": scores.cancelled,
        "threshold": threshold,
        "config": {
            "model": opts.model,
            "base_url": opts.base_url,
            "backend": opts.backend.name(),
            "num_fewshot": opts.num_fewshot,
            "limit": opts.limit,
            "max_tokens": opts.max_tokens,
            "temperature": 0.0,
            "fewshot_selection": "first train questions",
        },
        // lm-eval's own layout of the task config: InferenceX's collect_eval_results.py finds
        // the strict/flexible values through `metric_list` and `filter_list`, and the model
        // through `model_name`; without them it reads no score.
        "configs": {"gsm8k": {
            "task": "gsm8k",
            "num_fewshot": opts.num_fewshot,
            "metric_list": [{"metric": "exact_match"}],
            "filter_list": [{"name": "strict-match"}, {"name": "flexible-extract"}],
            "metadata": {"model": opts.model},
        }},
        "model_name": opts.model,
        "lm_eval_version": format!("inferbench-{}", env!("CARGO_PKG_VERSION")),
    })
}

/// InferenceX's output budget for a served context length in tokens (producer reference §10.2):
/// context − 4096 above 4096 tokens, else half of it; at most 16,384; 16,384 when unknown.
pub fn default_max_tokens(max_model_len: Option<u32>) -> u32 {
    match max_model_len {
        Some(c) if c > 4096 => (c - 4096).min(16384),
        Some(c) => (c / 2).max(1),
        None => 16384,
    }
}

/// Where [`write_outputs`] put the files.
#[derive(Debug, Clone)]
pub struct Written {
    /// The scores written.
    pub scores: Scores,
    /// `samples_gsm8k.jsonl`: one [`Sample`] per line, in test-split order.
    pub samples: PathBuf,
    /// `results_gsm8k.json`: [`results_json`].
    pub results: PathBuf,
}

/// Name of the results file an eval writes into its directory ([`write_outputs`]).
pub const RESULTS_FILE: &str = "results_gsm8k.json";

/// Name of the per-sample file an eval writes into its directory ([`write_outputs`]).
pub const SAMPLES_FILE: &str = "samples_gsm8k.jsonl";

/// Why an existing `path` may not be replaced by an eval's output (it is not a regular file:
/// a directory, FIFO, device or socket; a symlink is followed), or `None` (issue 39 §1).
pub fn not_regular(path: &Path) -> Option<&'static str> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Some("it is a directory"),
        Ok(m) if !m.is_file() => Some("it is not a regular file"),
        _ => None,
    }
}

/// Writes `bytes` to `path` (through a symbolic link, to the file its chain ends at) through
/// `<path>.tmp` renamed onto it, every error checked (write, sync, rename); a `path` that exists and is not a regular file is never replaced (checked
/// again before the rename). Errors: the OS error, or `InvalidInput` naming the path.
pub fn write_regular(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    // A symbolic link is written through, as every output is (issue 39, fresh tester's
    // finding 4: the rename replaced the link).
    let target = inferbench_core::probe::link_chain_end(path).unwrap_or_else(|| path.to_path_buf());
    let path = target.as_path();
    let refuse = |p: &Path| match not_regular(p) {
        Some(why) => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{}: {why}", p.display()),
        )),
        None => Ok(()),
    };
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    refuse(&tmp)?;
    let _pending = inferbench_core::tempfiles::register(&tmp);
    let res = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_data()?;
        drop(f);
        refuse(path)?;
        std::fs::rename(&tmp, path)
    })();
    if res.is_err() {
        std::fs::remove_file(&tmp).ok();
    }
    res
}

/// Scores `samples` and writes `samples_gsm8k.jsonl` and `results_gsm8k.json` into `dir`
/// (created). The one writer of `inferbench eval` and of evals inside sweeps.
///
/// Errors: creating the directory or writing a file.
pub fn write_outputs(
    dir: &Path,
    opts: &EvalOptions,
    samples: &[Sample],
    threshold: f64,
) -> std::io::Result<Written> {
    let scores = score(samples);
    std::fs::create_dir_all(dir)?;
    let mut jsonl = String::new();
    for s in samples {
        jsonl.push_str(&serde_json::to_string(s).map_err(std::io::Error::other)?);
        jsonl.push('\n');
    }
    let samples_path = dir.join(SAMPLES_FILE);
    write_regular(&samples_path, jsonl.as_bytes())?;
    let results_path = dir.join(RESULTS_FILE);
    let text = serde_json::to_string_pretty(&results_json(opts, &scores, threshold))
        .map_err(std::io::Error::other)?;
    write_regular(&results_path, text.as_bytes())?;
    Ok(Written {
        scores,
        samples: samples_path,
        results: results_path,
    })
}

impl Scores {
    /// Both filters reach `threshold` (InferenceX's validate_scores.py checks every
    /// `exact_match,*` value).
    pub fn passes(&self, threshold: f64) -> bool {
        self.strict >= threshold && self.flexible >= threshold
    }

    /// One line for a terminal: `4 problems (0 failed requests): strict-match 0.7500 ± 0.2500, …`.
    pub fn line(&self) -> String {
        format!(
            "{} problems ({} failed requests{}): strict-match {:.4} ± {:.4}, flexible-extract {:.4} ± {:.4} (exact match, fraction; ± standard error)",
            self.n,
            self.failed,
            if self.cancelled > 0 {
                format!(", {} cancelled by the interruption and not scored", self.cancelled)
            } else {
                String::new()
            },
            self.strict,
            self.strict_stderr,
            self.flexible,
            self.flexible_stderr
        )
    }

    /// Every scored request failed (nothing was measured).
    pub fn all_failed(&self) -> bool {
        self.n > 0 && self.failed == self.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39, fresh tester (finding 4): GSM8K's splits are read by the dataset loader's
    /// JSONL reader with its hints: a UTF-8 byte-order mark skipped (was ":1: … expected value
    /// at line 1 column 1"), CR-only line ends and UTF-16 text named as for a dataset (were
    /// "trailing characters" and "not UTF-8" with no hint), a symlink to `/dev/zero` named as a
    /// character device (was "missing"); a missing file is still "missing".
    #[test]
    fn split_files_get_the_dataset_loaders_input_file_hints() {
        let d = std::env::temp_dir().join(format!("ib-gsm8k-hints-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let line = r#"{"question": "1+1?", "answer": "2\n#### 2"}"#;
        let p = d.join("test.jsonl");
        let at = p.display().to_string();
        let err = |bytes: &[u8]| {
            std::fs::write(&p, bytes).unwrap();
            load_split(&p).unwrap_err().to_string()
        };
        // A UTF-8 byte-order mark: skipped, both problems read.
        std::fs::write(&p, format!("\u{feff}{line}\n{line}\n")).unwrap();
        assert_eq!(load_split(&p).unwrap().len(), 2);
        // CR-only line ends.
        let e = err(format!("{line}\r{line}\r{line}\r").as_bytes());
        assert!(
            e.starts_with(&format!(
                "{at}:1: the file's lines end in a carriage return alone"
            )),
            "{e}"
        );
        assert!(e.contains("tr '\\r' '\\n'"), "{e}");
        // UTF-16 (with its mark): named, as for a dataset.
        let mut wide = vec![0xFF, 0xFE];
        for u in format!("{line}\n").encode_utf16() {
            wide.extend_from_slice(&u.to_le_bytes());
        }
        assert_eq!(
            err(&wide),
            format!(
                "{at}:1: the file is UTF-16 (little-endian) text (it starts with that byte-order \
                 mark); save it as UTF-8"
            )
        );
        // A line of another shape keeps its own wording; broken JSON gets the dataset's.
        let e = err(b"{\"q\": 1}\n");
        assert!(
            e.starts_with(&format!(
                "{at}:1: not a {{\"question\", \"answer\"}} object: "
            )),
            "{e}"
        );
        let e = err(b"{\"question\": \"a\", \"answer\": \"b\"}\rx\n");
        assert!(e.starts_with(&format!("{at}:1: invalid JSON: ")), "{e}");
        assert!(e.contains("carriage return"), "{e}");
        // A symlink to /dev/zero: a character device, refused at once, never "missing".
        #[cfg(unix)]
        {
            let z = d.join("train.jsonl");
            std::os::unix::fs::symlink("/dev/zero", &z).unwrap();
            let e = load_split(&z).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "{}: not a regular file (a character device): only regular files are read",
                    z.display()
                )
            );
        }
        let missing = d.join("nope.jsonl");
        assert!(matches!(
            load_split(&missing),
            Err(EvalError::Missing(m)) if m == missing
        ));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn extraction_and_match_as_lm_eval() {
        let target = "She has 3 + 4 = <<3+4=7>>7 apples.\n#### 1,234";
        assert_eq!(normalize(target), "1234");
        assert_eq!(strict("so #### 12\nthen #### 1,234"), "1,234");
        assert!(is_match(&strict("so #### 12\nthen #### 1,234"), target));
        assert_eq!(strict("The answer is 1234."), INVALID);
        assert_eq!(flexible("The answer is $1,234."), "$1,234.");
        assert!(is_match(&flexible("The answer is $1,234."), target));
        assert_eq!(flexible("x 5 y"), "5");
        assert_eq!(flexible("no digits"), INVALID);
        assert!(!is_match(INVALID, target));
        assert_eq!(normalize("-7."), "-7");
    }

    #[test]
    fn prompt_form_scores_and_thresholds() {
        let shots = vec![Problem {
            question: "1+1?".into(),
            answer: "1+1=2\n#### 2".into(),
        }];
        assert_eq!(
            prompt(&shots, "2+2?"),
            "Question: 1+1?\nEnd your response with the answer on the last line, formatted as: #### [number]\nAnswer: 1+1=2\n#### 2\n\nQuestion: 2+2?\nEnd your response with the answer on the last line, formatted as: #### [number]\nAnswer:"
        );
        let s = |ok: bool| Sample {
            doc_id: 0,
            prompt: String::new(),
            response: String::new(),
            strict: String::new(),
            flexible: String::new(),
            target: String::new(),
            pass_strict: ok,
            pass_flexible: true,
            error: None,
            cancelled: false,
            error_class: None,
        };
        let sc = score(&[s(true), s(false), s(true), s(true)]);
        assert_eq!(sc.strict, 0.75);
        // sample std = sqrt(0.25 * 4/3 ... ) : var = (3·0.0625 + 0.5625)/3 = 0.25; se = 0.5/2
        assert_eq!(sc.strict_stderr, 0.25);
        assert_eq!((sc.flexible, sc.flexible_stderr), (1.0, 0.0));
        assert_eq!(threshold(Some("glm5")), 0.94);
        // InferenceX's output budget (§10.2): an 8k1k row's 9,472-token context → 5,376.
        assert_eq!(default_max_tokens(Some(9472)), 5376);
        assert_eq!(default_max_tokens(Some(4096)), 2048);
        assert_eq!(default_max_tokens(Some(40000)), 16384);
        assert_eq!(default_max_tokens(None), 16384);
        assert!(sc.passes(0.75) && !sc.passes(0.76));
        // Cancelled samples are not scored: 3 of 4 answered, 2 right.
        let mut c = s(false);
        c.cancelled = true;
        let sc = score(&[s(true), s(false), s(true), c]);
        assert_eq!((sc.n, sc.cancelled, sc.strict), (3, 1, 2.0 / 3.0));
        assert_eq!(threshold(Some("smollm2")), 0.90);
        assert_eq!(threshold(None), 0.90);
    }
}
