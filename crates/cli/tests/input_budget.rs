//! Trial of issue 39, finding 2: reading an input file took ~128 MiB (the room for one long
//! line) that the up-front check never counted, so the "N fits" advice was false for any file
//! input: `replay --traces` of a 34 kB trace refused 256 lanes saying 220 fit, and at 220 (even
//! at 1) failed "the line is longer than the 0-byte limit"; `bench --dataset-path` of 5 lines
//! said 704 fit and failed at 2 with "0 MiB of memory left for prompts". The read room is now
//! counted up front (and is at most 65× a small file's size), so the number a refusal names
//! runs to the end with the file, against the sim.

mod common;

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

/// Descriptors the harness passed on are closed first (they count against `ulimit -n`).
const CLOSE_INHERITED: &str =
    "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd<&-\"; done; ";

/// `inferbench ARGS` under `ulimit -v KIB` with 2 runtime workers, in `dir`.
fn under_ulimit_v(kib: &str, dir: &std::path::Path, args: &[&str]) -> (Output, String) {
    let script = format!("{CLOSE_INHERITED}ulimit -v {kib} || exit 99; exec \"$0\" \"$@\"");
    let o = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg(BIN)
        .args(args)
        .current_dir(dir)
        .env("TOKIO_WORKER_THREADS", "2")
        .output()
        .unwrap();
    let text = common::output_text(&o);
    (o, text)
}

/// The number a refusal says fits after `flag `.
fn fits(text: &str, flag: &str) -> String {
    text.split(&format!("{flag} "))
        .find_map(|t| t.strip_suffix(" or less fits (nothing was sent)\n"))
        .unwrap_or_else(|| panic!("no number that fits: {text}"))
        .to_string()
}

/// `replay` of the quickstart corpus (34 kB) under `ulimit -v 195000`: 256 lanes are refused
/// naming `ulimit -v` and a number; that number, and 1, replay to the end (exit 0).
#[test]
fn a_replay_at_the_concurrency_its_refusal_names_runs_with_its_trace_file() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = Command::new(BIN)
        .args(["agentx-traces", "--shape", "quickstart", "-o", "qs.jsonl"])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::output_text(&o));
    let replay = |conc: &str| {
        under_ulimit_v(
            "195000",
            d,
            &[
                "replay",
                "--traces",
                "qs.jsonl",
                "--base-url",
                &url,
                "--concurrency",
                conc,
                "--benchmark-duration",
                "2",
                "--unsafe-override",
                "--power",
                "off",
                "--no-server-metrics",
                "--progress",
                "off",
            ],
        )
    };
    let (o, text) = replay("256");
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("`ulimit -v`"), "{text}");
    let n = fits(&text, "--concurrency");
    for conc in [n.as_str(), "1"] {
        let (o, text) = replay(conc);
        assert_eq!(o.status.code(), Some(0), "--concurrency {conc}: {text}");
        assert!(!text.contains("limit of a line"), "{text}");
    }
}

/// `bench --dataset-path` of 5 lines under `ulimit -v 300000`: 2,000 streams are refused
/// naming a number (its 2,000 prompts: the 5 lines again and again); that number and 2 run
/// to the end (exit 0).
#[test]
fn a_bench_at_the_concurrency_its_refusal_names_runs_with_its_dataset_file() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lines: String = (1..=5)
        .map(|i| format!("{{\"prompt\": \"hello number {i}, tell me a story\"}}\n"))
        .collect();
    std::fs::write(d.join("ds_ok.jsonl"), lines).unwrap();
    let bench = |conc: &str| {
        under_ulimit_v(
            "300000",
            d,
            &[
                "bench",
                "--base-url",
                &url,
                "--dataset-name",
                "jsonl",
                "--dataset-path",
                "ds_ok.jsonl",
                "--max-concurrency",
                conc,
                "--num-prompts",
                "2000",
                "--num-warmups",
                "0",
                "--power",
                "off",
                "--no-server-metrics",
            ],
        )
    };
    let (o, text) = bench("2000");
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("`ulimit -v`"), "{text}");
    let n = fits(&text, "--max-concurrency");
    for conc in [n.as_str(), "2"] {
        let (o, text) = bench(conc);
        assert_eq!(o.status.code(), Some(0), "--max-concurrency {conc}: {text}");
    }
}

/// Trial of issue 39, finding 3: eval's data file was not in the memory budget (a 150 MB
/// `test.jsonl` sent requests, then ran out of memory midway, exit 1). 20,000 problems under
/// `ulimit -v 270000` are refused before any request (exit 2) naming `--limit K` and the
/// `ulimit -v` that fits; `--limit K` runs to the end against the sim (exit 0).
#[test]
fn an_eval_data_file_beyond_ulimit_v_is_refused_naming_the_limit_that_fits() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("data")).unwrap();
    let line = |i: usize| {
        format!(
            "{{\"question\": \"Natalia sold clips to 48 of her friends in April, and then half \
             as many in May. How many clips did she sell in all? ({i})\", \"answer\": \"48 + \
             24 = 72 #### 72\"}}\n"
        )
    };
    let test: String = (0..20_000).map(line).collect();
    std::fs::write(d.join("data/test.jsonl"), test).unwrap();
    let train: String = (0..5).map(line).collect();
    std::fs::write(d.join("data/train.jsonl"), train).unwrap();
    let eval = |more: &[&str]| {
        let mut a = vec![
            "eval",
            "gsm8k",
            "--base-url",
            &url,
            "--max-tokens",
            "4",
            "--concurrency",
            "4",
            "--no-threshold",
            "--data-dir",
            "data",
            "--result-dir",
            "ev",
        ];
        a.extend_from_slice(more);
        under_ulimit_v("270000", d, &a)
    };
    let (o, text) = eval(&[]);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("error: --data-dir data: test.jsonl's 20000 problems need about ")
            && text.contains("the address-space limit `ulimit -v` allows; --limit ")
            && text.contains(" fits) (nothing was sent)"),
        "{text}"
    );
    assert!(!d.join("ev").exists(), "{text}");
    let k = text
        .split("--limit ")
        .find_map(|t| t.split_once(" or fewer fit").map(|(n, _)| n.to_string()))
        .unwrap_or_else(|| panic!("no --limit that fits: {text}"));
    let (o, text) = eval(&["--limit", &k]);
    assert_eq!(o.status.code(), Some(0), "--limit {k}: {text}");
    assert!(
        text.contains(&format!("gsm8k: {k} problems (0 failed")),
        "{text}"
    );
}

