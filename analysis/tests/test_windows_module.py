"""TRACE=windows: loading, attribution and report on the window module's
dumps (format 3).  Known answers on small texts; the checks of real
captures run on fixtures/windows-3-baseline and windows-3-patched (a
baseline and a patched cell, see their README) and are skipped until
those are in the tree.

Known answers follow the bucket reading documented in
guest/modules/mmlat_windows/README.md and load.bucket_hist: a bucket lo >=
64 of sub_bits 6 is [lo, lo + 2^(floor(log2 lo) - 6)), read at its
midpoint; below 64 a bucket is one ns; the top bucket of a histogram holds
one count at the exact max and the rest at the midpoint of [lo, max]."""
import glob
import os
import shutil

import pytest

import fakerun
from mmlat import attribute, load, locks, model, parse, render_text, summarize
from mmlat import formatting as fmt

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
REAL = {side: os.path.join(FIXTURES, "windows-3-" + side) for side in ("baseline", "patched")}
SUB_BITS = 6


# ---------------------------------------------------------- known answers
LOCKS_TEXT = (
    "mmlat_locks 3\n"
    "param clock=local_clock method=ftrace-caller functions=3 missing=0 "
    "ptl_filter=struct-page i_mmap=rwsem anon_vma=rwsem sub_bits=6 running=0\n"
    "user zap_pte_range size=1024\nuser copy_pte_range size=1024\n"
    "user unmap_mapping_pages size=272\n"
    "total lock=pte holds=103 lost=2 discarded=3 in_flight=0\n"
    "total lock=i_mmap holds=4 lost=0 discarded=0 in_flight=0\n"
    "total lock=anon_vma holds=0 lost=0 discarded=0 in_flight=0\n"
    "total nonlock=0 site_overflow=0 slot_overflow=0\n"
    # 1024: [1024, 1040); 2048: [2048, 2080); 8960: [8960, 9088) holds the max
    "site lock=pte mode=spin n=100 total_ns=1 max_ns=9000 lost=2 discarded=3 slept=0 "
    "waits=0 wait_total_ns=0 wait_max_ns=0 at=zap_pte_range+0x10/0x400 "
    "buckets=1024:97,2048:1,8960:2,\n"
    # below 64 ns a bucket is one ns: exact
    "site lock=pte mode=spin n=3 total_ns=136 max_ns=48 lost=0 discarded=0 slept=0 "
    "waits=0 wait_total_ns=0 wait_max_ns=0 at=copy_pte_range+0x30/0x400 buckets=40:1,48:2,\n"
    "site lock=i_mmap mode=rwsem-write n=4 total_ns=80000 max_ns=50000 lost=0 discarded=0 "
    "slept=1 waits=2 wait_total_ns=9000 wait_max_ns=6000 "
    "at=unmap_mapping_pages+0x5b/0x110 buckets=8192:3,49152:1,\n")


