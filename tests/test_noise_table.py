"""experiments.noise_table: the issue-2 table against FORMULAS.md §7 (published,
not computed here) and against its own brute-force re-derivation."""

from __future__ import annotations

import math

import pytest

from instancedp.experiments import noise_table as nt

# FORMULAS.md §7 / Hladík–Tětek Fig. 1, ε = 1: γ → (PolyPlace, best t, best d).
PUBLISHED = {
    0.001: (1.417, 1.742, 4.96),
    0.2: (2.092, 8.246, 2.52),
    0.3: (2.771, 69.94, 2.11),
    0.01: (1.438, 1.839, 4.68),
    0.05: (1.539, 2.354, 3.83),
    0.1: (1.687, 3.305, 3.22),
    0.4: (4.281, math.inf, None),
}


def test_std_table_reproduces_section7_to_1_percent():
    rows = {r["gamma"]: r for r in nt.noise_std_table(epsilon=1.0, gammas=sorted(PUBLISHED))}
    for g, (pp, t, d) in PUBLISHED.items():
        assert rows[g]["polyplace"] == pytest.approx(pp, rel=0.01)
        assert rows[g]["polyplace"] == pytest.approx(pp, rel=1e-3)  # 4-digit rounding
        if math.isfinite(t):
            assert rows[g]["student_t"] == pytest.approx(t, rel=1e-3)
            assert rows[g]["student_t_df"] == pytest.approx(d, abs=0.006)
        else:
            assert rows[g]["student_t"] == math.inf


def test_default_table_shape_and_admissibility():
    rows = nt.noise_std_table()
    assert [r["gamma"] for r in rows] == list(nt.GAMMAS)
    for r in rows:
        assert set(nt.FAMILY_COLUMNS) <= set(r)
        # PolyPlace is never worse than the best t or Cauchy (the paper's claim).
        for fam in ("student_t", "cauchy"):
            assert r["polyplace"] <= r[fam]
        # Laplace with δ = 1e-5 stops being admissible near γ ≈ 0.09 (safe constant).
        assert math.isnan(r["laplace"]) == (r["gamma"] >= 0.0905)


def test_calibrate_agrees_with_brute_force_optimum():
    for r in nt.agreement_table(gammas=(0.001, 0.05, 0.2, 0.3)):
        assert r["student_t_rel_diff"] < 1e-6
        assert r["cauchy_rel_diff"] < 1e-6
        assert r["polyplace_rel_diff"] < 1e-3
        assert r["student_t_pub_rel_diff"] < 1e-3


def test_independent_best_std_is_really_independent_of_calibrate():
    # Spot value from Claim 17 by hand: d = 4, ε = 1, γ = 0.05:
    # √(4/2)·5/(2·2·(1 − 0.25)) = 2.357; the optimum is below it.
    best, d = nt.independent_best_std("student_t", 1.0, 0.05)
    assert best < math.sqrt(2) * 5 / (4 * 0.75)
    assert 3.5 < d < 4.2


def test_plot_and_throughput(tmp_path):
    rows = nt.noise_std_table(gammas=(0.01, 0.1, 0.3))
    png = nt.plot_noise_std(rows, tmp_path / "n.png")
    assert png.stat().st_size > 5_000
    thr = nt.throughput_table(n=2_000, repeats=1)
    assert {r["family"] for r in thr} >= set(nt.FAMILY_COLUMNS)
    for r in thr:
        assert r["samples_per_s"] > 0 and r["ratio"] == pytest.approx(
            r["samples_per_s"] / r["numpy_laplace_per_s"]
        )
    assert nt.machine()["cpu_count"] >= 1


def test_reproduce_writes_the_results_page(tmp_path, monkeypatch):
    small = nt.throughput_table
    monkeypatch.setattr(nt, "throughput_table", lambda quick: small(n=2_000, repeats=1))
    md, js, png = nt.reproduce(tmp_path, quick=True)
    text = md.read_text()
    assert "| 0.2 | 2.092 | 8.246 |" in text  # PolyPlace and best t at γ = 0.2 (§7)
    assert "cores (os.cpu_count())" in text
    assert js.stat().st_size > 1_000 and png.stat().st_size > 5_000
    import json

    data = json.loads(js.read_text(), parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))
    assert data["std"][0]["gamma"] == 0.001
