"""Releases from a backend's sufficient statistics (the Session's out-of-core path).

:func:`instancedp.backends.open_source` gives a :class:`~instancedp.backends.Source`
whose methods return small aggregates.  This module turns a statistic's
request into a mechanism whose input is such an aggregate, and releases it
through the mechanism's own noise code, so that every engine (numpy, DuckDB,
SQLite, PostgreSQL, Spark) gives the same record for the same rows and seed.

Which path a release takes depends on public facts only: the *kind* of input
(:func:`input_kind`: an in-memory array or frame, a file path, a database URL
or file, a Spark DataFrame or table) and the statistic requested — never on
the number of rows.

=============  =================================================================
statistic      out-of-core mechanism and the aggregate it reads
=============  =================================================================
``count``      Laplace on the count (``count``)
``sum``        Laplace on the exact sum on the public fixed-point grid
               (``count_and_sum``)
``mean``       noisy shifted sum ÷ noisy count (``count_and_sum`` with
               ``shift=True``); add/remove neighbours only
``median``,    the in-memory default, the exponential mechanism with the log
``quantile``   base (:class:`~instancedp.mechanisms.quantile.ExponentialQuantile`),
               drawn in stages: a window of order statistics around the
               target rank (``order_window``), and further single order
               statistics only when the exact inversion needs them
               (:class:`~instancedp.mechanisms.quantile.PieceSet`); with a
               public ``resolution`` (given, or the column's declared integer
               or decimal type), the in-memory grid release (log measure on
               the grid, permute-and-flip) from one ``histogram`` on the grid
               points' exact cells (at most :data:`MAX_CANDIDATES` points);
               :class:`CandidateQuantile` by name; a far-tail quantile
               under add/remove, the tail choice
               (:class:`~instancedp.mechanisms.tail_choice.TailChoiceQuantile`:
               ``count`` for its noisy count, then one of the two paths
               here, with the same draws as in memory);
               without bounds, the bound-free quantile
               (:class:`~instancedp.mechanisms.unbounded.UnboundedQuantile`: its
               scan reads ``histogram`` at the public grid's candidates, batch by
               batch, its exponential stage ``order_window`` of the rows
               clamped to the bracket the scan released)
``ratio``     the share of ones among 0/1 flags (:class:`~instancedp.mechanisms.ratio.
               PrivateRatio`, every method): two counts, from one ``histogram``
               whose cells isolate exactly 0 and exactly 1
``min``,       the in-memory recipe (smooth sensitivity by default, or Laplace),
``max``,       its own code run on the engine's sorted column read by rank
``trimmed-     (:class:`~instancedp.queries.order.SortedColumn`): ``count``,
mean``         ``order_window`` around the target ranks (1; n; m + 1 and n − m)
               as far as the smooth sensitivity's early-stop rule reaches, and
               ``range_sum`` (a value's rank; the trimmed mean's exact kept sum)
=============  =================================================================

Several quantiles (:data:`IN_MEMORY_ONLY`) weigh every gap between order
statistics (the joint exponential mechanism: no early stop), so on a database
or Spark they are refused from the request (``ParameterError``, "not
available out of core", naming the in-memory path); a local file is read into
memory for them.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from . import _validate
from .errors import ParameterError
from .mechanisms.base import Mechanism, OutputDistribution, atoms_law
from .mechanisms.quantile import (
    _LOG_SCALE_FRACTION,
    GRID_SHRINK,
    _check_q,
    grid_quantile_from_counts,
    log_scale_map,
    score_sensitivity,
)
from .privacy import PureDP
from .queries.means import fixed_point_exponent, fixed_point_value
from .random import resolve

__all__ = [
    "OUT_OF_CORE",
    "DEFAULT_CELLS",
    "MAX_CANDIDATES",
    "CandidateQuantile",
    "input_kind",
    "out_of_core_mechanism",
    "release_from_source",
]

#: statistics released from a backend's aggregates
OUT_OF_CORE = ("count", "sum", "mean", "median", "quantile", "ratio", "trimmed-mean", "min",
               "max")
#: released from the engine's sorted column read by rank (:class:`SortedColumn`), with the
#: in-memory mechanisms (smooth sensitivity by default, or Laplace) and their options
SORTED_STATISTICS = ("trimmed-mean", "min", "max")
#: the joint quantiles' exponential mechanism weighs every gap between order statistics
#: (no early stop): released in memory only
IN_MEMORY_ONLY = ("quantiles",)
#: cells of the default candidate grid (the log chart, see :class:`CandidateQuantile`)
DEFAULT_CELLS = 4096
#: largest candidate grid (a histogram of this many cells is one small aggregate)
MAX_CANDIDATES = 65_536

_FILE_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".json", ".jsonl", ".ndjson")


def input_kind(data: Any, *, table: str | None = None, spark: Any = None) -> str:
    """``"memory"``, ``"file"`` (DuckDB), ``"sqlite"``, ``"postgresql"``, ``"spark"``
    or ``"source"`` (an opened :class:`~instancedp.backends.Source`).

    Public facts only: the input's type and name, never its rows.
    """
    import os
    from pathlib import Path

    from .backends import _SQLITE_SUFFIXES, Source
    from .backends.spark import is_spark_dataframe

    if isinstance(data, Source):
        return "source"
    if spark is not None or is_spark_dataframe(data):
        return "spark"
    if isinstance(data, str) and data.startswith(("postgresql://", "postgres://")):
        return "postgresql"
    if isinstance(data, str | os.PathLike):
        text = str(data)
        suffix = Path(text).suffix.lower()
        if text.startswith("sqlite:///") or suffix in _SQLITE_SUFFIXES:
            return "sqlite"
        if suffix in _FILE_SUFFIXES or (suffix == ".gz" and Path(text[:-3]).suffix):
            return "file"
    return "memory"


# -- the quantile on public candidates ------------------------------------------------


class CandidateQuantile(Mechanism):
    """ε-DP q-quantile: permute-and-flip over a public candidate grid.

    Candidates c_0 < … < c_{K−1} come from public parameters only:

    * ``resolution=r``: c_k = min(lower + k·r, upper), k = 0 … ⌊(upper − lower)/r⌋
      (at most :data:`MAX_CANDIDATES`);
    * otherwise the log base measure's chart φ(t) = sign(t)·log1p(|t|/λ),
      λ = (upper − lower)·10⁻⁴, cut into ``cells`` (default
      :data:`DEFAULT_CELLS`) equal cells: c_k = φ⁻¹(φ(lower) + k·(φ(upper) −
      φ(lower))/cells), ends set to the bounds (relative spacing ≈ 0.4 % of
      |t| away from 0 on bounds spanning 10⁶ λ).

    Each row is clamped to the bounds and assigned to its nearest candidate
    (cell edges are the midpoints; a row on a midpoint goes up).  With b_k and
    a_k the rows assigned below and above c_k, the score s_k is the grid bases'
    score (:func:`~instancedp.mechanisms.quantile.grid_scores`: the distance from
    q·n to c_k's rank interval [b_k, n − a_k] shrunk towards its middle) and c_k
    is released by permute-and-flip on the
    utilities −ε·s_k/(2Δ), Δ = ``score_sensitivity(q, neighbours)`` (McKenna &
    Sheldon 2020; never less accurate than the exponential mechanism's
    probability ∝ exp(−ε·s_k/(2Δ)) on the same candidates).

    Guarantee (McKenna & Sheldon 2020, Thm. 1): ε-DP under add/remove and
    under substitution.  Proof sketch: the assignment is a row-by-row map
    fixed by public parameters, so neighbouring tables give assignments that
    differ in one row (add/remove: one count moves by 1; substitution: one
    row moves between two candidates).  Then every b_k, a_k moves by at most
    1 (add/remove: one of them; substitution: possibly both, in opposite
    directions), so |s_k − s'_k| ≤ Δ with Δ = max(q, 1 − q) (add/remove) or
    1 (substitution) — :func:`~instancedp.mechanisms.quantile.score_sensitivity`,
    the lemma in docs/formulas.md ("The grid score") — and permute-and-flip with
    acceptance exp(−ε·(s − min s)/(2Δ)) is ε-DP.

    Its input is the histogram of the candidates' cells, one aggregate any
    engine computes; :meth:`release` on an array computes the same histogram
    in memory.
    """

    name = "candidate_quantile"

    def __init__(
        self,
        query: Any,
        epsilon: float,
        *,
        resolution: float | None = None,
        cells: int | None = None,
    ) -> None:
        self.query = query
        self.q = _check_q(query.q)
        self.lower, self.upper = float(query.lower), float(query.upper)
        self.epsilon = _validate.epsilon(epsilon)
        self.delta = None
        self.neighbours = getattr(query, "neighbours", "add_remove")
        score_sensitivity(self.q, self.neighbours)
        if resolution is not None and cells is not None:
            raise ParameterError(
                "give resolution or cells, not both", parameter="cells", allowed="None"
            )
        self.resolution = (
            None if resolution is None else _validate.finite_positive(resolution, "resolution")
        )
        if self.resolution is not None:
            count = math.floor((self.upper - self.lower) / self.resolution) + 1
            if count > MAX_CANDIDATES:
                raise ParameterError(
                    f"resolution gives {count} candidates between the bounds; at most "
                    f"{MAX_CANDIDATES} are allowed: choose a coarser resolution",
                    parameter="resolution",
                    allowed=f">= (upper - lower) / {MAX_CANDIDATES - 1}",
                )
            k = np.arange(count, dtype=np.float64)
            cand = np.minimum(self.lower + k * self.resolution, self.upper)
            self.cells = None
            self.log_scale = None
        else:
            self.cells = DEFAULT_CELLS if cells is None else int(cells)
            if not (isinstance(cells, int | type(None)) and 1 <= self.cells < MAX_CANDIDATES):
                raise ParameterError(
                    f"cells must be an integer in [1, {MAX_CANDIDATES - 1}], got {cells!r}",
                    parameter="cells",
                    allowed=f"1 … {MAX_CANDIDATES - 1}",
                )
            self.log_scale = (self.upper - self.lower) * _LOG_SCALE_FRACTION
            phi, phi_inv = log_scale_map(self.log_scale)
            u = np.linspace(float(phi(self.lower)), float(phi(self.upper)), self.cells + 1)
            cand = np.clip(phi_inv(u), self.lower, self.upper)
            cand[0], cand[-1] = self.lower, self.upper
        self.candidates = np.unique(cand + 0.0)
        mids = self.candidates[:-1] / 2 + self.candidates[1:] / 2  # no overflow near ±max
        self.edges = np.concatenate(([self.lower], mids, [self.upper]))
        if np.any(np.diff(self.edges) <= 0):
            raise ParameterError(
                "the bounds are too close for this candidate grid (two candidates share a "
                "cell): choose a coarser resolution or fewer cells",
                parameter="resolution" if self.resolution is not None else "cells",
            )

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def mechanism_parameters(self) -> dict[str, Any]:
        grid: dict[str, Any] = (
            {"kind": "resolution", "resolution": self.resolution}
            if self.resolution is not None
            else {"kind": "log_chart", "cells": self.cells, "log_scale": self.log_scale}
        )
        return {
            "q": self.q,
            "lower": self.lower,
            "upper": self.upper,
            "score_sensitivity": score_sensitivity(self.q, self.neighbours),
            "grid_shrink": GRID_SHRINK,
            "candidates": {**grid, "count": int(self.candidates.size)},
            "sampler": "permute-and-flip",
        }

    def _state(self, data: Any) -> np.ndarray:
        """The cell counts (the only thing read from the rows)."""
        from .backends import numpy as ref

        return ref.histogram(data, self.edges)

    def _draw(self, state: np.ndarray, source: Any, size: int | None) -> Any:
        if size is None:
            return grid_quantile_from_counts(
                self.candidates, state, self.q, self.epsilon, self.neighbours, source
            )
        return np.array([self._draw(state, source, None) for _ in range(int(size))])

    def output_distribution(self, data: Any) -> OutputDistribution:
        """Exact law of the permute-and-flip draw on the utilities −ε·s_k/(2Δ)
        (:func:`~instancedp.mechanisms.quantile.grid_quantile_probabilities`),
        from the same counts as :meth:`release`."""
        from .mechanisms.quantile import grid_quantile_probabilities

        counts = self._state(data).astype(np.int64)
        p = grid_quantile_probabilities(counts, self.q, self.epsilon, self.neighbours)
        return atoms_law(self.candidates.tolist(), p)


# -- from a request to an out-of-core mechanism ----------------------------------------


def out_of_core_mechanism(
    statistic: str,
    epsilon: float,
    delta: float | None = None,
    *,
    neighbours: str = "add_remove",
    mechanism: str | None = None,
    bounds: tuple[float, float] | None = None,
    quantile: float | None = None,
    resolution: float | None = None,
    **other: Any,
) -> Any:
    """The mechanism a backend release uses, from the public request only.

    Raises ``ParameterError`` for a statistic or option this path does not
    offer ("not available out of core")."""
    from .recipes import build_mechanism, build_query

    stat = str(statistic).lower().replace("_", "-")
    if stat in SORTED_STATISTICS:
        # the in-memory recipe: the engine serves the order statistics it reads
        if mechanism not in (None, "smooth", "laplace"):
            raise ParameterError(
                f"mechanism={mechanism!r} is not available out of core for {stat}: smooth "
                "(the default) and laplace are",
                parameter="mechanism",
                allowed="smooth, laplace",
            )
        if resolution is not None or quantile is not None:
            name = "resolution" if resolution is not None else "quantile"
            raise ParameterError(f"{name} applies to medians and quantiles",
                                 parameter=name, allowed="None")
        return build_mechanism(stat, epsilon, delta, mechanism=mechanism, bounds=bounds,
                               neighbours=neighbours, **other)
    n = other.pop("n", None)
    if (stat == "mean" and neighbours == "substitution" and n is not None
            and mechanism in (None, "laplace") and resolution is None
            and all(v is None for v in other.values())):
        # the in-memory default under substitution: Laplace on the exact mean, scale from n
        return build_mechanism(stat, epsilon, delta, mechanism="laplace", bounds=bounds,
                               neighbours=neighbours, n=n)
    if n is not None and stat not in ("median", "quantile"):
        other["n"] = n  # refused below, named (the quantile's mechanism does not use n)
    used = {k: v for k, v in other.items() if v is not None}
    if stat not in OUT_OF_CORE or used:
        what = f"statistic={statistic!r}" if stat not in OUT_OF_CORE else (
            ", ".join(f"{k}=" for k in used))
        why = (" (the several-quantile mechanisms weigh every gap between order "
               "statistics: no early stop bounds what they read)" if stat in IN_MEMORY_ONLY
               else "")
        raise ParameterError(
            f"{what} is not available out of core{why}; a database, Spark or a data file "
            f"releases {', '.join(OUT_OF_CORE)} from aggregates: release it in memory "
            "instead (read the column into a numpy array or pandas Series and pass that "
            "to Session)",
            parameter="statistic" if stat not in OUT_OF_CORE else next(iter(used)),
            allowed=", ".join(OUT_OF_CORE),
        )
    if stat in ("median", "quantile"):
        from .registry import bound_free_key, bound_free_keys, short_name

        # the bound-free names are the registry's (the in-memory recipe takes the same)
        free = bound_free_keys(stat)
        offered = ("exponential", "tail_choice_quantile", "candidate_quantile", *free)
        name = None if mechanism is None else short_name(mechanism)
        if name is not None and name not in {short_name(m) for m in offered}:
            raise ParameterError(
                f"mechanism={mechanism!r} is not available out of core for {stat}: "
                "the exponential mechanism (drawn in stages, or on public candidates) is, "
                "and without bounds the bound-free quantiles",
                parameter="mechanism",
                allowed=", ".join(offered),
            )
        if delta is not None:
            raise ParameterError(
                "the out-of-core quantile is pure epsilon-DP: leave delta unset",
                parameter="delta",
                allowed="None",
            )
        if bound_free_key(mechanism, stat) is not None or (
                name is None and bounds is None and resolution is None):
            # a bound-free quantile (named, or the default rule): the in-memory recipe's
            # mechanism (bounds or a resolution with a bound-free name are refused there);
            # the scan reads the rows' cells on its public grid, the one-step median's
            # exponential stages read order statistics
            return build_mechanism(stat, epsilon, mechanism=mechanism, bounds=bounds,
                                   quantile=quantile, resolution=resolution,
                                   neighbours=neighbours)
        if bounds is None and name == "exponential":  # refused, naming bounds
            return build_mechanism(stat, epsilon, mechanism=name, quantile=quantile,
                                   neighbours=neighbours)
        if bounds is not None and resolution is not None and name in (
                None, "exponential", "tail-choice"):
            # the in-memory recipe on the grid (log measure, permute-and-flip), from the
            # rows per grid point: one histogram on the grid's exact cells
            mech = build_mechanism(stat, epsilon, mechanism=name, bounds=bounds,
                                   quantile=quantile, neighbours=neighbours,
                                   resolution=resolution)
            why = grid_not_served(mech.lower, mech.upper, mech.resolution)
            if why is not None:
                raise ParameterError(f"out of core, {why}", parameter="resolution",
                                     allowed=f"at most {MAX_CANDIDATES} grid points")
            return mech
        if bounds is None or resolution is not None or name == "candidate-quantile":
            query = build_query(stat, bounds=bounds, quantile=quantile, neighbours=neighbours)
            return CandidateQuantile(query, epsilon, resolution=resolution)
        # the in-memory default (log base with atoms, drawn in stages from the order
        # statistics; for a tail quantile under add/remove the tail choice, whose
        # branches read a count, order statistics or the bound-free scan's cells)
        return build_mechanism(stat, epsilon, mechanism=name, bounds=bounds,
                               quantile=quantile, neighbours=neighbours)
    if resolution is not None:
        raise ParameterError(
            "resolution applies to medians and quantiles", parameter="resolution",
            allowed="None",
        )
    if stat == "ratio":  # every method reads the two counts only
        return build_mechanism(stat, epsilon, delta, mechanism=mechanism, bounds=bounds,
                               neighbours=neighbours)
    default = {"count": "laplace", "sum": "laplace", "mean": "sum-count"}[stat]
    if mechanism not in (None, default):
        raise ParameterError(
            f"mechanism={mechanism!r} is not available out of core for {stat}: {default} is",
            parameter="mechanism",
            allowed=default,
        )
    if stat == "mean" and neighbours != "add_remove":
        raise ParameterError(
            "the out-of-core mean is the noisy sum ÷ noisy count under add/remove, and "
            "Laplace on the exact mean with the public n= under substitution (the Session "
            "passes the table's count): use neighbours='add_remove' or pass n",
            parameter="neighbours",
            allowed="add_remove",
        )
    return build_mechanism(
        stat, epsilon, delta, mechanism=default, bounds=bounds, neighbours=neighbours
    )


def _sum_value(total: int, lower: float, upper: float, shift: bool) -> float:
    return fixed_point_value(total, fixed_point_exponent(lower, upper, shift=shift))


#: cells isolating exactly 0 (cell 1: [0, 5e-324)) and exactly 1 (cell 3: [1, 1 + 2^−52))
_FLAG_EDGES = (-1.7976931348623157e308, 0.0, 5e-324, 1.0, 1.0000000000000002,
               1.7976931348623157e308)


def flag_counts(source: Any, column: str | None, missing: Any = "drop") -> tuple[int, int, int]:
    """(ones, zeros, others) of a column of 0/1 flags, exactly, from one histogram.

    −0.0 is a zero (the histogram normalises it), ±inf are others."""
    h = source.histogram(column, _FLAG_EDGES, missing=missing)
    ones, zeros = int(h[3]), int(h[1])
    return ones, zeros, int(h.sum()) - ones - zeros


def _ratio_counts(source: Any, column: str | None, missing: Any,
                  policy: dict[str, Any] | None) -> tuple[int, int]:
    """(a, b) as :class:`~instancedp.queries.counts.Ratio` reads them: owner mode refuses
    values other than 0 and 1; the analyst policy drops them and adds its public row."""
    ones, zeros, others = flag_counts(source, column, missing)
    if policy is None:
        if others:
            raise ParameterError(
                f"data must be 0/1 flags (one per user); {others} value(s) are not 0 or 1")
        return ones, ones + zeros
    pad = policy.get("added_public_row")
    extra = [] if pad is None else [float(pad)]
    return ones + extra.count(1.0), ones + zeros + sum(v in (0.0, 1.0) for v in extra)


def release_from_source(
    mechanism: Any, source: Any, column: str | None, rng: Any = None, *, missing: Any = "drop",
    policy: dict[str, Any] | None = None,
) -> Any:
    """Release ``mechanism`` (from :func:`out_of_core_mechanism`) on ``source``'s aggregates.

    The draw is the mechanism's own (``_draw`` / the same Laplace draws as its
    ``release``), so the record equals ``mechanism.release(column_array)``'s
    for the same rows and seed.  ``policy``: the analyst mode's input policy
    (:func:`~instancedp.session.analyst_policy`), which the engines apply as they
    read (drop NULL/NaN, clamp to the bounds; for flags, drop other values and add
    its public row)."""
    from .mechanisms.global_noise import LaplaceMechanism
    from .mechanisms.ratio import PrivateRatio
    from .mechanisms.sum_count import NoisySumOverCount
    from .mechanisms.tail_choice import BOUNDED, TailChoiceQuantile
    from .mechanisms.unbounded import UnboundedQuantile
    from .queries.counts import Count, Sum
    from .queries.means import Mean

    rs = resolve(rng)
    if sorted_query(mechanism):
        return mechanism.release(sorted_column(source, column, mechanism.query, missing), rs)
    if isinstance(mechanism, PrivateRatio):
        state = _ratio_counts(source, column, missing, policy)
        return mechanism._record(mechanism._draw(state, rs, None), rs)
    if isinstance(mechanism, TailChoiceQuantile):
        # the in-memory release's draws in its order: the count's noise, then the branch's
        choice = mechanism.choose(source.count(column, missing=missing), rs)
        if choice == BOUNDED:
            value = _quantile_draw(mechanism.bounded, source, column, rs, missing)
        else:
            value = mechanism.project(_quantile_draw(mechanism.bracket, source, column, rs,
                                                     missing))
        return mechanism.record(value, choice, rs)
    if isinstance(mechanism, UnboundedQuantile | CandidateQuantile) or staged_quantile(
            mechanism) or grid_quantile(mechanism):
        return mechanism._record(_quantile_draw(mechanism, source, column, rs, missing), rs)
    if isinstance(mechanism, NoisySumOverCount):
        n, total = source.count_and_sum(
            column, mechanism.lower, mechanism.upper, shift=True, missing=missing
        )
        s_value = _sum_value(total, mechanism.lower, mechanism.upper, True)
        # the draws of NoisySumOverCount.release: the sum's noise, then the count's
        s = mechanism._sum._draw(s_value, rs, None)
        c = mechanism._count._draw(float(n), rs, None)
        mean = min(max(s / max(c, 1.0), 0.0), mechanism.range)
        return mechanism._record(mechanism.lower + mean, rs)
    if isinstance(mechanism, LaplaceMechanism) and type(mechanism.query) is Mean:
        q = mechanism.query  # substitution, n public: the exact mean, rounded once
        n, total = source.count_and_sum(column, q.lower, q.upper, shift=True, missing=missing)
        if n != q.n:
            raise ParameterError(f"data has {n} records but the query's public n is {q.n}")
        s = fixed_point_exponent(q.lower, q.upper, shift=True)
        state = float(Fraction(q.lower) + Fraction(total, n) / Fraction(2) ** s)
    elif isinstance(mechanism, LaplaceMechanism) and isinstance(mechanism.query, Count):
        state = float(source.count(column, missing=missing))
    elif isinstance(mechanism, LaplaceMechanism) and isinstance(mechanism.query, Sum):
        q = mechanism.query
        _, total = source.count_and_sum(column, q.lower, q.upper, missing=missing)
        state = _sum_value(total, q.lower, q.upper, False)
    else:
        raise ParameterError(
            f"{getattr(mechanism, 'name', type(mechanism).__name__)} is not available out "
            "of core", parameter="mechanism",
        )
    return mechanism._record(mechanism._draw(state, rs, None), rs)


def _quantile_draw(mechanism: Any, source: Any, column: str | None, rs: Any,
                   missing: Any) -> float:
    """One draw of a single-quantile mechanism from ``source``'s aggregates (the draw of
    its in-memory release)."""
    from .mechanisms.unbounded import UnboundedQuantile

    if staged_quantile(mechanism):
        lo, hi = mechanism.lower, mechanism.upper
        pieces = mechanism.pieces(
            source.count(column, missing=missing),
            lambda a, b: source.order_window(column, lo, hi, a, b, missing=missing),
        )
        return mechanism._draw(pieces, rs)
    if isinstance(mechanism, UnboundedQuantile):
        counts, clamped = unbounded_readers(source, column, [mechanism], missing)
        return mechanism.draw_from(counts, clamped, rs)
    if isinstance(mechanism, CandidateQuantile):
        return mechanism._draw(source.histogram(column, mechanism.edges, missing=missing), rs,
                               None)
    cells = mechanism.grid_edges()  # grid_quantile
    return mechanism._draw(
        mechanism.weights_from_counts(source.histogram(column, cells, missing=missing)), rs)


def serves_out_of_core(mechanism: Any) -> bool:
    """Whether :func:`release_from_source` releases ``mechanism`` (from a Source's
    aggregates, with the record of its in-memory release)."""
    from .mechanisms.global_noise import LaplaceMechanism
    from .mechanisms.ratio import PrivateRatio
    from .mechanisms.sum_count import NoisySumOverCount
    from .mechanisms.unbounded import UnboundedQuantile
    from .queries.counts import Count, Sum
    from .queries.means import Mean

    if isinstance(mechanism, LaplaceMechanism) and type(mechanism.query) in (Count, Sum, Mean):
        return True
    from .mechanisms.tail_choice import TailChoiceQuantile

    return staged_quantile(mechanism) or grid_quantile(mechanism) or sorted_query(
        mechanism) or isinstance(
        mechanism, PrivateRatio | CandidateQuantile | NoisySumOverCount | UnboundedQuantile
        | TailChoiceQuantile)


def staged_quantile(mechanism: Any) -> bool:
    """Whether ``mechanism`` is an exponential quantile on a continuous base (uniform,
    log, log-log or log-atoms), drawn in stages from ``count`` and ``order_window``
    (:meth:`~instancedp.mechanisms.quantile.ExponentialQuantile.pieces`); its grid bases
    are :func:`grid_quantile`)."""
    from .mechanisms.quantile import ExponentialQuantile

    return isinstance(mechanism, ExponentialQuantile) and mechanism.base in (
        "uniform", "log", "log-log", "log-atoms")


def grid_not_served(lower: float, upper: float, resolution: float) -> str | None:
    """Why the grid lower + k·resolution ≤ upper is not released from a histogram out of
    core (public: the grid's size and the floats' spacing at the bounds), or None."""
    from .mechanisms.quantile import grid_count, grid_edges

    k = grid_count(lower, upper, resolution)
    if k > MAX_CANDIDATES:
        return (f"the grid between the bounds has {k} points, more than {MAX_CANDIDATES}: "
                "choose a coarser resolution or narrower bounds")
    if grid_edges(lower, upper, resolution, k) is None:
        return "the resolution is finer than the floating-point spacing at the bounds"
    return None


def grid_quantile(mechanism: Any) -> bool:
    """Whether ``mechanism`` is an exponential quantile on a grid base ("grid",
    "log-grid") of at most :data:`MAX_CANDIDATES` points: its draw reads the rows per
    grid point only, one ``histogram`` on
    :meth:`~instancedp.mechanisms.quantile.ExponentialQuantile.grid_edges` (the in-memory
    release's segments exactly, so the same draws)."""
    from .mechanisms.quantile import ExponentialQuantile

    return (isinstance(mechanism, ExponentialQuantile) and mechanism.resolution is not None
            and grid_not_served(mechanism.lower, mechanism.upper, mechanism.resolution) is None)


def sorted_query(mechanism: Any) -> bool:
    """Whether ``mechanism`` releases a min, max or trimmed mean (smooth or Laplace) or a
    smooth-sensitivity quantile: the mechanisms that read the sorted column through
    :class:`~instancedp.queries.order.SortedColumn`."""
    from .mechanisms.global_noise import LaplaceMechanism
    from .mechanisms.smooth import SmoothSensitivityMechanism
    from .queries.means import Mean, TrimmedMean
    from .queries.order import Max, Min, Quantile

    query = getattr(mechanism, "query", None)
    if isinstance(mechanism, SmoothSensitivityMechanism) and isinstance(query, Quantile):
        return True  # the substitution default at large ε·n
    return (isinstance(mechanism, SmoothSensitivityMechanism | LaplaceMechanism)
            and isinstance(query, Min | Max | TrimmedMean) and not isinstance(query, Mean))


def sorted_column(source: Any, column: str | None, query: Any, missing: Any = "drop") -> Any:
    """The engine's sorted column clamped to ``query``'s bounds, read by rank on demand
    (:class:`~instancedp.queries.order.SortedColumn`: ``order_window`` for values,
    ``range_sum`` for ranks and the trimmed mean's exact sum)."""
    from .queries.order import SortedColumn

    lo, hi = query.lower, query.upper
    return SortedColumn(
        source.count(column, missing=missing), lo, hi,
        lambda a, b: source.order_window(column, lo, hi, a, b, missing=missing),
        lambda a, b: source.range_sum(column, lo, hi, a, b, shift=True, missing=missing),
    )


def unbounded_readers(source: Any, column: str | None, parts: Any,
                      missing: Any = "drop") -> tuple[Any, Any]:
    """What bound-free quantiles ``parts`` (each an :class:`~instancedp.mechanisms.
    unbounded.UnboundedQuantile`, all on one grid) read from an engine: #{x ≤ t} at
    the scans' grid points, and ``clamped(lo, hi)`` → the order windows of the rows
    clamped to a second stage's bracket.  Several quantiles on one grid share them.

    On the grid around 0 (no ``origin``): ONE ``log_bins`` aggregate groups the rows
    by their grid cell (:class:`~instancedp.mechanisms.unbounded.BinnedRankCounts`:
    exact counts at every grid point, plus one exact histogram only where a cell's
    rows straddle a point), and the same cells index the rows by rank
    (:class:`~instancedp.describe.IndexedColumn` over ±max double): the second
    stages' windows around their target ranks (public constants around q·n, from the
    parts' parameters) are fetched in one ``range_values`` pass, before any draw.
    With an ``origin``: one histogram per scan batch at the shifted grid points
    (:class:`~instancedp.mechanisms.unbounded.HistogramRankCounts`) and the engine's
    ``order_window``.  Either way the values read, and so the draws, are the
    in-memory release's."""
    from .backends.numpy import pad_window
    from .mechanisms.quantile import PieceSet, score_sensitivity
    from .mechanisms.unbounded import BinnedRankCounts, HistogramRankCounts

    parts = list(parts)
    first = parts[0]

    def histogram(edges: np.ndarray) -> np.ndarray:
        return source.histogram(column, edges, missing=missing)

    if first.origin is not None:
        hist = HistogramRankCounts(histogram, first.first_thresholds())

        def clamped_window(lo: float, hi: float) -> Any:
            return lambda a, b: source.order_window(column, lo, hi, a, b, missing=missing)

        return hist, clamped_window
    from .describe import IndexedColumn

    cells = source.log_bins(column, first.beta, first.scale, missing=missing)
    counts = BinnedRankCounts(cells, histogram,
                              BinnedRankCounts.grid_thresholds(first.beta, first.scale))
    big = float(np.finfo(np.float64).max)
    index = IndexedColumn(source, column, -big, big, cells=cells, missing=missing)
    n = index.n
    windows = []
    for p in parts:  # a read hint: which rows are fetched, never a value read or drawn
        if p.two_stage:
            em = p.second_stage(0)
            start, stop = PieceSet.window_pieces(n, em.q, em.epsilon,
                                                 score_sensitivity(em.q, em.neighbours))
            windows.append((max(start - 1, 0), min(stop, n)))
    index.prefetch(windows)

    def clamped(lo: float, hi: float) -> Any:
        def window(a: int, b: int) -> np.ndarray:
            first_rank = min(max(a, 0), n)
            inside = np.clip(index.read(first_rank, min(max(b, 0), n)), lo, hi) + 0.0
            return pad_window(inside, a, b, lo, hi, offset=first_rank, n=n)

        return window

    return counts, clamped


def owner_missing_policy(source: Any, column: str | None, drop_missing: bool) -> str:
    """The owner mode's read policy on an engine, the in-memory reader's
    (:func:`instancedp.io.read_column`) exactly: NULL, NaN and ±inf rows are
    refused with their count (:func:`~instancedp.io.missing_error`) or, with
    ``drop_missing``, dropped; an empty selection is refused
    (:func:`~instancedp.io.empty_error`).  Returns the engines' ``missing``
    policy for the release (``"finite"``, or ``"drop"`` when every row is
    finite: the same rows, the engines' faster path).  Two counts, before the
    charge (the owner sees their own rows)."""
    from .io import empty_error, missing_error

    name = column
    if name is None and len(getattr(source, "columns", ())) == 1:
        name = source.columns[0]
    total = source.count(column, missing=0.0)  # every row, NULL and NaN included
    kept = source.count(column, missing="finite")
    if kept != total and not drop_missing:
        raise missing_error(name, total - kept, total)
    if kept == 0:
        raise empty_error(name, total - kept)
    return "drop" if kept == total else "finite"

