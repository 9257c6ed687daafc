//! The Inference page in a real browser: headless Chromium (Debian `chromium`, set up by
//! scripts/setup/chromium.sh) loads the page from an in-process server over a seeded database
//! and dumps the DOM after the page's script ran. Checks: the chart drew the expected points and
//! frontier points, the URL state selects the view, a bad URL value falls back, and a model
//! named like an XSS probe renders as text. Skipped with a message where Chromium is absent;
//! failing instead under INFERBENCH_REQUIRE_SERVICES=1.

mod common;

use std::path::Path;

use common::{copy_tree_replacing, utf8_percent};
use inferbench_store::{IngestOptions, Store};
use inferbench_testutil::browser::{attr, text_of, Browser};

const PROBE: &str = "<img src=x onerror=alert(1)>";

/// A test's browser (its profile in the test's scratch folder) and that folder; `None` after
/// the skip where Chromium is absent.
fn browser() -> Option<(Browser, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    Some((Browser::find(dir.path().join("profile"))?, dir))
}

/// Copies the fixture tree `from` to `to`, with the model and sweep id of its JSON files
/// replaced by the XSS probe and a sweep of its own.
fn copy_as_probe(from: &Path, to: &Path) {
    let prefix = format!("\"infmax_model_prefix\": \"{PROBE}\"");
    copy_tree_replacing(
        from,
        to,
        &[
            ("\"infmax_model_prefix\": \"dsr1\"", prefix.as_str()),
            ("deepseek-ai/DeepSeek-R1-0528", PROBE),
            ("sweep-2026-03-01-h200", "probe-sweep"),
        ],
    );
}

/// A new database `db` with each of `sources` ingested; returns its location and the ingest
/// reports, in order.
fn ingested(db: &Path, sources: &[&Path]) -> (String, Vec<inferbench_store::IngestReport>) {
    let db = db.display().to_string();
    let mut s = Store::open(&db).unwrap();
    s.migrate().unwrap();
    let reports = (sources.iter())
        .map(|d| s.ingest_path(d, &IngestOptions::default()).unwrap())
        .collect();
    (db, reports)
}

/// The sweep-h200 fixture twice: as it is, and a copy whose model is the XSS probe.
fn seeded(dir: &Path) -> String {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures/sweep-h200");
    let probe_dir = dir.join("probe");
    copy_as_probe(&fixtures, &probe_dir);
    let (db, reports) = ingested(&dir.join("b.db"), &[&fixtures, &probe_dir]);
    for r in reports {
        assert_eq!(r.points, 2, "{r:?}");
    }
    db
}

/// Every store fixture ingested into `dir/all.db` and served: (runtime, base URL, database).
fn all_fixtures_served(dir: &Path) -> (tokio::runtime::Runtime, String, String) {
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures");
    let (db, _) = ingested(&dir.join("all.db"), &[&fx]);
    let (rt, base) = serve(&db);
    (rt, base, db)
}

/// The dashboard over `db` (read-only) on a free local port, in its own runtime (kept alive by
/// the returned handle); returns the handle and the base URL.
fn serve(db: &str) -> (tokio::runtime::Runtime, String) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = inferbench_web::router(inferbench_web::AppState::new(
        Store::open_read_only(db).unwrap(),
    ));
    rt.spawn(async move { axum::serve(listener, app).await });
    (rt, base)
}

#[test]
fn inference_page_draws_from_the_url_and_escapes_strings() {
    let Some((b, dir)) = browser() else { return };
    let db = seeded(dir.path());
    let (_rt, base) = serve(&db);

    // The URL selects the view: model, scenario, hardware; the chart holds both points and
    // the frontier ones; the status line and the table agree.
    let dom = b.dom(&format!(
        "{base}/inference?model=dsr1&sequence=1024/1024&hardware=h200"
    ));
    assert_eq!(
        attr(&dom, "chart", "data-points").as_deref(),
        Some("2"),
        "{dom}"
    );
    assert_eq!(attr(&dom, "chart", "data-groups").as_deref(), Some("1"));
    let frontier = attr(&dom, "chart", "data-frontier-points").unwrap();
    assert_eq!(
        text_of(&dom, "status"),
        format!("2 points in 1 group, {frontier} on a frontier")
    );
    assert!(dom.contains("<canvas"), "uPlot drew a canvas");
    assert_eq!(
        dom.matches("<tr><td>dsr1 1024/1024 h200_sglang_fp8</td>")
            .count(),
        2
    );
    // `hw=` selects as `hardware=` does (trial 21: it was ignored).
    let hw = b.dom(&format!(
        "{base}/inference?model=dsr1&sequence=1024/1024&hw=h200"
    ));
    assert_eq!(
        attr(&hw, "chart", "data-points").as_deref(),
        Some("2"),
        "{hw}"
    );
    // The CSV link carries the same selection to the API.
    assert_eq!(
        attr(&dom, "csv", "href").as_deref(),
        Some("/api/v1/points.csv?model=dsr1&amp;isl=1024&amp;osl=1024&amp;hardware=h200&amp;y=tput_per_gpu&amp;clip=true")
    );
    // Issue 42: the PNG and SVG exports are the server's chart of the same selection.
    assert_eq!(
        attr(&dom, "png", "href").as_deref(),
        Some("/api/v1/chart.png?model=dsr1&amp;isl=1024&amp;osl=1024&amp;hardware=h200&amp;y=tput_per_gpu&amp;clip=true")
    );
    assert_eq!(
        attr(&dom, "svg", "href").as_deref(),
        Some("/api/v1/chart.svg?model=dsr1&amp;isl=1024&amp;osl=1024&amp;hardware=h200&amp;y=tput_per_gpu&amp;clip=true")
    );
    // `isl=`/`osl=` as the API takes them pick the same sequence (trial 26: "not applied").
    let io = b.dom(&format!(
        "{base}/inference?model=dsr1&isl=1024&osl=1024&hardware=h200"
    ));
    assert_eq!(attr(&io, "csv", "href"), attr(&dom, "csv", "href"), "{io}");
    assert!(!text_of(&io, "status").contains("not applied"), "{io}");

    // The run page of the conc-16 point: provenance, the batch's two points, and the latency
    // histograms drawn from its stored records.
    let run16 = {
        let mut s = Store::open_read_only(&db).unwrap();
        let mut f = inferbench_store::Filter::default();
        f.add("conc=16").unwrap();
        f.add("model=dsr1").unwrap();
        s.points(&f, &Default::default()).unwrap()[0].run_id
    };
    let dom = b.dom(&format!("{base}/run?id={run16}"));
    assert!(
        text_of(&dom, "status").starts_with("1 point in this run, 2 in its batch, "),
        "{dom}"
    );
    assert!(
        dom.contains("TTFT (ms): p50 100.0, p90 100.0, p99 100.0, n 4"),
        "{dom}"
    );
    assert!(dom.contains("E2EL (ms): p50 2500.0"), "{dom}");
    // Each histogram's x tick labels read apart (trial 22: "7.049  7.049  7.049").
    let ticks: Vec<&str> = dom
        .split("data-x-ticks=\"")
        .skip(1)
        .filter_map(|t| t.split('"').next())
        .collect();
    assert_eq!(ticks.len(), 4, "{dom}");
    for t in ticks {
        let labels: Vec<&str> = t.split(' ').collect();
        let distinct: std::collections::BTreeSet<&str> = labels.iter().copied().collect();
        assert!(labels.len() > 1 && distinct.len() == labels.len(), "{t}");
    }
    assert!(dom.contains("sglang 0.5.5"), "provenance: {dom}");
    // The points table's state is the batch's own frontier, and says so (trial 25: "frontier"
    // there beside no `*` in `report`, which ranks every batch of the group).
    assert!(
        dom.contains("<th>state (within this batch)</th>")
            && dom.contains("<td>on this batch's frontier</td>"),
        "{dom}"
    );
    // The run's evals section says it has none.
    assert_eq!(
        text_of(&dom, "evals-note"),
        "no accuracy eval stored with this run"
    );
    // A bad id: the error, and the empty sections hidden under it.
    let dom = b.dom(&format!("{base}/run?id=abc"));
    assert!(text_of(&dom, "status").starts_with("error: "), "{dom}");
    assert!(dom.contains("<table id=\"prov\" hidden=\"\">"), "{dom}");
    // No id at all says so (trial 23: "no such page or API route"), with no empty section
    // under the error either (trial 24: a dangling "Latency distributions of").
    let dom = b.dom(&format!("{base}/run"));
    assert!(
        text_of(&dom, "status").starts_with("error: no run named: "),
        "{dom}"
    );
    for section in [
        "<h3 hidden=\"\">Provenance</h3>",
        "<h3 hidden=\"\">Points of the batch",
        "<h3 hidden=\"\">Latency distributions of",
        "<h3 hidden=\"\">Files kept with the run</h3>",
        "<pre id=\"job\" hidden=\"\">",
    ] {
        assert!(dom.contains(section), "{section}: {dom}");
    }
    assert_eq!(dom.matches("<h3>").count(), 0, "{dom}");

    // The probe model is listed and drawn as text: no element is made from it.
    let probe_model = {
        let mut s = Store::open_read_only(&db).unwrap();
        let dims = s.dimension_values().unwrap();
        dims["model"]
            .iter()
            .find(|m| m.contains("onerror"))
            .cloned()
            .unwrap_or_else(|| panic!("{dims:?}"))
    };
    let q: String = probe_model.bytes().map(|b| format!("%{b:02X}")).collect();
    let dom = b.dom(&format!("{base}/inference?model={q}&y=bogus"));
    assert!(probe_model.contains("<img"), "{probe_model}");
    let escaped = probe_model.replace('<', "&lt;").replace('>', "&gt;");
    assert!(dom.contains(&escaped), "{dom}");
    assert!(!dom.contains("<img"), "the probe became an element: {dom}");
    assert_eq!(attr(&dom, "chart", "data-points").as_deref(), Some("2"));
    // An unknown y falls back to the default (tok/s/GPU), as InferenceX's selectors do.
    assert!(
        attr(&dom, "csv", "href")
            .unwrap()
            .ends_with("y=tput_per_gpu&amp;clip=true"),
        "{dom}"
    );
    // ... and the page says what it did not apply (trial 7: presets for data not ingested).
    assert!(
        text_of(&dom, "status")
            .ends_with(" — not in this database, so not applied: y=bogus (no such metric)"),
        "{dom}"
    );
}

