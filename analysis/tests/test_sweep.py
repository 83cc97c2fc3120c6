"""Sweeps (SWEEP: one workload over a list of values of one parameter):
the rows built from the cells, the report's tables and the plot, from
synthetic runs (fakerun) whose figures move with the swept n."""
import json

import pytest

from mmlat import load, model, plot, render_text, run_table, summarize, sweep

import fakerun
from fakerun import make_run

ENTRIES = ("imap:s=1,n=16", "imap:s=1,n=64", "imap:s=1,n=256")
# as run-matrix records SWEEP="imap:s=1,n=64,16,256": values as given
META_SWEEP = {"spec": "imap:s=1,n=64,16,256", "name": "imap", "key": "n",
              "values": [64, 16, 256], "fixed": {"s": 1},
              "workloads": ["imap:s=1,n=64", "imap:s=1,n=16", "imap:s=1,n=256"]}
# meta.json's order, not the directories' (as-posted, baseline, patched)
VARIANTS = ("baseline", "patched", "as-posted")


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory):
    """One repeat; the last cell's traced boot, as-posted at n=256, failed."""
    return load.load_run(make_run(str(tmp_path_factory.mktemp("s") / "run"), repeats=1,
                                  variants=VARIANTS, workloads=("munmap",) + ENTRIES,
                                  sweeps=[META_SWEEP]))


@pytest.fixture(scope="module")
def summary(sweep_run):
    return summarize.build(sweep_run, n_resamples=20)


@pytest.fixture(scope="module")
def txt(summary):
    return render_text.render(summary)


def test_a_recorded_sweep_has_a_row_per_value_and_variant(sweep_run):
    [sw] = sweep.build(sweep_run, load.figure_boot(sweep_run))
    assert (sw.name, sw.key, sw.fixed, sw.values) == ("imap", "n", {"s": 1}, [16, 64, 256])
    assert (sw.title, sw.slug) == ("imap over n (s=1)", "imap_n_s1")
    assert sw.variants == list(VARIANTS)
    assert [(r.value, r.variant) for r in sw.rows] == [
        (n, v) for n in (16, 64, 256) for v in VARIANTS]
    for r in sw.rows:
        vi = VARIANTS.index(r.variant)
        assert r.workload == "imap:s=1,n=%d" % r.value
        assert r.ops_per_s == pytest.approx(fakerun.clean_ops(vi, 1, r.workload))
        if r.ok_boots["traced"] == 0:
            continue
        longest_i_mmap = fakerun.i_mmap_ns(vi, r.workload) / 1000
        assert r.holds["i_mmap"].max == longest_i_mmap
        # only the baseline spins on i_mmap: a window; the others sleep
        assert r.windows["i_mmap-lock"].max == (longest_i_mmap if vi == 0 else None)
        # the zap and fork windows pooled, the longest the zap's
        assert r.windows["pte-lock"].max == fakerun.zap_ns(vi, 0) / 1000
        assert r.windows["anon_vma-lock"].max is None
        assert r.windows["mmu-gather"] == sweep.Figures(None, None)


def test_sweep_figures_are_the_reports_own(sweep_run, summary):
    """The same boots give the same numbers as the workload's own tables."""
    [sw] = sweep.build(sweep_run, load.figure_boot(sweep_run))
    w = summary.workload("imap:s=1,n=64")
    row = sw.row(summary.patched, 64)
    pte = w.locks.by_mode["pte"].patched
    assert [m.mode for m in pte] == ["spin"]
    assert (row.holds["pte"].p99, row.holds["pte"].max) == (pte[0].p99 / 1000,
                                                            pte[0].max / 1000)
    zap = w.windows["preemptoff"].classes["pte-lock-zap"].patched
    assert row.windows["pte-lock"].max == zap.max
    assert row.ops_per_s == w.throughput.patched.mean


def test_a_failed_boot_leaves_its_figures_missing(sweep_run):
    [sw] = sweep.build(sweep_run, load.figure_boot(sweep_run))
    row = sw.row("as-posted", 256)
    assert row.ok_boots == {"clean": 1, "traced": 0}
    assert all(f == sweep.Figures(None, None)
               for f in list(row.windows.values()) + list(row.holds.values()))
    assert row.ops_per_s == pytest.approx(fakerun.clean_ops(2, 1, "imap:s=1,n=256"))


def _section(txt):
    lines = txt.splitlines()
    i = lines.index("== Sweep: imap over n (s=1) ==")
    j = next(k for k in range(i + 1, len(lines)) if not lines[k])
    return lines, i, lines[i + 1:j]


