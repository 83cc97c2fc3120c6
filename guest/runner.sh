#!/bin/sh
# mmlat guest runner: /init of the initramfs. Reads its job from the kernel
# command line (mmlat.KEY=VALUE), measures, ships the results to the host
# (see ship), and reboots (QEMU runs with -no-reboot, so that ends the VM).
#
# Job keys (JOB_KEYS of /etc/mmlat/knobs.conf, generated from the host's
# registries, bench/plan/): workload (a name of /etc/mmlat/workloads.conf,
# or probe), params (a driver's parameters, KEY=VALUE[,KEY=VALUE...], each
# passed as the option -KEY VALUE after the runner's own; the host checks
# them; absent for a plain workload), seed (the repeat index: see
# seed_offset), calib (the windows to inject, see calib_windows), results
# (host: the host's own channel, see ship; console: a checked block on the
# serial console, for hosts that keep only the console, LAVA's), and the
# knobs' keys (KNOB_KEYS: duration, size_mib, trace), whose defaults and
# allowed values knobs.conf gives; a value it does not allow fails the
# boot, naming the key, the value and what is allowed.
set -eu

export PATH=/bin:/sbin:/usr/bin:/usr/sbin
T=/sys/kernel/tracing
# the window module's files: control (arm, start, stop), windows, locks
W=/proc/mmlat_windows
OUT=/out
# how the results leave the guest (see ship)
SHIP=memory
CMDLINE=${MMLAT_CMDLINE:-/proc/cmdline}
KNOBS=${MMLAT_KNOBS:-/etc/mmlat/knobs.conf}
WORKLOADS=${MMLAT_WORKLOADS:-/etc/mmlat/workloads.conf}

say() { echo "mmlat-runner: $*" > /dev/console; }

# Any error from here on is reported on the console and still ends the VM,
# so the host sees a cause instead of a timeout.
fail() {
	say "FAIL: $*"
	[ -d "$OUT" ] && echo "failed: $*" > "$OUT/status" && ship
	reboot -f
}
trap 'fail "runner exited early (line $LINENO)"' EXIT

mount_all() {
	mount -t proc proc /proc
	mount -t sysfs sys /sys
	mount -t devtmpfs dev /dev
	mkdir -p /dev/shm /tmp
	mount -t tmpfs -o mode=1777 shm /dev/shm
	mount -t tmpfs tmp /tmp
	mount -t tracefs tracefs $T
	mount_cgroups
}

# cgroup v2 at /sys/fs/cgroup, with the memory controller handed down to
# the root's children, where the kernel has them: the reclaim driver makes
# its cgroup there. An empty hierarchy changes nothing for the others.
mount_cgroups() {
	[ -d /sys/fs/cgroup ] || return 0
	mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail "cannot mount cgroup2 at /sys/fs/cgroup"
	if grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
		echo +memory > /sys/fs/cgroup/cgroup.subtree_control ||
			fail "cannot enable the memory controller in /sys/fs/cgroup"
	fi
}

# Swap on zram, for reclaim to swap anonymous and tmpfs pages out to: 256
# MiB uncompressed, four times the largest working set bench/workloads.conf
# allows (64 MiB); zram takes memory only for the pages it holds,
# compressed.
setup_zram_swap() {
	[ -e /proc/swaps ] || fail "$workload needs swap: the kernel has none (CONFIG_SWAP)"
	[ -e /sys/block/zram0 ] || fail "$workload needs swap on zram: the kernel has no zram0 (CONFIG_ZRAM)"
	echo 256M > /sys/block/zram0/disksize ||
		fail "cannot size zram0 (its compressor, $(cat /sys/block/zram0/comp_algorithm), needs CONFIG_CRYPTO_LZO)"
	mkswap /dev/zram0 > /dev/null || fail "mkswap /dev/zram0 failed"
	swapon /dev/zram0 || fail "swapon /dev/zram0 failed"
}

# What a workload needs from the kernel beyond what every one gets (its
# row's NEEDS in workloads.conf), set up before anything is measured.
prepare_workload() {
	case ,$needs, in
	*,memcg-swap,*)
		grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null ||
			fail "$workload needs cgroup v2 with the memory controller (CONFIG_CGROUPS, CONFIG_MEMCG)"
		setup_zram_swap
		;;
	esac
}

