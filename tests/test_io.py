"""Data in: every source type gives the same column; every bad input one clear error."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from instancedp.errors import SchemaError
from instancedp.io import DataError, column_names, graph_input, read_column, read_edge_list


def _all_sources(values: list, tmp_path) -> dict:
    """The same column in every supported container (None = missing)."""
    arr = pa.array(values, type=pa.float64())
    csv = tmp_path / "d.csv"
    csv.write_text("x,label\n" + "".join(f"{'' if v is None else repr(v)},a\n" for v in values))
    pqf = tmp_path / "d.parquet"
    pq.write_table(pa.table({"x": arr}), pqf)
    return {
        "pandas": pd.DataFrame({"x": pd.array(values, dtype="Float64")}),
        "polars": pl.DataFrame({"x": values}, schema={"x": pl.Float64}),
        "arrow": pa.table({"x": arr}),
        "csv": csv,
        "parquet": pqf,
        "list": {"x": [np.nan if v is None else v for v in values]},
    }


@settings(max_examples=25)
@given(
    st.lists(
        st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False, width=32)),
        min_size=1,
        max_size=12,
    )
)
def test_every_source_reads_the_same_column(tmp_path_factory, values):
    tmp = tmp_path_factory.mktemp("src")
    expected = np.array([v for v in values if v is not None], dtype=np.float64)
    n_missing = sum(v is None for v in values)
    for name, src in _all_sources(values, tmp).items():
        if n_missing:
            with pytest.raises(DataError, match=f"{n_missing} missing"):
                read_column(src, "x")
        if expected.size == 0:
            with pytest.raises(DataError, match="empty"):
                read_column(src, "x", drop_missing=True)
            continue
        got = read_column(src, "x", drop_missing=True)
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_plain_arrays_series_and_integers():
    np.testing.assert_array_equal(read_column([3, 1, 2]), [3.0, 1.0, 2.0])
    np.testing.assert_array_equal(read_column(np.array([True, False])), [1.0, 0.0])
    np.testing.assert_array_equal(read_column(pd.Series([1, 2], name="a")), [1.0, 2.0])
    np.testing.assert_array_equal(read_column(pl.Series("a", [1, 2])), [1.0, 2.0])
    np.testing.assert_array_equal(read_column(pa.chunked_array([[1, 2], [3]])), [1.0, 2.0, 3.0])
    rec = np.array([(1, 2.5), (2, 3.5)], dtype=[("a", "i8"), ("b", "f8")])
    np.testing.assert_array_equal(read_column(rec, "b"), [2.5, 3.5])
    np.testing.assert_array_equal(read_column(np.array([[1.0], [2.0]])), [1.0, 2.0])
    with pytest.raises(DataError, match="1-D"):
        read_column(np.ones((2, 2)))
    with pytest.raises(DataError, match="inf"):
        read_column([1.0, np.inf])
    with pytest.raises(DataError, match="not numeric"):
        read_column(["a", "b"])
    with pytest.raises(DataError, match="no columns"):
        read_column([1.0], "x")


def test_file_errors(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("price,region\n1.5,EU\n2.5,US\n")
    assert column_names(f) == ["price", "region"]
    with pytest.raises(SchemaError, match=r"not found: check the path"):
        read_column(tmp_path / "missing.csv", "price")
    with pytest.raises(DataError, match=r"unknown column 'prise'.*the columns are price, region"):
        read_column(f, "prise")
    with pytest.raises(DataError, match=r"'region' is not numeric"):
        read_column(f, "region")
    with pytest.raises(DataError, match="choose one with column=NAME"):
        read_column(f)
    with pytest.raises(DataError, match="cannot tell the format"):
        (tmp_path / "t.xyz").write_text("a\n1\n")
        read_column(tmp_path / "t.xyz", "a")
    with pytest.raises(SchemaError, match="directory"):
        read_column(tmp_path, "a")
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 this is not really parquet")
    with pytest.raises(DataError, match="cannot read .*broken.parquet"):
        read_column(broken, "a")


def test_sql(tmp_path):
    f = tmp_path / "sales.parquet"
    pq.write_table(pa.table({"price": [1.0, 2.0, 4.0], "region": ["EU", "US", "EU"]}), f)
    got = read_column(None, sql=f"SELECT price FROM '{f}' WHERE region = 'EU'")
    np.testing.assert_array_equal(got, [1.0, 4.0])
    got = read_column(f, sql="SELECT price * 2 AS p FROM data WHERE region = 'US'")
    np.testing.assert_array_equal(got, [4.0])
    df = pd.DataFrame({"v": [5, 6, 7]})
    np.testing.assert_array_equal(read_column(df, sql="SELECT v FROM data WHERE v > 5"), [6, 7])
    with pytest.raises(SchemaError, match="SQL error: Parser Error"):
        read_column(None, sql="SELEC price FROM x")
    with pytest.raises(SchemaError, match="SQL error"):
        read_column(None, sql="SELECT * FROM 'no_such_file.parquet'")
    with pytest.raises(DataError, match="selection is empty"):
        read_column(f, sql="SELECT price FROM data WHERE region = 'XX'")
    with pytest.raises(DataError, match="2 columns"):
        read_column(f, sql="SELECT price, region FROM data")
    with pytest.raises(DataError, match="NULL"):
        read_column(None, sql="SELECT CAST(NULL AS DOUBLE) AS x UNION ALL SELECT 1.0")


def test_edge_lists(tmp_path):
    f = tmp_path / "e.txt"
    f.write_text("# comment\nsource,target\n0,1\n1 2\n\n2\t0 7.5\n")
    np.testing.assert_array_equal(read_edge_list(f), [[0, 1], [1, 2], [2, 0]])
    g = tmp_path / "names.csv"
    g.write_text("alice bob\nbob carol\n")
    np.testing.assert_array_equal(read_edge_list(g), [[0, 1], [1, 2]])
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1\n2\n")
    with pytest.raises(DataError, match="line 2"):
        read_edge_list(bad)
    (tmp_path / "empty.txt").write_text("# nothing\n")
    with pytest.raises(DataError, match="no edges"):
        read_edge_list(tmp_path / "empty.txt")
    arr = np.array([[0, 1]])
    assert graph_input(arr) is arr
    np.testing.assert_array_equal(graph_input(str(f)), read_edge_list(f))
