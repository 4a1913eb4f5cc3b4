"""Bound-free quantiles (no public bounds): an above-threshold scan over a public
geometric grid (Durfee, NeurIPS 2023, "Unbounded differentially private
quantile and maximum estimation"), then the exponential mechanism on the
bracket the scan released.

No bound on the data is needed, and none is made up (no ±1e308, no data
minimum or maximum).

**Stage 1: the scan** (``scan_fraction`` of ε, default 0.3, on a grid of
ratio β = 1.01).  The candidates are the public grid v(j) = origin +
sign(j)·scale·(β^|j| − 1), j an integer (``origin`` = a public lower bound
when the caller has one, and then j ≥ 0; else 0, and the grid runs both
ways).  For a level L, with g(c) = #{x ≤ c} − L·n = (1 − L)·#{x ≤ c} −
L·#{x > c}, non-decreasing in c and crossing 0 at the L-quantile, the scan
releases the first index whose noisy score clears a noisy threshold
(AboveThreshold, Dwork & Roth 2014, Alg. 1; Lyu, Su & Li 2017, Alg. 1 and
Thm. 2):

    ρ ~ Lap(Δ/ε₁),   index j for the first j with g(v(j)) + ν_j ≥ ρ,
    ν_j ~ Lap(2Δ/ε₂),   ε₁ + ε₂ = ε_AT,   ε₁ : ε₂ = 1 : 2^{2/3}  (Lyu et al. §4.2).

g moves by at most Δ = max(L, 1 − L) when a row is added or removed and by
Δ = 1 under substitution, for every candidate at once, which is what
AboveThreshold's proof needs; n appears only inside g, whose Δ covers n's
change.  Only the index is released, so the scan is ε_AT-DP.

Without a public lower bound a first, cheap step decides the side: the sign of
g_½(0) + Lap(Δ_½/ε_s), the median's side (ε_s = ``sign_fraction``·ε, default
0.1·ε, part of the scan's share: ε_AT = (``scan_fraction`` −
``sign_fraction``)·ε).  If it says the median lies above 0, the scan runs
upward from 0; if below, it runs on the negated rows and the index is negated.
The grid ends where its candidates leave the floating-point range; a scan
that reaches the end releases the last finite index (a public rule).

**The scan's level** (``scan_levels``): the one of q and ½ beyond the median
from 0 in the scan's direction — max(q, ½) upward, min(q, ½) on the negated
rows (there the level 1 − min(q, ½) ≥ ½ of −x).  Below the data g = −L·n and
the scan crosses ln(1 + V/scale)/ln β candidates (≈ 800 for data near
V = 4000 at β = 1.01), each a chance that the query noise beats the margin
L·n; a scan for q = 0.1 itself has a fifth of the median's margin and stopped
far below such data (on a stand-in for a public table's body masses, n = 342,
ε = 1: half the releases off by more than 50 %), and the bracket then missed
the data.  With L ≥ ½ the margin before the data is ≥ n/2; past the data the
overshoot is the one a scan for a high q has always had.  The levels depend
on q and the sign step's public output only.  ``scan_quantile`` fixes one
level for both sides (the sweep's variants); ``scan_fraction=1`` (the scan is
the release) looks for q itself, the sign step too.

**Stage 2: the exponential mechanism on the bracket** (the rest of ε, ε₃).
With j the scan's index, (γ_down, γ_up) the bracket of j's side
(``bracket`` for j ≥ 0, ``bracket_below`` for j < 0) and K_d, K_u =
⌈log γ/log β⌉ (public), the bracket is R = [v(j − K_d), v(j + K_u)] (indices
kept inside the grid; with an origin, j − K_d stops at 0): a factor γ either
side of the scan's value, away from 0.  Default (:func:`default_bracket`):
4^max(1, 6·max(q, 1 − q)) toward 0 and 4^max(1, 6·min(q, 1 − q)) away from
0 — the median's bracket is a factor 64 either way, q = 0.1's and q = 0.9's
4^5.4 toward 0 (where the q-quantile lies from a median scan's value or from
an overshoot) and 4 away.  The release is
:class:`~instancedp.mechanisms.quantile.ExponentialQuantile` with the log base
over R on the rows clamped to R (a row-by-row map fixed by R), drawn exactly.
Given R it is ε₃-DP (McSherry & Talwar 2007, Thm. 6);
the pair (j, value) is (ε_s + ε_AT + ε₃)-DP by adaptive sequential composition
(Dwork & Roth 2014, Thm. 3.16 with the second stage chosen from the first's
public output), and the value alone is post-processing of the pair.  The
scan's rank noise and its geometric resolution stop mattering: they only
place R, and inside R the error is the exponential mechanism's
ln(|R|/gap)/ε₃ with |R| a multiple of the quantile's own magnitude rather
than of a loose public range (in the log base's chart a wide side costs
little).  The cost: when the scan stops far from the quantile (small n·ε, a
long stretch of the grid below it: AboveThreshold's early stop, even with the
margin n/2) the bracket misses it and the release is clamped near R's end.
``scan_fraction=1`` is
Durfee's release alone (the scan's value v(j)).

**The defaults** (scan 0.3ε with the sign step's 0.1ε, β = 1.01, the bracket
rule k = 6 of :func:`default_bracket`) were chosen on synthetic columns only,
by a rule declared before the sweep ran (``benchmarks/accuracy.py``,
``bound_free_variants`` and ``SELECTION``: the most cells within 2× of the best
bounded peer in both the mean and the median absolute error, bounds 100× the
data, both relations): first β ∈ {1.01, 1.05, 1.1, 1.25, 1.5, 2}, scan shares
0.4 and 0.6, sign shares 0.1 and 0.05, k ∈ {6, 9, 12} with a scan for q
itself; then the scan's level (q itself, the median, or the level beyond the
median) and the scan's share 0.3 or 0.4, with q = 0.1 cells and a column in
the thousands added (the level beyond the median at 0.3 won by one pair);
``docs/results/accuracy.md`` has the table and reports the real columns.  Why the grid stays
this fine although the scan only places a bracket: a coarser grid has fewer
steps below the data (ln(1 + v/scale)/ln β of them, each a chance to stop
early), which helps medians at small n·ε (the median absolute error improves a
little); but past the data the scan stops with a per-step probability that is
small whenever the threshold's noise is large, so the overshoot K in steps has
a polynomial tail, P(K > k) ≈ ½·e^{−g/b_t}·(k/2)^{−2ε₁/ε₂} (b_t = Δ/ε₁, g the
score past the data), and in value it is β^K: the chance of overshooting by a
given factor grows like (ln β)^{2^{1/3}}, and the mean absolute error with it
(by orders of magnitude from β = 1.05 on).  A bigger share for the scan
leaves the exponential mechanism too little; on the synthetic cells a wider
bracket cost the exponential mechanism more than it caught (on the real ones
k = 9 did better: reported there, not adopted).  No bound-free release escapes a
heavy tail altogether: accuracy at scale V on one n-row table forces an
expected error ≥ (V/2 − max|x|)·e^{−2nε}/2 on every n-row table (group
privacy; ``docs/formulas.md``), so the median absolute error is the statistic
that compares it with bounded releases.

The comparisons g + ν ≥ ρ are made on exactly rounded Laplace draws
(``noise.exact``) drawn in growing batches (32, 64, … 4096 candidates: a scan
usually stops early; the law is the same whatever the batches).  The scan
reads only the counts g at the candidates in order (:class:`RankCounts`): an
array here; out of core one grouped aggregate of the rows' grid cells
(:class:`BinnedRankCounts`, :func:`~instancedp.sources.unbounded_readers`), or
a histogram per batch (:class:`HistogramRankCounts`, with an origin) — the
same integers, so the same draws, bit for bit.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..noise.laplace import Laplace
from ..privacy import PureDP
from ..random import RandomSource, resolve
from .base import Mechanism, Release
from .quantile import ExponentialQuantile, score_sensitivity, sorted_rows

_FIRST_BATCH = 32
_MAX_BATCH = 4096
_AT_SPLIT = 1.0 / (1.0 + 2.0 ** (2.0 / 3.0))  # ε₁ / ε_AT (Lyu, Su & Li 2017, §4.2)
_MAX = np.finfo(np.float64).max


def geometric_candidates(start: int, count: int, beta: float, scale: float) -> np.ndarray:
    """scale·(β^i − 1) for i = start … start + count − 1 (inf past the float range)."""
    i = np.arange(start, start + count, dtype=np.float64)
    with np.errstate(over="ignore"):
        return scale * np.expm1(i * math.log(beta))


def grid_end(beta: float, scale: float) -> int:
    """The last index i whose candidate scale·(β^i − 1) is finite (public)."""
    # a start just below the end (in logs: MAX/scale may overflow), then exact steps
    i = max(0, math.floor((math.log(_MAX) - math.log(scale)) / math.log(beta)) - 2)
    while math.isfinite(float(geometric_candidates(i + 1, 1, beta, scale)[0])):
        i += 1
    while i > 0 and not math.isfinite(float(geometric_candidates(i, 1, beta, scale)[0])):
        i -= 1
    return i


def batches() -> Iterator[tuple[int, int]]:
    """(first index, size) of the scan's batches: 32, 64, … then 4096 at a time."""
    start, size = 0, _FIRST_BATCH
    while True:
        yield start, size
        start += size
        size = min(2 * size, _MAX_BATCH)


