"""End-to-end CLI tests through a subprocess: every command, every bad input.

Each bad input must give exit code 2, exactly one line on stderr naming the
problem, no traceback, and leave the ledger untouched (same rows, same
bytes).  Budget exhaustion gives exit 3 with the remaining budget.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_support import assert_bad as _assert_bad
from cli_support import cli, cli_process

from instancedp.io import shipped

GOOG = str(shipped("goog.csv"))
KARATE = str(shipped("karate.edges"))


def rows(ledger: Path) -> int:
    con = sqlite3.connect(ledger)
    try:
        return con.execute("SELECT COUNT(*) FROM charges").fetchone()[0]
    finally:
        con.close()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    csv = d / "sales.csv"
    csv.write_text(
        "price,region,clean,flag\n10.5,EU,1.0,1\n,US,2.0,0\n30.0,EU,3.0,1\n12.0,US,4.0,2\n"
    )
    pqf = d / "sales.parquet"
    rng = np.random.default_rng(0)
    pq.write_table(
        pa.table(
            {
                "price": rng.normal(50, 10, 500),
                "region": np.where(rng.random(500) < 0.5, "EU", "US"),
            }
        ),
        pqf,
    )
    # A ledger with one release already on it, to check bad input leaves it untouched.
    led = d / "ledger.db"
    r = cli(
        "release", "--owner", GOOG, "--column", "close", "--statistic", "median", "--epsilon", "0.5",  # noqa: E501
        "--bounds", "0", "1000", "--ledger", str(led), "--budget-epsilon", "2", "--seed", "1",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return {"dir": d, "csv": str(csv), "parquet": str(pqf), "ledger": led}


BAD_INPUTS = {
    "missing file": (["release", "--owner", "nope.csv", "--column", "x", "--epsilon", "1",
                      "--bounds", "0", "1"], ["not found", "check the path"]),
    "unknown column": (["release", "--owner", "{csv}", "--column", "prise", "--epsilon", "1",
                        "--bounds", "0", "100"], ["unknown column 'prise'",
                                                  "price, region, clean, flag"]),
    "non-numeric column": (["release", "--owner", "{csv}", "--column", "region", "--epsilon", "1",
                            "--bounds", "0", "100"], ["'region' is not numeric"]),
    "missing bounds": (["release", "--owner", "{csv}", "--column", "clean", "--epsilon", "1",
                        "--statistic", "mean"],
                       ["needs public bounds", "--bounds LO HI"]),
    "epsilon zero": (["release", "--owner", "{csv}", "--column", "clean", "--epsilon", "0",
                      "--bounds", "0", "10"], ["epsilon must be a finite number > 0"]),
    "epsilon negative": (["release", "--owner", "{csv}", "--column", "clean", "--epsilon=-1",
                          "--bounds", "0", "10"], ["epsilon must be a finite number > 0"]),
    "epsilon nan": (["release", "--owner", "{csv}", "--column", "clean", "--epsilon", "nan",
                     "--bounds", "0", "10"], ["epsilon must be a finite number > 0"]),
    "epsilon inf": (["release", "--owner", "{csv}", "--column", "clean", "--epsilon", "inf",
                     "--bounds", "0", "10"], ["epsilon must be a finite number > 0"]),
    "delta one": (["release", "--owner", "{csv}", "--column", "clean", "--epsilon", "1", "--delta", "1",  # noqa: E501
                   "--mechanism", "gaussian", "--statistic", "mean", "--bounds", "0", "10"],
                  ["delta must be a number in [0, 1)"]),
    "gamma out of range": (["release", "--owner", "{csv}", "--column", "clean", "--epsilon", "1",
                            "--bounds", "0", "10", "--gamma", "3"], ["gamma must be in (0, "]),
    "NULL without drop": (["release", "--owner", "{csv}", "--column", "price", "--epsilon", "1",
                           "--bounds", "0", "100"], ["1 missing", "--drop-missing"]),
    "empty selection": (["release", "--owner", "--sql", "SELECT price FROM '{parquet}' WHERE region = 'XX'",  # noqa: E501
                         "--epsilon", "1", "--bounds", "0", "100"], ["selection is empty"]),
    "SQL syntax error": (["release", "--owner", "--sql", "SELEC price FROM '{parquet}'", "--epsilon", "1",  # noqa: E501
                          "--bounds", "0", "100"], ["SQL error", "syntax error"]),
    "ratio needs flags": (["release", "--owner", "{csv}", "--column", "flag", "--statistic", "ratio",  # noqa: E501
                           "--epsilon", "1"], ["0/1 flags"]),
    "no data": (["release", "--owner", "--epsilon", "1", "--bounds", "0", "1"], ["no data"]),
    "unknown statistic": (["release", "--owner", "{csv}", "--column", "clean", "--statistic", "mode",  # noqa: E501
                           "--epsilon", "1"], ["statistic must be one of"]),
    "usage error": (["release", "--owner", "{csv}", "--column", "clean", "--epsilon", "abc"],
                    ["'--epsilon'"]),
    "different total": (["release", "--owner", "{csv}", "--column", "clean", "--epsilon", "0.1",
                          "--bounds", "0", "10", "--budget-epsilon", "5", "--seed", "0"],
                         ["already holds a total budget of epsilon=2"]),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_one_line_exit_2_ledger_untouched(files, case):
    args, needles = BAD_INPUTS[case]
    args = [a.format(csv=files["csv"], parquet=files["parquet"]) for a in args]
    led = files["ledger"]
    before = led.read_bytes()
    r = cli(*args, "--ledger", str(led))
    _assert_bad(r, *needles)
    assert rows(led) == 1
    assert led.read_bytes() == before


def test_unreadable_ledger(files, tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database " * 200)
    before = bad.read_bytes()
    r = cli("release", "--owner", GOOG, "--column", "close", "--epsilon", "1", "--bounds", "0", "1000",  # noqa: E501
            "--ledger", str(bad), "--budget-epsilon", "1", "--seed", "0")  # fmt: skip
    _assert_bad(r, "not a readable instancedp ledger")
    assert bad.read_bytes() == before
    _assert_bad(cli("ledger", "show", str(bad)), "not a readable instancedp ledger")


def test_bad_input_never_creates_a_ledger(files, tmp_path):
    led = tmp_path / "new.db"
    r = cli("release", "--owner", files["csv"], "--column", "price", "--epsilon", "1", "--bounds", "0", "1",  # noqa: E501
            "--ledger", str(led), "--budget-epsilon", "1")  # fmt: skip
    _assert_bad(r, "missing")
    assert not led.exists()


def test_budget_exhausted_exit_3_names_remaining(tmp_path):
    led = tmp_path / "l.db"
    base = ["release", "--owner", GOOG, "--column", "close", "--bounds", "0", "1000", "--seed", "3",
            "--ledger", str(led), "--budget-epsilon", "1"]  # fmt: skip
    assert cli(*base, "--epsilon", "0.75").returncode == 0
    r = cli(*base, "--epsilon", "0.5")
    _assert_bad(r, "budget exhausted", "only epsilon=0.25 remains", code=3)
    assert rows(led) == 1
    r = cli(*base, "--epsilon", "0.25", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["remaining"]["exact"] == {"epsilon": "0"}
    shown = cli("ledger", "show", str(led), "--json")
    assert shown.returncode == 0
    ds = json.loads(shown.stdout)["datasets"][0]
    assert ds["releases"] == 2 and ds["spent"]["exact"] == {"epsilon": "1"}


def test_release_text_and_json_carry_only_public_fields(tmp_path):
    from instancedp.io import read_column
    from instancedp.queries import Median

    led = tmp_path / "l.db"
    # the smooth-sensitivity mechanism (add/remove neighbours, the default relation)
    r = cli("release", "--owner", GOOG, "--column", "close", "--statistic", "median", "--epsilon", "2",  # noqa: E501
            "--bounds", "0", "1000", "--ledger", str(led), "--budget-epsilon", "4",
            "--mechanism", "smooth", "--seed", "5", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) == {
        "value", "refused", "guarantee", "mechanism", "parameters", "secure",
        "remaining", "ledger", "dataset_id",
    }  # fmt: skip
    assert out["secure"] is False and "SIMULATION" in r.stderr
    assert out["guarantee"] == {"type": "pure", "epsilon": 2.0}
    assert out["remaining"]["exact"] == {"epsilon": "2"}
    assert out["mechanism"] == "smooth_sensitivity"
    # No data-derived quantity anywhere in the output: not the true median, not
    # its local or smooth sensitivity (at the γ reported), not SS/γ.
    x = read_column(GOOG, "close")
    q = Median(0, 1000)
    gamma = out["parameters"]["gamma"]
    secret = [
        q.value(x),
        q.local_sensitivity(x),
        q.smooth_sensitivity(x, gamma),
        q.smooth_sensitivity(x, gamma) / gamma,
    ]

    def numbers(obj, key=None):
        if isinstance(obj, dict):
            for k, v in obj.items():
                yield from numbers(v, k)
        elif isinstance(obj, list):
            for v in obj:
                yield from numbers(v, key)
        elif isinstance(obj, int | float) and not isinstance(obj, bool):
            yield key, float(obj)

    public_keys = {"epsilon", "gamma", "delta", "lower", "upper", "value"}
    for key, num in numbers(out):
        if key in public_keys:  # parameters chosen before seeing data, and the release
            continue
        for sec in secret:
            assert abs(num - sec) > 1e-9 * max(1.0, abs(sec)), (key, num, sec)
    text = r.stdout
    for sec in secret[2:]:  # SS and SS/γ are not round numbers: no format may appear
        for fmt in (repr(float(sec)), f"{sec:.6g}"):
            assert fmt not in text, (sec, fmt)
    keys = json.dumps(out["parameters"]).lower()
    for banned in ("sensitivity", "scale", "ss", "ls", "true"):
        assert f'"{banned}"' not in keys
    t = cli("release", "--owner", GOOG, "--column", "close", "--epsilon", "1", "--bounds", "0", "1000",  # noqa: E501
            "--seed", "5")  # fmt: skip
    assert t.returncode == 0
    assert "secure      false" in t.stdout and "NOT A PRIVATE RELEASE" in t.stdout
    assert "guarantee   1-DP (pure)" in t.stdout


def test_release_from_sql_parquet_and_drop_missing(files):
    r = cli("release", "--owner", "--sql", f"SELECT price FROM '{files['parquet']}' WHERE region = 'EU'",  # noqa: E501
            "--statistic", "median", "--epsilon", "1", "--bounds", "0", "100", "--seed", "2",
            "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)["value"]
    assert 0 <= v <= 100  # PolyPlace noise is unbounded, but the median of N(50,10) is near 50
    r = cli("release", "--owner", files["csv"], "--column", "price", "--drop-missing", "--statistic",  # noqa: E501
            "median", "--epsilon", "1", "--bounds", "0", "100", "--seed", "2")  # fmt: skip
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize(
    "extra",
    [
        ["--statistic", "mean"],
        ["--statistic", "quantile", "--quantile", "0.9", "--mechanism", "exponential"],
        ["--statistic", "median", "--mechanism", "ptr", "--delta", "1e-6", "--ptr-bound", "5"],
        ["--statistic", "median", "--noise", "student_t"],
    ],
)
def test_release_mechanisms(extra):
    r = cli("release", "--owner", GOOG, "--column", "close", "--epsilon", "1", "--bounds", "0", "1000",  # noqa: E501
            "--seed", "4", "--json", *extra)  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["refused"] or isinstance(out["value"], float)
    if extra[1] == "mean":
        # add/remove: noisy sum (Lap(2000)) ÷ noisy count (Lap(2)), ε split in half.
        # Outside |Lap(b)| ≤ 10b (probability 2·e^-10 ≈ 9e-5; the seed is fixed)
        # the error is ≤ (20000 + 20·1000)/(n − 20).
        x = np.loadtxt(GOOG, delimiter=",", skiprows=1, usecols=4)
        assert out["mechanism"] == "sum_over_count"
        assert abs(out["value"] - x.mean()) < 40_000 / (x.size - 20)


def test_ledger_init_and_show(tmp_path):
    led = tmp_path / "l.db"
    r = cli("ledger", "init", str(led), "--epsilon", "2", "--delta", "1e-6")
    assert r.returncode == 0, r.stderr
    assert "epsilon=2, delta=0.000001" in r.stdout
    _assert_bad(cli("ledger", "init", str(led), "--epsilon", "3"), "already holds")
    _assert_bad(cli("ledger", "init", str(led), "--epsilon", "-1"), "epsilon")
    _assert_bad(cli("ledger", "show", str(tmp_path / "none.db")), "does not exist")
    r = cli("ledger", "show", str(led))
    assert r.returncode == 0 and "remaining  epsilon=2, delta=0.000001" in r.stdout
    # The ledger's budget is used when no --budget-* flag is given.
    r = cli("release", "--owner", GOOG, "--column", "close", "--epsilon", "0.5", "--bounds", "0", "1000",  # noqa: E501
            "--ledger", str(led), "--seed", "1", "--mechanism", "ptr", "--delta", "1e-7",
            "--ptr-bound", "2")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "remaining   epsilon=1.5, delta=0.0000009 of epsilon=2, delta=0.000001" in r.stdout
    r = cli("ledger", "show", str(led), "--history")
    assert "propose_test_release" in r.stdout and "releases   1" in r.stdout


def test_help_and_entry_point():
    # subprocess smoke tests: the module entry points as a user runs them
    r = cli_process()  # bare command: the help, exit 0
    assert r.returncode == 0 and "Usage" in r.stdout and not r.stderr.strip()
    r = subprocess.run([sys.executable, "-m", "instancedp", "--version"], capture_output=True,
                       text=True)  # fmt: skip
    assert r.returncode == 0 and r.stdout.startswith("instancedp ")
    r = cli("--help")
    assert r.returncode == 0
    for cmd in ("release", "release-graph", "compare", "audit", "noise-table", "reproduce",
                "ledger"):  # fmt: skip
        assert cmd in r.stdout
    exe = Path(sys.executable).with_name("instancedp")
    if exe.exists():  # the console script declared in pyproject
        r2 = subprocess.run([str(exe), "release", "--help"], capture_output=True, text=True)
        assert r2.returncode == 0 and "--bounds" in r2.stdout


def test_release_graph(tmp_path):
    led = tmp_path / "g.db"
    r = cli("release-graph", "--owner", KARATE, "--statistic", "triangles", "--epsilon", "1",
            "--vertices", "34", "--ledger", str(led), "--budget-epsilon", "2",
            "--dataset-id", "karate", "--seed", "0", "--json")  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["guarantee"] == {"type": "pure", "epsilon": 1.0}
    assert out["dataset_id"] == "karate" and out["remaining"]["exact"] == {"epsilon": "1"}
    r = cli("release-graph", "--owner", KARATE, "--statistic", "kstars", "--k", "2", "--epsilon", "0.5",  # noqa: E501
            "--vertices", "34", "--ledger", str(led), "--dataset-id", "karate",
            "--seed", "0")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "remaining   epsilon=0.5 of epsilon=2" in r.stdout
    bad = tmp_path / "loops.edges"
    bad.write_text("0 1\n1 1\n")
    _assert_bad(
        cli("release-graph", "--owner", str(bad), "--epsilon", "1", "--vertices", "2", "--ledger", str(led)),  # noqa: E501
        "self-loop",
        "--normalise",
    )
    _assert_bad(
        cli("release-graph", "--owner", KARATE, "--statistic", "squares", "--epsilon", "1"),
        "statistic must be one of triangles, kstars, two-triangles",
    )
    _assert_bad(
        cli("release-graph", "--owner", str(tmp_path / "none.edges"), "--epsilon", "1", "--vertices", "3"),  # noqa: E501
        "not found",
    )
    # Edge privacy fixes the vertex set: it must be public, never read off the edges.
    _assert_bad(
        cli("release-graph", "--owner", KARATE, "--epsilon", "1", "--ledger", str(led)),
        "number of vertices must be public",
        "--vertices N",
    )
    _assert_bad(
        cli("release-graph", "--owner", KARATE, "--epsilon", "1", "--vertices", "10", "--ledger", str(led)),  # noqa: E501
        "--vertices",
    )
    assert rows(led) == 2


def test_zcdp_release_against_each_budget_type(tmp_path):
    led = tmp_path / "z.db"
    base = ["release", "--owner", GOOG, "--column", "close", "--epsilon", "1", "--bounds", "0", "1000",  # noqa: E501
            "--noise", "laplace_log_normal", "--seed", "1", "--ledger", str(led)]  # fmt: skip
    # A zCDP release cannot enter an (ε, δ) budget without a conversion δ: refused, no ledger.
    r = cli(*base, "--budget-epsilon", "3", "--budget-delta", "1e-5")
    _assert_bad(r, "needs a conversion delta", "--zcdp-delta")
    assert not led.exists()
    r = cli(*base, "--budget-rho", "1", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["guarantee"] == {"type": "zcdp", "rho": 0.5}  # ½ε²-CDP with ε = 1
    assert out["remaining"]["exact"] == {"rho": "0.5"}
