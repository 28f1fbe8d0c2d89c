#!/usr/bin/env bash
# A single-node SLURM with accounting on this machine, for `--executor slurm` on a workstation and for the
# tests of the cluster path (tests/test_slurm.py, the `slurm` tier; CI's floor leg starts it).
#
#   sudo scripts/local_slurm.sh start    # install (Debian/Ubuntu: slurm-wlm, slurmdbd, mariadb-server, munge),
#                                        # configure and start munged, MariaDB, slurmdbd, slurmctld and slurmd
#   scripts/local_slurm.sh status        # exit 0 when sbatch, squeue and sacct answer
#   sudo scripts/local_slurm.sh stop     # stop the five daemons (the configuration and accounting stay)
#
# Idempotent: `start` on a running cluster only checks it. One node named after this host with all its CPUs and
# most of its memory, one partition `debug` (the default; jobs share cores: OverSubscribe=FORCE), accounting in
# MariaDB through slurmdbd (so `sacct` reports every job), processes tracked without cgroups (containers and
# VMs often have none). Logs, spool and state in $MINIMAX_SLURM_STATE (default /var/tmp/minimax-slurm); the
# configuration in /etc/slurm, where sbatch, sacct and scontrol look for it. As root: SLURM's daemons run as
# root here (SlurmUser=root), MariaDB as mysql and munged as munge, as their packages set them up.
# One setting differs from a site's defaults: a requeued job waits 10 s before it starts again, not 120
# (AuthInfo=cred_expire, which also bounds a job step's credential: ample on one node), so the tests of
# pre-emption and time limits do not spend two minutes each waiting.
set -euo pipefail

STATE=${MINIMAX_SLURM_STATE:-/var/tmp/minimax-slurm}
CLUSTER=minimax
NODE=$(hostname -s)
DB_PASSWORD=minimax-local-slurm  # a local database reachable only through its socket and localhost

log() { echo "local_slurm: $*" >&2; }

wait_for() {  # seconds description command...: run command until it succeeds, or fail naming what never came
    local seconds=$1 what=$2; shift 2
    for _ in $(seq $((seconds * 4))); do
        if "$@" > /dev/null 2>&1; then return 0; fi
        sleep 0.25
    done
    log "$what did not come up in ${seconds} s (logs in $STATE)"; return 1
}

answers() {  # the cluster takes jobs and reports them
    scontrol ping 2>/dev/null | grep -q UP && sinfo -h -o %t 2>/dev/null | grep -Eq 'idle|mix|alloc' \
        && sacct -n -X -S now-1minute > /dev/null 2>&1
}

install_packages() {
    if command -v slurmctld > /dev/null && command -v slurmdbd > /dev/null && command -v mariadbd > /dev/null \
            && command -v munged > /dev/null; then
        return 0
    fi
    log "installing slurm-wlm, slurmdbd, mariadb-server and munge (apt)"
    apt-get update -q > /dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm slurmdbd mariadb-server munge > /dev/null
}

write_configs() {
    local cpus memory
    cpus=$(nproc)
    memory=$(( $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) * 9 / 10 ))
    mkdir -p /etc/slurm "$STATE/slurmd" "$STATE/slurmctld"
    cat > /etc/slurm/slurm.conf <<EOF
# Written by minimax's scripts/local_slurm.sh: a single-node cluster with accounting.
ClusterName=$CLUSTER
SlurmctldHost=$NODE
SlurmUser=root
AuthType=auth/munge
AuthInfo=cred_expire=10
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmdSpoolDir=$STATE/slurmd
StateSaveLocation=$STATE/slurmctld
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
KillWait=30
MinJobAge=60
NodeName=$NODE CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
EOF
    cat > /etc/slurm/slurmdbd.conf <<EOF
# Written by minimax's scripts/local_slurm.sh.
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$DB_PASSWORD
StorageLoc=slurm_acct_db
LogFile=$STATE/slurmdbd.log
PidFile=$STATE/slurmdbd.pid
EOF
    chmod 600 /etc/slurm/slurmdbd.conf
}

start_munge() {
    if munge -n 2>/dev/null | unmunge > /dev/null 2>&1; then return 0; fi
    mkdir -p /run/munge && chown munge:munge /run/munge && chmod 755 /run/munge
    [ -s /etc/munge/munge.key ] || { mungekey --create 2>/dev/null || create-munge-key -f; chown munge:munge /etc/munge/munge.key; }
    runuser -u munge -- /usr/sbin/munged
    wait_for 10 munged sh -c 'munge -n | unmunge'
}

start_mariadb() {
    if mysqladmin ping > /dev/null 2>&1; then return 0; fi
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
    (setsid mariadbd --user=mysql > "$STATE/mariadb.log" 2>&1 &)
    wait_for 30 MariaDB mysqladmin ping
    mysql -u root <<EOF
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASSWORD';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
FLUSH PRIVILEGES;
EOF
}

start_daemon() {  # name pidfile command...: start a SLURM daemon unless its pid file names a live process
    local name=$1 pidfile=$2; shift 2
    if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then return 0; fi
    "$@"
}

start() {
    [ "$(id -u)" = 0 ] || { log "start needs root (it installs packages and starts daemons): sudo $0 start"; exit 2; }
    mkdir -p "$STATE"
    if answers; then log "running (cluster $CLUSTER, node $NODE)"; return 0; fi
    install_packages
    write_configs
    start_munge
    start_mariadb
    start_daemon slurmdbd "$STATE/slurmdbd.pid" slurmdbd
    wait_for 30 slurmdbd sacctmgr -n list cluster
    sacctmgr -n list cluster format=cluster | grep -qw "$CLUSTER" || sacctmgr -i add cluster "$CLUSTER" > /dev/null
    start_daemon slurmctld "$STATE/slurmctld.pid" slurmctld
    wait_for 30 slurmctld sh -c 'scontrol ping | grep -q UP'
    start_daemon slurmd "$STATE/slurmd.pid" slurmd
    wait_for 30 "node $NODE" sh -c "sinfo -h -n $NODE -o %t | grep -Eq 'idle|mix|alloc|down|drain'"
    scontrol update nodename="$NODE" state=resume > /dev/null 2>&1 || true  # a node left down by a past stop
    wait_for 30 "the cluster (sbatch, sacct)" answers
    log "running (cluster $CLUSTER, node $NODE, $(nproc) CPUs; logs in $STATE)"
}

stop_pidfile() {  # stop the daemon a pid file names, and wait (10 s at most) for it to go
    local pidfile=$1 pid
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
        for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    fi
    rm -f "$pidfile"
}

stop() {
    stop_pidfile "$STATE/slurmd.pid"
    stop_pidfile "$STATE/slurmctld.pid"
    stop_pidfile "$STATE/slurmdbd.pid"
    mysqladmin shutdown > /dev/null 2>&1 || true
    pkill -u munge munged 2>/dev/null || true
    log "stopped"
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) if answers; then log "running"; else log "not running"; exit 1; fi ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
