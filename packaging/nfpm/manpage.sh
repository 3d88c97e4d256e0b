#!/usr/bin/env bash
# Writes BINARY's man page, gzipped, from its --help-man output.
#
#   manpage.sh BINARY VERSION OUT.1.gz
#
# kingpin puts the --version text into the .TH header; the exporter's is
# several lines long (prometheus/common's shape), which breaks the header,
# so the header is written here instead. gzip -n keeps the build
# reproducible (no name or time stamp).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 BINARY VERSION OUT.1.gz" >&2; exit 2; }
bin=$1 version=$2 out=$3
name=$(basename "$bin")
page=$("$bin" --help-man)
case $page in
.TH*) ;;
*) echo "$0: $bin --help-man did not print a man page" >&2; exit 1 ;;
esac
{
	printf '.TH %s 1 "" "%s %s" "User Commands"\n' "$name" "$name" "$version"
	# Everything from the first section on; the header before it goes.
	printf '%s\n' "$page" | sed -n '/^\.SH /,$p'
} | gzip -n -9 >"$out.tmp"
mv "$out.tmp" "$out"
