"""Group-by on every backend: grouped primitives bit-identical to numpy, records equal.

Each adversarial column of ``backend_cases`` is one group (its name the key),
so every engine's GROUP BY answers are checked, key by key, against the
numpy reference on that group's rows.
"""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pandas as pd
import pytest
from backend_cases import CASES, EDGES, rows

from instancedp import Session
from instancedp.backends import open_source
from instancedp.backends.grouped import MemoryGroups, SQLGroups
from instancedp.errors import ParameterError
from instancedp.groupby import group_release, open_groups, plan, run_aggregates
from instancedp.privacy import PureDP
from instancedp.random import simulation
from instancedp.sources import release_from_source

KEYS = [name for name in CASES if name != "empty"]
#: (key, value) rows: every case a group, plus a row without a key (it forms no group)
ROWS = [(name, v) for name in KEYS for v in rows(name)] + [(None, 1.0)]
SUMS = [(-2.0, 2.0, False), (-1e300, 1e300, False), (0.1, 0.3, True), (-1e-310, 1e-310, False)]
#: edges whose cells share one label force the unrolled binary search
HISTS = [EDGES[0], EDGES[1], EDGES[3], [0.0, 1e-9, 2e-9, 1.0]]
#: (lo, hi, a, b, shift) of the grouped range sums: interior, a value's rank (a = b), a
#: bound, the whole range, subnormal cuts
RANGES = [(-2.0, 2.0, -0.5, 0.5, True), (-1.0, 1.0, 0.0, 0.0, False),
          (0.0, 100.0, 0.0, 100.0, True), (-1e300, 1e300, -1e300, 1e300, False),
          (-1e-300, 1e-300, -5e-324, 5e-324, True)]
#: (lo, hi, spans) of the grouped rank windows: q·n ± h, h small enough to cut the
#: 200-row group, large enough to hold every rank of the small ones
WINDOWS = [(-2.0, 2.0, [(0.5, 3)]), (-1e300, 1e300, [(0.1, 1), (0.9, 2)]),
           (0.0, 1.0, [(0.5, 100)]), (-1.7976931348623157e308, 1.7976931348623157e308,
                                      [(0.25, 2)])]  # a range that overflows: one label


def _probe(groups, light: bool = False) -> dict:
    """Every grouped primitive; ``light``: one of each path (Spark: each is a job)."""
    out: dict = {"rows": groups.rows(), "count": groups.count()}
    if not light:
        out["missing"] = groups.missing()
    for lo, hi, shift in SUMS[2:3] if light else SUMS:
        out[("sum", lo, hi, shift)] = groups.count_and_sum(lo, hi, shift)
    for i, e in enumerate(HISTS):
        if not light or i == 1:
            out[("hist", i)] = {k: v.tolist() for k, v in groups.histogram(e).items()}
    for i, (lo, hi, spans) in enumerate(WINDOWS):
        if not light or i == 1:
            got = groups.order_windows(lo, hi, spans)
            out[("windows", i)] = {k: {r: np.float64(x).tobytes() for r, x in w.items()}
                                   for k, w in got.items()}
    for key in ("random",) if light else KEYS:  # a sorted statistic's rank reads
        for i, (lo, hi, a, b, shift) in enumerate(RANGES[:2] if light else RANGES):
            out[("range_sum", key, i)] = groups.group_range_sum(key, lo, hi, a, b, shift)
    n = out["count"]["random"]
    # one group's further reads (Spark's run in the staged record test below)
    for start, stop in () if light else ((-2, 3), (95, 105), (198, 203)):
        out[("group_window", start, stop)] = groups.group_window(
            "random", -1.0, 1.0, start, stop, n).tobytes()
    return out


@pytest.fixture(scope="module")
def expected() -> dict:
    keys = np.array([k for k, _ in ROWS], dtype=object)
    vals = np.array([np.nan if v is None else v for _, v in ROWS])
    return _probe(MemoryGroups(keys, vals))


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"k": [k for k, _ in ROWS],
                         "v": [np.nan if v is None else v for _, v in ROWS]})


