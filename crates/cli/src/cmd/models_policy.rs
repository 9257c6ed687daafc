//! `inferbench models`: the recipes library's tools (`support`, `dram-check`, `priority`) plus
//! `policy`, MODELS.md's rules as checks (issue 41): its flags, its printing and its exit code
//! live here; the rules are `inferbench_recipes::policy`.

use std::path::PathBuf;

use super::recipes::{deprecated_files, load_master_configs, ModelsSub};
use anyhow::Context as _;
use inferbench_recipes::policy::{
    self, DeprecationFinding, DeprecationKind, EngineFinding, EngineVerdict, Policy, PolicyReport,
    SpecDecodeFinding,
};

use super::ExitStatus;

/// Flags of `inferbench models`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

/// The tools of `inferbench models`.
#[derive(Debug, clap::Subcommand)]
enum Sub {
    #[command(flatten)]
    Library(ModelsSub),
    /// MODELS.md's rules as checks: engine submission policy (exit 1 on a violation),
    /// spec-decode-only AgentX (deprecated non-spec-decode arms still running) and deprecation
    /// bookkeeping (the support matrix against the active and archived configs).
    #[command(
        after_help = "Output: one line per finding, then one summary line per rule:\n  engine submission policy: N violation(s)\n  spec-decode-only AgentX: N deprecated arm(s) still running\n  deprecations: N mismatch(es)\nOnly engine-policy violations fail the check; the other findings are reported.\n\nExit codes: 0 no engine-policy violation; 1 stdout or stderr could not be written (a full disk or `ulimit -f`, said on stderr, the files and database still written), or a violation; 2 bad flags, or a config or policy that does not load."
    )]
    Policy(PolicyArgs),
}

/// Output format of `models policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One line per finding, then the summary lines.
    Text,
    /// One JSON object: the findings of each rule and the summary counts.
    Json,
}

/// Flags of `inferbench models policy`.
#[derive(Debug, clap::Args)]
pub struct PolicyArgs {
    /// Active master configs (the AgentX configs the engine policy looks for are these).
    #[arg(long, num_args = 1.., default_values = ["configs/amd-master.yaml", "configs/nvidia-master.yaml"])]
    config_files: Vec<PathBuf>,
    /// Directory of archived master configs (every *.yaml / *.yml in it). Default:
    /// `deprecated/` beside the first --config-files file, else configs/deprecated.
    #[arg(long)]
    deprecated_dir: Option<PathBuf>,
    /// Policy YAML: model-to-engine mapping, framework-to-engine patterns, exception SKUs,
    /// waivers (by config key, with a reason) and the support matrix. Default: MODELS.md's, as
    /// embedded (see --print-policy).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Print the embedded default policy YAML (a starting point for --policy) and exit.
    #[arg(long, conflicts_with_all = ["policy", "format"])]
    print_policy: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: Format,
}

/// Runs `inferbench models`.
pub fn run(args: Args) -> anyhow::Result<ExitStatus> {
    match args.command {
        Sub::Library(sub) => sub.run(),
        Sub::Policy(p) => run_policy(p),
    }
}

fn emit(text: &str) -> anyhow::Result<()> {
    // Its errors decide the exit status at the end ([`crate::stdout`]).
    out!("{text}");
    Ok(())
}

fn run_policy(args: PolicyArgs) -> anyhow::Result<ExitStatus> {
    if args.print_policy {
        emit(policy::DEFAULT_POLICY)?;
        return Ok(ExitStatus::Ok);
    }
    let pol = match &args.policy {
        Some(p) => Policy::load(p).context("--policy")?,
        None => Policy::embedded(),
    };
    let (archived_files, note) = deprecated_files(&args.config_files, args.deprecated_dir)?;
    let configs = load_master_configs(&args.config_files)?;
    let archived = policy::read_archived(&archived_files)?;
    let report = policy::check(&pol, &configs, &archived);
    match args.format {
        Format::Text => emit(&render(&report))?,
        Format::Json => emit(&format!("{}\n", json(&pol, &report)?))?,
    }
    if let Some(what) = note {
        errln!(
            "note: {what}; no archived configs read, so the deprecation check saw active configs \
             only (give --deprecated-dir)"
        );
    }
    for key in pol.waivers.keys().filter(|k| configs.get(k).is_none()) {
        errln!("note: the policy's waiver for {key} matches no config key in --config-files");
    }
    Ok(ExitStatus::failed_if(report.violations() > 0))
}

