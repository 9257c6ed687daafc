//! Versioned schema migrations, kept in code and identical on SQLite and PostgreSQL.
//!
//! Each migration is a list of DDL statements with two placeholders: `{ID}` (an integer
//! surrogate key: SQLite's `INTEGER PRIMARY KEY` rowid alias, PostgreSQL's identity column) and
//! `{BLOB}` (`BLOB` / `BYTEA`). Everything else is portable SQL. A migration runs in one
//! transaction together with its `schema_migrations` row, so a crash leaves either the old or the
//! new schema (the approach of InferenceX-app, reference/inferencex-app.md §2.1).
//!
//! Conventions (from the same source, adapted): text keys are lowercase canonical names; no NULLs
//! in natural-key columns (empty string / 0 mean "not set") so uniqueness works the same on both
//! backends; metrics in seconds (latencies), tok/s (throughput), tok/s/user (interactivity).

use crate::db::{Conn, Kind, Val};
use crate::StoreError;

/// One migration: version (strictly increasing), name, statements.
pub struct Migration {
    /// Version number, 1-based, strictly increasing.
    pub version: i64,
    /// Short name.
    pub name: &'static str,
    /// Statements with `{ID}` / `{BLOB}` placeholders.
    pub statements: &'static [&'static str],
}

/// Tables in dependency order (parents first): the order of dumps, restores and deletes reversed.
pub const TABLES: &[&str] = &[
    "runs",
    "configs",
    "points",
    "requests",
    "artifacts",
    "power_samples",
    "server_metrics",
    "evals",
    "eval_samples",
    "changelog_entries",
    "unknown_names",
];

