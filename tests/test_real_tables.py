"""Regressions found by using the library on real public tables (penguins, cars,
stocks, …) as a data person would: each test is a small synthetic reproduction."""

from __future__ import annotations

import pytest
from cli_support import cli


def test_every_registered_mechanism_is_named_in_words() -> None:
    # the release summary read "mechanism   unbounded quantile" for the bound-free
    # median, with no paper and no record name
    from instancedp import registry
    from instancedp.cli import MECHANISM_IN_WORDS, mechanism_in_words

    for key in registry.keys():
        assert key in MECHANISM_IN_WORDS, key
        assert mechanism_in_words(key).endswith(f"[{key}]")


def test_ratio_summary_names_its_method(tmp_path) -> None:
    p = tmp_path / "flags.csv"
    p.write_text("flag\n" + "\n".join(["1", "0", "1", "1"] * 5) + "\n")
    r = cli("release", p, "--column", "flag", "--statistic", "ratio", "--epsilon", "1",
            "--owner", "--seed", "1", "--mechanism", "naive")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("mechanism"))
    assert "noisy a ÷ noisy b" in line and "[private_ratio, method naive]" in line


def test_ledger_amounts_read_as_the_decimals_typed() -> None:
    # spent 28 × 0.1 printed as 2.8000000000000003 and the remaining 2.2 of 5 as
    # 2.1999999999999997: each the double on the promised side, not the shortest text
    from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

    from instancedp import _validate
    from instancedp.ledger import Amount

    tenth = Decimal(_validate.at_most_decimal(0.1))  # what a release at ε = 0.1 charges
    spent = Amount("pure", epsilon=sum([Decimal("0.5")] * 3 + [tenth] * 13, Decimal(0)))
    left = Amount("pure", epsilon=Decimal(5)) - spent
    assert spent.epsilon < Decimal("2.8") < left.epsilon + Decimal("2.8")
    assert spent.describe(ROUND_CEILING) == "epsilon=2.8"
    assert left.describe(ROUND_FLOOR) == "epsilon=2.2"
    # still on the promised side: a cost never shows less, what remains never more
    third = Amount("pure", epsilon=Decimal(2) / Decimal(3))
    assert Decimal(third.describe(ROUND_CEILING).split("=")[1]) >= third.epsilon
    assert Decimal(third.describe(ROUND_FLOOR).split("=")[1]) <= third.epsilon


def _parquet(path, **columns) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)
    return str(path)


def _spent(ledger) -> str:
    r = cli("ledger", "show", ledger, "--json")
    import json

    return json.loads(r.stdout)["datasets"][0]["spent"]["exact"]["epsilon"]


@pytest.mark.parametrize("by", [None, "g"])
@pytest.mark.parametrize("column,statistic", [("name", "count"), ("day", "median")])
def test_declared_non_numeric_parquet_column_refused_before_the_charge(
    tmp_path, column, statistic, by
) -> None:
    # a Parquet text or date column: the engine's CAST failed after the charge (analyst:
    # "the release failed after its charge", budget gone; owner: an internal error)
    import datetime

    p = _parquet(tmp_path / "t.parquet", name=["a", "b", "c"], x=[1.0, 2.0, 3.0],
                 g=[1, 1, 2], day=[datetime.date(2020, 1, d) for d in (1, 2, 3)])
    ledger = tmp_path / "l.db"
    assert cli("ledger", "init", ledger, "--epsilon", "1").returncode == 0
    extra = ["--by", by, "--keys", tmp_path / "k.txt"] if by else []
    (tmp_path / "k.txt").write_text("1\n2\n")
    for mode in (["--ledger", ledger], ["--owner"]):
        r = cli("release", p, "--column", column, "--statistic", statistic, "--epsilon",
                "0.5", "--bounds", "0", "1", *extra, *mode)
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert f"column {column!r} is declared" in r.stderr and "not a number" in r.stderr
    assert _spent(ledger) == "0"
    ok = cli("release", p, "--column", "x", "--statistic", "count", "--epsilon", "0.5",
             "--ledger", ledger, "--seed", "1")
    assert ok.returncode == 0, ok.stderr


def test_zero_byte_parquet_is_bad_input_not_an_internal_error(tmp_path) -> None:
    p = tmp_path / "empty.parquet"
    p.write_bytes(b"")
    r = cli("release", p, "--column", "x", "--statistic", "count", "--epsilon", "1",
            "--owner")
    assert r.returncode == 2 and "internal error" not in r.stderr, r.stderr
    assert "empty.parquet cannot be read as parquet (0 bytes)" in r.stderr


