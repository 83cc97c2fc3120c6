"""Parsers on real guest output (fixtures/guest-6.1-tcg, see its README)."""
import os
import shutil

import fakerun
from mmlat import attribute, load, parse

G = os.path.join(os.path.dirname(__file__), "fixtures", "guest-6.1-tcg")


def g(n):
    return os.path.join(G, n)


def test_window_hist_real():
    d = parse.parse_hist_trigger(g("preemptoff.hist"))
    assert d["hits"] == 403620 and d["entries_n"] == 2733 and d["dropped"] == 0
    assert len(d["entries"]) == 2733
    # Hits counts every event; the entries sum 202 fewer on this guest
    assert sum(e["hitcount"] for e in d["entries"]) == 403418
    assert d["entries"][0] == {"lat": 47, "caller": 3323566, "parent": 2130706432, "hitcount": 2}
    assert max(e["lat"] for e in d["entries"]) == 14799
    i = parse.parse_hist_trigger(g("irqsoff.hist"))
    assert i["entries_n"] == len(i["entries"]) and i["dropped"] == 0


def test_tracer_snapshot_real():
    t = parse.parse_tracer_snapshot(g("preemptoff.trace"))
    assert t["tracer"] == "preemptoff" and t["latency_us"] == 14904 and t["cpu"] == 0
    assert t["started_at"] == "_raw_spin_lock" and t["ended_at"] == "_raw_spin_unlock"
    assert t["stack"][0] == "mlock_pte_range" and t["stack"][-1] == "entry_SYSCALL_64_after_hwframe"
    assert len(t["stack"]) == 9
    assert parse.parse_tracer_max(g("preemptoff.max")) == 14904


def test_cyclictest_real_guest_overflows():
    h = parse.parse_cyclictest_hist(g("cyclictest.hist"))["threads"][0]
    assert h["total"] == 1864 and h["overflows"] == 3 and h["max"] == 54436
    assert sum(h["hist"].values()) == 1864 and min(h["hist"]) == 906
    j = parse.parse_cyclictest_json(g("cyclictest.json"))
    assert j["release"] == "6.1.192-mmlat-mainline"
    assert j["threads"][0]["max"] == 54436


def test_workload_real_guest():
    r = parse.parse_workload(g("workload.txt"))
    assert r[0]["workload"] == "munmap" and r[0]["ops"] == 2 and r[0]["small_ops"] == 128


def test_resolution_and_attribution_real():
    sm = parse.SymbolMap(g("System.map"))
    assert sm.resolve_offs(3323566) == ("_raw_spin_lock", 14)
    # the bogus lock-parent the 6.1 guest reports is not blamed on a symbol
    assert sm.resolve_offs(2130706432)[0] == "[unknown]"
    d = parse.parse_hist_trigger(g("preemptoff.hist"))
    classes = {attribute.classify_stack([sm.name(e["caller"]), sm.name(e["parent"])],
                                        "preemptoff") for e in d["entries"]}
    # without the lock parent (and no stack) no gather context is seen
    assert {"page-free", "page-alloc", "scheduler", "other"} <= classes


def test_load_real_cell(tmp_path):
    run = tmp_path / "run"
    # a TRACE=full cell: its traced boot has cyclictest, windows and tracer
    cg = run / "cells" / "mainline" / "munmap" / "traced" / "r1" / "guest"
    (cg / "windows").mkdir(parents=True)
    (cg / "tracer").mkdir()
    (run / "kernels" / "mainline").mkdir(parents=True)
    shutil.copy(g("System.map"), run / "kernels" / "mainline")
    for f in ("cyclictest.hist", "cyclictest.json", "workload.txt"):
        shutil.copy(g(f), cg)
    for f in ("preemptoff.hist", "irqsoff.hist"):
        shutil.copy(g(f), cg / "windows")
    for f in ("preemptoff.trace", "preemptoff.max"):
        shutil.copy(g(f), cg / "tracer")
    fakerun.write_cell(str(cg.parent), "mainline", "munmap", "traced", 1, accel="tcg-icount")
    fakerun.write_meta(str(run), fakerun.meta(variants=("mainline",), workloads=("munmap",),
                                              repeats=1, trace="full"))
    r = load.load_run(str(run))
    assert len(r["cells"]) == 1
    c = r["cells"][0]
    assert c["boot"] == "traced" and c["repeat"] == 1 and c["status"] == "ok"
    assert c["cyclictest"]["max"] == 54436 and c["lat_hist"][54436] == 3
    po = c["windows"]["preemptoff"]
    assert sum(po["hist"].values()) == 403418 and max(po["hist"]) == 14799
    assert po["tracer_max"] == 14904 and po["snapshot"]["stack"][0] == "mlock_pte_range"
    assert sum(sum(h.values()) for h in po["by_class"].values()) == 403418
