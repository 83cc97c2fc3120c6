"""PTE-lock hold times (TRACE=windows, guest/modules/mmlat_windows): per
site class and side, for summary.json and report.txt."""
from . import stats

METHOD = ("kprobes on the lock/unlock call sites of PTE-lock users; hold = "
          "lock call to unlock call, incl. one int3 kprobe exit+entry; "
          "log-linear ns buckets (lower bound, 12.5 %), exact max")


def summarize(side_cells):
    """side_cells: {side: [cells]} -> None when no cell has PTE-lock data,
    else {"method", "n_cells": {side: n}, "lost"/"discarded": {side: n},
    "classes": {class: {side: stats (ns)}}, "funcs": {func: {"class",
    side: stats (ns)}}}."""
    have = {side: [c["ptelock"] for c in cells if c.get("ptelock")]
            for side, cells in side_cells.items()}
    if not any(have.values()):
        return None
    out = {"method": METHOD, "n_cells": {}, "lost": {}, "discarded": {},
           "classes": {}, "funcs": {}}
    classes, funcs = set(), {}
    for side, pls in have.items():
        out["n_cells"][side] = len(pls)
        out["lost"][side] = sum(p["lost"] for p in pls)
        out["discarded"][side] = sum(s["discarded"] for p in pls
                                     for s in p["sites"].values())
        for p in pls:
            classes |= set(p["by_class"])
            for s in p["sites"].values():
                funcs[s["func"]] = s["class"]
    for cls in sorted(classes):
        out["classes"][cls] = {
            side: stats.summarize_hist(stats.merge_hists(
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


def render(pl, labels):
    """report.txt lines for one workload; labels: {side: variant name}."""
    if not pl:
        return []
    L = ["PTE-lock hold time (us; kprobes at lock call sites, see README):",
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
    L.append("  lost %s, discarded %s (baseline, patched)" % (
        "/".join(str(pl["lost"].get(s, 0)) for s in ("baseline", "patched")),
        "/".join(str(pl["discarded"].get(s, 0)) for s in ("baseline", "patched"))))
    return L
