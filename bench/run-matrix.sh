#!/bin/bash
# Run the benchmark matrix: variants × workloads × repeats into
# results/<run-id>/. Each cell gets a clean boot (cyclictest and the
# workload alone) and, unless TRACE=none, a traced boot (the same job under
# TRACE's instrumentation): tracing changes what it measures, so latency
# and throughput come from the clean boot, windows from the traced one.
# Complete boots are never rewritten: a rerun with the same RUN_ID resumes,
# a new RUN_ID starts afresh.
#
# Defaults and allowed values of every knob: bench/knobs.conf; all are
# checked before stage 1, and a bad one stops the run naming the knob, the
# value and what is allowed.
#
# env: VARIANTS (specs), WORKLOADS (entries NAME or NAME:KEY=VALUE,...,
# parameters as bench/workloads.conf allows; the entry names the cell;
# unset: WORKLOADS_DEFAULT, empty: none), SWEEP (sweeps
# NAME:KEY=V1,V2,...[,KEY=VALUE...], whose entries join WORKLOADS:
# bench/workloads.sh), DURATION (guest s), REPEAT, ACCEL
# (auto|kvm|tcg-icount|tcg-mt), SMP, RUN_ID, TRACE (full|max|windows|none:
# the traced boots' instrumentation; none: clean boots only), CALIB
# (windows injected in the traced boots of the CALIB_WORKLOADS, default
# idle; the word "calib" there is one traced calibration boot of the idle
# job per variant, cells/<variant>/calib/traced/r1, outside the workloads
# the report compares: make bench), JOBS (boots at once, auto or a number),
# FLAVOR (bench|check), STRICT (1: exit non-zero if any boot failed),
# STEPS (all: the variants of VARIANTS; each: also every prefix of the
# patched side's own patches, or every commit of BASELINE..PATCHED,
# bench/steps.sh), TREE (the packaged source of variants that name none),
# KSRC (a git tree whose refs are variants), CROSS (yes: variants of other
# kernel versions or configs may be compared)
#
# Faults: a signal (SIGINT, SIGTERM, SIGHUP) stops the run and its guests at
# once; SIGKILL stops them through their parent-death signal. A full disk
# under RESULTS_DIR stops the run before the boot it cannot keep. Either
# way only complete boots stay, the cause is named, and a rerun with the
# same RUN_ID does the rest; a second run on a RUN_ID in progress is
# refused.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$MMLAT_ROOT/bench/knobs.sh"
. "$MMLAT_ROOT/bench/variants.sh"
. "$MMLAT_ROOT/bench/steps.sh"
. "$MMLAT_ROOT/bench/workloads.sh"
. "$MMLAT_ROOT/bench/icount-qemu.sh"

# Defaults: bench/knobs.conf. Set but empty WORKLOADS is no workload:
# WORKLOADS= SWEEP=... runs the sweep alone.
VARIANTS=${VARIANTS:-${BASELINE:-$BASELINE_DEFAULT} ${PATCHED:-$PATCHED_DEFAULT}}
WORKLOADS=${WORKLOADS-$WORKLOADS_DEFAULT}
SWEEP=${SWEEP:-}
DURATION=${DURATION:-$DURATION_DEFAULT}
REPEAT=${REPEAT:-$REPEAT_DEFAULT}
ACCEL=${ACCEL:-$ACCEL_DEFAULT}
SMP=${SMP:-}
JOBS=${JOBS:-$JOBS_DEFAULT}
TRACE=${TRACE:-$TRACE_DEFAULT}
CALIB=${CALIB:-$CALIB_DEFAULT}
CALIB_WORKLOADS=${CALIB_WORKLOADS:-$CALIB_WORKLOADS_DEFAULT}
STRICT=${STRICT:-0}
STEPS=${STEPS:-$STEPS_DEFAULT}
TREE=${TREE:-$TREE_DEFAULT}
KSRC=${KSRC:-$KSRC_DEFAULT}
CROSS=${CROSS:-$CROSS_DEFAULT}
RUN_ID=${RUN_ID:-$(date +%Y%m%d-%H%M%S)}
RESULTS_DIR=$(realpath -m "${RESULTS_DIR:-$MMLAT_ROOT/results}")
run=$RESULTS_DIR/$RUN_ID
t0=$(now)

