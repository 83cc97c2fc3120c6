"""Build a small results/<run-id>/ tree in the documented layout."""
import json
import os

import numpy as np

SYSMAP = """ffffffff81000000 T _stext
ffffffff81001000 T zap_pte_range
ffffffff81002000 T copy_pte_range
ffffffff81003000 T _raw_spin_lock
ffffffff81004000 T __do_softirq
ffffffff81005000 T irq_exit_rcu
ffffffff81006000 T mmlat_calib_preempt
ffffffff81007000 T unmap_page_range
"""


def _hist_file(hist):
    rows = sorted(hist)
    lines = ["%06d %06d" % (k, hist.get(k, 0)) for k in range(0, 400)]
    lines.append("# Total: %09d" % sum(hist.values()))
    lines.append("# Min Latencies: %05d" % rows[0])
    lines.append("# Avg Latencies: %05d" % int(sum(k * v for k, v in hist.items()) / sum(hist.values())))
    lines.append("# Max Latencies: %05d" % rows[-1])
    lines.append("# Histogram Overflows: 00000")
    lines.append("# Histogram Overflow at cycle number:")
    lines.append("# Thread 0:")
    return "# Histogram\n" + "\n".join(lines) + "\n"


def _trigger(entries):
    out = ["# event histogram", "#"]
    hits = 0
    for lat, c, p, n in entries:
        out.append("{ lat: %10d, caller: %10d, parent: %10d } hitcount: %10d" % (lat, c, p, n))
        hits += n
    out += ["", "Totals:", "    Hits: %d" % hits, "    Entries: %d" % len(entries), "    Dropped: 0"]
    return "\n".join(out) + "\n"


def make_run(root, shift=0, repeats=3, accel=("tcg", "tcg"), seed=0, failed=True,
             variants=("baseline", "patched"), workloads=("munmap", "fork")):
    rng = np.random.default_rng(seed)
    meta = {"kernel_version": "6.1.0-test", "accel": accel[0], "config_sha256": "c0ffee",
            "duration_s": 30, "repeat": repeats,
            "series": {"baseline": ["pre-series"], "patched": ["pre-series", "mm-preempt-v10"]},
            "series_sha256": {"pre-series": "aa11", "mm-preempt-v10": "bb22"}}
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "meta.json"), "w") as f:
        json.dump(meta, f)
    for vi, v in enumerate(variants):
        km = os.path.join(root, "kernels", v)
        os.makedirs(km, exist_ok=True)
        with open(os.path.join(km, "System.map"), "w") as f:
            f.write(SYSMAP)
        for w in workloads:
            for r in range(repeats):
                cd = os.path.join(root, "cells", v, w, "r%d" % r)
                g = os.path.join(cd, "guest")
                os.makedirs(os.path.join(g, "windows"))
                os.makedirs(os.path.join(g, "tracer"))
                st = "ok"
                cell = {"status": st, "accel": accel[vi], "config_sha256": "c0ffee"}
                if failed and v == variants[-1] and w == workloads[-1] and r == repeats - 1:
                    cell = dict(cell, status="failed", cause="guest timed out after 600 s")
                with open(os.path.join(cd, "cell.json"), "w") as f:
                    json.dump(cell, f)
                s = shift if vi == 1 else 0
                a = np.round(rng.gamma(4, 5, 4000) + s).astype(int)
                a = np.clip(a, 0, 399)
                vals, cnt = np.unique(a, return_counts=True)
                with open(os.path.join(g, "cyclictest.hist"), "w") as f:
                    f.write(_hist_file(dict(zip(vals.tolist(), cnt.tolist()))))
                zap = 1000 - (500 if vi == 1 and shift else 0)
                ent = [(3, 0x3000, 0x1000, 500), (zap, 0x3000, 0x1000, 2),
                       (40, 0x3000, 0x2000, 20), (80, 0x4000, 0x5000, 5)]
                with open(os.path.join(g, "windows", "preemptoff.hist"), "w") as f:
                    f.write(_trigger(ent))
                with open(os.path.join(g, "windows", "irqsoff.hist"), "w") as f:
                    f.write(_trigger([(10, 0x4000, 0x5000, 50)]))
                with open(os.path.join(g, "tracer", "preemptoff.max"), "w") as f:
                    f.write("%d\n" % zap)
                with open(os.path.join(g, "workload.txt"), "w") as f:
                    f.write("workload=%s duration_s=30 ops=3000 bytes=100 ops_per_s=%d\n" % (w, 100 + 10 * vi))
                with open(os.path.join(g, "status"), "w") as f:
                    f.write("ok\n")
    return root
