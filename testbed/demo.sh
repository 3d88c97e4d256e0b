#!/usr/bin/env bash
# make demo: list the RDMA devices and measure RDMA WRITE latency. On a
# host with an ACTIVE RDMA port this runs right here, on the hardware;
# otherwise it boots the soft-RoCE VM and runs between rxe1 and rxe0.
#
#   testbed/demo.sh RDMARUN_BINARY
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rdmarun=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")

if "$rdmarun" devices --json 2>/dev/null | grep -q '"state": "ACTIVE"'; then
    echo "demo: an ACTIVE RDMA port is on this host; measuring on the hardware (one device to itself)."
    "$rdmarun" devices
    echo
    exec "$rdmarun" loopback --op write --sizes 2,64,4096 --iters 10000 --warmup 1000
fi

echo "demo: no ACTIVE RDMA port on this host; booting the soft-RoCE testbed VM (QEMU, rdma_rxe)."
"$HERE/build.sh"
exec "$HERE/run.sh" --timeout "${TESTBED_TIMEOUT:-600}" -- sh -c "
    echo '== rdmarun devices (inside the VM)'
    '$rdmarun' devices || exit \$?
    echo
    echo '== rdmarun loopback: RDMA WRITE latency, rxe1 -> rxe0 over veth (soft-RoCE, software-emulated CPU)'
    '$rdmarun' loopback --op write --device rxe1 --peer-device rxe0 --sizes 2,64,4096 --iters 2000 --warmup 200
"
