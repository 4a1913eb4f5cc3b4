"""Same release record on every backend, analyst-mode rules, and the candidate quantile's law.

Records are compared as JSON bytes (sorted keys) after a seeded simulation
release of count, sum, mean, median and quantile on the same rows through
numpy (an opened in-memory Source), DuckDB (a Parquet file), SQLite,
PostgreSQL and Spark.  The expected record is the in-memory mechanism's own
``release`` on the array (not the code under test's output copied).
"""

from __future__ import annotations

import itertools
import json
import math
import sqlite3

import numpy as np
import pytest

from instancedp import Session
from instancedp.backends import open_source
from instancedp.errors import DataError, ParameterError
from instancedp.privacy import PureDP
from instancedp.random import simulation
from instancedp.sources import CandidateQuantile, out_of_core_mechanism

# rows with ties, values at and beyond the bounds, ±0, subnormal and huge magnitudes
ROWS = np.concatenate([
    np.random.default_rng(3).normal(40.0, 25.0, 60).round(2),
    [0.0, -0.0, 100.0, 100.0, -5.0, 250.0, 5e-324, 1e300, 37.5, 37.5],
    np.full(60, 12.5),  # 130 rows: the median's draw reads a window of ranks, not all
])
REQUESTS = [
    ("count", {}),
    ("sum", {"bounds": (0.0, 100.0)}),
    ("mean", {"bounds": (0.0, 100.0)}),
    ("median", {"bounds": (0.0, 100.0)}),
    ("quantile", {"bounds": (-10.0, 100.0), "quantile": 0.9, "resolution": 0.5}),
    # smooth sensitivity from the engine's sorted column, read by rank (SortedColumn)
    ("min", {"bounds": (0.0, 100.0)}),
    ("max", {"bounds": (0.0, 100.0)}),
    ("trimmed-mean", {"bounds": (0.0, 100.0), "trim": 0.2}),
]
#: tail quantiles under add/remove: the default's noisy count picks the bound-free
#: bracket here (n = 130 is far below the switch count at q = 0.95 and 0.99), projected
#: onto the bounds and, with a resolution, onto the grid
TAIL_REQUESTS = {
    "quantile-tail": ("quantile", {"bounds": (-10.0, 100.0), "quantile": 0.95}),
    "quantile-tail-grid": ("quantile", {"bounds": (-10.0, 100.0), "quantile": 0.99,
                                        "resolution": 0.5}),
}


def _labelled():
    yield from ((stat, stat, opts) for stat, opts in REQUESTS)
    yield from ((label, stat, opts) for label, (stat, opts) in TAIL_REQUESTS.items())


def _json(release) -> str:
    return json.dumps(release.to_dict(), sort_keys=True)


def _records(data, skip: tuple[str, ...] = (), **where) -> dict[str, str]:
    out = {}
    for label, stat, opts in _labelled():
        if label in skip:
            continue
        with Session(data, PureDP(10.0), **where) as s:
            out[label] = _json(
                s.release_statistic(stat, "v", epsilon=1.0, rng=simulation(11), **opts)
            )
    return out


@pytest.fixture(scope="module")
def expected() -> dict[str, str]:
    """Each mechanism's in-memory release on the array, same seed."""
    out = {}
    for label, stat, opts in _labelled():
        mech = out_of_core_mechanism(stat, 1.0, **opts)
        out[label] = _json(mech.release(ROWS, rng=simulation(11)))
    return out


def test_the_tail_requests_take_the_bracket(expected):
    """The branch the tail requests exercise (else the test above would not reach it)."""
    for label in TAIL_REQUESTS:
        rec = json.loads(expected[label])
        assert rec["mechanism"] == "tail_choice_quantile"
        assert rec["parameters"]["released"] == {"choice": "bound_free_bracket"}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = tmp_path_factory.mktemp("records")
    pq.write_table(pa.table({"v": ROWS}), d / "t.parquet")
    con = sqlite3.connect(d / "t.db")
    con.execute("CREATE TABLE t (v REAL)")
    con.executemany("INSERT INTO t VALUES (?)", [(float(v),) for v in ROWS])
    con.commit()
    con.close()
    return d


def test_numpy_source_equals_the_mechanisms_own_release(expected):
    assert _records(open_source(_frame())) == expected


def _frame():
    import pandas as pd

    return pd.DataFrame({"v": ROWS})


def test_duckdb_parquet_and_sqlite_give_the_same_bytes(expected, files):
    assert _records(str(files / "t.parquet")) == expected
    assert _records(str(files / "t.db"), table="t") == expected
    assert _records(f"sqlite:///{files / 't.db'}", sql="SELECT v FROM t") == expected


