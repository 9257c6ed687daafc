//! inferbench-workload: what to send. Tokenizers, random prompts with exact token counts, and
//! file datasets (JSONL prompts, ShareGPT multi-turn) — DESIGN.md §2, §5. No HTTP here: the
//! loadgen takes the [`Prompt`]s and the client sends them.
//!
//! ```no_run
//! use inferbench_workload::{random_prompts, RandomSpec, Tokenizer};
//! let tok = Tokenizer::load("o200k_base")?;
//! let spec = RandomSpec { input_len: 8192, output_len: 1024, range_ratio: 0.8,
//!                         num_prompts: 640, ..Default::default() };
//! let prompts = random_prompts(&spec, &tok)?;
//! assert!(prompts.iter().all(|p| tok.count(&p.text) == p.prompt_tokens as usize));
//! # Ok::<(), inferbench_workload::WorkloadError>(())
//! ```

#![deny(missing_docs)]

pub mod agentx;
pub mod dataset;
pub mod error;
mod fast;
pub mod files;
mod fit;
pub mod prompt;
pub mod random;
mod splitter;
pub mod tokenizer;

pub use dataset::{
    dataset_budget_need, dataset_output_tokens_most, load_dataset, DatasetKind, DatasetOptions,
};
pub use error::WorkloadError;
pub use prompt::{ChatMessage, Prompt};
pub use random::{
    cache_bust_marker, length_range, random_prompts, random_prompts_with_stats, PrepStats,
    RandomSpec, RangeSemantics,
};
pub use tokenizer::{Tokenizer, DEFAULT_TOKENIZER};
