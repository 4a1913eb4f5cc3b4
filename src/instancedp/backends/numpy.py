"""The in-memory reference backend: every primitive on a 1-D numpy array.

This module is the *definition* each engine is tested against; the SQL
engines (``sql.py``) reproduce it with the same IEEE-double operations.

Public policies applied before any primitive (they depend on public
parameters only):

- **missing values**: NULL/None and NaN rows are *missing*.  ``missing="drop"``
  removes them; a float ``missing=v`` replaces them by ``v`` (then clamped like
  any row).  ±inf are values, clamped to the bounds like any other, except
  under ``missing="finite"``, which keeps the finite rows only (NULL, NaN and
  ±inf dropped: the owner mode's ``drop_missing=True``, as the in-memory
  reader :func:`instancedp.io.read_column` does).
- **signed zero**: every clamped value is normalised by ``+ 0.0`` so that −0.0
  and 0.0 are one value in every engine (JSON prints them differently).

The exact clamped sum uses the public fixed-point grid (derived from the
bounds only): with M = max(|lo|, |hi|) — or D = fl(hi − lo) when the origin is
shifted to lo — and E the smallest integer with 2^E ≥ M, s = 52 − E; each row
contributes k_i = trunc(clamp(x_i)·2^s) (|k_i| ≤ 2^52, a multiplication by a
power of two, so exact or, below 1, truncated to 0 identically everywhere) and
S = Σ k_i is an exact integer.  The statistic is S·2^−s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..queries import means as _means

__all__ = [
    "Missing",
    "apply_missing",
    "check_bounds",
    "check_edges",
    "fixed_point_exponent",
    "exact_clamped_sum",
    "clamp",
    "count",
    "count_and_sum",
    "histogram",
    "histogram_stats",
    "log_bins",
    "order_window",
    "range_sum",
    "range_values",
    "top_counts",
]

Missing = str | float

_SPLIT = 26  # int64 partial sums of k >> 26 and k & (2^26 − 1) are exact for n < 2^37


def check_missing(missing: Missing) -> Missing:
    """``"drop"``, ``"finite"`` or a finite float fill value."""
    if isinstance(missing, str):
        if missing not in ("drop", "finite"):
            raise ParameterError(
                f"missing must be 'drop', 'finite' or a finite number, got {missing!r}",
                parameter="missing",
                allowed="'drop', 'finite' or a finite number",
            )
        return missing
    v = float(missing)
    if not math.isfinite(v):
        raise ParameterError(
            f"missing must be 'drop' or a finite number, got {missing!r}",
            parameter="missing",
            allowed="'drop' or a finite number",
        )
    return v


def check_bounds(lo: float, hi: float) -> tuple[float, float]:
    """Finite public bounds lo ≤ hi (as doubles)."""
    lo, hi = float(lo), float(hi)
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
        raise ParameterError(
            f"bounds must be finite with lower <= upper, got [{lo!r}, {hi!r}]",
            parameter="bounds",
            allowed="finite lower <= upper",
        )
    return lo, hi


def check_edges(edges: Sequence[float]) -> np.ndarray:
    """At least two finite, strictly increasing public cell edges."""
    e = np.asarray(edges, dtype=np.float64)
    # compared pairwise, not by np.diff: the gap between ±1e308 overflows to inf
    if e.ndim != 1 or e.size < 2 or not np.all(np.isfinite(e)) or np.any(e[1:] <= e[:-1]):
        raise ParameterError(
            "edges must be at least two finite, strictly increasing numbers",
            parameter="edges",
            allowed="finite, strictly increasing, length >= 2",
        )
    return e + 0.0


def check_ranks(start: int, stop: int) -> tuple[int, int]:
    start, stop = int(start), int(stop)
    if stop < start:
        raise ParameterError(
            f"rank window [start, stop) must have start <= stop, got [{start}, {stop})",
            parameter="stop",
            allowed=f">= start ({start})",
        )
    return start, stop


def fixed_point_exponent(lo: float, hi: float, shift: bool = False) -> int:
    """s = 52 − E with E the smallest integer such that 2^E ≥ M (M = max(|lo|, |hi|));
    with ``shift`` M = fl(hi − lo).  The rule's one home is
    :func:`instancedp.queries.means.fixed_point_exponent`; this adds the
    backends' bound check."""
    lo, hi = check_bounds(lo, hi)  # lo == hi allowed here (every term is then equal)
    m = (hi - lo) if shift else max(abs(lo), abs(hi))
    if not math.isfinite(m):
        raise ParameterError(
            "the bounds' range hi − lo overflows a double",
            parameter="bounds",
            allowed="hi − lo finite",
        )
    return _means.grid_exponent(m)


