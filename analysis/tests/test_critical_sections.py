"""The report's lead: per workload the window classes and call sites, the
share left in class other, the lock hold tables and the attribution check,
from synthetic format-3 dumps of the window module (fakerun, and small
texts below)."""
import pytest

from mmlat import attribute, load, model, render_text, summarize

import fakerun
from fakerun import make_run

REPEATS = 2


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    run = load.load_run(make_run(str(tmp_path_factory.mktemp("c") / "run"), shift=25,
                                 repeats=REPEATS, failed=False))
    return summarize.build(run, n_resamples=20)


@pytest.fixture(scope="module")
def txt(summary):
    return render_text.render(summary)


def _block(lines, heading):
    """The lines after the first line starting with heading, up to the next
    line that starts in column 0."""
    i = [j for j, l in enumerate(lines) if l.startswith(heading)][0]
    out = []
    for line in lines[i + 1:]:
        if not line.startswith(" "):
            break
        out.append(line)
    return out


def _workload(txt, w):
    lines = txt.splitlines()
    i = lines.index("== %s: critical sections (traced boots: %d baseline, %d patched) =="
                    % (w, REPEATS, REPEATS))
    j = [k for k, l in enumerate(lines) if k > i and l.startswith("==")][0]
    return lines[i + 1:j]


def test_report_leads_with_the_critical_sections(txt):
    lines = txt.splitlines()
    assert all(len(line) <= 80 for line in lines)

    def first(start):
        return min(i for i, l in enumerate(lines) if l.startswith(start))
    crit = [i for i, l in enumerate(lines) if ": critical sections (" in l]
    assert len(crit) == 2
    assert max(crit) < first("traced/clean throughput") < first("cyclictest latency")
    assert max(crit) < first("== fork (clean boots")
    # the header (with the calibration) still comes first
    assert first("mmlat report:") < first("calibration") < min(crit)


def test_class_table_per_side(summary, txt):
    sec = _workload(txt, "munmap")
    rows = _block(sec, "preemptoff windows by class, top 5 by max (us)")
    assert rows[1].split() == ["class", "n", "p99", "max", "n", "p99", "max"]
    classes = [r.split()[0] for r in rows[2:]]
    assert classes == ["pte-lock-zap", "i_mmap-lock", "softirq", "other", "pte-lock-fork"]
    zap = summary.workload("munmap").windows["preemptoff"].classes["pte-lock-zap"]
    assert rows[2].split()[1:] == [
        str(zap.baseline.count), "%.1f" % zap.baseline.p99,
        "%.1f" % (fakerun.zap_ns(0, 25) / 1000), str(zap.patched.count),
        "%.1f" % zap.patched.p99, "%.1f" % (fakerun.zap_ns(1, 25) / 1000)]
    # patched's i_mmap lock sleeps: no window of it
    assert rows[3].split() == ["i_mmap-lock", str(REPEATS), "300.1", "300.1", "0", "-", "-"]


def test_call_sites_are_opener_and_caller(summary, txt):
    sec = _workload(txt, "munmap")
    rows = _block(sec, "preemptoff call sites (opener <- caller), top 5 by max (us)")
    assert rows[0] == "  zap_pte_range <- zap_pmd_range"
    assert rows[1].split()[0] == "pte-lock-zap"
    assert rows[2] == "  unmap_mapping_pages <- truncate_pagecache"
    assert rows[1].startswith("    ")
    sites = summary.workload("munmap").windows["preemptoff"].sites
    assert [(s.window_class, s.site) for s in sites][:2] == [
        ("pte-lock-zap", "zap_pte_range <- zap_pmd_range"),
        ("i_mmap-lock", "unmap_mapping_pages <- truncate_pagecache")]
    # the zap key of every boot is one site: 2 windows of at least 5 us a boot
    assert sites[0].figures.baseline.count == 2 * REPEATS