/// The `ulimit -v` value a refusal names: the KiB in "`ulimit -v N` (KiB) lets the run start".
fn advised(text: &str) -> String {
    text.split("`ulimit -v ")
        .find_map(|t| t.split_once("` (KiB) lets the run start"))
        .map(|(n, _)| n.to_string())
        .unwrap_or_else(|| panic!("no advised `ulimit -v`: {text}"))
}

/// Issue 39's leftovers, 3: when not one prompt of a `--dataset-path` fits (each line's
/// `output_len` of 120,000 tokens is 3.8 MB of records to keep), the refusal names the
/// `ulimit -v` that lets the run start, and it is true: at that value the bench runs to the
/// end against the sim (exit 0), one KiB below it is refused again (exit 2).
#[test]
fn a_dataset_of_which_not_one_prompt_fits_names_the_ulimit_v_that_runs() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let line = "{\"prompt\": \"hello there\", \"output_len\": 120000}\n";
    std::fs::write(d.join("ds.jsonl"), line.repeat(3)).unwrap();
    let bench = |kib: &str| {
        under_ulimit_v(
            kib,
            d,
            &[
                "bench",
                "--base-url",
                &url,
                "--dataset-name",
                "jsonl",
                "--dataset-path",
                "ds.jsonl",
                "--max-concurrency",
                "1",
                "--num-prompts",
                "2",
                "--num-warmups",
                "0",
                "--power",
                "off",
                "--no-server-metrics",
                "--progress",
                "off",
            ],
        )
    };
    let (o, text) = bench("181000");
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("ds.jsonl:1: not one prompt of it fits: the 2 prompts the run reads need "),
        "{text}"
    );
    let kib = advised(&text);
    let (o, text) = bench(&kib);
    assert_eq!(o.status.code(), Some(0), "ulimit -v {kib}: {text}");
    assert!(
        text.contains("Successful requests:                    2"),
        "{text}"
    );
    let below = (kib.parse::<u64>().unwrap() - 1).to_string();
    let (o, text) = bench(&below);
    assert_eq!(o.status.code(), Some(2), "ulimit -v {below}: {text}");
}

/// Issue 39's leftovers, 3: `replay --traces` of one session of 20,000 requests: where not
/// one trace fits (226000) the loader's refusal names the exact `ulimit -v` that runs (one KiB
/// below is refused); where not even one lane fits beside the file (200000) the up-front
/// refusal names one too, and the replay runs at it (exit 0).
#[test]
fn a_trace_file_of_which_not_one_trace_fits_names_the_ulimit_v_that_runs() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let requests: Vec<String> = (0..20_000)
        .map(|i| {
            format!(
                "{{\"t\": {}, \"in\": 10, \"out\": 2}}",
                f64::from(i) * 0.001
            )
        })
        .collect();
    std::fs::write(
        d.join("big.jsonl"),
        format!(
            "{{\"id\": \"s\", \"requests\": [{}]}}\n",
            requests.join(", ")
        ),
    )
    .unwrap();
    let replay = |kib: &str| {
        under_ulimit_v(
            kib,
            d,
            &[
                "replay",
                "--traces",
                "big.jsonl",
                "--base-url",
                &url,
                "--concurrency",
                "1",
                "--benchmark-duration",
                "1",
                "--unsafe-override",
                "--power",
                "off",
                "--no-server-metrics",
                "--progress",
                "off",
            ],
        )
    };
    let (o, text) = replay("226000");
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("big.jsonl:1: not one trace of it fits: the one trace the run reads need"),
        "{text}"
    );
    let kib = advised(&text);
    let (o, text) = replay(&kib);
    assert_eq!(o.status.code(), Some(0), "ulimit -v {kib}: {text}");
    let below = (kib.parse::<u64>().unwrap() - 1).to_string();
    let (o, text) = replay(&below);
    assert_eq!(o.status.code(), Some(2), "ulimit -v {below}: {text}");
    let (o, text) = replay("200000");
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("no concurrency fits; raise the address-space limit: `ulimit -v "),
        "{text}"
    );
    let kib = advised(&text);
    let (o, text) = replay(&kib);
    assert_eq!(o.status.code(), Some(0), "ulimit -v {kib}: {text}");
}

/// Issue 39's leftovers, 3: `replay --traces` estimated 5× the files' size up front, while
/// short traces are held in about 11× (fixed-size structures): the `ulimit -v` its refusal
/// advised left the load too little and it was refused again ("--num-dataset-entries N or
/// fewer fit"). The traces are now counted as the load keeps them, so at the advised value the
/// replay runs (exit 0).
#[test]
fn a_replay_at_the_advised_ulimit_v_loads_its_many_short_traces() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lines: String = (0..40_000)
        .map(|i| {
            format!("{{\"id\": \"t{i}\", \"requests\": [{{\"t\": 0, \"in\": 4, \"out\": 1}}]}}\n")
        })
        .collect();
    std::fs::write(d.join("short.jsonl"), lines).unwrap();
    let replay = |kib: &str| {
        under_ulimit_v(
            kib,
            d,
            &[
                "replay",
                "--traces",
                "short.jsonl",
                "--base-url",
                &url,
                "--concurrency",
                "1",
                "--benchmark-duration",
                "1",
                "--unsafe-override",
                "--power",
                "off",
                "--no-server-metrics",
                "--progress",
                "off",
            ],
        )
    };
    let (o, text) = replay("150000");
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("no concurrency fits; raise the address-space limit: `ulimit -v "),
        "{text}"
    );
    let kib = advised(&text);
    let (o, text) = replay(&kib);
    assert_eq!(o.status.code(), Some(0), "ulimit -v {kib}: {text}");
}

