"""Group-by reads the rows as a single release of the same mode reads them.

Owner mode: NULL, NaN and ±inf are dropped (``drop_missing=True``) or refused
before the charge; analyst mode: the public input policy (NULL and NaN
dropped, ±inf clamped to the bounds; a count counts them).  On every engine:
the record of a table holding ±inf equals, byte for byte, the record of the
table with those rows removed (owner) or replaced by the bound they clamp to
(analyst).  NULL and NaN keys form no group anywhere.
"""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pandas as pd
import pytest

from instancedp import Session
from instancedp.backends import open_source
from instancedp.errors import DataError
from instancedp.groupby import group_release
from instancedp.privacy import PureDP
from instancedp.random import simulation

BOUNDS = (0.0, 100.0)
STATS = "median,mean,count,sum"
KEYS = [1.0, 2.0, 3.0, 4.0, 5.0]  # 5: a public key with no row


def _table() -> pd.DataFrame:
    """Key 1: spread rows, one +inf, one −inf, one NaN; key 2: only ±inf; key 3: its one
    finite row at the upper bound, beside +inf and NaN; key 4: one row at the lower
    bound and −inf; rows with a NaN key (finite and infinite values) form no group."""
    g = np.random.default_rng(9)
    rows = ([(1.0, v) for v in g.uniform(-20, 130, 30)] + [(1.0, math.inf), (1.0, -math.inf),
                                                            (1.0, math.nan)]
            + [(2.0, math.inf), (2.0, -math.inf), (2.0, math.inf)]
            + [(3.0, 100.0), (3.0, math.inf), (3.0, math.nan)]
            + [(4.0, 0.0), (4.0, -math.inf)]
            + [(math.nan, 50.0), (math.nan, math.inf)])
    return pd.DataFrame(rows, columns=["k", "v"])


def _owner_reference(df: pd.DataFrame) -> pd.DataFrame:
    """What the owner's read policy leaves: the rows with a finite value."""
    return df[np.isfinite(df.v)].reset_index(drop=True)


def _analyst_reference(df: pd.DataFrame) -> pd.DataFrame:
    """What the analyst's public policy reads: ±inf replaced by the bound it clamps to."""
    out = df.copy()
    out.loc[out.v == math.inf, "v"] = BOUNDS[1]
    out.loc[out.v == -math.inf, "v"] = BOUNDS[0]
    return out


def _record(data, analyst=False, keys=KEYS, stats=STATS, **kw) -> str:
    r = group_release(data, "k", "v", stats, epsilon=1.0, keys=keys, bounds=BOUNDS,
                      rng=simulation(3), analyst=analyst, **kw)
    return json.dumps(r.to_dict(), sort_keys=True, default=str)


def _to_sqlite(df: pd.DataFrame, path) -> str:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (k REAL, v REAL)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [
        (None if math.isnan(k) else k, None if math.isnan(v) else v)
        for k, v in zip(df.k, df.v, strict=True)])
    con.commit()
    con.close()
    return str(path)


@pytest.mark.parametrize("analyst", [False, True])
def test_frame_path_drops_or_clamps_infinities(analyst):
    """In memory (a pandas frame: the in-memory mechanisms per group)."""
    df = _table()
    ref = _analyst_reference(df) if analyst else _owner_reference(df)
    assert _record(df, analyst) == _record(ref, analyst)
    r = group_release(df, "k", "v", "count", epsilon=50.0, keys=KEYS, bounds=BOUNDS,
                      rng=simulation(0), analyst=analyst)
    stated = r.parameters["input_policy"]["count"]
    assert stated["infinite"] == ("count" if analyst else "drop")
    # the only-±inf group is empty for the owner, three rows for the analyst (at ε = 50)
    assert abs(r.values["count"][1] - (3 if analyst else 0)) < 1.0


@pytest.mark.parametrize("analyst", [False, True])
def test_every_file_and_sqlite_engine_follows_the_policy(tmp_path, analyst):
    df = _table()
    ref = _analyst_reference(df) if analyst else _owner_reference(df)
    want = _record(open_source(ref), analyst)  # the numpy backend's aggregates
    assert _record(open_source(df), analyst) == want
    df.to_parquet(tmp_path / "t.parquet")
    assert _record(tmp_path / "t.parquet", analyst) == want
    # CSV: keys are text, ±inf written as text DuckDB casts ("inf", "-inf")
    text_keys = [f"{k:g}" for k in KEYS]
    got = []
    for name, t in (("t", df), ("ref", ref)):
        t.assign(k=t.k.map(lambda k: "" if math.isnan(k) else f"{k:g}")).to_csv(
            tmp_path / f"{name}.csv", index=False)
        got.append(_record(tmp_path / f"{name}.csv", analyst, keys=text_keys))
    assert "inf" in (tmp_path / "t.csv").read_text() and got[0] == got[1]
    db = _to_sqlite(df, tmp_path / "t.db")
    assert _record(db, analyst, where={"table": "t"}) == want


