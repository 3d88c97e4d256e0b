#!/usr/bin/env bash
# Maps a `git describe --tags --always --dirty` string to a version that
# dpkg and rpm both accept and order as git does:
#
#   v1.2.3                 -> 1.2.3
#   v1.2.3-rc1             -> 1.2.3~rc1          (~ sorts before 1.2.3)
#   v1.2.3-12-gabc1234     -> 1.2.3+12.gabc1234  (+ sorts after 1.2.3)
#   abc1234 (no tag yet)   -> 0.0.0+N.gabc1234   (N: commits in HEAD, so
#                                                 later builds sort later)
#   any of these + -dirty  -> ... with .dirty appended (after + or as +dirty)
#
# rpm forbids '-' in a version and dpkg needs a leading digit, so neither
# the raw describe string nor a bare hash will do.
#
#   pkgversion.sh DESCRIBE [COMMIT_COUNT]
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then echo "usage: $0 DESCRIBE [COMMIT_COUNT]" >&2; exit 2; fi
d=$1
count=${2:-}

dirty=
if [[ $d == *-dirty ]]; then
	dirty=dirty
	d=${d%-dirty}
fi

if [[ $d =~ ^v?([0-9]+\.[0-9]+\.[0-9]+)(-([0-9A-Za-z.]+))?-([0-9]+)-g([0-9a-f]+)$ ]]; then
	base=${BASH_REMATCH[1]}
	[ -z "${BASH_REMATCH[3]}" ] || base+="~${BASH_REMATCH[3]}"
	local_part="${BASH_REMATCH[4]}.g${BASH_REMATCH[5]}"
elif [[ $d =~ ^v?([0-9]+\.[0-9]+\.[0-9]+)(-([0-9A-Za-z.]+))?$ ]]; then
	base=${BASH_REMATCH[1]}
	[ -z "${BASH_REMATCH[3]}" ] || base+="~${BASH_REMATCH[3]}"
	local_part=
elif [[ $d =~ ^[0-9a-f]{4,40}$ ]]; then
	[[ $count =~ ^[0-9]+$ ]] || { echo "$0: a bare hash ($d) needs the commit count" >&2; exit 2; }
	base=0.0.0
	local_part="$count.g$d"
else
	echo "$0: cannot make a package version of '$1'" >&2
	exit 2
fi

[ -z "$dirty" ] || local_part=${local_part:+$local_part.}$dirty
echo "$base${local_part:++$local_part}"
