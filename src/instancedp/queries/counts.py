"""Counts, sums and the ratio a/b, all under add/remove neighbours.

``Count`` (the number of records) and ``Sum(lower, upper)`` (of the clamped
values) have constant local sensitivity: 1 and max(|lower|, |upper|).

``Ratio()`` releases a/b for b users of whom a have a property (the private
ratio of the blog post 004, "privately bounding local sensitivity"; FORMULAS
§5).  Data: a 1-D array of 0/1 flags, one per user, so a = number of 1s and
b = n.  A user joining adds 1 to b (and to a if flagged); datasets stay
non-empty (b ≥ 1: a/b is undefined for b = 0).  The exact local sensitivity,
with M = max(a, b − a), μ = min(a, b − a), is

    LS = M/(b(b − 1))   if μ ≥ 1      (remove one user of the minority side),
    LS = 1/(b + 1)      if μ = 0      (add one user of the missing side).

The blog's LS = max(b − a, a)/(b² − b) is exact when 0 < a < b; at a ∈ {0, b}
it is the upper bound 1/(b − 1) (for b > 1), since there is no user of the
missing side to remove.  At distance k (derivation in docs/queries.md; every
move that removes a user raises LS, adding never does):

    μ = 0:   A^(k) = 1/(max(1, b − k) + 1),
    μ ≥ 1:   A^(k) = M/((b − k)(b − k − 1))            for k ≤ μ − 1,
             A^(k) = 1/(M − min(k − μ + 1, M − 1) + 1)   for k ≥ μ.

Checked against brute force (BFS over add/remove moves) in the tests.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from .. import _validate
from .base import Query
from .order import _distance

__all__ = ["Count", "Sum", "Ratio", "ratio_local_sensitivity"]


def _records(data: Any, drop_missing: bool) -> np.ndarray:
    """1-D float records; an empty dataset is allowed (count and sum 0)."""
    if isinstance(data, list | tuple) and len(data) == 0:
        return np.empty(0)
    arr = np.asarray(data)
    if arr.size == 0 and arr.ndim == 1:
        return np.empty(0)
    return _validate.data_array(data, drop_missing=drop_missing)


class Count(Query):
    """The number of records; add/remove, sensitivity 1."""

    name = "count"
    neighbours = "add_remove"
    exact: ClassVar[bool] = True

    def __init__(self, *, drop_missing: bool = False) -> None:
        self.drop_missing = bool(drop_missing)

    def _prepare(self, data: Any) -> np.ndarray:
        return _records(data, self.drop_missing)

    @property
    def global_sensitivity(self) -> float:
        return 1.0

    def value(self, data: Any) -> float:
        return float(self._load(data).size)

    def max_distance(self, data: Any) -> float:
        return 0.0

    def local_sensitivity(self, data: Any, distance: int = 0) -> float:
        _distance(distance)
        return 1.0

    def smooth_sensitivity(self, data: Any, beta: float) -> float:
        _validate.nonnegative(beta, "beta")
        return 1.0


class Sum(Query):
    """The sum of the values clamped to [lower, upper]; add/remove.

    LS = A^(k) = SS = max(|lower|, |upper|) for every dataset (adding the
    extreme value is always possible).
    """

    name = "sum"
    neighbours = "add_remove"
    exact: ClassVar[bool] = True

    def __init__(self, lower: float, upper: float, *, drop_missing: bool = False) -> None:
        self.lower, self.upper = _validate.bounds(lower, upper)
        self.drop_missing = bool(drop_missing)

    def _prepare(self, data: Any) -> np.ndarray:
        return np.clip(_records(data, self.drop_missing), self.lower, self.upper)

    @property
    def global_sensitivity(self) -> float:
        return max(abs(self.lower), abs(self.upper))

    def value(self, data: Any) -> float:
        return math.fsum(self._load(data))

    def max_distance(self, data: Any) -> float:
        return 0.0

    def local_sensitivity(self, data: Any, distance: int = 0) -> float:
        _distance(distance)
        return self.global_sensitivity

    def smooth_sensitivity(self, data: Any, beta: float) -> float:
        _validate.nonnegative(beta, "beta")
        return self.global_sensitivity

    def parameters(self) -> dict[str, Any]:
        return {"lower": self.lower, "upper": self.upper}


def ratio_local_sensitivity(a: int, b: int, distance: Any = 0) -> np.ndarray | float:
    """A^(k) of a/b under add/remove (module docstring); vectorised over ``distance``."""
    if b < 1 or not 0 <= a <= b:
        raise ValueError(f"need 0 <= a <= b and b >= 1, got a={a!r}, b={b!r}")
    k = np.asarray(distance, dtype=np.float64)
    big, small = max(a, b - a), min(a, b - a)
    if small == 0:
        out = 1.0 / (np.maximum(1.0, b - k) + 1.0)
    else:
        near = k <= small - 1
        kk = np.where(near, k, 0.0)
        first = big / ((b - kk) * (b - kk - 1.0))
        j = np.minimum(k - small + 1.0, big - 1.0)
        second = 1.0 / (big - np.maximum(j, 0.0) + 1.0)
        out = np.where(near, first, second)
    return float(out) if out.ndim == 0 else out


class Ratio(Query):
    """a/b for 0/1 flags (one per user), add/remove; global sensitivity 1/2."""

    name = "ratio"
    neighbours = "add_remove"
    exact: ClassVar[bool] = True

    def __init__(self, *, drop_missing: bool = False) -> None:
        self.drop_missing = bool(drop_missing)

    def _prepare(self, data: Any) -> tuple[int, int]:
        x = _validate.data_array(data, drop_missing=self.drop_missing)
        bad = int(np.count_nonzero((x != 0) & (x != 1)))
        if bad:
            raise ValueError(
                f"data must be 0/1 flags (one per user); {bad} value(s) are not 0 or 1"
            )
        return int(np.count_nonzero(x)), int(x.size)

    @property
    def global_sensitivity(self) -> float:
        return 0.5  # b = 1 → 2, or b = 2 with a = 1 → b = 1

    def value(self, data: Any) -> float:
        a, b = self._load(data)
        return a / b

    def counts(self, data: Any) -> tuple[int, int]:
        """(a, b) — private; for mechanisms that work on the counts."""
        return self._load(data)

    def max_distance(self, data: Any) -> float:
        return float(self._load(data)[1])

    def local_sensitivity(self, data: Any, distance: int = 0) -> float:
        k = _distance(distance)
        a, b = self._load(data)
        return float(ratio_local_sensitivity(a, b, k))

    def smooth_sensitivity(self, data: Any, beta: float) -> float:
        """max_k e^{−kβ} A^(k), k = 0..b (A^(k) = 1/2 from k = b − 1 on); O(min(b, K))."""
        beta = _validate.nonnegative(beta, "beta")
        a, b = self._load(data)
        a0 = float(ratio_local_sensitivity(a, b, 0))
        # no k with e^{−kβ}·(1/2) ≤ A^(0) can win
        kmax = b if beta == 0 else min(b, math.ceil(math.log(0.5 / a0) / beta) + 1)
        k = np.arange(0, kmax + 1)
        return float(np.max(np.exp(-k * beta) * ratio_local_sensitivity(a, b, k)))
