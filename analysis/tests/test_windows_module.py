"""TRACE=windows: parsers, loading, report and plot on real guest output of
the mmlat_windows module, dump format 2 (fixtures/windows-6.1-tcg, see its
README).

Known answers are read from the fixture files with the small readers below
(their own regexes, not mmlat.parse) and the bucket reading documented in
guest/modules/mmlat_windows/README.md and load.bucket_hist: a bucket lo >= 64
of sub_bits 6 is [lo, lo + 2^(floor(log2 lo) - 6)), read at its midpoint;
below 64 a bucket is one ns; the top bucket of a histogram holds one count
at the exact max and the rest at the midpoint of [lo, max]."""
import math
import os
import re
import shutil
from fractions import Fraction

import pytest

from mmlat import attribute, load, parse, ptelock, report

F = os.path.join(os.path.dirname(__file__), "fixtures", "windows-6.1-tcg")
FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
WORKLOADS = ("munmap", "fork")
SUB_BITS = 6


def f(w, name):
    return os.path.join(F, w, name)


# ------------------------------------------------ independent file readers
def _lines(path, word):
    with open(path, encoding="utf-8") as fh:
        return [l.rstrip("\n") for l in fh if l.split(" ", 1)[0] == word]


def _ints(line):
    return {k: int(v) for k, v in re.findall(r"\b(\w+)=(\d+)(?=\s|$)", line)}


def file_kinds(w):
    """{kind: {n, max_ns, keyed, ...}} from the `kind` lines of windows.txt."""
    out = {}
    for l in _lines(f(w, "windows.txt"), "kind"):
        d = _ints(l)
        d["max_caller"] = re.search(r" max_caller=(\S+)", l).group(1)
        out[l.split()[1]] = d
    return out


def file_total(w):
    return _ints(_lines(f(w, "ptelock.txt"), "total")[0])


def file_sites(w):
    """[{n, max_ns, lost, discarded, at, func, off, size, buckets: {lo: n}}]
    from the `site lock` lines of ptelock.txt."""
    out = []
    for l in _lines(f(w, "ptelock.txt"), "site"):
        assert l.split()[1] == "lock"
        d = _ints(l)
        m = re.search(r" at=([^+\s]+)\+0x([0-9a-f]+)/0x([0-9a-f]+)", l)
        d["func"], d["off"], d["size"] = m.group(1), int(m.group(2), 16), int(m.group(3), 16)
        d["at"] = re.search(r" at=(\S+)", l).group(1)
        d["buckets"] = {int(a): int(b) for a, b in
                        re.findall(r"(\d+):(\d+),", re.search(r" buckets=(\S*)", l).group(1))}
        out.append(d)
    return out


def file_ops(path):
    with open(path, encoding="utf-8") as fh:
        return float(re.search(r"ops_per_s=(\S+)", fh.read()).group(1))


def width(lo):
    """Width of the sub_bits 6 bucket starting at lo."""
    return 1 if lo < 1 << SUB_BITS else 1 << (lo.bit_length() - 1 - SUB_BITS)


def read_values(buckets, max_ns):
    """{value_ns: n} of one histogram as documented (module README)."""
    out = {}
    filled = sorted(lo for lo, n in buckets.items() if n)
    for lo in filled:
        n = buckets[lo]
        if lo == filled[-1]:
            vals = [((lo + max_ns) / 2, n - 1), (max_ns, 1)]
        else:
            vals = [(lo if lo < 64 else lo + width(lo) / 2, n)]
        for v, c in vals:
            if c:
                out[v] = out.get(v, 0) + c
    return out


def merged(hists):
    out = {}
    for h in hists:
        for v, n in h.items():
            out[v] = out.get(v, 0) + n
    return out


def nearest_rank(h, q):
    """Smallest value with at least ceil(q/100 * N) values at or below it."""
    n = sum(h.values())
    rank = max(1, math.ceil(Fraction(str(q)) * n / 100))
    seen = 0
    for v in sorted(h):
        seen += h[v]
        if seen >= rank:
            return v