/// The configuration columns, once: each `name: kind` (`text`, `int`, `flag`) is a field of
/// [`ConfigKey`] (`String`, `i64`, `bool`), a column of `configs` (`TEXT` / `BIGINT`, NOT NULL),
/// a member of its natural key ([`CONFIG_KEY`], the `configs_natural_key` constraint) and a
/// bind of [`ConfigKey::key_values`], in this order (which is also `ConfigKey`'s sort order).
macro_rules! config_key {
    ($($(#[$doc:meta])* $name:ident: $kind:ident,)*) => {
        /// The configuration a point was measured in: the natural key of `configs`, one field
        /// per column ([`CONFIG_KEY`]). Text fields are canonical lowercase names; sizes and
        /// counts are integers (0 = not set), flags booleans (stored 0/1).
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
        pub struct ConfigKey {
            $($(#[$doc])* pub $name: config_key!(@type $kind),)*
        }

        /// The natural-key columns of `configs`, in key order. Every one is NOT NULL.
        pub const CONFIG_KEY: &[&str] = &[$(stringify!($name)),*];

        const CONFIG_KINDS: &[Column] = &[$(Column::$kind),*];

        impl ConfigKey {
            /// The key's values in [`CONFIG_KEY`] order (flags as 0/1), to bind to its columns.
            pub fn key_values(&self) -> Vec<Val> {
                vec![$(config_key!(@value self.$name, $kind)),*]
            }
        }
    };
    (@type text) => { String };
    (@type int) => { i64 };
    (@type flag) => { bool };
    (@value $v:expr, text) => { Val::from($v.clone()) };
    (@value $v:expr, $kind:ident) => { Val::from($v) };
}

/// A configuration column's kind.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy)]
enum Column {
    text,
    int,
    flag,
}

config_key! {
    /// Canonical model key.
    model: text,
    /// InferenceX model prefix (`dsr1`, …), lowercase.
    model_prefix: text,
    /// Canonical hardware key (`b200`, `h100`, …).
    hardware: text,
    /// Canonical framework (`vllm`, `sglang`, …).
    framework: text,
    /// Canonical precision (`fp8`, `fp4`, …).
    precision: text,
    /// Speculative decoding method (`none`, `mtp`, …).
    spec_decoding: text,
    /// Disaggregated prefill/decode.
    disagg: flag,
    /// Multinode.
    is_multinode: flag,
    /// Tensor parallelism.
    tp: int,
    /// Pipeline parallelism.
    pp: int,
    /// Decode-context parallelism.
    dcp: int,
    /// Prefill-context parallelism.
    pcp: int,
    /// Expert parallelism.
    ep: int,
    /// Data-parallel attention.
    dp_attention: flag,
    /// Prefill tensor parallelism.
    prefill_tp: int,
    /// Prefill expert parallelism.
    prefill_ep: int,
    /// Prefill data-parallel attention.
    prefill_dp_attention: flag,
    /// Prefill workers.
    prefill_num_workers: int,
    /// Decode tensor parallelism.
    decode_tp: int,
    /// Decode expert parallelism.
    decode_ep: int,
    /// Decode data-parallel attention.
    decode_dp_attention: flag,
    /// Decode workers.
    decode_num_workers: int,
    /// Prefill GPUs.
    num_prefill_gpu: int,
    /// Decode GPUs.
    num_decode_gpu: int,
    /// KV-cache offload mode (`off` unless the artifact says otherwise).
    kv_offload: text,
    /// `fixed_seq_len`, `agentic`, … (InferenceX scenario type).
    scenario: text,
    /// Input sequence length in tokens (0 when the workload has none, e.g. traces).
    isl: int,
    /// Output sequence length in tokens (0 when the workload has none).
    osl: int,
    /// Container image.
    image: text,
}

const CONFIG_TEXT_LEN: usize = {
    let (mut i, mut n) = (0, 0);
    while i < CONFIG_KINDS.len() {
        if matches!(CONFIG_KINDS[i], Column::text) {
            n += 1;
        }
        i += 1;
    }
    n
};

/// The text columns of [`CONFIG_KEY`]; the others hold integers (counts, sizes, 0/1 flags).
pub const CONFIG_TEXT: &[&str] = &{
    let mut out = [""; CONFIG_TEXT_LEN];
    let (mut i, mut j) = (0, 0);
    while i < CONFIG_KEY.len() {
        if matches!(CONFIG_KINDS[i], Column::text) {
            out[j] = CONFIG_KEY[i];
            j += 1;
        }
        i += 1;
    }
    out
};

/// The column definitions of `configs`' natural key, as its `CREATE TABLE` declares them
/// (`name TEXT NOT NULL` / `name BIGINT NOT NULL`, comma-separated, key order), and the
/// constraint `configs_natural_key UNIQUE (…)` over them: generated from the one field list.
pub fn config_key_ddl() -> (String, String) {
    let columns: Vec<String> = CONFIG_KEY
        .iter()
        .zip(CONFIG_KINDS)
        .map(|(name, kind)| match kind {
            Column::text => format!("{name} TEXT NOT NULL"),
            Column::int | Column::flag => format!("{name} BIGINT NOT NULL"),
        })
        .collect();
    let unique = format!(
        "CONSTRAINT configs_natural_key UNIQUE ({})",
        CONFIG_KEY.join(", ")
    );
    (columns.join(", "), unique)
}

/// Hot metric columns of `points` (all `DOUBLE PRECISION`, NULL when unknown), in table order.
/// Names and units follow InferenceX's `agg_*.json` (reference/inferencex-producer.md §7.1):
/// latencies in **seconds**, throughput in tok/s (per GPU where named so), interactivity in
/// tok/s/user. Every other numeric metric is kept in the `metrics` JSON column.
pub const POINT_METRICS: &[&str] = &[
    "duration",
    "request_throughput",
    "output_throughput",
    "total_token_throughput",
    "tput_per_gpu",
    "output_tput_per_gpu",
    "input_tput_per_gpu",
    "mean_ttft",
    "median_ttft",
    "p90_ttft",
    "p99_ttft",
    "mean_tpot",
    "median_tpot",
    "p90_tpot",
    "p99_tpot",
    "mean_itl",
    "median_itl",
    "p99_itl",
    "mean_e2el",
    "median_e2el",
    "p90_e2el",
    "p99_e2el",
    "mean_intvty",
    "median_intvty",
    "p90_intvty",
    "p99_intvty",
    "p75_e2e_norm_intvty",
    "p90_e2e_norm_intvty",
    "median_ttfo",
    "p99_ttfo",
    "avg_power_w",
    "joules_per_total_token",
    "joules_per_input_token",
    "joules_per_output_token",
];

/// All migrations, oldest first.
pub const MIGRATIONS: &[Migration] = &[
    MIGRATION_1,
    MIGRATION_2,
    MIGRATION_3,
    MIGRATION_4,
    MIGRATION_5,
    MIGRATION_6,
    MIGRATION_7,
    MIGRATION_8,
];

const MIGRATION_1: Migration = Migration {
    version: 1,
    name: "initial",
    statements: &[
        // One ingested source (an artifact directory or an imported result file) with its
        // provenance. `run_key` = "sha256:<hex>" of the source's result bytes: the same content
        // ingested twice is the same run. `batch` groups the runs of one sweep (job.json
        // `sweep_id`, else the artifact directory's parent, else the file): repeats of a config
        // are different batches.
        "CREATE TABLE runs (
            id {ID},
            run_key TEXT NOT NULL UNIQUE,
            source_kind TEXT NOT NULL,
            source_path TEXT NOT NULL,
            batch TEXT NOT NULL,
            date TEXT NOT NULL,
            start_unix DOUBLE PRECISION,
            end_unix DOUBLE PRECISION,
            inferbench_version TEXT NOT NULL DEFAULT '',
            git_sha TEXT NOT NULL DEFAULT '',
            engine_version TEXT NOT NULL DEFAULT '',
            host TEXT NOT NULL DEFAULT '',
            result_filename TEXT NOT NULL DEFAULT '',
            job TEXT NOT NULL DEFAULT '{}'
        )",
        "CREATE TABLE configs (
            id {ID},
            model TEXT NOT NULL, model_prefix TEXT NOT NULL, hardware TEXT NOT NULL,
            framework TEXT NOT NULL, precision TEXT NOT NULL, spec_decoding TEXT NOT NULL,
            disagg BIGINT NOT NULL, is_multinode BIGINT NOT NULL,
            tp BIGINT NOT NULL, pp BIGINT NOT NULL, dcp BIGINT NOT NULL, pcp BIGINT NOT NULL,
            ep BIGINT NOT NULL, dp_attention BIGINT NOT NULL,
            prefill_tp BIGINT NOT NULL, prefill_ep BIGINT NOT NULL,
            prefill_dp_attention BIGINT NOT NULL, prefill_num_workers BIGINT NOT NULL,
            decode_tp BIGINT NOT NULL, decode_ep BIGINT NOT NULL,
            decode_dp_attention BIGINT NOT NULL, decode_num_workers BIGINT NOT NULL,
            num_prefill_gpu BIGINT NOT NULL, num_decode_gpu BIGINT NOT NULL,
            kv_offload TEXT NOT NULL, scenario TEXT NOT NULL,
            isl BIGINT NOT NULL, osl BIGINT NOT NULL, image TEXT NOT NULL,
            gpus BIGINT NOT NULL,
            CONSTRAINT configs_natural_key UNIQUE (model, model_prefix, hardware, framework,
              precision, spec_decoding, disagg, is_multinode, tp, pp, dcp, pcp, ep, dp_attention,
              prefill_tp, prefill_ep, prefill_dp_attention, prefill_num_workers, decode_tp,
              decode_ep, decode_dp_attention, decode_num_workers, num_prefill_gpu,
              num_decode_gpu, kv_offload, scenario, isl, osl, image)
        )",
        "CREATE INDEX configs_model_hw ON configs (model, hardware)",
        // One measured concurrency point. `error` NULL = success.
        "CREATE TABLE points (
            id {ID},
            run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            config_id BIGINT NOT NULL REFERENCES configs(id),
            conc BIGINT NOT NULL,
            date TEXT NOT NULL,
            num_prompts BIGINT, completed BIGINT, failed BIGINT,
            total_input_tokens BIGINT, total_output_tokens BIGINT,
            duration DOUBLE PRECISION, request_throughput DOUBLE PRECISION,
            output_throughput DOUBLE PRECISION, total_token_throughput DOUBLE PRECISION,
            tput_per_gpu DOUBLE PRECISION, output_tput_per_gpu DOUBLE PRECISION,
            input_tput_per_gpu DOUBLE PRECISION,
            mean_ttft DOUBLE PRECISION, median_ttft DOUBLE PRECISION,
            p90_ttft DOUBLE PRECISION, p99_ttft DOUBLE PRECISION,
            mean_tpot DOUBLE PRECISION, median_tpot DOUBLE PRECISION,
            p90_tpot DOUBLE PRECISION, p99_tpot DOUBLE PRECISION,
            mean_itl DOUBLE PRECISION, median_itl DOUBLE PRECISION, p99_itl DOUBLE PRECISION,
            mean_e2el DOUBLE PRECISION, median_e2el DOUBLE PRECISION,
            p90_e2el DOUBLE PRECISION, p99_e2el DOUBLE PRECISION,
            mean_intvty DOUBLE PRECISION, median_intvty DOUBLE PRECISION,
            p90_intvty DOUBLE PRECISION, p99_intvty DOUBLE PRECISION,
            p75_e2e_norm_intvty DOUBLE PRECISION, p90_e2e_norm_intvty DOUBLE PRECISION,
            median_ttfo DOUBLE PRECISION, p99_ttfo DOUBLE PRECISION,
            avg_power_w DOUBLE PRECISION, joules_per_total_token DOUBLE PRECISION,
            joules_per_input_token DOUBLE PRECISION, joules_per_output_token DOUBLE PRECISION,
            error TEXT,
            metrics TEXT NOT NULL DEFAULT '{}',
            CONSTRAINT points_natural_key UNIQUE (run_id, config_id, conc)
        )",
        "CREATE INDEX points_config ON points (config_id, conc, date)",
        // Per-request records of a point: the `requests.jsonl.zst` bytes as ingested (one blob
        // per point; see crate docs for why not rows), with the record count and checksum.
        "CREATE TABLE requests (
            point_id BIGINT NOT NULL PRIMARY KEY REFERENCES points(id) ON DELETE CASCADE,
            n_records BIGINT NOT NULL,
            n_profile BIGINT NOT NULL,
            n_failed BIGINT NOT NULL,
            sha256 TEXT NOT NULL,
            jsonl_zst {BLOB} NOT NULL
        )",
        // Other files of a run kept verbatim (zstd): server.log, server_metrics.jsonl, job.json,
        // power.csv, unrecognised extras. Nothing in an artifact directory is dropped.
        "CREATE TABLE artifacts (
            run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            size BIGINT NOT NULL,
            sha256 TEXT NOT NULL,
            content_zst {BLOB} NOT NULL,
            PRIMARY KEY (run_id, name)
        )",
        // Power samples (W) per GPU from power.csv, unix seconds.
        "CREATE TABLE power_samples (
            point_id BIGINT NOT NULL REFERENCES points(id) ON DELETE CASCADE,
            gpu TEXT NOT NULL,
            t_unix DOUBLE PRECISION NOT NULL,
            power_w DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (point_id, gpu, t_unix)
        )",
        // Server metric time series from server_metrics.jsonl (Prometheus names and labels).
        "CREATE TABLE server_metrics (
            point_id BIGINT NOT NULL REFERENCES points(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            labels TEXT NOT NULL,
            t_unix DOUBLE PRECISION NOT NULL,
            value DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (point_id, name, labels, t_unix)
        )",
        "CREATE TABLE evals (
            run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            config_id BIGINT NOT NULL REFERENCES configs(id),
            task TEXT NOT NULL,
            conc BIGINT NOT NULL,
            score DOUBLE PRECISION,
            score_se DOUBLE PRECISION,
            metrics TEXT NOT NULL DEFAULT '{}',
            PRIMARY KEY (run_id, config_id, task, conc)
        )",
        "CREATE TABLE changelog_entries (
            date TEXT NOT NULL,
            base_ref TEXT NOT NULL,
            head_ref TEXT NOT NULL,
            config_key TEXT NOT NULL,
            description TEXT NOT NULL,
            pr_link TEXT NOT NULL,
            PRIMARY KEY (base_ref, head_ref, config_key, description)
        )",
        // Names the normalizers did not recognise (stored as given, lowercased): the report of
        // what needs a new alias. `first_run_key` says where it was first seen.
        "CREATE TABLE unknown_names (
            kind TEXT NOT NULL,
            name TEXT NOT NULL,
            first_run_key TEXT NOT NULL,
            PRIMARY KEY (kind, name)
        )",
    ],
};

