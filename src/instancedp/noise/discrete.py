"""Exact discrete Laplace noise from integer arithmetic.

The discrete Laplace distribution with scale ``t > 0`` has probability mass
P(Z = z) = tanh(1/(2t)) · e^{−|z|/t} on the integers (Canonne, Kamath &
Steinke 2020, "The Discrete Gaussian for Differential Privacy", Def. 26).
Adding it to an integer query of sensitivity Δ with t = Δ/ε is ε-DP, and —
unlike continuous Laplace in floating point (Mironov 2012) — it can be sampled
exactly: :func:`sample_discrete_laplace` is CKS 2020 Algorithm 2 built on
Algorithm 1 (Bernoulli(e^{−γ}) for rational γ), using only uniform integers
from a :class:`~instancedp.random.RandomSource`.  Simulation sources take a fast
vectorised path (difference of two geometric variables, same law).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..random import RandomSource, SimulationRandom, as_generator


def _as_fraction(value: float | Fraction | int, name: str) -> Fraction:
    if isinstance(value, Fraction):
        frac = value
    else:
        v = _validate.finite_positive(value, name)
        frac = Fraction(v)  # the exact binary value of the float
    if frac <= 0:
        raise ParameterError(f"{name} must be a finite number > 0, got {value!r}")
    return frac


def _bernoulli(p: Fraction, source: RandomSource) -> bool:
    """Bernoulli(p) for rational p in [0, 1]: a uniform integer below the denominator."""
    return source.integers(p.denominator) < p.numerator


def _bernoulli_exp_unit(gamma: Fraction, source: RandomSource) -> bool:
    """Bernoulli(e^{−γ}) for rational γ in [0, 1] (CKS 2020 Algorithm 1, first part)."""
    k = 1
    while _bernoulli(gamma / k, source):
        k += 1
    return k % 2 == 1


def bernoulli_exp(gamma: Fraction, source: RandomSource) -> bool:
    """Bernoulli(e^{−γ}) for rational γ ≥ 0 (CKS 2020 Algorithm 1)."""
    if gamma < 0:
        raise ParameterError(f"gamma must be >= 0, got {gamma}")
    whole = math.floor(gamma)
    for _ in range(whole):
        if not _bernoulli_exp_unit(Fraction(1), source):
            return False
    return _bernoulli_exp_unit(gamma - whole, source)


def _geometric_exp_minus_one(source: RandomSource) -> int:
    """Number of successes of Bernoulli(e^{−1}) before the first failure."""
    v = 0
    while _bernoulli_exp_unit(Fraction(1), source):
        v += 1
    return v


def _exact_one(scale: Fraction, source: RandomSource) -> int:
    """CKS 2020 Algorithm 2 for scale t/s (t = numerator, s = denominator)."""
    t, s = scale.numerator, scale.denominator
    while True:
        u = source.integers(t)
        if not bernoulli_exp(Fraction(u, t), source):
            continue
        v = _geometric_exp_minus_one(source)
        x = u + t * v  # geometric with success parameter e^{−1/t}, on the integers
        y = x // s  # geometric with parameter e^{−t/s} = e^{−1/scale}
        b = source.integers(2)
        if b == 1 and y == 0:
            continue  # keeps zero from being counted twice
        return (1 - 2 * b) * y


def sample_discrete_laplace(
    scale: float | Fraction, source: RandomSource, size: int | None = None
) -> int | np.ndarray:
    """Draws from the discrete Laplace distribution with the given scale.

    Secure sources use the exact integer sampler; seeded simulation sources use
    the equivalent fast path (difference of two i.i.d. geometric variables).
    """
    frac = _as_fraction(scale, "scale")
    if isinstance(source, SimulationRandom) or not source.secure:
        gen = as_generator(source)
        p = -math.expm1(-1.0 / float(frac))  # success probability 1 − e^{−1/t}
        shape = None if size is None else size
        g1 = gen.geometric(p, shape) - 1
        g2 = gen.geometric(p, shape) - 1
        out = np.asarray(g1 - g2, dtype=np.int64)
        return int(out) if size is None else out
    if size is None:
        return _exact_one(frac, source)
    return np.array([_exact_one(frac, source) for _ in range(int(size))], dtype=np.int64)


class DiscreteLaplace:
    """Discrete Laplace on the integers: P(Z = z) = tanh(1/(2t)) e^{−|z|/t}."""

    family = "discrete_laplace"

    def __init__(self, scale: float | Fraction) -> None:
        self._scale_exact = _as_fraction(scale, "scale")
        self.scale = float(self._scale_exact)

    def logpmf(self, z: Any) -> np.ndarray:
        z = np.asarray(z, dtype=np.float64)
        out = math.log(math.tanh(0.5 / self.scale)) - np.abs(z) / self.scale
        return np.where(z == np.round(z), out, -np.inf)

    def pmf(self, z: Any) -> np.ndarray:
        return np.exp(self.logpmf(z))

    def sf(self, k: Any) -> np.ndarray:
        """P(Z > k) for real k: for integer m = ⌊k⌋ + 1 ≥ 1 it is e^{−m/t}/(1 + e^{−1/t})."""
        k = np.floor(np.asarray(k, dtype=np.float64))
        r = math.exp(-1.0 / self.scale)
        upper = np.exp(-(k + 1) / self.scale) / (1 + r)  # k ≥ 0
        lower = 1.0 - np.exp(k / self.scale) / (1 + r)  # k < 0: 1 − P(Z ≤ k), P(Z ≤ k) = P(Z ≥ −k)
        return np.where(k >= 0, upper, lower)

    def cdf(self, k: Any) -> np.ndarray:
        """P(Z ≤ k)."""
        return 1.0 - self.sf(k)

    def tail(self, threshold: int) -> float:
        """P(|Z| > threshold) for an integer threshold ≥ 0: 2e^{−(T+1)/t}/(1 + e^{−1/t})."""
        return float(2 * self.sf(threshold))

    def var(self) -> float:
        r = math.exp(-1.0 / self.scale)
        return 2 * r / (1 - r) ** 2

    def std(self) -> float:
        return math.sqrt(self.var())

    def sample(self, size: int | None = None, rng: Any = None) -> int | np.ndarray:
        from ..random import resolve

        return sample_discrete_laplace(self._scale_exact, resolve(rng), size)

    def parameters(self) -> dict[str, float]:
        return {"scale": self.scale}

    def __repr__(self) -> str:
        return f"DiscreteLaplace(scale={self.scale:g})"
