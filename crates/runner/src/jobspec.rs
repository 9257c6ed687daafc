//! Matrix rows → [`JobSpec`]: the typed form of one row of InferenceX's generator JSON
//! (reference/inferencex-producer.md §2.3), its `RESULT_FILENAME` identity (§3.1) and the
//! environment contract handed to external benchmark scripts (§3.2).
//!
//! The row type itself ([`MatrixRow`], with [`Conc`], [`Component`] and [`WorkerSpec`]) lives in
//! `inferbench_core::matrix`, shared with the store that reads `job.json` back; it is re-exported
//! here so `inferbench_runner::jobspec::MatrixRow` keeps working.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use inferbench_core::matrix::{Component, Conc, MatrixRow, WorkerSpec};
use inferbench_core::point::PointConfig;

/// Errors reading a matrix file or selecting a row. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// The file could not be read.
    #[error("{path}: cannot read matrix: {source}")]
    Io {
        /// Matrix file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// The file is not JSON, or not an array of rows / changelog bucket object.
    #[error("{path}:{line}:{column}: invalid matrix JSON: {message}")]
    Json {
        /// Matrix file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// serde's message.
        message: String,
    },
    /// One row has a missing or mistyped field.
    #[error("{path}: row {index}: {message}")]
    Row {
        /// Matrix file.
        path: PathBuf,
        /// 0-based row index.
        index: usize,
        /// serde's message, naming the field.
        message: String,
    },
    /// `--index` beyond the end of the matrix.
    #[error("{path}: row index {index} out of range (matrix has {len} rows)")]
    IndexOutOfRange {
        /// Matrix file.
        path: PathBuf,
        /// Requested index.
        index: usize,
        /// Number of rows.
        len: usize,
    },
}

/// One job: a matrix row with its position in the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// 0-based index of the row in the matrix (what `--index` / `$SLURM_ARRAY_TASK_ID` select).
    pub index: usize,
    /// The typed row.
    pub row: MatrixRow,
}

impl JobSpec {
    /// True for multinode rows (they carry `prefill`/`decode` blocks).
    pub fn is_multinode(&self) -> bool {
        self.row.prefill.is_some() || self.row.decode.is_some()
    }

    /// True for AgentX rows (`scenario-type: agentic-coding`).
    pub fn is_agentic(&self) -> bool {
        self.row.scenario_type.as_deref() == Some("agentic-coding")
    }

    /// Tensor parallelism of a single-node row (1 when absent).
    pub fn tp(&self) -> u32 {
        self.row.tp.unwrap_or(1)
    }
    /// Pipeline parallelism (1 when absent).
    pub fn pp(&self) -> u32 {
        self.row.pp.unwrap_or(1)
    }
    /// Decode-context parallel size (1 when absent).
    pub fn dcp(&self) -> u32 {
        self.row.dcp_size.unwrap_or(1)
    }
    /// Prefill-context parallel size (1 when absent).
    pub fn pcp(&self) -> u32 {
        self.row.pcp_size.unwrap_or(1)
    }
    /// Expert parallelism (1 when absent).
    pub fn ep(&self) -> u32 {
        self.row.ep.unwrap_or(1)
    }
    /// Data-parallel attention (false when absent).
    pub fn dp_attn(&self) -> bool {
        self.row.dp_attn.unwrap_or(false)
    }
    /// Disaggregation (false when absent).
    pub fn disagg(&self) -> bool {
        self.row.disagg.unwrap_or(false)
    }

    /// This row's parallelism as core defines it (one definition of the GPU count).
    pub fn parallelism(&self) -> inferbench_core::summary::Parallelism {
        inferbench_core::summary::Parallelism {
            tp: self.tp(),
            pp: self.pp(),
            dcp_size: self.dcp(),
            pcp_size: self.pcp(),
            ep: self.ep(),
        }
    }

    /// GPUs of one single-node replica (§3.2 `GPU_COUNT`): core's
    /// [`Parallelism::gpus`](inferbench_core::summary::Parallelism::gpus), `tp × pp × pcp`.
    pub fn gpu_count(&self) -> u32 {
        u32::try_from(self.parallelism().gpus()).unwrap_or(u32::MAX)
    }

    /// This row's point at concurrency `conc` on the concrete runner `runner_name`: core's one
    /// typed configuration ([`PointConfig`]), which names it, identifies it and writes
    /// InferenceX's environment for it.
    pub fn point(&self, runner_name: &str, conc: u32) -> PointConfig {
        PointConfig::from_row(&self.row, runner_name, conc)
    }

