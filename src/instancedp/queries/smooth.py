"""Smooth sensitivity from a user's k ↦ A^(k), and a checker for β-smooth bounds.

NRS 2007 Def. 2.1–2.2 and Prop. 3.1 (docs/queries.md): a function S is a
β-smooth upper bound on LS if S(x) ≥ LS(x) and S(x) ≤ e^β·S(y) for all
neighbours x, y; SS_β(x) = max_k e^{−kβ} A^(k)(x) is the smallest one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .. import _validate
from ..errors import ParameterError
from . import brute

__all__ = ["SmoothSensitivity", "is_beta_smooth_upper_bound", "smoothness_violation"]


class SmoothSensitivity:
    """SS_β = max_k e^{−kβ} A^(k) for a user function ``local(k) = A^(k)``.

    Contract for ``local``: defined for every integer k ≥ 0, non-decreasing in
    k (A^(k) is a maximum over a growing ball) and ≤ ``global_sensitivity``.
    The scan over k stops once e^{−kβ}·global_sensitivity ≤ the best value so
    far, or after ``max_distance`` (beyond which A^(k) must be constant).
    Values that break the contract raise ``ValueError``.
    """

    def __init__(
        self,
        local: Callable[[int], float],
        *,
        global_sensitivity: float = math.inf,
        max_distance: float = math.inf,
    ) -> None:
        if not callable(local):
            raise ParameterError("local must be a function k -> A^(k)")
        gs = float(global_sensitivity)
        if math.isnan(gs) or gs < 0:
            raise ParameterError(
                f"global_sensitivity must be >= 0 (or inf), got {global_sensitivity!r}"
            )
        md = float(max_distance)
        if math.isnan(md) or md < 0:
            raise ParameterError(f"max_distance must be >= 0 (or inf), got {max_distance!r}")
        if math.isinf(gs) and math.isinf(md):
            raise ParameterError(
                "need a finite global_sensitivity or max_distance for the scan over k to end"
            )
        self.local, self.global_sensitivity, self.max_distance = local, gs, md

    @classmethod
    def from_local(
        cls,
        local: Callable[[int], float],
        *,
        global_sensitivity: float = math.inf,
        max_distance: float = math.inf,
    ) -> SmoothSensitivity:
        """SS from any k ↦ A^(k) (see the class docstring for the contract)."""
        return cls(local, global_sensitivity=global_sensitivity, max_distance=max_distance)

    def _a(self, k: int, previous: float) -> float:
        v = float(self.local(k))
        if not math.isfinite(v) or v < 0:
            raise ParameterError(f"A^({k}) must be finite and >= 0, got {v!r}")
        if v < previous:
            raise ParameterError(f"A^(k) must be non-decreasing in k: A^({k}) = {v} < {previous}")
        if v > self.global_sensitivity * (1 + 1e-12):
            raise ParameterError(
                f"A^({k}) = {v} exceeds global_sensitivity {self.global_sensitivity}"
            )
        return v

    def __call__(self, beta: float) -> float:
        return self.smooth_sensitivity(beta)

    def smooth_sensitivity(self, beta: float) -> float:
        beta = _validate.nonnegative(beta, "beta")
        if beta == 0 and math.isinf(self.max_distance):
            return self.global_sensitivity  # sup_k A^(k) ≤ GS; not attained is still the sup
        a = self._a(0, 0.0)
        best = a
        k = 1
        while k <= self.max_distance:
            decay = math.exp(-k * beta)
            if decay * self.global_sensitivity <= best:
                break
            a = self._a(k, a)
            best = max(best, decay * a)
            k += 1
        return best


def smoothness_violation(
    bound: Callable[[Any], float],
    f: Callable[[Any], float],
    beta: float,
    data: Iterable[Any],
    relation: str,
    domain: Sequence[float] | None = None,
    *,
    rtol: float = 1e-12,
) -> tuple[str, Any, Any] | None:
    """First counterexample to "``bound`` is a β-smooth upper bound on LS of f"
    over the given datasets and their brute-force neighbours, or None.

    Returns ("below_ls", x, None) if bound(x) < LS(x), or ("not_smooth", x, y)
    if bound(x) > e^β·bound(y) for a neighbour y.
    """
    beta = _validate.nonnegative(beta, "beta")
    cache: dict = {}

    def s(x):
        key = x if relation == "edge" else tuple(sorted(x))
        if key not in cache:
            cache[key] = float(bound(x if relation == "edge" else list(key)))
        return cache[key]

    for x in data:
        sx = s(x)
        ls = brute.local_sensitivity(f, x, relation, domain, 0)
        if sx < ls * (1 - rtol) - 1e-300:
            return ("below_ls", x, None)
        for y in brute.neighbours(x, relation, domain):
            if sx > math.exp(beta) * s(y) * (1 + rtol):
                return ("not_smooth", x, y)
    return None


def is_beta_smooth_upper_bound(
    bound: Callable[[Any], float],
    f: Callable[[Any], float],
    beta: float,
    data: Iterable[Any],
    relation: str,
    domain: Sequence[float] | None = None,
    *,
    rtol: float = 1e-12,
) -> bool:
    """True if bound(x) ≥ LS(x) and bound(x) ≤ e^β·bound(y) for every given
    dataset x and every brute-force neighbour y (small domains only)."""
    return smoothness_violation(bound, f, beta, data, relation, domain, rtol=rtol) is None
