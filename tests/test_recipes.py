"""Recipes per neighbour relation, and the Session's relation and selection rules."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from instancedp.errors import ParameterError
from instancedp.privacy import PureDP
from instancedp.random import simulation
from instancedp.recipes import build_mechanism, build_query, default_mechanism
from instancedp.session import Session

STATS = {
    "median": {},
    "quantile": {"quantile": 0.9},
    "mean": {},
    "sum": {},
    "count": {},
    "min": {},
    "max": {},
}


def test_queries_carry_the_relation():
    for stat, opts in STATS.items():
        q = build_query(stat, bounds=None if stat == "count" else (0, 10), **opts)
        assert q.neighbours == "add_remove", stat
    assert build_query("median", bounds=(0, 10), neighbours="substitution").neighbours == (
        "substitution"
    )
    assert build_query("triangles", vertices=5).neighbours == "edge"


def test_add_remove_defaults_never_use_n():
    for stat in ("median", "quantile"):
        for eps in (0.1, 1.0, 5.0):
            assert default_mechanism(stat, eps) == "exponential"
    assert default_mechanism("mean") == "sum-count"
    with pytest.raises(ParameterError) as err:
        build_mechanism("mean", 1.0, bounds=(0, 1), n=10)
    assert err.value.parameter == "n"


@pytest.mark.parametrize(
    "call, parameter",
    [
        (lambda: build_mechanism("mean", 1.0), "bounds"),
        (lambda: build_mechanism("quantile", 1.0, bounds=(0, 1)), "quantile"),
        (lambda: build_mechanism("median", 0.0, bounds=(0, 1)), "epsilon"),
        (lambda: build_mechanism("median", 1.0, bounds=(0, 1), mechanism="nope"), "mechanism"),
        (lambda: build_mechanism("nope", 1.0), "statistic"),
        (lambda: build_mechanism("median", 1.0, bounds=(0, 1), mechanism="ptr"), "delta"),
        (lambda: build_mechanism("count", 1.0, neighbours="substitution"), "neighbours"),
        (lambda: build_mechanism("trimmed-mean", 1.0, bounds=(0, 1), trim=0.5), "trim"),
        (lambda: build_mechanism("median", 1.0, bounds=(0, 1), neighbours="rows"), "neighbours"),
        (lambda: build_mechanism("sum", 1.0, bounds=(-1e308, 1e308)), "bounds"),
    ],
)
def test_bad_parameters_name_the_python_keyword(call, parameter):
    with pytest.raises(ParameterError) as err:
        call()
    assert err.value.parameter == parameter
    assert "--" not in str(err.value)  # the library never names a CLI flag


def test_sum_over_count_mean_is_total_and_states_its_split():
    mech = build_mechanism("mean", 1.0, bounds=(0.0, 10.0))
    p = mech.parameters()
    assert p["neighbours"] == "add_remove" and p["split"] == {"sum": 0.5, "count": 0.5}
    for data in ([], [3.0], [0.0, 10.0], [10.0] * 5):  # the empty table is data
        r = mech.release(np.asarray(data, dtype=float), rng=simulation(1))
        assert 0.0 <= r.value <= 10.0


def _table(region_of_row_3: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "price": [1.0, 5.0, 2.0, 9.0, 4.0, 7.0],
            "region": ["EU", "EU", "US", region_of_row_3, "EU", "US"],
        }
    )


@pytest.mark.parametrize("stat", sorted(STATS))
def test_selection_records_differ_only_in_value(stat):
    """One row changes region (it leaves the WHERE selection): every public field
    of the record is the same; only the value may differ."""
    sql = "SELECT price FROM data WHERE region = 'EU'"
    opts = dict(STATS[stat])
    if stat != "count":
        opts["bounds"] = (0.0, 10.0)
    records = []
    for region in ("EU", "US"):
        s = Session(_table(region), PureDP(10.0))
        r = s.release_statistic(stat, epsilon=1.0, sql=sql, rng=simulation(4), **opts)
        d = r.to_dict()
        d.pop("value")
        records.append((d, s.history()))
    assert records[0][0] == records[1][0]
    params = records[0][0]["parameters"]
    relation = params.get("neighbours") or params["query_parameters"]["neighbours"]
    assert relation == "add_remove"
    h0, h1 = ([{k: v for k, v in h.items() if k not in ("created_at", "id")} for h in hs]
              for _, hs in records)  # fmt: skip
    assert h0 == h1
    # no record field holds the selection's size (3 or 4)
    flat = repr(records[0][0]["parameters"])
    assert "'n'" not in flat


def test_substitution_refuses_selections_before_any_charge():
    s = Session(_table("EU"), PureDP(1.0), neighbours="substitution")
    with pytest.raises(ParameterError) as err:
        s.release_statistic(
            "mean", epsilon=0.5, bounds=(0, 10), sql="SELECT price FROM data WHERE region = 'EU'"
        )
    assert err.value.parameter == "neighbours" and "private" in str(err.value)
    with pytest.raises(ParameterError):
        s.release_statistic("mean", "price", epsilon=0.5, bounds=(0, 10), drop_missing=True)
    assert s.history() == [] and s.remaining.epsilon == 1.0
    # the whole table under substitution: n is public and used
    r = s.release_statistic("mean", "price", epsilon=0.5, bounds=(0, 10), rng=simulation(0))
    assert r.parameters["neighbours"] == "substitution"
    assert r.parameters["global_sensitivity"] == pytest.approx(10 / 6, abs=1e-12)


def test_session_relation_is_checked_and_shown():
    with pytest.raises(ParameterError) as err:
        Session([1.0], PureDP(1.0), neighbours="edge")
    assert err.value.parameter == "neighbours"
    s = Session([1.0, 2.0], PureDP(1.0))
    assert s.neighbours == "add_remove" and "add_remove" in repr(s)
    r = s.release_statistic("median", epsilon=0.5, bounds=(0, 4), rng=simulation(0))
    assert r.mechanism == "exponential_quantile" and r.parameters["neighbours"] == "add_remove"


def test_session_refuses_a_mechanism_of_another_relation_before_the_charge():
    from instancedp.mechanisms import LaplaceMechanism
    from instancedp.queries import Mean

    s = Session([1.0, 2.0, 3.0], PureDP(1.0))  # add/remove
    with pytest.raises(ParameterError) as err:
        s.release(LaplaceMechanism(Mean(0, 4, "substitution", n=3), 0.5), rng=simulation(0))
    assert err.value.parameter == "neighbours"
    sub = Session([1.0, 2.0, 3.0], PureDP(1.0), neighbours="substitution")
    with pytest.raises(ParameterError):
        sub.release(LaplaceMechanism(Mean(0, 4), 0.5), rng=simulation(0))
    assert s.history() == [] and sub.history() == []
    r = s.release(LaplaceMechanism(Mean(0, 4), 0.5), rng=simulation(0))
    assert r.parameters["neighbours"] == "add_remove"
