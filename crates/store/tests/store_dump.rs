//! InferenceX's public database dump, JSON form (reference/inferencex-app.md §2.2, §5.7), made
//! from the documented schema (tests/dumps/inferencex-dump-2026-07-06: two GitHub runs, one of
//! them with a superseded first attempt; a failed row; an eval; a row whose config is missing).

use std::path::{Path, PathBuf};

use inferbench_store::{CostOptions, Filter, IngestOptions, Store};

fn dump() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/dumps/inferencex-dump-2026-07-06")
}

#[test]
fn json_dump_imports_latest_attempts_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.db").display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    let r = s
        .ingest_inferencex_dump(&dump(), &IngestOptions::default())
        .unwrap();
    // Runs 555 (attempt 1; attempt 0's two rows are not read) and 777; 555's failed conc-64
    // row is a failed point; row 106 names config 99, which the dump lacks.
    assert_eq!(
        (r.runs_ingested, r.runs_reingested, r.points),
        (2, 0, 4),
        "{r:?}"
    );
    assert!(r.skipped.is_empty() && r.unknown.is_empty(), "{r:?}");
    assert_eq!(
        r.warnings,
        [
            "benchmark_results.json row 7 (id 106): its config or workflow run is not in the \
             dump; left out (the rest is stored; `ingest --strict` exits 1 on it)",
            "2 row(s) of earlier attempts of a workflow run not imported (only each run's \
             latest attempt counts, as on InferenceX)",
        ]
    );
    let all = |s: &mut Store| {
        let f = Filter {
            include_failed: true,
            ..Default::default()
        };
        s.points(&f, &CostOptions::default()).unwrap()
    };
    let rows = all(&mut s);
    let seen: Vec<(String, String, String, i64, String, Option<String>)> = rows
        .iter()
        .map(|p| {
            (
                p.batch.clone(),
                p.group(),
                p.parallelism(),
                p.conc,
                p.source_kind.clone(),
                p.error.clone(),
            )
        })
        .collect();
    let kind = "inferencex-dump".to_string();
    assert_eq!(
        seen,
        [
            (
                "inferencex-run-555".into(),
                "dsr1 1024/1024 h200_sglang_fp8 · InferenceX".into(),
                "TP8".into(),
                4,
                kind.clone(),
                None
            ),
            (
                "inferencex-run-555".into(),
                "dsr1 1024/1024 h200_sglang_fp8 · InferenceX".into(),
                "TP8".into(),
                16,
                kind.clone(),
                None
            ),
            (
                "inferencex-run-555".into(),
                "dsr1 1024/1024 h200_sglang_fp8 · InferenceX".into(),
                "TP8".into(),
                64,
                kind.clone(),
                Some("server exited during the benchmark".into())
            ),
            (
                "inferencex-run-777".into(),
                "gptoss120b 8192/1024 b200_trt_fp4_mtp · InferenceX".into(),
                "DEP4".into(),
                8,
                kind.clone(),
                None
            ),
        ]
    );
    // Metrics come from the rows' `metrics` objects as they are; the date from the row.
    let c16 = &rows[1];
    assert_eq!(
        (
            c16.get("tput_per_gpu"),
            c16.get("median_intvty"),
            c16.get("p99_ttft")
        ),
        (Some(407.04), Some(52.63), Some(0.3))
    );
    assert_eq!(
        (c16.date.as_str(), c16.image.as_str()),
        ("2026-06-30", "lmsysorg/sglang:v0.5.5")
    );
    let counts: std::collections::BTreeMap<String, i64> =
        s.table_counts().unwrap().into_iter().collect();
    assert_eq!(
        (counts["runs"], counts["points"], counts["evals"]),
        (2, 4, 1)
    );

    // The same dump again: nothing new, nothing changed.
    let again = s
        .ingest_inferencex_dump(&dump(), &IngestOptions::default())
        .unwrap();
    assert_eq!((again.runs_ingested, again.runs_reingested), (2, 2));
    assert_eq!(all(&mut s), rows);
    let counts: std::collections::BTreeMap<String, i64> =
        s.table_counts().unwrap().into_iter().collect();
    assert_eq!(
        (counts["runs"], counts["points"], counts["evals"]),
        (2, 4, 1)
    );
}

#[test]
fn a_directory_that_is_not_a_dump_is_an_error_naming_the_table() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("configs.json"), "[]").unwrap();
    let db = dir.path().join("d.db").display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    let e = s
        .ingest_inferencex_dump(dir.path(), &IngestOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("workflow_runs.json: missing"), "{e}");
    std::fs::write(dir.path().join("workflow_runs.json"), "[]").unwrap();
    std::fs::write(
        dir.path().join("benchmark_results.json"),
        "[\n{\"id\": 1},\n",
    )
    .unwrap();
    let e = s
        .ingest_inferencex_dump(dir.path(), &IngestOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("benchmark_results.json:3:"), "{e}");
    assert!(e.contains("invalid JSON"), "{e}");
}

