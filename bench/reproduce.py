"""make reproduce: rerun the boots of a committed reference and say, field
by field, whether this machine gets the same numbers, and which of the
inputs (kernel, guest image, QEMU, package versions) differ.

Under tcg-icount with one vCPU a boot is a function of its kernel, its
initramfs, its job (the seed included) and the emulator: two boots of one
seed are byte-identical (tests/integration/test_reproducible.py). So a
reference made on one machine holds on another exactly when the inputs do;
where a value differs, the differing inputs say why.

  PYTHONPATH=analysis:bench python3 bench/reproduce.py [--reference FILE] [--run-id ID]
      rerun the reference's job through the orchestrator and compare
  ... --run RUN_DIR     compare a run of the reference's job instead
  ... --record [--job JSON]   rerun, and write the reference

The reference (REFERENCE, JSON) holds the job, what it ran on (Inputs)
and per boot the values of boot_values(). Exit 0 when every boot value is
identical, 1 when one differs, 2 when the boots could not run."""
import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field

from mmlat import endpoints, load, parse, records, stats
from orchestrator.images import sha256
from plan import knobs
from plan.model import Record, Versions

REFERENCE = os.path.join(knobs.ROOT, "tests", "reproduce", "reference.json")


@dataclass(frozen=True)
class Job(Record):
    """What the reference boots, every knob that decides it pinned, so that
    a change of a default does not change the reproduction."""
    variant: str
    tree: str
    workloads: list[str]
    repeat: int
    duration: int
    trace: str

    def env(self, run_id, results_dir):
        return dict(os.environ, PYTHONPATH="analysis:bench", VARIANTS=self.variant,
                    TREE=self.tree, WORKLOADS=" ".join(self.workloads), SWEEP="",
                    STEPS="all", REPEAT=str(self.repeat), DURATION=str(self.duration),
                    TRACE=self.trace, KSRC="", CROSS="no", CALIB="", ACCEL="tcg-icount",
                    SMP="1", ICOUNT_QEMU="", FLAVOR="bench", RUN_ID=run_id,
                    RESULTS_DIR=results_dir)


# The inputs compared as a whole, each a field of Inputs; versions are
# compared package by package.
INPUT_FIELDS = ("config_sha256", "bzimage_sha256", "system_map_sha256",
                "base_initramfs_sha256", "initrd_sha256", "qemu")


@dataclass(frozen=True)
class Inputs(Record):
    """What a run's boots were made from."""
    config_sha256: str
    bzimage_sha256: str
    system_map_sha256: str
    base_initramfs_sha256: str
    initrd_sha256: str
    qemu: str                   # the icount QEMU's --version line
    versions: Versions

    def differences(self, other):
        """(name, this, other) for each input that differs; the package
        versions one by one."""
        out = [(k, getattr(self, k), getattr(other, k)) for k in INPUT_FIELDS
               if getattr(self, k) != getattr(other, k)]
        mine, theirs = self.versions.packages, other.versions.packages
        for p in sorted(set(mine) | set(theirs)):
            if mine.get(p) != theirs.get(p):
                out.append(("package " + p, mine.get(p, "(none)"), theirs.get(p, "(none)")))
        return out


@dataclass(frozen=True)
class BootValues(Record):
    """One boot's values: key is workload/boot/rN."""
    key: str
    values: dict[str, int | float | str]


@dataclass
class Reference(Record):
    job: Job
    inputs: Inputs
    boots: list[BootValues] = field(default_factory=list)
    made: str = ""


def fail(message):
    sys.stderr.write("mmlat: error: %s\n" % message)
    raise SystemExit(2)


def run_boots(job, run_id, results_dir):
    """The job's boots through the orchestrator (kernel, images, QEMU as
    make bench makes them); returns the run directory."""
    proc = subprocess.run(["/usr/bin/python3", "-m", "orchestrator", "run"],
                          env=job.env(run_id, results_dir), cwd=knobs.ROOT)
    if proc.returncode:
        fail("the reference boots did not run (the orchestrator's exit status %d)"
             % proc.returncode)
    return os.path.join(results_dir, run_id)


def inputs_of(run_dir, variant):
    meta = records.read_meta(run_dir)
    if variant not in meta.images:
        fail("%s records no images of %s (a run made before mmlat recorded them)"
             % (run_dir, variant))
    image = meta.images[variant]
    return Inputs(config_sha256=meta.configs[variant], bzimage_sha256=image.bzimage_sha256,
                  system_map_sha256=sha256(os.path.join(run_dir, "kernels", variant,
                                                        "System.map")),
                  base_initramfs_sha256=meta.initramfs_sha256,
                  initrd_sha256=image.initrd_sha256, qemu=meta.qemu, versions=meta.versions)


def _counts(recs):
    """The workload driver's counts, summed over its records."""
    out = {}
    for key in ("ops", "pages", "pages_per_s", "ops_per_s"):
        v = [r[key] for r in recs if isinstance(r.get(key), (int, float))]
        if v:
            out["workload " + key] = sum(v)
    return out


