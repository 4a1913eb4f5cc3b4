"""Several quantiles without public bounds: m bound-free quantiles at ε/m each.

Each level q_j is released by :class:`~instancedp.mechanisms.unbounded.
UnboundedQuantile` (Durfee, NeurIPS 2023: AboveThreshold over a geometric
grid of candidates, looking for the level of q_j and ½ beyond the median from
0, places a bracket, then the exponential mechanism for q_j inside it; no
bound taken from the data or from the float range) at ε/m; the vector
is sorted.  Basic composition of m pure ε/m-DP releases is
ε-DP under the relation each holds for (Dwork & Roth 2014, Thm. 3.16), and
sorting is post-processing.  This is the bound-free variant of the several-
quantile release: the joint and recursive mechanisms need a finite range.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate
from ..errors import ParameterError
from ..privacy import PureDP
from ..random import RandomSource, resolve
from .base import Mechanism, Release
from .quantile import score_sensitivity
from .unbounded import _MAX, RankCounts, UnboundedQuantile, clamped_reader

_RELATIONS = ("add_remove", "substitution")


class UnboundedQuantiles(Mechanism):
    """ε-DP m quantiles without bounds: m Durfee (2023) quantiles at ε/m each, sorted."""

    name = "unbounded_quantiles"

    def __init__(
        self, qs: Any, epsilon: float, *, neighbours: str = "add_remove",
        beta: float | None = None,
    ) -> None:
        from ..queries.quantiles import _levels

        levels = _levels(qs)
        if any(not 0.0 < q < 1.0 for q in levels):
            raise ParameterError(
                f"bound-free quantiles need levels in (0, 1), got {list(levels)!r}",
                parameter="quantiles",
                allowed="(0, 1)",
            )
        self.qs = levels
        self.neighbours = _validate.one_of(neighbours, _RELATIONS, "neighbours")
        self.epsilon = _validate.epsilon(epsilon)
        share = self.epsilon / len(levels)
        # beta: the scan grid's ratio (public; default the single quantile's)
        grid = {} if beta is None else {"beta": beta}
        self._parts = [
            UnboundedQuantile(q, share, neighbours=neighbours, **grid) for q in levels
        ]

    @property
    def m(self) -> int:
        return len(self.qs)

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def parameters(self) -> dict[str, Any]:
        grid = self._parts[0].parameters()["grid"]
        return {
            "qs": list(self.qs),
            "epsilon": self.epsilon,
            "neighbours": self.neighbours,
            "bounds": None,
            "split": {"per_quantile": self.epsilon / self.m, "composition": "basic"},
            "grid": grid,
        }

    def _draw(self, x: np.ndarray, source: RandomSource) -> np.ndarray:
        return np.sort(np.array([p._draw(x, source) for p in self._parts], dtype=np.float64))

    def release(self, data: Any, rng: Any = None) -> Release:
        source = resolve(rng)
        return self._record(self._draw(self._parts[0]._rows(data), source), source)

    def sample(self, data: Any, size: int, rng: Any = None) -> np.ndarray:
        """``size`` outputs (rows) on one dataset, by the release path."""
        source = resolve(rng)
        x = self._parts[0]._rows(data)
        return np.array([self._draw(x, source) for _ in range(int(size))]).reshape(-1, self.m)


# -- describe's range step: a median and a spread on a capped public grid ---------------
#
# describe uses the spread; its location is the one-step median (``loglog.py``), which
# beat this grid median on describe's accuracy cells (``benchmarks/describe_accuracy.py``
# compares the two).
# Both are the exponential mechanism (McSherry & Talwar 2007, Thm. 6) over the CELLS
# of a finite public grid — points scale·(β^i − 1), i = 0 … steps, and their
# negatives for the median — rather than AboveThreshold over the unbounded grid: with
# a hundred candidates the exponential mechanism finds the median's cell at a
# fraction of the scan's ε (a scan pays for every candidate before the data in early
# stops).  Cells, not points: a column inside one cell (N(200, 14) lies in
# (128, 256]) gives every point the same score, but its cell the best one.  The
# price: rows beyond the grid's last point, ±scale·(β^steps − 1), count as beyond it.


def cell_distances(g: np.ndarray) -> np.ndarray:
    """d_k = max(0, G_k, −G_{k+1}) for the cells (P_k, P_{k+1}] of ascending points
    with G_k = #{x ≤ P_k} − n/2: how many ranks cell k is from the median's rank
    (0 for the cell holding it).  Each G_k moves by at most Δ (½ under add/remove, 1
    under substitution) when a row changes, so d_k does too."""
    return np.maximum(0.0, np.maximum(g[:-1], -g[1:]))


def grid_points(beta: float, scale: float, steps: int) -> np.ndarray:
    """scale·(β^i − 1), i = 0 … steps (public)."""
    from .unbounded import geometric_candidates

    return geometric_candidates(0, steps + 1, beta, scale)


def _median_log_weights(g: np.ndarray, epsilon: float, neighbours: str) -> np.ndarray:
    """−ε·|g|/(2Δ) with g = #{…} − n/2 and Δ = ½ (add/remove) or 1 (substitution)."""
    return -epsilon * np.abs(g) / (2.0 * score_sensitivity(0.5, neighbours))


