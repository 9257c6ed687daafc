//! Two flags naming one file (trial of issue 39, finding 1): an output path equal to an input
//! path, to another output or to the database destroys what was there (`--save-requests` over
//! the `--db` file, `--result-dir` over the replayed `--traces`). Every path a command reads or
//! writes is compared, before any request, by what it names: an existing file by its
//! (device, inode), so links, `./` and `..` spellings compare equal; a file not yet there by
//! its canonical path (its deepest existing folder resolved, the rest appended).

use std::path::{Component, Path, PathBuf};

/// Whether a path is read or written by the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Read: two inputs may name one file.
    Input,
    /// Written (created or replaced): no other path may name its file.
    Output,
    /// A folder read as a corpus (`replay --traces DIR`, an eval's `--data-dir`): no output
    /// may be it or lie inside it, or the command's own files join what a later run reads
    /// (issue 39, a fresh tester's finding 2: `replay --traces DIR --result-dir DIR` left a
    /// `summary.json` that every later replay of DIR refused).
    InputDir,
    /// A folder the command writes files into (`replay`'s and `eval`'s `--result-dir`): it may
    /// not be an input folder or lie inside one (inputs inside it are fine).
    OutputDir,
}

/// One path a command uses: the flag that names it (`--save-requests`, `--result-dir`'s
/// `requests.jsonl`, …), the path and whether it is read or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedPath {
    /// The flag (or flag and file) as the user knows it.
    pub flag: String,
    /// The path.
    pub path: PathBuf,
    /// Read or written.
    pub role: Role,
}

impl NamedPath {
    /// A path read by the command.
    pub fn input(flag: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        Self {
            flag: flag.into(),
            path: path.into(),
            role: Role::Input,
        }
    }

    /// A folder read as a corpus ([`Role::InputDir`]).
    pub fn input_dir(flag: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        Self {
            flag: flag.into(),
            path: path.into(),
            role: Role::InputDir,
        }
    }

    /// A folder written into ([`Role::OutputDir`]).
    pub fn output_dir(flag: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        Self {
            flag: flag.into(),
            path: path.into(),
            role: Role::OutputDir,
        }
    }

    /// A path written by the command.
    pub fn output(flag: impl Into<String>, path: impl Into<PathBuf>) -> Self {
        Self {
            flag: flag.into(),
            path: path.into(),
            role: Role::Output,
        }
    }
}

/// What a path names, for comparison.
#[derive(Debug, PartialEq, Eq, Hash)]
enum FileId {
    /// An existing file: (device, inode).
    Inode(u64, u64),
    /// A file not there yet: its canonical path.
    Path(PathBuf),
}

/// What `path` names: `None` for an existing file that is not a regular file (a device such
/// as `/dev/null` is not destroyed by writing; such paths are refused or allowed elsewhere)
/// or a path that cannot be resolved. The path is first resolved the way a write will resolve
/// it once its missing folders are created ([`resolve_future`]): `nz1/../e1.db` names the
/// existing `e1.db` (trial of issue 39, second round, finding 1).
fn file_id(path: &Path) -> Result<Option<FileId>, String> {
    let Some(real) = resolve_future(path)? else {
        return Ok(None);
    };
    match std::fs::metadata(&real) {
        Ok(m) if m.is_file() => Ok(Some(inode(&m))),
        Ok(_) => Ok(None),
        Err(_) => Ok(Some(FileId::Path(real))),
    }
}

