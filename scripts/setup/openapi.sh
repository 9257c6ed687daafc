#!/usr/bin/env bash
# openapi-spec-validator (PyPI) for the dashboard test that validates `/api/v1/openapi.json`
# (crates/web/tests/api.rs `openapi_lists_every_route_and_validates`). Installed into the project
# venv. Exports INFERBENCH_TEST_OPENAPI_PYTHON (a python that imports openapi_spec_validator).
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import openapi_spec_validator' 2>/dev/null; then
  echo "   first run: installing PyPI openapi-spec-validator into $venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check openapi-spec-validator==0.7.1
fi
"$venv/bin/python" -c 'import openapi_spec_validator'
echo "export INFERBENCH_TEST_OPENAPI_PYTHON=$(pwd)/$venv/bin/python" >> "${INFERBENCH_ENV_FILE:-/dev/null}"
