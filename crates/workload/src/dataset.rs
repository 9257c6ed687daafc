//! File datasets: JSONL prompts and ShareGPT multi-turn conversations (DESIGN.md §5).
//!
//! **JSONL** (`--dataset-name jsonl`): one JSON object per line (blank lines skipped) with a
//! `"prompt"` or `"text"` string, or a `"messages"` array of `{"role", "content"}`; optional output
//! length in `"max_tokens"`, `"output_len"` or `"output_tokens"`; optional `"extra_headers"`, an
//! object of request headers sent with that line's request only (string values, checked as
//! `--header` values are; a number, a bool or any other type where the value's string belongs,
//! or a name or value that is not a valid HTTP header, is an error). A line may also be a
//! bare JSON string. Errors name `file:line` and the field.
//!
//! **ShareGPT** (`--dataset-name sharegpt`): a JSON array (or JSONL) of conversations
//! `{"id", "conversations": [{"from": "human"|"gpt"|"system", "value"}]}` (`"role"`/`"content"`
//! and `"messages"` accepted too). **Every** assistant turn becomes a prompt whose history is the
//! conversation up to the user message before it (peers.md bug 37: keeping only the first turn
//! hides prefix-cache reuse); its `max_tokens` is the token count of the recorded reply. No length
//! filters are applied.
//!
//! **Bounds** (issue 39 §3): only a regular file of at most [`MAX_DATASET_FILE_BYTES`] is read
//! (a FIFO or device is refused at once); a leading UTF-8 byte-order mark is skipped, another
//! encoding or a mark inside the file is named with its line; a line longer than
//! [`MAX_LINE_BYTES`] or a prompt text longer than [`MAX_PROMPT_BYTES`] is refused before it
//! is tokenized; a prompt's token count and an output length must not exceed
//! [`DatasetOptions::max_context_tokens`] (default [`DEFAULT_MAX_CONTEXT_TOKENS`]).
//!
//! Prompts keep file order. `num_prompts` takes the first N; asking for more than the file holds
//! repeats it from the start (conversation ids of repeats get a `~k` suffix).

use crate::error::WorkloadError;
use crate::files::{
    lone_cr_hint, LineReader, DEFAULT_MAX_CONTEXT_TOKENS, MAX_DATASET_FILE_BYTES, MAX_PROMPT_BYTES,
    UTF8_BOM,
};
use crate::prompt::{ChatMessage, Prompt};
use crate::tokenizer::Tokenizer;
use rayon::prelude::*;
use serde_json::Value;
use std::path::Path;

/// Dataset file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DatasetKind {
    /// One prompt per line.
    Jsonl,
    /// ShareGPT conversations, all turns.
    ShareGpt,
}

impl DatasetKind {
    /// Parses `jsonl` / `sharegpt` (case-insensitive; `custom` is vLLM's name for JSONL).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "jsonl" | "custom" => Some(DatasetKind::Jsonl),
            "sharegpt" => Some(DatasetKind::ShareGpt),
            _ => None,
        }
    }
}

/// How to turn a dataset file into prompts.
#[derive(Debug, Clone)]
pub struct DatasetOptions {
    /// Number of prompts (`None` = all in the file).
    pub num_prompts: Option<usize>,
    /// Overrides every prompt's output length (`--random-output-len` / `--sharegpt-output-len`).
    pub output_len: Option<u32>,
    /// Output length when the file gives none (JSONL without a length field; a final
    /// unanswered user turn). Default 256 (vLLM's `--custom-output-len`).
    pub default_output_len: u32,
    /// Longest prompt (client-side token count) and output length (a line's `max_tokens` /
    /// `output_len` / `output_tokens`, or a ShareGPT reply's token count) accepted, tokens;
    /// anything longer is refused at load naming its line. Default
    /// [`DEFAULT_MAX_CONTEXT_TOKENS`] (2^20).
    pub max_context_tokens: u32,
    /// Most memory the prompts may take, bytes (the caller's memory budget less what the run
    /// needs besides, issue 39 §2): the prompts' text and messages are counted as they are read
    /// ([`prompt_bytes`]), and a file whose prompts need more is refused naming how many fit.
    /// `None`: not bounded.
    pub memory_budget: Option<u64>,
    /// What the record of a prompt's reply of N output tokens costs the budget, bytes: by
    /// default [`reply_record_bytes`] (N × [`RECORD_BYTES_PER_OUTPUT_TOKEN`]); loadgen gives
    /// what the client keeps of a whole response where records are kept whole
    /// (`--save-detailed`: issue 39, the one rule of the client and the estimates).
    pub reply_bytes: fn(u64) -> u64,
}

/// The default [`DatasetOptions::reply_bytes`]: `tokens` × [`RECORD_BYTES_PER_OUTPUT_TOKEN`].
pub fn reply_record_bytes(tokens: u64) -> u64 {
    tokens.saturating_mul(RECORD_BYTES_PER_OUTPUT_TOKEN)
}

/// Longest JSONL line read, bytes: 64 MiB (a [`MAX_PROMPT_BYTES`] prompt with room for JSON
/// escapes and other fields). A longer line is refused before it is parsed.
pub const MAX_LINE_BYTES: usize = 4 * MAX_PROMPT_BYTES;

impl Default for DatasetOptions {
    fn default() -> Self {
        DatasetOptions {
            num_prompts: None,
            output_len: None,
            default_output_len: 256,
            max_context_tokens: DEFAULT_MAX_CONTEXT_TOKENS,
            memory_budget: None,
            reply_bytes: reply_record_bytes,
        }
    }
}

/// Loads `path` as `kind` and sizes every prompt with `tok` (`prompt_tokens` = client-side
/// count of `text`).
///
/// # Errors
/// [`WorkloadError::Io`] (unreadable file), [`WorkloadError::Parse`] (not a regular file, too
/// large, not UTF-8, bad content or a length over the bounds (module doc), naming the file and,
/// for JSONL, the line), [`WorkloadError::Empty`] (no usable prompt).
pub fn load_dataset(
    kind: DatasetKind,
    path: &Path,
    tok: &Tokenizer,
    opts: &DatasetOptions,
) -> Result<Vec<Prompt>, WorkloadError> {
    // Read one line (or one ShareGPT conversation) at a time, up to the prompts the run uses:
    // memory holds what is kept, never the whole file (issue 39 §2).
    let (drafts, mut budget) = read_drafts(kind, path, opts)?;
    let cap = opts.max_context_tokens;
    if let Some(n) = opts.output_len.filter(|&n| n > cap) {
        return Err(WorkloadError::InvalidSpec {
            field: "output length",
            reason: format!("{n} tokens is above the cap of {cap} tokens"),
        });
    }
    if drafts.is_empty() {
        return Err(WorkloadError::Empty {
            path: path.to_path_buf(),
            reason: match kind {
                DatasetKind::Jsonl => "no prompt lines".into(),
                DatasetKind::ShareGpt => "no conversation with a user turn".into(),
            },
        });
    }
    let n = opts.num_prompts.unwrap_or(drafts.len());
    // Each distinct prompt is counted once (and checked against the cap, naming its line)
    // before the file is repeated up to `num_prompts`.
    let sized: Vec<(u32, u32)> = drafts
        .par_iter()
        .map(|d| {
            let over = |what: &str, n: usize| WorkloadError::Parse {
                path: path.to_path_buf(),
                line: d.line,
                reason: format!(
                    "{}{what} of {n} tokens is above the cap of {cap} tokens",
                    d.label
                ),
            };
            let prompt_tokens = tok.count(&d.text);
            if prompt_tokens > cap as usize {
                return Err(over("prompt", prompt_tokens));
            }
            let max_tokens = match (opts.output_len, &d.reply) {
                (Some(n), _) => n,
                (None, Reply::Tokens(t)) => *t,
                (None, Reply::Text(s)) => {
                    let n = tok.count(s);
                    if n > cap as usize {
                        return Err(over("recorded reply (the output length)", n));
                    }
                    (n as u32).max(1)
                }
                (None, Reply::Unknown) => opts.default_output_len,
            };
            Ok((prompt_tokens as u32, max_tokens))
        })
        .collect::<Result<_, _>>()?;
    // The drafts become the first prompts (moved); asking for more than the file holds repeats
    // them, and each copy counts against the budget before it is made.
    let len = drafts.len();
    // Each repeat costs what its draft cost, its reply's record included (it was counted
    // without it, so the records of a file repeated up to --num-prompts were not counted).
    let costs: Vec<u64> = drafts.iter().map(|d| budget.cost(d)).collect();
    let mut prompts = Vec::new();
    if inferbench_core::fallible::fallible(|| prompts.try_reserve(n)).is_err() {
        return Err(budget.refuse(None, len.min(n)));
    }
    for (d, (prompt_tokens, max_tokens)) in drafts.into_iter().zip(sized).take(n) {
        prompts.push(Prompt {
            prompt_tokens,
            text: d.text,
            max_tokens,
            conversation_id: d.conversation_id,
            turn: d.turn,
            messages: d.messages,
            extra_headers: d.extra_headers,
        });
    }
    for k in len..n {
        let p = &prompts[k % len];
        if budget.add(costs[k % len]).is_err() {
            return Err(budget.refuse(None, k));
        }
        let rep = k / len;
        let mut copy = p.clone();
        copy.conversation_id = p.conversation_id.as_ref().map(|c| format!("{c}~{rep}"));
        prompts.push(copy);
    }
    Ok(prompts)
}

/// What loading `path` as `kind` with `opts` counts against its memory budget
/// ([`DatasetOptions::memory_budget`]), bytes: each prompt of the `num_prompts` the run reads
/// its text, messages and headers and the record its reply fills (the same count as the load's,
/// repeats of a shorter file counted as whole rounds: an upper bound). The file is read as the
/// load reads it, keeping nothing. The caller's up-front memory check counts this, so that the
/// `ulimit -v` it advises leaves the load its room in one step (issue 39: a dataset's
/// `output_len` records, left out up front, were refused again by the loader).
///
/// # Errors
/// What the load itself would refuse the file for ([`load_dataset`]'s errors, before its
/// tokenizer counts), naming the file and line.
pub fn dataset_budget_need(
    kind: DatasetKind,
    path: &Path,
    opts: &DatasetOptions,
) -> Result<u64, WorkloadError> {
    let counting = DatasetOptions {
        memory_budget: Some(0),
        ..opts.clone()
    };
    match read_drafts(kind, path, &counting) {
        Err(WorkloadError::NoneFits { need, .. }) => Ok(need),
        // Nothing kept at a budget of 0: no prompt (the load names it).
        Ok(_) => Ok(0),
        Err(e) => Err(e),
    }
}

