//! Synthetic AgentX traces (reference/agentx.md §1.4, §1.7): sessions shaped like SemiAnalysis'
//! corpus, for `quickstart --agentic`, tests and the load/replay benchmarks, written in the
//! corpus's own JSONL layout ([`write_jsonl`], readable by [`super::load_traces`] and by
//! agentx-harness).
//!
//! Model of one session: the main agent's first prompt is a large system/tool prefix plus a
//! task (`first_isl`); every later turn re-sends the whole context plus the previous answer
//! (`out`, drawn log-normally around `osl_median`) and a tool result (`step_median` tokens) as
//! new 64-token blocks, so consecutive hash lists share their prefix (theoretical hit ≈ 97 % on
//! the full shape). Past a per-session limit drawn in `compact_at` the context is compacted to
//! its first blocks plus a summary (a hash list that drops blocks). After a main turn a
//! sub-agent starts with probability `subagent_rate`: a child stream that shares the parent's
//! system blocks, runs `subagent_requests` sequential requests of its own growing context and
//! is joined by the parent's next turn. Think times are log-normal (bursty); `api_time` grows
//! with the output length.

use std::io::Write;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, LogNormal};
use serde_json::{json, Value};

use super::trace::{HashIdScope, Stream, StreamKind, Trace, TraceRequest};

/// Tokens per hash block.
const B: u32 = 64;

/// The shape of a synthetic corpus. Lengths in tokens, times in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct SyntheticSpec {
    /// Sessions.
    pub traces: usize,
    /// Mean main-agent turns per session (log-normal, σ 0.6).
    pub mean_turns: f64,
    /// Median first prompt (system + tools + task), tokens.
    pub first_isl: u32,
    /// Of the first prompt, the shared system/tool prefix, tokens.
    pub system_tokens: u32,
    /// Median new tool-result tokens per turn (log-normal, σ 1.2).
    pub step_median: u32,
    /// Median output tokens (log-normal, σ 1.3; capped at 16,384).
    pub osl_median: u32,
    /// Context limits at which a session compacts: uniform in this range, tokens.
    pub compact_at: (u32, u32),
    /// Median summary a compaction leaves after the system prefix, tokens (log-normal, σ 0.5).
    pub compact_summary: u32,
    /// Probability that a main turn spawns a sub-agent.
    pub subagent_rate: f64,
    /// Mean requests per sub-agent (uniform in 1..=2·mean−1).
    pub subagent_requests: u32,
    /// Median task prompt of a sub-agent after the shared system prefix, tokens (σ 0.5).
    pub subagent_task: u32,
    /// Median think time between a response and the next request, s (log-normal, σ 1.0).
    pub think_median_s: f64,
    /// Recorded API time per output token, s (plus 0.5 s + 10 µs per input token).
    pub s_per_output_token: f64,
    /// Seed: the same spec gives the same traces.
    pub seed: u64,
}

impl SyntheticSpec {
    /// The built-in set of `quickstart --agentic`: 6 short sessions (a few thousand tokens,
    /// sub-agents, compaction) with sub-second gaps, so a point takes seconds on the sim.
    pub fn quickstart() -> SyntheticSpec {
        SyntheticSpec {
            traces: 6,
            mean_turns: 8.0,
            first_isl: 1_500,
            system_tokens: 1_024,
            step_median: 150,
            osl_median: 32,
            compact_at: (5_000, 6_000),
            compact_summary: 500,
            subagent_rate: 0.25,
            subagent_requests: 3,
            subagent_task: 400,
            think_median_s: 0.2,
            s_per_output_token: 0.002,
            seed: 42,
        }
    }

    /// 3 tiny sessions (sub-agents, a compaction, 4-token outputs, 50 ms gaps) that fit a small
    /// model's 1,024–2,048-token context: the llama.cpp (SmolLM2) replay and sweep tests.
    pub fn small_context() -> SyntheticSpec {
        SyntheticSpec {
            traces: 3,
            mean_turns: 5.0,
            first_isl: 320,
            system_tokens: 192,
            step_median: 40,
            osl_median: 4,
            compact_at: (600, 700),
            compact_summary: 64,
            subagent_rate: 0.3,
            subagent_requests: 2,
            subagent_task: 48,
            think_median_s: 0.05,
            s_per_output_token: 0.001,
            seed: 7,
        }
    }

