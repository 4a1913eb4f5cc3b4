"""Bun & Steinke's noise for smooth sensitivity under concentrated DP.

Bun & Steinke, "Average-Case Averages: Private Algorithms for Smooth
Sensitivity and Mean Estimation", NeurIPS 2019, §3 (also the PTR lecture
notes, seed 003, Prop. 15.1 for the first):

* Laplace log-normal  LLN(σ): Z = X·e^{σY}, X ~ Lap(1), Y ~ N(0, 1);
  Var Z = 2e^{2σ²}.
* Uniform log-normal  ULN(σ): Z = U·e^{σY}, U ~ Uniform[−1, 1];
  Var Z = e^{2σ²}/3.
* Arsinh-normal       Z = sinh(σY)/σ;  Var Z = (e^{2σ²} − 1)/(2σ²).

Each is multiplied by ``scale``.  Closed forms used here:

* ULN: p(z) = ½e^{σ²/2}·Φ̄(ln|z|/σ + σ) and
  P(|Z| > a) = Φ̄(w) − a·e^{σ²/2}·Φ̄(w + σ), w = ln a/σ
  (integrate the uniform density against the normal one).
* Arsinh-normal: Y = arsinh(σZ)/σ is standard normal, so everything is exact.
* LLN has no closed form: P(|Z| > a) = E[exp(−a e^{−σY})] =: L(a) (the Laplace
  transform of a log-normal) and p(z) = ½e^{σ²/2}·L(|z|e^{σ²}) (shift the
  normal by σ).  L is computed by the trapezoid rule on a grid centred at the
  integrand's mode y* = W(σ²a)/σ (W = Lambert W) with width 1/√(1+W): the
  integrand is analytic and decays fast on both sides, so the rule converges
  geometrically; it is checked against adaptive quadrature in the tests.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from .. import _validate
from ..random import as_generator
from .base import NoiseDistribution

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_GRID = np.linspace(-1.0, 1.0, 321)
_GRID_HALF_WIDTH = 14.0


def _w_of_exp(log_x: np.ndarray) -> np.ndarray:
    """Lambert W(e^L) for real L (no overflow): Newton on ℓ = log W, e^ℓ + ℓ = L.

    The map ℓ ↦ e^ℓ + ℓ is convex and increasing, so Newton started to the
    right of the root (ℓ₀ = L for L ≤ 1, ℓ₀ = log L otherwise) converges
    monotonically.
    """
    L = np.maximum(np.asarray(log_x, dtype=np.float64), -745.0)
    ell = np.where(L <= 1.0, L, np.log(np.maximum(L, 1.0)))
    for _ in range(60):
        step = (np.exp(ell) + ell - L) / (np.exp(ell) + 1.0)
        ell = ell - step
        if np.all(np.abs(step) <= 1e-15 * np.maximum(1.0, np.abs(ell))):
            break
    return np.exp(ell)


def lognormal_laplace_transform_log(a: Any, sigma: float) -> np.ndarray:
    """log E[exp(−a·e^{−σY})], Y ~ N(0, 1), for a ≥ 0 (vectorised)."""
    a = np.asarray(a, dtype=np.float64)
    shape = a.shape
    a = a.reshape(-1)
    with np.errstate(divide="ignore"):
        log_a = np.log(a)
    w = _w_of_exp(2.0 * math.log(sigma) + log_a)
    mode = w / sigma
    half = _GRID_HALF_WIDTH / np.sqrt(1.0 + w)
    y = mode[:, None] + half[:, None] * _GRID[None, :]
    with np.errstate(over="ignore"):
        log_f = -0.5 * y * y - _LOG_SQRT_2PI - np.exp(log_a[:, None] - sigma * y)
    dy = half * (_GRID[1] - _GRID[0])
    # Trapezoid rule in log space (end weights ½; the ends are negligible anyway).
    log_f[:, 0] -= math.log(2.0)
    log_f[:, -1] -= math.log(2.0)
    out = special.logsumexp(log_f, axis=1) + np.log(dy)
    return np.minimum(out, 0.0).reshape(shape)


def _ppf_from_log_tail(log_tail_abs, q: Any, scale: float) -> np.ndarray:
    """Invert a symmetric law given log P(|Z| > a): bisection on log a."""
    q = np.asarray(q, dtype=np.float64)
    p = np.minimum(q, 1.0 - q)
    with np.errstate(divide="ignore"):
        target = np.log(2.0 * p)  # log P(|Z| > a) at the answer
    flat = target.reshape(-1)
    lo = np.full(flat.shape, -800.0)
    hi = np.full(flat.shape, 800.0)
    for _ in range(110):
        mid = 0.5 * (lo + hi)
        too_small = log_tail_abs(np.exp(mid)) > flat  # tail still too heavy: a bigger
        lo = np.where(too_small, mid, lo)
        hi = np.where(too_small, hi, mid)
    a = np.exp(0.5 * (lo + hi)).reshape(target.shape)
    a = np.where(p >= 0.5, 0.0, a)
    a = np.where(p <= 0.0, np.inf, a)
    out = scale * np.where(q < 0.5, -a, a)
    return np.where((q >= 0) & (q <= 1), out, np.nan)


class _SymmetricFromTail(NoiseDistribution):
    """Shared cdf/ppf for symmetric laws given ``_log_tail_abs(a)`` at unit scale."""

    sigma: float

    def _log_tail_abs(self, a: np.ndarray) -> np.ndarray:  # log P(|Z/scale| > a)
        raise NotImplementedError

    def cdf(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        half_tail = 0.5 * np.exp(self._log_tail_abs(np.abs(x) / self.scale))
        return np.where(x < 0, half_tail, 1.0 - half_tail)

    def ppf(self, q: Any) -> np.ndarray:
        return _ppf_from_log_tail(self._log_tail_abs, q, self.scale)

    def parameters(self) -> dict[str, float]:
        return {"sigma": self.sigma, "scale": self.scale}


class LaplaceLogNormal(_SymmetricFromTail):
    """scale·X·e^{σY}, X ~ Lap(1), Y ~ N(0, 1) (Bun–Steinke 2019; seed 003 Prop. 15.1)."""

    family = "laplace_log_normal"

    def __init__(self, sigma: float, scale: float = 1.0) -> None:
        self.sigma = _validate.finite_positive(sigma, "sigma")
        self.scale = _validate.finite_positive(scale, "scale")

    def _log_tail_abs(self, a: np.ndarray) -> np.ndarray:
        return lognormal_laplace_transform_log(a, self.sigma)

    def logpdf(self, x: Any) -> np.ndarray:
        s2 = self.sigma**2
        z = np.abs(np.asarray(x, dtype=np.float64)) / self.scale
        with np.errstate(over="ignore"):
            shifted = z * math.exp(s2)
        return (
            -math.log(2.0)
            + 0.5 * s2
            + lognormal_laplace_transform_log(shifted, self.sigma)
            - math.log(self.scale)
        )

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray | float:
        gen = as_generator(rng)
        out = self.scale * gen.laplace(0.0, 1.0, size) * np.exp(self.sigma * gen.normal(size=size))
        return float(out) if size is None else out

    def var(self) -> float:
        return 2.0 * self.scale**2 * math.exp(2.0 * self.sigma**2)

    def with_scale(self, scale: float) -> LaplaceLogNormal:
        return LaplaceLogNormal(self.sigma, scale)


class UniformLogNormal(_SymmetricFromTail):
    """scale·U·e^{σY}, U ~ Uniform[−1, 1], Y ~ N(0, 1) (Bun–Steinke 2019)."""

    family = "uniform_log_normal"

    def __init__(self, sigma: float, scale: float = 1.0) -> None:
        self.sigma = _validate.finite_positive(sigma, "sigma")
        self.scale = _validate.finite_positive(scale, "scale")

    def _log_tail_abs(self, a: np.ndarray) -> np.ndarray:
        s = self.sigma
        a = np.asarray(a, dtype=np.float64)
        with np.errstate(divide="ignore"):
            w = np.log(a) / s
        # log[Φ̄(w) − e^{σw + σ²/2}Φ̄(w+σ)] = log Φ̄(w) + log1p(−ratio), ratio ∈ [0, 1).
        log_sf_w = special.log_ndtr(-w)
        ratio = np.exp(s * w + 0.5 * s * s + special.log_ndtr(-(w + s)) - log_sf_w)
        with np.errstate(divide="ignore"):
            out = log_sf_w + np.log1p(-np.minimum(ratio, 1.0))
        return np.where(a <= 0, 0.0, out)

    def logpdf(self, x: Any) -> np.ndarray:
        s = self.sigma
        z = np.abs(np.asarray(x, dtype=np.float64)) / self.scale
        with np.errstate(divide="ignore"):
            w = np.log(z) / s
        return -math.log(2.0) + 0.5 * s * s + special.log_ndtr(-(w + s)) - math.log(self.scale)

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray | float:
        gen = as_generator(rng)
        u = gen.uniform(-1.0, 1.0, size)
        out = self.scale * u * np.exp(self.sigma * gen.normal(size=size))
        return float(out) if size is None else out

    def var(self) -> float:
        return self.scale**2 * math.exp(2.0 * self.sigma**2) / 3.0

    @property
    def kinks(self) -> tuple[float, ...]:
        # The density is C^∞ (all derivatives vanish at 0), but 0 is where it
        # changes fastest: keep it as a split point for quadrature.
        return (0.0,)

    def with_scale(self, scale: float) -> UniformLogNormal:
        return UniformLogNormal(self.sigma, scale)


class ArsinhNormal(NoiseDistribution):
    """scale·sinh(σY)/σ, Y ~ N(0, 1) (Bun–Steinke 2019)."""

    family = "arsinh_normal"

    def __init__(self, sigma: float, scale: float = 1.0) -> None:
        self.sigma = _validate.finite_positive(sigma, "sigma")
        self.scale = _validate.finite_positive(scale, "scale")

    def _y(self, x: Any) -> np.ndarray:
        s = self.sigma
        return np.arcsinh(s * np.asarray(x, dtype=np.float64) / self.scale) / s

    def logpdf(self, x: Any) -> np.ndarray:
        s = self.sigma
        y = self._y(x)
        # dy/dz = 1/√(1 + σ²z²); log√(1+σ²z²) = |σ y| + log((1+e^{−2|σy|})/2), stable.
        log_jac = np.abs(s * y) + np.log1p(np.exp(-2.0 * np.abs(s * y))) - math.log(2.0)
        return -0.5 * y * y - _LOG_SQRT_2PI - log_jac - math.log(self.scale)

    def cdf(self, x: Any) -> np.ndarray:
        return special.ndtr(self._y(x))

    def ppf(self, q: Any) -> np.ndarray:
        s = self.sigma
        return self.scale * np.sinh(s * special.ndtri(np.asarray(q, dtype=np.float64))) / s

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray | float:
        s = self.sigma
        out = self.scale * np.sinh(s * as_generator(rng).normal(size=size)) / s
        return float(out) if size is None else out

    def var(self) -> float:
        s2 = self.sigma**2
        return self.scale**2 * math.expm1(2.0 * s2) / (2.0 * s2)

    @property
    def kinks(self) -> tuple[float, ...]:
        return ()

    def parameters(self) -> dict[str, float]:
        return {"sigma": self.sigma, "scale": self.scale}

    def with_scale(self, scale: float) -> ArsinhNormal:
        return ArsinhNormal(self.sigma, scale)