# Every knob is checked here, before anything is built or written: a bad
# value stops the run in a second, naming the knob, the value and what it
# allows (as cyclictest checks all its options before it starts).
check_one_of TRACE "$TRACE" "$TRACE_VALUES"
check_one_of ACCEL "$ACCEL" "$ACCEL_VALUES"
check_int DURATION "$DURATION" "$DURATION_RANGE"
check_int REPEAT "$REPEAT" "$REPEAT_RANGE"
[ "$JOBS" = auto ] || int_in "$JOBS" "$JOBS_RANGE" ||
	knob_die JOBS "$JOBS" "auto or an integer in ${JOBS_RANGE/ /..}"
[ -z "$SMP" ] || check_int SMP "$SMP" "$SMP_RANGE"
# Every icount boot runs one QEMU (bench/icount-qemu.sh): a QEMU named by
# ICOUNT_QEMU is checked here (SMP>1 needs 8.1 or later: before it a second
# vCPU never runs); the pinned one is provisioned after the packages, and
# checked again before the boots.
icount_qemu_or_die() {
	icount_qemu "${SMP:-1}" || die "SMP=${SMP:-1} with ACCEL=tcg-icount: $ICOUNT_QEMU_WHY"
}
[ "$ACCEL" != tcg-icount ] || [ -z "${ICOUNT_QEMU:-}" ] || icount_qemu_or_die
check_one_of STRICT "$STRICT" "0 1"
check_one_of STEPS "$STEPS" "$STEPS_VALUES"
check_one_of TREE "$TREE" "$TREE_VALUES"
check_one_of CROSS "$CROSS" "$CROSS_VALUES"
[ -z "$KSRC" ] || git -C "$KSRC" rev-parse --git-dir > /dev/null 2>&1 ||
	knob_die KSRC "$KSRC" "the path of a git tree (a clone of Linux)"
[[ $RUN_ID =~ ^[A-Za-z0-9_][A-Za-z0-9._:+-]*$ ]] ||
	knob_die RUN_ID "$RUN_ID" "letters, digits and . _ : + - (not first: . : + -)"
seen_variants=" " refs=
declare -A version_of=()
for spec in $VARIANTS; do
	resolve_variant "$spec"
	case $seen_variants in
	*" $VARIANT_NAME "*) knob_die VARIANTS "$VARIANTS" "each variant once: '$VARIANT_NAME' is given twice" ;;
	esac
	seen_variants+="$VARIANT_NAME "
	version_of[$VARIANT_NAME]=$VARIANT_VERSION
	[ -z "$VARIANT_REF" ] || refs+=" $VARIANT_REF"
done
# KSRC alone would silently bench the packaged tree's variants.
[ -z "$KSRC" ] || [ -n "$refs" ] ||
	die "KSRC=$KSRC is set, but no variant is one of its refs (VARIANTS='$VARIANTS'): give BASELINE=<ref> PATCHED=<ref>, or name=git:<ref> specs"
# Kernels of other versions build with other configs: a comparison across
# them is asked for, never stumbled into.
if [ "$(printf '%s\n' "${version_of[@]}" | sort -u | wc -l)" -gt 1 ] && [ "$CROSS" != yes ]; then
	mix=
	for n in $seen_variants; do mix+="${mix:+, }$n Linux ${version_of[$n]}"; done
	die "VARIANTS mixes kernel versions ($mix): their configs differ, so set CROSS=yes to compare across versions (the report then lists the config differences that matter)"
