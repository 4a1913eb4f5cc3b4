"""Means: the clamped mean (both relations) and the trimmed mean.

``TrimmedMean(trim, lower, upper)`` drops the m = ⌊trim·n⌋ smallest and m
largest of the n clamped values and averages the rest (Bun & Steinke 2019,
"Average-case averages: private algorithms for smooth sensitivity and mean
estimation", §3, the trimmed mean).  Under substitution, with x_1 ≤ … ≤ x_n
sorted and x_i = lower (i < 1), upper (i > n), replacing k records gives

    A^(k)(x) = max_{0 ≤ l ≤ k+1} (x_{n−m+l} − x_{m+l−k}) / (n − 2m)

(one record raised to ``upper`` shifts the kept window up by one index: the
kept mean grows by (x_{n−m+1} − x_{m+1})/(n − 2m); lowered, by
(x_{n−m} − x_m)/(n − 2m); k changes shift both ends by up to k).  This is the
pair structure of ``order.py`` with i_max = m + 1 and j_min = n − m, so the
smooth sensitivity is computed exactly by the same O(n log n) algorithm.
``Mean(neighbours="substitution")`` is the case m = 0:
LS(x) = max(upper − x_1, x_n − lower)/n.

``Mean(neighbours="add_remove")`` (datasets stay non-empty): for a dataset y
of size N with mean μ,

    LS(y) = max( max(μ − lower, upper − μ)/(N + 1),          (add a value)
                 max_{z ∈ y} |z − μ|/(N − 1) )                  (remove z, N ≥ 2).

Within distance k the maximum is reached by removing the r smallest records
and adding a copies of ``upper`` (r + a ≤ k), with witness z = lower for the
first term and z = x_1 for the second, or the mirror image; both terms have
the form T/(p(p + 1)) with T = Σ (kept − z) + a·(upper − z), p = #kept + a,
which is unimodal in a for fixed r (numerator linear, denominator quadratic),
so each k costs O(k).  Checked against brute force in
``tests/test_queries_means.py``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from .. import _validate
from ..errors import ParameterError
from .base import Query, finite_range, relation
from .order import (
    _X,
    SortedColumn,
    _ar_cap,
    _distance,
    _is_empty,
    pair_local_sensitivity,
    pair_log_smooth_sensitivity,
    sorted_clamped,
)

__all__ = [
    "Mean",
    "TrimmedMean",
    "trim_count",
    "mean_add_remove_local_sensitivity",
    "fixed_point_exponent",
    "fixed_point_units",
    "exact_clamped_sum",
    "exact_mean",
]


# -- exact sums on a public fixed-point grid ----------------------------------
#
# Every backend (numpy here; SQL engines elsewhere) must produce bit-identical
# sums, and a released value must move between neighbours by no more than the
# sensitivity used.  Floating-point summation gives neither (its rounding
# depends on the order and on the other rows).  So each clamped value is
# truncated onto a grid 2^−s fixed by the public bounds alone, and the grid
# units are summed as an exact integer.

_DBL_MAX = Fraction(np.finfo(np.float64).max)
_HALF = 1 << 26  # split of the 53-bit units into two int64-safe halves


def fixed_point_exponent(lower: float, upper: float, *, shift: bool = False) -> int:
    """The public grid exponent s: values are summed in units of 2^−s.

    Rule (public bounds only, IEEE-double operations every engine performs
    identically):

    * ``shift=False`` (sums): M = max(|lower|, |upper|);
    * ``shift=True`` (means, origin moved to ``lower``): M = fl(upper − lower),
      the double nearest the range;
    * E = the smallest integer with 2^E ≥ M (from ``math.frexp``: M = f·2^e
      with f in [1/2, 1); E = e − 1 if f = 1/2, else e);
    * s = 52 − E, so |value|·2^s ≤ 2^52 for every value in the range.

    Raises :class:`~instancedp.errors.ParameterError` when the range is not
    a positive finite double (e.g. bounds (−1e308, 1e308): hi − lo overflows).
    """
    lo, hi = _validate.bounds(lower, upper)
    return grid_exponent(finite_range(lo, hi) if shift else max(abs(lo), abs(hi)))


def grid_exponent(m: float) -> int:
    """s = 52 − E, E the smallest integer with 2^E ≥ m (m ≥ 0 finite; m = 0 gives 52)."""
    f, e = math.frexp(m)
    return 52 - (e - 1 if f == 0.5 else e)


def fixed_point_units(
    values: Any, lower: float, upper: float, *, shift: bool = False
) -> np.ndarray:
    """The integer grid units k_i (as float64, exact integers, |k_i| ≤ 2^52).

    k_i = trunc(c_i · 2^s), where c_i = clamp(x_i, lower, upper) and, with
    ``shift=True``, c_i = fl(clamp(x_i, lower, upper) − lower) (IEEE
    subtraction, round to nearest; c_i ∈ [0, fl(upper − lower)] by
    monotonicity of rounding).  trunc rounds toward zero.  The product by 2^s
    is exact (``ldexp``; an engine without it multiplies by 2^⌊s/2⌋ then by
    2^⌈s/2⌉, both exact because the result is ≤ 2^52 in magnitude; where the
    product falls below the normal range it is < 1 and truncates to 0 either
    way).  Missing values must be removed or imputed before (public policy).
    """
    lo, hi = _validate.bounds(lower, upper)
    s = fixed_point_exponent(lo, hi, shift=shift)
    c = np.clip(np.asarray(values, dtype=np.float64).reshape(-1), lo, hi)
    if shift:
        c = c - lo
    return np.trunc(np.ldexp(c, s))


def exact_clamped_sum(values: Any, lower: float, upper: float, *, shift: bool = False) -> int:
    """S = Σ k_i as an exact Python integer (see :func:`fixed_point_units`).

    The represented sum is S · 2^−s with s = ``fixed_point_exponent(lower,
    upper, shift=shift)`` (plus n·lower when ``shift``).  Each grid term lies in
    [trunc(lower·2^s), trunc(upper·2^s)] (unshifted) or [0, trunc(D·2^s)]
    (shifted, D = fl(upper − lower)), a sub-range of the clamped range, so
    adding or removing one row moves S·2^−s by at most max(|lower|, |upper|)
    (resp. D), and replacing one by at most upper − lower (resp. D): the
    sensitivities of the exact sum.  The result does not depend on the order
    of the rows.
    """
    k = fixed_point_units(values, lower, upper, shift=shift)
    total = 0
    step = 1 << 30  # int64 sums of ≤ 2^30 halves of ≤ 2^26 cannot overflow
    for start in range(0, k.size, step):
        chunk = k[start : start + step]
        high = np.trunc(chunk / _HALF)  # exact: division by a power of two
        low = chunk - high * _HALF  # exact, |low| < 2^26
        total += int(high.astype(np.int64).sum()) * _HALF + int(low.astype(np.int64).sum())
    return total


def fixed_point_value(total: int, exponent: int) -> float:
    """S·2^−s as the nearest double, saturated at ±the largest double.

    Saturation is 1-Lipschitz, so no data-dependent overflow reaches the noise."""
    exact = Fraction(total) / Fraction(2) ** exponent
    return float(max(min(exact, _DBL_MAX), -_DBL_MAX))


def exact_mean(values: Any, lower: float, upper: float) -> tuple[Fraction, int]:
    """(shifted mean, n): the mean of the clamped values minus ``lower``, exact.

    The shifted mean is S·2^−s/n with S = ``exact_clamped_sum(values, lower,
    upper, shift=True)``; the mean itself is ``lower`` plus it, an addition a
    release makes only as post-processing, after the noise (so the rounding
    of a large origin never meets the sensitivity).  n = 0 gives (0, 0).
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if x.size == 0:
        return Fraction(0), 0
    s = fixed_point_exponent(lower, upper, shift=True)
    total = exact_clamped_sum(x, lower, upper, shift=True)
    return Fraction(total, x.size) / Fraction(2) ** s, int(x.size)


