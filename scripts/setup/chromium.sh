#!/usr/bin/env bash
# Headless Chromium for the dashboard's browser tests (issue 9): Debian's `chromium` and
# `chromium-driver` (installed on a first run). Nothing is started here: each test runs its own
# short-lived `chromium --headless` (or `chromedriver` on a free port, killed with its browsers
# when the test ends) with a private, temporary profile directory, offline
# (--disable-background-networking --disable-component-update), as root with --no-sandbox.
# Exports INFERBENCH_TEST_CHROMIUM and INFERBENCH_TEST_CHROMEDRIVER (paths of the binaries).
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium chromium-driver >/dev/null
fi
# Debian's /etc/chromium.d scripts print shell noise on some machines: not ours, not shown.
chromium --version >/dev/null 2>&1
chromedriver --version >/dev/null
{
  echo "export INFERBENCH_TEST_CHROMIUM=$(command -v chromium)"
  echo "export INFERBENCH_TEST_CHROMEDRIVER=$(command -v chromedriver)"
} >> "${INFERBENCH_ENV_FILE:-/dev/null}"
