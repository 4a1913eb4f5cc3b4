"""The recursive approximate-quantiles algorithm (Kaplan, Schnapp & Stemmer,
"Differentially Private Approximate Quantiles", ICML 2022, Algorithm 1).

Release the middle level q_h (h = ⌈m/2⌉) of the data in [a, b] by the
single-quantile exponential mechanism, giving v; split the data into
{x < v} and {x ≥ v}; recurse on the left with levels q_j/q_h (j < h) in
[a, v] and on the right with levels (q_j − q_h)/(1 − q_h) (j > h) in [v, b].
The recursion has L = ⌈log2(m + 1)⌉ levels; each row lies in exactly one
subproblem per level.

Privacy (pure ε): every mechanism of a level runs on a disjoint part chosen
from earlier *released* values, so under add/remove one row changes one part
of each level by one added/removed row.  Each single-quantile mechanism is
ε₀-DP for that change (its rank score moves by ≤ max(q, 1 − q) ≤ 1), so a
level costs ε₀ (parallel composition) and the L levels cost L·ε₀ (adaptive
composition).  A substitution is a removal and an addition, so it costs
2·L·ε₀ (group privacy).  Hence ε₀ = ε / (L·k), k = 1 (add/remove) or 2
(substitution) — :meth:`RecursiveQuantiles.per_mechanism_epsilon`.
Outputs are sorted by construction (each value lies in its parent's range).

Sampling (:func:`recursive_draw`).  Each node is the exponential mechanism of
:class:`~instancedp.mechanisms.quantile.ExponentialQuantile` (uniform base,
score sensitivity 1) on the node's rows inside its public range [a, b], drawn
exactly by its staged sampler (:class:`~instancedp.mechanisms.quantile.PieceSet`:
a window of order statistics around the target rank, further single order
statistics only when the exact inversion needs them).  A node's rows are a
contiguous run of ranks of the whole sorted column (rows before it are < a,
rows after it ≥ b), so every read is a rank window of the whole column: an
array slice in memory, ``order_window``-style reads on a database — the same
values, hence the same draws.  The nodes are drawn level by level (left to
right within a level; a node's draws are independent given its ancestors', so
the order does not change the law), which lets a reader fetch every window of
a level in one pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from ..random import RandomSource
from .quantile import ExponentialQuantile, PieceSet
from .quantiles import QuantilesMechanism


def recursion_depth(m: int) -> int:
    """L = ⌈log2(m + 1)⌉: levels of the middle-split recursion over m levels."""
    return max(1, math.ceil(math.log2(m + 1)))


class RankReader(Protocol):
    """Sorted rows clamped to public bounds, read by rank (global, 0-based)."""

    def read(self, start: int, stop: int) -> np.ndarray:
        """The values at ranks [start, stop), 0 <= start <= stop <= n."""

    def prefetch(self, windows: list[tuple[int, int]]) -> None:
        """A hint: the rank windows the next reads will ask for (may do nothing)."""


class SortedRows:
    """A :class:`RankReader` over an in-memory sorted array."""

    def __init__(self, x: np.ndarray) -> None:
        self.x = np.asarray(x, dtype=np.float64) + 0.0  # −0.0 → 0.0, as every engine reads it

    def read(self, start: int, stop: int) -> np.ndarray:
        return self.x[start:stop]

    def prefetch(self, windows: list[tuple[int, int]]) -> None:
        return None


def _node_reader(read: Callable[[int, int], np.ndarray], offset: int, count: int,
                 a: float, b: float) -> Callable[[int, int], np.ndarray]:
    """Ranks of one node's rows (``a`` below 0, ``b`` from ``count`` on)."""
    from ..backends.numpy import pad_window

    def node_read(start: int, stop: int) -> np.ndarray:
        lo, hi = max(start, 0), min(stop, count)
        inside = read(offset + lo, offset + hi) if hi > lo else np.empty(0)
        return pad_window(inside, start, stop, a, b, offset=lo, n=count)

    return node_read


