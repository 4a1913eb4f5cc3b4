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

k-stars read the degrees and the neighbour lists of the few highest-degree
vertices (the scan of :func:`instancedp.queries.graphs.kstar_pair_frontier`);
2-triangles read the triangles through each edge (t_e) and, per pair with a
common neighbour, C(c, 2) + Σ_l (t_il + t_jl) − 2·c·[i ~ j] (Karwa et al. 2011,
Lemma 4.1).  :func:`summary` hands these to the graph queries as a
:class:`~instancedp.queries.graphs.GraphSummary`, so every mechanism releases
from them exactly what it releases from the edges in memory.

Input: an edge relation whose first two columns (or ``columns``) hold integer
vertex ids in 0 … n_vertices − 1 (the public vertex set), or, from a text file
read with ``lines=True``, one line per edge ("u v", "u,v" or "u;v", extra
fields ignored).  Two public policies:

- ``policy="strict"`` (the data owner): an id that is missing, not an
  integer or outside the vertex set is a :class:`DataError`; self-loops and
  repeated edges (also as (j, i)) are an error unless ``normalise=True``, as in
  :func:`instancedp.queries.graphs.as_graph`.  In a text file, blank lines,
  lines starting with ``#`` or ``%`` and a first line that is not two ids (a
  header) are skipped.
