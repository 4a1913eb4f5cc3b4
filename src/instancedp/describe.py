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
  sequential composition), and within a column ½ to the five quantiles, ¼ to
  the clamped sum and ¼ to the count (:data:`SPLIT`); with error bars (the
  default, ``ci=0.95``) the quantiles keep ⅜ and their intervals take ⅛
  (:data:`SPLIT_CI`).  The mean is lower + (noisy sum ÷ noisy count) as in
  :class:`~instancedp.mechanisms.sum_count.NoisySumOverCount`, whose parts are
  reused, and the count is that noisy count (rounded, at least 0:
  post-processing).  The parts are pure ε-DP and add up to ε: one ledger
  charge of ε (basic composition, Dwork & Roth 2014, Thm. 3.16 — exact for
  pure ε, so no privacy-loss-distribution figure is needed).
* **Mechanisms** — with public bounds (lo, hi) for a column: the recursive
  quantiles of Kaplan, Schnapp & Stemmer (2022) (O(n log n); the joint
  mechanism's O(m²·n) pass is slower on large tables) and the mean clamped to
  [lo, hi].  Without bounds: p5 and p95 by the bound-free quantile (Durfee
  2023; ¼ of the quantile share each), which give the public range
  R = [p5 − w/2, p95 + w/2], w = p95 − p5 (grid ratio :data:`UNBOUNDED_BETA`;
  :func:`~instancedp.intervals.released_range`); then the quartiles by the
  recursive algorithm on the rows clamped to R (½ of the share), and the mean
  clamped to R (adaptive composition: R is a function of released values; a
  winsorised mean, stated in the output).  The five values are sorted
  (post-processing).

Error bars (``ci`` = the level; :mod:`instancedp.intervals`), each stating what
it covers, all inside the same charge:

* count — the noisy count ± its Laplace quantile (exact coverage, no extra ε),
  clipped at 0; covers the column's number of non-missing rows;
* mean — the sum ÷ count interval (post-processing of the two noisy values, no
  extra ε); covers the mean of the rows clamped to the bounds (to R without
  bounds: the winsorised mean);
* the five quantiles — ONE noisy hierarchical histogram at the intervals'
  share gives all five (:func:`~instancedp.intervals.quantiles_intervals`);
  with bounds they cover the quantiles of the clamped rows; without bounds the
  tree is drawn on R and an end that reaches R is opened to ±∞
  (:func:`~instancedp.intervals.open_ends`), so they cover the rows' own
  quantiles.

Memory: one column at a time is read into memory (8 bytes per non-missing
row, plus a sorted copy), never the whole table; the columns are read by
DuckDB from the file (CSV/Parquet) or the in-memory frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import _validate
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
#: the default confidence level of describe's error bars
DEFAULT_LEVEL = 0.95
#: describe's noisy tree: 32² = 1,024 cells (1,056 exact noises per column, a
#: quarter of a several-quantile release's 16³ tree: describe draws one per column)
TREE: tuple[int, int] = (32, 2)
#: what each error bar covers (stated in the output)
COVERS: dict[str, str] = {
    "count": "the column's number of non-missing rows",
    "mean": "the mean of the non-missing rows clamped to the bounds (without bounds: "
            "to the released range R, a winsorised mean)",
    "quantiles": "each level's empirical quantile x_(⌈q·n⌉) of the non-missing rows "
                 "(clamped to the bounds where given; without bounds an end reaching R "
                 "is infinite)",
}
#: the bound-free grid's ratio in describe: 1% steps (the scan's length, and its
#: secure draws, grow like log(|value|)/log(beta); 1.001 is ten times slower)
UNBOUNDED_BETA = 1.01
#: declared types that are numbers (DuckDB's names for Arrow/Parquet/pandas types)
_NUMERIC = {
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
    "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "REAL",
}


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
    split = SPLIT if level is None else SPLIT_CI
    shares = {k: v * eps_col for k, v in split.items()}
    plans = {col: column_plan(col_bounds.get(col), shares, rel) for col in chosen}
    parts = [PureDP(shares[k]) for _ in chosen for k in split]
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
            "within_column": dict(split),
            "composition": f"basic (pure ε parts sum to {total.epsilon:.12g})",
        },
        "bounds": {c: (list(p["bounds"]) if p["bounds"] else None) for c, p in plans.items()},
        "mechanisms": {
            c: {
                "quantiles": p["quantiles"].name if p["bounds"] else (
                    "unbounded_quantiles (p5, p95; ½ of the quantile share), then "
                    "recursive_quantiles (p25, p50, p75; ½) on R = [p5 − w/2, p95 + w/2], "
                    "w = p95 − p5"),
                "mean": "sum_over_count" + ("" if p["bounds"] else ", clamped to R"),
                "count": "the mean's noisy count, rounded, at least 0",
            }
            for c, p in plans.items()
        },
        "input_policy": {"missing": "drop", "out_of_range": "clamp to the bounds"},
    }
    if level is not None:
        from .intervals import CDF, RATIO

        parameters["intervals"] = {
            "level": level,
            "covers": dict(COVERS),
            "method": {"count": "laplace noise quantile (exact)", "mean": RATIO,
                       "quantiles": f"{CDF} (one tree of {TREE[0]}^{TREE[1]} cells for "
                                    "the five levels)"},
            "epsilon_per_column": shares["intervals"],
            "coverage": "each interval separately, at the level",
        }
    session.ledger.price(session.dataset_id, guarantee, None)  # CompositionError early
    charge = session._charge(guarantee, "describe", parameters, None)
    try:
        rows, records = [], {}
        for col in chosen:
            rows_col, rec = _describe_column(data, col, plans[col], shares, source,
                                             NoisySumOverCount, level)
            rows.append(rows_col)
            records[col] = rec
    except Exception:
        session._mark(charge.id, "failed")
        if session.analyst:  # the cause may depend on the rows
            raise DataError(ANALYST_FAILURE) from None
        raise
    session._mark(charge.id, "released")
    return DescribeResult(rows, guarantee, parameters, source.secure, records)


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
    else:  # the outer pair bound-free; the quartiles once the range is released
        from .mechanisms.unbounded_quantiles import UnboundedQuantiles

        qmech = UnboundedQuantiles((LEVELS[0], LEVELS[-1]), shares["quantiles"] / 2,
                                   neighbours=relation, beta=UNBOUNDED_BETA)
    return {"bounds": bounds, "quantiles": qmech, "relation": relation}


