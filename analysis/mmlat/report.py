"""summary.txt, report.txt, report.md and summary.json."""
import json
import os
import re
import statistics
import textwrap
from dataclasses import asdict

from . import attribute, calibrate, configdiff, endpoints, load, locks, stats, steps, sweep

TRACERS = load.TRACERS
# Which boot kind each figure comes from: tracing changes what it
# measures (munmap does 1/8 of its work traced), so latency and throughput
# come from the clean boots, what only the instrumentation sees from the
# traced ones.
FIGURE_BOOT = {"latency": "clean", "throughput": "clean", "windows": "traced",
               "locks": "traced", "counters": "traced", "calib": "traced"}
# The bar for attribution: of the preempt-off time in windows over
# OTHER_OVER_US, under OTHER_GOAL may be class "other".
OTHER_OVER_US = 50
OTHER_GOAL = 0.10
# Call sites per tracer kept in summary.json, longest window first; the
# report shows TOP of them, and TOP classes.
SITES_KEPT = 20
TOP = 5


def _f(v, w=8):
    if v is None:
        return "-".rjust(w)
    if isinstance(v, float) and not v.is_integer():
        return ("%.1f" % v).rjust(w)
    return str(int(v)).rjust(w)


def summary_table(run):
    """One line per variant and workload: ok boots of each kind, cyclictest
    min/avg/max from the clean boots, the longest windows from the traced
    ones."""
    # the workload column as wide as the longest entry, so that a sweep's
    # entries stay apart (imap:s=1,n=16 and imap:s=1,n=64 cut to 11 were
    # both imap:s=1,n=); 79 columns up to 11
    width = max([11] + [len(w) for w in load.workloads(run)])
    fmt = "%-10s %-" + str(width) + "s %6s %6s %5s %7s %7s %10s %9s"
    lines = [fmt % ("variant", "workload", "clean", "traced", "min", "avg", "max",
                    "preemptoff", "irqsoff"),
             fmt % ("", "", "ok", "ok", "clean", "clean", "clean", "traced", "traced")]
    for v in load.variants(run):
        for w in load.workloads(run):
            ok = {}
            for boot in load.BOOTS:
                allc = [c for c in run["cells"] if c["variant"] == v
                        and c["workload"] == w and c["boot"] == boot]
                ok[boot] = "%d/%d" % (sum(c["status"] == "ok" for c in allc), len(allc))
            cs = load.ok_cells(run, v, w, FIGURE_BOOT["latency"])
            mins = [c["cyclictest"]["min"] for c in cs if c["cyclictest"]["min"] is not None]
            avgs = [c["cyclictest"]["avg"] for c in cs if c["cyclictest"]["avg"] is not None]
            maxs = [c["cyclictest"]["max"] for c in cs if c["cyclictest"]["max"] is not None]
            tm = {}
            for tr in TRACERS:
                vals = []
                for c in load.ok_cells(run, v, w, FIGURE_BOOT["windows"]):
                    wn = c["windows"][tr]
                    if wn["tracer_max"] is not None:
                        vals.append(wn["tracer_max"])
                    if wn["hist"]:
                        vals.append(max(wn["hist"]))
                tm[tr] = max(vals) if vals else None
            lines.append(fmt % (
                v[:10], w, ok["clean"], ok["traced"],
                _f(min(mins) if mins else None, 5),
                _f(sum(avgs) / len(avgs) if avgs else None, 7),
                _f(max(maxs) if maxs else None, 7),
                _f(tm["preemptoff"], 10), _f(tm["irqsoff"], 9)))
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


def sides(run, baseline, patched, w, boot):
    """The ok boots of kind `boot` compared for workload w: (baseline
    boots, patched boots).  A/A (same variant): odd-numbered repeats
    against even-numbered ones, so a repeat's clean and traced boots are
    on the same side."""
    bc = load.ok_cells(run, baseline, w, boot)
    if baseline == patched:
        return ([c for c in bc if c["repeat"] % 2 == 1],
                [c for c in bc if c["repeat"] % 2 == 0])
    return bc, load.ok_cells(run, patched, w, boot)


def side_labels(s):
    """What the two sides are called; A/A splits one variant's repeats."""
    if s["aa_mode"]:
        return {"baseline": s["baseline"] + " odd", "patched": s["patched"] + " even"}
    return {"baseline": s["baseline"], "patched": s["patched"]}


def short_labels(s):
    """The sides in narrow columns: the variant names, odd and even in A/A
    (where both sides are one variant)."""
    if s["aa_mode"]:
        return {"baseline": "odd", "patched": "even"}
    return side_labels(s)


def throughput_ratio(clean, traced):
    """traced/clean ops/s of each repeat that has both boots ok, and their
    median: what the instrumentation costs the workload."""
    clean_ops = {c["repeat"]: c["ops_per_s"] for c in clean if c["ops_per_s"]}
    per = sorted([t["repeat"], t["ops_per_s"] / clean_ops[t["repeat"]]]
                 for t in traced if t["ops_per_s"] is not None and t["repeat"] in clean_ops)
    return {"median": statistics.median(r for _, r in per) if per else None,
            "per_repeat": per}


def counters_summary(cells):
    """The window module's counters of traced boots: summed, with rates,
    and per boot; None when no boot ran the module."""
    have = [c for c in cells if c["counters"]]
    if not have:
        return None
    total = sum((c["counters"] for c in have), load.TracerCounters())
    return dict(total.as_dict(), per_boot=[dict(c["counters"].as_dict(), repeat=c["repeat"])
                                           for c in have])


