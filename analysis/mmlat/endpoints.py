"""What the report compares, boot by boot: the endpoints, the primary ones
declared up front (each workload's row of bench/plan/workloads.py names
them) with their margins (MARGIN, and OVERRIDES where a workload's spread
needs another), and their comparison between the two sides (Comparison).

The unit is the boot.  Each endpoint is one number per boot (cyclictest's
p99.9 of that clean boot, the longest i_mmap-lock window of that traced
boot, ...); the sides are compared on those numbers with Welch's t on
their logarithms, against the endpoint's margin, the primary endpoints of
every workload of the report forming one Holm family (sequential.py: the
verdict rule, `make compare` is a gate), and every other endpoint is
exploratory: an interval, no verdict."""
from dataclasses import dataclass, field

import numpy as np
from plan import model, workloads

from . import sequential, stats

# The classes of preempt-off windows the series is about (guest/classes.txt):
# the locks it makes sleeping and the zap path's PTE lock and gather.
SERIES_CLASSES = ("i_mmap-lock", "anon_vma-lock", "pte-lock-zap", "mmu-gather")
# The zap path's longest non-preemptible stretch, whichever opened it: in
# the baseline the PTE lock is taken inside the gather's window (class
# mmu-gather), in the port the gather is preemptible and the PTE lock
# opens its own (pte-lock-zap).  Compared class by class, each side would
# be measured against the other's floor.
ZAP_PATH_CLASSES = ("pte-lock-zap", "mmu-gather")
# The locks the series converts, whose holds it lengthens on purpose
# (preemptible now): their longest hold is shown, not gated on.
HOLD_LOCKS = ("i_mmap", "anon_vma")
# The windows the endpoints read: a spinning lock's hold is a preempt-off
# window; irq-off windows of these classes are rare and short.
TRACER = "preemptoff"
# Below these a per-boot value is read as the floor before its logarithm:
# cyclictest counts whole microseconds, and the window module keys windows
# of 5 us and longer only, so a boot without a keyed window of a class had
# none longer than that.
LATENCY_FLOOR_US = 1.0
WINDOW_FLOOR_US = 5.0
HOLD_FLOOR_US = 0.1
# A workload that did not finish one operation: 0 ops/s read as this.
THROUGHPUT_FLOOR = 1e-3


@dataclass(frozen=True)
class Endpoint:
    """One number per boot.  kind: latency (cyclictest, a statistic of
    stats.STAT_NAMES), window (the longest preempt-off window of any of
    the classes in of), hold (the longest hold of a lock, any mode and call
    site), throughput (of: the cell's rate, pages_per_s or ops_per_s)."""
    name: str                # the key of ENDPOINTS, the row in every table
    kind: str
    of: object               # statistic, classes (tuple), lock or rate key
    unit: str
    decimals: int            # the unit's precision in the tables
    higher_is_worse: bool
    floor: float

    @property
    def figure(self):
        """The report's figure it is one of (plan/instruments.py FIGURES),
        which names the boot kind it is read from."""
        return {"window": "windows", "hold": "locks"}.get(self.kind, self.kind)

    @property
    def margin_kind(self):
        """Its row of MARGIN: a boot's maximum is one sample, a percentile
        many."""
        if self.kind == "latency":
            return "cyclictest max" if self.of == "max" else "cyclictest percentile"
        return "throughput" if self.kind == "throughput" else "window or hold max"

    @property
    def covers(self):
        """What a window endpoint covers, for labels: its class, or the zap
        path; the name otherwise."""
        return self.name[:-len(" window")] if self.name.endswith(" window") else self.name

    def value(self, cell):
        """This endpoint of one loaded boot (load.load_cell), floored; None
        when the boot does not have it (no throughput line)."""
        if self.kind == "latency":
            v = stats.summarize_hist(cell["lat_hist"])[self.of]
        elif self.kind == "window":
            by_class = cell["windows"][TRACER]["by_class"]
            v = max(max(by_class.get(cls, {0: 0})) for cls in self.of)
        elif self.kind == "hold":
            sites = (cell.get("locks") or {}).get("sites", [])
            v = max([s["max_ns"] / 1000.0 for s in sites if s["lock"] == self.of] + [0])
        else:
            v = cell.get(self.of)
        return None if v is None else max(float(v), self.floor)