class RankCounts:
    """#{x ≤ t} at public thresholds, over sorted rows in memory (the scan's only read).

    Out of core, :class:`HistogramRankCounts` gives the same
    integers from a histogram aggregate."""

    def __init__(self, sorted_rows: np.ndarray) -> None:
        self.x = sorted_rows
        self.n = int(sorted_rows.size)

    def at_most(self, t: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.x, np.asarray(t, dtype=np.float64), side="right")


class HistogramRankCounts(RankCounts):
    """#{x ≤ t} from histogram aggregates at public thresholds (out of core).

    ``histogram(edges)`` counts the rows per cell [e_k, e_{k+1}) (the last
    cell closed) of the rows clamped to [e_0, e_m], as every backend's
    ``histogram`` does.  On doubles #{x ≤ t} = #{x < next(t)}, so the counts
    are cumulative sums of cells cut at next(t): the same integers as
    :class:`RankCounts` on the same rows (a row equal to the largest double
    is counted below next(prev(max)) = max; no grid candidate lands there).
    The first aggregate answers the public thresholds ``first`` (the scan's
    first batch on both sides: :meth:`UnboundedQuantile.first_thresholds`) and
    gives n, the sum of its cells; later batches are one aggregate each."""

    def __init__(self, histogram: Callable[[np.ndarray], np.ndarray], first: np.ndarray) -> None:
        self._histogram = histogram
        self._known: dict[float, int] = {}
        self.n = self._query(np.asarray(first, dtype=np.float64))

    @staticmethod
    def _inner(t: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            u = np.nextafter(t, np.inf)
        return np.isfinite(u) & (u < _MAX) & (t > -np.inf)

    def _query(self, t: np.ndarray) -> int:
        """One aggregate: the counts at ``t`` (remembered) and the number of rows."""
        t = t[self._inner(t)]
        with np.errstate(over="ignore"):
            cuts = np.unique(np.nextafter(t, np.inf))
        edges = np.concatenate(([-_MAX], cuts, [_MAX]))
        cells = np.asarray(self._histogram(edges), dtype=np.int64)
        below = np.concatenate(([0], np.cumsum(cells)))
        for v, k in zip(t.tolist(), np.searchsorted(edges, np.nextafter(t, np.inf)).tolist(),
                        strict=True):
            self._known[v] = int(below[k])
        return int(below[-1])

    def at_most(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        inner = self._inner(t)
        todo = [v for v in t[inner].tolist() if v not in self._known]
        if todo:
            self._query(np.array(todo))
        out = np.where(t == -np.inf, 0, self.n).astype(np.int64)  # next(t) = ±inf: none or all
        out[inner] = [self._known[v] for v in t[inner].tolist()]
        return out


class BinnedRankCounts(HistogramRankCounts):
    """#{x ≤ t} from one grouped aggregate (out of core): the engine's ``log_bins``
    cells (edges, counts, mins, maxs; ordered and value-disjoint, ``numpy.bin_cells``).

    For a threshold t in cell c (e_c ≤ t < e_{c+1}) the rows of earlier cells are
    < e_c ≤ t and those of later cells ≥ e_{c+1} > t; the rows of cell c lie in
    [min_c, max_c], so they all count when max_c ≤ t and none does when min_c > t.
    Only where min_c ≤ t < max_c (a row within rounding of the grid's candidate, or
    a cell whose labels the engine rounded across it) is the count unknown: those
    thresholds, among ``thresholds`` (every threshold the scan can ask,
    :meth:`grid_thresholds`), are read by ONE exact histogram up front
    (:class:`HistogramRankCounts`' cut at next(t)) when they are at most 4,096 (a
    scan batch), else per batch as the histogram reader does; others when asked.
    Whatever the grouping, the integers are those of :class:`RankCounts` on the
    same rows (the engine clamps ±inf to ±max double, which no finite t below it
    separates); a t ≥ prev(max double) that stays unknown reads n, and t = −inf
    reads 0, as the histogram does."""

    def __init__(self, cells: tuple[np.ndarray, ...],
                 histogram: Callable[[np.ndarray], np.ndarray],
                 thresholds: np.ndarray | None = None) -> None:
        self._histogram = histogram
        self._known = {}
        self.edges, self.counts, self.mins, self.maxs = (np.asarray(a) for a in cells)
        self._cum = np.concatenate(([0], np.cumsum(self.counts)))
        self.n = int(self._cum[-1])
        if thresholds is not None:
            # the thresholds some cell straddles: those in [min_c, max_c) of a cell
            t = np.asarray(thresholds, dtype=np.float64)
            if np.any(t[1:] < t[:-1]):
                t = np.sort(t)
            wide = (self.counts > 0) & (self.mins < self.maxs)
            first = np.searchsorted(t, self.mins[wide], side="left")
            last = np.searchsorted(t, self.maxs[wide], side="left")
            todo = np.concatenate([t[i:j] for i, j in zip(first, last, strict=True)
                                   if j > i] or [np.empty(0)])
            if 0 < todo.size <= _MAX_BATCH:  # more: read per scan batch, as the histogram
                super().at_most(todo)

    @staticmethod
    @functools.lru_cache(maxsize=8)
    def grid_thresholds(beta: float, scale: float) -> np.ndarray:
        """Every threshold a scan of the grid can read (public), sorted: 0, the
        candidates scale·(β^i − 1) and, for the negated rows, prev(−candidate)."""
        c = geometric_candidates(0, grid_end(beta, scale) + 1, beta, scale)
        out = np.sort(np.concatenate((c, np.nextafter(-c, -np.inf))))
        out.flags.writeable = False
        return out

    def _from_cells(self, t: np.ndarray) -> np.ndarray:
        """The counts the cells decide, −1 where min_c ≤ t < max_c."""
        m = self.counts.size
        c = np.searchsorted(self.edges, t, side="right") - 1
        below_all = c < 0
        c = np.clip(c, 0, m - 1)
        with np.errstate(invalid="ignore"):  # an empty cell's NaN: it counts fully
            full = (self.counts[c] == 0) | (self.maxs[c] <= t)
            none = self.mins[c] > t
        out = np.where(full, self._cum[c + 1], np.where(none, self._cum[c], -1))
        out[below_all] = 0
        return out.astype(np.int64)

    def _query(self, t: np.ndarray) -> int:
        n = super()._query(t)
        if n != self.n:  # the cells and the histogram disagree on the rows: an engine fault
            raise RuntimeError(f"log_bins counted {self.n} rows, the histogram {n}")
        return n

    def at_most(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        out = self._from_cells(t)
        todo = out < 0
        if todo.any():
            out[todo] = super().at_most(t[todo])
        return out


def _laplace(scale: float, size: int, source: RandomSource) -> np.ndarray:
    if source.secure:
        from ..noise.exact import add_noise

        return np.asarray(add_noise(0.0, scale, Laplace(1.0), size=size, rng=source))
    return source.generator.laplace(0.0, scale, size)


def _scores(counts: RankCounts, c: np.ndarray, q: float, negated: bool) -> np.ndarray:
    """g(c) on the rows (or on the negated rows, for 1 − q: #{−x ≤ c} = n − #{x < −c})."""
    n = counts.n
    if not negated:
        return counts.at_most(c) - q * n
    # #{x < −c} = #{x ≤ prev(−c)}: exact on doubles
    below = counts.at_most(np.nextafter(-c, -np.inf))
    return (n - below) - (1.0 - q) * n


def above_threshold_index(
    counts: RankCounts,
    q: float,
    eps_threshold: float,
    eps_queries: float,
    delta: float,
    beta: float,
    scale: float,
    source: RandomSource,
    *,
    negated: bool = False,
) -> int:
    """The first index i with g(scale·(β^i − 1)) + ν_i ≥ ρ (module docstring).

    ``negated``: scan the negated rows for the (1 − q)-quantile."""
    rho = float(_laplace(delta / eps_threshold, 1, source)[0])
    end = grid_end(beta, scale)
    for start, size in batches():
        size = min(size, end + 1 - start)
        c = geometric_candidates(start, size, beta, scale)
        g = _scores(counts, c, q, negated)
        nu = _laplace(2.0 * delta / eps_queries, c.size, source)
        hit = np.flatnonzero(g + nu >= rho)
        if hit.size:
            return start + int(hit[0])
        if start + size > end:
            return end  # the grid's public end


def above_threshold_scan(
    z: np.ndarray, q: float, eps_threshold: float, eps_queries: float, delta: float,
    beta: float, scale: float, source: RandomSource,
) -> float:
    """The candidate scale·(β^i − 1) of :func:`above_threshold_index` over sorted rows ``z``."""
    i = above_threshold_index(RankCounts(z), q, eps_threshold, eps_queries, delta, beta,
                              scale, source)
    return float(geometric_candidates(i, 1, beta, scale)[0])


def clamped_reader(x: np.ndarray) -> Callable[[float, float], Callable[[int, int], np.ndarray]]:
    """In memory, ``read(lo, hi)`` → the rank reader (``read(start, stop)`` of
    :meth:`~instancedp.mechanisms.quantile.ExponentialQuantile.pieces`) of the sorted
    rows ``x`` clamped to [lo, hi]; out of core the engine's ``order_window`` plays it."""
    from ..backends.numpy import pad_window

    def read(lo: float, hi: float) -> Callable[[int, int], np.ndarray]:
        z = np.clip(x, lo, hi) + 0.0  # sorted stays sorted; −0.0 → 0.0 as the engines

        def window(start: int, stop: int) -> np.ndarray:
            return pad_window(z[max(start, 0):], start, stop, lo, hi,
                              offset=max(start, 0), n=z.size)

        return window

    return read


class UnboundedQuantile(Mechanism):
    """ε-DP q-quantile without bounds (module docstring: a scan, then the
    exponential mechanism on the bracket it released).

    ``UnboundedQuantile(query, epsilon, *, origin=None, beta=1.01, scale=1.0,
    sign_fraction=0.1, scan_fraction=0.3, bracket=None, scan_quantile=None)``;
    ``query`` is a quantile query (only its q and its relation are read: no
    bounds) or the number q, with ``neighbours=`` then naming the relation
    (default add/remove).  ``origin``: a public lower bound, if the caller has
    one (the scan starts there and no sign step is needed).
    ``scan_fraction=1``: Durfee's scan alone, on the grid of ratio ``beta``.
    ``bracket``: a factor > 1, a pair (down, up), or two pairs (for j ≥ 0,
    for j < 0); default :func:`default_bracket`.  ``scan_quantile``: one
    level for the scan on both sides (default: the level beyond the median,
    module docstring).  Guarantee: ``PureDP(epsilon)``.
    """

    name = "unbounded_quantile"
    #: no public bounds: its interval is drawn on a range around the released value
    #: (:func:`instancedp.intervals.bound_free_interval`)
    bounds_free = True

    def __init__(
        self,
        query: Any,
        epsilon: float,
        *,
        neighbours: str | None = None,
        origin: float | None = None,
        beta: float = 1.01,
        scale: float = 1.0,
        sign_fraction: float = 0.1,
        scan_fraction: float = 0.3,
        bracket: Any = None,
        scan_quantile: float | None = None,
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
        self.beta = _greater_than_one(beta, "beta")
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
        try:
            sf = float(scan_fraction)
        except (TypeError, ValueError):
            sf = math.nan
        if not 0.0 < sf <= 1.0:
            raise ParameterError(
                f"scan_fraction must be in (0, 1], got {scan_fraction!r}",
                parameter="scan_fraction", allowed="(0, 1]",
            )
        self.scan_fraction = sf
        if self.sign_fraction >= sf:
            raise ParameterError(
                f"sign_fraction ({self.sign_fraction:g}) must be below scan_fraction ({sf:g}): "
                "the sign step is part of the scan's share of epsilon",
                parameter="sign_fraction", allowed=f"< {sf:g}")
        # the levels the scan looks for (public: q and the shares), upward from 0 and on
        # the negated rows: by default the one of q and ½ beyond the median from 0, so
        # the scan crosses the stretch of grid before the data with a margin ≥ n/2;
        # q itself when the scan is the release
        self.scan_quantile = scan_quantile
        if scan_quantile is None:
            up, down = (max(self.q, 0.5), min(self.q, 0.5)) if sf < 1.0 else (self.q, self.q)
            self.scan_levels, self.sign_q = (up, down), (0.5 if sf < 1.0 else self.q)
        else:
            lv = _validate.in_open_interval(scan_quantile, "scan_quantile", 0.0, 1.0)
            if sf == 1.0 and lv != self.q:
                raise ParameterError(
                    f"scan_quantile ({lv:g}) must be q ({self.q:g}) when the scan is the "
                    "release (scan_fraction=1)", parameter="scan_quantile", allowed=f"{self.q:g}")
            self.scan_levels, self.sign_q = (lv, lv), lv
        if bracket is None:
            bracket = (default_bracket(self.q) if scan_quantile is None
                       else bracket_rule(6.0, self.q, self.scan_levels[0]))
        sides = (bracket if isinstance(bracket, tuple | list) and len(bracket) == 2
                 and all(isinstance(b, tuple | list) for b in bracket) else (bracket, bracket))
        pairs = []
        for one in sides:
            pair = one if isinstance(one, tuple | list) else (one, one)
            if len(pair) != 2:
                raise ParameterError(
                    f"bracket must be a number > 1, a pair (down, up) of them, or two such "
                    f"pairs (for j >= 0, j < 0), got {bracket!r}", parameter="bracket",
                    allowed="> 1")
            pairs.append(tuple(_greater_than_one(b, "bracket") for b in pair))
        self.bracket, self.bracket_below = pairs
        # the bracket's half-widths in grid steps (public), for j ≥ 0 and for j < 0
        self._steps = {side: tuple(max(1, math.ceil(math.log(b) / math.log(self.beta)))
                                   for b in pair)
                       for side, pair in ((1, self.bracket), (-1, self.bracket_below))}
        self._end = grid_end(self.beta, self.scale)

    @property
    def two_stage(self) -> bool:
        return self.scan_fraction < 1.0

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
        p: dict[str, Any] = {
            "q": self.q,
            "epsilon": self.epsilon,
            "neighbours": self.neighbours,
            "bounds": None,
            "grid": grid,
            "sign_fraction": self.sign_fraction,
        }
        if self.two_stage:
            p["stages"] = {
                "scan": {"epsilon": self.scan_fraction * self.epsilon,
                         "sign_quantile": self.sign_q,
                         "quantile": {"upward": self.scan_levels[0],
                                      "negated": self.scan_levels[1]}},
                "exponential": {
                    "epsilon": self.epsilon - self.scan_fraction * self.epsilon,
                    "base": "log",
                    "range": self._range_text(),
                },
                "composition": "sequential",
            }
        return p

    # ε split: sign step, then AboveThreshold's threshold and queries, then the EM
    def _budgets(self) -> tuple[float, float, float]:
        scan = self.scan_fraction * self.epsilon
        eps_sign = self.sign_fraction * self.epsilon
        eps_at = scan - eps_sign
        return eps_sign, _AT_SPLIT * eps_at, (1.0 - _AT_SPLIT) * eps_at

    def value_at(self, j: int) -> float:
        """v(j), the grid's candidate at signed index j (public)."""
        j = int(min(max(j, -self._end), self._end))
        if self.origin is not None:
            return self.origin + float(geometric_candidates(max(j, 0), 1, self.beta, self.scale)[0])
        v = float(geometric_candidates(abs(j), 1, self.beta, self.scale)[0])
        return -v + 0.0 if j < 0 else v

    def _range_text(self) -> str:
        def one(side: int, pair: tuple[float, float]) -> str:
            k = self._steps[side]
            return (f"[v(j - {k[0]}), v(j + {k[1]})] (factors {pair[0]:g} down, "
                    f"{pair[1]:g} up)")

        if self.bracket_below == self.bracket:
            return one(1, self.bracket) + ", j the scan's index"
        return (one(1, self.bracket) + " for j >= 0, " + one(-1, self.bracket_below)
                + " for j < 0, j the scan's index")

    def bracket_for(self, j: int) -> tuple[float, float]:
        """R = [v(j − K_d), v(j + K_u)] (module docstring; public given j)."""
        down, up = self._steps[1 if j >= 0 else -1]
        lo_j = j - down
        if self.origin is not None:
            lo_j = max(lo_j, 0)
        return self.value_at(lo_j), self.value_at(j + up)

    def _rows(self, data: Any) -> np.ndarray:
        return sorted_rows(data, -math.inf, math.inf)

    def first_thresholds(self) -> np.ndarray:
        """The thresholds the release reads first, from public parameters only: 0 and
        the scan's first batch on both sides (one aggregate out of core)."""
        c = geometric_candidates(0, _FIRST_BATCH, self.beta, self.scale)
        if self.origin is not None:
            return self.origin + c
        return np.concatenate(([0.0], c, np.nextafter(-c, -np.inf)))

    def scan_index(self, counts: RankCounts, source: RandomSource) -> int:
        """The scan-only release's signed index j (sign step, then one scan)."""
        eps_sign, eps_t, eps_q = self._budgets()
        up, down = self.scan_levels
        if self.origin is not None:
            return above_threshold_index(_Shifted(counts, self.origin), up, eps_t, eps_q,
                                         self._delta(up), self.beta, self.scale, source)
        g0 = float(counts.at_most(np.zeros(1))[0]) - self.sign_q * counts.n
        noise = float(_laplace(self._delta(self.sign_q) / eps_sign, 1, source)[0])
        if g0 + noise >= 0.0:  # the sign level's quantile is ≤ 0: scan the negated rows
            return -above_threshold_index(counts, down, eps_t, eps_q, self._delta(down),
                                          self.beta, self.scale, source, negated=True)
        return above_threshold_index(counts, up, eps_t, eps_q, self._delta(up), self.beta,
                                     self.scale, source)

    def _delta(self, level: float) -> float:
        """The sensitivity of the score g for ``level`` (max(level, 1 − level) under
        add/remove, 1 under substitution)."""
        return score_sensitivity(level, self.neighbours)

    def second_stage(self, j: int) -> ExponentialQuantile:
        """Stage 2's mechanism given the scan's index j (public)."""
        from ..queries.order import Quantile

        lo, hi = self.bracket_for(j)
        eps = self.epsilon - self.scan_fraction * self.epsilon
        return ExponentialQuantile(Quantile(self.q, lo, hi, neighbours=self.neighbours), eps,
                                   base="log")

    def draw_from(self, counts: RankCounts, read: Callable[[float, float], Callable],
                  source: RandomSource) -> float:
        """One release from the scans' counts and, for stage 2, ``read(lo, hi)`` → the
        ``read(start, stop)`` of :meth:`ExponentialQuantile.pieces` over the rows
        clamped to [lo, hi] (an array here, ``order_window`` out of core)."""
        j = self.scan_index(counts, source)
        if not self.two_stage:
            return self.value_at(j)
        em = self.second_stage(j)
        return em._draw(em.pieces(counts.n, read(em.lower, em.upper)), source)

    def _draw(self, x: np.ndarray, source: RandomSource) -> float:
        return self.draw_from(RankCounts(x), clamped_reader(x), source)

    def release(self, data: Any, rng: Any = None) -> Release:
        source: RandomSource = resolve(rng)
        return self._record(self._draw(self._rows(data), source), source)

    def sample(self, data: Any, size: int, rng: Any = None) -> np.ndarray:
        """``size`` independent releases on one dataset (the release path, repeated)."""
        source = resolve(rng)
        x = self._rows(data)
        return np.array([self._draw(x, source) for _ in range(int(size))])

    # -- the exact law (tests) ----------------------------------------------------------

    def scan_probabilities(self, data: Any, count: int = 64) -> dict[Any, float]:
        """Exact law of the scan-only release's signed index j (numerical quadrature
        over the threshold noise), for tests.

        Theorem (AboveThreshold's law): given ρ the ν_i are independent, so
        P(i | ρ) = Π_{k<i} F(ρ − g_k)·(1 − F(ρ − g_i)) with F the Lap(2Δ/ε₂)
        cdf; integrating against ρ's Lap(Δ/ε₁) density gives P(i)
        (:func:`scan_law`).  The sign step mixes the two scans with P(below) =
        1 − F_s(−g(0)).  The first ``count`` indices either way are listed one by
        one; the rest of the mass is the outcome ``"tail"`` (``("tail",
        "below")`` on the negative side): a coarsening, which can only hide
        loss, never add it.  ``count`` is public, the same for every dataset."""
        x = self._rows(data)
        key = (tuple(x.tolist()), count)
        cache = self.__dict__.setdefault("_law_cache", {})
        if key not in cache:
            cache[key] = self._index_law(x, count)
        return cache[key]

    def _index_law(self, x: np.ndarray, count: int) -> dict[Any, float]:
        counts = RankCounts(x)
        eps_sign, eps_t, eps_q = self._budgets()
        grid = (self.beta, self.scale, count)
        up, down = self.scan_levels
        if self.origin is not None:
            return scan_law(_Shifted(counts, self.origin), up, eps_t, eps_q, self._delta(up),
                            *grid)
        g0 = float(counts.at_most(np.zeros(1))[0]) - self.sign_q * x.size
        p_below = 1.0 - float(Laplace(self._delta(self.sign_q) / eps_sign).cdf(-g0))
        out: dict[Any, float] = {}
        for j, v in scan_law(counts, up, eps_t, eps_q, self._delta(up), *grid).items():
            out[j] = out.get(j, 0.0) + (1.0 - p_below) * v
        for j, v in scan_law(counts, down, eps_t, eps_q, self._delta(down), *grid,
                             negated=True).items():
            k = ("tail", "below") if j == "tail" else -j
            out[k] = out.get(k, 0.0) + p_below * v
        return out

    def output_probabilities(self, data: Any, count: int = 64) -> dict[Any, float]:
        """The scan-only release's exact law (``scan_fraction=1``): value → mass
        (module docstring); two stages: :meth:`stage_laws`."""
        if self.two_stage:
            raise ParameterError(
                "output_probabilities is the scan-only law (scan_fraction=1); the two-stage "
                "release has a density: use stage_laws", parameter="scan_fraction")
        out: dict[Any, float] = {}
        for j, p in self.scan_probabilities(data, count).items():
            k = j if isinstance(j, str | tuple) else self.value_at(j)
            out[k] = out.get(k, 0.0) + p
        return out

    def stage_laws(self, data: Any, count: int = 64) -> list[tuple[Any, float, Any]]:
        """The joint law of the two stages: (j, P(j), law of the value given j) for the
        listed scan indices (:meth:`scan_probabilities`), and (key, mass, None) for
        the scan's tails.  The value is post-processing of the pair (j, value), so
        the pair's privacy loss bounds the value's."""
        x = self._rows(data)
        return [(j, p, None if isinstance(j, str | tuple) else
                 self.second_stage(j).output_distribution(x))
                for j, p in self.scan_probabilities(x, count).items()]


def scan_law(counts: RankCounts, q: float, eps_t: float, eps_q: float, delta: float,
             beta: float, scale: float, tail: int, *, negated: bool = False) -> dict[Any, float]:
    """P(index = i) of :func:`above_threshold_index` for i < ``tail``, and the rest as
    ``"tail"`` (quadrature over ρ; see :meth:`UnboundedQuantile.scan_probabilities`)."""
    n = counts.n
    b_t, b_q = delta / eps_t, 2.0 * delta / eps_q
    c = geometric_candidates(0, tail, beta, scale)
    g = _scores(counts, c, q, negated)
    qq = 1.0 - q if negated else q
    span = 40.0 * max(b_t, b_q)
    # g lies in [−qn, (1 − q)n]: the same quadrature nodes for every table of size n
    r = np.linspace(-qq * n - span, (1 - qq) * n + span, 40_001)
    w = np.exp(-np.abs(r) / b_t) / (2 * b_t)
    F = Laplace(b_q).cdf
    survive = np.ones_like(r)
    law: dict[Any, float] = {}
    for i, gi in enumerate(g):
        below = F(r - gi)  # P(g_i + ν_i < ρ)
        law[i] = float(np.trapezoid(w * survive * (1.0 - below), r))
        survive = survive * below
    law["tail"] = max(0.0, 1.0 - sum(law.values()))
    return law


class _Shifted(RankCounts):
    """Counts of x − origin at thresholds t: #{x ≤ origin + t} (rounded as the sum)."""

    def __init__(self, counts: RankCounts, origin: float) -> None:
        self.inner, self.origin, self.n = counts, origin, counts.n

    def at_most(self, t: np.ndarray) -> np.ndarray:
        return self.inner.at_most(self.origin + np.asarray(t, dtype=np.float64))


def default_bracket(q: float, k: float = 6.0) -> tuple[tuple[float, float], tuple[float, float]]:
    """The default bracket's (down, up) factors around the scan's value, for j ≥ 0 and
    for j < 0 (public: q only).

    The default scan looks, in its own direction (upward from 0, or on the negated
    rows), for the level of q and ½ that lies beyond the median (module
    docstring), so the q-quantile lies toward 0 from the scan's value: at the
    median's scale for a level near 0, or below an overshoot for a level near 1.
    The bracket is 4^max(1, k·max(q, 1 − q)) toward 0 and 4^max(1, k·min(q,
    1 − q)) away from 0 (k = 6) — a factor 64 either way for the median, 4^5.4 toward 0
    and 4 away for q = 0.1 or 0.9 — hence (T, A) for j ≥ 0 and (A, T) for j < 0
    (down and up in value).  A wide side far in rank from q costs the
    exponential mechanism little (:func:`bracket_rule` gives the rule for a
    scan at a fixed level)."""
    toward = 4.0 ** max(1.0, k * max(q, 1.0 - q))
    away = 4.0 ** max(1.0, k * min(q, 1.0 - q))
    return (toward, away), (away, toward)


def bracket_rule(k: float, q: float, level: float) -> tuple[float, float]:
    """(down, up) factors for a scan at a fixed ``level`` on both sides: after a scan
    for q itself, 4^max(1, k·q) below and 4^max(1, k·(1 − q)) above (a scan for a
    high q overshoots, one for a low q stops early); after a scan for the median,
    the mirror, 4^max(1, k·(1 − q)) below and 4^max(1, k·q) above: wide on q's
    side of the median."""
    if level == q:
        return 4.0 ** max(1.0, k * q), 4.0 ** max(1.0, k * (1.0 - q))
    return 4.0 ** max(1.0, k * (1.0 - q)), 4.0 ** max(1.0, k * q)


def _greater_than_one(value: Any, name: str) -> float:
    try:
        b = float(value)
    except (TypeError, ValueError):
        b = math.nan
    if not (math.isfinite(b) and b > 1.0):
        raise ParameterError(
            f"{name} must be a number > 1, got {value!r}", parameter=name, allowed="> 1"
        )
    return b


def bound_free_quantile(q: float, epsilon: float, neighbours: str = "add_remove") -> Mechanism:
    """The release when no bounds are given (the default rule; public: q only): the
    scan-then-bracket :class:`UnboundedQuantile` at every level, its scan looking for a
    level beyond the median.  Chosen on synthetic columns by the bound-free sweep's
    declared rule (``benchmarks/accuracy.py``, ``SELECTION``;
    ``docs/results/accuracy.md``): in the latest run the one-step median
    (:class:`~instancedp.mechanisms.loglog.LogLogQuantile`, still available by name)
    tied with it on the rule's count and lost the tie-break, so the rule reverted it."""
    return UnboundedQuantile(q, epsilon, neighbours=neighbours)
