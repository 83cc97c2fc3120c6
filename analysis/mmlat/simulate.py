"""How often the verdicts are wrong, and how often they are right, by
simulation: runs of per-boot values drawn with each primary endpoint's
measured between-boot spread (the A/A study, results/aa-noise.json) and a
true change given in multiples of its margin, decided exactly as the
report and `make compare` decide (sequential.py: Welch on logs against the
margin, Holm over the family, one look for a fixed REPEAT or REPEAT=auto's
looks with alpha spending).

Per-boot values are lognormal with the measured sd of the logs, or
Frechet (the law of a maximum) with the same sd of the logs.  A true
change of s margins is log(patched / baseline) = s log(1 + margin),
patched worse.  A change exactly at the margin matters (the margin is the
smallest change that does): there "worse" is right and "same" wrong.
Errors, family-wise (any endpoint of a run):

* false difference: "worse" or "better" where the change is inside the
  margin (|s| < 1), or "better" where it is worse;
* false same: "same" where the change is at or beyond the margin.

The figures the README and analysis/README.md state come from
`PYTHONPATH=analysis /usr/bin/python3 -m mmlat.simulate` (tables()), and
analysis/tests/test_simulate.py guards them.

Why Welch on logs and not a permutation test: with 5 boots a side a
permutation test has 252 splits, its smallest two-sided p 2/252 = 0.0079,
above Holm's first level for 18 endpoints (0.05/18 = 0.0028): at 5 boots
a side it could decide nothing (test_stats.py).  Welch's p is continuous.
"""
import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from plan.model import AUTO as REPEAT_AUTO

from . import endpoints, sequential, stats

AA_STUDY = os.path.join(os.path.dirname(__file__), "..", "..", "results", "aa-noise.json")
MODELS = ("lognormal", "frechet")
# The study's name of each endpoint the report compares: the zap path's
# window is the baseline's mmu-gather (its variant has no pte-lock-zap
# window).
STUDY_NAME = {"zap-path window": "window max, mmu-gather"}


@dataclass(frozen=True)
class Measured:
    """A primary endpoint of the default workloads with the A/A study's
    between-boot spread: sd of the log per-boot values, and the CV."""
    workload: str
    endpoint: str
    sd_log: float
    cv: float
    margin: float

    @property
    def name(self):
        return "%s %s" % (self.workload, self.endpoint)


def study_entry(study, workload, endpoint):
    """The A/A study's figures for an endpoint of a workload (as the study
    names it: imap:s=1,n=64)."""
    e = endpoints.ENDPOINTS[endpoint]
    name = STUDY_NAME.get(endpoint) or ("window max, " + e.covers
                                        if e.kind == "window" else endpoint)
    return study["workloads"][workload]["endpoints"][name]


def load_study(path=AA_STUDY):
    with open(path) as f:
        return json.load(f)


def measured(workloads, path=AA_STUDY):
    """The primary endpoints of these workloads (endpoints.primary's
    order), each with its margin and the spread the A/A study measured."""
    study = load_study(path)
    out = []
    for w in workloads:
        for e in endpoints.primary(w):
            m = study_entry(study, w, e.name)
            out.append(Measured(w, e.name, m["sd_log"], m["cv"], endpoints.margin(w, e.name)))
    return out


def boots_to_settle(family):
    """Per endpoint of the family, the boots a side with which it is called
    "same" in 80 % of runs when nothing changed, at Holm's strictest level
    over the family (sequential.boots_to_settle); None when even
    sequential.SETTLE_MOST do not."""
    level = stats.ALPHA / len(family)
    return [sequential.boots_to_settle(0.0, f.sd_log, f.sd_log, math.log1p(f.margin), level)
            for f in family]


