"""Integration test: under tcg-icount with one vCPU, two boots of one
kernel, image and seed are byte-identical (every file the guest ships:
cyclictest's histogram and JSON, the workload's counts, the window and
lock dumps, dmesg with its timestamps), while boots of different seeds
still differ. Two runs of the mainline kernel test_boot.py builds (a run of
its own builds it when this file runs alone), each building its own guest
images: run a boots seeds 1 and 2, run b seed 1 again, each a clean and a
traced munmap boot."""
import hashlib
import json

import pytest

import checks


def run(results, run_id, repeat):
    return checks.orchestrate(results, run_id, VARIANTS="mainline", TREE="6.1",
                              WORKLOADS="munmap", SWEEP="", STEPS="all", DURATION="3",
                              REPEAT=str(repeat), TRACE="windows", CALIB="",
                              ACCEL="tcg-icount", SMP="1", ICOUNT_QEMU="")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    return run(results, "a", 2), run(results, "b", 1)


def guest_files(run, boot, rep):
    """{path relative to the boot's guest folder: sha256} of one boot."""
    cell = run / "cells/mainline/munmap" / boot / ("r%d" % rep)
    assert json.loads((cell / "cell.json").read_text())["status"] == "ok"
    guest = cell / "guest"
    return {str(p.relative_to(guest)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(guest.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("boot", ["clean", "traced"])
def test_two_boots_of_one_seed_are_byte_identical(runs, boot):
    a, b = runs
    first, second = guest_files(a, boot, 1), guest_files(b, boot, 1)
    expected = {"cyclictest.hist", "cyclictest.json", "workload.txt", "dmesg.txt", "job.env"}
    if boot == "traced":
        expected |= {"windows/windows.txt", "windows/locks.txt"}
    assert expected <= set(first), sorted(first)
    assert first == second, sorted(f for f in set(first) | set(second)
                                   if first.get(f) != second.get(f))


def test_seeds_still_differ(runs):
    a, _ = runs
    for boot, files in (("clean", ("cyclictest.hist", "workload.txt", "dmesg.txt")),
                        ("traced", ("windows/windows.txt", "windows/locks.txt"))):
        one, two = guest_files(a, boot, 1), guest_files(a, boot, 2)
        for f in files:
            assert one[f] != two[f], (boot, f)


def test_runs_record_what_they_booted(runs):
    a, b = runs
    meta_a, meta_b = (json.loads((r / "meta.json").read_text()) for r in (a, b))
    # the images were built twice, byte for byte the same
    assert meta_a["images"] == meta_b["images"]
    assert meta_a["initramfs_sha256"] == meta_b["initramfs_sha256"]
    kernel = checks.ROOT / "build/kernels/mainline/bzImage"
    assert meta_a["images"]["mainline"]["bzimage_sha256"] == \
        hashlib.sha256(kernel.read_bytes()).hexdigest()
    # the pinned QEMU ran, and every version that matters is recorded
    assert "QEMU emulator version 10.0.2" in meta_a["qemu"]
    packages = meta_a["versions"]["packages"]
    for package in ("gcc-12", "binutils-x86-64-linux-gnu", "busybox-static", "rt-tests",
                    "stress-ng", "libc6", "libc6-dev", "cpio", "libelf1"):
        assert packages.get(package), package