# knob NAME: NAME's value in knobs.conf.
knob() {
	[ -r "$KNOBS" ] || fail "no $KNOBS in the image"
	sed -n "s/^$1=//p" "$KNOBS"
}

# job_one_of KEY VALUE LIST / job_int KEY VALUE "MIN MAX": the job value
# is allowed, or the boot fails naming it.
job_one_of() {
	case " $3 " in *" $2 "*) return 0 ;; esac
	fail "job key $1='$2' is not allowed: one of $3"
}
job_int() {
	case $2 in
	''|*[!0-9]*|0?*) fail "job key $1='$2' is not allowed: an integer in ${3% *}..${3#* }" ;;
	esac
	if [ "$2" -lt "${3% *}" ] || [ "$2" -gt "${3#* }" ]; then
		fail "job key $1='$2' is not allowed: an integer in ${3% *}..${3#* }"
	fi
}

read_job() {
	workload=idle params='' seed=1 calib='' results=host
	duration=$(knob DURATION_DEFAULT) size_mib=$(knob SIZE_MIB_DEFAULT) trace=$(knob TRACE_DEFAULT)
	# shellcheck disable=SC2013 # the command line is words
	for arg in $(cat "$CMDLINE"); do
		case $arg in
		mmlat.*=*)
			key=${arg#mmlat.}
			key=${key%%=*}
			case " $(knob JOB_KEYS) " in
			*" $key "*) eval "$key=\${arg#*=}" ;;
			*) fail "unknown job key '$key' on the kernel command line" ;;
			esac
			;;
		esac
	done
	# probe: the accelerator probe's boot (bench/accel.sh)
	job_one_of workload "$workload" "$(knob WORKLOAD_NAMES) probe"
	for key in $(knob KNOB_KEYS); do
		name=$(upper "$key")
		eval "value=\$$key"
		# shellcheck disable=SC2154 # assigned by the eval
		if [ -n "$(knob "${name}_VALUES")" ]; then
			job_one_of "$key" "$value" "$(knob "${name}_VALUES")"
		else
			job_int "$key" "$value" "$(knob "${name}_RANGE")"
		fi
	done
	job_int seed "$seed" "0 999999999"
	job_one_of results "$results" "host console"
	[ "$results" = host ] || SHIP=$results
	# the workload's row: NAME KIND NEEDS [STRESS-NG ARGUMENTS]
	kind=probe needs=- recipe=
	[ "$workload" = probe ] || read -r _ kind needs recipe <<-ROW
	$(grep "^$workload " "$WORKLOADS")
	ROW
	ncpu=$(grep -c ^processor /proc/cpuinfo)
}

upper() { echo "$1" | tr '[:lower:]' '[:upper:]'; }

# ship: the results (OUT as a tar) to the host, by the transport SHIP
# names, one branch each:
# - memory: into the window of QEMU's ivshmem device (guest/ship.c),
#   which bench/qemu.sh reads after the VM has ended. Memory, not I/O:
#   nothing of it completes at a host-timed point of guest time, so
#   icount boots stay byte-identical.
# - console: as a checked block on the console (guest/console-results.sh),
#   for hosts that keep only the serial log (LAVA's); the job's
#   results=console.
ship() {
	case $SHIP in
	memory)
		if ! tar -cf /tmp/results.tar -C "$OUT" . || ! mmlat-ship < /tmp/results.tar > /dev/null; then
			say "FAIL: could not ship the results to memory"
		fi ;;
	console) mmlat-console-results "$OUT" || say "FAIL: could not print the results on the console" ;;
	esac
}

