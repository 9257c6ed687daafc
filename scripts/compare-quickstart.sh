#!/usr/bin/env bash
# Issue 12's live check: runs `quickstart` (`quickstart --agentic` with AGENTIC=1; with
# LLAMACPP=1 a sweep of the llama.cpp example's first row, from the repository root) with two
# builds and compares what they wrote with every value masked (timings differ run to run):
# the files of the run directory (concurrency and dates in names made generic), then, per file
# kind, the key paths of its JSON / JSONL content (zstd files decompressed; list items and
# percentile keys collapsed). Prints the files and key paths only one side wrote; nothing
# under a file means the two builds wrote the same fields. Usage:
#   scripts/compare-quickstart.sh OLD_BIN NEW_BIN [OUT_DIR]
set -euo pipefail
OLD=${1:?old inferbench binary}
NEW=${2:?new inferbench binary}
OUT=${3:-$(mktemp -d /tmp/compare-quickstart.XXXXXX)}
mkdir -p "$OUT"
FLAGS=${AGENTIC:+--agentic}
for side in old new; do
  BIN=$OLD; [ "$side" = new ] && BIN=$NEW
  rm -rf "${OUT:?}/$side" "$OUT/$side.db"
  if [ -n "${LLAMACPP:-}" ]; then
    # The llama.cpp example's first row (conc 1) on a real CPU engine: .venv and models/ from
    # scripts/setup/llamacpp.sh.
    "$BIN" matrix --config-files examples/llamacpp-cpu.yaml \
      --runner-config examples/llamacpp-cpu-runners.yaml full-sweep >"$OUT/$side.matrix.json"
    python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); json.dump(m[:1], open(sys.argv[1], "w"))' \
      "$OUT/$side.matrix.json"
    "$BIN" sweep --matrix "$OUT/$side.matrix.json" \
      --runner-config examples/llamacpp-cpu-runners.yaml --runner-name cpu_0 \
      --out "$OUT/$side/run" --python .venv/bin/python \
      --model-path=HuggingFaceTB/SmolLM2-135M-Instruct=models/SmolLM2-135M-Instruct.Q4_1.gguf \
      --prompts-per-conc 2 --warmups-per-conc 1 --tokenizer server \
      >"$OUT/$side.stdout" 2>"$OUT/$side.stderr" || echo "$side: sweep exited $?"
  else
    "$BIN" quickstart $FLAGS --out "$OUT/$side" --db "$OUT/$side.db" \
      >"$OUT/$side.stdout" 2>"$OUT/$side.stderr" || echo "$side: quickstart exited $?"
  fi
done
python3 - "$OUT/old" "$OUT/new" <<'PY'
import json, os, re, subprocess, sys

def paths(v, p=""):
    """Key paths of a JSON value: list items collapsed to [], percentile-like keys to p9."""
    if isinstance(v, dict):
        out = set()
        for k, x in v.items():
            out |= paths(x, p + "." + (re.sub(r"\d", "9", k) if re.match(r"^p?[\d.]+$", k) else k))
        return out or {p + ".{}"}
    if isinstance(v, list):
        out = set()
        for x in v[:3]:
            out |= paths(x, p + "[]")
        return out or {p + "[]"}
    return {p}

def tree(root):
    run = os.path.join(root, sorted(os.listdir(root))[0])
    files = {}
    for d, _, names in os.walk(run):
        for f in names:
            full = os.path.join(d, f)
            rel = re.sub(r"conc\d+", "concN", os.path.relpath(full, run))
            data = open(full, "rb").read()
            if f.endswith(".zst"):
                data = subprocess.run(["zstd", "-dc"], input=data, capture_output=True).stdout
            keys = files.setdefault(rel, set())
            try:
                if ".jsonl" in f:
                    for line in data.splitlines()[:200]:
                        if line.strip():
                            keys |= paths(json.loads(line))
                elif f.endswith(".json"):
                    keys |= paths(json.loads(data))
            except ValueError:
                keys.add("<not JSON>")
    return files

old, new = tree(sys.argv[1]), tree(sys.argv[2])
print("files only in old:", sorted(set(old) - set(new)) or "none")
print("files only in new:", sorted(set(new) - set(old)) or "none")
for f in sorted(set(old) & set(new)):
    gone, added = sorted(old[f] - new[f]), sorted(new[f] - old[f])
    if gone or added:
        print("==", f)
        if gone:
            print("  only in old:", " ".join(gone))
        if added:
            print("  only in new:", " ".join(added))
PY
echo "run dirs and transcripts in $OUT"