/// The absolute path a write to `path` reaches once the tool has created its missing folders
/// (as `create_dir_all` of its parent, then the write, do): components taken left to right
/// from the current directory (or `/`); an existing component is followed (a symbolic link,
/// dangling or not, by its target: a relative one from the link's folder, at most
/// [`MAX_LINKS`] links in all); the first missing component and every one after it are
/// folders or the file still to be created, so a `..` after a missing component cancels it
/// while a `..` after an existing one goes to that folder's real parent. `None` when the
/// current directory cannot be read.
///
/// # Errors
/// More than [`MAX_LINKS`] links followed (a loop): `PATH: a loop of symbolic links`.
pub fn resolve_future(path: &Path) -> Result<Option<PathBuf>, String> {
    use std::collections::VecDeque;
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        match std::env::current_dir() {
            Ok(c) => c.join(path),
            Err(_) => return Ok(None),
        }
    };
    let mut todo: VecDeque<std::ffi::OsString> = VecDeque::new();
    let mut cur = PathBuf::from("/");
    push_components(&abs, &mut todo, &mut cur, true);
    // Components below `cur` not there yet (folders to create, the file to write).
    let mut missing: Vec<std::ffi::OsString> = Vec::new();
    let mut links = 0usize;
    while let Some(c) = todo.pop_front() {
        if c == ".." {
            if missing.pop().is_none() {
                cur.pop();
            }
            continue;
        }
        if !missing.is_empty() {
            missing.push(c);
            continue;
        }
        let next = cur.join(&c);
        match std::fs::symlink_metadata(&next) {
            Ok(m) if m.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(format!(
                        "{}: a loop of symbolic links (or more than {MAX_LINKS} in a chain): no \
                         file can be written through it",
                        path.display()
                    ));
                }
                let Ok(to) = std::fs::read_link(&next) else {
                    return Ok(None);
                };
                let mut front = VecDeque::new();
                push_components(&to, &mut front, &mut cur, to.is_absolute());
                front.extend(todo);
                todo = front;
            }
            Ok(_) => cur = next,
            Err(_) => missing.push(c),
        }
    }
    cur.extend(missing);
    Ok(Some(cur))
}

/// Queues `p`'s components (`.` dropped, `..` kept) on `todo`; an absolute `p` (`restart`)
/// sets `cur` back to its root first.
fn push_components(
    p: &Path,
    todo: &mut std::collections::VecDeque<std::ffi::OsString>,
    cur: &mut PathBuf,
    restart: bool,
) {
    for c in p.components() {
        match c {
            Component::Prefix(x) if restart => *cur = PathBuf::from(x.as_os_str()),
            Component::RootDir if restart => cur.push("/"),
            Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
            Component::ParentDir => todo.push_back("..".into()),
            Component::Normal(n) => todo.push_back(n.to_os_string()),
        }
    }
}

/// The most symbolic links followed from one path ([`resolve_future`]), as the kernel's own bound
/// (40 on Linux).
pub const MAX_LINKS: usize = 40;

#[cfg(unix)]
fn inode(m: &std::fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt as _;
    FileId::Inode(m.dev(), m.ino())
}

#[cfg(not(unix))]
fn inode(_m: &std::fs::Metadata) -> FileId {
    FileId::Path(PathBuf::new())
}

/// Refuses two paths naming one file when either is written: the first such pair, naming both
/// flags and paths (the pair `(i, j)` of the earliest `i`, then `j`, in `paths`' order). Two
/// inputs may name one file; paths that are not regular files (devices, directories) are not
/// compared. Linear in the paths (a whole sweep's thousands of files are checked at once).
///
/// Folders ([`Role::InputDir`], [`Role::OutputDir`]) are compared by containment
/// ([`check_nesting`]) after the files.
///
/// # Errors
/// `--a A and --b B name the same file: …` with what to do (give each its own path); an
/// output inside an input folder, or an input inside an output folder: [`check_nesting`]'s.
pub fn check_distinct(paths: &[NamedPath]) -> anyhow::Result<()> {
    let files: Vec<NamedPath> = (paths.iter())
        .filter(|p| matches!(p.role, Role::Input | Role::Output))
        .cloned()
        .collect();
    check_files(&files)?;
    check_nesting(paths)
}

