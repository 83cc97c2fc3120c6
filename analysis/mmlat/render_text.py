"""report.txt, 80 columns, from the summary model alone: the headline of
primary endpoints with their verdicts and the method, the header, failed
boots, the per-patch table, per workload its critical sections (traced
boots), the sweeps, then per workload cyclictest, throughput and the
instrumentation's own figures."""
import math
import textwrap

from . import calibrate, endpoints, load, locks, model, spikes, sweep
from . import formatting as fmt

WIDTH = 80
TRACERS = load.TRACERS
# The report shows the TOP classes and call sites by longest window.
TOP = 5


def wrap(text, width=WIDTH):
    """A sentence wrapped at width columns, never at a hyphen."""
    return textwrap.wrap(text, width, break_on_hyphens=False) if text else []


def text_hist(base_hist, patched_hist, width=60, rows=12, base_label="b", patched_label="p"):
    """Plain-character log-count histogram, baseline '#' vs patched 'o'."""
    keys = sorted(set(base_hist) | set(patched_hist))
    if not keys:
        return "(no samples)\n"
    lo, hi = keys[0], keys[-1]
    n_bins = min(rows, hi - lo + 1)
    step = max(1, int(math.ceil((hi - lo + 1) / float(n_bins))))
    out = []
    most = 1
    bins = []
    for i in range(n_bins):
        a, b = lo + i * step, lo + (i + 1) * step
        base_n = sum(n for k, n in base_hist.items() if a <= k < b)
        patched_n = sum(n for k, n in patched_hist.items() if a <= k < b)
        bins.append((a, b, base_n, patched_n))
        most = max(most, base_n, patched_n)
    half = (width - 24) // 2
    log_most = math.log10(most + 1)
    out.append("  latency us  %-*s  %s" % (
        half + 9, base_label + " (#, log)", patched_label + " (o, log)"))
    for a, b, base_n, patched_n in bins:
        base_bar = int(round(half * math.log10(base_n + 1) / log_most))
        patched_bar = int(round(half * math.log10(patched_n + 1) / log_most))
        out.append("%5d-%-6d %7d %-*s|%7d %s" % (a, b - 1, base_n, half, "#" * base_bar,
                                                 patched_n, "o" * patched_bar))
    return "\n".join(out) + "\n"


# --------------------------------------------------------------- headline

# A row of the headline: endpoint, baseline, patched, change in %, margin,
# verdict, and the decision interval of the change in % last: 15 columns
# fit 80, [-92.7, -88.1].  The units are in the heading.
HEADLINE_ROW = "  %-17s %8s %8s %6s %6s %-12s %s"


def headline_row(c):
    return HEADLINE_ROW % ((fmt.headline_name(c.spec),) + fmt.sides_text(c)
                           + (fmt.pct_text(c), fmt.margin_text(c.margin), c.verdict,
                              fmt.decision_interval_text(c)))


def method_lines(summary):
    """The method, then how the verdicts were reached, wrapped."""
    return wrap(fmt.method_text(summary)) + wrap(fmt.verdict_rule_text(summary))


def headline(summary):
    """What a cover letter quotes: per workload each primary endpoint,
    both sides (geometric mean of the per-boot values), the change in %,
    its margin, the verdict and its decision interval; then what would
    settle the inconclusive ones, the demoted endpoints and the method."""
    labels = summary.short_labels()
    lines = wrap("%s vs %s: primary endpoints per boot, geometric means (us, pages/s)"
                 % (labels.baseline, labels.patched))
    lines.append(HEADLINE_ROW % ("", labels.baseline[:8], labels.patched[:8], "change",
                                 "margin", "verdict", "interval %"))
    for w in summary.workloads:
        lines.append("%s (%s)" % (w.name, fmt.boots_text(w)))
        lines += [headline_row(c) for c in w.primary()]
    notes = wrap(fmt.settle_sentence(summary)) + wrap(fmt.demoted_sentence(summary))
    return lines + ([""] + notes if notes else []) + [""] + method_lines(summary)


# ----------------------------------------------------------------- header

# The calibration lines of the header: a label column, then b/a per kind.
CALIB_LABEL_W = 25
CALIB_COL_W = 11


