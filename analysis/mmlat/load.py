"""Load a results/<run-id>/ folder (layout in results/README.md); its
records through records.py, the guest's files through parse.py."""
import os
import re
import sys
from dataclasses import astuple, dataclass

from plan import instruments
from plan.model import BOOT_KINDS, CALIB_CELL

from . import attribute, buckets, parse, records, spikes
from .records import UnreadableRun

TRACERS = ("preemptoff", "irqsoff")
# Every cell is booted clean (cyclictest and the workload alone) and, under
# an instrument that runs in the guest, traced: latency and throughput come
# from clean boots, windows and lock holds from the boot kind TRACE's
# instrument records them in (figure_boot: the traced boots, or under
# TRACE=plugin the clean ones). cells/<variant>/calib/ holds make bench's
# calibration boots, which mmlat calibrate reads: no workload of the report.
BOOTS = BOOT_KINDS
_REPEAT_DIR = re.compile(r"^r(\d+)$")


@dataclass
class TracerCounters:
    """The window module's own loss and error counts for one traced boot,
    or summed over boots: how much its windows and holds may miss."""
    windows: int = 0            # windows recorded, preempt-off and irq-off
    unmatched: int = 0          # enables without a recorded disable
    nested_begin: int = 0       # disables seen while a window was open
    overflow: int = 0           # windows the key table could not key
    holds: int = 0              # lock holds recorded, every lock
    lock_discarded: int = 0     # holds the module could not time
    lock_lost: int = 0          # holds whose slot was overwritten

    def __add__(self, other):
        return TracerCounters(*(a + b for a, b in zip(astuple(self), astuple(other))))

    def rates(self):
        """Each error count per window or per hold (None without any)."""
        def per(n, d):
            return n / d if d else None
        return {"unmatched": per(self.unmatched, self.windows),
                "nested_begin": per(self.nested_begin, self.windows),
                "overflow": per(self.overflow, self.windows),
                "lock_discarded": per(self.lock_discarded, self.holds),
                "lock_lost": per(self.lock_lost, self.holds)}


def figure_boot(run):
    """{figure: the boot kind it is read from} of a loaded run's TRACE."""
    return instruments.of(run["record"].plan.trace).figure_boot


def instrument_of(record, trace):
    """The instrument whose dumps a boot holds: its cell.json's, or for a
    record from before cell.json said (format 3, early format 4) the
    run's TRACE in a traced boot."""
    return record.instrument or (trace if record.boot.kind == "traced" else "")


def dumps_dir(cell_dir, instrument):
    """Where a boot's windows.txt and locks.txt are, None without any."""
    where = instruments.of(instrument).dumps if instrument else ""
    return os.path.join(cell_dir, where) if where else None


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


MODULE_KIND = {"preemptoff": "preempt", "irqsoff": "irq"}


def bucket_hist(counts, max_ns, sub_bits, unit_ns=1):
    """{lo_ns: n} -> {value: n}, values in units of unit_ns: each bucket at
    its midpoint, but one count of the top bucket at the exact max and the
    rest of it at the midpoint of [lo, max] (none of them is longer than
    the max, so no percentile may read above it)."""
    filled = sorted(lo for lo, n in counts.items() if n)
    out = {}
    for lo in filled:
        v = buckets.midpoint(lo, sub_bits) if lo != filled[-1] else (lo + max_ns) / 2
        out[v / unit_ns] = out.get(v / unit_ns, 0) + counts[lo]
    if filled:
        top = ((filled[-1] + max_ns) / 2) / unit_ns
        out[top] -= 1
        if not out[top]:
            del out[top]
        out[max_ns / unit_ns] = out.get(max_ns / unit_ns, 0) + 1
    return out


def _sub_bits(params, what):
    if "sub_bits" not in params:
        raise UnreadableRun("%s: no sub_bits in its param line: a dump from "
                            "before the module's log-linear key buckets" % what)
    return params["sub_bits"]


def _add_hist(dst, h):
    for v, n in h.items():
        dst[v] = dst.get(v, 0) + n


def lock_sites(locks):
    """{at: lock} of the lock call sites of an mmlat_locks dump that took
    one lock only, None without a dump (the module ran without lock hooks,
    so no window is tagged)."""
    if locks is None:
        return None
    seen = {}
    for s in locks["sites"]:
        seen.setdefault(s["at"], set()).add(s["lock"])
    return {at: ls.pop() for at, ls in seen.items() if len(ls) == 1}