/// The most output tokens one request of loading `path` as `kind` with `opts` asks for
/// (`max_tokens`), at most: `opts.output_len` when set; else the largest of each prompt's
/// `output_len` (or `max_tokens`, `output_tokens`), its recorded reply's bytes (its token count
/// is at most that) and, for a line that gives none, `opts.default_output_len`; over the
/// prompts of the `num_prompts` the run reads. The file is read as the load reads it, keeping
/// nothing; 0 for a file without prompts. For the records' and result files' upper size
/// estimates (`ulimit -f`; issue 39's leftovers, 2: a dataset run without `--output-len` was
/// estimated without output tokens and hit the limit midway).
///
/// # Errors
/// What the load itself would refuse the file for, as [`dataset_budget_need`].
pub fn dataset_output_tokens_most(
    kind: DatasetKind,
    path: &Path,
    opts: &DatasetOptions,
) -> Result<u64, WorkloadError> {
    if let Some(n) = opts.output_len {
        return Ok(u64::from(n));
    }
    let counting = DatasetOptions {
        memory_budget: Some(0),
        ..opts.clone()
    };
    let (_, budget) = read_drafts_counted(kind, path, &counting)?;
    Ok(budget.most_reply_tokens)
}

/// The prompts' drafts of `path` (up to `opts.num_prompts`), read a line (or conversation) at a
/// time within `opts.memory_budget`, and the budget as they left it.
///
/// # Errors
/// As [`load_dataset`]; [`WorkloadError::NoneFits`] when not even the first prompt fits.
fn read_drafts<'a>(
    kind: DatasetKind,
    path: &'a Path,
    opts: &DatasetOptions,
) -> Result<(Vec<Draft>, Budget<'a>), WorkloadError> {
    let (drafts, budget) = read_drafts_counted(kind, path, opts)?;
    // Not even the first prompt fitted: what the whole load needs, the file's prompts counted
    // and its repeats up to --num-prompts counted as whole prompts (an upper bound).
    if let Some(line) = budget.none_fit {
        let len = budget.dropped.max(1);
        let count = opts.num_prompts.unwrap_or(len).max(len);
        let rounds = count.div_ceil(len) as u64;
        return Err(WorkloadError::NoneFits {
            path: path.to_path_buf(),
            line,
            what: "prompt",
            count,
            need: budget.used.saturating_mul(rounds),
            room: budget.most.unwrap_or(0),
        });
    }
    Ok((drafts, budget))
}

/// [`read_drafts`] without the refusal when not even the first prompt fits (the budget then
/// says so: `none_fit`, and counts the rest without keeping them).
fn read_drafts_counted<'a>(
    kind: DatasetKind,
    path: &'a Path,
    opts: &DatasetOptions,
) -> Result<(Vec<Draft>, Budget<'a>), WorkloadError> {
    let mut budget = Budget {
        most_reply_tokens: 0,
        path,
        most: opts.memory_budget,
        used: 0,
        dropped: 0,
        none_fit: None,
        output_len: opts.output_len,
        default_output_len: opts.default_output_len,
        reply_bytes: opts.reply_bytes,
    };
    let drafts = match kind {
        DatasetKind::Jsonl => {
            let mut lines = crate::files::open_jsonl(path, MAX_DATASET_FILE_BYTES, MAX_LINE_BYTES)?;
            parse_jsonl(
                &mut lines,
                path,
                opts.max_context_tokens,
                opts.num_prompts,
                &mut budget,
            )?
        }
        DatasetKind::ShareGpt => parse_sharegpt(path, opts.num_prompts, &mut budget)?,
    };
    Ok((drafts, budget))
}

/// Where a prompt's output length comes from.
enum Reply {
    Tokens(u32),
    Text(String),
    Unknown,
}

struct Draft {
    /// 1-based line of the file it came from (JSONL, ShareGPT JSONL), for messages.
    line: Option<usize>,
    /// Where it is within its line or file, for messages: `""` for a JSONL prompt,
    /// `"conversation N, turn K: "` for ShareGPT.
    label: String,
    text: String,
    messages: Option<Vec<ChatMessage>>,
    conversation_id: Option<String>,
    turn: Option<u32>,
    reply: Reply,
    extra_headers: Vec<(String, String)>,
}

/// Bytes a prompt's text, messages and headers take in memory (with a fixed share for the
/// structures holding them), as the memory budget counts them.
pub fn prompt_bytes_of(text: &str, messages: Option<&[ChatMessage]>, headers: usize) -> u64 {
    let msgs: usize = messages.map_or(0, |m| {
        m.iter()
            .map(|c| c.role.len() + c.content.len() + PER_MESSAGE_BYTES)
            .sum()
    });
    (text.len() + msgs + headers + PER_PROMPT_BYTES) as u64
}

/// Memory a prompt takes besides its text, bytes: its struct, the strings' headers and the
/// allocator's rounding (an estimate on the high side).
const PER_PROMPT_BYTES: usize = 256;

/// Memory a chat message takes besides its text, bytes.
const PER_MESSAGE_BYTES: usize = 64;

/// Memory a request's record takes per output token while the run keeps it (its inter-token
/// latency and stamps), bytes: 32, as loadgen's `limits::BYTES_PER_OUTPUT_TOKEN`.
pub const RECORD_BYTES_PER_OUTPUT_TOKEN: u64 = 32;

/// What a prompt costs the budget, bytes: its text, messages and headers
/// ([`prompt_bytes_of`]) and the record its reply will fill: `reply_bytes` of its `output_len`
/// (or `max_tokens`, `output_tokens`; [`DatasetOptions::reply_bytes`]), or for a recorded reply
/// text ≈ 4 bytes per token (issue 39 §2 finding 2: 150 prompts of `output_len` 130000
/// aborted a bench whose prompts were counted without their replies).
fn prompt_bytes(
    d: &Draft,
    output_len: Option<u32>,
    default_output_len: u32,
    reply_bytes: fn(u64) -> u64,
) -> u64 {
    let headers: usize = d
        .extra_headers
        .iter()
        .map(|(k, v)| k.len() + v.len() + 48)
        .sum();
    // The length the load sends as `max_tokens` (an `--output-len` overrides the line's; a
    // line with none gets the default), a recorded reply's text at ≈ 4 bytes a token.
    let reply_tokens = match (output_len, &d.reply) {
        (Some(n), _) => u64::from(n),
        (None, Reply::Tokens(n)) => u64::from(*n),
        (None, Reply::Text(t)) => (t.len() as u64).div_ceil(4),
        (None, Reply::Unknown) => u64::from(default_output_len),
    };
    prompt_bytes_of(&d.text, d.messages.as_deref(), headers)
        .saturating_add(reply_bytes(reply_tokens))
}

/// Room the caller keeps in its memory budget for one line while it is read and parsed,
/// besides [`DatasetOptions::memory_budget`], bytes: the line (at most [`MAX_LINE_BYTES`]) and
/// as much again for its parse. A line whose parse is estimated above this room and what the
/// prompts have left ([`parse_bytes_estimate`]) is refused before it is parsed.
pub const LINE_PARSE_ROOM_BYTES: u64 = 2 * MAX_LINE_BYTES as u64;

/// Memory a JSON line takes while `serde_json` parses it into a `Value`, bytes, estimated on
/// the high side from one pass over its bytes: the line itself, and 64 bytes for each value
/// separator or opening bracket outside strings (`,` `:` `[` `{`): a `Value` is 32 bytes, a
/// growing array holds up to twice its length while it reallocates, and an object entry's key
/// is a string of its own. A line of text costs about its length; `[0,0,…]` about 32× it
/// (measured: a 12 MB `[0,0,…]` prompt line needed > 300 MB).
pub fn parse_bytes_estimate(line: &str) -> u64 {
    json_parse_estimate(line.as_bytes(), 64, 64, None)
}

/// The rule of [`parse_bytes_estimate`] with its weights given: the line's length, and
/// `per_separator` bytes for each `,` `:` `[` outside strings and `per_object` for each `{`
/// (a reader that parses objects into a struct larger than a `Value` weighs them more:
/// AgentX traces, `agentx::load`); the separators inside an array that is the value of key
/// `bounded` are not counted (a reader that bounds that list while it parses it: AgentX's
/// `hash_ids`). One pass, no allocation.
pub fn json_parse_estimate(
    line: &[u8],
    per_separator: u64,
    per_object: u64,
    bounded: Option<&[u8]>,
) -> u64 {
    let mut separators: u64 = 0;
    let mut objects: u64 = 0;
    // The last string closed (a key when a `:` follows), whether the value after a `:` is
    // that of `bounded`, and the depth inside such a value's array (0: outside).
    let (mut string_at, mut last_string) = (0usize, 0..0);
    let (mut after_bounded_key, mut skip_depth) = (false, 0u32);
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in line.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
                last_string = string_at..i;
            }
            continue;
        }
        if skip_depth > 0 {
            match b {
                b'"' => {
                    in_string = true;
                    string_at = i + 1;
                }
                b'[' => skip_depth += 1,
                b']' => skip_depth -= 1,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => {
                in_string = true;
                string_at = i + 1;
                after_bounded_key = false;
            }
            b':' => {
                separators += 1;
                after_bounded_key =
                    bounded.is_some_and(|k| line.get(last_string.clone()) == Some(k));
            }
            b'[' if after_bounded_key => {
                skip_depth = 1;
                after_bounded_key = false;
            }
            b',' | b'[' => separators += 1,
            b'{' => objects += 1,
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => after_bounded_key = false,
        }
        if b == b'{' || b == b',' {
            after_bounded_key = false;
        }
    }
    (line.len() as u64)
        .saturating_add(separators.saturating_mul(per_separator))
        .saturating_add(objects.saturating_mul(per_object))
}

/// The memory the prompts read so far take, against [`DatasetOptions::memory_budget`].
/// When not even the first prompt fits, the load goes on counting without keeping
/// (`dropped`), so that the refusal says what the whole load needs
/// ([`WorkloadError::NoneFits`]; issue 39's leftovers, 3).
struct Budget<'a> {
    path: &'a Path,
    most: Option<u64>,
    used: u64,
    /// Prompts counted but not kept (only once the first did not fit).
    dropped: usize,
    /// The first prompt's line when it alone passed the budget (counting mode).
    none_fit: Option<Option<usize>>,
    /// [`DatasetOptions::output_len`]: every reply's length when given.
    output_len: Option<u32>,
    /// [`DatasetOptions::default_output_len`]: a reply's length when its line gives none.
    default_output_len: u32,
    /// The most output tokens a prompt taken so far asks for, at most
    /// ([`dataset_output_tokens_most`]).
    most_reply_tokens: u64,
    /// [`DatasetOptions::reply_bytes`].
    reply_bytes: fn(u64) -> u64,
}

