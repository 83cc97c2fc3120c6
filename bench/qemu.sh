#!/bin/bash
# Boot one kernel in QEMU for one job and bring back what the guest runner
# wrote. Never touches the host kernel: everything runs inside the VM.
#
# usage: bench/qemu.sh OUT_DIR KERNEL_DIR INITRD "JOB ARGS" [PLUGIN]
#   env: ACCEL (kvm | tcg-icount | tcg-mt), SMP, GUEST_MEM_MIB,
#   ICOUNT_SHIFT, CELL_TIMEOUT (wall s), ICOUNT_QEMU (bench/icount-qemu.sh):
#   the orchestrator's (bench/plan/knobs.py)
#   PLUGIN: QEMU's -plugin argument of the mmlat plugin (plugin/README.md)
#   without out=, which is OUT_DIR/plugin: the plugin's dumps go there.
# Writes OUT_DIR/console.log, OUT_DIR/guest/ (what the guest shipped,
# guest/ship.c) and OUT_DIR/boot.json
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
# The results window (guest/ship.c): its size, the most a boot can ship
# (a file QEMU maps, sparse: only what the guest writes takes room), and
# where its data starts.
SHIP_WINDOW_MIB=256 SHIP_DATA_OFFSET=4096
# host_fault WHAT: the host, not the guest, failed this boot.
host_fault() { printf 'mmlat: error: %s\n' "$*" >&2; exit 2; }
[ -f "$kdir/bzImage" ] || die "no kernel at $kdir/bzImage"

case $ACCEL in
kvm) accel_args=(-accel kvm) ;;
tcg-icount) accel_args=(-accel tcg -icount "shift=$ICOUNT_SHIFT,sleep=off") ;;
tcg-mt) accel_args=(-accel "tcg,thread=multi") ;;
*) die "unknown ACCEL '$ACCEL' (kvm, tcg-icount, tcg-mt)" ;;
esac
# Every icount boot runs the icount QEMU (bench/icount-qemu.sh), refused
# with the reason rather than booted on another emulator; kvm and tcg-mt
# the system's.
qemu_bin=(qemu-system-x86_64)
smp_append=
if [ "$ACCEL" = tcg-icount ]; then
	# shellcheck source=icount-qemu.sh
	. "$MMLAT_ROOT/bench/icount-qemu.sh"
	icount_qemu "$SMP" || die "SMP=$SMP with ACCEL=tcg-icount: $ICOUNT_QEMU_WHY"
	qemu_bin=("${ICOUNT_QEMU_CMD[@]}")
fi
if [ "$ACCEL" = tcg-icount ] && [ "$SMP" != 1 ]; then
	# Every vCPU's TSC is the one virtual clock under icount, but 6.1
	# trusts a TSC on more than one non-Intel CPU only with constant_tsc,
	# which TCG does not offer: without this it falls back to the HPET
	# and local_clock() to the tick-bounded unstable sched_clock.
	smp_append=" tsc=reliable"
fi
# The plugin speaks QEMU 10.0's plugin API: it runs in the icount QEMU,
# whose qemu-plugin.h it was built with (plugin/build.sh), one vCPU.
if [ -n "$plugin" ] && { [ "$ACCEL" != tcg-icount ] || [ "$SMP" != 1 ]; }; then
	die "the plugin runs under ACCEL=tcg-icount with one vCPU, not $ACCEL with $SMP"
fi
qemu_version=$("${qemu_bin[0]}" --version | head -n 1) || die "${qemu_bin[0]} does not run"

mkdir -p "$out" || host_fault "cannot create $out"
# Under icount a boot is a function of its kernel, initramfs, job and
# QEMU only if nothing reaches the guest at a host-timed point:
# - The guest ships its results as a tar into the memory of an ivshmem
#   device, backed by this file (guest/ship.c): plain memory, no I/O. A
#   disk would not do: the kernel reads its partition table at boot, and
#   the read completes whenever the host's I/O thread is done (two boots
#   of one job parted there, 63 ms apart from then on).
# - The RTC starts at a fixed date and runs on the virtual clock. On the
#   host's clock its date seeds the guest's RNG (the drivers' mmap layout
#   differed) and its update cycle, which the kernel waits out when it
#   reads the RTC at boot, falls at a host-timed point.
window=$out/results.window
rm -f "$window"
# QEMU's option lists split at commas and read ",," as one: a cell named by
# a workload's parameters (imap:n=16,s=1) has commas in its path.
qemu=("${qemu_bin[@]}" "${accel_args[@]}" -smp "$SMP" -m "$GUEST_MEM_MIB" -nodefaults
	-display none -no-reboot -serial "file:$out/console.log"
	-rtc "base=2000-01-01T00:00:00,clock=vm"
	-object "memory-backend-file,id=results,mem-path=${window//,/,,},size=${SHIP_WINDOW_MIB}M,share=on"
	-device "ivshmem-plain,memdev=results"
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

# Whatever the guest shipped is kept, also from a failed run: the window
# holds a header (magic, length) and the tar from SHIP_DATA_OFFSET, the
# magic written last (guest/ship.c).
rm -rf "$out/guest"
mkdir -p "$out/guest"
if [ "$(head -c 8 "$window" 2>/dev/null)" != mmlatres ]; then
	[ -n "$cause" ] || cause="the guest shipped no results"
elif ! length=$(od -An -t u8 -j 8 -N 8 "$window" | tr -d ' ') ||
     ! dd if="$window" iflag=skip_bytes,count_bytes skip="$SHIP_DATA_OFFSET" count="$length" \
		status=none 2>"$out/tar.log" | tar -xf - -C "$out/guest" 2>>"$out/tar.log"; then
	! grep -q 'No space left on device' "$out/tar.log" ||
		host_fault "no space left on device to unpack the guest's results into $out"
	[ -n "$cause" ] || cause="results unreadable: $(head -n 1 "$out/tar.log")"
elif [ -z "$cause" ] && [ "$(cat "$out/guest/status" 2>/dev/null)" != ok ]; then
	cause="guest status: $(cat "$out/guest/status" 2>/dev/null || echo missing)"
elif [ -z "$cause" ] && [ -f "$out/guest/dmesg.txt" ] && splat=$(first_splat "$out/guest/dmesg.txt"); then
	# loglevel=4 keeps warnings (lockdep, might_sleep) off the console.
	cause="kernel (dmesg): $splat"
fi
rm -f "$window" "$out/tar.log"
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
