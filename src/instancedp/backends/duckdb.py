"""DuckDB: files (Parquet, CSV), SQL over them, and in-memory frames, out of core.

The connection is in memory; the source is registered as the view ``data``,
then the connection is sandboxed: only the source files stay readable
(``allowed_paths``), ``enable_external_access = false`` and
``lock_configuration = true``, so no later statement can read another file,
load an extension or lift the memory limit.  ``memory_limit`` and ``threads``
are DuckDB's own settings; with a ``temp_directory`` DuckDB spills sorts and
aggregates to disk instead of failing.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ParameterError, SchemaError
from .sql import Dialect, SQLEngine, by_name, decimal_resolution

__all__ = ["DIALECT", "INTEGER_TYPES", "NUMERIC_TYPES", "connect", "is_numeric_type",
           "type_resolution"]

DIALECT = Dialect(name="duckdb", sum_by_parts=True)

_READERS = {".parquet": "read_parquet", ".pq": "read_parquet", ".csv": "read_csv",
            ".tsv": "read_csv", ".json": "read_json_auto", ".jsonl": "read_json_auto"}


#: declared types that are numbers (DuckDB's names for Arrow/Parquet/pandas types)
NUMERIC_TYPES = frozenset({
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
    "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "REAL",
})


def is_numeric_type(declared: str, *, boolean: bool = False) -> bool:
    """Whether a DuckDB type name (``DECIMAL(10,2)`` included) is a number; with
    ``boolean`` a BOOLEAN counts too (0/1 flags)."""
    base = str(declared).split("(")[0].strip().upper()
    return base in NUMERIC_TYPES or (boolean and base == "BOOLEAN")


#: DuckDB's integer types: each declares resolution 1
INTEGER_TYPES = frozenset({
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
    "UINTEGER", "UBIGINT", "UHUGEINT",
})


def type_resolution(declared: str) -> float | None:
    """The resolution a DuckDB type name declares: 1.0 for an integer type, 10^−s for
    ``DECIMAL(p,s)``, None for any other (floats, BOOLEAN, text, dates, NULL)."""
    if str(declared).strip().upper() in INTEGER_TYPES:
        return 1.0
    return decimal_resolution(str(declared))


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def connect(
    data: Any,
    *,
    sql: str | None = None,
    memory_limit: str | None = None,
    threads: int | None = None,
    temp_directory: str | None = None,
    lines: bool = False,
    reader: str | None = None,
) -> SQLEngine:
    """An engine over a file path (Parquet/CSV/JSON) or a pandas/polars/Arrow frame.

    ``sql`` (optional) is a SELECT over the view ``data``; the primitives then
    read its result.  ``lines=True`` (text files): ``data`` is one VARCHAR column
    ``line`` per line of the file, read as Latin-1 with no quoting and no type
    or header sniffing, so nothing about how a line is read depends on the other
    lines (the graph backend parses edge lists from it).  ``reader``: the table
    function reading the file under a public policy (e.g.
    :meth:`instancedp.io.AnalystQuery.relation`) instead of the suffix's default.
    """
    import duckdb

    con = duckdb.connect(":memory:")
    # DuckDB's own progress bar shows how far a scan has gone (a function of the rows):
    # off, before the configuration is locked; the CLI shows a spinner and elapsed time only
    con.execute("SET enable_progress_bar = false")
    if memory_limit is not None:
        con.execute(f"SET memory_limit = {_literal(str(memory_limit))}")
    if threads is not None:
        if int(threads) < 1:
            raise ParameterError("threads must be >= 1", parameter="threads", allowed=">= 1")
        con.execute(f"SET threads = {int(threads)}")
    tmp = temp_directory or tempfile.mkdtemp(prefix="instancedp-duckdb-")
    con.execute(f"SET temp_directory = {_literal(tmp)}")
    allowed: list[str] = []
    if isinstance(data, str | os.PathLike):
        path = Path(data)
        if not path.exists():
            raise ParameterError(f"no such file: {str(path)!r}", parameter="data")
        suffix = path.suffix.lower()
        if reader is None and suffix not in _READERS:
            raise ParameterError(
                f"cannot read {path.name!r} with DuckDB",
                parameter="data",
                allowed=", ".join(sorted(_READERS)),
            )
        if reader is None and lines:
            reader = (f"read_csv({_literal(str(path))}, columns = {{'line': 'VARCHAR'}}, "
                      "header = false, delim = '\x01', quote = '', escape = '', "
                      "auto_detect = false, null_padding = true, strict_mode = false, "
                      "encoding = 'latin-1')")
        elif reader is None:
            reader = f"{_READERS[suffix]}({_literal(str(path))})"
        try:
            con.execute(f"CREATE VIEW data AS SELECT * FROM {reader}")
        except duckdb.Error as exc:  # a 0-byte or damaged file: its structure, not a row
            size = path.stat().st_size
            raise SchemaError(
                f"{path.name} cannot be read as {suffix.lstrip('.') or 'a data file'}"
                + (" (0 bytes)" if size == 0 else "") + f": {_first_line(exc)}"
            ) from None
        allowed.append(str(path.resolve()))
        allowed.append(str(path))
    else:
        con.register("data", data)
    con.execute("SET allowed_paths = [" + ", ".join(_literal(a) for a in allowed + [tmp]) + "]")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    relation = "data" if sql is None else f"({sql}) AS q"
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
    except duckdb.Error as exc:
        raise SchemaError(f"DuckDB cannot read the source: {exc}") from exc
    cols = [r[0] for r in described]

    def execute(query: str, params: list) -> list[tuple]:
        return con.execute(query, params).fetchall()

    def lookup_table(columns: dict[str, Any]) -> str:
        # A connection-private table from bound lists: far cheaper for DuckDB to plan and
        # probe than the same rows inlined as VALUES (a 4,096-cell grid: ~17,000 rows).
        names = list(columns)
        cells = ", ".join(f"unnest(${i + 1}) AS {n}" for i, n in enumerate(names))
        con.execute(f"CREATE OR REPLACE TEMP TABLE instancedp_lookup AS SELECT {cells}",
                    [columns[n].tolist() for n in names])
        return "instancedp_lookup"

    def fetch_doubles(query: str, params: list) -> np.ndarray:
        out = next(iter(con.execute(query, params).fetchnumpy().values()))
        return np.asarray(out, dtype=np.float64)

    engine = SQLEngine(DIALECT, execute, relation, cols, lookup_table=lookup_table,
                       fetch_doubles=fetch_doubles)
    engine.connection = con  # type: ignore[attr-defined]
    # the declared types (public: the schema; for CSV, what DuckDB's sniffer made of it)
    engine.declared = {str(r[0]): str(r[1]) for r in described}  # type: ignore[attr-defined]
    engine.resolutions = _declared_resolutions(con, data, sql, reader, described)
    return engine


def _declared_resolutions(
    con: Any, data: Any, sql: str | None, reader: str | None, described: list[tuple]
) -> dict[str, float | None]:
    """Column → the resolution its *declared* type states (``SQLEngine.resolutions``).

    A Parquet file read by ``read_parquet``: the types of ``described`` (DESCRIBE of
    the view or of the query: the file's schema and SQL's static typing, no row
    read).  A frame: DESCRIBE of the same relation over a copy of the frame with no
    rows, because DuckDB types a pandas object column from a sample of its rows (all
    Python ints → INTEGER) and the copy has none to sample; the types then follow
    from the dtypes alone.  CSV, JSON and text lines: none (their types are
    inferred from the rows)."""
    import duckdb

    if isinstance(data, str | os.PathLike):
        if reader is None or not reader.startswith("read_parquet("):
            return {}
        return by_name((str(r[0]), type_resolution(str(r[1]))) for r in described)
    empty = _no_rows(data)
    if empty is None:
        return {}
    # a second connection to the same (sandboxed, locked) database: a registered frame
    # is visible to its own connection only, so here ``data`` names the empty copy
    cur = con.cursor()
    try:
        cur.register("data", empty)
        relation = "data" if sql is None else f"({sql}) AS q"
        rows = cur.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()
    except duckdb.Error:  # the source opened, so unexpected: declare nothing
        return {}
    finally:
        cur.close()
    return by_name((str(r[0]), type_resolution(str(r[1]))) for r in rows)


def _no_rows(frame: Any) -> Any:
    """The frame's schema as a frame with no rows (pandas, polars, Arrow), else None."""
    root = type(frame).__module__.split(".")[0]
    if root == "pandas" and hasattr(frame, "iloc"):
        return frame.iloc[:0]
    if root == "polars" and hasattr(frame, "head"):
        return frame.head(0)
    if root == "pyarrow" and hasattr(frame, "slice"):
        return frame.slice(0, 0)
    return None


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
