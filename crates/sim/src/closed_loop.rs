//! A closed loop in modelled time, without a server or a clock (issue 43): `conc` clients each
//! send their next fixed-length request the moment their previous one ends, against the
//! simulator's own [`Engine`] with each step timed by the [`roofline`](crate::roofline). What a
//! `bench --max-concurrency conc` point against `inferbench sim` measures, less the client's and
//! the wire's delays and the engine thread's wake-up jitter: every request's send, first token
//! and end, in modelled seconds, deterministic for a configuration. Used to measure what an
//! early stop of a closed-loop point changes against InferenceX's fixed 10 × conc prompts, and
//! to pin the early-stop rule on the sim's own batching (first round of simultaneous prefills,
//! steady state, drain).

use crate::catalogue::Catalogue;
use crate::config::{ConfigError, SimConfig};
use crate::engine::{Engine, EngineConfig, NewSeq};
use crate::roofline::step_time;
use crate::SimError;

/// One finished request of a [`closed_loop`] run, times in modelled seconds from the first send.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoopRequest {
    /// Send order, from 0.
    pub index: u64,
    /// When it was sent (its client's previous request ended, or 0 for the first round), s.
    pub sent_s: f64,
    /// When its first output token was emitted (end of the step that emitted it), s.
    pub first_token_s: f64,
    /// When its last token was emitted, s.
    pub end_s: f64,
    /// Prompt tokens.
    pub prompt_tokens: u32,
    /// Output tokens.
    pub output_tokens: u32,
}

/// What a [`closed_loop`] run did.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopRun {
    /// Every request, in order of completion (ties in send order).
    pub requests: Vec<LoopRequest>,
    /// The engine's busy time, modelled s (the sum of its steps: what
    /// `inferbench_sim:busy_seconds_total` counts; × TP for GPU-seconds).
    pub busy_s: f64,
    /// Requests sent.
    pub sent: u64,
}

/// Runs `prompts` requests of `isl` prompt and `osl` output tokens (each prompt unique: no
/// prefix-cache hits) through the simulator's engine and roofline for `cfg` (its hardware,
/// model, precision, TP, batching limits and roofline; its mode, time scale and faults are not
/// read) at concurrency `conc` (0 read as 1): `conc` requests at time 0, then one more each time
/// one ends, until `prompts` were sent or `stop` (called after each completion with every
/// request finished so far, in completion order) returned true and the round was completed
/// (sends go on until their count is a multiple of `conc`, as `inferbench_loadgen`'s closed
/// loop does under the early stop: InferenceX's 10 × conc ends on a whole round too); then the
/// requests in flight drain. A request the KV cache can never hold is not sent and the run ends there.
///
/// Errors: `cfg` invalid ([`SimConfig`]'s rules).
pub fn closed_loop(
    cfg: &SimConfig,
    conc: u32,
    prompts: u64,
    (isl, osl): (u32, u32),
    mut stop: impl FnMut(&[LoopRequest]) -> bool,
) -> Result<LoopRun, SimError> {
    let res = cfg.resolve()?;
    let cat = Catalogue::embedded();
    let hw = cat
        .hardware(&cfg.hardware)
        .map_err(ConfigError::from)?
        .clone();
    let model = cat.model(&cfg.model).map_err(ConfigError::from)?.clone();
    let mut engine = Engine::new(EngineConfig {
        max_num_seqs: cfg.max_num_seqs,
        max_num_batched_tokens: cfg.max_num_batched_tokens,
        block_size: cfg.block_size,
        num_blocks: res.num_blocks,
        enable_prefix_caching: cfg.enable_prefix_caching,
        spec_decode: cfg.spec_decode,
        output_ids: *cfg.tokenizer.output_ids(),
    });
    let (isl, osl) = (isl.max(1), osl.max(1));
    if !engine.fits(isl, osl) {
        return Ok(LoopRun {
            requests: Vec::new(),
            busy_s: 0.0,
            sent: 0,
        });
    }
    let bs = cfg.block_size.max(1);
    let seq = |i: u64| NewSeq {
        id: i,
        prompt_len: isl,
        // Unique per request (the cache-bust marker's effect): no block is shared.
        block_hashes: (0..u64::from(isl / bs))
            .map(|b| (i << 24) ^ (b + 1))
            .collect(),
        tail_tokens: vec![7; (isl % bs) as usize],
        output_len: osl,
    };
    // index → (sent, first token)
    let mut live: std::collections::HashMap<u64, (f64, Option<f64>)> = Default::default();
    let (mut now, mut busy, mut sent) = (0.0f64, 0.0f64, 0u64);
    let mut done: Vec<LoopRequest> = Vec::new();
    let mut stopped = false;
    for _ in 0..u64::from(conc.max(1)).min(prompts) {
        engine.add(seq(sent));
        live.insert(sent, (now, None));
        sent += 1;
    }
    while !engine.is_idle() {
        let step = engine.step();
        let dt = match cfg.fixed_step_s {
            Some(t) => t,
            None => {
                step_time(
                    &hw,
                    &model,
                    cfg.precision,
                    cfg.tp,
                    &step.work,
                    &cfg.roofline,
                )
                .total_s
            }
        };
        now += dt;
        busy += dt;
        let mut next = 0u64;
        for e in &step.emits {
            let Some(l) = live.get_mut(&e.id) else {
                continue;
            };
            l.1.get_or_insert(now);
            if e.finished {
                let (s, f) = live.remove(&e.id).expect("live");
                done.push(LoopRequest {
                    index: e.id,
                    sent_s: s,
                    first_token_s: f.unwrap_or(now),
                    end_s: now,
                    prompt_tokens: isl,
                    output_tokens: e.total,
                });
                stopped = stopped || stop(&done);
                next += 1;
            }
        }
        let c = u64::from(conc.max(1));
        for _ in 0..next {
            if (stopped && sent.is_multiple_of(c)) || sent >= prompts {
                break;
            }
            engine.add(seq(sent));
            live.insert(sent, (now, None));
            sent += 1;
        }
    }
    Ok(LoopRun {
        requests: done,
        busy_s: busy,
        sent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fixed 10 ms steps: conc 2, 4 prompts of 16 + 4 tokens; the prompt fits one step, so
    /// each request's first token comes with its prefill step and the rest a step apart: two
    /// rounds of 4 steps, 80 ms; sends at 0, 0, 40, 40 ms.
    #[test]
    fn fixed_steps_give_exact_rounds() {
        let cfg = SimConfig {
            fixed_step_s: Some(0.01),
            ..SimConfig::default()
        };
        let run = closed_loop(&cfg, 2, 4, (16, 4), |_| false).unwrap();
        assert_eq!(run.sent, 4);
        let ms = |s: f64| (s * 1e3).round() as u64;
        let got: Vec<(u64, u64, u64, u64)> = (run.requests.iter())
            .map(|r| (r.index, ms(r.sent_s), ms(r.first_token_s), ms(r.end_s)))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, 0, 10, 40),
                (1, 0, 10, 40),
                (2, 40, 50, 80),
                (3, 40, 50, 80)
            ]
        );
        assert_eq!(ms(run.busy_s), 80);
        // The stop after the first completion sends nothing more: the round (2) is whole.
        let cut = closed_loop(&cfg, 2, 4, (16, 4), |d| !d.is_empty()).unwrap();
        assert_eq!((cut.sent, cut.requests.len()), (2, 2));
    }
}