# Windows: every preempt-off and irq-off section as a synthetic event, with
# its length and the offsets (from _stext) of the code that disabled
# preemption or irqs and of its caller; a hist trigger counts them by all
# three. The host resolves the offsets against the variant's System.map.
setup_window_hist() {
	kind=$1 dis=$2 ena=$3
	echo "mmlat_${kind} u64 lat; s32 caller; s32 parent" >> $T/synthetic_events
	echo "hist:keys=common_cpu:ts0=common_timestamp.usecs:c0=caller_offs:p0=parent_offs" \
		> "$T/events/preemptirq/$dis/trigger"
	echo "hist:keys=common_cpu:lat=common_timestamp.usecs-\$ts0:c=\$c0:p=\$p0:onmatch(preemptirq.$dis).trace(mmlat_${kind},\$lat,\$c,\$p)" \
		> "$T/events/preemptirq/$ena/trigger"
	echo "hist:keys=lat,caller,parent:sort=lat:size=32768" \
		> "$T/events/synthetic/mmlat_${kind}/trigger"
}

# Windows (trace=windows): the mmlat_windows module aggregates every
# preempt-off and irq-off window by caller and parent and PTE-lock hold
# times per lock site in the guest (guest/modules/mmlat_windows), and keeps
# the longest window's stack itself: no max tracer runs beside it, since
# the tracer's own start and stop would sit inside every window it times.
#
# Loading and arming (registering the probes, which patches kernel text)
# happen before cyclictest starts, so that neither lands in its
# measurement; start and stop only switch recording on and off.
# shellcheck disable=SC2086
arm_windows() {
	[ "$trace" = windows ] || return 0
	insmod /lib/mmlat/mmlat_windows.ko ${windows_args:-} || fail "cannot load the windows module"
	echo arm > $W/control || fail "cannot arm the windows module"
}

start_windows() {
	echo start > $W/control || fail "cannot start the windows module"
}

# Stops recording, so the data covers exactly the measured time.
stop_windows() {
	[ "$trace" = windows ] || return 0
	echo stop > $W/control || fail "cannot stop the windows module"
}

setup_tracing() {
	echo 0 > $T/tracing_on
	[ "$trace" = none ] && return 0
	if [ "$trace" = full ]; then
		setup_window_hist preemptoff preempt_disable preempt_enable
		setup_window_hist irqsoff irq_disable irq_enable
	fi
	if [ "$trace" = windows ]; then
		start_windows
		return 0
	fi
	# The max-latency tracer keeps the longest preempt-off window and its
	# stack. Function tracing inside it would inflate every window.
	echo 0 > $T/options/function-trace
	echo preemptoff > $T/current_tracer
	echo 0 > $T/tracing_max_latency
	echo 1 > $T/tracing_on
}

collect_tracing() {
	echo 0 > $T/tracing_on
	[ "$trace" = none ] && return 0
	mkdir -p $OUT/windows
	if [ "$trace" = windows ]; then
		cat $W/windows > $OUT/windows/windows.txt
		[ ! -e $W/locks ] || cat $W/locks > $OUT/windows/locks.txt
		return 0
	fi
	mkdir -p $OUT/tracer
	cat $T/trace > $OUT/tracer/preemptoff.trace
	cat $T/tracing_max_latency > $OUT/tracer/preemptoff.max
	if [ "$trace" = full ]; then
		cat $T/events/synthetic/mmlat_preemptoff/hist > $OUT/windows/preemptoff.hist
		cat $T/events/synthetic/mmlat_irqsoff/hist > $OUT/windows/irqsoff.hist
	fi
	echo nop > $T/current_tracer
}

# A stress-ng recipe's arguments, NCPU the guest's CPUs: standard mm load
# to set beside our own drivers.
stress_ng_args() {
	for word in $recipe; do
		if [ "$word" = NCPU ]; then printf '%s ' "$ncpu"; else printf '%s ' "$word"; fi
	done
}

# mmlat.params "n=256,x=2" as our driver's options "-n 256 -x 2", in
# param_opts.
param_options() {
	param_opts=
	for kv in $(echo "$params" | tr ',' ' '); do
		case ${kv%%=*}:${kv#*=} in
		[a-zA-Z]:*[!0-9]*|[a-zA-Z]:) fail "bad workload parameter '$kv': the value is not a number" ;;
		[a-zA-Z]:*) param_opts="$param_opts -${kv%%=*} ${kv#*=}" ;;
		*) fail "bad workload parameter '$kv': KEY=VALUE, KEY an option letter" ;;
		esac
	done
}

