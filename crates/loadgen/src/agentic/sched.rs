//! The AgentX replay scheduler (reference/agentx.md §3): a pure state machine on explicit time.
//!
//! It never reads a clock and never sleeps: the driver calls [`Scheduler::poll`] with the time
//! now (ns since run start) to get what to send, [`Scheduler::complete`] when a request ends, and
//! sleeps until [`Scheduler::next_wakeup`]. Tests drive it on virtual time, so delays, idle caps,
//! t* and phases are asserted exactly.
//!
//! Rules, with InferenceX's defaults (§3.10):
//! - `--concurrency N` = N lanes, each holding one session tree (root + sub-agents) until the
//!   whole tree drains; sub-agents take no extra lane, so requests in flight can exceed N (§3.1).
//! - Lane `i` starts on trace `i mod traces` (sequential sampler) at a start point t* drawn
//!   uniformly in `[min, max]` (0.25–0.75) of the tree's span of recorded starts, from a per-lane
//!   seed (§3.3). Requests before t* are history (not sent); each stream alive at t* (history
//!   behind it, turns ahead) gets a primer: its last history turn re-sent with 1 output token.
//!   Primers are spread (AIPerf's default): each fires `L − lead` after the start, where lead =
//!   t* − the turn's recorded start (capped by the system idle cap) and L the largest lead over
//!   all lanes, so every lane reaches its t* at the same moment. After a lane's primers the next `warmup_per_lane` requests (10) are sent with no delays and
//!   1 output token (§3.4). All of this is the warmup phase, excluded from metrics.
//! - The profiling phase starts when every lane's warmup has drained (or the warmup grace
//!   ended) at T0 and lasts `duration`. A request is sent when all its predecessors
//!   ([`super::plan`]) completed, at the latest of (completion + recorded gap) over them; a
//!   predecessor completed in warmup counts as completed at T0, one in history at
//!   `T0 − (t* − recorded end)`, so the first profiling turn waits its recorded gap after t*.
//! - Idle caps (§3.6): when a tree has nothing in flight, its next timer is at most
//!   `tree_idle_cap` (300 s) after its last completion; when nothing is in flight anywhere, the
//!   next timer is at most `system_idle_cap` (10 s) away. Both shift all affected timers by one
//!   amount, keeping order and spacing.
//! - A drained lane recycles (§3.7): the next trace of the sequential sampler, from turn 0, no
//!   warmup, a new cache-bust identity (the trace's play count + 1).
//! - Failures (§3.9): an ordinary error completes the request (its successors go on); a context
//!   overflow ends the rest of its stream; a failed root request in warmup aborts the run.

use std::collections::BTreeSet;
use std::sync::Arc;

use inferbench_core::Phase;

use super::plan::TreePlan;

/// Scheduler settings (ns on the run clock).
#[derive(Debug, Clone, PartialEq)]
pub struct SchedConfig {
    /// Lanes (`--concurrency`).
    pub lanes: u32,
    /// Profiling duration (`--benchmark-duration`, InferenceX 3,600 s).
    pub duration_ns: u64,
    /// t* range as fractions of the tree's span (`--trajectory-start-min/max-ratio`, 0.25/0.75).
    pub start_ratio: (f64, f64),
    /// Warmup requests per lane after its primers (`--warmup-requests-per-lane`, 10).
    pub warmup_per_lane: u32,
    /// Longest warmup before profiling starts anyway (`--warmup-grace-period`, 1,800 s).
    pub warmup_grace_ns: u64,
    /// Whole-system idle cap (`--system-idle-gap-cap-seconds`, 10 s); `None` = off.
    pub system_idle_cap_ns: Option<u64>,
    /// Per-tree idle cap (`--trace-idle-gap-cap-seconds`, 300 s); `None` = off.
    pub tree_idle_cap_ns: Option<u64>,
    /// Run seed (`--random-seed`, 42): t* draws and cache-bust identities.
    pub seed: u64,
}

impl Default for SchedConfig {
    /// InferenceX's invocation (reference/agentx.md §3.10).
    fn default() -> Self {
        SchedConfig {
            lanes: 8,
            duration_ns: 3_600 * NS,
            start_ratio: (0.25, 0.75),
            warmup_per_lane: 10,
            warmup_grace_ns: 1_800 * NS,
            system_idle_cap_ns: Some(10 * NS),
            tree_idle_cap_ns: Some(300 * NS),
            seed: 42,
        }
    }
}

