#!/usr/bin/python3
"""make reproduce: rerun the boots of a committed reference and say, field
by field, whether this machine gets the same numbers, and which of the
inputs (kernel, guest image, QEMU, package versions) differ.

Under tcg-icount with one vCPU a boot is a function of its kernel, its
initramfs, its job (the seed included) and the emulator: two boots of one
seed are byte-identical (tests/integration/test_reproducible.py). So a
reference made on one machine holds on another exactly when the inputs do;
where a value differs, the differing inputs say why.

  bench/reproduce.py [--reference FILE] [--run-id ID]   rerun and compare
  bench/reproduce.py --run RUN_DIR [--reference FILE]   compare a run of the
                                                        reference's job
  bench/reproduce.py --record [--reference FILE]        rerun, write FILE

The reference (REFERENCE, JSON) holds the job (variant, tree, workloads,
repeats, duration, TRACE), what it ran on (config, kernel, System.map and
initramfs sha256, QEMU, the versions of bench/versions.sh) and per boot
the values of boot_values(). Exit 0 when every boot value is identical,
1 when one differs, 2 when the boots could not run.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "analysis"))

from mmlat import endpoints, load, parse, stats  # noqa: E402

REFERENCE = os.path.join(ROOT, "tests", "reproduce", "reference.json")
PYTHON = "/usr/bin/python3"


@dataclass
class Job:
    """What the reference boots: run-matrix knobs, pinned so that a change
    of a default does not change the reproduction."""
    variant: str
    tree: str
    workloads: list
    repeat: int
    duration: int
    trace: str

    def env(self, run_id, results_dir):
        return dict(os.environ, VARIANTS=self.variant, TREE=self.tree,
                    WORKLOADS=" ".join(self.workloads), SWEEP="", STEPS="all",
                    REPEAT=str(self.repeat), DURATION=str(self.duration), TRACE=self.trace,
                    KSRC="", CROSS="no", CALIB="", ACCEL="tcg-icount", SMP="1", RUN_ID=run_id,
                    RESULTS_DIR=results_dir, FLAVOR="bench")


# The inputs compared as a whole, each a field of Inputs; versions are
# compared package by package.
INPUT_FIELDS = ("config_sha256", "bzimage_sha256", "system_map_sha256",
                "base_initramfs_sha256", "initrd_sha256", "qemu")


@dataclass
class Inputs:
    """What a run's boots were made from."""
    config_sha256: str
    bzimage_sha256: str
    system_map_sha256: str
    base_initramfs_sha256: str
    initrd_sha256: str
    qemu: str
    versions: dict

    def differences(self, other):
        """(name, this, other) for each input that differs; the package
        versions one by one."""
        out = [(k, getattr(self, k), getattr(other, k)) for k in INPUT_FIELDS
               if getattr(self, k) != getattr(other, k)]
        if self.versions.get("icount_qemu") != other.versions.get("icount_qemu"):
            out.append(("icount QEMU package", self.versions.get("icount_qemu"),
                        other.versions.get("icount_qemu")))
        mine = self.versions.get("packages", {})
        theirs = other.versions.get("packages", {})
        for p in sorted(set(mine) | set(theirs)):
            if mine.get(p) != theirs.get(p):
                out.append(("package " + p, mine.get(p, "(none)"), theirs.get(p, "(none)")))
        return out


@dataclass
class Boot:
    """One boot's values: key is workload/boot/rN, values {field: value}."""
    key: str
    values: dict


@dataclass
class Reference:
    job: Job
    inputs: Inputs
    boots: list = field(default_factory=list)
    made: str = ""

    def to_json(self):
        return json.dumps(asdict(self), indent=1, sort_keys=False) + "\n"

    @classmethod
    def from_json(cls, text):
        d = json.loads(text)
        return cls(job=Job(**d["job"]), inputs=Inputs(**d["inputs"]),
                   boots=[Boot(**b) for b in d["boots"]], made=d.get("made", ""))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run_boots(job, run_id, results_dir):
    """The job's boots through bench/run-matrix.sh (kernel, images, QEMU as
    make bench makes them); returns the run directory."""
    proc = subprocess.run(["bash", os.path.join(ROOT, "bench", "run-matrix.sh")],
                          env=job.env(run_id, results_dir), cwd=ROOT)
    if proc.returncode:
        raise SystemExit("mmlat: error: the reference boots did not run (run-matrix exit %d)"
                         % proc.returncode)
    return os.path.join(results_dir, run_id)


