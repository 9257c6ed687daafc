// inferbench dashboard: a run's page (`/run?id=N[&point=M]`). Provenance, the run's points,
// latency distributions (TTFT, TPOT, ITL, E2EL) of one point from its stored request records,
// its server-metric gauges and power samples, and the files kept with the run. Every value is
// set as text.
"use strict";

function fmt(v, digits) {
  if (v === null || v === undefined || Number.isNaN(v)) return "-";
  return Number(v).toFixed(digits);
}

function provenance(run, hasPoints) {
  const body = $("prov").tBodies[0];
  body.replaceChildren();
  const when = run.start_unix ? new Date(run.start_unix * 1000).toISOString() : run.date;
  for (const [k, v] of [["run id", String(run.id)], ["batch", run.batch], ["date", when],
    ["source", run.source_kind + " · " + run.source_path], ["result file", run.result_filename],
    ["inferbench", run.inferbench_version + (run.git_sha ? " (" + run.git_sha.slice(0, 12) + ")" : "")],
    ["engine", run.engine_version], ["host", run.host]]) {
    if (v) addRow(body, [k, v]);
  }
  // A `bench --db` or `ingest --set` run has no job.json (its identity came from --set and is
  // in each point's group above): say so instead of showing `{}`.
  const job = run.job && typeof run.job === "object" ? run.job : {};
  $("job").textContent = Object.keys(job).length
    ? JSON.stringify(job, null, 2)
    : "none: this run was not started from a matrix job (sweep or job), so no job.json was kept;"
      + " its identity (hardware, framework, precision) came from the files or from --set"
      + (hasPoints ? " and is in each point's group above" : " when it was ingested");
}

function points(pts, batch, runId, x) {
  const body = $("points").tBodies[0];
  body.replaceChildren();
  // The frontier's x: median interactivity, or AgentX's p90 E2E-normalized one for an agentic
  // batch (trial 26: the agentic page showed the median, which no agentic frontier uses).
  const xKey = x ? x.key : "median_intvty";
  if (x) $("x-head").textContent = x.label_with_unit;
  // The batch's points (a sweep's concurrencies), this run's marked; others link to their run.
  for (const p of batch) {
    const m = p.metrics || {};
    const state = p.error ? "failed: " + p.error
      // This batch's own frontier, which `report` (every batch of the group at once) may not
      // share (trial 25: "frontier" here, no `*` there).
      : (p.valid ? (p.frontier ? "on this batch's frontier" : "")
        // Why, as `report --columns conc,error` says it (issue 39: "invalid" alone).
        : "invalid: " + (p.invalid_reason || "no reason stored with this point"));
    addRow(body, [p.group, p.parallelism, String(p.conc), fmt(m.tput_per_gpu, 1),
      fmt(m[xKey], 1), fmt(m.p99_ttft, 3), fmt(m.median_e2el, 3),
      // What the point cost (issue 42): "-" when its runner recorded none (imports).
      fmt(p.gpu_seconds, 1), state]);
    const first = body.lastChild.firstChild;
    if (p.run_id === runId) {
      body.lastChild.className = "this-run";
    } else {
      const a = document.createElement("a");
      a.href = "/run?id=" + encodeURIComponent(p.run_id) + "&point=" + encodeURIComponent(p.point_id);
      a.textContent = first.textContent;
      first.replaceChildren(a);
    }
  }
  const sel = $("point");
  sel.replaceChildren();
  for (const p of pts) {
    const o = document.createElement("option");
    o.value = String(p.point_id);
    o.textContent = "conc " + p.conc + " (" + p.parallelism + ")";
    sel.append(o);
  }
}

function files(run, list) {
  const ul = $("files");
  ul.replaceChildren();
  for (const f of list) {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = f.url;
    a.textContent = f.name;
    li.append(a, document.createTextNode(" (" + f.size + " bytes)"));
    ul.append(li);
  }
  if (!list.length) ul.textContent = "none";
}

// Labels of evenly spaced ticks `splits`, each with the decimals its spacing needs to be
// written exactly (a step of 0.00025 needs 5; at most 8), so that none reads alike or rounded
// (trial 23: 7.0477 for 7.04775).
function tickLabels(splits) {
  const step = splits.length > 1 ? Math.abs(splits[1] - splits[0]) : 0;
  let decimals = 0;
  while (step > 0 && decimals < 8) {
    const scaled = step * 10 ** decimals;
    if (Math.abs(scaled - Math.round(scaled)) < 1e-6 * Math.max(1, scaled)) break;
    decimals++;
  }
  return splits.map(v => v.toFixed(decimals));
}

