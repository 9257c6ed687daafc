#!/usr/bin/env bash
# Issue 14's harness: `sse-instant --coalesce` pinned to core 0, `inferbench bench` pinned to
# core 1, closed loop, 32-token prompts, 256-token streams, `--duration D`, RUNS runs per
# concurrency. Prints one markdown row per run: output tok/s, TTFT/ITL means (ms), in flight
# while sending (bench's own time average), Little's law (request rate x mean E2EL: an
# independent count of requests really in flight), the client's slots busy until each response
# was read (slots_busy_sending), client CPU, client_bound, the server process's CPU share over the
# run (/proc, start-up to exit of bench), tokens (bench vs
# the server's /stats count), peak RSS (/usr/bin/time). (sse-instant's own `inflight_avg`
# counts responses still being written, ~0 for a coalescing instant server, so it is not
# shown.) EXTRA is passed to bench (e.g. --no-rx-timestamps for the read-time A/B); WARMUPS=N in
# the environment sends N warmups first (default 0; InferenceX sends 2 x conc). Usage:
#   scripts/client-ceiling.sh SSE_INSTANT_BIN [INFERBENCH_BIN] [CONCS] [RUNS] [DURATION_S] [EXTRA]
# PORT=N in the environment picks the server's port (default 18777). WIRE=1 also captures the
# loopback traffic (tcpdump on core 0, beside the server) and prints, under each row, the TTFT
# the wire saw (request's first packet to its response's first packet, scripts/wire-ttft.py) to
# set against bench's kernel-stamped TTFT: the client's own timing error is their difference.
set -euo pipefail
SSE=${1:?path to the sse-instant binary (cargo build --release in ../shared/tools/sse-instant)}
IB=${2:-target/release/inferbench}
CONCS=${3:-64 512}
RUNS=${4:-3}
DUR=${5:-12}
EXTRA=${6:-}
PORT=${PORT:-18777}
OUT=$(mktemp -d /tmp/client-ceiling.XXXXXX)
taskset -c 0 "$SSE" --coalesce --port "$PORT" --threads 1 >/dev/null 2>&1 &
SRV=$!
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null; rm -rf "$OUT"' EXIT
for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
# The server's CPU seconds (utime + stime, clock ticks) from /proc, to tell who was saturated.
srv_ticks() { awk '{print $14 + $15}' "/proc/$SRV/stat"; }
echo "| conc | run | output tok/s | TTFT mean ms | ITL mean ms | held (bench, sending) | Little's law | slots busy (until read) | client CPU cores | client_bound | server CPU cores | tokens bench / server | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for C in $CONCS; do
  for R in $(seq "$RUNS"); do
    curl -s -X POST "http://127.0.0.1:$PORT/stats/reset" >/dev/null
    if [ "${WIRE:-0}" = 1 ]; then
      taskset -c 0 tcpdump -i lo -nn -s 128 -B 262144 --time-stamp-precision=nano \
        -w "$OUT/cap.pcap" "tcp port $PORT" 2>"$OUT/tcpdump.err" &
      TCPD=$!
      for _ in $(seq 50); do grep -q listening "$OUT/tcpdump.err" 2>/dev/null && break; sleep 0.1; done
    fi
    T0=$(srv_ticks); W0=$(date +%s.%N)
    /usr/bin/time -f %M -o "$OUT/rss" taskset -c 1 "$IB" bench --base-url "http://127.0.0.1:$PORT" \
      --model m --random-input-len 32 --random-output-len 256 --ignore-eos --max-concurrency "$C" \
      --duration "$DUR" --num-warmups "${WARMUPS:-0}" --progress off --no-server-metrics --power off \
      --save-result --result-dir "$OUT" --result-filename "r.json" $EXTRA >"$OUT/log" 2>&1 || true
    T1=$(srv_ticks); W1=$(date +%s.%N)
    curl -s "http://127.0.0.1:$PORT/stats" > "$OUT/stats.json"
    SRV_CPU=$(python3 -c "import os; print(($T1 - $T0) / os.sysconf('SC_CLK_TCK') / ($W1 - $W0))")
    python3 - "$OUT/r.json" "$OUT/stats.json" "$OUT/rss" "$C" "$R" "$SRV_CPU" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); st = json.load(open(sys.argv[2]))
rss = int(open(sys.argv[3]).read().split()[-1]) / 1024
x = r["inferbench"]; c = x.get("client") or {}; cc = x["concurrency"]
little = r["request_throughput"] * r["mean_e2el_ms"] / 1000
print(f"| {sys.argv[4]} | {sys.argv[5]} | {r['output_throughput']/1e3:.0f}k | {r['mean_ttft_ms']:.2f} | "
      f"{r['mean_itl_ms']:.4f} | {cc.get('mean_in_flight_sending') or 0:.1f} | "
      f"{little:.1f} | {cc.get('slots_busy_sending') or float('nan'):.1f} | "
      f"{c.get('cpu_cores', float('nan')):.2f} | {c.get('client_bound')} | {float(sys.argv[6]):.2f} | "
      f"{r['total_output_tokens']} / {st.get('tokens')} | {rss:.0f} |")
PY
    if [ "${WIRE:-0}" = 1 ]; then
      kill -INT $TCPD; wait $TCPD 2>/dev/null || true
      echo "wire: $(python3 "$(dirname "$0")/wire-ttft.py" "$OUT/cap.pcap" "$PORT" 0.5) bench TTFT $(python3 -c "import json; r = json.load(open('$OUT/r.json')); print('mean %.4f p50 %.4f p99 %.4f ms' % (r['mean_ttft_ms'], r['median_ttft_ms'], r['p99_ttft_ms']))"); tcpdump: $(grep -o '[0-9]* packets dropped by kernel' "$OUT/tcpdump.err")"
      rm -f "$OUT/cap.pcap"
    fi
  done
done
