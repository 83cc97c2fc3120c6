#!/bin/bash
# Boot one kernel in QEMU for one job and bring back what the guest runner
# wrote. Never touches the host kernel: everything runs inside the VM.
#
# usage: bench/qemu.sh OUT_DIR KERNEL_DIR INITRD "JOB ARGS" [PLUGIN]
#   env: ACCEL (kvm | tcg-icount | tcg-mt), SMP, GUEST_MEM_MIB,
#   ICOUNT_SHIFT, CELL_TIMEOUT (wall s): the orchestrator's (bench/plan/knobs.py)
#   PLUGIN: QEMU's -plugin argument of the mmlat plugin (plugin/README.md)
#   without out=, which is OUT_DIR/plugin: the plugin's dumps go there.
# Writes OUT_DIR/console.log, OUT_DIR/guest/ and OUT_DIR/boot.json
# (status ok|failed, cause, wall_seconds, guest_seconds_to_runner, accel,
# qemu_binary, qemu: the binary and its --version line).
# Exit 0 when the guest runner reported ok, 1 when the boot failed (the
# cause is in boot.json), 2 when the host could not keep the boot's results
# (a full disk: nothing is written, the caller stops the run), 143 when
# stopped by a signal.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

[ $# -eq 4 ] || [ $# -eq 5 ] || die "usage: $0 OUT_DIR KERNEL_DIR INITRD 'JOB ARGS' [PLUGIN]"
out=$1 kdir=$2 initrd=$3 job=$4 plugin=${5:-}
# host_fault WHAT: the host, not the guest, failed this boot.
host_fault() { printf 'mmlat: error: %s\n' "$*" >&2; exit 2; }
[ -f "$kdir/bzImage" ] || die "no kernel at $kdir/bzImage"

case $ACCEL in
kvm) accel_args=(-accel kvm) ;;
tcg-icount) accel_args=(-accel tcg -icount "shift=$ICOUNT_SHIFT,sleep=off") ;;
tcg-mt) accel_args=(-accel "tcg,thread=multi") ;;
*) die "unknown ACCEL '$ACCEL' (kvm, tcg-icount, tcg-mt)" ;;
esac
# One vCPU, or another accelerator: the system's QEMU. SMP under icount:
# a QEMU with the round-robin fairness fix (bench/qemu-smp.sh), refused
# with the reason rather than left to hang at the second vCPU.
qemu_bin=(qemu-system-x86_64)
smp_append=
if [ "$ACCEL" = tcg-icount ] && [ "$SMP" != 1 ]; then
	# shellcheck source=qemu-smp.sh
	. "$MMLAT_ROOT/bench/qemu-smp.sh"
	icount_smp_qemu || die "SMP=$SMP with ACCEL=tcg-icount: $ICOUNT_SMP_QEMU_WHY"
	qemu_bin=("${ICOUNT_SMP_QEMU_CMD[@]}")
	# Every vCPU's TSC is the one virtual clock under icount, but 6.1
	# trusts a TSC on more than one non-Intel CPU only with constant_tsc,
	# which TCG does not offer: without this it falls back to the HPET
	# and local_clock() to the tick-bounded unstable sched_clock.
	smp_append=" tsc=reliable"
fi
# The plugin speaks QEMU 10.0's plugin API: it runs in the QEMU whose
# qemu-plugin.h it was built with (plugin/build.sh), one vCPU under icount.
if [ -n "$plugin" ]; then
	if [ "$ACCEL" != tcg-icount ] || [ "$SMP" != 1 ]; then
		die "the plugin runs under ACCEL=tcg-icount with one vCPU, not $ACCEL with $SMP"
	fi
	# shellcheck source=qemu-smp.sh
	. "$MMLAT_ROOT/bench/qemu-smp.sh"
	[ -x "$QEMU_BPO_DIR/usr/bin/qemu-system-x86_64" ] ||
		die "the plugin's QEMU is not provisioned: bash bench/qemu-smp.sh provision"
	qemu_bin=("$QEMU_BPO_DIR/usr/bin/qemu-system-x86_64"
		-L "$QEMU_BPO_DIR/usr/share/qemu" -L "$QEMU_BPO_DIR/usr/share/seabios")
fi
qemu_version=$("${qemu_bin[0]}" --version | head -n 1) || die "${qemu_bin[0]} does not run"

