//! [`LoadgenPoint`]: the real [`PointRunner`], one `inferbench_loadgen::run_bench` per point with
//! InferenceX's client settings (reference/inferencex-producer.md §5.3): random dataset at the
//! row's ISL/OSL, range ratio, `ignore_eos`, unlimited rate, `--max-concurrency conc`,
//! `10 × conc` prompts and `2 × conc` warmups, percentiles of ttft, tpot, itl, e2el, and the
//! InferenceX job identity so the aggregate `agg_<RESULT_FILENAME>.json` is produced.
//!
//! Request records stream to `requests.jsonl` while the point runs (nothing is lost if the
//! process dies) and are compressed to `requests.jsonl.zst` when it ends.

use std::path::Path;

use anyhow::Context;
use inferbench_loadgen::{run_bench, BenchOptions, ProgressMode, RunEnd};
use tokio_util::sync::CancellationToken;

use crate::point::{BenchDefaults, PointOutput, PointRequest, PointRunner};

/// Runs points with the load generator.
#[derive(Debug, Clone, Default)]
pub struct LoadgenPoint {
    /// Show the live progress bar (off in tests and under Slurm).
    pub progress: bool,
    /// Notes already warned in this sweep: a note every point repeats word for word (no power
    /// sampler on this machine) is said once, not once per point.
    pub warned: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<String>>>,
    /// The server is the simulator running this many modelled seconds per wall second (its
    /// time scale): each fixed-sequence point is rewritten in modelled time
    /// ([`crate::modelled::to_modelled_time`]) before its records are compressed, its summary
    /// says so (`clock: modelled`, `sim_time_scale`), and no GPU power is sampled (a simulated
    /// GPU draws none of this machine's). `None`: a real server, wall time.
    pub sim_time_scale: Option<f64>,
    /// Print notes as `  note (conc N): <note>` (`lanes N` for an agentic point), indented under the caller's own progress line
    /// for the point (the quickstart's), instead of `warning: <RESULT_FILENAME>: <note>`.
    pub indented_notes: bool,
    /// The early stop's noise of the points this runner finished in this sweep (issue 43,
    /// `sweep --adaptive`): each valid adaptive point's `inferbench.early_stop_noise`, in the
    /// order they finished; a later point's rule pools those near its concurrency
    /// (`inferbench_loadgen::early_stop::NoisePool`). Shared by the runner's clones; empty at
    /// the start of a sweep (one `LoadgenPoint` per sweep). Slurm tasks and GitHub rows run
    /// one point per process: theirs stays empty (the point's own estimate, as before).
    pub noise_pool: std::sync::Arc<std::sync::Mutex<Vec<inferbench_core::summary::EarlyStopNoise>>>,
}

