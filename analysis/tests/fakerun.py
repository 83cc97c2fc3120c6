"""The one builder of test data: a small results/<run-id>/ tree in the
documented layout, cells/<variant>/<workload>/<clean|traced>/r<N>/, its
records (meta.json, cell.json, build.json) written through the dataclasses
the orchestrator writes them with (bench/plan/model.py): write_meta,
write_cell and write_kernel for a test's own run, make_run for a whole one.

The two boot kinds of a cell differ on purpose, so that a figure read from
the wrong kind shows: traced boots have cyclictest latencies
TRACED_LATENCY_US higher and a fraction TRACED_RATIO of the clean
throughput, and only traced boots have windows."""
import dataclasses
import json
import os
from dataclasses import replace

import numpy as np
from mmlat import buckets
from plan import calib as calibration
from plan import instruments
from plan.model import (Boot, BootResult, BuildRecord, Calibration, Cell, CellRecord, Meta,
                        Plan, Round, Step, Sweep, Variant, read, write)

SYSMAP = """ffffffff81000000 T _stext
ffffffff81001000 T zap_pte_range
ffffffff81002000 T copy_pte_range
ffffffff81003000 T _raw_spin_lock
ffffffff81004000 T __do_softirq
ffffffff81005000 T irq_exit_rcu
ffffffff81006000 T mmlat_calib_preempt
ffffffff81007000 T unmap_page_range
"""

# Per-variant figures are for up to three variants: baseline, patched and
# a third one (an "as-posted" series) that takes its locks as patched does.
# Clean throughput of variant i, repeat N: (CLEAN_OPS[i] + N) / the cell's
# workload_factor ops/s.
CLEAN_OPS = (100, 110, 120)
# Traced throughput / clean, per variant; repeat 1 runs OUTLIER times that
# (so the median over repeats differs from the mean).
TRACED_RATIO = (0.13, 0.15, 0.17)
OUTLIER = 3
TRACED_LATENCY_US = 150
# Module counters of every traced boot (TRACE=windows); the lock ones are
# charged to the PTE lock.
COUNTERS = {"unmatched": 3, "nested_begin": 2, "overflow": 1,
            "lock_lost": 2, "lock_discarded": 5}
# The window module's histograms: its kinds' and lock sites' fine, its
# keys' coarser.
SUB_BITS = buckets.SUB_BITS
KEY_SUB_BITS = buckets.KEY_SUB_BITS


def workload_factor(workload):
    """How much a cell's workload scales the fake figures that a sweep
    moves: its n parameter / 16 (imap:s=1,n=64: 4), 1 for any other
    workload.  The longest i_mmap hold (and, when it spins, window) grows
    by it and the throughput shrinks by it, so that each value of a sweep
    has figures of its own."""
    for kv in workload.partition(":")[2].split(","):
        if kv.startswith("n="):
            return int(kv[2:]) / 16
    return 1


# the drivers' pages= line: work counted in pages, PAGES_PER_OP an operation
PAGES_PER_OP = 64


def clean_ops(vi, r, workload="munmap"):
    return (CLEAN_OPS[vi] + r) / workload_factor(workload)


def traced_ops(vi, r, workload="munmap"):
    return clean_ops(vi, r, workload) * TRACED_RATIO[vi] * (OUTLIER if r == 1 else 1)


def _hist_file(hist):
    rows = sorted(hist)
    lines = ["%06d %06d" % (k, hist.get(k, 0)) for k in range(0, 400)]
    lines.append("# Total: %09d" % sum(hist.values()))
    lines.append("# Min Latencies: %05d" % rows[0])
    lines.append("# Avg Latencies: %05d"
                 % int(sum(k * v for k, v in hist.items()) / sum(hist.values())))
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
    out += ["", "Totals:", "    Hits: %d" % hits, "    Entries: %d" % len(entries),
            "    Dropped: 0"]
    return "\n".join(out) + "\n"


