// inferbench dashboard: the Inference page. Reads /api/v1/options and /api/v1/points, draws the
// Pareto chart with uPlot (scatter per group, frontier as straight segments), keeps the whole
// view in the URL (shareable; the back button steps through changes), exports CSV (the server's
// `report --format csv` rows) and PNG/SVG (the server's chart, `/api/v1/chart.png`). Every value
// from the database is set as text (never as markup), and the page's Content-Security-Policy allows no inline script.
"use strict";

const SELECTS = ["model", "sequence", "framework", "spec_decoding", "x", "y"];
// Multi-selects: none selected is all (issue 42: precision, one marker shape each).
const MULTI = ["hardware", "precision"];
const CHECKS = ["optimal", "invalid", "latest", "logx", "logy", "par", "noclip"];
// The date range pickers (issue 42): `since`/`until`, `YYYY-MM-DD` inclusive, as the API takes them.
const DATES = ["since", "until"];

// One marker shape per precision, in the order of the database's precisions (the legend and
// the chart's `data-precision-shapes` say which).
const SHAPES = ["circle", "square", "triangle", "diamond", "star"];
let shapeOf = new Map();

let options = null;
let chart = null;
let current = null; // last /api/v1/points answer
const hidden = new Set(); // groups toggled off in the legend
let pinned = false;
let hovered = null; // the point under the tooltip
let missing = []; // values the URL asked for that the database lacks (set by applyState)

// ---- URL state -------------------------------------------------------------------------
let badPreset = ""; // a `preset=` of the URL that names no preset (set by presets)

function readState() {
  // `hw=` as the API and `report -f` take it (trial 21: ignored here without a word); a key
  // the page has no control for is said not applied (trial 24); `preset=` is presets()'s.
  const st = readUrl(SELECTS.concat(CHECKS, MULTI, ["batch", "preset", "isl", "osl"], DATES), MULTI);
  for (const k of CHECKS) st[k] = st[k] === "1";
  delete st.preset;
  // `isl=…&osl=…` as the API and `report -f` take them name the Scenario selector's
  // `ISL/OSL` (trial 26: `osl=256` was "not applied"); one without the other is not applied.
  if (st.isl && st.osl && !st.sequence) st.sequence = st.isl + "/" + st.osl;
  else for (const k of ["isl", "osl"]) if (st[k]) notTaken.push(k + "=" + st[k] + " (give isl and osl together, or sequence=ISL/OSL)");
  delete st.isl;
  delete st.osl;
  return st;
}

function stateFromControls() {
  // `batch=`: the run picker (a preset's or a link's pattern, such as `quickstart`, is one of
  // its options while chosen).
  const st = {
    hardware: Array.from($("hardware").selectedOptions).map(o => o.value),
    precision: Array.from($("precision").selectedOptions).map(o => o.value),
    batch: $("batch").value,
  };
  for (const k of DATES) st[k] = $(k).value;
  for (const k of SELECTS) st[k] = $(k).value;
  for (const k of CHECKS) st[k] = $(k).checked;
  return st;
}

function stateQuery(st) {
  const p = new URLSearchParams();
  for (const k of SELECTS) if (st[k]) p.set(k, st[k]);
  for (const k of MULTI) for (const v of st[k] || []) p.append(k, v);
  if (st.batch) p.set("batch", st.batch);
  for (const k of DATES) if (st[k]) p.set(k, st[k]);
  for (const k of CHECKS) if (st[k]) p.set(k, "1");
  return p;
}

