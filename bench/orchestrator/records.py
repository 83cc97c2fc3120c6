"""The run's records: meta.json (the plan, the knobs as given, what ran),
its check when a run resumes, the kernels' files copied into the run,
each boot's cell.json, and the .latest pointer."""
import json
import os
import platform
import re
import shutil
import subprocess
import time

from plan import knobs
from plan.model import BuildRecord, CellRecord, Meta, RecordError, read, write

from .say import Refused


def _first_line(cmd):
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except OSError:
        return ""
    return (proc.stdout or proc.stderr).splitlines()[0] if (proc.stdout or proc.stderr) else ""


def tools():
    """cyclictest's and stress-ng's versions, as the guest image has them."""
    sng = _first_line(["stress-ng", "--version"]).split()
    return "%s; stress-ng %s" % (_first_line(["cyclictest", "--help"]), sng[2] if len(sng) > 2
                                 else "?")


def _host_cpu():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def mmlat_commit():
    """The commit of the mmlat checkout that runs, "-dirty" when tracked
    files differ from it; "" outside a git checkout."""
    def git(*args):
        return subprocess.run(["git", "-C", knobs.ROOT, *args], capture_output=True, text=True)
    try:
        head = git("rev-parse", "--verify", "HEAD")
        if head.returncode:
            return ""
        dirty = git("diff", "--quiet", "HEAD", "--").returncode != 0
    except OSError:
        return ""
    return head.stdout.strip() + ("-dirty" if dirty else "")


def _version_key(v):
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", v)]


def new_meta(entry, machine, configs, build, images, versions):
    """The Meta of a new run; images: its Images, made."""
    kernel_versions = set()
    for v in entry.plan.variant_names:
        kernel_versions.add(read(os.path.join(build.kernel(v), "build.json"),
                                 BuildRecord).kernel_version)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    return Meta(plan=entry.plan, knobs=knobs.run_knobs(entry.values),
                started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                accel=machine.accel, smp=machine.smp, jobs=machine.jobs,
                configs={n: sha for n, (_, sha) in configs.items()}, untested=entry.untested,
                kernel_version=" ".join(sorted(kernel_versions, key=_version_key)),
                initramfs_sha256=images.base_sha256(),
                images=images.booted(entry.plan.variant_names), qemu=machine.qemu,
                qemu_binary=machine.qemu_binary, versions=versions, tools=tools(),
                host_cpu=_host_cpu(), host_cpus=os.cpu_count(), host_load_at_start=load,
                mmlat_commit=mmlat_commit())


def check_resume(run_id, path, entry, machine, configs):
    """The recorded Meta of a run that resumes, if it was measured as this
    one would be; else Refused naming what differs."""
    try:
        meta = read(path, Meta)
    except (ValueError, RecordError) as e:
        raise Refused("run %s was written by another version of mmlat (%s); start a new "
                      "RUN_ID" % (run_id, e)) from None
    plan = entry.plan
    if meta.accel != machine.accel:
        raise Refused("run %s was measured with another accelerator; start a new RUN_ID rather "
                      "than mixing modes" % run_id)
    if meta.smp != machine.smp or meta.qemu != machine.qemu:
        raise Refused("run %s was measured with another SMP or QEMU; start a new RUN_ID rather "
                      "than mixing them" % run_id)
    for n, (_, sha) in configs.items():
        if n in meta.configs and meta.configs[n] != sha:
            raise Refused("run %s was measured with another kernel config for '%s'; start a new "
                          "RUN_ID rather than mixing configs" % (run_id, n))
    if (meta.plan.repeat == "auto") != (plan.repeat == "auto"):
        raise Refused("run %s was measured with REPEAT=%s; start a new RUN_ID rather than "
                      "mixing a fixed REPEAT with REPEAT=auto" % (run_id, meta.knobs["REPEAT"]))
    if meta.plan.trace != plan.trace:
        raise Refused("run %s was measured with another TRACE; start a new RUN_ID rather than "
                      "mixing instrumentations" % run_id)
    if meta.plan.calibration != plan.calibration:
        raise Refused("run %s was calibrated with another CALIB or CALIB_WORKLOADS; start a new "
                      "RUN_ID" % run_id)
    # The report reads the sweeps and the steps from meta.json: one run,
    # one SWEEP and one STEPS.
    if meta.plan.sweeps != plan.sweeps:
        raise Refused("run %s was measured with SWEEP='%s'; start a new RUN_ID rather than "
                      "changing its sweeps" % (run_id, meta.knobs["SWEEP"]))
    if meta.plan.steps != plan.steps:
        raise Refused("run %s was measured with STEPS=%s; start a new RUN_ID rather than "
                      "changing its steps" % (run_id, meta.knobs["STEPS"]))
    return meta


def copy_kernels(run, build, variants):
    """Each variant's build.json, System.map, config and fragments into the
    run, which the analysis reads."""
    for v in variants:
        os.makedirs(run.kernel(v), exist_ok=True)
        for name in ("build.json", "System.map", "config", "fragments.config"):
            src = os.path.join(build.kernel(v), name)
            if os.path.exists(src):
                shutil.copyfile(src, os.path.join(run.kernel(v), name))


def write_meta(run, meta):
    try:
        write(run.meta, meta)
    except OSError as e:
        raise Refused("cannot write %s (%s)" % (run.meta, e)) from None


def record_boot(run, record, staging):
    """The boot's cell.json, then the boot into place; False when the host
    could not (a full disk), its staging folder removed."""
    try:
        os.remove(os.path.join(staging, "job.json"))
        write(os.path.join(staging, "cell.json"), record)
        os.rename(staging, run.boot(record.boot))
        return True
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        return False


def failed_boots(run):
    """[(boot path, cause)] of every failed boot of the run."""
    out = []
    for root, dirs, files in sorted(os.walk(run.cells)):
        dirs.sort()
        if "cell.json" in files and not os.path.basename(root).startswith("."):
            with open(os.path.join(root, "cell.json")) as f:
                rec = CellRecord.from_json(json.load(f))
            if rec.result.status != "ok":
                out.append((rec.boot.path, rec.result.cause))
    return out


def point_latest(results_dir, run_dir):
    tmp = os.path.join(results_dir, ".latest.tmp")
    with open(tmp, "w") as f:
        f.write(run_dir + "\n")
    os.replace(tmp, os.path.join(results_dir, ".latest"))
