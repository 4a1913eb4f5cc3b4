"""Error bars per group: each group's release carries the single release's interval.

The interval's share is paid inside each group's ε_g, so the group-by's one
charge (parallel composition) covers the intervals too."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pandas as pd
import pytest
from cli_support import cli

from instancedp import PureDP, Session
from instancedp.errors import ParameterError
from instancedp.groupby import group_release
from instancedp.intervals import with_interval
from instancedp.random import simulation
from instancedp.recipes import build_mechanism
from instancedp.session import analyst_policy, apply_policy

KEYS = [0.0, 1.0, 2.0]  # 2 has no row: its interval is answered all the same
STATS = [("median", {"bounds": (0.0, 100.0)}), ("mean", {"bounds": (0.0, 100.0)}),
         ("count", {})]


def _table() -> pd.DataFrame:
    g = np.random.default_rng(1)
    return pd.DataFrame({"k": np.r_[np.zeros(120), np.ones(9)],
                         "v": np.r_[g.normal(50, 10, 120), g.normal(20, 5, 9)]})


@pytest.mark.parametrize("neighbours, factor", [("add_remove", 1), ("substitution", 2)])
def test_group_intervals_are_the_single_releases_intervals(neighbours, factor):
    df = _table()
    r = group_release(df, "k", "v", "median,mean,count", keys=KEYS, epsilon=1.5, ci=0.9,
                      bounds=(0.0, 100.0), neighbours=neighbours, rng=simulation(7))
    assert r.guarantee == PureDP(1.5)  # the intervals' shares are inside the one charge
    eps_g = 1.5 / 3 / factor
    src = simulation(7)
    for i, key in enumerate(KEYS):
        rows = df.loc[df.k == key, "v"].to_numpy()
        for stat, opts in STATS:
            m = with_interval(lambda e, stat=stat, opts=opts: build_mechanism(
                stat, e, None, neighbours="add_remove", **opts), eps_g, 0.9)
            single = m.release(apply_policy(rows, analyst_policy(m)), rng=src)
            assert r.values[stat][i] == single.value
            assert r.intervals[stat][i] == (single.ci.lower, single.ci.upper)
    spec = r.parameters["per_group"]["median"]["interval"]
    assert spec["level"] == 0.9 and spec["method"] == "above_threshold_ranks"
    row = r.rows()[0]
    assert row["median_ci"][0] <= row["median_ci"][1]


def test_a_file_with_ci_is_read_into_memory_and_gives_the_frames_record(tmp_path):
    df = _table()
    df.to_parquet(tmp_path / "t.parquet")
    kw = dict(keys=["0.0", "1.0", "2.0"], epsilon=1.0, ci=0.8, bounds=(0.0, 100.0))
    got = group_release(tmp_path / "t.parquet", "k", "v", "median,count", rng=simulation(2),
                        **kw)
    text_keys = df.assign(k=df.k.astype(str))
    want = group_release(text_keys, "k", "v", "median,count", rng=simulation(2), **kw)
    assert got.to_dict() == want.to_dict() and got.intervals == want.intervals


def test_a_database_refuses_ci_before_the_ledger_is_touched(tmp_path):
    path = tmp_path / "t.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (k TEXT, v REAL)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [("a", 1.0), ("b", 2.0)])
    con.commit()
    con.close()
    s = Session(str(path), PureDP(1.0), table="t")
    with pytest.raises(ParameterError) as e:
        s.release_statistic("mean", "v", by="k", keys=["a", "b"], epsilon=0.5, ci=0.9,
                            bounds=(0.0, 4.0))
    assert e.value.parameter == "ci" and s.history() == []
    with pytest.raises(ParameterError) as e:  # a bad level: a parameter error, no charge
        Session(_table(), PureDP(1.0)).release_statistic(
            "median", "v", by="k", keys=KEYS, epsilon=0.5, ci=1.5, bounds=(0.0, 100.0))
    assert e.value.parameter == "ci"


def test_cli_ci_with_by_prints_intervals_and_plots_error_bars(tmp_path):
    f = tmp_path / "d.csv"
    f.write_text("state,income\n" + "".join(f"{s},{v}\n" for s, v in
                                            [("CA", 10), ("CA", 20), ("CA", 90), ("NY", 50)]))
    (tmp_path / "k.csv").write_text("CA\nNY\nTX\n")
    r = cli("release", f, "--column", "income", "--statistic", "median,count", "--by",
            "state", "--keys", tmp_path / "k.csv", "--epsilon", "1", "--bounds", "0", "100",
            "--owner", "--seed", "3", "--ci", "0.9", "--json", "--plot", tmp_path / "g.png")
    assert r.returncode == 0, r.stderr
    *cells, out = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(cells) == 6  # TX has no row: answered, with its interval
    assert all(len(c["ci"]) == 2 and c["ci"][0] <= c["ci"][1] for c in cells)
    assert out["guarantee"] == {"type": "pure", "epsilon": 1.0}
    assert (tmp_path / "g.png").stat().st_size > 1000


def test_bound_free_group_intervals_are_the_single_releases_intervals():
    """bounds=None: each group's median and p90 carry the single bound-free release's
    interval (the scans on a range around the group's value); open ends are null in
    the record and the JSON lines (strict JSON)."""
    df = _table()
    r = group_release(df, "k", "v", "median,p90", keys=KEYS, epsilon=4.0, ci=0.9,
                      rng=simulation(3))
    src = simulation(3)
    for i, key in enumerate(KEYS):
        rows = df.loc[df.k == key, "v"].to_numpy()
        for stat, opts in (("median", {}), ("quantile", {"quantile": 0.9})):
            m = with_interval(lambda e, stat=stat, opts=opts: build_mechanism(
                stat, e, None, neighbours="add_remove", **opts), 2.0, 0.9)
            single = m.release(apply_policy(rows, analyst_policy(m)), rng=src)
            label = "median" if stat == "median" else "p90"
            assert r.values[label][i] == single.value
            assert r.intervals[label][i] == (single.ci.lower, single.ci.upper)
    assert r.intervals["median"][2] == (-np.inf, np.inf)  # the empty group: no statement
    assert np.isfinite(r.intervals["median"][0]).all()  # 120 rows at ε_g = 2: finite
    json.dumps(r.to_dict(), allow_nan=False)
    assert all("Infinity" not in line for line in r.json_lines())
    assert r.rows()[2]["median_ci"] == [None, None]
