"""How figures read in every renderer (report.txt, report.md,
report.html, a posting, the README's tables): numbers in their unit's
precision, changes, intervals, margins, endpoint names, and the sentences
of the method, unwrapped (each renderer wraps them at its width)."""
import re

from plan import instruments

from . import endpoints, load, sequential


def number(v, width=8):
    """A figure right-aligned in width columns: one decimal unless whole,
    "-" without one."""
    if v is None:
        return "-".rjust(width)
    if isinstance(v, float) and not v.is_integer():
        return ("%.1f" % v).rjust(width)
    return str(int(v)).rjust(width)


def us(v):
    """Microseconds with one decimal, "-" without a figure."""
    return "-" if v is None else "%.1f" % v


def fitted(v, width):
    """A figure in width columns: one decimal while it fits, none beyond (a
    sleeping lock's hold can last 184 ms), "-" without one."""
    if v is None:
        return "-"
    text = "%.1f" % v
    return text if len(text) <= width else "%.0f" % v


def ops(v, width=7):
    """ops/s in width columns."""
    if v is None:
        return "-"
    text = "%.4g" % v
    return text if len(text) <= width else "%.1e" % v


def rate(v):
    """An error rate (per window, per hold)."""
    return "-" if v is None else "%.1e" % v


def count(v, width):
    """A count in width columns: thousands (k) or millions (M) when it
    must."""
    for div, unit in ((1, ""), (1000, "k"), (1000000, "M")):
        text = "%d%s" % (round(v / div), unit)
        if len(text) <= width:
            return text.rjust(width)
    return text


def ns_as_us(v, width):
    """ns as us in width columns: one decimal while it fits, none beyond (a
    sleeping lock's hold, switched out, can last 189 ms)."""
    if v is None:
        return "-".rjust(width)
    text = "%.1f" % (v / 1000.0)
    return (text if len(text) <= width else "%.0f" % (v / 1000.0)).rjust(width)


# ------------------------------------------------------------ endpoints

def _decimals(v, e):
    """The unit's decimals, none from 1000 on: a millisecond window's
    tenth of a microsecond is below what its bucket (1.6 %) resolves."""
    return 0 if abs(v) >= 1000 else e.decimals


def value_text(v, e, below_floor=False):
    """A per-side figure of endpoint e in its unit's precision; "<floor"
    when every boot of the side read below the floor (no keyed window of
    the class)."""
    if v is None:
        return "-"
    if below_floor:
        return "<%g" % e.floor
    return "%.*f" % (_decimals(v, e), v)


def delta_text(v, e):
    return "-" if v is None else "%+.*f" % (_decimals(v, e), v)


def interval_text(c):
    """The bootstrap interval of the difference in the unit's precision,
    signed."""
    if c.lo is None:
        return "-"
    return "[%s, %s]" % (delta_text(c.lo, c.spec), delta_text(c.hi, c.spec))


def floored(values, e):
    """Whether every boot of a side read at or below the endpoint's floor."""
    return bool(values) and all(v <= e.floor for v in values)


def pct_text(c):
    """The change in %; none against a side below the floor, whose value is
    a bound, not a figure."""
    if c.delta_pct is None or floored(c.base, c.spec) or floored(c.patched, c.spec):
        return "-"
    return "%+.*f" % (0 if abs(c.delta_pct) >= 1000 else 1, c.delta_pct)


def sides_text(c):
    """Both sides' figures of a comparison: (baseline, patched)."""
    e = c.spec
    return (value_text(c.base_gmean, e, floored(c.base, e)),
            value_text(c.patched_gmean, e, floored(c.patched, e)))


def comparison_cells(c):
    """A comparison as the tables print it: both sides, the change
    absolute and in %, and its interval."""
    e = c.spec
    below = floored(c.base, e) and floored(c.patched, e)
    return sides_text(c) + ("-" if below else delta_text(c.delta, e), pct_text(c),
                            interval_text(c))