/// Trial 23: a database holding only evals broke the Inference page ("Cannot read properties
/// of undefined (reading 'facets')": the chart library given no series). It says there is no
/// point to draw; the Evals page lists the evals.
#[test]
fn a_database_of_evals_alone_opens_every_page() {
    let Some((b, dir)) = browser() else { return };
    let evals = dir.path().join("evals");
    std::fs::create_dir_all(&evals).unwrap();
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures/imports");
    std::fs::copy(
        fx.join("agg_eval_all.json"),
        evals.join("agg_eval_all.json"),
    )
    .unwrap();
    let (db, reports) = ingested(&dir.path().join("e.db"), &[&evals]);
    assert_eq!(reports[0].points, 0, "{:?}", reports[0]);
    let (_rt, base) = serve(&db);
    let dom = b.dom(&format!("{base}/inference"));
    assert!(!text_of(&dom, "status").starts_with("error"), "{dom}");
    assert_eq!(text_of(&dom, "chart"), "no point to draw", "{dom}");
    let dom = b.dom(&format!("{base}/compare?a=hw%3Dh100&b=hw%3Dh200"));
    assert!(!text_of(&dom, "status").starts_with("error"), "{dom}");
    // History, TCO, Compare and Models say what the database holds instead (trial 24: History
    // asked for an x inside a range there is none of; Models said nothing was measured).
    let evals = Store::open_read_only(&db).unwrap().evals().unwrap().len();
    assert!(evals > 1, "{evals}");
    let holds = format!(
        "This database holds {evals} eval results and no throughput point (see the Evals page)."
    );
    for page in [
        "history?at=100",
        "tco?at=100",
        "compare?a=hw%3Dh100&b=hw%3Dh200",
        "models",
    ] {
        let dom = b.dom(&format!("{base}/{page}"));
        assert_eq!(text_of(&dom, "status"), holds, "{page}: {dom}");
    }
    // An imported run kept no job.json: its page says so instead of `{}` (trial 23 #14).
    let dom = b.dom(&format!("{base}/run?id=1"));
    assert!(!text_of(&dom, "status").starts_with("error"), "{dom}");
    assert!(
        text_of(&dom, "job").starts_with("none: this run was not started from a matrix job")
            // An eval run has no points, so no group above to point at (trial 26).
            && text_of(&dom, "job").ends_with(" when it was ingested"),
        "{dom}"
    );
}

/// The store's sweep-h200 fixture and a copy of it with `swaps` made (in `dir/copy`), ingested
/// into `dir/t.db` and served: (runtime, base URL).
fn sweep_and_copy_served(dir: &Path, swaps: &[(&str, &str)]) -> (tokio::runtime::Runtime, String) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures/sweep-h200");
    let copy = dir.join("copy");
    copy_tree_replacing(&fixtures, &copy, swaps);
    let (db, _) = ingested(&dir.join("t.db"), &[&fixtures, &copy]);
    serve(&db)
}

/// Trial 20: two groups with (nearly) the same points printed their concurrency labels over
/// each other. Each label is placed clear of the others: none of the drawn label boxes overlap.
#[test]
fn coinciding_points_of_two_groups_keep_their_labels_apart() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base) = sweep_and_copy_served(
        dir.path(),
        &[
            ("h200-nv_0", "b200-nv_0"),
            ("sweep-2026-03-01-h200", "sweep-2026-03-01-b200"),
        ],
    );
    let dom = b.dom(&format!("{base}/inference?model=dsr1&sequence=1024/1024"));
    assert_eq!(attr(&dom, "chart", "data-groups").as_deref(), Some("2"));
    assert_eq!(attr(&dom, "chart", "data-points").as_deref(), Some("4"));
    assert_eq!(
        attr(&dom, "chart", "data-label-overlaps").as_deref(),
        Some("0"),
        "{dom}"
    );
    // A group keeps its colour from view to view (trial 22: b200 was the second colour beside
    // h200 and the first alone), and two groups of one view differ.
    let swatch = |dom: &str, hw: &str| -> String {
        let at = dom.find(&format!("{hw}_sglang_fp8</li>")).unwrap();
        let style = dom[..at].rfind("background-color: ").unwrap();
        dom[style..at].split(';').next().unwrap().to_string()
    };
    for hw in ["b200", "h200"] {
        let alone = b.dom(&format!(
            "{base}/inference?model=dsr1&sequence=1024/1024&hardware={hw}"
        ));
        assert_eq!(attr(&alone, "chart", "data-groups").as_deref(), Some("1"));
        assert_eq!(swatch(&alone, hw), swatch(&dom, hw), "{alone}");
    }
    // Two hardware in one URL value, as the API and `report -f` write them (trial 25: taken
    // as one name "not in this database"): both selected, nothing said missing.
    for list in ["h200%7Cb200", "h200,b200"] {
        let both = b.dom(&format!(
            "{base}/inference?model=dsr1&sequence=1024/1024&hardware={list}"
        ));
        assert_eq!(attr(&both, "chart", "data-groups").as_deref(), Some("2"));
        assert!(!text_of(&both, "status").contains("not applied"), "{both}");
        // Both selected: the CSV link carries them (with none selected it has no hardware).
        let csv = attr(&both, "csv", "href").unwrap();
        assert!(
            csv.contains("hardware=b200%7Ch200") || csv.contains("hardware=h200%7Cb200"),
            "{csv}"
        );
    }
    assert_ne!(swatch(&dom, "h200"), swatch(&dom, "b200"), "{dom}");
    assert_eq!(attr(&dom, "chart", "data-labels").as_deref(), Some("4"));
}

/// Trial 27: a repeat of a point on the same spot (same group and concurrency) printed its
/// concurrency twice; one label stands for both, as in `inferbench plot`.
#[test]
fn a_repeat_on_the_same_spot_has_one_label() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base) = sweep_and_copy_served(
        dir.path(),
        &[
            ("h200-nv_0", "h200-nv_1"),
            ("sweep-2026-03-01-h200", "sweep-2026-03-02-h200"),
        ],
    );
    let dom = b.dom(&format!("{base}/inference?model=dsr1&sequence=1024/1024"));
    assert_eq!(attr(&dom, "chart", "data-groups").as_deref(), Some("1"));
    assert_eq!(attr(&dom, "chart", "data-points").as_deref(), Some("4"));
    assert_eq!(
        attr(&dom, "chart", "data-labels").as_deref(),
        Some("2"),
        "{dom}"
    );
}

/// Trial 23 #14: the "Your quickstart" preset also drew `results/bench` points of the same
/// setup. `batch=` in the page's URL (the preset sets `quickstart`) goes to the API as `report -f
/// batch=` takes it, stays in the URL and is said in the status line.
#[test]
fn a_batch_in_the_url_keeps_the_chart_to_that_batch() {
    let Some((b, dir)) = browser() else { return };
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures/sweep-h200");
    let quick = dir.path().join("quick");
    copy_tree_replacing(
        &fixtures,
        &quick,
        &[
            ("sweep-2026-03-01-h200", "quickstart-20261204-120000-000"),
            // Another runner: other result bytes, so another run (the same bytes are one run).
            ("h200-nv_0", "h200-nv_1"),
        ],
    );
    let (db, _) = ingested(&dir.path().join("q.db"), &[&fixtures, &quick]);
    let (_rt, base) = serve(&db);
    let all = b.dom(&format!("{base}/inference?model=dsr1&sequence=1024/1024"));
    assert_eq!(
        attr(&all, "chart", "data-points").as_deref(),
        Some("4"),
        "{all}"
    );
    let dom = b.dom(&format!(
        "{base}/inference?model=dsr1&sequence=1024/1024&batch=quickstart"
    ));
    assert_eq!(
        attr(&dom, "chart", "data-points").as_deref(),
        Some("2"),
        "{dom}"
    );
    assert!(
        text_of(&dom, "status")
            .contains(" — only batch=quickstart (from the URL; remove it to see every batch)"),
        "{dom}"
    );
    assert!(
        attr(&dom, "csv", "href")
            .unwrap()
            .contains("batch=quickstart"),
        "{dom}"
    );
}