def calibration_lines(c):
    """The header's calibration: per compared variant (and calibrated
    workload) the per-window overhead b in us and the slope a of reading
    = a * length + b per kind; FAILED with the first failure's reason; or
    why there is none."""
    if not c.checked:
        if c.trace == "none":
            return ["calibration: not calibrated (TRACE=none: no traced boots)"]
        if not c.request:
            return ["calibration: not calibrated (CALIB empty)"]
        return ["calibration: not checked (no calibration.json: mmlat calibrate RUN)"]
    lines = []
    if not c.ok:
        n = len(c.failures)
        lines.append("calibration FAILED, %d failure%s in calibration.json, the first:"
                     % (n, "" if n == 1 else "s"))
        # wrapped, not cut at 80 columns: the reason is the point
        lines += textwrap.wrap(c.failures[0], 78, initial_indent="  ",
                               subsequent_indent="    ", break_on_hyphens=False)
    lines.append("calibration b us/slope a".ljust(CALIB_LABEL_W)
                 + "".join(k.rjust(CALIB_COL_W) for k in calibrate.KINDS))
    for v in c.variants:
        by_workload = c.fits[v]
        if not by_workload:
            lines.append("  %s: no calibration reading" % v)
        for w, fits in sorted(by_workload.items()):
            # the calibration boot (cells/<variant>/calib) runs the idle job
            label = "  %s (%s)" % (v, "idle" if w == load.CALIB_CELL else w)
            values = ["-" if k not in fits or fits[k].a is None else
                      "%.1f/%.3f" % (fits[k].b_us, fits[k].a) for k in calibrate.KINDS]
            lines.append(label.ljust(CALIB_LABEL_W) + "".join(
                " " + x.rjust(CALIB_COL_W - 1) for x in values))
    return lines


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


def config_diff_lines(d):
    """The header's account of a comparison across configs (CROSS=yes)."""
    if not d:
        return []
    a, b = d.variants
    lines = ["CONFIGS DIFFER (CROSS=yes): %d options that matter for latency" % len(d.options),
             "  differ, and %d others; %s / %s (* not set by the fragments):"
             % (d.other_differences, a, b)]
    for o in d.options:
        lines.append("  %s%-38s %s / %s" % (" " if o.from_fragment else "*", o.option,
                                            o.values[0], o.values[1]))
    return lines


def kernel_lines(summary):
    """Per compared variant its series, release, source and hashes (its
    build.json)."""
    if not summary.kernels:
        return []
    lines = []
    for v in [summary.baseline] if summary.aa_mode else [summary.baseline, summary.patched]:
        k = summary.kernels.get(v)
        if k is None:
            lines.append("series:   %s: no build.json in the run" % v)
            continue
        lines.append("series:   %s: %s  [%s]" % (v, " ".join(k.series) or "(none)",
                                                 k.kernel_release))
        if k.ref:
            lines.append("  git: %s %s (%s)" % (k.ref, (k.commit or "")[:12], k.describe))
            lines.append("  of %s" % k.ksrc)
        if k.source_package:
            pkg = k.source_package
            lines.append("  source: %s %s (Debian %s)" % (pkg.package, pkg.version, pkg.suite))
        lines.append("  series sha256 %s" % k.series_sha256)
    return lines


def header(summary):
    run = summary.run
    lines = ["mmlat report: %s vs %s%s" % (summary.baseline, summary.patched,
                                           "  (A/A: noise floor)" if summary.aa_mode else "")]
    lines += untested_lines(run.untested)
    lines.append("kernel:   %s" % run.kernel_version)
    lines += kernel_lines(summary)
    if len(set(run.configs.values())) > 1:
        # abbreviated, as the Method line does: meta.json has them whole
        lines.append("config sha256: " + ", ".join(
            "%s %s" % (v, (run.configs.get(v) or "-")[:12])
            for v in [summary.baseline, summary.patched]))
    else:
        lines.append("config sha256: %s" % run.config_sha256)
    lines += config_diff_lines(summary.config_diff)
    lines.append("accel: %s   duration: %s s   repeats: %s" % (
        fmt.accel_text(run) if run.accel else None, run.duration_s, run.repeat))
    # TRACE=auto's choice follows the accelerator and vCPUs: say it was one
    lines.append("boots per cell: %s (TRACE=%s%s)" % (
        " + ".join(run.boots), run.trace,
        ", TRACE=auto's choice" if run.knobs.get("TRACE") == "auto" else ""))
    lines += wrap("figures: " + fmt.sources_text(summary))
    lines += executor_lines(summary)
    lines += calibration_lines(summary.calibration)
    return [line[:WIDTH] for line in lines]


