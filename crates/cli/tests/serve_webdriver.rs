//! The Inference page driven like a user, through WebDriver: `inferbench serve` (the binary)
//! over a seeded database, Debian's `chromedriver` (package `chromium-driver`, set up by
//! scripts/setup/chromium.sh) on a private port, headless Chromium with a temporary profile.
//! Checks: the chart draws the expected points, groups and frontier points; choosing a
//! framework changes the URL and the chart; reloading that URL gives the same view; the back
//! button restores the previous one; the page's "Export CSV" link downloads exactly what
//! `inferbench report --format csv` prints for the same selection.
//!
//! Skipped with a message where chromedriver is absent; failing instead under
//! INFERBENCH_REQUIRE_SERVICES=1. The ignored test `inference_page_with_10k_points` is the
//! page benchmark of docs/performance.md (it prints timings and asserts only correctness).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_inferbench")
}

fn chromedriver() -> Option<PathBuf> {
    let found = std::env::var_os("INFERBENCH_TEST_CHROMEDRIVER")
        .map(PathBuf::from)
        .or_else(|| {
            let p = PathBuf::from("/usr/bin/chromedriver");
            p.is_file().then_some(p)
        });
    inferbench_testutil::available(
        found.is_some(),
        "chromedriver",
        "scripts/setup/chromium.sh installs chromium-driver",
    )
    .then_some(found)
    .flatten()
}

