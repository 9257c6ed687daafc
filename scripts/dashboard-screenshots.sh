#!/usr/bin/env bash
# Refreshes docs/dashboard/*.png (issue 42): a screenshot of each dashboard page at 1600×1000, so
# a reader sees the dashboard without running it. Builds a demo database in a temporary
# directory with `quickstart` and `quickstart --agentic --fast` (the in-process sim: no GPU, no
# network), serves it read-only on a free loopback port, drives headless Chromium (Debian
# `chromium` through `chromedriver`, scripts/setup/chromium.sh) over each page with a private
# profile, and stops what it started (the server and chromedriver, by their PIDs) and removes
# the directory on exit, also on failure.
# Usage (from the repository root): scripts/dashboard-screenshots.sh [OUT_DIR]
#   INFERBENCH=path/to/inferbench  the binary to use (default: target/debug/inferbench, built
#                                  with `cargo build -p inferbench` when missing)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-docs/dashboard}
BIN=${INFERBENCH:-target/debug/inferbench}
CHROMIUM=${INFERBENCH_TEST_CHROMIUM:-$(command -v chromium || true)}
[ -n "$CHROMIUM" ] || { echo "no chromium: scripts/setup/chromium.sh installs it" >&2; exit 2; }
[ -x "$BIN" ] || cargo build -q -p inferbench --bin inferbench
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/dashboard-screenshots.XXXXXX)
SERVE_PID=
cleanup() {
  if [ -n "$SERVE_PID" ]; then kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

DB=$TMP/demo.db
"$BIN" quickstart --out "$TMP/qs" --db "$DB" >"$TMP/quickstart.log" 2>&1
"$BIN" quickstart --agentic --fast --out "$TMP/qs-agentic" --db "$DB" >"$TMP/agentic.log" 2>&1

"$BIN" serve --db "$DB" --port 0 2>"$TMP/serve.err" &
SERVE_PID=$!
# Its first line names the landing page: `… read-only at http://127.0.0.1:PORT/ (Ctrl-C stops)`.
BASE=
for _ in $(seq 1 100); do
  BASE=$(sed -n 's|.* read-only at \(http://[^/]*\)/ .*|\1|p' "$TMP/serve.err" | head -n 1)
  [ -n "$BASE" ] && break
  sleep 0.1
done
[ -n "$BASE" ] || { cat "$TMP/serve.err" >&2; echo "serve did not start" >&2; exit 1; }

# A run of each kind: the plain quickstart's conc-4 point and the agentic one with 8 lanes.
run_of() {
  sqlite3 "$DB" "SELECT p.run_id FROM points p JOIN configs c ON c.id = p.config_id
                 WHERE c.scenario $1 AND p.conc = $2 ORDER BY p.run_id LIMIT 1"
}
RUN=$(run_of "!= 'agentic-coding'" 4)
AGENTIC_RUN=$(run_of "= 'agentic-coding'" 8)

# Each page through chromedriver (WebDriver over HTTP, on a free port; `chromium --screenshot`
# paints a page scrolled to a section blank above it): the viewport at 1600×1000 once the page
# has drawn; `PATH#ID` is the page scrolled to the section holding element ID.
CHROMEDRIVER=${INFERBENCH_TEST_CHROMEDRIVER:-$(command -v chromedriver || true)}
[ -n "$CHROMEDRIVER" ] || { echo "no chromedriver: scripts/setup/chromium.sh installs it" >&2; exit 2; }
python3 - "$CHROMEDRIVER" "$CHROMIUM" "$BASE" "$OUT" "$TMP/profile" \
  home / \
  inference "/inference?preset=quickstart" \
  inference-agentx "/inference?preset=agentic-north-star" \
  compare /compare \
  history /history \
  tco /tco \
  evals /evals \
  models /models \
  run "/run?id=$RUN" \
  run-why "/run?id=$RUN#why" \
  run-agentx-explorer "/run?id=$AGENTIC_RUN#explorer" <<'PY'
import base64, json, os, socket, subprocess, sys, time, urllib.request

driver, chromium, base, out, profile, *pages = sys.argv[1:]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
proc = subprocess.Popen([driver, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

def call(method, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)["value"]

try:
    for _ in range(100):
        try:
            if call("GET", "/status")["ready"]:
                break
        except OSError:
            pass
        time.sleep(0.1)
    args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run", "--hide-scrollbars",
            "--window-size=1600,1000", f"--user-data-dir={profile}"]
    sid = call("POST", "/session", {"capabilities": {"alwaysMatch": {
        "goog:chromeOptions": {"binary": chromium, "args": args}}}})["sessionId"]
    try:
        # The viewport itself at 1600×1000 (the window's size includes the browser's frame).
        call("POST", f"/session/{sid}/goog/cdp/execute", {"cmd": "Emulation.setDeviceMetricsOverride",
             "params": {"width": 1600, "height": 1000, "deviceScaleFactor": 1, "mobile": False}})
        for name, path in zip(pages[::2], pages[1::2]):
            # `PATH#ID`: the page at PATH, scrolled to the heading of the section holding
            # element ID once drawn.
            url, _, section = path.partition("#")
            call("POST", f"/session/{sid}/url", {"url": base + url})
            # Drawn: the page's fetches answered (a status line or content set), then a moment
            # for the charts.
            for _ in range(100):
                if call("POST", f"/session/{sid}/execute/sync", {"script":
                        "return document.readyState === 'complete' && document.body.innerText.length > 200",
                        "args": []}):
                    break
                time.sleep(0.1)
            time.sleep(1.5)
            if section:
                call("POST", f"/session/{sid}/execute/sync", {"script": """
                    let h = document.getElementById(arguments[0]);
                    while (h && h.tagName !== 'H3') h = h.previousElementSibling;
                    if (h) window.scrollTo(0, h.getBoundingClientRect().top + window.scrollY - 8);""",
                    "args": [section]})
                time.sleep(0.5)
            png = base64.b64decode(call("GET", f"/session/{sid}/screenshot"))
            dest = os.path.join(out, name + ".png")
            with open(dest, "wb") as f:
                f.write(png)
            print(f"{dest}  ({path}, {len(png)} bytes)")
    finally:
        call("DELETE", f"/session/{sid}")
finally:
    proc.terminate()
    proc.wait()
PY
