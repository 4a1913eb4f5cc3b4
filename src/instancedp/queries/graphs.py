"""Graph input and graph statistics under edge neighbours (one vertex pair toggled).

Input (``as_graph``): an m×2 integer edge array (or list of pairs), a square
scipy.sparse matrix, a networkx ``Graph`` or a :class:`Graph`.  The result
is a simple undirected graph on vertices 0..n−1 held as a symmetric CSR
adjacency (never a dense n×n matrix).  Self-loops, repeated edges (also as
(j, i)), asymmetric matrices, weights other than 1 and multigraphs are an
error, unless ``normalise=True``, which drops self-loops, merges repeats and
symmetrises (documented in docs/queries.md).  The vertex set is public: for
an edge array it is 0..max index unless ``n_vertices`` is given; networkx
nodes are numbered in ``G.nodes`` order.

Statistics:

- ``TriangleCount`` (Nissim, Raskhodnikova, Smith 2007, §3):
  with a_ij the common neighbours of i ≠ j and b_ij the vertices adjacent to
  exactly one of them, A^(s) = max_{i≠j} min(a_ij + ⌊(s + min(s, b_ij))/2⌋, n − 2).
- ``KStarCount(k)`` (Karwa, Raskhodnikova, Smith, Yaroslavtsev 2011, §3):
  f = Σ_v C(d_v, k); toggling {i, j} changes f by C(d_i^{−j}, k−1) +
  C(d_j^{−i}, k−1), d_i^{−j} = #neighbours of i other than j.  s edge
  changes raise (d_i^{−j}, d_j^{−i}) by s in total, each capped at n − 2.
- ``TwoTriangleCount`` (pairs of triangles sharing an edge; Karwa et al. 2011
  Lemma 4.1 for the exact LS; Canard & Olivier, Example 23 / Lemma 25 for the
  bound on LS through a_H).  Exact smooth sensitivity is NP-hard (Karwa et
  al. Thm. A.1); this module gives exact LS and a β-smooth upper bound.

Lemma 25 as printed (LS(H) ≤ (3/2)·a_H²) is false: for K_6 minus one edge
LS = 30 > 24 = (3/2)·4².  The proof's own steps give
LS(H) ≤ C(a_H, 2) + 2·a_H·(a_H − 1) = (5/2)·a_H·(a_H − 1), which is tight on
K_N minus an edge; ``two_triangle_ls_bound`` returns it and
``two_triangle_ls_bound_lemma25`` the printed one (for reproducing the paper).
"""

from __future__ import annotations

import math
import sys
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from scipy.special import comb

from .. import _validate
from ..errors import ParameterError
from .base import Query
from .order import _distance

__all__ = [
    "Graph",
    "GraphSummary",
    "as_graph",
    "TriangleCount",
    "KStarCount",
    "TwoTriangleCount",
    "triangle_pair_frontier",
    "triangle_count",
    "kstar_pair_frontier",
    "two_triangle_count",
    "two_triangle_local_sensitivity",
    "two_triangle_a_max",
    "two_triangle_ls_bound",
    "two_triangle_ls_bound_lemma25",
    "two_triangle_layer_bound",
]


