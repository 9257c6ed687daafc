//! Prompt preparation: the bridge from `inferbench-workload` (tokenizers, random prompts, file
//! datasets) to what the client sends. The loadgen never builds prompts itself.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use inferbench_client::{RequestInput, TokenCounter};
use serde_json::Value;

use crate::options::{limits, BenchOptions, DatasetName, SERVER_TOKENIZER};
use crate::server_tokenizer::{fit_prefix, ServerTokenizer, TokConn};
use inferbench_workload as workload;

/// One prompt ready to send.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchPrompt {
    /// Prompt text (completions `prompt`, or the single chat user message).
    pub text: String,
    /// Full chat `messages` array for multi-turn datasets; `None` = one user message.
    pub messages: Option<Value>,
    /// Client-side prompt tokens under the run's tokenizer.
    pub prompt_tokens: u32,
    /// Requested output tokens (`max_tokens`).
    pub max_tokens: Option<u32>,
    /// Conversation id (multi-turn datasets).
    pub conversation_id: Option<String>,
    /// Turn index (multi-turn datasets).
    pub turn: Option<u32>,
    /// This prompt's own request headers (a dataset line's `extra_headers`), sent after the
    /// fixed and templated ones.
    pub headers: Vec<(String, String)>,
}

impl BenchPrompt {
    /// The borrowed view the client sends.
    pub fn input(&self) -> RequestInput<'_> {
        RequestInput {
            text: &self.text,
            messages: self.messages.as_ref(),
            prompt_tokens: self.prompt_tokens,
            max_tokens: self.max_tokens,
        }
    }
}

/// Prompts plus the tokenizer that measured them.
#[derive(Clone)]
pub struct PreparedPrompts {
    /// Profile prompts, in send order (cycled in `--duration` mode).
    pub prompts: Vec<BenchPrompt>,
    /// Tokenizer identity written as `tokenizer_id`.
    pub tokenizer_id: String,
    /// Token counter for the completion-token fallback (server sent no usage).
    pub counter: Option<Arc<TokenCounter>>,
}

impl std::fmt::Debug for PreparedPrompts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedPrompts")
            .field("prompts", &self.prompts.len())
            .field("tokenizer_id", &self.tokenizer_id)
            .finish()
    }
}

/// Loads the tokenizer and builds the prompts the options ask for. Errors name the file
/// (unreadable dataset or tokenizer) or the flag.
pub fn prepare(opts: &BenchOptions) -> anyhow::Result<PreparedPrompts> {
    prepare_cancellable(opts, &AtomicBool::new(false))
}

/// [`prepare`] that gives up (with an error) soon after `stop` is set, between server
/// `/tokenize` calls (`--tokenizer server`); the local tokenizer paths are not interrupted
/// (the caller abandons them).
pub fn prepare_cancellable(
    opts: &BenchOptions,
    stop: &AtomicBool,
) -> anyhow::Result<PreparedPrompts> {
    let server = opts.tokenizer.trim() == SERVER_TOKENIZER;
    let tok = if server {
        // Generation and the completion-token fallback use the embedded default; lengths
        // are fitted to the server's counts.
        workload::Tokenizer::load(workload::DEFAULT_TOKENIZER).context("--tokenizer server")?
    } else {
        workload::Tokenizer::load(&opts.tokenizer).with_context(|| {
            format!(
                "--tokenizer {} (bench also takes --tokenizer server: prompts fitted through the \
                 server's own /tokenize)",
                opts.tokenizer
            )
        })?
    };
    let n = usize::try_from(opts.resolved_num_prompts().max(1)).unwrap_or(usize::MAX);
    if server {
        let st = ServerTokenizer::new(
            &opts.base_url,
            &opts.model,
            opts.api_key.as_deref(),
            &opts.tls,
        )?;
        let prompts = match opts.dataset_name {
            DatasetName::Random => server_random_prompts(opts, &tok, &st, n, stop)?,
            _ => {
                let mut ps = dataset_prompts(opts, &tok, n)?;
                let counts = parallel(ps.len(), stop, |conn, i| st.count(conn, &ps[i].text))?;
                for (p, c) in ps.iter_mut().zip(counts) {
                    p.prompt_tokens = c;
                }
                ps
            }
        };
        return Ok(finish(prompts, "server".into(), tok));
    }
    let prompts: Vec<workload::Prompt> = match opts.dataset_name {
        DatasetName::Random => {
            let spec = workload::RandomSpec {
                input_len: opts.random_input_len,
                output_len: opts.random_output_len,
                range_ratio: opts.resolved_range_ratio(),
                semantics: opts.range_semantics.to_workload(),
                prefix_len: opts.random_prefix_len,
                num_prompts: n,
                seed: opts.seed,
                cache_bust: opts
                    .cache_bust
                    .then(|| workload::cache_bust_marker(rand::random::<u64>())),
            };
            workload::random_prompts(&spec, &tok).context("building random prompts")?
        }
        DatasetName::Jsonl | DatasetName::Sharegpt => dataset_prompts(opts, &tok, n)?,
    };
    let id = tok.id().to_string();
    Ok(finish(prompts, id, tok))
}

