//! The simulator's own OpenAI-compatible response writer (SSE events and whole JSON bodies),
//! shaped like vLLM's output. It shares nothing with the client's parser on purpose.

use crate::tokenize::push_output_text;

/// Which OpenAI API a response answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `/v1/completions` (`choices[].text`).
    Completions,
    /// `/v1/chat/completions` (`choices[].delta.content` / `reasoning_content`).
    Chat,
    /// `/v1/responses` (typed events: `response.created`, `response.output_text.delta` /
    /// `response.reasoning_text.delta`, `response.completed` with usage; no `[DONE]`), as
    /// vLLM streams them.
    Responses,
}

/// Per-response constants, rendered once.
#[derive(Debug)]
pub(crate) struct Writer {
    api: Api,
    /// The response's id number.
    id: u64,
    /// `{"id":"...","object":"...","created":N,"model":"..."` (no closing brace).
    head: Vec<u8>,
    eol: &'static [u8],
    pub continuous_usage: bool,
    pub prompt_tokens: u32,
    pub reasoning_tokens: u32,
    /// Prompt tokens served from the prefix cache; when known, `usage` carries
    /// `prompt_tokens_details.cached_tokens` (as vLLM with `--enable-prompt-tokens-details`).
    pub cached_tokens: Option<u32>,
}

fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

impl Writer {
    pub fn new(api: Api, id: u64, created: u64, model_json: &str, crlf: bool) -> Self {
        let mut head = Vec::with_capacity(96 + model_json.len());
        let (prefix, object) = match api {
            Api::Completions => ("cmpl-", "text_completion"),
            Api::Chat => ("chatcmpl-", "chat.completion.chunk"),
            Api::Responses => ("resp_", "response"),
        };
        head.extend_from_slice(b"{\"id\":\"");
        head.extend_from_slice(prefix.as_bytes());
        head.extend_from_slice(format!("{id:016x}").as_bytes());
        head.extend_from_slice(b"\",\"object\":\"");
        head.extend_from_slice(object.as_bytes());
        head.extend_from_slice(b"\",\"created\":");
        push_u64(&mut head, created);
        head.extend_from_slice(b",\"model\":");
        head.extend_from_slice(model_json.as_bytes());
        Writer {
            api,
            id,
            head,
            eol: if crlf { b"\r\n" } else { b"\n" },
            continuous_usage: false,
            prompt_tokens: 0,
            reasoning_tokens: 0,
            cached_tokens: None,
        }
    }

    fn open(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(&self.head);
    }

