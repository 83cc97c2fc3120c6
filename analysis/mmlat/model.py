"""The summary of a run: every figure the report, the plots, a posting and
the README's tables show, as typed records (summarize.py builds it once
from the loaded run; summary.json is its JSON form, plan/codec.py).

Renderers read this model only, never the cells.  Each figure names the
boot kind it comes from (Summary.figure_boot); "baseline" and "patched"
are the two sides compared (in A/A mode the odd and even repeats of one
variant).  Times are in us, lock holds in ns, as their headings say."""
import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from plan import codec

from . import endpoints, load, spikes, stats, steps, sweep

# summary.json's "format": changed with any field of these records, so
# that a summary written by other code is refused by name, not misread.
SUMMARY_FORMAT = 1
SIDES = ("baseline", "patched")
T = TypeVar("T")


class SummaryFormatError(ValueError):
    pass


@dataclass
class Sides(Generic[T]):
    """One figure of each compared side."""
    baseline: T
    patched: T

    def __getitem__(self, side):
        if side not in SIDES:
            raise KeyError(side)
        return getattr(self, side)

    def items(self):
        return [(side, self[side]) for side in SIDES]

    def values(self):
        return [self.baseline, self.patched]


@dataclass
class Band:
    """The 95 % band of a CCDF over boot resamples (stats.ccdf_band): at
    each value x, the interval lo..hi of P(X >= x)."""
    x: list[float]
    lo: list[float]
    hi: list[float]


@dataclass
class Distribution:
    """A sample kept as a histogram: its statistics (nearest-rank
    percentiles, stats.summarize_hist) and the histogram itself,
    [[value, count], ...] by value, from which the plots draw; band: the
    CCDF's boot bootstrap band, where one was computed."""
    count: int = 0
    min: float | None = None
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p99_9: float | None = None
    p99_99: float | None = None
    max: float | None = None
    hist: list[tuple[float, int]] = field(default_factory=list)
    band: Band | None = None

    @classmethod
    def of(cls, hist, **more):
        """The distribution of histogram {value: count}; more: the fields
        of a subclass, and band."""
        st = stats.summarize_hist(hist)
        return cls(**{stat_field(k): v for k, v in st.items()},
                   hist=[tuple(p) for p in stats.hist_pairs(hist)], **more)

    def stat(self, name):
        """A statistic by its stats.STAT_NAMES name (p99.9)."""
        return getattr(self, stat_field(name))

    def histogram(self):
        """{value: count}."""
        return {v: n for v, n in self.hist}


def stat_field(name):
    """The field of a statistic: p99.9 is p99_9."""
    return name.replace(".", "_")


@dataclass
class Range:
    min: float
    max: float


@dataclass
class Latency(Distribution):
    """cyclictest's samples of one side's clean boots, pooled; spread: the
    min and max of each statistic over the boots; overflows: samples
    beyond the histogram, counted at the thread's max."""
    spread: dict[str, Range | None] = field(default_factory=dict)
    overflows: int = 0


@dataclass
class Windows(Distribution):
    """Every window of one tracer in one side's traced boots; tracer_max:
    the max tracer's reading, where it ran; dropped: windows the hist
    triggers lost; lock_from_site: windows the module left untagged whose
    lock was read from their call site (load.window_lock)."""
    tracer_max: float | None = None
    dropped: int = 0
    lock_from_site: int = 0


@dataclass
class SiteFigures:
    """The windows of one call site on one side."""
    count: int
    p99: float | None
    max: float | None
    total_us: float


@dataclass
class WindowSite:
    """A call site (opener <- caller) and its class, both sides."""
    window_class: str
    site: str
    figures: Sides[SiteFigures]


@dataclass
class OtherShare:
    """Of the window time in windows over over_us, what was left in class
    "other", on one side (share None without such windows)."""
    total_us: float
    other_us: float
    share: float | None


