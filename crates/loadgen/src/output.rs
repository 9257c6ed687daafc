//! Outputs of a run: request records streamed to JSON lines as they finish, the vLLM-shaped
//! result JSON, InferenceX's `agg_<RESULT_FILENAME>.json`, and the console report.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use inferbench_core::metrics::Metric;
use inferbench_core::summary::keys::Stat;
use inferbench_core::summary::{inferencex_aggregate, ClientCheck, Extras, RunSummary, StopReason};
use inferbench_core::RequestRecord;
use std::collections::BTreeMap;
use tokio::sync::mpsc;

use crate::kept::KeptRecords;
use crate::options::BenchOptions;
use crate::progress::Counters;

/// Why an output path cannot be reached because of a dangling symbolic link on its way, or
/// `None` (issue 39, fresh tester's finding 2: `selftest --json dl` and `eval --result-dir dl2`,
/// links into a folder that does not exist, ran everything and failed at the end). `path` and
/// each of its ancestors not there (following links) are looked at, nearest first; the first
/// that is a symbolic link is dangling: a folder is never created at a link's far end, so
///
/// - `path` itself a link, written as a file (`dir_output: false`): fine when the folder of the
///   file its chain ends at exists (the write follows the link and creates that file; its
///   folder is then probed like any other), else `it is a symbolic link to END, whose folder
///   DIR does not exist …`;
/// - a link as a folder (`path` with `dir_output`, or an ancestor): `… is a symbolic link to
///   END, which does not exist …`;
/// - a loop of links: `… a loop of symbolic links …`.
pub fn dangling_link_problem(path: &Path, dir_output: bool) -> Option<String> {
    let mut at = Some(path);
    while let Some(p) = at.filter(|p| !p.as_os_str().is_empty()) {
        if std::fs::metadata(p).is_ok() {
            return None;
        }
        if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
            let Some(end) = inferbench_core::probe::link_chain_end(p) else {
                return Some(format!(
                    "{} is a loop of symbolic links (or more than {} in a chain)",
                    p.display(),
                    inferbench_core::probe::MAX_LINKS
                ));
            };
            if p == path && !dir_output {
                let folder = end
                    .parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                if folder.is_dir() {
                    return None;
                }
                return Some(format!(
                    "it is a symbolic link to {}, whose folder {} does not exist (a write \
                     follows the link, and no folder is created at a link's far end): create \
                     that folder or give another path",
                    end.display(),
                    folder.display()
                ));
            }
            return Some(format!(
                "{} is a symbolic link to {}, which does not exist (no folder is created at a \
                 link's far end): create that folder or give another path",
                p.display(),
                end.display()
            ));
        }
        at = p.parent();
    }
    None
}

/// Where a write to the file `path` lands: the end of its chain of symbolic links when `path`
/// is one (a dangling link is written through, as every output is), else `path`.
pub fn write_target(path: &Path) -> PathBuf {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            inferbench_core::probe::link_chain_end(path).unwrap_or_else(|| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// Why the directory `dir` could not be created and written at the end of a run, checked up
/// front without creating it (a refused run leaves no directory behind), or `None`: a dangling
/// symbolic link on its way ([`dangling_link_problem`]); an existing `dir` must be a directory
/// that takes a new file (probed by creating and removing `.inferbench-write-probe-<pid>`); a
/// missing one, its nearest existing ancestor. `eval --result-dir`'s and a sweep's `--out`'s
/// check.
pub fn dir_uncreatable(dir: &Path) -> Option<String> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if let Some(why) = dangling_link_problem(dir, true) {
        return Some(why);
    }
    let mut at = dir;
    while !at.exists() {
        match at.parent() {
            Some(p) if !p.as_os_str().is_empty() => at = p,
            _ => {
                at = Path::new(".");
                break;
            }
        }
    }
    if !at.is_dir() {
        return Some(format!("{} is not a directory", at.display()));
    }
    match inferbench_core::probe::can_create_in(at) {
        Ok(()) => None,
        Err(e) => Some(format!("cannot create a file in {}: {e}", at.display())),
    }
}

/// Why no file can be created in `dir` (created first, with its parents), or `None`: probed
/// by creating and removing `.inferbench-write-probe-<pid>` there.
fn dir_problem(dir: &Path) -> Option<String> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if let Some(why) = dangling_link_problem(dir, true) {
        return Some(why);
    }
    if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
        return Some(format!("{} is not a directory", dir.display()));
    }
    if let Err(e) = std::fs::create_dir_all(dir) {
        return Some(format!(
            "cannot create the directory {}: {e}",
            dir.display()
        ));
    }
    match inferbench_core::probe::can_create_in(dir) {
        Ok(()) => None,
        Err(e) => Some(format!("cannot create a file in {}: {e}", dir.display())),
    }
}

/// Checks, before any request is sent, that a file can be created in `dir` (created first,
/// with its parents), by creating and removing a probe file `.inferbench-write-probe-<pid>`
/// (issue 39 §8: an unwritable `--result-dir` was found only after the run).
///
/// # Errors
/// `FLAG DIR: ` and why: not a directory, `cannot create the directory …: <OS error>` or
/// `cannot create a file in …: <OS error>`.
pub fn check_dir_writable(flag: &str, dir: &Path) -> anyhow::Result<()> {
    match dir_problem(dir) {
        Some(why) => anyhow::bail!("{flag} {}: {why}", dir.display()),
        None => Ok(()),
    }
}

