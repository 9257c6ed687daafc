//! Prometheus `/metrics` in vLLM's metric names (text exposition format 0.0.4).
//!
//! Latencies are **modelled seconds** (wall seconds × `time_scale`), i.e. what the simulated
//! hardware would show. Bucket bounds follow vLLM's defaults for each histogram.

use std::fmt::Write as _;

const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
];
const ITL_BUCKETS: &[f64] = &[
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
];
const E2E_BUCKETS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
    480.0, 960.0, 1920.0, 7680.0,
];

/// The counter of [`Metrics::busy_s`]: modelled seconds of engine steps (a float counter).
pub const BUSY: &str = "inferbench_sim:busy_seconds_total";

/// A cumulative histogram.
#[derive(Debug, Clone)]
pub(crate) struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>, // per bucket (non-cumulative), last = +Inf
    sum: f64,
    count: u64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
            count: 0,
        }
    }

    /// Adds one observation (seconds).
    pub fn observe(&mut self, v: f64) {
        let i = self.bounds.partition_point(|&b| b < v);
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }

    /// Adds `n` observations of the same value.
    pub fn observe_n(&mut self, v: f64, n: u64) {
        if n == 0 {
            return;
        }
        let i = self.bounds.partition_point(|&b| b < v);
        self.counts[i] += n;
        self.sum += v * n as f64;
        self.count += n;
    }
}

/// All server metrics.
#[derive(Debug, Clone)]
pub(crate) struct Metrics {
    pub running: u64,
    pub waiting: u64,
    pub kv_usage: f64,
    pub num_blocks: u32,
    pub block_size: u32,
    pub preemptions: u64,
    pub prompt_tokens: u64,
    pub generation_tokens: u64,
    pub prefix_queries: u64,
    pub prefix_hits: u64,
    pub success_length: u64,
    pub success_stop: u64,
    pub success_abort: u64,
    pub errors: u64,
    pub spec_drafts: u64,
    pub spec_draft_tokens: u64,
    pub spec_accepted_tokens: u64,
    /// Modelled seconds the engine spent in steps (the sum of their roofline times, not
    /// divided by the time scale): the simulated GPUs' busy time, whatever this machine's
    /// load (issue 43: a sim row's GPU-seconds).
    pub busy_s: f64,
    pub ttft: Histogram,
    pub itl: Histogram,
    pub tpot: Histogram,
    pub e2e: Histogram,
    pub queue: Histogram,
}

impl Metrics {
    pub fn new(num_blocks: u32, block_size: u32) -> Self {
        Metrics {
            running: 0,
            waiting: 0,
            kv_usage: 0.0,
            num_blocks,
            block_size,
            preemptions: 0,
            prompt_tokens: 0,
            generation_tokens: 0,
            prefix_queries: 0,
            prefix_hits: 0,
            success_length: 0,
            success_stop: 0,
            success_abort: 0,
            errors: 0,
            spec_drafts: 0,
            spec_draft_tokens: 0,
            spec_accepted_tokens: 0,
            busy_s: 0.0,
            ttft: Histogram::new(TTFT_BUCKETS),
            itl: Histogram::new(ITL_BUCKETS),
            tpot: Histogram::new(ITL_BUCKETS),
            e2e: Histogram::new(E2E_BUCKETS),
            queue: Histogram::new(E2E_BUCKETS),
        }
    }

