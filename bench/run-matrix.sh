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
# the report compares: make bench), FLAVOR (bench|check), STRICT (1: exit
# non-zero if any boot failed)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$MMLAT_ROOT/bench/knobs.sh"
. "$MMLAT_ROOT/bench/variants.sh"
. "$MMLAT_ROOT/bench/workloads.sh"

# Defaults: bench/knobs.conf. Set but empty WORKLOADS is no workload:
# WORKLOADS= SWEEP=... runs the sweep alone.
VARIANTS=${VARIANTS:-${BASELINE:-$BASELINE_DEFAULT} ${PATCHED:-$PATCHED_DEFAULT}}
WORKLOADS=${WORKLOADS-$WORKLOADS_DEFAULT}
SWEEP=${SWEEP:-}
DURATION=${DURATION:-$DURATION_DEFAULT}
REPEAT=${REPEAT:-$REPEAT_DEFAULT}
ACCEL=${ACCEL:-$ACCEL_DEFAULT}
SMP=${SMP:-}
TRACE=${TRACE:-$TRACE_DEFAULT}
CALIB=${CALIB:-$CALIB_DEFAULT}
CALIB_WORKLOADS=${CALIB_WORKLOADS:-$CALIB_WORKLOADS_DEFAULT}
STRICT=${STRICT:-0}
RUN_ID=${RUN_ID:-$(date +%Y%m%d-%H%M%S)}
RESULTS_DIR=${RESULTS_DIR:-$MMLAT_ROOT/results}
run=$RESULTS_DIR/$RUN_ID
t0=$(now)

# Every knob is checked here, before anything is built or written: a bad
# value stops the run in a second, naming the knob, the value and what it
# allows (as cyclictest checks all its options before it starts).
check_one_of TRACE "$TRACE" "$TRACE_VALUES"
check_one_of ACCEL "$ACCEL" "$ACCEL_VALUES"
check_int DURATION "$DURATION" "$DURATION_RANGE"
check_int REPEAT "$REPEAT" "$REPEAT_RANGE"
[ -z "$SMP" ] || check_int SMP "$SMP" "$SMP_RANGE"
# Measured with QEMU 7.2: under icount a 6.1 guest stops for good at
# "x86: Booting SMP configuration" (sleep=on or off, any shift), so the
# deterministic mode is uniprocessor; SMP needs tcg-mt or kvm.
icount_smp() {
	die "SMP=$SMP with ACCEL=tcg-icount: QEMU's icount mode hangs bringing up a second vCPU; use SMP=1, or ACCEL=tcg-mt / kvm for SMP"
}
[ "$ACCEL" != tcg-icount ] || [ -z "$SMP" ] || [ "$SMP" = 1 ] || icount_smp
check_one_of STRICT "$STRICT" "0 1"
[[ $RUN_ID =~ ^[A-Za-z0-9_][A-Za-z0-9._:+-]*$ ]] ||
	knob_die RUN_ID "$RUN_ID" "letters, digits and . _ : + - (not first: . : + -)"
seen_variants=" "
for spec in $VARIANTS; do
	resolve_variant "$spec"
	case $seen_variants in
	*" $VARIANT_NAME "*) knob_die VARIANTS "$VARIANTS" "each variant once: '$VARIANT_NAME' is given twice" ;;
	esac
	seen_variants+="$VARIANT_NAME "