/// Issue 39's leftovers, 3: `eval` where not one stream fits (170000) names the `ulimit -v`
/// at which both its checks pass, and where its data does not fit (180000) its value is the
/// same; at it the eval of all 2,000 problems runs (exit 0), one KiB below it is refused.
/// Issue 39, fresh tester's finding 5: the need each refusal states is the number its advice
/// comes from (where not one stream fit, it stated the streams' alone, "about 176 MiB", beside
/// the data's 7028372 KiB).
#[test]
fn an_eval_refused_for_memory_names_the_ulimit_v_that_runs() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("data")).unwrap();
    let line = |i: usize| {
        format!(
            "{{\"question\": \"Natalia sold clips to 48 of her friends in April, and then half \
             as many in May. How many clips did she sell in all? ({i})\", \"answer\": \"48 + \
             24 = 72 #### 72\"}}\n"
        )
    };
    let test: String = (0..2_000).map(line).collect();
    std::fs::write(d.join("data/test.jsonl"), test).unwrap();
    let train: String = (0..5).map(line).collect();
    std::fs::write(d.join("data/train.jsonl"), train).unwrap();
    let eval = |kib: &str| {
        under_ulimit_v(
            kib,
            d,
            &[
                "eval",
                "gsm8k",
                "--base-url",
                &url,
                "--max-tokens",
                "4",
                "--concurrency",
                "4",
                "--no-threshold",
                "--data-dir",
                "data",
                "--result-dir",
                "ev",
            ],
        )
    };
    // The MiB a refusal says the run needs and the `ulimit -v` (KiB) it advises.
    let need_and_advice = |text: &str| {
        let mib = text
            .split(" problems need about ")
            .nth(1)
            .and_then(|t| t.split_once(" MiB"))
            .map(|(n, _)| n.parse::<u64>().unwrap())
            .unwrap_or_else(|| panic!("no need stated: {text}"));
        let kib = text
            .split("(`ulimit -v ")
            .nth(1)
            .and_then(|t| t.split_once("` fits)"))
            .map(|(n, _)| n.to_string())
            .unwrap_or_else(|| panic!("no advised value: {text}"));
        (mib, kib)
    };
    let (o, text) = eval("170000");
    assert_eq!(o.status.code(), Some(2), "{text}");
    let (mib, kib) = need_and_advice(&text);
    assert_eq!(mib, kib.parse::<u64>().unwrap().div_ceil(1024), "{text}");
    let (o, text) = eval("180000");
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains(&format!("(`ulimit -v {kib}` fits)")),
        "{text}"
    );
    let (o, text) = eval(&kib);
    assert_eq!(o.status.code(), Some(0), "ulimit -v {kib}: {text}");
    assert!(text.contains("gsm8k: 2000 problems (0 failed"), "{text}");
    let below = (kib.parse::<u64>().unwrap() - 1).to_string();
    let (o, text) = eval(&below);
    assert_eq!(o.status.code(), Some(2), "ulimit -v {below}: {text}");
}

/// A port nothing listens on, as a base URL: a run that passes its checks and sends its first
/// request ends "server unreachable" (exit 3).
fn closed_url() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("http://127.0.0.1:{port}")
}

/// Issue 39, finding 4 and its leftovers (a)–(b): every `ulimit -v` a refusal advises is true
/// in ONE step, because the up-front check, the loaders' budgets and the advice are one
/// estimate. For each shape: refused under a small limit naming a value; at exactly that value
/// the run starts (exit 0 on a tiny run; exit 3 "server unreachable" where it was pointed at a
/// closed port, i.e. it passed every check and sent requests); one KiB below, refused (exit 2).
/// Shapes: a random bench whose output tokens dominate (64 streams of 100,000 output tokens:
/// 293 MiB in flight and 8 MiB of ITL gaps kept, left out of the up-front count before: the
/// advised value was refused again by the run's own check); a dataset of `output_len` 120,000 where not one
/// stream fits up front (the advice left out the replies' records: the loader refused again);
/// `agentx-traces` and `replay --synthetic` where not one session fits ("raise the limit",
/// no value, before).
#[test]
fn every_advised_ulimit_v_starts_the_run_in_one_step() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let sim_url = format!("http://127.0.0.1:{}", sim.1);
    let closed = closed_url();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let line = "{\"prompt\": \"hello there\", \"output_len\": 120000}\n";
    std::fs::write(d.join("ds.jsonl"), line.repeat(3)).unwrap();
    let quiet = ["--power", "off", "--no-server-metrics", "--progress", "off"];
    let bench = |url: &str, more: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["bench", "--base-url", url]
            .iter()
            .chain(more)
            .chain(&quiet)
            .map(|s| s.to_string())
            .collect();
        a.extend(["--num-warmups".into(), "0".into()]);
        a
    };
    let random = bench(
        &closed,
        &[
            "--model",
            "m",
            "--random-input-len",
            "1000",
            "--random-output-len",
            "100000",
            "--max-concurrency",
            "64",
            "--num-prompts",
            "100",
        ],
    );
    let dataset = bench(
        &sim_url,
        &[
            "--dataset-name",
            "jsonl",
            "--dataset-path",
            "ds.jsonl",
            "--max-concurrency",
            "1",
            "--num-prompts",
            "2",
        ],
    );
    let traces: Vec<String> = ["agentx-traces", "--shape", "quickstart", "-o", "qs.jsonl"]
        .map(String::from)
        .to_vec();
    let mut synthetic: Vec<String> = [
        "replay",
        "--synthetic",
        "quickstart",
        "--model",
        "m",
        "--base-url",
        &closed,
        "--benchmark-duration",
        "5",
        "--unsafe-override",
    ]
    .map(String::from)
    .to_vec();
    synthetic.extend(quiet.map(String::from));
    // (arguments, the small limit, what the refusal says, the exit at the advised value)
    let shapes: [(&[String], &str, &str, i32); 4] = [
        (
            &random,
            "150000",
            "(17488 KiB per stream, 1 KiB per request, 175 MiB besides for the binary and 6 \
             threads and 2 MiB of prompts (lower --random-input-len or --num-prompts) and 8 MiB \
             of the records' output tokens (lower --random-output-len or --num-prompts), as \
             measured) and the address-space limit `ulimit -v` is 146 MiB; no concurrency fits; \
             raise the address-space limit: `ulimit -v ",
            3,
        ),
        (
            &dataset,
            "150000",
            "no concurrency fits; raise the address-space limit",
            0,
        ),
        (
            &traces,
            "150000",
            "--shape quickstart: not one session of it fits: the 6 sessions the run reads need \
             about 46 KiB",
            0,
        ),
        (
            &synthetic,
            "150000",
            "no concurrency fits; raise the address-space limit",
            3,
        ),
    ];
    for (args, small, says, starts) in shapes {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (o, text) = under_ulimit_v(small, d, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains(says), "{args:?}: {text}");
        let kib = advised(&text);
        let (o, text) = under_ulimit_v(&kib, d, &args);
        assert_eq!(o.status.code(), Some(starts), "{args:?} at {kib}: {text}");
        if starts == 3 {
            assert!(text.contains("server unreachable"), "{args:?}: {text}");
        } else if args[0] == "bench" {
            assert!(
                text.contains("Successful requests:                    2"),
                "{text}"
            );
        }
        let below = (kib.parse::<u64>().unwrap() - 1).to_string();
        let (o, text) = under_ulimit_v(&below, d, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?} at {below}: {text}");
    }
}

