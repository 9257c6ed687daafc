#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine (Debian packages and PyPI
# wheels on a first run), starts PRIVATE test services, runs the whole suite, and stops the
# services again (also when a step fails or on Ctrl-C). `.ci/run` calls exactly this.
#
# Side effects, all of them:
# - first run only: `apt-get install` of postgresql, slurmctld, slurmd, slurm-client, munge,
#   chromium (as root); a Python venv in .venv/ (xllamacpp, actionlint) and models/SmolLM2-135M-Instruct.Q4_1.gguf
#   in the checkout; cargo's target/ as usual.
# - every run: a temporary directory /tmp/inferbench-test.XXXXXX holding a private PostgreSQL
#   cluster, a private munged and a single-host Slurm (own config, key, sockets, state, logs, free
#   ports on 127.0.0.1), removed at the end with everything it started
#   (scripts/with-test-services.sh). Nothing under /etc is written, no system service is
#   started, stopped or reconfigured.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash scripts/with-test-services.sh -- bash -c '
  set -euo pipefail
  echo "== cargo fmt --check"
  cargo fmt --all -- --check
  echo "== cargo clippy -D warnings"
  cargo clippy --workspace --all-targets -- -D warnings
  echo "== cargo test"
  cargo test --workspace --no-fail-fast -- --test-threads=2
'
