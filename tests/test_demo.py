"""`make demo` (python -m instancedp.demo) runs end to end on the shipped data."""

from __future__ import annotations

import os
import re
import subprocess
import sys


def test_demo_runs_end_to_end(tmp_path):
    out = tmp_path / "demo"
    r = subprocess.run(
        [sys.executable, "-m", "instancedp.demo", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONWARNINGS="ignore"),
    )
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    # Real releases with secure randomness, each charged to the demo ledger.
    assert r.stdout.count("secure      true") == 2
    values = re.findall(r"^  value +(-?[0-9.e+-]+)$", r.stdout, flags=re.M)
    assert len(values) == 2 and 0 <= float(values[0]) <= 1000
    from instancedp.ledger import Ledger

    with Ledger(out / "ledger.db", create=False) as led:
        got = [(h["dataset_id"], h["status"]) for h in led.history()]
    assert got == [("goog", "released"), ("karate", "released")]
    assert "remaining for 'goog': epsilon=1 of epsilon=3" in r.stdout
    assert "[smooth_sensitivity]" in r.stdout
    # The comparison plot exists, is a PNG, and its path is printed.
    png = out / "compare.png"
    assert f"plot: {png.resolve()}" in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "not a private release" in (out / "compare.md").read_text()
