// inferbench dashboard: the API page (`/openapi`). Every route of the read-only JSON API, from
// /api/v1/openapi.json (the one route table the server answers from): path (a link when it
// takes no path parameter), summary, media type and parameters. Every value is set as text.
"use strict";

async function start() {
  let doc;
  try {
    doc = await getJson("/api/v1/openapi.json");
  } catch (e) {
    status("error: " + e.message, true);
    return;
  }
  const body = $("routes").tBodies[0];
  body.replaceChildren();
  const paths = Object.entries(doc.paths || {});
  for (const [path, item] of paths) {
    const op = item.get || {};
    const params = op.parameters || [];
    const media = Object.keys(((op.responses || {})["200"] || {}).content || {}).join(", ");
    const tr = addRow(body, [path, op.summary || "", media, ""]);
    if (!path.includes("{")) {
      const a = document.createElement("a");
      a.href = path;
      a.textContent = path;
      tr.cells[0].replaceChildren(a);
    }
    // Each parameter's name, its description as the title; `*` marks a required one.
    tr.cells[3].replaceChildren(...params.flatMap((p, i) => {
      const c = document.createElement("code");
      c.textContent = p.name + (p.required ? "*" : "");
      c.title = p.description || "";
      return i ? [", ", c] : [c];
    }));
  }
  $("routes").dataset.rows = String(paths.length);
  status(count(paths.length, "route") + ", OpenAPI " + (doc.openapi || "?"));
}

document.addEventListener("DOMContentLoaded", start);