@dataclass
class TracerWindows:
    """One tracer's windows (preemptoff or irqsoff): overall, per class
    (guest/classes.txt order), per call site (longest first, SITES_KEPT),
    and the unattributed share against its goal."""
    overall: Sides[Windows]
    classes: dict[str, Sides[Distribution]]
    sites: list[WindowSite]
    other_over_us: float
    other_goal: float
    other_share: Sides[OtherShare]

    def longest_classes(self):
        """The classes, longest window first."""
        return sorted(self.classes.items(),
                      key=lambda kv: -max(d.max or 0 for d in kv[1].values()))


@dataclass
class AttributionCheck:
    """A traced boot's longest window of one tracer: its class from the
    module's record (stack at open and lock) and from the kernel's stack
    at its end (load.max_window); agree None when a stack is missing."""
    side: str
    variant: str
    repeat: int
    tracer: str
    us: float
    lock: str | None
    lock_from_site: bool
    open_class: str | None
    end_class: str | None
    open_site: str | None
    end_site: str | None
    agree: bool | None
    open_stack: list[str]
    end_stack: list[str]


@dataclass
class HoldFigures(Distribution):
    """Hold times (ns) of some lock holds, with how many slept (holder
    switched out), their waits (lock:contention_begin/end) and the longest
    wait."""
    slept: int = 0
    waits: int = 0
    wait_total_ns: float = 0
    wait_max_ns: float = 0


@dataclass
class ModeHolds(HoldFigures):
    """The holds of one lock in one mode (spin, mutex, rwsem-write,
    rwsem-read); preemptible: whether the holder may be preempted."""
    mode: str = ""
    preemptible: bool = False


@dataclass
class SiteHolds(HoldFigures):
    """The holds of one lock taken in one function (no histogram), and the
    modes it took it in."""
    modes: list[str] = field(default_factory=list)


@dataclass
class LockSite:
    func: str
    hold_class: str | None
    holds: Sides[SiteHolds]


@dataclass
class LockHolds:
    """Lock hold times of the traced boots (TRACE=windows, locks.py): per
    lock its holds by mode, per hold class, and per function that took
    it, longest hold first; boots: traced boots with lock data."""
    method: str
    boots: Sides[int]
    by_mode: dict[str, Sides[list[ModeHolds]]]
    classes: dict[str, Sides[Distribution]]
    sites: dict[str, list[LockSite]]

    def longest_holder(self, lock, side, mode):
        """The function that held lock longest in mode on side, or None."""
        holders = [s for s in self.sites.get(lock, []) if mode in s.holds[side].modes]
        return max(holders, key=lambda s: s.holds[side].max or 0, default=None)

    def longest_holders(self, lock):
        """The functions that are some side's and mode's longest holder."""
        found = [self.longest_holder(lock, side, m.mode)
                 for side, rows in self.by_mode.get(lock, Sides([], [])).items() for m in rows]
        return [s for s in self.sites.get(lock, []) if s in found]


@dataclass
class BootCounters:
    repeat: int
    counts: load.TracerCounters


@dataclass
class ModuleCounters:
    """The window module's loss and error counts, summed over one side's
    traced boots, and per boot."""
    total: load.TracerCounters
    per_boot: list[BootCounters]


@dataclass
class Throughput:
    """ops/s of one side's clean boots: their mean, and each boot's."""
    mean: float | None
    per_repeat: list[float]


@dataclass
class TracedOverClean:
    """traced ops/s over clean ops/s of each repeat with both boots ok,
    and their median: what the instrumentation costs the workload."""
    median: float | None
    per_repeat: list[tuple[int, float]]


@dataclass
class Spikes:
    """The latency spikes of one side's boots (spikes.py): wakeups above
    each boot's p99.9, how many a window open at the timer's expiry
    explains, by the class of the window that covers most of it, and the
    ones none explains.  Only the QEMU plugin gives per-wakeup records."""
    boots: int
    wakeups: int
    spikes: int
    explained: int
    by_class: dict[str, int]
    median_us: Range | None
    threshold_us: Range | None
    unexplained: list[spikes.Spike]
    timeline: spikes.Timeline | None = None

    @property
    def share(self):
        return self.explained / self.spikes if self.spikes else None