function apiQuery(st) {
  const p = new URLSearchParams();
  if (st.model) p.set("model", st.model);
  if (st.sequence) {
    const m = /^(\d+)\/(\d+)$/.exec(st.sequence);
    if (m) { p.set("isl", m[1]); p.set("osl", m[2]); } else { p.set("scenario", st.sequence); }
  }
  for (const k of ["framework", "spec_decoding"]) if (st[k]) p.set(k, st[k]);
  for (const k of MULTI) if (st[k].length) p.set(k, st[k].join("|"));
  // A result directory, a sweep id or `quickstart` (every quickstart run), as `report -f batch=`.
  if (st.batch) p.set("batch", st.batch);
  for (const k of DATES) if (st[k]) p.set(k, st[k]);
  if (st.x) p.set("x", st.x);
  if (st.y) p.set("y", st.y);
  if (st.optimal) p.set("frontier_only", "true");
  if (st.invalid) p.set("include_invalid", "true");
  if (st.latest) p.set("latest_only", "true");
  // InferenceX's clipping (above $5/M tokens on a built-in cost y, TTFT above 60 s), as the
  // chart exports clip: the page, its CSV and its PNG/SVG show the same points; "keep
  // clipped" (`noclip=1`) keeps them everywhere.
  p.set("clip", st.noclip ? "false" : "true");
  return p;
}

// ---- controls --------------------------------------------------------------------------
function applyState(st) {
  const d = options.dimensions;
  fill($("model"), d.model || []);
  fill($("sequence"), options.sequences || []);
  fill($("hardware"), d.hardware || []);
  fill($("framework"), d.framework || [], null, true);
  fill($("precision"), d.precision || []);
  shapeOf = new Map((d.precision || []).map((v, i) => [v, SHAPES[i % SHAPES.length]]));
  fill($("spec_decoding"), d.spec_decoding || [], null, true);
  fill($("x"), [""].concat(options.x_metrics.map(m => m.key)),
    ["default"].concat(options.x_metrics.map(m => m.label_with_unit)));
  fill($("y"), options.y_metrics.map(m => m.key), options.y_metrics.map(m => m.label_with_unit));
  // An unknown value falls back to the first option (as InferenceX's selectors do), and the
  // page says which asked-for values this database does not have (a preset or a shared link
  // for data you have not ingested showed another view without a word: trial 7).
  missing = [];
  const offers = (el, v) => Array.from(el.options).some(o => o.value === v);
  for (const k of SELECTS) {
    const el = $(k);
    // A name as `report -f` takes it selects its stored name (`model=Llama-3.1-8B` →
    // llama3.1-8b; trial 24: "not in this database" for what the API matched).
    const v = st[k] && !offers(el, st[k]) ? storedName(k, st[k]) : st[k];
    if (v && offers(el, v)) el.value = v;
    else {
      // The axes offer every metric there is: a missing one is no metric (trial 23).
      if (st[k]) missing.push(k + "=" + st[k] + (k === "x" || k === "y" ? " (no such metric)" : ""));
      if (k === "y") el.value = options.defaults.y;
      // No sequence asked for: the one with the most points (the first was often a --fast run's).
      if (k === "sequence" && options.defaults.sequence) el.value = options.defaults.sequence;
    }
  }
  for (const k of MULTI) {
    const have = Array.from($(k).options).map(o => o.value);
    const asked = Array.isArray(st[k]) ? st[k] : (st[k] ? [st[k]] : []);
    const wanted = asked.map(h => have.includes(h) ? h : storedName(k, h));
    asked.forEach((h, i) => { if (!have.includes(wanted[i])) missing.push(k + "=" + h); });
    for (const o of $(k).options) o.selected = wanted.includes(o.value);
  }
  for (const k of CHECKS) $(k).checked = st[k];
  // The run picker: every stored batch, and the URL's value when it is a pattern of its own.
  fill($("batch"), d.batch || [], null, true);
  if (st.batch && !(d.batch || []).includes(st.batch)) fill($("batch"), (d.batch || []).concat([st.batch]), null, true);
  $("batch").value = st.batch || "";
  for (const k of DATES) {
    const ok = /^\d{4}-\d{2}-\d{2}$/.test(st[k] || "");
    if (st[k] && !ok) missing.push(k + "=" + st[k] + " (expected YYYY-MM-DD)");
    $(k).value = ok ? st[k] : "";
  }
}