fi
# The variants built and booted, in order: with STEPS=each the baseline,
# then one a patch up to the patched variant.
specs=($VARIANTS)
if [ "$STEPS" = each ]; then
	[ ${#specs[@]} -eq 2 ] ||
		knob_die VARIANTS "$VARIANTS" "with STEPS=each exactly two variants, a baseline and a patched one whose series directories start with the baseline's"
	plan_steps "${specs[@]}"
	specs=("${specs[0]}" "${STEP_SPECS[@]}")
fi
# Boot kinds per cell, in the order they run: clean first, so that the two
# boots of a cell are adjacent in time.
boots=(clean)
[ "$TRACE" = none ] || boots+=(traced)
# Calibration is read through the tracer, which only traced boots have.
[ -z "$CALIB" ] || [ "$TRACE" != none ] ||
	die "CALIB needs traced boots: TRACE=none runs clean boots only"
case " $(echo $WORKLOADS) " in
*" calib "*) die "calib is the calibration boot (CALIB_WORKLOADS=calib), not a workload" ;;
esac
# Names and parameters (imap:n=256) against bench/knobs.conf and
# bench/workloads.conf.
for w in $WORKLOADS; do check_workload "$w"; done
# Each sweep's entries join WORKLOADS, checked the same way; an entry
# WORKLOADS has already is not run twice.
expand_sweeps "$SWEEP"
for w in "${SWEEP_ENTRIES[@]}"; do
	case " $(echo $WORKLOADS) " in *" $w "*) ;; *) WORKLOADS="$WORKLOADS $w" ;; esac
done
WORKLOADS=$(echo $WORKLOADS)
[ -n "$WORKLOADS" ] || die "nothing to run: WORKLOADS and SWEEP are both empty"
# CALIB_WORKLOADS: where CALIB goes (checked below); without CALIB its
# words must still be calib or workload names.
[ -n "$CALIB" ] || for w in $CALIB_WORKLOADS; do
	[ "$w" = calib ] || check_workload_name "CALIB_WORKLOADS entry '$w'" "$w"
done
# The calibration request, checked by the parser the analysis reads it with.
if [ -n "$CALIB" ]; then
	err=$(PYTHONPATH="$MMLAT_ROOT/analysis" "$PYTHON" -c \
		'import sys; from mmlat.calibrate import parse_request; parse_request(sys.argv[1])' \
		"$CALIB" 2>&1) || die "CALIB='$CALIB': $(printf '%s' "$err" | tail -n 1)"
	for w in $CALIB_WORKLOADS; do
		case " calib $(echo $WORKLOADS) " in
		*" $w "*) ;;
		*) die "CALIB_WORKLOADS names '$w', which is neither calib nor one of WORKLOADS ($(echo $WORKLOADS))" ;;
		esac
	done
fi
# The knobs as requested, for meta.json ("knobs"; ACCEL=auto and an empty
# SMP are resolved below, into "accel" and "smp").
knob_args=()
for k in VARIANTS STEPS TREE KSRC CROSS WORKLOADS SWEEP DURATION REPEAT ACCEL SMP JOBS TRACE CALIB CALIB_WORKLOADS FLAVOR STRICT RUN_ID; do
	knob_args+=("$k=$(echo ${!k})")
done

# Signals: stop whatever runs (a stage's child, the booting guests), keep
# only complete boots and say how to finish the run.
declare -A running=()   # pid of a booting guest's session -> its plan entry
guest_dir=
cleanup() { [ -z "$guest_dir" ] || rm -rf "$guest_dir"; }
trap cleanup EXIT
on_signal() {
	local sig=$1 code=$2 pid
	trap '' INT TERM HUP
	[ -z "$GUARDED_PID" ] || kill -TERM "$GUARDED_PID" 2>/dev/null || true
	for pid in "${!running[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
	wait || true
	# Every staging folder: also one whose boot was about to start or
	# had just ended (the run lock says no other run owns any of them).
	rm -rf "$run"/cells/*/*/*/.r*.tmp
	printf 'mmlat: error: run %s stopped by SIG%s%s; its complete boots are kept in %s: rerun with RUN_ID=%s to do the rest\n' \
		"$RUN_ID" "$sig" "${running[*]:+, ${#running[@]} boots in progress discarded}" "$run" "$RUN_ID" >&2
	exit "$code"
}
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'on_signal HUP 129' HUP

# One run per RUN_ID at a time: a second one would boot into the same
# staging folders. The lock is held as long as any process of the run
# lives; the file names the holder.
mkdir -p "$run"
exec {run_lock}>> "$run/.lock"
flock -n "$run_lock" ||
	die "run $RUN_ID is in progress ($(cat "$run/.lock")); wait for it, stop it, or give another RUN_ID"