def _buckets(values, sub_bits=SUB_BITS):
    """[(ns, n)] -> {bucket lo: n}"""
    out = {}
    for ns, n in values:
        lo = buckets.lo(ns, sub_bits)
        out[lo] = out.get(lo, 0) + n
    return out


def _pairs(counts):
    return "".join("%d:%d," % (lo, n) for lo, n in sorted(counts.items()))


# The window module's stacks at open (opener first) of the fake windows.
ZAP_STACK = ["_raw_spin_lock+0x1a/0x30", "zap_pte_range+0x1f3/0x500",
             "zap_pmd_range+0x12a/0x1f0", "unmap_page_range+0x2c5/0x470"]
FORK_STACK = ["_raw_spin_lock+0x1a/0x30", "copy_pte_range+0x20/0x400",
              "copy_page_range+0x4e3/0x1090", "dup_mmap+0x38d/0x570"]
I_MMAP_STACK = ["_raw_spin_lock+0x1a/0x30", "unmap_mapping_pages+0x5b/0x110",
                "truncate_pagecache+0x2a/0x60", "do_truncate+0x80/0xd0"]
SOFTIRQ_STACK = ["__do_softirq+0x5/0x300", "irq_exit_rcu+0x9/0x40",
                 "sysvec_apic_timer_interrupt+0x6e/0x90"]
OTHER_STACK = ["some_driver_poll+0x1c/0x80", "some_driver_work+0x40/0x90",
               "process_one_work+0x1d3/0x3a0"]
# What the kernel's unwinder puts before the opener's frames at a window's
# end: the module's probe and the enable path.
END_FRAMES = {"preempt": ["mw_preempt_on+0x11e/0x160", "trace_preempt_on+0x117/0x120",
                          "preempt_count_sub+0x48/0x70", "_raw_spin_unlock+0x16/0x30"],
              "irq": ["mw_irq_on+0x11f/0x160", "trace_hardirqs_on+0xa7/0x150"]}
# How each variant takes the i_mmap and anon_vma locks: baseline spins,
# patched holds an rwsem for write (the series makes them sleeping locks).
LOCK_MODES = ({"i_mmap": "spin", "anon_vma": "spin"},
              {"i_mmap": "rwsem-write", "anon_vma": "rwsem-write"},
              {"i_mmap": "rwsem-write", "anon_vma": "rwsem-write"})
# Holds whose holder slept and holds that waited, per sleeping-lock site.
SLEPT, WAITS, WAIT_MAX_NS = 2, 3, 7000


def _frames(stack):
    return ",".join(stack)


def windows_dump(kinds, thresh_ns=5000):
    """An "mmlat_windows 3" dump.  kinds: {kind: [(ns, stack, lock, n)]}
    (stack at open, opener first; lock pte, i_mmap, anon_vma or none);
    windows of at least thresh_ns are keyed but for COUNTERS["overflow"]
    extra ones of thresh_ns that only the histogram holds.  The longest
    window's stack at its end is END_FRAMES then its stack at open
    without the lock call."""
    L = ["mmlat_windows 3",
         "param clock=local_clock thresh_ns=%d table_size=512 cpus=1 sub_bits=%d "
         "key_sub_bits=%d open_depth=6 running=0" % (thresh_ns, SUB_BITS, KEY_SUB_BITS)]
    for kind, wins in kinds.items():
        top = max(wins, key=lambda x: x[0])
        keyed = [x for x in wins if x[0] >= thresh_ns]
        n = sum(x[3] for x in wins) + COUNTERS["overflow"]
        total = sum(x[0] * x[3] for x in wins) + thresh_ns * COUNTERS["overflow"]
        L.append("kind %s n=%d total_ns=%d max_ns=%d unmatched=%d nested_begin=%d edge=0 "
                 "idle_cut=0 keyed=%d overflow=%d overflow_max_ns=%d max_lock=%s"
                 % (kind, n, total, top[0], COUNTERS["unmatched"], COUNTERS["nested_begin"],
                    sum(x[3] for x in keyed), COUNTERS["overflow"], thresh_ns, top[2]))
        for i, frame in enumerate(top[1]):
            L.append("maxopen %s %d %s" % (kind, i, frame))
        opener_on = [f for f in top[1] if not f.startswith("_raw_spin_lock")]
        for i, frame in enumerate(END_FRAMES[kind] + opener_on):
            L.append("maxstack %s %d %s" % (kind, i, frame))
        values = [(x[0], x[3]) for x in wins] + [(thresh_ns, COUNTERS["overflow"])]
        for lo, c in sorted(_buckets(values).items()):
            L.append("bucket %s lo_ns=%d hi_ns=%d n=%d" % (kind, lo, buckets.hi(lo, SUB_BITS), c))
        by_key = {}
        for ns, stack, lock, c in keyed:
            by_key.setdefault((_frames(stack), lock), []).append((ns, c))
        for (stack, lock), vals in by_key.items():
            L.append("key %s cpu=0 n=%d total_ns=%d max_ns=%d lock=%s stack=%s buckets=%s"
                     % (kind, sum(c for _, c in vals), sum(ns * c for ns, c in vals),
                        max(ns for ns, _ in vals), lock, stack,
                        _pairs(_buckets(vals, KEY_SUB_BITS))))
    return "\n".join(L) + "\n"


