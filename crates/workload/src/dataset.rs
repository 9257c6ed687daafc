//! File datasets: JSONL prompts and ShareGPT multi-turn conversations (DESIGN.md §5).
//!
//! **JSONL** (`--dataset-name jsonl`): one JSON object per line (blank lines skipped) with a
//! `"prompt"` or `"text"` string, or a `"messages"` array of `{"role", "content"}`; optional output
//! length in `"max_tokens"`, `"output_len"` or `"output_tokens"`; optional `"extra_headers"`, an
//! object of request headers sent with that line's request only (string, number or boolean
//! values; a name or value that is not a valid HTTP header is an error). A line may also be a
//! bare JSON string. Errors name `file:line`.
//!
//! **ShareGPT** (`--dataset-name sharegpt`): a JSON array (or JSONL) of conversations
//! `{"id", "conversations": [{"from": "human"|"gpt"|"system", "value"}]}` (`"role"`/`"content"`
//! and `"messages"` accepted too). **Every** assistant turn becomes a prompt whose history is the
//! conversation up to the user message before it (peers.md bug 37: keeping only the first turn
//! hides prefix-cache reuse); its `max_tokens` is the token count of the recorded reply. No length
//! filters are applied.
//!
//! Prompts keep file order. `num_prompts` takes the first N; asking for more than the file holds
//! repeats it from the start (conversation ids of repeats get a `~k` suffix).

use crate::error::WorkloadError;
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
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetOptions {
    /// Number of prompts (`None` = all in the file).
    pub num_prompts: Option<usize>,
    /// Overrides every prompt's output length (`--random-output-len` / `--sharegpt-output-len`).
    pub output_len: Option<u32>,
    /// Output length when the file gives none (JSONL without a length field; a final
    /// unanswered user turn). Default 256 (vLLM's `--custom-output-len`).
    pub default_output_len: u32,
}

impl Default for DatasetOptions {
    fn default() -> Self {
        DatasetOptions {
            num_prompts: None,
            output_len: None,
            default_output_len: 256,
        }
    }
}

/// Loads `path` as `kind` and sizes every prompt with `tok` (`prompt_tokens` = client-side
/// count of `text`).
///
/// # Errors
/// [`WorkloadError::Io`] (unreadable file), [`WorkloadError::Parse`] (bad content, naming the
/// file and, for JSONL, the line), [`WorkloadError::Empty`] (no usable prompt).
pub fn load_dataset(
    kind: DatasetKind,
    path: &Path,
    tok: &Tokenizer,
    opts: &DatasetOptions,
) -> Result<Vec<Prompt>, WorkloadError> {
    let raw = std::fs::read(path).map_err(|source| WorkloadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let text = String::from_utf8(raw).map_err(|e| WorkloadError::Parse {
        path: path.to_path_buf(),
        line: None,
        reason: format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()),
    })?;
    let drafts = match kind {
        DatasetKind::Jsonl => parse_jsonl(path, &text)?,
        DatasetKind::ShareGpt => parse_sharegpt(path, &text)?,
    };
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
    let prompts = (0..n)
        .into_par_iter()
        .map(|k| {
            let d = &drafts[k % drafts.len()];
            let rep = k / drafts.len();
            let max_tokens = opts.output_len.unwrap_or_else(|| match &d.reply {
                Reply::Tokens(t) => *t,
                Reply::Text(s) => (tok.count(s) as u32).max(1),
                Reply::Unknown => opts.default_output_len,
            });
            let conversation_id = d.conversation_id.as_ref().map(|c| {
                if rep == 0 {
                    c.clone()
                } else {
                    format!("{c}~{rep}")
                }
            });
            Prompt {
                prompt_tokens: tok.count(&d.text) as u32,
                text: d.text.clone(),
                max_tokens,
                conversation_id,
                turn: d.turn,
                messages: d.messages.clone(),
                extra_headers: d.extra_headers.clone(),
            }
        })
        .collect();
    Ok(prompts)
}

/// Where a prompt's output length comes from.
enum Reply {
    Tokens(u32),
    Text(String),
    Unknown,
}

struct Draft {
    text: String,
    messages: Option<Vec<ChatMessage>>,
    conversation_id: Option<String>,
    turn: Option<u32>,
    reply: Reply,
    extra_headers: Vec<(String, String)>,
}

fn join_contents(msgs: &[ChatMessage]) -> String {
    msgs.iter()
        .map(|m| m.content.as_str())
        .collect::<Vec<_>>()
        .join("\n\n")
}

