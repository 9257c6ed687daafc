//! InferenceX's public database dumps, JSON form ([A], reference/inferencex-app.md §2.2 and
//! §5.7): a directory `inferencex-dump-YYYY-MM-DD/` with one `<table>.json` per table, each a
//! JSON array of rows (bigserial ids as JSON strings). Read into runs, the way InferenceX's own
//! reads see the data: one run per GitHub workflow run, only its latest attempt (the
//! `latest_workflow_runs` view), one point per `benchmark_results` row (failed rows kept as
//! failed points, with their `error`), evals from `eval_results`. Identity names go through the
//! same normalizers as every other import.
//!
//! Idempotent: a run's key is the hash of its workflow-run row and its result rows, so
//! importing the same dump again (or a later dump in which that run did not change) updates
//! nothing; a changed run replaces its earlier version.

use inferbench_core::point::DP_ATTENTION;
use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::parse::{
    base_run, config_from, empty_point, eval_from, metrics_from, read_json, sha256_hex, Overrides,
    ParseError, RunData, SourceKind,
};

/// One table row.
type Row = Map<String, Value>;

/// The tables read (others, such as `server_logs` or `availability`, are ignored).
pub const TABLES: &[&str] = &[
    "configs",
    "workflow_runs",
    "benchmark_results",
    "eval_results",
];

/// Whether `dir` looks like a JSON dump (it holds `benchmark_results.json` and `configs.json`).
pub fn is_json_dump(dir: &Path) -> bool {
    dir.join("benchmark_results.json").is_file() && dir.join("configs.json").is_file()
}

/// A table's rows; a missing optional table (`eval_results`) is empty.
fn table(dir: &Path, name: &str, required: bool) -> Result<Vec<Map<String, Value>>, ParseError> {
    let path = dir.join(format!("{name}.json"));
    if !path.is_file() {
        return if required {
            Err(format!(
                "{}: missing (an InferenceX JSON dump has one <table>.json per table: {})",
                path.display(),
                TABLES.join(", ")
            ))
        } else {
            Ok(Vec::new())
        };
    }
    let (_, v) = read_json(&path)?;
    let Value::Array(rows) = v else {
        return Err(format!("{}: expected a JSON array of rows", path.display()));
    };
    rows.into_iter()
        .enumerate()
        .map(|(i, r)| match r {
            Value::Object(o) => Ok(o),
            _ => Err(format!("{}: row {i} is not an object", path.display())),
        })
        .collect()
}