/// `BenchOptions` for a point (public so the CLI and tests can show exactly what is run).
pub fn bench_options(req: &PointRequest) -> BenchOptions {
    // Multinode rows need PREFILL_GPUS/DECODE_GPUS, which only the engine knows: no aggregate.
    let identity = req
        .spec
        .point(&req.runner_name, req.conc)
        .job_identity()
        .ok();
    let b = &req.bench;
    // Checked when the sweep's flags were read (`RunFlags::sweep_options`).
    let backend = crate::point::backend(&b.client).ok().flatten();
    // `--backend` with `--endpoint` left at its default: the backend's own endpoint.
    let endpoint = match backend {
        Some(be) if b.endpoint == BenchDefaults::default().endpoint => {
            be.default_endpoint().to_string()
        }
        _ => b.endpoint.clone(),
    };
    BenchOptions {
        backend: backend.unwrap_or_default(),
        header_templates: crate::point::header_templates(&b.client).unwrap_or_default(),
        allow_empty_content: b.client.allow_empty_content,
        tls: crate::point::tls(&b.client),
        base_url: req.base_url.clone(),
        endpoint: Some(endpoint),
        model: req.model.clone(),
        random_input_len: req.isl,
        random_output_len: req.osl,
        random_range_ratio: Some(b.range_ratio),
        tokenizer: b.tokenizer.clone().unwrap_or_else(|| "o200k_base".into()),
        ignore_eos: b.ignore_eos,
        seed: b.seed,
        max_concurrency: Some(req.conc),
        request_rate: None,
        num_prompts: Some(u64::from(req.num_prompts)),
        num_warmups: Some(u64::from(req.num_warmups)),
        request_timeout: b.request_timeout_s.map(std::time::Duration::from_secs_f64),
        save_result: true,
        result_dir: Some(req.dir.clone()),
        result_filename: Some("summary.json".into()),
        save_requests: Some(req.dir.join("requests.jsonl")),
        job_identity: identity,
        progress: ProgressMode::Off,
        // A kept engine (one launch for a row's concurrencies) or a --base-url server has
        // seen the earlier points' prompts, which the same seed makes identical: a run-unique
        // marker at the start of each prompt keeps the prefix cache from serving them (the
        // marker is counted inside ISL; within the point nothing changes).
        cache_bust: true,
        // What the runner knows of the engine it launched for this row (issue 39 §5).
        server_settings: inferbench_core::fingerprint::launch_settings(&req.spec.row),
        // `sweep --adaptive` (issue 43): the point may stop once its metrics are known.
        early_stop: b
            .early_stop_tolerance
            .and_then(|t| inferbench_loadgen::early_stop::EarlyStop::for_concurrency(t, req.conc)),
        ..BenchOptions::default()
    }
}

impl PointRunner for LoadgenPoint {
    async fn run_point(
        &self,
        req: &PointRequest,
        cancel: &CancellationToken,
    ) -> anyhow::Result<PointOutput> {
        if req.spec.is_agentic() {
            return run_agentic_point(req, self, cancel).await;
        }
        let mut opts = bench_options(req);
        if let Some(rule) = opts.early_stop {
            let pool = self
                .noise_pool
                .lock()
                .map(|p| p.clone())
                .unwrap_or_default();
            opts.early_stop = Some(rule.with_pool(&pool));
        }
        if self.progress {
            opts.progress = ProgressMode::Auto;
        }
        let scale = self.sim_time_scale.or(req.sim_time_scale);
        if let Some(k) = scale {
            opts.power = inferbench_loadgen::PowerMode::Off;
            opts.rescaled_at = Some(k);
            opts.metadata.extend([
                ("clock".into(), "modelled".into()),
                ("sim_time_scale".into(), k.to_string()),
            ]);
        }
        let max_error_rate = opts.max_error_rate;
        let mut outcome = run_bench(opts.clone(), cancel.clone()).await?;
        if let Some(k) = scale {
            let (modelled, note) = crate::modelled::to_modelled_time(&opts, &outcome.summary, k)?;
            outcome.summary = modelled;
            outcome.notes.extend(note);
        }
        let gate = loadgen_gate(&outcome, max_error_rate);
        // The verdict is the point's outcome (a failure the gate quotes, or the interruption),
        // which the sweep's progress line states: not a warning beside it as well (trial 17:
        // a third line for one interrupted point).
        let verdict = outcome.verdict.as_ref().map(|v| v.note.as_str());
        let notes: Vec<String> = (outcome.notes.iter())
            .filter(|n| Some(n.as_str()) != verdict)
            .cloned()
            .collect();
        finish_point(req, &notes, self)?;
        // A valid adaptive point lends its noise to the next points' rules (an invalid one,
        // e.g. a sim that fell behind its schedule, measured something else).
        let valid = outcome.summary.inferbench.invalid_reason.is_none()
            && outcome.summary.inferbench.failed_reason.is_none()
            && !outcome.interrupted;
        if let (true, Some(n)) = (valid, outcome.summary.inferbench.early_stop_noise) {
            if let Ok(mut p) = self.noise_pool.lock() {
                p.push(n);
            }
        }
        let aggregate = match &outcome.aggregate_path {
            Some(p) => Some(serde_json::from_str(
                &std::fs::read_to_string(p).with_context(|| p.display().to_string())?,
            )?),
            None => None,
        };
        Ok(PointOutput {
            summary: serde_json::to_value(&outcome.summary)?,
            aggregate,
            completed: outcome.summary.completed,
            failed: outcome.summary.inferbench.failed,
            interrupted: outcome.interrupted && cancel.is_cancelled(),
            gate,
            unreachable: outcome.end == RunEnd::Unreachable,
        })
    }
}

