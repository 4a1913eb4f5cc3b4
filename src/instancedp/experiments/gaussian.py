"""σ of the Gaussian mechanism under three calibrations (unit L2 sensitivity).

classic √(2 ln(1.25/δ))/ε (Dwork & Roth Thm. A.1, proven for ε < 1 only),
Canard–Olivier (000 Prop. 11) and the analytic Gaussian (Balle & Wang 2018),
each with its exact δ(ε) and with P(A(x) ∉ E_x) of 000 Def. 8 for a query
whose neighbours lie on both sides (the DP-in-distribution δ).
"""

from __future__ import annotations

import math
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
