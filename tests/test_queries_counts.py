"""Count, Sum and Ratio under add/remove against brute force."""

from __future__ import annotations

import math

import numpy as np
import pytest

from instancedp.queries import Count, Ratio, Sum, brute
from instancedp.queries.counts import ratio_local_sensitivity

RATIO = Ratio()


@pytest.mark.parametrize("n", range(1, 8))
def test_ratio_local_sensitivity_matches_brute(n):
    for data in brute.datasets((0, 1), n):
        expect = brute.local_sensitivities(RATIO.value, data, "add_remove", (0, 1), 6)
        got = [RATIO.local_sensitivity(list(data), k) for k in range(7)]
        assert got == pytest.approx(expect, rel=1e-12), data


@pytest.mark.parametrize("n", range(1, 8))
def test_ratio_smooth_sensitivity_matches_brute(n):
    for data in brute.datasets((0, 1), n):
        for beta in (0.05, 0.4, 2.0):
            expect = brute.smooth_sensitivity(
                RATIO.value, data, "add_remove", (0, 1), beta, global_sensitivity=0.5
            )
            assert RATIO.smooth_sensitivity(list(data), beta) == pytest.approx(expect, rel=1e-12)


def test_ratio_local_sensitivity_against_blog_formula():
    # 004 (FORMULAS §5): LS = max(b − a, a)/(b² − b) — exact for 0 < a < b ...
    for b in range(2, 40):
        for a in range(1, b):
            assert ratio_local_sensitivity(a, b) == pytest.approx(max(b - a, a) / (b * b - b))
        # ... and an upper bound 1/(b − 1) where the true value is 1/(b + 1)
        for a in (0, b):
            assert ratio_local_sensitivity(a, b) == pytest.approx(1 / (b + 1))
            assert ratio_local_sensitivity(a, b) < max(b - a, a) / (b * b - b)


def test_ratio_large_b_smooth_is_cheap_and_monotone():
    rng = np.random.default_rng(2)
    flags = (rng.uniform(size=10**6) < 0.3).astype(float)
    ss = RATIO.smooth_sensitivity(flags, 0.01)
    a, b = int(flags.sum()), flags.size
    # the definition over all k (vectorised): A^(k) from the closed form
    k = np.arange(0, b + 1)
    assert ss == pytest.approx(np.max(np.exp(-0.01 * k) * ratio_local_sensitivity(a, b, k)))
    assert ss >= RATIO.local_sensitivity(flags)


@pytest.mark.parametrize("query", [Count(), Sum(-1, 2)])
def test_count_and_sum_match_brute(query):
    dom = (-1, 0, 2)
    for n in (1, 2, 3):
        for data in brute.datasets(dom, n):
            expect = brute.local_sensitivities(query.value, data, "add_remove", dom, 2)
            got = [query.local_sensitivity(list(data), k) for k in range(3)]
            assert got == pytest.approx(expect, rel=1e-5)
            assert query.smooth_sensitivity(list(data), 0.3) == pytest.approx(expect[0], rel=1e-5)
    assert query.global_sensitivity == pytest.approx(expect[0], rel=1e-5)


def test_values_and_empty():
    assert Count().value([1.0, 5.0, 3.0]) == 3
    assert Count().value([]) == 0
    assert Sum(0, 1).value([0.5, 7.0, -2.0]) == 1.5  # clamped
    assert Sum(0, 1).value([]) == 0
    assert RATIO.value([1, 0, 0, 1]) == 0.5
    assert RATIO.parameters() == {"neighbours": "add_remove"}


def test_bad_input():
    with pytest.raises(ValueError, match="2 value"):
        RATIO.value([0, 1, 0.5, 2])
    with pytest.raises(ValueError, match="empty"):
        RATIO.value([])
    with pytest.raises(ValueError, match="NaN"):
        RATIO.value([1, float("nan")])
    with pytest.raises(ValueError, match="lower < upper"):
        Sum(1, 1)
    with pytest.raises(ValueError, match="beta"):
        RATIO.smooth_sensitivity([1, 0], math.inf)
    with pytest.raises(ValueError, match="a <= b"):
        ratio_local_sensitivity(3, 2)