impl Budget<'_> {
    /// What `d` costs the budget, bytes ([`prompt_bytes`] with the reply length the load
    /// gives it: `--output-len` when set, a line without one at the default).
    fn cost(&self, d: &Draft) -> u64 {
        prompt_bytes(
            d,
            self.output_len,
            self.default_output_len,
            self.reply_bytes,
        )
    }

    /// Prompts taken so far: kept (`kept`) and counted without keeping.
    fn taken(&self, kept: usize) -> usize {
        kept + self.dropped
    }

    /// Counts `bytes` more; `Err(())` when that passes the budget.
    fn add(&mut self, bytes: u64) -> Result<(), ()> {
        self.used = self.used.saturating_add(bytes);
        match self.most {
            Some(most) if self.used > most => Err(()),
            _ => Ok(()),
        }
    }

    /// `Err` (naming `line`) when parsing `text` ([`parse_bytes_estimate`]) needs more than
    /// [`LINE_PARSE_ROOM_BYTES`] and what the prompts have left; with no budget, `Ok`.
    fn check_parse(&self, text: &str, line: usize) -> Result<(), WorkloadError> {
        let Some(most) = self.most else {
            return Ok(());
        };
        // Counting only: nothing is kept, so a line has its own room.
        let left = if self.none_fit.is_some() {
            0
        } else {
            most.saturating_sub(self.used)
        };
        let room = left.saturating_add(LINE_PARSE_ROOM_BYTES);
        let need = parse_bytes_estimate(text);
        if need <= room {
            return Ok(());
        }
        Err(WorkloadError::Parse {
            path: self.path.to_path_buf(),
            line: Some(line),
            reason: format!(
                "parsing this {}-byte line takes about {} MiB (its JSON values), more than the \
                 {} MiB of memory left for it (`ulimit -v` or the memory available, less what \
                 the streams, records, process and the prompts before it need): shorten the \
                 line or raise `ulimit -v` (nothing was sent)",
                text.len(),
                need >> 20,
                room >> 20
            ),
        })
    }

    /// The refusal when the prompt after `fit` prompts passed the budget (at `line`).
    fn refuse(&self, line: Option<usize>, fit: usize) -> WorkloadError {
        let most = self.most.unwrap_or(u64::MAX);
        let fits = if fit == 0 {
            "not one prompt of it fits: raise the limit or use shorter prompts".to_string()
        } else {
            format!("--num-prompts {fit} or fewer fit")
        };
        WorkloadError::Parse {
            path: self.path.to_path_buf(),
            line,
            reason: format!(
                "the prompts read up to here need more than the {} MiB of memory left for \
                 prompts (their text and their replies' records: `ulimit -v` or the memory \
                 available, less what the streams, records and the process need); {fits} \
                 (nothing was sent)",
                most >> 20
            ),
        }
    }
}

/// Pushes `d` onto `out` within `budget`; errors (naming `line`) when it does not fit.
fn keep(
    out: &mut Vec<Draft>,
    d: Draft,
    budget: &mut Budget<'_>,
    line: Option<usize>,
) -> Result<(), WorkloadError> {
    // Counting only (the first prompt did not fit): counted, not kept.
    let cost = budget.cost(&d);
    let reply = match (budget.output_len, &d.reply) {
        (Some(n), _) => u64::from(n),
        (None, Reply::Tokens(n)) => u64::from(*n),
        // A recorded reply's tokens are at most its bytes (the load counts them).
        (None, Reply::Text(t)) => (t.len() as u64).max(1),
        (None, Reply::Unknown) => u64::from(budget.default_output_len),
    };
    budget.most_reply_tokens = budget.most_reply_tokens.max(reply);
    if budget.none_fit.is_some() {
        budget.used = budget.used.saturating_add(cost);
        budget.dropped += 1;
        return Ok(());
    }
    if budget.add(cost).is_err() {
        if out.is_empty() {
            budget.none_fit = Some(line);
            budget.dropped = 1;
            return Ok(());
        }
        return Err(budget.refuse(line, out.len()));
    }
    if inferbench_core::fallible::fallible(|| out.try_reserve(1)).is_err() {
        return Err(budget.refuse(line, out.len()));
    }
    out.push(d);
    Ok(())
}

fn join_contents(msgs: &[ChatMessage]) -> String {
    msgs.iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The reason a line (or conversation) cannot be used before it is parsed: a UTF-8
/// byte-order mark at its start, or more than [`MAX_LINE_BYTES`] bytes.
fn line_problem(line: &str) -> Option<String> {
    if let Some(r) = crate::files::jsonl_line_problem(line) {
        return Some(r);
    }
    (line.len() > MAX_LINE_BYTES).then(|| {
        format!(
            "the line is {} bytes, longer than the {MAX_LINE_BYTES}-byte limit of a dataset line",
            line.len()
        )
    })
}

/// `Err` when a prompt's text is empty (0 input tokens) or longer than [`MAX_PROMPT_BYTES`].
fn check_prompt_bytes(text: &str) -> Result<(), String> {
    if text.is_empty() {
        // 0 input tokens: what a trace's `in: 0` is refused for (issue 39, fresh tester's
        // finding 6: an empty dataset prompt was accepted and sent).
        return Err(
            "the prompt is empty: a request needs at least 1 input token (the request would \
             send an empty prompt)"
                .into(),
        );
    }
    if text.len() > MAX_PROMPT_BYTES {
        return Err(format!(
            "the prompt is {} bytes of text, longer than the {MAX_PROMPT_BYTES}-byte limit of a \
             prompt",
            text.len()
        ));
    }
    Ok(())
}

fn parse_jsonl(
    lines: &mut LineReader,
    path: &Path,
    cap: u32,
    limit: Option<usize>,
    budget: &mut Budget<'_>,
) -> Result<Vec<Draft>, WorkloadError> {
    let mut out = Vec::new();
    while limit.is_none_or(|l| budget.taken(out.len()) < l) {
        let Some((line_no, line)) = lines.next_line()? else {
            break;
        };
        let err = |reason: String| WorkloadError::Parse {
            path: path.to_path_buf(),
            line: Some(line_no),
            reason,
        };
        if let Some(r) = line_problem(line) {
            return Err(err(r));
        }
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        budget.check_parse(l, line_no)?;
        let v: Value = serde_json::from_str(l).map_err(|e| err(invalid_json(&e, line)))?;
        let reply = match &v {
            Value::Object(o) => {
                match ["max_tokens", "output_len", "output_tokens"]
                    .iter()
                    .find_map(|k| Some((*k, o.get(*k)?)))
                {
                    None | Some((_, Value::Null)) => Reply::Unknown,
                    // A whole number written as a float (`1e3`, `256.0`: a length that
                    // passed through a float) is that number (issue 39, fresh tester: `1e9`
                    // was "1000000000.0 is not a positive integer", the cap unsaid).
                    Some((k, x)) => match x.as_u64().or_else(|| whole_number(x)) {
                        Some(n) if n > u64::from(cap) => {
                            return Err(err(format!(
                                "{k}: {n} tokens is above the cap of {cap} tokens"
                            )))
                        }
                        Some(n) if n > 0 => Reply::Tokens(n as u32),
                        _ => {
                            return Err(err(format!(
                                "{k}: output length {x} is not a whole number of tokens from 1 \
                                 to the cap of {cap}"
                            )))
                        }
                    },
                }
            }
            _ => Reply::Unknown,
        };
        let (text, messages) =
            match &v {
                Value::String(s) => (s.clone(), None),
                Value::Object(o) => {
                    let key = ["prompt", "text"].into_iter().find(|k| o.contains_key(*k));
                    if let Some((key, p)) = key.and_then(|k| Some((k, o.get(k)?))) {
                        let s = p
                            .as_str()
                            .ok_or_else(|| err(format!("\"{key}\" must be a string")))?;
                        (s.to_string(), None)
                    } else if let Some(m) = o.get("messages") {
                        let msgs = parse_messages(m, "messages").map_err(err)?;
                        (join_contents(&msgs), Some(msgs))
                    } else {
                        // A key that differs only in case or spaces (trial of issue 39, finding 9).
                        let near = o.keys().find_map(|k| {
                            let t = k.trim().to_ascii_lowercase();
                            ["prompt", "text", "messages"]
                                .into_iter()
                                .find(|want| t == *want)
                                .map(|want| format!(" (found {k:?}: did you mean \"{want}\"?)"))
                        });
                        return Err(err(format!(
                            "expected a \"prompt\" or \"text\" string or a \"messages\" array{}",
                            near.unwrap_or_default()
                        )));
                    }
                }
                // A JSON array where one record per line is expected: most likely a `.json` file
                // of records given as JSONL (trial of issue 39, finding 9).
                Value::Array(_) => return Err(err(
                    "a JSON array, where JSONL has one JSON object (or string) per line: is this \
                     a .json file of records? convert it with `jq -c '.[]' FILE > FILE.jsonl`"
                        .into(),
                )),
                _ => return Err(err("expected a JSON object or string".into())),
            };
        check_prompt_bytes(&text).map_err(err)?;
        let extra_headers = match v.get("extra_headers") {
            None | Some(Value::Null) => Vec::new(),
            Some(h) => parse_extra_headers(h).map_err(err)?,
        };
        let d = Draft {
            line: Some(line_no),
            label: String::new(),
            text,
            messages,
            conversation_id: None,
            turn: None,
            reply,
            extra_headers,
        };
        keep(&mut out, d, budget, Some(line_no))?;
    }
    Ok(out)
}

/// A JSONL line's `extra_headers`: an object of header name → string value.
/// Errors: not an object; a value that is not a JSON string (issue 39's typed checks: `5`,
/// `true`, `null`, an array or an object were accepted or named vaguely: a header value is
/// text, as every `--header` value is, and the file says it as a string); a name or value
/// HTTP does not allow (a name of token characters, a value without control characters); or a
/// field the client writes itself ([`inferbench_core::http_fields::header_refusal`] per
/// request: `Content-Length`, `Transfer-Encoding`, `Host`, `Connection`, …).
fn parse_extra_headers(v: &Value) -> Result<Vec<(String, String)>, String> {
    let o = v.as_object().ok_or_else(|| {
        format!(
            "\"extra_headers\" is {}, not an object of header name → string value",
            json_kind(v)
        )
    })?;
    let mut out = Vec::with_capacity(o.len());
    for (k, v) in o {
        let value = match v {
            Value::String(s) => s.clone(),
            Value::Number(_) | Value::Bool(_) => {
                return Err(format!(
                    "extra_headers {k:?}: the value is {}, not a string (a header value is \
                     text: write it quoted, \"{v}\")",
                    json_kind(v)
                ))
            }
            _ => {
                return Err(format!(
                    "extra_headers {k:?}: the value is {}, not a string",
                    json_kind(v)
                ))
            }
        };
        let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if k.is_empty() || !k.chars().all(tchar) {
            return Err(format!(
                "extra_headers: {k:?} is not a valid HTTP header name"
            ));
        }
        if let Some(why) = inferbench_core::http_fields::header_refusal(k, &value, true) {
            return Err(format!("extra_headers {k:?}: {why}"));
        }
        if value.chars().any(|c| c.is_control() && c != '\t') {
            return Err(format!(
                "extra_headers {k:?}: the value contains a control character"
            ));
        }
        out.push((k.clone(), value));
    }
    Ok(out)
}

/// What `v` is, for messages naming a value of the wrong type: `the number 5`, `true`,
/// `null`, `an array`, `an object`, `the string "x"` (cut to 40 characters).
fn json_kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!(
            "the string {}",
            inferbench_core::text::one_line(&Value::from(s.as_str()).to_string(), 40)
        ),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// The messages of `v`, an array under the file's key `key` (named in the error).
fn parse_messages(v: &Value, key: &str) -> Result<Vec<ChatMessage>, String> {
    let arr = v
        .as_array()
        .ok_or_else(|| format!("\"{key}\" must be an array"))?;
    arr.iter()
        .enumerate()
        .map(|(i, m)| {
            let role = string_field(m, i, "role", "from")?;
            let content = string_field(m, i, "content", "value")?;
            Ok(ChatMessage {
                role: normalize_role(role).to_string(),
                content: content.to_string(),
            })
        })
        .collect()
}

/// A message's string field, under its OpenAI name `key` or its ShareGPT name `alias`; the
/// error names the spelling the message uses (both when it has neither).
fn string_field<'a>(m: &'a Value, i: usize, key: &str, alias: &str) -> Result<&'a str, String> {
    let Some(o) = m.as_object() else {
        return Err(format!(
            "message {i}: expected an object with \"{key}\" (or \"{alias}\")"
        ));
    };
    match [key, alias].into_iter().find_map(|k| Some((k, o.get(k)?))) {
        Some((_, Value::String(s))) => Ok(s),
        Some((k, _)) => Err(format!("message {i}: \"{k}\" must be a string")),
        None => Err(format!(
            "message {i}: missing \"{key}\" (or \"{alias}\", ShareGPT's spelling)"
        )),
    }
}