/// The three summary lines, one per rule.
pub fn summary(r: &PolicyReport) -> [String; 3] {
    [
        format!("engine submission policy: {} violation(s)", r.violations()),
        format!(
            "spec-decode-only AgentX: {} deprecated arm(s) still running",
            r.spec_decode_only.len()
        ),
        format!("deprecations: {} mismatch(es)", r.deprecations.len()),
    ]
}

fn engine_line(f: &EngineFinding) -> String {
    let runs = format!(
        "{}: {}: model {} on {} runs {} (framework {})",
        f.location, f.config, f.model, f.sku, f.engine, f.framework
    );
    let missing = f.missing_engine.as_deref();
    match (f.verdict, missing) {
        (EngineVerdict::Violation, Some(m)) => format!(
            "engine-policy violation: {runs} with no {m} AgentX config for {} on {} (missing engine: {m})",
            f.model, f.sku
        ),
        (EngineVerdict::Violation, None) => format!(
            "engine-policy violation: {runs}, but the policy maps no engine to {} (missing engine: unknown; add the model under `models:` in the policy)",
            f.model
        ),
        (EngineVerdict::NewHardware, m) => format!(
            "engine-policy new-hardware: {runs} before {}; allowed: {} is new hardware ({})",
            m.unwrap_or("a mapped engine"),
            f.sku,
            f.reason
        ),
        (EngineVerdict::Waived, m) => format!(
            "engine-policy waived: {runs} before {}; waiver: {}",
            m.unwrap_or("a mapped engine"),
            f.reason
        ),
    }
}

fn spec_line(f: &SpecDecodeFinding) -> String {
    format!(
        "deprecated arm: {}: {}.{}: model {} on {}, framework {}, spec-decoding none; spec-decode sibling on {}/{}: {}",
        f.location,
        f.config,
        f.entry,
        f.model,
        f.sku,
        f.framework,
        f.sku,
        f.framework,
        f.sibling.as_deref().unwrap_or("none")
    )
}

fn deprecation_line(f: &DeprecationFinding) -> String {
    let at = format!("deprecation mismatch: {}: {}", f.location, f.config);
    // `kimik2.6 (row kimik2.5)`: the config's prefix, and the support-matrix row it falls under.
    let model = match &f.matrix_row {
        Some(row) => format!("{} (MODELS.md row {row})", f.model),
        None => f.model.clone(),
    };
    match f.kind {
        DeprecationKind::DeprecatedButActive => format!(
            "{at}: model {model} runs {} at {} in an active config, but MODELS.md lists it deprecated",
            f.scenario, f.precision
        ),
        DeprecationKind::NotListedActive => format!(
            "{at}: model {model} runs {} at {} in an active config, but MODELS.md lists {} neither active nor deprecated for it",
            f.scenario, f.precision, f.scenario
        ),
        DeprecationKind::UnlistedModel => format!(
            "{at}: model prefix {} is in an active config but not in MODELS.md's support matrix",
            f.model
        ),
        DeprecationKind::ActiveButArchived => format!(
            "{at}: MODELS.md lists {model} {} active, but only archived configs run it",
            f.scenario
        ),
    }
}

/// The text output: one line per finding (engine policy, spec-decode-only, deprecations),
/// then [`summary`].
pub fn render(r: &PolicyReport) -> String {
    let lines = (r.engine_policy.iter().map(engine_line))
        .chain(r.spec_decode_only.iter().map(spec_line))
        .chain(r.deprecations.iter().map(deprecation_line))
        .chain(summary(r));
    lines.map(|l| l + "\n").collect()
}

fn json(pol: &Policy, r: &PolicyReport) -> anyhow::Result<String> {
    let mut v = serde_json::to_value(r)?;
    if let Some(o) = v.as_object_mut() {
        o.insert("policy".into(), pol.file.clone().into());
        o.insert(
            "summary".into(),
            serde_json::json!({
                "engine_policy_violations": r.violations(),
                "deprecated_arms_running": r.spec_decode_only.len(),
                "deprecation_mismatches": r.deprecations.len(),
            }),
        );
    }
    Ok(serde_json::to_string_pretty(&v)?)
}
