"""Plain words where a user looks: no tracker references, a release summary in words,
symbols spelled out, and progress on a terminal only (never counting rows)."""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

import pytest
from cli_support import cli as run_cli
from rich.console import Console

import instancedp.cli as cli

ROOT = Path(__file__).resolve().parents[1]
GOOG = ROOT / "src" / "instancedp" / "data" / "goog.csv"

# "issue 2", "issues 3 and 4", "issue #12", "(#12)", "the target": a reference to
# a tracker item, meaningful to the authors only.
TRACKER = re.compile(r"\bissues?\s*#?\s*\d|\(#\d+\)|\bthe issue(?:'s)?\b", re.IGNORECASE)
TEXT_SUFFIXES = {".py", ".md", ".txt", ".toml", ".cfg", ".json", ".csv", ".sql", ""}


def _user_facing_files() -> list[Path]:
    files = [ROOT / "README.md"]
    files += sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "errata.md")
    for top in ("src", "benchmarks"):
        files += sorted(
            p
            for p in (ROOT / top).rglob("*")
            if p.is_file() and p.suffix in TEXT_SUFFIXES and "__pycache__" not in p.parts
        )
    return files


def test_the_grep_finds_what_it_looks_for():
    hits = [
        "the noise table of issue 2",
        "Issues 3 and 4",
        "see issue #12",
        "fixed in (#12)",
        "the issue's quick check",
    ]
    misses = ["a noisy issuer", "tissue 2", "docs/errata.md item 4", "Lemma 25"]
    assert all(TRACKER.search(h) for h in hits)
    assert not any(TRACKER.search(m) for m in misses)


def test_no_tracker_references_where_users_look():
    files = _user_facing_files()
    assert len(files) > 20  # the walk found the package, the docs and the benchmarks
    found = []
    for p in files:
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for i, line in enumerate(text.splitlines(), 1):
            if TRACKER.search(line):
                found.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not found, "cite the paper, theorem or docs page instead:\n" + "\n".join(found)


