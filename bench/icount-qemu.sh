#!/bin/bash
# The QEMU of every icount boot (ACCEL=tcg-icount, one vCPU or more): one
# pinned build, bookworm-backports' QEMU 10.0.2, which `provision` fetches
# from Debian's archive (bench/debian-archive.sh) and unpacks under
# build/qemu-bpo/ without installing it. Under icount a boot's numbers are
# a function of the kernel, the image, the job and the emulator (its TCG,
# devices and timers): one emulator for every machine and every vCPU count
# keeps them comparable. kvm and tcg-mt boots keep the system's QEMU.
#
# Why not Debian 12's own QEMU 7.2: before 8.1 its round-robin TCG gives
# each vCPU, in turn, the instructions up to the next virtual-time
# deadline, computed just before that vCPU runs; a vCPU that spins (the
# boot CPU waiting for the secondary in do_boot_cpu()) uses all of it, and
# a 6.1 guest stops at "x86: Booting SMP configuration:" for good. QEMU 8.1
# (commit 83ecdb18eb65, "accel/tcg/tcg-accel-ops-rr: ensure fairness with
# icount") splits each round's budget between the vCPUs.
#
# env: ICOUNT_QEMU, BUILD_DIR, PYTHON; provision: DEBIAN_MIRROR,
# DEBIAN_KEYRING.
# Sourced (bench/qemu.sh): icount_qemu SMP sets ICOUNT_QEMU_CMD (the
# binary and its -L data folders: the one place that says how the icount
# QEMU is started) and ICOUNT_QEMU_VERSION (X.Y.Z), or fails naming why in
# ICOUNT_QEMU_WHY.
# Run: bash bench/icount-qemu.sh provision     (idempotent; prints the binary)
#      bash bench/icount-qemu.sh check [SMP]   (the QEMU icount boots would use)

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	# shellcheck source=lib.sh
	. "$(dirname "$0")/lib.sh"
fi

# The first QEMU whose round-robin TCG gives every vCPU its turn under icount.
ICOUNT_SMP_QEMU_MIN=8.1
# What provision unpacks (bookworm-backports, signed by Debian's archive
# key): the emulator, its shared data, and the SeaBIOS it was built for.
# The one home of the pinned version.
QEMU_PINNED_VERSION=1:10.0.2+ds-2+deb13u1~bpo12+1
QEMU_PINNED_PACKAGES=("qemu-system-x86=$QEMU_PINNED_VERSION" "qemu-system-common=$QEMU_PINNED_VERSION"
	"qemu-system-data=$QEMU_PINNED_VERSION" "seabios=1.16.3-2~bpo12+1")
QEMU_PINNED_SUITE=bookworm-backports
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
	local smp=$1 bin=${ICOUNT_QEMU:-} stamp=$QEMU_PINNED_DIR/provision.json had v
	ICOUNT_QEMU_CMD=() ICOUNT_QEMU_VERSION='' ICOUNT_QEMU_WHY=''
	if [ -z "$bin" ]; then
		if [ ! -f "$stamp" ] || [ ! -x "$QEMU_PINNED_DIR/usr/bin/qemu-system-x86_64" ]; then
			ICOUNT_QEMU_WHY="the pinned QEMU ($QEMU_PINNED_VERSION) is not provisioned in $QEMU_PINNED_DIR: run bash bench/icount-qemu.sh provision (make bench does)"
			return 1
		fi
		had=$(record get "$stamp" version 2>/dev/null || echo unknown)
		if [ "$had" != "$QEMU_PINNED_VERSION" ]; then
			ICOUNT_QEMU_WHY="$QEMU_PINNED_DIR holds QEMU $had, not the pinned $QEMU_PINNED_VERSION: run bash bench/icount-qemu.sh provision (make bench does)"
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

# provision: the pinned build under build/qemu-bpo/, fetched through the
# private apt configuration of bench/debian-archive.sh.
provision() {
	local stamp=$QEMU_PINNED_DIR/provision.json tmp p missing deb fields=()
	if [ -f "$stamp" ] && [ "$(record get "$stamp" version 2>/dev/null)" = "$QEMU_PINNED_VERSION" ]; then
		echo "$QEMU_PINNED_DIR/usr/bin/qemu-system-x86_64"
		return
	fi
	# shellcheck source=debian-archive.sh
	. "$MMLAT_ROOT/bench/debian-archive.sh"
	tmp=$QEMU_PINNED_DIR.tmp.$$
	rm -rf "$tmp"
	trap 'rm -rf "$tmp"' EXIT
	archive_apt "$QEMU_PINNED_SUITE"
	log "icount QEMU: fetching QEMU $QEMU_PINNED_VERSION from $QEMU_PINNED_SUITE into ${QEMU_PINNED_DIR#"$MMLAT_ROOT"/}"
	archive_download "$tmp/debs" "${QEMU_PINNED_PACKAGES[@]}"
	mkdir -p "$tmp/root"
	for deb in "$tmp"/debs/*.deb; do
		dpkg-deb -x "$deb" "$tmp/root" || die "cannot unpack $deb"
		fields+=("debs[]:=$(record write file="$(basename "$deb")" \
			sha256="$(sha256sum "$deb" | cut -d' ' -f1)")")
	done
	missing=$(ldd "$tmp/root/usr/bin/qemu-system-x86_64" | awk '/not found/ {print $1}' | tr '\n' ' ')
	[ -z "$missing" ] ||
		die "the pinned QEMU needs libraries this host lacks: $missing(install them from bookworm)"
	p=$(qemu_version "$tmp/root/usr/bin/qemu-system-x86_64") ||
		die "the unpacked QEMU does not run: $("$tmp/root/usr/bin/qemu-system-x86_64" --version 2>&1 | head -n 1)"
	record write version="$QEMU_PINNED_VERSION" qemu="$p" mirror="$DEBIAN_MIRROR" \
		suite="$QEMU_PINNED_SUITE" packages="${QEMU_PINNED_PACKAGES[*]}" debs:=[] "${fields[@]}" \
		provisioned="$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$tmp/root/provision.json" ||
		die "cannot write the provisioning record"
	mv "$tmp/root" "$tmp.root"
	rm -rf "$tmp"
	commit_dir "$tmp.root" "$QEMU_PINNED_DIR"
	trap - EXIT
	log "icount QEMU: QEMU $p in ${QEMU_PINNED_DIR#"$MMLAT_ROOT"/}"
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
