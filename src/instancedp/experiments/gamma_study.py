"""How to choose the smoothness γ of a smooth-sensitivity median: the study
behind :func:`instancedp.mechanisms.smooth.default_gamma`.

For a released median q(x) + SS_γ(x)·Z the expected absolute error on a
dataset is exactly SS_γ(x)·E|Z_γ|, where Z_γ is the unit noise that
``noise.calibrate`` gives for (family, ε, γ, δ).  So the study needs no noise
draws: for each family, n, ε and data distribution (the Gillenwater–Joseph–
Kulesza 2021 setting: N(0, 5) and U(−5, 5), bounds [−100, 100]) it averages
SS_γ(x)·E|Z_γ| over synthetic datasets for γ on a grid of fractions of
γ_cap = min(ε, γ_max(family, ε, δ)), finds the best fraction, and reports the
regret of candidate public rules (MAE at the rule's γ ÷ MAE at the best γ).

The zCDP families are calibrated to the same (ε, δ) as the others by the CKS
2020 conversion (``cdp_epsilon_for``) so that all rows promise (ε, δ)-DP.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize

from ..noise import FAMILIES, calibrate, max_gamma
from ..privacy import zcdp_to_epsilon
from ..queries.order import Median

ZCDP_FAMILIES = ("laplace_log_normal", "uniform_log_normal", "arsinh_normal")
FRACTIONS: tuple[float, ...] = (
    0.02,
    0.05,
    0.1,
    0.15,
    0.2,
    0.25,
    0.3,
    0.35,
    0.4,
    0.45,
    0.5,
    0.6,
    0.7,
    0.8,
    0.9,
)
DISTRIBUTIONS: dict[str, Callable[[np.random.Generator, int], np.ndarray]] = {
    "normal(0,5)": lambda g, n: g.normal(0.0, 5.0, n),
    "uniform(-5,5)": lambda g, n: g.uniform(-5.0, 5.0, n),
}
LOWER, UPPER = -100.0, 100.0


@cache
def cdp_epsilon_for(epsilon: float, delta: float) -> float:
    """ε_c with ½ε_c²-zCDP ⇒ (ε, δ)-DP by the CKS 2020 conversion (bisection)."""
    f = lambda e: zcdp_to_epsilon(e * e / 2, delta) - epsilon  # noqa: E731
    return float(optimize.brentq(f, 1e-9, 10 * epsilon + 10, xtol=1e-12))


def family_epsilon(family: str, epsilon: float, delta: float) -> float:
    """The ε to give the family so that its guarantee implies (ε, δ)-DP."""
    return cdp_epsilon_for(epsilon, delta) if family in ZCDP_FAMILIES else epsilon


def gamma_cap(family: str, epsilon: float, delta: float) -> float:
    eps = family_epsilon(family, epsilon, delta)
    return min(eps, float(max_gamma(family, eps, delta)))


@cache
def mean_abs_noise(family: str, epsilon: float, gamma: float, delta: float) -> float:
    """E|Z| of the unit noise for (family, ε, γ, δ): 2∫₀^∞ P(Z > z) dz (quadrature)."""
    eps = family_epsilon(family, epsilon, delta)
    try:
        cal = calibrate(family, eps, gamma, delta=delta)
    except ValueError:
        return math.inf
    # E|Z| is infinite for Student t with d ≤ 1 and generalized Cauchy with c ≤ 2.
    if cal.shape.get("df", math.inf) <= 1 or cal.shape.get("power", math.inf) <= 2:
        return math.inf
    return cal.noise.mean_abs()


def study(
    families: tuple[str, ...] = FAMILIES,
    ns: tuple[int, ...] = (100, 1000, 10000),
    epsilons: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0),
    delta: float = 1e-6,
    datasets: int = 30,
    seed: int = 2021,
    quick: bool = False,
) -> list[dict[str, Any]]:
    """One row per (family, distribution, n, ε, fraction): γ and the exact mean MAE."""
    if quick:
        families, ns, datasets = families[:2], ns[:2], 5
    median = Median(LOWER, UPPER, neighbours="substitution")
    rows = []
    for dist, draw in DISTRIBUTIONS.items():
        for n in ns:
            gen = np.random.default_rng([seed, n, len(dist)])
            data = [draw(gen, n) for _ in range(datasets)]
            for eps in epsilons:
                for family in families:
                    cap = gamma_cap(family, eps, delta)
                    for frac in FRACTIONS:
                        gamma = frac * cap
                        if not gamma < float(
                            max_gamma(family, family_epsilon(family, eps, delta), delta)
                        ):
                            continue
                        ez = mean_abs_noise(family, eps, gamma, delta)
                        ss = np.array([median.smooth_sensitivity(x, gamma) for x in data])
                        rows.append(
                            {
                                "family": family,
                                "distribution": dist,
                                "n": n,
                                "epsilon": eps,
                                "fraction": frac,
                                "gamma": gamma,
                                "mean_abs_noise": ez,
                                "mae": float(ss.mean() * ez),
                                "datasets": datasets,
                                "seed": seed,
                            }
                        )
    return rows


def best_fractions(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For every (family, distribution, n, ε): the best fraction and its MAE."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["family"], r["distribution"], r["n"], r["epsilon"]), []).append(r)
    out = []
    for key, rs in groups.items():
        best = min(rs, key=lambda r: r["mae"])
        out.append(
            {
                "family": key[0],
                "distribution": key[1],
                "n": key[2],
                "epsilon": key[3],
                "best_fraction": best["fraction"],
                "best_gamma": best["gamma"],
                "best_mae": best["mae"],
            }
        )
    return out


def rule_regret(
    rows: list[dict[str, Any]], rule: Callable[[str, float, float, int], float]
) -> list[dict[str, Any]]:
    """MAE of the γ a rule picks (interpolated on the fraction grid) ÷ the best MAE.

    ``rule(family, epsilon, delta, n) -> γ``; the MAE at that γ is recomputed exactly.
    """
    median = Median(LOWER, UPPER, neighbours="substitution")
    best = {(b["family"], b["distribution"], b["n"], b["epsilon"]): b for b in best_fractions(rows)}
    out = []
    delta = 1e-6
    for key, b in best.items():
        family, dist, n, eps = key
        gamma = rule(family, eps, delta, n)
        ref = next(r for r in rows if (r["family"], r["distribution"], r["n"]) == key[:3])
        gen = np.random.default_rng([ref["seed"], n, len(dist)])
        data = [DISTRIBUTIONS[dist](gen, n) for _ in range(ref["datasets"])]
        ez = mean_abs_noise(family, eps, gamma, delta)
        mae = float(np.mean([median.smooth_sensitivity(x, gamma) for x in data]) * ez)
        out.append({**b, "rule_gamma": gamma, "rule_mae": mae, "regret": mae / b["best_mae"]})
    return out


def machine() -> dict[str, Any]:
    return {"cpu_count": os.cpu_count()}


# ------------------------------------------------------------------ rules
def default_rule(family: str, epsilon: float, delta: float, n: int) -> float:
    """The library's rule: ``default_gamma("median", …, n=n)``."""
    from ..mechanisms.smooth import default_gamma

    return default_gamma("median", family, family_epsilon(family, epsilon, delta), delta, n=n)


