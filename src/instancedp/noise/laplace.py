"""The Laplace distribution Lap(b): density exp(−|x|/b)/(2b).

Used with global sensitivity (Dwork–McSherry–Nissim–Smith 2006) and, with a
δ, with smooth sensitivity (Nissim–Raskhodnikova–Smith 2007, Lemma 2.5;
Hladík–Tětek, Claim 18; see :mod:`instancedp.noise.calibrate`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate
from ..random import as_generator
from .base import NoiseDistribution


class Laplace(NoiseDistribution):
    """Lap(scale): variance 2·scale²."""

    family = "laplace"

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = _validate.finite_positive(scale, "scale")

    def logpdf(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        return -np.abs(x) / self.scale - math.log(2.0 * self.scale)

    def cdf(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        half_tail = 0.5 * np.exp(-np.abs(x) / self.scale)
        return np.where(x < 0, half_tail, 1.0 - half_tail)

    def sf(self, x: Any) -> np.ndarray:
        return self.cdf(-np.asarray(x, dtype=np.float64))

    def ppf(self, q: Any) -> np.ndarray:
        q = np.asarray(q, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            lower = self.scale * np.log(2.0 * q)
            upper = -self.scale * np.log(2.0 * (1.0 - q))
        out = np.where(q < 0.5, lower, upper)
        return np.where((q >= 0) & (q <= 1), out, np.nan)

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray | float:
        out = as_generator(rng).laplace(0.0, self.scale, size)
        return float(out) if size is None else out

    def var(self) -> float:
        return 2.0 * self.scale**2

    def parameters(self) -> dict[str, float]:
        return {"scale": self.scale}

    def with_scale(self, scale: float) -> Laplace:
        return Laplace(scale)
