"""Means: fast A^(k) and SS against brute force and an independent enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from instancedp.queries import Mean, TrimmedMean, brute

DOMAIN = (0, 1, 2, 3, 4)
LO, HI = 0.0, 4.0
SUB = {t: TrimmedMean(t, LO, HI, "substitution") for t in (0.1, 0.2, 0.34, 0.49)}
SUB[0.0] = Mean(LO, HI, "substitution")
AR = Mean(LO, HI, "add_remove")

small = st.lists(st.sampled_from(DOMAIN), min_size=1, max_size=5)


@given(small, st.sampled_from(sorted(SUB)))
@settings(max_examples=200)
def test_substitution_local_sensitivity_matches_brute(data, trim):
    q = SUB[trim]
    n = len(data)
    expect = brute.local_sensitivities(q.value, data, "substitution", DOMAIN, max_distance=n + 1)
    got = [q.local_sensitivity(data, k) for k in range(n + 2)]
    assert got == pytest.approx(expect, rel=1e-12, abs=1e-15)


@given(small, st.sampled_from(sorted(SUB)), st.sampled_from([0.05, 0.3, 1.0]))
@settings(max_examples=200)
def test_substitution_smooth_sensitivity_matches_brute(data, trim, beta):
    q = SUB[trim]
    expect = brute.smooth_sensitivity(q.value, data, "substitution", DOMAIN, beta)
    assert q.smooth_sensitivity(data, beta) == pytest.approx(expect, rel=1e-12)


@given(st.lists(st.sampled_from(DOMAIN), min_size=1, max_size=4))
@settings(max_examples=120)
def test_add_remove_local_sensitivity_matches_brute(data):
    expect = brute.local_sensitivities(AR.value, data, "add_remove", DOMAIN, max_distance=3)
    got = [AR.local_sensitivity(data, k) for k in range(4)]
    assert got == pytest.approx(expect, rel=1e-12, abs=1e-15)


@given(st.lists(st.sampled_from(DOMAIN), min_size=1, max_size=3), st.sampled_from([0.7, 1.5]))
@settings(max_examples=60)
def test_add_remove_smooth_sensitivity_matches_brute(data, beta):
    expect = brute.smooth_sensitivity(
        AR.value, data, "add_remove", DOMAIN, beta, global_sensitivity=AR.global_sensitivity
    )
    assert AR.smooth_sensitivity(data, beta) == pytest.approx(expect, rel=1e-12)


def _ls_by_definition(y, lo, hi):
    """LS of the mean of y under add/remove: add lo or hi (extremes suffice), remove any."""
    mu = sum(y) / len(y)
    out = max(abs((sum(y) + v) / (len(y) + 1) - mu) for v in (lo, hi))
    if len(y) > 1:
        out = max(out, max(abs((sum(y) - z) / (len(y) - 1) - mu) for z in y))
    return out


def test_add_remove_on_real_values_against_enumeration():
    # independent: every y = x − R + A with A from {lo, hi} and |R| + |A| ≤ k
    # (added values can be taken at the bounds: LS is convex in each added value)
    rng = np.random.default_rng(11)
    lo, hi = -1.0, 3.0
    for _ in range(25):
        x = list(np.round(rng.uniform(lo, hi, int(rng.integers(1, 6))), 3))
        for k in range(4):
            best = 0.0
            for r in range(0, min(k, len(x)) + 1):
                for removed in itertools.combinations(range(len(x)), r):
                    kept = [v for i, v in enumerate(x) if i not in removed]
                    for n_lo in range(0, k - r + 1):
                        for n_hi in range(0, k - r - n_lo + 1):
                            y = kept + [lo] * n_lo + [hi] * n_hi
                            if y:
                                best = max(best, _ls_by_definition(y, lo, hi))
            got = Mean(lo, hi, "add_remove").local_sensitivity(x, k)
            assert got == pytest.approx(best, rel=1e-12), (x, k)


def test_values_and_clamping():
    x = [-3.0, 0.5, 1.0, 2.0, 9.0, 3.0, 3.5]
    clamped = np.clip(x, 0, 4)
    assert Mean(0, 4, "substitution").value(x) == pytest.approx(clamped.mean())
    for trim in (0.1, 0.2, 0.3):
        expect = stats.trim_mean(clamped, trim)  # cuts int(trim·n) from each end
        assert TrimmedMean(trim, 0, 4).value(x) == pytest.approx(expect)
    # substitution LS of the mean: max(upper − x_min, x_max − lower)/n
    assert Mean(0, 10, "substitution").local_sensitivity([2.0, 3.0, 6.0]) == pytest.approx(8.0 / 3)


def test_global_sensitivities():
    assert Mean(0, 4, "substitution").global_sensitivity == pytest.approx(
        4.0, abs=1e-14
    )  # worst case over n (n unknown)
    assert Mean(0, 4, "substitution", n=8).global_sensitivity == pytest.approx(0.5, abs=1e-14)
    assert Mean(0, 4, "add_remove").global_sensitivity == pytest.approx(2.0, abs=1e-14)
    assert TrimmedMean(0.25, 0, 4, "substitution", n=8).global_sensitivity == pytest.approx(
        1.0, abs=1e-14
    )  # n − 2m = 4
    with pytest.raises(ValueError, match="public n is 8"):
        Mean(0, 4, "substitution", n=8).value([1.0, 2.0])


def test_smooth_is_beta_smooth_for_add_remove():
    for data in itertools.chain(brute.datasets(DOMAIN, 1), brute.datasets(DOMAIN, 3)):
        ss = AR.smooth_sensitivity(list(data), 0.5)
        assert ss >= AR.local_sensitivity(list(data))
        for y in brute.neighbours(data, "add_remove", DOMAIN):
            assert ss <= math.exp(0.5) * AR.smooth_sensitivity(list(y), 0.5) * (1 + 1e-12)


def test_trimmed_mean_large_input_matches_definition():
    rng = np.random.default_rng(5)
    x = np.round(rng.normal(2, 1, 400), 1)
    q = TrimmedMean(0.1, 0, 4, "substitution")
    slow = max(math.exp(-0.2 * k) * q.local_sensitivity(x, k) for k in range(401))
    assert q.smooth_sensitivity(x, 0.2) == pytest.approx(slow, rel=1e-12)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: TrimmedMean(0.5, 0, 1), r"trim must be a number in \[0, 0.5\)"),
        (lambda: TrimmedMean(-0.1, 0, 1), "trim"),
        (lambda: TrimmedMean("a", 0, 1), "trim"),
        (lambda: Mean(0, 1, "edge"), "neighbours must be"),
        (lambda: Mean(0, 1, "add_remove", n=3), "only applies to substitution"),
        (lambda: Mean(0, 1, "substitution", n=0), "n must be an integer"),
        (lambda: Mean(3, 1, "substitution"), "lower < upper"),
    ],
)
def test_bad_parameters(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_data():
    with pytest.raises(ValueError, match="1 NaN/inf"):
        Mean(0, 1, "substitution").value([0.5, float("nan")])
    with pytest.raises(ValueError, match="empty"):
        AR.smooth_sensitivity([], 0.1)
    with pytest.raises(ValueError, match="beta"):
        AR.smooth_sensitivity([1.0], -1)
    assert Mean(0, 1, drop_missing=True).value([0.5, float("nan"), 1.0]) == 0.75


def test_substitution_smooth_sensitivity_is_beta_smooth():
    from instancedp.queries import is_beta_smooth_upper_bound

    data = list(brute.datasets(DOMAIN, 2)) + list(brute.datasets(DOMAIN, 4))
    for q in (SUB[0.0], SUB[0.2]):
        assert is_beta_smooth_upper_bound(
            lambda x, q=q: q.smooth_sensitivity(x, 0.3), q.value, 0.3, data, "substitution", DOMAIN
        )