def test_postgresql_gives_the_same_bytes(expected, postgres_url):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS records_t")
        con.execute("CREATE TABLE records_t (v double precision)")
        with con.cursor() as cur:
            cur.executemany("INSERT INTO records_t VALUES (%s)", [(float(v),) for v in ROWS])
    assert _records(postgres_url, table="records_t") == expected


@pytest.mark.xdist_group("spark")
def test_spark_frame_and_table_give_the_same_bytes(expected, spark):
    df = spark.createDataFrame([(float(v),) for v in ROWS], "v double")
    # Left out here for time (each Spark statement is a job): min and max read the sorted
    # column as the trimmed mean does (kept: both windows and the sum between them); sum
    # and mean the count-and-sum aggregate test_spark_backend compares with the reference;
    # the median (23 statements on these rows) draws from count and order_window, which
    # test_spark_backend compares bit for bit on adversarial columns, and its staged draw
    # on Spark gives the in-memory record there (a million rows); the same draw on these
    # rows is checked on DuckDB, SQLite and PostgreSQL above.
    skip = ("min", "max", "sum", "mean", "median")
    got = _records(df, skip=skip)
    assert got == {k: v for k, v in expected.items() if k not in skip}
    df.createOrReplaceTempView("records_t")
    with Session("records_t", PureDP(1.0), spark=spark) as s:  # a table name: one release
        r = s.release_statistic("count", "v", epsilon=1.0, rng=simulation(11))
    assert _json(r) == expected["count"]
    flags = [1.0, 0.0, 1.0, -0.0, 1.0]  # the ratio's two counts from the flag histogram
    want = out_of_core_mechanism("ratio", 1.0).release(np.array(flags), rng=simulation(11))
    with Session(spark.createDataFrame([(v,) for v in flags], "v double"), PureDP(1.0)) as s:
        r = s.release_statistic("ratio", "v", epsilon=1.0, rng=simulation(11))
    assert _json(r) == _json(want)


# -- min, max and the trimmed mean on adversarial columns ---------------------------------

ADVERSARIAL = {
    "empty": [],
    "one": [3.0],
    "two": [0.0, 100.0],
    "all equal": [7.0] * 40,
    "at the bounds": [0.0] * 15 + [100.0] * 15,
    "ties at the trim ranks": [1.0] * 5 + [2.0] * 10 + [3.0] * 5,
    "huge spread": [-1e300, 1e-300, 5e-324, 1e300, 3.0, -0.0],
    # ranks 401 and 1600 are far apart: two windows, and the sum between them
    "wide": np.random.default_rng(4).normal(50.0, 30.0, 2000).round(3).tolist(),
}
SORTED_REQUESTS = [("min", {}), ("max", {}), ("trimmed-mean", {"trim": 0.2})]


def _sorted_records(data, neighbours, **where) -> dict:
    out = {}
    for stat, opts in SORTED_REQUESTS:
        with Session(data, PureDP(10.0), neighbours=neighbours, **where) as s:
            try:
                r = s.release_statistic(stat, "v", epsilon=1.0, bounds=(0.0, 100.0),
                                        rng=simulation(7), **opts)
                out[stat] = _json(r)
            except DataError as exc:  # owner mode: the empty table is refused everywhere
                out[stat] = f"DataError {float(s.spent.epsilon)}"
                assert "empty" in str(exc)
    return out


@pytest.mark.parametrize("neighbours", ["add_remove", "substitution"])
@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_sorted_statistics_match_the_in_memory_recipe(tmp_path, name, neighbours):
    """The in-memory recipe's mechanism on the whole array, the in-memory Session, and
    DuckDB/SQLite (the sorted column read by rank) give the same bytes for min, max and
    the trimmed mean."""
    import pandas as pd

    from instancedp.recipes import build_mechanism

    rows = ADVERSARIAL[name]
    frame = pd.DataFrame({"v": np.array(rows, dtype=np.float64)})
    if rows:
        want = {}
        for stat, opts in SORTED_REQUESTS:
            n = len(rows) if neighbours == "substitution" and stat == "trimmed-mean" else None
            mech = build_mechanism(stat, 1.0, bounds=(0.0, 100.0), neighbours=neighbours,
                                   n=n, **opts)
            want[stat] = _json(mech.release(np.array(rows), rng=simulation(7)))
    else:  # the owner's read policy refuses an empty selection on every engine, uncharged
        want = {stat: "DataError 0.0" for stat, _ in SORTED_REQUESTS}
    assert _sorted_records(frame, neighbours) == want
    _sqlite(tmp_path / "t.db", rows)
    assert _sorted_records(str(tmp_path / "t.db"), neighbours, table="t") == want
    if name in ("ties at the trim ranks", "wide"):  # DuckDB over the frame
        duck = open_source(frame, sql="SELECT v FROM data")
        assert duck.backend == "duckdb"
        assert _sorted_records(duck, neighbours) == want


