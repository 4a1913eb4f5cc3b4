"""σ of the three Gaussian calibrations → docs/results/gaussian.{md,json}.

Run: .venv/bin/python benchmarks/gaussian.py
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from instancedp.experiments.gaussian import sigma_table

OUT = Path(__file__).resolve().parent.parent / "docs" / "results"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
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
        "- **Canard–Olivier** (000 Prop. 11): √λ = (√(C² + ε) − C)/Δ, C = h⁻¹(2√π δ), "
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
        "## DP in distribution (000 Def. 8)",
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
    (OUT / "gaussian.md").write_text("\n".join(lines))
    payload = {
        "machine": {"cpu_count": os.cpu_count(), "python": platform.python_version()},
        "elapsed_s": elapsed,
        "rows": rows,
    }
    (OUT / "gaussian.json").write_text(json.dumps(payload, indent=1))
    print(f"wrote {OUT / 'gaussian.md'}")


if __name__ == "__main__":
    main()
