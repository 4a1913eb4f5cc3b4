"""``Source.declared_resolution``: every engine reports the resolution a column's
DECLARED type states (integer → 1, decimal of scale s → 10^−s, anything else → None),
read from the schema or catalog and never from a row.

The expected values are the rules themselves (an integer type is 1.0, DECIMAL(10,2)
is 0.01, ...), written here by hand.  A type a reader infers from the rows (CSV, JSON,
a Python list, a pandas object column in DuckDB) declares nothing: two neighbouring
tables must never get different answers.  Each "reads no row" test holds rows that an
inference would read differently from the declaration (2.5 in an INTEGER column, whole
numbers in a DOUBLE one, an empty table beside a full one).
"""

from __future__ import annotations

import decimal
import sqlite3

import numpy as np
import pytest

from instancedp.backends import open_source
from instancedp.errors import SchemaError

#: the five kinds of column each engine is asked about, and what each declares
EXPECTED = {"i": 1.0, "d": 0.01, "f": None, "b": None, "s": None}


def _all(src) -> dict:
    return {c: src.declared_resolution(c) for c in src.columns}


def _no_queries(src) -> None:
    """The method answers from what the engine read when it opened: no statement runs."""
    def refuse(*_a, **_k):
        raise AssertionError("declared_resolution ran a query")

    src.engine.execute = refuse
    src.engine.fetch_doubles = refuse


# -- the five kinds in a pyarrow table, a pandas and a polars frame --------------------
def _arrow(rows: list[tuple]):
    import pyarrow as pa

    cols = list(zip(*rows, strict=True)) if rows else [[]] * 5
    return pa.table({
        "i": pa.array(cols[0], pa.int32()),
        "d": pa.array([decimal.Decimal(v) for v in cols[1]], pa.decimal128(10, 2)),
        "f": pa.array(cols[2], pa.float64()),
        "b": pa.array(cols[3], pa.bool_()),
        "s": pa.array(cols[4], pa.string()),
    })


# whole numbers in the float column, 2 decimals never used: an inference would differ
ROWS = [(1, "2.00", 3.0, True, "x"), (4, "5.00", 6.0, False, "y")]
OTHER_ROWS = [(7, "0.25", 0.5, True, "z")]


def _frames(rows: list[tuple]) -> dict:
    import pandas as pd
    import polars as pl

    table = _arrow(rows)
    return {
        "arrow": table,
        "polars": pl.from_arrow(table),
        "pandas": table.to_pandas(types_mapper={
            table.schema.field("d").type: pd.ArrowDtype(table.schema.field("d").type)}.get),
    }


@pytest.mark.parametrize("kind", ["arrow", "polars", "pandas"])
@pytest.mark.parametrize("engine", ["numpy", "duckdb"])
def test_frames_declare_their_dtypes(kind, engine):
    # in memory every column becomes float64, so a text column cannot be opened there
    keep = list(EXPECTED) if engine == "duckdb" else ["i", "d", "f", "b"]
    for rows in (ROWS, OTHER_ROWS, []):  # the rows change nothing, none at all included
        frame = _frames(rows)[kind]
        frame = frame.select(keep) if kind != "pandas" else frame[keep]
        src = open_source(frame, sql="SELECT * FROM data" if engine == "duckdb" else None)
        assert src.backend == engine
        _no_queries(src)
        assert _all(src) == {c: EXPECTED[c] for c in keep}
        with pytest.raises(SchemaError, match="unknown column"):
            src.declared_resolution("nope")
        with pytest.raises(SchemaError, match="name a column"):
            src.declared_resolution()


def test_pandas_numpy_dtypes_in_memory():
    import pandas as pd

    frame = pd.DataFrame({
        "i8": np.array([1, 2], np.int8), "u64": np.array([1, 2], np.uint64),
        "nullable": pd.array([1, None], dtype="Int64"), "f": [1.0, 2.0],
        "b": [True, False], "o": pd.Series([1, 2], dtype=object), 0: [1, 2],
    })
    want = {"i8": 1.0, "u64": 1.0, "nullable": 1.0, "f": None, "b": None, "o": None, "0": 1.0}
    assert _all(open_source(frame)) == want
    assert _all(open_source(frame, sql="SELECT * FROM data")) == want


def test_arrays_declare_only_a_numpy_dtype():
    assert open_source(np.array([1, 2, 3])).declared_resolution() == 1.0
    assert open_source(np.array([1, 2], np.uint8)).declared_resolution() == 1.0
    assert open_source(np.array([1.0, 2.0])).declared_resolution() is None
    assert open_source(np.array([True, False])).declared_resolution() is None
    # a list's dtype is inferred from its rows: adding 2.5 would change it
    assert open_source([1, 2, 3]).declared_resolution() is None
    assert open_source([]).declared_resolution() is None
    with pytest.raises(SchemaError, match="no column"):
        open_source(np.array([1, 2])).declared_resolution("v")