def boot_values(run_dir, trace, variant, workload, boot, rep):
    """The values a reproduction compares, of one boot: hashes of the
    guest's raw files (byte for byte) and the figures read from them."""
    cell_dir = os.path.join(run_dir, "cells", variant, workload, boot, "r%d" % rep)
    guest = os.path.join(cell_dir, "guest")
    record = records.read_cell(os.path.join(cell_dir, "cell.json"))
    values = {"status": record.result.status}
    for name in ("cyclictest.hist", "workload.txt", "dmesg.txt",
                 "windows/windows.txt", "windows/locks.txt"):
        path = os.path.join(guest, name)
        if os.path.exists(path):
            values[name + " sha256"] = sha256(path)
    if record.result.status != "ok":
        return values
    cell = load.load_cell(run_dir, record, cell_dir, trace)
    if boot == "clean":
        summary = stats.summarize_hist(cell["lat_hist"])
        for name in ("count", "p50", "p99", "p99.9", "max"):
            values["cyclictest %s" % name] = summary[name]
    values.update(_counts(cell["workload_recs"]))
    windows = os.path.join(guest, "windows", "windows.txt")
    if boot == "traced" and os.path.exists(windows):
        kinds = parse.parse_windows(windows)["kinds"]
        for kind, k in sorted(kinds.items()):
            values["%s windows" % kind] = k["n"]
            values["%s max ns" % kind] = k["max_ns"]
        for e in endpoints.primary(workload):
            if e.figure in ("windows", "locks"):
                values[e.name + " max us"] = e.value(cell)
    return values


def boots_of(run_dir, job):
    return [BootValues("%s/%s/r%d" % (w, b, r),
                       boot_values(run_dir, job.trace, job.variant, w, b, r))
            for r in range(1, job.repeat + 1) for w in job.workloads
            for b in ("clean", "traced") if b == "clean" or job.trace != "none"]


def compare(ref, now_inputs, now_boots):
    """The comparison as lines, and whether every boot value is identical."""
    lines = ["Inputs (reference made %s):" % ref.made]
    diffs = ref.inputs.differences(now_inputs)
    differing = [d[0] for d in diffs]
    for name in INPUT_FIELDS:
        lines.append("  %-24s %s" % (name, "different" if name in differing else "identical"))
    versions = [d for d in diffs if d[0] not in INPUT_FIELDS]
    if versions:
        lines.append("  versions that differ (reference -> here):")
        lines += ["    %s: %s -> %s" % d for d in versions]
    else:
        lines.append("  versions                 identical (%d packages)"
                     % len(ref.inputs.versions.packages))
    now = {b.key: b.values for b in now_boots}
    same = total = 0
    lines.append("Boots (field: identical, or reference -> here):")
    for b in ref.boots:
        got = now.get(b.key, {})
        differ = [(k, v, got.get(k)) for k, v in b.values.items() if got.get(k) != v]
        total += len(b.values)
        same += len(b.values) - len(differ)
        if not differ:
            lines.append("  %-24s identical (%d fields)" % (b.key, len(b.values)))
            continue
        lines.append("  %-24s %d of %d fields differ:" % (b.key, len(differ), len(b.values)))
        lines += ["    %s: %s -> %s" % d for d in differ]
    lines.append("%d of %d boot values identical%s" % (
        same, total, "" if same == total else
        "; inputs that differ: %s" % (", ".join(differing) or "none")))
    return lines, same == total


def read_reference(path):
    with open(path) as f:
        return Reference.from_json(json.load(f))


def write_reference(path, ref):
    with open(path, "w") as f:
        json.dump(ref.to_json(), f, indent=1)
        f.write("\n")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="reproduce", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", default=REFERENCE)
    ap.add_argument("--record", action="store_true",
                    help="write the reference from a fresh run instead of comparing")
    ap.add_argument("--run-id", default="reproduce-" + time.strftime("%Y%m%d-%H%M%S"))
    ap.add_argument("--results-dir", default=os.environ.get("RESULTS_DIR",
                                                            os.path.join(knobs.ROOT, "results")))
    ap.add_argument("--job", help="with --record: the job as JSON (fields of Job)")
    ap.add_argument("--run", help="compare this run (of the reference's job) instead of booting")
    a = ap.parse_args(argv)
    results_dir = os.path.abspath(a.results_dir)
    if a.record:
        job = Job.from_json(json.loads(a.job)) if a.job else read_reference(a.reference).job
        run_dir = run_boots(job, a.run_id, results_dir)
        host = records.read_meta(run_dir).host_cpu
        ref = Reference(job, inputs_of(run_dir, job.variant), boots_of(run_dir, job),
                        made="%s on %s" % (time.strftime("%Y-%m-%d", time.gmtime()), host))
        write_reference(a.reference, ref)
        print("reference of %d boots written to %s" % (len(ref.boots), a.reference))
        return 0
    ref = read_reference(a.reference)
    run_dir = a.run or run_boots(ref.job, a.run_id, results_dir)
    lines, identical = compare(ref, inputs_of(run_dir, ref.job.variant),
                               boots_of(run_dir, ref.job))
    text = "\n".join(lines) + "\n"
    with open(os.path.join(run_dir, "reproduce.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
