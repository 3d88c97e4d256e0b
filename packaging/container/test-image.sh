#!/usr/bin/env bash
# Test the image tarball that build-image.sh made (make image-test):
#  1. crane validates it (digests, diff ids, manifest);
#  2. its config has the entrypoint, command, user, ports and labels of
#     image.conf, and the version and revision of the source; the
#     Dockerfile sets the same (check-dockerfile.sh);
#  3. its root file system, unpacked from the image's own layer, holds both
#     binaries (which print the labels' version and revision), the licence, /etc/libibverbs.d and a provider for every
#     driver listed there, and the mount points a runtime needs;
#  4. inside the soft-RoCE VM, chrooted into that root file system, the
#     image's exporter probes the image's `rdmarun serve` over rxe
#     (vm-probe.sh).
#
# Environment: IMAGE (default dist/rdmarun-image.tar); VERSION and REVISION
# to expect in the labels (default: from git); GO; TESTBED_TIMEOUT for
# the VM (default 150 s). Needs root (the layer holds root-owned files),
# jq, and curl (the VM uses the host's).
set -euo pipefail
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# shellcheck source=SCRIPTDIR/image.conf
. "$HERE/image.conf"

GO=${GO:-go}
IMAGE=${IMAGE:-$REPO/dist/rdmarun-image.tar}
VERSION=${VERSION:-$(git -C "$REPO" describe --always --dirty 2>/dev/null || echo dev)}
# The commit, dirty when VERSION is, as the Makefile computes it.
if [ -z "${REVISION:-}" ]; then
    REVISION=$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)
    [[ $VERSION != *-dirty ]] || REVISION+=-dirty
fi
WORK=$REPO/.cache/image
ROOTFS=$WORK/rootfs

failures=0
fail() { echo "test-image: FAIL: $*" >&2; failures=$((failures + 1)); }
die() { echo "test-image: $*" >&2; exit 1; }
say() { echo "test-image: $*" >&2; }
t0=$(date +%s)

[ -f "$IMAGE" ] || die "no $IMAGE (make image)"
[ "$(id -u)" = 0 ] || die "run as root: the image's files are owned by root"
CRANE=$("$GO" -C "$REPO/tools" tool -n crane) || die "cannot build crane from tools/go.mod"

# --- 1. the tarball is a valid image -----------------------------------------
"$CRANE" validate --tarball "$IMAGE" >/dev/null 2>"$WORK/validate.log" ||
    { cat "$WORK/validate.log" >&2; die "crane validate --tarball $IMAGE failed"; }
say "crane validate: PASS"

# --- 2. its config -----------------------------------------------------------
manifest=$(tar -xOf "$IMAGE" manifest.json)
[ "$(jq length <<<"$manifest")" = 1 ] || die "the tarball holds more than one image"
config=$(tar -xOf "$IMAGE" "$(jq -r '.[0].Config' <<<"$manifest")")

# expect NAME JQ-FILTER WANT: the config's value (as compact JSON) is WANT.
expect() {
    local got
    got=$(jq -c "$2" <<<"$config")
    [ "$got" = "$3" ] || fail "$1 is $got, want $3"
}
expect entrypoint .config.Entrypoint "$(jq -nc --arg a "$ENTRYPOINT" '[$a]')"
expect cmd .config.Cmd "$(jq -nc --arg a "$CMD" '[$a]')"
expect user .config.User "\"$IMAGE_USER\""
expect "exposed ports" '.config.ExposedPorts | keys' \
    "$(jq -nc --arg w "$WEB_PORT/tcp" --arg r "$RESPONDER_PORT/tcp" '[$w, $r] | sort')"
expect os/architecture '[.os, .architecture]' "[\"linux\",\"$("$GO" env GOARCH)\"]"
expect "layer count" '.rootfs.diff_ids | length' 1

want_labels=$(jq -nc \
    --arg title "$LABEL_TITLE" --arg description "$LABEL_DESCRIPTION" \
    --arg version "$VERSION" --arg revision "$REVISION" \
    --arg source "$LABEL_SOURCE" --arg url "$LABEL_URL" --arg licenses "$LABEL_LICENSES" \
    '{title: $title, description: $description, version: $version, revision: $revision,
      source: $source, url: $url, licenses: $licenses}
     | with_entries(.key = "org.opencontainers.image." + .key)')
