// inferbench dashboard: the History page (`/history?model=…&sequence=…&at=…&…`). A group's y at a
// fixed x over time, one line per group, regressions ringed in red, from /api/v1/history. The
// URL holds the whole view; every value is set as text.
"use strict";

const SELECTS = ["model", "sequence", "hardware", "framework", "precision", "x", "y"];
// `since`/`until` (issue 42's date pickers): `YYYY-MM-DD`, inclusive, as the API takes them.
const INPUTS = ["at", "threshold", "since", "until"];
let options = null;
let chart = null;

// The view the URL asks for (`hw=` as `hardware=`); other keys are said not applied.
function readState() {
  return readUrl(SELECTS.concat(INPUTS, ["invalid", "replay"]));
}

function apply(st) {
  const d = options.dimensions;
  fill($("model"), d.model || []);
  fill($("sequence"), options.sequences || []);
  for (const k of ["hardware", "framework", "precision"]) fill($(k), d[k] || [], null, true);
  fillAxes(options, $("x"), $("y"));
  // Without one asked for, the sequence with the most points (as the Inference page opens).
  choose($("sequence"), options.defaults.sequence);
  notApplied = [];
  for (const k of SELECTS) choose($(k), st[k], k);
  for (const k of INPUTS) $(k).value = st[k];
  for (const k of ["since", "until"]) {
    if (st[k] && !/^\d{4}-\d{2}-\d{2}$/.test(st[k])) notTaken.push(k + "=" + st[k] + " (expected YYYY-MM-DD)");
  }
  $("invalid").checked = st.invalid === "1";
}

function controls() {
  const st = {};
  for (const k of SELECTS.concat(INPUTS)) st[k] = $(k).value.trim();
  st.invalid = $("invalid").checked ? "1" : "";
  return st;
}

function apiQuery(st) {
  const p = new URLSearchParams();
  const m = /^(\d+)\/(\d+)$/.exec(st.sequence);
  if (m) { p.set("isl", m[1]); p.set("osl", m[2]); } else if (st.sequence) p.set("scenario", st.sequence);
  for (const k of ["model", "hardware", "framework", "precision", "x", "y", "at", "threshold", "since", "until"]) {
    if (st[k]) p.set(k, st[k]);
  }
  // Invalid points count only when asked, as with `report --history-at --include-invalid`.
  if (st.invalid) p.set("include_invalid", "true");
  return p;
}

// Seconds since the epoch of a `YYYY-MM-DD` date (UTC midnight).
function day(d) { return Date.parse(d + "T00:00:00Z") / 1000; }

// A value's date for the table: `YYYY-MM-DD HH:MM UTC` when its batch's start time is known.
function when(p) {
  if (p.time_unix === null) return p.date;
  return new Date(p.time_unix * 1000).toISOString().slice(0, 16).replace("T", " ") + " UTC";
}

