//! Views of stored points: the table of `inferbench report` ([`report`]) and the charts of
//! `inferbench plot` and the quickstarts ([`plot`]), with the labels, units and footers they
//! share (names and units from the metric registry, `inferbench_core::registry`). The store
//! queries and computes frontiers; this crate only renders (DESIGN.md §2: the store does not
//! render). The dashboard (`inferbench-web`) serves the same rows as JSON. [`preview`] is what
//! the quickstarts show of the points they have just stored; [`ingest`] what an ingest says of
//! itself.

pub mod analysis;
pub mod ingest;
pub mod plot;
pub mod preview;
pub mod report;