def test_locks_summary_known_answer():
    d = parse.parse_locks(LOCKS_TEXT, is_text=True)
    pl = load.locks_summary(d, SUB_BITS)
    zap, cp, im = pl["sites"]
    assert (zap["func"], zap["lock"], zap["mode"], zap["class"], zap["preemptible"]) == (
        "zap_pte_range", "pte", "spin", "pte-lock-zap", False)
    assert (zap["count"], zap["max_ns"], zap["lost"], zap["discarded"]) == (100, 9000, 2, 3)
    # midpoints; the top bucket: one count at the max, one at (8960 + 9000) / 2
    assert zap["hist_ns"] == {1032: 97, 2064: 1, 8980: 1, 9000: 1}
    assert cp["class"] == "pte-lock-fork" and cp["hist_ns"] == {40: 1, 48: 2}
    assert (im["class"], im["preemptible"], im["slept"], im["waits"], im["wait_max_ns"]) == (
        "i_mmap-lock", True, 1, 2, 6000)
    c = load.tracer_counters({"kinds": {}}, d)
    assert (c.holds, c.lock_lost, c.lock_discarded) == (107, 2, 3)
    s = locks.summarize(model.Sides([{"locks": pl}], []))
    pte = s.by_mode["pte"].baseline
    assert [(r.mode, r.count, r.max) for r in pte] == [("spin", 103, 9000)]
    st = s.classes["pte-lock-zap"].baseline
    assert (st.count, st.p50, st.p99, st.max) == (100, 1032, 8980, 9000)
    assert st.mean == pytest.approx((97 * 1032 + 2064 + 8980 + 9000) / 100)
    assert s.classes["pte-lock-fork"].baseline.p50 == 48
    i_mmap = s.by_mode["i_mmap"].baseline
    assert [(r.mode, r.preemptible, r.count, r.slept, r.waits, r.wait_max_ns)
            for r in i_mmap] == [("rwsem-write", True, 4, 1, 2, 6000)]
    assert s.by_mode["anon_vma"].baseline == [] and s.by_mode["pte"].patched == []
    assert [r.func for r in s.sites["pte"]] == ["zap_pte_range", "copy_pte_range"]
    assert s.sites["i_mmap"][0].holds.baseline.modes == ["rwsem-write"]
    assert s.boots == model.Sides(1, 0)
    assert locks.summarize(model.Sides([{"locks": None}], [])) is None
    lines = render_text.hold_tables(s, model.Sides("baseline", "patched"), "traced")
    assert "  patched  no holds recorded" not in lines    # patched has no boot
    # p50: the midpoint of [8192, 8320)
    assert [line for line in lines if line.startswith("  baseline")][0].split() == [
        "baseline", "rwsem-w", "4", "8.3", "50.0", "50.0", "yes", "1", "2", "6.0"]
    assert "  baseline no holds recorded" in lines         # anon_vma
    assert all(len(line) <= 80 for line in lines)


def test_hold_times_too_wide_for_their_column_lose_the_decimal():
    assert fmt.ns_as_us(958656, 6) == " 958.7"
    assert fmt.ns_as_us(189180784, 6) == "189181"
    assert fmt.ns_as_us(None, 6) == "     -"


def test_counts_too_wide_for_their_column_are_scaled():
    assert fmt.count(12345, 5) == "12345"
    assert fmt.count(123456, 5) == " 123k"
    assert fmt.count(123456789, 5) == " 123M"


# ------------------------------------------------------ real captures
def real_dumps():
    """(side, windows.txt, locks.txt or None) of every cell of the real
    format-3 fixtures."""
    out = []
    for side, d in REAL.items():
        for w in sorted(glob.glob(os.path.join(d, "**", "windows.txt"), recursive=True)):
            lk = os.path.join(os.path.dirname(w), "locks.txt")
            out.append((side, w, lk if os.path.exists(lk) else None))
    return out


def real_workload(side, windows):
    """The workload of a fixture cell: the first folder of its path inside
    the fixture that names none of a cell's own folders."""
    parts = os.path.relpath(os.path.dirname(windows), REAL[side]).split(os.sep)
    return next((p for p in parts if p not in (".", "guest", "windows")), "workload")


needs_real = pytest.mark.skipif(not real_dumps(), reason="no format-3 captures in "
                                "fixtures/windows-3-{baseline,patched} yet")


@needs_real
@pytest.mark.parametrize("side, windows, locks_txt", real_dumps())
def test_real_windows_are_keyed_and_classified(side, windows, locks_txt):
    d = parse.parse_windows(windows)
    sites = load.lock_sites(parse.parse_locks(locks_txt) if locks_txt else None)
    for kind, k in d["kinds"].items():
        keys = [e for e in d["keys"] if e["kind"] == kind]
        assert sum(e["n"] for e in keys) == k["keyed"]
        assert all(e["stack"] for e in keys)
        for e in keys:
            cls = attribute.classify_stack(e["stack"], kind,
                                           load.window_lock(e["stack"], e["lock"], sites)[0])
            assert cls in attribute.CLASSES
            # a window the module tagged with a lock is that lock's class
            if e["lock"] in ("i_mmap", "anon_vma"):
                assert cls == e["lock"] + "-lock"
            if e["lock"] == "pte":
                assert cls.startswith("pte-lock-")


