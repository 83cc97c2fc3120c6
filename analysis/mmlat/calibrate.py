"""Check the measurement chain against windows of known length.

A calibration cell (mmlat.calib=..., any workload) injects windows of known
length through guest/modules/mmlat_calib, of five kinds: `preempt`
(preempt_disable), `irq` (local_irq_save), `spin` (a window opened by
spin_lock on a plain spinlock), `ptl` (a PTE-lock hold, which opens its own
preempt-off window) and `ptl_nested` (the same hold inside a preempt-off
section, as in the baseline kernel's non-preemptible mmu_gather).  The
module times each window from inside (its busy wait) and from around it
(the whole section).  The reading under test is

* TRACE=windows: the window module's own record of that window.  The guest
  snapshots the module's tables before the first window and after each
  (guest/calib/<N>.windows, <N>.locks); the window is the change of the
  key of the calibration function that opened it (or, for the PTE-lock
  kinds, of the PTE-lock site in mmlat_calib_ptl_hold), whose count must grow
  by exactly one.  Other windows have other keys, so nothing else the
  guest does in between can take a window's place;
* TRACE=max (and full): the matching max tracer, reset before each window
  (calib.txt tracer_us, with the window's trace in calib/<N>.trace, whose
  attribution must be the "calibration" class);
* TRACE=plugin: the QEMU plugin's event log of the boot (plugin/events.txt,
  every window at least as long as the shortest injected one), each
  window opened by a calibration function matched in order to the next
  injected window of its kind (plugin_events.calibration_readings).

Per window the reading must lie between the time inside and the time
around the section: an interrupt (or, under a workload, a preemption
before a PTE lock is taken) at a window's edge lengthens it beyond the
busy wait, never beyond the section.  Per kind, reading = a * inside + b is
fitted robustly (Theil-Sen) over every window of the kind: |a - 1| must not
exceed A_TOLERANCE (both sides read the same clock), and b is the cost the
measurement adds to each window, aimed at B_GOAL_US and broken above
B_LIMIT_US.  Last, cyclictest's max must cover the longest window: its
thread cannot run inside a window on the window's CPU, so it wakes at most
one period before the window ends.
"""
import json
import os
import re
import sys

from plan import calib

from . import attribute, parse, plugin_events, records

KINDS = tuple(calib.KINDS)

# Where the window module records each kind: its dump, the table (window
# kind, or the lock of a lock site) and the calibration function that opens
# the window (the opener of its stack at open) or takes the lock.
WINDOW_KEYS = {
    "preempt": ("windows", "preempt", "mmlat_calib_preempt_window"),
    "irq": ("windows", "irq", "mmlat_calib_irq_window"),
    "spin": ("windows", "preempt", "mmlat_calib_spin_window"),
    "ptl": ("locks", "pte", "mmlat_calib_ptl_hold"),
    "ptl_nested": ("locks", "pte", "mmlat_calib_ptl_hold"),
}
# The fit: a within 1 % of one; b, the overhead per window, aimed at 2 us,
# and above 20 us something is broken (the max tracer alone adds 9-15 us).
A_TOLERANCE = 0.01
B_GOAL_US = 2.0
B_LIMIT_US = 20.0
# tracing_max_latency is in whole microseconds, rounded down; the window
# module's readings are nanoseconds on the module's own clock.
READING_RESOLUTION_US = {"tracer": 1.0, "windows": 0.0, "plugin": 0.0}
# The module times its busy wait; it may overrun the request, never fall
# short of it. An interrupt at the end of the spin adds its own length
# (a 200 us window came out at 222 us once), hence the absolute slack.
MODULE_TOLERANCE = 0.10
MODULE_SLACK_US = 100


def _median(vals):
    vals = sorted(vals)
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2


def fit(points):
    """Robust line reading = a * inside + b over [(inside, reading)]:
    a is the median of the slopes between every two windows of different
    lengths, b the median of reading - a * inside (Theil-Sen).  An
    interrupt inside one injected window adds its length to that reading
    alone; under least squares that one window moved b by up to 4 us, here
    it moves neither.  Returns {a, b_us, n, max_residual_us}, a None with
    fewer than two distinct inside times."""
    n = len(points)
    slopes = [(y2 - y1) / (x2 - x1) for i, (x1, y1) in enumerate(points)
              for x2, y2 in points[i + 1:] if x2 != x1]
    if not slopes:
        return {"a": None, "b_us": None, "n": n, "max_residual_us": None}
    a = _median(slopes)
    b = _median([y - a * x for x, y in points])
    return {"a": a, "b_us": b, "n": n,
            "max_residual_us": max(abs(y - a * x - b) for x, y in points)}


