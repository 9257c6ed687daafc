//! One run and one point in detail, for the dashboard's run page: the run's provenance, its
//! points, the files kept verbatim with it, a point's per-request records and its power
//! samples. Ids are the database's (`runs.id`, `points.id`; [`crate::PointRow::run_id`],
//! [`crate::PointRow::point_id`]), stable within one database.

use serde::Serialize;

use crate::db::Val;
use crate::{CostOptions, Filter, PointRow, Store, StoreError};

/// A run's provenance (the `runs` row; `job` parsed from its JSON text).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInfo {
    /// `runs.id`.
    pub id: i64,
    /// `inferbench`, `vllm`, `inferencex`, `aiperf`.
    pub source_kind: String,
    /// Path the run was ingested from.
    pub source_path: String,
    /// Sweep / batch name.
    pub batch: String,
    /// UTC date `YYYY-MM-DD`.
    pub date: String,
    /// Benchmark window, unix seconds.
    pub start_unix: Option<f64>,
    /// End of the benchmark window, unix seconds.
    pub end_unix: Option<f64>,
    /// inferbench version that measured it ("" when unknown).
    pub inferbench_version: String,
    /// Git commit of that inferbench ("" when unknown).
    pub git_sha: String,
    /// Serving engine and version ("" when unknown).
    pub engine_version: String,
    /// Host it ran on ("" when unknown).
    pub host: String,
    /// InferenceX's RESULT_FILENAME ("" when unknown).
    pub result_filename: String,
    /// `job.json` (JobSpec + provenance), `{}` when absent.
    pub job: serde_json::Value,
}

/// A file kept with a run (`artifacts` table): name and size in bytes (uncompressed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArtifactInfo {
    /// File name as ingested (`server.log`, `job.json`, …).
    pub name: String,
    /// Size in bytes.
    pub size: i64,
}

/// One server-metric time series of a point (`server_metrics`, scraped from the server's
/// Prometheus `/metrics` during the run): name and label set as scraped, and `(unix seconds,
/// value)` samples in time order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerSeries {
    /// Metric name (`vllm:num_requests_running`, …).
    pub name: String,
    /// Labels as scraped (`engine="0",model_name="…"`).
    pub labels: String,
    /// `[unix seconds, value]`, by time.
    pub samples: Vec<[f64; 2]>,
}

/// One power sample of one GPU (`power_samples`): unix seconds and watts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PowerSample {
    /// GPU index or name as in power.csv.
    pub gpu: String,
    /// Unix seconds.
    pub t_unix: f64,
    /// Power draw in W.
    pub power_w: f64,
}

fn unzstd(what: &str, b: &[u8]) -> Result<Vec<u8>, StoreError> {
    zstd::decode_all(b).map_err(|e| StoreError::Other(format!("{what}: stored bytes: {e}")))
}

impl Store {
    /// The run `id`, or `None` when there is none.
    pub fn run_info(&mut self, id: i64) -> Result<Option<RunInfo>, StoreError> {
        self.require_migrated()?;
        let rows = self.conn.query(
            "SELECT id, source_kind, source_path, batch, date, start_unix, end_unix, \
             inferbench_version, git_sha, engine_version, host, result_filename, job \
             FROM runs WHERE id = ?",
            &[Val::Int(id)],
        )?;
        Ok(rows.into_iter().next().map(|r| {
            let s = |i: usize| r[i].as_str().unwrap_or("").to_string();
            RunInfo {
                id: r[0].as_i64().unwrap_or(id),
                source_kind: s(1),
                source_path: s(2),
                batch: s(3),
                date: s(4),
                start_unix: r[5].as_f64(),
                end_unix: r[6].as_f64(),
                inferbench_version: s(7),
                git_sha: s(8),
                engine_version: s(9),
                host: s(10),
                result_filename: s(11),
                job: serde_json::from_str(r[12].as_str().unwrap_or("{}"))
                    .unwrap_or(serde_json::Value::Null),
            }
        }))
    }

    /// Every point of run `id` (failed and invalid ones included), in the store's order, with
    /// all stored metrics.
    pub fn run_points(&mut self, id: i64, cost: &CostOptions) -> Result<Vec<PointRow>, StoreError> {
        self.require_migrated()?;
        let ids: Vec<i64> = self
            .conn
            .query("SELECT id FROM points WHERE run_id = ?", &[Val::Int(id)])?
            .iter()
            .filter_map(|r| r[0].as_i64())
            .collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let f = Filter {
            include_failed: true,
            include_invalid: true,
            all_metrics: true,
            ..Filter::default()
        };
        self.points_by_id(&f, cost, &ids)
    }

