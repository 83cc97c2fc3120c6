"""The measurement section of a cover letter, from the summary model
alone: how the run was made (command, commit, kernels, accelerator and
what a guest microsecond is), the headline table with verdicts, margins
and decision intervals, the per-patch table of a STEPS=each run, the
critical sections (longest windows by class and call site), a short
ASCII tail of cyclictest's latency, and the plots to attach.  Plain text
within 72 columns; every number is the run's."""
import math
import shlex
import textwrap

from plan import knobs

from . import endpoints, model, stats
from . import formatting as fmt

WIDTH = 72
# The knobs a command line needs to repeat the run: every knob meta.json
# records but those of the run's identity and of internal targets, and
# those at their default (bench/plan/knobs.py).
NOT_REPEATED = ("RUN_ID", "RESULTS_DIR", "FLAVOR", "STRICT", "CALIB_WORKLOADS")
# The critical-section tables: the classes shown per tracer, longest
# window first, each with its longest call site.
CLASSES_SHOWN = {"preemptoff": 4, "irqsoff": 2}
# The latency tail: P(X >= x) at these decades (while the boots have
# samples that far out), then the max; bars on a log scale this wide.
TAIL_DECADES = (1, 2, 3, 4, 5, 6)
BAR = 20
# A call site longer than this takes a line of its own above its figures.
SITE_COLUMN = 40


def wrap(text, indent=""):
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=False) if text else []


def sentence(text):
    """text with its first letter in capitals."""
    return text[:1].upper() + text[1:]


def table(rows, align, gap=2, first_width=0):
    """rows: tuples of cells (a str alone: a line of its own, a heading);
    align: "l" or "r" per column.  Columns as wide as their widest cell
    (the first at least first_width); a row wider than WIDTH puts its
    last cell on a line of its own."""
    cells = [r for r in rows if not isinstance(r, str)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(align))] if cells else []
    if widths:
        widths[0] = max(widths[0], first_width)
    out = []
    for r in rows:
        if isinstance(r, str):
            out.append(r)
            continue
        parts = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(r, widths, align)]
        line = (" " * gap).join(parts).rstrip()
        if len(line) > WIDTH:
            out.append((" " * gap).join(parts[:-1]).rstrip())
            out.append(r[-1].rjust(WIDTH))
        else:
            out.append(line)
    return out


def _shell_word(key, value):
    """KEY=value as a shell word: quoted when the value needs it."""
    if value and all(c.isalnum() or c in "-_.,:/=+" for c in value):
        return "%s=%s" % (key, value)
    return "%s=%s" % (key, shlex.quote(value) if set('"$`\\') & set(value)
                      else '"%s"' % value)


def command_words(summary):
    """The make command line that repeats the run: its knobs that differ
    from the defaults (with the compared sides as BASELINE and PATCHED)."""
    run = summary.run
    defaults = knobs.read({})
    given = {k: v for k, v in run.knobs.items()
             if k not in NOT_REPEATED and v != "" and v != defaults.get(k)}
    if given.get("VARIANTS") == "%s %s" % (summary.baseline, summary.patched):
        del given["VARIANTS"]
    words = ["make", "bench", "BASELINE=" + summary.baseline, "PATCHED=" + summary.patched]
    return words + [_shell_word(k, v) for k, v in given.items()]


def command_lines(words):
    """A command wrapped at WIDTH with backslash continuations; a word
    too long for a line (a double-quoted list: SWEEP="...") is broken at
    its spaces, which a backslash-newline inside double quotes keeps
    a list's separator."""
    lines, line = [], "  "
    for word in words:
        if len(line) + len(word) + 2 > WIDTH and line.strip():
            lines.append(line + "\\")
            line = "      "
        while len(line) + len(word) + 2 > WIDTH and " " in word:
            room = WIDTH - len(line) - 2
            cut = word.rfind(" ", 0, room)
            if cut <= 0:
                break
            lines.append(line + word[:cut + 1] + "\\")
            line, word = "      ", word[cut + 1:]
        line += word + " "
    return lines + [line.rstrip()]


def kernel_text(summary, side):
    """"mainline (6.1.192, Debian linux-source-6.1 6.1.192-3, PREEMPT):
    series preemptirq-trace" of a compared side."""
    name = getattr(summary, side)
    k = summary.kernels.get(name)
    if k is None:
        return "%s (no build record in the run)" % name
    source = ("Debian %s %s" % (k.source_package.package, k.source_package.version)
              if k.source_package else
              "git %s %s" % (k.ref, (k.commit or "")[:12]) if k.ref else k.source or "-")
    facts = [x for x in (k.kernel_version, source, k.preemption and "CONFIG_%s=y" % k.preemption)
             if x]
    patches = "series " + ", ".join(k.series) if k.series else "no patches"
    return "%s (%s): %s" % (name, ", ".join(facts), patches)