# Class of each PTE-lock user the fixtures have sites in (attribute.RULES
# by hand): zap and fork users by name, every other one "other".
ZAP, FORK = {"unmap_page_range"}, {"copy_page_range"}


def file_class_hist(w, cls):
    funcs = {"pte-lock-zap": ZAP, "pte-lock-fork": FORK}.get(cls)
    return merged(read_values(s["buckets"], s["max_ns"]) for s in file_sites(w)
                  if (s["func"] in funcs if funcs else s["func"] not in ZAP | FORK))


# ------------------------------------------------------------------- parse
@pytest.mark.parametrize("w", WORKLOADS)
def test_parse_windows_real(w):
    d = parse.parse_windows(f(w, "windows.txt"))
    assert d["version"] == 2
    p = d["params"]
    assert p["thresh_ns"] == 5000 and p["table_size"] == 512 and p["sub_bits"] == SUB_BITS
    assert p["running"] == 0
    assert all(p[tp] == 1 for tp in
               ("preempt_disable", "preempt_enable", "irq_disable", "irq_enable", "cpu_idle"))
    fk = file_kinds(w)
    assert set(d["kinds"]) == set(fk) == {"preempt", "irq"}
    for kind, k in d["kinds"].items():
        assert k["n"] == fk[kind]["n"] > 1000 and k["max_ns"] == fk[kind]["max_ns"]
        # every window is in the histogram, the max in its last bucket
        assert sum(n for _, _, n in k["buckets"]) == k["n"]
        lo, hi, _ = k["buckets"][-1]
        assert lo <= k["max_ns"] < hi
        for lo, hi, n in k["buckets"]:
            assert n > 0
            assert hi - lo == width(lo)
            if lo >= 64:
                assert (hi - lo) * 64 <= lo
        assert all(a[1] <= b[0] for a, b in zip(k["buckets"], k["buckets"][1:]))
        # keyed windows are those at or above the threshold
        assert k["overflow"] == 0
        keys = [e for e in d["keys"] if e["kind"] == kind]
        assert sum(e["n"] for e in keys) == k["keyed"]
        above = sum(n for lo, hi, n in k["buckets"] if lo >= 5000)
        straddle = sum(n for lo, hi, n in k["buckets"] if lo < 5000 < hi)
        assert above <= k["keyed"] <= above + straddle
        assert max(e["max_ns"] for e in keys) == k["max_ns"]
        # the longest window's stack, innermost first: the module's probe
        stack = k["maxstack"]
        assert len(stack) == len([l for l in _lines(f(w, "windows.txt"), "maxstack")
                                  if l.split()[1] == kind]) > 2
        probe = {"preempt": "mw_preempt_on", "irq": "mw_irq_on"}[kind]
        assert parse.sym_func(stack[0]) == probe and stack[0].endswith(" [mmlat_windows]")
        # on these captures the function that opened the longest window is
        # still on the stack at its end
        assert parse.sym_func(k["max_parent"]) in [parse.sym_func(s) for s in stack]
    for e in d["keys"]:
        assert sum(e["buckets"].values()) == e["n"]
        for lo in e["buckets"]:
            assert lo % width(lo) == 0   # a bucket boundary
        top = max(e["buckets"])
        assert top <= e["max_ns"] < top + width(top)
        assert e["n"] * 5000 <= e["total_ns"] <= e["n"] * e["max_ns"]
        assert e["caller"] == "[idle]" or ("+0x" in e["caller"] and "/0x" in e["caller"])


@pytest.mark.parametrize("w", WORKLOADS)
def test_windows_counters_real(w):
    d = parse.parse_windows(f(w, "windows.txt"))
    fk = file_kinds(w)
    for kind, k in d["kinds"].items():
        for c in ("unmatched", "nested_begin", "edge", "idle_cut", "overflow"):
            assert k[c] == fk[kind][c]
        assert k["unmatched"] == 0 and k["nested_begin"] == 0