/// Migration 2: a covering partial index for the default chart (tok/s/GPU vs interactivity)
/// so its frontier reads only the index (InferenceX-app keeps such covering indexes too).
const MIGRATION_2: Migration = Migration {
    version: 2,
    name: "frontier_index",
    statements: &["CREATE INDEX points_frontier_default ON points (config_id, median_intvty, tput_per_gpu, id) WHERE error IS NULL"],
};

/// Migration 3: `points.valid` (1, or 0 for a result that is not a valid submission: AgentX
/// replays below 900 s or cut short, `submission_valid: false`), kept off frontiers.
const MIGRATION_3: Migration = Migration {
    version: 3,
    name: "points_valid",
    statements: &["ALTER TABLE points ADD COLUMN valid BIGINT NOT NULL DEFAULT 1"],
};

/// Migration 4: `points.invalid_reason`, why a point is not valid (NULL for a valid one and
/// for points stored before it was kept): what `report`'s `error` column shows for an invalid
/// row (trial 16).
const MIGRATION_4: Migration = Migration {
    version: 4,
    name: "points_invalid_reason",
    statements: &["ALTER TABLE points ADD COLUMN invalid_reason TEXT"],
};

/// Migration 5: the server the point was measured on (issue 39 §5). `server_fingerprint`:
/// 16 hex digits over its canonical settings (`inferbench_core::fingerprint`; load and
/// parallelism excluded), part of the point's group ([`crate::query::PointRow::group`]): two
/// differently configured servers never share a curve. `server_settings`: those settings as a
/// JSON object (key → value), what a legend names of them. Both `''` for points stored before
/// (and for sources that do not say), which group as before.
const MIGRATION_5: Migration = Migration {
    version: 5,
    name: "points_server_fingerprint",
    statements: &[
        "ALTER TABLE points ADD COLUMN server_fingerprint TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE points ADD COLUMN server_settings TEXT NOT NULL DEFAULT ''",
    ],
};