    /// Shaped like `cc-traces-weka-062126` (§1.1, §1.7): 393 sessions, ≈ 99k requests, ISL
    /// p50 ≈ 95k, OSL p50 ≈ 333, theoretical hit ≈ 97 %. [`super::filter_isl_cap`] at 256,000
    /// gives the `_256k` variant.
    pub fn corpus_062126() -> SyntheticSpec {
        SyntheticSpec {
            traces: 393,
            mean_turns: 120.0,
            first_isl: 30_000,
            system_tokens: 16_000,
            step_median: 1_000,
            osl_median: 333,
            compact_at: (250_000, 700_000),
            compact_summary: 8_000,
            subagent_rate: 0.07,
            subagent_requests: 10,
            subagent_task: 1_500,
            think_median_s: 3.0,
            s_per_output_token: 0.02,
            seed: 42,
        }
    }
}

/// One growing context: its hash ids (whole blocks) and token count.
struct Context {
    ids: Vec<u32>,
    tokens: u32,
}

impl Context {
    fn grow(&mut self, tokens: u32, next_id: &mut u32) {
        self.tokens += tokens;
        let want = self.tokens.div_ceil(B) as usize;
        while self.ids.len() < want {
            self.ids.push(*next_id);
            *next_id += 1;
        }
    }
}

fn lognormal(rng: &mut StdRng, median: f64, sigma: f64) -> f64 {
    LogNormal::new(median.max(1e-9).ln(), sigma)
        .map(|d| d.sample(rng))
        .unwrap_or(median)
}

/// Generates the corpus of `spec` (deterministic in `spec.seed`).
pub fn generate(spec: &SyntheticSpec) -> Vec<Trace> {
    let mut rng = StdRng::seed_from_u64(spec.seed);
    (0..spec.traces)
        .map(|i| session(spec, &mut rng, i))
        .collect()
}

fn session(spec: &SyntheticSpec, rng: &mut StdRng, index: usize) -> Trace {
    let id = format!("synthetic-{:016x}-{index:04}", spec.seed);
    let mut next_id = 0u32;
    let mut ctx = Context {
        ids: Vec::new(),
        tokens: 0,
    };
    let first = (lognormal(rng, f64::from(spec.first_isl), 0.3) as u32).max(spec.system_tokens + B);
    ctx.grow(first, &mut next_id);
    let system_blocks = (spec.system_tokens / B) as usize;
    let turns = (lognormal(rng, spec.mean_turns, 0.6).round() as usize).max(2);
    let compact_limit =
        rng.random_range(spec.compact_at.0..=spec.compact_at.1.max(spec.compact_at.0));
    let mut root = Vec::with_capacity(turns);
    let mut subs: Vec<Stream> = Vec::new();
    let mut t = 0.0f64;
    let osl = |rng: &mut StdRng| {
        (lognormal(rng, f64::from(spec.osl_median), 1.3) as u32).clamp(1, 16_384)
    };
    let api = |out: u32, input: u32| {
        0.5 + f64::from(out) * spec.s_per_output_token + f64::from(input) * 1e-5
    };
    for k in 0..turns {
        let out = osl(rng);
        let input = ctx.tokens;
        let api_time = api(out, input);
        root.push(TraceRequest {
            t_s: round_ms(t),
            input_tokens: input,
            output_tokens: out,
            hash_ids: ctx.ids.clone(),
            api_time_s: round_ms(api_time),
            model: "claude-sonnet".into(),
        });
        let mut end = t + api_time;
        // A sub-agent after this turn (not after the last), joined by the next turn.
        if k + 1 < turns && rng.random_bool(spec.subagent_rate.clamp(0.0, 1.0)) {
            let n = rng.random_range(1..=(2 * spec.subagent_requests).max(2) - 1);
            let mut sub = Context {
                ids: ctx.ids[..system_blocks.min(ctx.ids.len())].to_vec(),
                tokens: (system_blocks as u32) * B,
            };
            sub.grow(
                lognormal(rng, f64::from(spec.subagent_task), 0.5) as u32,
                &mut next_id,
            );
            let mut st = end + 0.5;
            let mut reqs = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let out = osl(rng);
                let a = api(out, sub.tokens);
                reqs.push(TraceRequest {
                    t_s: round_ms(st),
                    input_tokens: sub.tokens,
                    output_tokens: out,
                    hash_ids: sub.ids.clone(),
                    api_time_s: round_ms(a),
                    model: "claude-haiku".into(),
                });
                st += a + lognormal(rng, spec.think_median_s / 3.0, 0.8);
                sub.grow(
                    out + lognormal(rng, f64::from(spec.step_median), 1.0) as u32,
                    &mut next_id,
                );
            }
            let last = reqs.last().map_or(end, |r| r.t_s + r.api_time_s);
            end = end.max(last);
            subs.push(Stream {
                id: format!("{id}::sa:explore_{:03}", subs.len() + 1),
                kind: StreamKind::Subagent,
                label: "Explore".into(),
                parent: Some(id.clone()),
                requests: reqs,
            });
        }
        t = end + lognormal(rng, spec.think_median_s, 1.0);
        // Next context: the answer and a tool result as new blocks; compaction past the limit.
        let step = lognormal(rng, f64::from(spec.step_median), 1.2) as u32;
        if ctx.tokens + out + step > compact_limit {
            let keep = system_blocks.min(ctx.ids.len());
            ctx.ids.truncate(keep);
            ctx.tokens = keep as u32 * B;
            ctx.grow(
                lognormal(rng, f64::from(spec.compact_summary), 0.5) as u32,
                &mut next_id,
            );
        } else {
            // Whole blocks only for the old context: a partial last block is re-hashed.
            if !ctx.tokens.is_multiple_of(B) {
                ctx.ids.pop();
                ctx.tokens -= ctx.tokens % B;
                ctx.grow(0, &mut next_id);
            }
            ctx.grow(out + step, &mut next_id);
        }
    }
    let mut streams = vec![Stream {
        id: id.clone(),
        kind: StreamKind::Root,
        label: String::new(),
        parent: None,
        requests: root,
    }];
    streams.extend(subs);
    Trace {
        id,
        block_size: B,
        system_prefix_tokens: 0,
        hash_id_scope: HashIdScope::Local,
        streams,
        origin: format!("synthetic:{index}"),
    }
}

