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
from instancedp.describe import STATISTICS, DescribeResult, part_ci
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
        else:  # bound-free outer pair, then the quartiles on the released range
            assert mech.startswith("unbounded_quantiles") and "recursive_quantiles" in mech
    frame = r.to_frame()
    assert list(frame.index) == list(STATISTICS) and list(frame.columns) == ["age", "income"]
    for col in frame.columns:
        qs = frame.loc[["p5", "p25", "p50", "p75", "p95"], col].to_numpy()
        assert np.all(np.diff(qs) >= 0)
    json.dumps(r.to_dict())  # the record is JSON


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


def test_ci_hook_reads_release_ci():
    class WithCI:
        ci = (1.0, 2.0)

    assert part_ci(WithCI()) == (1.0, 2.0) and part_ci(object()) is None
    rows = [{"column": "v", **{k: 1.0 for k in STATISTICS}, "ci": {"quantiles": (0, 1)}}]
    assert DescribeResult(rows, PureDP(1.0), {}).has_ci


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
