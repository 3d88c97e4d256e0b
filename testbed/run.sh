#!/usr/bin/env bash
# Run one command inside the soft-RoCE testbed VM and exit with its status.
#
#   testbed/run.sh [--timeout SECONDS] [--] COMMAND [ARG...]
#
# The VM sees the host's root file system read-only, with the same paths,
# and starts the command as root in the caller's working directory with a
# clean environment (HOME=/root, PATH with /usr/local/go/bin). Before the
# command runs, rxe0 (on veth0, 10.0.0.1) and rxe1 (on veth1, 10.0.0.2)
# exist and are ACTIVE. /tmp, /run and /dev/shm are private tmpfs; the run
# folder ($TESTBED_RUN_DIR inside) is the only writable place shared with
# the host.
#
# Hosts: TESTBED_HOSTS=N (2 to 10, default 2) makes N soft-RoCE "hosts",
# host i being rxe<i> on veth<i> with 10.0.0.<i+1>. Two hosts are the two
# ends of one veth pair; more meet on a bridge (br0, ports bport<i>). In
# both layouts RoCE between any two hosts crosses their veths rather than
# lo, so testbed/fault.sh (run inside) can take a host's link down or put
# loss or delay on one path: `fault.sh host-down 2`, `fault.sh path-loss
# 0 1 100`, `fault.sh path-delay 1 3 20 both`, `fault.sh clear`. The
# command sees TESTBED_HOSTS in its environment.
#
# Output: the command's stdout and stderr go to this script's stdout and
# stderr; the guest console (kernel messages, setup errors) goes to stderr.
#
# Exit status: the command's, or 125 when the testbed itself failed (VM
# timed out, crashed, did not start the command within the boot limit,
# setup failed, or the command hit the guest-side timeout); a message
# starting "testbed:" on stderr says which, and how far the guest got.
#
# Environment:
#   TESTBED_HOSTS=N     number of soft-RoCE hosts, 2 to 10 (default 2)
#   TESTBED_SIW=1       also soft-iWARP: host i has siw<i> on iwveth<i>
#                       (10.0.1.<i+1>), a network of its own beside the
#                       RoCE one
#   TESTBED_TIMEOUT=N   overall limit in seconds, default 600 (--timeout wins)
#   TESTBED_BOOT_LIMIT=N  seconds the guest may take to start the command,
#                       default 180 (a boot takes ~7 s; at most the timeout)
#   TESTBED_KERNEL_LIMIT=N  seconds the guest may take to start the
#                       command before the VM is booted once more, default
#                       60 (it takes ~7-11 s); only under the boot limit;
#                       see boot_vm below
#   TESTBED_ENV="A=1 B=2"  extra variables for the command (no spaces in values)
#   TESTBED_KEEP=1      keep the run folder under .cache/testbed/runs/
#   TESTBED_EXPORT=DIR  copy what the command wrote to $TESTBED_RUN_DIR/export
#                       into DIR on the host (the host root is read-only inside)
#   TESTBED_PIDFILE=F   write the qemu process id to F (for fault tests)
#   TESTBED_VERBOSE=1   print timings
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
CACHE=$REPO/.cache/testbed
FAIL=125

die() { echo "testbed: $*" >&2; exit "$FAIL"; }
usage() { echo "usage: $0 [--timeout SECONDS] [--] COMMAND [ARG...]" >&2; exit 2; }
now_ms() { local t; t=$(date +%s%N); echo $((t / 1000000)); }
say() { [ -z "${TESTBED_VERBOSE:-}" ] || echo "testbed: $*" >&2; }

timeout_s=${TESTBED_TIMEOUT:-600}
while [ $# -gt 0 ]; do
    case $1 in
        --timeout) [ $# -ge 2 ] || usage; timeout_s=$2; shift 2 ;;
        --timeout=*) timeout_s=${1#--timeout=}; shift ;;
        --) shift; break ;;
        -h|--help) usage ;;
        -*) echo "testbed: unknown option $1" >&2; usage ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || usage
[[ $timeout_s =~ ^[0-9]+$ ]] && [ "$timeout_s" -ge 25 ] ||
    die "timeout must be a whole number of seconds, at least 25 (got '$timeout_s')"