def executor_lines(summary):
    """What ran the compared boots (cell.json): the executor, the devices
    of each side and, for jobs of a LAVA executor, their ids' range; a
    warning when the sides ran on different devices."""
    sides = (summary.baseline, summary.patched)
    boots = [b for b in summary.boots if b.variant in sides]
    if not boots:
        return []
    devices = {v: sorted({b.device for b in boots if b.variant == v and b.device}) for v in sides}
    line = "executor: %s" % ", ".join(sorted({b.executor for b in boots}))
    if any(devices.values()):
        same = devices[sides[0]] == devices[sides[1]]
        line += "   devices: %s" % (", ".join(devices[sides[0]]) if same else "; ".join(
            "%s %s" % (v, ", ".join(devices[v]) or "-") for v in sides))
    lines = [line]
    jobs = sorted((b.job_id for b in boots if b.executor != "local" and b.job_id),
                  key=lambda j: (len(j), j))
    if jobs:
        lines.append("jobs: %d, %s .. %s" % (len(jobs), jobs[0], jobs[-1]))
    if any(devices.values()) and devices[sides[0]] != devices[sides[1]]:
        lines.append("WARNING: %s and %s ran on different devices" % sides)
    return lines


def failed_boot_lines(summary):
    failed = summary.failed_boots()
    if not failed:
        return []
    return ["", "FAILED BOOTS:"] + [
        ("  %s/%s/%s/r%d: %s" % (b.variant, b.workload, b.boot, b.repeat,
                                 b.cause or b.status))[:WIDTH] for b in failed]


# -------------------------------------------------------- per-patch table

# A row of the per-patch table: an endpoint, the previous step's and this
# step's figure, the change absolute and in %, and its interval (17
# columns fit 80); its heading names the workload in the first column.
STEP_ROW = "    %-20s %8s %8s %7s %6s %s"
STEP_HEAD = "%-24s %8s %8s %7s %6s %s"


def step_row(c):
    return STEP_ROW % ((fmt.headline_label(c.spec),) + fmt.comparison_cells(c))


def steps_section(summary):
    """The per-patch table (STEPS=each, steps.Step): which variant added
    which patch, then per workload a block per patch in order, each
    primary endpoint of the step before it (the baseline before the first)
    against the step's, as the headline compares them but without a
    verdict: the gate is the headline's."""
    all_steps = summary.steps
    if not all_steps:
        return []
    conf = round(summary.gate.conf * 100)
    lines = ["== Each patch against the previous step (STEPS=each) =="]
    lines += ["  %d %s: %s/%s" % (st.index, st.variant, st.series, st.patch)
              for st in all_steps]
    lines += wrap(
        "Per boot, geometric mean over boots: before, the step before the patch (%s "
        "before patch 1); after, with it. Interval: %d %% %s of the change. No "
        "verdict: the gate is the headline's." % (
            all_steps[0].previous, conf, summary.gate.interval))
    for w in summary.workloads:
        lines.append("")
        lines.append(STEP_HEAD % (w.name[:24], "before", "after", "delta", "%",
                                  "%d%% interval" % conf))
        for st in all_steps:
            n = st.boots[w.name]
            lines.append("  %d %s (clean %d+%d, traced %d+%d boots)" % (
                st.index, st.title, *n["clean"], *n["traced"]))
            lines += [step_row(c) for c in st.comparisons[w.name]]
    return lines


# ------------------------------------------------------ critical sections

# A row of numbers per side: a label, then count, p99 and max of
# baseline and of patched (us).
NUM_ROW = "  %-20s" + " %8s %8s %8s" * 2
CHECK_ROW = "  %-9s %3s %-7s %8s  %-18s  %-18s %5s"


def _side_heads(labels):
    """The line naming the sides over NUM_ROW's columns."""
    return ["  %-20s %s %s" % ("", labels.baseline[:26].center(26, "-"),
                               labels.patched[:26].center(26, "-"))]


def _nums(d):
    return (fmt.count(d.count, 8), fmt.us(d.p99), fmt.us(d.max))