/// `invalid JSON: …` for a JSONL `line` serde refused with `e`, with a hint when the line
/// holds a carriage return alone; a lone UTF-16 surrogate escape is named as such (issue 39,
/// fresh tester: serde's "unexpected end of hex escape" for `"\ud800 lone"`). The one wording
/// of every JSONL input (datasets, GSM8K's splits).
pub fn invalid_json(e: &serde_json::Error, line: &str) -> String {
    if let Some((escape, column)) = lone_surrogate(line) {
        return format!(
            "invalid JSON: a lone UTF-16 surrogate `{escape}` at column {column} \
             ({LONE_SURROGATE_WHY})"
        );
    }
    format!(
        "invalid JSON: {e}{}",
        lone_cr_hint(line).unwrap_or_default()
    )
}

/// `invalid JSON: …` of a ShareGPT array (no line text at hand): serde's surrogate errors
/// named as a lone UTF-16 surrogate escape, with the column serde gives.
fn array_invalid_json(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    if msg.contains("surrogate") || msg.contains("hex escape") {
        return format!(
            "invalid JSON: a lone UTF-16 surrogate escape (`\\uD800`–`\\uDFFF` without its \
             other half: not a character) near column {}",
            e.column()
        );
    }
    format!("invalid JSON: {msg}")
}

/// What a lone UTF-16 surrogate escape is and how to mend it, for the messages naming one
/// (the dataset loader's and the trace loader's).
pub(crate) const LONE_SURROGATE_WHY: &str = "half of a UTF-16 pair, not a character: the text \
     was cut between the pair's halves or encoded wrongly; write the character itself, or its \
     whole pair";

/// The first `\uXXXX` escape of `line` that is a UTF-16 surrogate without its other half (a
/// high surrogate `D800`–`DBFF` not followed by a low one `DC00`–`DFFF`, or a low one alone),
/// and its 1-based column (bytes); `None` when there is none.
fn lone_surrogate(line: &str) -> Option<(String, usize)> {
    lone_surrogate_at(line.as_bytes()).map(|(e, at)| (e, at + 1))
}

/// [`lone_surrogate`] of JSON bytes (one line or several): the escape as written (lower-case
/// hex) and its byte offset (0-based).
pub(crate) fn lone_surrogate_at(b: &[u8]) -> Option<(String, usize)> {
    let escape_at = |i: usize| -> Option<u16> {
        if b.get(i) != Some(&b'\\') || b.get(i + 1) != Some(&b'u') {
            return None;
        }
        let hex = std::str::from_utf8(b.get(i + 2..i + 6)?).ok()?;
        u16::from_str_radix(hex, 16).ok()
    };
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match escape_at(i) {
            Some(hi @ 0xD800..=0xDBFF) => match escape_at(i + 6) {
                Some(0xDC00..=0xDFFF) => i += 12,
                _ => return Some((format!("\\u{hi:04x}"), i)),
            },
            Some(lo @ 0xDC00..=0xDFFF) => return Some((format!("\\u{lo:04x}"), i)),
            Some(_) => i += 6,
            // Another escape (`\\`, `\"`, …): its two bytes.
            None => i += 2,
        }
    }
    None
}

/// A JSON float that is a whole number in `0..2^64` (`1e9`, `256.0`), as that number.
fn whole_number(x: &Value) -> Option<u64> {
    let f = x.as_f64()?;
    // 2^64 as f64: every whole f64 below it fits a u64.
    (f.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&f)).then_some(f as u64)
}

/// ShareGPT speaker names → chat roles.
fn normalize_role(r: &str) -> &str {
    match r {
        "human" | "user" => "user",
        "gpt" | "assistant" | "chatgpt" | "bard" | "bing" | "model" => "assistant",
        "system" => "system",
        other => other,
    }
}

/// Longest ShareGPT conversation `id`, bytes (it becomes the requests' conversation id).
pub const MAX_ID_BYTES: usize = 1024;

/// Most text all the prompts of one dataset may hold together, bytes: 8 GiB. Every ShareGPT
/// turn repeats its conversation's history, so a file of long conversations grows
/// quadratically into prompts; past this the load stops with the conversation it reached.
pub const MAX_TOTAL_PROMPT_BYTES: usize = 8 << 30;

/// ShareGPT conversations → one draft per answered (or final) user turn; stops after `limit`
/// drafts (the prompts a run asks for: later ones would not be used). A file whose first
/// non-blank character is `[` is one JSON array, read one conversation at a time; any other is
/// JSONL, read one line at a time.
fn parse_sharegpt(
    path: &Path,
    limit: Option<usize>,
    budget: &mut Budget<'_>,
) -> Result<Vec<Draft>, WorkloadError> {
    let mut out = Vec::new();
    let mut total_bytes = 0usize;
    let mut lines = LineReader::open(path, MAX_DATASET_FILE_BYTES, MAX_LINE_BYTES)?;
    // One JSON array (its first non-blank byte is `[`) or JSONL, told from the first chunk;
    // only JSONL is refused for CR-only line ends (JSON takes a CR as whitespace).
    let head = lines.head()?;
    let head = head.strip_prefix(UTF8_BOM).unwrap_or(head);
    if head.trim_ascii_start().starts_with(b"[") {
        drop(lines);
        return parse_sharegpt_array(path, limit, budget);
    }
    lines.refuse_cr_only_line_ends()?;
    let mut n = 0;
    let mut first = true;
    while limit.is_none_or(|l| budget.taken(out.len()) < l) {
        let Some((line_no, line)) = lines.next_line()? else {
            break;
        };
        if first && line.trim_start().starts_with('[') {
            return parse_sharegpt_array(path, limit, budget);
        }
        if let Some(reason) = line_problem(line) {
            return Err(WorkloadError::Parse {
                path: path.to_path_buf(),
                line: Some(line_no),
                reason,
            });
        }
        if line.trim().is_empty() {
            continue;
        }
        first = false;
        budget.check_parse(line, line_no)?;
        let c: Value = serde_json::from_str(line).map_err(|e| WorkloadError::Parse {
            path: path.to_path_buf(),
            line: Some(line_no),
            reason: invalid_json(&e, line),
        })?;
        let mut conv = Conversation {
            path,
            n,
            line: Some(line_no),
            conv: &c,
            total_bytes: &mut total_bytes,
        };
        conv.drafts(&mut out, limit, budget)?;
        n += 1;
    }
    Ok(out)
}

/// A ShareGPT file that is one JSON array, streamed: each conversation is parsed, turned into
/// drafts and dropped before the next is read; the read stops once `limit` drafts are made.
fn parse_sharegpt_array(
    path: &Path,
    limit: Option<usize>,
    budget: &mut Budget<'_>,
) -> Result<Vec<Draft>, WorkloadError> {
    use serde::de::{Deserializer as _, SeqAccess, Visitor};
    let (f, _) = crate::files::open_regular_file(path, MAX_DATASET_FILE_BYTES)?;
    let mut reader = std::io::BufReader::with_capacity(1 << 20, f);
    {
        // A leading UTF-8 byte-order mark is skipped (the array test saw `[` after it).
        use std::io::BufRead as _;
        let head = reader.fill_buf().map_err(|source| WorkloadError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if head.starts_with(UTF8_BOM) {
            reader.consume(UTF8_BOM.len());
        }
    }
    struct Each<'a, 'b> {
        path: &'a Path,
        limit: Option<usize>,
        budget: &'a mut Budget<'b>,
        out: &'a mut Vec<Draft>,
        failed: &'a mut Option<WorkloadError>,
        stopped: &'a mut bool,
    }
    impl<'de> Visitor<'de> for Each<'_, '_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array of conversations")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let mut total_bytes = 0usize;
            let mut n = 0;
            while self
                .limit
                .is_none_or(|l| self.budget.taken(self.out.len()) < l)
            {
                let Some(c) = seq.next_element::<Value>()? else {
                    return Ok(());
                };
                let mut conv = Conversation {
                    path: self.path,
                    n,
                    line: None,
                    conv: &c,
                    total_bytes: &mut total_bytes,
                };
                if let Err(e) = conv.drafts(self.out, self.limit, self.budget) {
                    *self.failed = Some(e);
                    return Err(serde::de::Error::custom("stopped"));
                }
                n += 1;
            }
            *self.stopped = true;
            Ok(())
        }
    }
    let mut out = Vec::new();
    let mut failed = None;
    let mut stopped = false;
    let mut de = serde_json::Deserializer::from_reader(reader);
    let r = de.deserialize_seq(Each {
        path,
        limit,
        budget,
        out: &mut out,
        failed: &mut failed,
        stopped: &mut stopped,
    });
    if let Some(e) = failed {
        return Err(e);
    }
    match r {
        // Stopping early leaves the rest of the array unread, which is not an error.
        Err(_) if stopped => {}
        Err(e) => {
            return Err(WorkloadError::Parse {
                path: path.to_path_buf(),
                line: Some(e.line()),
                reason: array_invalid_json(&e),
            })
        }
        Ok(()) if !stopped => de.end().map_err(|e| WorkloadError::Parse {
            path: path.to_path_buf(),
            line: Some(e.line()),
            reason: array_invalid_json(&e),
        })?,
        Ok(()) => {}
    }
    Ok(out)
}

/// One ShareGPT conversation being turned into drafts.
struct Conversation<'a> {
    path: &'a Path,
    /// Its 0-based index in the file.
    n: usize,
    /// The line it is on (ShareGPT JSONL).
    line: Option<usize>,
    conv: &'a Value,
    /// Text of the prompts built so far, bytes ([`MAX_TOTAL_PROMPT_BYTES`]).
    total_bytes: &'a mut usize,
}