def check_fit(kind, f):
    """Failure messages for one kind's fit (none when it is sound)."""
    if f["a"] is None:
        return ["%s: cannot fit a and b from %d windows: inject at least two lengths"
                % (kind, f["n"])]
    failures = []
    if abs(f["a"] - 1) > A_TOLERANCE:
        failures.append("%s: reading = %.4f * inside %+.1f us: a is off by more than %g %%"
                        % (kind, f["a"], f["b_us"], 100 * A_TOLERANCE))
    if f["b_us"] > B_LIMIT_US:
        failures.append("%s: %.1f us added to every window (b), more than %g us: "
                        "the measurement is broken" % (kind, f["b_us"], B_LIMIT_US))
    return failures


def _snapshot(guest_dir, source, n):
    """{key: counters} of the guest's snapshot after injected window n,
    only the keys of the calibration functions; None if there is none."""
    path = os.path.join(guest_dir, "calib", "%d.%s" % (n, source))
    if not os.path.exists(path):
        return None
    funcs = {f for s, _, f in WINDOW_KEYS.values() if s == source}
    out = {}
    if source == "windows":
        for k in parse.parse_windows(path)["keys"]:
            # by its opener (classes.txt's first frame that is not lock or
            # tracing plumbing): a window opened further in, such as the
            # scheduler's when a calibration window ends with a reschedule
            # pending, has the calibration function deeper in its stack
            fn = attribute.opener(k["stack"])
            if fn in funcs:
                out[(k["kind"], k["cpu"], k.get("lock"), ",".join(k["stack"]))] = dict(
                    k, func=fn)
    else:
        for s in parse.parse_locks(path)["sites"]:
            if s["func"] in funcs:
                out[(s["lock"], s["mode"], s["at"])] = s
    return out


def snapshot_reading(before, after, kind):
    """The window module's reading of one injected window of `kind`: the
    change between two snapshots (from _snapshot) of every key of the
    kind's calibration function.  Returns (reading_us, discarded, failure):
    the key's count must have grown by exactly one; a PTE-lock hold the
    module discarded instead (its task was preempted between the lock
    call and the acquisition, which the module cannot time) is no reading
    and no failure."""
    _, table, func = WINDOW_KEYS[kind]
    dn = dt = discarded = 0
    for key, k in after.items():
        if key[0] != table or k["func"] != func:
            continue
        old = before.get(key, {})
        dn += k["n"] - old.get("n", 0)
        dt += k["total_ns"] - old.get("total_ns", 0)
        discarded += k.get("discarded", 0) - old.get("discarded", 0)
    if dn == 1 and not discarded:
        return dt / 1000.0, False, None
    if dn == 0 and discarded == 1:
        return None, True, None
    what = "%s key of %s" % (table, func)
    if dn == 0 and not discarded:
        return None, False, "the window module recorded no window (%s)" % what
    return None, False, "the %s counted %d windows%s for one" % (
        what, dn, " and %d discarded holds" % discarded if discarded else "")


def _tracer_class(guest_dir, n, kind):
    trace = os.path.join(guest_dir, "calib", "%d.trace" % n)
    if not os.path.exists(trace):
        return None, "no trace of the window"
    snap = parse.parse_tracer_snapshot(trace)
    # the tracer names where the window started and ended, no lock
    cls = attribute.classify_stack([snap["started_at"], snap["ended_at"]],
                                   "irq" if kind == "irq" else "preempt")
    if cls != "calibration":
        return cls, "attributed to %s (started at %s)" % (cls, snap["started_at"])
    return cls, None


def _interval_us(cyc):
    m = re.search(r"(?:^|\s)-i\s*(\d+)", cyc.get("cmdline") or "")
    if not m:
        raise ValueError("cyclictest command line has no -i interval: %r"
                         % cyc.get("cmdline"))
    return int(m.group(1))


