//! inferbench-eval: accuracy evals against any OpenAI-compatible endpoint (DESIGN.md §2
//! "eval"), so a speed trick that breaks answers is caught. Today: GSM8K ([`gsm8k`]) with
//! InferenceX's variant of lm-eval's task (`utils/evals/gsm8k.yaml`): the prompt, strict and
//! flexible answer extraction, exact match, standard error, and per-model thresholds.
#![deny(missing_docs)]

pub mod gsm8k;

/// `--eval-backend`: the API evals ask (`openai-chat`, InferenceX's lm-eval with the chat
/// template, or `openai`, completions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum EvalBackend {
    /// `/v1/completions`.
    Openai,
    /// `/v1/chat/completions`.
    OpenaiChat,
}

impl EvalBackend {
    /// The client's backend.
    pub fn backend(self) -> inferbench_client::Backend {
        match self {
            EvalBackend::Openai => inferbench_client::Backend::OpenAiCompletions,
            EvalBackend::OpenaiChat => inferbench_client::Backend::OpenAiChat,
        }
    }
}
