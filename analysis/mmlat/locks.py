"""Lock hold times (TRACE=windows, guest/modules/mmlat_windows, traced
boots) of the PTE, i_mmap and anon_vma locks: per lock, mode and side, per
hold class and per function that took the lock, into the summary model
(model.LockHolds).  Lost and discarded holds are in the report's tracer
counters."""
from . import attribute, load, model, stats

METHOD = ("hooks on the lock calls of the lock users in guest/classes.txt; "
          "hold = lock hook to unlock hook; waits from lock:contention_begin/end; "
          "log-linear ns buckets (midpoint, < 1.6 % wide), exact max")
# The order of the report's hold tables: the locks the series makes
# preemptible first.
LOCKS = ("i_mmap", "anon_vma", "pte")
MODES = ("spin", "mutex", "rwsem-write", "rwsem-read")


def _holds(cls, sites, **more):
    """The holds of sites pooled, as cls (model.HoldFigures or a subclass):
    the statistics of their merged histograms (ns), their sleeps and waits
    summed, the longest wait."""
    return cls.of(stats.merge_hists([s["hist_ns"] for s in sites]),
                  slept=sum(s["slept"] for s in sites), waits=sum(s["waits"] for s in sites),
                  wait_total_ns=sum(s["wait_total_ns"] for s in sites),
                  wait_max_ns=max((s["wait_max_ns"] for s in sites), default=0), **more)


def _site_holds(sites):
    """The holds of one function's sites (no histogram: the table shows
    its figures only) and the modes it took the lock in."""
    holds = _holds(model.SiteHolds, sites,
                   modes=[m for m in MODES if any(s["mode"] == m for s in sites)])
    holds.hist = []
    return holds


def summarize(side_cells, seed=1):
    """side_cells: model.Sides of traced cells -> model.LockHolds, None
    when no cell has lock data: per lock its holds by mode and by the
    function that took it (longest hold first), per hold class the pooled
    holds with the band of their CCDF over boots, times in ns."""
    sites_of = model.Sides(*([s for c in cells if c.get("locks") for s in c["locks"]["sites"]]
                             for cells in side_cells.values()))
    boots = model.Sides(*(sum(1 for c in cells if c.get("locks"))
                          for cells in side_cells.values()))
    if not any(boots.values()):
        return None
    by_mode, sites = {}, {}
    for lock in LOCKS:
        by_mode[lock] = model.Sides(*(
            [_holds(model.ModeHolds, taken, mode=mode, preemptible=load.PREEMPTIBLE[mode])
             for mode in MODES
             for taken in [[s for s in all_sites if s["lock"] == lock and s["mode"] == mode]]
             if taken]
            for all_sites in sites_of.values()))
        rows = []
        for func in sorted({s["func"] for all_sites in sites_of.values() for s in all_sites
                            if s["lock"] == lock}):
            mine = model.Sides(*([s for s in all_sites if s["lock"] == lock and s["func"] == func]
                                 for all_sites in sites_of.values()))
            rows.append(model.LockSite(func=func,
                                       hold_class=(mine.patched or mine.baseline)[0]["class"],
                                       holds=model.Sides(*map(_site_holds, mine.values()))))
        sites[lock] = sorted(rows, key=lambda r: -max(h.max or 0 for h in r.holds.values()))
    classes = {}
    for cls in sorted({s["class"] for all_sites in sites_of.values() for s in all_sites},
                      key=attribute.CLASSES.index):
        classes[cls] = model.Sides(*(
            model.Distribution.of(stats.merge_hists(
                [s["hist_ns"] for s in all_sites if s["class"] == cls]),
                band=_band(stats.ccdf_band([stats.merge_hists(
                    [s["hist_ns"] for s in c["locks"]["sites"] if s["class"] == cls])
                    for c in cells if c.get("locks")], seed=seed)))
            for all_sites, cells in zip(sites_of.values(), side_cells.values())))
    return model.LockHolds(method=METHOD, boots=boots, by_mode=by_mode, classes=classes,
                           sites=sites)


def _band(band):
    return None if band is None else model.Band(**band)
