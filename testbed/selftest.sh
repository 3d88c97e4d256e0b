#!/usr/bin/env bash
# Self-test of the testbed: exit statuses, the rxe devices, real RDMA
# traffic between rxe1 and rxe0, and the failure modes (a hanging command,
# a VM that dies, a boot that outlasts its limit). Each VM boot costs ~6 s
# of both cores, so the checks share boots, and the two slow failure
# checks run side by side.
#
# Last line: "N passed, N failed"; the exit status is non-zero on failure.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
RUN=$HERE/run.sh
passed=0 failed=0
ok()  { passed=$((passed + 1)); echo "ok   - $*"; }
bad() { failed=$((failed + 1)); echo "FAIL - $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }

"$HERE/build.sh" || { echo "0 passed, 1 failed"; exit 1; }
WORK=$(mktemp -d)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT
t_all=$(date +%s)

# Start run.sh in the background, capturing status, output and duration.
# start NAME [run.sh args...]; finish NAME waits and sets rc/secs.
start() {
    local name=$1; shift
    (
        s=$(date +%s)
        st=0
        "$RUN" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" || st=$?
        echo "$st $(( $(date +%s) - s ))" >"$WORK/$name.rc"
    ) &
    pids+=($!)
    eval "pid_$name=\$!"
}
finish() {
    local name=$1 pid
    eval "pid=\$pid_$name"
    wait "$pid" || true
    read -r rc secs <"$WORK/$name.rc" || { rc=none secs=0; }
}
has() { grep -q -- "$2" "$WORK/$1"; }
show() { # print a run's output when a check of it failed
    echo "  --- $1 stdout:"; sed 's/^/  | /' "$WORK/$1.out"
    echo "  --- $1 stderr:"; sed 's/^/  | /' "$WORK/$1.err"
}

# Inside the VM: device states, perftest traffic, stream separation, and
# facts worth knowing about the guest. Exits 7 whatever happens, so the
# status check is independent of the rest.
guest_script='
for d in rxe0 rxe1; do
    read -r st </sys/class/infiniband/$d/ports/1/state || st=missing
    case $st in *ACTIVE*) echo "CHECK $d ACTIVE" ;; *) echo "CHECK $d state=$st" ;; esac
done
ib_write_lat -d rxe0 -x 1 -n 200 >/tmp/srv.log 2>&1 &
srv=$!
i=0
until ib_write_lat -d rxe1 -x 1 -n 200 10.0.0.1 >/tmp/cli.log 2>&1; do
    i=$((i + 1))
    [ $i -lt 10 ] || break
    sleep 0.5
done
if [ $i -lt 10 ] && timeout 30 tail --pid=$srv -f /dev/null; then
    echo "CHECK perftest ok"
    grep -E "^ *2 +200" /tmp/cli.log | sed "s/^/INFO ib_write_lat: /"
    cat /sys/class/infiniband/rxe1/ports/1/hw_counters/sent_pkts | sed "s/^/INFO rxe1 sent_pkts: /"
else
    echo "CHECK perftest failed"; cat /tmp/srv.log /tmp/cli.log
fi
echo "INFO clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" \
    "(available: $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource))"
echo "INFO ulimit -l: $(ulimit -l); uid: $(id -u); cwd: $PWD; extra env: $TB_SELFTEST"
echo "to-stderr" >&2
exit 7
'

# Four hosts on the bridge (TESTBED_HOSTS=4): every port ACTIVE, RoCE
# between three pairs that reaches exactly the pair's two devices, and a
# path fault (20 ms each way between hosts 0 and 1) that slows that pair
# and not another pair through the same veth; clearing it restores it.
hosts_script='
F=$TB_FAULT
for d in rxe0 rxe1 rxe2 rxe3; do
    read -r st </sys/class/infiniband/$d/ports/1/state || st=missing
    case $st in *ACTIVE*) echo "CHECK $d ACTIVE" ;; *) echo "CHECK $d state=$st" ;; esac
