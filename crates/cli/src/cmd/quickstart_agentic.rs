//! `inferbench quickstart --agentic`: the AgentX pipeline on the embedded simulator in seconds.
//! Built-in synthetic sessions (sub-agents, compaction) are replayed at a few lane counts
//! against an in-process sim with 64-token KV blocks and prefix caching; each point becomes an
//! artifact directory (summary, records, job.json), is ingested, and the North-Star frontier
//! (tok/s/GPU against p90 E2E-normalized interactivity) is printed and drawn. Points are marked
//! invalid: their duration is far below AgentX's 900 s.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use inferbench_loadgen::agentic::prompt::Prompter;
use inferbench_loadgen::agentic::{self, ReplayOptions, SchedConfig};
use inferbench_sim::{Precision, SimConfig};
use inferbench_store::query::{AGENTIC_SCENARIO, NORTH_STAR_X};
use inferbench_views::preview::{stored_line, Preview};

use super::quickstart::Args;

/// Default lane counts of the agentic quickstart.
const LANES: [u32; 4] = [1, 2, 4, 8];

/// Runs the agentic quickstart; returns the exit code (0 ok, 1 when a point failed, 130 on
/// Ctrl-C).
pub fn run(args: &Args, run_dir: &Path, sweep_id: &str) -> anyhow::Result<i32> {
    let lanes = args.concurrency.clone().unwrap_or_else(|| LANES.to_vec());
    anyhow::ensure!(
        !lanes.is_empty() && lanes.iter().all(|&c| c > 0),
        "--concurrency needs positive values"
    );
    let duration = Duration::from_secs_f64(if args.fast { 3.0 } else { 6.0 });
    let precision = Precision::parse(&args.precision)?;
    let cfg = SimConfig {
        hardware: args.hardware.clone(),
        model: args.model.clone(),
        precision,
        tp: args.tp,
        block_size: 64,
        seed: args.seed,
        threads: 1,
        ..SimConfig::default()
    };
    let info = inferbench_sim::describe(&cfg)?;
    let mut store = super::quickstart::open_store(args)?;
    let (hw_key, model_prefix) = inferbench_runner::simsweep::store_keys(&cfg)?;
    let traces = Arc::new(super::replay::synthetic_traces("quickstart", None, 42));
    let n_req: usize = traces.iter().map(|t| t.request_count()).sum();
    let tok = inferbench_workload::Tokenizer::load("o200k_base")?;
    let prompter = Arc::new(Prompter::new(&traces, &tok, 42)?);
    let sim_line = inferbench_sim::start_line(&cfg, &info);
    eprintln!("{sim_line}");
    eprintln!(
        "  AgentX replay of {} built-in sessions ({n_req} requests, sub-agents, compaction), {} s \
         per point at {lanes:?} lanes; real time (time scale 1)",
        traces.len(),
        duration.as_secs_f64()
    );
    let sim = inferbench_sim::spawn(cfg)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let mut exit = 0;
    // Lane counts whose replay did not run its course (Ctrl-C, an abort): never on the preview.
    let mut cut_short: Vec<i64> = Vec::new();
    rt.block_on(async {
        let cancel =
            super::shutdown_token("inferbench quickstart: interrupted; stopping after this point");
        for &conc in &lanes {
            let runner = format!("{hw_key}-sim");
            let result_filename = format!(
                "qs-agentic-{model_prefix}_{precision}_sim_tp{}-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc{conc}_{runner}",
                args.tp
            );
            let dir = run_dir.join(&result_filename);
            std::fs::create_dir_all(&dir)?;
            let opts = ReplayOptions {
                base_url: sim.base_url(),
                model: info.served_model_name.clone(),
                idle_timeout: Duration::from_secs(60),
                request_timeout: None,
                sched: SchedConfig {
                    lanes: conc,
                    duration_ns: duration.as_nanos() as u64,
                    warmup_per_lane: 2,
                    seed: 42,
                    ..SchedConfig::default()
                },
                grace: Duration::from_secs(5),
                save_requests: Some(dir.join("requests.jsonl")),
                ..ReplayOptions::default()
            };
            let started = inferbench_runner::artifacts::now_rfc3339();
            let t0 = std::time::Instant::now();
            let out = agentic::run_replay(opts, traces.clone(), prompter.clone(), cancel.clone())
                .await?;
            let summary = agentic::replay_summary(&out, &info.served_model_name, conc, false);
            std::fs::write(dir.join("summary.json"), serde_json::to_string_pretty(&summary)?)?;
            let ctx = inferbench_core::summary::agentic::AgenticContext {
                hw: hw_key.clone(),
                conc,
                model: info.served_model_name.clone(),
                model_prefix: model_prefix.clone(),
                framework: "sim".into(),
                precision: precision.to_string(),
                image: format!("inferbench-sim:{}", env!("CARGO_PKG_VERSION")),
                ..Default::default()
            };
            agentic::write_artifacts(&dir, &out, &ctx, false, None)?;
            let plain = dir.join("requests.jsonl");
            if plain.exists() {
                inferbench_runner::bench::compress(&plain, &dir.join("requests.jsonl.zst"))?;
                std::fs::remove_file(&plain).ok();
            }
            let job = serde_json::json!({
                "identity": {
                    "hw": hw_key, "framework": "sim", "precision": precision.as_str(),
                    "model_prefix": model_prefix, "spec_decoding": "none", "tp": args.tp,
                    "ep": 1, "dp_attention": false, "disagg": false,
                    "scenario_type": AGENTIC_SCENARIO, "conc": conc,
                    "image": format!("inferbench-sim:{}", env!("CARGO_PKG_VERSION")),
                    "result_filename": result_filename,
                },
                "sweep_id": sweep_id,
                "provenance": inferbench_runner::artifacts::provenance_now(
                    &format!("inferbench-sim:{}", env!("CARGO_PKG_VERSION")), &runner),
                "replay": {"lanes": conc, "duration_s": duration.as_secs_f64(),
                           "traces": "built-in quickstart", "seed": 42, "valid": false},
                "started_at": started,
                "finished_at": inferbench_runner::artifacts::now_rfc3339(),
            });
            inferbench_runner::artifacts::write_json_atomic(&dir.join("job.json"), &job)?;
            std::fs::write(dir.join("server.log"), format!("{sim_line}\n"))?;
            let hit = agentic::theoretical_hit_rate(&out.records);
            eprintln!(
                "  lanes {conc:>2}: {} ok, {} failed, {} plays, {:.0} tok/s in+out, p90 E2E-norm \
                 interactivity {:.1} tok/s/user, theoretical hit {}, took {:.1} s with the warmup",
                summary.completed,
                summary.inferbench.failed,
                out.stats.plays,
                summary.total_token_throughput,
                summary
                    .inferbench
                    .e2e_normalized_interactivity
                    .get("p90")
                    .copied()
                    .flatten()
                    .unwrap_or(f64::NAN),
                hit.map_or("n/a".into(), |h| format!("{:.1} %", h * 100.0)),
                t0.elapsed().as_secs_f64()
            );
            if out.stop != agentic::ReplayStop::Completed {
                cut_short.push(i64::from(conc));
            }
            let code = agentic::exit_code(&out, &summary);
            if code != 0 {
                exit = code;
            }
            if cancel.is_cancelled() {
                break;
            }
        }
        anyhow::Ok(())
    })?;
    sim.shutdown();
    let report = store.ingest_path(run_dir, &inferbench_store::IngestOptions::default())?;
    let mut filter = inferbench_store::Filter::default();
    filter.add(&format!("batch={sweep_id}"))?;
    let mut rows = store.points(&filter, &inferbench_store::CostOptions::default())?;
    // Every quickstart point is invalid (far below 900 s): its frontier is a preview, and the
    // footer says so once instead of `invalid` on every row. A point cut short stays invalid:
    // listed as such and off the preview, as the fixed-length quickstart keeps it.
    for r in &mut rows {
        r.valid = !cut_short.contains(&r.conc);
    }
    inferbench_store::query::mark_frontier_with(&mut rows, NORTH_STAR_X, "tput_per_gpu", false);
    let mut view = Preview {
        columns: ["conc", "tput_per_gpu", NORTH_STAR_X, "median_e2el", "frontier"]
            .map(String::from)
            .to_vec(),
        agentic: true,
        spec: inferbench_views::plot::PlotSpec {
            x: NORTH_STAR_X.into(),
            y: "tput_per_gpu".into(),
            title: format!(
                "inferbench quickstart --agentic: {} on simulated {} (a preview: runs < 900 s are invalid)",
                args.model, args.hardware
            ),
            // Rows are valid here unless cut short (above), so those draw hollow and off the line.
            include_invalid: false,
            ..Default::default()
        },
        ..Preview::default()
    };
    // The report's footer (each column's name, label and unit; what `*` means), then what is
    // particular to this table.
    if cut_short.iter().any(|c| rows.iter().any(|r| r.conc == *c)) {
        view.notes.push(
            "invalid = cut short (interrupted before its duration ran out): kept, never on the \
             preview frontier"
                .into(),
        );
    }
    // A point cut short before any request finished is a failed point, not a row here.
    let unlisted = inferbench_views::preview::unlisted(&cut_short, &rows);
    if !unlisted.is_empty() {
        view.notes.push(format!(
            "lanes {}: cut short before any request finished, stored as a failed point \
             (`report --include-failed` lists it)",
            unlisted.join(", ")
        ));
    }
    view.notes.push(
        "conc = lanes (session trees replayed at once); every point is invalid (duration < \
         900\u{a0}s), so this frontier is a preview (`report` keeps invalid points off \
         frontiers unless --include-invalid)"
            .into(),
    );
    view.notes.push(
        "a play = one replay of a session tree (main agent + sub-agents); theoretical hit = \
         share of prompt blocks already sent earlier in the session (the best a prefix cache \
         can do)"
            .into(),
    );
    print!("\n{}", view.table(&rows));
    let chart = args
        .chart
        .clone()
        .unwrap_or_else(|| run_dir.join("frontier.svg"));
    // The default chart comes as SVG and PNG, as the fixed-seq quickstart's.
    let (charts, _) = view.draw(&rows, &chart, args.chart.is_none())?;
    let db = (!args.no_db).then(|| store.location());
    eprintln!(
        "{}",
        stored_line(&report, db, &charts, "replays under 900 s or cut short")
    );
    eprintln!("artifacts in {}", run_dir.display());
    Ok(exit)
}
