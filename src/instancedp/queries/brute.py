"""Brute-force reference: local and smooth sensitivity by enumerating neighbours.

Works on small finite domains only (values from a short grid, n ≤ 7; graphs
on ≤ 6 vertices) and uses nothing but the statistic ``f`` itself, so it is
an independent check of every fast formula in ``instancedp.queries``.

Datasets of scalar records are multisets, represented as sorted tuples (all
the scalar queries are symmetric).  Graphs are :class:`~.graphs.Graph`.

Relations:

- ``"substitution"`` — replace one record by any domain value (n fixed);
- ``"add_remove"`` — add any domain value, or remove one record (datasets
  stay non-empty unless ``allow_empty=True``: then the empty dataset, the
  value ``()``, neighbours every one-record dataset);
- ``"edge"`` — toggle one vertex pair of a graph (vertex set fixed).

``local_sensitivity(f, x, relation, domain, distance=k)`` is
A^(k)(x) = max{LS(y) : d(x, y) ≤ k}, found by breadth-first search over the
neighbour graph; ``smooth_sensitivity`` is max_k e^{−kβ} A^(k)(x).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..errors import ParameterError

__all__ = [
    "datasets",
    "neighbours",
    "local_sensitivity",
    "local_sensitivities",
    "smooth_sensitivity",
    "graphs",
]

MAX_N = 7
MAX_VERTICES = 6


def datasets(domain: Sequence[float], n: int) -> Iterator[tuple]:
    """Every multiset of n values from ``domain`` (as sorted tuples)."""
    if n < 0 or n > MAX_N:
        raise ParameterError(f"n must be in [0, {MAX_N}] for brute force, got {n!r}")
    yield from itertools.combinations_with_replacement(sorted(domain), n)


def graphs(n_vertices: int) -> Iterator[Any]:
    """Every simple graph on ``n_vertices`` labelled vertices."""
    if n_vertices < 1 or n_vertices > MAX_VERTICES:
        raise ParameterError(f"n_vertices must be in [1, {MAX_VERTICES}], got {n_vertices!r}")
    pairs = list(itertools.combinations(range(n_vertices), 2))
    for mask in range(1 << len(pairs)):
        yield _graph(n_vertices, frozenset(pairs[b] for b in range(len(pairs)) if mask >> b & 1))


_GRAPHS: dict = {}


def _graph(n: int, edges: frozenset) -> Any:
    """One shared Graph object per small graph (building CSR matrices is the slow part)."""
    from .graphs import Graph

    key = (n, edges)
    g = _GRAPHS.get(key)
    if g is None:
        if len(_GRAPHS) > 200_000:
            _GRAPHS.clear()
        g = _GRAPHS[key] = Graph.from_edges(sorted(edges), n)
    return g


def neighbours(
    data: Any, relation: str, domain: Sequence[float] | None = None, *, allow_empty: bool = False
) -> list:
    """All neighbours of ``data`` under ``relation`` (distinct, ``data`` excluded)."""
    if relation == "edge":
        g = data
        n = g.n_vertices
        edges = g.edge_set()
        return [_graph(n, edges ^ {pair}) for pair in itertools.combinations(range(n), 2)]
    if domain is None:
        raise ParameterError("domain is required for the substitution and add_remove relations")
    x = tuple(sorted(data))
    dom = sorted(set(domain))
    found: set[tuple] = set()
    if relation == "substitution":
        for i in range(len(x)):
            rest = x[:i] + x[i + 1 :]
            for v in dom:
                found.add(tuple(sorted(rest + (v,))))
    elif relation == "add_remove":
        for v in dom:
            found.add(tuple(sorted(x + (v,))))
        if len(x) > 1 or (allow_empty and len(x) == 1):
            for i in range(len(x)):
                found.add(x[:i] + x[i + 1 :])
    else:
        raise ParameterError(
            f"relation must be 'substitution', 'add_remove' or 'edge', got {relation!r}"
        )
    found.discard(x)
    return sorted(found)


def _key(data: Any, relation: str) -> Any:
    return data if relation == "edge" else tuple(sorted(data))


_CACHE: dict = {}


def _explorer(f, relation, domain, allow_empty=False) -> _Explorer:
    """Memo shared across calls with the same statistic, relation and domain."""
    key = (f, relation, None if domain is None else tuple(sorted(set(domain))), allow_empty)
    try:
        ex = _CACHE.get(key)
    except TypeError:  # unhashable statistic
        return _Explorer(f, relation, domain, allow_empty)
    if ex is None:
        if len(_CACHE) > 64:
            _CACHE.clear()
        ex = _CACHE[key] = _Explorer(f, relation, domain, allow_empty)
    return ex


class _Explorer:
    """Memoised f, LS and neighbour lists for one statistic."""

    def __init__(self, f: Callable[[Any], float], relation: str, domain, allow_empty=False) -> None:
        self.f, self.relation, self.domain = f, relation, domain
        self.allow_empty = allow_empty
        self._f: dict = {}
        self._ls: dict = {}
        self._nb: dict = {}

    def value(self, x):
        if x not in self._f:
            self._f[x] = float(self.f(list(x) if self.relation != "edge" else x))
        return self._f[x]

    def nbrs(self, x):
        if x not in self._nb:
            ys = neighbours(x, self.relation, self.domain, allow_empty=self.allow_empty)
            self._nb[x] = [_key(y, self.relation) for y in ys]
        return self._nb[x]

    def ls(self, x):
        if x not in self._ls:
            fx = self.value(x)
            self._ls[x] = max((abs(self.value(y) - fx) for y in self.nbrs(x)), default=0.0)
        return self._ls[x]


def local_sensitivities(
    f: Callable[[Any], float],
    data: Any,
    relation: str,
    domain: Sequence[float] | None = None,
    max_distance: int = 3,
    max_size: int | None = None,
    *,
    allow_empty: bool = False,
) -> list[float]:
    """[A^(0)(x), …, A^(max_distance)(x)] by breadth-first search.

    ``max_size`` (add_remove only) bounds the dataset sizes explored; it must be
    ≥ len(x) + max_distance for the answer to be exact (the default).
    """
    ex = _explorer(f, relation, domain, allow_empty)
    start = _key(data, relation)
    seen = {start}
    frontier = [start]
    best = ex.ls(start)
    out = [best]
    for _ in range(max_distance):
        nxt = []
        for x in frontier:
            for y in ex.nbrs(x):
                if y not in seen and (max_size is None or len(y) <= max_size):
                    seen.add(y)
                    nxt.append(y)
        frontier = nxt
        for y in frontier:
            best = max(best, ex.ls(y))
        out.append(best)
    return out


def local_sensitivity(
    f: Callable[[Any], float],
    data: Any,
    relation: str,
    domain: Sequence[float] | None = None,
    distance: int = 0,
) -> float:
    """A^(k)(x) = max over y with d(x, y) ≤ k of LS(y)."""
    return local_sensitivities(f, data, relation, domain, distance)[distance]


def smooth_sensitivity(
    f: Callable[[Any], float],
    data: Any,
    relation: str,
    domain: Sequence[float] | None = None,
    beta: float = 0.1,
    *,
    global_sensitivity: float | None = None,
    max_distance: int = 60,
    allow_empty: bool = False,
) -> float:
    """max_k e^{−kβ} A^(k)(x), by BFS until the space is exhausted or the decay
    makes larger k irrelevant (e^{−kβ}·GS ≤ best, needs ``global_sensitivity``)."""
    ex = _explorer(f, relation, domain, allow_empty)
    start = _key(data, relation)
    seen = {start}
    frontier = [start]
    a_k = ex.ls(start)
    best = a_k
    k = 0
    while frontier:
        k += 1
        if global_sensitivity is not None and math.exp(-k * beta) * global_sensitivity <= best:
            return best
        if k > max_distance:
            raise ParameterError(f"brute force did not terminate within distance {max_distance}")
        nxt = []
        for x in frontier:
            for y in ex.nbrs(x):
                if y not in seen:
                    seen.add(y)
                    nxt.append(y)
        frontier = nxt
        for y in frontier:
            a_k = max(a_k, ex.ls(y))
        best = max(best, math.exp(-k * beta) * a_k)
    return best
