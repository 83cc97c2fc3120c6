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
    base = [_hist(rng.gamma(4, 5, 5000)) for _ in range(stats.MIN_REPEATS)]
    patch = [_hist(rng.gamma(4, 5, 5000) + 30) for _ in range(stats.MIN_REPEATS)]
    for m in ("repeats", "pooled"):
        r = stats.bootstrap_diff(base, patch, n_resamples=300, method=m)
        for n in ("p50", "p99", "p99.9"):
            s = r["stats"][n]
            assert s["lo"] <= 30 <= s["hi"] + 1, (m, n, s)
            # Only boots can tell a change from boot-to-boot variation.
            assert s["significant"] == (m == "repeats")
            assert s["direction"] == ("worse" if m == "repeats" else None)


def test_same_distribution_not_significant():
    # independent boots of one distribution: a bootstrap that ignored
    # boot-to-boot variation, or resampled the wrong cells, would call
    # their sampling noise a difference
    rng = np.random.default_rng(1)
    base = [_hist(rng.gamma(4, 5, 5000)) for _ in range(stats.MIN_REPEATS)]
    patch = [_hist(rng.gamma(4, 5, 5000)) for _ in range(stats.MIN_REPEATS)]
    r = stats.bootstrap_diff(base, patch, n_resamples=300)
    assert r["method"] == "repeats" and r["conf"] == 0.95
    for n in ("p50", "p90", "p99"):
        s = r["stats"][n]
        assert s["lo"] <= 0 <= s["hi"] and not s["significant"], (n, s)


def test_seeded_repeatable():
    base, patch = [{1: 10, 2: 5, 9: 1}], [{1: 8, 3: 6, 7: 2}]
    a = stats.bootstrap_diff(base, patch, n_resamples=50, seed=3)
    b = stats.bootstrap_diff(base, patch, n_resamples=50, seed=3)
    c = stats.bootstrap_diff(base, patch, n_resamples=50, seed=4)
    assert a == b and a["method"] == "pooled"
    # the seed, not luck, makes them equal
    assert any(a["stats"][n]["lo"] != c["stats"][n]["lo"] or a["stats"][n]["hi"] != c["stats"][n]["hi"]
               for n in stats.CI_NAMES)


def test_hist_pairs_round_trip_through_json():
    import json
    h = {2.5: 3, 1: 7, 40.192: 1}
    pairs = json.loads(json.dumps(stats.hist_pairs(h)))
    assert pairs == [[1, 7], [2.5, 3], [40.192, 1]]
    assert stats.pairs_hist(pairs) == h
    s = stats.summarize_with_hist(h)
    assert s["hist"] == pairs and s["max"] == 40.192 and s["count"] == 11


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


def test_two_boots_a_side_pool_and_never_call_the_max():
    # A/A from a real run (mainline, exit, 2 against 2 boots): the boots'
    # maxima differ by about 200 us; resampling 2 boots made that
    # "significant". Too few boots pool the samples instead.
    rng = np.random.default_rng(3)
    body = [_hist(rng.gamma(4, 5, 5000)) for _ in range(4)]
    for h, peak in zip(body, (2341, 2147, 2209, 2116)):
        h[peak] = 1
    r = stats.bootstrap_diff(body[:2], body[2:], n_resamples=300)
    assert r["method"] == "pooled"
    assert not r["stats"]["max"]["significant"]
