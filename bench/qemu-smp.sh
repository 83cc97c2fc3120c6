#!/bin/bash
# The QEMU that runs SMP guests under icount (ACCEL=tcg-icount, SMP>1).
#
# QEMU before 8.1 gives each vCPU of its round-robin TCG thread, in turn,
# the instructions up to the next virtual-time deadline, computed just
# before that vCPU runs. A vCPU that spins (the boot CPU waiting for the
# secondary in do_boot_cpu()) uses all of it, the deadline moves on with
# it, and the next vCPU gets no instructions: a 6.1 guest stops at
# "x86: Booting SMP configuration:" for good. QEMU 8.1 (commit 83ecdb18eb65,
# "accel/tcg/tcg-accel-ops-rr: ensure fairness with icount") splits each
# round's budget between the vCPUs. Debian 12 ships 7.2; bookworm-backports
# has a later QEMU, which `provision` unpacks under build/qemu-bpo/ without
# installing it: every other boot keeps Debian's QEMU.
#
# env: ICOUNT_SMP_QEMU, BUILD_DIR, QEMU_BPO_MIRROR (provision), PYTHON.
# Sourced (bench/qemu.sh): icount_smp_qemu sets
# ICOUNT_SMP_QEMU_CMD (the binary and its -L data folders) and
# ICOUNT_SMP_QEMU_VERSION, or fails naming why; qemu_version BIN.
# Run: bash bench/qemu-smp.sh provision   (idempotent; prints the binary)
#      bash bench/qemu-smp.sh check       (the QEMU SMP boots would use)

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -euo pipefail
	# shellcheck source=lib.sh
	. "$(dirname "$0")/lib.sh"
fi

# The first QEMU whose round-robin TCG gives every vCPU its turn under icount.
ICOUNT_SMP_QEMU_MIN=8.1
# What provision unpacks (bookworm-backports, signed by Debian's archive
# key): the emulator, its shared data, and the SeaBIOS it was built for.
QEMU_BPO_VERSION=1:10.0.2+ds-2+deb13u1~bpo12+1
QEMU_BPO_PACKAGES=("qemu-system-x86=$QEMU_BPO_VERSION" "qemu-system-common=$QEMU_BPO_VERSION"
	"qemu-system-data=$QEMU_BPO_VERSION" "seabios=1.16.3-2~bpo12+1")
QEMU_BPO_DIR=$BUILD_DIR/qemu-bpo

# qemu_version BIN: "X.Y.Z" of BIN's --version, or fails.
qemu_version() {
	"$1" --version 2>/dev/null | sed -n '1s/^QEMU emulator version \([0-9][0-9.]*\).*/\1/p' | grep .
}

# version_at_least V MIN: V >= MIN, both dotted numbers.
version_at_least() {
	[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]
}

# icount_smp_qemu: the QEMU for SMP under icount: ICOUNT_SMP_QEMU if set,
# else the system's qemu-system-x86_64 if it has the fix, else the
# provisioned backport. Fails (status 1, the reason in ICOUNT_SMP_QEMU_WHY)
# when that QEMU is missing or lacks the fix.
icount_smp_qemu() {
	local bin=${ICOUNT_SMP_QEMU:-} sys v
	ICOUNT_SMP_QEMU_CMD=() ICOUNT_SMP_QEMU_VERSION='' ICOUNT_SMP_QEMU_WHY=
	if [ -z "$bin" ]; then
		sys=$(command -v qemu-system-x86_64 || true)
		if [ -n "$sys" ] && v=$(qemu_version "$sys") && version_at_least "$v" "$ICOUNT_SMP_QEMU_MIN"; then
			bin=$sys
		elif [ -x "$QEMU_BPO_DIR/usr/bin/qemu-system-x86_64" ]; then
			bin=$QEMU_BPO_DIR/usr/bin/qemu-system-x86_64
			ICOUNT_SMP_QEMU_CMD=(-L "$QEMU_BPO_DIR/usr/share/qemu" -L "$QEMU_BPO_DIR/usr/share/seabios")
		else
			ICOUNT_SMP_QEMU_WHY="the system's QEMU (${v:-none}) is older than $ICOUNT_SMP_QEMU_MIN and $QEMU_BPO_DIR is not provisioned: run bash bench/qemu-smp.sh provision (make bench does)"
			return 1
		fi
	fi
	if ! v=$(qemu_version "$bin"); then
		ICOUNT_SMP_QEMU_WHY="ICOUNT_SMP_QEMU='$bin' does not run (no 'QEMU emulator version' from its --version)"
		return 1
	fi
	if ! version_at_least "$v" "$ICOUNT_SMP_QEMU_MIN"; then
		ICOUNT_SMP_QEMU_WHY="$bin is QEMU $v: before $ICOUNT_SMP_QEMU_MIN its round-robin TCG gives a second vCPU no instructions under icount (the guest stops at 'x86: Booting SMP configuration'); leave ICOUNT_SMP_QEMU empty for the provisioned bookworm-backports QEMU"
		return 1
	fi
	ICOUNT_SMP_QEMU_CMD=("$bin" "${ICOUNT_SMP_QEMU_CMD[@]}")
	ICOUNT_SMP_QEMU_VERSION=$v
}

