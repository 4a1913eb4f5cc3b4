"""describe() out of core: a file is read through DuckDB's aggregates (one
histogram_stats pass per column, rank windows of the recursive quantiles from
its rank index) and gives the same record bytes as the same rows in memory;
the rank reader returns exactly the sorted clamped values at the ranks asked."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from instancedp import Session
from instancedp.backends import numpy as ref
from instancedp.backends import open_source
from instancedp.privacy import PureDP
from instancedp.random import simulation

RNG = np.random.default_rng(21)
N = 60
# adversarial columns: all missing, one row, all equal, huge and subnormal magnitudes,
# an integer column, values at the bounds, a row at ±inf (missing)
COLUMNS = {
    "normal": RNG.normal(50, 10, N),
    "missing": np.full(N, np.nan),
    "one_row": np.r_[[7.5], np.full(N - 1, np.nan)],
    "equal": np.full(N, 3.0),
    "huge": np.r_[RNG.choice([-1.7e308, 1e300, 1.7e308, 0.0], N - 2), [np.inf, -np.inf]],
    "tiny": RNG.choice([5e-324, 1e-310, -5e-324, -0.0], N),
    "ints": RNG.integers(0, 5, N),
    "at_bounds": RNG.choice([0.0, 100.0], N),
}
BOUNDS = {"normal": (0.0, 100.0), "equal": (0.0, 10.0), "ints": (0.0, 4.0),
          "at_bounds": (0.0, 100.0), "missing": (-1.0, 1.0)}


def _record(data, bounds, columns, ci=0.9, part=None):
    s = Session(data, PureDP(100.0))
    r = s.describe(8.0, columns=columns, bounds=bounds, rng=simulation(5), ci=ci)
    s.close()
    rec = r.to_dict()
    return json.dumps(rec if part is None else rec[part], sort_keys=True)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("desc")
    df = pd.DataFrame(COLUMNS)
    df.to_parquet(d / "t.parquet")
    # the CSV spells ±inf as text and leaves NaN empty: both missing under the cast policy
    df.to_csv(d / "t.csv", index=False, float_format="%.17g")
    return df, d / "t.parquet", d / "t.csv"


@pytest.mark.parametrize("columns,bounded,ci", [
    (["normal", "at_bounds"], True, 0.9), (["one_row", "huge"], False, 0.9),
    (["equal", "ints", "missing"], True, None), (["tiny", "missing", "normal"], False, None),
], ids=["bounds", "bound_free", "bounds_no_ci", "bound_free_no_ci"])
def test_a_parquet_record_equals_the_in_memory_record(files, columns, bounded, ci):
    df, parquet, _ = files
    bounds = {c: BOUNDS[c] for c in columns} if bounded else None
    assert _record(parquet, bounds, columns, ci) == _record(df, bounds, columns, ci)


def test_a_csv_gives_the_in_memory_rows(files):
    """A CSV's record states its column rule (the cast policy); its rows are the same."""
    df, _, csv = files
    cols, bounds = ["normal", "huge", "tiny", "ints"], {c: BOUNDS[c] for c in ("normal", "ints")}
    assert (_record(csv, bounds, cols, None, "statistics")
            == _record(df, bounds, cols, None, "statistics"))


def test_one_charge_of_exactly_epsilon_on_a_file(files):
    _, parquet, _ = files
    s = Session(parquet, PureDP(10.0))
    s.describe(2.5, columns=["normal"], bounds={"normal": BOUNDS["normal"]},
               rng=simulation(1), ci=None)
    hist = s.history()
    assert len(hist) == 1 and hist[0]["mechanism"] == "describe"
    assert float(s.spent.epsilon) == 2.5


@pytest.mark.parametrize("bounded", [True, False], ids=["bounds", "bound-free"])
def test_the_file_is_never_read_into_memory(files, monkeypatch, bounded):
    """With or without bounds every column is released from aggregates (the bound-free
    p5/p95 through the engine's histograms): the in-memory reader is never called."""
    import instancedp.io as io

    _, parquet, _ = files

    def refuse(self):
        raise AssertionError("the column was read into memory")

    monkeypatch.setattr(io.AnalystQuery, "read", refuse)
    bounds = {c: BOUNDS[c] for c in ("normal", "ints")} if bounded else None
    Session(parquet, PureDP(10.0)).describe(
        1.0, columns=["normal", "ints"], bounds=bounds, rng=simulation(2))


# -- the rank reader --------------------------------------------------------------------


def _check_reader(src, col, x, lo, hi, seed, reads=12):
    from instancedp.describe import IndexedColumn
    from instancedp.intervals import tree_leaves, tree_plan

    idx = IndexedColumn(src, col, lo, hi)
    xs = np.sort(ref.clamp(ref.apply_missing(x), lo, hi))
    assert idx.n == xs.size
    if np.isfinite(hi - lo):
        assert idx.total == ref.count_and_sum(xs, lo, hi, True)[1]
    else:  # no fixed-point grid: the mean is not released from this range
        assert idx.total is None
    gen = np.random.default_rng(seed)
    for _ in range(reads):
        a = int(gen.integers(0, xs.size + 1))
        b = int(gen.integers(a, xs.size + 1))
        got = idx.read(a, b)
        assert got.tobytes() == xs[a:b].tobytes(), (a, b)
    plan = tree_plan(lo, hi, neighbours="add_remove", epsilon=1.0,
                     chart_scale=(hi / 2 - lo / 2) * 2e-4, branching=32, depth=2)
    assert np.array_equal(idx.leaves(plan), tree_leaves(xs, plan))


@pytest.mark.parametrize("fetch,rounds", [(1 << 18, 3), (40, 3), (3, 0)],
                         ids=["cells", "split_cells", "order_window"])
