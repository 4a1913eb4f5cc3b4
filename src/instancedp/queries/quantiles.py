"""Several quantiles of one column over public bounds: the query behind the
joint, recursive and independent several-quantile mechanisms
(``instancedp.mechanisms.quantiles``).

Public: the levels q_1 < … < q_m, the bounds [lower, upper] and the neighbour
relation.  Data are clamped to the bounds.  The value is the vector of
empirical quantiles x_(⌈q_j n⌉) (the "inverted CDF" definition; x_(0) read as
``lower``), nondecreasing in j.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from .base import Query

_RELATIONS = ("add_remove", "substitution")


def _levels(qs: Any) -> tuple[float, ...]:
    try:
        values = [float(q) for q in np.atleast_1d(np.asarray(qs, dtype=object))]
    except (TypeError, ValueError):
        raise ParameterError(
            f"qs must be numbers in [0, 1], got {qs!r}", parameter="qs", allowed="[0, 1]"
        ) from None
    if not values:
        raise ParameterError("qs must hold at least one level", parameter="qs", allowed="[0, 1]")
    if any(not (0.0 <= q <= 1.0) or math.isnan(q) for q in values):
        raise ParameterError(
            f"qs must be numbers in [0, 1], got {qs!r}", parameter="qs", allowed="[0, 1]"
        )
    if any(b <= a for a, b in itertools.pairwise(values)):
        raise ParameterError(
            f"qs must be strictly increasing, got {qs!r}",
            parameter="qs",
            allowed="strictly increasing levels in [0, 1]",
        )
    return tuple(values)


class Quantiles(Query):
    """The m empirical quantiles at levels ``qs`` of data clamped to [lower, upper]."""

    name = "quantiles"

    def __init__(
        self, qs: Any, lower: float, upper: float, *, neighbours: str = "add_remove"
    ) -> None:
        self.qs = _levels(qs)
        self.lower, self.upper = _validate.bounds(lower, upper)
        self.neighbours = _validate.one_of(neighbours, _RELATIONS, "neighbours")

    @property
    def m(self) -> int:
        return len(self.qs)

    def _prepare(self, data: Any) -> np.ndarray:
        if np.size(data) == 0:  # an empty table is a valid dataset under add/remove
            return np.empty(0)
        return np.sort(np.clip(_validate.data_array(data), self.lower, self.upper))

    @property
    def global_sensitivity(self) -> float:
        """Per coordinate: one row can move a quantile across the whole range."""
        return self.upper - self.lower

    def value(self, data: Any) -> np.ndarray:
        x = self._load(data)
        n = x.size
        ranks = [math.ceil(q * n) for q in self.qs]
        return np.array([self.lower if k == 0 else float(x[k - 1]) for k in ranks])

    def local_sensitivity(self, data: Any, distance: int = 0) -> float:
        return self.global_sensitivity

    def parameters(self) -> dict[str, Any]:
        return {
            "qs": list(self.qs),
            "lower": self.lower,
            "upper": self.upper,
            "neighbours": self.neighbours,
        }
