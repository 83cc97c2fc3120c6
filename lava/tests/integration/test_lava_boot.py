"""One cell, munmap seed 1 clean, through lava-run on this machine (the QEMU
device, icount) and through bench/qemu.sh, compared within the A/A noise
of results/aa-noise.json; two lava-run dispatchers at once. Needs root,
lava-run (Debian's lava-dispatcher) and lava-server's device types, the
mainline kernel (make kernels builds it: minutes when it is not built
yet) and a guest image whose runner ships its results over the console
when told to (mmlat.ship=console): the one guest/initramfs.sh builds, or
LAVA_TEST_INITRD while guest/runner.sh does not know mmlat.ship yet."""
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

LAVA_DIR = Path(__file__).resolve().parents[2]
ROOT = LAVA_DIR.parent
sys.path.insert(0, str(LAVA_DIR))
sys.path.insert(0, str(ROOT / "analysis"))

from mmlat import parse, stats  # noqa: E402
from mmlat_lava import executor, job  # noqa: E402

DURATION = 5            # as the A/A study's boots
JOB_ARGS = "mmlat.workload=munmap mmlat.duration=%d mmlat.trace=none mmlat.seed=1" % DURATION
BOOTS = 3           # a side
# A LAVA boot's mean may differ from the local boots' by this many
# standard errors of the A/A study's between-boot spread.
SIGMAS = 4
ENDPOINTS = ("cyclictest p99.9", "cyclictest max", "pages/s")

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("lava-run") is None,
                                reason="lava-run (Debian's lava-dispatcher) runs as root only")


def run(cmd, **kw):
    proc = subprocess.run(cmd, cwd=ROOT, text=True, capture_output=True, **kw)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """The mainline kernel and an initramfs whose runner can ship over the
    console."""
    run(["/usr/bin/python3", "-m", "orchestrator", "kernels"], timeout=7200,
        env=dict(os.environ, PYTHONPATH="bench", VARIANTS="mainline"))
    kernel = ROOT / "build/kernels/mainline/bzImage"
    initrd = os.environ.get("LAVA_TEST_INITRD")
    if not initrd:
        if "ship" not in (ROOT / "guest/runner.sh").read_text():
            pytest.skip("guest/runner.sh does not ship its results over the console yet (mmlat.ship: "
                        "lava/README.md); give LAVA_TEST_INITRD=<an initramfs whose runner does>")
        guest = tmp_path_factory.mktemp("guest")
        initrd = guest / "base.cpio"
        run(["/usr/bin/python3", "-m", "plan", "guest-config", str(guest / "etc")],
            env=dict(os.environ, PYTHONPATH="bench"))
        run(["bash", "guest/initramfs.sh", "base", str(initrd), str(guest / "etc")], timeout=600)
    return kernel, Path(initrd)


def endpoints(guest):
    lat = {}
    for thread in parse.parse_cyclictest_hist(guest / "cyclictest.hist")["threads"]:
        for value, count in thread["hist"].items():
            lat[value] = lat.get(value, 0) + count
    summary = stats.summarize_hist(lat)
    work = parse.parse_workload(guest / "workload.txt")[0]
    return {"cyclictest p99.9": summary["p99.9"], "cyclictest max": summary["max"],
            "pages/s": work["pages_per_s"], "ops": work["ops"]}


@pytest.fixture(scope="module")
def boots(images, tmp_path_factory):
    """BOOTS local boots and BOOTS lava-run boots of the same job, each
    side two at once."""
    kernel, initrd = images
    out = tmp_path_factory.mktemp("lava-boot")
    kdir = out / "kernel"
    kdir.mkdir()
    shutil.copy(kernel, kdir / "bzImage")
    env = dict(os.environ, ACCEL="tcg-icount", SMP="1", GUEST_MEM_MIB="1024", ICOUNT_SHIFT="3",
               CELL_TIMEOUT=str(job.cell_timeout_s(DURATION)))
    local = []
    for first in range(0, BOOTS, 2):
        procs = [subprocess.Popen(["bash", "bench/qemu.sh", str(out / ("local-%d" % i)), str(kdir), str(initrd),
                                   JOB_ARGS], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
                 for i in range(first, min(first + 2, BOOTS))]
        for proc in procs:
            assert proc.wait() == 0, proc.stderr.read()[-2000:]
    for i in range(BOOTS):
        local.append(json.loads((out / ("local-%d" % i) / "boot.json").read_text()) |
                     {"guest": out / ("local-%d" % i) / "guest"})
    exe = executor.LavaRunExecutor(out / "lava-run")
    spec = job.BootSpec(run_id="itest", variant="mainline", workload="munmap", boot="clean", repeat=1,
                        kernel=str(kdir / "bzImage"), initrd=str(initrd), job_args=JOB_ARGS, duration_s=DURATION)
    lava = []
    for first in range(0, BOOTS, 2):
        records = [exe.submit(spec) for _ in range(first, min(first + 2, BOOTS))]
        for record in records:
            status = executor.wait(exe, record, poll_s=0.5, timeout_s=spec.timeout + 600)
            assert status.state == "finished", status
            folder = out / ("lava-%s" % record.job_id)
            result = exe.collect(record, folder)
            lava.append(result.to_json() | {"guest": folder / "guest", "folder": folder})
    return local, lava


def test_every_boot_ok(boots):
    local, lava = boots
    for boot in local + lava:
        assert boot["status"] == "ok", boot["cause"]
    assert {b["executor"] for b in lava} == {"lava-local"}


def test_lava_runs_the_icount_qemu(boots):
    _, lava = boots
    for boot in lava:
        cmd = (boot["folder"] / "qemu.cmdline").read_text()
        for option in ("-accel tcg", "-icount shift=3,sleep=off", "-smp 1", "-m 1024", "-nodefaults",
                       "-no-reboot", "-serial stdio"):
            assert option in cmd
        assert "-enable-kvm" not in cmd
        assert boot["qemu"].startswith("qemu-system-x86 ")


def test_same_job_in_the_guest(boots):
    local, lava = boots
    cmdline = (local[0]["guest"] / "cmdline.txt").read_text().strip()
    env = (local[0]["guest"] / "job.env").read_text()
    for boot in lava:
        assert (boot["guest"] / "cmdline.txt").read_text().strip() == cmdline + " mmlat.ship=console"
        assert (boot["guest"] / "job.env").read_text() == env
        assert boot["guest_seconds_to_runner"] == local[0]["guest_seconds_to_runner"]


def test_within_the_aa_noise(boots):
    """Each endpoint's mean over the LAVA boots against the local boots':
    within SIGMAS standard errors of the A/A study's between-boot spread
    (sd of the logarithms, munmap, results/aa-noise.json)."""
    local, lava = boots
    aa = json.loads((ROOT / "results/aa-noise.json").read_text())["workloads"]["munmap"]["endpoints"]
    a = [endpoints(b["guest"]) for b in local]
    b = [endpoints(b["guest"]) for b in lava]
    assert {e["ops"] for e in a + b} == {a[0]["ops"]}, "every boot does the same operations"
    for name in ENDPOINTS:
        mean_a = sum(math.log(e[name]) for e in a) / len(a)
        mean_b = sum(math.log(e[name]) for e in b) / len(b)
        bound = SIGMAS * aa[name]["sd_log"] * math.sqrt(1 / len(a) + 1 / len(b))
        print("%s: lava/local %.4f (bound %.4f)" % (name, math.exp(mean_b - mean_a), math.exp(bound)))
        assert abs(mean_b - mean_a) <= bound, name
