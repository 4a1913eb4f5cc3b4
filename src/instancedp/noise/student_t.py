"""Student's t noise with ``df`` degrees of freedom.

Bun & Steinke 2019 ("Average-Case Averages", NeurIPS) show it gives pure
ε-DP with smooth sensitivity; Hladík & Tětek, Claim 17, give the calibration
used in :mod:`instancedp.noise.calibrate`.  Variance scale²·d/(d−2) for d > 2.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from .. import _validate
from ..random import as_generator
from .base import NoiseDistribution


class StudentT(NoiseDistribution):
    """t distribution with ``df`` > 0 degrees of freedom, scaled by ``scale``."""

    family = "student_t"

    def __init__(self, df: float, scale: float = 1.0) -> None:
        self.df = _validate.finite_positive(df, "df")
        self.scale = _validate.finite_positive(scale, "scale")
        d = self.df
        self._log_norm = (
            special.gammaln((d + 1) / 2) - special.gammaln(d / 2) - 0.5 * math.log(d * math.pi)
        )

    def logpdf(self, x: Any) -> np.ndarray:
        t = np.asarray(x, dtype=np.float64) / self.scale
        d = self.df
        return self._log_norm - math.log(self.scale) - (d + 1) / 2 * np.log1p(t * t / d)

    def cdf(self, x: Any) -> np.ndarray:
        t = np.asarray(x, dtype=np.float64) / self.scale
        d = self.df
        # P(T > |t|) = ½·I_{d/(d+t²)}(d/2, ½), accurate in the far tail.
        with np.errstate(over="ignore"):
            tail = 0.5 * special.betainc(d / 2, 0.5, d / (d + t * t))
        return np.where(t < 0, tail, 1.0 - tail)

    def ppf(self, q: Any) -> np.ndarray:
        q = np.asarray(q, dtype=np.float64)
        return self.scale * special.stdtrit(self.df, q)

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray | float:
        out = self.scale * as_generator(rng).standard_t(self.df, size)
        return float(out) if size is None else out

    def var(self) -> float:
        d = self.df
        return self.scale**2 * d / (d - 2) if d > 2 else math.inf

    @property
    def kinks(self) -> tuple[float, ...]:
        return ()

    def parameters(self) -> dict[str, float]:
        return {"df": self.df, "scale": self.scale}

    def with_scale(self, scale: float) -> StudentT:
        return StudentT(self.df, scale)