# The command gets less time than the VM, so that a hanging command is
# stopped inside and reported as such: boot takes ~7 s, shutdown ~1 s.
guest_timeout=$((timeout_s - 15 - timeout_s / 20))

boot_limit_s=${TESTBED_BOOT_LIMIT:-180}
[[ $boot_limit_s =~ ^[0-9]+$ ]] && [ "$boot_limit_s" -ge 1 ] ||
    die "TESTBED_BOOT_LIMIT must be a whole number of seconds, at least 1 (got '$boot_limit_s')"
[ "$boot_limit_s" -le "$timeout_s" ] || boot_limit_s=$timeout_s
kernel_limit_s=${TESTBED_KERNEL_LIMIT:-60}
[[ $kernel_limit_s =~ ^[0-9]+$ ]] && [ "$kernel_limit_s" -ge 1 ] ||
    die "TESTBED_KERNEL_LIMIT must be a whole number of seconds, at least 1 (got '$kernel_limit_s')"

hosts=${TESTBED_HOSTS:-2}
[[ $hosts =~ ^([2-9]|10)$ ]] ||
    die "TESTBED_HOSTS must be a whole number from 2 to 10 (got '$hosts')"

siw=${TESTBED_SIW:-0}
[[ $siw =~ ^[01]$ ]] || die "TESTBED_SIW must be 0 or 1 (got '$siw')"

