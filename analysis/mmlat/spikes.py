"""Each latency spike tied to the window that held it off, from the QEMU
plugin's per-wakeup records (plugin/README.md, "wakeups.txt").

For every wakeup of cyclictest's measuring thread the plugin gives the
instruction at which its timer expired, the one at which the thread got
the CPU, and the preempt-off and irq-off windows open at the expiry.  A
spike is a wakeup above the boot's p99.9.  A window explains it if it
opened before the timer expired (the plugin keeps no other) and covers at
least COVER of the spike's latency above the boot's median: the wakeup
path's own short sections open after the expiry and never count.  Both
kinds of window start before the expiry, so together they cover as far as
the later of their ends.

    mmlat_plugin_wakeups 1
    param clock=icount shift=S
    wakeup cpu=C pid=P expires_ns=E clock_ns=N clock_insn=I expiry_insn=X run_insn=R latency_ns=L running=COMM
    held preempt|irq begin_insn=B end_insn=Z lock=TAG stack=FRAME,...
    after preempt|irq begin_insn=B end_insn=Z lock=TAG stack=FRAME,...

An "after" window opened after the expiry and held the thread off
longest of its kind (a softirq run at the interrupt's exit, say): never
a cause, but named with an unexplained spike.

Times are vCPU instructions x 2^S ns: virtual time under -icount, not
hardware time."""
import math
from dataclasses import dataclass, field

from . import attribute, parse

WAKEUPS_FORMAT = 1
SPIKE_QUANTILE = 0.999
COVER = 0.8
# Unexplained spikes kept per workload and side, the longest first.
UNEXPLAINED_KEPT = 20


@dataclass
class Held:
    """A window open at a timer's expiry."""
    kind: str                   # preempt | irq
    begin_insn: int
    end_insn: int               # 0: closed before the task ran, time lost
    lock: str
    stack: list[str]


@dataclass
class Wakeup:
    cpu: int
    pid: int
    expires_ns: int             # the timer's due time, CLOCK_MONOTONIC
    clock_ns: int               # the hrtimer interrupt's clock read ...
    clock_insn: int             # ... at this instruction
    expiry_insn: int
    run_insn: int
    latency_ns: int
    running: str                # the task the timer interrupted
    held: list[Held] = field(default_factory=list)
    after: list[Held] = field(default_factory=list)

    def covered_insns(self, h):
        """Instructions of the wakeup's latency that h held off: from the
        expiry to its end, or where its end was lost, to the interrupt."""
        if h.begin_insn > self.expiry_insn:
            return 0
        end = h.end_insn or self.clock_insn
        return max(0, min(end, self.run_insn) - self.expiry_insn)

    def insn_ns(self, insn, shift):
        """An instruction of this wakeup's busy stretch on the guest's
        CLOCK_MONOTONIC."""
        return self.clock_ns + ((insn - self.clock_insn) << shift)


@dataclass
class WakeupLog:
    shift: int
    wakeups: list[Wakeup]


def parse_wakeups(path_or_text, is_text=False):
    """wakeups.txt -> WakeupLog; ValueError on another format."""
    text = parse._read(path_or_text, is_text)
    version, shift, wakeups = None, None, []
    for line in text.splitlines():
        word = line.split(" ", 1)[0]
        if word == "mmlat_plugin_wakeups":
            version = parse._check_version(line, word, WAKEUPS_FORMAT,
                                           "re-run the cell with this tree's plugin")
        elif word == "param":
            shift = parse._kv_line(line).get("shift")
        elif word == "wakeup":
            d = parse._kv_line(line)
            wakeups.append(Wakeup(**{k: d[k] for k in (
                "cpu", "pid", "expires_ns", "clock_ns", "clock_insn", "expiry_insn",
                "run_insn", "latency_ns")}, running=str(d["running"])))
        elif word in ("held", "after"):
            if not wakeups:
                raise ValueError("a %s window before any wakeup" % word)
            d = parse._kv_line(line)
            getattr(wakeups[-1], word).append(Held(
                line.split()[1], d["begin_insn"], d["end_insn"], str(d["lock"]),
                parse._frames(d.get("stack"))))
    if version is None or not isinstance(shift, int):
        raise ValueError("not a plugin wakeups log")
    return WakeupLog(shift, wakeups)