function draw(res) {
  gpuSecondsTable("gpu-seconds", res.groups);
  const host = $("chart");
  if (chart) { chart.destroy(); chart = null; }
  host.replaceChildren();
  const shown = res.groups.filter(g => g.points.length);
  host.dataset.groups = String(shown.length);
  if (!shown.length) {
    // No group reaches that x: nothing to draw (uPlot would throw on no series; trial 18). The
    // status line says so, with the x range to try.
    host.dataset.regressions = "0";
    $("legend").replaceChildren();
    $("rows").tBodies[0].replaceChildren();
    return;
  }
  // A batch's place on the time axis: when its run started (trial 19: a 15:31 run drawn at
  // midnight); a batch without a start time (an import) at its day, those of one day spread
  // evenly across it in the API's order (date, batch) so that they do not stack on one
  // vertical line.
  const batches = new Map();
  for (const g of shown) for (const p of g.points) {
    const k = p.date + "\u0000" + p.batch;
    if (p.time_unix === null && !batches.has(k)) batches.set(k, p);
  }
  const perDay = new Map();
  for (const [k, p] of [...batches].sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)) {
    if (!perDay.has(p.date)) perDay.set(p.date, []);
    perDay.get(p.date).push(k);
  }
  const xOf = new Map();
  for (const [d, keys] of perDay) {
    keys.forEach((k, i) => xOf.set(k, keys.length === 1 ? day(d) : day(d) + (i + 1) * 86400 / (keys.length + 1)));
  }
  const at = p => p.time_unix !== null ? p.time_unix : xOf.get(p.date + "\u0000" + p.batch);
  host.dataset.xs = String(new Set(shown.flatMap(g => g.points.map(at))).size);
  const series = [{}];
  const data = [null];
  const rings = [];
  const colours = groupColours(shown.map(g => g.name));
  shown.forEach(g => {
    series.push({ label: g.name, stroke: colours.get(g.name), width: 2, paths: uPlot.paths.linear(),
      points: { show: false }, dot: 4 });
    data.push([g.points.map(at), g.points.map(p => p.value)]);
    for (const p of g.points) if (p.regression) rings.push([at(p), p.value]);
  });
  // Each line carried on to today at its latest value, dashed and without a dot (InferenceX
  // extends its trend lines to today with a synthetic last-value point): a group that was not
  // measured again reads as "still this", not as ending. A line whose latest value is from
  // today (UTC) needs none.
  const now = Math.floor(Date.now() / 1000);
  const today = now - now % 86400;
  let extended = 0;
  const measured = shown.flatMap(g => g.points.map(at));
  const [mlo, mhi] = [Math.min(...measured), Math.max(...measured)];
  shown.forEach(g => {
    const last = g.points[g.points.length - 1];
    const from = at(last);
    if (!(from < today)) return;
    series.push({ label: g.name + " (latest value carried to today)", stroke: colours.get(g.name),
      width: 1.5, dash: [6, 4], paths: uPlot.paths.linear(), points: { show: false } });
    data.push([[from, now], [last.value, last.value]]);
    extended++;
  });
  host.dataset.extended = String(extended);
  const width = Math.max(480, Math.min(1100, host.clientWidth || 1000));
  chart = new uPlot({
    mode: 2, width, height: Math.round(width * 0.45),
    title: metricLabel(options, res.y) + " at " + metricLabel(options, res.x) + " = " + res.at,
    legend: { show: false },
    // Batches of one day (several quickstarts today) would give the x axis no width and an
    // empty chart: widen a single day to a day either side (trial 7).
    // One value on the y axis (one batch a group, trial 18) would give it no height either:
    // widen it by 10 % either side.
    // (On the measured values: the lines carried to today do not count.)
    scales: { x: { time: true, range: (u, lo, hi) => mlo === mhi
                ? [Math.min(lo, mlo - 86400), Math.max(hi, mhi + 86400)] : [lo, hi] },
              y: { range: (u, lo, hi) => lo === hi
                ? [lo - (Math.abs(lo) * 0.1 || 1), hi + (Math.abs(hi) * 0.1 || 1)]
                : uPlot.rangeNum(lo, hi, 0.1, true) } },
    axes: [{}, { label: metricLabel(options, res.y), size: yAxisSize }],
    series,
    hooks: {
      // The y scale drawn, once uPlot set it (a test reads that it has height).
      setScale: [(u, key) => {
        if (key === "y") { host.dataset.yMin = String(u.scales.y.min); host.dataset.yMax = String(u.scales.y.max); }
      }],
      // Every value as a dot of its group's colour (uPlot's own markers leave out a group of
      // one batch, the usual case after a first quickstart: trial 18), then the regressions'
      // rings.
      draw: [dotsHook(host), u => {
      const ctx = u.ctx;
      ctx.save();
      ctx.strokeStyle = "#b00020";
      ctx.lineWidth = 2 * devicePixelRatio;
      for (const [x, y] of rings) {
        ctx.beginPath();
        ctx.arc(u.valToPos(x, "x", true), u.valToPos(y, "y", true), 7 * devicePixelRatio, 0, 2 * Math.PI);
        ctx.stroke();
      }
      ctx.restore();
    }] },
  }, data, host);
  host.dataset.groups = String(shown.length);
  host.dataset.regressions = String(rings.length);
  host.dataset.drawnMs = String(Math.round(performance.now()));
  const ul = $("legend");
  ul.replaceChildren();
  shown.forEach(g => {
    const li = document.createElement("li");
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.background = colours.get(g.name);
    li.append(sw, document.createTextNode(g.name + (g.latest_regression ? " — latest value regressed" : "")));
    ul.append(li);
  });
  $("th-y").textContent = metricLabel(options, res.y);
  const body = $("rows").tBodies[0];
  body.replaceChildren();
  for (const g of shown) {
    for (const p of g.points) {
      const tr = addRow(body, [g.name, when(p), p.batch_label, num(p.value), num(p.baseline),
        p.change === null ? "-" : (p.change * 100).toFixed(1) + " %", p.regression ? "REGRESSION" : ""]);
      if (p.regression) tr.className = "regression";
    }
  }
}

