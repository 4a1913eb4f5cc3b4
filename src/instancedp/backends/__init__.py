"""Releases where the data live: sufficient statistics computed by each engine.

A mechanism never needs the whole column; it needs a few *sufficient
statistics*, each a function of the rows after the public missing-value
policy and the public bounds:

====================  ==========================================================
primitive             what it returns
====================  ==========================================================
``count``             rows after the missing-value policy
``count_and_sum``     (n, S): S the exact integer sum on the public fixed-point
                      grid (``fixed_point_exponent``); statistic = S·2^−s
``histogram``         counts of clamped values per public cell [e_j, e_{j+1})
``order_window``      sorted clamped values at ranks [start, stop)
``range_sum``         (#{x ≤ a}, #{x < b}, exact fixed-point sum of a < x < b)
``top_counts``        the k most frequent values and their counts
``histogram_stats``   per cell: count, min, max; and the exact shifted sum
``range_values``      sorted clamped values inside public ranges (few rows)
``log_bins``          rows grouped by their cell of a public geometric grid: per
                      group count, min, max, as ordered cells (one scan)
====================  ==========================================================

Engines: ``numpy`` (in memory, the reference), ``duckdb`` (files and frames,
out of core), ``spark``, ``sqlite`` (stdlib driver), ``postgresql``
(psycopg 3).  Every engine returns the same integers and doubles for the same
rows, so a release computed from them is bit-identical across engines.

Entry point: :func:`open_source` picks the engine from the input.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ParameterError
from ..io import declared_resolution
from .numpy import MemoryEngine, Missing, fixed_point_exponent

__all__ = ["Source", "open_source", "fixed_point_exponent", "BACKENDS"]

BACKENDS = ("numpy", "duckdb", "spark", "sqlite", "postgresql")

_SQLITE_SUFFIXES = {".sqlite", ".sqlite3", ".db"}


@dataclass
class Source:
    """One input, read through one engine; every method returns small aggregates only.

    ``column`` may be omitted when the source has exactly one column (or is
    an array).  ``missing`` is the public policy for NULL/NaN rows: ``"drop"``
    or a finite fill value.
    """

    backend: str
    engine: Any

    @property
    def columns(self) -> list[str]:
        """Column names (public: the declared schema)."""
        return list(self.engine.columns)

    def declared_resolution(self, column: str | None = None) -> float | None:
        """The resolution the column's *declared* type states — 1.0 for an integer type,
        10^−s for a decimal of scale s — else None (floats, booleans, text, dates, and
        every type a reader inferred from the rows: CSV, JSON, a Python list).  Public
        schema only: read from the dtype, the Parquet schema, the DDL or the query's
        static result type, never from a row."""
        return self.engine.declared_resolution(column)

    def count(self, column: str | None = None, *, missing: Missing = "drop") -> int:
        return self.engine.count(column, missing)

    def count_and_sum(
        self, column: str | None, lower: float, upper: float, *, shift: bool = False,
        missing: Missing = "drop",
    ) -> tuple[int, int]:
        """(n, S): S = Σ trunc(clamp(x)·2^s), s = ``fixed_point_exponent(lower, upper, shift)``."""
        return self.engine.count_and_sum(column, lower, upper, shift, missing)

    def exact_clamped_sum(
        self, column: str | None, lower: float, upper: float, *, shift: bool = False,
        missing: Missing = "drop",
    ) -> int:
        return self.engine.count_and_sum(column, lower, upper, shift, missing)[1]

    def histogram(
        self, column: str | None, edges: Any, *, missing: Missing = "drop"
    ) -> np.ndarray:
        """Counts per cell [e_j, e_{j+1}) (last cell closed) of values clamped to [e_0, e_m]."""
        return self.engine.histogram(column, edges, missing)

    def order_window(
        self, column: str | None, lower: float, upper: float, start: int, stop: int, *,
        missing: Missing = "drop",
    ) -> np.ndarray:
        """Sorted clamped values at 0-based ranks [start, stop); lower below 0, upper from n on."""
        return self.engine.order_window(column, lower, upper, start, stop, missing)

    def range_sum(
        self, column: str | None, lower: float, upper: float, a: float, b: float, *,
        shift: bool = False, missing: Missing = "drop",
    ) -> tuple[int, int, int]:
        """(#{x ≤ a}, #{x < b}, S): x the clamped rows, S = Σ_{a < x < b} of the
        fixed-point terms of :meth:`count_and_sum`; a = b gives a value's rank."""
        return self.engine.range_sum(column, lower, upper, a, b, shift, missing)

    def histogram_stats(
        self, column: str | None, edges: Any, *, missing: Missing = "drop"
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int | None]:
        """(counts, minima, maxima, exact shifted sum) per cell, in one pass (``numpy.py``)."""
        return self.engine.histogram_stats(column, edges, missing)

    def range_values(
        self, column: str | None, lower: float, upper: float, ranges: Any, *,
        missing: Missing = "drop",
    ) -> np.ndarray:
        """The clamped values inside any of the closed ``ranges``, sorted (few rows:
        the caller sizes the ranges from :meth:`histogram_stats`)."""
        return self.engine.range_values(column, lower, upper, ranges, missing)

    def log_bins(
        self, column: str | None, beta: float, scale: float, *, missing: Missing = "drop"
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(edges, counts, minima, maxima) of ordered cells grouping the rows by their
        cell of the grid ±scale·(β^k − 1), in one aggregate (``numpy.log_bins``)."""
        return self.engine.log_bins(column, beta, scale, missing)

    def top_counts(
        self, column: str | None, k: int, *, missing: Missing = "drop"
    ) -> list[tuple[Any, int]]:
        """The k most frequent values: count descending, then value ascending."""
        return self.engine.top_counts(column, k, missing)

    def close(self) -> None:
        con = getattr(self.engine, "connection", None)
        if con is not None and hasattr(con, "close") and self.backend != "spark":
            con.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _is_frame(data: Any) -> bool:
    root = type(data).__module__.split(".")[0]
    return root in ("pandas", "polars", "pyarrow")


def _frame_columns(data: Any) -> dict[str, np.ndarray]:
    root = type(data).__module__.split(".")[0]
    if root == "pandas":
        return {str(c): data[c].to_numpy(dtype=np.float64, na_value=np.nan) for c in data.columns}
    if root == "polars":
        return {c: data[c].cast(float).to_numpy() for c in data.columns}
    return {c: data.column(c).to_numpy(zero_copy_only=False).astype(np.float64)
            for c in data.column_names}


def _frame_resolutions(data: Any) -> dict[str | None, float | None]:
    """Each column's declared resolution (:func:`instancedp.io.declared_resolution`:
    the frame's dtypes); a name the frame repeats declares none."""
    names = [str(c) for c in (data.column_names if hasattr(data, "column_names")
                              else data.columns)]
    return {c: declared_resolution(data, c) if names.count(c) == 1 else None for c in names}


def open_source(
    data: Any,
    *,
    table: str | None = None,
    sql: str | None = None,
    spark: Any = None,
    memory_limit: str | None = None,
    threads: int | None = None,
) -> Source:
    """The engine for ``data``:

    - a ``pyspark.sql.DataFrame``, or a table name with ``spark=`` a SparkSession → Spark;
    - ``postgresql://…`` (with ``table=`` or ``sql=``) → PostgreSQL;
    - ``sqlite:///path``, or a ``.sqlite``/``.sqlite3``/``.db`` file (with ``table=`` or
      ``sql=``) → SQLite;
    - a Parquet/CSV/JSON file path (``sql=`` optional, over the view ``data``) → DuckDB,
      with ``memory_limit`` (e.g. ``"1GB"``) and ``threads``;
    - a pandas/polars/Arrow frame → in memory, or DuckDB when ``sql=`` is given;
    - an array or list → in memory (one unnamed column).
    """
    from .spark import connect as spark_connect
    from .spark import is_spark_dataframe

    if is_spark_dataframe(data) or spark is not None:
        if table is not None:
            raise ParameterError("for Spark pass the DataFrame or table name as data",
                                 parameter="table")
        return Source("spark", spark_connect(data, spark=spark, sql=sql))
    if isinstance(data, str) and data.startswith(("postgresql://", "postgres://")):
        from .postgres import connect as pg_connect

        return Source("postgresql", pg_connect(data, table=table, sql=sql))
    if isinstance(data, str | os.PathLike):
        text = str(data)
        if text.startswith("sqlite:///") or Path(text).suffix.lower() in _SQLITE_SUFFIXES:
            from .sqlite import connect as sqlite_connect

            return Source("sqlite", sqlite_connect(text, table=table, sql=sql))
        if table is not None:
            raise ParameterError("table= applies to databases only", parameter="table")
        from .duckdb import connect as duck_connect

        return Source("duckdb", duck_connect(text, sql=sql, memory_limit=memory_limit,
                                             threads=threads))
    if table is not None:
        raise ParameterError("table= applies to databases only", parameter="table")
    if _is_frame(data):
        if sql is not None or memory_limit is not None:
            from .duckdb import connect as duck_connect

            return Source("duckdb", duck_connect(data, sql=sql, memory_limit=memory_limit,
                                                 threads=threads))
        return Source("numpy", MemoryEngine(columns=_frame_columns(data),
                                            resolutions=_frame_resolutions(data)))
    if sql is not None:
        raise ParameterError("sql= needs a file, a frame or a database", parameter="sql")
    # a list's dtype after np.asarray is inferred from its rows: only an array declares one
    return Source("numpy", MemoryEngine(values=np.asarray(data), resolutions={
        None: declared_resolution(data)}))
