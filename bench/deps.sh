#!/bin/bash
# Check the Debian packages mmlat needs; as root, install the missing ones.
# pkg-config and libglib2.0-dev: the QEMU plugin (plugin/build.sh) includes
# qemu-plugin.h, which includes glib's headers.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

# The LAVA executors and their tests: lava-dispatcher (lava-run), lava-server
# (the device-type templates lava-run's device is rendered from, and the
# server of make test-lava-server), lavacli; tftpd-hpa and telnet are what
# lava-run --validate looks for in the bare-metal x86 job.
PACKAGES="build-essential bc bison flex libelf-dev libssl-dev
cpio dwarves kmod rsync xz-utils ccache qemu-system-x86 rt-tests stress-ng
busybox-static python3-matplotlib python3-numpy python3-pytest python3-flake8 shellcheck
pkg-config libglib2.0-dev
lava-dispatcher lavacli lava-server tftpd-hpa telnet"

missing=()
for p in $PACKAGES; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || exit 0
if [ "$(id -u)" -ne 0 ]; then
	die "missing packages: ${missing[*]}
  install them with: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}"
fi
log "installing missing packages: ${missing[*]}"
apt-get update -q >&2 || die "apt-get update failed"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2 ||
	die "apt-get install failed for: ${missing[*]}"
