"""EXECUTOR=lava-local: one idle boot of the mainline kernel (test_boot.py
builds it; here it is up to date) as a LAVA job, dispatched by lava-run
on this machine against lava/devices/mmlat-qemu.jinja2, its results
carried back over the serial console. The run's records name the job, the
device and the executor, and the analysis reads the run as any other."""
import json
import os
import shutil
import subprocess

import pytest
import yaml

import checks
from mmlat import parse
from mmlat.stats import summarize_hist

pytestmark = pytest.mark.skipif(
    shutil.which("lava-run") is None or os.geteuid() != 0,
    reason="lava-run (Debian's lava-dispatcher, make deps) runs as root")

VARIANT = "mainline"
BOOT = "cells/%s/idle/clean/r1" % VARIANT


def one_idle_boot(results, executor):
    """The run of one idle clean boot, seed 1, through executor."""
    return checks.orchestrate(results, executor, EXECUTOR=executor, ACCEL="tcg-icount",
                              VARIANTS=VARIANT, BASELINE=VARIANT, PATCHED=VARIANT,
                              WORKLOADS="idle", TRACE="none", CALIB="", DURATION="2",
                              REPEAT="1")


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return tmp_path_factory.mktemp("results")


@pytest.fixture(scope="module")
def run_dir(results):
    return one_idle_boot(results, "lava-local")


def test_the_boot_came_back_over_the_console(run_dir):
    cell = json.loads((run_dir / BOOT / "cell.json").read_text())
    assert (cell["status"], cell["cause"]) == ("ok", "")
    assert cell["executor"] == "lava-local"
    assert cell["job_id"].startswith("mmlat-")
    assert cell["device"].startswith("mmlat-qemu@")
    for option in ("-accel tcg", "-icount shift=3,sleep=off", "-smp 1", "-nodefaults",
                   "-no-reboot", "-serial stdio", "-rtc base=2000-01-01T00:00:00,clock=vm"):
        assert option in cell["qemu_cmdline"]
    # the icount QEMU of the run's local boots (bench/icount-qemu.sh)
    meta = json.loads((run_dir / "meta.json").read_text())
    assert cell["qemu_binary"] == meta["qemu_binary"]
    guest = run_dir / BOOT / "guest"
    assert (guest / "status").read_text() == "ok\n"
    assert "mmlat.results=console" in (guest / "cmdline.txt").read_text()
    assert "workload=idle" in (guest / "job.env").read_text()
    assert (guest / "cyclictest.hist").stat().st_size > 0


def test_the_job_names_the_boot(run_dir):
    definition = yaml.safe_load((run_dir / BOOT / "job.yaml").read_text())
    assert definition["job_name"] == "mmlat lava-local %s/idle/clean/r1" % VARIANT
    assert definition["metadata"] == {"mmlat.run": "lava-local", "mmlat.variant": VARIANT,
                                      "mmlat.workload": "idle", "mmlat.boot": "clean",
                                      "mmlat.seed": "1"}
    # the cell timeout: DURATION * 20 + 240
    assert definition["actions"][-1]["test"]["timeout"] == {"seconds": 280}


def test_the_analysis_reads_it(run_dir):
    proc = subprocess.run(["/usr/bin/python3", "-m", "mmlat", "summary", str(run_dir)],
                          cwd=checks.ROOT, env=dict(os.environ, PYTHONPATH="analysis:bench"),
                          text=True, capture_output=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    row = [line.split() for line in proc.stdout.splitlines() if line.startswith(VARIANT)]
    assert row[0][:4] == [VARIANT, "idle", "1/1", "0/0"]


def test_it_measures_what_a_local_boot_of_the_seed_measures(run_dir, results):
    """The same kernel and seed booted by the local executor: as many
    samples and latency within 5 %, give or take one (the LAVA boot differs
    in its command line, mmlat.results=console, and has no ivshmem device,
    so it is not the same guest byte for byte)."""
    local = one_idle_boot(results, "local")
    hists = [parse.parse_cyclictest_hist(str(r / BOOT / "guest/cyclictest.hist"))["threads"][0]
             for r in (run_dir, local)]
    stats = [summarize_hist(h["hist"]) for h in hists]
    assert abs(stats[0]["count"] - stats[1]["count"]) <= 0.01 * stats[1]["count"] + 1
    for name in ("p50", "p99", "p99.9"):
        assert abs(stats[0][name] - stats[1][name]) <= 0.05 * stats[1][name] + 1, (name, stats)