// ---- chart -----------------------------------------------------------------------------
function draw(res, st) {
  const host = $("chart");
  if (chart) { chart.destroy(); chart = null; }
  host.replaceChildren();
  // With InferenceX's published points in view, the user's own groups are marked "local"
  // and the published frontiers dashed (InferenceX's unofficial-run overlay, the other way round).
  const overlay = res.groups.some(g => g.public);
  const colours = groupColours(res.groups.map(g => g.name));
  // Each group's colour and the palette, for tests and screenshots (issue 42).
  host.dataset.palette = currentPalette();
  host.dataset.colours = res.groups.map(g => g.name + "=" + colours.get(g.name)).join(";");
  const groups = res.groups.map(g => ({ name: g.name, colour: colours.get(g.name), frontier: g.frontier,
    preview: g.preview_frontier || [], public: g.public, label: overlay && !g.public ? g.name + " (local)" : g.name }));
  const series = [{}];
  const data = [null];
  const plotted = []; // [seriesIdx] -> points of that scatter series
  let previews = 0; // preview frontiers drawn
  for (const g of groups) {
    if (hidden.has(g.name)) continue;
    const pts = res.points.filter(p => p.group === g.name && p.x !== null && p.y !== null);
    // The scatter is drawn by the `draw` hook (filled, or hollow when invalid); the series
    // only carries the data and the scales.
    series.push({
      label: g.name, stroke: g.colour,
      paths: () => null,
      points: { show: false },
    });
    data.push([pts.map(p => p.x), pts.map(p => p.y)]);
    plotted[series.length - 1] = pts;
    if (g.frontier.length) {
      series.push({
        label: g.name + " frontier", stroke: g.colour, width: 2,
        dash: g.public ? [8, 5] : undefined,
        paths: uPlot.paths.linear(),
        points: { show: false },
      });
      data.push([g.frontier.map(k => k[0]), g.frontier.map(k => k[1])]);
    }
    // Points invalid only by AgentX's duration rule: their own frontier, dashed and labelled,
    // never joined to the valid one (issue 42).
    if (g.preview.length) {
      series.push({
        label: g.name + " preview: under 900 s", stroke: g.colour, width: 2, dash: [3, 4],
        paths: uPlot.paths.linear(),
        points: { show: false },
      });
      data.push([g.preview.map(k => k[0]), g.preview.map(k => k[1])]);
      previews++;
    }
  }
  const width = Math.max(480, Math.min(1200, host.clientWidth || 1000));
  const opts = {
    mode: 2,
    width, height: Math.round(width * 0.55),
    title: (st.model || "all models") + (st.sequence ? " · " + st.sequence : ""),
    legend: { show: false },
    scales: {
      x: { time: false, distr: st.logx ? 3 : 1, range: padded(st.logx) },
      y: { distr: st.logy ? 3 : 1, range: padded(st.logy) },
    },
    axes: [
      { label: res.x ? res.x.label_with_unit : "x" },
      { label: res.y ? res.y.label_with_unit : "y", size: yAxisSize },
    ],
    cursor: { drag: { x: true, y: true, uni: 20 }, points: { show: false } },
    series,
    hooks: {
      setCursor: [u => hover(u, plotted)],
      draw: [u => scatter(u, plotted, groups)],
    },
  };
  host.dataset.points = String(res.points.length);
  host.dataset.frontierPoints = String(res.points.filter(p => p.frontier).length);
  host.dataset.groups = String(groups.length);
  host.dataset.previewFrontiers = String(previews);
  host.dataset.previewPoints = String(res.points.filter(p => p.preview).length);
  // Nothing to draw (no point with both values; a database of evals alone): no chart, whose
  // library needs a series (trial 23: "Cannot read properties of undefined").
  if (series.length === 1) {
    host.textContent = "no point to draw";
    legend(groups, st);
    table(res);
    return;
  }
  chart = new uPlot(opts, data, host);
  // When the chart was drawn (ms since navigation start): the page-speed benchmark reads it.
  host.dataset.drawnMs = String(Math.round(performance.now()));
  legend(groups, st);
  if (previews) {
    const li = document.createElement("li");
    li.id = "preview-note";
    li.textContent = "dotted: preview: under 900 s (invalid only by AgentX's duration rule; "
      + "never part of a valid frontier)";
    $("legend").append(li);
  }
  table(res);
}

