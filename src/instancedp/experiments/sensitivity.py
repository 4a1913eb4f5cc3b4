"""Speed of the exact sensitivity engine (docs/queries.md), as tables.

- ``median_scaling``: exact median smooth sensitivity after the sort, as a
  ratio to ``numpy.sort`` of the same array in the same run (target ≤ 0.2).
- ``naive_vs_fast``: the O(n²) definition (every k, A^(k) each) against the
  fast algorithm at n = 2·10^4: same answer, time ratio.
- ``triangle_benchmark``: triangle-count smooth sensitivity on Erdős–Rényi and
  Barabási–Albert graphs as a ratio to counting the triangles alone with
  scipy.sparse ((A·A) ∘ A summed) in the same run (target ≤ 3), with the peak
  memory (tracemalloc) of each.

``run(quick=...)`` returns everything; ``to_markdown`` renders it.
"""

from __future__ import annotations

import gc
import json
import math
import os
import platform
import time
import tracemalloc
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import ParameterError
from ..queries.graphs import Graph, TriangleCount, _csr
from ..queries.order import (
    pair_log_smooth_sensitivity,
    pair_smooth_sensitivity_naive,
    quantile_index,
)

KINDS = ("uniform", "normal", "heavy_tie", "all_equal")
BOUNDS = {
    "uniform": (0.0, 1.0),
    "normal": (-4.0, 4.0),
    "heavy_tie": (0.0, 20.0),
    "all_equal": (0.0, 1.0),
}


