//! inferbench-telemetry: what the hardware and the server report beside the load generator's
//! own records (DESIGN.md §2 "telemetry"). Today: GPU power from a `power.csv` — per-GPU energy
//! over the benchmark window and InferenceX's validity rules ([`power`]). Samplers (NVML,
//! nvidia-smi, amd-smi) and the per-second `/metrics` scraper belong here next.
#![deny(missing_docs)]

pub mod power;
