// inferbench dashboard: helpers every page uses (loaded before the page's own script).
"use strict";

// The element with this id.
function $(id) { return document.getElementById(id); }

// Sets the page's status line (role=status); errors in red.
function status(text, isError) {
  const s = $("status");
  s.textContent = text;
  s.className = isError ? "error" : "";
}

// GETs a JSON API route; an error answer ({"error": …}) or a non-JSON one throws with its
// message.
async function getJson(url) {
  const r = await fetch(url);
  const body = await r.json().catch(() => ({ error: "answer is not JSON (HTTP " + r.status + ")" }));
  if (!r.ok) throw new Error(body.error || ("HTTP " + r.status));
  return body;
}

// "1 point", "2 points".
function count(n, noun) { return n + " " + noun + (n === 1 ? "" : "s"); }

// Fills a <select> with `values` (shown as `labels` when given), after an "any" option (value
// "") when `withAny`.
function fill(select, values, labels, withAny) {
  select.replaceChildren();
  if (withAny) {
    const o = document.createElement("option");
    o.value = ""; o.textContent = "any";
    select.append(o);
  }
  values.forEach((v, i) => {
    const o = document.createElement("option");
    o.value = v; o.textContent = labels ? labels[i] : v;
    select.append(o);
  });
}

// Values the URL asked for that the page's selectors do not offer, as `key=value`: the page
// falls back to its first option and says so ([`notAppliedNote`]; trial 23: History and TCO
// showed another model's data for `model=typo` without a word).
let notApplied = [];

// URL keys (and repeated values) the page has no control for, as `key=value`: said in the
// status line too ([`notAppliedNote`]; trial 24: `/tco?hardware=zzz` was dropped without a
// word).
let notTaken = [];

// Other names of a page's URL keys: `hw=` as `report -f` and the API take it, `scenario=` for
// the Scenario selector (whose values are `ISL/OSL` or a scenario).
const KEY_ALIASES = { hw: "hardware", scenario: "sequence" };

// The page's URL query as {key: value} for the keys in `known` (aliases mapped: [`KEY_ALIASES`]),
// a key in `multi` as a list of all its values; every other key, and a second value of a key
// that takes one, is remembered in [`notTaken`].
function readUrl(known, multi) {
  multi = multi || [];
  const st = {};
  for (const k of known) st[k] = multi.includes(k) ? [] : "";
  notTaken = [];
  for (const [given, v] of new URLSearchParams(location.search)) {
    // `theme=` is every page's (the nav's dark-mode toggle, below), not a view's.
    if (given === "theme" || given === "palette") continue;
    const k = KEY_ALIASES[given] || given;
    if (!known.includes(k)) notTaken.push(given + "=" + v);
    // `hardware=h100|h200` (the API's and `report -f`'s form) or `h100,h200` as two values
    // (trial 25: taken as one name, "not in this database").
    else if (multi.includes(k)) st[k].push(...listValues(v));
    else if (st[k] === "") st[k] = v;
    else notTaken.push(given + "=" + v + " (one value only)");
  }
  return st;
}

// The values of one URL value that lists several (`h100|h200`, `h100,h200`), blanks dropped.
function listValues(v) {
  return v.split(/[|,]/).map(x => x.trim()).filter(x => x !== "");
}

// The stored names of the identity values the URL gave, as /api/v1/options resolved them
// ({key: {given: stored}}; `model=Llama-3.1-8B` → `llama3.1-8b`, as `report -f` matches it).
let resolvedNames = {};

// The name the store keeps `value` of `key` under ([`resolvedNames`]), else `value` itself.
function storedName(key, value) {
  const r = resolvedNames[key];
  return r && Object.prototype.hasOwnProperty.call(r, value) ? r[value] : value;
}

// Selects `value` in `select` when it offers it, or the stored name of an alias of it
// ([`storedName`]); otherwise, for a named `key`, remembers that it was not applied.
function choose(select, value, key) {
  if (!value) return;
  const offers = v => Array.from(select.options).some(o => o.value === v);
  const v = offers(value) ? value : storedName(key, value);
  if (offers(v)) select.value = v;
  else if (key) notApplied.push(key + "=" + value);
}

