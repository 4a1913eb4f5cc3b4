"""The Gaussian distribution N(0, σ²).

Used with global ℓ2 sensitivity (classic, analytic or Canard–Olivier
calibration, see ``instancedp.mechanisms.global_noise``).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from flint import arb, ctx
from scipy import special

from .. import _validate
from ..random import as_generator
from .base import NoiseDistribution

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@lru_cache(maxsize=16)
def _inv_sqrt2(prec: int) -> arb:
    """1/√2 as a ball at ``prec`` bits (cached per working precision)."""
    old = ctx.prec
    ctx.prec = prec
    try:
        return arb(0.5).sqrt()
    finally:
        ctx.prec = old


class Gaussian(NoiseDistribution):
    """N(0, sigma²); ``scale`` is the standard deviation sigma."""

    family = "gaussian"
    exact_route = "cdf"

    def __init__(self, sigma: float = 1.0) -> None:
        self.sigma = _validate.finite_positive(sigma, "sigma")
        self.scale = self.sigma

    def logpdf(self, x: Any) -> np.ndarray:
        z = np.asarray(x, dtype=np.float64) / self.sigma
        return -0.5 * z * z - _LOG_SQRT_2PI - math.log(self.sigma)

    def cdf(self, x: Any) -> np.ndarray:
        return special.ndtr(np.asarray(x, dtype=np.float64) / self.sigma)

    def ppf(self, q: Any) -> np.ndarray:
        return self.sigma * special.ndtri(np.asarray(q, dtype=np.float64))

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray | float:
        out = as_generator(rng).normal(0.0, self.sigma, size)
        return float(out) if size is None else out

    def var(self) -> float:
        return self.sigma**2

    @property
    def kinks(self) -> tuple[float, ...]:
        return ()

    def parameters(self) -> dict[str, float]:
        return {"sigma": self.sigma}

    def with_scale(self, scale: float) -> Gaussian:
        return Gaussian(scale)

    # ---- exact sampling: sf(t) = ½·erfc(t/√2)
    @classmethod
    def exact_sf(cls, t, params):
        return (t * _inv_sqrt2(ctx.prec)).erfc() * 0.5

    @classmethod
    def exact_ppf_guess(cls, params, p, c):
        a = abs(c)
        if a < 0.25:
            return math.sqrt(2.0) * float(special.erfinv(2.0 * a))
        return -float(special.ndtri(p))