def margin_text(m):
    """A margin: 10%, or x2 from a factor 2 on."""
    if m is None:
        return "-"
    return "x%g" % (1 + m) if m >= 1 else "%g%%" % round(100 * m, 1)


def relative_text(r):
    """A relative change (0.1: +10 %) in %, in as few columns as it needs:
    a decimal below 100 %, none below 1000 %, a factor above."""
    pct = 100 * r
    if abs(pct) < 99.95:
        return "%+.1f" % pct
    return "%+.0f" % pct if pct < 999.5 else "x%.3g" % (1 + r)


def decision_interval_text(c):
    """The verdict's decision interval of the relative change, in %."""
    if c.dlo is None:
        return "-"
    return "[%s, %s]" % (relative_text(c.dlo), relative_text(c.dhi))


def settle_text(c):
    """An inconclusive endpoint: the boots a side more that would likely
    settle it; "" for any other."""
    if c.verdict != endpoints.INCONCLUSIVE:
        return ""
    return "out of reach" if c.more_boots is None else "+%d" % c.more_boots


def detail_label(e):
    """An endpoint in a table whose heading names the unit."""
    if e.kind == "window":
        return "%s max" % e.covers
    if e.kind == "hold":
        return "%s hold max" % e.of
    return e.unit if e.kind == "throughput" else e.of


def headline_name(e):
    """An endpoint as the headline's rows name it, the unit in the heading."""
    return "cyclictest %s" % e.of if e.kind == "latency" else detail_label(e)


def headline_label(e):
    """An endpoint with its unit."""
    if e.kind == "latency":
        return "cyclictest %s us" % e.of
    return detail_label(e) + ("" if e.kind == "throughput" else " us")


def boots_text(workload):
    """A workload's compared boots: "clean 10+10, traced 10+9 boots"."""
    n = workload.boots
    return "clean %d+%d, traced %d+%d boots" % (
        n["clean"].baseline, n["clean"].patched, n["traced"].baseline, n["traced"].patched)


# ---------------------------------------------------------- the method

def accel_text(run):
    """The accelerator as the method states it: with more than one vCPU,
    their number and the QEMU that ran them (SMP under icount needs QEMU
    8.1 or later, bench/icount-qemu.sh), whose guest time differs from one
    vCPU's; one vCPU, as before, the mode alone."""
    accel = run.accel or "-"
    if not isinstance(run.smp, int) or run.smp <= 1:
        return accel
    version = re.match(r"QEMU emulator version (\S+)", run.qemu or "")
    return "%s, %d vCPUs%s" % (accel, run.smp,
                               " (QEMU %s)" % version.group(1) if version else "")


def accel_meaning(run):
    """What a guest microsecond is under the run's accelerator."""
    if run.accel == "tcg-icount":
        shift = 3 if run.icount_shift is None else run.icount_shift
        text = ("guest time is the instruction count (icount shift %d: %d ns an "
                "instruction), so a guest microsecond is %g instructions, not a "
                "hardware microsecond, and host load does not change it"
                % (shift, 2 ** shift, 1000.0 / 2 ** shift))
        if isinstance(run.smp, int) and run.smp > 1:
            text += ("; the %d vCPUs take turns, so windows under about a millisecond "
                     "absorb the other vCPU's turn" % run.smp)
        return text
    if run.accel == "kvm":
        return "KVM: guest time is the host's, under the host's load"
    if run.accel == "tcg-mt":
        return ("TCG, one host thread per vCPU: guest time is the host's, and host "
                "scheduling shows as windows")
    if run.accel == "tcg":
        return ("TCG without icount: guest time is the host's, slowed by translation "
                "and by host load")
    return "accelerator %s, of unknown meaning" % (run.accel or "not recorded")


def overhead_text(calibration):
    """The calibrated per-window overhead b of preempt-off windows per
    compared variant (calibration boots), or why there is none."""
    if not calibration.checked:
        return "not calibrated"
    bs = []
    for v in calibration.variants:
        fits = [kinds["preempt"].b_us for kinds in calibration.fits[v].values()
                if "preempt" in kinds and kinds["preempt"].b_us is not None]
        bs.append("-" if not fits else "%.1f" % max(fits))
    return "window overhead b %s us (%s)%s" % (
        "/".join(bs), "/".join(calibration.variants), "" if calibration.ok else " FAILED")


