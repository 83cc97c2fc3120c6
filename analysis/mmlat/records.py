"""A run's records (meta.json, cell.json, build.json), read through the
dataclasses the orchestrator writes them with (bench/plan/model.py,
format plan.model.FORMAT).

Format 3, the records bench/run-matrix.sh wrote (no "format" key; meta.json
with "knobs" and "boots"), is upgraded here, on the way in; anything older
is refused, naming what it is."""
import json
import os

from plan import calib
from plan.model import (FORMAT, Boot, BootResult, BuildRecord, Calibration, Cell, CellRecord,
                        Meta, Plan, RecordError, Round, Step, Sweep, Variant)

PREVIOUS = 3


class UnreadableRun(ValueError):
    """A run folder or dump this analysis cannot read; the message says why."""


def _json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise UnreadableRun("%s: %s" % (path, e.strerror)) from None
    except ValueError as e:
        raise UnreadableRun("%s: not JSON (%s)" % (path, e)) from None


def _read(path, cls, upgrade):
    doc = _json(path)
    try:
        if "format" not in doc:
            doc = upgrade(doc)
        return cls.from_json(doc)
    except KeyError as e:
        raise UnreadableRun("%s: no %s" % (path, e)) from None
    except (RecordError, TypeError, ValueError) as e:
        raise UnreadableRun("%s: %s" % (path, e)) from None


def read_build(path):
    return _read(path, BuildRecord, _upgrade_build)


def read_cell(path):
    return _read(path, CellRecord, _upgrade_cell)


def read_meta(run_dir):
    """The run's Meta; UnreadableRun naming the format it cannot read."""
    path = os.path.join(run_dir, "meta.json")
    return _read(path, Meta, lambda doc: _upgrade_meta(doc, run_dir))


def _refuse(what, why):
    raise RecordError("%s has no \"format\" and %s: this analysis reads format %d and "
                      "upgrades format %d (bench/run-matrix.sh's)" % (what, why, FORMAT, PREVIOUS))


def _upgrade_build(doc):
    release = doc["kernel_release"]
    return BuildRecord(
        variant=doc["variant"], series=doc["series"], series_sha256=doc["series_sha256"],
        source=doc.get("source", "tree:" + ".".join(release.split(".")[:2])),
        kernel_version=doc.get("kernel_version", release.split("-mmlat-")[0]),
        kernel_release=release, config_sha256=doc["config_sha256"],
        build_seconds=doc["build_seconds"], ccache_hits=doc["ccache_hits"],
        ccache_misses=doc["ccache_misses"], obj_dir=doc["obj_dir"],
        source_package=doc.get("source_package"), ksrc=doc.get("ksrc", ""),
        ref=doc.get("ref", ""), commit=doc.get("commit", ""),
        describe=doc.get("describe", "")).to_json()


def _upgrade_cell(doc):
    if "boot" not in doc:
        _refuse("cell.json", "no boot kind (a run of one boot per cell)")
    cmdline = doc.get("qemu_cmdline", "")
    boot = Boot(Cell(doc["variant"], doc["workload"]), doc["boot"], doc["repeat"], 1)
    result = BootResult(status=doc["status"], cause=doc.get("cause") or "",
                        wall_seconds=float(doc["wall_seconds"]),
                        guest_seconds_to_runner=doc.get("guest_seconds_to_runner"),
                        accel=doc["accel"], qemu_binary=doc.get("qemu_binary", ""),
                        qemu=doc.get("qemu", ""), qemu_cmdline=cmdline)
    return CellRecord(boot=boot, calibrated="mmlat.calib=" in cmdline, smp=doc.get("smp", 1),
                      config_sha256=doc["config_sha256"],
                      series_sha256=doc.get("series_sha256", ""), executor="local", job_id="",
                      result=result).to_json()


def _variant(name, run_dir):
    """A format-3 run's variant, from its kernels/<name>/build.json."""
    k = read_build(os.path.join(run_dir, "kernels", name, "build.json"))
    return Variant(name=name, spec=name, source=k.source,
                   version=".".join(k.kernel_version.split(".")[:2]), ref=k.ref,
                   series=tuple(k.series), instrumentation=0)


def _upgrade_meta(doc, run_dir):
    if "knobs" not in doc or "boots" not in doc:
        _refuse("meta.json", "no \"knobs\" or \"boots\" (format 2 or older, before mmlat "
                "recorded them)")
    request = doc.get("calib") or ""
    calibration = Calibration(request=request, windows=calib.parse(request),
                              workloads=doc.get("calib_workloads", "").split()) \
        if request else None
    variants = [_variant(n, run_dir) for n in doc["variants"]]
    repeat = int(doc["repeat"])
    plan = Plan(run_id=doc["run_id"], variants=variants,
                steps=[Step(**s) for s in doc.get("steps", [])],
                workloads=doc["workloads"].split(),
                sweeps=[Sweep(**s) for s in doc.get("sweeps", [])], boots=doc["boots"],
                trace=doc["trace"], calibration=calibration, duration_s=doc["duration_s"],
                repeat=repeat,
                rounds=[Round(index=1, first=1, last=repeat, reason="REPEAT=%d" % repeat)],
                flavor=doc.get("flavor", "bench"), cross=doc.get("cross") == "yes",
                executor="local")
    config = doc.get("config_sha256", "")
    return Meta(plan=plan, knobs=doc["knobs"], started=doc.get("started", ""),
                accel=doc["accel"], smp=doc.get("smp", 1), jobs=doc.get("jobs", 1),
                configs=doc.get("configs") or {v.name: config for v in variants},
                untested=doc.get("untested", {}), kernel_version=doc.get("kernel_version", ""),
                initramfs_sha256=doc.get("initramfs_sha256", ""), qemu=doc.get("qemu", ""),
                qemu_binary=doc.get("qemu_binary", ""), tools=doc.get("tools", ""),
                host_cpu=doc.get("host_cpu", ""), host_cpus=doc.get("host_cpus", 0),
                host_load_at_start=doc.get("host_load_at_start", "")).to_json()
