#!/usr/bin/env bash
# Headless Chromium for the dashboard's browser tests (issue 9): Debian's `chromium` (installed
# on a first run). Nothing is started here: each test runs its own short-lived
# `chromium --headless` with a private, temporary profile directory, offline
# (--disable-background-networking --disable-component-update), as root with --no-sandbox.
# Exports INFERBENCH_TEST_CHROMIUM (path of the binary).
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
fi
chromium --version >/dev/null
echo "export INFERBENCH_TEST_CHROMIUM=$(command -v chromium)" >> "${INFERBENCH_ENV_FILE:-/dev/null}"