/// A child process in a process group of its own, killed with its whole group when dropped
/// (chromedriver's browsers included, also when a test fails).
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child's process group; no memory is touched.
        unsafe {
            libc::kill(-(self.0.id() as i32), libc::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

fn spawn_group(cmd: &mut Command) -> Group {
    use std::os::unix::process::CommandExt;
    Group(cmd.process_group(0).spawn().unwrap())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A database of synthetic runs (`inferbench_store::synthetic::run`, 1,000 points each):
/// `model00` on 1024/1024 `runs` times, and once on 8192/1024.
fn seeded(dir: &Path, runs: usize) -> String {
    let db = dir.join("w.db").display().to_string();
    let mut s = inferbench_store::Store::open(&db).unwrap();
    s.migrate().unwrap();
    for r in 0..runs {
        s.ingest_run(&inferbench_store::synthetic::run(r, "model00", 1024, 1024))
            .unwrap();
    }
    s.ingest_run(&inferbench_store::synthetic::run(
        runs, "model00", 8192, 1024,
    ))
    .unwrap();
    db
}

/// `inferbench serve --db DB --port 0` in a process group of its own; returns it, its base URL
/// and the thread draining its stderr.
fn serve(db: &str) -> (Group, String, std::thread::JoinHandle<String>) {
    use std::os::unix::process::CommandExt;
    let s = common::start_serve(
        Command::new(bin())
            .args(["serve", "--db", db, "--port", "0"])
            .process_group(0),
    );
    (Group(s.child), format!("http://{}", s.addr), s.rest)
}

/// A WebDriver session on a private chromedriver, headless and offline.
async fn browser(driver: &Path, profile: &Path) -> (Group, Client) {
    let port = free_port();
    let g = spawn_group(
        Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let chromium = std::env::var("INFERBENCH_TEST_CHROMIUM").unwrap_or("/usr/bin/chromium".into());
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update",
                     "--no-first-run", "--window-size=1300,1000",
                     format!("--user-data-dir={}", profile.display())],
        }),
    );
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let conn = hyper_util::client::legacy::connect::HttpConnector::new();
        match ClientBuilder::new(conn)
            .capabilities(caps.clone())
            .connect(&url)
            .await
        {
            Ok(c) => return (g, c),
            Err(e) if Instant::now() > deadline => panic!("chromedriver at {url}: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The chart's data attributes once it has been drawn after `after` (its `data-drawn-ms`, the
/// page's `performance.now()` at drawing; `None`: any drawing).
async fn drawn(c: &Client, after: Option<&str>) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v = c
            .execute(
                "const d = document.getElementById('chart').dataset; \
                 return {points: d.points, groups: d.groups, frontier: d.frontierPoints, \
                         drawn: d.drawnMs, status: document.getElementById('status').textContent};",
                vec![],
            )
            .await
            .unwrap();
        let ms = v["drawn"].as_str();
        if ms.is_some() && ms != after && !v["status"].as_str().unwrap_or("").starts_with("loading")
        {
            return v;
        }
        assert!(Instant::now() < deadline, "chart never drawn: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `inferbench report --db DB --format csv -f …`.
fn report_csv(db: &str, filters: &[&str], frontier: bool) -> String {
    let mut cmd = Command::new(bin());
    cmd.args(["report", "--db", db, "--format", "csv"]);
    if frontier {
        cmd.arg("--frontier");
    }
    // Filters, or a flag and its value (`--columns`, `LIST`) as they come.
    let mut args = filters.iter();
    while let Some(f) = args.next() {
        match f.strip_prefix("--") {
            Some(_) => cmd.args([*f, args.next().copied().unwrap_or_default()]),
            None => cmd.args(["-f", f]),
        };
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn inference_page_filter_url_reload_back_and_csv_export() {
    let Some(driver) = chromedriver() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = seeded(dir.path(), 1);
    let (_server, base, _drain) = serve(&db);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (_driver, c) = browser(&driver, &dir.path().join("profile")).await;
        let start = format!("{base}/inference?model=model00&sequence=1024%2F1024");
        c.goto(&start).await.unwrap();
        let v = drawn(&c, None).await;
        // One run: 1,000 points in 40 groups (8 hardware × 5 frameworks); the frontier points
        // are those `report --frontier` lists.
        let all = ["model=model00", "isl=1024", "osl=1024"];
        let frontier = report_csv(&db, &all, true).lines().count() - 1;
        assert_eq!(v["points"], "1000", "{v}");
        assert_eq!(v["groups"], "40", "{v}");
        assert_eq!(v["frontier"], frontier.to_string(), "{v}");

        // Choose a framework as a user does: the URL and the chart follow.
        c.find(Locator::Css("#framework option[value='vllm']"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let w = drawn(&c, v["drawn"].as_str()).await;
        let url = c.current_url().await.unwrap();
        assert!(
            url.query().unwrap_or("").contains("framework=vllm"),
            "{url}"
        );
        let vllm = ["model=model00", "isl=1024", "osl=1024", "framework=vllm"];
        let frontier_vllm = report_csv(&db, &vllm, true).lines().count() - 1;
        assert_eq!(
            (w["points"].as_str(), w["groups"].as_str()),
            (Some("200"), Some("8")),
            "{w}"
        );
        assert_eq!(w["frontier"], frontier_vllm.to_string(), "{w}");

        // "Export CSV" downloads what `report --format csv` prints for the same selection.
        let href = c
            .find(Locator::Id("csv"))
            .await
            .unwrap()
            .prop("href")
            .await
            .unwrap()
            .unwrap();
        let csv = c
            .execute_async(
                "const done = arguments[arguments.length - 1]; \
                 fetch(arguments[0]).then(r => r.text()).then(done, e => done('error: ' + e));",
                vec![json!(href)],
            )
            .await
            .unwrap();
        // Its columns are report's defaults, then every other stored and derived metric
        // (issue 42): `report --columns` of the same header prints it alike.
        let csv = csv.as_str().unwrap();
        let header = csv.lines().next().unwrap();
        let mut with_columns = vllm.to_vec();
        with_columns.push("--columns");
        with_columns.push(header);
        assert_eq!(csv, report_csv(&db, &with_columns, false));

        // Reloading the URL gives the same view, controls included.
        c.refresh().await.unwrap();
        let r = drawn(&c, None).await;
        assert_eq!(
            (&r["points"], &r["groups"], &r["frontier"]),
            (&w["points"], &w["groups"], &w["frontier"])
        );
        let fw = c
            .execute("return document.getElementById('framework').value", vec![])
            .await
            .unwrap();
        assert_eq!(fw, "vllm");

        // The back button steps back to the view before the choice.
        c.back().await.unwrap();
        let b = drawn(&c, None).await;
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut b = b;
        while b["points"] != "1000" && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
            b = drawn(&c, None).await;
        }
        assert_eq!(
            (&b["points"], &b["groups"]),
            (&v["points"], &v["groups"]),
            "{b}"
        );
        let url = c.current_url().await.unwrap();
        assert!(!url.query().unwrap_or("").contains("framework="), "{url}");
        c.close().await.unwrap();
    });
}

/// The page benchmark (docs/performance.md, "Dashboard page"): one chart of 10,000 points in
/// 40 groups; prints when the chart was drawn after navigation start (`performance.now()`),
/// over 5 loads. Run by hand:
/// `cargo test -p inferbench --release --test serve_webdriver -- --ignored --nocapture`.
#[test]
#[ignore]
fn inference_page_with_10k_points() {
    let Some(driver) = chromedriver() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = seeded(dir.path(), 10);
    let (_server, base, _drain) = serve(&db);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (_driver, c) = browser(&driver, &dir.path().join("profile")).await;
        let url = format!("{base}/inference?model=model00&sequence=1024%2F1024");
        let mut ms = Vec::new();
        for _ in 0..5 {
            c.goto(&url).await.unwrap();
            let v = drawn(&c, None).await;
            assert_eq!(v["points"], "10000", "{v}");
            ms.push(v["drawn"].as_str().unwrap().parse::<f64>().unwrap());
        }
        ms.sort_by(f64::total_cmp);
        println!(
            "10,000 points, 40 groups: first chart drawn {:.0} / {:.0} / {:.0} ms after navigation start (min / median / max of 5 loads)",
            ms[0], ms[2], ms[4]
        );
        c.close().await.unwrap();
    });
}