def _rounded_mean(x: np.ndarray, lower: float, upper: float) -> float:
    """lower + the exact shifted mean, correctly rounded once (x clamped, non-empty)."""
    mu, _ = exact_mean(x, lower, upper)
    return float(Fraction(lower) + mu)


def kept_units(x: Any, first: int, last: int, lower: float, upper: float) -> int:
    """Σ of the shifted fixed-point units k(x_i) (:func:`fixed_point_units`, ``shift=True``)
    over the 1-based ranks first ≤ i ≤ last of the sorted clamped ``x``, exact.

    On an engine's :class:`~instancedp.queries.order.SortedColumn`: the sum of
    the rows strictly between x_first and x_last plus the ties at both ends
    (``range_sum``), the same integer."""
    if isinstance(x, SortedColumn):
        def unit(v: float) -> int:
            return int(fixed_point_units(np.array([v]), lower, upper, shift=True)[0])

        return x.units_sum(first, last, unit)
    return exact_clamped_sum(x[first - 1 : last], lower, upper, shift=True)


def trim_count(trim: float, n: int) -> int:
    """m = ⌊trim·n⌋, exact (trim read as its decimal repr, like ``quantile_index``)."""
    num, den = Fraction(repr(float(trim))).as_integer_ratio()
    return (num * n) // den


