"""summary.txt, report.txt, report.md and summary.json."""
import json
import os

from . import load, ptelock, stats

TRACERS = load.TRACERS


def _f(v, w=8):
    if v is None:
        return "-".rjust(w)
    if isinstance(v, float) and not v.is_integer():
        return ("%.1f" % v).rjust(w)
    return str(int(v)).rjust(w)


def _meta(run, cells, key):
    v = run["meta"].get(key)
    if v is None:
        vals = {c["meta"].get(key) for c in cells if c["meta"].get(key) is not None}
        v = ",".join(sorted(map(str, vals))) if vals else None
    return v


def summary_table(run):
    lines = ["%-12s %-12s %5s %6s %8s %8s %9s %9s" % (
        "variant", "workload", "ok", "min", "avg", "max", "preemptoff", "irqsoff")]
    for v in load.variants(run):
        for w in load.workloads(run):
            allc = [c for c in run["cells"] if c["variant"] == v and c["workload"] == w]
            cs = [c for c in allc if c["status"] == "ok"]
            mins = [c["cyclictest"]["min"] for c in cs if c["cyclictest"]["min"] is not None]
            avgs = [c["cyclictest"]["avg"] for c in cs if c["cyclictest"]["avg"] is not None]
            maxs = [c["cyclictest"]["max"] for c in cs if c["cyclictest"]["max"] is not None]
            tm = {}
            for tr in TRACERS:
                vals = []
                for c in cs:
                    wn = c["windows"][tr]
                    if wn["tracer_max"] is not None:
                        vals.append(wn["tracer_max"])
                    if wn["hist"]:
                        vals.append(max(wn["hist"]))
                tm[tr] = max(vals) if vals else None
            lines.append("%-12s %-12s %5s %6s %8s %8s %9s %9s" % (
                v[:12], w[:12], "%d/%d" % (len(cs), len(allc)),
                _f(min(mins) if mins else None, 6),
                _f(sum(avgs) / len(avgs) if avgs else None, 8),
                _f(max(maxs) if maxs else None, 8),
                _f(tm["preemptoff"], 9), _f(tm["irqsoff"], 9)))
    return "\n".join(lines) + "\n"


def text_hist(hb, hp, width=60, rows=12, label_b="b", label_p="p"):
    """Plain-character log-count histogram, baseline '#' vs patched 'o'."""
    import math
    keys = sorted(set(hb) | set(hp))
    if not keys:
        return "(no samples)\n"
    lo, hi = keys[0], keys[-1]
    nb = min(rows, hi - lo + 1)
    step = max(1, int(math.ceil((hi - lo + 1) / float(nb))))
    out = []
    mx = 1
    bins = []
    for i in range(nb):
        a, b = lo + i * step, lo + (i + 1) * step
        cb = sum(n for k, n in hb.items() if a <= k < b)
        cp = sum(n for k, n in hp.items() if a <= k < b)
        bins.append((a, b, cb, cp))
        mx = max(mx, cb, cp)
    half = (width - 24) // 2
    lm = math.log10(mx + 1)
    out.append("  latency us  %-*s  %s" % (half + 9, label_b + " (#, log)", label_p + " (o, log)"))
    for a, b, cb, cp in bins:
        lb = int(round(half * math.log10(cb + 1) / lm))
        lp = int(round(half * math.log10(cp + 1) / lm))
        out.append("%5d-%-6d %7d %-*s|%7d %s" % (a, b - 1, cb, half, "#" * lb, cp, "o" * lp))
    return "\n".join(out) + "\n"


def sides(run, baseline, patched, w):
    """The ok cells compared for workload w: (baseline cells, patched cells).
    A/A (same variant): even-indexed repeats against odd-indexed ones."""
    bc = load.ok_cells(run, baseline, w)
    if baseline == patched:
        return bc[0::2], bc[1::2]
    return bc, load.ok_cells(run, patched, w)