def locks_dump(sites, modes=LOCK_MODES[0]):
    """An "mmlat_locks 3" dump.  sites: {(lock, mode, at): [(ns, n)]};
    COUNTERS' lost and discarded holds are charged to the first site;
    sleeping-lock sites have SLEPT holds that slept and WAITS waits."""
    L = ["mmlat_locks 3",
         "param clock=local_clock method=ftrace-caller functions=%d missing=0 "
         "ptl_filter=struct-page i_mmap=%s anon_vma=%s sub_bits=%d running=0"
         % (len(sites), modes["i_mmap"].split("-")[0], modes["anon_vma"].split("-")[0],
            SUB_BITS)]
    rows = []
    for i, ((lock, mode, at), vals) in enumerate(sites.items()):
        sleeps = mode != "spin"
        rows.append(dict(lock=lock, mode=mode, n=sum(n for _, n in vals),
                         total_ns=sum(ns * n for ns, n in vals), max_ns=max(ns for ns, _ in vals),
                         lost=0 if i else COUNTERS["lock_lost"],
                         discarded=0 if i else COUNTERS["lock_discarded"],
                         slept=SLEPT if sleeps else 0, waits=WAITS if sleeps else 0,
                         wait_total_ns=WAITS * WAIT_MAX_NS if sleeps else 0,
                         wait_max_ns=WAIT_MAX_NS if sleeps else 0, at=at,
                         buckets=_pairs(_buckets(vals))))
    for lock in ("pte", "i_mmap", "anon_vma"):
        mine = [r for r in rows if r["lock"] == lock]
        L.append("total lock=%s holds=%d lost=%d discarded=%d in_flight=0" % (
            lock, sum(r["n"] for r in mine), sum(r["lost"] for r in mine),
            sum(r["discarded"] for r in mine)))
    L.append("total nonlock=0 site_overflow=0 slot_overflow=0")
    for r in rows:
        L.append("site " + " ".join("%s=%s" % kv for kv in r.items()))
    return "\n".join(L) + "\n"


def zap_ns(vi, shift):
    """The longest (zap) window and PTE-lock hold of variant vi, in ns."""
    return 1000000 - (500000 if vi == 1 and shift else 0) + 123


# The longest i_mmap hold of variant vi (baseline: a spinning hold, which
# opens a preempt-off window; patched: a sleeping one, which does not),
# times the cell's workload_factor.
I_MMAP_NS = (300123, 250123, 200123)


def i_mmap_ns(vi, workload):
    return round(I_MMAP_NS[vi] * workload_factor(workload))


# Window time in class other over 50 us, per boot: OTHER_N windows of OTHER_NS.
OTHER_NS, OTHER_N = 60000, 2


