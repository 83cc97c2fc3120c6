"""matplotlib plots (Agg), each written as PNG and SVG, drawn from the
summary model (model.Summary) alone, never from the cells."""
import os

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from matplotlib.lines import Line2D  # noqa: E402

from . import attribute, endpoints, model, stats, sweep  # noqa: E402
from .load import TRACERS  # noqa: E402

COLORS = {"baseline": "tab:blue", "patched": "tab:red"}
# A sweep shows every variant of the run: the compared two in COLORS, the
# others (an as-posted series) in these, and each with a line style of its
# own, so that the lines part in grey print too.
OTHER_COLORS = ("tab:green", "tab:purple", "tab:orange", "tab:brown")
SWEEP_LINES = ("-", "--", ":", "-.")


def caption(summary):
    run = summary.run
    return "kernel %s | %s vs %s | accel %s | duration %s s" % (
        run.kernel_version or "?", summary.baseline, summary.patched, run.accel or "?",
        "?" if run.duration_s is None else run.duration_s)


def finish(fig, summary):
    """Every figure carries the run's caption (kernels, mode, duration)."""
    fig.suptitle(caption(summary), fontsize=8)
    fig.tight_layout()
    return fig


def _save(fig, out_dir, name):
    fig.savefig(os.path.join(out_dir, name + ".png"), dpi=90)
    fig.savefig(os.path.join(out_dir, name + ".svg"))
    plt.close(fig)
    return name + ".png"


def _sides(summary):
    """(legend label, side) of both sides; A/A splits one variant's repeats."""
    sfx = (" (odd repeats)", " (even repeats)") if summary.aa_mode else ("", "")
    return ((summary.baseline + sfx[0], "baseline"), (summary.patched + sfx[1], "patched"))


def fig_latency_hist(summary):
    workloads = summary.workloads
    fig, axes = plt.subplots(len(workloads), 1, figsize=(8, 2.6 * max(1, len(workloads))),
                             squeeze=False)
    for ax, w in zip(axes[:, 0], workloads):
        for label, side in _sides(summary):
            h = w.latency[side].histogram()
            if not h:
                continue
            x, y = stats.hist_to_arrays(h)
            ax.step(x, y, where="mid", color=COLORS[side],
                    label="%s (max %d us)" % (label, x.max()))
            ax.axvline(x.max(), color=COLORS[side], ls="--", lw=0.8)
        ax.set_yscale("log")
        ax.set_title("cyclictest latency, %s boots: %s" % (summary.figure_boot["latency"], w.name))
        ax.set_xlabel("latency (us)")
        ax.set_ylabel("samples")
        ax.legend(fontsize=8)
    return finish(fig, summary)


def _ccdf(ax, h, band=None, per=1, **kw):
    """P(X >= x) of histogram h, x in units of per (1000: ns as us), and
    around it the band from the boot bootstrap (stats.ccdf_band) when
    there is one."""
    x, at_least = stats.ccdf(h)
    if not len(x):
        return
    ax.step(x / per, at_least, where="post", **kw)
    if band:
        ax.fill_between(np.asarray(band.x) / per, band.lo, band.hi, step="post",
                        color=kw.get("color"), alpha=0.2, lw=0)


def fig_ccdf(summary, kind="latency"):
    workloads = summary.workloads
    fig, axes = plt.subplots(1, len(workloads), figsize=(4 * max(1, len(workloads)), 3.2),
                             squeeze=False)
    for ax, w in zip(axes[0], workloads):
        for label, side in _sides(summary):
            if kind == "latency":
                d = w.latency[side]
                _ccdf(ax, d.histogram(), d.band, color=COLORS[side], label=label)
            else:
                for tr, ls in (("preemptoff", "-"), ("irqsoff", ":")):
                    d = w.windows[tr].overall[side]
                    _ccdf(ax, d.histogram(), d.band, color=COLORS[side], ls=ls,
                          label="%s %s" % (label, tr))
        ax.set_xscale("symlog")
        ax.set_yscale("log")
        # the band: 95 % of the CCDFs of boots resampled with replacement;
        # the workload on a line of its own, as a sweep's entries are long
        ax.set_title("%s CCDF, %s boots: %s\n(band: boot bootstrap)" % (
            "latency" if kind == "latency" else "window length",
            summary.figure_boot["latency" if kind == "latency" else "windows"], w.name), fontsize=8)
        ax.set_xlabel("us")
        ax.set_ylabel("P(X >= x)")
        ax.legend(fontsize=7)
    return finish(fig, summary)


