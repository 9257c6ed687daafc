//! Roofline step time: how long one engine step (a batch of prefill chunks and decodes) takes on
//! `tp` GPUs of a catalogue [`Hardware`] for a catalogue [`Model`].
//!
//! For a step where sequence `i` processes `n_i` new tokens on top of `c_i` tokens already in its
//! KV cache, with `T = Σ n_i`:
//!
//! - weight bytes `W = dense·b + E·e·b·(1 − (1 − k/E)^T)`: every non-expert weight is read once;
//!   of the `E` routed experts (each `e` parameters over all layers, top-`k` routing) the expected
//!   fraction touched by `T` uniformly routed tokens is read. Dense models: `W = params·b`.
//!   `b` = bytes per parameter ([`Precision::weight_bytes_per_param`]).
//! - KV bytes `K = kv · Σ (c_i + n_i)`: the context is read and the new tokens' entries written
//!   (`kv` = [`Model::kv_bytes_per_token`]).
//! - FLOPs `F = 2·active·T + a · Σ (n_i·c_i + n_i(n_i+1)/2)`: the matmuls plus causal attention
//!   (`a` = `attn_flops_per_ctx_token`).
//! - memory time `(W + K) / (tp · BW · η_bw)`, compute time `F / (tp · peak · η_flops)`: tensor
//!   parallelism splits weights, heads and KV evenly.
//! - all-reduce time (tp > 1): `2·layers · (λ + 2(tp−1)/tp · T·hidden·2 B / link)`, two ring
//!   all-reduces of the BF16 activations per layer, `λ` = per-collective latency.
//! - step time = `max(memory, compute) + all-reduce + overhead`.
//!
//! [`RooflineParams::speed_of_light`] (efficiencies 1, no latency or overhead) gives the hardware
//! bound of a point; [`RooflineParams::default`] is what the simulator runs with.
//!
//! Not modelled: pipeline parallelism, expert parallelism and DP attention (every layout is
//! treated as tensor parallelism over `tp` GPUs), disaggregated prefill/decode, KV offload,
//! sliding-window and linear-attention layers (counted as full attention or ignored, per the
//! catalogue entry), the speculative drafter's own cost, and kernel-level effects beyond the two
//! efficiency factors.

use crate::catalogue::{Hardware, Model, Precision};

/// Work of one sequence in one step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqWork {
    /// Tokens processed this step (prefill chunk length, or 1 + draft tokens for a decode).
    pub new_tokens: u32,
    /// Tokens already in the sequence's KV cache before this step.
    pub context_tokens: u32,
}

/// Efficiency and fixed-cost parameters of the roofline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RooflineParams {
    /// Achieved fraction of peak HBM bandwidth, 0 < η ≤ 1. Default 0.8.
    pub bw_efficiency: f64,
    /// Achieved fraction of dense peak FLOP/s, 0 < η ≤ 1. Default 0.6.
    pub flops_efficiency: f64,
    /// Fixed time per step in seconds (scheduling, sampling, kernel launches). Default 0.001.
    pub overhead_s: f64,
    /// Latency of one all-reduce in seconds. Default 10 µs (1e-5).
    pub allreduce_latency_s: f64,
}

impl Default for RooflineParams {
    /// η_bw 0.8, η_flops 0.6, 1 ms per step, 10 µs per all-reduce: chosen (not measured) to put
    /// Llama-3.1-8B BF16 on one H100 at ≈ 130 tok/s for a single stream, in line with public
    /// vLLM single-stream figures.
    fn default() -> Self {
        RooflineParams {
            bw_efficiency: 0.8,
            flops_efficiency: 0.6,
            overhead_s: 1e-3,
            allreduce_latency_s: 1e-5,
        }
    }
}