    fn close(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"}");
        out.extend_from_slice(self.eol);
        out.extend_from_slice(self.eol);
    }

    fn usage(&self, out: &mut Vec<u8>, completion: u32) {
        out.extend_from_slice(b",\"usage\":{\"prompt_tokens\":");
        push_u64(out, u64::from(self.prompt_tokens));
        out.extend_from_slice(b",\"total_tokens\":");
        push_u64(out, u64::from(self.prompt_tokens) + u64::from(completion));
        out.extend_from_slice(b",\"completion_tokens\":");
        push_u64(out, u64::from(completion));
        if let Some(c) = self.cached_tokens {
            out.extend_from_slice(b",\"prompt_tokens_details\":{\"cached_tokens\":");
            push_u64(out, u64::from(c));
            out.extend_from_slice(b"}");
        }
        out.extend_from_slice(b"}");
    }

    /// The API this writer answers.
    pub fn api(&self) -> Api {
        self.api
    }

    /// Chat: the first event, `delta: {"role":"assistant","content":""}`; Responses:
    /// `response.created`.
    pub fn role_event(&self, out: &mut Vec<u8>) {
        if self.api == Api::Responses {
            out.extend_from_slice(b"event: response.created");
            out.extend_from_slice(self.eol);
            out.extend_from_slice(b"data: {\"type\":\"response.created\",\"response\":");
            out.extend_from_slice(&self.head);
            out.extend_from_slice(b",\"status\":\"in_progress\"}}");
            out.extend_from_slice(self.eol);
            out.extend_from_slice(self.eol);
            return;
        }
        self.open(out);
        out.extend_from_slice(
            b",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}]",
        );
        if self.continuous_usage {
            self.usage(out, 0);
        }
        self.close(out);
    }

    /// One event carrying output tokens `start .. start + n`. Chat splits at the reasoning
    /// boundary into two events; returns how many events were written.
    pub fn token_events(
        &self,
        out: &mut Vec<u8>,
        start: u32,
        n: u32,
        finish: Option<&str>,
        usage: bool,
    ) -> u32 {
        if self.api != Api::Completions
            && start < self.reasoning_tokens
            && start + n > self.reasoning_tokens
        {
            let r = self.reasoning_tokens - start;
            self.token_event(out, start, r, None, usage);
            self.token_event(out, start + r, n - r, finish, usage);
            return 2;
        }
        self.token_event(out, start, n, finish, usage);
        1
    }

    fn token_event(
        &self,
        out: &mut Vec<u8>,
        start: u32,
        n: u32,
        finish: Option<&str>,
        usage: bool,
    ) {
        if self.api == Api::Responses {
            let kind: &[u8] = if start < self.reasoning_tokens {
                b"response.reasoning_text.delta"
            } else {
                b"response.output_text.delta"
            };
            out.extend_from_slice(b"event: ");
            out.extend_from_slice(kind);
            out.extend_from_slice(self.eol);
            out.extend_from_slice(b"data: {\"type\":\"");
            out.extend_from_slice(kind);
            out.extend_from_slice(b"\",\"item_id\":\"msg_");
            out.extend_from_slice(format!("{:016x}", self.id).as_bytes());
            out.extend_from_slice(b"\",\"output_index\":0,\"content_index\":0,\"delta\":\"");
            push_output_text(out, start, n);
            out.extend_from_slice(b"\"}");
            out.extend_from_slice(self.eol);
            out.extend_from_slice(self.eol);
            return;
        }
        self.open(out);
        match self.api {
            Api::Completions => {
                out.extend_from_slice(b",\"choices\":[{\"index\":0,\"text\":\"");
                push_output_text(out, start, n);
                out.extend_from_slice(b"\",\"logprobs\":null,\"finish_reason\":");
                push_finish(out, finish);
                out.extend_from_slice(b",\"stop_reason\":null}]");
            }
            Api::Chat => {
                if start < self.reasoning_tokens {
                    out.extend_from_slice(
                        b",\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"",
                    );
                } else {
                    out.extend_from_slice(b",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"");
                }
                push_output_text(out, start, n);
                out.extend_from_slice(b"\"},\"logprobs\":null,\"finish_reason\":");
                push_finish(out, finish);
                out.extend_from_slice(b"}]");
            }
            Api::Responses => {}
        }
        if usage && self.continuous_usage {
            self.usage(out, start + n);
        }
        self.close(out);
    }

    /// Responses: the `usage` object of `response.completed` (`input_tokens`,
    /// `output_tokens`, `input_tokens_details.cached_tokens` when known).
    fn responses_usage(&self, out: &mut Vec<u8>, completion: u32) {
        out.extend_from_slice(b"\"usage\":{\"input_tokens\":");
        push_u64(out, u64::from(self.prompt_tokens));
        out.extend_from_slice(b",\"input_tokens_details\":{\"cached_tokens\":");
        push_u64(out, u64::from(self.cached_tokens.unwrap_or(0)));
        out.extend_from_slice(b"},\"output_tokens\":");
        push_u64(out, u64::from(completion));
        out.extend_from_slice(b",\"output_tokens_details\":{\"reasoning_tokens\":");
        push_u64(out, u64::from(self.reasoning_tokens.min(completion)));
        out.extend_from_slice(b"},\"total_tokens\":");
        push_u64(out, u64::from(self.prompt_tokens) + u64::from(completion));
        out.extend_from_slice(b"}");
    }

    /// Responses: `response.completed` after `completion` tokens that ended with `finish`
    /// (`length`: status `incomplete` with `incomplete_details.reason: max_output_tokens`, as
    /// vLLM reports a capped answer), usage included when `usage`.
    pub fn completed_event(&self, out: &mut Vec<u8>, completion: u32, finish: &str, usage: bool) {
        out.extend_from_slice(b"event: response.completed");
        out.extend_from_slice(self.eol);
        out.extend_from_slice(b"data: {\"type\":\"response.completed\",\"response\":");
        self.response_fields(out, completion, finish, usage);
        out.extend_from_slice(b"}");
        out.extend_from_slice(self.eol);
        out.extend_from_slice(self.eol);
    }

    /// The `response` object's head, status and usage, closed (output items not included).
    fn response_fields(&self, out: &mut Vec<u8>, completion: u32, finish: &str, usage: bool) {
        out.extend_from_slice(&self.head);
        if finish == "length" {
            out.extend_from_slice(
                b",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},",
            );
        } else {
            out.extend_from_slice(b",\"status\":\"completed\",\"incomplete_details\":null,");
        }
        if usage {
            self.responses_usage(out, completion);
        } else {
            out.extend_from_slice(b"\"usage\":null");
        }
        out.extend_from_slice(b"}");
    }

    /// The trailing usage event (`choices: []`).
    pub fn usage_event(&self, out: &mut Vec<u8>, completion: u32) {
        self.open(out);
        out.extend_from_slice(b",\"choices\":[]");
        self.usage(out, completion);
        self.close(out);
    }

    /// An event whose JSON is cut short (fault injection).
    pub fn malformed_event(&self, out: &mut Vec<u8>) {
        self.open(out);
        out.extend_from_slice(b",\"choices\":[{\"index\":0,\"te");
        out.extend_from_slice(self.eol);
        out.extend_from_slice(self.eol);
    }

    /// An in-stream error object (vLLM's shape for an engine error after streaming began;
    /// Responses: an `error` event).
    pub fn error_event(&self, out: &mut Vec<u8>) {
        if self.api == Api::Responses {
            out.extend_from_slice(
                b"event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"simulated fault: engine error mid-stream\",\"param\":null}",
            );
            out.extend_from_slice(self.eol);
            out.extend_from_slice(self.eol);
            return;
        }
        out.extend_from_slice(
            b"data: {\"error\":{\"message\":\"simulated fault: engine error mid-stream\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}}",
        );
        out.extend_from_slice(self.eol);
        out.extend_from_slice(self.eol);
    }

    /// `data: [DONE]` (nothing for Responses, whose stream ends with `response.completed`).
    pub fn done(&self, out: &mut Vec<u8>) {
        if self.api == Api::Responses {
            return;
        }
        out.extend_from_slice(b"data: [DONE]");
        out.extend_from_slice(self.eol);
        out.extend_from_slice(self.eol);
    }

    /// A comment line (`: keep-alive`), ignored by SSE parsers.
    pub fn comment(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b": keep-alive");
        out.extend_from_slice(self.eol);
        out.extend_from_slice(self.eol);
    }

    /// A whole non-streaming response body for `n` generated tokens.
    pub fn full_body(&self, n: u32, finish: &str, usage: bool) -> Vec<u8> {
        let mut out = Vec::with_capacity(256 + 5 * n as usize);
        if self.api == Api::Responses {
            let r = self.reasoning_tokens.min(n);
            let mut fields = Vec::new();
            self.response_fields(&mut fields, n, finish, usage);
            fields.pop(); // reopen the object for `output`
            out.extend_from_slice(&fields);
            out.extend_from_slice(b",\"output\":[");
            if r > 0 {
                out.extend_from_slice(
                    b"{\"type\":\"reasoning\",\"content\":[{\"type\":\"reasoning_text\",\"text\":\"",
                );
                push_output_text(&mut out, 0, r);
                out.extend_from_slice(b"\"}]},");
            }
            out.extend_from_slice(
                b"{\"type\":\"message\",\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"text\":\"",
            );
            push_output_text(&mut out, r, n - r);
            out.extend_from_slice(b"\"}]}]}");
            return out;
        }
        // Non-streaming objects are "text_completion" / "chat.completion".
        let head = String::from_utf8_lossy(&self.head).replace(
            "\"object\":\"chat.completion.chunk\"",
            "\"object\":\"chat.completion\"",
        );
        out.extend_from_slice(head.as_bytes());
        match self.api {
            Api::Completions => {
                out.extend_from_slice(b",\"choices\":[{\"index\":0,\"text\":\"");
                push_output_text(&mut out, 0, n);
                out.extend_from_slice(b"\",\"logprobs\":null,\"finish_reason\":");
                push_finish(&mut out, Some(finish));
                out.extend_from_slice(b",\"stop_reason\":null}]");
            }
            Api::Chat => {
                let r = self.reasoning_tokens.min(n);
                out.extend_from_slice(
                    b",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"",
                );
                push_output_text(&mut out, r, n - r);
                out.extend_from_slice(b"\",\"reasoning_content\":");
                if r > 0 {
                    out.push(b'"');
                    push_output_text(&mut out, 0, r);
                    out.push(b'"');
                } else {
                    out.extend_from_slice(b"null");
                }
                out.extend_from_slice(b"},\"logprobs\":null,\"finish_reason\":");
                push_finish(&mut out, Some(finish));
                out.extend_from_slice(b"}]");
            }
            Api::Responses => {}
        }
        if usage {
            self.usage(&mut out, n);
        }
        out.extend_from_slice(b"}");
        out
    }
}

