"""SQLite inputs through the stdlib driver: file forms, read-only, SQL over a table."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from backend_cases import as_array

from instancedp.backends import numpy as ref
from instancedp.backends import open_source


@pytest.fixture
def db(tmp_path):
    x = as_array("random")
    path = tmp_path / "people.db"
    con = sqlite3.connect(path)
    con.execute('CREATE TABLE "people table" (salary REAL, dept TEXT)')
    con.executemany('INSERT INTO "people table" VALUES (?, ?)',
                    [(float(v), "a" if i % 2 else "b") for i, v in enumerate(x)])
    con.commit()
    con.close()
    return path, x


@pytest.mark.parametrize("form", ["path", "url", "sqlite3_suffix"])
def test_every_way_of_naming_the_file(db, form, tmp_path):
    path, x = db
    if form == "url":
        data = f"sqlite:///{path}"
    elif form == "sqlite3_suffix":
        data = str(tmp_path / "copy.sqlite3")
        (tmp_path / "copy.sqlite3").write_bytes(path.read_bytes())
    else:
        data = str(path)
    src = open_source(data, table="people table")
    assert src.backend == "sqlite" and src.columns == ["salary", "dept"]
    assert src.count_and_sum("salary", -2, 2) == ref.count_and_sum(x, -2, 2)


def test_sql_over_a_table_and_read_only(db):
    path, x = db
    src = open_source(str(path), sql="SELECT salary FROM \"people table\" WHERE dept = 'a'")
    keep = x[np.arange(x.size) % 2 == 1]
    assert src.order_window("salary", -1, 1, 0, keep.size).tobytes() == \
        ref.order_window(keep, -1, 1, 0, keep.size).tobytes()
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        src.engine.execute('DELETE FROM "people table"', [])


def test_large_sums_stay_exact(tmp_path):
    """2^13 maximal terms: a single 64-bit SUM would overflow; the split sums do not."""
    path = tmp_path / "big.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (v REAL)")
    con.executemany("INSERT INTO t VALUES (?)", [(-2.0,)] * (1 << 13))
    con.commit()
    con.close()
    assert open_source(str(path), table="t").count_and_sum("v", -2, 2) == \
        (1 << 13, -((1 << 13) << 52))