const NS: u64 = 1_000_000_000;

/// What a dispatched request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A snapshot primer: a history turn re-sent with 1 output token (warmup).
    Primer,
    /// One of the lane's warmup requests (no delays, 1 output token).
    Warmup,
    /// A measured request (recorded output length).
    Profile,
}

/// Identifies a dispatched request in [`Scheduler::complete`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket {
    play: u32,
    /// Index into the plan's requests, or `u32::MAX − stream` for a primer.
    req: u32,
}

/// One request to send now.
#[derive(Debug, Clone, PartialEq)]
pub struct Dispatch {
    /// Hand back to [`Scheduler::complete`].
    pub ticket: Ticket,
    /// Lane (0-based).
    pub lane: u32,
    /// Play serial (0-based, run-wide): one per tree replay; the session tree's identity.
    pub play: u32,
    /// Trace index in the loaded set.
    pub trace: usize,
    /// How many times this trace was started before this play (recycle pass).
    pub pass: u32,
    /// Stream index in the trace.
    pub stream: u32,
    /// Turn within the stream.
    pub turn: u32,
    /// Warmup (primers, warmup requests) or profile.
    pub phase: Phase,
    /// Primer, warmup or profile.
    pub kind: Kind,
    /// When the rules wanted it sent, ns on the run clock (≤ the `now` it was polled at).
    pub scheduled_ns: u64,
    /// Cache-bust identity of the session tree: 48 bits from (seed, trace, pass, lane).
    pub marker_id: u64,
    /// How much earlier than its recorded gap the idle caps moved this request's timer, ns
    /// (per-tree and whole-system shifts summed; 0 when none applied, and for primers).
    pub gap_capped_ns: u64,
}

/// How a request ended, for the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Success.
    Ok,
    /// A failure: the stream goes on as if it had succeeded (§3.9).
    Error,
    /// The server rejected the prompt as too long: the rest of the stream is dropped.
    ContextOverflow,
}

/// Counters for the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchedStats {
    /// Whole-system idle jumps and the total time skipped (ns).
    pub system_jumps: u64,
    /// Time skipped by whole-system jumps, ns.
    pub system_skipped_ns: u64,
    /// Per-tree idle jumps.
    pub tree_jumps: u64,
    /// Time skipped by per-tree jumps, ns (summed over trees).
    pub tree_skipped_ns: u64,
    /// Plays started (initial lanes + recycles).
    pub plays: u64,
    /// Plays that drained completely.
    pub plays_finished: u64,
    /// Requests skipped because their stream hit a context overflow.
    pub skipped_after_overflow: u64,
    /// Traces not usable as a first play (fewer than 2 requests).
    pub unusable_traces: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    /// Waiting for predecessors.
    Blocked,
    /// All predecessors done; timer at the value in `at`.
    Ready,
    InFlight,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    History,
    Warmup,
    Profile,
}

#[derive(Debug)]
struct Play {
    lane: u32,
    plan: usize,
    pass: u32,
    marker_id: u64,
    /// t* in ns of the tree's recorded clock (0 for recycled plays).
    t_star: u64,
    /// Requests `[..history]` are history (recorded before t*, not sent).
    history: usize,
    /// What each request is: history, warmup or profile.
    part: Vec<Part>,
    st: Vec<St>,
    pending: Vec<u32>,
    done_ns: Vec<u64>,
    at: Vec<u64>,
    /// How far the idle caps moved each request's timer earlier, ns (summed).
    capped: Vec<u64>,
    /// Primers not yet completed (warmup gating).
    primers_left: u32,
    /// Primers still to dispatch: stream, turn and when to send it (ns; before
    /// [`Scheduler::new`] spreads them, the lead t* − the turn's recorded start, capped).
    primers: Vec<(u32, u32, u64)>,
    /// Primers dispatched (a primer's ticket is `u32::MAX − index` here).
    sent_primers: Vec<(u32, u32)>,
    /// The tree's last completion (or its start), ns: the per-tree idle cap counts from it.
    idle_since: u64,
    in_flight: u32,
    remaining: usize,
    finished: bool,
}

impl Play {
    fn part(&self, i: usize) -> Part {
        self.part[i]
    }

