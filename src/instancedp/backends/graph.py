"""Graph primitives in DuckDB: degrees, the triangle count and the triangle frontier.

What the triangle count's sensitivity needs (Nissim, Raskhodnikova & Smith
2007, §3) is, over vertex pairs i ≠ j, a_ij = #common neighbours and
u_ij = d_i + d_j − 2·[i ~ j] (so b_ij = u_ij − 2a_ij); the Pareto frontier of
the points (a, u) gives A^(s) for every s
(:func:`instancedp.queries.graphs.triangle_pair_frontier` is the in-memory
definition these functions are tested against).  Here every quantity is one
SQL aggregate over the edge relation, so the engine spills instead of the
driver holding A²:

- degrees: ``GROUP BY`` vertex over both directions of each edge;
- triangles: the edge relation (i < j) joined with itself three ways;
- pairs with a ≥ 1: wedges (two neighbours of one vertex) grouped by pair —
  Σ_v C(d_v, 2) rows, the work of A² — then the largest u per a;
- adjacent pairs with a = 0: edges absent from the wedge pairs;
- non-adjacent pairs with a = 0: max d_i + d_j, by the degree-ordered scan of
  the in-memory code (neighbour lists of the few highest-degree vertices only).

Input: an edge relation with two integer columns of vertex ids in
0 … n_vertices − 1 (the public vertex set).  Self-loops and repeated edges
(also as (j, i)) are an error unless ``normalise=True``, as in
:func:`instancedp.queries.graphs.as_graph`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DataError, ParameterError

__all__ = ["GraphTables", "edge_tables", "degrees", "triangle_count", "triangle_pair_frontier"]


@dataclass
class GraphTables:
    """The normalised edge table ``g_e`` (i < j) and ``g_adj`` (both directions)."""

    execute: Any
    n_vertices: int


def edge_tables(
    engine: Any, n_vertices: int, *, columns: tuple[str, str] | None = None,
    normalise: bool = False,
) -> GraphTables:
    """Build the edge tables from a DuckDB :class:`~instancedp.backends.sql.SQLEngine`."""
    if isinstance(n_vertices, bool) or int(n_vertices) != n_vertices or n_vertices < 1:
        raise ParameterError(f"n_vertices must be an integer >= 1, got {n_vertices!r}",
                             parameter="n_vertices", allowed=">= 1")
    n = int(n_vertices)
    cols = list(columns) if columns is not None else list(engine.columns)[:2]
    if len(cols) != 2:
        raise ParameterError("an edge list needs two columns (the two end vertices)",
                             parameter="columns", allowed="two column names")
    q = engine.dialect.quote
    a, b = (f"CAST({q(c)} AS BIGINT)" for c in cols)
    run = engine.execute
    run(f"CREATE OR REPLACE TEMP TABLE g_raw AS SELECT {a} AS a, {b} AS b "
        f"FROM {engine.relation}", [])
    bad = run(f"SELECT COUNT(*) FROM g_raw WHERE a IS NULL OR b IS NULL OR a < 0 OR b < 0 "
              f"OR a >= {n} OR b >= {n}", [])[0][0]
    if bad:
        raise DataError(f"{bad} edges name a vertex outside 0 … {n - 1} (or are missing)")
    run("CREATE OR REPLACE TEMP TABLE g_e AS SELECT DISTINCT least(a, b) AS i, "
        "greatest(a, b) AS j FROM g_raw WHERE a <> b", [])
    if not normalise:
        raw, kept = run("SELECT (SELECT COUNT(*) FROM g_raw), (SELECT COUNT(*) FROM g_e)", [])[0]
        if raw != kept:
            raise DataError(f"{raw - kept} self-loops or repeated edges: pass normalise=True "
                            "to drop self-loops and merge repeats")
    run("DROP TABLE g_raw", [])
    run("CREATE OR REPLACE TEMP TABLE g_adj AS SELECT i AS s, j AS t FROM g_e "
        "UNION ALL SELECT j, i FROM g_e", [])
    return GraphTables(run, n)


def degrees(g: GraphTables) -> np.ndarray:
    """d_v for v = 0 … n − 1."""
    d = np.zeros(g.n_vertices, dtype=np.int64)
    for v, c in g.execute("SELECT s, COUNT(*) FROM g_adj GROUP BY s", []):
        d[int(v)] = int(c)
    return d


def triangle_count(g: GraphTables) -> int:
    """Number of triangles i < j < k (each counted once)."""
    sql = ("SELECT COUNT(*) FROM g_e e1 JOIN g_e e2 ON e1.j = e2.i "
           "JOIN g_e e3 ON e3.i = e1.i AND e3.j = e2.j")
    return int(g.execute(sql, [])[0][0])


def triangle_pair_frontier(g: GraphTables) -> tuple[np.ndarray, np.ndarray]:
    """The Pareto-maximal points (a, u) over vertex pairs; equal to the in-memory function's."""
    d = degrees(g)
    run = g.execute
    run("CREATE OR REPLACE TEMP TABLE g_deg AS SELECT s AS v, COUNT(*) AS d FROM g_adj GROUP BY s",
        [])
    run("CREATE OR REPLACE TEMP TABLE g_pairs AS SELECT x.t AS p, y.t AS q, COUNT(*) AS a "
        "FROM g_adj x JOIN g_adj y ON x.s = y.s AND x.t < y.t GROUP BY x.t, y.t", [])
    best_u = np.full(int(d.max(initial=0)) + 1, -1, dtype=np.int64)  # a ≤ max degree
    sql = ("SELECT w.a, MAX(dp.d + dq.d - CASE WHEN e.i IS NULL THEN 0 ELSE 2 END) "
           "FROM g_pairs w JOIN g_deg dp ON dp.v = w.p JOIN g_deg dq ON dq.v = w.q "
           "LEFT JOIN g_e e ON e.i = w.p AND e.j = w.q GROUP BY w.a")
    for a, u in run(sql, []):
        best_u[int(a)] = max(best_u[int(a)], int(u))
    # edges with no common neighbour
    u0 = run("SELECT MAX(di.d + dj.d - 2) FROM g_e e JOIN g_deg di ON di.v = e.i "
             "JOIN g_deg dj ON dj.v = e.j ANTI JOIN g_pairs w ON w.p = e.i AND w.q = e.j",
             [])[0][0]
    if u0 is not None:
        best_u[0] = max(best_u[0], int(u0))
    best_u[0] = max(best_u[0], _max_nonadjacent_degree_sum(g, d))
    run("DROP TABLE g_pairs", [])
    avals = np.flatnonzero(best_u >= 0)
    uvals = best_u[avals]
    if avals.size == 0:
        return avals, uvals
    suffix_max = np.maximum.accumulate(uvals[::-1])[::-1]
    keep = np.ones(avals.size, dtype=bool)
    keep[:-1] = uvals[:-1] > suffix_max[1:]
    return avals[keep], uvals[keep]


class _Neighbours:
    """What the in-memory degree-ordered scan reads (n, degrees, one vertex's neighbours),
    with each neighbour list read by one query."""

    def __init__(self, g: GraphTables, d: np.ndarray) -> None:
        self.n_vertices, self.degrees, self._run = g.n_vertices, d, g.execute

    def neighbours_of(self, v: int) -> np.ndarray:
        rows = self._run("SELECT t FROM g_adj WHERE s = ?", [int(v)])
        return np.array([r[0] for r in rows], dtype=np.int64)


def _max_nonadjacent_degree_sum(g: GraphTables, d: np.ndarray) -> int:
    from ..queries.graphs import _max_nonadjacent_degree_sum as scan

    return scan(_Neighbours(g, d))