/// Why an existing `path` is not a file a run may write (replace), or `None` when it is a
/// regular file (a symlink is followed) or does not exist: `it is a directory`, `it is not a
/// regular file (a FIFO)` (character device, block device, socket). Issue 39 §1: a result
/// written to `/dev/full` or a FIFO replaced the node with a JSON file.
pub fn non_regular(path: &Path) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    // A file of the kernel's /proc or /sys (or a link into them, `/dev/stdout`) takes no
    // data: it opens, then the write fails (issue 39, second round, finding 5).
    if let Some(k) = inferbench_core::probe::kernel_file(path) {
        return Some(format!(
            "it is a file of the kernel's {k} filesystem, which takes no data"
        ));
    }
    if m.is_file() {
        return None;
    }
    if m.is_dir() {
        return Some("it is a directory".into());
    }
    Some(format!("it is not a regular file ({})", file_kind(&m)))
}

/// What a non-regular file is, in words.
fn file_kind(m: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        let t = m.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    let _ = m;
    "not a file"
}

/// Checks, before any request is sent, that the file `path` can be written: it is missing or
/// a regular file (anything else, a directory, FIFO, device or socket, is refused: issue 39
/// §1), an existing one is opened for writing without truncating it, a new one needs a
/// writable directory (as [`check_dir_writable`]); a dangling symbolic link is written
/// through, so the folder its chain ends in must exist ([`dangling_link_problem`]). The one
/// up-front check of every file output (`bench`'s, `selftest --json`, `quickstart --chart`,
/// `plot --out`, …).
///
/// # Errors
/// `FLAG PATH: ` and why: [`non_regular`]'s reason, `cannot write it: <OS error>`, or its
/// directory's problem.
pub fn check_file_writable(flag: &str, path: &Path) -> anyhow::Result<()> {
    let why = match std::fs::metadata(path) {
        Ok(_) => non_regular(path).or_else(|| {
            std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .err()
                .map(|e| format!("cannot write it: {e}"))
        }),
        Err(_) => match dangling_link_problem(path, false) {
            Some(why) => Some(why),
            // A dangling link whose far folder exists: that folder is probed.
            None => dir_problem(write_target(path).parent().unwrap_or(Path::new("."))),
        },
    };
    match why {
        Some(why) => anyhow::bail!("{flag} {}: {why}", path.display()),
        None => Ok(()),
    }
}

