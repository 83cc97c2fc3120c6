"""Build a small results/<run-id>/ tree in the documented layout:
cells/<variant>/<workload>/<clean|traced>/r<N>/.

The two boot kinds of a cell differ on purpose, so that a figure read from
the wrong kind shows: traced boots have cyclictest latencies
TRACED_LATENCY_US higher and a fraction TRACED_RATIO of the clean
throughput, and only traced boots have windows."""
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

# Clean throughput of variant i, repeat N: CLEAN_OPS[i] + N ops/s.
CLEAN_OPS = (100, 110)
# Traced throughput / clean, per variant; repeat 1 runs OUTLIER times that
# (so the median over repeats differs from the mean).
TRACED_RATIO = (0.13, 0.15)
OUTLIER = 3
TRACED_LATENCY_US = 150
# Module counters of every traced boot (TRACE=windows).
COUNTERS = {"unmatched": 3, "nested_begin": 2, "overflow": 1,
            "ptelock_lost": 2, "ptelock_discarded": 5}
SUB_BITS = 6


def clean_ops(vi, r):
    return CLEAN_OPS[vi] + r


def traced_ops(vi, r):
    return clean_ops(vi, r) * TRACED_RATIO[vi] * (OUTLIER if r == 1 else 1)


def bucket_lo(ns, sub_bits=SUB_BITS):
    """The lower bound of the module's log-linear bucket holding ns."""
    if ns < 1 << sub_bits:
        return ns
    return ns & ~((1 << (ns.bit_length() - 1 - sub_bits)) - 1)


def bucket_hi(lo, sub_bits=SUB_BITS):
    """The next bucket's lower bound."""
    return bucket_lo(lo + (1 << max(0, lo.bit_length() - 1 - sub_bits)), sub_bits)


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


def _buckets(values):
    """[(ns, n)] -> {bucket lo: n}"""
    out = {}
    for ns, n in values:
        out[bucket_lo(ns)] = out.get(bucket_lo(ns), 0) + n
    return out


def _pairs(buckets):
    return "".join("%d:%d," % (lo, n) for lo, n in sorted(buckets.items()))


def windows_dump(kinds, thresh_ns=5000):
    """An "mmlat_windows 2" dump.  kinds: {kind: [(ns, caller, parent, n)]};
    windows of at least thresh_ns are keyed but for COUNTERS["overflow"]
    extra ones of thresh_ns that only the histogram holds."""
    L = ["mmlat_windows 2",
         "param clock=local_clock thresh_ns=%d table_size=512 cpus=1 sub_bits=%d running=0"
         % (thresh_ns, SUB_BITS)]
    for kind, wins in kinds.items():
        wins = wins + [(thresh_ns, "[overflow]", "[overflow]", COUNTERS["overflow"])]
        top = max(wins)
        keyed = [x for x in wins[:-1] if x[0] >= thresh_ns]
        L.append("kind %s n=%d total_ns=%d max_ns=%d unmatched=%d nested_begin=%d edge=0 "
                 "idle_cut=0 keyed=%d overflow=%d overflow_max_ns=%d max_caller=%s max_parent=%s"
                 % (kind, sum(x[3] for x in wins), sum(x[0] * x[3] for x in wins), top[0],
                    COUNTERS["unmatched"], COUNTERS["nested_begin"], sum(x[3] for x in keyed),
                    COUNTERS["overflow"], thresh_ns, top[1], top[2]))
        L.append("maxstack %s 0 %s" % (kind, top[1]))
        for lo, n in sorted(_buckets((x[0], x[3]) for x in wins).items()):
            L.append("bucket %s lo_ns=%d hi_ns=%d n=%d" % (kind, lo, bucket_hi(lo), n))
        by_key = {}
        for ns, caller, parent, n in keyed:
            by_key.setdefault((caller, parent), []).append((ns, n))
        for (caller, parent), vals in by_key.items():
            L.append("key %s cpu=0 n=%d total_ns=%d max_ns=%d caller=%s parent=%s buckets=%s"
                     % (kind, sum(n for _, n in vals), sum(ns * n for ns, n in vals),
                        max(ns for ns, _ in vals), caller, parent, _pairs(_buckets(vals))))
    return "\n".join(L) + "\n"


def ptelock_dump(sites):
    """An "mmlat_ptelock 2" dump.  sites: {at: [(ns, n)]}; COUNTERS'
    lost and discarded holds are charged to the first site."""
    L = ["mmlat_ptelock 2",
         "param clock=local_clock method=ftrace-caller functions=%d missing=0 "
         "ptl_filter=struct-page sub_bits=%d running=0" % (len(sites), SUB_BITS)]
    holds = sum(n for vals in sites.values() for _, n in vals)
    L.append("total holds=%d lost=%d discarded=%d nonptl=0 site_overflow=0 in_flight=0"
             % (holds, COUNTERS["ptelock_lost"], COUNTERS["ptelock_discarded"]))
    for i, (at, vals) in enumerate(sites.items()):
        L.append("site lock n=%d total_ns=%d max_ns=%d lost=%d discarded=%d at=%s buckets=%s"
                 % (sum(n for _, n in vals), sum(ns * n for ns, n in vals),
                    max(ns for ns, _ in vals), 0 if i else COUNTERS["ptelock_lost"],
                    0 if i else COUNTERS["ptelock_discarded"], at, _pairs(_buckets(vals))))
    return "\n".join(L) + "\n"


def zap_ns(vi, shift):
    """The longest (zap) window and PTE-lock hold of variant vi, in ns."""
    return 1000000 - (500000 if vi == 1 and shift else 0) + 123


