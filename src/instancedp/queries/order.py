"""Order statistics: quantiles, the median, the minimum and the maximum.

Both relations: ``neighbours="add_remove"`` (the default; A^(k) derived in
the "add/remove neighbours" block below and in docs/queries.md) and
``"substitution"``.  Data are clamped to the public bounds [lower, upper].
Under substitution (n fixed, one record replaced), with x_1 ≤ … ≤ x_n the
sorted clamped data and
the convention x_i = lower for i < 1 and x_i = upper for i > n, the local
sensitivity at distance k of the order statistic x_m is (NRS 2007, §3.1;
docs/formulas.md)

    A^(k)(x) = max_{0 ≤ t ≤ k+1} (x_{m+t} − x_{m+t−k−1}).

The same "pair" structure covers the trimmed mean (``means.py``): the pairs
(i, j) with i ≤ i_max, j ≥ j_min and j − i = k + d0 (d0 = j_min − i_max + 1).
Hence the smooth sensitivity is a maximum over pairs,

    SS_β(x) = max_{i ≤ i_max ≤ j_min ≤ j, (i, j) ≠ (i_max, j_min)}
              e^{−β (j − i − d0)} (x_j − x_i),

computed here exactly in O(W log W) after the sort, where W is the number of
distinct values within the distance K = ln((upper − lower)/SS)/β of the
centre that can still win (early termination):

* only pairs within the window j − i − d0 < W are examined; a pair outside
  has value ≤ e^{−βW}(upper − lower), so the window stops growing as soon
  as that bound is ≤ the best pair found inside it;
* within the window, runs of equal values are compressed (for i only the
  last index of a run can win, for j only the first), found by bisection of
  the sorted array, so all-equal and heavy-tie data cost O(#runs · log n);
* the maximum over the remaining candidate pairs uses the monotone-argmax
  divide and conquer: log(x_j − x_i) has increasing differences in (i, j)
  (for a < b ≤ c ≤ d: log((d − a)/(c − a)) ≤ log((d − b)/(c − b))) and the
  decay term is separable, so the largest maximising j is non-decreasing in i.

All of this is checked against the O(n²) definition and a brute-force
enumeration of neighbours in ``tests/test_queries_order.py``.

The smooth sensitivity can underflow to 0.0 for data with long runs of equal
values and large β (e.g. e^{−10^6}); ``log_smooth_sensitivity`` returns the
exact logarithm.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from .. import _validate
from ..errors import ParameterError
from .base import Query, finite_range, relation

__all__ = [
    "Quantile",
    "Median",
    "Min",
    "Max",
    "SortedColumn",
    "sorted_clamped",
    "quantile_index",
    "pair_local_sensitivity",
    "pair_log_smooth_sensitivity",
    "pair_smooth_sensitivity_naive",
]

_LEAF = 8192  # change points of sorted blocks up to this size are found by np.diff
_DENSE = 1 << 16  # candidate sets with p·q up to this are maximised densely


def sorted_clamped(data: Any, lower: float, upper: float, drop_missing: bool = False) -> np.ndarray:
    """Validated data (``_validate.data_array``), clamped to [lower, upper], sorted."""
    x = _validate.data_array(data, drop_missing=drop_missing)
    x = np.clip(x, lower, upper)
    x.sort()
    return x


def quantile_index(q: float, n: int) -> int:
    """The 1-based index m = max(1, ⌈q·n⌉) of the q-quantile of n sorted values.

    This is the inverse of the empirical CDF (numpy's ``inverted_cdf``): the
    smallest m with m/n ≥ q.  q is read as the shortest decimal that prints as
    it (``repr``) and q·n is computed exactly, so q = 0.1 or 0.3 with n = 10
    give m = 1 or 3, never one more through float rounding.  For the median (q = 1/2) and even
    n this is the lower median m = n/2; for odd n it is (n + 1)/2.
    """
    num, den = Fraction(repr(float(q))).as_integer_ratio()
    return max(1, -((-num * n) // den))


def _X(x: Any, lower: float, upper: float, idx: np.ndarray) -> np.ndarray:
    """x_i for 1-based indices, with x_i = lower for i < 1 and upper for i > n.

    ``x``: the sorted array, or a :class:`SortedColumn` (only ranks in [1, n] are read)."""
    idx = np.asarray(idx)
    n = x.size
    out = np.where(idx < 1, lower, upper).astype(np.float64)
    inside = (idx >= 1) & (idx <= n)
    if inside.any():
        out[inside] = x[idx[inside] - 1]
    return out


def _searchsorted(x: Any, v: float, side: str) -> int:
    """``np.searchsorted`` on the sorted array, or the rank count of a :class:`SortedColumn`."""
    if isinstance(x, SortedColumn):
        return x.searchsorted(v, side)
    return int(np.searchsorted(x, v, side=side))


class SortedColumn:
    """The sorted clamped column x_1 ≤ … ≤ x_n of an engine, read by rank on demand.

    It stands in for the array of :func:`sorted_clamped` in this module's
    sensitivity computations (and the trimmed mean's in ``means.py``): integer,
    slice and index-array reads return the engine's order statistics at those
    (0-based) positions, ``searchsorted`` a count of rows below a value.  Each
    value is the one the whole sorted array holds at that rank (the engines'
    ``order_window`` is bit-equal to numpy's sort), so a computation on it
    performs exactly the floating-point operations it performs on the array,
    and reads only the ranks its early-stop rule reaches.

    ``read(start, stop)``: the values at 0-based ranks [start, stop);
    ``counts(a, b)``: (#{x ≤ a}, #{x < b}, Σ_{a < x < b} k(x)), k the shifted
    fixed-point term of ``means.fixed_point_units`` (a backend's ``range_sum``).
    ``lower``/``upper``: the public bounds the values are clamped to.
    """

    ndim = 1
    #: ranks read around a missing one (a window costs about as much as a single value)
    block = 512

    def __init__(self, n: int, lower: float, upper: float, read: Any, counts: Any) -> None:
        self.size = int(n)
        self.lower, self.upper = float(lower), float(upper)
        self._read, self._counts = read, counts
        self._segments: list[tuple[int, np.ndarray]] = []  # (start, values), disjoint, sorted
        self.reads = 0  # statements issued (read windows and counts), for tests and progress

    def __len__(self) -> int:
        return self.size

    def _fetch(self, start: int, stop: int) -> None:
        start, stop = max(0, start), min(self.size, stop)
        if start >= stop:
            return
        vals = np.asarray(self._read(start, stop), dtype=np.float64)
        self.reads += 1
        segs = sorted([*self._segments, (start, vals)], key=lambda t: t[0])
        merged: list[tuple[int, np.ndarray]] = []
        for s0, v in segs:
            if merged and s0 <= merged[-1][0] + merged[-1][1].size:
                m0, mv = merged[-1]
                tail = v[m0 + mv.size - s0 :]
                merged[-1] = (m0, np.concatenate([mv, tail]) if tail.size else mv)
            else:
                merged.append((s0, v))
        self._segments = merged

    def take(self, pos: np.ndarray) -> np.ndarray:
        """Values at 0-based positions 0 ≤ pos < n (read from the engine where missing)."""
        pos = np.asarray(pos, dtype=np.int64)
        for _ in range(2):
            out = np.empty(pos.shape, dtype=np.float64)
            missing = np.ones(pos.shape, dtype=bool)
            for s0, v in self._segments:
                hit = (pos >= s0) & (pos < s0 + v.size)
                out[hit] = v[pos[hit] - s0]
                missing &= ~hit
            if not missing.any():
                return out
            gone = np.unique(pos[missing])
            # one read per run of missing positions (gaps of less than a block are bridged)
            cuts = np.flatnonzero(np.diff(gone) > self.block) + 1
            for run in np.split(gone, cuts):
                lo, hi = int(run[0]), int(run[-1]) + 1
                pad = max(self.block, (hi - lo) // 2)
                self._fetch(lo - pad, hi + pad)
        raise AssertionError("positions outside [0, n) were requested")  # pragma: no cover

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            start, stop, step = key.indices(self.size)
            return self.take(np.arange(start, stop, step))
        if isinstance(key, int | np.integer):
            k = int(key) + (self.size if key < 0 else 0)
            return float(self.take(np.array([k]))[0])
        return self.take(np.asarray(key))

    def searchsorted(self, v: float, side: str = "left") -> int:
        """#{x < v} (``side="left"``) or #{x ≤ v}, as ``np.searchsorted`` on the array."""
        le, lt, _ = self._counts(float(v), float(v))
        self.reads += 1
        return int(lt if side == "left" else le)

    def units_sum(self, first: int, last: int, units: Any) -> int:
        """Σ k(x_i) over 1-based ranks first ≤ i ≤ last (1 ≤ first ≤ last ≤ n), exact:
        the rows strictly between x_first and x_last, plus the ties at either end.
        ``units(v)``: k of one value."""
        a, b = self[first - 1], self[last - 1]
        if a == b:
            return (last - first + 1) * units(a)
        le_a, lt_b, inner = self._counts(a, b)
        self.reads += 1
        return inner + (le_a - (first - 1)) * units(a) + (last - lt_b) * units(b)


def pair_local_sensitivity(
    x: np.ndarray, lower: float, upper: float, i_max: int, j_min: int, k: int
) -> float:
    """max over pairs with j − i = k + d0 of x_j − x_i (unscaled A^(k)); O(k), at most O(n)."""
    n = x.size
    d0 = j_min - i_max + 1
    if k + d0 >= n + 1:  # the pair (0, n + 1) is in reach
        return float(upper - lower)
    i = np.arange(i_max - k - 1, i_max + 1)
    j = i + k + d0
    return float(np.max(_X(x, lower, upper, j) - _X(x, lower, upper, i)))


def pair_smooth_sensitivity_naive(
    x: np.ndarray, lower: float, upper: float, i_max: int, j_min: int, beta: float
) -> float:
    """max_k e^{−kβ} A^(k), every k from 0 to n: the O(n²) definition (reference)."""
    n = x.size
    d0 = j_min - i_max + 1
    best = 0.0
    for k in range(0, n + 2 - d0):
        a_k = pair_local_sensitivity(x, lower, upper, i_max, j_min, k)
        best = max(best, math.exp(-k * beta) * a_k)
    return best


def _change_points(x: np.ndarray, s: int, e: int) -> np.ndarray:
    """0-based positions c in [s, e − 1) with x[c] != x[c + 1], for sorted x.

    Bisection skips constant blocks in O(1) (sorted: x[s] == x[e−1] means the
    block is constant), so the cost is O(#runs · log n) plus O(e − s) at most.
    """
    out: list[np.ndarray] = []
    stack = [(s, e)]
    while stack:
        a, b = stack.pop()
        if b - a < 2 or x[a] == x[b - 1]:
            continue
        if b - a <= _LEAF:
            seg = x[a:b]
            out.append(np.flatnonzero(seg[1:] != seg[:-1]) + a)
            continue
        mid = (a + b) // 2
        stack.append((mid, b))  # pairs c in [mid, b − 1)
        stack.append((a, mid + 1))  # pairs c in [a, mid)
    if not out:
        return np.empty(0, dtype=np.int64)
    return np.sort(np.concatenate(out))


def _i_candidates(x: np.ndarray, a: int, b: int) -> np.ndarray:
    """1-based indices in [a, b] that end a run of equal x_i (plus b itself)."""
    parts = []
    if a == 0:
        parts.append(np.array([0]))
        a = 1
    if a <= b:
        parts.append(_change_points(x, a - 1, b) + 1)
        parts.append(np.array([b]))
    return np.concatenate(parts).astype(np.int64)


def _j_candidates(x: np.ndarray, a: int, b: int) -> np.ndarray:
    """1-based indices in [a, b] that start a run of equal x_j (plus a itself)."""
    n = x.size
    parts = [np.array([a])]
    top = min(b, n)
    if a <= top:
        parts.append(_change_points(x, a - 1, top) + 2)
    if b == n + 1 and a <= n:
        parts.append(np.array([n + 1]))
    return np.concatenate(parts).astype(np.int64)


def _pair_values(xi, ii, xj, jj, beta, d0, corner):
    with np.errstate(divide="ignore"):
        v = np.log(xj - xi) - beta * (jj - ii - d0).astype(np.float64)
    if corner is not None:
        v = np.where((ii == corner[0]) & (jj == corner[1]), -np.inf, v)
    return v


def _max_over_pairs(xi, ii, xj, jj, beta, d0, corner) -> float:
    """max over all (row, col) of log(xj − xi) − β(jj − ii − d0).

    Rows ascending in ii, columns ascending in jj.  Monotone argmax divide and
    conquer, vectorised level by level: the mid row of each pending block of
    rows is maximised over its column range, and the argmax splits the
    column range for the two halves.  O((p + q) log p) evaluations.
    """
    p, q = xi.size, xj.size
    if p * q <= _DENSE:
        v = _pair_values(xi[:, None], ii[:, None], xj[None, :], jj[None, :], beta, d0, corner)
        return float(v.max())
    best = -np.inf
    r_lo = np.array([0])
    r_hi = np.array([p - 1])
    c_lo = np.array([0])
    c_hi = np.array([q - 1])
    while r_lo.size:
        mid = (r_lo + r_hi) // 2
        lengths = c_hi - c_lo + 1
        starts = np.cumsum(lengths) - lengths
        total = int(lengths.sum())
        seg = np.repeat(np.arange(mid.size), lengths)
        cols = np.arange(total) - starts[seg] + c_lo[seg]
        rows = mid[seg]
        v = _pair_values(xi[rows], ii[rows], xj[cols], jj[cols], beta, d0, corner)
        segmax = np.maximum.reduceat(v, starts)
        best = max(best, float(segmax.max()))
        # the largest argmax of each mid row (monotone in the row)
        pos = np.where(v == segmax[seg], np.arange(total), -1)
        opt = cols[np.maximum.reduceat(pos, starts)]
        left = r_lo <= mid - 1
        right = mid + 1 <= r_hi
        r_lo, r_hi, c_lo, c_hi = (
            np.concatenate([r_lo[left], mid[right] + 1]),
            np.concatenate([mid[left] - 1, r_hi[right]]),
            np.concatenate([c_lo[left], opt[right]]),
            np.concatenate([opt[left], c_hi[right]]),
        )
    return best


def _distance_to_change(x: np.ndarray, lower: float, upper: float, i_max: int, j_min: int) -> int:
    """Smallest width at which the window holds a pair with x_j > x_i (bisection)."""
    n = x.size
    vi = x[i_max - 1]
    below = _searchsorted(x, vi, "left")  # X index of the last x_i < vi (0: lower)
    vj = x[j_min - 1]
    above = _searchsorted(x, vj, "right") + 1  # first X index with x_j > vj
    dist = []
    if below > 0 or lower < vi:
        dist.append(i_max - below)
    if above <= n or upper > vj:
        dist.append(min(above, n + 1) - j_min)
    return min(dist) if dist else n + 1


def pair_log_smooth_sensitivity(
    x: np.ndarray, lower: float, upper: float, i_max: int, j_min: int, beta: float
) -> float:
    """log of max over pairs i ≤ i_max ≤ j_min ≤ j of e^{−β(j−i−d0)}(x_j − x_i).

    ``x`` sorted and clamped to [lower, upper]; indices 1-based with
    1 ≤ i_max ≤ j_min ≤ n.  Exact (see the module docstring); −inf if 0.
    """
    n = x.size
    log_range = math.log(upper - lower)
    if beta == 0:
        return log_range  # the pair (0, n + 1)
    d0 = j_min - i_max + 1
    corner = (i_max, j_min) if j_min > i_max else None  # k = −1: not a pair
    width = 32
    best = -math.inf
    while True:
        i_lo = max(0, i_max - width)
        j_hi = min(n + 1, j_min + width)
        ii = _i_candidates(x, i_lo, i_max)
        jj = _j_candidates(x, j_min, j_hi)
        if corner is not None:
            # the corner is excluded, so the runs through it need their next index
            if i_max - 1 >= i_lo:
                ii = np.unique(np.append(ii, i_max - 1))
            if j_min + 1 <= j_hi:
                jj = np.unique(np.append(jj, j_min + 1))
        xi = _X(x, lower, upper, ii)
        xj = _X(x, lower, upper, jj)
        best = max(best, _max_over_pairs(xi, ii, xj, jj, beta, d0, corner))
        if i_lo == 0 and j_hi == n + 1:
            return best
        # every pair outside the window has k ≥ width
        if log_range - beta * width <= best:
            return best
        if best > -math.inf:
            need = math.ceil((log_range - best) / beta)
        else:
            # no positive difference yet: jump to the nearest change of value
            need = _distance_to_change(x, lower, upper, i_max, j_min)
        width = int(min(max(2 * width, need), n + 1))


# -- add/remove neighbours ----------------------------------------------------
#
# Under add/remove the target index moves with the size: x_m with
# m = idx(N) (idx(N) = max(1, ⌈qN⌉) for a quantile, 1 for the minimum, N for
# the maximum).  For a dataset y of size N' and p = idx(N'):
#
# * adding a value gives size N' + 1 and index idx(N' + 1) ∈ {p, p + 1}; the
#   new p-th or (p+1)-th value can be anything in [y_{p−1}, y_p] resp.
#   [y_p, y_{p+1}], so the change is at most the "down gap" y_p − y_{p−1}
#   (index unchanged) or the "up gap" y_{p+1} − y_p (index + 1);
# * removing a value gives index idx(N' − 1) ∈ {p − 1, p}: the down gap
#   (index − 1) or the up gap (index unchanged).
#
# So LS(y) is the up gap, the down gap, or both, depending on N' only (for the
# median of an even N' only the up gap, of an odd N' only the down gap), with
# y_i = lower for i < 1 and upper for i > N' (the empty dataset has the value
# y_{idx(0)}: upper for quantiles and the minimum, lower for the maximum).
#
# A^(k)(x): y differs from x by a additions and r removals, a + r ≤ k,
# N' = N + a − r.  Let y_p = x_i's neighbourhood: with i the largest index
# with x_i ≤ y_p and j the smallest with x_j ≥ y_{p+1}, the x's strictly
# between must be removed and y keeps exactly p values ≤ y_p, so
# i ∈ [p − a, p] and j ≤ i + r + 1 (i > p needs i − p removals below, which
# only shortens the pair).  Hence
#
#     up gap of y ≤ U(a, r) = max_{p − a ≤ i ≤ p} (x_{i+r+1} − x_i),
#
# the down gap the same with p − 1, and the bound is reached by adding a
# values at ``lower`` and removing the r values x_{i+1..i+r} (checked against
# breadth-first enumeration in the tests).  For fixed r the ranges
# [p − a, p] grow on both sides as a grows (p moves by 0 or 1 per addition),
# so all a are handled by running maxima: O(K²) for distances up to K.


def _ar_row(x: np.ndarray, lower: float, upper: float, index, r: int, a_max: int):
    """(a, bound) for r removals and a = 0..a_max additions (sizes ≥ 0 only)."""
    n = x.size
    a = np.arange(a_max + 1)
    size = n + a - r
    ok = size >= 0
    a, size = a[ok], size[ok]
    if a.size == 0:
        return a, np.zeros(0)
    p = index(size)
    # every pair this r can use lies in [p_min − a_max − 1, p_max + r + 1]:
    # a constant stretch of the sorted data (ties) contributes 0, skip it
    span = np.array([int(p.min()) - int(a.max()) - 1, int(p.max()) + r + 1])
    ends = _X(x, lower, upper, span)
    if ends[1] == ends[0]:
        return a, np.zeros(a.size)
    step_add = index(size + 1) - p
    step_rem = np.where(size >= 1, index(np.maximum(size - 1, 0)) - p, 1)
    up = (step_add == 1) | (step_rem == 0)
    down = (step_add == 0) | (step_rem == -1)
    val = np.zeros(a.size)
    for need, shift in ((up, 0), (down, 1)):
        if not need.any():
            continue
        right = p - shift
        left = right - a
        lo_i, hi_i = int(left.min()), int(right.max())
        idx = np.arange(lo_i, hi_i + 1)
        d = _X(x, lower, upper, idx + r + 1) - _X(x, lower, upper, idx)
        # ranges [left, right] are nested and grow with a: running maxima
        l0, r0 = int(left[0]) - lo_i, int(right[0]) - lo_i
        core = d[l0 : r0 + 1].max()
        lcum = np.maximum.accumulate(d[:l0][::-1]) if l0 > 0 else np.empty(0)
        rcum = np.maximum.accumulate(d[r0 + 1 :]) if r0 + 1 < d.size else np.empty(0)
        lsteps = l0 - (left - lo_i)  # how far each range reaches left of l0
        rsteps = (right - lo_i) - r0
        g = np.full(a.size, core)
        has = lsteps > 0
        g[has] = np.maximum(g[has], lcum[lsteps[has] - 1])
        has = rsteps > 0
        g[has] = np.maximum(g[has], rcum[rsteps[has] - 1])
        val = np.where(need, np.maximum(val, g), val)
    return a, val


def _ar_gap_table(x: np.ndarray, lower: float, upper: float, index, K: int) -> np.ndarray:
    """best[k] = max over a + r = k of the larger active gap bound (see above)."""
    best = np.zeros(K + 1)
    for r in range(K + 1):
        a, val = _ar_row(x, lower, upper, index, r, K - r)
        if a.size:
            np.maximum.at(best, a + r, val)
    return best


def _ar_log_smooth_upto(
    x: np.ndarray, lower: float, upper: float, index, K: int, beta: float
) -> float:
    """max_{a + r ≤ K} (log bound(a, r) − β(a + r)), skipping what cannot win."""
    log_range = math.log(upper - lower)
    best = -math.inf
    for r in range(K + 1):
        if log_range - beta * r <= best:
            break  # every (a, r) left costs ≥ r
        reach = K - r if best == -math.inf else min(K - r, int((log_range - best) / beta) - r)
        if reach < 0:
            continue
        a, val = _ar_row(x, lower, upper, index, r, reach)
        if a.size:
            with np.errstate(divide="ignore"):
                best = max(best, float(np.max(np.log(val) - beta * (a + r))))
    return best


class _OrderStatistic(Query):
    """x_m of the sorted clamped data; ``neighbours`` "add_remove" (default) or "substitution"."""

    neighbours = "add_remove"
    supported_relations = ("add_remove", "substitution")
    exact: ClassVar[bool] = True

    def __init__(
        self,
        lower: float,
        upper: float,
        *,
        neighbours: str = "add_remove",
        drop_missing: bool = False,
    ) -> None:
        self.lower, self.upper = _validate.bounds(lower, upper)
        finite_range(self.lower, self.upper)
        self.neighbours = relation(neighbours, self.supported_relations)  # type: ignore[assignment]
        self.drop_missing = bool(drop_missing)

    @abstractmethod
    def index(self, n: int) -> int:
        """The 1-based index m of the statistic among n sorted values."""

    def index_array(self, sizes: np.ndarray) -> np.ndarray:
        """``index`` for an integer array of sizes (subclasses vectorise)."""
        return np.array([self.index(int(v)) for v in sizes], dtype=np.int64)

    def prepare_key(self) -> tuple:
        # every order statistic (and the trimmed mean) with these bounds shares the sort
        return ("sorted_clamped", self.lower, self.upper, self.drop_missing)

    def _prepare(self, data: Any) -> Any:
        if isinstance(data, SortedColumn):  # an engine's column, sorted and clamped there
            return data
        if self.neighbours == "add_remove" and _is_empty(data):
            return np.empty(0)  # the empty table neighbours every one-row table
        return sorted_clamped(data, self.lower, self.upper, self.drop_missing)

    @property
    def global_sensitivity(self) -> float:
        return self.upper - self.lower

    def value(self, data: Any) -> float:
        x = self._load(data)
        m = self.index(x.size)
        return float(_X(x, self.lower, self.upper, np.array([m]))[0])

    def max_distance(self, data: Any) -> float:
        return float(self._load(data).size)  # A^(k) = upper − lower from k = n on

    def _ar_table(self, x: np.ndarray, K: int) -> np.ndarray:
        best = _ar_gap_table(x, self.lower, self.upper, self.index_array, K)
        return np.maximum.accumulate(best)

    def local_sensitivity(self, data: Any, distance: int = 0) -> float:
        k = _distance(distance)
        x = self._load(data)
        if self.neighbours == "add_remove":
            if k >= x.size:  # every record removed: the empty table's gap is upper − lower
                return float(self.upper - self.lower)
            return float(self._ar_table(x, k)[k])
        m = self.index(x.size)
        return pair_local_sensitivity(x, self.lower, self.upper, m, m, k)

    def log_smooth_sensitivity(self, data: Any, beta: float) -> float:
        """log SS_β(x), exact even where SS underflows."""
        beta = _validate.nonnegative(beta, "beta")
        x = self._load(data)
        if self.neighbours == "add_remove":
            return self._ar_log_smooth(x, beta)
        m = self.index(x.size)
        return pair_log_smooth_sensitivity(x, self.lower, self.upper, m, m, beta)

    def _ar_log_smooth(self, x: np.ndarray, beta: float) -> float:
        """log max(max_{k ≤ K} e^{−kβ} A^(k)(x), e^{−(K+1)β}(upper − lower)).

        K = ``_ar_cap(beta)`` is public (β only, never n), so this is a
        β-smooth upper bound on LS for every input: the first term is smooth
        up to distance K, the constant covers every larger k.  It equals the
        exact SS_β whenever e^{−(K+1)β}(upper − lower) is below the first
        term — always for K ≥ n (A^(n) = upper − lower: every row removed),
        and with a relative slack below 2^−60 for β ≥ 0.01.  The window
        doubles from 64 until no larger k can win: O(K²) at most.
        """
        log_range = math.log(self.upper - self.lower)
        n = x.size
        if beta == 0:
            return log_range
        cap = _ar_cap(beta)
        K = min(64, n, cap)
        while True:
            best = _ar_log_smooth_upto(x, self.lower, self.upper, self.index_array, K, beta)
            if K >= n:
                return max(best, log_range - beta * n)
            if log_range - beta * (K + 1) <= best:
                return best
            if K >= cap:
                # beyond the cap: A^(k)_add/remove ≤ A^(k)_substitution (docs/queries.md),
                # itself smooth under add/remove, and ≤ the range
                m = self.index(n)
                sub = pair_log_smooth_sensitivity(x, self.lower, self.upper, m, m, beta)
                return max(best, min(log_range - beta * (K + 1), sub))
            K = min(n, 2 * K, cap)

    def smooth_sensitivity(self, data: Any, beta: float) -> float:
        """SS_β(x) = max_k e^{−kβ} A^(k)(x), exact."""
        return math.exp(self.log_smooth_sensitivity(data, beta))

    def parameters(self) -> dict[str, Any]:
        return {"lower": self.lower, "upper": self.upper, "neighbours": self.neighbours}


#: most distances examined exactly for add/remove smooth sensitivity
AR_MAX_DISTANCE = 4096


def _ar_cap(beta: float) -> int:
    """Public cap K on the exact scan: e^{−Kβ} ≤ 2^−60, at most ``AR_MAX_DISTANCE``."""
    return int(min(AR_MAX_DISTANCE, math.ceil(60 * math.log(2) / beta)))


def _is_empty(data: Any) -> bool:
    if isinstance(data, list | tuple):
        return len(data) == 0
    return getattr(data, "size", 1) == 0 and getattr(data, "ndim", 1) == 1


def _distance(distance: Any) -> int:
    if isinstance(distance, bool) or not isinstance(distance, int | np.integer) or distance < 0:
        raise ParameterError(f"distance must be an integer >= 0, got {distance!r}")
    return int(distance)


class Quantile(_OrderStatistic):
    """The q-quantile x_m, m = max(1, ⌈q·n⌉) (``quantile_index``); q in (0, 1)."""

    name = "quantile"

    def __init__(
        self,
        q: float,
        lower: float,
        upper: float,
        *,
        neighbours: str = "add_remove",
        drop_missing: bool = False,
    ) -> None:
        self.q = _validate.in_open_interval(q, "q", 0.0, 1.0)
        super().__init__(lower, upper, neighbours=neighbours, drop_missing=drop_missing)

    def index(self, n: int) -> int:
        return quantile_index(self.q, n)

    def index_array(self, sizes: np.ndarray) -> np.ndarray:
        num, den = Fraction(repr(float(self.q))).as_integer_ratio()
        sizes = np.asarray(sizes)
        if sizes.size and num * int(sizes.max()) >= 1 << 62:
            return super().index_array(sizes)
        return np.maximum(1, -((-num * sizes.astype(np.int64)) // den))

    def parameters(self) -> dict[str, Any]:
        return {"q": self.q, **super().parameters()}


class Median(Quantile):
    """The median x_m, m = ⌈n/2⌉: the lower median for even n (NRS 2007 §3.1)."""

    name = "median"

    def __init__(
        self,
        lower: float,
        upper: float,
        *,
        neighbours: str = "add_remove",
        drop_missing: bool = False,
    ) -> None:
        super().__init__(0.5, lower, upper, neighbours=neighbours, drop_missing=drop_missing)

    def parameters(self) -> dict[str, Any]:
        return _OrderStatistic.parameters(self)


class Min(_OrderStatistic):
    """The minimum x_1 (NRS 2007: A^(k) = max(x_{k+1} − lower, x_{k+2} − x_1))."""

    name = "min"

    def index(self, n: int) -> int:
        return 1

    def index_array(self, sizes: np.ndarray) -> np.ndarray:
        return np.ones(np.shape(sizes), dtype=np.int64)


class Max(_OrderStatistic):
    """The maximum x_n (mirror image of ``Min``)."""

    name = "max"

    def index(self, n: int) -> int:
        return n

    def index_array(self, sizes: np.ndarray) -> np.ndarray:
        return np.asarray(sizes, dtype=np.int64)