/// Why a point that ran fails anyway (the [`PointOutput::gate`]), from the load generator's
/// exit code: the error-rate gate (more than `max_error_rate` failed), nothing measured,
/// `--max-anomaly-rate`, every warmup failing, or the server unreachable — in the loadgen's
/// own words where it has them, with the first failed request's error. `None` otherwise
/// (trial 18: a sweep against a dead `--base-url` said "none failed … cancelled" under its
/// connect errors).
fn loadgen_gate(outcome: &inferbench_loadgen::BenchOutcome, max_error_rate: f64) -> Option<String> {
    use inferbench_loadgen::VerdictKind;
    if !matches!(outcome.end, RunEnd::GateFailed | RunEnd::Unreachable) {
        return None;
    }
    let first = || first_error(&outcome.records);
    Some(match &outcome.verdict {
        // That note names the connect error already.
        Some(v) if v.kind == VerdictKind::ServerUnreachable => v.note.clone(),
        // The loadgen's own words, with the first failed request's error.
        Some(v) if v.kind != VerdictKind::ErrorRate => format!("{}{}", v.note, first()),
        _ => format!(
            "{} of {} requests failed (more than the {:.0} % allowed){}",
            outcome.summary.inferbench.failed,
            outcome.summary.num_prompts,
            max_error_rate * 100.0,
            first()
        ),
    })
}

/// After a point: its notes as warnings or indented notes (each distinct note once per sweep,
/// see [`LoadgenPoint::warned`]; the caller leaves out the point's own outcome),
/// `requests.jsonl` compressed to `requests.jsonl.zst`.
fn finish_point(req: &PointRequest, notes: &[String], runner: &LoadgenPoint) -> anyhow::Result<()> {
    for note in notes {
        let first = (runner.warned.lock()).map_or(true, |mut w| w.insert(note.clone()));
        if first && runner.indented_notes {
            // An agentic point's concurrency is its lanes, as its progress line names it
            // (trial 25: "note (conc 1)" above "lanes  1: …").
            let what = if req.spec.is_agentic() {
                "lanes"
            } else {
                "conc"
            };
            inferbench_core::notice::line(&format!("  note ({what} {}): {note}", req.conc));
        } else if first {
            // Plain text, as the sweep's other lines (tracing's format is for INFERBENCH_LOG).
            inferbench_core::notice::line(&format!("warning: {}: {note}", req.result_filename));
        } else {
            tracing::debug!("{}: {note} (again)", req.result_filename);
        }
    }
    let plain = req.dir.join("requests.jsonl");
    if plain.exists() {
        compress(&plain, &req.dir.join("requests.jsonl.zst"))
            .with_context(|| format!("compressing {}", plain.display()))?;
        std::fs::remove_file(&plain).ok();
    }
    Ok(())
}

