//! Issue 39 §2: the client's own limits are the client's, never the server's. The built binary
//! runs under `bash -c 'ulimit …; exec inferbench …'`: a soft open-file limit it raises, a hard
//! one or an address-space limit that refuses the run (exit 2, nothing sent), and `EMFILE` at
//! run time, which is `client_resource`, never "server unreachable" (exit 3).

use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_inferbench");

use common::{start_sim, Sim};

/// Shell words closing every descriptor above 2 the shell was started with.
const CLOSE_INHERITED: &str =
    "for fd in $(ls /proc/$$/fd); do [ \"$fd\" -gt 2 ] && eval \"exec $fd<&-\"; done; ";

/// `inferbench ARGS` after the shell's `ulimit` settings `ulimits` (e.g. `-Sn 1024`).
fn under_ulimit(ulimits: &[&str], args: &[&str]) -> (Output, String) {
    under_ulimit_with(ulimits, "2", args)
}

/// [`under_ulimit`] with `workers` runtime workers (`TOKIO_WORKER_THREADS`; the memory a run
/// needs counts its threads, so the messages are the same on any machine).
fn under_ulimit_with(ulimits: &[&str], workers: &str, args: &[&str]) -> (Output, String) {
    // Descriptors the test harness passed on (cargo's jobserver pipes) closed first: they
    // count against `ulimit -n` (issue 39 §2) and would change the exact numbers.
    let mut script = String::from(CLOSE_INHERITED);
    for u in ulimits {
        script.push_str(&format!("ulimit {u} || exit 99; "));
    }
    script.push_str("exec \"$0\" \"$@\"");
    let o = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg(BIN)
        .args(args)
        .env("TOKIO_WORKER_THREADS", workers)
        .output()
        .unwrap();
    let text = common::output_text(&o);
    (o, text)
}

/// Trial of issue 39 §1–§3, finding 2: the concurrency a refusal says fits runs. With 16
/// workers, `ulimit -v 300000` and 5,000 streams asked, the refusal said 513 fit and 513
/// aborted ("memory allocation of 9512 bytes failed": glibc's thread arenas, 64 MiB each, and
/// the threads' stacks count against `ulimit -v`); now the arenas are capped, the threads
/// counted, and the number it names runs against the sim to the end.
#[test]
fn the_concurrency_a_refusal_says_fits_runs() {
    let sim = start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let bench = |conc: &str| {
        under_ulimit_with(
            &["-v 300000"],
            "16",
            &[
                "bench",
                "--base-url",
                &url,
                "--max-concurrency",
                conc,
                "--num-prompts",
                conc,
                "--random-input-len",
                "16",
                "--random-output-len",
                "8",
                "--num-warmups",
                "0",
                "--power",
                "off",
                "--no-server-metrics",
            ],
        )
    };
    let (o, text) = bench("5000");
    assert_eq!(o.status.code(), Some(2), "{text}");
    let fits = text
        .split("--max-concurrency ")
        .find_map(|t| t.strip_suffix(" or less fits (nothing was sent)\n"))
        .unwrap_or_else(|| panic!("no number that fits: {text}"));
    assert_eq!(fits, "109", "{text}");
    let (o, text) = bench(fits);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(!text.contains("memory allocation"), "{text}");
}

/// A listener that counts as "the server": the refused runs must not connect to it.
fn listener() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    (l, url)
}

fn assert_nothing_connected(l: &TcpListener) {
    assert_eq!(
        l.accept().map_err(|e| e.kind()).err(),
        Some(std::io::ErrorKind::WouldBlock),
        "the refused run connected"
    );
}

/// This process's hard open-file limit.
fn hard_open_files() -> u64 {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes only the struct passed.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) };
    r.rlim_max
}

