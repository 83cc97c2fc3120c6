"""summary.txt: a run's boots at a glance, from the loaded cells (before
any report): per variant and workload the ok boots of each kind,
cyclictest min, avg and max of the clean boots and the longest windows of
the traced ones."""
from . import formatting, load


def _longest_window(cells, tracer):
    """The longest window of a tracer in traced boots: the larger of the
    max tracer's reading and the window histogram's max."""
    readings = []
    for c in cells:
        windows = c["windows"][tracer]
        if windows["tracer_max"] is not None:
            readings.append(windows["tracer_max"])
        if windows["hist"]:
            readings.append(max(windows["hist"]))
    return max(readings) if readings else None


def summary_table(run):
    """One line per variant and workload: ok boots of each kind, cyclictest
    min/avg/max from the clean boots, the longest windows from the traced
    ones."""
    # the workload column as wide as the longest entry, so that a sweep's
    # entries stay apart (imap:s=1,n=16 and imap:s=1,n=64 cut to 11 were
    # both imap:s=1,n=); 79 columns up to 11
    width = max([11] + [len(w) for w in load.workloads(run)])
    row = "%-10s %-" + str(width) + "s %6s %6s %5s %7s %7s %10s %9s"
    lines = [row % ("variant", "workload", "clean", "traced", "min", "avg", "max",
                    "preemptoff", "irqsoff"),
             row % ("", "", "ok", "ok", "clean", "clean", "clean", "traced", "traced")]
    for v in load.variants(run):
        for w in load.workloads(run):
            ok = {}
            for boot in load.BOOTS:
                booted = [c for c in run["cells"] if c["variant"] == v
                          and c["workload"] == w and c["boot"] == boot]
                ok[boot] = "%d/%d" % (sum(c["status"] == "ok" for c in booted), len(booted))
            clean = load.ok_cells(run, v, w, load.figure_boot(run)["latency"])
            figures = {stat: [c["cyclictest"][stat] for c in clean
                              if c["cyclictest"][stat] is not None]
                       for stat in ("min", "avg", "max")}
            traced = load.ok_cells(run, v, w, load.figure_boot(run)["windows"])
            lines.append(row % (
                v[:10], w, ok["clean"], ok["traced"],
                formatting.number(min(figures["min"], default=None), 5),
                formatting.number(sum(figures["avg"]) / len(figures["avg"])
                                  if figures["avg"] else None, 7),
                formatting.number(max(figures["max"], default=None), 7),
                formatting.number(_longest_window(traced, "preemptoff"), 10),
                formatting.number(_longest_window(traced, "irqsoff"), 9)))
    return "\n".join(lines) + "\n"