done
rcvd() { read -r n </sys/class/infiniband/rxe$1/ports/1/hw_counters/rcvd_pkts; echo "$n"; }
# lat I J ITERS PORT: ib_write_lat from rxeI to the server on rxeJ; prints
# the minimum and the typical one-way latency in whole us, or "failed".
# The fault checks judge the minimum: a loaded host stretches the typical
# figure to milliseconds, but no round trip of a delayed path can be
# shorter than the delay. The undelayed runs are longer, as the host may
# stall the whole VM for tens of milliseconds.
lat() {
    port=$4
    ib_write_lat -d rxe$2 -x 1 -n $3 -p $port >/tmp/srv.log 2>&1 &
    srv=$!
    i=0
    until ib_write_lat -d rxe$1 -x 1 -n $3 -p $port 10.0.0.$(($2 + 1)) >/tmp/cli.log 2>&1; do
        i=$((i + 1))
        [ $i -lt 10 ] || break
        sleep 0.5
    done
    if [ $i -lt 10 ] && timeout 30 tail --pid=$srv -f /dev/null; then
        awk -v n=$3 "\$1 == 2 && \$2 == n { print int(\$3), int(\$5); exit }" /tmp/cli.log
    else
        kill $srv 2>/dev/null; echo failed; cat /tmp/srv.log /tmp/cli.log >&2
    fi
}
port=18520
for p in "0 1 2 3" "2 3 0 1" "1 3 0 2"; do
    set -- $p
    port=$((port + 1))
    b0=$(rcvd $1) b1=$(rcvd $2) o0=$(rcvd $3) o1=$(rcvd $4)
    us=$(lat $1 $2 100 $port)
    a0=$(rcvd $1) a1=$(rcvd $2) p0=$(rcvd $3) p1=$(rcvd $4)
    echo "INFO pair rxe$1->rxe$2: min, typical $us us; rcvd_pkts +$((a0 - b0)) +$((a1 - b1)), bystanders +$((p0 - o0)) +$((p1 - o1))"
    if [ "$us" != failed ] && [ $((a0 - b0)) -ge 100 ] && [ $((a1 - b1)) -ge 100 ] &&
       [ $((p0 - o0)) = 0 ] && [ $((p1 - o1)) = 0 ]; then
        echo "CHECK pair $1 $2 ok"
    fi
done
$F path-delay 0 1 20 both || echo "INFO fault.sh path-delay failed"
slow=$(lat 0 1 25 18531) other=$(lat 0 2 200 18532)
$F clear || echo "INFO fault.sh clear failed"
back=$(lat 0 1 200 18533)
echo "INFO with 20 ms each way on 0<->1 (min, typical us): rxe0->rxe1 $slow, rxe0->rxe2 $other; cleared: rxe0->rxe1 $back"
slow=${slow%% *} other=${other%% *} back=${back%% *}
[ "$slow" != failed ] && [ "$slow" -ge 20000 ] && [ "$slow" -lt 40000 ] && echo "CHECK delayed pair slow"
[ "$other" != failed ] && [ "$other" -lt 10000 ] && echo "CHECK other pair fast"
[ "$back" != failed ] && [ "$back" -lt 10000 ] && echo "CHECK cleared pair fast"
'

# A boot limit shorter than any boot: the VM is stopped at the limit, and
# the message says so and how far the guest got.
TESTBED_BOOT_LIMIT=2 start bootlimit -- echo ran
finish bootlimit
f0=$failed
check "TESTBED_BOOT_LIMIT=2 stops a VM that has not started its command: 125 within 15 s (got $rc after $secs s)" \
    eval '[ "$rc" = 125 ] && [ "$secs" -le 15 ] && ! has bootlimit.out ran'
check "... saying the limit and how far the guest got" \
    has bootlimit.err "did not start the command within 2 s; the guest"
[ "$failed" = "$f0" ] || show bootlimit
# 1 s is too short for any kernel to mount the run folder: the
# stuck-kernel path boots once more, then gives up.
TESTBED_KERNEL_LIMIT=1 start kernellimit -- echo ran
finish kernellimit
f0=$failed
check "TESTBED_KERNEL_LIMIT=1: a kernel that has not mounted the run folder is booted once more, then fails (got $rc after $secs s)" \
    eval '[ "$rc" = 125 ] && [ "$secs" -le 15 ] && ! has kernellimit.out ran &&
        [ "$(grep -c "booting again" "$WORK/kernellimit.err")" = 1 ] &&
        has kernellimit.err "did not mount the run folder within 1 s, twice"'
[ "$failed" = "$f0" ] || show kernellimit