// The status line's tail for [`notApplied`] and [`notTaken`] values ("" when none).
function notAppliedNote() {
  return (notApplied.length ? " — not in this database, so not applied: " + notApplied.join(", ") : "")
    + (notTaken.length ? " — not applied (this page has no control for it): " + notTaken.join(", ") : "");
}

// What a database without any throughput point holds, for a page's status line (trial 24:
// History asked for an x "inside that range" of no range; Models said nothing was measured
// beside stored evals); "" when it holds points. `stored`: /api/v1/options' `stored`.
function noPointsNote(stored) {
  if (!stored || stored.points > 0) return "";
  return stored.evals > 0
    ? "This database holds " + count(stored.evals, "eval result") + " and no throughput point (see the Evals page)."
    : "Nothing measured yet: `inferbench quickstart` fills the database.";
}

// Colour-blind-safe series colours (Okabe–Ito first), one per group in order.
const PALETTE = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#7a5195",
  "#4d4d4d", "#a6761d", "#1b9e77"];
function colour(i) { return PALETTE[i % PALETTE.length]; }

// Each group's colour, the same on every page and view that shows the group (trial 22: a
// group's colour followed its place in the view, so h200 was blue in one view and orange in
// the next): a hash of the name picks a palette slot, the next free slot when another group of
// this view holds it (so a view's groups differ while it has no more than the palette's 10).
// `names`: the view's group names; returns Map name → colour.
// Issue 42: by default each group takes a colour of its hardware vendor's hue family (NVIDIA
// greens, AMD reds, others blues and purples), as InferenceX's charts do, by the same rule within
// the family; the high-contrast palette (`palette=contrast`, remembered like the theme) is
// PALETTE above, the most distinct colours whatever the vendor.
function groupColours(names) {
  const contrast = currentPalette() === "contrast";
  const used = new Map(); // family -> used slots
  const out = new Map();
  for (const name of [...new Set(names)].sort()) {
    const fam = contrast ? PALETTE : VENDOR_HUES[vendorOf(name)];
    if (!used.has(fam)) used.set(fam, new Set());
    const taken = used.get(fam);
    let h = 2166136261; // FNV-1a, 32 bit
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619) >>> 0;
    let slot = h % fam.length;
    for (let k = 0; k < fam.length && taken.has(slot); k++) slot = (slot + 1) % fam.length;
    taken.add(slot);
    out.set(name, fam[slot]);
  }
  return out;
}

// One hue family per hardware vendor, dark to light alternating so neighbours differ.
const VENDOR_HUES = {
  nvidia: ["#1b7837", "#5aae61", "#00441b", "#74c476", "#238b45", "#a1d99b", "#006d2c", "#41ab5d"],
  amd: ["#b2182b", "#ef6548", "#67001f", "#f4a582", "#cb181d", "#fb6a4a", "#99000d", "#d6604d"],
  other: ["#2166ac", "#4393c3", "#053061", "#9e9ac8", "#6a51a3", "#92c5de", "#3f007d", "#807dba"],
};

// The hardware vendor of a group name (`<model> [isl/osl] <hw>_<framework>_<precision>…`):
// `amd` for Instinct keys (mi300x, mi355x), `nvidia` for h100/h200/b200/b300/gb200/a100/l40s…,
// `other` for anything else (the simulator's hardware included).
function vendorOf(group) {
  const tok = group.split(" ").find(t => t.includes("_")) || "";
  const hw = tok.split("_")[0].toLowerCase();
  if (/^mi\d/.test(hw)) return "amd";
  if (/^(gb|gh|h|b|a|l|rtx)\d/.test(hw)) return "nvidia";
  return "other";
}

// The palette: `palette=vendor|contrast` in the URL wins and is remembered (localStorage), else
// the remembered one, else vendor hues. Set as `data-palette` on the root element.
const PALETTE_KEY = "inferbench-palette";
function currentPalette() {
  return document.documentElement.dataset.palette === "contrast" ? "contrast" : "vendor";
}
function setPalette(p, remember) {
  document.documentElement.dataset.palette = p;
  if (remember) { try { localStorage.setItem(PALETTE_KEY, p); } catch (e) { /* private mode */ } }
  const b = $("palette");
  if (b) {
    b.textContent = p === "contrast" ? "Vendor colours" : "High contrast";
    b.setAttribute("aria-pressed", p === "contrast" ? "true" : "false");
  }
}
(function initialPalette() {
  const asked = new URLSearchParams(location.search).get("palette");
  let stored = null;
  try { stored = localStorage.getItem(PALETTE_KEY); } catch (e) { /* private mode */ }
  if (asked === "contrast" || asked === "vendor") setPalette(asked, true);
  else setPalette(stored === "contrast" ? "contrast" : "vendor", false);
})();

