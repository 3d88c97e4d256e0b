#!/usr/bin/env bash
# Runs a test binary built with `go test -c -tags testbed` inside the
# soft-RoCE VM, in the package's directory (as go test would, so testdata/
# is found), and prints each test's verdict and a closing count.
#
#   testbed/gotest.sh BINARY PACKAGE_DIR [TEST FLAGS...]
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
[ $# -ge 2 ] || { echo "usage: $0 BINARY PACKAGE_DIR [TEST FLAGS...]" >&2; exit 2; }
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
pkg=$2
shift 2

log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
(cd "$REPO/$pkg" && "$HERE/run.sh" --timeout "${TESTBED_TIMEOUT:-900}" -- "$bin" -test.v -test.count=1 "$@") 2>&1 | tee "$log" || status=$?
# A run that printed no verdict, or fewer passes than the binary has
# top-level tests, must not read as success.
passed=$(grep -c -E '^--- PASS' "$log" || true)
failed=$(grep -c -E '^--- FAIL' "$log" || true)
skipped=$(grep -c -E '^--- SKIP' "$log" || true)
echo "testbed-$pkg: $passed passed, $failed failed, $skipped skipped"
if [ "$status" -ne 0 ]; then
    echo "testbed-$pkg: test binary exited with status $status" >&2
    exit 1
fi
if [ "$passed" -eq 0 ] || [ "$failed" -ne 0 ]; then
    exit 1
fi