def draw(rng, model, sd_log, shape):
    """Per-boot values (shape: runs, endpoints, boots) whose logarithms have
    the sd sd_log (one per endpoint): lognormal, or Frechet, whose log is
    a Gumbel of sd pi / (shape sqrt 6)."""
    sd = np.asarray(sd_log, dtype=float)[:, None]
    if model == "lognormal":
        return np.exp(rng.normal(0.0, 1.0, shape) * sd)
    if model == "frechet":
        a = math.pi / (sd * math.sqrt(6))
        return (-np.log(rng.random(shape))) ** (-1 / a)
    raise ValueError("model %r: one of %s" % (model, ", ".join(MODELS)))


@lru_cache(maxsize=32)
def _levels(repeats, spent, m, alpha, spending):
    return sequential.level_table(list(repeats), list(spent), alpha, m, spending)


@dataclass
class Rates:
    """Of n_runs simulated runs with a true change of `shift` margins on
    every endpoint: the family-wise error rates, the share of each verdict
    per endpoint (in family order), the share of endpoints and of runs with
    every verdict right, and the boots a side the runs stopped at (a fixed
    REPEAT: always REPEAT)."""
    shift: float
    n_runs: int
    false_difference: float
    false_same: float
    worse: list
    better: list
    same: list
    inconclusive: list
    right: float
    all_right: float
    mean_boots: float
    boots_quartiles: tuple

    def right_of(self, i):
        """The share of runs in which endpoint i's verdict was right."""
        if abs(self.shift) < 1:
            return self.same[i]
        return self.worse[i] if self.shift > 0 else self.better[i]


def rates(family, repeats, spent, shift=0.0, n_runs=2000, model="lognormal",
          alpha=stats.ALPHA, spending=sequential.DEFAULT_SPENDING, seed=0):
    """Simulate n_runs runs of the family ([Measured]) decided after looks
    at `repeats` boots a side with `spent` of the budget used (a fixed
    REPEAT: [REPEAT], [1]; REPEAT=auto: its rounds), every endpoint's
    patched side worse by shift margins; a run stops at the first look
    where every endpoint is decided."""
    m, n_max = len(family), repeats[-1]
    rng = np.random.default_rng(seed)
    sd = [f.sd_log for f in family]
    log_margin = np.array([math.log1p(f.margin) for f in family])
    base = draw(rng, model, sd, (n_runs, m, n_max))
    patched = draw(rng, model, sd, (n_runs, m, n_max)) * np.exp(shift * log_margin)[:, None]
    claim = np.zeros((n_runs, len(repeats), m), dtype=int)
    claim_p = np.zeros((n_runs, len(repeats), m))
    for k, n in enumerate(repeats):
        d, se, df = stats.welch_log_parts(base[..., :n], patched[..., :n])
        claim[:, k], claim_p[:, k] = sequential.claims(*stats.margin_tests(d, se, df, log_margin))
    levels = _levels(tuple(repeats), tuple(spent), m, alpha, spending)
    decided_at, _ = sequential.holm_looks(claim_p, levels)
    runs = np.arange(n_runs)[:, None]
    final = np.where(decided_at >= 0, claim[runs, np.maximum(decided_at, 0),
                                            np.arange(m)[None, :]], -1)
    higher, lower, same = (final == sequential.HIGHER, final == sequential.LOWER,
                           final == sequential.SAME)
    if abs(shift) < 1:
        false_difference, false_same, right = higher | lower, np.zeros_like(same), same
    else:
        wrong_way, right_way = (lower, higher) if shift > 0 else (higher, lower)
        false_difference, false_same, right = wrong_way, same, right_way
    stop = np.where((decided_at >= 0).all(axis=1), decided_at.max(axis=1), len(repeats) - 1)
    boots = np.asarray(repeats)[stop]
    return Rates(shift=shift, n_runs=n_runs,
                 false_difference=float(false_difference.any(axis=1).mean()),
                 false_same=float(false_same.any(axis=1).mean()),
                 worse=higher.mean(axis=0).tolist(), better=lower.mean(axis=0).tolist(),
                 same=same.mean(axis=0).tolist(), inconclusive=(final < 0).mean(axis=0).tolist(),
                 right=float(right.mean()), all_right=float(right.all(axis=1).mean()),
                 mean_boots=float(boots.mean()),
                 boots_quartiles=tuple(int(q) for q in np.percentile(boots, [25, 50, 75])))