def test_other_share_of_long_window_time(summary, txt):
    windows = summary.workload("munmap").windows["preemptoff"]
    assert (windows.other_over_us, windows.other_goal) == (50, 0.10)
    o = windows.other_share.baseline
    # per boot over 50 us: the two zap windows, 5 softirq, 2 other, 1 i_mmap
    zap = fakerun.zap_ns(0, 25) / 1000
    long_us = REPEATS * (zap + zap - 40 + 5 * 80 + fakerun.OTHER_N * 60
                         + fakerun.I_MMAP_NS[0] / 1000)
    other_us = REPEATS * fakerun.OTHER_N * fakerun.OTHER_NS / 1000
    # read from the keys' buckets (12.5 % wide; the top one's rest at the
    # midpoint of [lo, max]), so within a few per cent
    assert o.total_us == pytest.approx(long_us, rel=0.05)
    assert o.other_us == pytest.approx(other_us, rel=0.05)
    assert o.share == pytest.approx(other_us / long_us, rel=0.05)
    rows = _block(_workload(txt, "munmap"), 'window time over 50 us in class "other"')
    assert rows[0].split()[:4] == ["preemptoff", "baseline", "%.1f" % (100 * o.share), "%"]


def test_hold_tables_state_mode_preemptibility_sleeps_and_waits(summary, txt):
    sec = _workload(txt, "munmap")
    for lock in ("i_mmap", "anon_vma", "pte"):
        rows = _block(sec, "%s lock hold time (us), traced boots:" % lock)
        assert rows[0].split() == ["variant", "mode", "count", "p50", "p99", "max",
                                   "preemptible", "slept", "waits", "maxwait"]
        base, patched = rows[1].split(), rows[2].split()
        assert base[:2] == ["baseline", "spin"] and base[6:9] == ["no", "0", "0"]
        if lock == "pte":
            assert patched[:2] == ["patched", "spin"] and patched[6] == "no"
            continue
        assert patched[:2] == ["patched", "rwsem-w"]
        assert patched[6:] == ["yes", str(fakerun.SLEPT * REPEATS),
                               str(fakerun.WAITS * REPEATS), "%.1f" % (fakerun.WAIT_MAX_NS / 1000)]
    i_mmap = summary.workload("munmap").locks.by_mode["i_mmap"]
    assert [(r.mode, r.preemptible, r.max) for r in i_mmap.baseline] == [
        ("spin", False, fakerun.I_MMAP_NS[0])]
    assert [(r.mode, r.preemptible, r.max) for r in i_mmap.patched] == [
        ("rwsem-write", True, fakerun.I_MMAP_NS[1])]
    rows = _block(sec, "i_mmap lock hold time")
    assert rows[3] == "  longest holds by function, max us (baseline / patched):"
    assert rows[4].split() == ["unmap_mapping_pages", "300.1", "spin", "/", "250.1", "rwsem-w"]
    # every row states whether the holder is preemptible
    for lock in ("i_mmap", "anon_vma", "pte"):
        for r in _block(sec, "%s lock hold time" % lock)[1:3]:
            assert r.split()[6] in ("yes", "no")


def test_attribution_check_table(txt):
    rows = _block(_workload(txt, "munmap"), "attribution check")
    assert rows[0].split() == ["variant", "rep", "kind", "max", "us", "module", "(at",
                               "open)", "stack", "(at", "end)", "agree"]
    assert rows[1].split() == ["baseline", "r1", "preempt", "%.1f" % (fakerun.zap_ns(0, 25) / 1000),
                               "pte-lock-zap", "pte-lock-zap", "yes"]
    assert rows[2].split() == ["baseline", "r1", "irq", "10.0", "softirq", "softirq", "yes"]
    assert rows[-1] == "  %d of %d agree" % (4 * REPEATS, 4 * REPEATS)


# ------------------------------------------------- the attribution check
END = ["mw_preempt_on+0x11e/0x160", "trace_preempt_on+0x117/0x120",
       "preempt_count_sub+0x48/0x70"]
GATHER_OPEN = ["free_unref_page_list+0x1b4/0x690", "release_pages+0x103/0x290",
               "tlb_batch_pages_flush+0x41/0x70", "tlb_flush_mmu+0x3d/0x140"]


def test_max_window_agrees_on_a_gather_window():
    k = {"max_ns": 2290114, "max_lock": "none", "maxopen": GATHER_OPEN,
         "maxstack": END + ["free_unref_page_list+0x4d1/0x690"] + GATHER_OPEN[1:]}
    m = load.max_window(k, "preempt", sites={})
    assert (m["open_class"], m["end_class"], m["agree"]) == ("mmu-gather", "mmu-gather", True)
    assert m["open_site"] == m["end_site"] == "free_unref_page_list <- release_pages"
    assert m["us"] == 2290.114


