#!/usr/bin/env bash
# make slurm-test: a real Slurm (Debian's munged, slurmctld and one slurmd
# per host) inside the soft-RoCE VM runs examples/slurm/fleet.sbatch over
# 4 hosts; the check is the job's exit status and its JSON (every host in
# the fleet, every pair passed). The cluster and the checks are in
# testbed/slurm-cluster.sh; the results are left in .cache/slurm-test/.
#
#   testbed/slurm-test.sh RDMARUN_BINARY
#
# Needs the Debian packages slurmd, slurmctld, slurm-client and munge on
# this machine (the VM runs the host's programs); their daemons are not
# started here, only inside the VM.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
[ $# -eq 1 ] || { echo "usage: $0 RDMARUN_BINARY" >&2; exit 2; }
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
[ -x "$bin" ] || { echo "slurm-test: $1 is not an executable" >&2; exit 2; }

missing=
for p in slurmctld slurmd sbatch scontrol sinfo munged mungekey munge unmunge jq; do
    command -v "$p" >/dev/null || missing+=" $p"
done
if [ -n "$missing" ]; then
    echo "slurm-test: not installed:$missing; apt-get install slurmd slurmctld slurm-client munge jq" >&2
    exit 1
fi

# The example is a script users run as is: lint it first.
if command -v shellcheck >/dev/null; then
    shellcheck "$REPO/examples/slurm/fleet.sbatch" || exit 1
fi

out=$REPO/.cache/slurm-test
rm -rf "$out"
mkdir -p "$out"
# Emulated soft-RoCE moves about 0.1 Gb/s of a nominal 10 Gb/s and its
# latency tails reach milliseconds: the scenario's counts and thresholds
# are scaled through its variables, the file itself is the real one.
# Event mode: a round's two pairs busy-polling are four spinning threads
# on the VM's 2 CPUs, and measured their tails (300 round trips took
# 15-45 s, p99 over 50 ms) rather than the fabric. Sharing the CPUs still
# spreads a healthy pair's latency widely, hence the loose p99 limit and
# lag factor.
args=(--set mode=event --set lat_iters=100 --set bw_iters=40 --set p99_limit=500ms
    --set bw_fraction=0.0001 --set lag_factor=20)
start=$SECONDS
status=0
TESTBED_HOSTS=${SLURM_TEST_HOSTS:-4} TESTBED_EXPORT=$out \
    "$HERE/run.sh" --timeout "${TESTBED_TIMEOUT:-600}" -- "$HERE/slurm-cluster.sh" "$bin" "${args[@]}" || status=$?
echo "slurm-test: status $status after $((SECONDS - start)) s; results in $out"
exit "$status"