/// The Compare, History, Evals and Models pages over every store fixture: the URL selects the
/// comparison and the history, the chart and table show what `/api/v1/compare` and
/// `/api/v1/history` answer (the values `inferbench compare` and `report --history-at` print),
/// regressions marked; the eval bars and the support matrix link to runs and charts; a preset
/// of the Inference page applies its view.
#[test]
fn compare_history_evals_models_and_tco_pages() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base, db) = all_fixtures_served(dir.path());

    let dom = b.dom(&format!(
        "{base}/compare?model=dsr1&sequence=1024%2F1024&a=hw%3Db200&b=hw%3Dmi355x"
    ));
    assert_eq!(
        attr(&dom, "chart", "data-rows").as_deref(),
        Some("3"),
        "{dom}"
    );
    assert_eq!(
        text_of(&dom, "status"),
        "8 points in A, 8 points in B; 3 targets"
    );
    // One line per batch (two a side), the curves the table's means average, each named by
    // its batch as tables show it (trial 21: one pooled line a side disagreed with the table).
    assert_eq!(
        attr(&dom, "chart", "data-lines").as_deref(),
        Some("4"),
        "{dom}"
    );
    assert!(dom.contains("A: hw=b200 · fixtures/repeats"), "{dom}");
    // The sides' columns carry y's unit (trial 20).
    assert_eq!(
        text_of(&dom, "th-a"),
        "A: Throughput per GPU (tok/s/GPU)",
        "{dom}"
    );
    assert!(
        dom.contains(
            "<tr><td>80.0</td><td>1140</td><td>2</td><td>945.0</td><td>2</td><td>1.206</td>\
             <td>[0.490, 2.973]</td></tr>"
        ),
        "{dom}"
    );
    assert!(dom.contains("<canvas"), "uPlot drew a canvas");
    // Sides that name the model themselves are not narrowed by the page's model selector
    // (trial 18: `a=osl=128&b=osl=256` answered that side B pooled two workloads).
    let dom = b.dom(&format!(
        "{base}/compare?a=model%3Ddsr1%2Chw%3Db200&b=model%3Dllama70b"
    ));
    assert_eq!(
        text_of(&dom, "status"),
        "8 points in A, 1 point in B; 1 target",
        "{dom}"
    );
    // ... and the model selector says so instead of showing a model it does not apply (trial
    // 19); the chart's legend names the sides without live `--` values.
    assert_eq!(
        attr(&dom, "model", "disabled").as_deref(),
        Some(""),
        "{dom}"
    );
    assert!(
        dom.contains("<option value=\"\" data-sides=\"1\">(named by A and B)</option>"),
        "{dom}"
    );
    assert_eq!(attr(&dom, "sequence", "disabled"), None, "{dom}");
    assert!(!dom.contains(">--<"), "{dom}");
    // Before any side is named, the table's headers already carry the units (trial 21: bare
    // "A" and "B" until Compare was pressed).
    let dom = b.dom(&format!("{base}/compare"));
    assert_eq!(
        text_of(&dom, "th-b"),
        "B: Throughput per GPU (tok/s/GPU)",
        "{dom}"
    );
    // … the x column too, the default x named (trial 22: a bare "at").
    assert_eq!(
        text_of(&dom, "th-at"),
        "at Interactivity, median (tok/s/user)",
        "{dom}"
    );
    // A group with one batch gets a y scale with height, so its one point is drawn (trial 18:
    // only the axes).
    let dom = b.dom(&format!(
        "{base}/history?model=dsr1&sequence=1024%2F1024&hardware=h200&at=100"
    ));
    let y = |k: &str| -> f64 {
        let v = attr(&dom, "chart", k).unwrap_or_default();
        v.parse().unwrap_or_else(|_| panic!("{k}={v:?}"))
    };
    assert!(
        y("data-y-min") < 132.864 && 132.864 < y("data-y-max"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "chart", "data-dots").as_deref(),
        Some("1"),
        "{dom}"
    );
    // No group reaching the x: said, not an exception from the chart library (trial 18).
    let dom = b.dom(&format!(
        "{base}/history?model=dsr1&sequence=1024%2F1024&hardware=h200&at=20"
    ));
    assert_eq!(
        text_of(&dom, "status"),
        "no selected group's frontier reaches x = 20 (of 1 group selected): their frontiers \
         reach x = 52.6 to 105.3; pick an x inside that range",
        "{dom}"
    );

    let dom = b.dom(&format!(
        "{base}/history?model=dsr1&sequence=1024%2F1024&at=50"
    ));
    assert_eq!(
        attr(&dom, "chart", "data-groups").as_deref(),
        Some("2"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "chart", "data-regressions").as_deref(),
        Some("1")
    );
    assert_eq!(
        text_of(&dom, "status"),
        "2 groups reach x = 50 (of 3 selected); 1 group regressed in the latest batch"
    );
    assert!(
        dom.contains(
            "<tr class=\"regression\"><td>dsr1 1024/1024 b200_sglang_fp4</td><td>2026-02-27</td>\
             <td>fixtures/repeats</td><td>1620</td><td>1800</td><td>-10.0 %</td><td>REGRESSION</td></tr>"
        ),
        "{dom}"
    );
    // A preset applies its view (two hardware, the rental cost as y) and leaves it in the URL.
    let dom = b.dom(&format!("{base}/inference?preset=b200-vs-mi355x-cost"));
    assert_eq!(
        attr(&dom, "chart", "data-points").as_deref(),
        Some("16"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "csv", "href").as_deref(),
        Some("/api/v1/points.csv?model=dsr1&amp;isl=1024&amp;osl=1024&amp;hardware=b200%7Cmi355x&amp;y=usd_per_m_rental&amp;clip=true")
    );
    assert!(dom.contains("data-preset=\"quickstart\""), "{dom}");
    // "Latest run only": of b200's two batches (2026-02-20, 2026-02-27), the newer one.
    let dom = b.dom(&format!(
        "{base}/inference?model=dsr1&sequence=1024%2F1024&hardware=b200&latest=1"
    ));
    assert_eq!(
        attr(&dom, "chart", "data-points").as_deref(),
        Some("4"),
        "{dom}"
    );
    assert_eq!(dom.matches("<td>2026-02-27</td>").count(), 4, "{dom}");
    // Evals: one bar per configuration of the task, best first, linked to its run; Models:
    // the support matrix, each row linked to its chart.
    let dom = b.dom(&format!("{base}/evals?task=gsm8k"));
    assert_eq!(
        attr(&dom, "bars", "data-bars").as_deref(),
        Some("2"),
        "{dom}"
    );
    assert_eq!(text_of(&dom, "status"), "2 configurations on gsm8k");
    // Issue 42: each bar carries the model's pass mark (dsr1: 0.91) as a tick, and whether
    // the score reaches it.
    assert!(
        dom.contains("<div class=\"bar-track\" data-threshold=\"0.91\" data-pass=\"true\">"),
        "{dom}"
    );
    assert_eq!(dom.matches("<div class=\"threshold\"").count(), 2, "{dom}");
    // Without a model chosen each bar names its model (trial 19); with one, the model is the
    // page's.
    assert!(
        dom.contains("\"><td>dsr1 on b200 (sglang) fp8 TP8 C64</td><td>0.952</td>"),
        "{dom}"
    );
    let dom = b.dom(&format!("{base}/evals?task=gsm8k&model=dsr1"));
    assert!(
        dom.contains("\"><td>b200 (sglang) fp8 TP8 C64</td><td>0.952</td>"),
        "{dom}"
    );
    // An eval's run page shows its evals, not empty point sections (trial 20).
    let eval_run = Store::open_read_only(&db).unwrap().evals().unwrap()[0].run_id;
    let dom = b.dom(&format!("{base}/run?id={eval_run}"));
    assert!(
        dom.contains("<h3 hidden=\"\">Points of the batch")
            && dom.contains("<h3 hidden=\"\">Power</h3>")
            && dom.contains("<h3>Accuracy evals</h3>"),
        "{dom}"
    );
    let dom = b.dom(&format!("{base}/models"));
    assert_eq!(
        attr(&dom, "matrix", "data-rows").as_deref(),
        Some("6"),
        "{dom}"
    );
    assert!(
        dom.contains(
            "<a href=\"/inference?model=dsr1&amp;hardware=b200&amp;framework=sglang&amp;precision=fp4\">dsr1</a>"
        ),
        "{dom}"
    );
    // TCO: every group at one x, best first.
    let dom = b.dom(&format!("{base}/tco?model=dsr1&sequence=1024%2F1024&at=60"));
    assert_eq!(
        attr(&dom, "bars", "data-bars").as_deref(),
        Some("3"),
        "{dom}"
    );
    assert!(
        dom.contains("<td>dsr1 1024/1024 b200_sglang_fp4</td><td>1520</td>"),
        "{dom}"
    );
    // The direction belongs to y and is said with it (trial 26: "= 60 (higher is better)"
    // after x read as the interactivity's).
    assert!(
        text_of(&dom, "status").starts_with(
            "3 groups at Interactivity, median (tok/s/user) = 60; Throughput per GPU (tok/s/GPU): \
             higher is better"
        ),
        "{}",
        text_of(&dom, "status")
    );
    // h200's frontier does not reach x = 50: said in the singular (trial 22: "1 group do").
    let dom = b.dom(&format!("{base}/tco?model=dsr1&sequence=1024%2F1024&at=50"));
    assert!(
        text_of(&dom, "status").ends_with("; 1 group does not reach it"),
        "{dom}"
    );
    // A value the database lacks falls back to a selector's first option, as on the Inference
    // page, and the status line says so (trial 23: History and TCO said nothing).
    for page in ["history", "tco"] {
        let dom = b.dom(&format!(
            "{base}/{page}?model=dsr9&sequence=1024%2F1024&at=60"
        ));
        assert!(
            text_of(&dom, "status")
                .ends_with(" — not in this database, so not applied: model=dsr9"),
            "{page}: {dom}"
        );
    }
    // Without a target x each page opens at the API's default (issue 39): 35 tok/s/user lies
    // outside the valid points' range (40 … 120), so its middle, with a slider over the range.
    for page in ["history", "tco"] {
        let dom = b.dom(&format!("{base}/{page}?model=dsr1&sequence=1024%2F1024"));
        let status = text_of(&dom, "status");
        assert!(status.contains(" = 80"), "{page}: {status}");
        assert!(
            dom.contains(r#"id="at-slider""#) && dom.contains(r#"min="40" max="120""#),
            "{page}: {dom}"
        );
    }
}

