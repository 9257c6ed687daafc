//! `RunSummary`: one per concurrency point, in vLLM `--save-result` field names and units plus
//! namespaced extras; and InferenceX's `agg_<RESULT_FILENAME>.json` shape (DESIGN.md §3).
