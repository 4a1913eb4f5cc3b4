"""Several quantiles without public bounds: m bound-free quantiles at ε/m each.

Each level q_j is released by :class:`~instancedp.mechanisms.unbounded.
UnboundedQuantile` (Durfee, NeurIPS 2023: AboveThreshold over a geometric
grid of candidates, looking for the level of q_j and ½ beyond the median from
0, places a bracket, then the exponential mechanism for q_j inside it; no
bound taken from the data or from the float range) at ε/m; the vector
is sorted.  Basic composition of m pure ε/m-DP releases is
ε-DP under the relation each holds for (Dwork & Roth 2014, Thm. 3.16), and
sorting is post-processing.  This is the bound-free variant of the several-
quantile release: the joint and recursive mechanisms need a finite range.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..privacy import PureDP
from ..random import RandomSource, resolve
from .base import Mechanism, Release
from .unbounded import UnboundedQuantile

_RELATIONS = ("add_remove", "substitution")


class UnboundedQuantiles(Mechanism):
    """ε-DP m quantiles without bounds: m Durfee (2023) quantiles at ε/m each, sorted."""

    name = "unbounded_quantiles"

    def __init__(
        self, qs: Any, epsilon: float, *, neighbours: str = "add_remove",
        beta: float | None = None,
    ) -> None:
        from ..queries.quantiles import _levels

        levels = _levels(qs)
        if any(not 0.0 < q < 1.0 for q in levels):
            raise ParameterError(
                f"bound-free quantiles need levels in (0, 1), got {list(levels)!r}",
                parameter="quantiles",
                allowed="(0, 1)",
            )
        self.qs = levels
        self.neighbours = _validate.one_of(neighbours, _RELATIONS, "neighbours")
        self.epsilon = _validate.epsilon(epsilon)
        share = self.epsilon / len(levels)
        # beta: the scan grid's ratio (public; default the single quantile's)
        grid = {} if beta is None else {"beta": beta}
        self._parts = [
            UnboundedQuantile(q, share, neighbours=neighbours, **grid) for q in levels
        ]

    @property
    def m(self) -> int:
        return len(self.qs)

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def parameters(self) -> dict[str, Any]:
        grid = self._parts[0].parameters()["grid"]
        return {
            "qs": list(self.qs),
            "epsilon": self.epsilon,
            "neighbours": self.neighbours,
            "bounds": None,
            "split": {"per_quantile": self.epsilon / self.m, "composition": "basic"},
            "grid": grid,
        }

    def _draw(self, x: np.ndarray, source: RandomSource) -> np.ndarray:
        return np.sort(np.array([p._draw(x, source) for p in self._parts], dtype=np.float64))

    def release(self, data: Any, rng: Any = None) -> Release:
        source = resolve(rng)
        return self._record(self._draw(self._parts[0]._rows(data), source), source)

    def sample(self, data: Any, size: int, rng: Any = None) -> np.ndarray:
        """``size`` outputs (rows) on one dataset, by the release path."""
        source = resolve(rng)
        x = self._parts[0]._rows(data)
        return np.array([self._draw(x, source) for _ in range(int(size))]).reshape(-1, self.m)
