"""A new user's first hour, replayed: the README's tour in order, then the demo.

Every ``instancedp ...`` command of the README's tour runs in-process through
``instancedp.cli.main`` in a fresh folder (where ``src/`` points at this
checkout, so the README's paths work as written); where the README shows the
output, the output must be that, line for line, except the released value
(fresh secure noise every time: it must be a number in the public bounds).
Where the README shows ``# error: ...`` the command must fail with exactly
that one line on stderr, the exit code the README states, and nothing charged.
The Python blocks run in the same folder, in order.  Then the demo: no
tracker references, and every section and table says how to read it.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import pytest
from cli_support import cli

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
TRACKER = re.compile(r"\bissues?\s*#?\s*\d|\(#\d+\)|\bthe issue(?:'s)?\b", re.IGNORECASE)


def _tour() -> str:
    start = README.index("## A five-minute tour")
    end = README.index("\n## ", start + 1)
    return README[start:end]


def _blocks(text: str) -> list[tuple[str, str]]:
    """The fenced blocks of ``text`` in order, as (language, body)."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"```(\w*)\n(.*?)```", text, re.S)]


def _steps() -> list[dict]:
    """Commands with what the README says they print, and Python blocks, in order."""
    steps: list[dict] = []
    for lang, body in _blocks(_tour()):
        if lang == "bash":
            lines = body.replace("\\\n", " ").splitlines()
            for line in lines:
                line = line.strip()
                if line.startswith("instancedp"):
                    steps.append({"kind": "cli", "argv": shlex.split(line)[1:]})
                elif line.startswith("# error:"):
                    steps[-1]["error"] = line[2:]
                elif m := re.match(r"# \(exit code (\d), nothing charged\)", line):
                    steps[-1]["exit"] = int(m.group(1))
        elif lang == "python":
            steps.append({"kind": "python", "code": body})
        elif lang == "":
            steps[-1]["stdout"] = body.splitlines()
    return steps


def test_the_tour_parses():
    steps = _steps()
    clis = [s for s in steps if s["kind"] == "cli"]
    assert len(clis) >= 9 and sum("stdout" in s for s in clis) >= 4
    assert sum("error" in s for s in clis) >= 4 and all("exit" in s for s in clis if "error" in s)
    assert sum(s["kind"] == "python" for s in steps) >= 2


def test_set_up_commands_come_first():
    first = README[: README.index("## A five-minute tour")]
    setup = _blocks(first)
    assert setup and setup[0][0] == "bash"
    assert [ln.split("#")[0].strip() for ln in setup[0][1].splitlines()] == [
        "make demo",
        "make test",
    ]


def _value_ok(line: str) -> bool:
    m = re.fullmatch(r"value +(-?[0-9.]+(?:e[+-]?\d+)?)", line)
    return m is not None and -1e6 < float(m.group(1)) < 1e6


def _charges(ledger: Path) -> str:
    if not ledger.exists():
        return "no ledger"
    r = cli("ledger", "show", str(ledger), "--json")
    assert r.returncode == 0, r.stderr
    return json.dumps(json.loads(r.stdout), sort_keys=True)


@pytest.fixture
def few_trials(monkeypatch):
    """``compare`` with 5 trials per cell (its output's numbers are not in the README)."""
    from instancedp.experiments import compare

    real = compare.compare
    monkeypatch.setattr(compare, "compare", lambda *a, **k: real(*a, **{**k, "trials": 5}))


def test_first_hour_replays_the_readme(tmp_path, few_trials, monkeypatch):
    # The README's ledger shows the principal "alice": the default principal is the OS
    # user (getpass reads LOGNAME first), so the replay runs as alice.
    for var in ("LOGNAME", "USER"):
        monkeypatch.setenv(var, "alice")
    (tmp_path / "src").symlink_to(ROOT / "src", target_is_directory=True)
    namespace: dict = {}
    for step in _steps():
        if step["kind"] == "python":
            with contextlib.chdir(tmp_path), contextlib.redirect_stdout(io.StringIO()):
                exec(compile(step["code"], "README.md", "exec"), namespace)  # noqa: S102
            continue
        argv = step["argv"]
        ledger = tmp_path / argv[argv.index("--ledger") + 1] if "--ledger" in argv else None
        before = _charges(ledger) if ledger is not None else None
        r = cli(*argv, cwd=tmp_path)
        if "error" in step:
            assert r.returncode == step["exit"], (argv, r.returncode, r.stderr)
            assert r.stderr.strip().splitlines() == [step["error"]], argv
            assert r.stdout == ""
            assert _charges(ledger) == before, f"{argv} charged the ledger"  # type: ignore[arg-type]
            continue
        assert r.returncode == 0, (argv, r.stderr)
        assert "Traceback" not in r.stdout + r.stderr
        if "stdout" in step:
            got, want = r.stdout.splitlines(), step["stdout"]
            assert len(got) == len(want), (argv, got)
            for g, w in zip(got, want, strict=True):
                if w.startswith("value "):
                    assert _value_ok(g), g
                elif w.startswith("interval "):  # private endpoints, fixed wording
                    assert g.split("]", 1)[1] == w.split("]", 1)[1], g
                    lo, hi = map(float, g.split("[", 1)[1].split("]", 1)[0].split(", "))
                    assert 0 <= lo <= hi <= 1000, g
                else:
                    assert g == w, argv
        if argv[0] == "compare":
            out = tmp_path / argv[argv.index("--out") + 1]
            assert (out / "compare.md").exists() and (out / "compare.png").exists()
            assert "not a private release" in r.stdout and "How to read it" in r.stdout
        if argv == ["--help"]:
            assert "release" in r.stdout and "Usage" in r.stdout
    # The Python blocks ran: the analyst release is the last value in the namespace.
    assert namespace["r"].secure and namespace["r"].parameters["neighbours"] == "add_remove"


@pytest.fixture
def demo_output(tmp_path, few_trials):
    """``make demo``'s output, in-process, with the comparison cut to a few trials."""
    from instancedp import demo

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert demo.main([str(tmp_path / "demo")]) == 0
    return buf.getvalue()


def test_the_demo_speaks_plainly(demo_output):
    out = demo_output
    assert not TRACKER.search(out)
    assert "⊥" not in out
    lines = out.splitlines()
    sections = [i for i, ln in enumerate(lines) if ln.startswith("== ")]
    assert len(sections) == 5
    for i in sections:  # each section opens with what it shows and how to read it
        assert lines[i + 1].startswith("What it shows:"), lines[i]
    # The noise table says what a row, a column, ∞ and — are.
    for needle in ("A row is a smoothness γ", "a column a noise family", "∞: ", "—: "):
        assert needle in out
    # The comparison table says how to read it; the releases say what was chosen, in words.
    assert "How to read it" in out
    assert out.count("neighbours  add/remove one row (the row count stays private)") == 1
    assert "add/remove one edge (the vertex set is public)" in out
    assert out.count("secure      true") == 2