/// Refuses an output (a file or an output folder) that is an input folder or lies inside one
/// (`replay --traces DIR --result-dir DIR` left a `summary.json` in the corpus that every later
/// replay of DIR refused): the first such pair in `paths`' order, naming both flags and paths.
/// An input (file or folder) inside an output folder is fine: the command writes only its own
/// named files there, and the same-file check keeps those off every input
/// (`replay --traces t.jsonl --result-dir .` is an ordinary command line). Paths are compared as
/// a write reaches them ([`resolve_future`]: links followed, `..` and `./` spellings resolved,
/// a folder not there yet by where it will be); a path that cannot be resolved is skipped.
/// Quadratic in the folders only (a command names a handful).
///
/// # Errors
/// `--result-dir's summary.json DIR/summary.json is inside --traces DIR: …` with what to do.
pub fn check_nesting(paths: &[NamedPath]) -> anyhow::Result<()> {
    let resolved = (paths.iter())
        .map(|p| resolve_future(&p.path).map_err(|e| anyhow::anyhow!("{} {e}", p.flag)))
        .collect::<anyhow::Result<Vec<Option<PathBuf>>>>()?;
    let input_dirs = (paths.iter().zip(&resolved))
        .filter_map(|(p, r)| match (p.role, r) {
            (Role::InputDir, Some(r)) => Some((p, r.as_path())),
            _ => None,
        })
        .collect::<Vec<_>>();
    for (p, r) in paths.iter().zip(&resolved) {
        let (Role::Output | Role::OutputDir, Some(r)) = (p.role, r) else {
            continue;
        };
        if let Some((d, dr)) = input_dirs.iter().find(|(_, dr)| r.starts_with(dr)) {
            let how = if r == dr { "is" } else { "is inside" };
            anyhow::bail!(
                "{} {} {how} {} {}: the command's outputs would join what it reads (a later run \
                 would read them as input); give the output a folder outside it",
                p.flag,
                p.path.display(),
                d.flag,
                d.path.display()
            );
        }
    }
    Ok(())
}

/// [`check_distinct`]'s file comparison: files only.
fn check_files(paths: &[NamedPath]) -> anyhow::Result<()> {
    let ids = (paths.iter())
        .map(|p| file_id(&p.path).map_err(|e| anyhow::anyhow!("{} {e}", p.flag)))
        .collect::<anyhow::Result<Vec<Option<FileId>>>>()?;
    // Per file: the first path naming it and the first output naming it.
    let mut first: std::collections::HashMap<&FileId, (usize, Option<usize>)> =
        std::collections::HashMap::new();
    let mut pair: Option<(usize, usize)> = None;
    for (j, id) in ids.iter().enumerate() {
        let Some(id) = id else { continue };
        let output = paths[j].role == Role::Output;
        match first.get_mut(id) {
            None => {
                first.insert(id, (j, output.then_some(j)));
            }
            Some((any, out)) => {
                // The earliest earlier path that may not share the file with this one.
                let i = if output { Some(*any) } else { *out };
                if let Some(i) = i {
                    if pair.is_none_or(|p| (i, j) < p) {
                        pair = Some((i, j));
                    }
                }
                if output && out.is_none() {
                    *out = Some(j);
                }
            }
        }
    }
    if let Some((i, j)) = pair {
        let (a, b) = (&paths[i], &paths[j]);
        let what = match (a.role, b.role) {
            (Role::Output, Role::Output) => "one output would overwrite the other",
            _ => "writing the output would destroy the input",
        };
        anyhow::bail!(
            "{} {} and {} {} name the same file: {what}; give each its own path",
            a.flag,
            a.path.display(),
            b.flag,
            b.path.display()
        );
    }
    Ok(())
}

/// The paths a `bench` point reads and writes, as [`check_distinct`] compares them: the
/// dataset and a tokenizer file read; `--save-requests`, a given `--result-filename`, the
/// side files and the InferenceX aggregate written into `--result-dir`. A default result file
/// name (dated when the run ends) is not listed.
pub fn bench_paths(opts: &crate::options::BenchOptions) -> Vec<NamedPath> {
    let mut v = Vec::new();
    if let Some(p) = &opts.dataset_path {
        v.push(NamedPath::input("--dataset-path", p));
    }
    if Path::new(&opts.tokenizer).is_file() {
        v.push(NamedPath::input("--tokenizer", &opts.tokenizer));
    }
    if let Some(p) = &opts.save_requests {
        v.push(NamedPath::output("--save-requests", p));
    }
    let dir = opts
        .result_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("."));
    if opts.save_result {
        if let Some(name) = &opts.result_filename {
            v.push(NamedPath::output("--result-filename", dir.join(name)));
        }
    }
    if opts.result_filename.is_some() || !opts.save_result {
        for side in crate::output::SIDE_FILES {
            if let Some(p) = crate::output::side_file(opts, "", side) {
                v.push(NamedPath::output(format!("--result-dir's {side}"), p));
            }
        }
    }
    if let Some(id) = &opts.job_identity {
        v.push(NamedPath::output(
            "--result-dir's aggregate",
            dir.join(id.aggregate_file_name()),
        ));
    }
    v
}

