#!/usr/bin/env bash
# Inside the testbed VM (TESTBED_HOSTS >= 2): a real Slurm cluster of one
# node per soft-RoCE host, then examples/slurm/fleet.sbatch submitted to it
# and its results checked. testbed/slurm-test.sh boots the VM for this.
#
#   slurm-cluster.sh RDMARUN_BINARY [FLEET RUN ARGS...]
#
# The cluster: munged with a key made here, slurmctld, and one slurmd per
# host (node<i> is host i: rxe<i> on 10.0.0.<i+1>). Debian's Slurm is built
# with multiple-slurmd support, so every slurmd runs in this one kernel
# with `slurmd -N node<i>`, its own port and its own spool, pid and log
# files (%n in slurm.conf). The node names resolve through a hosts file
# bound over /etc/hosts, as the fleet dials hosts by their Slurm names.
# No cgroups, systemd or accounting: proctrack/linuxproc, task/none.
#
# Exit status: 0 when the job ran the fleet and its JSON says every pair
# passed; 1 when a check failed; 125 when the cluster could not start.
# shellcheck disable=SC2016 # $n in the checks below is jq's
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 RDMARUN_BINARY [FLEET RUN ARGS...]" >&2; exit 2; }
rdmarun=$1
shift
hosts=${TESTBED_HOSTS:?run this inside the testbed VM (testbed/slurm-test.sh)}
D=/tmp/slurm
export SLURM_CONF=$D/slurm.conf
t0=$SECONDS

