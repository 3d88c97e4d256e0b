#!/bin/busybox sh
# /init of the testbed guest (PID 1, busybox sh, inside the initramfs).
#
# It loads the modules, mounts the host's root file system read-only at
# /host plus the writable run folder (the "share"), chroots into /host to
# set up the network and run the command, writes the exit status to the
# share and powers off. run.sh on the host reads that status.
#
# Process starts cost about 30 ms each under TCG, so this uses shell
# builtins where it can.
#
# Serial ports: ttyS0 is the console (kernel and init messages; the host
# sends it to stderr), ttyS1 carries the command's stdout and ttyS2 its
# stderr.

export PATH=/bin:/sbin:/usr/bin:/usr/sbin
/bin/busybox --install -s

share_ok=
# Stage times (guest uptime), printed when TESTBED_VERBOSE is set.
trace=
stage() { read -r up _ </proc/uptime; trace="$trace $1=$up"; }
# How far the guest got, for the host: run.sh reads the share's "reached"
# to bound the boot and to say where a VM that never ran its command
# stuck. No file at all means before the share was mounted (kernel boot,
# modules, 9p).
reached() { [ -z "$share_ok" ] || echo "$1" >/share/reached; }
# Report a setup failure to the host and stop. Without a mounted share the
# host sees no status file, which it also reports as a failure.
fail() {
    echo "testbed-init: $*" >/dev/console
    if [ -n "$share_ok" ]; then
        echo "setup $*" >/share/status
        sync
    fi
    poweroff -f
    exit 1
}

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
stage start

# build.sh wrote the module paths in load order.
while read -r mod; do
    insmod "$mod" || fail "insmod $mod failed"
done </etc/testbed-modules

# Let the kernel load the copied modules on demand (e.g. a qdisc or a
# crypto algorithm). The helper runs in this root, not in the chroot.
echo /sbin/modprobe >/proc/sys/kernel/modprobe
stage modules

opts=trans=virtio,version=9p2000.L,msize=262144
# cache=loose is safe for the read-only root and much faster.
mount -t 9p -o "$opts,cache=loose,ro" hostroot /host || fail "cannot mount the host root over 9p"
# The share is written by both sides while the VM runs: no caching.
mount -t 9p -o "$opts,cache=none" share /share || fail "cannot mount the run folder over 9p"
share_ok=1
reached share

# run.sh wrote TB_SHARE (the share's path on the host), TB_NETSCRIPT,
# TB_HOSTS, TB_TIMEOUT (seconds for the command) and TB_PATH.
[ -f /share/config ] || fail "no config in the run folder"
. /share/config

# More than 2 hosts meet on a bridge (see guest-net.sh).
if [ "${TB_HOSTS:-2}" -gt 2 ]; then
    while read -r mod; do
        insmod "$mod" || fail "insmod $mod failed"
    done </etc/testbed-modules-bridge
fi

# Soft-iWARP only when asked for (TESTBED_SIW=1; see guest-net.sh).
if [ "${TB_SIW:-0}" = 1 ]; then
    while read -r mod; do
        insmod "$mod" || fail "insmod $mod failed"
    done </etc/testbed-modules-siw
fi

# The guest gets a private /tmp, but the repository (or the caller's
# working directory) may live under the host's /tmp, as in a CI clone.
# Keep the host's /tmp reachable and bind those folders back in place.
mkdir -p /hosttmp
mount --bind /host/tmp /hosttmp || fail "cannot keep the host's /tmp"
mount -t tmpfs -o mode=1777 tmpfs /host/tmp || fail "mount /host/tmp"
for p in $TB_TMPBINDS; do
    mkdir -p "/host$p" && mount --bind "/hosttmp${p#/tmp}" "/host$p" ||
        fail "cannot bind the host's $p inside the guest's /tmp"
done

# Same paths inside and out: the share appears at its host path.
mount --bind /share "/host$TB_SHARE" || fail "cannot bind the run folder at $TB_SHARE"
mount -t proc proc /host/proc || fail "mount /host/proc"
mount -t sysfs sysfs /host/sys || fail "mount /host/sys"
mount -t devtmpfs devtmpfs /host/dev || fail "mount /host/dev"
mkdir -p /host/dev/pts /host/dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /host/dev/pts || fail "mount /host/dev/pts"
mount -t tmpfs -o mode=1777 tmpfs /host/dev/shm || fail "mount /host/dev/shm"
mount -t tmpfs -o mode=755 tmpfs /host/run || fail "mount /host/run"

# Command output must pass through unchanged: no \n -> \r\n.
stty -F /dev/ttyS1 -opost
stty -F /dev/ttyS2 -opost
stage mounts
reached mounts

chroot /host /bin/sh "$TB_NETSCRIPT" "${TB_HOSTS:-2}" "${TB_SIW:-0}" </dev/null >/dev/console 2>&1 ||
    fail "network setup ($TB_NETSCRIPT) failed"

# The guest-side timeout fires a little before the host's, so a hanging
# command still yields a status. coreutils timeout kills the whole process
# group of the command. Exit 124 alone is ambiguous (the command may exit
# 124 itself), so the elapsed time decides.
stage net

# The first TCP connection the kernel makes flips the DO_ONCE static keys
# of its hash secrets, patching live kernel code, and QEMU's threaded TCG
# can then leave both vCPUs trapping on a stale int3 forever (run.sh).
# One connection over lo here moves that into the set-up, where run.sh
# boots a stuck guest again, instead of into the command's first test.
nc -l -p 7 >/dev/null 2>&1 </dev/null &
listener=$!
tries=0
until echo warm | nc -w 2 127.0.0.1 7 >/dev/null 2>&1; do
    tries=$((tries + 1))
    [ "$tries" -lt 50 ] || fail "no TCP connection over lo for the set-up's warm-up"
    usleep 100000
done
kill "$listener" 2>/dev/null
wait "$listener" 2>/dev/null
stage tcp
reached command
read -r t0 _ </proc/uptime
chroot /host /usr/bin/env -i HOME=/root PATH="$TB_PATH" TERM=dumb LANG=C.UTF-8 USER=root \
    /usr/bin/timeout -k 5 "$TB_TIMEOUT" /bin/sh "$TB_SHARE/cmd.sh" \
    </dev/null >/dev/ttyS1 2>/dev/ttyS2
st=$?
read -r t1 _ </proc/uptime
t0=${t0%.*} t1=${t1%.*}
if { [ "$st" = 124 ] || [ "$st" = 137 ]; } && [ $((t1 - t0)) -ge "$TB_TIMEOUT" ]; then
    echo "timeout $TB_TIMEOUT" >/share/status
else
    echo "exit $st" >/share/status
fi

# Children the command left behind may still hold the ports open, so
# closing them does not wait for the output to drain; stty's tcsetattr
# (TCSADRAIN) does.
stty -F /dev/ttyS1 -opost
stty -F /dev/ttyS2 -opost
sync
stage end
[ -z "$TB_VERBOSE" ] || echo "testbed-init: guest uptime at:$trace" >/dev/console
poweroff -f
