//! inferbench-eval: accuracy evals against any OpenAI-compatible endpoint (DESIGN.md §2
//! "eval"), so a speed trick that breaks answers is caught. Today: GSM8K ([`gsm8k`]) with
//! InferenceX's variant of lm-eval's task (`utils/evals/gsm8k.yaml`): the prompt, strict and
//! flexible answer extraction, exact match, standard error, and per-model thresholds.
#![deny(missing_docs)]

pub mod gsm8k;