def _instrument_dumps(cell_dir, vi, shift, trace, workload):
    """What TRACE's instrument leaves in a boot that carries its windows:
    its dumps in its folder (plan/instruments.py), or hist triggers and
    the max tracer's reading in the guest's."""
    zap = zap_ns(vi, shift)
    longest_i_mmap = i_mmap_ns(vi, workload)
    g = os.path.join(cell_dir, "guest")
    dumps = os.path.join(cell_dir, instruments.of(trace).dumps)
    os.makedirs(dumps)
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
    preempt = [(3000, ZAP_STACK, "pte", 500), (zap - 40000, ZAP_STACK, "pte", 1),
               (zap, ZAP_STACK, "pte", 1), (40000, FORK_STACK, "pte", 20),
               (80000, SOFTIRQ_STACK, "none", 5), (OTHER_NS, OTHER_STACK, "none", OTHER_N)]
    if LOCK_MODES[vi]["i_mmap"] == "spin":
        preempt.append((longest_i_mmap, I_MMAP_STACK, "i_mmap", 1))
    kinds = {"preempt": preempt, "irq": [(10000, SOFTIRQ_STACK, "none", 50)]}
    with open(os.path.join(dumps, "windows.txt"), "w") as f:
        f.write(windows_dump(kinds))
    if trace == "plugin":
        with open(os.path.join(dumps, "wakeups.txt"), "w") as f:
            f.write(wakeups_log(spike_ns=SPIKE_NS + 1000 * shift * vi))
    modes = LOCK_MODES[vi]
    with open(os.path.join(dumps, "locks.txt"), "w") as f:
        f.write(locks_dump({
            ("pte", "spin", "zap_pte_range+0x10/0x400"): [(1024, 98), (zap - 50000, 1),
                                                          (zap - 40000, 1)],
            ("pte", "spin", "copy_pte_range+0x30/0x400"): [(3000, 10)],
            ("i_mmap", modes["i_mmap"], "unmap_mapping_pages+0x5b/0x110"):
                [(2000, 30), (longest_i_mmap, 1)],
            ("anon_vma", modes["anon_vma"], "anon_vma_clone+0x7a/0x1c0"): [(1500, 40)]},
            modes))


# A plugin boot's wakeups (plugin/README.md, "wakeups.txt"): WAKEUPS of
# WAKEUP_NS, 2 ns apart in latency so that the boot's p99.9 sits below the
# last ones; then one spike held off by a zap window open at its expiry
# and one with nothing open.
WAKEUPS, WAKEUP_NS, SPIKE_NS = 2000, 4000, 400000


def wakeup_line(expires_ns, latency_ns, shift=3, running="munmap", held=(), after=()):
    """One wakeup of wakeups.txt and its held and after windows, each as
    (kind, begin_ns, end_ns, stack) relative to the expiry; the expiry is at
    instruction 10**6 + expires_ns >> shift, the clock read 1 us after."""
    expiry = 10 ** 6 + (expires_ns >> shift)
    clock = expiry + (1000 >> shift)
    lines = ["wakeup cpu=0 pid=42 expires_ns=%d clock_ns=%d clock_insn=%d expiry_insn=%d "
             "run_insn=%d latency_ns=%d running=%s" % (
                 expires_ns, expires_ns + 1000, clock, expiry, expiry + (latency_ns >> shift),
                 latency_ns, running)]
    for word, windows in (("held", held), ("after", after)):
        for kind, begin, end, stack in windows:
            lines.append("%s %s begin_insn=%d end_insn=%d lock=none stack=%s" % (
                word, kind, expiry + (begin >> shift), expiry + (end >> shift) if end else 0,
                stack))
    return "\n".join(lines)