/// Trial 18: two batches of one day stacked on one vertical line at midnight (the API dated a
/// batch by its day). The History page places each at its run's start time (trial 19).
#[test]
fn history_spreads_batches_of_one_day() {
    let Some((b, dir)) = browser() else { return };
    let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../store/tests/fixtures/sweep-h200");
    // The same sweep again six hours later, under its own sweep id: a second batch of the day.
    let again = dir.path().join("again");
    let swaps = [
        ("\"20260301-10", "\"20260301-16"),
        ("sweep-2026-03-01-h200", "sweep-2026-03-01-h200-again"),
        // Its runs started 8 h 20 min later (10:10 → 18:30 UTC).
        ("_time_unix\": 177235", "_time_unix\": 177238"),
    ];
    copy_tree_replacing(&fx, &again, &swaps);
    let (db, _) = ingested(&dir.path().join("twice.db"), &[&fx, &again]);
    let (_rt, base) = serve(&db);
    let dom = b.dom(&format!(
        "{base}/history?model=dsr1&sequence=1024%2F1024&hardware=h200&at=100"
    ));
    assert_eq!(
        attr(&dom, "chart", "data-dots").as_deref(),
        Some("2"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "chart", "data-xs").as_deref(),
        Some("2"),
        "{dom}"
    );
    // Each at its run's start time (trial 19: a 15:31 run sat at midnight), said in the table.
    assert!(
        dom.contains("<td>2026-03-01 10:10 UTC</td>")
            && dom.contains("<td>2026-03-01 18:30 UTC</td>"),
        "{dom}"
    );
}

/// Trial 24: the pages said "not in this database" for names `report -f` and the API match
/// (`model=DeepSeek-R1`, `hw=H200`), dropped URL keys they have no control for without a word
/// (`hw=` on History, `hardware=` on TCO and Compare, an unknown preset), and said what they
/// did not apply only after Show/Calculate/Compare. Each page selects the stored name of an
/// alias, and names on load whatever of its URL it cannot apply.
#[test]
fn pages_take_aliases_and_name_what_they_cannot_apply() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base, _) = all_fixtures_served(dir.path());
    let page = |path: &str| b.dom(&format!("{base}/{path}"));

    // Aliases select the stored names, as `-f` matches them: the same views as the stored
    // names give in compare_history_evals_models_and_tco_pages.
    let dom = page("inference?model=DeepSeek-R1&sequence=1024%2F1024&hw=H200");
    assert_eq!(
        attr(&dom, "chart", "data-points").as_deref(),
        Some("2"),
        "{dom}"
    );
    assert!(!text_of(&dom, "status").contains("not applied"), "{dom}");
    assert_eq!(
        attr(&dom, "csv", "href").as_deref(),
        Some("/api/v1/points.csv?model=dsr1&amp;isl=1024&amp;osl=1024&amp;hardware=h200&amp;y=tput_per_gpu&amp;clip=true")
    );
    let dom = page("inference?model=Llama-3.3-70B");
    assert!(
        attr(&dom, "csv", "href")
            .unwrap()
            .starts_with("/api/v1/points.csv?model=llama70b&amp;"),
        "{dom}"
    );
    assert!(!text_of(&dom, "status").contains("not applied"), "{dom}");
    let dom = page("history?model=DeepSeek-R1&sequence=1024%2F1024&hw=H200&at=100");
    assert_eq!(
        attr(&dom, "chart", "data-dots").as_deref(),
        Some("1"),
        "{dom}"
    );
    assert_eq!(
        text_of(&dom, "status"),
        "1 group reaches x = 100 (of 1 selected); no regression in the latest batch",
        "{dom}"
    );
    let dom = page("tco?model=DeepSeek-R1&sequence=1024%2F1024&at=60");
    assert_eq!(
        attr(&dom, "bars", "data-bars").as_deref(),
        Some("3"),
        "{dom}"
    );
    assert!(!text_of(&dom, "status").contains("not applied"), "{dom}");
    let dom = page("compare?model=DeepSeek-R1&sequence=1024%2F1024&a=hw%3Db200&b=hw%3Dmi355x");
    assert_eq!(
        text_of(&dom, "status"),
        "8 points in A, 8 points in B; 3 targets",
        "{dom}"
    );

    // `hw=` is `hardware=` on every page; keys a page has no control for are named.
    let dom = page("history?model=dsr1&sequence=1024%2F1024&at=100&hw=zzz");
    assert!(
        text_of(&dom, "status").ends_with(" — not in this database, so not applied: hardware=zzz"),
        "{dom}"
    );
    let dom = page("tco?model=dsr1&sequence=1024%2F1024&at=60&hardware=zzz&framework=nope");
    assert_eq!(
        attr(&dom, "bars", "data-bars").as_deref(),
        Some("3"),
        "{dom}"
    );
    assert!(
        text_of(&dom, "status").ends_with(
            " — not applied (this page has no control for it): hardware=zzz, framework=nope"
        ),
        "{dom}"
    );
    let dom = page(
        "compare?model=dsr1&sequence=1024%2F1024&a=hw%3Db200&b=hw%3Dmi355x&hardware=zzz&window=2",
    );
    assert_eq!(
        text_of(&dom, "status"),
        "8 points in A, 8 points in B; 3 targets — not applied (this page has no control for \
         it): hardware=zzz, window=2",
        "{dom}"
    );
    // `scenario=` is the Scenario selector's: this database has no agentic points.
    let dom = page("compare?model=dsr1&a=hw%3Db200&b=hw%3Dmi355x&scenario=agentic-coding");
    assert!(
        text_of(&dom, "status")
            .ends_with(" — not in this database, so not applied: sequence=agentic-coding"),
        "{dom}"
    );
    let dom = page("inference?preset=nope&colour=red");
    assert!(
        text_of(&dom, "status").ends_with(
            " — no preset named nope — not applied (this page has no control for it): colour=red"
        ),
        "{dom}"
    );

    // On load, before Show/Calculate/Compare (trial 24: nothing said until pressed); History
    // and TCO open at their default x (issue 39).
    for (path, prompt) in [
        ("history?model=nope", ""),
        ("tco?model=nope", ""),
        ("compare?model=nope", "Name the two sides"),
    ] {
        let status = text_of(&page(path), "status");
        assert!(
            status.starts_with(prompt)
                && status.ends_with(" — not in this database, so not applied: model=nope"),
            "{path}: {status}"
        );
    }
}