/// The traces of an `agentic-coding` point, read from `path` as `replay` reads them against
/// the server at `base_url` (reached as `reach`): a trace whose peak input + output is above
/// the model's context from the server's `/v1/models` (for `model`) is dropped whole
/// ([`inferbench_workload::agentx::context_bound`], the one rule with `replay`; f14 item 5:
/// the sweep sent them, the server answered HTTP 400 and every row failed its warmup). Returns
/// the load and, when traces were dropped, what to say of them
/// ([`inferbench_workload::agentx::dropped_note`]). Errors: the load's (`FILE:LINE`).
pub(crate) async fn agentic_traces(
    path: &std::path::Path,
    base_url: &str,
    model: &str,
    reach: &inferbench_client::Reach,
) -> anyhow::Result<(inferbench_workload::agentx::LoadReport, Option<String>)> {
    use inferbench_workload::agentx;
    let model = (!model.trim().is_empty()).then_some(model);
    let served = inferbench_client::models::served_max_model_len(base_url, model, reach).await;
    let report = agentx::load_traces(
        path,
        &agentx::LoadOptions {
            max_context_length: agentx::context_bound(None, served),
            ..agentx::LoadOptions::default()
        },
    )?;
    let note = (report.dropped_by_context > 0)
        .then(|| agentx::dropped_note(report.dropped_by_context, None, served));
    Ok((report, note))
}

/// AgentX's shortest valid duration, s.
pub(crate) const MIN_VALID_AGENTIC_S: f64 = 900.0;