echo "pid $$ on $(hostname), since $(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$run/.lock"
# One build stage at a time per build folder: runs share the config, the
# trees and the object folders (a run's guests boot from its own copies,
# stage 3, so a later build cannot swap a kernel under them).
mkdir -p "$BUILD_DIR"
exec {build_lock}>> "$BUILD_DIR/.build.lock"
flock -n "$build_lock" || {
	log "waiting for another run's build stage ($(cat "$BUILD_DIR/.build.lock"))"
	flock "$build_lock"
}
echo "run $RUN_ID, pid $$" > "$BUILD_DIR/.build.lock"

guarded bash "$MMLAT_ROOT/bench/deps.sh"
if { [ "$ACCEL" = tcg-icount ] || [ "$ACCEL" = auto ]; } && [ -z "${ICOUNT_QEMU:-}" ]; then
	guarded bash "$MMLAT_ROOT/bench/icount-qemu.sh" provision > /dev/null
	[ "$ACCEL" != tcg-icount ] || icount_qemu_or_die
fi
# One config per kernel source (a packaged tree, a git commit), made from
# that source, each checked against the fragments before any build.
log "stage 1/4: config ($FLAVOR)"
for i in "${!STEP_PARTIAL[@]}"; do
	[ -z "${STEP_PARTIAL[i]}" ] || write_step_series "${STEP_NAMES[i]}" ${STEP_PARTIAL[i]}
done
# Each variant's config folder and sha256, read once here for the whole run
# (resume check, meta.json, every cell.json).
names=()
declare -A config_of=() config_sha=() config_made=()
for spec in "${specs[@]}"; do
	resolve_variant "$spec"
	names+=("$VARIANT_NAME")
	if [ -z "${config_made[$VARIANT_CONFIG_DIR]:-}" ]; then
		guarded bash "$MMLAT_ROOT/bench/kconfig.sh" make "$VARIANT_CONFIG_DIR" "$spec"
		config_made[$VARIANT_CONFIG_DIR]=1
	fi
	config_of[$VARIANT_NAME]=$VARIANT_CONFIG_DIR
	config_sha[$VARIANT_NAME]=$(cat "$VARIANT_CONFIG_DIR/config.sha256")
done
if [ "$CROSS" != yes ] &&
   [ "$(printf '%s\n' "${config_sha[@]}" | sort -u | wc -l)" -gt 1 ]; then
	for n in "${names[@]}"; do
		printf '    %s: %s (%s)\n' "$n" "${config_sha[$n]:0:12}" "${config_of[$n]#$MMLAT_ROOT/}" >&2
	done
	die "the variants' sources give different configs (above); nothing was built: set CROSS=yes to compare them anyway (the report lists the differences)"
fi
log "stage 2/4: kernels ($VARIANTS${STEP_NAMES[*]:+; STEPS=each: ${STEP_NAMES[*]}})"
# Every tree first: a patch that does not apply stops the run before any
# kernel is built.
for spec in "${specs[@]}"; do
	guarded bash "$MMLAT_ROOT/bench/tree.sh" variant "$spec" > /dev/null
done
for i in "${!specs[@]}"; do
	guarded bash "$MMLAT_ROOT/bench/build.sh" "${specs[i]}" "${config_of[${names[i]}]}"
done

log "stage 3/4: guest images"
# Images and kernels are private to this run: another run, with other
# modules or kernels, must not swap them under booting cells.
guest_dir=$BUILD_DIR/guest/run-$RUN_ID.$$
mkdir -p "$guest_dir"
base=$guest_dir/base.cpio
guarded bash "$MMLAT_ROOT/guest/initramfs.sh" base "$base"
images=()
for n in "${names[@]}"; do
	mkdir -p "$guest_dir/kernel-$n"
	cp "$KERNELS_DIR/$n/bzImage" "$guest_dir/kernel-$n/"
	initrd=$guest_dir/initrd-$n.cpio
	if [ -n "$CALIB" ] || [ "$TRACE" = windows ]; then
		guarded bash "$MMLAT_ROOT/guest/initramfs.sh" module "$n" "$guest_dir/module-$n.cpio"
		cat "$base" "$guest_dir/module-$n.cpio" > "$initrd"
	else
		cp "$base" "$initrd"
	fi
	# what each variant's boots boot, for meta.json ("images")
	images+=("$n:=$(record write bzimage_sha256="$(sha256sum "$guest_dir/kernel-$n/bzImage" | cut -d' ' -f1)" \
		initrd_sha256="$(sha256sum "$initrd" | cut -d' ' -f1)")")