class GridMedian(Mechanism):
    """ε-DP median without bounds in two exponential mechanisms.

    Stage 1 (``grid_fraction`` of ε, ε₁): a cell k of the signed grid P (the points
    ±scale·(β^i − 1), i ≤ ``steps``, ascending: 2·steps cells (P_k, P_{k+1}]) with
    probability ∝ exp(−ε₁·d_k/(2Δ)), d_k the cell's distance in ranks from the
    median (:func:`cell_distances`, G(c) = #{x ≤ c} − n/2): G moves by at most Δ =
    ½ when a row is added or removed (the count by ≤ 1, n/2 by ½) and by 1 under
    substitution, so d_k does and the cell is ε₁-DP (McSherry & Talwar 2007, Thm. 6).
    Stage 2 (ε₂ = ε − ε₁): :class:`~instancedp.mechanisms.quantile.ExponentialQuantile`
    (uniform base) for q = ½ on the rows clamped to the bracket [P_{k − r},
    P_{k + 1 + r}] (r = ``reach`` cells, public given k): ε₂-DP given k.  The pair (j, value)
    is ε-DP by adaptive sequential composition (Dwork & Roth 2014, Thm. 3.16); the
    value is post-processing of it.  n enters only inside the scores.  Exact law:
    :meth:`stage_laws`.

    It reads what :class:`~instancedp.mechanisms.unbounded.UnboundedQuantile` reads
    (the counts at grid points, order windows of the clamped rows), so the same
    readers serve it in memory and out of core (``origin``, ``beta``, ``scale``,
    ``two_stage`` and ``second_stage`` as there)."""

    name = "grid_median"
    origin = None
    two_stage = True
    q = 0.5

    def __init__(self, epsilon: float, *, neighbours: str = "add_remove", beta: float = 2.0,
                 scale: float = 2.0 ** -10, steps: int = 64, grid_fraction: float = 0.5,
                 reach: int = 2) -> None:
        from .unbounded import _greater_than_one

        self.epsilon = _validate.epsilon(epsilon)
        self.neighbours = _validate.one_of(neighbours, _RELATIONS, "neighbours")
        self.beta = _greater_than_one(beta, "beta")
        try:
            self.scale = _validate.finite_positive(scale, "scale")
        except ValueError as err:
            raise ParameterError(str(err), parameter="scale", allowed="> 0") from None
        self.steps = _positive_int(steps, "steps")
        self.reach = _positive_int(reach, "reach")
        self.grid_fraction = _validate.in_open_interval(grid_fraction, "grid_fraction", 0, 1)
        up = grid_points(self.beta, self.scale, self.steps)
        if not np.all(np.isfinite(up)):
            raise ParameterError("the grid leaves the floating-point range: fewer steps",
                                 parameter="steps")
        self.grid = np.concatenate((-up[:0:-1], up)) + 0.0  # ascending points

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def _eps(self) -> tuple[float, float]:
        e1 = self.grid_fraction * self.epsilon
        return e1, self.epsilon - e1

    def parameters(self) -> dict[str, Any]:
        e1, e2 = self._eps()
        return {"q": 0.5, "epsilon": self.epsilon, "neighbours": self.neighbours,
                "bounds": None,
                "grid": {"kind": "geometric", "beta": self.beta, "scale": self.scale,
                         "steps": self.steps, "sides": "both"},
                "stages": {"grid": {"epsilon": e1, "candidates": "the cells (P_k, P_k+1]",
                                    "score": "ranks from the median's rank"},
                           "exponential": {"epsilon": e2, "base": "uniform",
                                           "range": f"[P_(k − {self.reach}), "
                                                    f"P_(k + 1 + {self.reach})]"},
                           "composition": "sequential"}}

    def bracket_for(self, k: int) -> tuple[float, float]:
        last = self.grid.size - 1
        return (float(self.grid[min(max(k - self.reach, 0), last)]),
                float(self.grid[min(max(k + 1 + self.reach, 0), last)]))

    def second_stage(self, j: int) -> Any:
        from ..queries.order import Quantile
        from .quantile import ExponentialQuantile

        lo, hi = self.bracket_for(j)
        return ExponentialQuantile(Quantile(0.5, lo, hi, neighbours=self.neighbours),
                                   self._eps()[1])

    def index_log_weights(self, counts: RankCounts) -> np.ndarray:
        """Stage 1's log weights over the cells (exact: public grid, counts)."""
        g = counts.at_most(self.grid).astype(np.float64) - 0.5 * counts.n
        return _median_log_weights(cell_distances(g), self._eps()[0], self.neighbours)

    def draw_from(self, counts: RankCounts, read: Any, source: RandomSource) -> float:
        """One release from the counts at the grid points and, for stage 2,
        ``read(lo, hi)`` → the rank reader of the rows clamped to [lo, hi]."""
        from ..random import sample_index_from_log_weights

        k = sample_index_from_log_weights(self.index_log_weights(counts), source)
        em = self.second_stage(k)
        return float(em._draw(em.pieces(counts.n, read(em.lower, em.upper)), source))

    def _draw(self, x: np.ndarray, source: RandomSource) -> float:
        return self.draw_from(RankCounts(x), clamped_reader(x), source)

    def release(self, data: Any, rng: Any = None) -> Release:
        source = resolve(rng)
        return self._record(self._draw(_sorted(data), source), source)

    def index_law(self, x: Any) -> dict[int, float]:
        """P(j) of stage 1 on the rows ``x`` (exact softmax of the log weights)."""
        lw = self.index_log_weights(RankCounts(_sorted(x)))
        p = np.exp(lw - lw.max())
        p /= p.sum()
        return {k: float(v) for k, v in enumerate(p)}

    def stage_laws(self, x: Any) -> list[tuple[int, float, Any]]:
        """(j, P(j), law of the value given j): the joint law of the two stages."""
        xs = _sorted(x)
        return [(j, p, self.second_stage(j).output_distribution(xs))
                for j, p in self.index_law(xs).items()]