fn dataset_prompts(
    opts: &BenchOptions,
    tok: &workload::Tokenizer,
    n: usize,
) -> anyhow::Result<Vec<workload::Prompt>> {
    let path = opts
        .dataset_path
        .as_deref()
        .context("--dataset-path is required for --dataset-name jsonl|sharegpt")?;
    let kind = if opts.dataset_name == DatasetName::Jsonl {
        workload::DatasetKind::Jsonl
    } else {
        workload::DatasetKind::ShareGpt
    };
    // A file's lengths are bounded as the flags' are (issue 39 §3: an `output_len` of 4e9 was
    // sent as max_tokens): at most `limits::MAX_TOKENS`, the longest context window.
    // An `--extra-body` output length is what is sent: the loader's memory budget counts it.
    let body = match opts.body_max_tokens() {
        Ok(Some(Some(n))) => Some(n),
        _ => None,
    };
    let dopts = workload::DatasetOptions {
        num_prompts: Some(n),
        output_len: body.or(opts.output_len),
        max_context_tokens: crate::options::limits::MAX_TOKENS,
        memory_budget: opts.prompt_memory,
        reply_bytes: crate::options::limits::dataset_reply_bytes(opts.save_detailed),
        ..Default::default()
    };
    workload::load_dataset(kind, path, tok, &dopts)
        .with_context(|| format!("--dataset-path {}", path.display()))
}

/// `prepared` with every prompt's `max_tokens` set to `body` (the length an `--extra-body`
/// sets, [`BenchOptions::body_max_tokens`]; `None` inside: the server decides), so that the
/// records, the client's response caps and the OSL checks use the length the server was sent;
/// `prepared` itself when `body` is `None` or changes nothing.
pub fn with_body_max_tokens(
    prepared: Arc<PreparedPrompts>,
    body: Option<Option<u32>>,
) -> Arc<PreparedPrompts> {
    let Some(max) = body else {
        return prepared;
    };
    if prepared.prompts.iter().all(|p| p.max_tokens == max) {
        return prepared;
    }
    let mut p = (*prepared).clone();
    for q in &mut p.prompts {
        q.max_tokens = max;
    }
    Arc::new(p)
}

/// Worker threads for `/tokenize` calls (each with its own keep-alive connection).
const TOKENIZE_WORKERS: usize = 8;

