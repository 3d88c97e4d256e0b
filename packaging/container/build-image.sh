#!/usr/bin/env bash
# Build the container image without a container engine: Debian's own
# packages of libibverbs, every rdma-core provider and the libraries the
# binaries link against are unpacked into a root file system, the two
# binaries are added, and crane packs it as a single-layer image through a
# throw-away registry on 127.0.0.1.
#
#   packaging/container/build-image.sh        (make image)
#
# Output: dist/rdmarun-image.tar, loadable with `docker load` or
# `podman load`, pushable with `crane push`.
#
# Environment:
#   VERSION, LDFLAGS, GO   as in the Makefile (it passes them)
#   BIN_DIR=DIR            take rdmarun and rdmarun_exporter from DIR
#                          instead of building them
#   OUT=DIR                where the image tarball goes (default dist/)
#   SOURCE_DATE_EPOCH=N    file times and the created label (default:
#                          the commit time, so a rebuild of a commit gives
#                          the same layer)
#
# Needs root (chroot checks the rootfs), apt-get (the .deb files are
# cached under .cache/image/debs), dpkg-deb, ldd, ldconfig, GNU tar and jq.
set -euo pipefail
umask 022
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
# shellcheck source=SCRIPTDIR/image.conf
. "$HERE/image.conf"

die() { echo "build-image: $*" >&2; exit 1; }
say() { echo "build-image: $*" >&2; }

GO=${GO:-go}
VERSION=${VERSION:-$(git -C "$REPO" describe --always --dirty 2>/dev/null || echo dev)}
# The commit, dirty when VERSION is, as the Makefile computes it.
if [ -z "${REVISION:-}" ]; then
    REVISION=$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)
    [[ $VERSION != *-dirty ]] || REVISION+=-dirty