def test_report_tables_fit_80_columns_after_the_critical_sections(txt):
    lines, i, sec = _section(txt)
    assert all(len(line) <= 80 for line in lines)
    crit = [k for k, line in enumerate(lines) if ": critical sections (" in line]
    assert len(crit) == 4 and max(crit) < i
    assert i < lines.index("traced/clean throughput (median over repeats of traced ops/s "
                           "/ clean):")
    assert sec[0] == "preemptoff windows by class, p99 and max (us), traced boots:"
    assert sec[1].split() == ["n", "variant", "i_mmap-lock", "anon_vma-lock", "pte-lock",
                              "mmu-gather"]
    assert sec[2].split() == ["p99", "max"] * 4
    hold_head = sec.index("lock hold time, p99 and max (us), traced boots; ops/s, clean "
                          "boots:")
    assert sec[hold_head + 1].split() == ["n", "variant", "i_mmap", "anon_vma", "pte",
                                          "ops/s", "vs", "base"]
    assert hold_head == 3 + 3 * len(VARIANTS)


def test_report_rows_by_value_then_variant(txt):
    _, _, sec = _section(txt)
    windows = [line.split() for line in sec[3:12]]
    # the value on its first row only, the variants in meta.json's order
    assert [w[0] for w in windows[::3]] == ["16", "64", "256"]
    assert [w[0] for w in windows[1:3]] == list(VARIANTS[1:])
    zap = ["%.1f" % (fakerun.zap_ns(0, 0) / 1000)] * 2
    i_mmap = "%.1f" % (fakerun.i_mmap_ns(0, "imap:s=1,n=64") / 1000)
    assert windows[3] == ["64", "baseline", i_mmap, i_mmap, "-", "-"] + zap + ["-", "-"]
    assert windows[4][:4] == ["patched", "-", "-", "-"]
    # as-posted's traced boot at n=256 failed: every window missing
    assert windows[8] == ["as-posted"] + ["-"] * 8
    holds = [line.split() for line in sec[15:24]]
    w = "imap:s=1,n=256"
    ops = [fakerun.clean_ops(vi, 1, w) for vi in range(3)]
    assert holds[6][0:4] == ["256", "baseline", *["%.1f" % (fakerun.i_mmap_ns(0, w) / 1000)] * 2]
    # the baseline's own row has no change against itself
    assert holds[6][-1] == "%.4g" % ops[0]
    assert holds[7][-2:] == ["%.4g" % ops[1], "%+.0f%%" % (100 * (ops[1] - ops[0]) / ops[0])]
    assert holds[8] == ["as-posted"] + ["-"] * 6 + [
        "%.4g" % ops[2], "%+.0f%%" % (100 * (ops[2] - ops[0]) / ops[0])]


def test_renderers_read_the_sweeps_back_from_summary_json(summary, txt, tmp_path, sweep_run):
    back = model.from_json(json.loads(json.dumps(model.to_json(summary))))
    assert back.sweeps == sweep.build(sweep_run, load.figure_boot(sweep_run))
    assert _section(render_text.render(back))[2] == _section(txt)[2]
    pngs = plot.all_plots(back, str(tmp_path))
    assert "sweep_imap_n_s1.png" in pngs
    assert (tmp_path / "sweep_imap_n_s1.png").stat().st_size > 1000
    assert (tmp_path / "sweep_imap_n_s1.svg").exists()


def _missing_sweep(values):
    """A sweep whose every figure is missing (no boot came back)."""
    nothing = sweep.Figures(None, None)
    rows = [sweep.Row(variant=v, value=x, workload="imap:n=%d" % x,
                      windows={g: nothing for g, _, _ in sweep.GROUPS},
                      holds={lock: nothing for lock in sweep.LOCKS}, ops_per_s=None,
                      ok_boots={"clean": 0, "traced": 0})
            for x in values for v in ("baseline", "patched")]
    return sweep.Sweep(name="imap", key="n", fixed={}, values=values,
                       variants=["baseline", "patched"], rows=rows)


@pytest.mark.parametrize("values, scale", [([16, 64, 256], "log"), ([2, 4, 8], "linear"),
                                           ([10, 100], "linear"), ([10, 101], "log")])
def test_plot_x_is_log_when_the_values_span_more_than_ten(summary, values, scale):
    fig = plot.fig_sweep(summary, _missing_sweep(values))
    panels = fig.axes[:len(sweep.GROUPS) + 1]
    assert [ax.get_xscale() for ax in panels] == [scale] * len(panels)
    assert [ax.get_title().split(":")[0] for ax in panels[:len(sweep.GROUPS)]] == [
        g for g, _, _ in sweep.GROUPS]
    plot.plt.close(fig)