def window_lock(stack, lock, sites):
    """The lock tag classify_stack is given for a window, and whether it
    came from its lock site rather than the module.  None (no tag known)
    when the module ran without lock hooks (sites None).  The module's tag
    when it has one; else, for a window opened inside a lock call, the
    lock its call site took in this boot (sites: lock_sites()): the module
    hands the tag from its lock hook to the window the acquisition opens,
    and before 20deff2 a window that began in between (a reschedule on the
    hook's way out, or after an interrupt) took or cleared it (35 of 2513
    fork-side PTE-lock windows, the longest among them, in a baseline fork
    boot); the report counts such windows, which should now be none; else
    "none", opened by no hooked lock."""
    if sites is None:
        return None, False
    if lock in attribute.LOCKS:
        return lock, False
    i = attribute.opener_index(stack)
    if i and stack[i] in sites:
        return sites[stack[i]], True
    return "none", False


def max_window(k, kind, sites=None):
    """The attribution check of a kind's longest window: its class from the
    module's record (the stack at open, "maxopen", and the lock that opened
    it, window_lock) against its class from the kernel's stack at its end
    ("maxstack", read with the same rules and no lock tag: the stack
    alone), and both call sites.  agree is None when either stack is
    missing."""
    open_stack, end_stack = k.get("maxopen") or [], k.get("maxstack") or []
    lock, from_site = window_lock(open_stack, k.get("max_lock"), sites)
    out = {"us": k["max_ns"] / 1000.0, "lock": lock, "lock_from_site": from_site,
           "open_stack": open_stack, "end_stack": end_stack,
           "open_class": attribute.classify_stack(open_stack, kind, lock)
           if open_stack else None,
           "end_class": attribute.classify_stack(end_stack, kind) if end_stack else None,
           "open_site": attribute.call_site(open_stack) if open_stack else None,
           "end_site": attribute.call_site(end_stack) if end_stack else None}
    out["agree"] = (out["open_class"] == out["end_class"]
                    if open_stack and end_stack else None)
    return out


def _module_windows(w, mod, tr, sites):
    """Fill one tracer's window record from an mmlat_windows dump: "hist"
    holds every window (log-linear buckets); "by_class" and "sites" the
    windows of at least the module's threshold, from its keys (a stack at
    open and a lock tag; attribute.classify_stack), a site being the
    class and call site (attribute.call_site) with the keys of every CPU
    merged.  Histograms are in us, each bucket at its midpoint (the keys'
    of key_sub_bits), the top count of each key at its exact max.  Windows below the threshold are
    counted in "below_thresh", windows the full table could not key in
    "overflow": both are in "hist" only.  "max" is the attribution check
    of the longest window (max_window).  sites: lock_sites() of the boot's
    lock dump; "lock_from_site" counts the windows whose lock came from
    their lock site, not the module (window_lock)."""
    kind = MODULE_KIND[tr]
    if not mod or kind not in mod["kinds"]:
        return
    sub_bits = _sub_bits(mod["params"], "windows.txt")
    # the keys' histograms are coarser than the kind's (8 buckets per power
    # of two: there are thousands of keys); their max is exact all the same
    key_sub_bits = mod["params"].get("key_sub_bits", sub_bits)
    k = mod["kinds"][kind]
    w["present"] = True
    w["hist"] = bucket_hist({lo: n for lo, _, n in k["buckets"]}, k["max_ns"], sub_bits, 1000)
    w["overflow"] = k["overflow"]
    w["below_thresh"] = k["n"] - k["keyed"] - w["overflow"]
    w["thresh_us"] = mod["params"]["thresh_ns"] / 1000.0
    w["max"] = max_window(k, kind, sites)
    w["lock_from_site"] = 0
    for e in mod["keys"]:
        if e["kind"] != kind:
            continue
        lock, from_site = window_lock(e["stack"], e.get("lock"), sites)
        w["lock_from_site"] += e["n"] if from_site else 0
        cls = attribute.classify_stack(e["stack"], kind, lock)
        site = attribute.call_site(e["stack"])
        h = bucket_hist(e["buckets"], e["max_ns"], key_sub_bits, 1000)
        _add_hist(w["by_class"].setdefault(cls, {}), h)
        st = w["sites"].setdefault((cls, site), {"class": cls, "site": site, "count": 0,
                                                 "max": 0, "total_us": 0.0, "hist": {}})
        st["count"] += e["n"]
        st["max"] = max(st["max"], e["max_ns"] / 1000.0)
        st["total_us"] += e["total_ns"] / 1000.0
        _add_hist(st["hist"], h)


