"""The inverse-sensitivity mechanism (Asi & Duchi, NeurIPS 2020, "Instance-optimality
in differential privacy via approximate inverse sensitivity mechanisms").

For a statistic f and an output t, the path length len(x; t) is the least
number of neighbour steps from x to a dataset x′ with f(x′) = t (∞ if none).
It moves by at most one between neighbours, so releasing t with density
(mass, on a grid) proportional to exp(−ε·len(x; t)/2) over a public output
range is ε-DP (the exponential mechanism with utility −len, McSherry &
Talwar 2007, Thm. 6; Asi & Duchi 2020, §3).  There is no 1/γ factor as in
smooth sensitivity: the error is of order LS(x)·log(range)/ε.

Three path lengths are provided, all 1-Lipschitz in x under the query's
relation:

* exact, for quantiles (:func:`quantile_path_length`).  With L, E, G the
  rows below, equal to and above t and m(n) = max(1, ⌈q·n⌉) the index of the
  statistic, f(x′) = t iff L′ ≤ m(n′) − 1 and L′ + E′ ≥ m(n′).  Under
  substitution len = max(0, m − (L + E), L − m + 1).  Under add/remove a step
  adds or removes one row; when t is too high (L + E < m) the useful steps
  are "add a row at t" and "remove a row above t", when t is too low (L ≥ m)
  "add a row at t" and "remove a row below t" (every other step is dominated
  by one of these), and len is the least number of them that satisfies both
  conditions (checked against breadth-first search over neighbours in the
  tests).
* approximate, for any query exposing A^(k) (``local_sensitivity(data,
  distance=k)``): with S_k = Σ_{j<k} A^(j)(x),
  len̂_ρ(x; t) = min{k ≥ 0 : |t − f(x)| ≤ ρ + S_k}.  It is 1-Lipschitz
  (Asi & Duchi 2020, §4): for a neighbour x′, |f(x) − f(x′)| ≤ A^(0)(x′) and
  A^(j)(x) ≤ A^(j+1)(x′), so |t − f(x)| ≤ ρ + S_k(x) implies
  |t − f(x′)| ≤ ρ + S_{k+1}(x′).  ρ > 0 is the smoothed variant for
  continuous outputs (shell 0 is then the ball of radius ρ, not one point).
  Shells stop at a public ``max_shells`` K: min(len̂, K + 1) is still
  1-Lipschitz.
* either on a public grid lower + j·resolution (the column's declared type or
  decimal scale, a user-given resolution): the counting measure on the grid
  replaces Lebesgue measure.

Sampling is exact in law: the density is constant on finitely many segments
(shells ∩ [lower, upper], or the data's intervals for quantiles), so a
segment is drawn with probability exactly ∝ its weight
(``random.sample_index_from_log_weights``) and a point inside it uniformly
(``noise.exact.uniform``; ``RandomSource.integers`` on a grid).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..privacy import PureDP
from ..queries.order import quantile_index
from ..random import RandomSource, resolve, sample_index_from_log_weights
from .base import Mechanism, OutputDistribution, Release
from .quantile import grid_segments, piecewise_constant_law, score_sensitivity, sorted_rows

_MAX_SHELLS = 100_000


# --------------------------------------------------------------------------- path lengths


def _m(q: float, n: int) -> int:
    return quantile_index(q, n) if n > 0 else 1


def quantile_path_length(below: int, equal: int, above: int, q: float, neighbours: str) -> int:
    """Exact len(x; t) for the q-quantile (index max(1, ⌈q·n⌉)) from the counts of
    rows below, equal to and above t (module docstring)."""
    score_sensitivity(q, neighbours)  # validates the relation
    L, E, G = int(below), int(equal), int(above)
    n = L + E + G

    def ok(l_: int, e_: int, n_: int) -> bool:
        if n_ < 1:
            return False
        m = _m(q, n_)
        return l_ <= m - 1 and l_ + e_ >= m

    if ok(L, E, n):
        return 0
    if neighbours == "substitution":
        m = _m(q, n)
        return max(0, m - (L + E), L - m + 1)
    too_high = L + E < _m(q, n)
    d = 1
    while True:
        for r in range(0, d + 1):
            a = d - r
            if too_high:  # a rows added at t, r rows removed above t
                if r <= G and ok(L, E + a, n + a - r):
                    return d
            elif r <= L and ok(L - r, E + a, n + a - r):  # r removed below t
                return d
        d += 1


def quantile_interval_lengths(x: np.ndarray, q: float, neighbours: str) -> np.ndarray:
    """len on each open interval between consecutive sorted rows (n + 1 of them)."""
    n = x.size
    cache: dict[int, int] = {}
    out = np.empty(n + 1, dtype=np.int64)
    for i in range(n + 1):
        if i not in cache:
            cache[i] = quantile_path_length(i, 0, n - i, q, neighbours)
        out[i] = cache[i]
    return out


def shell_radii(
    query: Any, data: Any, rho: float, reach: float, max_shells: int = _MAX_SHELLS
) -> np.ndarray:
    """R_k = ρ + Σ_{j<k} A^(j)(x) for k = 0 … K, stopping once R_k ≥ reach or k = max_shells."""
    radii = [float(rho)]
    total = 0.0
    for k in range(int(max_shells)):
        if radii[-1] >= reach:
            break
        total += float(query.local_sensitivity(data, k))
        radii.append(float(rho) + total)
    return np.asarray(radii)


# --------------------------------------------------------------------------- the mechanism


class InverseSensitivity(Mechanism):
    """ε-DP release of ``query`` by the (approximate) inverse-sensitivity mechanism.

    ``InverseSensitivity(query, epsilon, *, lower=None, upper=None, rho=0.0,
    resolution=None, exact=None, max_shells=100000)``.  The output range
    [lower, upper] is public (default: the query's own bounds).  ``exact``:
    the exact quantile path length (default for quantile queries) or the
    approximate one from A^(k) (every other query).  ``resolution``: release
    on the public grid lower + j·resolution.  ``rho``: the smoothing radius of
    the continuous variant.  Guarantee: ``PureDP(epsilon)`` under the query's
    relation (``query.neighbours``).
    """

    name = "inverse_sensitivity"

    def __init__(
        self,
        query: Any,
        epsilon: float,
        *,
        lower: float | None = None,
        upper: float | None = None,
        rho: float = 0.0,
        resolution: float | None = None,
        exact: bool | None = None,
        max_shells: int = _MAX_SHELLS,
    ) -> None:
        self.query = query
        self.epsilon = _validate.epsilon(epsilon)
        self.neighbours = getattr(query, "neighbours", "substitution")
        lo = lower if lower is not None else getattr(query, "lower", None)
        hi = upper if upper is not None else getattr(query, "upper", None)
        if lo is None or hi is None:
            raise ParameterError(
                "the output range is public: give lower and upper for this query",
                parameter="lower" if lo is None else "upper",
            )
        self.lower, self.upper = _validate.bounds(lo, hi)
        is_quantile = hasattr(query, "q") and hasattr(query, "index")
        self.exact = is_quantile if exact is None else bool(exact)
        if self.exact and not is_quantile:
            raise ParameterError(
                "the exact path length is implemented for quantiles only", parameter="exact"
            )
        if self.exact:
            self.q = float(query.q)
            score_sensitivity(self.q, self.neighbours)
        self.rho = _validate.nonnegative(rho, "rho")
        if isinstance(max_shells, bool) or not isinstance(max_shells, int) or max_shells < 1:
            raise ParameterError(
                f"max_shells must be an integer >= 1, got {max_shells!r}",
                parameter="max_shells",
                allowed=">= 1",
            )
        self.max_shells = max_shells
        self.resolution = None
        if resolution is not None:
            self.resolution = _validate.finite_positive(resolution, "resolution")
            count = math.floor((self.upper - self.lower) / self.resolution) + 1
            if count > 2**53:
                raise ParameterError("resolution is too fine for the range", parameter="resolution")
            self._grid_count = int(count)

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def parameters(self) -> dict[str, Any]:
        p: dict[str, Any] = {
            "query": getattr(self.query, "name", type(self.query).__name__),
            "epsilon": self.epsilon,
            "lower": self.lower,
            "upper": self.upper,
            "neighbours": self.neighbours,
            "path_length": "exact" if self.exact else "approximate",
        }
        params = getattr(self.query, "parameters", None)
        if callable(params):
            p["query_parameters"] = params()
        if self.rho:
            p["rho"] = self.rho
        if self.resolution is not None:
            p["resolution"] = self.resolution
        if not self.exact:
            p["max_shells"] = self.max_shells
        return p

    # -- segments: (start, end, log weight per unit of base measure) ----------------------

    def _continuous_segments(self, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """(breakpoints p_0 ≤ … ≤ p_s, length s of the log density on each (p_i, p_{i+1}))."""
        half = -0.5 * self.epsilon
        if self.exact:
            x = sorted_rows(data, self.lower, self.upper)
            pts = np.concatenate(([self.lower], x, [self.upper]))
            return pts, half * quantile_interval_lengths(x, self.q, self.neighbours)
        f, radii = self._shells(data)
        # shell k: ρ + S_{k−1} < |t − f| ≤ ρ + S_k (shell 0: |t − f| ≤ ρ); beyond: K + 1
        K = radii.size - 1
        edges = np.concatenate((f - radii[::-1], f + radii))
        shell = np.concatenate((np.arange(K, 0, -1), [0], np.arange(1, K + 1)))
        pts = np.concatenate(([self.lower], np.clip(edges, self.lower, self.upper), [self.upper]))
        log_d = half * np.concatenate(([K + 1], shell, [K + 1])).astype(float)
        return pts, log_d

    def _shells(self, data: Any) -> tuple[float, np.ndarray]:
        prepared = self.query.prepare(data) if hasattr(self.query, "prepare") else data
        f = float(self.query.value(prepared))
        reach = max(f - self.lower, self.upper - f)
        return f, shell_radii(self.query, prepared, self.rho, reach, self.max_shells)

    def _grid_segments(self, data: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(first grid index, number of grid points, log weight per point)."""
        half = -0.5 * self.epsilon
        if self.exact:
            x = sorted_rows(data, self.lower, self.upper)
            k = np.clip(np.rint((x - self.lower) / self.resolution), 0, self._grid_count - 1)
            starts, lengths, below, above = grid_segments(self._grid_count, k.astype(np.int64))
            equal = x.size - below - above
            cache: dict[tuple, int] = {}
            lens = np.empty(starts.size)
            for j, key in enumerate(
                zip(below.tolist(), equal.tolist(), above.tolist(), strict=True)
            ):
                if key not in cache:
                    cache[key] = quantile_path_length(*key, self.q, self.neighbours)
                lens[j] = cache[key]
            return starts, lengths, half * lens
        f, radii = self._shells(data)
        K, J, res = radii.size - 1, self._grid_count, self.resolution
        # grid indices within distance R_k of f: [left_k, right_k]
        left = np.clip(np.ceil((f - radii - self.lower) / res), 0, J).astype(np.int64)
        right = np.clip(np.floor((f + radii - self.lower) / res), -1, J - 1).astype(np.int64)
        # segments: outside-left, left shells K … 1, shell 0, right shells 1 … K, outside-right
        starts = np.concatenate(([0], left[::-1]))
        ends = np.concatenate((left[::-1] - 1, [right[0]]))  # inclusive
        starts = np.concatenate((starts, right[:-1] + 1, [right[-1] + 1]))
        ends = np.concatenate((ends, right[1:], [J - 1]))
        shell = np.concatenate(([K + 1], np.arange(K, -1, -1), np.arange(1, K + 1), [K + 1]))
        lengths = np.maximum(ends - starts + 1, 0)
        return starts, lengths, half * shell.astype(float)

    # -- release, sample, law -------------------------------------------------------------

    def release(self, data: Any, rng: Any = None) -> Release:
        source: RandomSource = resolve(rng)
        return self._record(self._draw(self._weights(data), source), source)

    def _weights(self, data: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(segment starts, segment sizes, log weights): grid indices or breakpoints."""
        if self.resolution is not None:
            starts, lengths, log_d = self._grid_segments(data)
            with np.errstate(divide="ignore"):
                return starts, lengths, np.log(lengths.astype(float)) + log_d
        pts, log_d = self._continuous_segments(data)
        with np.errstate(divide="ignore"):
            return pts, np.diff(pts), np.log(np.diff(pts)) + log_d

    def _draw(self, weights: tuple, source: RandomSource) -> float:
        starts, lengths, logw = weights
        i = sample_index_from_log_weights(logw, source)
        if self.resolution is not None:
            k = int(starts[i]) + source.integers(int(lengths[i]))
            return float(min(self.lower + k * self.resolution, self.upper))
        lo, hi = float(starts[i]), float(starts[i + 1])
        if source.secure:
            from ..noise.exact import uniform as exact_uniform

            return float(exact_uniform(lo, hi, source))
        return float(min(max(lo + source.uniform() * (hi - lo), lo), hi))

    def sample(self, data: Any, size: int, rng: Any = None) -> np.ndarray:
        """``size`` independent releases on one dataset (the release path, repeated)."""
        source = resolve(rng)
        weights = self._weights(data)
        return np.array([self._draw(weights, source) for _ in range(int(size))])

    def output_probabilities(self, data: Any) -> dict[float, float]:
        """Grid variant: the exact mass of every grid point (small grids; tests)."""
        if self.resolution is None:
            raise ParameterError("output_probabilities needs a resolution", parameter="resolution")
        starts, lengths, log_d = self._grid_segments(data)
        keep = lengths > 0
        starts, lengths, log_d = starts[keep], lengths[keep], log_d[keep]
        top = log_d.max()
        z = float(np.sum(lengths * np.exp(log_d - top)))
        out: dict[float, float] = {}
        for s, ln, ld in zip(starts, lengths, log_d, strict=True):
            for k in range(int(s), int(s + ln)):
                out[float(min(self.lower + k * self.resolution, self.upper))] = float(
                    np.exp(ld - top) / z
                )
        return out

    def output_distribution(self, data: Any) -> OutputDistribution | dict[float, float]:
        """Exact law.

        Theorem (Asi & Duchi 2020, Prop. 3.1; McSherry & Talwar 2007, Thm. 6):
        the release has density exp(−ε·len(x; t)/2)/Z on [lower, upper]
        (mass, on the grid).  Proof sketch: len is constant on each segment
        built above (an interval between rows for quantiles, a shell side for
        len̂), the sampler draws a segment with probability ∝ its base measure
        times exp(−ε·len/2) and then a uniform point in it.  On a grid the
        law is the dict of point masses (as :meth:`output_probabilities`).
        """
        if self.resolution is not None:
            return self.output_probabilities(data)
        pts, log_d = self._continuous_segments(data)
        if self.exact:
            return piecewise_constant_law(pts, log_d)
        f, radii = self._shells(data)
        half = -0.5 * self.epsilon

        def at(y: np.ndarray) -> np.ndarray:
            # len̂ = min{k : |t − f| ≤ R_k}, K + 1 beyond the last shell (closed shells)
            return half * np.searchsorted(radii, np.abs(y - f), side="left").astype(float)

        return piecewise_constant_law(pts, log_d, at)
