"""benchmarks/lower_bound.py: the LP lower bound on the neighbourhood and the exact
path errors it is compared with (small instances; no sampling, nothing random)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from bench_support import load_benchmark
from scipy import integrate

from instancedp.mechanisms.quantile import ExponentialQuantile, permute_and_flip_probabilities
from instancedp.queries.order import Quantile


@pytest.fixture(scope="module")
def lb():
    return load_benchmark("lower_bound")


X = np.array([0.2, 0.5, 0.7])  # n = 3
LO, HI = 0.0, 1.0
EDGES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])  # 4 bins [0, .25), [.25, .5), [.5, .75), [.75, 1]


def _interval_distances(truths: np.ndarray) -> np.ndarray:
    a, b = EDGES[:-1][None, :], EDGES[1:][None, :]
    f = truths[:, None]
    return np.maximum(np.maximum(a - f, f - b), 0.0)


def _binned(probs_at) -> np.ndarray:
    """Bin masses from a cdf (continuous law) evaluated at the edges."""
    c = probs_at(EDGES)
    return np.diff(c)


@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
@pytest.mark.parametrize("q", [0.5, 0.9])
def test_lp_is_below_every_mechanism_on_the_path(lb, relation, q):
    eps, k = 0.7, 2 if relation == "substitution" else 3
    path = lb.path_datasets(X, k, relation, LO, HI)
    f = lb.path_truths(path, q)
    d = _interval_distances(f)
    value, p = lb.lp_bound(d, eps)
    # the optimum is a family of laws that satisfies the ε-DP constraints
    assert np.all(p >= -1e-9) and np.allclose(p.sum(axis=1), 1.0, atol=1e-9)
    assert np.all(p[:-1] <= math.exp(eps) * p[1:] + 1e-9)
    assert np.all(p[1:] <= math.exp(eps) * p[:-1] + 1e-9)
    assert value > 0  # the truths differ along the path
    qq = Quantile(q, LO, HI)
    qq.neighbours = relation
    grid = np.linspace(LO, HI, 11)
    delta = 1.0 if relation == "substitution" else max(q, 1 - q)
    for base in ("uniform", "log"):
        m = ExponentialQuantile(qq, eps, base=base)
        exact = [lb.continuous_error(m, y, fj) for y, fj in zip(path, f, strict=True)]
        # its binned laws are feasible, so their binned cost is ≥ LP*; its exact error more
        binned = np.array([_binned(m.output_distribution(y).cdf) for y in path])
        assert np.all(binned[:-1] <= math.exp(eps) * binned[1:] + 1e-12)
        assert value <= float(np.mean((binned * d).sum(axis=1))) + 1e-12
        assert value <= float(np.mean(exact)) + 1e-12
    # permute-and-flip on a candidate grid (OpenDP's mechanism), its exact law
    pf = [lb.grid_pf_error(y, grid, q, eps, delta, fj) for y, fj in zip(path, f, strict=True)]
    assert value <= float(np.mean(pf)) + 1e-12
    # the max-over-path version bounds the path maximum and is ≥ the average version
    vmax, _ = lb.lp_bound(d, eps, "max")
    assert value - 1e-12 <= vmax <= max(pf) + 1e-12


def test_lp_two_datasets_is_randomised_response(lb):
    """Two neighbours with truths 0 and 1 and bins {0}, {1}: the least average error is
    1/(1 + e^ε) (randomised response is optimal), by hand."""
    d = np.array([[0.0, 1.0], [1.0, 0.0]])
    for eps in (0.1, 1.0, 3.0):
        value, p = lb.lp_bound(d, eps)
        assert value == pytest.approx(1 / (1 + math.exp(eps)), rel=1e-7)
        vmax, _ = lb.lp_bound(d, eps, "max")
        assert vmax == pytest.approx(1 / (1 + math.exp(eps)), rel=1e-7)


def test_lp_vanishes_when_eps_is_large_and_bins_hold_each_truth(lb):
    """With a singleton bin at every truth, the laws "η on every bin but f_j's, the rest
    on f_j's", η = 1/(e^ε + B − 1), are feasible (every ratio ≤ (1 − (B − 1)·η)/η = e^ε)
    and cost η·Σ_b d(f_j, b), so LP* ≤ e^−ε·max_j Σ_b d(f_j, b) → 0 as ε grows."""
    path = lb.path_datasets(X, 2, "add_remove", LO, HI)
    f = lb.path_truths(path, 0.5)
    d = lb.bin_distances(lb.bin_points(X, f, LO, HI), f)
    assert np.all((d == 0).sum(axis=1) >= 1)  # each truth is a singleton bin
    small, _ = lb.lp_bound(d, 1.0)
    assert small > 0.01
    for eps in (8.0, 15.0):
        large, _ = lb.lp_bound(d, eps)
        assert 0 <= large <= math.exp(-eps) * d.sum(axis=1).max() * (1 + 1e-6)


def test_paths_are_neighbour_chains_with_the_benchmarks_truth(lb):
    x = np.array([3.0, 1.0, 2.0, 2.0])
    ar = lb.path_datasets(x, 3, "add_remove", 0.0, 9.0)
    assert [y.size for y in ar] == [7, 6, 5, 4, 5, 6, 7]
    assert np.array_equal(ar[3], np.sort(x))

    def moved(y, z):  # rows of y not in z, rows of z not in y (as multisets)
        cy, cz = Counter(y.tolist()), Counter(z.tolist())
        return sum((cy - cz).values()), sum((cz - cy).values())

    for y, z in zip(ar[:-1], ar[1:], strict=True):  # one row added or removed
        assert sorted(moved(y, z)) == [0, 1]
    sub = lb.path_datasets(x, 4, "substitution", 0.0, 9.0)
    assert all(y.size == 4 for y in sub)
    assert np.array_equal(sub[0], [0, 0, 0, 0]) and np.array_equal(sub[-1], [9, 9, 9, 9])
    for y, z in zip(sub[:-1], sub[1:], strict=True):  # one row substituted
        assert moved(y, z) == (1, 1)
    # x_(⌈q·n⌉), 1-based: n = 4, q = 0.5 → the 2nd smallest; q = 0.9 → the 4th
    assert lb.path_truths([np.sort(x)], 0.5)[0] == 2.0
    assert lb.path_truths([np.sort(x)], 0.9)[0] == 3.0


@pytest.mark.parametrize("base", ["uniform", "log"])
@pytest.mark.parametrize("relation", ["add_remove", "substitution"])
def test_continuous_error_is_the_integral_of_the_cdf(lb, base, relation):
    """E|T − f| = ∫_lo^f F + ∫_f^hi (1 − F), integrated numerically from the library's cdf."""
    x = np.array([1.0, 1.0, 2.5, 4.0, 7.0])
    lo, hi = -20.0, 60.0
    qq = Quantile(0.5, lo, hi)
    qq.neighbours = relation
    m = ExponentialQuantile(qq, 0.8, base=base)
    law = m.output_distribution(x)
    f = 2.5
    cuts = sorted(set(law.kinks) | {0.0, f})
    num = 0.0
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        side = law.cdf if b <= f else (lambda t: 1 - law.cdf(t))
        num += integrate.quad(side, a, b, epsabs=1e-13, limit=200)[0]
    assert lb.continuous_error(m, x, f) == pytest.approx(num, rel=1e-8)


def test_permute_and_flip_law_matches_the_library(lb):
    rng = np.random.default_rng(5)
    for size, scale in ((40, 1.0), (200, 0.05), (300, 2.0)):
        u = -scale * rng.integers(0, 60, size).astype(float) + 0.1 * rng.normal(size=size)
        u[: size // 4] = u.max()
        ours, lib = lb.pf_probabilities(u), permute_and_flip_probabilities(u)
        assert np.allclose(ours, lib, rtol=1e-10, atol=1e-300)
