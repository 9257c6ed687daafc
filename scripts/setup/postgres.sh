#!/usr/bin/env bash
# PostgreSQL for the store's tests (issue #5, DESIGN.md §7): Debian's `postgresql` package, the
# default cluster started without systemd, and a password-authenticated test role + database on
# 127.0.0.1:5432. Idempotent: re-running skips what is already installed, running and created.
# Exports INFERBENCH_TEST_PG_URL.
set -euo pipefail
role=inferbench_test
db=inferbench_test
pass=inferbench_test

if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
fi

# The newest installed major version and its first cluster (Debian creates `main` on install).
ver=$(ls /usr/lib/postgresql | sort -n | tail -1)
cluster=$(pg_lsclusters -h | awk -v v="$ver" '$1 == v { print $2; exit }')
if [ -z "$cluster" ]; then
  cluster=main
  pg_createcluster "$ver" "$cluster" >/dev/null
fi
port=$(pg_lsclusters -h | awk -v v="$ver" -v c="$cluster" '$1 == v && $2 == c { print $3 }')
if ! pg_lsclusters -h | awk -v v="$ver" -v c="$cluster" '$1 == v && $2 == c { print $4 }' | grep -q online; then
  pg_ctlcluster "$ver" "$cluster" start
fi

# Wait for the server to accept connections (up to ~30 s).
for _ in $(seq 1 60); do
  if su postgres -c "psql -p $port -qAtc 'select 1'" >/dev/null 2>&1; then break; fi
  sleep 0.5
done

psql_admin() { su postgres -c "psql -p $port -v ON_ERROR_STOP=1 -qAt $*"; }
if [ "$(psql_admin "-c \"select 1 from pg_roles where rolname = '$role'\"")" != 1 ]; then
  psql_admin "-c \"create role $role login password '$pass'\""
fi
if [ "$(psql_admin "-c \"select 1 from pg_database where datname = '$db'\"")" != 1 ]; then
  psql_admin "-c \"create database $db owner $role\""
fi

echo "export INFERBENCH_TEST_PG_URL=postgres://$role:$pass@127.0.0.1:$port/$db" >> "${INFERBENCH_ENV_FILE:-/dev/null}"
