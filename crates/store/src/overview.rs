//! Whole-database overviews for the dashboard: stored accuracy evals (the Evals page) and what
//! has been measured, per model × hardware × framework × precision (the Models page).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::{EvalSample, Store, StoreError};

/// One stored eval result (`evals` joined with its config and run).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalRow {
    /// Canonical model key.
    pub model: String,
    /// Canonical hardware key.
    pub hardware: String,
    /// Canonical framework key.
    pub framework: String,
    /// Canonical precision key.
    pub precision: String,
    /// Spec-decoding method (`none`, `mtp`, …).
    pub spec_decoding: String,
    /// Tensor parallelism of the config.
    pub tp: i64,
    /// Expert parallelism of the config.
    pub ep: i64,
    /// Whether the config runs data-parallel attention (dp-attn).
    pub dp_attention: bool,
    /// Task (`gsm8k`, …), lowercase.
    pub task: String,
    /// Concurrency the eval ran at (0 when unknown).
    pub conc: i64,
    /// Score in [0, 1]: exact match (strict) for GSM8K, else the task's `score`; `None` when
    /// the file gave none.
    pub score: Option<f64>,
    /// Standard error of the score.
    pub score_se: Option<f64>,
    /// Every number the eval file gave (`em_strict`, `em_flexible`, `n_eff`, …).
    pub metrics: BTreeMap<String, f64>,
    /// UTC date of the run, `YYYY-MM-DD`.
    pub date: String,
    /// The run's batch (sweep).
    pub batch: String,
    /// The run's `runs.id`.
    pub run_id: i64,
}

/// One row of the support matrix: a (model, hardware, framework, precision) with successful
/// points, how many points and runs, and the newest date among them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SupportRow {
    /// Canonical model key.
    pub model: String,
    /// Canonical hardware key.
    pub hardware: String,
    /// Canonical framework key.
    pub framework: String,
    /// Canonical precision key.
    pub precision: String,
    /// Successful points (failed ones not counted).
    pub points: i64,
    /// Distinct runs (result files or artifact directories) those points come from: one per
    /// point for a sweep's, one per file for an aggregate or dump.
    pub runs: i64,
    /// Distinct batches (sweeps, quickstart runs: what `report -f batch=` and `--history-at`
    /// group by) those points come from.
    pub batches: i64,
    /// Distinct sequences (`isl/osl`, or the scenario for agentic replays) measured.
    pub sequences: i64,
    /// Newest point date `YYYY-MM-DD`.
    pub latest: String,
    /// Of those points, how many are InferenceX's published data (an imported dump).
    pub public_points: i64,
}

impl Store {
    /// Every stored eval, sorted by (task, model, hardware, framework, precision, spec, date,
    /// conc).
    pub fn evals(&mut self) -> Result<Vec<EvalRow>, StoreError> {
        self.evals_where("", &[])
    }

    /// The evals stored with run `run_id` (an eval set, or a dump run's), in [`Store::evals`]'s
    /// order; empty when it has none.
    pub fn run_evals(&mut self, run_id: i64) -> Result<Vec<EvalRow>, StoreError> {
        self.evals_where("WHERE e.run_id = ?", &[run_id.into()])
    }

