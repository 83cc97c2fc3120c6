"""The QEMU plugin's event log (plugin/README.md, "events.txt"): single
windows of at least log_us and the marks that started and stopped its
recording, which the module's aggregated dump format cannot hold; and the
calibration read-back from it.

    mmlat_plugin_events 1
    param clock=icount log_ns=N
    mark start|stop cpu=C insn=I
    window preempt|irq cpu=C begin_insn=I len_ns=L lock=pte|i_mmap|anon_vma|none stack=FRAME,...

insn counts are the vCPU's executed guest instructions; len_ns is
instructions times 2^shift (virtual ns under -icount, not host time).
Frames the plugin could not name (module code, absent from System.map)
are hex addresses, which the guest's kallsyms.txt resolves.
"""
import re

from . import attribute, parse

EVENTS_FORMAT = 1

# The calibration function whose window each injected kind is (the first
# frame of the window's stack that is not plumbing, as
# calibrate.WINDOW_KEYS names it for the module's windows; the PTE-lock
# kinds are windows here, not lock holds: module code is no lock user the
# plugin knows at boot).
CALIB_OPENERS = {
    "preempt": ("preempt", "mmlat_calib_preempt_window"),
    "irq": ("irq", "mmlat_calib_irq_window"),
    "spin": ("preempt", "mmlat_calib_spin_window"),
    "ptl": ("preempt", "mmlat_calib_ptl_hold"),
    "ptl_nested": ("preempt", "mmlat_calib_ptl_nested_window"),
}

_HEX = re.compile(r"^0x([0-9a-f]+)$")


def parse_events(path_or_text, is_text=False):
    """events.txt -> {"version", "params", "marks": [{what, cpu, insn}],
    "windows": [{kind, cpu, begin_insn, len_ns, lock, "stack": [frame]}]}.
    Raises ValueError on another format or version."""
    text = parse._read(path_or_text, is_text)
    out = {"version": None, "params": {}, "marks": [], "windows": []}
    for line in text.splitlines():
        word = line.split(" ", 1)[0]
        if word == "mmlat_plugin_events":
            out["version"] = parse._check_version(line, word, EVENTS_FORMAT,
                                                  "re-run the cell with this tree's plugin")
        elif word == "param":
            out["params"] = parse._kv_line(line)
        elif word == "mark":
            d = parse._kv_line(line)
            d["what"] = line.split()[1]
            out["marks"].append(d)
        elif word == "window":
            d = parse._kv_line(line)
            d["kind"] = line.split()[1]
            d["stack"] = parse._frames(d.get("stack"))
            out["windows"].append(d)
    if out["version"] is None:
        raise ValueError("not a plugin event log")
    return out


def resolve_frames(stack, symmap):
    """Frames with hex addresses named through a kallsyms SymbolMap
    ("func+0x1a"); named frames stay."""
    out = []
    for f in stack:
        m = _HEX.match(f)
        if m and symmap is not None:
            name, off = symmap.resolve_addr(int(m.group(1), 16))
            if name and not name.startswith("["):
                f = "%s+0x%x" % (name, off)
        out.append(f)
    return out


def calibration_readings(events, calib, symmap):
    """The plugin's reading of each injected window, in injection order.

    calib: parse.parse_calib() of the guest's calib.txt; symmap: a
    SymbolMap of its kallsyms.txt (module symbols).  The windows whose
    opener is a calibration function are taken in order, each matched to
    the next injected window of its kind.  Returns [{kind, inside_us,
    reading_us}] (reading_us None for an injected window the log lacks)."""
    found = []
    for w in events["windows"]:
        opener = attribute.opener(resolve_frames(w["stack"], symmap))
        for kind, (wkind, func) in CALIB_OPENERS.items():
            if w["kind"] == wkind and opener == func:
                found.append((kind, w["len_ns"]))
    rows = []
    i = 0
    for rec in calib:
        kind = rec.get("type")
        reading = None
        j = i
        while j < len(found) and found[j][0] != kind:
            j += 1
        if j < len(found):
            reading = found[j][1] / 1000.0
            i = j + 1
        rows.append({"kind": kind, "inside_us": rec["ns"] / 1000.0,
                     "reading_us": reading})
    return rows
