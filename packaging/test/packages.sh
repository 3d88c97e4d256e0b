#!/usr/bin/env bash
# The packages' acceptance test (make package-test, after make dist):
#   1. the package version mapping;
#   2. the deb and rpm contents, metadata, conffiles and scripts, against
#      the lists in packaging/test/testdata (UPDATE_TESTDATA=1 rewrites
#      them, so a change shows as a diff to review), and the licence each
#      package declares and carries;
#   3. systemd-analyze verify (silent) and security (at most the threshold
#      of packaging/README.md) on the units as packaged;
#   4. a real apt-get install of both debs on this machine, then, inside the
#      soft-RoCE VM, the installed daemons started the way their units
#      start them, an installed exporter probing an installed rdmarun serve
#      with the token; then apt-get purge, which must leave nothing behind.
# Offline; needs root, dpkg, apt-get, rpm, systemd-analyze and shellcheck.
# The machine must not have either package installed already: the test
# owns them.
#
#   packaging/test/packages.sh            the whole test, on the host
#   packaging/test/packages.sh --in-vm    step 4's VM half (run by step 4)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
TESTDATA=packaging/test/testdata
# Exposure levels x10, as systemd-analyze security --threshold takes them;
# packaging/README.md says why these values.
SECURITY_THRESHOLD=16
# The provisional exporter port; one place in this script.
WEB_PORT=10520
UNITS=(rdmarun-serve.service rdmarun_exporter.service)

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# expect is the last command of pipelines (`dpkg-deb -c ... | expect NAME`);
# without lastpipe it runs in a subshell and the failure it counts is lost.
shopt -s lastpipe
step() { echo "== $*"; }

# ---- the VM half -----------------------------------------------------------

# unit_exec UNIT: the unit's one ExecStart line, with $ARGS replaced by the
# words of ARGS as set by the unit's environment files, one word a line.
# systemd splits an unquoted $ARGS at white space, as read -a does here.
unit_exec() {
	local unit=/usr/lib/systemd/system/$1 line files=() f exec_lines
	exec_lines=$(grep -c '^ExecStart=' "$unit")
	[ "$exec_lines" = 1 ] || { echo "$unit has $exec_lines ExecStart lines" >&2; return 1; }
	line=$(sed -n 's/^ExecStart=//p' "$unit")
	# No process substitution in this half: the VM has no /dev/fd.
	mapfile -t files <<<"$(sed -n 's/^EnvironmentFile=-\{0,1\}//p' "$unit")"
	local ARGS='' used=0
	for f in "${files[@]}"; do
		if [ -e "$f" ]; then
			# shellcheck disable=SC1090 # an env file of ARGS="..." only
			. "$f"
			used=$((used + 1))
		fi
	done
	[ "$used" -gt 0 ] || { echo "$unit: none of its environment files ${files[*]} exists" >&2; return 1; }
	local words=() w args=()
	read -r -a words <<<"$line"
	read -r -a args <<<"$ARGS"
	for w in "${words[@]}"; do
		# shellcheck disable=SC2016 # the literal word $ARGS of the unit
		if [ "$w" = '$ARGS' ]; then
			printf '%s\n' "${args[@]}"
		else
			printf '%s\n' "$w"
		fi
	done
}

# as_user CMD...: CMD as the units run it: user and group rdmarun, no
# supplementary groups, no capabilities, an empty environment.
as_user() {
	setpriv --reuid=rdmarun --regid=rdmarun --clear-groups --inh-caps=-all -- \
		env -i PATH=/usr/bin:/bin "$@"
}

# as_service CMD... &: as_user with the unit's LimitMEMLOCK=infinity
# (raising a hard limit needs CAP_SYS_RESOURCE, which the VM's root has).
# Only in the background: it execs, so that $! is the daemon's own pid.
as_service() {
	exec prlimit --memlock=unlimited:unlimited -- \
		setpriv --reuid=rdmarun --regid=rdmarun --clear-groups --inh-caps=-all -- \
		env -i PATH=/usr/bin:/bin "$@"
}

# scrape: the exporter's /metrics. Bash's own /dev/tcp, as the VM has no
# curl and busybox wget crashes there.
scrape() {
	# shellcheck disable=SC2016 # $1 is the inner shell's
	timeout 10 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" &&
		printf "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" >&3 && cat <&3' scrape "$WEB_PORT"
}