fn round_ms(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}

fn request_json(r: &TraceRequest, streaming: bool) -> Value {
    json!({
        "t": r.t_s,
        "type": if streaming { "s" } else { "n" },
        "model": r.model,
        "in": r.input_tokens,
        "out": r.output_tokens,
        "hash_ids": r.hash_ids,
        "api_time": r.api_time_s,
    })
}

/// One trace as the corpus's JSON object (§1.4): main-agent requests and sub-agent entries
/// interleaved by start time.
pub fn trace_json(trace: &Trace) -> Value {
    let mut entries: Vec<(f64, Value)> = Vec::new();
    for s in &trace.streams {
        match s.kind {
            StreamKind::Root => {
                for r in &s.requests {
                    entries.push((r.t_s, request_json(r, true)));
                }
            }
            StreamKind::Subagent => {
                let Some(first) = s.requests.first() else {
                    continue;
                };
                let end = s
                    .requests
                    .iter()
                    .map(|r| r.t_s + r.api_time_s)
                    .fold(first.t_s, f64::max);
                let agent_id = s.id.rsplit_once("::sa:").map_or(s.id.as_str(), |(_, a)| a);
                let mut models: Vec<&str> = s.requests.iter().map(|r| r.model.as_str()).collect();
                models.sort_unstable();
                models.dedup();
                entries.push((
                    first.t_s,
                    json!({
                        "type": "subagent",
                        "t": first.t_s,
                        "agent_id": agent_id,
                        "subagent_type": s.label,
                        "duration_ms": ((end - first.t_s) * 1000.0).round(),
                        "total_tokens": s.requests.iter().map(|r| u64::from(r.input_tokens) + u64::from(r.output_tokens)).sum::<u64>(),
                        "tool_use_count": null,
                        "status": "completed",
                        "models": models,
                        "requests": s.requests.iter().map(|r| request_json(r, false)).collect::<Vec<_>>(),
                    }),
                ));
            }
        }
    }
    entries.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut models: Vec<&str> = trace
        .streams
        .iter()
        .flat_map(|s| s.requests.iter().map(|r| r.model.as_str()))
        .collect();
    models.sort_unstable();
    models.dedup();
    json!({
        "id": trace.id,
        "models": models,
        "block_size": trace.block_size,
        "hash_id_scope": match trace.hash_id_scope { HashIdScope::Local => "local", HashIdScope::Global => "global" },
        "requests": entries.into_iter().map(|(_, v)| v).collect::<Vec<_>>(),
    })
}

