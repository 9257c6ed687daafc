//! The savings benchmark of issue 43, in modelled time (deterministic, no server): for five
//! master-config rows of different shapes and the issue's own sim config, the full listed set
//! against `sweep --adaptive`'s plan, each point priced by the sim's roofline model
//! (`adaptive::sim_model_point`: 10 × conc prompts per listed point; an adaptive point ends at
//! its early-stop rule's floor, max(3 × conc, 30) prompts, never above the list's 10 × conc,
//! since a noiseless model's metrics are known at the first check), and the frontier compared
//! by the issue's measure (`adaptive::frontier_match`). The plan is the local executor's order
//! (`adaptive::LocalOrder`). Since 2026-12-07 the table also prices the plan's points at the
//! full protocol (no early stop): on the sim at `--time-scale 1`, with every point valid, a
//! closed loop's point never stopped early at 2 % (docs/performance.md), so that column is
//! what the planner alone saves. `scripts/adaptive-savings.sh` prints the table
//! (`-- --nocapture`); docs/performance.md records it. Since 2026-12-07 (evening) the issue's
//! config is also run end to end on the sim's own engine as closed loops
//! (`the_issue_config_on_the_sims_closed_loop`: queueing, first round and drain, the
//! early-stop rule itself instead of its floor).

use std::collections::BTreeMap;

use inferbench_loadgen::early_stop::EarlyStopNoise;
use inferbench_runner::adaptive::{
    frontier_match, full_list_gpu_seconds, sim_model_point, Curve, LocalOrder, ModelPoint,
    PointCost, DEFAULT_TOLERANCE, MATCH_TOLERANCE,
};

/// One benchmarked row: its name (the master config's key and where it comes from), the sim
/// catalogue's hardware, model and precision, ISL/OSL, and its curves (TP, listed concs).
struct Shape {
    name: &'static str,
    hardware: &'static str,
    model: &'static str,
    precision: &'static str,
    isl: u32,
    osl: u32,
    curves: Vec<(u32, Vec<u32>)>,
}

/// Doubling concurrencies `lo..=hi`, as the matrix expands `conc-start`/`conc-end`.
fn doubling(lo: u32, hi: u32) -> Vec<u32> {
    std::iter::successors(Some(lo), |c| Some(c * 2))
        .take_while(|c| *c <= hi)
        .collect()
}

fn shapes() -> Vec<Shape> {
    vec![
        Shape {
            name: "issue 43's sim config (Llama-3.1-8B H100 bf16, 1k/256, TP 1 + TP 2, conc 1..256)",
            hardware: "H100",
            model: "Llama-3.1-8B",
            precision: "bf16",
            isl: 1024,
            osl: 256,
            curves: vec![(1, doubling(1, 256)), (2, doubling(1, 256))],
        },
        Shape {
            name: "gptoss-fp4-h100-vllm (nvidia-gptoss-master, 1k1k, TP 2/4/8, conc 4..64): multi-TP group",
            hardware: "H100",
            model: "gpt-oss-120b",
            precision: "fp4",
            isl: 1024,
            osl: 1024,
            curves: vec![
                (2, doubling(4, 64)),
                (4, doubling(4, 64)),
                (8, doubling(4, 64)),
            ],
        },
        Shape {
            name: "dsr1-fp8-h200-trt-mtp (nvidia-1k1k-master, 1k1k, TP 8, conc 4..64 + 128..256): MoE 1k1k",
            hardware: "H200",
            model: "DeepSeek-R1",
            precision: "fp8",
            isl: 1024,
            osl: 1024,
            curves: vec![(8, [doubling(4, 64), doubling(128, 256)].concat())],
        },
        Shape {
            name: "qwen3.5-fp8-h200-sglang (nvidia-master, 8k1k, TP 8, conc 4..64): MoE 8k1k",
            hardware: "H200",
            model: "Qwen3.5-397B-A17B",
            precision: "fp8",
            isl: 8192,
            osl: 1024,
            curves: vec![(8, doubling(4, 64))],
        },
        Shape {
            name: "dsr1-fp8-h200-sglang's search space at 1k8k (TP 8, conc 4..64; 1k8k is retired from the master configs)",
            hardware: "H200",
            model: "DeepSeek-R1",
            precision: "fp8",
            isl: 1024,
            osl: 8192,
            curves: vec![(8, doubling(4, 64))],
        },
        Shape {
            name: "qwen3.5-fp8-h100-sglang-agentic's conc lists (TP 8, 1..16 and 12..42), as fixed 16k/512 requests: agentic row",
            hardware: "H100",
            model: "Qwen3.5-397B-A17B",
            precision: "fp8",
            isl: 16384,
            osl: 512,
            curves: vec![(
                8,
                vec![1, 2, 4, 8, 12, 14, 16, 20, 24, 28, 32, 42],
            )],
        },
    ]
}