# The seed varies per boot what a code change varies anyway (icount boots
# of one kernel are otherwise nearly identical): here, when cyclictest and
# the workload start after boot, by 0 to OFFSET_MAX_MS - 1 ms (against the
# kernel's periodic work: vmstat, RCU, writeback timers); our drivers get
# it as -S and vary their start against cyclictest's period and their
# memory layout (workloads/common.h). Seed 0 varies nothing.
OFFSET_MAX_MS=1000
seed_offset() {
	offset_ms=0
	[ "$seed" = 0 ] || offset_ms=$(( (seed * 2654435761) % OFFSET_MAX_MS ))
	echo "start_offset_ms=$offset_ms" >> $OUT/job.env
	[ "$offset_ms" = 0 ] || sleep "$(printf '%d.%03d' $((offset_ms / 1000)) $((offset_ms % 1000)))"
}

start_workload() {
	workload_pid=
	case $kind in
	driver) param_options ;;
	*) [ -z "$params" ] || fail "workload '$workload' takes no parameters (params=$params)" ;;
	esac
	case $kind in
	idle) ;;
	driver)
		# shellcheck disable=SC2086
		/bin/mmlat-$workload -d "$duration" -s "$size_mib" -S "$seed" $param_opts \
			> $OUT/workload.txt 2> $OUT/workload.err &
		workload_pid=$!
		;;
	stress-ng)
		# shellcheck disable=SC2046
		stress-ng $(stress_ng_args) -t "${duration}s" \
			--seed "$seed" --metrics-brief --yaml $OUT/stress-ng.yaml \
			> $OUT/workload.err 2>&1 &
		workload_pid=$!
		;;
	*) fail "workload '$workload' has no row in $WORKLOADS" ;;
	esac
}

# Calibration (mmlat.calib): windows of known length from the guest module
# guest/modules/mmlat_calib, so the host can check that the window module
# (or the max tracer), attribution and cyclictest see them. The module is
# loaded before tracing starts: the window module finds the calibration's
# PTE-lock user among its sites (sites=) when it loads.
load_calibration() {
	[ -n "$calib" ] || return 0
	insmod /lib/mmlat/mmlat_calib.ko || fail "cannot load the calibration module"
	# Module addresses are not in System.map: ship the symbols.
	cat /proc/kallsyms > $OUT/kallsyms.txt
	windows_args="sites=mmlat_calib_ptl_hold"
}

# The windows to inject, one kind:us a word, from mmlat.calib: the host
# (bench/plan/calib.py) expands CALIB into one letter per kind and the
# length, comma-separated (p200,i200,...), and knobs.conf's CALIB_KINDS
# names each letter's kind.
calib_windows() {
	for w in $(echo "$calib" | tr ',' ' '); do
		letter=${w%"${w#?}"} kind=
		for pair in $(knob CALIB_KINDS); do
			[ "${pair%%:*}" != "$letter" ] || kind=${pair#*:}
		done
		[ -n "$kind" ] || fail "calibration window '$w': no kind '$letter' in CALIB_KINDS"
		echo "$kind:${w#?}"
	done
}

# The window module's tables after injected window $1 (0: before the
# first). Each injected window is the only one its calibration function
# opens, so the host reads it as the change of that function's key between
# two snapshots, whatever else the snapshots (and the cat) add.
snapshot_windows() {
	cat $W/windows > "$OUT/calib/$1.windows"
	cat $W/locks > "$OUT/calib/$1.locks"
}

inject_calibration() {
	[ -n "$calib" ] || return 0
	mkdir -p $OUT/calib
	[ "$trace" != windows ] || snapshot_windows 0
	n=0
	for w in $(calib_windows); do
		n=$((n + 1))
		kind=${w%%:*}
		# The max tracers keep one global maximum: each window gets the
		# matching tracer, reset just before it, so the reading and the
		# trace are the injected window's unless the guest opened a
		# longer one meanwhile (30 us windows lose to hrtimer windows).
		if [ "$trace" = max ] || [ "$trace" = full ]; then
			case $kind in
			irq) echo irqsoff > $T/current_tracer ;;
			*) echo preemptoff > $T/current_tracer ;;
			esac
			echo 0 > $T/tracing_max_latency
		fi
		# With a max tracer, shell builtins only from here until tracing
		# stops: a forked command's exit unmaps its mm, a window that can
		# outlast a short injected one and take over the tracer.
		echo "$kind ${w#*:}" > /proc/mmlat_calib || fail "calibration window '$w' rejected"
		read -r result < /proc/mmlat_calib
		case $trace in
		max|full)
			read -r tracer_us < $T/tracing_max_latency
			echo 0 > $T/tracing_on
			echo "$result tracer_us=$tracer_us" >> $OUT/calib.txt
			cat $T/trace > $OUT/calib/$n.trace
			echo 1 > $T/tracing_on
			;;
		windows)
			echo "$result" >> $OUT/calib.txt
			snapshot_windows $n
			;;
		*) echo "$result" >> $OUT/calib.txt ;;
		esac
	done
}

