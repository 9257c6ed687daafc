//! `inferbench models`: catalogue tools over InferenceX master configs — the support matrix
//! (active and deprecated scenarios per model prefix), the KV-offload DRAM policy check, and the
//! CI priority score and queue token added to a matrix (InferenceX's `ci_priority.py`).

use std::path::PathBuf;

use anyhow::Context;
use inferbench_recipes::catalogue::{self, CiPriority, PriorityContext};
use inferbench_recipes::schema::{MasterConfigs, RunnerConfig};

/// Flags of `inferbench models`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Support matrix: per model prefix and scenario, active vs deprecated, with precisions,
    /// frameworks and runner labels.
    Support {
        /// Active master configs.
        #[arg(long, num_args = 1.., default_values = ["configs/amd-master.yaml", "configs/nvidia-master.yaml"])]
        config_files: Vec<PathBuf>,
        /// Directory of deprecated master configs (every *.yaml / *.yml in it); must exist when
        /// given. Default: configs/deprecated when it exists (a note on stderr otherwise).
        #[arg(long)]
        deprecated_dir: Option<PathBuf>,
        /// Output as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// KV-offload DRAM policy check of every `kv-offloading: dram` agentic entry, and runner
    /// labels missing from the runner config. Exit code 1 when anything is an error.
    DramCheck {
        /// Active master configs.
        #[arg(long, num_args = 1.., default_values = ["configs/amd-master.yaml", "configs/nvidia-master.yaml"])]
        config_files: Vec<PathBuf>,
        /// Runner labels and hardware facts.
        #[arg(long, default_value = "configs/runners.yaml")]
        runner_config: PathBuf,
        /// Output as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Add `priority`, `queue-token` (and `skip-queue-pr`) to every job of a matrix JSON, as
    /// InferenceX's `utils/ci_priority.py` does with the same flags; writes the result to stdout.
    Priority {
        /// Matrix JSON file (a list, or the bucketed object `inferbench changelog` prints);
        /// default stdin.
        #[arg(long, visible_alias = "matrix")]
        input: Option<PathBuf>,
        /// ci-priority.yaml.
        #[arg(
            long,
            visible_alias = "ci-priority",
            default_value = "configs/ci-priority.yaml"
        )]
        policy: PathBuf,
        /// GitHub event name (`push`, `pull_request`, …).
        #[arg(long, visible_alias = "event", default_value = "")]
        event_name: String,
        /// PR labels as a JSON array of strings.
        #[arg(long, default_value = "[]")]
        labels_json: String,
        /// More PR labels (with those of --labels-json).
        #[arg(long, num_args = 0..)]
        labels: Vec<String>,
        /// Queue-token namespace (e.g. the repository and run id).
        #[arg(long, visible_alias = "namespace", default_value = "local")]
        queue_namespace: String,
        /// PR number; with the skip-queue label every job gets `skip-queue-pr: <number>`.
        #[arg(long)]
        pr_number: Option<i64>,
        /// Only these classifier facts count (a JSON array of strings; empty or null = all).
        #[arg(long, default_value = "")]
        criteria_json: String,
    },
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// A `--labels-json`/`--criteria-json` value: empty or `null` = None, else a JSON array of
/// strings.
fn json_strings(raw: &str, flag: &str) -> anyhow::Result<Option<Vec<String>>> {
    if raw.is_empty() {
        return Ok(None);
    }
    let v: serde_json::Value =
        serde_json::from_str(raw).map_err(|e| anyhow::anyhow!("{flag}: not JSON ({e}): {raw}"))?;
    match v {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::Array(a) => a
            .into_iter()
            .map(|x| match x {
                serde_json::Value::String(s) => Ok(s),
                _ => Err(anyhow::anyhow!("{flag} must be a JSON array of strings")),
            })
            .collect::<anyhow::Result<Vec<_>>>()
            .map(Some),
        _ => anyhow::bail!("{flag} must be a JSON array of strings"),
    }
}

