import glob
import json
import os
import re
import types

import pytest

from mmlat import (buckets, endpoints, load, model, plot, render_text, report, run_table, sequential, stats,
                   summarize)
from mmlat import formatting as fmt
from mmlat.__main__ import main
from plan import workloads

import fakerun
from fakerun import make_run

# boots a side: enough for the gate to call a 25 us shift of p99.9 (one
# traced boot fails)
REPEATS = 6


@pytest.fixture(scope="module")
def worse_run(tmp_path_factory):
    # One traced boot fails; the rest are enough boots for significance.
    return make_run(str(tmp_path_factory.mktemp("r") / "run"), shift=25, repeats=REPEATS)


@pytest.fixture(scope="module")
def worse(worse_run):
    run = load.load_run(worse_run)
    return run, summarize.build(run, n_resamples=50)


def comparison(s, workload, endpoint):
    return s.workload(workload).comparison(endpoint)


def test_load_attribution_from_hist_triggers(tmp_path):
    run = load.load_run(make_run(str(tmp_path / "full"), repeats=2, trace="full"))
    c = [x for x in run["cells"] if x["variant"] == "baseline" and x["boot"] == "traced"][0]
    po = c["windows"]["preemptoff"]
    assert po["by_class"]["pte-lock-zap"] == {3: 500, 1000: 2}
    assert po["by_class"]["pte-lock-fork"] == {40: 20}
    assert po["by_class"]["softirq"] == {80: 5}
    assert po["tracer_max"] == 1000
    clean = [x for x in run["cells"] if x["variant"] == "baseline" and x["boot"] == "clean"][0]
    assert not clean["windows"]["preemptoff"]["present"] and clean["counters"] is None


def test_boots_are_loaded_by_kind_and_repeat(worse_run):
    run = load.load_run(worse_run)
    cells = [(c["variant"], c["workload"], c["boot"], c["repeat"]) for c in run["cells"]]
    assert len(cells) == 2 * 2 * 2 * REPEATS
    assert ("patched", "fork", "traced", REPEATS) in cells
    failed = [c for c in run["cells"] if c["status"] != "ok"]
    assert [load.cell_name(c) for c in failed] == ["patched/fork/traced/r%d" % REPEATS]


def test_latency_and_throughput_from_clean_windows_from_traced(worse):
    run, s = worse
    for w in ("munmap", "fork"):
        ws = s.workload(w)
        for vi, side in enumerate(("baseline", "patched")):
            clean = load.ok_cells(run, side, w, "clean")
            # every cyclictest sample of the clean boots and no other
            assert ws.latency[side].count == sum(sum(c["lat_hist"].values()) for c in clean)
            # traced boots run TRACED_LATENCY_US slower: the clean max is below
            assert ws.latency[side].max < fakerun.TRACED_LATENCY_US
            assert ws.throughput[side].per_repeat == [
                fakerun.clean_ops(vi, r) for r in range(1, REPEATS + 1)]
            traced = load.ok_cells(run, side, w, "traced")
            assert ws.windows["preemptoff"].overall[side].count == sum(
                sum(c["windows"]["preemptoff"]["hist"].values()) for c in traced) > 0
            assert ws.windows["preemptoff"].overall[side].max == fakerun.zap_ns(vi, 25) / 1000
            assert ws.locks.boots[side] == len(traced)
            assert ws.counters[side].total.windows == sum(c["counters"].windows for c in traced)
    assert s.workload("fork").boots == {"clean": model.Sides(REPEATS, REPEATS),
                                        "traced": model.Sides(REPEATS, REPEATS - 1)}


def test_traced_over_clean_ratio(worse):
    _, s = worse
    r = s.workload("munmap").traced_over_clean
    for vi, side in enumerate(("baseline", "patched")):
        # repeat 1 is an outlier: the median over repeats ignores it
        assert r[side].median == pytest.approx(fakerun.TRACED_RATIO[vi])
        assert r[side].per_repeat[0] == (1, pytest.approx(
            fakerun.TRACED_RATIO[vi] * fakerun.OUTLIER))
    # a repeat whose traced boot failed has no ratio
    fork = s.workload("fork").traced_over_clean.patched.per_repeat
    assert [rep for rep, _ in fork] == list(range(1, REPEATS))
    txt = render_text.render(s)
    table = txt[txt.index("traced/clean throughput"):].splitlines()
    assert table[1].split() == ["workload", "baseline", "patched"]
    assert table[2].split() == ["fork", "0.13", "0.15"]
    assert table[3].split() == ["munmap", "0.13", "0.15"]


def test_throughput_ratio_pairs_repeats():
    clean = [{"repeat": 1, "ops_per_s": 100.0}, {"repeat": 2, "ops_per_s": 200.0},
             {"repeat": 3, "ops_per_s": 50.0}]
    traced = [{"repeat": 2, "ops_per_s": 20.0}, {"repeat": 3, "ops_per_s": 10.0},
              {"repeat": 4, "ops_per_s": 99.0}]
    r = summarize.throughput_ratio(clean, traced)
    assert r.per_repeat == [(2, 0.1), (3, 0.2)]
    assert r.median == pytest.approx(0.15)
    assert summarize.throughput_ratio(clean, []).median is None


