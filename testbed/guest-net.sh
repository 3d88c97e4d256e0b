#!/bin/sh
# Network and soft-RoCE setup inside the testbed guest. Runs as root in the
# chroot on the host's root file system (init.sh calls it), so it uses the
# host's ip and rdma tools.
#
#   guest-net.sh [HOSTS [SIW]]     HOSTS: 2 (default) to 10; SIW: 1 adds soft-iWARP
#
# Host i (0-based) is rxe<i> on veth<i> with 10.0.0.<i+1>/24, port ACTIVE,
# and RoCE traffic between any two hosts really crosses their veths (so
# netem on a veth, or a veth going down, affects it).
#  - 2 hosts: veth0 and veth1 are the two ends of one veth pair.
#  - 3 or more: each veth<i> is paired with bport<i>, a port of bridge br0;
#    the bridge module is loaded by init.sh only then.
#
# Why not network namespaces, one per host: `rdma link add` accepts a
# netdev in another namespace (the RDMA subsystem runs in shared mode), but
# rxe in the 6.1 kernel opens its RoCE UDP socket (port 4791) in the
# initial namespace only, so such a device receives nothing; RC connects
# fail. All hosts share one namespace, and the rules below keep their
# traffic off lo.
#
# Each process start costs about 30 ms under TCG: one ip batch, sysctls
# written through /proc with shell builtins, one rdma batch.
set -eu

fail() { echo "testbed-net: $*" >&2; exit 1; }

hosts=${1:-2}
siw=${2:-0}
case $hosts in
    [2-9]|10) ;;
    *) fail "TESTBED_HOSTS must be a whole number from 2 to 10 (got '$hosts')" ;;
esac

# Every address is local, so by default the kernel delivers
# 10.0.0.2 -> 10.0.0.1 through lo and rxe never sees a packet on the wire.
# The rules below make output to a peer leave by the sender's veth:
#  - the "local" table moves from pref 0 to 100, so earlier rules win;
#  - a packet to a veth's own address sent via that same veth (rxe0 to
#    itself) still goes through local, else single-device loopback hangs;
#  - a per-oif table routes the subnet out of that veth with its source;
#  - sockets bound to one address talking to another (rdma_cm clients
#    bound to a source) use the source's veth table: one rule per ordered
#    pair, so a socket bound to an address talking to itself stays on lo.
# Rule prefs 10+i, 20+i and 30+j are why there are at most 10 hosts.
links() {
    if [ "$hosts" = 2 ]; then
        echo "link add veth0 type veth peer name veth1"
        return
    fi
    # No STP: ports forward at once. Without snooping the bridge floods
    # multicast like a hub, which is all IPv6 neighbour discovery needs.
    echo "link add br0 type bridge stp_state 0 mcast_snooping 0"
    i=0
    while [ $i -lt "$hosts" ]; do
        echo "link add veth$i type veth peer name bport$i"
        echo "link set bport$i master br0"
        echo "link set bport$i up"
        i=$((i + 1))
    done
    echo "link set br0 up"
}
rules() {
    i=0
    while [ $i -lt "$hosts" ]; do
        echo "addr add 10.0.0.$((i + 1))/24 dev veth$i"
        i=$((i + 1))
    done
    i=0
    while [ $i -lt "$hosts" ]; do
        echo "link set veth$i up"
        i=$((i + 1))
    done
    echo "rule add pref 100 lookup local"
    echo "rule del pref 0 lookup local"
    i=0
    while [ $i -lt "$hosts" ]; do
        echo "rule add pref $((10 + i)) to 10.0.0.$((i + 1)) oif veth$i lookup local"
        i=$((i + 1))
    done
    i=0
    while [ $i -lt "$hosts" ]; do
        echo "rule add pref $((20 + i)) oif veth$i lookup $((10 + i))"
        i=$((i + 1))
    done
    j=0
    while [ $j -lt "$hosts" ]; do
        i=0
        while [ $i -lt "$hosts" ]; do
            [ $i = $j ] || echo "rule add pref $((30 + j)) from 10.0.0.$((i + 1)) to 10.0.0.$((j + 1)) iif lo lookup $((10 + i))"
            i=$((i + 1))
        done
        j=$((j + 1))
    done
    i=0
    while [ $i -lt "$hosts" ]; do
        echo "route add 10.0.0.0/24 dev veth$i src 10.0.0.$((i + 1)) table $((10 + i))"
        i=$((i + 1))
    done
}
{ echo "link set lo up"; links; rules; } | ip -batch - || fail "ip setup failed"

# Packets arriving on one veth carry a source address that is local too;
# without accept_local and rp_filter 0 the receiver drops them as martians.
# On the bridge every veth hears every ARP request, and by default each
# would answer for all the local addresses: arp_ignore 1 leaves the answer
# to the owner, arp_announce 2 makes requests carry the sender's own
# address. A veth pair has no third party to confuse, so 2 hosts keep the
# defaults.
# The veths hand each received packet to the kernel's per-CPU backlog,
# which drops past net.core.netdev_max_backlog (1000 by default). One
# 1 MiB message is 1024 packets at soft-RoCE's 1024 B MTU, so a single
# read response could overflow it: the soak counted hundreds of veth drops
# (and as many rxe send_err) and the QPs that met them failed, and a CI
# run once saw a 1 MiB read end in RETRY_EXC_ERR. An emulated fabric, not
# the code under test, was failing: real NICs do not share this queue,
# and a lossless RoCE fabric holds a sender back rather than drop. rxe's
# read responder sends a whole response at once, so the largest burst is
# the large-message matrix's 4 QPs x 16 MiB read: 65536 packets. At 16384
# ib_read_bw -q 4 -s 8M lost 3183 packets here (softnet_stat) and failed;
# twice the burst leaves room for a second pair and retransmissions, at
# most about 300 MB of queued packets.
echo 131072 >/proc/sys/net/core/netdev_max_backlog

