#!/usr/bin/env bash
# Single-host Slurm for the runner's executor tests (issue 4, DESIGN.md §7) as a PRIVATE instance:
# Debian's slurmctld + slurmd + munge (installed on a first run), with their own configuration,
# key, socket, state, spool, logs and PID files under $INFERBENCH_SERVICES_DIR, their own free
# ports, and a private munged (--socket/--key-file, AuthInfo=socket=…). Nothing under /etc or /run
# is read or written and no running daemon is touched, so a host that already runs Slurm or munge
# keeps its own. The tests reach this instance through SLURM_CONF; scripts/stop-services.sh stops it.
# Exports SLURM_CONF and INFERBENCH_TEST_SLURM=1 once `sinfo` shows the node idle.
set -euo pipefail
: "${INFERBENCH_SERVICES_DIR:?set by scripts/test-all.sh}"

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

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

base=$INFERBENCH_SERVICES_DIR
m=$base/munge
d=$base/slurm
mkdir -p "$m" "$d/state" "$d/spool"
chmod 0700 "$m"

# munge: a private key and daemon on a private socket (munged insists on strict modes).
dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none
chmod 0400 "$m/munge.key"
sock=$m/munge.socket
munged --force --socket="$sock" --key-file="$m/munge.key" --pid-file="$m/munged.pid" \
  --log-file="$m/munged.log" --seed-file="$m/munged.seed" 2>>"$m/munged.start.log" || {
  cat "$m/munged.start.log" "$m/munged.log" >&2 2>/dev/null; exit 1; }
for _ in $(seq 1 40); do
  if munge -S "$sock" -n </dev/null 2>/dev/null | unmunge -S "$sock" >/dev/null 2>&1; then break; fi
  sleep 0.25
done

host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
ctld_port=$(free_port)
slurmd_port=$(free_port)
user=$(id -un)
export SLURM_CONF=$d/slurm.conf
cat > "$SLURM_CONF" <<CONF
ClusterName=inferbench-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
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
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
chmod 0644 "$SLURM_CONF"

slurmctld -f "$SLURM_CONF" -i 2>>"$d/slurmctld.start.log" || {
  cat "$d/slurmctld.start.log" >&2; tail -n 30 "$d/slurmctld.log" >&2 2>/dev/null; exit 1; }
slurmd -f "$SLURM_CONF" -N "$host" 2>>"$d/slurmd.start.log" || {
  cat "$d/slurmd.start.log" >&2; tail -n 30 "$d/slurmd.log" >&2 2>/dev/null; exit 1; }

ok=0
for _ in $(seq 1 120); do
  node_state=$(timeout 5 sinfo -h -N -n "$host" -o '%t' 2>/dev/null | head -n1 || true)
  case "$node_state" in
    idle | mix | alloc) ok=1; break ;;
  esac
  sleep 0.5
done
if [ "$ok" != 1 ]; then
  echo "slurm: node $host not idle (state '${node_state:-?}'); logs in $d" >&2
  tail -n 30 "$d/slurmctld.log" "$d/slurmd.log" "$m/munged.log" >&2 2>/dev/null || true
  exit 1
fi
echo "slurm: private instance, node $host $node_state ($cpus CPUs), slurmctld :$ctld_port, slurmd :$slurmd_port"
{
  echo "export SLURM_CONF=$SLURM_CONF"
  echo "export INFERBENCH_TEST_SLURM=1"
} >> "${INFERBENCH_ENV_FILE:-/dev/null}"
