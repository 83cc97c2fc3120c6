# mmlat: latency benchmarks for Linux mm patches, in QEMU.
# `make help` lists the targets and knobs.

# Every knob's default and allowed values: bench/knobs.conf, their one home,
# which bench/run-matrix.sh checks every knob against before it builds
# anything.
include bench/knobs.conf

# Which kernels: names from bench/variants.conf, name=series-dir specs, or
# with KSRC (a git tree) its refs (bench/variants.sh).
BASELINE  ?= $(BASELINE_DEFAULT)
PATCHED   ?= $(PATCHED_DEFAULT)
VARIANTS  ?= $(BASELINE) $(PATCHED)
# The packaged source of variants that name none, a git tree whose refs
# are variants, and whether a run may compare other kernel versions.
TREE      ?= $(TREE_DEFAULT)
KSRC      ?= $(KSRC_DEFAULT)
CROSS     ?= $(CROSS_DEFAULT)
# each: also every prefix of PATCHED's own patches, a variant each
# (bench/steps.sh), for the report's per-patch table.
STEPS     ?= $(STEPS_DEFAULT)
WORKLOADS ?= $(WORKLOADS_DEFAULT)
# Sweeps, one workload over a list of one parameter's values, appended to
# WORKLOADS: NAME:KEY=V1,V2,...[,KEY=VALUE...], space-separated
# (bench/workloads.sh).
SWEEP     ?=
DURATION  ?= $(DURATION_DEFAULT)
REPEAT    ?= $(REPEAT_DEFAULT)
ACCEL     ?= $(ACCEL_DEFAULT)
SMP       ?=
JOBS      ?= $(JOBS_DEFAULT)
TRACE     ?= $(TRACE_DEFAULT)
# Evaluated once, so every use in one make invocation names the same run.
ifeq ($(origin RUN_ID),undefined)
RUN_ID    := $(shell date +%Y%m%d-%H%M%S)
endif
RESULTS_DIR ?= results
RUN       ?= $(shell cat $(RESULTS_DIR)/.latest 2>/dev/null)
# Calibration: windows of known length (KIND[/KIND...]:US[/US...][xROUNDS]).
# make bench: every kind at four lengths spanning the range, in one traced
# idle boot per variant (about 25 s each), for the b and a its report
# states; none under TRACE=none, which has no traced boots. make calibrate:
# 10 us to 5 ms, 3 rounds, into each of $(VARIANTS) idle and under a
# workload (CALIB_WORKLOADS).
# (CALIB_BENCH and CALIB_CALIBRATE: bench/knobs.conf.)
CALIB_MAKE_BENCH = $(if $(filter none,$(TRACE)),,$(CALIB_BENCH))
bench: CALIB ?= $(CALIB_MAKE_BENCH)
calibrate: CALIB ?= $(CALIB_CALIBRATE)
CALIB_WORKLOADS ?= $(CALIB_CALIBRATE_WORKLOADS)
# Safety boots (make check-kernels): bench/knobs.conf.
CHECK_VARIANTS  ?= $(CHECK_VARIANTS_DEFAULT)
CHECK_WORKLOADS ?= $(CHECK_WORKLOADS_DEFAULT)
CHECK_DURATION  ?= $(CHECK_DURATION_DEFAULT)
# Debian's interpreter: the analysis uses Debian's numpy and matplotlib.
PYTHON    ?= /usr/bin/python3

export BASELINE PATCHED VARIANTS TREE KSRC CROSS STEPS WORKLOADS SWEEP DURATION REPEAT ACCEL JOBS TRACE RUN_ID RESULTS_DIR
ifneq ($(SMP),)
export SMP
endif
ANALYSIS = PYTHONPATH=analysis $(PYTHON) -m mmlat
# The calibration check of run $(1) into its calibration.json, whose b and a
# the report's header states. Neither stops the report: a failed check
# (exit 1) shows there as FAILED with its reason, and a run without
# calibration boots (exit 2: CALIB empty, TRACE=none) as not calibrated.
calibration_check = $(ANALYSIS) calibrate "$(1)" || true

.PHONY: help deps check-variants bench kernels guest report compare calibrate check-kernels test \
	test-unit test-integration reproduce clean distclean

