"""Private ratios a/b under add/remove neighbours (seed 004, "Private ratios").

Each user contributes to b only (a 0) or to both a and b (a 1); the data are
the users' 0/1 flags, a = number of ones, b = n.  Adding or removing a user
changes (a, b) by (0, ±1) or (±1, ±1).

* :func:`naive` — a + Lap(2/ε) and b + Lap(2/ε), divided (basic composition of
  two sensitivity-1 counts at ε/2 each): ε-DP.
* :func:`ksw` — Kulesza, Suresh & Wang 2024, Alg. 3: (a, b − a) has L1
  sensitivity 1 under add/remove, so â = a + Lap(1/ε), ẑ = (b − a) + Lap(1/ε),
  release â/(â + ẑ): ε-DP.
* :func:`bounded_ls` — seed 004 Theorem 2: spend ε1 = f·ε on discrete-Laplace
  counts â, b̂ (scale 2/ε1 each), turn them into intervals [a_l, a_u] ∋ a and
  [b_l, b_u] ∋ b that hold except with probability δ, bound
  LS(a, b) = max(b − a, a)/(b² − b) (b > 1) from above by
      g = max( min(a_u, b_l)/(b_l² − b_l),  max_{b ∈ [b_l, b_u]} (b − a_l)/(b² − b) ),
  the inner maximum at b_l, b_u or the integers around the stationary point
  b_x = a_l + √(a_l² − a_l), and release a/b + Lap(g/ε2), ε2 = ε − ε1
  (Theorem 1): (ε, δ)-DP.  If b_l ≤ 1 the bound is useless and the mechanism
  bails out to :func:`naive` with ε2.

Two corrections to the blog's code, both checked by the exact tests: (1) its
``bound_1``/``bound_2`` use a_lower and a_upper the wrong way round (its proof
has them right: a/(b² − b) is increasing in a, (b − a)/(b² − b) decreasing);
(2) its interval half-width 2 ln(2/δ)/ε1 assumes P(|Z| ≥ T) = e^{−T ε1/2}, but
for the discrete Laplace P(|Z| > T) = 2e^{−(T+1)/s}/(1 + e^{−1/s}); here T is
the smallest integer with P(|Z| > T) ≤ δ/2, so a union bound gives δ exactly.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _validate
from ..noise.discrete import DiscreteLaplace, sample_discrete_laplace
from ..privacy import ApproxDP, PureDP
from ..random import RandomSource, as_generator, resolve, simulation
from .base import Mechanism, Release, add_noise

METHODS: tuple[str, ...] = ("naive", "bounded_ls", "ksw")
#: Default share of ε spent on bounding LS in :func:`bounded_ls` (docs/results/ratio.md).
DEFAULT_BOUND_FRACTION = 0.1


def _laplace1() -> Any:
    from ..noise import Laplace

    return Laplace(1.0)


def local_sensitivity(a: Any, b: Any) -> np.ndarray:
    """LS of a/b under add/remove for b > 1: max(b − a, a)/(b² − b) (seed 004)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return np.maximum(b - a, a) / (b * b - b)


def interval_halfwidth(scale: float, delta: float) -> int:
    """Smallest integer T ≥ 0 with P(|Z| > T) ≤ δ/2 for Z ~ DLap(scale)."""
    dl = DiscreteLaplace(scale)
    r = math.exp(-1.0 / scale)
    t = max(0, math.ceil(scale * math.log(4.0 / (delta * (1 + r))) - 1))
    while dl.tail(t) > delta / 2:
        t += 1
    while t > 0 and dl.tail(t - 1) <= delta / 2:
        t -= 1
    return t


def sensitivity_bound(a_hat: Any, b_hat: Any, halfwidth: int) -> np.ndarray:
    """g(â, b̂): the upper bound on LS (``nan`` where b_l ≤ 1, the bail-out case).

    Vectorised over arrays of noisy counts.
    """
    a_hat = np.asarray(a_hat, dtype=np.float64)
    b_hat = np.asarray(b_hat, dtype=np.float64)
    a_u = a_hat + halfwidth
    a_l = np.maximum(0.0, a_hat - halfwidth)
    b_u = b_hat + halfwidth
    b_l = b_hat - halfwidth
    ok = b_l > 1
    b_l = np.where(ok, b_l, 2.0)
    b_u = np.maximum(b_u, b_l)
    # a ≤ b: max_{b ≥ b_l} min(a_u, b)/(b² − b) = min(a_u, b_l)/(b_l² − b_l)
    bound_1 = np.minimum(a_u, b_l) / (b_l * b_l - b_l)
    b_x = a_l + np.sqrt(np.maximum(a_l * a_l - a_l, 0.0))
    best = np.full(np.broadcast(a_hat, b_hat).shape, -np.inf)
    for cand in (b_l, b_u, np.floor(b_x), np.ceil(b_x)):
        inside = (cand >= b_l) & (cand <= b_u)
        c = np.where(inside, cand, b_l)
        val = (c - a_l) / (c * c - c)
        best = np.where(inside, np.maximum(best, val), best)
    g = np.maximum(bound_1, best)
    return np.where(ok, g, np.nan)


def _split(epsilon: float, fraction: float) -> tuple[float, float]:
    fraction = _validate.in_open_interval(fraction, "bound_fraction", 0.0, 1.0)
    return epsilon * fraction, epsilon * (1 - fraction)


def naive(a: int, b: int, epsilon: float, rng: Any = None) -> float:
    """(a + Lap(2/ε)) / (b + Lap(2/ε)): ε-DP."""
    eps = _validate.epsilon(epsilon)
    source = resolve(rng)
    lap = _laplace1()
    return add_noise(float(a), 2 / eps, lap, source) / add_noise(float(b), 2 / eps, lap, source)


