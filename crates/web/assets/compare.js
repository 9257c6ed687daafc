// inferbench dashboard: the Compare page (`/compare?model=…&sequence=…&a=…&b=…&x=…&y=…&at=…`,
// and `batch=`, `since=`/`until=`: the run and date pickers, which narrow both sides).
// Two sides' frontiers on one chart and y at matched x with A/B ratios, from /api/v1/compare.
// The URL holds the whole view; every value is set as text.
"use strict";

const FIELDS = ["model", "sequence", "a", "b", "x", "y", "at", "batch"].concat(DATE_KEYS);
let options = null;
let chart = null;

// The view the URL asks for (`invalid=1`: count invalid points); keys the page has no control
// for are said not applied (trial 24: `hardware=zzz` was dropped without a word).
function readState() {
  return readUrl(FIELDS.concat(["invalid"]));
}

function apply(st) {
  fill($("model"), options.dimensions.model || []);
  fill($("sequence"), options.sequences || []);
  fillAxes(options, $("x"), $("y"));
  // Without one asked for, the sequence with the most points (as the Inference and History
  // pages open; trial 20: this page opened on another).
  choose($("sequence"), options.defaults.sequence);
  notApplied = [];
  for (const k of ["model", "sequence", "x", "y"]) choose($(k), st[k], k);
  for (const k of ["a", "b", "at"]) $(k).value = st[k];
  fillBatches($("batch"), options.dimensions.batch, st.batch);
  setDates(st);
  $("invalid").checked = st.invalid === "1";
}

function controls() {
  const st = {};
  // A selector the sides override counts as not set.
  for (const k of FIELDS) st[k] = $(k).disabled ? "" : $(k).value.trim();
  st.invalid = $("invalid").checked ? "1" : "";
  return st;
}

// The page's model and sequence selectors, when sides A/B name those themselves: disabled and
// showing "(named by A and B)" rather than a value that is not applied (trial 19: the Scenario
// selector showed a scenario the sides overrode).
const OVERRIDES = [["model", ["model"]], ["sequence", ["isl", "osl", "scenario", "sequence"]],
  ["batch", ["batch"]]];
function markOverridden(st) {
  for (const [id, keys] of OVERRIDES) {
    const sel = $(id);
    const by = sidesName(st, ...keys);
    let opt = sel.querySelector("option[data-sides]");
    if (by && !opt) {
      opt = document.createElement("option");
      opt.value = "";
      opt.dataset.sides = "1";
      opt.textContent = "(named by A and B)";
      sel.prepend(opt);
    }
    if (by) sel.value = "";
    else if (opt) opt.remove();
    sel.disabled = by;
    sel.title = by ? "sides A and B name it themselves" : "";
  }
}

// Whether side A or B names `key` itself (`osl=256`): then the page's own selector for it is
// not added to both sides (trial 18: `a=osl=128&b=osl=256` became a pooled side B).
function sidesName(st, ...keys) {
  return [st.a, st.b].some(s => s.split(",").some(kv =>
    keys.includes(kv.split("=")[0].trim().toLowerCase())));
}

function apiQuery(st) {
  const p = new URLSearchParams();
  if (st.model && !sidesName(st, "model")) p.set("model", st.model);
  const m = /^(\d+)\/(\d+)$/.exec(st.sequence);
  if (sidesName(st, "isl", "osl", "scenario", "sequence")) {
    // The sides name their workloads themselves.
  } else if (m) { p.set("isl", m[1]); p.set("osl", m[2]); } else if (st.sequence) p.set("scenario", st.sequence);
  for (const k of ["a", "b", "x", "y", "at"]) if (st[k]) p.set(k, st[k]);
  // The run and date pickers narrow both sides (a side that names `batch=` itself disables the
  // run picker: [`markOverridden`]).
  if (st.batch && !sidesName(st, "batch")) p.set("batch", st.batch);
  for (const k of DATE_KEYS) if (st[k]) p.set(k, st[k]);
  // Invalid points count only when asked, as with `inferbench compare --include-invalid`.
  if (st.invalid) p.set("include_invalid", "true");
  return p;
}

