"""Every error message a user can reach: one line, the fix in the caller's language.

CLI messages (in-process through ``main``) are one line on stderr, exit 2,
nothing charged, and never name an internal function.  Python messages from
the same causes name no command-line flag.
"""

from __future__ import annotations

import contextlib
import io as _stdio
import re

import duckdb
import pytest

from instancedp import PureDP, Session
from instancedp import io as idp_io
from instancedp.cli import main
from instancedp.errors import InstanceDPError, ParameterError, SchemaError

# Names that only an author knows: Python call syntax, private helpers, modules.
INTERNAL = re.compile(r"\w+\(\) got|\b_\w+\(|build_mechanism|build_query|Traceback|\.py\b")
FLAG = re.compile(r"(?<![\w-])--[a-z]")


@pytest.fixture()
def env(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("name,price\nbob,1.5\nann,2.5\n")
    zero = tmp_path / "zero.csv"
    zero.write_text("")
    led = tmp_path / "l.db"
    Session(None, PureDP(1.0), ledger=led).close()
    return {"csv": str(csv), "zero": str(zero), "led": str(led), "tmp": tmp_path}


def _run(argv, with_stdout=False):
    out, err = _stdio.StringIO(), _stdio.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
            code = 0
        except SystemExit as e:
            code = e.code or 0
    return (code, err.getvalue(), out.getvalue()) if with_stdout else (code, err.getvalue())


CLI_CASES = {
    "0-byte CSV": (["release", "--owner", "{zero}", "--column", "close", "--epsilon", "1",
                    "--bounds", "0", "1"], "is empty (0 bytes)"),
    "0-byte CSV, analyst": (["release", "{zero}", "--column", "close", "--epsilon", "1",
                             "--bounds", "0", "1", "--ledger", "{led}"], "is empty"),
    "graph statistic to release": (
        ["release", "{csv}", "--statistic", "triangles", "--epsilon", "1", "--ledger", "{led}"],
        "use instancedp release-graph"),
    "tabular statistic to release-graph": (
        ["release-graph", "{csv}", "--statistic", "median", "--epsilon", "1", "--vertices", "3"],
        "`instancedp release`"),
    "misspelt statistic": (["release", "{csv}", "--statistic", "mediam", "--epsilon", "1",
                            "--ledger", "{led}"], "did you mean 'median'?"),
    "SQL parse error shown whole": (["release", "{csv}", "--sql", "SELEC price FROM data",
                                     "--statistic", "count", "--epsilon", "1", "--ledger", "{led}"],
                                    'syntax error at or near "SELEC"'),
    "SQL bind error shown whole": (["release", "{csv}", "--sql", "SELECT prise FROM data",
                                    "--statistic", "count", "--epsilon", "1", "--ledger", "{led}"],
                                   'Referenced column "prise" not found'),
    "SQL subquery refused": (["release", "{csv}", "--sql",
                              "SELECT (SELECT max(price) FROM data) FROM data",
                              "--statistic", "count", "--epsilon", "1", "--ledger", "{led}"],
                             "subquery"),
    "missing bounds": (["release", "{csv}", "--column", "price", "--statistic", "mean",
                        "--epsilon", "1", "--ledger", "{led}"], "--bounds LO HI"),
    "analyst without a ledger": (["release", "{csv}", "--column", "price", "--epsilon", "1",
                                  "--bounds", "0", "1"], "--ledger PATH"),
    "analyst setting a budget": (["release", "{csv}", "--column", "price", "--epsilon", "1",
                                  "--bounds", "0", "1", "--ledger", "{led}",
                                  "--budget-epsilon", "3"], "--owner"),
    "bad neighbours": (["release", "{csv}", "--column", "price", "--epsilon", "1",
                        "--bounds", "0", "1", "--ledger", "{led}", "--neighbours", "swap"],
                       "add-remove or substitution"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_cli_errors_one_line_exit_2_nothing_charged(env, case):
    argv, needle = CLI_CASES[case]
    argv = [a.format(**env) for a in argv]
    before = Session(None, ledger=env["led"]).spent
    code, err = _run(argv)
    lines = [x for x in err.splitlines() if x.strip()]
    assert code == 2, (case, code, err)
    assert len(lines) == 1, err
    assert needle in lines[0], (needle, lines[0])
    assert not INTERNAL.search(lines[0]), lines[0]
    assert "(Python:" not in lines[0]
    assert Session(None, ledger=env["led"]).spent == before


def _python_errors(env):
    """(cause, exception) for the same causes reached from Python."""
    out = []

    def grab(cause, fn):
        with pytest.raises(InstanceDPError) as info:
            fn()
        out.append((cause, info.value))

    grab("0-byte CSV", lambda: idp_io.read_column(env["zero"], "close"))
    grab("no column chosen", lambda: idp_io.read_column(env["csv"]))
    grab("unknown column", lambda: idp_io.read_column(env["csv"], "prise"))
    grab("missing file", lambda: idp_io.read_column(env["tmp"] / "nope.csv", "x"))
    grab("SQL error", lambda: idp_io.read_column(None, sql="SELEC 1"))
    grab("analyst SQL refused", lambda: idp_io.AnalystQuery(env["csv"], sql="SELECT 1 FROM x"))
    s = Session(env["csv"], ledger=env["led"], analyst=True)
    grab("misspelt keyword", lambda: s.release_statistic(
        "quantile", sql="SELECT TRY_CAST(price AS DOUBLE) FROM data", epsilon=0.1,
        bounds=(0, 1), quantle=0.9))  # fmt: skip
    grab("analyst without ledger", lambda: Session(env["csv"], analyst=True))
    grab("vertex count", lambda: Session([(0, 1)], PureDP(1)).graph())
    return out


def test_python_errors_name_no_flag_and_no_internal_function(env):
    errors = _python_errors(env)
    assert len(errors) == 9
    for cause, exc in errors:
        msg = str(exc)
        assert "\n" not in msg.strip(), (cause, msg)
        assert not FLAG.search(msg), (cause, msg)
        assert not INTERNAL.search(msg), (cause, msg)
    keyword = dict(errors)["misspelt keyword"]
    assert isinstance(keyword, ParameterError) and "did you mean 'quantile'?" in str(keyword)
    assert isinstance(dict(errors)["0-byte CSV"], SchemaError)


def test_offline_extension_is_explained(monkeypatch):
    """DuckDB's failed download becomes 'cannot download here', not 'fix the query'."""

    class Con:
        def sql(self, _):
            raise duckdb.IOException(
                "IO Error: Failed to download extension \"sqlite_scanner\" at URL "
                "\"http://extensions.duckdb.org/x\" (ERROR Could not establish connection)"
            )

    with pytest.raises(SchemaError, match="extension it cannot download here"):
        idp_io._run_sql(Con(), "SELECT * FROM sqlite_scan('a.db', 't')")


def test_version_entry_points_and_dir():
    import instancedp

    code, _, out = _run(["--version"], with_stdout=True)
    assert code == 0
    assert out.strip() == f"instancedp {instancedp.__version__}"
    assert {"Session", "Release", "PureDP"} <= set(dir(instancedp))


def test_help_shows_whole_descriptions(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, _, out = _run(["--help"], with_stdout=True)
    assert code == 0
    body = [x for x in out.splitlines() if not x.startswith("Usage:")]
    assert not [x for x in body if "..." in x or "…" in x], out
    words = " ".join(out.split())
    assert "Release one private statistic of a column, charged to a budget ledger." in words
    for width in ("60", "80", "100"):  # words are never broken, whatever the width
        monkeypatch.setenv("COLUMNS", width)
        code, _, out = _run(["release", "--help"], with_stdout=True)
        words = " ".join(out.split())
        for name in ("trimmed-mean", "bounded-ls", "student_t", "laplace_log_normal",
                     "--drop-missing"):  # fmt: skip
            assert name in words, (width, name)
