"""Analyst mode: nothing the caller sees depends on the rows except the charged release.

Each case runs on two neighbouring tables (one row added or removed) and
compares everything the caller sees — the exception type and message, or the
record without its value, the exit code and stderr — which must be identical.
"""

from __future__ import annotations

import contextlib
import io as _stdio

import pytest

from instancedp import PureDP, Session
from instancedp.cli import main
from instancedp.errors import BudgetExceeded, ParameterError
from instancedp.random import simulation

BASE = "name,region,salary\nbob,EU,100\nann,US,200\n"
EXTRA = "eve,XX,150000\n"  # the added row: the only one in region XX, and a huge salary

# The five cases of the end-to-end review: (statistic, sql)
CASES = {
    "empty selection vs one row": ("median", "SELECT CAST(salary AS DOUBLE) FROM data WHERE region = 'XX'"),  # noqa: E501
    "missing values": ("mean", "SELECT CASE WHEN region = 'XX' THEN NULL ELSE TRY_CAST(salary AS DOUBLE) END FROM data"),  # noqa: E501
    "runtime error echo": ("count", "SELECT error((SELECT string_agg(name || '=' || salary, ' ') FROM data)) FROM data"),  # noqa: E501
    "CASE THEN NULL predicate": ("count", "SELECT 1 FROM data WHERE CASE WHEN name = 'eve' THEN NULL ELSE true END"),  # noqa: E501
    "cast that fails on one row": ("sum", "SELECT CAST(name AS DOUBLE) FROM data WHERE region = 'XX'"),  # noqa: E501
}  # fmt: skip


def _tables(tmp_path):
    out = []
    for i, text in enumerate((BASE, BASE + EXTRA)):
        f = tmp_path / f"t{i}.csv"
        f.write_text(text)
        led = tmp_path / f"l{i}.db"
        Session(None, PureDP(1.0), ledger=led).close()  # the owner sets the budget
        out.append((f, led))
    return out


def _python_outcome(f, led, statistic, sql, epsilon):
    try:
        with Session(f, ledger=led, analyst=True) as s:
            r = s.release_statistic(
                statistic, sql=sql, epsilon=epsilon, bounds=(0, 1000), rng=simulation(0)
            )
            d = r.to_dict()
            d.pop("value")
            return ("ok", d, s.remaining.describe())
    except Exception as exc:  # noqa: BLE001 - the outcome is what we compare
        return (type(exc).__name__, str(exc).replace(str(f), "FILE"))


def _cli_outcome(f, led, statistic, sql, epsilon):
    out, err = _stdio.StringIO(), _stdio.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["release", str(f), "--sql", sql, "--statistic", statistic, "--epsilon",
                  str(epsilon), "--bounds", "0", "1000", "--ledger", str(led), "--seed", "0",
                  "--json"])  # fmt: skip
        except SystemExit as e:
            code = e.code or 0
    text = out.getvalue().replace(str(led), "LEDGER")
    lines = [x for x in text.splitlines() if '"value"' not in x]
    return code, lines, err.getvalue().replace(str(f), "FILE")


@pytest.mark.parametrize("case", sorted(CASES))
def test_five_cases_identical_for_neighbours_python(tmp_path, case):
    statistic, sql = CASES[case]
    (f0, l0), (f1, l1) = _tables(tmp_path)
    for eps in (0.6, 0.6):  # the second 0.6 does not fit the budget of 1: exhausted
        a = _python_outcome(f0, l0, statistic, sql, eps)
        b = _python_outcome(f1, l1, statistic, sql, eps)
        assert a == b, (case, a, b)


@pytest.mark.parametrize("case", sorted(CASES))
def test_five_cases_identical_for_neighbours_cli(tmp_path, case):
    statistic, sql = CASES[case]
    (f0, l0), (f1, l1) = _tables(tmp_path)
    codes = []
    for eps in (0.6, 0.6):
        a = _cli_outcome(f0, l0, statistic, sql, eps)
        b = _cli_outcome(f1, l1, statistic, sql, eps)
        assert a == b, (case, a, b)
        codes.append(a[0])
    # refused from its text (2), or released then exhausted (0 then 3)
    assert codes in ([2, 2], [0, 3]), codes


def test_refused_sql_charges_nothing_and_budget_check_comes_first(tmp_path):
    (f0, l0), _ = _tables(tmp_path)
    with Session(f0, ledger=l0, analyst=True) as s:
        for sql in ("SELECT salary FROM data LIMIT 1", "SELECT sum(salary) FROM data",
                    "SELECT random() FROM data", "SELECT salary FROM 'other.csv'",
                    "SELECT s FROM data, other", "SELECT salary FROM data ORDER BY salary"):  # noqa: E501  # fmt: skip
            with pytest.raises(ParameterError, match="SQL not accepted"):
                s.release_statistic("count", sql=sql, epsilon=0.1)
        assert s.spent.describe() == "epsilon=0"
        with pytest.raises(BudgetExceeded):
            s.release_statistic("count", sql="SELECT 1 FROM data", epsilon=5)


def _owner_ledger(tmp_path):
    led = tmp_path / "owner.db"
    Session(None, PureDP(1.0), ledger=led).close()
    return led


