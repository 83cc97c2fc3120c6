"""Check the measurement chain against windows of known length.

A calibration cell (workload idle, mmlat.calib=kind:us,...) injects
preempt-off and irq-off busy waits through guest/modules/mmlat_calib and
records, per window, what the module timed, what the matching max tracer
reported and that tracer's trace.  Three things must hold:

1. the tracer reports each window within TRACER_TOLERANCE (or
   TRACER_SLACK_US for short windows) of what the module timed: at least
   the time inside the window, at most the time around it (an interrupt
   at the window's edge lengthens the window but not the module's spin);
2. attribution puts the traced window in the "calibration" class;
3. cyclictest's max covers the longest window: its thread cannot run
   inside a window on the same (only) CPU, so it wakes at most one period
   before the window ends.
"""
import os
import re

from . import attribute, parse

# Error allowed between tracer and module: both read the same guest clock;
# the tracer adds the cost of its own hooks, a constant (9 us measured at
# icount shift 3) that the slack covers for short windows.
TRACER_TOLERANCE = 0.05
TRACER_SLACK_US = 20
# The module times its busy wait; it may overrun the request, never fall
# short of it. An interrupt at the end of the spin adds its own length
# (a 200 us window came out at 222 us once), hence the absolute slack.
MODULE_TOLERANCE = 0.10
MODULE_SLACK_US = 100


def _reads_window(reading_us, row):
    """A tracer's reading of an injected window lies between the time the
    module measured inside it and the time around it, give or take the
    tracer slack."""
    def slack(v):
        return max(TRACER_SLACK_US, TRACER_TOLERANCE * v)
    return (row["module_us"] - slack(row["module_us"]) <= reading_us <=
            row["outer_us"] + slack(row["outer_us"]))


def _interval_us(cyc):
    m = re.search(r"(?:^|\s)-i\s*(\d+)", cyc.get("cmdline") or "")
    if not m:
        raise ValueError("cyclictest command line has no -i interval: %r"
                         % cyc.get("cmdline"))
    return int(m.group(1))


def check_cell(guest_dir, requested):
    """Check one calibration cell's guest directory.

    requested: [(kind, us)] in injection order.  Returns (rows, failures):
    one row per window with every figure checked, and a list of failure
    messages (empty when the chain is sound)."""
    calib_path = os.path.join(guest_dir, "calib.txt")
    if not os.path.exists(calib_path):
        return [], ["no calib.txt in %s: the calibration did not run" % guest_dir]
    got = parse.parse_calib(calib_path)
    failures = []
    if len(got) != len(requested):
        failures.append("%d windows requested, %d recorded"
                        % (len(requested), len(got)))
    rows = []
    for i, ((kind, us), rec) in enumerate(zip(requested, got), 1):
        module_us = rec["ns"] / 1000.0
        row = {"kind": kind, "requested_us": us, "module_us": module_us,
               "outer_us": max(module_us, rec.get("outer_ns", rec["ns"]) / 1000.0),
               "tracer_us": rec.get("tracer_us"), "class": None}
        name = "%s %d us" % (kind, us)
        if rec.get("type") != kind:
            failures.append("%s: module ran a %s window" % (name, rec.get("type")))
        if not us <= module_us <= us + max(MODULE_SLACK_US, us * MODULE_TOLERANCE):
            failures.append("%s: module timed %.1f us" % (name, module_us))
        if row["tracer_us"] is None:
            failures.append("%s: no tracer reading (TRACE=none?)" % name)
        else:
            t = row["tracer_us"]
            err = (t - module_us) / module_us
            row["tracer_error"] = err
            if not _reads_window(t, row):
                failures.append("%s: tracer saw %d us, module timed %.1f us inside, "
                                "%.1f us around (%+.1f%%)"
                                % (name, t, module_us, row["outer_us"], 100 * err))
            trace = os.path.join(guest_dir, "calib", "%d.trace" % i)
            if os.path.exists(trace):
                snap = parse.parse_tracer_snapshot(trace)
                row["class"] = attribute.classify(snap["started_at"], snap["ended_at"])
                if row["class"] != "calibration":
                    failures.append("%s: attributed to %s (started at %s)"
                                    % (name, row["class"], snap["started_at"]))
            else:
                failures.append("%s: no trace of the window" % name)
        rows.append(row)

    windows = os.path.join(guest_dir, "windows", "windows.txt")
    if os.path.exists(windows):
        failures += _check_window_module(parse.parse_windows(windows), rows)

    cyc = parse.parse_cyclictest_json(os.path.join(guest_dir, "cyclictest.json"))
    cyc_max = max(t["max"] for t in cyc["threads"].values())
    longest = max((r["module_us"] for r in rows), default=0)
    floor = longest - _interval_us(cyc)
    if cyc_max < floor:
        failures.append("cyclictest max %d us is below the longest window %.0f us "
                        "less one period (%.0f us)" % (cyc_max, longest, floor))
    rows.append({"kind": "cyclictest", "max_us": cyc_max, "floor_us": floor})
    return rows, failures


def _check_window_module(win, rows):
    """TRACE=windows: the module's longest window opened by the calibration
    module, per kind, is the longest injected window of that kind."""
    failures = []
    for kind in ("preempt", "irq"):
        injected = [r for r in rows if r["kind"] == kind]
        if not injected:
            continue
        longest = max(injected, key=lambda r: r["module_us"])
        seen = [k["max_ns"] / 1000.0 for k in win["keys"] if k["kind"] == kind and
                attribute.classify(parse.sym_func(k.get("caller")),
                                   parse.sym_func(k.get("parent"))) == "calibration"]
        longest["windows_us"] = max(seen) if seen else None
        name = "%s %d us" % (kind, longest["requested_us"])
        if not seen:
            failures.append("%s: the window module recorded no calibration window" % name)
            continue
        if not _reads_window(max(seen), longest):
            failures.append("%s: the window module saw %.1f us, module timed %.1f us inside, "
                            "%.1f us around" % (name, max(seen), longest["module_us"],
                                                longest["outer_us"]))
    return failures


def parse_request(calib):
    """"preempt:200,irq:1000" -> [("preempt", 200), ("irq", 1000)]"""
    out = []
    for item in calib.split(","):
        kind, _, us = item.partition(":")
        if kind not in ("preempt", "irq") or not us.isdigit():
            raise ValueError("bad calibration window %r: want preempt:US or irq:US" % item)
        out.append((kind, int(us)))
    return out


def format_rows(rows):
    lines = ["%-8s %9s %10s %10s %10s %7s %10s  %s" % (
        "window", "requested", "inside us", "around us", "tracer us", "error",
        "windows us", "class")]
    for r in rows:
        if r["kind"] == "cyclictest":
            lines.append("cyclictest max %d us (must be >= %.0f us)"
                         % (r["max_us"], r["floor_us"]))
            continue
        err = r.get("tracer_error")
        win = r.get("windows_us")
        lines.append("%-8s %9d %10.1f %10.1f %10s %7s %10s  %s" % (
            r["kind"], r["requested_us"], r["module_us"], r["outer_us"],
            "-" if r["tracer_us"] is None else r["tracer_us"],
            "-" if err is None else "%+.1f%%" % (100 * err),
            "-" if win is None else "%.1f" % win, r["class"] or "-"))
    return "\n".join(lines) + "\n"