/// An id column as text: ids are numbers (serial) or strings (bigserial) in the dumps.
fn id(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn int(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A benchmark or eval row as one flat object of the field names the store's readers know:
/// the config's columns (prefill/decode parallelism; `tp`/`ep`/`dp_attention` from the decode
/// side, as InferenceX's mapper stores non-disaggregated runs with prefill = decode), the row's
/// own columns, and its `metrics` object flattened in.
fn flat(config: &Map<String, Value>, row: &Map<String, Value>) -> Map<String, Value> {
    let mut o = Map::new();
    for (k, v) in config {
        if k != "id" {
            o.insert(k.clone(), v.clone());
        }
    }
    for (from, to) in [
        ("decode_tp", "tp"),
        ("decode_ep", "ep"),
        ("decode_dp_attention", DP_ATTENTION),
        ("spec_method", "spec_decoding"),
    ] {
        if let Some(v) = config.get(from) {
            o.insert(to.into(), v.clone());
        }
    }
    for (k, v) in row {
        match k.as_str() {
            "id" | "workflow_run_id" | "config_id" | "server_log_id" | "trace_replay_id"
            | "workers" | "metrics" => {}
            "benchmark_type" => {
                let s = match v.as_str() {
                    Some("single_turn") | None => "fixed_seq_len",
                    Some(t) if t.starts_with("agentic") => crate::query::AGENTIC_SCENARIO,
                    Some(t) => t,
                };
                o.insert("scenario".into(), Value::from(s));
            }
            _ => {
                o.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(Value::Object(m)) = row.get("metrics") {
        for (k, v) in m {
            o.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    o
}

/// Reads a JSON dump directory into runs (module docs); `ov` as for every import (a value
/// given there wins over the dump's). Errors: a required table missing or not a JSON array of
/// objects (file:line:column for bad JSON). A result row whose config or workflow run is not in
/// the dump is skipped with a warning on its run, or on the first run when it has none.
pub fn read_json_dump(dir: &Path, ov: &Overrides) -> Result<Vec<RunData>, ParseError> {
    let tables = Tables {
        configs: table(dir, "configs", true)?,
        workflow_runs: table(dir, "workflow_runs", true)?,
        benchmark_results: table(dir, "benchmark_results", true)?,
        eval_results: table(dir, "eval_results", false)?,
    };
    runs_from_tables(tables, dir, ov)
}

/// The rows of the tables a dump import reads.
#[derive(Debug, Default)]
struct Tables {
    configs: Vec<Row>,
    workflow_runs: Vec<Row>,
    benchmark_results: Vec<Row>,
    eval_results: Vec<Row>,
}

/// Runs from a dump's tables (module docs); `source` names the dump in each run's source path.
fn runs_from_tables(t: Tables, source: &Path, ov: &Overrides) -> Result<Vec<RunData>, ParseError> {
    let dir = source;
    let configs: BTreeMap<String, Map<String, Value>> = t
        .configs
        .into_iter()
        .filter_map(|c| Some((id(c.get("id"))?, c)))
        .collect();
    // The latest attempt of each GitHub run (InferenceX's `latest_workflow_runs`).
    let mut latest: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for w in t.workflow_runs {
        let gh = id(w.get("github_run_id")).or_else(|| id(w.get("id")));
        let Some(gh) = gh else { continue };
        let attempt = int(w.get("run_attempt")).unwrap_or(0);
        let newer = latest
            .get(&gh)
            .is_none_or(|old| int(old.get("run_attempt")).unwrap_or(0) < attempt);
        if newer {
            latest.insert(gh, w);
        }
    }
    let by_id: BTreeMap<String, &Map<String, Value>> = latest
        .values()
        .filter_map(|w| Some((id(w.get("id"))?, w)))
        .collect();
    let (results, evals) = (t.benchmark_results, t.eval_results);
    let mut rows_of: BTreeMap<String, (Vec<&Row>, Vec<&Row>)> = BTreeMap::new();
    let mut orphans = Vec::new();
    let mut superseded = 0usize;
    for (is_eval, rows) in [(false, &results), (true, &evals)] {
        for (i, r) in rows.iter().enumerate() {
            let table = if is_eval {
                "eval_results"
            } else {
                "benchmark_results"
            };
            let run = id(r.get("workflow_run_id"));
            let cfg = id(r.get("config_id"));
            match (run, cfg) {
                (Some(run), Some(cfg))
                    if by_id.contains_key(&run) && configs.contains_key(&cfg) =>
                {
                    let e = rows_of.entry(run).or_default();
                    if is_eval {
                        e.1.push(r);
                    } else {
                        e.0.push(r);
                    }
                }
                (Some(_), Some(cfg)) if configs.contains_key(&cfg) => superseded += 1,
                _ => orphans.push(format!(
                    "{table}.json row {} (id {}): its config or workflow run is not in the dump; \
                     left out (the rest is stored; `ingest --strict` exits 1 on it)",
                    i + 1,
                    id(r.get("id")).unwrap_or_else(|| "-".into())
                )),
            }
        }
    }
    let mut out = Vec::new();
    for (run_id, (points, run_evals)) in &rows_of {
        let w = by_id[run_id];
        let gh = id(w.get("github_run_id")).unwrap_or_else(|| run_id.clone());
        let mut key = serde_json::to_vec(w).unwrap_or_default();
        for r in points.iter().chain(run_evals) {
            key.extend(serde_json::to_vec(r).unwrap_or_default());
        }
        let mut run = base_run(SourceKind::InferenceXDump, dir, &key);
        run.run_key = format!("inferencex-dump:{gh}:sha256:{}", sha256_hex(&key));
        run.source_path = format!("{}#workflow_run={gh}", dir.display());
        run.batch = format!("inferencex-run-{gh}");
        run.date = w
            .get("date")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        run.git_sha = w
            .get("head_sha")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        run.job = serde_json::to_string(w).unwrap_or_else(|_| "{}".into());
        for r in points {
            let cfg = &configs[&id(r.get("config_id")).unwrap_or_default()];
            let o = flat(cfg, r);
            let config = config_from(&o, ov, &mut run.names);
            let conc = int(o.get("conc")).unwrap_or(0);
            let date = o
                .get("date")
                .and_then(Value::as_str)
                .unwrap_or(&run.date)
                .to_string();
            let mut pt = empty_point(config, conc, date);
            pt.metrics = metrics_from(&o);
            pt.error = r.get("error").and_then(Value::as_str).map(String::from);
            run.points.push(pt);
        }
        for r in run_evals {
            let cfg = &configs[&id(r.get("config_id")).unwrap_or_default()];
            run.evals.push(eval_from(&flat(cfg, r), ov, &mut run.names));
        }
        out.push(run);
    }
    if let Some(first) = out.first_mut() {
        first.warnings.extend(orphans);
        if superseded > 0 {
            first.warnings.push(format!(
                "{superseded} row(s) of earlier attempts of a workflow run not imported (only \
                 each run's latest attempt counts, as on InferenceX)"
            ));
        }
    } else if !orphans.is_empty() {
        return Err(orphans.join("; "));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// pg_dump custom format ([B], since 2026-07: `inferencex-YYYY-MM-DD.dump.zst`)

/// Whether `file` is named like a pg_dump release file (`*.dump` or `*.dump.zst`).
pub fn is_pg_dump(file: &Path) -> bool {
    let n = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    file.is_file() && (n.ends_with(".dump") || n.ends_with(".dump.zst"))
}

/// Columns whose COPY text is a boolean (`t`/`f`) in InferenceX's schema (§2.2).
const BOOL_COLUMNS: &[&str] = &[
    "disagg",
    "is_multinode",
    "prefill_dp_attention",
    "decode_dp_attention",
];

/// Columns whose COPY text is JSON (`jsonb`).
const JSON_COLUMNS: &[&str] = &["metrics", "workers"];

/// One COPY text-format field (PostgreSQL's `COPY … TO STDOUT` escapes: `\N` is NULL, and
/// `\\`, `\t`, `\n`, `\r`, `\b`, `\f`, `\v`, octal `\ddd` and `\xhh` escapes).
fn copy_field(raw: &str) -> Option<String> {
    if raw == "\\N" {
        return None;
    }
    let b = raw.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 == b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        match c {
            b't' => out.push(b'\t'),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                let mut n = 1;
                while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + u32::from(b[i] - b'0');
                    i += 1;
                    n += 1;
                }
                out.push(v as u8);
            }
            b'x' => {
                let mut v = 0u32;
                let mut n = 0;
                while n < 2 && i < b.len() && b[i].is_ascii_hexdigit() {
                    v = v * 16 + (b[i] as char).to_digit(16).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                out.push(v as u8);
            }
            other => out.push(other),
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// A COPY value as JSON: NULL → null, boolean and jsonb columns typed, the rest text (numbers
/// stay text; the readers parse them).
fn copy_value(column: &str, field: Option<String>) -> Value {
    match field {
        None => Value::Null,
        Some(s) if BOOL_COLUMNS.contains(&column) => Value::Bool(s == "t"),
        Some(s) if JSON_COLUMNS.contains(&column) => {
            serde_json::from_str(&s).unwrap_or(Value::String(s))
        }
        Some(s) => Value::String(s),
    }
}

/// The tables of a plain SQL script as `pg_restore -f -` writes it: each `COPY
/// [schema.]table (col, …) FROM stdin;` block up to its `\.` line. Tables other than the four
/// read are skipped.
fn tables_from_sql(sql: impl std::io::BufRead) -> Result<Tables, ParseError> {
    let mut t = Tables::default();
    let mut current: Option<(String, Vec<String>)> = None;
    for (n, line) in sql.lines().enumerate() {
        let line = line.map_err(|e| format!("pg_restore output line {}: {e}", n + 1))?;
        if let Some((name, cols)) = &current {
            if line == "\\." {
                current = None;
                continue;
            }
            if name == "skip" {
                continue;
            }
            let fields: Vec<&str> = line.split('\t').collect();
            if fields.len() != cols.len() {
                return Err(format!(
                    "pg_restore output line {}: {} has {} columns, the row {} fields",
                    n + 1,
                    name,
                    cols.len(),
                    fields.len()
                ));
            }
            let row: Row = cols
                .iter()
                .zip(fields)
                .map(|(c, f)| (c.clone(), copy_value(c, copy_field(f))))
                .collect();
            match name.as_str() {
                "configs" => t.configs.push(row),
                "workflow_runs" => t.workflow_runs.push(row),
                "benchmark_results" => t.benchmark_results.push(row),
                _ => t.eval_results.push(row),
            }
            continue;
        }
        let Some(rest) = line.strip_prefix("COPY ") else {
            continue;
        };
        let Some((name, cols)) = rest.split_once(" (") else {
            continue;
        };
        let table = name.rsplit('.').next().unwrap_or(name).trim_matches('"');
        if !TABLES.contains(&table) {
            // Skip the block's rows.
            current = Some(("skip".into(), Vec::new()));
            continue;
        }
        let cols = cols.split_once(") FROM stdin").map_or(cols, |c| c.0);
        let cols: Vec<String> = cols
            .split(", ")
            .map(|c| c.trim().trim_matches('"').to_string())
            .collect();
        current = Some((table.to_string(), cols));
    }
    Ok(t)
}

/// Reads a pg_dump custom-format dump (`*.dump`, or `*.dump.zst` as InferenceX releases it,
/// reassembled from its parts: `cat *.dump.zst.part* > x.dump.zst`) into runs, without a
/// database: `pg_restore --data-only -f -` turns the four tables read into COPY text, which is
/// parsed here; the rows then go the way of [`read_json_dump`]'s. `pg_restore` is the
/// `postgresql-client` package's and must be at least as new as the `pg_dump` that wrote the
/// file (InferenceX dumps with PostgreSQL 18's).
///
/// Errors: `pg_restore` missing or failing (its message), a corrupt zstd stream, a COPY row
/// whose field count does not match its columns.
pub fn read_pg_dump(file: &Path, ov: &Overrides) -> Result<Vec<RunData>, ParseError> {
    use std::io::{BufReader, Read, Write};
    use std::process::{Command, Stdio};
    let mut cmd = Command::new("pg_restore");
    cmd.args(["--data-only", "--no-owner", "--no-privileges", "-f", "-"]);
    for t in TABLES {
        cmd.args(["-t", t]);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!(
                "pg_restore: {e} (reading a pg_dump file needs PostgreSQL's client tools: \
                 apt-get install postgresql-client)"
            )
        })?;
    let mut stdin = child.stdin.take().ok_or("pg_restore: no stdin")?;
    let path = file.to_path_buf();
    let zst = file.to_string_lossy().ends_with(".zst");
    // Feed the (decompressed) dump from a thread while this one reads the SQL.
    let feeder = std::thread::spawn(move || -> Result<(), String> {
        let f = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut src: Box<dyn Read> = if zst {
            let mut d = zstd::stream::read::Decoder::new(f)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            // InferenceX compresses with `--long=27`; allow any window the format allows.
            d.window_log_max(31)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            Box::new(d)
        } else {
            Box::new(f)
        };
        match std::io::copy(&mut src, &mut stdin) {
            Ok(_) => stdin.flush().map_err(|e| e.to_string()),
            // pg_restore stopped reading (it failed): its own message says why.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            Err(e) if zst => Err(format!(
                "{}: not a readable zstd-compressed pg_dump: {e}",
                path.display()
            )),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    });
    let stdout = child.stdout.take().ok_or("pg_restore: no stdout")?;
    let mut stderr = child.stderr.take().ok_or("pg_restore: no stderr")?;
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let parsed = tables_from_sql(BufReader::new(stdout));
    let status = child.wait().map_err(|e| format!("pg_restore: {e}"))?;
    let fed = feeder
        .join()
        .unwrap_or_else(|_| Err("reading the dump failed".into()));
    let err = err_reader.join().unwrap_or_default();
    // A file that could not be read (not zstd at all) is the cause; pg_restore then only saw
    // a short input (trial 25: "input file is too short" for a file of random bytes).
    fed?;
    if !status.success() {
        return Err(format!(
            "{}: pg_restore failed ({status}): {}",
            file.display(),
            err.trim()
        ));
    }
    runs_from_tables(parsed?, file, ov)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_text_fields_unescape() {
        assert_eq!(copy_field("\\N"), None);
        assert_eq!(copy_field("a\\tb\\\\c\\nd").as_deref(), Some("a\tb\\c\nd"));
        assert_eq!(copy_field("\\101\\x42").as_deref(), Some("AB"));
        assert_eq!(copy_value("disagg", Some("t".into())), Value::Bool(true));
        assert_eq!(
            copy_value("metrics", Some("{\"x\": 1.5}".into())),
            serde_json::json!({"x": 1.5})
        );
        assert_eq!(copy_value("conc", Some("16".into())), Value::from("16"));
    }

    #[test]
    fn copy_blocks_of_the_read_tables_only() {
        let sql = "SET x = 1;\nCOPY public.server_logs (id, server_log) FROM stdin;\n1\tlog\n\\.\n\
                   COPY public.configs (id, hardware, disagg) FROM stdin;\n1\th200\tf\n2\t\\N\tt\n\\.\n";
        let t = tables_from_sql(sql.as_bytes()).unwrap();
        assert_eq!(t.configs.len(), 2);
        assert_eq!(t.configs[1]["hardware"], Value::Null);
        assert_eq!(t.configs[1]["disagg"], Value::Bool(true));
        assert!(t.workflow_runs.is_empty() && t.eval_results.is_empty());
        let bad = "COPY public.configs (id, hardware) FROM stdin;\n1\n\\.\n";
        assert!(tables_from_sql(bad.as_bytes())
            .unwrap_err()
            .contains("line 2: configs has 2 columns, the row 1 fields"));
    }
}
