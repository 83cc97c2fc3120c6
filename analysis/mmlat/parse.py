"""Parsers for the raw files a cell ships back (see results/README.md).

Every parser takes a path (or text) and returns plain dicts/lists; none of
them needs the kernels or QEMU.
"""
import bisect
import json
import re


def _read(path_or_text, is_text=False):
    if is_text:
        return path_or_text
    with open(path_or_text, encoding="utf-8", errors="replace") as f:
        return f.read()


# --------------------------------------------------------------- cyclictest
def parse_cyclictest_json(path):
    """rt-tests 2.4 --json output.

    Returns {"version", "cmdline", "threads": {tid: {"hist": {us: n},
    "cycles", "min", "max", "avg", "cpu"}}}.  rt-tests 2.4 writes the keys
    "cmdline:" and "rt_test_version:" with a trailing colon; both spellings
    are accepted.
    """
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    threads = {}
    for tid, t in (d.get("thread") or {}).items():
        hist = {int(k): int(v) for k, v in (t.get("histogram") or {}).items()}
        threads[int(tid)] = {
            "hist": hist,
            "cycles": int(t.get("cycles", sum(hist.values()))),
            "min": t.get("min"),
            "max": t.get("max"),
            "avg": t.get("avg"),
            "cpu": t.get("cpu"),
        }
    return {
        "version": d.get("rt_test_version:", d.get("rt_test_version")),
        "cmdline": d.get("cmdline:", d.get("cmdline")),
        "return_code": d.get("return_code"),
        "release": (d.get("sysinfo") or {}).get("release"),
        "threads": threads,
    }


def parse_cyclictest_hist(path):
    """cyclictest --histfile output: one row per µs bucket, one column per
    thread, then '# Total:', '# Min/Avg/Max Latencies:', '# Histogram
    Overflows:' and per-thread overflow cycle numbers.

    Returns {"threads": [ {"hist": {us: n}, "total", "min", "avg", "max",
    "overflows"} ], "buckets": N}.  Overflowed samples (latency >= the
    histogram limit) are not in "hist"; "max" still covers them.
    """
    text = _read(path)
    cols = None
    summary = {}
    nb = 0
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            m = re.match(r"#\s*([A-Za-z ]+):\s*(.*)$", line)
            if m:
                key = m.group(1).strip()
                vals = m.group(2).split()
                if key in ("Total", "Min Latencies", "Avg Latencies",
                           "Max Latencies", "Histogram Overflows"):
                    summary[key] = [int(v) for v in vals]
            continue
        parts = line.split()
        b = int(parts[0])
        counts = [int(v) for v in parts[1:]]
        if cols is None:
            cols = [dict() for _ in counts]
        for i, c in enumerate(counts):
            if c:
                cols[i][b] = cols[i].get(b, 0) + c
        nb += 1
    cols = cols or []
    threads = []
    for i, h in enumerate(cols):
        def g(k, default=None):
            v = summary.get(k)
            return v[i] if v and i < len(v) else default
        threads.append({"hist": h, "total": g("Total", sum(h.values())),
                        "min": g("Min Latencies"), "avg": g("Avg Latencies"),
                        "max": g("Max Latencies"),
                        "overflows": g("Histogram Overflows", 0)})
    return {"threads": threads, "buckets": nb}


# ------------------------------------------------------------ hist triggers
_HIST_LINE = re.compile(r"^\{(?P<keys>[^}]*)\}\s*hitcount:\s*(?P<n>\d+)(?P<rest>.*)$")


def _keyval(s):
    out = {}
    for part in s.split(","):
        if ":" not in part:
            continue
        k, v = part.split(":", 1)
        k = k.strip()
        v = v.strip()
        # values may be "123", "-123", "0xffff..." or "sym+0x1/0x2 [mod]"
        try:
            out[k] = int(v, 0)
        except ValueError:
            m = re.match(r"^(-?\d+)", v)
            out[k] = int(m.group(1)) if m and k == "lat" else v
    return out