/// Issue 39, fresh tester's finding 1: `bench --db --save-requests` of long one-token-chunk
/// streams (the instant sim sends one token a chunk) was told a `ulimit -v` at which every
/// request succeeded and then storing failed ("req.jsonl: out of memory", or with
/// `--save-detailed` an allocation failure: the store read the 72 MB records file whole, copied
/// it and compressed it in memory, and parsed the detailed result's per-request arrays at 10×
/// their size). The store now streams the records file and skips those arrays: at the advised
/// value the run stores its point (exit 0, every record in the database), with and without
/// `--save-detailed`.
#[test]
fn bench_db_with_saved_requests_stores_at_the_advised_ulimit_v() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for detailed in [false, true] {
        let rd = if detailed { "rd" } else { "rr" };
        std::fs::create_dir(d.join(rd)).unwrap();
        let (req, db) = (format!("{rd}/req.jsonl"), format!("{rd}/x.db"));
        let mut args = vec![
            "bench",
            "--base-url",
            &url,
            "--random-output-len",
            "4096",
            "--num-prompts",
            "300",
            "--max-concurrency",
            "50",
            "--save-requests",
            &req,
            "--result-dir",
            rd,
            "--db",
            &db,
            "--power",
            "off",
            "--no-server-metrics",
            "--progress",
            "off",
        ];
        if detailed {
            args.push("--save-detailed");
        }
        let (o, text) = under_ulimit_v("150000", d, &args);
        assert_eq!(o.status.code(), Some(2), "{text}");
        let kib = advised(&text);
        let (o, text) = under_ulimit_v(&kib, d, &args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "--save-detailed {detailed}, ulimit -v {kib}: {text}"
        );
        let conn = rusqlite::Connection::open(d.join(&db)).unwrap();
        let (n, blob): (i64, Vec<u8>) = conn
            .query_row("SELECT n_records, jsonl_zst FROM requests", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        // 300 profile requests and the 100 warmups.
        assert_eq!(n, 400, "{text}");
        assert_eq!(
            zstd::decode_all(&blob[..]).unwrap(),
            std::fs::read(d.join(&req)).unwrap()
        );
    }
}