/// Migration 6: `points.gpu_seconds` (issue 43), the GPU-seconds the point cost as the runner
/// recorded them (`job.json`'s `status.gpu_seconds`: GPUs × wall time plus the point's share
/// of its engine's launch and stop; modelled time for sim rows). NULL for imports, for points
/// stored before it and for results our runner did not run: unknown, never 0.
const MIGRATION_6: Migration = Migration {
    version: 6,
    name: "points_gpu_seconds",
    statements: &["ALTER TABLE points ADD COLUMN gpu_seconds DOUBLE PRECISION"],
};

/// Migration 7: `eval_samples`, one row per scored question of an eval set's samples file
/// (`samples_<task>*.jsonl`, ours or lm-eval's): `doc_id` (index in the task's test split),
/// the question, the response, the extracted answer (strict filter), the target and whether
/// it was correct (1/0, NULL when the file did not say); texts bounded at ingest
/// ([`crate::evalset::MAX_TEXT_BYTES`]). Keyed like its `evals` row plus `doc_id`; a database
/// made before it has none for its evals until they are ingested again.
const MIGRATION_7: Migration = Migration {
    version: 7,
    name: "eval_samples",
    statements: &["CREATE TABLE eval_samples (
            run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
            config_id BIGINT NOT NULL REFERENCES configs(id),
            task TEXT NOT NULL,
            conc BIGINT NOT NULL,
            doc_id BIGINT NOT NULL,
            question TEXT NOT NULL,
            response TEXT NOT NULL,
            extracted TEXT NOT NULL,
            target TEXT NOT NULL,
            correct BIGINT,
            error TEXT NOT NULL,
            PRIMARY KEY (run_id, config_id, task, conc, doc_id)
        )"],
};