def _endpoints():
    out = [Endpoint("cyclictest " + st, "latency", st, "us", 0, True, LATENCY_FLOOR_US)
           for st in stats.PCT_NAMES + ["max"]]
    out += [Endpoint(cls + " window", "window", (cls,), "us", 1, True, WINDOW_FLOOR_US)
            for cls in SERIES_CLASSES]
    out.append(Endpoint("zap-path window", "window", ZAP_PATH_CLASSES, "us", 1, True,
                        WINDOW_FLOOR_US))
    out += [Endpoint(lock + " hold", "hold", lock, "us", 1, True, HOLD_FLOOR_US)
            for lock in HOLD_LOCKS + ("pte",)]
    # pages: work counted up to the stop, the operation in flight in part
    # (one munmap operation is 20 % of a traced boot's ops); ops/s stays
    # for drivers and runs without the pages line
    out.append(Endpoint("pages/s", "throughput", "pages_per_s", "pages/s", 0, False,
                        THROUGHPUT_FLOOR))
    out.append(Endpoint("ops/s", "throughput", "ops_per_s", "ops/s", 2, False,
                        THROUGHPUT_FLOOR))
    return {e.name: e for e in out}


ENDPOINTS = _endpoints()

# The smallest change that matters, per kind of primary endpoint: the
# margin of its verdict (sequential.py), a relative change (0.10: patched
# beyond 1.1 times the baseline or below 1/1.1 is "worse" or "better",
# within is "same").  Each is chosen against the between-boot spread the
# A/A study measured (results/aa-noise.json: sd of the log per-boot values
# of the default workloads), so that an unchanged endpoint is called
# "same" in 80 % of runs with at most REACHABLE_BOOTS boots a side at
# Holm's strictest level (sequential.boots_to_settle; the boots below are
# that figure, analysis/tests/test_endpoints.py checks every one).
MARGIN = {
    # A 10 % move of a 0.1-2 ms tail is the smallest the latency figures of
    # an mm series are argued over (the change REPEAT=10 was sized for);
    # p99.9 settles in 3 (munmap), 8 (exit) and 16 (fork) boots a side.
    # truncate's is out of reach (below).
    "cyclictest percentile": 0.10,
    # A boot's maximum is a single sample, noisier than a percentile of
    # many (fork: CV 8.8 % against p99.9's 6.2 %): 10 % would take fork 27
    # boots a side, 15 % takes 14 (munmap, exit, truncate 2-4).
    "cyclictest max": 0.15,
    # The longest window (or hold) of a class: 10 %, as latency; the zap
    # path settles in 2 (munmap) to 22 (truncate) boots a side, truncate's
    # i_mmap-lock window in 11.
    "window or hold max": 0.10,
    # pages/s varies 0.1-0.5 % between boots (7 times the 0.3 % another
    # machine reproduced): 2 % settles in 2-5 boots a side, where 1 % would
    # take exit 11.
    "throughput": 0.02,
}
# Boots a side a margin must settle in to be affordable: about an hour of
# boots for the default workloads on the 2-core machine (REPEAT=10: 160
# boots, 19 minutes); REPEAT=auto's budget.
REACHABLE_BOOTS = model.AUTO.budget


@dataclass(frozen=True)
class Margin:
    """A primary endpoint whose kind's margin is out of reach (REACHABLE_BOOTS)
    with a wider one that still separates what the series does; why says
    so."""
    endpoint: str
    margin: float
    why: str


@dataclass(frozen=True)
class Demoted:
    """An endpoint a workload's primary set would have, made exploratory:
    no margin that matters is in reach (why, with the A/A study's figure).
    The report lists it under the headline."""
    endpoint: str
    why: str


# A workload's primary endpoints are its row's (bench/plan/workloads.py),
# declared before any run is seen: cyclictest p99.9 and max (clean boots),
# the longest window of the zap path and of each lock the series converts
# that the workload's code path reaches (traced boots), and throughput in
# pages (clean boots).  Each has its kind's MARGIN, unless OVERRIDES gives
# the workload's endpoint a Margin of its own, or a Demoted one leaves it
# exploratory.  Every other endpoint is exploratory.
#
# The anon_vma-lock windows of exit and fork are short (40-80 us) and
# vary 34-44 % between boots: 10 % would take hundreds of boots a side.
# The series makes them vanish (under the 5 us floor, a factor 8-15), which
# a factor 2 still tells from noise, settled in 9 (exit) and 15 (fork).
SHORT_ANON_VMA = Margin("anon_vma-lock window", 1.0,
                        "short windows, CV 34-44 %: 10 % needs hundreds of boots, "
                        "a factor 2 settles in 9-15 and still tells a vanished one")