fn parse_jsonl(path: &Path, text: &str) -> Result<Vec<Draft>, WorkloadError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        let err = |reason: String| WorkloadError::Parse {
            path: path.to_path_buf(),
            line: Some(line_no),
            reason,
        };
        let v: Value = serde_json::from_str(l).map_err(|e| err(format!("invalid JSON: {e}")))?;
        let reply = match &v {
            Value::Object(o) => {
                match ["max_tokens", "output_len", "output_tokens"]
                    .iter()
                    .find_map(|k| o.get(*k))
                {
                    None | Some(Value::Null) => Reply::Unknown,
                    Some(x) => match x.as_u64().and_then(|n| u32::try_from(n).ok()) {
                        Some(n) if n > 0 => Reply::Tokens(n),
                        _ => {
                            return Err(err(format!("output length {x} is not a positive integer")))
                        }
                    },
                }
            }
            _ => Reply::Unknown,
        };
        let (text, messages) = match &v {
            Value::String(s) => (s.clone(), None),
            Value::Object(o) => {
                if let Some(p) = o.get("prompt").or_else(|| o.get("text")) {
                    let s = p
                        .as_str()
                        .ok_or_else(|| err("\"prompt\" must be a string".into()))?;
                    (s.to_string(), None)
                } else if let Some(m) = o.get("messages") {
                    let msgs = parse_messages(m).map_err(err)?;
                    (join_contents(&msgs), Some(msgs))
                } else {
                    return Err(err(
                        "expected a \"prompt\" or \"text\" string or a \"messages\" array".into(),
                    ));
                }
            }
            _ => return Err(err("expected a JSON object or string".into())),
        };
        let extra_headers = match v.get("extra_headers") {
            None | Some(Value::Null) => Vec::new(),
            Some(h) => parse_extra_headers(h).map_err(err)?,
        };
        out.push(Draft {
            text,
            messages,
            conversation_id: None,
            turn: None,
            reply,
            extra_headers,
        });
    }
    Ok(out)
}

/// A JSONL line's `extra_headers`: an object of header name → string, number or boolean.
/// Errors: not an object, another value type, or a name or value HTTP does not allow (a name
/// of token characters, a value without control characters).
fn parse_extra_headers(v: &Value) -> Result<Vec<(String, String)>, String> {
    let o = v
        .as_object()
        .ok_or_else(|| "\"extra_headers\" must be an object of header name → value".to_string())?;
    let mut out = Vec::with_capacity(o.len());
    for (k, v) in o {
        let value = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => {
                return Err(format!(
                    "extra_headers {k:?}: value must be a string, number or boolean"
                ))
            }
        };
        let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if k.is_empty() || !k.chars().all(tchar) {
            return Err(format!(
                "extra_headers: {k:?} is not a valid HTTP header name"
            ));
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

fn parse_messages(v: &Value) -> Result<Vec<ChatMessage>, String> {
    let arr = v
        .as_array()
        .ok_or_else(|| "\"messages\" must be an array".to_string())?;
    arr.iter()
        .enumerate()
        .map(|(i, m)| {
            let role = m
                .get("role")
                .or_else(|| m.get("from"))
                .and_then(Value::as_str)
                .ok_or_else(|| format!("message {i}: missing \"role\""))?;
            let content = m
                .get("content")
                .or_else(|| m.get("value"))
                .and_then(Value::as_str)
                .ok_or_else(|| format!("message {i}: \"content\" must be a string"))?;
            Ok(ChatMessage {
                role: normalize_role(role).to_string(),
                content: content.to_string(),
            })
        })
        .collect()
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

fn parse_sharegpt(path: &Path, text: &str) -> Result<Vec<Draft>, WorkloadError> {
    let trimmed = text.trim_start();
    let convs: Vec<(Option<usize>, Value)> = if trimmed.starts_with('[') {
        let v: Vec<Value> = serde_json::from_str(text).map_err(|e| WorkloadError::Parse {
            path: path.to_path_buf(),
            line: Some(e.line()),
            reason: format!("invalid JSON: {e}"),
        })?;
        v.into_iter().map(|c| (None, c)).collect()
    } else {
        let mut v = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let c: Value = serde_json::from_str(line).map_err(|e| WorkloadError::Parse {
                path: path.to_path_buf(),
                line: Some(i + 1),
                reason: format!("invalid JSON: {e}"),
            })?;
            v.push((Some(i + 1), c));
        }
        v
    };
    let mut out = Vec::new();
    for (n, (line, conv)) in convs.iter().enumerate() {
        let err = |reason: String| WorkloadError::Parse {
            path: path.to_path_buf(),
            line: *line,
            reason: format!("conversation {n}: {reason}"),
        };
        let id = match conv.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(x)) => x.to_string(),
            _ => format!("conv-{n}"),
        };
        let turns = conv
            .get("conversations")
            .or_else(|| conv.get("conversation"))
            .or_else(|| conv.get("messages"))
            .ok_or_else(|| err("missing \"conversations\" array".into()))?;
        let msgs = parse_messages(turns).map_err(err)?;
        let mut turn = 0u32;
        for (k, m) in msgs.iter().enumerate() {
            if m.role != "user" {
                continue;
            }
            let history = &msgs[..=k];
            let reply = match msgs.get(k + 1) {
                Some(next) if next.role == "assistant" => Reply::Text(next.content.clone()),
                Some(_) => continue, // user followed by user: fold into the next prompt
                None => Reply::Unknown,
            };
            out.push(Draft {
                text: join_contents(history),
                messages: Some(history.to_vec()),
                conversation_id: Some(id.clone()),
                turn: Some(turn),
                reply,
                extra_headers: Vec::new(),
            });
            turn += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn jsonl_extra_headers_per_line() {
        let d = tempfile::tempdir().unwrap();
        let p = write(
            &d,
            "h.jsonl",
            "{\"prompt\": \"a\", \"extra_headers\": {\"X-Tenant\": \"t1\", \"X-data-parallel-rank\": 3, \"X-Flag\": true}}\n{\"prompt\": \"b\"}\n",
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
                "must be an object",
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
                "string, number or boolean",
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
        assert!(e.contains("bin.jsonl") && e.contains("UTF-8"), "{e}");
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
    }
}