    fn primer(&self, k: u32) -> (u32, u32) {
        self.sent_primers.get(k as usize).copied().unwrap_or((0, 0))
    }
}

/// Replay phase of the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunPhase {
    /// Primers and warmup requests.
    Warmup,
    /// Measuring, since T0.
    Profile,
    /// The duration ended: nothing new is sent.
    Ended,
    /// A root warmup request failed: the run is aborted (§3.4).
    Aborted,
}

/// The scheduler. See the module docs for the rules.
#[derive(Debug)]
pub struct Scheduler {
    plans: Arc<Vec<TreePlan>>,
    cfg: SchedConfig,
    plays: Vec<Play>,
    /// Timers of Ready requests: (at, play, req).
    timers: BTreeSet<(u64, u32, u32)>,
    phase: RunPhase,
    t0: Option<u64>,
    /// Next trace of the sequential sampler.
    next_trace: usize,
    /// Plays started per trace (recycle pass).
    passes: Vec<u32>,
    in_flight: u32,
    stats: SchedStats,
    /// Usable plan indexes (≥ 1 request).
    usable: Vec<usize>,
}

fn mix(mut x: u64) -> u64 {
    // splitmix64 finalizer: a fixed, platform-independent 64-bit mixer.
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A per-(seed, trace, lane) uniform draw in [0, 1): t*'s position in the ratio range.
fn lane_uniform(seed: u64, trace: usize, lane: u32) -> f64 {
    let h = mix(mix(mix(seed) ^ trace as u64) ^ u64::from(lane));
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// The cache-bust identity of a play (48 bits).
fn marker(seed: u64, trace: usize, pass: u32, lane: u32) -> u64 {
    mix(mix(mix(seed ^ 0x5eed) ^ trace as u64) ^ (u64::from(pass) << 32 | u64::from(lane)))
        & 0xffff_ffff_ffff
}

impl Scheduler {
    /// A scheduler over `plans` (one per loaded trace). Lanes start at time 0 (the first
    /// [`Scheduler::poll`]).
    pub fn new(plans: Arc<Vec<TreePlan>>, cfg: SchedConfig) -> Scheduler {
        let usable: Vec<usize> = (0..plans.len())
            .filter(|&i| !plans[i].reqs.is_empty())
            .collect();
        let mut s = Scheduler {
            passes: vec![0; plans.len()],
            plans,
            cfg,
            plays: Vec::new(),
            timers: BTreeSet::new(),
            phase: RunPhase::Warmup,
            t0: None,
            next_trace: 0,
            in_flight: 0,
            stats: SchedStats::default(),
            usable,
        };
        s.stats.unusable_traces = s.plans.iter().filter(|p| p.reqs.len() < 2).count() as u64;
        if s.usable.is_empty() {
            s.phase = RunPhase::Ended;
            return s;
        }
        // First plays: sequential over traces with ≥ 2 requests (a warmup and a profiled turn);
        // when every trace is tiny, any usable one.
        let firsts: Vec<usize> = {
            let big: Vec<usize> = s
                .usable
                .iter()
                .copied()
                .filter(|&i| s.plans[i].reqs.len() >= 2)
                .collect();
            if big.is_empty() {
                s.usable.clone()
            } else {
                big
            }
        };
        for lane in 0..s.cfg.lanes {
            let plan = firsts[lane as usize % firsts.len()];
            s.start_play(lane, plan, true, 0);
        }
        s.next_trace = s.cfg.lanes as usize;
        // Spread primers (§3.4, AIPerf's default): each fires `max lead − its lead` after the
        // start, so every lane reaches its t* at the same moment.
        let max_lead = s
            .plays
            .iter()
            .flat_map(|p| p.primers.iter().map(|x| x.2))
            .max()
            .unwrap_or(0);
        for p in &mut s.plays {
            for x in &mut p.primers {
                x.2 = max_lead - x.2;
            }
        }
        s
    }

    /// The run phase now.
    pub fn phase(&self) -> RunPhase {
        self.phase
    }

    /// T0, the start of the profiling phase (ns), once it began.
    pub fn profile_start_ns(&self) -> Option<u64> {
        self.t0
    }

    /// Requests in flight (dispatched, not completed).
    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Counters so far.
    pub fn stats(&self) -> &SchedStats {
        &self.stats
    }

    /// True when nothing is in flight and nothing more will be sent.
    pub fn is_done(&self) -> bool {
        self.in_flight == 0 && matches!(self.phase, RunPhase::Ended | RunPhase::Aborted)
    }

    fn start_play(&mut self, lane: u32, plan_idx: usize, first: bool, now: u64) {
        let plan = &self.plans[plan_idx];
        let n = plan.reqs.len();
        let pass = self.passes[plan_idx];
        self.passes[plan_idx] += 1;
        let play_idx = self.plays.len() as u32;
        let mut play = Play {
            lane,
            plan: plan_idx,
            pass,
            marker_id: marker(self.cfg.seed, plan.trace, pass, lane),
            t_star: 0,
            history: 0,
            part: vec![Part::Profile; n],
            st: vec![St::Blocked; n],
            pending: plan.reqs.iter().map(|r| r.preds.len() as u32).collect(),
            done_ns: vec![0; n],
            at: vec![0; n],
            capped: vec![0; n],
            primers_left: 0,
            primers: Vec::new(),
            sent_primers: Vec::new(),
            idle_since: now,
            in_flight: 0,
            remaining: n,
            finished: false,
        };
        if first {
            let (lo, hi) = self.cfg.start_ratio;
            let u = lane_uniform(self.cfg.seed, plan.trace, lane);
            let frac = lo + (hi - lo) * u;
            let (start, extent) = plan.span_ns;
            let t_star = start + (extent as f64 * frac).round() as u64;
            // History: requests starting before t*; keep at least one request to profile.
            let mut history = plan.reqs.partition_point(|r| r.t_ns < t_star);
            history = history.min(n.saturating_sub(1));
            play.t_star = t_star;
            play.history = history;
            let warm = (self.cfg.warmup_per_lane as usize).min(n - history - 1);
            for (i, part) in play.part.iter_mut().enumerate() {
                if i < history {
                    *part = Part::History;
                } else if i < history + warm {
                    *part = Part::Warmup;
                }
            }
            // Primers: streams with history behind and turns ahead, each with its lead (how
            // long before t* its turn was recorded to start), clamped by the system idle cap.
            let cap = self.cfg.system_idle_cap_ns.unwrap_or(u64::MAX);
            let mut last_hist: Vec<Option<(u32, u64)>> = vec![None; plan.streams_kept.len()];
            let mut has_future = vec![false; plan.streams_kept.len()];
            for (i, r) in plan.reqs.iter().enumerate() {
                if i < history {
                    last_hist[r.stream as usize] = Some((r.turn, t_star.saturating_sub(r.t_ns)));
                } else {
                    has_future[r.stream as usize] = true;
                }
            }
            for (s, h) in last_hist.iter().enumerate() {
                if let (Some((t, lead)), true) = (h, has_future[s]) {
                    play.primers.push((s as u32, *t, (*lead).min(cap)));
                }
            }
            play.primers_left = play.primers.len() as u32;
            for i in 0..history {
                play.st[i] = St::Done;
                play.remaining -= 1;
            }
        }
        self.stats.plays += 1;
        self.plays.push(play);
        // Release what has no pending predecessors.
        let play = &mut self.plays[play_idx as usize];
        for i in 0..n {
            if play.st[i] == St::Done {
                for &succ in plan.successors(i) {
                    play.pending[succ as usize] -= 1;
                }
            }
        }
        if !first || self.phase != RunPhase::Warmup {
            // A recycled play starts now; profile timers from `now`.
            for i in 0..n {
                if play.st[i] == St::Blocked && play.pending[i] == 0 {
                    play.st[i] = St::Ready;
                    play.at[i] = now;
                    self.timers.insert((now, play_idx, i as u32));
                }
            }
        }
    }

    /// Requests to send at `now` (ns since run start). Call again after every
    /// [`Scheduler::complete`] and whenever `now` reaches [`Scheduler::next_wakeup`].
    pub fn poll(&mut self, now: u64) -> Vec<Dispatch> {
        let mut out = Vec::new();
        match self.phase {
            RunPhase::Warmup => {
                self.poll_warmup(now, &mut out);
                if self.phase == RunPhase::Warmup
                    && (self.warmup_drained() || now >= self.cfg.warmup_grace_ns)
                {
                    self.begin_profile(now);
                }
                if self.phase == RunPhase::Profile {
                    self.poll_profile(now, &mut out);
                }
            }
            RunPhase::Profile => self.poll_profile(now, &mut out),
            RunPhase::Ended | RunPhase::Aborted => {}
        }
        self.in_flight += out.len() as u32;
        out
    }

    fn warmup_drained(&self) -> bool {
        self.plays.iter().all(|p| {
            p.primers.is_empty()
                && p.primers_left == 0
                && (0..p.st.len()).all(|i| p.part[i] != Part::Warmup || p.st[i] == St::Done)
        })
    }

    fn dispatch(&self, play_idx: u32, req: u32, kind: Kind, scheduled_ns: u64) -> Dispatch {
        let play = &self.plays[play_idx as usize];
        let plan = &self.plans[play.plan];
        let (stream, turn, gap_capped_ns) = if req >= u32::MAX / 2 {
            let (s, t) = play.primer(u32::MAX - req);
            (s, t, 0)
        } else {
            let r = &plan.reqs[req as usize];
            (r.stream, r.turn, play.capped[req as usize])
        };
        Dispatch {
            ticket: Ticket {
                play: play_idx,
                req,
            },
            lane: play.lane,
            play: play_idx,
            trace: plan.trace,
            pass: play.pass,
            stream,
            turn,
            phase: if kind == Kind::Profile {
                Phase::Profile
            } else {
                Phase::Warmup
            },
            kind,
            scheduled_ns,
            marker_id: play.marker_id,
            gap_capped_ns,
        }
    }

    fn poll_warmup(&mut self, now: u64, out: &mut Vec<Dispatch>) {
        for pi in 0..self.plays.len() {
            // Primers first, each at its spread time.
            let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.plays[pi].primers)
                .into_iter()
                .partition(|p| p.2 <= now);
            self.plays[pi].primers = later;
            for (s, t, at) in due {
                let play = &mut self.plays[pi];
                play.in_flight += 1;
                play.sent_primers.push((s, t));
                let code = u32::MAX - (play.sent_primers.len() as u32 - 1);
                out.push(self.dispatch(pi as u32, code, Kind::Primer, at));
            }
            let play = &self.plays[pi];
            if play.primers_left > 0 {
                continue;
            }
            // Warmup requests whose predecessors are done, no delays.
            let ready: Vec<usize> = (play.history..play.st.len())
                .take_while(|&i| play.part[i] == Part::Warmup)
                .filter(|&i| play.st[i] == St::Blocked && play.pending[i] == 0)
                .collect();
            for i in ready {
                let play = &mut self.plays[pi];
                play.st[i] = St::InFlight;
                play.in_flight += 1;
                out.push(self.dispatch(pi as u32, i as u32, Kind::Warmup, now));
            }
        }
    }

    fn begin_profile(&mut self, now: u64) {
        self.phase = RunPhase::Profile;
        self.t0 = Some(now);
        for pi in 0..self.plays.len() {
            // Lanes whose warmup finished their tree recycle now.
            let play = &mut self.plays[pi];
            play.primers.clear();
            if play.remaining == 0 && play.in_flight == 0 && !play.finished {
                let lane = play.lane;
                self.finish_play(pi);
                self.recycle(lane, now);
                continue;
            }
            if play.finished {
                continue;
            }
            play.idle_since = now;
            let n = self.plans[play.plan].reqs.len();
            for i in 0..n {
                let play = &mut self.plays[pi];
                if play.part[i] == Part::Warmup && play.st[i] == St::Blocked {
                    // Warmup the grace period cut short: measured from here on.
                    play.part[i] = Part::Profile;
                }
                if play.st[i] == St::Blocked && play.pending[i] == 0 {
                    self.make_ready(pi, i);
                }
            }
            self.tree_idle_cap(pi);
        }
        self.system_idle_cap(now);
    }

    /// All predecessors of request `i` of play `pi` are done: compute its timer.
    fn make_ready(&mut self, pi: usize, i: usize) {
        let t0 = self.t0.unwrap_or(0);
        let play = &self.plays[pi];
        let plan = &self.plans[play.plan];
        let r = &plan.reqs[i];
        // No predecessor: a first play's root turn 0 (recorded offset after t*). Recycled
        // plays release theirs in `start_play`.
        let mut at = if r.preds.is_empty() {
            t0 + r.t_ns.saturating_sub(play.t_star)
        } else {
            0
        };
        for &(p, gap) in &r.preds {
            let p = p as usize;
            let done = match play.part(p) {
                Part::History => {
                    // Virtually completed at T0 − (t* − recorded end).
                    let end = plan.reqs[p].end_ns as i128;
                    let v = t0 as i128 + end - play.t_star as i128 + gap as i128;
                    v.max(t0 as i128) as u64
                }
                Part::Warmup => t0 + gap,
                Part::Profile => play.done_ns[p] + gap,
            };
            at = at.max(done);
        }
        let play = &mut self.plays[pi];
        play.st[i] = St::Ready;
        play.at[i] = at;
        self.timers.insert((at, pi as u32, i as u32));
    }

    fn poll_profile(&mut self, now: u64, out: &mut Vec<Dispatch>) {
        let end = self.t0.unwrap_or(0) + self.cfg.duration_ns;
        if now >= end {
            self.phase = RunPhase::Ended;
            return;
        }
        while let Some(&(at, pi, i)) = self.timers.first() {
            if at > now {
                break;
            }
            self.timers.pop_first();
            let play = &mut self.plays[pi as usize];
            play.st[i as usize] = St::InFlight;
            play.in_flight += 1;
            out.push(self.dispatch(pi, i, Kind::Profile, at));
        }
    }

    /// The next time [`Scheduler::poll`] has something to do (a timer, the end of the duration
    /// or of the warmup grace), or `None` when only completions can move it.
    pub fn next_wakeup(&self) -> Option<u64> {
        match self.phase {
            RunPhase::Warmup => {
                let primer = self
                    .plays
                    .iter()
                    .flat_map(|p| p.primers.iter().map(|x| x.2))
                    .min();
                Some(primer.map_or(self.cfg.warmup_grace_ns, |at| {
                    at.min(self.cfg.warmup_grace_ns)
                }))
            }
            RunPhase::Profile => {
                let end = self.t0.unwrap_or(0) + self.cfg.duration_ns;
                Some(self.timers.first().map_or(end, |&(at, _, _)| at.min(end)))
            }
            RunPhase::Ended | RunPhase::Aborted => None,
        }
    }

    /// Ends the profile at `now` (run clock, ns) as if its duration had run out then (issue 43:
    /// an AgentX early stop): the next [`Scheduler::poll`] ends the phase, so no new request
    /// starts and the ones in flight end as at the duration's end. No-op outside the profile,
    /// or when the duration ends earlier anyway.
    pub fn end_profile_at(&mut self, now: u64) {
        if self.phase == RunPhase::Profile {
            let t0 = self.t0.unwrap_or(0);
            self.cfg.duration_ns = self.cfg.duration_ns.min(now.saturating_sub(t0));
        }
    }

    /// Records that the request of `ticket` ended at `now` with `outcome`.
    pub fn complete(&mut self, ticket: Ticket, now: u64, outcome: Outcome) {
        self.in_flight = self.in_flight.saturating_sub(1);
        let pi = ticket.play as usize;
        let plans = Arc::clone(&self.plans);
        let play = &mut self.plays[pi];
        play.in_flight = play.in_flight.saturating_sub(1);
        if ticket.req >= u32::MAX / 2 {
            play.primers_left = play.primers_left.saturating_sub(1);
            let (s, _) = play.primer(u32::MAX - ticket.req);
            if outcome != Outcome::Ok && s == 0 && self.phase == RunPhase::Warmup {
                self.phase = RunPhase::Aborted;
            }
            return;
        }
        let plan = &plans[play.plan];
        let i = ticket.req as usize;
        let part = play.part(i);
        if outcome != Outcome::Ok && part == Part::Warmup && plan.reqs[i].stream == 0 {
            self.phase = RunPhase::Aborted;
        }
        let mut finished_now = vec![i];
        if outcome == Outcome::ContextOverflow {
            let s = plan.reqs[i].stream;
            // The rest of the stream is skipped: it completes now, unsent.
            for (j, r) in plan.reqs.iter().enumerate().skip(i + 1) {
                if r.stream == s && play.st[j] != St::Done && play.st[j] != St::InFlight {
                    if play.st[j] == St::Ready {
                        self.timers.remove(&(play.at[j], pi as u32, j as u32));
                    }
                    finished_now.push(j);
                    self.stats.skipped_after_overflow += 1;
                }
            }
        }
        let mut newly_ready = Vec::new();
        for &j in &finished_now {
            let play = &mut self.plays[pi];
            play.st[j] = St::Done;
            play.done_ns[j] = now;
            play.remaining -= 1;
            play.idle_since = now;
            for &succ in plan.successors(j) {
                let play = &mut self.plays[pi];
                let succ = succ as usize;
                if play.pending[succ] == 0 {
                    continue;
                }
                play.pending[succ] -= 1;
                if play.pending[succ] == 0 && play.st[succ] == St::Blocked {
                    newly_ready.push(succ);
                }
            }
        }
        if self.phase == RunPhase::Profile {
            for j in newly_ready {
                let play = &self.plays[pi];
                if play.part(j) == Part::Profile && play.st[j] == St::Blocked {
                    self.make_ready(pi, j);
                }
            }
            let play = &mut self.plays[pi];
            if play.remaining == 0 && play.in_flight == 0 && !play.finished {
                self.finish_play(pi);
                let lane = self.plays[pi].lane;
                self.recycle(lane, now);
            } else if play.in_flight == 0 {
                self.tree_idle_cap(pi);
            }
            if self.in_flight == 0 {
                self.system_idle_cap(now);
            }
        }
    }

    /// Marks play `pi` finished and frees its per-request state (memory stays bounded by the
    /// live plays).
    fn finish_play(&mut self, pi: usize) {
        let play = &mut self.plays[pi];
        play.finished = true;
        play.st = Vec::new();
        play.pending = Vec::new();
        play.done_ns = Vec::new();
        play.at = Vec::new();
        play.part = Vec::new();
        self.stats.plays_finished += 1;
    }

    fn recycle(&mut self, lane: u32, now: u64) {
        let plan = self.usable[self.next_trace % self.usable.len()];
        self.next_trace += 1;
        self.start_play(lane, plan, false, now);
    }

    /// Per-tree idle cap (§3.6): play `pi` has nothing in flight; its next timer may be at most
    /// `tree_idle_cap` after its last completion.
    fn tree_idle_cap(&mut self, pi: usize) {
        let Some(cap) = self.cfg.tree_idle_cap_ns else {
            return;
        };
        let play = &self.plays[pi];
        if play.finished || play.in_flight > 0 {
            return;
        }
        let timers: Vec<u32> = (0..play.st.len() as u32)
            .filter(|&i| play.st[i as usize] == St::Ready)
            .collect();
        let Some(earliest) = timers.iter().map(|&i| play.at[i as usize]).min() else {
            return;
        };
        let limit = play.idle_since + cap;
        if earliest > limit {
            let shift = earliest - limit;
            self.shift_play(pi, &timers, shift);
            self.stats.tree_jumps += 1;
            self.stats.tree_skipped_ns += shift;
        }
    }

    /// Whole-system idle cap (§3.6): nothing is in flight anywhere; the next timer may be at
    /// most `system_idle_cap` after `now`.
    fn system_idle_cap(&mut self, now: u64) {
        let Some(cap) = self.cfg.system_idle_cap_ns else {
            return;
        };
        if self.in_flight > 0 {
            return;
        }
        let Some(&(earliest, _, _)) = self.timers.first() else {
            return;
        };
        if earliest <= now + cap {
            return;
        }
        let shift = earliest - now - cap;
        let all: Vec<(u64, u32, u32)> = std::mem::take(&mut self.timers).into_iter().collect();
        for (at, pi, i) in all {
            let at = at - shift;
            self.plays[pi as usize].at[i as usize] = at;
            self.plays[pi as usize].capped[i as usize] += shift;
            self.timers.insert((at, pi, i));
        }
        self.stats.system_jumps += 1;
        self.stats.system_skipped_ns += shift;
    }

    fn shift_play(&mut self, pi: usize, reqs: &[u32], shift: u64) {
        for &i in reqs {
            let play = &mut self.plays[pi];
            let old = play.at[i as usize];
            self.timers.remove(&(old, pi as u32, i));
            let new = old - shift;
            play.at[i as usize] = new;
            play.capped[i as usize] += shift;
            self.timers.insert((new, pi as u32, i));
        }
    }
}
