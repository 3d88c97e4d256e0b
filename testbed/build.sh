#!/usr/bin/env bash
# Build the guest kernel and initramfs for the soft-RoCE testbed.
#
# The host kernel has no RDMA support, so tests run inside Debian's own
# kernel under QEMU, where rdma_rxe (soft-RoCE) is available as a module.
# The kernel package is downloaded and unpacked into the cache, never
# installed on the host.
#
# Output: $REPO/.cache/testbed/{vmlinuz,vmlinux,initrd.img}; vmlinux is the
# uncompressed kernel, which boots ~4 s faster under TCG. A rerun with the same
# kernel version and the same build inputs (this script, init.sh) does
# nothing.
set -euo pipefail

die() { echo "testbed: $*" >&2; exit 1; }

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
CACHE=$REPO/.cache/testbed
INIT=$HERE/init.sh

# Modules the guest needs, in the order they must be loaded. Their
# dependencies are added in front of each by modprobe --show-depends.
# crc32_generic must precede rdma_rxe: rxe asks the crypto layer for
# "crc32" at link creation but does not declare the dependency, and
# without it `rdma link add` fails with ENOENT.
# sch_prio and cls_u32 let a test put netem on RoCE's UDP port alone, so
# the control channel's TCP is spared.
MODULES=(virtio_pci 9pnet_virtio 9p crc32_generic rdma_rxe ib_uverbs
         rdma_ucm ib_umad veth sch_netem sch_prio cls_u32 virtio_rng)
# Loaded by init.sh only for more than 2 hosts (TESTBED_HOSTS), so the
# default 2-host boot does not pay for them.
BRIDGE_MODULES=(bridge)
# Loaded only with TESTBED_SIW=1: soft-iWARP, which Debian's kernel does
# not build (CONFIG_RDMA_SIW is not set), so build_siw compiles it here
# from Debian's source and headers packages. Its libcrc32c needs
# crc32c_generic, which it does not declare.
SIW_MODULES=(crc32c_generic siw)

for tool in apt-cache apt-get dpkg-deb depmod modprobe modinfo cpio gzip sha256sum flock timeout make gcc tar xz; do
    command -v "$tool" >/dev/null || die "missing host tool '$tool'"
done
[ -x /bin/busybox ] || die "/bin/busybox missing (install busybox-static)"
# A dynamically linked busybox would need its libraries in the initramfs.
if command -v file >/dev/null && ! LC_ALL=C file -L /bin/busybox | grep -q 'statically linked'; then
    die "/bin/busybox is not statically linked (install busybox-static)"
fi
[ -f "$INIT" ] || die "missing $INIT"

mkdir -p "$CACHE"
# run.sh may be started several times in parallel; only one may build.
exec 9>"$CACHE/build.lock"
timeout 900 flock 9 || die "could not lock $CACHE/build.lock within 900 s"

INPUTS=$(cat "$INIT" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)
# Fast path: apt-cache takes ~1 s here (the image keeps no package cache),
# so the kernel version is only resolved again when the package lists
# changed since the last build.
if [ -f "$CACHE/stamp" ] && [ -f "$CACHE/vmlinuz" ] && [ -f "$CACHE/vmlinux" ] &&
   [ -f "$CACHE/initrd.img" ] && read -r VER stamped <"$CACHE/stamp" &&
   [ "$stamped" = "$INPUTS" ] &&
   [ -z "$(find /var/lib/apt/lists -maxdepth 1 -newer "$CACHE/stamp" -print -quit 2>/dev/null)" ]; then
    echo "testbed: kernel $VER and initramfs up to date in $CACHE"
    exit 0
fi

# linux-image-amd64 is the meta package; it depends on the current
# versioned image package, e.g. linux-image-6.1.0-57-amd64.
PKG=$(timeout 60 apt-cache depends linux-image-amd64 2>/dev/null |
      awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }') ||
    die "apt-cache depends linux-image-amd64 failed"