class CentredCounts(RankCounts):
    """#{x ∈ [c − t, c + t]} at public thresholds t ≥ 0 around a public centre c: the
    counts of |x − c| ≤ t, read from the counts of x (#{x ≤ c + t} − #{x < c − t},
    the ends rounded as floats once, the same on every engine).  Membership of a
    row is a function of that row and public values only (a row-by-row selection),
    and the intervals are nested as t grows, so the counts are non-decreasing in t."""

    def __init__(self, counts: RankCounts, centre: float) -> None:
        self.inner, self.centre, self.n = counts, float(centre), counts.n

    def at_most(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            hi = np.minimum(self.centre + t, _MAX)
            lo = np.nextafter(np.maximum(self.centre - t, -_MAX), -np.inf)
        both = self.inner.at_most(np.concatenate((hi, lo)))  # one read for both ends
        return both[: t.size] - both[t.size:]


def spread_log_weights(counts: RankCounts, centre: float, epsilon: float, neighbours: str,
                       beta: float, scale: float, steps: int) -> np.ndarray:
    """The spread step's log weights over the cells (t_i, t_{i+1}], i < steps, of
    t_i = scale·(β^i − 1): the exponential mechanism (ε-DP, McSherry & Talwar 2007,
    Thm. 6) with the cell's distance in ranks from the median of |x − c| around the
    public centre c (:func:`cell_distances` on #{|x − c| ≤ t_i} − n/2: a row-by-row
    selection, :class:`CentredCounts`), which moves by at most Δ = ½ under add/remove
    (1 under substitution) — the cell of the median absolute deviation."""
    t = grid_points(beta, scale, steps)
    g = CentredCounts(counts, centre).at_most(t).astype(np.float64) - 0.5 * counts.n
    return _median_log_weights(cell_distances(g), epsilon, neighbours)


def spread_index(counts: RankCounts, centre: float, epsilon: float, neighbours: str,
                 beta: float, scale: float, steps: int, source: RandomSource) -> int:
    """One draw of the spread step (:func:`spread_log_weights`)."""
    from ..random import sample_index_from_log_weights

    return sample_index_from_log_weights(
        spread_log_weights(counts, centre, epsilon, neighbours, beta, scale, steps), source)


def spread_law(x: Any, centre: float, epsilon: float, neighbours: str, beta: float,
               scale: float, steps: int) -> np.ndarray:
    """The spread step's exact law P(i) on the rows ``x`` (softmax of its log weights)."""
    lw = spread_log_weights(RankCounts(_sorted(x)), centre, epsilon, neighbours, beta,
                            scale, steps)
    p = np.exp(lw - lw.max())
    return p / p.sum()


def _sorted(x: Any) -> np.ndarray:
    from .quantile import sorted_rows

    return sorted_rows(x, -np.inf, np.inf)


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
        raise ParameterError(f"{name} must be an integer >= 1, got {value!r}",
                             parameter=name, allowed=">= 1")
    return int(value)