@dataclass
class Workload:
    """One WORKLOADS entry, both sides: boots: the ok boots compared per
    kind; comparisons: every endpoint measured, primary ones first, with
    the verdicts of the primary ones (one family over the report)."""
    name: str
    boots: dict[str, Sides[int]]
    latency: Sides[Latency]
    throughput: Sides[Throughput]
    traced_over_clean: Sides[TracedOverClean]
    counters: Sides[ModuleCounters | None]
    windows: dict[str, TracerWindows]
    attribution: list[AttributionCheck]
    locks: LockHolds | None
    calib: Sides[list[str]]
    comparisons: list[endpoints.Comparison]
    spikes: Sides[Spikes | None] = field(default_factory=lambda: Sides(None, None))

    def primary(self):
        return [c for c in self.comparisons if c.primary]

    def comparison(self, endpoint):
        """The comparison of endpoint, None where the workload has none (no
        boot of it ended well)."""
        return next((c for c in self.comparisons if c.endpoint == endpoint), None)


@dataclass
class Boot:
    """A boot of the run and how it ended; cause: why it failed; what ran
    it (cell.json): the executor, its job id and the device (a host, or a
    LAVA device)."""
    variant: str
    workload: str
    boot: str
    repeat: int
    status: str
    cause: str | None
    executor: str = "local"
    job_id: str = ""
    device: str = ""


@dataclass
class Fit:
    """reading = a * length + b over a kind's injected windows
    (calibrate.fit); a None without two lengths."""
    a: float | None
    b_us: float | None
    n: int
    max_residual_us: float | None


@dataclass
class Calibration:
    """What the header states of the run's calibration: meta.json's CALIB
    and TRACE; whether calibration.json exists (checked), and from it ok,
    every cell's failures and the fits {variant: {workload: {kind: Fit}}}
    of the compared variants (baseline first)."""
    request: str | None
    trace: str | None
    variants: list[str]
    checked: bool = False
    ok: bool | None = None
    failures: list[str] = field(default_factory=list)
    fits: dict[str, dict[str, dict[str, Fit]]] = field(default_factory=dict)


@dataclass
class ConfigOption:
    option: str
    values: list[str]
    from_fragment: bool


@dataclass
class ConfigDiff:
    """The options that matter for latency and differ between the compared
    kernels' configs (CROSS=yes, configdiff.py), and how many others."""
    variants: list[str]
    options: list[ConfigOption]
    other_differences: int


@dataclass
class SourcePackage:
    package: str
    version: str
    suite: str | None = None


@dataclass
class Kernel:
    """A compared variant's kernel (kernels/<variant>/build.json): its
    series directories in order, release, source (a Debian package, or a
    git tree's ref and commit), hashes, and its preemption model (from the
    run's copy of its config: PREEMPT, PREEMPT_RT, ...)."""
    series: list[str] = field(default_factory=list)
    series_sha256: str | None = None
    kernel_release: str | None = None
    kernel_version: str | None = None
    source: str | None = None
    source_package: SourcePackage | None = None
    ref: str | None = None
    commit: str | None = None
    describe: str | None = None
    ksrc: str | None = None
    config_sha256: str | None = None
    preemption: str | None = None

    @classmethod
    def from_build(cls, build, preemption=None):
        """The fields of a build.json that describe the kernel (of its
        source package: name, version and suite)."""
        doc = _known(cls, build)
        if doc.get("source_package"):
            doc["source_package"] = _known(SourcePackage, doc["source_package"])
        return codec.from_json(cls, dict(doc, preemption=preemption), "build.json")


def _known(cls, doc):
    """The keys of doc that are fields of the record cls."""
    return {k: v for k, v in doc.items() if k in cls.__dataclass_fields__}


