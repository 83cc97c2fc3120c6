"""PTE-lock hold times (TRACE=windows, guest/modules/mmlat_windows, traced
boots): per site class and side, for summary.json and report.txt.  Lost
and discarded holds are in the report's tracer counters."""
from . import stats

METHOD = ("ftrace hooks on _raw_spin_lock/_raw_spin_unlock called from PTE-lock "
          "users; hold = lock hook to unlock hook, incl. one hook return+entry; "
          "log-linear ns buckets (midpoint, < 1.6 % wide), exact max")


def summarize(side_cells):
    """side_cells: {side: [traced cells]} -> None when no cell has PTE-lock
    data, else {"method", "n_cells": {side: n}, "classes": {class: {side:
    stats and "hist" pairs (ns)}}, "funcs": {func: {"class", side: stats
    (ns)}}}."""
    have = {side: [c["ptelock"] for c in cells if c.get("ptelock")]
            for side, cells in side_cells.items()}
    if not any(have.values()):
        return None
    out = {"method": METHOD, "n_cells": {}, "classes": {}, "funcs": {}}
    classes, funcs = set(), {}
    for side, pls in have.items():
        out["n_cells"][side] = len(pls)
        for p in pls:
            classes |= set(p["by_class"])
            for s in p["sites"].values():
                funcs[s["func"]] = s["class"]
    for cls in sorted(classes):
        out["classes"][cls] = {
            side: stats.summarize_with_hist(stats.merge_hists(
                [p["by_class"].get(cls, {}) for p in pls]))
            for side, pls in have.items()}
    for f, cls in sorted(funcs.items()):
        d = {"class": cls}
        for side, pls in have.items():
            d[side] = stats.summarize_hist(stats.merge_hists(
                [p["by_func"].get(f, {}) for p in pls]))
        out["funcs"][f] = d
    return out


def _us(v):
    return "-" if v is None else "%.1f" % (v / 1000.0)


def render(pl, labels, boot):
    """report.txt lines for one workload; labels: {side: variant name},
    boot: the boot kind the holds come from."""
    if not pl:
        return []
    L = ["PTE-lock hold time (us), %s boots (ftrace hooks, see README):" % boot,
         "  %-15s %-12s %8s %8s %8s %9s" % ("class", "variant", "count", "p50", "p99", "max")]
    for cls, sides in pl["classes"].items():
        first = True
        for side in ("baseline", "patched"):
            if side not in sides:
                continue
            st = sides[side]
            L.append("  %-15s %-12s %8d %8s %8s %9s" % (
                cls if first else "", labels[side][:12], st["count"],
                _us(st["p50"]), _us(st["p99"]), _us(st["max"])))
            first = False
    top = sorted(pl["funcs"].items(), key=lambda kv: -max(
        (kv[1][s]["max"] or 0) for s in ("baseline", "patched") if s in kv[1]))[:5]
    if top:
        L.append("  longest holds by function (max us: %s)" % " / ".join(
            labels[s][:12] for s in ("baseline", "patched") if s in pl["n_cells"]))
        for f, d in top:
            L.append("    %-32s %s" % (f[:32], " / ".join(
                _us(d[s]["max"]) for s in ("baseline", "patched") if s in d)))
    return L
