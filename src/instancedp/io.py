"""Data in: one numeric column, or one graph, from whatever the data owner has.

Tabular sources — numpy arrays, Python sequences, pandas and polars
Series/DataFrames, Arrow tables/arrays, CSV/TSV/Parquet/JSON files, and SQL
over any of them through DuckDB (the embedded default engine) — become a 1-D
float64 array.  Graph sources — an edge-list file, an m×2 integer array, a
scipy.sparse matrix or a networkx graph — become what the graph queries take
(the queries normalise them; an edge-list file is parsed here).

Missing values (NULL, NaN, ±inf) are an error that counts them (the same
message on every engine: :func:`missing_error`, :func:`empty_error`); the caller's
explicit ``drop_missing=True`` removes them instead.  Every problem raises
:class:`DataError` (a ``ValueError``) with a one-line message that names the
problem and the fix, so the CLI can print it as is.  These checks look only at
the data owner's own input and happen before anything is released.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .errors import DataError, ParameterError, SchemaError

__all__ = [
    "DataError",
    "TABLE_SUFFIXES",
    "column_names",
    "graph_input",
    "read_column",
    "read_edge_list",
    "read_sql",
    "shipped",
    "AnalystQuery",
    "check_row_local_sql",
]


TABLE_SUFFIXES = {
    ".csv": "read_csv_auto",
    ".tsv": "read_csv_auto",
    ".txt": "read_csv_auto",
    ".csv.gz": "read_csv_auto",
    ".tsv.gz": "read_csv_auto",
    ".txt.gz": "read_csv_auto",
    ".csv.zst": "read_csv_auto",
    ".data": "read_csv_auto",  # UCI repository files (comma-separated, no header)
    ".dat": "read_csv_auto",
    ".parquet": "read_parquet",
    ".pq": "read_parquet",
    ".json": "read_json_auto",
    ".ndjson": "read_json_auto",
    ".jsonl": "read_json_auto",
    ".json.gz": "read_json_auto",
    ".jsonl.gz": "read_json_auto",
    ".ndjson.gz": "read_json_auto",
}

_DROP_HINT = "clean them or pass drop_missing=True"


def _sql_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _list_names(names: Sequence[str], limit: int = 30) -> str:
    shown = ", ".join(str(n) for n in names[:limit])
    return shown + (f", … ({len(names)} in all)" if len(names) > limit else "")


# -- files -----------------------------------------------------------------
def _reader(path: Path) -> str:
    name = path.name.lower()
    for suffix in sorted(TABLE_SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            return TABLE_SUFFIXES[suffix]
    raise DataError(
        f"cannot tell the format of {path}: use a file ending in "
        f"{', '.join(sorted(TABLE_SUFFIXES))}, or pass an sql query that reads it"
    )


def _existing_file(path: str | Path) -> Path:
    p = Path(path).expanduser()
    if not p.exists():
        raise SchemaError(f"file {p} not found: check the path")
    if p.is_dir():
        raise SchemaError(f"{p} is a directory: pass a data file")
    if p.stat().st_size == 0:
        raise SchemaError(f"{p} is empty (0 bytes): it has no header line and no rows")
    return p


def _connect() -> Any:
    import duckdb

    return duckdb.connect()


def _run_sql(con: Any, sql: str, what: str | None = None, file: str | None = None) -> Any:
    """An Arrow table from a DuckDB query; DuckDB errors → one-line DataError.

    ``what`` names the file being read (errors then say "cannot read FILE"
    rather than blaming the query); ``file`` is a FILE exposed to the query as
    ``data`` (a CSV error is then the file's, not the query's)."""
    import duckdb

    try:
        rel = con.sql(sql)
        if rel is None:
            raise DataError("the SQL statement returns no rows: pass a SELECT query")
        for meth in ("to_arrow_table", "fetch_arrow_table", "arrow"):
            if hasattr(rel, meth):
                return getattr(rel, meth)()
        raise DataError("this DuckDB version cannot return Arrow tables: upgrade duckdb")
    except duckdb.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "Invalid unicode" in str(exc) or "not utf-8 encoded" in str(exc):
            raise _NotUTF8(
                f"cannot read {what or file or 'a file in the query'}: it is not UTF-8 text "
                "(nor Latin-1): re-encode it as UTF-8 (e.g. iconv -f CP1252 -t UTF-8); a "
                "Latin-1 CSV passed as the data source (not named in the query) is read as such"
            ) from None
        if what is not None:
            raise DataError(
                f"cannot read {what}: {first}: check the file's format and contents"
            ) from None
        csv_error = "CSV Error" in first or "sniff" in first.lower()
        if csv_error and file is not None:
            raise DataError(
                f"cannot read {file}: {first}: check the file's format and contents"
            ) from None
        if csv_error:
            # A file named inside the query is read with DuckDB's sampled type
            # guess; a late "NA" or "12.5" then breaks it.
            raise DataError(
                f"cannot read a CSV file named in the query: {first}: pass the file as the "
                "data source and query it as the table data (every row is then used to infer "
                "the types and NA/NULL spellings count as missing)"
            ) from None
        whole = " ".join(str(exc).split())
        low = whole.lower()
        if "extension" in low and ("install" in low or "download" in low or "autoload" in low):
            raise SchemaError(
                f"DuckDB needs an extension it cannot download here (no network access): "
                f"{whole}; read the data another way (a CSV or Parquet file, or a DataFrame)"
            ) from None
        raise SchemaError(f"SQL error: {whole}") from None


# Spellings of a missing value in real CSV exports (R, pandas, Excel, SQL dumps);
# they become NULL, so they are counted and refused unless --drop-missing.
# "?" (and " ?" after a comma-space) is the UCI repository's marker.
CSV_NULLS = ("", "NA", "N/A", "n/a", "NULL", "null", "None", "#N/A", "NaN", "nan", "?", " ?")
_NULLS = ", ".join(_sql_literal(x) for x in CSV_NULLS)


class _NotUTF8(DataError):
    """A CSV file that is not UTF-8 (retried as Latin-1 before giving up)."""


def _latin1_fallback(read: Any) -> Any:
    """``read(encoding)`` with UTF-8 (None), then, for a file that is not UTF-8,
    Latin-1 — the usual encoding of spreadsheet exports — which decodes any
    byte sequence, so numeric columns always read."""
    try:
        return read(None)
    except _NotUTF8 as exc:
        try:
            return read("latin-1")
        except _NotUTF8:
            raise exc from None
        except DataError as exc2:
            if "encoding" in str(exc2).lower():  # a DuckDB without the option
                raise exc from None
            raise


def _file_relation(path: Path, encoding: str | None = None) -> str:
    reader = _reader(path)
    if reader == "read_csv_auto":
        if encoding is not None:
            return (
                f"{reader}({_sql_literal(str(path))}, sample_size=-1, nullstr=[{_NULLS}], "
                f"encoding={_sql_literal(encoding)})"
            )
        # sample_size=-1: infer each column's type from every row, not the first
        # 20,480 — otherwise a late "12.5" in an integer-looking column is
        # silently rounded, and a late "NA" is a conversion error.
        return f"{reader}({_sql_literal(str(path))}, sample_size=-1, nullstr=[{_NULLS}])"
    return f"{reader}({_sql_literal(str(path))})"


def column_names(path: str | Path) -> list[str]:
    """The columns of a table file (through DuckDB)."""
    p = _existing_file(path)
    con = _connect()

    def read(encoding: str | None) -> list[str]:
        rel = _file_relation(p, encoding)
        return list(_run_sql(con, f"SELECT * FROM {rel} LIMIT 0", what=str(p)).column_names)

    return _latin1_fallback(read)


def _read_file(path: str | Path, column: str | None) -> Any:
    p = _existing_file(path)
    con = _connect()

    def read(encoding: str | None) -> Any:
        rel = _file_relation(p, encoding)
        names = list(_run_sql(con, f"SELECT * FROM {rel} LIMIT 0", what=str(p)).column_names)
        col = _pick_column(names, column, f"file {p.name}")
        table = _run_sql(con, f"SELECT {_quote_ident(col)} FROM {rel}", what=str(p))
        arr = table.column(0)
        if rel.startswith("read_csv") and _is_temporal(arr):
            # the sniffer reads a column whose only values are "inf"/"-inf" as dates
            # (DuckDB's infinite date): read it as text, and as numbers if it is all numbers
            text = rel[:-1] + ", all_varchar=true)"
            as_text = _run_sql(con, f"SELECT {_quote_ident(col)} FROM {text}", what=str(p))
            numbers = _csv_text_as_numbers(as_text.column(0))
            arr = arr if _is_text(numbers) else numbers
        return (_csv_text_as_numbers(arr) if rel.startswith("read_csv") else arr), col

    return _latin1_fallback(read)


def _is_temporal(arr: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_temporal(arr.type)


def _is_text(arr: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)


def _csv_text_as_numbers(arr: Any) -> Any:
    """A CSV column DuckDB's sniffer left as text because of ``inf``, ``-inf`` or ``nan``
    (as pandas writes them) as doubles; any other text stays text (refused as not numeric)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return arr
    try:
        return pc.cast(arr, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return arr


def _pick_column(names: Sequence[str], column: str | None, where: str) -> str:
    if column is not None and not isinstance(column, str):  # a frame's 0 is its column "0"
        column = str(column)
    if column is None:
        if len(names) == 1:
            return names[0]
        raise DataError(
            f"{where} has {len(names)} columns ({_list_names(names)}): choose one with column=NAME"
        )
    if column not in names:
        close = [n for n in names if str(n).strip().lower() == column.strip().lower()]
        hint = f"did you mean {close[0]!r}? " if len(close) == 1 else ""
        raise DataError(
            f"unknown column {column!r} in {where}: {hint}the columns are {_list_names(names)}"
        )
    return column


# -- SQL ---------------------------------------------------------------------
def read_sql(
    sql: str,
    *,
    column: str | None = None,
    tables: Mapping[str, Any] | None = None,
    drop_missing: bool = False,
    _file: str | None = None,
) -> np.ndarray:
    """Run ``sql`` in DuckDB and return one numeric column as float64.

    ``tables`` registers Python objects (pandas/polars DataFrames, Arrow
    tables) under names the query can use; DuckDB also reads files named in
    the query (``SELECT price FROM 'sales.parquet' WHERE region = 'EU'``).
    """
    if not isinstance(sql, str) or not sql.strip():
        raise DataError("sql must be a non-empty SELECT query")
    import duckdb

    con = _connect()
    for name, obj in (tables or {}).items():
        try:
            con.register(name, _sql_table(obj))
        except (duckdb.Error, TypeError, ValueError):
            raise DataError(
                f"cannot query data of type {type(obj).__name__} with SQL: pass a pandas or "
                "polars DataFrame, an Arrow table, a mapping of columns or a 1-D array"
            ) from None
    table = _run_sql(con, sql, file=_file)
    names = list(table.column_names)
    col = _pick_column(names, column, "the SQL result")
    return _arrow_to_float(table.column(col), col, drop_missing)


def _declared_string(frame: Any, column: str) -> bool:
    """Whether a frame's column is declared text by its dtype (pandas ``str``/``string``,
    polars ``String``/``Categorical``, Arrow string): public, unlike a pandas ``object``
    column, whose DuckDB type is inferred from its values."""
    root = type(frame).__module__.split(".")[0]
    try:
        if root == "pandas" and hasattr(frame, "columns"):
            import pandas as pd

            dtype = frame[column].dtype
            return isinstance(dtype, pd.StringDtype) or (
                isinstance(dtype, pd.CategoricalDtype)
                and isinstance(dtype.categories.dtype, pd.StringDtype))
        if root == "polars" and hasattr(frame, "schema"):
            import polars as pl

            return frame.schema[column] in (pl.String, pl.Categorical, pl.Enum)
        if root == "pyarrow" and hasattr(frame, "schema"):
            import pyarrow as pa

            t = frame.schema.field(column).type
            t = t.value_type if pa.types.is_dictionary(t) else t
            return pa.types.is_string(t) or pa.types.is_large_string(t)
    except (KeyError, TypeError, AttributeError):
        return False
    return False


def _sql_table(obj: Any) -> Any:
    """What DuckDB can register: mappings of columns become Arrow tables, and a
    plain sequence or 1-D array the one-column table ``data(value)``."""
    import pyarrow as pa

    if isinstance(obj, Mapping):
        return pa.table({str(k): np.asarray(v) for k, v in obj.items()})
    if isinstance(obj, (list, tuple)) or (isinstance(obj, np.ndarray) and not obj.dtype.names):
        arr = np.asarray(obj)
        if arr.ndim == 2 and 1 in arr.shape:
            arr = arr.reshape(-1)
        if arr.ndim != 1:
            raise ParameterError("not 1-D")
        return pa.table({"value": pa.array(arr.tolist() if arr.dtype == object else arr)})
    if isinstance(obj, np.ndarray):  # structured: one column per field
        return pa.table({n: obj[n] for n in obj.dtype.names})
    return obj


# -- in-memory objects --------------------------------------------------------
def _arrow_to_float(arr: Any, name: str, drop_missing: bool) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(arr, pa.ChunkedArray) and arr.num_chunks == 0:
        arr = pa.array([], type=arr.type)
    t = arr.type
    if pa.types.is_dictionary(t):
        t = t.value_type
    numeric = (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_decimal(t)
        or pa.types.is_boolean(t)
        or pa.types.is_null(t)
    )
    if not numeric and arr.null_count == len(arr):
        # An all-empty CSV column (or a header-only file) has no type to infer
        # (DuckDB says VARCHAR): report it as missing values / an empty selection.
        arr = pa.nulls(len(arr), pa.float64()) if len(arr) else pa.array([], pa.float64())
        t, numeric = pa.float64(), True
    if not numeric:
        raise DataError(
            f"column {name!r} is not numeric (type {t}): choose a numeric column or cast it "
            "in the sql query"
        )
    n_null = arr.null_count
    if n_null:
        arr = pc.drop_null(arr)
    if pa.types.is_boolean(t) or pa.types.is_decimal(t):
        arr = pc.cast(arr, pa.float64())
    values = np.asarray(arr.to_numpy(), dtype=np.float64) if len(arr) else np.empty(0)
    return _finish(values, name, drop_missing, extra_dropped=n_null)


def missing_error(name: Any, bad: int, total: int) -> DataError:
    """The owner mode's refusal of NULL, NaN and ±inf rows (every engine says this)."""
    return DataError(
        f"column {name!r} has {bad} missing (NULL) or non-finite value(s) (NaN/inf) out of "
        f"{total}: {_DROP_HINT}"
    )


def empty_error(name: Any, dropped: int = 0) -> DataError:
    """The owner mode's refusal of an empty selection (every engine says this)."""
    extra = f" after dropping {dropped} missing or non-finite value(s)" if dropped else ""
    return DataError(
        f"the selection is empty{extra}: no rows in column {name!r}; check the file, "
        "the column or the WHERE clause"
    )


def _finish(
    values: np.ndarray, name: str, drop_missing: bool, extra_dropped: int = 0
) -> np.ndarray:
    """The owner's read policy on the rows left after ``extra_dropped`` NULLs: NULL,
    NaN and ±inf refused (:func:`missing_error`) or, with ``drop_missing``, dropped;
    an empty result refused (:func:`empty_error`)."""
    values = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    bad = ~np.isfinite(values)
    n_bad = int(np.count_nonzero(bad))
    if (n_bad or extra_dropped) and not drop_missing:
        raise missing_error(name, n_bad + extra_dropped, values.size + extra_dropped)
    values = values[~bad]
    if values.size == 0:
        raise empty_error(name, n_bad + extra_dropped)
    return values


def _is_numeric_numpy(arr: np.ndarray) -> bool:
    return arr.dtype.kind in "biuf"


def read_column(
    source: Any,
    column: str | None = None,
    *,
    sql: str | None = None,
    drop_missing: bool = False,
) -> np.ndarray:
    """One numeric column of ``source`` as a 1-D float64 array.

    ``source``: a path (CSV/TSV/Parquet/JSON, read by DuckDB), a numpy array
    (1-D, or structured with named fields), a list, a pandas or polars
    Series/DataFrame, or an Arrow Table/Array.  With ``sql``, the query runs
    in DuckDB with ``source`` registered as the table ``data`` (a plain
    sequence or 1-D array is the one-column table ``data(value)``; files can
    also be named in the query itself; ``source`` may then be None).
    """
    if sql is not None:
        tables = {} if source is None or isinstance(source, (str, Path)) else {"data": source}
        if not isinstance(source, (str, Path)):
            return read_sql(sql, column=column, tables=tables, drop_missing=drop_missing)
        p = _existing_file(source)

        def read(encoding: str | None) -> np.ndarray:
            # Expose the file as the view ``data`` so queries can say FROM data.
            query = f"WITH data AS (SELECT * FROM {_file_relation(p, encoding)}) {sql}"
            return read_sql(query, column=column, drop_missing=drop_missing, _file=str(p))

        return _latin1_fallback(read)
    if source is None:
        raise DataError("no data: pass a file, an array or a DataFrame, or an SQL query")
    if isinstance(source, (str, Path)):
        arr, col = _read_file(source, column)
        return _arrow_to_float(arr, col, drop_missing)

    mod = type(source).__module__.split(".")[0]
    if mod == "pandas":
        return _from_pandas(source, column, drop_missing)
    if mod == "polars":
        return _from_polars(source, column, drop_missing)
    if mod == "pyarrow":
        import pyarrow as pa

        if isinstance(source, (pa.Table, pa.RecordBatch)):
            col = _pick_column(list(source.column_names), column, "the Arrow table")
            return _arrow_to_float(source.column(col), col, drop_missing)
        if isinstance(source, (pa.Array, pa.ChunkedArray)):
            return _arrow_to_float(source, column or "data", drop_missing)
    if isinstance(source, np.ndarray) and source.dtype.names:
        col = _pick_column(list(source.dtype.names), column, "the structured array")
        return _from_numpy(source[col], col, drop_missing)
    if isinstance(source, Mapping):
        col = _pick_column(list(source), column, "the mapping")
        return _from_numpy(np.asarray(source[col]), col, drop_missing)
    if column is not None:
        raise DataError(
            f"column {column!r} given but the data ({type(source).__name__}) has no columns: "
            "drop column= or pass a table"
        )
    try:
        arr = np.asarray(source)
    except (TypeError, ValueError):
        raise DataError(
            f"cannot read data of type {type(source).__name__}: pass a numeric array, a "
            "DataFrame, an Arrow table or a file"
        ) from None
    return _from_numpy(arr, "data", drop_missing)


def declared_resolution(source: Any, column: str | None = None) -> float | None:
    """The resolution an in-memory column's declared type states, else None.

    An integer dtype (numpy, pandas — nullable and Arrow-backed too —, polars, Arrow)
    declares resolution 1, a decimal type of scale s declares 10^−s; floating types,
    booleans, Python lists and files declare none.  Read from the container's type,
    never from a row: the type is the schema the caller passes, public like the
    bounds (a type *inferred* from the rows, e.g. by a CSV reader, is the caller's to
    fix before passing it).  The column is picked as :func:`read_column` picks it
    (:func:`_pick_column`); a column it would refuse declares nothing here.
    """
    mod = type(source).__module__.split(".")[0]
    try:
        if mod == "pandas":
            import pandas as pd

            if isinstance(source, pd.DataFrame):
                col = _pick_column([str(c) for c in source.columns], column, "the DataFrame")
                source = source[[c for c in source.columns if str(c) == col][0]]
            dtype = source.dtype
            if isinstance(dtype, pd.ArrowDtype):
                return _arrow_resolution(dtype.pyarrow_dtype)
            if pd.api.types.is_bool_dtype(dtype) or not pd.api.types.is_integer_dtype(dtype):
                return None
            return 1.0
        if mod == "polars":
            import polars as pl

            if isinstance(source, pl.DataFrame):
                source = source.get_column(_pick_column(list(source.columns), column,
                                                        "the DataFrame"))
            return _arrow_resolution(source.to_arrow().type) if isinstance(
                source, pl.Series) else None
        if mod == "pyarrow":
            import pyarrow as pa

            if isinstance(source, pa.Table | pa.RecordBatch):
                source = source.column(_pick_column(list(source.column_names), column,
                                                    "the Arrow table"))
            return _arrow_resolution(source.type) if isinstance(
                source, pa.Array | pa.ChunkedArray) else None
        if isinstance(source, np.ndarray):
            if source.dtype.names:
                source = source[_pick_column(list(source.dtype.names), column,
                                             "the structured array")]
            return 1.0 if source.dtype.kind in "iu" else None
    except DataError:  # a column read_column refuses: it names the problem
        return None
    return None


def _arrow_resolution(typ: Any) -> float | None:
    import pyarrow as pa

    if pa.types.is_integer(typ):
        return 1.0
    if pa.types.is_decimal(typ):
        return float(10.0 ** -typ.scale)
    return None


def _from_numpy(arr: np.ndarray, name: str, drop_missing: bool) -> np.ndarray:
    if arr.dtype == object:
        # Python lists with None: None → missing; anything else must be a number.
        flat = arr.reshape(-1)
        try:
            arr = np.array([math.nan if v is None else float(v) for v in flat], dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError(
                f"column {name!r} is not numeric: choose a numeric column or convert it"
            ) from None
    if not _is_numeric_numpy(arr):
        raise DataError(
            f"column {name!r} is not numeric (dtype {arr.dtype}): choose a numeric column or "
            "convert it"
        )
    if arr.ndim > 1 and not (arr.ndim == 2 and 1 in arr.shape):
        raise DataError(f"data must be 1-D (one column), got shape {arr.shape}: pick one column")
    return _finish(arr.astype(np.float64, copy=False), name, drop_missing)


def _from_pandas(obj: Any, column: str | None, drop_missing: bool) -> np.ndarray:
    import pandas as pd

    if isinstance(obj, pd.DataFrame):
        col = _pick_column([str(c) for c in obj.columns], column, "the DataFrame")
        series = obj[[c for c in obj.columns if str(c) == col][0]]
        name = col
    else:
        series, name = obj, str(obj.name) if obj.name is not None else "data"
        if column is not None and column != name:
            raise DataError(f"unknown column {column!r}: the Series is named {name!r}")
    if series.dtype == object:
        # Python numbers and None (Decimal from a database driver, ints with
        # None): numeric; strings stay refused below.
        import decimal
        import numbers

        vals = series.dropna()
        if len(vals) and all(
            isinstance(v, (numbers.Real, decimal.Decimal)) and not isinstance(v, bool) for v in vals
        ):
            series = pd.to_numeric(series.map(lambda v: None if pd.isna(v) else float(v)))
    if not (pd.api.types.is_numeric_dtype(series.dtype) or pd.api.types.is_bool_dtype(series)):
        raise DataError(
            f"column {name!r} is not numeric (dtype {series.dtype}): choose a numeric column "
            "or convert it"
        )
    if isinstance(series.dtype, pd.ArrowDtype):
        # Arrow-backed columns (decimals, int64[pyarrow] with NA): read them as Arrow.
        import pyarrow as pa

        return _arrow_to_float(pa.array(series.array), name, drop_missing)
    n_null = int(series.isna().sum())
    values = series.dropna().to_numpy(dtype=np.float64, na_value=np.nan)
    return _finish(values, name, drop_missing, extra_dropped=n_null)


def _from_polars(obj: Any, column: str | None, drop_missing: bool) -> np.ndarray:
    import polars as pl

    if isinstance(obj, pl.DataFrame):
        col = _pick_column(list(obj.columns), column, "the DataFrame")
        series = obj.get_column(col)
    elif isinstance(obj, pl.LazyFrame):
        return _from_polars(obj.collect(), column, drop_missing)
    else:
        series, col = obj, obj.name or "data"
        if column is not None and column != col:
            raise DataError(f"unknown column {column!r}: the Series is named {col!r}")
    if not (series.dtype.is_numeric() or series.dtype == pl.Boolean or series.dtype == pl.Null):
        raise DataError(
            f"column {col!r} is not numeric (dtype {series.dtype}): choose a numeric column or "
            "cast it"
        )
    return _arrow_to_float(series.to_arrow(), col, drop_missing)


# -- graphs -------------------------------------------------------------------------
def read_edge_list(path: str | Path) -> np.ndarray:
    """An m×2 int64 array of edges from a text file.

    One edge per line, two vertex labels separated by whitespace or a comma;
    blank lines and lines starting with ``#`` or ``%`` are skipped, as is a
    header line whose fields are not both labels of the same kind as the rest.
    Integer labels are kept (sparse large ids are renumbered 0..V-1, which
    changes no subgraph count); other labels (names) are numbered in sorted
    order.  Extra fields (weights) are ignored.
    """
    p = _existing_file(path)
    rows: list[tuple[str, str]] = []
    try:
        # utf-8-sig: a byte-order mark (Windows exports) must not hide the first edge.
        with open(p, encoding="utf-8-sig") as fh:
            for lineno, line in enumerate(fh, 1):
                s = line.strip()
                if not s or s[0] in "#%":
                    continue
                parts = s.replace(",", " ").replace(";", " ").split()
                if len(parts) < 2:
                    raise DataError(
                        f"{p.name} line {lineno}: expected two vertex labels per line, got {s!r}"
                    )
                rows.append((parts[0], parts[1]))
    except UnicodeDecodeError as exc:
        raise DataError(
            f"{p.name} is not UTF-8 text ({exc.reason} at byte {exc.start}): pass a plain-text "
            "edge list (one 'u v' pair per line), re-encoded as UTF-8"
        ) from None
    if not rows:
        raise DataError(f"{p.name} has no edges: one 'u v' pair per line expected")

    def is_int(x: str) -> bool:
        try:
            int(x)
        except ValueError:
            return False
        return True

    first_int = is_int(rows[0][0]) and is_int(rows[0][1])
    rest_int = all(is_int(u) and is_int(v) for u, v in rows[1:])
    if rows[1:] and rest_int and not first_int:
        rows = rows[1:]  # a header line such as "source,target"
    if all(is_int(u) and is_int(v) for u, v in rows):
        try:
            edges = np.array([(int(u), int(v)) for u, v in rows], dtype=np.int64)
        except OverflowError:
            raise DataError(
                f"{p.name}: a vertex id does not fit in 64 bits: use smaller ids or names"
            ) from None
        if edges.size and edges.min() < 0:
            raise DataError(f"{p.name}: vertex ids must be >= 0 integers (or names)")
        return _compact_ids(edges.reshape(-1, 2))
    labels = sorted({x for e in rows for x in e})
    index = {lab: i for i, lab in enumerate(labels)}
    return np.array([(index[u], index[v]) for u, v in rows], dtype=np.int64).reshape(-1, 2)


def read_edge_list_public(path: str | Path, n_vertices: int) -> np.ndarray:
    """Analyst mode: the edges of a file on the public vertex set ``0..n_vertices-1``.

    Each line is judged on its own (a row-by-row policy, so neighbouring edge
    sets stay neighbours): a line that is not two integer ids in range, or is a
    self-loop, is skipped; nothing is renumbered (renumbering from the edges
    seen would make the vertex ids a function of the private edges).  Never
    raises for what the lines contain."""
    p = _existing_file(path)
    out: list[tuple[int, int]] = []
    with open(p, encoding="utf-8-sig", errors="replace") as fh:
        for line in fh:
            parts = line.replace(",", " ").replace(";", " ").split()
            if len(parts) < 2:
                continue
            try:
                u, v = int(parts[0]), int(parts[1])
            except ValueError:
                continue
            if u != v and 0 <= u < n_vertices and 0 <= v < n_vertices:
                out.append((u, v))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def _compact_ids(edges: np.ndarray) -> np.ndarray:
    """Sparse integer ids (user ids, 10^11 and up) numbered 0..V-1 in sorted order.

    The graph queries index vertices by id, so sparse large ids would need
    memory for every id up to the largest.  Subgraph counts do not depend on
    the labels (isolated vertices count for nothing), so renumbering changes
    no statistic; ids already dense enough are kept as they are."""
    if edges.size == 0 or int(edges.max()) < 4 * edges.size + 1024:
        return edges
    _, inverse = np.unique(edges, return_inverse=True)
    return inverse.reshape(edges.shape).astype(np.int64)


def graph_input(source: Any) -> Any:
    """A graph the graph queries accept: edge-list files are parsed here;
    arrays, scipy.sparse matrices and networkx graphs pass through (the
    queries normalise and validate them)."""
    if isinstance(source, (str, Path)):
        return read_edge_list(source)
    if isinstance(source, (list, tuple)) and source:
        try:
            arr = np.asarray(source)
        except (TypeError, ValueError):
            arr = None
        if arr is not None and arr.ndim == 2 and arr.shape[1] == 2 and arr.dtype.kind in "iuUS":
            source = arr  # a list of (u, v) pairs: ids or names, as an array
    if (
        isinstance(source, np.ndarray)
        and source.ndim == 2
        and source.shape[1] == 2
        and source.dtype.kind in "iu"
        and source.size
        and int(source.min()) >= 0
    ):
        return _compact_ids(source)
    if (
        isinstance(source, np.ndarray)
        and source.ndim == 2
        and source.shape[1] == 2
        and source.dtype.kind in "USO"
    ):
        # Vertex names: numbered in sorted order, as in an edge-list file.
        labels, inverse = np.unique(source.astype(str), return_inverse=True)
        return inverse.reshape(source.shape).astype(np.int64)
    return source


def shipped(name: str) -> Path:
    """Path of a dataset shipped in ``instancedp/data`` (``goog.csv``, ``karate.edges``)."""
    p = Path(__file__).with_name("data") / name
    if not p.is_file():
        names = sorted(x.name for x in p.parent.iterdir() if x.name != "README.md")
        raise DataError(f"no shipped dataset {name!r}: choose one of {', '.join(names)}")
    return p


# -- analyst mode: row-local SQL in a sandbox, total reads -----------------------
# In analyst mode nothing the caller sees may depend on the rows except through
# a charged release.  So the query is checked from its public text (parsed by
# DuckDB, never by regexes), bound against the public schema before the charge,
# and evaluated after it so that no row can raise: every expression is wrapped
# in TRY(...) (an error becomes NULL) and NULLs are then dropped by the public
# missing-value policy.  CSV columns are read as text (their inferred types
# would be a function of every row) and cast under the same policy.

#: expression classes a row-local SELECT may use (DuckDB's parsed-expression classes)
_ROW_LOCAL_CLASSES = frozenset(
    {"COLUMN_REF", "CONSTANT", "FUNCTION", "OPERATOR", "COMPARISON", "CONJUNCTION",
     "CASE", "CAST", "BETWEEN", "COLLATE", "TYPE"}
)
_NOT_EXPRESSIONS = frozenset({"cast_type", "literal", "value", "qualified_name", "type_info"})
#: file formats whose column types are declared in the file (read as declared)
_DECLARED_TYPES = {"read_parquet"}
_ANALYST_SQL_HELP = (
    "only SELECT <one expression> FROM data [WHERE <condition>] is accepted, with "
    "deterministic row-by-row functions"
)


def _parse_sql(con: Any, sql: str) -> dict[str, Any]:
    import json

    text = con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0]
    tree = json.loads(text)
    if tree.get("error"):
        from .errors import ParameterError

        raise ParameterError(
            f"SQL error: {tree.get('error_message', 'cannot parse the query')}",
            parameter="sql",
        )
    return tree


_FUNCTIONS_CACHE: dict[str, frozenset[str]] = {}


def _consistent_functions(con: Any) -> frozenset[str]:
    """DuckDB's deterministic scalar functions (read once per DuckDB version)."""
    import duckdb

    if duckdb.__version__ in _FUNCTIONS_CACHE:
        return _FUNCTIONS_CACHE[duckdb.__version__]
    # A name is accepted when it has a deterministic (CONSISTENT) overload and no
    # volatile one; other overloads are CONSISTENT_WITHIN_QUERY (they read the
    # session's time zone, never another row).  DuckDB's built-in scalar macros
    # (nullif, …) are expressions over such functions.
    rows = con.execute(
        "SELECT lower(function_name) FROM duckdb_functions() "
        "WHERE function_type = 'scalar' GROUP BY 1 "
        "HAVING bool_or(stability = 'CONSISTENT') AND NOT bool_or(stability = 'VOLATILE') "
        "UNION SELECT lower(function_name) FROM duckdb_functions() WHERE function_type = 'macro'"
    ).fetchall()
    names = frozenset(r[0] for r in rows)
    _FUNCTIONS_CACHE[duckdb.__version__] = names
    return names


def _refuse(why: str) -> None:
    from .errors import ParameterError

    raise ParameterError(f"SQL not accepted: {why}; {_ANALYST_SQL_HELP}", parameter="sql")


def _check_expression(node: Any, allowed_functions: frozenset[str]) -> None:
    """Refuse anything that is not a deterministic function of one row."""
    if isinstance(node, list):
        for x in node:
            _check_expression(x, allowed_functions)
        return
    if not isinstance(node, dict):
        return
    cls = node.get("class")
    if cls is not None:
        if cls == "SUBQUERY":
            _refuse("a subquery reads other rows")
        if cls == "WINDOW":
            _refuse("a window function reads other rows")
        if cls == "STAR":
            _refuse("SELECT * selects several columns")
        if cls not in _ROW_LOCAL_CLASSES:
            _refuse(f"expressions of kind {cls.lower()} are not supported")
        if cls == "FUNCTION":
            name = str(node.get("function_name", "")).lower()
            if node.get("schema") or node.get("catalog"):
                _refuse(f"function {name!r} is qualified by a schema")
            if name not in allowed_functions:
                _refuse(
                    f"function {name!r} is an aggregate, a table function or not "
                    "deterministic (its value depends on more than its row)"
                )
            if node.get("distinct") or node.get("filter") or (
                node.get("order_bys") or {}
            ).get("orders"):
                _refuse(f"function {name!r} uses DISTINCT, FILTER or ORDER BY")
    for key, value in node.items():
        # types, literals and names are not expressions
        if key not in _NOT_EXPRESSIONS and isinstance(value, (dict, list)):
            _check_expression(value, allowed_functions)


def check_row_local_sql(sql: str, con: Any = None) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The (select expression, where condition) of an accepted analyst query.

    Accepts exactly ``SELECT <expr> FROM data [WHERE <cond>]`` whose expressions
    use only deterministic scalar functions of the current row (DuckDB's own
    catalogue says which are ``CONSISTENT``).  Refuses, from the text alone,
    several statements, set operations, CTEs, joins, other tables or files,
    subqueries, aggregates, windows, GROUP BY/HAVING/QUALIFY, DISTINCT, ORDER
    BY, LIMIT, SAMPLE and volatile functions (``random()``, ``error()``,
    ``now()``…): each makes a selected row depend on other rows or on chance.
    Raises :class:`ParameterError` naming ``sql``; nothing is charged.
    """
    import duckdb

    if not isinstance(sql, str) or not sql.strip():
        from .errors import ParameterError

        raise ParameterError("sql must be a non-empty SELECT query", parameter="sql")
    con = con or duckdb.connect()
    tree = _parse_sql(con, sql)
    stmts = tree.get("statements", [])
    if len(stmts) != 1:
        _refuse("give exactly one statement")
    node = stmts[0].get("node", {})
    if node.get("type") != "SELECT_NODE":
        _refuse("set operations (UNION, EXCEPT, INTERSECT) and other statements")
    if node.get("cte_map", {}).get("map"):
        _refuse("WITH (common table expressions)")
    if node.get("modifiers"):
        _refuse("DISTINCT, ORDER BY, LIMIT and OFFSET depend on other rows")
    if node.get("group_expressions") or node.get("group_sets") or node.get("having"):
        _refuse("GROUP BY and HAVING aggregate rows")
    if node.get("qualify") or node.get("sample"):
        _refuse("QUALIFY and USING SAMPLE depend on other rows or on chance")
    source = node.get("from_table") or {}
    if source.get("type") != "BASE_TABLE":
        _refuse("the query must read FROM data only (no joins, files or table functions)")
    if (
        str(source.get("table_name", "")).lower() != "data"
        or source.get("schema_name")
        or source.get("catalog_name")
        or source.get("sample")
        or source.get("at_clause")
    ):
        _refuse("the query must read FROM data only (no other table)")
    select = node.get("select_list") or []
    if len(select) != 1:
        _refuse("select exactly one expression")
    allowed = _consistent_functions(con)
    _check_expression(select[0], allowed)
    where = node.get("where_clause")
    if where is not None:
        _check_expression(where, allowed)
    return select[0], where


def _analyst_sql_text(
    con: Any, expr: dict[str, Any], where: dict[str, Any] | None, *, cast: bool = True
) -> str:
    """``SELECT TRY_CAST(TRY(expr) AS DOUBLE) FROM data WHERE COALESCE(TRY(cond), false)``,
    built on DuckDB's own parse tree (no splicing of the user's text)."""
    import json

    def parse(sql: str) -> dict[str, Any]:
        return json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchone()[0])

    value = "TRY_CAST(TRY(__instancedp_e) AS DOUBLE)" if cast else "TRY(__instancedp_e)"
    tree = parse(
        f"SELECT {value} AS value FROM data WHERE COALESCE(TRY(__instancedp_w), false)"
    )
    stmt = tree["statements"][0]["node"]
    if where is None:
        where = parse("SELECT true")["statements"][0]["node"]["select_list"][0]
    holes = {"__instancedp_e": expr, "__instancedp_w": where}

    def swap(node: Any) -> Any:
        if isinstance(node, dict):
            names = node.get("column_names") if node.get("class") == "COLUMN_REF" else None
            if names and len(names) == 1 and names[0] in holes:
                return holes[names[0]]
            return {k: swap(v) for k, v in node.items()}
        if isinstance(node, list):
            return [swap(v) for v in node]
        return node

    stmt["select_list"] = swap(stmt["select_list"])
    stmt["where_clause"] = swap(stmt["where_clause"])
    return con.execute("SELECT json_deserialize_sql(?)", [json.dumps(tree)]).fetchone()[0]


class AnalystQuery:
    """A column of ``source`` (optionally through row-local ``sql``), checked and
    bound before any row is read; :meth:`read` reads the rows, totally.

    Public steps (may raise :class:`ParameterError`/:class:`SchemaError`, before
    any charge): the format, the query's text, its binding against the schema
    (column names and declared types).  :meth:`read` (after the charge) never
    raises for a reason that depends on the rows: values that are NULL, NaN,
    ±inf, not numbers, or whose expression fails are dropped.
    """

    def __init__(self, source: Any, column: str | None = None, sql: str | None = None) -> None:
        import duckdb

        from .errors import ParameterError, SchemaError

        if source is None:
            raise ParameterError(
                "analyst mode reads the session's own data only: the query names the "
                "table data, never a file",
                parameter="data",
            )
        if sql is not None and column is not None:
            raise ParameterError(
                "give column or sql, not both: the query selects the column", parameter="column"
            )
        self._con = con = duckdb.connect(config={"threads": 1})
        paths: list[str] = []
        if isinstance(source, (str, Path)):
            p = _existing_file(source)
            rel = self.relation(p)
            try:  # binds the schema: the header or the Parquet footer, not the rows
                con.execute(f"CREATE VIEW data AS SELECT * FROM {rel}")
            except duckdb.Error as exc:
                raise SchemaError(f"cannot read {p.name}: {' '.join(str(exc).split())}") from None
            paths.append(str(p))
        else:
            try:
                con.register("data", _sql_table(source))
            except (duckdb.Error, TypeError, ValueError):
                raise SchemaError(
                    f"cannot query data of type {type(source).__name__}: pass a pandas or "
                    "polars DataFrame, an Arrow table, a mapping of columns or a 1-D array"
                ) from None
        # Sandbox: only the registered source may be read, and no setting changes.
        con.execute(f"SET allowed_paths = [{', '.join(_sql_literal(x) for x in paths)}]")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        names = [r[0] for r in con.execute("DESCRIBE data").fetchall()]
        if sql is None:
            col = _pick_column(names, column, "the data")
            sql = f"SELECT {_quote_ident(col)} FROM data"
        expr, where = check_row_local_sql(sql, con)
        self.sql = _analyst_sql_text(con, expr, where)
        try:  # bind only: depends on the query text and the schema
            con.execute("DESCRIBE " + sql.strip().rstrip(";")).fetchall()
            inner = con.execute(
                "DESCRIBE " + _analyst_sql_text(con, expr, where, cast=False)
            ).fetchall()
            con.execute("DESCRIBE " + self.sql).fetchall()
        except duckdb.Error as exc:
            raise SchemaError(f"SQL error: {' '.join(str(exc).split())}") from None
        kind = str(inner[0][1]).upper() if inner else "DOUBLE"
        declared_text = kind == "VARCHAR" and (
            (isinstance(source, (str, Path)) and _reader(Path(source)) in _DECLARED_TYPES)
            or (column is not None and _declared_string(source, column))
        )
        if not _numeric_sql_type(kind) or declared_text:  # a declared text column
            # the type's name only: an ENUM's or a STRUCT's parameters list values
            # (a pandas categorical's categories come from its rows)
            raise SchemaError(
                f"the selected expression has type {kind.split('(')[0]}, which is not numeric: "
                "select a number (text columns of a CSV are cast to numbers by the public "
                "policy)"
            )

    @classmethod
    def relation(cls, p: Path) -> str:
        """DuckDB's table function reading file ``p`` under the public policy: CSV/TSV
        with a header row, every column as text (cast to numbers by the query),
        rows that cannot be parsed skipped; Parquet with its declared types."""
        from .errors import SchemaError

        reader = _reader(p)
        if reader == "read_csv_auto":
            delim = "\t" if ".tsv" in p.name.lower() else ","
            names = cls._csv_header(p, delim)
            cols = ", ".join(f"{_sql_literal(n)}: 'VARCHAR'" for n in names)
            return (
                f"read_csv({_sql_literal(str(p))}, auto_detect=false, header=true, "
                f"delim={_sql_literal(delim)}, quote='\"', escape='\"', "
                f"columns={{{cols}}}, ignore_errors=true, null_padding=true)"
            )
        if reader in _DECLARED_TYPES:
            return f"{reader}({_sql_literal(str(p))})"
        raise SchemaError(
            f"{p.name}: analyst mode reads CSV/TSV (columns cast by the public "
            "policy) and Parquet (declared types) only; JSON types are inferred "
            "from the rows: convert the file to Parquet"
        )

    @staticmethod
    def _csv_header(p: Path, delim: str) -> list[str]:
        """The header line's names (public: the file's schema, not its rows)."""
        import csv
        import gzip

        from .errors import SchemaError

        name = p.name.lower()
        if name.endswith(".zst"):
            raise SchemaError(
                f"{p.name}: analyst mode reads the header of plain or gzip-compressed CSV/TSV "
                "only: decompress the file or convert it to Parquet"
            )
        # a .gz file's first line is its compressed bytes: read the header through gzip
        opener: Any = gzip.open if name.endswith(".gz") else open
        with opener(p, "rt", encoding="utf-8-sig", errors="replace", newline="") as fh:
            first = fh.readline()
        if not first.strip():
            from .errors import SchemaError

            raise SchemaError(
                f"{p.name} is empty or has no header line: analyst mode needs the column "
                "names on the first line"
            )
        names = [n.strip() for n in next(csv.reader([first], delimiter=delim))]
        other = [d for d in ";|\t," if d != delim and d in names[0]]
        if len(names) == 1 and other:  # e.g. a European export separated by ';'
            shown = "tab" if other[0] == "\t" else repr(other[0])
            raise SchemaError(
                f"{p.name}: the header line is one column {names[0]!r}, separated by {shown}: "
                "analyst mode reads comma-separated .csv and tab-separated .tsv files; "
                "convert the file (or to Parquet)"
            )
        dup = sorted({n for n in names if names.count(n) > 1 or not n})
        if dup:
            from .errors import SchemaError

            raise SchemaError(
                f"{p.name}: the header line has empty or repeated column names "
                f"({', '.join(repr(n) for n in dup)}): give every column its own name"
            )
        return names

    def read(self) -> np.ndarray:
        """The selected values as float64, NULL/NaN/±inf/failed rows dropped."""
        table = self._con.sql(self.sql)
        col = table.fetchnumpy()["value"]
        values = np.asarray(np.ma.filled(np.ma.asarray(col, dtype=np.float64), np.nan))
        return values[np.isfinite(values)]


def _numeric_sql_type(kind: str) -> bool:
    base = kind.split("(")[0].strip()
    return base in {
        "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
        "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "DECIMAL", "BOOLEAN",
        "VARCHAR", '"NULL"', "NULL",
    }
