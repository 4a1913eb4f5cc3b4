"""Per-group releases: equality with single releases, keys, selection, costs, neighbours."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from instancedp import Session
from instancedp.errors import ParameterError
from instancedp.groupby import (
    bound_contributions,
    group_release,
    plan,
    select_partitions,
    selection_keep_probability,
    selection_threshold,
)
from instancedp.privacy import ApproxDP, PureDP
from instancedp.random import simulation
from instancedp.recipes import build_mechanism
from instancedp.session import analyst_policy, apply_policy

BOUNDS = (0.0, 100.0)


def _table(rng_seed: int = 0) -> pd.DataFrame:
    g = np.random.default_rng(rng_seed)
    return pd.DataFrame({
        "state": ["a"] * 40 + ["b"] * 25 + ["c"] * 3,
        "income": np.r_[g.uniform(0, 100, 40), g.uniform(40, 60, 25), [1.0, 2.0, 3.0]],
    })


# -- equality with single releases ------------------------------------------------------
def test_public_keys_equal_single_releases_with_the_same_generator():
    df = _table()
    keys = ["b", "a", "zz"]  # "zz" is empty
    eps = 1.2
    r = group_release(df, "state", "income", "median,p90,count", epsilon=eps, keys=keys,
                      bounds=BOUNDS, rng=simulation(7))
    # by hand: one single release per group and statistic, in that order, one source
    src = simulation(7)
    per = eps / 3
    mechs = [
        ("median", build_mechanism("median", per, bounds=BOUNDS)),
        # per group the exponential quantile, also where a single p90's default is the
        # tail choice (the grouped engines serve no per-group bound-free bins)
        ("p90", build_mechanism("quantile", per, bounds=BOUNDS, quantile=0.9,
                                mechanism="exponential")),
        ("count", build_mechanism("count", per)),
    ]
    for i, key in enumerate(keys):
        data = df.loc[df.state == key, "income"].to_numpy()
        for label, m in mechs:
            want = m.release(apply_policy(data, analyst_policy(m)), rng=src).value
            assert r.values[label][i] == want
    assert r.keys == keys
    assert r.guarantee == PureDP(eps)


def test_selected_keys_equal_single_releases_after_the_selection_draws():
    df = pd.DataFrame({"k": ["x"] * 500 + ["y"] * 400, "v": np.linspace(0, 100, 900)})
    r = group_release(df, "k", "v", "median", epsilon=2.0, delta=1e-6, bounds=BOUNDS,
                      rng=simulation(3))
    assert r.keys == ["x", "y"]  # far above the threshold (≈ 34 at ε_s = 1)
    src = simulation(3)
    select_partitions({"x": 500, "y": 400}, 1.0, 1e-6, sensitivity=1, new_keys=1, source=src)
    m = build_mechanism("median", 1.0, bounds=BOUNDS)
    policy = analyst_policy(m)  # the default median answers an empty input: no public row
    assert policy["added_public_row"] is None
    for i, key in enumerate(["x", "y"]):
        data = df.loc[df.k == key, "v"].to_numpy()
        assert r.values["median"][i] == m.release(apply_policy(data, policy), rng=src).value


# -- partition selection: threshold and its exact failure probability --------------------------
@pytest.mark.parametrize("eps,delta,sens,c", [(1.0, 1e-6, 1, 1), (0.1, 1e-9, 2, 1),
                                              (0.5, 1e-5, 3, 3), (2.0, 0.2, 2, 1)])
def test_threshold_gives_delta_over_c_for_a_key_held_by_one_person(eps, delta, sens, c):
    from scipy.stats import laplace

    t = selection_threshold(eps, delta, sens, c)
    # P(1 + Lap(sens/eps) > T), from scipy's Laplace survival function (independent)
    p = laplace.sf(t - 1.0, scale=sens / eps)
    assert p == pytest.approx(delta / c, rel=1e-9)
    assert selection_keep_probability(1, eps, delta, sens, c) == pytest.approx(p, rel=1e-12)
    # the textbook form for one group per person under add/remove
    if sens == 1 and c == 1:
        assert t == pytest.approx(1 + math.log(1 / (2 * delta)) / eps)


def test_release_path_keeps_a_one_row_key_with_probability_delta():
    # The code that releases (select_partitions), 20,000 draws at δ = 0.05:
    # expected 1,000 keeps, sd ≈ 30.8; the ±6 sd band fails with prob < 2e-9.
    src = simulation(11)
    kept = sum(
        bool(select_partitions({"k": 1}, 0.7, 0.05, sensitivity=1, new_keys=1, source=src))
        for _ in range(20_000)
    )
    assert abs(kept - 1000) < 6 * math.sqrt(20_000 * 0.05 * 0.95)


def test_a_key_with_zero_rows_is_never_selected():
    src = simulation(0)
    for _ in range(200):
        assert select_partitions({"k": 0}, 1.0, 0.4, sensitivity=1, new_keys=1,
                                 source=src) == []


def test_selection_refused_under_pure_budget_up_front(tmp_path):
    led = tmp_path / "l.db"
    s = Session(_table(), PureDP(5.0), ledger=led)
    with pytest.raises(ParameterError) as e:
        s.release_statistic("median", "income", by="state", epsilon=1.0, delta=1e-6,
                            bounds=BOUNDS)
    assert e.value.parameter == "keys"
    with pytest.raises(ParameterError) as e:  # no δ at all
        group_release(_table(), "state", "income", "median", epsilon=1.0, bounds=BOUNDS)
    assert e.value.parameter == "keys"
    assert s.history() == []


# -- costs per relation -------------------------------------------------------------------
def test_costs_per_relation_and_per_person_cap():
    add = plan("median,count", epsilon=1.0, keys=["a"], bounds=BOUNDS)
    sub = plan("median,count", epsilon=1.0, keys=["a"], bounds=BOUNDS, neighbours="substitution")
    cap = plan("median", epsilon=1.0, keys=["a"], bounds=BOUNDS, max_groups=3)
    assert add["guarantee"] == PureDP(1.0) == sub["guarantee"] == cap["guarantee"]
    # the per-group mechanisms (add/remove calibrated) get ε/(2 stats), ε/(2·2), ε/3
    assert [m.epsilon for _, m in add["statistics"]] == pytest.approx([0.5, 0.5])
    assert [m.epsilon for _, m in sub["statistics"]] == pytest.approx([0.25, 0.25])
    assert cap["statistics"][0][1].epsilon == pytest.approx(1 / 3)
    sel = plan("median", epsilon=1.0, delta=1e-6, bounds=BOUNDS, neighbours="substitution")
    assert sel["selection"]["sensitivity"] == 2
    assert sel["guarantee"] == ApproxDP(1.0, 1e-6)


def test_ledger_charged_once_with_the_composed_guarantee(tmp_path):
    s = Session(_table(), ApproxDP(3.0, 1e-5), ledger=tmp_path / "l.db")
    r = s.release_statistic("median,mean", "income", by="state", epsilon=1.0, delta=1e-6,
                            bounds=BOUNDS, split=[0.4, 0.4, 0.2], rng=simulation(0))
    hist = s.history()
    assert len(hist) == 1
    assert r.guarantee == ApproxDP(1.0, 1e-6)
    assert float(s.spent.epsilon) == pytest.approx(1.0)
    assert r.parameters["selection"]["epsilon"] == pytest.approx(0.2)


@pytest.mark.parametrize("split", [[0.5], [0.5, 0.6], [1.0, 0.0], [float("nan"), 1.0]])
def test_bad_split_names_the_parameter(split):
    with pytest.raises(ParameterError) as e:
        plan("median,mean", epsilon=1.0, keys=["a"], bounds=BOUNDS, split=split)
    assert e.value.parameter == "split"


@pytest.mark.parametrize("stat", ["p0", "p100", "ratio", "", "median,median"])
def test_bad_statistic_names_the_parameter(stat):
    with pytest.raises(ParameterError) as e:
        plan(stat, epsilon=1.0, keys=["a"], bounds=BOUNDS)
    assert e.value.parameter == "statistic"


# -- neighbouring tables: only values and selected keys differ ------------------------------
def _neighbours(df: pd.DataFrame) -> list[pd.DataFrame]:
    moved = df.copy()
    moved.loc[0, "state"] = "c"  # one row moved between groups
    added = pd.concat([df, pd.DataFrame({"state": ["new"], "income": [100.0]})],
                      ignore_index=True)  # a row holding a key of its own
    removed = df.iloc[1:].reset_index(drop=True)
    return [moved, added, removed]


@pytest.mark.parametrize("keys", [["a", "b", "c", "new"], None])
def test_neighbouring_tables_differ_only_in_values_and_selected_keys(keys):
    df = _table()
    rel = "substitution" if keys is not None else "add_remove"
    kw = dict(epsilon=1.0, delta=None if keys else 1e-3, keys=keys, bounds=BOUNDS,
              neighbours=rel)
    base = group_release(df, "state", "income", "median,count", rng=simulation(1), **kw)
    for other in _neighbours(df):
        if rel == "substitution" and len(other) != len(df):
            continue
        r = group_release(other, "state", "income", "median,count", rng=simulation(1), **kw)
        assert r.parameters == base.parameters
        assert r.guarantee == base.guarantee
        assert r.mechanism == base.mechanism and r.by == base.by
        if keys is not None:
            assert r.keys == base.keys == keys
    # nothing in the record is a group size or a sensitivity
    text = repr(base.to_dict()["parameters"])
    for word in ("local_sensitivity", "smooth_sensitivity", "group_size", "'n'"):
        assert word not in text


@pytest.mark.parametrize("rel", ["add_remove", "substitution"])
def test_selection_law_on_neighbouring_tables_is_bounded_by_epsilon_and_delta(rel):
    # The exact law of which keys pass, from the grouped counts the release path reads
    # (MemoryGroups.rows, the numpy reference every engine equals), on a table and each
    # of its neighbours: per key, P(kept) moves by at most a factor e^(ε_s/Δ); a key
    # held in one table only passes with probability ≤ δ_s/c, and all such keys
    # together ≤ δ_s.
    from instancedp.backends.grouped import MemoryGroups

    df = _table()
    eps, delta = 1.0, 1e-3
    p = plan("count", epsilon=eps, delta=delta, neighbours=rel)
    sel = p["selection"]

    def law(t):
        counts = MemoryGroups(t["state"].to_numpy(object), t["income"].to_numpy()).rows()
        return {k: selection_keep_probability(c, sel["epsilon"], sel["delta"],
                                              sel["sensitivity"], 1) for k, c in counts.items()}

    base = law(df)
    neighbours = [t for t in _neighbours(df) if rel == "add_remove" or len(t) == len(df)]
    assert neighbours
    for other in neighbours:
        nb = law(other)
        only = 0.0
        for key in set(base) | set(nb):
            a, b = base.get(key, 0.0), nb.get(key, 0.0)
            if key in base and key in nb:
                bound = math.exp(sel["epsilon"] / sel["sensitivity"]) * (1 + 1e-12)
                assert a <= bound * b and b <= bound * a, key
            else:
                only += max(a, b)
                assert max(a, b) <= sel["delta"] * (1 + 1e-12)
        assert only <= sel["delta"] * (1 + 1e-12)


def test_one_row_key_appears_with_probability_at_most_delta():
    # The whole release path: a table where key "solo" is held by one row.
    df = pd.DataFrame({"k": ["big"] * 200 + ["solo"], "v": np.r_[np.full(200, 5.0), [9.0]]})
    delta = 0.1
    src = simulation(5)
    hits = 0
    for _ in range(1500):
        r = group_release(df, "k", "v", "count", epsilon=1.0, delta=delta, rng=src)
        hits += "solo" in r.keys
    # expected 1500·δ = 150 (δ_s = δ: count needs no δ); sd ≈ 11.6; +6 sd fails w.p. < 1e-9
    assert hits <= 150 + 6 * math.sqrt(1500 * delta * (1 - delta))
    assert hits > 0  # the test can fail the other way: δ is spent, not wasted


# -- empty groups and sizes 0, 1, 2 -------------------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 2])
def test_small_tables_answer_every_public_key(n):
    df = pd.DataFrame({"state": ["a", "b"][:n], "income": [100.0, 0.0][:n]})
    r = group_release(df, "state", "income", "median,mean,count,max", epsilon=1.0,
                      delta=1e-6, keys=["a", "b", "empty"], bounds=BOUNDS, rng=simulation(0))
    for label, vals in r.values.items():
        assert len(vals) == 3 and all(v is not None and np.isfinite(v) for v in vals), label


def test_empty_table_with_selection_releases_no_keys():
    df = pd.DataFrame({"state": pd.Series([], dtype=object), "income": pd.Series([], dtype=float)})
    r = group_release(df, "state", "income", "median", epsilon=1.0, delta=1e-6, bounds=BOUNDS)
    assert r.keys == [] and r.values == {"median": []}


def test_values_clamped_and_missing_dropped_under_the_public_policy():
    df = pd.DataFrame({"s": ["a"] * 4, "v": [np.nan, 1e308, -1e308, 5e-324]})
    r = group_release(df, "s", "v", "median", epsilon=1.0, keys=["a"], bounds=BOUNDS,
                      rng=simulation(0))
    assert BOUNDS[0] <= r.values["median"][0] <= BOUNDS[1]
    with pytest.raises(Exception, match="missing"):
        group_release(df, "s", "v", "median", epsilon=1.0, keys=["a"], bounds=BOUNDS,
                      drop_missing=False)


# -- contribution bounding -------------------------------------------------------------------
def test_contribution_bound_depends_on_each_persons_rows_only():
    g = np.random.default_rng(0)
    ids = np.array([f"p{i % 5}" for i in range(40)], dtype=object)
    keys = np.array([f"k{j}" for j in g.integers(0, 6, 40)], dtype=object)
    vals = g.uniform(0, 1, 40)
    kept = bound_contributions(keys, vals, ids, 2)
    per = {}
    for i in kept:
        per.setdefault(ids[i], []).append(keys[i])
    assert all(len(v) == len(set(v)) <= 2 for v in per.values())
    # shuffling the rows and adding another person leaves everyone's kept rows the same
    perm = g.permutation(40)
    k2 = np.r_[keys[perm], ["k0", "k1", "k2"]].astype(object)
    v2 = np.r_[vals[perm], [0.1, 0.2, 0.3]]
    i2 = np.r_[ids[perm], ["zed"] * 3].astype(object)
    kept2 = bound_contributions(k2, v2, i2, 2)
    as_set = lambda K, V, ID, idx: {(ID[i], K[i], V[i]) for i in idx if ID[i] != "zed"}  # noqa: E731
    assert as_set(keys, vals, ids, kept) == as_set(k2, v2, i2, kept2)


def test_max_groups_needs_an_id_column():
    with pytest.raises(ParameterError) as e:
        group_release(_table(), "state", "income", "count", epsilon=1.0, keys=["a"],
                      max_groups=2)
    assert e.value.parameter == "max_groups"


# -- files (engine equality: test_groupby_backends.py) and output frames --------------
def test_file_with_id_column_bounds_contributions(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("who,g,v\np,a,1\np,b,2\np,c,3\nq,a,4\nq,a,5\n")
    r = group_release(f, "g", "v", "count", epsilon=1e6, keys=["a", "b", "c"],
                      id_column="who", max_groups=1, rng=simulation(0))
    # p keeps one of its three groups, q one of its two rows in a: 2 rows in all
    assert sum(round(v) for v in r.values["count"]) == 2


def test_frames_match_the_input():
    pl = pytest.importorskip("polars")
    df = _table()
    r = group_release(pl.from_pandas(df), "state", "income", "median", epsilon=1.0,
                      keys=["a", "b"], bounds=BOUNDS, rng=simulation(0))
    out = r.to_frame()
    assert isinstance(out, pl.DataFrame) and out.columns == ["state", "median"]
    assert list(r.to_pandas()["state"]) == ["a", "b"]


def test_group_options_without_by_are_refused():
    s = Session(_table(), PureDP(1.0))
    for kw in ({"keys": ["a"]}, {"split": [1.0]}, {"id_column": "state"}):
        with pytest.raises(ParameterError) as e:
            s.release_statistic("median", "income", epsilon=0.5, bounds=BOUNDS, **kw)
        assert e.value.parameter == "by"
    assert s.history() == []


def test_substitution_session_charges_the_total_and_halves_each_group():
    s = Session(_table(), PureDP(1.0), neighbours="substitution")
    r = s.release_statistic("median", "income", by="state", keys=["a", "b"], epsilon=1.0,
                            bounds=BOUNDS, rng=simulation(0))
    assert float(s.spent.epsilon) == pytest.approx(1.0)
    assert r.parameters["per_group"]["median"]["epsilon"] == pytest.approx(0.5)
    assert r.parameters["groups_touched_per_person"] == 2
