"""benchmarks/graphs.py --part bound: the chain LP (a local-minimax lower bound) and the
greedy chain of edge neighbours it runs on (small instances; nothing random)."""

from __future__ import annotations

import math
from itertools import combinations

import networkx as nx
import numpy as np
import pytest
from bench_support import load_benchmark

from instancedp.queries.graphs import KStarCount, TriangleCount, as_graph


@pytest.fixture(scope="module")
def gb():
    return load_benchmark("graphs")


def _geometric(eps: float, step: float) -> float:
    """E|Z| of the geometric mechanism on a lattice of spacing ``step`` (Ghosh, Roughgarden
    & Sundararajan 2009): 2α/(1 − α²)·step, α = e^{−ε}; written here from the formula."""
    a = math.exp(-eps)
    return 2 * a / (1 - a * a) * step


@pytest.mark.parametrize("eps", [1.0, 2.0])
def test_equal_steps_approach_the_geometric_mechanism_from_below(gb, eps):
    step = 7.0
    target = _geometric(eps, step)
    values = []
    for s in (1, 3, 6, 12):
        f = step * np.arange(-s, s + 1)
        values.append(gb.chain_lp(f, np.ones(f.size), eps))
    # the geometric mechanism (clamped to the chain) is feasible: never above it
    assert all(v <= target * (1 + 1e-9) for v in values)
    # longer chains add constraints: the value only grows, and a long one is within 1 %
    assert all(b >= a - 1e-9 for a, b in zip(values, values[1:], strict=False))
    assert values[-1] >= 0.99 * target
    assert values[0] < 0.9 * target  # short chains really are easier


@pytest.mark.parametrize("eps", [0.25, 1.0, 2.0])
def test_two_points_give_the_two_point_bound(gb, eps):
    delta = 13.0
    assert gb.chain_lp([5.0, 5.0 + delta], [1.0, 1.0], eps) == pytest.approx(
        delta / (1 + math.exp(eps)), rel=1e-9)


def test_the_truth_values_are_a_sufficient_support(gb):
    f = np.array([0.0, 2.0, 3.0, 7.0, 8.0, 15.0, 16.0, 22.0])  # unequal steps
    weights = np.array([3.0, 3.5, 2.0, 4.0, 4.0, 6.0, 5.0, 7.5])
    finer = np.unique(np.concatenate([f, (f[1:] + f[:-1]) / 2, f[:-1] + 0.3,
                                      [-40.0, -1.0, 23.0, 60.0]]))
    for w in (weights, np.ones(f.size)):
        on_truths = gb.chain_lp(f, w, 1.0)
        assert gb.chain_lp(f, w, 1.0, support=finer) == pytest.approx(on_truths, abs=1e-9)
    # and a support that misses a truth can only do worse
    assert gb.chain_lp(f, weights, 1.0, support=np.delete(f, 3)) > gb.chain_lp(f, weights, 1.0)


def _dense(g) -> np.ndarray:
    return g.adjacency.toarray().astype(np.int64)