/// Issue 39, fresh tester's finding 3: `sim` under `ulimit -v 60000` panicked ("OS can't
/// spawn worker thread") and then hung. It checks its own need first: refused (exit 2) naming
/// `ulimit -v` and the value that fits; at that value it serves a streamed completion to its
/// end and stops on SIGTERM (exit 130).
#[test]
fn a_sim_under_ulimit_v_refuses_naming_the_value_at_which_it_serves() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let args = ["sim", "--host", "127.0.0.1", "--port", &port];
    let (o, text) = under_ulimit_v("60000", d, &args);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("and the address-space limit `ulimit -v` is 58 MiB: raise it (`ulimit -v "),
        "{text}"
    );
    assert!(!text.contains("panicked"), "{text}");
    let kib = text
        .split("(`ulimit -v ")
        .nth(1)
        .and_then(|t| t.split_once("` fits)"))
        .map(|(n, _)| n.to_string())
        .unwrap_or_else(|| panic!("no advised value: {text}"));
    let script = format!("{CLOSE_INHERITED}ulimit -v {kib} || exit 99; exec \"$0\" \"$@\"");
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg(BIN)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    let mut conn = loop {
        if let Ok(c) = std::net::TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())) {
            break c;
        }
        if let Ok(Some(st)) = child.try_wait() {
            panic!("the sim ended at ulimit -v {kib}: {st}");
        }
        assert!(t0.elapsed().as_secs() < 30, "the sim did not start");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let body =
        r#"{"model": "Llama-3.1-8B", "prompt": "hi there", "max_tokens": 64, "stream": true}"#;
    write!(
        conn,
        "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    conn.read_to_string(&mut reply).unwrap();
    assert!(reply.contains("data: [DONE]"), "ulimit -v {kib}: {reply}");
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let t0 = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed().as_secs() > 20 {
            let _ = child.kill();
            panic!("the sim did not stop on SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
}

/// Issue 39, fresh tester's finding 2: `sweep --traces` left the traces out of its rows'
/// memory check (every agentic row launched under the `ulimit -v` at which `replay` of the
/// same file was refused), and at a lower limit read them whole before any check (out of
/// memory, no value named). Each agentic row now counts them, as their load keeps them or,
/// where reading them does not fit beside the process, by their files' size: refused before
/// any request (exit 2) naming the `ulimit -v` at which the row starts, and at that value the
/// sweep gets past every check (its point then fails on the closed port, never out of memory).
#[test]
fn a_sweep_counts_its_traces_file_against_ulimit_v() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = Command::new(BIN)
        .args([
            "agentx-traces",
            "--shape",
            "062126",
            "--traces",
            "10",
            "-o",
            "big.jsonl",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::output_text(&o));
    std::fs::write(
        d.join("m.json"),
        serde_json::json!([{
            "image": "x", "model": "m", "model-prefix": "m", "precision": "fp8",
            "framework": "sim", "runner": "h100", "tp": 1, "pp": 1, "dcp-size": 1,
            "pcp-size": 1, "conc": 1, "max-model-len": 2048, "ep": 1, "dp-attn": false,
            "spec-decoding": "none", "exp-name": "m_agentic", "disagg": false,
            "scenario-type": "agentic-coding"
        }])
        .to_string(),
    )
    .unwrap();
    let url = closed_url();
    let sweep = |kib: &str, out: &str| {
        under_ulimit_v(
            kib,
            d,
            &[
                "sweep",
                "--matrix",
                "m.json",
                "--base-url",
                &url,
                "--runner-name",
                "h100_0",
                "--traces",
                "big.jsonl",
                "--agentic-duration",
                "5",
                "--out",
                out,
            ],
        )
    };
    let mut advice = Vec::new();
    for kib in ["150000", "250000"] {
        let (o, text) = sweep(kib, "r");
        assert_eq!(o.status.code(), Some(2), "ulimit -v {kib}: {text}");
        // Named by its traces, duration and conc, and told to lower what it has (issue 39,
        // files, ingest and hints, 4: "lower the row's isl" for a row with no isl).
        assert!(
            text.contains(&format!(
                "row 0 (agentic-coding: traces {}, 5 s, conc 1): conc 1 is more than this \
                 client can hold",
                d.join("big.jsonl").display()
            )),
            "{text}"
        );
        assert!(!text.contains("isl"), "{text}");
        assert!(!text.contains("out of memory"), "{text}");
        advice.push(advised(&text));
    }
    let (o, text) = sweep(&advice[1], "r2");
    assert_ne!(o.status.code(), Some(2), "ulimit -v {}: {text}", advice[1]);
    assert!(!text.contains("out of memory"), "{text}");
}

/// Issue 39, fresh tester's finding 2: `quickstart --fast` under `ulimit -v 100000` ran out
/// of memory naming no value. It checks its largest point and its in-process sim first:
/// refused (exit 2) naming the `ulimit -v` at which it starts, and at that value it runs to
/// the end (exit 0).
#[test]
fn a_quickstart_under_ulimit_v_names_the_value_at_which_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (o, text) = under_ulimit_v("100000", d, &["quickstart", "--fast"]);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(!text.contains("out of memory"), "{text}");
    let kib = advised(&text);
    let (o, text) = under_ulimit_v(&kib, d, &["quickstart", "--fast"]);
    assert_eq!(o.status.code(), Some(0), "ulimit -v {kib}: {text}");
}

/// Issue 39, fresh tester's finding 1: `replay` and `sweep --traces` checked twice with two
/// per-lane costs (64 KiB before the traces were read, 151 KiB after: the quickstart corpus's
/// largest request), so the `ulimit -v` the first refusal advised was refused by the second
/// ("--concurrency 26 or less fits", no value). Both checks now count the traces' per-lane load
/// from one pass ([`inferbench_loadgen::agentic::LaneLoad::add`]): at 150000 each names the
/// `ulimit -v` it needs at the per-lane cost the second check counts, and at that value the
/// replay and the sweep run to the end (exit 0); one KiB below, the run is refused (exit 2).
#[test]
fn replay_and_sweep_with_traces_run_at_the_ulimit_v_their_first_check_advises() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = Command::new(BIN)
        .args(["agentx-traces", "--shape", "quickstart", "-o", "qt.jsonl"])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", common::output_text(&o));
    std::fs::write(
        d.join("m.json"),
        serde_json::json!([{
            "image": "x", "model": "Llama-3.1-8B", "model-prefix": "m", "precision": "fp8",
            "framework": "sim", "runner": "h100", "tp": 1, "pp": 1, "dcp-size": 1,
            "pcp-size": 1, "conc": 64, "max-model-len": 2048, "ep": 1, "dp-attn": false,
            "spec-decoding": "none", "exp-name": "m_agentic", "disagg": false,
            "scenario-type": "agentic-coding"
        }])
        .to_string(),
    )
    .unwrap();
    let replay = |kib: &str, out: &str| {
        under_ulimit_v(
            kib,
            d,
            &[
                "replay",
                "--traces",
                "qt.jsonl",
                "--base-url",
                &url,
                "--model",
                "Llama-3.1-8B",
                "--concurrency",
                "64",
                "--benchmark-duration",
                "2",
                "--unsafe-override",
                "--result-dir",
                out,
                "--power",
                "off",
                "--no-server-metrics",
                "--progress",
                "off",
            ],
        )
    };
    let sweep = |kib: &str, out: &str| {
        under_ulimit_v(
            kib,
            d,
            &[
                "sweep",
                "--matrix",
                "m.json",
                "--base-url",
                &url,
                "--runner-name",
                "h100_0",
                "--traces",
                "qt.jsonl",
                "--agentic-duration",
                "2",
                "--out",
                out,
            ],
        )
    };
    type Run<'a> = &'a dyn Fn(&str, &str) -> (Output, String);
    for (name, run) in [("replay", &replay as Run), ("sweep", &sweep as Run)] {
        let (o, text) = run("150000", "r0");
        assert_eq!(o.status.code(), Some(2), "{name}: {text}");
        // The first check already counts the traces' largest request per lane.
        assert!(text.contains("(463 KiB per stream,"), "{name}: {text}");
        let kib = advised(&text);
        let (o, text) = run(&kib, "r1");
        assert_eq!(
            o.status.code(),
            Some(0),
            "{name} at ulimit -v {kib}: {text}"
        );
        let below = (kib.parse::<u64>().unwrap() - 1).to_string();
        let (o, text) = run(&below, "r2");
        assert_eq!(
            o.status.code(),
            Some(2),
            "{name} at ulimit -v {below}: {text}"
        );
    }
}

