"""``log_bins`` (one grouped aggregate per column) and what the bound-free quantile
builds on it: :class:`BinnedRankCounts` must give the integers #{x ≤ t} of
:class:`RankCounts` at every threshold a scan can ask, whatever grouping the
engine computed (its labels are float logarithms, not the grid's exact
candidates), and the second stage's rank reader the in-memory order windows.
Expected values come from sorting the rows (``np.searchsorted``), never from the
code under test."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pandas as pd
import pytest
from backend_cases import CASES, as_array
from hypothesis import given, settings
from hypothesis import strategies as st

from instancedp.backends import numpy as ref
from instancedp.backends import open_source
from instancedp.errors import ParameterError
from instancedp.mechanisms.unbounded import (
    BinnedRankCounts,
    RankCounts,
    UnboundedQuantile,
    geometric_candidates,
)
from instancedp.random import simulation
from instancedp.sources import release_from_source, unbounded_readers

MAX = float(np.finfo(np.float64).max)
BETA, SCALE = 1.01, 1.0
GRID = BinnedRankCounts.grid_thresholds(BETA, SCALE)


def _on_candidates() -> np.ndarray:
    """Rows exactly at grid candidates and one double either side, both signs."""
    c = geometric_candidates(0, 400, BETA, SCALE)[1::7]
    near = np.concatenate([c, np.nextafter(c, np.inf), np.nextafter(c, -np.inf)])
    return np.concatenate([near, -near, [0.0, -0.0]])


ADVERSARIAL = {
    **{k: as_array(k) for k in CASES},
    "on_candidates": _on_candidates(),
    "near_max": np.array([MAX, -MAX, np.nextafter(MAX, 0), 1e308, -1e300, 0.5]),
    "subnormals": np.array([5e-324, -5e-324, 1e-310, -2.2250738585072014e-308, 0.0, 1e-17]),
}


def _expected(x: np.ndarray, t: np.ndarray, missing="drop") -> np.ndarray:
    return RankCounts(np.sort(ref.apply_missing(x, missing))).at_most(t)


def _engines(tmp_path, name: str, x: np.ndarray):
    """The same rows on numpy, DuckDB (a frame through SQL) and SQLite."""
    yield open_source(x), None
    frame = pd.DataFrame({"v": x})
    with open_source(frame, sql="SELECT v FROM data") as duck:
        yield duck, "v"
    path = tmp_path / f"{name}.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (v REAL)")
    # SQLite stores NaN as NULL; ±inf as REAL
    con.executemany("INSERT INTO t VALUES (?)", [(None if v != v else float(v),) for v in x])
    con.commit()
    con.close()
    with open_source(str(path), table="t") as lite:
        yield lite, "v"


def _check_cells(cells, x: np.ndarray) -> None:
    edges, counts, mins, maxs = cells
    assert edges[0] == -MAX and edges[-1] == MAX and np.all(edges[1:] > edges[:-1])
    assert counts.sum() == x.size
    full = counts > 0
    assert np.all(mins[full] <= maxs[full]) and np.all(maxs[full][:-1] < mins[full][1:])
    xc = ref.clamp(x, -MAX, MAX)
    cell = np.searchsorted(edges[1:-1], xc, side="right")
    assert np.all(mins[cell] <= xc) and np.all(xc <= maxs[cell])


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_every_engine_gives_the_sorted_counts_at_every_grid_threshold(tmp_path, name):
    x = ADVERSARIAL[name]
    want = _expected(x, GRID)
    # (t = −inf reads 0, as the histogram reader: no scan asks it)
    extra = np.array([-MAX, -1.0, -0.0, 0.0, 5e-324, 0.3, 1e300])
    for src, col in _engines(tmp_path, name, x):
        calls = []

        def hist(e, src=src, col=col, calls=calls):
            calls.append(e.size)
            return src.histogram(col, e)

        cells = src.log_bins(col, BETA, SCALE)
        _check_cells(cells, ref.apply_missing(x))
        counts = BinnedRankCounts(cells, hist, GRID)
        assert len(calls) <= 1  # at most one exact histogram, up front
        assert counts.n == np.sum(~np.isnan(x))
        assert np.array_equal(counts.at_most(GRID), want), src.backend
        assert np.array_equal(counts.at_most(extra), _expected(x, extra)), src.backend
        assert len(calls) <= 2


def test_missing_values_follow_the_policy():
    x = np.array([np.nan, 1.0, np.nan, -2.5, 0.0])
    for missing in ("drop", -3.0):
        src = open_source(x)
        cells = src.log_bins(None, BETA, SCALE, missing=missing)
        counts = BinnedRankCounts(cells, lambda e, src=src, missing=missing: src.histogram(
                                      None, e, missing=missing),
                                  GRID)
        assert np.array_equal(counts.at_most(GRID), _expected(x, GRID, missing))


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.sampled_from([0.0, -0.0, 5e-324, 0.01, 0.0100000001, 1.0, 1.01, 2.0,
                                     -1.0, -0.01, 7.5, 1e300, -1e-300]), max_size=12),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_grouping_gives_the_sorted_counts(values, seed):
    """The counts never rest on the labels: random groupings (overlapping ranges,
    one group, every row alone) give the same integers."""
    x = np.array(values, dtype=np.float64) + 0.0
    labels = np.random.default_rng(seed).integers(0, 3, x.size)
    keys = np.unique(labels)
    cells = ref.bin_cells(np.array([np.sum(labels == g) for g in keys], dtype=np.int64),
                          np.array([x[labels == g].min() for g in keys]),
                          np.array([x[labels == g].max() for g in keys]))
    t = np.concatenate([GRID[:200], GRID[-200:], [0.0, 1.5, 7.5, -1.0, 1e300, -1e300]])
    src = open_source(x)
    counts = BinnedRankCounts(cells, lambda e: src.histogram(None, e), t)
    assert np.array_equal(counts.at_most(t), _expected(x, t))


def test_a_straddled_candidate_is_read_exactly_once(monkeypatch):
    """A label that rounds across candidates: one exact histogram up front, then none."""
    x = np.concatenate([_on_candidates(), np.linspace(-3, 3, 50)])
    monkeypatch.setattr(ref, "log_labels", lambda v, b, s: np.floor(v).astype(np.int64))
    src = open_source(x)
    calls = []
    counts = BinnedRankCounts(src.log_bins(None, BETA, SCALE),
                              lambda e: calls.append(e) or src.histogram(None, e), GRID)
    assert len(calls) == 1 and calls[0].size > 2
    assert np.array_equal(counts.at_most(GRID), _expected(x, GRID))
    assert len(calls) == 1


def test_empty_and_one_row():
    for x in (np.zeros(0), np.array([3.25])):
        src = open_source(x)
        counts = BinnedRankCounts(src.log_bins(None, BETA, SCALE),
                                  lambda e, src=src: src.histogram(None, e), GRID)
        assert counts.n == x.size
        assert np.array_equal(counts.at_most(GRID), _expected(x, GRID))


def test_bad_grid_parameters_are_named():
    src = open_source(np.arange(3.0))
    for beta, scale, name in ((1.0, 1.0, "beta"), (math.inf, 1.0, "beta"),
                              (1.01, 0.0, "scale"), (1.01, math.nan, "scale")):
        with pytest.raises(ParameterError) as e:
            src.log_bins(None, beta, scale)
        assert e.value.parameter == name


@pytest.mark.parametrize("name", ["random", "on_candidates", "ties", "huge", "one", "empty"])
def test_second_stage_windows_are_the_in_memory_windows(tmp_path, name):
    x = ADVERSARIAL[name]
    z = np.sort(ref.apply_missing(x))
    part = UnboundedQuantile(0.5, 1.0)
    n = z.size
    for src, col in _engines(tmp_path, name, x):
        _, clamped = unbounded_readers(src, col, [part])
        for lo, hi in ((-1.0, 2.0), (0.0, 0.0), (-1e308, 5e-324), (0.01, 1e300)):
            read = clamped(lo, hi)
            for a, b in ((-3, 2), (0, n), (n - 2, n + 3), (n // 2, n // 2 + 1), (4, 4)):
                want = ref.pad_window(ref.clamp(z, lo, hi)[max(a, 0):], a, b, lo, hi,
                                      offset=max(a, 0), n=n)
                assert read(a, b).tobytes() == want.tobytes(), (src.backend, lo, hi, a, b)


def test_one_aggregate_and_one_fetch_for_two_quantiles():
    """Continuous rows: the scans and both second stages read one log_bins and one
    range_values pass; no histogram, no order_window."""
    from instancedp.mechanisms.unbounded_quantiles import UnboundedQuantiles

    x = np.random.default_rng(5).lognormal(3.0, 1.0, 5000)
    with open_source(pd.DataFrame({"v": x}), sql="SELECT v FROM data") as duck:
        calls: dict[str, int] = {}
        for name in ("log_bins", "histogram", "range_values", "order_window",
                     "histogram_stats"):
            real = getattr(duck.engine, name)

            def counted(*a, _real=real, _name=name, **k):
                calls[_name] = calls.get(_name, 0) + 1
                return _real(*a, **k)

            setattr(duck.engine, name, counted)
        mech = UnboundedQuantiles((0.05, 0.95), 0.5)
        counts, clamped = unbounded_readers(duck, "v", mech._parts)
        rs = simulation(3)
        got = np.sort([p.draw_from(counts, clamped, rs) for p in mech._parts])
    assert calls == {"log_bins": 1, "range_values": 1}
    assert got.tobytes() == mech.release(x, rng=simulation(3)).value.tobytes()


def test_a_grid_with_an_origin_keeps_the_histogram_path():
    x = np.random.default_rng(2).normal(3.0, 2.0, 300)
    mech = UnboundedQuantile(0.3, 1.0, origin=-10.0)
    want = mech.release(x, simulation(8)).to_dict()
    with open_source(pd.DataFrame({"v": x}), sql="SELECT v FROM data") as duck:
        assert release_from_source(mech, duck, "v", simulation(8)).to_dict() == want


MIXED = np.concatenate([ADVERSARIAL["on_candidates"][::3], ADVERSARIAL["near_max"],
                        ADVERSARIAL["subnormals"]])


def _check_engine(src, col) -> None:
    cells = src.log_bins(col, BETA, SCALE)
    _check_cells(cells, MIXED)
    counts = BinnedRankCounts(cells, lambda e: src.histogram(col, e), GRID)
    assert np.array_equal(counts.at_most(GRID), _expected(MIXED, GRID))


def test_postgresql_labels_raise_no_range_error(postgres_url):
    """PostgreSQL raises on float underflow and overflow: subnormal, huge and
    max-double rows still get cells, and the exact counts."""
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as con:
        con.execute("DROP TABLE IF EXISTS log_bins_mixed")
        con.execute("CREATE TABLE log_bins_mixed (v double precision)")
        with con.cursor() as cur:
            cur.executemany("INSERT INTO log_bins_mixed VALUES (%s)",
                            [(float(v),) for v in MIXED])
    with open_source(postgres_url, table="log_bins_mixed") as pg:
        _check_engine(pg, "v")