# -- the release summary --------------------------------------------------------------
def _release(*extra: str) -> str:
    r = run_cli(
        "release", "--owner", str(GOOG), "--column", "close", "--epsilon", "1",
        "--bounds", "0", "1000", "--seed", "3", *extra,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_summary_shows_what_the_user_chose_in_words():
    out = _release("--statistic", "median", "--mechanism", "smooth")
    labels = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert labels == [
        "value", "statistic", "guarantee", "bounds", "neighbours", "mechanism", "noise",
        "remaining", "secure", "record",
    ]
    assert "statistic   median of column 'close'" in out
    assert "guarantee   1-DP (pure): ε = 1, δ = 0" in out
    assert "bounds      [0, 1000] (public)" in out
    assert "neighbours  add/remove one row (the row count stays private)" in out
    assert "smooth sensitivity (Nissim, Raskhodnikova and Smith 2007)" in out
    assert "smoothness γ = " in out
    # The internal spelling of the record is left to --json.
    for internal in ("gamma_rule", "query_parameters", "default_gamma", "{"):
        assert internal not in out


def test_json_keeps_the_whole_record():
    rec = json.loads(_release("--statistic", "median", "--mechanism", "smooth", "--json"))
    assert rec["parameters"]["gamma_rule"] == "default_gamma"
    assert rec["parameters"]["query_parameters"]["upper"] == 1000
    assert rec["mechanism"] == "smooth_sensitivity"


def test_a_refusal_is_spelled_out():
    # PTR with a proposed bound far below the local sensitivity refuses (test budget ε/2).
    out = _release("--mechanism", "ptr", "--ptr-bound", "1e-9", "--delta", "1e-6")
    assert "value       refused: the mechanism's private test declined to answer" in out
    assert "⊥" not in out
    assert "propose-test-release (Dwork and Lei 2009)" in out


@pytest.mark.parametrize("relation,words", [
    ("substitution", "change one row (the row count is public)"),
    ("add-remove", "add/remove one row (the row count stays private)"),
])
def test_neighbours_in_words(relation, words):
    out = _release("--statistic", "mean", "--neighbours", relation)
    assert f"neighbours  {words}" in out


def test_zcdp_guarantee_in_words():
    out = _release("--mechanism", "smooth", "--noise", "laplace_log_normal")
    assert "guarantee   0.5-zCDP: zero-concentrated DP with ρ = 0.5" in out


def test_every_relation_and_common_mechanism_has_words():
    from instancedp.queries.base import RELATIONS

    assert set(RELATIONS) <= set(cli.NEIGHBOURS_IN_WORDS)
    assert cli.mechanism_in_words("laplace").endswith("[laplace]")
    assert cli.mechanism_in_words("some_new_one") == "some new one"


def test_compare_table_explains_itself_without_symbols():
    from instancedp.experiments import compare as C

    res = C.compare(None, "median", epsilons=(0.05,), trials=20, mechanisms=["ptr"])
    md = C.to_markdown(res)
    assert "⊥" not in md and "How to read it" in md and "refused 100%" in md


# -- progress on a terminal only ---------------------------------------------------------
@pytest.fixture
def terminal(monkeypatch):
    """stdout and stderr are a terminal; returns what the progress console received."""
    buf = io.StringIO()
    monkeypatch.setattr(
        cli, "_stderr_console", lambda: Console(file=buf, force_terminal=True, width=120)
    )
    monkeypatch.setattr(cli, "_stdout_is_tty", lambda: True)
    monkeypatch.delenv("CI", raising=False)
    return buf


def test_progress_only_on_a_terminal(terminal, monkeypatch):
    assert cli.show_progress() is True
    assert cli.show_progress(as_json=True) is False
    for ci in ("true", "1", "yes"):
        monkeypatch.setenv("CI", ci)
        assert cli.show_progress() is False
    monkeypatch.setenv("CI", "false")
    assert cli.show_progress() is True
    monkeypatch.setattr(cli, "_stdout_is_tty", lambda: False)  # stdout into a pipe
    assert cli.show_progress() is False


def test_not_a_terminal_is_silent(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    assert cli.show_progress() is False  # the test runner's streams are not terminals
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # stdout into a pipe
    assert cli._stdout_is_tty() is False
    with cli._spinner("working"):
        pass
    with cli._progress() as p:
        p.add_task("x", total=2)


def test_spinner_on_a_terminal_and_never_with_json(terminal):
    with cli._spinner("working hard"):
        pass
    assert "working hard" in terminal.getvalue()
    terminal.truncate(0)
    terminal.seek(0)
    with cli._spinner("working hard", as_json=True):
        pass
    with cli._progress(as_json=True) as p:
        p.add_task("steps", total=3)
    assert terminal.getvalue() == ""


def test_analyst_progress_shows_a_spinner_and_time_only(terminal, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("x\n" + "\n".join(str(v) for v in range(1, 1001)) + "\n")
    led = tmp_path / "l.db"
    assert run_cli("ledger", "init", str(led), "--epsilon", "5").returncode == 0
    r = run_cli(
        "release", str(data), "--sql",
        "SELECT CAST(x AS DOUBLE) FROM data WHERE CAST(x AS DOUBLE) > 2", "--epsilon", "1",
        "--bounds", "0", "1000", "--ledger", str(led), "--statistic", "mean",
    )
    assert r.returncode == 0, r.stderr
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal.getvalue())
    assert "charging the ledger and computing the release" in shown
    # Beyond the fixed text, only spinner frames and elapsed times h:mm:ss: no count of
    # rows read or selected (998 here), which is private after a filter.
    rest = re.sub(r"charging the ledger and computing the release|\d+:\d\d:\d\d", "", shown)
    assert not re.search(r"\d", rest), rest