def parse_hist_trigger(path_or_text, is_text=False):
    """Output of events/.../hist.  Returns {"entries": [{"lat", "caller_offs",
    "parent_offs", ..., "hitcount"}], "hits", "entries_n", "dropped"}."""
    text = _read(path_or_text, is_text)
    entries = []
    tot = {}
    for line in text.splitlines():
        s = line.strip()
        m = _HIST_LINE.match(s)
        if m:
            e = _keyval(m.group("keys"))
            e["hitcount"] = int(m.group("n"))
            for k, v in re.findall(r"(\w+):\s*(-?\d+)", m.group("rest")):
                e[k] = int(v)
            entries.append(e)
            continue
        m = re.match(r"^(Hits|Entries|Dropped):\s*(\d+)", s)
        if m:
            tot[m.group(1).lower()] = int(m.group(2))
    return {"entries": entries, "hits": tot.get("hits"),
            "entries_n": tot.get("entries"), "dropped": tot.get("dropped", 0)}


# ------------------------------------------------------------ latency tracer
def parse_tracer_snapshot(path_or_text, is_text=False):
    """preemptoff/irqsoff/preemptirqsoff `trace` snapshot."""
    text = _read(path_or_text, is_text)
    out = {"tracer": None, "latency_us": None, "cpu": None,
           "started_at": None, "ended_at": None, "stack": []}
    in_stack = False
    for line in text.splitlines():
        m = re.match(r"#\s*(\w+) latency trace v", line)
        if m:
            out["tracer"] = m.group(1)
        m = re.match(r"#\s*latency:\s*(\d+)\s*us.*CPU#(\d+)", line)
        if m:
            out["latency_us"] = int(m.group(1))
            out["cpu"] = int(m.group(2))
        m = re.match(r"#\s*=>\s*started at:\s*(\S+)", line)
        if m:
            out["started_at"] = m.group(1)
        m = re.match(r"#\s*=>\s*ended at:\s*(\S+)", line)
        if m:
            out["ended_at"] = m.group(1)
        if "<stack trace>" in line:
            in_stack = True
            continue
        if in_stack:
            m = re.match(r"^\s*=>\s*(\S+)", line)
            if m:
                out["stack"].append(m.group(1))
            elif line.strip() and not line.startswith(" "):
                in_stack = False
    return out


def parse_tracer_max(path):
    try:
        return int(_read(path).strip().split()[0])
    except (OSError, ValueError, IndexError):
        return None


# ------------------------------------------------------------------ workload
def _num(v):
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            pass
    return v


def parse_workload(path_or_text, is_text=False):
    """workload driver key=value lines.  One record per `workload=` line (or
    per line when several records are on one line).  Numbers are converted."""
    text = _read(path_or_text, is_text)
    recs = []
    for line in text.splitlines():
        pairs = re.findall(r"(\w+)=(\S+)", line)
        if not pairs:
            continue
        d = {k: _num(v) for k, v in pairs}
        if "workload" in d or not recs:
            recs.append(d)
        else:
            recs[-1].update(d)
    return recs


def workload_throughput(recs):
    """Sum ops_per_s over records (or ops/duration_s)."""
    total = 0.0
    seen = False
    for r in recs:
        if isinstance(r.get("ops_per_s"), (int, float)):
            total += r["ops_per_s"]
            seen = True
        elif isinstance(r.get("ops"), (int, float)) and r.get("duration_s"):
            total += r["ops"] / float(r["duration_s"])
            seen = True
    return total if seen else None


def workload_pages_rate(recs):
    """Sum pages_per_s over records: the drivers' work in pages counted up
    to the stop (results/README.md, workload.txt); None for output from
    before the drivers printed it, or from stress-ng."""
    v = [r["pages_per_s"] for r in recs if isinstance(r.get("pages_per_s"), (int, float))]
    return sum(v) if v else None


def parse_calib(path_or_text, is_text=False):
    """guest/calib.txt: one injected window a line, `type=preempt ns=N cpu=C`."""
    text = _read(path_or_text, is_text)
    return [{k: _num(v) for k, v in re.findall(r"(\w+)=(\S+)", line)}
            for line in text.splitlines() if "=" in line]


