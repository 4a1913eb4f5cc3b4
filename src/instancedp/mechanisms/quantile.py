"""The exponential mechanism for quantiles (Smith 2011, "Privacy-preserving
statistical estimation with optimal convergence rates", §3; the `ind_exp` /
`exp` baseline of Gillenwater, Joseph & Kulesza 2021, google-research
``dp_multiq``).

Data are clamped to the public bounds [lower, upper] and sorted,
x_0 = lower ≤ x_1 ≤ … ≤ x_n ≤ x_{n+1} = upper.  Every y in the interval
(x_i, x_{i+1}) has rank i (i points below it) and utility u(y) = −|i − qn|.
Changing one record (substitution neighbours) moves every rank by at most 1,
so the density

    p(y) ∝ exp(−ε |i(y) − qn| / 2)

is ε-DP (McSherry & Talwar 2007, Thm. 6).  It is sampled by picking interval i
with probability ∝ (x_{i+1} − x_i)·exp(−ε|i − qn|/2) in log space, then a
uniform point inside it.  The output density is piecewise constant, so
:meth:`ExponentialQuantile.output_distribution` is exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate
from ..noise.exact import sample_piece
from ..privacy import PureDP
from ..random import RandomSource, resolve
from .base import Mechanism, OutputDistribution, Release


def _points(data: Any, lower: float, upper: float) -> np.ndarray:
    """lower, sorted clamped data, upper."""
    x = np.sort(np.clip(_validate.data_array(data), lower, upper))
    return np.concatenate(([lower], x, [upper]))


def interval_log_weights(
    data: Any, q: float, lower: float, upper: float, epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """(points, log weights of the n+1 intervals between consecutive points).

    log w_i = log(x_{i+1} − x_i) − ε|i − qn|/2; empty intervals get −inf.
    """
    pts = _points(data, lower, upper)
    n = pts.size - 2
    lengths = np.diff(pts)
    with np.errstate(divide="ignore"):
        logw = np.log(lengths) - 0.5 * epsilon * np.abs(np.arange(n + 1) - q * n)
    return pts, logw


def exponential_quantile_sample(
    data: Any,
    q: float,
    lower: float,
    upper: float,
    epsilon: float,
    size: int,
    rng: Any = None,
) -> np.ndarray:
    """Vectorised simulation draws (benchmarks): ``size`` outputs on one dataset."""
    from ..random import as_generator

    gen = as_generator(rng)
    pts, logw = interval_log_weights(data, q, lower, upper, epsilon)
    w = np.exp(logw - logw.max())
    cum = np.cumsum(w)
    idx = np.minimum(np.searchsorted(cum, gen.random(size) * cum[-1], side="right"), w.size - 1)
    return pts[idx] + gen.random(size) * (pts[idx + 1] - pts[idx])


class ExponentialQuantile(Mechanism):
    """ε-DP q-quantile over public bounds by the exponential mechanism (Smith 2011).

    Neighbours: substitution (n is public).  Guarantee: ``PureDP(epsilon)``.
    """

    name = "exponential_quantile"
    neighbours = "substitution"

    def __init__(self, q: float, lower: float, upper: float, epsilon: float) -> None:
        try:
            qf = float(q)
        except (TypeError, ValueError):
            raise ValueError(f"q must be a number in [0, 1], got {q!r}") from None
        if not (0.0 <= qf <= 1.0):
            raise ValueError(f"q must be a number in [0, 1], got {q!r}")
        self.q = qf
        self.lower, self.upper = _validate.bounds(lower, upper)
        self.epsilon = _validate.epsilon(epsilon)

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def parameters(self) -> dict[str, Any]:
        return {
            "q": self.q,
            "lower": self.lower,
            "upper": self.upper,
            "epsilon": self.epsilon,
            "neighbours": self.neighbours,
        }

    def release(self, data: Any, rng: Any = None) -> Release:
        source: RandomSource = resolve(rng)
        pts = _points(data, self.lower, self.upper)
        n = pts.size - 2
        log_density = -0.5 * self.epsilon * np.abs(np.arange(n + 1) - self.q * n)
        # Piece ∝ exact length × density, then an exactly rounded uniform point: the
        # float lo + u·(hi − lo) would reveal the data-dependent endpoints through its
        # low-order bits (Mironov 2012), and float lengths overflow on huge bounds.
        _, value = sample_piece(log_density, pts, source)
        return self._record(value, source)

    def output_distribution(self, data: Any) -> OutputDistribution:
        """Exact law: density exp(−ε|i − qn|/2)/Z on interval i (piecewise constant)."""
        pts, logw = interval_log_weights(data, self.q, self.lower, self.upper, self.epsilon)
        n = pts.size - 2
        logdens = -0.5 * self.epsilon * np.abs(np.arange(n + 1) - self.q * n)
        finite = np.isfinite(logw)
        top = logw[finite].max()
        log_z = top + math.log(np.exp(logw[finite] - top).sum())
        logdens = logdens - log_z
        lengths = np.diff(pts)
        cum = np.concatenate(([0.0], np.cumsum(np.exp(logdens) * lengths)))
        cum = cum / cum[-1]

        def interval_of(y: np.ndarray) -> np.ndarray:
            # Interval i holds (x_i, x_{i+1}]; among equal points take the last, i.e. a
            # non-empty interval whenever one exists.
            i = np.searchsorted(pts, y, side="left") - 1
            return np.clip(i, 0, n)

        def logpdf(y: Any) -> np.ndarray:
            y = np.asarray(y, dtype=np.float64)
            i = interval_of(y)
            inside = (y > pts[0]) & (y < pts[-1]) | (y == pts[0]) | (y == pts[-1])
            return np.where(inside, logdens[i], -np.inf)

        def cdf(y: Any) -> np.ndarray:
            y = np.asarray(y, dtype=np.float64)
            i = interval_of(y)
            frac = np.where(
                lengths[i] > 0, (y - pts[i]) / np.where(lengths[i] > 0, lengths[i], 1.0), 0.0
            )
            inner = cum[i] + np.clip(frac, 0.0, 1.0) * (cum[i + 1] - cum[i])
            return np.where(y < pts[0], 0.0, np.where(y >= pts[-1], 1.0, inner))

        return OutputDistribution(
            pdf=lambda y: np.exp(logpdf(y)),
            cdf=cdf,
            kinks=tuple(float(p) for p in np.unique(pts)),
            logpdf=logpdf,
        )