class TrimmedMean(Query):
    """Mean of the middle N − 2m clamped values, m = ⌊trim·N⌋.

    ``neighbours="add_remove"`` (the default): one row added or removed, N
    private; the empty table's value is the midpoint (lower + upper)/2, and
    the smooth sensitivity is the β-smooth upper bound derived in
    docs/queries.md ("The trimmed mean under add/remove").
    ``neighbours="substitution"``: N fixed; ``n``, if given, is the public
    dataset size: the global sensitivity is then (upper − lower)/(n − 2m) and
    data of another size are refused; without it the global sensitivity is
    the worst case over n, upper − lower.
    """

    name = "trimmed_mean"
    neighbours = "add_remove"
    supported_relations = ("add_remove", "substitution")
    exact: ClassVar[bool] = True
    _empty_has_value: ClassVar[bool] = True  # add/remove: the empty table's value is public

    def __init__(
        self,
        trim: float,
        lower: float,
        upper: float,
        neighbours: str = "add_remove",
        *,
        n: int | None = None,
        drop_missing: bool = False,
    ) -> None:
        try:
            t = float(trim)
        except (TypeError, ValueError):
            t = math.nan
        if not (math.isfinite(t) and 0.0 <= t < 0.5):
            raise ParameterError(
                f"trim must be a number in [0, 0.5), got {trim!r}",
                parameter="trim",
                allowed="[0, 0.5)",
            )
        self.trim = t
        self.neighbours = relation(neighbours, self.supported_relations)  # type: ignore[assignment]
        self.lower, self.upper = _validate.bounds(lower, upper)
        fixed_point_exponent(self.lower, self.upper, shift=True)  # refuses overflowing ranges
        if n is not None and self.neighbours == "add_remove":
            raise ParameterError(
                "n (a public dataset size) only applies to substitution neighbours",
                parameter="n",
                allowed="None under add_remove",
            )
        if n is not None and (isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1):
            raise ParameterError(
                f"n must be an integer >= 1 or None, got {n!r}", parameter="n", allowed=">= 1"
            )
        self.n = None if n is None else int(n)
        self.drop_missing = bool(drop_missing)

    def prepare_key(self) -> tuple:
        return ("sorted_clamped", self.lower, self.upper, self.drop_missing)

    def _prepare(self, data: Any) -> Any:
        if isinstance(data, SortedColumn):  # an engine's column, sorted and clamped there
            return data
        if self._empty_has_value and self.neighbours == "add_remove" and _is_empty(data):
            return np.empty(0)  # the empty table neighbours every one-row table
        return sorted_clamped(data, self.lower, self.upper, self.drop_missing)

    def _x(self, data: Any) -> np.ndarray:
        x = self._load(data)
        if self.n is not None and x.size != self.n:
            raise ParameterError(f"data has {x.size} records but the query's public n is {self.n}")
        return x

    def _window(self, n: int) -> tuple[int, int, int]:
        m = trim_count(self.trim, n)
        return m + 1, n - m, n - 2 * m

    @property
    def rounding_slack(self) -> float:
        """How far rounding the exact mean to a double can move it: ulp(max(|lower|, |upper|)).

        The value is the exact mean (integer sum on the public grid of
        :func:`fixed_point_units`) correctly rounded once, so two neighbours'
        values differ by at most the exact change plus this; every
        sensitivity below includes it (a constant added to a β-smooth bound
        keeps it β-smooth)."""
        return math.ulp(max(abs(self.lower), abs(self.upper)))

    @property
    def global_sensitivity(self) -> float:
        if self.n is None:  # add/remove, or substitution without a public n
            return self.upper - self.lower + self.rounding_slack
        return (self.upper - self.lower) / self._window(self.n)[2] + self.rounding_slack

    def value(self, data: Any) -> float:
        x = self._x(data)
        if x.size == 0:  # add/remove only: the public midpoint
            return float(Fraction(self.lower) + (Fraction(self.upper) - Fraction(self.lower)) / 2)
        m = trim_count(self.trim, x.size)
        total = kept_units(x, m + 1, x.size - m, self.lower, self.upper)
        shifted = Fraction(total, x.size - 2 * m) / Fraction(2) ** fixed_point_exponent(
            self.lower, self.upper, shift=True)
        return float(Fraction(self.lower) + shifted)  # as _rounded_mean: rounded once

    def max_distance(self, data: Any) -> float:
        return float(self._x(data).size + (1 if self.neighbours == "add_remove" else 0))

    def local_sensitivity(self, data: Any, distance: int = 0) -> float:
        """A^(k): exact under substitution; under add/remove the upper bound B^(k)
        of docs/queries.md (exact for k = 0)."""
        k = _distance(distance)
        x = self._x(data)
        if self.neighbours == "add_remove":
            b = _TrimmedAddRemove(x, self.trim, self.lower, self.upper)
            return b.upto(k) + self.rounding_slack
        i_max, j_min, kept = self._window(x.size)
        exact = pair_local_sensitivity(x, self.lower, self.upper, i_max, j_min, k) / kept
        return exact + self.rounding_slack

    def log_smooth_sensitivity(self, data: Any, beta: float) -> float:
        beta = _validate.nonnegative(beta, "beta")
        x = self._x(data)
        if self.neighbours == "add_remove":
            log_ss = _trimmed_ar_log_smooth(x, self.trim, self.lower, self.upper, beta)
            return float(np.logaddexp(log_ss, math.log(self.rounding_slack)))
        i_max, j_min, kept = self._window(x.size)
        log_ss = pair_log_smooth_sensitivity(x, self.lower, self.upper, i_max, j_min, beta)
        return float(np.logaddexp(log_ss - math.log(kept), math.log(self.rounding_slack)))

    def smooth_sensitivity(self, data: Any, beta: float) -> float:
        """Substitution: exact SS_β, O(n log n) with the sort (pair structure of
        ``order.py``).  Add/remove: a β-smooth upper bound, O(K²) with K ≤ the public
        cap of ``order.py`` (docs/queries.md)."""
        return math.exp(self.log_smooth_sensitivity(data, beta))

    def parameters(self) -> dict[str, Any]:
        p: dict[str, Any] = {"trim": self.trim, "lower": self.lower, "upper": self.upper}
        p["neighbours"] = self.neighbours
        if self.n is not None:
            p["n"] = self.n
        return p