    /// InferenceX's `RESULT_FILENAME` for this row on the concrete runner `runner_name`
    /// (reference/inferencex-producer.md §3.1; [`PointConfig::result_filename`]), with
    /// `_recipe-<16 hex>` when the row carries a recipe fingerprint. Example:
    /// `dsr1_8k1k_fp4_sglang_tp4-pp1-dcp1-pcp1-ep4-dpatrue_disagg-false_spec-none_conc64_b200-dgxc_03`.
    pub fn result_filename(&self, runner_name: &str) -> String {
        // The name takes the row's whole concurrency list, not one point's.
        self.point(runner_name, 0).result_filename()
    }

    /// The environment InferenceX hands a benchmark script (§3.2), for one concurrency `conc`
    /// on runner `runner_name`, server port `port` and result directory `result_dir`
    /// ([`PointConfig::inferencex_env`]). Agentic rows get `ISL=OSL=MAX_MODEL_LEN=0` as
    /// InferenceX dispatches them.
    pub fn env_contract(
        &self,
        runner_name: &str,
        conc: u32,
        port: u16,
        result_dir: &Path,
    ) -> Vec<(String, String)> {
        self.point(runner_name, conc)
            .inferencex_env(port, result_dir)
    }
}

impl fmt::Display for JobSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "row {} ({} {} {} conc {})",
            self.index,
            self.row.exp_name,
            self.row.framework,
            self.row.runner,
            self.row.conc.identity()
        )
    }
}

/// Reads a matrix file: a JSON array of rows (generator output), or the bucketed object the
/// changelog path prints (`{"single_node": {"fixed_seq_len": [...], "agentic": [...]},
/// "multi_node": {...}, "evals": [...], …, "changelog_metadata": {...}}`), flattened in key
/// order (metadata skipped). Every row is checked; the first bad row is
/// reported with its index and the offending field.
pub fn load_matrix(path: &Path) -> Result<Vec<JobSpec>, MatrixError> {
    let text = std::fs::read_to_string(path).map_err(|source| MatrixError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_matrix(&text, path)
}

/// [`load_matrix`] over already-read text; `path` only names the source in errors.
pub fn parse_matrix(text: &str, path: &Path) -> Result<Vec<JobSpec>, MatrixError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| MatrixError::Json {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        // The position is in the prefix (trial 20: said twice).
        message: without_position(&e),
    })?;
    if !value.is_array() && !value.is_object() {
        return Err(MatrixError::Json {
            path: path.to_path_buf(),
            line: 1,
            column: 1,
            message: "expected an array of matrix rows or a bucketed object".into(),
        });
    }
    let mut raw_rows = Vec::new();
    collect_rows(&value, &mut raw_rows);
    raw_rows
        .into_iter()
        .enumerate()
        .map(|(index, raw)| {
            serde_json::from_value::<MatrixRow>(raw.clone())
                .map(|row| JobSpec { index, row })
                .map_err(|e| MatrixError::Row {
                    path: path.to_path_buf(),
                    index,
                    message: e.to_string(),
                })
        })
        .collect()
}

/// A serde_json error's message without its trailing ` at line L column C`.
fn without_position(e: &serde_json::Error) -> String {
    let m = e.to_string();
    match m.rfind(" at line ") {
        Some(i) => m[..i].to_string(),
        None => m,
    }
}

fn collect_rows<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a serde_json::Value>) {
    match v {
        // An array holds rows, whatever they look like (bad ones are reported by index).
        serde_json::Value::Array(items) => out.extend(items.iter()),
        // A lone row (e.g. `inferbench job --row`).
        serde_json::Value::Object(map) if map.contains_key("exp-name") => out.push(v),
        // Any other object is a bucket of arrays / nested buckets, in key order; the changelog's
        // `changelog_metadata` (refs, entries) is not a row.
        serde_json::Value::Object(map) => {
            for (key, child) in map {
                if !key.ends_with("_metadata") {
                    collect_rows(child, out);
                }
            }
        }
        other => out.push(other),
    }
}

