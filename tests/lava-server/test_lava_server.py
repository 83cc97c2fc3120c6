"""EXECUTOR=lava end to end (make test-lava-server): a LAVA server on this
machine (lava/server.sh: PostgreSQL, gunicorn, lava-publisher,
lava-scheduler, a lava-worker with one QEMU device a core), a run of two
idle boots submitted through lavacli's client as the identity server.sh
writes, pinned by the devices' QEMU tag, two at once; their logs fetched
from the server and their results unpacked. A run whose tag no device has
is refused by the server. The server is brought up if it is not running,
and down again afterwards."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VARIANT = "mainline"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("lava-server") is None,
                                reason="the LAVA server runs as root from Debian's lava-server")


def server(action):
    return subprocess.run(["bash", "lava/server.sh", action], cwd=ROOT, text=True,
                          capture_output=True, timeout=900)


@pytest.fixture(scope="module")
def lab():
    was_up = server("status").returncode == 0
    if not was_up:
        proc = server("up")
        assert proc.returncode == 0, proc.stderr[-3000:]
    yield
    if not was_up:
        server("down")


def qemu_tag():
    version = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True,
                             text=True).stdout
    return "qemu-" + ".".join(version.split("version ")[1].split(".")[:2])


def run(results, run_id, tags):
    env = dict(os.environ, PYTHONPATH="analysis:bench", RESULTS_DIR=str(results), RUN_ID=run_id,
               EXECUTOR="lava", LAVA_TAGS=tags, ACCEL="tcg-icount", JOBS="2", VARIANTS=VARIANT,
               BASELINE=VARIANT, PATCHED=VARIANT, WORKLOADS="idle", TRACE="none", CALIB="",
               DURATION="2", REPEAT="2")
    proc = subprocess.run(["/usr/bin/python3", "-m", "orchestrator", "run"], cwd=ROOT, env=env,
                          text=True, capture_output=True, timeout=3600)
    sys.stderr.write(proc.stderr[-4000:])
    return proc


def test_two_boots_through_the_server(lab, tmp_path):
    assert run(tmp_path, "server", qemu_tag()).returncode == 0
    ids = set()
    for seed in (1, 2):
        boot = tmp_path / "server/cells" / VARIANT / "idle/clean" / ("r%d" % seed)
        cell = json.loads((boot / "cell.json").read_text())
        assert (cell["status"], cell["executor"]) == ("ok", "lava"), cell["cause"]
        assert cell["device"].startswith("mmlat-qemu")
        assert "seed=%d" % seed in (boot / "guest/job.env").read_text()
        ids.add(cell["job_id"])
    assert len(ids) == 2


def test_a_tag_no_device_has_is_refused(lab, tmp_path):
    proc = run(tmp_path, "untagged", "no-such-tag")
    assert proc.returncode != 0
    assert "Device tag 'no-such-tag' does not exist" in proc.stderr