@pytest.mark.parametrize("epsilon", [1.0, 0.5])
def test_substitution_quantiles_follow_the_in_memory_rule(tmp_path, epsilon):
    """Under substitution too the default quantile is the exponential mechanism (n public,
    read by a count, but choosing nothing); the engines give the in-memory record."""
    import pandas as pd

    rows = ADVERSARIAL["wide"]
    _sqlite(tmp_path / "t.db", rows)
    recs = []
    for data, where in ((pd.DataFrame({"v": rows}), {}), (str(tmp_path / "t.db"), {"table": "t"})):
        with Session(data, PureDP(10.0), neighbours="substitution", **where) as s:
            r = s.release_statistic("quantile", "v", epsilon=epsilon, bounds=(0.0, 100.0),
                                    quantile=0.9, rng=simulation(5))
            recs.append(_json(r))
    assert recs[0] == recs[1]
    assert json.loads(recs[0])["mechanism"] == "exponential_quantile"


def test_substitution_mean_is_laplace_on_the_exact_mean_everywhere(tmp_path):
    import pandas as pd

    rows = ADVERSARIAL["huge spread"] + [100.0, 0.25]
    _sqlite(tmp_path / "t.db", rows)
    recs = []
    for data, where in ((pd.DataFrame({"v": rows}), {}), (str(tmp_path / "t.db"), {"table": "t"})):
        with Session(data, PureDP(10.0), neighbours="substitution", **where) as s:
            r = s.release_statistic("mean", "v", epsilon=1.0, bounds=(0.0, 100.0),
                                    rng=simulation(5))
            recs.append(_json(r))
    assert recs[0] == recs[1]
    assert json.loads(recs[0])["parameters"]["query_parameters"]["n"] == len(rows)


# -- analyst mode on a backend ---------------------------------------------------------


def _owner_ledger(path):
    Session([0.0], PureDP(5.0), ledger=path, dataset_id="d").close()


def _sqlite(path, values):
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (v REAL)")
    con.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
    con.commit()
    con.close()


@pytest.mark.parametrize("stat,opts", REQUESTS)
def test_analyst_neighbours_differ_only_in_the_value(tmp_path, stat, opts):
    """A row entering the table (or a NULL, or an infinite value) changes nothing but the value."""
    ledger = tmp_path / "l.db"
    _owner_ledger(ledger)
    base = [1.0, 2.0, 50.0, 99.0]
    records = []
    for i, extra in enumerate([[], [100.0], [None], [math.inf], [-1e300]]):
        db = tmp_path / f"n{i}.db"
        _sqlite(db, base + extra)
        with Session(str(db), ledger=ledger, dataset_id="d", analyst=True, table="t") as s:
            r = s.release_statistic(stat, "v", epsilon=0.1, rng=simulation(1), **opts)
        d = r.to_dict()
        d.pop("value")
        assert d["parameters"]["input_policy"]["missing"] == "drop"
        records.append(json.dumps(d, sort_keys=True))
    assert len(set(records)) == 1


def test_analyst_empty_table_releases_and_is_charged(tmp_path):
    ledger = tmp_path / "l.db"
    _owner_ledger(ledger)
    _sqlite(tmp_path / "e.db", [])
    with Session(str(tmp_path / "e.db"), ledger=ledger, dataset_id="d", analyst=True,
                 table="t") as s:
        for stat, opts in REQUESTS:
            assert s.release_statistic(stat, "v", epsilon=0.1, **opts).value is not None
        assert float(s.spent.epsilon) == pytest.approx(0.1 * len(REQUESTS))


def test_public_refusals_charge_nothing(tmp_path, files):
    with Session(str(files / "t.db"), PureDP(1.0), table="t") as s:
        with pytest.raises(ParameterError, match="not available out of core") as e:
            s.release_statistic("quantiles", "v", epsilon=0.1, bounds=(0, 1),
                                quantiles=[0.25, 0.75])
        assert e.value.parameter == "statistic"
        with pytest.raises(ParameterError, match="not available out of core") as e:
            s.release_statistic("min", "v", epsilon=0.1, bounds=(0, 1), mechanism="ptr",
                                delta=1e-6, ptr_bound=1.0)
        assert e.value.parameter == "mechanism"
        with pytest.raises(ParameterError) as e:
            s.release_statistic("median", "v", epsilon=0.1, bounds=(0, 1), mechanism="smooth")
        assert e.value.parameter == "mechanism"
        with pytest.raises(ParameterError) as e:
            s.release_statistic("median", "v", epsilon=0.1, bounds=(0, 1), resolution=1e-9)
        assert e.value.parameter == "resolution"
        with pytest.raises(Exception, match="unknown column"):
            s.release_statistic("count", "w", epsilon=0.1)
        assert float(s.spent.epsilon) == 0.0
    with pytest.raises(ParameterError) as e:
        Session(str(files / "t.parquet"), PureDP(1.0), table="t")
    assert e.value.parameter == "table"