help:
	@echo 'mmlat — compare scheduling latency and preempt-off windows of two kernels'
	@echo
	@echo '  make bench      build $$(VARIANTS), boot each per workload clean and traced,'
	@echo '                 and once idle with $$(CALIB) injected; measure, check the'
	@echo '                 calibration (calibration.json), report (b and a in its header)'
	@echo '  make test       unit tests; build and boot mainline and check its data and'
	@echo '                 calibration; bench two refs of a git tree made from'
	@echo '                 linux-source-6.12; then make check-kernels'
	@echo '  make kernels    build the kernels of $$(VARIANTS) only'
	@echo '  make guest      build the guest initramfs only'
	@echo '  make report     (re)check the calibration and (re)write the report of'
	@echo '                 RUN=results/<id> (default: latest)'
	@echo '  make compare    exit non-zero if PATCHED is worse in RUN on a primary endpoint'
	@echo '                 (per-boot values, Welch t on logs, Holm over the report)'
	@echo '  make calibrate  inject $$(CALIB) windows into each of $$(VARIANTS) under'
	@echo '                 $$(CALIB_WORKLOADS); check that the window module (TRACE=max: the'
	@echo '                 max tracer) and cyclictest see each one; fit reading = a*length + b'
	@echo '                 per kind (|a-1| <= 1 %, b > 20 us fails) into calibration.json'
	@echo '  make check-kernels  build $$(CHECK_VARIANTS) with lockdep, DEBUG_ATOMIC_SLEEP and'
	@echo '                 DEBUG_VM, boot each under $$(CHECK_WORKLOADS); fail on any splat'
	@echo '  make reproduce  rebuild the kernel and images of tests/reproduce/reference.json,'
	@echo '                 rerun its boots; say per value identical or different, and'
	@echo '                 which inputs (images, QEMU, package versions) differ'
	@echo '  make deps       check/install the Debian packages'
	@echo '  make clean      remove kernels, guest images and objects (keeps tree, ccache, results)'
	@echo '  make distclean  also remove the unpacked and exported trees and ccache'
	@echo
	@echo 'Knobs (current value):'
	@echo '  BASELINE=$(BASELINE) PATCHED=$(PATCHED) VARIANTS="$(VARIANTS)"'
	@echo '                 (names of bench/variants.conf, name=[tree:VER|git:REF+]series-dir...,'
	@echo '                 or with KSRC refs of that git tree: BASELINE=v6.12 PATCHED=my-branch)'
	@echo '  TREE=$(TREE) (of: $(TREE_VALUES); Debian'"'"'s linux-source-TREE for variants that name'
	@echo '                 no source; the seed series applies to 6.1 only)'
	@echo '  KSRC=$(KSRC) (a git tree, read only: each ref is exported under build/git/)'
	@echo '  CROSS=$(CROSS) (of: $(CROSS_VALUES); yes: the variants may be other kernel versions'
	@echo '                 with other configs; the report lists the differences that matter)'
	@echo '  STEPS=$(STEPS) (of: $(STEPS_VALUES); each: VARIANTS must be a baseline and a'
	@echo '                 patched variant whose series directories start with the'
	@echo '                 baseline'"'"'s, or two refs of KSRC; every prefix of its further'
	@echo '                 patches, or every commit of BASELINE..PATCHED, is built and'
	@echo '                 booted too, and the report adds a per-patch table: each'
	@echo '                 primary endpoint'"'"'s change against the previous step)'
	@echo '  WORKLOADS="$(WORKLOADS)" (of: $(WORKLOAD_NAMES);'
	@echo '                 with parameters NAME:KEY=VALUE,... as'
	@echo '                 bench/workloads.conf allows: imap:n=256, the i_mmap fan-out,'
	@echo '                 a file mapped 256 times, truncated while remapped;'
	@echo '                 reclaim:k=16, pages shared by 16 readers, reclaimed to zram'
	@echo '                 in a memcg; anonchain:D=16, fork chains 16 deep)'
	@echo '  SWEEP="$(SWEEP)" (appended to WORKLOADS: one workload over the values of'
	@echo '                 one parameter, NAME:KEY=V1,V2,...[,KEY=VALUE...], as'
	@echo '                 imap:s=1,n=16,64,256; WORKLOADS= runs the sweeps alone;'
	@echo '                 the report tables and plots each against the parameter)'
	@echo '  DURATION=$(DURATION) (guest seconds per cell, $(subst $() ,..,$(DURATION_RANGE)))'
	@echo '                 REPEAT=$(REPEAT) (boots a side, $(subst $() ,..,$(REPEAT_RANGE)); 10 finds'
	@echo '                 a 10 % change of p99.9 on munmap and exit: README)'
	@echo '  ACCEL=$(ACCEL) ($(ACCEL_VALUES)) SMP=$(SMP) ($(subst $() ,..,$(SMP_RANGE)); default 1 with icount, else 2)'
	@echo '                 SMP>1 under tcg-icount boots QEMU $(ICOUNT_SMP_QEMU_MIN) or later: ICOUNT_SMP_QEMU, else'
	@echo '                 the system'"'"'s if new enough, else bookworm-backports'"'"' (bench/qemu-smp.sh)'
	@echo '  JOBS=$(JOBS) (guests booted at once, auto or $(subst $() ,..,$(JOBS_RANGE)); auto: under tcg-icount one per'
	@echo '                 host core ($(shell nproc) here) as memory allows ($(GUEST_MEM_MIB) MiB + 256 each),'
	@echo '                 else 1: kvm and tcg-mt guests keep the host'"'"'s time)'
	@echo '  TRACE=$(TRACE) (of: $(TRACE_VALUES); windows max full: a clean boot, for latency and throughput,'
	@echo '                 and a traced boot, for windows and lock holds, per cell;'
	@echo '                 none: clean boots only, latency only)'
	@echo '  RUN_ID=<new timestamp> (a stopped run resumes under its RUN_ID) RUN=$(RUN)'
	@echo '  RESULTS_DIR=$(RESULTS_DIR) (runs go to RESULTS_DIR/RUN_ID)'
	@echo '  CALIB=$(if $(filter undefined,$(origin CALIB)),<per target>,"$(CALIB)") (windows injected: KIND[/KIND...]:US[/US...][xROUNDS],...'
	@echo '                 of preempt irq spin ptl ptl_nested; empty: none), by default'
	@echo '                 make bench: $(if $(CALIB_MAKE_BENCH),one idle boot per variant with $(CALIB_MAKE_BENCH),none (TRACE=none))'
	@echo '                 make calibrate: $(CALIB_CALIBRATE)'
	@echo '  CALIB_WORKLOADS="$(CALIB_WORKLOADS)" (make calibrate)'
	@echo '  Defaults and allowed values: bench/knobs.conf; bench/run-matrix.sh checks'
	@echo '                 every knob before it builds anything, and the guest runner its job'
	@echo '  CHECK_VARIANTS="$(CHECK_VARIANTS)" CHECK_WORKLOADS="$(CHECK_WORKLOADS)"'
	@echo '  CHECK_DURATION=$(CHECK_DURATION)'

