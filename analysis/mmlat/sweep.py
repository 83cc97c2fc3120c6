"""Sweeps: one workload run over a list of values of one parameter (SWEEP,
plan.model.Sweep: imap:s=1,n=16,64,256 ran imap:s=1,n=16 and so on).
Built once from the loaded cells into small dataclasses, a row per variant
and value, that the summary (model.Summary.sweeps) carries and the
report's tables and the plot read, never the cells."""
from dataclasses import dataclass

from plan import workloads

from . import attribute, load, stats

# The windows a sweep shows: preempt-off, where a spinning lock's hold is
# a window (an irq-off window of these classes is rare and short).
TRACER = "preemptoff"
# The columns of a sweep: a label, the guest/classes.txt classes whose
# windows it pools, and the lock whose holds go beside them (None: gather
# is no lock).  PTE-lock windows pool every pte-lock-* row (zap, fork,
# other): what a sweep moves is the lock, wherever it was taken.
GROUPS = (("i_mmap-lock", ("i_mmap-lock",), "i_mmap"),
          ("anon_vma-lock", ("anon_vma-lock",), "anon_vma"),
          ("pte-lock", tuple(c for c in attribute.CLASSES if c.startswith("pte-lock-")), "pte"),
          ("mmu-gather", ("mmu-gather",), None))
LOCKS = tuple(lock for _, _, lock in GROUPS if lock)


@dataclass
class Figures:
    """p99 and max of one sample, in us; None without a sample."""
    p99: float | None = None
    max: float | None = None


@dataclass
class Row:
    """One variant at one value of the swept key: its windows per class
    group (GROUPS) and lock holds per lock from the traced boots, its
    throughput from the clean ones, and how many boots of each kind were
    ok (0: every figure of that kind is missing)."""
    variant: str
    value: int
    workload: str            # the WORKLOADS entry, the cell's name
    windows: dict[str, Figures]   # by group label
    holds: dict[str, Figures]     # by lock
    ops_per_s: float | None       # mean over the clean boots, None without one
    ok_boots: dict[str, int]      # by boot kind


@dataclass
class Sweep:
    name: str                # the workload
    key: str                 # the swept parameter
    fixed: dict[str, int]    # the other parameters, {key: value}
    values: list[int]        # the swept key's values, ascending
    variants: list[str]
    rows: list[Row]          # by value, then variant

    @property
    def title(self):
        """"imap over n (s=1)": what the report's section is called."""
        fixed = ", ".join("%s=%s" % kv for kv in sorted(self.fixed.items()))
        return "%s over %s%s" % (self.name, self.key, " (%s)" % fixed if fixed else "")

    @property
    def slug(self):
        """"imap_n_s1": the plot's file name, one per sweep."""
        return "_".join([self.name, self.key] + ["%s%s" % kv for kv in sorted(self.fixed.items())])

    def row(self, variant, value):
        return next(r for r in self.rows if r.variant == variant and r.value == value)


def _identity(name, key, fixed):
    return name, key, tuple(sorted(fixed.items()))


def find(run):
    """The run's sweeps as {(name, key, fixed items): {value: entry}}, in
    the order found: those meta.json records (SWEEP), then any set of two
    or more entries of one workload with the same keys that differ in one
    of them only (WORKLOADS="imap:n=16 imap:n=64").  One sweep found both
    ways, or declared twice, is one."""
    found = {}
    for sw in run["record"].plan.sweeps:
        values = found.setdefault(_identity(sw.name, sw.key, sw.fixed), {})
        values.update(zip(sw.values, sw.workloads))
    groups = {}
    for entry in load.workloads(run):
        name, params = workloads.parse_entry(entry)
        if params:
            groups.setdefault((name, tuple(sorted(params))), []).append((entry, params))
    for (name, keys), entries in groups.items():
        varying = [k for k in keys if len({p[k] for _, p in entries}) > 1]
        if len(entries) < 2 or len(varying) != 1:
            continue
        key = varying[0]
        fixed = {k: v for k, v in entries[0][1].items() if k != key}
        values = found.setdefault(_identity(name, key, fixed), {})
        for entry, params in entries:
            values.setdefault(params[key], entry)
    return found


def _figures(hist):
    st = stats.summarize_hist(hist)
    return Figures(st["p99"], st["max"])


def _row(run, variant, value, entry, figure_boot):
    traced = load.ok_cells(run, variant, entry, figure_boot["windows"])
    holds_from = load.ok_cells(run, variant, entry, figure_boot["locks"])
    clean = load.ok_cells(run, variant, entry, figure_boot["throughput"])
    windows = {label: _figures(stats.merge_hists(
        [c["windows"][TRACER]["by_class"].get(cls, {}) for c in traced for cls in classes]))
        for label, classes, _ in GROUPS}
    holds = {}
    for lock in LOCKS:
        hist = {}
        for c in holds_from:
            for site in (c["locks"] or {"sites": []})["sites"]:
                if site["lock"] == lock:
                    for ns, n in site["hist_ns"].items():
                        hist[ns / 1000.0] = hist.get(ns / 1000.0, 0) + n
        holds[lock] = _figures(hist)
    ops = [c["ops_per_s"] for c in clean if c["ops_per_s"] is not None]
    return Row(variant=variant, value=value, workload=entry, windows=windows, holds=holds,
               ops_per_s=sum(ops) / len(ops) if ops else None,
               ok_boots={"clean": len(clean), "traced": len(traced)})


def build(run, figure_boot):
    """Every sweep of the run (find) with a row per value and variant,
    each figure from the boot kind figure_boot names (load.figure_boot).
    Variants in meta.json's order (the order VARIANTS gave), every
    variant of the run, not only the two compared.  A value without ok
    boots, or a class without windows, has None figures."""
    ordered = [v for v in run["record"].plan.variant_names if v in load.variants(run)]
    variants = ordered + [v for v in load.variants(run) if v not in ordered]
    out = []
    for (name, key, fixed), entries in find(run).items():
        values = sorted(entries)
        out.append(Sweep(name=name, key=key, fixed=dict(fixed), values=values,
                         variants=variants,
                         rows=[_row(run, v, value, entries[value], figure_boot)
                               for value in values for v in variants]))
    return out
