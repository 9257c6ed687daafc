// inferbench dashboard: the TCO calculator (`/tco?model=…&sequence=…&y=…&at=…`, and `batch=`,
// `since=`/`until=`: the run and date pickers). Per group, y
// (throughput, cost, tok/s/MW, J/token) at one target x from /api/v1/tco, as bars; your own
// $/GPU-hour and kW/GPU; click two bars for their ratio. Every value is set as text.
"use strict";

const FIELDS = ["model", "sequence", "mode", "x", "y", "at", "gpu_hour_cost", "gpu_kw", "batch"].concat(DATE_KEYS);
let options = null;
let picked = [];

// The view the URL asks for; keys the page has no control for are said not applied.
function readState() {
  return readUrl(FIELDS.concat(["invalid"]));
}

function apply(st) {
  fill($("model"), options.dimensions.model || []);
  fill($("sequence"), options.sequences || []);
  fillAxes(options, $("x"), $("y"));
  // Without one asked for, the sequence with the most points (as the Inference page opens).
  choose($("sequence"), options.defaults.sequence);
  notApplied = [];
  $("mode").value = "";
  for (const k of ["model", "sequence", "mode", "x", "y"]) choose($(k), st[k], k);
  for (const k of ["at", "gpu_hour_cost", "gpu_kw"]) $(k).value = st[k];
  fillBatches($("batch"), options.dimensions.batch, st.batch);
  setDates(st);
  $("invalid").checked = st.invalid === "1";
}

function apiQuery() {
  const p = new URLSearchParams();
  const v = k => $(k).value.trim();
  if (v("model")) p.set("model", v("model"));
  const m = /^(\d+)\/(\d+)$/.exec(v("sequence"));
  if (m) { p.set("isl", m[1]); p.set("osl", m[2]); } else if (v("sequence")) p.set("scenario", v("sequence"));
  for (const k of ["at", "gpu_hour_cost", "gpu_kw", "batch"].concat(DATE_KEYS)) if (v(k)) p.set(k, v(k));
  // Reverse mode (InferenceX's throughput → interactivity): the API reads the chosen x metric
  // at a value of the chosen y metric, i.e. the two swapped (the frontier is the same set).
  if (v("mode") === "reverse") {
    p.set("x", v("y") || options.defaults.y);
    p.set("y", v("x") || options.defaults.x);
  } else {
    for (const k of ["x", "y"]) if (v(k)) p.set(k, v(k));
  }
  // Invalid points count only when asked, as on every frontier.
  if ($("invalid").checked) p.set("include_invalid", "true");
  return p;
}

function ratio() {
  if (picked.length < 2) { $("ratio").textContent = picked.length ? "Pick a second row to compare." : ""; return; }
  const [a, b] = picked;
  const r = Math.max(a.value, b.value) / Math.min(a.value, b.value);
  const first = a.value >= b.value ? a : b, second = a.value >= b.value ? b : a;
  $("ratio").textContent = first.group + " / " + second.group + " = " + r.toFixed(2) + "×";
}

function draw(res) {
  gpuSecondsTable("gpu-seconds", res.groups);
  $("th-y").textContent = metricLabel(options, res.y);
  const body = $("bars").tBodies[0];
  body.replaceChildren();
  picked = [];
  ratio();
  const max = Math.max(...res.bars.map(b => b.value), 0);
  for (const b of res.bars) {
    const tr = addRow(body, [b.group, num(b.value), "", String(b.batches)]);
    const track = document.createElement("div");
    track.className = "bar-track";
    const bar = document.createElement("div");
    bar.className = "bar";
    bar.style.width = (max > 0 ? 100 * b.value / max : 0) + "%";
    track.append(bar);
    tr.children[2].append(track);
    tr.className = "pickable";
    tr.addEventListener("click", () => {
      const i = picked.indexOf(b);
      if (i >= 0) { picked.splice(i, 1); tr.classList.remove("picked"); }
      else { picked.push(b); tr.classList.add("picked"); if (picked.length > 2) picked.shift(); }
      for (const row of body.children) row.classList.toggle("picked", picked.some(p => p.group === row.firstChild.textContent));
      ratio();
    });
  }
  $("bars").dataset.bars = String(res.bars.length);
  $("status").dataset.invalid = String(res.invalid);
  const left = invalidNote(res.invalid, res.invalid_reason);
  if (res.note) { status(res.note + left + notAppliedNote()); return; }
  if (res.at === null) {
    status("no valid point of the selection lies on a frontier with a value of " + metricLabel(options, res.x)
      + ": nothing to read" + left + notAppliedNote());
    return;
  }
  status(count(res.bars.length, "group") + " at " + metricLabel(options, res.x) + " = " + res.at
    // The direction is y's, named with it (trial 26: after x it read as "lower interactivity").
    + "; " + metricLabel(options, res.y) + ": " + res.better + " is better"
    + (res.unreached.length ? "; " + count(res.unreached.length, "group") + (res.unreached.length === 1 ? " does" : " do") + " not reach it" : "")
    + (res.invalid_only.length ? " (" + count(res.invalid_only.length, "group") + " with only invalid points)" : "")
    + left + notAppliedNote());
}

async function refresh(push) {
  const p = new URLSearchParams();
  for (const k of FIELDS) if ($(k).value.trim()) p.set(k, $(k).value.trim());
  if ($("invalid").checked) p.set("invalid", "1");
  pushUrl(p, push);
  const none = noPointsNote(options.stored);
  if (none) {
    status(none + notAppliedNote());
    return;
  }
  // Without an x asked for, the API's default (issue 39: 35 tok/s/user where the valid points
  // reach it, else the middle of their range), written into the box.
  const given = $("at").value.trim();
  const q = apiQuery();
  if (!given) q.set("at", "auto");
  status("loading…");
  try {
    // The query the bars were read with (read by the browser tests).
    $("bars").dataset.query = q.toString();
    const res = await getJson("/api/v1/tco?" + q);
    if (!given && res.at !== null) $("at").value = String(res.at);
    atSlider(res, refresh);
    draw(res);
  } catch (e) {
    status("error: " + e.message, true);
  }
}

async function start() {
  options = await loadOptions();
  if (!options) return;
  apply(readState());
  // A new mode reads at a value in another metric's unit: the old "at" no longer applies.
  $("mode").addEventListener("change", () => { $("at").value = ""; });
  wireForm(() => apply(readState()), refresh, ["model", "sequence", "mode", "x", "y", "invalid", "batch"].concat(DATE_KEYS));
  await refresh(false);
}

document.addEventListener("DOMContentLoaded", start);
