#!/usr/bin/env bash
# Issue 14's noise-free companion to client-ceiling.sh: the client's instructions per streamed
# token under valgrind's callgrind (exact counts, unaffected by other work on the machine,
# unlike wall-clock tok/s on a shared VM). `sse-instant --coalesce`, closed loop at
# concurrency 64, 32-token prompts, 256-token streams, N requests (default 1000). Prints the
# inclusive instructions per token of the closed-loop worker (send, read, parse, record) and
# of the SSE parser and the chunk reader under it. Start-up (tokenizer, prompts) is excluded by
# reading the worker's inclusive count. Needs valgrind (apt-get install valgrind). Usage:
#   scripts/client-instructions.sh SSE_INSTANT_BIN [INFERBENCH_BIN] [N]
# PORT=N in the environment picks the server's port (default 18781).
set -euo pipefail
SSE=${1:?path to the sse-instant binary (cargo build --release in ../shared/tools/sse-instant)}
IB=${2:-target/release/inferbench}
N=${3:-1000}
PORT=${PORT:-18781}
OUT=$(mktemp -d /tmp/client-instructions.XXXXXX)
"$SSE" --coalesce --port "$PORT" --threads 1 >/dev/null 2>&1 &
SRV=$!
trap 'kill $SRV 2>/dev/null; wait $SRV 2>/dev/null; rm -rf "$OUT"' EXIT
for _ in $(seq 50); do (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.out" "$IB" bench \
  --base-url "http://127.0.0.1:$PORT" --model m --random-input-len 32 --random-output-len 256 \
  --ignore-eos --max-concurrency 64 --num-prompts "$N" --num-warmups 0 --progress off \
  --no-server-metrics --power off >"$OUT/log" 2>&1
TOKENS=$((N * 256))
callgrind_annotate --inclusive=yes "$OUT/cg.out" 2>/dev/null | awk -v t="$TOKENS" '
  # The first (largest) inclusive line of each function: its whole cost.
  /^ *[0-9,]+ \(/ {
    f = $0; sub(/^ *[0-9,]+ \( *[0-9.]+%\) +/, "", f); sub(/ \[.*/, "", f); sub(/^[^:]*:/, "", f)
    if ((f ~ /run_closed_loop::\{\{closure\}\}::\{\{closure\}\}$/ || f ~ /SseParser::feed$/ \
         || f ~ /fastchunk::parse$/) && !(f in seen)) {
      seen[f] = 1; c = $1; gsub(",", "", c)
      printf "%6.0f instructions/token  %s\n", c / t, f
    }
  }'
