"""Messy real-world files: late type changes, NA spellings, BOMs, header-only
files, non-UTF-8 edge lists and sparse 64-bit vertex ids."""

from __future__ import annotations

import numpy as np
import pytest

from instancedp.errors import SchemaError
from instancedp.io import DataError, graph_input, read_column, read_edge_list


def test_csv_type_inferred_from_every_row_not_a_sample(tmp_path):
    # 30,000 integers, then a decimal: a sampled sniff says BIGINT and rounds 12.5.
    f = tmp_path / "late.csv"
    f.write_text("x\n" + "".join(f"{i % 90}\n" for i in range(30_000)) + "12.5\n")
    x = read_column(f)
    assert x.size == 30_001
    assert x[-1] == 12.5


@pytest.mark.parametrize("na", ["NA", "N/A", "NULL", "null", "None", "#N/A", ""])
def test_csv_missing_spellings_are_missing_values(tmp_path, na):
    f = tmp_path / "na.csv"
    f.write_text("x,y\n" + "".join(f"{i},a\n" for i in range(30_000)) + f"{na},b\n")
    with pytest.raises(DataError, match="1 missing"):
        read_column(f, "x")
    x = read_column(f, "x", drop_missing=True)
    assert x.size == 30_000


def test_csv_header_only_or_empty_file_is_an_empty_selection(tmp_path):
    hdr = tmp_path / "hdr.csv"
    hdr.write_text("x\n")
    with pytest.raises(DataError, match="selection is empty"):
        read_column(hdr)
    zero = tmp_path / "zero.csv"
    zero.write_text("")
    with pytest.raises(SchemaError, match=r"is empty \(0 bytes\): it has no header"):
        read_column(zero)


def test_csv_with_bom_and_quoted_column_names(tmp_path):
    f = tmp_path / "bom.csv"
    f.write_bytes('\ufeffPerson Age,"Income ""USD"""\n30,1.5\n40,2.5\n'.encode())
    np.testing.assert_array_equal(read_column(f, "Person Age"), [30, 40])
    np.testing.assert_array_equal(read_column(f, 'Income "USD"'), [1.5, 2.5])


def test_edge_list_with_bom_keeps_first_edge(tmp_path):
    f = tmp_path / "bom.edges"
    f.write_bytes(b"\xef\xbb\xbf1 2\n2 3\n3 1\n")
    np.testing.assert_array_equal(read_edge_list(f), [[1, 2], [2, 3], [3, 1]])


def test_edge_list_not_utf8_is_one_clear_error(tmp_path):
    f = tmp_path / "bin.edges"
    f.write_bytes(b"\xff\xfe1 2\n")
    with pytest.raises(DataError, match="not UTF-8"):
        read_edge_list(f)


def test_sparse_large_vertex_ids_are_renumbered(tmp_path):
    f = tmp_path / "big.edges"
    f.write_text("1 2\n2 3\n3 1\n100000000000 3\n")
    e = read_edge_list(f)
    assert e.max() == 3  # four distinct ids → 0..3, not an array of 10^11 vertices
    np.testing.assert_array_equal(e, [[0, 1], [1, 2], [2, 0], [3, 2]])
    arr = np.array([[1, 2], [2, 3], [3, 1], [10**11, 1]])
    assert graph_input(arr).max() == 3
    small = np.array([[0, 1], [1, 2]])
    assert graph_input(small) is small  # dense ids pass through untouched


def test_vertex_id_beyond_64_bits_is_one_clear_error(tmp_path):
    f = tmp_path / "huge.edges"
    f.write_text("1 2\n100000000000000000000 3\n")
    with pytest.raises(DataError, match="64 bits"):
        read_edge_list(f)


def test_pandas_arrow_backed_columns():
    import pandas as pd
    import pyarrow as pa

    dec = pd.Series([1.5, 2.25, None]).astype(pd.ArrowDtype(pa.decimal128(10, 2)))
    np.testing.assert_array_equal(
        read_column(pd.DataFrame({"x": dec}), "x", drop_missing=True), [1.5, 2.25]
    )
    ints = pd.Series([1, None, 3], dtype="int64[pyarrow]")
    with pytest.raises(DataError, match="1 missing"):
        read_column(ints)
    np.testing.assert_array_equal(read_column(ints, drop_missing=True), [1, 3])