/// An adaptive point's share of a listed point's prompts: max(3 × conc, 30), at most 10 × conc.
fn early_share(conc: u32) -> f64 {
    let c = f64::from(conc);
    ((3.0 * c).max(30.0) / (10.0 * c)).min(1.0)
}

/// (listed GPU-s, adaptive GPU-s at the early-stop floor, adaptive GPU-s at the full
/// protocol, listed points, adaptive points, measure) of one shape.
fn bench(
    s: &Shape,
) -> (
    f64,
    f64,
    f64,
    usize,
    usize,
    inferbench_runner::adaptive::FrontierMatch,
) {
    let point = |i: usize, c: u32| -> ModelPoint {
        sim_model_point(
            s.hardware,
            s.model,
            s.precision,
            s.curves[i].0,
            c,
            s.isl,
            s.osl,
        )
        .expect("catalogue names")
    };
    let mut full = Vec::new();
    let mut full_gs = 0.0;
    let mut listed = 0;
    for (i, (_, concs)) in s.curves.iter().enumerate() {
        for &c in concs {
            let p = point(i, c);
            full.push((p.x, p.y));
            full_gs += p.gpu_seconds;
            listed += 1;
        }
    }
    let mut planned: Vec<Curve> = s.curves.iter().map(|(_, l)| Curve::listed(l)).collect();
    let groups = vec![0; planned.len()];
    let mut local = LocalOrder::default();
    let mut order = Vec::new();
    while let Some((i, c)) = local.next(&planned, &groups, DEFAULT_TOLERANCE) {
        let p = point(i, c);
        planned[i].points.insert(c, Some((p.x, p.y)));
        order.push((i, c));
    }
    let found: Vec<(f64, f64)> = planned
        .iter()
        .flat_map(|c| c.points.values().flatten().copied())
        .collect();
    let spent: f64 = order
        .iter()
        .map(|&(i, c)| point(i, c).gpu_seconds * early_share(c))
        .sum();
    let spent_full: f64 = order.iter().map(|&(i, c)| point(i, c).gpu_seconds).sum();
    let m = frontier_match(&full, &found, MATCH_TOLERANCE).expect("a frontier");
    (full_gs, spent, spent_full, listed, order.len(), m)
}

/// Every shape: the measure passes (within 3 % over ≥ 90 % of the interactivity range), no
/// more points than listed, and at most half the listed GPU-seconds when the adaptive points
/// stop at the early-stop floor; the table is printed, with what the plan's points cost at the
/// full protocol (the planner's own saving).
#[test]
fn adaptive_savings_on_five_master_config_shapes() {
    println!(
        "| row | listed points | listed GPU-s | adaptive points | adaptive GPU-s (early-stop floor) | saved | adaptive GPU-s (full protocol) | saved | within 3 % | worst gap |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for s in shapes() {
        let (full, spent, spent_full, listed, measured, m) = bench(&s);
        println!(
            "| {} | {listed} | {full:.1} | {measured} | {spent:.1} | {:.0} % | {spent_full:.1} | {:.0} % | {:.1} % | {:.2} % |",
            s.name,
            (100.0 * (1.0 - spent / full)).round() + 0.0,
            (100.0 * (1.0 - spent_full / full)).round() + 0.0,
            100.0 * m.within_fraction,
            100.0 * m.worst_gap
        );
        assert!(m.passes(), "{}: {m:?}", s.name);
        assert!(measured <= listed, "{}", s.name);
        assert!(spent <= 0.5 * full, "{}: {spent} of {full}", s.name);
    }
}