- ``policy="drop"`` (analyst mode): each row is judged on its own — one that
  is not two integer ids in range, or is a self-loop, is skipped; repeats are
  merged.  Row-by-row, so neighbouring edge sets stay neighbours (the rule of
  :func:`instancedp.io.read_edge_list_public`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DataError, ParameterError

__all__ = [
    "POLICIES",
    "GraphTables",
    "edge_tables",
    "summary",
    "n_edges",
    "degrees",
    "triangle_count",
    "triangle_pair_frontier",
    "kstar_pair_frontier",
    "two_triangle_count",
    "two_triangle_local_sensitivity",
]

POLICIES = ("strict", "drop")

# An integer id: optional sign, ASCII digits (what a text line's field must be).
_ID = "'^[+-]?[0-9]+$'"
# A UTF-8 byte-order mark read as Latin-1 (Windows exports put one before the first line).
_BOM = "chr(239) || chr(187) || chr(191)"


@dataclass
class GraphTables:
    """The normalised edge table ``g_e`` (i < j) and ``g_adj`` (both directions)."""

    execute: Any
    n_vertices: int
    _degrees: np.ndarray | None = None


def _id_expr(x: str) -> str:
    """A column as a BIGINT vertex id, NULL when it is missing or not an integer."""
    return (f"CASE WHEN TRY_CAST({x} AS DOUBLE) = TRY_CAST({x} AS BIGINT) "
            f"THEN TRY_CAST({x} AS BIGINT) END")


def _raw_edges(engine: Any, columns: tuple[str, str] | None, lines: bool, strict: bool) -> str:
    """SELECT of (r, a, b, ok): row number, the two ids (NULL when not an id), and whether
    the row counts as an edge row at all (text: not blank, not a comment, not a header)."""
    if lines:
        parts = (f"regexp_split_to_array(trim(ltrim(line, {_BOM})), '[\\s,;]+')")
        # line numbers only for the owner's header rule (a window holds every line)
        r = "row_number() OVER ()" if strict else "0"
        fields = (f"SELECT {r} AS r, trim(ltrim(line, {_BOM})) AS l, "
                  f"{parts} AS p FROM {engine.relation}")
        ids = [f"CASE WHEN len(p) >= 2 AND regexp_matches(p[{k}], {_ID}) "
               f"THEN TRY_CAST(p[{k}] AS BIGINT) END" for k in (1, 2)]
        ok = "NOT (l IS NULL OR l = '' OR l[1] IN ('#', '%'))" if strict else "true"
        return f"SELECT r, {ids[0]} AS a, {ids[1]} AS b, {ok} AS ok FROM ({fields}) AS f"
    cols = list(columns) if columns is not None else list(engine.columns)[:2]
    if len(cols) != 2:
        raise ParameterError("an edge list needs two columns (the two end vertices)",
                             parameter="columns", allowed="two column names")
    q = engine.dialect.quote
    a, b = (_id_expr(q(c)) for c in cols)
    return f"SELECT 0 AS r, {a} AS a, {b} AS b, true AS ok FROM {engine.relation}"


def edge_tables(
    engine: Any, n_vertices: int, *, columns: tuple[str, str] | None = None,
    normalise: bool = False, policy: str = "strict", lines: bool = False,
) -> GraphTables:
    """Build the edge tables from a DuckDB :class:`~instancedp.backends.sql.SQLEngine`.

    ``lines=True``: the engine's relation is one text column ``line`` per line
    (:func:`instancedp.backends.duckdb.connect` with ``lines=True``).
    """
    if isinstance(n_vertices, bool) or int(n_vertices) != n_vertices or n_vertices < 1:
        raise ParameterError(f"n_vertices must be an integer >= 1, got {n_vertices!r}",
                             parameter="n_vertices", allowed=">= 1")
    if policy not in POLICIES:
        raise ParameterError(f"policy must be one of {POLICIES}, got {policy!r}",
                             parameter="policy", allowed=", ".join(POLICIES))
    n = int(n_vertices)
    strict = policy == "strict"
    run = engine.execute
    run("CREATE OR REPLACE TEMP TABLE g_raw AS "
        + _raw_edges(engine, columns, lines, strict), [])
    inside = f"a IS NOT NULL AND b IS NOT NULL AND a >= 0 AND b >= 0 AND a < {n} AND b < {n}"
    if strict:
        if lines:  # a first line that is not two ids is a header
            run("DELETE FROM g_raw WHERE NOT ok OR (r = (SELECT MIN(r) FROM g_raw WHERE ok) "
                "AND (a IS NULL OR b IS NULL))", [])
        bad = run(f"SELECT COUNT(*) FROM g_raw WHERE NOT ({inside})", [])[0][0]
        if bad:
            raise DataError(f"{bad} edges are not two integer vertex ids in 0 … {n - 1}")
    else:
        run(f"DELETE FROM g_raw WHERE NOT ({inside})", [])
    run("CREATE OR REPLACE TEMP TABLE g_e AS SELECT DISTINCT least(a, b) AS i, "
        "greatest(a, b) AS j FROM g_raw WHERE a <> b", [])
    if strict and not normalise:
        raw, kept = run("SELECT (SELECT COUNT(*) FROM g_raw), (SELECT COUNT(*) FROM g_e)", [])[0]
        if raw != kept:
            raise DataError(f"{raw - kept} self-loops or repeated edges: pass normalise=True "
                            "to drop self-loops and merge repeats")
    run("DROP TABLE g_raw", [])
    run("CREATE OR REPLACE TEMP TABLE g_adj AS SELECT i AS s, j AS t FROM g_e "
        "UNION ALL SELECT j, i FROM g_e", [])
    return GraphTables(run, n)


def n_edges(g: GraphTables) -> int:
    return int(g.execute("SELECT COUNT(*) FROM g_e", [])[0][0])


def degrees(g: GraphTables) -> np.ndarray:
    """d_v for v = 0 … n − 1 (read once per edge tables)."""
    if g._degrees is None:
        d = np.zeros(g.n_vertices, dtype=np.int64)
        for v, c in g.execute("SELECT s, COUNT(*) FROM g_adj GROUP BY s", []):
            d[int(v)] = int(c)
        g._degrees = d
    return g._degrees.copy()


def triangle_count(g: GraphTables) -> int:
    """Number of triangles i < j < k (each counted once)."""
    sql = ("SELECT COUNT(*) FROM g_e e1 JOIN g_e e2 ON e1.j = e2.i "
           "JOIN g_e e3 ON e3.i = e1.i AND e3.j = e2.j")
    return int(g.execute(sql, [])[0][0])


def triangle_pair_frontier(
    g: GraphTables, chunk_wedges: int = 1 << 24
) -> tuple[np.ndarray, np.ndarray]:
    """The Pareto-maximal points (a, u) over vertex pairs; equal to the in-memory function's.

    The same degree-ordered scan with the same stopping rule as
    :func:`instancedp.queries.graphs.triangle_pair_frontier`: rows i in order of
    degree (descending, then id), each batch one aggregate over the wedges
    i – l – j (about ``chunk_wedges`` of them), stopping once a point found
    dominates (d_i, 2d_i).  On power-law graphs the scan stops after the few
    highest-degree rows instead of enumerating all Σ_v C(d_v, 2) wedges.
    """
    d = degrees(g)
    run = g.execute
    run("CREATE OR REPLACE TEMP TABLE g_deg AS SELECT s AS v, COUNT(*) AS d FROM g_adj GROUP BY s",
        [])
    # rank = position in the order (degree descending, then id): the in-memory stable argsort
    run("CREATE OR REPLACE TEMP TABLE g_rank AS SELECT g_deg.v, g_deg.d, "
        "row_number() OVER (ORDER BY g_deg.d DESC, g_deg.v) - 1 AS r, w.work FROM g_deg "
        "JOIN (SELECT a.s AS v, SUM(b.d) AS work FROM g_adj a JOIN g_deg b ON b.v = a.t "
        "GROUP BY a.s) w ON w.v = g_deg.v", [])
    ranked = run("SELECT d, work FROM g_rank ORDER BY r", [])
    best_u = np.full(int(d.max(initial=0)) + 1, -1, dtype=np.int64)  # a ≤ max degree
    if ranked:
        rd = np.array([r[0] for r in ranked], dtype=np.int64)
        rowwork = np.cumsum(np.array([r[1] for r in ranked], dtype=np.float64))
        batch = ("WITH b AS (SELECT v FROM g_rank WHERE r >= ? AND r < ?), "
                 "w AS (SELECT x.t AS p, y.t AS q, COUNT(*) AS a FROM b "
                 "JOIN g_adj x ON x.t = b.v JOIN g_adj y ON y.s = x.s AND y.t <> x.t "
                 "GROUP BY x.t, y.t), "
                 "pts AS (SELECT w.a, dp.d + dq.d - CASE WHEN e.s IS NULL THEN 0 ELSE 2 END "
                 "AS u FROM w JOIN g_deg dp ON dp.v = w.p JOIN g_deg dq ON dq.v = w.q "
                 "LEFT JOIN g_adj e ON e.s = w.p AND e.t = w.q "
                 # edges of the batch's rows with no common neighbour: a = 0
                 "UNION ALL SELECT 0, dp.d + dq.d - 2 FROM b JOIN g_adj e ON e.s = b.v "
                 "JOIN g_deg dp ON dp.v = e.s JOIN g_deg dq ON dq.v = e.t "
                 "ANTI JOIN w ON w.p = e.s AND w.q = e.t) "
                 "SELECT a, MAX(u) FROM pts GROUP BY a")
        pos, rows = 0, rd.size
        while pos < rows:
            di = int(rd[pos])
            if np.any(best_u[di:] >= 2 * di):  # (d_i, 2d_i) dominated: nothing left can win
                break
            target = (rowwork[pos - 1] if pos else 0.0) + chunk_wedges
            stop = int(np.searchsorted(rowwork, target, side="right"))
            stop = min(max(stop, pos + 1), pos + max(256, pos), rows)
            for a, u in run(batch, [pos, stop]):
                best_u[int(a)] = max(best_u[int(a)], int(u))
            pos = stop
    from ..queries.graphs import pareto_frontier

    best_u[0] = max(best_u[0], _max_nonadjacent_degree_sum(g, d))
    return pareto_frontier(best_u)


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


def kstar_pair_frontier(g: GraphTables) -> np.ndarray:
    """The k-star pair points; equal to :func:`instancedp.queries.graphs.kstar_pair_frontier`."""
    from ..queries.graphs import _kstar_frontier_scan

    return _kstar_frontier_scan(_Neighbours(g, degrees(g)))


def _edge_triangles(g: GraphTables) -> None:
    """``g_et``: the triangles through each edge, both directions (s, t, tri); edges in no
    triangle are absent."""
    g.execute(
        "CREATE OR REPLACE TEMP TABLE g_et AS WITH t AS (SELECT e1.i AS x, e1.j AS y, "
        "e2.j AS z FROM g_e e1 JOIN g_e e2 ON e1.j = e2.i "
        "JOIN g_e e3 ON e3.i = e1.i AND e3.j = e2.j), "
        "one AS (SELECT i, j, COUNT(*) AS tri FROM (SELECT x AS i, y AS j FROM t "
        "UNION ALL SELECT y, z FROM t UNION ALL SELECT x, z FROM t) GROUP BY i, j) "
        "SELECT i AS s, j AS t, tri FROM one UNION ALL SELECT j, i, tri FROM one", [])


def two_triangle_count(g: GraphTables) -> int:
    """Pairs of triangles sharing an edge: Σ over edges of C(t_e, 2)."""
    _edge_triangles(g)
    v = g.execute("SELECT SUM(tri * (tri - 1) // 2) FROM g_et WHERE s < t", [])[0][0]
    return int(v or 0)


def two_triangle_local_sensitivity(g: GraphTables) -> int:
    """Exact LS of the 2-triangle count (Karwa et al. 2011, Lemma 4.1): the largest
    C(c_ij, 2) + Σ_{l common} (t_il + t_jl) − 2·c_ij·[i ~ j] over pairs with c_ij ≥ 1
    (0 when no pair has a common neighbour, or n < 3)."""
    if g.n_vertices < 3:
        return 0
    _edge_triangles(g)
    sql = ("SELECT MAX(w.c * (w.c - 1) // 2 + w.w - CASE WHEN e.i IS NULL THEN 0 "
           "ELSE 2 * w.c END) FROM (SELECT x.t AS p, y.t AS q, COUNT(*) AS c, "
           "SUM(COALESCE(tp.tri, 0) + COALESCE(tq.tri, 0)) AS w "
           "FROM g_adj x JOIN g_adj y ON x.s = y.s AND x.t < y.t "
           "LEFT JOIN g_et tp ON tp.s = x.t AND tp.t = x.s "
           "LEFT JOIN g_et tq ON tq.s = y.t AND tq.t = y.s GROUP BY x.t, y.t) AS w "
           "LEFT JOIN g_e e ON e.i = w.p AND e.j = w.q")
    v = g.execute(sql, [])[0][0]
    return int(v or 0)


def summary(g: GraphTables) -> Any:
    """The :class:`~instancedp.queries.graphs.GraphSummary` over these tables: each
    statistic is computed in DuckDB the first time a query asks for it."""
    from ..queries.graphs import GraphSummary

    compute = {
        "n_edges": n_edges,
        "degrees": degrees,
        "triangle_count": triangle_count,
        "triangle_frontier": triangle_pair_frontier,
        "kstar_frontier": kstar_pair_frontier,
        "two_triangle_count": two_triangle_count,
        "two_triangle_ls": two_triangle_local_sensitivity,
    }
    return GraphSummary(g.n_vertices, lambda name: compute[name](g))