# Hold classes drawn in the lock-hold plot, with their line styles.
LOCK_STYLES = (("pte-lock-zap", "-"), ("pte-lock-fork", "--"),
               ("i_mmap-lock", ":"), ("anon_vma-lock", "-."))


def fig_locks(summary):
    """CCDF of lock hold times (TRACE=windows): PTE-lock zap and fork
    holds, i_mmap and anon_vma holds, baseline against patched: the plot
    of the series' lock changes."""
    workloads = [w for w in summary.workloads if w.locks]
    if not workloads:
        return None
    fig, axes = plt.subplots(1, len(workloads), figsize=(4 * len(workloads), 3.2), squeeze=False)
    for ax, w in zip(axes[0], workloads):
        classes = w.locks.classes
        for label, side in _sides(summary):
            for cls, ls in LOCK_STYLES:
                if cls not in classes:
                    continue
                _ccdf(ax, classes[cls][side].histogram(), classes[cls][side].band,
                      per=1000.0, color=COLORS[side],
                      ls=ls, label="%s %s" % (label, cls))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title("lock hold CCDF, %s boots: %s\n(band: boot bootstrap)"
                     % (summary.figure_boot["locks"], w.name),
                     fontsize=9)
        ax.set_xlabel("hold time (us)")
        ax.set_ylabel("P(X >= x)")
        ax.legend(fontsize=6)
    return finish(fig, summary)


