"""benchmarks/graph_atlas.py: the exact minimax LP over all graphs of v vertices (one law
per isomorphism class).  Small v only; nothing random."""

from __future__ import annotations

import math
from itertools import combinations

import networkx as nx
import numpy as np
import pytest
from bench_support import load_benchmark


@pytest.fixture(scope="module")
def ga():
    return load_benchmark("graph_atlas")


@pytest.fixture(scope="module")
def gb():
    return load_benchmark("graphs")


def _cell(ga, gs, statistic, eps, reference="projected"):
    vals = ga.graph_values(gs, statistic, (eps,))
    f = np.array(vals["f"])
    w = np.array(vals["wp" if reference == "projected" else "w"][eps])
    return f, w, ga.solve(f, w, gs.pairs, eps)


def test_atlas_classes_and_their_adjacency(ga):
    # 11 and 34 graphs on 4 and 5 vertices up to isomorphism
    assert [len(ga.atlas_classes(v).graphs) for v in (3, 4, 5)] == [4, 11, 34]
    gs = ga.atlas_classes(4)
    # one toggle changes the edge count by exactly 1; every class but K4 gains an edge
    edges = [G.number_of_edges() for G in gs.graphs]
    assert all(abs(edges[a] - edges[b]) == 1 for a, b in gs.pairs)
    assert {a for a, b in gs.pairs if edges[b] > edges[a]} | {
        b for a, b in gs.pairs if edges[a] > edges[b]} == {
        k for k, e in enumerate(edges) if e < 6}
    # triangle + isolated vertex: one toggle from the path on 3 vertices (+ isolated) and
    # from the paw (triangle + pendant edge); two from the path P4 and the star K1,3
    cls = {}
    for name, G in {"triangle": nx.Graph([(0, 1), (1, 2), (0, 2)]),
                    "p3": nx.Graph([(0, 1), (1, 2)]),
                    "paw": nx.Graph([(0, 1), (1, 2), (0, 2), (2, 3)]),
                    "p4": nx.path_graph(4), "star": nx.star_graph(3)}.items():
        G.add_nodes_from(range(4))
        cls[name] = next(k for k, H in enumerate(gs.graphs) if nx.is_isomorphic(G, H))
    pairs = {tuple(p) for p in gs.pairs.tolist()}

    def adjacent(x, y):
        return (min(cls[x], cls[y]), max(cls[x], cls[y])) in pairs

    assert adjacent("triangle", "p3") and adjacent("triangle", "paw")
    assert not adjacent("triangle", "p4") and not adjacent("triangle", "star")
    assert adjacent("star", "paw") and adjacent("p4", "paw")


@pytest.mark.parametrize("v", [4, 5])
def test_class_adjacency_is_every_labelled_toggle(ga, v):
    """The class pairs are exactly the pairs of classes of the 2^C(v,2) labelled graphs'
    toggles (each labelled graph's class found by ``is_isomorphic`` alone)."""
    gs = ga.atlas_classes(v)
    lab = ga.labelled_graphs(v)
    by_edges: dict[int, list[int]] = {}
    for k, G in enumerate(gs.graphs):
        by_edges.setdefault(G.number_of_edges(), []).append(k)
    cls = [next(k for k in by_edges[H.number_of_edges()] if nx.is_isomorphic(H, gs.graphs[k]))
           for H in lab.graphs]
    assert sorted(set(cls)) == list(range(len(gs.graphs)))
    expected = {(min(cls[a], cls[b]), max(cls[a], cls[b])) for a, b in lab.pairs
                if cls[a] != cls[b]}
    assert {tuple(p) for p in gs.pairs.tolist()} == expected


@pytest.mark.parametrize("statistic", ["triangles", "kstars"])
def test_symmetry_reduction_equals_the_labelled_lp_at_four_vertices(ga, statistic):
    """One law per isomorphism class loses nothing: the LP over the 11 classes and over
    all 64 labelled graphs (every one of their 192 toggles a DP constraint) agree."""
    eps = 1.0
    _, _, by_class = _cell(ga, ga.atlas_classes(4), statistic, eps)
    lab = ga.labelled_graphs(4)
    assert len(lab.graphs) == 64 and lab.pairs.shape == (192, 2)
    _, _, labelled = _cell(ga, lab, statistic, eps)
    assert labelled.t == pytest.approx(by_class.t, rel=1e-7, abs=1e-9)


