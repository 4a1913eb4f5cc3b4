"""Neighbouring tables on the engine path: what a caller sees differs only in values
and in selected keys.

One row moved between groups, one added, one removed: the records of a SQLite
table (the engine path: grouped count, one window statement, further reads
per group) have the same keys, parameters and guarantee, and per-group
values of the same shapes; with unknown keys, a key held by the added row
alone appears with probability at most δ_s (the selection's stated bound),
checked by running the releasing code."""

from __future__ import annotations

import math
import sqlite3

import numpy as np
import pandas as pd
import pytest

from instancedp.backends import open_source
from instancedp.groupby import group_release, selection_keep_probability
from instancedp.random import simulation

STATS = "median,p90,mean,count"
KW = dict(epsilon=2.0, bounds=(0.0, 100.0))
KEYS = [0.0, 1.0, 2.0, 3.0]


def _base() -> pd.DataFrame:
    g = np.random.default_rng(5)
    k = np.r_[np.zeros(60), np.ones(25), np.full(2, 2.0)]  # groups 0, 1, 2; 3 is empty
    v = np.r_[g.normal(50, 20, 60), np.full(25, 100.0), [0.0, 100.0]]  # b: ties at a bound
    return pd.DataFrame({"k": k, "v": v})


def _neighbours() -> dict[str, pd.DataFrame]:
    df = _base()
    moved = df.copy()
    moved.loc[0, "k"] = 1.0  # one row leaves group 0 and joins group 1
    return {"base": df, "moved": moved,
            "added": pd.concat([df, pd.DataFrame({"k": [2.0], "v": [50.0]})],
                               ignore_index=True),
            "removed": df.iloc[1:].reset_index(drop=True)}


def _sqlite(tmp_path, name: str, df: pd.DataFrame) -> str:
    path = tmp_path / f"{name}.db"
    con = sqlite3.connect(path)
    df.to_sql("t", con, index=False)
    con.close()
    return str(path)


def _shape(record: dict) -> list:
    return [sorted(row) for row in record["value"]]


def test_public_keys_records_differ_only_in_values(tmp_path):
    out = {}
    for name, df in _neighbours().items():
        r = group_release(_sqlite(tmp_path, name, df), "k", "v", STATS, keys=KEYS,
                          rng=simulation(3), where={"table": "t"}, **KW)
        out[name] = r.to_dict()
        # the engine path is the in-memory backend's record, bit for bit
        assert out[name] == group_release(open_source(df), "k", "v", STATS,
                                          keys=KEYS, rng=simulation(3),
                                          **KW).to_dict()
    base = out["base"]
    for name, o in out.items():
        assert o["parameters"] == base["parameters"], name
        assert o["guarantee"] == base["guarantee"] and o["mechanism"] == base["mechanism"]
        assert [row["k"] for row in o["value"]] == KEYS
        assert _shape(o) == _shape(base)
        assert all(isinstance(row[s], float) and math.isfinite(row[s])
                   for row in o["value"] for s in ("median", "p90", "mean", "count"))
    text = repr(base["parameters"])
    assert "'n'" not in text and "group_size" not in text and "rows" not in text
    # the values do move: the neighbours are not all answered alike
    assert len({repr(o["value"]) for o in out.values()}) > 1


def test_unknown_keys_differ_only_in_selected_keys(tmp_path):
    out = []
    for name, df in _neighbours().items():
        r = group_release(_sqlite(tmp_path, name, df), "k", "v", "median,count", delta=1e-3,
                          rng=simulation(1), where={"table": "t"}, **KW)
        out.append(r.to_dict())
    for o in out:
        assert o["parameters"] == out[0]["parameters"] and o["guarantee"] == out[0]["guarantee"]
        assert {row["k"] for row in o["value"]} <= {0.0, 1.0, 2.0}


def test_a_key_held_by_one_added_row_appears_at_most_with_the_stated_probability():
    """The engine path's selection (grouped row counts, then the Laplace threshold) on a
    table plus one row with a new key: the new key is kept in at most δ_s·N + 6 sd of N
    seeded releases (false failure < 1e-8 when the bound holds), and its exact keep
    probability is δ_s (one group per person)."""
    df = _base()
    added = open_source(pd.concat([df, pd.DataFrame({"k": [9.0], "v": [50.0]})],
                                  ignore_index=True))
    delta, trials = 0.2, 400  # a large δ so that the count is informative at small N
    src = simulation(9)
    kept = sum(9.0 in group_release(added, "k", "v", "count", epsilon=1.0, delta=delta,
                                      rng=src).keys for _ in range(trials))
    eps_s = 0.5  # equal split: the count, then the selection
    assert selection_keep_probability(1, eps_s, delta, 1, 1) == pytest.approx(delta)
    sd = math.sqrt(trials * delta * (1 - delta))
    assert kept <= delta * trials + 6 * sd
