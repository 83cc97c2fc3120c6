"""Statistics on latency samples given as histograms {value: count} or raw
arrays, and bootstrap CIs for patched-minus-baseline differences."""
import numpy as np

PCTS = [50, 90, 99, 99.9, 99.99]
PCT_NAMES = ["p50", "p90", "p99", "p99.9", "p99.99"]
STAT_NAMES = ["count", "min", "mean"] + PCT_NAMES + ["max"]
CI_NAMES = PCT_NAMES + ["max"]


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


def _stat_from_sample(vals, counts, name):
    if name == "max":
        return float(vals[counts > 0][-1]) if counts.sum() else np.nan
    q = PCTS[PCT_NAMES.index(name)]
    return _pct_sorted(vals, counts, q)


def _resample_hist(rng, vals, probs, n):
    return rng.multinomial(n, probs)


# Significance needs boots: resampling the samples of a few boots ignores
# how far boots of one kernel differ. A real A/A run (mainline, munmap, 2
# against 2 boots, pooled) put p99 9 us apart with an interval of
# [-16, -5]; resampling just 2 boots a side collapses the interval too
# (3 distinct pools). So below MIN_REPEATS boots a side the samples are
# pooled, the interval shows sampling error only, and nothing is called
# significant.
MIN_REPEATS = 5


def bootstrap_diff(base_cells, patch_cells, n_resamples=2000, conf=0.95,
                   seed=1, method=None):
    """Percentile bootstrap CI of stat(patched) - stat(baseline) for each
    name in CI_NAMES.

    base_cells / patch_cells: lists of histograms, one per repeat (cell).
    method "repeats" (default when both sides have >= MIN_REPEATS cells): resample
    cells with replacement within each variant, pool the chosen cells'
    histograms, compute the statistic.  Method "pooled": pool all cells and
    resample individual samples (multinomial on the pooled histogram); its
    intervals are shown but never called significant.
    """
    rng = np.random.default_rng(seed)
    if method is None:
        method = "repeats" if min(len(base_cells), len(patch_cells)) >= MIN_REPEATS else "pooled"
    keys = sorted(set().union(*[set(h) for h in base_cells + patch_cells])) if (base_cells + patch_cells) else []
    vals = np.asarray(keys, dtype=float)
    idx = {k: i for i, k in enumerate(keys)}

    def vec(h):
        v = np.zeros(len(keys), dtype=np.int64)
        for k, c in h.items():
            v[idx[k]] += c
        return v
    B = np.array([vec(h) for h in base_cells]) if base_cells else np.zeros((0, len(keys)), dtype=np.int64)
    P = np.array([vec(h) for h in patch_cells]) if patch_cells else np.zeros((0, len(keys)), dtype=np.int64)
    bsum, psum = B.sum(axis=0), P.sum(axis=0)
    result = {"method": method, "n_resamples": n_resamples, "conf": conf,
              "seed": seed, "n_base_cells": len(base_cells),
              "n_patch_cells": len(patch_cells), "stats": {}}
    if bsum.sum() == 0 or psum.sum() == 0:
        for name in CI_NAMES:
            result["stats"][name] = {"base": None, "patched": None,
                                     "delta": None, "lo": None, "hi": None,
                                     "significant": False, "direction": None}
        return result
    est = {n: _stat_from_sample(vals, psum, n) - _stat_from_sample(vals, bsum, n)
           for n in CI_NAMES}
    draws = {n: np.empty(n_resamples) for n in CI_NAMES}
    nb, npch = int(bsum.sum()), int(psum.sum())
    pb, pp = bsum / nb, psum / npch
    for i in range(n_resamples):
        if method == "repeats":
            bb = B[rng.integers(0, len(B), len(B))].sum(axis=0)
            pc = P[rng.integers(0, len(P), len(P))].sum(axis=0)
        else:
            bb = rng.multinomial(nb, pb)
            pc = rng.multinomial(npch, pp)
        for n in CI_NAMES:
            draws[n][i] = _stat_from_sample(vals, pc, n) - _stat_from_sample(vals, bb, n)
    a = (1 - conf) / 2
    for n in CI_NAMES:
        lo, hi = np.quantile(draws[n], [a, 1 - a])
        sig = bool(lo > 0 or hi < 0) and method == "repeats"
        result["stats"][n] = {
            "base": _stat_from_sample(vals, bsum, n),
            "patched": _stat_from_sample(vals, psum, n),
            "delta": float(est[n]), "lo": float(lo), "hi": float(hi),
            "significant": sig,
            "direction": (None if not sig else ("worse" if lo > 0 else "better")),
        }
    return result


def spread_across_repeats(cells):
    """For each statistic: min and max of its per-repeat values."""
    per = [summarize_hist(h) for h in cells if h]
    out = {}
    for n in STAT_NAMES:
        v = [p[n] for p in per if p[n] is not None]
        out[n] = {"min": min(v), "max": max(v)} if v else None
    return out


def check_compatible(a, b, what_a="baseline", what_b="patched"):
    """a, b: dicts with 'accel' and 'config_sha256'.  Raise on mismatch."""
    for key in ("accel", "config_sha256"):
        va, vb = a.get(key), b.get(key)
        if va is not None and vb is not None and va != vb:
            raise IncompatibleCells(
                "refusing to compare: %s has %s=%s but %s has %s=%s"
                % (what_a, key, va, what_b, key, vb))
