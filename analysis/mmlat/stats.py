"""Statistics on latency samples given as histograms {value: count} or raw
arrays; the tests that compare per-boot values of two variants (Welch's t
on logs, against a margin, a permutation test) and the
distributions they need (t, normal); the boot bootstrap of intervals and
CCDF bands."""
import itertools
import math

import numpy as np

PCTS = [50, 90, 99, 99.9, 99.99]
PCT_NAMES = ["p50", "p90", "p99", "p99.9", "p99.99"]
STAT_NAMES = ["count", "min", "mean"] + PCT_NAMES + ["max"]


class IncompatibleCells(ValueError):
    pass


def hist_to_arrays(hist):
    if not hist:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    keys = sorted(hist)
    return (np.asarray(keys, dtype=float),
            np.asarray([hist[k] for k in keys], dtype=np.int64))


def merge_hists(hists):
    out = {}
    for h in hists:
        for k, v in h.items():
            out[k] = out.get(k, 0) + v
    return out


def _pct_sorted(vals, counts, q):
    """Percentile by the nearest-rank method on a weighted sorted sample:
    the smallest value v with cumcount(v) >= ceil(q/100 * n)."""
    n = counts.sum()
    rank = max(1, int(np.ceil(q / 100.0 * n - 1e-9)))
    cum = np.cumsum(counts)
    return float(vals[np.searchsorted(cum, rank)])


def percentile(hist, q):
    """The nearest-rank q-th percentile (0 < q <= 100) of histogram
    {value: count}; None when it is empty."""
    vals, counts = hist_to_arrays(hist)
    if not counts.sum():
        return None
    return _pct_sorted(vals, counts, q)


def summarize_hist(hist):
    vals, counts = hist_to_arrays(hist)
    n = int(counts.sum())
    if n == 0:
        return {k: (0 if k == "count" else None) for k in STAT_NAMES}
    nz = counts > 0
    vals, counts = vals[nz], counts[nz]
    out = {"count": n, "min": float(vals[0]),
           "mean": float((vals * counts).sum() / n)}
    for q, name in zip(PCTS, PCT_NAMES):
        out[name] = _pct_sorted(vals, counts, q)
    out["max"] = float(vals[-1])
    return out


def hist_pairs(hist):
    """{value: count} -> [[value, count], ...] by value: a histogram in a
    form JSON keeps (its object keys are strings)."""
    return [[k, hist[k]] for k in sorted(hist)]


def pairs_hist(pairs):
    """The inverse of hist_pairs."""
    return {k: n for k, n in pairs}


def summarize_with_hist(hist):
    """summarize_hist plus the histogram itself as "hist" pairs, for the
    renderers, which read summary.json and never the cells."""
    return dict(summarize_hist(hist), hist=hist_pairs(hist))


def summarize(samples):
    a = np.asarray(samples, dtype=float)
    if a.size == 0:
        return summarize_hist({})
    v, c = np.unique(a, return_counts=True)
    return summarize_hist(dict(zip(v.tolist(), c.tolist())))


def t_two_sided_p(t, df):
    """P(|T| >= |t|) for Student's T with df degrees of freedom (df may be
    fractional, as Welch's is): the regularized incomplete beta
    I_{df/(df+t^2)}(df/2, 1/2).  Vectorized; numpy only, since the
    analysis needs no scipy."""
    t, df = np.broadcast_arrays(np.asarray(t, dtype=float), np.asarray(df, dtype=float))
    return _betainc(df / 2.0, np.full(df.shape, 0.5), df / (df + t * t))


# Terms of the continued fraction at most: converged to double precision
# for the half-integer parameters a Welch test up to a few hundred boots
# gives (the loop stops as soon as every element has).
BETAINC_TERMS = 300