def check_cell(guest_dir, requested, trace):
    """Check one calibration cell's guest directory.

    requested: [(kind, us)] in injection order (meta.json's calibration
    windows, plan/calib.py); trace: the run's TRACE, which says what read
    the windows: "windows" the window module's snapshots, "max" or "full"
    the tracer, "plugin" the QEMU plugin's event log beside guest_dir.
    Returns
    (result, failures): result = {"source", "windows": [one row per window],
    "fits": {kind: fit()}, "cyclictest": {max_us, floor_us}}, failures a
    list of messages (empty when the chain is sound)."""
    result = {"source": None, "windows": [], "fits": {}, "cyclictest": None}
    calib_path = os.path.join(guest_dir, "calib.txt")
    if not os.path.exists(calib_path):
        return result, ["no calib.txt in %s: the calibration did not run" % guest_dir]
    got = parse.parse_calib(calib_path)
    failures = []
    if len(got) != len(requested):
        failures.append("%d windows requested, %d recorded" % (len(requested), len(got)))
    has_snaps = os.path.exists(os.path.join(guest_dir, "calib", "0.windows"))
    has_tracer = bool(got) and "tracer_us" in got[0]
    events = os.path.join(os.path.dirname(guest_dir), "plugin", "events.txt")
    source = None
    if trace == "windows" and has_snaps:
        source = "windows"
        snaps = {s: _snapshot(guest_dir, s, 0) for s in ("windows", "locks")}
    elif trace in ("max", "full") and has_tracer:
        source = "tracer"
    elif trace == "plugin" and os.path.exists(events):
        source = "plugin"
        plugin_rows = plugin_events.calibration_readings(
            plugin_events.parse_events(events), got,
            parse.SymbolMap(os.path.join(guest_dir, "kallsyms.txt")))
    elif trace == "plugin":
        failures.append("TRACE=plugin, but the boot has no plugin event log (plugin/events.txt)")
    elif trace == "windows":
        failures.append("TRACE=windows, but the boot has no window-module snapshots")
    elif trace in ("max", "full"):
        failures.append("TRACE=%s, but the boot has no tracer readings" % trace)
    else:
        failures.append("no reading of the injected windows under TRACE=%s" % trace)
    result["source"] = source

    rows = result["windows"]
    for i, ((kind, us), rec) in enumerate(zip(requested, got), 1):
        inside = rec["ns"] / 1000.0
        row = {"kind": kind, "requested_us": us, "inside_us": inside,
               "outer_us": max(inside, rec.get("outer_ns", rec["ns"]) / 1000.0),
               "reading_us": None, "discarded": False, "class": None}
        rows.append(row)
        name = "window %d (%s %d us)" % (i, kind, us)
        if rec.get("type") != kind:
            failures.append("%s: the module ran a %s window" % (name, rec.get("type")))
        if not us <= inside <= us + max(MODULE_SLACK_US, us * MODULE_TOLERANCE):
            failures.append("%s: the module timed %.1f us" % (name, inside))
        err = None
        if source == "windows":
            table = WINDOW_KEYS[kind][0]
            now = _snapshot(guest_dir, table, i)
            if now is None:
                err = "no snapshot calib/%d.%s" % (i, table)
            elif snaps[table] is None:
                err = "no snapshot before it"
            else:
                row["reading_us"], row["discarded"], err = snapshot_reading(
                    snaps[table], now, kind)
            snaps[table] = now
        elif source == "tracer":
            row["reading_us"] = rec["tracer_us"]
            row["class"], err = _tracer_class(guest_dir, i, kind)
        elif source == "plugin":
            row["reading_us"] = plugin_rows[i - 1]["reading_us"]
            if row["reading_us"] is None:
                err = "the plugin logged no %s window opened by %s" % plugin_events.CALIB_OPENERS[
                    kind]
        if err:
            failures.append("%s: %s" % (name, err))
        r = row["reading_us"]
        if r is None:
            continue
        res = READING_RESOLUTION_US[source]
        if not row["inside_us"] - res <= r <= row["outer_us"] + res:
            failures.append("%s: read %.1f us, outside the %.1f us inside and %.1f us around "
                            "the window" % (name, r, row["inside_us"], row["outer_us"]))

    for kind in KINDS:
        points = [(r["inside_us"], r["reading_us"]) for r in rows
                  if r["kind"] == kind and r["reading_us"] is not None]
        if points:
            result["fits"][kind] = f = fit(points)
            failures += check_fit(kind, f)
        elif source and any(r["kind"] == kind for r in rows):
            failures.append("%s: no window of this kind was read" % kind)

    cyc = parse.parse_cyclictest_json(os.path.join(guest_dir, "cyclictest.json"))
    cyc_max = max(t["max"] for t in cyc["threads"].values())
    longest = max((r["inside_us"] for r in rows), default=0)
    floor = longest - _interval_us(cyc)
    result["cyclictest"] = {"max_us": cyc_max, "floor_us": floor}
    if cyc_max < floor:
        failures.append("cyclictest max %d us is below the longest window %.0f us "
                        "less one period (%.0f us)" % (cyc_max, longest, floor))
    return result, failures


