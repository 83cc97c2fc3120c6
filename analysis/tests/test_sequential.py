"""The verdict rule (mmlat.sequential): group-sequential levels, Holm over
looks, and decide(), the function the report and REPEAT=auto call."""
import math

import numpy as np
import pytest

from mmlat import sequential, stats
from mmlat.sequential import Look, Series


@pytest.mark.parametrize("spending, published", [
    # five equally spaced looks, one-sided 2.5 %: the z boundaries of the
    # Lan-DeMets spending functions as group-sequential software tabulates
    # them (Jennison and Turnbull; gsDesign's sfLDOF and sfLDPocock)
    ("obrien-fleming", [4.877, 3.357, 2.680, 2.290, 2.031]),
    ("pocock", [2.438, 2.427, 2.410, 2.397, 2.386]),
])
def test_nominal_levels_are_the_published_boundaries(spending, published):
    levels = sequential.nominal_levels([1, 2, 3, 4, 5], [0.2, 0.4, 0.6, 0.8, 1.0], 0.025,
                                       spending)
    assert stats.normal_quantile(levels) == pytest.approx(published, abs=2e-3)


def test_nominal_levels_spend_alpha_over_the_looks():
    # a fixed REPEAT: one look, the whole level
    assert sequential.nominal_levels([10], [1.0], 0.01) == pytest.approx([0.01])
    # uneven looks: the chance a normal score crosses any look's boundary
    # is the level (Monte Carlo, 400000 runs: within 3 standard errors)
    reps = np.array([6, 8, 14, 20, 30])
    levels = sequential.nominal_levels(reps, reps / 30, 0.01)
    rng = np.random.default_rng(0)
    score = np.cumsum(rng.normal(size=(400000, len(reps))) * np.sqrt(np.diff(reps, prepend=0)),
                      axis=1)
    crossed = (score / np.sqrt(reps) >= stats.normal_quantile(levels)).any(axis=1).mean()
    assert crossed == pytest.approx(0.01, abs=3 * math.sqrt(0.01 * 0.99 / 400000))
    # a look that spends nothing or adds no information tests nothing
    assert sequential.nominal_levels([6, 8], [0.5, 0.5], 0.01)[1] == 0


def test_holm_over_one_look_is_holm():
    # Holm at 5 % over 4: 0.01 <= 0.05/4, 0.012 <= 0.05/3, 0.03 > 0.05/2
    levels = sequential.level_table([10], [1.0], 0.05, 4)
    decided, level = sequential.holm_looks([[[0.03, 0.01, 0.2, 0.012]]], levels)
    assert decided.tolist() == [[-1, 0, -1, 0]]
    assert level[0].tolist() == pytest.approx([0.025, 0.0125, 0.025, 0.05 / 3])


def series(name, base, patched, margin=0.10, higher_is_worse=True, boot="clean"):
    return Series("w", name, boot, margin, higher_is_worse, list(base), list(patched),
                  list(range(1, len(base) + 1)), list(range(1, len(patched) + 1)))


def noise(n, sd, seed):
    return 100 * np.exp(np.random.default_rng(seed).normal(0, sd, n))


def test_decide_three_ways_and_the_interval_says_why():
    fam = [series("up", noise(10, 0.02, 1), noise(10, 0.02, 2) * 1.5),
           series("tput", noise(10, 0.02, 3), noise(10, 0.02, 4) * 1.5, higher_is_worse=False),
           series("flat", noise(10, 0.01, 5), noise(10, 0.01, 6)),
           series("noisy", noise(10, 0.3, 7), noise(10, 0.3, 8)),
           series("constant", [7.0] * 10, [7.0] * 10)]
    rnd = sequential.decide(fam, [Look(10, 1.0)])
    out = {o.endpoint: o for o in rnd.outcomes}
    assert [out[n].verdict for n in ("up", "tput", "flat", "noisy", "constant")] == [
        "worse", "better", "same", "inconclusive", "n/a"]
    assert out["up"].lo > 0.1 and out["tput"].lo > 0.1
    assert -1 / 11 < out["flat"].lo < out["flat"].hi < 0.1
    assert out["noisy"].lo < 0.1 < out["noisy"].hi or out["noisy"].lo < -1 / 11 < out["noisy"].hi
    # the noisy one needs many more boots; the constant one has no test
    assert out["noisy"].settle_boots is None or out["noisy"].settle_boots > 10
    assert out["constant"].lo is None and out["constant"].settle_boots is None
    assert not rnd.another_round


def test_rounds_stop_when_every_endpoint_is_decided():
    fam = [series("clear", noise(20, 0.01, 1), noise(20, 0.01, 2)),
           series("slow", noise(20, 0.08, 3), noise(20, 0.08, 4), boot="traced")]
    first = sequential.decide(fam, [Look(4, 0.2)])
    assert [o.decided for o in first.outcomes] == [True, False]
    assert first.another_round and first.needs == {"w": ["traced"]}
    assert first.progress() == ("look 1 (4 repeats, 20 % of the budget): 1 of 2 primary "
                                "endpoints decided; open: w slow")
    # a decision is final: later looks replay it from the start
    looks = [Look(4, 0.2), Look(12, 0.6), Look(20, 1.0)]
    last = sequential.decide(fam, looks)
    assert last.outcomes[0].look == 1 and last.outcomes[0].verdict == "same"
    assert last.outcomes[1].decided and not last.another_round
    assert last.progress().endswith("2 of 2 primary endpoints decided")
    with pytest.raises(ValueError):
        sequential.decide(fam, [Look(4, 0.2), Look(4, 0.4)])


def test_budget_spent_leaves_the_rest_inconclusive():
    fam = [series("edge", noise(8, 0.05, 1), noise(8, 0.05, 2) * 1.1)]
    rnd = sequential.decide(fam, [Look(4, 0.5), Look(8, 1.0)])
    assert rnd.outcomes[0].verdict == "inconclusive" and not rnd.another_round
    # at 0.5 of the budget another round would have been booted
    assert sequential.decide(fam, [Look(4, 0.5)]).another_round
