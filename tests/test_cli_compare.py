"""The compare experiment and the `instancedp compare` command."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from cli_support import assert_bad as _assert_bad
from cli_support import cli

from instancedp.experiments import compare as C
from instancedp.io import shipped

GOOG = str(shipped("goog.csv"))


def test_laplace_error_matches_the_closed_form():
    # Laplace on the median with bounds (0, 100): GS = 100 (substitution), noise
    # Lap(100/ε), whose |·| has median (100/ε)·ln 2.  The release is projected onto
    # [0, 100]; at ε ≥ 2 that median (≤ 35) is inside the distance from the data's
    # median (≈ 50) to either bound, so the projection leaves it unchanged.  With 2000
    # trials the sample median's relative sd is 1/(ln2·√2000) ≈ 3.2%; ±15% is ~4.6 sd.
    res = C.compare(
        None, "median", epsilons=(2.0, 4.0), trials=2000, mechanisms=["laplace (global)"]
    )
    assert res.meta["private"] is False and "not a private release" in res.meta["note"]
    assert res.meta["data"].startswith("synthetic normal") and res.meta["n"] == 1000
    for row in res.rows:
        expected = 100 / row["epsilon"] * math.log(2)
        assert row["median_abs_error"] == pytest.approx(expected, rel=0.15)
        assert row["refused"] == 0 and row["guarantee"] == f"{row['epsilon']:g}-DP (pure)"


def test_smooth_beats_global_on_concentrated_data_and_marks_planning():
    # On 1000 normal(50, 10) points the median's smooth sensitivity is tiny next
    # to GS = 100, so the smooth mechanism's error must be far below Laplace's.
    res = C.compare(
        None,
        "median",
        epsilons=(1.0,),
        trials=300,
        mechanisms=["smooth · polyplace", "laplace (global)"],
    )
    err = {r["mechanism"]: r["median_abs_error"] for r in res.rows}
    assert err["smooth · polyplace"] < 0.1 * err["laplace (global)"]
    own = C.compare(np.arange(100.0), "median", bounds=(0, 100), epsilons=(1,), trials=20)
    assert "planning only" in own.meta["note"] and "true_value" not in own.meta
    md = C.to_markdown(own)
    assert "not a private release" in md and "planning only" in md


def test_ptr_refusals_are_counted():
    res = C.compare(None, "median", epsilons=(0.05,), trials=50, mechanisms=["ptr"])
    (row,) = res.rows
    # At ε = 0.05 (test budget 0.025, δ = 1e-6) the threshold is ln(1/δ)/0.025 ≈ 550,
    # beyond the median's distance on n = 1000 points at most ~500: always ⊥.
    assert row["refused"] == 1.0 and row["median_abs_error"] is None
    assert "refused 100%" in C.to_markdown(res)


def test_bad_parameters():
    with pytest.raises(ValueError, match="statistic must be one of"):
        C.compare(None, "mode")
    with pytest.raises(ValueError, match="epsilon"):
        C.compare(None, "median", epsilons=(0,))
    with pytest.raises(ValueError, match="synthetic must be one of"):
        C.compare(None, "median", synthetic="cauchy")


def test_compare_command_writes_table_and_plot(tmp_path):
    out = tmp_path / "cmp"
    r = cli("compare", "--statistic", "median", "--epsilons", "0.5,1", "--trials", "20",
            "--out", str(out))  # fmt: skip
    assert r.returncode == 0, r.stderr
    for name in ("compare.md", "compare.json", "compare.png"):
        assert (out / name).stat().st_size > 0
    assert (out / "compare.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "not a private release" in (out / "compare.md").read_text()
    data = json.loads((out / "compare.json").read_text())
    assert {r["epsilon"] for r in data["rows"]} == {0.5, 1.0}
    r = cli("compare", GOOG, "--column", "close", "--bounds", "0", "1000", "--epsilons", "1",
            "--trials", "10", "--out", str(out), "--statistic", "mean")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "planning only" in r.stdout
    _assert_bad(cli("compare", "--epsilons", "a,b", "--out", str(out)), "epsilons")
