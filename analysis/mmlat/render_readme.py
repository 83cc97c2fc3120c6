"""The README's measured tables, as markdown, from the summaries of the
runs they name (full or compact, model.compact): the headline of primary
endpoints, the patches that moved an endpoint (STEPS=each), a sweep of
one lock's windows and holds, window statistics of several runs side by
side, the latency spikes the windows explain, and what the A/A study's
spreads let the verdicts decide.  Each
table ends with a line naming its run and method, so that the README
cannot quote a figure of another run."""
from plan import knobs

from . import formatting as fmt
from . import load, model, simulate, sweep


def _row(cells):
    return "| " + " | ".join(cells) + " |"


def _head(cells):
    return [_row(cells), "|" + "---|" * len(cells)]


def run_line(summary):
    """Which run a table comes from and how it was made."""
    run, g = summary.run, summary.gate
    looks = g.looks or []
    repeat = looks[-1].repeats if len(looks) > 1 else run.repeat
    return ("(run %s: %s vs %s, %s, %s, %s x %s s boots a side; %s over %d primary "
            "endpoints, %s)" % (run.run_id or "-", summary.baseline, summary.patched,
                                run.kernel_version or "-", fmt.accel_text(run), repeat or "-",
                                run.duration_s or "-", g.correction, g.family,
                                fmt.overhead_text(summary.calibration)))


def headline(summary):
    """Per workload each primary endpoint: both sides, the change, its
    margin, the verdict and its decision interval."""
    labels = summary.short_labels()
    lines = _head(["workload", "endpoint", labels.baseline, labels.patched, "change %",
                   "margin", "verdict", "decision interval %"])
    for w in summary.workloads:
        for c in w.primary():
            lines.append(_row([w.name, fmt.headline_label(c.spec), *fmt.sides_text(c),
                               fmt.pct_text(c), fmt.margin_text(c.margin), c.verdict,
                               fmt.decision_interval_text(c)]))
    return lines + ["", run_line(summary)]


def moved(c):
    """Whether a step moved an endpoint: its bootstrap interval of the
    change lies beyond the endpoint's margin (a side under the floor: the
    interval excludes no change)."""
    if c.lo is None or not c.base or not c.patched:
        return False
    if fmt.floored(c.base, c.spec) or fmt.floored(c.patched, c.spec):
        return c.lo > 0 or c.hi < 0
    margin = c.margin or 0
    base = c.base_gmean
    return c.lo > margin * base or c.hi < -margin * base


def steps(summary):
    """The per-patch table's rows that moved (moved()), patch by patch."""
    conf = round(summary.gate.conf * 100)
    lines = _head(["patch", "workload", "endpoint", "before", "after",
                   "%d %% interval of the change" % conf])
    for st in summary.steps:
        for w in summary.workloads:
            for c in st.comparisons[w.name]:
                if moved(c):
                    lines.append(_row(["%d %s" % (st.index, st.title), w.name,
                                       fmt.headline_label(c.spec), *fmt.sides_text(c),
                                       fmt.interval_text(c)]))
    return lines + ["", run_line(summary)]


def sweep_lock(summary, name, key, lock):
    """One sweep's windows of a lock's class (p99 / max) and its holds
    (max), per value, for the compared sides."""
    group = next(g for g, _, held in sweep.GROUPS if held == lock)
    sw = next(s for s in summary.sweeps if s.name == name and s.key == key)
    sides = [summary.baseline, summary.patched]
    lines = _head([key] + ["%s %s window p99 / max us" % (v, group) for v in sides]
                  + ["%s %s hold max us" % (v, lock) for v in sides])
    for value in sw.values:
        rows = [sw.row(v, value) for v in sides]
        lines.append(_row(["%s=%s" % (key, value)]
                          + ["%s / %s" % (fmt.fitted(r.windows[group].p99, 7),
                                          fmt.fitted(r.windows[group].max, 7)) for r in rows]
                          + [fmt.fitted(r.holds[lock].max, 9) for r in rows]))
    return lines + ["", run_line(summary)]


def windows(summaries, tracer, workload, side):
    """One side's windows of a tracer and workload in several runs, a row
    per run: how many (of 5 us and more), p50, p90, p99, max (us)."""
    if tracer not in load.TRACERS:
        raise ValueError("no tracer %s" % tracer)
    lines = _head(["run", "accelerator", "windows", "p50", "p90", "p99", "max"])
    for summary in summaries:
        windows = summary.workload(workload).windows[tracer].overall[side]
        lines.append(_row([summary.run.run_id or "-", fmt.accel_text(summary.run),
                           str(windows.count)] + [fmt.us(windows.stat(name)) for name in
                                                  ("p50", "p90", "p99", "max")]))
    return lines + [""] + [run_line(s) for s in summaries]


