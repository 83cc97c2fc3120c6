"""Integration test: build one kernel, boot it in the automatically chosen
accelerator for a short munmap cell and a calibration cell, and check what
came back. Takes a cold kernel build (minutes) on first run. Cells run with
TRACE=windows, the make bench default."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "analysis"))

from mmlat import calibrate, parse  # noqa: E402

# A short calibration: make calibrate injects the full set.
CALIB = [("preempt", 200), ("irq", 1000), ("preempt", 5000)]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    env = dict(os.environ, RESULTS_DIR=str(results), RUN_ID="itest", TRACE="windows",
               VARIANTS="mainline", WORKLOADS="munmap idle", DURATION="3",
               REPEAT="1", ACCEL=os.environ.get("ACCEL", "auto"),
               CALIB=",".join(f"{kind}:{us}" for kind, us in CALIB))
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
    # The window module saw the tracer's longest window (within its
    # bucket rounding: the max is kept exactly), and the zap path's PTE
    # lock was held and measured.
    win = parse.parse_windows(guest / "windows/windows.txt")
    tracer_us = int((guest / "tracer/preemptoff.max").read_text())
    assert abs(win["kinds"]["preempt"]["max_ns"] / 1000 - tracer_us) <= 0.05 * tracer_us + 20
    pte = parse.parse_ptelock(guest / "windows/ptelock.txt")
    zap = [x for x in pte["sites"] if x["type"] == "lock" and x["func"] == "unmap_page_range"]
    assert zap and sum(x["n"] for x in zap) > 0
    assert 0 < max(x["max_ns"] for x in zap) <= win["kinds"]["preempt"]["max_ns"]
    work = parse.parse_workload(guest / "workload.txt")[0]
    assert work["workload"] == "munmap"
    assert work["ops"] > 0 and work["bytes"] > 0


def test_calibration_chain(run_dir):
    rows, failures = calibrate.check_cell(cell(run_dir, "idle"), CALIB)
    assert not failures, calibrate.format_rows(rows) + "\n".join(failures)
    assert len(rows) == len(CALIB) + 1
