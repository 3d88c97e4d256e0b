#!/usr/bin/env bash
# Inside the soft-RoCE VM (test-image.sh starts it through testbed/run.sh):
# run the image's own programs in its root file system, chrooted, with
# /sys, /dev and /proc of the VM as a container runtime would give them.
# The image's `rdmarun serve` answers on rxe0 (10.0.0.1); the image's
# exporter, started with the image's entrypoint and command, probes it
# from rxe1 (10.0.0.2). Success means the image's libibverbs and its rxe
# provider did real RDMA.
#
#   vm-probe.sh ROOTFS ARGS_FILE
#
# ARGS_FILE holds the image's entrypoint and command, one word a line.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=SCRIPTDIR/image.conf
. "$HERE/image.conf"

ROOT=$1
mapfile -t entry_args <"$2"
[ -n "${TESTBED_RUN_DIR:-}" ] || { echo "vm-probe: run me through testbed/run.sh" >&2; exit 2; }
W=$TESTBED_RUN_DIR/image-test
ETC=$W/etc-rdmarun
mkdir -p "$ETC"
SERVE_ADDR=10.0.0.1:$RESPONDER_PORT
WEB=127.0.0.1:$WEB_PORT

fail() { echo "vm-probe: FAIL: $*" >&2; exit 1; }
say() { echo "vm-probe: $*" >&2; }
t0=$(date +%s%N)
# elapsed: seconds since the start, to a tenth.
elapsed() { awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }

pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do timeout 10 tail --pid="$p" -f /dev/null || kill -9 "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
show_logs() {
    local f
    for f in "$W"/*.log; do echo "--- $f" >&2; tail -n 30 "$f" >&2; done
}

# What a runtime provides. The rootfs is read-only here (the host's file
# system, as the VM sees it); mounting onto its existing directories works.
mount --bind /sys "$ROOT/sys"
mount --bind /dev "$ROOT/dev"
mount -t proc proc "$ROOT/proc"
mount -t tmpfs tmpfs "$ROOT/tmp"
# The config and token come in from outside, as a Kubernetes ConfigMap
# and Secret would; this hides the config the image ships.
mount --bind "$ETC" "$ROOT/etc/rdmarun"

# The shared token, made by the image's own `rdmarun token` when it has
# one, and given to the image's unprivileged user, who runs serve below:
# --owner must find that user in the image's /etc/passwd.
if chroot "$ROOT" /usr/bin/rdmarun --help 2>&1 | grep -Eq '^token( |$)'; then
    chroot "$ROOT" /usr/bin/rdmarun token --owner "$RUN_AS_USER" /etc/rdmarun/token ||
        fail "rdmarun token --owner $RUN_AS_USER /etc/rdmarun/token failed"
    got=$(stat -c '%a %u:%g' "$ETC/token")
    [ "$got" = "600 $RUN_AS_UID:$RUN_AS_UID" ] ||
        fail "rdmarun token made a token with mode and owner $got, want 600 $RUN_AS_UID:$RUN_AS_UID"
else
    # TODO: drop once `rdmarun token` is in every build tested here.
    say "this rdmarun has no token command; writing 32 random bytes instead"
    (umask 077 && head -c 32 /dev/urandom | base64 >"$ETC/token")
    chown "$RUN_AS_UID:$RUN_AS_UID" "$ETC/token"
fi

# The exporter probes the serve responder from rxe1; its own responder
# (needed: probes go out of the responder's device) answers on rxe1.
cat >"$ETC/rdmarun_exporter.yml" <<EOF
modules:
  default: {count: 10, interval: 3s, timeout: 2500ms, qp: {timeout: 15}}
targets:
  static:
    - {name: serve, address: "$SERVE_ADDR", module: default}
responder:
  listen: "10.0.0.2:$RESPONDER_PORT"
  device: rxe1
  token_file: /etc/rdmarun/token
EOF

# serve runs as the image's unprivileged user; the exporter as the
# image's default user (root).
chroot --userspec="$RUN_AS_UID:$RUN_AS_UID" "$ROOT" /usr/bin/rdmarun serve --listen="$SERVE_ADDR" --device=rxe0 \
    --token-file=/etc/rdmarun/token >"$W/serve.log" 2>&1 &
serve_pid=$!
pids+=("$serve_pid")

# The image's entrypoint and command as they are, so the default config
# path and the default web port (the image's EXPOSE) are what is tested.
chroot "$ROOT" "${entry_args[@]}" >"$W/exporter.log" 2>&1 &
exporter_pid=$!
pids+=("$exporter_pid")

metrics=$W/metrics.txt
# (Debian 12's busybox wget crashed on this; hence curl.)
scrape() { curl -sf --max-time 5 -o "$metrics" "http://$WEB/metrics"; }
deadline=$(($(date +%s) + 30))
until scrape; do
    kill -0 "$exporter_pid" 2>/dev/null || { show_logs; fail "the exporter exited"; }
    [ "$(date +%s)" -lt "$deadline" ] || { show_logs; fail "no /metrics on $WEB within 30 s"; }
    sleep 0.5
done
say "exporter serving after $(elapsed) s"

ok='^rdma_probe_success\{[^}]*target="serve"[^}]*\} 1$'
deadline=$(($(date +%s) + 60))
until grep -Eq "$ok" "$metrics"; do
    kill -0 "$serve_pid" 2>/dev/null || { show_logs; fail "rdmarun serve exited"; }
    kill -0 "$exporter_pid" 2>/dev/null || { show_logs; fail "the exporter exited"; }
    [ "$(date +%s)" -lt "$deadline" ] || {
        grep -E '^rdma_probe' "$metrics" >&2 || true
        show_logs; fail "no successful probe of serve within 60 s"
    }
    sleep 1
    scrape || true
done
say "probe succeeded after $(elapsed) s:"
grep -E "$ok" "$metrics" >&2

# The verbs library and the rxe provider the exporter runs on are the
# image's: its memory map names them under the rootfs.
maps=$(cat "/proc/$exporter_pid/maps" 2>/dev/null || true)
# chroot execs the exporter, so its pid is the exporter's.
for lib in "$ROOT/usr/lib/"*/libibverbs.so.1.* "$ROOT/usr/lib/"*/libibverbs/librxe-rdmav*.so; do
    [ -e "$lib" ] || fail "the rootfs has no $lib"
    grep -qF "$lib" <<<"$maps" || fail "the exporter has not loaded $lib"
done
say "the exporter runs on the rootfs's libibverbs and rxe provider"
uid=$(awk '/^Uid:/ { print $2 }' "/proc/$serve_pid/status")
[ "$uid" = "$RUN_AS_UID" ] || fail "rdmarun serve ran as uid $uid, not $RUN_AS_UID"
say "rdmarun serve ran as $RUN_AS_USER (uid $uid) under a memlock limit of $(ulimit -l) KiB"

# The serve side saw the tests too. (Under emulation an early probe may
# time out and show here as a failed test; the exporter's own counters
# say why.)
grep -E '^rdma_probes_total\{' "$metrics" >&2 || true
kill -TERM "$serve_pid"
timeout 15 tail --pid="$serve_pid" -f /dev/null || fail "rdmarun serve did not stop within 15 s of SIGTERM"
done_tests=$(grep -c 'msg="test done"' "$W/serve.log" || true)
grep -E 'msg=stopped ' "$W/serve.log" >&2 || fail "rdmarun serve did not log its totals"
[ "$done_tests" -ge 1 ] || { show_logs; fail "rdmarun serve completed no test"; }
say "rdmarun serve completed $done_tests test(s)"
say "passed in $(elapsed) s"