/// Issue 39, fresh tester's finding 3: a `bench --duration` closed loop (no `--request-rate`)
/// makes as many requests as the server answers, but its memory check counted only
/// `--num-prompts` + `--num-warmups` (640) and the `ulimit -v` it advised was claimed to hold
/// the run (9,018 requests later it ran out of memory, no summary). The refusal now says what
/// it cannot know (naming `--duration`, the requests counted and what each further one keeps),
/// and a run that starts under a limit is warned how many requests in all the limit holds.
#[test]
fn a_duration_closed_loop_says_what_its_memory_check_cannot_know() {
    let sim = common::start_sim(&[]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bench = |kib: &str| {
        under_ulimit_v(
            kib,
            d,
            &[
                "bench",
                "--base-url",
                &url,
                "--model",
                "Llama-3.1-8B",
                "--random-input-len",
                "64",
                "--random-output-len",
                "256",
                "--num-warmups",
                "0",
                "--cache-bust",
                "--duration",
                "1",
                "--max-concurrency",
                "64",
                "--save-detailed",
                "--progress",
                "off",
            ],
        )
    };
    let (o, text) = bench("150000");
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains(
            "; --duration 1 s with no --request-rate sends as many requests as the server \
             answers, not known up front: this counts 640 (--num-prompts and --num-warmups) \
             and each further one keeps about 32 KiB until the summary, so the run may need \
             more; pass --request-rate to bound it, or lower --duration (nothing was sent)\n"
        ),
        "{text}"
    );
    let kib = advised(&text);
    let (o, text) = bench(&kib);
    assert_eq!(o.status.code(), Some(0), "ulimit -v {kib}: {text}");
    assert!(
        text.contains(
            "inferbench: warning: --duration 1 s with no --request-rate sends as many requests"
        ) && text.contains(
            "; the address-space limit `ulimit -v` holds about 640 requests in all: the run \
             stops sending after 640 requests, as at the end of its duration, and writes its \
             summary\n"
        ),
        "{text}"
    );
}

