"""benchmarks/peer_envelope.py: the linear programme over every ε-DP quantile release on
a finite domain (tables enumerated, the LP's optimum checked by hand on a domain small
enough to solve on paper, its laws checked as ε-DP, its certificate against t*)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bench_support import load_benchmark


@pytest.fixture(scope="module")
def pe():
    return load_benchmark("peer_envelope")


@pytest.mark.parametrize("k,n_max", [(2, 3), (3, 4), (4, 2)])
def test_tables_and_neighbours_are_every_table_and_every_pair(pe, k, n_max):
    ar = pe.tables(k, n_max, "add_remove")
    assert len(ar) == len(set(ar)) == math.comb(n_max + k, k)  # multisets of size ≤ N
    pairs = pe.neighbour_pairs(ar, "add_remove")
    # one row added: every table with n < N has exactly k supersets of one more row
    assert len(pairs) == k * math.comb(n_max - 1 + k, k)
    for a, b in pairs:
        diff = np.subtract(ar[b], ar[a])
        assert sorted(np.abs(diff)) == [0] * (k - 1) + [1]
    sub = pe.tables(k, n_max, "substitution")
    assert len(sub) == math.comb(n_max + k - 1, k - 1) and {sum(c) for c in sub} == {n_max}
    for a, b in pe.neighbour_pairs(sub, "substitution"):
        diff = np.subtract(sub[b], sub[a])
        assert sorted(diff) == [-1] + [0] * (k - 2) + [1]


@pytest.mark.parametrize("eps", [0.25, 1.0, 3.0])
@pytest.mark.parametrize("bx,by", [(0.25, 0.25), (0.3, 0.2)])
def test_lp_optimum_on_a_domain_solved_by_hand(pe, eps, bx, by):
    """Two values, at most one row: x = {0} (truth 0), y = {1} (truth 1), both neighbours
    of the empty table e, u = P_e(1).  The errors are a = P_x(1) and c = P_y(0); ε-DP
    against e alone forces a ≥ A(u) = max(e^−ε·u, 1 − e^ε·(1 − u)) and
    c ≥ C(u) = max(e^−ε·(1 − u), 1 − e^ε·u), and these are reachable, so
    t* = min over u of max(A(u)/b_x, C(u)/b_y): by hand when b_x = b_y (u = ½), by a
    one-dimensional search otherwise — not by the programme under test."""
    counts = pe.tables(2, 1, "add_remove")
    pairs = pe.neighbour_pairs(counts, "add_remove")
    best = np.full(len(counts), np.nan)
    best[counts.index((1, 0))] = bx
    best[counts.index((0, 1))] = by
    f, w, sol = pe.envelope_lp(2, pe.table_truths(counts, 0.5), pairs, eps, best)
    t_star, p = sol.t, sol.p
    e = math.exp(eps)
    if bx == by:
        expected = max(0.5 / e, 1 - e / 2, 0.0) / bx
    else:
        u = np.linspace(0, 1, 2_000_001)
        a = np.maximum(u / e, 1 - e * (1 - u))
        c = np.maximum((1 - u) / e, 1 - e * u)
        expected = float(np.min(np.maximum(a / bx, c / by)))
    assert t_star == pytest.approx(expected, rel=1e-5)
    assert pe.check_solution(p, pairs, eps) < 1e-9
    cert = float(pe._lower_bound().certify(sol, f, w, pairs, eps))
    assert t_star * (1 - 1e-6) <= cert <= t_star * (1 + 1e-9)


def test_a_small_domain_solution_is_dp_and_certified(pe):
    r = pe.run_domain(3, 4, 1, 0.5, 1.0, "add_remove")
    assert r["violation"] < 1e-9
    assert r["t_star"] * (1 - 1e-6) <= r["certified"] <= r["t_star"] * (1 + 1e-9)
    # the peers are feasible points of the programme up to the rounding argument, so no
    # peer can have a worst ratio below t*; the best of them is ≥ 1 somewhere by definition
    peers = {k: v for k, v in r["worst_ratio"].items() if not k.startswith("default")}
    assert min(peers.values()) >= 1.0
    assert r["worst_ratio"][r["ours"]] >= r["t_star"] * (1 - 1e-6)


def test_certificate_rejects_a_wrong_dual(pe):
    """The bound from arbitrary non-negative weights is a valid lower bound, never above t*."""
    counts = pe.tables(3, 3, "add_remove")
    pairs = pe.neighbour_pairs(counts, "add_remove")
    rng = np.random.default_rng(3)
    best = np.where([sum(c) > 0 for c in counts], rng.uniform(0.5, 1.0, len(counts)), np.nan)
    f, w, sol = pe.envelope_lp(3, pe.table_truths(counts, 0.5), pairs, 1.0, best)
    t_star, lb = sol.t, pe._lower_bound()
    for _ in range(5):
        noisy = lb.LPSolution(**{
            **sol.__dict__,
            "dual_err": np.abs(sol.dual_err + rng.normal(0, 0.05, sol.dual_err.size)),
            "dual_dp": np.abs(sol.dual_dp + rng.normal(0, 0.05, sol.dual_dp.size))})
        assert float(lb.certify(noisy, f, w, pairs, 1.0)) <= t_star * (1 + 1e-9)