class Graph:
    """A simple undirected graph: symmetric CSR adjacency with 0/1 int32 entries."""

    __slots__ = ("adjacency", "_degrees", "_key", "_cache")

    def __init__(self, adjacency: sp.csr_array) -> None:
        # internal: callers use ``as_graph`` / ``Graph.from_edges`` (which validate).
        # A Graph is treated as immutable: derived quantities are cached on it, so
        # PTR's search over k costs one frontier computation.
        self.adjacency = adjacency
        self._degrees = None
        self._key = None
        self._cache: dict = {}

    def cached(self, name: str, compute: Any) -> Any:
        """``compute()`` once per graph (private analysis data, never released)."""
        if name not in self._cache:
            self._cache[name] = compute()
        return self._cache[name]

    @classmethod
    def from_edges(
        cls, edges: Any, n_vertices: int | None = None, *, normalise: bool = False
    ) -> Graph:
        return _from_edge_array(edges, n_vertices, normalise)

    @property
    def n_vertices(self) -> int:
        return int(self.adjacency.shape[0])

    @property
    def n_edges(self) -> int:
        return int(self.adjacency.nnz // 2)

    @property
    def degrees(self) -> np.ndarray:
        if self._degrees is None:
            self._degrees = np.diff(self.adjacency.indptr).astype(np.int64)
        return self._degrees

    def edges(self) -> np.ndarray:
        """m×2 array of edges (i < j), sorted."""
        a = self.adjacency
        rows = np.repeat(np.arange(self.n_vertices, dtype=np.int64), np.diff(a.indptr))
        cols = a.indices.astype(np.int64)
        upper = rows < cols  # CSR rows ascending, indices sorted: already in order
        return np.column_stack([rows[upper], cols[upper]])

    def edge_set(self) -> frozenset:
        return frozenset(map(tuple, self.edges().tolist()))

    def neighbours_of(self, v: int) -> np.ndarray:
        a = self.adjacency
        return a.indices[a.indptr[v] : a.indptr[v + 1]]

    def _hash_key(self) -> tuple:
        if self._key is None:
            self._key = (self.n_vertices, self.edges().tobytes())
        return self._key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Graph) and self._hash_key() == other._hash_key()

    def __hash__(self) -> int:
        return hash(self._hash_key())

    def __repr__(self) -> str:
        return f"Graph(n_vertices={self.n_vertices}, n_edges={self.n_edges})"


class GraphSummary:
    """A graph known only through its sufficient statistics, computed where the edges
    live (:mod:`instancedp.backends.graph`): what the graph queries read, by name.

    ``compute(name)`` returns one statistic: ``"n_edges"``, ``"degrees"`` (d_v for
    v = 0 … n − 1), ``"triangle_count"``, ``"triangle_frontier"``,
    ``"kstar_frontier"``, ``"two_triangle_count"``, ``"two_triangle_ls"``; each is
    asked for at most once (a release reads only the ones its query needs).  The
    in-memory :class:`Graph` computes the same names from its adjacency, so a
    mechanism given either releases the same bytes.  Private analysis data.
    """

    __slots__ = ("n_vertices", "_compute", "_cache")

    def __init__(self, n_vertices: int, compute: Any) -> None:
        self.n_vertices = int(n_vertices)
        self._compute = compute
        self._cache: dict = {}

    def cached(self, name: str, compute: Any = None) -> Any:
        """The statistic ``name`` (``compute`` is the in-memory recipe, unused here)."""
        if name not in self._cache:
            self._cache[name] = self._compute(name)
        return self._cache[name]

    @property
    def n_edges(self) -> int:
        return int(self.cached("n_edges"))

    @property
    def degrees(self) -> np.ndarray:
        return self.cached("degrees")

    def __repr__(self) -> str:
        return f"GraphSummary(n_vertices={self.n_vertices})"


def _csr(rows: np.ndarray, cols: np.ndarray, n: int) -> sp.csr_array:
    data = np.ones(rows.size, dtype=np.int32)
    a = sp.csr_array((data, (rows, cols)), shape=(n, n))
    a.sum_duplicates()
    a.sort_indices()
    return a


