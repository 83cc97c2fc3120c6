#!/usr/bin/python3
"""Put one variant of two runs side by side, as two variants of one run,
so that make report's statistics compare them: an A/A check of a harness
change (JOBS=1 against JOBS=2, say), where the kernel is the same and any
difference the report calls significant is the harness's.

    bench/aa-pair.py RUN_A RUN_B VARIANT OUT_RUN [--names A B]

OUT_RUN gets symlinks to the two runs' cells and kernels of VARIANT, named
A and B (default: the runs' folder names), and RUN_A's meta.json with those
two as its variants. Then:

    PYTHONPATH=analysis /usr/bin/python3 -m mmlat summary OUT_RUN
    PYTHONPATH=analysis /usr/bin/python3 -m mmlat report OUT_RUN --baseline A --patched B
"""
import argparse
import json
import os
import sys


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
    for sub in ("cells", "kernels"):
        os.makedirs(os.path.join(a.out, sub))
        for run, name in zip(runs, names):
            os.symlink(os.path.join(run, sub, a.variant), os.path.join(a.out, sub, name))
    with open(os.path.join(runs[0], "meta.json")) as f:
        meta = json.load(f)
    meta["variants"] = names
    meta["aa_pair"] = {name: run for name, run in zip(names, runs)}
    with open(os.path.join(a.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