async function refresh(push) {
  const st = controls();
  const p = new URLSearchParams();
  for (const k of SELECTS.concat(INPUTS, ["invalid"])) if (st[k]) p.set(k, st[k]);
  if (replay.wanted) p.set("replay", replay.wanted);
  pushUrl(p, push);
  // A database of evals alone has no frontier to follow (trial 24: "pick an x inside that
  // range" of no range).
  const none = noPointsNote(options.stored);
  if (none) {
    status(none + notAppliedNote());
    draw({ groups: [] });
    setFrames([]);
    return;
  }
  // Without an x asked for, the API's default (issue 39: 35 tok/s/user where the valid points
  // reach it, else the middle of their range), written into the box.
  const q = apiQuery(st);
  if (!st.at) q.set("at", "auto");
  status("loading…");
  try {
    const res = await getJson("/api/v1/history?" + q);
    if (!st.at && res.at !== null) $("at").value = String(res.at);
    atSlider(res, refresh);
    draw(res);
    // The x the answer read along (the API's one default: AgentX's North-Star x for an
    // all-agentic selection), not the select's empty "default".
    replay.x = res.x || "";
    setFrames(res.frames || []);
    const n = res.groups.filter(g => g.points.length).length;
    const r = res.groups.filter(g => g.latest_regression).length;
    const range = res.x_range
      ? "their frontiers reach x = " + num(res.x_range[0]) + " to " + num(res.x_range[1])
      : "none of their points has a value of " + metricLabel(options, res.x);
    markRange(res.x_range);
    // Nothing selected: which filter matched nothing (trial 22: no word at all).
    status((res.note ? res.note
      : res.at === null
      ? "no valid point of the " + count(res.groups.length, "selected group") + " lies on a frontier with a value of "
        + metricLabel(options, res.x) + ": nothing to follow"
      : n === 0
      ? "no selected group's frontier reaches x = " + res.at + " (of " + count(res.groups.length, "group")
        + " selected): " + range + "; pick an x inside that range"
      : count(n, "group") + (n === 1 ? " reaches" : " reach") + " x = " + res.at + " (of " + res.groups.length + " selected); "
      + (r ? count(r, "group") + " regressed in the latest batch" : "no regression in the latest batch"))
      + leftOut(res) + notAppliedNote());
  } catch (e) {
    status("error: " + e.message, true);
  }
}

// The invalid points the API left out (`groups[].invalid` without `include_invalid`), and
// why: the reason the groups give when they agree, else the first and how many more.
function leftOut(res) {
  const of = res.include_invalid ? [] : res.groups.filter(g => g.invalid);
  const n = of.reduce((a, g) => a + g.invalid, 0);
  const reasons = [...new Set(of.map(g => g.invalid_reason || "no reason stored"))];
  const why = reasons.length === 1 ? reasons[0]
    : reasons[0] + "; and more reasons in " + count(reasons.length - 1, "other group");
  $("status").dataset.invalid = String(n);
  return invalidNote(n, why);
}

// The replay over time (issue 42): the API's `frames` (each date's frontiers, computed by the
// analysis layer), one drawn at a time on an SVG; play steps through them, the slider picks
// one, `replay=DATE` in the URL keeps it.
const replay = { frames: [], i: 0, timer: null, wanted: "", x: "" };
const SVG = "http://www.w3.org/2000/svg";

function svgEl(name, attrs) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

function setFrames(frames) {
  stopReplay();
  replay.frames = frames;
  const want = frames.findIndex(f => f.date === replay.wanted);
  replay.i = want >= 0 ? want : Math.max(0, frames.length - 1);
  const sl = $("replay-slider");
  sl.max = String(Math.max(0, frames.length - 1));
  sl.disabled = frames.length < 2;
  $("replay-play").disabled = frames.length < 2;
  $("replay").dataset.frames = String(frames.length);
  drawFrame();
}