say() { echo "slurm-test: $*"; }
now() { echo "$((SECONDS - t0)) s"; }
# Everything the cluster wrote goes to the host when a step fails.
keep_logs() {
    local dst=$TESTBED_RUN_DIR/export/logs
    mkdir -p "$dst" && cp -r "$D"/*.log "$D"/munge/*.log "$D"/job "$dst/" 2>/dev/null
    say "logs copied out (TESTBED_EXPORT)"
}
broken() { say "cluster: $*"; keep_logs; exit 125; }
failed() { say "FAIL: $*"; keep_logs; exit 1; }

# Stop in the reverse order of starting, each by its pid file: jobs'
# steps first (slurmd), then the controller, then munged.
stop_cluster() {
    local f i
    for f in "$D"/slurmd-*.pid "$D"/slurmctld.pid "$D"/munge/munged.pid; do
        [ -s "$f" ] || continue
        kill -TERM "$(cat "$f")" 2>/dev/null || continue
        for ((i = 0; i < 50; i++)); do
            kill -0 "$(cat "$f" 2>/dev/null)" 2>/dev/null || break
            sleep 0.1
        done
    done
}
trap stop_cluster EXIT

# wait_for SECONDS WHAT CMD...: poll CMD until it succeeds or time is up.
wait_for() {
    local limit=$1 what=$2 end=$((SECONDS + $1))
    shift 2
    until "$@" >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$end" ] || broken "$what: not within $limit s"
        sleep 0.5
    done
}

mkdir -p "$D"/munge "$D"/state "$D"/spool "$D"/job || broken "cannot create $D"
chmod 755 "$D"/munge

# Node names resolve to the hosts' addresses, here and in every job.
{
    echo "127.0.0.1 localhost"
    for ((i = 0; i < hosts; i++)); do echo "10.0.0.$((i + 1)) node$i"; done
} >"$D/hosts"
mount --bind "$D/hosts" /etc/hosts || broken "cannot bind $D/hosts over /etc/hosts"

mungekey --create --keyfile="$D/munge/munge.key" --bits=1024 || broken "mungekey failed"
# --force: munged refuses a socket directory under a world-writable /tmp.
munged --force --socket="$D/munge/munge.sock" --key-file="$D/munge/munge.key" \
    --log-file="$D/munge/munged.log" --pid-file="$D/munge/munged.pid" --seed-file="$D/munge/seed" ||
    broken "munged did not start (see munged.log)"
munge -n -S "$D/munge/munge.sock" | unmunge -S "$D/munge/munge.sock" >/dev/null ||
    broken "munge cannot encode and decode a credential"

{
    cat <<CONF
ClusterName=rdmarun-testbed
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=16817
AuthType=auth/munge
AuthInfo=socket=$D/munge/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
SelectType=select/linear
MpiDefault=none
ReturnToService=2
StateSaveLocation=$D/state
SlurmctldPidFile=$D/slurmctld.pid
SlurmctldLogFile=$D/slurmctld.log
SlurmdSpoolDir=$D/spool/%n
SlurmdPidFile=$D/slurmd-%n.pid
SlurmdLogFile=$D/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
CONF
    for ((i = 0; i < hosts; i++)); do
        echo "NodeName=node$i NodeAddr=10.0.0.$((i + 1)) Port=$((16820 + i)) CPUs=1 State=UNKNOWN"
    done
    echo "PartitionName=rdma Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
} >"$SLURM_CONF"

# slurmd loads a cgroup plugin even when nothing uses it; without one
# named it probes /sys/fs/cgroup, which this VM does not mount.
echo "CgroupPlugin=cgroup/v1" >"$D/cgroup.conf"

slurmctld -i || broken "slurmctld did not start (see slurmctld.log)"
wait_for 30 "slurmctld answering" sh -c 'scontrol ping | grep -q "is UP"'
multiple=$(scontrol show config | awk '$1 == "MULTIPLE_SLURMD" {print $3}')
say "slurmctld up after $(now); MULTIPLE_SLURMD = ${multiple:-(not shown)}"
[ "$multiple" = Yes ] || broken "this Slurm is built without multiple-slurmd support (MULTIPLE_SLURMD=${multiple:-?}): slurmd -N cannot run $hosts nodes in one kernel"
for ((i = 0; i < hosts; i++)); do
    mkdir -p "$D/spool/node$i" || broken "cannot create $D/spool/node$i"
    slurmd -N "node$i" || broken "slurmd -N node$i did not start (see slurmd-node$i.log)"
done
all_idle() { [ "$(sinfo -h -N -t idle -o %N | sort -u | wc -l)" -eq "$hosts" ]; }
wait_for 60 "$hosts nodes idle" all_idle
say "$hosts slurmd nodes idle after $(now):"
sinfo -N

# The job's settings, as a user would export them before sbatch.
"$rdmarun" token "$D/token" || broken "rdmarun token failed"
map=
for ((i = 0; i < hosts; i++)); do map+="${map:+,}node$i=rxe$i"; done
export RDMARUN=$rdmarun RDMARUN_TOKEN_FILE=$D/token RDMARUN_DEVICE_MAP=$map \
    RDMARUN_SCENARIO=$REPO/examples/slurm/fleet.yaml RDMARUN_OUT=$D/job/out \
    RDMARUN_ARGS="$*" RDMARUN_SERVE_ARGS="--log-level info"

# run_job LIMIT [SBATCH ARGS...]: submit fleet.sbatch and wait for it to
# end (sbatch --wait polls at up to 10 s intervals; this polls at 0.5 s).
# Sets job (its id) and job_status (its exit code).
run_job() {
    local limit=$1 state end
    shift
    job=$(sbatch --parsable "$@" "$REPO/examples/slurm/fleet.sbatch") || broken "sbatch refused the job"
    end=$((SECONDS + limit))
    while :; do
        state=$(scontrol show job -o "$job") || broken "scontrol show job $job failed"
        case $state in
            *JobState=PENDING* | *JobState=RUNNING* | *JobState=CONFIGURING* | *JobState=COMPLETING*) ;;
            *) break ;;
        esac
        if [ "$SECONDS" -ge "$end" ]; then
            scancel "$job"
            failed "job $job did not end within $limit s: $(grep -o 'JobState=[^ ]*' <<<"$state")"
        fi
        sleep 0.5
    done
    [[ $state =~ ExitCode=([0-9]+):([0-9]+) ]] || broken "no ExitCode in: $state"
    job_status=${BASH_REMATCH[1]}
    [ "${BASH_REMATCH[2]}" = 0 ] || job_status=$((128 + BASH_REMATCH[2]))
}
cd "$D/job" || broken "cd $D/job"

# A setting the job cannot use stops it before any step, naming the fix.
t_job=$SECONDS
RDMARUN_TOKEN_FILE=$D/no-such-token run_job 60 -N "$hosts"
if [ "$job_status" -ne 3 ] || ! grep -q "RDMARUN_TOKEN_FILE" "rdmarun-fleet-$job.out"; then
    failed "a job with a missing token file: status $job_status (want 3), output: $(cat "rdmarun-fleet-$job.out")"
fi
say "a job with a missing token file: status 3 after $((SECONDS - t_job)) s, naming RDMARUN_TOKEN_FILE"

say "sbatch -N $hosts examples/slurm/fleet.sbatch (RDMARUN_ARGS: $RDMARUN_ARGS)"
t_job=$SECONDS
run_job 400 -N "$hosts"
say "job $job ended with status $job_status after $((SECONDS - t_job)) s"
echo "--- job output"
cat "$D/job/rdmarun-fleet-$job.out"
echo "---"
for f in "$D"/job/out/serve-*.log; do echo "--- $(basename "$f")"; cat "$f"; done
mkdir -p "$TESTBED_RUN_DIR/export" && cp -r "$D/job/out" "$TESTBED_RUN_DIR/export/"
[ "$job_status" -eq 0 ] || failed "the job exited with status $job_status, want 0"

# The job's report: the fleet is the job's nodes, all-pairs scheduled
# every pair once in N-1 rounds (N even), and every run of every pair
# passed, on its last attempt: emulation has its hiccups, and confirm:
# re-runs a bad pair so that one does not blame a node. No suspect.
json=$D/job/out/fleet.json
[ -s "$json" ] || failed "the job wrote no $json"
for f in fleet.junit.xml fleet.html; do
    [ -s "$D/job/out/$f" ] || failed "the job wrote no $f"
done
check() { # check WHAT JQ_EXPR: the expression must yield true
    jq -e --argjson n "$hosts" "$2" "$json" >/dev/null || failed "fleet.json: $1 (jq: $2)"
}
check "schema v4, the current one" '.schema == "rdmarun.report/v4"'
check "hosts from the Slurm node list" '.fleet.source | startswith("slurm")'
check "the job's $hosts nodes are the fleet" \
    '[.fleet.hosts[].name] == [range($n) | "node\(.)"]'
check "all-pairs" '.fleet.pattern == "all-pairs"'
check "every run belongs to a pair" '.runs | length > 0 and all(.pair != null)'
check "every pair of nodes ran, once" \
    '[.runs[] | select(.pair.attempt == 0) | [.pair.a, .pair.b] | sort | join(" ")] | unique | length == $n * ($n - 1) / 2'
check "every pair ran the same runs" \
    '[.runs[] | select(.pair.attempt == 0) | [.pair.a, .pair.b] | sort | join(" ")] | group_by(.) | map(length) | unique | length == 1'
check "N-1 rounds" '[.fleet.rounds[] | select(.attempt == 0)] | length == (if $n % 2 == 0 then $n - 1 else $n end)'
check "every run of every pair passed on its last attempt" \
    '[.runs[] | {k: "\(.pair.a) \(.pair.b) \(.index)", a: .pair.attempt, s: .status}] | group_by(.k)
     | all((map(.a) | max) as $last | map(select(.a == $last)) | all(.s == "passed"))'
check "no suspects" '(.fleet.suspects // []) | length == 0'
say "PASS: job $job ran the fleet over $hosts Slurm nodes: $(jq -r '"\(.runs | length) runs (\([.runs[] | select(.pair.attempt > 0)] | length) of them confirmations) in \(.fleet.rounds | length) rounds, \(.summary.passed) passed"' "$json"); $(now) in the VM"