    /// Renders the exposition text; `labels` is e.g. `engine="0",model_name="m"`. `chunks`:
    /// token chunks written and those written late; `time_scale`: the sim's `--time-scale`
    /// (exposed as `inferbench_sim:time_scale`, so a client can tell its wall-clock times are
    /// that many times faster than the modelled hardware's).
    pub fn render(&self, model_name: &str, chunks: (u64, u64), time_scale: f64) -> String {
        let name = model_name.replace('\\', "\\\\").replace('"', "\\\"");
        let l = format!("engine=\"0\",model_name=\"{name}\"");
        let mut o = String::with_capacity(8192);
        let gauge = |o: &mut String, n: &str, help: &str, v: f64| {
            let _ = writeln!(o, "# HELP {n} {help}\n# TYPE {n} gauge\n{n}{{{l}}} {v}");
        };
        let counter = |o: &mut String, n: &str, help: &str, v: u64| {
            let _ = writeln!(
                o,
                "# HELP {n}_total {help}\n# TYPE {n}_total counter\n{n}_total{{{l}}} {v}"
            );
        };
        for (n, help, v) in [
            (
                "vllm:num_requests_running",
                "Number of requests in model execution batches.",
                self.running as f64,
            ),
            (
                "vllm:num_requests_waiting",
                "Number of requests waiting to be processed.",
                self.waiting as f64,
            ),
            (
                "vllm:kv_cache_usage_perc",
                "KV-cache usage. 1 means 100 percent usage.",
                self.kv_usage,
            ),
            (
                "vllm:gpu_cache_usage_perc",
                "GPU KV-cache usage. 1 means 100 percent usage (legacy name).",
                self.kv_usage,
            ),
            (
                "inferbench_sim:time_scale",
                "Modelled seconds per wall-clock second (--time-scale): wall-clock latencies \
                 are this many times shorter than the modelled hardware's.",
                time_scale,
            ),
        ] {
            gauge(&mut o, n, help, v);
        }
        let _ = writeln!(
            o,
            "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\nvllm:cache_config_info{{block_size=\"{}\",engine=\"0\",num_gpu_blocks=\"{}\"}} 1",
            self.block_size, self.num_blocks
        );
        for (n, help, v) in [
            (
                "vllm:num_preemptions",
                "Cumulative number of preemptions.",
                self.preemptions,
            ),
            (
                "vllm:prompt_tokens",
                "Number of prefill tokens processed (whole prompts, cached tokens included).",
                self.prompt_tokens,
            ),
            (
                "vllm:generation_tokens",
                "Number of generation tokens processed.",
                self.generation_tokens,
            ),
            (
                "vllm:prefix_cache_queries",
                "Prefix cache queries, in terms of number of queried tokens.",
                self.prefix_queries,
            ),
            (
                "vllm:prefix_cache_hits",
                "Prefix cache hits, in terms of number of cached tokens.",
                self.prefix_hits,
            ),
        ] {
            counter(&mut o, n, help, v);
        }
        let _ = writeln!(o, "# HELP vllm:request_success_total Count of successfully processed requests.\n# TYPE vllm:request_success_total counter");
        for (reason, v) in [
            ("length", self.success_length),
            ("stop", self.success_stop),
            ("abort", self.success_abort),
        ] {
            let _ = writeln!(
                o,
                "vllm:request_success_total{{{l},finished_reason=\"{reason}\"}} {v}"
            );
        }
        for (n, help, v) in [
            (
                "inferbench_sim:request_errors",
                "Requests answered with an error status (faults, validation).",
                self.errors,
            ),
            (
                "inferbench_sim:token_chunks",
                "Streamed token chunks written (timed mode).",
                chunks.0,
            ),
            (
                "inferbench_sim:late_token_chunks",
                "Token chunks written more than two steps (at least 4 ms) after their step was \
                 due: the process was starved of CPU and sent them late or in a burst.",
                chunks.1,
            ),
            (
                "vllm:spec_decode_num_drafts",
                "Number of spec decoding drafts.",
                self.spec_drafts,
            ),
            (
                "vllm:spec_decode_num_draft_tokens",
                "Number of draft tokens.",
                self.spec_draft_tokens,
            ),
            (
                "vllm:spec_decode_num_accepted_tokens",
                "Number of accepted tokens.",
                self.spec_accepted_tokens,
            ),
        ] {
            counter(&mut o, n, help, v);
        }
        let _ = writeln!(
            o,
            "# HELP {BUSY} Modelled seconds the simulated GPUs spent in engine steps (the \
             steps' roofline times, whatever the time scale and this machine's load).\n\
             # TYPE {BUSY} counter\n{BUSY}{{{l}}} {}",
            self.busy_s
        );
        self.write_histograms(&mut o, &l);
        o
    }

    /// The latency histograms of [`Self::render`] (vLLM's names, seconds, cumulative buckets
    /// with `+Inf`, `_sum` and `_count`), each series labelled `l`.
    fn write_histograms(&self, o: &mut String, l: &str) {
        for (n, help, h) in [
            (
                "vllm:time_to_first_token_seconds",
                "Histogram of time to first token in seconds.",
                &self.ttft,
            ),
            (
                "vllm:inter_token_latency_seconds",
                "Histogram of inter-token latency in seconds.",
                &self.itl,
            ),
            (
                "vllm:time_per_output_token_seconds",
                "Histogram of time per output token in seconds.",
                &self.tpot,
            ),
            (
                "vllm:e2e_request_latency_seconds",
                "Histogram of end to end request latency in seconds.",
                &self.e2e,
            ),
            (
                "vllm:request_queue_time_seconds",
                "Histogram of time spent in WAITING phase for request.",
                &self.queue,
            ),
        ] {
            let _ = writeln!(o, "# HELP {n} {help}\n# TYPE {n} histogram");
            let mut cum = 0;
            for (i, b) in h.bounds.iter().enumerate() {
                cum += h.counts[i];
                let _ = writeln!(o, "{n}_bucket{{{l},le=\"{b:?}\"}} {cum}");
            }
            cum += h.counts[h.bounds.len()];
            let _ = writeln!(o, "{n}_bucket{{{l},le=\"+Inf\"}} {cum}");
            let _ = writeln!(o, "{n}_sum{{{l}}} {}", h.sum);
            let _ = writeln!(o, "{n}_count{{{l}}} {}", h.count);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative_with_le_bounds() {
        let mut m = Metrics::new(10, 16);
        m.ttft.observe(0.001); // le 0.001 (bounds are inclusive)
        m.ttft.observe(0.03);
        m.ttft.observe(1e6);
        m.busy_s = 12.5;
        let text = m.render("m", (10, 2), 4.0);
        assert!(text
            .contains("inferbench_sim:busy_seconds_total{engine=\"0\",model_name=\"m\"} 12.5\n"));
        assert!(text.contains("inferbench_sim:time_scale{engine=\"0\",model_name=\"m\"} 4\n"));
        assert!(text
            .contains("inferbench_sim:late_token_chunks_total{engine=\"0\",model_name=\"m\"} 2\n"));
        assert!(text.contains("vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"m\",le=\"0.001\"} 1\n"));
        assert!(text.contains("vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"m\",le=\"0.04\"} 2\n"));
        assert!(text.contains("vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"m\",le=\"2560.0\"} 2\n"));
        assert!(text.contains("vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"m\",le=\"+Inf\"} 3\n"));
        assert!(text
            .contains("vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 3\n"));
    }
}
