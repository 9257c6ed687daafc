//! Job identity: the recipe fingerprint (reference §3.1). `RESULT_FILENAME` is core's
//! `PointConfig::result_filename`, of the typed row.

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