in_vm() {
	local dir=/tmp/pkgtest serve=() exporter=() deadline out
	mkdir -p "$dir" && chmod 755 "$dir"
	local lines
	lines=$(unit_exec rdmarun-serve.service)
	mapfile -t serve <<<"$lines"
	lines=$(unit_exec rdmarun_exporter.service)
	mapfile -t exporter <<<"$lines"
	echo "unit rdmarun-serve.service runs: ${serve[*]}"
	echo "unit rdmarun_exporter.service runs: ${exporter[*]}"
	if [ "${#serve[@]}" -lt 3 ] || [ "${#exporter[@]}" -lt 2 ]; then
		echo "no ExecStart parsed" >&2
		return 1
	fi

	# serve keeps the packaged arguments (the token file) and is pinned to
	# rxe0's address; the exporter gets a test configuration (its packaged
	# one probes nobody, and its responder would take serve's port) with
	# the packaged token and the flags its env file would carry.
	cat >"$dir/rdmarun_exporter.yml" <<-EOF
		modules:
		  default: {op: write_imm, sizes: [2], count: 3, interval: 3s, timeout: 2s, qp: {type: rc, retry_cnt: 3}}
		targets:
		  static:
		    - {name: serve, address: "10.0.0.1:18520", module: default}
		responder:
		  enabled: false
		  token_file: /etc/rdmarun/token
	EOF
	chmod 644 "$dir/rdmarun_exporter.yml"
	cat >"$dir/exporter.env" <<-EOF
		ARGS="--config.file=$dir/rdmarun_exporter.yml --device=rxe1 --web.listen-address=127.0.0.1:$WEB_PORT"
	EOF
	local ARGS
	# shellcheck disable=SC1091
	. "$dir/exporter.env"
	local test_args
	read -r -a test_args <<<"$ARGS"
	exporter=("${exporter[0]}" "${test_args[@]}")

	as_service "${serve[@]}" --listen=10.0.0.1:18520 --device=rxe0 >"$dir/serve.log" 2>&1 &
	pid_serve=$!
	as_service "${exporter[@]}" >"$dir/exporter.log" 2>&1 &
	pid_exp=$!
	trap 'kill "$pid_serve" "$pid_exp" 2>/dev/null || true' EXIT

	local ok=0 uid
	uid=$(id -u rdmarun)
	deadline=$((SECONDS + 90))
	while [ $SECONDS -lt $deadline ]; do
		kill -0 "$pid_serve" 2>/dev/null || { echo "serve exited" >&2; break; }
		kill -0 "$pid_exp" 2>/dev/null || { echo "the exporter exited" >&2; break; }
		out=$(scrape 2>/dev/null || true)
		if grep -Eq '^rdma_probe_success\{[^}]*target="serve"[^}]*\} 1$' <<<"$out"; then
			ok=1
			break
		fi
		sleep 1
	done
	local p
	for p in "$pid_serve" "$pid_exp"; do
		grep -q "^Uid:[[:space:]]*${uid}[[:space:]]" "/proc/$p/status" || { echo "process $p does not run as rdmarun" >&2; ok=0; }
		grep -Eq '^Max locked memory +unlimited +unlimited' "/proc/$p/limits" || { echo "process $p: memlock is not unlimited" >&2; ok=0; }
	done
	kill "$pid_serve" "$pid_exp" 2>/dev/null || true
	if [ "$ok" != 1 ]; then
		echo "--- last scrape:"; grep '^rdma_probe_success' <<<"$out" || true
		echo "--- serve log:"; tail -20 "$dir/serve.log"
		echo "--- exporter log:"; tail -20 "$dir/exporter.log"
		return 1
	fi
	grep '^rdma_probe_success' <<<"$out"
	echo "the installed exporter probed the installed rdmarun serve, both as rdmarun with memlock unlimited"
}

if [ "${1:-}" = --in-vm ]; then
	in_vm
	exit
fi

# ---- the host half ---------------------------------------------------------

start=$SECONDS
[ "$(id -u)" = 0 ] || { echo "$0: run as root (it installs the packages)" >&2; exit 1; }
for tool in dpkg-deb rpm apt-get systemd-analyze prlimit setpriv shellcheck; do
	command -v "$tool" >/dev/null || { echo "$0: $tool is missing" >&2; exit 1; }
done

# expect NAME: compares stdin with testdata/NAME.
expect() {
	local want=$TESTDATA/$1 got
	got=$(cat)
	if [ -n "${UPDATE_TESTDATA:-}" ]; then
		printf '%s\n' "$got" >"$want"
		return
	fi
	diff -u "$want" <(printf '%s\n' "$got") >&2 || fail "$1 differs from $want (UPDATE_TESTDATA=1 rewrites it)"
}