def _from_edge_array(edges: Any, n_vertices: int | None, normalise: bool) -> Graph:
    try:
        e = np.asarray(edges)
    except (TypeError, ValueError):
        raise ParameterError("edges must be an m×2 array of integer vertex ids") from None
    if e.size == 0:
        e = np.empty((0, 2), dtype=np.int64)
    if e.ndim != 2 or e.shape[1] != 2:
        raise ParameterError(f"edges must be an m×2 array of vertex ids, got shape {e.shape}")
    if not np.issubdtype(e.dtype, np.integer):
        if not (
            np.issubdtype(e.dtype, np.floating)
            and np.all(np.isfinite(e))
            and np.all(e == np.round(e))
        ):
            raise ParameterError("edges must hold integer vertex ids")
        e = e.astype(np.int64)
    e = e.astype(np.int64)
    if e.size and e.min() < 0:
        raise ParameterError("vertex ids must be >= 0")
    top = int(e.max()) + 1 if e.size else 0
    if n_vertices is None:
        n = top
    else:
        if isinstance(n_vertices, bool) or not isinstance(n_vertices, int | np.integer):
            raise ParameterError(f"n_vertices must be an integer >= 1, got {n_vertices!r}")
        n = int(n_vertices)
        if n < top:
            raise ParameterError(f"edges use vertex id {top - 1} but n_vertices is {n}")
    if n < 1:
        raise ParameterError(
            "a graph needs at least one vertex (give n_vertices for an empty edge list)"
        )
    loops = e[:, 0] == e[:, 1]
    if loops.any():
        if not normalise:
            raise ParameterError(
                f"graph has {int(loops.sum())} self-loop(s); edge privacy counts simple graphs "
                "(pass normalise=True to drop them)"
            )
        e = e[~loops]
    lo, hi = np.minimum(e[:, 0], e[:, 1]), np.maximum(e[:, 0], e[:, 1])
    key = lo * n + hi
    uniq = np.unique(key)
    if uniq.size != key.size:
        if not normalise:
            raise ParameterError(
                f"graph has {key.size - uniq.size} repeated edge(s) (also as (j, i)); "
                "pass normalise=True to merge them"
            )
    lo, hi = uniq // n, uniq % n
    return Graph(_csr(np.concatenate([lo, hi]), np.concatenate([hi, lo]), n))


def _carries_vertex_set(data: Any) -> bool:
    """True for inputs that state their own vertex set (Graph, sparse matrix, networkx)."""
    if isinstance(data, Graph) or sp.issparse(data):
        return True
    nx = sys.modules.get("networkx")
    return nx is not None and isinstance(data, nx.Graph)


def as_graph(data: Any, n_vertices: int | None = None, *, normalise: bool = False) -> Graph:
    """Normalise an edge array, scipy.sparse matrix or networkx graph to a :class:`Graph`."""
    if isinstance(data, Graph):
        if n_vertices is not None and n_vertices != data.n_vertices:
            raise ParameterError(f"graph has {data.n_vertices} vertices, n_vertices={n_vertices}")
        return data
    if sp.issparse(data):
        m = sp.coo_array(data)
        if m.shape[0] != m.shape[1]:
            raise ParameterError(f"adjacency matrix must be square, got shape {m.shape}")
        n = int(m.shape[0])
        if n_vertices is not None and n_vertices != n:
            raise ParameterError(f"adjacency matrix is {n}×{n} but n_vertices={n_vertices}")
        m.sum_duplicates()
        keep = m.data != 0
        rows, cols, vals = m.row[keep].astype(np.int64), m.col[keep].astype(np.int64), m.data[keep]
        if not normalise:
            if np.any(vals != 1):
                raise ParameterError(
                    "adjacency matrix entries must be 0 or 1 (pass normalise=True)"
                )
            if np.any(rows == cols):
                raise ParameterError(
                    f"adjacency matrix has {int(np.sum(rows == cols))} self-loop(s) on the "
                    "diagonal (pass normalise=True to drop them)"
                )
            fwd = np.unique(rows * n + cols)
            bwd = np.unique(cols * n + rows)
            if fwd.size != bwd.size or np.any(fwd != bwd):
                raise ParameterError("adjacency matrix must be symmetric (pass normalise=True)")
            return Graph(_csr(rows, cols, n))
        return _from_edge_array(np.column_stack([rows, cols]), n, True)
    try:
        import networkx as nx
    except ImportError:  # pragma: no cover - networkx is a dependency
        nx = None
    if nx is not None and isinstance(data, nx.Graph):
        if data.is_directed():
            raise ParameterError(
                "directed graphs are not supported: edge privacy is for undirected graphs"
            )
        if data.is_multigraph() and not normalise:
            raise ParameterError(
                "multigraphs have repeated edges; pass normalise=True to merge them"
            )
        index = {v: i for i, v in enumerate(data.nodes)}
        n = len(index)
        if n_vertices is not None and n_vertices != n:
            raise ParameterError(f"graph has {n} nodes but n_vertices={n_vertices}")
        e = np.array([(index[u], index[v]) for u, v in data.edges()], dtype=np.int64)
        return _from_edge_array(e.reshape(-1, 2), n, normalise)
    return _from_edge_array(data, n_vertices, normalise)


# --- triangles --------------------------------------------------------------------------