def _count_below(node_read: Callable[[int, int], np.ndarray], i: int, v: float) -> int:
    """#{node rows < v} when every row at a rank < i is <= v (v = boundary i)."""
    k = 1
    while True:
        s = max(i - k, 0)
        w = node_read(s, i)
        first = s + int(np.searchsorted(w, v, side="left"))
        if first > s or s == 0:
            return first
        k *= 4


def recursive_draw(
    qs: Any, lower: float, upper: float, eps0: float, n: int, reader: RankReader,
    source: RandomSource,
) -> np.ndarray:
    """The recursive algorithm's m values (module docstring) over the n sorted rows,
    clamped to [lower, upper], that ``reader`` reads by rank.

    A node: levels, rows at ranks [offset, offset + count), public range [a, b].
    Its middle level q is released by the exponential mechanism (ε₀, uniform
    base, score sensitivity 1); the node's rows < v go left ([a, v]), the
    others right ([v, b]).  v lies in a drawn piece i between boundaries i and
    i + 1 (the node's ranks i − 1 and i); when v exceeds boundary i exactly
    i rows are below it, otherwise the rows equal to v are counted back.
    """
    levels = list(enumerate(float(q) for q in qs))
    out = np.empty(len(levels))
    frontier = [(0, int(n), levels, float(lower), float(upper))]
    while frontier:
        plans = []
        for offset, count, lv, a, b in frontier:
            if not lv:
                continue
            h = (len(lv) - 1) // 2  # the ⌈m/2⌉-th level, 0-based
            plans.append((offset, count, lv, a, b, h))
        windows = []
        for offset, count, lv, a, b, h in plans:
            if a < b:
                start, stop = PieceSet.window_pieces(count, lv[h][1], eps0, 1.0)
                lo, hi = max(start - 1, 0), min(stop, count)
                if hi > lo:
                    windows.append((offset + lo, offset + hi))
        reader.prefetch(windows)
        frontier = []
        for offset, count, lv, a, b, h in plans:
            j, level = lv[h]
            if a < b:
                mech = ExponentialQuantile(level, a, b, eps0)  # uniform base, Δ = 1
                node_read = _node_reader(reader.read, offset, count, a, b)
                pieces = mech.pieces(count, node_read)
                i, v = pieces.draw_piece(source)
                v = float(v)
                cut = i if v > pieces.edge(i) else _count_below(node_read, i, v)
            else:  # one possible output
                v, cut = a, 0
            out[j] = v
            left = [(i_, min(q / level, 1.0)) for i_, q in lv[:h]]
            right = [(i_, min(max((q - level) / (1.0 - level), 0.0), 1.0))
                     for i_, q in lv[h + 1:]]
            frontier.append((offset, cut, left, a, v))
            frontier.append((offset + cut, count - cut, right, v, b))
    return out


class RecursiveQuantiles(QuantilesMechanism):
    """ε-DP several quantiles by the recursive algorithm of Kaplan, Schnapp & Stemmer (2022)."""

    name = "recursive_quantiles"

    def per_mechanism_epsilon(self) -> float:
        k = 2 if self.query.neighbours == "substitution" else 1
        return self.epsilon / (recursion_depth(self.query.m) * k)

    def _draw(self, state: np.ndarray, source: RandomSource) -> np.ndarray:
        q = self.query
        return recursive_draw(q.qs, q.lower, q.upper, self.per_mechanism_epsilon(),
                              int(state.size), SortedRows(state), source)

    def draw_from(self, n: int, reader: RankReader, source: RandomSource) -> np.ndarray:
        """The same draw from n rows read by rank (e.g. a database's order windows)."""
        q = self.query
        return recursive_draw(q.qs, q.lower, q.upper, self.per_mechanism_epsilon(), n,
                              reader, source)