def tracer_counters(mod, locks):
    """TracerCounters of one traced boot from its window and lock dumps
    (locks may be None: the module ran without lock hooks)."""
    kinds = mod["kinds"].values()
    c = TracerCounters(windows=sum(k["n"] for k in kinds),
                       unmatched=sum(k["unmatched"] for k in kinds),
                       nested_begin=sum(k["nested_begin"] for k in kinds),
                       overflow=sum(k["overflow"] for k in kinds))
    if locks:
        per_lock = [t for name, t in locks["totals"].items() if name != "all"]
        c.holds = sum(t["holds"] for t in per_lock)
        c.lock_discarded = sum(t["discarded"] for t in per_lock)
        c.lock_lost = sum(t["lost"] for t in per_lock)
    return c


# Whether a holder may be preempted, by how the lock was taken: a spinlock
# keeps preemption off, a mutex or rwsem holder may sleep and be preempted.
PREEMPTIBLE = {"spin": False, "mutex": True, "rwsem-write": True, "rwsem-read": True}


def locks_summary(d, sub_bits):
    """Hold times from an mmlat_locks dump per lock site: {"params",
    "totals", "sites": [{lock, mode, preemptible, at, func, class
    (attribute.hold_class), count, max_ns, total_ns, lost, discarded,
    slept, waits, wait_total_ns, wait_max_ns, hist_ns}]}.  Histograms are
    in ns, each bucket at its midpoint, the top count of each site at its
    exact max."""
    out = {"params": d["params"], "totals": d["totals"], "sites": []}
    for s in d["sites"]:
        out["sites"].append({
            "lock": s["lock"], "mode": s["mode"], "preemptible": PREEMPTIBLE[s["mode"]],
            "at": s["at"], "func": s["func"],
            "class": attribute.hold_class(s["lock"], s["func"]),
            "count": s["n"], "max_ns": s["max_ns"], "total_ns": s["total_ns"],
            "lost": s["lost"], "discarded": s["discarded"], "slept": s.get("slept", 0),
            "waits": s.get("waits", 0), "wait_total_ns": s.get("wait_total_ns", 0),
            "wait_max_ns": s.get("wait_max_ns", 0),
            "hist_ns": bucket_hist(s["buckets"], s["max_ns"], sub_bits)})
    return out


def _module_dump(parser, path):
    """One mmlat_windows dump parsed, None when the boot has none."""
    if not _exists(path):
        return None
    try:
        return parser(path)
    except ValueError as e:
        raise UnreadableRun("%s: %s" % (path, e))


def load_cell(run_dir, record, cell_dir, trace):
    """One boot: record its cell.json (plan.model.CellRecord); trace the
    run's TRACE, which says where a traced boot's windows are."""
    boot = record.boot
    cell = {"variant": boot.cell.variant, "workload": boot.cell.workload, "boot": boot.kind,
            "repeat": boot.repeat, "dir": cell_dir, "meta": record.to_json()}
    cell["status"] = record.result.status
    cell["cause"] = record.result.cause
    variant = boot.cell.variant
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
    # TRACE=windows: the mmlat_windows module's dumps (symbols resolved in
    # the guest) instead of hist triggers; TRACE=plugin: the QEMU plugin's,
    # in the same formats, written on the host beside the guest's files
    instrument = instrument_of(record, trace)
    cell["instrument"] = instrument
    dumps = dumps_dir(cell_dir, instrument)
    mod = _module_dump(parse.parse_windows, os.path.join(dumps, "windows.txt")) if dumps else None
    locks = _module_dump(parse.parse_locks, os.path.join(dumps, "locks.txt")) if dumps else None
    sites = lock_sites(locks)
    cell["locks"] = locks_summary(locks, _sub_bits(locks["params"], "locks.txt")) if locks else None
    cell["counters"] = tracer_counters(mod, locks) if mod else None
    # the plugin's per-wakeup records, reduced at once to the boot's spikes
    # and the timeline around its longest: a boot's log is 10^4 wakeups
    wakeups = _module_dump(spikes.parse_wakeups, os.path.join(dumps, "wakeups.txt")) \
        if dumps else None
    cell["spikes"] = spikes.boot_spikes(wakeups, boot.repeat) if wakeups else None
    cell["timeline"] = spikes.timeline(wakeups, cell["spikes"]) if wakeups else None
    for tr in TRACERS:
        wp = os.path.join(g, "windows", tr + ".hist")
        # hist triggers under TRACE=full only; TRACE=windows: the module's
        w = {"hist": {}, "by_class": {}, "sites": {}, "dropped": 0,
             "present": trace == "full" and _exists(wp), "max": None}
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
                # no lock tag: the two frames alone decide (the 6.1 guests
                # report parent == caller for openers outside lock calls)
                frames = [caller] if parent == caller else [caller, parent]
                cls = attribute.classify_stack(frames, tr)
                bc = w["by_class"].setdefault(cls, {})
                bc[lat_us] = bc.get(lat_us, 0) + n
                site = attribute.call_site(frames)
                s = w["sites"].setdefault((cls, site), {"class": cls, "site": site, "count": 0,
                                                        "max": 0, "total_us": 0.0, "hist": {}})
                s["count"] += n
                s["max"] = max(s["max"], lat_us)
                s["total_us"] += lat_us * n
                s["hist"][lat_us] = s["hist"].get(lat_us, 0) + n
        if not w["present"]:
            _module_windows(w, mod, tr, sites)
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
    cell["pages_per_s"] = parse.workload_pages_rate(cell["workload_recs"])
    cp = os.path.join(g, "calib.txt")   # injected calibration windows
    cell["calib"] = parse.parse_calib(cp) if _exists(cp) else []
    return cell


