"""Graph input and graph statistics against brute force (all toggles of vertex pairs)."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from instancedp.queries import (
    Graph,
    KStarCount,
    TriangleCount,
    TwoTriangleCount,
    as_graph,
    brute,
    is_beta_smooth_upper_bound,
    two_triangle_a_max,
    two_triangle_layer_bound,
    two_triangle_local_sensitivity,
    two_triangle_ls_bound,
    two_triangle_ls_bound_lemma25,
)
from instancedp.queries.graphs import kstar_pair_frontier, triangle_pair_frontier

TRI = TriangleCount()
STARS = {k: KStarCount(k) for k in (1, 2, 3)}
TWO = TwoTriangleCount()


@st.composite
def small_graphs(draw, min_n=2, max_n=5):
    n = draw(st.integers(min_n, max_n))
    pairs = list(itertools.combinations(range(n), 2))
    mask = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    return Graph.from_edges([p for p, m in zip(pairs, mask, strict=True) if m], n)


# --- input ------------------------------------------------------------------------------


def test_inputs_agree():
    edges = np.array([[0, 1], [1, 2], [2, 0], [3, 4]])
    g = as_graph(edges)
    assert g == as_graph(edges.tolist())
    assert g == as_graph(
        sp.coo_matrix(
            (np.ones(8), (np.r_[edges[:, 0], edges[:, 1]], np.r_[edges[:, 1], edges[:, 0]])), (5, 5)
        )
    )
    nxg = nx.Graph()
    nxg.add_nodes_from(range(5))
    nxg.add_edges_from(edges.tolist())
    assert g == as_graph(nxg)
    assert g.n_vertices == 5 and g.n_edges == 4
    assert as_graph(edges, n_vertices=7).n_vertices == 7  # isolated vertices count
    assert list(g.degrees) == [2, 2, 2, 1, 1]


@pytest.mark.parametrize(
    "data, match",
    [
        (np.array([[0, 0], [0, 1]]), "1 self-loop"),
        (np.array([[0, 1], [1, 0]]), "1 repeated edge"),
        (np.array([[0, 1, 2]]), "m×2"),
        (np.array([[0, -1]]), ">= 0"),
        (np.array([[0.5, 1]]), "integer"),
        (sp.csr_matrix(np.array([[0, 1], [0, 0]])), "symmetric"),
        (sp.csr_matrix(np.array([[1, 0], [0, 0]])), "self-loop"),
        (sp.csr_matrix(np.array([[0, 2], [2, 0]])), "0 or 1"),
        (sp.csr_matrix(np.zeros((2, 3))), "square"),
        (nx.DiGraph([(0, 1)]), "directed"),
        (nx.MultiGraph([(0, 1), (0, 1)]), "multigraph"),
        (np.empty((0, 2)), "at least one vertex"),
    ],
)
def test_bad_graphs(data, match):
    with pytest.raises(ValueError, match=match):
        as_graph(data)


def test_normalise_option():
    g = as_graph(np.array([[0, 0], [0, 1], [1, 0], [1, 2]]), normalise=True)
    assert g.edge_set() == {(0, 1), (1, 2)}
    m = sp.csr_matrix(np.array([[1, 3, 0], [0, 0, 1], [0, 0, 0]]))
    assert as_graph(m, normalise=True).edge_set() == {(0, 1), (1, 2)}
    assert as_graph(nx.MultiGraph([(0, 1), (0, 1)]), normalise=True).n_edges == 1
    edges = [[0, 1], [1, 0], [1, 2], [2, 0]]
    assert TriangleCount(n_vertices=3, normalise=True).value(edges) == 1


def test_edge_list_needs_public_vertex_count():
    # Under edge privacy the vertex set is public; an edge list does not fix it
    # (max id + 1 of the private edges moves when an edge to a new vertex is
    # added), so graph queries refuse it without n_vertices — for every
    # mechanism, e.g. SmoothSensitivityMechanism(TriangleCount(), 1).release(edges).
    from instancedp.errors import ParameterError
    from instancedp.mechanisms import SmoothSensitivityMechanism
    from instancedp.random import simulation

    edges = [[0, 1], [1, 2], [2, 0]]
    with pytest.raises(ParameterError, match="n_vertices") as err:
        SmoothSensitivityMechanism(TriangleCount(), 1.0).release(edges, rng=simulation(0))
    assert err.value.parameter == "n_vertices"
    # With the public count the release works, and a neighbour that adds an
    # edge to a new vertex gives the same public record.
    mech = SmoothSensitivityMechanism(TriangleCount(n_vertices=5), 1.0)
    a = mech.release(edges, rng=simulation(0)).to_dict()
    b = mech.release([*edges, [3, 4]], rng=simulation(0)).to_dict()
    a.pop("value"), b.pop("value")
    assert a == b
    # A Graph, adjacency matrix or networkx graph states its own vertex set.
    assert TriangleCount().value(nx.Graph([(0, 1), (1, 2), (2, 0)])) == 1
    with pytest.raises(ValueError, match="n_vertices"):
        as_graph(np.array([[0, 5]]), n_vertices=3)


def test_counts_against_networkx():
    g = nx.gnp_random_graph(60, 0.2, seed=3)
    ours = as_graph(g)
    assert TRI.value(ours) == sum(nx.triangles(g).values()) / 3
    degs = [d for _, d in g.degree()]
    assert STARS[2].value(ours) == sum(math.comb(d, 2) for d in degs)
    # 2-triangles: pairs of triangles sharing an edge, counted directly
    tris = [
        frozenset(t)
        for t in itertools.combinations(g.nodes, 3)
        if g.has_edge(t[0], t[1]) and g.has_edge(t[1], t[2]) and g.has_edge(t[0], t[2])
    ]
    direct = sum(1 for s, t in itertools.combinations(tris, 2) if len(s & t) == 2)
    assert TWO.value(ours) == direct


# --- fast == brute force ----------------------------------------------------------------


@given(small_graphs())
@settings(max_examples=150)
def test_triangle_and_kstar_local_sensitivity_match_brute(g):
    for q in (TRI, *STARS.values()):
        expect = brute.local_sensitivities(q.value, g, "edge", max_distance=3)
        assert [q.local_sensitivity(g, k) for k in range(4)] == pytest.approx(expect), q.name


@given(small_graphs(), st.sampled_from([0.1, 0.5, 2.0]))
@settings(max_examples=100)
def test_triangle_and_kstar_smooth_sensitivity_match_brute(g, beta):
    for q in (TRI, STARS[2], STARS[3]):
        expect = brute.smooth_sensitivity(q.value, g, "edge", beta=beta)
        assert q.smooth_sensitivity(g, beta) == pytest.approx(expect, rel=1e-12), q.name


@given(small_graphs(min_n=6, max_n=6))
@settings(max_examples=12)
def test_six_vertices_distance_two(g):
    for q in (TRI, STARS[2]):
        expect = brute.local_sensitivities(q.value, g, "edge", max_distance=2)
        assert [q.local_sensitivity(g, k) for k in range(3)] == pytest.approx(expect)


def test_triangle_frontier_against_all_pairs_dense():
    # independent: a_ij, b_ij for every pair from a dense matrix (small graphs only)
    cases = [
        nx.gnp_random_graph(40, 0.1, seed=0),
        nx.gnp_random_graph(50, 0.3, seed=1),
        nx.gnp_random_graph(30, 0.8, seed=2),
        # hubs: the degree-ordered scan stops early here (pruning path)
        nx.barabasi_albert_graph(90, 2, seed=3),
        nx.complete_bipartite_graph(2, 40),
        nx.star_graph(30),
    ]
    for g in cases:
        n = g.number_of_nodes()
        a = nx.to_numpy_array(g, dtype=np.int64)
        common = a @ a
        deg = a.sum(1)
        for s in (0, 1, 3, 10, 40):
            best = 0
            for i, j in itertools.combinations(range(n), 2):
                b = deg[i] + deg[j] - 2 * a[i, j] - 2 * common[i, j]
                best = max(best, min(common[i, j] + (s + min(s, b)) // 2, n - 2))
            assert TRI.local_sensitivity(as_graph(g), s) == best
        # chunking does not change the frontier
        f1 = triangle_pair_frontier(as_graph(g))
        f2 = triangle_pair_frontier(as_graph(g), chunk_entries=7)
        assert all(np.array_equal(x, y) for x, y in zip(f1, f2, strict=True))


def test_kstar_frontier_dominates_all_pairs():
    for seed in range(5):
        g = as_graph(nx.barabasi_albert_graph(80, 3, seed=seed))
        pts = kstar_pair_frontier(g)
        d = g.degrees
        adj = g.edge_set()
        for i, j in itertools.combinations(range(80), 2):
            x = int((min(i, j), max(i, j)) in adj)
            p, q = sorted((d[i] - x, d[j] - x), reverse=True)
            assert np.any((pts[:, 0] >= p) & (pts[:, 1] >= q)), (i, j)


# --- 2-triangles ------------------------------------------------------------------------


def _a_max_brute(g):
    n, e = g.n_vertices, g.edge_set()
    best = 0
    for extra in itertools.combinations(range(n), 2):
        e2 = e | {extra}
        for i, j in e2:
            t = sum(
                1
                for v in range(n)
                if v not in (i, j) and (min(i, v), max(i, v)) in e2 and (min(j, v), max(j, v)) in e2
            )
            best = max(best, t)
    return best


@given(small_graphs(min_n=3, max_n=6))
@settings(max_examples=150)
def test_two_triangle_ls_and_a_max_match_brute(g):
    ls = brute.local_sensitivity(TWO.value, g, "edge")
    assert two_triangle_local_sensitivity(g) == ls
    assert TWO.local_sensitivity(g) == ls
    a = _a_max_brute(g)
    assert two_triangle_a_max(g) == a
    assert ls <= two_triangle_ls_bound(g) == 2.5 * a * (a - 1)


def test_lemma25_as_printed_fails_on_k6_minus_an_edge():
    g = Graph.from_edges([e for e in itertools.combinations(range(6), 2) if e != (0, 1)])
    assert brute.local_sensitivity(TWO.value, g, "edge") == 30  # 90 − 60 two-triangles
    assert two_triangle_ls_bound_lemma25(g) == 24 < 30
    assert two_triangle_ls_bound(g) == 30  # the corrected bound is tight here


def test_layer_bound_is_the_layer_maximum():
    for n in (3, 4, 5):
        best: dict[int, int] = {}
        for g in brute.graphs(n):
            best[g.n_edges] = max(best.get(g.n_edges, 0), two_triangle_a_max(g))
        for m, a in best.items():
            assert two_triangle_layer_bound(m, n) == 2.5 * a * (a - 1)
            assert two_triangle_layer_bound(m, n, lemma25=True) == 1.5 * a * a
    bounds = two_triangle_layer_bound(np.arange(0, 46), 10)
    assert np.all(np.diff(bounds) >= 0)


def test_two_triangle_smooth_bound_is_beta_smooth():
    graphs = list(brute.graphs(4)) + list(itertools.islice(brute.graphs(5), 0, 1024, 37))
    for beta in (0.2, 1.0):
        assert is_beta_smooth_upper_bound(
            lambda g, b=beta: TWO.smooth_sensitivity(g, b), TWO.value, beta, graphs, "edge"
        )
    assert not TwoTriangleCount.exact and TriangleCount.exact


def test_smooth_sensitivities_are_beta_smooth():
    graphs = list(itertools.islice(brute.graphs(5), 0, 1024, 11))
    for q in (TRI, STARS[2]):
        assert is_beta_smooth_upper_bound(
            lambda g, q=q: q.smooth_sensitivity(g, 0.3), q.value, 0.3, graphs, "edge"
        )


def test_global_sensitivity_and_parameters():
    assert TriangleCount(n_vertices=10).global_sensitivity == 8
    assert TriangleCount().global_sensitivity == math.inf
    assert KStarCount(3, n_vertices=10).global_sensitivity == 2 * math.comb(8, 2)
    assert KStarCount(2).parameters() == {"k": 2}
    with pytest.raises(ValueError, match="k must be"):
        KStarCount(0)
    with pytest.raises(ValueError, match="n_vertices"):
        TriangleCount(n_vertices=0)
    with pytest.raises(ValueError, match="beta"):
        TRI.smooth_sensitivity([[0, 1]], -1.0)