def wakeups_log(spike_ns=SPIKE_NS, shift=3):
    lines = ["mmlat_plugin_wakeups 1", "param clock=icount shift=%d" % shift]
    t = 10 ** 9
    for i in range(WAKEUPS):
        lines.append(wakeup_line(t, WAKEUP_NS + 2 * i, shift))
        t += 500000
    lines.append(wakeup_line(t, spike_ns, shift, held=[
        ("preempt", -20000, spike_ns, ",".join(ZAP_STACK))]))
    lines.append(wakeup_line(t + 500000, spike_ns, shift, running="kworker/0:1", after=[
        ("preempt", 3000, spike_ns, ",".join(SOFTIRQ_STACK))]))
    return "\n".join(lines) + "\n"


# The series each fake variant carries.
SERIES = {"baseline": ["pre-series"], "patched": ["pre-series", "mm-preempt-v10"]}


def meta(variants=("baseline", "patched"), workloads=("munmap", "fork"), repeats=3,
         trace="windows", accel="tcg", calib="", sweeps=(), steps=(), auto=(), **facts):
    """A Meta as the orchestrator records it; auto: REPEAT=auto's rounds,
    [(first, last, spent)] (none: REPEAT=repeats); facts: its fields beyond
    the plan (smp, qemu, untested, configs, ...)."""
    boots = list(instruments.of(trace).boots)
    plan = Plan(
        run_id="fake", variants=[
            Variant(name=v, spec=v, source="tree:6.1", version="6.1", ref="",
                    series=tuple(SERIES.get(v, [])), instrumentation=0) for v in variants],
        steps=[Step(**st) for st in steps], workloads=list(workloads),
        sweeps=[Sweep(**sw) for sw in sweeps],
        boots=boots, trace=trace,
        calibration=Calibration(calib, calibration.parse(calib), ["calib"]) if calib else None,
        duration_s=30, repeat="auto" if auto else repeats,
        rounds=[Round(index=i, first=f, last=last, reason="REPEAT=auto", spent=spent)
                for i, (f, last, spent) in enumerate(auto, 1)]
        or [Round(index=1, first=1, last=repeats, reason="REPEAT=%d" % repeats)],
        flavor="bench", cross=False, executor="local")
    record = Meta(plan=plan, knobs={}, started="2026-01-01T00:00:00Z", accel=accel, smp=1,
                  jobs=1, configs={v: "c0ffee" for v in variants}, untested={},
                  kernel_version="6.1.0-test", initramfs_sha256="", qemu="", qemu_binary="",
                  tools="", host_cpu="", host_cpus=1, host_load_at_start="")
    return replace(record, **facts)


def write_meta(root, record):
    os.makedirs(root, exist_ok=True)
    write(os.path.join(root, "meta.json"), record)


def write_kernel(root, variant, **fields):
    """kernels/<variant>/: System.map and a build.json (fields: its own)."""
    km = os.path.join(root, "kernels", variant)
    os.makedirs(km, exist_ok=True)
    with open(os.path.join(km, "System.map"), "w") as f:
        f.write(SYSMAP)
    record = BuildRecord(variant=variant, series=SERIES.get(variant, []),
                         series_sha256="e3b0" + "0" * 60, source="tree:6.1",
                         kernel_version="6.1.0-test",
                         kernel_release="6.1.0-test-mmlat-" + variant,
                         config_sha256="c0ffee", build_seconds=1, ccache_hits=0,
                         ccache_misses=0, obj_dir="/nonexistent")
    write(os.path.join(km, "build.json"), replace(record, **fields))


def write_cell(cell_dir, variant, workload, boot, repeat, status="ok", cause="",
               accel="tcg", calibrated=False, instrument=""):
    """A boot's cell.json; makes cell_dir."""
    os.makedirs(cell_dir, exist_ok=True)
    record = CellRecord(
        boot=Boot(Cell(variant, workload), boot, repeat, 1), calibrated=calibrated, smp=1,
        config_sha256="c0ffee", series_sha256="e3b0", executor="local", job_id="",
        result=BootResult(status=status, cause=cause, wall_seconds=1.0,
                          guest_seconds_to_runner=1.0, accel=accel, qemu_binary="", qemu="",
                          qemu_cmdline=""), instrument=instrument)
    write(os.path.join(cell_dir, "cell.json"), record)


