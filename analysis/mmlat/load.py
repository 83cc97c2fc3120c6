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
