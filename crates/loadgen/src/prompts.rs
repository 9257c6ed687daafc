//! Prompt preparation: the bridge from `inferbench-workload` (tokenizers, random prompts, file
//! datasets) to what the client sends. The loadgen never builds prompts itself.

use std::sync::Arc;

use anyhow::Context;
use inferbench_client::{RequestInput, TokenCounter};
use serde_json::Value;

use crate::options::{BenchOptions, DatasetName, RangeSemantics};
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
    let tok = workload::Tokenizer::load(&opts.tokenizer)
        .with_context(|| format!("--tokenizer {}", opts.tokenizer))?;
    let n = usize::try_from(opts.resolved_num_prompts().max(1)).unwrap_or(usize::MAX);
    let prompts: Vec<workload::Prompt> = match opts.dataset_name {
        DatasetName::Random => {
            let spec = workload::RandomSpec {
                input_len: opts.random_input_len,
                output_len: opts.random_output_len,
                range_ratio: opts.resolved_range_ratio(),
                semantics: match opts.range_semantics {
                    RangeSemantics::InferenceX => workload::RangeSemantics::InferenceX,
                    RangeSemantics::Vllm => workload::RangeSemantics::Vllm,
                },
                prefix_len: opts.random_prefix_len,
                num_prompts: n,
                seed: opts.seed,
                cache_bust: opts
                    .cache_bust
                    .then(|| workload::cache_bust_marker(rand::random::<u64>())),
            };
            workload::random_prompts(&spec, &tok).context("building random prompts")?
        }
        DatasetName::Jsonl | DatasetName::Sharegpt => {
            let path = opts
                .dataset_path
                .as_deref()
                .context("--dataset-path is required for --dataset-name jsonl|sharegpt")?;
            let kind = if opts.dataset_name == DatasetName::Jsonl {
                workload::DatasetKind::Jsonl
            } else {
                workload::DatasetKind::ShareGpt
            };
            let dopts = workload::DatasetOptions {
                num_prompts: Some(n),
                output_len: opts.output_len,
                ..Default::default()
            };
            workload::load_dataset(kind, path, &tok, &dopts)
                .with_context(|| format!("--dataset-path {}", path.display()))?
        }
    };
    if prompts.is_empty() {
        anyhow::bail!("the workload produced no prompts");
    }
    let tokenizer_id = tok.id().to_string();
    let tok = Arc::new(tok);
    let counter: Arc<TokenCounter> = Arc::new(move |s: &str| tok.count(s));
    Ok(PreparedPrompts {
        prompts: prompts
            .into_iter()
            .map(|p| BenchPrompt {
                text: p.text,
                messages: p.messages.and_then(|m| serde_json::to_value(m).ok()),
                prompt_tokens: p.prompt_tokens,
                max_tokens: Some(p.max_tokens),
                conversation_id: p.conversation_id,
                turn: p.turn,
            })
            .collect(),
        tokenizer_id,
        counter: Some(counter),
    })
}