impl RooflineParams {
    /// The hardware bound: full efficiency, no overhead, no collective latency.
    pub fn speed_of_light() -> Self {
        RooflineParams {
            bw_efficiency: 1.0,
            flops_efficiency: 1.0,
            overhead_s: 0.0,
            allreduce_latency_s: 0.0,
        }
    }
}

/// The parts of one step's modelled time (seconds) and work.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepTime {
    /// Total step time, seconds: `max(memory_s, compute_s) + allreduce_s + overhead_s`.
    pub total_s: f64,
    /// HBM time, seconds.
    pub memory_s: f64,
    /// Tensor-core time, seconds.
    pub compute_s: f64,
    /// All-reduce time, seconds (0 for tp = 1).
    pub allreduce_s: f64,
    /// Fixed overhead, seconds.
    pub overhead_s: f64,
    /// Bytes moved to/from HBM, all GPUs together.
    pub bytes: f64,
    /// FLOPs, all GPUs together.
    pub flops: f64,
    /// Tokens processed (`T`).
    pub tokens: u64,
}

/// Modelled time of one step; see the module doc for the formula. An empty batch costs only the
/// overhead. `tp` of 0 is treated as 1.
pub fn step_time(
    hw: &Hardware,
    model: &Model,
    precision: Precision,
    tp: u32,
    batch: &[SeqWork],
    params: &RooflineParams,
) -> StepTime {
    let tp_f = f64::from(tp.max(1));
    let tokens: u64 = batch.iter().map(|s| u64::from(s.new_tokens)).sum();
    if tokens == 0 {
        return StepTime {
            total_s: params.overhead_s,
            overhead_s: params.overhead_s,
            ..StepTime::default()
        };
    }
    let t = tokens as f64;
    let b = precision.weight_bytes_per_param();
    let (dense, expert) = model.dense_and_expert_params();
    let weights = match model.moe {
        Some(m) if expert > 0.0 => {
            let e = f64::from(m.experts);
            let frac = 1.0 - (1.0 - f64::from(m.experts_per_token) / e).powf(t);
            dense * b + e * expert * b * frac
        }
        _ => dense * b,
    };
    let kv = model.kv_bytes_per_token(precision) as f64;
    let mut ctx_sum = 0.0;
    let mut attn_pairs = 0.0;
    for s in batch {
        let n = f64::from(s.new_tokens);
        let c = f64::from(s.context_tokens);
        ctx_sum += c + n;
        attn_pairs += n * c + n * (n + 1.0) / 2.0;
    }
    let bytes = weights + kv * ctx_sum;
    let flops =
        2.0 * model.active_params_b * 1e9 * t + model.attn_flops_per_ctx_token as f64 * attn_pairs;
    let memory_s = bytes / (tp_f * hw.hbm_bytes_per_s() * params.bw_efficiency);
    let compute_s = flops / (tp_f * hw.peak_flops(precision) * params.flops_efficiency);
    let allreduce_s = if tp > 1 {
        let payload = t * f64::from(model.hidden) * 2.0;
        2.0 * f64::from(model.layers)
            * (params.allreduce_latency_s
                + 2.0 * (tp_f - 1.0) / tp_f * payload / (hw.interconnect_gb_s * 1e9))
    } else {
        0.0
    };
    StepTime {
        total_s: memory_s.max(compute_s) + allreduce_s + params.overhead_s,
        memory_s,
        compute_s,
        allreduce_s,
        overhead_s: params.overhead_s,
        bytes,
        flops,
        tokens,
    }
}

/// An idealised bound for one benchmark point (closed loop at concurrency `conc`, fixed ISL and
/// OSL): no queueing, every request in one batch, all prefills batched together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointBound {
    /// One decode step with `conc` sequences at the mean context `ISL + OSL/2`, seconds.
    pub decode_step_s: f64,
    /// Prefill of all `conc` prompts in one step, seconds.
    pub prefill_s: f64,
    /// Tokens/s a user sees: `1 / decode_step_s` (InferenceX interactivity).
    pub interactivity_tok_s_user: f64,
    /// Output tokens/s per GPU: `conc · OSL / (prefill_s + OSL · decode_step_s) / tp`.
    pub output_tok_s_per_gpu: f64,
    /// Input + output tokens/s per GPU (InferenceX `tput_per_gpu`).
    pub total_tok_s_per_gpu: f64,
    /// Time to first token of a lone request: one step prefilling `ISL` tokens, seconds.
    pub ttft_s: f64,
}

