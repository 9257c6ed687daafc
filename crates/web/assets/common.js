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

// Sets a <select> to `value` when it offers it (an unknown value keeps the first option, as
// InferenceX's selectors do).
// Values the URL asked for that the page's selectors do not offer, as `key=value`: the page
// falls back to its first option and says so ([`notAppliedNote`]; trial 23: History and TCO
// showed another model's data for `model=typo` without a word).
let notApplied = [];

// Selects `value` in `select` when it offers it; otherwise, for a named `key`, remembers that
// it was not applied.
function choose(select, value, key) {
  if (value && Array.from(select.options).some(o => o.value === value)) select.value = value;
  else if (value && key) notApplied.push(key + "=" + value);
}

// The status line's tail for [`notApplied`] values ("" when none).
function notAppliedNote() {
  return notApplied.length ? " — not in this database, so not applied: " + notApplied.join(", ") : "";
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
function groupColours(names) {
  const used = new Set();
  const out = new Map();
  for (const name of [...new Set(names)].sort()) {
    let h = 2166136261; // FNV-1a, 32 bit
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619) >>> 0;
    let slot = h % PALETTE.length;
    for (let k = 0; k < PALETTE.length && used.has(slot); k++) slot = (slot + 1) % PALETTE.length;
    used.add(slot);
    out.set(name, PALETTE[slot]);
  }
  return out;
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

// /api/v1/options, or null after saying why in the status line.
async function loadOptions() {
  try {
    return await getJson("/api/v1/options");
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
  $("controls").addEventListener("submit", ev => { ev.preventDefault(); notApplied = []; refresh(true); });
  for (const k of live) $(k).addEventListener("change", () => { notApplied = []; refresh(true); });
  window.addEventListener("popstate", () => { apply(); refresh(false); });
}

// The URL of this page with `params`, pushed as a history entry when `push` and it changed.
function pushUrl(params, push) {
  const q = params.toString();
  const url = location.pathname + (q ? "?" + q : "");
  if (push && url !== location.pathname + location.search) history.pushState(null, "", url);
}
