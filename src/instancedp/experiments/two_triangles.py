"""Example 23 of Canard & Olivier (Canard–Olivier §5.2, Lemma 25): 2-triangle counts.

f_2Δ(G) = number of pairs of triangles sharing an edge = Σ_e C(a_e, 2), where
a_e is the number of triangles through edge e.  Edge privacy: G ~ G′ when they
differ in one edge.  Computing its smooth sensitivity is NP-hard (Karwa et al.
2011, Thm. A.1), so 000 runs Algorithm 1 with upper bounds on LS instead:

- Lemma 25: with a_H = max over e′ ∉ H and edges e of H + e′ of a_e^{H+e′},
  the proof's steps (Karwa et al. Lemma 4.1: LS_ij = C(a_ij, 2) +
  Σ_{l ∈ N_ij}(a_il + a_jl − 2), each a ≤ a_H) give
  LS(H) ≤ C(a_H, 2) + 2·a_H(a_H − 1) = (5/2)·a_H(a_H − 1)  ("proof", tight on
  K_N minus an edge, where it equals the global sensitivity), and more coarsely
  (5/2)·a_H² ("coarse": C(a, 2) ≤ a²/2 plus Σ ≤ 2a²).  The printed constant is
  garbled in the text extraction; one reading is (3/2)·a_H² ("printed"; docs/errata.md),
  which fails already on 5 vertices (K_5 minus an edge: LS = 15 > 13.5).
- Layers L_k = graphs with k edges; neighbours lie in adjacent layers and a_H
  grows with H, so the layer maxima LS̃_k are non-decreasing and Algorithm 1
  runs with levels = layers (level r_k = k − 1).  A graph with k edges plus
  one more edge has an edge in at most min(N − 2, ⌊k/2⌋) triangles (each
  triangle on the edge uses two further edges), and a "book" attains it, so
  LS̃_k = (5/2)·a_k(a_k − 1) with a_k = min(N − 2, ⌊k/2⌋) for any N (checked
  exhaustively below).

Exhaustive tables enumerate all 2^{C(n,2)} graphs (n ≤ 7) with bit operations.
"""

from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..mechanisms.levels import InstanceBasedNoise, layered_level_rates

MAX_EXHAUSTIVE_VERTICES = 7
FORMS = ("proof", "coarse", "printed")


def _edges(n: int) -> list[tuple[int, int]]:
    return list(combinations(range(n), 2))


def exhaustive_tables(n: int) -> dict[str, np.ndarray]:
    """For every graph on n vertices (code g: bit e set ⇔ edge e present):
    ``f`` (2-triangle count), ``ls`` (exact local sensitivity), ``a`` (a_H of
    Lemma 25), ``edges`` (number of edges)."""
    if not isinstance(n, int) or not 3 <= n <= MAX_EXHAUSTIVE_VERTICES:
        raise ParameterError(f"n must be an integer in [3, {MAX_EXHAUSTIVE_VERTICES}], got {n!r}")
    edges = _edges(n)
    m = len(edges)
    index = {e: i for i, e in enumerate(edges)}
    codes = np.arange(1 << m, dtype=np.int64)
    bits = [((codes >> i) & 1).astype(np.int16) for i in range(m)]

    def bit(u: int, v: int) -> np.ndarray:
        return bits[index[(min(u, v), max(u, v))]]

    def triangle_counts() -> list[np.ndarray]:
        """a_e(g) for every edge e: common neighbours of its ends, 0 if e ∉ g."""
        out = []
        for i, j in edges:
            common = np.zeros(codes.size, dtype=np.int16)
            for w in range(n):
                if w not in (i, j):
                    common += bit(i, w) & bit(j, w)
            out.append(common * bit(i, j))
        return out

    tri = triangle_counts()
    f = np.zeros(codes.size, dtype=np.int32)
    top = np.zeros(codes.size, dtype=np.int16)  # max_e a_e(g)
    for t in tri:
        f += t.astype(np.int32) * (t - 1) // 2
        np.maximum(top, t, out=top)
    ls = np.zeros(codes.size, dtype=np.int32)
    a = np.zeros(codes.size, dtype=np.int16)
    for e in range(m):
        flip = codes ^ (1 << e)
        np.maximum(ls, np.abs(f[flip] - f), out=ls)
        # a_H: over e′ ∉ H, the largest a_e in H + e′.
        absent = bits[e] == 0
        np.maximum(a, np.where(absent, top[codes | (1 << e)], 0), out=a)
    complete = codes == (1 << m) - 1
    a[complete] = top[complete]
    n_edges = np.sum(np.stack(bits), axis=0)
    return {"f": f, "ls": ls, "a": a, "edges": n_edges}