@pytest.mark.parametrize("w", WORKLOADS)
def test_parse_ptelock_real(w):
    d = parse.parse_ptelock(f(w, "ptelock.txt"))
    assert d["version"] == 2
    p = d["params"]
    assert p["method"] == "ftrace-caller" and p["ptl_filter"] == "struct-page"
    assert p["sub_bits"] == SUB_BITS and p["running"] == 0
    # the lock users found in the running kernel, zap and fork ones included
    sizes = {l.split()[1]: _ints(l)["size"] for l in _lines(f(w, "ptelock.txt"), "user")}
    assert d["users"] == list(sizes) and p["functions"] == len(d["users"]) > 30
    assert {"unmap_page_range", "copy_page_range", "__handle_mm_fault"} <= set(d["users"])
    assert attribute.classify("unmap_page_range") == "pte-lock-zap"
    assert attribute.classify("copy_page_range") == "pte-lock-fork"
    fs = file_sites(w)
    assert len(d["sites"]) == len(fs) > 5
    for s, x in zip(d["sites"], fs):
        assert s["type"] == "lock" and s["at"] == x["at"] and s["func"] == x["func"]
        assert (s["n"], s["max_ns"], s["lost"], s["discarded"]) == (
            x["n"], x["max_ns"], x["lost"], x["discarded"])
        assert s["buckets"] == x["buckets"]
        assert sum(s["buckets"].values()) == s["n"] > 0
        top = max(s["buckets"])
        assert top <= s["max_ns"] < top + width(top)
        # a site is a return address inside a user the module listed
        assert x["size"] == sizes[x["func"]] and x["off"] < x["size"]
    funcs = {s["func"] for s in d["sites"]}
    assert {"unmap_page_range", "copy_page_range", "__handle_mm_fault"} <= funcs
    zap = [s for s in d["sites"] if s["func"] == "unmap_page_range"]
    assert len(zap) == 1 and zap[0]["n"] > 500
    fork = [s for s in d["sites"] if s["func"] == "copy_page_range"]
    # copy_pte_range: dst and src PTE locks, taken as a pair
    assert len(fork) == 2 and fork[0]["at"] != fork[1]["at"]
    assert fork[0]["n"] == fork[1]["n"] > 0
    if w == "fork":
        assert fork[0]["n"] > 1000 and zap[0]["n"] > 1000


@pytest.mark.parametrize("w", WORKLOADS)
def test_ptelock_counters_real(w):
    t = file_total(w)
    fs = file_sites(w)
    d = parse.parse_ptelock(f(w, "ptelock.txt"))
    assert d["totals"] == t
    # the totals are the sums over the sites
    assert t["holds"] == sum(s["n"] for s in fs) > 10000
    assert t["lost"] == sum(s["lost"] for s in fs)
    assert t["discarded"] == sum(s["discarded"] for s in fs)
    assert t["nonptl"] == 0 and t["site_overflow"] == 0 and t["in_flight"] == 0
    # the bound: at most 1 % discarded and 0.1 % lost holds
    assert t["discarded"] * 100 <= t["holds"]
    assert t["lost"] * 1000 <= t["holds"]


@pytest.mark.parametrize("w", WORKLOADS)
def test_no_hold_outlasts_the_longest_preempt_window(w):
    # a PTE lock keeps preemption off: every hold is inside a preempt-off
    # window of the same boot
    longest_window = parse.parse_windows(f(w, "windows.txt"))["kinds"]["preempt"]["max_ns"]
    longest_hold = max(s["max_ns"] for s in parse.parse_ptelock(f(w, "ptelock.txt"))["sites"])
    assert longest_hold == max(s["max_ns"] for s in file_sites(w))
    assert 0 < longest_hold <= longest_window == file_kinds(w)["preempt"]["max_ns"]


def test_parse_rejects_other_text():
    with pytest.raises(ValueError):
        parse.parse_windows("kind preempt n=1\n", is_text=True)
    with pytest.raises(ValueError):
        parse.parse_ptelock("site lock n=1\n", is_text=True)