# dep5_licence [quiet]: stdin is a machine-readable (DEP-5) copyright file
# that licenses every file (Files: *) under Apache-2.0 and has that
# licence's stand-alone paragraph, pointing at base-files' text. Says what
# is wrong unless quiet; fails if anything is.
dep5_licence() {
	local out
	out=$(awk '
		BEGIN { RS = ""; FS = "\n" }
		{
			files = ""; licence = ""; copyright = 0; body = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^Files:/) { files = $i; sub(/^Files:[ \t]*/, "", files) }
				else if ($i ~ /^Copyright:/) copyright = 1
				else if ($i ~ /^License:/) { licence = $i; sub(/^License:[ \t]*/, "", licence) }
				else if (licence != "" && $i ~ /^[ \t]/) body = body $i "\n"
			}
			if (NR == 1) {
				if ($1 != "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")
					print "the first line is not the DEP-5 Format: line: " $1
				next
			}
			if (files == "*") {
				all = 1
				if (licence != "Apache-2.0") print "Files: * has License: \"" licence "\", want Apache-2.0"
				if (!copyright) print "Files: * has no Copyright:"
			} else if (files == "" && licence == "Apache-2.0") {
				standalone = 1
				if (body !~ /\/usr\/share\/common-licenses\/Apache-2\.0/)
					print "the Apache-2.0 paragraph does not point at /usr/share/common-licenses/Apache-2.0"
			}
		}
		END {
			if (NR == 0) print "the file is empty"
			if (!all) print "no Files: * paragraph"
			if (!standalone) print "no stand-alone License: Apache-2.0 paragraph"
		}')
	[ -z "$out" ] && return 0
	[ "${1:-}" = quiet ] || printf '%s\n' "$out" >&2
	return 1
}