/// The files `replay` writes into `--result-dir` (the replay flags' own list of what it checks
/// there, kept equal).
pub const REPLAY_FILES: [&str; 9] = [
    "summary.json",
    "requests.jsonl",
    inferbench_core::artifacts::AGENTIC_AGGREGATE_FILE,
    "server_metrics.jsonl",
    "power.csv",
    "power_validation.json",
    "aiperf_artifacts/profile_export.jsonl",
    "aiperf_artifacts/profile_export_aiperf.json",
    "aiperf_artifacts/server_metrics_export.json",
];

/// The paths a `replay` reads and writes: each trace file (`--traces` a file, or the `*.jsonl`
/// and `*.json` files directly in a `--traces` directory, as the loader reads them, and the
/// directory itself as an input folder), a tokenizer file, `--result-dir` as an output folder
/// and each file of [`REPLAY_FILES`] in it.
pub fn replay_paths(
    traces: Option<&Path>,
    tokenizer: &str,
    result_dir: Option<&Path>,
) -> Vec<NamedPath> {
    let mut v = Vec::new();
    if let Some(t) = traces {
        if t.is_dir() {
            let mut files: Vec<PathBuf> = std::fs::read_dir(t)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl" || x == "json"))
                .collect();
            files.sort();
            v.extend(files.into_iter().map(|p| NamedPath::input("--traces", p)));
            v.push(NamedPath::input_dir("--traces", t));
        } else {
            v.push(NamedPath::input("--traces", t));
        }
    }
    if Path::new(tokenizer).is_file() {
        v.push(NamedPath::input("--tokenizer", tokenizer));
    }
    if let Some(d) = result_dir {
        v.push(NamedPath::output_dir("--result-dir", d));
        for f in REPLAY_FILES {
            v.push(NamedPath::output(format!("--result-dir's {f}"), d.join(f)));
        }
    }
    v
}

/// The side files SQLite keeps beside a database `DB`: `DB-wal`, `DB-shm` (WAL mode) and
/// `DB-journal` (rollback mode). It creates, rewrites and deletes them as it pleases.
pub const SQLITE_SIDE_FILES: [&str; 3] = ["-wal", "-shm", "-journal"];

