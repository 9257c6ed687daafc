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