// Axis range with a margin, so no point sits on the frame (multiplicative on a log axis).
function padded(log) {
  return (u, min, max) => {
    if (min === null || max === null || !Number.isFinite(min)) return [0, 1];
    if (log) return [min / 1.2, max * 1.2];
    const span = (max - min) || Math.abs(max) * 0.1 || 1;
    const lo = min - span * 0.06;
    return [min >= 0 && lo < 0 ? 0 : lo, max + span * 0.08];
  };
}

// Each point as a dot in its group's colour (hollow when invalid) with its concurrency next
// to it in that colour (InferenceX's point labels), placed clear of the other labels and dots
// as `inferbench plot` places them (trial 20: two groups' "16" printed over each other).
function scatter(u, plotted, groups) {
  const ctx = u.ctx, px = devicePixelRatio;
  const colourOf = new Map(groups.map(g => [g.name, g.colour]));
  const withPar = $("par").checked;
  const shapesUsed = new Map(), parUsed = new Set();
  ctx.save();
  ctx.font = Math.round(10 * px) + "px system-ui, sans-serif";
  const drawn = [];
  plotted.forEach(pts => {
    if (!pts) return;
    for (const p of pts) {
      const cx = u.valToPos(p.x, "x", true), cy = u.valToPos(p.y, "y", true);
      if (!Number.isFinite(cx) || !Number.isFinite(cy)) continue;
      const c = colourOf.get(p.group) || "#333";
      const r = (p.frontier ? 4.5 : 3.5) * px;
      const shape = shapeOf.get(p.precision) || "circle";
      shapesUsed.set(p.precision, shape);
      marker(ctx, shape, cx, cy, r);
      ctx.lineWidth = 1.5 * px;
      ctx.strokeStyle = c;
      ctx.fillStyle = p.valid ? c : "#fff";
      ctx.fill();
      ctx.stroke();
      // Parallelism beside the concurrency (TP8, DEP8, …) with the "parallelism" box on.
      const text = withPar ? p.conc + " " + p.parallelism : String(p.conc);
      if (withPar) parUsed.add(p.parallelism);
      drawn.push({ cx, cy, r, c, g: p.group, text, frontier: p.frontier });
    }
  });
  const markers = drawn.map(d => [d.cx - d.r, d.cy - d.r, d.cx + d.r, d.cy + d.r]);
  const placed = [];
  // Frontier points' labels first: they get the usual place when two compete. A point of the
  // same group and concurrency within 1 % of the plot's size of one already labelled gets no
  // label of its own (a repeat on the same spot printed "16" twice: trial 27), as in
  // `inferbench plot`.
  const labelled = [];
  const near = (a, b) => a.g === b.g && a.text === b.text
    && Math.abs(a.cx - b.cx) <= u.bbox.width * 0.01 && Math.abs(a.cy - b.cy) <= u.bbox.height * 0.01;
  for (const d of [...drawn].sort((a, b) => b.frontier - a.frontier)) {
    if (labelled.some(l => near(l, d))) continue;
    labelled.push(d);
    const w = ctx.measureText(d.text).width + 2 * px, h = 11 * px;
    const [dx, dy] = placeLabel(d.cx, d.cy, w, h, px, placed, markers);
    ctx.fillStyle = d.c;
    ctx.fillText(d.text, d.cx + dx, d.cy + dy + h - 2 * px);
  }
  $("chart").dataset.labelOverlaps = String(overlapsAmong(placed));
  // What the markers and labels mean, for readers and the page's tests.
  $("chart").dataset.precisionShapes = Array.from(shapesUsed).sort().map(([k, v]) => k + ":" + v).join(",");
  $("chart").dataset.parallelismLabels = Array.from(parUsed).sort().join(",");
  const key = $("shape-key");
  if (key) key.textContent = shapesUsed.size
    ? "markers by precision: " + Array.from(shapesUsed).sort().map(([k, v]) => k + " " + v).join(", ") : "";
  $("chart").dataset.labels = String(labelled.length);
  ctx.restore();
}

