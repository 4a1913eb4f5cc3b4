"""Private describe(): declared numeric columns, one charge of exactly ε, the
stated split, the DataFrame/JSON/table outputs, and what a neighbouring table
changes in what the caller sees (only the values)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from cli_support import assert_bad, cli

from instancedp import Session
from instancedp.describe import STATISTICS
from instancedp.errors import ParameterError, SchemaError
from instancedp.privacy import PureDP
from instancedp.random import simulation

RNG = np.random.default_rng(0)
DF = pd.DataFrame({
    "age": RNG.integers(18, 90, 400),
    "income": RNG.lognormal(10, 1, 400),
    "name": ["x"] * 400,
})  # fmt: skip


@pytest.mark.parametrize("bounds", [None, {"age": (0, 120)}, {"age": (0, 120),
                                                               "income": (0, 1e6)}])
def test_one_charge_of_exactly_epsilon_and_the_stated_split(bounds):
    s = Session(DF, PureDP(10.0))
    r = s.describe(2.0, bounds=bounds, rng=simulation(1))
    hist = s.history()
    assert len(hist) == 1 and hist[0]["mechanism"] == "describe"
    assert float(s.spent.epsilon) == 2.0
    p = r.parameters
    assert p["columns"] == ["age", "income"]  # declared numeric; 'name' is text
    assert p["split"]["per_column"] * len(p["columns"]) == pytest.approx(2.0)
    assert sum(p["split"]["within_column"].values()) == 1.0
    for col in p["columns"]:
        mech = p["mechanisms"][col]["quantiles"]
        if bounds and col in bounds:
            assert mech == "recursive_quantiles"
        else:  # the bound-free range step, then the outer quantiles on its halves
            assert mech.startswith("loglog_quantile") and "recursive_quantiles" in mech
            free = p["split"]["within_column_bound_free"]
            assert set(free) == {"location", "spread", "quantiles", "intervals", "sum",
                                 "count"}
            assert sum(free.values()) == pytest.approx(1.0, abs=1e-12)
    frame = r.to_frame()
    assert list(frame.index) == list(STATISTICS)
    assert list(frame.columns.get_level_values(0).unique()) == ["age", "income"]
    for col in ["age", "income"]:
        qs = frame.loc[["p5", "p25", "p50", "p75", "p95"], (col, "value")].to_numpy()
        assert np.all(np.diff(qs) >= 0)
        lo, hi = frame[(col, "lower")].to_numpy(), frame[(col, "upper")].to_numpy()
        assert np.all(lo <= hi)
    json.dumps(r.to_dict(), allow_nan=False)  # the record is strict JSON


def test_accuracy_with_bounds_seeded():
    x = pd.DataFrame({"v": np.random.default_rng(1).uniform(0, 100, 20000)})
    r = Session(x, PureDP(10.0)).describe(4.0, bounds={"v": (0, 100)}, rng=simulation(2))
    row = r.rows[0]
    assert abs(row["count"] - 20000) < 100 and abs(row["mean"] - 50) < 1
    for name, q in zip(("p5", "p25", "p50", "p75", "p95"), (5, 25, 50, 75, 95), strict=True):
        assert abs(row[name] - q) < 2, (name, row[name])


def test_no_numeric_column_is_a_schema_error_and_charges_nothing(tmp_path):
    s = Session(pd.DataFrame({"name": ["a", "b"]}), PureDP(1.0))
    with pytest.raises(SchemaError, match="no numeric column"):
        s.describe(1.0)
    assert s.history() == []
    f = tmp_path / "text.parquet"
    pd.DataFrame({"name": ["a", "b"], "city": ["x", "y"]}).to_parquet(f)
    led = tmp_path / "l.db"
    r = cli("describe", f, "--epsilon", "1", "--owner", "--ledger", led, "--budget-epsilon", "1")
    assert_bad(r, "no numeric column")
    assert not led.exists()  # a ledger this command created is removed: nothing charged


def test_declared_types_decide_and_columns_are_checked():
    s = Session(DF, PureDP(10.0))
    with pytest.raises(ParameterError, match="not a number") as exc:
        s.describe(1.0, columns=["name"])
    assert exc.value.parameter == "columns"
    with pytest.raises(SchemaError, match="unknown column"):
        s.describe(1.0, columns=["agee"])
    with pytest.raises(ParameterError) as exc:
        s.describe(1.0, bounds={"name": (0, 1)})
    assert exc.value.parameter == "bounds"
    with pytest.raises(ParameterError) as exc:
        s.describe(1.0, bounds={"age": (5, 1)})
    assert exc.value.parameter == "bounds"
    with pytest.raises(ParameterError) as exc:
        s.describe(0.0)
    assert exc.value.parameter == "epsilon"
    assert s.history() == []
    r = s.describe(1.0, columns=["income"], rng=simulation(0))
    assert r.parameters["columns"] == ["income"]


def test_substitution_is_refused_before_any_charge():
    s = Session(DF, PureDP(10.0), neighbours="substitution")
    with pytest.raises(ParameterError, match="selects rows") as exc:
        s.describe(1.0)
    assert exc.value.parameter == "neighbours" and s.history() == []


# (rows of the smaller table, the added row): sizes 0, 1, 2; values at the bounds; all
# equal; huge, subnormal, missing and non-numeric rows
PAIRS = [([], "100"), (["5"], "5"), (["0", "100"], "1e308"), (["3", "3"], "5e-324"),
         ([], "NA"), (["7"], "abc")]  # fmt: skip


def _seen(tmp_path, rows, tag, bounds):
    f = tmp_path / f"{tag}.csv"
    f.write_text("v,w\n" + "".join(f"{r},{r}\n" for r in rows))
    led = tmp_path / f"{tag}.db"
    Session(None, PureDP(100.0), ledger=led).close()
    with Session(f, ledger=led, analyst=True) as s:
        r = s.describe(1.0, bounds=bounds, rng=simulation(3))
        hist = s.history()
    rows_keys = [sorted(row) for row in r.rows]
    return r.parameters, rows_keys, [(h["mechanism"], h["guarantee"], h["status"]) for h in hist]


@pytest.mark.parametrize("bounds", [None, {"v": (0, 100)}])
def test_neighbours_change_only_the_values(tmp_path, bounds):
    for i, (rows, added) in enumerate(PAIRS):
        a = _seen(tmp_path, rows, f"a{i}", bounds)
        b = _seen(tmp_path, rows + [added], f"b{i}", bounds)
        assert a == b, (rows, added)
        assert a[0]["columns"] == ["v", "w"]  # a CSV: every header column, cast


def test_cli_table_json_and_bounds(tmp_path):
    f = tmp_path / "t.parquet"
    DF.to_parquet(f)
    r = cli("describe", f, "--epsilon", "1", "--owner", "--seed", "1")
    assert r.returncode == 0, r.stderr
    for needle in ("age", "income", "p95", "0.5 per column", "one ledger charge"):
        assert needle in r.stdout
    assert "name" not in r.stdout.split("split")[0]
    r = cli("describe", f, "--epsilon", "1", "--owner", "--seed", "1", "--json",
            "--columns", "age", "income", "--bounds", "age=0:120", "income=0:1e6")
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["parameters"]["bounds"] == {"age": [0.0, 120.0], "income": [0.0, 1e6]}
    assert [row["column"] for row in rec["statistics"]] == ["age", "income"]
    assert_bad(cli("describe", f, "--epsilon", "1", "--owner", "--bounds", "age=0-120"),
               "COLUMN=LO:HI")
    assert_bad(cli("describe", f, "--epsilon", "1"), "--ledger")  # analyst mode by default


# -- error bars ------------------------------------------------------------------------


def _column(x, bounds, level=0.9, eps=2.0):
    """(plan, shares) of one column as describe builds them, at ε for the column."""
    from instancedp.describe import column_plan, column_split

    shares = {k: v * eps for k, v in column_split(bounds is not None, level).items()}
    return column_plan(bounds, shares, "add_remove"), shares


@pytest.mark.parametrize("bounds", [(0.0, 100.0), None])
@pytest.mark.parametrize("cell", ["normal", "ties", "one_row", "empty"])
def test_error_bars_cover_what_they_state(bounds, cell):
    """Coverage of every statistic's error bar over 60 seeded draws of a column's
    release (describe's own code): misses ≤ the Binomial(60, 0.1) 1 − 10⁻⁴ quantile
    (15), false-failure rate ≤ 10⁻⁴ per (cell, statistic).  Truths: the count; the
    mean of the rows clamped to the bounds (or to the released range R, from the
    record); the quantiles x_(⌈qn⌉) of the rows (clamped to the bounds)."""
    import math

    from scipy.stats import binom

    from instancedp.describe import LEVELS, QUANTILE_NAMES, column_release
    from instancedp.mechanisms.sum_count import NoisySumOverCount

    rng = np.random.default_rng(5)
    x = {"normal": np.clip(rng.normal(50, 10, 600), 0, 100),
         "ties": rng.poisson(3, 600).astype(float), "one_row": np.array([42.0]),
         "empty": np.empty(0)}[cell]
    x = np.sort(x)
    plan, shares = _column(x, bounds)
    limit = int(binom.ppf(1 - 1e-4, 60, 0.1))
    miss = dict.fromkeys(["count", "mean", *QUANTILE_NAMES], 0)
    source = simulation(17)
    for _ in range(60):
        row, _ = column_release(x, "v", plan, shares, source, NoisySumOverCount, 0.9)
        ci = row["ci"]
        lo, hi = bounds or row["mean_clamp"]
        truths = {"count": x.size}
        if x.size:
            truths["mean"] = float(np.clip(x, lo, hi).mean())
            xs = np.sort(np.clip(x, *bounds)) if bounds else x
            for name, q in zip(QUANTILE_NAMES, LEVELS, strict=True):
                truths[name] = float(xs[max(math.ceil(q * x.size), 1) - 1])
        for k, v in truths.items():
            miss[k] += not (ci[k][0] <= v <= ci[k][1])
    assert all(v <= limit for v in miss.values()), miss


def test_ci_none_keeps_the_plain_split_and_bad_levels_are_refused():
    s = Session(DF, PureDP(10.0))
    with pytest.raises(ParameterError) as exc:
        s.describe(1.0, ci=1.2)
    assert exc.value.parameter == "ci" and s.history() == []
    r = s.describe(1.0, ci=None, rng=simulation(0))
    assert r.parameters["split"]["within_column"] == {"quantiles": 0.5, "sum": 0.25,
                                                      "count": 0.25}
    assert not r.has_ci and "intervals" not in r.parameters
    assert list(r.to_frame().columns) == ["age", "income"]
    r = s.describe(1.0, rng=simulation(0))
    assert r.has_ci and r.parameters["intervals"]["level"] == 0.95
    assert set(r.parameters["intervals"]["covers"]) == {"count", "mean", "quantiles"}
    assert len(s.history()) == 2 and float(s.spent.epsilon) == 2.0


def test_cli_shows_error_bars_and_split(tmp_path):
    f = tmp_path / "t.parquet"
    DF.to_parquet(f)
    r = cli("describe", f, "--epsilon", "1", "--owner", "--seed", "1", "--ci", "0.9")
    assert r.returncode == 0, r.stderr
    for needle in ("90% ci", "0.1 intervals", "mean covers", "one ledger charge"):
        assert needle in r.stdout, needle
    r = cli("describe", f, "--epsilon", "1", "--owner", "--seed", "1", "--json")
    rec = json.loads(r.stdout)
    income = rec["statistics"][1]["ci"]
    assert income["p5"][0] is None and income["p95"][1] is None  # open ends: null
    r = cli("describe", f, "--epsilon", "1", "--owner", "--seed", "1", "--ci", "0")
    assert "ci" not in r.stdout.split("split")[0]


def test_same_record_from_memory_csv_and_parquet(tmp_path):
    """The column is read the same way from every input (one column at a time,
    missing dropped): the same seed gives the same statistics and error bars."""
    rng = np.random.default_rng(8)
    df = pd.DataFrame({"a": rng.normal(10, 2, 300).round(6), "b": rng.integers(0, 50, 300)})
    df.to_csv(tmp_path / "t.csv", index=False)
    df.to_parquet(tmp_path / "t.parquet")
    seen = []
    for data in (df, tmp_path / "t.csv", tmp_path / "t.parquet"):
        s = Session(data, PureDP(10.0))
        r = s.describe(1.0, columns=["a", "b"], bounds={"a": (0, 20)}, rng=simulation(4))
        seen.append(json.dumps(r.to_dict()["statistics"], sort_keys=True))
    assert seen[0] == seen[1] == seen[2]