expect labels "(.config.Labels | del(.\"org.opencontainers.image.created\"))" "$(jq -Sc . <<<"$want_labels")"
# image.conf sets the label for both builds; the licence is the project's,
# so an image.conf that drops or changes it fails here too.
expect "licenses label" '.config.Labels."org.opencontainers.image.licenses"' '"Apache-2.0"'
created=$(jq -r '.config.Labels."org.opencontainers.image.created" // ""' <<<"$config")
[[ $created =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]] ||
    fail "label org.opencontainers.image.created is '$created', not an RFC 3339 UTC time"
expect "created time" .created "\"$created\""
[ "$failures" = 0 ] && say "config: entrypoint, cmd, user, ports, labels as in image.conf"
# The Dockerfile must make the same image as far as a config can tell.
printf '%s\n' "$config" >"$WORK/image-config.json"
"$HERE/check-dockerfile.sh" "$WORK/image-config.json" || fail "the Dockerfile differs from the image"

# --- 3. its root file system, from its own layer ------------------------------
rm -rf "$ROOTFS"
mkdir -p "$ROOTFS"
"$CRANE" export - - <"$IMAGE" | tar -x --numeric-owner -C "$ROOTFS" ||
    die "could not unpack the image's file system"
for f in usr/bin/rdmarun usr/bin/rdmarun_exporter; do
    [ -x "$ROOTFS/$f" ] || fail "/$f is missing or not executable"
done
# The binaries say the version and revision the labels say (build_info
# takes them from where --version does, internal/version).
got=$(chroot "$ROOTFS" /usr/bin/rdmarun --version 2>&1) || true
[ "$got" = "rdmarun $VERSION (revision: $REVISION)" ] ||
    fail "rdmarun --version in the image: '$got', want 'rdmarun $VERSION (revision: $REVISION)'"
got=$(chroot "$ROOTFS" /usr/bin/rdmarun_exporter --version 2>&1 | head -n1) || true
[ "$got" = "rdmarun_exporter, version $VERSION (branch: , revision: $REVISION)" ] ||
    fail "rdmarun_exporter --version in the image: '$got', want version $VERSION, revision $REVISION"
[ "$(stat -c %s "$ROOTFS$CONFIG_FILE" 2>/dev/null)" != "" ] || fail "no $CONFIG_FILE"
cmp -s "$ROOTFS$CONFIG_FILE" "$REPO/examples/rdmarun_exporter.yml" ||
    fail "$CONFIG_FILE is not examples/rdmarun_exporter.yml"
cmp -s "$ROOTFS$LICENSE_FILE" "$REPO/LICENSE" || fail "$LICENSE_FILE is missing or not LICENSE"
for d in proc sys dev tmp run etc/rdmarun; do
    [ -d "$ROOTFS/$d" ] || fail "no /$d mount point"
done
grep -q "^$RUN_AS_USER:x:$RUN_AS_UID:$RUN_AS_UID:" "$ROOTFS/etc/passwd" || fail "no user $RUN_AS_USER ($RUN_AS_UID) in /etc/passwd"
grep -q '^nobody:x:65534:' "$ROOTFS/etc/passwd" || fail "no user nobody in /etc/passwd"
# Every driver that /etc/libibverbs.d names has its provider library.
ndrivers=0
for f in "$ROOTFS"/etc/libibverbs.d/*.driver; do
    [ -e "$f" ] || { fail "/etc/libibverbs.d holds no driver"; break; }
    name=$(awk '$1 == "driver" { print $2 }' "$f")
    compgen -G "$ROOTFS/usr/lib/*/libibverbs/lib$name-rdmav*.so" >/dev/null ||
        fail "/etc/libibverbs.d/${f##*/} names $name, whose provider is missing"
    ndrivers=$((ndrivers + 1))
done
[ "$failures" = 0 ] || die "$failures check(s) failed"
say "rootfs: both binaries, the licence, $ndrivers drivers with their providers, mount points"

# --- 4. it works on soft-RoCE ------------------------------------------------
# The VM sees this file system read-only at the same paths, so the
# unpacked rootfs is used in place.
args=$WORK/entrypoint.args
jq -r '.config.Entrypoint + .config.Cmd | .[]' <<<"$config" >"$args"
t_vm=$(date +%s)
"$REPO/testbed/run.sh" --timeout "${TESTBED_TIMEOUT:-150}" -- \
    "$HERE/vm-probe.sh" "$ROOTFS" "$args" || die "the image failed in the soft-RoCE VM"
say "PASS: image checks and the soft-RoCE probe (VM $(($(date +%s) - t_vm)) s, all $(($(date +%s) - t0)) s)"
