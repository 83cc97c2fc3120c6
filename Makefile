# mmlat: latency benchmarks for Linux mm patches, in QEMU.
# `make help` lists the targets and knobs.

# Every knob's default, exported, and its help line: generated from the
# knob registry, bench/plan/knobs.py, its one home (Debian's interpreter
# runs the generator before knobs.mk can say which one is PYTHON's).
include build/knobs.mk
build/knobs.mk: bench/plan/knobs.py bench/plan/instruments.py bench/plan/render.py \
		bench/kernel-sources.conf
	@mkdir -p build
	@PYTHONPATH=bench /usr/bin/python3 -m plan knobs-mk > $@.tmp && mv $@.tmp $@

# The run make report and make compare read.
RUN ?= $(shell cat $(RESULTS_DIR)/.latest 2>/dev/null)
# Calibration: windows of known length (KIND[/KIND...]:US[/US...][xROUNDS]).
# make bench: every kind at four lengths spanning the range, in one idle
# boot per variant (about 25 s each) with the instrument, which reads them
# back (the window module's snapshots, or the plugin's event log), for the
# b and a its report states; none where TRACE's instrument records no
# windows (WINDOWLESS_TRACES: TRACE=none). make calibrate:
# 10 us to 5 ms, 3 rounds, into each of $(VARIANTS) idle and under a
# workload.
bench: CALIB ?= $(if $(filter $(WINDOWLESS_TRACES),$(TRACE)),,$(CALIB_BENCH))
calibrate: CALIB ?= $(CALIB_CALIBRATE)
calibrate: CALIB_WORKLOADS ?= $(CALIB_CALIBRATE_WORKLOADS)

ANALYSIS = PYTHONPATH=analysis:bench $(PYTHON) -m mmlat
ORCHESTRATOR = PYTHONPATH=analysis:bench $(PYTHON) -m orchestrator
# The calibration check of run $(1) into its calibration.json, whose b and a
# the report's header states. Neither stops the report: a failed check
# (exit 1) shows there as FAILED with its reason, and a run without
# calibration boots (exit 2: CALIB empty, TRACE=none) as not calibrated.
calibration_check = $(ANALYSIS) calibrate "$(1)" || true

.PHONY: help deps bench kernels guest report compare posting calibrate check-kernels test \
	test-unit test-integration test-lava-server lint reproduce clean distclean

help:
	@echo 'mmlat — compare scheduling latency and preempt-off windows of two kernels'
	@echo
	@echo '  make bench      build $$(VARIANTS), boot each per workload and repeat: under'
	@echo '                 tcg-icount with one vCPU once, the QEMU plugin recording'
	@echo '                 windows and holds (TRACE=auto: plugin), else clean and traced'
	@echo '                 (TRACE=auto: windows); and once idle with $$(CALIB) injected;'
	@echo '                 measure, check the calibration (calibration.json), report'
	@echo '                 (b and a in its header)'
	@echo '  make test       lint and unit tests; build and boot mainline and check its'
	@echo '                 data and calibration; bench two refs of a git tree made from'
	@echo '                 linux-source-7.3 through the same checks; stop and resume a'
	@echo '                 run; the plugin, LAVA and byte-identity tests (.ci/run adds'
	@echo '                 make check-kernels when CI has the time)'
	@echo '  make kernels    build the kernels of $$(VARIANTS) only'
	@echo '  make guest      build the guest initramfs only'
	@echo '  make report     (re)check the calibration and (re)write the report of'
	@echo '                 RUN=results/<id> (default: latest)'
	@echo '  make compare    exit non-zero if PATCHED is worse in RUN on a primary endpoint'
	@echo '                 (per-boot values, Welch t on logs, Holm over the report)'
	@echo '  make posting    from RUN'"'"'s report: the measurement section of a cover letter'
	@echo '                 (72 columns) and PATCHED'"'"'s own patches as mails, From: and'
	@echo '                 Signed-off-by: from git config, Cc: from get_maintainer.pl,'
	@echo '                 into RUN/posting/'
	@echo '  make calibrate  inject $$(CALIB_CALIBRATE) windows into each of $$(VARIANTS)'
	@echo '                 under $$(CALIB_CALIBRATE_WORKLOADS); check that the instrument'
	@echo '                 (TRACE) and cyclictest see each one; fit reading = a*length + b'
	@echo '                 per kind (|a-1| <= 1 %, b > 20 us fails) into calibration.json'
	@echo '  make check-kernels  build $$(CHECK_VARIANTS) with lockdep, DEBUG_ATOMIC_SLEEP'
	@echo '                 and DEBUG_VM, boot each under $$(CHECK_WORKLOADS), then at'
	@echo '                 $$(CHECK_SMP) vCPUs under $$(CHECK_SMP_WORKLOADS); fail on any'
	@echo '                 splat or hang'
	@echo '  make reproduce  rebuild the kernel and images of tests/reproduce/reference.json,'
	@echo '                 rerun its boots; say per value identical or different, and'
	@echo '                 which inputs (images, QEMU, package versions) differ'
	@echo '  make lint       flake8 on the Python, shellcheck on the shell'
	@echo '  make test-lava-server  EXECUTOR=lava end to end, against a LAVA server'
	@echo '                 started on this machine (lava/server.sh)'
	@echo '  make deps       check/install the Debian packages'
	@echo '  make clean      remove kernels, guest images and objects (keeps tree, ccache, results)'
	@echo '  make distclean  also remove the unpacked and exported trees and ccache'
	@echo
	@echo 'Knobs (current value; their one home: bench/plan/knobs.py, which the'
	@echo 'orchestrator checks every knob against before it builds anything):'
	@$(MAKE) --no-print-directory help-knobs

