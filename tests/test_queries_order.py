"""Order statistics: fast A^(k) and SS against brute force and the O(n²) definition."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from instancedp.queries import Max, Median, Min, Quantile, brute, order

DOMAIN = (0, 1, 2, 3, 4)
LO, HI = 0.0, 4.0
BETAS = (0.05, 0.3, 1.0)

small_data = st.lists(st.sampled_from(DOMAIN), min_size=1, max_size=5)
levels = st.sampled_from([0.1, 0.25, 0.3, 0.5, 0.6, 0.75, 0.9, 0.99])


_FIXED = (
    Median(LO, HI, neighbours="substitution"),
    Min(LO, HI, neighbours="substitution"),
    Max(LO, HI, neighbours="substitution"),
)


@functools.cache
def _queries(q):
    # One instance per statistic for the whole module: brute force memoises f and LS
    # per statistic instance, so the examples share one exploration of the domain.
    return (Quantile(q, LO, HI, neighbours="substitution"), *_FIXED)


# --- the index --------------------------------------------------------------------------


@given(st.floats(0.001, 0.999), st.integers(1, 400))
@settings(max_examples=300)
def test_quantile_index_is_inverse_cdf(q, n):
    # smallest m >= 1 with m/n >= q, on exact rationals (q read as its decimal repr)
    m = next(i for i in range(1, n + 1) if Fraction(i, n) >= Fraction(repr(q)))
    assert order.quantile_index(q, n) == m


def test_median_index_even_and_odd():
    assert (
        Median(0, 10, neighbours="substitution").value([1, 2, 3, 4]) == 2
    )  # lower median for even n
    assert Median(0, 10, neighbours="substitution").value([5, 1, 3]) == 3
    assert (
        Quantile(0.3, 0, 100, neighbours="substitution").value(list(range(1, 11))) == 3
    )  # q·n = 3 exactly
    assert Quantile(0.1, 0, 100, neighbours="substitution").value(list(range(1, 11))) == 1
    assert Quantile(0.7, 0, 100, neighbours="substitution").value(list(range(1, 11))) == 7


def test_values_match_numpy_inverted_cdf():
    rng = np.random.default_rng(1)
    for _ in range(50):
        x = rng.normal(size=int(rng.integers(1, 50)))
        for q in (0.1, 0.5, 0.77):
            expect = np.quantile(np.clip(x, -1, 1), q, method="inverted_cdf")
            assert Quantile(q, -1, 1, neighbours="substitution").value(x) == pytest.approx(
                expect, abs=0
            )


# --- fast == brute force ----------------------------------------------------------------


@given(small_data, levels)
@settings(max_examples=250)
def test_local_sensitivity_at_distance_matches_brute(data, q):
    for query in _queries(q):
        n = len(data)
        expect = brute.local_sensitivities(
            query.value, data, "substitution", DOMAIN, max_distance=n + 1
        )
        got = [query.local_sensitivity(data, k) for k in range(n + 2)]
        assert got == pytest.approx(expect, abs=1e-12), (query.name, data)


@given(small_data, levels, st.sampled_from(BETAS))
@settings(max_examples=250)
def test_smooth_sensitivity_matches_brute(data, q, beta):
    for query in _queries(q):
        expect = brute.smooth_sensitivity(query.value, data, "substitution", DOMAIN, beta)
        assert query.smooth_sensitivity(data, beta) == pytest.approx(expect, rel=1e-12)


def test_exhaustive_n6_median_and_quantile():
    # every multiset of 6 values in {0..4}: ties, all-equal, values at both bounds
    median = Median(LO, HI, neighbours="substitution")  # one instance: brute force's memo
    for data in brute.datasets(DOMAIN, 6):
        for query in (median,):
            expect = brute.local_sensitivities(
                query.value, data, "substitution", DOMAIN, max_distance=4
            )
            assert [query.local_sensitivity(data, k) for k in range(5)] == expect
            ss = brute.smooth_sensitivity(query.value, data, "substitution", DOMAIN, 0.4)
            assert query.smooth_sensitivity(data, 0.4) == pytest.approx(ss, rel=1e-12)


# --- fast == the O(n²) definition on larger inputs --------------------------------------


def _random_sorted(rng, n, kind):
    if kind == "ties":
        x = rng.integers(0, 5, n).astype(float)
    elif kind == "equal":
        x = np.full(n, 2.0)
    elif kind == "bounds":
        x = rng.choice([0.0, 10.0], n)
    else:
        x = rng.uniform(-2, 12, n)
    return np.sort(np.clip(x, 0.0, 10.0))


@pytest.mark.parametrize("force_dc", [False, True])
def test_fast_equals_naive_definition(monkeypatch, force_dc):
    if force_dc:
        # exercise the divide and conquer and the bisection of sorted blocks
        monkeypatch.setattr(order, "_DENSE", 0)
        monkeypatch.setattr(order, "_LEAF", 3)
    rng = np.random.default_rng(7)
    for trial in range(100):
        n = int(rng.integers(1, 60))
        x = _random_sorted(rng, n, ["ties", "equal", "bounds", "uniform"][trial % 4])
        m = order.quantile_index(float(rng.uniform(0.01, 0.99)), n)
        pairs = [(m, m), (1, 1), (n, n), (min(2, n), max(n - 1, min(2, n)))]
        for beta in (0.0, 0.02, 0.3, 2.0):
            for i_max, j_min in pairs:
                fast = math.exp(order.pair_log_smooth_sensitivity(x, 0, 10, i_max, j_min, beta))
                slow = order.pair_smooth_sensitivity_naive(x, 0, 10, i_max, j_min, beta)
                assert fast == pytest.approx(slow, rel=1e-12), (x, i_max, j_min, beta)


def test_long_runs_log_scale_and_speed():
    # all-equal and heavy-tie data: the answer comes from far away and underflows
    n = 2_000_001
    x = np.full(n, 3.0)
    m = order.quantile_index(0.5, n)
    # only the pairs (0, j) with x_j = upper or (i, n+1) reach the bounds: k = n − m or m − 1
    log_ss = order.pair_log_smooth_sensitivity(x, 0.0, 10.0, m, m, 0.01)
    expect = max(math.log(10.0 - 3.0), math.log(3.0)) - 0.01 * min(n - m, m - 1)
    assert log_ss == pytest.approx(expect, rel=1e-12)
    assert (
        Median(0, 10, neighbours="substitution").smooth_sensitivity(x, 0.01) == 0.0
    )  # underflow, documented
    ties = np.sort(np.random.default_rng(3).integers(0, 21, 100_001)).astype(float)
    q = Median(0, 20, neighbours="substitution")
    k = 60
    # compare with the definition restricted to k ≤ 60 (larger k cannot win at β = 1)
    naive = max(math.exp(-j) * q.local_sensitivity(ties, j) for j in range(k))
    assert q.smooth_sensitivity(ties, 1.0) == pytest.approx(naive, rel=1e-12)


# --- smoothness -------------------------------------------------------------------------


@given(small_data, st.sampled_from(BETAS), levels)
@settings(max_examples=120)
def test_smooth_sensitivity_is_beta_smooth_and_above_ls(data, beta, q):
    query = Quantile(q, LO, HI, neighbours="substitution")
    ss = query.smooth_sensitivity(data, beta)
    assert ss >= query.local_sensitivity(data, 0) - 1e-15
    for y in brute.neighbours(data, "substitution", DOMAIN):
        assert ss <= math.exp(beta) * query.smooth_sensitivity(list(y), beta) * (1 + 1e-12)


# --- API contracts ----------------------------------------------------------------------


def test_prepare_is_shared_and_checked():
    x = [5.0, -3.0, 2.0, 11.0, 4.0]
    med, q9 = (
        Median(0, 10, neighbours="substitution"),
        Quantile(0.9, 0, 10, neighbours="substitution"),
    )
    p = med.prepare(x)
    assert np.array_equal(p.data, [0.0, 2.0, 4.0, 5.0, 10.0])  # clamped and sorted
    assert q9.value(p) == q9.value(x) == 10.0
    assert med.smooth_sensitivity(p, 0.1) == med.smooth_sensitivity(x, 0.1)
    with pytest.raises(ValueError, match="prepared for a different query"):
        Median(0, 11, neighbours="substitution").value(p)


def test_clamping_and_global_sensitivity():
    assert Median(0, 1, neighbours="substitution").value([-5, 7, 0.5]) == 0.5
    assert Min(0, 1, neighbours="substitution").value([-5, 7]) == 0.0
    assert Max(0, 1, neighbours="substitution").value([-5, 7]) == 1.0
    assert Median(2, 5, neighbours="substitution").global_sensitivity == 3.0
    assert Median(0, 1, neighbours="substitution").max_distance([0.5, 0.5]) == 2
    # A^(k) for k ≥ n: the whole range
    assert Median(0, 1, neighbours="substitution").local_sensitivity([0.5, 0.5], 2) == 1.0
    assert Median(0, 1, neighbours="substitution").local_sensitivity([0.5] * 3, 10**9) == 1.0


def test_single_record():
    q = Median(0, 4, neighbours="substitution")
    assert q.local_sensitivity([1.0], 0) == 3.0  # x_2 − x_1 = 4 − 1
    assert q.smooth_sensitivity([1.0], 0.5) == pytest.approx(max(3.0, 4 * math.exp(-0.5)))


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Median(1, 1, neighbours="substitution"), "lower < upper"),
        (lambda: Median(2, 1, neighbours="substitution"), "lower < upper"),
        (lambda: Median(0, math.inf, neighbours="substitution"), "finite"),
        (lambda: Quantile(0.0, 0, 1, neighbours="substitution"), r"q must be in \(0, 1\)"),
        (lambda: Quantile(1.0, 0, 1, neighbours="substitution"), r"q must be in \(0, 1\)"),
        (lambda: Quantile(float("nan"), 0, 1, neighbours="substitution"), "q must be"),
    ],
)
def test_bad_parameters(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_bad_data_and_beta():
    q = Median(0, 1, neighbours="substitution")
    with pytest.raises(ValueError, match="2 NaN/inf"):
        q.value([0.1, float("nan"), float("inf")])
    with pytest.raises(ValueError, match="empty"):
        q.value([])
    with pytest.raises(ValueError, match="beta"):
        q.smooth_sensitivity([0.1], -0.1)
    with pytest.raises(ValueError, match="beta"):
        q.smooth_sensitivity([0.1], float("nan"))
    with pytest.raises(ValueError, match="distance"):
        q.local_sensitivity([0.1], -1)
    dm = Median(0, 1, drop_missing=True, neighbours="substitution")
    assert dm.value([0.2, float("nan"), 0.4, 0.9]) == 0.4