def inputs_of(run_dir, variant):
    with open(os.path.join(run_dir, "meta.json")) as f:
        meta = json.load(f)
    images = meta["images"][variant]
    return Inputs(config_sha256=meta["configs"][variant],
                  bzimage_sha256=images["bzimage_sha256"],
                  system_map_sha256=sha256(os.path.join(run_dir, "kernels", variant,
                                                        "System.map")),
                  base_initramfs_sha256=meta["initramfs_sha256"],
                  initrd_sha256=images["initrd_sha256"],
                  qemu=meta["qemu"], versions=meta["versions"])


def _counts(recs):
    """The workload driver's counts, summed over its records."""
    out = {}
    for key in ("ops", "pages", "pages_per_s", "ops_per_s"):
        v = [r[key] for r in recs if isinstance(r.get(key), (int, float))]
        if v:
            out["workload " + key] = sum(v)
    return out


def boot_values(run_dir, variant, workload, boot, rep):
    """The values a reproduction compares, of one boot: hashes of the
    guest's raw files (byte for byte) and the figures read from them."""
    cell_dir = os.path.join(run_dir, "cells", variant, workload, boot, "r%d" % rep)
    guest = os.path.join(cell_dir, "guest")
    with open(os.path.join(cell_dir, "cell.json")) as f:
        status = json.load(f)["status"]
    values = {"status": status}
    for name in ("cyclictest.hist", "workload.txt", "dmesg.txt",
                 "windows/windows.txt", "windows/locks.txt"):
        path = os.path.join(guest, name)
        if os.path.exists(path):
            values[name + " sha256"] = sha256(path)
    if status != "ok":
        return values
    cell = load.load_cell(run_dir, variant, workload, boot, rep, cell_dir)
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
            if e.boot == "traced":
                values[e.name + " max us"] = e.value(cell)
    return values


def boots_of(run_dir, job):
    return [Boot("%s/%s/r%d" % (w, b, r), boot_values(run_dir, job.variant, w, b, r))
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
        lines.append("  versions                 identical (%d packages and the icount QEMU)"
                     % len(ref.inputs.versions.get("packages", {})))
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


def main(argv=None):
    ap = argparse.ArgumentParser(prog="reproduce", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", default=REFERENCE)
    ap.add_argument("--record", action="store_true",
                    help="write the reference from a fresh run instead of comparing")
    ap.add_argument("--run-id", default="reproduce-" + time.strftime("%Y%m%d-%H%M%S"))
    ap.add_argument("--results-dir", default=os.environ.get("RESULTS_DIR",
                                                            os.path.join(ROOT, "results")))
    ap.add_argument("--job", help="with --record: the job as JSON (fields of Job)")
    ap.add_argument("--run", help="compare this run (of the reference's job) instead of booting")
    a = ap.parse_args(argv)
    results_dir = os.path.abspath(a.results_dir)
    if a.record:
        if a.job:
            job = Job(**json.loads(a.job))
        else:
            with open(a.reference) as f:
                job = Reference.from_json(f.read()).job
        run_dir = run_boots(job, a.run_id, results_dir)
        with open(os.path.join(run_dir, "meta.json")) as f:
            host = json.load(f).get("host_cpu", "an unknown CPU")
        ref = Reference(job, inputs_of(run_dir, job.variant), boots_of(run_dir, job),
                        made="%s on %s" % (time.strftime("%Y-%m-%d", time.gmtime()), host))
        with open(a.reference, "w") as f:
            f.write(ref.to_json())
        print("reference of %d boots written to %s" % (len(ref.boots), a.reference))
        return 0
    with open(a.reference) as f:
        ref = Reference.from_json(f.read())
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
