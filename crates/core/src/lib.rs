//! Shared, pure types of inferbench: the per-request record, units, and the metric math every
//! other crate uses. No I/O and no async here (DESIGN.md §2).
//!
//! Data flows one way: config → job → run → [`record::RequestRecord`]s → [`metrics`] →
//! [`summary`] → store → [`analytics`] → views.

pub mod analytics;
pub mod anomaly;
pub mod metrics;
pub mod prometheus;
pub mod record;
pub mod registry;
pub mod server_metrics;
pub mod summary;

pub use anomaly::Anomaly;
pub use record::{AgenticRef, Channel, ChunkRecord, ErrorClass, Phase, RequestRecord, TokenSource};
