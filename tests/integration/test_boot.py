"""Integration test: build one kernel, boot it in the automatically chosen
accelerator for a short munmap cell and a calibration cell, and check what
came back. Takes a cold kernel build (minutes) on first run. Cells run with
TRACE=max: tracing every window (TRACE=full) takes minutes per cell under
TCG."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "analysis"))

from mmlat import parse  # noqa: E402

CALIB_US = (1000, 5000)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    env = dict(os.environ, RESULTS_DIR=str(results), RUN_ID="itest", TRACE="max",
               VARIANTS="mainline", WORKLOADS="munmap idle", DURATION="3",
               REPEAT="1", ACCEL=os.environ.get("ACCEL", "auto"),
               CALIB=",".join(f"preempt:{us}" for us in CALIB_US))
    proc = subprocess.run(["bash", "bench/run-matrix.sh"], cwd=ROOT, env=env,
                          text=True, capture_output=True, timeout=3600)
    sys.stderr.write(proc.stderr[-4000:])
    assert proc.returncode == 0, proc.stderr[-2000:]
    return results / "itest"


def cell(run_dir, workload):
    path = run_dir / "cells/mainline" / workload / "r1"
    info = json.loads((path / "cell.json").read_text())
    assert info["status"] == "ok", info["cause"]
    assert info["accel"] == json.loads((run_dir / "meta.json").read_text())["accel"]
    return path / "guest"


def test_meta_records_mode_and_hashes(run_dir):
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["accel"] in ("kvm", "tcg-icount")
    assert len(meta["config_sha256"]) == 64
    assert meta["kernel_version"].startswith("6.1.")


def test_munmap_cell_has_latency_window_and_work(run_dir):
    guest = cell(run_dir, "munmap")
    cyc = parse.parse_cyclictest_json(guest / "cyclictest.json")
    samples = sum(t["cycles"] for t in cyc["threads"].values())
    assert samples > 100
    assert max(t["max"] for t in cyc["threads"].values()) > 0
    assert int((guest / "tracer/preemptoff.max").read_text()) > 0
    work = parse.parse_workload(guest / "workload.txt")[0]
    assert work["workload"] == "munmap"
    assert work["ops"] > 0 and work["bytes"] > 0


def calibration_windows(run_dir):
    guest = cell(run_dir, "idle")
    measured = [int(line.split("ns=")[1].split()[0]) / 1000
                for line in (guest / "calib.txt").read_text().splitlines()]
    return guest, measured


def test_calibration_windows_are_measured(run_dir):
    _, measured = calibration_windows(run_dir)
    assert len(measured) == len(CALIB_US)
    for want, got in zip(CALIB_US, measured):
        assert want <= got < want * 1.1


@pytest.mark.xfail(strict=True, reason="open bug (issue 3): neither cyclictest "
                   "nor the preemptoff tracer sees the injected 5 ms window")
def test_cyclictest_sees_calibration_window(run_dir):
    guest, measured = calibration_windows(run_dir)
    # cyclictest's thread on the same (only) CPU cannot run inside an
    # injected preempt-off window, so its max covers the longest one.
    cyc = parse.parse_cyclictest_json(guest / "cyclictest.json")
    assert max(t["max"] for t in cyc["threads"].values()) >= 0.9 * measured[-1]
