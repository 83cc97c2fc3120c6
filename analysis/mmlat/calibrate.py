"""Check the measurement chain against windows of known length.

A calibration cell (workload idle, mmlat.calib=kind:us,...) injects
preempt-off and irq-off busy waits through guest/modules/mmlat_calib and
records, per window, what the module timed, what the matching max tracer
reported and that tracer's trace.  Three things must hold:

1. the tracer reports each window within TRACER_TOLERANCE of what the
   module timed, or within TRACER_SLACK_US for short windows;
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
# short of it.
MODULE_TOLERANCE = 0.10


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
               "tracer_us": rec.get("tracer_us"), "class": None}
        name = "%s %d us" % (kind, us)
        if rec.get("type") != kind:
            failures.append("%s: module ran a %s window" % (name, rec.get("type")))
        if not us <= module_us <= us * (1 + MODULE_TOLERANCE):
            failures.append("%s: module timed %.1f us" % (name, module_us))
        if row["tracer_us"] is None:
            failures.append("%s: no tracer reading (TRACE=none?)" % name)
        else:
            err = abs(row["tracer_us"] - module_us) / module_us
            row["tracer_error"] = err
            if abs(row["tracer_us"] - module_us) > max(TRACER_SLACK_US,
                                                       TRACER_TOLERANCE * module_us):
                failures.append("%s: tracer saw %d us, module timed %.1f us (%.1f%% off)"
                                % (name, row["tracer_us"], module_us, 100 * err))
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

    cyc = parse.parse_cyclictest_json(os.path.join(guest_dir, "cyclictest.json"))
    cyc_max = max(t["max"] for t in cyc["threads"].values())
    longest = max((r["module_us"] for r in rows), default=0)
    floor = longest - _interval_us(cyc)
    if cyc_max < floor:
        failures.append("cyclictest max %d us is below the longest window %.0f us "
                        "less one period (%.0f us)" % (cyc_max, longest, floor))
    rows.append({"kind": "cyclictest", "max_us": cyc_max, "floor_us": floor})
    return rows, failures


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
    lines = ["%-8s %9s %10s %10s %7s  %s" % ("window", "requested", "module us",
                                            "tracer us", "error", "class")]
    for r in rows:
        if r["kind"] == "cyclictest":
            lines.append("cyclictest max %d us (must be >= %.0f us)"
                         % (r["max_us"], r["floor_us"]))
            continue
        err = r.get("tracer_error")
        lines.append("%-8s %9d %10.1f %10s %7s  %s" % (
            r["kind"], r["requested_us"], r["module_us"],
            "-" if r["tracer_us"] is None else r["tracer_us"],
            "-" if err is None else "%.1f%%" % (100 * err), r["class"] or "-"))
    return "\n".join(lines) + "\n"