def test_solution_is_dp_on_every_labelled_toggle_and_certified(ga):
    """The class LP's laws, spread to the 64 labelled graphs of 4 vertices by
    isomorphism (found independently of the class adjacency), satisfy ε-DP on every
    toggle; the certified lower bound and the repaired upper bound bracket t*."""
    eps = 1.0
    gs = ga.atlas_classes(4)
    f, w, sol = _cell(ga, gs, "kstars", eps)
    checks = ga.verify(sol, f, w, gs.pairs, eps)
    lower = float(ga.certify(sol, f, w, gs.pairs, eps))
    assert lower <= sol.t + 1e-12 and sol.t <= checks["upper"] + 1e-12
    assert checks["upper"] - lower < 1e-7
    lab = ga.labelled_graphs(4)
    cls = [next(k for k, G in enumerate(gs.graphs) if nx.is_isomorphic(H, G))
           for H in lab.graphs]
    p = np.clip(sol.p, 0, None)
    p /= p.sum(axis=1, keepdims=True)
    e = math.exp(eps)
    for a, b in lab.pairs:
        pa, pb = p[cls[a]], p[cls[b]]
        assert np.all(pa <= e * pb * (1 + 1e-6) + 1e-9)
        assert np.all(pb <= e * pa * (1 + 1e-6) + 1e-9)


def test_certificate_is_a_lower_bound_for_any_multipliers(ga):
    """``certify`` is valid for any nonnegative multipliers (weak duality): HiGHS's give
    t* to 1e-7; randomly perturbed ones, and those of another ε's LP, give bounds that
    are never above t* (a sign or coefficient error in certify would overshoot)."""
    eps = 1.0
    gs = ga.atlas_classes(5)
    f, w, sol = _cell(ga, gs, "triangles", eps)
    best = float(ga.certify(sol, f, w, gs.pairs, eps))
    assert best == pytest.approx(sol.t, rel=1e-7)
    rng = np.random.default_rng(0)
    for _ in range(3):
        noisy = ga.LPSolution(**{**sol.__dict__,
                                 "dual_dp": sol.dual_dp * rng.uniform(0.5, 1.5, sol.dual_dp.size),
                                 "dual_err": sol.dual_err * rng.uniform(0.5, 1.5,
                                                                        sol.dual_err.size)})
        assert float(ga.certify(noisy, f, w, gs.pairs, eps)) <= sol.t + 1e-12
    # the ε = 2 LP's multipliers, used with the ε = 1 coefficients: valid, weaker
    _, _, sol2 = _cell(ga, gs, "triangles", 2.0)
    assert float(ga.certify(sol2, f, w, gs.pairs, eps)) <= sol.t + 1e-12