@dataclass
class RunInfo:
    """What meta.json says of the run and how it ran.  mmlat_commit:
    mmlat's own commit, where meta.json records it; knobs: every knob as
    requested."""
    run_id: str | None = None
    started: str | None = None
    kernel_version: str | None = None
    accel: str | None = None
    smp: int | None = None
    qemu: str | None = None
    icount_shift: int | None = None
    duration_s: float | None = None
    repeat: int | str | None = None
    trace: str | None = None
    boots: list[str] = field(default_factory=list)
    config_sha256: str | None = None
    configs: dict[str, str] = field(default_factory=dict)
    untested: dict[str, str] = field(default_factory=dict)
    calib: str | None = None
    variants: list[str] = field(default_factory=list)
    knobs: dict[str, str] = field(default_factory=dict)
    tools: str | None = None
    host_cpu: str | None = None
    mmlat_commit: str | None = None

    @classmethod
    def of(cls, meta):
        """What the report states of a run's meta.json (plan.model.Meta,
        records.py); config_sha256: the first variant's config."""
        plan = meta.plan
        shift = meta.knobs.get("ICOUNT_SHIFT")
        return cls(run_id=plan.run_id, started=meta.started, kernel_version=meta.kernel_version,
                   accel=meta.accel, smp=meta.smp, qemu=meta.qemu,
                   icount_shift=int(shift) if shift else None, duration_s=plan.duration_s,
                   repeat=plan.repeat, trace=plan.trace, boots=list(plan.boots),
                   config_sha256=meta.configs.get(plan.variant_names[0]),
                   configs=dict(meta.configs), untested=dict(meta.untested),
                   calib=plan.calibration.request if plan.calibration else None,
                   variants=plan.variant_names, knobs=dict(meta.knobs), tools=meta.tools,
                   host_cpu=meta.host_cpu, mmlat_commit=meta.mmlat_commit or None)


@dataclass
class Summary:
    """A run's report, baseline against patched (A/A: odd against even
    repeats of one variant).  workloads in the run's order (a parameter's
    values as numbers); plots: the PNG names written beside it."""
    format: int
    run_dir: str
    run: RunInfo
    baseline: str
    patched: str
    aa_mode: bool
    figure_boot: dict[str, str]
    kernels: dict[str, Kernel]
    boots: list[Boot]
    calibration: Calibration
    config_diff: ConfigDiff | None
    gate: endpoints.Gate
    workloads: list[Workload]
    sweeps: list[sweep.Sweep]
    steps: list[steps.Step]
    plots: list[str] = field(default_factory=list)
    compact: bool = False

    def workload(self, name):
        return next(w for w in self.workloads if w.name == name)

    def primary(self):
        """Every primary comparison of the report, workload by workload."""
        return [c for w in self.workloads for c in w.primary()]

    def worse(self):
        """The primary endpoints whose verdict is worse: what `make
        compare` fails on."""
        return [c for c in self.primary() if c.verdict == endpoints.WORSE]

    def failed_boots(self):
        return [b for b in self.boots if b.status != "ok"]

    def side_labels(self):
        """What the two sides are called; A/A splits one variant's
        repeats."""
        if self.aa_mode:
            return Sides(self.baseline + " odd", self.patched + " even")
        return Sides(self.baseline, self.patched)

    def short_labels(self):
        """The sides in narrow columns: the variant names without what they
        share (distinct_tails), odd and even in A/A (where both sides are
        one variant)."""
        if self.aa_mode:
            return Sides("odd", "even")
        tails = distinct_tails([self.baseline, self.patched])
        return Sides(tails[self.baseline], tails[self.patched])


def distinct_tails(names):
    """Each name without the prefix all share up to a "-" (mainline-6.12
    and mainline-7.3 are 6.12 and 7.3), so narrow columns keep what tells
    them apart; the names themselves when nothing is shared or a name
    would be left empty."""
    shared = os.path.commonprefix(list(names))
    cut = shared.rfind("-") + 1
    if len(set(names)) < 2 or not cut or any(len(n) == cut for n in names):
        return {n: n for n in names}
    return {n: n[cut:] for n in names}


# Call sites a compact summary keeps: of each tracer's windows, and of
# each lock's holders (both longest first), enough to name the code behind
# the longest windows and holds in the README.
COMPACT_WINDOW_SITES = 6
COMPACT_LOCK_SITES = 3