def _betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b), elementwise, by its continued
    fraction (modified Lentz), on the side of x where it converges fast."""
    flip = x > (a + 1) / (a + b + 2)
    a, b, x = np.where(flip, b, a), np.where(flip, a, b), np.where(flip, 1 - x, x)
    lgamma = np.vectorize(math.lgamma, otypes=[float])
    with np.errstate(divide="ignore", invalid="ignore"):
        front = np.exp(lgamma(a + b) - lgamma(a) - lgamma(b)
                       + a * np.log(x) + b * np.log1p(-x)) / a
    tiny = 1e-300

    def nonzero(v):
        return np.where(np.abs(v) < tiny, tiny, v)
    c = np.ones_like(x)
    d = 1 / nonzero(1 - (a + b) * x / (a + 1))
    f = d.copy()
    for m in range(1, BETAINC_TERMS):
        step = np.ones_like(x)
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 / nonzero(1 + num * d)
            c = nonzero(1 + num / c)
            f = f * c * d
            step = step * c * d
        # every element converged: further terms change nothing
        if np.all(np.abs(step - 1) < 1e-15):
            break
    r = np.where(x <= 0, 0.0, np.where(x >= 1, 1.0, front * f))
    return np.where(flip, 1 - r, r)


def t_sf(t, df):
    """P(T >= t) for Student's T with df degrees of freedom, from the
    two-sided p: its small tail keeps its precision far out."""
    t = np.asarray(t, dtype=float)
    half = t_two_sided_p(np.abs(t), df) / 2
    return np.where(t >= 0, half, 1 - half)


def t_quantile(p, df, largest=1e4):
    """The t with P(T >= t) = p (0 < p < 1/2), elementwise, by bisection on
    t_sf: the one-sided critical value of a level-p test."""
    p, df = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(df, dtype=float))
    lo, hi = np.zeros(p.shape), np.full(p.shape, largest)
    for _ in range(56):
        mid = (lo + hi) / 2
        above = t_sf(mid, df) > p
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return (lo + hi) / 2


def normal_sf(z):
    """P(Z >= z) for a standard normal Z, elementwise: the Chebyshev fit
    of erfc of Numerical Recipes (relative error under 1.2e-7 everywhere,
    tails included), since numpy has no erf."""
    x = np.asarray(z, dtype=float) / math.sqrt(2)
    a = np.abs(x)
    t = 1 / (1 + 0.5 * a)
    poly = 0.0
    for coef in (0.17087277, -0.82215223, 1.48851587, -1.13520398, 0.27886807,
                 -0.18628806, 0.09678418, 0.37409196, 1.00002368, -1.26551223):
        poly = coef + t * poly
    erfc = t * np.exp(-a * a + poly)
    return np.where(x >= 0, erfc, 2 - erfc) / 2


def normal_quantile(p):
    """The z with P(Z >= z) = p (0 < p < 1), elementwise, by bisection."""
    p = np.asarray(p, dtype=float)
    lo, hi = np.full(p.shape, -40.0), np.full(p.shape, 40.0)
    for _ in range(56):
        mid = (lo + hi) / 2
        above = normal_sf(mid) > p
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return (lo + hi) / 2


def welch_log_parts(base, patched):
    """Welch's comparison of the logarithms of per-boot values, in parts:
    the difference of the mean logs (patched - base: the log of the ratio
    of geometric means), its standard error and Welch's degrees of
    freedom, over the leading axes of base and patched (..., boots).  All
    three NaN where a side has fewer than 2 boots or neither side varies
    (an icount boot can repeat the last one exactly: no spread, no test);
    one side without spread (a window below the floor in every boot) is
    tested with the other side's."""
    lb, lp = np.log(np.asarray(base, dtype=float)), np.log(np.asarray(patched, dtype=float))
    nb, npch = lb.shape[-1], lp.shape[-1]
    shape = np.broadcast_shapes(lb.shape[:-1], lp.shape[:-1])
    if min(nb, npch) < 2:
        return tuple(np.full(shape, np.nan) for _ in range(3))
    vb, vp = lb.var(axis=-1, ddof=1) / nb, lp.var(axis=-1, ddof=1) / npch
    se2 = vb + vp
    # equal values exactly, not a variance that rounding left above zero
    varies = (np.ptp(lb, axis=-1) > 0) | (np.ptp(lp, axis=-1) > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = se2 ** 2 / (vb ** 2 / (nb - 1) + vp ** 2 / (npch - 1))
    d = lp.mean(axis=-1) - lb.mean(axis=-1)
    return (np.where(varies, d, np.nan), np.where(varies, np.sqrt(se2), np.nan),
            np.where(varies, df, np.nan))


def welch_log(base, patched):
    """Welch's t test on the logarithms of per-boot values (the test the
    verdicts build on: simulate.py).  base, patched: arrays (..., boots)
    of positive values.  Returns (p, t): the two-sided p value and the t
    statistic (> 0: patched higher) over the leading axes; NaN where
    welch_log_parts has no test."""
    d, se, df = welch_log_parts(base, patched)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = d / se
    p = t_two_sided_p(np.nan_to_num(t), np.nan_to_num(df, nan=1.0))
    return np.where(np.isnan(t), np.nan, p), t


def margin_tests(d, se, df, log_margin):
    """The one-sided Welch tests of a change against a margin, on the log
    scale (d, se, df: welch_log_parts; log_margin: log(1 + margin)), as p
    values of the three claims a verdict can make:

    * higher: the change is beyond +margin (H0: d <= +log_margin);
    * lower: beyond -margin (H0: d >= -log_margin);
    * same: within +-margin, the two one-sided tests (TOST) of H0: d <=
      -log_margin and H0: d >= +log_margin, p the larger of the two.

    A level-a test of a claim is p <= a, which is the 1 - 2a interval
    [d - t_a se, d + t_a se] lying inside the claim's region.  NaN where
    there is no test."""
    with np.errstate(divide="ignore", invalid="ignore"):
        above = (d - log_margin) / se       # > 0: beyond +margin
        below = (d + log_margin) / se       # < 0: beyond -margin
    p_higher = t_sf(above, df)
    p_lower = t_sf(-below, df)
    p_same = np.maximum(t_sf(below, df), t_sf(-above, df))
    none = np.isnan(above)
    return tuple(np.where(none, np.nan, p) for p in (p_higher, p_lower, p_same))


def permutation_log(base, patched, rng, exact_limit=20000, n_random=4000):
    """The permutation test the simulation weighs against welch_log: the
    difference of mean logs over every split of the pooled boots (at most
    exact_limit splits), else over n_random random ones.  Returns (p, t)
    as welch_log, t the observed difference.  Its smallest p is 2 over the
    number of splits: 2/252 with 5 boots a side."""
    x = np.log(np.concatenate([np.asarray(base, dtype=float),
                               np.asarray(patched, dtype=float)], axis=-1))
    n, k = x.shape[-1], np.shape(base)[-1]
    if math.comb(n, k) <= exact_limit:
        splits = list(itertools.combinations(range(n), k))
    else:
        splits = [rng.permutation(n)[:k] for _ in range(n_random)]
    in_base = np.zeros((len(splits), n))
    for i, s in enumerate(splits):
        in_base[i, list(s)] = 1.0
    base_sum = x @ in_base.T
    diffs = (x.sum(axis=-1, keepdims=True) - base_sum) / (n - k) - base_sum / k
    observed = x[..., k:].mean(axis=-1) - x[..., :k].mean(axis=-1)
    # a split whose difference equals the observed one (itself, its
    # mirror) counts, up to rounding
    p = (np.abs(diffs) >= np.abs(observed)[..., None] - 1e-12).mean(axis=-1)
    return p, observed


# The family-wise error rate the verdicts keep (sequential.py: Holm over
# the primary endpoints): `make compare` is a gate.
ALPHA = 0.05


def geometric_mean(values):
    return float(np.exp(np.mean(np.log(values))))


def boot_interval(base, patched, n_resamples=2000, conf=0.95, seed=1):
    """Percentile bootstrap interval of geometric_mean(patched) -
    geometric_mean(base), resampling boots (per-boot values) with
    replacement on each side; None with fewer than 2 boots a side."""
    base, patched = np.asarray(base, dtype=float), np.asarray(patched, dtype=float)
    if min(len(base), len(patched)) < 2:
        return None
    rng = np.random.default_rng(seed)

    def gmeans(v):
        return np.exp(np.log(v)[rng.integers(0, len(v), (n_resamples, len(v)))].mean(axis=1))
    diffs = gmeans(patched) - gmeans(base)
    a = (1 - conf) / 2
    lo, hi = np.quantile(diffs, [a, 1 - a])
    return float(lo), float(hi)


def ccdf(hist):
    """(values, P(X >= value)) of a histogram {value: count}."""
    vals, counts = hist_to_arrays(hist)
    n = counts.sum()
    return vals, (n - np.cumsum(counts) + counts) / n if n else counts


def ccdf_band(boot_hists, n_resamples=200, conf=0.95, seed=1):
    """A band around the CCDF of the pooled boots: resample the boots with
    replacement, pool their histograms, and take the conf interval of
    P(X >= x) at each value x any boot has.  {"x", "lo", "hi"} as lists;
    None with fewer than 2 boots with samples."""
    boot_hists = [h for h in boot_hists if h]
    if len(boot_hists) < 2:
        return None
    keys = sorted(set().union(*boot_hists))
    col = {k: i for i, k in enumerate(keys)}
    counts = np.zeros((len(boot_hists), len(keys)))
    for i, h in enumerate(boot_hists):
        for k, n in h.items():
            counts[i, col[k]] = n
    rng = np.random.default_rng(seed)
    pooled = counts[rng.integers(0, len(boot_hists), (n_resamples, len(boot_hists)))].sum(axis=1)
    total = pooled.sum(axis=1, keepdims=True)
    at_least = (total - np.cumsum(pooled, axis=1) + pooled) / total
    a = (1 - conf) / 2
    lo, hi = np.quantile(at_least, [a, 1 - a], axis=0)
    return {"x": keys, "lo": lo.tolist(), "hi": hi.tolist()}


def spread_across_repeats(cells):
    """For each statistic: min and max of its per-repeat values."""
    per = [summarize_hist(h) for h in cells if h]
    out = {}
    for n in STAT_NAMES:
        v = [p[n] for p in per if p[n] is not None]
        out[n] = {"min": min(v), "max": max(v)} if v else None
    return out


def compared_keys(run_meta):
    """What two boots of a run must share to be compared: the accelerator
    always, the kernel config unless the run was asked to compare across
    configs (CROSS=yes, meta.json's "cross": other kernel versions)."""
    if run_meta["cross"]:
        return ("accel",)
    return ("accel", "config_sha256")


def check_compatible(a, b, what_a="baseline", what_b="patched",
                     keys=("accel", "config_sha256")):
    """a, b: dicts with 'accel' and 'config_sha256'.  Raise on a mismatch
    of any of keys."""
    for key in keys:
        va, vb = a.get(key), b.get(key)
        if va is not None and vb is not None and va != vb:
            raise IncompatibleCells(
                "refusing to compare: %s has %s=%s but %s has %s=%s"
                % (what_a, key, va, what_b, key, vb))