function histogram(host, name, d) {
  const box = document.createElement("div");
  host.append(box);
  if (!d.count) {
    box.textContent = name + ": no sample";
    return;
  }
  const xs = d.histogram.map(b => (b[0] + b[1]) / 2);
  const ys = d.histogram.map(b => b[2]);
  // The bins cover p0–p99; what lies above p99 is one more bar after them (issue 39: one
  // 1.6 s stall put every other interval into the first bar of 0–1,600 ms).
  const over = d.overflow;
  if (over) {
    const last = d.histogram[d.histogram.length - 1];
    const w = Math.max(last[1] - last[0], Math.abs(last[1]) * 0.05 || 1);
    xs.push(last[1] + w / 2);
    ys.push(over.count);
    box.dataset.overflow = String(over.count);
  }
  new uPlot({
    width: 360, height: 220,
    title: name + " (ms): p50 " + fmt(d.p50, 1) + ", p90 " + fmt(d.p90, 1) + ", p99 " + fmt(d.p99, 1)
      + ", n " + d.count
      + (over ? "; last bar: " + over.count + " above p99, up to " + fmt(over.to, 1) + " ms" : ""),
    legend: { show: false },
    // Half a bin of margin each side, so the first and last bars are whole.
    scales: { x: { time: false, range: (u, lo, hi) => {
      const w = xs.length > 1 ? (hi - lo) / (xs.length - 1) : Math.max(1, lo * 0.1);
      return [lo - w, hi + w];
    } } },
    // Tick labels with as many decimals as their spacing needs (trial 22: a narrow TPOT
    // histogram read "7.049  7.049  7.049").
    axes: [{ label: name + " (ms)", values: (u, splits) => {
      const labels = tickLabels(splits);
      box.dataset.xTicks = labels.join(" ");
      return labels;
    } }, { label: name === "ITL" ? "intervals" : "requests", size: 60 }],
    series: [{}, { stroke: "#0072b2", fill: "#0072b255", paths: uPlot.paths.bars({ size: [0.9] }),
      points: { show: false } }],
  }, [xs, ys], box);
}

async function latencies(pointId) {
  const host = $("lat");
  host.replaceChildren();
  try {
    const d = await getJson("/api/v1/points/" + pointId + "/latencies");
    $("lat-note").textContent = d.records + " stored request records"
      + (d.unreadable ? " (" + d.unreadable + " unreadable)" : "")
      + "; counted: profile phase, successful (as the metrics count them).";
    histogram(host, "TTFT", d.ttft);
    histogram(host, "TPOT", d.tpot);
    histogram(host, "ITL", d.itl);
    histogram(host, "E2EL", d.e2el);
  } catch (e) {
    $("lat-note").textContent = e.message;
  }
  await why(pointId);
  await serverMetrics(pointId);
  try {
    const p = await getJson("/api/v1/points/" + pointId + "/power");
    const host2 = $("power");
    host2.replaceChildren();
    if (!p.samples.length) { $("power-note").textContent = "no power samples for this point"; return; }
    const gpus = [...new Set(p.samples.map(s => s.gpu))];
    const t0 = Math.min(...p.samples.map(s => s.t_unix));
    const series = [{}], data = [null];
    gpus.forEach((g, i) => {
      const ss = p.samples.filter(s => s.gpu === g);
      series.push({ label: "GPU " + g, stroke: ["#0072b2", "#d55e00", "#009e73", "#cc79a7"][i % 4] });
      data.push([ss.map(s => s.t_unix - t0), ss.map(s => s.power_w)]);
    });
    $("power-note").textContent = p.samples.length + " samples from " + gpus.length + " GPU(s)";
    new uPlot({ mode: 2, width: 760, height: 260, scales: { x: { time: false } },
      axes: [{ label: "time since first sample (s)" }, { label: "power (W)" }], series }, data, host2);
  } catch (e) {
    $("power-note").textContent = e.message;
  }
}

// Why the point sits where it does (issue 42): the server's state (running, waiting, KV-cache
// usage, prefix-cache hit rate, preemptions) beside the client's requests in flight on one time
// axis (s since the profile's start), the profile window shaded and the warmup hatched, with
// the client's self-check and the point's validity verdict above it.
const WHY_COLOURS = { client: "#1d2330", running: "#0072b2", waiting: "#d55e00", preemptions: "#cc79a7",
  kv_usage: "#009e73", prefix_hit_rate: "#e69f00" };