def make_run(root, shift=0, repeats=3, accel=("tcg", "tcg"), seed=0, failed=True,
             variants=("baseline", "patched"), workloads=("munmap", "fork"),
             trace="windows", even_shift=0, calib="", sweeps=(), steps=(), auto=(), **facts):
    """A fake run: cyclictest latencies of variant 1 shifted by shift us
    and those of even-numbered repeats by even_shift us (an A/A
    difference), repeats r1..r<repeats>, clean boots and, unless trace is "none",
    traced boots with windows from the module (trace "windows") or hist
    triggers ("full"); trace "plugin": clean boots only, with the plugin's
    windows (the module's format, in plugin/).  With failed, the last boot of the last
    variant and workload failed.  With calib (meta.json's CALIB), each
    variant also has make bench's calibration boot, cells/<v>/calib/traced/r1,
    with a traced boot's data (calibration.json: write_calibration).
    sweeps, steps: meta.json's (plan.model's, as dicts); auto: REPEAT=auto's
    rounds (meta()).  Up to three variants
    (CLEAN_OPS); a variant beyond accel's takes its last mode.  facts: more
    fields of its Meta (meta())."""
    rng = np.random.default_rng(seed)
    record = meta(variants, workloads, repeats, trace, accel[0], calib, sweeps, steps, auto,
                  **facts)
    boots = record.plan.boots
    write_meta(root, record)
    for vi, v in enumerate(variants):
        write_kernel(root, v)
        cells = [(w, boot, r) for w in workloads for r in range(1, repeats + 1)
                 for boot in boots]
        if calib:
            cells.append(("calib", "traced", 1))
        for w, boot, r in cells:
            cd = os.path.join(root, "cells", v, w, boot, "r%d" % r)
            g = os.path.join(cd, "guest")
            os.makedirs(g)
            bad = (failed and boot == boots[-1] and v == variants[-1]
                   and w == workloads[-1] and r == repeats)
            write_cell(cd, v, w, boot, r, status="failed" if bad else "ok",
                       cause="guest timed out after 600 s" if bad else "",
                       accel=accel[min(vi, len(accel) - 1)],
                       calibrated=record.plan.calibrated(Cell(v, w), boot),
                       instrument=record.plan.instrument_of(Boot(Cell(v, w), boot, r, 1)))
            s = ((shift if vi == 1 else 0) + (even_shift if r % 2 == 0 else 0)
                 + (TRACED_LATENCY_US if boot == "traced" else 0))
            a = np.clip(np.round(rng.gamma(4, 5, 4000) + s).astype(int), 0, 399)
            vals, cnt = np.unique(a, return_counts=True)
            with open(os.path.join(g, "cyclictest.hist"), "w") as f:
                f.write(_hist_file(dict(zip(vals.tolist(), cnt.tolist()))))
            ops = clean_ops(vi, r, w) if boot == "clean" else traced_ops(vi, r, w)
            with open(os.path.join(g, "workload.txt"), "w") as f:
                f.write("workload=%s duration_s=30 ops=3000 bytes=100 ops_per_s=%r "
                        "pages_per_s=%r\n" % (w, ops, ops * PAGES_PER_OP))
            if record.plan.instrument.carries_windows(boot):
                _instrument_dumps(cd, vi, shift, trace, w)
            with open(os.path.join(g, "status"), "w") as f:
                f.write("ok\n")
    return root


def update_meta(root, **fields):
    """Set fields of a fake run's meta.json: its Meta's (accel, knobs,
    ...) or its plan's (run_id, steps as dicts, ...), written through the
    same classes."""
    path = os.path.join(root, "meta.json")
    record = read(path, Meta)
    plan = {f.name for f in dataclasses.fields(Plan)}
    if "steps" in fields:
        fields["steps"] = [Step(**st) for st in fields["steps"]]
    record.plan = replace(record.plan, **{k: v for k, v in fields.items() if k in plan})
    write_meta(root, replace(record, **{k: v for k, v in fields.items() if k not in plan}))


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
