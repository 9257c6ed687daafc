//! `inferbench changelog`: jobs added to `perf-changelog.yaml` between two revisions, bucketed as
//! InferenceX's `process_changelog.py` prints them. The revisions are either two files
//! (`--base FILE --head FILE`) or two git refs of a repository (`--repo DIR --base-ref R
//! --head-ref R`, read with `git show`). `--check` only validates the head file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use inferbench_recipes::changelog::{self, BaseConfigs, ProcessOptions};
use inferbench_recipes::schema::{MasterConfigs, RunnerConfig};

/// Flags of `inferbench changelog`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Base changelog file (with --head).
    #[arg(long, requires = "head", conflicts_with = "repo")]
    pub base: Option<PathBuf>,
    /// Head changelog file (with --base).
    #[arg(long)]
    pub head: Option<PathBuf>,
    /// Git repository to read both revisions from (with --base-ref and --head-ref; --check needs
    /// only --head-ref).
    #[arg(long, requires = "head_ref")]
    pub repo: Option<PathBuf>,
    /// Base git ref; with --base/--head files it is only recorded in the metadata.
    #[arg(long)]
    pub base_ref: Option<String>,
    /// Head git ref; with --base/--head files it is only recorded in the metadata.
    #[arg(long)]
    pub head_ref: Option<String>,
    /// Changelog path inside the repository.
    #[arg(long, default_value = "perf-changelog.yaml")]
    pub changelog_file: String,
    /// Master configs at head (default: the repository's configs/amd-master.yaml and
    /// configs/nvidia-master.yaml, in that order, like InferenceX's MASTER_CONFIGS).
    #[arg(long, num_args = 1..)]
    pub config_files: Vec<PathBuf>,
    /// Master configs at base, for append-only entries (with --repo they are read from the
    /// base ref).
    #[arg(long, num_args = 1..)]
    pub base_config_files: Vec<PathBuf>,
    /// Runner labels and hardware facts.
    #[arg(long)]
    pub runner_config: Option<PathBuf>,
    /// Keep only the lowest concurrency of each throughput curve (PR label `sweep-enabled`).
    #[arg(long)]
    pub trim_conc: bool,
    /// Expand every entry's eval selection without changing throughput.
    #[arg(long)]
    pub all_evals: bool,
    /// Suppress throughput for every entry.
    #[arg(long)]
    pub evals_only: bool,
    /// Only validate the head changelog file (validate_perf_changelog.py rules) and exit; needs
    /// only --head (or --repo with --head-ref); with a base too, existing entries must also be
    /// unchanged.
    #[arg(long)]
    pub check: bool,
    /// Write the JSON here instead of stdout.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
    /// Which line diff selects the additions: `git` (git's own, options pinned), `builtin`
    /// (this program's, equal to git's), or `auto` (git when installed, else builtin).
    #[arg(long, value_enum, default_value_t = DiffEngine::Auto)]
    pub diff: DiffEngine,
}

/// The line diff used for the additions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DiffEngine {
    /// git when it can be started, else builtin.
    Auto,
    /// `git -c diff.algorithm=myers -c diff.indentHeuristic=true diff --no-ext-diff --no-color
    /// --unified=3` (`--no-index` for two files).
    Git,
    /// The built-in diff ([`inferbench_recipes::linediff`]).
    Builtin,
}