def triangle_count(graph: Any) -> int:
    """Number of triangles (sparse).

    Each edge is oriented from the lower to the higher (degree, id) rank, giving
    U; a triangle x < y < z in rank is counted once, as the path x → y → z
    closed by x → z: Σ (U·U) ∘ U.  Out-degrees in rank order are at most
    √(2m), so on power-law graphs this is far less work than A·A.
    """
    g = as_graph(graph)
    a = g.adjacency
    rank = np.empty(g.n_vertices, dtype=np.int64)
    rank[np.lexsort((np.arange(g.n_vertices), g.degrees))] = np.arange(g.n_vertices)
    rows = np.repeat(np.arange(g.n_vertices, dtype=np.int64), np.diff(a.indptr))
    cols = a.indices.astype(np.int64)
    up = rank[rows] < rank[cols]
    u = _csr(rows[up], cols[up], g.n_vertices)
    return int((u @ u).multiply(u).sum(dtype=np.int64))


def _max_nonadjacent_degree_sum(g: Any) -> int:
    """max d_i + d_j over non-adjacent pairs i ≠ j (−1 if none).

    Highest-degree pairs first: for each i (by degree, descending) its best
    partner is the first vertex in degree order that is neither i nor a
    neighbour — within the first d_i + 2 entries.  Stop once d_i + d_max
    cannot beat the best found.
    """
    n = g.n_vertices
    d = g.degrees
    order = np.argsort(-d, kind="stable")
    best = -1
    for i in order:
        if d[i] + d[order[0]] <= best:
            break
        prefix = order[: min(n, d[i] + 2)]
        ok = (prefix != i) & ~np.isin(prefix, g.neighbours_of(i))
        hit = np.flatnonzero(ok)
        if hit.size:
            best = max(best, int(d[i] + d[prefix[hit[0]]]))
    return best


def triangle_pair_frontier(
    graph: Any, chunk_entries: int = 1 << 22
) -> tuple[np.ndarray, np.ndarray]:
    """Pareto-maximal points (a, u) over vertex pairs, u = d_i + d_j − 2·[i ~ j].

    For a pair, b = u − 2a, so NRS's term is ⌊(s + min(s + 2a, u))/2⌋ (capped
    at n − 2): non-decreasing in a and u, hence the maximum over all pairs is
    the maximum over these points, for every s.

    Pairs with a ≥ 1 are the off-diagonal entries of A², computed in row chunks
    as A[R]·A + n·A[R] − diag(d)[R] (the n·A term marks edges and keeps edges
    with a = 0; the diagonal becomes 0 and is dropped).  Rows are visited by
    degree, descending: a pair (i, j) with j later in that order has
    a ≤ d_i and u ≤ 2d_i, so once a point already found dominates (d_i, 2d_i)
    no remaining pair can matter for any s, and the scan stops.  Non-adjacent
    pairs with a = 0 are covered by the point (0, max non-adjacent d_i + d_j),
    which is dominated by the true point of any pair with a > 0 — so the set is
    exact.  No dense n×n matrix is formed; memory is O(chunk + n).
    """
    g = as_graph(graph)
    a = g.adjacency
    n = g.n_vertices
    d = g.degrees.astype(np.int32)
    best_u = np.full(int(d.max(initial=0)) + 1, -1, dtype=np.int32)  # a ≤ max degree
    mark = np.int32(n)  # a_ij ≤ n − 2 < n; entries stay below 2n
    order = np.argsort(-d, kind="stable")
    rowwork = np.cumsum((a @ d.astype(np.float64))[order])
    pos = 0
    while pos < n:
        di = int(d[order[pos]])
        if np.any(best_u[di:] >= 2 * di):  # (d_i, 2d_i) dominated: nothing left can win
            break
        # chunks of about chunk_entries products, small at first so the stop test runs early
        target = (rowwork[pos - 1] if pos else 0.0) + chunk_entries
        stop = int(np.searchsorted(rowwork, target, side="right"))
        stop = min(max(stop, pos + 1), pos + max(256, pos), n)
        rows_idx = order[pos:stop]
        rows = a[rows_idx]
        k = rows_idx.size
        diag = sp.csr_array((d[rows_idx], (np.arange(k), rows_idx)), shape=(k, n))
        p = (rows @ a + mark * rows - diag).tocsr()
        p.eliminate_zeros()
        counts = np.diff(p.indptr)
        v = p.data
        edge = v >= mark
        av = np.where(edge, v - mark, v)
        u = np.repeat(d[rows_idx], counts) + d[p.indices] - 2 * edge.astype(np.int32)
        np.maximum.at(best_u, av, u)
        pos = stop
    best_u[0] = max(int(best_u[0]), _max_nonadjacent_degree_sum(g))
    return pareto_frontier(best_u)


