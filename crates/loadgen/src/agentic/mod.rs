//! AgentX trace replay (reference/agentx.md §3): traces as request graphs ([`plan`]), the lane
//! scheduler on explicit time ([`sched`]), the AIPerf-shaped artifacts ([`aiperf`], §4.1–4.4).

pub mod aiperf;
pub mod overhead;
pub mod plan;
pub mod prompt;
pub mod run;
pub mod sched;

pub use overhead::TemplateOverhead;
pub use plan::{counted_traces, lane_load, LaneLoad, PlanReq, TreePlan};
pub use run::{
    measured, replay_end, replay_summary, run_replay, run_replay_adaptive, theoretical_hit_rate,
    write_artifacts, RecordsRoom, ReplayOptions, ReplayOutcome, ReplayStop,
};
pub use sched::{Dispatch, Kind, Outcome, RunPhase, SchedConfig, SchedStats, Scheduler, Ticket};

#[cfg(test)]
mod tests;
