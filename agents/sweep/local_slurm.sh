#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for trying and testing `python -m agents.sweep`.
#
#   bash agents/sweep/local_slurm.sh install   # apt-get install -y slurm-wlm munge (as root; ~20 s)
#   bash agents/sweep/local_slurm.sh start     # munged, slurmctld, slurmd; waits until the node is idle
#   eval "$(bash agents/sweep/local_slurm.sh env)"   # export SLURM_CONF for sbatch / sinfo / submitit
#   bash agents/sweep/local_slurm.sh status
#   bash agents/sweep/local_slurm.sh stop      # stops only the daemons it started (by their pid files)
#
# Everything lives under one folder, $BISIMKIT_SLURM_DIR (default /tmp/bisimkit-slurm): the munge key,
# socket and log, slurm.conf, the controller's state, slurmd's spool, the logs and the pid files.
# The daemons run as root (SlurmUser=root) with ProctrackType=proctrack/linuxproc and TaskPlugin=task/none
# (no cgroups needed, so it runs in a container); the node is this host (`hostname`) with all its CPUs,
# one partition `debug`, consumable CPUs (a 1-CPU job takes one CPU). No accounting (sacct has none).
# start and stop are idempotent: start on a running cluster says so; stop on a stopped one does nothing.
set -euo pipefail

DIR="${BISIMKIT_SLURM_DIR:-/tmp/bisimkit-slurm}"
CTLD_PORT="${BISIMKIT_SLURM_PORT:-6817}"
SLURMD_PORT="$((CTLD_PORT + 1))"
HOST="$(hostname)"
CONF="$DIR/slurm.conf"
DAEMONS=(munged slurmctld slurmd)

die() { echo "local_slurm: $*" >&2; exit 1; }

pid_of() {  # the pid in DIR/NAME.pid if that process is alive and is NAME
    local name="$1" file="$DIR/$1.pid" pid
    [[ -s "$file" ]] || return 1
    pid="$(tr -dc '0-9' < "$file")"
    [[ -n "$pid" && -d "/proc/$pid" ]] || return 1
    [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$name" ]] || return 1
    echo "$pid"
}

write_conf() {
    local cpus
    cpus="$(nproc)"
    mkdir -p "$DIR/munge" "$DIR/state" "$DIR/spool" "$DIR/log"
    chmod 0700 "$DIR/munge"
    cat > "$CONF" <<CONF
# written by agents/sweep/local_slurm.sh
ClusterName=bisimkit
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
JobRequeue=1
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmctldTimeout=30
SlurmdTimeout=30
MinJobAge=300
NodeName=$HOST CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
}

start() {
    command -v slurmctld >/dev/null && command -v munged >/dev/null && command -v sbatch >/dev/null \
        || die "slurm-wlm and munge are not installed (run: $0 install, as root)"
    if pid_of slurmctld >/dev/null && pid_of slurmd >/dev/null && pid_of munged >/dev/null; then
        echo "local_slurm: already running under $DIR"
        return 0
    fi
    stop quiet
    write_conf
    if [[ ! -s "$DIR/munge/munge.key" ]]; then
        dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
        chmod 0400 "$DIR/munge/munge.key"
    fi
    munged --force --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
        --pid-file="$DIR/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/munge/munged.seed"
    export SLURM_CONF="$CONF"
    slurmctld -f "$CONF" -i
    slurmd -f "$CONF"
    local deadline=$((SECONDS + 60))
    until sinfo -h -o '%t' 2>/dev/null | grep -qE '^(idle|mix|alloc)'; do
        if ((SECONDS > deadline)); then
            tail -n 20 "$DIR"/log/*.log >&2 || true
            die "the node did not come up within 60 s (logs above, in $DIR/log)"
        fi
        sleep 0.5
    done
    echo "local_slurm: running under $DIR (node $HOST, $(nproc) CPUs); export SLURM_CONF=$CONF"
}

stop() {
    local name pid stopped=0
    for name in slurmd slurmctld munged; do
        if pid="$(pid_of "$name")"; then
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 100); do [[ -d "/proc/$pid" ]] || break; sleep 0.1; done
            [[ -d "/proc/$pid" ]] && kill -9 "$pid" 2>/dev/null || true
            stopped=$((stopped + 1))
        fi
        rm -f "$DIR/$name.pid"
    done
    [[ "${1:-}" == quiet ]] || echo "local_slurm: stopped $stopped daemon(s) under $DIR"
}

status() {
    local name pid
    for name in "${DAEMONS[@]}"; do
        if pid="$(pid_of "$name")"; then echo "$name: running (pid $pid)"; else echo "$name: stopped"; fi
    done
    if pid_of slurmctld >/dev/null; then SLURM_CONF="$CONF" sinfo; fi
}

case "${1:-}" in
    install) apt-get install -y slurm-wlm munge ;;
    start) start ;;
    stop) stop ;;
    status) status ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    *) echo "usage: $0 install|start|stop|status|env" >&2; exit 2 ;;
esac