# ----------------------------------------------------------------- stress-ng
def parse_stressng_yaml(path_or_text, is_text=False):
    """Only the `metrics:` section of stress-ng --yaml output: a list of
    mappings ('- stressor: x' then indented 'key: value')."""
    text = _read(path_or_text, is_text)
    out = []
    in_metrics = False
    cur = None
    for line in text.splitlines():
        if re.match(r"^metrics:\s*$", line):
            in_metrics = True
            continue
        if in_metrics and re.match(r"^\S", line):
            in_metrics = False
        if not in_metrics:
            continue
        m = re.match(r"^\s*-\s*(\w[\w-]*):\s*(.*)$", line)
        if m:
            cur = {m.group(1): _num(m.group(2).strip())}
            out.append(cur)
            continue
        m = re.match(r"^\s+(\w[\w-]*):\s*(.*)$", line)
        if m and cur is not None:
            cur[m.group(1)] = _num(m.group(2).strip())
    return out


# ---------------------------------------------------------------- System.map
class SymbolMap:
    """System.map text symbols; resolve _stext-relative offsets."""

    MAX_SYMBOL_SIZE = 0x10000
    MODULES_END = 0xffffffffff000000

    def __init__(self, path_or_text, is_text=False):
        text = _read(path_or_text, is_text)
        syms = []
        for line in text.splitlines():
            p = line.split()
            if len(p) < 3 or p[1] not in "tTwW":
                continue
            syms.append((int(p[0], 16), p[2]))
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]
        d = dict((n, a) for a, n in syms)
        self.stext = d.get("_stext")
        self.etext = d.get("_etext")
        if self.stext is None:
            raise ValueError("System.map has no _stext symbol")
        # System.map has no module symbols: an address past _etext that has
        # no symbol of its own is reported as "[module]" (a kallsyms dump,
        # which does list module symbols, can be loaded the same way)
        self.has_modules = any(a > self.etext for a in self.addrs) if self.etext else True

    def resolve_addr(self, addr):
        if addr >= self.MODULES_END:
            # past x86-64 module space: a bogus offset (6.1 guests report
            # parent 0x7f000000, i.e. _stext + 2 GiB, for IPs they cannot
            # express in s32)
            return "[unknown]", addr - self.stext
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return None, None
        if self.etext is not None and addr >= self.etext and self.addrs[i] <= self.etext:
            return "[module]", addr - self.etext
        off = addr - self.addrs[i]
        if off > self.MAX_SYMBOL_SIZE and self.etext is not None and addr >= self.etext:
            return "[module]", addr - self.etext
        if off > self.MAX_SYMBOL_SIZE:
            # no function is this long
            return "[unknown]", off
        return self.names[i], off

    def resolve_offs(self, offs):
        """offs is signed, relative to _stext -> (symbol, offset) or (None,None)."""
        if not isinstance(offs, int):
            return None, None
        return self.resolve_addr(self.stext + offs)

    def name(self, offs):
        s, o = self.resolve_offs(offs)
        return s if s else "?"


# ------------------------------------------------- mmlat_windows guest module
# guest/modules/mmlat_windows writes /proc/mmlat_windows/{windows,locks}
# as `keyword k=v k=v ...` lines; symbols are already resolved in the guest
# ("func+0x1a/0x200", module names dropped; a stack is such frames joined
# by commas, innermost first).
_KV = re.compile(r"(\w+)=(\S*)")


def _kv_line(line):
    return {k: _num(v) if v else v for k, v in _KV.findall(line)}


def _pairs(s, key_conv=int):
    """'a:b,c:d,' -> {a: b, c: d}"""
    out = {}
    for part in (s or "").split(","):
        if ":" in part:
            k, v = part.split(":", 1)
            out[key_conv(k)] = out.get(key_conv(k), 0) + int(v)
    return out


def sym_func(sym):
    """'zap_pte_range+0x12/0x400' -> 'zap_pte_range'; '[idle]' stays."""
    if not isinstance(sym, str):
        return sym
    return sym.split("+", 1)[0]


def _frames(s):
    """'a+0x1/0x2,b+0x3/0x4' -> ['a+0x1/0x2', 'b+0x3/0x4']"""
    return [f for f in (s or "").split(",") if f]


WINDOWS_FORMAT = 3