def test_plot_one_line_style_per_variant(summary):
    [sw] = summary.sweeps
    fig = plot.fig_sweep(summary, sw)
    i_mmap = fig.axes[0]
    styles = {(line.get_color(), line.get_linestyle()) for line in i_mmap.get_lines()}
    assert len(styles) == len(VARIANTS)
    # window max (filled) and hold max (hollow) per variant; gather: windows only
    assert len(i_mmap.get_lines()) == 2 * len(VARIANTS)
    assert len(fig.axes[3].get_lines()) == len(VARIANTS)
    baseline_hold = [line for line in i_mmap.get_lines()
                     if line.get_color() == plot.COLORS["baseline"] and line.get_marker() == "s"]
    assert list(baseline_hold[0].get_ydata()) == [
        fakerun.i_mmap_ns(0, w) / 1000 for w in ENTRIES]
    plot.plt.close(fig)


def test_missing_data_renders_as_dashes(summary):
    lines = render_text.sweep_section(_missing_sweep([16, 64]), "baseline", summary.figure_boot)
    assert all(len(line) <= 80 for line in lines)
    assert lines[4].split() == ["16", "baseline"] + ["-"] * 8
    assert lines[5].split() == ["patched"] + ["-"] * 8
    # holds and ops/s; the baseline's change against itself is blank
    assert lines[11].split() == ["16", "baseline"] + ["-"] * 7
    assert lines[12].split() == ["patched"] + ["-"] * 8


def test_a_value_without_cells_is_a_row_of_dashes(tmp_path):
    """An interrupted run: meta.json's sweep lists n=1024, never booted."""
    recorded = dict(META_SWEEP, values=[16, 1024], workloads=["imap:s=1,n=16", "imap:s=1,n=1024"])
    run = load.load_run(make_run(str(tmp_path / "run"), repeats=1, failed=False,
                                 workloads=("imap:s=1,n=16",), sweeps=[recorded]))
    [sw] = sweep.build(run, load.figure_boot(run))
    assert sw.values == [16, 1024]
    row = sw.row("patched", 1024)
    assert (row.ops_per_s, row.ok_boots) == (None, {"clean": 0, "traced": 0})
    assert "1024   baseline " + "       -" * 8 in render_text.render(
        summarize.build(run, n_resamples=20))


@pytest.mark.parametrize("workloads, found", [
    # entries of one workload that differ in one parameter: a sweep, even
    # without SWEEP (WORKLOADS="imap:n=64 imap:n=16")
    (("munmap", "imap:n=64", "imap:n=16"), [("imap", "n", (), {16: "imap:n=16", 64: "imap:n=64"})]),
    (("imap:n=8,s=1", "imap:n=8,s=2", "imap:n=8,s=4"),
     [("imap", "s", (("n", 8),), {1: "imap:n=8,s=1", 2: "imap:n=8,s=2", 4: "imap:n=8,s=4"})]),
    # two parameters move, or the keys differ, or one entry alone: none
    (("imap:n=16,s=1", "imap:n=64,s=2"), []),
    (("imap:n=16", "imap:n=64,s=1"), []),
    (("imap:n=16", "munmap"), []),
])
def test_sweeps_are_inferred_from_the_entries(tmp_path, workloads, found):
    run = load.load_run(make_run(str(tmp_path / "run"), repeats=1, failed=False,
                                 workloads=workloads))
    assert [(name, key, fixed, values)
            for (name, key, fixed), values in sweep.find(run).items()] == found


def test_a_recorded_sweep_and_the_same_inferred_are_one(sweep_run):
    # meta.json's sweep and the entries it ran: the same sweep, once
    assert list(sweep.find(sweep_run)) == [("imap", "n", (("s", 1),))]


def test_a_run_without_sweeps_has_no_section(tmp_path):
    run = load.load_run(make_run(str(tmp_path / "run"), repeats=1, failed=False,
                                 sweeps=[]))
    s = summarize.build(run, n_resamples=20)
    assert s.sweeps == [] and "== Sweep" not in render_text.render(s)


def test_summary_and_ratio_tables_keep_a_sweeps_entries_whole(sweep_run, txt):
    """imap:s=1,n=16 and imap:s=1,n=64 differ at their end: cut to a fixed
    width they were one name."""
    table = run_table.summary_table(sweep_run).splitlines()
    assert [line.split()[1] for line in table[2:] if line.startswith("baseline")] == [
        "imap:s=1,n=16", "imap:s=1,n=64", "imap:s=1,n=256", "munmap"]
    lines = txt.splitlines()
    i = lines.index("traced/clean throughput (median over repeats of traced ops/s / clean):")
    assert [line.split()[0] for line in lines[i + 2:i + 6]] == [
        "imap:s=1,n=16", "imap:s=1,n=64", "imap:s=1,n=256", "munmap"]
