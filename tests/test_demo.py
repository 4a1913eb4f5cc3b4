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
    assert r.stdout.count("secure randomness: True") == 1
    m = re.search(r"released median close: ([0-9.]+) dollars", r.stdout)
    assert m and 0 < float(m.group(1)) < 1000
    assert re.search(r"released triangle count: -?[0-9.]+", r.stdout)
    from instancedp.ledger import Ledger

    with Ledger(out / "ledger.db", create=False) as led:
        got = [(h["dataset_id"], h["status"]) for h in led.history()]
    assert got == [("goog", "released"), ("karate", "released")]
    assert "remaining for 'goog': epsilon=1 of epsilon=3" in r.stdout
    assert "mechanism: smooth_sensitivity" in r.stdout
    # The comparison plot exists, is a PNG, and its path is printed.
    png = out / "compare.png"
    assert f"plot: {png.resolve()}" in r.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "not a private release" in (out / "compare.md").read_text()