@dataclass
class Cause:
    """A window that explains a spike."""
    kind: str
    window_class: str
    site: str
    covered_us: float


@dataclass
class Spike:
    repeat: int
    latency_us: float
    excess_us: float            # above the boot's median
    covered_us: float           # by the windows open at the expiry
    running: str
    causes: list[Cause]         # the windows that explain it, longest cover first
    # unexplained: the window opened after the expiry that held it off longest
    after: Cause | None = None

    @property
    def explained(self):
        return bool(self.causes)


@dataclass
class BootSpikes:
    """One boot's wakeups, their median and threshold, and its spikes."""
    repeat: int
    wakeups: int
    median_ns: int | None
    threshold_ns: int | None
    spikes: list[Spike]


def quantile(sorted_values, q):
    """The nearest-rank q-quantile of sorted values."""
    return sorted_values[max(0, math.ceil(q * len(sorted_values)) - 1)]


def _window_class(h):
    lock = None if h.lock == "none" else h.lock
    return attribute.classify_stack(h.stack, h.kind, lock), attribute.call_site(h.stack)


def _longest_after(w, shift):
    """The window opened after w's expiry that overlaps most of its wait."""
    best = max(w.after, key=lambda h: min(h.end_insn, w.run_insn) - h.begin_insn, default=None)
    if best is None:
        return None
    cls, site = _window_class(best)
    return Cause(best.kind, cls, site,
                 ((min(best.end_insn, w.run_insn) - best.begin_insn) << shift) / 1000)


def boot_spikes(log, repeat, quantile_q=SPIKE_QUANTILE, cover=COVER):
    """The spikes of one boot's log, each with the windows that explain it."""
    if not log.wakeups:
        return BootSpikes(repeat, 0, None, None, [])
    ns = sorted(w.latency_ns for w in log.wakeups)
    median, threshold = quantile(ns, 0.5), quantile(ns, quantile_q)
    spikes = []
    for w in log.wakeups:
        if w.latency_ns <= threshold:
            continue
        excess = w.latency_ns - median
        covers = sorted(((w.covered_insns(h) << log.shift, h) for h in w.held),
                        key=lambda c: -c[0])
        causes = []
        for ns_covered, h in covers:
            if ns_covered >= cover * excess:
                cls, site = _window_class(h)
                causes.append(Cause(h.kind, cls, site, ns_covered / 1000))
        spikes.append(Spike(repeat, w.latency_ns / 1000, excess / 1000,
                            (covers[0][0] if covers else 0) / 1000, w.running, causes,
                            None if causes else _longest_after(w, log.shift)))
    return BootSpikes(repeat, len(ns), median, threshold, spikes)


@dataclass
class TimelineWindow:
    kind: str
    begin_ms: float
    end_ms: float
    window_class: str


@dataclass
class Timeline:
    """A stretch of one boot around its longest spike: every wakeup as
    (ms, latency us), and the windows open at their timers' expiries;
    ms on the guest's CLOCK_MONOTONIC from the stretch's start."""
    repeat: int
    start_ms: float
    samples: list[tuple[float, float]]
    spikes: list[tuple[float, float]]
    windows: list[TimelineWindow]


TIMELINE_SPAN_MS = 20.0


def timeline(log, boot, span_ms=TIMELINE_SPAN_MS):
    """The span_ms of the boot's log centred on its longest spike."""
    if not boot.spikes:
        return None
    worst = max(log.wakeups, key=lambda w: w.latency_ns)
    lo = worst.expires_ns / 1e6 - span_ms / 2
    hi = lo + span_ms
    samples, spikes, windows, seen = [], [], [], set()
    for w in log.wakeups:
        t = w.expires_ns / 1e6
        if not lo <= t <= hi:
            continue
        point = (t - lo, w.latency_ns / 1000)
        (spikes if w.latency_ns > boot.threshold_ns else samples).append(point)
        for h in w.held:
            if (h.kind, h.begin_insn) in seen:
                continue
            seen.add((h.kind, h.begin_insn))
            end = h.end_insn or w.clock_insn
            windows.append(TimelineWindow(
                h.kind, w.insn_ns(h.begin_insn, log.shift) / 1e6 - lo,
                w.insn_ns(end, log.shift) / 1e6 - lo, _window_class(h)[0]))
    return Timeline(boot.repeat, lo, samples, spikes, windows)
