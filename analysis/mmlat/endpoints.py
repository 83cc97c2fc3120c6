"""What the report compares, boot by boot: the endpoints, the primary ones
declared here up front (PRIMARY), and their comparison between the two
sides (Comparison).

The unit is the boot.  Each endpoint is one number per boot (cyclictest's
p99.9 of that clean boot, the longest i_mmap-lock window of that traced
boot, ...); the sides are compared on those numbers with Welch's t on
their logarithms (stats.welch_log, chosen by simulate.py), the primary
endpoints of every workload of the report form one family corrected with
Holm (stats.holm_worse: `make compare` is a gate), and every other
endpoint is exploratory: an interval, no verdict."""
from dataclasses import asdict, dataclass

import numpy as np

from . import stats

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
    def boot(self):
        return "clean" if self.kind in ("latency", "throughput") else "traced"

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

# The primary endpoints, per workload (its name before any ":"), declared
# before any run is seen: cyclictest p99.9 and max (clean boots), the
# longest window of the zap path and of each lock the series converts
# that the workload's code path reaches (traced boots), and throughput in
# pages (clean boots).  Every other endpoint is exploratory.  A workload
# not listed has LATENCY_AND_WORK.
LATENCY = ("cyclictest p99.9", "cyclictest max")
WORK = ("pages/s",)
LATENCY_AND_WORK = LATENCY + WORK
ZAP = ("zap-path window",)
PRIMARY = {
    # zap and gather of the unmapped range
    "munmap": LATENCY + ZAP + WORK,
    # the exits' zaps, and unlink_anon_vmas() under the anon_vma lock
    "exit": LATENCY + ("anon_vma-lock window",) + ZAP + WORK,
    # unmap_mapping_range() under the i_mmap lock, its zaps and gathers
    "truncate": LATENCY + ("i_mmap-lock window",) + ZAP + WORK,
    # anon_vma_fork() under the anon_vma lock, the children's exits
    "fork": LATENCY + ("anon_vma-lock window",) + ZAP + WORK,
    "mixed": LATENCY + ("i_mmap-lock window", "anon_vma-lock window") + ZAP + WORK,
    # the i_mmap fan-out: N vmas walked under the i_mmap lock, zapped
    "imap": LATENCY + ("i_mmap-lock window",) + ZAP + WORK,
    # rmap walks: anon_vma lock (anonymous pages), i_mmap lock (the file)
    "reclaim": LATENCY + ("i_mmap-lock window", "anon_vma-lock window") + WORK,
    # anon_vma_clone()/unlink_anon_vmas() over long chains, leaves' exits
    "anonchain": LATENCY + ("anon_vma-lock window",) + ZAP + WORK,
    # no workload, no throughput
    "idle": LATENCY,
}


def primary(workload):
    """The primary endpoints of a WORKLOADS entry (imap:n=256 is imap)."""
    return [ENDPOINTS[n] for n in PRIMARY.get(workload.partition(":")[0], LATENCY_AND_WORK)]


def exploratory(workload):
    """Every other endpoint of the workload."""
    first = {e.name for e in primary(workload)}
    return [e for e in ENDPOINTS.values() if e.name not in first]


# Verdicts of a primary endpoint; an exploratory one has none ("").
WORSE, BETTER, NO_CHANGE, NO_TEST = "worse", "better", "-", "n/a"


@dataclass
class Comparison:
    """One endpoint of one workload, baseline against patched: the
    per-boot values of each side (floored), the test's p and t (patched
    higher: t > 0; None without a test: fewer than 2 boots a side, or no
    spread between boots), the boot bootstrap interval of the difference
    of geometric means, and for a primary endpoint the verdict after Holm
    over the report's family."""
    workload: str
    endpoint: str            # a key of ENDPOINTS
    primary: bool
    base: list
    patched: list
    p: float = None
    t: float = None
    lo: float = None
    hi: float = None
    p_holm: float = None
    verdict: str = ""
    conf: float = 0.95

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
    def t_worse(self):
        """t oriented so that > 0 is worse (lower throughput is worse)."""
        if self.t is None:
            return None
        return self.t if self.spec.higher_is_worse else -self.t

    def as_dict(self):
        return asdict(self)

    @classmethod
    def from_dict(cls, d):
        return cls(**d)


def _none_if_nan(v):
    return None if v is None or np.isnan(v) else float(v)


def compare(workload, endpoint, is_primary, base_cells, patch_cells,
            n_resamples=2000, conf=0.95, seed=1):
    """A Comparison of endpoint between the ok boots of both sides (those
    of the endpoint's boot kind); the verdict is set by decide()."""
    base = [v for v in (endpoint.value(c) for c in base_cells) if v is not None]
    patched = [v for v in (endpoint.value(c) for c in patch_cells) if v is not None]
    c = Comparison(workload, endpoint.name, is_primary, base, patched, conf=conf)
    p, t = stats.welch_log(base, patched) if base and patched else (np.nan, np.nan)
    c.p, c.t = _none_if_nan(p), _none_if_nan(t)
    # no interval where there is no test: one boot, or boots without
    # spread, whose resamples all agree and would print [x, x]
    if c.p is not None:
        c.lo, c.hi = stats.boot_interval(base, patched, n_resamples, conf, seed)
    return c


def decide(comparisons, alpha=stats.ALPHA):
    """Set the verdict of every primary comparison, Holm over all of them
    (the whole report: one family); returns the family's size."""
    family = [c for c in comparisons if c.primary]
    if not family:
        return 0
    p = np.array([np.nan if c.p is None else c.p for c in family])
    t = np.array([np.nan if c.t is None else c.t_worse for c in family])
    adjusted = stats.holm(p)
    worse = stats.holm_worse(p, t, alpha)
    better = stats.holm_worse(p, -t, alpha)
    for c, adj, w, b in zip(family, adjusted, worse, better):
        c.p_holm = None if c.p is None else float(adj)
        c.verdict = (NO_TEST if c.p is None else WORSE if w else BETTER if b else NO_CHANGE)
    return len(family)


@dataclass
class Gate:
    """How the verdicts were reached, for the report's method line and
    `mmlat compare`."""
    test: str = "Welch t on log per-boot values"
    correction: str = "Holm"
    alpha: float = stats.ALPHA
    family: int = 0          # primary endpoints of the report
    interval: str = "boot bootstrap"
    conf: float = 0.95
    n_resamples: int = 2000
    seed: int = 1