def _f_dense(adj: np.ndarray, statistic: str) -> int:
    """The statistic from the dense adjacency, independently of the library."""
    if statistic == "triangles":
        return int(np.trace(adj @ adj @ adj)) // 6
    d = adj.sum(axis=1)
    return int((d * (d - 1) // 2).sum())


def _best_change(adj: np.ndarray, statistic: str, up: bool) -> int:
    """Brute force: the largest |f change| over all pairs toggled in that direction."""
    base = _f_dense(adj, statistic)
    best = 0
    for i, j in combinations(range(adj.shape[0]), 2):
        if adj[i, j] == (0 if up else 1):
            h = adj.copy()
            h[i, j] = h[j, i] = 1 - h[i, j]
            best = max(best, abs(_f_dense(h, statistic) - base))
    return best


@pytest.mark.parametrize("statistic", ["triangles", "kstars"])
def test_the_greedy_chain_toggles_one_pair_per_step_by_the_largest_change(gb, statistic):
    g = as_graph(nx.florentine_families_graph())  # 15 vertices, 3 triangles
    query = (TriangleCount(n_vertices=15) if statistic == "triangles"
             else KStarCount(2, n_vertices=15))
    for up in (False, True):
        prev = _dense(g)
        steps = 0
        for h, (i, j), change in gb.greedy_walk(g, statistic, 4, up):
            cur = _dense(h)
            diff = np.argwhere(np.triu(cur != prev, 1))
            assert diff.tolist() == [[i, j]]  # exactly one pair, the one named
            assert cur[i, j] == (1 if up else 0)
            assert change == _best_change(prev, statistic, up) > 0
            assert _f_dense(cur, statistic) - _f_dense(prev, statistic) == (
                change if up else -change)
            prev = cur
            steps += 1
        # downward, the 3 triangles are gone in at most 3 steps and the walk stops there
        if statistic == "triangles" and not up:
            assert 1 <= steps <= 3 and _f_dense(prev, statistic) == 0
        else:
            assert steps == 4
    ch = gb.chain(g, query, statistic, 3, (1.0,))
    f = np.array(ch["f"])
    assert f[ch["a"]] == query.value(g) and np.all(np.diff(f) > 0)
    assert np.array_equal(np.diff(f), ch["changes"])


def test_the_bound_is_between_the_two_point_bound_and_the_smooth_default(gb):
    # the smooth release is feasible for the LP (t* ≤ 1); the two-point pair inside the
    # chain bounds it from below
    g = as_graph(nx.karate_club_graph())
    query = TriangleCount(n_vertices=34)
    ch = gb.chain(g, query, "triangles", 4, (1.0,))
    f, w = np.array(ch["f"]), np.array(ch["weights"][0])
    assert w[ch["a"]] == gb.default_smooth_mae(query, g, 1.0)
    t = gb.chain_lp(f, w, 1.0)
    pair = max(np.diff(f) / np.maximum(w[:-1], w[1:])) / (1 + math.e)
    assert pair < t < 1.0
    # against the released (projected, smaller) errors the bound can only be higher
    wp = np.array(ch["projected_weights"][0])
    assert np.all(wp <= w) and wp[0] < w[0]  # the lowest graph is near enough to 0
    assert t - 1e-9 <= gb.chain_lp(f, wp, 1.0) < 1.0


def _law_mae(law, f: float) -> float:
    """E|Y − f| from an OutputDistribution: its atoms, then ∫ P(Y < y) dy below f and
    ∫ P(Y > y) dy above f over its continuous part."""
    from scipy import integrate

    atoms = sum(p * abs(float(a) - f) for a, p in law.atoms.items())
    below = integrate.quad(lambda y: float(law.cdf(np.array([y]))[0]), 0.0, f, limit=200)[0]
    above = integrate.quad(lambda y: float(law.sf(np.array([y]))[0]), f, np.inf, limit=400)[0]
    return atoms + below + above


@pytest.mark.parametrize("statistic", ["triangles", "kstars"])
def test_the_projected_error_is_the_released_laws(gb, statistic):
    from instancedp.recipes import build_mechanism

    g = as_graph(nx.florentine_families_graph())  # 3 triangles: the projection matters
    query = (TriangleCount(n_vertices=15) if statistic == "triangles"
             else KStarCount(2, n_vertices=15))
    mech = build_mechanism(statistic, 1.0, k=2 if statistic == "kstars" else None, vertices=15)
    law = mech.output_distribution(g)  # the library's exact law, clamped to [0, ∞)
    got = gb.projected_smooth_mae(query, g, 1.0)
    assert got == pytest.approx(_law_mae(law, query.value(g)), rel=1e-6)
    assert got < gb.default_smooth_mae(query, g, 1.0)
    # an empty graph: f = 0, the projection halves the error
    empty = as_graph(np.empty((0, 2), dtype=np.int64), 15)
    assert gb.projected_smooth_mae(query, empty, 1.0) == pytest.approx(
        gb.default_smooth_mae(query, empty, 1.0) / 2, rel=1e-9)


def _row(graph: str, eps: float, t: float, tp: float) -> dict:
    per_s = {s: {"t": t * (0.9 if s == "6" else 1.0), "t_projected": tp, "v_ratio": 0.4}
             for s in ("6", "12")}
    return {"graph": graph, "statistic": "triangles", "epsilon": eps, "a": 2, "b": 12,
            "f_range": [0.0, 9.0], "default_mae": 10.0, "t": t, "t_projected": tp,
            "v_ratio": 0.5, "per_s": per_s}


def _reading(gb, rows: list[dict]) -> str:
    return "\n".join(gb.bound_section({"quick": True, "s": [6, 12], "seconds": 1.0,
                                        "rows": rows}, []))


def test_the_reading_follows_the_numbers(gb):
    below = _reading(gb, [_row("x", 1.0, 0.40, 0.45), _row("y", 1.0, 0.30, 0.30)])
    assert ("At ε = 1.0 (the goal’s ε), t* released ≤ 0.5 in all 2 cells (the largest "
            "0.450, x triangles)") in below
    assert "does not exclude" in below and "cannot be met" not in below
    assert "by at most 11.11 %" in below  # S = 12 over S = 6: 1/0.9
    assert "Not converged" in below and "x triangles ε = 1.0 (+11.1 %)" in below
    above = _reading(gb, [_row("x", 1.0, 0.40, 0.55), _row("y", 1.0, 0.30, 0.30),
                          _row("z", 0.5, 0.40, 0.45)])
    assert "At ε = 1.0 (the goal’s ε), t* released > 0.5 in 1 of 2 cells (x triangles, " \
        "0.550)" in above
    assert "cannot be met there at ε = 1.0" in above
    assert "At ε = 0.5, t* released ≤ 0.5 in all 1 cells" in above
    # the goal's ε is read first
    assert above.index("At ε = 1.0 (the goal") < above.index("At ε = 0.5, t*")
