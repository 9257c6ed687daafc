//! Test helpers: fixture copies and the two backends (SQLite temp file; PostgreSQL from
//! `INFERBENCH_TEST_PG_URL` in a fresh schema, skipped with a message when unset unless
//! `INFERBENCH_REQUIRE_SERVICES=1`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use inferbench_store::Store;

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Copies the fixture tree into a temp dir and adds a `requests.jsonl.zst` to the conc4 point:
/// as many profile records as its summary's 40 completed (a records file shorter than its
/// summary fails the point: issue 39, files, ingest and hints, 3), four times the same 10 (sent
/// 0, last token at (k+1)·100 ms, 10 tokens each, k = i mod 10: their percentiles are those of
/// the 10).
pub fn fixture_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixtures(), dir.path());
    let mut jsonl = String::new();
    for i in 0..40u64 {
        let k = i % 10;
        jsonl.push_str(&format!(
            "{{\"request_id\":{i},\"phase\":\"profile\",\"success\":true,\"scheduled_ns\":0,\"sent_ns\":0,\"first_token_ns\":50000000,\"last_token_ns\":{},\"end_ns\":{},\"prompt_tokens\":1024,\"prompt_tokens_client\":1024,\"completion_tokens\":10,\"completion_tokens_source\":\"server\"}}\n",
            (k + 1) * 100_000_000,
            (k + 1) * 100_000_000 + 10
        ));
    }
    let z = zstd::encode_all(jsonl.as_bytes(), 3).unwrap();
    std::fs::write(dir.path().join("sweep-h200/conc4/requests.jsonl.zst"), z).unwrap();
    dir
}

pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        let t = to.join(e.file_name());
        if p.is_dir() {
            copy_tree(&p, &t);
        } else {
            std::fs::copy(&p, &t).unwrap();
        }
    }
}

/// A fresh SQLite database in a temp dir (kept alive by the returned guard).
pub fn sqlite() -> (Store, tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("t.db").display().to_string();
    let mut s = Store::open(&url).unwrap();
    s.migrate().unwrap();
    (s, dir, url)
}

/// A fresh PostgreSQL schema, or `None` (with a printed reason) when no server is configured.
/// Panics when `INFERBENCH_REQUIRE_SERVICES=1` and the server is missing.
pub fn postgres(test: &str) -> Option<(Store, String)> {
    let Ok(base) = std::env::var("INFERBENCH_TEST_PG_URL") else {
        if std::env::var("INFERBENCH_REQUIRE_SERVICES").as_deref() == Ok("1") {
            panic!("INFERBENCH_TEST_PG_URL is not set but INFERBENCH_REQUIRE_SERVICES=1 (run scripts/setup/postgres.sh)");
        }
        eprintln!("skipping PostgreSQL part of {test}: INFERBENCH_TEST_PG_URL not set (run scripts/setup/postgres.sh)");
        return None;
    };
    // One fixed schema per test (dropped first), so repeated local runs leave no litter.
    let schema = format!(
        "t_{}",
        test.to_lowercase()
            .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
    );
    let mut c = postgres::Client::connect(&base, postgres::NoTls)
        .expect("connect to INFERBENCH_TEST_PG_URL");
    c.batch_execute(&format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; DROP SCHEMA IF EXISTS fresh_{schema} CASCADE"
    ))
    .unwrap();
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}schema={schema}");
    let mut s = Store::open(&url).unwrap();
    s.migrate().unwrap();
    Some((s, url))
}

/// A copy of `tests/old-schema/<file>` (a database written by an earlier build) opened and
/// migrated: asserts that it was at schema version `from` and that `migrate` applied exactly
/// `applied`, then nothing on a second call. Returns the store, the temp dir that holds the
/// copy (keep it alive) and the copy's path.
pub fn migrated_old(file: &str, from: i64, applied: &[i64]) -> (Store, tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/old-schema")
            .join(file),
        &db,
    )
    .unwrap();
    let url = db.display().to_string();
    let mut store = Store::open(&url).unwrap();
    assert_eq!(store.schema_version().unwrap(), from);
    assert_eq!(store.migrate().unwrap(), applied);
    assert_eq!(store.migrate().unwrap(), Vec::<i64>::new());
    (store, dir, url)
}