function draw(res) {
  const host = $("chart");
  if (chart) { chart.destroy(); chart = null; }
  host.replaceChildren();
  // One line per batch, a side's in its colour (solid, then dashed): the table averages these
  // curves at each target, so chart and table read alike (trial 21: one pooled line per side
  // disagreed with the per-batch means of the table).
  const sides = [["A", res.a, res.batches_a || [], colour(0)], ["B", res.b, res.batches_b || [], colour(1)]];
  const series = [{}];
  const data = [null];
  for (const [side, spec, batches, stroke] of sides) {
    batches.forEach((bt, i) => {
      const label = side + ": " + spec + (batches.length > 1 ? " · " + bt.batch_label : "");
      series.push({ label, stroke, width: 2, dash: i ? [6, 4] : undefined,
        paths: uPlot.paths.linear(), points: { show: false }, dot: 3.5 });
      data.push([bt.knots.map(k => k[0]), bt.knots.map(k => k[1])]);
    });
  }
  host.dataset.lines = String(series.length - 1);
  if (series.length === 1) host.textContent = "no frontier to draw";
  const width = Math.max(480, Math.min(1100, host.clientWidth || 1000));
  chart = series.length === 1 ? null : new uPlot({
    mode: 2, width, height: Math.round(width * 0.5),
    title: "A: " + res.a + "   vs   B: " + res.b,
    // The sides' names and colours only: live values read `--` until hovered (trial 19);
    // each swatch an outline in its line's style, so that a batch's dashed line is told from
    // the solid one (trial 22: filled squares looked alike).
    legend: { live: false, markers: { width: 3, fill: () => "transparent",
      dash: (u, i) => (u.series[i].dash ? "dashed" : "solid") } },
    scales: { x: { time: false }, y: {} },
    axes: [{ label: metricLabel(options, res.x) }, { label: metricLabel(options, res.y), size: yAxisSize }],
    series,
    hooks: { draw: [dotsHook(host)] },
  }, data, host);
  host.dataset.rows = String(res.rows.length);
  host.dataset.drawnMs = String(Math.round(performance.now()));
  heads(res.x, res.y);
  const body = $("rows").tBodies[0];
  body.replaceChildren();
  for (const r of res.rows) {
    const ci = r.ci95_low !== null && r.ci95_high !== null
      ? "[" + r.ci95_low.toFixed(3) + ", " + r.ci95_high.toFixed(3) + "]" : "-";
    addRow(body, [num(r.at), num(r.mean_a), String(r.n_a), num(r.mean_b), String(r.n_b),
      r.ratio_a_over_b === null ? "-" : r.ratio_a_over_b.toFixed(3), ci]);
  }
}

// The table's headers: x and the sides' y, each with its unit (trial 20: "A" and "B" without
// one; trial 21: bare until Compare was pressed).
function heads(x, y) {
  $("th-at").textContent = "at " + metricLabel(options, x);
  $("th-a").textContent = "A: " + metricLabel(options, y);
  $("th-b").textContent = "B: " + metricLabel(options, y);
}

async function refresh(push) {
  markOverridden({ a: $("a").value, b: $("b").value });
  const st = controls();
  heads(st.x || $("x").value || options.defaults.x, st.y || $("y").value || options.defaults.y);
  const p = new URLSearchParams();
  for (const k of FIELDS.concat(["invalid"])) if (st[k]) p.set(k, st[k]);
  pushUrl(p, push);
  const none = noPointsNote(options.stored);
  if (none) {
    status(none + notAppliedNote());
    return;
  }
  // What the URL asked for and the page could not apply is said before Compare too.
  if (!st.a || !st.b) {
    status("Name the two sides (e.g. A: hw=b200, B: hw=mi355x) and press Compare." + notAppliedNote());
    return;
  }
  status("loading…");
  try {
    const q = apiQuery(st);
    // The query the chart and table were drawn from (read by the browser tests).
    $("chart").dataset.query = q.toString();
    const res = await getJson("/api/v1/compare?" + q);
    draw(res);
    const empty = [["A", res.count_a], ["B", res.count_b]].filter(s => s[1] === 0).map(s => s[0]);
    status(count(res.count_a, "point") + " in A, " + count(res.count_b, "point") + " in B; "
      + (res.rows.length ? count(res.rows.length, "target")
        : res.note || (empty.length ? "no stored point matches " + empty.join(" nor ") + "'s filters"
        : "their frontiers share no x range")) + notAppliedNote());
  } catch (e) {
    status("error: " + e.message, true);
  }
}

async function start() {
  options = await loadOptions();
  if (!options) return;
  apply(readState());
  wireForm(() => apply(readState()), refresh, ["model", "sequence", "x", "y", "invalid", "batch"].concat(DATE_KEYS));
  await refresh(false);
}

document.addEventListener("DOMContentLoaded", start);
