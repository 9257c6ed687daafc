#!/usr/bin/env bash
# python3 with PyYAML for the oracle tests that run InferenceX's own scripts (ci_priority.py,
# the AgentX aggregation/validation scripts; python3 >= 3.10). Installs the Debian package
# python3-yaml on a first run when it is missing (as root). Exports INFERBENCH_TEST_ORACLE_PYTHON.
set -euo pipefail
if ! python3 -c 'import sys, yaml; sys.exit(0 if sys.version_info >= (3, 10) else 1)' 2>/dev/null; then
  echo "   first run: installing python3-yaml (Debian) for the oracle tests"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq python3 python3-yaml >/dev/null
fi
echo "export INFERBENCH_TEST_ORACLE_PYTHON=$(command -v python3)" >> "${INFERBENCH_ENV_FILE:-/dev/null}"
