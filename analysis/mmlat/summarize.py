"""The summary model (model.Summary) of a loaded run, built once: every
figure from the boot kind its TRACE names (load.figure_boot), the per-boot comparison of
every endpoint and the verdicts of the primary ones (one Holm family over
the whole report), the sweeps and the per-patch steps."""
import json
import os
import statistics

from . import attribute, configdiff, endpoints, load, locks, model, spikes, stats, steps, sweep

TRACERS = load.TRACERS
# The bar for attribution: of the preempt-off time in windows over
# OTHER_OVER_US, under OTHER_GOAL may be class "other".
OTHER_OVER_US = 50
OTHER_GOAL = 0.10
# Call sites per tracer kept in the summary, longest window first.
SITES_KEPT = 20


def compared_variants(run, baseline=None, patched=None):
    """The two sides: as given, else `baseline` and `patched` when present,
    else the first and last variant found."""
    names = load.variants(run)
    if baseline is None:
        baseline = "baseline" if "baseline" in names else (names[0] if names else None)
    if patched is None:
        patched = "patched" if "patched" in names else (names[-1] if names else None)
    return baseline, patched


def sides(run, baseline, patched, workload, boot):
    """The ok boots of kind `boot` compared for a workload, as
    model.Sides.  A/A (same variant): odd-numbered repeats against
    even-numbered ones, so a repeat's clean and traced boots are on the
    same side."""
    first = load.ok_cells(run, baseline, workload, boot)
    if baseline == patched:
        return model.Sides([c for c in first if c["repeat"] % 2 == 1],
                           [c for c in first if c["repeat"] % 2 == 0])
    return model.Sides(first, load.ok_cells(run, patched, workload, boot))


def throughput_ratio(clean, traced):
    """traced/clean ops/s of each repeat that has both boots ok, and their
    median: what the instrumentation costs the workload."""
    clean_ops = {c["repeat"]: c["ops_per_s"] for c in clean if c["ops_per_s"]}
    per = sorted((t["repeat"], t["ops_per_s"] / clean_ops[t["repeat"]])
                 for t in traced if t["ops_per_s"] is not None and t["repeat"] in clean_ops)
    return model.TracedOverClean(median=statistics.median(r for _, r in per) if per else None,
                                 per_repeat=per)


def module_counters(cells):
    """The window module's counters of traced boots, summed and per boot;
    None when no boot ran the module."""
    have = [c for c in cells if c["counters"]]
    if not have:
        return None
    return model.ModuleCounters(
        total=sum((c["counters"] for c in have), load.TracerCounters()),
        per_boot=[model.BootCounters(c["repeat"], c["counters"]) for c in have])


def _band(band):
    return None if band is None else model.Band(**band)


def _latency(cells, seed):
    hists = [c["lat_hist"] for c in cells]
    spread = {name: None if r is None else model.Range(**r)
              for name, r in stats.spread_across_repeats(hists).items()}
    return model.Latency.of(stats.merge_hists(hists), spread=spread,
                            overflows=sum(c["cyclictest"]["overflows"] for c in cells),
                            band=_band(stats.ccdf_band(hists, seed=seed)))


def _throughput(cells):
    ops = [c["ops_per_s"] for c in cells if c["ops_per_s"] is not None]
    return model.Throughput(mean=sum(ops) / len(ops) if ops else None, per_repeat=ops)


def _sites(cells, tracer):
    """The call sites of one tracer's windows over both sides, longest
    window first."""
    merged = {}
    for side, side_cells in cells.items():
        for c in side_cells:
            for key, site in c["windows"][tracer]["sites"].items():
                entry = merged.setdefault(key, {"class": site["class"], "site": site["site"],
                                                "hist": {s: {} for s in model.SIDES},
                                                "total_us": dict.fromkeys(model.SIDES, 0.0)})
                entry["total_us"][side] += site["total_us"]
                hist = entry["hist"][side]
                for v, n in site["hist"].items():
                    hist[v] = hist.get(v, 0) + n
    rows = []
    for entry in merged.values():
        def figures(side):
            st = stats.summarize_hist(entry["hist"][side])
            return model.SiteFigures(count=st["count"], p99=st["p99"], max=st["max"],
                                     total_us=entry["total_us"][side])
        rows.append(model.WindowSite(window_class=entry["class"], site=entry["site"],
                                     figures=model.Sides(*map(figures, model.SIDES))))
    rows.sort(key=lambda r: -max(f.max or 0 for f in r.figures.values()))
    return rows[:SITES_KEPT]


def other_share(classes, side):
    """Of the window time in windows over OTHER_OVER_US (keyed windows:
    those the module attributed), the share in class other."""
    by_class = {cls: sum(v * n for v, n in both[side].hist if v > OTHER_OVER_US)
                for cls, both in classes.items()}
    total = sum(by_class.values())
    other = by_class.get(attribute.OTHER, 0)
    return model.OtherShare(total_us=total, other_us=other,
                            share=other / total if total else None)