/// Issue 39: a `bench --duration` closed loop keeps every record (13 KiB each with
/// `--save-detailed` at 256 output tokens) beyond the 160 its up-front check counted; under
/// `ulimit -v 200000` against the instant sim it ran out of memory within a second (exit 1,
/// no summary). It now stops sending when its records reach what the limit holds (the number
/// its warning names), lets the requests in flight finish and ends as at its duration: exit
/// 0, the summary, and the stop cause in the result (`inferbench.stopped_reason`) and on
/// stderr; `stop_reason` stays `completed`.
#[test]
fn a_duration_closed_loop_stops_at_the_records_ulimit_v_holds() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (o, text) = under_ulimit_v(
        "200000",
        d,
        &[
            "bench",
            "--base-url",
            &url,
            "--model",
            "Llama-3.1-8B",
            "--random-input-len",
            "64",
            "--random-output-len",
            "256",
            "--num-warmups",
            "0",
            "--cache-bust",
            "--duration",
            "60",
            "--max-concurrency",
            "16",
            "--save-detailed",
            "--save-result",
            "--result-filename",
            "r.json",
            "--progress",
            "off",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{text}");
    let n: u64 = text
        .split("the run stops sending after ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no bound in the warning: {text}"));
    // More than the 160 the check counted, as many as 200000 KiB holds at 13 KiB each.
    assert!(n > 160, "{text}");
    let why = format!(
        "stopped after {n} requests: the records kept would outgrow ulimit -v (200000 KiB)"
    );
    assert!(
        text.contains(&format!(
            "inferbench: warning: {why}; the run stopped sending there as at the end of its \
             --duration (requests in flight finished) and its summary covers them\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Successful requests:                    {n:<10}\n"
        )),
        "{text}"
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r.json")).unwrap()).unwrap();
    assert_eq!(r["num_prompts"], n);
    assert_eq!(r["completed"], n);
    assert_eq!(r["inferbench"]["stopped_reason"], why.as_str());
    assert_eq!(r["inferbench"]["stop_reason"], "completed");
    // It stopped well before its 60 s.
    assert!(r["duration"].as_f64().unwrap() < 50.0, "{r}");
}

/// Issue 39, the same kind for `replay`: a replay keeps every record until its summary, as
/// many as the server answers in its `--benchmark-duration`, which its up-front check does not
/// count (it counts the lanes and the traces); 20,000 one-request traces against the instant
/// sim for 120 s under `ulimit -v 360000` would keep ~400,000 records and run out of memory.
/// Under `ulimit -v` its profile now ends when the records reach what the limit holds (4 KiB
/// each beside the lanes and traces), as at the end of its duration: exit 0, the summary, and
/// the stop cause in `summary.json` (`inferbench.stopped_reason`) and on stderr.
#[test]
fn a_replay_stops_at_the_records_ulimit_v_holds() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let traces: String = (0..20_000)
        .map(|i| {
            format!(
                "{{\"id\":\"t{i}\",\"block_size\":64,\"requests\":[{{\"t\":0.0,\"type\":\"s\",\
                 \"in\":64,\"out\":4,\"hash_ids\":[0],\"api_time\":0.1}}]}}\n"
            )
        })
        .collect();
    std::fs::write(d.join("t.jsonl"), traces).unwrap();
    let (o, text) = under_ulimit_v(
        "360000",
        d,
        &[
            "replay",
            "--traces",
            "t.jsonl",
            "--model",
            "Llama-3.1-8B",
            "--base-url",
            &url,
            "--benchmark-duration",
            "120",
            "--unsafe-override",
            "--concurrency",
            "64",
            "--progress",
            "off",
            "--power",
            "off",
            "--result-dir",
            "r",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{text}");
    let why = text
        .split("inferbench: warning: ")
        .find_map(|t| t.split_once("; the replay ended there as at the end of its"))
        .map(|(w, _)| w.to_string())
        .unwrap_or_else(|| panic!("no stop warning: {text}"));
    let n: u64 = why
        .strip_prefix("stopped after ")
        .and_then(|t| {
            t.strip_suffix(" requests: the records kept would outgrow ulimit -v (360000 KiB)")
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{why}"));
    assert!(n > 1000, "{why}");
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("r/summary.json")).unwrap()).unwrap();
    assert_eq!(s["inferbench"]["stopped_reason"], why.as_str());
    assert_eq!(s["inferbench"]["stop_reason"], "completed");
    // The records kept when it ended, and those in flight then (at most one per lane).
    let completed = s["completed"].as_u64().unwrap();
    assert!(
        completed + 64 >= n && completed <= n + 64,
        "{completed} vs {n}"
    );
    assert!(s["duration"].as_f64().unwrap() < 100.0, "{s}");
}

/// Issue 39, fresh tester's finding 4: `replay` of 26 MB of traces under a small `ulimit -v`
/// said "8 streams need about 376 MiB" (the lanes and the traces' 128 MiB read room summed)
/// and advised `ulimit -v 349645` (341 MiB), at which it runs: the read room is freed before
/// the lanes start. The need a refusal states is the number its advice comes from; at that
/// value the replay passes every check (exit 3: pointed at a closed port, it sent requests).
#[test]
fn a_replays_stated_need_is_the_ulimit_v_it_advises() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = Command::new(BIN)
        .args([
            "agentx-traces",
            "--shape",
            "062126",
            "--traces",
            "12",
            "--out",
            "t.jsonl",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", common::output_text(&o));
    let url = closed_url();
    let replay = |kib: &str| {
        under_ulimit_v(
            kib,
            d,
            &[
                "replay",
                "--traces",
                "t.jsonl",
                "--model",
                "m",
                "--base-url",
                &url,
                "--concurrency",
                "8",
                "--benchmark-duration",
                "1",
                "--unsafe-override",
                "--power",
                "off",
                "--no-server-metrics",
                "--progress",
                "off",
            ],
        )
    };
    let (o, text) = replay("250000");
    assert_eq!(o.status.code(), Some(2), "{text}");
    let mib: u64 = text
        .split("8 streams need about ")
        .nth(1)
        .and_then(|t| t.split_once(" MiB"))
        .map(|(n, _)| n.parse().unwrap())
        .unwrap_or_else(|| panic!("no need stated: {text}"));
    let kib = advised(&text);
    assert_eq!(mib, kib.parse::<u64>().unwrap().div_ceil(1024), "{text}");
    // Since h1's one `replay_need` plans every lane beside the corpus, the stated need is the
    // whole of it (no "not all held at once" part any more): still the advised value.
    let (o, text) = replay(&kib);
    assert_eq!(o.status.code(), Some(3), "ulimit -v {kib}: {text}");
}

/// Issue 39's leftovers, item 1: `replay --synthetic 062126-256k --concurrency 64` under
/// `ulimit -v 328320` said "--num-dataset-entries 5 or fewer fit" (the traces' room was what
/// the 23 lanes that fitted left), and 5 entries were then refused for their 64 lanes. The
/// check before the load now plans every lane the run starts beside the corpus it keeps: with
/// the quickstart corpus and 64 lanes, a limit at which the lanes do not fit names the
/// `ulimit -v` that runs the whole corpus (exit 0 there, a refusal 1 KiB below); a limit a
/// few KiB below that, where the lanes fit but not the whole corpus beside them, names an
/// entry count K: K entries run to the end (exit 0) at that limit, K + 1 are refused naming
/// K again (the number the check after the load accepts, nothing more).
#[test]
fn a_replay_at_the_entries_or_ulimit_v_its_refusal_names_runs_with_all_its_lanes() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let replay = |kib: &str, entries: Option<&str>| {
        let mut a = vec![
            "replay",
            "--synthetic",
            "quickstart",
            "--base-url",
            &url,
            "--concurrency",
            "64",
            "--benchmark-duration",
            "1",
            "--unsafe-override",
            "--power",
            "off",
            "--no-server-metrics",
            "--progress",
            "off",
        ];
        if let Some(n) = entries {
            a.extend(["--num-dataset-entries", n]);
        }
        under_ulimit_v(kib, d, &a)
    };
    // Not every lane fits: the refusal is the lanes', with the limit that holds the corpus.
    let (o, text) = replay("200000", None);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.starts_with("error: --concurrency 64 is more than this client can hold: ")
            && text.contains("no concurrency fits; raise the address-space limit: `ulimit -v "),
        "{text}"
    );
    let kib: u64 = advised(&text).parse().unwrap();
    let (o, text) = replay(&kib.to_string(), None);
    assert_eq!(o.status.code(), Some(0), "ulimit -v {kib}: {text}");
    let (o, text) = replay(&(kib - 1).to_string(), None);
    assert_eq!(o.status.code(), Some(2), "ulimit -v {}: {text}", kib - 1);
    // The lanes fit, the whole corpus not beside them: the entries that fit beside all 64.
    let tight = (kib - 4).to_string();
    let (o, text) = replay(&tight, None);
    assert_eq!(o.status.code(), Some(2), "{text}");
    let k = text
        .split("--num-dataset-entries ")
        .find_map(|t| t.strip_suffix(" or fewer fit (nothing was sent)\n"))
        .unwrap_or_else(|| panic!("no entry count that fits: {text}"))
        .to_string();
    let (o, text) = replay(&tight, Some(&k));
    assert_eq!(
        o.status.code(),
        Some(0),
        "--num-dataset-entries {k}: {text}"
    );
    assert!(
        text.contains(&format!("inferbench replay: {k} traces ")),
        "{text}"
    );
    let more = (k.parse::<u64>().unwrap() + 1).to_string();
    let (o, text) = replay(&tight, Some(&more));
    assert_eq!(
        o.status.code(),
        Some(2),
        "--num-dataset-entries {more}: {text}"
    );
    assert!(
        text.contains(&format!(
            "--num-dataset-entries {k} or fewer fit (nothing was sent)"
        )),
        "{text}"
    );
}

/// Issue 39's leftovers, item 1, the case as reported: `replay --synthetic 062126-256k
/// --concurrency 64` under `ulimit -v 328320` said "--num-dataset-entries 5 or fewer fit",
/// and 5 entries were then refused for their 64 lanes. The 64 lanes (6.6 MiB each) do not fit
/// even beside no trace: the refusal is now the lanes', naming no entry count; with 5 entries
/// it names the lanes that fit beside them, and that many replay the 5 to the end (exit 0).
#[test]
fn the_256k_corpus_at_64_lanes_under_a_tight_limit_is_refused_for_its_lanes() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let replay = |conc: &str, entries: Option<&str>| {
        let mut a = vec![
            "replay",
            "--synthetic",
            "062126-256k",
            "--base-url",
            &url,
            "--concurrency",
            conc,
            "--benchmark-duration",
            "1",
            "--unsafe-override",
            "--power",
            "off",
            "--no-server-metrics",
            "--progress",
            "off",
        ];
        if let Some(n) = entries {
            a.extend(["--num-dataset-entries", n]);
        }
        under_ulimit_v("328320", d, &a)
    };
    let (o, text) = replay("64", None);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.starts_with("error: --concurrency 64 is more than this client can hold: ")
            && !text.contains("or fewer fit"),
        "{text}"
    );
    let (o, text) = replay("64", Some("5"));
    assert_eq!(o.status.code(), Some(2), "{text}");
    let fit = fits(&text, "--concurrency");
    let (o, text) = replay(&fit, Some("5"));
    assert_eq!(o.status.code(), Some(0), "--concurrency {fit}: {text}");
    assert!(text.contains("inferbench replay: 5 traces "), "{text}");
}

