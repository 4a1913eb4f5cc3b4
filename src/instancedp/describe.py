"""A private ``describe()`` of a whole table: per numeric column the count, the
mean, the quartiles and the 5th and 95th percentiles, charged once.

Everything that shapes the release is public and fixed before the charge:

* **Columns** — decided from *declared* types only: a Parquet/Arrow schema, a
  pandas/polars dtype, a numpy dtype (integer, floating or decimal columns).
  A CSV/TSV file declares no types: under the public cast policy of
  :class:`~instancedp.io.AnalystQuery` every header column (or every column
  named in ``columns``) is cast to a number cell by cell, and cells that are
  not numbers are missing.  A type inferred from the rows is data and never
  chooses a column.
* **Rows** — per column, missing values (NULL, NaN, ±inf, text that is not a
  number) are dropped: a row-by-row selection, so describe runs under
  add/remove neighbours (the row count stays private; the session refuses it
  under substitution).
* **Split** — ε/k per column (k columns; each row touches every column:
  sequential composition), and within a column with bounds ½ to the five
  quantiles, ¼ to the clamped sum and ¼ to the count (:data:`SPLIT`); with
  error bars (the default, ``ci=0.95``) the quantiles keep ⅜ and their
  intervals take ⅛ (:data:`SPLIT_CI`).  A column without bounds has its own
  split (:data:`SPLIT_FREE_CI`: the location, the spread, the outer quantiles,
  the intervals, the sum and the count; without error bars the intervals'
  share goes to the outer quantiles), stated in the record.  The mean is
  lower + (noisy sum ÷ noisy count) as in
  :class:`~instancedp.mechanisms.sum_count.NoisySumOverCount`, whose parts are
  reused, and the count is that noisy count (rounded, at least 0:
  post-processing).  The parts are pure ε-DP and add up to ε: one ledger
  charge of ε (basic composition, Dwork & Roth 2014, Thm. 3.16 — exact for
  pure ε, so no privacy-loss-distribution figure is needed).
* **Mechanisms** — with public bounds (lo, hi) for a column: the recursive
  quantiles of Kaplan, Schnapp & Stemmer (2022) (O(n log n); the joint
  mechanism's O(m²·n) pass is slower on large tables) and the mean clamped to
  [lo, hi].  Without bounds, a range step first, then the bounded path on the
  range it releases:

  1. the location m — :class:`~instancedp.mechanisms.loglog.LogLogQuantile`:
     the exponential mechanism for the median on the whole line with the
     log-log base measure (finite mass, so no bound; Δ = ½ under add/remove,
     the median's margin n/2 discounts the empty line); m is released as p50;
  2. the spread S — the exponential mechanism over the cells (t_i, t_{i+1}] of
     the grid t_i = scale·(β^i − 1) scored by their distance in ranks from the
     median of |x − m| (the median absolute deviation's cell; a row-by-row
     selection given the public m, Δ = ½; :func:`~instancedp.mechanisms.
     unbounded_quantiles.spread_log_weights`); S is the cell's upper end;
  3. B = [m − c·S, m + c·S] (:func:`bound_free_range`, c = the reach), and
     p5, p25 and p75, p95 by the recursive algorithm on B's two halves, the
     rows below m on [B's lower end, m] at levels 0.1, 0.5 and the rows from m
     on [m, B's upper end] at 0.5, 0.9 (:func:`outer_quantiles`: the halves
     are split by a public value, so a row changes one of them: parallel
     composition, two levels);
  4. the mean clamped to B (adaptive composition: B is a function of released
     values; a winsorised mean, stated in the output).

  Why not the bound-free quantile's AboveThreshold scan (the default of
  ``UnboundedQuantile``): at n = 342, ε = 1, three columns, p5 and p95 got
  about 0.03ε each, their scans 0.3 of that, over some 800 grid steps: the
  scans stopped far below the data (the range, and every value clamped to
  it, were garbage: 0 of 60 medians within 0.5 IQR on N(4200, 800)).  The
  median's score (Δ = ½, margin n/2) is the sharpest one at small n, and the
  one-step median spends all of the location's share on it; a grid median
  (the exponential mechanism over the cells of a capped geometric grid, then
  over the rows in the chosen cell) spent half on finding the cell: on the
  sweep's cells the one-step median's rule score is lower and more values
  land within 0.5 IQR (``docs/results/describe_accuracy.md``, comparisons).
  The spread step's
  grid is capped: rows beyond ±scale·(β^steps − 1) ≈ ±1.8·10¹⁶ from m count
  as beyond it (a column there needs bounds).  The shares, c and the grid
  were chosen on synthetic columns by a rule fixed before the sweep
  (``benchmarks/describe_accuracy.py``, with the grid median as the
  location; the one-step median was compared after it on the same cells).
  The five values are sorted (post-processing).

Error bars (``ci`` = the level; :mod:`instancedp.intervals`), each stating what
it covers, all inside the same charge:

* count — the noisy count ± its Laplace quantile (exact coverage, no extra ε),
  clipped at 0; covers the column's number of non-missing rows;
* mean — the sum ÷ count interval (post-processing of the two noisy values, no
  extra ε); covers the mean of the rows clamped to the bounds (to B without
  bounds: the winsorised mean);
* the five quantiles — ONE noisy hierarchical histogram at the intervals'
  share gives all five (:func:`~instancedp.intervals.quantiles_intervals`);
  with bounds they cover the quantiles of the clamped rows; without bounds the
  tree is drawn on B and an end that reaches B is opened to ±∞
  (:func:`~instancedp.intervals.open_ends`), so they cover the rows' own
  quantiles.

Where the rows are read (the kind of input, a public fact; never n):

* **a file** (Parquet, CSV/TSV) — out of core, through DuckDB
  (:func:`_file_source`: the read policy of the in-memory path, non-finite
  values NULL).  Per column and clamp range [lo, hi] (the bounds, or R) ONE
  aggregate pass, :meth:`~instancedp.backends.Source.histogram_stats` on the
  error bars' public tree cells (:func:`index_edges`), gives the count n, the
  exact fixed-point clamped sum, the tree's cell counts and a rank index (per
  cell its count, minimum and maximum).  The recursive quantiles
  (:func:`~instancedp.mechanisms.recursive_quantiles.recursive_draw`) read
  their order windows by rank through :class:`IndexedColumn`: a level's
  windows are fetched in one ``range_values`` pass over their cells' value
  ranges (cells whose minimum equals their maximum need no read; cells
  holding more than :data:`FETCH_ROWS` rows are split in one more pass, or
  the window goes to the engine's ``order_window``).  Without bounds, the
  range step reads one ``log_bins`` aggregate per column (the rows' cells on
  a geometric grouping: n, and a rank index whose cells are small enough that
  the median's window is fetched in one ``range_values`` pass, with no
  refining pass; :meth:`ColumnData.log_bins_reader`) and one exact histogram
  at the spread step's points m ± t_i that fall inside a cell; the outer
  quantiles' windows on B come in one ``range_values`` pass
  (:func:`_outer_hint`): no column is read into memory;
* **an in-memory frame** — one column at a time as a sorted array; the same
  code (:func:`column_release`) reads it by slicing.

Both give the same values to the same draws, in the same order, so a file
and the same rows in memory give the same record bytes for the same seed
(``tests/test_describe_out_of_core.py``).  Memory, out of core with bounds:
the index (≤ 1,025 cells), at most :data:`FETCH_ROWS` fetched rows per read
and the engine's own (DuckDB's ``memory_limit``, :data:`ENGINE`): a bound
independent of n (``benchmarks/quantiles.py --describe-memory``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import _validate
from .backends.duckdb import NUMERIC_TYPES
from .errors import DataError, ParameterError, SchemaError
from .privacy import PureDP, compose

LEVELS: tuple[float, ...] = (0.05, 0.25, 0.5, 0.75, 0.95)
QUANTILE_NAMES: tuple[str, ...] = ("p5", "p25", "p50", "p75", "p95")
STATISTICS: tuple[str, ...] = ("count", "mean", *QUANTILE_NAMES)
#: the share of a column's ε per part (no error bars)
SPLIT: dict[str, float] = {"quantiles": 0.5, "sum": 0.25, "count": 0.25}
#: … and with error bars: the quantiles' intervals take a quarter of their share
SPLIT_CI: dict[str, float] = {"quantiles": 0.375, "intervals": 0.125, "sum": 0.25,
                              "count": 0.25}
#: a column without bounds, with error bars: the location (the median, released as
#: p50), the spread scan, the four outer quantiles on B, the error bars' tree, the
#: sum and the count (module docstring) …
SPLIT_FREE_CI: dict[str, float] = {"location": 0.3, "spread": 0.15, "quantiles": 0.25,
                                   "intervals": 0.1, "sum": 0.1, "count": 0.1}


def column_split(bounded: bool, level: float | None) -> dict[str, float]:
    """A column's within-column split (public: whether it has bounds, whether there
    are error bars)."""
    if bounded:
        return SPLIT if level is None else SPLIT_CI
    if level is not None:
        return SPLIT_FREE_CI
    # without error bars the tree's share goes to the outer quantiles
    out = {k: v for k, v in SPLIT_FREE_CI.items() if k != "intervals"}
    out["quantiles"] = SPLIT_FREE_CI["quantiles"] + SPLIT_FREE_CI["intervals"]
    return out
#: the default confidence level of describe's error bars
DEFAULT_LEVEL = 0.95
#: describe's noisy tree: 32² = 1,024 cells (1,056 exact noises per column, a
#: quarter of a several-quantile release's 16³ tree: describe draws one per column)
TREE: tuple[int, int] = (32, 2)
#: what each error bar covers (stated in the output)
COVERS: dict[str, str] = {
    "count": "the column's number of non-missing rows",
    "mean": "the mean of the non-missing rows clamped to the bounds (without bounds: "
            "to the released range B, or R, a winsorised mean)",
    "quantiles": "each level's empirical quantile x_(⌈q·n⌉) of the non-missing rows "
                 "(clamped to the bounds where given; without bounds an end reaching B "
                 "is infinite)",
}
#: the bound-free range step (no bounds for a column): its shares of the quantile
#: share (the rest goes to the five quantiles on the range B), the spread step's coarse
#: public grid scale·(β^i − 1), and B's reach in spread units
#: (``benchmarks/describe_accuracy.py`` chose them; module docstring)
BOUND_FREE: dict[str, Any] = {"beta": 2.0, "scale": 2.0 ** -10, "steps": 64,
                              "reach": 3.0, "mean_range": "B"}
#: declared types that are numbers (one home: the DuckDB backend's)
_NUMERIC = NUMERIC_TYPES


def _is_csv(data: Any) -> bool:
    if not isinstance(data, (str, Path)):
        return False
    name = Path(str(data)).name.lower()
    return any(name.endswith(s) for s in (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".txt"))


def declared_columns(data: Any) -> list[tuple[str, str]]:
    """(name, declared type) of every column, read from the schema only (no row)."""
    from .io import AnalystQuery

    q = AnalystQuery(data, sql="SELECT 0 FROM data")  # binds the schema, reads no row
    return [(str(r[0]), str(r[1])) for r in q._con.execute("DESCRIBE data").fetchall()]


def numeric_columns(data: Any, columns: Any = None) -> tuple[list[str], str]:
    """The columns to describe and the rule that chose them (public)."""
    from .errors import did_you_mean

    schema = declared_columns(data)
    names = [n for n, _ in schema]
    kinds = dict(schema)
    csv = _is_csv(data)
    if columns is not None:
        wanted = [columns] if isinstance(columns, str) else list(columns)
        if not wanted:
            raise ParameterError("columns must name at least one column", parameter="columns")
        for c in wanted:
            if c not in kinds:
                raise SchemaError(
                    f"unknown column {c!r}: the columns are {', '.join(names)}"
                    + did_you_mean(str(c), names)
                )
            if not csv and kinds[c].split("(")[0] not in _NUMERIC:
                raise ParameterError(
                    f"column {c!r} is declared {kinds[c]}, not a number: describe takes "
                    "numeric columns (declared types only)",
                    parameter="columns",
                )
        chosen = list(dict.fromkeys(wanted))
    elif csv:
        chosen = names
    else:
        chosen = [n for n in names if kinds[n].split("(")[0] in _NUMERIC]
    if not chosen:
        raise SchemaError(
            "no numeric column to describe: the declared types are "
            + ", ".join(f"{n} {k}" for n, k in schema)
        )
    rule = (
        "CSV: no declared types; every listed column cast to numbers, other cells missing"
        if csv
        else "declared numeric types (integer, floating, decimal)"
    )
    return chosen, rule


def _check_bounds(bounds: Any, chosen: list[str]) -> dict[str, tuple[float, float]]:
    if bounds is None:
        return {}
    if not isinstance(bounds, dict):
        raise ParameterError(
            "bounds must map column names to (lo, hi), e.g. {'age': (0, 120)}",
            parameter="bounds", allowed="{column: (lo, hi)}",
        )
    out = {}
    for col, b in bounds.items():
        if col not in chosen:
            raise ParameterError(
                f"bounds names column {col!r}, which is not described "
                f"(described: {', '.join(chosen)})", parameter="bounds",
            )
        try:
            out[col] = _validate.bounds(*b)
        except (TypeError, ValueError) as exc:
            raise ParameterError(
                f"bounds for {col!r}: {exc}", parameter="bounds", allowed="(lo, hi), lo < hi"
            ) from None
    return out


@dataclass(frozen=True)
class DescribeResult:
    """The release: one row per column (public record; ``secure`` as for a Release)."""

    rows: list[dict[str, Any]]
    guarantee: PureDP
    parameters: dict[str, Any]
    secure: bool = True
    parts: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    @property
    def has_ci(self) -> bool:
        return any(r.get("ci") for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        """The public record (strict JSON: an open interval end is None)."""
        from .intervals import finite_or_none

        rows = [dict(r) for r in self.rows]
        for r in rows:
            if "ci" in r:
                r["ci"] = {k: [finite_or_none(v) for v in pair] for k, pair in r["ci"].items()}
        return {
            "statistics": rows,
            "guarantee": self.guarantee.as_dict(),
            "mechanism": "describe",
            "parameters": self.parameters,
            "secure": self.secure,
        }

    def to_frame(self) -> Any:
        """A pandas DataFrame like ``DataFrame.describe()``: statistics × columns.

        With error bars the columns are (column, ``value`` | ``lower`` |
        ``upper``): ``frame[col]["value"]`` is the plain summary."""
        import pandas as pd

        if not self.has_ci:
            data = {r["column"]: [r[s] for s in STATISTICS] for r in self.rows}
            return pd.DataFrame(data, index=list(STATISTICS))
        data = {}
        for r in self.rows:
            data[(r["column"], "value")] = [r[s] for s in STATISTICS]
            data[(r["column"], "lower")] = [r["ci"][s][0] for s in STATISTICS]
            data[(r["column"], "upper")] = [r["ci"][s][1] for s in STATISTICS]
        frame = pd.DataFrame(data, index=list(STATISTICS))
        frame.columns = pd.MultiIndex.from_tuples(frame.columns, names=["column", "part"])
        return frame

    def __repr__(self) -> str:
        return (
            f"DescribeResult(columns={[r['column'] for r in self.rows]}, "
            f"guarantee={self.guarantee.describe()})\n{self.to_frame()!r}"
        )


def describe(
    session: Any,
    epsilon: float,
    *,
    columns: Any = None,
    bounds: dict[str, tuple[float, float]] | None = None,
    rng: Any = None,
    ci: float | None = DEFAULT_LEVEL,
) -> DescribeResult:
    """The body of :meth:`instancedp.session.Session.describe` (see the module docstring).

    ``ci``: the error bars' confidence level (None: no error bars, and the
    split without an intervals share)."""
    from .intervals import check_level
    from .mechanisms.sum_count import NoisySumOverCount
    from .random import resolve
    from .session import ANALYST_FAILURE

    source = resolve(rng)
    try:
        eps = _validate.epsilon(epsilon)
    except ValueError as exc:
        raise ParameterError(str(exc), parameter="epsilon", allowed="finite > 0") from None
    # Missing values are dropped per column: a selection (refused under substitution).
    rel = session.relation_for_release(drop_missing=True)
    data = session._data
    if session.input_kind not in ("memory", "file"):
        raise ParameterError(
            "describe reads files and in-memory tables; for a database or Spark table "
            "release each statistic with release_statistic",
            parameter="data",
        )
    level = None if ci is None else check_level(ci)
    chosen, rule = numeric_columns(data, columns)
    col_bounds = _check_bounds(bounds, chosen)
    eps_col = eps / len(chosen)
    splits = {col: column_split(col in col_bounds, level) for col in chosen}
    shares = {col: {k: v * eps_col for k, v in splits[col].items()} for col in chosen}
    plans = {col: column_plan(col_bounds.get(col), shares[col], rel) for col in chosen}
    parts = [PureDP(shares[c][k]) for c in chosen for k in splits[c]]
    total = compose(parts)  # basic composition: exact for pure parts
    guarantee = PureDP(eps)
    parameters: dict[str, Any] = {
        "epsilon": eps,
        "neighbours": rel,
        "columns": chosen,
        "column_rule": rule,
        "levels": list(LEVELS),
        "split": {
            "per_column": eps_col,
            "within_column": dict(column_split(True, level)),
            "composition": f"basic (pure ε parts sum to {total.epsilon:.12g})",
        },
        "bounds": {c: (list(p["bounds"]) if p["bounds"] else None) for c, p in plans.items()},
        "mechanisms": {
            c: {
                "quantiles": p["quantiles"].name if p["bounds"] else (
                    "loglog_quantile (p50 = m), then recursive_quantiles on the halves of "
                    "B = [m − c·S, m + c·S] below and from m (p5, p25; p75, p95), S from "
                    "the spread step: the exponential mechanism over the grid's cells "
                    "for the median of |x − m|"),
                "mean": "sum_over_count" + ("" if p["bounds"] else (
                    ", clamped to B" if BOUND_FREE["mean_range"] == "B" else
                    ", clamped to R")),
                "count": "the mean's noisy count, rounded, at least 0",
            }
            for c, p in plans.items()
        },
        "input_policy": {"missing": "drop", "out_of_range": "clamp to the bounds"},
    }
    free = {c: p for c, p in plans.items() if p["bounds"] is None}
    if free:
        loc = next(iter(free.values()))["location"]
        parameters["split"]["within_column_bound_free"] = dict(column_split(False, level))
        parameters["bound_free"] = {
            "columns": list(free),
            # the quantile share's parts (ε per column), adding up to it
            "location": {"mechanism": loc.name, **loc.parameters()},
            "spread": {"mechanism": "exponential over the grid's cells (t_i, t_i+1]",
                       "score": "ranks from the median of |x − m|",
                       "grid": {"kind": "geometric", "beta": BOUND_FREE["beta"],
                                "scale": BOUND_FREE["scale"], "steps": BOUND_FREE["steps"]}},
            "range": f"B = [m − c·S, m + c·S], c = {BOUND_FREE['reach']:g}, S = the "
                     "upper end of the spread step's cell",
            "outer_quantiles": "recursive_quantiles on [B's lower end, m] (levels 0.1, "
                               "0.5 of the rows below m) and [m, B's upper end] (0.5, 0.9 "
                               "of the rows from m): parallel halves, two levels",
            "mean": "sum_over_count clamped to " + (
                "B" if BOUND_FREE["mean_range"] == "B" else
                "R = [p5 − w/2, p95 + w/2] ∩ B, w = p95 − p5"),
            "composition": "adaptive sequential: location, spread given m, outer "
                           "quantiles given B, then the tree, sum and count",
        }
    if level is not None:
        from .intervals import CDF, RATIO

        parameters["intervals"] = {
            "level": level,
            "covers": dict(COVERS),
            "method": {"count": "laplace noise quantile (exact)", "mean": RATIO,
                       "quantiles": f"{CDF} (one tree of {TREE[0]}^{TREE[1]} cells for "
                                    "the five levels)"},
            "epsilon_per_column": eps_col * SPLIT_CI["intervals"],
            "epsilon_per_column_bound_free": eps_col * SPLIT_FREE_CI["intervals"],
            "coverage": "each interval separately, at the level",
        }
    session.ledger.price(session.dataset_id, guarantee, None)  # CompositionError early
    # a file: its engine, opened before the charge (opening binds the schema, no row)
    engine = _file_source(data, chosen) if session.input_kind == "file" else None
    try:
        charge = session._charge(guarantee, "describe", parameters, None)
        try:
            rows, records = [], {}
            for col in chosen:
                if engine is not None:
                    cd = ColumnData(source=engine, column=col, data=data)
                else:
                    from .io import AnalystQuery

                    cd = ColumnData(np.sort(AnalystQuery(data, column=col).read()))
                rows_col, rec = column_release(cd, col, plans[col], shares[col], source,
                                               NoisySumOverCount, level)
                rows.append(rows_col)
                records[col] = rec
        except Exception:
            session._mark(charge.id, "failed")
            if session.analyst:  # the cause may depend on the rows
                raise DataError(ANALYST_FAILURE) from None
            raise
    finally:
        if engine is not None:
            engine.close()
    session._mark(charge.id, "released")
    return DescribeResult(rows, guarantee, parameters, source.secure, records)


#: DuckDB's settings for a file described out of core (e.g. ``{"memory_limit": "1GB",
#: "threads": 2}``; None: DuckDB's defaults)
ENGINE: dict[str, Any] = {"memory_limit": None, "threads": None}


def _file_source(data: Any, chosen: list[str]) -> Any:
    """The file on DuckDB, out of core, read as the in-memory path reads it: the public
    read policy of :class:`~instancedp.io.AnalystQuery` (CSV cells cast to numbers,
    Parquet's declared types), every described column as a double with NULL, NaN,
    ±inf and cells that are not numbers made NULL (dropped by the primitives)."""
    from .backends import Source
    from .backends.duckdb import connect
    from .io import AnalystQuery, _quote_ident

    path = Path(str(data))
    cols = ", ".join(
        f"CASE WHEN isfinite(TRY_CAST({q} AS DOUBLE)) THEN TRY_CAST({q} AS DOUBLE) END AS {q}"
        for q in (_quote_ident(c) for c in chosen))
    return Source("duckdb", connect(path, sql=f"SELECT {cols} FROM data",
                                    reader=AnalystQuery.relation(path), **ENGINE))


def column_plan(
    bounds: tuple[float, float] | None, shares: dict[str, float], relation: str
) -> dict[str, Any]:
    """A column's public plan: its bounds (or None) and its first quantile mechanism
    (the five levels with bounds; the bound-free p5 and p95 without)."""
    from .recipes import build_quantiles_mechanism

    if bounds is not None:
        qmech = build_quantiles_mechanism(
            LEVELS, shares["quantiles"], mechanism="recursive", bounds=bounds,
            neighbours=relation)
    else:  # the range B first (location, then spread); the five quantiles on B later
        from .mechanisms.loglog import LogLogQuantile

        loc = LogLogQuantile(0.5, shares["location"], neighbours=relation)
        return {"bounds": None, "location": loc, "spread": shares["spread"],
                "relation": relation}
    return {"bounds": bounds, "quantiles": qmech, "relation": relation}


def bound_free_range(centre: float, spread_index: int) -> tuple[float, float]:
    """B = [m − c·S, m + c·S]: m the released location, S = t_{i+1} the upper end of
    the spread step's released cell i (≥ t_1, the grid's scale: never an empty
    range), c the reach (:data:`BOUND_FREE`); a public function of released values,
    inside the doubles."""
    from .mechanisms.unbounded import geometric_candidates

    beta, scale = BOUND_FREE["beta"], BOUND_FREE["scale"]
    step = float(geometric_candidates(spread_index + 1, 1, beta, scale)[0])
    reach = BOUND_FREE["reach"] * step
    big = float(np.finfo(np.float64).max)
    lo, hi = max(centre - reach, -big), min(centre + reach, big)
    if not hi > lo:  # m ± c·S rounds to m (|m| ≫ S): the neighbouring doubles
        lo, hi = float(np.nextafter(centre, -np.inf)), float(np.nextafter(centre, np.inf))
    return lo, hi


# -- reading a column: in memory, or from an engine's aggregates -------------------------

#: most rows one read of a column's rank index fetches (a public constant: with the
#: index's cells and the order windows' cap it bounds describe's memory, whatever n is)
FETCH_ROWS = 1 << 18
#: a cell holding too many rows is split into this many equal cells over [its min, its
#: max] (one more aggregate pass), at most REFINE_ROUNDS times, up to MAX_INDEX_EDGES edges
REFINE_CELLS = 256
REFINE_ROUNDS = 3
MAX_INDEX_EDGES = 1 << 12


def index_edges(lo: float, hi: float) -> np.ndarray:
    """The public cells of a column's one aggregate pass: the error bars' tree cells
    (the log chart over [lo, hi], :data:`TREE`), repeated edges merged."""
    from .intervals import chart_scale_for, tree_edges

    return np.unique(tree_edges(lo, hi, chart_scale_for(lo, hi), TREE[0] ** TREE[1]))


class IndexedColumn:
    """A column clamped to [lo, hi] on an engine, read by rank through ONE aggregate
    pass (:meth:`~instancedp.backends.Source.histogram_stats` on :func:`index_edges`:
    per cell its count, minimum and maximum, and the exact clamped sum).

    The rows of cell c are the ranks [cum_c, cum_{c+1}) and lie in [min_c, max_c]
    (rows of earlier cells are < min_c, of later cells > max_c), so a rank window
    is read by fetching its cells' value ranges (:meth:`~instancedp.backends.Source.
    range_values`, at most :data:`FETCH_ROWS` rows), a cell whose minimum equals its
    maximum is known without a read, a cell holding too many rows is split
    (:data:`REFINE_CELLS` equal cells over its [min, max], one more pass), and a
    window still too wide is read by the engine's ``order_window``.  Every path
    returns the sorted clamped values at the ranks asked: what an in-memory array
    gives (:class:`~instancedp.mechanisms.recursive_quantiles.SortedRows`), so the
    draws are the same.  Memory: the index (≤ 1,025 cells) and the fetched cells."""

    def __init__(self, source: Any, column: str, lo: float, hi: float, *,
                 cells: tuple[np.ndarray, ...] | None = None, missing: Any = "drop") -> None:
        self.source, self.column, self.lo, self.hi = source, column, lo, hi
        self.missing = missing
        if cells is None:
            self.edges = index_edges(lo, hi)
            self.counts, self.mins, self.maxs, self.total = source.histogram_stats(
                column, self.edges, missing=missing)
        else:  # an index the caller has (edges, counts, mins, maxs: ``log_bins``); no sum
            self.edges, self.counts, self.mins, self.maxs = cells
            self.total = None
        self.cum = np.concatenate(([0], np.cumsum(self.counts)))
        self.n = int(self.cum[-1])
        self._values: dict[int, np.ndarray] = {}

    def _cells(self, start: int, stop: int) -> range:
        first = int(np.searchsorted(self.cum, start, side="right")) - 1
        last = int(np.searchsorted(self.cum, stop - 1, side="right")) - 1
        return range(first, last + 1)

    def _known(self, c: int) -> bool:
        return self.counts[c] == 0 or self.mins[c] == self.maxs[c] or c in self._values

    def _ensure(self, windows: list[tuple[int, int]]) -> bool:
        """Make the cells of the rank windows known: fetch them in one pass, after
        splitting cells that hold too many rows (each split is one more aggregate pass
        on finer public-in-the-release edges); False when that does not suffice."""
        for round_ in range(REFINE_ROUNDS + 1):
            cells: set[int] = set()
            for start, stop in windows:
                if stop > start:
                    cells.update(self._cells(start, stop))
            need = sorted(c for c in cells if not self._known(c))
            if not need:
                return True
            if int(self.counts[need].sum()) <= FETCH_ROWS:
                self._fetch(need)
                return True
            if round_ == REFINE_ROUNDS or not self._refine(need):
                return False
        return False

    def _refine(self, need: list[int]) -> bool:
        """Split each cell of ``need`` into equal cells over its [min, max] (at most
        REFINE_CELLS each, at most MAX_INDEX_EDGES edges in all)."""
        per = min(REFINE_CELLS, (MAX_INDEX_EDGES - self.edges.size) // len(need))
        if per < 2:
            return False
        extra = [np.linspace(self.mins[c], self.maxs[c], per + 1)[1:-1] for c in need]
        edges = np.unique(np.concatenate([self.edges, *extra]))
        if edges.size == self.edges.size:
            return False
        self.edges = edges
        self.counts, self.mins, self.maxs, _ = self.source.histogram_stats(
            self.column, edges, missing=self.missing)
        self.cum = np.concatenate(([0], np.cumsum(self.counts)))
        self._values = {}
        return True

    def _fetch(self, need: list[int]) -> None:
        """Read the rows of the cells ``need`` (not known yet) in one pass: one value
        range over all of them when the cells between hold at most :data:`FETCH_ROWS`
        rows in all (an engine scans one range much faster than many), else one per run
        of consecutive cells."""
        runs: list[list[int]] = []
        if int(self.cum[need[-1] + 1] - self.cum[need[0]]) <= FETCH_ROWS:
            need = [c for c in range(need[0], need[-1] + 1) if self.counts[c] > 0]
            runs.append(need)  # ordered, value-disjoint cells: [min first, max last] holds them
        for c in need if not runs else []:
            # consecutive cells: one value range [min of the first, max of the last]
            if runs and runs[-1][-1] == c - 1:
                runs[-1].append(c)
            else:
                runs.append([c])
        ranges = [(float(self.mins[r[0]]), float(self.maxs[r[-1]])) for r in runs]
        vals = self.source.range_values(self.column, self.lo, self.hi, ranges,
                                        missing=self.missing)
        pos = 0
        for c in need:
            self._values[c] = vals[pos:pos + int(self.counts[c])]
            pos += int(self.counts[c])
        if pos != vals.size:  # the cells' counts and their rows disagree: an engine fault
            raise RuntimeError(f"rank index of {self.column!r}: {vals.size} rows, {pos} counted")

    def prefetch(self, windows: list[tuple[int, int]]) -> None:
        self._ensure(windows)

    def read(self, start: int, stop: int) -> np.ndarray:
        if stop <= start:
            return np.empty(0)
        if not self._ensure([(start, stop)]):
            return self.source.order_window(self.column, self.lo, self.hi, start, stop,
                                            missing=self.missing)
        parts = []
        for c in self._cells(start, stop):
            a = max(start, int(self.cum[c])) - int(self.cum[c])
            b = min(stop, int(self.cum[c + 1])) - int(self.cum[c])
            v = self._values.get(c)
            parts.append(v[a:b] if v is not None else np.full(b - a, self.mins[c]))
        return np.concatenate(parts)

    def below_upper(self) -> int:
        """#{rows < hi} (rows clamped to hi are not below it)."""
        c = self.counts.size - 1
        if self.counts[c] == 0 or self.maxs[c] < self.hi:
            return self.n
        if self.mins[c] == self.hi:
            return int(self.cum[c])
        left, right = int(self.cum[c]), self.n - 1  # the first rank holding hi: bisection
        while left < right:
            mid = (left + right) // 2
            if self.read(mid, mid + 1)[0] < self.hi:
                left = mid + 1
            else:
                right = mid
        return left

    def leaves(self, plan: Any) -> np.ndarray:
        """The error bars' tree cell counts (:func:`~instancedp.intervals.tree_leaves`)."""
        pos = np.searchsorted(self.edges, plan.edges[:-1], side="left")
        below = np.where(pos < self.counts.size, self.cum[np.minimum(pos, self.counts.size)],
                         -1)
        if np.any(below < 0):  # repeated edges at hi: the rows equal to hi have a cell
            below[below < 0] = self.below_upper()
        return np.diff(np.append(below, self.n))


#: the range step's rank index out of core: ``log_bins`` on the grid's ratio β^(1/k),
#: k = this (cells 1/k of a grid step wide: the location's window reads small cells,
#: with no refining pass at 10^6 rows; at most 2·k·1,063 labels, whatever n is)
INDEX_SUBSTEPS = 256


class ColumnData:
    """What :func:`column_release` reads: the column in memory (a sorted array) or on
    an engine (``source`` and ``column``).  Both give the same values to the same
    code, so the same seed gives the same record."""

    def __init__(self, x: np.ndarray | None = None, *, source: Any = None,
                 column: str | None = None, data: Any = None) -> None:
        self.x, self.source, self.column, self.data = x, source, column, data

    def bound_free(self, plan: dict[str, Any], rs: Any) -> dict[str, Any]:
        """The bound-free range step (module docstring): the location m (the one-step
        bound-free median, :class:`~instancedp.mechanisms.loglog.LogLogQuantile`, drawn
        in stages: a window of order statistics around rank n/2), then the spread
        step around m (:func:`~instancedp.mechanisms.unbounded_quantiles.spread_index`)
        on counts #{x ≤ t}.  In memory both read the sorted rows; on an engine ONE
        ``log_bins`` aggregate gives n, a rank index whose median window is fetched in
        one ``range_values`` pass (:meth:`log_bins_reader`), and the counts
        (:class:`~instancedp.mechanisms.unbounded.BinnedRankCounts`: exact, one
        histogram where a cell straddles a threshold) — the same values and
        integers, so the same draws."""
        from .mechanisms.unbounded import RankCounts
        from .mechanisms.unbounded_quantiles import spread_index

        loc = plan["location"]
        if self.source is not None:
            counts, read, n = self.log_bins_reader(loc)
            m = loc._draw(loc.pieces(n, read), rs)
        else:
            counts = RankCounts(self.x)
            m = loc._draw(loc._weights(self.x), rs)
        j = spread_index(counts, m, plan["spread"], plan["relation"], BOUND_FREE["beta"],
                         BOUND_FREE["scale"], BOUND_FREE["steps"], rs)
        lo, hi = bound_free_range(m, j)
        return {"location": float(m), "spread_index": int(j), "range": [lo, hi]}

    def log_bins_reader(self, loc: Any) -> tuple[Any, Any, int]:
        """(counts, rank reader, n) of the column on its engine from ONE ``log_bins``
        aggregate on a grouping :data:`INDEX_SUBSTEPS` times finer than the range
        step's grid (small cells: the location's window is fetched without a refining
        pass).  The reader gives the rows at ranks [a, b), padded with the location's
        support ends (±max double) outside [0, n), as its in-memory read does."""
        from .backends.numpy import pad_window
        from .mechanisms.quantile import PieceSet, score_sensitivity
        from .mechanisms.unbounded import BinnedRankCounts

        cells = self.source.log_bins(self.column, BOUND_FREE["beta"] ** (1 / INDEX_SUBSTEPS),
                                     BOUND_FREE["scale"])
        counts = BinnedRankCounts(
            cells, lambda edges: self.source.histogram(self.column, edges))
        big = float(np.finfo(np.float64).max)
        index = IndexedColumn(self.source, self.column, -big, big, cells=cells)
        n = index.n
        # a read hint (which rows are fetched, never a value read or drawn)
        start, stop = PieceSet.window_pieces(n, loc.q, loc.epsilon,
                                             score_sensitivity(loc.q, loc.neighbours))
        index.prefetch([(max(start - 1, 0), min(stop, n))])

        def read(a: int, b: int) -> np.ndarray:
            first = min(max(a, 0), n)
            inside = index.read(first, min(max(b, 0), n)) + 0.0
            return pad_window(inside, a, b, loc.lower, loc.upper, offset=first, n=n)

        return counts, read, n

    def clamped(self, lo: float, hi: float) -> tuple[int, int | None, Any, Any]:
        """(n, exact shifted clamped sum, rank reader, tree leaves function) on [lo, hi]."""
        if self.source is not None:
            idx = IndexedColumn(self.source, self.column, lo, hi)
            return idx.n, idx.total, idx, idx.leaves
        from .backends import numpy as ref
        from .intervals import tree_leaves
        from .mechanisms.recursive_quantiles import SortedRows

        xc = np.clip(self.x, lo, hi) + 0.0
        try:
            total: int | None = ref.count_and_sum(xc, lo, hi, True)[1]
        except ParameterError:  # hi − lo overflows: no grid (as histogram_stats says)
            total = None
        return int(xc.size), total, SortedRows(xc), lambda plan: tree_leaves(xc, plan)


def _rank_windows(qmech: Any, n: int) -> list[tuple[int, int]]:
    """A read hint: the order windows around every level's target rank q·n in the whole
    column (a node's actual window is near it), fetched in one pass.  Only which reads
    happen depends on it, never a value read or drawn."""
    from .mechanisms.quantile import PieceSet

    eps0 = qmech.per_mechanism_epsilon()
    out = []
    for q in qmech.query.qs:
        start, stop = PieceSet.window_pieces(n, float(q), eps0, 1.0)
        out.append((max(start - 1, 0), min(stop, n)))
    return out


def column_release(
    data: Any, col: str, plan: dict[str, Any], shares: dict[str, float], source: Any,
    sum_count: type, level: float | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One column's row of the result from a :class:`ColumnData` (or its sorted
    non-missing values).  The draws, in order: the quantiles (bound-free p5 and
    p95 first where there are no bounds), the sum's noise, the count's, the
    error bars' tree."""
    from .queries.means import fixed_point_exponent, fixed_point_value

    if not isinstance(data, ColumnData):
        data = ColumnData(np.sort(np.asarray(data, dtype=np.float64)))
    records: dict[str, Any] = {}
    if plan["bounds"] is not None:
        lo, hi = plan["bounds"]
        qmech = plan["quantiles"]
    else:  # B: a public function of the range step's released values
        records["range"] = data.bound_free(plan, source)
        lo, hi = records["range"]["range"]
        m = records["range"]["location"]
    n, total, reader, leaves = data.clamped(lo, hi)
    if plan["bounds"] is not None:
        reader.prefetch(_rank_windows(qmech, n))
        q = qmech._record(qmech.draw_from(n, reader, source), source)
        records["quantiles"] = q.to_dict()
        qs = [float(v) for v in q.value]
    else:  # the location is p50; the outer four by the recursion on B's two halves
        outer = outer_quantiles(n, reader, (lo, hi), m, shares["quantiles"],
                                plan["relation"], source)
        records["outer_quantiles"] = outer
        qs = sorted([outer[0], outer[1], m, outer[2], outer[3]])
        if BOUND_FREE["mean_range"] == "R":  # a tighter clamp: one more pass
            from .intervals import released_range

            lo, hi = released_range([qs[0], qs[-1]])
            lo, hi = max(lo, records["range"]["range"][0]), min(hi, records["range"]["range"][1])
            n, total, reader, leaves = data.clamped(lo, hi)
    # ε_sum + ε_count = 2·¼ of the column's ε; split ½ within the sum-count mean
    mean_mech = sum_count(lo, hi, shares["sum"] + shares["count"],
                          split=shares["sum"] / (shares["sum"] + shares["count"]))
    # the draws of NoisySumOverCount.release: the sum's noise, then the count's
    s_value = fixed_point_value(total, fixed_point_exponent(lo, hi, shift=True))
    s = mean_mech._sum._draw(s_value, source, None)
    c = mean_mech._count._draw(float(n), source, None)
    # lo + (hi − lo) may round above hi: the clamped mean lies in [lo, hi]
    mean = min(lo + min(max(s / max(c, 1.0), 0.0), mean_mech.range), hi)
    row: dict[str, Any] = {"column": col, "count": max(0, int(round(c))), "mean": float(mean)}
    row.update(dict(zip(QUANTILE_NAMES, qs, strict=True)))
    if level is not None:
        row["ci"] = _column_intervals(leaves, s, c, qs, mean_mech, plan, (lo, hi), shares,
                                      level, source)
    if plan["bounds"] is None:
        row["mean_clamp"] = [float(lo), float(hi)]
    return row, records


#: the outer levels on B's halves: (p5, p25) of the rows below m and (p75, p95) of
#: the rows from m on, as levels of each half (Kaplan, Schnapp & Stemmer 2022's
#: children of a root at the median)
HALF_LEVELS: tuple[tuple[float, float], tuple[float, float]] = ((0.1, 0.5), (0.5, 0.9))


class _Offset:
    """A rank reader over ranks [offset, …) of another (one half of a column)."""

    def __init__(self, reader: Any, offset: int) -> None:
        self.reader, self.offset = reader, offset

    def read(self, start: int, stop: int) -> np.ndarray:
        return self.reader.read(self.offset + start, self.offset + stop)

    def prefetch(self, windows: list[tuple[int, int]]) -> None:
        self.reader.prefetch([(a + self.offset, b + self.offset) for a, b in windows])


def rank_below(reader: Any, n: int, v: float) -> int:
    """#{rows < v} among the n sorted rows ``reader`` reads by rank (bisection on
    single ranks; an index's cells first where the reader has one)."""
    left, right = 0, n
    if isinstance(reader, IndexedColumn):  # the cell holding v bounds the bisection
        c = int(np.searchsorted(reader.edges, v, side="right")) - 1
        c = min(max(c, 0), reader.counts.size - 1)
        left, right = int(reader.cum[c]), int(reader.cum[c + 1])
        if reader.counts[c] == 0 or reader.mins[c] >= v:
            return left
        if reader.maxs[c] < v:
            return right
    elif hasattr(reader, "x"):
        return int(np.searchsorted(reader.x, v, side="left"))
    while left < right:
        mid = (left + right) // 2
        if reader.read(mid, mid + 1)[0] < v:
            left = mid + 1
        else:
            right = mid
    return left


def outer_quantiles(n: int, reader: Any, bounds: tuple[float, float], m: float,
                    epsilon: float, relation: str, source: Any) -> list[float]:
    """p5, p25, p75, p95 given the released median m: the rows below m and the rows
    from m on are split by a public value, so each half runs the recursive algorithm
    (:func:`~instancedp.mechanisms.recursive_quantiles.recursive_draw`: two levels,
    ε₀ each) and a row changes one half only: ε = 2·ε₀ under add/remove (parallel
    composition across the halves, sequential over the two levels; twice that under
    substitution, as :class:`~instancedp.mechanisms.recursive_quantiles.
    RecursiveQuantiles`).  The left half's draws come first."""
    from .mechanisms.recursive_quantiles import recursion_depth, recursive_draw

    lo, hi = bounds
    m = min(max(m, lo), hi)
    eps0 = epsilon / (recursion_depth(2) * (2 if relation == "substitution" else 1))
    if isinstance(reader, IndexedColumn):
        reader.prefetch(_outer_hint(reader, m, eps0))
    cut = rank_below(reader, n, m)
    left = recursive_draw(HALF_LEVELS[0], lo, m, eps0, cut, _Offset(reader, 0), source)
    right = recursive_draw(HALF_LEVELS[1], m, hi, eps0, n - cut, _Offset(reader, cut), source)
    return [float(v) for v in (*left, *right)]


def _outer_hint(index: IndexedColumn, m: float, eps0: float) -> list[tuple[int, int]]:
    """A read hint for :func:`outer_quantiles` on an engine (which rows are fetched in
    ONE ``range_values`` pass, never a value read or drawn): the index cell holding m
    (the cut's bisection), and windows around the four levels' target ranks in the
    whole column for every cut that cell allows, widened by half a window for the
    second level's shift.  Dropped (the second level's first) when its cells hold
    more than :data:`FETCH_ROWS` rows: a hint never costs a refining pass."""
    from .mechanisms.quantile import PieceSet

    n = index.n
    c = int(np.searchsorted(index.edges, m, side="right")) - 1
    c = min(max(c, 0), index.counts.size - 1)
    cut_lo, cut_hi = int(index.cum[c]), int(index.cum[c + 1])
    start, stop = PieceSet.window_pieces(n, 0.5, eps0, 1.0)
    pad = (stop - start) // 2 + (stop - start) // 4

    def around(q: float, right: bool) -> tuple[int, int]:
        a = cut_lo + q * (n - cut_lo) if right else q * cut_lo
        b = cut_hi + q * (n - cut_hi) if right else q * cut_hi
        return max(int(math.floor(min(a, b))) - pad, 0), min(int(math.ceil(max(a, b))) + pad, n)

    first = [around(HALF_LEVELS[0][0], False), around(HALF_LEVELS[1][0], True)]
    second = [around(HALF_LEVELS[0][1], False), around(HALF_LEVELS[1][1], True)]
    for hint in ([(cut_lo, cut_hi), *first, *second], [(cut_lo, cut_hi), *first],
                 [(cut_lo, cut_hi)]):
        cells: set[int] = set()
        for a, b in hint:
            if b > a:
                cells.update(index._cells(a, b))
        if int(sum(index.counts[k] for k in cells if not index._known(k))) <= FETCH_ROWS:
            return hint
    return []


def _column_intervals(
    leaves: Any, s: float, c: float, qs: list[float], mean_mech: Any, plan: dict[str, Any],
    clamp: tuple[float, float], shares: dict[str, float], level: float, source: Any,
) -> dict[str, list[float]]:
    """[lower, upper] per statistic (module docstring): count and mean by
    post-processing the noisy sum and count, the five quantiles from one noisy
    tree at the intervals' share (on the bounds, or on B (R) with open ends)."""
    from .intervals import (
        chart_scale_for,
        noise_interval,
        open_ends,
        quantiles_intervals,
        ratio_interval,
    )
    from .mechanisms.global_noise import _unit

    c_lo, c_hi = noise_interval(c, mean_mech._count.scale, _unit("laplace"), level)
    m_lo, m_hi = ratio_interval(s, c, mean_mech._sum.scale, mean_mech._count.scale,
                                clamp[0], mean_mech.range, level)
    lo, hi = clamp
    # the clamped mean lies in [lo, hi]; an end computed as lo + range·1 may round a few
    # ulps inside hi (and the truth can be hi exactly: every row clamped there)
    tol = 8 * float(np.spacing(max(abs(lo), abs(hi))))
    m_lo = lo if m_lo <= lo + tol else m_lo
    m_hi = hi if m_hi >= hi - tol else m_hi
    pairs, _ = quantiles_intervals(
        None, LEVELS, lower=lo, upper=hi, neighbours=plan["relation"],
        epsilon=shares["intervals"], level=level, chart_scale=chart_scale_for(lo, hi),
        source=source, centres=qs, branching=TREE[0], depth=TREE[1], leaves=leaves)
    if plan["bounds"] is None:
        pairs = open_ends(pairs, lo, hi)
    out = {"count": [max(float(c_lo), 0.0), max(float(c_hi), 0.0)],
           "mean": [float(m_lo), float(m_hi)]}
    out.update({name: [float(a), float(b)]
                for name, (a, b) in zip(QUANTILE_NAMES, pairs, strict=True)})
    return out


def describe_column(x: Any, epsilon: float, *, bounds: tuple[float, float] | None = None,
                    ci: float | None = DEFAULT_LEVEL, rng: Any = None) -> dict[str, Any]:
    """One column's row of :func:`describe` at the column's ε (describe gives each of
    k columns ε/k): the same plan and draws as describe on a one-column table of the
    finite values ``x`` with the same seed (benchmarks and tests call it without a
    session; it charges nothing)."""
    from .intervals import check_level
    from .mechanisms.sum_count import NoisySumOverCount
    from .random import resolve

    level = None if ci is None else check_level(ci)
    eps = _validate.epsilon(epsilon)
    shares = {k: v * eps for k, v in column_split(bounds is not None, level).items()}
    plan = column_plan(None if bounds is None else _validate.bounds(*bounds), shares,
                       "add_remove")
    row, _ = column_release(np.sort(np.asarray(x, dtype=np.float64)), "x", plan, shares,
                            resolve(rng), NoisySumOverCount, level)
    return row


def print_table(result: DescribeResult, title: str | None = None) -> None:
    """The rich table of the CLI (one row per column) and the stated split."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    p = result.parameters
    table = Table(title=title or f"private describe: {result.guarantee.describe()}")
    # fold, never cut: a narrow terminal truncated names and error bars to "bill_len…"
    table.add_column("column", style="bold", overflow="fold")
    for s in STATISTICS:
        table.add_column(s, justify="right", overflow="fold")
    for r in result.rows:
        cells = [escape(r["column"]), str(r["count"])] + [_fmt(r[s]) for s in STATISTICS[1:]]
        table.add_row(*cells)
        if r.get("ci"):  # the error bars under the values
            table.add_row(f"  {100 * p['intervals']['level']:g}% ci",
                          *(f"[{_fmt(r['ci'][s][0])}, {_fmt(r['ci'][s][1])}]"
                            for s in STATISTICS), style="dim")
    console = Console(width=max(100, Console().width), highlight=False)
    console.print(table)
    split = p["split"]
    say = print  # plain lines: the mechanism descriptions contain brackets
    kinds = []
    if any(p["bounds"][c] for c in p["columns"]):
        kinds.append(("with bounds" if "within_column_bound_free" in split else "",
                      split["within_column"]))
    if "within_column_bound_free" in split:
        kinds.append(("without bounds", split["within_column_bound_free"]))
    within = "; ".join(
        (f"{label}: " if label and len(kinds) > 1 else "")
        + ", ".join(f"{_share(v)} {k}" for k, v in shares.items()) for label, shares in kinds)
    say(
        f"split      ε = {_fmt(p['epsilon'])}: {_fmt(split['per_column'])} per column "
        f"({len(p['columns'])} columns), within a column {within}; one ledger charge"
    )
    if "intervals" in p:
        cov = p["intervals"]["covers"]
        say(f"ci         {100 * p['intervals']['level']:g}% each: count covers {cov['count']}; "
            f"mean covers {cov['mean']}; quantiles cover {cov['quantiles']}")
    say(f"neighbours {p['neighbours']}; missing values dropped; columns: "
                  f"{p['column_rule']}")
    for col, mech in p["mechanisms"].items():
        b = p["bounds"][col]
        where = f"bounds [{_fmt(b[0])}, {_fmt(b[1])}]" if b else "no bounds"
        say(f"{col}: {where}; quantiles {mech['quantiles']}; mean {mech['mean']}")
    if not result.secure:
        say("secure     false  <-- SEEDED SIMULATION, NOT A PRIVATE RELEASE")


def _share(v: float) -> str:
    return {0.5: "½", 0.25: "¼", 0.375: "⅜", 0.125: "⅛"}.get(v, f"{v:g}")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else str(v)
    return str(v)
