#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine (Debian packages, PyPI
# wheels, services), starts the services, then runs the whole suite. `.ci/run` calls exactly this.
# Idempotent: re-running skips what is already installed and running.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export INFERBENCH_ENV_FILE="$root/target/test-env.sh"
mkdir -p "$root/target"
: > "$INFERBENCH_ENV_FILE"

# Each setup script installs and starts one thing and appends `export VAR=...` lines to
# $INFERBENCH_ENV_FILE naming what the tests should use.
for s in scripts/setup/*.sh; do
  echo "== setup: $s"
  bash "$s"
done
# shellcheck disable=SC1090
source "$INFERBENCH_ENV_FILE"
# In CI, tests that need a service fail instead of skipping when it is missing.
export INFERBENCH_REQUIRE_SERVICES=1

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test"
cargo test --workspace -- --test-threads=2
