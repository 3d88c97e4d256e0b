#!/bin/sh
# Network and soft-RoCE setup inside the testbed guest. Runs as root in the
# chroot on the host's root file system (init.sh calls it), so it uses the
# host's ip and rdma tools.
#
# Result: veth0 10.0.0.1/24 <-> veth1 10.0.0.2/24, rxe0 on veth0, rxe1 on
# veth1, both ports ACTIVE, and RoCE traffic between them really crossing
# the veth pair (so netem on a veth affects it).
#
# Each process start costs about 30 ms under TCG: one ip batch, sysctls
# written through /proc with shell builtins, one rdma batch.
set -eu

fail() { echo "testbed-net: $*" >&2; exit 1; }

# Both addresses are local, so by default the kernel delivers
# 10.0.0.2 -> 10.0.0.1 through lo and rxe never sees a packet on the wire.
# The rules below make output to the peer leave by the owning veth:
#  - the "local" table moves from pref 0 to 100, so earlier rules win;
#  - a packet to a veth's own address sent via that same veth (rxe0 to
#    itself) still goes through local, else single-device loopback hangs;
#  - a per-oif table routes the subnet out of that veth with its source;
#  - sockets bound to one address talking to the other (rdma_cm clients
#    bound to a source) use the source's veth table.
ip -batch - <<'EOF' || fail "ip setup failed"
link set lo up
link add veth0 type veth peer name veth1
addr add 10.0.0.1/24 dev veth0
addr add 10.0.0.2/24 dev veth1
link set veth0 up
link set veth1 up
rule add pref 100 lookup local
rule del pref 0 lookup local
rule add pref 10 to 10.0.0.1 oif veth0 lookup local
rule add pref 11 to 10.0.0.2 oif veth1 lookup local
rule add pref 20 oif veth0 lookup 10
rule add pref 21 oif veth1 lookup 11
rule add pref 30 from 10.0.0.2 to 10.0.0.1 iif lo lookup 11
rule add pref 31 from 10.0.0.1 to 10.0.0.2 iif lo lookup 10
route add 10.0.0.0/24 dev veth0 src 10.0.0.1 table 10
route add 10.0.0.0/24 dev veth1 src 10.0.0.2 table 11
EOF

# Packets arriving on one veth carry a source address that is local too;
# without these the receiving side drops them as martians.
for dev in all default veth0 veth1; do
    echo 1 >/proc/sys/net/ipv4/conf/$dev/accept_local
    echo 0 >/proc/sys/net/ipv4/conf/$dev/rp_filter
done

rdma -b - <<'EOF' || fail "rdma link add failed (is crc32_generic loaded before rdma_rxe?)"
link add rxe0 type rxe netdev veth0
link add rxe1 type rxe netdev veth1
EOF

# The ports turn ACTIVE once the veths carry link; usually at once. Wait at
# most ~10 s, reading sysfs with builtins.
i=0
for dev in rxe0 rxe1; do
    while :; do
        read -r state </sys/class/infiniband/$dev/ports/1/state || state=
        case $state in *ACTIVE*) break ;; esac
        i=$((i + 1))
        [ $i -lt 200 ] || fail "$dev port not ACTIVE after 10 s (state: $state)"
        sleep 0.05
    done
done
