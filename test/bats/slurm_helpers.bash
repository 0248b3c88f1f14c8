# slurm_helpers.bash — a private Slurm cluster for one bats file: munged (own
# key and socket), slurmctld and slurmd in the foreground with a slurm.conf in
# a temp dir, one node (this machine); /etc/slurm and /etc/munge left alone.
load helpers
# The daemons are in sbin, which a root shell's PATH may lack.
PATH="$PATH:/usr/sbin:/sbin"

# slurm_missing: why the cluster cannot run here (nothing when it can).
slurm_missing() {
    if [ "$(id -u)" -ne 0 ]; then
        echo "needs root (slurmd and munged run as root here)"
        return
    fi
    local p
    for p in munged munge unmunge slurmctld slurmd sbatch scontrol squeue scancel; do
        command -v "$p" > /dev/null || { echo "$p is not installed (make deps-slurm)"; return; }
    done
}

# slurm_poll SECONDS CMD...: CMD succeeds within SECONDS, checked every 0.1 s
# (Slurm's daemons say nothing when they are ready: their state is asked).
slurm_poll() {
    local end=$((SECONDS + $1))
    shift
    until "$@"; do
        [ "$SECONDS" -lt "$end" ] || return 1
        read -rt 0.1 <> <(:) || true
    done
}

munge_answers() { munge -S "$SLURM_DIR/sock/munge.sock" -n 2>/dev/null | unmunge -S "$SLURM_DIR/sock/munge.sock" > /dev/null 2>&1; }
node_idle() { scontrol show node "$SLURM_NODE" -o 2>/dev/null | grep -q 'State=IDLE'; }
# Jobs still pending or running (JOBID: that one's tasks; else all).
LIVE_STATES=PENDING,CONFIGURING,RUNNING,COMPLETING,SUSPENDED
no_jobs() { local q; q=$(squeue -h -r ${1:+-j "$1"} -t "$LIVE_STATES" -o %i 2>/dev/null) && [ -z "$q" ]; }
gone() { ! kill -0 "$1" 2>/dev/null; }
# Ready, or a daemon gone (a configuration it refused): nothing to wait for.
idle_or_dead() { node_idle || gone "$SLURMCTLD_PID" || gone "$SLURMD_PID"; }

# Two free loopback ports: slurmctld's and slurmd's.
free_ports() {
    python3 -c 'import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])'
}