fn push_finish(out: &mut Vec<u8>, finish: Option<&str>) {
    match finish {
        Some(f) => {
            out.push(b'"');
            out.extend_from_slice(f.as_bytes());
            out.push(b'"');
        }
        None => out.extend_from_slice(b"null"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_events_are_byte_exact() {
        let mut w = Writer::new(Api::Completions, 255, 1700000000, "\"m\"", false);
        w.prompt_tokens = 3;
        let mut out = Vec::new();
        w.token_events(&mut out, 0, 2, None, true);
        w.token_events(&mut out, 2, 1, Some("length"), true);
        w.usage_event(&mut out, 3);
        w.done(&mut out);
        let expect = concat!(
            "data: {\"id\":\"cmpl-00000000000000ff\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" the of\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}]}\n\n",
            "data: {\"id\":\"cmpl-00000000000000ff\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" and\",\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null}]}\n\n",
            "data: {\"id\":\"cmpl-00000000000000ff\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"total_tokens\":6,\"completion_tokens\":3}}\n\n",
            "data: [DONE]\n\n",
        );
        assert_eq!(String::from_utf8(out).unwrap(), expect);
    }

    #[test]
    fn chat_events_split_at_reasoning_boundary_and_parse_as_json() {
        let mut w = Writer::new(Api::Chat, 1, 5, "\"m\"", true);
        w.reasoning_tokens = 2;
        w.continuous_usage = true;
        w.prompt_tokens = 10;
        let mut out = Vec::new();
        w.role_event(&mut out);
        assert_eq!(w.token_events(&mut out, 0, 3, Some("stop"), true), 2);
        let text = String::from_utf8(out).unwrap();
        let events: Vec<&str> = text.split("\r\n\r\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.len(), 3);
        let v: Vec<serde_json::Value> = events
            .iter()
            .map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap())
            .collect();
        assert_eq!(v[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(v[1]["choices"][0]["delta"]["reasoning_content"], " the of");
        assert_eq!(v[1]["usage"]["completion_tokens"], 2);
        assert_eq!(v[2]["choices"][0]["delta"]["content"], " and");
        assert_eq!(v[2]["choices"][0]["finish_reason"], "stop");
        assert_eq!(v[2]["usage"]["total_tokens"], 13);
        let full: serde_json::Value =
            serde_json::from_slice(&w.full_body(3, "stop", true)).unwrap();
        assert_eq!(full["object"], "chat.completion");
        assert_eq!(full["choices"][0]["message"]["content"], " and");
        assert_eq!(
            full["choices"][0]["message"]["reasoning_content"],
            " the of"
        );
        assert_eq!(full["usage"]["completion_tokens"], 3);
    }
}
