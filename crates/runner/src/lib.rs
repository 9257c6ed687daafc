//! `inferbench-runner`: executes a job matrix (DESIGN.md §2, issue 4 "Running").
//!
//! - [`jobspec`]: matrix rows (InferenceX generator JSON) → [`JobSpec`], `RESULT_FILENAME`,
//!   the environment contract for external scripts.
//! - [`engine`]: recipes (built-in vLLM / SGLang / TensorRT-LLM / llama.cpp / simulator
//!   templates, or InferenceX-style scripts) and engine processes stopped as a whole group.
//! - [`ready`]: `/health` then `/v1/models`, with a timeout and the server log in errors.
//! - [`point`]: the seam to the load generator ([`point::PointRunner`]); [`bench`] implements
//!   it over `inferbench_loadgen::run_bench`.
//! - [`modelled`]: a point against the simulator rewritten from wall time to the modelled
//!   hardware's time (its time scale).
//! - [`sweep`]: rows → points → engine up → point → artifacts; failures recorded, finished
//!   points skipped on re-runs.
//! - [`simsweep`]: a concurrency sweep of the simulator started in this process (`quickstart`),
//!   through [`sweep`] like any other.
//! - [`evals`]: GSM8K evals of `run-eval` / `eval-only` rows, InferenceX's eval artifact.
//! - [`artifacts`]: the per-point directory layout (DESIGN.md §3) and completion markers.
//! - [`executor`]: local, Slurm (sbatch job arrays) and GitHub Actions (matrix + workflow).
#![deny(missing_docs)]

pub mod adaptive;
pub mod artifacts;
pub mod bench;
pub mod engine;
pub mod evals;
pub mod executor;
pub mod jobspec;
pub mod modelled;
pub mod point;
pub mod ready;
pub mod simsweep;
pub mod sweep;

pub use jobspec::{load_matrix, load_row, Conc, JobSpec, MatrixError, MatrixRow};
pub use point::{BenchDefaults, PointOutput, PointRequest, PointRunner};
pub use sweep::{run_jobs, Outcome, SweepOptions, SweepReport};
pub use tokio_util::sync::CancellationToken;