const WHY_LABELS = { running: "server: requests running", waiting: "server: requests waiting",
  preemptions: "server: preemptions since the first scrape", kv_usage: "server: KV-cache usage (fraction)",
  prefix_hit_rate: "server: prefix-cache hit rate (fraction)" };

function verdictText(v) {
  if (v.error) return "verdict: failed — " + v.error;
  if (v.valid) return "verdict: valid — counted on frontiers";
  return "verdict: invalid — " + (v.invalid_reason || "no reason stored") + " (kept off frontiers unless invalid points are included)";
}

function selfCheckText(c, client) {
  const inFlight = "client: at most " + client.max_in_flight + " requests in flight"
    + (client.mean_in_flight === null || client.mean_in_flight === undefined ? "" : ", " + fmt(client.mean_in_flight, 2) + " on average over the profile");
  if (!c) return inFlight + "; no client self-check stored with this point (AgentX replays and imports have none)";
  return inFlight + "; self-check: requested concurrency " + c.requested + ", held "
    + fmt(100 * c.held_ratio, 1) + " % of it, client-bound: " + (c.client_bound ? "YES (the client, not the server, limited the run)" : "no")
    + " (" + fmt(c.cpu_cores, 2) + " of " + c.cores_available + " cores busy)";
}

async function why(pointId) {
  const host = $("why");
  host.replaceChildren();
  try {
    const d = await getJson("/api/v1/points/" + pointId + "/timeline");
    $("why-verdict").textContent = verdictText(d.verdict);
    $("why-verdict").dataset.valid = String(d.verdict.valid);
    $("why-check").textContent = selfCheckText(d.self_check, d.client);
    $("why-check").dataset.clientBound = d.self_check ? String(d.self_check.client_bound) : "unknown";
    // The client's in-flight count as steps (each change drawn at its instant).
    const cx = [], cy = [];
    let prev = 0;
    for (const [t, n] of d.client.in_flight) { cx.push(t, t); cy.push(prev, n); prev = n; }
    const series = [{}, { label: "client: requests in flight", stroke: WHY_COLOURS.client, width: 2,
      scale: "n", points: { show: false } }];
    const data = [null, [cx, cy]];
    for (const s of d.server) {
      const frac = s.unit && s.unit.startsWith("fraction");
      series.push({ label: WHY_LABELS[s.key] || s.name, stroke: WHY_COLOURS[s.key] || "#888",
        scale: frac ? "frac" : "n", dash: frac ? [6, 3] : undefined,
        points: { show: s.samples.length < 3, size: 6 } });
      data.push([s.samples.map(p => p[0]), s.samples.map(p => p[1])]);
    }
    host.dataset.server = d.server.map(s => s.key).join(",");
    host.dataset.clientSteps = String(d.client.in_flight.length);
    host.dataset.profileWindow = d.profile_window ? d.profile_window.map(v => fmt(v, 3)).join(",") : "";
    host.dataset.warmup = d.warmup ? d.warmup.map(v => fmt(v, 3)).join(",") : "";
    const band = (u, span, fill) => {
      if (!span) return;
      const x0 = u.valToPos(span[0], "x", true), x1 = u.valToPos(span[1], "x", true);
      u.ctx.save();
      u.ctx.fillStyle = fill;
      u.ctx.fillRect(Math.min(x0, x1), u.bbox.top, Math.abs(x1 - x0), u.bbox.height);
      u.ctx.restore();
    };
    const xs = cx.concat(...d.server.map(s => s.samples.map(p => p[0])));
    if (d.profile_window) xs.push(...d.profile_window);
    if (d.warmup) xs.push(...d.warmup);
    const lo = Math.min(...xs, 0), hi = Math.max(...xs, 1e-3);
    // The requests axis from 0 to the most of any count drawn on it (at least 1).
    const counts = cy.concat(...d.server.filter(s => !(s.unit || "").startsWith("fraction")).map(s => s.samples.map(p => p[1])));
    const nMax = Math.max(1, ...counts.filter(Number.isFinite)) * 1.1;
    new uPlot({ mode: 2, width: 1100, height: 320,
      title: "client in flight and server state, s since the profile's start"
        + (d.clock === "modelled" ? " (modelled time; server scrapes × " + d.time_scale + ")" : ""),
      scales: { x: { time: false, range: [lo, hi] }, n: { range: [0, nMax] }, frac: { range: [0, 1] } },
      axes: [{ label: "s since the profile's start" }, { scale: "n", label: "requests" },
        { scale: "frac", side: 1, label: "fraction (KV usage, prefix hits)", grid: { show: false } }],
      series,
      hooks: { drawClear: [u => { band(u, d.profile_window, "#0072b222"); band(u, d.warmup, "#e69f0033"); }] },
    }, data, host);
    $("why-note").textContent = "shaded blue: the profile window (what the metrics count); shaded orange: the warmup"
      + (d.server.length ? "" : "; no server state stored for this point (the server had no /metrics, or it was not scraped)")
      + ". Times on the records' clock" + (d.clock === "modelled" ? ", the sim's modelled time: its wall-clock scrapes are stretched by the time scale, so they line up only roughly." : ".");
  } catch (e) {
    $("why-note").textContent = e.message;
  }
}