    fn evals_where(
        &mut self,
        cond: &str,
        params: &[crate::db::Val],
    ) -> Result<Vec<EvalRow>, StoreError> {
        self.require_migrated()?;
        let rows = self.conn.query(
            &format!(
                "SELECT c.model, c.hardware, c.framework, c.precision, c.spec_decoding, c.tp, c.ep,
                        c.dp_attention, e.task, e.conc, e.score, e.score_se, e.metrics, r.date,
                        r.batch, r.id
                 FROM evals e JOIN configs c ON c.id = e.config_id JOIN runs r ON r.id = e.run_id
                 {cond}
                 ORDER BY e.task, c.model, c.hardware, c.framework, c.precision, c.spec_decoding,
                          r.date, e.conc, r.id"
            ),
            params,
        )?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let s = |i: usize| r[i].as_str().unwrap_or("").to_string();
                let n = |i: usize| r[i].as_i64().unwrap_or(0);
                let metrics =
                    serde_json::from_str::<serde_json::Value>(r[12].as_str().unwrap_or("{}"))
                        .ok()
                        .and_then(|v| v.as_object().cloned())
                        .map(|m| {
                            m.into_iter()
                                .filter_map(|(k, v)| Some((k, v.as_f64()?)))
                                .collect()
                        })
                        .unwrap_or_default();
                EvalRow {
                    model: s(0),
                    hardware: s(1),
                    framework: s(2),
                    precision: s(3),
                    spec_decoding: s(4),
                    tp: n(5),
                    ep: n(6),
                    dp_attention: n(7) != 0,
                    task: s(8),
                    conc: n(9),
                    score: r[10].as_f64(),
                    score_se: r[11].as_f64(),
                    metrics,
                    date: s(13),
                    batch: s(14),
                    run_id: n(15),
                }
            })
            .collect())
    }

    /// One page of run `run_id`'s stored eval questions for `task` at concurrency `conc`
    /// (every config of the run), ordered by (config, doc_id): `(total matching, rows)`, the
    /// rows from `offset` (0-based), at most `limit`. `correct` keeps only right (`Some(true)`)
    /// or wrong (`Some(false)`, unknown ones excluded) answers. Empty when none are stored.
    pub fn eval_samples(
        &mut self,
        run_id: i64,
        task: &str,
        conc: i64,
        correct: Option<bool>,
        offset: u64,
        limit: u64,
    ) -> Result<(i64, Vec<EvalSample>), StoreError> {
        self.require_migrated()?;
        let mut cond = String::from("run_id = ? AND task = ? AND conc = ?");
        let mut params: Vec<crate::db::Val> = vec![run_id.into(), task.into(), conc.into()];
        if let Some(c) = correct {
            cond.push_str(" AND correct = ?");
            params.push(i64::from(c).into());
        }
        let total = self
            .conn
            .query(
                &format!("SELECT COUNT(*) FROM eval_samples WHERE {cond}"),
                &params,
            )?
            .first()
            .and_then(|r| r[0].as_i64())
            .unwrap_or(0);
        let lim = i64::try_from(limit).unwrap_or(i64::MAX);
        let off = i64::try_from(offset).unwrap_or(i64::MAX);
        params.push(lim.into());
        params.push(off.into());
        let rows = self.conn.query(
            &format!(
                "SELECT doc_id, question, response, extracted, target, correct, error
                 FROM eval_samples WHERE {cond} ORDER BY config_id, doc_id LIMIT ? OFFSET ?"
            ),
            &params,
        )?;
        let rows = rows
            .into_iter()
            .map(|r| {
                let s = |i: usize| r[i].as_str().unwrap_or("").to_string();
                EvalSample {
                    doc_id: r[0].as_i64().unwrap_or(0),
                    question: s(1),
                    response: s(2),
                    extracted: s(3),
                    target: s(4),
                    correct: r[5].as_i64().map(|c| c != 0),
                    error: s(6),
                }
            })
            .collect();
        Ok((total, rows))
    }

    /// The support matrix (module docs), sorted by (model, hardware, framework, precision).
    pub fn support_matrix(&mut self) -> Result<Vec<SupportRow>, StoreError> {
        self.require_migrated()?;
        let rows = self.conn.query(
            &format!(
                "SELECT c.model, c.hardware, c.framework, c.precision, COUNT(*),
                        COUNT(DISTINCT p.run_id),
                        COUNT(DISTINCT c.scenario || ':' || CAST(c.isl AS TEXT) || '/' || CAST(c.osl AS TEXT)),
                        MAX(p.date),
                        SUM(CASE WHEN r.source_kind = '{}' THEN 1 ELSE 0 END),
                        COUNT(DISTINCT r.batch)
                 FROM points p JOIN configs c ON c.id = p.config_id JOIN runs r ON r.id = p.run_id
                 WHERE p.error IS NULL
                 GROUP BY c.model, c.hardware, c.framework, c.precision
                 ORDER BY c.model, c.hardware, c.framework, c.precision",
                crate::query::PUBLIC_SOURCE
            ),
            &[],
        )?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let s = |i: usize| r[i].as_str().unwrap_or("").to_string();
                let n = |i: usize| r[i].as_i64().unwrap_or(0);
                SupportRow {
                    model: s(0),
                    hardware: s(1),
                    framework: s(2),
                    precision: s(3),
                    points: n(4),
                    runs: n(5),
                    sequences: n(6),
                    latest: s(7),
                    public_points: n(8),
                    batches: n(9),
                }
            })
            .collect())
    }
}
