#!/usr/bin/env bash
# make demo: list the RDMA devices and measure RDMA latency and bandwidth.
# On a host with an ACTIVE RDMA port this runs right here, on the
# hardware (one device to itself); otherwise it boots the soft-RoCE VM and
# runs rdmarun bench on rxe1 against rdmarun serve on rxe0.
#
#   testbed/demo.sh RDMARUN_BINARY
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rdmarun=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")

if "$rdmarun" devices --json 2>/dev/null | grep -q '"state": "ACTIVE"'; then
    echo "demo: an ACTIVE RDMA port is on this host; measuring on the hardware (one device to itself)."
    "$rdmarun" devices
    echo
    "$rdmarun" bench --op write --sizes 2,64,4KiB --iters 10000
    echo
    exec "$rdmarun" bench --op write --measure bandwidth --sizes 64KiB,1MiB --iters 5000
fi

echo "demo: no ACTIVE RDMA port on this host; booting the soft-RoCE testbed VM (QEMU, rdma_rxe)."
"$HERE/build.sh"
exec "$HERE/run.sh" --timeout "${TESTBED_TIMEOUT:-600}" -- sh -c "
    set -e
    echo '== rdmarun devices (inside the VM)'
    '$rdmarun' devices
    echo
    echo '== rdmarun serve on rxe0 (10.0.0.1), rdmarun bench on rxe1: soft-RoCE over a veth pair, on an emulated CPU'
    '$rdmarun' serve --device rxe0 --listen 10.0.0.1:18520 --log-level warn &
    serve=\$!
    trap 'kill \$serve 2>/dev/null' EXIT
    sleep 0.5
    echo
    '$rdmarun' bench --peer 10.0.0.1 --device rxe1 --op write --sizes 2,64,4KiB --iters 2000
    echo
    '$rdmarun' bench --peer 10.0.0.1 --device rxe1 --op read --sizes 2,4KiB --iters 1000
    echo
    '$rdmarun' bench --peer 10.0.0.1 --device rxe1 --op write --measure bandwidth --sizes 4KiB,64KiB --iters 500 --qps 2 --threads 2
"