def fixed(repeat):
    """The looks of a fixed REPEAT: one, the budget spent."""
    return [repeat], [1.0]


def rounds(first, step, budget):
    """REPEAT=auto's looks: `first` repeats, then `step` more a round, up to
    `budget` repeats (the last look spends the budget)."""
    reps = list(range(first, budget, step)) + [budget]
    return reps, [r / budget for r in reps]


# REPEAT=auto as the orchestrator runs it (plan.model.AUTO): a first look at
# 6 repeats, 2 more a round, at most 30 (endpoints.REACHABLE_BOOTS).
AUTO = (REPEAT_AUTO.first, REPEAT_AUTO.step, REPEAT_AUTO.budget)


# Changes the tables show, in margins: none, half, just inside (the worst
# case for a false "worse"), at the margin (for a false "same"), twice.
SHIFTS = (0.0, 0.5, 0.99, 1.0, 2.0)
# Runs a row: more where an error rate near 5 % is read (standard error
# 0.15 points), fewer for the power.
RUNS_ERROR, RUNS_POWER = 20000, 4000


def tables(workloads=("munmap", "exit", "truncate", "fork"), repeat=10):
    """The tables the READMEs quote, as text."""
    family = measured(workloads)

    def runs(shift):
        return RUNS_ERROR if shift in (0.99, 1.0) else RUNS_POWER
    head = ("  change  %-23s  false diff  false same  right  all right  boots a side"
            % "rule")
    row = "  %5gm  %-23s  %10.4f  %10.4f  %5.3f  %9.3f  %4.1f (%d/%d/%d)"
    out = ["Fixed REPEAT=%d, the %d primary endpoints of %s with the measured spreads; "
           "%d runs a row (%d at 0.99m and 1m):"
           % (repeat, len(family), " ".join(workloads), RUNS_POWER, RUNS_ERROR), head]
    fixed_rates = {}
    for model in MODELS:
        for s in SHIFTS:
            r = rates(family, *fixed(repeat), shift=s, n_runs=runs(s), model=model)
            fixed_rates[model, s] = r
            out.append(row % (s, "REPEAT=%d, %s" % (repeat, model), r.false_difference,
                              r.false_same, r.right, r.all_right, r.mean_boots,
                              *r.boots_quartiles))
    shown = (0.0, 0.5, 1.0, 2.0)
    out += ["", "Right verdict per endpoint at REPEAT=%d (lognormal; same at 0 and m/2, "
            "worse at m and 2m):" % repeat,
            "  %-30s %6s %6s" % ("endpoint", "sd log", "margin")
            + "".join(" %5s" % ("%gm" % s) for s in shown)]
    for i, f in enumerate(family):
        out.append("  %-30s %6.3f %6g" % (f.name, f.sd_log, f.margin) + "".join(
            " %5.2f" % fixed_rates["lognormal", s].right_of(i) for s in shown))
    first, step, budget = AUTO
    out += ["", "REPEAT=auto (a look at %d repeats, then every %d more, budget %d) against "
            "REPEAT=%d, lognormal:" % (first, step, budget, repeat), head]
    for s in SHIFTS:
        for label, looks, spending in (
                ("REPEAT=%d" % repeat, fixed(repeat), sequential.DEFAULT_SPENDING),
                ("auto, Pocock", rounds(first, step, budget), "pocock"),
                ("auto, O'Brien-Fleming", rounds(first, step, budget), "obrien-fleming")):
            r = rates(family, *looks, shift=s, n_runs=runs(s), spending=spending)
            out.append(row % (s, label, r.false_difference, r.false_same, r.right,
                              r.all_right, r.mean_boots, *r.boots_quartiles))
    return "\n".join(out)


if __name__ == "__main__":
    print(tables())
