#!/usr/bin/python3
"""Between-boot noise of an A/A run: for every workload of one variant, the
coefficient of variation (sample sd / mean) over its ok boots of the
primary endpoints' per-boot values: cyclictest p99.9 and max and
throughput (ops/s and pages/s) from the clean boots, the longest
preempt-off window per class from the traced boots; and the sd of their
logarithms, what a test on the log scale sees.

    PYTHONPATH=analysis /usr/bin/python3 bench/aa-noise.py RUN_DIR [VARIANT] [--json OUT]

Prints a markdown table.  A class is shown when at least half the traced
boots have a window of it.  "boots for 10 %" is the normal approximation
of the boots a side that a two-sided test at 5 % on the log scale needs
to detect a 10 % change with 80 % power, 2 (1.96 + 0.84)^2 sd(ln)^2 /
ln(1.1)^2 (no multiplicity correction: the statistics choose that)."""
import argparse
import json
import math
import sys

import numpy as np

from mmlat import load, parse, stats

TRACER = "preemptoff"


def cv(values):
    a = np.asarray([v for v in values if v is not None], dtype=float)
    if a.size < 2 or a.mean() == 0:
        return None
    out = {"n": int(a.size), "mean": float(a.mean()), "cv": float(a.std(ddof=1) / a.mean()),
           "distinct": int(np.unique(a).size), "min": float(a.min()), "max": float(a.max())}
    if (a > 0).all():
        out["sd_log"] = float(np.log(a).std(ddof=1))
        out["boots_for_10pct"] = boots_for(out["sd_log"], 0.10)
    return out


def boots_for(sd_log, change):
    """Boots a side for a two-sided 5 % test at 80 % power (normal
    approximation, log scale); at least 2."""
    return max(2, math.ceil(2 * (1.96 + 0.84) ** 2 * sd_log ** 2 / math.log1p(change) ** 2))


def workload_noise(run, variant, w):
    clean = load.ok_cells(run, variant, w, "clean")
    traced = load.ok_cells(run, variant, w, "traced")
    lat = [stats.summarize_hist(c["lat_hist"]) for c in clean]
    rows = {
        "cyclictest p99.9": cv([s["p99.9"] for s in lat]),
        "cyclictest max": cv([s["max"] for s in lat]),
        "ops/s": cv([c["ops_per_s"] for c in clean]),
        "pages/s": cv([parse.workload_pages_rate(c["workload_recs"]) for c in clean]),
    }
    by_class = [c["windows"][TRACER]["by_class"] for c in traced]
    classes = sorted({k for b in by_class for k in b})
    rows["window max, all classes"] = cv([max((max(h) for h in b.values() if h), default=None)
                                          for b in by_class])
    for cls in classes:
        vals = [max(b[cls]) for b in by_class if b.get(cls)]
        if 2 * len(vals) >= len(by_class):
            rows["window max, " + cls] = cv(vals)
    return {"clean_boots": len(clean), "traced_boots": len(traced),
            "endpoints": {k: v for k, v in rows.items() if v is not None}}


def fmt(x, pct=True):
    if x is None:
        return "-"
    return "%.1f %%" % (100 * x) if pct else "%.3g" % x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("variant", nargs="?", default="baseline")
    ap.add_argument("--json", help="every endpoint and class, as JSON, into this file")
    ap.add_argument("--classes", default="i_mmap-lock,anon_vma-lock,pte-lock-zap,mmu-gather",
                    help="the window classes the table shows (the series' by default; "
                    "'all' for every one)")
    a = ap.parse_args()
    run = load.load_run(a.run, skip_unreadable=True)
    out = {"run": a.run, "variant": a.variant, "workloads": {}}
    print("| workload | endpoint | boots | mean | CV | sd(ln) | distinct values | boots for 10 % |")
    print("|---|---|---|---|---|---|---|---|")
    for w in load.workloads(run):
        n = workload_noise(run, a.variant, w)
        out["workloads"][w] = n
        for name, e in n["endpoints"].items():
            cls = name.partition("window max, ")[2]
            if cls and cls != "all classes" and a.classes != "all" \
                    and cls not in a.classes.split(","):
                continue
            print("| %s | %s | %d | %.4g | %s | %s | %d | %s |" % (
                w, name, e["n"], e["mean"], fmt(e["cv"]),
                fmt(e.get("sd_log"), pct=False), e["distinct"],
                e.get("boots_for_10pct", "-")))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
