#!/bin/sh
# Print a directory on the console, for a host that gets nothing back from
# the guest but its serial log: a LAVA job's disks are deleted with the job.
#
# usage: console-results.sh DIR [CONSOLE]   (CONSOLE: default /dev/console)
#
# The block, read back by lava/mmlat_lava/console.py:
#   mmlat-results: begin v1 tar.bz2.base64 bytes=N sha256=HEX
#   DIR as a bzip2'd tar, base64, 76 characters a line
#   mmlat-results: end bytes=N sha256=HEX
# N and HEX are the length and sha256 of the bzip2'd tar, so that the host
# tells a complete block from a truncated or corrupt one. bzip2, not gzip:
# a serial line carries about half the bytes (a calibration boot's folder:
# 0.5 MB rather than 1 MB; 115200 baud is 11.5 kB/s on real hardware). The kernel's own
# console messages are held back while the block prints (console loglevel
# 1: emergencies only), so that none splits a line of it; a whole line
# that still lands inside the block is skipped by the host.
#
# Exit 0 when the block was printed, 1 otherwise (the reason on stderr).
set -eu

# console_level N: the kernel's console loglevel.
console_level() {
	dmesg -n "$1"
}

main() {
	if [ $# -lt 1 ] || [ $# -gt 2 ]; then echo "usage: $0 DIR [CONSOLE]" >&2; exit 1; fi
	dir=$1
	console=${2:-/dev/console}
	[ -d "$dir" ] || { echo "$0: no directory $dir" >&2; exit 1; }
	archive=$(mktemp /tmp/mmlat-results.XXXXXX)
	trap 'rm -f "$archive"' EXIT

	tar -cjf "$archive" -C "$dir" .
	bytes=$(wc -c < "$archive")
	sum=$(sha256sum "$archive")
	sum=${sum%% *}

	# The loglevel to restore afterwards: the first field of
	# /proc/sys/kernel/printk, where the kernel has sysctls.
	level=
	[ ! -r /proc/sys/kernel/printk ] || level=$(cut -f1 /proc/sys/kernel/printk)
	console_level 1
	{
		echo "mmlat-results: begin v1 tar.bz2.base64 bytes=$bytes sha256=$sum"
		base64 "$archive"
		echo "mmlat-results: end bytes=$bytes sha256=$sum"
	} > "$console"
	[ -z "$level" ] || console_level "$level"
}

# MMLAT_CONSOLE_RESULTS_LIB=1: define the functions only (the host's unit
# tests, which must not set the host's console loglevel).
[ "${MMLAT_CONSOLE_RESULTS_LIB:-0}" = 1 ] || main "$@"
