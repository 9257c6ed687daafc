//! `inferbench plot`: Pareto charts (SVG or PNG) of stored points.

use std::path::PathBuf;

use inferbench_store::CostOptions;
use inferbench_views::plot::{plot, PlotSpec};

use super::ExitStatus;

/// Exit codes of `plot` (its `--help`).
pub const EXIT_CODES_HELP: &str = "Exit codes: 0 chart written (points without a value, or \
     clipped, are named on stderr); 2 bad flags, no database, a database with no runs yet (run \
     `inferbench quickstart` or `inferbench ingest`), or no point to draw.";

/// Flags of `inferbench plot`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXIT_CODES_HELP)]
pub struct Args {
    /// Output file; `.svg` or `.png`.
    #[arg(long, short, default_value = "frontier.svg")]
    pub out: PathBuf,
    /// Database: a SQLite file path or a `postgres://user:pw@host/db` URL.
    #[arg(long, env = "INFERBENCH_DB", default_value = inferbench_store::DEFAULT_DB)]
    pub db: String,
    /// Filter `KEY=VALUE[|VALUE…]` (as `inferbench report`); repeatable.
    #[arg(long = "filter", short = 'f', value_name = "KEY=VALUE")]
    pub filters: Vec<String>,
    /// Only points dated on or after this day (YYYY-MM-DD).
    #[arg(long)]
    pub since: Option<String>,
    /// Only points dated on or before this day (YYYY-MM-DD).
    #[arg(long)]
    pub until: Option<String>,
    /// x metric (default: median_intvty, or p99_ttft when y is an input-token metric, as
    /// InferenceX does).
    #[arg(long)]
    pub x: Option<String>,
    /// y metric (any stored or derived metric, e.g. usd_per_m_rental, tok_s_per_mw).
    #[arg(long, default_value = "tput_per_gpu")]
    pub y: String,
    /// Chart title [default: "<y label> vs. <x label>"].
    #[arg(long)]
    pub title: Option<String>,
    /// Width in pixels.
    #[arg(long, default_value_t = 1200)]
    pub width: u32,
    /// Height in pixels.
    #[arg(long, default_value_t = 800)]
    pub height: u32,
    /// Draw only frontier points.
    #[arg(long)]
    pub frontier_only: bool,
    /// Let invalid points (AgentX replays shorter than 900 s) form the frontier line; by
    /// default they are drawn as points only.
    #[arg(long)]
    pub include_invalid: bool,
    /// Keep points InferenceX clips (above $5/M tokens on built-in cost metrics, TTFT above 60 s).
    #[arg(long)]
    pub no_clip: bool,
    /// Custom $/GPU-hour for usd_per_m_custom*.
    #[arg(long, value_name = "USD")]
    pub gpu_hour_cost: Option<f64>,
    /// Custom all-in kW per GPU.
    #[arg(long, value_name = "KW")]
    pub gpu_kw: Option<f64>,
}

/// Runs the subcommand; returns the process exit code.
pub fn run(args: Args) -> anyhow::Result<ExitStatus> {
    let mut store = inferbench_views::flags::open_with_runs(&args.db)?;
    let f = inferbench_views::flags::filter(&args.filters, &args.since, &args.until, false)?;
    let rows = store.points(
        &f,
        &CostOptions {
            usd_per_gpu_hour: args.gpu_hour_cost,
            kw_per_gpu: args.gpu_kw,
        },
    )?;
    // The database has runs (checked above): an empty selection is the filters' doing (trial
    // 10: "store results with ingest" was printed for a filter that matched nothing).
    anyhow::ensure!(
        !rows.is_empty(),
        "nothing to plot: no point in {} matches {} (`inferbench report` without them lists \
         every point)",
        args.db,
        {
            let mut sel: Vec<String> = args.filters.iter().map(|f| format!("-f {f}")).collect();
            sel.extend(args.since.iter().map(|d| format!("--since {d}")));
            sel.extend(args.until.iter().map(|d| format!("--until {d}")));
            if sel.is_empty() {
                "(its runs hold only failed points: `report --include-failed` lists them)".into()
            } else {
                sel.join(" ")
            }
        }
    );
    let agentic = rows
        .iter()
        .all(|r| r.scenario == inferbench_store::query::AGENTIC_SCENARIO);
    let x = args.x.unwrap_or_else(|| {
        if agentic {
            // AgentX's North-Star x.
            inferbench_store::query::NORTH_STAR_X.to_string()
        } else if args.y.contains("input") {
            "p99_ttft".to_string()
        } else {
            "median_intvty".to_string()
        }
    });
    let spec = PlotSpec {
        x,
        y: args.y,
        title: args.title.unwrap_or_default(),
        width: args.width,
        height: args.height,
        frontier_only: args.frontier_only,
        clip: !args.no_clip,
        include_invalid: args.include_invalid,
    };
    let drawn = plot(&rows, &spec, &args.out)?;
    println!("wrote {}", args.out.display());
    if let Some(n) = drawn.note() {
        eprintln!("inferbench plot: {n}");
    }
    Ok(ExitStatus::Ok)
}
