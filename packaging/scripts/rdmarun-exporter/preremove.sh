#!/bin/sh
# Before removal, on Debian (prerm remove; not on upgrade) and RPM (%preun
# 0; not on upgrade): stop the unit and remove its enable links, so that
# nothing refers to the unit file once it is gone.
set -e
unit=rdmarun_exporter.service

case "$1" in
remove | 0) ;;
*) exit 0 ;;
esac
command -v systemctl >/dev/null || exit 0
if [ -d /run/systemd/system ]; then
	systemctl stop "$unit" || true
fi
systemctl disable "$unit" >/dev/null 2>&1 || true