/// Issue 39's leftovers, item 2: a sweep's AgentX rows ran their replay with no record bound,
/// so under `ulimit -v` a long agentic point (20,000 one-request traces against the instant sim
/// for 120 s, ~2,000 records a second) kept records until it ran out of memory. Its row now
/// gets the bound `replay` computes: the point's profile ends when the records reach what the
/// limit holds, the sweep exits 0 with the point ok, and its `summary.json` carries the stop
/// cause (`inferbench.stopped_reason`), said once as a warning.
#[test]
fn a_sweep_agentic_row_stops_at_the_records_ulimit_v_holds() {
    let sim = common::start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let traces: String = (0..20_000)
        .map(|i| {
            format!(
                "{{\"id\":\"t{i}\",\"block_size\":64,\"requests\":[{{\"t\":0.0,\"type\":\"s\",\
                 \"in\":64,\"out\":4,\"hash_ids\":[0],\"api_time\":0.1}}]}}\n"
            )
        })
        .collect();
    std::fs::write(d.join("t.jsonl"), traces).unwrap();
    std::fs::write(
        d.join("m.json"),
        serde_json::json!([{
            "image": "x", "model": "Llama-3.1-8B", "model-prefix": "m", "precision": "fp8",
            "framework": "sim", "runner": "h100", "tp": 1, "pp": 1, "dcp-size": 1,
            "pcp-size": 1, "conc": 64, "max-model-len": 2048, "ep": 1, "dp-attn": false,
            "spec-decoding": "none", "exp-name": "m_agentic", "disagg": false,
            "scenario-type": "agentic-coding"
        }])
        .to_string(),
    )
    .unwrap();
    let (o, text) = under_ulimit_v(
        "360000",
        d,
        &[
            "sweep",
            "--matrix",
            "m.json",
            "--base-url",
            &url,
            "--runner-name",
            "h100_0",
            "--traces",
            "t.jsonl",
            "--agentic-duration",
            "120",
            "--out",
            "r",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("1 point: 1 ok (1 of them invalid: kept off frontiers)"),
        "{text}"
    );
    let why = text
        .split("_conc64_h100_0: ")
        .find_map(|t| t.split_once("; the replay ended there as at the end of its duration"))
        .map(|(w, _)| w.to_string())
        .unwrap_or_else(|| panic!("no stop warning: {text}"));
    let n: u64 = why
        .strip_prefix("stopped after ")
        .and_then(|t| {
            t.strip_suffix(" requests: the records kept would outgrow ulimit -v (360000 KiB)")
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{why}"));
    assert!(n > 1000, "{why}");
    let point = std::fs::read_dir(d.join("r"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.join("summary.json").exists())
        .unwrap_or_else(|| panic!("no point directory: {text}"));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(point.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(s["inferbench"]["stopped_reason"], why.as_str());
    assert_eq!(s["inferbench"]["stop_reason"], "completed");
    // The records kept when it ended, and those in flight then (at most one per lane).
    let completed = s["completed"].as_u64().unwrap();
    assert!(
        completed + 64 >= n && completed <= n + 64,
        "{completed} vs {n}"
    );
    assert!(s["duration"].as_f64().unwrap() < 100.0, "{s}");
}

/// The same kind as issue 39's leftovers, item 1 (a check that does not count what the run
/// replays): when the server's context (`/v1/models`, here the sim's `--max-model-len 2048`)
/// drops a trace read, the traces are read again and later ones take its place, whose lanes'
/// load no check counted: with `--num-dataset-entries 2`, the 3,004-token trace (348 KiB per
/// lane) is replaced by one of 1,900 output tokens (628 KiB per lane), and 30 lanes, which fit
/// the first, ran. They are now checked again before any request: refused naming 17, and 17
/// run to the end (exit 0).
#[test]
fn traces_read_again_for_the_servers_context_are_checked_again() {
    let sim = common::start_sim(&["--mode", "instant", "--max-model-len", "2048"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let line = |id: &str, input: u32, out: u32| {
        format!(
            "{{\"id\":\"{id}\",\"block_size\":64,\"requests\":[{{\"t\":0.0,\"type\":\"s\",\
             \"in\":{input},\"out\":{out},\"hash_ids\":[0],\"api_time\":0.1}}]}}\n"
        )
    };
    let traces = [line("a", 3000, 4), line("b", 64, 4), line("c", 64, 1900)].concat();
    std::fs::write(d.join("ctx.jsonl"), traces).unwrap();
    let replay = |conc: &str| {
        under_ulimit_v(
            "190000",
            d,
            &[
                "replay",
                "--traces",
                "ctx.jsonl",
                "--num-dataset-entries",
                "2",
                "--base-url",
                &url,
                "--model",
                "Llama-3.1-8B",
                "--concurrency",
                conc,
                "--benchmark-duration",
                "1",
                "--unsafe-override",
                "--power",
                "off",
                "--no-server-metrics",
                "--progress",
                "off",
            ],
        )
    };
    let (o, text) = replay("256");
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("(348 KiB per stream,"), "{text}");
    assert_eq!(fits(&text, "--concurrency"), "30", "{text}");
    let (o, text) = replay("30");
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("(628 KiB per stream,"), "{text}");
    assert_eq!(fits(&text, "--concurrency"), "17", "{text}");
    let (o, text) = replay("17");
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("inferbench replay: 2 traces "), "{text}");
}