/// Picks row `index` of a matrix file (what `inferbench job --index` does).
pub fn load_row(path: &Path, index: usize) -> Result<JobSpec, MatrixError> {
    let rows = load_matrix(path)?;
    let len = rows.len();
    rows.into_iter()
        .nth(index)
        .ok_or_else(|| MatrixError::IndexOutOfRange {
            path: path.to_path_buf(),
            index,
            len,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    const SN: &str = r#"{"image": "lmsysorg/sglang:v0.5.16-cu130", "model": "nvidia/DeepSeek-R1-0528-FP4-V2", "model-prefix": "dsr1", "precision": "fp4", "framework": "sglang", "runner": "b200", "isl": 8192, "osl": 1024, "tp": 4, "pp": 1, "dcp-size": 1, "pcp-size": 1, "conc": 64, "max-model-len": 9472, "ep": 4, "dp-attn": true, "spec-decoding": "none", "exp-name": "dsr1_8k1k", "disagg": false, "run-eval": false}"#;
    const MN: &str = r#"{"image": "lmsysorg/sglang:nightly", "model": "deepseek-ai/DeepSeek-V4-Pro", "model-prefix": "dsv4", "precision": "fp4", "framework": "dynamo-sglang", "runner": "b300", "isl": 8192, "osl": 1024, "spec-decoding": "none", "prefill": {"num-worker": 1, "tp": 4, "ep": 1, "dp-attn": false, "additional-settings": ["CONFIG_FILE=recipes/a.yaml"], "pp": 1, "dcp-size": 1, "pcp-size": 1}, "decode": {"num-worker": 2, "tp": 8, "ep": 8, "dp-attn": true, "pp": 1, "dcp-size": 1, "pcp-size": 1}, "conc": [1, 8, 16, 32], "max-model-len": 9472, "exp-name": "dsv4_8k1k", "disagg": true, "run-eval": true, "kv-p2p-transfer": "nixl", "eval-conc": 32}"#;
    const AG: &str = r#"{"image": "img", "model": "deepseek-ai/DeepSeek-V4-Pro", "model-prefix": "dsv4", "precision": "fp4", "framework": "sglang", "runner": "cluster:b200-dgxc", "tp": 8, "pp": 1, "dcp-size": 1, "pcp-size": 1, "ep": 1, "dp-attn": false, "spec-decoding": "mtp", "conc": 8, "kv-offloading": "dram", "total-cpu-dram-gb": 2399, "duration": 3600, "exp-name": "dsv4_tp8_conc8_kvdram-hicache_spec-mtp", "scenario-type": "agentic-coding", "kv-offload-backend": {"name": "hicache"}, "recipe-fingerprint": "d04bb42bd5653cc3ae03432288959367731c646b9b3fbf00150d25a335071355", "priority": 3}"#;

    /// A bad matrix file says where once (trial 20: `…:1:0: … at line 1 column 0`).
    #[test]
    fn json_errors_name_the_position_once() {
        let e = parse_matrix("", Path::new("m.json"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "m.json:1:0: invalid matrix JSON: EOF while parsing a value"
        );
        let e = parse_matrix("[\n{,", Path::new("m.json"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "m.json:2:2: invalid matrix JSON: key must be a string");
    }

    fn spec(s: &str) -> JobSpec {
        JobSpec {
            index: 0,
            row: serde_json::from_str(s).unwrap(),
        }
    }

    #[test]
    fn result_filename_single_node_matches_reference_example() {
        // reference/inferencex-producer.md §3.1 example (without the recipe suffix).
        assert_eq!(
            spec(SN).result_filename("b200-dgxc_03"),
            "dsr1_8k1k_fp4_sglang_tp4-pp1-dcp1-pcp1-ep4-dpatrue_disagg-false_spec-none_conc64_b200-dgxc_03"
        );
    }

    #[test]
    fn result_filename_multinode_and_recipe_suffix() {
        assert_eq!(
            spec(MN).result_filename("b300-nv_01"),
            "dsv4_8k1k_fp4_dynamo-sglang_prefill-tp4-pp1-dcp1-pcp1-ep1-dpfalse-nw1_decode-tp8-pp1-dcp1-pcp1-ep8-dptrue-nw2_disagg-true_spec-none_conc1x8x16x32_b300-nv_01"
        );
        assert_eq!(
            spec(AG).result_filename("b200-dgxc_00"),
            "dsv4_tp8_conc8_kvdram-hicache_spec-mtp_fp4_sglang_tp8-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-mtp_conc8_b200-dgxc_00_recipe-d04bb42bd5653cc3"
        );
    }

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let s = spec(AG);
        assert_eq!(s.row.extra.get("priority"), Some(&serde_json::json!(3)));
        let back = serde_json::to_value(&s.row).unwrap();
        let orig: serde_json::Value = serde_json::from_str(AG).unwrap();
        assert_eq!(back, orig);
        let back_mn = serde_json::to_value(&spec(MN).row).unwrap();
        assert_eq!(
            back_mn,
            serde_json::from_str::<serde_json::Value>(MN).unwrap()
        );
    }

    #[test]
    fn env_contract_has_inferencex_names_and_values() {
        let env: BTreeMap<_, _> = spec(SN)
            .env_contract("b200-dgxc_03", 64, 8888, Path::new("/r"))
            .into_iter()
            .collect();
        assert_eq!(env["TP"], "4");
        assert_eq!(env["EP_SIZE"], "4");
        assert_eq!(env["DP_ATTENTION"], "true");
        assert_eq!(env["GPU_COUNT"], "4");
        assert_eq!(env["CONC"], "64");
        assert_eq!(env["MAX_MODEL_LEN"], "9472");
        assert_eq!(env["RANDOM_RANGE_RATIO"], "0.8");
        assert_eq!(env["SCENARIO_SUBDIR"], "fixed_seq_len/");
        assert_eq!(env["PORT"], "8888");
        assert_eq!(
            env["RESULT_FILENAME"],
            "dsr1_8k1k_fp4_sglang_tp4-pp1-dcp1-pcp1-ep4-dpatrue_disagg-false_spec-none_conc64_b200-dgxc_03"
        );
        let ag: BTreeMap<_, _> = spec(AG)
            .env_contract("x_0", 8, 8888, Path::new("/r"))
            .into_iter()
            .collect();
        assert_eq!((ag["ISL"].as_str(), ag["OSL"].as_str()), ("0", "0"));
        assert_eq!(ag["KV_OFFLOAD_BACKEND_METADATA"], r#"{"name":"hicache"}"#);
        assert_eq!(ag["TOTAL_CPU_DRAM_GB"], "2399");
        assert_eq!(ag["IS_AGENTIC"], "true");
        let mn: BTreeMap<_, _> = spec(MN)
            .env_contract("x_0", 8, 8888, Path::new("/r"))
            .into_iter()
            .collect();
        assert_eq!(mn["DECODE_NUM_WORKERS"], "2");
        assert_eq!(mn["CONFIG_FILE"], "recipes/a.yaml");
        assert_eq!(mn["IS_MULTINODE"], "true");
    }

    #[test]
    fn matrix_errors_name_file_row_and_field() {
        let p = Path::new("m.json");
        let bad = format!("[{SN}, {{\"model\": \"x\"}}]");
        let e = parse_matrix(&bad, p).unwrap_err().to_string();
        assert!(e.starts_with("m.json: row 1: missing field `image`"), "{e}");
        let e = parse_matrix("[{", p).unwrap_err().to_string();
        assert!(e.starts_with("m.json:1:"), "{e}");
        let e = parse_matrix(r#"{"single_node": {"fixed_seq_len": [42]}}"#, p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("row 0"), "{e}");
    }

    #[test]
    fn bucketed_changelog_output_is_flattened_in_order() {
        let text = format!(
            r#"{{"single_node": {{"fixed_seq_len": [{SN}], "agentic": [{AG}]}}, "multi_node": {{"fixed_seq_len": [{MN}]}}}}"#
        );
        let rows = parse_matrix(&text, Path::new("m.json")).unwrap();
        let names: Vec<_> = rows.iter().map(|r| r.row.exp_name.as_str()).collect();
        assert_eq!(
            names,
            [
                "dsr1_8k1k",
                "dsv4_tp8_conc8_kvdram-hicache_spec-mtp",
                "dsv4_8k1k"
            ]
        );
        assert_eq!(rows[2].index, 2);
    }

    #[test]
    fn every_handed_generator_output_parses() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/inferencex/expected");
        if !dir.exists() {
            eprintln!("skipping: {} absent", dir.display());
            return;
        }
        let mut total = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "json") {
                let rows = load_matrix(&p).unwrap();
                for r in &rows {
                    // Identity must be computable for every row.
                    assert!(r.result_filename("n_0").ends_with("_n_0"));
                }
                total += rows.len();
            }
        }
        assert!(total > 1000, "{total}");
    }
}