/// An `agentic-coding` point: the AgentX replay of `--traces` with `conc` lanes for the
/// duration (the override, else the row's `duration`, else 3,600 s), InferenceX's other
/// client settings (reference/agentx.md §3.10), records in `requests.jsonl(.zst)`.
async fn run_agentic_point(
    req: &PointRequest,
    runner: &LoadgenPoint,
    cancel: &CancellationToken,
) -> anyhow::Result<PointOutput> {
    use inferbench_loadgen::agentic::{self, prompt::Prompter, ReplayOptions, SchedConfig};
    let traces_path = req.bench.traces.as_ref().with_context(|| {
        "agentic-coding rows replay AgentX traces: give `--traces PATH` (a traces.jsonl or a \
         directory; InferenceX uses semianalysisai/cc-traces-weka-062126-256k)"
    })?;
    let tls = crate::point::tls(&req.bench.client);
    let reach = inferbench_client::Reach {
        tls: tls.clone(),
        ..ReplayOptions::default().reach()
    };
    let (report, note) = agentic_traces(traces_path, &req.base_url, &req.model, &reach).await?;
    for n in &report.notes {
        inferbench_core::notice::line(&format!("inferbench: warning: {n}"));
    }
    if let Some(note) = note {
        inferbench_core::notice::line(&format!("inferbench: {}", note.trim_start_matches(", ")));
    }
    let settings = req.bench.replay_settings(req.spec.row.duration);
    let duration_s = settings.duration_s;
    let traces = std::sync::Arc::new(report.traces);
    let tok = inferbench_workload::Tokenizer::load(
        req.bench.tokenizer.as_deref().unwrap_or("o200k_base"),
    )?;
    let prompter = std::sync::Arc::new(Prompter::new(&traces, &tok, settings.seed)?);
    let endpoint = if req.bench.endpoint.contains("chat") {
        req.bench.endpoint.clone()
    } else {
        "/v1/chat/completions".to_string()
    };
    let opts = ReplayOptions {
        base_url: req.base_url.clone(),
        endpoint: Some(endpoint),
        model: req.model.clone(),
        // Checked when the sweep's flags were read (`RunFlags::sweep_options`).
        header_templates: crate::point::header_templates(&req.bench.client).unwrap_or_default(),
        allow_empty_content: req.bench.client.allow_empty_content,
        tls,
        request_timeout: Some(std::time::Duration::from_secs_f64(
            req.bench.request_timeout_s.unwrap_or(21_600.0),
        )),
        sched: SchedConfig {
            lanes: req.conc,
            duration_ns: (duration_s * 1e9) as u64,
            seed: settings.seed,
            warmup_per_lane: settings.warmup_per_lane,
            ..SchedConfig::default()
        },
        grace: std::time::Duration::from_secs_f64(settings.grace_s),
        save_requests: Some(req.dir.join("requests.jsonl")),
        // Under `ulimit -v`, the records its row's room holds (set by the CLI, as `replay`'s).
        record_bound: req.record_bound,
        progress: if runner.progress {
            ProgressMode::Auto
        } else {
            ProgressMode::Off
        },
        ..ReplayOptions::default()
    };
    // GPU power around the replay, as for fixed-sequence points (InferenceX samples it for
    // AgentX too: reference/agentx.md §4.6); none against the simulator, whose GPU draws none
    // of this machine's.
    let mut power_notes = Vec::new();
    let power = inferbench_loadgen::power::start(
        if runner.sim_time_scale.or(req.sim_time_scale).is_some() {
            inferbench_loadgen::PowerMode::Off
        } else {
            inferbench_loadgen::PowerMode::Auto
        },
        std::time::Duration::from_secs(1),
        req.dir.join("power.csv"),
        req.dir.join("power_validation.json"),
        false,
        Some(&mut power_notes),
    )
    .await?;
    // `sweep --adaptive` (issue 43): the replay may end once its p90 E2E-normalized
    // interactivity is known, never before 900 s of profiling; a replay no longer than that
    // runs its duration.
    let early_stop = (req.bench.early_stop_tolerance)
        .filter(|_| duration_s > MIN_VALID_AGENTIC_S)
        .and_then(|t| inferbench_loadgen::early_stop::AgenticEarlyStop::for_lanes(t, req.conc));
    let out =
        agentic::run_replay_adaptive(opts, traces, prompter, cancel.clone(), early_stop).await?;
    let valid = duration_s >= MIN_VALID_AGENTIC_S;
    let mut summary = agentic::replay_summary(&out, &req.model, req.conc, valid);
    // As `replay` records them.
    summary.inferbench.allow_empty_content = req.bench.client.allow_empty_content;
    summary.inferbench.header_templates = (crate::point::header_templates(&req.bench.client))
        .unwrap_or_default()
        .iter()
        .map(|t| format!("{}: {}", t.name, t.value))
        .collect();
    // What the runner knows of the engine it launched for this row (issue 39 §5).
    let first = out
        .server_snapshots
        .first()
        .map_or(&[][..], |f| &f.samples[..]);
    summary.inferbench.server = inferbench_core::fingerprint::server_fingerprint(
        &req.model,
        None,
        first,
        &inferbench_core::fingerprint::launch_settings(&req.spec.row),
    );
    if let Some(p) = power {
        summary.inferbench.power = Some(p.finish(&summary, Some(req.spec.gpu_count())).await);
    }
    let aggregate = agentic::write_artifacts(
        &req.dir,
        &out,
        &agentic_context(req),
        valid,
        summary.inferbench.power.as_ref(),
    )?;
    inferbench_loadgen::output::write_file(
        &req.dir.join(format!("{}.json", req.result_filename)),
        serde_json::to_string_pretty(&aggregate)?.as_bytes(),
    )?;
    // The stop note is the point's outcome (its gate, or the interruption the progress line
    // states), not a warning beside it.
    // The record bound's note in the sweep's words: its line already says "warning", and the
    // point's duration is the sweep's (`--agentic-duration` or the row's), not `replay`'s flag.
    let mut notes: Vec<String> = (out.notes.iter())
        .filter(|n| Some(*n) != out.stop_note.as_ref())
        .map(|n| match &out.stopped_reason {
            Some(why) if n.starts_with(&format!("warning: {why};")) => format!(
                "{why}; the replay ended there as at the end of its duration (requests in \
                 flight got the grace) and its summary covers them"
            ),
            _ => n.clone(),
        })
        .collect();
    inferbench_loadgen::power::drop_sampler_note(
        &mut power_notes,
        inferbench_core::server_metrics::from_simulator(&out.server_snapshots),
        summary.completed > 0,
    );
    notes.extend(power_notes);
    if !valid {
        notes.push(format!(
            "replay duration {duration_s} s is shorter than AgentX's {MIN_VALID_AGENTIC_S} s: \
             this and every other agentic point of this run as short are stored as invalid \
             (submission_valid=false; said once)"
        ));
    }
    finish_point(req, &notes, runner)?;
    let end = agentic::replay_end(&out, &summary);
    Ok(PointOutput {
        summary: serde_json::to_value(&summary)?,
        aggregate: None,
        completed: summary.completed,
        failed: summary.inferbench.failed,
        interrupted: out.stop == agentic::ReplayStop::Interrupted && cancel.is_cancelled(),
        gate: matches!(end, RunEnd::GateFailed | RunEnd::Unreachable).then(|| {
            out.stop_note
                .clone()
                .unwrap_or_else(|| "no profile request succeeded".into())
                + &first_error(&out.records)
        }),
        unreachable: end == RunEnd::Unreachable,
    })
}

