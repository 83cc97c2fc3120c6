"""Integration test: build one kernel (6.1 mainline), boot it in the
automatically chosen accelerator for a short munmap cell and a calibration
cell, and check what came back (tests/integration/checks.py, the checks
every tested kernel version passes). Takes a cold kernel build (minutes)
on first run. Each cell gets a clean boot and a traced one with
TRACE=windows (make bench's instrument where TRACE=auto cannot choose the
plugin: kvm, tcg-mt, more vCPUs): latency and work come from the clean
boot, windows, lock holds and calibration from the traced one."""
import json
import os
import subprocess
import sys

import pytest

import checks

VARIANT = "mainline"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    env = dict(os.environ, PYTHONPATH="analysis:bench", RESULTS_DIR=str(results),
               RUN_ID="itest", TRACE="windows",
               VARIANTS=VARIANT, WORKLOADS="munmap idle", DURATION="3",
               REPEAT="1", ACCEL=os.environ.get("ACCEL", "auto"), CALIB=checks.CALIB_KNOB)
    proc = subprocess.run(checks.ORCHESTRATOR, cwd=checks.ROOT, env=env,
                          text=True, capture_output=True, timeout=3600)
    sys.stderr.write(proc.stderr[-4000:])
    assert proc.returncode == 0, proc.stderr[-2000:]
    return results / "itest"


def test_meta_records_mode_and_hashes(run_dir):
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["accel"] in ("kvm", "tcg-icount")
    assert len(meta["configs"][VARIANT]) == 64
    assert meta["kernel_version"].startswith("6.1.")
    assert meta["boots"] == ["clean", "traced"]
    assert meta["untested"] == {}
    # the Debian package the tree was fetched as
    build = json.loads((run_dir / "kernels" / VARIANT / "build.json").read_text())
    assert build["source_package"]["package"] == "linux-source-6.1"
    assert build["kernel_version"].startswith(build["source_package"]["version"].split("-")[0])


@pytest.mark.parametrize("check", checks.ALL, ids=lambda c: c.__name__)
def test_what_came_back(run_dir, check):
    check(run_dir, VARIANT)