/// Runs `f(conn, i)` for `i < n` on [`TOKENIZE_WORKERS`] threads; results in index order.
/// Stops early with an error when `stop` is set or any call fails.
fn parallel<T: Send>(
    n: usize,
    stop: &AtomicBool,
    f: impl Fn(&mut TokConn, usize) -> anyhow::Result<T> + Sync,
) -> anyhow::Result<Vec<T>> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let results: Vec<Mutex<Option<T>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let first_err: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..TOKENIZE_WORKERS.min(n.max(1)) {
            scope.spawn(|| {
                let mut conn = TokConn::default();
                loop {
                    if stop.load(Ordering::Relaxed) || failed.load(Ordering::Relaxed) {
                        return;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return;
                    }
                    match f(&mut conn, i) {
                        Ok(v) => {
                            if let Ok(mut slot) = results[i].lock() {
                                *slot = Some(v);
                            }
                        }
                        Err(e) => {
                            failed.store(true, Ordering::Relaxed);
                            if let Ok(mut fe) = first_err.lock() {
                                fe.get_or_insert(e);
                            }
                            return;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = first_err.into_inner().ok().flatten() {
        return Err(e);
    }
    if stop.load(Ordering::Relaxed) {
        anyhow::bail!("interrupted during prompt preparation");
    }
    results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .context("a prompt was not prepared")
        })
        .collect()
}

/// Random prompts fitted to the server's tokenizer (`--tokenizer server`): lengths are drawn
/// with the usual range rule (own RNG stream of `--seed`); texts are generated long with the
/// embedded tokenizer, then cut at a character boundary until `/tokenize` counts exactly the
/// drawn length ([`fit_prefix`]). `prompt_tokens` is the server's count.
fn server_random_prompts(
    opts: &BenchOptions,
    tok: &workload::Tokenizer,
    st: &ServerTokenizer,
    n: usize,
    stop: &AtomicBool,
) -> anyhow::Result<Vec<workload::Prompt>> {
    use rand::{Rng, SeedableRng};
    let sem = opts.range_semantics.to_workload();
    let r = opts.resolved_range_ratio();
    let (in_lo, in_hi) = workload::length_range(opts.random_input_len, r, sem)?;
    let (out_lo, out_hi) = workload::length_range(opts.random_output_len.max(1), r, sem)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(opts.seed ^ 0x7365_7276_6572_746b);
    let in_lens: Vec<u32> = (0..n).map(|_| rng.random_range(in_lo..=in_hi)).collect();
    let out_lens: Vec<u32> = (0..n).map(|_| rng.random_range(out_lo..=out_hi)).collect();
    let prefix = opts.random_prefix_len;
    // One marker for the run, kept at the start of every prompt (the fit cuts at the end).
    let marker = opts
        .cache_bust
        .then(|| workload::cache_bust_marker(rand::random::<u64>()));
    let local = |input_len: u32, num: usize, seed: u64| {
        workload::random_prompts(
            &workload::RandomSpec {
                input_len,
                output_len: 1,
                range_ratio: 1.0,
                semantics: workload::RangeSemantics::InferenceX,
                prefix_len: prefix,
                num_prompts: num,
                seed,
                cache_bust: marker.clone(),
            },
            tok,
        )
        .context("building random prompts")
    };
    // Server tokens per local token, from one probe of the longest length.
    let probe = local(in_hi, 1, opts.seed)?;
    let probe_count = st.count(&mut TokConn::default(), &probe[0].text)?;
    let local_total = f64::from(prefix + in_hi);
    let per_local = (f64::from(probe_count) / local_total).max(0.05);
    let need = |target: u32, margin: f64| -> u32 {
        let want = (f64::from(target) / per_local * margin).ceil() + 16.0 - f64::from(prefix);
        want.clamp(1.0, f64::from(limits::MAX_TOKENS)) as u32
    };
    let long = local(need(prefix + in_hi, 1.25), n, opts.seed)?;
    let fitted = parallel(n, stop, |conn, i| {
        let target = prefix + in_lens[i];
        let mut text = long[i].text.clone();
        let mut full = st.count(conn, &text)?;
        let mut margin = 2.0;
        while full < target && margin <= 16.0 {
            // This prompt tokenizes denser than the probe: a longer one for it alone.
            let more = local(
                need(target, margin),
                1,
                opts.seed ^ (i as u64).wrapping_add(1),
            )?;
            text = more[0].text.clone();
            full = st.count(conn, &text)?;
            margin *= 2.0;
        }
        fit_prefix(st, conn, &text, 0, full, target)
    })?;
    Ok(fitted
        .into_iter()
        .zip(out_lens)
        .map(|((text, count), out)| workload::Prompt::new(text, count, out))
        .collect())
}

fn finish(
    prompts: Vec<workload::Prompt>,
    tokenizer_id: String,
    tok: workload::Tokenizer,
) -> PreparedPrompts {
    let tok = Arc::new(tok);
    let counter: Arc<TokenCounter> = Arc::new(move |s: &str| tok.count(s));
    PreparedPrompts {
        prompts: prompts
            .into_iter()
            .map(|p| BenchPrompt {
                text: p.text,
                messages: p.messages.and_then(|m| serde_json::to_value(m).ok()),
                prompt_tokens: p.prompt_tokens,
                max_tokens: Some(p.max_tokens),
                conversation_id: p.conversation_id,
                turn: p.turn,
                headers: p.extra_headers,
            })
            .collect(),
        tokenizer_id,
        counter: Some(counter),
    }
}
