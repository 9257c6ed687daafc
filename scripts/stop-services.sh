#!/usr/bin/env bash
# Stops the private test services that scripts/setup/*.sh started under DIR (their PID files and
# data live there) and removes DIR. Touches nothing else: no process it did not start, no /etc.
# Usage: scripts/stop-services.sh DIR
set -u
dir=${1:?usage: stop-services.sh DIR}
[ -d "$dir" ] || exit 0

# PostgreSQL: pg_ctl stop on the private data directory.
if [ -f "$dir/pg/pg_ctl.path" ] && [ -f "$dir/pg/data/postmaster.pid" ]; then
  pg_ctl=$(cat "$dir/pg/pg_ctl.path")
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$pg_ctl" -D "$dir/pg/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
  else
    "$pg_ctl" -D "$dir/pg/data" -m fast -w -t 30 stop >/dev/null 2>&1 || true
  fi
fi

# Daemons that wrote a PID file under DIR (slurmd, slurmctld, munged): TERM, then KILL after 10 s.
# Only a PID whose command line names DIR is signalled, so a recycled PID is never hit.
stop_pid_file() {
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f" 2>/dev/null) || return 0
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 0
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$dir" || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 40); do
    kill -0 "$pid" 2>/dev/null || return 0
    # A zombie (PID 1 not reaping) counts as stopped.
    if grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; then return 0; fi
    sleep 0.25
  done
  kill -KILL "$pid" 2>/dev/null || true
}
for f in "$dir"/slurm/slurmd.pid "$dir"/slurm/slurmctld.pid "$dir"/munge/munged.pid; do
  stop_pid_file "$f"
done
rm -rf "$dir"
