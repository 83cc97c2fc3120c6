"""TRACE=windows: parsers, loading and report on real guest output of the
mmlat_windows module (fixtures/windows-6.1-tcg, see its README)."""
import os
import shutil

import pytest

from mmlat import attribute, load, parse, ptelock, report

F = os.path.join(os.path.dirname(__file__), "fixtures", "windows-6.1-tcg")


def f(w, name):
    return os.path.join(F, w, name)


@pytest.mark.parametrize("w", ["munmap", "fork"])
def test_parse_windows_real(w):
    d = parse.parse_windows(f(w, "windows.txt"))
    assert d["version"] == 1
    assert d["params"]["thresh_ns"] == 5000 and d["params"]["table_size"] == 1024
    assert all(d["params"][tp] == 1 for tp in
               ("preempt_disable", "preempt_enable", "irq_disable", "irq_enable", "cpu_idle"))
    for kind in ("preempt", "irq"):
        k = d["kinds"][kind]
        # every window is in the histogram, the max in its last bucket
        assert sum(n for _, _, n in k["buckets"]) == k["n"] > 1000
        lo, hi, _ = k["buckets"][-1]
        assert lo <= k["max_ns"] < hi
        assert all(a[1] == b[0] or a[1] <= b[0] for a, b in zip(k["buckets"], k["buckets"][1:]))
        # keyed windows are those at or above the threshold
        assert k["overflow"] == 0
        keys = [e for e in d["keys"] if e["kind"] == kind]
        assert sum(e["n"] for e in keys) == k["keyed"]
        above = sum(n for lo, hi, n in k["buckets"] if lo >= 5000)
        straddle = sum(n for lo, hi, n in k["buckets"] if lo < 5000 < hi)
        assert above <= k["keyed"] <= above + straddle
        assert max(e["max_ns"] for e in keys) == k["max_ns"]
    for e in d["keys"]:
        assert sum(e["log2_ns"].values()) == e["n"]
        top = max(e["log2_ns"])
        assert 2 ** top <= e["max_ns"] < 2 ** (top + 1)
        assert e["n"] * 5000 <= e["total_ns"] <= e["n"] * e["max_ns"]
        assert e["caller"] == "[idle]" or ("+0x" in e["caller"] and "/0x" in e["caller"])


@pytest.mark.parametrize("w", ["munmap", "fork"])
def test_module_max_agrees_with_tracer(w):
    # two independent measurements of the longest preempt-off window
    d = parse.parse_windows(f(w, "windows.txt"))
    tracer_us = parse.parse_tracer_max(f(w, "preemptoff.max"))
    assert abs(d["kinds"]["preempt"]["max_ns"] / 1000.0 - tracer_us) <= 0.02 * tracer_us


def test_parse_ptelock_real():
    d = parse.parse_ptelock(f("fork", "ptelock.txt"))
    assert d["version"] == 1
    assert d["params"]["method"] == "kprobe-callsite"
    assert d["params"]["ptl_filter"] == "struct-page"
    assert d["params"]["probes"] == len([s for s in d["sites"] if s["probed"]]) > 50
    assert d["params"]["rejected"] == 0
    funcs = {s["func"] for s in d["sites"] if s["type"] == "lock"}
    assert {"unmap_page_range", "copy_page_range", "__handle_mm_fault"} <= funcs
    for s in d["sites"]:
        assert sum(s["buckets"].values()) == s["n"]
        if s["n"]:
            top = max(s["buckets"])
            assert top <= s["max_ns"] < top * 1.125 + 1
        if s["type"] == "unlock":
            assert s["n"] == 0   # hold times count at the lock site
        assert s["nonptl"] == 0
    zap = [s for s in d["sites"] if s["func"] == "unmap_page_range" and s["type"] == "lock"]
    assert len(zap) == 1 and zap[0]["n"] > 1000
    fork = [s for s in d["sites"] if s["func"] == "copy_page_range" and s["n"]]
    assert len(fork) == 2   # copy_pte_range: dst and src PTE locks


def test_parse_rejects_other_text():
    with pytest.raises(ValueError):
        parse.parse_windows("kind preempt n=1\n", is_text=True)
    with pytest.raises(ValueError):
        parse.parse_ptelock("site lock n=1\n", is_text=True)


def test_module_symbol_with_module_suffix():
    d = parse.parse_windows(
        "mmlat_windows 1\nkind preempt n=1 total_ns=7000 max_ns=7000\n"
        "bucket preempt lo_ns=6656 hi_ns=7168 n=1\n"
        "key preempt cpu=0 n=1 total_ns=7000 max_ns=7000 "
        "caller=mmlat_calib_preempt_window+0x1a/0x60 [mmlat_calib] "
        "parent=calib_write+0x90/0x1a0 [mmlat_calib] log2_ns=12:1,\n", is_text=True)
    e = d["keys"][0]
    assert parse.sym_func(e["caller"]) == "mmlat_calib_preempt_window"
    assert parse.sym_func(e["parent"]) == "calib_write" and e["log2_ns"] == {12: 1}


def test_ns_hist_to_us():
    assert parse.ns_hist_to_us({16384: 3, 18432: 2}) == {16: 3, 18: 2}
    # the top count moves to the exact max
    assert parse.ns_hist_to_us({16384: 3, 18432: 2}, 20100) == {16: 3, 18: 1, 20: 1}
    assert parse.ns_hist_to_us({16384: 1}, 16900) == {16: 1}


