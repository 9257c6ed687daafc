//! inferbench-telemetry: what the hardware and the server report beside the load generator's
//! own records (DESIGN.md §2 "telemetry"): GPU power from a `power.csv` — per-GPU energy over
//! the benchmark window and InferenceX's validity rules ([`power`]) — and the per-second
//! Prometheus `/metrics` scraper ([`scrape`]), and the power samplers that write `power.csv`
//! (nvidia-smi, amd-smi: [`sampler`]; NVML next).
#![deny(missing_docs)]

pub mod power;
pub mod sampler;
pub mod scrape;
