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


# -- a target among tied rows: the window around the run's two ends ---------------------


def _clamped_lognormal(n: int, seed: int) -> np.ndarray:
    # about 18 % of the rows above 4: clamped to the upper bound 4, one long run of ties
    return np.sort(np.random.default_rng(seed).lognormal(0.0, 1.5, n))


@pytest.mark.parametrize("case", ["clamped_top", "interior_ties", "clamped_bottom"])
def test_a_target_inside_a_run_of_ties_is_drawn_from_the_runs_two_ends(monkeypatch, case):
    """The target rank among rows equal to one value (clamped to a bound, or ties with
    continuous rows on both sides): PieceSet reads the pieces beyond the run's two
    ends and skips its middle.  Seed by seed the same piece as the full inversion,
    with no further read while drawing, and O(window + log n) values read in all
    (the window at the target alone would leave every weighted piece unread: the
    lazy draw then read them one order statistic at a time)."""
    import instancedp.mechanisms.quantile as qm
    from instancedp.mechanisms.quantile import ExponentialQuantile
    from instancedp.noise import exact
    from instancedp.queries.order import Quantile

    n = 3000
    x = _clamped_lognormal(n, 4)
    q, lo, hi = 0.95, 0.0, 4.0
    if case == "interior_ties":  # 600 rows at 2.0 hold rank q·n, continuous on both sides
        x = np.sort(np.r_[x[x < 1.9][:1900], np.full(600, 2.0), np.linspace(2.1, 3.9, 500)])
        q = 0.75
    elif case == "clamped_bottom":  # rows clamped to the lower bound 1
        lo, hi, q = 1.0, 100.0, 0.2
    n = x.size
    mech = ExponentialQuantile(Quantile(q, lo, hi, neighbours="add_remove"), 0.5)
    values_read = []

    def read(a: int, b: int) -> np.ndarray:
        values_read.append(b - a)
        return ref.pad_window(np.clip(x, lo, hi)[max(a, 0):], a, b, lo, hi,
                              offset=max(a, 0), n=n)

    staged = mech.pieces(n, read)
    assert staged.blocks is not None and not staged.full
    half = qm.PieceSet._half(mech.epsilon, 0.95 if case != "clamped_bottom" else 0.8)
    assert len(staged.window) <= 2 * half + 4
    # the window at the target, the two beyond the run's ends, a galloping search each way
    assert sum(values_read) <= 4 * half + 8 + 4 * int(np.log2(n) + 1)
    monkeypatch.setattr(qm, "WINDOW_EXPONENT", 1e9)
    full = mech.pieces(n, read)
    assert full.full
    before = len(values_read)
    for seed in range(40):
        i_full, _ = exact.sample_piece(full.log_weights, full.window, simulation(seed))
        i_staged, _ = staged.draw_piece(simulation(seed))
        assert i_staged == i_full, seed
    assert len(values_read) == before  # the two windows hold every piece drawn


def test_window_blocks_are_checked():
    from instancedp.errors import ParameterError
    from instancedp.noise import exact

    with pytest.raises(ParameterError, match="window_pieces"):  # a wide block of length > 0
        exact.sample_piece_lazy(lambda i: 0.0, float, 10, 2, [1.0, 2.0, 3.0],
                                simulation(0), window_pieces=[2, 3, 6])
    with pytest.raises(ParameterError, match="window_pieces"):  # not increasing
        exact.sample_piece_lazy(lambda i: 0.0, float, 10, 2, [1.0, 1.0, 1.0],
                                simulation(0), window_pieces=[2, 2, 3])
    with pytest.raises(ParameterError, match="window_edges"):  # one edge per block start
        exact.sample_piece_lazy(lambda i: 0.0, float, 10, 2, [1.0, 2.0],
                                simulation(0), window_pieces=[2, 3, 4])


def test_the_ball_path_step_costs_the_runs_not_the_window(monkeypatch):
    """The mass in the run beside a window of 2,000 tiny pieces: every step of the exact
    inversion (a split, a digit) re-sums the runs only, so the ball evaluations stay
    about one per window piece plus the runs' (each step once over every window
    piece: some 10⁵ and more)."""
    from instancedp.noise import exact

    m, s, t = 3000, 500, 2500  # window pieces 1e-15 long, run pieces 1 long
    e = np.r_[np.arange(-s, 1, dtype=float), 1e-15 * np.arange(1, t - s + 1),
              2e-12 + np.arange(1, m - t + 1)]
    ld = lambda i: -abs(i - 510.0)  # noqa: E731 — the mode inside the window, near its start
    calls = [0]
    real = exact._exp_ball

    def counting(v):
        calls[0] += 1
        return real(v)

    monkeypatch.setattr(exact, "_exp_ball", counting)
    for seed in range(3):
        calls[0], reads = 0, []
        i, _ = exact.sample_piece_lazy(ld, lambda k, r=reads: r.append(k) or float(e[k]), m, s,
                                       e[s:t + 1], simulation(seed))
        i_full, _ = exact.sample_piece(np.array([ld(k) for k in range(m)]), e,
                                       simulation(seed))
        assert i == i_full and i < s
        assert calls[0] <= 2 * (t - s) + 8 * (len(reads) + 4) ** 2, calls[0]


def test_a_column_clamped_to_its_released_range_gives_the_in_memory_record(tmp_path,
                                                                          monkeypatch):
    """Bound-free describe where p95 lies among the rows clamped to B's upper end (a
    lognormal tail): the Parquet file and the same rows in memory, the same bytes,
    both through the window around the run of clamped rows."""
    import instancedp.mechanisms.quantile as qm

    tied = []
    real = qm.PieceSet._around_ties

    def spy(self, half):
        real(self, half)
        tied.append(self.blocks is not None)

    monkeypatch.setattr(qm.PieceSet, "_around_ties", spy)
    df = pd.DataFrame({"v": _clamped_lognormal(1200, 8)})
    df.to_parquet(tmp_path / "t.parquet")
    assert _record(tmp_path / "t.parquet", None, ["v"]) == _record(df, None, ["v"])
    assert sum(tied) >= 2  # once per path


def test_a_window_over_fetched_and_unfetched_cells_is_one_value_range(tmp_path):
    """A read whose cells alternate between fetched and not (a window over earlier
    windows) asks the engine for ONE value range, not one per run of cells, and
    returns the sorted clamped values."""
    from instancedp.describe import IndexedColumn

    x = np.random.default_rng(3).normal(50.0, 10.0, 3000)
    pd.DataFrame({"v": x}).to_parquet(tmp_path / "t.parquet")
    src = open_source(str(tmp_path / "t.parquet"))
    idx = IndexedColumn(src, "v", 0.0, 100.0)
    xs = np.sort(np.clip(x, 0.0, 100.0))
    starts = idx.cum[:-1][idx.counts > 0]
    for r in starts[::2][:12]:  # every other non-empty cell fetched
        idx.read(int(r), int(r) + 1)
    calls = []
    real = src.range_values
    src.range_values = lambda *a, **k: calls.append(len(a[3])) or real(*a, **k)
    a, b = int(starts[0]), int(starts[23])
    assert idx.read(a, b).tobytes() == xs[a:b].tobytes() and calls == [1]
    src.close()