fi
LDFLAGS=${LDFLAGS:--X github.com/rdmarun/rdmarun/internal/version.Version=$VERSION -X github.com/rdmarun/rdmarun/internal/version.Revision=$REVISION}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$REPO" log -1 --format=%ct 2>/dev/null || echo 0)}
OUT=${OUT:-$REPO/dist}
WORK=$REPO/.cache/image
DEBS=$WORK/debs
ROOTFS=$WORK/build-rootfs
GOARCH=$("$GO" env GOARCH)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
DEB_ARCH=$(dpkg --print-architecture)
# A tag may hold [A-Za-z0-9_.-] only; git describe gives at most '+'.
TAG=${VERSION//[^A-Za-z0-9_.-]/_}

[ "$(id -u)" = 0 ] || die "run as root: the rootfs is checked with chroot"
[ "$GOARCH" = "$DEB_ARCH" ] || die "go builds for $GOARCH but apt fetches $DEB_ARCH packages"
CRANE=$("$GO" -C "$REPO/tools" tool -n crane) || die "cannot build crane from tools/go.mod"

t0=$(date +%s)
mkdir -p "$WORK" "$DEBS" "$OUT"

# --- the binaries -----------------------------------------------------------
if [ -n "${BIN_DIR:-}" ]; then
    BINS=$BIN_DIR
    say "binaries from $BINS"
else
    BINS=$WORK/bin
    say "building the binaries ($VERSION)"
    "$GO" build -ldflags "$LDFLAGS" -o "$BINS/" "$REPO/cmd/rdmarun" "$REPO/cmd/rdmarun_exporter"
fi
for b in rdmarun rdmarun_exporter; do
    [ -x "$BINS/$b" ] || die "$BINS/$b is missing"
done

# --- the Debian packages ----------------------------------------------------
# owner FILE: the installed package that holds FILE. dpkg knows a library
# by the path its package ships it at, which on a merged-/usr system may
# differ from the path ldd prints by a /usr prefix.
owner() {
    local p real cand out
    real=$(readlink -f "$1")
    for p in "$1" "$real"; do
        for cand in "$p" "${p#/usr}" "/usr$p"; do
            out=$(dpkg -S "$cand" 2>/dev/null | grep -v '^diversion' | head -n1) || continue
            [ -n "$out" ] && { echo "${out%%:*}"; return 0; }
        done
    done
    die "no installed package holds $1 (install the host's libibverbs-dev and ibverbs-providers)"
}

# needed_packages ELF...: the packages that hold the libraries the ELF
# files load, as resolved by the host's dynamic loader (the same Debian
# release, so the same sonames).
needed_packages() {
    local f lib
    for f in "$@"; do
        ldd "$f" | awk '
            /not found/ { print "NOTFOUND " $1; next }
            $2 == "=>" && $3 ~ /^\// { print $3; next }
            $1 ~ /^\// { print $1 }'
    done | sort -u | while read -r lib rest; do
        [ "$lib" != NOTFOUND ] || die "the host cannot resolve $rest, needed by one of: $*"
        owner "$lib"
    done | sort -u
}

# fetch PKG...: the candidate versions' .deb files, from the cache when
# present, downloaded in one apt-get call otherwise; prints their paths.
fetch() {
    local pkg ver base missing=() files=()
    # One apt-cache call: each costs seconds of cache loading.
    declare -A version=()
    while read -r pkg ver; do version[$pkg]=$ver; done < <(
        apt-cache show --no-all-versions "$@" 2>/dev/null |
            awk '/^Package: /{p=$2} /^Version: /{print p, $2}')
    for pkg in "$@"; do
        ver=${version[$pkg]:-}
        [ -n "$ver" ] || die "apt knows no package $pkg (run apt-get update?)"
        base="${pkg}_${ver//:/%3a}"
        files+=("$base")
        compgen -G "$DEBS/${base}_*.deb" >/dev/null || missing+=("$pkg=$ver")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        say "downloading ${missing[*]}"
        (cd "$DEBS" && apt-get download -q "${missing[@]}") >/dev/null 2>"$WORK/apt.err" ||
            { cat "$WORK/apt.err" >&2; die "apt-get download failed"; }
    fi
    for base in "${files[@]}"; do
        compgen -G "$DEBS/${base}_*.deb" || die "apt-get download left no $base"
    done
}

# The providers are loaded with dlopen, so ldd of the binaries does not
# see them or what they link against; they are added, then their own
# dependencies, until nothing new turns up. glibc dlopens libgcc_s for
# thread cancellation and backtraces, which ldd does not show either.
packages=$( { echo libibverbs1; echo ibverbs-providers; echo libgcc-s1
              needed_packages "$BINS/rdmarun" "$BINS/rdmarun_exporter"; } | sed 's/:.*//' | sort -u)
for round in 1 2 3 4 5; do
    rm -rf "$ROOTFS" && mkdir -p "$ROOTFS"
    # shellcheck disable=SC2086 # one package name a word
    fetch $packages >"$WORK/debfiles"
    mapfile -t debfiles <"$WORK/debfiles"
    for deb in "${debfiles[@]}"; do dpkg-deb -x "$deb" "$ROOTFS"; done
    providers=("$ROOTFS"/usr/lib/"$MULTIARCH"/libibverbs/*.so)
    [ -e "${providers[0]}" ] || die "ibverbs-providers holds no provider under /usr/lib/$MULTIARCH/libibverbs"
    more=$(needed_packages "${providers[@]}")
    all=$(printf '%s\n%s\n' "$packages" "$more" | sort -u)
    [ "$all" != "$packages" ] || break
    [ "$round" -lt 5 ] || die "the package set did not settle after 5 rounds"
    packages=$all
done
say "packages: $(echo "$packages" | tr '\n' ' ')"
[ -d "$ROOTFS/etc/libibverbs.d" ] || die "no /etc/libibverbs.d in the rootfs"

# --- the root file system ---------------------------------------------------
R=$ROOTFS
# Mount points for the runtime (or a chroot), and a writable /tmp.
mkdir -p "$R"/{proc,sys,dev,run,tmp,etc/rdmarun,root,var/lib/dpkg,usr/bin}
chmod 1777 "$R/tmp"
chmod 0700 "$R/root"
install -m 0755 "$BINS/rdmarun" "$BINS/rdmarun_exporter" "$R/usr/bin/"
install -m 0644 "$REPO/examples/rdmarun_exporter.yml" "$R$CONFIG_FILE"
install -m 0644 "$REPO/LICENSE" "$R$LICENSE_FILE"

cat >"$R/etc/passwd" <<EOF
root:x:0:0:root:/root:/usr/sbin/nologin
$RUN_AS_USER:x:$RUN_AS_UID:$RUN_AS_UID:$RUN_AS_USER:/nonexistent:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat >"$R/etc/group" <<EOF
root:x:0:
$RUN_AS_USER:x:$RUN_AS_UID:
nogroup:x:65534:
EOF
# Go's user and host lookups, and glibc's through cgo, read these.
cat >"$R/etc/nsswitch.conf" <<EOF
passwd: files
group: files
hosts: files dns
EOF
echo 'include /etc/ld.so.conf.d/*.conf' >"$R/etc/ld.so.conf"

# A dpkg status database of what was unpacked, so that image scanners
# know the package versions.
for deb in "${debfiles[@]}"; do
    dpkg-deb -f "$deb" | sed '1a Status: install ok installed'
    echo
done >"$R/var/lib/dpkg/status"

ldconfig -r "$R"
rm -rf "$R/var/cache/ldconfig"

# The rootfs must be complete by itself: every library of the binaries
# and of every provider resolves inside it, and both binaries start.
for f in /usr/bin/rdmarun /usr/bin/rdmarun_exporter "${providers[@]#"$R"}"; do
    out=$(chroot "$R" /lib64/ld-linux-x86-64.so.2 --list "$f" 2>&1) ||
        die "the image's loader cannot load $f: $out"
    ! grep -q 'not found' <<<"$out" || die "$f needs a library the rootfs lacks: $out"
done
chroot "$R" /usr/bin/rdmarun version >/dev/null || die "rdmarun does not run in the rootfs"
chroot "$R" /usr/bin/rdmarun_exporter --version >/dev/null 2>&1 || die "rdmarun_exporter does not run in the rootfs"

# --- the layer --------------------------------------------------------------
LAYER=$WORK/layer.tar
(cd "$R" && find . -mindepth 1 -maxdepth 1 -printf '%P\n' | sort) >"$WORK/top"
tar --create --file="$LAYER" --directory="$R" --format=gnu --numeric-owner --owner=0 --group=0 \
    --sort=name --mtime="@$SOURCE_DATE_EPOCH" --files-from="$WORK/top"

# --- the image --------------------------------------------------------------
REGLOG=$WORK/registry.log
reg_pid=
stop_registry() { [ -z "$reg_pid" ] || { kill "$reg_pid" 2>/dev/null || true; wait "$reg_pid" 2>/dev/null || true; }; }
trap stop_registry EXIT
# An in-memory registry on a free port, bounded in time should this script
# be killed before its trap runs.
timeout 300 "$CRANE" registry serve --address 127.0.0.1:0 >"$REGLOG" 2>&1 &
reg_pid=$!
port=
for _ in $(seq 100); do
    port=$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$REGLOG")
    [ -z "$port" ] || break
    kill -0 "$reg_pid" 2>/dev/null || { cat "$REGLOG" >&2; die "the registry did not start"; }
    sleep 0.1
done
[ -n "$port" ] || die "the registry did not report its port within 10 s"
REF=127.0.0.1:$port/$IMAGE_NAME:$TAG

# crane logs every blob it pushes; that goes to a file, shown on failure.
crane() { "$CRANE" "$@" 2>>"$WORK/crane.log" || { cat "$WORK/crane.log" >&2; die "crane $1 failed"; }; }
: >"$WORK/crane.log"

crane append --insecure --oci-empty-base --new_layer "$LAYER" --new_tag "$REF" >/dev/null

# crane leaves the creation time at year 1; the commit time is both
# true and reproducible.
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
crane config --insecure "$REF" |
    jq --arg t "$created" '.created = $t | .history = [{created: $t, created_by: "packaging/container/build-image.sh", comment: "Debian packages and the two binaries"}]' |
    crane edit config --insecure "$REF" >/dev/null
labels=(
    "org.opencontainers.image.title=$LABEL_TITLE"
    "org.opencontainers.image.description=$LABEL_DESCRIPTION"
    "org.opencontainers.image.version=$VERSION"
    "org.opencontainers.image.revision=$REVISION"
    "org.opencontainers.image.created=$created"
    "org.opencontainers.image.source=$LABEL_SOURCE"
    "org.opencontainers.image.url=$LABEL_URL"
    "org.opencontainers.image.licenses=$LABEL_LICENSES"
)
label_args=()
for l in "${labels[@]}"; do label_args+=(--label "$l"); done

IMAGE=$OUT/rdmarun-image.tar
rm -f "$IMAGE"
# -t names the image inside the tarball (what `docker load` tags it as);
# -o writes the tarball instead of pushing.
crane mutate --insecure "$REF" \
    --set-platform "linux/$GOARCH" \
    --entrypoint "$ENTRYPOINT" --cmd "$CMD" \
    --user "$IMAGE_USER" --workdir / \
    --env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --exposed-ports "$WEB_PORT/tcp,$RESPONDER_PORT/tcp" \
    "${label_args[@]}" \
    --tag "$IMAGE_NAME:$TAG" --output "$IMAGE" >/dev/null
crane validate --tarball "$IMAGE" >/dev/null

size_fs=$(du -sk --apparent-size "$R" | cut -f1)
size_tar=$(stat -c %s "$IMAGE")
# The tarball is the product; the test unpacks its own copy from it.
rm -rf "$R" "$LAYER"
say "$IMAGE: $IMAGE_NAME:$TAG, $((size_tar / 1024)) KiB compressed, root file system $((size_fs / 1024)) MiB, $(($(date +%s) - t0)) s"