def test_owner_mode_refuses_nulls_unless_dropped(tmp_path):
    _sqlite(tmp_path / "m.db", [1.0, None, 3.0])
    with Session(str(tmp_path / "m.db"), PureDP(1.0), table="t") as s:
        with pytest.raises(DataError, match="missing"):
            s.release_statistic("count", "v", epsilon=0.1)
        assert float(s.spent.epsilon) == 0.0
        r = s.release_statistic("count", "v", epsilon=0.1, drop_missing=True, rng=simulation(2))
    # noise of the same seed around 2 (the two non-missing rows)
    ref = out_of_core_mechanism("count", 0.1).release([1.0, 3.0], rng=simulation(2))
    assert r.value == ref.value


# -- the candidate quantile's guarantee, by its exact law --------------------------------


@pytest.mark.parametrize("neighbours", ["add_remove", "substitution"])
@pytest.mark.parametrize("q", [0.5, 0.9])
def test_candidate_quantile_is_epsilon_dp_on_every_neighbour(neighbours, q):
    """Max privacy loss over all neighbouring tables of ≤ 3 rows from a 4-value domain."""
    from instancedp.recipes import build_query

    eps = 0.7
    query = build_query("quantile", bounds=(0.0, 3.0), quantile=q, neighbours=neighbours)
    mech = CandidateQuantile(query, eps, resolution=1.0)
    domain = [0.0, 1.2, 1.6, 3.0]  # 1.6 rounds up, 1.2 down: both enter cells

    def law(rows):
        atoms = mech.output_distribution(np.array(rows)).atoms
        return np.array([atoms[c] for c in mech.candidates.tolist()])

    worst = 0.0
    for n in range(0, 4):
        for rows in itertools.product(domain, repeat=n):
            nbrs = []
            if neighbours == "add_remove":
                nbrs = [rows + (v,) for v in domain] if n < 3 else []
            elif n:
                nbrs = [rows[:-1] + (v,) for v in domain]
            p = law(list(rows))
            for other in nbrs:
                r = law(list(other))
                worst = max(worst, float(np.max(np.abs(np.log(p) - np.log(r)))))
    assert worst <= eps * (1 + 1e-12)
    assert worst > 0.3 * eps  # neighbours do move the law: the check is not vacuous


def test_candidate_grid_is_public_and_covers_the_bounds():
    from instancedp.recipes import build_query

    query = build_query("median", bounds=(-1e6, 1e6))
    m = CandidateQuantile(query, 1.0)
    c = m.candidates
    assert c[0] == -1e6 and c[-1] == 1e6 and np.all(np.diff(c) > 0)
    assert m.parameters()["candidates"] == {"kind": "log_chart", "cells": 4096,
                                            "log_scale": 200.0, "count": c.size}
    # relative spacing away from 0 is small: the log chart's promise
    far = c[c > 1e3]
    assert np.max(np.diff(far) / far[:-1]) < 0.01


# -- the CLI ----------------------------------------------------------------------------


def test_cli_table_and_url_give_the_sessions_record(files, expected):
    from cli_support import cli

    common = ["--column", "v", "--epsilon", "1", "--owner", "--seed", "11", "--json"]
    for stat, opts in [*REQUESTS[:4], REQUESTS[-1]]:  # … and the trimmed mean
        flags = ["--statistic", stat] + (
            ["--bounds", *map(str, opts["bounds"])] if "bounds" in opts else []) + (
            ["--trim", str(opts["trim"])] if "trim" in opts else [])
        by_table = cli("release", str(files / "t.db"), "--table", "t", *flags, *common)
        by_url = cli("release", f"sqlite:///{files / 't.db'}", "--sql", "SELECT v FROM t",
                     *flags, *common)
        by_parquet = cli("release", str(files / "t.parquet"), *flags, *common)
        want = json.loads(expected[stat])
        for r in (by_table, by_url, by_parquet):
            assert r.returncode == 0, r.stderr
            got = json.loads(r.stdout)
            assert {k: got[k] for k in want} == want


def test_cli_database_flags_are_checked_before_anything_is_read(files, tmp_path):
    from cli_support import cli

    r = cli("release", str(files / "t.db"), "--column", "v", "--epsilon", "1", "--owner",
            "--statistic", "count")
    assert r.returncode == 2 and "--table" in r.stderr
    r = cli("release", str(files / "t.parquet"), "--table", "t", "--epsilon", "1", "--owner",
            "--statistic", "count")
    assert r.returncode == 2 and "--table applies" in r.stderr