def test_certificate_equals_the_weak_duality_formula_for_random_multipliers(ga):
    """``certify`` against the formula written out here with numpy: for multipliers λ ≥ 0
    (error rows) and μ ≥ 0 (DP rows p_a − e^ε p_b, then p_b − e^ε p_a, pair-major,
    output-minor), lower = Σ_A min_k g_{A,k} / Σλ with g = λ_A·|k − f_A|/w_A + the DP
    rows' coefficients.  Random multipliers, so every coefficient and sign matters."""
    eps = 1.0
    gs = ga.atlas_classes(4)
    f, w, sol = _cell(ga, gs, "kstars", eps)
    n, k = sol.p.shape
    rng = np.random.default_rng(1)
    for _ in range(3):
        lam = rng.uniform(0, 1, n)
        mu = rng.uniform(0, 0.3, 2 * gs.pairs.shape[0] * k)
        e = math.exp(eps)
        g = lam[:, None] * np.abs(np.arange(k)[None, :] - f[:, None]) / w[:, None]
        r = gs.pairs.shape[0] * k
        for idx, m in enumerate(mu):
            (a, b), j = gs.pairs[(idx % r) // k], idx % k
            if idx >= r:
                a, b = b, a
            g[a, j] += m
            g[b, j] -= e * m
        expected = g.min(axis=1).sum() / lam.sum()
        trial = ga.LPSolution(**{**sol.__dict__, "dual_err": lam, "dual_dp": mu})
        assert float(ga.certify(trial, f, w, gs.pairs, eps)) == pytest.approx(
            expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("v", [4, 5])
@pytest.mark.parametrize("statistic", ["triangles", "kstars"])
def test_smooth_default_is_feasible_so_t_star_is_at_most_one(ga, v, statistic):
    """The smooth default, post-processed onto 0..F, is one of the mechanisms: t* ≤ 1
    against its released error; the unprojected error is larger, so t* is smaller."""
    eps = 1.0
    gs = ga.atlas_classes(v)
    vals = ga.graph_values(gs, statistic, (eps,))
    f = np.array(vals["f"])
    w, wp = np.array(vals["w"][eps]), np.array(vals["wp"][eps])
    assert np.all(wp <= w * (1 + 1e-12)) and np.all(wp > 0)
    t_proj = ga.solve(f, wp, gs.pairs, eps).t
    t_unproj = ga.solve(f, w, gs.pairs, eps).t
    assert 0 < t_unproj <= t_proj + 1e-9 <= 1
    # a constant output is not: the LP value is well above the two-point bound's reach 0
    assert t_unproj > 0.1


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_three_vertex_triangles_by_hand(ga, eps):
    """v = 3: four classes (0…3 edges), a path; f = 0, 0, 0, 1.  With w_0 ≥ e^{−ε}w_1,
    w_1 ≥ e^{−ε}w_2 (the scale is γ-smooth, γ < ε) and w_2 ≤ w_3, t* = 1/(w_3 + e^ε·w_2):
    the two-point argument on (P3, K3) — 1 − p_3(1) ≤ t·w_3, p_2(1) ≤ t·w_2, p_3(1) ≤
    e^ε·p_2(1) — and the laws p_2(1) = t·w_2, p_1(1) = e^{−ε}p_2(1), p_0(1) =
    e^{−ε}p_1(1), p_3(1) = e^ε·p_2(1) meet it."""
    gs = ga.atlas_classes(3)
    assert gs.pairs.tolist() == [[0, 1], [1, 2], [2, 3]]
    for ref in ("projected", "unprojected"):
        f, w, sol = _cell(ga, gs, "triangles", eps, ref)
        assert f.tolist() == [0, 0, 0, 1]
        e = math.exp(eps)
        assert w[0] >= w[1] / e and w[1] >= w[2] / e and w[2] <= w[3]
        assert sol.t == pytest.approx(1 / (w[3] + e * w[2]), rel=1e-8)


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_two_classes_give_the_two_point_bound(ga, eps):
    delta = 6
    sol = ga.solve([0.0, float(delta)], [1.0, 1.0], [[0, 1]], eps)
    assert sol.t == pytest.approx(delta / (1 + math.exp(eps)), rel=1e-8)


@pytest.mark.parametrize("statistic", ["triangles", "kstars"])
def test_a_chain_inside_the_atlas_gives_no_more(ga, gb, statistic):
    """Any chain of edge neighbours is a sub-problem: graphs.py's chain LP on the chain
    empty → complete (one edge added at a time, labelled graphs of 5 vertices) is ≤ the
    atlas t*, and the chain's weights are the atlas classes' weights."""
    from instancedp.queries.graphs import as_graph

    eps, v = 1.0, 5
    gs = ga.atlas_classes(v)
    vals = ga.graph_values(gs, statistic, (eps,))
    wp = np.array(vals["wp"][eps])
    t_atlas = ga.solve(np.array(vals["f"]), wp, gs.pairs, eps).t
    query = ga.make_query(statistic, v)
    order = [(0, 1), (1, 2), (0, 2), (2, 3), (1, 3), (0, 3), (3, 4), (0, 4), (1, 4), (2, 4)]
    assert sorted(order) == list(combinations(range(v), 2))
    fs, ws = [], []
    for m in range(len(order) + 1):
        G = nx.empty_graph(v)
        G.add_edges_from(order[:m])
        k = next(i for i, H in enumerate(gs.graphs) if nx.is_isomorphic(G, H))
        g = as_graph(np.array(order[:m], dtype=np.int64).reshape(-1, 2), v)
        fs.append(float(query.value(g)))
        ws.append(gb.projected_smooth_mae(query, g, eps))
        assert fs[-1] == vals["f"][k] and ws[-1] == pytest.approx(wp[k], rel=1e-12)
    t_chain = gb.chain_lp(fs, ws, eps)
    assert t_chain <= t_atlas * (1 + 1e-7)
    assert t_chain > 0.3 * t_atlas  # and it is a real bound


@pytest.mark.parametrize("statistic", ["triangles", "kstars"])
def test_attained_values_are_as_good_a_support_as_zero_to_f(ga, statistic):
    """Outputs on the attained values {f(G)} (used at v = 7) give the same t* as on 0..F
    (on 5 vertices 2-stars miss 11 of 0..30, triangles 6, 8, 9 of 0..10)."""
    eps = 1.0
    gs = ga.atlas_classes(5)
    f, w, full = _cell(ga, gs, statistic, eps)
    assert np.unique(f).size < f.max() + 1  # a real restriction
    attained = ga.solve(f, w, gs.pairs, eps, support=np.unique(f))
    assert attained.t == pytest.approx(full.t, rel=1e-7)
    # and a support that misses an attained value is a restriction that can cost
    fewer = ga.solve(f, w, gs.pairs, eps, support=np.unique(f)[::2])
    assert fewer.t > full.t * (1 + 1e-6)


def test_the_isolated_vertex_subset_is_a_relaxation(ga):
    """The classes of v = 5 with an isolated vertex are the 11 graphs of 4 vertices with
    their 14 adjacent pairs; its LP (weights at 5 public vertices) is ≤ the full t*."""
    eps = 1.0
    full = ga.atlas_classes(5)
    sub = ga.with_isolated_vertex(full)
    small = ga.atlas_classes(4)
    assert len(sub.graphs) == 11 and sub.pairs.shape == small.pairs.shape
    match = []
    for G in sub.graphs:  # drop one isolated vertex: a graph on 4 vertices
        H = G.copy()
        H.remove_node(next(n for n in G if G.degree(n) == 0))
        match.append(next(k for k, K in enumerate(small.graphs) if nx.is_isomorphic(H, K)))
    assert sorted(match) == list(range(11))
    for statistic in ("triangles", "kstars"):
        _, _, s = _cell(ga, sub, statistic, eps)
        _, _, t = _cell(ga, full, statistic, eps)
        assert 0.1 < s.t <= t.t * (1 + 1e-7)