// Traces the path of a marker `shape` of radius `r` centred on (cx, cy) (filled and stroked by
// the caller): circle, square, triangle, diamond or star.
function marker(ctx, shape, cx, cy, r) {
  ctx.beginPath();
  if (shape === "square") ctx.rect(cx - r, cy - r, 2 * r, 2 * r);
  else if (shape === "triangle") {
    ctx.moveTo(cx, cy - 1.2 * r); ctx.lineTo(cx + 1.1 * r, cy + 0.8 * r); ctx.lineTo(cx - 1.1 * r, cy + 0.8 * r);
    ctx.closePath();
  } else if (shape === "diamond") {
    ctx.moveTo(cx, cy - 1.3 * r); ctx.lineTo(cx + 1.3 * r, cy); ctx.lineTo(cx, cy + 1.3 * r); ctx.lineTo(cx - 1.3 * r, cy);
    ctx.closePath();
  } else if (shape === "star") {
    for (let i = 0; i < 10; i++) {
      const a = -Math.PI / 2 + i * Math.PI / 5, rr = i % 2 ? 0.5 * r : 1.3 * r;
      const x = cx + rr * Math.cos(a), y = cy + rr * Math.sin(a);
      if (i) ctx.lineTo(x, y); else ctx.moveTo(x, y);
    }
    ctx.closePath();
  } else ctx.arc(cx, cy, r, 0, 2 * Math.PI);
}

// A label's offset from its point (canvas pixels; the box's top left): the first of upper
// right, lower right, upper left, lower left, then further up or down, whose box covers no
// placed label and no dot; else the one covering fewest labels, then fewest dots. The chosen
// box joins `placed`.
function placeLabel(cx, cy, w, h, px, placed, markers) {
  const g = 6 * px;
  const cands = [[g, -g - h], [g, g - h / 2], [-g - w, -g - h], [-g - w, g - h / 2],
    [g, -g - 2 * h], [g, g + h / 2], [-g - w, -g - 2 * h], [-g - w, g + h / 2],
    [-w / 2, -g - 2 * h], [-w / 2, g + h], [g, -g - 3 * h], [g, g + 1.5 * h]];
  const hit = (a, b) => a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3];
  let best = null;
  for (const [dx, dy] of cands) {
    const box = [cx + dx, cy + dy, cx + dx + w, cy + dy + h];
    const cost = [placed.filter(b => hit(box, b)).length, markers.filter(m => hit(box, m)).length];
    if (!best || cost[0] < best.cost[0] || (cost[0] === best.cost[0] && cost[1] < best.cost[1])) {
      best = { dx, dy, box, cost };
    }
    if (cost[0] === 0 && cost[1] === 0) break;
  }
  placed.push(best.box);
  return [best.dx, best.dy];
}

// How many pairs of `boxes` overlap (the page's tests read it from the chart's host).
function overlapsAmong(boxes) {
  let n = 0;
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const [a, b] = [boxes[i], boxes[j]];
      if (a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]) n++;
    }
  }
  return n;
}

function nearest(u, plotted) {
  const { left, top } = u.cursor;
  if (left === undefined || left < 0) return null;
  let best = null, bestD = 12 * 12;
  plotted.forEach(pts => {
    if (!pts) return;
    for (const p of pts) {
      const dx = u.valToPos(p.x, "x") - left, dy = u.valToPos(p.y, "y") - top;
      const d = dx * dx + dy * dy;
      if (d < bestD) { bestD = d; best = p; }
    }
  });
  return best;
}