# provision: the backport under build/qemu-bpo/, from a private apt
# configuration (the system's sources, lists and packages are untouched).
provision() {
	local stamp=$QEMU_BPO_DIR/provision.json tmp apt p missing deb fields=()
	if [ -f "$stamp" ] && [ "$(record get "$stamp" version 2>/dev/null)" = "$QEMU_BPO_VERSION" ]; then
		echo "$QEMU_BPO_DIR/usr/bin/qemu-system-x86_64"
		return
	fi
	if ! command -v apt-get > /dev/null || ! command -v dpkg-deb > /dev/null; then
		die "provisioning the SMP icount QEMU needs apt-get and dpkg-deb (a Debian host)"
	fi
	tmp=$QEMU_BPO_DIR.tmp.$$
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
	log "SMP icount QEMU: fetching QEMU $QEMU_BPO_VERSION from bookworm-backports into ${QEMU_BPO_DIR#"$MMLAT_ROOT"/}"
	apt-get "${aptopts[@]}" update >&2 ||
		die "apt-get update of bookworm-backports ($QEMU_BPO_MIRROR) failed: the SMP icount QEMU cannot be provisioned"
	(cd "$apt/debs" && apt-get "${aptopts[@]}" download "${QEMU_BPO_PACKAGES[@]}") >&2 ||
		die "apt-get download of ${QEMU_BPO_PACKAGES[*]} failed"
	for deb in "$apt"/debs/*.deb; do
		dpkg-deb -x "$deb" "$tmp/root" || die "cannot unpack $deb"
		fields+=("debs[]:=$(record write file="$(basename "$deb")" \
			sha256="$(sha256sum "$deb" | cut -d' ' -f1)")")
	done
	missing=$(ldd "$tmp/root/usr/bin/qemu-system-x86_64" | awk '/not found/ {print $1}' | tr '\n' ' ')
	[ -z "$missing" ] ||
		die "the backported QEMU needs libraries this host lacks: $missing(install them from bookworm)"
	p=$(qemu_version "$tmp/root/usr/bin/qemu-system-x86_64") ||
		die "the unpacked QEMU does not run: $("$tmp/root/usr/bin/qemu-system-x86_64" --version 2>&1 | head -n 1)"
	version_at_least "$p" "$ICOUNT_SMP_QEMU_MIN" ||
		die "the backported QEMU is $p, older than $ICOUNT_SMP_QEMU_MIN"
	record write version="$QEMU_BPO_VERSION" qemu="$p" mirror="$QEMU_BPO_MIRROR" \
		packages="${QEMU_BPO_PACKAGES[*]}" debs:=[] "${fields[@]}" \
		provisioned="$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$tmp/root/provision.json" ||
		die "cannot write the provisioning record"
	rm -rf "$apt"
	mv "$tmp/root" "$tmp.root"
	rm -rf "$tmp"
	commit_dir "$tmp.root" "$QEMU_BPO_DIR"
	trap - EXIT
	log "SMP icount QEMU: QEMU $p in ${QEMU_BPO_DIR#"$MMLAT_ROOT"/}"
	echo "$QEMU_BPO_DIR/usr/bin/qemu-system-x86_64"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	case ${1:-} in
	provision) [ $# -eq 1 ] || die "usage: $0 provision"; provision ;;
	check)
		icount_smp_qemu || die "$ICOUNT_SMP_QEMU_WHY"
		echo "${ICOUNT_SMP_QEMU_CMD[*]} (QEMU $ICOUNT_SMP_QEMU_VERSION)" ;;
	*) die "usage: $0 provision | check" ;;
	esac
fi