/// The InferenceX AgentX aggregate's metadata for a point (process_agentic_result.py's
/// environment: RUNNER_TYPE, CONC, MODEL, FRAMEWORK, …).
fn agentic_context(req: &PointRequest) -> inferbench_core::summary::agentic::AgenticContext {
    use inferbench_core::summary::{Parallelism, Topology};
    let r = &req.spec.row;
    inferbench_core::summary::agentic::AgenticContext {
        hw: r.runner.clone(),
        conc: req.conc,
        image: r.image.clone(),
        model: r.model.clone(),
        model_prefix: r.model_prefix.clone(),
        framework: r.framework.clone(),
        precision: r.precision.clone(),
        spec_decoding: r.spec_decoding.clone(),
        topology: Topology::SingleNode {
            parallelism: Parallelism {
                tp: r.tp.unwrap_or(1),
                pp: r.pp.unwrap_or(1),
                dcp_size: r.dcp_size.unwrap_or(1),
                pcp_size: r.pcp_size.unwrap_or(1),
                ep: r.ep.unwrap_or(1),
            },
            dp_attention: r.dp_attn.unwrap_or(false).to_string(),
        },
        kv_offloading: r.kv_offloading.clone().unwrap_or_else(|| "none".into()),
        allocated_cpu_dram_gb: r.total_cpu_dram_gb.unwrap_or(0) as i64,
        ..Default::default()
    }
}

/// `; first error: <class>: <message>` of the first failed profile request, or empty.
fn first_error(records: &[inferbench_core::RequestRecord]) -> String {
    records
        .iter()
        .find_map(|r| {
            let class = r.error_class?;
            Some(format!(
                "; first error: {}: {}",
                class.as_str(),
                r.error.as_deref().unwrap_or("")
            ))
        })
        .unwrap_or_default()
}