function describe(p) {
  const lines = [
    p.group,
    p.parallelism + " · conc " + p.conc + " · " + p.gpus + " GPU" + (p.gpus === 1 ? "" : "s"),
    current.x.label_with_unit + ": " + num(p.x),
    current.y.label_with_unit + ": " + num(p.y),
    "input " + num(p.input_tput_per_gpu) + " · output " + num(p.output_tput_per_gpu) + " tok/s/GPU",
    "date " + p.date + " · batch " + p.batch_label,
  ];
  if (p.image) lines.push("image " + p.image);
  if (p.public) lines.push("published by InferenceX (imported dump)");
  // The point's own reason, as `report --columns conc,error` gives it (issue 39: generic causes).
  if (!p.valid) lines.push("invalid: " + (p.invalid_reason || "no reason stored with this point"));
  if (p.preview) lines.push("preview: under 900 s, on its dotted preview frontier");
  if (p.frontier) lines.push("on the frontier");
  return lines.join("\n");
}

function hover(u, plotted) {
  if (pinned) return;
  const tip = $("tooltip");
  const p = nearest(u, plotted);
  if (!p) { tip.hidden = true; return; }
  tip.textContent = describe(p);
  tip.dataset.run = String(p.run_id);
  tip.dataset.point = String(p.point_id);
  hovered = p;
  tip.hidden = false;
  const r = u.over.getBoundingClientRect();
  tip.style.left = (window.scrollX + r.left + u.valToPos(p.x, "x") + 12) + "px";
  tip.style.top = (window.scrollY + r.top + u.valToPos(p.y, "y") + 12) + "px";
}

function legend(groups, st) {
  const ul = $("legend");
  ul.replaceChildren();
  for (const g of groups) {
    const li = document.createElement("li");
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.backgroundColor = g.colour;
    if (g.public) sw.className = "swatch dashed";
    li.append(sw, document.createTextNode(g.label));
    if (hidden.has(g.name)) li.className = "off";
    li.addEventListener("click", () => {
      if (hidden.has(g.name)) hidden.delete(g.name); else hidden.add(g.name);
      draw(current, st);
    });
    ul.append(li);
  }
  const notes = [];
  if (current.x && current.x.key === "p90_e2e_norm_intvty") {
    notes.push("Agentic frontiers are North-Star gated (p90 E2E-normalized interactivity).");
  }
  if (groups.some(g => g.public)) {
    notes.push("Dashed: InferenceX's published frontiers (an imported dump); \"(local)\": your own runs.");
  }
  notes.push("Lines: each group's Pareto frontier (straight segments between frontier points); "
    + "point labels: concurrency. Drag to zoom, double-click to reset; click a point to pin it.");
  $("notes").textContent = notes.join(" ");
  // What a cost or per-MW y assumes per hardware (InferenceX's price and power badges).
  const assumed = current.assumptions || [];
  $("assumptions").hidden = !assumed.length;
  $("assumptions").textContent = assumed.length
    ? "Assumes: " + assumed.join("; ") + " (InferenceX's SemiAnalysis price and all-in power "
      + "tables; the TCO page takes your own $/GPU-hour and kW/GPU)."
    : "";
}

function table(res) {
  $("th-x").textContent = res.x ? res.x.label_with_unit : "x";
  $("th-y").textContent = res.y ? res.y.label_with_unit : "y";
  const body = $("points").tBodies[0];
  body.replaceChildren();
  for (const p of res.points.slice(0, 2000)) {
    const tr = document.createElement("tr");
    for (const v of [p.group, p.parallelism, String(p.conc), num(p.x), num(p.y),
      // An invalid point with its reason, as in its tooltip and on its run page (issue 39).
      (p.frontier ? "*" : "") + (p.valid ? ""
        : (p.frontier ? " " : "") + "invalid: " + (p.invalid_reason || "no reason stored with this point")),
      p.date, p.batch_label]) {
      const td = document.createElement("td");
      td.textContent = v;
      tr.append(td);
    }
    body.append(tr);
  }
}

// ---- data flow -------------------------------------------------------------------------

