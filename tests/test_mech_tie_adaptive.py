"""The tie-adaptive quantile: a charged tie diagnostic picks smooth sensitivity or the
exponential mechanism, and the choice is part of the record (mechanisms/tie_adaptive.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from instancedp.audit import check_distributions, neighbour_pairs_from_brute
from instancedp.audit.harness import public_outcome
from instancedp.errors import ParameterError
from instancedp.mechanisms import TieAdaptiveQuantile
from instancedp.mechanisms.ptr import distance_to_high_sensitivity
from instancedp.mechanisms.tie_adaptive import EXPONENTIAL, SMOOTH, tie_half_width
from instancedp.privacy import PureDP
from instancedp.queries import Median, Quantile
from instancedp.random import simulation
from instancedp.recipes import build_mechanism

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

DOMAIN = (0.0, 1.0, 2.0)


def _d(x, q):
    return tie_half_width(np.sort(np.asarray(x, dtype=float)), q)


def _naive_d(x, q):
    """The definition, by scanning k (reference for the O(log n) form)."""
    x = sorted(x)
    n = len(x)
    if n == 0:
        return 0
    m = max(1, math.ceil(q * n - 1e-12))
    k = 0
    while m - (k + 1) >= 1 and m + (k + 1) <= n and x[m - k - 2] == x[m + k]:
        k += 1
    return k


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("q", [0.5, 0.25, 0.9])
def test_diagnostic_has_global_sensitivity_one(relation, q):
    # every neighbour pair of sizes 0 … 6 (and 7 under add/remove) over a 3-value
    # domain: |D(x) − D(x′)| ≤ 1
    worst = 0
    for n in range(0, 7):
        for x, xp in neighbour_pairs_from_brute(DOMAIN, n, relation):
            assert _d(x, q) == _naive_d(x, q)
            worst = max(worst, abs(_d(x, q) - _d(xp, q)))
    assert worst == (1 if q < 0.9 else 0)  # tight; at q = 0.9 and n ≤ 7, m = n and D = 0


@pytest.mark.parametrize("q", [0.5, 0.25, 0.9])
def test_diagnostic_is_the_distance_to_positive_local_sensitivity(q):
    # under substitution D = min{k : A^(k)(x) > 0} for rows inside the bounds (a row at
    # a bound also ties with the bound's padding, so D is then a lower bound); under
    # add/remove it is a lower bound
    sub = Quantile(q, 0.0, 2.0, neighbours="substitution")
    ar = Quantile(q, 0.0, 2.0, neighbours="add_remove")
    for n in range(1, 7):
        for x, _ in neighbour_pairs_from_brute((0.5, 1.0, 1.5), n, "substitution"):
            assert _d(x, q) == distance_to_high_sensitivity(sub, x, 0.0)
            assert _d(x, q) <= distance_to_high_sensitivity(ar, x, 0.0)
        for x, _ in neighbour_pairs_from_brute(DOMAIN, n, "substitution"):
            assert _d(x, q) <= distance_to_high_sensitivity(sub, x, 0.0)


def test_diagnostic_edges():
    assert _d([], 0.5) == 0 and _d([3.0], 0.5) == 0
    assert _d([1.0, 1.0], 0.5) == 0  # m = 1: no rank below it
    assert _d([1.0] * 7, 0.5) == 3  # all equal: min(m − 1, n − m)
    assert _d([0.0, 1.0, 1.0, 1.0, 5.0], 0.5) == 1
    assert _d([5e-324, 5e-324, 5e-324, 1e300], 0.5) == 1  # subnormal ties are ties


def _both_branches(eps, relation):
    # min_ties = 0, a large share and large switch rates make both branches likely on
    # tiny inputs, so the check sees the choice's privacy loss and the value's together
    q = Median(0.0, 2.0, neighbours=relation)
    return TieAdaptiveQuantile(q, eps, share=0.5, switch_rate=0.3, min_ties=0,
                               false_switch_rate=0.3)


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_exact_privacy_of_choice_and_value(relation):
    eps = 1.0
    mech = _both_branches(eps, relation)
    sizes = (1, 2) if relation == "add_remove" else (1, 2, 3)  # sizes 0–3 either way
    pairs = [p for n in sizes for p in neighbour_pairs_from_brute(DOMAIN, n, relation)]
    if relation == "add_remove":
        pairs += [((), (v,)) for v in DOMAIN]  # the empty table neighbours each one-row table
    laws = [(mech.output_distribution(x), mech.output_distribution(xp)) for x, xp in pairs]
    probs = {round(law.branches[SMOOTH][0], 9) for pair in laws for law in pair}
    assert len(probs) > 1 and min(probs) > 0.01 and max(probs) < 0.99  # both branches live
    chk = check_distributions(laws, PureDP(eps))
    assert chk.passed is True, chk.as_dict()
    # the choice costs privacy: the release's own ε₁ alone is exceeded on some pair
    assert chk.measured > mech.release_epsilon + 0.01


def test_a_noiseless_choice_fails_the_check():
    # the check can fail: the same composition with the choice made from D itself
    # (no noise) leaks the tie structure with infinite privacy loss
    mech = _both_branches(1.0, "substitution")
    mech.switch_probability = lambda data: float(mech.diagnostic(data) >= 1)  # type: ignore
    pairs = neighbour_pairs_from_brute(DOMAIN, 3, "substitution")
    laws = [(mech.output_distribution(x), mech.output_distribution(xp)) for x, xp in pairs]
    assert check_distributions(laws, PureDP(1.0)).passed is False


def test_choice_law_matches_the_sampler():
    # 4000 draws of the choice on a column with D = 30 near the threshold: the count is
    # within 5 standard deviations of its exact mean (false failure < 1e-6)
    q = Median(0.0, 100.0)
    mech = TieAdaptiveQuantile(q, 1.0)
    x = np.r_[np.arange(70.0), np.full(61, 70.0), 71 + np.arange(70.0)]
    d = mech.diagnostic(x)
    assert d == 30
    p = mech.switch_probability(x)
    k = sum(c == SMOOTH for c in mech.sample_choices(x, 4000, simulation(5)))
    assert abs(k - 4000 * p) <= 5 * math.sqrt(4000 * p * (1 - p)) + 1


def test_record_states_the_choice_and_the_split():
    mech = build_mechanism("median", 1.0, bounds=(0.0, 100.0), mechanism="tie-adaptive")
    assert isinstance(mech, TieAdaptiveQuantile)
    assert mech.diagnostic_epsilon + mech.release_epsilon <= 1.0
    assert mech.guarantee == PureDP(1.0)
    ties = np.full(1001, 42.0)
    rec = mech.release(ties, rng=simulation(1)).to_dict()
    assert rec["mechanism"] == "tie_adaptive_quantile"
    assert rec["parameters"]["released"]["choice"] == SMOOTH
    assert rec["value"] == pytest.approx(42.0, abs=1e-6)
    spread = np.linspace(0.0, 100.0, 1001)
    rec2 = mech.release(spread, rng=simulation(1)).to_dict()
    assert rec2["parameters"]["released"]["choice"] == EXPONENTIAL
    # everything but the value and the released choice is the same on both inputs
    assert public_outcome(mech, ties) == public_outcome(mech, spread)
    for key in ("diagnostic_epsilon", "release_epsilon", "threshold"):
        assert key in rec["parameters"]


def test_threshold_bounds_the_switch_rates():
    # P(switch) ≤ switch_rate at D = min_ties and ≤ false_switch_rate at D = 0, for
    # small and large ε (the exact law of the choice, no sampling)
    for eps in (0.1, 0.25, 1.0, 4.0):
        mech = TieAdaptiveQuantile(Median(0.0, 10.0), eps)
        for d, rate in ((mech.min_ties, mech.switch_rate), (0, mech.false_switch_rate)):
            x = [5.0] * (2 * d + 1)  # all equal, n = 2d + 1: D = d
            assert mech.diagnostic(x) == d
            assert mech.switch_probability(x) <= rate


def test_sizes_zero_one_two_release():
    mech = TieAdaptiveQuantile(Median(0.0, 1.0), 0.5)
    for x in ([], [1.0], [0.0, 1.0], [1.0, 1.0]):
        v = mech.release(x, rng=simulation(0)).value
        assert isinstance(v, float) and math.isfinite(v)


@pytest.mark.parametrize(
    ("kw", "param"),
    [({"share": 0.0}, "share"), ({"share": 1.5}, "share"), ({"switch_rate": 1.0}, "switch_rate"),
     ({"false_switch_rate": 0.0}, "false_switch_rate"), ({"min_ties": -1}, "min_ties"),
     ({"min_ties": 2.5}, "min_ties")],
)
def test_bad_public_parameters_name_themselves(kw, param):
    with pytest.raises(ParameterError) as err:
        TieAdaptiveQuantile(Median(0.0, 1.0), 1.0, **kw)
    assert err.value.parameter == param
