"""The PolyPlace distribution (Hladík & Tětek, "Smooth Sensitivity Revisited:
Towards Optimality", FORC 2025; Def. 6, Lemma 7, Lemma 13).

PolyPlace(s, α), s > 0, α > 1, with N = α / (2s(2((α−1)/α)^α + α − 1)):

* f(x) = N(α−1)(1 − |x|/s)^{α−1}            for |x|/s < 1/α   (polynomial body)
* f(x) = N(α+1)(1 − 1/α²)^α (1 + |x|/s)^{−α−1}  otherwise        (polynomial tail)

The branches meet continuously at |x| = s/α.  The mechanism
q(D) + PolyPlace(SS_γ(D)/γ, ε/γ) is ε-DP for 0 < γ < ε (Thm. 8); the variance
is finite for α > 2 (Lemma 13, formula as restored in docs/formulas.md) and the
law tends to Laplace(SS/ε) as γ → 0 (Lemma 15).

Numerics: every power is taken as exp(α·log1p(·)) so that α = ε/γ in the
thousands (γ → 0) stays exact to rounding.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from flint import arb, ctx

from .. import _validate
from .base import NoiseDistribution


def _coefficients(a: Any, pow_body: Any, pow_tail: Any) -> tuple[Any, Any, Any]:
    """(N₁, body coefficient N₁(α−1)/α, tail coefficient N₁(α+1)/α·(1−1/α²)^α) at s = 1,
    from pow_body = ((α−1)/α)^α and pow_tail = (1−1/α²)^α (Def. 6; floats or balls).
    The mass of [0, u] is body·(1 − (1−u)^α) for u < 1/α, P(Z > u) = tail·(1+u)^−α beyond."""
    n1 = a / (2 * (2 * pow_body + a - 1))
    body = n1 * (a - 1) / a
    tail = n1 * (a + 1) / a * pow_tail
    return n1, body, tail


def _constants(alpha: float) -> tuple[float, float, float]:
    """:func:`_coefficients` in floats (powers as exp(α·log1p(·)), exact to rounding)."""
    a = float(alpha)
    return _coefficients(
        a, math.exp(a * math.log1p(-1.0 / a)), math.exp(a * math.log1p(-1.0 / (a * a)))
    )


@lru_cache(maxsize=64)
def _ball_constants(alpha: float, prec: int) -> tuple[arb, arb, arb, arb]:
    """(α, 1/α, body, tail) as balls at ``prec`` bits (the exact sampler's constants)."""
    old = ctx.prec
    ctx.prec = prec
    try:
        a = arb(alpha)
        _, body, tail = _coefficients(a, ((a - 1) / a) ** a, (1 - 1 / (a * a)) ** a)
        return a, 1 / a, body, tail
    finally:
        ctx.prec = old


@lru_cache(maxsize=64)
def _guess_constants(alpha: float) -> tuple[float, float]:
    _, _, body, tail = _ball_constants(alpha, 64)
    return float(body.mid()), float(tail.mid())


def polyplace_variance(scale: float, shape: float) -> float:
    """Variance of PolyPlace(scale, shape) (Lemma 13; infinite for shape ≤ 2).

    σ² = 2s²[(19α²+5)(1−1/α)^α + (α−2)(α−1)²] / [(2(1−1/α)^α + α−1)(α²−1)(α²−4)],
    the docs/formulas.md form with (1−1/α²)^α(1+1/α)^{−α} = (1−1/α)^α cancelled.
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
    default_gamma_fraction = 0.35
    default_gamma_ceiling = 0.8
    exact_route = "cdf"

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

    # ---- smooth sensitivity: PolyPlace(1/γ, ε/γ) is ε-DP for 0 < γ < ε (Thm. 8)
    @classmethod
    def smooth_unit_scale(cls, epsilon, gamma, delta, shape):
        return 1.0 / gamma if gamma < epsilon else math.inf

    @classmethod
    def smooth_noise(cls, epsilon, gamma, delta, shape, scale):
        return cls(1.0 / gamma, epsilon / gamma)

    @classmethod
    def smooth_max_gamma(cls, epsilon, delta, shape, finite_std):
        return epsilon / 2.0 if finite_std else epsilon

    # ---- exact sampling: the closed-form CDF of Def. 6 in ball arithmetic
    def exact_params(self) -> tuple[float, ...]:
        return (float(self.shape),)

    @classmethod
    def exact_sf(cls, t, params):
        (alpha,) = params
        a, inv_a, body, tail = _ball_constants(alpha, ctx.prec)

        def body_sf(u):
            return 0.5 - body * (1 - (1 - u) ** a)

        def tail_sf(u):
            return tail * (1 + u) ** (-a)

        if t < inv_a:
            return body_sf(t)
        if t >= inv_a:
            return tail_sf(t)
        # The ball straddles the branch point 1/α < 1: both formulas are analytic on
        # it and each encloses sf on its side, so their union encloses sf.
        return body_sf(t).union(tail_sf(t))

    @classmethod
    def exact_ppf_guess(cls, params, p, c):
        (alpha,) = params
        body, tail = _guess_constants(alpha)
        if p <= tail * math.exp(-alpha * math.log1p(1.0 / alpha)):
            return math.expm1(-(math.log(p) - math.log(tail)) / alpha)
        # body: mass of [0, z] is body·(1 − (1 − z)^α) = |c|
        return -math.expm1(math.log1p(-abs(c) / body) / alpha)