def test_reference_groups_hold_each_case(expected):
    assert set(expected["rows"]) == set(KEYS)  # the key-less row forms no group
    assert expected["rows"]["missing"] == 5 and expected["count"]["missing"] == 2
    assert expected["missing"] == 3 + 2 + 3  # missing, all_missing (NULL, NaN), ±inf
    assert expected[("hist", 0)]["at_bounds"] == [2, 0, 1, 2]
    # windows: ranks within q·n ± h of each group's own count, values clamped, −0.0 → 0.0
    assert sorted(expected[("windows", 0)]["random"]) == list(range(97, 104))
    assert sorted(expected[("windows", 1)]["two"]) == [0, 1]
    assert expected[("windows", 0)]["signed_zero"][1] == np.float64(0.0).tobytes()
    assert expected[("windows", 0)]["infinite"][2] == np.float64(2.0).tobytes()
    assert "all_missing" not in expected[("windows", 0)]


def test_parquet_groups_are_bit_identical(tmp_path, expected):
    f = tmp_path / "g.parquet"
    _frame().to_parquet(f)
    assert _probe(open_groups(f, "k", "v", kind="file")) == expected


def test_csv_groups_are_bit_identical(tmp_path, expected):
    f = tmp_path / "g.csv"
    f.write_text("k,v\n" + "".join(
        f"{'' if k is None else k},{'' if v is None else repr(v)}\n" for k, v in ROWS))
    assert _probe(open_groups(f, "k", "v", kind="file")) == expected


def _sqlite(tmp_path, table_rows=ROWS) -> str:
    path = tmp_path / "g.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (k TEXT, v REAL)")
    con.executemany("INSERT INTO t VALUES (?, ?)", table_rows)
    con.commit()
    con.close()
    return str(path)


def test_sqlite_groups_are_bit_identical(tmp_path, expected):
    g = open_groups(_sqlite(tmp_path), "k", "v", kind="sqlite", where={"table": "t"})
    assert isinstance(g, SQLGroups)
    assert _probe(g) == expected


def test_postgresql_groups_are_bit_identical(postgres_url, expected):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS groups_t")
        con.execute("CREATE TABLE groups_t (k text, v double precision)")
        with con.cursor() as cur:
            cur.executemany("INSERT INTO groups_t VALUES (%s, %s)", ROWS)
    g = open_groups(postgres_url, "k", "v", kind="postgresql", where={"table": "groups_t"})
    assert _probe(g) == expected


@pytest.mark.xdist_group("spark")
def test_spark_groups_are_bit_identical(spark, expected):
    df = spark.createDataFrame(ROWS, "k string, v double")
    got = _probe(open_groups(df, "k", "v", kind="spark"), light=True)
    assert got == {k: v for k, v in expected.items() if k in got}


# -- records: every backend, and one single release per group ------------------------------
STATS = "median,p90,mean,count,sum"
KW = dict(epsilon=1.0, bounds=(0.0, 100.0))


def _numeric_table() -> pd.DataFrame:
    g = np.random.default_rng(3)
    k = np.r_[np.zeros(40), np.ones(12), np.full(2, 2.0), [5.0]]
    v = np.r_[g.uniform(-10, 120, 40), g.uniform(40, 60, 12), [100.0, 0.0], [np.nan]]
    return pd.DataFrame({"k": k, "v": v})


def _record(data, keys=(0.0, 1.0, 2.0, 7.0), stats=STATS, **kw) -> str:
    r = group_release(data, "k", "v", stats, keys=None if keys is None else list(keys),
                      rng=simulation(11), **{**KW, **kw})
    return json.dumps(r.to_dict(), sort_keys=True, default=str)


def test_every_sql_engine_gives_the_numpy_backends_record(tmp_path):
    df = _numeric_table()
    want = _record(open_source(df))  # the numpy backend (in-memory primitives)
    df.to_parquet(tmp_path / "t.parquet")
    assert _record(tmp_path / "t.parquet") == want
    _to_sqlite(df, tmp_path / "t.db")
    assert _record(str(tmp_path / "t.db"), where={"table": "t"}) == want
    # unknown keys: the selection's noisy counts come from the grouped counts
    sel = _record(open_source(df), keys=None, delta=1e-3)
    assert _record(str(tmp_path / "t.db"), keys=None, delta=1e-3, where={"table": "t"}) == sel


