"""Per-group releases: several statistics for every group, one guarantee.

``group_release`` answers "median and p90 of income per state" in one charged
release.  Everything it shows is a function of public parameters and of the
noisy per-group answers:

* **Keys.**  Public keys (``keys=[...]``) get a release each, empty groups
  included: every group's mechanism is a total function of the group's rows
  under the public input policy (values clamped to the bounds, one fixed
  public row for mechanisms with no answer on an empty input —
  :func:`instancedp.session.analyst_policy`), after the read policy of a
  single release of the same mode (:func:`read_policy`: NULL, NaN and, in
  owner mode, ±inf dropped).  Rows whose key is not listed, or is NULL or
  NaN, are dropped (a row-local filter).  Unknown keys (``keys=None``) are
  chosen by private partition selection (:func:`selection_threshold`).
* **Contributions.**  Each row is one person, unless ``id_column=`` names a person
  column: each person then keeps at most one row per group and at most
  ``max_groups`` groups, chosen by a fixed keyed hash of (person, key, value)
  — a function of that person's own rows, so a neighbouring table (one person
  added or removed) changes at most ``max_groups`` groups by one row each.
* **Cost** (parallel composition, McSherry 2009, Thm 4; group privacy for the
  moved row).  Each group's mechanisms are calibrated for add/remove
  neighbours at ε_g; one row (person) touches c = ``max_groups`` groups under
  add/remove, and 2c under substitution (a row moved between groups leaves one
  and joins another; a changed row inside a group is a removal plus an
  addition).  The charge is c·Σε_g (2c·Σε_g under substitution), plus the
  selection's (ε_s, δ_s): basic composition of the statistics and the selection.

The record lists the keys, the per-group values and ONE guarantee; no group
size, sensitivity or noisy selection count appears in it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ParameterError
from .privacy import ApproxDP, Guarantee, compose

__all__ = [
    "GroupRelease",
    "parse_statistics",
    "selection_threshold",
    "selection_keep_probability",
    "select_partitions",
    "group_release",
]

#: the record's statement of the contribution model (public)
ONE_ROW_ONE_PERSON = "each row is one person"


# -- statistics ------------------------------------------------------------------
def parse_statistics(statistic: str | Sequence[str]) -> list[tuple[str, str, float | None]]:
    """``"median,p90,mean"`` or a list → [(label, recipe statistic, quantile)].

    ``pNN`` (0 < NN < 100, decimals allowed: ``p99.9``) is the NN-th percentile.
    """
    from .recipes import STATISTICS

    items = statistic.split(",") if isinstance(statistic, str) else list(statistic)
    out: list[tuple[str, str, float | None]] = []
    for raw in items:
        label = str(raw).strip().lower().replace("_", "-")
        if not label:
            continue
        if label.startswith("p") and label[1:].replace(".", "", 1).isdigit():
            q = float(label[1:]) / 100.0
            if not 0.0 < q < 1.0:
                raise ParameterError(
                    f"percentile {raw!r} must be between p0 and p100 (exclusive)",
                    parameter="statistic",
                    allowed="pNN with 0 < NN < 100",
                )
            out.append((label, "quantile", q))
        elif label in ("median", "mean", "count", "sum", "min", "max"):
            out.append((label, label, None))
        else:
            offered = ("median", "pNN", "mean", "count", "sum", "min", "max")
            why = " (offered as a single release)" if label in STATISTICS else ""
            raise ParameterError(
                f"statistic {raw!r} is not offered per group{why}; per group: "
                + ", ".join(offered),
                parameter="statistic",
                allowed=", ".join(offered),
            )
    if not out:
        raise ParameterError("statistic is empty", parameter="statistic")
    if len({label for label, _, _ in out}) != len(out):
        raise ParameterError("statistic lists a statistic twice", parameter="statistic")
    return out


def _split(split: Sequence[float] | None, parts: int, selection: bool) -> list[float]:
    """The budget fractions: explicit, or equal over statistics (+ the selection)."""
    n = parts + (1 if selection else 0)
    if split is None:
        return [1.0 / n] * n
    fr = [float(x) for x in split]
    if len(fr) != n or not all(math.isfinite(x) and x > 0 for x in fr):
        what = f"{parts} statistic(s)" + (" then the partition selection" if selection else "")
        raise ParameterError(
            f"split must give {n} positive fractions ({what}); got {list(split)!r}",
            parameter="split",
            allowed=f"{n} numbers > 0 summing to 1",
        )
    if abs(sum(fr) - 1.0) > 1e-9:
        raise ParameterError(
            f"split must sum to 1; got {sum(fr)!r}", parameter="split", allowed="sum = 1"
        )
    return fr


# -- partition selection -------------------------------------------------------------
def selection_threshold(epsilon: float, delta: float, sensitivity: int, new_keys: int) -> float:
    """Threshold T of the Laplace partition selection (Korolova et al. 2009;
    Wilson et al. 2020, "Differentially private SQL with bounded user
    contribution", §3.2).

    Each key's count of contributing people gets Laplace noise of scale
    b = Δ/ε (Δ = ``sensitivity``: the L1 change of the count vector, c under
    add/remove with c groups per person, 2c under substitution) and is kept iff
    count + Lap(b) > T.  A key present in only one of two neighbouring tables
    has count 1 there (one person, one row per group), so it is kept with
    probability P(Lap(b) > T − 1) = ½·exp(−(T − 1)/b).  At most
    ``new_keys`` = c such keys exist; asking ½·exp(−(T − 1)/b) = δ/c gives

        T = 1 + b·ln(c / (2δ)).

    With the count vector ε-DP by the Laplace mechanism, the selection is
    (ε, δ)-DP.  For one group per person under add/remove: T = 1 + ln(1/(2δ))/ε.
    """
    b = sensitivity / epsilon
    return 1.0 + b * math.log(new_keys / (2.0 * delta))


def selection_keep_probability(count: int, epsilon: float, delta: float,
                               sensitivity: int, new_keys: int) -> float:
    """P(count + Lap(Δ/ε) > T), exactly (the Laplace survival function)."""
    b = sensitivity / epsilon
    t = selection_threshold(epsilon, delta, sensitivity, new_keys) - count
    return 0.5 * math.exp(-t / b) if t >= 0 else 1.0 - 0.5 * math.exp(t / b)


def select_partitions(
    counts: Mapping[Any, int], epsilon: float, delta: float, *, sensitivity: int,
    new_keys: int, source: Any,
) -> list[Any]:
    """The keys whose noisy count passes :func:`selection_threshold` (sorted).

    Keys are visited in sorted order (a function of the key set only) and each
    draws one Laplace variate from ``source`` (secure: the exact path)."""
    from .mechanisms.base import add_noise
    from .noise.laplace import Laplace

    b = sensitivity / epsilon
    t = selection_threshold(epsilon, delta, sensitivity, new_keys)
    kept = []
    for key in _sorted_keys(counts):
        if counts[key] > 0 and add_noise(float(counts[key]), b, Laplace(1.0), source) > t:
            kept.append(key)
    return kept


def _sorted_keys(keys: Any) -> list[Any]:
    try:
        return sorted(keys)
    except TypeError:  # mixed types: order by (type name, text)
        return sorted(keys, key=lambda k: (type(k).__name__, str(k)))


# -- the record ------------------------------------------------------------------------
@dataclass(frozen=True)
class GroupRelease:
    """Per-group values under one guarantee (a Release-like record)."""

    by: str
    keys: list[Any]
    values: dict[str, list[Any]]
    guarantee: Guarantee
    mechanism: str
    parameters: Mapping[str, Any]
    secure: bool = True
    frame: str | None = field(default=None, repr=False)
    #: per statistic, each group's interval (lo, hi) where its release carries ``ci``
    intervals: Mapping[str, list[Any]] | None = field(default=None, repr=False)

    @property
    def refused(self) -> bool:
        return False

    @property
    def value(self) -> dict[str, list[Any]]:
        """Columns: the key, each statistic, and ``STAT_ci_lower``/``STAT_ci_upper``
        where the statistic's releases carry intervals."""
        out = {self.by: [_plain(k) for k in self.keys]}
        for s, vals in self.values.items():
            out[s] = [_plain(v) for v in vals]
            ci = (self.intervals or {}).get(s)
            if ci is not None:
                out[f"{s}_ci_lower"] = [None if c is None else _end(c[0]) for c in ci]
                out[f"{s}_ci_upper"] = [None if c is None else _end(c[1]) for c in ci]
        return out

    def rows(self) -> list[dict[str, Any]]:
        """One dict per group: the key, then each statistic (and ``STAT_ci`` = [lo, hi]
        where the statistic's releases carry an interval)."""
        out = []
        for i, key in enumerate(self.keys):
            row = {self.by: _plain(key)}
            for s, vals in self.values.items():
                row[s] = _plain(vals[i])
                ci = (self.intervals or {}).get(s)
                if ci is not None:
                    row[f"{s}_ci"] = None if ci[i] is None else [_end(x) for x in ci[i]]
            out.append(row)
        return out

    def json_lines(self, extra: Mapping[str, Any] | None = None) -> list[str]:
        """JSON lines: one object per group × statistic (key, statistic, value, ci where
        the release has one), then one object with the guarantee and the parameters."""
        import json

        lines = []
        for i, key in enumerate(self.keys):
            for s, vals in self.values.items():
                obj: dict[str, Any] = {self.by: _plain(key), "statistic": s,
                                       "value": _plain(vals[i])}
                ci = (self.intervals or {}).get(s)
                if ci is not None and ci[i] is not None:
                    obj["ci"] = [_end(x) for x in ci[i]]
                lines.append(json.dumps(obj, default=str))
        tail = {k: v for k, v in self.to_dict().items() if k != "value"}
        tail["groups"] = len(self.keys)
        tail.update(extra or {})
        lines.append(json.dumps(tail, default=str))
        return lines

    def write_csv(self, out: Any) -> None:
        """CSV to a path or a text stream: a header (the key, then each statistic and
        its interval columns), then one row per group."""
        import csv

        rows = self.rows()
        header = list(rows[0]) if rows else [self.by, *self.values]
        fh = open(out, "w", newline="", encoding="utf-8") if isinstance(out, (str, Path)) \
            else out
        try:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(header)
            for row in rows:
                w.writerow(["" if row[c] is None else
                            (";".join(map(str, row[c])) if isinstance(row[c], list) else row[c])
                            for c in header])
        finally:
            if fh is not out:
                fh.close()

    def plot(self, path: str | Path, *, title: str | None = None) -> None:
        """A PNG: one panel per statistic, a bar per group (points beyond 40 groups),
        error bars where the releases carry intervals."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        stats = list(self.values)
        labels = [str(k) for k in self.keys]
        x = np.arange(len(labels))
        fig, axes = plt.subplots(len(stats), 1, squeeze=False,
                                 figsize=(max(6.0, min(16.0, 0.3 * len(labels) + 3)),
                                          2.6 * len(stats) + 0.6))
        for ax, s in zip(axes[:, 0], stats, strict=True):
            y = np.array([np.nan if v is None else float(v) for v in self.values[s]])
            ci = (self.intervals or {}).get(s)
            yerr = None
            if ci is not None:
                lo = np.array([np.nan if c is None else float(c[0]) for c in ci])
                hi = np.array([np.nan if c is None else float(c[1]) for c in ci])
                yerr = np.vstack([np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)])
            if len(labels) <= 40:
                ax.bar(x, y, yerr=yerr, capsize=3, color="#4C72B0")
                ax.set_xticks(x, labels, rotation=45 if len(labels) > 8 else 0,
                              ha="right" if len(labels) > 8 else "center", fontsize=8)
            else:
                ax.errorbar(x, y, yerr=yerr, fmt="o", ms=2, lw=0.6, color="#4C72B0")
                ax.set_xlabel(f"{self.by} ({len(labels)} groups, in key order)")
            ax.set_ylabel(s)
            ax.grid(axis="y", alpha=0.3)
        fig.suptitle(title or f"{', '.join(stats)} by {self.by} — {self.guarantee.describe()}"
                     + ("" if self.secure else " (seeded simulation)"), fontsize=10)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.rows(),
            "refused": False,
            "guarantee": self.guarantee.as_dict(),
            "mechanism": self.mechanism,
            "parameters": dict(self.parameters),
            "secure": self.secure,
        }

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.value)

    def to_polars(self) -> Any:
        import polars as pl

        return pl.DataFrame(self.value)

    def to_frame(self) -> Any:
        """A DataFrame of the input's kind (polars for polars input, else pandas)."""
        return self.to_polars() if self.frame == "polars" else self.to_pandas()

    def __repr__(self) -> str:
        secure = "" if self.secure else ", secure=False (seeded simulation)"
        return (
            f"GroupRelease(by={self.by!r}, groups={len(self.keys)}, statistics="
            f"{list(self.values)}, guarantee={self.guarantee.describe()}{secure})"
        )


def _plain(v: Any) -> Any:
    """numpy scalars as Python numbers (JSON, CSV)."""
    return v.item() if isinstance(v, np.generic) else v


def _end(v: Any) -> Any:
    """An interval's end for the record: an open end (±∞, a bound-free interval reaching
    its range) is None, so that the record is strict JSON (as ``Interval.as_dict``)."""
    from .intervals import finite_or_none

    return finite_or_none(_plain(v))


def _interval(release: Any) -> tuple[float, float] | None:
    """A release's interval, where it carries one (``ci``: a pair, or an object with
    lower/upper)."""
    ci = getattr(release, "ci", None)
    if ci is None:
        return None
    if callable(ci):
        ci = ci()
    if ci is None:
        return None
    for lo_name, hi_name in (("lower", "upper"), ("low", "high"), ("lo", "hi")):
        if hasattr(ci, lo_name) and hasattr(ci, hi_name):
            return float(getattr(ci, lo_name)), float(getattr(ci, hi_name))
    try:
        lo, hi = ci
        return float(lo), float(hi)
    except (TypeError, ValueError):
        return None


# -- reading the grouped column -----------------------------------------------------------
def _frame_kind(data: Any) -> str | None:
    mod = type(data).__module__
    if mod.startswith("polars"):
        return "polars"
    if mod.startswith("pandas"):
        return "pandas"
    return None


def _pandas_column(series: Any) -> np.ndarray:
    """A pandas column as numpy: a nullable extension type (Int64, boolean, string) as
    its Python values with None for NA — its to_numpy() makes Int64 a float column, so
    key 2007 read as 2007.0 and the text key '2007' matched no group."""
    import pandas as pd

    if isinstance(series.dtype, pd.api.extensions.ExtensionDtype):
        return series.to_numpy(dtype=object, na_value=None)
    return series.to_numpy()


def _columns_in_memory(data: Any, by: str, column: str | None,
                       person: str | None) -> tuple[np.ndarray, np.ndarray | None, Any]:
    """(keys, values, ids) as numpy arrays from a DataFrame, Arrow table or dict."""
    kind = _frame_kind(data)
    if kind == "polars" and not hasattr(data, "get_column"):  # a LazyFrame, as io reads it
        data = data.collect()
    if kind == "polars":
        names = list(data.columns)
        get = lambda c: data.get_column(c).to_numpy()  # noqa: E731
    elif kind == "pandas":  # names as text, as single releases read them (0 → "0")
        by_name = {str(c): c for c in data.columns}
        names = list(by_name)
        get = lambda c: _pandas_column(data[by_name[str(c)]])  # noqa: E731
    elif hasattr(data, "column_names"):  # pyarrow.Table
        names = list(data.column_names)
        get = lambda c: data.column(c).to_numpy(zero_copy_only=False)  # noqa: E731
    elif isinstance(data, Mapping):
        names = list(data)
        get = lambda c: np.asarray(data[c])  # noqa: E731
    else:
        raise ParameterError(
            "by= needs a table: a file, a pandas/polars DataFrame, an Arrow table or a dict "
            "of columns", parameter="data",
        )
    if kind == "pandas":
        by, column, person = (None if c is None else str(c) for c in (by, column, person))
    for name, what in ((by, "by"), (column, "column"), (person, "id_column")):
        if name is not None and name not in names:
            raise ParameterError(
                f"{what}={name!r} is not a column; the columns are {', '.join(map(str, names))}",
                parameter=what, allowed=", ".join(map(str, names)),
            )
    keys = np.asarray(get(by), dtype=object)
    values = None if column is None else _as_float(get(column))
    ids = None if person is None else np.asarray(get(person), dtype=object)
    return keys, values, ids


def _as_float(col: Any) -> np.ndarray:
    """Numbers as float64; anything that is not a number becomes NaN (missing)."""
    arr = np.asarray(col)
    if arr.dtype.kind in "biuf":
        return arr.astype(np.float64)
    out = np.empty(arr.shape[0], dtype=np.float64)
    for i, v in enumerate(arr):
        try:
            out[i] = float(v) if v is not None and not isinstance(v, bool) else np.nan
        except (TypeError, ValueError):
            out[i] = np.nan
    return out


def _check_file_schema(path: Path, by: str, column: str | None, person: str | None) -> None:
    """The named columns exist (the schema is public)."""
    from . import io as _io

    names = _io.column_names(path)
    for name, what in ((by, "by"), (column, "column"), (person, "id_column")):
        if name is not None and name not in names:
            raise ParameterError(
                f"{what}={name!r} is not a column of {path}; the columns are "
                f"{', '.join(names)}", parameter=what, allowed=", ".join(names),
            )


def _value_sql(path: Path, column: str) -> str:
    """The value column as DOUBLE, NULL where the text is not a number.

    For CSV, TRY_CAST of a function of the text: a bare TRY_CAST of a column
    declared VARCHAR is pushed into the CSV scan by DuckDB, which then fails
    on text that is not a number."""
    from . import io as _io

    q = _io._quote_ident(column)
    if _io._reader(path) == "read_csv_auto":
        return f"TRY_CAST(trim({q}) AS DOUBLE)"
    return f"TRY_CAST({q} AS DOUBLE)"


def _file_select(path: Path, by: str, column: str | None, person: str | None) -> str:
    """SELECT k (the key as text), v (the value as DOUBLE), p (the person as text).

    Inferred CSV and JSON types are a function of the rows, so there the key
    and id columns are read as text; Parquet keeps its declared types.  The
    value column is cast to DOUBLE (text that is not a number becomes NULL,
    i.e. missing) — a public policy, whatever the rows."""
    from . import io as _io

    rel = _io._file_relation(path)
    if _io._reader(path) == "read_csv_auto":
        named = [c for c in (by, column, person) if c is not None]
        types = ", ".join(f"{_io._sql_literal(c)}: 'VARCHAR'" for c in named)
        rel = rel[:-1] + f", types={{{types}}})"
    q = _io._quote_ident
    # a declared type (Parquet) is kept: keys then match as they do in memory (a boolean
    # key is True, not DuckDB's text 'true'); types inferred from the rows (CSV, JSON)
    # would make every row's match depend on the others: those keys are text
    declared = _io._reader(path) in _io._DECLARED_TYPES
    cols = [f"{q(by)} AS k" if declared else f"CAST({q(by)} AS VARCHAR) AS k"]
    if column is not None:
        cols.append(f"{_value_sql(path, column)} AS v")
    if person is not None:
        cols.append(f"{q(person)} AS p" if declared else f"CAST({q(person)} AS VARCHAR) AS p")
    return f"SELECT {', '.join(cols)} FROM {rel}"


def _columns_from_file(path: Path, by: str, column: str | None,
                       person: str | None) -> tuple[np.ndarray, np.ndarray | None, Any]:
    """Read the three columns through DuckDB (:func:`_file_select`) into memory."""
    from . import io as _io

    con = _io._connect()
    try:
        table = _io._run_sql(con, _file_select(path, by, column, person), what=str(path))
    finally:
        con.close()
    keys = np.asarray(table.column("k").to_pylist(), dtype=object)
    values = None
    if column is not None:
        values = np.asarray(
            [np.nan if x is None else x for x in table.column("v").to_pylist()], dtype=np.float64
        )
    ids = None if person is None else np.asarray(table.column("p").to_pylist(), dtype=object)
    return keys, values, ids


#: file suffixes whose group-by aggregates DuckDB computes in the engine
_ENGINE_FILES = (".parquet", ".pq", ".csv", ".tsv")


def open_groups(data: Any, by: str, column: str | None, *, kind: str,
                where: Mapping[str, Any] | None = None, missing: str = "drop") -> Any:
    """The grouped primitives (:mod:`instancedp.backends.grouped`) where the data live.

    Files: DuckDB over :func:`_file_select` (a CSV's keys as text); SQLite,
    PostgreSQL and Spark: their engine over the named table; an opened
    :class:`~instancedp.backends.Source`: its engine (numpy: in memory).
    ``missing``: the read policy (:func:`read_policy`).  Reads the schema only."""
    from .backends import open_source
    from .backends.grouped import MemoryGroups, SQLGroups
    from .backends.sql import SQLEngine

    if kind == "file":
        from .backends.duckdb import connect

        path = Path(data)
        engine = connect(path, sql=_file_select(path, by, column, None))
        return SQLGroups(engine, '"k"', None if column is None else '"v"', missing)
    if kind == "source":
        src = data
    else:
        w = dict(where or {})
        src = open_source(data, table=w.get("table"), sql=w.get("sql"), spark=w.get("spark"))
    engine = src.engine
    names = list(src.columns)
    for name, what in ((by, "by"), (column, "column")):
        if name is not None and name not in names:
            raise ParameterError(
                f"{what}={name!r} is not a column; the columns are {', '.join(map(str, names))}",
                parameter=what, allowed=", ".join(map(str, names)),
            )
    if isinstance(engine, SQLEngine):
        return SQLGroups(engine, engine._col(by), None if column is None else engine._col(column),
                         missing)
    return MemoryGroups(engine._get(by), None if column is None else engine._get(column),
                        missing)


class _OneGroup:
    """One key's aggregates, in the shape of a :class:`~instancedp.backends.Source`, so that
    :func:`instancedp.sources.release_from_source` releases a group exactly as it releases
    a whole table.  Each grouped aggregate is computed once (one engine query) and shared."""

    def __init__(self, groups: Any, cache: dict, key: Any) -> None:
        self._groups, self._cache, self._key = groups, cache, key

    @staticmethod
    def _lookup(per_key: dict) -> dict:
        """Keys as returned, then as text (public keys are matched as given, then as text)."""
        lookup = dict(per_key)
        for k, v in per_key.items():
            lookup.setdefault(str(k), v)
        return lookup

    def _hit(self, lookup: dict, empty: Any) -> Any:
        hit = lookup.get(self._key)
        if hit is None:
            hit = lookup.get(str(self._key))
        return empty if hit is None else hit

    def _get(self, what: tuple, empty: Any) -> Any:
        if what not in self._cache:
            name, *args = what
            raw = getattr(self._groups, name)(*args)
            self._cache[what] = self._lookup(raw)
            if name == "count":  # the engine's own key values, to filter one group
                self._cache[("keys",)] = self._lookup({k: k for k in raw})
        return self._hit(self._cache[what], empty)

    def count(self, column: Any = None, *, missing: Any = "drop") -> int:
        return self._get(("count",), 0)

    def count_and_sum(self, column: Any, lower: float, upper: float, *, shift: bool = False,
                      missing: Any = "drop") -> tuple[int, int]:
        return self._get(("count_and_sum", float(lower), float(upper), bool(shift)), (0, 0))

    def order_window(self, column: Any, lower: float, upper: float, start: int, stop: int,
                     *, missing: Any = "drop") -> np.ndarray:
        """The key's sorted clamped values at ranks [start, stop): from the windows read
        for every group at once (:meth:`~instancedp.backends.grouped.SQLGroups.order_windows`),
        else (a further read of the staged draw) one statement for this key."""
        from .backends.numpy import pad_window

        n = self.count()
        first, last = max(start, 0), min(stop, n)
        got = self._hit(self._cache.get(("windows", float(lower), float(upper)), {}), {})
        if all(r in got for r in range(first, last)):
            inside = np.array([got[r] for r in range(first, last)], dtype=np.float64)
            return pad_window(inside, start, stop, lower, upper, offset=first, n=n)
        engine_key = self._hit(self._get_keys(), None)
        if engine_key is None:  # no present row: every rank reads a bound
            return pad_window(np.empty(0), start, stop, lower, upper, offset=0, n=0)
        return self._groups.group_window(engine_key, lower, upper, start, stop, n)

    def _get_keys(self) -> dict:
        """The engine's own key values (to filter one group), by key and by text."""
        self.count()
        return self._cache[("keys",)]

    def range_sum(self, column: Any, lower: float, upper: float, a: float, b: float, *,
                  shift: bool = False, missing: Any = "drop") -> tuple[int, int, int]:
        """The key's ``range_sum`` (a sorted statistic's ranks): one statement for this key."""
        engine_key = self._hit(self._get_keys(), None)
        if engine_key is None:  # no present row
            return 0, 0, 0
        return self._groups.group_range_sum(engine_key, lower, upper, a, b, shift)

    def histogram(self, column: Any, edges: Any, *, missing: Any = "drop") -> np.ndarray:
        e = np.asarray(edges, dtype=np.float64)
        what = ("histogram", e.tobytes())
        if what not in self._cache:
            self._cache[what] = self._lookup(self._groups.histogram(e))
        return self._hit(self._cache[what], np.zeros(e.size - 1, dtype=np.int64))


# -- contribution bounding ------------------------------------------------------------------
def _hash_rank(*parts: Any) -> bytes:
    h = hashlib.blake2b(digest_size=8, key=b"instancedp-groupby")
    for p in parts:
        h.update(repr(p).encode())
        h.update(b"\x00")
    return h.digest()


def bound_contributions(keys: np.ndarray, values: np.ndarray | None, ids: np.ndarray,
                        max_groups: int) -> np.ndarray:
    """Indices of the rows kept: per person ≤ 1 row per key, ≤ ``max_groups`` keys.

    The rows of one person are ranked by a fixed keyed hash of (person, key,
    value) — not by their position in the table — so which rows a person keeps
    depends on that person's rows alone."""
    order = sorted(
        range(len(keys)),
        key=lambda i: (repr(ids[i]), _hash_rank(ids[i], keys[i],
                                                None if values is None else values[i])),
    )
    kept: list[int] = []
    groups: dict[str, set] = {}
    for i in order:
        mine = groups.setdefault(repr(ids[i]), set())
        k = keys[i]
        if k in mine or len(mine) >= max_groups:
            continue
        mine.add(k)
        kept.append(i)
    return np.asarray(sorted(kept), dtype=np.int64)


# -- the release ------------------------------------------------------------------------------
def _key_index(keys: Sequence[Any]) -> dict[Any, int]:
    idx: dict[Any, int] = {}
    for i, k in enumerate(keys):
        if k in idx or str(k) in idx:
            raise ParameterError(f"keys lists {k!r} twice", parameter="keys")
        idx[k] = i
        idx.setdefault(str(k), i)
    return idx


def plan(
    statistic: str | Sequence[str],
    *,
    epsilon: float,
    delta: float | None = None,
    keys: Sequence[Any] | None = None,
    split: Sequence[float] | None = None,
    neighbours: str = "add_remove",
    max_groups: int = 1,
    bounds: tuple[float, float] | None = None,
    mechanism: str | None = None,
    selection_delta: float | None = None,
    aggregates: bool = False,
    ci: float | None = None,
    resolution: float | None = None,
) -> dict[str, Any]:
    """Everything decided from public parameters: mechanisms, ε split, guarantee.

    ``resolution``: the column's declared resolution; in memory the default median
    and quantiles of every group release on its grid (as a single release does).

    ``aggregates``: per-group mechanisms that read a backend's aggregates
    (:func:`instancedp.sources.out_of_core_mechanism`: the single release's
    default for quantiles — the exponential mechanism with the log base,
    drawn in stages from a window of order statistics — or, by name,
    ``candidate_quantile`` on public candidates; noisy sum ÷ noisy count
    for the mean, Laplace for counts and sums) instead of the in-memory
    defaults.  ``ci``: each group's release of each statistic carries a
    private interval at this level (:func:`instancedp.intervals.with_interval`,
    its share inside ε_g); in-memory mechanisms only.  Raises
    :class:`ParameterError` before any row is read."""
    from . import _validate
    from .recipes import build_mechanism, relation_for
    from .sources import out_of_core_mechanism

    rel = relation_for(neighbours)
    if rel == "edge":
        raise ParameterError("group-by releases are tabular: neighbours must be add_remove "
                             "or substitution", parameter="neighbours")
    try:
        eps = _validate.epsilon(epsilon)
    except ValueError as exc:
        raise ParameterError(str(exc), parameter="epsilon", allowed="finite > 0") from None
    if isinstance(max_groups, bool) or not isinstance(max_groups, int) or max_groups < 1:
        raise ParameterError(f"max_groups must be an integer >= 1, got {max_groups!r}",
                             parameter="max_groups", allowed="integer >= 1")
    stats = parse_statistics(statistic)
    if isinstance(keys, (str, bytes)):  # a string iterates as its characters
        raise ParameterError(
            f"keys must be a list of keys, got the string {keys!r}: pass keys=[{keys!r}]",
            parameter="keys", allowed="a list of public keys")
    select = keys is None
    d = None if delta in (None, 0, 0.0) else float(delta)
    if d is not None and not 0.0 < d < 1.0:
        raise ParameterError(f"delta must be in [0, 1), got {delta!r}", parameter="delta",
                             allowed="[0, 1)")
    if select and d is None:
        raise ParameterError(
            "unknown keys need private partition selection, which is (ε, δ)-DP with δ > 0: "
            "pass the public keys (keys=[...]) or a delta > 0",
            parameter="keys", allowed="a list of public keys, or delta > 0",
        )
    fractions = _split(split, len(stats), select)
    # δ: the selection takes selection_delta (default: all of δ when no statistic
    # needs δ, else half), the statistics share the rest equally.
    factor = max_groups * (2 if rel == "substitution" else 1)
    stat_delta = None
    sel_delta = None
    if d is not None:
        needs = mechanism in ("gaussian", "ptr", "bounded-ls")
        if select:
            sel_delta = selection_delta if selection_delta is not None else (
                d / 2 if needs else d)
            if not 0.0 < sel_delta <= d:
                raise ParameterError("selection_delta must be in (0, delta]",
                                     parameter="selection_delta", allowed="(0, delta]")
        rest = d - (sel_delta or 0.0)
        stat_delta = rest / (factor * len(stats)) if needs and rest > 0 else None
    mechs = []
    for (label, stat, q), fr in zip(stats, fractions, strict=False):
        eps_g = eps * fr / factor  # per group, per statistic, add/remove calibrated
        opts: dict[str, Any] = {"bounds": bounds} if stat != "count" else {}
        if q is not None:
            opts["quantile"] = q
        if (stat in ("median", "quantile") and resolution is not None and not aggregates
                and mechanism is None):
            opts["resolution"] = resolution
        build = out_of_core_mechanism if aggregates else build_mechanism
        chosen = mechanism if stat != "count" else None
        if chosen is None and stat in ("median", "quantile") and bounds is not None:
            # per group the exponential quantile (its draws read one grouped window
            # statement): a single tail quantile's default, the tail choice, would read
            # each group's bound-free bins, which the grouped engines do not serve
            chosen = "exponential"
        if ci is None:
            m = build(stat, eps_g, stat_delta, mechanism=chosen, neighbours="add_remove",
                      **opts)
        else:
            if aggregates:
                raise ParameterError(
                    "per-group intervals are computed in memory: ci= is not available for "
                    "group-by releases from a database or Spark", parameter="ci")
            from .intervals import with_interval

            def one(e: float, stat: str = stat, chosen: Any = chosen,
                    opts: dict = opts, build: Any = build) -> Any:
                return build(stat, e, stat_delta, mechanism=chosen, neighbours="add_remove",
                             **opts)

            m = with_interval(one, eps_g, ci)
        mechs.append((label, m))
    parts = [_scaled(m.guarantee, factor) for _, m in mechs]
    sel = None
    if select:
        eps_s = eps * fractions[-1]
        sens = factor
        sel = {
            "mechanism": "laplace-threshold",
            "epsilon": eps_s,
            "delta": sel_delta,
            "laplace_scale": sens / eps_s,
            "threshold": selection_threshold(eps_s, sel_delta, sens, max_groups),
            "sensitivity": sens,
        }
        parts.append(ApproxDP(eps_s, sel_delta))
    guarantee = compose(parts)
    return {"relation": rel, "factor": factor, "statistics": mechs, "selection": sel,
            "guarantee": guarantee, "fractions": fractions, "max_groups": max_groups}


def _scaled(g: Guarantee, c: int) -> Guarantee:
    """c-fold group privacy / parallel composition over c touched groups (basic)."""
    return compose([g] * c)


def _unique(keys: np.ndarray) -> tuple[list[Any], np.ndarray]:
    """The distinct keys (None and NaN excluded later) and each row's index into them."""
    # a NaN key breaks the sort of an object array silently (NaN compares false both
    # ways: 1.0 next to NaNs was counted once): such keys take the dictionary path
    if not _has_missing_key(keys):
        try:
            uniq, inv = np.unique(keys, return_inverse=True)
            return list(uniq), inv.reshape(-1)
        except TypeError:  # keys that do not sort together (mixed types)
            pass
    index: dict[Any, int] = {}
    inv = np.fromiter((index.setdefault(k, len(index)) for k in keys), dtype=np.int64,
                      count=len(keys))
    return list(index), inv


def key_counts(keys: np.ndarray) -> dict[Any, int]:
    """Rows per distinct key (missing keys, None/NaN, form no group)."""
    uniq, inv = _unique(keys)
    counts = np.bincount(inv, minlength=len(uniq)) if len(keys) else np.zeros(0, np.int64)
    return {k: int(c) for k, c in zip(uniq, counts, strict=True) if not _missing_key(k)}


def _missing_key(k: Any) -> bool:
    return k is None or (isinstance(k, float) and math.isnan(k))


def _has_missing_key(keys: np.ndarray) -> bool:
    """Whether a key is None or NaN: vectorised for numeric keys (an integer or text
    array holds neither), one pass in Python for object arrays only."""
    keys = np.asarray(keys)
    if keys.dtype.kind == "f":
        return bool(np.isnan(keys).any())
    if keys.dtype.kind != "O":
        return False
    return any(_missing_key(k) for k in keys)


def group_values(keys: np.ndarray, values: np.ndarray | None,
                 wanted: Sequence[Any]) -> list[np.ndarray]:
    """Each wanted key's values, sorted (keys matched as given, then as text).

    Sorted so that a file grouped in DuckDB and a table grouped here hand
    each mechanism the very same array (a sum's rounding depends on order)."""
    idx = _key_index(wanted)
    vals = np.zeros(len(keys)) if values is None else np.asarray(values, dtype=np.float64)
    if len(keys) == 0:
        return [np.zeros(0) for _ in wanted]
    uniq, inv = _unique(keys)
    target = np.full(len(uniq), -1, dtype=np.int64)
    for u, k in enumerate(uniq):
        if _missing_key(k):
            continue
        j = idx.get(k)
        target[u] = idx.get(str(k), -1) if j is None else j
    row_group = target[inv]
    order = np.argsort(row_group, kind="stable")  # stable: row order inside a group
    bounds = np.searchsorted(row_group[order], np.arange(len(wanted) + 1))
    return [np.sort(vals[order[bounds[j]:bounds[j + 1]]]) for j in range(len(wanted))]


def run_groups(p: dict[str, Any], group_data: Sequence[np.ndarray], source: Any,
               missing: str = "drop") -> dict:
    """Each statistic's mechanism on each group, under the input policy.

    ``missing``: :func:`read_policy`'s — ``"finite"`` drops ±inf before the
    public policy (whose clamp then never sees them).  Groups in key order,
    statistics in the order asked, one shared source: the same draws as one
    single release per group in that order."""
    from .session import analyst_policy, apply_policy

    out: dict[str, list[Any]] = {label: [] for label, _ in p["statistics"]}
    policies = {label: _stated(analyst_policy(m), missing) for label, m in p["statistics"]}
    cis: dict[str, list[Any]] = {label: [] for label, _ in p["statistics"]}
    for data in group_data:
        if missing == "finite":
            data = data[np.isfinite(data)]
        for label, m in p["statistics"]:
            r = m.release(apply_policy(data, policies[label]), rng=source)
            out[label].append(r.value)
            cis[label].append(_interval(r))
    return {"values": out, "policies": policies, "intervals": _some(cis)}


def _some(cis: dict[str, list[Any]]) -> dict[str, list[Any]] | None:
    """Only the statistics whose releases carry intervals (None when none does)."""
    kept = {k: v for k, v in cis.items() if any(c is not None for c in v)}
    return kept or None


#: the public input policy of the aggregate path: NULL/NaN dropped, every other value
#: (±inf included) clamped to the bounds — row-by-row maps, so neighbours stay neighbours
AGGREGATE_POLICY = {"missing": "drop", "out_of_range": "clamp", "infinite": "clamp",
                    "added_public_row": None}


def read_policy(analyst: bool, drop_missing: bool) -> str:
    """The rows a group-by reads, as a single release of the same mode reads them
    (public: the mode and the option, never the rows).

    * analyst mode: ``"drop"`` — NULL and NaN dropped, ±inf clamped to the bounds
      (dropped without bounds; a count counts them): the public input policy
      (:func:`instancedp.session.analyst_policy`);
    * owner mode: ``"finite"`` — NULL, NaN and ±inf dropped
      (:func:`instancedp.io.read_column`, :func:`instancedp.sources.
      owner_missing_policy`); with ``drop_missing=False`` :func:`group_release`
      refuses them before the charge (:func:`instancedp.io.missing_error`), so the
      rows read are the same."""
    return "drop" if analyst else "finite"


def _stated(policy: dict[str, Any], missing: str) -> dict[str, Any]:
    """The recorded input policy: ±inf dropped under the owner's read policy."""
    return {**policy, "infinite": "drop"} if missing == "finite" else dict(policy)


def aggregate_path(kind: str, data: Any, statistic: str | Sequence[str], *,
                   bounds: Any, mechanism: str | None, ci: float | None = None) -> bool:
    """Whether the groups are computed from engine aggregates (public facts only).

    Databases, Spark and opened sources: always (a request the aggregates do
    not serve is refused by :func:`instancedp.sources.out_of_core_mechanism`).
    Parquet/CSV files: when every statistic is one the aggregates serve (count,
    sum, mean, median, pNN, min, max) with the default mechanisms (or, for quantiles,
    ``exponential`` or ``candidate_quantile`` by name) and bounds given,
    without ``ci``; otherwise the file is read into memory (as a single
    release does).
    In-memory tables: never (their mechanisms read each group's rows)."""
    if kind in ("sqlite", "postgresql", "spark", "source"):
        return True
    if kind != "file" or not str(data).lower().endswith(_ENGINE_FILES) or ci is not None:
        return False
    stats = {s for _, s, _ in parse_statistics(statistic)}
    served = {"count", "sum", "mean", "median", "quantile", "min", "max"}
    by_name = mechanism is None or (
        mechanism in ("exponential", "candidate_quantile") and stats <= {"count", "median",
                                                                         "quantile"})
    return stats <= served and by_name and (bounds is not None or stats == {"count"})


def staged_span(mechanism: Any) -> tuple[float, int] | None:
    """(q, h) such that every rank the staged exponential quantile reads up front lies
    within q·n ± h (:class:`~instancedp.mechanisms.quantile.PieceSet`: pieces within
    ``half`` of round(q·n), whose edges are the values at ranks start − 1 … stop − 1);
    None for a mechanism that is not drawn in stages."""
    from .mechanisms.quantile import (
        MAX_HALF_WINDOW,
        WINDOW_EXPONENT,
        ExponentialQuantile,
        score_sensitivity,
    )

    if not isinstance(mechanism, ExponentialQuantile) or mechanism.base == "grid":
        return None
    a = mechanism.epsilon / (2.0 * score_sensitivity(mechanism.q, mechanism.neighbours))
    half = int(min(math.ceil(WINDOW_EXPONENT / a), MAX_HALF_WINDOW))
    return mechanism.q, half + 2  # round(q·n) is within ½ of q·n; one more edge below


def run_aggregates(p: dict[str, Any], groups: Any, keys: Sequence[Any], source: Any) -> dict:
    """Each statistic's aggregate mechanism on each key's grouped aggregates.

    Keys in the order given, statistics in the order asked, one shared
    source: the draws of one :func:`~instancedp.sources.release_from_source`
    per group and statistic, in that order."""
    from .sources import release_from_source

    cache: dict = {}
    by_bounds: dict[tuple[float, float], list[tuple[float, int]]] = {}
    for _, m in p["statistics"]:
        span = staged_span(m)
        if span is not None:
            by_bounds.setdefault((m.lower, m.upper), []).append(span)
    for (lo, hi), spans in by_bounds.items():
        # ONE engine statement reads every group's windows (each a function of the
        # group's own count); _OneGroup serves the staged draws from them
        cache[("windows", lo, hi)] = _OneGroup._lookup(groups.order_windows(lo, hi, spans))
    out: dict[str, list[Any]] = {label: [] for label, _ in p["statistics"]}
    cis: dict[str, list[Any]] = {label: [] for label, _ in p["statistics"]}
    for key in keys:
        one = _OneGroup(groups, cache, key)
        for label, m in p["statistics"]:
            r = release_from_source(m, one, None, source)
            out[label].append(r.value)
            cis[label].append(_interval(r))
    missing = getattr(groups, "missing_policy", "drop")
    return {"values": out, "intervals": _some(cis),
            "policies": {label: _stated(AGGREGATE_POLICY, missing)
                         for label, _ in p["statistics"]}}


def group_release(
    data: Any,
    by: str,
    column: str | None,
    statistic: str | Sequence[str],
    *,
    epsilon: float,
    delta: float | None = None,
    keys: Sequence[Any] | None = None,
    split: Sequence[float] | None = None,
    neighbours: str = "add_remove",
    id_column: str | None = None,
    max_groups: int = 1,
    bounds: tuple[float, float] | None = None,
    mechanism: str | None = None,
    drop_missing: bool = True,
    rng: Any = None,
    charge: Any = None,
    where: Mapping[str, Any] | None = None,
    ci: float | None = None,
    analyst: bool = False,
    resolution: float | None = None,
) -> GroupRelease:
    """Release ``statistic`` of ``column`` for every group of ``by``.

    ``charge(guarantee, mechanism, parameters) -> callable(status)`` is called
    once, after every public check and before any row is read for the release
    (the Session passes its ledger's charge).  See the module docstring for
    keys, contributions and cost.

    The rows read (:func:`read_policy`), on every engine: ``analyst=True``
    applies analyst mode's public input policy (NULL and NaN dropped, ±inf
    clamped to the bounds); otherwise (owner mode) NULL, NaN and ±inf are
    dropped with ``drop_missing=True`` and refused before the charge with
    ``drop_missing=False`` (:func:`instancedp.io.missing_error`), as a single
    release reads them.  A public key whose group is left with no row is
    answered like any empty group.

    Where the groups are computed (public: the kind of input and the request,
    :func:`aggregate_path`): in-memory tables use the in-memory mechanisms on
    each group's rows; files, SQLite, PostgreSQL, Spark and opened
    :class:`~instancedp.backends.Source` objects compute per-group aggregates
    in the engine (:mod:`instancedp.backends.grouped`).  ``where`` holds the
    database's ``table``/``sql`` or Spark's ``spark`` session.

    ``ci=0.95``: every group's release of every statistic carries a private
    interval (:mod:`instancedp.intervals`), paid inside that group's ε_g, so
    parallel composition covers the intervals too; computed in memory (files
    are read; a database or Spark refuses ``ci`` before the charge).

    ``resolution``: the column's declared resolution (public schema; the Session
    reads it from an in-memory column's type), used by the in-memory default median
    and quantiles (:func:`plan`).
    """
    from .random import resolve
    from .sources import input_kind

    source = resolve(rng)
    if not isinstance(by, str) or not by:
        raise ParameterError("by must name the grouping column", parameter="by")
    if max_groups != 1 and id_column is None:
        raise ParameterError("max_groups bounds each person's groups: it needs id_column= (the "
                             "person column)", parameter="max_groups")
    where = dict(where or {})
    kind = input_kind(data, table=where.get("table"), spark=where.get("spark"))
    agg = aggregate_path(kind, data, statistic, bounds=bounds, mechanism=mechanism, ci=ci)
    if agg and id_column is not None and kind != "file":
        raise ParameterError(
            "id_column= (per-person contribution bounds) is not available on a database or "
            "Spark: bound each person's rows in the table, or read it into memory",
            parameter="id_column",
        )
    p = plan(statistic, epsilon=epsilon, delta=delta, keys=keys, split=split,
             neighbours=neighbours, max_groups=max_groups, bounds=bounds, mechanism=mechanism,
             aggregates=agg, ci=ci, resolution=resolution)
    needs_values = any(s != "count" for s, _ in p["statistics"])
    if needs_values and column is None:
        raise ParameterError("statistics other than count need column=", parameter="column")
    if keys is not None:
        keys = list(keys)
        _key_index(keys)

    def read() -> tuple[np.ndarray, np.ndarray | None, Any]:
        if isinstance(data, (str, Path)):
            return _columns_from_file(Path(data), by, column, id_column)
        return _columns_in_memory(data, by, column, id_column)

    if kind == "file":
        _check_file_schema(Path(data), by, column, id_column)
    columns = groups = None
    missing = read_policy(bool(analyst), bool(drop_missing))
    if agg and id_column is None:  # the schema only
        groups = open_groups(data, by, column, kind=kind, where=where, missing=missing)
    if not analyst and not drop_missing:  # owner mode: refuse them before the charge
        from .io import missing_error

        if groups is not None:
            bad = groups.missing()
            total = groups.size() if bad else 0
        else:
            columns = read()
            vals = columns[1]
            bad = 0 if vals is None else int(np.count_nonzero(~np.isfinite(vals)))
            total = 0 if vals is None else int(vals.size)
        if bad:
            raise missing_error(column, bad, total)
    params: dict[str, Any] = {
        "by": by,
        "column": column,
        "statistics": [label for label, _ in p["statistics"]],
        "mechanisms": {label: m.name for label, m in p["statistics"]},
        "per_group": {label: m.parameters() for label, m in p["statistics"]},
        "split": p["fractions"],
        "neighbours": p["relation"],
        "per_group_neighbours": "add_remove",
        "groups_touched_per_person": p["factor"],
        "contributions": ONE_ROW_ONE_PERSON if id_column is None else
        f"at most 1 row per group and {max_groups} group(s) per person ({id_column!r}), "
        "chosen by a fixed keyed hash",
        "keys": "public" if keys is not None else "private partition selection",
        "selection": p["selection"],
        "bounds": None if bounds is None else [float(bounds[0]), float(bounds[1])],
    }
    done = charge(p["guarantee"], "group-by", params) if charge is not None else None
    try:
        if groups is None:
            kcol, vcol, ids = columns if columns is not None else read()
            if ids is not None:
                kept = bound_contributions(kcol, vcol, ids, max_groups)
                kcol = kcol[kept]
                vcol = None if vcol is None else vcol[kept]
            if agg:
                from .backends.grouped import MemoryGroups

                groups = MemoryGroups(kcol, vcol if column is not None else None, missing)
        if keys is None:
            counts = groups.rows() if groups is not None else key_counts(kcol)
            sel = p["selection"]
            out_keys = select_partitions(counts, sel["epsilon"], sel["delta"],
                                         sensitivity=sel["sensitivity"],
                                         new_keys=p["max_groups"], source=source)
        else:
            out_keys = keys
        if groups is not None:
            result = run_aggregates(p, groups, out_keys, source)
        else:
            result = run_groups(p, group_values(kcol, vcol, out_keys), source, missing)
    except BaseException:
        if done is not None:
            done("failed")
        raise
    if done is not None:
        done("released")
    params["input_policy"] = result["policies"]
    return GroupRelease(by, list(out_keys), result["values"], p["guarantee"], "group-by",
                        params, source.secure, _frame_kind(data), result["intervals"])
