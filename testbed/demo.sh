#!/usr/bin/env bash
# make demo: list the RDMA devices and run scenarios/roce-sweep.yaml, with
# its JSON, JUnit and HTML outputs left in out/. On a host with an ACTIVE
# RDMA port this runs right here, on the hardware (one device to itself,
# the file's own iteration counts and thresholds); otherwise it boots the
# soft-RoCE VM and runs rdmarun on rxe1 against `rdmarun serve` on rxe0,
# with the counts and thresholds scaled for an emulated CPU through the
# file's variables.
#
#   testbed/demo.sh RDMARUN_BINARY
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
rdmarun=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$REPO/out
mkdir -p "$out"
outputs=(--json "$out/roce-sweep.json" --junit "$out/roce-sweep.junit.xml" --html "$out/roce-sweep.html")

if "$rdmarun" devices --json 2>/dev/null | grep -q '"state": "ACTIVE"'; then
    echo "demo: an ACTIVE RDMA port is on this host; running scenarios/roce-sweep.yaml on the hardware."
    "$rdmarun" devices
    echo
    status=0
    "$rdmarun" "$REPO/scenarios/roce-sweep.yaml" "${outputs[@]}" || status=$?
    echo "demo: outputs in $out (exit status $status)"
    exit "$status"
fi

# Soft-RoCE under emulation moves about 0.1 Gb/s of a nominal 10 Gb/s and
# its latency tails reach milliseconds.
emulated=(--set lat_iters=300 --set bw_iters=8 --set max_size=2MiB --set p99_limit=50ms --set bw_fraction=0.0005)
echo "demo: no ACTIVE RDMA port on this host; booting the soft-RoCE testbed VM (QEMU, rdma_rxe)."
echo "demo: scenarios/roce-sweep.yaml with ${emulated[*]}"
"$HERE/build.sh"
status=0
TESTBED_EXPORT=$out "$HERE/run.sh" --timeout "${TESTBED_TIMEOUT:-900}" -- sh -c "
    echo '== rdmarun devices (inside the VM)'
    '$rdmarun' devices || exit \$?
    echo
    echo '== rdmarun token: the shared secret a responder on a network address needs'
    '$rdmarun' token /tmp/token || exit \$?
    echo '== rdmarun serve on rxe0 (10.0.0.1); the scenario runs on rxe1: soft-RoCE over a veth pair, on an emulated CPU'
    '$rdmarun' serve --device rxe0 --listen 10.0.0.1:18520 --token-file /tmp/token --log-level warn &
    serve=\$!
    sleep 0.5
    o=\$TESTBED_RUN_DIR/export
    '$rdmarun' '$REPO/scenarios/roce-sweep.yaml' --device rxe1 --peer 10.0.0.1 --token-file /tmp/token ${emulated[*]} \
        --json \$o/roce-sweep.json --junit \$o/roce-sweep.junit.xml --html \$o/roce-sweep.html
    st=\$?
    kill \$serve
    wait \$serve 2>/dev/null
    exit \$st
" || status=$?
echo "demo: outputs in $out: $(cd "$out" && ls | tr '\n' ' ')(exit status $status)"
exit "$status"
