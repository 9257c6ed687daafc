//! Issue 12's golden path: recorded requests and job identities → summary, aggregate, ingest,
//! report (table, CSV, JSON) and plot, byte for byte against the files in `tests/golden/`.
//! Nothing here is timed or random: the records are built from fixed times, so any change in
//! what a stage writes shows as a diff. Refactors of the run path, the artifact contract or the
//! CLI must keep every file identical; a deliberate change re-blesses them:
//!
//! ```text
//! INFERBENCH_BLESS=1 cargo test -p inferbench --test golden
//! ```
//!
//! The only masked parts are the temporary directory (`<TMP>`) and ingest's elapsed time.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use inferbench_core::record::{Channel, ChunkRecord, Phase, RequestRecord};
use inferbench_core::summary::{summarize, JobIdentity, SummaryContext};
use inferbench_loadgen::BenchOptions;

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");
const MS: u64 = 1_000_000;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Compares `actual` with `tests/golden/<name>`, or writes it there under `INFERBENCH_BLESS=1`.
fn check(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("INFERBENCH_BLESS").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (INFERBENCH_BLESS=1 writes it)", path.display()));
    if want != actual {
        let line = want
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| want.lines().count().min(actual.lines().count()));
        panic!(
            "{name} differs from {} at line {}:\n  want: {:?}\n  got:  {:?}\n(the whole output:)\n{actual}",
            path.display(),
            line + 1,
            want.lines().nth(line).unwrap_or("<end>"),
            actual.lines().nth(line).unwrap_or("<end>"),
        );
    }
}

/// Request `i` of a point at concurrency `conc`: slot `i % conc` sends it when the slot's
/// previous request ended; TTFT grows with the batch (20 + 5·conc ms plus 1 ms per request of
/// the slot), then `OSL` tokens one TPOT apart (4 + conc/2 ms), the end 1 ms after the last.
fn record(conc: u64, i: u64) -> RequestRecord {
    const OSL: u64 = 8;
    let ttft = 20 + 5 * conc + i / conc;
    let tpot = 4 + conc / 2;
    let span = ttft + (OSL - 1) * tpot + 1;
    let sent = (i / conc) * span + (i % conc);
    let chunks: Vec<ChunkRecord> = (0..OSL)
        .map(|k| ChunkRecord {
            t_ns: (sent + ttft + k * tpot) * MS,
            channel: Channel::Content,
            tokens: None,
        })
        .collect();
    let last = chunks.last().unwrap().t_ns;
    RequestRecord {
        request_id: i,
        phase: Phase::Profile,
        success: true,
        http_status: Some(200),
        scheduled_ns: sent * MS,
        released_ns: Some(sent * MS),
        sent_ns: sent * MS,
        first_byte_ns: Some((sent + ttft) * MS),
        first_token_ns: Some((sent + ttft) * MS),
        first_output_token_ns: Some((sent + ttft) * MS),
        last_token_ns: Some(last),
        end_ns: last + MS,
        read_end_ns: Some(last + MS),
        prompt_tokens: 64,
        prompt_tokens_client: 64,
        completion_tokens: OSL as u32,
        max_tokens: Some(OSL as u32),
        chunks,
        ..Default::default()
    }
}

/// The InferenceX identity of the golden row at `conc`.
fn identity(conc: u64) -> JobIdentity {
    let rf = format!("golden-llama-64-8_fp8_vllm_tp2-ep1-dpafalse_conc{conc}_h100");
    JobIdentity::from_lookup(|k| {
        Some(
            match k {
                "RUNNER_TYPE" => "h100",
                "FRAMEWORK" => "vllm",
                "PRECISION" => "fp8",
                "SPEC_DECODING" => "none",
                "RESULT_FILENAME" => rf.as_str(),
                "ISL" => "64",
                "OSL" => "8",
                "DISAGG" => "false",
                "MODEL_PREFIX" => "golden-llama",
                "IMAGE" => "vllm/vllm-openai:v0.11.0",
                "TP" => "2",
                "EP_SIZE" => "1",
                "DP_ATTENTION" => "false",
                _ => return None,
            }
            .to_string(),
        )
    })
    .unwrap()
}

/// Writes one point directory as `bench --save-result` with a job identity does: the result
/// (`summary.json`), the InferenceX aggregate and `requests.jsonl`. Returns the summary text.
fn write_point(root: &Path, conc: u64) -> String {
    let dir = root.join(format!("conc{conc}"));
    std::fs::create_dir_all(&dir).unwrap();
    let records: Vec<RequestRecord> = (0..4 * conc).map(|i| record(conc, i)).collect();
    let jsonl: String = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(dir.join("requests.jsonl"), &jsonl).unwrap();
    let ctx = SummaryContext {
        backend: "vllm".into(),
        model_id: "golden/llama".into(),
        tokenizer_id: "o200k_base".into(),
        num_prompts: 4 * conc,
        max_concurrency: Some(conc as u32),
        date: "20250102-030405".into(),
        ..Default::default()
    };
    let summary = summarize(&records, &ctx);
    let opts = BenchOptions {
        save_result: true,
        result_dir: Some(dir.clone()),
        result_filename: Some("summary.json".into()),
        job_identity: Some(identity(conc)),
        ..Default::default()
    };
    inferbench_loadgen::output::write_results(&opts, &summary, &ctx.date).unwrap();
    if conc == 4 {
        check("conc4.requests.jsonl", &jsonl);
    }
    std::fs::read_to_string(dir.join("summary.json")).unwrap()
}