/// Runs the subcommand; returns the process exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    match args.command {
        Sub::Support {
            config_files,
            deprecated_dir,
            json,
        } => {
            const DEFAULT_DEPRECATED: &str = "configs/deprecated";
            let dir = deprecated_dir.or_else(|| {
                let d = PathBuf::from(DEFAULT_DEPRECATED);
                d.is_dir().then_some(d)
            });
            let default_found = dir.is_some();
            let mut deprecated: Vec<PathBuf> = Vec::new();
            if let Some(dir) = dir {
                let rd = std::fs::read_dir(&dir).with_context(|| {
                    format!("--deprecated-dir: cannot read directory {}", dir.display())
                })?;
                for e in rd {
                    let p = e
                        .with_context(|| {
                            format!("--deprecated-dir: cannot list {}", dir.display())
                        })?
                        .path();
                    if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                        deprecated.push(p);
                    }
                }
            }
            deprecated.sort();
            let rows = catalogue::support_matrix(&config_files, &deprecated)?;
            if json {
                emit(&format!("{}\n", serde_json::to_string_pretty(&rows)?))?;
            } else {
                emit(&catalogue::support_table(&rows))?;
            }
            if !default_found {
                eprintln!("note: {DEFAULT_DEPRECATED} not found; listed active configs only (give --deprecated-dir)");
            }
            Ok(0)
        }
        Sub::DramCheck {
            config_files,
            runner_config,
            json,
        } => {
            let configs = MasterConfigs::load(&config_files)?;
            let runners = RunnerConfig::load(&runner_config)?;
            let findings = catalogue::dram_policy_check(&configs, &runners);
            let errors = findings.iter().filter(|f| f.verdict == "error").count();
            if json {
                emit(&format!("{}\n", serde_json::to_string_pretty(&findings)?))?;
            } else {
                emit(&catalogue::dram_table(&findings))?;
                let count = |v: &str| findings.iter().filter(|f| f.verdict == v).count();
                eprintln!(
                    "{} findings: {} ok, {} capped, {errors} errors",
                    findings.len(),
                    count("ok"),
                    count("capped")
                );
            }
            Ok(if errors > 0 { 1 } else { 0 })
        }
        Sub::Priority {
            input,
            policy,
            event_name,
            labels_json,
            labels,
            queue_namespace,
            pr_number,
            criteria_json,
        } => {
            let cfg = CiPriority::load(&policy)?;
            let mut all_labels = json_strings(&labels_json, "--labels-json")?.unwrap_or_default();
            all_labels.extend(labels);
            let ctx = PriorityContext {
                event_name,
                labels: all_labels,
                queue_namespace,
                pr_number,
                criteria: json_strings(&criteria_json, "--criteria-json")?
                    .map(|v| v.into_iter().collect()),
            };
            let (name, text) = match &input {
                Some(p) => (
                    p.display().to_string(),
                    std::fs::read_to_string(p)
                        .with_context(|| format!("cannot read {}", p.display()))?,
                ),
                None => {
                    let mut t = String::new();
                    std::io::Read::read_to_string(&mut std::io::stdin(), &mut t)
                        .context("cannot read stdin")?;
                    ("<stdin>".to_string(), t)
                }
            };
            let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                anyhow::anyhow!("{name}:{}:{}: not JSON: {e}", e.line(), e.column())
            })?;
            let out = catalogue::annotate_jobs(&v, &cfg, &ctx)?;
            emit(&catalogue::annotated_text(&out))?;
            Ok(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::{Args as _, Command};

    #[test]
    fn clap_definition_is_valid() {
        let cmd = super::Args::augment_args(Command::new("models"));
        cmd.clone().debug_assert();
        assert!(cmd
            .clone()
            .try_get_matches_from(["models", "support", "--json"])
            .is_ok());
        assert!(cmd
            .try_get_matches_from([
                "models", "priority", "--matrix", "m.json", "--event", "push", "--labels", "a", "b"
            ])
            .is_ok());
    }
}
