//! Shared, pure types of inferbench: the per-request record, units, and (in `metrics`) the metric
//! math every other crate uses. No I/O and no async here (DESIGN.md §2).
//!
//! Data flows one way: config → job → run → [`record::RequestRecord`]s → metrics → store → views.

pub mod record;

pub use record::{Channel, ChunkRecord, ErrorClass, Phase, RequestRecord, TokenSource};
