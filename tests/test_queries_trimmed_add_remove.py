"""The trimmed mean under add/remove neighbours, checked by brute force.

Every expected value comes from ``instancedp.queries.brute`` (breadth-first
search over add/remove neighbours, the empty table included), never from the
code under test.  Claims checked (docs/queries.md, "The trimmed mean under
add/remove"):

* LS (k = 0) is exact;
* B^(k) ≥ A^(k) for k ≤ 3 (an upper bound), never more than twice it here;
* B^(k)(x′) ≤ B^(k+1)(x) and SS_β(x′) ≤ e^β·SS_β(x) for every neighbour pair
  (β-smoothness, the property the smooth-sensitivity mechanisms need);
* SS_β ≥ the brute-force exact SS_β.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from instancedp.audit.profile import check_mechanism
from instancedp.errors import ParameterError
from instancedp.queries import TrimmedMean, brute
from instancedp.random import simulation
from instancedp.recipes import build_mechanism

LO, HI = 0.0, 3.0
DOM = (0.0, 1.0, 3.0)  # both bounds and an inner value
TRIMS = (0.0, 0.1, 0.25, 0.34, 0.49)
SIZES = range(0, 5)  # 0, 1, 2, 3, 4


def _data(n):
    return [list(x) for x in itertools.combinations_with_replacement(DOM, n)]


def _f(q):
    return lambda y: q.value(list(y))


@pytest.mark.parametrize("trim", TRIMS)
def test_local_sensitivity_exact_at_zero_and_an_upper_bound_to_distance_3(trim):
    q = TrimmedMean(trim, LO, HI)
    slack = q.rounding_slack
    for n in SIZES:
        for x in _data(n):
            ref = brute.local_sensitivities(
                _f(q), x, "add_remove", DOM, max_distance=3, allow_empty=True
            )
            got = [q.local_sensitivity(x, k) for k in range(4)]
            assert got[0] == pytest.approx(ref[0] + slack, abs=1e-12), x
            for k in range(4):
                assert ref[k] <= got[k] <= 2 * ref[k] + 1e-9, (x, k)
            assert got == sorted(got)  # A^(k) bounds grow with k
            assert q.global_sensitivity >= max(got)


@pytest.mark.parametrize("trim", (0.0, 0.34))
@pytest.mark.parametrize("beta", (0.1, 1.0))
def test_smooth_across_every_add_remove_pair_and_above_exact_ss(trim, beta):
    q = TrimmedMean(trim, LO, HI)
    for n in range(0, 4):
        for x in _data(n):
            ss = q.smooth_sensitivity(x, beta)
            exact = brute.smooth_sensitivity(
                _f(q), x, "add_remove", DOM, beta, global_sensitivity=HI - LO, allow_empty=True
            )
            assert ss >= exact >= q.local_sensitivity(x) - q.rounding_slack - 1e-12, x
            bx = [q.local_sensitivity(x, k) for k in range(5)]
            for xp in brute.neighbours(x, "add_remove", DOM, allow_empty=True):
                xp = list(xp)
                assert q.smooth_sensitivity(xp, beta) <= math.exp(beta) * ss * (1 + 1e-12)
                for k in range(4):
                    assert q.local_sensitivity(xp, k) <= bx[k + 1] + 1e-12, (x, xp, k)


def test_values_on_edge_inputs():
    q = TrimmedMean(0.25, LO, HI)
    assert q.value([]) == 1.5  # the public midpoint
    assert q.local_sensitivity([]) == pytest.approx(1.5)  # {z} for z at a bound
    assert q.value([3.0]) == 3.0
    assert q.value([0.0, 3.0, 3.0, 3.0]) == 3.0  # m = 1: drops 0 and one 3
    assert q.value([2.0] * 7) == 2.0 and q.local_sensitivity([2.0] * 7) > 0
    assert q.value([5e-324, 1e308]) == pytest.approx(1.5)  # clamped: 0 and 3
    assert "n" not in q.parameters() and q.parameters()["neighbours"] == "add_remove"


@pytest.mark.parametrize("beta", (0.002, 0.05))
def test_large_input_tail_bound_does_not_dominate(beta):
    """n = 10^5, β below and above 60 ln 2/4096: the exact scan stops at the public
    cap K = 4096 for the small β and the tail bound C(n − k) takes over, which must
    stay far below the cap's constant e^{−(K+1)β}(upper − lower) ≈ 0.03 here."""
    rng = np.random.default_rng(11)
    x = rng.normal(50, 10, 100_000)
    q = TrimmedMean(0.1, 0.0, 100.0)
    ss = q.smooth_sensitivity(x, beta)  # O(K²), K ≤ 4096: about 2 s unloaded (no timing assert)
    ls = q.local_sensitivity(x)
    # kept window: 80 000 values spread over < 100, so LS < 100/80 000
    assert ls <= ss <= 1.01 * ls < 100.0 / 80_000