def test_parse_rejects_format_1():
    with pytest.raises(ValueError, match="mmlat_windows format 1"):
        parse.parse_windows("mmlat_windows 1\nkind preempt n=1 total_ns=7000 max_ns=7000\n"
                            "key preempt cpu=0 n=1 total_ns=7000 max_ns=7000 caller=a+0x1/0x2 "
                            "parent=b+0x1/0x2 log2_ns=12:1,\n", is_text=True)
    with pytest.raises(ValueError, match="mmlat_ptelock format 1"):
        parse.parse_ptelock("mmlat_ptelock 1\ntotal unmatched_unlock=0 lost=2\n", is_text=True)


def test_load_refuses_format_1(tmp_path):
    g = tmp_path / "run" / "cells" / "mainline" / "munmap" / "traced" / "r1" / "guest"
    (g / "windows").mkdir(parents=True)
    (g.parent / "cell.json").write_text('{"status": "ok"}')
    with open(f("munmap", "windows.txt"), encoding="utf-8") as fh:
        text = fh.read()
    (g / "windows" / "windows.txt").write_text(text.replace("mmlat_windows 2", "mmlat_windows 1", 1))
    with pytest.raises(load.UnreadableRun, match="format 1"):
        load.load_run(str(tmp_path / "run"))


def test_module_symbol_with_module_suffix():
    d = parse.parse_windows(
        "mmlat_windows 2\nparam clock=local_clock thresh_ns=5000 sub_bits=6\n"
        "kind preempt n=1 total_ns=7000 max_ns=7000 keyed=1 overflow=0 "
        "max_caller=mmlat_calib_preempt_window+0x1a/0x60 [mmlat_calib] "
        "max_parent=calib_write+0x90/0x1a0 [mmlat_calib]\n"
        "maxstack preempt 0 mw_preempt_on+0x11e/0x160 [mmlat_windows]\n"
        "maxstack preempt 1 mmlat_calib_preempt_window+0x40/0x60 [mmlat_calib]\n"
        "bucket preempt lo_ns=6976 hi_ns=7040 n=1\n"
        "key preempt cpu=0 n=1 total_ns=7000 max_ns=7000 "
        "caller=mmlat_calib_preempt_window+0x1a/0x60 [mmlat_calib] "
        "parent=calib_write+0x90/0x1a0 [mmlat_calib] buckets=6976:1,\n", is_text=True)
    k = d["kinds"]["preempt"]
    assert parse.sym_func(k["max_caller"]) == "mmlat_calib_preempt_window"
    assert parse.sym_func(k["max_parent"]) == "calib_write"
    assert [parse.sym_func(s) for s in k["maxstack"]] == ["mw_preempt_on",
                                                         "mmlat_calib_preempt_window"]
    assert k["buckets"] == [(6976, 7040, 1)]
    e = d["keys"][0]
    assert parse.sym_func(e["caller"]) == "mmlat_calib_preempt_window"
    assert parse.sym_func(e["parent"]) == "calib_write" and e["buckets"] == {6976: 1}
    p = parse.parse_ptelock(
        "mmlat_ptelock 2\nparam clock=local_clock method=ftrace-caller sub_bits=6\n"
        "user mmlat_calib_ptl_hold size=96\n"
        "total holds=1 lost=0 discarded=0 nonptl=0 site_overflow=0 in_flight=0\n"
        "site lock n=1 total_ns=30100 max_ns=30100 lost=0 discarded=0 "
        "at=mmlat_calib_ptl_hold+0x2c/0x60 [mmlat_calib] buckets=29696:1,\n", is_text=True)
    assert p["users"] == ["mmlat_calib_ptl_hold"]
    s = p["sites"][0]
    assert s["func"] == "mmlat_calib_ptl_hold" and s["at"] == "mmlat_calib_ptl_hold+0x2c/0x60"
    assert s["buckets"] == {29696: 1} and s["max_ns"] == 30100


def test_pte_classes():
    for fn, cls in (("unmap_page_range", "pte-lock-zap"), ("copy_page_range", "pte-lock-fork"),
                    ("__handle_mm_fault", "pte-lock-other"),
                    ("follow_p4d_mask.constprop.0", "pte-lock-other"),
                    ("move_page_tables.part.0", "pte-lock-other"), ("schedule", "other")):
        assert attribute.classify(fn) == cls