def test_max_window_by_the_lock_that_opened_it():
    opened = ["_raw_spin_lock+0x1a/0x30", "unmap_mapping_pages+0x5b/0x110",
              "truncate_pagecache+0x2a/0x60"]
    k = {"max_ns": 300000, "max_lock": "i_mmap", "maxopen": opened,
         "maxstack": END + ["_raw_spin_unlock+0x16/0x30"] + opened[1:]}
    m = load.max_window(k, "preempt", sites={})
    assert (m["open_class"], m["end_class"], m["agree"]) == ("i_mmap-lock", "i_mmap-lock", True)
    assert (m["lock"], m["lock_from_site"]) == ("i_mmap", False)


def test_max_window_that_ends_elsewhere_disagrees_and_is_shown():
    # opened freeing pages outside a gather, ended inside softirq: the
    # stack at the end tells another story
    opened = ["free_unref_page_list+0x1b4/0x690", "release_pages+0x103/0x290",
              "__folio_batch_release+0x1f/0x50"]
    k = {"max_ns": 90000, "max_lock": "none", "maxopen": opened,
         "maxstack": END + ["__local_bh_enable_ip+0x37/0x60", "__do_softirq+0x5/0x300",
                            "irq_exit_rcu+0x9/0x40"]}
    m = load.max_window(k, "preempt", sites={})
    assert (m["open_class"], m["end_class"], m["agree"]) == ("page-free", "softirq", False)
    no_site = model.Windows(lock_from_site=0)
    windows = model.TracerWindows(
        overall=model.Sides(no_site, no_site), classes={}, sites=[], other_over_us=50,
        other_goal=0.1, other_share=model.Sides(*[model.OtherShare(0, 0, None)] * 2))
    workload = model.Workload(
        name="w", boots={}, latency=None, throughput=None, traced_over_clean=None,
        counters=None, windows={tr: windows for tr in load.TRACERS},
        attribution=[model.AttributionCheck(side="patched", variant="patched", repeat=3,
                                            tracer="preemptoff", **m)],
        locks=None, calib=None, comparisons=[])
    lines = render_text.attribution_lines(workload, model.Sides("baseline", "patched"))
    assert lines[2].split() == ["patched", "r3", "preempt", "90.0", "page-free", "softirq", "NO"]
    assert lines[3] == "    at open: free_unref_page_list <- release_pages"
    assert lines[4] == "    at end:  __local_bh_enable_ip <- __do_softirq"
    assert lines[5] == "  0 of 1 agree, 1 disagree"


def test_an_untagged_window_takes_the_lock_of_its_lock_site():
    # the baseline fork fixture's longest window: opened by the PTE lock
    # of copy_pte_range, its tag lost on the way from the lock hook
    opened = ["_raw_spin_lock+0x17/0x40", "copy_page_range+0x4e3/0x1090",
              "dup_mmap+0x38f/0x570"]
    k = {"max_ns": 425872, "max_lock": "none", "maxopen": opened,
         "maxstack": END + ["_raw_spin_unlock+0x16/0x30", "copy_page_range+0xc4e/0x1090",
                            "dup_mmap+0x38f/0x570"]}
    locks = {"sites": [{"at": "copy_page_range+0x4e3/0x1090", "lock": "pte"},
                       {"at": "anon_vma_clone+0x94/0x1c0", "lock": "anon_vma"},
                       {"at": "odd_site+0x1/0x2", "lock": "pte"},
                       {"at": "odd_site+0x1/0x2", "lock": "i_mmap"}]}
    sites = load.lock_sites(locks)
    assert sites == {"copy_page_range+0x4e3/0x1090": "pte",
                     "anon_vma_clone+0x94/0x1c0": "anon_vma"}
    m = load.max_window(k, "preempt", sites)
    assert (m["lock"], m["lock_from_site"]) == ("pte", True)
    assert (m["open_class"], m["end_class"], m["agree"]) == ("pte-lock-fork", "pte-lock-fork",
                                                             True)
    # a window opened by preempt_disable itself has no lock site
    assert load.window_lock(["copy_page_range+0x4e3/0x1090"], "none", sites) == ("none", False)
    # without lock hooks no tag is known at all
    assert load.window_lock(opened, "none", None) == (None, False)
    assert load.lock_sites(None) is None


def test_max_window_without_stacks_is_not_checked():
    m = load.max_window({"max_ns": 1000, "max_lock": "none", "maxopen": [], "maxstack": []},
                        "irq")
    assert m["agree"] is None and m["open_class"] is None