def _describe_column(
    data: Any, col: str, plan: dict[str, Any], shares: dict[str, float], source: Any,
    sum_count: type, level: float | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    from .io import AnalystQuery

    x = np.sort(AnalystQuery(data, column=col).read())  # finite values; missing dropped
    return column_release(x, col, plan, shares, source, sum_count, level)


def column_release(
    x: np.ndarray, col: str, plan: dict[str, Any], shares: dict[str, float], source: Any,
    sum_count: type, level: float | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One column's row of the result from its sorted non-missing values."""
    from .recipes import build_quantiles_mechanism

    q = plan["quantiles"].release(x, rng=source)
    qs = [float(v) for v in q.value]
    records = {"quantiles": q.to_dict()}
    if plan["bounds"] is not None:
        lo, hi = plan["bounds"]
    else:  # a public function of released values: the winsorising range R
        from .intervals import released_range

        lo, hi = released_range([qs[0], qs[-1]])
        inner = build_quantiles_mechanism(
            LEVELS[1:-1], shares["quantiles"] / 2, mechanism="recursive", bounds=(lo, hi),
            neighbours=plan["relation"],
        ).release(x, rng=source)
        records["quartiles"] = inner.to_dict()
        qs = sorted([qs[0], *(float(v) for v in inner.value), qs[-1]])
    # ε_sum + ε_count = 2·¼ of the column's ε; split ½ within the sum-count mean
    mean_mech = sum_count(lo, hi, shares["sum"] + shares["count"],
                          split=shares["sum"] / (shares["sum"] + shares["count"]))
    y = mean_mech._shifted(x)
    s = mean_mech._sum.release(y, rng=source).value
    c = mean_mech._count.release(y, rng=source).value
    mean = lo + min(max(s / max(c, 1.0), 0.0), mean_mech.range)
    row: dict[str, Any] = {"column": col, "count": max(0, int(round(c))), "mean": float(mean)}
    row.update(dict(zip(QUANTILE_NAMES, qs, strict=True)))
    if level is not None:
        row["ci"] = _column_intervals(x, s, c, qs, mean_mech, plan, (lo, hi), shares,
                                      level, source)
    if plan["bounds"] is None:
        row["mean_clamp"] = [float(lo), float(hi)]
    return row, records


def _column_intervals(
    x: np.ndarray, s: float, c: float, qs: list[float], mean_mech: Any, plan: dict[str, Any],
    clamp: tuple[float, float], shares: dict[str, float], level: float, source: Any,
) -> dict[str, list[float]]:
    """[lower, upper] per statistic (module docstring): count and mean by
    post-processing the noisy sum and count, the five quantiles from one noisy
    tree at the intervals' share (on the bounds, or on R with open ends)."""
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
    pairs, _ = quantiles_intervals(
        x, LEVELS, lower=lo, upper=hi, neighbours=plan["relation"],
        epsilon=shares["intervals"], level=level, chart_scale=chart_scale_for(lo, hi),
        source=source, centres=qs, branching=TREE[0], depth=TREE[1])
    if plan["bounds"] is None:
        pairs = open_ends(pairs, lo, hi)
    out = {"count": [max(float(c_lo), 0.0), max(float(c_hi), 0.0)],
           "mean": [float(m_lo), float(m_hi)]}
    out.update({name: [float(a), float(b)]
                for name, (a, b) in zip(QUANTILE_NAMES, pairs, strict=True)})
    return out


def print_table(result: DescribeResult, title: str | None = None) -> None:
    """The rich table of the CLI (one row per column) and the stated split."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    p = result.parameters
    table = Table(title=title or f"private describe: {result.guarantee.describe()}")
    table.add_column("column", style="bold")
    for s in STATISTICS:
        table.add_column(s, justify="right")
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
    within = ", ".join(f"{_share(v)} {k}" for k, v in split["within_column"].items())
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
