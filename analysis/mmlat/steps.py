"""Each patch of a series (STEPS=each): every prefix of the patched side's
own patches ran as a variant of its own, and each step is compared with
the one before it, the first with the baseline, so that the report can say
which patch moved which endpoint.  The steps come from meta.json ("steps",
plan.model.Step), never from the variant names.

Built once from the loaded cells, with the headline's machinery
(endpoints.compare over each workload's primary endpoints, boot by boot),
into small dataclasses that the summary (model.Summary.steps) carries and
the renderers read, never the cells.  A step's comparisons get an interval,
no verdict: the gate (Holm over the report's family) is the headline's,
baseline against patched."""
from dataclasses import asdict, dataclass

from . import endpoints, load, stats


@dataclass
class Step:
    """One patch: the variant that adds it, the variant before it, the
    patch and its series directory, its place among the patched side's own
    patches (1 first), and per workload the ok boots of each kind of
    both and the comparison of each primary endpoint the run measured,
    previous step against this one."""
    variant: str
    previous: str
    patch: str
    series: str
    index: int
    boots: dict[str, dict[str, list[int]]]   # workload -> boot kind -> [previous, this]
    comparisons: dict[str, list[endpoints.Comparison]]   # by workload

    @property
    def title(self):
        """The patch's name without its suffix: 0001-mm-mmu_gather-rework."""
        return self.patch[:-len(".patch")] if self.patch.endswith(".patch") else self.patch


def _by_boot(run, w, previous, variant):
    """The ok boots of workload w of both steps, per boot kind: (previous,
    this); refused, as in the headline, across accelerators or configs."""
    by_boot = {boot: (load.ok_cells(run, previous, w, boot), load.ok_cells(run, variant, w, boot))
               for boot in load.BOOTS}
    for before, after in by_boot.values():
        for a in before:
            for b in after:
                stats.check_compatible(a["meta"], b["meta"], load.cell_name(a),
                                       load.cell_name(b), stats.compared_keys(run["meta"]))
    return by_boot


def _step(run, step, n_resamples, conf, seed):
    boots, comparisons = {}, {}
    figure_boot = load.figure_boot(run)
    for w in load.workloads(run):
        by_boot = _by_boot(run, w, step.previous, step.variant)
        boots[w] = {boot: [len(before), len(after)] for boot, (before, after) in by_boot.items()}
        comparisons[w] = [endpoints.compare(w, e, True, *by_boot[figure_boot[e.figure]],
                                            n_resamples, conf, seed)
                          for e in endpoints.primary(w)]
    return Step(**asdict(step), boots=boots, comparisons=comparisons)


def build(run, n_resamples=2000, conf=0.95, seed=1):
    """The steps meta.json records, in order, each compared with its
    previous step on every workload of the run.  An endpoint no step
    measured (TRACE=none has no windows) is left out of the workload's
    rows, as from the headline; one a step lacks keeps its row, without
    figures."""
    out = [_step(run, st, n_resamples, conf, seed) for st in run["record"].plan.steps]
    for w in load.workloads(run):
        measured = {c.endpoint for st in out for c in st.comparisons[w] if c.base or c.patched}
        for st in out:
            st.comparisons[w] = [c for c in st.comparisons[w] if c.endpoint in measured]
    return out