/// zstd (level 3) of `src` into `dst`, via a temporary file renamed into place (removed on
/// every error, and listed for an end without destructors: `inferbench_core::tempfiles`).
pub fn compress(src: &Path, dst: &Path) -> std::io::Result<()> {
    let tmp = dst.with_extension("zst.tmp");
    // Listed while on disk and removed on every error: no temporary file is left (issue 39,
    // fresh tester's finding 3).
    let _pending = inferbench_core::tempfiles::register(&tmp);
    let res = (|| {
        let mut input = std::fs::File::open(src)?;
        let out = std::fs::File::create(&tmp)?;
        let mut enc = zstd::Encoder::new(out, 3)?;
        std::io::copy(&mut input, &mut enc)?;
        enc.finish()?.sync_all()?;
        std::fs::rename(&tmp, dst)
    })();
    if res.is_err() {
        std::fs::remove_file(&tmp).ok();
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferbench_core::summary::{summarize, SummaryContext};
    use inferbench_loadgen::{BenchOutcome, Verdict, VerdictKind};

    /// f14 item 5: an `agentic-coding` point reads its traces as `replay` does: against a
    /// server whose `/v1/models` says max_model_len 1000, the trace of peak 1544 tokens is
    /// dropped (the sweep sent it, and the server refused it with HTTP 400), the one of peak
    /// 136 kept, and the drop said in `replay`'s words; a server that reports no context
    /// drops none.
    #[tokio::test]
    async fn an_agentic_point_drops_traces_over_the_servers_context_as_replay_does() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let dir = tempfile::tempdir().unwrap();
        let trace = |id: &str, input: u64| {
            let blocks: Vec<String> = (0..input.div_ceil(64)).map(|b| b.to_string()).collect();
            format!(
                r#"{{"id":"{id}","models":["m"],"block_size":64,"hash_id_scope":"local","requests":[{{"t":0,"model":"m","in":{input},"out":8,"hash_ids":[{}],"api_time":1,"type":"s"}}]}}"#,
                blocks.join(",")
            )
        };
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            format!("{}\n{}\n", trace("big", 1536), trace("small", 128)),
        )
        .unwrap();
        let serve = |body: &'static str| async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", l.local_addr().unwrap());
            tokio::spawn(async move {
                while let Ok((mut s, _)) = l.accept().await {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf).await;
                    let r = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \
                         {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = s.write_all(r.as_bytes()).await;
                }
            });
            url
        };
        let reach = inferbench_client::Reach::default();
        let url = serve(r#"{"object":"list","data":[{"id":"m","max_model_len":1000}]}"#).await;
        let (report, note) = agentic_traces(&path, &url, "m", &reach).await.unwrap();
        let ids: Vec<&str> = report.traces.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["small"]);
        assert_eq!(
            note.as_deref(),
            Some(
                ", 1 dropped (peak input + output above the server's max_model_len of 1000 \
                 tokens, from its /v1/models)"
            )
        );
        let url = serve(r#"{"object":"list","data":[{"id":"m"}]}"#).await;
        let (report, note) = agentic_traces(&path, &url, "m", &reach).await.unwrap();
        assert_eq!(report.traces.len(), 2);
        assert_eq!(note, None);
    }

    fn outcome(end: RunEnd, verdict: Option<Verdict>) -> BenchOutcome {
        let ctx = SummaryContext {
            num_prompts: 8,
            ..Default::default()
        };
        BenchOutcome {
            summary: summarize(&[], &ctx),
            result_path: None,
            records_path: None,
            aggregate_path: None,
            interrupted: false,
            end,
            notes: verdict.iter().map(|v| v.note.clone()).collect(),
            verdict,
            records: Vec::new(),
        }
    }

    /// The point's failure comes from the load generator's typed verdict, not from its note's
    /// words: a `--require-power` failure is quoted as such (it read "0 of 8 requests failed"
    /// when the gate matched note prefixes), the error-rate gate in the sweep's words, and a
    /// passing or interrupted point has none.
    #[test]
    fn the_gate_follows_the_verdict_kind() {
        let v = |kind, note: &str| {
            Some(Verdict {
                kind,
                note: note.into(),
            })
        };
        let power = "GPU power not valid (no samples); see power_validation.json";
        assert_eq!(
            loadgen_gate(
                &outcome(RunEnd::GateFailed, v(VerdictKind::PowerInvalid, power)),
                0.1
            ),
            Some(power.to_string())
        );
        assert_eq!(
            loadgen_gate(
                &outcome(
                    RunEnd::GateFailed,
                    v(VerdictKind::ErrorRate, "error rate 50.00 % …")
                ),
                0.1
            ),
            Some("0 of 8 requests failed (more than the 10 % allowed)".to_string())
        );
        let dead = "server unreachable at http://127.0.0.1:9: connection refused";
        assert_eq!(
            loadgen_gate(
                &outcome(RunEnd::Unreachable, v(VerdictKind::ServerUnreachable, dead)),
                0.1
            ),
            Some(dead.to_string())
        );
        assert_eq!(loadgen_gate(&outcome(RunEnd::Passed, None), 0.1), None);
        assert_eq!(
            loadgen_gate(
                &outcome(
                    RunEnd::Interrupted,
                    v(VerdictKind::Interrupted, "interrupted: …")
                ),
                0.1
            ),
            None
        );
    }
}