/// Checks that each of `names` in `dir` that exists is a regular file ([`non_regular`]): the
/// fixed files a command writes into a directory it was given (replay's `summary.json`, eval's
/// samples, …), before any request.
///
/// # Errors
/// `FLAG DIR: NAME: ` and [`non_regular`]'s reason, for the first refused.
pub fn check_files_in_dir(flag: &str, dir: &Path, names: &[&str]) -> anyhow::Result<()> {
    for n in names {
        if let Some(why) = non_regular(&dir.join(n)) {
            anyhow::bail!("{flag} {}: {n}: {why}", dir.display());
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` (through a symbolic link, to the file its chain ends at:
/// [`write_target`]) through `<path>.tmp` renamed onto it, every error checked
/// (the write, the flush to disk, the rename). An existing `path` that is not a regular
/// file ([`non_regular`]) is never replaced: checked again just before the rename.
///
/// # Errors
/// `cannot create|writing|cannot write PATH: <OS error>`, or `PATH: ` and [`non_regular`]'s
/// reason; the temporary file is removed.
pub fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    // A symbolic link is written through, as every output is (issue 39, fresh tester's finding
    // 4: the rename replaced a `--result-filename` link instead of following it).
    let target = write_target(path);
    let path = target.as_path();
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    if let Some(why) = non_regular(&tmp) {
        anyhow::bail!("{}: {why}", tmp.display());
    }
    via_temp(&tmp, path, || {
        let mut f =
            File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        f.write_all(bytes)
            .and_then(|()| f.sync_data())
            .with_context(|| format!("writing {}", tmp.display()))
    })
}

/// Writes `path` as [`write_file`] does (through `<path>.tmp`, renamed onto it once `write`
/// filled it and it reached the disk; a symbolic link written through; an existing `path`
/// that is not a regular file never replaced), `write` streaming into a buffered writer of
/// the temporary file, so that an output too large to hold in memory is never left cut
/// short: a write that fails (a full disk, `ulimit -f`) leaves `path` as it was (issue 39, a
/// fresh tester's finding 3: `agentx-traces -o t.jsonl` left a 20,480-byte file).
///
/// # Errors
/// `cannot create|writing|cannot write PATH: <OS error>` or `write`'s own, or `PATH: ` and
/// [`non_regular`]'s reason; the temporary file is removed.
pub fn write_streamed(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let target = write_target(path);
    let path = target.as_path();
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    if let Some(why) = non_regular(&tmp) {
        anyhow::bail!("{}: {why}", tmp.display());
    }
    via_temp(&tmp, path, || {
        let f = File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        let mut out = BufWriter::new(f);
        write(&mut out).with_context(|| format!("writing {}", tmp.display()))?;
        out.flush()
            .with_context(|| format!("writing {}", tmp.display()))?;
        let f = out
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("writing {}", tmp.display()))?;
        f.sync_data()
            .with_context(|| format!("writing {}", tmp.display()))
    })
}

/// Runs `write` (which fills `tmp`), then renames `tmp` onto `path` ([`rename_onto`]); `tmp`
/// is listed in `inferbench_core::tempfiles` while it exists (so an end without destructors
/// removes it too) and removed when either step fails (issue 39, fresh tester's finding 3: no
/// temporary file is left on any path). The one way every result file here is written.
fn via_temp(
    tmp: &Path,
    path: &Path,
    write: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let _pending = inferbench_core::tempfiles::register(tmp);
    let res = write().and_then(|()| rename_onto(tmp, path));
    if res.is_err() {
        std::fs::remove_file(tmp).ok();
    }
    res
}

/// Renames `tmp` onto `path` unless `path` exists and is not a regular file.
fn rename_onto(tmp: &Path, path: &Path) -> anyhow::Result<()> {
    if let Some(why) = non_regular(path) {
        anyhow::bail!("{}: {why}", path.display());
    }
    std::fs::rename(tmp, path).with_context(|| format!("cannot write {}", path.display()))
}

/// Checks a `--result-filename`: a file name or a relative path with no `..` component
/// (it stays inside `--result-dir`), or an absolute path (vLLM joins the two, so an absolute
/// name goes where it says). Issue 39 §1: `../../../../dev/full` escaped `--result-dir`.
///
/// # Errors
/// `--result-filename NAME: ` why: empty, or a `..` component.
pub fn check_result_filename(name: &str) -> anyhow::Result<()> {
    let p = Path::new(name);
    if name.is_empty() || p.file_name().is_none() {
        anyhow::bail!("--result-filename {name:?}: not a file name");
    }
    if p.components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        anyhow::bail!(
            "--result-filename {name}: a `..` component leaves --result-dir; give a name inside \
             it (or an absolute path)"
        );
    }
    Ok(())
}

/// Every path a point will write, checked before any request is sent (issue 39 §8):
/// `--save-requests`, and with `--save-result`, a job identity or `--result-dir` the result
/// directory (created) and a `--result-filename` given. `--db` is checked by its caller
/// (`Store::check_target`). No two of these paths, nor the dataset, may name one file
/// ([`crate::samefile::check_distinct`]).
///
/// # Errors
/// Two paths naming one file; the first path that cannot be written, as [`check_file_writable`] and
/// [`check_dir_writable`] name it.
pub fn check_output_paths(opts: &BenchOptions) -> anyhow::Result<()> {
    // No two of its paths one file (an output over the dataset or over another output).
    crate::samefile::check_distinct(&crate::samefile::bench_paths(opts))?;
    if let Some(p) = &opts.save_requests {
        check_file_writable("--save-requests", p)?;
    }
    if opts.save_result || opts.job_identity.is_some() || opts.result_dir.is_some() {
        let dir = opts
            .result_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("."));
        check_dir_writable("--result-dir", &dir)?;
        if let (true, Some(name)) = (opts.save_result, &opts.result_filename) {
            check_result_filename(name)?;
            check_file_writable("--result-filename", &dir.join(name))?;
        }
        // The side files the point may write there (`<stem>.server_metrics.jsonl`, …; with a
        // default name the stem is a fresh one), and the InferenceX aggregate.
        for side in SIDE_FILES {
            if let Some(p) = side_file(opts, "", side) {
                if opts.result_filename.is_some() || !opts.save_result {
                    if let Some(why) = non_regular(&p) {
                        anyhow::bail!("--result-dir {}: {}: {why}", dir.display(), p.display());
                    }
                }
            }
        }
        if let Some(id) = &opts.job_identity {
            let p = dir.join(id.aggregate_file_name());
            if let Some(why) = non_regular(&p) {
                anyhow::bail!("--result-dir {}: {}: {why}", dir.display(), p.display());
            }
        }
    }
    Ok(())
}

/// The side files a point writes beside its result ([`side_file`]): with `power.csv` its two
/// energy snapshots (`inferbench_telemetry::energy::snapshot_paths` names them so).
pub const SIDE_FILES: [&str; 5] = [
    "server_metrics.jsonl",
    "power.csv",
    "power_validation.json",
    "power_energy_start.csv",
    "power_energy_end.csv",
];

/// `--save-requests` writer: one [`RequestRecord`] JSON object per line, flushed per record so
/// a crash or a kill loses at most the record being written.
#[derive(Debug)]
pub struct RecordSink {
    path: PathBuf,
    out: BufWriter<File>,
}

impl RecordSink {
    /// Creates (truncates) `path`, creating parent directories. Errors name the path.
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("--save-requests: cannot create {}", dir.display()))?;
        }
        if let Some(why) = non_regular(path) {
            anyhow::bail!("--save-requests {}: {why}", path.display());
        }
        let f = File::create(path)
            .with_context(|| format!("--save-requests: cannot create {}", path.display()))?;
        Ok(Self {
            path: path.to_path_buf(),
            out: BufWriter::new(f),
        })
    }

    /// Appends one record and flushes.
    pub fn write(&mut self, rec: &RequestRecord) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, rec)?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Receives every finished record: writes it to the sink, updates the live counters, keeps it
/// for the summary ([`KeptRecords`]: compacted, unless `full`). Returns what was kept
/// (completion order) and the first write error, if any; after a write error records are still
/// kept for the summary.
pub async fn collect(
    mut rx: mpsc::UnboundedReceiver<RequestRecord>,
    mut sink: Option<RecordSink>,
    counters: Arc<Counters>,
    full: bool,
) -> (KeptRecords, Option<String>) {
    let mut kept = KeptRecords::new(full);
    let mut error = None;
    while let Some(rec) = rx.recv().await {
        if let Some(s) = sink.as_mut() {
            if let Err(e) = s.write(&rec) {
                error = Some(format!("{}: {e}", s.path().display()));
                sink = None;
            }
        }
        counters.count(&rec);
        kept.push(rec);
    }
    (kept, error)
}

/// Files written by [`write_results`].
#[derive(Debug, Default)]
pub struct Written {
    /// The result JSON (`--save-result`).
    pub result: Option<PathBuf>,
    /// `agg_<RESULT_FILENAME>.json` (job identity given).
    pub aggregate: Option<PathBuf>,
}

/// vLLM's default result file name:
/// `{backend}-{rate}qps[-concurrency{c}]-{model basename}-{date}.json` (rate `inf` or Python's
/// float repr, e.g. `10.0`).
pub fn default_result_filename(opts: &BenchOptions, date: &str) -> String {
    let rate = match opts.request_rate {
        None => "inf".to_string(),
        Some(r) if r.fract() == 0.0 => format!("{r:.1}"),
        Some(r) => format!("{r}"),
    };
    let conc = opts
        .max_concurrency
        .map_or(String::new(), |c| format!("-concurrency{c}"));
    let model = opts.model.rsplit('/').next().unwrap_or(&opts.model);
    format!(
        "{}-{rate}qps{conc}-{model}-{date}.json",
        opts.backend.name()
    )
}

/// A result file name claimed in `--result-dir` by [`with_free_result_name`]: the file
/// `<result>.tmp` created exclusively (`O_EXCL`), which [`write_results`] later fills and
/// renames onto the result. Dropping the claim removes `<result>.tmp` if it is still there (a
/// run that ended before writing its result), so an unused name is free again.
///
/// The claim keeps `<result>.tmp` open until [`write_results_into`] fills it, so a run whose
/// streams used up every open file (`EMFILE`: its limit lowered under it) still writes its
/// result (trial of issue 39 §1–§3, finding 4: "cannot create ….json.tmp: Too many open
/// files", exit 2, no summary).
#[derive(Debug)]
pub struct ResultClaim {
    tmp: PathBuf,
    file: Option<File>,
    /// `tmp` listed for an end without destructors (`inferbench_core::tempfiles`).
    _pending: inferbench_core::tempfiles::Pending,
}

impl Drop for ResultClaim {
    fn drop(&mut self) {
        std::fs::remove_file(&self.tmp).ok();
    }
}

/// `opts` with its result file named for good: with `--save-result` and no
/// `--result-filename`, vLLM's default name for `date` ([`default_result_filename`]), or, when
/// `--result-dir` already holds a file of that stem (a run started in the same second: the
/// name has one-second resolution, trial 16 found the second run overwrote the first), the
/// first free `<stem>-2.json`, `<stem>-3.json`, …. The name is claimed at once
/// ([`ResultClaim`]: `<name>.tmp` created with `create_new`), so runs started together into
/// one directory, even in separate processes, never pick the same name (trial 17 found two
/// overlapping `bench … &` runs overwrote each other). A name the user gave is kept and not
/// claimed (vLLM overwrites it too). Keep the claim until the result is written.
pub fn with_free_result_name(
    mut opts: BenchOptions,
    date: &str,
) -> (BenchOptions, Option<ResultClaim>) {
    if !opts.save_result || opts.result_filename.is_some() {
        return (opts, None);
    }
    let dir = opts
        .result_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("."));
    let name = default_result_filename(&opts, date);
    let stem = name.trim_end_matches(".json");
    // An unwritable directory is write_results' error to report, naming the flag.
    if std::fs::create_dir_all(&dir).is_err() {
        return (opts, None);
    }
    // Every name in the directory: a stem is taken by its result file or any side file
    // (`<stem>.power.csv`, `<stem>.json.tmp` of a run still going, …).
    let taken: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let used = |stem: &str| {
        let dotted = format!("{stem}.");
        taken.iter().any(|f| f.starts_with(&dotted))
    };
    let candidates =
        std::iter::once(stem.to_string()).chain((2u32..).map(|n| format!("{stem}-{n}")));
    for s in candidates.filter(|s| !used(s)).take(10_000) {
        let file = format!("{s}.json");
        let tmp = dir.join(format!("{file}.tmp"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => {
                opts.result_filename = Some(file);
                let _pending = inferbench_core::tempfiles::register(&tmp);
                return (
                    opts,
                    Some(ResultClaim {
                        tmp,
                        file: Some(f),
                        _pending,
                    }),
                );
            }
            // Claimed by a run that listed the directory before us: try the next.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            // Not claimable (a read-only directory, …): the plain name, write_results reports.
            Err(_) => break,
        }
    }
    (opts, None)
}

/// Where a point's side file `name` (`server_metrics.jsonl`, `power.csv`,
/// `power_validation.json`) goes, or `None` without `--result-dir`. Beside a result file it is
/// named after it, `<result stem>.<name>` (`r.json` → `r.server_metrics.jsonl`), so several
/// `bench --save-result` runs into one `--result-dir` keep their own. A point directory (result
/// file `summary.json`: sweeps, jobs, quickstart) and a run without `--save-result` use the
/// fixed `name`, which store ingest reads there.
pub fn side_file(opts: &BenchOptions, date: &str, name: &str) -> Option<PathBuf> {
    let dir = opts.result_dir.as_ref()?;
    if !opts.save_result {
        return Some(dir.join(name));
    }
    let file = opts
        .result_filename
        .clone()
        .unwrap_or_else(|| default_result_filename(opts, date));
    let result = dir.join(file);
    let parent = result
        .parent()
        .map_or_else(|| dir.clone(), Path::to_path_buf);
    match result.file_stem().and_then(|s| s.to_str()) {
        Some(stem) if result.file_name().is_some_and(|n| n != "summary.json") => {
            Some(parent.join(format!("{stem}.{name}")))
        }
        _ => Some(parent.join(name)),
    }
}

/// Writes the result JSON (with `--save-result`) and the InferenceX aggregate (with a job
/// identity, unless the run was interrupted) into `--result-dir`. Errors name the path.
pub fn write_results(
    opts: &BenchOptions,
    summary: &RunSummary,
    date: &str,
) -> anyhow::Result<Written> {
    write_results_into(opts, summary, date, None)
}

/// [`write_results`], the result written through `claim`'s open `<result>.tmp` when it is the
/// result's (no new file descriptor needed). Errors name the path.
pub fn write_results_into(
    opts: &BenchOptions,
    summary: &RunSummary,
    date: &str,
    claim: Option<&mut ResultClaim>,
) -> anyhow::Result<Written> {
    let mut w = Written::default();
    if !opts.save_result && opts.job_identity.is_none() {
        return Ok(w);
    }
    let dir = opts
        .result_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("--result-dir: cannot create {}", dir.display()))?;
    if opts.save_result {
        let name = opts
            .result_filename
            .clone()
            .unwrap_or_else(|| default_result_filename(opts, date));
        let path = dir.join(name);
        let held = claim
            .filter(|c| c.tmp == path.with_extension("json.tmp"))
            .and_then(|c| c.file.take());
        write_json_to(&path, summary, held)?;
        w.result = Some(path);
    }
    // A run cut short (Ctrl-C) gets no InferenceX aggregate: that format has no validity field
    // and InferenceX aggregates only jobs that ran their course, so its tooling would read the
    // partial point as a valid result (trial 28). The summary says what happened, and
    // `ingest` marks the point invalid from it.
    if let (Some(id), false) = (&opts.job_identity, summary.inferbench.interrupted) {
        let agg = inferencex_aggregate(summary, id).context("building the InferenceX aggregate")?;
        let path = dir.join(id.aggregate_file_name());
        write_json(&path, &agg)?;
        w.aggregate = Some(path);
    }
    Ok(w)
}

fn write_json<T: serde::Serialize>(path: &Path, v: &T) -> anyhow::Result<()> {
    write_json_to(path, v, None)
}

/// Writes `v` to `<path>.tmp` (`held`: that file already open and empty) and renames it onto
/// `path` (through a symbolic link, onto the file its chain ends at: [`write_target`]).
fn write_json_to<T: serde::Serialize>(
    path: &Path,
    v: &T,
    held: Option<File>,
) -> anyhow::Result<()> {
    // A symbolic link is written through, as every output is (issue 39, fresh tester's
    // finding 4: the rename replaced a dangling `--result-filename` link).
    let target = write_target(path);
    let path = target.as_path();
    let tmp = path.with_extension("json.tmp");
    via_temp(&tmp, path, || {
        let f = match held {
            Some(f) => f,
            None => {
                File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?
            }
        };
        let mut out = BufWriter::new(f);
        serde_json::to_writer_pretty(&mut out, v)
            .with_context(|| format!("writing {}", tmp.display()))?;
        out.write_all(b"\n")?;
        out.flush()
            .with_context(|| format!("writing {}", tmp.display()))?;
        let f = out
            .into_inner()
            .map_err(|e| e.into_error())
            .with_context(|| format!("writing {}", tmp.display()))?;
        f.sync_data()
            .with_context(|| format!("writing {}", tmp.display()))
    })
}

/// One console line per error class (profile and warmup failures together), with its counts
/// and the class's sample message from the summary, e.g.
/// `errors: connect: 5 requests (0 profile, 5 warmup), e.g. "connection refused"`; none for
/// the classes in `except` (their error is said elsewhere: `connect`, `http_status`).
pub fn error_notes(s: &RunSummary, except: &[&str]) -> Vec<String> {
    let x = &s.inferbench;
    x.error_samples
        .iter()
        .filter(|(class, _)| !except.contains(&class.as_str()))
        .map(|(class, msg)| {
            let p = x.errors_by_class.get(class).copied().unwrap_or(0);
            let w = x.warmup_errors_by_class.get(class).copied().unwrap_or(0);
            // One console line (trial 16: a proxy's HTML error page printed whole).
            let m = inferbench_core::text::one_line(msg, 300);
            format!(
                "errors: {class}: {} requests ({p} profile, {w} warmup), e.g. {m:?}",
                p + w
            )
        })
        .collect()
}

/// One console warning per anomaly code that occurred, with its count and the first request
/// carrying it as the example (issue 11).
pub fn anomaly_notes(s: &RunSummary, records: &[RequestRecord]) -> Vec<String> {
    let x = &s.inferbench;
    inferbench_core::anomaly::examples(records)
        .into_iter()
        .map(|(a, r)| {
            format!(
                "warning: {a} in {} of {} successful requests; e.g. {}",
                x.anomalies.get(a.as_str()).copied().unwrap_or(0),
                s.completed,
                a.describe(r)
            )
        })
        .collect()
}

/// The console report, in the layout of vLLM's `bench serve` summary plus our extras: the
/// counts and rates, a section per latency (ms), our extras, the stop. Pinned byte for byte by
/// `tests/render_report.rs`.
pub fn render_report(s: &RunSummary) -> String {
    let mut o = Report::default();
    o.rule('=', " Serving Benchmark Result ");
    let x = &s.inferbench;
    if nothing_measured(s) {
        unreachable_lines(&mut o, x);
    } else {
        // Nothing succeeded: the latency sections would be all zeros (the JSON keeps them).
        let measured = s.completed > 0;
        count_lines(&mut o, s);
        if measured {
            latency_sections(&mut o, s);
        }
        extras_section(&mut o, x, measured, s.duration);
        stop_line(&mut o, x.stop_reason, measured);
    }
    o.rule('=', "");
    o.0
}

/// The console report's text: `Key:` padded to 40 columns, its value to 10 (vLLM's layout).
#[derive(Default)]
struct Report(String);

impl Report {
    fn line(&mut self, k: &str, v: String) {
        let _ = writeln!(self.0, "{k:<40}{v:<10}");
    }

    /// A 50-column rule of `fill` with `title` centred.
    fn rule(&mut self, fill: char, title: &str) {
        let _ = match fill {
            '=' => writeln!(self.0, "{title:=^50}"),
            _ => writeln!(self.0, "{title:-^50}"),
        };
    }

    /// `Key: a=1 b=2` for the non-empty `counts` (omitted when there is none).
    fn counts(&mut self, k: &str, counts: &BTreeMap<String, u64>) {
        let v: Vec<String> = counts.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if !v.is_empty() {
            self.line(k, v.join(" "));
        }
    }
}

/// Whether the run stopped at an unreachable server before any profiled request ended: the
/// report then says so instead of a page of zeros, and callers skip their own extra lines
/// (replay's plays and validity) that would describe a profile that never ran.
pub fn nothing_measured(s: &RunSummary) -> bool {
    never_answered(s) && s.inferbench.failed == 0
}

/// Whether the run stopped at an unreachable server with no request completed (some may have
/// failed inside the profile, unlike [`nothing_measured`]): there is no point to store, so
/// `bench --db` stores nothing (trial 24: a failed point of nothing was stored).
pub fn never_answered(s: &RunSummary) -> bool {
    s.inferbench.stop_reason == StopReason::ServerUnreachable && s.completed == 0
}

/// A server that never answered before the profile: nothing was measured, so the report
/// says that instead of a page of zeros (vLLM's `bench serve` stops at its test request).
fn unreachable_lines(o: &mut Report, x: &Extras) {
    o.line(
        "Stopped early:",
        "server unreachable before the profile: nothing measured".into(),
    );
    o.line(
        "Warmup requests (failed):",
        format!("{} ({})", x.warmups, x.warmup_failed),
    );
    o.counts("Warmup errors by class:", &x.warmup_errors_by_class);
    // A replay has no fixed request count: nothing "not sent" to report.
    if x.requests_not_sent > 0 {
        o.line("Requests not sent:", x.requests_not_sent.to_string());
    }
}

/// Requests (ok, failed, cancelled, not sent, warmups), concurrency, duration (s), token
/// totals and rates (req/s, tok/s).
fn count_lines(o: &mut Report, s: &RunSummary) {
    let x = &s.inferbench;
    o.line("Successful requests:", s.completed.to_string());
    o.line("Failed requests:", x.failed.to_string());
    let (cp, cw) = (x.cancelled_by_user, x.warmup_cancelled_by_user);
    if cp + cw > 0 {
        // Ctrl-C/SIGTERM: not failures, not in the error rate.
        let warm = if cw > 0 {
            format!(" (+{cw} warmup)")
        } else {
            String::new()
        };
        // Said by who cancelled: the user (Ctrl-C), or the run stopping itself.
        let who = if x.stop_reason == StopReason::Interrupted {
            "Cancelled by user (not failures):"
        } else {
            "Cancelled at the stop (not failures):"
        };
        o.line(who, format!("{cp}{warm}"));
    }
    if s.completed == 0 {
        // Every warmup failed: the profile never ran, so its "0 failed" is not a clean run.
        let line = if x.failed == 0 && x.warmups > 0 && x.warmup_failed == x.warmups {
            "No request was measured: every warmup failed, so the profile never ran; the figures below are 0."
        } else {
            "No request succeeded: the throughput figures below are 0 and no latency was measured."
        };
        let _ = writeln!(o.0, "{line}");
    }
    if x.requests_not_sent > 0 {
        o.line("Requests not sent:", x.requests_not_sent.to_string());
    }
    if x.warmups > 0 {
        o.line(
            "Warmup requests (failed):",
            format!("{} ({})", x.warmups, x.warmup_failed),
        );
    }
    if let Some(c) = s.max_concurrency {
        o.line("Maximum request concurrency:", c.to_string());
    }
    o.line("Benchmark duration (s):", format!("{:.2}", s.duration));
    o.line("Total input tokens:", s.total_input_tokens.to_string());
    o.line("Total generated tokens:", s.total_output_tokens.to_string());
    o.line(
        "Request throughput (req/s):",
        format!("{:.2}", s.request_throughput),
    );
    if let Some(g) = s.request_goodput {
        o.line("Request goodput (req/s):", format!("{g:.2}"));
    }
    o.line(
        "Output token throughput (tok/s):",
        format!("{:.2}", s.output_throughput),
    );
    o.line(
        "Total token throughput (tok/s):",
        format!("{:.2}", s.total_token_throughput),
    );
}

/// One section per latency (TTFT, TPOT, ITL, E2EL) with each statistic the summary holds, ms.
/// When the run's chunks carry several tokens each (`inferbench.multi_token_chunks`), TPOT and
/// ITL are titled as the chunk gaps they are.
fn latency_sections(o: &mut Report, s: &RunSummary) {
    let multi = s.inferbench.multi_token_chunks.is_some();
    let (tpot, itl) = if multi {
        (
            "TPOT (chunk gaps / tokens per chunk)",
            "Inter-chunk Latency (multi-token chunks)",
        )
    } else {
        (
            "Time per Output Token (excl. 1st token)",
            "Inter-token Latency",
        )
    };
    for (m, title) in [
        (Metric::Ttft, "Time to First Token"),
        (Metric::Tpot, tpot),
        (Metric::Itl, itl),
        (Metric::E2el, "End-to-end Latency"),
    ] {
        // vLLM's statistics of `m` (core's key table, values from the typed distributions).
        let stats: Vec<(Stat, f64)> = (s.latency_stats())
            .filter(|(k, _)| k.metric == m)
            .map(|(k, v)| (k.stat, v))
            .collect();
        if stats.is_empty() {
            continue;
        }
        o.rule('-', &format!(" {title} "));
        for (stat, v) in stats {
            let label = match stat {
                Stat::Mean => "Mean".to_string(),
                Stat::Median => "Median".to_string(),
                Stat::Std => "Std".to_string(),
                Stat::Percentile(_) => stat.label().replacen('p', "P", 1),
            };
            o.line(
                &format!("{label} {} (ms):", m.name().to_uppercase()),
                format!("{v:.2}"),
            );
        }
    }
}

/// Our extras: TTFO and client queue time (ms), schedule lag, the client self-check, errors
/// and anomalies by class. `measured`: some request succeeded; `duration_s`: the profile's
/// wall time, s.
fn extras_section(o: &mut Report, x: &Extras, measured: bool, duration_s: f64) {
    o.rule('-', " inferbench extras ");
    // TTFO: time to the first output (content) token, reasoning tokens not counted.
    if measured {
        o.line(
            "Mean TTFO, 1st content token (ms):",
            format!("{:.2}", x.ttfo_ms.mean),
        );
    }
    // Client timings of a run in which nothing succeeded are zeros that say nothing (trial 18:
    // a wrong --model printed them beside its errors).
    if measured {
        o.line(
            "Mean client queue time (ms):",
            format!("{:.2}", x.client_queue_ms.mean),
        );
        if let Some(lag) = &x.schedule_lag_ms {
            o.line("Max schedule lag (ms):", format!("{:.3}", lag.max));
        }
    }
    // The client self-check (closed loop with --max-concurrency), which says nothing when
    // nothing was measured (trial 13: "in flight 3.0 of 4" under "No request succeeded").
    if let Some(c) = x.client.as_ref().filter(|_| measured) {
        client_lines(o, c, duration_s);
    }
    if let Some(m) = x.multi_token_chunks.as_ref().filter(|_| measured) {
        o.line(
            "Tokens per chunk (p50 / p99):",
            format!(
                "{:.1} / {:.1}: ITL and TPOT are gaps between multi-token chunks, not per-token",
                m.tokens_per_chunk_p50, m.tokens_per_chunk_p99
            ),
        );
    }
    o.counts("Errors by class:", &x.errors_by_class);
    o.counts("Warmup errors by class:", &x.warmup_errors_by_class);
    let anomalies = (x.anomalies.iter())
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    o.counts("Anomalies:", &anomalies);
}

/// The client self-check: concurrency held, slots busy, CPU, client-bound. `duration_s`: the
/// profile's wall time; under [`ClientCheck::MIN_WALL_S`] the CPU share is not shown (process
/// CPU time comes in 10 ms steps: trial 32 read "6.14 of 2" on a 1.3 ms profile).
fn client_lines(o: &mut Report, c: &ClientCheck, duration_s: f64) {
    o.line(
        "Mean in flight while sending:",
        format!(
            "{:.1} of {} ({:.1} %)",
            c.held_ratio * f64::from(c.requested),
            c.requested,
            c.held_ratio * 100.0
        ),
    );
    if let Some(s) = c.slots_busy_ratio {
        o.line(
            "Client slots busy (until read):",
            format!("{:.1} of {}", s * f64::from(c.requested), c.requested),
        );
    }
    let cpu = if duration_s >= ClientCheck::MIN_WALL_S {
        format!("{:.2} of {}", c.cpu_cores, c.cores_available)
    } else {
        format!(
            "– of {} (a profile under {} s is too short to tell)",
            c.cores_available,
            ClientCheck::MIN_WALL_S
        )
    };
    o.line("Client CPU (cores busy):", cpu);
    if c.client_bound {
        o.line("Client-bound:", "yes: the client limited this run".into());
    }
}

/// Why the run stopped early, when it did; "partial results" only when some request succeeded
/// (`measured`), else "nothing measured" (trial 17: "partial results" above a run where no
/// request had succeeded).
fn stop_line(o: &mut Report, stop: StopReason, measured: bool) {
    let what = if measured {
        "partial results"
    } else {
        "nothing measured"
    };
    let (key, why) = match stop {
        StopReason::Completed => return,
        StopReason::Interrupted => ("Interrupted:", "yes"),
        StopReason::ServerUnreachable => ("Stopped early:", "server unreachable"),
        StopReason::Aborted => ("Stopped early:", "aborted on failures"),
    };
    o.line(key, format!("{why} ({what})"));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 39 §1 (fresh tester): the final write never replaces a non-regular file (checked
    /// again before the rename: a FIFO that appeared during the run stays a FIFO, the temporary
    /// file is removed), a regular one is replaced; `--result-filename` may not leave
    /// `--result-dir` through `..`.
    #[cfg(unix)]
    #[test]
    fn only_regular_files_are_written_and_names_stay_in_the_result_dir() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("r.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let e = write_file(&fifo, b"{}").unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            format!("{}: it is not a regular file (a FIFO)", fifo.display())
        );
        assert!(non_regular(&fifo).is_some());
        assert!(!dir.path().join("r.json.tmp").exists());
        let e = write_file(dir.path(), b"{}").unwrap_err();
        assert!(format!("{e:#}").ends_with(": it is a directory"), "{e:#}");
        let file = dir.path().join("ok.json");
        std::fs::write(&file, "old").unwrap();
        write_file(&file, b"new").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"new");
        assert_eq!(non_regular(&file), None);
        assert_eq!(non_regular(&dir.path().join("missing")), None);
        for ok in ["r.json", "sub/r.json", "/abs/r.json"] {
            assert!(check_result_filename(ok).is_ok(), "{ok}");
        }
        for bad in ["../r.json", "a/../../r.json", "../../../../dev/full"] {
            assert!(
                format!("{:#}", check_result_filename(bad).unwrap_err())
                    .contains("a `..` component leaves --result-dir"),
                "{bad}"
            );
        }
    }

    #[test]
    fn vllm_default_file_name() {
        let o = BenchOptions {
            model: "org/Model-7B".into(),
            max_concurrency: Some(64),
            ..Default::default()
        };
        assert_eq!(
            default_result_filename(&o, "20260101-120000"),
            "openai-infqps-concurrency64-Model-7B-20260101-120000.json"
        );
        let o = BenchOptions {
            model: "m".into(),
            request_rate: Some(10.0),
            ..Default::default()
        };
        assert_eq!(default_result_filename(&o, "d"), "openai-10.0qps-m-d.json");
        let o = BenchOptions {
            model: "m".into(),
            request_rate: Some(2.5),
            ..Default::default()
        };
        assert_eq!(default_result_filename(&o, "d"), "openai-2.5qps-m-d.json");
    }

    /// Trial 16: a second run in the same second gets `<stem>-2.json`, not the first's file; a
    /// side file alone takes its stem too; a name the user gave is kept.
    #[test]
    fn a_taken_default_name_gets_the_next_free_suffix() {
        let dir = std::env::temp_dir().join(format!("ib-free-name-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let o = |name: Option<&str>| BenchOptions {
            model: "m".into(),
            save_result: true,
            result_dir: Some(dir.clone()),
            result_filename: name.map(str::to_string),
            ..Default::default()
        };
        let name = |o: BenchOptions| {
            let (o, claim) = with_free_result_name(o, "20261204-010203");
            (o.result_filename.unwrap_or_default(), claim)
        };
        let (first, claim) = name(o(None));
        assert_eq!(first, "openai-infqps-m-20261204-010203.json");
        // Trial 17: while the first run holds its claim, an overlapping run takes the next.
        assert!(dir
            .join("openai-infqps-m-20261204-010203.json.tmp")
            .exists());
        let (second, claim2) = name(o(None));
        assert_eq!(second, "openai-infqps-m-20261204-010203-2.json");
        // A dropped claim (the run ended before writing its result) frees the name again.
        drop(claim2);
        assert!(!dir
            .join("openai-infqps-m-20261204-010203-2.json.tmp")
            .exists());
        drop(claim);
        std::fs::write(dir.join("openai-infqps-m-20261204-010203.json"), "{}").unwrap();
        assert_eq!(name(o(None)).0, "openai-infqps-m-20261204-010203-2.json");
        std::fs::write(dir.join("openai-infqps-m-20261204-010203-2.power.csv"), "").unwrap();
        assert_eq!(name(o(None)).0, "openai-infqps-m-20261204-010203-3.json");
        let (given, none) = name(o(Some("r.json")));
        assert_eq!((given.as_str(), none.is_none()), ("r.json", true));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn side_files_are_named_after_the_result_file() {
        let o = |save_result: bool, name: Option<&str>| BenchOptions {
            model: "org/M".into(),
            max_concurrency: Some(4),
            save_result,
            result_dir: Some(PathBuf::from("/res")),
            result_filename: name.map(str::to_string),
            ..Default::default()
        };
        let side = |o: &BenchOptions, n: &str| side_file(o, "20260101-120000", n).unwrap();
        let r = o(true, Some("r.json"));
        assert_eq!(
            side(&r, "server_metrics.jsonl"),
            Path::new("/res/r.server_metrics.jsonl")
        );
        assert_eq!(side(&r, "power.csv"), Path::new("/res/r.power.csv"));
        assert_eq!(
            side(&r, "power_validation.json"),
            Path::new("/res/r.power_validation.json")
        );
        // vLLM's default result name.
        assert_eq!(
            side(&o(true, None), "power.csv"),
            Path::new("/res/openai-infqps-concurrency4-M-20260101-120000.power.csv")
        );
        // A result file elsewhere: its side files beside it.
        assert_eq!(
            side(&o(true, Some("/other/x.json")), "power.csv"),
            Path::new("/other/x.power.csv")
        );
        // Point directories (summary.json) and runs without a result file keep fixed names.
        assert_eq!(
            side(&o(true, Some("summary.json")), "server_metrics.jsonl"),
            Path::new("/res/server_metrics.jsonl")
        );
        assert_eq!(
            side(&o(false, Some("r.json")), "power.csv"),
            Path::new("/res/power.csv")
        );
        let no_dir = BenchOptions {
            result_dir: None,
            ..r
        };
        assert_eq!(side_file(&no_dir, "d", "power.csv"), None);
    }
}
