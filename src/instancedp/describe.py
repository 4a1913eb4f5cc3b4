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
  the clamped sum and ¼ to the count; the mean is lower + (noisy sum ÷ noisy
  count) as in :class:`~instancedp.mechanisms.sum_count.NoisySumOverCount`,
  whose parts are reused, and the count is that noisy count (rounded, at
  least 0: post-processing).  The parts are pure ε-DP and add up to ε: one
  ledger charge of ε (basic composition, Dwork & Roth 2014, Thm. 3.16 — exact
  for pure ε, so no privacy-loss-distribution figure is needed).
* **Mechanisms** — with public bounds (lo, hi) for a column: the recursive
  quantiles of Kaplan, Schnapp & Stemmer (2022) (O(n log n); the joint
  mechanism's O(m²·n) pass is slower on large tables) and the mean clamped to
  [lo, hi].  Without bounds: p5 and p95 by the bound-free quantile (Durfee
  2023; ¼ of the quantile share each), which give the public range
  R = [p5 − w/2, p95 + w/2], w = p95 − p5 (grid ratio :data:`UNBOUNDED_BETA`);
  then the quartiles by the recursive algorithm on the rows clamped to R (½ of
  the share), and the mean clamped to R (adaptive composition: R is a
  function of released values; a winsorised mean, stated in the output).  The five values are sorted
  (post-processing).

Error bars: each part's release object may carry ``ci`` (the private
intervals of :mod:`instancedp.intervals` where available); :func:`part_ci` is
the one hook that reads it, and the result shows a ``ci`` column when any
part has one.
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
#: the share of a column's ε per part
SPLIT: dict[str, float] = {"quantiles": 0.5, "sum": 0.25, "count": 0.25}
#: the bound-free grid's ratio in describe: 1% steps (the scan's length, and its
#: secure draws, grow like log(|value|)/log(beta); 1.001 is ten times slower)
UNBOUNDED_BETA = 1.01
#: declared types that are numbers (DuckDB's names for Arrow/Parquet/pandas types)
_NUMERIC = {
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
    "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "REAL",
}


def part_ci(release: Any) -> Any:
    """The error bar a part's release carries (``Release.ci``), or None: the one hook."""
    ci = getattr(release, "ci", None)
    return ci() if callable(ci) else ci


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
        return {
            "statistics": [dict(r) for r in self.rows],
            "guarantee": self.guarantee.as_dict(),
            "mechanism": "describe",
            "parameters": self.parameters,
            "secure": self.secure,
        }

    def to_frame(self) -> Any:
        """A pandas DataFrame like ``DataFrame.describe()``: statistics × columns."""
        import pandas as pd

        data = {r["column"]: [r[s] for s in STATISTICS] for r in self.rows}
        return pd.DataFrame(data, index=list(STATISTICS))

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
) -> DescribeResult:
    """The body of :meth:`instancedp.session.Session.describe` (see the module docstring)."""
    from .mechanisms.sum_count import NoisySumOverCount
    from .random import resolve
    from .recipes import build_quantiles_mechanism
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
    chosen, rule = numeric_columns(data, columns)
    col_bounds = _check_bounds(bounds, chosen)
    eps_col = eps / len(chosen)
    shares = {k: v * eps_col for k, v in SPLIT.items()}
    plans: dict[str, dict[str, Any]] = {}
    for col in chosen:
        b = col_bounds.get(col)
        if b is not None:
            qmech = build_quantiles_mechanism(
                LEVELS, shares["quantiles"], mechanism="recursive", bounds=b, neighbours=rel
            )
        else:  # the outer pair bound-free; the quartiles once the range is released
            from .mechanisms.unbounded_quantiles import UnboundedQuantiles

            qmech = UnboundedQuantiles(
                (LEVELS[0], LEVELS[-1]), shares["quantiles"] / 2, neighbours=rel,
                beta=UNBOUNDED_BETA,
            )
        plans[col] = {"bounds": b, "quantiles": qmech, "relation": rel}
    parts = [PureDP(shares[k]) for _ in chosen for k in SPLIT]
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
            "within_column": dict(SPLIT),
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
    session.ledger.price(session.dataset_id, guarantee, None)  # CompositionError early
    charge = session._charge(guarantee, "describe", parameters, None)
    try:
        rows, records = [], {}
        for col in chosen:
            rows_col, rec = _describe_column(data, col, plans[col], shares, source,
                                             NoisySumOverCount)
            rows.append(rows_col)
            records[col] = rec
    except Exception:
        session._mark(charge.id, "failed")
        if session.analyst:  # the cause may depend on the rows
            raise DataError(ANALYST_FAILURE) from None
        raise
    session._mark(charge.id, "released")
    return DescribeResult(rows, guarantee, parameters, source.secure, records)