/// Trial 24: the Compare page compared invalid points that `inferbench compare` leaves out.
/// It says a side has no valid point, and "include invalid" (`invalid=1`) counts them.
#[test]
fn compare_page_leaves_invalid_points_out_unless_asked() {
    let Some((b, dir)) = browser() else { return };
    // The sweep again on h100, every point invalid (the producer's own verdict).
    let (fx, bad) = common::sweep_and_invalid_h100_copy(dir.path());
    let (db, _) = ingested(&dir.path().join("inv.db"), &[&fx, &bad]);
    let (_rt, base) = serve(&db);
    let dom = b.dom(&format!("{base}/compare?a=hw%3Dh100&b=hw%3Dh200"));
    assert_eq!(
        text_of(&dom, "status"),
        "0 points in A, 2 points in B; no valid point to compare for A (hw=h100: its 2 matching \
         point(s) are invalid; include_invalid=true, the page's \"include invalid\", counts them)",
        "{dom}"
    );
    assert_eq!(attr(&dom, "chart", "data-rows").as_deref(), Some("0"));
    let dom = b.dom(&format!("{base}/compare?a=hw%3Dh100&b=hw%3Dh200&invalid=1"));
    assert_eq!(
        text_of(&dom, "status"),
        "2 points in A, 2 points in B; 3 targets",
        "{dom}"
    );
    assert!(dom.contains("<td>1.000</td>"), "{dom}");
    // A side of a single point is drawn as a dot (trial 27: in the legend only; uPlot draws
    // no markers in its x/y mode): 1 knot for A, 2 for B.
    let dom = b.dom(&format!(
        "{base}/compare?a=hw%3Dh200%2Cconc%3D4&b=hw%3Dh200"
    ));
    assert_eq!(attr(&dom, "chart", "data-lines").as_deref(), Some("2"));
    assert_eq!(
        attr(&dom, "chart", "data-dots").as_deref(),
        Some("3"),
        "{dom}"
    );
    // The run page says why each invalid point is invalid, as `report --columns conc,error`
    // does (issue 39: "invalid" alone).
    let mut f = inferbench_store::Filter::default();
    f.add("hw=h100").unwrap();
    let rows = (Store::open_read_only(&db).unwrap())
        .points(&f, &Default::default())
        .unwrap();
    let dom = b.dom(&format!("{base}/run?id={}", rows[0].run_id));
    assert!(
        dom.contains("<td>invalid: the server fell behind</td>"),
        "{dom}"
    );
    // And the Inference page's table, beside the tooltip's same line.
    let dom = b.dom(&format!(
        "{base}/inference?model=dsr1&sequence=1024%2F1024&hardware=h100"
    ));
    assert!(
        dom.contains("<td>invalid: the server fell behind</td>"),
        "{dom}"
    );
}

/// Trial of issue 39 §5 (D): the History and TCO pages had no "include invalid" control and
/// left invalid points out without a word. Each says how many it left out and why (the stored
/// reason), and `invalid=1` (the box, kept in the URL) counts them.
#[test]
fn history_and_tco_pages_name_invalid_points_left_out() {
    let Some((b, dir)) = browser() else { return };
    let (fx, bad) = common::sweep_and_invalid_h100_copy(dir.path());
    let (db, _) = ingested(&dir.path().join("inv.db"), &[&fx, &bad]);
    let (_rt, base) = serve(&db);
    let left = "; 2 invalid points left out (the server fell behind): \"include invalid\" \
                counts them";
    for page in ["history", "tco"] {
        let url = format!("{base}/{page}?model=dsr1&sequence=1024%2F1024&at=100");
        let dom = b.dom(&url);
        let status = text_of(&dom, "status").replace("&quot;", "\"");
        assert!(status.contains(left), "{page}: {status}");
        assert_eq!(attr(&dom, "status", "data-invalid").as_deref(), Some("2"));
        let dom = b.dom(&format!("{url}&invalid=1"));
        let status = text_of(&dom, "status");
        assert!(!status.contains("left out"), "{page}: {status}");
        // The box (ticked from the URL) asked the API to count them: none left out.
        assert_eq!(attr(&dom, "status", "data-invalid").as_deref(), Some("0"));
    }
}

/// Issue 42: the landing page lists what a database of two models holds (one of them the XSS
/// probe, shown as text), links into each view, and every page's nav comes from one script
/// with a dark-mode toggle that `theme=dark` sets and the browser remembers.
#[test]
fn landing_page_lists_the_database_and_dark_mode_is_remembered() {
    let Some((b, dir)) = browser() else { return };
    let db = seeded(dir.path());
    let (_rt, base) = serve(&db);
    let dom = b.dom(&format!("{base}/"));
    assert_eq!(
        attr(&dom, "models", "data-count").as_deref(),
        Some("2"),
        "{dom}"
    );
    assert_eq!(attr(&dom, "hardware", "data-count").as_deref(), Some("1"));
    assert!(
        dom.contains("<a href=\"/inference?model=dsr1\">dsr1</a> — 2 points"),
        "{dom}"
    );
    // The probe model is text, never markup.
    assert!(
        dom.contains("&lt;img src=x onerror=alert(1)&gt;</a> — 2 points"),
        "{dom}"
    );
    assert!(!dom.contains("<img src=x"), "{dom}");
    assert_eq!(
        text_of(&dom, "summary"),
        "2 models on 1 hardware type: 4 points in 4 runs of 2 batches on 2026-03-01; 0 eval results."
    );
    assert!(attr(&dom, "latest-run", "href")
        .unwrap()
        .starts_with("/run?id="));
    for view in [
        "/inference",
        "/compare",
        "/history",
        "/evals",
        "/models",
        "/tco",
        "/openapi",
    ] {
        assert!(
            dom.contains(&format!("<li><a href=\"{view}\">")),
            "{view}: {dom}"
        );
    }
    // The nav, from common.js: the current page marked, the theme toggle after the links (the
    // root also carries the palette, issue 42).
    assert!(
        dom.contains("<nav id=\"nav\"><a href=\"/\" aria-current=\"page\">Home</a><a href=\"/inference\">Inference</a>"),
        "{dom}"
    );
    assert!(
        dom.contains("<html lang=\"en\" data-palette=\"vendor\" data-theme=\"light\">"),
        "{dom}"
    );
    // `theme=dark` in the URL turns dark mode on, is not a view key ("not applied"), and is
    // remembered for the next page opened without it.
    let dark = b.dom(&format!(
        "{base}/inference?model=dsr1&sequence=1024/1024&theme=dark"
    ));
    assert!(
        dark.contains("<html lang=\"en\" data-palette=\"vendor\" data-theme=\"dark\">"),
        "{dark}"
    );
    assert!(
        dark.contains("aria-pressed=\"true\">Light mode</button>"),
        "{dark}"
    );
    assert!(dark.contains("<a href=\"/inference\" aria-current=\"page\">Inference</a>"));
    assert!(!text_of(&dark, "status").contains("not applied"), "{dark}");
    let later = b.dom(&format!("{base}/models"));
    assert!(
        later.contains("<html lang=\"en\" data-palette=\"vendor\" data-theme=\"dark\">"),
        "{later}"
    );
}

/// Issue 40: the API page lists every route of `/api/v1/openapi.json` (the one route table),
/// a route without path parameters as a link, each parameter by name (`*` when required), and
/// the nav (common.js's one list) links it and marks it current; the landing page's list of
/// views names it with its note from the same list.
#[test]
fn api_page_lists_every_route_and_the_nav_links_it() {
    let Some((b, dir)) = browser() else { return };
    let db = seeded(dir.path());
    let (_rt, base) = serve(&db);
    let dom = b.dom(&format!("{base}/openapi"));
    let n = inferbench_web::openapi::API_ROUTES.len();
    assert_eq!(
        attr(&dom, "routes", "data-rows"),
        Some(n.to_string()),
        "{dom}"
    );
    assert_eq!(
        text_of(&dom, "status"),
        format!("{n} routes, OpenAPI 3.0.3")
    );
    assert!(
        dom.contains("<td><a href=\"/api/v1/options\">/api/v1/options</a></td>"),
        "{dom}"
    );
    // A route with a path parameter is text, not a link; its parameter is required.
    assert!(dom.contains("<td>/api/v1/runs/{id}</td>"), "{dom}");
    assert!(dom.contains(">id*</code>"), "{dom}");
    assert!(
        dom.contains("<a href=\"/tco\">TCO</a><a href=\"/openapi\" aria-current=\"page\">API</a>"),
        "{dom}"
    );
    let home = b.dom(&format!("{base}/"));
    assert!(
        home.contains(
            "<li><a href=\"/openapi\">API</a> — every route of the read-only JSON API, its \
             parameters and media type</li>"
        ),
        "{home}"
    );
    assert!(
        home.contains(
            "<li><a href=\"/tco\">TCO</a> — every configuration's cost or throughput at one \
             interactivity</li>"
        ),
        "{home}"
    );
}

