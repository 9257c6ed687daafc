//! `inferbench compare A B`: two configurations' y at matched x (interactivity by default), as
//! a ratio A/B with a 95 % confidence interval when both sides have repeated sweeps.

use inferbench_store::{compare, CostOptions, Filter, Store};

/// Flags of `inferbench compare`.
#[derive(Debug, clap::Args)]
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
}

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

/// Runs the subcommand; returns 0, or 1 when the sides share no x range.
pub fn run(args: Args) -> anyhow::Result<i32> {
    let mut store = Store::open_existing(&args.db)?;
    let cost = CostOptions::default();
    let a = store.points(&side(&args.a, &args.filters)?, &cost)?;
    let b = store.points(&side(&args.b, &args.filters)?, &cost)?;
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
        return Ok(1);
    }
    let rows = compare::compare(&a, &b, &args.x, &args.y, &targets);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(0);
    }
    println!(
        "A = {}   B = {}   y = {} at {}",
        args.a, args.b, args.y, args.x
    );
    println!(
        "{:>12}  {:>12}  {:>3}  {:>12}  {:>3}  {:>8}  {:>19}",
        args.x, "A", "n", "B", "n", "A/B", "95% CI"
    );
    let f = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.4}"));
    for r in &rows {
        let ci = match (r.ci95_low, r.ci95_high) {
            (Some(l), Some(h)) => format!("[{l:.3}, {h:.3}]"),
            _ => "-".into(),
        };
        println!(
            "{:>12.4}  {:>12}  {:>3}  {:>12}  {:>3}  {:>8}  {:>19}",
            r.at,
            f(r.mean_a),
            r.n_a,
            f(r.mean_b),
            r.n_b,
            r.ratio_a_over_b.map_or("-".into(), |x| format!("{x:.3}")),
            ci
        );
    }
    Ok(0)
}