def pareto_frontier(best_u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (a, u) Pareto frontier of ``best_u[a]`` (−1: no pair with that a): a point
    survives if no larger a has u at least as large."""
    avals = np.flatnonzero(best_u >= 0)
    uvals = best_u[avals].astype(np.int64)
    if avals.size == 0:
        return avals, uvals
    suffix_max = np.maximum.accumulate(uvals[::-1])[::-1]
    keep = np.ones(avals.size, dtype=bool)
    keep[:-1] = uvals[:-1] > suffix_max[1:]
    return avals[keep], uvals[keep]


def _triangle_a_s(avals: np.ndarray, uvals: np.ndarray, n: int, s: np.ndarray) -> np.ndarray:
    """A^(s) for an array of s, from the frontier."""
    if n < 3 or avals.size == 0:
        return np.zeros(s.shape)
    s2 = s[:, None]
    val = (s2 + np.minimum(s2 + 2 * avals[None, :], uvals[None, :])) // 2
    return np.minimum(val.max(axis=1), n - 2).astype(np.float64)


class _GraphQuery(Query):
    neighbours = "edge"
    supported_relations = ("edge",)

    def __init__(self, *, n_vertices: int | None = None, normalise: bool = False) -> None:
        if n_vertices is not None and (
            isinstance(n_vertices, bool)
            or not isinstance(n_vertices, int | np.integer)
            or n_vertices < 1
        ):
            raise ParameterError(f"n_vertices must be an integer >= 1 or None, got {n_vertices!r}")
        self.n_vertices = None if n_vertices is None else int(n_vertices)
        self.normalise = bool(normalise)

    def prepare_key(self) -> tuple:
        return ("graph", self.n_vertices, self.normalise)

    def _prepare(self, data: Any) -> Graph | GraphSummary:
        if isinstance(data, GraphSummary):  # statistics computed where the edges live
            if self.n_vertices is not None and self.n_vertices != data.n_vertices:
                raise ParameterError(
                    f"the graph's statistics are on {data.n_vertices} vertices but "
                    f"n_vertices={self.n_vertices}",
                    parameter="n_vertices",
                )
            return data
        if self.n_vertices is None and not _carries_vertex_set(data):
            # Under edge privacy the vertex set is public; max id + 1 of the
            # private edges is not (one edge to a new vertex changes it).
            raise ParameterError(
                "an edge list does not fix the public vertex set: build the query with "
                "n_vertices=N (or pass a Graph, adjacency matrix or networkx graph)",
                parameter="n_vertices",
                allowed="an integer >= 1 fixed before seeing the data",
            )
        return as_graph(data, self.n_vertices, normalise=self.normalise)

    def max_distance(self, data: Any) -> float:
        n = self._load(data).n_vertices
        return float(n * (n - 1) // 2)

    def parameters(self) -> dict[str, Any]:
        return {} if self.n_vertices is None else {"n_vertices": self.n_vertices}


class TriangleCount(_GraphQuery):
    """Number of triangles; edge neighbours; exact A^(s) and SS (NRS 2007 §3).

    ``global_sensitivity`` is n − 2 when ``n_vertices`` is given, else inf.
    """

    name = "triangle_count"
    exact: ClassVar[bool] = True

    @property
    def global_sensitivity(self) -> float:
        return math.inf if self.n_vertices is None else float(max(self.n_vertices - 2, 0))

    def value(self, data: Any) -> float:
        g = self._load(data)
        return float(g.cached("triangle_count", lambda: triangle_count(g)))

    def local_sensitivity(self, data: Any, distance: int = 0) -> float:
        s = _distance(distance)
        g = self._load(data)
        av, uv = g.cached("triangle_frontier", lambda: triangle_pair_frontier(g))
        return float(_triangle_a_s(av, uv, g.n_vertices, np.array([s]))[0])

    def smooth_sensitivity(self, data: Any, beta: float) -> float:
        beta = _validate.nonnegative(beta, "beta")
        g = self._load(data)
        n = g.n_vertices
        if n < 3:
            return 0.0
        av, uv = g.cached("triangle_frontier", lambda: triangle_pair_frontier(g))
        return _scan_smooth(lambda s: _triangle_a_s(av, uv, n, s), float(n - 2), 2 * n, beta)


def _scan_smooth(a_of_s, gs: float, s_max: int, beta: float, block: int = 4096) -> float:
    """max_{0 ≤ s ≤ s_max} e^{−sβ} A^(s), A^(s) = gs for s ≥ s_max; blocks of s,
    stopping once e^{−sβ}·gs ≤ best."""
    best = 0.0
    s0 = 0
    while s0 <= s_max:
        if math.exp(-s0 * beta) * gs <= best:
            break
        s = np.arange(s0, min(s0 + block, s_max + 1))
        best = max(best, float(np.max(np.exp(-s * beta) * a_of_s(s))))
        s0 += block
    return best


# --- k-stars ----------------------------------------------------------------------------


def kstar_pair_frontier(graph: Any) -> np.ndarray:
    """Points (p, q), p ≥ q, dominating (d_i^{−j}, d_j^{−i}) over all pairs i ≠ j.

    For each vertex i only two partners matter: its highest-degree neighbour
    (point (d_i − 1, d_j − 1)) and its highest-degree non-neighbour
    (point (d_i, d_j)), since the point grows with d_j within each class.
    Vertices are visited by degree, descending, and the scan stops once
    (d_i, d_i) — which dominates every pair among the remaining vertices —
    is dominated by a point already found.
    """
    return _kstar_frontier_scan(as_graph(graph))


def _kstar_frontier_scan(g: Any) -> np.ndarray:
    """:func:`kstar_pair_frontier` on anything with ``n_vertices``, ``degrees`` and
    ``neighbours_of(v)`` (the DuckDB backend reads the few neighbour lists it needs)."""
    n = g.n_vertices
    d = g.degrees
    order = np.argsort(-d, kind="stable")
    pts: list[tuple[int, int]] = []
    for i in order:
        di = int(d[i])
        if any(p >= di and q >= di for p, q in pts):
            break
        nb = g.neighbours_of(i)
        if nb.size:
            j = nb[np.argmax(d[nb])]
            pts.append(tuple(sorted((di - 1, int(d[j]) - 1), reverse=True)))
        prefix = order[: min(n, di + 2)]
        ok = (prefix != i) & ~np.isin(prefix, nb)
        hit = np.flatnonzero(ok)
        if hit.size:
            pts.append(tuple(sorted((di, int(d[prefix[hit[0]]])), reverse=True)))
    if not pts:
        return np.empty((0, 2), dtype=np.int64)
    return np.unique(np.array(pts, dtype=np.int64), axis=0)


def _kstar_a_s(pts: np.ndarray, n: int, k: int, s: np.ndarray) -> np.ndarray:
    if pts.size == 0 or n < 2:
        return np.zeros(s.shape)
    cap = n - 2
    p = pts[None, :, 0].astype(np.float64)
    q = pts[None, :, 1].astype(np.float64)
    s2 = s[:, None].astype(np.float64)
    t_lo = np.maximum(0, s2 - (cap - q))
    t_hi = np.minimum(s2, cap - p)
    full = t_lo > t_hi  # both saturate
    best = np.full(t_lo.shape, -np.inf)
    for t in (t_lo, t_hi):  # convex in t: the best split is at an end
        x = np.minimum(p + t, cap)
        y = np.minimum(q + s2 - t, cap)
        best = np.maximum(best, comb(x, k - 1) + comb(y, k - 1))
    best = np.where(full, 2 * comb(cap, k - 1), best)
    return best.max(axis=1)


class KStarCount(_GraphQuery):
    """Number of k-stars Σ_v C(d_v, k); edge neighbours; exact A^(s) and SS
    (Karwa, Raskhodnikova, Smith, Yaroslavtsev 2011).  k ≥ 1."""

    name = "kstar_count"
    exact: ClassVar[bool] = True

    def __init__(self, k: int, *, n_vertices: int | None = None, normalise: bool = False) -> None:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ParameterError(f"k must be an integer >= 1, got {k!r}")
        self.k = int(k)
        super().__init__(n_vertices=n_vertices, normalise=normalise)

    @property
    def global_sensitivity(self) -> float:
        if self.n_vertices is None:
            return math.inf
        return (
            2.0 * math.comb(max(self.n_vertices - 2, 0), self.k - 1)
            if self.n_vertices >= 2
            else 0.0
        )

    def value(self, data: Any) -> float:
        d = self._load(data).degrees
        vals, counts = np.unique(d, return_counts=True)
        return float(
            sum(math.comb(int(v), self.k) * int(c) for v, c in zip(vals, counts, strict=True))
        )

    def local_sensitivity(self, data: Any, distance: int = 0) -> float:
        s = _distance(distance)
        g = self._load(data)
        pts = g.cached("kstar_frontier", lambda: kstar_pair_frontier(g))
        return float(_kstar_a_s(pts, g.n_vertices, self.k, np.array([s]))[0])

    def smooth_sensitivity(self, data: Any, beta: float) -> float:
        beta = _validate.nonnegative(beta, "beta")
        g = self._load(data)
        n = g.n_vertices
        if n < 2:
            return 0.0
        pts = g.cached("kstar_frontier", lambda: kstar_pair_frontier(g))
        gs = 2.0 * float(comb(n - 2, self.k - 1))
        return _scan_smooth(lambda s: _kstar_a_s(pts, n, self.k, s), gs, 2 * n, beta)

    def parameters(self) -> dict[str, Any]:
        return {"k": self.k, **super().parameters()}


# --- 2-triangles ------------------------------------------------------------------------


def _common(g: Graph) -> tuple[sp.csr_array, sp.csr_array]:
    a = g.adjacency
    c = (a @ a).tocsr()  # c_ij: common neighbours (sparse; the pairs with c ≥ 1)
    e = c.multiply(a).tocsr()  # triangles through each edge
    return c, e


def two_triangle_count(graph: Any) -> int:
    """Pairs of triangles sharing an edge: Σ over edges e of C(a_e, 2)."""
    _, e = _common(as_graph(graph))
    t = e.data.astype(np.int64)
    return int(np.sum(t * (t - 1) // 2) // 2)  # each edge appears twice


def two_triangle_local_sensitivity(graph: Any) -> int:
    """Exact LS of the 2-triangle count (Karwa et al. 2011, Lemma 4.1):
    max over pairs {i, j} of C(c_ij, 2) + Σ_{l ∈ N_ij} (a_il + a_jl − 2x_ij)."""
    g = as_graph(graph)
    if g.n_vertices < 3:
        return 0
    c, e = _common(g)
    ea = (e @ g.adjacency).tocsr()
    w = (ea + ea.T).tocsr()  # Σ_{l common} (a_il + a_jl), support ⊆ support of c
    cc = c.tocoo()
    off = cc.row != cc.col
    r, col, cv = cc.row[off], cc.col[off], cc.data[off].astype(np.int64)
    if r.size == 0:
        return 0
    wv = np.asarray(w[r, col]).ravel().astype(np.int64)
    xv = np.asarray(g.adjacency[r, col]).ravel().astype(np.int64)
    return int(np.max(cv * (cv - 1) // 2 + wv - 2 * xv * cv))


def two_triangle_a_max(graph: Any) -> int:
    """a_H = max over pairs e′ and edges e of H + e′ of the triangles through e.

    Either e = e′ is new (its common neighbours c_ij), or e is an edge of H
    that gains one triangle when e′ joins an endpoint to a vertex adjacent to
    the other endpoint only (b_e > 0).
    """
    g = as_graph(graph)
    c, e = _common(g)
    cc = c.tocoo()
    off = cc.row != cc.col
    best = int(cc.data[off].max(initial=0))
    ee = sp.triu(g.adjacency, k=1).tocoo()
    if ee.nnz:
        d = g.degrees
        tri = np.asarray(e[ee.row, ee.col]).ravel().astype(np.int64)
        b = d[ee.row] + d[ee.col] - 2 - 2 * tri
        gain = tri + (b > 0)
        best = max(best, int(gain.max()))
    return best


def two_triangle_ls_bound(graph: Any) -> float:
    """LS(H) ≤ C(a_H, 2) + 2·a_H·(a_H − 1) = (5/2)·a_H·(a_H − 1) (corrected Lemma 25)."""
    a = two_triangle_a_max(graph)
    return 2.5 * a * (a - 1)


def two_triangle_ls_bound_lemma25(graph: Any) -> float:
    """(3/2)·a_H² as printed in Canard–Olivier Lemma 25 — NOT a valid bound
    (K_6 minus an edge: LS = 30 > 24); for reproducing the paper only."""
    a = two_triangle_a_max(graph)
    return 1.5 * a * a


def two_triangle_layer_bound(n_edges: Any, n_vertices: int, *, lemma25: bool = False) -> Any:
    """max over graphs H with ``n_edges`` edges on ``n_vertices`` vertices of the
    LS bound: a_H ≤ min(⌊m/2⌋, N − 2) (an edge with t triangles in H + e′ needs
    2t + 1 ≤ m + 1 edges), attained.  Non-decreasing in m (Example 23 layers)."""
    m = np.asarray(n_edges, dtype=np.int64)
    if np.any(m < 0) or np.any(m > n_vertices * (n_vertices - 1) // 2):
        raise ParameterError(f"n_edges must be in [0, {n_vertices * (n_vertices - 1) // 2}]")
    a = np.minimum(m // 2, max(n_vertices - 2, 0)).astype(np.float64)
    out = 1.5 * a * a if lemma25 else 2.5 * a * (a - 1)
    return float(out) if out.ndim == 0 else out


class TwoTriangleCount(_GraphQuery):
    """Number of 2-triangles; edge neighbours.

    ``local_sensitivity(g, 0)`` is exact (Karwa et al. Lemma 4.1).  Exact
    A^(k) and SS are NP-hard (Karwa et al. Thm. A.1), so for k ≥ 1
    ``local_sensitivity`` returns the upper bound L(m + k), L the per-layer
    bound of ``two_triangle_layer_bound`` (m = #edges): every H′ within
    distance k has ≤ m + k edges and LS(H′) ≤ L(|E(H′)|).  The resulting
    ``smooth_sensitivity`` is a β-smooth upper bound on LS (neighbours differ
    by one edge and L is non-decreasing), not the exact SS: ``exact`` is False.
    """

    name = "two_triangle_count"
    exact: ClassVar[bool] = False

    @property
    def global_sensitivity(self) -> float:
        if self.n_vertices is None:
            return math.inf
        n = self.n_vertices
        return float(two_triangle_layer_bound(n * (n - 1) // 2, n)) if n >= 3 else 0.0

    def value(self, data: Any) -> float:
        g = self._load(data)
        return float(g.cached("two_triangle_count", lambda: two_triangle_count(g)))

    def local_sensitivity(self, data: Any, distance: int = 0) -> float:
        k = _distance(distance)
        g = self._load(data)
        if k == 0:
            return float(g.cached("two_triangle_ls", lambda: two_triangle_local_sensitivity(g)))
        n = g.n_vertices
        top = n * (n - 1) // 2
        return float(two_triangle_layer_bound(min(g.n_edges + k, top), n))

    def smooth_sensitivity(self, data: Any, beta: float) -> float:
        beta = _validate.nonnegative(beta, "beta")
        g = self._load(data)
        n = g.n_vertices
        if n < 3:
            return 0.0
        top = n * (n - 1) // 2
        best = float(g.cached("two_triangle_ls", lambda: two_triangle_local_sensitivity(g)))
        # L(m) is constant once m ≥ 2(n − 2)
        kmax = min(top - g.n_edges, max(1, 2 * (n - 2) + 1 - g.n_edges))
        k = np.arange(1, kmax + 1)
        if k.size:
            vals = np.exp(-k * beta) * two_triangle_layer_bound(g.n_edges + k, n)
            best = max(best, float(vals.max()))
        return best
