//! InferenceX-compatible recipes: master configs → job matrix, changelog, catalogue tools.
//!
//! * [`schema`]: strict validation of master configs and `runners.yaml` (errors name
//!   `file:line:col` and the field path), on top of [`yaml`], a position-keeping loader that
//!   resolves scalars like PyYAML's `safe_load`.
//! * [`matrix`]: `full-sweep` / `test-config` expansion, eval marking, DRAM budget; rows print
//!   byte-for-byte like InferenceX's `generate_sweep_configs.py` ([`matrix::to_json_text`]).
//! * [`identity`]: the recipe fingerprint (a row's `RESULT_FILENAME` and typed fields are
//!   core's `PointConfig` of its `MatrixRow`).
//! * [`changelog`]: `perf-changelog.yaml` additions → bucketed matrix (`process_changelog.py`).
//! * [`linediff`]: the line diff `git diff` prints (xdiff's Myers with the indent heuristic),
//!   used for changelog additions where git is absent; [`linediff::git_diff_files`] runs git.
//! * [`catalogue`]: support matrix, KV-offload DRAM policy check, CI priority score.
//! * [`policy`]: MODELS.md's rules as checks (engine submission policy, spec-decode-only
//!   AgentX, deprecation bookkeeping) over a policy YAML (`models policy`).
//!
//! ```no_run
//! use inferbench_recipes::{matrix, schema::{MasterConfigs, RunnerConfig}};
//! let configs = MasterConfigs::load(&["configs/nvidia-master.yaml"]).unwrap();
//! let runners = RunnerConfig::load("configs/runners.yaml".as_ref()).unwrap();
//! let sel = matrix::Selection::TestConfig(matrix::TestConfigOptions {
//!     config_keys: vec!["dsr1-fp8-*".into()],
//!     ..Default::default()
//! });
//! let rows = matrix::generate(&configs, &runners, &sel, &Default::default()).unwrap();
//! print!("{}", matrix::to_json_text(&rows));
//! ```
#![deny(missing_docs)]

pub mod catalogue;
pub mod changelog;
pub mod error;
pub mod identity;
pub mod linediff;
pub mod matrix;
pub mod policy;
pub mod pyjson;
pub mod schema;
pub mod yaml;

pub use error::{ConfigError, Error, Result};
pub use identity::recipe_fingerprint;
pub use matrix::Row;
