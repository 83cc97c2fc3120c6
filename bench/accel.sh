#!/bin/bash
# Choose the accelerator: KVM only when a probe boot of a real kernel
# reaches the guest runner (a /dev/kvm that exists can still hang the guest
# at "Decompressing Linux..."), else TCG with a fixed -icount shift.
# Prints the mode; the probe's verdict is cached in build/accel.json per
# QEMU version and host kernel.
#
# usage: bench/accel.sh KERNEL_DIR INITRD
#   env: KVM_PROBE_TIMEOUT, and bench/qemu.sh's GUEST_MEM_MIB
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
[ $# -eq 2 ] || die "usage: $0 KERNEL_DIR INITRD"

key="$(qemu-system-x86_64 --version | head -n 1) / host $(uname -r)"
cache=$BUILD_DIR/accel.json
if [ -f "$cache" ] && [ "$(record get "$cache" key)" = "$key" ]; then
	record get "$cache" mode
	exit 0
fi

mode=tcg-icount
why="no usable /dev/kvm"
if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
	probe=$BUILD_DIR/accel-probe
	rm -rf "$probe"
	timeout=$KVM_PROBE_TIMEOUT
	# the orchestrator passes its copy of the kernel, guest/run-*/kernel-NAME
	kernel=$(basename "$1")
	log "accelerator probe: booting '${kernel#kernel-}' under KVM to see if it reaches the runner (up to ${timeout} s)"
	if ACCEL=kvm SMP=2 CELL_TIMEOUT=$timeout \
	   bash "$MMLAT_ROOT/bench/qemu.sh" "$probe" "$1" "$2" "mmlat.workload=probe" 2>/dev/null; then
		mode=kvm
		why="probe boot reached the guest runner"
	else
		why="/dev/kvm exists but the probe boot failed: $(record get "$probe/boot.json" cause 2>/dev/null || echo "it left no boot record")"
	fi
fi
log "accelerator: $mode ($why)"
record write key="$key" mode="$mode" why="$why" > "$cache"
echo "$mode"