def sites(summary, tracer, workload):
    """A workload's longest windows of a tracer by call site (opener <-
    caller) and class: per side how many and the longest (us)."""
    if tracer not in load.TRACERS:
        raise ValueError("no tracer %s" % tracer)
    labels = summary.short_labels()
    lines = _head(["class", "call site (opener <- caller)",
                   "%s windows / max us" % labels.baseline,
                   "%s windows / max us" % labels.patched])
    for site in summary.workload(workload).windows[tracer].sites:
        lines.append(_row([site.window_class, "`%s`" % site.site]
                          + ["%d / %s" % (f.count, fmt.us(f.max)) for f in site.figures.values()]))
    return lines + ["", run_line(summary)]


def holds(summary, workload):
    """A workload's lock holds: per lock and mode, per side, how many,
    their p99 / max (us) and the function that held it longest."""
    labels = summary.short_labels()
    locks = summary.workload(workload).locks
    lines = _head(["lock", "mode"] + ["%s holds, p99 / max us, longest holder" % label
                                      for label in labels.values()])
    for lock, by_side in locks.by_mode.items():
        for mode in dict.fromkeys(m.mode for rows in by_side.values() for m in rows):
            cells = []
            for side, rows in by_side.items():
                row = next((m for m in rows if m.mode == mode), None)
                holder = locks.longest_holder(lock, side, mode)
                cells.append("-" if row is None else "%d, %s / %s, %s" % (
                    row.count, fmt.ns_as_us(row.p99, 1), fmt.ns_as_us(row.max, 1),
                    "`%s`" % holder.func if holder else "-"))
            lines.append(_row([lock, mode] + cells))
    return lines + ["", run_line(summary)]


def spikes(summary):
    """Per workload and side, the wakeups above their boot's p99.9 and how
    many a window open at the timer's expiry explains, with the classes
    of those windows (the QEMU plugin's boots)."""
    labels = summary.short_labels()
    lines = _head(["workload", "side", "boots", "wakeups", "spikes", "explained",
                   "by class of the window"])
    for w in summary.workloads:
        for side, s in w.spikes.items():
            if s is None:
                continue
            lines.append(_row([w.name, labels[side], str(s.boots), str(s.wakeups),
                               str(s.spikes), "%d (%s)" % (s.explained, _share(s.share)),
                               ", ".join("%s %d" % kv for kv in s.by_class.items()) or "-"]))
    return lines + ["", run_line(summary)]


def _share(share):
    return "-" if share is None else "%.1f %%" % (100 * share)


def reach(study_path):
    """Per primary endpoint of the default workloads: its between-boot CV
    as the A/A study measured it, its margin, and the boots a side with
    which it is called "same" in 80 % of runs when nothing changed
    (simulate.boots_to_settle)."""
    workloads = knobs.knob("WORKLOADS").default.split()
    family = simulate.measured(workloads, study_path)
    lines = _head(["workload", "endpoint", "between-boot CV %", "margin",
                   "boots a side to settle"])
    for f, boots in zip(family, simulate.boots_to_settle(family)):
        lines.append(_row([f.workload, f.endpoint, "%.1f" % (100 * f.cv),
                           fmt.margin_text(f.margin), str(boots) if boots else "out of reach"]))
    study = simulate.load_study(study_path)
    boots = {w["clean_boots"] for w in study["workloads"].values()}
    return lines + ["", "(A/A study: %s seeded clean boots a workload of one %s kernel; "
                    "Holm over the %d primary endpoints of WORKLOADS=\"%s\")"
                    % ("/".join(map(str, sorted(boots))), study["variant"], len(family),
                       " ".join(workloads))]


# The tables a README marker may name: kind -> (renderer, how many files it
# takes, None: any number, how each file is read; then its other arguments).
TABLES = {"headline": (headline, 1, model.read), "steps": (steps, 1, model.read),
          "sweep-lock": (sweep_lock, 1, model.read), "windows": (windows, None, model.read),
          "sites": (sites, 1, model.read), "holds": (holds, 1, model.read),
          "spikes": (spikes, 1, model.read), "reach": (reach, 1, str)}