OVERRIDES = {
    "exit": (SHORT_ANON_VMA,),
    # truncate's p99.9 falls between its long and short windows
    "truncate": (Demoted("cyclictest p99.9",
                         "CV 24.6 %: p99.9 falls between truncate's long and short "
                         "windows and moves with the phase; 10 % needs over 200 boots "
                         "a side, 15 % 103"),),
    "fork": (SHORT_ANON_VMA,),
    # the i_mmap fan-out (measured at n=64, s=1)
    "imap": (Demoted("cyclictest p99.9", "CV 25.9 % (n=64): 10 % needs over 200 boots "
                     "a side, 15 % 103"),
             Demoted("cyclictest max", "CV 30.5 % (n=64): 15 % needs 122 boots a side"),
             Margin("zap-path window", 0.15, "CV 13 % (n=64): 10 % needs 59 boots a "
                    "side, 15 % 29; the port's zap windows are twice the baseline's")),
    # rmap walks (measured at k=4)
    "reclaim": (Margin("cyclictest p99.9", 0.15, "CV 10.2 % (k=4): 10 % needs 36 boots "
                       "a side, 15 % 18"),
                Demoted("pages/s", "CV 3.1 % (k=4; the passes of readers and leader "
                        "depend on what reclaim took): 2 % needs 87 boots a side, "
                        "3 % 40")),
}


def _entries(workload):
    """The workload's primary endpoints by name, or their override."""
    overrides = {x.endpoint: x for x in OVERRIDES.get(workload.partition(":")[0], ())}
    return [overrides.get(name, name) for name in workloads.primary(workload)]


def _name(entry):
    return entry if isinstance(entry, str) else entry.endpoint


def primary(workload):
    """The primary endpoints of a WORKLOADS entry (imap:n=256 is imap): the
    family its verdicts come from, demoted ones left out."""
    return [ENDPOINTS[_name(x)] for x in _entries(workload) if not isinstance(x, Demoted)]


def margin(workload, endpoint):
    """The margin of a primary endpoint (by name) of a workload."""
    for x in _entries(workload):
        if _name(x) == endpoint and not isinstance(x, Demoted):
            return x.margin if isinstance(x, Margin) else MARGIN[ENDPOINTS[endpoint].margin_kind]
    raise KeyError("%s is no primary endpoint of %s" % (endpoint, workload))


def demoted(workload):
    """The workload's Demoted entries: exploratory, and why."""
    return [x for x in _entries(workload) if isinstance(x, Demoted)]


def exploratory(workload):
    """Every other endpoint of the workload."""
    first = {e.name for e in primary(workload)}
    return [e for e in ENDPOINTS.values() if e.name not in first]


# The verdicts of a primary endpoint (sequential.py); an exploratory one
# has none ("").
WORSE, BETTER, SAME, INCONCLUSIVE, NO_TEST = (
    sequential.WORSE, sequential.BETTER, sequential.SAME_VERDICT, sequential.INCONCLUSIVE,
    sequential.NO_TEST)