[ -n "$PKG" ] || die "cannot resolve the kernel package from 'apt-cache depends linux-image-amd64' (run apt-get update?)"
VER=${PKG#linux-image-}

STAMP_WANT="$VER $INPUTS"
if [ -f "$CACHE/stamp" ] && [ -f "$CACHE/vmlinuz" ] && [ -f "$CACHE/vmlinux" ] &&
   [ -f "$CACHE/initrd.img" ] && [ "$(cat "$CACHE/stamp")" = "$STAMP_WANT" ]; then
    touch "$CACHE/stamp"
    echo "testbed: kernel $VER and initramfs up to date in $CACHE"
    exit 0
fi
start=$(date +%s%N)

# Download the package into the cache. apt-get download writes into the
# current directory; a partial file is never left under the final name.
DEBDIR=$CACHE/deb
mkdir -p "$DEBDIR"
deb=$(ls "$DEBDIR/${PKG}_"*.deb 2>/dev/null | head -n1 || true)
if [ -z "$deb" ]; then
    rm -rf "$DEBDIR/tmp" && mkdir -p "$DEBDIR/tmp"
    # apt warns that the download runs unsandboxed as root; only show its
    # output when it fails.
    (cd "$DEBDIR/tmp" && timeout 600 apt-get download "$PKG") >"$DEBDIR/download.log" 2>&1 ||
        { cat "$DEBDIR/download.log" >&2; die "apt-get download $PKG failed"; }
    mv "$DEBDIR"/tmp/*.deb "$DEBDIR/"
    rmdir "$DEBDIR/tmp"
    deb=$(ls "$DEBDIR/${PKG}_"*.deb | head -n1)
fi

# Unpack it and build modules.dep (normally the package's postinst would).
KROOT=$CACHE/kernel-$VER
if [ ! -f "$KROOT/.complete" ]; then
    rm -rf "$KROOT" && mkdir -p "$KROOT"
    timeout 300 dpkg-deb -x "$deb" "$KROOT" || die "dpkg-deb -x $deb failed"
    timeout 120 depmod -b "$KROOT" "$VER" || die "depmod -b $KROOT $VER failed"
    touch "$KROOT/.complete"
fi
[ -f "$KROOT/boot/vmlinuz-$VER" ] || die "no boot/vmlinuz-$VER in $deb"

# build_siw compiles soft-iWARP out of tree against the kernel's own
# headers, once per kernel version (about 30 s: a 153 MB download, the
# driver's folder out of the source tarball, a 15 s build), and puts it
# into the unpacked kernel's modules as extra/siw.ko. The packages are
# unpacked into the cache, never installed. The kernel image package's
# version (6.1.192-3) names the source and headers packages to fetch.
build_siw() {
    local sdir=$CACHE/siw-$VER kver pkgs root hdr common src
    if [ ! -f "$sdir/siw.ko" ]; then
        kver=$(dpkg-deb -f "$deb" Version) || die "cannot read the version of $deb"
        local series=${VER%%.0-*}  # 6.1
        pkgs=("linux-source-$series=$kver" "linux-headers-$VER=$kver"
              "linux-headers-${VER%-*}-common=$kver" "linux-kbuild-$series=$kver")
        rm -rf "$sdir.tmp" && mkdir -p "$sdir.tmp/deb" "$sdir.tmp/root"
        (cd "$sdir.tmp/deb" && timeout 600 apt-get download "${pkgs[@]}") >"$sdir.tmp/download.log" 2>&1 ||
            { cat "$sdir.tmp/download.log" >&2; die "apt-get download ${pkgs[*]} failed (needed for soft-iWARP)"; }
        root=$sdir.tmp/root
        for d in "$sdir.tmp"/deb/linux-headers-*.deb "$sdir.tmp"/deb/linux-kbuild-*.deb; do
            timeout 120 dpkg-deb -x "$d" "$root" || die "dpkg-deb -x $d failed"
        done
        hdr=$root/usr/src/linux-headers-$VER
        common=$root/usr/src/linux-headers-${VER%-*}-common
        [ -f "$hdr/Makefile" ] && [ -d "$common" ] || die "the headers of $VER are not where expected in $root"
        # The headers' Makefile includes the common part by its installed
        # path; its scripts links are relative and resolve inside root.
        echo "include $common/Makefile" >"$hdr/Makefile"
        src=$sdir.tmp/src
        mkdir -p "$src"
        dpkg-deb --fsys-tarfile "$sdir.tmp"/deb/linux-source-*.deb |
            tar -xO "./usr/src/linux-source-$series.tar.xz" |
            timeout 300 tar -xJ -C "$src" "linux-source-$series/drivers/infiniband/sw/siw/" ||
            die "cannot take drivers/infiniband/sw/siw out of linux-source-$series"
        src=$src/linux-source-$series/drivers/infiniband/sw/siw
        timeout 600 make -s -C "$hdr" M="$src" CONFIG_RDMA_SIW=m modules >"$sdir.tmp/build.log" 2>&1 ||
            { tail -n 30 "$sdir.tmp/build.log" >&2; die "building siw.ko failed"; }
        modinfo -F vermagic "$src/siw.ko" | grep -q "^$VER " ||
            die "siw.ko was built for '$(modinfo -F vermagic "$src/siw.ko")', not $VER"
        rm -rf "$sdir" && mkdir -p "$sdir"
        cp "$src/siw.ko" "$sdir/siw.ko"
        rm -rf "$sdir.tmp"
    fi
    mkdir -p "$KROOT/lib/modules/$VER/extra"
    cmp -s "$sdir/siw.ko" "$KROOT/lib/modules/$VER/extra/siw.ko" || {
        cp "$sdir/siw.ko" "$KROOT/lib/modules/$VER/extra/siw.ko"
        timeout 120 depmod -b "$KROOT" "$VER" || die "depmod -b $KROOT $VER failed"
    }
}
build_siw

# Under TCG, the bzImage spends ~4 s decompressing itself before the kernel
# starts. QEMU can instead boot the uncompressed ELF directly through its
# PVH entry point (CONFIG_PVH), so unpack the payload once here. The boot
# header gives the payload's place: it starts payload_offset (0x248) bytes
# into the protected-mode part, which follows (setup_sects (0x1f1) + 1)
# 512-byte sectors; its last 4 bytes are the uncompressed size.
extract_vmlinux() {
    local img=$1 out=$2 ss off len magic
    hdr() { od -An -t "u$2" -j "$1" -N "$2" "$img" | tr -d ' '; }
    ss=$(hdr $((0x1f1)) 1)
    off=$(( (ss + 1) * 512 + $(hdr $((0x248)) 4) ))
    len=$(( $(hdr $((0x24c)) 4) - 4 ))
    magic=$(od -An -t x1 -j "$off" -N 4 "$img" | tr -d ' ')
    local -a unpack
    case $magic in
        fd377a58) unpack=(xz -dc) ;;
        28b52ffd) unpack=(zstd -dcq) ;;
        1f8b*)    unpack=(gzip -dc) ;;
        *) die "unknown kernel payload compression (magic $magic) in $img" ;;
    esac
    dd if="$img" bs=64K iflag=skip_bytes,count_bytes skip="$off" count="$len" status=none |
        timeout 120 "${unpack[@]}" >"$out" ||
        die "unpacking the kernel payload of $img failed"
    [ "$(od -An -c -N 4 "$out" | tr -d ' ')" = "177ELF" ] ||
        die "the unpacked kernel payload of $img is not an ELF file"
}

# Resolve the load order. Each --show-depends line is either
# "insmod /path/x.ko [options]" or "builtin x". Built-in ones need nothing.
# resolve LIST_VAR MODULE... appends to LIST_VAR the files not seen yet.
declare -A seen=()
resolve() {
    local -n list=$1
    local mod out kind path
    shift
    for mod in "$@"; do
        out=$(timeout 60 modprobe -d "$KROOT" -S "$VER" --show-depends "$mod" 2>&1) ||
            die "module $mod not found in kernel $VER: $out"
        while read -r kind path _; do
            case $kind in
                builtin) ;;
                insmod)
                    if [ -z "${seen[$path]+x}" ]; then
                        seen[$path]=1
                        list+=("$path")
                    fi ;;
                *) die "unexpected modprobe output for $mod: $kind $path" ;;
            esac
        done <<<"$out"
    done
}
order=()
resolve order "${MODULES[@]}"
bridge_order=()
resolve bridge_order "${BRIDGE_MODULES[@]}"
siw_order=()
resolve siw_order "${SIW_MODULES[@]}"

# Assemble the initramfs tree in a scratch directory, then swap it in.
TREE=$CACHE/initramfs.tmp
rm -rf "$TREE"
mkdir -p "$TREE"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,host,share,etc,tmp} \
         "$TREE/lib/modules/$VER"
cp /bin/busybox "$TREE/bin/busybox"
cp "$INIT" "$TREE/init"
chmod 755 "$TREE/init"
moddir=$KROOT/lib/modules/$VER
# copy_modules LIST_FILE PATH... copies the modules and lists them in load
# order for init.sh.
copy_modules() {
    local listfile=$1 path rel
    shift
    : >"$listfile"
    for path in "$@"; do
        rel=${path#"$moddir"/}
        case $path in
            *.ko) ;;
            # Compressed modules would need decompressing for busybox insmod.
            *) die "unsupported module file $path (expected plain .ko)" ;;
        esac
        mkdir -p "$TREE/lib/modules/$VER/$(dirname "$rel")"
        cp "$path" "$TREE/lib/modules/$VER/$rel"
        echo "/lib/modules/$VER/$rel" >>"$listfile"
    done
}
copy_modules "$TREE/etc/testbed-modules" "${order[@]}"
copy_modules "$TREE/etc/testbed-modules-bridge" "${bridge_order[@]}"
copy_modules "$TREE/etc/testbed-modules-siw" "${siw_order[@]}"
# A modules.dep for just these modules lets busybox modprobe (used by the
# kernel for on-demand loads) find them.
for f in modules.builtin modules.builtin.modinfo modules.order; do
    [ -f "$moddir/$f" ] && cp "$moddir/$f" "$TREE/lib/modules/$VER/"
done
timeout 60 depmod -b "$TREE" "$VER" || die "depmod on the initramfs tree failed"

(cd "$TREE" && find . -mindepth 1 | LC_ALL=C sort |
    timeout 120 cpio -o -H newc --quiet | gzip -6) >"$CACHE/initrd.img.tmp" ||
    die "creating the initramfs failed"
cp "$KROOT/boot/vmlinuz-$VER" "$CACHE/vmlinuz.tmp"
extract_vmlinux "$CACHE/vmlinuz.tmp" "$CACHE/vmlinux.tmp"
mv "$CACHE/initrd.img.tmp" "$CACHE/initrd.img"
mv "$CACHE/vmlinuz.tmp" "$CACHE/vmlinuz"
mv "$CACHE/vmlinux.tmp" "$CACHE/vmlinux"
rm -rf "$TREE"
echo "$STAMP_WANT" >"$CACHE/stamp"

end=$(date +%s%N)
ms=$(( (end - start) / 1000000 ))
printf 'testbed: built kernel %s and initramfs (%d modules, %d KiB) in %d.%01d s into %s\n' \
    "$VER" "$(( ${#order[@]} + ${#bridge_order[@]} + ${#siw_order[@]} ))" "$(( $(stat -c %s "$CACHE/initrd.img") / 1024 ))" \
    $((ms / 1000)) $((ms % 1000 / 100)) "$CACHE"