def lemma25_bound(a: Any, form: str = "proof") -> np.ndarray:
    """LS̃(H) from a_H (Canard–Olivier Lemma 25): "proof" (5/2)·a(a − 1), "coarse" (5/2)·a²,
    "printed" (3/2)·a² (a reading of the garbled constant; not a valid bound)."""
    a = np.asarray(a, dtype=np.float64)
    if form == "proof":
        return 2.5 * a * (a - 1) + 0.0  # + 0.0 turns -0.0 (a = 0) into 0.0
    if form == "coarse":
        return 2.5 * a * a
    if form == "printed":
        return 1.5 * a * a
    raise ParameterError(f"form must be one of {FORMS}, got {form!r}")


def layer_bound(n_vertices: int, k: Any, form: str = "proof") -> np.ndarray:
    """LS̃_k: the Lemma 25 bound's maximum over layer L_k, a_k = min(N − 2, ⌊k/2⌋)."""
    k = np.asarray(k)
    return lemma25_bound(np.minimum(n_vertices - 2, k // 2), form)


def global_sensitivity(n_vertices: int) -> int:
    """GS of f_2Δ: adding the last edge to K_N − e gives C(N−2, 2) + 2(N−2)(N−3)."""
    n = n_vertices
    return math.comb(n - 2, 2) + 2 * (n - 2) * (n - 3)


def layer_table(n: int) -> list[dict[str, Any]]:
    """Per layer k: max exact LS, max of each Lemma 25 form, violations of each."""
    tab = exhaustive_tables(n)
    rows = []
    for k in range(len(_edges(n)) + 1):
        sel = tab["edges"] == k
        ls, a = tab["ls"][sel], tab["a"][sel]
        row: dict[str, Any] = {"n": n, "k": k, "graphs": int(sel.sum())}
        row["max_exact_ls"] = int(ls.max())
        for form in FORMS:
            bound = lemma25_bound(a, form)
            row[f"max_bound_{form}"] = float(bound.max())
            row[f"violations_{form}"] = int(np.sum(ls > bound))
        row["closed_form_layer_bound"] = float(layer_bound(n, k))
        rows.append(row)
    return rows


def summary(n: int) -> dict[str, Any]:
    """Whole-graph-space facts for n vertices."""
    tab = exhaustive_tables(n)
    out: dict[str, Any] = {
        "n": n,
        "graphs": int(tab["f"].size),
        "max_exact_ls": int(tab["ls"].max()),
        "gs_formula": global_sensitivity(n),
    }
    for form in FORMS:
        out[f"violations_{form}"] = int(np.sum(tab["ls"] > lemma25_bound(tab["a"], form)))
    return out


def layered_rates(n_vertices: int, epsilon: float, delta: float, form: str = "proof") -> np.ndarray:
    """Algorithm 1 rates λ_k for layers k = 0 … C(N, 2) with levels LS̃_k."""
    m = n_vertices * (n_vertices - 1) // 2
    return layered_level_rates(layer_bound(n_vertices, np.arange(m + 1), form), epsilon, delta)


def noise_table(
    vertex_counts: tuple[int, ...] = (10, 30, 100),
    epsilon: float = 1.0,
    delta: float = 1e-6,
    fractions: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0),
) -> list[dict[str, Any]]:
    """Expected |noise| 1/λ_k of Algorithm 1 (levels: the "proof" layer bound) for
    graphs with k = fraction·N edges, next to Laplace(GS/ε) (pure ε-DP)."""
    rows = []
    for n in vertex_counts:
        lam = layered_rates(n, epsilon, delta)
        m = lam.size - 1
        gs = global_sensitivity(n)
        for frac in fractions:
            k = min(m, int(round(frac * n)))
            rows.append(
                {
                    "N": n,
                    "edges": k,
                    "edges_over_N": frac,
                    "layer_bound": float(layer_bound(n, k)),
                    "alg1_noise": float(1 / lam[k]),
                    "laplace_noise": gs / epsilon,
                    "ratio_laplace_over_alg1": float(gs / epsilon * lam[k]),
                }
            )
    return rows


def two_triangle_mechanism(n_vertices: int, epsilon: float, delta: float) -> InstanceBasedNoise:
    """Algorithm 1 for the 2-triangle count of graphs on ``n_vertices`` (public)
    vertices, levels = layers: the level of a graph is its (private) edge count,
    used only to pick the rate λ_k (Canard–Olivier Example 23)."""
    from ..queries.graphs import TwoTriangleCount, as_graph

    if not isinstance(n_vertices, int) or n_vertices < 3:
        raise ParameterError(f"n_vertices must be an integer >= 3, got {n_vertices!r}")
    query = TwoTriangleCount(n_vertices=n_vertices)

    def level_of(data: Any) -> int:
        g = as_graph(data, n_vertices)
        if g.n_vertices != n_vertices:
            raise ParameterError(f"graph must have n_vertices = {n_vertices}")
        return int(g.n_edges)

    return InstanceBasedNoise(
        level_of, layered_rates(n_vertices, epsilon, delta), query, epsilon, delta
    )


def reproduce(outdir: str | Path, quick: bool = True) -> list[Path]:
    """Example 23 is reported beside Example 22: write levels.md/.json/.png into ``outdir``."""
    from .levels import reproduce as levels_reproduce

    return levels_reproduce(outdir, quick=quick)
