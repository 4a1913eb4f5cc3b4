"""Owner mode reads the same rows the same way on every engine.

The policy (docs/threat-model.md, "Owner mode"): NULL, NaN and ±inf rows are
refused with their count (``io.missing_error``) or, with ``drop_missing=True``,
dropped; an empty selection — an empty table, a WHERE that keeps no row, or
nothing left after dropping — is refused (``io.empty_error``); both before any
charge.  Each case below is released on every engine available in the tests and
must give the same outcome: the same record bytes for the same seed, or the same
error class and message, with nothing charged.  The expected outcome is stated
independently of the engines: an error message built from the case's own
counts, or the in-memory release on the case's finite rows.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from instancedp import PureDP, Session
from instancedp.backends import open_source
from instancedp.errors import DataError, ParameterError
from instancedp.io import empty_error, missing_error
from instancedp.random import simulation

INF, NAN = math.inf, math.nan
#: rows (None = NULL) and, for the cases that release, the finite rows they release on
ROWS: dict[str, list] = {
    "one": [3.0],
    "two_at_bounds": [0.0, 10.0],
    "infinite": [1.0, INF, 2.0, -INF],
    "missing": [1.0, NAN, None, 2.0],
    "all_missing": [None, NAN, INF],
    "empty": [],
}
OPTIONS = {"mean": {"bounds": (0.0, 10.0)}, "median": {"bounds": (0.0, 10.0)}, "count": {}}
WHERE_NONE = "SELECT v FROM {table} WHERE v > 100"  # keeps no row of [1, 2]


def expected(case: str, drop: bool, stat: str) -> tuple:
    """The outcome the policy prescribes, from the case's own counts."""
    rows = ROWS[case]
    finite = [v for v in rows if v is not None and math.isfinite(v)]
    bad = len(rows) - len(finite)
    if bad and not drop:
        return ("error", "DataError", str(missing_error("v", bad, len(rows))), "epsilon=0")
    if not finite:
        return ("error", "DataError", str(empty_error("v", bad)), "epsilon=0")
    return outcome(({"v": np.array(finite)}, {}), stat, drop=False)


def outcome(engine: tuple, stat: str, drop: bool, sql: str | None = None) -> tuple:
    """("release", record JSON, spent) or ("error", class, message, spent)."""
    data, kw = engine
    with Session(data, PureDP(100), **kw) as s:
        try:
            r = s.release_statistic(stat, "v", epsilon=1.0, rng=simulation(11), sql=sql,
                                    drop_missing=drop, **OPTIONS[stat])
        except (DataError, ParameterError) as exc:
            return ("error", type(exc).__name__, str(exc), s.spent.describe())
        return ("release", json.dumps(r.to_dict(), sort_keys=True), s.spent.describe())


# -- engines ------------------------------------------------------------------------------
def _floats(rows: list) -> np.ndarray:
    return np.array([NAN if v is None else v for v in rows], dtype=np.float64)


def numpy_columns(tmp_path, case, rows):
    return {"v": _floats(rows)}, {}


def pandas_frame(tmp_path, case, rows):
    return pd.DataFrame({"v": _floats(rows)}), {}


def memory_engine(tmp_path, case, rows):
    return open_source(pd.DataFrame({"v": _floats(rows)})), {}  # the numpy reference engine


def parquet_file(tmp_path, case, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / f"{case}.parquet"  # NULL and NaN stay distinct in Parquet
    pq.write_table(pa.table({"v": pa.array(rows, type=pa.float64())}), path)
    return str(path), {}


def csv_file(tmp_path, case, rows):
    path = tmp_path / f"{case}.csv"
    text = {None: ""}
    lines = [f"{text.get(v, repr(v)) if v is None or not math.isnan(v) else 'nan'},1"
             for v in rows]
    path.write_text("v,w\n" + "".join(line + "\n" for line in lines))
    return str(path), {}


def sqlite_table(tmp_path, case, rows):
    import sqlite3

    path = tmp_path / f"{case}.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (v REAL, w INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, 1)", [(v,) for v in rows])  # NaN → NULL
    con.commit()
    con.close()
    return str(path), {"table": "t"}