def test_a_frame_column_the_frame_repeats_declares_nothing():
    import pandas as pd

    src = open_source(pd.DataFrame([[1, 2]], columns=["a", "a"]))
    assert src.declared_resolution("a") is None


def test_duckdb_ignores_the_types_it_samples_from_pandas_rows():
    """DuckDB types a pandas object column from its rows (Python ints → INTEGER, Decimals
    → DECIMAL(3,2)); the engine computes with them, but they declare nothing."""
    import pandas as pd

    frame = pd.DataFrame({"o": pd.Series([1, 2], dtype=object),
                          "dec": pd.Series([decimal.Decimal("1.25")] * 2, dtype=object)})
    src = open_source(frame, sql="SELECT o, dec, CAST(o AS DECIMAL(6, 1)) AS c FROM data")
    assert src.engine.declared["o"] == "INTEGER"  # DuckDB's sample, a function of the rows
    assert _all(src) == {"o": None, "dec": None, "c": 0.1}  # the CAST is the query's text
    assert src.count("o") == 2  # the empty copy (another connection) left `data` alone


# -- DuckDB over files ----------------------------------------------------------------------
def _parquet(tmp_path, name: str, rows: list[tuple]) -> str:
    import pyarrow.parquet as pq

    path = tmp_path / f"{name}.parquet"
    pq.write_table(_arrow(rows), path)
    return str(path)


def test_parquet_declares_its_schema(tmp_path):
    for name, rows in (("a", ROWS), ("b", OTHER_ROWS), ("empty", [])):
        src = open_source(_parquet(tmp_path, name, rows))
        assert src.backend == "duckdb"
        _no_queries(src)
        assert _all(src) == EXPECTED
        with pytest.raises(SchemaError, match="unknown column"):
            src.declared_resolution("nope")


def test_parquet_every_integer_and_decimal_width(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = {"i8": pa.int8(), "i16": pa.int16(), "i64": pa.int64(), "u8": pa.uint8(),
             "u32": pa.uint32(), "u64": pa.uint64(), "d0": pa.decimal128(5, 0),
             "d38": pa.decimal128(38, 6), "f32": pa.float32(), "day": pa.date32()}
    path = tmp_path / "widths.parquet"
    pq.write_table(pa.table({k: pa.array([], t) for k, t in types.items()}), path)
    assert _all(open_source(str(path))) == {
        "i8": 1.0, "i16": 1.0, "i64": 1.0, "u8": 1.0, "u32": 1.0, "u64": 1.0, "d0": 1.0,
        "d38": 1e-6, "f32": None, "day": None}


# SQL's static typing: DECIMAL(2,1) ∪ INTEGER is DECIMAL(11,1) whether or not a row takes
# the 0.5 branch; / on integers is DOUBLE, // stays an integer.
QUERY = ("SELECT i, d, f, CASE WHEN i > 5 THEN 0.5 ELSE i END AS c, i / 2 AS h, "
         "i // 2 AS q, d * 2 AS d2 FROM data WHERE b")
QUERY_EXPECTED = {"i": 1.0, "d": 0.01, "f": None, "c": 0.1, "h": None, "q": 1.0, "d2": 0.01}


def test_parquet_sql_is_typed_statically(tmp_path):
    # ROWS never reach i > 5, OTHER_ROWS do; the empty file has no rows at all
    for name, rows in (("a", ROWS), ("b", OTHER_ROWS), ("empty", [])):
        src = open_source(_parquet(tmp_path, name, rows), sql=QUERY)
        assert _all(src) == QUERY_EXPECTED
    frame = _frames(ROWS)["arrow"]
    assert _all(open_source(frame, sql=QUERY)) == QUERY_EXPECTED


def test_csv_and_json_declare_nothing(tmp_path):
    csv = tmp_path / "ints.csv"
    csv.write_text("a,b\n1,2\n3,4\n")  # DuckDB's sniffer makes both BIGINT, from the rows
    src = open_source(str(csv))
    assert src.engine.declared == {"a": "BIGINT", "b": "BIGINT"}
    assert _all(src) == {"a": None, "b": None}
    assert _all(open_source(str(csv), sql="SELECT a, CAST(b AS INTEGER) AS c FROM data")) \
        == {"a": None, "c": None}
    js = tmp_path / "ints.json"
    js.write_text('[{"a": 1}, {"a": 2}]')
    assert open_source(str(js)).declared_resolution() is None
    with pytest.raises(SchemaError, match="unknown column"):
        open_source(str(csv)).declared_resolution("nope")


# -- SQLite ----------------------------------------------------------------------------------
SQLITE_DDL = {"i": "INTEGER", "big": "BIGINT", "d": "DECIMAL(10,2)", "n": "NUMERIC(8)",
              "bare": "NUMERIC", "f": "REAL", "b": "BOOLEAN", "s": "TEXT", "day": "DATE",
              "untyped": ""}
SQLITE_EXPECTED = {"i": 1.0, "big": 1.0, "d": 0.01, "n": 1.0, "bare": None, "f": None,
                   "b": None, "s": None, "day": None, "untyped": None}


def _sqlite(tmp_path, rows: list[tuple]) -> str:
    path = tmp_path / f"declared{len(rows)}.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (" + ", ".join(f"{k} {v}" for k, v in SQLITE_DDL.items())
                + ")")
    con.executemany(f"INSERT INTO t VALUES ({', '.join('?' * len(SQLITE_DDL))})", rows)
    con.commit()
    con.close()
    return str(path)