def test_ptelock_summary_known_answer():
    d = parse.parse_ptelock(
        "mmlat_ptelock 2\n"
        "param clock=local_clock method=ftrace-caller functions=2 missing=0 "
        "ptl_filter=struct-page sub_bits=6 running=0\n"
        "user zap_pte_range size=1024\nuser copy_pte_range size=1024\n"
        "total holds=103 lost=2 discarded=3 nonptl=0 site_overflow=0 in_flight=0\n"
        # 1024: [1024, 1040); 2048: [2048, 2080); 8960: [8960, 9088) holds the max
        "site lock n=100 total_ns=1 max_ns=9000 lost=2 discarded=3 "
        "at=zap_pte_range+0x10/0x400 buckets=1024:97,2048:1,8960:2,\n"
        # below 64 ns a bucket is one ns: exact
        "site lock n=3 total_ns=136 max_ns=48 lost=0 discarded=0 "
        "at=copy_pte_range+0x30/0x400 buckets=40:1,48:2,\n", is_text=True)
    pl = load.ptelock_summary(d, 6)
    zap = pl["sites"]["zap_pte_range+0x10/0x400"]
    assert zap["func"] == "zap_pte_range" and zap["class"] == "pte-lock-zap"
    assert (zap["count"], zap["max_ns"], zap["lost"], zap["discarded"]) == (100, 9000, 2, 3)
    # midpoints; the top bucket: one count at the max, one at (8960 + 9000) / 2
    assert zap["hist_ns"] == {1032: 97, 2064: 1, 8980: 1, 9000: 1}
    cp = pl["sites"]["copy_pte_range+0x30/0x400"]
    assert cp["class"] == "pte-lock-fork" and cp["hist_ns"] == {40: 1, 48: 2}
    assert pl["by_class"] == {"pte-lock-zap": zap["hist_ns"], "pte-lock-fork": {40: 1, 48: 2}}
    assert pl["by_func"]["zap_pte_range"] == zap["hist_ns"]
    assert pl["totals"]["holds"] == 103 and pl["totals"]["lost"] == 2
    assert pl["params"]["sub_bits"] == 6
    s = ptelock.summarize({"baseline": [{"ptelock": pl}], "patched": []})
    st = s["classes"]["pte-lock-zap"]["baseline"]
    assert (st["count"], st["p50"], st["p99"], st["max"]) == (100, 1032, 8980, 9000)
    assert st["mean"] == pytest.approx((97 * 1032 + 2064 + 8980 + 9000) / 100)
    assert s["classes"]["pte-lock-fork"]["baseline"]["p50"] == 48
    assert s["funcs"]["zap_pte_range"]["baseline"]["max"] == 9000
    assert s["n_cells"] == {"baseline": 1, "patched": 0}
    assert ptelock.summarize({"baseline": [{"ptelock": None}]}) is None


# ------------------------------------------------------- a run of fixtures
CYCLICTEST = os.path.join(FIXTURES, "cyclictest.hist")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One repeat of each workload: the clean boot with the clean
    workload.txt and a cyclictest histfile, the traced boot with the
    window module's dumps."""
    run = tmp_path_factory.mktemp("w") / "run"
    for w in WORKLOADS:
        for boot in ("clean", "traced"):
            cg = run / "cells" / "mainline" / w / boot / "r1" / "guest"
            cg.mkdir(parents=True)
            if boot == "clean":
                shutil.copy(f(w, "workload-clean.txt"), cg / "workload.txt")
                shutil.copy(CYCLICTEST, cg / "cyclictest.hist")
            else:
                (cg / "windows").mkdir()
                for n in ("windows.txt", "ptelock.txt"):
                    shutil.copy(f(w, n), cg / "windows")
                shutil.copy(f(w, "workload.txt"), cg)
            (cg.parent / "cell.json").write_text('{"status": "ok", "accel": "tcg-icount"}')
    return str(run)


@pytest.fixture(scope="module")
def loaded(run):
    r = load.load_run(run)
    return r, report.build(r, "mainline", "mainline", n_resamples=20)