def looks_text(gate):
    """How many boots the verdicts saw: "" for REPEAT, else REPEAT=auto's
    looks."""
    looks = gate.looks or []
    if len(looks) <= 1:
        return ""
    return (" Sequential (REPEAT=auto): %d looks at %s repeats, %s of the budget used, "
            "Lan-DeMets %s alpha spending over the looks, Holm's levels recomputed "
            "as endpoints are decided (Maurer-Bretz)." % (
                len(looks), "/".join(str(lk.repeats) for lk in looks),
                "%d %%" % round(100 * looks[-1].spent),
                sequential.SPENDING_TITLE[gate.spending]))


def method_text(summary):
    """The method in one sentence: kernel, config, accelerator, boots,
    duration, window overhead."""
    run, looks = summary.run, summary.gate.looks or []
    # REPEAT=auto: the repeats its last look saw
    repeat = looks[-1].repeats if len(looks) > 1 else run.repeat
    return "Method: %s, config %s, %s, %s x %s s boots a side, %s." % (
        run.kernel_version or "-", (run.config_sha256 or "-")[:12], accel_text(run),
        repeat or "-", run.duration_s or "-", overhead_text(summary.calibration))


def sources_text(summary):
    """Which boots each figure comes from, and what recorded the windows
    and lock holds (TRACE's instrument, plan/instruments.py)."""
    fb, trace = summary.figure_boot, summary.run.trace
    instrument = instruments.BY_NAME.get(trace)
    if instrument is not None and not instrument.windows_boot:
        return "Latency and work from %s boots; no windows recorded (TRACE=%s)." % (
            fb["latency"], trace)
    by = ", recorded by %s" % instrument.describes if instrument else ""
    if fb["windows"] == fb["latency"]:
        return ("Latency, work, windows and lock holds from the same %s boots%s."
                % (fb["latency"], by))
    return "Latency and work from %s boots, windows and lock holds from %s ones%s." % (
        fb["latency"], fb["windows"], by)


def verdict_rule_text(summary):
    """How the verdicts were reached."""
    g = summary.gate
    return (sources_text(summary) + " "
            "Verdict: %s against each endpoint's margin (better/worse: the whole "
            "interval beyond it, same: within it, TOST; else inconclusive), %s over "
            "the %d primary endpoints at %g; the decision interval is the Welch "
            "interval at the endpoint's Holm level; n/a: under 2 boots a side or no "
            "spread.%s Detailed tables: %d %% %s interval." % (
                g.test, g.correction, g.family, g.alpha, looks_text(g),
                round(g.conf * 100), g.interval))


def settle_items(summary):
    """Each inconclusive primary endpoint with the boots a side more that
    would likely settle it."""
    return ["%s %s %s" % (w.name, c.endpoint, settle_text(c))
            for w in summary.workloads for c in w.primary()
            if c.verdict == endpoints.INCONCLUSIVE]


def settle_sentence(summary):
    items = settle_items(summary)
    if not items:
        return ""
    return ("Inconclusive: the boots a side more that would likely settle it, "
            "if the change and spread are as observed: " + ", ".join(items) + ".")


def demoted_sentence(summary):
    """The endpoints a workload would have as primary that the report keeps
    exploratory (endpoints.Demoted), and why."""
    items = ["%s %s (%s)" % (w.name, d.endpoint, d.why) for w in summary.workloads
             for d in endpoints.demoted(w.name)
             if any(c.endpoint == d.endpoint for c in w.comparisons)]
    if not items:
        return ""
    return "Exploratory, no margin that matters in reach: " + "; ".join(items) + "."


def tracer_kind(tracer):
    """preempt or irq, as the window module names a tracer's windows."""
    return load.MODULE_KIND[tracer]