/// Issue 42: points invalid only by AgentX's duration rule draw a dotted preview frontier of
/// their own, labelled "preview: under 900 s", counted in the chart's data attributes.
#[test]
fn short_replays_draw_a_labelled_preview_frontier() {
    let Some((b, dir)) = browser() else { return };
    let field = format!(
        "\"inferbench\": {{\"invalid_reason\": \"{}\",",
        inferbench_core::summary::agentic::SHORT_REPLAY_REASON
    );
    let (_rt, base) = sweep_and_copy_served(
        dir.path(),
        &[
            ("h200-nv_0", "h100-nv_0"),
            ("sweep-2026-03-01-h200", "sweep-2026-03-01-h100"),
            ("\"inferbench\": {", &field),
        ],
    );
    let dom = b.dom(&format!("{base}/inference?model=dsr1&sequence=1024/1024"));
    assert_eq!(
        attr(&dom, "chart", "data-groups").as_deref(),
        Some("2"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "chart", "data-preview-frontiers").as_deref(),
        Some("1")
    );
    assert_eq!(
        attr(&dom, "chart", "data-preview-points").as_deref(),
        Some("2")
    );
    assert!(
        text_of(&dom, "preview-note").starts_with("dotted: preview: under 900 s"),
        "{dom}"
    );
}

/// Issue 42: precision is a multi-select with one marker shape per precision, and the
/// parallelism labels (TP/EP/DP-attn) go on the points with the "parallelism labels" box;
/// both are in the chart's data attributes.
#[test]
fn precisions_have_shapes_and_points_carry_parallelism() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base) = sweep_and_copy_served(
        dir.path(),
        &[
            ("\"fp8\"", "\"fp4\""),
            ("_fp8_", "_fp4_"),
            ("sweep-2026-03-01-h200", "sweep-2026-03-01-h200-fp4"),
        ],
    );
    let dom = b.dom(&format!(
        "{base}/inference?model=dsr1&sequence=1024/1024&par=1"
    ));
    assert_eq!(
        attr(&dom, "chart", "data-groups").as_deref(),
        Some("2"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "chart", "data-precision-shapes").as_deref(),
        Some("fp4:circle,fp8:square"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "chart", "data-parallelism-labels").as_deref(),
        Some("TP8")
    );
    assert_eq!(
        text_of(&dom, "shape-key"),
        "markers by precision: fp4 circle, fp8 square"
    );
    // Both precisions selected in the URL (`|` as the API writes them), or one.
    let both = b.dom(&format!(
        "{base}/inference?model=dsr1&sequence=1024/1024&precision=fp8%7Cfp4"
    ));
    assert_eq!(
        attr(&both, "chart", "data-groups").as_deref(),
        Some("2"),
        "{both}"
    );
    assert!(!text_of(&both, "status").contains("not applied"), "{both}");
    assert_eq!(
        attr(&both, "chart", "data-parallelism-labels").as_deref(),
        Some("")
    );
    let one = b.dom(&format!(
        "{base}/inference?model=dsr1&sequence=1024/1024&precision=fp4"
    ));
    assert_eq!(
        attr(&one, "chart", "data-groups").as_deref(),
        Some("1"),
        "{one}"
    );
    assert_eq!(
        attr(&one, "chart", "data-precision-shapes").as_deref(),
        Some("fp4:circle")
    );
    assert!(attr(&one, "csv", "href").unwrap().contains("precision=fp4"));
}

/// Issue 42's evals drawer: a bar's row opens its eval's questions; the deep link
/// (`drawer=RUN:CONC`, `doc=ID`) opens the drawer on that question, which shows its question,
/// response, extracted answer, target and whether it was correct, as text (the stored `<b>` is
/// not markup); `correct=false` lists the wrong answers only.
#[test]
fn evals_drawer_opens_on_a_sample() {
    let Some((b, dir)) = browser() else { return };
    let set = common::eval_set_with_samples(dir.path());
    let (db, reports) = ingested(&dir.path().join("e.db"), &[&set]);
    assert_eq!(reports[0].evals, 1);
    let run = Store::open_read_only(&db).unwrap().evals().unwrap()[0].run_id;
    let (_rt, base) = serve(&db);

    // Without a link the drawer is closed and each bar's row names the eval it opens.
    let dom = b.dom(&format!("{base}/evals?task=gsm8k"));
    assert!(dom.contains("<aside id=\"drawer\" hidden=\"\""), "{dom}");
    assert!(
        dom.contains(&format!(
            "<tr class=\"pickable\" data-run=\"{run}\" data-conc=\"32\">"
        )),
        "{dom}"
    );

    let dom = b.dom(&format!("{base}/evals?task=gsm8k&drawer={run}:32&doc=1"));
    assert_eq!(
        attr(&dom, "drawer", "data-total").as_deref(),
        Some("3"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "drawer", "data-rows").as_deref(),
        Some("3"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "sample", "data-doc").as_deref(),
        Some("1"),
        "{dom}"
    );
    assert_eq!(
        text_of(&dom, "sample-question"),
        "Tom has 2 apples and buys 3 more. How many?"
    );
    assert_eq!(text_of(&dom, "sample-response"), "2+3=5\n#### 5");
    assert_eq!(text_of(&dom, "sample-extracted"), "5");
    assert_eq!(text_of(&dom, "sample-target"), "5");
    assert_eq!(text_of(&dom, "sample-correct"), "correct");
    assert_eq!(text_of(&dom, "drawer-page"), "1–3 of 3");

    // Wrong answers only; with no `doc` the first is shown, its question as text.
    let dom = b.dom(&format!(
        "{base}/evals?task=gsm8k&drawer={run}:32&correct=false"
    ));
    assert_eq!(
        attr(&dom, "drawer", "data-total").as_deref(),
        Some("2"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "sample", "data-doc").as_deref(),
        Some("0"),
        "{dom}"
    );
    assert_eq!(
        text_of(&dom, "sample-question"),
        "&lt;b&gt;7&lt;/b&gt; times 6?"
    );
    assert_eq!(text_of(&dom, "sample-correct"), "wrong");
    assert_eq!(text_of(&dom, "sample-error"), "http 500");
}

/// Issue 42's replay over time on the History page: one frame per date of the API's `frames`
/// (the analysis layer's), the last one shown by default; `replay=DATE` opens that date's
/// frame, each group's frontier drawn with its knots in `data-knots`.
#[test]
fn history_replays_the_frontier_over_time() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base, _) = all_fixtures_served(dir.path());
    let dom = b.dom(&format!("{base}/history?model=dsr1&at=50"));
    assert_eq!(
        attr(&dom, "replay", "data-frames").as_deref(),
        Some("3"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "replay", "data-date").as_deref(),
        Some("2026-03-01"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "replay", "data-groups").as_deref(),
        Some("3"),
        "{dom}"
    );
    assert_eq!(text_of(&dom, "replay-date"), "2026-03-01 (3 of 3)");

    let dom = b.dom(&format!(
        "{base}/history?model=dsr1&at=50&replay=2026-02-20"
    ));
    assert_eq!(
        attr(&dom, "replay", "data-frame").as_deref(),
        Some("0"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "replay", "data-groups").as_deref(),
        Some("2"),
        "{dom}"
    );
    assert!(
        dom.contains(
            "data-group=\"dsr1 1024/1024 mi355x_mori-sglang_fp4\" data-knots=\"40,1500 80,900 120,300\""
        ),
        "{dom}"
    );
    // `replay` is the page's own key: nothing is said not applied.
    assert!(!text_of(&dom, "status").contains("not applied"), "{dom}");
}