/// Migration 8: a point's early stop under `sweep --adaptive` (issue 43). `points.adaptive`:
/// 1 when the point ran under the early-stop rule (its summary's `inferbench.adaptive`), else 0
/// (every point stored before it, imports, fixed-protocol points). `points.prompts_used`: the
/// profile prompts an adaptive point sent (`inferbench.prompts_used`; fewer than InferenceX's
/// 10 × conc when the rule stopped it early); NULL when not adaptive or unknown.
const MIGRATION_8: Migration = Migration {
    version: 8,
    name: "points_adaptive",
    statements: &[
        "ALTER TABLE points ADD COLUMN adaptive BIGINT NOT NULL DEFAULT 0",
        "ALTER TABLE points ADD COLUMN prompts_used BIGINT",
    ],
};

/// The schema version this binary writes.
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

fn expand(stmt: &str, kind: Kind) -> String {
    let (id, blob) = match kind {
        Kind::Sqlite => ("INTEGER PRIMARY KEY", "BLOB"),
        Kind::Postgres => (
            "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
            "BYTEA",
        ),
    };
    stmt.replace("{ID}", id).replace("{BLOB}", blob)
}

/// The tables of the database's schema (SQLite's own aside), sorted: what a database without
/// inferbench's tables holds instead.
pub(crate) fn table_names(conn: &mut Conn) -> Result<Vec<String>, StoreError> {
    let rows = match conn.kind() {
        Kind::Sqlite => conn.query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             ORDER BY name",
            &[],
        )?,
        Kind::Postgres => conn.query(
            "SELECT table_name FROM information_schema.tables \
             WHERE table_schema = current_schema() ORDER BY table_name",
            &[],
        )?,
    };
    Ok(rows
        .iter()
        .filter_map(|r| r.first().and_then(Val::as_str).map(str::to_string))
        .collect())
}