impl Conversation<'_> {
    /// Appends its drafts to `out` (at most up to `limit` in all) within `budget`.
    fn drafts(
        &mut self,
        out: &mut Vec<Draft>,
        limit: Option<usize>,
        budget: &mut Budget<'_>,
    ) -> Result<(), WorkloadError> {
        let (n, line, conv) = (self.n, self.line, self.conv);
        let path = self.path;
        let err = |reason: String| WorkloadError::Parse {
            path: path.to_path_buf(),
            line,
            reason: format!("conversation {n}: {reason}"),
        };
        // An id is a string (or a number, as some exports write it); another type is refused
        // (issue 39's typed checks: `true`, `[1]` or `{}` became `conv-N` silently).
        let id = match conv.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(x)) => x.to_string(),
            None | Some(Value::Null) => format!("conv-{n}"),
            Some(other) => return Err(err(format!("id: {}, not a string", json_kind(other)))),
        };
        if id.len() > MAX_ID_BYTES {
            return Err(err(format!(
                "id: {} bytes, longer than the {MAX_ID_BYTES}-byte limit of an id",
                id.len()
            )));
        }
        let (key, turns) = ["conversations", "conversation", "messages"]
            .into_iter()
            .find_map(|k| Some((k, conv.get(k)?)))
            .ok_or_else(|| {
                err(
                    "missing \"conversations\" array (also accepted: \"conversation\", \
                     \"messages\")"
                        .into(),
                )
            })?;
        let msgs = parse_messages(turns, key).map_err(err)?;
        let mut turn = 0u32;
        for (k, m) in msgs.iter().enumerate() {
            if limit.is_some_and(|l| budget.taken(out.len()) >= l) {
                break;
            }
            if m.role != "user" {
                continue;
            }
            let history = &msgs[..=k];
            let reply = match msgs.get(k + 1) {
                Some(next) if next.role == "assistant" => Reply::Text(next.content.clone()),
                Some(_) => continue, // user followed by user: fold into the next prompt
                None => Reply::Unknown,
            };
            if let Reply::Text(r) = &reply {
                if r.len() > MAX_PROMPT_BYTES {
                    check_prompt_bytes(r)
                        .map_err(|e| err(format!("turn {turn}: the reply: {e}")))?;
                }
            }
            let text = join_contents(history);
            check_prompt_bytes(&text).map_err(|e| err(format!("turn {turn}: {e}")))?;
            // The text and the messages each hold the history once.
            *self.total_bytes += 2 * text.len();
            if *self.total_bytes > MAX_TOTAL_PROMPT_BYTES {
                return Err(err(format!(
                    "turn {turn}: the prompts built up to here hold more than \
                     {MAX_TOTAL_PROMPT_BYTES} bytes of text (each turn repeats its \
                     conversation's history): ask for fewer prompts (--num-prompts) or use a \
                     smaller file"
                )));
            }
            let d = Draft {
                line,
                label: format!("conversation {n}, turn {turn}: "),
                text,
                messages: Some(history.to_vec()),
                conversation_id: Some(id.clone()),
                turn: Some(turn),
                reply,
                extra_headers: Vec::new(),
            };
            keep(out, d, budget, line)?;
            turn += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39 §2 finding 4: a line's parse is estimated from its separators outside strings
    /// (64 bytes each) besides its length; text (commas, brackets and escaped quotes inside a
    /// string) costs its length only.
    #[test]
    fn a_lines_parse_estimate_counts_values_outside_strings() {
        assert_eq!(parse_bytes_estimate("[0,0,0]"), 7 + 3 * 64);
        assert_eq!(
            parse_bytes_estimate(r#"{"prompt":"a, [b] {c}: \"d,\" e"}"#),
            33 + 2 * 64
        );
        assert_eq!(parse_bytes_estimate(r#"{"h1":1,"h2":2}"#), 15 + 4 * 64);
        // Weighted objects; a bounded key's array is not counted (nested arrays in it neither).
        let line = br#"{"hash_ids":[1,[2],3],"x":[1,2],"y":"hash_ids"}"#;
        assert_eq!(
            json_parse_estimate(line, 64, 1000, Some(b"hash_ids")),
            line.len() as u64 + 1000 + 7 * 64
        );
        assert_eq!(
            json_parse_estimate(line, 64, 1000, None),
            line.len() as u64 + 1000 + 11 * 64
        );
    }

    fn tok() -> Tokenizer {
        Tokenizer::load("o200k_base").unwrap()
    }

    fn write(dir: &tempfile::TempDir, name: &str, body: &str) -> std::path::PathBuf {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p
    }

    #[test]
    fn jsonl_prompts_lengths_and_counts() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "p.jsonl",
            "{\"prompt\": \"hello world\", \"max_tokens\": 7}\n\n\"bare string\"\n{\"messages\": [{\"role\": \"user\", \"content\": \"hi there\"}]}\n",
        );
        let t = tok();
        let ps = load_dataset(DatasetKind::Jsonl, &p, &t, &DatasetOptions::default()).unwrap();
        assert_eq!(ps.len(), 3);
        assert_eq!(ps[0].text, "hello world");
        assert_eq!(ps[0].prompt_tokens, 2);
        assert_eq!(ps[0].max_tokens, 7);
        assert_eq!(ps[1].max_tokens, 256);
        assert_eq!(ps[2].messages.as_ref().unwrap()[0].content, "hi there");
        let opts = DatasetOptions {
            num_prompts: Some(5),
            output_len: Some(9),
            ..Default::default()
        };
        let ps = load_dataset(DatasetKind::Jsonl, &p, &t, &opts).unwrap();
        assert_eq!(ps.len(), 5);
        assert!(ps.iter().all(|p| p.max_tokens == 9));
        assert_eq!(ps[3].text, "hello world");
    }

    /// Trial of issue 39, finding 9: a key differing in case is named with its fix, a JSON
    /// array line is said to be a `.json` file's records, NUL bytes are said to be no JSON.
    #[test]
    fn jsonl_input_hints_name_the_likely_mistake() {
        let d = tempfile::tempdir().unwrap();
        let load = |name: &str, body: &str| {
            let p = write(&d, name, body);
            load_dataset(DatasetKind::Jsonl, &p, &tok(), &DatasetOptions::default())
                .unwrap_err()
                .to_string()
        };
        let e = load("k.jsonl", "{\"Prompt\": \"hi\"}\n");
        assert!(
            e.ends_with(
                "expected a \"prompt\" or \"text\" string or a \"messages\" array (found \
                 \"Prompt\": did you mean \"prompt\"?)"
            ),
            "{e}"
        );
        let e = load("a.jsonl", "[{\"prompt\": \"hi\"}]\n");
        assert!(
            e.contains(":1: a JSON array, where JSONL has one JSON object"),
            "{e}"
        );
        let e = load("z.jsonl", "\0\0\0\0\n");
        assert!(
            e.ends_with(
                ":1: the line holds a NUL byte at byte 1: a binary or zero-filled file, not JSON \
                 text"
            ),
            "{e}"
        );
    }

    #[test]
    fn jsonl_extra_headers_per_line() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "h.jsonl",
            "{\"prompt\": \"a\", \"extra_headers\": {\"X-Tenant\": \"t1\", \"X-data-parallel-rank\": \"3\", \"X-Flag\": \"true\"}}\n{\"prompt\": \"b\"}\n",
        );
        let ps = load_dataset(DatasetKind::Jsonl, &p, &tok(), &DatasetOptions::default()).unwrap();
        let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            ps[0].extra_headers,
            pairs(&[
                ("X-Tenant", "t1"),
                ("X-data-parallel-rank", "3"),
                ("X-Flag", "true")
            ])
        );
        assert!(ps[1].extra_headers.is_empty());
        for (body, why) in [
            (
                "{\"prompt\": \"a\", \"extra_headers\": [1]}",
                "bad.jsonl:2: \"extra_headers\" is an array, not an object of header name → string value",
            ),
            // Issue 39's typed checks: a header value is a JSON string, as a --header value
            // is text; a number, a bool, null, an array or an object is refused, named.
            (
                "{\"prompt\": \"a\", \"extra_headers\": {\"X-A\": 5}}",
                "bad.jsonl:2: extra_headers \"X-A\": the value is the number 5, not a string (a header value is text: write it quoted, \"5\")",
            ),
            (
                "{\"prompt\": \"a\", \"extra_headers\": {\"X-A\": \"ok\", \"X-B\": true}}",
                "bad.jsonl:2: extra_headers \"X-B\": the value is true, not a string (a header value is text: write it quoted, \"true\")",
            ),
            (
                "{\"prompt\": \"a\", \"extra_headers\": {\"X-A\": null}}",
                "bad.jsonl:2: extra_headers \"X-A\": the value is null, not a string",
            ),
            (
                "{\"prompt\": \"a\", \"extra_headers\": {\"X-A\": [\"v\"]}}",
                "bad.jsonl:2: extra_headers \"X-A\": the value is an array, not a string",
            ),
            (
                "{\"prompt\": \"a\", \"extra_headers\": \"X-A: v\"}",
                "bad.jsonl:2: \"extra_headers\" is the string \"X-A: v\", not an object of header name → string value",
            ),
            (
                "{\"prompt\": \"a\", \"extra_headers\": {\"bad name\": \"v\"}}",
                "not a valid HTTP header name",
            ),
            (
                "{\"prompt\": \"a\", \"extra_headers\": {\"X\": \"a\\r\\nb\"}}",
                "control character",
            ),
            (
                "{\"prompt\": \"a\", \"extra_headers\": {\"X\": {}}}",
                "bad.jsonl:2: extra_headers \"X\": the value is an object, not a string",
            ),
            // Fresh tester's finding 4: the fields the client writes itself, refused at load.
            (
                "{\"prompt\": \"a\", \"extra_headers\": {\"Content-Length\": \"3\"}}",
                "extra_headers \"Content-Length\": Content-Length is a framing, body-encoding or connection field the client writes itself; it cannot be set",
            ),
            (
                "{\"prompt\": \"a\", \"extra_headers\": {\"transfer-encoding\": \"chunked\"}}",
                "extra_headers \"transfer-encoding\": transfer-encoding is a framing, body-encoding or connection field the client writes itself; it cannot be set",
            ),
            (
                "{\"prompt\": \"a\", \"extra_headers\": {\"Host\": \"evil\"}}",
                "extra_headers \"Host\": Host cannot be set per request (give it once for every request with --header)",
            ),
            (
                "{\"prompt\": \"a\", \"extra_headers\": {\"Connection\": \"close\"}}",
                "extra_headers \"Connection\": Connection is a framing, body-encoding or connection field the client writes itself; it cannot be set",
            ),
            // f14 item 4: a body description that is not the body's.
            (
                "{\"prompt\": \"a\", \"extra_headers\": {\"Content-Encoding\": \"gzip\"}}",
                "extra_headers \"Content-Encoding\": Content-Encoding is a framing, body-encoding or connection field the client writes itself; it cannot be set",
            ),
            (
                "{\"prompt\": \"a\", \"extra_headers\": {\"Content-Type\": \"text/plain\"}}",
                "extra_headers \"Content-Type\": Content-Type: \"text/plain\" would misdescribe the body",
            ),
            // Fresh tester's finding 6: an empty prompt, as traces refuse `in: 0`.
            (
                "{\"prompt\": \"\"}",
                "the prompt is empty: a request needs at least 1 input token",
            ),
            ("\"\"", "the prompt is empty"),
            (
                "{\"messages\": [{\"role\": \"user\", \"content\": \"\"}]}",
                "the prompt is empty",
            ),
        ] {
            let p = write(
                &d,
                "bad.jsonl",
                &format!("{{\"prompt\": \"ok\"}}\n{body}\n"),
            );
            let e = load_dataset(DatasetKind::Jsonl, &p, &tok(), &DatasetOptions::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains("bad.jsonl:2") && e.contains(why), "{e}");
        }
    }

    #[test]
    fn jsonl_errors_name_file_and_line() {
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "bad.jsonl", "{\"prompt\": \"ok\"}\n{\"prompt\": 3}\n");
        let e = load_dataset(DatasetKind::Jsonl, &p, &tok(), &DatasetOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.jsonl:2"), "{e}");
        let p = write(&d, "bad2.jsonl", "\n\n{oops\n");
        let e = load_dataset(DatasetKind::Jsonl, &p, &tok(), &DatasetOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("bad2.jsonl:3") && e.contains("invalid JSON"),
            "{e}"
        );
        let p = write(&d, "nofield.jsonl", "{\"foo\": 1}\n");
        let e = load_dataset(DatasetKind::Jsonl, &p, &tok(), &DatasetOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("nofield.jsonl:1"), "{e}");
        let p = write(&d, "empty.jsonl", "\n");
        let e = load_dataset(DatasetKind::Jsonl, &p, &tok(), &DatasetOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("empty.jsonl") && e.contains("no usable prompt"),
            "{e}"
        );
        let missing = d.path().join("missing.jsonl");
        let e = load_dataset(
            DatasetKind::Jsonl,
            &missing,
            &tok(),
            &DatasetOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("missing.jsonl"), "{e}");
        let p = d.path().join("bin.jsonl");
        std::fs::write(&p, [0xff, 0xfe, b'\n']).unwrap();
        let e = load_dataset(DatasetKind::Jsonl, &p, &tok(), &DatasetOptions::default())
            .unwrap_err()
            .to_string();
        // FF FE is the UTF-16 (little-endian) byte-order mark: named as such.
        assert!(e.contains("bin.jsonl:1") && e.contains("UTF-16"), "{e}");
    }

    fn jsonl_err(body: &[u8], opts: &DatasetOptions) -> String {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("d.jsonl");
        std::fs::write(&p, body).unwrap();
        let e = load_dataset(DatasetKind::Jsonl, &p, &tok(), opts)
            .unwrap_err()
            .to_string();
        e.strip_prefix(&p.display().to_string())
            .unwrap()
            .to_string()
    }

    /// Issue 39, fresh tester: a lone `\ud800` in a prompt was serde's "unexpected end of hex
    /// escape"; it is named as a lone UTF-16 surrogate with its line and column. A whole pair
    /// and other escapes are read as before.
    #[test]
    fn a_lone_surrogate_escape_is_named_with_its_line_and_column() {
        let o = DatasetOptions::default();
        let named = |escape: &str, column: usize| {
            format!(
                ":2: invalid JSON: a lone UTF-16 surrogate `{escape}` at column {column} (half of \
                 a UTF-16 pair, not a character: the text was cut between the pair's halves or \
                 encoded wrongly; write the character itself, or its whole pair)"
            )
        };
        for (line, escape, column) in [
            (r#"{"prompt":"\ud800 lone"}"#, "\\ud800", 12),
            (r#"{"prompt":"a\\\udc00"}"#, "\\udc00", 15),
            (r#"{"prompt":"\ud83d\u0041"}"#, "\\ud83d", 12),
            (r#"{"prompt":"\ud800"}"#, "\\ud800", 12),
        ] {
            let file = format!("{{\"prompt\": \"ok\"}}\n{line}\n");
            assert_eq!(
                jsonl_err(file.as_bytes(), &o),
                named(escape, column),
                "{line}"
            );
        }
        assert_eq!(lone_surrogate(r#"{"prompt":"\ud83d\ude00 \\ud800"}"#), None);
    }

    /// Issue 39 §3: an output length of 4e9 was sent as `max_tokens`; every length read is
    /// bounded by the context cap, naming the line and field.
    #[test]
    fn huge_output_lengths_are_refused_naming_the_line() {
        let o = DatasetOptions::default();
        assert_eq!(
            jsonl_err(
                b"{\"prompt\": \"a\"}\n{\"prompt\": \"b\", \"output_len\": 4000000000}\n",
                &o
            ),
            ":2: output_len: 4000000000 tokens is above the cap of 1048576 tokens"
        );
        assert_eq!(
            jsonl_err(b"{\"prompt\": \"b\", \"max_tokens\": 1048577}\n", &o),
            ":1: max_tokens: 1048577 tokens is above the cap of 1048576 tokens"
        );
        assert_eq!(
            jsonl_err(b"{\"prompt\": \"b\", \"output_tokens\": 1e20}\n", &o),
            ":1: output_tokens: output length 1e+20 is not a whole number of tokens from 1 to \
             the cap of 1048576"
        );
        // A whole number written as a float is that number, bounded the same (issue 39, fresh
        // tester: `1e9` was "1000000000.0 is not a positive integer").
        assert_eq!(
            jsonl_err(b"{\"prompt\": \"b\", \"output_len\": 1e9}\n", &o),
            ":1: output_len: 1000000000 tokens is above the cap of 1048576 tokens"
        );
        for bad in ["2.5", "0", "-1", "0.0"] {
            assert_eq!(
                jsonl_err(
                    format!("{{\"prompt\": \"b\", \"output_len\": {bad}}}\n").as_bytes(),
                    &o
                ),
                format!(
                    ":1: output_len: output length {bad} is not a whole number of tokens from 1 \
                     to the cap of 1048576"
                )
            );
        }
        // The cap itself is accepted; a smaller cap (a model's context) applies to prompts too.
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "ok.jsonl",
            "{\"prompt\": \"b\", \"max_tokens\": 1048576}\n",
        );
        let ps = load_dataset(DatasetKind::Jsonl, &p, &tok(), &o).unwrap();
        assert_eq!(ps[0].max_tokens, 1 << 20);
        let small = DatasetOptions {
            max_context_tokens: 3,
            ..Default::default()
        };
        assert_eq!(
            jsonl_err(b"\n{\"prompt\": \"one two three four\"}\n", &small),
            ":2: prompt of 4 tokens is above the cap of 3 tokens"
        );
        let d2 = tempfile::tempdir().unwrap();
        let p = write(
            &d2,
            "sg.json",
            r#"[{"conversations": [{"from": "human", "value": "hi"},
                 {"from": "gpt", "value": "one two three four"}]}]"#,
        );
        let e = load_dataset(DatasetKind::ShareGpt, &p, &tok(), &small)
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "sg.json: conversation 0, turn 0: recorded reply (the output length) of 4 \
                 tokens is above the cap of 3 tokens"
            ),
            "{e}"
        );
    }

    /// Issue 39 §3: a 100 MB prompt line was sent whole; a prompt's text is bounded in bytes
    /// before it is tokenized.
    #[test]
    fn a_huge_prompt_line_is_refused_naming_the_line() {
        let big = "x".repeat(MAX_PROMPT_BYTES + 1);
        let body = format!("{{\"prompt\": \"ok\"}}\n{{\"prompt\": \"{big}\"}}\n");
        assert_eq!(
            jsonl_err(body.as_bytes(), &DatasetOptions::default()),
            ":2: the prompt is 16777217 bytes of text, longer than the 16777216-byte limit of a \
             prompt"
        );
        let body = format!("{{\"messages\": [{{\"role\": \"user\", \"content\": \"{big}\"}}]}}\n");
        assert!(jsonl_err(body.as_bytes(), &DatasetOptions::default())
            .starts_with(":1: the prompt is 16777217 bytes"));
    }

    /// A ShareGPT id becomes every request's conversation id: bounded too. A run asking for
    /// fewer prompts than the file holds builds only those.
    #[test]
    fn sharegpt_ids_are_bounded_and_only_the_prompts_asked_for_are_built() {
        let d = tempfile::tempdir().unwrap();
        let id = "i".repeat(MAX_ID_BYTES + 1);
        let p = write(
            &d,
            "sg.jsonl",
            &format!(
                "{{\"id\": \"a\", \"conversations\": [{{\"from\": \"human\", \"value\": \"x\"}}]}}\n\
                 {{\"id\": \"{id}\", \"conversations\": []}}\n"
            ),
        );
        let e = load_dataset(
            DatasetKind::ShareGpt,
            &p,
            &tok(),
            &DatasetOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.ends_with("sg.jsonl:2: conversation 1: id: 1025 bytes, longer than the 1024-byte limit of an id"),
            "{e}"
        );
        let one = DatasetOptions {
            num_prompts: Some(1),
            ..Default::default()
        };
        let ps = load_dataset(DatasetKind::ShareGpt, &p, &tok(), &one).unwrap();
        assert_eq!(ps.len(), 1);
        assert_eq!(ps[0].conversation_id.as_deref(), Some("a"));
    }

    /// Issue 39 §3: a FIFO or a device as --dataset-path is refused at once (not read forever).
    #[cfg(unix)]
    #[test]
    fn a_fifo_or_device_dataset_is_refused_at_once() {
        let o = DatasetOptions::default();
        let e = load_dataset(DatasetKind::Jsonl, Path::new("/dev/zero"), &tok(), &o)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "/dev/zero: not a regular file (a character device): only regular files are read"
        );
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("p.jsonl");
        if std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success())
        {
            let e = load_dataset(DatasetKind::ShareGpt, &fifo, &tok(), &o)
                .unwrap_err()
                .to_string();
            assert!(e.ends_with(": not a regular file (a FIFO): only regular files are read"));
        }
    }

    /// Issue 39 §3: a UTF-8 byte-order mark was "invalid JSON at column 1". A leading one is
    /// skipped; one starting a later line, and UTF-16 files, are named as such.
    #[test]
    fn byte_order_marks_are_named_or_skipped() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("bom.jsonl");
        std::fs::write(&p, b"\xEF\xBB\xBF{\"prompt\": \"hello world\"}\n").unwrap();
        let o = DatasetOptions::default();
        let ps = load_dataset(DatasetKind::Jsonl, &p, &tok(), &o).unwrap();
        assert_eq!(
            (ps[0].text.as_str(), ps[0].prompt_tokens),
            ("hello world", 2)
        );
        let p = d.path().join("bom.json");
        std::fs::write(
            &p,
            b"\xEF\xBB\xBF[{\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]}]",
        )
        .unwrap();
        assert_eq!(
            load_dataset(DatasetKind::ShareGpt, &p, &tok(), &o).unwrap()[0].text,
            "hi"
        );
        assert_eq!(
            jsonl_err(
                b"{\"prompt\": \"a\"}\n\xEF\xBB\xBF{\"prompt\": \"b\"}\n",
                &o
            ),
            ":2: the line starts with a UTF-8 byte-order mark (U+FEFF, bytes EF BB BF; files \
             concatenated with their marks?): remove it"
        );
        assert_eq!(
            jsonl_err(b"\xFF\xFE{\x00}\x00", &o),
            ":1: the file is UTF-16 (little-endian) text (it starts with that byte-order mark); \
             save it as UTF-8"
        );
    }

    #[test]
    fn sharegpt_all_turns_with_history() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "sg.json",
            r#"[
              {"id": "a", "conversations": [
                {"from": "system", "value": "Be brief."},
                {"from": "human", "value": "What is 2+2?"},
                {"from": "gpt", "value": "4"},
                {"from": "human", "value": "And 3+3?"},
                {"from": "gpt", "value": "six, which is 6"}
              ]},
              {"conversations": [{"from": "human", "value": "Unanswered"}]}
            ]"#,
        );
        let t = tok();
        let ps = load_dataset(DatasetKind::ShareGpt, &p, &t, &DatasetOptions::default()).unwrap();
        assert_eq!(ps.len(), 3);
        assert_eq!(ps[0].conversation_id.as_deref(), Some("a"));
        assert_eq!((ps[0].turn, ps[1].turn), (Some(0), Some(1)));
        assert_eq!(ps[0].text, "Be brief.\n\nWhat is 2+2?");
        assert_eq!(ps[0].max_tokens, 1); // "4"
        let m1 = ps[1].messages.as_ref().unwrap();
        assert_eq!(m1.len(), 4);
        assert_eq!(m1[2].role, "assistant");
        assert_eq!(m1[3].content, "And 3+3?");
        assert_eq!(ps[1].text, "Be brief.\n\nWhat is 2+2?\n\n4\n\nAnd 3+3?");
        assert_eq!(ps[1].prompt_tokens as usize, t.count(&ps[1].text));
        assert_eq!(ps[1].max_tokens as usize, t.count("six, which is 6"));
        assert_eq!(ps[2].conversation_id.as_deref(), Some("conv-1"));
        assert_eq!(ps[2].max_tokens, 256);
    }

    #[test]
    fn sharegpt_jsonl_repeats_and_consecutive_user_turns() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "sg.jsonl",
            concat!(
                "{\"id\": 7, \"conversations\": [{\"from\": \"human\", \"value\": \"a\"},",
                " {\"from\": \"human\", \"value\": \"b\"}, {\"from\": \"gpt\", \"value\": \"c d\"}]}\n",
                "\n",
                "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}, {\"role\": \"assistant\", \"content\": \"y\"}]}\n"
            ),
        );
        let t = tok();
        let opts = DatasetOptions {
            num_prompts: Some(5),
            ..Default::default()
        };
        let ps = load_dataset(DatasetKind::ShareGpt, &p, &t, &opts).unwrap();
        // conversation 7: the first user message folds into the prompt of the second
        assert_eq!(ps[0].text, "a\n\nb");
        assert_eq!(ps[0].turn, Some(0));
        assert_eq!(ps[0].max_tokens as usize, t.count("c d"));
        assert_eq!(ps[1].conversation_id.as_deref(), Some("conv-1"));
        // repeats of the file get distinct conversation ids
        let ids: Vec<_> = ps
            .iter()
            .map(|p| p.conversation_id.clone().unwrap())
            .collect();
        assert_eq!(ids, ["7", "conv-1", "7~1", "conv-1~1", "7~2"]);
    }

    /// Issue 39 §10: the error names the spelling the file uses (`value`, not `content`),
    /// both spellings when neither is there, and the shape of a CR-only or BOM-less UTF-16
    /// file.
    #[test]
    fn messages_name_the_fields_and_shapes_the_file_has() {
        let d = tempfile::tempdir().unwrap();
        let o = DatasetOptions::default();
        let sg = |name: &str, body: &[u8]| {
            let p = d.path().join(name);
            std::fs::write(&p, body).unwrap();
            let e = load_dataset(DatasetKind::ShareGpt, &p, &tok(), &o)
                .unwrap_err()
                .to_string();
            e.strip_prefix(&p.display().to_string())
                .unwrap()
                .to_string()
        };
        assert_eq!(
            sg(
                "v.json",
                br#"[{"conversations": [{"from": "human", "value": 7}]}]"#
            ),
            ": conversation 0: message 0: \"value\" must be a string"
        );
        assert_eq!(
            sg(
                "c.json",
                br#"[{"conversations": [{"from": "human", "text": "x"}]}]"#
            ),
            ": conversation 0: message 0: missing \"content\" (or \"value\", ShareGPT's spelling)"
        );
        assert_eq!(
            sg("r.json", br#"[{"conversations": [{"value": "x"}]}]"#),
            ": conversation 0: message 0: missing \"role\" (or \"from\", ShareGPT's spelling)"
        );
        assert_eq!(
            sg("a.json", br#"[{"conversations": {"from": "human"}}]"#),
            ": conversation 0: \"conversations\" must be an array"
        );
        assert_eq!(
            sg("a.json", br#"[{"conversation": "x"}]"#),
            ": conversation 0: \"conversation\" must be an array"
        );
        // Issue 39's typed checks: an id that is neither a string nor a number is refused
        // (it became `conv-0` silently).
        assert_eq!(
            sg(
                "i.json",
                br#"[{"id": true, "conversations": [{"from": "human", "value": "hi"}]}]"#
            ),
            ": conversation 0: id: true, not a string"
        );
        assert_eq!(
            sg("i.json", br#"[{"id": ["a"], "conversations": []}]"#),
            ": conversation 0: id: an array, not a string"
        );
        assert_eq!(
            sg("m.json", br#"[{"id": 1}]"#),
            ": conversation 0: missing \"conversations\" array (also accepted: \
             \"conversation\", \"messages\")"
        );
        assert_eq!(
            jsonl_err(br#"{"text": 5}"#, &o),
            ":1: \"text\" must be a string"
        );
        assert_eq!(
            sg(
                "cr.jsonl",
                b"{\"conversations\": []}\r{\"conversations\": []}\r"
            ),
            ":1: the file's lines end in a carriage return alone (CR, \\r: classic Mac OS line \
             ends; 2 lines and no LF), so it reads as one line; convert the line ends to LF \
             (e.g. `tr '\\r' '\\n' < FILE > FILE.jsonl`)"
        );
        // A ShareGPT JSON array with CR line ends is valid JSON (CR is whitespace).
        let p = d.path().join("cr.json");
        std::fs::write(
            &p,
            b"[\r{\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]}\r]\r",
        )
        .unwrap();
        assert_eq!(
            load_dataset(DatasetKind::ShareGpt, &p, &tok(), &o)
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            jsonl_err(b"{\"prompt\": \"a\"}\r{\"prompt\": \"b\"}", &o),
            ":1: the file's lines end in a carriage return alone (CR, \\r: classic Mac OS line \
             ends; 2 lines and no LF), so it reads as one line; convert the line ends to LF \
             (e.g. `tr '\\r' '\\n' < FILE > FILE.jsonl`)"
        );
        assert!(
            jsonl_err(b"{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\r{}\n", &o).ends_with(
                " (the line holds a carriage return (CR, \\r) without LF: lines ending in CR \
                 alone are not split; convert them to LF, e.g. `tr '\\r' '\\n'`)"
            )
        );
        let u16le: Vec<u8> = "{\"prompt\": \"a\"}\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        assert_eq!(
            jsonl_err(&u16le, &o),
            ":1: the file looks like UTF-16 (little-endian) text without a byte-order mark \
             (every other byte is NUL); save it as UTF-8 (e.g. `iconv -f UTF-16LE -t UTF-8 FILE \
             > FILE.utf8`)"
        );
    }

    /// s3's file-shape checks (issue 39 §10) hold on s1's streamed reads (issue 39 §2): with
    /// `--num-prompts 1` (one line read) a BOM-less UTF-16 file larger than the read buffer is
    /// still named at `FILE:1` from its first bytes, CR-only ShareGPT JSONL is refused before
    /// any line, a ShareGPT array in BOM-less UTF-16 is named (not a serde error), and a
    /// ShareGPT JSONL line with a lone CR gets the hint.
    #[test]
    fn file_shape_checks_hold_on_streamed_reads() {
        let d = tempfile::tempdir().unwrap();
        let one = DatasetOptions {
            num_prompts: Some(1),
            ..DatasetOptions::default()
        };
        let err = |kind: DatasetKind, name: &str, body: &[u8]| {
            let p = d.path().join(name);
            std::fs::write(&p, body).unwrap();
            let e = load_dataset(kind, &p, &tok(), &one)
                .unwrap_err()
                .to_string();
            e.strip_prefix(&p.display().to_string())
                .unwrap()
                .to_string()
        };
        let utf16 = |s: &str| -> Vec<u8> { s.encode_utf16().flat_map(u16::to_le_bytes).collect() };
        let named = ":1: the file looks like UTF-16 (little-endian) text without a byte-order \
                     mark (every other byte is NUL); save it as UTF-8 (e.g. `iconv -f UTF-16LE \
                     -t UTF-8 FILE > FILE.utf8`)";
        let big = utf16(&"{\"prompt\": \"a\"}\n".repeat(100_000));
        assert!(big.len() > 2 << 20);
        assert_eq!(err(DatasetKind::Jsonl, "big.jsonl", &big), named);
        let arr = utf16(r#"[{"conversations": [{"from": "human", "value": "hi"}]}]"#);
        assert_eq!(err(DatasetKind::ShareGpt, "w.json", &arr), named);
        assert_eq!(
            err(
                DatasetKind::ShareGpt,
                "cr.jsonl",
                b"{\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]}\r{}\r{}"
            ),
            ":1: the file's lines end in a carriage return alone (CR, \\r: classic Mac OS line \
             ends; 3 lines and no LF), so it reads as one line; convert the line ends to LF \
             (e.g. `tr '\\r' '\\n' < FILE > FILE.jsonl`)"
        );
        let all = DatasetOptions::default();
        let p = d.path().join("lone.jsonl");
        std::fs::write(
            &p,
            b"{\"conversations\": [{\"from\": \"human\", \"value\": \"hi\"}]}\n{}\r{}\n",
        )
        .unwrap();
        let e = load_dataset(DatasetKind::ShareGpt, &p, &tok(), &all)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("{}:2: invalid JSON: ", p.display())),
            "{e}"
        );
        assert!(
            e.ends_with(
                " (the line holds a carriage return (CR, \\r) without LF: lines ending in CR \
                 alone are not split; convert them to LF, e.g. `tr '\\r' '\\n'`)"
            ),
            "{e}"
        );
    }

    #[test]
    fn sharegpt_errors_name_the_file() {
        let d = tempfile::tempdir().unwrap();
        let p = write(&d, "sg.json", "[{\"id\": 1}]");
        let e = load_dataset(
            DatasetKind::ShareGpt,
            &p,
            &tok(),
            &DatasetOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("sg.json") && e.contains("conversations"), "{e}");
        let p = write(&d, "trunc.json", "[{\"id\": 1,\n \"conversations\": [");
        let e = load_dataset(
            DatasetKind::ShareGpt,
            &p,
            &tok(),
            &DatasetOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("trunc.json:2"), "{e}");
        let p = write(&d, "l.jsonl", "{\"conversations\": []}\n{bad\n");
        let e = load_dataset(
            DatasetKind::ShareGpt,
            &p,
            &tok(),
            &DatasetOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("l.jsonl:2"), "{e}");
        // A lone surrogate in a ShareGPT array is named too (issue 39, fresh tester).
        let p = write(
            &d,
            "s.json",
            "[{\"conversations\": [\n{\"from\": \"human\", \"value\": \"\\ud800 x\"}]}]",
        );
        let e = load_dataset(
            DatasetKind::ShareGpt,
            &p,
            &tok(),
            &DatasetOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("s.json:2: invalid JSON: a lone UTF-16 surrogate escape"),
            "{e}"
        );
    }

    /// Issue 39 §2, finding 1: a 1.9 GB dataset was read whole for a `--num-prompts 2` bench
    /// and aborted under `ulimit -v 1000000`. The file is read a line at a time, up to the
    /// prompts asked for: two lines followed by a 1 GiB sparse tail (one line of NUL bytes)
    /// load without touching the tail; asking for all of it stops at the line's cap.
    #[test]
    fn only_the_lines_a_run_uses_are_read() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "big.jsonl",
            "{\"prompt\": \"a\"}\n{\"prompt\": \"b\"}\n",
        );
        let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
        f.set_len(1 << 30).unwrap();
        let two = DatasetOptions {
            num_prompts: Some(2),
            ..Default::default()
        };
        let ps = load_dataset(DatasetKind::Jsonl, &p, &tok(), &two).unwrap();
        assert_eq!(
            ps.iter().map(|p| p.text.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        let e = load_dataset(DatasetKind::Jsonl, &p, &tok(), &DatasetOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                ":3: the line is longer than the 67108864-byte limit of a line of this input"
            ),
            "{e}"
        );
        // A ShareGPT array is streamed the same way: what follows the prompts asked for (here
        // text that is not JSON) is never read.
        let p = write(
            &d,
            "sg.json",
            "[{\"id\": \"a\", \"conversations\": [{\"from\": \"human\", \"value\": \"x\"}]},\n\
             {\"id\": \"b\", \"conversations\": [{\"from\": \"human\", \"value\": \"y\"}]},\n\
             not json at all",
        );
        let ps = load_dataset(DatasetKind::ShareGpt, &p, &tok(), &two).unwrap();
        assert_eq!(ps.len(), 2);
        assert_eq!(ps[1].conversation_id.as_deref(), Some("b"));
        let e = load_dataset(
            DatasetKind::ShareGpt,
            &p,
            &tok(),
            &DatasetOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("sg.json:3: invalid JSON: expected ident"), "{e}");
    }

    /// Issue 39 §2: the prompts count against the memory budget as they are read; the prompt
    /// that passes it is refused naming its line and how many fit (each prompt of 1,000 bytes
    /// of text counts 1,000 + 256 bytes).
    /// Issue 39 §2 finding 2: a prompt's `output_len` counts its record's per-token memory
    /// (32 bytes a token): 1,000 bytes of text and 100 output tokens are 1,256 + 3,200 bytes.
    #[test]
    fn a_prompts_output_len_counts_against_the_memory_budget() {
        let d = tempfile::tempdir().unwrap();
        let line = format!(
            "{{\"prompt\": \"{}\", \"output_len\": 100}}\n",
            "x".repeat(1000)
        );
        let p = write(&d, "p.jsonl", &line.repeat(3));
        let within = |most: u64, n: usize| DatasetOptions {
            num_prompts: Some(n),
            memory_budget: Some(most),
            ..Default::default()
        };
        let ok = load_dataset(DatasetKind::Jsonl, &p, &tok(), &within(2 * 4456, 2));
        assert_eq!(ok.unwrap().len(), 2);
        let e = load_dataset(DatasetKind::Jsonl, &p, &tok(), &within(2 * 4456 + 4455, 3))
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("--num-prompts 2 or fewer fit (nothing was sent)"),
            "{e}"
        );
    }

    /// Issue 39's leftovers, 3: when not even the first prompt fits, the load goes on counting
    /// without keeping and says what it needs: the file's prompts (9,448 bytes each) and its
    /// repeats up to --num-prompts as whole rounds of the file (5 of 3 lines: 2 rounds).
    #[test]
    fn not_one_prompt_fitting_counts_what_the_load_needs() {
        let d = tempfile::tempdir().unwrap();
        let line = format!("{{\"prompt\": \"{}\"}}\n", "x".repeat(1000));
        let p = write(&d, "p.jsonl", &line.repeat(3));
        // Each prompt: its 1,000 bytes, 256 besides and its reply's record, the default 256
        // tokens × 32 bytes.
        const P: u64 = 1256 + 256 * 32;
        let within = |most: u64, n: usize| DatasetOptions {
            num_prompts: Some(n),
            memory_budget: Some(most),
            ..Default::default()
        };
        let none = |most: u64, n: usize| match load_dataset(
            DatasetKind::Jsonl,
            &p,
            &tok(),
            &within(most, n),
        )
        .unwrap_err()
        {
            WorkloadError::NoneFits {
                line,
                what,
                count,
                need,
                room,
                ..
            } => (line, what, count, need, room),
            other => panic!("{other}"),
        };
        assert_eq!(none(P - 1, 2), (Some(1), "prompt", 2, 2 * P, P - 1));
        assert_eq!(none(1000, 5), (Some(1), "prompt", 5, 2 * 3 * P, 1000));
        let e = load_dataset(DatasetKind::Jsonl, &p, &tok(), &within(1000, 5))
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "p.jsonl:1: not one prompt of it fits: the 5 prompts the run reads need about 56 \
                 KiB and 0 KiB of memory is left for them (`ulimit -v` or the memory available, \
                 less what the streams, records and the process need)"
            ),
            "{e}"
        );
        // At the room it asked for, the load passes.
        let ok = load_dataset(DatasetKind::Jsonl, &p, &tok(), &within(2 * P, 2));
        assert_eq!(ok.unwrap().len(), 2);
    }

    #[test]
    fn prompts_beyond_the_memory_budget_are_refused_naming_what_fits() {
        let d = tempfile::tempdir().unwrap();
        let line = format!("{{\"prompt\": \"{}\"}}\n", "x".repeat(1000));
        let p = write(&d, "p.jsonl", &line.repeat(3));
        // Each prompt: its 1,000 bytes, 256 besides and its reply's record, the default 256
        // tokens × 32 bytes.
        const P: u64 = 1256 + 256 * 32;
        let within = |most: u64, n: usize| DatasetOptions {
            num_prompts: Some(n),
            memory_budget: Some(most),
            ..Default::default()
        };
        assert_eq!(
            load_dataset(DatasetKind::Jsonl, &p, &tok(), &within(2 * P, 2))
                .unwrap()
                .len(),
            2
        );
        let e = load_dataset(DatasetKind::Jsonl, &p, &tok(), &within(2 * P, 3))
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with(
                "p.jsonl:3: the prompts read up to here need more than the 0 MiB of memory left \
                 for prompts (their text and their replies' records: `ulimit -v` or the memory \
                 available, less what the streams, records and the process need); \
                 --num-prompts 2 or fewer fit (nothing was sent)"
            ),
            "{e}"
        );
        // Repeats of a file shorter than --num-prompts are copies: counted the same way.
        let e = load_dataset(DatasetKind::Jsonl, &p, &tok(), &within(5 * P, 9))
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("--num-prompts 5 or fewer fit (nothing was sent)"),
            "{e}"
        );
        assert!(e.contains("p.jsonl: the prompts"), "{e}");
    }

    /// Issue 39's leftovers, 2: the most output tokens a dataset's request asks for, read as
    /// the load reads it: the largest line's `output_len`, a line without one at the default
    /// (256), `--output-len` over every line's; only the prompts the run reads count.
    #[test]
    fn the_most_output_tokens_are_the_lines_own() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "p.jsonl",
            "{\"prompt\": \"a\", \"output_len\": 64}\n{\"prompt\": \"b\"}\n\
             {\"prompt\": \"c\", \"output_len\": 9000}\n",
        );
        let most = |n: usize, output_len| {
            let o = DatasetOptions {
                num_prompts: Some(n),
                output_len,
                ..Default::default()
            };
            dataset_output_tokens_most(DatasetKind::Jsonl, &p, &o).unwrap()
        };
        assert_eq!(most(1, None), 64);
        assert_eq!(most(2, None), 256);
        assert_eq!(most(3, None), 9000);
        assert_eq!(most(30, None), 9000);
        assert_eq!(most(3, Some(5)), 5);
        let s = write(
            &d,
            "s.json",
            r#"[{"id": "x", "conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "0123456789"}]}]"#,
        );
        let o = DatasetOptions::default();
        assert_eq!(
            dataset_output_tokens_most(DatasetKind::ShareGpt, &s, &o).unwrap(),
            10
        );
    }

    /// Issue 39: the up-front count of a dataset is the loader's own
    /// ([`dataset_budget_need`]): each prompt's text and its reply's record (`output_len`, or
    /// `--output-len` over it, × 32 bytes); a file repeated up to `num_prompts` counts each
    /// copy's record too, and the load passes at exactly that room, not one byte below.
    #[test]
    fn the_up_front_count_is_the_loaders_own() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "p.jsonl",
            "{\"prompt\": \"ab\", \"output_len\": 1000}\n{\"prompt\": \"c\"}\n",
        );
        let opts = |n: usize, output_len, most| DatasetOptions {
            num_prompts: Some(n),
            output_len,
            memory_budget: most,
            ..Default::default()
        };
        let (first, second) = (2 + 256 + 1000 * 32, 1 + 256 + 256 * 32);
        let need = dataset_budget_need(DatasetKind::Jsonl, &p, &opts(4, None, None)).unwrap();
        assert_eq!(need, 2 * (first + second));
        let load = |most| load_dataset(DatasetKind::Jsonl, &p, &tok(), &opts(4, None, Some(most)));
        assert_eq!(load(need).unwrap().len(), 4);
        assert!(load(need - 1).is_err());
        // --output-len 10 over every line's.
        let need = dataset_budget_need(DatasetKind::Jsonl, &p, &opts(2, Some(10), None)).unwrap();
        assert_eq!(need, (2 + 256 + 320) + (1 + 256 + 320));
        // A reply costs what the caller says a record of it keeps (loadgen: what the client
        // keeps of a whole response under --save-detailed, issue 39), the load and the
        // up-front count alike.
        let whole = |n: usize, most| DatasetOptions {
            reply_bytes: |t| 112 * t + 2816,
            ..opts(n, None, most)
        };
        let need = dataset_budget_need(DatasetKind::Jsonl, &p, &whole(2, None)).unwrap();
        assert_eq!(
            need,
            (2 + 256 + 112_000 + 2816) + (1 + 256 + 112 * 256 + 2816)
        );
        let load = |most| load_dataset(DatasetKind::Jsonl, &p, &tok(), &whole(2, Some(most)));
        assert_eq!(load(need).unwrap().len(), 2);
        assert!(load(need - 1).is_err());
    }
}
