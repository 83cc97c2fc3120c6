"""EXECUTOR=lava end to end: a LAVA server on this machine (lava/server.sh:
PostgreSQL, gunicorn, lava-publisher, lava-scheduler, a lava-worker with
QEMU devices), two boots submitted through lavacli's client as the
identity server.sh writes, pinned by the devices' QEMU tag, run two at
once, their logs fetched and their results unpacked; a job for a tag no
device has is refused by the server. The server is brought up if it is
not running, and down again afterwards. Needs what test_lava_boot.py
needs, and lava-server and PostgreSQL."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

LAVA_DIR = Path(__file__).resolve().parents[2]
ROOT = LAVA_DIR.parent
sys.path.insert(0, str(LAVA_DIR))

from mmlat_lava import executor, job  # noqa: E402

IDENTITY = os.environ.get("LAVA_IDENTITY", "mmlat-local")
DURATION = 3

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("lava-server") is None,
                                reason="the LAVA server runs as root from Debian's lava-server")


def server(action):
    return subprocess.run(["bash", "lava/server.sh", action], cwd=ROOT, text=True, capture_output=True,
                          timeout=900)


@pytest.fixture(scope="module")
def lab():
    was_up = server("status").returncode == 0
    if not was_up:
        proc = server("up")
        assert proc.returncode == 0, proc.stderr[-3000:]
    yield
    if not was_up:
        server("down")


@pytest.fixture(scope="module")
def images():
    kernel = ROOT / "build/kernels/mainline/bzImage"
    initrd = os.environ.get("LAVA_TEST_INITRD")
    if not kernel.exists():
        pytest.skip("no mainline kernel: make kernels VARIANTS=mainline (test_lava_boot.py builds it)")
    if not initrd:
        if "ship" not in (ROOT / "guest/runner.sh").read_text():
            pytest.skip("guest/runner.sh does not ship its results over the console yet (mmlat.ship: "
                        "lava/README.md); give LAVA_TEST_INITRD=<an initramfs whose runner does>")
        initrd = ROOT / "build/guest/base.cpio"
        subprocess.run(["bash", "guest/initramfs.sh", "base", str(initrd)], cwd=ROOT, check=True, timeout=600)
    return kernel, Path(initrd)


def qemu_tag():
    version = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True).stdout
    return "qemu-" + ".".join(version.split("version ")[1].split(".")[:2])


def spec(images, seed):
    kernel, initrd = images
    return job.BootSpec(run_id="itest-server", variant="mainline", workload="munmap", boot="clean", repeat=seed,
                        kernel=str(kernel), initrd=str(initrd), duration_s=DURATION,
                        job_args="mmlat.workload=munmap mmlat.duration=%d mmlat.trace=none mmlat.seed=%d"
                        % (DURATION, seed))


def test_two_boots_through_the_server(lab, images, tmp_path):
    exe = executor.LavaServerExecutor(tmp_path / "jobs", job.Target(tags=(qemu_tag(),)), identity=IDENTITY)
    records = [exe.submit(spec(images, seed)) for seed in (1, 2)]
    results = []
    for record in records:
        status = executor.wait(exe, record, poll_s=1, timeout_s=record.boot.timeout + 600)
        assert (status.state, status.health) == ("finished", "complete"), status
        results.append(exe.collect(record, tmp_path / record.job_id))
    for record, result in zip(records, results):
        assert result.status == "ok", result.cause
        assert result.lava_job_id == record.job_id
        assert result.lava_device.startswith("mmlat-qemu")
        guest = tmp_path / record.job_id / "guest"
        assert "seed=%d" % record.boot.repeat in (guest / "job.env").read_text()
        assert json.loads((tmp_path / record.job_id / "boot.json").read_text())["executor"] == "lava"


def test_a_tag_no_device_has_is_refused(lab, images, tmp_path):
    exe = executor.LavaServerExecutor(tmp_path / "jobs", job.Target(tags=("no-such-tag",)), identity=IDENTITY)
    with pytest.raises(executor.ExecutorError, match="refused: .*Device tag 'no-such-tag' does not exist"):
        exe.submit(spec(images, 1))
