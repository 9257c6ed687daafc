//! inferbench-telemetry: what the hardware and the server report beside the load generator's
//! own records (DESIGN.md §2 "telemetry"): GPU power from a `power.csv` — per-GPU energy over
//! the benchmark window and InferenceX's validity rules ([`power`]) — and the per-second
//! Prometheus `/metrics` scraper ([`scrape`]), the power samplers that write `power.csv`
//! (NVML, nvidia-smi, amd-smi: [`sampler`], [`nvml`]) and the GPUs' energy counters beside them
//! ([`energy`]).
#![deny(missing_docs)]

pub mod energy;
pub mod nvml;
pub mod power;
pub mod sampler;
pub mod scrape;