def test_group_records_equal_one_single_release_per_group(tmp_path):
    df = _numeric_table()
    keys = [0.0, 1.0, 2.0, 7.0]  # 7 is empty: answered all the same
    r = group_release(open_source(df), "k", "v", STATS, keys=keys, rng=simulation(5), **KW)
    p = plan(STATS, keys=keys, aggregates=True, **KW)
    src = simulation(5)
    for i, key in enumerate(keys):
        single = open_source(df.loc[df.k == key, "v"].to_numpy())
        for label, m in p["statistics"]:
            assert r.values[label][i] == release_from_source(m, single, None, src).value
    assert r.guarantee == PureDP(1.0)
    # the single release's default: the staged exact exponential quantile (log base)
    assert r.parameters["mechanisms"]["median"] == "exponential_quantile"
    assert r.parameters["per_group"]["median"]["base"] == "log-atoms"


def _pairs(df: pd.DataFrame) -> list[tuple]:
    """(k, v) rows of a numeric table, NaN as NULL (what a database or Spark holds)."""
    return [(float(a), None if math.isnan(b) else float(b))
            for a, b in zip(df.k, df.v, strict=True)]


def _to_sqlite(df: pd.DataFrame, path) -> None:
    """The frame as table t of a SQLite file."""
    con = sqlite3.connect(path)
    df.to_sql("t", con, index=False)
    con.close()


def _to_postgres(url: str, name: str, df: pd.DataFrame) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP TABLE IF EXISTS {name}")
        con.execute(f"CREATE TABLE {name} (k double precision, v double precision)")
        with con.cursor() as cur:
            cur.executemany(f"INSERT INTO {name} VALUES (%s, %s)", _pairs(df))


# -- the staged median per group: one window statement, further reads where asked ----------
STAGED = dict(epsilon=8.0, bounds=(0.0, 100.0))  # per statistic ε = 4: windows of ±10/±19 ranks


def _staged_table() -> pd.DataFrame:
    """Key 0: 150 spread rows (the window decides the draw); key 1: 120 tied rows (every
    window piece has length 0, so the exact inversion reads further order statistics);
    key 2: one row; key 3 is a public key with no row."""
    g = np.random.default_rng(8)
    k = np.r_[np.zeros(150), np.ones(120), [2.0]]
    v = np.r_[g.normal(40, 15, 150), np.full(118, 50.0), [np.nan, 1e308], [100.0]]
    return pd.DataFrame({"k": k, "v": v})


STAGED_KEYS = [0.0, 1.0, 2.0, 3.0]


def _staged(data, **kw):
    return group_release(data, "k", "v", "median,p90", keys=STAGED_KEYS,
                         rng=simulation(4), **{**STAGED, **kw})


@pytest.fixture
def further_reads(monkeypatch) -> list:
    """The keys of every per-group further read (SQLGroups.group_window)."""
    calls: list = []
    orig = SQLGroups.group_window

    def spy(self, key, *args):
        calls.append(key)
        return orig(self, key, *args)

    monkeypatch.setattr(SQLGroups, "group_window", spy)
    return calls


def test_staged_group_medians_equal_single_releases():
    df = _staged_table()
    keys = STAGED_KEYS
    r = _staged(open_source(df))
    p = plan("median,p90", keys=keys, aggregates=True, **STAGED)
    src = simulation(4)
    for i, key in enumerate(keys):
        single = open_source(df.loc[df.k == key, "v"].to_numpy())
        for label, m in p["statistics"]:
            assert r.values[label][i] == release_from_source(m, single, None, src).value
    assert set(r.parameters["mechanisms"].values()) == {"exponential_quantile"}


def test_staged_group_medians_on_files_and_sqlite(tmp_path, further_reads):
    df = _staged_table()
    want = _staged(open_source(df)).to_dict()
    df.to_parquet(tmp_path / "s.parquet")
    assert _staged(tmp_path / "s.parquet").to_dict() == want
    # only the tied group reads further order statistics
    assert further_reads and {str(k) for k in further_reads} == {"1.0"}
    _to_sqlite(df, tmp_path / "s.db")
    assert _staged(str(tmp_path / "s.db"), where={"table": "t"}).to_dict() == want


def test_staged_group_medians_on_postgresql(postgres_url, further_reads):

    df = _staged_table()
    _to_postgres(postgres_url, "groups_s", df)
    got = _staged(postgres_url, where={"table": "groups_s"}).to_dict()
    assert got == _staged(open_source(df)).to_dict() and {str(k) for k in further_reads} == {"1.0"}