def _cell(r, w, boot):
    cs = [c for c in r["cells"] if c["workload"] == w and c["boot"] == boot]
    assert len(cs) == 1
    return cs[0]


def test_load_module_cells(loaded):
    r, _ = loaded
    assert len(r["cells"]) == 4
    for w in WORKLOADS:
        c = _cell(r, w, "traced")
        fk = file_kinds(w)
        for tr, kind in (("preemptoff", "preempt"), ("irqsoff", "irq")):
            wn = c["windows"][tr]
            k = fk[kind]
            assert wn["present"] and wn["source"] == "module"
            assert sum(wn["hist"].values()) == k["n"]
            assert max(wn["hist"]) == k["max_ns"] / 1000.0
            assert sum(sum(h.values()) for h in wn["by_class"].values()) == k["keyed"]
            assert wn["below_thresh"] == k["n"] - k["keyed"] - k["overflow"]
            assert wn["thresh_us"] == 5.0
            assert wn["module_max"]["us"] == k["max_ns"] / 1000.0
            assert wn["module_max"]["caller"] == k["max_caller"]
            # no max tracer beside the module any more
            assert wn["tracer_max"] is None and wn["snapshot"] is None
        po = c["windows"]["preemptoff"]
        pl = c["ptelock"]
        assert {at: s["count"] for at, s in pl["sites"].items()} == {
            s["at"]: s["n"] for s in file_sites(w)}
        # a PTE lock keeps preemption off: no hold outlasts the longest
        # preempt-off window of its class
        for cls, h in pl["by_class"].items():
            assert cls.startswith("pte-lock-")
            assert h == file_class_hist(w, cls)
            assert max(h) / 1000.0 <= max(po["by_class"][cls]) + 1
        t = file_total(w)
        assert c["counters"] == load.TracerCounters(
            windows=fk["preempt"]["n"] + fk["irq"]["n"], unmatched=0, nested_begin=0,
            overflow=0, holds=t["holds"], ptelock_discarded=t["discarded"],
            ptelock_lost=t["lost"])
        assert c["ops_per_s"] == file_ops(f(w, "workload.txt"))
        clean = _cell(r, w, "clean")
        assert clean["ptelock"] is None and clean["counters"] is None
        assert not clean["windows"]["preemptoff"]["present"]
        assert clean["ops_per_s"] == file_ops(f(w, "workload-clean.txt"))
    fork = _cell(r, "fork", "traced")
    assert sum(fork["ptelock"]["by_class"]["pte-lock-fork"].values()) == sum(
        s["n"] for s in file_sites("fork") if s["func"] in FORK) > 2000


def test_summary_from_both_boots(loaded):
    _, s = loaded
    with open(CYCLICTEST, encoding="utf-8") as fh:
        ct = fh.read()
    for w in WORKLOADS:
        ws = s["workloads"][w]
        assert ws["n_cells"] == {"clean": {"baseline": 1, "patched": 0},
                                 "traced": {"baseline": 1, "patched": 0}}
        # latency and throughput from the clean boot
        assert ws["latency"]["baseline"]["count"] == int(re.search(r"# Total: (\d+)", ct).group(1))
        assert ws["latency"]["baseline"]["max"] == int(
            re.search(r"# Max Latencies: (\d+)", ct).group(1))
        clean_ops = file_ops(f(w, "workload-clean.txt"))
        assert ws["throughput"]["baseline"]["per_repeat"] == [clean_ops]
        assert ws["traced_over_clean"]["baseline"]["median"] == pytest.approx(
            file_ops(f(w, "workload.txt")) / clean_ops)
        # the module's loss counts, from the traced boot
        t = file_total(w)
        c = ws["counters"]["baseline"]
        assert (c["holds"], c["ptelock_lost"], c["ptelock_discarded"]) == (
            t["holds"], t["lost"], t["discarded"])
        assert c["rates"]["ptelock_lost"] == pytest.approx(t["lost"] / t["holds"])
        assert ws["counters"]["patched"] is None
    assert s["workloads"]["munmap"]["counters"]["baseline"]["ptelock_lost"] == 2