step "shellcheck"
shellcheck packaging/scripts/*/*.sh packaging/nfpm/*.sh packaging/test/packages.sh || fail "shellcheck"

step "package versions"
while read -r describe count want; do
	got=$(packaging/nfpm/pkgversion.sh "$describe" "$count" 2>/dev/null || echo error)
	[ "$got" = "$want" ] || fail "pkgversion.sh $describe $count = $got, want $want"
done <<'EOF'
v1.2.3 0 1.2.3
v1.2.3-rc1 0 1.2.3~rc1
v1.2.3-12-gabc1234 0 1.2.3+12.gabc1234
v1.2.3-rc1-2-gabc1234-dirty 0 1.2.3~rc1+2.gabc1234.dirty
abc1234 42 0.0.0+42.gabc1234
abc1234-dirty 42 0.0.0+42.gabc1234.dirty
v1.2.3-dirty 0 1.2.3+dirty
abc1234 x error
not-a-version 0 error
EOF
# dpkg must order them as git does.
for pair in 1.2.3~rc1:1.2.3 1.2.3:1.2.3+12.gabc1234 1.2.3+12.gabc1234:1.2.4~rc1 0.0.0+42.gabc1234:0.0.0+43.gdef5678; do
	dpkg --compare-versions "${pair%%:*}" lt "${pair#*:}" || fail "dpkg does not order ${pair%%:*} before ${pair#*:}"
	[ "$(rpm --eval "%{lua: print(rpm.vercmp('${pair%%:*}', '${pair#*:}'))}")" = -1 ] ||
		fail "rpm does not order ${pair%%:*} before ${pair#*:}"
done

shopt -s nullglob
debs=(dist/rdmarun_*.deb dist/rdmarun-exporter_*.deb)
rpms=(dist/rdmarun-[0-9]*.rpm dist/rdmarun-exporter-[0-9]*.rpm)
if [ "${#debs[@]}" != 2 ] || [ "${#rpms[@]}" != 2 ]; then
	echo "$0: want 2 debs and 2 rpms in dist/ (make dist), have ${debs[*]} ${rpms[*]}" >&2
	exit 1
fi

step "deb contents, control, conffiles, scripts"
for deb in "${debs[@]}"; do
	pkg=$(dpkg-deb -f "$deb" Package)
	version=$(dpkg-deb -f "$deb" Version)
	dpkg-deb -c "$deb" | awk '{print $1, $2, $6}' | expect "$pkg.deb.contents"
	# Installed-Size follows the binary's size; the version, git's.
	dpkg-deb -f "$deb" | grep -v '^Installed-Size:' | sed "s/^Version: $version\$/Version: VERSION/" | expect "$pkg.deb.control"
	dpkg-deb -I "$deb" conffiles | expect "$pkg.deb.conffiles"
	for s in postinst:postinstall prerm:preremove postrm:postremove; do
		cmp -s <(dpkg-deb -I "$deb" "${s%%:*}") "packaging/scripts/$pkg/${s#*:}.sh" ||
			fail "$deb: ${s%%:*} is not packaging/scripts/$pkg/${s#*:}.sh"
	done
done

step "rpm contents, requires, conffiles, scripts, digests"
for rpm in "${rpms[@]}"; do
	pkg=$(rpm -qp --qf '%{NAME}' "$rpm")
	rpm -qp --qf '[%{FILEMODES:perms} %{FILEUSERNAME}/%{FILEGROUPNAME} %{FILENAMES}\n]' "$rpm" | expect "$pkg.rpm.contents"
	rpm -qpR "$rpm" | expect "$pkg.rpm.requires"
	rpm -qp --recommends "$rpm" | expect "$pkg.rpm.recommends"
	rpm -qp --configfiles "$rpm" | expect "$pkg.rpm.configfiles"
	rpm -qp --scripts "$rpm" | expect "$pkg.rpm.scripts"
	rpm -K --nosignature "$rpm" | grep -q ': digests OK$' || fail "$rpm: rpm -K --nosignature: $(rpm -K --nosignature "$rpm" 2>&1)"
done

step "licence"
# The listings above show that the files are there; this shows what they
# say. A deb names its licence in the DEP-5 copyright file and points at
# base-files' text, which must be the text of LICENSE; an rpm names it in
# its License tag and ships the text as a %license file.
cmp -s LICENSE /usr/share/common-licenses/Apache-2.0 ||
	fail "LICENSE is not the text of /usr/share/common-licenses/Apache-2.0 (base-files)"
for deb in "${debs[@]}"; do
	pkg=$(dpkg-deb -f "$deb" Package)
	copyright=$(dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/share/doc/$pkg/copyright" 2>/dev/null) ||
		{ fail "$deb has no /usr/share/doc/$pkg/copyright"; continue; }
	dep5_licence <<<"$copyright" || fail "$deb: /usr/share/doc/$pkg/copyright does not license it as Apache-2.0"
done
for rpm in "${rpms[@]}"; do
	pkg=$(rpm -qp --qf '%{NAME}' "$rpm")
	got=$(rpm -qp --qf '%{LICENSE}' "$rpm")
	[ "$got" = Apache-2.0 ] || fail "$rpm: License tag is '$got', want Apache-2.0"
	got=$(rpm -qpL "$rpm")
	[ "$got" = "/usr/share/licenses/$pkg/LICENSE" ] ||
		fail "$rpm: its %license files are '$got', want /usr/share/licenses/$pkg/LICENSE"
	# The header's SHA-256 of the file, which rpm -K and an install hold
	# the payload to, stands for its text.
	got=$(rpm -qp --qf '[%{FILEDIGESTS} %{FILENAMES}\n]' "$rpm" | sed -n "s| /usr/share/licenses/$pkg/LICENSE\$||p")
	[ "$got" = "$(sha256sum LICENSE | cut -d' ' -f1)" ] ||
		fail "$rpm: /usr/share/licenses/$pkg/LICENSE is not LICENSE (digest '$got')"
done
# The check must be able to fail: a copyright file that names no licence
# for its files, or another one, is refused.
! dep5_licence quiet <<<"$(sed '/^Files: \*$/,/^$/{/^License:/d}' packaging/nfpm/copyright)" ||
	fail "a copyright file whose Files: * names no licence passes"
! dep5_licence quiet <<<"$(sed 's/^License: Apache-2.0$/License: MIT/' packaging/nfpm/copyright)" ||
	fail "a copyright file of another licence passes"

step "systemd units"
root=$(mktemp -d /tmp/pkgtest-root.XXXXXX)
trap 'rm -rf "$root"' EXIT
# The units as packaged, in a root that also holds the host's own units
# (sysinit.target, rdma-hw.target, ...) and /bin/kill, as a real system has.
mkdir -p "$root/usr/lib/systemd/system" "$root/usr/bin"
cp -a /usr/lib/systemd/system/. "$root/usr/lib/systemd/system/"
ln -s usr/bin "$root/bin"
cp /usr/bin/kill "$root/usr/bin/"
for deb in "${debs[@]}"; do dpkg-deb -x "$deb" "$root"; done
for unit in "${UNITS[@]}"; do
	out=$(systemd-analyze verify --man=no --root="$root" "$unit" 2>&1) || fail "verify $unit failed"
	[ -z "$out" ] || fail "verify $unit printed: $out"
	score=$(systemd-analyze security --offline=true --root="$root" "$unit" 2>&1 | sed -n 's/.*Overall exposure level for .*: \([0-9.]*\) .*/\1/p')
	echo "$unit: exposure $score (threshold $SECURITY_THRESHOLD/10)"
	systemd-analyze security --offline=true --root="$root" --threshold="$SECURITY_THRESHOLD" "$unit" >/dev/null 2>&1 ||
		fail "$unit: exposure $score is above $SECURITY_THRESHOLD/10"