def how_section(summary):
    run = summary.run
    lines = ["How it was measured", ""]
    lines += wrap("The run's knobs as one command (mmlat %s):"
                  % (run.mmlat_commit or "commit not recorded"))
    lines += command_lines(command_words(summary)) + [""]
    sides = [kernel_text(summary, "baseline")] + (
        [] if summary.aa_mode else [kernel_text(summary, "patched")])
    lines += wrap("Kernels: " + "; ".join(sides) + ".")
    lines.append("")
    lines += wrap("Accelerator: %s. %s. Every time below is in guest microseconds."
                  % (fmt.accel_text(run), sentence(fmt.accel_meaning(run))))
    lines.append("")
    failed = len(summary.failed_boots())
    lines += wrap(
        "Each boot ran cyclictest beside one workload for %s s of guest time, %s per "
        "repeat: %d boots%s. %s Calibration: %s." % (
            run.duration_s if run.duration_s is not None else "-",
            " and ".join("a %s one" % kind for kind in run.boots) if run.boots else "boots",
            len(summary.boots),
            ", %d failed and left out" % failed if failed else "",
            fmt.sources_text(summary), fmt.overhead_text(summary.calibration)))
    return lines


def column_labels(summary):
    """The sides as the posting's narrow columns name them: base and
    patched (odd and even in A/A), each named once above its table."""
    return ("odd", "even") if summary.aa_mode else ("base", "patched")


def sides_line(summary):
    if summary.aa_mode:
        return "odd, even: the odd and even repeats of %s" % summary.baseline
    return "base: %s; patched: %s" % (summary.baseline, summary.patched)


def change_text(c):
    """The change in % and its decision interval: "+19.5 [+10.9,+29.3]"."""
    if c.dlo is None:
        return fmt.pct_text(c)
    return "%s %s" % (fmt.pct_text(c), fmt.decision_interval_text(c).replace(", ", ","))


def headline_section(summary):
    base, patched = column_labels(summary)
    rows = [("", base, patched, "change % [interval]", "margin", "verdict")]
    for w in summary.workloads:
        rows.append("%s (%s)" % (w.name, fmt.boots_text(w)))
        for c in w.primary():
            rows.append((fmt.headline_name(c.spec),) + fmt.sides_text(c)
                        + (change_text(c), fmt.margin_text(c.margin), c.verdict))
    g = summary.gate
    notes = ("Per boot, geometric mean over boots (us; pages/s). Verdict: %s against the "
             "endpoint's margin, %s over the %d primary endpoints at %g: better or worse "
             "when the decision interval of the change lies beyond the margin, same when "
             "within it, else inconclusive; n/a: under 2 boots a side or no spread.%s"
             % (g.test, g.correction, g.family, g.alpha, fmt.looks_text(g)))
    lines = ["Primary endpoints", ""] + wrap(notes) + ["", sides_line(summary), ""]
    lines += table(rows, "lrrrrl", gap=1)
    counts = endpoint_count(summary) or "none"
    lines += ["", "%d primary endpoints: %s." % (len(summary.primary()), counts)]
    extra = wrap(fmt.settle_sentence(summary)) + wrap(fmt.demoted_sentence(summary))
    return lines + ([""] + extra if extra else [])


def steps_section(summary):
    if not summary.steps:
        return []
    conf = round(summary.gate.conf * 100)
    lines = ["Each patch against the one before it", ""]
    lines += wrap("STEPS=each: every prefix of the series built and booted; each "
                  "patch's figures against the step before it (%s before patch 1), "
                  "geometric means, %d %% %s interval of the change in the unit; no "
                  "verdict (the verdicts are the headline's)."
                  % (summary.steps[0].previous, conf, summary.gate.interval))
    for w in summary.workloads:
        rows = [("", "before", "after", "change", "interval"), w.name]
        for st in summary.steps:
            rows.append("  %d %s" % (st.index, st.title))
            for c in st.comparisons[w.name]:
                base, patched = fmt.sides_text(c)
                pct = fmt.pct_text(c)
                rows.append(("    " + fmt.headline_label(c.spec), base, patched,
                             pct + ("" if pct == "-" else "%"), fmt.interval_text(c)))
        lines += [""] + table(rows, "lrrrl", gap=1)
    return lines