/// The current schema version (0 = empty database). Only reads, so a read-only session
/// (`Store::open_read_only`; PostgreSQL refuses even `CREATE TABLE IF NOT EXISTS` there) can
/// ask.
pub(crate) fn current_version(conn: &mut Conn) -> Result<i64, StoreError> {
    let table = match conn.kind() {
        Kind::Sqlite => conn.query(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'",
            &[],
        )?,
        Kind::Postgres => conn.query(
            "SELECT 1 FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name = 'schema_migrations'",
            &[],
        )?,
    };
    if table.is_empty() {
        return Ok(0);
    }
    let rows = conn.query("SELECT version FROM schema_migrations", &[])?;
    Ok(rows
        .iter()
        .filter_map(|r| r.first().and_then(Val::as_i64))
        .max()
        .unwrap_or(0))
}

/// Applies every migration newer than the database's version, each in its own transaction.
/// Returns the versions applied. Errors if the database is newer than this binary.
pub(crate) fn migrate(conn: &mut Conn) -> Result<Vec<i64>, StoreError> {
    // PostgreSQL: several ingesters (e.g. Slurm array tasks) may migrate one database at once;
    // a session advisory lock serialises them. SQLite serialises through its write lock, taken
    // at each migration's BEGIN IMMEDIATE.
    let pg = conn.kind() == Kind::Postgres;
    if pg {
        conn.batch("SELECT pg_advisory_lock(7234001)")?;
    }
    let res = migrate_locked(conn);
    if pg {
        let _ = conn.batch("SELECT pg_advisory_unlock(7234001)");
    }
    res
}

fn migrate_locked(conn: &mut Conn) -> Result<Vec<i64>, StoreError> {
    conn.batch(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
            version BIGINT NOT NULL PRIMARY KEY,
            name TEXT NOT NULL
        )",
    )?;
    let current = current_version(conn)?;
    if current > latest_version() {
        return Err(StoreError::SchemaTooNew {
            found: current,
            supported: latest_version(),
        });
    }
    let kind = conn.kind();
    let mut applied = Vec::new();
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        // SQLite: take the write lock at BEGIN (waiting out another migrator through the busy
        // timeout) and look again inside it: two first writers to a new file both saw version
        // 0, and the second failed with "table runs already exists" (trial 18).
        conn.batch(match kind {
            Kind::Sqlite => "BEGIN IMMEDIATE",
            Kind::Postgres => "BEGIN",
        })?;
        if kind == Kind::Sqlite && current_version(conn)? >= m.version {
            conn.batch("COMMIT")?;
            continue;
        }
        let res = (|| {
            for s in m.statements {
                conn.batch(&expand(s, kind))?;
            }
            conn.exec(
                "INSERT INTO schema_migrations (version, name) VALUES (?, ?)",
                &[Val::Int(m.version), Val::from(m.name)],
            )?;
            Ok::<_, StoreError>(())
        })();
        match res {
            Ok(()) => conn.batch("COMMIT")?,
            Err(e) => {
                let _ = conn.batch("ROLLBACK");
                return Err(e);
            }
        }
        applied.push(m.version);
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `configs` table of migration 1 declares exactly the field list's columns, types and
    /// natural key (a database written before the field list still opens: nothing changed).
    #[test]
    fn the_configs_table_is_the_field_lists() {
        let create = MIGRATION_1
            .statements
            .iter()
            .find(|s| s.starts_with("CREATE TABLE configs"))
            .unwrap();
        let flat = create
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .replace("( ", "(");
        let (columns, unique) = config_key_ddl();
        assert!(
            flat.contains(&format!(
                "id {{ID}}, {columns}, gpus BIGINT NOT NULL, {unique} )"
            )),
            "{flat}\n{columns}\n{unique}"
        );
        assert_eq!(CONFIG_KEY.len(), 29);
        assert_eq!(
            CONFIG_TEXT,
            [
                "model",
                "model_prefix",
                "hardware",
                "framework",
                "precision",
                "spec_decoding",
                "kv_offload",
                "scenario",
                "image"
            ]
        );
        let key = ConfigKey {
            hardware: "b200".into(),
            dp_attention: true,
            tp: 8,
            ..ConfigKey::default()
        };
        let v = key.key_values();
        assert_eq!(v.len(), CONFIG_KEY.len());
        let at = |name: &str| &v[CONFIG_KEY.iter().position(|k| *k == name).unwrap()];
        assert_eq!(*at("hardware"), Val::from("b200"));
        assert_eq!(*at("dp_attention"), Val::Int(1));
        assert_eq!(*at("tp"), Val::Int(8));
        assert_eq!(*at("disagg"), Val::Int(0));
    }
}
