#!/bin/bash
# The QEMU of every icount boot (ACCEL=tcg-icount, one vCPU or more): one
# pinned build, bookworm-backports' QEMU 10.0.2, which `provision` unpacks
# under build/qemu-bpo/ without installing it. Under icount a boot's numbers
# are a function of the kernel, the image, the job and the emulator (its
# TCG, devices and timers): one emulator for every machine and every vCPU
# count keeps them comparable. kvm and tcg-mt boots keep the system's QEMU.
#
# Why not Debian 12's own QEMU 7.2: before 8.1 its round-robin TCG gives
# each vCPU, in turn, the instructions up to the next virtual-time
# deadline, computed just before that vCPU runs; a vCPU that spins (the
# boot CPU waiting for the secondary in do_boot_cpu()) uses all of it, and
# a 6.1 guest stops at "x86: Booting SMP configuration:" for good. QEMU 8.1
# (commit 83ecdb18eb65, "accel/tcg/tcg-accel-ops-rr: ensure fairness with
# icount") splits each round's budget between the vCPUs. And the plugin API
# the QEMU plugin work needs (v4: qemu_plugin_read_memory_vaddr) came in 9.2.
#
# Sourced (bench/qemu.sh, bench/run-matrix.sh): icount_qemu SMP sets
# ICOUNT_QEMU_CMD (the binary and its -L data folders), ICOUNT_QEMU_VERSION
# (X.Y.Z), or fails naming why in ICOUNT_QEMU_WHY; qemu_version BIN.
# Run: bash bench/icount-qemu.sh provision   (idempotent; prints the binary)
#      bash bench/icount-qemu.sh check [SMP] (the QEMU icount boots would use)

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	. "$(dirname "$0")/lib.sh"
	. "$MMLAT_ROOT/bench/knobs.sh"
fi

