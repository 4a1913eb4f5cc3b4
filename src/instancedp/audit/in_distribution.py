"""(ε, δ)-differential privacy in distribution (Canard & Olivier, Canard–Olivier, Def. 8).

An additive mechanism A(x) = f(x) + Z_x with output density g_x is (ε, δ)-DP in
distribution if there are sets E_x with g_x(y) ≤ e^ε g_x′(y) for all x′ ~ x and
y ∈ E_x, and P(A(x) ∉ E_x) ≤ δ.  For one x the largest admissible set is

    E_x = {y : log g_x(y) − log g_x′(y) ≤ ε for every neighbour x′},

so the smallest δ that works at x is P(A(x) ∉ E_x), which :func:`in_distribution`
computes: it locates the boundary of E_x (sign changes of the worst log-ratio on
a grid that contains every centre, refined by root finding), then adds up the
exact mass of A(x) on the complement with the noise's cdf/sf.  The mechanism is
(ε, δ)-DP in distribution iff the maximum over x of this number is ≤ δ; that
implies (ε, δ)-DP (Canard–Olivier Prop. 10), but not conversely in general.

Noise objects need ``logpdf``, ``cdf``, ``sf`` and ``ppf`` (the face of
``instancedp.noise`` and of frozen ``scipy.stats`` distributions).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq

from .. import _validate
from ..errors import ParameterError

# The search window reaches the 1e-17 quantiles of every noise: the mass left
# outside it is at most 2e-17 and is attributed by the sign at the window's edge.
_TAIL_Q = 1e-17
# A log-ratio within this of ε counts as ≤ ε: where it equals ε on a whole
# interval (Laplace at exactly ε = Δ/b) rounding would otherwise flip signs.
_LOG_TOL = 1e-12


@dataclass(frozen=True)
class InDistribution:
    """``delta`` = P(A(x) ∉ E_x) for the largest E_x; ``bad_set`` = E_x's complement
    as disjoint intervals (±inf for unbounded ends)."""

    delta: float
    bad_set: tuple[tuple[float, float], ...]


def _mass(center: float, noise: Any, a: float, b: float) -> float:
    """P(a < center + Z ≤ b), accurate in both tails."""
    lo, hi = a - center, b - center
    if hi <= 0:
        return float(noise.cdf(hi)) - (float(noise.cdf(lo)) if math.isfinite(lo) else 0.0)
    if lo >= 0:
        return float(noise.sf(lo)) - (float(noise.sf(hi)) if math.isfinite(hi) else 0.0)
    left = float(noise.cdf(lo)) if math.isfinite(lo) else 0.0
    right = float(noise.sf(hi)) if math.isfinite(hi) else 0.0
    return 1.0 - left - right


def in_distribution(
    center: float,
    noise: Any,
    neighbours: Iterable[tuple[float, Any]],
    epsilon: float,
    *,
    grid: int = 20001,
) -> InDistribution:
    """P(A(x) ∉ E_x) for A(x) = center + Z, Z ~ ``noise`` (Canard–Olivier Def. 8).

    ``neighbours``: pairs (f(x′), noise of x′) for every x′ ~ x.  ``grid``
    points (plus every centre) locate the boundary of E_x; each crossing is
    refined with Brent's method, so the answer is exact up to root-finding
    tolerance whenever the log-ratio changes sign at most once between grid
    points (true for Laplace and Gaussian noise, whose log-ratios are
    piecewise linear or quadratic).
    """
    epsilon = _validate.nonnegative(epsilon, "epsilon")
    center = float(center)
    nbrs = [(float(c), z) for c, z in neighbours]
    if not nbrs:
        raise ParameterError("neighbours must list at least one (center, noise) pair")
    if not isinstance(grid, int) or grid < 3:
        raise ParameterError(f"grid must be an integer >= 3, got {grid!r}")
    all_c = [center] + [c for c, _ in nbrs]
    all_z = [noise] + [z for _, z in nbrs]
    lo = min(c + float(z.ppf(_TAIL_Q)) for c, z in zip(all_c, all_z, strict=True))
    hi = max(c - float(z.ppf(_TAIL_Q)) for c, z in zip(all_c, all_z, strict=True))

    def excess(y: Any) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        own = np.asarray(noise.logpdf(y - center), dtype=np.float64)
        worst = np.full(y.shape, -np.inf)
        for c, z in nbrs:
            worst = np.maximum(worst, own - np.asarray(z.logpdf(y - c), dtype=np.float64))
        return worst - epsilon - _LOG_TOL * max(1.0, epsilon)

    ys = np.unique(np.concatenate([np.linspace(lo, hi, grid), all_c]))
    bad = excess(ys) > 0
    edges: list[float] = []
    for i in np.nonzero(bad[1:] != bad[:-1])[0]:
        a, b = float(ys[i]), float(ys[i + 1])
        fa, fb = float(excess(a)), float(excess(b))
        if fa == 0 or fb == 0 or (fa > 0) == (fb > 0):
            edges.append(a if fa == 0 else b)
        else:
            edges.append(brentq(lambda t: float(excess(t)), a, b, xtol=1e-13, rtol=1e-14))
    # Turn the sign pattern into intervals, open to ±inf at the window's edges.
    bounds = [-math.inf, *edges, math.inf]
    states = [bool(bad[0])]
    for _ in edges:
        states.append(not states[-1])
    intervals = tuple((bounds[j], bounds[j + 1]) for j, state in enumerate(states) if state)
    delta = sum(_mass(center, noise, a, b) for a, b in intervals)
    return InDistribution(delta=float(min(max(delta, 0.0), 1.0)), bad_set=intervals)
