#!/usr/bin/env bash
# Single-host Slurm for the runner's executor tests (issue 4, DESIGN.md §7): Debian's slurmctld +
# slurmd + munge, one node (this host) with the CPUs it has, cgroup-free (proctrack/linuxproc,
# task/none) and without systemd: munged, slurmctld and slurmd are started here as plain daemons.
# Idempotent: packages already installed and daemons already answering are left alone.
# Appends `export INFERBENCH_TEST_SLURM=1` to $INFERBENCH_ENV_FILE once `sinfo` shows the node idle.
set -euo pipefail

need_install=0
for bin in slurmctld slurmd munged sbatch sinfo; do
  command -v "$bin" >/dev/null 2>&1 || need_install=1
done
if [ "$need_install" = 1 ]; then
  export DEBIAN_FRONTEND=noninteractive
  # Another apt user (a teammate, unattended upgrades) may hold the lock: wait for it.
  for _ in $(seq 1 60); do
    if apt-get update -qq >/dev/null 2>&1; then break; fi
    sleep 5
  done
  for _ in $(seq 1 60); do
    if apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null; then
      break
    fi
    sleep 5
  done
fi

host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
conf_dir=/etc/slurm
state=/var/spool/slurmctld
spool=/var/spool/slurmd
logs=/var/log/slurm
mkdir -p "$conf_dir" "$state" "$spool" "$logs" /run/munge /var/lib/munge /var/log/munge /etc/munge

# munge: a key, correct ownership and modes (munged refuses anything looser).
if [ ! -s /etc/munge/munge.key ]; then
  if command -v mungekey >/dev/null 2>&1; then
    mungekey --create --keyfile=/etc/munge/munge.key >/dev/null 2>&1 || true
  fi
  if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
fi
munge_user=root
if id munge >/dev/null 2>&1; then munge_user=munge; fi
chown -R "$munge_user:" /etc/munge /var/lib/munge /var/log/munge /run/munge
chmod 0700 /etc/munge /var/lib/munge /var/log/munge
chmod 0755 /run/munge
chmod 0400 /etc/munge/munge.key

conf="ClusterName=inferbench
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$state
SlurmdSpoolDir=$spool
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$logs/slurmctld.log
SlurmdLogFile=$logs/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=10
Waittime=0
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
"
tmp_conf=$(mktemp)
printf '%s' "$conf" > "$tmp_conf"
if cmp -s "$tmp_conf" "$conf_dir/slurm.conf"; then
  changed=0
  rm -f "$tmp_conf"
else
  mv "$tmp_conf" "$conf_dir/slurm.conf"
  chmod 0644 "$conf_dir/slurm.conf"
  changed=1
fi
# Debian's slurmd looks for cgroup.conf only when a cgroup plugin is configured; none is here.

# A daemon counts as running only if a live (non-zombie) process has its name: a killed daemon
# can linger as a zombie when PID 1 does not reap orphans.
running() { ps -C "$1" -o stat= 2>/dev/null | grep -qv '^Z'; }
munge_ok() { munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; }

if ! munge_ok; then
  pkill -x munged 2>/dev/null || true
  if [ "$munge_user" = munge ]; then
    su -s /bin/sh munge -c "munged --force" || munged --force
  else
    munged --force
  fi
  for _ in $(seq 1 40); do
    if munge_ok; then break; fi
    sleep 0.25
  done
  if ! munge_ok; then
    echo "slurm: munged does not answer; see /var/log/munge/munged.log" >&2
    tail -n 20 /var/log/munge/munged.log >&2 || true
    exit 1
  fi
fi

if [ "$changed" = 1 ]; then
  # New configuration: restart whatever runs with the old one.
  for d in slurmd slurmctld; do
    if running "$d"; then
      pkill -x "$d" || true
      for _ in $(seq 1 20); do running "$d" || break; sleep 0.5; done
    fi
  done
fi
if ! running slurmctld; then
  slurmctld -i 2>>"$logs/slurmctld.start.log" || slurmctld 2>>"$logs/slurmctld.start.log"
fi
if ! running slurmd; then
  slurmd 2>>"$logs/slurmd.start.log"
fi

# Wait for the node to be schedulable; undrain it if an earlier run left it down.
ok=0
for i in $(seq 1 60); do
  node_state=$(timeout 5 sinfo -h -N -n "$host" -o '%t' 2>/dev/null | head -n1 || true)
  case "$node_state" in
    idle | mix | alloc) ok=1; break ;;
    down* | drain* | drng*) timeout 5 scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true ;;
  esac
  if [ $((i % 20)) = 0 ]; then
    # Still not up after 10 s: bounce slurmd, the daemon that registers the node.
    pkill -x slurmd || true
    sleep 1
    slurmd 2>>"$logs/slurmd.start.log" || true
  fi
  sleep 0.5
done
if [ "$ok" != 1 ]; then
  echo "slurm: node $host not idle (state '${node_state:-?}'); see $logs/*.log" >&2
  tail -n 30 "$logs/slurmctld.log" "$logs/slurmd.log" >&2 2>/dev/null || true
  exit 1
fi
echo "slurm: node $host $node_state ($cpus CPUs)"
echo "export INFERBENCH_TEST_SLURM=1" >> "${INFERBENCH_ENV_FILE:-/dev/null}"