/// The additions from base to head: git's diff (of the two files, or of the two refs), or the
/// built-in one where git is absent (`auto`) or asked for.
fn additions(
    args: &Args,
    base_text: &str,
    head_text: &str,
    base_name: &str,
) -> anyhow::Result<changelog::Added> {
    use inferbench_recipes::linediff::{self, GitError};
    if args.diff != DiffEngine::Builtin {
        let git = match (&args.repo, &args.base, &args.head) {
            (Some(repo), _, _) => linediff::git_diff_refs(
                repo,
                args.base_ref.as_deref().unwrap_or_default(),
                args.head_ref.as_deref().unwrap_or_default(),
                &args.changelog_file,
            ),
            (None, Some(_), Some(_)) => linediff::git_diff_texts(base_text, head_text),
            _ => bail!("no base and head to diff"),
        };
        match git {
            Ok(text) => return Ok(changelog::added_from_diff(&text, head_text, base_name)?),
            Err(GitError::Missing(e)) if args.diff == DiffEngine::Auto => {
                eprintln!("note: git not available ({e}); using the built-in diff");
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(changelog::added_lines(base_text, head_text, base_name)?)
}

const MASTER_CONFIGS: [&str; 2] = ["configs/amd-master.yaml", "configs/nvidia-master.yaml"];

fn git_show(repo: &Path, rev: &str, path: &str) -> anyhow::Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .arg("show")
        .arg(format!("{rev}:{path}"))
        .output()
        .context("running git")?;
    if !out.status.success() {
        bail!(
            "git show {rev}:{path} in {} failed: {}",
            repo.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout).with_context(|| format!("{rev}:{path} is not UTF-8"))
}

fn read_file(p: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))
}

/// `--check`: validates the head file alone, or against the base when one is given.
fn check(args: &Args) -> anyhow::Result<i32> {
    let (head_name, head_text, base_text) = match (&args.repo, &args.head) {
        (Some(repo), _) => {
            let h = args.head_ref.clone().unwrap_or_default();
            let base = match &args.base_ref {
                Some(b) => Some(git_show(repo, b, &args.changelog_file)?),
                None => None,
            };
            (
                format!("{h}:{}", args.changelog_file),
                git_show(repo, &h, &args.changelog_file)?,
                base,
            )
        }
        (None, Some(h)) => (
            h.display().to_string(),
            read_file(h)?,
            args.base.as_deref().map(read_file).transpose()?,
        ),
        (None, None) => bail!("--check needs --head FILE, or --repo DIR --head-ref REF"),
    };
    let entries = changelog::validate_file(&head_text, &head_name, base_text.as_deref())?;
    eprintln!("{head_name}: {} entries, valid", entries.len());
    Ok(0)
}

/// Runs the subcommand; returns the process exit code.
pub fn run(args: Args) -> anyhow::Result<i32> {
    if args.check {
        return check(&args);
    }
    let root = args.repo.clone().unwrap_or_else(|| PathBuf::from("."));
    let (base_name, head_name, base_text, head_text) = match (&args.repo, &args.base, &args.head) {
        (Some(repo), _, _) => {
            let Some(b) = args.base_ref.clone() else {
                bail!("--repo needs --base-ref (only --check works without a base)");
            };
            let h = args.head_ref.clone().unwrap_or_default();
            let bt = git_show(repo, &b, &args.changelog_file)?;
            let ht = git_show(repo, &h, &args.changelog_file)?;
            (
                format!("{b}:{}", args.changelog_file),
                format!("{h}:{}", args.changelog_file),
                bt,
                ht,
            )
        }
        (None, Some(b), Some(h)) => (
            b.display().to_string(),
            h.display().to_string(),
            read_file(b)?,
            read_file(h)?,
        ),
        _ => bail!(
            "give either --base FILE --head FILE, or --repo DIR --base-ref REF --head-ref REF (--check needs only the head)"
        ),
    };
    let added = additions(&args, &base_text, &head_text, &base_name)?;
    let entries = changelog::parse_entries(&added, &head_name)?;
    let config_files: Vec<PathBuf> = if args.config_files.is_empty() {
        MASTER_CONFIGS.iter().map(|p| root.join(p)).collect()
    } else {
        args.config_files.clone()
    };
    let configs = MasterConfigs::load(&config_files)?;
    let runners = RunnerConfig::load(
        &args
            .runner_config
            .clone()
            .unwrap_or_else(|| root.join("configs/runners.yaml")),
    )?;
    let needs_base = entries.iter().any(|e| e.append_only);
    let base_configs = if !needs_base {
        None
    } else if !args.base_config_files.is_empty() {
        Some(MasterConfigs::load(&args.base_config_files)?)
    } else if let (Some(repo), Some(b)) = (&args.repo, &args.base_ref) {
        let mut sources = Vec::new();
        for p in MASTER_CONFIGS {
            sources.push((format!("{b}:{p}"), git_show(repo, b, p)?));
        }
        let refs: Vec<(&str, &str)> = sources
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        Some(MasterConfigs::from_sources(&refs)?)
    } else {
        bail!("append-only entries need the base master configs: give --base-config-files or use --repo")
    };
    let opts = ProcessOptions {
        trim_conc: args.trim_conc,
        all_evals: args.all_evals,
        evals_only: args.evals_only,
        base_ref: args.base_ref.clone().unwrap_or(base_name),
        head_ref: args.head_ref.clone().unwrap_or(head_name),
    };
    let value = changelog::process(
        &entries,
        &configs,
        &runners,
        &opts,
        base_configs.as_ref().map(|c| BaseConfigs { configs: c }),
    )?;
    let text = changelog::to_json_text(&value);
    match &args.output {
        Some(p) => {
            std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display()))?
        }
        None => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    return Err(e.into());
                }
            }
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use clap::{Args as _, Command};

    #[test]
    fn clap_definition_is_valid() {
        let cmd = super::Args::augment_args(Command::new("changelog"));
        cmd.clone().debug_assert();
        assert!(cmd
            .clone()
            .try_get_matches_from(["changelog", "--base", "a", "--head", "b", "--trim-conc"])
            .is_ok());
        assert!(cmd
            .clone()
            .try_get_matches_from(["changelog", "--base", "a"])
            .is_err());
        assert!(cmd
            .clone()
            .try_get_matches_from(["changelog", "--repo", ".", "--base-ref", "x"])
            .is_err());
        assert!(cmd
            .try_get_matches_from(["changelog", "--head", "b", "--check"])
            .is_ok());
    }
}