/// A container's soft limit of 1,024 files with 2,048 streams: bench raises it to the hard
/// limit at start and every warmup and profile request succeeds (was: 3,082 of 4,095 warmups
/// "Too many open files", as `connect`, exit 3 "check --base-url").
#[test]
fn a_soft_open_file_limit_is_raised_and_2048_streams_succeed() {
    if !inferbench_testutil::available(
        hard_open_files() >= 2048 + 80,
        "a hard open-file limit of 2,128 or more",
        "raise it: `ulimit -Hn 4096` as root, or the container's nofile limit",
    ) {
        return;
    }
    let sim = start_sim(&["--mode", "instant"]);
    let dir = tempfile::tempdir().unwrap();
    let (o, text) = under_ulimit(
        &["-Sn 1024"],
        &[
            "bench",
            "--base-url",
            &format!("http://127.0.0.1:{}", sim.1),
            "--model",
            "Llama-3.1-8B",
            "--random-input-len",
            "4",
            "--random-output-len",
            "2",
            "--max-concurrency",
            "2048",
            "--num-prompts",
            "2048",
            "--num-warmups",
            "2048",
            "--progress",
            "off",
            "--save-result",
            "--result-dir",
            dir.path().to_str().unwrap(),
            "--result-filename",
            "r.json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{text}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(r["completed"], 2048, "{text}");
    assert_eq!(r["inferbench"]["errors_by_class"], serde_json::json!({}));
    assert_eq!(r["inferbench"]["warmup_failed"], 0);
}

/// `ulimit -n 256` (soft and hard) with 400 streams: refused before the first request, exit 2,
/// naming the limit and the number needed (400 + 16 + 64 = 480) and what fits.
#[test]
fn a_hard_open_file_limit_below_the_concurrency_refuses_the_run() {
    let (l, url) = listener();
    let (o, text) = under_ulimit(
        &["-n 256"],
        &[
            "bench",
            "--base-url",
            &url,
            "--model",
            "m",
            "--max-concurrency",
            "400",
            "--num-prompts",
            "400",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains(
            "error: --max-concurrency 400 is more than this client can hold: 400 streams need \
             480 open files (400 connections, 16 spare, 64 for files) and this process may \
             open 256 (`ulimit -n`, hard limit 256): raise it with `ulimit -n 480`; \
             --max-concurrency 176 or less fits (nothing was sent)"
        ),
        "{text}"
    );
    assert!(o.stdout.is_empty(), "{text}");
    assert_nothing_connected(&l);
}

/// `ulimit -v 6000000` with 1,000,000 streams: bench (1,000,000 prompts) and replay refuse with
/// exit 2 before any request, naming `ulimit -v` (were SIGSEGV, exit 139, and SIGABRT, 134).
#[test]
fn a_million_streams_under_ulimit_v_are_refused_not_aborted() {
    let (l, url) = listener();
    let (o, text) = under_ulimit(
        &["-v 6000000"],
        &[
            "bench",
            "--base-url",
            &url,
            "--model",
            "m",
            "--max-concurrency",
            "1000000",
            "--num-prompts",
            "1000000",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("error: --max-concurrency 1000000 is more than this client can hold: ")
            && text.contains(
                "1000000 streams and 3000000 requests need about 81300 MiB (64 KiB per stream, \
                 1 KiB per request, 245 MiB besides for the binary and 34 threads and 15625 MiB \
                 of prompts (lower --random-input-len or --num-prompts), as measured) and the \
                 address-space limit `ulimit -v` is 5859 MiB"
            )
            && text.contains("(nothing was sent)"),
        "{text}"
    );
    let (o, text) = under_ulimit(
        &["-v 6000000"],
        &[
            "replay",
            "--synthetic",
            "quickstart",
            "--base-url",
            &url,
            "--model",
            "m",
            "--concurrency",
            "1000000",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("error: --concurrency 1000000 is more than this client can hold: ")
            && text.contains(
                "1000000 streams need about 62745 MiB (64 KiB per stream, 1 KiB per request, \
                 245 MiB besides for the binary and 34 threads, as measured) and the \
                 address-space limit `ulimit -v` is 5859 MiB"
            ),
        "{text}"
    );
    assert_nothing_connected(&l);
}

/// Trial of issue 39 §1–§3, finding 1: `ulimit -v 700000` with 6 prompts of 10,000,000 tokens
/// aborted in prompt preparation ("memory allocation of 135000384 bytes failed", exit 134): the
/// prompts count against the one memory budget (the smaller of `ulimit -v` and the memory
/// available), refused with exit 2 before any request.
#[test]
fn prompts_beyond_ulimit_v_are_refused_not_aborted() {
    let (l, url) = listener();
    let (o, text) = under_ulimit(
        &["-v 700000"],
        &[
            "bench",
            "--base-url",
            &url,
            "--model",
            "m",
            "--max-concurrency",
            "1",
            "--num-prompts",
            "6",
            "--random-input-len",
            "10000000",
            "--random-output-len",
            "8",
            "--num-warmups",
            "0",
            "--power",
            "off",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains(
            "error: --max-concurrency 1 is more than this client can hold: 1 streams and 6 \
             requests need about 1161 MiB (64 KiB per stream, 1 KiB per request, 245 MiB \
             besides for the binary and 34 threads and 916 MiB of prompts (lower \
             --random-input-len or --num-prompts), as measured) and the address-space limit \
             `ulimit -v` is 683 MiB; no concurrency fits (nothing was sent)"
        ),
        "{text}"
    );
    assert_nothing_connected(&l);
}

/// `EMFILE` during the run (`ulimit -n 20`; an open loop without a cap is not checked up front): the failed
/// requests are `client_resource` with the `ulimit -n` hint, the run ends 1 (its error rate),
/// never 3 and never "unreachable" or "check --base-url".
#[test]
fn running_out_of_files_mid_run_is_client_resource_not_unreachable() {
    let sim = start_sim(&[]);
    let dir = tempfile::tempdir().unwrap();
    let (o, text) = under_ulimit(
        &["-n 20"],
        &[
            "bench",
            "--base-url",
            &format!("http://127.0.0.1:{}", sim.1),
            "--model",
            "Llama-3.1-8B",
            "--random-input-len",
            "4",
            "--random-output-len",
            "16",
            "--request-rate",
            "100000",
            "--num-prompts",
            "100",
            "--progress",
            "off",
            "--save-result",
            "--result-dir",
            dir.path().to_str().unwrap(),
            "--result-filename",
            "r.json",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{text}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    let by_class = r["inferbench"]["errors_by_class"].as_object().unwrap();
    assert_eq!(
        by_class.keys().collect::<Vec<_>>(),
        ["client_resource"],
        "{text}"
    );
    assert!(
        text.contains("errors: client_resource: ")
            && text.contains(
                "Too many open files (os error 24) (the client's own limit, not the server's: \
                 raise the open-file limit, `ulimit -n`, or lower the concurrency)"
            ),
        "{text}"
    );
    assert!(
        !text.contains("unreachable") && !text.contains("--base-url"),
        "{text}"
    );
}

/// The soft open-file limit of a running process (`/proc/PID/limits`): (soft, hard).
fn open_file_limits(pid: u32) -> (String, String) {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .to_string();
    let mut f = line["Max open files".len()..].split_whitespace();
    (f.next().unwrap().into(), f.next().unwrap().into())
}

/// Not only bench: `sim` (a long-running subcommand, as serve, sweep, job, replay, selftest,
/// eval and quickstart) started at a soft limit of 1,024 runs at its hard limit.
#[test]
fn sim_raises_its_soft_open_file_limit_too() {
    if !inferbench_testutil::available(
        hard_open_files() > 1024,
        "a hard open-file limit above 1,024",
        "raise the container's nofile limit",
    ) {
        return;
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("bash")
        .arg("-c")
        .arg("ulimit -Sn 1024 || exit 99; exec \"$0\" \"$@\"")
        .arg(BIN)
        .args(["sim", "--host", "127.0.0.1", "--port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sim = Sim(child, port);
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(30), "sim did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (soft, hard) = open_file_limits(sim.0.id());
    assert_eq!(soft, hard);
    // The shell's own soft limit really was 1,024 (what the sim started with).
    let o = Command::new("bash")
        .arg("-c")
        .arg("ulimit -Sn 1024; ulimit -Sn")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "1024");
}

/// Trial of issue 39 §1–§3, finding 4: a bench whose open-file limit drops to 5 under it
/// (`prlimit --nofile=5:5`) failed its requests as `client_resource` (right), then could not
/// create its result ("Too many open files"), exit 2, no summary. It now holds its result's
/// file open from the start: the summary is printed, the result written, and the exit is the
/// failed requests' 1 (or 0 if every request had its connection already).
#[test]
fn running_out_of_files_keeps_the_summary_and_the_result() {
    let sim = start_sim(&[]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(BIN)
        .args([
            "bench",
            "--base-url",
            &url,
            "--max-concurrency",
            "2",
            "--num-prompts",
            "20",
            "--random-input-len",
            "16",
            "--random-output-len",
            "64",
            "--num-warmups",
            "0",
            "--power",
            "off",
            "--no-server-metrics",
            "--save-result",
            "--result-dir",
        ])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Once the result's name is claimed (its `.json.tmp` held open), the limit drops below
    // what the process holds.
    let t0 = Instant::now();
    while !std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| e.file_name().to_string_lossy().ends_with(".json.tmp"))
    {
        assert!(t0.elapsed() < Duration::from_secs(30), "no result claimed");
        std::thread::sleep(Duration::from_millis(2));
    }
    let five = libc::rlimit {
        rlim_cur: 5,
        rlim_max: 5,
    };
    // SAFETY: prlimit reads the struct passed and changes only the child's limit.
    let rc = unsafe {
        libc::prlimit(
            pid as libc::pid_t,
            libc::RLIMIT_NOFILE,
            &five,
            std::ptr::null_mut(),
        )
    };
    assert_eq!(rc, 0);
    let o = child.wait_with_output().unwrap();
    let text = common::output_text(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{text}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("Successful requests:"),
        "{text}"
    );
    let results = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count();
    assert_eq!(results, 1, "{text}");
}

/// Trial of issue 39 §1–§3, finding 3: replay's sub-agents take no lane, so 19,000 lanes
/// passed the open-file check (19,080 ≤ 20,000) and then held more connections than lanes.
/// The check now counts each lane at its sessions' peak of requests in flight: a trace whose
/// root turn runs beside two parallel sub-agents needs 3 per lane, so 50 lanes under
/// `ulimit -n 200` (50 + 80 = 130 fit before) are refused before any request.
#[test]
fn replay_counts_sub_agents_against_the_open_file_limit() {
    let (l, url) = listener();
    let dir = tempfile::tempdir().unwrap();
    let req = |t: f64, api: f64| {
        format!(
            r#"{{"t":{t},"model":"m","in":128,"out":8,"hash_ids":[0,1],"api_time":{api},"type":"s"}}"#
        )
    };
    let sub = |id: &str, t: f64| {
        format!(
            r#"{{"t":{t},"type":"subagent","agent_id":"{id}","duration_ms":4000,"requests":[{}]}}"#,
            req(t, 4.0)
        )
    };
    let trace = format!(
        r#"{{"id":"p","models":["m"],"block_size":64,"hash_id_scope":"local","requests":[{},{},{},{},{}]}}"#,
        req(0.0, 4.0),
        req(5.0, 10.0),
        sub("subagent_a", 6.0),
        sub("subagent_b", 7.0),
        req(30.0, 1.0),
    );
    let file = dir.path().join("t.jsonl");
    std::fs::write(&file, trace + "\n").unwrap();
    let (o, text) = under_ulimit(
        &["-n 200"],
        &[
            "replay",
            "--traces",
            file.to_str().unwrap(),
            "--base-url",
            &url,
            "--model",
            "m",
            "--concurrency",
            "50",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains(
            "error: --concurrency 50 (each may hold 3 requests in flight: its session's main \
             agent and parallel sub-agents, which take no lane, so 150 connections) is more than \
             this client can hold: 50 streams need 230 open files (150 connections, 16 spare, 64 \
             for files) and this process may open 200 (`ulimit -n`, hard limit 200): raise it \
             with `ulimit -n 230`; --concurrency 40 or less fits (nothing was sent)"
        ),
        "{text}"
    );
    assert_nothing_connected(&l);
}

/// Trial of issue 39, finding 3: descriptors inherited from the parent count against
/// `ulimit -n`. With 60 of them open at `ulimit -n 150`, 70 streams are refused (exit 2,
/// nothing sent) and the advice is 150 − 16 − 64 − 60 = 10 (was "70 fits", then 60
/// `client_resource` failures).
#[test]
fn inherited_descriptors_count_against_the_open_file_limit() {
    let (l, url) = listener();
    // Exactly 60 besides stdio: whatever the test harness passed on (cargo's jobserver pipes)
    // closed, then descriptors 10..=69 opened on /dev/null, inherited by the exec'd binary.
    let script = format!(
        "{CLOSE_INHERITED}ulimit -n 150 || exit 99; for fd in $(seq 10 69); do \
         eval \"exec $fd</dev/null\"; done; exec \"$0\" \"$@\""
    );
    let o = Command::new("bash")
        .arg("-c")
        .arg(script)
        .arg(BIN)
        .args([
            "bench",
            "--base-url",
            &url,
            "--model",
            "m",
            "--max-concurrency",
            "70",
            "--num-prompts",
            "70",
        ])
        .env("TOKIO_WORKER_THREADS", "2")
        .output()
        .unwrap();
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains(
            "70 streams need 210 open files (70 connections, 16 spare, 64 for files, 60 already \
             open (inherited from the parent process)) and this process may open 150"
        ),
        "{text}"
    );
    assert!(
        text.contains("--max-concurrency 10 or less fits (nothing was sent)"),
        "{text}"
    );
    assert_nothing_connected(&l);
}

/// `bench --dataset-name jsonl` with `path` and `more` flags under `ulimit -v KIB`, 2 workers.
fn dataset_bench(kib: &str, url: &str, path: &std::path::Path, more: &[&str]) -> (Output, String) {
    let v = format!("-v {kib}");
    let mut args = vec![
        "bench",
        "--base-url",
        url,
        "--model",
        "Llama-3.1-8B",
        "--dataset-name",
        "jsonl",
        "--dataset-path",
        path.to_str().unwrap(),
        "--num-warmups",
        "0",
        "--progress",
        "off",
        "--power",
        "off",
        "--no-server-metrics",
    ];
    args.extend_from_slice(more);
    under_ulimit(&[&v], &args)
}

/// Trial of issue 39 §2, finding 1: a 1.9 GB dataset (inside the 2 GiB cap) under
/// `ulimit -v 1000000` aborted a `--num-prompts 2` bench ("memory allocation of 1992294400
/// bytes failed", exit 134): the file was read whole. It is read a line at a time now: a
/// sparse file of NUL bytes is one line longer than the line cap (exit 2, FILE:LINE, nothing
/// sent); two prompts followed by the same sparse tail run (exit 0), the tail never read.
#[test]
fn a_large_dataset_under_ulimit_v_is_read_a_line_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let zeros = dir.path().join("x.jsonl");
    std::fs::File::create(&zeros)
        .unwrap()
        .set_len(1900 << 20)
        .unwrap();
    let (l, url) = listener();
    let (o, text) = dataset_bench("1000000", &url, &zeros, &["--num-prompts", "2"]);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains(&format!(
            "error: --dataset-path {0}: {0}:1: the line is longer than the 67108864-byte limit \
             of a line of this input",
            zeros.display()
        )),
        "{text}"
    );
    assert_nothing_connected(&l);
    let two = dir.path().join("y.jsonl");
    std::fs::write(&two, "{\"prompt\": \"a b\"}\n{\"prompt\": \"c d\"}\n").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&two)
        .unwrap()
        .set_len(1900 << 20)
        .unwrap();
    let sim = start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let (o, text) = dataset_bench("1000000", &url, &two, &["--num-prompts", "2"]);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let ok = text
        .lines()
        .find_map(|l| l.strip_prefix("Successful requests:"))
        .map(str::trim);
    assert_eq!(ok, Some("2"), "{text}");
}

/// Issue 39 §2: a dataset's prompts count against the memory budget as they are read. 40
/// prompts of 512 KiB under `ulimit -v 400000` (2 workers: 245 MiB for the process, 128 MiB
/// kept for a line being parsed, 15 MiB left for prompts) are refused at the line that passes it, naming how many fit
/// (exit 2, nothing sent); that many run to the end.
#[test]
fn dataset_prompts_beyond_ulimit_v_are_refused_naming_what_fits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.jsonl");
    let prompt = "hello ".repeat((1 << 19) / 6);
    let line = format!("{{\"prompt\": \"{prompt}\", \"max_tokens\": 2}}\n");
    std::fs::write(&path, line.repeat(40)).unwrap();
    let (l, url) = listener();
    let (o, text) = dataset_bench("400000", &url, &path, &["--num-prompts", "40"]);
    assert_eq!(o.status.code(), Some(2), "{text}");
    let fits = text
        .split("--num-prompts ")
        .find_map(|t| t.strip_suffix(" or fewer fit (nothing was sent)\n"))
        .unwrap_or_else(|| panic!("no number that fits: {text}"));
    assert!(
        text.contains(&format!(
            "{}:{}: the prompts read up to here need more than the",
            path.display(),
            fits.parse::<usize>().unwrap() + 1
        )),
        "{text}"
    );
    assert_eq!(fits, "30", "{text}");
    assert_nothing_connected(&l);
    let sim = start_sim(&["--mode", "instant"]);
    let url = format!("http://127.0.0.1:{}", sim.1);
    let (o, text) = dataset_bench("400000", &url, &path, &["--num-prompts", fits]);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(!text.contains("memory allocation"), "{text}");
}

/// `replay` with `source` (`--traces PATH` or `--synthetic SHAPE`) and `more` flags against a
/// port nothing listens on, under `ulimit -v KIB`, 2 workers: a run that gets past its
/// preparation ends "server unreachable" (exit 3).
fn replay_under(kib: &str, source: &[&str], more: &[&str]) -> (Output, String) {
    let v = format!("-v {kib}");
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let url = format!("http://127.0.0.1:{port}");
    let mut args = vec!["replay"];
    args.extend_from_slice(source);
    args.extend_from_slice(&[
        "--model",
        "m",
        "--base-url",
        &url,
        "--benchmark-duration",
        "60",
        "--unsafe-override",
        "--progress",
        "off",
        "--power",
        "off",
        "--no-server-metrics",
    ]);
    args.extend_from_slice(more);
    under_ulimit(&[&v], &args)
}

/// Trial of issue 39 §2, finding 2: `replay --synthetic 062126-256k --concurrency 64` under
/// `ulimit -v 400000` aborted (exit 134; its peak was ~1.2 GB and the check counted 249 MiB,
/// not the corpus). The corpus is generated a session at a time within the memory budget:
/// refused at the session that passes it (exit 2, nothing sent), naming how many fit; that many
/// get past the preparation (exit 3 against a closed port, never 134 or 101).
#[test]
fn a_synthetic_corpus_beyond_ulimit_v_is_refused_naming_what_fits() {
    let (o, text) = replay_under(
        "400000",
        &["--synthetic", "062126-256k", "--concurrency", "64"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{text}");
    let fits = text
        .split("--num-dataset-entries ")
        .find_map(|t| t.strip_suffix(" or fewer fit (nothing was sent)\n"))
        .unwrap_or_else(|| panic!("no number that fits: {text}"));
    assert!(
        text.contains(
            "error: --synthetic 062126-256k: the traces read up to here need more than the 13 \
             MiB of memory left for traces"
        ),
        "{text}"
    );
    assert_eq!(fits, "15", "{text}");
    let (o, text) = replay_under(
        "400000",
        &["--synthetic", "062126-256k", "--concurrency", "64"],
        &["--num-dataset-entries", fits],
    );
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(text.contains("server unreachable"), "{text}");
}

/// Trial of issue 39 §2, finding 1: a trace file read whole aborted under `ulimit -v` (3 GB
/// under 2000000: exit 134). It is read a batch of lines at a time: two traces followed by a
/// 1.5 GiB sparse tail (one line of NUL bytes) under `ulimit -v 1000000` are refused at the
/// tail's line once it is longer than the memory left (exit 2, FILE:LINE), and with
/// `--num-dataset-entries 2` the tail is never read (exit 3 against a closed port).
#[test]
fn a_large_trace_file_under_ulimit_v_is_read_a_batch_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("traces.jsonl");
    let line = |id: &str| {
        format!(
            "{{\"id\": \"{id}\", \"requests\": [{{\"t\": 0, \"in\": 64, \"out\": 8, \"hash_ids\": \
             [0]}}]}}\n"
        )
    };
    std::fs::write(&path, line("a") + &line("b")).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(1536 << 20)
        .unwrap();
    let p = path.to_str().unwrap();
    let (o, text) = replay_under("1000000", &["--traces", p], &[]);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains(&format!(
            "{p}:3: the line is longer than the 632356864-byte limit of a line of this input"
        )),
        "{text}"
    );
    let (o, text) = replay_under("1000000", &["--traces", p], &["--num-dataset-entries", "2"]);
    assert_eq!(o.status.code(), Some(3), "{text}");
    assert!(
        text.contains("2 traces (2 requests) from 1 file(s)"),
        "{text}"
    );
}

/// Issue 39 §2 (the same kind as finding 2): `agentx-traces --shape 062126-256k` under
/// `ulimit -v 600000` aborted (exit 134) building the corpus. It is generated a session at a
/// time within the memory budget: under `ulimit -v 400000` it is refused naming how many
/// sessions fit (exit 2, nothing written); a smaller corpus is written (exit 0).
#[test]
fn a_synthetic_corpus_written_beyond_ulimit_v_is_refused_naming_what_fits() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.jsonl");
    let o = out.to_str().unwrap();
    let (r, text) = under_ulimit(
        &["-v 400000"],
        &["agentx-traces", "--shape", "062126-256k", "-o", o],
    );
    assert_eq!(r.status.code(), Some(2), "{text}");
    assert!(
        text.contains(
            "error: --shape 062126-256k: the sessions generated up to here need more than the \
             145 MiB of memory this process has left (`ulimit -v` or the memory available, \
             less its own); --traces 142 or fewer fit"
        ),
        "{text}"
    );
    assert!(!out.exists());
    let (r, text) = under_ulimit(
        &["-v 400000"],
        &[
            "agentx-traces",
            "--shape",
            "062126-256k",
            "--traces",
            "10",
            "-o",
            o,
        ],
    );
    assert_eq!(r.status.code(), Some(0), "{text}");
    assert!(text.contains("wrote "), "{text}");
}

/// A fresh tester's finding 1: `(ulimit -n 100; inferbench sweep …)` with a conc-256 row ran
/// it and failed 2,897 requests `client_resource`. Every row's largest point is checked before
/// the first engine launch or request: exit 2 naming the row, `ulimit -n` and what fits;
/// nothing connects to the server and no point directory is written.
#[test]
fn a_sweep_row_beyond_ulimit_n_is_refused_before_any_request() {
    let dir = std::env::temp_dir().join(format!("ib_sweep_ulimit_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let matrix = dir.join("m.json");
    let row = |conc: serde_json::Value| {
        serde_json::json!({
            "image": "x", "model": "m/small", "model-prefix": "small", "precision": "fp8",
            "framework": "sim", "runner": "h100", "isl": 64, "osl": 8, "tp": 1, "pp": 1,
            "dcp-size": 1, "pcp-size": 1, "conc": conc, "max-model-len": 2048, "ep": 1,
            "dp-attn": false, "spec-decoding": "none", "exp-name": "small_64_8", "disagg": false
        })
    };
    std::fs::write(
        &matrix,
        serde_json::json!([row(serde_json::json!(4)), row(serde_json::json!([8, 256]))])
            .to_string(),
    )
    .unwrap();
    let (l, url) = listener();
    let out = dir.join("results");
    let (o, text) = under_ulimit(
        &["-n 100"],
        &[
            "sweep",
            "--matrix",
            matrix.to_str().unwrap(),
            "--base-url",
            &url,
            "--runner-name",
            "h100_0",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains(
            "error: 1 row of the matrix cannot run in this process (no engine was started):\n  \
             row 1: conc 256 is more than this client can hold: 256 streams need 336 open files \
             (256 connections, 16 spare, 64 for files) and this process may open 100 \
             (`ulimit -n`, hard limit 100): raise it with `ulimit -n 336`; conc 20 or less fits \
             (nothing was sent)"
        ),
        "{text}"
    );
    assert!(!text.contains("row 0:"), "{text}");
    assert_nothing_connected(&l);
    // No point ran: nothing but what the writability check leaves.
    let points = std::fs::read_dir(&out)
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().is_dir())
                .count()
        })
        .unwrap_or(0);
    assert_eq!(points, 0, "a point directory was written");
    let _ = std::fs::remove_dir_all(&dir);
}