@dataclass
class Comparison:
    """One endpoint of one workload, baseline against patched: the
    per-boot values of each side (floored) with their boots' repeat
    indices, the boot bootstrap interval of the difference of geometric
    means (lo, hi; none without a test: fewer than 2 boots a side, or no
    spread between boots), and for a primary endpoint its margin and, once
    decide() ran over the report's family, the verdict (sequential.py:
    better, worse, same, inconclusive, n/a), the look it was decided at,
    the one-sided level and the bounds of its decision interval of the
    relative change (dlo, dhi: patched / baseline - 1), and for an
    inconclusive one the boots a side that would likely settle it."""
    workload: str
    endpoint: str            # a key of ENDPOINTS
    primary: bool
    base: list[float]
    patched: list[float]
    base_repeats: list[int]
    patched_repeats: list[int]
    lo: float | None = None
    hi: float | None = None
    conf: float = 0.95
    margin: float | None = None
    verdict: str = ""
    look: int | None = None
    level: float | None = None
    dlo: float | None = None
    dhi: float | None = None
    settle_boots: int | None = None

    @property
    def spec(self):
        return ENDPOINTS[self.endpoint]

    @property
    def base_gmean(self):
        return stats.geometric_mean(self.base) if self.base else None

    @property
    def patched_gmean(self):
        return stats.geometric_mean(self.patched) if self.patched else None

    @property
    def delta(self):
        if self.base and self.patched:
            return self.patched_gmean - self.base_gmean
        return None

    @property
    def delta_pct(self):
        if self.base and self.patched:
            return 100.0 * (self.patched_gmean / self.base_gmean - 1)
        return None

    @property
    def more_boots(self):
        """Inconclusive: the boots a side to add (at least 1) that would
        likely settle it; None when out of reach or not inconclusive."""
        if self.verdict != sequential.INCONCLUSIVE or self.settle_boots is None:
            return None
        return max(1, self.settle_boots - min(len(self.base), len(self.patched)))

    def series(self, figure_boot):
        """The endpoint as the verdict rule reads it; figure_boot: the boot
        kind of each figure (load.figure_boot)."""
        return sequential.Series(self.workload, self.endpoint, figure_boot[self.spec.figure],
                                 self.margin,
                                 self.spec.higher_is_worse, self.base, self.patched,
                                 self.base_repeats, self.patched_repeats)


def compare(workload, endpoint, is_primary, base_cells, patch_cells,
            n_resamples=2000, conf=0.95, seed=1):
    """A Comparison of endpoint between the ok boots of both sides (those
    of the endpoint's boot kind), with its margin when primary; the
    verdict is set by decide()."""
    def values(cells):
        pairs = [(endpoint.value(c), c["repeat"]) for c in cells]
        return [v for v, _ in pairs if v is not None], [r for v, r in pairs if v is not None]
    base, base_reps = values(base_cells)
    patched, patched_reps = values(patch_cells)
    c = Comparison(workload, endpoint.name, is_primary, base, patched, base_reps, patched_reps,
                   conf=conf, margin=margin(workload, endpoint.name) if is_primary else None)
    # no interval where there is no test: one boot, or boots without
    # spread, whose resamples all agree and would print [x, x]
    testable = base and patched and not np.isnan(stats.welch_log_parts(base, patched)[0])
    if testable and n_resamples:
        c.lo, c.hi = stats.boot_interval(base, patched, n_resamples, conf, seed)
    return c


def looks_of(meta, comparisons):
    """The looks the verdicts replay: REPEAT=auto's, one after each round
    meta.json records (plan.model.Meta), else one last look over every
    repeat the comparisons have."""
    if meta.plan.repeat == "auto":
        return [sequential.Look(r.last, r.spent) for r in meta.plan.rounds]
    reps = [r for c in comparisons for r in c.base_repeats + c.patched_repeats]
    return [sequential.Look(max(reps, default=1), 1.0)]


def decide(comparisons, looks, figure_boot, alpha=stats.ALPHA,
           spending=sequential.DEFAULT_SPENDING):
    """Set the verdict of every primary comparison: one family over all of
    them (the whole report), decided after looks (looks_of); figure_boot:
    the boot kind of each figure, which another round boots for an open
    endpoint.  Returns the sequential.Round."""
    family = [c for c in comparisons if c.primary]
    rnd = sequential.decide([c.series(figure_boot) for c in family], looks, alpha, spending)
    for c, o in zip(family, rnd.outcomes):
        c.verdict, c.look, c.level, c.settle_boots = o.verdict, o.look, o.level, o.settle_boots
        c.dlo, c.dhi = o.lo, o.hi
    return rnd


@dataclass
class Gate:
    """How the verdicts were reached, for the report's method line and
    `mmlat compare`."""
    test: str = "Welch t on log per-boot values"
    claims: str = "beyond the margin (better, worse) or within it (same: TOST)"
    correction: str = "Holm"
    alpha: float = stats.ALPHA
    family: int = 0          # primary endpoints of the report
    looks: list[sequential.Look] = field(default_factory=list)   # one for a fixed REPEAT
    spending: str = sequential.DEFAULT_SPENDING   # with more than one look
    interval: str = "boot bootstrap"
    conf: float = 0.95
    n_resamples: int = 2000
    seed: int = 1