mkdir -p "$out" || host_fault "cannot create $out"
disk=$out/results.img
rm -f "$disk"
truncate -s 256M "$disk" || host_fault "cannot create the results disk $disk"
# QEMU's option lists split at commas and read ",," as one: a cell named by
# a workload's parameters (imap:n=16,s=1) has commas in its path. A write
# error reaches the guest (werror=report) instead of pausing the VM, which
# QEMU does on ENOSPC by default: a full host disk ends the boot at once
# rather than at the timeout.
qemu=("${qemu_bin[@]}" "${accel_args[@]}" -smp "$SMP" -m "$GUEST_MEM_MIB" -nodefaults
	-display none -no-reboot -serial "file:$out/console.log"
	-drive "file=${disk//,/,,},format=raw,if=virtio,werror=report,rerror=report"
	-kernel "$kdir/bzImage" -initrd "$initrd"
	-append "console=ttyS0 panic=-1 oops=panic quiet loglevel=4$smp_append $job")
if [ -n "$plugin" ]; then
	rm -rf "$out/plugin"
	mkdir -p "$out/plugin" || host_fault "cannot create $out/plugin"
	qemu+=(-plugin "$plugin,out=${out//,/,,}/plugin")
fi
printf '%q ' "${qemu[@]}" > "$out/qemu.cmdline" || host_fault "cannot write $out/qemu.cmdline"

start=$(date +%s.%N)
rc=0
# timeout stays in this process group (--foreground), so that whoever stops
# the group stops QEMU too; it runs in the background so that this trap
# runs at once: a signal here (the matrix stopping, or its parent-death
# signal) ends QEMU and leaves no record of the boot.
timeout --foreground --kill-after=5 "$CELL_TIMEOUT" "${qemu[@]}" > "$out/qemu.log" 2>&1 &
qemu_pid=$!
trap 'kill -TERM "$qemu_pid" 2>/dev/null; wait "$qemu_pid"; exit 143' INT TERM HUP
wait "$qemu_pid" || rc=$?
trap - INT TERM HUP
wall=$(echo "$(date +%s.%N) - $start" | bc)

cause=
con=$out/console.log
touch "$con"
if grep -q 'mmlat-runner: FAIL' "$con"; then
	cause="runner: $(grep -m1 'mmlat-runner: FAIL' "$con" | sed 's/.*FAIL: //')"
elif splat=$(first_splat "$con"); then
	cause="kernel: $splat"
elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	cause="hang: no result within ${CELL_TIMEOUT}s wall time (last console line: $(tail -n 1 "$con" | tr -d '\r'))"
elif [ $rc -ne 0 ]; then
	cause="qemu exited with $rc: $(tail -n 1 "$out/qemu.log")"
elif ! grep -q 'mmlat-runner: done' "$con"; then
	cause="guest ended without the runner finishing (last console line: $(tail -n 1 "$con" | tr -d '\r'))"
fi

# Whatever the guest shipped is kept, also from a failed run.
rm -rf "$out/guest"
mkdir -p "$out/guest"
if ! tar -xf "$disk" -C "$out/guest" 2>"$out/tar.log"; then
	! grep -q 'No space left on device' "$out/tar.log" ||
		host_fault "no space left on device to unpack the guest's results into $out"
	[ -n "$cause" ] || cause="results disk unreadable: $(head -n 1 "$out/tar.log")"
elif [ -z "$cause" ] && [ "$(cat "$out/guest/status" 2>/dev/null)" != ok ]; then
	cause="guest status: $(cat "$out/guest/status" 2>/dev/null || echo missing)"
elif [ -z "$cause" ] && [ -f "$out/guest/dmesg.txt" ] && splat=$(first_splat "$out/guest/dmesg.txt"); then
	# loglevel=4 keeps warnings (lockdep, might_sleep) off the console.
	cause="kernel (dmesg): $splat"
fi
rm -f "$disk" "$out/tar.log"
# The plugin writes its dumps as QEMU exits.
if [ -z "$cause" ] && [ -n "$plugin" ] && [ ! -s "$out/plugin/windows.txt" ]; then
	cause="plugin: no windows.txt (last line of qemu.log: $(tail -n 1 "$out/qemu.log"))"
fi

runner_start=$(sed -n 's/.*mmlat-runner: start uptime=\([0-9.]*\).*/\1/p' "$con" | head -n 1)
status=ok
[ -z "$cause" ] || status=failed
if ! record write status="$status" cause="$cause" wall_seconds:="$wall" \
	guest_seconds_to_runner:="${runner_start:-null}" accel="$ACCEL" \
	qemu_binary="${qemu_bin[0]}" qemu="$qemu_version" > "$out/boot.json.tmp" ||
   ! mv "$out/boot.json.tmp" "$out/boot.json"; then
	host_fault "cannot write $out/boot.json"
fi
[ -z "$cause" ] || { log "boot failed: $cause"; exit 1; }
