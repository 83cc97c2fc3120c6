"""Load a results/<run-id>/ folder (layout in results/README.md)."""
import json
import os

from . import parse
from .attribute import classify

TRACERS = ("preemptoff", "irqsoff")


def _json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _exists(p):
    return os.path.exists(p)


def load_symmap(run_dir, variant, cache={}):
    p = os.path.join(run_dir, "kernels", variant, "System.map")
    if p not in cache:
        try:
            cache[p] = parse.SymbolMap(p)
        except (OSError, ValueError):
            cache[p] = None
    return cache[p]


MODULE_KIND = {"preemptoff": "preempt", "irqsoff": "irq"}


def _module_windows(w, mod, tr):
    """Fill one tracer's window record from an mmlat_windows dump: "hist"
    holds every window (log-linear buckets, lower bound in us, the top
    count at the exact max); "by_class" and "sites" the windows of at least
    the module's threshold, from its (caller, parent) table (power-of-two
    buckets, lower bound, each key's top count at its exact max).  Windows
    below the threshold are counted in "below_thresh", windows the full
    table could not key in "overflow": both are in "hist" only."""
    if not mod or MODULE_KIND[tr] not in mod["kinds"]:
        return
    k = mod["kinds"][MODULE_KIND[tr]]
    w["present"] = True
    w["source"] = "module"
    w["hist"] = parse.ns_hist_to_us({lo: n for lo, _, n in k["buckets"]}, k["max_ns"])
    w["overflow"] = k.get("overflow", 0)
    w["below_thresh"] = k["n"] - k.get("keyed", 0) - w["overflow"]
    w["thresh_us"] = mod["params"].get("thresh_ns", 0) / 1000.0
    w["unmatched"] = k.get("unmatched", 0)
    w["module_max"] = {"us": k["max_ns"] / 1000.0, "caller": k.get("max_caller"),
                       "parent": k.get("max_parent")}
    for e in mod["keys"]:
        if e["kind"] != MODULE_KIND[tr]:
            continue
        caller, parent = parse.sym_func(e["caller"]), parse.sym_func(e["parent"])
        cls = classify(caller, parent, tr)
        h = parse.ns_hist_to_us({1 << b: n for b, n in e["log2_ns"].items()}, e["max_ns"])
        bc = w["by_class"].setdefault(cls, {})
        for us, n in h.items():
            bc[us] = bc.get(us, 0) + n
        site = "%s<-%s" % (caller, parent)
        st = w["sites"].setdefault(site, {"class": cls, "count": 0, "max": 0, "total_us": 0.0})
        st["count"] += e["n"]
        st["max"] = max(st["max"], e["max_ns"] // 1000)
        st["total_us"] += e["total_ns"] / 1000.0


def ptelock_summary(d):
    """Hold times from an mmlat_ptelock dump, per lock site and per class
    (attribute.classify of the function that took the lock): {"params",
    "lost", "unmatched_unlock", "sites": {at: {func, class, count, max_ns,
    total_ns, nonptl, lost, discarded, hist_ns}}, "by_class": {class: {ns: n}},
    "by_func": {func: {ns: n}}}.  Histograms are keyed by bucket lower
    bound in ns, the top count of each site at its exact max."""
    out = {"params": d["params"], "lost": d["lost"],
           "unmatched_unlock": d["unmatched_unlock"], "sites": {},
           "by_class": {}, "by_func": {}}
    for s in d["sites"]:
        if s["type"] != "lock":
            continue
        cls = classify(s["func"], None)
        h = dict(s["buckets"])
        if h and s["max_ns"] > max(h):
            top = max(h)
            h[top] -= 1
            if not h[top]:
                del h[top]
            h[s["max_ns"]] = h.get(s["max_ns"], 0) + 1
        out["sites"][s["at"]] = {"func": s["func"], "class": cls, "count": s["n"],
                                 "max_ns": s["max_ns"], "total_ns": s["total_ns"],
                                 "nonptl": s.get("nonptl", 0), "lost": s.get("lost", 0),
                                 "discarded": s.get("discarded", 0), "hist_ns": h}
        for key, dst in ((cls, out["by_class"]), (s["func"], out["by_func"])):
            m = dst.setdefault(key, {})
            for ns, n in h.items():
                m[ns] = m.get(ns, 0) + n
    return out


def load_cell(run_dir, variant, workload, rep, cell_dir):
    cell = {"variant": variant, "workload": workload, "repeat": rep,
            "dir": cell_dir, "meta": _json(os.path.join(cell_dir, "cell.json"))}
    cell["status"] = cell["meta"].get("status", "unknown")
    cell["cause"] = cell["meta"].get("cause")
    g = os.path.join(cell_dir, "guest")
    # cyclictest: prefer the histfile (has overflow counts), else the JSON
    lat = {}
    ct = {"min": None, "avg": None, "max": None, "count": 0, "overflows": 0}
    hp, jp = os.path.join(g, "cyclictest.hist"), os.path.join(g, "cyclictest.json")
    threads = []
    if _exists(hp):
        threads = parse.parse_cyclictest_hist(hp)["threads"]
    elif _exists(jp):
        threads = list(parse.parse_cyclictest_json(jp)["threads"].values())
    for t in threads:
        for k, v in t["hist"].items():
            lat[k] = lat.get(k, 0) + v
        ct["overflows"] += t.get("overflows") or 0
        ct["count"] += t.get("total") or t.get("cycles") or 0
        if t.get("max") is not None:
            ct["max"] = max(ct["max"] or 0, t["max"])
        if t.get("min") is not None:
            ct["min"] = t["min"] if ct["min"] is None else min(ct["min"], t["min"])
    if threads:
        avgs = [t["avg"] for t in threads if t.get("avg") is not None]
        ct["avg"] = sum(avgs) / len(avgs) if avgs else None
    # an overflowed sample is counted at the reported max so that max is kept
    if ct["overflows"] and ct["max"] is not None:
        lat[ct["max"]] = lat.get(ct["max"], 0) + ct["overflows"]
    cell["lat_hist"] = lat
    cell["cyclictest"] = ct
    # windows
    sm = load_symmap(run_dir, variant)
    ks = os.path.join(g, "kallsyms.txt")   # optional: also has module symbols
    if _exists(ks):
        try:
            sm = parse.SymbolMap(ks)
        except ValueError:
            pass
    cell["windows"] = {}
    # TRACE=windows: the mmlat_windows module's dumps (symbols resolved in
    # the guest) instead of hist triggers
    mp = os.path.join(g, "windows", "windows.txt")
    mod = parse.parse_windows(mp) if _exists(mp) else None
    pp = os.path.join(g, "windows", "ptelock.txt")
    cell["ptelock"] = ptelock_summary(parse.parse_ptelock(pp)) if _exists(pp) else None
    for tr in TRACERS:
        wp = os.path.join(g, "windows", tr + ".hist")
        w = {"hist": {}, "by_class": {}, "sites": {}, "dropped": 0,
             "present": _exists(wp)}
        if w["present"]:
            d = parse.parse_hist_trigger(wp)
            w["dropped"] = d["dropped"]
            for e in d["entries"]:
                lat_us, n = e.get("lat"), e["hitcount"]
                if not isinstance(lat_us, int):
                    continue
                w["hist"][lat_us] = w["hist"].get(lat_us, 0) + n
                # guest/runner.sh names the keys caller/parent; the raw
                # preemptirq fields are caller_offs/parent_offs
                co = e.get("caller", e.get("caller_offs"))
                po = e.get("parent", e.get("parent_offs"))
                caller = sm.name(co) if sm else str(co)
                parent = sm.name(po) if sm else str(po)
                cls = classify(caller, parent, tr)
                bc = w["by_class"].setdefault(cls, {})
                bc[lat_us] = bc.get(lat_us, 0) + n
                site = "%s<-%s" % (caller, parent)
                s = w["sites"].setdefault(site, {"class": cls, "count": 0, "max": 0})
                s["count"] += n
                s["max"] = max(s["max"], lat_us)
        if not w["present"]:
            _module_windows(w, mod, tr)
        snap = os.path.join(g, "tracer", tr + ".trace")
        w["snapshot"] = parse.parse_tracer_snapshot(snap) if _exists(snap) else None
        w["tracer_max"] = parse.parse_tracer_max(os.path.join(g, "tracer", tr + ".max"))
        cell["windows"][tr] = w
    # throughput
    wl = os.path.join(g, "workload.txt")
    cell["workload_recs"] = parse.parse_workload(wl) if _exists(wl) else []
    tp = parse.workload_throughput(cell["workload_recs"])
    sy = os.path.join(g, "stress-ng.yaml")
    if tp is None and _exists(sy):
        m = parse.parse_stressng_yaml(sy)
        v = [x.get("bogo-ops-per-second-real-time") for x in m]
        v = [x for x in v if isinstance(x, (int, float))]
        tp = sum(v) if v else None
    cell["ops_per_s"] = tp
    cp = os.path.join(g, "calib.txt")   # injected calibration windows
    cell["calib"] = parse.parse_calib(cp) if _exists(cp) else []
    return cell


def load_run(run_dir):
    run = {"dir": run_dir, "meta": _json(os.path.join(run_dir, "meta.json")),
           "cells": [], "kernels": {}}
    kd = os.path.join(run_dir, "kernels")
    if os.path.isdir(kd):
        for v in sorted(os.listdir(kd)):
            run["kernels"][v] = _json(os.path.join(kd, v, "build.json"))
    cdir = os.path.join(run_dir, "cells")
    if not os.path.isdir(cdir):
        return run
    for v in sorted(os.listdir(cdir)):
        for w in sorted(os.listdir(os.path.join(cdir, v))):
            wd = os.path.join(cdir, v, w)
            if not os.path.isdir(wd):
                continue
            for r in sorted(os.listdir(wd)):
                if r.startswith(".") or not r.startswith("r"):
                    continue
                c = load_cell(run_dir, v, w, r, os.path.join(wd, r))
                # cell.json may lack the config hash: take the variant build's
                k = run["kernels"].get(v, {})
                if "config_sha256" not in c["meta"] and k.get("config_sha256"):
                    c["meta"]["config_sha256"] = k["config_sha256"]
                if "accel" not in c["meta"] and run["meta"].get("accel"):
                    c["meta"]["accel"] = run["meta"]["accel"]
                run["cells"].append(c)
    return run


def variants(run):
    seen = []
    for c in run["cells"]:
        if c["variant"] not in seen:
            seen.append(c["variant"])
    return seen


def workloads(run):
    seen = []
    for c in run["cells"]:
        if c["workload"] not in seen:
            seen.append(c["workload"])
    return seen


def ok_cells(run, variant, workload):
    return [c for c in run["cells"] if c["variant"] == variant
            and c["workload"] == workload and c["status"] == "ok"]
