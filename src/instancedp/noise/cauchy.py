"""Generalized Cauchy noise, density ∝ 1/(1 + |x/scale|^power).

Nissim, Raskhodnikova & Smith 2007 (§2.2, Lemma 2.7) use it for pure ε-DP with
smooth sensitivity; Hladík & Tětek, Claim 16, give the calibration used in
:mod:`instancedp.noise.calibrate`.  With c = power and t = |x|/scale:

* normaliser: ∫ dx/(1+|x|^c) = 2(π/c)/sin(π/c);
* the mass of [0, t] is ½·I_{t^c/(1+t^c)}(1/c, 1−1/c) (substitute
  u = x^c/(1+x^c) into the integral; I is the regularised incomplete beta);
* variance scale²·sin(π/c)/sin(3π/c) = scale²/(2cos(2π/c)+1) for c > 3.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import special

from .. import _validate
from ..random import as_generator
from .base import NoiseDistribution


class GeneralizedCauchy(NoiseDistribution):
    """Density c·sin(π/c)/(2π·scale) / (1 + |x/scale|^c), c = ``power`` > 1."""

    family = "cauchy"

    def __init__(self, power: float, scale: float = 1.0) -> None:
        self.power = _validate.in_open_interval(power, "power", 1.0, math.inf)
        self.scale = _validate.finite_positive(scale, "scale")
        c = self.power
        self._log_norm = math.log(c * math.sin(math.pi / c) / (2.0 * math.pi))

    def _log_tc(self, x: Any) -> np.ndarray:
        """c·log|x/scale| (−inf at 0)."""
        t = np.abs(np.asarray(x, dtype=np.float64)) / self.scale
        with np.errstate(divide="ignore"):
            return self.power * np.log(t)

    def logpdf(self, x: Any) -> np.ndarray:
        return self._log_norm - math.log(self.scale) - np.logaddexp(0.0, self._log_tc(x))

    def cdf(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        c = self.power
        # Tail mass P(Z > |x|) = ½·I_{1/(1+t^c)}(1−1/c, 1/c): accurate far out.
        y = np.exp(-np.logaddexp(0.0, self._log_tc(x)))
        tail = 0.5 * special.betainc(1.0 - 1.0 / c, 1.0 / c, y)
        return np.where(x < 0, tail, 1.0 - tail)

    def ppf(self, q: Any) -> np.ndarray:
        q = np.asarray(q, dtype=np.float64)
        c = self.power
        p = 2.0 * np.minimum(q, 1.0 - q)  # two-sided tail mass P(|Z| > t)
        with np.errstate(divide="ignore", invalid="ignore"):
            # Far tails: solve for y = 1/(1+t^c); near the centre for u = t^c/(1+t^c).
            y = special.betaincinv(1.0 - 1.0 / c, 1.0 / c, p)
            t_far = np.exp((np.log1p(-y) - np.log(y)) / c)
            u = special.betaincinv(1.0 / c, 1.0 - 1.0 / c, 1.0 - p)
            t_near = np.exp((np.log(u) - np.log1p(-u)) / c)
        t = np.where(p < 0.5, t_far, t_near)
        out = self.scale * np.where(q < 0.5, -t, t)
        return np.where((q >= 0) & (q <= 1), out, np.nan)

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray | float:
        gen = as_generator(rng)
        c = self.power
        # |Z/scale|^c = G1/G2 with G1 ~ Gamma(1/c), G2 ~ Gamma(1−1/c) (beta-prime law).
        g1 = gen.standard_gamma(1.0 / c, size)
        g2 = gen.standard_gamma(1.0 - 1.0 / c, size)
        with np.errstate(divide="ignore"):
            t = np.exp((np.log(g1) - np.log(g2)) / c)
        sign = np.where(gen.random(size) < 0.5, -1.0, 1.0)
        out = self.scale * sign * t
        return float(out) if size is None else out

    def var(self) -> float:
        c = self.power
        if c <= 3.0:
            return math.inf
        return self.scale**2 * math.sin(math.pi / c) / math.sin(3.0 * math.pi / c)

    def parameters(self) -> dict[str, float]:
        return {"power": self.power, "scale": self.scale}

    def with_scale(self, scale: float) -> GeneralizedCauchy:
        return GeneralizedCauchy(self.power, scale)
