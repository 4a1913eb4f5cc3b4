"""σ of the Gaussian mechanism under three calibrations (unit L2 sensitivity).

classic √(2 ln(1.25/δ))/ε (Dwork & Roth Thm. A.1, proven for ε < 1 only),
Canard–Olivier (Canard–Olivier Prop. 11) and the analytic Gaussian (Balle & Wang 2018),
each with its exact δ(ε) and with P(A(x) ∉ E_x) of Canard–Olivier Def. 8 for a query
whose neighbours lie on both sides (the DP-in-distribution δ).
"""

from __future__ import annotations

import json
import math
import os
import platform
import time
from pathlib import Path
from typing import Any

from scipy.stats import norm

from ..mechanisms.global_noise import (
    analytic_gaussian_sigma,
    canard_olivier_gaussian_sigma,
    gaussian_delta,
)

EPSILONS = (0.1, 0.5, 1.0, 2.0)
DELTAS = (1e-5, 1e-8)


def _in_distribution_delta(sigma: float, epsilon: float) -> float:
    """Def. 8 δ with neighbours at ±1: 2·Φ̄(εσ − 1/(2σ)) (or 1 if the tails meet)."""
    a = epsilon * sigma - 1 / (2 * sigma)
    return 1.0 if a <= 0 else float(2 * norm.sf(a))


def sigma_table(
    epsilons: tuple[float, ...] = EPSILONS, deltas: tuple[float, ...] = DELTAS
) -> list[dict[str, Any]]:
    rows = []
    for delta in deltas:
        for eps in epsilons:
            classic = math.sqrt(2 * math.log(1.25 / delta)) / eps
            co = canard_olivier_gaussian_sigma(eps, delta)
            co2 = canard_olivier_gaussian_sigma(eps, delta, two_sided=True)
            an = analytic_gaussian_sigma(eps, delta)
            rows.append(
                {
                    "epsilon": eps,
                    "delta": delta,
                    "sigma_classic": classic,
                    "classic_proven": eps < 1,
                    "sigma_canard_olivier": co,
                    "sigma_canard_olivier_two_sided": co2,
                    "sigma_analytic": an,
                    "exact_delta_classic": gaussian_delta(classic, eps),
                    "exact_delta_canard_olivier": gaussian_delta(co, eps),
                    "exact_delta_analytic": gaussian_delta(an, eps),
                    "in_distribution_delta_canard_olivier": _in_distribution_delta(co, eps),
                    "in_distribution_delta_co_two_sided": _in_distribution_delta(co2, eps),
                    "classic_over_analytic": classic / an,
                    "canard_olivier_over_analytic": co / an,
                }
            )
    return rows


# ---- rendering (moved from benchmarks/) ----


def reproduce(outdir: str | Path, quick: bool = True) -> list[Path]:
    """Write gaussian.md, gaussian.json into ``outdir``; the paths written."""
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    rows = sigma_table()
    elapsed = time.perf_counter() - start
    lines = [
        "# Gaussian mechanism: three calibrations of σ",
        "",
        f"Machine: {os.cpu_count()} cores, Python {platform.python_version()}; one run of "
        f"`benchmarks/gaussian.py` ({elapsed * 1000:.0f} ms).  "
        "L2 sensitivity Δ = 1 (σ scales with Δ).",
        "",
        "- **classic**: σ = √(2 ln(1.25/δ))/ε (Dwork & Roth Thm. A.1; proven for ε < 1 only — "
        "`GaussianMechanism` refuses ε ≥ 1 for it; the value is shown in *italics* there).",
        "- **Canard–Olivier** (Canard–Olivier Prop. 11): √λ = (√(C² + ε) − C)/Δ, C = h⁻¹(2√π δ), "
        "h(y) = e^{−y²}/y, σ = 1/√(2λ).",
        "- **analytic** (Balle & Wang 2018): the smallest σ with exact δ(ε) ≤ δ.",
        "",
        "Exact δ(ε) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) of each σ; all are ≤ δ.",
        "",
        "| δ | ε | classic σ | Canard–Olivier σ | analytic σ | classic/analytic | CO/analytic "
        "| exact δ(ε) classic | exact δ(ε) CO | exact δ(ε) analytic |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        classic = (
            f"{r['sigma_classic']:.3f}" if r["classic_proven"] else f"*{r['sigma_classic']:.3f}*"
        )
        lines.append(
            f"| {r['delta']:g} | {r['epsilon']:g} | {classic} | {r['sigma_canard_olivier']:.3f} | "
            f"{r['sigma_analytic']:.3f} | {r['classic_over_analytic']:.3f} | "
            f"{r['canard_olivier_over_analytic']:.3f} | {r['exact_delta_classic']:.2e} | "
            f"{r['exact_delta_canard_olivier']:.2e} | {r['exact_delta_analytic']:.4e} |"
        )
    lines += [
        "",
        "## DP in distribution (Canard–Olivier Def. 8)",
        "",
        "For a query with neighbours on both sides (f(x) ± Δ), the largest admissible E_x "
        "drops both tails and P(A(x) ∉ E_x) = 2Φ̄(εσ/Δ − Δ/2σ).  Prop. 11's constant bounds "
        "one tail by δ, so its σ is (ε, ≈2δ)-DP in distribution (still (ε, δ)-DP: see the "
        "exact δ(ε) above).  C = h⁻¹(√π δ) (`two_sided=True`) restores the claim.",
        "",
        "| δ | ε | CO σ | P(A(x) ∉ E_x), CO | CO two-sided σ | P(A(x) ∉ E_x), two-sided |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['delta']:g} | {r['epsilon']:g} | {r['sigma_canard_olivier']:.3f} | "
            f"{r['in_distribution_delta_canard_olivier']:.3e} | "
            f"{r['sigma_canard_olivier_two_sided']:.3f} | "
            f"{r['in_distribution_delta_co_two_sided']:.3e} |"
        )
    lines.append("")
    (outdir / "gaussian.md").write_text("\n".join(lines))
    payload = {
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version()},
        "elapsed_s": elapsed,
        "rows": rows,
    }
    (outdir / "gaussian.json").write_text(json.dumps(payload, indent=1))
    return [outdir / "gaussian.md", outdir / "gaussian.json"]
