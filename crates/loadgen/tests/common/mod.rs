//! Set-up shared by the loadgen's integration tests (each test file includes this module and
//! uses part of it): prepared prompts, the replay server's usual stream, the profile records.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use inferbench_core::{Phase, RequestRecord};
use inferbench_loadgen::{BenchPrompt, PreparedPrompts};
use inferbench_testutil::replay::{ReplayCase, ReplayEnd};
use inferbench_workload::agentx::{Stream, StreamKind, Trace, TraceRequest};

/// One prompt per text, each counted as `prompt_tokens` tokens and asking for `max_tokens`;
/// tokenizer id `test`, no token counter (set `counter` on the result for one).
pub fn prompts_of(
    texts: impl IntoIterator<Item = String>,
    prompt_tokens: u32,
    max_tokens: u32,
) -> PreparedPrompts {
    PreparedPrompts {
        prompts: (texts.into_iter())
            .map(|text| BenchPrompt {
                text,
                messages: None,
                prompt_tokens,
                max_tokens: Some(max_tokens),
                conversation_id: None,
                turn: None,
                headers: Vec::new(),
            })
            .collect(),
        tokenizer_id: "test".into(),
        counter: None,
    }
}

/// `n` prompts `prompt 0`, `prompt 1`, … as [`prompts_of`] makes them.
pub fn prepared(n: usize, prompt_tokens: u32, max_tokens: u32) -> Arc<PreparedPrompts> {
    Arc::new(prompts_of(
        (0..n).map(|i| format!("prompt {i}")),
        prompt_tokens,
        max_tokens,
    ))
}

/// A completions stream of one token per text, each `gap_ms` after the one before, then usage
/// (`prompt_tokens`, `completion_tokens`) and `[DONE]`, closed.
pub fn completions_case(
    texts: &[&str],
    gap_ms: u64,
    prompt_tokens: u32,
    completion_tokens: u32,
) -> ReplayCase {
    let tok = |t: &str| format!("data: {{\"choices\":[{{\"index\":0,\"text\":\"{t}\"}}]}}\n\n");
    let mut chunks: Vec<(Duration, Vec<u8>)> = texts
        .iter()
        .map(|t| (Duration::from_millis(gap_ms), tok(t).into_bytes()))
        .collect();
    chunks.push((
        Duration::ZERO,
        format!("data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":{prompt_tokens},\"completion_tokens\":{completion_tokens}}}}}\n\ndata: [DONE]\n\n").into_bytes(),
    ));
    ReplayCase {
        status: 200,
        headers: vec![("Content-Type".into(), "text/event-stream".into())],
        chunks,
        end: ReplayEnd::Close,
    }
}

/// [`completions_case`] of 4 tokens 10 ms apart (usage: `prompt_tokens`, 4 completion tokens):
/// every request takes exactly 40 ms.
pub fn stream_case(prompt_tokens: u32) -> ReplayCase {
    completions_case(&["a", "b", "c", "d"], 10, prompt_tokens, 4)
}

/// The profile-phase records of `recs`, by request id.
pub fn profile(recs: &[RequestRecord]) -> Vec<&RequestRecord> {
    let mut v: Vec<_> = recs.iter().filter(|r| r.phase == Phase::Profile).collect();
    v.sort_by_key(|r| r.request_id);
    v
}

/// An AgentX trace `id` of 64-token blocks with no system prefix, of `streams`, read from
/// `origin` (`file:line`).
pub fn trace(id: &str, origin: &str, streams: Vec<Stream>) -> Trace {
    Trace {
        id: id.into(),
        block_size: 64,
        system_prefix_tokens: 0,
        hash_id_scope: Default::default(),
        streams,
        origin: origin.into(),
    }
}

/// The main agent's stream `id` (no label) of `requests`.
pub fn root_stream(id: &str, requests: Vec<TraceRequest>) -> Stream {
    Stream {
        id: id.into(),
        kind: StreamKind::Root,
        label: String::new(),
        parent: None,
        requests,
    }
}