def _tracer_windows(cells, tracer, seed):
    """One tracer's windows of both sides: overall, per class and per call
    site, and the share of long-window time in class other."""
    def overall(side_cells):
        windows = [c["windows"][tracer] for c in side_cells]
        readings = [w["tracer_max"] for w in windows if w["tracer_max"] is not None]
        return model.Windows.of(
            stats.merge_hists([w["hist"] for w in windows]),
            tracer_max=max(readings) if readings else None,
            dropped=sum(w["dropped"] for w in windows),
            lock_from_site=sum(w.get("lock_from_site", 0) for w in windows),
            band=_band(stats.ccdf_band([w["hist"] for w in windows], seed=seed)))
    found = set()
    for side_cells in cells.values():
        for c in side_cells:
            found |= set(c["windows"][tracer]["by_class"])
    classes = {cls: model.Sides(*(
        model.Distribution.of(stats.merge_hists(
            [c["windows"][tracer]["by_class"].get(cls, {}) for c in side_cells]))
        for side_cells in cells.values()))
        for cls in sorted(found, key=attribute.CLASSES.index)}
    return model.TracerWindows(
        overall=model.Sides(*map(overall, cells.values())), classes=classes,
        sites=_sites(cells, tracer), other_over_us=OTHER_OVER_US, other_goal=OTHER_GOAL,
        other_share=model.Sides(other_share(classes, "baseline"),
                                other_share(classes, "patched")))


def attribution_checks(cells):
    """The attribution check of every traced boot's longest window per
    tracer (load.max_window), both sides, by repeat."""
    rows = []
    for side, side_cells in cells.items():
        for c in side_cells:
            for tracer in TRACERS:
                m = c["windows"][tracer].get("max")
                if m:
                    rows.append(model.AttributionCheck(
                        side=side, variant=c["variant"], repeat=c["repeat"], tracer=tracer,
                        **m))
    return rows