/// Issue 42's palette: by default each group's colour is of its vendor's hue family (NVIDIA
/// greens, AMD reds), carried in the chart's `data-colours`; `palette=contrast` switches to the
/// high-contrast set, which the browser remembers (a later page without it keeps it) until
/// `palette=vendor`.
#[test]
fn groups_take_their_vendors_hue_and_high_contrast_is_remembered() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base, _) = all_fixtures_served(dir.path());
    const NVIDIA: [&str; 8] = [
        "#1b7837", "#5aae61", "#00441b", "#74c476", "#238b45", "#a1d99b", "#006d2c", "#41ab5d",
    ];
    const AMD: [&str; 8] = [
        "#b2182b", "#ef6548", "#67001f", "#f4a582", "#cb181d", "#fb6a4a", "#99000d", "#d6604d",
    ];
    const CONTRAST: [&str; 10] = [
        "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#7a5195", "#4d4d4d",
        "#a6761d", "#1b9e77",
    ];
    let colours = |dom: &str| -> Vec<(String, String)> {
        attr(dom, "chart", "data-colours")
            .unwrap_or_else(|| panic!("{dom}"))
            .split(';')
            .map(|kv| {
                let (k, v) = kv.rsplit_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect()
    };
    let url = format!("{base}/inference?model=dsr1&sequence=1024/1024");
    let dom = b.dom(&url);
    assert_eq!(
        attr(&dom, "chart", "data-palette").as_deref(),
        Some("vendor")
    );
    let got = colours(&dom);
    assert_eq!(got.len(), 3, "{got:?}");
    for (group, c) in &got {
        let family: &[&str] = if group.contains(" mi355x_") {
            &AMD
        } else {
            &NVIDIA
        };
        assert!(family.contains(&c.as_str()), "{group}: {c}");
    }
    // b200 and h200 (both NVIDIA) differ.
    assert_ne!(got[0].1, got[1].1);

    let dom = b.dom(&format!("{url}&palette=contrast"));
    assert_eq!(
        attr(&dom, "chart", "data-palette").as_deref(),
        Some("contrast")
    );
    assert!(colours(&dom)
        .iter()
        .all(|(_, c)| CONTRAST.contains(&c.as_str())));
    assert!(
        dom.contains(
            "<button id=\"palette\" type=\"button\" aria-pressed=\"true\">Vendor colours</button>"
        ),
        "{dom}"
    );
    // Remembered, and not named as a filter the page could not apply.
    let dom = b.dom(&url);
    assert_eq!(
        attr(&dom, "chart", "data-palette").as_deref(),
        Some("contrast")
    );
    let dom = b.dom(&format!("{url}&palette=vendor"));
    assert_eq!(
        attr(&dom, "chart", "data-palette").as_deref(),
        Some("vendor")
    );
    assert!(!text_of(&dom, "status").contains("palette"), "{dom}");
}

/// Issue 42's date and run pickers on the Inference page: `since`/`until` from the URL fill the
/// date pickers and go to the API (the CSV link carries the query the chart was drawn from),
/// so only that day's points are drawn; the run picker offers every stored batch and sends the
/// chosen one; a malformed date is said not applied.
#[test]
fn date_and_run_pickers_filter_the_api_query() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base, db) = all_fixtures_served(dir.path());
    let page = format!("{base}/inference?model=dsr1&sequence=1024/1024");

    let dom = b.dom(&page);
    let all: usize = attr(&dom, "chart", "data-points").unwrap().parse().unwrap();
    let csv = attr(&dom, "csv", "href").unwrap();
    assert!(!csv.contains("since="), "{csv}");
    // Every stored batch is offered, after "any".
    let batches = Store::open_read_only(&db)
        .unwrap()
        .dimension_values()
        .unwrap()
        .remove("batch")
        .unwrap();
    assert!(batches.len() > 1, "{batches:?}");
    let select = &dom[dom.find("<select id=\"batch\">").unwrap()..];
    let select = &select[..select.find("</select>").unwrap()];
    let offered: Vec<&str> = select
        .split("<option value=\"")
        .skip(1)
        .map(|o| &o[..o.find('"').unwrap()])
        .collect();
    let mut want = vec![""];
    want.extend(batches.iter().map(String::as_str));
    assert_eq!(offered, want);

    let dom = b.dom(&format!("{page}&since=2026-02-27&until=2026-02-27"));
    let csv = attr(&dom, "csv", "href").unwrap();
    let sent = url_pairs(&csv);
    for k in ["since", "until"] {
        assert!(
            sent.contains(&(k.to_string(), "2026-02-27".to_string())),
            "{csv}"
        );
    }
    let n: usize = attr(&dom, "chart", "data-points").unwrap().parse().unwrap();
    assert!(n > 0 && n < all, "{n} of {all}");
    assert_eq!(dom.matches("<td>2026-02-27</td>").count(), n, "{dom}");

    let one = &batches[0];
    let dom = b.dom(&format!("{page}&batch={}", utf8_percent(one)));
    let csv = attr(&dom, "csv", "href").unwrap();
    let sent: Vec<(String, String)> = url_pairs(&csv);
    assert!(sent.contains(&("batch".to_string(), one.clone())), "{csv}");

    let dom = b.dom(&format!("{page}&since=27.02.2026"));
    assert!(
        text_of(&dom, "status").contains("since=27.02.2026 (expected YYYY-MM-DD)"),
        "{dom}"
    );
}

/// The query pairs of a URL (`&amp;` as the DOM dump writes it), percent- and `+`-decoded.
fn url_pairs(url: &str) -> Vec<(String, String)> {
    let q = url
        .split_once('?')
        .map_or("", |x| x.1)
        .replace("&amp;", "&");
    let dec = |s: &str| -> String {
        let b = s.replace('+', " ").into_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%' && i + 2 < b.len() {
                out.push(
                    u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap(), 16).unwrap(),
                );
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    };
    q.split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (dec(k), dec(v)))
        .collect()
}

/// Issue 42's date pickers on the History page: `since`/`until` from the URL go to the API, so
/// the replay and the lines keep to that range (one date here), and stay in the URL's state.
#[test]
fn history_date_pickers_narrow_the_range() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base, _) = all_fixtures_served(dir.path());
    let dom = b.dom(&format!(
        "{base}/history?model=dsr1&at=50&since=2026-02-27&until=2026-02-27"
    ));
    assert_eq!(
        attr(&dom, "replay", "data-frames").as_deref(),
        Some("1"),
        "{dom}"
    );
    assert_eq!(
        attr(&dom, "replay", "data-date").as_deref(),
        Some("2026-02-27"),
        "{dom}"
    );
    assert!(!text_of(&dom, "status").contains("not applied"), "{dom}");
    let dom = b.dom(&format!("{base}/history?model=dsr1&at=50&since=27.2.2026"));
    assert_eq!(
        attr(&dom, "replay", "data-frames").as_deref(),
        Some("3"),
        "{dom}"
    );
    assert!(
        text_of(&dom, "status").contains("since=27.2.2026 (expected YYYY-MM-DD)"),
        "{dom}"
    );
}

/// Issue 42's date and run pickers on the Compare and TCO pages (the Inference and History
/// pages had them; these read every batch): `batch=` and `since`/`until` from the URL fill the
/// pickers and go to the API, so only those points count; a malformed date is said not applied;
/// a side naming `batch=` itself disables the run picker (not applied to both sides).
#[test]
fn compare_and_tco_take_the_date_and_run_pickers() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base, db) = all_fixtures_served(dir.path());
    let batches = Store::open_read_only(&db)
        .unwrap()
        .dimension_values()
        .unwrap()
        .remove("batch")
        .unwrap();
    let cmp = format!("{base}/compare?model=dsr1&sequence=1024%2F1024&a=hw%3Db200&b=hw%3Dmi355x");

    // Every stored batch is offered after "any" (on both pages), none chosen.
    for page in [
        cmp.clone(),
        format!("{base}/tco?model=dsr1&sequence=1024%2F1024"),
    ] {
        let dom = b.dom(&page);
        let select = &dom[dom.find("<select id=\"batch\"").unwrap()..];
        let select = &select[..select.find("</select>").unwrap()];
        let offered: Vec<&str> = select
            .split("<option value=\"")
            .skip(1)
            .map(|o| &o[..o.find('"').unwrap()])
            .collect();
        let mut want = vec![""];
        want.extend(batches.iter().map(String::as_str));
        assert_eq!(offered, want, "{page}");
    }

    // Compare: one day of the two (2026-02-27: the repeats) keeps one batch a side.
    let dom = b.dom(&format!("{cmp}&since=2026-02-27&until=2026-02-27"));
    assert_eq!(
        text_of(&dom, "status"),
        "4 points in A, 4 points in B; 3 targets",
        "{dom}"
    );
    assert_eq!(attr(&dom, "chart", "data-lines").as_deref(), Some("2"));
    let sent = url_pairs(&format!("?{}", attr(&dom, "chart", "data-query").unwrap()));
    for k in ["since", "until"] {
        assert!(
            sent.contains(&(k.to_string(), "2026-02-27".to_string())),
            "{sent:?}"
        );
    }
    // The run picker: the imports' batch alone, one line a side.
    let dom = b.dom(&format!("{cmp}&batch=fixtures%2Fimports"));
    assert_eq!(
        text_of(&dom, "status"),
        "4 points in A, 4 points in B; 3 targets",
        "{dom}"
    );
    let sent = url_pairs(&format!("?{}", attr(&dom, "chart", "data-query").unwrap()));
    assert!(sent.contains(&("batch".to_string(), "fixtures/imports".to_string())));
    // A side that names its batch: the picker is disabled and not sent.
    let dom = b.dom(&format!(
        "{base}/compare?model=dsr1&sequence=1024%2F1024&a=hw%3Db200%2Cbatch%3Dfixtures%2Fimports\
         &b=hw%3Db200%2Cbatch%3Dfixtures%2Frepeats&batch=fixtures%2Fimports"
    ));
    assert_eq!(
        attr(&dom, "batch", "disabled").as_deref(),
        Some(""),
        "{dom}"
    );
    assert_eq!(
        text_of(&dom, "status"),
        "4 points in A, 4 points in B; 3 targets",
        "{dom}"
    );
    let sent = url_pairs(&format!("?{}", attr(&dom, "chart", "data-query").unwrap()));
    assert!(!sent.iter().any(|(k, _)| k == "batch"), "{sent:?}");
    // A malformed date is said, not sent.
    let dom = b.dom(&format!("{cmp}&since=27.02.2026"));
    assert!(
        text_of(&dom, "status").contains("since=27.02.2026 (expected YYYY-MM-DD)"),
        "{dom}"
    );
    let sent = url_pairs(&format!("?{}", attr(&dom, "chart", "data-query").unwrap()));
    assert!(!sent.iter().any(|(k, _)| k == "since"), "{sent:?}");

    // TCO: every batch averaged (2 a group for b200 and mi355x), then one day's batch alone.
    let tco = format!("{base}/tco?model=dsr1&sequence=1024%2F1024&at=100");
    let batches_col = |dom: &str| -> Vec<String> {
        let body = &dom[dom.find("<table id=\"bars\"").unwrap()..];
        let body = &body[..body.find("</table>").unwrap()];
        body.split("<tr")
            .skip(2)
            .map(|r| {
                let cells: Vec<&str> = r.split("<td>").collect();
                cells.last().unwrap().split('<').next().unwrap().to_string()
            })
            .collect()
    };
    let dom = b.dom(&tco);
    let all = batches_col(&dom);
    assert!(all.iter().any(|n| n == "2"), "{all:?} {dom}");
    let dom = b.dom(&format!("{tco}&since=2026-02-27&until=2026-02-27"));
    let sent = url_pairs(&format!("?{}", attr(&dom, "bars", "data-query").unwrap()));
    for k in ["since", "until"] {
        assert!(
            sent.contains(&(k.to_string(), "2026-02-27".to_string())),
            "{sent:?}"
        );
    }
    let day = batches_col(&dom);
    assert!(
        !day.is_empty() && day.iter().all(|n| n == "1"),
        "{day:?} {dom}"
    );
    let dom = b.dom(&format!("{tco}&batch=sweep-2026-03-01-h200"));
    assert_eq!(
        attr(&dom, "bars", "data-bars").as_deref(),
        Some("1"),
        "{dom}"
    );
    assert!(dom.contains("h200"), "{dom}");
    assert!(!text_of(&dom, "status").contains("not applied"), "{dom}");
    let dom = b.dom(&format!("{tco}&until=1.3.2026"));
    assert!(
        text_of(&dom, "status").contains("until=1.3.2026 (expected YYYY-MM-DD)"),
        "{dom}"
    );
}

