//! Timed mode: the engine thread (the simulated GPU) runs [`Engine`] steps, sleeps each step's
//! roofline time (÷ `time_scale`) to an absolute deadline, then hands each request its tokens.
//!
//! It is a plain OS thread, not a tokio task: `std::thread::sleep` wakes within tens of
//! microseconds, while tokio's timer has 1 ms granularity, which at a time scale of 8 would be
//! 8 ms of modelled jitter on every step.

use std::collections::HashMap;
use std::sync::mpsc as std_mpsc;
use std::sync::Weak;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::catalogue::Catalogue;
use crate::engine::{Engine, EngineConfig, NewSeq, StepResult};
use crate::metrics::Metrics;
use crate::roofline::step_time;
use crate::server::App;

/// Tokens for one request from one step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TokenMsg {
    /// Tokens generated this step.
    pub tokens: u32,
    /// Whether this was the last.
    pub finished: bool,
    /// Prompt tokens served from the prefix cache at admission.
    pub cached: u32,
    /// When the step's tokens were due on the wire (its scheduled end), and how late past that
    /// a write counts as late ([`crate::server::App::late_chunks`]); `None` in instant mode.
    pub due: Option<(Instant, Duration)>,
}

/// Messages into the engine loop.
pub(crate) enum EngineMsg {
    Add {
        seq: NewSeq,
        arrival_s: f64,
        finish_reason: &'static str,
        tx: mpsc::UnboundedSender<TokenMsg>,
    },
    ResetPrefixCache,
    /// The client went away before its response finished: free the sequence.
    Abort(u64),
}

/// Sends [`EngineMsg::Abort`] on drop unless disarmed: held by every response that waits on
/// the engine, so a client that disconnects (even while queued) frees its sequence at once.
pub(crate) struct AbortGuard {
    pub tx: std_mpsc::Sender<EngineMsg>,
    pub id: u64,
    pub armed: bool,
}

impl Drop for AbortGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.tx.send(EngineMsg::Abort(self.id));
        }
    }
}

struct Live {
    tx: mpsc::UnboundedSender<TokenMsg>,
    cached: u32,
    prompt_len: u32,
    arrival_s: f64,
    first_s: Option<f64>,
    last_s: f64,
    finish_reason: &'static str,
}

/// If the loop falls further behind its deadline than this (CPU starvation), it re-anchors
/// instead of bursting to catch up.
const MAX_LAG: Duration = Duration::from_millis(50);

/// A token chunk written later than its step's schedule by less than this is on time: the
/// wake-up jitter of threads on a shared machine (with a 1 ms floor, a test suite on 2 cores
/// counted 13 % of its steps late with its results intact).
const LATE_MIN: Duration = Duration::from_millis(4);

/// The engine loop; returns when every sender is gone (the server stopped).
pub(crate) fn run(weak: Weak<App>, rx: std_mpsc::Receiver<EngineMsg>) {
    let Some(app) = weak.upgrade() else {
        return;
    };
    let cfg = app.cfg.clone();
    let num_blocks = app.res.num_blocks;
    drop(app);
    let cat = Catalogue::embedded();
    let hw = cat.hardware(&cfg.hardware).expect("validated").clone();
    let model = cat.model(&cfg.model).expect("validated").clone();
    let mut engine = Engine::new(EngineConfig {
        max_num_seqs: cfg.max_num_seqs,
        max_num_batched_tokens: cfg.max_num_batched_tokens,
        block_size: cfg.block_size,
        num_blocks,
        enable_prefix_caching: cfg.enable_prefix_caching,
        spec_decode: cfg.spec_decode,
        output_ids: *cfg.tokenizer.output_ids(),
    });
    let scale = cfg.time_scale;
    let mut live: HashMap<u64, Live> = HashMap::new();
    let mut aborts = 0u64;
    let mut deadline = Instant::now();
    loop {
        if engine.is_idle() {
            match rx.recv() {
                Ok(m) => accept(&mut engine, &mut live, &mut aborts, m),
                Err(_) => return,
            }
            deadline = Instant::now();
        }
        loop {
            match rx.try_recv() {
                Ok(m) => accept(&mut engine, &mut live, &mut aborts, m),
                Err(std_mpsc::TryRecvError::Empty) => break,
                Err(std_mpsc::TryRecvError::Disconnected) => return,
            }
        }
        if engine.is_idle() {
            // Aborts may have emptied the engine: publish the idle state before blocking.
            if let Some(app) = weak.upgrade() {
                let mut m = app.metrics.lock().expect("metrics lock");
                m.success_abort += std::mem::take(&mut aborts);
                m.running = 0;
                m.waiting = 0;
                m.kv_usage = engine.kv().usage();
            }
            continue;
        }
        let res = engine.step();
        let step_s = match cfg.fixed_step_s {
            Some(t) => t,
            None => step_time(&hw, &model, cfg.precision, cfg.tp, &res.work, &cfg.roofline).total_s,
        };
        let step_wall = Duration::from_secs_f64(step_s / scale);
        deadline += step_wall;
        // Written more than two steps (and more than a busy machine's wake-up jitter) after
        // this, its tokens go out bunched with the steps around it, not a step apart.
        let due = (deadline, (2 * step_wall).max(LATE_MIN));
        let now = Instant::now();
        if deadline > now {
            std::thread::sleep(deadline - now);
        } else if now - deadline > MAX_LAG {
            deadline = now;
        }
        let Some(app) = weak.upgrade() else {
            return;
        };
        let now_s = app.model_now();
        let mut m = app.metrics.lock().expect("metrics lock");
        let state = (&mut engine, &mut live, &mut aborts);
        publish_step(&mut m, state, &res, (now_s, step_s), due);
    }
}

