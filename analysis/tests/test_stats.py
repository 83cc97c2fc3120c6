import math

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


def test_t_distribution_against_closed_forms_and_a_table():
    t = np.array([0.0, 0.5, 1.0, 3.0, 40.0])
    # df 1 (Cauchy) and df 2 have closed forms
    assert stats.t_two_sided_p(t, 1) == pytest.approx(1 - 2 / np.pi * np.arctan(t), abs=1e-12)
    assert stats.t_two_sided_p(t, 2) == pytest.approx(1 - t / np.sqrt(t * t + 2), abs=1e-12)
    # the 97.5 % quantiles of t tables, and a fractional df as Welch's
    assert stats.t_two_sided_p([2.306, 2.228, 1.960], [8, 10, 1e6]) == pytest.approx(
        [0.05, 0.05, 0.05], abs=2e-4)
    # scipy.stats.t.sf(4.5, 7.3) * 2 (scipy is no dependency)
    assert stats.t_two_sided_p(4.5, 7.3) == pytest.approx(0.0025193737, rel=1e-6)


def test_welch_log_compares_ratios_and_refuses_what_it_cannot_test():
    base = np.array([100.0, 104, 97, 101, 99])
    p, t = stats.welch_log(base, base * 1.2)
    assert p < 1e-4 and t > 0
    # on logs: a ratio, whatever the scale
    assert stats.welch_log(base / 100, base / 100 * 1.2)[0] == pytest.approx(p)
    assert stats.welch_log(base * 1.2, base)[1] == pytest.approx(-t)
    # one boot, or no spread (icount boots that repeat themselves): no test
    assert np.isnan(stats.welch_log([100.0], [120.0, 121.0])[0])
    assert np.isnan(stats.welch_log([100.0, 100.0], [120.0, 120.0])[0])


def test_permutation_resolution_is_two_over_the_splits():
    # 5 boots a side, fully separated: 2 of the 252 splits are as extreme
    p, d = stats.permutation_log([1.0, 2, 3, 4, 5], [10.0, 20, 30, 40, 50], None)
    assert p == pytest.approx(2 / 252) and d > 0
    # why the verdicts use Welch: that smallest p never passes Holm's first
    # level over the 18 primary endpoints of the default workloads
    assert p > stats.ALPHA / 18


def test_normal_and_t_tails_and_quantiles():
    z = np.array([-3.0, -1.0, 0.0, 1.0, 2.0, 5.0, 8.0, 20.0])
    exact = np.array([0.5 * math.erfc(x / math.sqrt(2)) for x in z])
    assert stats.normal_sf(z) == pytest.approx(exact, rel=2e-7)
    assert stats.normal_quantile([0.025, 1e-6]) == pytest.approx([1.959964, 4.753424], abs=1e-5)
    # one-sided t: half the two-sided p, its complement below zero
    assert stats.t_sf([2.306, -2.306], 8) == pytest.approx([0.025, 0.975], abs=1e-4)
    assert stats.t_quantile([0.025, 0.025, 0.05], [8, 10, 1e6]) == pytest.approx(
        [2.306004, 2.228139, 1.644854], abs=2e-5)


def test_welch_parts_on_logs_and_a_side_without_spread():
    base = np.array([100.0, 104, 97, 101, 99])
    d, se, df = stats.welch_log_parts(base, base * 1.2)
    assert d == pytest.approx(math.log(1.2)) and df == pytest.approx(8)
    assert se == pytest.approx(np.std(np.log(base), ddof=1) * math.sqrt(2 / 5))
    # a window below the floor in every patched boot: tested with the
    # baseline's spread alone
    d, se, df = stats.welch_log_parts(base, [5.0] * 4)
    assert d == pytest.approx(math.log(5) - np.log(base).mean())
    assert se == pytest.approx(np.std(np.log(base), ddof=1) / math.sqrt(5))
    assert df == pytest.approx(4)
    assert np.isnan(stats.welch_log_parts([5.0, 5.0], [5.0, 5.0])).all()


def test_margin_tests_are_the_interval_inside_a_region():
    rng = np.random.default_rng(3)
    base = 100 * np.exp(rng.normal(0, 0.02, 10))
    margin = math.log(1.1)
    for ratio, claim in ((1.0, 2), (1.3, 0), (0.7, 1)):
        d, se, df = stats.welch_log_parts(base, base[::-1] * ratio)
        p = stats.margin_tests(d, se, df, margin)
        assert int(np.argmin(p)) == claim and min(p) < 1e-4
        # p of a claim at most a <=> the 1 - 2a interval inside its region
        a = float(min(p)) * 1.01
        q = stats.t_quantile(a, df)
        lo, hi = d - q * se, d + q * se
        assert {0: lo > margin, 1: hi < -margin, 2: -margin < lo and hi < margin}[claim]
    # on the edge of the margin: no claim is near significant
    d, se, df = stats.welch_log_parts(base, base[::-1] * 1.1)
    assert min(stats.margin_tests(d, se, df, margin)) > 0.05
    assert np.isnan(stats.margin_tests(np.nan, np.nan, np.nan, margin)).all()


def test_boot_interval_covers_the_shift_and_needs_boots():
    rng = np.random.default_rng(0)
    base = 100 * np.exp(rng.normal(0, 0.05, 8))
    lo, hi = stats.boot_interval(base, base + 30, seed=2)
    assert lo == pytest.approx(30, abs=3) and hi == pytest.approx(30, abs=3)
    assert stats.boot_interval(base, base + 30, seed=2) == (lo, hi)
    lo, hi = stats.boot_interval(base, base[::-1] * 1.0)
    assert lo < 0 < hi
    assert stats.boot_interval([100.0], [130.0, 131.0]) is None


def test_ccdf_band_brackets_the_boots():
    boots = [{10: 90, 100: 10}, {10: 99, 100: 1}, {10: 95, 100: 5}]
    band = stats.ccdf_band(boots, n_resamples=400)
    assert band["x"] == [10, 100]
    assert band["lo"][0] == band["hi"][0] == 1.0
    # P(X >= 100) of the pooled resamples: between the two extreme boots
    assert 0.01 <= band["lo"][1] < 0.053 < band["hi"][1] <= 0.10
    assert stats.ccdf_band(boots[:1]) is None
    x, at_least = stats.ccdf({10: 3, 20: 1})
    assert x.tolist() == [10, 20] and at_least.tolist() == [1.0, 0.25]


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
