"""The grid release out of core: one histogram on the grid points' exact cells.

A median or quantile on a public grid (a resolution given, or the column's declared
integer or decimal type) reads the rows per grid point only.  Out of core the engine
computes them as a histogram on :func:`~instancedp.mechanisms.quantile.grid_edges`,
whose cells must be exactly the in-memory rounding's (:func:`grid_index`) so that the
draws, and the record, are the in-memory release's bit for bit.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from instancedp.backends import open_source
from instancedp.backends.numpy import histogram
from instancedp.errors import ParameterError
from instancedp.mechanisms.quantile import (
    ExponentialQuantile,
    grid_count,
    grid_edges,
    grid_index,
)
from instancedp.privacy import PureDP
from instancedp.queries.order import Quantile
from instancedp.random import simulation
from instancedp.sources import (
    MAX_CANDIDATES,
    CandidateQuantile,
    grid_not_served,
    out_of_core_mechanism,
    release_from_source,
)

GRIDS = [
    (0.0, 10.0, 1.0),
    (0.5, 100.5, 1.0),  # integer rows sit exactly on the cells' edges (rint: half to even)
    (-3.3, 7.1, 0.01),
    (0.0, 1.5, 1.0),
    (-1e6, 1e6, 37.0),
    (1e15, 1e15 + 1000.0, 0.5),
    (-2.5, 2.5, 0.5),
    (0.0, 1.0, 0.1),
    (3.0, 3.5, 1.0),  # one grid point
    (-1e-300, 1e-300, 1e-302),  # tiny magnitudes
]


def _adversarial(lo: float, hi: float, r: float, k: int) -> np.ndarray:
    """Grid points, cell edges and their float neighbours, the bounds, random rows."""
    g = lo + np.arange(k) * r
    m = lo + (np.arange(k + 1) - 0.5) * r
    pts = np.concatenate([g, m, np.nextafter(m, np.inf), np.nextafter(m, -np.inf),
                          np.random.default_rng(0).uniform(lo, hi, 500), [lo, hi, -0.0]])
    return np.clip(pts, lo, hi)


@pytest.mark.parametrize("lo,hi,r", GRIDS)
def test_grid_edges_cut_exactly_the_grid_rounding(lo, hi, r):
    k = grid_count(lo, hi, r)
    edges = grid_edges(lo, hi, r, k)
    assert edges is not None and edges.size == k + 1
    x = _adversarial(lo, hi, r, k)
    expected = np.bincount(grid_index(x, lo, r, k), minlength=k)
    np.testing.assert_array_equal(histogram(x, edges), expected)
    # the clamping of rows beyond the bounds is the histogram's too
    far = np.array([lo - 1e300, hi + 1e300, -np.inf, np.inf])
    np.testing.assert_array_equal(
        histogram(far, edges),
        np.bincount(grid_index(np.clip(far, lo, hi), lo, r, k), minlength=k))


def test_a_resolution_below_the_float_spacing_is_not_served():
    lo, hi = 1e17, 1e17 + 100.0  # floats are 16 apart here: most points no float's nearest
    assert grid_edges(lo, hi, 1.0, grid_count(lo, hi, 1.0)) is None
    assert "floating-point spacing" in grid_not_served(lo, hi, 1.0)
    # a resolution of the floats' own spacing: the last point's cell is {upper} alone
    assert grid_edges(-5e-324, 5e-324, 5e-324, 3) is None
    assert "more than" in grid_not_served(0.0, float(MAX_CANDIDATES), 1.0)
    assert grid_not_served(0.0, float(MAX_CANDIDATES - 1), 1.0) is None


TABLES = {
    "empty": [],
    "one": [3.0],
    "two": [0.0, 10.0],
    "all equal": [4.0] * 9,
    "at and beyond the bounds": [-50.0, 0.0, 0.0, 10.0, 10.0, 1e300, -0.0, 5e-324],
    "ties and halves": [1.5, 2.5, 2.5, 3.0, 3.0, 3.0, 7.25, 9.5],
}


@pytest.mark.parametrize("base", ["grid", "log-grid"])
@pytest.mark.parametrize("sampler", ["permute-and-flip", "exponential"])
@pytest.mark.parametrize("neighbours", ["add_remove", "substitution"])
@pytest.mark.parametrize("name", sorted(TABLES))
def test_the_counts_give_the_in_memory_draws(base, sampler, neighbours, name):
    x = np.array(TABLES[name], dtype=np.float64)
    mech = ExponentialQuantile(Quantile(0.7, 0.0, 10.0, neighbours=neighbours), 0.9,
                               base=base, resolution=0.5, sampler=sampler)
    src = open_source(x)
    for seed in range(3):
        mine = mech.release(x, rng=simulation(seed)).to_dict()
        theirs = release_from_source(mech, src, None, rng=simulation(seed)).to_dict()
        assert json.dumps(mine, sort_keys=True) == json.dumps(theirs, sort_keys=True)


def test_duckdb_reads_the_same_cells_as_memory(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(5)
    x = np.concatenate([rng.poisson(30, 300), [0, 0, 120, 500, -7]]).astype(np.int64)
    pq.write_table(pa.table({"v": x}), tmp_path / "t.parquet")
    mech = out_of_core_mechanism("median", 1.0, bounds=(0.0, 100.0), resolution=1.0)
    assert mech.base == "log-grid" and mech.sampler == "permute-and-flip"
    with open_source(str(tmp_path / "t.parquet")) as src:
        np.testing.assert_array_equal(src.histogram("v", mech.grid_edges()),
                                      histogram(x.astype(float), mech.grid_edges()))
        for seed in range(3):
            a = release_from_source(mech, src, "v", rng=simulation(seed)).to_dict()
            b = mech.release(x, rng=simulation(seed)).to_dict()
            assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_out_of_core_resolution_routing():
    # the in-memory recipe's mechanism on the grid, not the uniform candidate grid
    m = out_of_core_mechanism("quantile", 1.0, bounds=(0.0, 50.0), quantile=0.5,
                              resolution=0.25)
    assert isinstance(m, ExponentialQuantile) and m.base == "log-grid"
    # a tail quantile under add/remove: the tail choice, its bounded branch on the grid
    m = out_of_core_mechanism("quantile", 1.0, bounds=(0.0, 50.0), quantile=0.9,
                              resolution=0.25)
    assert m.name == "tail_choice_quantile" and m.bounded.base == "log-grid"
    m = out_of_core_mechanism("median", 1.0, bounds=(0.0, 50.0), resolution=1.0,
                              mechanism="exponential")
    assert isinstance(m, ExponentialQuantile) and m.base == "log-grid"
    m = out_of_core_mechanism("median", 1.0, bounds=(0.0, 50.0), resolution=1.0,
                              mechanism="candidate_quantile")
    assert isinstance(m, CandidateQuantile)
    with pytest.raises(ParameterError, match="more than") as e:
        out_of_core_mechanism("median", 1.0, bounds=(0.0, 1e6), resolution=1.0)
    assert e.value.parameter == "resolution"


# -- the Session: a declared integer type out of core --------------------------------------

INTS = np.concatenate([np.random.default_rng(8).poisson(20, 150), [0, 0, 100, 250, -3, 20, 20]])


def _one(data, **kw) -> dict:
    from instancedp import Session
    from instancedp.privacy import PureDP

    opts = {"bounds": (0.0, 100.0), **kw.pop("opts", {})}
    if isinstance(data, np.ndarray):  # in memory: a frame with the column, its dtype kept
        import pandas as pd

        data = pd.DataFrame({"v": data})
    budget = None if kw.get("analyst") else PureDP(5.0)
    with Session(data, budget, **kw) as s:
        return s.release_statistic("median", "v", epsilon=1.0, rng=simulation(4),
                                   **opts).to_dict()


def _sqlite_ints(path, values, declared="INTEGER"):
    import sqlite3

    con = sqlite3.connect(path)
    con.execute(f"CREATE TABLE t (v {declared})")
    con.executemany("INSERT INTO t VALUES (?)", [(None if v is None else int(v),)
                                                 for v in values])
    con.commit()
    con.close()


def test_a_declared_integer_column_gives_the_in_memory_record_everywhere(tmp_path):
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"v": INTS}), tmp_path / "t.parquet")
    _sqlite_ints(tmp_path / "t.db", INTS)
    want = _one(INTS)
    assert want["parameters"]["base"] == "log-grid" and want["parameters"]["resolution"] == 1.0
    assert _one(str(tmp_path / "t.parquet")) == want  # DuckDB: one histogram
    assert _one(str(tmp_path / "t.db"), table="t") == want  # the DDL declares INTEGER
    # a CSV declares nothing (its types are inferred from the rows): the log base with atoms
    pd.DataFrame({"v": INTS}).to_csv(tmp_path / "t.csv", index=False)
    assert _one(str(tmp_path / "t.csv"))["parameters"]["base"] == "log-atoms"
    # a float column, a named mechanism and a given resolution keep their own rules
    pq.write_table(pa.table({"v": INTS.astype(float)}), tmp_path / "f.parquet")
    assert _one(str(tmp_path / "f.parquet"))["parameters"]["base"] == "log-atoms"
    named = _one(str(tmp_path / "t.parquet"), opts={"mechanism": "exponential"})
    assert named["parameters"]["base"] == "log-atoms"
    given = _one(str(tmp_path / "t.parquet"), opts={"resolution": 2.0})
    assert given == _one(INTS, opts={"resolution": 2.0})


def test_a_declared_grid_past_the_histograms_limit_keeps_the_continuous_base(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"v": INTS}), tmp_path / "t.parquet")
    wide = {"bounds": (0.0, float(MAX_CANDIDATES))}  # 65,537 grid points
    assert _one(str(tmp_path / "t.parquet"), opts=wide)["parameters"]["base"] == "log-atoms"
    assert _one(INTS, opts=wide)["parameters"]["base"] == "log-grid"  # in memory: any size


def test_analyst_neighbours_on_a_declared_grid_differ_only_in_the_value(tmp_path):
    """A row entering the table (or a NULL, or a value past the bounds) changes nothing in
    the record but the value: the grid comes from the DDL and the bounds."""
    from instancedp import Session

    ledger = tmp_path / "l.db"
    Session([0.0], PureDP(5.0), ledger=ledger, dataset_id="d").close()
    base = [1, 2, 50, 99]
    records = []
    for i, extra in enumerate([[], [100], [None], [10**12], []]):
        db = tmp_path / f"n{i}.db"
        _sqlite_ints(db, base + extra if i < 4 else [])
        d = _one(str(db), ledger=ledger, dataset_id="d", analyst=True, table="t")
        d.pop("value")
        assert d["parameters"]["base"] == "log-grid"
        records.append(json.dumps(d, sort_keys=True))
    assert len(set(records)) == 1


def test_postgresql_declared_integer_gives_the_in_memory_record(postgres_url):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS grid_t")
        con.execute("CREATE TABLE grid_t (v integer)")
        with con.cursor() as cur:
            cur.executemany("INSERT INTO grid_t VALUES (%s)", [(int(v),) for v in INTS])
    assert _one(postgres_url, table="grid_t") == _one(INTS)


@pytest.mark.xdist_group("spark")
def test_spark_declared_integer_gives_the_in_memory_record(spark):
    df = spark.createDataFrame([(int(v),) for v in INTS], "v long")
    assert _one(df) == _one(INTS)


@pytest.mark.parametrize("ways", [2, 64])
def test_last_double_finds_the_boundary_of_a_monotone_predicate(ways):
    from instancedp.noise.exact import key_floats, last_double

    c = np.array([-1e308, -3.5, -5e-324, 0.0, 5e-324, 1e-300, 1.0, 2.5, 7e15, 1e308])
    lo, hi = -1.7976931348623157e308, 1.7976931348623157e308
    got = key_floats(last_double(lambda t: t < c[:, None], lo, hi, c.size, ways=ways))
    np.testing.assert_array_equal(got, np.nextafter(c, -np.inf))
    # true everywhere: the upper end itself
    top = key_floats(last_double(lambda t: t <= hi, lo, hi, 2, ways=ways))
    np.testing.assert_array_equal(top, [hi, hi])


def test_the_cli_names_the_declared_grid(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from cli_support import cli

    pq.write_table(pa.table({"v": INTS}), tmp_path / "t.parquet")
    args = ("release", str(tmp_path / "t.parquet"), "--column", "v", "--statistic", "median",
            "--bounds", "0", "100", "--epsilon", "1", "--owner", "--seed", "4")
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    assert "grid        lower + k·1 (public), permute-and-flip" in r.stdout
    assert float(r.stdout.split()[1]) == round(float(r.stdout.split()[1]))  # on the grid
    r = cli(*args, "--json")
    assert json.loads(r.stdout)["parameters"]["base"] == "log-grid"