/// One point of the issue's config on the sim's own engine as a closed loop in modelled time
/// (`inferbench_sim::closed_loop`: queueing, chunked prefill, the first round and the drain;
/// no noise): (median interactivity, total tok/s per GPU, GPU-seconds = busy × TP) of the full
/// protocol (`rule` `None`) or of the point the early-stop rule ends, its noise pooled with the
/// sweep's finished points' in `pool` (issue 43, as the local executor's runner pools them),
/// to which this point's own noise is added (at its last check before the drain: its stop when
/// it stopped early).
fn closed_loop_point(
    tp: u32,
    conc: u32,
    rule: Option<f64>,
    pool: &mut Vec<EarlyStopNoise>,
) -> (f64, f64, f64) {
    use inferbench_loadgen::early_stop::{Assessment, EarlyStop, Sample};
    let cfg = inferbench_sim::SimConfig {
        tp,
        max_model_len: Some(2048),
        ..Default::default()
    };
    let sample = |r: &inferbench_sim::closed_loop::LoopRequest| Sample {
        id: r.index,
        end_ns: (r.end_s * 1e9).round() as u64,
        tpot_ms: (r.end_s - r.first_token_s) / f64::from(r.output_tokens - 1) * 1e3,
        tokens: f64::from(r.prompt_tokens + r.output_tokens),
        e2el_ms: (r.end_s - r.sent_s) * 1e3,
    };
    let rule = rule.and_then(|t| EarlyStop::for_concurrency(t, conc).map(|r| r.with_pool(pool)));
    let mut read: Option<Assessment> = None;
    let run = inferbench_sim::closed_loop::closed_loop(
        &cfg,
        conc,
        10 * u64::from(conc),
        (1024, 256),
        |done| {
            let Some(r) = rule else { return false };
            let n = done.len() as u64;
            if !(r.due(n) && n >= 10) {
                return false;
            }
            let Some(a) = r.assess(done.iter().map(sample).collect()) else {
                return false;
            };
            if n + r.conc <= r.planned {
                read = Some(a);
            }
            a.known(r.tolerance)
        },
    )
    .expect("sim config");
    pool.extend(read.and_then(|a| a.noise(u64::from(conc))));
    let t: Vec<f64> = run.requests.iter().map(|r| sample(r).tpot_ms).collect();
    let med = inferbench_core::metrics::median(&t).expect("requests");
    let d = run.requests.iter().map(|r| r.end_s).fold(0.0, f64::max);
    let tok: f64 = run.requests.iter().map(|r| sample(r).tokens).sum();
    let tp_f = f64::from(tp);
    (1000.0 / med, tok / d / tp_f, run.busy_s * tp_f)
}

