//! [`Prompt`]: one request's input as the client sends it.

use serde::{Deserialize, Serialize};

/// One chat message (`{"role", "content"}`), for chat backends and multi-turn datasets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// Message text.
    pub content: String,
}

/// One prompt, ready to send.
///
/// Completions backends send `text`; chat backends send `messages` when present, else one user
/// message holding `text`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// Prompt text (for multi-turn prompts: the conversation so far, contents joined by blank
    /// lines).
    pub text: String,
    /// Client-side token count of `text` under the run's tokenizer (no special tokens): what
    /// vLLM reports as `input_lens` / `total_input_tokens`.
    pub prompt_tokens: u32,
    /// Requested output length (`max_tokens`), tokens.
    pub max_tokens: u32,
    /// Conversation id for multi-turn datasets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// 0-based turn within the conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// The chat form (history plus the current user message), when the source had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<ChatMessage>>,
    /// Request headers of this prompt alone (a JSONL line's `extra_headers` object), as
    /// (name, value) pairs in the line's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_headers: Vec<(String, String)>,
}

impl Prompt {
    /// A single-turn prompt.
    pub fn new(text: String, prompt_tokens: u32, max_tokens: u32) -> Self {
        Prompt {
            text,
            prompt_tokens,
            max_tokens,
            conversation_id: None,
            turn: None,
            messages: None,
            extra_headers: Vec::new(),
        }
    }
}