def _traced_guest(g, vi, shift, trace):
    zap = zap_ns(vi, shift)
    os.makedirs(os.path.join(g, "windows"))
    if trace == "full":
        ent = [(3, 0x3000, 0x1000, 500), (zap // 1000, 0x3000, 0x1000, 2),
               (40, 0x3000, 0x2000, 20), (80, 0x4000, 0x5000, 5)]
        with open(os.path.join(g, "windows", "preemptoff.hist"), "w") as f:
            f.write(_trigger(ent))
        with open(os.path.join(g, "windows", "irqsoff.hist"), "w") as f:
            f.write(_trigger([(10, 0x4000, 0x5000, 50)]))
        os.makedirs(os.path.join(g, "tracer"))
        with open(os.path.join(g, "tracer", "preemptoff.max"), "w") as f:
            f.write("%d\n" % (zap // 1000))
        return
    lock, zap_site = "_raw_spin_lock+0x0/0x40", "zap_pte_range+0x10/0x400"
    kinds = {"preempt": [(3000, lock, zap_site, 500), (zap - 40000, lock, zap_site, 1),
                         (zap, lock, zap_site, 1),
                         (40000, lock, "copy_pte_range+0x20/0x400", 20),
                         (80000, "__do_softirq+0x5/0x300", "irq_exit_rcu+0x9/0x40", 5)],
             "irq": [(10000, "__do_softirq+0x5/0x300", "irq_exit_rcu+0x9/0x40", 50)]}
    with open(os.path.join(g, "windows", "windows.txt"), "w") as f:
        f.write(windows_dump(kinds))
    with open(os.path.join(g, "windows", "ptelock.txt"), "w") as f:
        f.write(ptelock_dump({zap_site: [(1024, 98), (zap - 50000, 1), (zap - 40000, 1)],
                              "copy_pte_range+0x30/0x400": [(3000, 10)]}))


def make_run(root, shift=0, repeats=3, accel=("tcg", "tcg"), seed=0, failed=True,
             variants=("baseline", "patched"), workloads=("munmap", "fork"),
             trace="windows", even_shift=0, calib=""):
    """A fake run: cyclictest latencies of variant 1 shifted by shift us
    and those of even-numbered repeats by even_shift us (an A/A
    difference), repeats r1..r<repeats>, clean boots and, unless trace is "none",
    traced boots with windows from the module (trace "windows") or hist
    triggers ("full").  With failed, the last traced boot of the last
    variant and workload failed.  With calib (meta.json's CALIB), each
    variant also has make bench's calibration boot, cells/<v>/calib/traced/r1,
    with a traced boot's data (calibration.json: write_calibration)."""
    rng = np.random.default_rng(seed)
    boots = ["clean"] + ([] if trace == "none" else ["traced"])
    meta = {"kernel_version": "6.1.0-test", "accel": accel[0], "config_sha256": "c0ffee",
            "duration_s": 30, "repeat": repeats, "trace": trace, "boots": boots,
            "calib": calib, "calib_workloads": "calib",
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
        cells = [(w, boot, r) for w in workloads for r in range(1, repeats + 1)
                 for boot in boots]
        if calib:
            cells.append(("calib", "traced", 1))
        for w, boot, r in cells:
            cd = os.path.join(root, "cells", v, w, boot, "r%d" % r)
            g = os.path.join(cd, "guest")
            os.makedirs(g)
            cell = {"variant": v, "workload": w, "boot": boot, "repeat": r,
                    "status": "ok", "accel": accel[vi], "config_sha256": "c0ffee"}
            if (failed and boot == boots[-1] and v == variants[-1]
                    and w == workloads[-1] and r == repeats):
                cell = dict(cell, status="failed", cause="guest timed out after 600 s")
            with open(os.path.join(cd, "cell.json"), "w") as f:
                json.dump(cell, f)
            s = ((shift if vi == 1 else 0) + (even_shift if r % 2 == 0 else 0)
                 + (TRACED_LATENCY_US if boot == "traced" else 0))
            a = np.clip(np.round(rng.gamma(4, 5, 4000) + s).astype(int), 0, 399)
            vals, cnt = np.unique(a, return_counts=True)
            with open(os.path.join(g, "cyclictest.hist"), "w") as f:
                f.write(_hist_file(dict(zip(vals.tolist(), cnt.tolist()))))
            ops = clean_ops(vi, r) if boot == "clean" else traced_ops(vi, r)
            with open(os.path.join(g, "workload.txt"), "w") as f:
                f.write("workload=%s duration_s=30 ops=3000 bytes=100 ops_per_s=%r\n"
                        % (w, ops))
            if boot == "traced":
                _traced_guest(g, vi, shift, trace)
            with open(os.path.join(g, "status"), "w") as f:
                f.write("ok\n")
    return root


def write_calibration(root, fits, failures=None):
    """<root>/calibration.json as mmlat calibrate writes it: fits as
    {variant: {workload: {kind: (a, b_us)}}}; failures {cell: [message]}
    (any makes it not ok)."""
    failures = failures or {}
    cells = sorted({"%s/%s/traced/r1" % (v, w) for v, ws in fits.items() for w in ws}
                   | set(failures))
    doc = {"ok": not any(failures.values()), "a_tolerance": 0.01, "b_goal_us": 2.0,
           "b_limit_us": 20.0,
           "fits": {v: {w: {k: {"a": a, "b_us": b, "n": 4, "max_residual_us": 0.1}
                            for k, (a, b) in kinds.items()}
                        for w, kinds in ws.items()}
                    for v, ws in fits.items()},
           "cells": [{"cell": c, "failures": failures.get(c, []),
                      "ok": not failures.get(c)} for c in cells]}
    with open(os.path.join(root, "calibration.json"), "w") as f:
        json.dump(doc, f)
