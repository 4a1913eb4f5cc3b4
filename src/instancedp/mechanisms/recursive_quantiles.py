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
"""

from __future__ import annotations

import math

import numpy as np

from ..random import RandomSource
from .quantiles import QuantilesMechanism, single_quantile


def recursion_depth(m: int) -> int:
    """L = ⌈log2(m + 1)⌉: levels of the middle-split recursion over m levels."""
    return max(1, math.ceil(math.log2(m + 1)))


class RecursiveQuantiles(QuantilesMechanism):
    """ε-DP several quantiles by the recursive algorithm of Kaplan, Schnapp & Stemmer (2022)."""

    name = "recursive_quantiles"

    def per_mechanism_epsilon(self) -> float:
        k = 2 if self.query.neighbours == "substitution" else 1
        return self.epsilon / (recursion_depth(self.query.m) * k)

    def _draw(self, state: np.ndarray, source: RandomSource) -> np.ndarray:
        q = self.query
        eps0 = self.per_mechanism_epsilon()
        out = np.empty(q.m)

        def solve(x: np.ndarray, levels: list[tuple[int, float]], a: float, b: float) -> None:
            if not levels:
                return
            h = (len(levels) - 1) // 2  # ⌈m/2⌉-th level, 0-based
            j, level = levels[h]
            v = single_quantile(x, level, a, b, eps0, source)
            out[j] = v
            cut = int(np.searchsorted(x, v, side="left"))
            left = [(i, lv / level) for i, lv in levels[:h]]
            right = [(i, (lv - level) / (1.0 - level)) for i, lv in levels[h + 1 :]]
            solve(x[:cut], [(i, min(lv, 1.0)) for i, lv in left], a, v)
            solve(x[cut:], [(i, min(max(lv, 0.0), 1.0)) for i, lv in right], v, b)

        solve(state, list(enumerate(q.qs)), q.lower, q.upper)
        return out
