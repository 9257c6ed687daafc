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
      run: v.rows[v.rows.length - 1].run_id, threshold: v.rows[0].threshold ?? null };
  }).sort((a, b) => (b.score ?? -1) - (a.score ?? -1));
}

function show() {
  const task = $("task").value, model = $("model").value;
  const p = new URLSearchParams();
  if (task) p.set("task", task);
  if (model) p.set("model", model);
  history.replaceState(null, "", location.pathname + (p.toString() ? "?" + p : ""));
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
  }
  $("bars").dataset.bars = String(list.length);
  status(all.rows.length
    ? count(list.length, "configuration") + (task ? " on " + task : "")
    : "No evals stored yet: run a sweep with evals (`matrix … --evals-only`, then `sweep` and `ingest`; examples/sim-evals.yaml), or ingest InferenceX's eval artifacts, agg_eval_all.json or its database dump.");
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
  show();
}

document.addEventListener("DOMContentLoaded", start);
