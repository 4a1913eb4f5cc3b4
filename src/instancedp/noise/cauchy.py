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
from flint import arb
from scipy import special

from .. import _validate
from ..random import as_generator
from .base import NoiseDistribution


def log_standard_gamma(gen: np.random.Generator, shape: float, size: Any) -> np.ndarray:
    """log G, G ~ Gamma(shape, 1), without underflow for small shapes.

    For shape < 1, G = G′·U^{1/shape} with G′ ~ Gamma(shape + 1) and U uniform
    (Marsaglia–Tsang's boost), so log G = log G′ + log(U)/shape stays finite
    where G itself would round to 0 (P(G < 1e-308) ≈ 0.5 at shape 0.001).
    """
    if shape >= 1.0:
        return np.log(gen.standard_gamma(shape, size))
    u = 1.0 - gen.random(size)  # (0, 1]
    return np.log(gen.standard_gamma(shape + 1.0, size)) + np.log(u) / shape


def log_betainc(a: float, b: float, log_y: np.ndarray) -> np.ndarray:
    """log I_y(a, b), accurate also where I underflows (y < 1e-200).

    For tiny y, I_y(a, b) = y^a(1−y)^b / (a·B(a, b))·(1 + O(y)) (the
    hypergeometric series of the incomplete beta); the O(y) term is below
    double precision there.
    """
    log_y = np.asarray(log_y, dtype=np.float64)
    with np.errstate(divide="ignore"):
        direct = np.log(special.betainc(a, b, np.exp(log_y)))
    asym = a * log_y - math.log(a) - special.betaln(a, b)
    return np.where(log_y > -460.0, direct, asym)


def polish_tail_root(log_u, target, log_tail, log_density_u, steps: int = 3):
    """Newton steps on log u for log_tail(log u) = target (heavy-tailed laws).

    ``log_density_u(log u)`` is log(u·p(u)) = log(−d tail/d log u): the
    tail is smooth and almost linear in log u, so a few steps reach rounding.
    """
    for _ in range(steps):
        f = log_tail(log_u) - target
        slope = -np.exp(log_density_u(log_u) - log_tail(log_u))
        ok = np.isfinite(f) & np.isfinite(slope) & (slope < 0)
        log_u = np.where(ok, log_u - np.where(ok, f / np.where(ok, slope, 1.0), 0.0), log_u)
    return log_u


def polynomial_tail_max_gamma(
    epsilon: float, shape: float | None, finite_std: bool, var_min: float, free: float
) -> float:
    """Supremum of γ for a calibration ε − γ(k+1) > 0 at shape k (Cauchy power c, Student
    t's d): ε/(k+1); with k free, ``free``·ε (k → its infimum) or, for finite std,
    ε/(var_min+1); 0 for a fixed k whose variance is infinite (k ≤ var_min)."""
    if shape is None:
        return epsilon / (var_min + 1.0) if finite_std else free * epsilon
    if finite_std and shape <= var_min:
        return 0.0
    return epsilon / (shape + 1.0)


