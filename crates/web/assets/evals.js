// inferbench dashboard: the Evals page (`/evals?task=…&model=…`). Accuracy scores per
// configuration from /api/v1/evals, as bars with ± one standard error, the latest date per
// configuration (several results of that date averaged). Every value is set as text.
"use strict";

let all = null;

// A configuration's label; with `withModel` (no model chosen) it starts with the model, so
// that two models' bars neither read alike nor merge (trial 19: rows did not name the model).
function label(r, withModel) {
  const par = r.dp_attention && r.tp > 1 ? "DEP" + r.tp : (r.ep > 1 ? "TEP" + r.tp : "TP" + r.tp);
  return (withModel ? r.model + " on " : "") + r.hardware + " (" + r.framework
    + (r.spec_decoding !== "none" ? ", " + r.spec_decoding : "")
    + ") " + r.precision + " " + par + (r.conc ? " C" + r.conc : "");
}

// One bar per configuration label: rows of its latest date, averaged.
function bars(rows, withModel) {
  const by = new Map();
  for (const r of rows) {
    const k = label(r, withModel);
    const cur = by.get(k);
    if (!cur || r.date > cur.date) by.set(k, { date: r.date, rows: [r] });
    else if (r.date === cur.date) cur.rows.push(r);
  }
  return Array.from(by, ([k, v]) => {
    const s = v.rows.map(r => r.score).filter(x => x !== null);
    const se = v.rows.map(r => r.score_se).filter(x => x !== null);
    const mean = a => a.length ? a.reduce((x, y) => x + y, 0) / a.length : null;
    return { label: k, date: v.date, n: v.rows.length, score: mean(s), se: mean(se),
      run: v.rows[v.rows.length - 1].run_id, conc: v.rows[v.rows.length - 1].conc,
      task: v.rows[v.rows.length - 1].task, threshold: v.rows[0].threshold ?? null };
  }).sort((a, b) => (b.score ?? -1) - (a.score ?? -1));
}

function show() {
  const task = $("task").value, model = $("model").value;
  syncUrl();
  const rows = all.rows.filter(r => (!task || r.task === task) && (!model || r.model === model));
  const list = bars(rows, !model);
  const body = $("bars").tBodies[0];
  body.replaceChildren();
  for (const b of list) {
    const tr = addRow(body, [b.label, b.score === null ? "-" : b.score.toFixed(3), "",
      b.se === null ? "-" : b.se.toFixed(3), String(b.n), b.date || "-", ""]);
    const cell = tr.children[2];
    const track = document.createElement("div");
    track.className = "bar-track";
    const bar = document.createElement("div");
    bar.className = "bar";
    const clamp = v => Math.max(0, Math.min(1, v));
    bar.style.width = (100 * clamp(b.score ?? 0)) + "%";
    track.append(bar);
    if (b.score !== null && b.se !== null) {
      const w = document.createElement("div");
      w.className = "whisker";
      const lo = clamp(b.score - b.se), hi = clamp(b.score + b.se);
      w.style.left = (100 * lo) + "%";
      w.style.width = (100 * (hi - lo)) + "%";
      track.append(w);
    }
    // The pass mark (InferenceX's threshold for the model), a tick on the track, which says
    // whether the score reaches it.
    if (b.threshold !== null) {
      const t = document.createElement("div");
      t.className = "threshold";
      t.title = "pass mark " + b.threshold.toFixed(2);
      t.style.left = (100 * clamp(b.threshold)) + "%";
      track.append(t);
      track.dataset.threshold = String(b.threshold);
      track.dataset.pass = String(b.score !== null && b.score >= b.threshold);
    }
    cell.append(track);
    const a = document.createElement("a");
    a.href = "/run?id=" + encodeURIComponent(b.run);
    a.textContent = "run " + b.run;
    tr.children[6].append(a);
    // A click opens the bar's eval (its newest result) in the samples drawer.
    tr.classList.add("pickable");
    tr.dataset.run = String(b.run);
    tr.dataset.conc = String(b.conc);
    tr.addEventListener("click", e => {
      if (e.target.closest("a")) return;
      openDrawer({ run: b.run, task: b.task, conc: b.conc, label: b.label }, null);
    });
  }
  $("bars").dataset.bars = String(list.length);
  status(all.rows.length
    ? count(list.length, "configuration") + (task ? " on " + task : "")
    : "No evals stored yet: run a sweep with evals (`matrix … --evals-only`, then `sweep` and `ingest`; examples/sim-evals.yaml), or ingest InferenceX's eval artifacts, agg_eval_all.json or its database dump.");
}

// The samples drawer (issue 42): one page of an eval's scored questions from
// /api/v1/evals/samples, and one question in full. `drawer` is {run, task, conc, label}.
const PAGE = 50;
let drawer = null, drawerOffset = 0, drawerDoc = null;

// The page's state in its URL: task, model, and the open drawer (`drawer=RUN:CONC`, `doc=ID`).
function syncUrl() {
  const p = new URLSearchParams();
  if ($("task").value) p.set("task", $("task").value);
  if ($("model").value) p.set("model", $("model").value);
  if (drawer) {
    p.set("drawer", drawer.run + ":" + drawer.conc);
    if ($("drawer-filter").value) p.set("correct", $("drawer-filter").value);
    if (drawerDoc !== null) p.set("doc", String(drawerDoc));
  }
  history.replaceState(null, "", location.pathname + (p.toString() ? "?" + p : ""));
}