# -- the trimmed mean under add/remove -----------------------------------------
#
# Derivation in docs/queries.md ("The trimmed mean under add/remove").  For y
# sorted, size N ≥ 2, m = ⌊τN⌋, c = N − 2m, μ the kept mean and y_i = lower
# (i < 1), upper (i > N): every neighbour moves the value by
# (w − μ)/(c + 1) with w ∈ [y_m, y_{N−m+1}] (kept window gains a value) or by
# (μ − v)/(c − 1) with v ∈ [y_{m+1}, y_{N−m}] (it loses one); which of the two
# happens on adding (resp. removing) a row depends on ⌊τ(N ± 1)⌋ only, so
#
#     LS(y) = max over the active (ia, ib, d) of max(μ − y_ia, y_ib − μ)/d.
#
# N = 1 removal: |y_1 − mid|; N = 0: LS = (upper − lower)/2.  For y at a
# additions and r removals from x (N = n + a − r): x_{i−a} ≤ y_i ≤ x_{i+r},
# so μ(y) ∈ [L, U] with L, U the means of x over the kept ranks shifted by
# −a, +r, giving B(a, r) ≥ LS(y); B(a, r)(x′) ≤ B(a + 1, r)(x) or
# B(a, r + 1)(x) for x′ = x plus or minus a row, hence β-smoothness.


