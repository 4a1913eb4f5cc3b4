"""Student's t noise with ``df`` degrees of freedom.

Bun & Steinke 2019 ("Average-Case Averages", NeurIPS) show it gives pure
ε-DP with smooth sensitivity; Hladík & Tětek, Claim 17, give the calibration
used in :mod:`instancedp.noise.calibrate`.  Variance scale²·d/(d−2) for d > 2.
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
from .cauchy import log_betainc, log_standard_gamma, polish_tail_root, polynomial_tail_max_gamma


class StudentT(NoiseDistribution):
    """t distribution with ``df`` > 0 degrees of freedom, scaled by ``scale``."""

    family = "student_t"
    shape_name = "df"
    shape_aliases = {"d": "df"}
    default_gamma_fraction = 0.12
    default_gamma_ceiling = 0.12
    exact_route = "cdf"

    def __init__(self, df: float, scale: float = 1.0) -> None:
        self.df = _validate.finite_positive(df, "df")
        self.scale = _validate.finite_positive(scale, "scale")
        d = self.df
        self._log_norm = (
            special.gammaln((d + 1) / 2) - special.gammaln(d / 2) - 0.5 * math.log(d * math.pi)
        )

    def logpdf(self, x: Any) -> np.ndarray:
        d = self.df
        with np.errstate(divide="ignore"):
            log_t = np.log(np.abs(np.asarray(x, dtype=np.float64)) / self.scale)
        # log(1 + t²/d) without overflowing t² in the far tail
        log1p_t2 = np.logaddexp(0.0, 2.0 * log_t - math.log(d))
        return self._log_norm - math.log(self.scale) - (d + 1) / 2 * log1p_t2

    def _log_tail2(self, log_t: np.ndarray) -> np.ndarray:
        """log P(|T| > t) = log I_{d/(d+t²)}(d/2, ½), from log t (accurate far out)."""
        d = self.df
        return log_betainc(d / 2, 0.5, math.log(d) - np.logaddexp(math.log(d), 2.0 * log_t))

    def cdf(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(divide="ignore"):
            log_t = np.log(np.abs(x) / self.scale)
        tail = 0.5 * np.exp(self._log_tail2(log_t))
        # Near the centre, P(|T| ≤ t) = I_{t²/(d+t²)}(½, d/2) keeps absolute precision.
        d = self.df
        u = np.exp(2.0 * log_t - np.logaddexp(math.log(d), 2.0 * log_t))
        centre = 0.5 * special.betainc(0.5, d / 2, u)
        tail = np.where(u < 0.5, 0.5 - centre, tail)
        return np.where(x < 0, tail, 1.0 - tail)

    def ppf(self, q: Any) -> np.ndarray:
        q = np.asarray(q, dtype=np.float64)
        d = self.df
        a, b = d / 2, 0.5
        p = 2.0 * np.minimum(q, 1.0 - q)  # P(|T| > t)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # Far tails: y = d/(d+t²); near the centre u = t²/(d+t²) keeps precision.
            log_p = np.log(p)
            y = special.betaincinv(a, b, p)
            log_y = np.where(
                (y > 1e-200) & (y < 1), np.log(y), (log_p + math.log(a) + special.betaln(a, b)) / a
            )
            log_t_far = 0.5 * (math.log(d) + np.log(-np.expm1(log_y)) - log_y)
            log_t_far = polish_tail_root(
                log_t_far,
                log_p,
                self._log_tail2,
                lambda lt: math.log(2.0 * self.scale) + lt + self.logpdf(self.scale * np.exp(lt)),
            )
            u = special.betaincinv(b, a, 1.0 - p)
            log_t_near = 0.5 * (math.log(d) + np.log(u) - np.log1p(-u))
        with np.errstate(over="ignore"):
            t = np.exp(np.where(p < 0.5, log_t_far, log_t_near))
        t = np.where(p <= 0, np.inf, t)
        out = self.scale * np.where(q < 0.5, -t, t)
        return np.where((q >= 0) & (q <= 1), out, np.nan)

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray | float:
        gen = as_generator(rng)
        d = self.df
        if d >= 2.0:
            out = self.scale * gen.standard_t(d, size)
        else:
            # T = N/√(G/d), G ~ Gamma(d/2, 2); in log space because for small d
            # G underflows to 0 (numpy would return inf for ~3% of draws at d = 0.01).
            log_g = log_standard_gamma(gen, d / 2.0, size) + math.log(2.0)
            n = gen.standard_normal(size)
            with np.errstate(over="ignore", divide="ignore"):
                out = self.scale * n * np.exp(0.5 * (math.log(d) - log_g))
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

    # ---- smooth sensitivity (Bun–Steinke 2019; Hladík–Tětek Claim 17), pure ε-DP:
    # loss ≤ |λ_r|(d+1) + |λ_s|(d+1)/(2√d) ⇒ scale (d+1)/(2√d(ε − γ(d+1))), γ < ε/(d+1)
    @classmethod
    def smooth_unit_scale(cls, epsilon, gamma, delta, shape):
        k = shape
        rest = epsilon - gamma * (k + 1.0)
        return (k + 1.0) / (2.0 * math.sqrt(k) * rest) if rest > 0 else math.inf

    @classmethod
    def smooth_log_std(cls, scale, shape):
        k = shape
        return math.log(scale) + 0.5 * math.log(k / (k - 2.0)) if k > 2 else math.inf

    @classmethod
    def smooth_shape_interval(cls, epsilon, gamma, delta, finite_std):
        return (2.0 if finite_std else 0.0), epsilon / gamma - 1.0

    @classmethod
    def smooth_max_gamma(cls, epsilon, delta, shape, finite_std):
        return polynomial_tail_max_gamma(epsilon, shape, finite_std, 2.0, 1.0)  # d → 0

    # ---- exact sampling: P(T > t) = ½·I_{d/(d+t²)}(d/2, ½) (Abramowitz–Stegun 26.7.1)
    def exact_params(self) -> tuple[float, ...]:
        return (float(self.df),)

    @classmethod
    def exact_sf(cls, t, params):
        d = arb(params[0])
        x = d / (d + t * t)
        return x.beta_lower(d / 2, 0.5, regularized=True) * 0.5

    @classmethod
    def exact_ppf_guess(cls, params, p, c):
        (d,) = params
        a = abs(c)
        if a < 0.25:  # P(|T| ≤ t) = I_{t²/(d+t²)}(½, d/2) = 2|c|
            x = float(special.betaincinv(0.5, d / 2.0, 2.0 * a))
            return math.sqrt(d * x / (1.0 - x)) if x < 1.0 else math.inf
        return -float(special.stdtrit(d, p))