def ksw(a: int, b: int, epsilon: float, rng: Any = None) -> float:
    """Kulesza–Suresh–Wang 2024 Alg. 3: â/(â + ẑ), â = a + Lap(1/ε), ẑ = b − a + Lap(1/ε)."""
    eps = _validate.epsilon(epsilon)
    source = resolve(rng)
    lap = _laplace1()
    ones = add_noise(float(a), 1 / eps, lap, source)
    zeros = add_noise(float(b - a), 1 / eps, lap, source)
    return ones / (ones + zeros)


def bounded_ls(
    a: int,
    b: int,
    epsilon: float,
    delta: float,
    bound_fraction: float = DEFAULT_BOUND_FRACTION,
    rng: Any = None,
) -> float:
    """Seed 004's privately bounded local sensitivity ratio (corrected): (ε, δ)-DP."""
    eps = _validate.epsilon(epsilon)
    dl = _validate.delta(delta, allow_zero=False)
    eps1, eps2 = _split(eps, bound_fraction)
    if int(b) < 1 or not 0 <= int(a) <= int(b):
        raise ValueError(f"counts must satisfy 0 <= a <= b and b >= 1, got a={a}, b={b}")
    source: RandomSource = resolve(rng)
    scale = 2 / Fraction(eps1)  # exact: the float 2/ε1 can round below it
    a_hat = int(a) + int(sample_discrete_laplace(scale, source))
    b_hat = int(b) + int(sample_discrete_laplace(scale, source))
    g = float(sensitivity_bound(a_hat, b_hat, interval_halfwidth(scale, dl)))
    if math.isnan(g):
        return naive(a, b, eps2, source)
    return add_noise(a / b, g / eps2, _laplace1(), source)


def simulate(
    method: str,
    a: int,
    b: int,
    epsilon: float,
    trials: int,
    rng: Any = None,
    delta: float = 1e-6,
    bound_fraction: float = DEFAULT_BOUND_FRACTION,
) -> np.ndarray:
    """Vectorised fast-path outputs of ``method`` on counts (a, b) (benchmarks only)."""
    gen = as_generator(rng)
    eps = _validate.epsilon(epsilon)
    if method == "naive":
        return (a + gen.laplace(0, 2 / eps, trials)) / (b + gen.laplace(0, 2 / eps, trials))
    if method == "ksw":
        ones = a + gen.laplace(0, 1 / eps, trials)
        return ones / (ones + (b - a) + gen.laplace(0, 1 / eps, trials))
    if method == "bounded_ls":
        eps1, eps2 = _split(eps, bound_fraction)
        scale = 2 / eps1
        src = simulation(gen)
        a_hat = a + sample_discrete_laplace(scale, src, trials)
        b_hat = b + sample_discrete_laplace(scale, src, trials)
        g = sensitivity_bound(a_hat, b_hat, interval_halfwidth(scale, delta))
        bail = np.isnan(g)
        out = a / b + gen.laplace(0, 1.0, trials) * np.where(bail, 0.0, g) / eps2
        k = int(bail.sum())
        if k:
            out[bail] = (a + gen.laplace(0, 2 / eps2, k)) / (b + gen.laplace(0, 2 / eps2, k))
        return out
    raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")


class PrivateRatio(Mechanism):
    """Release the share of ones among 0/1 flags, a/b, under add/remove neighbours.

    ``method``: ``"ksw"`` (default; pure ε-DP), ``"naive"`` (pure ε-DP) or
    ``"bounded_ls"`` ((ε, δ)-DP, needs ``delta``).  ``clip`` (default True)
    clamps the output to [0, 1] — post-processing, never worse.
    """

    neighbours = "add_remove"

    def __init__(
        self,
        epsilon: float,
        method: str = "ksw",
        delta: float | None = None,
        bound_fraction: float = DEFAULT_BOUND_FRACTION,
        clip: bool = True,
    ) -> None:
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
        self.method = method
        self.epsilon = _validate.epsilon(epsilon)
        if method == "bounded_ls":
            if delta is None:
                raise ValueError("method='bounded_ls' is (epsilon, delta)-DP: pass delta in (0, 1)")
            self.delta: float | None = _validate.delta(delta, allow_zero=False)
            _split(self.epsilon, bound_fraction)
        else:
            self.delta = None
        self.bound_fraction = float(bound_fraction)
        self.clip = bool(clip)

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"ratio_{self.method}"

    @property
    def guarantee(self) -> PureDP | ApproxDP:
        if self.method == "bounded_ls":
            return ApproxDP(self.epsilon, self.delta)
        return PureDP(self.epsilon)

    def parameters(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "method": self.method,
            "epsilon": self.epsilon,
            "neighbours": self.neighbours,
            "clip": self.clip,
        }
        if self.method == "bounded_ls":
            params.update(delta=self.delta, bound_fraction=self.bound_fraction)
        return params

    @staticmethod
    def counts(data: Any) -> tuple[int, int]:
        flags = _validate.data_array(data)
        if not np.isin(flags, (0.0, 1.0)).all():
            raise ValueError("data must be 0/1 flags (1 = counted in a, every row counts in b)")
        return int(flags.sum()), int(flags.size)

    def release(self, data: Any, rng: Any = None) -> Release:
        source = resolve(rng)
        a, b = self.counts(data)
        if self.method == "naive":
            value = naive(a, b, self.epsilon, source)
        elif self.method == "ksw":
            value = ksw(a, b, self.epsilon, source)
        else:
            value = bounded_ls(a, b, self.epsilon, self.delta, self.bound_fraction, source)
        if self.clip:
            value = float(np.clip(value, 0.0, 1.0)) if not math.isnan(value) else 0.5
        return self._record(value, source)
