#!/usr/bin/env bash
# Issue 12's live check: runs `quickstart` (`quickstart --agentic` with AGENTIC=1) with two
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
  "$BIN" quickstart $FLAGS --out "$OUT/$side" --db "$OUT/$side.db" \
    >"$OUT/$side.stdout" 2>"$OUT/$side.stderr" || echo "$side: quickstart exited $?"
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