/// Issue 42's comparison: with "Tokens per $1" on y (tens of millions) the tick labels ran under
/// the rotated axis title at a fixed 70 px. The y axis now takes its widest tick label's width:
/// 70 px for throughput's thousands, wider for tokens per $1 — and the axis title then sits
/// left of the tick labels.
#[test]
fn the_y_axis_is_as_wide_as_its_widest_tick_label() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base, _) = all_fixtures_served(dir.path());
    let page = format!("{base}/inference?model=dsr1&sequence=1024/1024");
    let dom = b.dom(&page);
    assert_eq!(
        attr(&dom, "chart", "data-y-axis").as_deref(),
        Some("70"),
        "{dom}"
    );
    let dom = b.dom(&format!("{page}&y=tokens_per_usd_hyperscaler"));
    let px: u32 = attr(&dom, "chart", "data-y-axis")
        .unwrap_or_else(|| panic!("{dom}"))
        .parse()
        .unwrap();
    assert!(px > 70, "{px} px: {dom}");
}

/// Issue 42's comparison: under a cost chart the Inference page names the price each
/// hardware's points assume (InferenceX's badges); under a throughput chart it says nothing.
#[test]
fn a_cost_chart_names_the_prices_it_assumes() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base, _) = all_fixtures_served(dir.path());
    let page = format!("{base}/inference?model=dsr1&sequence=1024/1024");
    let dom = b.dom(&format!("{page}&y=usd_per_m_rental"));
    assert_eq!(
        text_of(&dom, "assumptions"),
        "Assumes: b200 $2.90/GPU-hour (rental); h200 $1.60/GPU-hour (rental); mi355x \
         $2.10/GPU-hour (rental) (InferenceX's SemiAnalysis price and all-in power tables; the \
         TCO page takes your own $/GPU-hour and kW/GPU).",
        "{dom}"
    );
    let dom = b.dom(&page);
    assert_eq!(
        attr(&dom, "assumptions", "hidden").as_deref(),
        Some(""),
        "{dom}"
    );
}

/// Issue 42's comparison: the page drew the points its exported chart clipped. It asks the
/// API to clip as InferenceX does (`clip=true`, carried by its CSV/PNG/SVG links), says how
/// many it left out, and "keep clipped" (`noclip=1`) keeps them everywhere.
#[test]
fn the_page_clips_as_its_exports_do_and_says_so() {
    let Some((b, dir)) = browser() else { return };
    let db = common::clip_db(dir.path());
    let (_rt, base) = serve(&db);
    let page = format!("{base}/inference?model=clipm&y=usd_per_m_hyperscaler");
    let dom = b.dom(&page);
    assert_eq!(
        attr(&dom, "chart", "data-points").as_deref(),
        Some("2"),
        "{dom}"
    );
    assert!(
        text_of(&dom, "status").contains(
            " — 1 point clipped as InferenceX does (above $5/M tokens or TTFT above 60 s; \
             \"keep clipped\" shows it)"
        ),
        "{dom}"
    );
    for link in ["csv", "png", "svg"] {
        let href = attr(&dom, link, "href").unwrap();
        assert!(href.ends_with("&amp;clip=true"), "{link}: {href}");
    }
    let dom = b.dom(&format!("{page}&noclip=1"));
    assert_eq!(
        attr(&dom, "chart", "data-points").as_deref(),
        Some("3"),
        "{dom}"
    );
    assert!(!text_of(&dom, "status").contains("clipped"), "{dom}");
    assert!(attr(&dom, "png", "href")
        .unwrap()
        .ends_with("&amp;clip=false"));
}

/// Issue 42's comparison: InferenceX extends each trend line to today at its latest value.
/// The History page does too, dashed and without a dot (not a measurement): one extension per
/// group drawn, here every group (the fixtures are from February and March 2026); the dots
/// stay the measured values.
#[test]
fn history_lines_are_carried_to_today() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base, _) = all_fixtures_served(dir.path());
    let dom = b.dom(&format!(
        "{base}/history?model=dsr1&sequence=1024%2F1024&at=50"
    ));
    let groups = attr(&dom, "chart", "data-groups").unwrap();
    assert_ne!(groups, "0", "{dom}");
    assert_eq!(
        attr(&dom, "chart", "data-extended"),
        Some(groups.clone()),
        "{dom}"
    );
    // Two groups of two batches each: four measured dots, none at the extensions' ends.
    assert_eq!(groups, "2");
    assert_eq!(
        attr(&dom, "chart", "data-dots").as_deref(),
        Some("4"),
        "{dom}"
    );
}

/// Issue 42's comparison: InferenceX's TCO calculator has a reverse mode (throughput →
/// interactivity). The TCO page's "Mode" reads the chosen x metric at a value of the chosen y
/// metric: the API is asked with the two swapped, the bars are interactivity and "at" is in
/// tok/s/GPU; the mode stays in the URL.
#[test]
fn tco_reverse_mode_reads_interactivity_at_a_throughput() {
    let Some((b, dir)) = browser() else { return };
    let (_rt, base, _) = all_fixtures_served(dir.path());
    let dom = b.dom(&format!(
        "{base}/tco?model=dsr1&sequence=1024%2F1024&mode=reverse&at=1000"
    ));
    let sent = url_pairs(&format!("?{}", attr(&dom, "bars", "data-query").unwrap()));
    for (k, v) in [
        ("x", "tput_per_gpu"),
        ("y", "median_intvty"),
        ("at", "1000"),
    ] {
        assert!(sent.contains(&(k.to_string(), v.to_string())), "{sent:?}");
    }
    assert_eq!(
        text_of(&dom, "th-y"),
        "Interactivity, median (tok/s/user)",
        "{dom}"
    );
    let status = text_of(&dom, "status");
    assert!(
        status.starts_with("2 groups at Throughput per GPU (tok/s/GPU) = 1000; Interactivity, median (tok/s/user): higher is better"),
        "{status}"
    );
    assert!(!status.contains("not applied"), "{status}");
    // The default mode asks as before.
    let dom = b.dom(&format!("{base}/tco?model=dsr1&sequence=1024%2F1024&at=50"));
    let sent = url_pairs(&format!("?{}", attr(&dom, "bars", "data-query").unwrap()));
    assert!(!sent.iter().any(|(k, _)| k == "x"), "{sent:?}");
    assert!(
        sent.contains(&("y".to_string(), "tput_per_gpu".to_string())),
        "{sent:?}"
    );
    assert_eq!(text_of(&dom, "th-y"), "Throughput per GPU (tok/s/GPU)");
}