/// Writes `traces` as JSONL, one trace object per line (the corpus's `traces.jsonl`).
///
/// # Errors
/// The writer's I/O errors.
pub fn write_jsonl(traces: &[Trace], mut w: impl Write) -> std::io::Result<()> {
    for t in traces {
        serde_json::to_writer(&mut w, &trace_json(t))?;
        w.write_all(b"\n")?;
    }
    w.flush()
}

/// Built-in corpus shapes (`agentx-traces --shape`, `replay --synthetic`): `quickstart` (6
/// short sessions), `062126` (≈ 393 sessions, 99k requests, shaped like SemiAnalysis' corpus)
/// and `062126-256k` (the same without requests above 256,000 tokens in + out).
pub const SHAPES: [&str; 3] = ["quickstart", "062126", "062126-256k"];

/// The synthetic traces of `shape` (one of [`SHAPES`]; another name reads as `062126`) drawn
/// with `seed`; `traces` overrides the shape's session count.
pub fn shaped(shape: &str, traces: Option<usize>, seed: u64) -> Vec<Trace> {
    let mut all = Vec::new();
    shaped_each(shape, traces, seed, &mut |t| {
        all.push(t);
        true
    });
    all
}

/// [`shaped`], one session at a time: each session (after the `_256k` cut) is handed to
/// `each`, which keeps it or not and returns whether to go on (it stops the generation when a
/// memory budget is spent or enough sessions are kept). Memory holds one session besides what
/// `each` keeps (issue 39 §2: the whole corpus, and a filtered copy of it, were built before
/// any budget was checked). Returns `false` when `each` stopped it.
pub fn shaped_each(
    shape: &str,
    traces: Option<usize>,
    seed: u64,
    each: &mut dyn FnMut(Trace) -> bool,
) -> bool {
    let mut spec = match shape {
        "quickstart" => SyntheticSpec::quickstart(),
        _ => SyntheticSpec::corpus_062126(),
    };
    spec.seed = seed;
    if let Some(n) = traces {
        spec.traces = n;
    }
    let mut rng = StdRng::seed_from_u64(spec.seed);
    for i in 0..spec.traces {
        let t = session(&spec, &mut rng, i);
        let t = if shape.ends_with("256k") {
            // The `_256k` rule: requests with in + out > 256,000 dropped (reference/agentx.md
            // §1.6).
            match super::filter_isl_cap(&t, 256_000) {
                Some(t) => t,
                None => continue,
            }
        } else {
            t
        };
        if !each(t) {
            return false;
        }
    }
    true
}

/// A writer that only counts the bytes written to it.
struct ByteCount(u64);

impl Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The bytes [`write_jsonl`] writes for `traces`, from a pass that only counts them.
///
/// # Errors
/// Serialising a trace failed.
pub fn jsonl_len(traces: &[Trace]) -> std::io::Result<u64> {
    let mut counter = ByteCount(0);
    write_jsonl(traces, &mut counter)?;
    Ok(counter.0)
}

/// Bytes for a person: `512 B`, `37 kB`, `488 MB`, `1.2 GB` (SI units).
pub fn human_size(bytes: u64) -> String {
    let b = bytes as f64;
    if b < 1e3 {
        format!("{bytes} B")
    } else if b < 1e6 {
        format!("{:.0} kB", b / 1e3)
    } else if b < 1e9 {
        format!("{:.0} MB", b / 1e6)
    } else {
        format!("{:.1} GB", b / 1e9)
    }
}

