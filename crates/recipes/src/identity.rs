//! Job identity: recipe fingerprint and `RESULT_FILENAME` (reference §3.1).

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::matrix::Row;

/// Recipe fingerprint of a benchmark row: SHA-256 (64 lowercase hex) of the row's canonical JSON
/// (`json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=True)`) after removing
/// `conc`, `exp-name` and `recipe-fingerprint`. Source: InferenceX `process_changelog.py`.
pub fn recipe_fingerprint(row: &Row) -> String {
    let mut m = Map::new();
    for (k, v) in row {
        if !matches!(k.as_str(), "conc" | "exp-name" | "recipe-fingerprint") {
            m.insert(k.clone(), v.clone());
        }
    }
    let text = crate::pyjson::dumps_canonical(&Value::Object(m));
    hex(&Sha256::digest(text.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn s<'a>(row: &'a Row, k: &str) -> &'a str {
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

/// `RESULT_FILENAME` of a matrix row run on the concrete runner `runner_name` (reference §3.1).
///
/// Single node: `<exp-name>_<precision>_<framework>_tp<tp>-pp<pp>-dcp<dcp>-pcp<pcp>-ep<ep>-dpa<bool>
/// _disagg-<bool>_spec-<spec>_conc<conc>_<runner_name>`; multi node: `…_prefill-tp…-nw<n>_decode-…
/// _disagg-<bool>_spec-<spec>_conc<c1xc2…>_<runner_name>`. When the row carries a
/// `recipe-fingerprint`, `_recipe-<first 16 hex>` is appended. Missing topology fields take
/// their defaults (1, false). Example:
/// `dsr1_8k1k_fp4_sglang_tp4-pp1-dcp1-pcp1-ep4-dpatrue_disagg-false_spec-none_conc64_b200-dgxc_03`.
pub fn result_filename(row: &Row, runner_name: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn single_node_result_filename_matches_reference_example() {
        let row = json!({
            "exp-name": "dsr1_8k1k", "precision": "fp4", "framework": "sglang", "tp": 4, "pp": 1,
            "dcp-size": 1, "pcp-size": 1, "ep": 4, "dp-attn": true, "disagg": false,
            "spec-decoding": "none", "conc": 64,
            "recipe-fingerprint": "3d6643e1f0bf6e78aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        });
        assert_eq!(
            result_filename(row.as_object().unwrap(), "b200-dgxc_03"),
            "dsr1_8k1k_fp4_sglang_tp4-pp1-dcp1-pcp1-ep4-dpatrue_disagg-false_spec-none_conc64_b200-dgxc_03_recipe-3d6643e1f0bf6e78"
        );
    }

    #[test]
    fn multi_node_result_filename() {
        let row = json!({
            "exp-name": "dsr1_8k1k", "precision": "fp4", "framework": "dynamo-trt",
            "spec-decoding": "mtp", "disagg": true, "conc": [90, 180],
            "prefill": {"num-worker": 1, "tp": 4, "ep": 4, "dp-attn": true, "pp": 1, "dcp-size": 1, "pcp-size": 1},
            "decode": {"num-worker": 3, "tp": 8, "ep": 8, "dp-attn": false, "pp": 1, "dcp-size": 1, "pcp-size": 1}
        });
        assert_eq!(
            result_filename(row.as_object().unwrap(), "b200-nv_01"),
            "dsr1_8k1k_fp4_dynamo-trt_prefill-tp4-pp1-dcp1-pcp1-ep4-dptrue-nw1_decode-tp8-pp1-dcp1-pcp1-ep8-dpfalse-nw3_disagg-true_spec-mtp_conc90x180_b200-nv_01"
        );
    }
}