@pytest.mark.xdist_group("spark")
def test_staged_group_medians_on_spark(spark, further_reads):
    df = _staged_table()
    sdf = spark.createDataFrame(_pairs(df), "k double, v double")
    assert _staged(sdf).to_dict() == _staged(open_source(df)).to_dict()
    assert {str(k) for k in further_reads} == {"1.0"}


# -- the min and the max per group: the sorted column read by rank, one key at a time ----
SORTED_KW = dict(epsilon=2.0, bounds=(0.0, 100.0))


def _sorted_table() -> pd.DataFrame:
    """Key 0: 200 spread rows (values past both bounds); key 1: 60 tied rows and a NaN;
    key 2: one row at the lower bound; key 4: two rows at the upper bound and +inf;
    key 3 is a public key with no row."""
    g = np.random.default_rng(12)
    k = np.r_[np.zeros(200), np.ones(61), [2.0], np.full(3, 4.0)]
    v = np.r_[g.normal(50, 30, 200), np.full(60, 25.0), [np.nan], [0.0], [100.0, 100.0,
                                                                       np.inf]]
    return pd.DataFrame({"k": k, "v": v})


SORTED_KEYS = [0.0, 1.0, 2.0, 3.0, 4.0]


def _sorted(data, **kw):
    return group_release(data, "k", "v", "min,max", keys=SORTED_KEYS, rng=simulation(6),
                         **{**SORTED_KW, **kw}).to_dict()


def test_group_min_max_equal_single_releases_on_every_engine(tmp_path, postgres_url):

    df = _sorted_table()
    r = group_release(open_source(df), "k", "v", "min,max", keys=SORTED_KEYS,
                      rng=simulation(6), **SORTED_KW)
    want = r.to_dict()
    p = plan("min,max", keys=SORTED_KEYS, aggregates=True, **SORTED_KW)
    src = simulation(6)
    for i, key in enumerate(SORTED_KEYS):
        single = open_source(df.loc[df.k == key, "v"].to_numpy())
        for label, m in p["statistics"]:
            # the owner's read policy, as a single release reads (NULL, NaN, ±inf dropped)
            got = release_from_source(m, single, None, src, missing="finite").value
            assert r.values[label][i] == got
    assert set(r.parameters["mechanisms"].values()) == {"smooth_sensitivity"}
    df.to_parquet(tmp_path / "m.parquet")
    assert _sorted(tmp_path / "m.parquet") == want
    _to_sqlite(df, tmp_path / "m.db")
    assert _sorted(str(tmp_path / "m.db"), where={"table": "t"}) == want
    _to_postgres(postgres_url, "groups_m", df)
    assert _sorted(postgres_url, where={"table": "groups_m"}) == want


@pytest.mark.xdist_group("spark")
def test_group_min_max_on_spark(spark):
    df = _sorted_table()
    sdf = spark.createDataFrame(_pairs(df), "k double, v double")
    assert _sorted(sdf) == _sorted(open_source(df))


def test_candidate_quantile_stays_available_by_name(tmp_path):
    df = _staged_table()
    df.to_parquet(tmp_path / "s.parquet")
    r = _staged(tmp_path / "s.parquet", mechanism="candidate_quantile")
    assert set(r.parameters["mechanisms"].values()) == {"candidate_quantile"}
    assert r.to_dict() == _staged(open_source(df), mechanism="candidate_quantile").to_dict()


