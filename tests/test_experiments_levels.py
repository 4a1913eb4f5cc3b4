"""Example 22 / 23 reproductions and the Gaussian / SmallDB experiment tables.

The exhaustive 2-triangle tables are compared with a plain-Python brute force
written from the definitions (every triangle pair, every edge flip, every
added edge) and with the independent sparse implementation in
``instancedp.queries.graphs``.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest

from instancedp.experiments import gaussian as gx
from instancedp.experiments import levels as ex22
from instancedp.experiments import smalldb as sx
from instancedp.experiments import two_triangles as tt
from instancedp.mechanisms.levels import check_instance_noise, layered_adjacency
from instancedp.random import simulation


def _graph(code: int, edges: list[tuple[int, int]]) -> set[tuple[int, int]]:
    return {e for i, e in enumerate(edges) if code >> i & 1}


def _f(g: set[tuple[int, int]], n: int) -> int:
    """Pairs of triangles sharing an edge, by listing triangles."""
    tris = [t for t in combinations(range(n), 3) if all(p in g for p in combinations(t, 2))]
    return sum(1 for s, t in combinations(tris, 2) if len(set(s) & set(t)) == 2)


def _a(g: set[tuple[int, int]], n: int, e: tuple[int, int]) -> int:
    i, j = e
    return sum(
        1
        for w in range(n)
        if w not in e and tuple(sorted((i, w))) in g and tuple(sorted((j, w))) in g
    )


def test_exhaustive_tables_match_brute_force():
    n = 4
    edges = list(combinations(range(n), 2))
    tab = tt.exhaustive_tables(n)
    for code in range(1 << len(edges)):
        g = _graph(code, edges)
        f = _f(g, n)
        assert tab["f"][code] == f
        ls = max(abs(_f(g ^ {e}, n) - f) for e in edges)
        assert tab["ls"][code] == ls
        extended = [g | {e} for e in edges if e not in g] or [g]
        a_h = max(_a(h, n, e) for h in extended for e in h) if any(extended) else 0
        assert tab["a"][code] == a_h
        assert tab["edges"][code] == len(g)


def test_exhaustive_tables_match_queries_module():
    graphs = pytest.importorskip("instancedp.queries.graphs")
    n = 5
    edges = list(combinations(range(n), 2))
    tab = tt.exhaustive_tables(n)
    for code in range(0, 1 << len(edges), 7):  # every 7th graph: 147 graphs
        g = sorted(_graph(code, edges))
        arr = np.array(g, dtype=np.int64).reshape(-1, 2)
        assert graphs.two_triangle_count(graphs.Graph.from_edges(arr, n)) == tab["f"][code]
        assert (
            graphs.two_triangle_local_sensitivity(graphs.Graph.from_edges(arr, n))
            == tab["ls"][code]
        )
        assert graphs.two_triangle_a_max(graphs.Graph.from_edges(arr, n)) == tab["a"][code]


@pytest.mark.parametrize("n", [4, 5, 6])
def test_lemma25_forms_and_layers(n):
    summ = tt.summary(n)
    assert summ["max_exact_ls"] == summ["gs_formula"] == tt.global_sensitivity(n)
    assert summ["violations_proof"] == 0 and summ["violations_coarse"] == 0
    if n == 4:
        assert summ["violations_printed"] == 0
    rows = tt.layer_table(n)
    for row in rows:
        assert row["max_bound_proof"] == row["closed_form_layer_bound"]
        assert row["max_exact_ls"] <= row["max_bound_proof"]
    bounds = [row["max_bound_proof"] for row in rows]
    assert bounds == sorted(bounds)
    # At the top the proof bound is exactly the global sensitivity (tight).
    assert rows[-1]["max_bound_proof"] == tt.global_sensitivity(n)


def test_lemma25_violation_counts_match_brute_force_on_5_vertices():
    """Count, over all 2^10 graphs, those whose LS exceeds each form of Lemma 25's bound:
    proof (5/2)·a(a − 1), coarse (5/2)·a², printed (3/2)·a² (not a bound)."""
    n = 5
    edges = list(combinations(range(n), 2))
    counts = {"proof": 0, "coarse": 0, "printed": 0}
    for code in range(1 << len(edges)):
        g = _graph(code, edges)
        f = _f(g, n)
        ls = max(abs(_f(g ^ {e}, n) - f) for e in edges)
        extended = [g | {e} for e in edges if e not in g] or [g]
        a = max((_a(h, n, e) for h in extended for e in h), default=0)
        counts["proof"] += ls > 2.5 * a * (a - 1)
        counts["coarse"] += ls > 2.5 * a * a
        counts["printed"] += ls > 1.5 * a * a
    summ = tt.summary(n)
    assert counts["proof"] == counts["coarse"] == 0 < counts["printed"]
    assert {form: summ[f"violations_{form}"] for form in counts} == counts


def test_k5_minus_edge_counterexample_to_three_halves():
    edges = list(combinations(range(5), 2))
    g = set(edges) - {(0, 1)}
    ls = max(abs(_f(g ^ {e}, 5) - _f(g, 5)) for e in edges)
    assert ls == 15 > 1.5 * 3**2


def test_layered_rates_for_larger_graphs_are_valid():
    n, eps, delta = 30, 1.0, 1e-6
    lam = tt.layered_rates(n, eps, delta)
    levels = tt.layer_bound(n, np.arange(lam.size))
    adj = layered_adjacency(lam.size)
    pairs = [(k, j) for k, js in adj.items() for j in js if j > k]
    assert check_instance_noise(lam, levels, pairs, eps, delta).ok
    rows = tt.noise_table((30,), eps, delta, (0.0, 4.0))
    # Saturated layers: noise 2·GS/ε (α = ½), i.e. half as good as Laplace.
    assert rows[-1]["alg1_noise"] == pytest.approx(2 * tt.global_sensitivity(n) / eps)


def test_example22_quick():
    rows = ex22.example22(rs=(10, 100, 1000), reps=200, seed=5)
    for row in rows:
        t, r = row["t"], row["r"]
        exact = 2 / row["epsilon"] * (1 + 2 / t) * (1 - (1 + t / 2) ** -r)
        assert row["alg1_exact"] == pytest.approx(exact, rel=1e-6)
        assert row["laplace_exact"] == pytest.approx(r / row["epsilon"])
        # Seeded simulation within 5 standard errors (false-failure rate < 1e-6).
        assert abs(row["alg1_measured"] - row["alg1_exact"]) < 5 * row["alg1_measured_se"]
        assert abs(row["laplace_measured"] - r) < 5 * row["laplace_measured_se"]
        if r >= 100:
            assert abs(row["paper_formula_rel_error"]) < 1e-3
    assert rows[-1]["ratio_laplace_over_alg1"] > 20


def test_gaussian_table_rows():
    rows = {(r["epsilon"], r["delta"]): r for r in gx.sigma_table()}
    r = rows[(1.0, 1e-5)]
    assert (round(r["sigma_canard_olivier"], 3), round(r["sigma_classic"], 3)) == (4.390, 4.845)
    assert round(r["sigma_analytic"], 3) == 3.731
    for r in rows.values():
        assert r["exact_delta_classic"] <= r["delta"]
        assert r["exact_delta_canard_olivier"] <= r["delta"]
        assert r["exact_delta_analytic"] <= r["delta"]
        assert r["in_distribution_delta_co_two_sided"] <= r["delta"]
        assert r["in_distribution_delta_canard_olivier"] > r["delta"]


def test_smalldb_experiment_quick():
    rows = sx.measured(ns=(10, 1000), ks=(1, 25), quick=True)
    for r in rows:
        assert r["smalldb_quantile_error"] <= r["smalldb_bound"]
        assert r["laplace_quantile_error_exact"] <= r["laplace_bound"]
        b = r["k"] / (r["epsilon"] * r["n"])
        # Sampled Laplace mean vs b·H_k: max_k |Lap(b)| has sd b·√(Σ 1/i²) < bπ/√6,
        # so the mean of 500 draws has sd < bπ/√6/√500; a 6-sd band (p < 1e-8).
        sd = b * math.pi / math.sqrt(6) / math.sqrt(500)
        assert abs(r["laplace_mean_error_sampled"] - r["laplace_mean_error_exact"]) < 6 * sd
    cross = {(c["n"], c["k"], c["universe_size"]): c["crossing_epsilon"] for c in sx.crossings()}
    assert round(cross[(10, 1, 3)], 4) == 0.1498
    assert round(cross[(1000, 120, 3)], 3) == 2.087
    curves = sx.bound_curves(ns=(10,), ks=(1,), epsilons=[0.1, 1.0])
    assert curves[0]["laplace_bound"] == pytest.approx(math.log(20) / 1.0)


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-3), (0.5, 1e-6), (3.0, 0.05)])
def test_two_triangle_algorithm1_exact_privacy_on_all_graphs(eps, delta):
    """Every graph on 5 vertices and every edge flip: δ(ε) ≤ δ for the released laws."""
    from test_levels import laplace_hockey_stick

    n = 5
    tab = tt.exhaustive_tables(n)
    lam = tt.layered_rates(n, eps, delta)
    m = 10
    worst = 0.0
    for code in range(1 << m):
        for e in range(m):
            other = code ^ (1 << e)
            if other < code:
                continue  # each unordered pair once; both directions below
            c1, s1 = float(tab["f"][code]), 1 / lam[tab["edges"][code]]
            c2, s2 = float(tab["f"][other]), 1 / lam[tab["edges"][other]]
            worst = max(
                worst,
                laplace_hockey_stick(c1, s1, c2, s2, eps),
                laplace_hockey_stick(c2, s2, c1, s1, eps),
            )
    assert worst <= delta


def test_two_triangle_mechanism_release():
    mech = tt.two_triangle_mechanism(5, 1.0, 1e-6)
    edges = [(0, 1), (1, 2), (0, 2), (2, 3)]
    law = mech.output_distribution(edges)
    lam = tt.layered_rates(5, 1.0, 1e-6)[4]
    # One triangle, no 2-triangle: f = 0, 4 edges ⇒ level 4, density λ_4/2 at 0; the
    # release is projected onto the count's range [0, ∞): the lower half is an atom at 0.
    assert law.atoms[0.0] == pytest.approx(0.5)
    assert law.pdf(np.array([1.0]))[0] == pytest.approx(lam / 2 * math.exp(-lam))
    rel = mech.release(edges, rng=simulation(0))
    assert set(rel.parameters) == {
        "epsilon", "delta", "n_levels", "rates", "query", "query_parameters", "neighbours",
        "post_processing",
    }
    assert rel.parameters["neighbours"] == "edge"  # public: from the query, not the edges
    with pytest.raises(ValueError, match="n_vertices"):
        tt.two_triangle_mechanism(2, 1.0, 1e-6)
