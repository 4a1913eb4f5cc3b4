"""The mean under add/remove neighbours: noisy sum ÷ noisy count.

Under add/remove the row count n is private, so the mean's sensitivity
cannot be (upper − lower)/n.  The standard release (e.g. Dwork & Roth 2014,
§3.5 composition; the OpenDP and Tumult "sum/count" mean) spends a public
share of ε on each of

* the sum of the shifted values y_i = fl(clamp(x_i) − lower) ∈ [0, D],
  D = fl(upper − lower), exact on the public grid
  (:func:`~instancedp.queries.means.exact_clamped_sum`), sensitivity D;
* the count, sensitivity 1;

each with Laplace noise (sequential composition: ε = ε_sum + ε_count), and
releases lower + clamp(S̃ / max(C̃, 1), 0, D) — post-processing of the two
noisy values, so the origin's rounding never meets the sensitivity.  The
split is public and fixed (``split`` of ε to the sum, default 1/2; the best
split depends on n, which is private) and stated in the record.  Shifting the
origin to ``lower`` makes the sum's sensitivity D = upper − lower whatever the
signs of the bounds.  The empty table is data: its release is lower +
clamp(Lap/max(Lap, 1), 0, D), like any other.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..privacy import PureDP
from ..queries.base import finite_range
from ..queries.counts import Count, Sum, _records
from ..random import resolve
from .base import Mechanism, Release
from .global_noise import LaplaceMechanism


class NoisySumOverCount(Mechanism):
    """ε-DP mean under add/remove: lower + (noisy shifted sum) ÷ (noisy count)."""

    name = "sum_over_count"
    neighbours = "add_remove"

    def __init__(self, lower: float, upper: float, epsilon: float, *, split: float = 0.5) -> None:
        self.lower, self.upper = _validate.bounds(lower, upper)
        self.range = finite_range(self.lower, self.upper)
        self.epsilon = _validate.epsilon(epsilon)
        if not (isinstance(split, float | int) and 0.0 < float(split) < 1.0):
            raise ParameterError(
                f"split must be a number in (0, 1), got {split!r}",
                parameter="split",
                allowed="(0, 1)",
            )
        self.split = float(split)
        self._sum = LaplaceMechanism(Sum(0.0, self.range), self.epsilon * self.split)
        self._count = LaplaceMechanism(Count(), self.epsilon * (1.0 - self.split))

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def parameters(self) -> dict[str, Any]:
        return {
            "lower": self.lower,
            "upper": self.upper,
            "epsilon": self.epsilon,
            "neighbours": self.neighbours,
            "split": {"sum": self.split, "count": 1.0 - self.split},
            "sum_sensitivity": self._sum.sensitivity,
            "sum_scale": self._sum.scale,
            "count_scale": self._count.scale,
            "origin": self.lower,
        }

    def _shifted(self, data: Any) -> np.ndarray:
        x = _records(data, drop_missing=False)
        return np.clip(x, self.lower, self.upper) - self.lower

    def _parts(self, data: Any, source: Any) -> tuple[float, float]:
        """(noisy shifted sum, noisy count): the two releases the mean post-processes
        (also the inputs of its confidence interval, ``instancedp.intervals``)."""
        y = self._shifted(data)
        return self._sum.release(y, rng=source).value, self._count.release(y, rng=source).value

    def _combine(self, s: float, c: float) -> float:
        return self.lower + min(max(s / max(c, 1.0), 0.0), self.range)

    def release(self, data: Any, rng: Any = None) -> Release:
        source = resolve(rng)
        return self._record(self._combine(*self._parts(data, source)), source)