i=0
devs="all default"
while [ $i -lt "$hosts" ]; do devs="$devs veth$i"; i=$((i + 1)); done
for dev in $devs; do
    echo 1 >/proc/sys/net/ipv4/conf/$dev/accept_local
    echo 0 >/proc/sys/net/ipv4/conf/$dev/rp_filter
    if [ "$hosts" -gt 2 ]; then
        echo 1 >/proc/sys/net/ipv4/conf/$dev/arp_ignore
        echo 2 >/proc/sys/net/ipv4/conf/$dev/arp_announce
    fi
done

i=0
while [ $i -lt "$hosts" ]; do
    echo "link add rxe$i type rxe netdev veth$i"
    i=$((i + 1))
done | rdma -b - || fail "rdma link add failed (is crc32_generic loaded before rdma_rxe?)"

# The ports turn ACTIVE once the veths carry link; usually at once.
# wait_active DEV... waits at most ~10 s in all, reading sysfs with
# builtins.
wait_active() {
    n=0
    for dev in "$@"; do
        while :; do
            read -r state </sys/class/infiniband/$dev/ports/1/state || state=
            case $state in *ACTIVE*) break ;; esac
            n=$((n + 1))
            [ $n -lt 200 ] || fail "$dev port not ACTIVE after 10 s (state: $state)"
            sleep 0.05
        done
    done
}
i=0 devs=
while [ $i -lt "$hosts" ]; do devs="$devs rxe$i"; i=$((i + 1)); done
# shellcheck disable=SC2086 # a list of device names
wait_active $devs

# Soft-iWARP (SIW=1): host i also has siw<i> on iwveth<i> (10.0.1.<i+1>),
# a network of its own laid out and routed like the RoCE one (2 hosts: a
# veth pair; more: ports of bridge br1; rule prefs 40+i, 50+i, 60+j and
# tables 60+i). Not beside rxe on veth<i>: the CM binds an address to the
# first RDMA device on its netdev, so the iWARP devices there would get
# rxe's connections (or rxe theirs).
siw_links() {
    if [ "$hosts" = 2 ]; then
        echo "link add iwveth0 type veth peer name iwveth1"
        return
    fi
    echo "link add br1 type bridge stp_state 0 mcast_snooping 0"
    i=0
    while [ $i -lt "$hosts" ]; do
        echo "link add iwveth$i type veth peer name iwport$i"
        echo "link set iwport$i master br1"
        echo "link set iwport$i up"
        i=$((i + 1))
    done
    echo "link set br1 up"
}
siw_rules() {
    i=0
    while [ $i -lt "$hosts" ]; do
        echo "addr add 10.0.1.$((i + 1))/24 dev iwveth$i"
        echo "link set iwveth$i up"
        echo "rule add pref $((40 + i)) to 10.0.1.$((i + 1)) oif iwveth$i lookup local"
        echo "rule add pref $((50 + i)) oif iwveth$i lookup $((60 + i))"
        echo "route add 10.0.1.0/24 dev iwveth$i src 10.0.1.$((i + 1)) table $((60 + i))"
        i=$((i + 1))
    done
    j=0
    while [ $j -lt "$hosts" ]; do
        i=0
        while [ $i -lt "$hosts" ]; do
            [ $i = $j ] || echo "rule add pref $((60 + j)) from 10.0.1.$((i + 1)) to 10.0.1.$((j + 1)) iif lo lookup $((60 + i))"
            i=$((i + 1))
        done
        j=$((j + 1))
    done
}
if [ "$siw" = 1 ]; then
    { siw_links; siw_rules; } | ip -batch - || fail "ip setup of the iWARP network failed"
    i=0 devs=
    while [ $i -lt "$hosts" ]; do
        echo 1 >/proc/sys/net/ipv4/conf/iwveth$i/accept_local
        echo 0 >/proc/sys/net/ipv4/conf/iwveth$i/rp_filter
        if [ "$hosts" -gt 2 ]; then
            echo 1 >/proc/sys/net/ipv4/conf/iwveth$i/arp_ignore
            echo 2 >/proc/sys/net/ipv4/conf/iwveth$i/arp_announce
        fi
        devs="$devs siw$i"
        i=$((i + 1))
    done
    i=0
    while [ $i -lt "$hosts" ]; do
        echo "link add siw$i type siw netdev iwveth$i"
        i=$((i + 1))
    done | rdma -b - || fail "rdma link add siw failed (is siw loaded? TESTBED_SIW=1 loads it)"
    # shellcheck disable=SC2086 # a list of device names
    wait_active $devs
fi