// A `draw` hook for uPlot charts in mode 2 (x/y pairs per series): a filled dot at every
// value of each shown series that has `dot` (its radius in CSS px), in the series' stroke.
// uPlot's own `points` markers are not drawn in mode 2, so a series of one value (a batch of one
// point) showed in the legend and nowhere on the chart (trial 27; trial 18 on History).
// Writes the number drawn into the chart host's `data-dots`.
function dotsHook(host) {
  return u => {
    const ctx = u.ctx, px = devicePixelRatio;
    let n = 0;
    ctx.save();
    u.series.forEach((s, i) => {
      if (i === 0 || !s.show || !s.dot || !u.data[i]) return;
      const [xs, ys] = u.data[i];
      ctx.fillStyle = typeof s.stroke === "function" ? s.stroke(u, i) : s.stroke;
      for (let k = 0; k < xs.length; k++) {
        const cx = u.valToPos(xs[k], "x", true), cy = u.valToPos(ys[k], "y", true);
        if (!Number.isFinite(cx) || !Number.isFinite(cy)) continue;
        ctx.beginPath();
        ctx.arc(cx, cy, s.dot * px, 0, 2 * Math.PI);
        ctx.fill();
        n++;
      }
    });
    ctx.restore();
    host.dataset.dots = String(n);
  };
}

// A number for a table cell: "-" when missing, else rounded for reading.
function num(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "-";
  const a = Math.abs(v);
  if (a >= 1000) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toPrecision(3);
}

// The GPU time each group's points cost (issue 42/43: `gpu_seconds` per group from the History
// and TCO answers, the runner's record: GPUs × wall time plus the point's share of its engine's
// launch and stop; modelled time for sim rows) into table `id`: group, GPU·s, GPU-hours, and
// the points without a record (imports, older points): "-" when none was recorded.
function gpuSecondsTable(id, groups) {
  const t = $(id);
  if (!t) return;
  const body = t.tBodies[0];
  body.replaceChildren();
  let known = 0;
  for (const g of groups || []) {
    const s = g.gpu_seconds;
    if (s !== null && s !== undefined) known++;
    addRow(body, [g.name, s === null || s === undefined ? "-" : s.toFixed(1),
      s === null || s === undefined ? "-" : (s / 3600).toFixed(3), String(g.gpu_seconds_unknown || 0)]);
  }
  t.dataset.groups = String((groups || []).length);
  t.dataset.known = String(known);
}

// One table row of text cells appended to `tbody`.
function addRow(tbody, cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = document.createElement("td");
    td.textContent = c;
    tr.append(td);
  }
  tbody.append(tr);
  return tr;
}

// The options of the axis selectors: x (with a "default" first) and y, from /api/v1/options.
function fillAxes(options, xSel, ySel) {
  fill(xSel, [""].concat(options.x_metrics.map(m => m.key)),
    ["default"].concat(options.x_metrics.map(m => m.label_with_unit)));
  fill(ySel, options.y_metrics.map(m => m.key), options.y_metrics.map(m => m.label_with_unit));
  ySel.value = options.defaults.y;
}

// The label with unit of metric `key` from /api/v1/options, else the key.
function metricLabel(options, key) {
  const m = options.x_metrics.concat(options.y_metrics).find(m => m.key === key);
  return m ? m.label_with_unit : key;
}

// The identity keys of the URL whose stored names /api/v1/options resolves.
const RESOLVED_KEYS = ["model", "hardware", "hw", "framework", "precision", "spec_decoding"];

// /api/v1/options, or null after saying why in the status line. The URL's identity values go
// along, and their stored names are kept in [`resolvedNames`].
async function loadOptions() {
  const q = new URLSearchParams();
  for (const [k, v] of new URLSearchParams(location.search)) {
    if (!RESOLVED_KEYS.includes(k) || !v) continue;
    for (const x of (k === "hardware" || k === "hw") ? listValues(v) : [v]) q.append(k, x);
  }
  try {
    const o = await getJson("/api/v1/options" + (q.toString() ? "?" + q : ""));
    resolvedNames = o.resolved || {};
    return o;
  } catch (e) {
    status("error: " + e.message, true);
    return null;
  }
}