def test_csv_keys_stay_text_and_equal_the_reference(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("zip,income\n01,10\n01,20\n02,30\n1,40\n02,NA\n")
    keys = ["01", "02", "1", "9"]
    r = group_release(f, "zip", "income", "median,count", epsilon=1.0, keys=keys,
                      bounds=(0.0, 100.0), rng=simulation(2))
    ref = MemoryGroups(np.array(["01", "01", "02", "1", "02"], dtype=object),
                       np.array([10, 20, 30, 40, np.nan]))
    p = plan("median,count", epsilon=1.0, keys=keys, bounds=(0.0, 100.0), aggregates=True)
    assert r.values == run_aggregates(p, ref, keys, simulation(2))["values"]
    assert r.keys == keys  # "01" and "1" are distinct groups (declared text)


def test_postgresql_record_equals_numpy(postgres_url):
    df = _numeric_table()
    _to_postgres(postgres_url, "groups_r", df)
    got = _record(postgres_url, where={"table": "groups_r"})
    assert got == _record(open_source(df))


@pytest.mark.xdist_group("spark")
def test_spark_record_equals_numpy(spark):
    df = _numeric_table()
    sdf = spark.createDataFrame(_pairs(df), "k double, v double")
    # the count and fixed-point sum paths (the staged median on Spark has its own test
    # above; the candidate grid's histogram is checked key by key)
    kw = dict(keys=[0.0, 1.0, 7.0], stats="mean,count")
    assert _record(sdf, **kw) == _record(open_source(df), **kw)


# -- neighbours, owner mode, refusals ------------------------------------------------------------
def test_neighbouring_files_differ_only_in_values_and_selected_keys(tmp_path):
    df = _numeric_table()
    moved = df.copy()
    moved.loc[0, "k"] = 1.0
    added = pd.concat([df, pd.DataFrame({"k": [9.0], "v": [50.0]})], ignore_index=True)
    removed = df.iloc[1:]
    out = []
    for i, t in enumerate([df, moved, added, removed]):
        t.to_parquet(tmp_path / f"{i}.parquet")
        r = group_release(tmp_path / f"{i}.parquet", "k", "v", "median,count",
                          keys=["0.0", "1.0", "9.0"], rng=simulation(1), **KW)
        out.append(r.to_dict())
    for o in out[1:]:
        assert o["parameters"] == out[0]["parameters"]
        assert o["guarantee"] == out[0]["guarantee"]
        assert [row["k"] for row in o["value"]] == ["0.0", "1.0", "9.0"]
    text = repr(out[0]["parameters"])
    assert "'n'" not in text and "group_size" not in text


def test_owner_mode_refuses_missing_values_before_the_charge(tmp_path):
    path = _sqlite(tmp_path, [("a", 1.0), ("a", None), ("b", math.inf)])
    s = Session(path, PureDP(1.0), table="t")
    with pytest.raises(Exception, match="missing"):
        s.release_statistic("count", "v", by="k", keys=["a", "b"], epsilon=0.5)
    assert s.history() == []
    r = s.release_statistic("count", "v", by="k", keys=["a", "b", "c"], epsilon=0.5,
                            drop_missing=True, rng=simulation(0))
    assert r.keys == ["a", "b", "c"] and len(s.history()) == 1


def test_database_refuses_what_the_aggregates_do_not_serve(tmp_path):
    path = _sqlite(tmp_path, [("a", 1.0)])
    for kw, param in ((dict(statistic="median", mechanism="smooth"), "mechanism"),
                      (dict(statistic="count", id_column="k"), "id_column")):
        with pytest.raises(ParameterError) as e:
            group_release(path, "k", "v", keys=["a"], epsilon=1.0, bounds=(0.0, 1.0),
                          where={"table": "t"}, **kw)
        assert e.value.parameter == param


def test_file_requests_the_aggregates_do_not_serve_read_the_file(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("g,v\na,1\na,3\nb,2\n")
    r = group_release(f, "g", "v", "median", epsilon=1.0, keys=["a", "b"], bounds=(0.0, 4.0),
                      ci=0.9, rng=simulation(0))
    assert len(r.keys) == 2 and r.intervals is not None


@pytest.mark.parametrize("n", [0, 1, 2])
def test_small_tables_in_the_engine_answer_every_public_key(tmp_path, n):
    path = _sqlite(tmp_path, [("a", 100.0), ("b", 0.0)][:n])
    r = group_release(path, "k", "v", "median,mean,count,sum", epsilon=1.0,
                      keys=["a", "b", "empty"], bounds=(0.0, 100.0), rng=simulation(0),
                      where={"table": "t"})
    for label, vals in r.values.items():
        assert len(vals) == 3 and all(np.isfinite(v) for v in vals), label
    sel = group_release(path, "k", "v", "count", epsilon=1.0, delta=1e-6, rng=simulation(0),
                        where={"table": "t"})
    assert sel.keys == []  # one row per key is far below the threshold (≈ 14)