def test_tail_bound_is_the_maximum_over_every_distance_beyond_the_cap():
    """``_trimmed_ar_log_tail`` (endpoints of a convex function) against direct
    enumeration of max_{k > K} e^{−kβ}·range/max(1, (1 − 2τ)(n − k) − 1)."""
    from fractions import Fraction

    from instancedp.queries.means import _trimmed_ar_log_tail

    log_range, cap = math.log(7.0), 3
    for n in (0, 1, 5, 50, 5000):
        for trim in (0.0, 0.25, 0.49):
            slope = 1 - 2 * Fraction(repr(trim))
            for beta in (0.001, 0.01, 0.5, 3.0):
                direct = max(
                    log_range - math.log(max(1, slope * (n - k) - 1)) - beta * k
                    for k in range(cap + 1, n + 50)
                )
                got = _trimmed_ar_log_tail(n, trim, log_range, beta, cap)
                assert got == pytest.approx(direct, abs=1e-12), (n, trim, beta)
    with pytest.raises(ParameterError, match="only applies to substitution"):
        TrimmedMean(0.1, 0, 1, n=10)
    with pytest.raises(ParameterError, match="only applies to substitution"):
        TrimmedMean(0.1, 0, 1, n=10)


def test_substitution_path_unchanged():
    q = TrimmedMean(0.25, 0.0, 4.0, "substitution", n=8)
    assert q.parameters() == {
        "trim": 0.25, "lower": 0.0, "upper": 4.0, "neighbours": "substitution", "n": 8,
    }  # fmt: skip
    assert q.global_sensitivity == pytest.approx(4.0 / 4)


def _pairs():
    """Every add/remove pair (x, x + one row), sizes 0–3 over the three-value domain."""
    out = []
    for n in range(0, 4):
        for x in itertools.combinations_with_replacement(DOM, n):
            for xp in brute.neighbours(x, "add_remove", DOM, allow_empty=True):
                if len(xp) > len(x):  # each unordered pair once (the check is symmetric)
                    out.append((np.asarray(x, float), np.asarray(xp, float)))
    return out


@pytest.mark.parametrize("trim", (0.0, 0.34))
@pytest.mark.parametrize("noise", ("default", "laplace"))
def test_exact_privacy_of_the_smooth_release_on_add_remove_pairs(trim, noise):
    """The smooth-sensitivity release of the trimmed mean as the recipe builds it (its
    default noise and γ rule, and Laplace with δ), checked by the exact privacy profile
    or loss over every brute-force add/remove pair (instancedp.audit: quadrature of the
    mechanism's output law, independent of the calibration code)."""
    opts = {} if noise == "default" else {"noise": "laplace", "delta": 1e-3}
    mech = build_mechanism("trimmed-mean", 1.0, bounds=(LO, HI), trim=trim, **opts)
    assert mech.parameters()["query_parameters"]["neighbours"] == "add_remove"
    result = check_mechanism(mech, _pairs())
    assert result.passed is True, result
    for x, xp in _pairs()[:3]:  # the release runs on the empty table and its neighbours
        for d in (x, xp):
            assert np.isfinite(mech.release(d, rng=simulation(2)).value)


@pytest.mark.parametrize("noise", ("default", "laplace"))
def test_privacy_check_catches_local_sensitivity_in_place_of_the_smooth_bound(noise):
    """Control: the same check fails when the noise is scaled by LS (not smooth)."""
    opts = {} if noise == "default" else {"noise": "laplace", "delta": 1e-3}
    mech = build_mechanism("trimmed-mean", 1.0, bounds=(LO, HI), trim=0.34, **opts)
    q = mech.query
    q.smooth_sensitivity = lambda d, beta: TrimmedMean.local_sensitivity(q, d)
    assert check_mechanism(mech, _pairs()).passed is False


def test_exact_privacy_of_ptr_on_add_remove_pairs():
    """PTR's distance uses B^(k): conservative (B ≥ A) and of sensitivity 1 (ball
    property), so the release stays (ε, δ)-DP; checked exactly on every pair."""
    mech = build_mechanism(
        "trimmed-mean", 1.0, bounds=(LO, HI), trim=0.25, mechanism="ptr", delta=0.05, ptr_bound=1.0
    )
    result = check_mechanism(mech, _pairs())
    assert result.passed is True, result
    assert {mech.distance(x) for x, _ in _pairs()} != {0.0}  # some tables pass the test
    # control: a distance read from LS alone (A^(k) := LS) is not DP, and the check says so
    q = mech.query
    q.local_sensitivity = lambda d, distance=0: TrimmedMean.local_sensitivity(q, d, 0)
    assert check_mechanism(mech, _pairs()).passed is False