def window_tables(workload, labels, boot):
    """Per tracer: the TOP classes and the TOP call sites by longest
    window, each with count, p99 and max per side."""
    lines = []
    for tracer in TRACERS:
        windows = workload.windows[tracer]
        if not windows.classes:
            continue
        lines.append("%s windows by class, top %d by max (us), %s boots:" % (tracer, TOP, boot))
        lines += _side_heads(labels)
        lines.append(NUM_ROW % ("class", "n", "p99", "max", "n", "p99", "max"))
        for cls, both in windows.longest_classes()[:TOP]:
            lines.append(NUM_ROW % ((cls,) + _nums(both.baseline) + _nums(both.patched)))
        lines.append("%s call sites (opener <- caller), top %d by max (us):" % (tracer, TOP))
        for site in windows.sites[:TOP]:
            lines.append("  " + site.site)
            lines.append(NUM_ROW % (("  " + site.window_class,) + _nums(site.figures.baseline)
                                    + _nums(site.figures.patched)))
    return lines


def other_lines(workload, labels):
    """The share of long-window time left in class other, per tracer and
    side, against the goal (stated, met or not)."""
    lines = []
    for tracer in TRACERS:
        windows = workload.windows[tracer]
        if not any(o.total_us for o in windows.other_share.values()):
            continue
        if not lines:
            lines.append('window time over %d us in class "other" (goal: under %d %% of '
                         "preemptoff):" % (windows.other_over_us, round(windows.other_goal * 100)))
        parts = ["%s %s of %.1f ms" % (
            labels[side][:12], "-" if o.share is None else "%.1f %%" % (100 * o.share),
            o.total_us / 1000.0) for side, o in windows.other_share.items()]
        lines.append("  %-10s %s" % (tracer, "   ".join(parts)))
    return lines


# Modes in the hold table's mode column.
MODE_SHORT = {"spin": "spin", "mutex": "mutex", "rwsem-write": "rwsem-w",
              "rwsem-read": "rwsem-r"}
HOLD_ROW = "  %-8s %-7s %7s %6s %6s %7s %-11s %5s %5s %7s"
HOLD_LEGEND = ["  preemptible: holder may be preempted (spin no; mutex, rwsem yes);",
               "  rwsem-w/-r: held for write/read; slept: holds whose holder was",
               "  switched out; waits: lock:contention_begin/end, max wait in us"]
TOP_FUNCS = 3


def hold_tables(holds, labels, boot):
    """A hold table per lock (count, p50, p99, max per side and mode,
    whether the holder is preemptible, holds that slept, waits and the
    longest wait) and its longest holds by function, max and mode per
    side; labels: the sides, at most 8 columns shown."""
    if not holds:
        return []
    present = [side for side, n in holds.boots.items() if n]
    lines = []
    for lock in locks.LOCKS:
        lines.append("%s lock hold time (us), %s boots:" % (lock, boot))
        lines.append(HOLD_ROW % ("variant", "mode", "count", "p50", "p99", "max",
                                 "preemptible", "slept", "waits", "maxwait"))
        for side in present:
            rows = holds.by_mode[lock][side]
            if not rows:
                lines.append("  %-8s no holds recorded" % labels[side][:8])
            for r in rows:
                lines.append(HOLD_ROW % (
                    labels[side][:8], MODE_SHORT[r.mode], fmt.count(r.count, 7),
                    fmt.ns_as_us(r.p50, 6), fmt.ns_as_us(r.p99, 6), fmt.ns_as_us(r.max, 7),
                    "yes" if r.preemptible else "no", fmt.count(r.slept, 5),
                    fmt.count(r.waits, 5), fmt.ns_as_us(r.wait_max_ns if r.waits else None, 7)))
        top = holds.sites[lock][:TOP_FUNCS]
        if top:
            lines.append("  longest holds by function, max us (%s):" % " / ".join(
                labels[side] for side in present))
            for r in top:
                lines.append("    %-34s %s" % (r.func[:34], " / ".join(
                    " ".join([fmt.ns_as_us(r.holds[side].max, 9).strip()] + ["+".join(
                        MODE_SHORT[m] for m in r.holds[side].modes)] * bool(r.holds[side].modes))
                    for side in present)))
    return lines + HOLD_LEGEND