# cyclictest has locked its memory and started its measuring threads.
wait_measuring() {
	tries=0
	until [ "$(awk '/^Threads:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0)" -gt "$ncpu" ] &&
	      [ "$(awk '/^VmLck:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0)" -gt 0 ]; do
		kill -0 "$1" 2>/dev/null || fail "cyclictest exited at start: $(tail -n 3 $OUT/cyclictest.log)"
		tries=$((tries + 1))
		[ $tries -lt 600 ] || fail "cyclictest did not start measuring within 60 s"
		sleep 0.1
	done
}

main() {
	mount_all
	read_job
	say "start uptime=$(cut -d' ' -f1 /proc/uptime) workload=$workload duration=$duration"
	mkdir -p $OUT
	echo "0" > /proc/sys/kernel/printk_ratelimit 2>/dev/null || true
	[ "$workload" = probe ] && { echo ok > $OUT/status; ship; trap - EXIT; say "done"; reboot -f; }
	printf 'workload=%s\nduration=%s\ntrace=%s\ncalib=%s\nncpu=%s\nseed=%s\n' \
		"$workload" "$duration" "$trace" "$calib" "$ncpu" "$seed" > $OUT/job.env
	[ -z "$params" ] || echo "params=$params" >> $OUT/job.env
	prepare_workload
	load_calibration
	arm_windows
	uname -a > $OUT/uname.txt
	cat /proc/cmdline > $OUT/cmdline.txt
	seed_offset

	# cyclictest runs until told to stop, and tracing covers only the time
	# it measures: its own mlockall() at start and munlockall() at exit are
	# long PTE-lock walks that are not part of any workload.
	cyclictest -S -m -p95 -i500 -q -h 20000 \
		--histfile=$OUT/cyclictest.hist --json=$OUT/cyclictest.json \
		> $OUT/cyclictest.log 2>&1 &
	cyclictest_pid=$!
	wait_measuring $cyclictest_pid
	setup_tracing
	start_workload
	(sleep 1; inject_calibration) &
	calib_pid=$!
	sleep "$duration"
	# Injected windows count only while tracing and cyclictest still
	# measure: a slow injection (its snapshots, under TCG) must stretch the
	# measurement, not lose windows.
	wait $calib_pid || fail "calibration failed"
	echo 0 > $T/tracing_on
	stop_windows
	kill -INT $cyclictest_pid
	wait $cyclictest_pid || fail "cyclictest failed: $(tail -n 3 $OUT/cyclictest.log)"
	if [ -n "$workload_pid" ]; then
		kill -TERM "$workload_pid" 2>/dev/null || true
		wait "$workload_pid" || [ "$workload" = idle ] ||
			fail "workload $workload failed: $(tail -n 3 $OUT/workload.err)"
	fi
	collect_tracing
	dmesg > $OUT/dmesg.txt
	echo ok > $OUT/status
	ship
	trap - EXIT
	say "done uptime=$(cut -d' ' -f1 /proc/uptime)"
	reboot -f
}

# MMLAT_RUNNER_LIB=1: define the functions only (the host's unit tests).
[ "${MMLAT_RUNNER_LIB:-0}" = 1 ] || main