/// The pg_dump form ([B]): the JSON dump's rows loaded into InferenceX's documented tables in
/// a scratch schema of the test PostgreSQL, `pg_dump -Fc` of that schema, zstd-compressed as
/// InferenceX releases it (`--long=27`), imported through `pg_restore` (no database needed for
/// the import): the same runs and points as the JSON form.
#[test]
fn pg_dump_form_imports_as_the_json_form() {
    let Some(url) = std::env::var("INFERBENCH_TEST_PG_URL")
        .ok()
        .filter(|u| !u.is_empty())
    else {
        assert!(
            std::env::var("INFERBENCH_REQUIRE_SERVICES").as_deref() != Ok("1"),
            "INFERBENCH_TEST_PG_URL is not set but INFERBENCH_REQUIRE_SERVICES=1"
        );
        eprintln!("skipping: INFERBENCH_TEST_PG_URL not set (scripts/setup/postgres.sh)");
        return;
    };
    let schema = format!("ixdump_{}", std::process::id());
    let mut pg = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    pg.batch_execute(&format!(
        "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema};
         CREATE TABLE {schema}.configs (id serial PRIMARY KEY, hardware text NOT NULL,
           framework text NOT NULL, model text NOT NULL, precision text NOT NULL,
           spec_method text NOT NULL, disagg bool NOT NULL DEFAULT false,
           is_multinode bool NOT NULL DEFAULT false, prefill_tp smallint NOT NULL,
           decode_tp smallint NOT NULL, prefill_ep smallint NOT NULL DEFAULT 1,
           decode_ep smallint NOT NULL DEFAULT 1, prefill_dp_attention bool DEFAULT false,
           decode_dp_attention bool DEFAULT false, prefill_num_workers smallint DEFAULT 0,
           decode_num_workers smallint DEFAULT 0, num_prefill_gpu smallint NOT NULL,
           num_decode_gpu smallint NOT NULL);
         CREATE TABLE {schema}.workflow_runs (id bigserial PRIMARY KEY, github_run_id bigint,
           run_attempt smallint DEFAULT 0, name text, status text, conclusion text,
           head_sha text, head_branch text, html_url text, created_at timestamptz NOT NULL,
           run_started_at timestamptz, date date NOT NULL);
         CREATE TABLE {schema}.server_logs (id bigserial PRIMARY KEY, server_log text NOT NULL);
         CREATE TABLE {schema}.benchmark_results (id bigserial PRIMARY KEY,
           workflow_run_id bigint, config_id int, benchmark_type text, date date, isl int,
           osl int, conc int, image text, metrics jsonb NOT NULL, error text,
           server_log_id bigint);
         CREATE TABLE {schema}.eval_results (id bigserial PRIMARY KEY, workflow_run_id bigint,
           config_id int, task text, date date, isl int, osl int, conc int,
           lm_eval_version text, metrics jsonb);
         INSERT INTO {schema}.server_logs (server_log) VALUES (E'line one\\n\\tline two');"
    ))
    .unwrap();
    // Rows with an id whose config is missing still load (no foreign keys here, as in the
    // JSON dump), so both forms hold the same rows.
    for t in [
        "configs",
        "workflow_runs",
        "benchmark_results",
        "eval_results",
    ] {
        let rows = std::fs::read_to_string(dump().join(format!("{t}.json"))).unwrap();
        pg.execute(
            &format!(
                "INSERT INTO {schema}.{t} SELECT * FROM json_populate_recordset(NULL::{schema}.{t}, $1::text::json)"
            ),
            &[&rows],
        )
        .unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("inferencex-2026-07-06.dump");
    let out = std::process::Command::new("pg_dump")
        .args([
            "-Fc",
            "--no-owner",
            "--no-privileges",
            "-n",
            &schema,
            "-d",
            &url,
            "-f",
        ])
        .arg(&plain)
        .output()
        .unwrap();
    pg.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let zst = dir.path().join("inferencex-2026-07-06.dump.zst");
    {
        let mut enc =
            zstd::stream::write::Encoder::new(std::fs::File::create(&zst).unwrap(), 19).unwrap();
        enc.long_distance_matching(true).unwrap();
        enc.window_log(27).unwrap();
        std::io::copy(&mut std::fs::File::open(&plain).unwrap(), &mut enc).unwrap();
        enc.finish().unwrap();
    }

    let open = |name: &str| {
        let mut s = Store::open(&dir.path().join(name).display().to_string()).unwrap();
        s.migrate().unwrap();
        s
    };
    let points = |s: &mut Store| {
        let f = Filter {
            include_failed: true,
            ..Default::default()
        };
        s.points(&f, &CostOptions::default()).unwrap()
    };
    let mut json = open("json.db");
    json.ingest_inferencex_dump(&dump(), &IngestOptions::default())
        .unwrap();
    for file in [&plain, &zst] {
        let mut s = open("pg.db");
        let r = s
            .ingest_inferencex_dump(file, &IngestOptions::default())
            .unwrap();
        assert_eq!((r.runs_ingested, r.points), (2, 4), "{r:?}");
        assert_eq!(points(&mut s), points(&mut json), "{}", file.display());
        let counts: std::collections::BTreeMap<String, i64> =
            s.table_counts().unwrap().into_iter().collect();
        assert_eq!(counts["evals"], 1);
        drop(s);
        std::fs::remove_file(dir.path().join("pg.db")).unwrap();
    }
}
