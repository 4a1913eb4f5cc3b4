"""InverseSensitivity: the exact quantile path length against breadth-first
search over neighbours, and the exact privacy check over brute-force neighbour
pairs for the exact (quantile, both relations), approximate (median, trimmed
mean, triangles) and grid variants; the release path against the exact law."""

from __future__ import annotations

import math

import numpy as np
import pytest

from instancedp.audit.profile import check_mechanism, neighbour_pairs_from_brute
from instancedp.errors import ParameterError
from instancedp.mechanisms.inverse import InverseSensitivity, quantile_path_length
from instancedp.queries.graphs import KStarCount, TriangleCount
from instancedp.queries.means import TrimmedMean
from instancedp.queries.order import Median, Quantile
from instancedp.random import simulation

DOMAIN = (0.0, 1.0, 3.0)


def quantile(q, lo, hi, relation):
    query = Median(lo, hi) if q == 0.5 else Quantile(q, lo, hi)
    query.neighbours = relation
    return query


def stat(y, q):
    """x_m with m = max(1, ⌈q·n⌉), from the definition (q exact in binary here)."""
    return sorted(y)[max(1, math.ceil(q * len(y))) - 1]


def steps(x, relation, values):
    out = set()
    if relation in ("add_remove",):
        out |= {tuple(sorted(x + (v,))) for v in values}
        out |= {x[:i] + x[i + 1 :] for i in range(len(x))}
    else:
        out |= {tuple(sorted(x[:i] + (v,) + x[i + 1 :])) for i in range(len(x)) for v in values}
    out.discard(x)
    return out


def bfs_length(x, t, q, relation, depth=5):
    values = tuple(sorted(set(DOMAIN) | {t, -1.0, 5.0}))
    frontier, seen = {tuple(sorted(x))}, set()
    for d in range(depth + 1):
        if any(len(y) and stat(y, q) == t for y in frontier):
            return d
        seen |= frontier
        frontier = {z for y in frontier for z in steps(y, relation, values)} - seen
    return None


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("q", [0.5, 0.25, 0.75])
def test_quantile_path_length_is_breadth_first_search(relation, q):
    for x in [(0.0,), (1.0, 3.0), (0.0, 0.0, 3.0), (0.0, 1.0, 1.0, 3.0), (1.0, 1.0, 1.0)]:
        for t in (-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 5.0):
            arr = np.asarray(x)
            got = quantile_path_length(
                int((arr < t).sum()), int((arr == t).sum()), int((arr > t).sum()), q, relation
            )
            assert got == bfs_length(x, t, q, relation), (x, t)


def pairs(relation, sizes=(1, 2, 3)):
    out = []
    for n in sizes:
        out += neighbour_pairs_from_brute(DOMAIN, n, relation)
    if relation == "add_remove":
        out += [((), (v,)) for v in DOMAIN]
    return out


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("q", [0.5, 0.75])
def test_exact_quantile_variant_is_exactly_eps_dp(relation, q):
    eps = 0.8
    mech = InverseSensitivity(quantile(q, -1.0, 4.0, relation), eps)
    # The release path is one code path whatever the relation and q (they change only
    # the weights): check_mechanism samples it (false failure ≤ 1e−6 per input) in one
    # cell, add/remove at q ≠ ½ (its pairs include the empty table); the others check
    # the exact law only.
    samples = 2000 if relation == "add_remove" and q != 0.5 else 0
    check = check_mechanism(mech, pairs(relation), samples=samples)
    assert check.passed, check
    assert check.measured >= 0.35 * eps


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_exact_quantile_grid_variant_is_exactly_eps_dp(relation):
    eps = 0.8
    mech = InverseSensitivity(quantile(0.5, -1.0, 4.0, relation), eps, resolution=0.5)
    check = check_mechanism(mech, pairs(relation))
    assert check.passed, check
    assert check.measured >= 0.35 * eps


