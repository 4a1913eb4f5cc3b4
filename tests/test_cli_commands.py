"""`instancedp audit`, `noise-table` and `reproduce` through a subprocess."""

from __future__ import annotations

import json

from cli_support import assert_bad as _assert_bad
from cli_support import cli


def test_audit_list_run_and_bad_input():
    r = cli("audit", "--list")
    assert r.returncode == 0 and "laplace" in r.stdout
    assert "smooth_sensitivity/polyplace" in r.stdout
    r = cli("audit", "laplace", "--epsilon", "1", "--samples", "20000", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["verdict"] == "pass"
    assert out["guarantee"] == {"type": "pure", "epsilon": 1.0}
    # The Laplace mechanism's exact privacy loss is exactly ε (attained on the worst pair).
    assert abs(out["exact"]["measured"] - 1.0) < 1e-6
    assert out["empirical"]["epsilon_lower_bound"] <= 1.0
    r = cli("audit", "private_ratio/ksw", "--epsilon", "1", "--samples", "20000")
    assert r.returncode == 0, r.stderr
    assert "verdict     pass" in r.stdout
    _assert_bad(cli("audit", "nonsense"), "unknown mechanism 'nonsense'", "laplace")
    _assert_bad(cli("audit", "laplace", "--samples", "5"), "samples must be")


def test_noise_table(tmp_path):
    r = cli("noise-table", "--epsilon", "1", "--json", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)  # strict JSON: NaN/inf were mapped to null/"inf"
    assert rows and all(isinstance(x, dict) for x in rows)
    text = json.dumps(rows).lower()
    assert "polyplace" in text and "student" in text
    # FORMULAS.md §7 (checked by quadrature): PolyPlace std per unit SS at ε = 1 is
    # 1.417 / 2.092 / 2.771 at γ = 0.001 / 0.2 / 0.3.
    by_gamma = {row["gamma"]: row for row in rows}
    for g, std in ((0.001, 1.417), (0.2, 2.092), (0.3, 2.771)):
        assert abs(by_gamma[g]["polyplace"] - std) < 0.005 * std
    assert (tmp_path / "noise_table.md").stat().st_size > 0
    _assert_bad(cli("noise-table", "--epsilon", "0"), "epsilon")
    _assert_bad(cli("noise-table", "--delta", "2"), "delta")


def test_reproduce(tmp_path):
    r = cli("reproduce", str(tmp_path), "--only", "gaussian")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "gaussian" in r.stdout and "ok" in r.stdout
    md = (tmp_path / "gaussian.md").read_text()
    # FORMULAS.md §3: ε = 1, δ = 1e-5 → analytic σ = 3.731 (Balle & Wang 2018).
    assert "3.731" in md
    _assert_bad(cli("reproduce", str(tmp_path), "--only", "nonsense"), "unknown experiment")