ENGINES = {"numpy": numpy_columns, "pandas": pandas_frame, "memory_engine": memory_engine,
           "parquet": parquet_file, "csv": csv_file, "sqlite": sqlite_table}


@pytest.mark.parametrize("stat", sorted(OPTIONS))
@pytest.mark.parametrize("drop", [False, True], ids=["strict", "drop_missing"])
@pytest.mark.parametrize("case", sorted(ROWS))
def test_every_engine_gives_the_policys_outcome(tmp_path, case, drop, stat):
    want = expected(case, drop, stat)
    got = {name: outcome(make(tmp_path, f"{name}_{case}", ROWS[case]), stat, drop)
           for name, make in ENGINES.items()}
    assert got == {name: want for name in ENGINES}


def test_the_expected_outcomes_are_the_policy():
    """The table above says what the policy is (so the comparison is not vacuous)."""
    assert expected("infinite", False, "mean")[2] == (
        "column 'v' has 2 missing (NULL) or non-finite value(s) (NaN/inf) out of 4: clean "
        "them or pass drop_missing=True")
    assert expected("all_missing", True, "count")[2].startswith(
        "the selection is empty after dropping 3 missing or non-finite value(s)")
    assert expected("empty", False, "median")[:2] == ("error", "DataError")
    released = expected("infinite", True, "count")
    assert released[0] == "release" and released[2] == "epsilon=1"
    assert released == expected("missing", True, "count")  # both release on [1, 2]


@pytest.mark.parametrize("stat", ["mean", "count"])
def test_a_where_that_keeps_no_row_is_refused_everywhere(tmp_path, stat):
    rows = [1.0, 2.0]
    engines = {
        "pandas": (pandas_frame(tmp_path, "w", rows), "data"),
        "parquet": (parquet_file(tmp_path, "w", rows), "data"),
        "csv": (csv_file(tmp_path, "w", rows), "data"),
        "sqlite": ((sqlite_table(tmp_path, "w", rows)[0], {}), "t"),
    }
    want = ("error", "DataError", str(empty_error("v")), "epsilon=0")
    for name, (engine, table) in engines.items():
        assert outcome(engine, stat, False, sql=WHERE_NONE.format(table=table)) == want, name


# -- PostgreSQL and Spark: a few releases each ------------------------------------------------
def test_postgresql_follows_the_policy(tmp_path, postgres_url):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as con:
        con.execute("CREATE SCHEMA IF NOT EXISTS owner_policy")
        for case, rows in ROWS.items():
            con.execute(f'DROP TABLE IF EXISTS owner_policy."{case}"')
            con.execute(f'CREATE TABLE owner_policy."{case}" (v double precision)')
            with con.cursor() as cur:
                cur.executemany(f'INSERT INTO owner_policy."{case}" VALUES (%s)',
                                [(v,) for v in rows])
    for case in ROWS:
        for drop in (False, True):
            engine = (postgres_url, {"table": f"owner_policy.{case}"})
            assert outcome(engine, "mean", drop) == expected(case, drop, "mean"), (case, drop)
    where = 'SELECT v FROM owner_policy."one" WHERE v > 100'
    assert outcome((postgres_url, {}), "count", True, sql=where) == (
        "error", "DataError", str(empty_error("v")), "epsilon=0")


def test_spark_follows_the_policy(spark):
    for case, drop in [("infinite", False), ("infinite", True), ("missing", True),
                       ("empty", False), ("one", False)]:
        df = spark.createDataFrame([(v,) for v in ROWS[case]], "v double")
        assert outcome((df, {}), "mean", drop) == expected(case, drop, "mean"), (case, drop)