done

if [ "$ACCEL" = auto ]; then
	ACCEL=$(bash "$MMLAT_ROOT/bench/accel.sh" "$guest_dir/kernel-${names[0]}" "$base")
fi
exec {build_lock}>&-
# icount runs every vCPU on one host thread, each a share of the virtual
# time: it defaults to one vCPU, the other modes to 2. Every icount boot
# runs the pinned QEMU (bench/icount-qemu.sh), kvm and tcg-mt the system's.
if [ "$ACCEL" = tcg-icount ]; then SMP=${SMP:-1}; else SMP=${SMP:-2}; fi
qemu_used=qemu-system-x86_64
if [ "$ACCEL" = tcg-icount ]; then
	icount_qemu_or_die
	qemu_used=${ICOUNT_QEMU_CMD[0]}
fi
export ACCEL SMP
# Boots at once. Under icount a guest's clock is its own instruction count,
# so guests on different host cores do not disturb each other's numbers;
# each is one host thread with GUEST_MEM_MIB and QEMU's own ~256 MiB.
# Under kvm and tcg-mt guest time is host time: auto runs one at a time.
if [ "$JOBS" = auto ]; then
	if [ "$ACCEL" = tcg-icount ]; then
		mem_jobs=$(( $(awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo) / (GUEST_MEM_MIB + 256) ))
		JOBS=$(nproc)
		[ "$mem_jobs" -ge "$JOBS" ] || JOBS=$mem_jobs
		[ "$JOBS" -ge 1 ] || JOBS=1
	else
		JOBS=1
	fi
elif [ "$JOBS" -gt 1 ] && [ "$ACCEL" != tcg-icount ]; then
	log "warning: JOBS=$JOBS under $ACCEL: guests keep the host's time, and $JOBS of them share its cores"
fi

# kernel_version_of NAME: its kernel's version (6.1.158); a kernel built
# before build.json recorded it has it in its release string.
kernel_version_of() {
	local release
	record get "$KERNELS_DIR/$1/build.json" kernel_version 2>/dev/null && return
	release=$(record get "$KERNELS_DIR/$1/build.json" kernel_release 2>/dev/null) || release=unknown
	printf '%s\n' "${release%%-mmlat-*}"
}

mkdir -p "$run/cells" "$run/kernels"
if [ -f "$run/meta.json" ]; then
	# recorded KEY: KEY's value in meta.json; fails if it has none
	recorded() { record get "$run/meta.json" "$1" 2>/dev/null; }
	recorded boots > /dev/null ||
		die "run $RUN_ID has one boot per cell (cells/<variant>/<workload>/r<N>, the layout before clean and traced boots); start a new RUN_ID"
	[ "$(recorded accel)" = "$ACCEL" ] ||
		die "run $RUN_ID was measured with another accelerator; start a new RUN_ID rather than mixing modes"
	[ "$(recorded smp)" = "$SMP" ] && [ "$(recorded qemu)" = "$("$qemu_used" --version | head -n 1)" ] ||
		die "run $RUN_ID was measured with another SMP or QEMU; start a new RUN_ID rather than mixing them"
	for n in "${names[@]}"; do
		was=$(recorded "configs/$n" || recorded config_sha256)
		[ "$was" = "${config_sha[$n]}" ] ||
			die "run $RUN_ID was measured with another kernel config for '$n'; start a new RUN_ID rather than mixing configs"
	done
	[ "$(recorded trace)" = "$TRACE" ] ||
		die "run $RUN_ID was measured with another TRACE; start a new RUN_ID rather than mixing instrumentations"
	[ "$(recorded calib)" = "$CALIB" ] && [ "$(recorded calib_workloads)" = "$(echo $CALIB_WORKLOADS)" ] ||
		die "run $RUN_ID was calibrated with another CALIB or CALIB_WORKLOADS; start a new RUN_ID"
	# The report reads the sweeps from meta.json: one run, one SWEEP (a run
	# from before sweeps has none).
	recorded_sweep=$(recorded sweep || true)
	[ "$recorded_sweep" = "$(echo $SWEEP)" ] ||
		die "run $RUN_ID was measured with SWEEP='$recorded_sweep'; start a new RUN_ID rather than changing its sweeps"
	# and one STEPS: the report reads the steps from meta.json (a run from
	# before STEPS has none)
	recorded_steps=each
	[ "$(recorded steps || echo '[]')" != '[]' ] || recorded_steps=all
	[ "$recorded_steps" = "$STEPS" ] ||
		die "run $RUN_ID was measured with STEPS=$recorded_steps; start a new RUN_ID rather than changing its steps"
	log "resuming run $RUN_ID"