def constant_rule(family: str, epsilon: float, delta: float, n: int) -> float:
    """The same fractions without the n-dependent floor (what add/remove gets)."""
    from ..mechanisms.smooth import default_gamma

    return default_gamma("median", family, family_epsilon(family, epsilon, delta), delta)


def tenth_rule(family: str, epsilon: float, delta: float, n: int) -> float:
    """γ = 0.1·γ_cap (the common small-γ habit, as a baseline)."""
    return 0.1 * gamma_cap(family, epsilon, delta)


RULES: dict[str, Callable[[str, float, float, int], float]] = {
    "default_gamma": default_rule,
    "fraction only": constant_rule,
    "0.1 * cap": tenth_rule,
}


def run(quick: bool = False) -> dict[str, Any]:
    """The whole study: grid rows, best fractions and each rule's regret."""
    rows = study(quick=quick)
    regrets = {name: rule_regret(rows, rule) for name, rule in RULES.items()}
    return {"machine": machine(), "rows": rows, "best": best_fractions(rows), "regret": regrets}


# ---- rendering (moved from benchmarks) ----


def _fmt(v: float) -> str:
    return "inf" if not math.isfinite(v) else f"{v:.3g}"


def write(result: dict, seconds: float, outdir: Path) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    rows, best, regret = result["rows"], result["best"], result["regret"]
    fams = sorted({b["family"] for b in best}, key=FAMILIES.index)
    lines = [
        "# Default γ for smooth-sensitivity medians",
        "",
        "Generated by `benchmarks/gamma.py` (instancedp.experiments.gamma_study) in "
        f"{seconds:.0f} s on a machine with {result['machine']['cpu_count']} cores.",
        "",
        "Expected absolute error of the released median, exactly SS_γ(x)·E|Z_γ| averaged "
        f"over {rows[0]['datasets']} synthetic datasets per cell (N(0,5) and U(−5,5), bounds "
        "[−100, 100], δ = 1e−6; zCDP families calibrated to the same (ε, δ) by the CKS 2020 "
        "conversion).  γ runs over fractions of γ_cap = min(ε, γ_max(family, ε, δ)).",
        "",
        "## Best fraction of γ_cap per cell",
        "",
        "| family | distribution | "
        + " | ".join(
            f"n={n}, ε={e:g}"
            for n in sorted({b["n"] for b in best})
            for e in sorted({b["epsilon"] for b in best})
        )
        + " |",
    ]
    cols = [
        (n, e) for n in sorted({b["n"] for b in best}) for e in sorted({b["epsilon"] for b in best})
    ]
    lines.append("|---|---|" + "---|" * len(cols))
    for fam in fams:
        for dist in DISTRIBUTIONS:
            cell = {
                (b["n"], b["epsilon"]): b
                for b in best
                if b["family"] == fam and b["distribution"] == dist
            }
            lines.append(
                f"| {fam} | {dist} | "
                + " | ".join(f"{cell[c]['best_fraction']:g}" if c in cell else "" for c in cols)
                + " |"
            )
    lines += [
        "",
        "## Regret of the candidate rules (MAE at the rule's γ ÷ best MAE on the grid)",
        "",
        "Median and worst regret over all cells, and worst over the cells where the best MAE "
        "is below 1 (the median is estimable: error < 10 % of the data's spread).",
        "",
        "| family | rule | median regret | worst regret | worst regret (best MAE < 1) |",
        "|---|---|---|---|---|",
    ]
    for fam in fams:
        for name, rs in regret.items():
            r = [x["regret"] for x in rs if x["family"] == fam]
            rr = [x["regret"] for x in rs if x["family"] == fam and x["best_mae"] < 1]
            lines.append(
                f"| {fam} | {name} | {_fmt(float(np.median(r)))} | {_fmt(max(r))} | "
                f"{_fmt(max(rr)) if rr else '–'} |"
            )
    lines += [
        "",
        "## MAE of the default rule per cell (polyplace, the default family)",
        "",
        "| distribution | n | ε | γ (default) | MAE (default) | best fraction | best MAE "
        "| regret |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for x in regret["default_gamma"]:
        if x["family"] == "polyplace":
            lines.append(
                f"| {x['distribution']} | {x['n']} | {x['epsilon']:g} | {x['rule_gamma']:.4g} | "
                f"{x['rule_mae']:.4g} | {x['best_fraction']:g} | {x['best_mae']:.4g} | "
                f"{x['regret']:.3f} |"
            )
    (outdir / "gamma.md").write_text("\n".join(lines) + "\n")
    (outdir / "gamma.json").write_text(json.dumps(result, indent=1, default=float))
    _plot(rows, outdir)


def _plot(rows: list[dict], outdir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fams = [f for f in FAMILIES if any(r["family"] == f for r in rows)]
    fig, axes = plt.subplots(1, len(fams), figsize=(3.2 * len(fams), 3.2), sharey=True)
    axes = np.atleast_1d(axes)
    for ax, fam in zip(axes, fams, strict=True):
        for n in sorted({r["n"] for r in rows}):
            for eps in sorted({r["epsilon"] for r in rows}):
                rs = [
                    r
                    for r in rows
                    if r["family"] == fam
                    and r["n"] == n
                    and r["epsilon"] == eps
                    and r["distribution"] == "normal(0,5)"
                    and math.isfinite(r["mae"])
                ]
                if not rs:
                    continue
                best = min(r["mae"] for r in rs)
                ax.plot(
                    [r["fraction"] for r in rs], [r["mae"] / best for r in rs], lw=0.8, alpha=0.7
                )
        ax.set_title(fam, fontsize=9)
        ax.set_xlabel("γ / γ_cap")
        ax.set_yscale("log")
        ax.set_ylim(0.9, 20)
    axes[0].set_ylabel("MAE / best MAE (N(0,5); each line one n, ε)")
    fig.tight_layout()
    fig.savefig(outdir / "gamma.png", dpi=120)


def reproduce(outdir: str | Path, quick: bool = True) -> list[Path]:
    """Write gamma.md/.json/.png into ``outdir``; the paths written."""
    outdir = Path(outdir)
    t0 = time.time()
    result = run(quick=quick)
    write(result, time.time() - t0, outdir)
    return [outdir / "gamma.md", outdir / "gamma.json", outdir / "gamma.png"]