def test_substitution_with_a_selection_names_the_flag(tmp_path) -> None:
    # read "Use Session(..., --neighbours add-remove)": half Python, half flag
    p = tmp_path / "t.csv"
    p.write_text("x\n1\n\n3\n")
    r = cli("release", p, "--column", "x", "--statistic", "median", "--epsilon", "1",
            "--bounds", "0", "5", "--owner", "--drop-missing", "--neighbours", "substitution")
    assert r.returncode == 2
    assert "Use --neighbours add-remove for releases on a selection" in r.stderr, r.stderr
    assert "Session(" not in r.stderr


def test_group_table_title_and_remaining_line(tmp_path) -> None:
    # the title read "count of None by g" (and wrapped at the table's width); the
    # remaining line gave no total, unlike a single release's
    p = tmp_path / "t.csv"
    p.write_text("g,x\n" + "\n".join(f"{i % 2},{i}" for i in range(10)) + "\n")
    (tmp_path / "k.txt").write_text("0\n1\n")
    ledger = tmp_path / "l.db"
    r = cli("release", p, "--statistic", "count", "--by", "g", "--keys", tmp_path / "k.txt",
            "--epsilon", "0.5", "--owner", "--ledger", ledger, "--budget-epsilon", "1",
            "--seed", "1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].strip() == "count by g"
    line = f"remaining   epsilon=0.5 of epsilon=1 (ledger {ledger}, dataset 'default')\n"
    assert line in r.stdout


def test_boolean_and_nullable_integer_keys_match_on_every_input(tmp_path) -> None:
    # a Parquet BOOLEAN key was read as DuckDB's text 'true', so keys True / 'True'
    # matched no row there (counts ≈ 0) but every row in the frame and the CSV; a
    # pandas Int64 key with NA became 2007.0, so the text key '2007' matched nothing
    import pandas as pd

    from instancedp import PureDP, Session
    from instancedp.random import simulation

    df = pd.DataFrame({
        "flag": [True, False, True, True, False, True],
        "year": pd.array([2007, 2008, None, 2007, 2008, 2007], dtype="Int64"),
        "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    })
    pq_path, csv_path = tmp_path / "t.parquet", tmp_path / "t.csv"
    df.to_parquet(pq_path)
    df.to_csv(csv_path, index=False)

    def counts(data, by, keys):
        s = Session(data, PureDP(40), drop_missing=True)
        r = s.release_statistic("count,mean", "x", by=by, keys=keys, epsilon=40,
                                bounds=(0, 10), rng=simulation(3))
        return r.to_pandas()[["count", "mean"]].to_numpy().tolist()

    for by, keys, true in (("flag", [True, False], [4, 2]), ("flag", ["True", "False"], [4, 2]),
                           ("year", ["2007", "2008"], [3, 2]), ("year", [2007, 2008], [3, 2])):
        got = [counts(d, by, keys) for d in (df, str(pq_path), str(csv_path))]
        assert got[0] == got[1] == got[2], (by, keys, got)
        # the rows were found: a count's Laplace noise at ε = 20 is below 1 with
        # probability 1 − e^{-20} each (the seed is fixed: the check is deterministic)
        assert all(abs(c - t) < 1 for (c, _), t in zip(got[0], true, strict=True)), got[0]


def test_parquet_text_column_refused_in_analyst_mode_on_the_in_memory_path(tmp_path) -> None:
    # with --ci (read into memory) a Parquet VARCHAR column was charged and released
    # as an empty selection: text counted as numeric for every source, not only CSV
    p = _parquet(tmp_path / "t.parquet", name=["a", "b", "c"], x=[1.0, 2.0, 3.0])
    ledger = tmp_path / "l.db"
    assert cli("ledger", "init", ledger, "--epsilon", "1").returncode == 0
    r = cli("release", p, "--column", "name", "--statistic", "median", "--epsilon", "0.5",
            "--bounds", "0", "1", "--ci", "0.9", "--ledger", ledger)
    assert r.returncode == 2 and "type VARCHAR, which is not numeric" in r.stderr, r.stderr
    assert _spent(ledger) == "0"


def test_budget_refusal_shows_the_decimals_typed(tmp_path) -> None:
    # "needs epsilon=0.09999999999999999": the double just below 0.1 that the release
    # runs at, where the user typed 0.1
    p = tmp_path / "t.csv"
    p.write_text("x\n1\n2\n")
    ledger = tmp_path / "l.db"
    assert cli("ledger", "init", ledger, "--epsilon", "0.05").returncode == 0
    r = cli("release", p, "--column", "x", "--statistic", "count", "--epsilon", "0.1",
            "--ledger", ledger)
    assert r.returncode == 3
    assert "needs epsilon=0.1 but only epsilon=0.05 remains" in r.stderr, r.stderr


def test_sum_bounds_whose_rounding_slack_overflows_name_the_bounds(tmp_path) -> None:
    # bounds (0, 1e308) passed the width check, then failed deep in the Laplace
    # mechanism with "query global sensitivity must be finite … got inf" (no parameter)
    import sys

    from instancedp.errors import ParameterError
    from instancedp.mechanisms import LaplaceMechanism
    from instancedp.queries import Sum

    with pytest.raises(ParameterError, match="at most 4.19e") as err:
        LaplaceMechanism(Sum(0.0, 1e308), 1.0)
    assert err.value.parameter == "bounds"
    most = sys.float_info.max / Sum.MAX_ROWS
    assert LaplaceMechanism(Sum(-most, most), 1.0).sensitivity < float("inf")
    p = tmp_path / "t.csv"
    p.write_text("x\n1\n2\n")
    r = cli("release", p, "--column", "x", "--statistic", "mean", "--epsilon", "1",
            "--bounds", "0", "1e308", "--owner")
    assert r.returncode == 2 and r.stderr.startswith("error: --bounds: bounds (0.0, 1e+308)")


def test_csv_column_with_inf_as_pandas_writes_it_is_numeric(tmp_path) -> None:
    # pandas writes ±inf as "inf"/"-inf"; DuckDB's sniffer then types the column as
    # text and the owner read "column 'x' is not numeric (type string)"
    p = tmp_path / "t.csv"
    p.write_text("x,name\n1.5,a\ninf,b\n-inf,c\n2.5,d\n")
    r = cli("release", p, "--column", "x", "--statistic", "mean", "--bounds", "0", "5",
            "--epsilon", "1", "--owner")
    assert r.returncode == 2 and "non-finite value(s) (NaN/inf)" in r.stderr, r.stderr
    r = cli("release", p, "--column", "name", "--statistic", "mean", "--bounds", "0", "5",
            "--epsilon", "1", "--owner", "--drop-missing")
    assert r.returncode == 2 and "is not numeric (type string)" in r.stderr, r.stderr


def test_describe_table_folds_instead_of_cutting(tmp_path) -> None:
    # at 100 columns the table printed "bill_len…" and "[-0.5869…": names and error
    # bars cut off
    p = tmp_path / "t.csv"
    p.write_text("a_rather_long_column_name\n" + "\n".join(str(i) for i in range(20)) + "\n")
    r = cli("describe", p, "--epsilon", "1", "--owner", "--seed", "1",
            "--bounds", "a_rather_long_column_name=-1000000:1000000")
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout


def test_analyst_mode_reads_a_gzipped_csv_header(tmp_path) -> None:
    # the header was read as raw bytes: "unknown column 'x' … the columns are \x1f\x8b…"
    import gzip

    p = tmp_path / "t.csv.gz"
    with gzip.open(p, "wt") as fh:
        fh.write("x,y\n1,2\n3,4\n")
    ledger = tmp_path / "l.db"
    assert cli("ledger", "init", ledger, "--epsilon", "1").returncode == 0
    r = cli("release", p, "--column", "x", "--statistic", "mean", "--bounds", "0", "5",
            "--epsilon", "0.5", "--ledger", ledger, "--seed", "1")
    assert r.returncode == 0, r.stderr
    z = tmp_path / "t.csv.zst"
    z.write_bytes(b"\x28\xb5\x2f\xfd")
    r = cli("release", z, "--column", "x", "--statistic", "mean", "--bounds", "0", "5",
            "--epsilon", "0.5", "--ledger", ledger)
    assert r.returncode == 2 and "decompress the file" in r.stderr, r.stderr
    assert _spent(ledger) == "0.5"


def test_flags_are_named_in_messages(tmp_path) -> None:
    # "quantile must be in (0, 1)", "split must sum to 1", "by='x' is not a column"
    # named no flag; "--statistic p90" (the per-group spelling) only listed statistics
    p = tmp_path / "t.csv"
    p.write_text("g,x\na,1\nb,2\n")
    (tmp_path / "k.txt").write_text("a\nb\n")
    base = ("release", p, "--column", "x", "--epsilon", "1", "--owner", "--bounds", "0", "5")
    by = ("--by", "g", "--keys", tmp_path / "k.txt")
    for extra, start in (
        (("--statistic", "quantile", "--quantile", "1.5"), "error: --quantile: "),
        (("--statistic", "median,count", *by, "--split", "0.5,0.6"), "error: --split: "),
        (("--statistic", "count", "--by", "nosuch", "--keys", tmp_path / "k.txt"),
         "error: --by: "),
        (("--statistic", "p90"), "error: --statistic p90 is the per-group spelling"),
        (("--statistic", "median", "--mechanism", "smooth", "--gamma", "5"),
         "error: gamma must be in (0, 1)"),
    ):
        r = cli(*base, *extra)
        assert r.returncode == 2 and r.stderr.startswith(start), (extra, r.stderr)
        assert "gamma=None" not in r.stderr and "ptr_bound" not in r.stderr
    assert "no --gamma for the default rule" in r.stderr
    r = cli(*base, "--statistic", "median", "--mechanism", "ptr", "--delta", "1e-6")
    assert r.returncode == 2 and "pass --ptr-bound B" in r.stderr, r.stderr
    r = cli(*base, "--statistic", "p90")
    assert "--statistic quantile --quantile 0.9" in r.stderr


def test_analyst_frames_refuse_declared_text_before_the_charge(tmp_path) -> None:
    # a pandas str / polars String / Arrow string column was charged, then released as
    # an empty selection; a categorical's refusal listed its categories (row values)
    import pandas as pd
    import polars as pl
    import pyarrow as pa

    from instancedp import Session
    from instancedp.errors import SchemaError

    ledger = tmp_path / "l.db"
    assert cli("ledger", "init", ledger, "--epsilon", "1").returncode == 0
    df = pd.DataFrame({"name": pd.array(["rare_person", "b", "c"], dtype="string"),
                       "x": [1.0, 2.0, 3.0]})
    frames = (df, df.astype({"name": "category"}), pl.from_pandas(df), pa.Table.from_pandas(df))
    for frame in frames:
        s = Session(frame, analyst=True, ledger=str(ledger))
        with pytest.raises(SchemaError, match="is not numeric") as err:
            s.release_statistic("median", "name", epsilon=0.1, bounds=(0, 1))
        assert "rare_person" not in str(err.value).lower()
    s = Session(df.astype({"name": object}), analyst=True, ledger=str(ledger))
    s.release_statistic("median", "x", epsilon=0.1, bounds=(0, 5))  # numbers still release
    from decimal import Decimal

    from instancedp import _validate

    assert Decimal(_spent(ledger)) == Decimal(_validate.at_most_decimal(0.1))  # one charge


def test_group_table_says_when_no_key_was_selected(tmp_path) -> None:
    # one row per key (a date column): the selection keeps none and the table was
    # printed empty, with no word on why
    p = tmp_path / "t.csv"
    p.write_text("d,x\n" + "\n".join(f"2020-01-{i:02d},{i}" for i in range(1, 6)) + "\n")
    r = cli("release", p, "--column", "x", "--statistic", "count", "--by", "d",
            "--epsilon", "1", "--delta", "1e-6", "--owner", "--seed", "2")
    assert r.returncode == 0, r.stderr
    # T = 1 + 2·ln(1/(2·1e-6)) ≈ 27 against a count of 1: P(a key passes) < 1e-5 each
    assert "groups      none: no key passed the private partition selection" in r.stdout


def test_python_api_shapes_of_bounds_and_keys() -> None:
    # bounds=(0, 1, 2) read "bounds() takes 2 positional arguments but 3 were given";
    # keys="Adelie" was iterated as characters: "keys lists 'e' twice"
    import pandas as pd

    from instancedp import PureDP, Session
    from instancedp.errors import ParameterError

    s = Session(pd.DataFrame({"g": ["a", "b"], "x": [1.0, 2.0]}), PureDP(5))
    with pytest.raises(ParameterError, match=r"bounds must be a pair \(lo, hi\)") as err:
        s.release_statistic("mean", "x", epsilon=1, bounds=(0, 1, 2))
    assert err.value.parameter == "bounds"
    with pytest.raises(ParameterError, match=r"pass keys=\['a'\]") as err:
        s.release_statistic("mean", "x", epsilon=1, bounds=(0, 5), by="g", keys="a")
    assert err.value.parameter == "keys"
    assert s.spent.describe() == "epsilon=0"


def test_json_group_keys_stay_text(tmp_path) -> None:
    # JSON types are inferred from the rows: only Parquet keeps its key type, so one
    # row cannot turn every key of a JSON file from text into booleans
    from instancedp.groupby import _file_select

    for name, native in (("t.json", False), ("t.csv", False), ("t.parquet", True)):
        sql = _file_select(tmp_path / name, "g", "x", "p")
        assert ('"g" AS k' in sql) is native and ('"p" AS p' in sql) is native, sql


def test_analyst_mode_names_a_semicolon_separated_header(tmp_path) -> None:
    # "unknown column 'value' in the data: the columns are name;value"
    p = tmp_path / "t.csv"
    p.write_text("name;value\na;1,5\nb;2,5\n")
    ledger = tmp_path / "l.db"
    assert cli("ledger", "init", ledger, "--epsilon", "1").returncode == 0
    r = cli("release", p, "--column", "value", "--statistic", "mean", "--bounds", "0", "5",
            "--epsilon", "0.5", "--ledger", ledger)
    assert r.returncode == 2 and "separated by ';'" in r.stderr, r.stderr
    assert _spent(ledger) == "0"


def test_group_release_on_a_polars_lazyframe() -> None:
    # single releases collected a LazyFrame; by= failed with "'LazyFrame' object has no
    # attribute 'get_column'"
    import polars as pl

    from instancedp import PureDP, Session
    from instancedp.random import simulation

    df = pl.DataFrame({"g": ["a", "a", "b"], "x": [1.0, 2.0, 3.0]})
    got = []
    for data in (df, df.lazy()):
        s = Session(data, PureDP(5))
        r = s.release_statistic("mean", "x", by="g", keys=["a", "b"], epsilon=1, bounds=(0, 5),
                                rng=simulation(4))
        got.append(r.to_pandas().to_dict("list"))
    assert got[0] == got[1]


def test_pandas_frame_with_integer_column_names() -> None:
    # pd.DataFrame(array) names its columns 0, 1, …: column=0 failed with
    # "'int' object has no attribute 'strip'", and by= could not find column "0"
    import numpy as np
    import pandas as pd

    from instancedp import PureDP, Session
    from instancedp.random import simulation

    df = pd.DataFrame(np.linspace(0, 1, 20).reshape(10, 2))
    df["g"] = ["a", "b"] * 5
    s = Session(df, PureDP(10))
    one = [s.release_statistic("mean", c, epsilon=1, bounds=(0, 1), rng=simulation(1)).value
           for c in (0, "0")]
    assert one[0] == one[1]
    groups = [s.release_statistic("mean", c, by="g", keys=["a"], epsilon=1, bounds=(0, 1),
                                  rng=simulation(1)).to_pandas()["mean"].tolist()
              for c in (0, "0")]
    assert groups[0] == groups[1]


def _text_tables(tmp_path, postgres_url):
    """The same small table in SQLite and PostgreSQL: a text, a date and a number."""
    import sqlite3

    import psycopg

    rows = [("Adelie", "2020-01-01", 3750.0, 1), ("Gentoo", "2020-01-02", 5000.0, 2)]
    path = tmp_path / "p.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (species VARCHAR(10), day DATE, mass REAL, g INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    con.commit()
    con.close()
    with psycopg.connect(postgres_url, autocommit=True) as pg:
        pg.execute("DROP TABLE IF EXISTS penguins_t")
        pg.execute("CREATE TABLE penguins_t (species text, day date, mass double precision, "
                   "g integer)")
        with pg.cursor() as cur:
            cur.executemany("INSERT INTO penguins_t VALUES (%s, %s, %s, %s)", rows)
    return (str(path), "t"), (postgres_url, "penguins_t")


def test_database_text_and_date_columns_refused_before_the_charge(tmp_path, postgres_url):
    # SQLite's CAST('Adelie' AS REAL) is 0.0: a count or mean of a text column released
    # a number on SQLite where a CSV gave none (and PostgreSQL's cast failed after the
    # charge); the declared type is public schema, so both refuse it up front
    from instancedp import Session
    from instancedp.errors import SchemaError
    from instancedp.privacy import PureDP
    from instancedp.random import simulation

    for data, table in _text_tables(tmp_path, postgres_url):
        s = Session(data, PureDP(1.0), table=table)
        for column in ("species", "day"):
            for stat, extra in (("count", {}), ("mean", {"bounds": (0.0, 1e4)})):
                with pytest.raises(SchemaError, match=f"column '{column}' is declared"):
                    s.release_statistic(stat, column=column, epsilon=0.5, **extra)
            with pytest.raises(SchemaError, match="not a number"):
                s.release_statistic("mean", column=column, by="g", keys=[1, 2],
                                    epsilon=0.5, bounds=(0.0, 1e4))
        assert s.history() == []
        r = s.release_statistic("mean", column="mass", epsilon=0.5, bounds=(0.0, 1e4),
                                rng=simulation(1))
        assert len(s.history()) == 1 and 0.0 <= r.value <= 1e4