def attribution_lines(workload, labels):
    """Per traced boot and tracer, the longest window's class from the
    module's record (its stack at open and lock) and from the kernel's
    stack at its end; their call sites when the classes differ."""
    rows = workload.attribution
    if not rows:
        return []
    lines = ["attribution check, longest window of each traced boot and kind:",
             CHECK_ROW % ("variant", "rep", "kind", "max us", "module (at open)",
                          "stack (at end)", "agree")]
    for r in rows:
        agree = {True: "yes", False: "NO", None: "-"}[r.agree]
        lines.append(CHECK_ROW % (labels[r.side][:9], "r%d" % r.repeat,
                                  fmt.tracer_kind(r.tracer), fmt.us(r.us),
                                  r.open_class or "-", r.end_class or "-", agree))
        if r.agree is False:
            lines.append("    at open: %s" % r.open_site)
            lines.append("    at end:  %s" % r.end_site)
    n_bad = sum(r.agree is False for r in rows)
    lines.append("  %d of %d agree" % (sum(r.agree is True for r in rows), len(rows))
                 + (", %d disagree" % n_bad if n_bad else ""))
    from_site = [(side, sum(workload.windows[t].overall[side].lock_from_site for t in TRACERS))
                 for side in ("baseline", "patched")]
    if any(n for _, n in from_site):
        lines.append("  windows the module left untagged, their lock read from the lock")
        lines.append("  call site: %s" % ", ".join(
            "%s %d" % (labels[side], n) for side, n in from_site))
    return lines


def spike_lines(workload, labels):
    """Per side: the wakeups above each boot's p99.9, how many a window
    open at the timer's expiry explains, by class, and the ones none
    does (spikes.py; the QEMU plugin's boots only)."""
    sides = [(side, s) for side, s in workload.spikes.items() if s is not None]
    if not sides:
        return []
    lines = ["latency spikes explained (wakeups above their boot's p99.9; a window",
             "open at the timer's expiry covers >= %d %% of the latency above the"
             % round(100 * spikes.COVER), "boot's median):"]
    for side, s in sides:
        lines.append("  %-9s %d of %d%s, %d boots, p50 %s, p99.9 %s us" % (
            labels[side][:9], s.explained, s.spikes,
            " (%d %%)" % math.floor(100 * s.share) if s.share is not None else "", s.boots,
            _range(s.median_us, 1), _range(s.threshold_us, 0)))
        if s.by_class:
            lines += ["    " + line for line in wrap(", ".join(
                "%s %d" % kv for kv in s.by_class.items()), WIDTH - 4)]
        if s.unexplained:
            lines.append("    unexplained (us: latency, above the median, covered; what ran):")
        for sp in s.unexplained:
            lines.append("      r%d: %s, %s, %s; %s" % (
                sp.repeat, fmt.us(sp.latency_us).strip(), fmt.us(sp.excess_us).strip(),
                fmt.us(sp.covered_us).strip(), sp.running))
            if sp.after:
                lines.append("        then %s-off %s for %s: %s" % (
                    sp.after.kind, sp.after.window_class,
                    fmt.us(sp.after.covered_us).strip(), sp.after.site))
    return lines


def _range(r, digits):
    if r is None:
        return "-"
    lo, hi = "%.*f" % (digits, r.min), "%.*f" % (digits, r.max)
    return lo if lo == hi else "%s-%s" % (lo, hi)


def critical_sections(workload, labels, short, figure_boot):
    """A workload's critical sections, what the report leads with: window
    classes and call sites, the share left unattributed, the lock hold
    tables and the attribution check (traced boots); short: the side
    labels of narrow columns."""
    return (window_tables(workload, labels, figure_boot["windows"])
            + other_lines(workload, short)
            + hold_tables(workload.locks, short, figure_boot["locks"])
            + attribution_lines(workload, short)
            + spike_lines(workload, short))


# ------------------------------------------------------------------ sweeps

# A sweep table's row: the swept key's value and the variant (16
# columns), then pairs of p99 and max (us) of 16 columns each: 4 pairs fit
# 80 columns.
SWEEP_ROW = "%-6s %-9s"
SWEEP_PAIR = " %7s %7s"


