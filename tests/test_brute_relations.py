"""Every tabular query under every relation it supports, against brute force.

Breadth-first enumeration of neighbours (``queries.brute``) on small domains:
sizes 0 (add/remove only), 1, 2, 3, all-equal data and values at the bounds
are all in the enumerated sets.  Plus regressions for float sums and huge
bounds on the public API.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from instancedp.errors import ParameterError
from instancedp.queries import (
    Count,
    Max,
    Mean,
    Median,
    Min,
    Quantile,
    Ratio,
    Sum,
    TrimmedMean,
    brute,
)
from instancedp.queries.means import exact_clamped_sum, fixed_point_exponent, fixed_point_units

DOM = (0.0, 1.0, 2.0, 4.0)
LO, HI = 0.0, 4.0
ORDER = {
    "median": lambda rel: Median(LO, HI, neighbours=rel),
    "q0.3": lambda rel: Quantile(0.3, LO, HI, neighbours=rel),
    "q0.9": lambda rel: Quantile(0.9, LO, HI, neighbours=rel),
    "min": lambda rel: Min(LO, HI, neighbours=rel),
    "max": lambda rel: Max(LO, HI, neighbours=rel),
}


def _datasets(sizes):
    for n in sizes:
        yield from itertools.combinations_with_replacement(DOM, n)


@pytest.mark.parametrize("name", sorted(ORDER))
def test_order_statistics_add_remove_match_brute(name):
    """A^(k), k ≤ 3, and SS_β for sizes 0–3 (the empty table included)."""
    q = ORDER[name]("add_remove")
    for x in _datasets(range(0, 4)):
        expect = brute.local_sensitivities(
            q.value, list(x), "add_remove", DOM, max_distance=3, allow_empty=True
        )
        got = [q.local_sensitivity(list(x), k) for k in range(4)]
        assert got == pytest.approx(expect, abs=1e-12), x
        for beta in (0.4, 1.5):
            ss = brute.smooth_sensitivity(
                q.value,
                list(x),
                "add_remove",
                DOM,
                beta,
                global_sensitivity=q.global_sensitivity,
                allow_empty=True,
            )
            assert q.smooth_sensitivity(list(x), beta) == pytest.approx(ss, rel=1e-12), (x, beta)


@pytest.mark.parametrize("name", sorted(ORDER))
def test_order_statistics_substitution_match_brute(name):
    q = ORDER[name]("substitution")
    for x in _datasets(range(1, 4)):
        expect = brute.local_sensitivities(q.value, list(x), "substitution", DOM, max_distance=3)
        got = [q.local_sensitivity(list(x), k) for k in range(4)]
        assert got == pytest.approx(expect, abs=1e-12), x


def test_median_add_remove_is_one_sided_and_never_above_substitution():
    """Even n: only the up gap moves the median; odd n: only the down gap."""
    even, odd = [0.0, 1.0, 2.0, 4.0], [0.0, 1.0, 4.0]
    ar, sub = Median(LO, HI), Median(LO, HI, neighbours="substitution")
    assert ar.local_sensitivity(even) == 1.0  # x_3 − x_2
    assert sub.local_sensitivity(even) == 1.0
    assert ar.local_sensitivity(odd) == 1.0  # x_2 − x_1
    assert sub.local_sensitivity(odd) == 3.0  # max(x_2 − x_1, x_3 − x_2)
    for x in _datasets(range(1, 4)):
        assert ar.local_sensitivity(list(x)) <= sub.local_sensitivity(list(x))


def test_order_statistic_values_on_the_empty_table():
    """The empty table is data under add/remove: a value by the public convention."""
    assert Median(LO, HI).value([]) == HI
    assert Min(LO, HI).value([]) == HI
    assert Max(LO, HI).value([]) == LO
    assert Median(LO, HI).local_sensitivity([]) == HI - LO
    with pytest.raises(ValueError, match="empty"):
        Median(LO, HI, neighbours="substitution").value([])


@pytest.mark.parametrize(
    "query, relation, sizes",
    [
        (Sum(-1.0, 2.0), "add_remove", range(0, 4)),
        (Sum(-1.0, 2.0, neighbours="substitution"), "substitution", range(1, 4)),
        (Count(), "add_remove", range(0, 4)),
        (Mean(-1.0, 2.0, "substitution"), "substitution", range(1, 4)),
        (TrimmedMean(0.34, -1.0, 2.0, "substitution"), "substitution", range(1, 4)),
    ],
    ids=["sum-ar", "sum-sub", "count-ar", "mean-sub", "trimmed-sub"],
)
def test_sums_counts_means_match_brute(query, relation, sizes):
    dom = (-1.0, 0.0, 2.0)
    empty = relation == "add_remove"
    for n in sizes:
        for x in itertools.combinations_with_replacement(dom, n):
            expect = brute.local_sensitivities(
                query.value, list(x), relation, dom, max_distance=2, allow_empty=empty
            )
            got = [query.local_sensitivity(list(x), k) for k in range(3)]
            # the computed sensitivities include the (tiny) rounding slack: never below
            assert all(g >= e for g, e in zip(got, expect, strict=True)), x
            assert got == pytest.approx(expect, rel=1e-5, abs=1e-12), x
            assert query.global_sensitivity >= max(expect)


def test_ratio_under_substitution_matches_brute():
    q = Ratio(neighbours="substitution")
    for n in (1, 2, 3, 4):
        for x in itertools.combinations_with_replacement((0.0, 1.0), n):
            expect = brute.local_sensitivities(q.value, list(x), "substitution", (0, 1), 2)
            assert [q.local_sensitivity(list(x), k) for k in range(3)] == pytest.approx(expect)
            assert q.smooth_sensitivity(list(x), 0.5) == pytest.approx(expect[0])
    assert q.global_sensitivity == 1.0


@pytest.mark.parametrize("cls", [Median, Min, Max, Sum, Mean, Ratio, Count])
def test_relation_keyword_is_checked(cls):
    args = () if cls in (Ratio, Count) else (0.0, 1.0)
    with pytest.raises(ParameterError) as err:
        cls(*args, neighbours="edge")
    assert err.value.parameter == "neighbours"
    assert "add_remove" in cls.supported_relations


def test_count_refuses_substitution():
    with pytest.raises(ParameterError, match="neighbours"):
        Count(neighbours="substitution")


# -- exact sums on the public grid ---------------------------------------------


def test_fixed_point_rule():
    assert fixed_point_exponent(0.0, 1.0) == 52  # 2^0 ≥ 1
    assert fixed_point_exponent(0.0, 1.5) == 51  # 2^1 ≥ 1.5
    assert fixed_point_exponent(-3.0, 2.0) == 50  # 2^2 ≥ 3
    assert fixed_point_exponent(2.0**52, 2.0**52 + 1, shift=True) == 52  # range 1
    assert fixed_point_exponent(-1e308, 1e308) == 52 - 1024
    # a subnormal range: s > 1023, the product by 2^s is still exact
    s = fixed_point_exponent(0.0, 5e-324)
    assert s == 52 + 1074
    assert fixed_point_units([5e-324], 0.0, 5e-324).tolist() == [2.0**52]


def test_exact_sum_is_order_free_and_exact():
    rng = np.random.default_rng(7)
    x = rng.uniform(-1e6, 1e6, 10_000)
    a = exact_clamped_sum(x, -1e6, 1e6)
    b = exact_clamped_sum(x[::-1].copy(), -1e6, 1e6)
    assert a == b
    s = fixed_point_exponent(-1e6, 1e6)
    from fractions import Fraction

    k = np.trunc(np.ldexp(x, s))
    assert a == sum(int(v) for v in k)  # the integer sum itself, no float rounding
    assert float(Fraction(a, 2**s)) == pytest.approx(math.fsum(x), rel=1e-12)
    # more than 2^11 maximal terms overflow a plain int64 sum; the split does not
    big = np.full(5000, 1.0)
    assert exact_clamped_sum(big, 0.0, 1.0) == 5000 * 2**52


def test_float_mean_moves_by_at_most_its_sensitivity_at_2_pow_52():
    """Bounds [2^52, 2^52 + 1], n = 8: every substitution pair within GS (np.mean was off by 1)."""
    lo, hi = 2.0**52, 2.0**52 + 1
    q = Mean(lo, hi, "substitution", n=8)
    values = {x: q.value(list(x)) for x in itertools.combinations_with_replacement((lo, hi), 8)}
    for x, v in values.items():
        for y in brute.neighbours(x, "substitution", (lo, hi)):
            assert abs(values[tuple(y)] - v) <= q.global_sensitivity


def test_timestamp_mean_and_trimmed_mean_stay_within_sensitivity():
    """Epoch nanoseconds in a 100 µs window, n = 1000: change one row to a bound."""
    lo = 1.7e18
    hi = lo + 1e5
    rng = np.random.default_rng(3)
    x = np.sort(lo + rng.uniform(0, 1e5, 1000))
    sub = "substitution"
    for q in (Mean(lo, hi, sub, n=1000), TrimmedMean(0.1, lo, hi, sub, n=1000)):
        v = q.value(x)
        ls = q.local_sensitivity(x)
        for i in (0, 1, 99, 100, 499, 899, 900, 999):
            for b in (lo, hi):
                y = x.copy()
                y[i] = b
                assert abs(q.value(y) - v) <= ls, (type(q).__name__, i, b)


def test_huge_bounds_are_refused_or_saturate():
    for make in (
        lambda: Mean(-1e308, 1e308),
        lambda: TrimmedMean(0.1, -1e308, 1e308),
        lambda: Median(-1e308, 1e308),
        lambda: Sum(-1e308, 1e308),
    ):
        with pytest.raises(ParameterError) as err:
            make()
        assert err.value.parameter == "bounds"
    # finite range, huge sum: the value saturates at the largest double for every data set
    s = Sum(0.0, 1e308)
    assert s.value([1e308, 1e308]) == np.finfo(np.float64).max
    assert s.value([1e308]) == 1e308


def test_capped_add_remove_smooth_bound_is_an_upper_bound_and_smooth():
    """β = 14: the exact scan stops at the public cap K = 3 < n; the bound beyond it
    (substitution SS, capped by the range term) must stay ≥ the exact SS and
    β-smooth between add/remove neighbours (every pair up to size 5)."""
    from instancedp.queries.order import _ar_cap

    beta = 14.0
    assert _ar_cap(beta) == 3
    for name in ("median", "q0.9", "min"):
        q = ORDER[name]("add_remove")
        ss = {x: q.smooth_sensitivity(list(x), beta) for x in _datasets(range(0, 6))}
        for x, s in ss.items():
            exact = brute.smooth_sensitivity(
                q.value, list(x), "add_remove", DOM, beta,
                global_sensitivity=q.global_sensitivity, allow_empty=True,
            )  # fmt: skip
            assert s >= exact * (1 - 1e-12), (name, x)
            if len(x) < 5:
                for y in brute.neighbours(x, "add_remove", DOM, allow_empty=True):
                    assert s <= math.exp(beta) * ss[tuple(y)] * (1 + 1e-12), (name, x, y)
