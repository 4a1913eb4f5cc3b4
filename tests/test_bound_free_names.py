"""The bound-free medians and quantiles by name: one list of names (the registry's,
``registry.bound_free_keys``) taken in memory (``recipes.build_mechanism``, the
Session, the CLI) and out of core (``sources.out_of_core_mechanism``), the same
record bytes from both paths for the same seed, and the same refusals (a bounded
mechanism named without bounds; a bound-free one named with bounds or a resolution;
a bound-free name for another statistic), each naming its parameter."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from backend_cases import CASES, as_array, parquet_file
from cli_support import cli

from instancedp import Session, intervals, registry
from instancedp.backends import open_source
from instancedp.errors import ParameterError
from instancedp.privacy import PureDP
from instancedp.random import simulation
from instancedp.recipes import build_mechanism
from instancedp.sources import out_of_core_mechanism, release_from_source

FREE = ("unbounded_quantile", "loglog_quantile")
#: the requests (statistic, options) every path is checked on
LEVELS = (("median", {}), ("quantile", {"quantile": 0.9}))


def _json(release) -> str:
    return json.dumps(release.to_dict(), sort_keys=True)


def test_the_registry_is_the_one_list_of_bound_free_names():
    """The names are the registry's classes that say ``bounds_free``; both paths build
    each of them, under its key and its hyphenated spelling, at both levels."""
    assert registry.bound_free_keys("median") == list(FREE)
    assert registry.bound_free_keys("quantile") == list(FREE)
    assert registry.bound_free_keys("mean") == []
    for key in FREE:
        for spelling in (key, key.replace("_", "-"), key.upper()):
            for stat, opts in LEVELS:
                for rel in ("add_remove", "substitution"):
                    m = build_mechanism(stat, 1.0, mechanism=spelling, neighbours=rel, **opts)
                    o = out_of_core_mechanism(stat, 1.0, mechanism=spelling, neighbours=rel,
                                              **opts)
                    assert m.name == o.name == key
                    assert m.parameters() == o.parameters()
                    assert m.parameters()["q"] == (0.5 if stat == "median" else 0.9)
                    assert m.parameters()["neighbours"] == rel


def test_no_mechanism_and_the_scan_by_name_are_the_same_release():
    x = np.random.default_rng(1).normal(50, 10, 300)
    for stat, opts in LEVELS:
        default = build_mechanism(stat, 1.0, **opts)
        named = build_mechanism(stat, 1.0, mechanism="unbounded_quantile", **opts)
        assert default.name == "unbounded_quantile"
        assert _json(default.release(x, simulation(3))) == _json(named.release(x, simulation(3)))


def test_session_in_memory_releases_each_name():
    """The in-memory Session took only the bounded names before; the record names the
    mechanism asked for, with no bounds, charged ε."""
    x = np.random.default_rng(1).normal(50, 10, 500)
    s = Session(x, PureDP(10.0))
    for key in FREE:
        r = s.release_statistic("median", epsilon=1.0, bounds=None, mechanism=key,
                                rng=simulation(2))
        assert r.mechanism == key and r.parameters["bounds"] is None
        assert 30 < r.value < 70  # n·ε = 500: well inside the data
    assert float(s.spent.epsilon) == 2.0


@pytest.mark.parametrize("bounded", ["exponential", "exponential_quantile", "smooth",
                                     "laplace", "tie-adaptive", "inverse_sensitivity"])
def test_a_bounded_mechanism_named_without_bounds_is_refused_naming_bounds(bounded):
    """In memory, and out of core for the names offered there (the exponential
    mechanism; the others are not available out of core at all: ``mechanism``)."""
    out_of_core = ("exponential", "exponential_quantile")
    for stat, opts in LEVELS:
        for build in (build_mechanism, out_of_core_mechanism):
            with pytest.raises(ParameterError) as e:
                build(stat, 1.0, mechanism=bounded, **opts)
            offered = bounded != "inverse_sensitivity" and (
                build is build_mechanism or bounded in out_of_core)
            assert e.value.parameter == ("bounds" if offered else "mechanism"), (bounded, build)
            if build is build_mechanism:  # the message offers the bound-free names
                assert all(k.replace("_", "-") in str(e.value).replace("_", "-") for k in FREE)


@pytest.mark.parametrize("key", FREE)
def test_a_bound_free_name_with_bounds_or_resolution_is_refused_on_both_paths(key):
    for build in (build_mechanism, out_of_core_mechanism):
        for stat, opts in LEVELS:
            for extra, parameter in (({"bounds": (0.0, 1.0)}, "bounds"),
                                     ({"resolution": 1.0}, "resolution"),
                                     ({"bounds": (0.0, 10.0), "resolution": 1.0}, "bounds")):
                with pytest.raises(ParameterError) as e:
                    build(stat, 1.0, mechanism=key, **opts, **extra)
                assert e.value.parameter == parameter and key in str(e.value)


@pytest.mark.parametrize("key", FREE)
def test_a_bound_free_name_refuses_other_statistics_and_stray_options(key):
    for stat, opts in (("mean", {"bounds": (0, 1)}), ("count", {}), ("min", {"bounds": (0, 1)})):
        with pytest.raises(ParameterError) as e:
            build_mechanism(stat, 1.0, mechanism=key, **opts)
        assert e.value.parameter == "mechanism"
    for option, value in (("noise", "cauchy"), ("gamma", 0.1), ("ptr_bound", 1.0),
                          ("trim", 0.1), ("vertices", 5)):
        with pytest.raises(ParameterError) as e:
            build_mechanism("median", 1.0, mechanism=key, **{option: value})
        assert e.value.parameter == option
    with pytest.raises(ParameterError) as e:  # the level is still required and checked
        build_mechanism("quantile", 1.0, mechanism=key)
    assert e.value.parameter == "quantile"
    with pytest.raises(ParameterError) as e:
        build_mechanism("quantile", 1.0, mechanism=key, quantile=1.0)
    assert e.value.parameter == "quantile"
    with pytest.raises(ParameterError) as e:
        build_mechanism("median", 1.0, mechanism=key, quantile=0.3)
    assert e.value.parameter == "quantile"


# ±inf rows are refused in memory (owner mode) and dropped by the analyst policy
NAMES = sorted(set(CASES) - {"infinite"})


@pytest.mark.parametrize("name", NAMES)
def test_loglog_by_name_gives_one_record_in_memory_numpy_and_duckdb(tmp_path, name):
    """Adversarial columns (sizes 0–2, all equal, signed zeros, subnormal and huge
    values, ties): the named one-step quantile's record from an array equals the
    one the numpy source and DuckDB (Parquet) give out of core, seed for seed."""
    x = as_array(name)
    clean = x[~np.isnan(x)]
    with open_source(parquet_file(tmp_path, name)) as duck:
        for stat, opts in LEVELS:
            want = _json(build_mechanism(stat, 0.5, mechanism="loglog_quantile", **opts)
                         .release(clean, simulation(9)))
            mech = out_of_core_mechanism(stat, 0.5, mechanism="loglog_quantile", **opts)
            got = [_json(release_from_source(mech, src, col, simulation(9)))
                   for src, col in ((open_source(x), None), (duck, "v"))]
            assert got == [want, want]


def test_session_on_parquet_and_csv_by_name_give_the_array_record(tmp_path):
    """The Session by name: an array (in memory), a CSV file (read into memory) and a
    Parquet file (DuckDB, out of core) give the same record bytes."""
    x = np.round(np.random.default_rng(3).lognormal(4.0, 1.0, 300), 2)
    (tmp_path / "t.csv").write_text("v\n" + "\n".join(repr(float(v)) for v in x) + "\n")
    pd.DataFrame({"v": x}).to_parquet(tmp_path / "t.parquet")
    got = []
    for data in (x, str(tmp_path / "t.csv"), str(tmp_path / "t.parquet")):
        with Session(data, PureDP(5.0)) as s:
            got.append([_json(s.release_statistic(stat, None if data is x else "v",
                                                  epsilon=0.5, mechanism=key,
                                                  rng=simulation(4), **opts))
                        for key in FREE for stat, opts in LEVELS])
    assert got[0] == got[1] == got[2]
    assert [json.loads(r)["mechanism"] for r in got[0]] == [k for k in FREE for _ in LEVELS]


def test_sqlite_by_name_gives_the_array_record(tmp_path):
    from backend_cases import sqlite_file

    x = as_array("random")
    with Session(sqlite_file(tmp_path, "random"), PureDP(5.0), table="t") as s:
        got = [_json(s.release_statistic("median", "v", epsilon=0.5, mechanism=key,
                                         rng=simulation(6))) for key in FREE]
    want = [_json(build_mechanism("median", 0.5, mechanism=key).release(x, simulation(6)))
            for key in FREE]
    assert got == want


@pytest.mark.parametrize("size", [0, 1, 2])
def test_analyst_mode_by_name_is_total_on_tiny_tables(tmp_path, size):
    """What the analyst sees (the mechanism, a finite value, the charge) does not
    depend on whether the table has 0, 1 or 2 rows."""
    f = tmp_path / "v.csv"
    pd.DataFrame({"v": [7.0, -3.0][:size]}).to_csv(f, index=False)
    Session(None, PureDP(5.0), ledger=tmp_path / "l.db").close()
    with Session(str(f), ledger=tmp_path / "l.db", analyst=True) as s:
        for key in FREE:
            r = s.release_statistic("median", "v", epsilon=1.0, mechanism=key,
                                    rng=simulation(3))
            assert r.mechanism == key and np.isfinite(r.value)
        assert float(s.spent.epsilon) == 2.0


def test_ci_with_the_one_step_median_in_memory():
    """``ci=`` with the named one-step median: the bound-free interval family (the two
    rank scans on a range around the value, ¼ ε), one charge of ε, the value inside."""
    x = np.random.default_rng(1).normal(50, 10, 500)
    s = Session(x, PureDP(10.0))
    r = s.release_statistic("median", epsilon=1.0, mechanism="loglog_quantile", ci=0.9,
                            rng=simulation(5))
    assert r.mechanism == "loglog_quantile" and r.ci.method == intervals.QUANTILE
    assert r.parameters["interval"]["epsilon"] == 0.25
    assert r.ci.lower <= r.value <= r.ci.upper and r.ci.upper - r.ci.lower < 40
    lo, hi = r.ci.parameters["range"]
    assert lo < r.value < hi
    assert float(s.spent.epsilon) == 1.0
    q = s.release_statistic("quantile", quantile=0.9, epsilon=1.0,
                            mechanism="loglog_quantile", ci=0.9, rng=simulation(5))
    assert q.mechanism == "loglog_quantile" and q.ci.lower <= q.value <= q.ci.upper


def test_cli_takes_the_bound_free_names(tmp_path):
    f = tmp_path / "v.csv"
    pd.DataFrame({"v": np.random.default_rng(0).normal(50, 10, 400)}).to_csv(f, index=False)
    for key in FREE:
        r = cli("release", str(f), "--column", "v", "--statistic", "median", "--epsilon",
                "1", "--mechanism", key, "--owner", "--seed", "1", "--json")
        assert r.returncode == 0, r.stderr
        rec = json.loads(r.stdout)
        assert rec["mechanism"] == key and rec["parameters"]["bounds"] is None
    r = cli("release", str(f), "--column", "v", "--statistic", "median", "--epsilon", "1",
            "--mechanism", "loglog_quantile", "--bounds", "0", "100", "--owner")
    assert r.returncode == 2 and "loglog_quantile" in r.stderr and "--bounds" in r.stderr


def test_parquet_by_name_stays_out_of_core(tmp_path):
    """Public rule: a Parquet file's bound-free median by name goes through DuckDB like the
    unnamed default (not read into memory); a bounded mechanism by name is read."""
    pd.DataFrame({"v": [1.0, 2.0]}).to_parquet(tmp_path / "t.parquet")
    with Session(str(tmp_path / "t.parquet"), PureDP(1.0)) as s:
        for key in (None, *FREE):
            assert s._statistic_out_of_core("median", sql=None, rel="add_remove",
                                            options={"mechanism": key, "bounds": None})
        assert not s._statistic_out_of_core("median", sql=None, rel="add_remove",
                                            options={"mechanism": "smooth", "bounds": (0, 1)})