def _check_version(line, what, expected=WINDOWS_FORMAT,
                   remedy="re-run the cell with this tree's guest module"):
    """The format number of a dump's header line "NAME N"; ValueError
    unless it is expected."""
    words = line.split()
    if len(words) != 2 or not words[1].isdigit():
        raise ValueError("%s header without a format number: %r" % (what, line))
    version = int(words[1])
    if version != expected:
        raise ValueError("%s format %d, this analysis reads %d: %s"
                         % (what, version, expected, remedy))
    return version


def parse_windows(path_or_text, is_text=False):
    """windows/windows.txt.  Returns {"version", "params",
    "kinds": {"preempt"|"irq": {n, total_ns, max_ns, unmatched, nested_begin,
    edge, idle_cut, keyed, overflow, overflow_max_ns, max_lock,
    "maxopen": [frame, ...] (the longest window's stack when it opened,
    from the module's own frame walk, opener first),
    "maxstack": [frame, ...] (the same window's stack at its end, from the
    kernel's unwinder, innermost first),
    "buckets": [(lo_ns, hi_ns, n)]}},
    "keys": [{kind, cpu, n, total_ns, max_ns, lock, "stack": [frame, ...]
    (at open, opener first), "caller" (stack[0]), "buckets": {lo_ns: n}}]}
    (one key per CPU; equal keys of two CPUs are listed twice).  lock is
    the lock whose acquisition opened the window (pte, i_mmap, anon_vma)
    or none."""
    text = _read(path_or_text, is_text)
    out = {"version": None, "params": {}, "kinds": {}, "keys": []}
    for line in text.splitlines():
        word = line.split(" ", 1)[0]
        if word == "mmlat_windows":
            out["version"] = _check_version(line, "mmlat_windows")
        elif word == "param":
            out["params"] = _kv_line(line)
        elif word == "kind":
            kind = line.split()[1]
            d = _kv_line(line)
            d["buckets"] = []
            d["maxopen"] = []
            d["maxstack"] = []
            out["kinds"][kind] = d
        elif word in ("maxopen", "maxstack"):
            _, kind, _, frame = line.split(" ", 3)
            out["kinds"][kind][word].append(frame)
        elif word == "bucket":
            kind = line.split()[1]
            d = _kv_line(line)
            out["kinds"][kind]["buckets"].append((d["lo_ns"], d["hi_ns"], d["n"]))
        elif word == "key":
            d = _kv_line(line)
            d["kind"] = line.split()[1]
            d["buckets"] = _pairs(d.get("buckets"))
            d["stack"] = _frames(d.get("stack"))
            d["caller"] = d["stack"][0] if d["stack"] else "[none]"
            out["keys"].append(d)
    if out["version"] is None:
        raise ValueError("not an mmlat_windows dump")
    return out


LOCKS = ("pte", "i_mmap", "anon_vma")


def parse_locks(path_or_text, is_text=False):
    """windows/locks.txt.  Returns {"version", "params" (i_mmap and
    anon_vma: spin, mutex, rwsem or none, what the module found in the
    kernel it was built for), "users": [func],
    "totals": {lock: {holds, lost, discarded, in_flight}, "all": {nonlock,
    site_overflow, slot_overflow}},
    "sites": [{lock, mode (spin, mutex, rwsem-write, rwsem-read), n,
    total_ns, max_ns, lost, discarded, slept, waits, wait_total_ns,
    wait_max_ns, at, func, "buckets": {lo_ns: n}}]}.  Hold times are
    counted at the call site that took the lock (at: the lock call's
    return address)."""
    text = _read(path_or_text, is_text)
    out = {"version": None, "params": {}, "users": [], "totals": {}, "sites": []}
    for line in text.splitlines():
        word = line.split(" ", 1)[0]
        if word == "mmlat_locks":
            out["version"] = _check_version(line, "mmlat_locks")
        elif word == "param":
            out["params"] = _kv_line(line)
        elif word == "user":
            out["users"].append(line.split()[1])
        elif word == "total":
            d = _kv_line(line)
            out["totals"][d.pop("lock", "all")] = d
        elif word == "site":
            d = _kv_line(line)
            d["buckets"] = _pairs(d.get("buckets"))
            d["func"] = sym_func(d.get("at"))
            out["sites"].append(d)
    if out["version"] is None:
        raise ValueError("not an mmlat_locks dump")
    return out
