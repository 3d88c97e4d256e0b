#!/bin/sh
# After install or upgrade, on Debian (postinst configure [OLD-VERSION]) and
# RPM (%post COUNT). Creates the system user the unit runs as, enables the
# unit on first install only (an administrator's disable survives an
# upgrade), and starts it only under a running systemd (not in a chroot or
# an image build) and only once the fleet's token exists.
set -e
unit=rdmarun-serve.service
token=/etc/rdmarun/token

case "$1" in
configure) first=$([ -z "$2" ] && echo yes || echo no) ;;
1) first=yes ;;
[0-9]*) first=no ;;
*) exit 0 ;;
esac

if ! getent passwd rdmarun >/dev/null; then
	if command -v adduser >/dev/null && [ "$1" = configure ]; then
		adduser --quiet --system --group --no-create-home --home /nonexistent rdmarun
	else
		useradd --system --user-group --no-create-home --home-dir / --shell /sbin/nologin rdmarun
	fi
fi

command -v systemctl >/dev/null || exit 0
if [ "$first" = yes ]; then
	systemctl enable "$unit" >/dev/null 2>&1 || true
fi
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload || true
	if [ ! -e "$token" ]; then
		# serve refuses a non-loopback address without a token; starting it
		# now would only fail.
		echo "rdmarun-serve needs the fleet's token: rdmarun token --owner rdmarun $token (once, then copy it to every node), then systemctl start $unit"
	elif [ "$first" = yes ]; then
		systemctl start "$unit" || true
	else
		systemctl try-restart "$unit" || true
	fi
fi