// Wires a form page: submitting the form or changing one of the `live` controls (ids) redraws
// with `refresh(true)` (a new history entry); the back button re-applies the URL with `apply()`
// and redraws with `refresh(false)`.
function wireForm(apply, refresh, live) {
  // A choice of the user's replaces what the URL asked for.
  const forget = () => { notApplied = []; notTaken = []; };
  $("controls").addEventListener("submit", ev => { ev.preventDefault(); forget(); refresh(true); });
  for (const k of live) $(k).addEventListener("change", () => { forget(); refresh(true); });
  window.addEventListener("popstate", () => { apply(); refresh(false); });
}

// The URL of this page with `params`, pushed as a history entry when `push` and it changed.
function pushUrl(params, push) {
  const q = params.toString();
  const url = location.pathname + (q ? "?" + q : "");
  if (push && url !== location.pathname + location.search) history.pushState(null, "", url);
}

// A y axis's width (px, tick labels and ticks; the rotated title has its own room): at least
// 70, wider when its widest tick label needs it (issue 42: "Tokens per $1" ticks of
// 37,500,000 ran under the axis title at a fixed 70 px). uPlot's `size` callback; records the
// width on the axis's chart host as `data-y-axis` (read by the browser tests).
function yAxisSize(u, values, axisIdx, cycleNum) {
  const axis = u.axes[axisIdx];
  if (cycleNum > 1) return axis._size;
  let size = (axis.ticks.show ? axis.ticks.size : 0) + axis.gap;
  const widest = (values || []).reduce((a, v) => (v !== null && String(v).length > a.length ? String(v) : a), "");
  if (widest) {
    u.ctx.save();
    u.ctx.font = axis.font[0];
    size += u.ctx.measureText(widest).width / (window.devicePixelRatio || 1);
    u.ctx.restore();
  }
  const px = Math.max(70, Math.ceil(size) + 4);
  if (u.root && u.root.parentElement) u.root.parentElement.dataset.yAxis = String(px);
  return px;
}

// The date pickers (issue 42): `since`/`until`, `YYYY-MM-DD` inclusive, as the API takes them.
const DATE_KEYS = ["since", "until"];

// Sets the page's `since`/`until` date inputs from the URL's state `st`; a value not of the
// form `YYYY-MM-DD` is left out of the input and said not applied ([`notTaken`]).
function setDates(st) {
  for (const k of DATE_KEYS) {
    const ok = /^\d{4}-\d{2}-\d{2}$/.test(st[k] || "");
    if (st[k] && !ok) notTaken.push(k + "=" + st[k] + " (expected YYYY-MM-DD)");
    $(k).value = ok ? st[k] : "";
  }
}

// Fills the run picker `select` with every stored batch (`stored`, /api/v1/options'
// `dimensions.batch`) after "any", plus `asked` when it is a pattern of its own (`quickstart`:
// every quickstart run, as `report -f batch=` takes it), and selects `asked`.
function fillBatches(select, stored, asked) {
  const values = (stored || []).slice();
  if (asked && !values.includes(asked)) values.push(asked);
  fill(select, values, null, true);
  select.value = asked || "";
}

// The History and TCO pages' line on invalid points left out (issue 39 §5: they were left
// out without a word): how many, and why as the API gives it (`invalid_reason`: the first
// stored reason, "and N more reasons" when they differ); "" when none was left out.
function invalidNote(n, reason) {
  if (!n) return "";
  return "; " + count(n, "invalid point") + " left out (" + (reason || "no reason stored")
    + "): \"include invalid\" counts " + (n === 1 ? "it" : "them");
}

