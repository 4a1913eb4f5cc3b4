"""Bound-free quantiles: above-threshold over a geometric grid (Durfee, NeurIPS
2023, "Unbounded differentially private quantile and maximum estimation").

No bound on the data is needed, and none is made up (no ±1e308, no data
minimum or maximum).  The candidates are a public geometric grid

    c_i = origin + scale·(β^i − 1),   i = 0, 1, 2, …

(``origin`` = a public lower bound when the caller has one, else 0 on both
sides, below).  With g(c) = #{x ≤ c} − q·n = (1 − q)·#{x ≤ c} − q·#{x > c},
non-decreasing in c and crossing 0 at the q-quantile, the release is the
first candidate whose noisy score clears a noisy threshold (AboveThreshold,
Dwork & Roth 2014, Alg. 1; Lyu, Su & Li 2017, Alg. 1 and Thm. 2):

    ρ ~ Lap(Δ/ε₁),   output c_i for the first i with g(c_i) + ν_i ≥ ρ,
    ν_i ~ Lap(2Δ/ε₂),   ε₁ + ε₂ = ε_AT,   ε₁ : ε₂ = 1 : 2^{2/3}  (Lyu et al. §4.2).

g moves by at most Δ = max(q, 1 − q) when a row is added or removed and by
Δ = 1 under substitution, for every candidate at once, which is what
AboveThreshold's proof needs; n appears only inside g, whose Δ covers n's
change.  Only the index of the first candidate above the threshold is
released, so the release is ε_AT-DP.

Without a public lower bound (``origin=None``) a first, cheap step decides
the side: the sign of g(0) + Lap(Δ/ε_s) (ε_s = ``sign_fraction``·ε).  If it
says the quantile lies above 0, the scan runs upward from 0 on the rows; if
below, it runs on the negated rows for the (1 − q)-quantile and the result is
negated.  A wrong side only happens when g(0) is near 0, i.e. when the
quantile is near 0, where the scan on the other side also stops near 0.
Sequential composition: ε = ε_s + ε_AT.

The grid ends where its candidates leave the floating-point range; a scan
that reaches the end releases the last finite candidate (a public rule).  The
comparisons g + ν ≥ ρ are made on exactly rounded Laplace draws
(``noise.exact``); only the index they select is released.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..noise.laplace import Laplace
from ..privacy import PureDP
from ..random import RandomSource, resolve
from .base import Mechanism, Release
from .quantile import score_sensitivity, sorted_rows

_BATCH = 4096
_AT_SPLIT = 1.0 / (1.0 + 2.0 ** (2.0 / 3.0))  # ε₁ / ε_AT (Lyu, Su & Li 2017, §4.2)


def geometric_candidates(start: int, count: int, beta: float, scale: float) -> np.ndarray:
    """scale·(β^i − 1) for i = start … start + count − 1 (inf past the float range)."""
    i = np.arange(start, start + count, dtype=np.float64)
    with np.errstate(over="ignore"):
        return scale * np.expm1(i * math.log(beta))


def _laplace(scale: float, size: int, source: RandomSource) -> np.ndarray:
    if source.secure:
        from ..noise.exact import add_noise

        return np.asarray(add_noise(0.0, scale, Laplace(1.0), size=size, rng=source))
    return source.generator.laplace(0.0, scale, size)


def above_threshold_scan(
    z: np.ndarray,
    q: float,
    eps_threshold: float,
    eps_queries: float,
    delta: float,
    beta: float,
    scale: float,
    source: RandomSource,
) -> float:
    """The first candidate scale·(β^i − 1) with g + ν_i ≥ ρ over sorted rows ``z``."""
    n = z.size
    rho = float(_laplace(delta / eps_threshold, 1, source)[0])
    start = 0
    last = 0.0
    while True:
        c = geometric_candidates(start, _BATCH, beta, scale)
        finite = np.isfinite(c)
        c = c[finite]
        if c.size:
            g = np.searchsorted(z, c, side="right") - q * n
            nu = _laplace(2.0 * delta / eps_queries, c.size, source)
            hit = np.flatnonzero(g + nu >= rho)
            if hit.size:
                return float(c[hit[0]])
            last = float(c[-1])
        if not finite.all():
            return last  # the grid's public end
        start += _BATCH


class UnboundedQuantile(Mechanism):
    """ε-DP q-quantile without bounds (Durfee 2023; module docstring).

    ``UnboundedQuantile(query, epsilon, *, origin=None, beta=1.001, scale=1.0,
    sign_fraction=0.1)``; ``query`` is a quantile query (only its q and its
    relation are read: no bounds) or the number q, with ``neighbours=`` then
    naming the relation (default add/remove).  ``origin``: a public lower
    bound, if the caller has one (the scan starts there and no sign step is
    needed).  Guarantee: ``PureDP(epsilon)``.
    """

    name = "unbounded_quantile"

    def __init__(
        self,
        query: Any,
        epsilon: float,
        *,
        neighbours: str | None = None,
        origin: float | None = None,
        beta: float = 1.001,
        scale: float = 1.0,
        sign_fraction: float = 0.1,
    ) -> None:
        if hasattr(query, "q"):
            self.q = float(query.q)
            relation = getattr(query, "neighbours", "substitution")
            if neighbours is not None and neighbours != relation:
                raise ParameterError(
                    f"neighbours={neighbours!r} contradicts the query's relation {relation!r}",
                    parameter="neighbours",
                )
            self.neighbours = relation
        else:
            self.q = _validate.in_open_interval(query, "q", 0.0, 1.0)
            self.neighbours = neighbours if neighbours is not None else "add_remove"
        self.delta = score_sensitivity(self.q, self.neighbours)
        self.epsilon = _validate.epsilon(epsilon)
        try:
            b = float(beta)
        except (TypeError, ValueError):
            b = math.nan
        if not (math.isfinite(b) and b > 1.0):
            raise ParameterError(
                f"beta must be a number > 1, got {beta!r}", parameter="beta", allowed="> 1"
            )
        self.beta = b
        try:
            self.scale = _validate.finite_positive(scale, "scale")
        except ValueError as err:
            raise ParameterError(str(err), parameter="scale", allowed="> 0") from None
        self.origin = None
        if origin is not None:
            o = float(origin)
            if not math.isfinite(o):
                raise ParameterError("origin must be finite", parameter="origin")
            self.origin = o
        self.sign_fraction = 0.0
        if self.origin is None:
            self.sign_fraction = _validate.in_open_interval(sign_fraction, "sign_fraction", 0, 1)

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def parameters(self) -> dict[str, Any]:
        grid: dict[str, Any] = {"kind": "geometric", "beta": self.beta, "scale": self.scale}
        if self.origin is None:
            grid["origin"] = 0.0
            grid["sides"] = "both"
        else:
            grid["origin"] = self.origin
            grid["sides"] = "upper"
        return {
            "q": self.q,
            "epsilon": self.epsilon,
            "neighbours": self.neighbours,
            "bounds": None,
            "grid": grid,
            "sign_fraction": self.sign_fraction,
        }

    # ε split: sign step, then AboveThreshold's threshold and queries
    def _budgets(self) -> tuple[float, float, float]:
        eps_sign = self.sign_fraction * self.epsilon
        eps_at = self.epsilon - eps_sign
        return eps_sign, _AT_SPLIT * eps_at, (1.0 - _AT_SPLIT) * eps_at

    def _rows(self, data: Any) -> np.ndarray:
        return sorted_rows(data, -math.inf, math.inf)

    def release(self, data: Any, rng: Any = None) -> Release:
        source: RandomSource = resolve(rng)
        return self._record(self._draw(self._rows(data), source), source)

    def _draw(self, x: np.ndarray, source: RandomSource) -> float:
        eps_sign, eps_t, eps_q = self._budgets()
        args = (eps_t, eps_q, self.delta, self.beta, self.scale, source)
        if self.origin is not None:
            return self.origin + above_threshold_scan(x - self.origin, self.q, *args)
        g0 = np.searchsorted(x, 0.0, side="right") - self.q * x.size
        below = g0 + float(_laplace(self.delta / eps_sign, 1, source)[0]) >= 0.0
        if below:  # the quantile is ≤ 0: scan the negated rows for 1 − q
            return -above_threshold_scan(np.sort(-x), 1.0 - self.q, *args)
        return above_threshold_scan(x, self.q, *args)

    def sample(self, data: Any, size: int, rng: Any = None) -> np.ndarray:
        """``size`` independent releases on one dataset (the release path, repeated)."""
        source = resolve(rng)
        x = self._rows(data)
        return np.array([self._draw(x, source) for _ in range(int(size))])

    def output_probabilities(self, data: Any, count: int = 64) -> dict[Any, float]:
        """Exact law (numerical quadrature over the threshold noise), for tests.

        Theorem (AboveThreshold's law): given ρ the ν_i are independent, so
        P(c_i | ρ) = Π_{j<i} F(ρ − g_j)·(1 − F(ρ − g_i)) with F the Lap(2Δ/ε₂)
        cdf; integrating against ρ's Lap(Δ/ε₁) density gives P(c_i).  The
        sign step mixes the two scans with P(below) = 1 − F_s(−g(0)).  The
        first ``count`` candidates are listed one by one; the rest of the
        mass is the outcome ``"tail"`` (a coarsening, which can only hide
        loss, never add it).  ``count`` is public, the same for every dataset.
        """
        x = self._rows(data)
        key = (tuple(x.tolist()), count)
        cache = self.__dict__.setdefault("_law_cache", {})
        if key not in cache:
            cache[key] = self._law(x, count)
        return cache[key]

    def _law(self, x: np.ndarray, tail: int) -> dict[Any, float]:
        eps_sign, eps_t, eps_q = self._budgets()
        if self.origin is not None:
            law = self._scan_law(x - self.origin, self.q, eps_t, eps_q, tail)
            return {(k if k == "tail" else self.origin + k): v for k, v in law.items()}
        g0 = np.searchsorted(x, 0.0, side="right") - self.q * x.size
        b = self.delta / eps_sign
        p_below = 1.0 - float(Laplace(b).cdf(-g0))
        out: dict[Any, float] = {}
        for key, v in self._scan_law(x, self.q, eps_t, eps_q, tail).items():
            out[key] = out.get(key, 0.0) + (1.0 - p_below) * v
        for key, v in self._scan_law(np.sort(-x), 1.0 - self.q, eps_t, eps_q, tail).items():
            k = key if key == "tail" else -key + 0.0
            k = ("tail", "below") if key == "tail" else k
            out[k] = out.get(k, 0.0) + p_below * v
        return out

    def _scan_law(self, z, q, eps_t, eps_q, tail) -> dict[Any, float]:
        n = z.size
        b_t, b_q = self.delta / eps_t, 2.0 * self.delta / eps_q
        c = geometric_candidates(0, tail, self.beta, self.scale)
        g = np.searchsorted(z, c, side="right") - q * n
        span = 40.0 * max(b_t, b_q)
        # g lies in [−qn, (1 − q)n]: the same quadrature nodes for every table of size n
        r = np.linspace(-q * n - span, (1 - q) * n + span, 40_001)
        w = np.exp(-np.abs(r) / b_t) / (2 * b_t)
        F = Laplace(b_q).cdf
        survive = np.ones_like(r)
        law: dict[Any, float] = {}
        for ci, gi in zip(c, g, strict=True):
            below = F(r - gi)  # P(g_i + ν_i < ρ)
            law[float(ci)] = float(np.trapezoid(w * survive * (1.0 - below), r))
            survive = survive * below
        law["tail"] = max(0.0, 1.0 - sum(law.values()))
        return law