def fig_classes(summary, tr="preemptoff"):
    workloads = summary.workloads
    fig, axes = plt.subplots(len(workloads), 1, figsize=(9, 3 * max(1, len(workloads))),
                             squeeze=False)
    for ax, w in zip(axes[:, 0], workloads):
        classes = w.windows[tr].classes
        # in guest/classes.txt's order
        cls = [c for c in attribute.CLASSES if c in classes]
        pos = np.arange(len(cls))
        for off, (label, side) in zip((-0.2, 0.2), _sides(summary)):
            data = []
            for c in cls:
                v, n = stats.hist_to_arrays(classes[c][side].histogram())
                data.append(np.repeat(v, np.minimum(n, 10000)) if n.sum() else np.array([np.nan]))
            if cls:
                bp = ax.boxplot(data, positions=pos + off, widths=0.35, whis=(0, 100),
                                patch_artist=True, manage_ticks=False)
                for b in bp["boxes"]:
                    b.set_facecolor(COLORS[side])
                ax.plot([], [], color=COLORS[side], label=label)
        ax.set_xticks(pos)
        ax.set_xticklabels(cls, rotation=20, fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel("%s window (us)" % tr)
        ax.set_title("%s windows by class, %s boots: %s"
                     % (tr, summary.figure_boot["windows"], w.name), fontsize=9)
        ax.legend(fontsize=7)
    return finish(fig, summary)


def fig_summary(summary):
    """cyclictest max and p99.9 per workload, each side's geometric mean
    over its boots; the patched bar carries the interval of the
    difference and its verdict when decided (better, worse, same)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for ax, stat in zip(axes, ("max", "p99.9")):
        # a workload none of whose boots ended well has no bar
        pairs = [(w.name, w.comparison("cyclictest " + stat)) for w in summary.workloads]
        names = [name for name, c in pairs if c is not None]
        comparisons = [c for _, c in pairs if c is not None]
        x = np.arange(len(comparisons))
        ax.bar(x - 0.2, [np.nan if c.base_gmean is None else c.base_gmean for c in comparisons],
               0.4, color=COLORS["baseline"], label=summary.baseline)
        patched = [np.nan if c.patched_gmean is None else c.patched_gmean for c in comparisons]
        # the interval of the difference, drawn around the patched value
        err = [[0 if c.lo is None else max(0, c.delta - c.lo) for c in comparisons],
               [0 if c.hi is None else max(0, c.hi - c.delta) for c in comparisons]]
        ax.bar(x + 0.2, patched, 0.4, yerr=err, color=COLORS["patched"],
               label=summary.patched, capsize=3)
        for xi, c, v in zip(x, comparisons, patched):
            decided = c.verdict in (endpoints.WORSE, endpoints.BETTER, endpoints.SAME)
            if decided and not np.isnan(v):
                ax.annotate(c.verdict, (xi + 0.2, v), ha="center", va="bottom", fontsize=7)
        ax.set_xticks(x)
        # a sweep's entries are long: slanted, they stay apart
        ax.set_xticklabels(names, rotation=20 if max(map(len, names), default=0) > 8 else 0,
                           fontsize=7)
        ax.set_ylabel("%s latency (us)" % stat)
        ax.set_title("cyclictest %s per boot, geometric mean, %s boots\n(patched bar: "
                     "interval of delta)" % (stat, summary.figure_boot["latency"]), fontsize=9)
        ax.legend(fontsize=7)
    return finish(fig, summary)


def fig_throughput(summary):
    workloads = summary.workloads
    fig, ax = plt.subplots(figsize=(7, 3.2))
    x = np.arange(len(workloads))
    for off, side in ((-0.2, "baseline"), (0.2, "patched")):
        vals = [w.throughput[side].mean for w in workloads]
        ax.bar(x + off, [np.nan if v is None else v for v in vals], 0.4,
               color=COLORS[side], label=getattr(summary, side))
    ax.set_xticks(x)
    ax.set_xticklabels([w.name for w in workloads])
    ax.set_ylabel("ops/s")
    ax.set_title("workload throughput, %s boots" % summary.figure_boot["throughput"], fontsize=9)
    ax.legend(fontsize=7)
    return finish(fig, summary)


def _sweep_styles(summary, variants):
    """{variant: (colour, line style)} of a sweep's variants: the compared
    baseline and patched in their colours, the others after."""
    others = iter(OTHER_COLORS)
    colors = {v: COLORS["baseline"] if v == summary.baseline else
              COLORS["patched"] if v == summary.patched else next(others, "tab:gray")
              for v in variants}
    return {v: (colors[v], SWEEP_LINES[i % len(SWEEP_LINES)]) for i, v in enumerate(variants)}


def _wide(values):
    """Whether positive values span more than a factor 10: a log axis."""
    values = [v for v in values if v is not None and v > 0]
    return bool(values) and max(values) > 10 * min(values)


def _series(sw, variant, figure):
    """figure(row) of variant at each value of sw, NaN where missing."""
    return [np.nan if figure(sw.row(variant, x)) is None else figure(sw.row(variant, x))
            for x in sw.values]


def fig_sweep(summary, sw):
    """One sweep (sweep.Sweep): per class group a panel of the longest
    window (filled markers) and, for a lock, the longest hold (hollow
    markers) against the swept key, and the throughput; one colour and
    line style per variant, every variant of the run."""
    styles = _sweep_styles(summary, sw.variants)
    fig, axes = plt.subplots(2, 3, figsize=(12, 6.4))
    panels = list(axes.flat)
    for ax, (label, _, lock) in zip(panels, sweep.GROUPS):
        ys = []
        for v in sw.variants:
            color, ls = styles[v]
            win = _series(sw, v, lambda r: r.windows[label].max)
            ax.plot(sw.values, win, color=color, ls=ls, marker="o")
            ys += win
            if lock:
                hold = _series(sw, v, lambda r: r.holds[lock].max)
                ax.plot(sw.values, hold, color=color, ls=ls, marker="s", mfc="none", alpha=0.7)
                ys += hold
        ax.set_title("%s: max, %s boots" % (label, summary.figure_boot["windows"]), fontsize=9)
        ax.set_ylabel("us")
        ys = [y for y in ys if not np.isnan(y)]
        if not ys:
            ax.text(0.5, 0.5, "no %s window%s" % (label, " or hold" if lock else ""),
                    transform=ax.transAxes, ha="center", fontsize=8)
            ax.set_yticks([])
        elif _wide(ys):
            ax.set_yscale("log")
        else:
            ax.set_ylim(0, max(ys) * 1.1)
    ax = panels[len(sweep.GROUPS)]
    ops = {v: _series(sw, v, lambda r: r.ops_per_s) for v in sw.variants}
    for v, ys in ops.items():
        ax.plot(sw.values, ys, color=styles[v][0], ls=styles[v][1], marker="o")
    ax.set_title("throughput, %s boots" % summary.figure_boot["throughput"], fontsize=9)
    ax.set_ylabel("ops/s")
    known = [y for ys in ops.values() for y in ys if not np.isnan(y)]
    if known:
        ax.set_ylim(0, max(known) * 1.1)
    for ax in panels[:len(sweep.GROUPS) + 1]:
        ax.set_xlabel(sw.key)
        if _wide(sw.values):
            ax.set_xscale("log")
        # a panel without data has no limits of its own
        ax.set_xlim(min(sw.values) / 1.2, max(sw.values) * 1.2)
        ax.set_xticks(sw.values)
        ax.set_xticklabels([str(x) for x in sw.values], fontsize=7)
        ax.minorticks_off()
    legend = panels[-1]
    legend.axis("off")
    handles = [Line2D([], [], color=styles[v][0], ls=styles[v][1], label=v) for v in sw.variants]
    handles += [Line2D([], [], color="k", marker="o", ls="none", label="window max (%s)"
                       % sweep.TRACER),
                Line2D([], [], color="k", marker="s", mfc="none", ls="none",
                       label="lock hold max")]
    legend.legend(handles=handles, loc="center", fontsize=8,
                  title="sweep: %s" % sw.title, title_fontsize=9)
    return finish(fig, summary)


WINDOW_COLORS = {"preempt": "tab:orange", "irq": "tab:purple"}


def fig_spike_timeline(summary):
    """Per workload and side, the boot with the longest latency spike
    around it (spikes.Timeline): every cyclictest wakeup as a point at its
    timer's expiry, spikes marked, and each window open at an expiry as a
    bar over its span at the height of its length; None without per-wakeup
    records (only the QEMU plugin gives them)."""
    rows = [(w, side, s.timeline) for w in summary.workloads
            for side, s in w.spikes.items() if s is not None and s.timeline is not None]
    if not rows:
        return None
    labels = summary.side_labels()
    fig, axes = plt.subplots(len(rows), 1, figsize=(9, 2.6 * len(rows)), squeeze=False)
    for ax, (w, side, t) in zip(axes[:, 0], rows):
        for win in t.windows:
            length_us = max((win.end_ms - win.begin_ms) * 1000, 1e-3)
            ax.hlines(length_us, win.begin_ms, win.end_ms, colors=WINDOW_COLORS[win.kind],
                      linewidth=3, alpha=0.6)
        if t.samples:
            ax.scatter(*zip(*t.samples), s=4, color="grey", label="wakeup")
        if t.spikes:
            ax.scatter(*zip(*t.spikes), s=30, marker="*", color=COLORS[side],
                       label="above p99.9")
        ax.set_yscale("log")
        ax.set_ylabel("us")
        ax.set_title("%s, %s r%d: wakeups (latency) and the windows open at their "
                     "expiries (length)" % (w.name, labels[side], t.repeat), fontsize=8)
        ax.set_xlabel("guest ms from %.1f ms (CLOCK_MONOTONIC, icount)" % t.start_ms,
                      fontsize=8)
    handles = [Line2D([], [], color=c, linewidth=3, label="%s-off window" % k)
               for k, c in WINDOW_COLORS.items()]
    handles += [Line2D([], [], marker="o", color="grey", linestyle="", label="wakeup"),
                Line2D([], [], marker="*", color="k", linestyle="", label="above p99.9")]
    axes[0, 0].legend(handles=handles, fontsize=7, loc="upper right")
    finish(fig, summary)
    # a tall figure: keep the caption clear of the first panel's title
    fig.subplots_adjust(top=1 - 0.4 / fig.get_figheight())
    return fig


def all_plots(summary, out_dir):
    """Every plot of summary s into out_dir; returns the PNG names."""
    model.require_full(summary, "the plots")
    out = []
    out.append(_save(fig_latency_hist(summary), out_dir, "latency_hist"))
    out.append(_save(fig_ccdf(summary, "latency"), out_dir, "latency_ccdf"))
    out.append(_save(fig_ccdf(summary, "windows"), out_dir, "windows_ccdf"))
    for tr in TRACERS:
        out.append(_save(fig_classes(summary, tr), out_dir, "classes_" + tr))
    fig = fig_locks(summary)
    if fig is not None:
        out.append(_save(fig, out_dir, "locks_ccdf"))
    fig = fig_spike_timeline(summary)
    if fig is not None:
        out.append(_save(fig, out_dir, "spike_timeline"))
    out.append(_save(fig_summary(summary), out_dir, "summary"))
    out.append(_save(fig_throughput(summary), out_dir, "throughput"))
    for sw in summary.sweeps:
        out.append(_save(fig_sweep(summary, sw), out_dir, "sweep_" + sw.slug))
    return out
