"""How often the compare gate calls an A/A difference worse, and how often
it sees a real one: data sets of per-boot values drawn with a given
between-boot CV, compared endpoint by endpoint and corrected with Holm
over the whole family, exactly as `mmlat compare` decides
(stats.holm_worse).

Which test: stats.welch_log (Welch's t on log values), chosen by
gate_rates() over stats.permutation_log.  With 5 boots a side a
permutation test has 252 splits, so its smallest two-sided p is 2/252 =
0.0079, above Holm's first threshold 0.05/19 = 0.0026 for the 19 primary
endpoints of the default workloads: at REPEAT=5 it can never call
anything (a permutation test needs 7 boots a side, 2/3432, before it
can).  Welch's p is continuous.  Simulated with 19 endpoints and
per-boot values lognormal, or Frechet (the law of a maximum) with the
same CV; 4000 data sets (permutation: 1000), seed 0:

    boots a side                 2      3      5      8     10     20
    gate false-positive rate (any endpoint called worse, A/A):
      Welch, lognormal       0.006  0.010  0.015  0.019  0.020  0.021
      Welch, Frechet         0.008  0.010  0.013  0.014  0.014  0.018
      permutation            0      0      0      0.025  0.027  -
    power (one endpoint 10 % higher, called worse):
      Welch, CV 5 %, lognormal   0.003  0.02   0.16   0.55   0.75   1.00
      Welch, CV 5 %, Frechet     0.006  0.03   0.23   0.61   0.77   0.99
      permutation, CV 5 %        0      0      0      0.57   0.74   -
      Welch, CV 15 %, lognormal  0.001  0.001  0.013  0.02   0.04   0.13

Welch keeps the family-wise rate below 5 % under both laws (on logs it
is scale free: the A/A rate does not depend on the CV) and has the
permutation test's power where both can decide, and some where the
permutation test has none.  Power needs boots: at REPEAT=5 a 10 % change
is found in 16-23 % of runs at a CV of 5 % and in about 1 % at 15 %;
80 % power takes 12 boots a side at a CV of 5 % and about 72 at 15 %
(boots_for_power).  analysis/tests/test_simulate.py guards these.
"""
import json
import math
import os
from dataclasses import dataclass

import numpy as np

from . import stats

# Between-boot coefficient of variation of a primary endpoint's per-boot
# value, two round bounds for tests that need one CV.  The A/A study
# (results/aa-noise.json, 20 seeded boots a workload) measured, over the
# 19 primary endpoints of the default workloads, 0.1-8.8 % for 16 of
# them (median 2 %) and 25-44 % for truncate's cyclictest p99.9 and the
# short anon_vma-lock windows of exit and fork; measured_cvs() reads them
# per endpoint.
BETWEEN_BOOT_CV_LOW = 0.05
BETWEEN_BOOT_CV_HIGH = 0.15
AA_STUDY = os.path.join(os.path.dirname(__file__), "..", "..", "results", "aa-noise.json")
# The change the default REPEAT should detect.
SHIFT = 0.10
MODELS = ("lognormal", "frechet")
TESTS = ("welch", "permutation")


@dataclass
class GateRates:
    """Of n_sets simulated runs: the share in which the gate called any
    endpoint worse (with shift 0: the family-wise false-positive rate),
    and the share in which it called the shifted endpoint worse (the
    power; with shift 0 a false positive of that endpoint)."""
    any_worse: float
    shifted_worse: float
    n_sets: int


def frechet_shape(cv):
    """The shape of the Frechet law whose coefficient of variation is cv
    (it falls as the shape grows; finite above 2)."""
    def cv_of(shape):
        g1, g2 = math.gamma(1 - 1 / shape), math.gamma(1 - 2 / shape)
        return math.sqrt(g2 - g1 * g1) / g1
    lo, hi = 2.05, 1000.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cv_of(mid) > cv else (lo, mid)
    return (lo + hi) / 2