// The point's server-metric gauges (queue depths, KV-cache use) over the run, one small chart
// per metric name (a line per label set).
async function serverMetrics(pointId) {
  const host = $("server");
  host.replaceChildren();
  try {
    const d = await getJson("/api/v1/points/" + pointId + "/server_metrics");
    // The server's settings (the sim's time_scale) once, with their units, not as series.
    const settings = (d.settings || []).map(s => s.name + " = " + num(s.value) + (s.unit ? " (" + s.unit + ")" : ""));
    const settingsNote = settings.length ? "; settings: " + settings.join(", ") : "";
    host.dataset.settings = String(settings.length);
    if (!d.series.length) {
      $("server-note").textContent = "no server-metric gauges for this point (the server had no /metrics, or it was not scraped)" + settingsNote;
      return;
    }
    const t0 = Math.min(...d.series.map(s => s.samples.length ? s.samples[0][0] : Infinity));
    const names = [...new Set(d.series.map(s => s.name))];
    for (const name of names) {
      const ss = d.series.filter(s => s.name === name);
      const series = [{}], data = [null];
      ss.forEach((s, i) => {
        series.push({ label: s.labels || name, stroke: colour(i), points: { show: false },
          dot: s.samples.length < 3 ? 3 : 0 });
        data.push([s.samples.map(p => p[0] - t0), s.samples.map(p => p[1])]);
      });
      const box = document.createElement("div");
      host.append(box);
      const unit = ss[0].unit;
      new uPlot({ mode: 2, width: 420, height: 200, title: name + (unit ? " (" + unit + ")" : ""), legend: { show: false },
        scales: { x: { time: false } },
        // Scrapes are timed by this machine's clock, also for the sim's modelled (rescaled)
        // runs, whose latencies above are modelled (trial 20: nothing said so).
        axes: [{ label: "time since first scrape (s, this machine's wall clock)" },
          { label: unit || "value (unit not given by the server)", size: 60 }], series,
        hooks: { draw: [dotsHook(box)] } }, data, box);
    }
    host.dataset.series = String(d.series.length);
    $("server-note").textContent = count(names.length, "gauge") + " scraped from the server's /metrics during the run"
      + settingsNote;
  } catch (e) {
    $("server-note").textContent = e.message;
  }
}

