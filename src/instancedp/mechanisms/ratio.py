"""Private ratios a/b under add/remove neighbours (LS-bound note, "Private ratios").

Each user contributes to b only (a 0) or to both a and b (a 1); the data are
the users' 0/1 flags, a = number of ones, b = n.  Adding or removing a user
changes (a, b) by (0, ±1) or (±1, ±1).

* :func:`naive` — a + Lap(2/ε) and b + Lap(2/ε), divided (basic composition of
  two sensitivity-1 counts at ε/2 each): ε-DP.
* :func:`ksw` — Kulesza, Suresh & Wang 2024, Alg. 3: (a, b − a) has L1
  sensitivity 1 under add/remove, so â = a + Lap(1/ε), ẑ = (b − a) + Lap(1/ε),
  release â/(â + ẑ): ε-DP.
* :func:`bounded_ls` — LS-bound note Theorem 2: spend ε1 = f·ε on discrete-Laplace
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
from ..errors import ParameterError
from ..noise.discrete import DiscreteLaplace, sample_discrete_laplace
from ..privacy import ApproxDP, PureDP
from ..random import RandomSource, as_generator, resolve, simulation
from .base import Mechanism, add_noise

METHODS: tuple[str, ...] = ("naive", "bounded_ls", "ksw")
#: Default share of ε spent on bounding LS in :func:`bounded_ls` (docs/results/ratio.md).
DEFAULT_BOUND_FRACTION = 0.1


def _laplace1() -> Any:
    from ..noise import Laplace

    return Laplace(1.0)


def local_sensitivity(a: Any, b: Any) -> np.ndarray:
    """LS of a/b under add/remove for b > 1: max(b − a, a)/(b² − b) (LS-bound note)."""
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


def _laplace_noise(center: Any, scale: Any, source: RandomSource, size: int | None) -> Any:
    """center + scale·Lap(1): one call for scalars and arrays, any source.

    The fast (simulation) path broadcasts; the exact path (secure or audit
    sources) draws each element through :func:`add_noise` with its own scale."""
    lap = _laplace1()
    if size is None:
        return add_noise(float(center), float(scale), lap, source)
    if not (source.secure or getattr(source, "exact", False)):
        return add_noise(np.asarray(center, dtype=np.float64), scale, lap, source, size)
    c = np.broadcast_to(np.asarray(center, dtype=np.float64), (size,))
    sc = np.broadcast_to(np.asarray(scale, dtype=np.float64), (size,))
    pairs = zip(c, sc, strict=True)
    return np.array([add_noise(float(ci), float(si), lap, source) for ci, si in pairs])


def _naive_parts(a: Any, b: Any, eps: float, source: RandomSource, size: int | None
                 ) -> tuple[Any, dict[str, Any]]:
    """(â/b̂, its parts): the two noisy counts are the ε-DP release; the ratio and a
    confidence interval are post-processing of them."""
    num = _laplace_noise(a, 2 / eps, source, size)
    den = _laplace_noise(b, 2 / eps, source, size)
    return num / den, {"noisy_a": num, "noisy_b": den, "scale": 2 / eps}


def _ksw_parts(a: int, b: int, eps: float, source: RandomSource, size: int | None
               ) -> tuple[Any, dict[str, Any]]:
    """(ô/(ô + ẑ), its parts): (a, b − a) plus Laplace noise is the ε-DP release."""
    ones = _laplace_noise(a, 1 / eps, source, size)
    zeros = _laplace_noise(b - a, 1 / eps, source, size)
    return ones / (ones + zeros), {"noisy_ones": ones, "noisy_zeros": zeros, "scale": 1 / eps}


def bound_scale(epsilon_bound: float) -> Fraction:
    """The discrete-Laplace scale 2/ε1 of the noisy counts, exact (the float 2/ε1
    can round below it)."""
    return 2 / Fraction(epsilon_bound)


def _bounded_ls_parts(
    a: int,
    b: int,
    eps: float,
    delta: float,
    bound_fraction: float,
    source: RandomSource,
    size: int | None,
) -> tuple[Any, dict[str, Any]]:
    """(value, its parts): the bound g with the value (LS-bound note Thm. 1 covers
    releasing both), and where the bound bails out the naive draw's two noisy counts
    at ε2 (nan elsewhere)."""
    eps1, eps2 = _split(eps, bound_fraction)
    if int(b) < 1 or not 0 <= int(a) <= int(b):
        raise ParameterError(f"counts must satisfy 0 <= a <= b and b >= 1, got a={a}, b={b}")
    scale = bound_scale(eps1)
    a_hat = int(a) + np.asarray(sample_discrete_laplace(scale, source, size))
    b_hat = int(b) + np.asarray(sample_discrete_laplace(scale, source, size))
    g = sensitivity_bound(a_hat, b_hat, interval_halfwidth(scale, delta))
    parts: dict[str, Any] = {"epsilon_release": eps2, "bail_scale": 2 / eps2}
    if size is None:
        g = float(g)
        if math.isnan(g):
            value, naive = _naive_parts(a, b, eps2, source, None)
            return value, {**parts, "bound": g, "noisy_a": naive["noisy_a"],
                           "noisy_b": naive["noisy_b"]}
        value = _laplace_noise(a / b, g / eps2, source, None)
        return value, {**parts, "bound": g, "noisy_a": math.nan, "noisy_b": math.nan}
    bail = np.isnan(g)
    # the bail-outs' entries are replaced below; their placeholder scale must be > 0 for
    # the exact path (0 made sample() on a secure source fail whenever a draw bailed out)
    out = np.asarray(_laplace_noise(a / b, np.where(bail, 1.0, g) / eps2, source, size))
    noisy_a = np.full(size, np.nan)
    noisy_b = np.full(size, np.nan)
    k = int(bail.sum())
    if k:
        out[bail], naive = _naive_parts(a, b, eps2, source, k)
        noisy_a[bail], noisy_b[bail] = naive["noisy_a"], naive["noisy_b"]
    return out, {**parts, "bound": g, "noisy_a": noisy_a, "noisy_b": noisy_b}


def draw(
    method: str,
    a: int,
    b: int,
    epsilon: float,
    source: RandomSource,
    size: int | None = None,
    delta: float | None = None,
    bound_fraction: float = DEFAULT_BOUND_FRACTION,
) -> Any:
    """One ratio (``size=None``) or ``size`` ratios by ``method`` from counts (a, b).

    The single body behind :func:`naive`, :func:`ksw`, :func:`bounded_ls`,
    :func:`simulate` and :class:`PrivateRatio` (release and sample)."""
    return draw_parts(method, a, b, epsilon, source, size, delta, bound_fraction)[0]


def draw_parts(
    method: str,
    a: int,
    b: int,
    epsilon: float,
    source: RandomSource,
    size: int | None = None,
    delta: float | None = None,
    bound_fraction: float = DEFAULT_BOUND_FRACTION,
) -> tuple[Any, dict[str, Any]]:
    """:func:`draw` and the private quantities the value is a function of (the noisy
    counts; bounded-ls: the bound g), which the method's guarantee already covers:
    a confidence interval computed from them is post-processing."""
    eps = _validate.epsilon(epsilon)
    if method == "naive":
        return _naive_parts(a, b, eps, source, size)
    if method == "ksw":
        return _ksw_parts(a, b, eps, source, size)
    if method == "bounded_ls":
        dl = _validate.delta(delta, allow_zero=False)
        return _bounded_ls_parts(a, b, eps, dl, bound_fraction, source, size)
    raise ParameterError(f"method must be one of {', '.join(METHODS)}; got {method!r}")


def naive(a: int, b: int, epsilon: float, rng: Any = None) -> float:
    """(a + Lap(2/ε)) / (b + Lap(2/ε)): ε-DP."""
    return draw("naive", a, b, epsilon, resolve(rng))


def ksw(a: int, b: int, epsilon: float, rng: Any = None) -> float:
    """Kulesza–Suresh–Wang 2024 Alg. 3: â/(â + ẑ), â = a + Lap(1/ε), ẑ = b − a + Lap(1/ε)."""
    return draw("ksw", a, b, epsilon, resolve(rng))


def bounded_ls(
    a: int,
    b: int,
    epsilon: float,
    delta: float,
    bound_fraction: float = DEFAULT_BOUND_FRACTION,
    rng: Any = None,
) -> float:
    """Seed 004's privately bounded local sensitivity ratio (corrected): (ε, δ)-DP."""
    return draw("bounded_ls", a, b, epsilon, resolve(rng), None, delta, bound_fraction)


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
    """``trials`` seeded outputs of ``method`` on counts (a, b) (benchmarks only):
    the release's own code (:func:`draw`) with a simulation source."""
    src = rng if isinstance(rng, RandomSource) else simulation(as_generator(rng))
    out = draw(method, a, b, epsilon, src, int(trials), delta, bound_fraction)
    return np.asarray(out, dtype=np.float64)