class _TrimmedAddRemove:
    """B(a, r) for r removals and a = 0..a_max additions (vectorised over a).

    The values are y_i = k(x_i)·2^−s, the shifted fixed-point values whose
    mean the release computes (:func:`kept_units`; a non-decreasing map of
    x_i, so the order and the derivation are unchanged), with y_i = 0 below
    rank 1 and upper − lower above rank n.  The means over the shifted kept
    ranks are the exact kept sum for n (``core``) plus signed partial sums of
    y outward from the two trim ranks, so only ranks within the reach
    examined are read: the same arithmetic on an array and on an engine's
    :class:`~instancedp.queries.order.SortedColumn`."""

    def __init__(self, x: Any, trim: float, lower: float, upper: float) -> None:
        self.x, self.lower, self.upper = x, lower, upper
        self.num, self.den = Fraction(repr(float(trim))).as_integer_ratio()
        self.span = upper - lower
        self.mid = (upper - lower) / 2  # shifted origin: values are x − lower
        self.s = fixed_point_exponent(lower, upper, shift=True)
        n = x.size
        self.m0 = (self.num * n) // self.den  # kept ranks m0 + 1 … n − m0 for the size n
        kept = kept_units(x, self.m0 + 1, n - self.m0, lower, upper) if n else 0
        self.core = float(Fraction(kept, 1 << self.s) if self.s >= 0 else kept * 2**-self.s)
        self.pad = 0  # partial sums are built lazily for the reach needed
        self._prefix(64)

    def _partial(self, start: int, step: int) -> np.ndarray:
        """[Σ_{j < t} y_{start + step·j} for t = 0..pad]."""
        y = self._X(start + step * np.arange(self.pad, dtype=np.int64))
        return np.concatenate([[0.0], np.cumsum(y)])

    def _prefix(self, pad: int) -> None:
        """Partial sums of y outward from each trim rank, up to ``pad`` ranks."""
        self.pad = pad
        m0, r0 = self.m0, self.x.size - self.m0
        self.down, self.up = self._partial(m0, -1), self._partial(m0 + 1, 1)
        self.rdown, self.rup = self._partial(r0, -1), self._partial(r0 + 1, 1)

    def _X(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx)
        v = _X(self.x, self.lower, self.upper, idx)
        y = np.ldexp(fixed_point_units(v, self.lower, self.upper, shift=True), -self.s)
        return np.where(idx > self.x.size, self.span, np.where(idx < 1, 0.0, y))

    def _mean(self, first: np.ndarray, last: np.ndarray) -> np.ndarray:
        """Mean of y_i over first ≤ i ≤ last (non-empty ranges within the reach):
        Σ = Σ_{first..m0} + core + Σ_{r0+1..last} (signed sums, r0 = n − m0)."""
        m0, r0, p = self.m0, self.x.size - self.m0, self.pad
        t = m0 + 1 - first
        left = np.where(t >= 0, self.down[np.clip(t, 0, p)], -self.up[np.clip(-t, 0, p)])
        u = last - r0
        right = np.where(u >= 0, self.rup[np.clip(u, 0, p)], -self.rdown[np.clip(-u, 0, p)])
        return (self.core + (left + right)) / (last - first + 1)

    def _m(self, size: np.ndarray) -> np.ndarray:
        return (self.num * size) // self.den

    def row(self, r: int, a_max: int) -> np.ndarray:
        """[B(a, r) for a = 0..a_max] (0 where the size would be negative)."""
        a = np.arange(a_max + 1, dtype=np.int64)
        return self.pairs(a, np.full(a.size, r, dtype=np.int64))

    def upto(self, k: int) -> float:
        """B^(k) = max_{a + r ≤ k} B(a, r), in blocks of about 2^20 pairs."""
        best = 0.0
        step = max(1, (1 << 20) // (k + 1))
        for r0 in range(0, k + 1, step):
            r = np.arange(r0, min(k, r0 + step - 1) + 1, dtype=np.int64)
            a = np.arange(k + 1, dtype=np.int64)
            aa, rr = np.meshgrid(a, r)
            keep = aa + rr <= k
            best = max(best, float(np.max(self.pairs(aa[keep], rr[keep]))))
        return best

    def pairs(self, a: np.ndarray, r: np.ndarray) -> np.ndarray:
        """B(a, r) elementwise for equal-shaped integer arrays (0 where n + a − r < 0)."""
        n = self.x.size
        need = int(np.max(a + r, initial=0)) + 2
        if need > self.pad:
            self._prefix(max(need, 2 * self.pad))
        size = n + a - r
        out = np.zeros(a.size)
        span = self.upper - self.lower
        out[size == 0] = span / 2
        one = size == 1
        if one.any():  # y = {z}, z ∈ [X_{1−a}, X_{1+r}]: add → (max gap)/2, remove → |z − mid|
            hi = self._X(1 + r[one])
            lo = self._X(1 - a[one])
            out[one] = np.maximum(
                np.maximum(hi, span - lo) / 2, np.maximum(hi - self.mid, self.mid - lo)
            )
        big = size >= 2
        if not big.any():
            return out
        a, r, N = a[big], r[big], size[big]
        m = self._m(N)
        c = N - 2 * m
        low = self._mean(m + 1 - a, N - m - a)  # lower bound on the kept mean
        high = self._mean(m + 1 + r, N - m + r)  # upper bound
        # gaining a value: (ia, ib, d) = (m, N − m + 1, c + 1); losing: (m + 1, N − m, c − 1)
        gain = (m, N - m + 1, c + 1)
        lose = (m + 1, N - m, c - 1)
        add_same = self._m(N + 1) == m
        rem_same = self._m(N - 1) == m
        best = np.zeros(a.size)
        for case, active in ((gain, add_same | ~rem_same), (lose, ~add_same | rem_same)):
            ia, ib, d = case
            term = np.maximum(self._X(ib + r) - low, high - self._X(ia - a))
            val = np.where(active & (d >= 1), term / np.maximum(d, 1), 0.0)
            best = np.maximum(best, val)
        out[big] = best
        return out


def _trimmed_ar_log_smooth(
    x: np.ndarray, trim: float, lower: float, upper: float, beta: float
) -> float:
    """log max(max_{a + r ≤ K} e^{−(a+r)β} B(a, r), max_{k > K} e^{−kβ} C(n − k)).

    K = ``_ar_cap(beta)`` (β only, never n).  C(s) = (upper − lower)/max(1, (1 − 2τ)s − 1)
    bounds every B(a, r) with n + a − r ≥ s (the kept count c(N) ≥ (1 − 2τ)N and
    every term is ≤ (upper − lower)/(c − 1)), depends on n − k only and grows with k,
    so the tail keeps the ball property (docs/queries.md).  Every B ≤ upper − lower:
    stopping once e^{−kβ}(upper − lower) ≤ the best term gives the same value.
    """
    log_range = math.log(upper - lower)
    if beta == 0:
        return log_range
    cap = _ar_cap(beta)
    b = _TrimmedAddRemove(x, trim, lower, upper)
    best = -math.inf
    for r in range(cap + 1):
        if log_range - beta * r <= best:
            return best + 1e-12  # every (a, r′) left costs ≥ r
        reach = cap - r if best == -math.inf else min(cap - r, int((log_range - best) / beta) - r)
        if reach < 0:
            continue
        vals = b.row(r, reach)
        with np.errstate(divide="ignore"):
            best = max(best, float(np.max(np.log(vals) - beta * (np.arange(vals.size) + r))))
    # + 1e−12: a relative margin over the rounding of log and exp (SS ≥ LS exactly)
    return max(best, _trimmed_ar_log_tail(x.size, trim, log_range, beta, cap)) + 1e-12


def _trimmed_ar_log_tail(n: int, trim: float, log_range: float, beta: float, cap: int) -> float:
    """log max_{k > cap} e^{−kβ} C(n − k), C as in ``_trimmed_ar_log_smooth``.

    log C(n − k) − kβ is convex in k where (1 − 2τ)(n − k) − 1 > 1 (minus the log
    of a linear function) and decreasing beyond, so the maximum over integers is
    at k = cap + 1, or next to the first k where the denominator reaches 1.
    Computed with the exact rational 1 − 2τ.
    """
    num, den = Fraction(repr(float(trim))).as_integer_ratio()
    slope = Fraction(den - 2 * num, den)  # 1 − 2τ > 0

    def log_c(k: int) -> float:
        d = slope * (n - k) - 1
        return log_range - (math.log(d) if d > 1 else 0.0)

    first = n - math.floor(2 / slope)  # (1 − 2τ)(n − k) − 1 ≤ 1 from here on
    ks = [cap + 1] + [k for k in (first - 1, first) if k > cap + 1]
    return max(log_c(k) - beta * k for k in ks)


def _best_over_additions(tail: np.ndarray, kept: np.ndarray, span: float, budget: np.ndarray):
    """max over 0 ≤ a ≤ budget of (tail + a·span)/(p(p + 1)), p = kept + a ≥ 1 (vectorised).

    The ratio is unimodal in a (see module docstring): its maximum over the
    reals is at p = u*, the positive root of span·u² + 2cu + c with
    c = tail − kept·span ≤ 0, so the best integer a is next to u* − kept.
    """
    c = tail - kept * span
    if span > 0:
        u_star = (-c + np.sqrt(np.maximum(c * c - span * c, 0.0))) / span
    else:
        u_star = np.zeros_like(tail)
    best = np.full(tail.shape, -np.inf)
    lo_a = np.maximum(0, 1 - kept)  # p ≥ 1
    for cand in (np.floor(u_star) - kept, np.ceil(u_star) - kept, lo_a, budget):
        a = np.clip(cand, lo_a, budget)
        p = kept + a
        ok = (a <= budget) & (p >= 1)
        val = np.where(ok, (tail + a * span) / np.maximum(p * (p + 1), 1), -np.inf)
        best = np.maximum(best, val)
    return best


def _suffix(v: np.ndarray) -> np.ndarray:
    """[Σ_{i ≥ r} v_i for r = 0..len(v)] (0-based, last entry 0)."""
    out = np.zeros(v.size + 1)
    out[:-1] = np.cumsum(v[::-1])[::-1]
    return out


class _AddRemoveMean:
    """Prefix work for A^(k) of the mean under add/remove, then O(k) per k."""

    def __init__(self, x: np.ndarray, lower: float, upper: float) -> None:
        self.n = x.size
        # (suffix sums of kept − witness, span = upper − witness, witness kept?)
        self.sides = []
        for y, lo, hi in ((x, lower, upper), (np.sort(-x), -upper, -lower)):
            self.sides.append((_suffix(y - lo), hi - lo, 0))  # add term, witness lower
            self.sides.append((_suffix(y[1:] - y[0]), hi - y[0], 1))  # remove term, witness x_1

    def at(self, k: int) -> float:
        best = 0.0
        for suffix, span, witness in self.sides:
            others = self.n - witness
            r = np.arange(0, min(k, others) + 1)
            kept = (others - r).astype(np.float64)
            vals = _best_over_additions(suffix[r], kept, span, (k - r).astype(np.float64))
            best = max(best, float(np.max(vals)))
        return best


def mean_add_remove_local_sensitivity(x: np.ndarray, lower: float, upper: float, k: int) -> float:
    """A^(k) of the clamped mean under add/remove; ``x`` sorted and clamped."""
    return _AddRemoveMean(x, lower, upper).at(k)


class Mean(TrimmedMean):
    """The mean of the data clamped to [lower, upper].

    ``neighbours="add_remove"`` (the default; global sensitivity
    (upper − lower)/2, reached between {lower} and {lower, upper}; non-empty
    data — a release of the mean under add/remove is noisy sum ÷ noisy count,
    which needs no such restriction) or ``"substitution"`` (n fixed; ``n``
    optional public size, as for ``TrimmedMean``).  The value is computed
    exactly (see :attr:`TrimmedMean.rounding_slack`).
    """

    name = "mean"
    _empty_has_value: ClassVar[bool] = False  # released as noisy sum ÷ noisy count instead
    supported_relations = ("add_remove", "substitution")

    def __init__(
        self,
        lower: float,
        upper: float,
        neighbours: str = "add_remove",
        *,
        n: int | None = None,
        drop_missing: bool = False,
    ) -> None:
        neighbours = relation(neighbours, self.supported_relations)
        if neighbours == "add_remove" and n is not None:
            raise ParameterError(
                "n (a public dataset size) only applies to substitution neighbours",
                parameter="n",
                allowed="None under add_remove",
            )
        super().__init__(0.0, lower, upper, neighbours, n=n, drop_missing=drop_missing)

    @property
    def global_sensitivity(self) -> float:
        if self.neighbours == "add_remove":
            return (self.upper - self.lower) / 2 + self.rounding_slack
        return super().global_sensitivity

    def value(self, data: Any) -> float:
        return _rounded_mean(self._x(data), self.lower, self.upper)

    def max_distance(self, data: Any) -> float:
        return float(self._x(data).size + (1 if self.neighbours == "add_remove" else 0))

    def local_sensitivity(self, data: Any, distance: int = 0) -> float:
        if self.neighbours == "substitution":
            return super().local_sensitivity(data, distance)
        k = _distance(distance)
        exact = mean_add_remove_local_sensitivity(self._x(data), self.lower, self.upper, k)
        return exact + self.rounding_slack

    def log_smooth_sensitivity(self, data: Any, beta: float) -> float:
        if self.neighbours == "substitution":
            return super().log_smooth_sensitivity(data, beta)
        ss = self.smooth_sensitivity(data, beta)
        return math.log(ss) if ss > 0 else -math.inf

    def smooth_sensitivity(self, data: Any, beta: float) -> float:
        if self.neighbours == "substitution":
            return super().smooth_sensitivity(data, beta)
        # add/remove: scan k upward; stop once e^{−kβ}·GS ≤ best (GS = (upper − lower)/2)
        beta = _validate.nonnegative(beta, "beta")
        x = self._x(data)
        a = _AddRemoveMean(x, self.lower, self.upper)
        gs = self.global_sensitivity
        best = 0.0
        for k in range(0, x.size + 2):
            decay = math.exp(-k * beta)
            if decay * gs <= best:
                break
            best = max(best, decay * a.at(k))
        return best + self.rounding_slack

    def parameters(self) -> dict[str, Any]:
        p: dict[str, Any] = {"lower": self.lower, "upper": self.upper}
        p["neighbours"] = self.neighbours
        if self.n is not None:
            p["n"] = self.n
        return p
