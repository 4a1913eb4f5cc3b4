"""Counts, sums and the ratio a/b.

``Count`` (the number of records; add/remove only — under substitution the
size is public and there is nothing to release) and ``Sum(lower, upper)`` (of
the clamped values) have constant local sensitivity: 1 and, for the sum,
max(|lower|, |upper|) under add/remove, upper − lower under substitution.
The sum is exact: an integer on the public grid of
:func:`~instancedp.queries.means.fixed_point_units`, so every backend gets the
same bits and neighbours differ by at most the sensitivity before the final
rounding to a double (whose slack the sensitivity includes).

``Ratio()`` releases a/b for b users of whom a have a property (the private
ratio of the blog post "privately bounding local sensitivity"; docs/queries.md).
Data: a 1-D array of 0/1 flags, one per user, so a = number of 1s and
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
from ..errors import ParameterError
from .base import Query, relation
from .means import exact_clamped_sum, fixed_point_exponent, fixed_point_value
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
    supported_relations = ("add_remove",)
    exact: ClassVar[bool] = True

    def __init__(self, *, neighbours: str = "add_remove", drop_missing: bool = False) -> None:
        relation(neighbours, self.supported_relations)
        self.drop_missing = bool(drop_missing)

    def _prepare(self, data: Any) -> np.ndarray:
        return _records(data, self.drop_missing)

    @property
    def global_sensitivity(self) -> float:
        return 1.0

    def value(self, data: Any) -> float:
        return float(self._load(data).size)

    def parameters(self) -> dict[str, Any]:
        return {"neighbours": self.neighbours}

    def max_distance(self, data: Any) -> float:
        return 0.0

    def local_sensitivity(self, data: Any, distance: int = 0) -> float:
        _distance(distance)
        return 1.0

    def smooth_sensitivity(self, data: Any, beta: float) -> float:
        _validate.nonnegative(beta, "beta")
        return 1.0


class Sum(Query):
    """The sum of the values clamped to [lower, upper].

    Add/remove (default): LS = A^(k) = SS = max(|lower|, |upper|) for every
    dataset (adding the extreme value is always possible).  Substitution:
    upper − lower (replace a value at one bound by the other), for n ≥ 1.
    Both include :attr:`rounding_slack`.
    """

    name = "sum"
    neighbours = "add_remove"
    supported_relations = ("add_remove", "substitution")
    exact: ClassVar[bool] = True

    #: row counts up to which ``rounding_slack`` covers the final rounding
    MAX_ROWS = 1 << 32

    def __init__(
        self,
        lower: float,
        upper: float,
        *,
        neighbours: str = "add_remove",
        drop_missing: bool = False,
    ) -> None:
        self.lower, self.upper = _validate.bounds(lower, upper)
        self.neighbours = relation(neighbours, self.supported_relations)  # type: ignore[assignment]
        # both sensitivities must be finite doubles (bounds like ±1e308 are refused)
        fixed_point_exponent(self.lower, self.upper, shift=True)
        self.drop_missing = bool(drop_missing)

    def _prepare(self, data: Any) -> np.ndarray:
        return np.clip(_records(data, self.drop_missing), self.lower, self.upper)

    @property
    def rounding_slack(self) -> float:
        """Bound on |fl(S) − S| + |fl(S′) − S′| for the exact sums S, S′ of up to
        ``MAX_ROWS`` rows: ulp(MAX_ROWS · max(|lower|, |upper|)).  Beyond that the
        rounding can add up to ulp(n·max(|lower|, |upper|)), i.e. ε grows by a
        factor at most 1 + n·2^−52."""
        return math.ulp(self.MAX_ROWS * max(abs(self.lower), abs(self.upper)))

    @property
    def global_sensitivity(self) -> float:
        if self.neighbours == "substitution":
            return self.upper - self.lower + self.rounding_slack
        return max(abs(self.lower), abs(self.upper)) + self.rounding_slack

    def value(self, data: Any) -> float:
        x = self._load(data)
        total = exact_clamped_sum(x, self.lower, self.upper)
        return fixed_point_value(total, fixed_point_exponent(self.lower, self.upper))

    def max_distance(self, data: Any) -> float:
        return 1.0 if self.neighbours == "substitution" else 0.0

    def _substitution_ls0(self, x: np.ndarray) -> float:
        """Replace the smallest value by ``upper`` or the largest by ``lower``."""
        if x.size == 0:
            return self.upper - self.lower
        return float(max(self.upper - x.min(), x.max() - self.lower))

    def local_sensitivity(self, data: Any, distance: int = 0) -> float:
        k = _distance(distance)
        if self.neighbours == "substitution" and k == 0:
            # from distance 1 on a value can sit at either bound: upper − lower
            return self._substitution_ls0(self._load(data)) + self.rounding_slack
        return self.global_sensitivity

    def smooth_sensitivity(self, data: Any, beta: float) -> float:
        beta = _validate.nonnegative(beta, "beta")
        if self.neighbours == "substitution":
            ls0 = self._substitution_ls0(self._load(data))
            far = math.exp(-beta) * (self.upper - self.lower)
            return max(ls0, far) + self.rounding_slack
        return self.global_sensitivity

    def parameters(self) -> dict[str, Any]:
        return {"lower": self.lower, "upper": self.upper, "neighbours": self.neighbours}



def ratio_local_sensitivity(a: int, b: int, distance: Any = 0) -> np.ndarray | float:
    """A^(k) of a/b under add/remove (module docstring); vectorised over ``distance``."""
    if b < 1 or not 0 <= a <= b:
        raise ParameterError(f"need 0 <= a <= b and b >= 1, got a={a!r}, b={b!r}")
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
    """a/b for 0/1 flags (one per user).

    Add/remove (default): global sensitivity 1/2, A^(k) in the module
    docstring.  Substitution (b fixed and public): one flag flips, a moves by
    1, so LS = A^(k) = SS = 1/b and the global sensitivity is 1 (b = 1).
    """

    name = "ratio"
    neighbours = "add_remove"
    supported_relations = ("add_remove", "substitution")
    exact: ClassVar[bool] = True

    def __init__(self, *, neighbours: str = "add_remove", drop_missing: bool = False) -> None:
        self.neighbours = relation(neighbours, self.supported_relations)  # type: ignore[assignment]
        self.drop_missing = bool(drop_missing)

    def _prepare(self, data: Any) -> tuple[int, int]:
        x = _validate.data_array(data, drop_missing=self.drop_missing)
        bad = int(np.count_nonzero((x != 0) & (x != 1)))
        if bad:
            raise ParameterError(
                f"data must be 0/1 flags (one per user); {bad} value(s) are not 0 or 1"
            )
        return int(np.count_nonzero(x)), int(x.size)

    @property
    def global_sensitivity(self) -> float:
        if self.neighbours == "substitution":
            return 1.0  # b = 1: a flips between 0 and 1
        return 0.5  # b = 1 → 2, or b = 2 with a = 1 → b = 1

    def value(self, data: Any) -> float:
        a, b = self._load(data)
        return a / b

    def parameters(self) -> dict[str, Any]:
        return {"neighbours": self.neighbours}

    def counts(self, data: Any) -> tuple[int, int]:
        """(a, b) — private; for mechanisms that work on the counts."""
        return self._load(data)

    def max_distance(self, data: Any) -> float:
        return float(self._load(data)[1])

    def local_sensitivity(self, data: Any, distance: int = 0) -> float:
        k = _distance(distance)
        a, b = self._load(data)
        if self.neighbours == "substitution":
            return 1.0 / b
        return float(ratio_local_sensitivity(a, b, k))

    def smooth_sensitivity(self, data: Any, beta: float) -> float:
        """max_k e^{−kβ} A^(k), k = 0..b (A^(k) = 1/2 from k = b − 1 on); O(min(b, K))."""
        beta = _validate.nonnegative(beta, "beta")
        a, b = self._load(data)
        if self.neighbours == "substitution":
            return 1.0 / b
        a0 = float(ratio_local_sensitivity(a, b, 0))
        # no k with e^{−kβ}·(1/2) ≤ A^(0) can win
        kmax = b if beta == 0 else min(b, math.ceil(math.log(0.5 / a0) / beta) + 1)
        k = np.arange(0, kmax + 1)
        return float(np.max(np.exp(-k * beta) * ratio_local_sensitivity(a, b, k)))
