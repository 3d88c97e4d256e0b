#!/bin/sh
# Network faults between the testbed's soft-RoCE hosts, run as root inside
# the VM (testbed/run.sh). Host i is rxe<i> on veth<i> with 10.0.0.<i+1>.
#
#   fault.sh host-down I          take host I's link down (its rxe port
#                                 goes DOWN; with 2 hosts, a veth pair,
#                                 the peer's goes down with it)
#   fault.sh host-up I            bring it back
#   fault.sh path-loss I J PCT [both]   drop PCT % of IP packets from I to J
#   fault.sh path-delay I J MS [both]   delay them by MS milliseconds
#   fault.sh path I J NETEM... [both]   any netem settings, e.g.
#                                       `loss 5% delay 20ms`
#   fault.sh rx-loss J PCT        drop PCT % of every packet reaching
#                                 host J, multicast included (3 or more
#                                 hosts: on the bridge's port toward J)
#   fault.sh clear                every host up, every path fault removed,
#                                 every rxe port ACTIVE again (10 s limit)
#   fault.sh show                 the qdiscs and filters in place
#
# A path fault sits on the sending host's veth: a prio qdisc there gives
# each destination its own band, a u32 filter on the destination address
# steers into it, and netem acts only on that band. ARP and traffic to
# other hosts pass untouched, so another pair through the same veths is
# not affected. "both" also puts it on J -> I. A new fault on a path
# replaces the one before (use `path` to combine loss and delay).
# Only traffic that really crosses the veths is affected: RoCE, and sockets
# bound to a host's address; an unbound TCP socket goes through lo.
set -eu

me=fault.sh
die() { echo "$me: $*" >&2; exit 2; }
usage() { sed -n '4,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

hosts() { # the hosts that exist: veth0, veth1, ... in a row
    n=0
    while [ -e /sys/class/net/veth$n ]; do n=$((n + 1)); done
    [ "$n" -gt 0 ] || die "no veth0: run inside the testbed VM (testbed/run.sh)"
    echo "$n"
}
host() { # host NAME VALUE: checks a host index
    case $2 in
        ''|*[!0-9]*) die "$1 must be a host index 0 to $(($(hosts) - 1)) (got '$2')" ;;
    esac
    [ "$2" -lt "$(hosts)" ] || die "$1 must be a host index 0 to $(($(hosts) - 1)) (got '$2'; TESTBED_HOSTS sets the number)"
}
run() { "$@" || die "'$*' failed"; }

# The prio qdisc's own 3 bands keep the default priomap; destination j
# gets band 4+j (class 1:<hex>), its netem handle <4+j>0:.
band() { printf '%x' $((4 + $1)); }

path() { # path FROM TO NETEM-ARGS...
    from=$1 to=$2
    shift 2
    [ "$from" != "$to" ] || die "a path needs two different hosts (got $from $to)"
    dev=veth$from b=$(band "$to")
    if ! tc qdisc show dev "$dev" | grep -q '^qdisc prio 1: root'; then
        if tc qdisc show dev "$dev" | grep -q ' root ' &&
           ! tc qdisc show dev "$dev" | grep -q '^qdisc noqueue 0: root'; then
            die "$dev already has another root qdisc; run '$me clear' first"
        fi
        run tc qdisc add dev "$dev" root handle 1: prio bands 16
    fi
    run tc qdisc replace dev "$dev" parent "1:$b" handle "${b}0:" netem "$@"
    if ! tc filter show dev "$dev" parent 1: | grep -q "flowid 1:$b\$\|flowid 1:$b "; then
        run tc filter add dev "$dev" parent 1: protocol ip prio 1 u32 \
            match ip dst "10.0.0.$((to + 1))/32" flowid "1:$b"
    fi
}

# path_cmd I J [NETEM...] [both]: the last word "both" means both ways.
path_cmd() {
    host I "$1"
    host J "$2"
    from=$1 to=$2
    shift 2
    both=
    args=
    for a in "$@"; do
        if [ "$a" = both ]; then both=1; else args="$args $a"; fi
    done
    [ -n "$args" ] || die "no netem settings given"
    # shellcheck disable=SC2086 # netem words, split on purpose
    path "$from" "$to" $args
    # shellcheck disable=SC2086
    [ -z "$both" ] || path "$to" "$from" $args
}

wait_active() {
    n=$(hosts) i=0 tries=0
    while [ $i -lt "$n" ]; do
        read -r state </sys/class/infiniband/rxe$i/ports/1/state || state=
        case $state in
            *ACTIVE*) i=$((i + 1)); continue ;;
        esac
        tries=$((tries + 1))
        [ $tries -lt 200 ] || die "rxe$i port not ACTIVE 10 s after the faults were cleared (state: $state)"
        sleep 0.05
    done
}

[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
    host-down|host-up)
        [ $# = 1 ] || usage
        host I "$1"
        state=down
        [ "$cmd" = host-down ] || state=up
        run ip link set "veth$1" "$state" ;;
    path-loss)
        [ $# -ge 3 ] || usage
        pct=${3%%%}
        case $pct in
            ''|*[!0-9.]*) die "PCT must be a percentage such as 20 or 2.5 (got '$3')" ;;
        esac
        a=$1 b=$2
        shift 3
        path_cmd "$a" "$b" loss "$pct%" "$@" ;;
    path-delay)
        [ $# -ge 3 ] || usage
        ms=${3%ms}
        case $ms in
            ''|*[!0-9]*) die "MS must be whole milliseconds such as 20 (got '$3')" ;;
        esac
        a=$1 b=$2
        shift 3
        path_cmd "$a" "$b" delay "${ms}ms" "$@" ;;
    path)
        [ $# -ge 3 ] || usage
        path_cmd "$@" ;;
    rx-loss)
        # A multicast packet has the group as its destination, so the
        # sender's per-destination filters cannot single out one
        # receiver; the bridge port toward J carries only J's share.
        [ $# = 2 ] || usage
        host J "$1"
        [ -e "/sys/class/net/bport$1" ] || die "rx-loss needs the bridge layout (TESTBED_HOSTS=3 or more)"
        pct=${2%%%}
        case $pct in
            ''|*[!0-9.]*) die "PCT must be a percentage such as 20 or 2.5 (got '$2')" ;;
        esac
        run tc qdisc replace dev "bport$1" root netem loss "$pct%" ;;
    clear)
        [ $# = 0 ] || usage
        n=$(hosts) i=0
        while [ $i -lt "$n" ]; do
            # Deleting an absent root qdisc fails; that is the clean state.
            tc qdisc del dev "veth$i" root 2>/dev/null || true
            [ ! -e "/sys/class/net/bport$i" ] || tc qdisc del dev "bport$i" root 2>/dev/null || true
            run ip link set "veth$i" up
            i=$((i + 1))
        done
        wait_active ;;
    show)
        n=$(hosts) i=0
        while [ $i -lt "$n" ]; do
            echo "veth$i: $(cat /sys/class/net/veth$i/operstate)"
            tc qdisc show dev "veth$i" | sed 's/^/  /'
            tc filter show dev "veth$i" parent 1: 2>/dev/null | grep -E 'flowid|match' | sed 's/^/  /' || true
            [ ! -e "/sys/class/net/bport$i" ] || tc qdisc show dev "bport$i" | sed 's/^/  bport: /'
            i=$((i + 1))
        done ;;
    -h|--help|help) usage ;;
    *) echo "$me: unknown command '$cmd'" >&2; usage ;;
esac
