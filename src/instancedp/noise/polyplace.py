"""The PolyPlace distribution (Hladík & Tětek, "Smooth Sensitivity Revisited:
Towards Optimality", FORC 2025; Def. 6, Lemma 7, Lemma 13).

PolyPlace(s, α), s > 0, α > 1, with N = α / (2s(2((α−1)/α)^α + α − 1)):

* f(x) = N(α−1)(1 − |x|/s)^{α−1}            for |x|/s < 1/α   (polynomial body)
* f(x) = N(α+1)(1 − 1/α²)^α (1 + |x|/s)^{−α−1}  otherwise        (polynomial tail)

The branches meet continuously at |x| = s/α.  The mechanism
q(D) + PolyPlace(SS_γ(D)/γ, ε/γ) is ε-DP for 0 < γ < ε (Thm. 8); the variance
is finite for α > 2 (Lemma 13, formula as restored in FORMULAS.md §2) and the
law tends to Laplace(SS/ε) as γ → 0 (Lemma 15).

Numerics: every power is taken as exp(α·log1p(·)) so that α = ε/γ in the
thousands (γ → 0) stays exact to rounding.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate
from .base import NoiseDistribution


def _constants(alpha: float) -> tuple[float, float, float]:
    """(N₁, body coefficient N₁(α−1)/α, tail coefficient N₁(α+1)/α·(1−1/α²)^α) at s = 1."""
    a = alpha
    pow_body = math.exp(a * math.log1p(-1.0 / a))  # ((α−1)/α)^α
    n1 = a / (2.0 * (2.0 * pow_body + a - 1.0))
    body = n1 * (a - 1.0) / a
    tail = n1 * (a + 1.0) / a * math.exp(a * math.log1p(-1.0 / (a * a)))
    return n1, body, tail


def polyplace_variance(scale: float, shape: float) -> float:
    """Variance of PolyPlace(scale, shape) (Lemma 13; infinite for shape ≤ 2).

    σ² = 2s²[(19α²+5)(1−1/α)^α + (α−2)(α−1)²] / [(2(1−1/α)^α + α−1)(α²−1)(α²−4)],
    the FORMULAS.md form with (1−1/α²)^α(1+1/α)^{−α} = (1−1/α)^α cancelled.
    """
    a = float(shape)
    if a <= 2.0:
        return math.inf
    p = math.exp(a * math.log1p(-1.0 / a))
    num = (19.0 * a * a + 5.0) * p + (a - 2.0) * (a - 1.0) ** 2
    den = (2.0 * p + a - 1.0) * (a * a - 1.0) * (a * a - 4.0)
    return 2.0 * scale**2 * num / den


class PolyPlace(NoiseDistribution):
    """PolyPlace(scale, shape): s = ``scale`` > 0, α = ``shape`` > 1."""

    family = "polyplace"

    def __init__(self, scale: float, shape: float) -> None:
        self.scale = _validate.finite_positive(scale, "scale")
        self.shape = _validate.in_open_interval(shape, "shape", 1.0, math.inf)
        self._n1, self._body, self._tail = _constants(self.shape)

    def logpdf(self, x: Any) -> np.ndarray:
        u = np.abs(np.asarray(x, dtype=np.float64)) / self.scale
        a, s = self.shape, self.scale
        log_n = math.log(self._n1) - math.log(s)
        with np.errstate(invalid="ignore", divide="ignore"):
            body = log_n + math.log(a - 1.0) + (a - 1.0) * np.log1p(-np.minimum(u, 1.0))
            tail = (
                log_n + math.log(a + 1.0) + a * math.log1p(-1.0 / (a * a)) - (a + 1.0) * np.log1p(u)
            )
        return np.where(u < 1.0 / a, body, tail)

    def _tail_mass(self, u: np.ndarray) -> np.ndarray:
        """P(Z > s·u) for u ≥ 0 (exact closed form on each branch)."""
        a = self.shape
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            body = 0.5 - self._body * -np.expm1(a * np.log1p(-np.minimum(u, 1.0)))
            tail = self._tail * np.exp(-a * np.log1p(u))
        return np.where(u < 1.0 / a, body, tail)

    def cdf(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        t = self._tail_mass(np.abs(x) / self.scale)
        return np.where(x < 0, t, 1.0 - t)

    def ppf(self, q: Any) -> np.ndarray:
        q = np.asarray(q, dtype=np.float64)
        a = self.shape
        p = np.minimum(q, 1.0 - q)  # one-sided tail mass P(Z > s·u)
        t_branch = self._tail * math.exp(-a * math.log1p(1.0 / a))  # mass beyond s/α
        with np.errstate(invalid="ignore", divide="ignore"):
            u_tail = np.expm1(-(np.log(p) - math.log(self._tail)) / a)
            u_body = -np.expm1(np.log1p(-(0.5 - p) / self._body) / a)
        u = np.where(p <= t_branch, u_tail, u_body)
        out = self.scale * np.where(q < 0.5, -u, u)
        return np.where((q >= 0) & (q <= 1), out, np.nan)

    def var(self) -> float:
        return polyplace_variance(self.scale, self.shape)

    @property
    def kinks(self) -> tuple[float, ...]:
        b = self.scale / self.shape
        return (-b, 0.0, b)

    def parameters(self) -> dict[str, float]:
        return {"scale": self.scale, "shape": self.shape}

    def with_scale(self, scale: float) -> PolyPlace:
        return PolyPlace(scale, self.shape)