def build(run, baseline=None, patched=None, n_resamples=2000, conf=0.95, seed=1):
    vs = load.variants(run)
    if baseline is None:
        baseline = "baseline" if "baseline" in vs else (vs[0] if vs else None)
    if patched is None:
        patched = "patched" if "patched" in vs else (vs[-1] if vs else None)
    aa = baseline == patched
    s = {"run_dir": run["dir"], "baseline": baseline, "patched": patched,
         "aa_mode": aa, "meta": run["meta"],
         "kernels": {v: run.get("kernels", {}).get(v, {}) for v in {baseline, patched} if v},
         "bootstrap": {"method": None, "n_resamples": n_resamples,
                       "conf": conf, "seed": seed},
         "failed_cells": [], "workloads": {}}
    for c in run["cells"]:
        if c["status"] != "ok":
            s["failed_cells"].append({"variant": c["variant"], "workload": c["workload"],
                                      "repeat": c["repeat"], "status": c["status"],
                                      "cause": c["cause"]})
    for w in load.workloads(run):
        bc, pc = sides(run, baseline, patched, w)
        for a in bc:
            for b in pc:
                stats.check_compatible(a["meta"], b["meta"],
                                       "%s/%s/%s" % (baseline, w, a["repeat"]),
                                       "%s/%s/%s" % (patched, w, b["repeat"]))
        ws = {"latency": {}, "windows": {}, "throughput": {}}
        for name, cells in (("baseline", bc), ("patched", pc)):
            ws["latency"][name] = stats.summarize_hist(stats.merge_hists([c["lat_hist"] for c in cells]))
            ws["latency"][name]["spread"] = stats.spread_across_repeats([c["lat_hist"] for c in cells])
            ws["latency"][name]["overflows"] = sum(c["cyclictest"]["overflows"] for c in cells)
            tps = [c["ops_per_s"] for c in cells if c["ops_per_s"] is not None]
            ws["throughput"][name] = {"mean": sum(tps) / len(tps) if tps else None,
                                      "per_repeat": tps}
        ws["latency"]["diff"] = stats.bootstrap_diff(
            [c["lat_hist"] for c in bc], [c["lat_hist"] for c in pc],
            n_resamples, conf, seed)
        s["bootstrap"]["method"] = ws["latency"]["diff"]["method"]
        for tr in TRACERS:
            t = {"baseline": {}, "patched": {}, "classes": {}}
            for name, cells in (("baseline", bc), ("patched", pc)):
                t[name] = stats.summarize_hist(stats.merge_hists([c["windows"][tr]["hist"] for c in cells]))
                mx = [c["windows"][tr]["tracer_max"] for c in cells if c["windows"][tr]["tracer_max"] is not None]
                t[name]["tracer_max"] = max(mx) if mx else None
                t[name]["dropped"] = sum(c["windows"][tr]["dropped"] for c in cells)
            classes = set()
            for c in bc + pc:
                classes |= set(c["windows"][tr]["by_class"])
            for cls in sorted(classes):
                t["classes"][cls] = {
                    name: stats.summarize_hist(stats.merge_hists(
                        [c["windows"][tr]["by_class"].get(cls, {}) for c in cells]))
                    for name, cells in (("baseline", bc), ("patched", pc))}
            if t["baseline"]["count"] and t["patched"]["count"]:
                t["diff"] = stats.bootstrap_diff(
                    [c["windows"][tr]["hist"] for c in bc],
                    [c["windows"][tr]["hist"] for c in pc],
                    max(200, n_resamples // 4), conf, seed)
            ws["windows"][tr] = t
        ws["ptelock"] = ptelock.summarize({"baseline": bc, "patched": pc})
        ws["n_cells"] = {"baseline": len(bc), "patched": len(pc)}
        ws["calib"] = {"baseline": [x for c in bc for x in c["calib"]],
                       "patched": [x for c in pc for x in c["calib"]]}
        s["workloads"][w] = ws
    return s


def _hdr(s):
    m = s["meta"]
    cells = []
    lines = ["mmlat report: %s vs %s%s" % (s["baseline"], s["patched"],
                                           "  (A/A: noise floor)" if s["aa_mode"] else "")]
    def g(*keys):
        for k in keys:
            if m.get(k) is not None:
                return m[k]
        return None
    lines.append("kernel:   %s" % g("kernel_version", "kernel"))
    ser = g("series", "variants")
    ks = s.get("kernels") or {}
    if any(ks.values()):
        for v in [s["baseline"], s["patched"]] if not s["aa_mode"] else [s["baseline"]]:
            k = ks.get(v, {})
            lines.append("series:   %s: %s  [%s]" % (v, " ".join(k.get("series") or []) or "(none)",
                                                    k.get("kernel_release")))
            lines.append("  series sha256 %s" % k.get("series_sha256"))
        ser = None
    if isinstance(ser, dict):
        for k, v in ser.items():
            lines.append("series:   %s %s" % (k, json.dumps(v) if not isinstance(v, str) else v))
    elif ser is not None:
        lines.append("series:   %s" % json.dumps(ser))
    sh = g("series_sha256")
    if sh is not None:
        lines.append("series sha256: %s" % (json.dumps(sh) if not isinstance(sh, str) else sh))
    lines.append("config sha256: %s" % g("config_sha256"))
    lines.append("accel: %s   duration: %s s   repeats: %s" % (
        g("accel"), g("duration_s", "duration"), g("repeat", "repeats")))
    b = s["bootstrap"]
    lines.append("CI: %s bootstrap, %d resamples, %d%% conf, seed %d;"
                 % (b["method"], b["n_resamples"], round(b["conf"] * 100), b["seed"]))
    if b["method"] == "repeats":
        lines.append("    * = interval excludes zero")
    else:
        lines.append("    sampling error only: significance needs REPEAT >= %d"
                     % stats.MIN_REPEATS)
    return [l[:80] for l in lines]


def render_txt(s, run=None):
    L = _hdr(s)
    if s["failed_cells"]:
        L.append("")
        L.append("FAILED CELLS:")
        for f in s["failed_cells"]:
            L.append(("  %s/%s/%s: %s" % (f["variant"], f["workload"], f["repeat"],
                                         f["cause"] or f["status"]))[:80])
    for w, ws in s["workloads"].items():
        L.append("")
        L.append("== %s (cells: %d baseline, %d patched) ==" % (
            w, ws["n_cells"]["baseline"], ws["n_cells"]["patched"]))
        if s["aa_mode"] and ws["n_cells"]["patched"] == 0:
            L.append("A/A needs REPEAT >= 2 ok cells: no noise floor for this workload")
        L.append("cyclictest latency (us)")
        L.append("%-7s %9s %9s %9s  %-21s %s" % ("stat", "baseline", "patched", "delta", "CI", "sig"))
        d = ws["latency"]["diff"]["stats"]
        for n in ["count", "min", "mean"] + stats.CI_NAMES:
            b, p = ws["latency"]["baseline"].get(n), ws["latency"]["patched"].get(n)
            delta = (p - b) if (b is not None and p is not None) else None
            ci, sig = "", ""
            if n in d and d[n]["lo"] is not None:
                ci = "[%.1f, %.1f]" % (d[n]["lo"], d[n]["hi"])
                sig = "*" + ("" if not d[n]["direction"] else " " + d[n]["direction"]) if d[n]["significant"] else ""
            L.append("%-7s %9s %9s %9s  %-21s %s" % (n, _f(b, 9).strip(), _f(p, 9).strip(),
                                                    _f(delta, 9).strip(), ci, sig))
        tb, tp = ws["throughput"]["baseline"]["mean"], ws["throughput"]["patched"]["mean"]
        if tb or tp:
            pct = "%+.1f%%" % (100.0 * (tp - tb) / tb) if tb and tp is not None else "-"
            def g3(v):
                return "-" if v is None else "%.4g" % v
            L.append("throughput ops/s: %s -> %s (%s)" % (g3(tb), g3(tp), pct))
        for tr, t in ws["windows"].items():
            if not (t["baseline"]["count"] or t["patched"]["count"]
                    or t["baseline"]["tracer_max"] or t["patched"]["tracer_max"]):
                continue
            L.append("%s windows (us): n %s->%s  p99.9 %s->%s  max %s->%s" % (
                tr, t["baseline"]["count"], t["patched"]["count"],
                _f(t["baseline"]["p99.9"], 1).strip(), _f(t["patched"]["p99.9"], 1).strip(),
                _f(t["baseline"]["max"], 1).strip(), _f(t["patched"]["max"], 1).strip()))
            L.append("  tracer max: %s -> %s" % (t["baseline"]["tracer_max"], t["patched"]["tracer_max"]))
            top = sorted(t["classes"].items(),
                         key=lambda kv: -max(kv[1]["baseline"]["max"] or 0, kv[1]["patched"]["max"] or 0))[:5]
            if top:
                L.append("  %-16s %8s %8s %8s %8s" % ("class", "n base", "n patch", "max base", "max pat"))
                for cls, cv in top:
                    L.append("  %-16s %8s %8s %8s %8s" % (cls, cv["baseline"]["count"], cv["patched"]["count"],
                                                        _f(cv["baseline"]["max"]).strip(), _f(cv["patched"]["max"]).strip()))
        L.extend(ptelock.render(ws.get("ptelock"),
                                {"baseline": s["baseline"], "patched": s["patched"]}))
        if run is not None:
            bcs, pcs = sides(run, s["baseline"], s["patched"], w)
            hb = stats.merge_hists([c["lat_hist"] for c in bcs])
            hp = stats.merge_hists([c["lat_hist"] for c in pcs])
            L.append("latency histogram:")
            L.extend(text_hist(hb, hp, label_b=s["baseline"], label_p=s["patched"]).rstrip("\n").split("\n"))
    return "\n".join(l[:80] for l in L) + "\n"


def render_md(s, txt, pngs):
    out = ["# mmlat report: %s vs %s" % (s["baseline"], s["patched"]), "",
           "```", txt.rstrip(), "```", ""]
    for p in pngs:
        out.append("![%s](%s)" % (os.path.splitext(p)[0], p))
        out.append("")
    return "\n".join(out)


def compare_worse(s):
    """List of (workload, stat) where patched is significantly worse."""
    bad = []
    for w, ws in s["workloads"].items():
        for n in ("p99.9", "max"):
            d = ws["latency"]["diff"]["stats"].get(n)
            if d and d["significant"] and d["direction"] == "worse":
                bad.append((w, n, d))
    return bad


def write_report(run, out_dir, baseline=None, patched=None, plots=True, **kw):
    os.makedirs(out_dir, exist_ok=True)
    s = build(run, baseline, patched, **kw)
    txt = render_txt(s, run)
    pngs = []
    if plots:
        from . import plot
        pngs = plot.all_plots(run, s, out_dir)
    s["plots"] = pngs
    with open(os.path.join(out_dir, "report.txt"), "w") as f:
        f.write(txt)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(render_md(s, txt, pngs))
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(s, f, indent=1, sort_keys=True, default=str)
    return s, txt