class PrivateRatio(Mechanism):
    """Release the share of ones among 0/1 flags, a/b, under add/remove neighbours.

    ``PrivateRatio(query, epsilon, *, delta=None, method="ksw", ...)`` with
    ``query`` a :class:`~instancedp.queries.counts.Ratio` (``None`` = ``Ratio()``).
    ``method``: ``"ksw"`` (default; pure ε-DP), ``"naive"`` (pure ε-DP) or
    ``"bounded_ls"`` ((ε, δ)-DP, needs ``delta``).  ``clip`` (default True)
    clamps the output to [0, 1] and maps NaN to ½ — post-processing, never
    worse.  The old form ``PrivateRatio(epsilon, method, delta)`` still works.
    """

    name = "private_ratio"

    def __init__(
        self,
        query: Any = None,
        epsilon: Any = None,
        *legacy: Any,
        delta: float | None = None,
        method: str = "ksw",
        bound_fraction: float = DEFAULT_BOUND_FRACTION,
        clip: bool = True,
    ) -> None:
        from ..queries.counts import Ratio

        if isinstance(query, (int, float)) and not isinstance(query, bool):
            # old form PrivateRatio(epsilon, method="ksw", delta=None, ...)
            old = (epsilon, *legacy)
            epsilon, query = query, None
            names = ("method", "delta", "bound_fraction", "clip")
            for name_, v in zip(names, old, strict=False):
                if v is not None:
                    if name_ == "method":
                        method = v
                    elif name_ == "delta":
                        delta = v
                    elif name_ == "bound_fraction":
                        bound_fraction = v
                    else:
                        clip = v
        elif legacy:
            raise ParameterError(
                "pass PrivateRatio(query, epsilon, delta=..., method=...)", parameter="method"
            )
        self.query = Ratio() if query is None else query
        if not callable(getattr(self.query, "counts", None)):
            raise ParameterError(
                "query must be a Ratio query (0/1 flags with counts(data) -> (a, b))",
                parameter="query",
            )
        if method not in METHODS:
            raise ParameterError(
                f"method must be one of {', '.join(METHODS)}; got {method!r}",
                parameter="method",
                allowed=", ".join(METHODS),
            )
        self.method = method
        self.epsilon = _validate.epsilon(epsilon)
        if method == "bounded_ls":
            if delta is None:
                raise ParameterError(
                    "method='bounded_ls' is (epsilon, delta)-DP: pass delta in (0, 1)",
                    parameter="delta",
                    allowed="(0, 1)",
                )
            self.delta: float | None = _validate.delta(delta, allow_zero=False)
            _split(self.epsilon, bound_fraction)
        else:
            self.delta = None
        self.bound_fraction = float(bound_fraction)
        self.clip = bool(clip)

    @property
    def guarantee(self) -> PureDP | ApproxDP:
        if self.method == "bounded_ls":
            return ApproxDP(self.epsilon, self.delta)
        return PureDP(self.epsilon)

    def mechanism_parameters(self) -> dict[str, Any]:
        params: dict[str, Any] = {"method": self.method, "clip": self.clip}
        if self.method == "bounded_ls":
            params["bound_fraction"] = self.bound_fraction
        return params

    def counts(self, data: Any) -> tuple[int, int]:
        """(a, b) of the flags (private)."""
        return self.query.counts(data)

    def _state(self, data: Any) -> tuple[int, int]:
        return self.counts(data)

    def _draw(self, state: tuple[int, int], source: RandomSource, size: int | None) -> Any:
        return self._draw_parts(state, source, size)[0]

    def _draw_parts(self, state: tuple[int, int], source: RandomSource, size: int | None
                    ) -> tuple[Any, dict[str, Any]]:
        """The draw and its parts (:func:`draw_parts`): the interval hook."""
        a, b = state
        value, parts = draw_parts(
            self.method, a, b, self.epsilon, source, size, self.delta, self.bound_fraction
        )
        if not self.clip:
            return value, parts
        v = np.asarray(value, dtype=np.float64)
        v = np.where(np.isnan(v), 0.5, np.clip(v, 0.0, 1.0))
        return (float(v) if size is None else v), parts