def _to_postgres(url: str, name: str, df: pd.DataFrame) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP TABLE IF EXISTS {name}")
        con.execute(f"CREATE TABLE {name} (k double precision, v double precision)")
        with con.cursor() as cur:  # NaN keys and values stay NaN (not NULL)
            cur.executemany(f"INSERT INTO {name} VALUES (%s, %s)",
                            [(float(k), float(v)) for k, v in zip(df.k, df.v, strict=True)])


@pytest.mark.parametrize("analyst", [False, True])
def test_postgresql_follows_the_policy(postgres_url, analyst):
    df = _table()
    _to_postgres(postgres_url, "groups_missing", df)
    ref = _analyst_reference(df) if analyst else _owner_reference(df)
    got = _record(postgres_url, analyst, where={"table": "groups_missing"})
    assert got == _record(open_source(ref), analyst)


@pytest.mark.xdist_group("spark")
def test_spark_follows_the_policy(spark):
    df = _table()
    # NaN keys and values stay NaN (a double column), not NULL
    sdf = spark.createDataFrame([(float(k), float(v)) for k, v in zip(df.k, df.v, strict=True)],
                                "k double, v double")
    # the owner's policy (analyst mode's is the earlier path, in the record tests) on the
    # count and the fixed-point sum — each a Spark job; the policy lives in the one
    # subquery every primitive reads, checked with the medians on the other engines
    kw = dict(keys=[1.0, 2.0, 3.0], stats="mean,count")
    assert _record(sdf, **kw) == _record(open_source(_owner_reference(df)), **kw)


def test_nan_keys_form_no_group_under_selection(postgres_url):
    """Partition selection (keys=None) never selects a NaN key: a floating key column in
    PostgreSQL groups its NaNs together, and that group is dropped as in memory."""
    df = pd.DataFrame({"k": [math.nan] * 400 + [1.0] * 400, "v": [5.0] * 800})
    _to_postgres(postgres_url, "groups_nan_keys", df)
    kw = dict(epsilon=1.0, delta=1e-6, bounds=BOUNDS, rng=simulation(1))
    r = group_release(postgres_url, "k", "v", "count", where={"table": "groups_nan_keys"}, **kw)
    assert r.keys == [1.0]
    assert group_release(df, "k", "v", "count", **kw).keys == [1.0]


def test_owner_refuses_before_the_charge_with_the_single_release_message(tmp_path):
    df = _table()
    for data, kw in ((df, {}), (_to_sqlite(df, tmp_path / "r.db"), {"table": "t"})):
        s = Session(data, PureDP(5.0), **kw)
        with pytest.raises(DataError) as grouped:
            s.release_statistic("median", "v", by="k", keys=KEYS, epsilon=1.0, bounds=BOUNDS)
        assert s.history() == []
        with pytest.raises(DataError) as single:
            Session(data, PureDP(5.0), **kw).release_statistic("median", "v", epsilon=1.0,
                                                               bounds=BOUNDS)
        assert str(grouped.value) == str(single.value)  # NaN-key rows count: one column
        assert "has 10 missing (NULL) or non-finite value(s) (NaN/inf) out of 43" in str(
            single.value)
        r = s.release_statistic("median", "v", by="k", keys=KEYS, epsilon=1.0, bounds=BOUNDS,
                                drop_missing=True, rng=simulation(0))
        assert len(r.keys) == 5 and len(s.history()) == 1


def test_session_modes_pass_the_policy(tmp_path):
    """Session: owner with drop_missing=True drops ±inf, analyst mode clamps them —
    the records equal group_release's in each mode."""
    df = _table()
    path = tmp_path / "t.parquet"
    df.to_parquet(path)
    owner = Session(str(path), PureDP(5.0), ledger=tmp_path / "l.db", drop_missing=True)
    r = owner.release_statistic(STATS, "v", by="k", keys=KEYS, epsilon=1.0, bounds=BOUNDS,
                                rng=simulation(3))
    assert r.to_dict()["value"] == json.loads(_record(path))["value"]
    owner.close()
    with Session(str(path), ledger=tmp_path / "l.db", analyst=True) as s:
        r = s.release_statistic(STATS, "v", by="k", keys=KEYS, epsilon=1.0, bounds=BOUNDS,
                                rng=simulation(3))
        assert r.to_dict()["value"] == json.loads(_record(path, analyst=True))["value"]