def test_analyst_mode_never_creates_a_ledger_or_budget(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text(BASE)
    with pytest.raises(ParameterError, match="ledger"):
        Session(f, analyst=True)
    with pytest.raises(ParameterError, match="budget"):
        Session(f, PureDP(1), ledger=tmp_path / "x.db", analyst=True)
    with Session(f, ledger=_owner_ledger(tmp_path), analyst=True) as s:
        with pytest.raises(ParameterError, match="returns the rows"):
            s.column("salary")
        with pytest.raises(ParameterError, match="returns the rows"):
            s.graph(3)
    with pytest.raises(Exception):  # noqa: B017 - a missing ledger is not created
        Session(f, ledger=tmp_path / "x.db", analyst=True)
    assert not (tmp_path / "x.db").exists()


# -- every statistic, adversarial neighbours: the record differs only in its value --
STATS = {
    "median": {}, "quantile": {"quantile": 0.9}, "mean": {}, "count": {},
    "sum": {}, "min": {}, "max": {}, "ratio": {}, "trimmed-mean": {"trim": 0.25},
}  # fmt: skip
# (rows of the smaller table, the added row): sizes 0, 1, 2; values at the bounds; all
# equal; huge, subnormal, missing and non-numeric rows entering the selection.
PAIRS = [
    ([], "1000"), (["5"], "5"), (["0", "1000"], "1e308"), (["3", "3"], "5e-324"),
    ([], "NA"), (["7"], "abc"),
]  # fmt: skip


def _record(tmp_path, rows, statistic, options, tag):
    f = tmp_path / f"{tag}.csv"
    f.write_text("v,keep\n" + "".join(f"{r},1\n" for r in rows))
    led = tmp_path / f"{tag}.db"
    if not led.exists():
        Session(None, PureDP(100.0), ledger=led).close()
    with Session(f, ledger=led, analyst=True) as s:
        bounds = None if statistic in ("count", "ratio") else (0, 1000)
        extra = {"bounds": bounds} if bounds else {}
        r = s.release_statistic(
            statistic, sql="SELECT v FROM data WHERE keep = '1'", epsilon=1.0, delta=None,
            rng=simulation(3), **extra, **options,
        )  # fmt: skip
    d = r.to_dict()
    value = d.pop("value")
    assert value is None or isinstance(value, float)
    return d


@pytest.mark.parametrize("statistic", sorted(STATS))
def test_neighbours_give_the_same_record_except_the_value(tmp_path, statistic):
    for i, (rows, added) in enumerate(PAIRS):
        a = _record(tmp_path, rows, statistic, STATS[statistic], f"a{i}")
        b = _record(tmp_path, rows + [added], statistic, STATS[statistic], f"b{i}")
        assert a == b, (statistic, rows, added, a, b)


def test_sandbox_reads_no_other_file_and_is_locked(tmp_path):
    from instancedp.io import AnalystQuery

    f = tmp_path / "t.csv"
    f.write_text(BASE)
    other = tmp_path / "other.csv"
    other.write_text("secret\n1\n")
    q = AnalystQuery(f, "salary")
    assert sorted(q.read()) == [100.0, 200.0]
    import duckdb

    with pytest.raises(duckdb.Error):
        q._con.execute(f"SELECT * FROM read_csv('{other}')").fetchall()
    with pytest.raises(duckdb.Error):
        q._con.execute("SET enable_external_access = true")
    with pytest.raises(ParameterError, match="SQL not accepted"):
        AnalystQuery(f, sql=f"SELECT secret FROM read_csv('{other}')")


def test_release_graph_analyst_mode_same_outcome_for_neighbouring_edge_sets(tmp_path):
    """An edge entering the file (or a malformed line) changes only the value."""
    outs = []
    for i, extra in enumerate(("", "2 3\n", "9 99\n", "x y\n")):
        f = tmp_path / f"g{i}.edges"
        f.write_text("0 1\n1 2\n0 2\n" + extra)
        led = tmp_path / f"g{i}.db"
        Session(None, PureDP(1.0), ledger=led).close()
        runs = []
        for _ in range(2):  # the second does not fit: exit 3 before any edge is read
            code, lines, err = _cli_graph(f, led)
            runs.append((code, lines, err.replace(str(f), "FILE")))
        outs.append(runs)
    assert all(o == outs[0] for o in outs), outs
    assert [r[0] for r in outs[0]] == [0, 3]


def _cli_graph(f, led):
    out, err = _stdio.StringIO(), _stdio.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["release-graph", str(f), "--epsilon", "0.6", "--vertices", "4", "--ledger",
                  str(led), "--seed", "0", "--json"])  # fmt: skip
        except SystemExit as e:
            code = e.code or 0
    lines = [x for x in out.getvalue().replace(str(led), "L").splitlines() if '"value"' not in x]
    return code, lines, err.getvalue()


def test_csv_policy_rows_that_cannot_be_read_are_skipped_schema_faults_are_errors(tmp_path):
    from instancedp.errors import SchemaError
    from instancedp.io import AnalystQuery

    f = tmp_path / "bad.csv"
    # a row that is not UTF-8, a row with an extra field, a short row, a quoted number
    f.write_bytes(b'a,b\n1,x\n\xff\xfe2,y\n3,z,extra\n4\n"5",w\nabc,v\n')
    assert sorted(AnalystQuery(f, "a").read()) == [1.0, 4.0, 5.0]
    dup = tmp_path / "dup.csv"
    dup.write_bytes(b"\xef\xbb\xbfa,b,a\n1,2,3\n")
    with pytest.raises(SchemaError, match="repeated column names"):
        AnalystQuery(dup, "a")
    js = tmp_path / "t.json"
    js.write_text('[{"a": 1}]')
    with pytest.raises(SchemaError, match="convert the file to Parquet"):
        AnalystQuery(js, "a")