def test_module_counters_as_rates(worse):
    run, s = worse
    per_boot = fakerun.COUNTERS
    counters = s.workload("munmap").counters.baseline
    c, rates = counters.total, counters.total.rates()
    n = REPEATS
    assert c.unmatched == 2 * per_boot["unmatched"] * n   # preempt and irq
    assert c.nested_begin == 2 * per_boot["nested_begin"] * n
    assert c.overflow == 2 * per_boot["overflow"] * n
    assert c.lock_lost == per_boot["lock_lost"] * n
    assert c.lock_discarded == per_boot["lock_discarded"] * n
    assert rates["unmatched"] == pytest.approx(c.unmatched / c.windows)
    assert rates["lock_discarded"] == pytest.approx(c.lock_discarded / c.holds)
    assert [b.repeat for b in counters.per_boot] == list(range(1, n + 1))
    txt = render_text.render(s)
    sec = txt[txt.index("== munmap"):]
    row = sec[sec.index("tracer counters, traced boots"):].splitlines()[2].split()
    assert row == ["baseline", str(c.windows), "%.1e" % rates["unmatched"],
                   "%.1e" % rates["nested_begin"], "%.1e" % rates["overflow"],
                   str(c.holds), "%.1e" % rates["lock_discarded"],
                   "%.1e" % rates["lock_lost"]]


def test_headings_name_the_boot_kind(worse):
    _, s = worse
    txt = render_text.render(s)
    for heading in ("cyclictest latency (us), throughput (ops/s), clean boots, per boot:",
                    "series windows (preemptoff) and lock holds (us), traced boots, per boot:",
                    "preemptoff windows (us), traced boots:",
                    "irqsoff windows (us), traced boots:",
                    "preemptoff windows by class, top 5 by max (us), traced boots:",
                    "i_mmap lock hold time (us), traced boots:",
                    "anon_vma lock hold time (us), traced boots:",
                    "pte lock hold time (us), traced boots:",
                    "tracer counters, traced boots",
                    "latency histogram, clean boots:"):
        assert txt.count(heading) == 2, heading   # once per workload