/// Issue 43's Done-when on the sim's engine in modelled time, deterministic: the issue's config
/// (TP 1 + TP 2, conc 1..256 doubling, 1k/256) as closed loops. The full list: 18 points at
/// 10 × conc, 811.3 GPU-s. `sweep --adaptive`: the local executor's plan (`LocalOrder`), each
/// point under the early-stop rule at 2 % and read as it ended (its own x and y, not the full
/// protocol's). The rule ends the high-concurrency points early (TP 1 conc 256 and TP 2 conc
/// 128 after 6 of their 10 rounds; conc 1 and 2, 10 and 20 prompts, never stop), so the plan's
/// 14 points cost 457.3 GPU-s, 56.4 % of the list's, and the frontier is within 3 % over 100 %
/// of the range (worst gap 1.2 %). (415.6 GPU-s, 51.2 %, worst gap 2.5 %, before the rule's
/// batches held at least one round each, 2026-12-07 22:00 UTC: batches of half a round are
/// correlated in a closed loop and understated the noise; the finite-population factor of the
/// same change moves nothing here, the engine has no noise.) Since 2026-12-08 each point's
/// noise is pooled with the plan's earlier points' (as the local executor's runner pools
/// them): the same 457.3 GPU-s, every point stopping at the same count — the pooled noise is
/// smaller at the early checks, but there the throughput's bias (first round and drift) binds.
/// Since the drift term reads the batch means' slope per round (it had read it 10 / batches
/// times too steep) and the bias has a relaxation term (2026-12-08): 425.0 GPU-s, 52.4 %, the
/// same 14 points, frontier within 3 % over 100 % (worst gap 1.2 %); TP 1 conc 64 and 128 and
/// TP 2 conc 16, 64 and 128 stop a round earlier. The engine's relaxation after the first
/// round is under 0.6 % (`examples/early_stop_sim.rs`), so the relaxation term moves no stop
/// here; the drift's scale does.
/// Before the planner's false-knot rule the plan skipped TP 2's conc 32, TP 1's conc 16 became
/// a knot of the drawn frontier and the measure failed (47.6 % within, worst gap 41 %). What a
/// run on the real sim adds is noise (docs/performance.md).
#[test]
fn the_issue_config_on_the_sims_closed_loop() {
    let concs = doubling(1, 256);
    let tps = [1u32, 2];
    let mut full = Vec::new();
    let mut full_gs = 0.0;
    for &tp in &tps {
        for &c in &concs {
            let (x, y, g) = closed_loop_point(tp, c, None, &mut Vec::new());
            full.push((x, y));
            full_gs += g;
        }
    }
    let mut planned: Vec<Curve> = tps.iter().map(|_| Curve::listed(&concs)).collect();
    let groups = vec![0; planned.len()];
    let mut local = LocalOrder::default();
    let mut spent = 0.0;
    let mut order = Vec::new();
    let mut pool = Vec::new();
    while let Some((i, c)) = local.next(&planned, &groups, DEFAULT_TOLERANCE) {
        let (x, y, g) = closed_loop_point(tps[i], c, Some(DEFAULT_TOLERANCE), &mut pool);
        planned[i].points.insert(c, Some((x, y)));
        spent += g;
        order.push((tps[i], c));
    }
    let found: Vec<(f64, f64)> = planned
        .iter()
        .flat_map(|c| c.points.values().flatten().copied())
        .collect();
    let m = frontier_match(&full, &found, MATCH_TOLERANCE).expect("a frontier");
    println!(
        "closed loop: full {full_gs:.1} GPU-s (18 points); adaptive {spent:.1} GPU-s ({} points: {order:?}), {:.1} % of the list; within 3 % over {:.1} %, worst gap {:.2} %",
        order.len(),
        100.0 * spent / full_gs,
        100.0 * m.within_fraction,
        100.0 * m.worst_gap
    );
    assert!(m.passes(), "{m:?}");
    assert_eq!(order.len(), 14);
    assert_eq!(
        ((full_gs * 10.0).round(), (spent * 10.0).round()),
        (8113.0, 4250.0)
    );
}