def _data(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "uniform":
        return rng.uniform(0.0, 1.0, n)
    if kind == "normal":
        return rng.normal(0.0, 1.0, n)
    if kind == "heavy_tie":
        return rng.integers(0, 21, n).astype(np.float64)
    if kind == "all_equal":
        return np.full(n, 0.5)
    raise ParameterError(f"kind must be one of {KINDS}, got {kind!r}")


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def median_scaling(
    ns: Sequence[int] = (10**6, 10**7, 10**8),
    kinds: Sequence[str] = KINDS,
    betas: Sequence[float] = (0.01, 0.1),
    *,
    kinds_at_largest: Sequence[str] | None = None,
    seed: int = 0,
    quick: bool = False,
) -> list[dict[str, Any]]:
    """One row per (n, data kind, β): sort time, SS time after the sort, ratio.

    ``kinds_at_largest`` restricts the data kinds at the largest n (10^8 is
    slow to generate and sort on a small shared machine).  The SS step is the
    best of 3 runs below 10^8 (1 run at 10^8); the sort is one run each.
    """
    if quick:
        ns = (10**5, 10**6)
    rng = np.random.default_rng(seed)
    rows = []
    for n in ns:
        use = kinds if (kinds_at_largest is None or n != max(ns)) else kinds_at_largest
        for kind in use:
            lo, hi = BOUNDS[kind]
            raw = np.clip(_data(kind, n, rng), lo, hi)
            gc.collect()
            t_sort, x = _timed(lambda raw=raw: np.sort(raw))
            del raw
            m = quantile_index(0.5, n)
            for beta in betas:
                reps = 1 if n >= 10**8 else 3
                times = []
                for _ in range(reps):
                    t, log_ss = _timed(partial(pair_log_smooth_sensitivity, x, lo, hi, m, m, beta))
                    times.append(t)
                t_ss = min(times)
                rows.append(
                    {
                        "n": n,
                        "data": kind,
                        "beta": beta,
                        "sort_s": t_sort,
                        "ss_s": t_ss,
                        "ratio": t_ss / t_sort,
                        "log_ss": log_ss,
                    }
                )
            del x
            gc.collect()
    return rows


def naive_vs_fast(n: int = 20_000, beta: float = 0.01, seed: int = 0) -> dict[str, Any]:
    """Median SS on n uniform values: the O(n²) definition vs the fast algorithm."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0.0, 1.0, n))
    m = quantile_index(0.5, n)
    t_naive, naive = _timed(lambda: pair_smooth_sensitivity_naive(x, 0.0, 1.0, m, m, beta))
    t_fast, log_fast = _timed(lambda: pair_log_smooth_sensitivity(x, 0.0, 1.0, m, m, beta))
    fast = math.exp(log_fast)
    return {
        "n": n,
        "beta": beta,
        "naive_s": t_naive,
        "fast_s": t_fast,
        "speedup": t_naive / t_fast,
        "naive_value": naive,
        "fast_value": fast,
        "equal": math.isclose(naive, fast, rel_tol=1e-12),
    }


def erdos_renyi(n: int, m: int, seed: int = 0) -> Graph:
    """G(n, m)-like: m distinct random pairs (no self-loops), vectorised."""
    rng = np.random.default_rng(seed)
    keys = np.empty(0, dtype=np.int64)
    while keys.size < m:
        i = rng.integers(0, n, 2 * m)
        j = rng.integers(0, n, 2 * m)
        ok = i != j
        lo, hi = np.minimum(i[ok], j[ok]), np.maximum(i[ok], j[ok])
        keys = np.unique(np.concatenate([keys, lo * n + hi]))
    keys = rng.permutation(keys)[:m]
    lo, hi = keys // n, keys % n
    return Graph(_csr(np.concatenate([lo, hi]), np.concatenate([hi, lo]), n))


def barabasi_albert(n: int, k: int, seed: int = 0) -> Graph:
    """Preferential attachment (Barabási–Albert 1999): each new vertex joins k
    distinct existing vertices chosen with probability ∝ degree (the
    repeated-endpoints list; as networkx.barabasi_albert_graph), start star K_{1,k}."""
    rng = np.random.default_rng(seed)
    src = np.empty((n - k - 1) * k + k, dtype=np.int64)
    dst = np.empty_like(src)
    src[:k], dst[:k] = k, np.arange(k)
    ends = np.empty(2 * src.size, dtype=np.int64)
    ends[: 2 * k : 2], ends[1 : 2 * k : 2] = k, np.arange(k)
    filled, e = 2 * k, k
    for v in range(k + 1, n):
        chosen: set[int] = set()
        while len(chosen) < k:
            draws = ends[rng.integers(0, filled, 2 * k)]
            for t in draws.tolist():
                chosen.add(t)
                if len(chosen) == k:
                    break
        targets = np.fromiter(chosen, dtype=np.int64, count=k)
        src[e : e + k], dst[e : e + k] = v, targets
        ends[filled : filled + 2 * k : 2] = v
        ends[filled + 1 : filled + 2 * k : 2] = targets
        filled += 2 * k
        e += k
    return Graph(_csr(np.concatenate([src, dst]), np.concatenate([dst, src]), n))


def _fresh_ss(q: TriangleCount, a: sp.csr_array, beta: float) -> float:
    return q.smooth_sensitivity(Graph(a), beta)


def _scipy_triangles(a: sp.csr_array) -> int:
    return int((a @ a).multiply(a).sum(dtype=np.int64) // 6)


def _peak_mb(fn: Callable[[], Any]) -> float:
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20


def triangle_benchmark(
    specs: Sequence[tuple[str, int, int]] | None = None,
    betas: Sequence[float] = (0.1, 0.01),
    *,
    seed: int = 0,
    quick: bool = False,
) -> list[dict[str, Any]]:
    """One row per (graph, β): triangle-count SS time / scipy triangle count time.

    ``specs``: (model, n_vertices, parameter) with model "er" (parameter = number
    of edges) or "ba" (parameter = edges per new vertex).
    """
    if specs is None:
        specs = (
            [("er", 2000, 100_000), ("ba", 5000, 10)]
            if quick
            else [
                ("er", 10_000, 1_000_000),
                ("er", 100_000, 1_000_000),
                ("ba", 10_000, 100),
                ("ba", 100_000, 10),
            ]
        )
    rows = []
    for model, n, p in specs:
        g = erdos_renyi(n, p, seed) if model == "er" else barabasi_albert(n, p, seed)
        a = g.adjacency
        t_count, tri = _timed(lambda a=a: _scipy_triangles(a))
        mem_count = _peak_mb(lambda a=a: _scipy_triangles(a))
        q = TriangleCount()
        for beta in betas:
            # a fresh Graph each time: graphs cache their frontier (PTR's repeated calls)
            fresh = partial(_fresh_ss, q, a, beta)
            t_ss, ss = _timed(fresh)
            mem_ss = _peak_mb(fresh)
            rows.append(
                {
                    "graph": f"{'Erdős–Rényi' if model == 'er' else 'Barabási–Albert'}",
                    "n_vertices": n,
                    "n_edges": g.n_edges,
                    "max_degree": int(g.degrees.max()),
                    "triangles": tri,
                    "beta": beta,
                    "count_s": t_count,
                    "ss_s": t_ss,
                    "ratio": t_ss / t_count,
                    "smooth_sensitivity": ss,
                    "ls": q.local_sensitivity(Graph(a), 0),
                    "peak_mb_count": mem_count,
                    "peak_mb_ss": mem_ss,
                }
            )
    return rows


def run(quick: bool = False, largest_kinds: Sequence[str] | None = None) -> dict[str, Any]:
    """Everything in ``docs/results/sensitivity.md``."""
    t0 = time.perf_counter()
    out = {
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "quick": quick,
        "median": median_scaling(quick=quick, kinds_at_largest=largest_kinds),
        "naive_vs_fast": naive_vs_fast(n=4000 if quick else 20_000),
        "triangles": triangle_benchmark(quick=quick),
    }
    out["elapsed_s"] = time.perf_counter() - t0
    return out


def to_markdown(res: dict[str, Any]) -> str:
    lines = [
        "# Sensitivity engine: speed of the exact algorithms",
        "",
        f"Machine: {res['cpu_count']} cores (os.cpu_count()), shared with other jobs; "
        f"Python {res['python']}, numpy {res['numpy']}; one run of `benchmarks/sensitivity.py`"
        f"{' --quick' if res['quick'] else ''} ({res['elapsed_s']:.0f} s).  Every ratio is "
        "between two timings taken in the same run on the same data.",
        "",
        "## Median smooth sensitivity after the sort",
        "",
        "SS_β of the median (exact, `order.pair_log_smooth_sensitivity`) on the sorted clamped "
        "array, as a ratio to `numpy.sort` of that array.  Target ≤ 0.2.",
        "",
        "| n | data | β | numpy.sort (s) | SS step (s) | SS / sort | log SS |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in res["median"]:
        lines.append(
            f"| {r['n']:.0e} | {r['data']} | {r['beta']:g} | {r['sort_s']:.3f} | "
            f"{r['ss_s']:.5f} | {r['ratio']:.4f} | {r['log_ss']:.6g} |"
        )
    worst = max(r["ratio"] for r in res["median"])
    lines += ["", f"Largest ratio: {worst:.4f}.", ""]
    nv = res["naive_vs_fast"]
    lines += [
        "## O(n²) definition vs the fast algorithm",
        "",
        f"Median, n = {nv['n']} uniform values, β = {nv['beta']}: the definition "
        "max_k e^{−kβ} A^(k) over every k takes "
        f"{nv['naive_s']:.2f} s, the fast algorithm {nv['fast_s'] * 1e3:.2f} ms "
        f"(× {nv['speedup']:.0f}); same answer: {nv['equal']} "
        f"({nv['naive_value']:.12g} vs {nv['fast_value']:.12g}).",
        "",
        "## Triangle-count smooth sensitivity",
        "",
        "Exact SS (NRS §3) from the (a_ij, d_i + d_j − 2·x_ij) frontier over all pairs (row "
        "chunks of A·A, never dense) vs counting triangles alone with scipy.sparse "
        "(`((A @ A).multiply(A)).sum() / 6`).  Target ≤ 3.  Peak memory by tracemalloc "
        "(numpy/scipy buffers).",
        "",
        "| graph | vertices | edges | max degree | triangles | β | count (s) | SS (s) | "
        "SS / count | SS | LS | peak MB count | peak MB SS |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["triangles"]:
        lines.append(
            f"| {r['graph']} | {r['n_vertices']} | {r['n_edges']} | {r['max_degree']} | "
            f"{r['triangles']} | {r['beta']:g} | {r['count_s']:.2f} | {r['ss_s']:.2f} | "
            f"{r['ratio']:.2f} | {r['smooth_sensitivity']:.4g} | {r['ls']:.0f} | "
            f"{r['peak_mb_count']:.0f} | {r['peak_mb_ss']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def reproduce(
    outdir: str | Path, quick: bool = True, largest_kinds: Sequence[str] | None = None
) -> list[Path]:
    """Write sensitivity.md/.json into ``outdir``; ``largest_kinds`` as in :func:`run`."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    res = run(quick=quick, largest_kinds=largest_kinds)
    paths = [out / "sensitivity.md", out / "sensitivity.json"]
    paths[0].write_text(to_markdown(res))
    paths[1].write_text(json.dumps(res, indent=2) + "\n")
    return paths