// The History and TCO pages' `at` slider (`#at-slider`) over the x range of the valid points'
// frontiers (`res.x_range`), set at `res.at`: moving it writes the `at` box, letting go reads
// the view again with `refresh(true)` (issue 39: a first load opens at a default x with a
// slider over the valid range). Hidden without a range.
function atSlider(res, refresh) {
  const s = $("at-slider");
  if (!s) return;
  const r = res.x_range;
  if (!r || !(r[1] > r[0])) { s.hidden = true; return; }
  s.min = String(r[0]);
  s.max = String(r[1]);
  s.step = String((r[1] - r[0]) / 200);
  if (Number.isFinite(res.at)) s.value = String(Math.min(r[1], Math.max(r[0], res.at)));
  s.hidden = false;
  if (!s.dataset.wired) {
    s.dataset.wired = "1";
    s.addEventListener("input", () => { $("at").value = String(Number(Number(s.value).toPrecision(4))); });
    s.addEventListener("change", () => { notApplied = []; notTaken = []; refresh(true); });
  }
}

// ---- the nav bar and the theme (every page) -------------------------------------------------

// The nav bar's links, in one place (each page has an empty `<nav id="nav">`; a page outside
// the list names itself in `data-self`): path, name, and what the view shows (the landing
// page's list of views). A new page adds its one entry here.
const NAV = [
  ["/", "Home", "what this database holds"],
  ["/inference", "Inference", "throughput against interactivity: Pareto frontiers per configuration"],
  ["/compare", "Compare", "two configurations at matched interactivity, with ratios"],
  ["/history", "History", "one configuration's value at a fixed x over time, regressions flagged"],
  ["/evals", "Evals", "accuracy evals (GSM8K) per model and configuration"],
  ["/models", "Models", "the support matrix: what ran where"],
  ["/tco", "TCO", "every configuration's cost or throughput at one interactivity"],
  ["/openapi", "API", "every route of the read-only JSON API, its parameters and media type"],
];

// The theme: `theme=dark|light` in the URL wins and is remembered (localStorage), else the
// remembered one, else light. Set as `data-theme` on the root element, which app.css styles.
const THEME_KEY = "inferbench-theme";
function storedTheme() {
  try { return localStorage.getItem(THEME_KEY); } catch (e) { return null; }
}
function setTheme(t, remember) {
  document.documentElement.dataset.theme = t;
  if (remember) { try { localStorage.setItem(THEME_KEY, t); } catch (e) { /* private mode */ } }
  const b = $("theme");
  if (b) {
    b.textContent = t === "dark" ? "Light mode" : "Dark mode";
    b.setAttribute("aria-pressed", t === "dark" ? "true" : "false");
  }
}
(function initialTheme() {
  const asked = new URLSearchParams(location.search).get("theme");
  if (asked === "dark" || asked === "light") setTheme(asked, true);
  else setTheme(storedTheme() === "dark" ? "dark" : "light", false);
})();

// Fills `<nav id="nav">`: the links (the current page marked) and the theme toggle, which
// flips the theme, remembers it and writes it into the URL (`theme=`), so a shared link keeps it.
function buildNav() {
  const nav = $("nav");
  if (!nav) return;
  nav.replaceChildren();
  for (const [href, text] of NAV) {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    if (location.pathname === href) a.setAttribute("aria-current", "page");
    nav.append(a);
  }
  // A page outside the list (the run page) is named last, as the current page.
  if (nav.dataset.self) {
    const a = document.createElement("a");
    a.href = "";
    a.id = "self";
    a.setAttribute("aria-current", "page");
    a.textContent = nav.dataset.self;
    nav.append(a);
  }
  const b = document.createElement("button");
  b.id = "theme";
  b.type = "button";
  nav.append(b);
  setTheme(document.documentElement.dataset.theme || "light", false);
  b.addEventListener("click", () => {
    const t = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
    setTheme(t, true);
    const u = new URL(location.href);
    u.searchParams.set("theme", t);
    history.replaceState(history.state, "", u);
  });
  // The palette toggle (issue 42): vendor hues or high contrast, remembered and put in the URL;
  // the page reloads so that every chart takes it.
  const pb = document.createElement("button");
  pb.id = "palette";
  pb.type = "button";
  nav.append(pb);
  setPalette(currentPalette(), false);
  pb.addEventListener("click", () => {
    const p = currentPalette() === "contrast" ? "vendor" : "contrast";
    setPalette(p, true);
    const u = new URL(location.href);
    u.searchParams.set("palette", p);
    location.replace(u);
  });
}
document.addEventListener("DOMContentLoaded", buildNav);