@needs_real
@pytest.mark.parametrize("side, windows, locks_txt", real_dumps())
def test_real_max_windows_agree_with_their_stacks(side, windows, locks_txt):
    # the check: the longest window of each kind, classed from the
    # module's record and from the kernel's stack at its end
    d = parse.parse_windows(windows)
    for kind, k in d["kinds"].items():
        m = load.max_window(k, kind, load.lock_sites(
            parse.parse_locks(locks_txt) if locks_txt else None))
        assert m["open_stack"] and m["end_stack"]
        assert m["agree"], (kind, m["open_class"], m["end_class"], m["open_site"],
                            m["end_site"])


@needs_real
@pytest.mark.parametrize("side, windows, locks_txt", [x for x in real_dumps() if x[2]])
def test_real_lock_sites(side, windows, locks_txt):
    d = parse.parse_locks(locks_txt)
    assert {s["lock"] for s in d["sites"]} <= set(attribute.LOCKS)
    for s in d["sites"]:
        assert s["mode"] in load.PREEMPTIBLE
        assert sum(s["buckets"].values()) == s["n"] > 0
        # every site is in a lock user of guest/classes.txt
        assert attribute.hold_class(s["lock"], s["func"]) != attribute.OTHER
        if s["mode"] == "spin":
            assert s["slept"] == 0
    # a spinning hold keeps preemption off: no longer than the longest window
    spin = [s["max_ns"] for s in d["sites"] if s["mode"] == "spin"]
    longest = parse.parse_windows(windows)["kinds"]["preempt"]["max_ns"]
    assert max(spin, default=0) <= longest


@needs_real
def test_real_report(tmp_path):
    """A run of the fixture cells, baseline against patched: the report
    leads with the critical sections and fits 80 columns."""
    run = tmp_path / "run"
    repeats = {}
    for side, windows, locks_txt in real_dumps():
        w = real_workload(side, windows)
        repeats[side, w] = repeats.get((side, w), 0) + 1
        g = run / "cells" / side / w / "traced" / ("r%d" % repeats[side, w]) / "guest"
        (g / "windows").mkdir(parents=True)
        fakerun.write_cell(str(g.parent), side, w, "traced", repeats[side, w])
        shutil.copy(windows, g / "windows")
        if locks_txt:
            shutil.copy(locks_txt, g / "windows")
    fakerun.write_meta(str(run), fakerun.meta(workloads=sorted({w for _, w in repeats}),
                                              repeats=max(repeats.values())))
    r = load.load_run(str(run))
    s = summarize.build(r, "baseline", "patched", n_resamples=20)
    txt = render_text.render(s)
    lines = txt.splitlines()
    assert all(len(line) <= 80 for line in lines)
    crit = [i for i, l in enumerate(lines) if ": critical sections (" in l]
    assert crit and all(not line.startswith("cyclictest") for line in lines[:crit[0]])
    for w in s.workloads:
        assert all(row.agree for row in w.attribution)


@needs_real
@pytest.mark.parametrize("side, windows, locks_txt", [x for x in real_dumps() if x[2]])
def test_real_other_share_under_the_goal(side, windows, locks_txt):
    # the goal: under 10 % of the preempt-off time in windows over
    # 50 us is class other
    d = parse.parse_windows(windows)
    sites = load.lock_sites(parse.parse_locks(locks_txt))
    w = {"by_class": {}, "sites": {}}
    load._module_windows(w, d, "preemptoff", sites)
    classes = {cls: model.Sides(*[model.Distribution.of(h)] * 2)
               for cls, h in w["by_class"].items()}
    share = summarize.other_share(classes, side)
    assert share.total_us > 0 and share.share < summarize.OTHER_GOAL
