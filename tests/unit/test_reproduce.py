"""make reproduce's comparison (bench/reproduce.py) on made-up references:
identical values are said to be, a differing one is named with both
values, and so is every input and package version that differs. The
committed reference is checked to be readable and complete."""
import copy
import dataclasses
import json
import sys
from pathlib import Path

from plan.model import Versions

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import reproduce  # noqa: E402


def reference():
    inputs = reproduce.Inputs(
        config_sha256="c" * 64, bzimage_sha256="k" * 64, system_map_sha256="m" * 64,
        base_initramfs_sha256="b" * 64, initrd_sha256="i" * 64,
        qemu="QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)",
        versions=Versions(packages={"gcc-12": "12.2.0-14+deb12u1", "rt-tests": "2.4-1"}))
    job = reproduce.Job(variant="mainline", tree="6.1", workloads=["munmap"], repeat=1,
                        duration=5, trace="windows")
    boots = [reproduce.BootValues("munmap/clean/r1", {"status": "ok", "cyclictest p99.9": 2103.0,
                                                      "cyclictest.hist sha256": "h" * 64}),
             reproduce.BootValues("munmap/traced/r1", {"status": "ok",
                                                       "preempt max ns": 2412345})]
    return reproduce.Reference(job, inputs, boots, made="2026-12-04")


def test_identical_boots_and_inputs():
    ref = reference()
    lines, identical = reproduce.compare(ref, copy.deepcopy(ref.inputs),
                                         copy.deepcopy(ref.boots))
    assert identical
    assert "  munmap/clean/r1          identical (3 fields)" in lines
    assert lines[-1] == "5 of 5 boot values identical"
    assert "  versions                 identical (2 packages)" in lines


def test_a_differing_value_and_the_inputs_that_differ_are_named():
    ref = reference()
    inputs = copy.deepcopy(ref.inputs)
    inputs.versions.packages["gcc-12"] = "12.2.0-14+deb12u2"
    inputs.versions.packages["libc6"] = "2.36-9"
    inputs = dataclasses.replace(inputs, bzimage_sha256="x" * 64)
    boots = copy.deepcopy(ref.boots)
    boots[0].values["cyclictest p99.9"] = 2110.0
    lines, identical = reproduce.compare(ref, inputs, boots)
    assert not identical
    assert "  bzimage_sha256           different" in lines
    assert "  config_sha256            identical" in lines
    assert "    package gcc-12: 12.2.0-14+deb12u1 -> 12.2.0-14+deb12u2" in lines
    assert "    package libc6: (none) -> 2.36-9" in lines
    assert "  munmap/clean/r1          1 of 3 fields differ:" in lines
    assert "    cyclictest p99.9: 2103.0 -> 2110.0" in lines
    assert lines[-1].startswith("4 of 5 boot values identical; inputs that differ: "
                                "bzimage_sha256, package gcc-12, package libc6")


def test_a_missing_boot_differs_in_every_field():
    ref = reference()
    lines, identical = reproduce.compare(ref, ref.inputs, ref.boots[:1])
    assert not identical
    assert "  munmap/traced/r1         2 of 2 fields differ:" in lines


def test_reference_round_trips_through_json():
    ref = reference()
    assert reproduce.Reference.from_json(json.loads(json.dumps(ref.to_json()))) == ref


def test_committed_reference_is_complete():
    ref = reproduce.read_reference(reproduce.REFERENCE)
    assert ref.job.variant and ref.job.tree and ref.job.workloads
    assert len(ref.boots) == ref.job.repeat * len(ref.job.workloads) * (
        1 if ref.job.trace == "none" else 2)
    assert all(b.values["status"] == "ok" for b in ref.boots)
    assert len(ref.inputs.bzimage_sha256) == 64 and ref.inputs.versions.packages