/// A `--db` target as paths to compare: a SQLite file and its [`SQLITE_SIDE_FILES`], each
/// written (SQLite deletes a `-wal` it checkpointed: trial of issue 39's leftovers, finding 1,
/// `--save-requests DB-wal` was written and then lost); a `postgres://` / `postgresql://` URL
/// names none. Every other value is a path, as the store opens it (a SQLite `file:` URI is
/// refused by the store before it opens anything: `inferbench_store::refuse_sqlite_uri`).
pub fn db_path(db: &str) -> Vec<NamedPath> {
    if db.starts_with("postgres://") || db.starts_with("postgresql://") {
        return Vec::new();
    }
    // SQLite keeps the side files beside the file a symbolic link leads to (its unix VFS
    // resolves the link), not beside the link.
    let is_link = std::fs::symlink_metadata(db).is_ok_and(|m| m.file_type().is_symlink());
    let real = match is_link {
        true => resolve_future(Path::new(db))
            .ok()
            .flatten()
            .map_or_else(|| db.to_string(), |p| p.display().to_string()),
        false => db.to_string(),
    };
    let mut v = vec![NamedPath::output("--db", db)];
    v.extend(
        SQLITE_SIDE_FILES
            .iter()
            .map(|s| NamedPath::output(format!("--db's {s} file"), format!("{real}{s}"))),
    );
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An existing file named two ways (a `./` spelling, a `..` detour, a symlink) is one file;
    /// a file not there yet is compared by its canonical path; inputs may share a file.
    #[test]
    fn same_file_by_inode_or_canonical_path() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("ib.db");
        std::fs::write(&db, b"x").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&db, d.path().join("link.db")).unwrap();
        let detour = d.path().join("sub/../ib.db");
        let e = check_distinct(&[
            NamedPath::output("--db", &db),
            NamedPath::output("--save-requests", &detour),
        ])
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            format!(
                "--db {} and --save-requests {} name the same file: one output would overwrite \
                 the other; give each its own path",
                db.display(),
                detour.display()
            )
        );
        #[cfg(unix)]
        assert!(check_distinct(&[
            NamedPath::input("--dataset-path", d.path().join("link.db")),
            NamedPath::output("--save-requests", &db),
        ])
        .unwrap_err()
        .to_string()
        .contains("writing the output would destroy the input"));
        // Not there yet: by canonical path.
        let new = d.path().join("sub/new.jsonl");
        assert!(check_distinct(&[
            NamedPath::output("--save-requests", &new),
            NamedPath::output("--result-filename", d.path().join("sub/./x/../new.jsonl")),
        ])
        .is_err());
        // Two inputs; distinct outputs; a device.
        check_distinct(&[
            NamedPath::input("--dataset-path", &db),
            NamedPath::input("--tokenizer", &db),
            NamedPath::output("--save-requests", &new),
            NamedPath::output("--result-filename", d.path().join("r.json")),
        ])
        .unwrap();
        check_distinct(&[
            NamedPath::output("--save-requests", "/dev/null"),
            NamedPath::output("--result-filename", "/dev/null"),
        ])
        .unwrap();
    }

    /// Trial of issue 39's leftovers, finding 2: a dangling symbolic link is compared by the
    /// final target of its chain (relative targets from the link's folder, a link to a link),
    /// and a loop is an error naming the flag.
    #[cfg(unix)]
    #[test]
    fn a_dangling_link_names_its_final_target_and_a_loop_is_refused() {
        use std::os::unix::fs::symlink;
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir(p.join("r")).unwrap();
        symlink("r/p.json", p.join("sr.jsonl")).unwrap();
        symlink("sr.jsonl", p.join("hop.jsonl")).unwrap();
        for link in ["sr.jsonl", "hop.jsonl"] {
            let e = check_distinct(&[
                NamedPath::output("--save-requests", p.join(link)),
                NamedPath::output("--result-filename", p.join("r/p.json")),
            ])
            .unwrap_err()
            .to_string();
            assert_eq!(
                e,
                format!(
                    "--save-requests {} and --result-filename {} name the same file: one \
                     output would overwrite the other; give each its own path",
                    p.join(link).display(),
                    p.join("r/p.json").display()
                )
            );
        }
        // A dangling link to the database file that is not there yet.
        symlink("n.db", p.join("l.jsonl")).unwrap();
        let mut paths = db_path(p.join("n.db").to_str().unwrap());
        paths.push(NamedPath::output("--save-requests", p.join("l.jsonl")));
        assert!(check_distinct(&paths).is_err());
        // A loop.
        symlink("b", p.join("a")).unwrap();
        symlink("a", p.join("b")).unwrap();
        let e = check_distinct(&[NamedPath::output("--save-requests", p.join("a"))])
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "--save-requests {}: a loop of symbolic links (or more than 40 in a chain): no \
                 file can be written through it",
                p.join("a").display()
            )
        );
        // A dangling link elsewhere is no conflict.
        check_distinct(&[
            NamedPath::output("--save-requests", p.join("l.jsonl")),
            NamedPath::output("--result-filename", p.join("r/p.json")),
        ])
        .unwrap();
    }

    /// Trial of issue 39 (second round), finding 1: a path through a folder not there yet
    /// (`nz1/../e1.db`) names what it will name once the tool creates that folder: the
    /// existing file, which it would overwrite; `..` after an existing folder goes to its real
    /// parent (through a link), and a link at the final component is followed.
    #[cfg(unix)]
    #[test]
    fn a_path_through_a_missing_folder_names_the_file_it_will_reach() {
        use std::os::unix::fs::symlink;
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::write(p.join("e1.db"), b"x").unwrap();
        std::fs::create_dir_all(p.join("a/b")).unwrap();
        symlink("a/b", p.join("lb")).unwrap();
        symlink("e1.db", p.join("pp.svg")).unwrap();
        let real = p.canonicalize().unwrap();
        let r = |x: &str| resolve_future(&p.join(x)).unwrap().unwrap();
        assert_eq!(r("nz1/../e1.db"), real.join("e1.db"));
        assert_eq!(r("n1/n2/../../e1.db"), real.join("e1.db"));
        assert_eq!(r("n1/./n2/../x.db"), real.join("n1/x.db"));
        // `lb` is `a/b`: its `..` is `a`, not the link's folder.
        assert_eq!(r("lb/../e1.db"), real.join("a/e1.db"));
        assert_eq!(r("lb/n/../../../e1.db"), real.join("e1.db"));
        assert_eq!(r("n2/../pp.svg"), real.join("e1.db"));
        for (out, other) in [
            ("nz1/../e1.db", "e1.db"),
            ("nr/../e1.db", "./e1.db"),
            ("n2/../pp.svg", "e1.db"),
            ("lb/n/../../../e1.db", "e1.db"),
        ] {
            let e = check_distinct(&[
                NamedPath::input("--db", p.join(other)),
                NamedPath::output("--save-requests", p.join(out)),
            ])
            .unwrap_err()
            .to_string();
            assert_eq!(
                e,
                format!(
                    "--db {} and --save-requests {} name the same file: writing the output \
                     would destroy the input; give each its own path",
                    p.join(other).display(),
                    p.join(out).display()
                )
            );
        }
        // Two new files through missing folders meet; different ones do not.
        assert!(check_distinct(&[
            NamedPath::output("--save-requests", p.join("m1/../m2/q.jsonl")),
            NamedPath::output("--result-filename", p.join("m2/x/../q.jsonl")),
        ])
        .is_err());
        check_distinct(&[
            NamedPath::input("--db", p.join("e1.db")),
            NamedPath::output("--save-requests", p.join("nz1/e1.db")),
            NamedPath::output("--result-filename", p.join("lb/../e1.db")),
        ])
        .unwrap();
    }

    /// Trial of issue 39's leftovers, finding 1: a database covers its SQLite side files, which
    /// SQLite deletes or rewrites; a PostgreSQL URL names no file.
    #[test]
    fn a_database_covers_its_wal_shm_and_journal() {
        let d = tempfile::tempdir().unwrap();
        let db = d.path().join("x2.db");
        let db = db.to_str().unwrap();
        for side in ["-wal", "-shm", "-journal"] {
            let mut paths = db_path(db);
            paths.push(NamedPath::output("--save-requests", format!("{db}{side}")));
            let e = check_distinct(&paths).unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "--db's {side} file {db}{side} and --save-requests {db}{side} name the same \
                     file: one output would overwrite the other; give each its own path"
                )
            );
        }
        // The same once the database and its side files exist.
        for side in ["", "-wal", "-shm", "-journal"] {
            std::fs::write(format!("{db}{side}"), b"x").unwrap();
        }
        let mut paths = db_path(db);
        paths.push(NamedPath::output("--save-requests", format!("{db}-wal")));
        assert!(check_distinct(&paths).is_err());
        check_distinct(&db_path(db)).unwrap();
        assert!(db_path("postgres://u@h/db").is_empty());
        // A database reached through a link: SQLite keeps its side files beside the target.
        #[cfg(unix)]
        {
            let link = d.path().join("link.db");
            std::os::unix::fs::symlink("x2.db", &link).unwrap();
            let mut paths = db_path(link.to_str().unwrap());
            paths.push(NamedPath::output("--save-requests", format!("{db}-shm")));
            assert!(check_distinct(&paths).is_err());
        }
    }
}
