import numpy as np
import pytest
from mmlat import stats


def test_summary_known():
    h = {i: 1 for i in range(1, 101)}
    s = stats.summarize_hist(h)
    assert s["count"] == 100 and s["min"] == 1 and s["max"] == 100
    assert s["p50"] == 50 and s["p90"] == 90 and s["p99"] == 99
    assert s["mean"] == pytest.approx(50.5)
    assert stats.summarize(list(range(1, 101))) == s


def _hist(a):
    v, c = np.unique(np.round(a).astype(int), return_counts=True)
    return dict(zip(v.tolist(), c.tolist()))


def test_shift_detected_repeats_and_pooled():
    rng = np.random.default_rng(0)
    base = [_hist(rng.gamma(4, 5, 5000)) for _ in range(4)]
    patch = [_hist(rng.gamma(4, 5, 5000) + 30) for _ in range(4)]
    for m in ("repeats", "pooled"):
        r = stats.bootstrap_diff(base, patch, n_resamples=300, method=m)
        for n in ("p50", "p99", "p99.9"):
            s = r["stats"][n]
            assert s["lo"] <= 30 <= s["hi"] + 1, (m, n, s)
            assert s["significant"] and s["direction"] == "worse"


def test_identical_not_significant():
    rng = np.random.default_rng(1)
    cells = [_hist(rng.gamma(4, 5, 5000)) for _ in range(4)]
    r = stats.bootstrap_diff(cells, cells, n_resamples=300)
    for n in stats.CI_NAMES:
        assert not r["stats"][n]["significant"], n
    assert r["method"] == "repeats" and r["conf"] == 0.95


def test_seeded_repeatable():
    h = [{1: 10, 2: 5, 9: 1}]
    a = stats.bootstrap_diff(h, h, n_resamples=50, seed=3)
    b = stats.bootstrap_diff(h, h, n_resamples=50, seed=3)
    assert a == b and a["method"] == "pooled"


def test_refuse_incompatible():
    with pytest.raises(stats.IncompatibleCells, match="accel"):
        stats.check_compatible({"accel": "kvm"}, {"accel": "tcg"})
    stats.check_compatible({"accel": "tcg", "config_sha256": "x"},
                           {"accel": "tcg", "config_sha256": "x"})


def test_pooled_max_is_never_significant_from_one_boot():
    from mmlat.stats import bootstrap_diff
    base = [{10: 1000, 100: 1}]
    patched = [{10: 1000, 50: 1}]
    res = bootstrap_diff(base, patched, n_resamples=300)
    assert res["method"] == "pooled"
    assert res["stats"]["max"]["delta"] == -50
    assert not res["stats"]["max"]["significant"]
