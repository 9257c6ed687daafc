//! inferbench-telemetry: what the hardware and the server report beside the load generator's
//! own records (DESIGN.md §2 "telemetry"): GPU power from a `power.csv` — per-GPU energy over
//! the benchmark window and InferenceX's validity rules ([`power`]) — and the per-second
//! Prometheus `/metrics` scraper ([`scrape`]). Power samplers (NVML, nvidia-smi, amd-smi) belong
//! here next.
#![deny(missing_docs)]

pub mod power;
pub mod scrape;
