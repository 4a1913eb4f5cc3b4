"""The Gaussian distribution N(0, σ²).

Used with global ℓ2 sensitivity (classic, analytic or Canard–Olivier
calibration, see ``instancedp.mechanisms.global_noise``).
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


class Gaussian(NoiseDistribution):
    """N(0, sigma²); ``scale`` is the standard deviation sigma."""

    family = "gaussian"

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
