"""SQLite files through the standard library's ``sqlite3`` driver (nothing downloaded).

The file is opened read-only (``mode=ro`` URI).  Literals are bound
parameters (SQLite's own decimal parser is not guaranteed to round
correctly); the exact sum adds k_i / 2^26 and k_i mod 2^26 separately so that
both 64-bit partial sums are exact for any table under 2^37 rows; a cell is
found by ``bisect`` in a registered scalar function.  SQLite stores NaN as
NULL, so both are missing.
"""

from __future__ import annotations

import bisect
import math
import sqlite3
from pathlib import Path

import numpy as np

from ..errors import ParameterError, SchemaError
from .sql import Dialect, SQLEngine, by_name, decimal_resolution

__all__ = ["DIALECT", "connect", "declared_resolution", "sqlite_path"]

DIALECT = Dialect(
    name="sqlite",
    double="REAL",
    bind=True,
    int_cast="CAST({e} AS INTEGER)",
    isnan=None,
    least="min({a}, {b})",
    greatest="max({a}, {b})",
    exact_sum="split",
)


def sqlite_path(data: str) -> str:
    """The file path of ``sqlite:///path`` (or a plain path)."""
    return data[len("sqlite:///") - 1 :] if data.startswith("sqlite:///") else data


def connect(data: str, *, table: str | None = None, sql: str | None = None) -> SQLEngine:
    """An engine over one table (or one SELECT) of a SQLite file, opened read-only."""
    path = Path(sqlite_path(str(data)))
    if not path.exists():
        raise ParameterError(f"no such SQLite file: {str(path)!r}", parameter="data")
    if (table is None) == (sql is None):
        raise ParameterError("pass exactly one of table= or sql=", parameter="table")
    con = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True, check_same_thread=False)
    relation = DIALECT.quote(table) if table is not None else f"({sql}) AS q"
    try:
        cur = con.execute(f"SELECT * FROM {relation} LIMIT 0")
    except sqlite3.Error as exc:
        raise SchemaError(f"SQLite cannot read {table or 'the query'}: {exc}") from exc
    cols = [c[0] for c in cur.description]
    edges_holder: dict[str, list[float]] = {}

    def cell(x: float) -> int:
        return bisect.bisect_right(edges_holder["e"], x)

    con.create_function("instancedp_cell", 1, cell, deterministic=True)
    try:  # ln and ceil are SQLite's optional math functions (log_bins' labels)
        con.execute("SELECT ln(2.0), ceil(0.5)")
    except sqlite3.OperationalError:
        con.create_function("ln", 1, math.log, deterministic=True)
        con.create_function("ceil", 1, math.ceil, deterministic=True)

    def bucket_sql(x: str, interior: np.ndarray, params: list) -> str:
        edges_holder["e"] = [float(v) for v in interior]
        return f"instancedp_cell({x})"

    def execute(query: str, params: list) -> list[tuple]:
        return con.execute(query, params).fetchall()

    engine = SQLEngine(DIALECT, execute, relation, cols, bucket_sql=bucket_sql)
    engine.connection = con  # type: ignore[attr-defined]
    if table is not None:  # the DDL's declared types are public schema (a SELECT has none)
        info = [(str(n), str(t)) for n, t in con.execute(
            "SELECT name, type FROM pragma_table_info(?)", [table]).fetchall()]
        engine.non_numeric = {n: t for n, t in info if not_a_number(t)}  # type: ignore[attr-defined]
        engine.resolutions = by_name((n, declared_resolution(t)) for n, t in info)
    return engine


def declared_resolution(declared: str) -> float | None:
    """The resolution a column's DDL type declares, by SQLite's affinity rule
    (datatype3.html §3.1: a type name containing INT has INTEGER affinity, whatever
    else it says — "FLOATING POINT" included, as SQLite itself reads it) → 1.0;
    ``DECIMAL(p,s)``/``NUMERIC(p,s)`` → 10^−s; else None.  The declaration is what
    counts: SQLite keeps 2.5 as 2.5 in an INTEGER column, and reading the rows to
    find out would make the answer a function of them."""
    if "INT" in declared.upper():
        return 1.0
    return decimal_resolution(declared)


def not_a_number(declared: str) -> bool:
    """A declared type that holds text: SQLite's TEXT affinity (datatype3.html §3.1: the
    type names CHAR, CLOB or TEXT and not INT) or a date or time (NUMERIC affinity, but
    '2020-01-01' stays text).  CAST(… AS REAL) turns such text into a number silently
    (0.0, or 2020.0), so the column is refused by name; other types (and none) are kept."""
    t = declared.upper()
    return "INT" not in t and any(k in t for k in ("CHAR", "CLOB", "TEXT", "DATE", "TIME"))