deps:
	@bash bench/deps.sh

bench:
	@CALIB="$(CALIB)" CALIB_WORKLOADS=calib bash bench/run-matrix.sh
	@$(ANALYSIS) summary "$$(cat $(RESULTS_DIR)/.latest)"
	@$(call calibration_check,$$(cat $(RESULTS_DIR)/.latest))
	@$(ANALYSIS) report "$$(cat $(RESULTS_DIR)/.latest)" --baseline $(BASELINE) --patched $(PATCHED)

# VARIANTS checked before anything else runs (deps, the config).
check-variants:
	@bash -c '. bench/lib.sh; . bench/variants.sh; for v; do resolve_variant "$$v"; done' - $(VARIANTS)

kernels: check-variants deps
	@for v in $(VARIANTS); do bash bench/build.sh "$$v" || exit 1; done

calibrate: deps
	@WORKLOADS="$(CALIB_WORKLOADS)" SWEEP= STEPS=all CALIB_WORKLOADS="$(CALIB_WORKLOADS)" DURATION=2 REPEAT=1 \
		CALIB="$(CALIB)" RUN_ID=calib-$(RUN_ID) bash bench/run-matrix.sh
	@$(ANALYSIS) calibrate $(RESULTS_DIR)/calib-$(RUN_ID)

check-kernels: deps
	@FLAVOR=check STRICT=1 VARIANTS="$(CHECK_VARIANTS)" WORKLOADS="$(CHECK_WORKLOADS)" SWEEP= STEPS=all \
		DURATION=$(CHECK_DURATION) REPEAT=1 TRACE=none RUN_ID=check-$(RUN_ID) \
		bash bench/run-matrix.sh

guest: deps
	@bash guest/initramfs.sh base build/guest/base.cpio

report:
	@test -n "$(RUN)" || { echo 'mmlat: error: no run: give RUN=results/<id>' >&2; exit 1; }
	@$(ANALYSIS) summary "$(RUN)"
	@$(call calibration_check,$(RUN))
	@$(ANALYSIS) report "$(RUN)" --baseline $(BASELINE) --patched $(PATCHED)

compare:
	@test -n "$(RUN)" || { echo 'mmlat: error: no run: give RUN=results/<id>' >&2; exit 1; }
	@$(ANALYSIS) compare "$(RUN)" --baseline $(BASELINE) --patched $(PATCHED)

test: deps
	@$(MAKE) --no-print-directory test-unit test-integration check-kernels

test-unit:
	@$(PYTHON) -m pytest -q analysis/tests workloads/tests tests/unit

test-integration:
	@$(PYTHON) -m pytest -q tests/integration

reproduce: deps
	@$(PYTHON) bench/reproduce.py

clean:
	rm -rf build/kernels build/kernels-check build/guest build/trees build/config build/workloads build/accel-probe build/accel.json

distclean: clean
	rm -rf build