class GeneralizedCauchy(NoiseDistribution):
    """Density c·sin(π/c)/(2π·scale) / (1 + |x/scale|^c), c = ``power`` > 1."""

    family = "cauchy"
    shape_name = "power"
    shape_aliases = {"c": "power"}
    default_gamma_fraction = 0.2
    default_gamma_ceiling = 0.2
    exact_route = "cdf"

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

    def _log_tail2(self, log_t: np.ndarray) -> np.ndarray:
        """log P(|Z| > scale·t) = log I_{1/(1+t^c)}(1−1/c, 1/c), from log t."""
        c = self.power
        return log_betainc(1.0 - 1.0 / c, 1.0 / c, -np.logaddexp(0.0, c * log_t))

    def cdf(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(divide="ignore"):
            log_t = np.log(np.abs(x) / self.scale)
        tail = 0.5 * np.exp(self._log_tail2(log_t))
        # Near the centre (t < 1), P(|Z| ≤ t) = I_u(1/c, 1−1/c), u = t^c/(1+t^c), keeps
        # absolute precision; u is handled in logs (t^c underflows for large c).
        c = self.power
        log_u = c * log_t - np.logaddexp(0.0, c * log_t)
        centre = 0.5 * np.exp(log_betainc(1.0 / c, 1.0 - 1.0 / c, log_u))
        tail = np.where(log_t < 0, 0.5 - centre, tail)
        return np.where(x < 0, tail, 1.0 - tail)

    def ppf(self, q: Any) -> np.ndarray:
        q = np.asarray(q, dtype=np.float64)
        c = self.power
        a, b = 1.0 - 1.0 / c, 1.0 / c
        p = 2.0 * np.minimum(q, 1.0 - q)  # two-sided tail mass P(|Z| > t)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # Far tails: y = 1/(1+t^c) (leading term of I_y where betaincinv
            # underflows); near the centre u = t^c/(1+t^c) keeps precision.
            log_p = np.log(p)
            y = special.betaincinv(a, b, p)
            log_y = np.where(
                (y > 1e-200) & (y < 1), np.log(y), (log_p + math.log(a) + special.betaln(a, b)) / a
            )
            log_t_far = (np.log(-np.expm1(log_y)) - log_y) / c
            log_t_far = polish_tail_root(
                log_t_far,
                log_p,
                self._log_tail2,
                lambda lt: math.log(2.0 * self.scale) + lt + self.logpdf(self.scale * np.exp(lt)),
            )
            # Centre: I_u(1/c, 1−1/c) = 1 − p, with the leading term where u underflows.
            u = special.betaincinv(b, a, 1.0 - p)
            log_u = np.where(
                u > 1e-200, np.log(u), (np.log1p(-p) + math.log(b) + special.betaln(b, a)) / b
            )
            log_t_near = (log_u - np.log1p(-np.exp(log_u))) / c
        # Use whichever of u = t^c/(1+t^c) and y = 1 − u is the small one (t < 1: u).
        near = (u < 0.5) & (p > 0)
        with np.errstate(over="ignore"):
            t = np.exp(np.where(near, log_t_near, log_t_far))
        t = np.where(p <= 0, np.inf, t)
        out = self.scale * np.where(q < 0.5, -t, t)
        return np.where((q >= 0) & (q <= 1), out, np.nan)

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray | float:
        gen = as_generator(rng)
        c = self.power
        # |Z/scale|^c = G1/G2 with G1 ~ Gamma(1/c), G2 ~ Gamma(1−1/c) (beta-prime law),
        # drawn in log space: small shapes would underflow G to 0.
        log_g1 = log_standard_gamma(gen, 1.0 / c, size)
        log_g2 = log_standard_gamma(gen, 1.0 - 1.0 / c, size)
        with np.errstate(over="ignore"):
            t = np.exp((log_g1 - log_g2) / c)
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

    # ---- smooth sensitivity (NRS 2007 Lemma 2.7; Hladík–Tětek Claim 16), pure ε-DP:
    # loss ≤ (|λ_r| + |λ_s|)(c+1) ⇒ scale (c+1)/(ε − γ(c+1)), γ < ε/(c+1)
    @classmethod
    def validate_shape(cls, value):
        return _validate.in_open_interval(value, "power", 1.0, math.inf)

    @classmethod
    def smooth_unit_scale(cls, epsilon, gamma, delta, shape):
        k = shape
        rest = epsilon - gamma * (k + 1.0)
        return (k + 1.0) / rest if rest > 0 else math.inf

    @classmethod
    def smooth_log_std(cls, scale, shape):
        k = shape
        if k <= 3:
            return math.inf
        return math.log(scale) + 0.5 * math.log(math.sin(math.pi / k) / math.sin(3 * math.pi / k))

    @classmethod
    def smooth_shape_interval(cls, epsilon, gamma, delta, finite_std):
        return (3.0 if finite_std else 1.0), epsilon / gamma - 1.0

    @classmethod
    def smooth_max_gamma(cls, epsilon, delta, shape, finite_std):
        return polynomial_tail_max_gamma(epsilon, shape, finite_std, 3.0, 0.5)  # c → 1

    # ---- exact sampling: P(Z > t) = ½·I_{1/(1+t^c)}(1 − 1/c, 1/c)
    def exact_params(self) -> tuple[float, ...]:
        return (float(self.power),)

    @classmethod
    def exact_sf(cls, t, params):
        c = arb(params[0])
        inv_c = 1 / c
        x = 1 / (1 + t**c)
        return x.beta_lower(1 - inv_c, inv_c, regularized=True) * 0.5

    @classmethod
    def exact_ppf_guess(cls, params, p, c):
        (pw,) = params
        if abs(c) < 0.25:  # mass of [0, t] is ½·I_{t^c/(1+t^c)}(1/c, 1 − 1/c) = |c|
            x = float(special.betaincinv(1.0 / pw, 1.0 - 1.0 / pw, 2.0 * abs(c)))
            return (x / (1.0 - x)) ** (1.0 / pw) if x < 1.0 else math.inf
        # P(Z > t) = ½·I_{1/(1+t^c)}(1 − 1/c, 1/c) = p
        y = float(special.betaincinv(1.0 - 1.0 / pw, 1.0 / pw, 2.0 * p))
        return math.exp((math.log1p(-y) - math.log(y)) / pw) if y > 0.0 else math.inf
