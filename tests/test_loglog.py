"""LogLogQuantile (the bound-free median in one step): the exact privacy check over
brute-force neighbour pairs under both relations, the density against its definition,
the chart, adversarial tables (empty, one row, all equal, huge and subnormal rows),
moving the largest row changes only the value, the record states no bound, and a
seeded accuracy floor on a column far from 0 where the scan's release failed."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

from instancedp.audit.profile import check_mechanism, neighbour_pairs_from_brute
from instancedp.errors import ParameterError
from instancedp.mechanisms.loglog import LogLogQuantile
from instancedp.mechanisms.quantile import LOGLOG_ALPHA, loglog_map
from instancedp.random import simulation

DOMAIN = (-2.0, 0.0, 3.0)
BIG = float(np.finfo(np.float64).max)


def pairs(relation):
    """Every neighbour pair of tables of 1 and 2 rows (add/remove: 1 against 2 rows) on
    DOMAIN.  The empty table's pairs are left out here: against one row the median's
    score is ½ everywhere, the same law, a loss of 0 (and a slow range search over the
    doubles); the empty table's release is checked in the adversarial test."""
    return [(x, y) for n in (1, 2) for x, y in neighbour_pairs_from_brute(DOMAIN, n, relation)
            if len(x) and len(y)]


def score(x, t, q):
    x = np.asarray(x, float)
    return abs((1 - q) * np.sum(x < t) - q * np.sum(x > t))


class _InChart:
    """The mechanism seen through its public bijection ψ: the law of ψ(T) and the
    release path's ψ(T) (same privacy loss; the check runs on a bounded interval)."""

    def __init__(self, mech):
        self.mech, self.guarantee = mech, mech.guarantee
        self.psi = loglog_map(mech.log_scale)[0]

    def output_distribution(self, data):
        return self.mech.chart_distribution(data)

    def sample(self, data, size, rng=None):
        return self.psi(self.mech.sample(data, size, rng))


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_exactly_eps_dp_over_brute_force_pairs(relation):
    eps = 0.8
    mech = LogLogQuantile(0.5, eps, neighbours=relation)
    check = check_mechanism(_InChart(mech), pairs(relation), samples=300)
    assert check.passed, check
    assert check.measured >= 0.3 * eps  # not loose: a one-rank move spends most of it


def test_chart_law_is_the_density_seen_through_psi():
    x = [-2.0, 3.0, 3.0, 40.0]
    mech = LogLogQuantile(0.5, 0.8, neighbours="substitution")
    law, chart = mech.output_distribution(x), mech.chart_distribution(x)
    psi = loglog_map(mech.log_scale)[0]
    t = np.array([-1e10, -2.5, 0.0, 1.0, 3.5, 20.0, 1e6])
    assert chart.cdf(psi(t)) == pytest.approx(law.cdf(t), rel=1e-12, abs=1e-15)


def test_density_against_definition():
    x = [2.0, 5.0, 40.0]
    mech = LogLogQuantile(0.5, 1.0)  # add/remove: Δ = ½
    law = mech.output_distribution(x)
    ts = np.array([-1e6, -3.0, 1.0, 3.0, 10.0, 100.0, 1e12, 1e300])
    mu = 1.0 / ((1.0 + np.abs(ts)) * (1.0 + np.log1p(np.abs(ts))) ** (1 + LOGLOG_ALPHA))
    ref = mu * np.exp([-score(x, t, 0.5) / (2 * 0.5) for t in ts])
    got = np.exp(law.logpdf(ts))
    assert got / got[2] == pytest.approx(ref / ref[2], rel=1e-9)
    assert float(law.cdf(-BIG)) == pytest.approx(0.0, abs=1e-12)
    assert float(law.cdf(BIG)) == pytest.approx(1.0)


def test_chart_maps_every_double_into_a_bounded_interval_and_back():
    psi, psi_inv = loglog_map(1.0)
    t = np.array([-BIG, -1e300, -7.5, -5e-324, 0.0, 1e-300, 1.0, 750.0, 1e200, BIG])
    p = psi(t)
    assert np.all(np.diff(p) >= 0) and np.all(np.abs(p) < 1.0 / LOGLOG_ALPHA)
    mid = np.abs(t) < 1e300
    assert psi_inv(p[mid]) == pytest.approx(t[mid], rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("rows", [[], [7.0], [5.0] * 4, [-BIG, BIG], [5e-324, -5e-324, 0.0],
                                  [1e308, 1.5e308, 1.7e308]])
@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_adversarial_tables_release_a_finite_double(rows, relation):
    mech = LogLogQuantile(0.5, 1.0, neighbours=relation)
    values = mech.sample(rows, 20, simulation(2))
    assert np.all(np.isfinite(values))


def test_moving_the_largest_row_changes_only_the_value():
    x = np.array([3.0, 4.0, 5.0, 6.0, 7.0])
    y = x.copy()
    y[-1] = 1e300  # nothing reads a bound from the rows
    mech = LogLogQuantile(0.5, 1.0)
    a = mech.release(x, simulation(1)).to_dict()
    b = mech.release(y, simulation(1)).to_dict()
    a.pop("value"), b.pop("value")
    assert a == b
    assert a["mechanism"] == "loglog_quantile"
    assert a["parameters"]["bounds"] is None and a["parameters"]["base"] == "log-log"


def test_far_from_zero_median_at_small_n():
    # n = 101 rows near 750 (a stand-in for a wine column), substitution, ε = 1: the scan's
    # release stopped on the grid before the data in most draws; here each release is
    # within 10 % of the median with probability ≥ 0.95 (measured 0.99+), so fewer than 180
    # of 200 happens with probability < binom.cdf(179, 200, 0.95) ≈ 1e-3 (the false failure)
    x = np.round(np.random.default_rng(1).normal(750.0, 300.0, 101).clip(280.0, 1700.0))
    t = np.sort(x)[math.ceil(0.5 * x.size) - 1]
    got = LogLogQuantile(0.5, 1.0, neighbours="substitution").sample(x, 200, simulation(4))
    assert binom.cdf(179, 200, 0.95) < 2e-3
    assert np.sum(np.abs(got - t) <= 0.1 * t) >= 180


def test_bad_parameters_name_themselves():
    with pytest.raises(ParameterError) as e:
        LogLogQuantile(1.5, 1.0)
    assert e.value.parameter == "q"
    with pytest.raises(ParameterError) as e:
        LogLogQuantile(0.5, 1.0, neighbours="edge")
    assert e.value.parameter == "neighbours"