def format_result(result):
    """Per kind and length the windows' overhead (reading - inside) and
    edge (around - inside), then each kind's fit and cyclictest."""
    lines = ["%-10s %9s %3s %10s %17s %13s" % (
        "kind", "length us", "n", "inside us", "reading-inside us", "around-inside")]
    groups = {}
    for r in result["windows"]:
        groups.setdefault((KINDS.index(r["kind"]), r["requested_us"]), []).append(r)
    for (k, us), rows in sorted(groups.items()):
        over = [r["reading_us"] - r["inside_us"] for r in rows if r["reading_us"] is not None]
        lines.append("%-10s %9d %3d %10.1f %17s %13.1f" % (
            KINDS[k], us, len(rows), sum(r["inside_us"] for r in rows) / len(rows),
            "%.1f..%.1f" % (min(over), max(over)) if over else "-",
            max(r["outer_us"] - r["inside_us"] for r in rows)))
    for kind, f in result["fits"].items():
        if f["a"] is None:
            lines.append("fit %-10s -" % kind)
            continue
        lines.append("fit %-10s reading = %.4f * inside %+.2f us  (%d windows, max residual "
                     "%.1f us)%s" % (kind, f["a"], f["b_us"], f["n"], f["max_residual_us"],
                                     "" if f["b_us"] <= B_GOAL_US else
                                     "  b above the %g us goal" % B_GOAL_US))
    discarded = [r for r in result["windows"] if r["discarded"]]
    if discarded:
        lines.append("%d PTE-lock holds discarded by the window module (preempted before "
                     "the lock was taken): %s" % (len(discarded), ", ".join(
                         "%s %d us" % (r["kind"], r["requested_us"]) for r in discarded)))
    if result["cyclictest"]:
        lines.append("cyclictest max %d us (must be >= %.0f us)"
                     % (result["cyclictest"]["max_us"], result["cyclictest"]["floor_us"]))
    return "\n".join(lines) + "\n"


def _calibration_cells(run_dir):
    """[(cell_dir, its CellRecord)] of every boot with CALIB's windows,
    failed ones included."""
    cells = []
    for root, _, files in os.walk(os.path.join(run_dir, "cells")):
        if "cell.json" in files:
            rec = records.read_cell(os.path.join(root, "cell.json"))
            if rec.calibrated:
                cells.append((root, rec))
    return sorted(cells, key=lambda c: c[0])


def check_run(run_dir, out=None):
    """Check every calibration cell of a run, print each cell's table and
    failures, and write <run>/calibration.json.  Returns 0 when every cell
    passes, 1 when one fails, 2 when the run has no calibration cell."""
    out = out or sys.stdout
    try:
        plan = records.read_meta(run_dir).plan
        cells = _calibration_cells(run_dir)
    except records.UnreadableRun as e:
        print("mmlat: %s" % e, file=sys.stderr)
        return 2
    if not cells:
        print("mmlat: no calibration cells under %s" % run_dir, file=sys.stderr)
        return 2
    doc = {"a_tolerance": A_TOLERANCE, "b_goal_us": B_GOAL_US, "b_limit_us": B_LIMIT_US,
           "ok": True, "fits": {}, "cells": []}
    pooled = {}
    for root, rec in cells:
        name = os.path.relpath(root, os.path.join(run_dir, "cells"))
        entry = {"cell": name, "variant": rec.boot.cell.variant,
                 "workload": rec.boot.cell.workload, "repeat": rec.boot.repeat,
                 "request": plan.calibration.request}
        if rec.result.status != "ok":
            result, failures = None, ["the cell failed: %s" % rec.result.cause]
        else:
            try:
                result, failures = check_cell(os.path.join(root, "guest"),
                                              plan.calibration.windows, plan.trace)
            except ValueError as e:
                result, failures = None, [str(e)]
        entry.update(result or {})
        entry["failures"] = failures
        entry["ok"] = not failures
        doc["ok"] &= entry["ok"]
        doc["cells"].append(entry)
        print("%s:" % name, file=out)
        if result:
            out.write(format_result(result))
            for r in result["windows"]:
                if r["reading_us"] is not None:
                    pooled.setdefault((entry["variant"], entry["workload"], r["kind"]),
                                      []).append((r["inside_us"], r["reading_us"]))
        for msg in failures:
            print("FAIL: %s" % msg, file=out)
    # One fit per variant, workload and kind over all its cells' windows:
    # the figures a report states.
    for (variant, workload, kind), points in sorted(pooled.items()):
        doc["fits"].setdefault(variant, {}).setdefault(workload, {})[kind] = fit(points)
    path = os.path.join(run_dir, "calibration.json")
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
    os.replace(path + ".tmp", path)
    print("calibration: %s (%s)" % ("ok" if doc["ok"] else "FAIL", path), file=out)
    return 0 if doc["ok"] else 1
