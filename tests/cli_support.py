"""Shared helpers for the CLI tests: run the CLI (in-process by default), check bad input."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``instancedp ARGS`` through ``instancedp.cli.main`` in this process.

    Returns what a subprocess would (exit code, stdout, stderr); ``cli_process``
    runs a real subprocess for the few smoke tests that need one."""
    from instancedp.cli import main

    out, err = io.StringIO(), io.StringIO()
    code = 0
    where = contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext()
    with where, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def cli_process(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m instancedp.cli ARGS`` in a fresh process (as a user runs it)."""
    env = dict(os.environ, PYTHONWARNINGS="ignore", COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "instancedp.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=cwd,
    )


def assert_bad(r: subprocess.CompletedProcess, *needles: str, code: int = 2) -> None:
    """Bad input: exit ``code``, exactly one line on stderr containing every needle,
    no traceback anywhere."""
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    for n in needles:
        assert n in lines[0], (n, lines[0])