def sweep_section(sw, baseline, figure_boot):
    """One sweep (sweep.Sweep): a table of windows per class group and one
    of lock holds and throughput, a row per value and variant, 80 columns;
    "vs base": ops/s against the baseline's at the same value."""
    tails = model.distinct_tails(sw.variants)

    def label(row, first):
        return SWEEP_ROW % (str(row.value)[:6] if first else "", tails[row.variant][:9])

    def rows(cells):
        out = []
        for value in sw.values:
            for i, variant in enumerate(sw.variants):
                row = sw.row(variant, value)
                out.append(label(row, i == 0) + cells(row))
        return out

    def pairs_head(n):
        return SWEEP_ROW % ("", "") + SWEEP_PAIR % ("p99", "max") * n

    lines = ["== Sweep: %s ==" % sw.title]
    lines.append("%s windows by class, p99 and max (us), %s boots:"
                 % (sweep.TRACER, figure_boot["windows"]))
    lines.append(SWEEP_ROW % (sw.key[:6], "variant") + "".join(
        " %15s" % g[:15] for g, _, _ in sweep.GROUPS))
    lines.append(pairs_head(len(sweep.GROUPS)))
    lines += rows(lambda r: "".join(
        SWEEP_PAIR % (fmt.fitted(r.windows[g].p99, 7), fmt.fitted(r.windows[g].max, 7))
        for g, _, _ in sweep.GROUPS))
    lines.append("lock hold time, p99 and max (us), %s boots; ops/s, %s boots:"
                 % (figure_boot["locks"], figure_boot["throughput"]))
    lines.append(SWEEP_ROW % (sw.key[:6], "variant") + "".join(
        " %15s" % lock for lock in sweep.LOCKS) + " %7s %7s" % ("ops/s", "vs base"))
    lines.append(pairs_head(len(sweep.LOCKS)))

    def holds(r):
        base = sw.row(baseline, r.value).ops_per_s if baseline in sw.variants else None
        vs = ("" if r.variant == baseline else "-" if not base or r.ops_per_s is None
              else "%+.0f%%" % (100.0 * (r.ops_per_s - base) / base))
        return "".join(SWEEP_PAIR % (fmt.fitted(r.holds[lock].p99, 7),
                                     fmt.fitted(r.holds[lock].max, 7))
                       for lock in sweep.LOCKS) + " %7s %7s" % (fmt.ops(r.ops_per_s), vs)
    lines += rows(holds)
    lines.append('  pte-lock: every pte-lock-* class; "-": no window or hold, or no ok boot')
    return lines


# ------------------------------------------------- per workload, per boot

# A comparison's row in the detailed tables: endpoint, baseline, patched,
# delta, %, and the interval last, as wide as it needs.
ROW = "  %-20s %8s %8s %7s %6s %s"


def comparison_row(c, label):
    return ROW % ((label,) + fmt.comparison_cells(c))


def per_boot_table(workload, labels, kinds, heading):
    """The comparisons of endpoints of the given kinds, each with its
    interval; a primary one (*) has its verdict in the headline."""
    order = list(endpoints.ENDPOINTS)
    rows = sorted((c for c in workload.comparisons if c.spec.kind in kinds),
                  key=lambda c: order.index(c.endpoint))
    if not rows:
        return []
    return [heading, ROW % ("(* primary)", labels.baseline[:8], labels.patched[:8],
                            "delta", "%", "interval")] + [
        comparison_row(c, ("*" if c.primary else "") + fmt.detail_label(c.spec)) for c in rows]


def ratio_table(summary):
    """traced/clean throughput per workload and side: the instrumentation's
    cost, shown whatever else the report says."""
    labels = summary.short_labels()
    rows = [(w.name, w.traced_over_clean) for w in summary.workloads
            if any(r.median is not None for r in w.traced_over_clean.values())]
    if not rows:
        return []
    # the workload column as wide as the longest entry (a sweep's entries
    # differ at their end), as far as 80 columns allow
    width = min(52, max([12] + [len(name) for name, _ in rows]))
    row = "  %-" + str(width) + "s %12s %12s"
    lines = ["traced/clean throughput (median over repeats of traced ops/s / clean):",
             row % ("workload", labels.baseline[:12], labels.patched[:12])]
    for name, ratio in rows:
        lines.append(row % (name[:width], *(
            "-" if r.median is None else "%.3g" % r.median for r in ratio.values())))
    return lines