def _describe_column(
    data: Any, col: str, plan: dict[str, Any], shares: dict[str, float], source: Any,
    sum_count: type,
) -> tuple[dict[str, Any], dict[str, Any]]:
    from .io import AnalystQuery
    from .recipes import build_quantiles_mechanism

    x = np.sort(AnalystQuery(data, column=col).read())  # finite values; missing dropped
    q = plan["quantiles"].release(x, rng=source)
    qs = [float(v) for v in q.value]
    records = {"quantiles": q.to_dict()}
    inner_ci = None
    if plan["bounds"] is not None:
        lo, hi = plan["bounds"]
    else:  # a public function of released values: the winsorising range R
        w = qs[-1] - qs[0]
        lo, hi = qs[0] - w / 2, qs[-1] + w / 2
        if not hi > lo:
            pad = max(abs(lo), 1.0) * 1e-6
            lo, hi = lo - pad, hi + pad
        inner = build_quantiles_mechanism(
            LEVELS[1:-1], shares["quantiles"] / 2, mechanism="recursive", bounds=(lo, hi),
            neighbours=plan["relation"],
        ).release(x, rng=source)
        records["quartiles"] = inner.to_dict()
        qs = sorted([qs[0], *(float(v) for v in inner.value), qs[-1]])
        inner_ci = part_ci(inner)
    # ε_sum + ε_count = 2·¼ of the column's ε; split ½ within the sum-count mean
    mean_mech = sum_count(lo, hi, shares["sum"] + shares["count"],
                          split=shares["sum"] / (shares["sum"] + shares["count"]))
    y = mean_mech._shifted(x)
    s = mean_mech._sum.release(y, rng=source).value
    c = mean_mech._count.release(y, rng=source).value
    mean = lo + min(max(s / max(c, 1.0), 0.0), mean_mech.range)
    row: dict[str, Any] = {"column": col, "count": max(0, int(round(c))), "mean": float(mean)}
    row.update(dict(zip(QUANTILE_NAMES, qs, strict=True)))
    cis = {"quantiles": part_ci(q), "quartiles": inner_ci}
    if any(v is not None for v in cis.values()):
        row["ci"] = {k: v for k, v in cis.items() if v is not None}
    if plan["bounds"] is None:
        row["mean_clamp"] = [float(lo), float(hi)]
    return row, records


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
    if result.has_ci:
        table.add_column("ci")
    for r in result.rows:
        cells = [escape(r["column"]), str(r["count"])] + [_fmt(r[s]) for s in STATISTICS[1:]]
        if result.has_ci:
            cells.append(escape(str(r.get("ci", ""))))
        table.add_row(*cells)
    console = Console(width=max(100, Console().width), highlight=False)
    console.print(table)
    split = p["split"]
    say = print  # plain lines: the mechanism descriptions contain brackets
    say(
        f"split      ε = {_fmt(p['epsilon'])}: {_fmt(split['per_column'])} per column "
        f"({len(p['columns'])} columns), within a column ½ quantiles, ¼ sum, ¼ count; "
        "one ledger charge"
    )
    say(f"neighbours {p['neighbours']}; missing values dropped; columns: "
                  f"{p['column_rule']}")
    for col, mech in p["mechanisms"].items():
        b = p["bounds"][col]
        where = f"bounds [{_fmt(b[0])}, {_fmt(b[1])}]" if b else "no bounds"
        say(f"{col}: {where}; quantiles {mech['quantiles']}; mean {mech['mean']}")
    if not result.secure:
        say("secure     false  <-- SEEDED SIMULATION, NOT A PRIVATE RELEASE")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else str(v)
    return str(v)