@pytest.mark.parametrize("rho", [0.0, 0.4])
def test_approximate_median_is_exactly_eps_dp(rho):
    eps = 1.0
    mech = InverseSensitivity(Median(-1.0, 4.0), eps, exact=False, rho=rho)
    check = check_mechanism(mech, pairs("substitution"))
    assert check.passed, check
    assert check.measured >= 0.35 * eps


def test_approximate_trimmed_mean_is_exactly_eps_dp():
    eps = 1.0
    mech = InverseSensitivity(TrimmedMean(0.25, -1.0, 4.0, "substitution"), eps, rho=0.1)
    check = check_mechanism(mech, pairs("substitution", sizes=(2, 3, 4)))
    assert check.passed, check


@pytest.mark.parametrize(
    ("query", "upper"), [(TriangleCount(n_vertices=4), 4.0), (KStarCount(2, n_vertices=4), 12.0)]
)
def test_graph_statistics_on_the_integer_grid_are_exactly_eps_dp(query, upper):
    eps = 1.0
    mech = InverseSensitivity(query, eps, lower=0.0, upper=upper, resolution=1.0)
    check = check_mechanism(mech, neighbour_pairs_from_brute(None, 4, "edge"))
    assert check.passed, check
    assert check.measured >= 0.35 * eps
    # and the continuous, smoothed variant
    mech = InverseSensitivity(query, eps, lower=0.0, upper=upper, rho=0.5)
    check = check_mechanism(mech, neighbour_pairs_from_brute(None, 4, "edge"))
    assert check.passed, check


def test_law_is_exp_minus_half_eps_len():
    x = [0.0, 1.0, 1.0, 3.0, 3.0]
    mech = InverseSensitivity(quantile(0.5, -1.0, 4.0, "substitution"), 2.0)
    law = mech.output_distribution(x)
    # median x_3 = 1; t in (1, 3): L = 3 ≥ m = 3 → len 1; t in (3, 4): L = 5 → len 3
    assert float(law.logpdf(2.0) - law.logpdf(3.5)) == pytest.approx(2.0 * 2 / 2)
    assert float(law.cdf(4.0)) == pytest.approx(1.0)


@pytest.mark.parametrize("resolution", [None, 1.0])
def test_release_path_matches_exact_law(resolution):
    x = [0.0, 1.0, 1.0, 2.0, 3.0, 3.0, 3.0]
    mech = InverseSensitivity(quantile(0.5, -5.0, 9.0, "add_remove"), 1.0, resolution=resolution)
    draws = mech.sample(x, 3000, simulation(4))
    if resolution is None:
        law = mech.output_distribution(x)
        d = np.sort(draws)
        ks = np.max(np.abs(law.cdf(d) - np.arange(1, d.size + 1) / d.size))
        assert ks < 0.0356  # KS critical value at level 0.001, n = 3000
    else:
        law = mech.output_probabilities(x)
        for v, p in law.items():
            # 5-sigma band per point: false failure < 1e-5 over the 15 points
            assert abs(np.mean(draws == v) - p) < 5 * np.sqrt(p * (1 - p) / 3000) + 1e-12


def test_shell_truncation_is_public_and_total():
    mech = InverseSensitivity(Median(0.0, 1e6), 1.0, exact=False, max_shells=3)
    v = mech.release([1.0, 2.0, 3.0], simulation(0))
    assert 0.0 <= v.value <= 1e6
    assert v.parameters["max_shells"] == 3 and v.parameters["path_length"] == "approximate"


def test_empty_table_is_total_and_bad_parameters_name_themselves():
    mech = InverseSensitivity(quantile(0.5, 0.0, 10.0, "add_remove"), 1.0)
    assert 0.0 <= mech.release([], simulation(1)).value <= 10.0
    with pytest.raises(ParameterError) as e:
        InverseSensitivity(TriangleCount(n_vertices=4), 1.0)
    assert e.value.parameter == "lower"
    with pytest.raises(ParameterError) as e:
        InverseSensitivity(TriangleCount(n_vertices=4), 1.0, lower=0, upper=4, exact=True)
    assert e.value.parameter == "exact"
    with pytest.raises(ParameterError):
        InverseSensitivity(Median(0, 1), 1.0, max_shells=0)