# slurm_conf: the private slurm.conf (and cgroup.conf where memory is a
# cgroup v1 hierarchy: the job's --mem is then confined, as on most
# clusters, and a kill there is Slurm's OUT_OF_MEMORY).
slurm_conf() {
    local ports hw
    read -r -a ports <<<"$(free_ports)"
    # "NodeName=<host> CPUs=.. Boards=.. ... RealMemory=..": this machine.
    hw=$(slurmd -C | head -n 1 | sed -E 's/^NodeName=[^ ]+ //')
    SLURM_MEMORY_CONFINED=0
    local task=task/none
    if [ -d /sys/fs/cgroup/memory ] && grep -qE '^[0-9]+:([^:]*,)?memory(,[^:]*)?:' /proc/self/cgroup; then
        task=task/cgroup
        SLURM_MEMORY_CONFINED=1
        printf '%s\n' CgroupPlugin=cgroup/v1 CgroupMountpoint=/sys/fs/cgroup ConstrainRAMSpace=yes \
            > "$SLURM_DIR/etc/cgroup.conf"
    fi
    cat > "$SLURM_DIR/etc/slurm.conf" <<EOF
ClusterName=sbxtest
SlurmctldHost=localhost
SlurmctldPort=${ports[0]}
SlurmdPort=${ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SLURM_DIR/sock/munge.sock
CredType=cred/munge
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/log/slurmctld.log
SlurmdLogFile=$SLURM_DIR/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=$task
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$SLURM_DIR/log/jobcomp.txt
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=3600
KillWait=5
NodeName=$SLURM_NODE NodeHostname=$(hostname) NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=sbx Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
}

# slurm_start: the cluster, ready (its node idle), or an error saying which
# daemon did not come up; SLURM_CONF names the private configuration.
slurm_start() {
    SLURM_DIR=$(mktemp -d /tmp/sbx-slurm.XXXXXX)
    SLURM_NODE=sbx$$
    export SLURM_DIR SLURM_NODE SLURM_CONF="$SLURM_DIR/etc/slurm.conf"
    # munged wants its socket's directory searchable by all, its key private.
    chmod 755 "$SLURM_DIR"
    mkdir -m 755 "$SLURM_DIR/sock"
    mkdir -m 700 "$SLURM_DIR/munge"
    mkdir "$SLURM_DIR/etc" "$SLURM_DIR/state" "$SLURM_DIR/spool" "$SLURM_DIR/log"
    head -c 1024 /dev/urandom > "$SLURM_DIR/munge/munge.key"
    chmod 600 "$SLURM_DIR/munge/munge.key"
    munged --foreground --socket="$SLURM_DIR/sock/munge.sock" --key-file="$SLURM_DIR/munge/munge.key" \
        --pid-file="$SLURM_DIR/munge/munged.pid" --seed-file="$SLURM_DIR/munge/munged.seed" \
        --log-file="$SLURM_DIR/log/munged.log" > "$SLURM_DIR/log/munged.out" 2>&1 &
    MUNGED_PID=$!
    slurm_poll 30 munge_answers || { echo "munged did not answer: $(tail -n 3 "$SLURM_DIR/log/munged.out")"; return 1; }
    slurm_conf
    slurmctld -D -i > "$SLURM_DIR/log/slurmctld.out" 2>&1 &
    SLURMCTLD_PID=$!
    slurmd -D -N "$SLURM_NODE" > "$SLURM_DIR/log/slurmd.out" 2>&1 &
    SLURMD_PID=$!
    export MUNGED_PID SLURMCTLD_PID SLURMD_PID SLURM_MEMORY_CONFINED
    slurm_poll 60 idle_or_dead
    if ! node_idle; then
        echo "node $SLURM_NODE is not idle: $(scontrol show node "$SLURM_NODE" -o 2>&1 | head -c 600)"
        tail -n 5 "$SLURM_DIR/log/slurmctld.out" "$SLURM_DIR/log/slurmd.out"
        return 1
    fi
}

# stop_pid PID: SIGTERM, then SIGKILL if it is still there after 10 s.
stop_pid() {
    [ -n "$1" ] || return 0
    kill "$1" 2>/dev/null || return 0
    slurm_poll 10 gone "$1" || kill -9 "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

# slurm_stop: every job cancelled and gone first (a job's slurmstepd
# outlives slurmd), then the daemons, Slurm's cgroups and the directory.
slurm_stop() {
    [ -n "${SLURM_DIR:-}" ] || return 0
    if [ -n "${SLURMCTLD_PID:-}" ] && kill -0 "$SLURMCTLD_PID" 2>/dev/null; then
        scancel --user=root 2>/dev/null || true
        slurm_poll 30 no_jobs || echo "# jobs still there: $(squeue -h 2>&1 | head -c 300)" >&3
    fi
    stop_pid "${SLURMD_PID:-}"
    stop_pid "${SLURMCTLD_PID:-}"
    stop_pid "${MUNGED_PID:-}"
    # task/cgroup's hierarchy for this node, slurm_<node> at the memory
    # hierarchy's root (empty once the jobs are gone).
    find /sys/fs/cgroup -maxdepth 2 -type d -name "slurm_$SLURM_NODE" 2>/dev/null | while read -r d; do
        find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done
    rm -rf "$SLURM_DIR"
}

# job_state JOBID: "STATE EXITCODE" from slurmctld (it remembers a finished
# job for MinJobAge), e.g. "FAILED 7:0".
job_state() {
    scontrol show job -o "$1" | sed -E 's/.*JobState=([A-Z_]+).*ExitCode=([0-9]+:[0-9]+).*/\1 \2/'
}

# slurm_wait JOBID SECONDS: until no task of JOBID is pending or running.
slurm_wait() {
    slurm_poll "$2" no_jobs "$1" || fail "job $1 still pending or running after $2 s: $(squeue -h -r -j "$1" 2>&1)"
}
