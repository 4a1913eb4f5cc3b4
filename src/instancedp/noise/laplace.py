"""The Laplace distribution Lap(b): density exp(−|x|/b)/(2b).

Used with global sensitivity (Dwork–McSherry–Nissim–Smith 2006) and, with a
δ, with smooth sensitivity (Nissim–Raskhodnikova–Smith 2007, Lemma 2.5;
Hladík–Tětek, Claim 18; see :mod:`instancedp.noise.calibrate`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.optimize import brentq

from .. import _validate
from ..random import as_generator
from .base import NoiseDistribution


def laplace_shift_budget(epsilon: float, gamma: float, delta: float) -> float:
    """r = 1/scale of the unit Laplace noise with smooth sensitivity, (ε, δ)-DP.

    r = min(ε, (ε−γ)e^γ, ε + γ − (e^γ − 1)·ln(1/δ)), provably safe: with
    w ~ Lap(1), dilation λ = ln(SS′/SS) and shift s (|s| ≤ r·min(1, e^λ)) the
    privacy loss is L(w) = −|w| + e^{−λ}|w − s| + λ ≤ (e^{−λ} − 1)|w| + λ + e^{−λ}|s|.
    For λ ≥ 0 that is ≤ max(r, γ + re^{−γ}) ≤ ε everywhere; for λ = −μ < 0 it
    exceeds ε only when |w| > (ε − r + μ)/(e^μ − 1), an event of probability
    ≤ δ at μ = γ (the worst μ), and the hockey-stick divergence is at most that
    probability.  This replaces Claim 18's r = ε − γ ln(2/δ), which the exact
    hockey-stick check finds violated (δ_actual = 0.109 > δ = 0.1 at ε = 4,
    γ = 0.99·ε/ln(2/δ)); for small δ the safe r is also the larger one at
    small γ.  Non-positive r: γ not admissible.
    """
    g = gamma
    tail = epsilon + g - math.expm1(g) * math.log(1.0 / delta)
    return min(epsilon, (epsilon - g) * math.exp(g), tail)


def claim18_laplace_std(epsilon: float, gamma: float, delta: float) -> float:
    """Hladík–Tětek Claim 18's std √2/(ε − γ ln(2/δ)) (published; for comparison only).

    ``nan`` where Claim 18 does not apply (γ ≥ ε/ln(2/δ)).
    """
    rest = epsilon - gamma * math.log(2.0 / delta)
    return math.sqrt(2.0) / rest if rest > 0 else math.nan


def _laplace_max_gamma(epsilon: float, delta: float) -> float:
    """Root γ of ε + γ = (e^γ − 1)ln(1/δ), capped at ε (where r reaches 0)."""
    ell = math.log(1.0 / delta)

    def g(x: float) -> float:
        return epsilon + x - math.expm1(x) * ell

    hi = 1.0
    while g(hi) > 0:
        hi *= 2.0
    return min(epsilon, brentq(g, 0.0, hi, xtol=1e-15, rtol=1e-15))


class Laplace(NoiseDistribution):
    """Lap(scale): variance 2·scale²."""

    family = "laplace"
    requires_delta = True
    default_gamma_fraction = 0.5  # = NRS's β = ε/(2 ln(2/δ))
    default_gamma_ceiling = 0.7
    exact_route = "cdf"

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

    # ---- smooth sensitivity: NRS 2007 Lemma 2.5 with the safe r above, (ε, δ)-DP
    @classmethod
    def smooth_unit_scale(cls, epsilon, gamma, delta, shape):
        rest = laplace_shift_budget(epsilon, gamma, delta)
        return 1.0 / rest if rest > 0 else math.inf

    @classmethod
    def smooth_max_gamma(cls, epsilon, delta, shape, finite_std):
        return _laplace_max_gamma(epsilon, delta)

    @classmethod
    def smooth_guarantee(cls, epsilon, delta):
        from ..privacy import ApproxDP

        return ApproxDP(epsilon, delta)

    # ---- exact sampling: sf(t) = e^{−t}/2
    @classmethod
    def exact_sf(cls, t, params):
        return (-t).exp() * 0.5

    @classmethod
    def exact_ppf_guess(cls, params, p, c):
        a = abs(c)
        return -math.log1p(-2.0 * a) if a < 0.25 else -math.log(2.0 * p)