def apply_missing(values: Any, missing: Missing = "drop") -> np.ndarray:
    """Float64 rows after the public missing-value policy (NULL/None/NaN are missing)."""
    missing = check_missing(missing)
    x = np.asarray(values)
    if x.dtype == object:
        x = np.array([np.nan if v is None else float(v) for v in x.ravel()], dtype=np.float64)
    x = np.asarray(x, dtype=np.float64).ravel()
    nan = np.isnan(x)
    if missing == "drop":
        return x[~nan]
    if missing == "finite":
        return x[np.isfinite(x)]
    x = x.copy()
    x[nan] = missing
    return x


def clamp(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Clamp to [lo, hi] and normalise −0.0 to 0.0."""
    return np.minimum(np.maximum(x, lo), hi) + 0.0


def count(values: Any, missing: Missing = "drop") -> int:
    """Rows after the missing-value policy."""
    return int(apply_missing(values, missing).size)


def exact_clamped_sum(
    values: Any, lo: float, hi: float, shift: bool = False, missing: Missing = "drop"
) -> int:
    """S = Σ trunc(clamp(x_i)·2^s) (or of (clamp(x_i) − lo)·2^s with ``shift``), exact."""
    return count_and_sum(values, lo, hi, shift, missing)[1]


def count_and_sum(
    values: Any, lo: float, hi: float, shift: bool = False, missing: Missing = "drop"
) -> tuple[int, int]:
    """(n, S) in one pass: the row count and the exact fixed-point sum."""
    lo, hi = check_bounds(lo, hi)
    s = fixed_point_exponent(lo, hi, shift)
    x = clamp(apply_missing(values, missing), lo, hi)
    if shift:
        x = x - lo
    # |x·2^s| < 1 truncates to 0; testing |x| < 2^−s first keeps engines that
    # raise on underflow (PostgreSQL) on the same path.
    k = np.trunc(np.ldexp(x, s))
    k[np.abs(x) < math.ldexp(1.0, -s)] = 0.0
    k = k.astype(np.int64)
    high = k >> _SPLIT
    low = k & ((1 << _SPLIT) - 1)
    total = (int(high.sum(dtype=np.int64)) << _SPLIT) + int(low.sum(dtype=np.int64))
    return int(x.size), total


def histogram(values: Any, edges: Sequence[float], missing: Missing = "drop") -> np.ndarray:
    """Counts per public cell [e_j, e_{j+1}) of the values clamped to [e_0, e_m].

    The last cell is closed, so every row lands in exactly one cell; the number
    of rows below candidate e_j is ``concatenate([[0], cumsum(counts)])[j]``.
    """
    e = check_edges(edges)
    x = clamp(apply_missing(values, missing), float(e[0]), float(e[-1]))
    cell = np.searchsorted(e[1:-1], x, side="right")
    return np.bincount(cell, minlength=e.size - 1).astype(np.int64)


def histogram_stats(
    values: Any, edges: Sequence[float], missing: Missing = "drop"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int | None]:
    """(counts, minima, maxima, S) per public cell of the values clamped to [e_0, e_m]
    (cells as :func:`histogram`; an empty cell's minimum and maximum are NaN).

    S is the exact shifted sum Σ trunc((clamp(x) − e_0)·2^s) on the grid
    s = ``fixed_point_exponent(e_0, e_m, shift=True)`` (None when e_m − e_0
    overflows).  One pass gives a column's count, its clamped sum and a rank
    index: the rows of cell j are the ranks [Σ_{i<j} counts_i, Σ_{i≤j} counts_i),
    all inside [min_j, max_j]."""
    e = check_edges(edges)
    x = clamp(apply_missing(values, missing), float(e[0]), float(e[-1]))
    m = e.size - 1
    cell = np.searchsorted(e[1:-1], x, side="right")
    counts = np.bincount(cell, minlength=m).astype(np.int64)
    mins, maxs = np.full(m, np.inf), np.full(m, -np.inf)
    np.minimum.at(mins, cell, x)
    np.maximum.at(maxs, cell, x)
    mins[counts == 0] = maxs[counts == 0] = np.nan
    try:
        total: int | None = count_and_sum(x, float(e[0]), float(e[-1]), True)[1]
    except ParameterError:
        total = None
    return counts, mins, maxs, total


_MAX = float(np.finfo(np.float64).max)
#: |x| is held in [scale·2^−40, scale·2^1023] inside the label's logarithm, so no
#: engine divides to an underflow or an overflow (PostgreSQL raises on both)
_LABEL_RANGE = (-40, 1023)


def check_grid(beta: float, scale: float) -> tuple[float, float]:
    """A geometric grid's public ratio β > 1 and scale > 0 (finite)."""
    b, s = float(beta), float(scale)
    if not (math.isfinite(b) and b > 1.0):
        raise ParameterError(f"beta must be a finite number > 1, got {beta!r}",
                             parameter="beta", allowed="> 1")
    if not (math.isfinite(s) and s > 0.0):
        raise ParameterError(f"scale must be a finite number > 0, got {scale!r}",
                             parameter="scale", allowed="> 0")
    return b, s


def label_constants(beta: float, scale: float) -> dict[str, float]:
    """The public constants of :func:`log_labels` (the SQL engines bind the same ones)."""
    b, s = check_grid(beta, scale)
    return {"tiny": s * 2.0 ** _LABEL_RANGE[0], "big": s * 2.0 ** _LABEL_RANGE[1],
            "scale": s, "per_step": 1.0 / math.log(b)}


def log_labels(x: np.ndarray, beta: float, scale: float) -> np.ndarray:
    """sign(x)·⌈ln(1 + |x|/scale)/ln β⌉ (|x| held in [tiny, big],
    :data:`_LABEL_RANGE`): about the index k of x's cell of the geometric grid
    v(k) = scale·(β^k − 1) (|x| in (v(k − 1), v(k)]; 0 for x = 0), in the float
    operations the SQL engines use (:meth:`~instancedp.backends.sql.SQLEngine.
    log_bins`).  Only a grouping: rounding may put a row near a cell boundary into
    the next label, and rows beyond ``big`` share one; :func:`log_bins`' users
    never rely on the labels."""
    c = label_constants(beta, scale)
    a = np.minimum(np.maximum(np.abs(x), c["tiny"]), c["big"])
    m = np.ceil(np.log(1.0 + a / c["scale"]) * c["per_step"])
    return (np.sign(x) * m).astype(np.int64)


def bin_cells(
    counts: np.ndarray, mins: np.ndarray, maxs: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Groups of rows (count, min, max each, any order) as ordered, value-disjoint cells
    (edges, counts, mins, maxs): groups sorted by minimum, those whose ranges overlap
    merged, cell c = [e_c, e_{c+1}) with e_c its minimum (e_0 = −max double, the last
    cell closed at the max double; a cell of rows at the max double starts at the
    double before it), so the rows of cell c are the ranks [Σ_{i<c} counts_i,
    Σ_{i≤c} counts_i) — :func:`histogram_stats`' index on these edges."""
    counts = np.asarray(counts, dtype=np.int64)
    keep = counts > 0
    counts = counts[keep]
    lo = np.asarray(mins, dtype=np.float64)[keep] + 0.0
    hi = np.asarray(maxs, dtype=np.float64)[keep] + 0.0
    if counts.size == 0:
        return np.array([-_MAX, _MAX]), np.zeros(1, np.int64), np.full(1, np.nan), np.full(
            1, np.nan)
    order = np.argsort(lo, kind="stable")
    counts, lo, hi = counts[order], lo[order], hi[order]
    reach = np.maximum.accumulate(hi)
    start = np.concatenate(([True], lo[1:] > reach[:-1]))
    top = np.flatnonzero(start)[-1]
    below_top = reach[top - 1] if top > 0 else -np.inf
    if top > 0 and lo[top] >= _MAX and below_top >= np.nextafter(_MAX, 0):
        start[top] = False  # rows at prev(max) and max: one cell
    first = np.flatnonzero(start)
    cell_counts = np.add.reduceat(counts, first)
    cell_mins = lo[first]
    cell_maxs = np.maximum.reduceat(hi, first)
    # a cell of rows at the max double starts at prev(max): no other row reaches it
    edges = np.concatenate(([-_MAX], np.minimum(cell_mins[1:], np.nextafter(_MAX, 0)),
                            [_MAX]))
    return edges, cell_counts.astype(np.int64), cell_mins, cell_maxs


def log_bins(
    values: Any, beta: float, scale: float, missing: Missing = "drop"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rows clamped to ±max double, grouped by :func:`log_labels` (one aggregate,
    whatever the grid's length), as :func:`bin_cells`' ordered cells (edges, counts,
    mins, maxs).  Every row lies in one cell and between its cell's min and max, so
    #{x ≤ t} is exact from the cells wherever no cell has min ≤ t < max
    (:class:`~instancedp.mechanisms.unbounded.BinnedRankCounts`); the grouping itself
    may differ between engines by rows within rounding of a cell boundary."""
    x = clamp(apply_missing(values, missing), -_MAX, _MAX)
    lab = log_labels(x, beta, scale)
    keys, inv = np.unique(lab, return_inverse=True)
    counts = np.bincount(inv, minlength=keys.size)
    mins, maxs = np.full(keys.size, np.inf), np.full(keys.size, -np.inf)
    np.minimum.at(mins, inv, x)
    np.maximum.at(maxs, inv, x)
    return bin_cells(counts, mins, maxs)


def range_values(
    values: Any, lo: float, hi: float, ranges: Sequence[tuple[float, float]],
    missing: Missing = "drop",
) -> np.ndarray:
    """The clamped values lying in any of the closed ``ranges`` [a, b], sorted."""
    lo, hi = check_bounds(lo, hi)
    x = np.sort(clamp(apply_missing(values, missing), lo, hi))
    keep = np.zeros(x.size, dtype=bool)
    for a, b in ranges:
        keep |= (x >= a) & (x <= b)
    return x[keep]


def order_window(
    values: Any, lo: float, hi: float, start: int, stop: int, missing: Missing = "drop"
) -> np.ndarray:
    """Sorted clamped values at 0-based ranks [start, stop).

    Ranks below 0 read lo and ranks ≥ n read hi (the convention x_i = lower
    for i < 1, upper for i > n of the order-statistic sensitivities).
    """
    lo, hi = check_bounds(lo, hi)
    start, stop = check_ranks(start, stop)
    x = np.sort(clamp(apply_missing(values, missing), lo, hi))
    return pad_window(x[max(start, 0) :], start, stop, lo, hi, offset=max(start, 0), n=x.size)


def check_range(a: float, b: float) -> tuple[float, float]:
    """Finite public or rank-found values a ≤ b (the ends of a value range)."""
    a, b = float(a), float(b)
    if not (math.isfinite(a) and math.isfinite(b)) or a > b:
        raise ParameterError(
            f"a value range needs finite a <= b, got [{a!r}, {b!r}]",
            parameter="b",
            allowed=f">= a ({a!r})",
        )
    return a, b


def range_sum(
    values: Any, lo: float, hi: float, a: float, b: float, shift: bool = False,
    missing: Missing = "drop",
) -> tuple[int, int, int]:
    """(#{x ≤ a}, #{x < b}, S) over the clamped rows x, S = Σ_{a < x < b} k(x) with the
    fixed-point terms k of :func:`count_and_sum` (exponent from lo, hi and ``shift``).

    With the sorted window around two ranks this gives the exact sum of the
    rows between them, ties at either end included (the trimmed mean), and
    with a = b the rank of a value (#{x < a}, #{x ≤ a})."""
    lo, hi = check_bounds(lo, hi)
    a, b = check_range(a, b)
    x = clamp(apply_missing(values, missing), lo, hi)
    _, total = count_and_sum(x[(x > a) & (x < b)], lo, hi, shift)
    return int(np.count_nonzero(x <= a)), int(np.count_nonzero(x < b)), total


def pad_window(
    inside: np.ndarray, start: int, stop: int, lo: float, hi: float, *, offset: int, n: int
) -> np.ndarray:
    """Values at ranks [start, stop) from ``inside`` (sorted values at ranks ≥ offset)."""
    out = np.empty(stop - start, dtype=np.float64)
    r = np.arange(start, stop)
    below, above = r < 0, r >= n
    out[below], out[above] = lo, hi
    mid = ~(below | above)
    out[mid] = np.asarray(inside, dtype=np.float64)[r[mid] - offset]
    return out


def top_counts(values: Any, k: int, missing: Missing = "drop") -> list[tuple[Any, int]]:
    """The k most frequent values with their counts: count descending, then value ascending."""
    k = check_k(k)
    x = apply_missing(values, missing) + 0.0
    vals, counts = np.unique(x, return_counts=True)
    order = np.lexsort((vals, -counts))[:k]
    return [(float(vals[i]), int(counts[i])) for i in order]


def check_k(k: int) -> int:
    if int(k) != k or k < 1:
        raise ParameterError(
            f"k must be a positive integer, got {k!r}", parameter="k", allowed=">= 1"
        )
    return int(k)


class MemoryEngine:
    """The primitives over in-memory columns (a 1-D array, or named columns of a frame)."""

    name = "numpy"

    def __init__(
        self, columns: dict[str, Any] | None = None, values: Any = None, *,
        resolutions: dict[str | None, float | None] | None = None,
    ) -> None:
        self._data = dict(columns or {})
        self._single = values
        self.columns = list(self._data)
        # the resolution each column's declared type states (key None: the array), taken
        # by the caller from the container's types, since the arrays here are float64 or
        # were built from lists; a column absent here declares none
        self.resolutions = dict(resolutions or {})

    def _get(self, column: str | None) -> Any:
        from ..errors import SchemaError

        if self._single is not None:
            if column is not None:
                raise SchemaError(f"an array has no column {column!r}")
            return self._single
        if column is None:
            if len(self._data) != 1:
                raise SchemaError(f"name a column: the source has columns {self.columns}")
            column = self.columns[0]
        if column not in self._data:
            raise SchemaError(f"unknown column {column!r}; the columns are {self.columns}")
        return self._data[column]

    def declared_resolution(self, column: str | None = None) -> float | None:
        """The resolution the column's declared type states (:attr:`resolutions`), else
        None; the column is resolved as every primitive resolves it."""
        self._get(column)  # the primitives' SchemaError for an unknown column
        if self._single is not None:
            return self.resolutions.get(None)
        return self.resolutions.get(self.columns[0] if column is None else column)

    def count(self, column: str | None = None, missing: Missing = "drop") -> int:
        return count(self._get(column), missing)

    def count_and_sum(self, column, lo, hi, shift=False, missing="drop") -> tuple[int, int]:
        return count_and_sum(self._get(column), lo, hi, shift, missing)

    def exact_clamped_sum(self, column, lo, hi, shift=False, missing="drop") -> int:
        return exact_clamped_sum(self._get(column), lo, hi, shift, missing)

    def histogram(self, column, edges, missing="drop") -> np.ndarray:
        return histogram(self._get(column), edges, missing)

    def order_window(self, column, lo, hi, start, stop, missing="drop") -> np.ndarray:
        return order_window(self._get(column), lo, hi, start, stop, missing)

    def range_sum(self, column, lo, hi, a, b, shift=False, missing="drop") -> tuple:
        return range_sum(self._get(column), lo, hi, a, b, shift, missing)

    def histogram_stats(self, column, edges, missing="drop") -> tuple:
        return histogram_stats(self._get(column), edges, missing)

    def range_values(self, column, lo, hi, ranges, missing="drop") -> np.ndarray:
        return range_values(self._get(column), lo, hi, ranges, missing)

    def log_bins(self, column, beta, scale, missing="drop") -> tuple:
        return log_bins(self._get(column), beta, scale, missing)

    def top_counts(self, column, k, missing="drop") -> list[tuple[Any, int]]:
        return top_counts(self._get(column), k, missing)
