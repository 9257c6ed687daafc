// inferbench dashboard: the landing page (`/`). What the database holds, from
// /api/v1/overview: models and hardware (each linking to its chart), how many points, runs and
// batches over which dates, the latest batch (linking to its chart and run), and every view.
// Every value is set as text.
"use strict";

// A list item holding a link to `href` with `text`, then `tail` as plain text.
function linkItem(href, text, tail) {
  const li = document.createElement("li");
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  li.append(a);
  if (tail) li.append(document.createTextNode(tail));
  return li;
}

async function start() {
  let o;
  try {
    o = await getJson("/api/v1/overview");
  } catch (e) {
    status("error: " + e.message, true);
    return;
  }
  const range = o.first_date ? (o.first_date === o.last_date ? " on " + o.first_date
    : " from " + o.first_date + " to " + o.last_date) : "";
  $("summary").textContent = count(o.models.length, "model") + " on "
    + count(o.hardware.length, "hardware type") + ": " + count(o.points, "point")
    + (o.failed ? " (and " + o.failed + " failed)" : "") + " in " + count(o.runs, "run") + " of "
    + o.batches + (o.batches === 1 ? " batch" : " batches") + range + "; "
    + count(o.evals, "eval result") + ".";
  const models = $("models");
  models.replaceChildren(...o.models.map(m => linkItem("/inference?" + new URLSearchParams({ model: m.name }),
    m.name, " — " + count(m.points, "point"))));
  models.dataset.count = String(o.models.length);
  const hw = $("hardware");
  hw.replaceChildren(...o.hardware.map(h => linkItem("/inference?" + new URLSearchParams({ hardware: h.name }),
    h.name, " — " + count(h.points, "point"))));
  hw.dataset.count = String(o.hardware.length);
  const latest = $("latest");
  latest.replaceChildren();
  if (o.latest_batch) {
    const b = o.latest_batch;
    const chart = document.createElement("a");
    chart.id = "latest-chart";
    chart.href = "/inference?" + new URLSearchParams({ batch: b.batch_label, model: b.models[0] || "" });
    chart.textContent = b.batch_label;
    const run = document.createElement("a");
    run.id = "latest-run";
    run.href = "/run?id=" + encodeURIComponent(String(b.run_id));
    run.textContent = "its newest run";
    latest.append(chart, document.createTextNode(" — " + b.date + ", " + count(b.points, "point")
      + " of " + b.models.join(", ") + " · "), run);
    latest.dataset.batch = b.batch_label;
  } else {
    latest.textContent = "none yet";
  }
  const views = $("views");
  views.replaceChildren(...NAV.filter(([href]) => href !== "/")
    .map(([href, text, note]) => linkItem(href, text, " — " + note)));
  status(o.points || o.evals ? "" : noPointsNote({ points: o.points, evals: o.evals }));
}

document.addEventListener("DOMContentLoaded", start);