else
	for n in "${names[@]}"; do
		mkdir -p "$run/kernels/$n"
		cp "$KERNELS_DIR/$n/build.json" "$KERNELS_DIR/$n/System.map" "$KERNELS_DIR/$n/config" "$run/kernels/$n/"
		[ ! -f "$KERNELS_DIR/$n/fragments.config" ] || cp "$KERNELS_DIR/$n/fragments.config" "$run/kernels/$n/"
	done
	list_args=(variants:=[] boots:=[] sweeps:=[] steps:=[])
	configs=()
	for n in "${names[@]}"; do
		list_args+=("variants[]=$n")
		configs+=("$n=${config_sha[$n]}")
	done
	# each variant's config sha256: one run may hold several (CROSS=yes)
	list_args+=(configs:="$(record write "${configs[@]}")")
	for b in "${boots[@]}"; do list_args+=("boots[]=$b"); done
	# Each sweep: its workload, the swept key and its values, the fixed
	# parameters and the WORKLOADS entries (the cells) it expanded into,
	# for the report's sweep tables. Values are integers: check_workload
	# has checked them.
	for i in "${!SWEEP_SPECS[@]}"; do
		fields=(spec="${SWEEP_SPECS[i]}" name="${SWEEP_NAMES[i]}" key="${SWEEP_KEYS[i]}" values:=[])
		for v in ${SWEEP_VALUES[i]}; do fields+=("values[]:=$v"); done
		fixed=()
		IFS=, read -ra kvs <<< "${SWEEP_FIXED[i]}"
		for kv in "${kvs[@]}"; do fixed+=("${kv%%=*}:=${kv#*=}"); done
		fields+=(fixed:="$(record write "${fixed[@]}")")
		for w in ${SWEEP_WORKLOADS[i]}; do fields+=("workloads[]=$w"); done
		list_args+=("sweeps[]:=$(record write "${fields[@]}")")
	done
	# Each step (STEPS=each): its variant, the one it is compared with,
	# the patch it adds, that patch's series directory and its place
	# among the patched side's own patches, for the report's per-patch
	# table.
	for i in "${!STEP_NAMES[@]}"; do
		list_args+=("steps[]:=$(record write variant="${STEP_NAMES[i]}" \
			previous="${STEP_PREVIOUS[i]}" patch="${STEP_PATCHES[i]}" \
			series="${STEP_SERIES[i]}" index:=$((i + 1)))")
	done
	# knobs: every knob as requested; accel and smp: what ran
	record write run_id="$RUN_ID" workloads="$WORKLOADS" sweep="$(echo $SWEEP)" \
		knobs:="$(record write "${knob_args[@]}")" "${list_args[@]}" \
		duration_s:="$DURATION" repeat:="$REPEAT" accel="$ACCEL" smp:="$SMP" \
		icount_shift:="$ICOUNT_SHIFT" jobs:="$JOBS" trace="$TRACE" \
		calib="$CALIB" calib_workloads="$(echo $CALIB_WORKLOADS)" flavor="$FLAVOR" \
		config_sha256="${config_sha[${names[0]}]}" cross="$CROSS" \
		kernel_version="$(for n in "${names[@]}"; do kernel_version_of "$n"; done | sort -uV | paste -sd' ')" \
		initramfs_sha256="$(sha256sum "$base" | cut -d' ' -f1)" images:="$(record write "${images[@]}")" \
		qemu="$("$qemu_used" --version | head -n 1)" qemu_binary="$qemu_used" \
		versions:="$(bash "$MMLAT_ROOT/bench/versions.sh")" \
		tools="$(cyclictest --help 2>&1 | head -n 1); stress-ng $(stress-ng --version | awk '{print $3}')" \
		host_cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" \
		host_cpus:="$(nproc)" host_load_at_start="$(cut -d' ' -f1-3 /proc/loadavg)" \
		started="$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$run/meta.json.tmp" &&
		mv "$run/meta.json.tmp" "$run/meta.json" ||
		die "cannot write $run/meta.json ($(free_mib "$run") MiB free there)"
