"""Lock hold times (TRACE=windows, guest/modules/mmlat_windows, traced
boots) of the PTE, i_mmap and anon_vma locks: per lock, mode and side, per
hold class and per function that took the lock, for summary.json and
report.txt.  Lost and discarded holds are in the report's tracer
counters."""
from . import attribute, load, stats

METHOD = ("hooks on the lock calls of the lock users in guest/classes.txt; "
          "hold = lock hook to unlock hook; waits from lock:contention_begin/end; "
          "log-linear ns buckets (midpoint, < 1.6 % wide), exact max")
# The order of the report's hold tables: the locks the series makes
# preemptible first.
LOCKS = ("i_mmap", "anon_vma", "pte")
MODES = ("spin", "mutex", "rwsem-write", "rwsem-read")
SIDES = ("baseline", "patched")


def _group(sites):
    """Hold statistics of sites pooled: stats and "hist" pairs of their
    merged histograms (ns), and their sleep and wait counts summed."""
    st = stats.summarize_with_hist(stats.merge_hists([s["hist_ns"] for s in sites]))
    st.update(slept=sum(s["slept"] for s in sites), waits=sum(s["waits"] for s in sites),
              wait_total_ns=sum(s["wait_total_ns"] for s in sites),
              wait_max_ns=max((s["wait_max_ns"] for s in sites), default=0))
    return st


def summarize(side_cells):
    """side_cells: {side: [traced cells]} -> None when no cell has lock
    data, else {"method", "n_cells": {side: n}, "locks": {lock: {side:
    [{mode, preemptible, stats, hist, slept, waits, wait_total_ns,
    wait_max_ns}] by mode}}, "classes": {hold class: {side: stats and
    hist}}, "sites": {lock: [{func, class, side: {stats, slept, waits,
    ..., modes}}] longest hold first}}, times in ns."""
    have = {side: [s for c in cells if c.get("locks") for s in c["locks"]["sites"]]
            for side, cells in side_cells.items()}
    n_cells = {side: sum(1 for c in cells if c.get("locks"))
               for side, cells in side_cells.items()}
    if not any(n_cells.values()):
        return None
    out = {"method": METHOD, "n_cells": n_cells, "locks": {}, "classes": {}, "sites": {}}
    for lock in LOCKS:
        out["locks"][lock] = {}
        for side, sites in have.items():
            mine = [s for s in sites if s["lock"] == lock]
            out["locks"][lock][side] = [
                dict(_group(by_mode), mode=mode, preemptible=load.PREEMPTIBLE[mode])
                for mode in MODES for by_mode in [[s for s in mine if s["mode"] == mode]]
                if by_mode]
        rows = []
        for func in sorted({s["func"] for sites in have.values() for s in sites
                            if s["lock"] == lock}):
            row = {"func": func}
            for side, sites in have.items():
                mine = [s for s in sites if s["lock"] == lock and s["func"] == func]
                row["class"] = mine[0]["class"] if mine else row.get("class")
                row[side] = dict(_group(mine), modes=[m for m in MODES
                                                      if any(s["mode"] == m for s in mine)])
                del row[side]["hist"]
            rows.append(row)
        out["sites"][lock] = sorted(rows, key=lambda r: -max(
            r[side]["max"] or 0 for side in have))
    classes = sorted({s["class"] for sites in have.values() for s in sites},
                     key=attribute.CLASSES.index)
    for cls in classes:
        out["classes"][cls] = {side: stats.summarize_with_hist(stats.merge_hists(
            [s["hist_ns"] for s in sites if s["class"] == cls]))
            for side, sites in have.items()}
    return out


def _us(v, w):
    """ns as us in w columns: one decimal while it fits, none beyond (a
    sleeping lock's hold, switched out, can last 189 ms)."""
    if v is None:
        return "-".rjust(w)
    s = "%.1f" % (v / 1000.0)
    return (s if len(s) <= w else "%.0f" % (v / 1000.0)).rjust(w)


def _n(v, w):
    """A count in w columns: thousands (k) or millions (M) when it must."""
    for div, unit in ((1, ""), (1000, "k"), (1000000, "M")):
        s = "%d%s" % (round(v / div), unit)
        if len(s) <= w:
            return s.rjust(w)
    return s


# Modes in the table's mode column.
MODE_SHORT = {"spin": "spin", "mutex": "mutex", "rwsem-write": "rwsem-w",
              "rwsem-read": "rwsem-r"}
ROW = "  %-8s %-7s %7s %6s %6s %7s %-11s %5s %5s %7s"
LEGEND = ["  preemptible: holder may be preempted (spin no; mutex, rwsem yes);",
          "  rwsem-w/-r: held for write/read; slept: holds whose holder was",
          "  switched out; waits: lock:contention_begin/end, max wait in us"]
TOP_FUNCS = 3


def render(pl, labels, boot):
    """report.txt lines for one workload: a hold table per lock (count,
    p50, p99, max per side and mode, whether the holder is preemptible,
    holds that slept, waits and the longest wait) and its longest holds by
    function, max and mode per side; labels: {side: variant name, at most
    8 columns shown}, boot: the boot kind the holds come from."""
    if not pl:
        return []
    sides = [side for side in SIDES if pl["n_cells"].get(side)]
    L = []
    for lock in LOCKS:
        L.append("%s lock hold time (us), %s boots:" % (lock, boot))
        L.append(ROW % ("variant", "mode", "count", "p50", "p99", "max", "preemptible",
                        "slept", "waits", "maxwait"))
        for side in sides:
            rows = pl["locks"][lock][side]
            if not rows:
                L.append("  %-8s no holds recorded" % labels[side][:8])
            for r in rows:
                L.append(ROW % (labels[side][:8], MODE_SHORT[r["mode"]], _n(r["count"], 7),
                                _us(r["p50"], 6), _us(r["p99"], 6), _us(r["max"], 7),
                                "yes" if r["preemptible"] else "no", _n(r["slept"], 5),
                                _n(r["waits"], 5),
                                _us(r["wait_max_ns"] if r["waits"] else None, 7)))
        top = pl["sites"][lock][:TOP_FUNCS]
        if top:
            L.append("  longest holds by function, max us (%s):" % " / ".join(
                labels[side] for side in sides))
            for r in top:
                L.append("    %-34s %s" % (r["func"][:34], " / ".join(
                    " ".join([_us(r[side]["max"], 9).strip()] + ["+".join(
                        MODE_SHORT[m] for m in r[side]["modes"])] * bool(r[side]["modes"]))
                    for side in sides)))
    L.extend(LEGEND)
    return L
