#!/usr/bin/python3
"""Put one variant of two runs side by side, as two variants of one run,
so that make report's statistics compare them: an A/A check of a harness
change (JOBS=1 against JOBS=2, say, or one orchestrator against another),
where the kernel is the same and any difference the report calls
significant is the harness's.

    PYTHONPATH=analysis:bench /usr/bin/python3 bench/aa-pair.py RUN_A RUN_B VARIANT OUT_RUN \
        [--names A B]

OUT_RUN gets the two runs' boots and kernels of VARIANT, named A and B
(default: the runs' folder names): each boot's files as symlinks, its
cell.json and its kernel's build.json written anew under the new name;
and RUN_A's meta.json with those two as its variants (records of either
format the analysis reads, records.py). Then:

    PYTHONPATH=analysis:bench /usr/bin/python3 -m mmlat summary OUT_RUN
    PYTHONPATH=analysis:bench /usr/bin/python3 -m mmlat report OUT_RUN --baseline A --patched B
"""
import argparse
import os
import sys
from dataclasses import replace

from mmlat import records
from plan.model import Boot, Cell, write


def pair_boots(run, variant, out, name):
    """Every boot of run's variant under out/cells/name."""
    top = os.path.join(run, "cells", variant)
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if "cell.json" not in files:
            continue
        rec = records.read_cell(os.path.join(root, "cell.json"))
        dest = os.path.join(out, "cells", name, os.path.relpath(root, top))
        os.makedirs(dest)
        for f in sorted(os.listdir(root)):
            if f != "cell.json":
                os.symlink(os.path.join(root, f), os.path.join(dest, f))
        boot = Boot(Cell(name, rec.boot.cell.workload), rec.boot.kind, rec.boot.repeat,
                    rec.boot.round)
        write(os.path.join(dest, "cell.json"), replace(rec, boot=boot))


def pair_kernel(run, variant, out, name):
    top = os.path.join(run, "kernels", variant)
    dest = os.path.join(out, "kernels", name)
    os.makedirs(dest)
    for f in sorted(os.listdir(top)):
        if f != "build.json":
            os.symlink(os.path.join(top, f), os.path.join(dest, f))
    build = records.read_build(os.path.join(top, "build.json"))
    write(os.path.join(dest, "build.json"), replace(build, variant=name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run_a")
    ap.add_argument("run_b")
    ap.add_argument("variant")
    ap.add_argument("out")
    ap.add_argument("--names", nargs=2, metavar=("A", "B"))
    a = ap.parse_args()
    runs = [os.path.realpath(a.run_a), os.path.realpath(a.run_b)]
    names = a.names or [os.path.basename(r) for r in runs]
    if names[0] == names[1]:
        sys.exit("aa-pair: both sides are named %r: give --names" % names[0])
    for run in runs:
        if not os.path.isdir(os.path.join(run, "cells", a.variant)):
            sys.exit("aa-pair: %s has no cells of variant %r" % (run, a.variant))
    if os.path.exists(a.out):
        sys.exit("aa-pair: %s exists" % a.out)
    meta = records.read_meta(runs[0])
    [variant] = [v for v in meta.plan.variants if v.name == a.variant]
    for run, name in zip(runs, names):
        pair_boots(run, a.variant, a.out, name)
        pair_kernel(run, a.variant, a.out, name)
    meta.plan.variants = [replace(variant, name=name) for name in names]
    meta.plan.steps = []
    meta.configs = {name: meta.configs[a.variant] for name in names}
    write(os.path.join(a.out, "meta.json"), meta)


if __name__ == "__main__":
    main()