function drawFrame() {
  const svg = $("replay");
  svg.replaceChildren();
  const f = replay.frames[replay.i];
  $("replay-slider").value = String(replay.i);
  $("replay-date").textContent = f ? f.date + " (" + (replay.i + 1) + " of " + replay.frames.length + ")" : "no dated point to replay";
  svg.dataset.frame = String(replay.i);
  svg.dataset.date = f ? f.date : "";
  if (!f) { svg.dataset.groups = "0"; return; }
  // One scale for every frame, so a frontier's move reads as a move.
  const all = replay.frames.flatMap(fr => fr.groups.flatMap(g => g.frontier));
  const xs = all.map(k => k[0]), ys = all.map(k => k[1]);
  const [x0, x1] = [Math.min(...xs), Math.max(...xs)], [y1] = [Math.max(...ys)];
  const W = 720, H = 340, L = 60, R = 16, T = 12, B = 36;
  const sx = v => L + (x1 > x0 ? (v - x0) / (x1 - x0) : 0.5) * (W - L - R);
  const sy = v => H - B - (y1 > 0 ? v / y1 : 0) * (H - T - B);
  svg.append(svgEl("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#889" }));
  svg.append(svgEl("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#889" }));
  const text = (x, y, s, anchor) => {
    const t = svgEl("text", { x, y, "font-size": 11, "text-anchor": anchor, fill: "currentColor" });
    t.textContent = s;
    svg.append(t);
  };
  text(L, H - B + 14, num(x0), "start");
  text(W - R, H - B + 14, num(x1), "end");
  text((L + W - R) / 2, H - 4, metricLabel(options, replay.x || $("x").value || "median_intvty"), "middle");
  text(L - 4, T + 10, num(y1), "end");
  text(L - 4, H - B, "0", "end");
  const colours = groupColours(replay.frames.flatMap(fr => fr.groups.map(g => g.name)));
  for (const g of f.groups) {
    const pts = g.frontier.map(k => sx(k[0]).toFixed(1) + "," + sy(k[1]).toFixed(1)).join(" ");
    const line = svgEl("polyline", { points: pts, fill: "none", stroke: colours.get(g.name), "stroke-width": 2 });
    line.dataset.group = g.name;
    line.dataset.knots = g.frontier.map(k => k[0] + "," + k[1]).join(" ");
    const title = svgEl("title", {});
    title.textContent = g.name;
    line.append(title);
    svg.append(line);
    for (const k of g.frontier) {
      svg.append(svgEl("circle", { cx: sx(k[0]).toFixed(1), cy: sy(k[1]).toFixed(1), r: 3, fill: colours.get(g.name) }));
    }
  }
  svg.dataset.groups = String(f.groups.length);
}

function pickFrame(i, remember) {
  replay.i = Math.max(0, Math.min(replay.frames.length - 1, i));
  if (remember) {
    replay.wanted = replay.frames[replay.i] ? replay.frames[replay.i].date : "";
    const p = new URLSearchParams(location.search);
    if (replay.wanted) p.set("replay", replay.wanted); else p.delete("replay");
    history.replaceState(null, "", location.pathname + "?" + p);
  }
  drawFrame();
}

function stopReplay() {
  if (replay.timer) clearInterval(replay.timer);
  replay.timer = null;
  $("replay-play").textContent = "play";
}

function playReplay() {
  if (replay.timer) { stopReplay(); return; }
  if (replay.i >= replay.frames.length - 1) pickFrame(0, false);
  $("replay-play").textContent = "pause";
  replay.timer = setInterval(() => {
    if (replay.i >= replay.frames.length - 1) { stopReplay(); pickFrame(replay.i, true); return; }
    pickFrame(replay.i + 1, false);
  }, 900);
}

// The x range the API gave, on the chart's element (a test reads it).
function markRange(r) {
  $("chart").dataset.xRange = r ? r[0] + "," + r[1] : "";
}

async function start() {
  options = await loadOptions();
  if (!options) return;
  const st = readState();
  replay.wanted = /^\d{4}-\d{2}-\d{2}$/.test(st.replay || "") ? st.replay : "";
  apply(st);
  $("replay-play").addEventListener("click", playReplay);
  $("replay-slider").addEventListener("input", () => { stopReplay(); pickFrame(Number($("replay-slider").value), true); });
  wireForm(() => apply(readState()), refresh, SELECTS.concat(["invalid", "since", "until"]));
  await refresh(false);
}

document.addEventListener("DOMContentLoaded", start);
