"""SmoothSensitivity.from_local, the β-smoothness checker and the brute-force reference."""

from __future__ import annotations

import math

import pytest

from instancedp.queries import (
    Median,
    Ratio,
    SmoothSensitivity,
    brute,
    is_beta_smooth_upper_bound,
)
from instancedp.queries.smooth import smoothness_violation

DOMAIN = (0, 1, 2, 3)


def test_from_local_reproduces_query_smooth_sensitivity():
    q = Median(0, 3, neighbours="substitution")
    for data in brute.datasets(DOMAIN, 5):
        for beta in (0.0, 0.1, 1.0):
            ss = SmoothSensitivity.from_local(
                lambda k, d=data: q.local_sensitivity(list(d), k),
                global_sensitivity=3.0,
            )
            assert ss(beta) == pytest.approx(q.smooth_sensitivity(list(data), beta), rel=1e-12)


def test_from_local_with_max_distance_only():
    ss = SmoothSensitivity.from_local(lambda k: min(1.0 + k, 4.0), max_distance=3)
    assert ss(0.1) == pytest.approx(max(math.exp(-0.1 * k) * min(1 + k, 4) for k in range(4)))


def test_contract_is_checked():
    with pytest.raises(ValueError, match="non-decreasing"):
        SmoothSensitivity.from_local(lambda k: 0.5 if k == 0 else 0.2, global_sensitivity=1)(0.01)
    with pytest.raises(ValueError, match="exceeds global_sensitivity"):
        SmoothSensitivity.from_local(lambda k: k + 1.0, global_sensitivity=1.5)(0.01)
    with pytest.raises(ValueError, match="finite global_sensitivity or max_distance"):
        SmoothSensitivity.from_local(lambda k: 1.0)
    with pytest.raises(ValueError, match="beta"):
        SmoothSensitivity.from_local(lambda k: 1.0, global_sensitivity=1)(-1)


def test_checker_accepts_ss_and_rejects_ls():
    q = Median(0, 3, neighbours="substitution")
    data = list(brute.datasets(DOMAIN, 3))
    assert is_beta_smooth_upper_bound(
        lambda x: q.smooth_sensitivity(x, 0.2), q.value, 0.2, data, "substitution", DOMAIN
    )
    # LS itself is not smooth: it jumps from 0 to 3 between neighbours
    bad = smoothness_violation(
        lambda x: q.local_sensitivity(x), q.value, 0.2, data, "substitution", DOMAIN
    )
    assert bad is not None and bad[0] == "not_smooth"
    # and half of SS is below LS somewhere
    low = smoothness_violation(
        lambda x: 0.5 * q.smooth_sensitivity(x, 0.2), q.value, 0.2, data, "substitution", DOMAIN
    )
    assert low is not None and low[0] == "below_ls"


def test_checker_on_ratio():
    r = Ratio()
    data = [d for n in (1, 2, 3, 4) for d in brute.datasets((0, 1), n)]
    assert is_beta_smooth_upper_bound(
        lambda x: r.smooth_sensitivity(x, 0.3), r.value, 0.3, data, "add_remove", (0, 1)
    )


# --- the reference itself ---------------------------------------------------------------


def test_brute_neighbours_and_datasets():
    assert len(list(brute.datasets((0, 1, 2), 4))) == math.comb(3 + 4 - 1, 4)
    assert brute.neighbours((0, 1), "substitution", (0, 1, 2)) == [(0, 0), (0, 2), (1, 1), (1, 2)]
    assert brute.neighbours((0, 1), "add_remove", (0, 1)) == [(0,), (0, 0, 1), (0, 1, 1), (1,)]
    assert brute.neighbours((5,), "add_remove", (5,)) == [(5, 5)]  # never empty
    g = next(iter(brute.graphs(4)))
    assert len(brute.neighbours(g, "edge")) == 6
    assert sum(1 for _ in brute.graphs(4)) == 2**6


def test_brute_hand_computed():
    # median of (0, 0, 3) in {0..3}: LS = 3 (x_2 → 3 moves the median 0 → 3)
    q = Median(0, 3, neighbours="substitution")
    assert brute.local_sensitivity(q.value, (0, 0, 3), "substitution", DOMAIN) == 3
    # mean of (1, 1) on {0..3}: replace a 1 by 3 → mean 2, change 1
    assert brute.local_sensitivity(lambda x: sum(x) / len(x), (1, 1), "substitution", DOMAIN) == 1
    assert brute.local_sensitivities(lambda x: max(x), (0, 0), "substitution", DOMAIN, 2) == [
        3,
        3,
        3,
    ]


def test_brute_bad_input():
    with pytest.raises(ValueError, match="relation"):
        brute.neighbours((1,), "swap", DOMAIN)
    with pytest.raises(ValueError, match="domain is required"):
        brute.neighbours((1,), "substitution")
    with pytest.raises(ValueError, match="n must be in"):
        list(brute.datasets(DOMAIN, 8))
    with pytest.raises(ValueError, match="n_vertices"):
        list(brute.graphs(7))


def test_generic_scan_in_the_base_class():
    from instancedp.queries import Query

    class Capped(Query):
        neighbours = "substitution"

        @property
        def global_sensitivity(self):
            return 1.0

        def value(self, data):
            return float(sum(data))

        def local_sensitivity(self, data, distance=0):
            return min(1.0, 0.1 * (len(data) + distance))  # plain data, no prepare

    expect = max(math.exp(-0.5 * k) * min(1.0, 0.1 * (2 + k)) for k in range(40))
    assert Capped().smooth_sensitivity([1, 2], 0.5) == pytest.approx(expect)
    assert len(Median(0, 1, neighbours="substitution").prepare([0.3, 0.1, 0.2])) == 3