# Boots 1 and 2 run together, then 3 and 4, then 5 while 3 still sleeps.
start true -- true
TESTBED_ENV="TB_SELFTEST=yes" start net -- sh -c "$guest_script"
finish true
check "run.sh -- true exits 0 (took ${secs} s)" [ "$rc" = 0 ]
[ "$failed" = 0 ] || show true
f0=$failed
finish net
check "exit status passes through (sh -c 'exit 7' -> $rc)" [ "$rc" = 7 ]
check "rxe0 and rxe1 exist and are ACTIVE" eval 'has net.out "CHECK rxe0 ACTIVE" && has net.out "CHECK rxe1 ACTIVE"'
check "ib_write_lat rxe1 -> rxe0 over the veth pair" has net.out "CHECK perftest ok"
check "stderr kept apart from stdout, no \\r added" \
    eval 'has net.err "^to-stderr$" && ! has net.out "to-stderr" && ! grep -q $'"'"'\r'"'"' "$WORK/net.out"'
check "cwd and TESTBED_ENV reach the command" \
    eval 'has net.out "cwd: $PWD; extra env: yes"'
[ "$failed" = "$f0" ] || show net
grep '^INFO' "$WORK/net.out" | sed 's/^INFO /  info: /' || true

# A hanging command must be stopped and reported, with status 125.
start hang --timeout 40 -- sleep 1000
# A VM killed from outside must not look like a success.
TESTBED_PIDFILE=$WORK/qemu.pid start kill -- sh -c 'echo started; exec sleep 1000'
# Killed once its command runs, or after 90 s whatever the guest reached
# (past run.sh's 60 s for a stuck kernel and its second boot): a VM killed
# in boot must fail the same way, and a slow boot beside the hanging VM's
# must not leave this one to run out its timeout.
for _ in $(seq 180); do
    has kill.out started 2>/dev/null && break
    sleep 0.5
done
kill_started=no
has kill.out started 2>/dev/null && kill_started=yes
if [ -s "$WORK/qemu.pid" ]; then
    kill -KILL "$(cat "$WORK/qemu.pid")" || echo "  info: kill -KILL of the VM to kill failed"
fi
finish kill
# Four hosts, while the hanging command sleeps: not earlier, as three VMs
# booting at once on a loaded machine are too many.
TESTBED_HOSTS=4 TESTBED_ENV="TB_FAULT=$HERE/fault.sh" start hosts -- sh -c "$hosts_script"
f0=$failed
check "killed VM fails with 125 and 'without a status' (got $rc)" \
    eval '[ "$rc" = 125 ] && has kill.err "testbed: VM exited without a status"'
if [ "$kill_started" = yes ]; then
    check "killed VM's message says the guest had started the command" \
        has kill.err "without a status.*the guest had started the command"
else
    echo "  info: the VM to kill had not started its command after 90 s; killed in boot"
fi
[ "$failed" = "$f0" ] || show kill
finish hang
f0=$failed
check "hanging command fails with 125 and a timeout message within 45 s (got $rc after $secs s)" \
    eval '[ "$rc" = 125 ] && [ "$secs" -le 45 ] && grep -q "testbed: .*timed out" "$WORK/hang.err"'
[ "$failed" = "$f0" ] || show hang
finish hosts
f0=$failed
check "TESTBED_HOSTS=4: run exits 0 (got $rc after $secs s)" [ "$rc" = 0 ]
check "TESTBED_HOSTS=4: rxe0 to rxe3 ACTIVE" eval \
    'has hosts.out "CHECK rxe0 ACTIVE" && has hosts.out "CHECK rxe1 ACTIVE" && has hosts.out "CHECK rxe2 ACTIVE" && has hosts.out "CHECK rxe3 ACTIVE"'
for p in "0 1" "2 3" "1 3"; do
    check "TESTBED_HOSTS=4: ib_write_lat rxe${p% *} -> rxe${p#* } reaches those two devices only" has hosts.out "CHECK pair $p ok"
done
check "TESTBED_HOSTS=4: fault.sh path-delay 0 1 20 both puts every rxe0->rxe1 round trip at >= 20 ms one-way" has hosts.out "CHECK delayed pair slow"
check "TESTBED_HOSTS=4: ... and not rxe0->rxe2 through the same veth" has hosts.out "CHECK other pair fast"
check "TESTBED_HOSTS=4: fault.sh clear makes rxe0->rxe1 fast again" has hosts.out "CHECK cleared pair fast"
[ "$failed" = "$f0" ] || show hosts
grep '^INFO' "$WORK/hosts.out" | sed 's/^INFO /  info: /' || true

echo "selftest took $(( $(date +%s) - t_all )) s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