def draw_boots(rng, model, cv, shape):
    """Per-boot values with mean 1 and coefficient of variation cv:
    lognormal, or Frechet, the law a boot's maximum follows when its
    samples have a heavy tail."""
    if np.ndim(cv):
        # one CV per endpoint (axis 1 of shape)
        cv = np.asarray(cv, dtype=float)[:, None]
    if model == "lognormal":
        sigma = np.sqrt(np.log1p(cv * cv))
        return np.exp(rng.normal(-sigma * sigma / 2, sigma, shape))
    if model == "frechet":
        a = np.vectorize(frechet_shape)(cv)
        gamma = np.vectorize(math.gamma)(1 - 1 / a)
        return (-np.log(rng.random(shape))) ** (-1 / a) / gamma
    raise ValueError("model %r: one of %s" % (model, ", ".join(MODELS)))


def measured_cvs(workloads, path=AA_STUDY):
    """The A/A study's between-boot CV of each primary endpoint of these
    workloads, as endpoints.primary() orders them: {workload: [(endpoint
    name, cv)]}.  The zap path's window is the baseline's mmu-gather (the
    study's variant has no pte-lock-zap window)."""
    from . import endpoints
    with open(path) as f:
        study = json.load(f)["workloads"]
    key = {"zap-path window": "window max, mmu-gather"}
    out = {}
    for w in workloads:
        measured = study[w]["endpoints"]
        out[w] = []
        for e in endpoints.primary(w):
            name = key.get(e.name) or ("window max, " + e.covers
                                       if e.kind == "window" else e.name)
            out[w].append((e.name, measured[name]["cv"]))
    return out


def gate_rates(n_boots, cv, n_endpoints, shift=0.0, n_sets=400, model="lognormal",
               test="welch", alpha=stats.ALPHA, seed=0):
    """Simulate n_sets runs of n_endpoints endpoints with n_boots boots a
    side (cv: one for all, or one per endpoint), the patched side of
    endpoint 0 higher by shift (0.10: 10 %),
    and decide each as the gate does: the test's p values, Holm over all
    endpoints of the run, worse when the adjusted p < alpha and patched is
    higher."""
    rng = np.random.default_rng(seed)
    base = draw_boots(rng, model, cv, (n_sets, n_endpoints, n_boots))
    patched = draw_boots(rng, model, cv, (n_sets, n_endpoints, n_boots))
    patched[:, 0, :] *= 1 + shift
    if test == "welch":
        p, t = stats.welch_log(base, patched)
    elif test == "permutation":
        p, t = stats.permutation_log(base, patched, rng)
    else:
        raise ValueError("test %r: one of %s" % (test, ", ".join(TESTS)))
    worse = stats.holm_worse(p, t, alpha)
    return GateRates(any_worse=float(worse.any(axis=-1).mean()),
                     shifted_worse=float(worse[:, 0].mean()), n_sets=n_sets)


def boots_for_power(cv, n_endpoints, power=0.8, shift=SHIFT, n_sets=2000,
                    model="lognormal", seed=0, most=400):
    """The fewest boots a side at which the gate calls one endpoint that
    is shift higher worse in at least `power` of the simulated runs (Welch,
    Holm over n_endpoints); None when even `most` do not."""
    def enough(n):
        return gate_rates(n, cv, n_endpoints, shift, n_sets, model, seed=seed).shifted_worse >= power
    hi = 2
    while not enough(hi):
        if hi >= most:
            return None
        hi = min(2 * hi, most)
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


def detectable_shift(n_boots, cv, n_endpoints, power=0.8, n_sets=1000,
                     model="lognormal", seed=0, largest=10.0):
    """The smallest relative change (0.10: 10 %) of one endpoint that the
    gate calls worse in at least `power` of the simulated runs with
    n_boots boots a side (Welch, Holm over n_endpoints), to about 1 %;
    None when even `largest` is not."""
    def enough(shift):
        return gate_rates(n_boots, cv, n_endpoints, shift, n_sets, model,
                          seed=seed).shifted_worse >= power
    if not enough(largest):
        return None
    lo, hi = 0.0, largest
    while hi - lo > 0.01 * max(hi, 0.01):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi
