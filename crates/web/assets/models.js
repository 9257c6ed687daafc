// inferbench dashboard: the Models page (`/models`). The support matrix from /api/v1/models:
// what has been measured per model × hardware × framework × precision, each row linking to its
// chart. Every value is set as text.
"use strict";

async function start() {
  let res;
  try {
    res = await getJson("/api/v1/models");
  } catch (e) {
    status("error: " + e.message, true);
    return;
  }
  const body = $("matrix").tBodies[0];
  body.replaceChildren();
  for (const r of res.rows) {
    const tr = addRow(body, [r.model, r.hardware, r.framework, r.precision, String(r.points),
      String(r.batches), String(r.sequences), r.latest || "-",
      r.public_points === 0 ? "local" : (r.public_points === r.points ? "InferenceX" : "local + InferenceX")]);
    const a = document.createElement("a");
    const q = new URLSearchParams({ model: r.model, hardware: r.hardware, framework: r.framework,
      precision: r.precision });
    a.href = "/inference?" + q;
    a.textContent = r.model;
    tr.firstChild.replaceChildren(a);
  }
  $("matrix").dataset.rows = String(res.rows.length);
  const models = new Set(res.rows.map(r => r.model)).size;
  if (res.rows.length) {
    status(count(models, "model") + ", " + count(res.rows.length, "configuration"));
    return;
  }
  // No configuration measured: what the database holds instead (trial 24: "Nothing measured
  // yet" beside stored evals).
  const options = await loadOptions();
  if (options) status(noPointsNote(options.stored) || "No configuration measured yet.");
}

document.addEventListener("DOMContentLoaded", start);