done
# Both checks must be able to fail under this root: a misspelt directive
# must be reported, and a unit without its hardening must score too high.
sed 's/^ProtectHome=/ProtectHomee=/' "$root/usr/lib/systemd/system/rdmarun_exporter.service" >"$root/usr/lib/systemd/system/pkgtest-typo.service"
[ -n "$(systemd-analyze verify --man=no --root="$root" pkgtest-typo.service 2>&1)" ] || fail "verify does not report a misspelt directive"
grep -v -E '^(Protect|Private|Restrict|SystemCall|Capability|NoNewPrivileges|MemoryDeny|Device)' \
	"$root/usr/lib/systemd/system/rdmarun_exporter.service" >"$root/usr/lib/systemd/system/pkgtest-bare.service"
! systemd-analyze security --offline=true --root="$root" --threshold="$SECURITY_THRESHOLD" pkgtest-bare.service >/dev/null 2>&1 ||
	fail "an unhardened unit passes the security threshold"

step "apt-get install"
for pkg in rdmarun rdmarun-exporter; do
	if dpkg-query -W -f '${db:Status-Status}' "$pkg" 2>/dev/null | grep -qv '^not-installed$'; then
		echo "$0: $pkg is already on this machine; this test installs and purges it itself" >&2
		exit 1
	fi
done
[ ! -e /etc/rdmarun ] || { echo "$0: /etc/rdmarun exists already" >&2; exit 1; }
purged=0
purge() { [ "$purged" = 1 ] || apt-get purge -y -qq rdmarun rdmarun-exporter >/dev/null 2>&1 || true; }
trap 'purge; rm -rf "$root"' EXIT
t0=$SECONDS
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "./${debs[0]}" "./${debs[1]}" >/dev/null
echo "installed in $((SECONDS - t0)) s"
# dpkg -L separates packages by an empty line and lists "/." first.
dpkg -L rdmarun rdmarun-exporter | grep '^/.' | sort -u >"$root/installed.list"

getent passwd rdmarun >/dev/null || fail "no user rdmarun"
getent group rdmarun >/dev/null || fail "no group rdmarun"
IFS=: read -r _ _ uid gid _ home shell < <(getent passwd rdmarun)
[ "$uid" -lt 1000 ] || fail "rdmarun is not a system user (uid $uid)"
[ "$gid" = "$(getent group rdmarun | cut -d: -f3)" ] || fail "rdmarun's primary group is not rdmarun"
case $shell in */nologin | /bin/false) ;; *) fail "rdmarun has a login shell: $shell" ;; esac
[ ! -e "$home" ] || [ "$home" = / ] || fail "rdmarun has a home directory: $home"
while read -r mode owner path; do
	got=$(stat -c '%A %U:%G' "$path" 2>/dev/null || echo missing)
	[ "$got" = "$mode $owner" ] || fail "$path: $got, want $mode $owner"
done <<'EOF'
-rwxr-xr-x root:root /usr/bin/rdmarun
-rwxr-xr-x root:root /usr/bin/rdmarun_exporter
-rw-r--r-- root:root /usr/lib/systemd/system/rdmarun-serve.service
-rw-r--r-- root:root /usr/lib/systemd/system/rdmarun_exporter.service
drwxr-xr-x root:root /etc/rdmarun
-rw-r--r-- root:root /etc/rdmarun/rdmarun_exporter.yml
-rw-r--r-- root:root /etc/default/rdmarun-serve
-rw-r--r-- root:root /etc/default/rdmarun_exporter
-rw-r--r-- root:root /usr/share/man/man1/rdmarun.1.gz
-rw-r--r-- root:root /usr/share/man/man1/rdmarun_exporter.1.gz
EOF
while read -r path; do [ -e "$path" ] || fail "$path is listed by dpkg but missing"; done <"$root/installed.list"
if command -v systemctl >/dev/null; then
	for unit in "${UNITS[@]}"; do
		[ -L "/etc/systemd/system/multi-user.target.wants/$unit" ] || fail "$unit is not enabled"
	done