def test_sqlite_declared_types_not_stored_values(tmp_path):
    # 2.5 in the INTEGER columns stays a REAL (SQLite keeps it); whole numbers in the REAL
    # and untyped ones: an inference from the rows would say the opposite of the DDL
    rows = [(2.5, 0.5, 1.125, 3.75, 1.5, 1.0, 1, "7", "2020-01-01", 4)]
    for data in (_sqlite(tmp_path, rows), _sqlite(tmp_path, [])):
        src = open_source(data, table="t")
        _no_queries(src)
        assert _all(src) == SQLITE_EXPECTED
        with pytest.raises(SchemaError, match="unknown column"):
            src.declared_resolution("nope")


def test_sqlite_sql_declares_nothing(tmp_path):
    src = open_source(_sqlite(tmp_path, []), sql="SELECT i, d FROM t")
    assert _all(src) == {"i": None, "d": None}
    with pytest.raises(SchemaError, match="name a column"):
        src.declared_resolution()


# -- PostgreSQL ------------------------------------------------------------------------------
PG_DDL = {"i": "integer", "sm": "smallint", "bg": "bigint", "d": "numeric(10,2)",
          "n": "numeric(8)", "bare": "numeric", "r": "real", "f": "double precision",
          "b": "boolean", "s": "text", "day": "date"}
PG_EXPECTED = {"i": 1.0, "sm": 1.0, "bg": 1.0, "d": 0.01, "n": 1.0, "bare": None, "r": None,
               "f": None, "b": None, "s": None, "day": None}


@pytest.fixture(scope="module")
def pg_declared(postgres_url):
    import psycopg

    cols = ", ".join(f"{k} {v}" for k, v in PG_DDL.items())
    with psycopg.connect(postgres_url, autocommit=True) as con:
        con.execute("CREATE SCHEMA IF NOT EXISTS declared")
        for t in ("full_t", "empty_t"):
            con.execute(f"DROP TABLE IF EXISTS declared.{t}")
            con.execute(f"CREATE TABLE declared.{t} ({cols})")
        # whole numbers in the float and bare numeric columns: an inference would differ
        con.execute("INSERT INTO declared.full_t VALUES "
                    "(1, 2, 3, 4.00, 5, 6, 7, 8, true, 'x', '2020-01-01')")
    return postgres_url


def test_postgres_catalog_types(pg_declared):
    answers = []
    for t in ("full_t", "empty_t"):
        with open_source(pg_declared, table=f"declared.{t}") as src:
            _no_queries(src)
            answers.append(_all(src))
            with pytest.raises(SchemaError, match="unknown column"):
                src.declared_resolution("nope")
    assert answers == [PG_EXPECTED, PG_EXPECTED]


def test_postgres_query_result_types(pg_declared):
    # an expression over numeric loses its typmod (no declared scale); a CAST states one
    sql = ("SELECT i, d, d * 2 AS d2, CAST(f AS numeric(6,1)) AS c, i / 2 AS h, "
           "f FROM declared.full_t WHERE i > 100")
    with open_source(pg_declared, sql=sql) as src:
        assert _all(src) == {"i": 1.0, "d": 0.01, "d2": None, "c": 0.1, "h": 1.0, "f": None}


# -- Spark -----------------------------------------------------------------------------------
SPARK_SCHEMA = ("i int, l bigint, by tinyint, sh smallint, d decimal(10,2), f double, "
                "b boolean, s string")
SPARK_EXPECTED = {"i": 1.0, "l": 1.0, "by": 1.0, "sh": 1.0, "d": 0.01, "f": None, "b": None,
                  "s": None}


@pytest.mark.xdist_group("spark")
def test_spark_schema_and_query_types(spark):
    row = (1, 2, 3, 4, decimal.Decimal("5.00"), 6.0, True, "x")
    for rows in ([row], []):
        src = open_source(spark.createDataFrame(rows, SPARK_SCHEMA))
        assert src.backend == "spark"
        _no_queries(src)
        assert _all(src) == SPARK_EXPECTED
        with pytest.raises(SchemaError, match="unknown column"):
            src.declared_resolution("nope")
    df = spark.createDataFrame([row], SPARK_SCHEMA)
    sel = open_source(df, sql="SELECT i, d, i / 2 AS h, CAST(f AS DECIMAL(6,1)) AS c "
                              "FROM data WHERE b")
    assert _all(sel) == {"i": 1.0, "d": 0.01, "h": None, "c": 0.1}