# What provision unpacks (bookworm-backports, signed by Debian's archive
# key): the emulator, its shared data, and the SeaBIOS it was built for.
# The one home of the pinned version.
QEMU_PINNED_VERSION=1:10.0.2+ds-2+deb13u1~bpo12+1
QEMU_PINNED_PACKAGES="qemu-system-x86=$QEMU_PINNED_VERSION qemu-system-common=$QEMU_PINNED_VERSION
qemu-system-data=$QEMU_PINNED_VERSION seabios=1.16.3-2~bpo12+1"
QEMU_BPO_MIRROR=${QEMU_BPO_MIRROR:-http://deb.debian.org/debian}
QEMU_PINNED_DIR=$BUILD_DIR/qemu-bpo

# qemu_version BIN: "X.Y.Z" of BIN's --version, or fails.
qemu_version() {
	"$1" --version 2>/dev/null | sed -n '1s/^QEMU emulator version \([0-9][0-9.]*\).*/\1/p' | grep .
}

# version_at_least V MIN: V >= MIN, both dotted numbers.
version_at_least() {
	[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}

# icount_qemu SMP: the QEMU of an icount boot with SMP vCPUs: ICOUNT_QEMU if
# set, else the pinned build, provisioned. Fails (status 1, the reason in
# ICOUNT_QEMU_WHY) when that QEMU is missing, is not the pinned version, or
# lacks the round-robin fairness fix that SMP>1 needs.
icount_qemu() {
	local smp=$1 bin=${ICOUNT_QEMU:-$ICOUNT_QEMU_DEFAULT} stamp=$QEMU_PINNED_DIR/provision.json had v
	ICOUNT_QEMU_CMD=() ICOUNT_QEMU_VERSION='' ICOUNT_QEMU_WHY=''
	if [ -z "$bin" ]; then
		if [ ! -f "$stamp" ] || [ ! -x "$QEMU_PINNED_DIR/usr/bin/qemu-system-x86_64" ]; then
			ICOUNT_QEMU_WHY="the pinned QEMU ($QEMU_PINNED_VERSION) is not provisioned in $QEMU_PINNED_DIR: run bash bench/icount-qemu.sh provision (bench/run-matrix.sh does)"
			return 1
		fi
		had=$(record get "$stamp" version 2>/dev/null || echo unknown)
		if [ "$had" != "$QEMU_PINNED_VERSION" ]; then
			ICOUNT_QEMU_WHY="$QEMU_PINNED_DIR holds QEMU $had, not the pinned $QEMU_PINNED_VERSION: run bash bench/icount-qemu.sh provision (bench/run-matrix.sh does)"
			return 1
		fi
		bin=$QEMU_PINNED_DIR/usr/bin/qemu-system-x86_64
		ICOUNT_QEMU_CMD=(-L "$QEMU_PINNED_DIR/usr/share/qemu" -L "$QEMU_PINNED_DIR/usr/share/seabios")
	fi
	if ! v=$(qemu_version "$bin"); then
		ICOUNT_QEMU_WHY="ICOUNT_QEMU='$bin' does not run (no 'QEMU emulator version' from its --version)"
		return 1
	fi
	if [ "$smp" != 1 ] && ! version_at_least "$v" "$ICOUNT_SMP_QEMU_MIN"; then
		ICOUNT_QEMU_WHY="$bin is QEMU $v: before $ICOUNT_SMP_QEMU_MIN its round-robin TCG gives a second vCPU no instructions under icount (the guest stops at 'x86: Booting SMP configuration'); leave ICOUNT_QEMU empty for the pinned QEMU"
		return 1
	fi
	ICOUNT_QEMU_CMD=("$bin" "${ICOUNT_QEMU_CMD[@]}")
	ICOUNT_QEMU_VERSION=$v
}

# provision: the pinned build under build/qemu-bpo/, from a private apt
# configuration (the system's sources, lists and packages are untouched).
provision() {
	local stamp=$QEMU_PINNED_DIR/provision.json tmp apt p missing deb fields=()
	if [ -f "$stamp" ] && [ "$(record get "$stamp" version 2>/dev/null)" = "$QEMU_PINNED_VERSION" ]; then
		echo "$QEMU_PINNED_DIR/usr/bin/qemu-system-x86_64"
		return
	fi
	command -v apt-get > /dev/null && command -v dpkg-deb > /dev/null ||
		die "provisioning the icount QEMU needs apt-get and dpkg-deb (a Debian host); elsewhere give ICOUNT_QEMU=<a QEMU binary>"
	tmp=$QEMU_PINNED_DIR.tmp.$$
	rm -rf "$tmp"
	trap 'rm -rf "$tmp"' EXIT
	apt=$tmp/apt
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$tmp/root"
	printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s bookworm-backports main\n' \
		"$QEMU_BPO_MIRROR" > "$apt/sources.list"
	local aptopts=(-q -o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
	# as root apt would drop to _apt, who cannot write into this folder
	[ "$(id -u)" -ne 0 ] || aptopts+=(-o APT::Sandbox::User=root)
	log "icount QEMU: fetching QEMU $QEMU_PINNED_VERSION from bookworm-backports into ${QEMU_PINNED_DIR#$MMLAT_ROOT/}"
	apt-get "${aptopts[@]}" update >&2 ||
		die "apt-get update of bookworm-backports ($QEMU_BPO_MIRROR) failed: the icount QEMU cannot be provisioned"
	(cd "$apt/debs" && apt-get "${aptopts[@]}" download $QEMU_PINNED_PACKAGES) >&2 ||
		die "apt-get download of $(echo $QEMU_PINNED_PACKAGES) failed"
	for deb in "$apt"/debs/*.deb; do
		dpkg-deb -x "$deb" "$tmp/root" || die "cannot unpack $deb"
		fields+=("debs[]:=$(record write file="$(basename "$deb")" \
			sha256="$(sha256sum "$deb" | cut -d' ' -f1)")")
	done
	missing=$(ldd "$tmp/root/usr/bin/qemu-system-x86_64" | awk '/not found/ {print $1}' | tr '\n' ' ')
	[ -z "$missing" ] ||
		die "the pinned QEMU needs libraries this host lacks: $missing(install them from bookworm)"
	p=$(qemu_version "$tmp/root/usr/bin/qemu-system-x86_64") ||
		die "the unpacked QEMU does not run: $("$tmp/root/usr/bin/qemu-system-x86_64" --version 2>&1 | head -n 1)"
	record write version="$QEMU_PINNED_VERSION" qemu="$p" mirror="$QEMU_BPO_MIRROR" \
		packages="$(echo $QEMU_PINNED_PACKAGES)" debs:=[] "${fields[@]}" \
		provisioned="$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$tmp/root/provision.json" ||
		die "cannot write the provisioning record"
	rm -rf "$apt"
	mv "$tmp/root" "$tmp.root"
	rm -rf "$tmp"
	commit_dir "$tmp.root" "$QEMU_PINNED_DIR"
	trap - EXIT
	log "icount QEMU: QEMU $p in ${QEMU_PINNED_DIR#$MMLAT_ROOT/}"
	echo "$QEMU_PINNED_DIR/usr/bin/qemu-system-x86_64"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	case ${1:-} in
	provision) [ $# -eq 1 ] || die "usage: $0 provision"; provision ;;
	check)
		[ $# -le 2 ] || die "usage: $0 check [SMP]"
		icount_qemu "${2:-1}" || die "$ICOUNT_QEMU_WHY"
		echo "${ICOUNT_QEMU_CMD[*]} (QEMU $ICOUNT_QEMU_VERSION)" ;;
	*) die "usage: $0 provision | check [SMP]" ;;
	esac
fi
