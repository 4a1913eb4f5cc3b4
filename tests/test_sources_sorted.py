"""The sorted column read by rank (min, max and the trimmed mean out of core).

* ``range_sum`` (the new primitive) against a definition written here: a row-by-row
  loop over the clamped values with each row's fixed-point term;
* a release reads only the ranks its early-stop rule reaches (far fewer than n), and
  its record equals the mechanism's release on the whole array, byte for byte.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from instancedp.backends import open_source
from instancedp.errors import ParameterError
from instancedp.random import simulation
from instancedp.recipes import build_mechanism
from instancedp.sources import release_from_source


def _term(v: float, lo: float, hi: float) -> int:
    """One row's shifted fixed-point term, from the rule (not the library's helper)."""
    c = min(max(v, lo), hi) - lo
    e = math.frexp(hi - lo)
    s = 52 - (e[1] - 1 if e[0] == 0.5 else e[1])
    return math.trunc(math.ldexp(c, s))


@pytest.mark.parametrize("a,b", [(-1.0, 1.0), (0.5, 0.5), (-3.0, 3.0), (1.0, 2.0), (2.0, 2.0)])
def test_range_sum_matches_its_definition(a, b):
    rows = [-5.0, -1.0, -1.0, 0.0, -0.0, 0.25, 0.5, 0.5, 1.0, 1.0, 1.5, 2.0, 7.0, 5e-324]
    lo, hi = -2.0, 2.0
    x = [min(max(v, lo), hi) for v in rows]
    want = (sum(v <= a for v in x), sum(v < b for v in x),
            sum(_term(v, lo, hi) for v in x if a < v < b))
    assert open_source(np.array(rows)).range_sum(None, lo, hi, a, b, shift=True) == want
    assert open_source(np.array([])).range_sum(None, lo, hi, a, b) == (0, 0, 0)


def test_range_sum_refuses_a_reversed_range():
    with pytest.raises(ParameterError) as e:
        open_source(np.array([1.0])).range_sum(None, 0.0, 2.0, 1.5, 0.5)
    assert e.value.parameter == "b"


class _Counting:
    """A Source that counts the values its rank windows return."""

    def __init__(self, source):
        self.source, self.values = source, 0

    def __getattr__(self, name):
        return getattr(self.source, name)

    def order_window(self, column, lo, hi, start, stop, *, missing="drop"):
        self.values += max(0, stop - start)
        return self.source.order_window(column, lo, hi, start, stop, missing=missing)


@pytest.mark.parametrize("stat,opts", [("min", {}), ("max", {}), ("trimmed-mean", {"trim": 0.1}),
                                       ("trimmed-mean", {"trim": 0.0})])
@pytest.mark.parametrize("neighbours", ["add_remove", "substitution"])
def test_a_release_reads_a_few_ranks_and_equals_the_whole_array(stat, opts, neighbours):
    n = 50_000
    x = np.random.default_rng(9).normal(50.0, 20.0, n)
    extra = {"n": n} if neighbours == "substitution" and stat == "trimmed-mean" else {}
    mech = build_mechanism(stat, 1.0, bounds=(0.0, 100.0), neighbours=neighbours, **opts,
                           **extra)
    src = _Counting(open_source(x))
    got = release_from_source(mech, src, None, simulation(3))
    want = mech.release(x, rng=simulation(3))
    assert json.dumps(got.to_dict(), sort_keys=True) == json.dumps(want.to_dict(), sort_keys=True)
    assert 0 < src.values <= 8_000  # the windows around the target ranks, not the column


def test_split_sums_re_sum_above_the_row_limit(tmp_path, monkeypatch):
    """Two 64-bit partial sums are exact below 2^37 rows; above, the engine sums once
    more in one exact type (the limit lowered here to take that path on a small table)."""
    import sqlite3

    from instancedp.backends import sql

    rows = [-1.5, 0.25, 2.0, 2.0, -0.0, 1e-300]
    con = sqlite3.connect(tmp_path / "t.db")
    con.execute("CREATE TABLE t (v REAL)")
    con.executemany("INSERT INTO t VALUES (?)", [(v,) for v in rows])
    con.commit()
    con.close()
    ref = open_source(np.array(rows))
    want = (ref.range_sum(None, -2.0, 2.0, -1.5, 2.0), ref.count_and_sum(None, -2.0, 2.0))
    for limit in (1 << 37, 1):
        monkeypatch.setattr(sql, "_SPLIT_ROWS", limit)
        src = open_source(str(tmp_path / "t.db"), table="t")
        got = (src.range_sum("v", -2.0, 2.0, -1.5, 2.0), src.count_and_sum("v", -2.0, 2.0))
        assert got == want


def test_which_mechanisms_an_engine_serves(tmp_path):
    """The staged draw serves the continuous bases; a grid base is served from one
    histogram while the grid has at most MAX_CANDIDATES points and a past that is
    refused by name on an engine (it is read into memory from a Parquet file); the
    bound-free quantile is served."""
    import pandas as pd

    from instancedp.backends import open_source
    from instancedp.errors import ParameterError
    from instancedp.mechanisms.quantile import ExponentialQuantile
    from instancedp.mechanisms.unbounded import UnboundedQuantile
    from instancedp.queries.order import Quantile
    from instancedp.sources import MAX_CANDIDATES, release_from_source, serves_out_of_core

    query = Quantile(0.5, 0.0, 100.0, neighbours="add_remove")
    wide = Quantile(0.5, 0.0, float(MAX_CANDIDATES), neighbours="add_remove")
    path = tmp_path / "x.parquet"
    pd.DataFrame({"x": [1.0, 2.0, 3.0]}).to_parquet(path)
    for base in ("grid", "log-grid"):
        assert serves_out_of_core(ExponentialQuantile(query, 1.0, base=base, resolution=1.0))
        mech = ExponentialQuantile(wide, 1.0, base=base, resolution=1.0)
        assert not serves_out_of_core(mech)
        with pytest.raises(ParameterError, match="not available out of core"):
            release_from_source(mech, open_source(str(path)), "x", simulation(0))
    for base in ("uniform", "log"):
        assert serves_out_of_core(ExponentialQuantile(query, 1.0, base=base))
    assert serves_out_of_core(UnboundedQuantile(0.5, 1.0))
