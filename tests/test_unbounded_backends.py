"""The bound-free quantile out of core: the same record bytes from an array, the
numpy source, DuckDB (Parquet), SQLite, PostgreSQL and Spark, on adversarial
columns (sizes 0–2, all equal, signed zeros, subnormal and huge values, ties,
a column crossing 0), for the median and q = 0.9.  The scan reads histograms at
the public grid's candidates, the exponential stage order statistics of the rows
clamped to the bracket: integers and doubles every engine computes exactly."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from backend_cases import CASES, as_array, parquet_file, rows, sqlite_file

from instancedp import Session
from instancedp.backends import open_source
from instancedp.mechanisms.unbounded import HistogramRankCounts, RankCounts
from instancedp.privacy import PureDP
from instancedp.random import simulation
from instancedp.sources import out_of_core_mechanism, release_from_source

# ±inf rows are refused in memory (owner mode) and dropped by the analyst policy
NAMES = sorted(set(CASES) - {"infinite"})


def _json(release) -> str:
    return json.dumps(release.to_dict(), sort_keys=True)


def _clean(name: str) -> np.ndarray:
    x = as_array(name)
    return x[~np.isnan(x)]


def _records(sources, q: float, seed: int) -> list[str]:
    stat, opts = ("median", {}) if q == 0.5 else ("quantile", {"quantile": q})
    mech = out_of_core_mechanism(stat, 0.5, **opts)
    return [_json(release_from_source(mech, src, col, simulation(seed))) for src, col in sources]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("q", [0.5, 0.9])
def test_duckdb_sqlite_and_numpy_give_the_in_memory_record(tmp_path, name, q):
    stat, opts = ("median", {}) if q == 0.5 else ("quantile", {"quantile": q})
    mech = out_of_core_mechanism(stat, 0.5, **opts)
    # the default rule: the scan-then-bracket release at every level
    assert mech.name == "unbounded_quantile"
    want = _json(mech.release(_clean(name), simulation(9)))
    with open_source(parquet_file(tmp_path, name)) as duck, \
            open_source(sqlite_file(tmp_path, name), table="t") as lite:
        assert duck.backend == "duckdb"
        got = _records([(open_source(as_array(name)), None), (duck, "v"), (lite, "v")], q, 9)
    assert got == [want] * 3


def test_histogram_counts_are_the_sorted_counts():
    x = np.sort(_clean("huge"))
    src = open_source(x)
    hist = HistogramRankCounts(lambda e: src.histogram(None, e), np.array([0.0, 3.0]))
    assert hist.n == x.size
    t = np.array([-np.inf, -1.7976931348623157e308, -1e308, -3.0, -0.0, 0.0, 5e-324, 3.0,
                  1e308, 1.7976931348623157e308, np.inf])
    assert hist.at_most(t).tolist() == RankCounts(x).at_most(t).tolist()


def test_session_on_parquet_releases_without_bounds(tmp_path):
    """A Parquet file goes through DuckDB; a CSV file is read into memory: same bytes."""
    x = np.round(np.random.default_rng(3).lognormal(4.0, 1.0, 300), 2)
    (tmp_path / "t.csv").write_text("v\n" + "\n".join(repr(float(v)) for v in x) + "\n")
    pd.DataFrame({"v": x}).to_parquet(tmp_path / "t.parquet")
    got = []
    for path in ("t.csv", "t.parquet"):
        with Session(str(tmp_path / path), PureDP(5.0)) as s:
            got.append([_json(s.release_statistic(stat, "v", epsilon=0.5, rng=simulation(4),
                                                  **opts))
                        for stat, opts in (("median", {}), ("quantile", {"quantile": 0.9}))])
    assert got[0] == got[1]
    for rec, name in zip((json.loads(r) for r in got[0]), ("unbounded_quantile",
                                                             "unbounded_quantile"), strict=True):
        assert rec["mechanism"] == name and rec["parameters"]["bounds"] is None


def test_postgresql_gives_the_in_memory_record(postgres_url):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as con:
        for name in ("random", "huge", "two"):
            con.execute(f"DROP TABLE IF EXISTS unb_{name}")
            con.execute(f"CREATE TABLE unb_{name} (v double precision)")
            with con.cursor() as cur:
                cur.executemany(f"INSERT INTO unb_{name} VALUES (%s)", [(v,) for v in rows(name)])
    for name in ("random", "huge", "two"):
        with open_source(postgres_url, table=f"unb_{name}") as pg:
            for q in (0.5, 0.9):
                assert _records([(pg, "v")], q, 5) == _records([(open_source(_clean(name)),
                                                                 None)], q, 5)


def test_spark_gives_the_in_memory_record(spark):
    df = spark.createDataFrame([(v,) for v in rows("random")], "v double")
    for q in (0.5, 0.9):
        assert _records([(open_source(df), "v")], q, 6) == _records(
            [(open_source(_clean("random")), None)], q, 6)


def test_out_of_core_refuses_bounds_for_the_bound_free_mechanism():
    from instancedp.errors import ParameterError

    with pytest.raises(ParameterError) as e:
        out_of_core_mechanism("median", 1.0, mechanism="unbounded_quantile", bounds=(0, 1))
    assert e.value.parameter == "bounds"
    for name in ("unbounded_quantile", "loglog_quantile"):  # by name: that mechanism
        assert out_of_core_mechanism("median", 1.0, mechanism=name).name == name
        with pytest.raises(ParameterError) as e:
            out_of_core_mechanism("median", 1.0, mechanism=name, bounds=(0, 1))
        assert e.value.parameter == "bounds"
