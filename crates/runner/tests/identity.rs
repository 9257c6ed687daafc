//! `JobSpec::result_filename` is core's typed `PointConfig::result_filename` (reference §3.1).
//! This pins that reading a row typed keeps every identity field: for each flat matrix
//! InferenceX's generator printed (../shared/data/inferencex/expected/*.json), the runner's name
//! equals the name read field by field from the raw row's JSON (an independent reading, below).

use std::path::Path;

use serde_json::{Map, Value};

#[test]
fn typed_rows_keep_the_result_filename_identity() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/inferencex/expected");
    if !dir.exists() {
        eprintln!("skipping: {} absent", dir.display());
        return;
    }
    let mut checked = 0;
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for f in files {
        let raw: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let Some(raw_rows) = raw.as_array() else {
            continue;
        };
        let jobs = inferbench_runner::load_matrix(&f).unwrap();
        assert_eq!(jobs.len(), raw_rows.len(), "{}", f.display());
        for (job, raw_row) in jobs.iter().zip(raw_rows) {
            let ours = job.result_filename("b200-dgxc_03");
            let theirs = untyped_result_filename(raw_row.as_object().unwrap(), "b200-dgxc_03");
            assert_eq!(ours, theirs, "{}: row {}", f.display(), job.index);
            checked += 1;
        }
    }
    assert!(checked > 3000, "{checked}");
}

fn s<'a>(row: &'a Map<String, Value>, k: &str) -> &'a str {
    row.get(k).and_then(Value::as_str).unwrap_or("")
}

fn int_text(v: Option<&Value>, default: i64) -> String {
    match v {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => default.to_string(),
    }
}

fn bool_text(v: Option<&Value>) -> &'static str {
    if v.and_then(Value::as_bool).unwrap_or(false) {
        "true"
    } else {
        "false"
    }
}

fn conc_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::Array(a)) => a
            .iter()
            .map(|c| int_text(Some(c), 0))
            .collect::<Vec<_>>()
            .join("x"),
        other => int_text(other, 0),
    }
}

fn worker_text(w: Option<&Value>) -> String {
    let g = |k: &str| w.and_then(|w| w.get(k));
    format!(
        "tp{}-pp{}-dcp{}-pcp{}-ep{}-dp{}-nw{}",
        int_text(g("tp"), 1),
        int_text(g("pp"), 1),
        int_text(g("dcp-size"), 1),
        int_text(g("pcp-size"), 1),
        int_text(g("ep"), 1),
        bool_text(g("dp-attn")),
        int_text(g("num-worker"), 1),
    )
}

/// `RESULT_FILENAME` read by name from a row's JSON, defaults for absent fields (§3.1).
fn untyped_result_filename(row: &Map<String, Value>, runner_name: &str) -> String {
    let head = format!(
        "{}_{}_{}",
        s(row, "exp-name"),
        s(row, "precision"),
        s(row, "framework")
    );
    let spec = match s(row, "spec-decoding") {
        "" => "none",
        x => x,
    };
    let tail = format!(
        "_disagg-{}_spec-{spec}_conc{}_{runner_name}",
        bool_text(row.get("disagg")),
        conc_text(row.get("conc"))
    );
    let mut name = if row.contains_key("prefill") {
        format!(
            "{head}_prefill-{}_decode-{}{tail}",
            worker_text(row.get("prefill")),
            worker_text(row.get("decode"))
        )
    } else {
        format!(
            "{head}_tp{}-pp{}-dcp{}-pcp{}-ep{}-dpa{}{tail}",
            int_text(row.get("tp"), 1),
            int_text(row.get("pp"), 1),
            int_text(row.get("dcp-size"), 1),
            int_text(row.get("pcp-size"), 1),
            int_text(row.get("ep"), 1),
            bool_text(row.get("dp-attn")),
        )
    };
    if let Some(fp) = row.get("recipe-fingerprint").and_then(Value::as_str) {
        name.push_str("_recipe-");
        name.push_str(&fp[..fp.len().min(16)]);
    }
    name
}