extra_env=()
if [ -n "${TESTBED_ENV:-}" ]; then
    read -r -a extra_env <<<"$TESTBED_ENV"
    for kv in "${extra_env[@]}"; do
        [[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "TESTBED_ENV entry '$kv' is not NAME=VALUE"
    done
fi

t_start=$(now_ms)
# build.sh is a no-op when the kernel and initramfs are current. Its
# message goes to stderr so stdout carries only the command's output.
"$HERE/build.sh" >&2 || die "building the kernel and initramfs failed"
t_built=$(now_ms)

mkdir -p "$CACHE/runs"
RUN=$(mktemp -d "$CACHE/runs/run.XXXXXX")
SHARE=$RUN/share          # the only folder the guest may write
mkdir "$SHARE" "$SHARE/export"

qemu_pid=
watcher=
pumps=()
cleaned=
cleanup() {
    [ -z "$cleaned" ] || return 0
    cleaned=1
    [ -z "$watcher" ] || kill -TERM "$watcher" 2>/dev/null || true
    if [ -n "$qemu_pid" ]; then
        # qemu writes its pid file early; allow it a moment if it did not yet.
        local i
        for i in 1 2 3 4 5 6 7 8 9 10; do
            [ -s "$qemu_pidfile" ] || { sleep 0.2; continue; }
            kill -TERM "$(cat "$qemu_pidfile")" 2>/dev/null || true
            break
        done
        wait "$qemu_pid" 2>/dev/null || true
    fi
    release_pumps
    if [ "${TESTBED_KEEP:-}" = 1 ]; then
        echo "testbed: kept run folder $RUN" >&2
    else
        rm -rf "$RUN"
    fi
}
# The output pumps (cat) block in open() until qemu opens the fifos. If qemu
# never did, opening each fifo read-write here (which never blocks) lets
# them through; they then read EOF and exit.
release_pumps() {
    local f pid
    for f in console out err; do
        [ -p "$RUN/$f.out" ] && { exec 8<>"$RUN/$f.out"; exec 8>&-; }
    done
    for pid in "${pumps[@]}"; do wait "$pid" 2>/dev/null || true; done
    pumps=()
}
on_signal() {
    trap - INT TERM
    echo "testbed: interrupted by SIG$1, stopping the VM" >&2
    cleanup
    [ "$1" = INT ] && exit 130
    exit 143
}
trap 'on_signal INT' INT
trap 'on_signal TERM' TERM
trap cleanup EXIT

# Single-quote for /bin/sh (dash has no $'...').
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

{
    echo "TB_SHARE=$(q "$SHARE")"
    echo "TB_NETSCRIPT=$(q "$HERE/guest-net.sh")"
    echo "TB_HOSTS=$hosts"
    echo "TB_SIW=$siw"
    echo "TB_TIMEOUT=$guest_timeout"
    echo "TB_VERBOSE=$(q "${TESTBED_VERBOSE:-}")"
    echo "TB_PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    # Folders under the host's /tmp that the guest's private /tmp must
    # still show: the repository and the working directory.
    binds=
    for p in "$REPO" "$PWD"; do
        case $p in "$REPO"/*) [ "$p" != "$PWD" ] || continue ;; esac
        case $p in
            *[[:space:]]*) die "cannot run from a path with white space under /tmp: $p" ;;
            /tmp/*) binds="$binds $p" ;;
        esac
    done
    echo "TB_TMPBINDS=\"$binds\""
} >"$SHARE/config"
{
    echo "cd -- $(q "$PWD") || exit 125"
    echo "export TESTBED_RUN_DIR=$(q "$SHARE")"
    echo "export TESTBED_HOSTS=$hosts"
    echo "export TESTBED_SIW=$siw"
    for kv in "${extra_env[@]}"; do echo "export $(q "$kv")"; done
    printf 'exec'
    for a in "$@"; do printf ' %s' "$(q "$a")"; done
    echo
} >"$SHARE/cmd.sh"

# Serial ports reach the host through fifos: qemu's "pipe" chardev writes
# guest output to NAME.out (and would read input from NAME.in).
for f in console out err; do mkfifo "$RUN/$f.in" "$RUN/$f.out"; done
start_pumps() {
    cat "$RUN/out.out" &
    pumps+=($!)
    cat "$RUN/err.out" >&2 &
    pumps+=($!)
    # The console is a tty with \n -> \r\n; the command's ports are set
    # raw. The kernel's final "reboot: Power down" line is noise.
    sed -u -e 's/\r//g' -e '/reboot: Power down$/d' <"$RUN/console.out" >&2 &
    pumps+=($!)
}

# tsc=reliable: the guest's TSC sync check fails under TCG (vCPUs are host
# threads) and it falls back to the HPET, whose every read is a syscall and
# an emulated MMIO access. The TCG TSC follows the host's invariant TSC, so
# trusting it keeps clock_gettime in the vDSO.
# no_timer_check: on a loaded host the emulated timer can miss the few
# ticks the kernel's IO-APIC timer check waits for, and the guest panics
# at boot ("IO-APIC + timer doesn't work!"); seen with three VMs booting at
# once on two busy cores.
qemu_args=(
    -machine q35 -accel tcg,thread=multi -cpu max -smp 2 -m 2048
    -nodefaults -display none -no-reboot
    -kernel "$CACHE/vmlinux" -initrd "$CACHE/initrd.img"
    -append "console=ttyS0 panic=-1 quiet loglevel=3 tsc=reliable no_timer_check"
    -chardev "pipe,id=con,path=$RUN/console" -serial chardev:con
    -chardev "pipe,id=out,path=$RUN/out" -serial chardev:out
    -chardev "pipe,id=err,path=$RUN/err" -serial chardev:err
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$SHARE,mount_tag=share,security_model=none"
    -device virtio-rng-pci
)
qemu_pidfile=${TESTBED_PIDFILE:-$RUN/qemu.pid}
qemu_args+=(-pidfile "$qemu_pidfile")

# How far a boot may get before it is stopped. The guest mounts the run
# folder 4-5 s after qemu starts and starts the command ~7 s after (~11 s
# with two VMs on two cores); what it "reached" says how far it got.
#
# A guest that has not started the command after kernel_limit_s is
# booted once more. QEMU 7.2's threaded TCG can keep running a stale
# translation of kernel code another vCPU has patched: the boot-time flip
# of the timer static keys (~2 s) leaves both vCPUs trapping on an int3
# the kernel has already removed, forever (seen with the monitor: both at
# hrtimer_start_range_ns, in the int3 handler; 2 boots in about 400 with
# two VMs booting at once). The first TCP connection patches code the
# same way (the DO_ONCE keys of its hash secrets), so init.sh makes one
# during the set-up, before the command. Nothing of ours has run before
# the command, so booting again hides nothing.

# boot_vm runs the VM once and sets t_boot (when it started), qst (qemu's
# exit status, through timeout) and stuck ("kernel" or "boot" when the
# watcher stopped it).
boot_vm() {
    rm -f "$RUN/stuck" "$SHARE/reached"
    t_boot=$(now_ms)
    start_pumps
    # The subshell keeps bash's "Killed" job notices (when qemu or timeout
    # die by SIGKILL) off stderr; qemu's own messages go to the real stderr
    # (fd 4). Signals to this script reach qemu through its pid file (see
    # cleanup).
    (
        timeout --kill-after=10 "$timeout_s" qemu-system-x86_64 "${qemu_args[@]}" \
            </dev/null >&4 2>&4
        exit $?
    ) 4>&2 2>/dev/null &
    qemu_pid=$!
    # The watcher sleeps in "wait" so that its own TERM ends it at once.
    (
        trap 'exit 0' TERM
        t=0
        while :; do
            sleep 1 &
            wait $!
            t=$((t + 1))
            read -r r <"$SHARE/reached" || r=
            [ "$r" != command ] || exit 0
            if [ "$t" -ge "$kernel_limit_s" ] && [ "$kernel_limit_s" -lt "$boot_limit_s" ]; then
                if [ -z "$r" ]; then echo kernel; else echo "setup $r"; fi >"$RUN/stuck"
                break
            fi
            [ "$t" -lt "$boot_limit_s" ] || { echo boot >"$RUN/stuck"; break; }
        done
        [ -s "$qemu_pidfile" ] && kill -TERM "$(cat "$qemu_pidfile")"
    ) </dev/null >/dev/null 2>&1 &
    watcher=$!
    qst=0
    wait "$qemu_pid" || qst=$?
    qemu_pid=
    kill -TERM "$watcher" 2>/dev/null || true
    wait "$watcher" 2>/dev/null || true
    watcher=
    release_pumps
    stuck=
    [ -f "$RUN/stuck" ] && read -r stuck <"$RUN/stuck"
    return 0
}

t_vm=$(now_ms)
boot_vm
case $stuck in
    kernel)
        echo "testbed: the guest's kernel had not mounted the run folder after $kernel_limit_s s (a stale-code fault of QEMU's threaded TCG at boot; see run.sh); booting again" >&2
        boot_vm ;;
    "setup "*)
        echo "testbed: the guest had set up '${stuck#setup }' but not started the command after $kernel_limit_s s (a stale-code fault of QEMU's threaded TCG; see run.sh); booting again" >&2
        boot_vm ;;
esac
t_done=$(now_ms)
say "build check $((t_built - t_start)) ms, VM $((t_done - t_vm)) ms"

if [ -n "${TESTBED_EXPORT:-}" ]; then
    mkdir -p "$TESTBED_EXPORT" && cp -R "$SHARE/export/." "$TESTBED_EXPORT/" ||
        echo "testbed: could not copy the exported files to $TESTBED_EXPORT" >&2
fi

status=
[ -f "$SHARE/status" ] && read -r status <"$SHARE/status"
case $status in
    "exit "*)
        exit "${status#exit }" ;;
    "timeout "*)
        die "command timed out inside the VM after ${status#timeout } s (limit $timeout_s s minus boot margin)" ;;
    "setup "*)
        die "guest setup failed: ${status#setup }" ;;
esac
reached=
[ -f "$SHARE/reached" ] && read -r reached <"$SHARE/reached"
case $reached in
    command) where="the guest had started the command" ;;
    "") where="the guest never mounted the run folder (stuck in kernel boot, module loading or 9p)" ;;
    *) where="the guest had set up '$reached' but not started the command" ;;
esac
case $stuck in
    kernel) die "the guest's kernel did not mount the run folder within $kernel_limit_s s, twice" ;;
    "setup "*) die "the guest did not start the command within $kernel_limit_s s, twice; $where" ;;
    boot) die "the guest did not start the command within $boot_limit_s s; $where" ;;
esac
# timeout exits 124 when it stopped qemu, 137 when it had to SIGKILL it;
# but 137 also means someone else SIGKILLed qemu, so check the clock.
if { [ "$qst" = 124 ] || [ "$qst" = 137 ]; } && [ $((t_done - t_boot)) -ge $((timeout_s * 1000)) ]; then
    die "VM timed out after $timeout_s s; $where"
fi
why="qemu exit status $qst"
[ "$qst" -le 128 ] || why="qemu killed by signal $((qst - 128))"
die "VM exited without a status (killed or crashed; $why; $where)"