def test_rank_reader_reads_the_sorted_clamped_values(monkeypatch, fetch, rounds, tmp_path):
    """Every read path (fetched cells, cells all equal, cells split when they hold more
    than FETCH_ROWS rows, the engine's order_window when splitting is not allowed)
    returns the reference's bytes, on DuckDB and on SQLite."""
    import sqlite3

    import instancedp.describe as desc

    monkeypatch.setattr(desc, "FETCH_ROWS", fetch)
    monkeypatch.setattr(desc, "REFINE_ROUNDS", rounds)
    splits = []
    real = desc.IndexedColumn._refine
    monkeypatch.setattr(desc.IndexedColumn, "_refine",
                        lambda self, need: splits.append(real(self, need)) or splits[-1])
    gen = np.random.default_rng(3)
    x = np.r_[gen.normal(0, 1, 300), np.full(40, 2.0), [-0.0, 1e308, -1e308, np.nan]]
    pd.DataFrame({"v": x}).to_parquet(tmp_path / "v.parquet")
    con = sqlite3.connect(tmp_path / "v.db")
    con.execute("CREATE TABLE t (v REAL)")
    con.executemany("INSERT INTO t VALUES (?)", [(None if np.isnan(v) else float(v),)
                                                  for v in x])
    con.commit()
    con.close()
    sources = [open_source(tmp_path / "v.parquet")]
    if fetch == 1 << 18:  # SQLite through the same reads (its histogram is another SQL)
        sources.append(open_source(tmp_path / "v.db", table="t"))
    for src in sources:
        ranges = [(-3.0, 3.0), (-1.0, 2.0), (-1.7e308, 1.7e308)][: 3 if fetch > 40 else 2]
        for i, (lo, hi) in enumerate(ranges):
            _check_reader(src, "v", x, lo, hi, i, reads=12 if fetch > 40 else 4)
        src.close()
    assert any(splits) == (fetch == 40)  # the split path ran exactly where it should


def test_histogram_stats_match_the_reference(tmp_path):
    x = np.r_[np.random.default_rng(4).lognormal(0, 2, 200), [0.0, -0.0, 5.0, np.nan]]
    pd.DataFrame({"v": x}).to_parquet(tmp_path / "h.parquet")
    src = open_source(tmp_path / "h.parquet")
    for edges in (np.linspace(0, 5, 17), [0.0, 5.0], np.geomspace(1e-3, 1e3, 40)):
        got, want = src.histogram_stats("v", edges), ref.histogram_stats(x, edges)
        for g, w in zip(got[:3], want[:3], strict=True):
            assert np.array_equal(g, w, equal_nan=True)
        assert got[3] == want[3] == src.count_and_sum("v", edges[0], edges[-1], shift=True)[1]
        assert np.array_equal(got[0], src.histogram("v", edges))
    assert src.histogram_stats("v", [-1.7e308, 1.7e308])[3] is None  # the range overflows
    src.close()


def test_recursive_quantiles_from_rank_reads_equal_the_array_draw(monkeypatch):
    """RecursiveQuantiles.draw_from (rank reads) and release (an array) are one code
    path; with a window of a few pieces the lazy sampler reads further edges."""
    import instancedp.mechanisms.quantile as qm
    from instancedp.mechanisms.recursive_quantiles import RecursiveQuantiles, SortedRows
    from instancedp.queries.quantiles import Quantiles

    x = np.sort(np.clip(np.random.default_rng(6).normal(5, 2, 200), 0, 10))
    mech = RecursiveQuantiles(Quantiles((0.1, 0.3, 0.5, 0.7, 0.9), 0.0, 10.0), 3.0)

    class Counting(SortedRows):
        reads = 0

        def read(self, start, stop):
            Counting.reads += 1
            return super().read(start, stop)

    for exponent in (40.0, 1.5):
        monkeypatch.setattr(qm, "WINDOW_EXPONENT", exponent)
        for seed in range(3):
            a = mech.release(x, rng=simulation(seed)).value
            b = mech.draw_from(x.size, Counting(x), simulation(seed))
            assert np.asarray(a).tobytes() == b.tobytes()
    assert Counting.reads > 0


def test_the_lazy_samplers_float_path_is_the_ball_paths_draw(monkeypatch):
    """sample_piece_lazy certifies the inversion with floats first: the same piece, the
    same point and the same later random bytes as the ball path, seed by seed (runs of
    unread pieces on both sides, ties, wide bounds, slopes from flat to steep)."""
    import instancedp.noise.exact as ex

    gen = np.random.default_rng(0)
    certified = cases = 0
    real = ex._lazy_float_inversion

    def spy(*args):
        nonlocal certified
        p = real(*args)
        certified += p is not None
        return p

    monkeypatch.setattr(ex, "_lazy_float_inversion", spy)
    for trial in range(150):
        m = int(gen.integers(3, 300))
        e = np.sort(np.r_[gen.normal(0, 1, m - 2), [0.0, 0.0], [-1e3, 1e3]][: m + 1])
        a, c = gen.uniform(0.001, 3), int(gen.integers(0, m))
        s, t = max(0, c - int(gen.integers(1, 40))), min(m, c + int(gen.integers(1, 40)))
        if t - s < 2:
            continue
        out = []
        for flag in (True, False):
            monkeypatch.setattr(ex, "LAZY_FLOAT_PATH", flag)
            src = simulation(trial)
            i, y = ex.sample_piece_lazy(lambda k, a=a, c=c: float(-a * abs(k - c)),
                                        lambda k, e=e: float(e[k]), m, s, e[s:t + 1], src)
            out.append((i, y, src.random_bytes(8)))
        assert out[0] == out[1], trial
        cases += 1
    assert certified > cases / 2  # narrow windows: many land in the runs