def _repeat_dirs(d):
    """(N, path) of the r<N> folders in d, by N; staging folders skipped."""
    out = []
    for name in os.listdir(d):
        m = _REPEAT_DIR.match(name)
        if m:
            out.append((int(m.group(1)), os.path.join(d, name)))
    return sorted(out)


def load_run(run_dir, skip_unreadable=False):
    """Every boot under cells/<variant>/<workload>/<boot>/r<N>/: run["record"]
    is its meta.json (plan.model.Meta), run["meta"] the same as JSON, for the
    report; run["kernels"] each variant's build.json as JSON.  Raises
    UnreadableRun on records of a format this analysis does not read, and
    on a boot it cannot read (an older window module's format) unless
    skip_unreadable, which leaves such a boot out and names it on stderr
    (an older run's clean boots still give its before figures)."""
    meta = records.read_meta(run_dir)
    run = {"dir": run_dir, "record": meta, "meta": meta.to_json(), "cells": [], "kernels": {}}
    for v in meta.plan.variant_names:
        path = os.path.join(run_dir, "kernels", v, "build.json")
        if os.path.exists(path):
            run["kernels"][v] = records.read_build(path).to_json()
    cdir = os.path.join(run_dir, "cells")
    for v in sorted(os.listdir(cdir)) if os.path.isdir(cdir) else []:
        for w in sorted(os.listdir(os.path.join(cdir, v))):
            if w == CALIB_CELL:
                continue
            for boot in BOOTS:
                bd = os.path.join(cdir, v, w, boot)
                for _, path in _repeat_dirs(bd) if os.path.isdir(bd) else []:
                    try:
                        c = load_cell(run_dir, records.read_cell(os.path.join(path, "cell.json")),
                                      path, meta.plan.trace)
                    except UnreadableRun as e:
                        if not skip_unreadable:
                            raise
                        print("skipped: %s" % e, file=sys.stderr)
                        continue
                    run["cells"].append(c)
    return run


def variant_named(run, given):
    """The variant of run that given names: its name; a git ref it was
    built from (build.json "ref": a bare ref such as HEAD~1 names the
    variant HEAD-1); or a variant spec NAME=..., as BASELINE and PATCHED
    may be.  None stays None; an unknown name is returned as it is."""
    if given is None or given in variants(run):
        return given
    for v, k in run.get("kernels", {}).items():
        if k.get("ref") == given:
            return v
    return given.split("=", 1)[0]


def variants(run):
    seen = []
    for c in run["cells"]:
        if c["variant"] not in seen:
            seen.append(c["variant"])
    return seen


def _natural(name):
    """Sort key: digit runs compare as numbers (imap:n=16 before imap:n=1024)."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part)
            for part in re.split(r"(\d+)", name) if part]


def workloads(run):
    """The run's workloads, by name with a parameter's values in numeric
    order (a directory listing puts imap:n=1024 before imap:n=16)."""
    return sorted({c["workload"] for c in run["cells"]}, key=_natural)


def ok_cells(run, variant, workload, boot):
    """The ok boots of one kind of a variant and workload, by repeat."""
    return [c for c in run["cells"] if c["variant"] == variant and c["workload"] == workload
            and c["boot"] == boot and c["status"] == "ok"]


def cell_name(c):
    return "%s/%s/%s/r%d" % (c["variant"], c["workload"], c["boot"], c["repeat"])