def _section(txt, w):
    lines = txt.splitlines()
    start = [i for i, l in enumerate(lines) if l.startswith("== %s (" % w)]
    assert len(start) == 1
    end = [i for i, l in enumerate(lines) if i > start[0] and l.startswith("== ")]
    return lines[start[0]:end[0] if end else len(lines)]


def test_report_pte_table(loaded):
    r, s = loaded
    txt = report.render_txt(s)
    assert all(len(l) <= 80 for l in txt.splitlines())
    assert txt.count("PTE-lock hold time (us), traced boots") == 2
    for w in WORKLOADS:
        sec = _section(txt, w)
        assert sec[0] == "== %s (clean boots: 1 mainline odd, 0 mainline even; traced: 1, 0) ==" % w
        i = [j for j, l in enumerate(sec) if l.startswith("PTE-lock hold time")][0]
        table = sec[i:]
        for cls in ("pte-lock-zap", "pte-lock-fork", "pte-lock-other"):
            h = file_class_hist(w, cls)
            row = [l for l in table if l.strip().startswith(cls + " ")][0]
            assert row.split()[-4:] == [
                str(sum(h.values())), "%.1f" % (nearest_rank(h, 50) / 1000),
                "%.1f" % (nearest_rank(h, 99) / 1000), "%.1f" % (max(h) / 1000)]
        # the five longest holds by function, their max in us
        fmax = {}
        for x in file_sites(w):
            fmax[x["func"]] = max(fmax.get(x["func"], 0), x["max_ns"])
        top = sorted(fmax.items(), key=lambda kv: -kv[1])[:5]
        j = [j for j, l in enumerate(table) if l.startswith("  longest holds by function")][0]
        assert [l.split()[:2] for l in table[j + 1:j + 6]] == [
            [fn, "%.1f" % (mx / 1000)] for fn, mx in top]
        # the module's counters: holds and the lost rate, from the file
        t = file_total(w)
        fk = file_kinds(w)
        k = [j for j, l in enumerate(sec) if l.startswith("tracer counters")][0]
        row = sec[k + 2].split()
        assert row[-7:] == [str(fk["preempt"]["n"] + fk["irq"]["n"]), "0.0e+00", "0.0e+00",
                            "0.0e+00", str(t["holds"]), "%.1e" % (t["discarded"] / t["holds"]),
                            "%.1e" % (t["lost"] / t["holds"])]
    # the windows reach the class table of the report too
    assert "pte-lock-zap" in "\n".join(_section(txt, "munmap")[:20])


def test_ptelock_plot_content(loaded):
    from mmlat import plot
    _, s = loaded
    fig = plot.fig_ptelock(s)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["PTE-lock hold CCDF, traced boots: fork",
                      "PTE-lock hold CCDF, traced boots: munmap"]
    for ax, w in zip(fig.axes, ("fork", "munmap")):
        lines = ax.get_lines()
        # one boot of one variant: an A/A view of its odd repeats, no even ones
        assert [line.get_label() for line in lines] == [
            "mainline (odd repeats) pte-lock-zap", "mainline (odd repeats) pte-lock-fork"]
        for line, cls in zip(lines, ("pte-lock-zap", "pte-lock-fork")):
            h = file_class_hist(w, cls)
            n = sum(h.values())
            xs = sorted(h)
            # the curve: P(hold >= x) at every value, in us, ending at the
            # longest hold with one of n
            assert list(line.get_xdata()) == pytest.approx([x / 1000.0 for x in xs])
            assert list(line.get_ydata()) == pytest.approx(
                [sum(c for v, c in h.items() if v >= x) / n for x in xs])
            assert max(line.get_xdata()) == pytest.approx(
                max(x["max_ns"] for x in file_sites(w) if x["func"] in
                    {"pte-lock-zap": ZAP, "pte-lock-fork": FORK}[cls]) / 1000.0)
            assert line.get_ydata()[-1] == pytest.approx(1.0 / n)
    assert "mainline vs mainline" in fig._suptitle.get_text()