def _sites(cells_by_side, tr):
    """The call sites of one tracer's windows over both sides, longest
    window first: [{class, site, <side>: {count, p99, max, total_us}}]."""
    merged = {}
    for side, cells in cells_by_side.items():
        for c in cells:
            for key, st in c["windows"][tr]["sites"].items():
                d = merged.setdefault(key, {"class": st["class"], "site": st["site"]})
                acc = d.setdefault(side, {"hist": {}, "total_us": 0.0})
                acc["total_us"] += st["total_us"]
                for v, n in st["hist"].items():
                    acc["hist"][v] = acc["hist"].get(v, 0) + n
    rows = []
    for d in merged.values():
        for side in cells_by_side:
            acc = d.get(side, {"hist": {}, "total_us": 0.0})
            st = stats.summarize_hist(acc["hist"])
            d[side] = {"count": st["count"], "p99": st["p99"], "max": st["max"],
                       "total_us": acc["total_us"]}
        rows.append(d)
    rows.sort(key=lambda d: -max(d[side]["max"] or 0 for side in cells_by_side))
    return rows[:SITES_KEPT]


def other_share(classes, side):
    """Of the window time in windows over OTHER_OVER_US (keyed windows:
    those the module attributed), the share in class other."""
    by_class = {cls: sum(v * n for v, n in sides[side]["hist"] if v > OTHER_OVER_US)
                for cls, sides in classes.items()}
    total = sum(by_class.values())
    return {"total_us": total, "other_us": by_class.get(attribute.OTHER, 0),
            "share": by_class.get(attribute.OTHER, 0) / total if total else None}


def _windows(bc, pc, seed):
    """Per tracer: both sides' window statistics and histograms, overall,
    per class and per call site, the share of long-window time in class
    other, and the band of each side's CCDF."""
    out = {}
    for tr in TRACERS:
        t = {"baseline": {}, "patched": {}, "classes": {}}
        for name, cells in (("baseline", bc), ("patched", pc)):
            t[name] = stats.summarize_with_hist(stats.merge_hists([c["windows"][tr]["hist"] for c in cells]))
            mx = [c["windows"][tr]["tracer_max"] for c in cells if c["windows"][tr]["tracer_max"] is not None]
            t[name]["tracer_max"] = max(mx) if mx else None
            t[name]["dropped"] = sum(c["windows"][tr]["dropped"] for c in cells)
            t[name]["lock_from_site"] = sum(c["windows"][tr].get("lock_from_site", 0)
                                            for c in cells)
            t[name]["ccdf_band"] = stats.ccdf_band([c["windows"][tr]["hist"] for c in cells],
                                                   seed=seed)
        classes = set()
        for c in bc + pc:
            classes |= set(c["windows"][tr]["by_class"])
        for cls in sorted(classes, key=attribute.CLASSES.index):
            t["classes"][cls] = {
                name: stats.summarize_with_hist(stats.merge_hists(
                    [c["windows"][tr]["by_class"].get(cls, {}) for c in cells]))
                for name, cells in (("baseline", bc), ("patched", pc))}
        t["sites"] = _sites({"baseline": bc, "patched": pc}, tr)
        t["other_share"] = dict({name: other_share(t["classes"], name)
                                 for name in ("baseline", "patched")},
                                over_us=OTHER_OVER_US, goal=OTHER_GOAL)
        out[tr] = t
    return out


def attribution_checks(bc, pc):
    """The attribution check of every traced boot's longest window per
    tracer (load.max_window), both sides, by repeat."""
    rows = []
    for side, cells in (("baseline", bc), ("patched", pc)):
        for c in cells:
            for tr in TRACERS:
                m = c["windows"][tr].get("max")
                if m:
                    rows.append(dict(m, side=side, variant=c["variant"], repeat=c["repeat"],
                                     tracer=tr))
    return rows