/// The roofline bound of a point: with [`RooflineParams::speed_of_light`] it is the hardware's
/// best case (the "speed of light" a measured point can be compared with); with the
/// simulator's defaults it is what the simulator approaches without queueing. `conc` and `tp`
/// of 0 count as 1.
#[allow(clippy::too_many_arguments)]
pub fn point_bound(
    hw: &Hardware,
    model: &Model,
    precision: Precision,
    tp: u32,
    conc: u32,
    isl: u32,
    osl: u32,
    params: &RooflineParams,
) -> PointBound {
    let c = conc.max(1) as usize;
    let decode = vec![
        SeqWork {
            new_tokens: 1,
            context_tokens: isl + osl / 2,
        };
        c
    ];
    let prefill = vec![
        SeqWork {
            new_tokens: isl.max(1),
            context_tokens: 0,
        };
        c
    ];
    let one = [SeqWork {
        new_tokens: isl.max(1),
        context_tokens: 0,
    }];
    let d = step_time(hw, model, precision, tp, &decode, params).total_s;
    let p = step_time(hw, model, precision, tp, &prefill, params).total_s;
    let ttft = step_time(hw, model, precision, tp, &one, params).total_s;
    let round = p + f64::from(osl) * d;
    let gpus = f64::from(tp.max(1));
    PointBound {
        decode_step_s: d,
        prefill_s: p,
        interactivity_tok_s_user: 1.0 / d,
        output_tok_s_per_gpu: c as f64 * f64::from(osl) / round / gpus,
        total_tok_s_per_gpu: c as f64 * f64::from(isl + osl) / round / gpus,
        ttft_s: ttft,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::Catalogue;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
    }

    /// Llama-3.3-70B FP8 on 4×H200, 64 decodes at 1,000 context tokens each, default params.
    /// By hand: W = 70.55e9 B; K = 163,840 × 64 × 1,001 = 10,496,573,440 B;
    /// memory = 81,046,573,440 / (4 × 4.8e12 × 0.8) = 5.27644829e-3 s;
    /// F = 2 × 70.55e9 × 64 + 2,621,440 × 64 × 1,001 = 9.198e12 + 1.6794e11... compute is
    /// ≈ 1.0e-3 s, so memory bound; all-reduce = 160 × (1e-5 + 1.5 × 64 × 8192 × 2 / 450e9)
    /// = 160 × (1e-5 + 3.49525333e-6) = 2.15924053e-3 s; total = 5.27644829e-3 + 2.15924053e-3
    /// + 1e-3 = 8.43568882e-3 s.
    #[test]
    fn llama70b_fp8_h200_tp4_decode_matches_hand_computation() {
        let c = Catalogue::embedded();
        let hw = c.hardware("H200").unwrap();
        let m = c.model("Llama-3.3-70B").unwrap();
        let batch = vec![
            SeqWork {
                new_tokens: 1,
                context_tokens: 1000
            };
            64
        ];
        let st = step_time(hw, m, Precision::Fp8, 4, &batch, &RooflineParams::default());
        let bytes = 70.55e9 + 163_840.0 * 64.0 * 1001.0;
        assert!(close(st.bytes, bytes));
        let memory = bytes / (4.0 * 4.8e12 * 0.8);
        assert!(close(st.memory_s, memory));
        let flops = 2.0 * 70.55e9 * 64.0 + 2_621_440.0 * 64.0 * (1000.0 + 1.0);
        assert!(close(st.flops, flops));
        assert!(close(st.compute_s, flops / (4.0 * 1979e12 * 0.6)));
        let ar = 160.0 * (1e-5 + 1.5 * 64.0 * 8192.0 * 2.0 / 450e9);
        assert!(close(st.allreduce_s, ar));
        assert!(close(st.total_s, memory + ar + 1e-3));
        assert!(
            (st.total_s - 8.435_688_82e-3).abs() < 1e-11,
            "{}",
            st.total_s
        );
    }

    /// DeepSeek-R1 FP4 on 8×B200, one 8,192-token prefill chunk, speed of light.
    /// Every expert is touched (1 − (1 − 8/256)^8192 = 1 − 1e-113 ≈ 1), so W = 671e9 × 0.5 B;
    /// F = 2 × 37e9 × 8192 + 16,990,208 × 8192 × 8193 / 2; compute-bound.
    #[test]
    fn deepseek_r1_fp4_b200_tp8_prefill_matches_hand_computation() {
        let c = Catalogue::embedded();
        let hw = c.hardware("B200").unwrap();
        let m = c.model("DeepSeek-R1").unwrap();
        let batch = [SeqWork {
            new_tokens: 8192,
            context_tokens: 0,
        }];
        let sol = RooflineParams::speed_of_light();
        let st = step_time(hw, m, Precision::Fp4, 8, &batch, &sol);
        let bytes = 671e9 * 0.5 + 35_136.0 * 8192.0;
        assert!(close(st.bytes, bytes), "{} vs {bytes}", st.bytes);
        let flops = 2.0 * 37e9 * 8192.0 + 16_990_208.0 * 8192.0 * 8193.0 / 2.0;
        assert!(close(st.flops, flops));
        let compute = flops / (8.0 * 9000e12);
        assert!(close(st.compute_s, compute));
        assert!(st.compute_s > st.memory_s);
        let ar = 122.0 * (1.75 * 8192.0 * 7168.0 * 2.0 / 900e9);
        assert!(close(st.total_s, compute + ar));
        // compute = (6.06208e14 + 5.70173e14) / 7.2e16 s
        assert!(
            (st.compute_s - 0.016_338_533).abs() < 1e-9,
            "{}",
            st.compute_s
        );
    }

    #[test]
    fn point_bound_composes_step_times() {
        let c = Catalogue::embedded();
        let hw = c.hardware("H200").unwrap();
        let m = c.model("Llama-3.3-70B").unwrap();
        // ISL 999, OSL 2: mean context 1000, the decode step of the test above.
        let b = point_bound(
            hw,
            m,
            Precision::Fp8,
            4,
            64,
            999,
            2,
            &RooflineParams::default(),
        );
        assert!((b.decode_step_s - 8.435_688_82e-3).abs() < 1e-11);
        let p = step_time(
            hw,
            m,
            Precision::Fp8,
            4,
            &[SeqWork {
                new_tokens: 999,
                context_tokens: 0,
            }; 64],
            &RooflineParams::default(),
        )
        .total_s;
        assert_eq!(b.prefill_s, p);
        let round = p + 2.0 * b.decode_step_s;
        assert!(close(b.output_tok_s_per_gpu, 64.0 * 2.0 / round / 4.0));
        assert!(close(b.total_tok_s_per_gpu, 64.0 * 1001.0 / round / 4.0));
        assert!(close(b.interactivity_tok_s_user, 1.0 / 8.435_688_82e-3));
        assert!(b.ttft_s < b.prefill_s);
    }

    #[test]
    fn empty_batch_costs_overhead_only() {
        let c = Catalogue::embedded();
        let st = step_time(
            c.hardware("H100").unwrap(),
            c.model("Llama-3.1-8B").unwrap(),
            Precision::Bf16,
            1,
            &[],
            &RooflineParams::default(),
        );
        assert_eq!(st.total_s, 1e-3);
    }
}