def test_pte_classes():
    for fn, cls in (("unmap_page_range", "pte-lock-zap"), ("copy_page_range", "pte-lock-fork"),
                    ("__handle_mm_fault", "pte-lock-other"),
                    ("follow_p4d_mask.constprop.0", "pte-lock-other"),
                    ("move_page_tables.part.0", "pte-lock-other"), ("schedule", "other")):
        assert attribute.classify(fn) == cls


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    run = tmp_path_factory.mktemp("w") / "run"
    for w in ("munmap", "fork"):
        cg = run / "cells" / "mainline" / w / "r1" / "guest"
        (cg / "windows").mkdir(parents=True)
        (cg / "tracer").mkdir()
        for n in ("windows.txt", "ptelock.txt"):
            shutil.copy(f(w, n), cg / "windows")
        shutil.copy(f(w, "preemptoff.max"), cg / "tracer")
        shutil.copy(f(w, "workload.txt"), cg)
        (cg.parent / "cell.json").write_text('{"status": "ok", "accel": "tcg-icount"}')
    return str(run)


def test_load_module_cells(run):
    r = load.load_run(run)
    for c in r["cells"]:
        d = parse.parse_windows(f(c["workload"], "windows.txt"))
        for tr, kind in (("preemptoff", "preempt"), ("irqsoff", "irq")):
            w = c["windows"][tr]
            k = d["kinds"][kind]
            assert w["present"] and w["source"] == "module"
            assert sum(w["hist"].values()) == k["n"]
            assert max(w["hist"]) == k["max_ns"] // 1000
            assert sum(sum(h.values()) for h in w["by_class"].values()) == k["keyed"]
            assert w["below_thresh"] == k["n"] - k["keyed"]
        po = c["windows"]["preemptoff"]
        pl = c["ptelock"]
        # a PTE lock keeps preemption off: no hold outlasts the longest
        # preempt-off window of its class
        for cls, h in pl["by_class"].items():
            assert cls.startswith("pte-lock-")
            assert max(h) / 1000.0 <= max(po["by_class"][cls]) + 1
    fork = [c for c in r["cells"] if c["workload"] == "fork"][0]
    assert fork["ptelock"]["by_class"]["pte-lock-fork"]
    assert fork["windows"]["preemptoff"]["tracer_max"] == 362


def test_report_pte_table(run):
    r = load.load_run(run)
    s = report.build(r, "mainline", "mainline", n_resamples=20)
    txt = report.render_txt(s, r)
    assert all(len(l) <= 80 for l in txt.splitlines())
    assert txt.count("PTE-lock hold time (us") == 2
    pl = s["workloads"]["fork"]["ptelock"]
    st = pl["classes"]["pte-lock-fork"]["baseline"]
    assert st["count"] == sum(sum(h.values()) for c in r["cells"] if c["workload"] == "fork"
                              for h in [c["ptelock"]["by_class"]["pte-lock-fork"]])
    assert st["p50"] <= st["p99"] <= st["max"]
    lines = txt.splitlines()
    fork_sec = lines[lines.index("== fork (cells: 1 baseline, 0 patched) =="):]
    table = fork_sec[[i for i, l in enumerate(fork_sec) if l.startswith("PTE-lock hold")][0]:]
    row = [l for l in table if l.strip().startswith("pte-lock-fork")][0]
    assert row.split()[2:] == [str(st["count"]), "%.1f" % (st["p50"] / 1000),
                               "%.1f" % (st["p99"] / 1000), "%.1f" % (st["max"] / 1000)]
    assert "copy_page_range" in txt and "unmap_page_range" in txt
    # the windows reach the class table of the report too
    assert "pte-lock-zap" in txt


def test_ptelock_summary_known_answer():
    cell = {"ptelock": load.ptelock_summary(parse.parse_ptelock(
        "mmlat_ptelock 1\ntotal unmatched_unlock=0 lost=2\n"
        "site lock n=100 total_ns=1 max_ns=9000 nonptl=0 lost=2 discarded=3 probed=1 "
        "optimized=0 at=zap_pte_range+0x10/0x400 buckets=1024:98,2048:1,8192:1,\n"
        "site unlock n=0 total_ns=0 max_ns=0 nonptl=0 lost=0 discarded=0 probed=1 "
        "optimized=0 at=zap_pte_range+0x90/0x400 buckets=\n", is_text=True))}
    pl = ptelock.summarize({"baseline": [cell], "patched": []})
    st = pl["classes"]["pte-lock-zap"]["baseline"]
    assert st["count"] == 100 and st["p50"] == 1024 and st["p99"] == 2048 and st["max"] == 9000
    assert pl["lost"]["baseline"] == 2 and pl["discarded"]["baseline"] == 3
    assert ptelock.summarize({"baseline": [{"ptelock": None}]}) is None


def test_ptelock_plot_content(run):
    from mmlat import plot
    r = load.load_run(run)
    s = report.build(r, "mainline", "mainline", n_resamples=20)
    fig = plot.fig_ptelock(r, s)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["PTE-lock hold CCDF: fork", "PTE-lock hold CCDF: munmap"]
    fork = fig.axes[0]
    labels = [line.get_label() for line in fork.get_lines()]
    # one boot of one variant: an A/A view of its even repeats
    assert labels == ["mainline (even repeats) pte-lock-zap",
                      "mainline (even repeats) pte-lock-fork"]
    # the curve ends at the longest hold, in us
    fork_line = fork.get_lines()[1]
    longest = max(max(c["ptelock"]["by_class"]["pte-lock-fork"]) for c in r["cells"]
                  if c["workload"] == "fork")
    assert max(fork_line.get_xdata()) == longest / 1000.0
    assert "mainline vs mainline" in fig._suptitle.get_text()