def calibration(run, variants):
    """What the header states of the run's calibration, from
    <run>/calibration.json (mmlat calibrate): {"request": meta.json's CALIB,
    "trace", "variants": the compared ones, baseline first (summary.json
    sorts keys), "checked": whether calibration.json exists, and when it
    does "ok", "fits": {variant: {workload: {kind: fit}}} of the compared
    variants, "failures": ["<cell>: <message>", ...] of every cell}."""
    out = {"request": run["meta"].get("calib"), "trace": run["meta"].get("trace"),
           "variants": variants, "checked": False}
    try:
        with open(os.path.join(run["dir"], "calibration.json"), encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return out
    out.update(checked=True, ok=doc["ok"],
               fits={v: doc["fits"].get(v, {}) for v in variants},
               failures=["%s: %s" % (c["cell"], m) for c in doc["cells"] for m in c["failures"]])
    return out


def compare_workload(w, by_boot, n_resamples, conf, seed):
    """Every endpoint of workload w (endpoints.py), primary ones first,
    compared boot by boot between the sides; verdicts come later, over the
    whole report (endpoints.decide)."""
    out = [endpoints.compare(w, e, is_primary, *by_boot[e.boot], n_resamples, conf, seed)
           for is_primary, group in ((True, endpoints.primary(w)),
                                     (False, endpoints.exploratory(w)))
           for e in group]
    # an endpoint the run did not measure on either side (TRACE=none has
    # no windows) is no test: not shown, not in the family
    return [c for c in out if c.base or c.patched]


def config_diff_lines(d):
    """The header's account of a comparison across configs (CROSS=yes)."""
    if not d:
        return []
    a, b = d["variants"]
    lines = ["CONFIGS DIFFER (CROSS=yes): %d options that matter for latency" % len(d["options"]),
             "  differ, and %d others; %s / %s (* not set by the fragments):"
             % (d["other_differences"], a, b)]
    for o in d["options"]:
        lines.append("  %s%-38s %s / %s" % (" " if o["from_fragment"] else "*", o["option"],
                                            o["values"][0], o["values"][1]))
    return lines


def build(run, baseline=None, patched=None, n_resamples=2000, conf=0.95, seed=1):
    """summary.json: every figure the report and the plots show, each from
    the boot kind FIGURE_BOOT names; the per-boot comparisons of every
    endpoint, with the verdicts of the primary ones (one Holm family over
    the whole report)."""
    vs = load.variants(run)
    if baseline is None:
        baseline = "baseline" if "baseline" in vs else (vs[0] if vs else None)
    if patched is None:
        patched = "patched" if "patched" in vs else (vs[-1] if vs else None)
    aa = baseline == patched
    s = {"run_dir": run["dir"], "baseline": baseline, "patched": patched,
         "aa_mode": aa, "meta": run["meta"], "figure_boot": FIGURE_BOOT,
         "kernels": {v: run.get("kernels", {}).get(v, {}) for v in {baseline, patched} if v},
         "boots": [], "workloads": {},
         "calibration": calibration(run, [baseline] if aa else [baseline, patched]),
         "config_diff": None if aa else configdiff.run_diff(run["dir"], [baseline, patched])}
    for c in run["cells"]:
        s["boots"].append({"variant": c["variant"], "workload": c["workload"],
                           "boot": c["boot"], "repeat": c["repeat"],
                           "status": c["status"], "cause": c["cause"]})
    every = []
    for w in load.workloads(run):
        by_boot = {boot: sides(run, baseline, patched, w, boot) for boot in load.BOOTS}
        base_all = by_boot["clean"][0] + by_boot["traced"][0]
        patch_all = by_boot["clean"][1] + by_boot["traced"][1]
        for a in base_all:
            for b in patch_all:
                stats.check_compatible(a["meta"], b["meta"], load.cell_name(a), load.cell_name(b),
                                       stats.compared_keys(run["meta"]))
        ws = {"n_cells": {boot: {"baseline": len(bc), "patched": len(pc)}
                          for boot, (bc, pc) in by_boot.items()},
              "latency": {}, "throughput": {}, "traced_over_clean": {}, "counters": {}}
        bc, pc = by_boot[FIGURE_BOOT["latency"]]
        for name, cells in (("baseline", bc), ("patched", pc)):
            hists = [c["lat_hist"] for c in cells]
            ws["latency"][name] = stats.summarize_with_hist(stats.merge_hists(hists))
            ws["latency"][name]["spread"] = stats.spread_across_repeats(hists)
            ws["latency"][name]["overflows"] = sum(c["cyclictest"]["overflows"] for c in cells)
            ws["latency"][name]["ccdf_band"] = stats.ccdf_band(hists, seed=seed)
        for i, name in enumerate(("baseline", "patched")):
            tps = [c["ops_per_s"] for c in by_boot[FIGURE_BOOT["throughput"]][i]
                   if c["ops_per_s"] is not None]
            ws["throughput"][name] = {"mean": sum(tps) / len(tps) if tps else None,
                                      "per_repeat": tps}
            ws["traced_over_clean"][name] = throughput_ratio(by_boot["clean"][i],
                                                             by_boot["traced"][i])
            ws["counters"][name] = counters_summary(by_boot[FIGURE_BOOT["counters"]][i])
        bc, pc = by_boot[FIGURE_BOOT["windows"]]
        ws["windows"] = _windows(bc, pc, seed)
        ws["attribution"] = attribution_checks(bc, pc)
        bc, pc = by_boot[FIGURE_BOOT["locks"]]
        ws["locks"] = locks.summarize({"baseline": bc, "patched": pc})
        for cls, by_side in (ws["locks"] or {"classes": {}})["classes"].items():
            for side, cells in (("baseline", bc), ("patched", pc)):
                by_side[side]["ccdf_band"] = stats.ccdf_band(
                    [stats.merge_hists([site["hist_ns"] for site in c["locks"]["sites"]
                                        if site["class"] == cls])
                     for c in cells if c["locks"]], seed=seed)
        bc, pc = by_boot[FIGURE_BOOT["calib"]]
        ws["calib"] = {"baseline": [x for c in bc for x in c["calib"]],
                       "patched": [x for c in pc for x in c["calib"]]}
        ws["comparisons"] = compare_workload(w, by_boot, n_resamples, conf, seed)
        every += ws["comparisons"]
        s["workloads"][w] = ws
    family = endpoints.decide(every)
    s["gate"] = asdict(endpoints.Gate(family=family, conf=conf, n_resamples=n_resamples,
                                      seed=seed))
    for ws in s["workloads"].values():
        ws["comparisons"] = [c.as_dict() for c in ws["comparisons"]]
    s["sweeps"] = sweep.to_summary(sweep.build(run, FIGURE_BOOT))
    s["steps"] = steps.to_summary(steps.build(run, n_resamples, conf, seed))
    return s


# The calibration lines of the header: a label column, then b/a per kind.
CALIB_LABEL_W = 25
CALIB_COL_W = 11


def calibration_lines(c):
    """The header's calibration: per compared variant (and calibrated
    workload) the per-window overhead b in us and the slope a of reading
    = a * length + b per kind; FAILED with the first failure's reason; or
    why there is none."""
    if not c["checked"]:
        if c["trace"] == "none":
            return ["calibration: not calibrated (TRACE=none: no traced boots)"]
        if not c["request"]:
            return ["calibration: not calibrated (CALIB empty)"]
        return ["calibration: not checked (no calibration.json: mmlat calibrate RUN)"]
    L = []
    if not c["ok"]:
        n = len(c["failures"])
        L.append("calibration FAILED, %d failure%s in calibration.json, the first:"
                 % (n, "" if n == 1 else "s"))
        # wrapped, not cut at 80 columns: the reason is the point
        L += textwrap.wrap(c["failures"][0], 78, initial_indent="  ",
                           subsequent_indent="    ", break_on_hyphens=False)
    L.append("calibration b us/slope a".ljust(CALIB_LABEL_W)
             + "".join(k.rjust(CALIB_COL_W) for k in calibrate.KINDS))
    for v in c["variants"]:
        by_workload = c["fits"][v]
        if not by_workload:
            L.append("  %s: no calibration reading" % v)
        for w, fits in sorted(by_workload.items()):
            # the calibration boot (cells/<variant>/calib) runs the idle job
            label = "  %s (%s)" % (v, "idle" if w == load.CALIB_CELL else w)
            vals = ["-" if fits.get(k, {}).get("a") is None else
                    "%.1f/%.3f" % (fits[k]["b_us"], fits[k]["a"]) for k in calibrate.KINDS]
            L.append(label.ljust(CALIB_LABEL_W) + "".join(
                " " + x.rjust(CALIB_COL_W - 1) for x in vals))
    return L


def _hdr(s):
    m = s["meta"]
    lines = ["mmlat report: %s vs %s%s" % (s["baseline"], s["patched"],
                                           "  (A/A: noise floor)" if s["aa_mode"] else "")]
    lines.extend(untested_lines(m.get("untested") or {}))
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
            if k.get("ref"):
                lines.append("  git: %s %s (%s)" % (k["ref"], (k.get("commit") or "")[:12],
                                                  k.get("describe")))
                lines.append("  of %s" % k.get("ksrc"))
            pkg = k.get("source_package")
            if pkg:
                lines.append("  source: %s %s (Debian %s)" % (pkg["package"], pkg["version"],
                                                           pkg.get("suite")))
            lines.append("  series sha256 %s" % k.get("series_sha256"))
        ser = None
    if isinstance(ser, dict):
        for k, v in sorted(ser.items()):
            lines.append("series:   %s %s" % (k, json.dumps(v) if not isinstance(v, str) else v))
    elif ser is not None:
        lines.append("series:   %s" % json.dumps(ser))
    sh = g("series_sha256")
    if sh is not None:
        lines.append("series sha256: %s" % (json.dumps(sh, sort_keys=True) if not isinstance(sh, str) else sh))
    configs = m.get("configs") or {}
    if len(set(configs.values())) > 1:
        # abbreviated, as the Method line does: meta.json has them whole
        lines.append("config sha256: " + ", ".join(
            "%s %s" % (v, (configs.get(v) or "-")[:12]) for v in [s["baseline"], s["patched"]]))
    else:
        lines.append("config sha256: %s" % g("config_sha256"))
    lines.extend(config_diff_lines(s.get("config_diff")))
    lines.append("accel: %s   duration: %s s   repeats: %s" % (
        accel_text(m) if m.get("accel") else None, g("duration_s", "duration"),
        g("repeat", "repeats")))
    lines.append("boots per cell: %s (TRACE=%s)" % (" + ".join(g("boots") or []), g("trace")))
    lines.extend(calibration_lines(s["calibration"]))
    return [l[:80] for l in lines]


def untested_lines(untested):
    """The warning a run of kernel versions mmlat is not tested on carries
    at its head: {variant: version} of meta.json."""
    lines = []
    for version in sorted(set(untested.values())):
        names = ", ".join(sorted(v for v, ver in untested.items() if ver == version))
        lines.append("WARNING: Linux %s (%s): not a tested version; checked before its"
                     % (version, names))
        lines.append("  boots: config fragments, guest modules build, classes.txt in System.map")
    return lines


def comparisons_of(ws):
    """A workload's comparisons (summary.json) as endpoints.Comparison."""
    return [endpoints.Comparison.from_dict(d) for d in ws["comparisons"]]


def _decimals(v, e):
    """The unit's decimals, none from 1000 on: a millisecond window's
    tenth of a microsecond is below what its bucket (1.6 %) resolves."""
    return 0 if abs(v) >= 1000 else e.decimals


def value_text(v, e, floored=False):
    """A per-side figure of endpoint e in its unit's precision; "<floor"
    when every boot of the side read below the floor (no keyed window of
    the class)."""
    if v is None:
        return "-"
    if floored:
        return "<%g" % e.floor
    return "%.*f" % (_decimals(v, e), v)


def delta_text(v, e):
    return "-" if v is None else "%+.*f" % (_decimals(v, e), v)


def interval_text(c):
    """The interval of the difference in the unit's precision, signed."""
    if c.lo is None:
        return "-"
    return "[%s, %s]" % (delta_text(c.lo, c.spec), delta_text(c.hi, c.spec))


def floored(values, e):
    return bool(values) and all(v <= e.floor for v in values)


def pct_text(c):
    """The change in %; none against a side below the floor, whose value is
    a bound, not a figure."""
    if c.delta_pct is None or floored(c.base, c.spec) or floored(c.patched, c.spec):
        return "-"
    return "%+.*f" % (0 if abs(c.delta_pct) >= 1000 else 1, c.delta_pct)


# A comparison's row, in the headline and the detailed tables: endpoint,
# baseline, patched, delta, %, verdict, and the interval last, as wide as
# it needs: 17 columns fit 80, [-1234, +123.4].
ROW = "  %-20s %8s %8s %7s %6s %-6s %s"


def headline_label(e):
    """An endpoint with its unit, as the headline names it."""
    if e.kind == "latency":
        return "cyclictest %s us" % e.of
    return detail_label(e) + ("" if e.kind == "throughput" else " us")


def comparison_cells(c):
    """A comparison as the tables print it: both sides, the change
    absolute and in %, and its interval."""
    e = c.spec
    below = floored(c.base, e), floored(c.patched, e)
    return (value_text(c.base_gmean, e, below[0]), value_text(c.patched_gmean, e, below[1]),
            "-" if all(below) else delta_text(c.delta, e), pct_text(c), interval_text(c))


def comparison_row(c, label):
    base, patched, delta, pct, interval = comparison_cells(c)
    return ROW % (label, base, patched, delta, pct, c.verdict, interval)


def headline(s):
    """What a cover letter quotes: per workload each primary endpoint,
    both sides (geometric mean of the per-boot values), the difference
    absolute and in %, the corrected verdict and the interval; then the
    method in a sentence."""
    labels = short_labels(s)
    g = s["gate"]
    L = ["%s vs %s: primary endpoints, per boot (geometric mean over boots)"
         % (labels["baseline"], labels["patched"]),
         ROW % ("", labels["baseline"][:8], labels["patched"][:8], "delta", "%",
                "verdict", "%d%% interval" % round(g["conf"] * 100))]
    for w, ws in s["workloads"].items():
        n = ws["n_cells"]
        L.append("%s (clean %d+%d, traced %d+%d boots)" % (
            w, n["clean"]["baseline"], n["clean"]["patched"],
            n["traced"]["baseline"], n["traced"]["patched"]))
        L += [comparison_row(c, headline_label(c.spec)) for c in comparisons_of(ws) if c.primary]
    return L + [""] + method_lines(s)


def _overhead(s):
    """The calibrated per-window overhead b of preempt-off windows per
    compared variant (calibration boots), or why there is none."""
    c = s["calibration"]
    if not c["checked"]:
        return "not calibrated"
    bs = []
    for v in c["variants"]:
        fits = [f["preempt"]["b_us"] for f in c["fits"][v].values()
                if f.get("preempt", {}).get("b_us") is not None]
        bs.append("-" if not fits else "%.1f" % max(fits))
    return "window overhead b %s us (%s)%s" % (
        "/".join(bs), "/".join(c["variants"]), "" if c["ok"] else " FAILED")


def accel_text(m):
    """The accelerator as the method states it: with more than one vCPU,
    their number and the QEMU that ran them (SMP under icount boots a QEMU
    of its own, bench/qemu-smp.sh), whose guest time differs from one
    vCPU's; one vCPU, as before, the mode alone."""
    accel = m.get("accel") or "-"
    smp = m.get("smp")
    if not isinstance(smp, int) or smp <= 1:
        return accel
    ver = re.match(r"QEMU emulator version (\S+)", m.get("qemu") or "")
    return "%s, %d vCPUs%s" % (accel, smp, " (QEMU %s)" % ver.group(1) if ver else "")


def method_lines(s):
    """The method in one line (kernel, config, accelerator, boots, duration,
    window overhead), then how the verdicts were reached, both wrapped at
    80 columns."""
    m, g = s["meta"], s["gate"]
    config = m.get("config_sha256") or "-"
    method = "Method: %s, config %s, %s, %s x %s s boots a side, %s." % (
        m.get("kernel_version") or m.get("kernel") or "-", config[:12],
        accel_text(m), m.get("repeat") or "-",
        m.get("duration_s") or m.get("duration") or "-", _overhead(s))
    verdict = ("Latency and work from clean boots, windows from traced ones. "
               "Verdict: %s, %s over the %d primary endpoints, %g; n/a: under 2 "
               "boots a side or no spread. Interval: %d %% %s." % (
                   g["test"], g["correction"], g["family"], g["alpha"],
                   round(g["conf"] * 100), g["interval"]))
    return (textwrap.wrap(method, 80, break_on_hyphens=False)
            + textwrap.wrap(verdict, 80, break_on_hyphens=False))


def detail_label(e):
    """An endpoint in a table whose heading names the unit."""
    if e.kind == "window":
        return "%s max" % e.covers
    if e.kind == "hold":
        return "%s hold max" % e.of
    return e.unit if e.kind == "throughput" else e.of


def per_boot_table(ws, labels, kinds, heading):
    """The comparisons of endpoints of the given kinds: primary with their
    verdict, exploratory with an interval only."""
    order = list(endpoints.ENDPOINTS)
    rows = sorted((c for c in comparisons_of(ws) if c.spec.kind in kinds),
                  key=lambda c: order.index(c.endpoint))
    if not rows:
        return []
    return [heading, ROW % ("", labels["baseline"][:8], labels["patched"][:8],
                            "delta", "%", "verdict", "interval")] + [
        comparison_row(c, detail_label(c.spec)) for c in rows]


def _rate(v):
    return "-" if v is None else "%.1e" % v


def ratio_table(s):
    """traced/clean throughput per workload and side: the instrumentation's
    cost, shown whatever else the report says."""
    labels = side_labels(s)
    rows = [(w, ws["traced_over_clean"]) for w, ws in s["workloads"].items()
            if any(r["median"] is not None for r in ws["traced_over_clean"].values())]
    if not rows:
        return []
    # the workload column as wide as the longest entry (a sweep's entries
    # differ at their end), as far as 80 columns allow
    width = min(52, max([12] + [len(w) for w, _ in rows]))
    row = "  %-" + str(width) + "s %12s %12s"
    L = ["traced/clean throughput (median over repeats of traced ops/s / clean):",
         row % ("workload", labels["baseline"][:12], labels["patched"][:12])]
    for w, r in rows:
        L.append(row % (w[:width], *(
            "-" if r[side]["median"] is None else "%.3g" % r[side]["median"]
            for side in ("baseline", "patched"))))
    return L


def counters_table(ws, labels, boot):
    """The window module's own counters, summed over the traced boots."""
    if not any(ws["counters"].values()):
        return []
    L = ["tracer counters, %s boots (rates per window; lock holds: per hold):" % boot,
         "  %-12s %8s %9s %8s %8s %8s %9s %8s" % (
             "variant", "windows", "unmatched", "nested", "overflow",
             "holds", "discarded", "lost")]
    for side in ("baseline", "patched"):
        c = ws["counters"][side]
        if not c:
            continue
        r = c["rates"]
        L.append("  %-12s %8d %9s %8s %8s %8d %9s %8s" % (
            labels[side][:12], c["windows"], _rate(r["unmatched"]), _rate(r["nested_begin"]),
            _rate(r["overflow"]), c["holds"], _rate(r["lock_discarded"]),
            _rate(r["lock_lost"])))
    return L


# A row of numbers per side: a label, then count, p99 and max of
# baseline and of patched (us).
NUM_ROW = "  %-20s" + " %8s %8s %8s" * 2
CHECK_ROW = "  %-9s %3s %-7s %8s  %-18s  %-18s %5s"


def _us(v):
    return "-" if v is None else "%.1f" % v


def _side_heads(labels):
    """The line naming the sides over NUM_ROW's columns."""
    return ["  %-20s %s %s" % ("", labels["baseline"][:26].center(26, "-"),
                               labels["patched"][:26].center(26, "-"))]


def _nums(d):
    return (locks._n(d["count"], 8), _us(d["p99"]), _us(d["max"]))


def window_tables(ws, labels, boot):
    """Per tracer: the TOP classes and the TOP call sites by longest
    window, each with count, p99 and max per side."""
    L = []
    for tr in TRACERS:
        t = ws["windows"][tr]
        if not t["classes"]:
            continue
        def longest(sides):
            return -max(sides["baseline"]["max"] or 0, sides["patched"]["max"] or 0)
        L.append("%s windows by class, top %d by max (us), %s boots:" % (tr, TOP, boot))
        L += _side_heads(labels)
        L.append(NUM_ROW % ("class", "n", "p99", "max", "n", "p99", "max"))
        for cls, sides in sorted(t["classes"].items(), key=lambda kv: longest(kv[1]))[:TOP]:
            L.append(NUM_ROW % ((cls,) + _nums(sides["baseline"]) + _nums(sides["patched"])))
        L.append("%s call sites (opener <- caller), top %d by max (us):" % (tr, TOP))
        for site in t["sites"][:TOP]:
            L.append("  " + site["site"])
            L.append(NUM_ROW % (("  " + site["class"],) + _nums(site["baseline"])
                                + _nums(site["patched"])))
    return L


def other_lines(ws, labels):
    """The share of long-window time left in class other, per tracer and
    side, against the goal (stated, met or not)."""
    L = []
    for tr in TRACERS:
        o = ws["windows"][tr]["other_share"]
        if not any(o[side]["total_us"] for side in ("baseline", "patched")):
            continue
        if not L:
            L.append('window time over %d us in class "other" (goal: under %d %% of '
                     "preemptoff):" % (o["over_us"], round(o["goal"] * 100)))
        parts = ["%s %s of %.1f ms" % (
            labels[side][:12], "-" if o[side]["share"] is None else
            "%.1f %%" % (100 * o[side]["share"]), o[side]["total_us"] / 1000.0)
            for side in ("baseline", "patched")]
        L.append("  %-10s %s" % (tr, "   ".join(parts)))
    return L


def attribution_lines(ws, labels):
    """Per traced boot and tracer, the longest window's class from the
    module's record (its stack at open and lock) and from the kernel's
    stack at its end; their call sites when the classes differ."""
    rows = ws["attribution"]
    if not rows:
        return []
    L = ["attribution check, longest window of each traced boot and kind:",
         CHECK_ROW % ("variant", "rep", "kind", "max us", "module (at open)",
                      "stack (at end)", "agree")]
    for r in rows:
        agree = {True: "yes", False: "NO", None: "-"}[r["agree"]]
        L.append(CHECK_ROW % (labels[r["side"]][:9], "r%d" % r["repeat"],
                              load.MODULE_KIND[r["tracer"]],
                              _us(r["us"]), r["open_class"] or "-", r["end_class"] or "-",
                              agree))
        if r["agree"] is False:
            L.append("    at open: %s" % r["open_site"])
            L.append("    at end:  %s" % r["end_site"])
    n_bad = sum(r["agree"] is False for r in rows)
    L.append("  %d of %d agree" % (sum(r["agree"] is True for r in rows), len(rows))
             + (", %d disagree" % n_bad if n_bad else ""))
    from_site = {side: sum(ws["windows"][tr][side]["lock_from_site"] for tr in TRACERS)
                 for side in ("baseline", "patched")}
    if any(from_site.values()):
        L.append("  windows the module left untagged, their lock read from the lock")
        L.append("  call site: %s" % ", ".join("%s %d" % (labels[side], n)
                                              for side, n in from_site.items()))
    return L


def critical_sections(ws, labels, short, fb):
    """A workload's critical sections, what the report leads with: window
    classes and call sites, the share left unattributed, the lock hold
    tables and the attribution check (traced boots); short: the side
    labels of narrow columns."""
    L = window_tables(ws, labels, fb["windows"])
    L += other_lines(ws, labels)
    L += locks.render(ws["locks"], short, fb["locks"])
    L += attribution_lines(ws, short)
    return L


# A sweep table's row: the swept key's value and the variant (16
# columns), then pairs of p99 and max (us) of 16 columns each: 4 pairs fit
# 80 columns.
SWEEP_ROW = "%-6s %-9s"
SWEEP_PAIR = " %7s %7s"


def _fit(v, w):
    """A figure in w columns: one decimal while it fits, none beyond (a
    sleeping lock's hold can last 184 ms), "-" without one."""
    if v is None:
        return "-"
    s = "%.1f" % v
    return s if len(s) <= w else "%.0f" % v


def _ops(v, w=7):
    """ops/s in w columns."""
    if v is None:
        return "-"
    s = "%.4g" % v
    return s if len(s) <= w else "%.1e" % v


def sweep_section(sw, baseline, fb):
    """report.txt lines of one sweep (sweep.Sweep): a table of windows per
    class group and one of lock holds and throughput, a row per value and
    variant, 80 columns; "vs base": ops/s against the baseline's at the
    same value."""
    def label(row, first):
        return SWEEP_ROW % (str(row.value)[:6] if first else "", row.variant[:9])

    def rows(cells):
        out = []
        for value in sw.values:
            for i, variant in enumerate(sw.variants):
                row = sw.row(variant, value)
                out.append(label(row, i == 0) + cells(row))
        return out

    def pairs_head(n):
        return SWEEP_ROW % ("", "") + SWEEP_PAIR % ("p99", "max") * n

    L = ["== Sweep: %s ==" % sw.title]
    L.append("%s windows by class, p99 and max (us), %s boots:" % (sweep.TRACER, fb["windows"]))
    L.append(SWEEP_ROW % (sw.key[:6], "variant") + "".join(
        " %15s" % g[:15] for g, _, _ in sweep.GROUPS))
    L.append(pairs_head(len(sweep.GROUPS)))
    L += rows(lambda r: "".join(SWEEP_PAIR % (_fit(r.windows[g].p99, 7), _fit(r.windows[g].max, 7))
                                for g, _, _ in sweep.GROUPS))
    L.append("lock hold time, p99 and max (us), %s boots; ops/s, %s boots:"
             % (fb["locks"], fb["throughput"]))
    L.append(SWEEP_ROW % (sw.key[:6], "variant") + "".join(
        " %15s" % lock for lock in sweep.LOCKS) + " %7s %7s" % ("ops/s", "vs base"))
    L.append(pairs_head(len(sweep.LOCKS)))

    def holds(r):
        base = sw.row(baseline, r.value).ops_per_s if baseline in sw.variants else None
        vs = ("" if r.variant == baseline else "-" if not base or r.ops_per_s is None
              else "%+.0f%%" % (100.0 * (r.ops_per_s - base) / base))
        return "".join(SWEEP_PAIR % (_fit(r.holds[lock].p99, 7), _fit(r.holds[lock].max, 7))
                       for lock in sweep.LOCKS) + " %7s %7s" % (_ops(r.ops_per_s), vs)
    L += rows(holds)
    L.append('  pte-lock: every pte-lock-* class; "-": no window or hold, or no ok boot')
    return L


# A row of the per-patch table: an endpoint, the previous step's and this
# step's figure, the change absolute and in %, and its interval (17
# columns fit 80); its heading names the workload in the first column.
STEP_ROW = "    %-20s %8s %8s %7s %6s %s"
STEP_HEAD = "%-24s %8s %8s %7s %6s %s"


def step_row(c):
    return STEP_ROW % ((headline_label(c.spec),) + comparison_cells(c))


def steps_section(s):
    """report.txt lines of the per-patch table (STEPS=each, steps.Step):
    which variant added which patch, then per workload a block per patch
    in order, each primary endpoint of the step before it (the baseline
    before the first) against the step's, as the headline compares them
    but without a verdict: the gate is the headline's."""
    all_steps = steps.from_summary(s)
    if not all_steps:
        return []
    conf = round(s["gate"]["conf"] * 100)
    L = ["== Each patch against the previous step (STEPS=each) =="]
    L += ["  %d %s: %s/%s" % (st.index, st.variant, st.series, st.patch) for st in all_steps]
    L += textwrap.wrap(
        "Per boot, geometric mean over boots: before, the step before the patch (%s "
        "before patch 1); after, with it. Interval: %d %% %s of the change. No "
        "verdict: the gate is the headline's." % (
            all_steps[0].previous, conf, s["gate"]["interval"]), 80, break_on_hyphens=False)
    for w in s["workloads"]:
        L.append("")
        L.append(STEP_HEAD % (w[:24], "before", "after", "delta", "%", "%d%% interval" % conf))
        for st in all_steps:
            n = st.boots[w]
            L.append("  %d %s (clean %d+%d, traced %d+%d boots)" % (
                st.index, st.title, *n["clean"], *n["traced"]))
            L += [step_row(c) for c in st.comparisons[w]]
    return L


def render_txt(s):
    """report.txt, 80 columns, from summary.json alone: the header, then
    per workload its critical sections (traced boots), then per workload
    cyclictest, throughput and the instrumentation's own figures."""
    labels = side_labels(s)
    short = short_labels(s)
    fb = s["figure_boot"]
    L = headline(s) + [""] + _hdr(s)
    if failed_boots(s):
        L.append("")
        L.append("FAILED BOOTS:")
        for f in failed_boots(s):
            L.append(("  %s/%s/%s/r%d: %s" % (f["variant"], f["workload"], f["boot"],
                                             f["repeat"], f["cause"] or f["status"]))[:80])
    per_patch = steps_section(s)
    if per_patch:
        L.append("")
        L.extend(per_patch)
    for w, ws in s["workloads"].items():
        crit = critical_sections(ws, labels, short_labels(s), fb)
        if not crit:
            continue
        n = ws["n_cells"]["traced"]
        L.append("")
        L.append("== %s: critical sections (%s boots: %d %s, %d %s) ==" % (
            w, fb["windows"], n["baseline"], labels["baseline"], n["patched"],
            labels["patched"]))
        L.extend(crit)
    for sw in sweep.from_summary(s):
        L.append("")
        L.extend(sweep_section(sw, s["baseline"], fb))
    ratios = ratio_table(s)
    if ratios:
        L.append("")
        L.extend(ratios)
    for w, ws in s["workloads"].items():
        n = ws["n_cells"]
        L.append("")
        L.append("== %s (clean boots: %d %s, %d %s; traced: %d, %d) ==" % (
            w, n["clean"]["baseline"], labels["baseline"], n["clean"]["patched"],
            labels["patched"], n["traced"]["baseline"], n["traced"]["patched"]))
        if s["aa_mode"] and n["clean"]["patched"] == 0:
            L.append("A/A needs REPEAT >= 2 ok boots: no noise floor for this workload")
        L.extend(per_boot_table(
            ws, short, ("latency", "throughput"),
            "cyclictest latency (us), throughput (ops/s), %s boots, per boot:" % fb["latency"]))
        L.append("  pooled: " + "  ".join("%s %s->%s" % (
            name, *(_f(ws["latency"][side][name], 1).strip() for side in ("baseline", "patched")))
            for name in ("count", "min", "mean", "max")))
        L.extend(per_boot_table(
            ws, short, ("window", "hold"),
            "series windows (%s) and lock holds (us), %s boots, per boot:"
            % (endpoints.TRACER, fb["windows"])))
        for tr in TRACERS:
            t = ws["windows"][tr]
            if not (t["baseline"]["count"] or t["patched"]["count"]
                    or t["baseline"]["tracer_max"] or t["patched"]["tracer_max"]):
                continue
            L.append("%s windows (us), %s boots:" % (tr, fb["windows"]))
            L.append("  n %s->%s  p99.9 %s->%s  max %s->%s" % (
                t["baseline"]["count"], t["patched"]["count"],
                _f(t["baseline"]["p99.9"], 1).strip(), _f(t["patched"]["p99.9"], 1).strip(),
                _f(t["baseline"]["max"], 1).strip(), _f(t["patched"]["max"], 1).strip()))
            if t["baseline"]["tracer_max"] is not None or t["patched"]["tracer_max"] is not None:
                L.append("  tracer max: %s -> %s" % (_us(t["baseline"]["tracer_max"]),
                                                     _us(t["patched"]["tracer_max"])))
        L.extend(counters_table(ws, labels, fb["counters"]))
        hb = stats.pairs_hist(ws["latency"]["baseline"]["hist"])
        hp = stats.pairs_hist(ws["latency"]["patched"]["hist"])
        L.append("latency histogram, %s boots:" % fb["latency"])
        L.extend(text_hist(hb, hp, label_b=labels["baseline"], label_p=labels["patched"]).rstrip("\n").split("\n"))
    return "\n".join(l[:80] for l in L) + "\n"


def render_md(s, txt, pngs):
    out = ["# mmlat report: %s vs %s" % (s["baseline"], s["patched"]), "",
           "```", txt.rstrip(), "```", ""]
    for p in pngs:
        out.append("![%s](%s)" % (os.path.splitext(p)[0], p))
        out.append("")
    return "\n".join(out)


def compare_worse(s):
    """The primary endpoints whose corrected verdict is worse: what `make
    compare` fails on."""
    return [c for ws in s["workloads"].values() for c in comparisons_of(ws)
            if c.primary and c.verdict == endpoints.WORSE]


def failed_boots(s):
    return [b for b in s["boots"] if b["status"] != "ok"]


def write_report(run, out_dir, baseline=None, patched=None, plots=True, **kw):
    os.makedirs(out_dir, exist_ok=True)
    s = build(run, baseline, patched, **kw)
    txt = render_txt(s)
    pngs = []
    if plots:
        from . import plot
        pngs = plot.all_plots(s, out_dir)
    s["plots"] = pngs
    with open(os.path.join(out_dir, "report.txt"), "w") as f:
        f.write(txt)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(render_md(s, txt, pngs))
    # html uses this module's figures: imported here, where both are loaded
    from . import html
    with open(os.path.join(out_dir, "report.html"), "w", encoding="utf-8") as f:
        f.write(html.render_html(s, txt, out_dir))
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(s, f, indent=1, sort_keys=True, default=str)
    return s, txt