fi
for bin in rdmarun rdmarun_exporter; do
	zcat "/usr/share/man/man1/$bin.1.gz" | head -1 | grep -q "^\.TH $bin 1 " || fail "$bin.1.gz has no man page header"
	if command -v man >/dev/null; then
		man -l "/usr/share/man/man1/$bin.1.gz" >/dev/null 2>&1 || fail "man cannot render $bin.1.gz"
	fi
done
# Both print the version and revision make dist built them with (VERSION
# and REVISION, from git, as the Makefile computes them); the exporter's
# build_info takes them from where its --version does.
VERSION=${VERSION:-$(git describe --always --dirty)}
if [ -z "${REVISION:-}" ]; then
	REVISION=$(git rev-parse HEAD)
	[[ $VERSION != *-dirty ]] || REVISION+=-dirty
fi
[ "$(/usr/bin/rdmarun --version 2>&1)" = "rdmarun $VERSION (revision: $REVISION)" ] ||
	fail "rdmarun --version: $(/usr/bin/rdmarun --version 2>&1), want rdmarun $VERSION (revision: $REVISION)"
[ "$(/usr/bin/rdmarun_exporter --version 2>&1 | head -1)" = "rdmarun_exporter, version $VERSION (branch: , revision: $REVISION)" ] ||
	fail "rdmarun_exporter --version: $(/usr/bin/rdmarun_exporter --version 2>&1 | head -1), want version $VERSION, revision $REVISION"

# The packaged configuration and env file, checked as the unit would start:
# on a fresh install there is no token yet, and the check says so.
mapfile -t exporter_cmd < <(unit_exec rdmarun_exporter.service)
out=$(as_user "${exporter_cmd[@]}" --config.check 2>&1) &&
	fail "--config.check passed without the token file"
grep -q 'rdmarun token --owner rdmarun /etc/rdmarun/token' <<<"$out" ||
	fail "--config.check without a token does not say how to make it: $out"
# The token, made as packaging/README.md tells operators to.
/usr/bin/rdmarun token --owner rdmarun /etc/rdmarun/token >/dev/null
[ "$(stat -c '%a %U:%G' /etc/rdmarun/token)" = "600 rdmarun:rdmarun" ] ||
	fail "rdmarun token --owner: $(stat -c '%a %U:%G' /etc/rdmarun/token), want 600 rdmarun:rdmarun"
as_user "${exporter_cmd[@]}" --config.check >/dev/null 2>&1 ||
	fail "the packaged exporter configuration does not pass --config.check: $(as_user "${exporter_cmd[@]}" --config.check 2>&1 | tail -3)"

step "the installed daemons in the soft-RoCE VM"
t0=$SECONDS
testbed/run.sh --timeout 180 -- "$PWD/packaging/test/packages.sh" --in-vm || fail "the installed daemons did not work in the VM"
echo "VM run took $((SECONDS - t0)) s"

step "apt-get purge"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq rdmarun rdmarun-exporter >/dev/null
purged=1
while read -r path; do
	if [ -d "$path" ]; then
		# Shared directories (/usr/bin, /etc/default) stay; ours must go.
		case $path in *rdmarun*) fail "directory $path is left after purge" ;; esac
	elif [ -e "$path" ] || [ -L "$path" ]; then
		fail "$path is left after purge"
	fi
done <"$root/installed.list"
[ ! -e /etc/rdmarun ] || fail "/etc/rdmarun is left after purge: $(ls -A /etc/rdmarun)"
left=$(find /etc/systemd /usr/lib/systemd /etc/default /usr/share/doc /usr/share/man -name '*rdmarun*' 2>/dev/null)
[ -z "$left" ] || fail "left after purge: $left"
getent passwd rdmarun >/dev/null || fail "purge removed the user rdmarun (it should stay, as Debian's system users do)"

echo "package-test took $((SECONDS - start)) s"
if [ "$failures" -gt 0 ]; then
	echo "package-test: $failures failure(s)" >&2
	exit 1
fi
echo "package-test: all passed"