def compact(summary):
    """The summary reduced to the figures of the README's tables (tens of
    KB, results/summaries/): the run, its kernels, calibration and gate,
    per workload its boots, its primary comparisons, its latency, windows
    and lock holds by mode (statistics, no histograms), the longest call
    sites of each, the sweeps and the steps.  Its other lists are empty
    (boots: the failed ones only; no classes, counters or attribution),
    so the renderers of report.txt, the plots and a posting refuse it
    (require_full)."""
    def bare(d):
        return dataclasses.replace(d, hist=[], band=None)

    def bare_spikes(s):
        return s and dataclasses.replace(s, unexplained=[], timeline=None)

    def bare_latency(d):
        return dataclasses.replace(bare(d), spread={})

    def windows(t):
        return dataclasses.replace(t, overall=Sides(*map(bare, t.overall.values())),
                                   classes={}, sites=t.sites[:COMPACT_WINDOW_SITES])

    def kept_sites(h, lock):
        holders = h.longest_holders(lock)
        return [s for i, s in enumerate(h.sites[lock]) if i < COMPACT_LOCK_SITES or s in holders]

    def locks(h):
        if h is None:
            return None
        return dataclasses.replace(
            h, by_mode={lock: Sides(*([bare(m) for m in modes] for modes in sides.values()))
                        for lock, sides in h.by_mode.items()},
            classes={}, sites={lock: kept_sites(h, lock) for lock in h.sites})
    workloads = [dataclasses.replace(
        w, latency=Sides(*map(bare_latency, w.latency.values())),
        throughput=Sides(*(dataclasses.replace(t, per_repeat=[])
                           for t in w.throughput.values())),
        traced_over_clean=Sides(*(dataclasses.replace(t, per_repeat=[])
                                  for t in w.traced_over_clean.values())),
        counters=Sides(None, None), windows={k: windows(t) for k, t in w.windows.items()},
        attribution=[], locks=locks(w.locks), calib=Sides([], []), comparisons=w.primary(),
        spikes=Sides(*map(bare_spikes, w.spikes.values())))
        for w in summary.workloads]
    return dataclasses.replace(summary, workloads=workloads, boots=summary.failed_boots(),
                               compact=True)


def require_full(summary, what):
    """Refuse a compact summary to a renderer that needs its samples."""
    if summary.compact:
        raise SummaryFormatError("%s needs the full summary.json of `mmlat report`, not a "
                                 "compact one (no histograms)" % what)


def to_json(summary):
    return codec.to_json(summary)


def from_json(doc, where="summary.json"):
    """A Summary from its JSON form; refused, naming both, when another
    format wrote it."""
    if not isinstance(doc, dict) or doc.get("format") != SUMMARY_FORMAT:
        found = doc.get("format") if isinstance(doc, dict) else None
        raise SummaryFormatError(
            "%s: summary format %s, this analysis reads format %d: rewrite it with "
            "`mmlat report` from the run" % (where, found, SUMMARY_FORMAT))
    return codec.from_json(Summary, doc, where)


def write(summary, path):
    """summary.json; a compact summary on one line a workload (its file
    is committed, diffs stay readable)."""
    with open(path, "w", encoding="utf-8") as f:
        if summary.compact:
            f.write(compact_json(to_json(summary)))
        else:
            json.dump(to_json(summary), f, indent=1)
        f.write("\n")


def compact_json(doc):
    """JSON with a line per top-level field and per workload, sweep and
    step."""
    lines = []
    for key, value in doc.items():
        if isinstance(value, list) and value:
            lines.append("%s: [\n  %s]" % (json.dumps(key), ",\n  ".join(
                json.dumps(v, separators=(",", ":")) for v in value)))
        else:
            lines.append("%s: %s" % (json.dumps(key), json.dumps(value, separators=(",", ":"))))
    return "{" + ",\n".join(lines) + "}"


def read(path):
    with open(path, encoding="utf-8") as f:
        return from_json(json.load(f), path)
