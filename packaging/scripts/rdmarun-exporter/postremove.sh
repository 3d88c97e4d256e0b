#!/bin/sh
# After removal, on Debian (postrm remove|purge|...) and RPM (%postun COUNT).
# dpkg removes the conffiles on purge; the token in /etc/rdmarun belongs to
# no package (an administrator made it), and both packages use it, so the
# purge of the last of the two removes it and the directory. The user
# rdmarun stays, as Debian does for system users: files it owned elsewhere
# must not pass to a later user with its id. RPM keeps administrators'
# files, so an RPM erase removes nothing else.
set -e

if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
	systemctl daemon-reload || true
fi
[ "$1" = purge ] || exit 0
if ! dpkg-query -W -f '${db:Status-Status}' rdmarun 2>/dev/null | grep -qx installed; then
	rm -f /etc/rdmarun/token
	rmdir /etc/rdmarun 2>/dev/null || true
fi