deps:
	@bash bench/deps.sh

bench:
	@CALIB="$(CALIB)" CALIB_WORKLOADS=calib $(ORCHESTRATOR) run
	@$(ANALYSIS) summary "$$(cat $(RESULTS_DIR)/.latest)"
	@$(call calibration_check,$$(cat $(RESULTS_DIR)/.latest))
	@$(ANALYSIS) report "$$(cat $(RESULTS_DIR)/.latest)" --baseline $(BASELINE) --patched $(PATCHED)

kernels:
	@$(ORCHESTRATOR) kernels

calibrate: deps
	@WORKLOADS="$(CALIB_WORKLOADS)" SWEEP= STEPS=all CALIB_WORKLOADS="$(CALIB_WORKLOADS)" DURATION=2 REPEAT=1 \
		CALIB="$(CALIB)" RUN_ID=calib-$(RUN_ID) $(ORCHESTRATOR) run
	@$(ANALYSIS) calibrate $(RESULTS_DIR)/calib-$(RUN_ID)

# The safety boots on one vCPU, then the forward-progress boot on
# CHECK_SMP: two unmaps of one file at once (bench/plan/knobs.py).
check-kernels: deps
	@FLAVOR=check STRICT=1 VARIANTS="$(CHECK_VARIANTS)" WORKLOADS="$(CHECK_WORKLOADS)" SWEEP= STEPS=all \
		DURATION=$(CHECK_DURATION) REPEAT=1 TRACE=none CALIB= RUN_ID=check-$(RUN_ID) \
		$(ORCHESTRATOR) run
	@FLAVOR=check STRICT=1 VARIANTS="$(CHECK_VARIANTS)" WORKLOADS="$(CHECK_SMP_WORKLOADS)" SWEEP= \
		STEPS=all SMP=$(CHECK_SMP) DURATION=$(CHECK_DURATION) REPEAT=1 TRACE=none CALIB= \
		RUN_ID=check-smp-$(RUN_ID) $(ORCHESTRATOR) run

guest: deps
	@PYTHONPATH=bench $(PYTHON) -m plan guest-config build/guest/etc
	@bash guest/initramfs.sh base build/guest/base.cpio build/guest/etc

report:
	@test -n "$(RUN)" || { echo 'mmlat: error: no run: give RUN=results/<id>' >&2; exit 1; }
	@$(ANALYSIS) summary "$(RUN)"
	@$(call calibration_check,$(RUN))
	@$(ANALYSIS) report "$(RUN)" --baseline $(BASELINE) --patched $(PATCHED)

compare:
	@test -n "$(RUN)" || { echo 'mmlat: error: no run: give RUN=results/<id>' >&2; exit 1; }
	@$(ANALYSIS) compare "$(RUN)" --baseline $(BASELINE) --patched $(PATCHED)

posting:
	@test -n "$(RUN)" || { echo 'mmlat: error: no run: give RUN=results/<id>' >&2; exit 1; }
	@$(ANALYSIS) posting "$(RUN)"

# The Python (flake8, with pyproject.toml's settings) and the shell that
# remains (shellcheck, with .shellcheckrc's).
PYTHON_SOURCES = analysis bench tests workloads conftest.py
SHELL_SOURCES = $(wildcard bench/*.sh guest/*.sh lava/*.sh plugin/*.sh) .ci/run
lint:
	@$(PYTHON) -m flake8 --config pyproject.toml $(PYTHON_SOURCES)
	@shellcheck -x $(SHELL_SOURCES)

# make test checks mmlat itself. The integration tests' 6.1 kernel builds
# beside lint and the unit tests (on one core each), which it would
# otherwise follow; a failure there is theirs to report, as they build it
# again. The series' own checks are make check-kernels, which .ci/run adds
# when CI's time allows.
test: deps
	@mkdir -p $(BUILD_DIR) && \
	VARIANTS=mainline BASELINE=mainline PATCHED=mainline TREE=6.1 STEPS=all SWEEP= \
		$(ORCHESTRATOR) kernels > $(BUILD_DIR)/test-kernels.log 2>&1 & prebuild=$$!; \
	$(MAKE) --no-print-directory lint test-unit; rc=$$?; \
	wait $$prebuild || echo "mmlat: building mainline beside the unit tests failed" \
		"($(BUILD_DIR)/test-kernels.log)" >&2; \
	[ $$rc = 0 ] && $(MAKE) --no-print-directory test-integration

test-unit:
	@PYTHONPATH=analysis:bench $(PYTHON) -m pytest -q analysis/tests workloads/tests tests/unit

test-integration:
	@PYTHONPATH=analysis:bench $(PYTHON) -m pytest -q --durations=10 tests/integration

# EXECUTOR=lava end to end against a LAVA server started on this machine
# (lava/server.sh up; down again afterwards if it was not running): two
# minutes and more, outside make test.
test-lava-server:
	@PYTHONPATH=analysis:bench $(PYTHON) -m pytest -q tests/lava-server

reproduce: deps
	@PYTHONPATH=analysis:bench $(PYTHON) bench/reproduce.py

clean:
	rm -rf build/kernels build/kernels-check build/guest build/trees build/config build/workloads \
		build/accel-probe build/accel.json build/knobs.mk

distclean: clean
	rm -rf build