def calibration(run, variants):
    """What the header states of the run's calibration, from
    <run>/calibration.json (mmlat calibrate), of the compared variants."""
    plan = run["record"].plan
    out = model.Calibration(request=plan.calibration.request if plan.calibration else None,
                            trace=plan.trace,
                            variants=variants)
    try:
        with open(os.path.join(run["dir"], "calibration.json"), encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        return out
    out.checked, out.ok = True, doc["ok"]
    out.fits = {v: {w: {kind: model.Fit(**fit) for kind, fit in kinds.items()}
                    for w, kinds in doc["fits"].get(v, {}).items()} for v in variants}
    out.failures = ["%s: %s" % (c["cell"], m) for c in doc["cells"] for m in c["failures"]]
    return out


def config_diff(run_dir, variants):
    d = configdiff.run_diff(run_dir, variants)
    if d is None:
        return None
    return model.ConfigDiff(variants=d["variants"],
                            options=[model.ConfigOption(**o) for o in d["options"]],
                            other_differences=d["other_differences"])


def compare_workload(workload, by_boot, figure_boot, n_resamples, conf, seed):
    """Every endpoint of a workload (endpoints.py), primary ones first,
    compared boot by boot between the sides, each from its figure's boot
    kind; verdicts come later, over the whole report (endpoints.decide)."""
    out = [endpoints.compare(workload, e, is_primary, *by_boot[figure_boot[e.figure]].values(),
                             n_resamples, conf, seed)
           for is_primary, group in ((True, endpoints.primary(workload)),
                                     (False, endpoints.exploratory(workload)))
           for e in group]
    # an endpoint the run did not measure on either side (TRACE=none has
    # no windows) is no test: not shown, not in the family
    return [c for c in out if c.base or c.patched]


def primary_comparisons(run, baseline, patched):
    """The primary endpoints of every workload, compared boot by boot with
    no interval: what REPEAT=auto's rule reads between rounds."""
    out = []
    figure_boot = load.figure_boot(run)
    for w in load.workloads(run):
        by_boot = {boot: sides(run, baseline, patched, w, boot) for boot in load.BOOTS}
        out += [c for c in (endpoints.compare(w, e, True,
                                              *by_boot[figure_boot[e.figure]].values(),
                                              n_resamples=0)
                            for e in endpoints.primary(w)) if c.base or c.patched]
    return out


def _check_comparable(run, by_boot):
    """Refuse to compare boots across accelerators or configs."""
    base = by_boot["clean"].baseline + by_boot["traced"].baseline
    patched = by_boot["clean"].patched + by_boot["traced"].patched
    for a in base:
        for b in patched:
            stats.check_compatible(a["meta"], b["meta"], load.cell_name(a), load.cell_name(b),
                                   stats.compared_keys(run["meta"]))


def _workload(run, name, by_boot, figure_boot, n_resamples, conf, seed):
    def of(figure):
        return by_boot[figure_boot[figure]]
    return model.Workload(
        name=name,
        boots={boot: model.Sides(*map(len, cells.values())) for boot, cells in by_boot.items()},
        latency=model.Sides(*(_latency(cells, seed) for cells in of("latency").values())),
        throughput=model.Sides(*map(_throughput, of("throughput").values())),
        traced_over_clean=model.Sides(*(
            throughput_ratio(by_boot["clean"][side], by_boot["traced"][side])
            for side in model.SIDES)),
        counters=model.Sides(*map(module_counters, of("counters").values())),
        windows={tracer: _tracer_windows(of("windows"), tracer, seed) for tracer in TRACERS},
        attribution=attribution_checks(of("windows")),
        locks=locks.summarize(of("locks"), seed=seed),
        calib=model.Sides(*([line for c in cells for line in c["calib"]]
                            for cells in of("calib").values())),
        comparisons=compare_workload(name, by_boot, figure_boot, n_resamples, conf, seed),
        spikes=model.Sides(*map(spike_summary, of("windows").values())))


def spike_summary(cells):
    """The spikes of a side's boots that carry the plugin's per-wakeup
    records, None without any; the timeline of the boot with the longest
    spike."""
    logged = [c for c in cells if c.get("spikes") is not None]
    if not logged:
        return None
    boots = [c["spikes"] for c in logged]
    found = [s for b in boots for s in b.spikes]
    by_class = {}
    for s in found:
        if s.explained:
            by_class[s.causes[0].window_class] = by_class.get(s.causes[0].window_class, 0) + 1
    timed = [b for b in boots if b.wakeups]

    def us_range(values):
        return model.Range(min(values) / 1000, max(values) / 1000) if values else None
    worst = max((c for c in logged if c["spikes"].spikes),
                key=lambda c: max(s.latency_us for s in c["spikes"].spikes), default=None)
    return model.Spikes(
        boots=len(logged), wakeups=sum(b.wakeups for b in boots), spikes=len(found),
        explained=sum(s.explained for s in found),
        by_class=dict(sorted(by_class.items(), key=lambda kv: -kv[1])),
        median_us=us_range([b.median_ns for b in timed]),
        threshold_us=us_range([b.threshold_ns for b in timed]),
        unexplained=sorted((s for s in found if not s.explained),
                           key=lambda s: -s.latency_us)[:spikes.UNEXPLAINED_KEPT],
        timeline=worst and worst["timeline"])


# The preemption models of Kconfig's choice, most preemptible first.
PREEMPTION_OPTIONS = ("PREEMPT_RT", "PREEMPT", "PREEMPT_VOLUNTARY", "PREEMPT_NONE")


def preemption(run_dir, variant):
    """The preemption model of a variant's config (the run's copy,
    kernels/<variant>/config), None without one."""
    try:
        config = configdiff.read_config(os.path.join(run_dir, "kernels", variant, "config"))
    except FileNotFoundError:
        return None
    return next((o for o in PREEMPTION_OPTIONS if config.get("CONFIG_" + o) == "y"), None)


def kernels(run, variants):
    """The compared variants' kernel records (build.json), where a run
    has them."""
    return {v: model.Kernel.from_build(run["kernels"][v], preemption(run["dir"], v))
            for v in variants if run.get("kernels", {}).get(v)}


def build(run, baseline=None, patched=None, n_resamples=2000, conf=0.95, seed=1):
    """The summary of a loaded run (load.load_run), baseline against
    patched (defaults: compared_variants)."""
    baseline, patched = compared_variants(run, baseline, patched)
    aa = baseline == patched
    compared = [baseline] if aa else [baseline, patched]
    figure_boot = load.figure_boot(run)
    workloads = []
    for w in load.workloads(run):
        by_boot = {boot: sides(run, baseline, patched, w, boot) for boot in load.BOOTS}
        _check_comparable(run, by_boot)
        workloads.append(_workload(run, w, by_boot, figure_boot, n_resamples, conf, seed))
    every = [c for w in workloads for c in w.comparisons]
    looks = endpoints.looks_of(run["record"], [c for c in every if c.primary])
    outcome = endpoints.decide(every, looks, figure_boot)
    return model.Summary(
        format=model.SUMMARY_FORMAT, run_dir=run["dir"], run=model.RunInfo.of(run["record"]),
        baseline=baseline, patched=patched, aa_mode=aa, figure_boot=figure_boot,
        kernels=kernels(run, compared),
        boots=[model.Boot(variant=c["variant"], workload=c["workload"], boot=c["boot"],
                          repeat=c["repeat"], status=c["status"], cause=c["cause"],
                          executor=c["meta"]["executor"], job_id=c["meta"]["job_id"],
                          device=c["meta"].get("device", ""))
               for c in run["cells"]],
        calibration=calibration(run, compared),
        config_diff=None if aa else config_diff(run["dir"], compared),
        gate=endpoints.Gate(family=len(outcome.outcomes), looks=looks, conf=conf,
                            n_resamples=n_resamples, seed=seed),
        workloads=workloads,
        sweeps=sweep.build(run, figure_boot),
        steps=steps.build(run, n_resamples, conf, seed))
