"""Shared shape of the several-quantile mechanisms.

One signature for all of them: ``Cls(query, epsilon)`` with a
:class:`~instancedp.queries.quantiles.Quantiles` query (levels, public
bounds, neighbour relation); ``release`` returns one record holding a sorted
vector of m values; ``sample(data, size, rng)`` draws ``size`` outputs on the
same code path (the per-dataset preparation done once).

Methods, one file each:

- :mod:`.joint_quantiles` — the joint exponential mechanism (Gillenwater,
  Joseph & Kulesza, ICML 2021), exact sampler;
- :mod:`.recursive_quantiles` — the recursive algorithm of Kaplan, Schnapp &
  Stemmer (ICML 2022), error growing with log m;
- :mod:`.independent_quantiles` — m single-quantile exponential mechanisms at
  ε/m each (what diffprivlib, OpenDP and Tumult do), for comparison.

The single-quantile exponential mechanism they compose is the one of
:mod:`.quantile` (Smith 2011): its interval weights, an index drawn from
them and an exactly rounded uniform point inside the interval.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..privacy import PureDP
from ..queries.quantiles import Quantiles
from ..random import RandomSource, resolve, sample_index_from_log_weights
from .base import Mechanism, Release
from .quantile import interval_log_weights


def uniform_point(lo: float, hi: float, source: RandomSource) -> float:
    """A uniform point of [lo, hi]: exactly rounded on secure sources (Mironov 2012)."""
    if lo == hi:
        return lo
    if source.secure:
        from ..noise.exact import uniform as exact_uniform

        return exact_uniform(lo, hi, source)
    return min(max(lo + source.uniform() * (hi - lo), lo), hi)


def single_quantile(
    x_sorted: np.ndarray,
    q: float,
    lower: float,
    upper: float,
    epsilon: float,
    source: RandomSource,
) -> float:
    """One exponential-mechanism q-quantile of sorted data inside [lower, upper].

    Density ∝ exp(−ε|i − qn|/2) on the interval of rank i: ε-DP when the rank
    score moves by at most 1 — under substitution, and under add/remove
    (one rank by ≤ 1 and qn by q, in opposite directions: ≤ max(q, 1 − q)).
    A degenerate range lower == upper has one possible output.
    """
    if lower == upper:
        return lower
    if x_sorted.size == 0:  # one interval, [lower, upper]: the uniform law
        return uniform_point(lower, upper, source)
    pts, logw = interval_log_weights(x_sorted, q, lower, upper, epsilon)
    i = sample_index_from_log_weights(logw, source)
    return uniform_point(float(pts[i]), float(pts[i + 1]), source)


class QuantilesMechanism(Mechanism):
    """Base: ``Cls(query, epsilon)``; pure ε-DP under the query's relation."""

    def __init__(self, query: Quantiles, epsilon: float) -> None:
        if not isinstance(query, Quantiles):
            raise ParameterError(
                f"query must be a Quantiles query, got {type(query).__name__}",
                parameter="query",
                allowed="instancedp.queries.quantiles.Quantiles",
            )
        self.query = query
        self.epsilon = _validate.epsilon(epsilon)

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def parameters(self) -> dict[str, Any]:
        return {**self.query.parameters(), "epsilon": self.epsilon}

    def _setup(self, x: np.ndarray) -> Any:
        """Per-dataset preparation shared by all draws (default: the sorted data)."""
        return x

    def _draw(self, state: Any, source: RandomSource) -> np.ndarray:
        raise NotImplementedError

    def release(self, data: Any, rng: Any = None) -> Release:
        source = resolve(rng)
        value = self._draw(self._setup(self.query.prepare(data).data), source)
        return self._record(value, source)

    def sample(self, data: Any, size: int, rng: Any = None) -> np.ndarray:
        """``size`` outputs (rows) on one dataset, by the release path."""
        source = resolve(rng)
        state = self._setup(self.query.prepare(data).data)
        return np.array([self._draw(state, source) for _ in range(int(size))]).reshape(
            int(size), self.query.m
        )
