"""A run's records read back through plan's dataclasses: format 4 as the
orchestrator writes it, format 3 (bench/run-matrix.sh's) upgraded on the
way in, anything else refused naming its format."""
import json
import os

import fakerun
import pytest
from mmlat import load, records
from plan.model import BuildRecord, CellRecord, Meta

# Records as bench/run-matrix.sh wrote them (format 3, no "format").
META_3 = {
    "run_id": "old", "workloads": "munmap imap:s=1,n=16 imap:s=1,n=64",
    "sweep": "imap:s=1,n=16,64",
    "knobs": {"VARIANTS": "mainline", "REPEAT": "2", "TRACE": "windows"},
    "variants": ["mainline"], "boots": ["clean", "traced"],
    "sweeps": [{"spec": "imap:s=1,n=16,64", "name": "imap", "key": "n", "values": [16, 64],
                "fixed": {"s": 1}, "workloads": ["imap:s=1,n=16", "imap:s=1,n=64"]}],
    "steps": [], "configs": {"mainline": "830a"}, "untested": {},
    "duration_s": 5, "repeat": 2, "accel": "tcg-icount", "smp": 1, "icount_shift": 3,
    "jobs": 2, "trace": "windows", "calib": "preempt/irq:10/100", "calib_workloads": "calib",
    "flavor": "bench", "config_sha256": "830a", "cross": "no", "kernel_version": "6.1.192",
    "initramfs_sha256": "33a8", "qemu": "QEMU emulator version 7.2.22",
    "qemu_binary": "qemu-system-x86_64", "tools": "cyclictest V 2.40; stress-ng 0.15.06",
    "host_cpu": "x86", "host_cpus": 2, "host_load_at_start": "1 1 1",
    "started": "2026-12-04T21:16:38Z"}
CELL_3 = {"status": "ok", "cause": "", "wall_seconds": 20.9, "guest_seconds_to_runner": 3.48,
          "accel": "tcg-icount", "qemu_binary": "qemu-system-x86_64", "qemu": "QEMU 7.2.22",
          "variant": "mainline", "workload": "calib", "boot": "traced", "repeat": 1, "smp": 1,
          "config_sha256": "830a", "series_sha256": "86f5",
          "qemu_cmdline": "qemu -append console=ttyS0\\ mmlat.calib=preempt/irq:10/100\\ "}
BUILD_3 = {"variant": "mainline", "series": ["preemptirq-trace"], "series_sha256": "86f5",
           "source": "tree:6.1", "kernel_version": "6.1.192",
           "source_package": {"package": "linux-source-6.1", "version": "6.1.192-3"},
           "config_sha256": "830a", "kernel_release": "6.1.192-mmlat-mainline",
           "build_seconds": 200, "ccache_hits": 1, "ccache_misses": 2,
           "obj_dir": "/build/trees/mainline/obj"}


def write_json(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f)


def test_format_3_is_upgraded_on_the_way_in(tmp_path):
    write_json(str(tmp_path / "meta.json"), META_3)
    write_json(str(tmp_path / "kernels/mainline/build.json"), BUILD_3)
    cell_path = str(tmp_path / "cells/mainline/calib/traced/r1/cell.json")
    write_json(cell_path, CELL_3)
    meta = records.read_meta(str(tmp_path))
    plan = meta.plan
    assert [(v.name, v.source, v.version, v.series) for v in plan.variants] == [
        ("mainline", "tree:6.1", "6.1", ("preemptirq-trace",))]
    assert plan.workloads == ["munmap", "imap:s=1,n=16", "imap:s=1,n=64"]
    assert plan.sweeps[0].values == [16, 64] and plan.sweeps[0].fixed == {"s": 1}
    assert plan.calibration.windows == [("preempt", 10), ("irq", 10), ("preempt", 100),
                                        ("irq", 100)]
    assert plan.calibration.workloads == ["calib"] and plan.cross is False
    assert [(r.first, r.last) for r in plan.rounds] == [(1, 2)]
    assert (meta.accel, meta.configs, meta.knobs["REPEAT"]) == (
        "tcg-icount", {"mainline": "830a"}, "2")
    cell = records.read_cell(cell_path)
    assert cell.calibrated and cell.boot.path == "mainline/calib/traced/r1"
    assert (cell.executor, cell.result.status, cell.result.wall_seconds) == ("local", "ok", 20.9)
    build = records.read_build(str(tmp_path / "kernels/mainline/build.json"))
    assert build.source_package["version"] == "6.1.192-3" and build.ref == ""


@pytest.mark.parametrize("doc, message", [
    ({"accel": "tcg"}, 'meta.json has no "format" and no "knobs" or "boots"'),
    (dict(META_3, format=2), "meta.json is of format 2; this version reads format 4"),
])
def test_other_formats_are_refused_by_name(tmp_path, doc, message):
    write_json(str(tmp_path / "meta.json"), doc)
    with pytest.raises(records.UnreadableRun) as e:
        load.load_run(str(tmp_path))
    assert message in str(e.value) and str(tmp_path / "meta.json") in str(e.value)


def test_records_round_trip_through_json(tmp_path):
    root = fakerun.make_run(str(tmp_path / "r"), repeats=1, failed=True, calib="preempt:10/100",
                            sweeps=[{"spec": "imap:n=1,2", "name": "imap", "key": "n",
                                     "values": [1, 2], "fixed": {}, "workloads": []}])
    run = load.load_run(root)
    meta = run["record"]
    assert Meta.from_json(json.loads(json.dumps(meta.to_json()))) == meta
    assert run["meta"]["format"] == 4 and run["meta"]["calibration"]["workloads"] == ["calib"]
    for c in run["cells"]:
        rec = CellRecord.from_json(c["meta"])
        assert CellRecord.from_json(json.loads(json.dumps(rec.to_json()))) == rec
        assert rec.boot.path == load.cell_name(c)
    build = BuildRecord.from_json(run["kernels"]["baseline"])
    assert BuildRecord.from_json(json.loads(json.dumps(build.to_json()))) == build


def test_a_record_with_a_key_this_version_does_not_know_is_refused(tmp_path):
    root = fakerun.make_run(str(tmp_path / "r"), repeats=1, failed=False)
    path = os.path.join(root, "cells/baseline/munmap/clean/r1/cell.json")
    with open(path) as f:
        doc = json.load(f)
    doc["colour"] = "red"
    with open(path, "w") as f:
        json.dump(doc, f)
    with pytest.raises(records.UnreadableRun, match="CellRecord has no field colour"):
        load.load_run(root)
