//! `inferbench compare A B`: two configurations' y at matched x (interactivity by default), as
//! a ratio A/B with a 95 % confidence interval when both sides have repeated sweeps.

use inferbench_store::{compare, CostOptions, Filter, PointRow, Store};

use super::ExitStatus;

/// Exit codes of `compare` (its `--help`).
pub const EXIT_CODES_HELP: &str = "Exit codes: 0 compared; 1 nothing to compare (a side matches \
     no valid point, or the two frontiers share no x range; it says which); 2 bad flags, no \
     database, or a side that pools several workloads (ISL/OSL or scenario).";

/// Flags of `inferbench compare`.
#[derive(Debug, clap::Args)]
#[command(after_help = EXIT_CODES_HELP)]
pub struct Args {
    /// Side A: comma-separated `KEY=VALUE[|VALUE…]` filters, e.g. `hw=h200,framework=sglang`.
    pub a: String,
    /// Side B, same syntax.
    pub b: String,
    /// Database: a SQLite file path or a `postgres://user:pw@host/db` URL.
    #[arg(long, env = "INFERBENCH_DB", default_value = inferbench_store::DEFAULT_DB)]
    pub db: String,
    /// Filters applied to both sides (e.g. `model=dsr1`, `isl=1024`); repeatable.
    #[arg(long = "filter", short = 'f', value_name = "KEY=VALUE")]
    pub filters: Vec<String>,
    /// x metric to match on.
    #[arg(long, default_value = "median_intvty")]
    pub x: String,
    /// y metric to compare.
    #[arg(long, default_value = "tput_per_gpu")]
    pub y: String,
    /// Target x values (comma-separated); default: low, middle and high end of the overlap.
    #[arg(long, value_delimiter = ',')]
    pub at: Vec<f64>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Let invalid points (AgentX replays shorter than 900 s or cut short) count; by default
    /// they are left out, as from every frontier.
    #[arg(long)]
    pub include_invalid: bool,
}

/// One side's filter: the common `--filter`s, then the side's comma-separated ones.
fn side(spec: &str, common: &[String]) -> anyhow::Result<Filter> {
    let mut f = Filter::default();
    for s in common {
        f.add(s)?;
    }
    for part in spec.split(',').filter(|p| !p.trim().is_empty()) {
        f.add(part)?;
    }
    Ok(f)
}

/// Runs the subcommand; returns 0, or 1 when a side has no valid point or the sides share no x
/// range; errors (exit 2) on a side pooling workloads.
pub fn run(args: Args) -> anyhow::Result<ExitStatus> {
    let mut store = Store::open_existing(&args.db)?;
    let cost = CostOptions::default();
    let load = |spec: &str, store: &mut Store| -> anyhow::Result<Vec<PointRow>> {
        let mut rows = store.points(&side(spec, &args.filters)?, &cost)?;
        rows.retain(|r| r.valid || args.include_invalid);
        Ok(rows)
    };
    let a = load(&args.a, &mut store)?;
    let b = load(&args.b, &mut store)?;
    if let Some(why) = compare::pooled_workloads(&a, &b, &args.a, &args.b) {
        anyhow::bail!("{why}");
    }
    let (wa, wb) = (compare::workloads(&a), compare::workloads(&b));
    let targets = if args.at.is_empty() {
        compare::default_targets(&a, &b, &args.x, &args.y)
    } else {
        args.at.clone()
    };
    if targets.is_empty() {
        // Say which side is empty before speaking of ranges (trial 8: two empty sides were
        // reported as frontiers that share no range).
        let empty: Vec<String> = [("A", &args.a, a.len()), ("B", &args.b, b.len())]
            .iter()
            .filter(|(_, _, n)| *n == 0)
            .map(|(name, f, _)| format!("{name} ({f})"))
            .collect();
        if empty.is_empty() {
            eprintln!(
                "the frontiers of A ({} points) and B ({} points) share no {} range",
                a.len(),
                b.len(),
                args.x
            );
        } else {
            eprintln!(
                "no stored point matches {} (`inferbench report -f KEY=VALUE` lists what does)",
                empty.join(" nor ")
            );
        }
        return Ok(ExitStatus::Failed);
    }
    let rows = compare::compare(&a, &b, &args.x, &args.y, &targets);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitStatus::Ok);
    }
    print!(
        "{}",
        inferbench_views::report::compare_table(
            &rows,
            (&args.a, &args.b),
            (&wa, &wb),
            &args.x,
            &args.y
        )
    );
    Ok(ExitStatus::Ok)
}
