#!/usr/bin/env bash
# PostgreSQL for the store's tests (issue 5, DESIGN.md §7) as a PRIVATE instance: Debian's
# `postgresql` binaries (installed on a first run), a fresh cluster made with `initdb` in
# $INFERBENCH_SERVICES_DIR/pg, listening on 127.0.0.1 on a free port and on a socket in that
# directory only, started with `pg_ctl`. It never touches a system cluster, /etc or port 5432;
# scripts/stop-services.sh stops it (test-all.sh calls that on exit, also on failure).
# initdb refuses to run as root, so as root the cluster belongs to the `postgres` user.
# Exports INFERBENCH_TEST_PG_URL.
set -euo pipefail
: "${INFERBENCH_SERVICES_DIR:?set by scripts/test-all.sh}"
role=inferbench_test
db=inferbench_test
pass=inferbench_test

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
fi
ver=$(ls /usr/lib/postgresql | sort -n | tail -1)
bin=/usr/lib/postgresql/$ver/bin

dir=$INFERBENCH_SERVICES_DIR/pg
mkdir -p "$dir"
as_owner() { "$@"; }
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$dir"
  as_owner() { runuser -u postgres -- "$@"; }
fi
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

pwfile=$dir/pwfile
printf '%s\n' "$pass" > "$pwfile"
[ "$(id -u)" = 0 ] && chown postgres: "$pwfile"
# Password (SCRAM) over TCP, trust on the private socket for the set-up below.
as_owner "$bin/initdb" -D "$dir/data" -U "$role" --pwfile="$pwfile" \
  --auth-host=scram-sha-256 --auth-local=trust -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 || {
  cat "$dir/initdb.log" >&2; exit 1; }
as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c fsync=off" \
  start >/dev/null || { tail -n 30 "$dir/server.log" >&2; exit 1; }
echo "$bin/pg_ctl" > "$dir/pg_ctl.path"
as_owner "$bin/psql" -h "$dir" -p "$port" -U "$role" -d postgres -v ON_ERROR_STOP=1 -qAt \
  -c "create database $db owner $role" >/dev/null
echo "postgres: private instance on 127.0.0.1:$port (data $dir/data)"
echo "export INFERBENCH_TEST_PG_URL=postgres://$role:$pass@127.0.0.1:$port/$db" >> "${INFERBENCH_ENV_FILE:-/dev/null}"
