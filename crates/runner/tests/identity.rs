//! `JobSpec::result_filename` goes through the typed `MatrixRow` and back to JSON before
//! `inferbench_recipes::result_filename` (the one implementation of reference §3.1). This pins
//! that the round trip keeps every identity field: for each flat matrix InferenceX's generator
//! printed (../shared/data/inferencex/expected/*.json), the runner's name equals recipes' name
//! computed on the raw row.

use std::path::Path;

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
            let theirs =
                inferbench_recipes::result_filename(raw_row.as_object().unwrap(), "b200-dgxc_03");
            assert_eq!(ours, theirs, "{}: row {}", f.display(), job.index);
            checked += 1;
        }
    }
    assert!(checked > 3000, "{checked}");
}