fi

log "stage 4/4: boots ($ACCEL, $SMP vCPU, ${DURATION}s each, ${boots[*]} per cell, $JOBS at once) into ${run#$MMLAT_ROOT/}"
# Every boot of the run, "variant workload boot repeat", in the order they
# start. The calibration boots go first, so that a broken measurement chain
# shows in the first minutes rather than after the matrix.
plan=()
if [ -n "$CALIB" ]; then
	case " $CALIB_WORKLOADS " in
	*" calib "*) for n in "${names[@]}"; do plan+=("$n calib traced 1"); done ;;
	esac
fi
for r in $(seq 1 "$REPEAT"); do
	for w in $WORKLOADS; do
		for n in "${names[@]}"; do
			for boot in "${boots[@]}"; do
				plan+=("$n $w $boot $r")
			done
		done
	done
done
total=${#plan[@]}
todo=()
for entry in "${plan[@]}"; do
	read -r n w boot r <<< "$entry"
	[ -d "$run/cells/$n/$w/$boot/r$r" ] || todo+=("$entry")
done
[ ${#todo[@]} -eq "$total" ] ||
	log "$((total - ${#todo[@]})) of $total boots already complete, skipped"

# A boot keeps a few MiB under RESULTS_DIR (console, the guest's files; a
# traced boot's window dump is the largest part) plus, while it runs, the
# scratch disk the guest writes them to: none starts with less free.
BOOT_FREE_MIB=64
stage_t0=$(now)
started=0 finished=0 failed=0 host_fault=

# start_boot ENTRY: boot one plan entry in a session of its own (its guest
# sees no terminal signal; on_signal stops the whole session) that gets
# SIGTERM if this script dies.
start_boot() {
	local n w boot r trace=none calib_arg= job staging left=?
	read -r n w boot r <<< "$1"
	staging=$run/cells/$n/$w/$boot/.r$r.tmp
	rm -rf "$staging"
	mkdir -p "$staging"
	# The calibration boot's job is idle: it measures what the
	# instrumentation adds to a window, not what a workload does.
	if [ "$w" = calib ]; then job=mmlat.workload=idle; else job=$(workload_job "$w"); fi
	if [ "$boot" = traced ]; then
		trace=$TRACE
		# Each injected window is read from the module's record of its
		# own caller, so a workload may run beside it (make calibrate:
		# idle and loaded).
		case " $CALIB_WORKLOADS " in
		*" $w "*) [ -z "$CALIB" ] || calib_arg="mmlat.calib=$CALIB" ;;
		esac
	fi
	started=$((started + 1))
	# time left: the boots not yet finished at the rate boots have
	# finished so far, which counts the parallelism in
	[ $finished -eq 0 ] ||
		left="$(( (${#todo[@]} - finished) * ($(now) - stage_t0) / finished ))s"
	log "boot $started/${#todo[@]} $n/$w/$boot/r$r (done $finished, running $((${#running[@]} + 1)), failed $failed; elapsed $(($(now) - stage_t0))s, left ~$left)"
	TIMEOUT=${CELL_TIMEOUT:-$((DURATION * 20 + 240))} \
	setpriv --pdeathsig TERM setsid bash "$MMLAT_ROOT/bench/qemu.sh" "$staging" \
		"$guest_dir/kernel-$n" "$guest_dir/initrd-$n.cpio" \
		"$job mmlat.duration=$DURATION mmlat.trace=$trace mmlat.seed=$r $calib_arg" &
	running[$!]="$n $w $boot $r"
}

# What every cell.json of a variant shares, read once rather than per boot.
declare -A series_sha=()
for n in "${names[@]}"; do series_sha[$n]=$(record get "$KERNELS_DIR/$n/build.json" series_sha256); done

# reap_boot: wait for one boot to end; sets REAPED (its plan entry) and
# REAPED_RC. A boot the host could not keep (a full disk) is discarded
# and stops the run: REAPED is then empty.
reap_boot() {
	local pid n w boot r staging
	REAPED_RC=0
	wait -n -p pid "${!running[@]}" || REAPED_RC=$?
	REAPED=${running[$pid]}
	unset "running[$pid]"
	finished=$((finished + 1))
	read -r n w boot r <<< "$REAPED"
	staging=$run/cells/$n/$w/$boot/.r$r.tmp
	# A failed boot with the disk (nearly) full failed for the host.
	if [ $REAPED_RC -eq 2 ] || [ ! -f "$staging/boot.json" ] ||
	   { [ $REAPED_RC -ne 0 ] && [ "$(free_mib "$run")" -lt $BOOT_FREE_MIB ]; }; then
		rm -rf "$staging"
		[ -n "$host_fault" ] ||
			host_fault="boot $n/$w/$boot/r$r could not be kept ($(free_mib "$run") MiB free under ${RESULTS_DIR})"
		REAPED=
	fi
}

# record_boot ENTRY RC: its cell.json, then the boot into place.
record_boot() {
	local n w boot r staging
	read -r n w boot r <<< "$1"
	staging=$run/cells/$n/$w/$boot/.r$r.tmp
	[ "$2" -eq 0 ] || failed=$((failed + 1))
	if record write @"$staging/boot.json" variant="$n" workload="$w" boot="$boot" repeat:="$r" \
		smp:="$SMP" config_sha256="${config_sha[$n]}" series_sha256="${series_sha[$n]}" \
		qemu_cmdline="$(cat "$staging/qemu.cmdline")" > "$staging/cell.json" &&
	   rm -f "$staging/boot.json" "$staging/qemu.cmdline" &&
	   mv "$staging" "$run/cells/$n/$w/$boot/r$r"; then
		return
	fi
	rm -rf "$staging"
	[ -n "$host_fault" ] ||
		host_fault="boot $n/$w/$boot/r$r could not be recorded ($(free_mib "$run") MiB free under ${RESULTS_DIR})"
}

# start_boots: boot the next plan entries while there is room, and disk.
next=0
start_boots() {
	local free
	while [ -z "$host_fault" ] && [ $next -lt ${#todo[@]} ] && [ ${#running[@]} -lt "$JOBS" ]; do
		free=$(free_mib "$run")
		if [ "$free" -lt $BOOT_FREE_MIB ]; then
			host_fault="only $free MiB free under $RESULTS_DIR, a boot needs $BOOT_FREE_MIB"
			return
		fi
		start_boot "${todo[next]}"
		next=$((next + 1))
	done
}

# A boot that ends frees its host core: the next one starts before the
# ended one is recorded, so that the recording does not leave it idle.
start_boots
while [ ${#running[@]} -gt 0 ]; do
	reap_boot
	start_boots
	[ -z "$REAPED" ] || record_boot "$REAPED" "$REAPED_RC"
done
[ -z "$host_fault" ] ||
	die "run $RUN_ID stopped: $host_fault; its complete boots are kept in $run: make room and rerun with RUN_ID=$RUN_ID to do the rest"
log "matrix done in $(($(now) - t0))s (boots $(($(now) - stage_t0))s, $JOBS at once): ${#todo[@]} of $total boots run, $failed failed, in ${run#$MMLAT_ROOT/}"
[ "$FLAVOR" != bench ] || echo "$run" > "$RESULTS_DIR/.latest"
# STRICT=1 (the safety boots): any failed boot of the run, resumed ones
# included, fails the matrix with every cause listed.
if [ "${STRICT:-0}" = 1 ]; then
	nbad=0
	for f in "$run"/cells/*/*/*/r*/cell.json; do
		[ -f "$f" ] && [ "$(record get "$f" status)" = failed ] || continue
		printf '    %s: %s\n' "$(dirname "${f#$run/cells/}")" "$(record get "$f" cause)" >&2
		nbad=$((nbad + 1))
	done
	[ $nbad -eq 0 ] || die "$nbad of $total boots failed in ${run#$MMLAT_ROOT/} (causes above)"
fi