def test_report_cli(worse_run, capsys):
    assert main(["report", worse_run, "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    txt = open(os.path.join(worse_run, "report", "report.txt")).read()
    assert txt in out
    assert all(len(line) <= 80 for line in txt.splitlines())
    assert "kernel:   6.1.0-test" in txt and "accel: tcg" in txt
    assert "boots per cell: clean + traced (TRACE=windows)" in txt
    assert "FAILED BOOTS:" in txt
    assert "patched/fork/traced/r%d: guest timed out after 600 s" % REPEATS in txt
    assert "== munmap" in txt and "== fork" in txt
    assert re.search(r"^  cyclictest p99\.9 +\d+ +\d+ +\+[\d.]+ +10% worse ", txt, re.M)
    # the headline first, with each endpoint's margin and its decision
    # interval in %, never None
    assert txt.startswith("baseline vs patched: primary endpoints")
    assert re.search(r"^  cyclictest max .* 15% \w+ +\[[+-][\d.]+, [+-][\d.]+\]$", txt, re.M)
    # every fake boot has the same windows: no spread, no test, no [x, x]
    assert re.search(r"^  zap-path max +1000 +500\.1 +-50\.0 +10% n/a +-$", txt, re.M)
    # the detailed tables mark the primary endpoints, the unit's interval
    assert re.search(r"^  \*p99\.9 .* \[[+-]\d+, [+-]\d+\]$", txt, re.M)
    assert "None" not in txt
    assert "pte-lock-zap" in txt and "1000.1" in txt and "500.1" in txt
    method = " ".join(txt.split())
    assert "Welch t on log per-boot values against each endpoint's margin" in method
    assert "same: within it, TOST" in method and "Holm over the 9 primary endpoints" in method
    assert "Detailed tables: 95 % boot bootstrap interval." in method
    assert "Sequential" not in method
    s = model.read(os.path.join(worse_run, "report", "summary.json"))
    assert s.gate.n_resamples == 200
    p50 = comparison(s, "munmap", "cyclictest p50")
    assert p50.lo <= 25 <= p50.hi + 1 and not p50.primary and p50.verdict == ""
    cl = s.workload("munmap").windows["preemptoff"].classes["pte-lock-zap"]
    assert cl.baseline.max == fakerun.zap_ns(0, 25) / 1000
    assert cl.patched.max == fakerun.zap_ns(1, 25) / 1000
    md = open(os.path.join(worse_run, "report", "report.md")).read()
    for p in s.plots:
        assert "](%s)" % p in md
        assert os.path.getsize(os.path.join(worse_run, "report", p)) > 1000
    svg = open(os.path.join(worse_run, "report", "latency_hist.svg")).read()
    assert "accel tcg" in svg and "munmap" in svg
    # the renderers need summary.json only
    assert render_text.render(s) == txt
    assert plot.all_plots(s, str(os.path.join(worse_run, "report"))) == s.plots


def test_compare_exit(worse_run, capsys):
    assert main(["compare", worse_run, "--resamples", "200"]) == 1
    assert "WORSE: munmap cyclictest p99.9" in capsys.readouterr().out


@pytest.mark.parametrize("even_shift", [0, 25])
def test_aa_mode_compares_odd_with_even_repeats(tmp_path, capsys, even_shift):
    # enough repeats that each half has the boots to call a difference
    r = make_run(str(tmp_path / "aa"), repeats=10, failed=False,
                 even_shift=even_shift)
    run = load.load_run(r)
    for boot in load.BOOTS:
        odd, even = summarize.sides(run, "baseline", "baseline", "munmap", boot).values()
        assert [c["repeat"] for c in odd] == [1, 3, 5, 7, 9]
        assert [c["repeat"] for c in even] == [2, 4, 6, 8, 10]
        assert {c["variant"] for c in odd + even} == {"baseline"}
    s = summarize.build(run, "baseline", "baseline", n_resamples=200)
    p999 = comparison(s, "munmap", "cyclictest p99.9")
    assert len(p999.base) == len(p999.patched) == 5
    assert p999.lo <= even_shift <= p999.hi
    # A/A: no difference may be called; a 25 us shift of a 66 us p99.9 is
    # beyond its 10 % margin
    assert (p999.verdict == "worse") if even_shift else p999.verdict in ("same", "inconclusive")
    assert main(["compare", r, "--baseline", "baseline", "--patched", "baseline",
                 "--resamples", "200"]) == bool(even_shift)
    assert ("WORSE: munmap cyclictest p99.9" in capsys.readouterr().out) == bool(even_shift)


def test_repeat_auto_replays_its_looks_and_names_the_demoted(tmp_path, capsys):
    # REPEAT=auto recorded three rounds in meta.json, a look after each;
    # boots beyond the last (repeat 8) do not count
    r = make_run(str(tmp_path / "auto"), shift=25, repeats=8, failed=False,
                 workloads=("munmap", "truncate"),
                 auto=((1, 3, 0.3), (4, 5, 0.5), (6, 7, 1.0)))
    looks = [{"repeats": 3, "spent": 0.3}, {"repeats": 5, "spent": 0.5},
             {"repeats": 7, "spent": 1.0}]
    run = load.load_run(r)
    s = summarize.build(run, n_resamples=20)
    assert s.gate.looks == [sequential.Look.from_dict(d) for d in looks]
    assert s.gate.spending == "pocock"
    family = s.primary()
    rnd = sequential.decide([c.series(s.figure_boot) for c in family],
                            [sequential.Look.from_dict(d) for d in looks])
    assert [c.verdict for c in family] == [o.verdict for o in rnd.outcomes]
    assert [c.look for c in family] == [o.look for o in rnd.outcomes]
    p999 = comparison(s, "munmap", "cyclictest p99.9")
    assert p999.verdict == "worse" and p999.look in (1, 2, 3)
    txt = render_text.render(s)
    assert all(len(line) <= 80 for line in txt.splitlines())
    method = " ".join(txt.split())
    assert "Method: 6.1.0-test, config c0ffee, tcg, 7 x 30 s boots a side" in method
    assert ("Sequential (REPEAT=auto): 3 looks at 3/5/7 repeats, 100 % of the budget used, "
            "Lan-DeMets Pocock-type alpha spending") in method
    # truncate's p99.9 is exploratory, and the headline says why
    assert "Exploratory, no margin that matters in reach: truncate cyclictest p99.9 (CV " \
        "24.6 %" in method
    assert not re.search(r"^  cyclictest p99\.9 ", txt[txt.index("truncate ("):], re.M)
    assert main(["compare", r, "--resamples", "20"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^WORSE: munmap cyclictest p99\.9 \+\d+ us \(\+[\d.]+ %\), margin 10%, "
                     r"decision interval \[\+[\d.]+, \+[\d.]+\] %$", out, re.M)
    assert re.search(r"^compare: FAIL \(\d+ worse, .*Holm over 8 primary endpoints", out, re.M)


def test_look_tells_the_orchestrator_whether_to_boot_again(tmp_path, capsys):
    def rounds(*auto):
        fakerun.write_meta(r, fakerun.meta(repeats=6, auto=auto))
    r = make_run(str(tmp_path / "look"), shift=25, repeats=6, failed=False)
    # the first round, of 4 repeats, done
    rounds((1, 4, 0.4))
    assert main(["look", r]) == 0
    out, err = capsys.readouterr()
    answer = json.loads(out)
    assert err.startswith("look 1 (4 repeats, 40 % of the budget): ")
    assert answer["progress"] == err.strip() and answer["look"] == 1
    # the fake windows never vary: those endpoints stay open (no test),
    # and their traced boots are what another round needs
    assert answer["another_round"] and "munmap zap-path window" in answer["open"]
    assert "traced" in answer["needs"]["munmap"]
    assert set(answer["verdicts"]) == {"%s %s" % (w, e.name) for w in ("munmap", "fork")
                                       for e in endpoints.primary(w)}
    # the budget spent: no other round, the open ones are final
    rounds((1, 4, 0.4), (5, 6, 1.0))
    assert main(["look", r]) == 0
    answer = json.loads(capsys.readouterr()[0])
    assert answer["look"] == 2 and not answer["another_round"]
    assert answer["verdicts"]["munmap zap-path window"] == "n/a"
    # a look must add repeats
    rounds((1, 4, 0.4), (5, 4, 0.5))
    assert main(["look", r]) == 2
    assert "looks must add repeats" in capsys.readouterr()[1]


def test_refuse_mixed_accel(tmp_path, capsys):
    r = make_run(str(tmp_path / "mixed"), accel=("tcg", "kvm"), repeats=2)
    assert main(["compare", r, "--resamples", "50"]) == 3
    assert "refusing to compare" in capsys.readouterr().err


def test_a_run_of_an_older_format_is_named(tmp_path, capsys):
    r = make_run(str(tmp_path / "old"), repeats=1, failed=False)
    # a meta.json from before mmlat recorded its knobs and boot kinds
    with open(os.path.join(r, "meta.json"), "w") as f:
        json.dump({"kernel_version": "6.1.0-test", "accel": "tcg", "duration_s": 30}, f)
    assert main(["report", r, "--no-plots"]) == 2
    err = capsys.readouterr().err
    assert "meta.json has no \"format\" and no \"knobs\" or \"boots\" (format 2" in err
    assert "this analysis reads format 4 and upgrades format 3" in err
    # one of a later format than this analysis reads
    doc = fakerun.meta().to_json()
    doc["format"] = 5
    with open(os.path.join(r, "meta.json"), "w") as f:
        json.dump(doc, f)
    assert main(["report", r, "--no-plots"]) == 2
    assert "meta.json is of format 5; this version reads format 4" in capsys.readouterr().err


def test_trace_plugin_run_reads_every_figure_from_its_clean_boots(tmp_path):
    """TRACE=plugin: one boot per repeat, the clean one, whose plugin/
    folder holds the windows and holds; the report says so, and the
    windows' endpoints compare clean boots."""
    plugin = load.load_run(make_run(str(tmp_path / "plugin"), repeats=3, trace="plugin"))
    module = load.load_run(make_run(str(tmp_path / "windows"), repeats=3, trace="windows"))
    assert {c["boot"] for c in plugin["cells"]} == {"clean"}
    assert {c["instrument"] for c in plugin["cells"]} == {"plugin"}
    s, m = (summarize.build(r, n_resamples=20) for r in (plugin, module))
    assert set(s.figure_boot.values()) == {"clean"}
    assert m.figure_boot["windows"] == "traced" and m.figure_boot["latency"] == "clean"
    ws, wm = s.workload("munmap"), m.workload("munmap")
    # the same dumps, read from the other boot kind
    assert ws.windows["preemptoff"].overall.baseline.max == \
        wm.windows["preemptoff"].overall.baseline.max
    assert ws.locks is not None and ws.traced_over_clean.baseline.median is None
    assert {c.endpoint for c in ws.comparisons} == {c.endpoint for c in wm.comparisons}
    family = s.primary()
    rnd = sequential.decide([c.series(s.figure_boot) for c in family],
                            [sequential.Look(3, 0.5)])
    assert set(k for kinds in rnd.needs.values() for k in kinds) <= {"clean"}
    txt = render_text.render(s)
    assert "boots per cell: clean (TRACE=plugin)" in txt
    fakerun.update_meta(plugin["dir"], knobs={"TRACE": "auto"})
    chosen = summarize.build(load.load_run(plugin["dir"]), n_resamples=20)
    assert "boots per cell: clean (TRACE=plugin, TRACE=auto's choice)" in \
        render_text.render(chosen)
    assert "Latency, work, windows and lock holds from the same clean boots, recorded by the " \
        "QEMU plugin (plugin/), outside the guest." in " ".join(txt.split())
    assert "Latency and work from clean boots, windows and lock holds from traced ones, " \
        "recorded by the window module" in " ".join(render_text.render(m).split())


def test_trace_plugin_run_ties_each_spike_to_the_window_that_held_it_off(tmp_path):
    """The plugin's wakeups: each boot's two spikes above its p99.9, one
    under a zap window open at its timer's expiry, one with nothing open;
    counted per side, named by class, the bare one listed with what ran,
    the timeline plotted, and the compact summary keeping the counts."""
    run = load.load_run(make_run(str(tmp_path / "plugin"), repeats=3, trace="plugin"))
    s = summarize.build(run, n_resamples=20)
    sp = s.workload("munmap").spikes
    for side, boots in (("baseline", 3), ("patched", 3)):
        assert sp[side].boots == boots
        assert (sp[side].spikes, sp[side].explained) == (2 * boots, boots)
        assert sp[side].by_class == {"pte-lock-zap": boots}
        assert {u.running for u in sp[side].unexplained} == {"kworker/0:1"}
        assert sp[side].timeline is not None
    # the failed last boot of the last workload has no wakeups to count
    assert s.workload("fork").spikes.patched.boots == 2
    txt = " ".join(render_text.render(s).split())
    assert "baseline 3 of 6 (50 %), 3 boots" in txt
    assert "r1: 400.0, 394.0, 0.0; kworker/0:1 then preempt-off softirq for 397.0:" in txt
    assert "== munmap: critical sections (clean boots: 3 baseline, 3 patched) ==" in txt
    out = tmp_path / "plots"
    out.mkdir()
    assert "spike_timeline.png" in plot.all_plots(s, str(out))
    again = model.from_json(model.to_json(s))
    assert again.workload("munmap").spikes == sp
    small = model.compact(s).workload("munmap").spikes.baseline
    assert (small.spikes, small.explained, small.unexplained, small.timeline) == (6, 3, [], None)
    module = summarize.build(load.load_run(make_run(str(tmp_path / "windows"), repeats=2)),
                             n_resamples=20)
    assert "latency spikes" not in render_text.render(module)


def test_trace_none_run_has_latency_only(tmp_path):
    run = load.load_run(make_run(str(tmp_path / "none"), repeats=2, trace="none"))
    s = summarize.build(run, n_resamples=20)
    ws = s.workload("munmap")
    assert ws.latency.baseline.count == 2 * 4000
    assert ws.windows["preemptoff"].overall.baseline.count == 0
    assert ws.locks is None and ws.counters.baseline is None
    assert ws.attribution == []
    assert ws.traced_over_clean.baseline.median is None
    txt = render_text.render(s)
    assert "traced/clean" not in txt and "windows (us)" not in txt
    assert "critical sections" not in txt and "hold time" not in txt
    assert "cyclictest latency (us), throughput (ops/s), clean boots" in txt
    # no windows measured: none in the headline nor in the family
    assert {c.spec.figure for c in ws.comparisons} == {"latency", "throughput"}
    assert s.gate.family == 2 * len(workloads.LATENCY + workloads.WORK)
    assert "None" not in txt


def test_summary_cli(worse_run, capsys):
    assert main(["summary", worse_run]) == 0
    t = open(os.path.join(worse_run, "summary.txt")).read()
    assert all(len(line) <= 80 for line in t.splitlines())
    head = t.splitlines()[0].split()
    assert head[-2:] == ["preemptoff", "irqsoff"]
    run = load.load_run(worse_run)
    row = [line for line in t.splitlines()
           if line.startswith("baseline") and "munmap" in line][0].split()
    clean_max = max(c["cyclictest"]["max"]
                    for c in load.ok_cells(run, "baseline", "munmap", "clean"))
    assert row[2:4] == ["%d/%d" % (REPEATS, REPEATS)] * 2
    assert row[-3:] == [str(clean_max), "%.1f" % (fakerun.zap_ns(0, 25) / 1000), "10"]
    fork = [line for line in t.splitlines()
            if line.startswith("patched") and "fork" in line][0].split()
    assert fork[2:4] == ["%d/%d" % (REPEATS, REPEATS), "%d/%d" % (REPEATS - 1, REPEATS)]


def test_figure_content(worse):
    _, s = worse
    fig = plot.fig_latency_hist(s)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    clean_max = s.workload("fork").latency.baseline.max
    assert labels[0] == "baseline (max %d us)" % clean_max and labels[1].startswith("patched (max")
    assert ax.get_yscale() == "log"
    assert {a.get_title() for a in fig.axes} == {"cyclictest latency, clean boots: fork",
                                                 "cyclictest latency, clean boots: munmap"}
    assert "accel tcg" in fig._suptitle.get_text()
    fc = plot.fig_classes(s, "preemptoff")
    ticks = [t.get_text() for t in fc.axes[0].get_xticklabels()]
    assert "pte-lock-zap" in ticks and fc.axes[0].get_title().endswith("traced boots: fork")
    fp = plot.fig_locks(s)
    assert fp.axes[0].get_title() == "lock hold CCDF, traced boots: fork\n(band: boot bootstrap)"
    curves = {line.get_label(): line for line in fp.axes[0].get_lines()}
    assert set(curves) == {"%s %s" % (side, cls) for side in ("baseline", "patched")
                           for cls in ("pte-lock-zap", "pte-lock-fork", "i_mmap-lock",
                                       "anon_vma-lock")}
    holds = s.workload("fork").locks.classes
    for label, line in curves.items():
        side, cls = label.split()
        assert max(line.get_xdata()) == holds[cls][side].max / 1000.0
    assert max(curves["baseline i_mmap-lock"].get_xdata()) == fakerun.I_MMAP_NS[0] / 1000.0


def test_ccdf_plots_carry_the_boot_bootstrap_band(worse):
    _, s = worse
    for fig in (plot.fig_ccdf(s, "latency"), plot.fig_ccdf(s, "windows"), plot.fig_locks(s)):
        # one filled band per drawn curve: every side has several boots
        ax = fig.axes[0]
        assert len(ax.collections) == len(ax.get_lines()) > 0, ax.get_title()
    band = s.workload("munmap").latency.baseline.band
    assert band.lo[0] == band.hi[0] == 1.0
    assert all(lo <= hi for lo, hi in zip(band.lo, band.hi))


def test_html_is_one_self_contained_file(worse_run):
    assert main(["report", worse_run, "--resamples", "50"]) == 0
    out = os.path.join(worse_run, "report")
    page = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    s = model.read(os.path.join(out, "summary.json"))
    # every plot inline, nothing fetched from beside it
    assert page.count('src="data:image/png;base64,') == len(s.plots) > 0
    assert not re.search(r'(src|href)="(?!data:)', page)
    assert '<td class="worse">worse</td>' in page and "cyclictest p99.9 us" in page
    # margins, and what would settle an inconclusive endpoint
    assert "<td>15%</td>" in page and '<td class="inconclusive">inconclusive</td>' in page
    assert re.search(r"<td>\+\d+</td>", page)
    assert "guest timed out after 600 s" in page
    assert '<tr class="failed">' in page
    assert page.count("<tr><td class=\"left\">baseline</td>") == 2 * REPEATS * 2


def test_figures_in_the_units_precision():
    window = endpoints.Comparison("w", "pte-lock-zap window", True, [400.0, 410.0],
                                  [300.0, 305.0], [1, 2], [1, 2], lo=-107.25, hi=-95.0)
    assert fmt.interval_text(window) == "[-107.2, -95.0]"
    assert render_text.comparison_row(window, "zap").split()[1:5] == [
        "405.0", "302.5", "-102.5", "-25.3"]
    latency = endpoints.Comparison("w", "cyclictest max", True, [80.0, 82.0], [81.0, 81.0],
                                   [1, 2], [1, 2], lo=-1.4, hi=1.2)
    assert fmt.interval_text(latency) == "[-1, +1]"
    # a side without a window of the class is a bound, not a figure
    gone = endpoints.Comparison("w", "i_mmap-lock window", True, [500.0, 510.0],
                                [5.0, 5.0], [1, 2], [1, 2], lo=-505.0, hi=-495.0,
                                margin=0.1, verdict="better", dlo=-0.992, dhi=-0.989)
    assert render_text.comparison_row(gone, "i_mmap").split()[1:5] == [
        "505.0", "<5", "-500.0", "-"]
    # the headline: the change in %, the margin, the verdict and the
    # decision interval of the relative change, in as few columns as fit
    assert render_text.headline_row(gone).split() == [
        "i_mmap-lock", "max", "505.0", "<5", "-", "10%", "better", "[-99.2,", "-98.9]"]
    assert [fmt.relative_text(r) for r in (0.123, -0.5, 1.5, 9.99, 470.0)] == [
        "+12.3", "-50.0", "+150", "+999", "x471"]
    assert [fmt.margin_text(m) for m in (0.1, 0.15, 0.02, 1.0, None)] == [
        "10%", "15%", "2%", "x2", "-"]


def test_text_hist():
    t = render_text.text_hist({10: 100, 20: 1}, {10: 10}, rows=4)
    assert "#" in t and "o" in t and all(len(line) <= 80 for line in t.splitlines())


def test_header_from_build_json(tmp_path):
    r = make_run(str(tmp_path / "b"), repeats=2, failed=False)
    for v, ser in (("baseline", []), ("patched", ["mm-preempt-v10"])):
        fakerun.write_kernel(r, v, series=ser, kernel_release="6.1.192-mmlat-" + v)
    run = load.load_run(r)
    txt = render_text.render(summarize.build(run, n_resamples=20))
    assert "series:   patched: mm-preempt-v10  [6.1.192-mmlat-patched]" in txt
    assert "  series sha256 e3b0" + "0" * 60 in txt
    assert all(len(line) <= 80 for line in txt.splitlines())


def test_header_names_the_debian_package_and_untested_versions(tmp_path):
    r = make_run(str(tmp_path / "b"), repeats=2, failed=False,
                 untested={"baseline": "7.4", "patched": "7.4"})
    pkg = {"package": "linux-source-7.4", "version": "7.4.1-1", "suite": "sid"}
    for v in ("baseline", "patched"):
        fakerun.write_kernel(r, v, series=[], source_package=pkg,
                             kernel_release="7.4.1-mmlat-" + v)
    txt = render_text.render(summarize.build(load.load_run(r), n_resamples=20))
    assert "  source: linux-source-7.4 7.4.1-1 (Debian sid)" in txt
    assert ("WARNING: Linux 7.4 (baseline, patched): not a tested version; checked before its"
            in txt)
    assert all(len(line) <= 80 for line in txt.splitlines())


def test_bucket_value_is_the_midpoint_of_the_modules_bucket():
    los = [buckets.lo_of(b, 6) for b in range(64 * 30)]
    for lo, hi in zip(los, los[1:]):
        v = buckets.midpoint(lo, 6)
        assert v == (lo if lo < 64 else (lo + hi) / 2), lo
        assert lo <= v < hi
    assert buckets.midpoint(1024, 6) == 1032
    # under 1.6 % wide, so the midpoint is under 0.8 % off any value in it
    assert all((hi - lo) / lo < 0.016 for lo, hi in zip(los[64:], los[65:]))


def test_bucket_hist_reads_midpoints_and_keeps_the_max():
    # 10 holds in [1024, 1040), 5 in [39936, 40448) whose longest is 40000
    h = load.bucket_hist({1024: 10, 39936: 5}, 40000, 6)
    assert h == {1032: 10, (39936 + 40000) / 2: 4, 40000: 1}
    assert stats.summarize_hist(h)["p50"] == 1032
    assert stats.summarize_hist(h)["max"] == 40000
    assert load.bucket_hist({5: 3}, 5, 6) == {5: 3}
    assert load.bucket_hist({2048: 2}, 2050, 6, unit_ns=1000) == {2.049: 1, 2.05: 1}


def test_module_histograms_are_read_at_midpoints(worse):
    run, s = worse
    ws = s.workload("munmap")
    zap = fakerun.zap_ns(0, 25)
    # the zap key's lower window (zap - 40 us) sits in a bucket below the top
    # (of the keys' coarser buckets)
    key_bits = fakerun.KEY_SUB_BITS
    lo = buckets.lo(zap - 40000, key_bits)
    cls = ws.windows["preemptoff"].classes["pte-lock-zap"].baseline
    assert cls.p50 == (lo + buckets.hi(lo, key_bits)) / 2 / 1000
    assert cls.max == zap / 1000
    # every preempt-off window: 500 of 3 us, exact in no bucket
    lo3 = buckets.lo(3000, fakerun.SUB_BITS)
    assert ws.windows["preemptoff"].overall.baseline.p50 == (
        (lo3 + buckets.hi(lo3, fakerun.SUB_BITS)) / 2 / 1000)
    pte = ws.locks.classes["pte-lock-zap"].baseline
    assert pte.p50 == 1032 and pte.max == zap - 40000


def test_tracer_counters_sum_and_rates():
    a = load.TracerCounters(windows=100, unmatched=1, holds=10, lock_lost=1)
    b = load.TracerCounters(windows=300, nested_begin=4, overflow=2, lock_discarded=3)
    c = a + b
    assert (c.windows, c.unmatched, c.nested_begin, c.overflow, c.holds) == (400, 1, 4, 2, 10)
    assert c.rates() == {"unmatched": 1 / 400, "nested_begin": 4 / 400, "overflow": 2 / 400,
                         "lock_discarded": 3 / 10, "lock_lost": 1 / 10}
    assert load.TracerCounters().rates()["unmatched"] is None


# ------------------------------------------- calibration in the header

CALIB = "preempt/irq/spin/ptl/ptl_nested:10/100/1000/5000"
# (a, b_us) per kind: the b of each kind differs, and a of patched's ptl.
FITS = {"baseline": {"calib": {"preempt": (1.0002, 1.23), "irq": (0.9998, 0.81),
                               "spin": (1.0, 1.5), "ptl": (1.0011, 2.46),
                               "ptl_nested": (1.0, 2.5)}},
        "patched": {"calib": {"preempt": (1.0, 1.31), "irq": (1.0, 0.9), "spin": (1.0, 1.44),
                              "ptl": (0.9931, 3.07), "ptl_nested": (1.0004, 12.96)}}}
CALIB_HEAD = ("calibration b us/slope a     preempt        irq       spin        ptl"
              " ptl_nested")


@pytest.fixture
def calib_run(tmp_path):
    return make_run(str(tmp_path / "calib"), repeats=2, failed=False, calib=CALIB)


def header(run_dir, *args):
    """The header of report.txt (from "mmlat report:", after the headline,
    up to the next blank line), rendered from summary.json as written."""
    assert main(["report", run_dir, "--no-plots", "--resamples", "20", *args]) == 0
    s = model.read(os.path.join(run_dir, "report", "summary.json"))
    txt = render_text.render(s)
    with open(os.path.join(run_dir, "report", "report.txt")) as f:
        assert f.read() == txt
    with open(os.path.join(run_dir, "report", "report.md")) as f:
        assert txt.rstrip() in f.read()
    return txt[txt.index("mmlat report:"):].split("\n\n")[0].splitlines()


def test_calibration_boots_are_no_workload(calib_run):
    assert os.path.isdir(os.path.join(calib_run, "cells", "patched", "calib", "traced", "r1"))
    run = load.load_run(calib_run)
    assert load.workloads(run) == ["fork", "munmap"]
    assert {c["workload"] for c in run["cells"]} == {"fork", "munmap"}
    s = summarize.build(run, n_resamples=20)
    assert [w.name for w in s.workloads] == ["fork", "munmap"]
    assert "calib" not in run_table.summary_table(run)


def test_header_states_b_and_a_per_variant_and_kind(calib_run):
    fakerun.write_calibration(calib_run, FITS)
    lines = header(calib_run)
    i = lines.index(CALIB_HEAD)
    assert lines[i:i + 3] == [
        CALIB_HEAD,
        "  baseline (idle)          1.2/1.000  0.8/1.000  1.5/1.000  2.5/1.001  2.5/1.000",
        "  patched (idle)           1.3/1.000  0.9/1.000  1.4/1.000  3.1/0.993 13.0/1.000"]
    assert not any("calibration" in line for line in lines[:i] + lines[i + 3:])
    assert all(len(line) <= 80 for line in lines)


def test_header_lists_baseline_first_whatever_the_names(tmp_path):
    # summary.json sorts its keys: the header must not follow them
    r = make_run(str(tmp_path / "zr"), repeats=2, failed=False, calib=CALIB,
                 variants=("zeta", "alpha"))
    fakerun.write_calibration(r, {"zeta": FITS["baseline"], "alpha": FITS["patched"]})
    lines = header(r, "--baseline", "zeta", "--patched", "alpha")
    i = lines.index(CALIB_HEAD)
    assert [line.split()[0] for line in lines[i + 1:i + 3]] == ["zeta", "alpha"]


def test_header_names_each_calibrated_workload_and_missing_kinds(calib_run):
    # make calibrate's runs: windows injected into idle and munmap's traced
    # boots; a request of two kinds leaves the others without a fit
    fakerun.write_calibration(calib_run, {
        "baseline": {"idle": {"preempt": (1.0, 1.0)}, "munmap": {"preempt": (1.0, 4.0)}},
        "patched": {"idle": {"irq": (1.0, 2.0)}}})
    lines = header(calib_run)
    i = lines.index(CALIB_HEAD)
    assert [line.split() for line in lines[i + 1:i + 4]] == [
        ["baseline", "(idle)", "1.0/1.000", "-", "-", "-", "-"],
        ["baseline", "(munmap)", "4.0/1.000", "-", "-", "-", "-"],
        ["patched", "(idle)", "-", "2.0/1.000", "-", "-", "-"]]


def test_failed_calibration_is_in_the_header_with_its_reason(calib_run):
    fits = {"baseline": FITS["baseline"]}
    fakerun.write_calibration(calib_run, fits, failures={
        "patched/calib/traced/r1": ["the cell failed: guest panicked"],
        "baseline/calib/traced/r1": ["ptl: 31.0 us added to every window (b)"]})
    lines = header(calib_run)
    i = lines.index(CALIB_HEAD)
    assert lines[i - 2:i] == [
        "calibration FAILED, 2 failures in calibration.json, the first:",
        "  baseline/calib/traced/r1: ptl: 31.0 us added to every window (b)"]
    assert lines[i + 2] == "  patched: no calibration reading"


def test_a_long_calibration_failure_is_wrapped_not_cut(calib_run):
    why = ("window 7 (irq 100 us): the irq key of mmlat_calib_irq_window counted "
           "2 windows for one")
    fakerun.write_calibration(calib_run, FITS, failures={"patched/calib/traced/r1": [why]})
    lines = header(calib_run)
    i = lines.index(CALIB_HEAD)
    assert lines[i - 3] == "calibration FAILED, 1 failure in calibration.json, the first:"
    assert lines[i - 2].startswith("  patched/calib/traced/r1: window 7")
    assert lines[i - 1].startswith("    ")
    assert " ".join(line.strip() for line in lines[i - 2:i]) == "patched/calib/traced/r1: " + why
    assert all(len(line) <= 80 for line in lines)


@pytest.mark.parametrize("calib, trace, line", [
    ("", "windows", "calibration: not calibrated (CALIB empty)"),
    ("", "none", "calibration: not calibrated (TRACE=none: no traced boots)"),
    (CALIB, "windows",
     "calibration: not checked (no calibration.json: mmlat calibrate RUN)"),
])
def test_header_says_why_there_is_no_calibration(tmp_path, calib, trace, line):
    r = make_run(str(tmp_path / "r"), repeats=2, failed=False, calib=calib, trace=trace)
    lines = header(r)
    assert [row for row in lines if row.startswith("calibration")] == [line]


def test_workloads_sort_a_parameters_values_as_numbers(tmp_path):
    # not as a directory listing sorts them (imap:n=1024 before imap:n=16)
    make_run(str(tmp_path), repeats=1, failed=False,
             workloads=("imap:n=64", "truncate", "imap:n=1024", "exit", "imap:n=16"))
    run = load.load_run(str(tmp_path))
    assert load.workloads(run) == ["exit", "imap:n=16", "imap:n=64", "imap:n=1024",
                                   "truncate"]


def test_a_boot_in_an_older_format_stops_the_load_unless_skipped(tmp_path, capsys):
    """load_run refuses a boot it cannot read; skip_unreadable (the A/A
    study on older runs) leaves out that boot alone and names it."""
    fakerun.make_run(str(tmp_path))
    dump = tmp_path / "cells/baseline/munmap/traced/r1/guest/windows/windows.txt"
    dump.write_text(re.sub(r" ?sub_bits=\d+", "", dump.read_text()))
    with pytest.raises(load.UnreadableRun, match="no sub_bits"):
        load.load_run(str(tmp_path))
    every = len(list(tmp_path.glob("cells/*/*/*/r*/cell.json")))
    run = load.load_run(str(tmp_path), skip_unreadable=True)
    assert len(run["cells"]) == every - 1
    assert not any(c["variant"] == "baseline" and c["workload"] == "munmap"
                   and c["boot"] == "traced" and c["repeat"] == 1 for c in run["cells"])
    assert "skipped: " in capsys.readouterr().err


def test_a_workload_without_a_boot_that_ended_well_is_reported(tmp_path):
    # reclaim's memcg OOM killed every boot of a workload once: the report
    # and its plots still come out, that workload without figures.
    r = make_run(str(tmp_path / "r"), repeats=2, failed=False)
    for cell_json in glob.glob(os.path.join(r, "cells", "*", "fork", "*", "r*", "cell.json")):
        with open(cell_json) as f:
            info = json.load(f)
        info.update(status="failed", cause="runner: workload fork failed")
        with open(cell_json, "w") as f:
            json.dump(info, f)
    summary = report.write_report(load.load_run(r), str(tmp_path / "out"), "baseline",
                                  "patched", n_resamples=20)
    assert "summary.png" in summary.plots
    assert "munmap" in (tmp_path / "out/report.txt").read_text()


def test_a_boot_recorded_before_cell_json_named_its_instrument_reads_the_runs_trace(tmp_path):
    r = make_run(str(tmp_path / "old"), repeats=2)
    for path in glob.glob(os.path.join(r, "cells/*/*/*/r*/cell.json")):
        with open(path) as f:
            doc = json.load(f)
        del doc["instrument"]
        with open(path, "w") as f:
            json.dump(doc, f)
    run = load.load_run(r)
    assert {(c["boot"], c["instrument"]) for c in run["cells"]} == {
        ("clean", ""), ("traced", "windows")}
    assert all(c["windows"]["preemptoff"]["present"] for c in run["cells"]
               if c["boot"] == "traced" and c["status"] == "ok")


def test_the_header_names_the_executor_the_devices_and_the_jobs():
    def summary(boots):
        return types.SimpleNamespace(baseline="base", patched="new", boots=boots)

    def lava(devices):
        return [model.Boot(v, "munmap", "clean", r, "ok", "", executor="lava",
                           job_id=str(10 * i + r), device=d)
                for i, (v, d) in enumerate(devices) for r in (1, 2)]
    same = summary(lava([("base", "qemu01"), ("new", "qemu01")]))
    assert render_text.executor_lines(same) == ["executor: lava   devices: qemu01",
                                                "jobs: 4, 1 .. 12"]
    apart = render_text.executor_lines(summary(lava([("base", "qemu01"), ("new", "qemu02")])))
    assert apart[0] == "executor: lava   devices: base qemu01; new qemu02"
    assert apart[-1] == "WARNING: base and new ran on different devices"
    local = summary([model.Boot("base", "idle", "clean", 1, "ok", ""),
                     model.Boot("new", "idle", "clean", 1, "ok", "")])
    assert render_text.executor_lines(local) == ["executor: local"]