// The AgentX explorer (issue 42): for each agentic point of the run, one row per session tree
// (a play of a trace on a lane) on the point's shared timeline (s since its first send); in a
// row one lane per stream, the main agent first and its sub-agents indented under it. Each
// request is a bar from send to end: orange until its first token (TTFT), blue after; under it
// its prompt's blocks already cached earlier in the session (green, theoretical hit) vs new
// (grey). Every value is set as text.
const SVG_NS = "http://www.w3.org/2000/svg";
function svgEl(name, attrs) {
  const el = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

function explorer(points) {
  const host = $("explorer");
  host.replaceChildren();
  const total = points.reduce((n, p) => n + p.sessions.length, 0);
  host.dataset.sessions = String(total);
  host.dataset.points = String(points.length);
  if (!points.length) { hideSection("explorer"); return; }
  const key = document.createElement("p");
  key.className = "explorer-key";
  for (const [cls, text] of [["#e69f00", "send → first token (TTFT)"], ["#0072b2", "first token → end"],
    ["#009e73", "prompt blocks already cached (theoretical hit)"], ["#b8bcc8", "new blocks"],
    ["#b00020", "failed"], ["#d55e00", "▼ sent early by an idle-gap cap"]]) {
    const sw = document.createElement("span");
    sw.style.background = cls;
    key.append(sw, document.createTextNode(text));
  }
  host.append(key);
  const W = 1100, LANE = 16;
  for (const p of points) {
    const head = document.createElement("div");
    head.className = "explorer-point";
    const tEnd = Math.max(1e-9, ...p.sessions.map(s => s.end_s));
    const nReq = p.sessions.reduce((n, s) => n + s.requests, 0);
    head.textContent = "point " + p.point_id + " (lanes " + p.conc + "): " + count(p.sessions.length, "session")
      + ", " + count(nReq, "request") + " over " + fmt(tEnd, 1) + " s"
      + (p.unattributed ? "; " + p.unattributed + " records without a session" : "");
    host.append(head);
    const x = t => (t / tEnd) * (W - 10) + 5;
    for (const s of p.sessions) {
      const row = document.createElement("div");
      row.className = "session-row";
      row.dataset.play = String(s.play);
      row.dataset.streams = String(s.streams.length);
      const label = document.createElement("div");
      label.className = "session-label";
      const lines = ["play " + s.play + " · " + s.trace_id + " · lane " + s.lane + (s.pass ? " · pass " + s.pass : "") + " · " + count(s.requests, "request")];
      // Each sub-agent indented under the stream that spawned it (depth: 1 under the main agent).
      for (const st of s.streams) {
        lines.push(st.parent ? "  ".repeat(st.depth || 1) + "↳ sub-agent " + st.agent : "main agent");
      }
      label.textContent = lines.join("\n");
      // The label's first line (the play) over an empty band, then one 16 px line per stream
      // beside its lane.
      const h = LANE * (s.streams.length + 1) + 4;
      const svg = svgEl("svg", { width: W, height: h, viewBox: "0 0 " + W + " " + h });
      s.streams.forEach((st, i) => {
        const y = (i + 1) * LANE + 3;
        for (const r of st.requests) {
          const x0 = x(r.send_s), x2 = Math.max(x(r.end_s), x0 + 1);
          const xt = r.ttft_s === null ? x2 : Math.min(Math.max(x(r.ttft_s), x0), x2);
          // Primers and warmups (before the profile window) drawn pale.
          const g = svgEl("g", { "class": r.kind === "profile" ? "req" : "req warm" });
          const title = svgEl("title", {});
          title.textContent = (st.parent ? "sub-agent " + st.agent : "main agent") + " turn " + r.turn
            + " (" + r.kind + ")\nsend " + fmt(r.send_s, 3) + " s, first token "
            + (r.ttft_s === null ? "-" : fmt(r.ttft_s, 3) + " s (TTFT " + fmt(r.ttft_s - r.send_s, 3) + " s)")
            + ", end " + fmt(r.end_s, 3) + " s\nprompt blocks: " + r.hit_blocks + " cached, " + r.new_blocks + " new"
            + (r.gap_capped_s > 0 ? "\nidle-gap cap: sent " + fmt(r.gap_capped_s, 3) + " s before its recorded gap" : "")
            + (r.success ? "" : "\nfailed: " + (r.error || "unknown"));
          g.append(title);
          if (!r.success) {
            g.append(svgEl("rect", { "class": "failed", x: x0, y: y, width: x2 - x0, height: 8 }));
          } else {
            g.append(svgEl("rect", { "class": "wait", x: x0, y: y, width: Math.max(xt - x0, 0.5), height: 8 }));
            if (x2 > xt) g.append(svgEl("rect", { "class": "decode", x: xt, y: y, width: x2 - xt, height: 8 }));
          }
          const blocks = r.hit_blocks + r.new_blocks;
          if (blocks > 0) {
            const wHit = (x2 - x0) * r.hit_blocks / blocks;
            g.append(svgEl("rect", { "class": "hit", x: x0, y: y + 9, width: wHit, height: 3 }));
            g.append(svgEl("rect", { "class": "new", x: x0 + wHit, y: y + 9, width: x2 - x0 - wHit, height: 3 }));
          }
          // Where an idle-gap cap applied: a mark at the send (its title gives the seconds).
          if (r.gap_capped_s > 0) {
            g.append(svgEl("path", { "class": "capped", d: "M" + x0 + " " + (y - 3) + "l-3 -3h6z" }));
          }
          svg.append(g);
        }
      });
      row.append(label, svg);
      host.append(row);
    }
    // The shared axis, once per point, under the lanes (an empty label beside it).
    const axisRow = document.createElement("div");
    axisRow.className = "session-row explorer-axis";
    const spacer = document.createElement("div");
    spacer.className = "session-label";
    const axis = svgEl("svg", { width: W, height: 18 });
    axisRow.append(spacer, axis);
    for (let i = 0; i <= 5; i++) {
      const t = svgEl("text", { x: x(tEnd * i / 5), y: 12, "text-anchor": i === 0 ? "start" : i === 5 ? "end" : "middle" });
      t.textContent = fmt(tEnd * i / 5, 1) + " s";
      axis.append(t);
    }
    host.append(axisRow);
  }
  $("explorer-note").textContent = count(total, "session") + " of " + count(points.length, "agentic point")
    + "; times in s since each point's first send (the run clock)."
    + " Hover a bar for its times and blocks.";
}

/** The run's accuracy evals (GSM8K strict and flexible exact match, fractions). */
function evals(rows) {
  const body = $("evals").querySelector("tbody");
  body.replaceChildren();
  if (!rows.length) {
    $("evals-note").textContent = "no accuracy eval stored with this run";
    return;
  }
  const f = x => (x === null || x === undefined) ? "–" : Number(x).toFixed(4);
  for (const e of rows) {
    const tr = document.createElement("tr");
    for (const v of [e.task, e.conc, f(e.score), f(e.score_se), f(e.metrics.em_flexible),
                     e.metrics.n_eff === undefined ? "–" : e.metrics.n_eff]) {
      const td = document.createElement("td");
      td.textContent = String(v);
      tr.append(td);
    }
    body.append(tr);
  }
  $("evals").hidden = false;
  $("evals-note").textContent = count(rows.length, "eval") + " (exact match, fraction 0–1)";
}

// Hides the section holding element `id`: its `h3` heading and everything up to the next one.
function hideSection(id) {
  let h = $(id);
  while (h && h.tagName !== "H3") h = h.previousElementSibling;
  for (let el = h; el && (el === h || el.tagName !== "H3"); el = el.nextElementSibling) el.hidden = true;
}

async function start() {
  const q = new URLSearchParams(location.search);
  const id = q.get("id") || "";
  $("self").href = location.pathname + location.search;
  try {
    // Trial 23: `/run` alone said "no such page or API route".
    if (!id) throw new Error("no run named: open a run from a point of the Inference page, or /run?id=N");
    const r = await getJson("/api/v1/runs/" + encodeURIComponent(id));
    // The sections, hidden until now (run.html; trial 24: headings without content under an
    // error); the evals table shows when there are evals.
    for (const el of document.querySelectorAll("main > [hidden]")) if (el.id !== "evals") el.hidden = false;
    $("title").textContent = "Run " + r.run.id + " · " + (r.run.batch_label || r.run.batch);
    provenance(r.run, r.batch_points.length > 0);
    points(r.points, r.batch_points, r.run.id, r.x);
    // A run without points (an eval-only run) has no point sections to show (trial 20: empty
    // tables, an empty point selector, headings with nothing under them).
    if (!r.points.length) for (const id of ["points", "lat", "why", "power", "server"]) hideSection(id);
    files(r.run, r.artifacts);
    evals(r.evals || []);
    explorer(r.sessions || []);
    status(count(r.points.length, "point") + " in this run, " + r.batch_points.length
      + " in its batch, " + count(r.artifacts.length, "file"));
    const sel = $("point");
    const want = q.get("point");
    if (want && Array.from(sel.options).some(o => o.value === want)) sel.value = want;
    sel.addEventListener("change", () => {
      const u = new URLSearchParams(location.search);
      u.set("point", sel.value);
      history.replaceState(null, "", location.pathname + "?" + u.toString());
      latencies(sel.value);
    });
    if (sel.value) await latencies(sel.value);
  } catch (e) {
    status("error: " + e.message, true);
    // No run: no empty sections under the error (trial 6: /run?id=abc; run.html starts with
    // them hidden, and an error after they showed hides them again).
    for (const el of document.querySelectorAll("main > *")) {
      if (el.id !== "title" && el.id !== "status") el.hidden = true;
    }
  }
}

document.addEventListener("DOMContentLoaded", start);