function correctText(c) { return c === null ? "unknown" : (c ? "correct" : "wrong"); }

function showSample(x) {
  drawerDoc = x.doc_id;
  $("sample").hidden = false;
  $("sample").dataset.doc = String(x.doc_id);
  $("sample-title").textContent = "question " + x.doc_id;
  $("sample-question").textContent = x.question;
  $("sample-response").textContent = x.response;
  $("sample-extracted").textContent = x.extracted;
  $("sample-target").textContent = x.target;
  $("sample-correct").textContent = correctText(x.correct);
  $("sample-error").textContent = x.error || "-";
  for (const tr of $("samples").tBodies[0].rows) {
    tr.classList.toggle("picked", tr.dataset.doc === String(x.doc_id));
  }
  syncUrl();
}

async function loadSamples() {
  const d = drawer;
  const p = new URLSearchParams({ run: String(d.run), task: d.task, conc: String(d.conc),
    offset: String(drawerOffset), limit: String(PAGE) });
  if ($("drawer-filter").value) p.set("correct", $("drawer-filter").value);
  let res;
  try {
    res = await getJson("/api/v1/evals/samples?" + p);
  } catch (e) {
    $("drawer-status").textContent = "error: " + e.message;
    return;
  }
  if (d !== drawer) return; // another eval was opened meanwhile
  const body = $("samples").tBodies[0];
  body.replaceChildren();
  for (const x of res.rows) {
    const tr = addRow(body, [x.question, x.extracted, x.target, correctText(x.correct)]);
    tr.classList.add("pickable");
    tr.dataset.doc = String(x.doc_id);
    tr.children[3].className = x.correct === null ? "" : (x.correct ? "right" : "wrong");
    tr.addEventListener("click", () => showSample(x));
  }
  const dr = $("drawer");
  dr.dataset.total = String(res.total);
  dr.dataset.rows = String(res.rows.length);
  $("drawer-page").textContent = res.total
    ? (res.offset + 1) + "–" + (res.offset + res.rows.length) + " of " + res.total : "";
  $("drawer-prev").disabled = res.offset === 0;
  $("drawer-next").disabled = res.offset + res.rows.length >= res.total;
  $("drawer-status").textContent = res.total ? ""
    : "No questions stored for this eval (its eval set had no samples file, or was ingested before they were kept: ingest it again).";
  const want = res.rows.find(x => x.doc_id === drawerDoc) || res.rows[0];
  if (want) showSample(want); else { $("sample").hidden = true; drawerDoc = null; syncUrl(); }
}

function openDrawer(d, doc) {
  drawer = d;
  drawerOffset = 0;
  drawerDoc = doc;
  const dr = $("drawer");
  dr.hidden = false;
  dr.dataset.run = String(d.run);
  dr.dataset.conc = String(d.conc);
  $("drawer-title").textContent = (d.label || ("run " + d.run)) + " · " + d.task;
  syncUrl();
  loadSamples();
}

function closeDrawer() {
  drawer = null;
  drawerDoc = null;
  $("drawer").hidden = true;
  syncUrl();
}

function wireDrawer() {
  $("drawer-close").addEventListener("click", closeDrawer);
  $("drawer-filter").addEventListener("change", () => { drawerOffset = 0; drawerDoc = null; loadSamples(); });
  $("drawer-prev").addEventListener("click", () => { drawerOffset = Math.max(0, drawerOffset - PAGE); drawerDoc = null; loadSamples(); });
  $("drawer-next").addEventListener("click", () => { drawerOffset += PAGE; drawerDoc = null; loadSamples(); });
  document.addEventListener("keydown", e => { if (e.key === "Escape" && drawer) closeDrawer(); });
}

// `drawer=RUN:CONC` (and `doc=ID`, `correct=`) from the URL: the drawer opened on that eval.
function drawerFromUrl(q) {
  const m = /^(\d+):(\d+)$/.exec(q.get("drawer") || "");
  if (!m) return;
  const run = Number(m[1]), conc = Number(m[2]);
  const row = all.rows.find(r => r.run_id === run && r.conc === conc
    && (!$("task").value || r.task === $("task").value));
  if (!row) return;
  const c = q.get("correct");
  if (c === "true" || c === "false") $("drawer-filter").value = c;
  const doc = /^\d+$/.test(q.get("doc") || "") ? Number(q.get("doc")) : null;
  openDrawer({ run, task: row.task, conc, label: label(row, !$("model").value) }, doc);
}

async function start() {
  try {
    all = await getJson("/api/v1/evals");
  } catch (e) {
    status("error: " + e.message, true);
    return;
  }
  const models = Array.from(new Set(all.rows.map(r => r.model))).sort();
  fill($("task"), all.tasks);
  fill($("model"), models, null, true);
  const q = new URLSearchParams(location.search);
  choose($("task"), q.get("task"));
  choose($("model"), q.get("model"));
  for (const k of ["task", "model"]) $(k).addEventListener("change", show);
  wireDrawer();
  show();
  drawerFromUrl(q);
}

document.addEventListener("DOMContentLoaded", start);