    /// Point `id` (`points.id`) with all stored metrics, failed and invalid alike (its run is
    /// [`PointRow::run_id`]); `None` when there is no such point.
    ///
    /// Errors: the database is not migrated, or the query fails.
    pub fn point_row(
        &mut self,
        id: i64,
        cost: &CostOptions,
    ) -> Result<Option<PointRow>, StoreError> {
        self.require_migrated()?;
        let f = Filter {
            include_failed: true,
            include_invalid: true,
            all_metrics: true,
            ..Filter::default()
        };
        Ok(self.points_by_id(&f, cost, &[id])?.into_iter().next())
    }

    /// The files kept with run `id`, by name.
    pub fn run_artifacts(&mut self, id: i64) -> Result<Vec<ArtifactInfo>, StoreError> {
        self.require_migrated()?;
        let rows = self.conn.query(
            "SELECT name, size FROM artifacts WHERE run_id = ? ORDER BY name",
            &[Val::Int(id)],
        )?;
        Ok(rows
            .iter()
            .map(|r| ArtifactInfo {
                name: r[0].as_str().unwrap_or("").to_string(),
                size: r[1].as_i64().unwrap_or(0),
            })
            .collect())
    }

    /// The bytes of the file `name` kept with run `id`, or `None` when there is no such file
    /// (the name is looked up in the database: no path is ever opened).
    pub fn run_artifact(&mut self, id: i64, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.require_migrated()?;
        self.zstd_blob(
            name,
            "SELECT content_zst FROM artifacts WHERE run_id = ? AND name = ?",
            &[Val::Int(id), Val::Text(name.to_string())],
        )
    }

    /// Point `id`'s per-request records as stored (the artifact's JSONL bytes), or `None` when
    /// the point kept none.
    pub fn point_records(&mut self, id: i64) -> Result<Option<Vec<u8>>, StoreError> {
        self.require_migrated()?;
        self.zstd_blob(
            "requests",
            "SELECT jsonl_zst FROM requests WHERE point_id = ?",
            &[Val::Int(id)],
        )
    }

    /// The SHA-256 (hex) of point `id`'s stored request records (the JSONL bytes
    /// [`Store::point_records`] returns, as ingest hashed them), or `None` when the point kept
    /// none. A small read (no blob): a cache of anything computed from the records keys on it,
    /// since a re-ingest rewrites a point's records under the same id.
    pub fn point_records_digest(&mut self, id: i64) -> Result<Option<String>, StoreError> {
        self.require_migrated()?;
        let rows = self.conn.query(
            "SELECT sha256 FROM requests WHERE point_id = ?",
            &[Val::Int(id)],
        )?;
        Ok(rows
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next())
            .and_then(|v| v.as_str().map(str::to_string)))
    }

    /// The first column of the first row of `sql` as a zstd blob, decompressed (`what` names
    /// it in errors); `None` when there is no row.
    fn zstd_blob(
        &mut self,
        what: &str,
        sql: &str,
        params: &[Val],
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let rows = self.conn.query(sql, params)?;
        match rows.into_iter().next().and_then(|r| r.into_iter().next()) {
            Some(Val::Blob(b)) => unzstd(what, &b).map(Some),
            _ => Ok(None),
        }
    }

    /// Point `id`'s server-metric series (`points.id`), by name, labels and time; empty when
    /// the server had no `/metrics` or none was scraped.
    ///
    /// Errors: the database is not migrated, or the query fails.
    pub fn point_server_metrics(&mut self, id: i64) -> Result<Vec<ServerSeries>, StoreError> {
        self.require_migrated()?;
        let rows = self.conn.query(
            "SELECT name, labels, t_unix, value FROM server_metrics WHERE point_id = ?
             ORDER BY name, labels, t_unix",
            &[Val::Int(id)],
        )?;
        let mut out: Vec<ServerSeries> = Vec::new();
        for r in &rows {
            let (name, labels) = (r[0].as_str().unwrap_or(""), r[1].as_str().unwrap_or(""));
            let sample = [
                r[2].as_f64().unwrap_or(f64::NAN),
                r[3].as_f64().unwrap_or(f64::NAN),
            ];
            match out.last_mut() {
                Some(s) if s.name == name && s.labels == labels => s.samples.push(sample),
                _ => out.push(ServerSeries {
                    name: name.to_string(),
                    labels: labels.to_string(),
                    samples: vec![sample],
                }),
            }
        }
        Ok(out)
    }

    /// Point `id`'s power samples, by GPU then time.
    pub fn point_power(&mut self, id: i64) -> Result<Vec<PowerSample>, StoreError> {
        self.require_migrated()?;
        let rows = self.conn.query(
            "SELECT gpu, t_unix, power_w FROM power_samples WHERE point_id = ? ORDER BY gpu, t_unix",
            &[Val::Int(id)],
        )?;
        Ok(rows
            .iter()
            .map(|r| PowerSample {
                gpu: r[0].as_str().unwrap_or("").to_string(),
                t_unix: r[1].as_f64().unwrap_or(f64::NAN),
                power_w: r[2].as_f64().unwrap_or(f64::NAN),
            })
            .collect())
    }
}