/// A corpus in one line: `N sessions, M requests, ISL p50 … / p99 … tokens, OSL p50 … tokens,
/// theoretical hit … %` (the hit rate of [`super::theoretical_hits`] over every request).
pub fn describe(traces: &[Trace]) -> String {
    let reqs: Vec<&TraceRequest> = traces
        .iter()
        .flat_map(|t| &t.streams)
        .flat_map(|s| &s.requests)
        .collect();
    let mut isl: Vec<f64> = reqs.iter().map(|r| f64::from(r.input_tokens)).collect();
    let mut osl: Vec<f64> = reqs.iter().map(|r| f64::from(r.output_tokens)).collect();
    isl.sort_by(f64::total_cmp);
    osl.sort_by(f64::total_cmp);
    let q = |v: &[f64], p: f64| inferbench_core::metrics::percentile_sorted(v, p).unwrap_or(0.0);
    let (mut hit, mut total) = (0u64, 0u64);
    for t in traces {
        for s in super::theoretical_hits(t) {
            for (h, n) in s {
                hit += u64::from(h);
                total += u64::from(n);
            }
        }
    }
    format!(
        "{} sessions, {} requests, ISL p50 {:.0} / p99 {:.0} tokens, OSL p50 {:.0} tokens, \
         theoretical hit {:.1} %",
        traces.len(),
        reqs.len(),
        q(&isl, 50.0),
        q(&isl, 99.0),
        q(&osl, 50.0),
        if total > 0 {
            hit as f64 * 100.0 / total as f64
        } else {
            0.0
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agentx::{load_traces, theoretical_hits, LoadOptions};

    /// The named shapes: quickstart's six sessions, the 256k cut dropping nothing it must keep,
    /// sizes for a person, and a description that counts what was generated.
    #[test]
    fn shapes_sizes_and_description() {
        let q = shaped("quickstart", None, 42);
        assert_eq!(q.len(), 6);
        assert_eq!(shaped("quickstart", Some(2), 42).len(), 2);
        let requests: usize = q.iter().map(Trace::request_count).sum();
        let d = describe(&q);
        assert!(
            d.starts_with(&format!("6 sessions, {requests} requests, ISL p50 ")),
            "{d}"
        );
        let mut buf = Vec::new();
        write_jsonl(&q, &mut buf).unwrap();
        assert_eq!(jsonl_len(&q).unwrap(), buf.len() as u64);
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(37_400), "37 kB");
        assert_eq!(human_size(488_000_000), "488 MB");
        assert_eq!(human_size(1_234_000_000), "1.2 GB");
    }

    #[test]
    fn deterministic_and_loadable() {
        let spec = SyntheticSpec::quickstart();
        let a = generate(&spec);
        assert_eq!(a, generate(&spec));
        assert_eq!(a.len(), 6);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("traces.jsonl");
        write_jsonl(&a, std::fs::File::create(&path).unwrap()).unwrap();
        let loaded = load_traces(&path, &LoadOptions::default()).unwrap();
        assert_eq!(loaded.traces.len(), 6);
        for (x, y) in a.iter().zip(&loaded.traces) {
            assert_eq!(x.id, y.id);
            assert_eq!(x.streams.len(), y.streams.len());
            for (s, t) in x.streams.iter().zip(&y.streams) {
                assert_eq!(s.id, t.id);
                assert_eq!(s.requests, t.requests);
            }
        }
        // Sub-agents and a compaction are in the set.
        assert!(a.iter().any(|t| t.streams.len() > 1));
        let compacted = a.iter().any(|t| {
            t.streams[0]
                .requests
                .windows(2)
                .any(|w| w[1].hash_ids.len() < w[0].hash_ids.len())
        });
        assert!(compacted, "a hash list that drops blocks");
    }

    #[test]
    fn full_shape_hits_like_the_corpus() {
        // A tenth of the 062126 shape: theoretical hit in the corpus's 95–99 % band.
        let spec = SyntheticSpec {
            traces: 12,
            ..SyntheticSpec::corpus_062126()
        };
        let traces = generate(&spec);
        let (mut hit, mut total) = (0u64, 0u64);
        for t in &traces {
            for s in theoretical_hits(t) {
                for (h, n) in s {
                    hit += u64::from(h);
                    total += u64::from(n);
                }
            }
        }
        let rate = hit as f64 / total as f64;
        assert!((0.95..=0.99).contains(&rate), "theoretical hit {rate}");
    }
}