def test_unknown_column_suggests_the_near_match(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("Person Age,flag\n30,1\n")
    with pytest.raises(DataError, match="did you mean 'Person Age'"):
        read_column(f, "person age")


def test_string_vertex_names_in_an_array():
    e = graph_input(np.array([["b", "a"], ["b", "c"], ["c", "a"]]))
    np.testing.assert_array_equal(e, [[1, 0], [1, 2], [2, 0]])


def test_latin1_csv_is_read(tmp_path):
    f = tmp_path / "latin1.csv"
    f.write_bytes(b"name;value\nM\xfcller;1\nJos\xe9;2\nA;3\n")
    np.testing.assert_array_equal(read_column(f, "value"), [1, 2, 3])
    x = read_column(f, sql="SELECT value FROM data WHERE name = 'Müller'")
    np.testing.assert_array_equal(x, [1])


def test_latin1_csv_named_in_sql_is_one_clear_error(tmp_path):
    f = tmp_path / "latin1.csv"
    f.write_bytes(b"name;value\nM\xfcller;1\nJos\xe9;2\nA;3\n")
    with pytest.raises(DataError, match="not UTF-8"):
        read_column(None, sql=f"SELECT value FROM '{f}'")


def test_sql_over_lists_mappings_and_arrays():
    np.testing.assert_array_equal(
        read_column([1, 2, None], sql="SELECT value FROM data", drop_missing=True), [1, 2]
    )
    np.testing.assert_array_equal(
        read_column({"x": [1, 2, 3]}, sql="SELECT x FROM data WHERE x > 1"), [2, 3]
    )
    np.testing.assert_array_equal(
        read_column(np.arange(3.0), sql="SELECT value FROM data"), [0, 1, 2]
    )
    with pytest.raises(DataError, match="cannot query data of type"):
        read_column(object(), sql="SELECT 1 FROM data")


def test_uci_data_file_with_question_mark_missing(tmp_path):
    f = tmp_path / "adult.data"
    f.write_text("39, State-gov, 77516, <=50K\n50, Self-emp, 83311, <=50K\n53, Private, ?, <=50K\n")
    with pytest.raises(DataError, match="1 missing"):
        read_column(f, "column2")
    np.testing.assert_array_equal(read_column(f, "column2", drop_missing=True), [77516, 83311])


def test_compressed_tsv_and_json(tmp_path):
    import gzip

    t = tmp_path / "d.tsv.gz"
    t.write_bytes(gzip.compress(b"a\tb\n1\t2\n3\t4\n"))
    np.testing.assert_array_equal(read_column(t, "b"), [2, 4])
    j = tmp_path / "d.json.gz"
    j.write_bytes(gzip.compress(b'[{"x": 1}, {"x": 2}]'))
    np.testing.assert_array_equal(read_column(j), [1, 2])


def test_pandas_object_column_of_python_numbers():
    import decimal

    import pandas as pd

    s = pd.Series([1, None, 3.5, pd.NA], dtype=object)
    with pytest.raises(DataError, match="2 missing"):
        read_column(s)
    np.testing.assert_array_equal(read_column(s, drop_missing=True), [1, 3.5])
    dec = pd.DataFrame({"x": [decimal.Decimal("1.5"), decimal.Decimal("2.5")]})
    np.testing.assert_array_equal(read_column(dec, "x"), [1.5, 2.5])
    with pytest.raises(DataError, match="not numeric"):
        read_column(pd.Series(["a", 1], dtype=object))


def test_list_of_pairs_with_sparse_ids_or_names():
    assert graph_input([(1, 2), (2, 3), (3, 1), (10**11, 1)]).max() == 3
    np.testing.assert_array_equal(graph_input([("a", "b"), ("b", "c")]), [[0, 1], [1, 2]])