/// Runs the binary; stdout and stderr with the temporary directory masked as `<TMP>`.
fn run(tmp: &Path, args: &[&str]) -> String {
    let o = Command::new(BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "120")
        .output()
        .unwrap();
    let text = common::output_text(&o);
    assert!(o.status.success(), "{args:?}: {text}");
    text.replace(tmp.to_str().unwrap(), "<TMP>")
}

/// `ingest`'s line without its elapsed time (`in 0.01 s`).
fn mask_elapsed(s: &str) -> String {
    let re = |line: &str| -> String {
        match line.find(" in ").zip(line.rfind(" s")) {
            Some((a, b)) if b > a && line[a + 4..b].parse::<f64>().is_ok() => {
                format!("{} in <T> s{}", &line[..a], &line[b + 2..])
            }
            _ => line.to_string(),
        }
    };
    s.lines().map(|l| re(l) + "\n").collect()
}

#[test]
fn records_to_summary_ingest_report_and_plot_are_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("golden-batch/results");
    for conc in [1, 4, 16] {
        let summary = write_point(&root, conc);
        check(&format!("conc{conc}.summary.json"), &summary);
    }
    let rf = identity(4).result_filename.clone();
    let agg = std::fs::read_to_string(root.join(format!("conc4/agg_{rf}.json"))).unwrap();
    check("conc4.agg.json", &agg);

    let db = tmp.path().join("golden.db");
    let db = db.to_str().unwrap();
    let ingest = run(tmp.path(), &["ingest", root.to_str().unwrap(), "--db", db]);
    check("ingest.txt", &mask_elapsed(&ingest));
    // A second ingest of the same files changes nothing (idempotent) and says so.
    let again = run(tmp.path(), &["ingest", root.to_str().unwrap(), "--db", db]);
    check("ingest_again.txt", &mask_elapsed(&again));

    check("report.txt", &run(tmp.path(), &["report", "--db", db]));
    check(
        "report_frontier.txt",
        &run(tmp.path(), &["report", "--db", db, "--frontier"]),
    );
    check(
        "report.csv",
        &run(tmp.path(), &["report", "--db", db, "--format", "csv"]),
    );
    check(
        "report.json",
        &run(tmp.path(), &["report", "--db", db, "--format", "json"]),
    );
    // Issue 40's metric: achieved OSL from the records, stored at ingest, a `--columns` name.
    check(
        "report_achieved_osl.txt",
        &run(
            tmp.path(),
            &[
                "report",
                "--db",
                db,
                "--columns",
                "conc,mean_achieved_osl,p90_achieved_osl,p99_achieved_osl",
            ],
        ),
    );
    let svg = tmp.path().join("frontier.svg");
    let plot = run(
        tmp.path(),
        &["plot", "--db", db, "--out", svg.to_str().unwrap()],
    );
    check("plot.txt", &plot);
    check(
        "frontier.svg.txt",
        &svg_outline(&std::fs::read_to_string(&svg).unwrap()),
    );
}

/// What an SVG says, without where: its text elements' contents in order, then how many of
/// each element kind it draws. Positions depend on the system font's metrics (plotters
/// measures text with it), so they are left out.
fn svg_outline(svg: &str) -> String {
    let mut out = String::new();
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for part in svg.split('<').skip(1) {
        let name: String = part
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect();
        if name.is_empty() {
            continue;
        }
        if name == "text" {
            if let Some((_, body)) = part.split_once('>') {
                out.push_str(&format!("text: {}\n", body.trim()));
            }
        }
        *kinds.entry(name).or_default() += 1;
    }
    for (k, n) in kinds {
        out.push_str(&format!("{k}: {n}\n"));
    }
    out
}

/// A file of a newer layout than this build knows is refused by name, not misread: a job.json,
/// a request record or a summary.json with `schema_version` 2 (docs/results.md, "Versions").
#[test]
fn a_newer_artifact_version_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let db = tmp.path().join("v.db");
    for (file, text) in [
        ("job.json", "{\"schema_version\": 2}\n".to_string()),
        (
            "requests.jsonl",
            serde_json::to_string(&record(1, 0)).unwrap().replacen(
                "\"schema_version\":1",
                "\"schema_version\":2",
                1,
            ) + "\n",
        ),
    ] {
        let root = tmp.path().join(file);
        write_point(&root, 1);
        std::fs::write(root.join("conc1").join(file), text).unwrap();
        let o = Command::new(BIN)
            .args([
                "ingest",
                root.to_str().unwrap(),
                "--db",
                db.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let text = common::output_text(&o);
        assert!(!o.status.success(), "{file}: {text}");
        assert!(
            text.contains("schema_version 2 is newer than this inferbench reads (1)"),
            "{file}: {text}"
        );
    }
    // Our summary.json: versioned by its extras' `inferbench.schema_version`.
    let root = tmp.path().join("summary.json");
    let summary = write_point(&root, 1);
    let newer = summary.replacen("\"schema_version\": 1", "\"schema_version\": 2", 1);
    assert_ne!(newer, summary);
    std::fs::write(root.join("conc1").join("summary.json"), newer).unwrap();
    let o = Command::new(BIN)
        .args([
            "ingest",
            root.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = common::output_text(&o);
    assert!(!o.status.success(), "summary.json: {text}");
    assert!(
        text.contains("summary.json: schema_version 2 is newer than this inferbench reads (1)"),
        "summary.json: {text}"
    );
}