done
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
	err=$(PYTHONPATH="$MMLAT_ROOT/analysis" python3 -c \
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
for k in VARIANTS WORKLOADS SWEEP DURATION REPEAT ACCEL SMP TRACE CALIB CALIB_WORKLOADS FLAVOR STRICT RUN_ID; do
	knob_args+=("$k=$(echo ${!k})")
done

bash "$MMLAT_ROOT/bench/deps.sh"
config_dir=$FLAVOR_CONFIG_DIR
log "stage 1/4: config ($FLAVOR)"
bash "$MMLAT_ROOT/bench/kconfig.sh" make "$config_dir"
names=()
log "stage 2/4: kernels ($VARIANTS)"
for spec in $VARIANTS; do
	bash "$MMLAT_ROOT/bench/build.sh" "$spec" "$config_dir"
	resolve_variant "$spec"
	names+=("$VARIANT_NAME")
done

log "stage 3/4: guest images"
# Images are private to this run: another run, with other modules or
# kernels, must not swap them under booting cells.
guest_dir=$BUILD_DIR/guest/run-$RUN_ID.$$
trap 'rm -rf "$guest_dir"' EXIT
mkdir -p "$guest_dir"
base=$guest_dir/base.cpio
bash "$MMLAT_ROOT/guest/initramfs.sh" base "$base"
for n in "${names[@]}"; do
	initrd=$guest_dir/initrd-$n.cpio
	if [ -n "$CALIB" ] || [ "$TRACE" = windows ]; then
		bash "$MMLAT_ROOT/guest/initramfs.sh" module "$n" "$guest_dir/module-$n.cpio"
		cat "$base" "$guest_dir/module-$n.cpio" > "$initrd"
	else
		cp "$base" "$initrd"
	fi
done

if [ "$ACCEL" = auto ]; then
	ACCEL=$(bash "$MMLAT_ROOT/bench/accel.sh" "$KERNELS_DIR/${names[0]}" "$base")
fi
# icount serialises the vCPUs (one host thread for all of them), so the
# deterministic mode is uniprocessor; the other modes default to 2 vCPUs.
if [ "$ACCEL" = tcg-icount ]; then SMP=${SMP:-1}; else SMP=${SMP:-2}; fi
[ "$ACCEL" != tcg-icount ] || [ "$SMP" = 1 ] || icount_smp
export ACCEL SMP

mkdir -p "$run/cells" "$run/kernels"
if [ -f "$run/meta.json" ]; then
	# recorded KEY: KEY's value in meta.json; fails if it has none
	recorded() { record get "$run/meta.json" "$1" 2>/dev/null; }
	recorded boots > /dev/null ||
		die "run $RUN_ID has one boot per cell (cells/<variant>/<workload>/r<N>, the layout before clean and traced boots); start a new RUN_ID"
	[ "$(recorded accel)" = "$ACCEL" ] ||
		die "run $RUN_ID was measured with another accelerator; start a new RUN_ID rather than mixing modes"
	[ "$(recorded config_sha256)" = "$(cat "$config_dir/config.sha256")" ] ||
		die "run $RUN_ID was measured with another kernel config; start a new RUN_ID rather than mixing configs"
	[ "$(recorded trace)" = "$TRACE" ] ||
		die "run $RUN_ID was measured with another TRACE; start a new RUN_ID rather than mixing instrumentations"
	[ "$(recorded calib)" = "$CALIB" ] && [ "$(recorded calib_workloads)" = "$(echo $CALIB_WORKLOADS)" ] ||
		die "run $RUN_ID was calibrated with another CALIB or CALIB_WORKLOADS; start a new RUN_ID"
	# The report reads the sweeps from meta.json: one run, one SWEEP (a run
	# from before sweeps has none).
	recorded_sweep=$(recorded sweep || true)
	[ "$recorded_sweep" = "$(echo $SWEEP)" ] ||
		die "run $RUN_ID was measured with SWEEP='$recorded_sweep'; start a new RUN_ID rather than changing its sweeps"
	log "resuming run $RUN_ID"
else
	for n in "${names[@]}"; do
		mkdir -p "$run/kernels/$n"
		cp "$KERNELS_DIR/$n/build.json" "$KERNELS_DIR/$n/System.map" "$KERNELS_DIR/$n/config" "$run/kernels/$n/"
	done
	list_args=(variants:=[] boots:=[] sweeps:=[])
	for n in "${names[@]}"; do list_args+=("variants[]=$n"); done
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
	# knobs: every knob as requested; accel and smp: what ran
	record write run_id="$RUN_ID" workloads="$WORKLOADS" sweep="$(echo $SWEEP)" \
		knobs:="$(record write "${knob_args[@]}")" "${list_args[@]}" \
		duration_s:="$DURATION" repeat:="$REPEAT" accel="$ACCEL" smp:="$SMP" \
		icount_shift:="$ICOUNT_SHIFT" trace="$TRACE" \
		calib="$CALIB" calib_workloads="$(echo $CALIB_WORKLOADS)" flavor="$FLAVOR" \
		config_sha256="$(cat "$config_dir/config.sha256")" \
		kernel_version="$(make -s -C "$PRISTINE_TREE" kernelversion)" \
		initramfs_sha256="$(sha256sum "$base" | cut -d' ' -f1)" \
		qemu="$(qemu-system-x86_64 --version | head -n 1)" \
		tools="$(cyclictest --help 2>&1 | head -n 1); stress-ng $(stress-ng --version | awk '{print $3}'); $(trace-cmd --version 2>/dev/null | awk 'NF {print "trace-cmd " $3; exit}')" \
		host_cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" \
		host_cpus:="$(nproc)" host_load_at_start="$(cut -d' ' -f1-3 /proc/loadavg)" \
		started="$(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$run/meta.json.tmp"
	mv "$run/meta.json.tmp" "$run/meta.json"
fi

log "stage 4/4: boots ($ACCEL, $SMP vCPU, ${DURATION}s each, ${boots[*]} per cell) into ${run#$MMLAT_ROOT/}"
# Every boot of the run, "variant workload boot repeat", in the order they
# run. The calibration boots go first, so that a broken measurement chain
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
i=0 done_secs=0 done_boots=0 failed=0
for entry in "${plan[@]}"; do
	read -r n w boot r <<< "$entry"
	i=$((i + 1))
	what=$n/$w/$boot/r$r
	dest=$run/cells/$what
	if [ -d "$dest" ]; then
		log "boot $i/$total $what: already complete, skipped"
		continue
	fi
	staging=$run/cells/$n/$w/$boot/.r$r.tmp
	rm -rf "$staging"
	mkdir -p "$staging"
	remaining=?
	[ $done_boots -eq 0 ] || remaining=$(( (total - i + 1) * done_secs / done_boots ))s
	log "boot $i/$total $what (elapsed $(($(now) - t0))s, remaining ~$remaining)"
	c0=$(now)
	trace=none calib_arg=
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
	TIMEOUT=${CELL_TIMEOUT:-$((DURATION * 20 + 240))} \
	bash "$MMLAT_ROOT/bench/qemu.sh" "$staging" "$KERNELS_DIR/$n" "$guest_dir/initrd-$n.cpio" \
		"$job mmlat.duration=$DURATION mmlat.trace=$trace mmlat.seed=$r $calib_arg" ||
		failed=$((failed + 1))
	. "$staging/boot.env"
	record write variant="$n" workload="$w" boot="$boot" repeat:="$r" status="$status" \
		cause="$cause" wall_seconds:="$wall_seconds" \
		guest_seconds_to_runner:="${guest_seconds_to_runner:-null}" accel="$ACCEL" smp:="$SMP" \
		config_sha256="$(cat "$config_dir/config.sha256")" \
		series_sha256="$(record get "$KERNELS_DIR/$n/build.json" series_sha256)" \
		qemu_cmdline="$(cat "$staging/qemu.cmdline")" > "$staging/cell.json"
	rm -f "$staging/boot.env" "$staging/qemu.cmdline"
	mv "$staging" "$dest"
	done_secs=$((done_secs + $(now) - c0)) done_boots=$((done_boots + 1))
done
log "matrix done in $(($(now) - t0))s: $total boots, $failed failed, in ${run#$MMLAT_ROOT/}"
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