/// One full-protocol point (10 × conc prompts) of the issue's config on the sim's closed loop
/// as the full list's estimate reads it: GPU-seconds (busy × TP) and mean E2EL (s); `e2el`
/// false drops the E2EL, which leaves the estimate its fallback, the rule before 2026-12-07
/// (evening): cost linear in log conc, the nearest measured one's beyond the ends.
fn closed_loop_cost(tp: u32, conc: u32, e2el: bool) -> PointCost {
    let cfg = inferbench_sim::SimConfig {
        tp,
        max_model_len: Some(2048),
        ..Default::default()
    };
    let prompts = 10 * u64::from(conc);
    let run = inferbench_sim::closed_loop::closed_loop(&cfg, conc, prompts, (1024, 256), |_| false)
        .expect("sim config");
    let n = run.requests.len() as f64;
    let mean_e2el_s = run.requests.iter().map(|r| r.end_s - r.sent_s).sum::<f64>() / n;
    PointCost {
        gpu_seconds: run.busy_s * f64::from(tp),
        prompts: prompts as f64,
        mean_e2el_s: e2el.then_some(mean_e2el_s),
    }
}

/// Issue 43's `adaptive.full_list_gpu_seconds` on the sim's closed loop (deterministic): the
/// concurrencies the adaptive plan measures (as in `the_issue_config_on_the_sims_closed_loop`)
/// priced at the full protocol, the list estimated from them, against the full list's real
/// 811.3 GPU-s. The plan skips TP 1's 2, 4, 8 and 32, whose E2EL is affine in conc on this
/// engine (1.83, 1.87, 1.95, 2.12, 2.45, 3.12 s at conc 1..32): `full_list_gpu_seconds`
/// estimates them at 18.68, 19.52, 21.19, 31.20 GPU-s (measured 18.69, 19.54, 21.24, 31.22),
/// the list at 811.2; the older rule (cost linear in log conc) said 19.83, 21.40, 22.97,
/// 34.53 and 819.3.
#[test]
fn the_full_list_estimate_on_the_sims_closed_loop() {
    let concs = doubling(1, 256);
    let tps = [1u32, 2];
    let full: f64 = (tps.iter())
        .flat_map(|&tp| concs.iter().map(move |&c| closed_loop_cost(tp, c, true)))
        .map(|p| p.gpu_seconds)
        .sum();
    let mut planned: Vec<Curve> = tps.iter().map(|_| Curve::listed(&concs)).collect();
    let groups = vec![0; planned.len()];
    let mut local = LocalOrder::default();
    let mut pool = Vec::new();
    while let Some((i, c)) = local.next(&planned, &groups, DEFAULT_TOLERANCE) {
        let (x, y, _) = closed_loop_point(tps[i], c, Some(DEFAULT_TOLERANCE), &mut pool);
        planned[i].points.insert(c, Some((x, y)));
    }
    let estimate = |e2el: bool| -> f64 {
        (tps.iter().zip(&planned))
            .map(|(&tp, curve)| {
                let m: BTreeMap<u32, PointCost> = (curve.points.keys())
                    .map(|&c| (c, closed_loop_cost(tp, c, e2el)))
                    .collect();
                full_list_gpu_seconds(&concs, &m, |c| f64::from(10 * c))
            })
            .sum()
    };
    for (&tp, curve) in tps.iter().zip(&planned) {
        for &c in concs.iter().filter(|c| !curve.points.contains_key(c)) {
            let one = |e2el: bool| {
                let m: BTreeMap<u32, PointCost> = (curve.points.keys())
                    .map(|&k| (k, closed_loop_cost(tp, k, e2el)))
                    .collect();
                full_list_gpu_seconds(&[c], &m, |c| f64::from(10 * c))
            };
            println!(
                "TP {tp} conc {c}: measured {:.2}, estimate {:.2}, old rule {:.2}",
                closed_loop_cost(tp, c, true).gpu_seconds,
                one(true),
                one(false)
            );
        }
    }
    let (new, old) = (estimate(true), estimate(false));
    println!("closed loop: full list {full:.1} GPU-s; estimate {new:.1} (old rule {old:.1})");
    assert_eq!(
        (
            (full * 10.0).round(),
            (new * 10.0).round(),
            (old * 10.0).round()
        ),
        (8113.0, 8112.0, 8193.0)
    );
}