/// Sends step `res`'s tokens to their streams and records it in the server's metrics `m`
/// (vLLM's counters and histograms): the engine, its live requests and the aborts not yet
/// counted as `state`; `(now_s, step_s)` = model time now and this step's length, s; `due` = when
/// the step's chunks are due and how late counts as late. A request whose stream is gone is
/// aborted.
fn publish_step(
    m: &mut Metrics,
    (engine, live, aborts): (&mut Engine, &mut HashMap<u64, Live>, &mut u64),
    res: &StepResult,
    (now_s, step_s): (f64, f64),
    due: (Instant, Duration),
) {
    let mut gone = Vec::new();
    m.busy_s += step_s;
    m.prefix_queries += res.prefix_queries;
    m.prefix_hits += res.prefix_hits;
    m.spec_drafts += res.drafts;
    m.spec_draft_tokens += res.draft_tokens;
    m.spec_accepted_tokens += res.accepted_tokens;
    for (id, cached) in &res.admitted {
        if let Some(l) = live.get_mut(id) {
            l.cached = *cached;
            // Admission happened at the start of this step.
            m.queue.observe((now_s - step_s - l.arrival_s).max(0.0));
        }
    }
    for e in &res.emits {
        let Some(l) = live.get_mut(&e.id) else {
            continue;
        };
        m.generation_tokens += u64::from(e.tokens);
        match l.first_s {
            None => {
                l.first_s = Some(now_s);
                m.ttft.observe(now_s - l.arrival_s);
                // As vLLM: a request's whole prompt (cached part included) counts once,
                // when its prefill completes.
                m.prompt_tokens += u64::from(l.prompt_len);
            }
            Some(_) => {
                let gap = now_s - l.last_s;
                m.itl.observe(gap);
                m.tpot
                    .observe_n(gap / f64::from(e.tokens), u64::from(e.tokens));
            }
        }
        l.last_s = now_s;
        let sent = l.tx.send(TokenMsg {
            tokens: e.tokens,
            finished: e.finished,
            cached: l.cached,
            due: Some(due),
        });
        if e.finished {
            m.e2e.observe(now_s - l.arrival_s);
            match l.finish_reason {
                "stop" => m.success_stop += 1,
                _ => m.success_length += 1,
            }
            live.remove(&e.id);
        } else if sent.is_err() {
            gone.push(e.id);
        }
    }
    m.success_abort += std::mem::take(aborts);
    for id in gone {
        engine.abort(id);
        live.remove(&id);
        m.success_abort += 1;
    }
    m.running = engine.num_running() as u64;
    m.waiting = engine.num_waiting() as u64;
    m.kv_usage = engine.kv().usage();
    m.preemptions = engine.preemptions();
}

fn accept(engine: &mut Engine, live: &mut HashMap<u64, Live>, aborts: &mut u64, m: EngineMsg) {
    match m {
        EngineMsg::Abort(id) => {
            if live.remove(&id).is_some() {
                engine.abort(id);
                *aborts += 1;
            }
        }
        EngineMsg::Add {
            seq,
            arrival_s,
            finish_reason,
            tx,
        } => {
            live.insert(
                seq.id,
                Live {
                    tx,
                    cached: 0,
                    prompt_len: seq.prompt_len,
                    arrival_s,
                    first_s: None,
                    last_s: arrival_s,
                    finish_reason,
                },
            );
            engine.add(seq);
        }
        EngineMsg::ResetPrefixCache => engine.reset_prefix_cache(),
    }
}