def counters_table(workload, labels, boot):
    """The window module's own counters, summed over the traced boots."""
    if not any(workload.counters.values()):
        return []
    lines = ["tracer counters, %s boots (rates per window; lock holds: per hold):" % boot,
             "  %-12s %8s %9s %8s %8s %8s %9s %8s" % (
                 "variant", "windows", "unmatched", "nested", "overflow",
                 "holds", "discarded", "lost")]
    for side, c in workload.counters.items():
        if not c:
            continue
        total, r = c.total, c.total.rates()
        lines.append("  %-12s %8d %9s %8s %8s %8d %9s %8s" % (
            labels[side][:12], total.windows, fmt.rate(r["unmatched"]),
            fmt.rate(r["nested_begin"]), fmt.rate(r["overflow"]), total.holds,
            fmt.rate(r["lock_discarded"]), fmt.rate(r["lock_lost"])))
    return lines


def workload_section(summary, w):
    """cyclictest, throughput and the instrumentation's own figures of one
    workload."""
    labels, short, boot = summary.side_labels(), summary.short_labels(), summary.figure_boot
    n = w.boots
    lines = ["", "== %s (clean boots: %d %s, %d %s; traced: %d, %d) ==" % (
        w.name, n["clean"].baseline, labels.baseline, n["clean"].patched, labels.patched,
        n["traced"].baseline, n["traced"].patched)]
    if summary.aa_mode and n["clean"].patched == 0:
        lines.append("A/A needs REPEAT >= 2 ok boots: no noise floor for this workload")
    lines += per_boot_table(
        w, short, ("latency", "throughput"),
        "cyclictest latency (us), throughput (ops/s), %s boots, per boot:" % boot["latency"])
    lines.append("  pooled: " + "  ".join("%s %s->%s" % (
        name, *(fmt.number(d.stat(name), 1).strip() for d in w.latency.values()))
        for name in ("count", "min", "mean", "max")))
    lines += per_boot_table(
        w, short, ("window", "hold"),
        "series windows (%s) and lock holds (us), %s boots, per boot:"
        % (endpoints.TRACER, boot["windows"]))
    for tracer in TRACERS:
        base, patched = w.windows[tracer].overall.values()
        if not (base.count or patched.count or base.tracer_max or patched.tracer_max):
            continue
        lines.append("%s windows (us), %s boots:" % (tracer, boot["windows"]))
        lines.append("  n %s->%s  p99.9 %s->%s  max %s->%s" % (
            base.count, patched.count, fmt.number(base.p99_9, 1).strip(),
            fmt.number(patched.p99_9, 1).strip(), fmt.number(base.max, 1).strip(),
            fmt.number(patched.max, 1).strip()))
        if base.tracer_max is not None or patched.tracer_max is not None:
            lines.append("  tracer max: %s -> %s" % (fmt.us(base.tracer_max),
                                                     fmt.us(patched.tracer_max)))
    lines += counters_table(w, labels, boot["counters"])
    lines.append("latency histogram, %s boots:" % boot["latency"])
    lines += text_hist(w.latency.baseline.histogram(), w.latency.patched.histogram(),
                       base_label=labels.baseline,
                       patched_label=labels.patched).rstrip("\n").split("\n")
    return lines


def render(summary):
    """report.txt: the headline, the header, failed boots, the per-patch
    table, the critical sections, the sweeps, the traced/clean ratios,
    then each workload's per-boot figures; every line within 80
    columns."""
    model.require_full(summary, "report.txt")
    labels, short, boot = summary.side_labels(), summary.short_labels(), summary.figure_boot
    lines = headline(summary) + [""] + header(summary) + failed_boot_lines(summary)
    per_patch = steps_section(summary)
    if per_patch:
        lines += [""] + per_patch
    for w in summary.workloads:
        crit = critical_sections(w, labels, short, boot)
        if not crit:
            continue
        n = w.boots[boot["windows"]]
        lines.append("")
        lines.append("== %s: critical sections (%s boots: %d %s, %d %s) ==" % (
            w.name, boot["windows"], n.baseline, labels.baseline, n.patched, labels.patched))
        lines += crit
    for sw in summary.sweeps:
        lines += [""] + sweep_section(sw, summary.baseline, boot)
    ratios = ratio_table(summary)
    if ratios:
        lines += [""] + ratios
    for w in summary.workloads:
        lines += workload_section(summary, w)
    return "\n".join(line[:WIDTH] for line in lines) + "\n"
