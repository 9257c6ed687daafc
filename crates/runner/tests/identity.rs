//! `JobSpec::result_filename` (runner) and `inferbench_recipes::result_filename` (recipes)
//! implement reference §3.1 independently; they must agree on every row InferenceX's generator
//! printed for the handed invocations (../shared/data/inferencex/expected).

use std::path::Path;

#[test]
fn runner_and_recipes_agree_on_result_filename() {
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
    // The changelog cases carry recipe fingerprints.
    for case in std::fs::read_dir(dir.join("changelog")).unwrap() {
        files.push(case.unwrap().path().join("expected.json"));
    }
    for f in files {
        let jobs = inferbench_runner::load_matrix(&f).unwrap();
        for job in jobs {
            let raw = serde_json::to_value(&job.row).unwrap();
            let ours = job.result_filename("b200-dgxc_03");
            let theirs =
                inferbench_recipes::result_filename(raw.as_object().unwrap(), "b200-dgxc_03");
            assert_eq!(ours, theirs, "{}: row {}", f.display(), job.index);
            checked += 1;
        }
    }
    assert!(checked > 3000, "{checked}");
}