# ------------------------------------------------------- loading keys
def _guest(tmp_path, windows, locks=None):
    run = tmp_path / "run"
    fakerun.write_meta(str(run), fakerun.meta(variants=("v",), workloads=("munmap",), repeats=1))
    g = run / "cells" / "v" / "munmap" / "traced" / "r1" / "guest"
    (g / "windows").mkdir(parents=True)
    fakerun.write_cell(str(g.parent), "v", "munmap", "traced", 1)
    (g / "windows" / "windows.txt").write_text(windows)
    if locks:
        (g / "windows" / "locks.txt").write_text(locks)
    return load.load_run(str(tmp_path / "run"))["cells"][0]


# Keys' buckets have key_sub_bits 3: [8192, 9216) and [11264, 12288).
TWO_CPUS = "\n".join([
    "mmlat_windows 3",
    "param clock=local_clock thresh_ns=5000 table_size=512 cpus=2 sub_bits=6 "
    "key_sub_bits=3 running=0",
    "kind preempt n=3 total_ns=30000 max_ns=12000 unmatched=0 nested_begin=0 edge=0 "
    "idle_cut=0 keyed=3 overflow=0 overflow_max_ns=0 max_lock=none",
    "bucket preempt lo_ns=8192 hi_ns=8320 n=2",
    "bucket preempt lo_ns=11776 hi_ns=11904 n=1",
    "key preempt cpu=0 n=1 total_ns=9000 max_ns=8200 lock=none "
    "stack=_raw_spin_lock+0x1a/0x30,zap_pte_range+0x1f3/0x500,zap_pmd_range+0x12a/0x1f0 "
    "buckets=8192:1,",
    "key preempt cpu=1 n=2 total_ns=21000 max_ns=12000 lock=none "
    "stack=_raw_spin_lock+0x1a/0x30,zap_pte_range+0x1f3/0x500,zap_pmd_range+0x12a/0x1f0 "
    "buckets=8192:1,11264:1,",
]) + "\n"
LOCKS = "\n".join([
    "mmlat_locks 3",
    "param clock=local_clock method=ftrace-caller functions=1 missing=0 "
    "ptl_filter=struct-page i_mmap=spin anon_vma=spin sub_bits=6 running=0",
    "total lock=pte holds=0 lost=0 discarded=0 in_flight=0",
    "total nonlock=0 site_overflow=0 slot_overflow=0",
]) + "\n"


def test_equal_keys_of_two_cpus_are_one_site(tmp_path):
    # the module hooks locks here, and these windows were opened by none
    # of their locks: no PTE-lock window whatever the stack
    w = _guest(tmp_path, TWO_CPUS, LOCKS)["windows"]["preemptoff"]
    assert list(w["sites"]) == [("other", "zap_pte_range <- zap_pmd_range")]
    site = w["sites"][("other", "zap_pte_range <- zap_pmd_range")]
    assert (site["count"], site["max"], site["total_us"]) == (3, 12.0, 30.0)
    # each key's top count at its exact max, the rest at the midpoints of
    # the keys' buckets
    assert site["hist"] == {8.2: 1, 8.704: 1, 12.0: 1}
    assert w["by_class"] == {"other": site["hist"]}


def test_without_lock_hooks_the_stack_alone_decides(tmp_path):
    w = _guest(tmp_path, TWO_CPUS)["windows"]["preemptoff"]
    assert list(w["by_class"]) == ["pte-lock-zap"]
    assert w["max"]["open_class"] is None     # no stack of the max window


def test_summary_classes_follow_the_table_order(summary):
    for tr in load.TRACERS:
        classes = list(summary.workload("munmap").windows[tr].classes)
        assert classes == sorted(classes, key=attribute.CLASSES.index)


def test_aa_hold_tables_name_odd_and_even(tmp_path):
    run = load.load_run(make_run(str(tmp_path / "aa"), repeats=2, failed=False))
    s = summarize.build(run, "baseline", "baseline", n_resamples=20)
    txt = render_text.render(s)
    assert all(len(line) <= 80 for line in txt.splitlines())
    rows = _block(txt.splitlines(), "i_mmap lock hold time")
    assert [r.split()[0] for r in rows[1:3]] == ["odd", "even"]
    assert s.workload("munmap").locks.classes["i_mmap-lock"].baseline.hist