async function refresh(push) {
  const st = stateFromControls();
  pushUrl(stateQuery(st), push);
  const api = apiQuery(st).toString();
  $("csv").href = "/api/v1/points.csv" + (api ? "?" + api : "");
  // The exports are the server's chart (`plot`'s renderer: title, units, legend, source line).
  $("png").href = "/api/v1/chart.png" + (api ? "?" + api : "");
  $("svg").href = "/api/v1/chart.svg" + (api ? "?" + api : "");
  status("loading…");
  try {
    current = await getJson("/api/v1/points" + (api ? "?" + api : ""));
    draw(current, st);
    const f = current.points.filter(p => p.frontier).length;
    status(count(current.count, "point") + " in " + count(current.groups.length, "group") + ", "
      + f + " on a frontier"
      + (missing.length ? " — not in this database, so not applied: " + missing.join(", ") : "")
      + (badPreset ? " — no preset named " + badPreset : "")
      + notAppliedNote()
      + (st.batch ? " — only batch=" + st.batch + " (from the URL; remove it to see every batch)" : "")
      + (current.clipped ? " — " + count(current.clipped, "point") + " clipped as InferenceX does "
        + "(above $5/M tokens or TTFT above 60 s; \"keep clipped\" shows "
        + (current.clipped === 1 ? "it" : "them") + ")" : "")
      + (current.note ? " — " + current.note : ""));
  } catch (e) {
    status("error: " + e.message, true);
  }
}

// The curated views (assets/presets.json) as links; `?preset=ID` applies one and leaves its
// state in the URL instead (as InferenceX consumes its `preset` parameter).
async function presets() {
  let list = [];
  try { list = await getJson("/assets/presets.json"); } catch (e) { return; }
  const host = $("presets");
  const q = new URLSearchParams(location.search);
  const stateUrl = v => {
    const list = x => Array.isArray(x) ? x : (x ? [x] : []);
    const st = { hardware: list(v.hardware), precision: list(v.precision), batch: v.batch || "" };
    for (const k of SELECTS) st[k] = v[k] || "";
    for (const k of CHECKS) st[k] = false;
    return "/inference?" + stateQuery(st);
  };
  for (const p of list) {
    const a = document.createElement("a");
    a.href = stateUrl(p.view);
    a.textContent = p.title;
    a.title = p.description;
    a.dataset.preset = p.id;
    host.append(a);
  }
  const want = q.get("preset");
  const hit = list.find(p => p.id === want);
  if (hit) history.replaceState(null, "", stateUrl(hit.view));
  // An unknown id is said, not dropped (trial 24: `preset=nope` showed the default view alone).
  badPreset = want !== null && !hit ? want : "";
}

async function start() {
  options = await loadOptions();
  if (!options) return;
  await presets();
  applyState(readState());
  for (const k of SELECTS.concat(MULTI, CHECKS, ["batch"], DATES)) {
    $(k).addEventListener("change", () => {
      pinned = false; missing = []; notTaken = []; badPreset = ""; $("tooltip").hidden = true; refresh(true);
    });
  }
  window.addEventListener("popstate", () => { badPreset = ""; applyState(readState()); refresh(false); });
  $("chart").addEventListener("click", () => {
    const tip = $("tooltip");
    if (!chart || tip.hidden) return;
    pinned = !pinned;
    tip.classList.toggle("pinned", pinned);
    // A pinned point links to its run's page.
    if (pinned && tip.dataset.run) {
      const a = document.createElement("a");
      a.href = "/run?id=" + encodeURIComponent(tip.dataset.run) + "&point="
        + encodeURIComponent(tip.dataset.point);
      a.textContent = "\nrun page →";
      tip.append(a);
      // Its configuration's y at this x over time (the History page).
      const p = hovered;
      if (p && p.x !== null) {
        const st = stateFromControls();
        const h = new URLSearchParams({ model: p.model, hardware: p.hardware, framework: p.framework,
          precision: p.precision, y: st.y, at: String(Number(p.x.toPrecision(4))) });
        if (st.sequence) h.set("sequence", st.sequence);
        if (current && current.x) h.set("x", current.x.key);
        const t = document.createElement("a");
        t.href = "/history?" + h;
        t.textContent = "\ntrack over time →";
        tip.append(t);
      }
    }
  });
  await refresh(false);
}

document.addEventListener("DOMContentLoaded", start);