def critical_section(summary):
    base, patched = column_labels(summary)
    lines = ["Critical sections", ""]
    lines += wrap("The longest windows with preemption or interrupts off in the %s "
                  "boots, by class (guest/classes.txt) and, under each class, its "
                  "longest call site (opener <- caller): how many (of 5 us and more) "
                  "and the longest, in us. %s." % (summary.figure_boot["windows"],
                                                   sentence(sides_line(summary))))
    shown = False
    for w in summary.workloads:
        for tracer, n_classes in CLASSES_SHOWN.items():
            windows = w.windows[tracer]
            if not windows.classes:
                continue
            shown = True
            rows = [("%s, %s" % (w.name, "preempt-off" if tracer == "preemptoff"
                                 else "irq-off"),
                     base + " n", "max", patched + " n", "max")]
            for cls, both in windows.longest_classes()[:n_classes]:
                rows.append(("  " + cls,) + _count_max(both.baseline) + _count_max(both.patched))
                site = next((s for s in windows.sites if s.window_class == cls), None)
                if site is None:
                    continue
                label = "    " + site.site
                if len(label) > SITE_COLUMN:
                    rows.append(label[:WIDTH])
                    label = ""
                rows.append((label,) + _count_max(site.figures.baseline)
                            + _count_max(site.figures.patched))
            lines += [""] + table(rows, "lrrrr", gap=1, first_width=SITE_COLUMN)
    return lines if shown else []


def _count_max(d):
    return (fmt.count(d.count, 7).strip(), fmt.fitted(d.max, 8))


def tail_rows(summary, workload):
    """(label, baseline x, patched x) of the latency tail: the latency x
    beyond which a fraction 10^-k of the samples lie, then the max."""
    hists = [d.histogram() for d in workload.latency.values()]
    least = min(d.count for d in workload.latency.values())
    rows = []
    for k in TAIL_DECADES:
        if least * 10.0 ** -k < 1:
            break
        rows.append(("1e-%d" % k,) + tuple(stats.percentile(h, 100 * (1 - 10.0 ** -k))
                                           for h in hists))
    return rows + [("max",) + tuple(d.max for d in workload.latency.values())]


def tail_section(summary):
    base_label, patched_label = column_labels(summary)
    lines = ["Latency tail", ""]
    lines += wrap("cyclictest latency of the %s boots, pooled: the x (us) that a "
                  "fraction P of the samples reached or passed, bars on a log scale. %s."
                  % (summary.figure_boot["latency"], sentence(sides_line(summary))))
    row = "  %-5s %7s %-" + str(BAR) + "s  %7s %s"
    shown = False
    for w in summary.workloads:
        if not all(d.count for d in w.latency.values()):
            continue
        shown = True
        rows = tail_rows(summary, w)
        top = max(max(r[1], r[2]) for r in rows)

        def bar(x):
            if x <= 1:
                return ""
            return "#" * max(1, round(BAR * math.log10(x) / math.log10(max(top, 10))))
        lines += ["", w.name, (row % ("P", base_label, "", patched_label, "")).rstrip()]
        for label, base, patched in rows:
            lines.append((row % (label, fmt.number(base, 7), bar(base),
                                 fmt.number(patched, 7), bar(patched))).rstrip())
    return lines if shown else []


def plots_section(summary, report_dir):
    lines = ["Plots to attach", ""]
    if not summary.plots:
        return lines + wrap("None: the report was written without plots (make report "
                            "RUN=... draws them).")
    where = (report_dir.rstrip("/") + "/") if report_dir else ""
    return lines + ["  " + where + name for name in summary.plots]


def render(summary, report_dir=None):
    """The section, report_dir: where the plots are, for their paths."""
    model.require_full(summary, "a posting")
    parts = [how_section(summary), headline_section(summary), steps_section(summary),
             critical_section(summary), tail_section(summary),
             plots_section(summary, report_dir)]
    lines = []
    for part in parts:
        if part:
            lines += ([""] if lines else []) + part
    too_wide = [line for line in lines if len(line) > WIDTH]
    if too_wide:
        raise ValueError("posting: lines over %d columns: %r" % (WIDTH, too_wide[:3]))
    return "\n".join(lines) + "\n"


def endpoint_count(summary):
    """How many primary endpoints got each verdict, for the posting's
    one-line summary."""
    verdicts = [c.verdict for c in summary.primary()]
    return ", ".join("%d %s" % (verdicts.count(v), v) for v in (
        endpoints.WORSE, endpoints.BETTER, endpoints.SAME, endpoints.INCONCLUSIVE,
        endpoints.NO_TEST) if verdicts.count(v))
